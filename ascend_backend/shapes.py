"""What the callable works out from the arguments of one call: the values of the symbolic
dimensions (read from the tensors' shapes, checked for agreement), the scalar arguments checked
against their dtypes, each launch's block count, the workspace size, and the window checks that
need those values. Every mismatch is one TypeError or ValueError naming the argument and the
dimension.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import tvm
from tvm import tirx

from .dtypes import DType
from .ir import Program, static_int

# numBlocks of an Ascend C kernel launch is in [1, 65535] (guide: SIMD BuiltIn keywords, kernel
# function configuration).
MAX_BLOCKS = 65535


def evaluate(expr, env: dict) -> int:
    """The integer value of ``expr`` with the variables of ``env`` (tvm Var -> int) substituted."""
    v = static_int(expr)
    if v is not None:
        return v
    sub = tirx.stmt_functor.substitute(expr, {k: tirx.const(val, k.dtype) for k, val in env.items()})
    out = tvm.arith.Analyzer().simplify(sub)
    v = static_int(out)
    if v is None:
        raise ValueError(f"cannot evaluate {expr} from the arguments (left with {out})")
    return v


def _dim_text(e) -> str:
    return str(e)


def check_scalar(kernel: str, name: str, dt: DType, value: Any) -> None:
    """A scalar argument must be a number of its dtype's kind within its range (no wrap-around)."""
    if dt.is_int or dt is DType.BOOL:
        if isinstance(value, bool) and dt is not DType.BOOL:
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, numbers.Integral):
            raise TypeError(f"argument '{name}' of kernel '{kernel}' is a scalar of dtype {dt}; got "
                            f"{type(value).__name__} {value!r}")
        lo, hi = dt.int_range
        if not lo <= int(value) <= hi:
            raise ValueError(f"argument '{name}' of kernel '{kernel}' is {dt}, whose range is [{lo}, {hi}]; got "
                             f"{int(value)}, which would wrap around")
        return
    if not isinstance(value, numbers.Real):
        raise TypeError(f"argument '{name}' of kernel '{kernel}' is a scalar of dtype {dt}; got "
                        f"{type(value).__name__} {value!r}")
    import torch

    fmax = torch.finfo(dt.torch_dtype()).max
    if math.isfinite(float(value)) and abs(float(value)) > fmax:
        raise ValueError(f"argument '{name}' of kernel '{kernel}' is {dt}, whose largest finite value is {fmax:g}; "
                         f"got {float(value):g}, which would become infinite")


def bind(program: Program, args: list, runtime: str = "emulator", complete: bool = True) -> dict:
    """Check the arguments of one call (PrimFunc order, outputs included) and return the values of
    the scalar arguments and symbolic dimensions: tvm Var -> int. ``complete``: every symbolic
    dimension must be given (False while only the inputs are known)."""
    import torch

    name = program.name
    env: dict = {}
    origin: dict = {}  # Var -> where its value came from
    dims: list = []  # (param, dimension, symbolic extent, the tensor's extent)
    for p, a in zip(program.params, args, strict=True):
        if p.is_tensor:
            continue
        check_scalar(name, p.name, p.dtype, a)
        if p.var is not None and (p.dtype.is_int or p.dtype is DType.BOOL):
            env[p.var] = int(a)
            origin[p.var] = f"argument '{p.name}'"
    for p, a in zip(program.params, args, strict=True):
        if not p.is_tensor:
            continue
        buf = program.buffer(p.buffer)
        shape_text = "[" + ", ".join(_dim_text(s) for s in buf.shape) + "]"
        if not isinstance(a, torch.Tensor):
            raise TypeError(f"argument '{p.name}' of kernel '{name}' must be a torch tensor of shape {shape_text} and "
                            f"dtype {buf.dtype}; got {type(a).__name__}")
        static_ok = a.dim() == len(buf.shape) and all(
            static_int(s) is None or static_int(s) == g for s, g in zip(buf.shape, a.shape, strict=True))
        if not static_ok or a.dtype != buf.dtype.torch_dtype():
            raise TypeError(f"argument '{p.name}' of kernel '{name}' must have shape {shape_text} and dtype "
                            f"{buf.dtype}; got shape {list(a.shape)} and dtype {a.dtype}")
        for d, (s, got) in enumerate(zip(buf.shape, a.shape, strict=True)):
            if static_int(s) is None:
                dims.append((p, d, s, int(got)))
        if not a.is_contiguous():
            raise TypeError(f"argument '{p.name}' must be contiguous (call .contiguous() first)")
        if runtime != "npu" and a.device.type != "cpu":
            raise TypeError(f"argument '{p.name}' is on {a.device}; the emulator runs on CPU tensors")
    # A variable takes its value from the first dimension that is exactly it, else from one that
    # is linear in it (``batch + 1``); every other dimension is then checked against the values.
    for p, d, s, got in dims:
        if isinstance(s, tirx.Var) and s not in env:
            env[s] = got
            origin[s] = f"argument '{p.name}' dimension {d}"
    for p, d, s, got in dims:
        unknown = [v for v in _vars(s) if v not in env]
        if len(unknown) == 1:
            v = unknown[0]
            a, b = tvm.arith.detect_linear_equation(s, [v])
            a, b = int(a), evaluate(b, env)
            if (got - b) % a:
                raise ValueError(f"argument '{p.name}' of kernel '{name}': dimension {d} is {got}, which {s} cannot "
                                 f"be for any integer {v.name}")
            env[v] = (got - b) // a
            origin[v] = f"argument '{p.name}' dimension {d}"
    for v in program.shape_vars:
        if v.var not in env:
            if not complete:
                continue
            raise ValueError(f"kernel '{name}': no argument gives the symbolic dimension {v.name}")
        lo, hi = v.dtype.int_range
        if not lo <= env[v.var] <= hi:
            raise ValueError(f"kernel '{name}': {v.name} = {env[v.var]} is outside the range of its dtype {v.dtype}")
    for p, d, s, got in dims:
        if not complete and any(v not in env for v in _vars(s)):
            continue
        want = evaluate(s, env)
        if want != got:
            if isinstance(s, tirx.Var):
                raise ValueError(f"argument '{p.name}' of kernel '{name}': dimension {d} is {got}, but {s.name} = "
                                 f"{want} from {origin[s]}")
            deps = ", ".join(f"{v.name} = {env[v]} from {origin[v]}" for v in dict.fromkeys(_vars(s)))
            raise ValueError(f"argument '{p.name}' of kernel '{name}': dimension {d} must be {s} = {want} ({deps}); "
                             f"got {got}")
    return env


