"""multi_buffer: rotate the buffers of a T.Pipelined loop through num_stages slots.

Needs: a lowered body (Loops and AscOps), before plan_memory and insert_sync.
Establishes: in every pipelined loop with num_stages = s > 1, each L1 or UB buffer that is
private to one iteration (only touched inside the loop, and first written, not read, in each
iteration) and touched by more than one pipe has s slots, and each such L0A/L0B/L0C buffer has 2
where its memory has room (the smallest keep theirs when not all fit); the loop records them in
``Loop.slots``. Iteration k uses slot k % s, so the loads of iteration k + 1 go to another slot
while iteration k computes, and insert_sync gives the dependencies on these buffers one event id
per slot. A buffer only one pipe touches (a vector temporary) keeps one slot: a pipe runs its ops
in order, so a second copy would never be used at the same time. If s slots do not fit L1 or UB
(with plan_memory's reuse of dead bytes), a MemoryBudgetError says so and names the largest number
of stages that fits; with ``fit_stages``
(the driver's last retry) the buffers get that many slots instead (num_stages is a pipelining
hint: the results are the same), and a warning names the loop.
Tiles that cross between the cores on chip get a second slot where their memory has room: in a
skewed loop each crossing tile (its "free" flag dropped: the round trip orders the slots), and in a
loop that is not skewed each Cube -> Vector tile that goes one way (its "free" flag, a counter,
primed and drained twice), so the producer runs a step ahead of the consumer.
"""

from __future__ import annotations

import dataclasses
import warnings

from ascend_backend.errors import InternalCompilerError, MemoryBudgetError
from ascend_backend.ir import (
    AscOp,
    CopyUbToPeerL1,
    Core,
    CrossCoreSetOp,
    CrossCoreWaitOp,
    Direction,
    FixpipeToPeerUb,
    FixpipeToPeerUbDual,
    If,
    Kernel,
    Launch,
    Loop,
    LoopKind,
    Program,
    Scope,
    map_body,
    walk,
)

from .lower_tile_ops import PINGPONG
from .plan_memory import PARTS_APART, RELAXED, budget_table, lifetimes, plan_buffers
from .route import SkewRetry
from .skew import parts as skew_parts
from .skew import step_slots

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
    lives = lifetimes(kernel)
    one_pipe = {n for n, life in lives.items() if len(life.pipes) == 1}

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
            both: set = set()
            if s.skewed:
                a_part, b_loop = skew_parts(dataclasses.replace(s, body=inner))
                both = _touched(a_part) & _touched([b_loop])
            if s.kind is LoopKind.PIPELINED and s.num_stages > 1:
                outside = _touched([x for x in siblings])
                for name in _private(dataclasses.replace(s, body=inner), outside):
                    if name in fixed:
                        continue  # written in place by the other core kind: one fixed address
                    if name in one_pipe and name not in both:
                        continue  # one pipe, in order: iteration k + 1 never meets iteration k here
                    b = buffers[name]
                    if b.scope in ROTATED:
                        # (part B reads step k - lead's copy while part A writes step k's)
                        slots[name] = step_slots(s) if name in both else s.num_stages
                    elif b.scope in DOUBLED and not name.endswith(PINGPONG) and name not in both:
                        # (a K-stepped gemm's ping/pong pair is doubled already; an L0 operand both
                        # parts of a skewed loop load keeps one copy, ordered part by part)
                        slots[name] = 2
            for name, k in slots.items():
                buffers[name].slots = max(buffers[name].slots, k)
            if s.skewed:
                # part B works on the step before: it selects its slots by its own step variable
                guard_a, guard_b = inner
                b_loop = guard_b.then_body[0]
                b_slots = {name: k for name, k in slots.items() if name in _touched([b_loop])}
                inner = [guard_a, dataclasses.replace(guard_b, then_body=[dataclasses.replace(b_loop, slots=b_slots)])]
            out.append(dataclasses.replace(s, body=inner, slots=slots))
        return out

    body = rewrite(kernel.body, [])
    _fit(arch, buffers, body, lives, fixed, fit_stages)
    return kernel.replace(body=body, buffers=buffers)


def multi_buffer(program: Program, fit_stages: bool = False) -> Program:
    """Give the iteration-private buffers of pipelined loops their rotating slots, and the tiles
    crossing in a skewed loop a slot per step where they fit (with ``fit_stages``, as many slots
    as fit)."""
    out = program.map_kernels(lambda k, lc, p: multi_buffer_kernel(k, lc, p.arch, fit_stages))
    out = out.replace(launches=[_crossing_slots(lc, out.arch) if lc.mixed else lc for lc in out.launches])
    verify_multi_buffer(out)
    return out


