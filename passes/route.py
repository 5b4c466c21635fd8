"""route: decide how each crossing tile travels, then spell out the copies and cross-core flags.

Needs: a partitioned launch (``Send``/``Receive`` points of its transfers, logical flag ids).
Establishes: no ``Send``/``Receive`` is left; every transfer has a route and the flags it needs:

* Through a GM workspace (every arch): Cube -> Vector, the AIC waits "free", Fixpipes the tile into
  its block's window of the workspace and sets "ready"; each AIV waits "ready", copies its rows into
  UB and sets "free". Vector -> Cube mirrors it (the AIVs copy UB -> workspace, the AIC loads the
  tile into L1 with Nd2Nz). Mode-2 flags: the AIC talks to both AIVs.
* On chip, where the arch has the paths (dav-3510: L0C -> UB by Fixpipe, UB -> L1 by DataCopy, and
  mode-4 flags that name one AIV): Cube -> Vector, the AIC waits every AIV's "free" (where the tile
  has one), Fixpipes the tile into both AIVs' UB tiles in ONE dual-destination Fixpipe split by
  rows (AIV s receives rows [s*M/2, (s+1)*M/2); dualDstCtl = 1, twice the single-destination rate)
  and then sets every AIV's "ready". Where the arch lacks that mode (``Arch.l0c_to_ub_dual``) it
  Fixpipes each AIV's half of the rows on its own and sets that AIV's "ready" right after its
  half. Vector -> Cube, each AIV copies its rows from UB into the AIC's L1 tile (Nd2Nz) and sets
  "ready", the AIC's MTE1 waits for both halves before its LoadData. A transfer stays on the
  workspace when its tiles do not split evenly between the two AIVs, or (with a "free" flag) when
  an AIV touches the tile before a "ready" wait in the same statement list (that access could
  meet the AIC's concurrent Fixpipe into its UB).

"free" is left out where it can never matter: a tile that crosses once (outside every loop), or
one that crosses once per iteration and that the consumer answers, in the same iteration, with a
tile it computed from it, received by the producer before its next send (that round trip orders
the next write after the read; ``_round_trip``). Every transfer has its own workspace region.
Primed once at the start (the consumer frees it up front), drained once at the end, so
every set is waited. The AIV's flags of an on-chip Cube -> Vector tile wait on (set after) the
pipe that uses the tile; lowering picks it (``orders``).
"""

from __future__ import annotations

import contextvars
import dataclasses

from tvm import tirx

from ascend_backend.errors import InternalCompilerError, UnsupportedError
from ascend_backend.ir import (
    Buffer,
    BufferKind,
    CopyToPeerL1,
    CopyToPeerUb,
    CopyToPeerUbDual,
    Core,
    CrossCoreSet,
    CrossCoreWait,
    Direction,
    If,
    Launch,
    Loop,
    Pipe,
    Program,
    Receive,
    Region,
    Route,
    Scope,
    Send,
    TileCopy,
    TileGemm,
    Transfer,
    Workspace,
    children,
    fresh_name,
    static_int,
    walk,
)

from . import skew as skew_mod
from .partition import full_region, tile_buffers


def _block_index(grid: list):
    idx = None
    stride = 1
    for ax in grid:
        term = ax.var if static_int(stride) == 1 else ax.var * stride
        idx = term if idx is None else idx + term
        e = static_int(ax.extent)
        stride = stride * (e if e is not None else ax.extent)
    return idx


def _touches(item, name: str) -> bool:
    return any(name in tile_buffers(x) for x in walk([item]))


_NEEDS_FREE = -1  # a "free" flag is needed; its id is assigned with the others


def _keep_free(launch: Launch) -> list:
    """Drop "free" where it can never matter: outside every loop, or when a round trip orders the
    producer's next write after the consumer's read (see ``_round_trip``). In a skewed loop the
    producer runs a step ahead, so every tile needs one (multi_buffer drops it again where the tile
    gets a slot per step)."""
    transfers = launch.transfers
    out = []
    for t in transfers:
        drop = t.loop is None or (not t.skewed and _round_trip(launch, t))
        out.append(dataclasses.replace(t, free=None if drop else _NEEDS_FREE))
    return out


