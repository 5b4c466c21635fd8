"""prefetch: in a skewed loop, issue part A's GM loads of a later step before part B's cross-core wait.

Needs: multi_buffer (the slots of every pipelined loop known), before plan_memory and insert_sync.
Establishes: in a skewed loop (passes/skew.py) whose part B waits for the other core, each top-level
op of part A on MTE2 that reads only GM nothing in the launch writes (no loaded index either) into
a tile with s = skew.step_slots(loop) slots that part B does not touch and that no other op writes, runs in part A for
steps 0 .. s-1 only and is issued by part B of step kb for step kb + s, just before B's first
cross-core wait (a loop of at most s steps is left alone):

    for k in 0 .. n + 1:
        if k < n:   if k < s: load(k)                   # slot k % s
                    A(k) ...                            # reads slot k % s
        if k >= 1:  B(k - 1): ..., if k - 1 + s < n: load(k - 1 + s), wait for the other core, ...

Why: a pipe runs its ops in program order. Skewed, step k + 1's load comes after step k - 1's part
B, which waits for the other core on the pipe that also loads (FlashAttention's Cube waits for P,
the Vector cores' softmax, on MTE2 on dav-c220, where P comes through GM): the load then waits for
the softmax too. Issued before the wait, it overlaps it. The slots make it legal: the load for
step kb + s writes slot kb % s, last read by part A of step kb one trip earlier; insert_sync
orders it by step like any tile both parts rotate (A(k) before B(k) one trip later, B(k) before
A(k + s)), and a part-A load guarded by ``k < s`` carries no flag to the step s on. A kernel
whose memory no longer fits with the tile living through the whole loop keeps its loop as it was;
one whose flags then need more event ids than a pipe pair has is lowered again without this pass
(``PREFETCH``, pipeline.py).
"""

from __future__ import annotations

import contextvars
import dataclasses

from tvm import arith, tirx

from ascend_backend.errors import InternalCompilerError
from ascend_backend.ir import (
    AscOp,
    CrossCoreWaitOp,
    If,
    Kernel,
    Launch,
    Loop,
    Pipe,
    Program,
    ScalarStore,
    Scope,
    walk,
)

from .plan_memory import lifetimes, plan_buffers
from .skew import parts as skew_parts
from .skew import step_slots, substitute

# Off for a second lowering when a skewed loop's flags need more event ids than a pipe pair has
# (pipeline.py; the loads ahead add a flag per slot from part A to part B).
PREFETCH: contextvars.ContextVar[bool] = contextvars.ContextVar("tl_ascend_prefetch", default=True)


def _ops(body: list) -> list:
    return [s for s in walk(body) if isinstance(s, AscOp)]


def _touched(body: list) -> set:
    return {b for s in _ops(body) for b in (*s.reads, *s.writes)}


def _first_wait(body: list) -> int | None:
    """Index of the first top-level item of ``body`` that is or holds a cross-core wait."""
    return next((n for n, s in enumerate(body) if any(isinstance(x, CrossCoreWaitOp) for x in walk([s]))), None)


def _loads_ahead(lp: Loop, kernel: Kernel, written: set) -> list:
    """The top-level ops of part A that may run s steps ahead in part B (see the module doc)."""
    a_part, b_loop = skew_parts(lp)
    b_touched = _touched([b_loop])
    writers: dict = {}
    for s in _ops(kernel.body):
        for w in s.writes:
            writers.setdefault(w, []).append(s)
    seen: set = set()
    out = []
    for x in a_part:
        if not isinstance(x, AscOp):
            seen |= _touched([x])
            continue
        ok = (x.pipe is Pipe.MTE2 and len(x.writes) == 1 and x.reads and not x.index_reads
              and all(kernel.buffers[r].scope is Scope.GM and r not in written for r in x.reads))
        w = x.writes[0] if ok else None
        # (as many slots as insert_sync's steps between the parts: B(k) before A(k + s))
        if ok and (lp.slots.get(w, 1) == step_slots(lp) and w not in b_touched and w not in seen
                   and all(any(y is o for o in a_part) for y in writers[w])):
            out.append(x)
        seen |= set(x.reads) | set(x.writes)
    # a loop of at most s steps loads nothing ahead
    n = arith.Analyzer().simplify(lp.steps)
    out = [x for x in out if not (isinstance(n, tirx.IntImm) and int(n.value) <= lp.slots[x.writes[0]])]
    # every op writing a moved tile moves (a tile loaded in two pieces moves whole or not at all)
    moved = {id(x) for x in out}
    return [x for x in out if all(id(y) in moved for y in writers[x.writes[0]])]


