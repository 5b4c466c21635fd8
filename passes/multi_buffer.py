"""multi_buffer: rotate the buffers of a T.Pipelined loop through num_stages slots.

Needs: a lowered body (Loops and AscOps), before insert_sync and plan_memory.
Establishes: in every pipelined loop with num_stages = s > 1, each L1 or UB buffer that is
private to one iteration (only touched inside the loop, and first written, not read, in each
iteration) has s slots, and each such L0A/L0B/L0C buffer has 2 when its memory has room; the
loop records them in ``Loop.slots``. Iteration k uses slot k % s, so the loads of iteration k + 1
go to another slot while iteration k computes, and insert_sync gives the dependencies on these
buffers one event id per slot. If s slots do not fit L1 or UB, a MemoryBudgetError says so and
names the largest number of stages that fits; with ``fit_stages`` (the driver's last retry) the
buffers get that many slots instead (num_stages is a pipelining hint: the results are the same),
and a warning names the loop.
"""

from __future__ import annotations

import dataclasses
import warnings

from ascend_backend.errors import InternalCompilerError, MemoryBudgetError
from ascend_backend.ir import AscOp, If, Kernel, Launch, Loop, LoopKind, Pipe, Program, Scope, walk

from .lower_tile_ops import PINGPONG
from .plan_memory import budget_table

ROTATED = (Scope.L1, Scope.UB)
DOUBLED = (Scope.L0A, Scope.L0B, Scope.L0C)


def _touched(body) -> set:
    return {b for s in walk(body) if isinstance(s, AscOp) for b in (*s.reads, *s.writes)}


def _private(loop: Loop, outside: set) -> list:
    """Buffers whose every access is in ``loop`` and whose first access per iteration is a write."""
    first: dict[str, str] = {}
    for s in walk(loop.body):
        if not isinstance(s, AscOp):
            continue
        reads = set(s.reads)
        for b in s.reads:
            first.setdefault(b, "read")
        for b in s.writes:
            first.setdefault(b, "read" if b in reads else "write")
    return [b for b, kind in first.items() if kind == "write" and b not in outside]


def multi_buffer_kernel(kernel: Kernel, launch: Launch, arch, fit_stages: bool = False) -> Kernel:
    buffers = kernel.copy_buffers()
    fixed = launch.fixed_tiles(kernel.core) if kernel.core is not None else set()

    def rewrite(body: list, outer: list) -> list:
        out = []
        for n, s in enumerate(body):
            if isinstance(s, If):
                out.append(dataclasses.replace(s, then_body=rewrite(s.then_body, outer + body[:n] + body[n + 1:]),
                                               else_body=rewrite(s.else_body, outer + body[:n] + body[n + 1:])))
                continue
            if not isinstance(s, Loop):
                out.append(s)
                continue
            siblings = outer + body[:n] + body[n + 1:]
            inner = rewrite(s.body, siblings)
            slots = {}
            if s.kind is LoopKind.PIPELINED and s.num_stages > 1:
                outside = _touched([x for x in siblings])
                for name in _private(dataclasses.replace(s, body=inner), outside):
                    if name in fixed:
                        continue  # written in place by the other core kind: one fixed address
                    b = buffers[name]
                    if b.scope in ROTATED:
                        slots[name] = s.num_stages
                    elif b.scope in DOUBLED and not name.endswith(PINGPONG):
                        slots[name] = 2  # (a K-stepped gemm's ping/pong pair is doubled already)
            for name, k in slots.items():
                buffers[name].slots = max(buffers[name].slots, k)
            out.append(dataclasses.replace(s, body=inner, slots=slots))
        return out

    body = rewrite(kernel.body, [])
    _fit(arch, buffers, body, fit_stages)
    return kernel.replace(body=body, buffers=buffers)


def multi_buffer(program: Program, fit_stages: bool = False) -> Program:
    """Give the iteration-private buffers of pipelined loops their rotating slots (with
    ``fit_stages``, as many as fit)."""
    out = program.map_kernels(lambda k, lc, p: multi_buffer_kernel(k, lc, p.arch, fit_stages))
    verify_multi_buffer(out)
    return out


