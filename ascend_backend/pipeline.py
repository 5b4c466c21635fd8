"""The compiler driver: a visible, ordered list of stages, with IR dumps after any of them.

    frontend -> fold_scale -> cast_on_vector -> empty_loops -> partition -> route -> split_rows -> infer_scope
             -> assign_layout -> lower_simt -> simt_sync -> lower_tile_ops -> multi_buffer -> prefetch
             -> plan_memory -> insert_sync -> codegen

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
    from ascend_backend.passes.cast_on_vector import cast_on_vector
    from ascend_backend.passes.empty_loops import empty_loops
    from ascend_backend.passes.fold_scale import fold_scale
    from ascend_backend.passes.infer_scope import infer_scope
    from ascend_backend.passes.insert_sync import insert_sync
    from ascend_backend.passes.lower_simt import lower_simt
    from ascend_backend.passes.lower_tile_ops import lower_tile_ops
    from ascend_backend.passes.multi_buffer import multi_buffer
    from ascend_backend.passes.partition import partition
    from ascend_backend.passes.plan_memory import plan_memory
    from ascend_backend.passes.prefetch import prefetch
    from ascend_backend.passes.route import route
    from ascend_backend.passes.simt_sync import simt_sync
    from ascend_backend.passes.split_rows import split_rows

    return [
        ("fold_scale", fold_scale),
        ("cast_on_vector", cast_on_vector),
        ("empty_loops", empty_loops),
        ("partition", partition),
        ("route", route),
        ("split_rows", split_rows),
        ("infer_scope", infer_scope),
        ("assign_layout", assign_layout),
        ("lower_simt", lower_simt),
        ("simt_sync", simt_sync),
        ("lower_tile_ops", lower_tile_ops),
        ("multi_buffer", multi_buffer),
        ("prefetch", prefetch),
        ("plan_memory", plan_memory),
        ("insert_sync", insert_sync),
    ]


STAGES = ["frontend", "fold_scale", "cast_on_vector", "empty_loops", "partition", "route", "split_rows",
          "infer_scope", "assign_layout", "lower_simt", "simt_sync", "lower_tile_ops", "multi_buffer", "prefetch",
          "plan_memory", "insert_sync", "codegen"]


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
    from . import dump as dump_env
    from .frontend import import_primfunc
    from .ir.printer import print_program
    from .ir.verify import verify_program

    want = set(dump or ())
    keep_all = "all" in want
    check = _verify_default() if verify is None else verify
    dumps: dict[str, str] = {}
    timings: dict[str, float] = {}
    # TL_ASCEND_DUMP: the IR after every stage that ran, in the order it ran (retries included).
    trail: list[tuple[str, str]] | None = [] if dump_env.dump_root() else None

    def run(stage: str, fn: Callable, *args):
        t0 = time.perf_counter()
        out = _guard(stage, lambda: fn(*args))
        timings[stage] = time.perf_counter() - t0
        keep = keep_all or stage in want
        if isinstance(out, Program):
            if check:
                _guard(stage, lambda: verify_program(out, stage))
            if keep or trail is not None:
                text = _guard(stage, lambda: print_program(out))
                if keep:
                    dumps[stage] = text
                if trail is not None:
                    trail.append((stage, text))
        elif keep:
            dumps[stage] = out
        return out

    done: list[tuple[str, Program]] = []  # the IR after each stage that ran, for an ICE dump
    try:
        program = run("frontend", import_primfunc, func, arch, name)
        done.append(("frontend", program))
        from ascend_backend.passes.prefetch import PREFETCH
        from ascend_backend.passes.route import DEEP_SKEW, SKEW, SkewRetry

        # Overlapping the Cube and Vector steps may need more event ids than this kernel has left, or
        # more memory than it has (a tile both parts use, once per step in flight): lower it again
        # with one step in flight instead of two (route.skew_lead), then also without the loads
        # ahead (passes/prefetch.py), then with its loops serial.
        retries = ((), (DEEP_SKEW,), (DEEP_SKEW, PREFETCH), (SKEW,))
        for n, switches in enumerate(retries):
            tokens = [(sw, sw.set(False)) for sw in switches]
            try:
                del done[1:]
                program, source = _lower(done[0][1], run, done)
                break
            except SkewRetry:
                if n == len(retries) - 1:
                    raise
            finally:
                for sw, token in reversed(tokens):
                    sw.reset(token)
    except InternalCompilerError as ice:
        if ice.dump_path is not None:
            raise
        path = write_ice_dump(func, arch, ice, done)
        err = InternalCompilerError(ice.what, stage=ice.stage, dump_path=path)
        if trail is not None:
            dump_env.write(func, arch, _name(func, done), trail, error=err)
        raise err from (ice.__cause__ or ice)
    except AscendCompileError as exc:
        if trail is not None:
            dump_env.write(func, arch, _name(func, done), trail, error=exc)
        raise
    if trail is not None:
        dump_env.write(func, arch, program.name, trail, program=program, source=source, timings=timings)
    return CompileResult(program=program, source=source, dumps=dumps, timings=timings)


def _name(func, done: list) -> str:
    """The kernel's name for a dump: its IR's when the frontend ran, else the PrimFunc's symbol."""
    if done:
        return done[0][1].name
    attrs = getattr(func, "attrs", None)
    return str(attrs["global_symbol"]) if attrs is not None and "global_symbol" in attrs else "kernel"


