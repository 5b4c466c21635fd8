"""``tl-ascend``: inspect, run and build TileLang kernels for the ascendc target.

    tl-ascend inspect FILE.py [--kernel NAME] [--param K=V ...] [--arch ARCH] [--stage STAGE ...|all]
    tl-ascend run FILE.py [--case NAME | --kernel NAME [--param K=V ...] [--ref [MODULE:]FUNC] [--seed N]
                          [--arg NAME=V ...]] [--arch ARCH] [--timeline out.svg] [--no-strict]
    tl-ascend build FILE.py [--kernel NAME] [--param K=V ...] [--arch ARCH] [--out DIR]
    tl-ascend check FILE.cpp [--arch ARCH] [--auto-sync on|off] [--json] [-D NAME=VALUE ...]
    tl-ascend cache info | prune [--all | --max-size SIZE]

How FILE is searched for a kernel (docs/cli.md says the same):

* ``--kernel NAME`` picks the top-level object NAME of FILE: a PrimFunc, a function returning a
  PrimFunc (called with ``--param`` keyword arguments over its defaults), a ``@tilelang.jit``
  function (its PrimFunc is taken with ``JITImpl.get_tir(**params)``, which elaborates the
  kernel without compiling it for CUDA), an ``@ascend_backend.jit`` factory (the undecorated
  function, ``__wrapped__``, is called), or a function returning an
  ``ascend_backend.testing.Case`` (its ``.func``).
* Without ``--kernel``: if FILE defines ``example()``, the kernel of the Case it returns; else
  the one top-level candidate that yields a PrimFunc when called with its defaults (and the
  ``--param`` values); if there are none or several, the candidates are listed and the exit
  code is 2.

Exit codes: 0 success; 1 a run that mismatched its reference or failed on the emulator, or a
bisheng build that failed; 2 a user error (usage, a missing or unimportable file, no such
kernel, a kernel the compiler rejects: file:line and a hint are printed; a Case or reference
that does not fit; an unwritable output path); 3 an internal compiler error (or a bug of the
CLI itself, said in one line); 130 interrupted. No path prints a traceback (docs/cli.md).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import os
import shlex
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cli_parser import ARCH_CHOICES, EXTRA_VIEWS, parse  # noqa: F401 - ARCH_CHOICES is public here too

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # as a shell reports a command stopped by Ctrl-C (128 + SIGINT)


class CliError(Exception):
    """A user-facing failure: the message is printed (no traceback) and ``code`` is returned."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------------------------------------
# --param parsing
# ---------------------------------------------------------------------------------------------
def parse_value(text: str) -> Any:
    """``--param`` value: bool (true/false/yes/no), None (none), int, float, else the string."""
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def parse_params(items: Sequence[str] | None) -> dict[str, Any]:
    """``["M=512", "trans_A=true"]`` -> ``{"M": 512, "trans_A": True}``."""
    params: dict[str, Any] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise CliError(f"error: --param {item!r} is not KEY=VALUE (for example --param M=512)")
        params[key] = parse_value(value)
    return params


# ---------------------------------------------------------------------------------------------
# Loading FILE and finding its kernels
# ---------------------------------------------------------------------------------------------
def _user_frames(exc: BaseException, path: str) -> str:
    """``file:line`` of the deepest traceback frame inside ``path`` (empty if none)."""
    where = ""
    real = os.path.realpath(path)
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.realpath(frame.filename) == real:
            where = f"{frame.filename}:{frame.lineno}"
    return where


def _exc_line(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def load_module(path: str):
    """Import FILE as a fresh module (its directory on sys.path while importing)."""
    if not os.path.exists(path):
        raise CliError(f"error: {path}: no such file")
    if os.path.isdir(path) or not path.endswith(".py"):
        raise CliError(f"error: {path}: not a Python file (expected FILE.py)")
    import ascend_backend  # noqa: F401 - registers the target before the file's kernels are built
    from ascend_backend.errors import AscendCompileError, InternalCompilerError

    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"_tl_ascend_cli_{stem}_{abs(hash(path)) & 0xFFFFFFF:x}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"error: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)
    sys.modules[name] = module
    from ascend_backend.diagnostics import quiet_builder, translate

    try:
        with quiet_builder():
            spec.loader.exec_module(module)
    except (AscendCompileError, InternalCompilerError):
        raise
    except SystemExit as exc:
        raise CliError(f"error: importing {path} called sys.exit({exc.code})") from None
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}: " if exc.filename and exc.lineno else ""
        raise CliError(f"error: cannot import {path}: {where}{type(exc).__name__}: {exc.msg}") from None
    except BaseException as exc:  # noqa: BLE001 - any import failure is reported, not raised
        if isinstance(exc, KeyboardInterrupt):
            raise
        ours = translate(exc)  # tilelang's / TVM's exception while a top-level kernel was built
        if ours is not None:
            raise ours from None
        where = _user_frames(exc, path)
        raise CliError(f"error: cannot import {path}" + (f" ({where})" if where else "")
                       + f":\n  {_exc_line(exc)}") from None
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
    return module


@dataclass
class Candidate:
    """One top-level object of FILE that may give a kernel."""

    name: str
    kind: str  # primfunc | factory | tilelang.jit | ascend_backend.jit | compiled | case
    obj: Any
    signature: str = ""

    def describe(self) -> str:
        return f"{self.name}{self.signature}  [{self.kind}]"


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


def classify(name: str, obj: Any, module_name: str) -> Candidate | None:
    """What kind of kernel source ``obj`` is, or None when it is not one."""
    from tilelang.jit import JITImpl
    from tvm import tirx

    from ascend_backend.kernel import AscendKernel

    if name.startswith("_"):
        return None
    if isinstance(obj, tirx.PrimFunc):
        return Candidate(name, "primfunc", obj)
    if isinstance(obj, JITImpl):
        return Candidate(name, "tilelang.jit", obj, str(obj.signature))
    if isinstance(obj, AscendKernel):
        return Candidate(name, "compiled", obj)
    if inspect.isfunction(obj) and getattr(obj, "__module__", None) == module_name:
        wrapped = getattr(obj, "__wrapped__", None)
        if wrapped is not None and hasattr(obj, "cache"):
            return Candidate(name, "ascend_backend.jit", obj, _signature(wrapped))
        if name == "example":
            return Candidate(name, "case", obj, _signature(obj))
        return Candidate(name, "factory", obj, _signature(obj))
    return None