def _crossing_slots(launch: Launch, arch) -> Launch:
    """In a skewed loop a producer runs a step ahead of its consumer: each crossing tile needs a
    copy per step in turn, or a "free" flag that holds the producer back (route emitted one for
    every on-chip tile). Give the tiles, in transfer order, a second slot where the memory holding
    them has room, and drop their "free" flags: the round trip then orders each write of a slot
    after the reads of the step two before."""
    transfers = list(launch.transfers)
    kernels = dict(launch.kernels)
    for n, t in enumerate(transfers):
        if t.on_chip and not t.skewed and t.free is not None and t.direction is Direction.C2V:
            kernels = _one_way_slots(launch, kernels, t, arch)
            if kernels[Core.AIV].buffers[t.target].slots == 2:
                transfers[n] = dataclasses.replace(t, slots=2)
            continue
        if not (t.skewed and t.on_chip and t.free is not None):
            continue
        owner = Core.AIV if t.direction is Direction.C2V else Core.AIC
        other = Core.AIC if owner is Core.AIV else Core.AIV
        k = kernels[owner]
        name = t.target
        buffers = k.copy_buffers()
        b = buffers[name]
        loops = [s for s in walk(k.body) if isinstance(s, Loop) and s.skewed]
        places = []
        for lp in loops:
            a_part, b_loop = skew_parts(lp)
            if name in _touched(a_part):
                places.append(lp)
            if name in _touched([b_loop]):
                places.append(b_loop)
        if not places or b.slots != 1:
            continue
        copies = t.lead + 1
        b.slots = copies
        fixed = launch.fixed_tiles(owner)
        if _over(arch, b.scope, [x for x in buffers.values() if x.scope == b.scope], lifetimes(k), fixed):
            continue
        for lp in places:
            lp.slots[name] = copies
        kernels[owner] = k.replace(buffers=buffers)
        free = t.free

        def drop(s, free=free, idx=t.index):
            return isinstance(s, CrossCoreSetOp | CrossCoreWaitOp) and s.flag == free and s.transfer == idx

        def peer(s, name=name, elems=b.slot_elems, copies=copies):
            return [] if drop(s) else [_slotted_peer(s, name, elems, copies)]

        kernels[other] = kernels[other].replace(body=map_body(kernels[other].body, peer))
        kernels[owner] = kernels[owner].replace(body=map_body(kernels[owner].body, lambda s: [] if drop(s) else [s]))
        transfers[n] = dataclasses.replace(t, free=None, slots=copies)
    return launch.replace(kernels=kernels, transfers=transfers)


def _slotted_peer(s, name: str, elems: int, copies: int = 2):
    """``s``, writing into the other core's tile ``name`` by slot when it is the transfer's op."""
    if isinstance(s, FixpipeToPeerUb | FixpipeToPeerUbDual | CopyUbToPeerL1) and s.target == name:
        return dataclasses.replace(s, slots=copies, slot_elems=elems)
    return s


def _one_way_slots(launch: Launch, kernels: dict, t, arch) -> dict:
    """A Cube -> Vector tile crossing on chip inside a pipelined loop that is not skewed (it goes one
    way: nothing comes back to bound how far the Cube runs ahead): give the AIVs' UB tile a second
    slot where UB has room, so the Cube's Fixpipe of step k + 1 need not wait for the Vectors to
    finish step k. The "free" flag stays (a counter): the AIVs set it once more up front, so the
    Cube may fill both slots before the first is freed, and the Cube's drain waits once more."""
    aiv, aic = kernels[Core.AIV], kernels[Core.AIC]
    name = t.target
    loops = [s for s in walk(aiv.body) if isinstance(s, Loop) and s.kind is LoopKind.PIPELINED and s.num_stages > 1
             and name in _touched(s.body)]
    def fixpipes_into(s) -> bool:
        return any(isinstance(x, FixpipeToPeerUb | FixpipeToPeerUbDual) and x.target == name for x in walk(s.body))

    aic_loops = [s for s in walk(aic.body) if isinstance(s, Loop) and s.kind is LoopKind.PIPELINED and fixpipes_into(s)]
    if len(loops) != 1 or len(aic_loops) != 1 or id(loops[0].var) != id(aic_loops[0].var):
        return kernels
    if any(isinstance(x, If) and fixpipes_into(Loop(var=None, extent=1, body=x.then_body + x.else_body))
           for x in walk(aic_loops[0].body)):
        # a transfer in some iterations only (under an `if`): slot k % 2 would not alternate between
        # transfers (TileLang's 2xAcc promotion every other step would use slot 1 twice)
        return kernels
    buffers = aiv.copy_buffers()
    b = buffers[name]
    if b.slots != 1:
        return kernels
    b.slots = 2
    if _over(arch, b.scope, [x for x in buffers.values() if x.scope == b.scope], lifetimes(aiv),
             launch.fixed_tiles(Core.AIV)):
        return kernels

    def outer(body: list, fn) -> list:
        # the prime (AIV) and drain (AIC) of the free flag: the top-level cross-core ops of this transfer
        out = []
        for s in body:
            out.extend(fn(s) if isinstance(s, CrossCoreSetOp | CrossCoreWaitOp) else [s])
        return out

    doubled = []

    def twice(s):
        if s.flag == t.free and s.transfer == t.index:
            doubled.append(s)
            return [s, dataclasses.replace(s)]
        return [s]

    aiv_body = outer(aiv.body, twice)
    aic_body = outer(map_body(aic.body, lambda s: [_slotted_peer(s, name, b.slot_elems)]), twice)
    primes = sum(isinstance(s, CrossCoreSetOp) for s in doubled)
    drains = sum(isinstance(s, CrossCoreWaitOp) for s in doubled)
    if (primes, drains) != (1, 2):
        return kernels  # the prime / drain are not where route puts them (top level): leave one slot
    loops[0].slots[name] = 2
    out = dict(kernels)
    out[Core.AIV] = aiv.replace(buffers=buffers, body=aiv_body)
    out[Core.AIC] = aic.replace(body=aic_body)
    return out