def _vars(e) -> list:
    out: list = []
    tirx.stmt_functor.post_order_visit(e, lambda n: out.append(n) if isinstance(n, tirx.Var) else None)
    return out


def output_shape(program: Program, param, env: dict) -> tuple:
    """The shape of an output the callable allocates (out_idx), from the symbolic dimensions the
    inputs gave."""
    buf = program.buffer(param.buffer)
    shape = []
    for d, s in enumerate(buf.shape):
        if static_int(s) is not None:
            shape.append(static_int(s))
            continue
        missing = [v.name for v in _vars(s) if v not in env]
        if missing:
            raise TypeError(f"kernel '{program.name}' cannot allocate its output '{param.name}': dimension {d} is {s}, "
                            f"and no input gives {missing[0]}; pass '{param.name}' yourself")
        shape.append(evaluate(s, env))
    return tuple(shape)


def block_dims(program: Program, env: dict) -> list[int]:
    """Each launch's block count for these arguments (between 0 and MAX_BLOCKS: a grid extent of 0 at
    this call, e.g. T.ceildiv(N, 64) for N = 0, is a launch of no block, which the callable skips)."""
    out = []
    for n, lc in enumerate(program.launches):
        extents = [evaluate(ax.extent, env) for ax in lc.grid]
        total = 1
        for e in extents:
            total *= e
        if min(extents) < 0 or total > MAX_BLOCKS:
            grid = ", ".join(f"{ax.extent} = {e}" if static_int(ax.extent) is None else str(e)
                             for ax, e in zip(lc.grid, extents, strict=True))
            which = f"launch {n} of kernel '{program.name}'" if len(program.launches) > 1 else \
                f"kernel '{program.name}'"
            raise ValueError(f"{which} would run a grid of ({grid}), {total} blocks, for these arguments; a launch has "
                             f"1 to {MAX_BLOCKS} blocks (or none: an extent of 0 skips the launch)")
        out.append(total)
    return out


def workspace_bytes(program: Program, env: dict) -> int:
    ws = program.workspace_bytes
    return evaluate(ws, env) if static_int(ws) is None else ws


def run_bounds_checks(program: Program, env: dict) -> None:
    """The checks that needed the symbolic dimensions, with this call's values: a window that would
    start before or past its tensor (bounds.BoundsCheck), a gemm's symbolic K that is not a multiple
    of its fractal width (bounds.MultipleCheck): a ValueError naming the line."""
    from .bounds import Fit, MultipleCheck, fit

    if not program.bounds_checks:
        return
    sub = {k: tirx.const(v, k.dtype) for k, v in env.items()}
    for c in program.bounds_checks:
        if isinstance(c, MultipleCheck):
            n = evaluate(c.size, env)
            if n % c.unit:
                where = f"{c.loc}: " if c.loc else ""
                raise ValueError(f"{where}{c.what} is {n} for these arguments, not a multiple of {c.unit}: the Cube "
                                 f"core takes whole fractals along K (hint: {c.hint})")
            continue
        base = tirx.stmt_functor.substitute(c.base, sub)
        size = evaluate(c.size, env)
        v = fit(c.ranges.substitute(sub), base, c.extent, size)
        where = f"{c.loc}: " if c.loc else ""
        values = ", ".join(f"{k.name} = {val}" for k, val in env.items())
        if v.fit is Fit.OUTSIDE:
            raise ValueError(f"{where}the T.copy window {c.window} would lie outside '{c.tensor}' for these arguments "
                             f"({values}): dimension {c.dim} has {size} elements and the window can start at {v.hi}")
        if v.fit is Fit.NEGATIVE:
            raise ValueError(f"{where}the T.copy window {c.window} would start at {v.lo} in dimension {c.dim} of "
                             f"'{c.tensor}' for these arguments ({values})")


__all__ = ["MAX_BLOCKS", "bind", "block_dims", "check_scalar", "evaluate", "output_shape", "run_bounds_checks",
           "workspace_bytes"]