def _fit(arch, buffers: dict, body: list, fit_stages: bool = False) -> None:
    """L0 memories: fall back to one slot where two do not fit. L1/UB: fail naming the stages that fit."""
    cap = arch.capacity
    for mem in DOUBLED:
        members = [b for b in buffers.values() if b.scope == mem]
        if sum(b.nbytes for b in members) > cap[mem]:
            for b in members:
                b.slots = 1
            for lp in (s for s in walk(body) if isinstance(s, Loop)):
                for b in members:
                    lp.slots.pop(b.name, None)
    for mem in ROTATED:
        members = [b for b in buffers.values() if b.scope == mem]
        total = sum(b.nbytes for b in members)
        if total <= cap[mem]:
            continue
        # A buffer only the vector pipe touches (a vector temporary) gains nothing from rotating:
        # the vector pipe runs its ops in order, so the next iteration cannot overtake this one's
        # use of it. When memory is short those keep one slot.
        pipes: dict[str, set] = {}
        for op in walk(body):
            if isinstance(op, AscOp):
                for name in (*op.reads, *op.writes):
                    pipes.setdefault(name, set()).add(op.pipe)
                for name in op.index_reads:
                    pipes.setdefault(name, set()).add(Pipe.S)
        vector_only = [b for b in members if b.slots > 1 and pipes.get(b.name) == {Pipe.V}]
        if vector_only and total - sum(b.nbytes - b.nbytes // b.slots for b in vector_only) <= cap[mem]:
            for b in vector_only:
                b.slots = 1
            for lp in (x for x in walk(body) if isinstance(x, Loop)):
                for b in vector_only:
                    lp.slots.pop(b.name, None)
            continue
        staged = [b for b in members if b.slots > 1]
        if not staged:
            continue  # plan_memory reports plain overflows
        fixed = sum(b.nbytes for b in members if b.slots == 1)
        unit = sum(b.nbytes // b.slots for b in staged)
        fits = max(0, (cap[mem] - fixed) // unit) if unit else 0
        stages = staged[0].slots
        loop_loc = next((s.loc for s in walk(body) if isinstance(s, Loop) and s.slots), staged[0].loc)
        if fit_stages and fits >= 1:
            for b in staged:
                b.slots = min(b.slots, fits)
            for lp in (x for x in walk(body) if isinstance(x, Loop)):
                for b in staged:
                    if b.name in lp.slots:
                        if b.slots > 1:
                            lp.slots[b.name] = b.slots
                        else:
                            lp.slots.pop(b.name)
            warnings.warn(f"{loop_loc}: T.Pipelined with num_stages={stages} is lowered with {fits} stage(s): "
                          f"{mem} holds {cap[mem]} bytes on {arch.name}, {stages} stages need {total}",
                          stacklevel=2)
            continue
        raise MemoryBudgetError(
            f"{mem} cannot hold {stages} pipeline stages: it needs {total} bytes with {stages} slots per pipelined "
            f"buffer, and holds {cap[mem]} bytes on {arch.name}",
            table=budget_table(members, mem, cap[mem], arch.name),
            loc=loop_loc,
            hint=(f"use num_stages={fits} (the largest that fits), or reduce the tile sizes" if fits >= 1 else
                  _one_stage_hint(members, cap[mem])),
        )


def _one_stage_hint(members: list, cap: int) -> str:
    """What to shrink when even one slot per buffer is too much: the largest buffers at one slot,
    with the DSL lines whose tile shapes set them."""
    one = sorted(members, key=lambda b: -(b.nbytes // b.slots))
    need = sum(b.nbytes // b.slots for b in members)
    big = ", ".join(f"'{b.name}' {'x'.join(map(str, b.shape))} {b.dtype} ({b.nbytes // b.slots} bytes"
                    + (f", {b.loc})" if b.loc else ")") for b in one[:3])
    return (f"even one stage does not fit ({need} bytes at one slot per buffer): reduce the tile sizes; the largest "
            f"buffers are {big}. Halving block_M or block_N (the rows or columns of these tiles) halves them")


def verify_multi_buffer(program: Program) -> None:
    """Every slotted buffer belongs to exactly one pipelined loop and is touched only there."""
    for _, _, kernel in program.kernels():
        owners: dict[str, int] = {}
        for s in walk(kernel.body):
            if isinstance(s, Loop):
                for name in s.slots:
                    owners[name] = owners.get(name, 0) + 1
                    if kernel.buffers[name].slots < s.slots[name]:
                        raise InternalCompilerError(f"{name} has fewer slots than its loop uses", stage="multi_buffer")
        for name, n in owners.items():
            if n != 1:
                raise InternalCompilerError(f"{name} rotates in {n} loops", stage="multi_buffer")