class SkewSlotsDoNotFit(SkewRetry):
    """A tile both parts of a skewed loop use needs a slot per step in flight (part A works on step
    k while part B still reads step k - lead's), and its memory holds fewer: the pipeline lowers the
    kernel again with a lead of 1, then with the loop serial."""


def _shared_by_skewed_parts(loops: list, staged: list) -> set:
    """The staged tiles both parts of a skewed loop use (part B reads step k - lead's while part A
    writes step k's: each needs lead + 1 slots, ``skew.step_slots``)."""
    out: set = set()
    for lp in loops:
        if lp.skewed:
            a_part, b_loop = skew_parts(lp)
            out |= {b.name for b in staged if b.name in _touched(a_part) & _touched([b_loop])}
    return out


def _keep_shared_slots(arch, mem, members: list, staged: list, shared: set, lives: dict, fixed: set,
                       last_tier: int) -> set | None:
    """Every slot of ``shared``, and of as many other staged tiles as fit (the smallest keep
    theirs; placed up to plan_memory's ``last_tier``): the names left with one slot, or None when
    even that does not fit. A tile only one part touches is written and read in the same trip, so
    one slot keeps its values right; it only orders that part's load of step k + 1 after its use of
    step k."""
    counts = {b.name: b.slots for b in staged}
    one: set = set()
    for b in sorted((b for b in staged if b.name not in shared), key=lambda b: (-b.nbytes, b.name)):
        if not _over(arch, mem, members, lives, fixed, last_tier):
            return one
        b.slots = 1
        one.add(b.name)
    if not _over(arch, mem, members, lives, fixed, last_tier):
        return one
    for b in staged:
        b.slots = counts[b.name]
    return None


def _fit(arch, buffers: dict, body: list, lives: dict, fixed: set, fit_stages: bool = False) -> None:
    """L0 memories: drop the second slot of the largest doubled buffers until the rest fit.
    L1/UB: fail naming the stages that fit (placed as plan_memory places them, with reuse)."""
    cap = arch.capacity
    loops = [s for s in walk(body) if isinstance(s, Loop)]
    for mem in DOUBLED:
        members = [b for b in buffers.values() if b.scope == mem]
        while sum(b.nbytes for b in members) > cap[mem] and any(b.slots > 1 for b in members):
            big = max((b for b in members if b.slots > 1), key=lambda b: (b.nbytes, b.name))
            big.slots = 1
            for lp in loops:
                lp.slots.pop(big.name, None)
    for mem in ROTATED:
        members = [b for b in buffers.values() if b.scope == mem]
        staged = [b for b in members if b.slots > 1]
        if not staged:
            continue
        # A skewed loop's parts overlap; bytes handed from one part to the other would serialise
        # them in every trip. Fewer slots of the tiles one part uses cost less: those come first.
        apart = PARTS_APART if any(lp.skewed for lp in loops) else RELAXED
        if not _over(arch, mem, members, lives, fixed, apart):
            continue
        if fit_stages:
            if apart != RELAXED and _fewer_slots(arch, mem, members, staged, loops, lives, fixed, apart, False):
                continue
            if not _over(arch, mem, members, lives, fixed):
                continue  # every slot fits with the parts sharing bytes
            if _fewer_slots(arch, mem, members, staged, loops, lives, fixed, RELAXED, True):
                continue
        stages = _stages(loops, staged)
        fits = _uniform_fit(arch, mem, members, staged, lives, fixed, RELAXED)
        total = sum(b.nbytes for b in members)
        loop_loc = next((s.loc for s in loops if s.slots), staged[0].loc)
        placed = {b.name: dataclasses.replace(b) for b in members}
        offsets, used, _ = plan_buffers(placed, lives, fixed, arch)
        for name, off in offsets.items():
            placed[name].offset = off
        raise MemoryBudgetError(
            f"{mem} cannot hold {stages} pipeline stages: it needs {used[mem]} bytes with {stages} slots per pipelined "
            f"buffer ({total} without reusing dead buffers), and holds {cap[mem]} bytes on {arch.name}",
            table=budget_table(list(placed.values()), mem, cap[mem], arch.name, used=used[mem]),
            loc=loop_loc,
            hint=(f"use num_stages={fits} (the largest that fits), or reduce the tile sizes" if fits >= 1 else
                  _one_stage_hint(members, cap[mem])),
        )


