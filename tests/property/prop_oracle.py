"""The oracle of the property tier: interval arithmetic over float64 with the rounding the compiler
and the emulator document (docs/supported.md, docs/emulator-ops.md).

Every value of an expression is an interval [lo, hi] that must contain the kernel's result, plus
whether the result may be, or must be, NaN, and (for an exact zero) its sign. Each operation takes
the exact float64 image of its operands' intervals and widens it by the rounding of the dtype it
is computed in: float16 rounds after every instruction, float32 too, bfloat16 is widened to
float32 for arithmetic and rounded once at the end (on dav-3510 its + - * max min of bfloat16
values round after every instruction, as float16 does: `evaluate_tir`). Widening uses a relative
bound of a few units in the last place (enough for a division done as a reciprocal and a
multiply, or a transcendental within 1-2 ulps of libm) plus one subnormal step, and a result
beyond the largest finite value may be infinite. No order of evaluation and no particular libm is assumed, so a result outside its
interval is a real error: a wrong operand, a tail read from garbage, a lost NaN or infinity, an
extra rounding, a wrong sign of zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
#: significand bits (with the implicit one)
PRECISION = {"float16": 11, "bfloat16": 8, "float32": 24}


def finfo(dtype: str) -> torch.finfo:
    return torch.finfo(TORCH[dtype])


def min_subnormal(dtype: str) -> float:
    fi = finfo(dtype)
    return float(fi.smallest_normal) * 2.0 ** (1 - PRECISION[dtype])


@dataclass
class Iv:
    """Per-element interval of a kernel value (numpy float64 arrays, broadcastable)."""

    lo: np.ndarray
    hi: np.ndarray
    may_nan: np.ndarray
    must_nan: np.ndarray
    zsign: np.ndarray  # +1 / -1: the value is exactly this signed zero; 0: not known or not zero

    @staticmethod
    def exact(x: np.ndarray) -> Iv:
        x = np.asarray(x, dtype=np.float64)
        nan = np.isnan(x)
        zs = np.where(x == 0, np.where(np.signbit(x), -1, 1), 0).astype(np.int8)
        return Iv(np.where(nan, -np.inf, x), np.where(nan, np.inf, x), nan, nan, zs)


def _nonan(a: np.ndarray, fill: float) -> np.ndarray:
    return np.where(np.isnan(a), fill, a)


def round_to(iv: Iv, dtype: str, ulps: float = 2.0, absolute: float = 0.0) -> Iv:
    """Widen ``iv`` by the rounding of one operation computed in ``dtype`` (``ulps`` units of
    2**-p relative, one subnormal step, ``absolute`` more) and let values beyond the largest finite
    number become infinite, as round-to-nearest does."""
    u = ulps * 2.0 ** -PRECISION[dtype]
    eta = min_subnormal(dtype) + absolute
    big = float(finfo(dtype).max)
    lo, hi = iv.lo, iv.hi
    with np.errstate(invalid="ignore", over="ignore"):
        # an exact zero stays an exact zero: no rounding error comes from nothing
        point_zero = (lo == 0) & (hi == 0) & (absolute == 0)
        nlo = np.where(np.isfinite(lo), lo - np.abs(lo) * u - eta, lo)
        nhi = np.where(np.isfinite(hi), hi + np.abs(hi) * u + eta, hi)
        nlo = np.where(point_zero, 0.0, nlo)
        nhi = np.where(point_zero, 0.0, nhi)
        # overflow: past max the rounded value may be inf; far past (one ulp) it must be
        over = big * (1 + 2.0 ** -PRECISION[dtype])
        nhi = np.where(nhi > big, np.inf, nhi)
        nlo = np.where(nlo < -big, -np.inf, nlo)
        nlo = np.where(iv.lo > over, np.inf, nlo)
        nhi = np.where(iv.hi < -over, -np.inf, nhi)
    zs = np.where(point_zero, iv.zsign, 0).astype(np.int8)
    return Iv(nlo, nhi, iv.may_nan, iv.must_nan, zs)


def _combine_nan(*ivs: Iv) -> tuple[np.ndarray, np.ndarray]:
    may = np.zeros((), dtype=bool)
    must = np.zeros((), dtype=bool)
    for v in ivs:
        may = may | v.may_nan
        must = must | v.must_nan
    return may, must


def _hull(cands: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, any NaN among the candidates): the hull of endpoint combinations."""
    stack = np.stack(np.broadcast_arrays(*cands))
    nan = np.isnan(stack).any(axis=0)
    lo = np.min(_nonan(stack, np.inf), axis=0)
    hi = np.max(_nonan(stack, -np.inf), axis=0)
    return lo, hi, nan


