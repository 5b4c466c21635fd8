"""Print TVM index and scalar expressions as C++ expressions (used by codegen only).

Loads of buffers inside expressions (scalar reads: a local, one element of a UB tile or of a GM
tensor) are printed by the caller's ``load`` function: codegen knows where each buffer lives.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable

from tvm import tirx

from .cnames import c_text
from .errors import UnsupportedError

_BIN = {
    tirx.Add: "+", tirx.Sub: "-", tirx.Mul: "*", tirx.FloorDiv: "/", tirx.FloorMod: "%", tirx.Div: "/", tirx.Mod: "%",
    tirx.LT: "<", tirx.LE: "<=", tirx.GT: ">", tirx.GE: ">=", tirx.EQ: "==", tirx.NE: "!=",
    tirx.And: "&&", tirx.Or: "||",
}
# Scalar math the scalar unit evaluates (float versions of libm).
_MATH = {"exp": "expf", "log": "logf", "sqrt": "sqrtf", "rsqrt": "1.0f / sqrtf", "fabs": "fabsf", "abs": "fabsf",
         "exp2": "exp2f", "log2": "log2f", "tanh": "tanhf", "floor": "floorf", "ceil": "ceilf", "pow": "powf",
         "round": "roundf", "trunc": "truncf", "sigmoid": None}
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "shift_left": "<<", "shift_right": ">>"}

# How the current codegen section prints a BufferLoad (None: loads are not allowed here).
LOAD: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("cexpr_load", default=None)


# How the current codegen section names a TVM Var (codegen's name table; None: its DSL name).
VAR_NAMES: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("cexpr_var_names", default=None)


def cname(var) -> str:
    """A C identifier for a TVM Var: the name codegen's table gives it (the DSL name when safe)."""
    names = VAR_NAMES.get()
    if names is not None and isinstance(var, tirx.Var):
        return names(var)
    name = str(var.name) if hasattr(var, "name") else str(var)
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def _ctype(dtype: str) -> str:
    from .dtypes import dtype as to_dtype
    from .dtypes import known

    return to_dtype(dtype).ctype if known(dtype) else "float"


def cexpr(e) -> str:
    """C++ text of ``e``: integers as int32 arithmetic; floor division on non-negative indices (C's
    ``/`` and ``%`` truncate: TIR's truncdiv / truncmod exactly, floordiv / floormod when >= 0)."""
    if isinstance(e, bool):
        return "true" if e else "false"
    if isinstance(e, int):
        return str(e)
    if isinstance(e, float):
        return float_literal(e)
    if isinstance(e, tirx.IntImm):
        if str(e.dtype) == "bool":
            return "true" if e.value else "false"
        return str(int(e.value))
    if isinstance(e, tirx.FloatImm):
        return float_literal(float(e.value))
    if isinstance(e, tirx.Var):
        return cname(e)
    for cls, op in _BIN.items():
        if isinstance(e, cls):
            return f"({cexpr(e.a)} {op} {cexpr(e.b)})"
    if isinstance(e, tirx.Min):
        return f"min_i({cexpr(e.a)}, {cexpr(e.b)})" if "int" in str(e.dtype) else \
            f"fminf({cexpr(e.a)}, {cexpr(e.b)})"
    if isinstance(e, tirx.Max):
        return f"max_i({cexpr(e.a)}, {cexpr(e.b)})" if "int" in str(e.dtype) else \
            f"fmaxf({cexpr(e.a)}, {cexpr(e.b)})"
    if isinstance(e, tirx.Not):
        return f"(!{cexpr(e.a)})"
    if isinstance(e, tirx.Cast):
        dt = str(e.dtype)
        if "int" in dt:
            return cexpr(e.value)
        return f"({_ctype(dt)})({cexpr(e.value)})"
    if isinstance(e, tirx.Select):
        return f"({cexpr(e.condition)} ? {cexpr(e.true_value)} : {cexpr(e.false_value)})"
    if isinstance(e, tirx.BufferLoad):
        load = LOAD.get()
        if load is None:
            raise UnsupportedError(f"the load {e} cannot be used here")
        return load(e)
    if isinstance(e, tirx.Call):
        return _call(e)
    raise UnsupportedError(f"expression '{e}' cannot be used as an index or scalar here")


def _call(e) -> str:
    name = str(e.op.name).split(".")[-1] if hasattr(e.op, "name") else str(e.op)
    args = list(e.args)
    if name == "if_then_else":
        return f"({cexpr(args[0])} ? {cexpr(args[1])} : {cexpr(args[2])})"
    if name == "infinity":
        return "INFINITY"
    if name in _BITWISE:
        return f"({cexpr(args[0])} {_BITWISE[name]} {cexpr(args[1])})"
    if name == "bitwise_not":
        return f"(~{cexpr(args[0])})"
    if name == "sigmoid":
        return f"(1.0f / (1.0f + expf(-({cexpr(args[0])}))))"
    if name in _MATH and _MATH[name]:
        return f"{_MATH[name]}({', '.join(cexpr(a) for a in args)})"
    raise UnsupportedError(f"the function '{name}' cannot be used in a scalar expression here")


def c_string(text: str) -> str:
    """``text`` as a C++ string literal that holds exactly its characters: cnames.c_text, the one
    escape of user text in the generated code (quotes, backslashes, line breaks and other control
    characters escaped; three-digit octal escapes, which cannot absorb a following digit)."""
    return '"' + c_text(text) + '"'


def float_literal(v: float) -> str:
    if math.isinf(v):
        return "(-INFINITY)" if v < 0 else "INFINITY"
    if math.isnan(v):
        return "NAN"
    r = repr(float(v))
    if "e" not in r and "." not in r:
        r += ".0"
    return f"{r}f"
