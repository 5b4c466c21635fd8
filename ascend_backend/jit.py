"""``ascend_backend.jit``: a drop-in for ``tilelang.jit`` on the ascendc target.

``@tilelang.jit(target="ascendc")`` itself cannot work in tilelang 0.1.15 without patching it:
``tilelang.jit.compile`` hands every PrimFunc to ``tilelang.cache.cached``, whose
``_resolve_cache_dispatch`` looks the resolved execution backend up in the module-private dicts
``_dispatch_map`` / ``_ascend_dispatch_map`` (tvm_ffi, cython, nvrtc, cutedsl, torch) and raises
``ValueError('Cannot find support for execution backend "ascendc"')``; behind it,
``JITKernel._create_adapter_from_artifact`` (tilelang/jit/kernel.py) is a closed if/elif chain over the
same names. ``tilelang.backend.register_backend`` lets a backend declare an ``ExecutionBackendSpec`` but
not provide the adapter that runs it. See docs/jit.md.

So this decorator has tilelang.jit's call signature and reuses tilelang's own front end (a
``JITImpl`` made by ``tilelang.jit``, which is lazy and compiles nothing for CUDA) to turn the
decorated function into a PrimFunc, then compiles it with :func:`ascend_backend.compile`:

* factory style: ``f(*shape_args)`` returns a PrimFunc; ``f(...)`` returns an :class:`AscendKernel`;
* tilelang's eager style: ``f`` is the kernel body (``T.const``, ``T.Tensor`` annotations,
  ``T.empty``); ``f(a, b)`` compiles for the tensors' shapes, runs, and returns the outputs;
* a PrimFunc: decorating it compiles it at once and gives the :class:`AscendKernel`.

Each distinct compile-time key (tilelang's own key: the non-tensor arguments, plus the ``T.const``
values inferred from the tensors in eager style) compiles once.
"""

from __future__ import annotations

import functools
import inspect
import logging
import operator
import os
from collections.abc import Callable, Sequence
from typing import Any

from .cnames import sanitize
from .diagnostics import building_kernel, quiet_builder, translate
from .errors import UnsupportedError
from .kernel import AscendKernel, compile
from .target import parse_target

logger = logging.getLogger(__name__)

#: tilelang.jit parameters accepted for signature compatibility and ignored (see docs/jit.md).
IGNORED_PARAMETERS = ("target_host", "execution_backend", "pass_configs", "compile_flags")

_STYLE_HINT = ("return the @T.prim_func kernel from the decorated function (factory style), or write the kernel "
               "body itself with T.const / T.Tensor-annotated parameters / T.empty outputs (tilelang's eager style)")


def jit(
    func: Callable | Any | None = None,
    *,
    out_idx: Sequence[int] | int | None = None,
    target: Any = "ascendc",
    target_host: Any = None,
    execution_backend: str | None = None,
    verbose: bool | None = None,
    pass_configs: dict[str, Any] | None = None,
    debug_root_path: str | None = None,
    compile_flags: list[str] | str | None = None,
    runtime: str = "auto",
    strict: bool = True,
):
    """Drop-in for ``tilelang.jit`` that compiles for the ascendc target.

    Same keywords as ``tilelang.jit`` in tilelang 0.1.15, plus ``runtime`` ("auto", "emulator" or
    "npu") and ``strict`` (emulator checks), both passed to :func:`ascend_backend.compile`.
    ``target`` defaults to "ascendc" (None means the same) and must be an ascendc target.
    ``target_host``, ``execution_backend``, ``pass_configs`` and ``compile_flags`` are accepted
    and ignored: they configure tilelang's TVM build and execution adapters, which are not used.
    ``verbose`` logs each compilation; ``debug_root_path`` writes the Ascend C and the TIR script of
    each compiled kernel there.

    ``out_idx`` (int or list, negative counts from the end) names the output parameters of a
    factory's or a PrimFunc's kernel: ``kernel(a, b)`` allocates and returns them, ``kernel(a, b, c)``
    writes them in place. In eager style the outputs are the ``T.empty`` tensors and ``out_idx``
    must not be given (as in tilelang).
    """
    del target_host, execution_backend, pass_configs, compile_flags  # see IGNORED_PARAMETERS
    if target is None:
        target = "ascendc"
    parse_target(target)  # a non-ascendc target is an error now, not at the first call
    options = _Options(out_idx, target, runtime, strict, bool(verbose), debug_root_path)

    def wrap(f):
        from tvm import tirx

        if isinstance(f, tirx.PrimFunc):
            return options.compile(f, getattr(f, "attrs", None) and f.attrs.get("global_symbol"))
        if not callable(f):
            raise TypeError(f"@ascend_backend.jit decorates a function or a PrimFunc, not {type(f).__name__}")
        return _make_wrapper(f, options)

    return wrap(func) if func is not None else wrap