def candidates(module) -> list[Candidate]:
    out = []
    for name, obj in vars(module).items():
        c = classify(name, obj, module.__name__)
        if c is not None:
            out.append(c)
    return out


@dataclass
class Selected:
    """The kernel picked from FILE: a PrimFunc, or an already compiled AscendKernel."""

    name: str
    how: str
    func: Any = None
    compiled: Any = None
    case: Any = None
    notes: list[str] = field(default_factory=list)


def _call(c: Candidate, params: dict[str, Any], path: str) -> Any:
    """Call a candidate's factory with ``params``; the result (PrimFunc, Case, ...)."""
    from ascend_backend.errors import AscendCompileError, InternalCompilerError

    if c.kind == "primfunc":
        if params:
            raise CliError(f"error: {c.name} is a PrimFunc, it takes no --param ({', '.join(params)})")
        return c.obj
    if c.kind == "compiled":
        if params:
            raise CliError(f"error: {c.name} is already compiled, it takes no --param ({', '.join(params)})")
        return c.obj
    if c.kind == "tilelang.jit":
        fn: Callable[..., Any] = c.obj.get_tir
        sig_obj = c.obj.func.orig_func
    elif c.kind == "ascend_backend.jit":
        # get_tir elaborates both styles: a factory called with the params, or a modern-style kernel
        # whose T.const shapes the params name (they are not in its Python signature).
        fn = c.obj.get_tir
        sig_obj = c.obj.__wrapped__
    else:
        fn = c.obj
        sig_obj = fn
    if c.kind not in ("tilelang.jit", "ascend_backend.jit"):
        try:
            inspect.signature(sig_obj).bind(**params)
        except TypeError as exc:
            raise CliError(f"error: cannot call {c.name}{_signature(sig_obj)} with "
                           f"{_fmt_params(params)}: {exc}\n  hint: --param sets keyword arguments of the "
                           "factory; pick another kernel with --kernel NAME") from None
    _check_param_types(c.name, sig_obj, params)
    from ascend_backend.diagnostics import quiet_builder, translate

    try:
        with quiet_builder():
            return fn(**params)
    except (AscendCompileError, InternalCompilerError):
        raise
    except Exception as exc:  # noqa: BLE001 - a failure in the user's factory
        ours = translate(exc)  # tilelang's / TVM's exception: ours, at the user's line
        if ours is not None and ours.loc is not None:
            raise ours from None
        where = _user_frames(exc, path)
        raise CliError(f"error: {c.name}({_fmt_params(params)}) failed"
                       + (f" at {where}" if where else "") + f":\n  {_exc_line(exc)}") from None


def _check_param_types(name: str, sig_obj: Any, params: dict[str, Any]) -> None:
    """A --param whose value is not of its default's type (``--param N=abc`` where N defaults to
    4096) is a usage error, said in one line, before the factory builds anything with it."""
    try:
        sig = inspect.signature(sig_obj)
    except (TypeError, ValueError):
        return
    for key, value in params.items():
        p = sig.parameters.get(key)
        if p is None or p.default is inspect.Parameter.empty or p.default is None or value is None:
            continue
        want = type(p.default)
        if want is bool:
            ok = isinstance(value, bool)
        elif want is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif want is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        else:
            continue
        if not ok:
            examples = {bool: "true or false", int: "an integer such as 512", float: "a number such as 1e-6"}
            raise CliError(f"error: --param {key}={value!r}: {name}'s {key} takes {want.__name__} values "
                           f"(its default is {p.default!r}); write {examples[want]}")


def _fmt_params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _listing(cands: Sequence[Candidate], failures: dict[str, str] | None = None,
             untried: dict[str, str] | None = None) -> str:
    """The candidates, one a line, each with why it gave no kernel when it failed or was not tried."""
    if not cands:
        return "  (none: FILE defines no PrimFunc, kernel factory or example())"
    failures, untried = failures or {}, untried or {}

    def why(c: Candidate) -> str:
        if c.name in failures:
            return "\n      failed: " + failures[c.name].replace("\n", "\n        ")
        if c.name in untried:
            return "\n      not tried: " + untried[c.name]
        return ""

    return "\n".join(f"  {c.describe()}{why(c)}" for c in cands)


def _required_args(c: Candidate, params: dict[str, Any]) -> list[str]:
    """The parameters of a factory candidate that have no default and no --param."""
    if c.kind != "factory":
        return []
    try:
        sig = inspect.signature(c.obj)
    except (TypeError, ValueError):
        return []
    return [n for n, p in sig.parameters.items() if p.default is inspect.Parameter.empty and n not in params
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]


def _failure_text(exc: BaseException) -> str:
    """A candidate's error for the listing: its message without the leading "error: " (all its lines:
    the DSL file:line and the hint are the useful part)."""
    return str(exc).removeprefix("error: ").strip()


def _as_selected(c: Candidate, result: Any, params: dict[str, Any]) -> Selected:
    from tvm import tirx

    from ascend_backend.kernel import AscendKernel
    from ascend_backend.testing import Case

    how = c.kind if not params else f"{c.kind}, {_fmt_params(params)}"
    if isinstance(result, Case):
        if not isinstance(result.func, tirx.PrimFunc):
            raise CliError(f"error: {c.name}() returned a Case whose func is {type(result.func).__name__}, "
                           "not a PrimFunc")
        return Selected(f"{c.name}()", f"Case from {c.name}()", func=result.func, case=result)
    if isinstance(result, tirx.PrimFunc):
        return Selected(c.name, how, func=result)
    if isinstance(result, AscendKernel):
        return Selected(c.name, how, compiled=result)
    raise CliError(f"error: {c.name}({_fmt_params(params)}) returned {type(result).__name__}, not a PrimFunc"
                   "\n  hint: a kernel factory must return the @T.prim_func it defines")