def _points(body: list, cls, pred) -> list:
    """(statement list, index) of every ``cls`` point matching ``pred`` in a body."""
    out = []
    for n, s in enumerate(body):
        if isinstance(s, cls) and pred(s):
            out.append((body, n))
        for sub in children(s):
            out += _points(sub, cls, pred)
    return out


def _round_trip(launch: Launch, t: Transfer) -> bool:
    """Is the producer's next write of ``t``'s tile (and of its workspace) ordered after the
    consumer's read by a tile travelling the other way in the same loop?

    Only when the tile crosses once per iteration in t's direction: a second crossing of the
    same tile (retention's ``o``, handed over and later added to) writes the same workspace with
    no trip between. The emulator's mutation tests check that every "free" flag this keeps is
    needed and that dropping the others loses nothing (tests/compiler/test_mutation.py)."""
    consumer = launch.kernels[Core.AIV if t.direction is Direction.C2V else Core.AIC]
    producer = launch.kernels[Core.AIC if t.direction is Direction.C2V else Core.AIV]
    same = {u.index for u in launch.transfers if u.tile == t.tile and u.direction is t.direction}
    sends = _points(producer.body, Send, lambda x: x.transfer in same)
    receives = _points(consumer.body, Receive, lambda x: x.transfer == t.index)
    if len(sends) != 1 or len(receives) != 1:
        return False
    # Any tile the loop sends the other way closes the cycle: the consumer sends it after its read
    # of t's tile (in this iteration or the next one's, before t's tile comes again) and the
    # producer waits for it before its next send of t.
    return any(u.loop == t.loop and u.direction is not t.direction for u in launch.transfers)


def _share_key(t: Transfer):
    """Transfers whose "ready" flags may share one id: a counter works like a queue when the
    producer sets in the order the consumer waits (partition emits every Send with its Receive,
    so both sides meet the transfers of one direction in the same order), every set is on one pipe
    and every wait on one pipe. That holds through the workspace (sets on FIX / MTE3, waits on MTE2)
    and for Vector -> Cube on chip (sets on MTE3, waits on MTE1); an on-chip Cube -> Vector tile is
    waited on the pipe that uses it, so it keeps an id of its own."""
    if t.route is Route.ON_CHIP and t.direction is Direction.C2V:
        return ("own", t.index)
    return (t.direction, t.route)


def _assign_ids(transfers: list) -> list:
    """Logical cross-core flag ids 0-10: one "ready" id per sharing group, one "free" id per
    transfer that needs one."""
    ready: dict = {}
    out = []
    next_id = 0
    for t in transfers:
        key = _share_key(t)
        if key not in ready:
            ready[key] = next_id
            next_id += 1
        out.append(dataclasses.replace(t, ready=ready[key]))
    final = []
    for t in out:
        if t.free is not None:
            t = dataclasses.replace(t, free=next_id)
            next_id += 1
        final.append(t)
    if next_id > 11:
        raise UnsupportedError(
            f"the kernel needs {next_id} cross-core flag ids and the hardware has 11 (0-10): {len(transfers)} tiles "
            "cross between the Cube and the Vector cores", loc=transfers[0].loc,
            hint="fewer distinct tiles crossing between T.gemm and element-wise code in one loop, or split the "
            "kernel in two")
    return final


def _receive_points(body: list, transfer: int):
    """(statement list, index) of every Receive of ``transfer`` in a body."""
    for n, s in enumerate(body):
        if isinstance(s, Receive) and s.transfer == transfer:
            yield body, n
        for sub in children(s):
            yield from _receive_points(sub, transfer)


