"""Cube/Vector overlap across iterations: skew a pipelined loop that moves tiles both ways.

Used by route, on the tile ops of a partitioned launch (Send/Receive points still abstract).

In a loop like FlashAttention's, each step is a chain across the cores: the Cube computes S = QK^T
and sends it, the Vectors compute P from it and send it back, the Cube computes PV and sends it,
the Vectors add it. Run in that order, each core waits for the other one at every step. Skewed,
each core's body is split into a part A (up to the first tile that comes back: the Cube's
``Receive P``; on the Vectors up to and including ``Send P``) and a part B (the rest), and step
k + 1's part A runs before step k's part B:

    for k in 0 .. n + 1:                # n + 1 trips
        if k < n:  A(k)                 # Cube: S(k+1) = Q K(k+1)^T   | Vector: softmax of S(k+1) -> P(k+1)
        if k >= 1:
            for kb in k - 1 .. k:       # one trip: kb names the step B works on
                B(kb)                   # Cube: P(k) V(k)             | Vector: acc_o += that

so the Cube computes S(k+1) while the Vectors run step k's softmax, and the Vectors run step k+1's
softmax while the Cube computes PV(k). With a lead of 2 (route: where the tiles cross through GM,
whose copies cost no on-chip memory), step k + 2's A runs before step k's B over n + 2 trips: the
chain QK(k) -> softmax(k) -> PV(k) -> QK(k + 3) then spans three steps instead of two, which hides
the GM round trips of S and P. Every tile both parts use, and every crossing tile, then needs
lead + 1 copies (``step_slots``). Legal when no statement of B(k) depends on one of A(k+1)
through a buffer that lives across iterations (a buffer private to one iteration gets a slot per
step from multi_buffer, selected by the step: ``var`` in A, ``kb`` in B). A statement of A that
B would clash with (the rescale of acc_o, written before Send P) moves to the head of B when it
commutes with the rest of A; one that only prepares B's data (a load of V) moves there too.
Transfers go A -> A, A -> B or B -> B, never B -> A (that could deadlock). The tiles that cross
need a slot per step or a "free" flag (route and multi_buffer decide).
"""

from __future__ import annotations

import dataclasses

from tvm import tirx

from ascend_backend.ir import (
    If,
    Loop,
    LoopKind,
    Print,
    Receive,
    ScalarStore,
    Send,
    TileAccumulate,
    TileCopy,
    TileCumsum,
    TileFill,
    TileGemm,
    TileParallel,
    TileReduce,
    walk,
)
from ascend_backend.ir.nodes import loaded_buffers

# ---------------------------------------------------------------- reads and writes of tile ops


def _loads(*exprs) -> set:
    return set(loaded_buffers(*exprs))


def rw(s) -> tuple[set, set]:
    """(buffers read, buffers written) by a tile-level statement (nested ones included)."""
    if isinstance(s, TileCopy):
        return {s.src.buffer} | _loads(*s.src.base, *s.dst.base), {s.dst.buffer}
    if isinstance(s, TileFill):
        return _loads(s.value, *s.dst.base), {s.dst.buffer}
    if isinstance(s, TileGemm):
        return set(s.inputs) | (set() if s.clear_accum else {s.c.buffer}), {s.c.buffer}
    if isinstance(s, TileReduce):
        return {s.src.buffer} | (set() if s.clear else {s.dst.buffer}), {s.dst.buffer}
    if isinstance(s, TileCumsum):
        return {s.src.buffer}, {s.dst.buffer}
    if isinstance(s, TileAccumulate):
        return {s.dst, s.src}, {s.dst}
    if isinstance(s, TileParallel):
        reads: set = set()
        writes: set = set()
        for ps in s.stores:
            writes.add(ps.store.buffer.name)
            reads |= _loads(ps.store.value, *ps.store.indices)
        return reads, writes
    if isinstance(s, Send):
        return {s.tile}, set()
    if isinstance(s, Receive):
        return set(), {s.into}
    if isinstance(s, ScalarStore):
        return set(s.reads), {s.buffer}
    if isinstance(s, Print):
        return set(s.reads), set()
    if isinstance(s, Loop):
        r, w = _loads(s.extent, s.start, s.cond), set()
        for x in s.body:
            a, b = rw(x)
            r, w = r | a, w | b
        return r, w
    if isinstance(s, If):
        r, w = _loads(s.cond), set()
        for x in (*s.then_body, *s.else_body):
            a, b = rw(x)
            r, w = r | a, w | b
        return r, w
    return set(), set()


