"""The compiler driver: a visible, ordered list of stages, with IR dumps after any of them.

    frontend -> partition -> route -> split_rows -> infer_scope -> assign_layout -> lower_tile_ops
             -> multi_buffer -> insert_sync -> plan_memory -> codegen

Every pass is a pure function Program -> Program (in ascend_backend.passes) that verifies the
invariant it establishes; ``verify=True`` (or TL_ASCEND_VERIFY=1, which the test suite sets) also
runs the structural verifier (ascend_backend.ir.verify) after every stage.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .arch import Arch
from .errors import AscendCompileError, InternalCompilerError, MemoryBudgetError
from .ir import Program


def passes() -> list[tuple[str, Callable[[Program], Program]]]:
    """The passes between the frontend and codegen, in order."""
    from ascend_backend.passes.assign_layout import assign_layout
    from ascend_backend.passes.infer_scope import infer_scope
    from ascend_backend.passes.insert_sync import insert_sync
    from ascend_backend.passes.lower_tile_ops import lower_tile_ops
    from ascend_backend.passes.multi_buffer import multi_buffer
    from ascend_backend.passes.partition import partition
    from ascend_backend.passes.plan_memory import plan_memory
    from ascend_backend.passes.route import route
    from ascend_backend.passes.split_rows import split_rows

    return [
        ("partition", partition),
        ("route", route),
        ("split_rows", split_rows),
        ("infer_scope", infer_scope),
        ("assign_layout", assign_layout),
        ("lower_tile_ops", lower_tile_ops),
        ("multi_buffer", multi_buffer),
        ("insert_sync", insert_sync),
        ("plan_memory", plan_memory),
    ]


STAGES = ["frontend", "partition", "route", "split_rows", "infer_scope", "assign_layout", "lower_tile_ops",
          "multi_buffer", "insert_sync", "plan_memory", "codegen"]


@dataclass
class CompileResult:
    program: Program
    source: str
    dumps: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)

    @property
    def arch(self) -> Arch:
        return self.program.arch


def _verify_default() -> bool:
    return os.environ.get("TL_ASCEND_VERIFY", "") not in ("", "0")


def compile_kernel(func, arch: Arch, *, name: str | None = None, dump: set | None = None,
                   verify: bool | None = None) -> CompileResult:
    """Run every stage on ``func``; ``dump`` names stages whose IR to keep ("all" for every one)."""
    from .codegen import generate
    from .frontend import import_primfunc
    from .ir.printer import print_program
    from .ir.verify import verify_program

    want = set(dump or ())
    keep_all = "all" in want
    check = _verify_default() if verify is None else verify
    dumps: dict[str, str] = {}
    timings: dict[str, float] = {}

    def run(stage: str, fn: Callable, *args):
        t0 = time.perf_counter()
        out = _guard(stage, lambda: fn(*args))
        timings[stage] = time.perf_counter() - t0
        if isinstance(out, Program):
            if check:
                _guard(stage, lambda: verify_program(out, stage))
            if keep_all or stage in want:
                dumps[stage] = _guard(stage, lambda: print_program(out))
        elif keep_all or stage in want:
            dumps[stage] = out
        return out

    program = run("frontend", import_primfunc, func, arch, name)
    stages = passes()
    names = [n for n, _ in stages]
    lowering = names.index("lower_tile_ops") if "lower_tile_ops" in names else len(stages)
    for stage, fn in stages[:lowering]:
        program = run(stage, fn, program)
    before = program
    try:
        for stage, fn in stages[lowering:]:
            program = run(stage, fn, program)
    except MemoryBudgetError:
        if lowering == len(stages):
            raise
        # Second try: vector results overwrite their operands' temporaries, which needs fewer
        # UB bytes; kernels that fit the first time keep their first lowering.
        from ascend_backend.passes.lower_tile_ops import lower_tile_ops

        program = run("lower_tile_ops", lambda p: lower_tile_ops(p, compact_temps=True), before)
        for stage, fn in stages[lowering + 1:]:
            program = run(stage, fn, program)
    source = run("codegen", generate, program)
    return CompileResult(program=program, source=source, dumps=dumps, timings=timings)


def _guard(stage: str, fn):
    """User errors pass through; anything else is reported as a compiler bug at this stage."""
    try:
        return fn()
    except (AscendCompileError, InternalCompilerError):
        raise
    except RecursionError as exc:
        raise InternalCompilerError(f"RecursionError: {exc} (an expression nested too deeply?)", stage=stage) from exc
    except Exception as exc:  # noqa: BLE001 - converted, with its cause chained
        raise InternalCompilerError(f"{type(exc).__name__}: {exc}", stage=stage) from exc