def _choose_routes(launch: Launch, arch) -> list:
    def per_step(t: Transfer) -> Transfer:
        # GM has room: a workspace copy per step in turn, ordered by the round trip like on chip
        return (dataclasses.replace(t, free=None, slots=t.lead + 1) if t.skewed and t.route is Route.WORKSPACE
                else t)

    routed = [per_step(t) for t in _routes(launch, arch)]
    try:
        return _assign_ids(routed)
    except UnsupportedError:
        # An on-chip Cube -> Vector tile takes a "ready" id of its own; through the workspace the
        # tiles of one direction share one. When the ids run out, every tile takes the workspace
        # (slower, same result) before the kernel is refused.
        if not any(t.route is Route.ON_CHIP for t in routed):
            raise
        return _assign_ids([per_step(dataclasses.replace(t, route=Route.WORKSPACE, dual=False)) for t in routed])


def _on_chip_path(arch) -> bool:
    """Can tiles cross between the cores on chip (L0C -> UB, UB -> L1, mode-4 flags)?"""
    return arch.l0c_to_ub and arch.ub_to_l1 and arch.cross_core_mode4


def _routes(launch: Launch, arch) -> list:
    transfers = _keep_free(launch)
    aic = launch.kernels[Core.AIC]
    aiv = launch.kernels[Core.AIV]
    if not _on_chip_path(arch):
        return [dataclasses.replace(t, route=Route.WORKSPACE) for t in transfers]
    shapes = {aic.buffers[t.tile].shape if t.tile in aic.buffers else aiv.buffers[t.tile].shape for t in transfers}
    heights = {s[0] if len(s) == 2 else None for s in shapes}
    if len(heights) != 1 or None in heights or next(iter(heights)) % 2:
        return [dataclasses.replace(t, route=Route.WORKSPACE) for t in transfers]
    out = []
    for t in transfers:
        route = Route.ON_CHIP
        if t.direction is Direction.C2V and t.free is not None:
            # The AIC's Fixpipe into an AIV's UB overlaps whatever that AIV does before its "ready"
            # wait: no access to the tile may come before it in the same list, and one must follow.
            for body, n in _receive_points(aiv.body, t.index):
                uses = [j for j in range(n + 1, len(body)) if _touches(body[j], t.target)]
                if not uses or any(_touches(x, t.target) for x in body[:n]):
                    route = Route.WORKSPACE
        # One dual-destination Fixpipe for both halves: its page asks an even M (the on-chip route
        # already splits the rows evenly) and no conversion or ReLU (the tile crosses unconverted).
        dual = route is Route.ON_CHIP and t.direction is Direction.C2V and arch.l0c_to_ub_dual
        out.append(dataclasses.replace(t, route=route, dual=dual))
    return out


