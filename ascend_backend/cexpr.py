"""Print TVM index and scalar expressions as C++ expressions."""

from __future__ import annotations

import math

from tvm import tirx

from .errors import UnsupportedError

_BIN = {
    tirx.Add: "+", tirx.Sub: "-", tirx.Mul: "*", tirx.FloorDiv: "/", tirx.FloorMod: "%", tirx.Div: "/",
    tirx.LT: "<", tirx.LE: "<=", tirx.GT: ">", tirx.GE: ">=", tirx.EQ: "==", tirx.NE: "!=",
    tirx.And: "&&", tirx.Or: "||",
}


def cname(var) -> str:
    """A C identifier for a TVM Var (loop variables keep their DSL names)."""
    name = str(var.name) if hasattr(var, "name") else str(var)
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def cexpr(e) -> str:
    """C++ text of ``e``: integers as int32 arithmetic; floor division on non-negative indices."""
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
        return f"min_i({cexpr(e.a)}, {cexpr(e.b)})"
    if isinstance(e, tirx.Max):
        return f"max_i({cexpr(e.a)}, {cexpr(e.b)})"
    if isinstance(e, tirx.Not):
        return f"(!{cexpr(e.a)})"
    if isinstance(e, tirx.Cast):
        return cexpr(e.value) if "int" in str(e.dtype) else f"(float)({cexpr(e.value)})"
    if isinstance(e, tirx.Select):
        return f"({cexpr(e.condition)} ? {cexpr(e.true_value)} : {cexpr(e.false_value)})"
    raise UnsupportedError(f"expression '{e}' cannot be used as an index or scalar here")


def float_literal(v: float) -> str:
    if math.isinf(v):
        return "(-INFINITY)" if v < 0 else "INFINITY"
    if math.isnan(v):
        return "NAN"
    r = repr(float(v))
    if "e" not in r and "." not in r:
        r += ".0"
    return f"{r}f"
