"""``ascend_backend.jit``: a drop-in for ``tilelang.jit`` on the ascendc target.

tilelang 0.1.15 builds its JIT kernels through a fixed chain of execution adapters (tvm_ffi,
cython, nvrtc, torch, cutedsl) chosen in tilelang/jit/kernel.py and tilelang/cache; there is no
public hook to add one, so ``@tilelang.jit(target="ascendc")`` cannot be made to work without
patching tilelang's private tables. This decorator has the same call signature instead.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .errors import UnsupportedError
from .kernel import AscendKernel, compile


def jit(func: Callable | None = None, *, out_idx: Sequence[int] | int | None = None, target: Any = "ascendc",
        runtime: str = "auto", strict: bool = True, **_ignored: Any):
    """Drop-in for ``tilelang.jit`` on the ascendc target.

    Decorates a kernel factory (a function returning a PrimFunc, called with the shape
    arguments) or a PrimFunc itself. Each distinct argument tuple compiles once.
    """
    def wrap(f):
        from tvm import tirx

        if isinstance(f, tirx.PrimFunc):
            return compile(f, target=target, runtime=runtime, out_idx=out_idx, strict=strict)

        cache: dict = {}

        @functools.wraps(f)
        def factory(*args: Any, **kwargs: Any) -> AscendKernel:
            sig = inspect.signature(f).bind(*args, **kwargs)
            sig.apply_defaults()
            key = tuple(sorted((k, repr(v)) for k, v in sig.arguments.items()))
            if key not in cache:
                prim = f(*args, **kwargs)
                if not isinstance(prim, tirx.PrimFunc):
                    raise UnsupportedError(
                        f"@ascend_backend.jit function '{f.__name__}' returned {type(prim).__name__}, not a PrimFunc",
                        hint="return the @T.prim_func kernel from the decorated function")
                cache[key] = compile(prim, target=target, runtime=runtime, out_idx=out_idx, strict=strict)
            return cache[key]

        factory.cache = cache  # type: ignore[attr-defined]
        return factory

    return wrap(func) if func is not None else wrap