class _Expander:
    """Spells out the Send/Receive points of one launch for the chosen routes."""

    def __init__(self, launch: Launch, transfers: list) -> None:
        self.launch = launch
        self.t = transfers
        self.aic = launch.kernels[Core.AIC]
        self.aiv = launch.kernels[Core.AIV]
        self.ws: dict[str, Buffer] = {}
        self.offsets: dict[str, int] = {}
        self.nbytes = 0
        block_dim = launch.block_dim
        taken = set(self.aic.buffers) | set(self.aiv.buffers)
        # Transfer index -> its workspace buffer: one per transfer, so that a tile crossing twice in
        # one iteration (handed over, then a partial product) has a "free" flag per region it writes.
        self.ws_names: dict[int, str] = {}
        for t in transfers:
            if t.route is Route.WORKSPACE:
                buf = self._tile(t.tile)
                rows, cols = buf.shape
                name = fresh_name(f"ws_{t.tile}", taken)
                taken.add(name)
                self.ws_names[t.index] = name
                self.ws[name] = Buffer(name=name, shape=(block_dim * rows * t.slots, cols), dtype=buf.dtype,
                                       kind=BufferKind.WORKSPACE, loc=buf.loc, scope=Scope.GM,
                                       role=f"GM workspace carrying {t.tile} between the Cube and the Vector cores"
                                       + (f" ({t.slots} copies, one per step in turn)" if t.slots > 1 else ""))
                self.offsets[name] = self.nbytes
                self.nbytes += (block_dim * rows * cols * t.slots * buf.elem_bytes + 511) // 512 * 512

    def _tile(self, name: str) -> Buffer:
        return self.aic.buffers[name] if name in self.aic.buffers else self.aiv.buffers[name]

    def _ws_region(self, t: Transfer, step=None) -> Region:
        buf = self._tile(t.tile)
        zero = tirx.IntImm("int32", 0)
        block = _block_index(self.launch.grid)
        if t.slots > 1:
            if step is None:
                raise InternalCompilerError(f"workspace copy of {t.tile} in turn outside a loop", stage="route")
            block = block * t.slots + tirx.floormod(step, t.slots)
        return Region(self.ws_names[t.index], (block * buf.shape[0], zero), tuple(buf.shape))

    @staticmethod
    def _cc(set_: bool, t: Transfer, which: str, pipe, reason: str, loc, mode: int = 2, sub=None, orders=None):
        """A cross-core set/wait of transfer ``t``'s "ready" or "free" flag."""
        cls = CrossCoreSet if set_ else CrossCoreWait
        flag = t.ready if which == "ready" else t.free
        return cls(flag=flag, pipe=pipe, reason=reason, mode=mode, sub=sub, orders=orders, transfer=t.index, loc=loc)

    # -- the AIC
    def aic_body(self, body: list, step=None) -> list:
        """``step``: the variable of the innermost loop (the step a skewed loop's part works on)."""
        out: list = []
        free_after_gemm: list = []  # (tile, free id): set once the gemm that loads the tile is issued
        for s in body:
            if isinstance(s, Loop):
                out.append(dataclasses.replace(s, body=self.aic_body(s.body, s.var)))
            elif isinstance(s, If):
                out.append(dataclasses.replace(s, then_body=self.aic_body(s.then_body, step),
                                               else_body=self.aic_body(s.else_body, step)))
            elif isinstance(s, Send):
                out += self.aic_send(self.t[s.transfer], s.loc, step)
            elif isinstance(s, Receive):
                t = self.t[s.transfer]
                out += self.aic_receive(t, s.loc, step)
                if t.route is Route.ON_CHIP and t.free is not None:
                    free_after_gemm.append(t)
            else:
                out.append(s)
                if isinstance(s, TileGemm):
                    for t in [x for x in free_after_gemm if x.tile in tile_buffers(s)]:
                        free_after_gemm.remove(t)
                        out += [self._cc(True, t, "free", Pipe.MTE1, f"L1 tile {t.tile} loaded: AIV {sub} may write it "
                                         "again", s.loc, mode=4, sub=sub) for sub in (0, 1)]
        if free_after_gemm:
            raise InternalCompilerError(f"no gemm reads {[t.tile for t in free_after_gemm]} after its transfer",
                                        stage="route")
        return out

    def aic_send(self, t: Transfer, loc, step=None) -> list:
        """Cube -> Vector, the producer's side."""
        name = t.tile
        if t.route is Route.ON_CHIP and t.dual:
            out = [self._cc(False, t, "free", Pipe.FIX, f"AIV {sub}'s UB tile {t.target} is free", loc, mode=4, sub=sub)
                   for sub in (0, 1) if t.free is not None]
            out.append(CopyToPeerUbDual(src=name, target=t.target, step=step, loc=loc))
            out += [self._cc(True, t, "ready", Pipe.FIX, f"{name} from the Cube to AIV {sub}: its half is in its UB "
                             "(one Fixpipe for both)", loc, mode=4, sub=sub) for sub in (0, 1)]
            return out
        if t.route is Route.ON_CHIP:
            out: list = []
            for sub in (0, 1):
                if t.free is not None:
                    out.append(self._cc(False, t, "free", Pipe.FIX, f"AIV {sub}'s UB tile {t.target} is free", loc,
                                        mode=4, sub=sub))
                out.append(CopyToPeerUb(src=name, target=t.target, sub=sub, step=step, loc=loc))
                out.append(self._cc(True, t, "ready", Pipe.FIX,
                                    f"{name} from the Cube to AIV {sub}: its half is in its "
                                    "UB", loc, mode=4, sub=sub))
            return out
        out = []
        if t.free is not None:
            out.append(self._cc(False, t, "free", Pipe.FIX,
                                f"workspace of {name} is free (the AIVs have read it)", loc))
        out.append(TileCopy(src=full_region(self._tile(name)), dst=self._ws_region(t, step), loc=loc))
        out.append(self._cc(True, t, "ready", Pipe.FIX, f"{name} from the Cube to the Vector cores: written", loc))
        return out

    def aic_receive(self, t: Transfer, loc, step=None) -> list:
        """Vector -> Cube, the consumer's side."""
        name = t.tile
        why = f"{name} from the Vector cores to the Cube"
        if t.route is Route.ON_CHIP:
            return [self._cc(False, t, "ready", Pipe.MTE1, f"{name} from AIV {sub}: its half is in L1", loc, mode=4,
                             sub=sub) for sub in (0, 1)]
        out = [self._cc(False, t, "ready", Pipe.MTE2, f"{why}: ready in the workspace (both AIVs)", loc),
               TileCopy(src=self._ws_region(t, step), dst=full_region(self._tile(name)), loc=loc)]
        if t.free is not None:
            out.append(self._cc(True, t, "free", Pipe.MTE2, f"workspace of {name} read", loc))
        return out

    # -- the AIVs
    def aiv_body(self, body: list, step=None) -> list:
        out: list = []
        after: dict = {}  # index in body -> ops to append after that item
        for n, s in enumerate(body):
            if isinstance(s, Loop):
                out.append(dataclasses.replace(s, body=self.aiv_body(s.body, s.var)))
            elif isinstance(s, If):
                out.append(dataclasses.replace(s, then_body=self.aiv_body(s.then_body, step),
                                               else_body=self.aiv_body(s.else_body, step)))
            elif isinstance(s, Send):
                out += self.aiv_send(self.t[s.transfer], s.loc, step)
            elif isinstance(s, Receive):
                t = self.t[s.transfer]
                out += self.aiv_receive(t, s.loc, step)
                if t.route is Route.ON_CHIP and t.free is not None:
                    last = max(j for j in range(n + 1, len(body)) if _touches(body[j], t.target))
                    after.setdefault(last, []).append(self._cc(
                        True, t, "free", None, f"this AIV's UB tile {t.target} is free (its last use in the "
                        "iteration)", s.loc, mode=4, orders=t.target))
            else:
                out.append(s)
            out.extend(after.pop(n, []))
        return out

    def aiv_send(self, t: Transfer, loc, step=None) -> list:
        """Vector -> Cube, the producer's side."""
        name = t.tile
        if t.route is Route.ON_CHIP:
            out = []
            if t.free is not None:
                out.append(self._cc(False, t, "free", Pipe.MTE3,
                                    f"the AIC's L1 tile {name} is free (the AIC has loaded "
                                    "it)", loc, mode=4))
            rows = self._tile(name).shape[0]
            out.append(CopyToPeerL1(src=full_region(self.aiv.buffers[name]), target=name, rows=rows, step=step,
                                    loc=loc))
            out.append(self._cc(True, t, "ready", Pipe.MTE3, f"{name} from the Vector cores: this AIV's half is in the "
                                "AIC's L1", loc, mode=4))
            return out
        out = []
        if t.free is not None:
            out.append(self._cc(False, t, "free", Pipe.MTE3,
                                f"workspace of {name} is free (the AIC has loaded it)", loc))
        out.append(TileCopy(src=full_region(self.aiv.buffers[name]), dst=self._ws_region(t, step), loc=loc))
        out.append(self._cc(True, t, "ready", Pipe.MTE3, f"{name} from the Vector cores to the Cube: written", loc))
        return out

    def aiv_receive(self, t: Transfer, loc, step=None) -> list:
        """Cube -> Vector, the consumer's side."""
        name = t.tile
        if t.route is Route.ON_CHIP:
            return [self._cc(False, t, "ready", None,
                             f"{name} from the Cube: this AIV's half is in its UB", loc, mode=4,
                             orders=t.target)]
        why = f"{name} from the Cube to the Vector cores"
        out = [self._cc(False, t, "ready", Pipe.MTE2, f"{why}: ready in the workspace", loc),
               TileCopy(src=self._ws_region(t, step), dst=full_region(self.aiv.buffers[t.target]), loc=loc)]
        if t.free is not None:
            out.append(self._cc(True, t, "free", Pipe.MTE2, f"workspace of {name} read", loc))
        return out

    # -- prime and drain
    def prime_drain(self) -> tuple[list, list, list, list]:
        """The consumer frees each tile once up front; the producer waits for the last free at the end."""
        aic_pre: list = []
        aiv_pre: list = []
        aic_post: list = []
        aiv_post: list = []
        for t in self.t:
            if t.free is None:
                continue
            name = t.tile
            if t.direction is Direction.C2V and t.route is Route.WORKSPACE:
                aiv_pre.append(self._cc(True, t, "free", Pipe.MTE2, f"prime: workspace of {name} starts free", None))
                aic_post.append(self._cc(False, t, "free", Pipe.FIX,
                                         f"drain: the last read of {name}'s workspace", None))
            elif t.direction is Direction.C2V:
                aiv_pre.append(self._cc(True, t, "free", Pipe.V, f"prime: this AIV's UB tile of {name} starts free",
                                        None, mode=4))
                aic_post += [self._cc(False, t, "free", Pipe.FIX,
                                      f"drain: AIV {sub}'s last use of its UB tile of {name}",
                                      None, mode=4, sub=sub) for sub in (0, 1)]
            elif t.route is Route.ON_CHIP:
                aic_pre += [self._cc(True, t, "free", Pipe.MTE1,
                                     f"prime: L1 tile {name} starts free for AIV {sub}", None,
                                     mode=4, sub=sub) for sub in (0, 1)]
                aiv_post.append(self._cc(False, t, "free", Pipe.MTE3, f"drain: the AIC's last load of L1 tile {name}",
                                         None, mode=4))
            else:
                aic_pre.append(self._cc(True, t, "free", Pipe.MTE2, f"prime: workspace of {name} starts free", None))
                aiv_post.append(self._cc(False, t, "free", Pipe.MTE3,
                                         f"drain: the last load of {name}'s workspace", None))
        return aic_pre, aiv_pre, aic_post, aiv_post