def add(a: Iv, b: Iv) -> Iv:
    may, must = _combine_nan(a, b)
    with np.errstate(invalid="ignore"):
        lo, hi = a.lo + b.lo, a.hi + b.hi
        inf_clash = ((a.lo == -np.inf) & (b.hi == np.inf)) | ((a.hi == np.inf) & (b.lo == -np.inf))
    lo = np.where(np.isnan(lo) | inf_clash, -np.inf, lo)
    hi = np.where(np.isnan(hi) | inf_clash, np.inf, hi)
    # signed zeros: (+0)+(+0)=+0, (-0)+(-0)=-0, (+0)+(-0)=+0 in round-to-nearest
    zs = np.where((a.zsign != 0) & (b.zsign != 0), np.where((a.zsign < 0) & (b.zsign < 0), -1, 1), 0)
    return Iv(lo, hi, may | inf_clash, must, zs.astype(np.int8))


def neg(a: Iv) -> Iv:
    return Iv(-a.hi, -a.lo, a.may_nan, a.must_nan, (-a.zsign).astype(np.int8))


def sub(a: Iv, b: Iv) -> Iv:
    return add(a, neg(b))


def _sign_of_product(a: Iv, b: Iv) -> np.ndarray:
    """The sign of a product/quotient that is an exact zero: known when both operands' signs are."""
    sa = np.where(a.zsign != 0, a.zsign, np.where(a.lo > 0, 1, np.where(a.hi < 0, -1, 0)))
    sb = np.where(b.zsign != 0, b.zsign, np.where(b.lo > 0, 1, np.where(b.hi < 0, -1, 0)))
    return np.where((sa != 0) & (sb != 0), sa * sb, 0).astype(np.int8)


def _has_zero(a: Iv) -> np.ndarray:
    return (a.lo <= 0) & (a.hi >= 0)


def _has_inf(a: Iv) -> np.ndarray:
    return np.isinf(a.lo) | np.isinf(a.hi)


def mul(a: Iv, b: Iv) -> Iv:
    may, must = _combine_nan(a, b)
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi, nan = _hull([a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi])
    # 0 * inf somewhere in the box (not only at its corners: [-1e-9, 1e-9] holds 0)
    zero_times_inf = nan | (_has_zero(a) & _has_inf(b)) | (_has_inf(a) & _has_zero(b))
    lo = np.where(zero_times_inf, -np.inf, lo)
    hi = np.where(zero_times_inf, np.inf, hi)
    is_zero = (lo == 0) & (hi == 0)
    zs = np.where(is_zero, _sign_of_product(a, b), 0).astype(np.int8)
    return Iv(lo, hi, may | zero_times_inf, must, zs)


def div(a: Iv, b: Iv) -> Iv:
    may, must = _combine_nan(a, b)
    b_has_zero = (b.lo <= 0) & (b.hi >= 0)
    a_has_zero = (a.lo <= 0) & (a.hi >= 0)
    a_has_inf = np.isinf(a.lo) | np.isinf(a.hi)
    b_has_inf = np.isinf(b.lo) | np.isinf(b.hi)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        lo, hi, nan = _hull([a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi])
    # a divisor interval that holds 0: any value (x/0 = +-inf; the sign of the zero decides)
    lo = np.where(b_has_zero | nan, -np.inf, lo)
    hi = np.where(b_has_zero | nan, np.inf, hi)
    nan_possible = nan | (b_has_zero & a_has_zero) | (a_has_inf & b_has_inf)
    is_zero = (lo == 0) & (hi == 0)
    zs = np.where(is_zero, _sign_of_product(a, b), 0).astype(np.int8)
    return Iv(lo, hi, may | nan_possible, must, zs)