def select_kernel(module, path: str, kernel: str | None, params: dict[str, Any]) -> Selected:
    """Pick the kernel of ``module`` as documented at the top of this file."""
    from tvm import tirx

    from ascend_backend.kernel import AscendKernel
    from ascend_backend.testing import Case

    cands = candidates(module)
    if kernel is not None:
        by_name = {c.name: c for c in cands}
        if kernel not in by_name:
            extra = ""
            if hasattr(module, kernel):
                extra = f" ('{kernel}' is a {type(getattr(module, kernel)).__name__}, not a kernel source)"
            raise CliError(f"error: {path} has no kernel '{kernel}'{extra}; candidates:\n{_listing(cands)}")
        c = by_name[kernel]
        return _as_selected(c, _call(c, params, path), params)

    example = next((c for c in cands if c.kind == "case"), None)
    if example is not None:
        return _as_selected(example, _call(example, params, path), params)

    from ascend_backend.errors import AscendCompileError

    found: list[tuple[Candidate, Any]] = []
    failures: dict[str, str] = {}  # candidates that raised: shown in every listing, and as a note
    untried: dict[str, str] = {}  # factories that need arguments: shown when no kernel qualifies
    for c in cands:
        if c.kind in ("primfunc", "compiled"):
            if not params:
                found.append((c, c.obj))
            continue
        missing = _required_args(c, params)
        if missing:
            untried[c.name] = (f"takes {', '.join(missing)} without defaults (give them with "
                               + " ".join(f"--param {m}=..." for m in missing) + ", and --kernel " + c.name + ")")
            continue
        try:
            result = _call(c, params, path)
        except (CliError, AscendCompileError) as exc:
            failures[c.name] = _failure_text(exc)
            continue
        if isinstance(result, tirx.PrimFunc | AscendKernel | Case):
            found.append((c, result))
        else:
            untried[c.name] = f"returned {type(result).__name__}, not a PrimFunc"
    failed = [c for c in cands if c.name in failures]
    if len(found) == 1:
        c, result = found[0]
        sel = _as_selected(c, result, params)
        if failed:
            sel.notes.append(f"note: using {c.name}, the only candidate of {path} that gave a kernel; these failed:\n"
                             + _listing(failed, failures))
        return sel
    if not found:
        with_params = " and " + _fmt_params(params) if params else ""
        raise CliError(f"error: no kernel found in {path}: no example(), and no top-level function returns a "
                       f"PrimFunc when called with its defaults{with_params}"
                       f"; candidates:\n{_listing(cands, failures, untried)}\n  hint: pick one with --kernel NAME "
                       "(and --param K=V for arguments without defaults)")
    raise CliError(f"error: {path} defines {len(found)} kernels; pick one with --kernel NAME:\n"
                   + _listing([c for c, _ in found])
                   + (f"\n  and {len(failed)} that failed:\n" + _listing(failed, failures) if failed else ""))


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------
def _console(stream):
    from rich.console import Console

    # Piped or captured output: wide enough that tables never wrap their cells.
    width = None if stream.isatty() else max(200, int(os.environ.get("COLUMNS", "200") or 200))
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def _heading(out, text: str) -> None:
    out.write(f"\n==== {text} ====\n")


def _compile(sel: Selected, arch: str, dump: set[str]):
    """(CompileResult-like: kernel, source, dumps, timings) for the selected kernel."""
    import ascend_backend

    if sel.compiled is not None:
        k = sel.compiled
        wanted = {s for s in dump if s != "codegen"}
        if wanted:
            raise CliError(f"error: '{sel.name}' is an already compiled AscendKernel: only its Ascend C, "
                           f"memory map and sync table are available, not the stage dumps {sorted(wanted)}\n"
                           "  hint: "
                           "decorate a factory instead (@ascend_backend.jit def f(...): return prim_func), "
                           "or define the PrimFunc at top level")
        if k.arch.name != arch:
            raise CliError(f"error: '{sel.name}' is already compiled for {k.arch.name}, not {arch}\n"
                           f"  hint: run with --arch {k.arch.name}, or expose the PrimFunc or its factory")
        return k.result
    return ascend_backend.lower(sel.func, target={"kind": "ascendc", "arch": arch}, dump=dump)


# ---------------------------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------------------------
def cmd_inspect(args: argparse.Namespace, out, err) -> int:
    from ascend_backend.pipeline import STAGES
    from ascend_backend.reports import render_memory_map, render_sync_table, sync_table

    stages: list[str] = []
    for s in args.stage or ():
        if s == "all":
            stages.extend(x for x in STAGES + list(EXTRA_VIEWS) if x not in stages)
        elif s not in stages:
            stages.append(s)
    if args.source and "codegen" not in stages:
        stages.append("codegen")
    if args.memory_map and "memory" not in stages:
        stages.append("memory")
    if args.sync_table and "sync" not in stages:
        stages.append("sync")
    if not stages:
        stages = ["codegen", "memory", "sync"]

    module = load_module(args.file)
    sel = select_kernel(module, args.file, args.kernel, parse_params(args.param))
    for note in sel.notes:
        err.write(note + "\n")
    ir_stages = [s for s in stages if s in STAGES]
    result = _compile(sel, args.arch, set(ir_stages))
    program = result.program
    kinds = ", ".join(lc.kernel_type.value for lc in program.launches)
    blocks = ", ".join(str(lc.block_dim) for lc in program.launches)
    out.write(f"# kernel {program.name} from {args.file} ({sel.how}); arch {program.arch.name}, "
              f"type {kinds}, block_dim {blocks}\n")
    console = _console(out)
    for s in stages:
        if s == "memory":
            _heading(out, "memory map")
            console.print(render_memory_map(program))
        elif s == "sync":
            _heading(out, "sync table")
            if sync_table(program):
                console.print(render_sync_table(program))
            else:
                out.write("(no SetFlag/WaitFlag pairs: no cross-pipe dependency in this kernel)\n")
        elif s == "codegen":
            _heading(out, "codegen (Ascend C)")
            out.write(result.source if result.source.endswith("\n") else result.source + "\n")
        else:
            _heading(out, f"after {s}" if s != "frontend" else "frontend IR")
            text = result.dumps.get(s, "")
            out.write(text if text.endswith("\n") else text + "\n")
    if args.timings and result.timings:
        from rich.table import Table

        t = Table(title="compile time per stage")
        t.add_column("stage")
        t.add_column("ms", justify="right")
        for stage, sec in result.timings.items():
            t.add_row(stage, f"{sec * 1e3:.2f}")
        t.add_row("total", f"{sum(result.timings.values()) * 1e3:.2f}")
        console.print(t)
    return EXIT_OK