# Off for a second lowering when a skewed loop cannot be lowered skewed (pipeline.py): SkewRetry.
SKEW: contextvars.ContextVar[bool] = contextvars.ContextVar("tl_ascend_skew", default=True)
# Off for a second lowering when a loop skewed two steps deep does not fit (pipeline.py): lead 1.
DEEP_SKEW: contextvars.ContextVar[bool] = contextvars.ContextVar("tl_ascend_deep_skew", default=True)


def skew_lead(arch) -> int:
    """How many steps part A of a skewed loop runs ahead of part B. Where every tile crosses
    through GM (no on-chip path between the cores), each step's chain waits two GM round trips (S
    out and P back, in FlashAttention), and the extra copies a second step in flight needs are
    workspace: lead 2. With the on-chip path the copies would cost UB/L1 and the chain is short:
    lead 1."""
    return 1 if _on_chip_path(arch) or not DEEP_SKEW.get() else 2


class SkewRetry(InternalCompilerError):
    """A later stage cannot lower a skewed loop as skewed (its flags need more event ids than a pipe
    pair has, or a tile both parts use does not fit a slot per step in flight): the pipeline lowers
    the kernel again with part A one step ahead (DEEP_SKEW off), then also without the loads ahead
    (prefetch.PREFETCH), then with the loop serial (SKEW off)."""


