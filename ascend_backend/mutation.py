"""Sync mutation testing: delete each flag pair (and each PipeBarrier) of a compiled kernel in turn
and run the result on the emulator.

A deletion the emulator does not catch (no race, flag error, deadlock or wrong number) means
either a blind spot in the checker or a flag the compiler never needed; both are failures.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .ir import (
    CrossCoreSetOp,
    CrossCoreWaitOp,
    Kernel,
    Mmad,
    PipeBarrier,
    Program,
    SetFlag,
    UnitFlagReset,
    WaitFlag,
    map_body,
    walk,
)


@dataclass
class MutationResult:
    kernel: str
    arch: str
    deleted: int = 0
    caught: int = 0
    unneeded: list = field(default_factory=list)  # descriptions of deletions nothing noticed
    how: dict = field(default_factory=dict)  # description -> what caught it

    def line(self) -> str:
        return (f"{self.kernel} on {self.arch}: {self.deleted} deleted, {self.caught} caught, "
                f"{len(self.unneeded)} unneeded")


def _without(body: list, drop) -> list:
    return map_body(body, lambda s: [] if drop(s) else [s])


def _without_unit_flag(body: list, n: int, mmad: bool, fixpipe: bool) -> list:
    """``body`` with the unitFlag of sync-table row ``n`` taken off its Mmads and/or its Fixpipes
    (and its unit-flag reset, when both lose it)."""
    def strip(s):
        if isinstance(s, UnitFlagReset) and s.flag == n:
            return [] if mmad and fixpipe else [s]
        uf = getattr(s, "unit_flag", None)
        if uf is not None and uf.flag == n and (mmad if isinstance(s, Mmad) else fixpipe):
            return [dataclasses.replace(s, unit_flag=None)]
        return [s]

    return map_body(body, strip)


def mutants(kernel: Kernel):
    """(description, mutated kernel) for every flag and every barrier of ``kernel``; a unit-flag row
    (event ``unitFlag``) is dropped on both sides, on the Mmads only and on the Fixpipes only."""
    for f in kernel.flags:
        desc = f"flag #{f.index} {f.event}({f.event_id}) on {f.buffer}: {f.producer} -> {f.consumer}"
        if f.event == "unitFlag":
            for what, mm, fx in (("dropped", True, True), ("dropped on the Mmads", True, False),
                                 ("dropped on the Fixpipes", False, True)):
                yield f"{desc} ({what})", kernel.replace(body=_without_unit_flag(kernel.body, f.index, mm, fx))
            continue
        yield desc, kernel.replace(body=_without(kernel.body, lambda s, n=f.index: isinstance(s, SetFlag | WaitFlag)
                                                 and s.flag == n))
    barriers = [s for s in walk(kernel.body) if isinstance(s, PipeBarrier)]
    for n, b in enumerate(barriers):
        yield f"PipeBarrier<PIPE_{b.pipe}> #{n}", kernel.replace(body=_without(kernel.body, lambda s, b=b: s is b))


def program_mutants(program: Program):
    """(description, mutated program) for every intra-core flag and barrier of each core, and in a
    mixed launch every cross-core flag id (its sets and waits on both cores, prime and drain too)."""
    lc = program.launch
    for core, k in lc.kernels.items():
        prefix = f"{core.value}: " if lc.mixed else ""
        for desc, mk in mutants(k):
            yield prefix + desc, program.replace(launches=[lc.replace(kernels={**lc.kernels, core: mk})])
    seen: set = set()
    for t in lc.transfers:
        for kind in ("ready", "free"):
            fid = getattr(t, kind)
            if fid is None or fid in seen:  # transfers may share a "ready" id: delete it once
                continue
            seen.add(fid)

            def drop(s, fid=fid):
                return isinstance(s, CrossCoreSetOp | CrossCoreWaitOp) and s.flag == fid

            kernels = {c: k.replace(body=_without(k.body, drop)) for c, k in lc.kernels.items()}
            yield (f"cross-core flag {fid} ({kind}, {t.tile}, {t.direction})",
                   program.replace(launches=[lc.replace(kernels=kernels)]))


def run_mutations(case, arch: str) -> MutationResult:
    """Compile ``case`` (an ascend_backend.testing.Case), then run every mutant of it."""
    import torch

    from .codegen import generate
    from .emulator import EmulatorError, run_source
    from .kernel import launch_args
    from .pipeline import compile_kernel
    from .target import parse_target

    base = compile_kernel(case.func, parse_target({"kind": "ascendc", "arch": arch}))
    program = base.program
    expected = case.reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in case.inputs])
    res = MutationResult(kernel=program.name, arch=arch)
    sources = [(desc, generate(mp)) for desc, mp in program_mutants(program)]
    for desc, source in sources:
        res.deleted += 1
        args = launch_args(program, [a.clone() if isinstance(a, torch.Tensor) else a for a in case.inputs])
        try:
            # auto_sync off: the NPU build runs generated code with --cce-auto-sync=off
            run_source(source, program.name, args, program.launch.block_dim, arch=arch, strict=True,
                       auto_sync=False)
        except EmulatorError as exc:
            res.caught += 1
            res.how[desc] = str(exc).splitlines()[0][:160]
            continue
        wrong = [i for i, e in zip(case.outputs, expected, strict=True)
                 if not torch.allclose(args[i].float(), e.float(), atol=case.atol, rtol=case.rtol)]
        if wrong:
            res.caught += 1
            res.how[desc] = f"wrong numbers in outputs {wrong}"
        else:
            res.unneeded.append(desc)
    return res