def _find_case(module, path: str, name: str | None, params: dict[str, Any]):
    from ascend_backend.testing import Case

    fn_name = name or "example"
    fn = getattr(module, fn_name, None)
    if fn is None or not callable(fn):
        cases = [n for n, o in vars(module).items()
                 if inspect.isfunction(o) and o.__module__ == module.__name__ and not n.startswith("_")]
        raise CliError(f"error: {path} has no function '{fn_name}()' returning an ascend_backend.testing.Case"
                       f"\n  functions in the file: {', '.join(cases) or '(none)'}"
                       "\n  hint: `run` needs a Case (kernel, inputs, outputs, reference); add "
                       "`def example(): return Case(...)` or name one with --case")
    c = Candidate(fn_name, "case", fn, _signature(fn))
    case = _call(c, params, path)
    if not isinstance(case, Case):
        raise CliError(f"error: {fn_name}() returned {type(case).__name__}, "
                       "not an ascend_backend.testing.Case")
    return case


def _check_case(case, fn_name: str) -> None:
    """The Case's fields, checked before anything is compiled or run (each problem in one line)."""
    import torch
    from tvm import tirx

    where = f"{fn_name}() returned a Case whose"
    if not isinstance(case.func, tirx.PrimFunc):
        hint = (" (a function: call the factory, Case(func=make_kernel(...), ...))" if callable(case.func) else "")
        raise CliError(f"error: {where} func is {type(case.func).__name__}, not a PrimFunc{hint}")
    if not isinstance(case.inputs, list | tuple):
        raise CliError(f"error: {where} inputs is {type(case.inputs).__name__}, not a list of the kernel's arguments")
    n = len(case.func.params)
    if len(case.inputs) != n:
        names = ", ".join(str(p.name).removesuffix("_handle") for p in case.func.params)
        raise CliError(f"error: {where} inputs has {len(case.inputs)} values, but the kernel takes {n} "
                       f"({names}); inputs lists every argument, outputs included")
    if not isinstance(case.outputs, list | tuple) or not case.outputs:
        raise CliError(f"error: {where} outputs is {case.outputs!r}: give the indices of the output arguments, "
                       "e.g. outputs=[2]")
    for idx in case.outputs:
        if not isinstance(idx, int) or isinstance(idx, bool) or not -n <= idx < n:
            raise CliError(f"error: {where} outputs names argument {idx!r}, but the kernel takes {n} arguments "
                           f"(indices 0..{n - 1})")
        if not isinstance(case.inputs[idx], torch.Tensor):
            raise CliError(f"error: {where} output {idx} is not a tensor (it is {type(case.inputs[idx]).__name__})")
    if not callable(case.reference):
        raise CliError(f"error: {where} reference is {type(case.reference).__name__}, not a function")
    for name in ("atol", "rtol"):
        value = getattr(case, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise CliError(f"error: {where} {name} is {value!r}: give a number >= 0 (e.g. {name}=1e-2)")


def _check_writable(path: str, what: str) -> None:
    """Fail before the run, not after it, when ``path`` cannot be written."""
    full = os.path.abspath(path)
    folder = os.path.dirname(full)
    if os.path.isdir(full):
        raise CliError(f"error: {what} {path}: is a directory; give a file name, e.g. {os.path.join(path, 'out.svg')}")
    if not os.path.isdir(folder):
        raise CliError(f"error: {what} {path}: the directory {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(full) and not os.access(full, os.W_OK)):
        raise CliError(f"error: {what} {path}: not writable (permission denied)")


def _run_reference(case, path: str, fn_name: str) -> list:
    import torch

    try:
        expected = case.reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in case.inputs])
    except Exception as exc:  # noqa: BLE001 - the user's reference failed: say where, no traceback
        where = _user_frames(exc, path)
        raise CliError(f"error: the reference of {fn_name}() raised" + (f" at {where}" if where else "")
                       + f": {_exc_line(exc)}") from None
    if isinstance(expected, torch.Tensor) or not isinstance(expected, list | tuple):
        raise CliError(f"error: the reference of {fn_name}() returned a {type(expected).__name__}; it must return "
                       "a list with one tensor per output, e.g. [a + b]")
    if len(expected) != len(case.outputs):
        raise CliError(f"error: the reference of {fn_name}() returned {len(expected)} tensors "
                       f"for {len(case.outputs)} outputs")
    for n, e in enumerate(expected):
        if not isinstance(e, torch.Tensor):
            raise CliError(f"error: the reference of {fn_name}() returned a {type(e).__name__} as item {n}, "
                           "not a tensor")
    return list(expected)


def cmd_run(args: argparse.Namespace, out, err) -> int:
    if args.timeline and args.timeline != "-":
        _check_writable(args.timeline, "--timeline")
    module = load_module(args.file)
    params = parse_params(args.param)
    if args.case is not None or (args.kernel is None and callable(getattr(module, "example", None))):
        return _run_case(args, module, params, out, err)
    try:
        sel = select_kernel(module, args.file, args.kernel, params)
    except CliError as exc:
        if args.kernel is not None:
            raise
        raise CliError(f"{exc}\n  or give FILE an example() returning an ascend_backend.testing.Case (the kernel, "
                       "its inputs and its reference)", exc.code) from None
    for note in sel.notes:
        err.write(note + "\n")
    if sel.case is not None:  # --kernel named a function returning a Case
        return _run_case(args, module, params, out, err, case=sel.case, fn_name=sel.name.removesuffix("()"))
    return _run_random(args, module, sel, out, err)