def _skew_loops(launch: Launch, arch) -> Launch:
    """Skew every pipelined loop whose tiles cross both ways and whose parts allow it (passes/skew.py),
    ``skew_lead(arch)`` steps deep; its transfers are marked ``skewed`` with that lead."""
    if not SKEW.get():
        return launch
    lead = skew_lead(arch)
    aic, aiv = launch.kernels[Core.AIC], launch.kernels[Core.AIV]
    loops = {c: {id(s.var): s for s in walk(k.body) if isinstance(s, Loop) and s.var is not None}
             for c, k in ((Core.AIC, aic), (Core.AIV, aiv))}
    replace: dict = {}
    skewed: set = set()
    for key, lp_aic in loops[Core.AIC].items():
        lp_aiv = loops[Core.AIV].get(key)
        if lp_aiv is None:
            continue
        pair = {Core.AIC: lp_aic, Core.AIV: lp_aiv}
        back = {s.transfer for s in walk(lp_aiv.body) if isinstance(s, Send)}
        if len(back) != 1:
            continue  # skewed: one tile back to the Cube per step (FlashAttention's P); others stay serial
        outside = {c: _outside(k.body, pair[c]) for c, k in ((Core.AIC, aic), (Core.AIV, aiv))}
        split = skew_mod.plan(pair, launch.transfers, outside)
        if split is None:
            continue
        if lp_aic.num_stages <= 2 and any(
                skew_mod.loads_for_both_parts(split[c], {n for n, b in k.buffers.items() if b.scope is not Scope.GM})
                for c, k in ((Core.AIC, aic), (Core.AIV, aiv))):
            continue  # skewed, such a load would lose its step ahead; serial steps keep it (faster when loads bound)
        kb = tirx.Var(f"{lp_aic.var.name}_b", lp_aic.var.dtype)  # one variable: one C++ name in the entry
        for c, lp in pair.items():
            replace[id(lp)] = skew_mod.skewed_loop(lp, split[c], kb, lead)
            skewed |= {s.transfer for s in walk(lp.body) if isinstance(s, Send | Receive)}
    if not replace:
        return launch

    def rebuild(body: list) -> list:
        out = []
        for s in body:
            if id(s) in replace:
                out.append(replace[id(s)])
            elif isinstance(s, Loop):
                out.append(dataclasses.replace(s, body=rebuild(s.body)))
            elif isinstance(s, If):
                out.append(dataclasses.replace(s, then_body=rebuild(s.then_body), else_body=rebuild(s.else_body)))
            else:
                out.append(s)
        return out

    transfers = [dataclasses.replace(t, skewed=True, lead=lead) if t.index in skewed else t for t in launch.transfers]
    return launch.replace(kernels={Core.AIC: aic.replace(body=rebuild(aic.body)),
                                   Core.AIV: aiv.replace(body=rebuild(aiv.body))}, transfers=transfers)