def maximum(a: Iv, b: Iv) -> Iv:
    may, must = _combine_nan(a, b)  # NaN propagates through Max/Min (docs/emulator-ops.md), as in torch
    return Iv(np.maximum(a.lo, b.lo), np.maximum(a.hi, b.hi), may, must, np.zeros((), np.int8))


def minimum(a: Iv, b: Iv) -> Iv:
    may, must = _combine_nan(a, b)
    return Iv(np.minimum(a.lo, b.lo), np.minimum(a.hi, b.hi), may, must, np.zeros((), np.int8))


def absolute(a: Iv) -> Iv:
    lo = np.where(a.lo >= 0, a.lo, np.where(a.hi <= 0, -a.hi, 0.0))
    hi = np.maximum(np.abs(a.lo), np.abs(a.hi))
    zs = np.where(a.zsign != 0, 1, 0).astype(np.int8)  # |(-0)| = +0
    return Iv(lo, hi, a.may_nan, a.must_nan, zs)


def _monotone(a: Iv, f, increasing: bool = True) -> Iv:
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        flo, fhi = f(a.lo), f(a.hi)
    lo, hi = (flo, fhi) if increasing else (fhi, flo)
    return Iv(_nonan(lo, -np.inf), _nonan(hi, np.inf), a.may_nan, a.must_nan, np.zeros((), np.int8))


def exp(a: Iv) -> Iv:
    return _monotone(a, np.exp)


def exp2(a: Iv) -> Iv:
    return _monotone(a, np.exp2)


def _log_like(a: Iv, f) -> Iv:
    r = _monotone(Iv(np.maximum(a.lo, 0.0), np.maximum(a.hi, 0.0), a.may_nan, a.must_nan, a.zsign), f)
    neg_part = a.lo < 0
    all_neg = a.hi < 0
    return Iv(r.lo, r.hi, a.may_nan | neg_part, a.must_nan | all_neg, r.zsign)


def log(a: Iv) -> Iv:
    return _log_like(a, np.log)


def log2(a: Iv) -> Iv:
    return _log_like(a, np.log2)


def sqrt(a: Iv) -> Iv:
    r = _log_like(a, np.sqrt)
    zs = np.where((a.zsign != 0), a.zsign, 0).astype(np.int8)  # sqrt(-0) = -0
    lo = np.where(a.zsign < 0, -0.0, r.lo)
    return Iv(lo, r.hi, r.may_nan, r.must_nan, zs)