def _run_case(args: argparse.Namespace, module, params: dict[str, Any], out, err, case=None,
              fn_name: str | None = None) -> int:
    """``run`` of a Case: its inputs, its outputs, its reference and tolerances."""
    import ascend_backend

    for opt, value in (("--ref", args.ref), ("--arg", args.arg), ("--atol", args.atol), ("--rtol", args.rtol)):
        if value:
            raise CliError(f"error: {opt} is for a kernel run on random inputs (--kernel NAME); a Case brings its own "
                           "inputs, reference and tolerances")
    fn_name = fn_name or args.case or "example"
    if case is None:
        case = _find_case(module, args.file, args.case, params)
    _check_case(case, fn_name)
    kernel = ascend_backend.compile(case.func, target={"kind": "ascendc", "arch": args.arch},
                                    runtime="emulator", strict=not args.no_strict)
    title = case.name or kernel.name
    out.write(f"# running {title} ({kernel.name}) from {args.file} on the emulator, arch {args.arch}, "
              f"block_dim {', '.join(map(str, kernel.block_dims))}, strict={'no' if args.no_strict else 'yes'}\n")
    run_args = [a.clone() if hasattr(a, "clone") else a for a in case.inputs]
    rc = _execute(kernel, run_args, f"the inputs of {fn_name}()", out, err)
    if rc is not None:
        return rc
    _timeline(kernel, args, out)
    expected = _run_reference(case, args.file, fn_name)
    got = [run_args[idx] for idx in case.outputs]
    return _verdict(kernel, list(case.outputs), got, expected, case.atol, case.rtol, out)


def _run_random(args: argparse.Namespace, module, sel: Selected, out, err) -> int:
    """``run --kernel NAME``: random inputs of the kernel's signature, the outputs it writes, and the
    reference when --ref gives one."""
    import torch

    import ascend_backend
    from ascend_backend.kernel import AscendKernel
    from ascend_backend.profiler import make_inputs, written_params

    ref = _load_reference(args.ref, module, args.file) if args.ref else None
    if sel.compiled is not None:
        if sel.compiled.arch.name != args.arch:
            raise CliError(f"error: '{sel.name}' is already compiled for {sel.compiled.arch.name}, not {args.arch}\n"
                           f"  hint: run with --arch {sel.compiled.arch.name}, or expose the PrimFunc or its factory")
        kernel = AscendKernel(sel.compiled.result, "emulator", strict=not args.no_strict)
    else:
        kernel = ascend_backend.compile(sel.func, target={"kind": "ascendc", "arch": args.arch}, runtime="emulator",
                                        strict=not args.no_strict)
    program = kernel.program
    outputs = written_params(program)
    given = parse_params(args.arg) if args.arg else {}
    dims = {v.name: given[v.name] for v in program.shape_vars if v.name in given}
    scalars = {p.name: given[p.name] for p in program.params if not p.is_tensor and p.name in given}
    unknown = sorted(set(given) - set(dims) - set(scalars))
    if unknown:
        names = [v.name for v in program.shape_vars] + [p.name for p in program.params if not p.is_tensor]
        raise CliError(f"error: --arg {unknown[0]}: kernel '{kernel.name}' has no symbolic dimension or scalar "
                       f"parameter of that name (it has: {', '.join(dict.fromkeys(names)) or 'none'})")
    torch.manual_seed(args.seed)
    try:
        run_args = make_inputs(program, "auto", dims=dims, scalars=scalars, skip=outputs)
    except ValueError as exc:
        raise CliError(f"error: {exc}") from None
    from ascend_backend.shapes import bind, output_shape

    inputs = [a for i, a in enumerate(run_args) if i not in outputs]
    try:
        env = bind(program.replace(params=[p for i, p in enumerate(program.params) if i not in outputs]), inputs,
                   "emulator", complete=False)
        for i in outputs:
            p = program.params[i]
            run_args[i] = torch.zeros(output_shape(program, p, env), dtype=program.buffer(p.buffer).dtype.torch_dtype())
    except (TypeError, ValueError) as exc:
        raise CliError(f"error: kernel '{kernel.name}': {exc}") from None
    names = [p.name for p in program.params]
    out.write(f"# running {kernel.name} ({sel.how}) from {args.file} on the emulator, arch {args.arch}, "
              f"block_dim {', '.join(map(str, kernel.block_dims))}, strict={'no' if args.no_strict else 'yes'}\n")
    out.write(f"# inputs: {', '.join(names[i] for i in range(len(names)) if i not in outputs) or 'none'} random "
              f"(tilelang's TensorSupplyType.Auto, seed {args.seed}); outputs: "
              f"{', '.join(names[i] for i in outputs) or 'none'} (zeroed)\n")
    ref_inputs = [a.clone() if isinstance(a, torch.Tensor) else a for a in inputs]
    rc = _execute(kernel, run_args, "the random inputs", out, err)
    if rc is not None:
        return rc
    _timeline(kernel, args, out)
    got = [run_args[i] for i in outputs]
    atol = 1e-2 if args.atol is None else args.atol
    rtol = 1e-2 if args.rtol is None else args.rtol
    if ref is None:
        for n, t in zip(outputs, got, strict=True):
            finite = t.float()[torch.isfinite(t.float())]
            rng = f"{finite.min().item():.4g} .. {finite.max().item():.4g}" if finite.numel() else "no finite value"
            out.write(f"output {names[n]}: {'x'.join(map(str, t.shape))} {str(t.dtype).replace('torch.', '')}, "
                      f"values {rng}\n")
        ok = all(r.ok for r in kernel.reports)
        out.write("no reference (--ref FUNC): the emulator's checks only (races, flags, bounds); the values were "
                  "not compared\n")
        out.write("PASS\n" if ok else "FAIL\n")
        return EXIT_OK if ok else EXIT_FAIL
    expected = _call_reference(ref, args.ref, ref_inputs, len(outputs), args.file)
    return _verdict(kernel, outputs, got, expected, atol, rtol, out)