def _outside(body: list, loop: Loop) -> set:
    """Buffers the statements of ``body`` outside ``loop`` touch."""
    out: set = set()

    def visit(items: list) -> None:
        for s in items:
            if s is loop:
                continue
            if isinstance(s, Loop):
                out.update(skew_mod.rw(dataclasses.replace(s, body=[]))[0])
                visit(s.body)
            elif isinstance(s, If):
                out.update(skew_mod.rw(dataclasses.replace(s, then_body=[], else_body=[]))[0])
                visit(s.then_body)
                visit(s.else_body)
            else:
                r, w = skew_mod.rw(s)
                out.update(r | w)

    visit(body)
    return out


def route_launch(launch: Launch, arch) -> Launch:
    if not launch.mixed:
        return launch
    launch = _skew_loops(launch, arch)
    transfers = _choose_routes(launch, arch)
    ex = _Expander(launch, transfers)
    transfers = [dataclasses.replace(t, ws=ex.ws_names.get(t.index)) if t.route is Route.WORKSPACE else t
                 for t in transfers]
    aic_pre, aiv_pre, aic_post, aiv_post = ex.prime_drain()
    aic_body = aic_pre + ex.aic_body(ex.aic.body) + aic_post
    aiv_body = aiv_pre + ex.aiv_body(ex.aiv.body) + aiv_post
    ws = {n: dataclasses.replace(b) for n, b in ex.ws.items()}
    aic = ex.aic.replace(buffers={**ex.aic.buffers, **ws}, body=aic_body)
    aiv = ex.aiv.replace(buffers={**ex.aiv.buffers, **{n: dataclasses.replace(b) for n, b in ws.items()}},
                         body=aiv_body)
    workspace = Workspace(offsets=dict(ex.offsets), nbytes=ex.nbytes) if ex.ws else None
    return launch.replace(kernels={Core.AIC: aic, Core.AIV: aiv}, transfers=transfers, workspace=workspace)


