"""One error path: exceptions tilelang's front end or TVM raise while the user's Python builds a
kernel become our error classes, at the user's line, with a hint.

A ``@T.prim_func`` runs the user's function body through tilelang's builder; a bad shape or value
surfaces there as tilelang's bare ``AssertionError`` (T.gemm operand shapes), TVM's
``StructuralEqual`` ``ValueError`` (T.copy between tiles of different shapes), TVM's
``InternalError`` "Divide by zero" (a tile size of 0, ``x / 0.0``), and so on. The builder runs
the user's code under its original file name and line numbers, so the traceback holds the
user's line: :func:`translate` finds it and rewrites the exception. An exception the user's
own code raised (its innermost frame is in the user's file) is left alone: it is theirs.

Entry points that run the user's kernel-building code (``ascend_backend.jit``, the CLI) wrap it
in :func:`building_kernel`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import sysconfig
import traceback
from collections.abc import Iterator

from .errors import AscendCompileError, DslError, InternalCompilerError, ShapeError, SrcLoc, UnsupportedError

_GEMM_SHAPE = re.compile(
    r"(\S+) ([MNK]) shape check failed(?: for 2CTA)?: (\w+) = (.+?), (\w+|expected N_C / 2) = (.+)$")
_GEMM_HINT = ("T.gemm(A, B, C) computes C[M, N] += A[M, K] @ B[K, N]; A is [K, M] with transpose_A=True and B is "
              "[N, K] with transpose_B=True: make the tile shapes agree")
_DIV0_HINT = ("a divisor on this line is 0: a tile or block size of 0 (e.g. T.ceildiv(N, block_N) with block_N = 0) "
              "or a division by the constant 0 (`x / 0.0`); tile sizes must be positive, and an infinity is "
              "written T.infinity(dtype)")
_GENERIC_HINT = ("tilelang's front end rejected this line while building the kernel: check the values it uses "
                 "(shapes, tile sizes, dtypes, the types of the factory's arguments)")
_DEEP_HINT = ("split the expression into several statements through a temporary tile (for i, j in T.Parallel: "
              "t[i, j] = ...; then x[i, j] = t[i, j] + ...)")


def _library_dirs() -> tuple[str, ...]:
    """Directories whose frames are never the user's: tilelang, TVM, this package, the stdlib."""
    dirs = []
    for mod in ("tilelang", "tvm", "tvm_ffi", "ascend_backend", "ascend_backend.passes"):
        m = sys.modules.get(mod)
        f = getattr(m, "__file__", None)
        if f:
            dirs.append(os.path.dirname(os.path.realpath(f)))
    for key in ("stdlib", "platstdlib"):
        with contextlib.suppress(KeyError):
            dirs.append(os.path.realpath(sysconfig.get_paths()[key]))
    return tuple(d + os.sep for d in dirs)


def is_user_file(path: str, libs: tuple[str, ...] | None = None) -> bool:
    # TVM's errors carry its C++ frames (.cc, .h, .pxi paths of its build machine): never the user's.
    if not path or path.startswith("<") or not path.endswith(".py"):
        return False
    real = os.path.realpath(path)
    return not any(real.startswith(d) for d in (libs if libs is not None else _library_dirs()))


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(exc.__traceback__))


def user_loc(exc: BaseException) -> SrcLoc | None:
    """The deepest frame of ``exc``'s traceback in the user's code (file:line), or None."""
    libs = _library_dirs()
    found = None
    for fr in _frames(exc):
        if is_user_file(fr.filename, libs):
            found = SrcLoc(fr.filename, int(fr.lineno or 0))
    return found


def raised_by_user(exc: BaseException) -> bool:
    """True when the innermost frame is the user's own code: their raise, not tilelang's."""
    frames = _frames(exc)
    return bool(frames) and is_user_file(frames[-1].filename)


def _api_called(exc: BaseException) -> str | None:
    """The T.* function the user's line called into (the first library frame after it)."""
    libs = _library_dirs()
    frames = _frames(exc)
    last_user = max((n for n, fr in enumerate(frames) if is_user_file(fr.filename, libs)), default=None)
    if last_user is None or last_user + 1 >= len(frames):
        return None
    for fr in frames[last_user + 1:]:
        if os.sep + "tilelang" + os.sep not in fr.filename:
            break
        if fr.filename.endswith(os.path.join("eager", "builder.py")):
            continue  # the builder's own plumbing (rval, bind, ...), not a T.* function
        if not fr.name.startswith("_") and fr.name not in _WRAPPERS:
            return f"T.{fr.name}"
    return None