def _load_reference(spec: str, module, path: str) -> Callable[..., Any]:
    """``--ref``: FUNC of FILE, PATH.py:FUNC, or MODULE:FUNC (importable with FILE's folder on sys.path)."""
    import importlib

    where, sep, name = spec.rpartition(":")
    if not sep:
        holder, label = module, path
    elif where.endswith(".py") or os.sep in where:
        holder, label = load_module(where), where
    else:
        folder = os.path.dirname(os.path.abspath(path))
        sys.path.insert(0, folder)
        try:
            holder = importlib.import_module(where)
        except Exception as exc:  # noqa: BLE001 - the user's module failed to import: say so, no traceback
            raise CliError(f"error: --ref {spec}: cannot import {where}: {_exc_line(exc)}") from None
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)
        label = where
    fn = getattr(holder, name, None)
    if not callable(fn):
        funcs = [n for n, o in vars(holder).items() if inspect.isfunction(o) and not n.startswith("_")]
        raise CliError(f"error: --ref {spec}: {label} has no function '{name}'"
                       f"\n  functions there: {', '.join(funcs) or '(none)'}")
    return fn


def _call_reference(ref: Callable[..., Any], spec: str, inputs: list, n_out: int, path: str) -> list:
    import torch

    try:
        expected = ref(*inputs)
    except Exception as exc:  # noqa: BLE001 - the user's reference failed: say where, no traceback
        where = _user_frames(exc, path) or _user_frames(exc, inspect.getsourcefile(ref) or path)
        raise CliError(f"error: the reference {spec} raised" + (f" at {where}" if where else "")
                       + f": {_exc_line(exc)}") from None
    expected = [expected] if isinstance(expected, torch.Tensor) else expected
    if not isinstance(expected, list | tuple) or not all(isinstance(e, torch.Tensor) for e in expected):
        raise CliError(f"error: the reference {spec} returned {type(expected).__name__}; it must return the "
                       f"kernel's {n_out} output tensor{'s' if n_out != 1 else ''} (one tensor, or a tuple/list)")
    if len(expected) != n_out:
        raise CliError(f"error: the reference {spec} returned {len(expected)} tensors for the kernel's {n_out} "
                       "outputs (the tensors it writes, in parameter order)")
    return list(expected)


def _execute(kernel, run_args: list, what: str, out, err) -> int | None:
    """Run the kernel; None when it ran, else the exit code (the failure printed)."""
    from ascend_backend.emulator import EmulatorCompileError, EmulatorEnvironmentError, EmulatorError

    try:
        kernel(*run_args)
    except EmulatorEnvironmentError:
        raise
    except EmulatorCompileError as exc:
        err.write(f"FAIL: the generated Ascend C did not compile against the emulator: {exc}\n")
        if exc.line:
            err.write(f"  kernel.cpp:{exc.line}: {exc.source_line}\n")
        if exc.compiler_output:
            err.write(exc.compiler_output[-4000:] + "\n")
        return EXIT_FAIL
    except EmulatorError as exc:
        err.write(f"FAIL: emulator error: {exc}\n")
        if exc.report is not None:
            out.write(exc.report.summary() + "\n")
        return EXIT_FAIL
    except (TypeError, ValueError) as exc:  # the kernel's argument checks: the inputs do not fit
        raise CliError(f"error: {what} do not fit kernel '{kernel.name}': {exc}") from None
    reports = list(kernel.reports)
    for n, r in enumerate(reports):
        # A PrimFunc with several T.Kernel blocks runs them in order: one report per launch.
        if len(reports) > 1:
            out.write(f"launch {n} ({kernel.program.entry_name(n)}): ")
        out.write(r.summary() + "\n")
    return None


def _timeline(kernel, args: argparse.Namespace, out) -> None:
    report = kernel.last_report
    if report is None or not args.timeline:
        return
    if args.timeline == "-":
        out.write(report.timeline_text() + "\n")
        return
    try:
        report.write_timeline_svg(args.timeline)
    except OSError as exc:
        raise CliError(f"error: --timeline {args.timeline}: cannot write it: {exc.strerror or exc}") from None
    out.write(f"timeline (modelled) written to {args.timeline}\n")


def _verdict(kernel, outputs: list[int], got: list, expected: list, atol: float, rtol: float, out) -> int:
    """The table of outputs against the reference, then PASS or FAIL (the exit code)."""
    import torch
    from rich.table import Table

    ok = True
    table = Table(title=f"outputs of {kernel.name} vs reference (atol={atol}, rtol={rtol})")
    for col in ("output", "shape", "dtype", "max abs error", "mismatched", "result"):
        table.add_column(col, justify="right" if col in ("max abs error", "mismatched") else "left")
    params = kernel.params
    for idx, g_t, exp in zip(outputs, got, expected, strict=True):
        g, e = g_t.float(), exp.float()
        if g.shape != e.shape:
            ok = False
            table.add_row(params[idx].name, f"{list(g.shape)} vs {list(e.shape)}", str(g_t.dtype), "-", "-",
                          "FAIL (shape)")
            continue
        diff = (g - e).abs()
        max_err = diff.max().item() if g_t.numel() else 0.0
        bad = ~torch.isclose(g, e, atol=atol, rtol=rtol, equal_nan=True)
        nbad = int(bad.sum().item())
        passed = nbad == 0
        ok = ok and passed
        table.add_row(params[idx].name, "x".join(map(str, g_t.shape)), str(g_t.dtype).replace("torch.", ""),
                      f"{max_err:.3g}", f"{nbad}/{g_t.numel()}", "PASS" if passed else "FAIL")
    _console(out).print(table)
    if any(not r.ok for r in kernel.reports):
        ok = False
        out.write("the emulator reported problems (see above)\n")
    out.write("PASS\n" if ok else "FAIL\n")
    return EXIT_OK if ok else EXIT_FAIL


def default_build_dir(name: str, text: str, arch: str) -> str:
    """``build/<kernel>_<hash>``: the hash of what the folder's build is made from (the source with its
    host wrapper, and the arch bisheng is told), so two kernels of one name (every TileLang kernel is
    ``main``) or one kernel with other parameters never share a folder, and rebuilding the same kernel
    reuses its own."""
    import hashlib

    from ascend_backend.cnames import sanitize

    digest = hashlib.sha256(f"{arch}\0{text}".encode()).hexdigest()[:12]
    return os.path.join("build", f"{sanitize(name)}_{digest}")