class _Options:
    """What ``jit(...)`` was given, and the compile step shared by all three styles."""

    def __init__(self, out_idx, target, runtime, strict, verbose, debug_root_path):
        self.out_idx = [out_idx] if isinstance(out_idx, int) else (list(out_idx) if out_idx is not None else None)
        self.target = target
        self.runtime = runtime
        self.strict = strict
        self.verbose = verbose
        self.debug_root_path = os.path.abspath(debug_root_path) if debug_root_path else None

    def compile(self, prim, name: str | None = None) -> AscendKernel:
        out_idx = resolve_out_idx(prim, self.out_idx)
        kernel = compile(prim, target=self.target, runtime=self.runtime, out_idx=out_idx, strict=self.strict)
        if self.verbose:
            logger.info("ascend_backend.jit: compiled %s for %s (out_idx=%s, runtime=%s)",
                        kernel.name, kernel.arch.name, kernel.out_idx, kernel.runtime)
        if self.debug_root_path:
            # A file name, made like the C names (a '/' or '..' of a global_symbol must not leave the folder).
            name = sanitize(str(name or kernel.name))
            os.makedirs(self.debug_root_path, exist_ok=True)
            with open(os.path.join(self.debug_root_path, f"tilelang_jit_kernel_{name}.cpp"), "w") as fh:
                fh.write(kernel.kernel_source)
            with open(os.path.join(self.debug_root_path, f"tilelang_jit_program_{name}.py"), "w") as fh:
                fh.write(prim.script())
        return kernel


def resolve_out_idx(prim, out_idx: list[int] | None) -> list[int] | None:
    """The output parameters of ``prim``: ``out_idx``, or those its ``T.empty`` tensors declare.

    As ``tilelang.compile`` does, giving both is an error. Indices are checked against the
    parameter count (``-n <= i < n``) and duplicates are rejected.
    """
    attrs = prim.attrs
    if attrs is not None and "tilelang_out_idx" in attrs:
        declared = [int(i) for i in attrs["tilelang_out_idx"]]
        if out_idx is not None:
            raise ValueError("Out index conflict: out_idx is specified and prim_func have returned `T.empty` tensors")
        out_idx = declared
    if out_idx is None:
        return None
    try:
        out_idx = [operator.index(i) for i in out_idx]
    except TypeError:
        raise TypeError(f"out_idx must be an int or a list of ints, got {out_idx!r}") from None
    n = len(prim.params)
    for i in out_idx:
        if not -n <= i < n:
            raise ValueError(f"out_idx {i!r} is out of range for a kernel with {n} parameters "
                             f"(use an index in [{-n}, {n - 1}])")
    if len({i % n for i in out_idx}) != len(out_idx):
        raise ValueError(f"out_idx {out_idx} names the same parameter twice")
    return out_idx


def _not_a_kernel(f: Callable, why: str) -> UnsupportedError:
    return UnsupportedError(
        f"@ascend_backend.jit function '{f.__name__}' did not return a PrimFunc and is not an eager kernel "
        f"either (no T.Tensor-annotated parameters): {why}", hint=_STYLE_HINT)


def _returned_other(f: Callable, value: Any) -> UnsupportedError:
    return UnsupportedError(
        f"@ascend_backend.jit function '{f.__name__}' returned {type(value).__name__}, not a PrimFunc",
        hint=_STYLE_HINT)