def _stages(loops: list, staged: list) -> int:
    return next((s.num_stages for s in loops if s.slots), max(b.slots for b in staged))


def _uniform_fit(arch, mem, members: list, staged: list, lives: dict, fixed: set, last_tier: int) -> int:
    """The largest number of slots s < the current ones such that every staged buffer at min(its
    slots, s) fits (0: none); the slots are left as they were."""
    counts = {b.name: b.slots for b in staged}
    fits = 0
    for s in range(max(counts.values()) - 1, 0, -1):
        for b in staged:
            b.slots = min(counts[b.name], s)
        if not _over(arch, mem, members, lives, fixed, last_tier):
            fits = s
            break
    for b in staged:
        b.slots = counts[b.name]
    return fits


def _fewer_slots(arch, mem, members: list, staged: list, loops: list, lives: dict, fixed: set, last_tier: int,
                 last_try: bool) -> bool:
    """With ``fit_stages``: give the staged buffers fewer slots so that they fit (placed up to
    plan_memory's ``last_tier``), warn naming the loop, and say True; False when nothing fits that
    way. The tiles both parts of a skewed loop use keep their slots (``_keep_shared_slots``); when
    even that does not fit on the ``last_try``, SkewSlotsDoNotFit (the pipeline lowers the loop
    again with a lead of 1, then serial)."""
    cap = arch.capacity
    stages = _stages(loops, staged)
    total = sum(b.nbytes for b in members)
    loop_loc = next((s.loc for s in loops if s.slots), staged[0].loc)
    counts = {b.name: b.slots for b in staged}
    fits = _uniform_fit(arch, mem, members, staged, lives, fixed, last_tier)
    shared = _shared_by_skewed_parts(loops, staged)
    if any(fits < counts[name] for name in shared):
        one = _keep_shared_slots(arch, mem, members, staged, shared, lives, fixed, last_tier)
        if one is None:
            if last_try:
                lead = max(lp.lead for lp in loops if lp.skewed)
                raise SkewSlotsDoNotFit(f"{loop_loc}: {mem} does not hold {lead + 1} slots of "
                                        f"{', '.join(sorted(shared))}, which both parts of the skewed loop use",
                                        stage="multi_buffer")
            return False
        for lp in loops:
            for name in one:
                lp.slots.pop(name, None)
        kept = ", ".join(f"{n} {counts[n]}" for n in sorted(shared))
        warnings.warn(f"{loop_loc}: T.Pipelined with num_stages={stages} keeps the slots of the tiles both parts of "
                      f"its skewed loop use ({kept}), and 1 of {', '.join(sorted(one))}: {mem} holds {cap[mem]} "
                      f"bytes on {arch.name}, {stages} stages need {total}", stacklevel=3)
        return True
    if fits < 1:
        return False
    for b in staged:
        b.slots = min(b.slots, fits)
    for lp in loops:
        for b in staged:
            if b.name in lp.slots:
                if b.slots > 1:
                    lp.slots[b.name] = b.slots
                else:
                    lp.slots.pop(b.name)
    warnings.warn(f"{loop_loc}: T.Pipelined with num_stages={stages} is lowered with {fits} stage(s): "
                  f"{mem} holds {cap[mem]} bytes on {arch.name}, {stages} stages need {total}", stacklevel=3)
    return True


def _over(arch, mem, members: list, lives: dict, fixed: set, last_tier: int = RELAXED) -> bool:
    """Do ``members`` overflow ``mem`` when placed with reuse (up to plan_memory's ``last_tier``)?"""
    trial = {b.name: dataclasses.replace(b) for b in members}
    _, used, _ = plan_buffers(trial, lives, fixed, arch, last_tier)
    return used[mem] > arch.capacity[mem]


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
                    if s.kind is LoopKind.PIPELINED:  # (part B of a skewed loop selects them again)
                        owners[name] = owners.get(name, 0) + 1
                    if kernel.buffers[name].slots < s.slots[name]:
                        raise InternalCompilerError(f"{name} has fewer slots than its loop uses", stage="multi_buffer")
        for name, n in owners.items():
            if n != 1:
                raise InternalCompilerError(f"{name} rotates in {n} loops", stage="multi_buffer")