def _clash(x, y) -> set:
    """Buffers through which x and y conflict (one of them writes)."""
    rx, wx = rw(x)
    ry, wy = rw(y)
    return (wx & (ry | wy)) | (rx & wy)


def private(body: list, outside: set) -> set:
    """Buffers defined afresh in every iteration of a loop with this body: not used outside the
    loop, and first accessed by a write (that does not also read it) directly in the body."""
    first: dict = {}
    for s in body:
        r, w = rw(s)
        direct = not isinstance(s, Loop | If)
        for b in r:
            first.setdefault(b, "read")
        for b in w:
            first.setdefault(b, "write" if direct and b not in r else "read")
    return {b for b, kind in first.items() if kind == "write" and b not in outside}


# ---------------------------------------------------------------- the plan


@dataclasses.dataclass
class Split:
    """One core's loop body cut into parts A and B (B empty when the core has nothing after)."""

    a: list
    b: list


def _const(e) -> int | None:
    if isinstance(e, int):
        return e
    if isinstance(e, tirx.IntImm):
        return int(e.value)
    return None


def skewable_loop(lp: Loop) -> bool:
    return (lp.kind is LoopKind.PIPELINED and lp.num_stages >= 2 and _const(lp.start) == 0 and lp.step == 1
            and lp.var is not None)


def _points(body: list) -> dict:
    """{(transfer, 'send'|'receive'): index} of the Send/Receive items at the top of a body."""
    out = {}
    for n, s in enumerate(body):
        if isinstance(s, Send):
            out[(s.transfer, "send")] = n
        elif isinstance(s, Receive):
            out[(s.transfer, "receive")] = n
    return out


def _nested_points(body: list) -> bool:
    return any(isinstance(x, Send | Receive) for s in body if isinstance(s, Loop | If) for x in walk([s]))


def _legalise(a: list, b: list, keep: set) -> tuple[list, list] | None:
    """Move statements of A that B(k) would clash with once A(k+1) runs first to the head of B, where
    they commute with the rest of A; None when that is impossible. ``keep``: buffers private to one
    iteration (they get a slot per step, so B(k) and A(k+1) never meet there)."""
    a, b = list(a), list(b)
    while True:
        bad = [n for n, x in enumerate(a) if any(_clash(y, x) - keep for y in b)]
        if not bad:
            return a, b
        n = bad[-1]
        x = a[n]
        if isinstance(x, Send | Receive) or any(_clash(x, y) for y in a[n + 1:]):
            return None
        a.pop(n)
        b.insert(0, x)


def _prefetch(a: list, b: list) -> tuple[list, list]:
    """Move statements of A that only prepare B's data (a load of B's operand) to the head of B,
    so that A and B touch no buffer in common through them."""
    a, b = list(a), list(b)
    for n in range(len(a) - 1, -1, -1):
        x = a[n]
        if isinstance(x, Send | Receive | Loop | If):
            continue
        rx, wx = rw(x)
        rest = a[:n] + a[n + 1:]
        r_rest = set().union(*(rw(y)[0] for y in rest)) if rest else set()
        w_rest = set().union(*(rw(y)[1] for y in rest)) if rest else set()
        used_by_b = set().union(*(rw(y)[0] | rw(y)[1] for y in b)) if b else set()
        if wx and not (wx & (r_rest | w_rest)) and not (rx & w_rest) and wx <= used_by_b:
            a.pop(n)
            b.insert(0, x)
    return a, b


