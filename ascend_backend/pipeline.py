"""The compiler driver: a visible, ordered list of stages, with IR dumps after any of them.

    frontend -> split_cores -> infer_scope -> assign_layout -> lower_tile_ops -> multi_buffer -> insert_sync
             -> plan_memory -> codegen

``compile_kernel(func, arch, dump=...)`` runs them in order; each pass is a pure function
Kernel -> Kernel (in ascend_backend.passes) that verifies the invariant it establishes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .arch import Arch
from .errors import AscendCompileError, InternalCompilerError
from .ir import Kernel


def _stages() -> list[tuple[str, Callable[[Kernel], Kernel]]]:
    from ascend_backend.passes.assign_layout import assign_layout
    from ascend_backend.passes.infer_scope import infer_scope
    from ascend_backend.passes.insert_sync import insert_sync
    from ascend_backend.passes.lower_tile_ops import lower_tile_ops
    from ascend_backend.passes.multi_buffer import multi_buffer
    from ascend_backend.passes.plan_memory import plan_memory

    return [
        ("infer_scope", infer_scope),
        ("assign_layout", assign_layout),
        ("lower_tile_ops", lower_tile_ops),
        ("multi_buffer", multi_buffer),
        ("insert_sync", insert_sync),
        ("plan_memory", plan_memory),
    ]


STAGES = ["frontend", "split_cores", "infer_scope", "assign_layout", "lower_tile_ops", "multi_buffer", "insert_sync",
          "plan_memory", "codegen"]


@dataclass
class CompileResult:
    kernel: Kernel
    source: str
    dumps: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    cores: dict = field(default_factory=dict)  # "AIC"/"AIV" programs of a split kernel


def compile_kernel(func, arch: Arch, *, name: str | None = None, dump: set | None = None) -> CompileResult:
    """Run every stage on ``func``; ``dump`` names stages whose IR to keep ("all" for every one)."""
    from .codegen import generate
    from .frontend import import_primfunc

    want = set(dump or ())
    keep_all = "all" in want
    dumps: dict[str, str] = {}
    timings: dict[str, float] = {}
    from ascend_backend.passes.split_cores import split_cores

    from .codegen import generate_mix
    from .mix import merge_for_reports

    t0 = time.perf_counter()
    kernel = _guard("frontend", lambda: import_primfunc(func, arch, name))
    timings["frontend"] = time.perf_counter() - t0
    if keep_all or "frontend" in want:
        dumps["frontend"] = kernel.dump()
    t0 = time.perf_counter()
    split = _guard("split_cores", lambda: split_cores(kernel))
    timings["split_cores"] = time.perf_counter() - t0
    cores = {"": kernel} if split is None else {"AIC": split[0], "AIV": split[1]}
    if keep_all or "split_cores" in want:
        dumps["split_cores"] = ("\n".join(f"== {c} ==\n{k.dump()}" for c, k in cores.items()) if split is not None
                                else "// not split: the kernel needs only one kind of core\n" + kernel.dump())
    for stage, fn in _stages():
        t0 = time.perf_counter()
        cores = {c: _guard(stage, lambda fn=fn, k=k: fn(k)) for c, k in cores.items()}
        timings[stage] = time.perf_counter() - t0
        if keep_all or stage in want:
            dumps[stage] = "\n".join((f"== {c} ==\n" if c else "") + k.dump() for c, k in cores.items())
    t0 = time.perf_counter()
    if split is None:
        kernel = cores[""]
        source = _guard("codegen", lambda: generate(kernel))
    else:
        source = _guard("codegen", lambda: generate_mix(cores["AIC"], cores["AIV"]))
        kernel = merge_for_reports(cores["AIC"], cores["AIV"])
    timings["codegen"] = time.perf_counter() - t0
    if keep_all or "codegen" in want:
        dumps["codegen"] = source
    return CompileResult(kernel=kernel, source=source, dumps=dumps, timings=timings, cores=cores)


def _guard(stage: str, fn):
    """User errors pass through; anything else is reported as a compiler bug at this stage."""
    try:
        return fn()
    except (AscendCompileError, InternalCompilerError):
        raise
    except Exception as exc:  # noqa: BLE001 - converted, with its cause chained
        raise InternalCompilerError(f"{type(exc).__name__}: {exc}", stage=stage) from exc