def cmd_build(args: argparse.Namespace, out, err) -> int:
    from ascend_backend.arch import get_arch
    from ascend_backend.npu import bisheng_command, host_wrapper

    module = load_module(args.file)
    sel = select_kernel(module, args.file, args.kernel, parse_params(args.param))
    for note in sel.notes:
        err.write(note + "\n")
    result = _compile(sel, args.arch, set())
    kernel = result.program
    text = result.source + host_wrapper(kernel)
    out_dir = args.out or default_build_dir(kernel.name, text, args.arch)
    src = os.path.join(out_dir, f"{kernel.name}.cpp")
    lib = os.path.join(out_dir, f"lib{kernel.name}.so")
    try:
        os.makedirs(out_dir, exist_ok=True)
        with open(src, "w") as f:
            f.write(text)
    except OSError as exc:
        raise CliError(f"error: --out {out_dir}: cannot write {exc.filename or src}: {exc.strerror or exc}"
                       "\n  hint: give a writable directory with --out DIR") from None
    cmd = bisheng_command(src, lib, get_arch(args.arch))
    out.write(f"# kernel {kernel.name} from {args.file} ({sel.how}); arch {args.arch}, block_dim "
              f"{kernel.launch.block_dim}\n")
    out.write(f"wrote {src} (the kernel and a host wrapper launch_{kernel.name}(stream, blocks_0, ..., args...))\n")
    out.write("bisheng command:\n")
    out.write(shlex.join(cmd) + "\n")
    if shutil.which("bisheng") is None:
        out.write("bisheng is not on PATH (set up CANN to build): the command was not run\n")
        return EXIT_OK
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        err.write(f"bisheng failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}\n")
        return EXIT_FAIL
    out.write(f"built {lib}\n")
    return EXIT_OK


def cmd_check(args: argparse.Namespace, out, err) -> int:
    """Static sync lint of an Ascend C source (docs/check.md): no inputs, no compiler."""
    import json

    from ascend_backend.check import CheckError, check_file

    defines = {}
    for d in args.define or ():
        name, _, value = d.partition("=")
        if not name.isidentifier():
            raise CliError(f"error: -D {d!r} is not NAME or NAME=VALUE")
        defines[name] = value or "1"
    if os.path.isdir(args.file):
        raise CliError(f"{args.file}: error: is a directory, not an Ascend C source")
    if not os.path.exists(args.file):
        raise CliError(f"{args.file}: error: no such file")
    try:
        res = check_file(args.file, arch=args.arch, auto_sync=args.auto_sync == "on", defines=defines,
                         follow_includes=not args.no_includes, kernel=args.kernel)
    except CheckError as exc:
        raise CliError(str(exc)) from None
    if args.kernel and not res.kernels:
        raise CliError(f"{args.file}: error: no __global__ kernel named {args.kernel!r}")
    if args.json:
        out.write(json.dumps(res.to_dict(), indent=2) + "\n")
    else:
        for d in res.diagnostics:
            out.write(d.format() + "\n")
        if args.verbose:
            for k in res.kernels:
                paths = ", ".join(f"{c} {n} path{'s' if n != 1 else ''}" for c, n in k["paths"].items())
                err.write(f"{args.file}:{k['line']}: note: kernel {k['name']} ({k['how']}): {paths}\n")
            for n in res.notes:
                err.write(f"{args.file}: note: {n}\n")
            for f, ln in res.dropped:
                err.write(f"{f}:{ln}: note: a top-level declaration outside the kernel subset was skipped\n")
        ne, nw = len(res.errors), len(res.warnings)
        if not res.kernels:
            err.write(f"{args.file}: warning: no __global__ kernel found (nothing was checked)\n")
        err.write(f"{ne} error{'s' if ne != 1 else ''}, {nw} warning{'s' if nw != 1 else ''} "
                  f"({args.arch}, auto-sync {args.auto_sync})\n")
    return EXIT_FAIL if res.errors else EXIT_OK


# ---------------------------------------------------------------------------------------------
# tl-ascend cache info|prune
# ---------------------------------------------------------------------------------------------
def _mb(n: float) -> str:
    return f"{n / 2**20:.1f} MB"


def cmd_cache(args: argparse.Namespace, out, err) -> int:
    """``tl-ascend cache info`` / ``tl-ascend cache prune [--all | --max-size SIZE]``."""
    from ascend_backend import buildcache

    with buildcache.guard(buildcache.cache_root(), f"running `cache {args.cache_command}`"):
        return _cache_command(args, out)


def _cache_command(args: argparse.Namespace, out) -> int:
    from ascend_backend import buildcache
    from ascend_backend.emulator.cache import protect_current

    if args.cache_command == "info":
        i = buildcache.info(protect=protect_current)
        where = "TL_ASCEND_CACHE_DIR" if i["root_from_env"] else "default; TL_ASCEND_CACHE_DIR moves it"
        out.write(f"cache: {i['root']} ({where})" + ("" if i["exists"] else ", does not exist yet") + "\n")
        cap = "TL_ASCEND_CACHE_MAX_MB" if i["cap_from_env"] else f"default {buildcache.DEFAULT_MAX_MB} MB"
        out.write(f"size: {_mb(i['total_bytes'])} of a {_mb(i['cap_bytes'])} cap ({cap})\n")
        out.write(f"{'kind':<10}{'entries':>8}{'size':>14}\n")
        for kind, v in i["kinds"].items():
            out.write(f"{kind:<10}{v['entries']:>8}{_mb(v['bytes']):>14}\n")
        out.write(f"temps: {i['in_progress']} of running builds, {i['orphans']} orphaned "
                  "(removed by `tl-ascend cache prune` and after every build)\n")
        return EXIT_OK
    if args.all:
        res = buildcache.prune(remove_all=True, protect=protect_current, strict=True)
    else:
        if args.max_size is not None:
            try:
                cap = buildcache.parse_size(args.max_size)
            except ValueError as exc:
                raise CliError(f"error: --max-size: {exc}") from None
            keep = False
        else:
            cap, keep = buildcache.max_bytes_from_env(), True
        res = buildcache.prune(max_bytes=cap, keep_protected=keep, protect=protect_current, strict=True)
    by_kind: dict[str, int] = {}
    for e in res.removed:
        by_kind[e.kind] = by_kind.get(e.kind, 0) + 1
    what = ", ".join(f"{n} {k}" for k, n in sorted(by_kind.items())) or "nothing"
    out.write(f"removed {what} ({_mb(res.freed)}); the cache at {buildcache.cache_root()} now holds "
              f"{_mb(res.total)}\n")
    return EXIT_OK