_WRAPPERS = {"wrapped", "wrapper", "inner", "impl", "decorator", "__call__"}


def _first_line(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _tvm_message(exc: BaseException) -> str:
    """A TVM error's message without the C++ check it came from ("Check failed: (a) : msg" -> msg)."""
    text = _first_line(str(exc), 1000)
    m = re.match(r"Check failed: .*? : (.+)$", text)
    return m.group(1) if m else text


def _operand(name: str, dim: str) -> str:
    """tilelang's "K_A" -> "the K of A"; "expected N_C / 2" stays as it is."""
    m = re.fullmatch(r"([MNK])_([ABC])", name)
    return f"the {m.group(1)} of {m.group(2)}" if m else name


def _structural_shapes(text: str) -> tuple[str, str] | None:
    m = re.search(r"caused by lhs at \S+:\s*(.+?)\s*and rhs at \S+:\s*(.+?)\s*$", str(text), re.S)
    if not m:
        return None
    return m.group(1).strip(), m.group(2).strip()


def translate(exc: BaseException, context: str | None = None) -> AscendCompileError | None:
    """Our error for an exception tilelang or TVM raised while the user's code built a kernel;
    None for one we leave alone (ours already, an internal error, or the user's own raise).
    ``context`` (e.g. the kernel function's name) starts the message when no user line is found."""
    err = _translate(exc)
    if err is not None and err.loc is None and context:
        return type(err)(f"{context}: {err.what}", hint=err.hint)
    return err


def _translate(exc: BaseException) -> AscendCompileError | None:
    if isinstance(exc, AscendCompileError | InternalCompilerError) or not isinstance(exc, Exception):
        return None
    if raised_by_user(exc):
        return None
    loc = user_loc(exc)
    api = _api_called(exc)
    name = f"{type(exc).__module__}.{type(exc).__name__}".replace("builtins.", "")
    text = str(exc)
    if isinstance(exc, RecursionError):
        return UnsupportedError(f"an expression nested too deeply to build ({name})", loc=loc, hint=_DEEP_HINT)
    m = _GEMM_SHAPE.search(_first_line(text, 1000))
    if isinstance(exc, AssertionError) and m:
        api_name, dim, a, va, b, vb = m.groups()
        return ShapeError(f"{api_name}: {_operand(a, dim)} is {va} but {_operand(b, dim)} is {vb}",
                          loc=loc, hint=_GEMM_HINT)
    if "StructuralEqual check failed" in text:
        shapes = _structural_shapes(text)
        what = api or "this call"
        if shapes:
            return ShapeError(f"{what}: the source has shape {shapes[0]} but the destination has {shapes[1]}",
                              loc=loc, hint="tile-to-tile copies need tiles of the same shape")
        return ShapeError(f"{what}: its operands' shapes differ", loc=loc,
                          hint="tile-to-tile copies need tiles of the same shape")
    msg = _tvm_message(exc) if type(exc).__module__.startswith("tvm") else _first_line(text)
    if "Divide by zero" in msg or isinstance(exc, ZeroDivisionError):
        return DslError(f"division by zero while building this line ({name}: {msg})", loc=loc, hint=_DIV0_HINT)
    where = f"{api} raised" if api else "tilelang raised"
    return DslError(f"{where} {name}: {msg}", loc=loc, hint=_GENERIC_HINT)


@contextlib.contextmanager
def quiet_builder() -> Iterator[None]:
    """Silence tilelang's builder, which logs the whole generated builder source (tens of lines) at
    CRITICAL before re-raising; the error we raise instead names the line."""
    log = logging.getLogger("tilelang.language.eager.builder")
    old = log.disabled
    log.disabled = True
    try:
        yield
    finally:
        log.disabled = old


@contextlib.contextmanager
def building_kernel() -> Iterator[None]:
    """Run the user's kernel-building code: tilelang/TVM exceptions become our errors (chained)."""
    with quiet_builder():
        try:
            yield
        except Exception as exc:
            err = translate(exc)
            if err is None:
                raise
            raise err from exc
