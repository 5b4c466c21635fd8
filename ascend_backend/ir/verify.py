"""The structural verifier: invariants every Program holds after every pass (MLIR style).

Each pass checks its own postcondition; this one checks what no pass may break, and runs after
every stage when testing (``compile_kernel(..., verify=True)``; the test suite turns it on):

* a program has parameters naming GM buffers of every kernel, and at least one launch; every
  launch has a grid of positive extents and kernels keyed None (before partition) or by the core
  kind they run on;
* every buffer a statement names exists in its kernel; a loop has a positive static step and an
  extent; an If has a condition; a scalar store writes a scalar local, UB or GM buffer;
* every Ascend op runs on a pipe of its kernel's core kind, and every sync op's pipes too;
* intra-core event ids are within 0-7, cross-core flag ids within 0-10 (mode 4 only where the arch
  has it); a transfer point names a transfer of its launch.
"""

from __future__ import annotations

from ..errors import InternalCompilerError
from .enums import AIC_PIPES, AIV_PIPES, BufferKind, Core, LoopKind, Scope
from .nodes import (
    AscOp,
    CopyToPeerL1,
    CopyToPeerUb,
    CopyToPeerUbDual,
    CrossCoreSet,
    CrossCoreSetOp,
    CrossCoreWait,
    CrossCoreWaitOp,
    If,
    Loop,
    PipeBarrier,
    Receive,
    Region,
    ScalarStore,
    Send,
    SetFlag,
    TileAccumulate,
    TileCopy,
    TileFill,
    TileGemm,
    TileParallel,
    TileReduce,
    WaitFlag,
    static_int,
)
from .program import Kernel, Launch, Program, walk


class VerifyError(InternalCompilerError):
    pass


def _names(s) -> list:
    """Buffer names a statement refers to."""
    if isinstance(s, TileCopy):
        return [s.src.buffer, s.dst.buffer]
    if isinstance(s, TileFill):
        return [s.dst.buffer]
    if isinstance(s, TileGemm):
        return [s.a.buffer, s.b.buffer, s.c.buffer]
    if isinstance(s, TileReduce):
        return [s.src.buffer, s.dst.buffer]
    if isinstance(s, TileParallel):
        return []  # tvm buffers: checked by the lowering that reads them
    if isinstance(s, TileAccumulate):
        return [s.dst, s.src]
    if isinstance(s, Send | Receive):
        return [s.tile] if isinstance(s, Send) else [s.into]
    if isinstance(s, CopyToPeerUb | CopyToPeerUbDual):
        return [s.src]
    if isinstance(s, CopyToPeerL1):
        return [s.src.buffer]
    if isinstance(s, ScalarStore):
        return [s.buffer]
    if isinstance(s, AscOp):
        return [*s.reads, *s.writes]
    return []


def _fail(stage: str, what: str) -> None:
    raise VerifyError(f"IR invariant broken: {what}", stage=stage)


def verify_kernel(k: Kernel, launch: Launch, program: Program, stage: str) -> None:
    pipes = {Core.AIC: AIC_PIPES, Core.AIV: AIV_PIPES}.get(k.core)
    for s in walk(k.body):
        for n in _names(s):
            if n not in k.buffers:
                _fail(stage, f"{type(s).__name__} names buffer '{n}', which its kernel does not have")
        for r in (v for v in vars(s).values() if isinstance(v, Region)):
            if len(r.base) != len(r.extents):
                _fail(stage, f"region of {r.buffer} has {len(r.base)} indices and {len(r.extents)} extents")
        if isinstance(s, Loop) and s.kind is LoopKind.WHILE:
            if s.cond is None or s.slots:
                _fail(stage, "a while loop without a condition, or with rotating buffers")
        elif isinstance(s, Loop):
            if not isinstance(s.step, int) or s.step < 1:
                _fail(stage, f"loop {s.var} has step {s.step}")
            if s.extent is None:
                _fail(stage, f"loop {s.var} has no extent")
        elif isinstance(s, If):
            if s.cond is None:
                _fail(stage, "an If without a condition")
        elif isinstance(s, ScalarStore):
            b = k.buffers[s.buffer]
            if b.scope not in (None, Scope.LOCAL, Scope.UB, Scope.GM):
                _fail(stage, f"a scalar store to '{s.buffer}' in {b.scope}")
        elif isinstance(s, Send | Receive):
            if s.transfer >= len(launch.transfers):
                _fail(stage, f"{type(s).__name__} of transfer {s.transfer}, which the launch does not have")
        elif isinstance(s, CrossCoreSet | CrossCoreWait | CrossCoreSetOp | CrossCoreWaitOp):
            if not 0 <= s.flag <= 10:
                _fail(stage, f"cross-core flag id {s.flag} outside 0-10")
            if s.mode == 4 and not program.arch.cross_core_mode4:
                _fail(stage, f"mode-4 cross-core flag on {program.arch.name}")
        elif isinstance(s, SetFlag | WaitFlag):
            e = s.event_id
            top = e.base + (e.slots - 1 if e.slot_var is not None else 0)
            if not 0 <= e.base <= top <= 7:
                _fail(stage, f"event id {e} outside 0-7")
            if pipes is not None and not {s.event.src, s.event.dst} <= pipes:
                _fail(stage, f"event {s.event} between pipes the {k.core} does not have")
        elif isinstance(s, PipeBarrier):
            if pipes is not None and s.pipe not in pipes:
                _fail(stage, f"PipeBarrier on {s.pipe}, which the {k.core} does not have")
        if isinstance(s, AscOp) and pipes is not None and s.pipe is not None and s.pipe not in pipes:
            _fail(stage, f"{type(s).__name__} on pipe {s.pipe}, which the {k.core} does not have")


def verify_program(program: Program, stage: str = "verify") -> Program:
    """Check the structural invariants of ``program``; returns it unchanged."""
    if not program.launches:
        _fail(stage, "a program without launches")
    for n, lc in enumerate(program.launches):
        if not lc.grid or any(static_int(ax.extent) is not None and static_int(ax.extent) < 1 for ax in lc.grid):
            _fail(stage, f"launch {n} has grid {[ax.extent for ax in lc.grid]}")
        if not lc.kernels:
            _fail(stage, f"launch {n} has no kernel")
        if None in lc.kernels and len(lc.kernels) != 1:
            _fail(stage, f"launch {n} mixes an unpartitioned kernel with core kernels")
        for core, k in lc.kernels.items():
            if core is not None and k.core is not core:
                _fail(stage, f"launch {n}: the kernel keyed {core} runs on {k.core}")
            for p in program.params:
                if p.is_tensor:
                    b = k.buffers.get(p.buffer)
                    if b is None or b.kind is not BufferKind.PARAM:
                        _fail(stage, f"parameter {p.name} has no GM buffer in the {core} kernel of launch {n}")
            verify_kernel(k, lc, program, stage)
    return program


__all__ = ["VerifyError", "verify_program"]