def rsqrt(a: Iv) -> Iv:
    has_zero = (a.lo <= 0) & (a.hi >= 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = 1.0 / np.sqrt(np.maximum(a.hi, 0.0))
        hi = 1.0 / np.sqrt(np.maximum(a.lo, 0.0))
    lo = np.where(has_zero, -np.inf, _nonan(lo, -np.inf))  # rsqrt(-0) may be -inf
    hi = _nonan(hi, np.inf)
    return Iv(lo, hi, a.may_nan | (a.lo < 0), a.must_nan | (a.hi < 0), np.zeros((), np.int8))


def tanh(a: Iv) -> Iv:
    return _monotone(a, np.tanh)


def sigmoid(a: Iv) -> Iv:
    with np.errstate(over="ignore"):
        return _monotone(a, lambda x: 1.0 / (1.0 + np.exp(-x)))


# name -> (interval function, ulps of its rounding, absolute widening in units of 2**-p)
BINARY = {"+": (add, 2.0), "-": (sub, 2.0), "*": (mul, 2.0), "/": (div, 4.0), "max": (maximum, 0.0),
          "min": (minimum, 0.0)}
UNARY = {"neg": (neg, 0.0, 0.0), "abs": (absolute, 0.0, 0.0), "exp": (exp, 4.0, 0.0), "exp2": (exp2, 4.0, 0.0),
         "log": (log, 4.0, 0.0), "log2": (log2, 6.0, 0.0), "sqrt": (sqrt, 2.0, 0.0), "rsqrt": (rsqrt, 6.0, 0.0),
         # composed from Exp, Adds, Muls, Reciprocal: several roundings, bounded results
         "tanh": (tanh, 8.0, 8.0), "sigmoid": (sigmoid, 8.0, 8.0)}


def evaluate(tree, leaves: dict[str, np.ndarray], dtype: str) -> Iv:
    """The interval of ``tree`` (see test_prop_elementwise: ("a",), ("c", 2.0), ("+", x, y), ("exp", x))
    computed in ``dtype``'s working precision, then rounded to ``dtype``."""
    work = "float32" if dtype == "bfloat16" else dtype

    def go(t) -> Iv:
        kind = t[0]
        if kind == "c":
            return Iv.exact(np.asarray(t[1], dtype=np.float64))
        if kind in leaves:
            return Iv.exact(leaves[kind])
        if kind in BINARY:
            fn, ulps = BINARY[kind]
            r = fn(go(t[1]), go(t[2]))
            return round_to(r, work, ulps) if ulps else r
        return _unary(kind, go(t[1]), work)

    out = go(tree)
    return round_to(out, dtype, 1.0) if work != dtype else out


_TIR_BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Max": "max", "Min": "min"}
_TIR_CALL = {"tirx.exp": "exp", "tirx.exp2": "exp2", "tirx.log": "log", "tirx.log2": "log2", "tirx.sqrt": "sqrt",
             "tirx.rsqrt": "rsqrt", "tirx.fabs": "abs", "tirx.tanh": "tanh", "tirx.sigmoid": "sigmoid"}


def evaluate_tir(expr, leaves: dict[str, np.ndarray], out_dtype: str, arch: str) -> Iv:
    """The interval of a TIR expression as the kernel computes it, with the semantics the compiler
    documents for TIR (docs/supported.md): every node is computed in its own dtype and rounded to it
    (float16 and float32); a bfloat16 node is computed in float32, except on dav-3510 a + - * max
    min whose operands are bfloat16 values (tiles, constants, casts to bfloat16, such nodes), which
    is computed in bfloat16; a Cast rounds to its dtype; the store rounds to ``out_dtype``.
    ``leaves`` maps a tile's name to its values.

    The oracle reads the TIR rather than the expression the test wrote because tilelang decides
    dtypes while it builds the kernel: `2.0 / x` on a float16 x is a float32 division
    (`Cast("float16", 2.0f / Cast("float32", x))`), and some float16 math is promoted to float32
    (`T.log(x + 100.0)` becomes `Cast("float16", log(Cast("float32", x) + 100f))`)."""
    from tvm import tirx

    native = "bfloat16" if arch == "dav-3510" else None

    def work(dt: str) -> str:
        return "float32" if dt == "bfloat16" else dt

    def go(e) -> tuple[Iv, str]:
        """The value's interval and the dtype the kernel holds it in."""
        dt = str(e.dtype)
        if isinstance(e, tirx.FloatImm | tirx.IntImm):
            return Iv.exact(np.asarray(float(e.value), dtype=np.float64)), dt
        if isinstance(e, tirx.BufferLoad):
            return Iv.exact(leaves[str(e.buffer.name)]), dt
        if isinstance(e, tirx.Cast):
            inner, held = go(e.value)
            return (round_to(inner, dt, 1.0) if dt != held else inner), dt
        name = type(e).__name__
        if name in _TIR_BINARY:
            fn, ulps = BINARY[_TIR_BINARY[name]]
            (a, ha), (b, hb) = go(e.a), go(e.b)
            held = dt if dt == native and ha == hb == dt and name != "Div" else work(dt)
            r = fn(a, b)
            return (round_to(r, held, ulps) if ulps else r), held
        if isinstance(e, tirx.Call) and str(e.op.name) in _TIR_CALL:
            kind = _TIR_CALL[str(e.op.name)]
            return _unary(kind, go(e.args[0])[0], work(dt)), work(dt)
        raise NotImplementedError(f"the oracle has no rule for {name}: {e}")

    out, held = go(expr)
    return round_to(out, out_dtype, 1.0) if out_dtype != held else out


def _unary(kind: str, arg: Iv, work: str) -> Iv:
    fn, ulps, absu = UNARY[kind]
    if kind == "exp2":
        # 2^x is computed as e^(x * ln 2) with ln 2 a constant of the working dtype
        # (docs/supported.md): the roundings of ln 2 and of the product are errors of the
        # exponent, relative |x| * 2^-p and more in the result (float16: ln 2 = 0.69336)
        ln2 = float(torch.tensor(math.log(2.0), dtype=torch.float64).to(TORCH[work]))
        arg = round_to(mul(arg, Iv.exact(np.asarray(ln2))), work, 2.0)
        fn = exp
    r = fn(arg)
    return round_to(r, work, ulps, absu * 2.0 ** -PRECISION[work]) if ulps else r


def violations(got: torch.Tensor, iv: Iv) -> np.ndarray:
    """Boolean mask of the elements of ``got`` that ``iv`` does not allow."""
    g = got.detach().to(torch.float64).numpy()
    shape = np.broadcast_shapes(g.shape, iv.lo.shape)
    lo, hi = np.broadcast_to(iv.lo, shape), np.broadcast_to(iv.hi, shape)
    may, must = np.broadcast_to(iv.may_nan, shape), np.broadcast_to(iv.must_nan, shape)
    zs = np.broadcast_to(iv.zsign, shape)
    g = np.broadcast_to(g, shape)
    nan = np.isnan(g)
    inside = (g >= lo) & (g <= hi)
    ok = np.where(must, nan, np.where(nan, may, inside))
    zero_ok = np.where((zs != 0) & ~must & (lo == 0) & (hi == 0),
                       (g == 0) & (np.signbit(g) == (zs < 0)), True)
    return ~(ok & zero_ok)


def describe(got: torch.Tensor, iv: Iv, bad: np.ndarray, inputs: dict[str, np.ndarray], limit: int = 6) -> str:
    """The first mismatching elements: index, inputs, the value and the interval allowed."""
    lines = []
    shape = bad.shape
    g = np.broadcast_to(got.detach().to(torch.float64).numpy(), shape)
    for flat in np.flatnonzero(bad)[:limit]:
        idx = np.unravel_index(flat, shape)
        ins = ", ".join(f"{k}={float(np.broadcast_to(v, shape)[idx])!r}" for k, v in inputs.items())
        lo = float(np.broadcast_to(iv.lo, shape)[idx])
        hi = float(np.broadcast_to(iv.hi, shape)[idx])
        nan = "NaN" if np.broadcast_to(iv.must_nan, shape)[idx] else (
            "or NaN" if np.broadcast_to(iv.may_nan, shape)[idx] else "")
        zs = int(np.broadcast_to(iv.zsign, shape)[idx])
        sign = {1: " (+0.0)", -1: " (-0.0)"}.get(zs, "") if lo == hi == 0 else ""
        lines.append(f"  at {tuple(int(i) for i in idx)}: got {float(g[idx])!r}, allowed [{lo!r}, {hi!r}]{sign} "
                     f"{nan}; inputs {ins}")
    return f"{int(bad.sum())} of {bad.size} elements outside the interval:\n" + "\n".join(lines)


# -- input values -------------------------------------------------------------------------------
def specials(dtype: str) -> list[float]:
    fi = finfo(dtype)
    big, tiny = float(fi.max), float(fi.smallest_normal)
    return [math.nan, math.inf, -math.inf, 0.0, -0.0, big, -big, big / 2, -big / 3, tiny, -tiny,
            min_subnormal(dtype), 1.0, -1.0]


def make_values(shape: tuple[int, ...], dtype: str, seed: int, scale: float, p_special: float,
                kinds: list[float] | None = None) -> torch.Tensor:
    """Random values of ``dtype``: normal * scale, with a fraction ``p_special`` replaced by values
    from ``kinds`` (default: every special value of the dtype)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * scale
    pool = torch.tensor(kinds if kinds is not None else specials(dtype), dtype=torch.float64)
    if p_special > 0 and len(pool):
        pick = torch.rand(shape, generator=g, dtype=torch.float64) < p_special
        which = torch.randint(0, len(pool), shape, generator=g)
        x = torch.where(pick, pool[which], x)
    return x.to(TORCH[dtype])


def as_float64(t: torch.Tensor) -> np.ndarray:
    return t.to(torch.float64).numpy()