class _TileLangFrontend:
    """tilelang's own front end: a ``JITImpl`` made by ``tilelang.jit`` (lazy; nothing is compiled by it).

    It infers the mode (a function returning a PrimFunc is "lazy", a kernel body is "eager"), binds
    the arguments into tilelang's cache key, infers ``T.const`` values from the tensors' shapes and
    builds the TIR. ``out_idx`` is given to it so that eager mode rejects it exactly as tilelang does.
    """

    def __init__(self, f: Callable, options: _Options) -> None:
        import tilelang

        self.f = f
        self.impl = tilelang.jit(f, out_idx=options.out_idx, target=options.target)

    @property
    def mode(self) -> str:
        return self.impl.mode

    def parse_args(self, args: tuple, kwargs: dict) -> tuple[Any, dict]:
        """(cache key, the runtime tensor arguments by name), as ``JITImpl.__call__`` computes them."""
        self.impl.initialize_jit_mode(*args, **kwargs)
        return self.impl.func.parse_args(*args, **kwargs)

    def build(self, args: tuple, kwargs: dict):
        """The PrimFunc for this call: ``JITImpl.get_tir`` with clear errors instead of its bare assert."""
        from tvm import tirx

        mode = self.impl.initialize_jit_mode(*args, **kwargs)
        # tilelang takes a function for an eager kernel whenever calling it does not give a PrimFunc;
        # without T.Tensor-annotated parameters it is most likely a factory returning something else.
        suspect = mode == "eager" and not self.impl.func.tensor_args
        try:
            with quiet_builder():
                prim = self.impl.func(*args, **kwargs)  # JITFunc.get_tir: lazy -> f(...); eager -> traced TIR
        except Exception as exc:
            if suspect:
                raise _not_a_kernel(self.f, f"building it failed with {type(exc).__name__}: {exc}") from exc
            err = translate(exc, f"building '{self.f.__name__}'")  # tilelang's / TVM's -> ours, at the user's line
            if err is None:
                raise
            raise err from exc
        if not isinstance(prim, tirx.PrimFunc):
            raise _returned_other(self.f, prim)
        if suspect and not prim.params:
            raise _not_a_kernel(self.f, "its body builds a kernel without parameters")
        return prim


class _FactoryFrontend:
    """Factory style only, for functions tilelang's front end cannot parse (no source: exec, lambda)."""

    mode = "lazy"

    def __init__(self, f: Callable) -> None:
        self.f = f
        self.signature = inspect.signature(f)

    def parse_args(self, args: tuple, kwargs: dict) -> tuple[Any, dict]:
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple((k, repr(v)) for k, v in bound.arguments.items()), {}

    def build(self, args: tuple, kwargs: dict):
        from tvm import tirx

        with building_kernel():
            prim = self.f(*args, **kwargs)
        if not isinstance(prim, tirx.PrimFunc):
            raise _returned_other(self.f, prim)
        return prim


def _make_wrapper(f: Callable, options: _Options) -> Callable:
    try:
        frontend: _TileLangFrontend | _FactoryFrontend = _TileLangFrontend(f, options)
    except Exception as exc:  # noqa: BLE001 - tilelang's AST front end needs the function's source
        logger.debug("ascend_backend.jit: tilelang cannot parse %s (%s); factory style only", f, exc)
        frontend = _FactoryFrontend(f)
    cache: dict = {}

    def get_kernel(args: tuple, kwargs: dict) -> tuple[AscendKernel, dict]:
        key, tensor_args = frontend.parse_args(args, kwargs)
        kernel = cache.get(key)
        if kernel is None:
            kernel = cache[key] = options.compile(frontend.build(args, kwargs), f.__name__)
        return kernel, tensor_args

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kernel, tensor_args = get_kernel(args, kwargs)
        if frontend.mode == "eager":
            return kernel(*tensor_args.values())
        return kernel

    def compile_only(*args: Any, **kwargs: Any) -> AscendKernel:
        """The compiled kernel for these arguments (cached), without running it, in either style."""
        return get_kernel(args, kwargs)[0]

    def get_tir(*args: Any, **kwargs: Any):
        """The PrimFunc for these arguments (neither cached nor compiled), as ``JITImpl.get_tir``."""
        return frontend.build(args, kwargs)

    def get_kernel_source(*args: Any, **kwargs: Any) -> str:
        return compile_only(*args, **kwargs).kernel_source

    wrapper.cache = cache  # type: ignore[attr-defined]
    wrapper.compile = compile_only  # type: ignore[attr-defined]
    wrapper.get_tir = get_tir  # type: ignore[attr-defined]
    wrapper.get_kernel_source = get_kernel_source  # type: ignore[attr-defined]
    wrapper.jit_impl = getattr(frontend, "impl", None)  # type: ignore[attr-defined]
    wrapper.out_idx = options.out_idx  # type: ignore[attr-defined]
    wrapper.target = options.target  # type: ignore[attr-defined]
    wrapper.runtime = options.runtime  # type: ignore[attr-defined]
    return wrapper