def route(program: Program) -> Program:
    """Pick each transfer's route from the arch's facts and spell out its copies and flags."""
    out = program.replace(launches=[route_launch(lc, program.arch) for lc in program.launches])
    verify_route(out)
    return out


def verify_route(program: Program) -> None:
    """No Send/Receive is left; every cross-core wait has its set on the other core (per AIV in mode
    4), ids are 0-10, mode 4 and on-chip routes appear only where the arch has them, every mode-4
    op of the AIC names an AIV, and on-chip transfers have no workspace."""
    arch = program.arch

    def keys(body: list, set_: bool, core: Core) -> set:
        out = set()
        for s in walk(body):
            if isinstance(s, Send | Receive):
                raise InternalCompilerError(f"{type(s).__name__} of {s.tile} left after routing", stage="route")
            if not isinstance(s, CrossCoreSet if set_ else CrossCoreWait):
                continue
            if not 0 <= s.flag <= 10:
                raise InternalCompilerError(f"cross-core flag id {s.flag} outside 0-10", stage="route")
            if s.mode == 4:
                if not arch.cross_core_mode4:
                    raise InternalCompilerError(f"mode-4 cross-core flag on {arch.name}", stage="route")
                if core is Core.AIC and s.sub not in (0, 1):
                    raise InternalCompilerError(f"mode-4 flag {s.flag} on the AIC names no AIV", stage="route")
                out |= {(s.flag, 4, s.sub)} if core is Core.AIC else {(s.flag, 4, 0), (s.flag, 4, 1)}
            else:
                out.add((s.flag, s.mode, None))
        return out

    for lc in program.launches:
        if not lc.mixed:
            for core, k in lc.kernels.items():
                if keys(k.body, True, core) or keys(k.body, False, core):
                    raise InternalCompilerError("cross-core flags in a single-kind kernel", stage="route")
            continue
        aic, aiv = lc.kernels[Core.AIC], lc.kernels[Core.AIV]
        for waiter, k_wait, setter, k_set in ((Core.AIC, aic, Core.AIV, aiv), (Core.AIV, aiv, Core.AIC, aic)):
            missing = keys(k_wait.body, False, waiter) - keys(k_set.body, True, setter)
            if missing:
                raise InternalCompilerError(f"the {waiter} waits for cross-core flags {sorted(missing, key=str)} that "
                                            f"the {setter} never sets", stage="route")
        for t in lc.transfers:
            if t.route is None:
                raise InternalCompilerError(f"transfer of {t.tile} has no route", stage="route")
            if t.on_chip and t.ws is not None:
                raise InternalCompilerError(f"{t.tile} crosses on chip but keeps a workspace", stage="route")
            if t.on_chip and not arch.l0c_to_ub:
                raise InternalCompilerError(f"on-chip transfer of {t.tile} on {arch.name}", stage="route")
            if t.dual and not (t.on_chip and t.direction is Direction.C2V and arch.l0c_to_ub_dual):
                raise InternalCompilerError(f"dual-destination Fixpipe of {t.tile}: only for an on-chip Cube -> "
                                            f"Vector tile where the arch has the mode ({arch.name})", stage="route")
        # the AIC's on-chip Cube -> Vector copies take the form their transfer was given
        for s in walk(lc.kernels[Core.AIC].body):
            if isinstance(s, CopyToPeerUb | CopyToPeerUbDual):
                dual = isinstance(s, CopyToPeerUbDual)
                ts = [t for t in lc.transfers if t.on_chip and t.direction is Direction.C2V and t.target == s.target]
                if not ts or any(t.dual is not dual for t in ts):
                    raise InternalCompilerError(f"{s.src} crosses to {s.target} as {type(s).__name__}, its transfer "
                                                "says otherwise", stage="route")


__all__ = ["route", "verify_route"]