def _lower(program: Program, run: Callable, done: list) -> tuple[Program, str]:
    """Every stage after the frontend, and codegen (with the compact retry on a memory budget)."""
    from .codegen import generate

    stages = passes()
    names = [n for n, _ in stages]
    lowering = names.index("lower_tile_ops") if "lower_tile_ops" in names else len(stages)
    for stage, fn in stages[:lowering]:
        program = run(stage, fn, program)
        done.append((stage, program))
    before = program
    try:
        for stage, fn in stages[lowering:]:
            program = run(stage, fn, program)
            done.append((stage, program))
    except MemoryBudgetError:
        if lowering == len(stages):
            raise
        # Second try: vector results overwrite their operands' temporaries, which needs fewer
        # UB bytes; kernels that fit the first time keep their first lowering.
        from ascend_backend.passes.lower_tile_ops import lower_tile_ops
        from ascend_backend.passes.multi_buffer import multi_buffer

        compact = run("lower_tile_ops", lambda p: lower_tile_ops(p, compact_temps=True), before)
        done.append(("lower_tile_ops", compact))
        try:
            program = compact
            for stage, fn in stages[lowering + 1:]:
                program = run(stage, fn, program)
                done.append((stage, program))
        except MemoryBudgetError:
            # Last try: pipelined loops keep the stages that fit (num_stages is a hint).
            program = compact
            for stage, fn in stages[lowering + 1:]:
                if stage == "multi_buffer":
                    fn = lambda p: multi_buffer(p, fit_stages=True)  # noqa: E731
                program = run(stage, fn, program)
                done.append((stage, program))
    source = run("codegen", generate, program)
    return program, source


def write_ice_dump(func, arch: Arch, ice: InternalCompilerError, done: list[tuple[str, Program]]) -> str | None:
    """Write what `tl-ascend inspect --stage all` would show (the TIR, the IR after every stage that
    ran, the memory map and sync table when planning finished) and the error to a temp file."""
    import tempfile
    import traceback

    from .ir.printer import print_program

    parts = []
    cause = ice.__cause__ or ice
    try:
        from . import __version__
    except ImportError:  # pragma: no cover - partial import during a failure
        __version__ = "?"
    name = done[0][1].name if done else "kernel"
    parts.append(f"# tilelang-ascendc {__version__} internal compiler error dump\n"
                 f"# kernel {name}, arch {arch.name}, failed in stage '{ice.stage}'\n# {ice.what}\n")
    parts.append("==== traceback ====\n" + "".join(traceback.format_exception(type(cause), cause, cause.__traceback__)))
    for title, make in [("TIR (the PrimFunc as tilelang built it)", lambda: func.script())] + [
            (f"after {st}" if st != "frontend" else "frontend IR", lambda p=p: print_program(p)) for st, p in done]:
        try:
            text = make()
        except Exception as exc:  # noqa: BLE001 - a dump is best effort; say what could not be printed
            text = f"(could not print: {type(exc).__name__}: {exc})"
        parts.append(f"==== {title} ====\n{text}")
    if done and done[-1][0] == "plan_memory":
        try:
            import io

            from rich.console import Console

            from .reports import render_memory_map, render_sync_table

            buf = io.StringIO()
            console = Console(file=buf, width=200, highlight=False, soft_wrap=False)
            console.print(render_memory_map(done[-1][1]))
            console.print(render_sync_table(done[-1][1]))
            parts.append("==== memory map and sync table ====\n" + buf.getvalue())
        except Exception:  # noqa: BLE001 - best effort, as above
            pass
    try:
        fd, path = tempfile.mkstemp(prefix=f"tl-ascend-ice-{name}-", suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            fh.write("\n".join(p if p.endswith("\n") else p + "\n" for p in parts))
        return path
    except OSError:
        return None


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