def _fits(kernel: Kernel, launch: Launch, arch) -> bool:
    placed = {n: dataclasses.replace(b) for n, b in kernel.buffers.items()}
    _, _, over = plan_buffers(placed, lifetimes(kernel), launch.fixed_tiles(kernel.core), arch)
    return not any(over.values())


def _rewrite(lp: Loop, moved: list) -> Loop:
    """The skewed loop with ``moved`` kept in part A for steps 0 .. s-1 only, and issued s steps
    ahead in part B before its first cross-core wait."""
    guard_a, guard_b = lp.body
    b_loop = guard_b.then_body[0]
    k, kb = lp.var, b_loop.var
    n = arith.Analyzer().simplify(lp.steps)
    gone = {id(x): x for x in moved}
    a_part = [If(cond=k < lp.slots[x.writes[0]], then_body=[x], loc=x.loc) if id(x) in gone else x
              for x in guard_a.then_body]
    at = _first_wait(b_loop.body)
    ahead = []
    for x in moved:
        s = lp.slots[x.writes[0]]
        ahead.append(If(cond=kb + s < n, then_body=[substitute(x, {k: kb + s})], loc=x.loc))
    b_slots = {**b_loop.slots, **{x.writes[0]: lp.slots[x.writes[0]] for x in moved}}
    b_body = b_loop.body[:at] + ahead + b_loop.body[at:]
    new_b = dataclasses.replace(b_loop, body=b_body, slots=b_slots)
    return dataclasses.replace(lp, body=[dataclasses.replace(guard_a, then_body=a_part),
                                         dataclasses.replace(guard_b, then_body=[new_b])])


def prefetch_kernel(kernel: Kernel, launch: Launch, arch) -> Kernel:
    written = {w for c in launch.kernels.values() for s in walk(c.body) if isinstance(s, AscOp | ScalarStore)
               for w in s.writes}
    changed = []

    def rewrite(body: list) -> list:
        out = []
        for s in body:
            if isinstance(s, Loop) and s.skewed:
                moved = _loads_ahead(s, kernel, written) if _first_wait(skew_parts(s)[1].body) is not None else []
                if moved:
                    loop = _rewrite(s, moved)
                    changed.append(loop)
                    out.append(loop)
                    continue
                out.append(s)
            elif isinstance(s, Loop):
                out.append(dataclasses.replace(s, body=rewrite(s.body)))
            elif isinstance(s, If):
                out.append(dataclasses.replace(s, then_body=rewrite(s.then_body), else_body=rewrite(s.else_body)))
            else:
                out.append(s)
        return out

    if not launch.mixed or not PREFETCH.get():
        return kernel
    new = kernel.replace(body=rewrite(kernel.body))
    if not changed or not _fits(new, launch, arch):
        return kernel  # nothing to move, or the tiles, now live through the whole loop, do not fit
    return new


def prefetch(program: Program) -> Program:
    """Issue the GM loads of skewed loops' later steps before part B's cross-core wait."""
    out = program.map_kernels(lambda k, lc, p: prefetch_kernel(k, lc, p.arch))
    verify_prefetch(out)
    return out


def verify_prefetch(program: Program) -> None:
    """In every skewed loop, a tile both parts touch and part B selects by its step rotates with as
    many slots in both parts (a load ahead writes the slot part A reads s steps later)."""
    for _, _, kernel in program.kernels():
        for lp in walk(kernel.body):
            if not (isinstance(lp, Loop) and lp.skewed):
                continue
            a_part, b_loop = skew_parts(lp)
            for name, s in b_loop.slots.items():
                if name in _touched(a_part) and lp.slots.get(name) != s:
                    raise InternalCompilerError(f"{name} rotates through {lp.slots.get(name)} slots in part A of a "
                                                f"skewed loop and {s} in part B", stage="prefetch")


__all__ = ["PREFETCH", "prefetch", "verify_prefetch"]
