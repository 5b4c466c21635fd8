"""Where a copy window lies in its tensor: inside, across the end (a runtime tail), past the end,
before the start, or unknown (its start comes from data). Used by the frontend's checks (an error
at the DSL line, or a check the callable runs once the symbolic dimensions are known) and by
lower_tile_ops (which windows need a runtime valid extent).

The ranges of the block indices, loop variables and the conditions of enclosing ``if``s come from
the statements around the copy (``Ranges``); TVM's arithmetic analyzer bounds the start.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import tvm
from tvm import tirx

from .ir.nodes import static_int


class Fit(enum.Enum):
    INSIDE = "inside"  # every start + extent <= size
    TAIL = "tail"  # every start < size, some start + extent > size: a runtime valid extent
    OUTSIDE = "outside"  # some start >= size: the window lies past the end for some block/iteration
    NEGATIVE = "negative"  # some start < 0
    UNKNOWN = "unknown"  # cannot tell at compile time (a start read from memory, a symbolic size)


@dataclass
class Ranges:
    """The variables in scope with their ranges ``(var, min, extent)`` and the conditions of the
    enclosing ``if``s."""

    vars: list = field(default_factory=list)
    conds: list = field(default_factory=list)

    def copy(self) -> Ranges:
        return Ranges(list(self.vars), list(self.conds))

    def with_var(self, var, lo, extent) -> Ranges:
        out = self.copy()
        out.vars.append((var, lo, extent))
        return out

    def with_cond(self, cond) -> Ranges:
        out = self.copy()
        out.conds.append(cond)
        return out

    def substitute(self, env: dict) -> Ranges:
        """The ranges with the variables of ``env`` (shape variables, scalar arguments) replaced by
        their values."""
        an = tvm.arith.Analyzer()

        def sub(e):
            return an.simplify(tirx.stmt_functor.substitute(e, env)) if isinstance(e, tirx.PrimExpr) else e

        return Ranges([(v, sub(lo), sub(n)) for v, lo, n in self.vars], [sub(c) for c in self.conds])

    def analyzer(self) -> tvm.arith.Analyzer:
        an = tvm.arith.Analyzer()
        for v, lo, n in self.vars:
            if v is None or lo is None or n is None:  # no range known (a while loop)
                continue
            lo_i, n_i = static_int(lo), static_int(n)
            if lo_i is not None and n_i is not None and n_i < 1:
                continue  # an empty loop: its body never runs
            an.bind(v, tvm.ir.Range.from_min_extent(_expr(lo), _expr(n)))
        return an

    def empty(self) -> bool:
        """Some enclosing loop runs zero times (its extent is a constant below 1): what it holds never runs."""
        return any(n is not None and static_int(n) is not None and static_int(n) < 1 for _v, _lo, n in self.vars)

    def static_vars(self) -> set:
        """The variables whose range is a constant."""
        return {v for v, lo, n in self.vars if static_int(lo) is not None and static_int(n) is not None}


def _expr(x):
    return tirx.IntImm("int32", x) if isinstance(x, int) else x


def free_vars(e) -> list:
    out: list = []
    loads: list = []

    def visit(n):
        if isinstance(n, tirx.Var) and not any(n.same_as(v) for v in out):
            out.append(n)
        elif isinstance(n, tirx.BufferLoad):
            loads.append(n)

    if isinstance(e, tirx.PrimExpr):
        tirx.stmt_functor.post_order_visit(e, visit)
    return out + loads


@dataclass(frozen=True)
class Verdict:
    fit: Fit
    lo: int | None = None  # the least start (when known)
    hi: int | None = None  # the largest start (when known)


def fit(ranges: Ranges, base, n: int, size) -> Verdict:
    """Where the window [base, base + n) lies in a dimension of ``size`` elements (inside when a loop
    around it runs zero times: the copy never runs, wherever its start would be)."""
    if ranges.empty():
        return Verdict(Fit.INSIDE)
    if static_int(base) is not None and static_int(size) is not None:
        b, s = static_int(base), static_int(size)
        return Verdict(_classify(b, b, n, s), b, b)
    an = ranges.analyzer()
    bounded = ranges.static_vars()
    deps = free_vars(base)
    known = all(isinstance(v, tirx.Var) and v in bounded for v in deps)
    with _constraints(an, ranges.conds):
        if known:
            bd = an.const_int_bound(_expr(base))
            lo, hi = int(bd.min_value), int(bd.max_value)
            if static_int(size) is not None:
                f = _classify(lo, hi, n, static_int(size))
                # The bound of the start alone may be loose under the ifs' conditions (bx * 64 < 256
                # bounds it by 255, not 192): ask the analyzer before calling a window crossing or outside.
                if f in (Fit.TAIL, Fit.OUTSIDE) and an.can_prove(_expr(base) + n <= size):
                    f = Fit.INSIDE
                elif f is Fit.OUTSIDE and an.can_prove(_expr(base) < size):
                    f = Fit.TAIL
                return Verdict(f, lo, hi)
            if lo < 0:
                return Verdict(Fit.NEGATIVE, lo, hi)
        else:
            lo = hi = None
        if static_int(size) is None or known:
            if an.can_prove(_expr(base) + n <= size):
                return Verdict(Fit.INSIDE, lo, hi)
            if an.can_prove(_expr(base) < size) and (known or an.can_prove(_expr(base) >= 0)):
                return Verdict(Fit.TAIL, lo, hi)
    return Verdict(Fit.UNKNOWN, lo, hi)


def _classify(lo: int, hi: int, n: int, size: int) -> Fit:
    if lo < 0:
        return Fit.NEGATIVE
    if hi + n <= size:
        return Fit.INSIDE
    if hi >= size:
        return Fit.OUTSIDE
    return Fit.TAIL


class _constraints:
    """Enter the conditions of the enclosing ifs as analyzer constraints."""

    def __init__(self, an, conds) -> None:
        self.scopes = [an.constraint_scope(c) for c in conds if _usable_cond(c)]

    def __enter__(self):
        for s in self.scopes:
            s.__enter__()
        return self

    def __exit__(self, *exc):
        for s in reversed(self.scopes):
            s.__exit__(*exc)
        return False


def _usable_cond(c) -> bool:
    """A condition the analyzer may assume: integer comparisons, without loads from memory."""
    return isinstance(c, tirx.PrimExpr) and str(c.dtype) == "bool" and not any(
        isinstance(x, tirx.BufferLoad) for x in free_vars(c))


@dataclass(frozen=True)
class BoundsCheck:
    """A window whose fit depends on the symbolic dimensions: the callable evaluates it with the
    values of each call (``ranges`` are the variables around the copy)."""

    tensor: str
    dim: int
    base: Any
    extent: int
    size: Any
    ranges: Ranges
    loc: Any
    window: str  # the window as the DSL wrote it, for the message


@dataclass(frozen=True, eq=False)
class MultipleCheck:
    """A symbolic size the compiled code needs to be a multiple of ``unit`` (a gemm's K, whose
    runtime tail the Cube takes only in whole fractals): the callable evaluates it with the values
    of each call."""

    size: Any
    unit: int
    what: str  # what the size is, for the message ("the reduction dimension K = k of the gemm")
    loc: Any
    hint: str


__all__ = ["Fit", "Ranges", "Verdict", "fit", "free_vars", "BoundsCheck", "MultipleCheck"]
