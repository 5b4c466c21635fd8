"""Sync mutation testing: delete each flag pair (and each PipeBarrier) of a compiled kernel in turn
and run the result on the emulator.

A deletion the emulator does not catch (no race, flag error, deadlock or wrong number) means
either a blind spot in the checker or a flag the compiler never needed; both are failures.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .ir import Kernel, Loop, Sync


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


def _without(body: list, keep) -> list:
    out = []
    for s in body:
        if isinstance(s, Loop):
            out.append(dataclasses.replace(s, body=_without(s.body, keep)))
        elif isinstance(s, Sync) and not keep(s):
            continue
        else:
            out.append(s)
    return out


def _barriers(body: list) -> list:
    found = []
    for s in body:
        if isinstance(s, Loop):
            found.extend(_barriers(s.body))
        elif isinstance(s, Sync) and s.action == "barrier":
            found.append(s)
    return found


def mutants(kernel: Kernel):
    """(description, mutated kernel) for every flag and every barrier of ``kernel``."""
    for f in kernel.flags:
        desc = f"flag #{f.index} {f.event}({f.event_id}) on {f.buffer}: {f.producer} -> {f.consumer}"
        yield desc, kernel.replace(body=_without(kernel.body, lambda s, n=f.index: s.flag != n))
    for n, b in enumerate(_barriers(kernel.body)):
        desc = f"PipeBarrier<PIPE_{b.src}> #{n}"
        yield desc, kernel.replace(body=_without(kernel.body, lambda s, b=b: s is not b))


def _without_cross_core(body: list, flag_id: int) -> list:
    from .ir import AscOp

    out = []
    for s in body:
        if isinstance(s, Loop):
            out.append(dataclasses.replace(s, body=_without_cross_core(s.body, flag_id)))
        elif isinstance(s, AscOp) and s.kind.startswith("cross_core") and s.params["id"] == flag_id:
            continue
        else:
            out.append(s)
    return out


def mix_mutants(cores: dict):
    """Mutants of a split kernel: each intra-core flag/barrier of either core, and each cross-core
    flag id (its sets and waits on both cores, prime and drain included)."""
    from .codegen import generate_mix

    aic, aiv = cores["AIC"], cores["AIV"]
    for core in ("AIC", "AIV"):
        for desc, mk in mutants(cores[core]):
            pair = {**cores, core: mk}
            yield f"{core}: {desc}", generate_mix(pair["AIC"], pair["AIV"])
    for t in aic.attrs.get("cross_core", []):
        for kind in ("ready", "free"):
            fid = t[kind]
            if fid is None:
                continue
            yield (f"cross-core flag {fid} ({kind}, {t['name']}, {t['direction']})",
                   generate_mix(aic.replace(body=_without_cross_core(aic.body, fid)),
                                aiv.replace(body=_without_cross_core(aiv.body, fid))))


def run_mutations(case, arch: str) -> MutationResult:
    """Compile ``case`` (an ascend_backend.testing.Case), then run every mutant of it."""
    import torch

    from .codegen import generate
    from .emulator import EmulatorError, run_source
    from .pipeline import compile_kernel
    from .target import parse_target

    base = compile_kernel(case.func, parse_target({"kind": "ascendc", "arch": arch}))
    expected = case.reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in case.inputs])
    res = MutationResult(kernel=base.kernel.name, arch=arch)
    ws = base.kernel.attrs.get("workspace_bytes", 0)
    if "AIC" in base.cores:
        sources = list(mix_mutants(base.cores))
    else:
        sources = [(desc, generate(mk)) for desc, mk in mutants(base.kernel)]
    for desc, source in sources:
        res.deleted += 1
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in case.inputs]
        if ws:
            args.append(torch.zeros(ws, dtype=torch.uint8))
        try:
            # auto_sync off: the NPU build runs generated code with --cce-auto-sync=off
            run_source(source, base.kernel.name, args, base.kernel.block_dim, arch=arch, strict=True,
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