# tl-ascend tune
# ---------------------------------------------------------------------------------------------
def cmd_tune(args: argparse.Namespace, out, err) -> int:
    """``tl-ascend tune FILE``: rank configurations of a kernel factory by modelled time."""
    from ascend_backend.autotune import AutoTuner, expand_configs

    module = load_module(args.file)
    fixed = parse_params(args.param)
    factories = [c for c in candidates(module) if c.kind == "factory"]
    if args.kernel is not None:
        c = next((c for c in factories if c.name == args.kernel), None)
        if c is None:
            raise CliError(f"error: {args.file} has no kernel factory '{args.kernel}'; factories:\n"
                           + _listing(factories))
    else:
        tuned = [c for c in factories if hasattr(c.obj, "configs")] or factories
        if len(tuned) != 1:
            raise CliError(f"error: {args.file} defines {len(tuned)} kernel factories; pick one with --kernel NAME:\n"
                           + _listing(tuned))
        c = tuned[0]
    space: dict = {}
    for item in args.space:
        key, sep, values = item.partition("=")
        if not sep or not key or not values:
            raise CliError(f"error: --space {item!r}: expected K=V1,V2,... (for example --space block_M=64,128)")
        space[key] = [parse_value(v) for v in values.split(",")]
    if space:
        configs = expand_configs(space)
    elif hasattr(c.obj, "configs"):
        configs = list(c.obj.configs)
    else:
        raise CliError(f"error: no configurations to try for {c.name}: give --space K=V1,V2,... (repeatable), or "
                       "decorate the factory with @ascend_backend.autotune.autotune(configs=...)")
    factory = getattr(c.obj, "__wrapped_factory__", c.obj)
    try:
        for cfg in configs:
            inspect.signature(factory).bind(**fixed, **cfg)
    except TypeError as exc:
        raise CliError(f"error: cannot call {c.name}{_signature(factory)} with {_fmt_params({**fixed, **cfg})}: "
                       f"{exc}\n  hint: --param fixes keyword arguments, --space lists the values to try") from None
    console = _console(out)
    result = (AutoTuner(c.obj, configs).set_compile_args(target={"kind": "ascendc", "arch": args.arch})
              .set_profile_args(fixed=fixed, blocks=args.blocks)
              .run(workers=args.workers, cache=not args.no_cache, progress=not args.no_progress,
                   console=_console(err)))
    from rich.table import Table

    t = Table(title=f"{c.name} on {args.arch}: configurations by modelled time (MODELLED, not measured)")
    pipes = ("M", "V", "MTE1", "MTE2", "MTE3", "FIX")
    for col in ("rank", "config", "modelled cycles", "time us", *[f"{p} busy %" for p in pipes], "note"):
        t.add_column(col, justify="left" if col in ("config", "note") else "right")
    for n, trial in enumerate(result.trials[:args.top] if args.top else result.trials, 1):
        cfg = ", ".join(f"{k}={v}" for k, v in trial.config.items())
        if trial.ok:
            note = f"{trial.blocks_emulated} of {trial.block_dim} blocks emulated" + (
                f", x{trial.waves} waves" if trial.waves > 1 else "") + (", cached" if trial.cached else "")
            t.add_row(str(n), cfg, f"{trial.cycles:,}", f"{trial.time_us:,.1f}",
                      *[f"{trial.busy.get(p, 0.0):.1f}" for p in pipes], note)
        else:
            t.add_row(str(n), cfg, "-", "-", *["" for _ in pipes], f"skipped: {trial.error.splitlines()[0]}")
    console.print(t)
    if result.best is None:
        out.write("no configuration compiled and ran; see the notes above\n")
        return EXIT_FAIL
    out.write(f"best: {_fmt_params(result.config)} ({result.cycles:,} modelled cycles, {result.latency:,.1f} us)\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tl-ascend``; returns the exit code (0, 1, 2 or 3). (The installed command
    is ``tl_ascend:main``, which answers ``--help`` and ``--version`` before importing this.)"""
    args = parse(argv)
    if isinstance(args, int):
        return args
    return dispatch(args)


def dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command; every failure becomes its exit code and a message (no traceback)."""
    out, err = sys.stdout, sys.stderr
    from ascend_backend.buildcache import BuildEnvironmentError
    from ascend_backend.errors import AscendCompileError, InternalCompilerError

    handler = COMMANDS[args.handler]
    try:
        return handler(args, out, err)
    except CliError as exc:
        err.write(f"{exc}\n")
        return exc.code
    except BuildEnvironmentError as exc:  # compiler, cache directory, disk: one line saying what to do
        err.write(f"{exc}\n")
        return EXIT_USAGE
    except AscendCompileError as exc:
        err.write(f"{exc}\n")
        return EXIT_USAGE
    except InternalCompilerError as exc:
        err.write(f"{exc}\n")
        return EXIT_INTERNAL
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        err.write("interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - never a traceback: a bug of tl-ascend itself, said so
        where = ""
        frames = traceback.extract_tb(exc.__traceback__)
        if frames:
            where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}"
        err.write(f"tl-ascend: internal error{where}: {_exc_line(exc)}\n"
                  "  This is a bug in tl-ascend. Please report it with the command line and FILE; "
                  "TL_ASCEND_TRACEBACK=1 prints the traceback.\n")
        if os.environ.get("TL_ASCEND_TRACEBACK"):
            traceback.print_exc(file=err)
        return EXIT_INTERNAL


COMMANDS: dict[str, Callable[[argparse.Namespace, Any, Any], int]] = {
    "inspect": cmd_inspect, "run": cmd_run, "build": cmd_build, "check": cmd_check, "cache": cmd_cache,
    "tune": cmd_tune,
}


if __name__ == "__main__":
    sys.exit(main())