def plan(loops: dict, transfers: list, outside: dict) -> dict | None:
    """The split of each core's loop (``loops``: {core: Loop}), or None when the loop cannot (or
    need not) be skewed. ``outside``: {core: buffers that core touches outside the loop}."""
    if len(loops) != 2 or not all(skewable_loop(lp) for lp in loops.values()):
        return None
    if any(_nested_points(lp.body) for lp in loops.values()):
        return None
    points = {c: _points(lp.body) for c, lp in loops.items()}
    ids = sorted({t for pts in points.values() for (t, _) in pts})
    tr = [transfers[i] for i in ids]
    if not tr:
        return None
    order = sorted(tr, key=lambda t: min(points[c].get((t.index, "send"), 10 ** 9) for c in points))
    back = next((t for t in order if t.direction is not order[0].direction), None)
    if back is None:
        return None  # tiles cross one way only: the cores already overlap through "free" flags
    from ascend_backend.ir import Core, Direction

    consumer = Core.AIC if back.direction is Direction.V2C else Core.AIV
    producer = Core.AIV if consumer is Core.AIC else Core.AIC
    cut = {consumer: points[consumer].get((back.index, "receive")),
           producer: points[producer].get((back.index, "send"))}
    if None in cut.values():
        return None
    cut[producer] += 1
    splits = {}
    for c, lp in loops.items():
        a, b = lp.body[:cut[c]], lp.body[cut[c]:]
        keep = private(lp.body, outside[c])
        legal = _legalise(a, b, keep)
        if legal is None:
            return None
        a, b = _prefetch(*legal)
        splits[c] = Split(a, b)
    # transfers go A -> A, A -> B or B -> B (a B -> A one could wait on a step the producer runs later)
    for t in tr:
        prod = Core.AIC if t.direction is Direction.C2V else Core.AIV
        cons = Core.AIV if prod is Core.AIC else Core.AIC
        in_b_send = any(isinstance(s, Send) and s.transfer == t.index for s in splits[prod].b)
        in_a_recv = any(isinstance(s, Receive) and s.transfer == t.index for s in splits[cons].a)
        if in_b_send and in_a_recv:
            return None
    if any(not sp.a for sp in splits.values()):
        return None
    return splits


def loads_for_both_parts(split: Split, on_chip: set) -> set:
    """The tiles part A loads from GM (a buffer not in ``on_chip``) that part B reads too. Skewed,
    such a tile lives from its load in trip k to part B in trip k + 1: with 2 slots the load of
    step k + 1 waits for part B of step k - 1 at the end of trip k, so it no longer runs a step
    ahead of the compute (MLA decode's K/V, read by both gemms)."""
    loaded = {x.dst.buffer for x in split.a if isinstance(x, TileCopy) and x.src.buffer not in on_chip}
    read_b = set().union(*(rw(y)[0] for y in split.b)) if split.b else set()
    return loaded & read_b


# ---------------------------------------------------------------- rewriting


def substitute(obj, vmap: dict):
    """``obj`` (a statement, value, or list of them) with the variables of ``vmap`` replaced."""
    if isinstance(obj, tirx.PrimExpr | tirx.Stmt):
        return tirx.stmt_functor.substitute(obj, vmap)
    if isinstance(obj, list):
        return [substitute(x, vmap) for x in obj]
    if isinstance(obj, tuple):
        return tuple(substitute(x, vmap) for x in obj)
    if isinstance(obj, dict):
        return {k: substitute(v, vmap) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            if not f.init or f.name == "loc":
                continue
            v = getattr(obj, f.name)
            nv = substitute(v, vmap)
            if nv is not v:
                changes[f.name] = nv
        return dataclasses.replace(obj, **changes) if changes else obj
    return obj


def skewed_loop(lp: Loop, split: Split, kb=None, lead: int = 1) -> Loop:
    """The skewed form of ``lp`` (see the module doc and ``Loop.skewed``); ``kb``: part B's step
    variable (shared by the two cores' loops); ``lead``: the steps part A runs ahead of part B."""
    k = lp.var
    n = lp.extent
    kb = kb if kb is not None else tirx.Var(f"{k.name}_b", k.dtype)
    one = tirx.IntImm(k.dtype, 1)
    ahead = tirx.IntImm(k.dtype, lead)
    total = tirx.IntImm(k.dtype, _const(n) + lead) if _const(n) is not None else n + ahead
    b_loop = Loop(var=kb, extent=one, body=substitute(split.b, {k: kb}), kind=LoopKind.SERIAL, start=k - ahead,
                  loc=lp.loc)
    body = [If(cond=k < n, then_body=split.a, loc=lp.loc), If(cond=k >= ahead, then_body=[b_loop], loc=lp.loc)]
    return dataclasses.replace(lp, extent=total, body=body, skewed=True, lead=lead)


def step_slots(lp: Loop) -> int:
    """The slots of a tile both parts of the skewed loop ``lp`` use (and of the steps its flags
    between the parts count): part B reads step k - lead's while part A writes step k's, so lead + 1
    steps are in flight, and at least num_stages."""
    return max(lp.num_stages, lp.lead + 1)


def parts(lp: Loop) -> tuple[list, Loop]:
    """(A's statements, B's one-trip loop) of a skewed loop."""
    return lp.body[0].then_body, lp.body[1].then_body[0]


__all__ = ["Split", "plan", "private", "rw", "skewed_loop", "step_slots", "parts", "substitute", "skewable_loop"]
