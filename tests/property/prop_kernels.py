"""Kernels and checks of the property tier, shared by the hypothesis tests and the regression tests
they leave behind (a failing example becomes a plain call of one of the ``check_*`` functions).

An elementwise example is an expression tree of tuples, pasteable as Python:

    ("a",) ("b",)   element [i, j] of the tiles A, B          (M x N inputs)
    ("r",)          the per-row value R[i]                     (an M vector)
    ("w",)          the per-column value W[j]                  (an N vector)
    ("c", 2.5)      a constant (exact in the dtype)
    ("+", x, y) ("-", x, y) ("*", x, y) ("/", x, y) ("max", x, y) ("min", x, y)
    ("neg", x) ("abs", x) ("exp", x) ("exp2", x) ("log", x) ("log2", x) ("sqrt", x) ("rsqrt", x)
    ("tanh", x) ("sigmoid", x)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import prop_oracle as orc
import tilelang.language as T
import torch

import ascend_backend

_T_BINARY = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y, "/": lambda x, y: x / y,
             "max": T.max, "min": T.min}
_T_UNARY = {"neg": lambda x: -x, "abs": T.abs, "exp": T.exp, "exp2": T.exp2, "log": T.log, "log2": T.log2,
            "sqrt": T.sqrt, "rsqrt": T.rsqrt, "tanh": T.tanh, "sigmoid": T.sigmoid}
_PY_BINARY = {"+": "{} + {}", "-": "{} - {}", "*": "{} * {}", "/": "{} / {}", "max": "T.max({}, {})",
              "min": "T.min({}, {})"}


def to_dsl(tree) -> str:
    """The tree as the DSL line a user would write (for failure messages)."""
    k = tree[0]
    if k == "c":
        return repr(tree[1])
    if k in ("a", "b"):
        return f"{k}[i, j]"
    if k == "r":
        return "r[i]"
    if k == "w":
        return "w[j]"
    if k in _PY_BINARY:
        return "(" + _PY_BINARY[k].format(to_dsl(tree[1]), to_dsl(tree[2])) + ")"
    return "-" + to_dsl(tree[1]) if k == "neg" else f"T.{k}({to_dsl(tree[1])})"


def leaves_of(tree) -> set[str]:
    if tree[0] == "c":
        return set()
    if len(tree) == 1:
        return {tree[0]}
    return set().union(*(leaves_of(t) for t in tree[1:] if isinstance(t, tuple)))


def _build(tree, env):
    k = tree[0]
    if k == "c":
        return float(tree[1])
    if len(tree) == 1:
        return env[k]
    if k in _T_BINARY:
        return _T_BINARY[k](_build(tree[1], env), _build(tree[2], env))
    return _T_UNARY[k](_build(tree[1], env))


def elementwise_kernel(tree, dtype: str, M: int, N: int, bM: int, bN: int):
    """C[i, j] = tree over A, B (tiles), R (per row), W (per column), all of ``dtype``."""
    used = leaves_of(tree)

    @T.prim_func
    def prop_ew(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), R: T.Tensor((M,), dtype),
                W: T.Tensor((N,), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            a_t = T.alloc_fragment((bM, bN), dtype)
            b_t = T.alloc_fragment((bM, bN), dtype)
            r_t = T.alloc_fragment((bM,), dtype)
            w_t = T.alloc_fragment((bN,), dtype)
            c_t = T.alloc_fragment((bM, bN), dtype)
            if "a" in used:
                T.copy(A[by * bM, bx * bN], a_t)
            if "b" in used:
                T.copy(B[by * bM, bx * bN], b_t)
            if "r" in used:
                T.copy(R[by * bM], r_t)
            if "w" in used:
                T.copy(W[bx * bN], w_t)
            for i, j in T.Parallel(bM, bN):
                c_t[i, j] = _build(tree, {"a": a_t[i, j], "b": b_t[i, j], "r": r_t[i], "w": w_t[j]})
            T.copy(c_t, C[by * bM, bx * bN])

    return prop_ew


def stored_value(func):
    """The value the kernel's T.Parallel stores into its output tile, as tilelang built it (the
    oracle evaluates this TIR: tilelang, not the test, decides the dtype of each operation)."""
    from tvm import tirx

    found = []
    tirx.stmt_functor.post_order_visit(
        func.body, lambda n: found.append(n.value) if isinstance(n, tirx.BufferStore) and n.buffer.name == "c_t" else None)
    return found[0]


@dataclass(frozen=True)
class Data:
    """How one set of input values is drawn (orc.make_values)."""

    seed: int
    scale: float = 1.0
    p_special: float = 0.0


def _compile(func, arch: str):
    return ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True)


def check_elementwise(tree, dtype: str, arch: str, M: int, N: int, bM: int, bN: int, data: list[Data]) -> None:
    """Compile ``tree`` as a kernel, run it on each data set and check every element against the
    oracle's interval for the TIR tilelang built; the assertion message is a reproducer."""
    func = elementwise_kernel(tree, dtype, M, N, bM, bN)
    stored = stored_value(func)
    kernel = _compile(func, arch)
    for d in data:
        a = orc.make_values((M, N), dtype, d.seed, d.scale, d.p_special)
        b = orc.make_values((M, N), dtype, d.seed + 1, d.scale, d.p_special)
        r = orc.make_values((M,), dtype, d.seed + 2, d.scale, d.p_special)
        w = orc.make_values((N,), dtype, d.seed + 3, d.scale, d.p_special)
        c = torch.full((M, N), float("nan"), dtype=orc.TORCH[dtype])
        kernel(a, b, r, w, c)
        leaves = {"a": orc.as_float64(a), "b": orc.as_float64(b), "r": orc.as_float64(r)[:, None],
                  "w": orc.as_float64(w)[None, :]}
        iv = orc.evaluate_tir(stored, {f"{k}_t": v for k, v in leaves.items()}, dtype, arch)
        bad = orc.violations(c, iv)
        if bad.any():
            used = {k: v for k, v in leaves.items() if k in leaves_of(tree)}
            raise AssertionError(
                f"C[i, j] = {to_dsl(tree)}\n  as built: {stored}\n"
                f"  dtype {dtype}, arch {arch}, M={M} N={N} bM={bM} bN={bN}, data {d}\n"
                f"  reproduce: check_elementwise({tree!r}, {dtype!r}, {arch!r}, {M}, {N}, {bM}, {bN}, [{d!r}])\n"
                + orc.describe(c, iv, bad, used))


# -- GEMM -----------------------------------------------------------------------------------------
def check_gemm(arch: str, M: int, N: int, K: int, bM: int, bN: int, bK: int, trans_A: bool, trans_B: bool,
               dtype: str, out_dtype: str, num_stages: int, data: list[Data]) -> None:
    """examples/gemm.py's matmul against the float64 product: the fp32 accumulation of K products
    in any order is within K * 2**-23 * (|A| @ |B|) (the products of fp16/bf16 values are exact in
    fp32), then one rounding to ``out_dtype``."""
    import gemm

    func = gemm.matmul(M, N, K, bM, bN, bK, trans_A, trans_B, dtype, out_dtype, "float32", num_stages)
    kernel = _compile(func, arch)
    for d in data:
        # values a GEMM meets: finite, with exact zeros of both signs mixed in
        a = orc.make_values((K, M) if trans_A else (M, K), dtype, d.seed, d.scale, d.p_special, [0.0, -0.0])
        b = orc.make_values((N, K) if trans_B else (K, N), dtype, d.seed + 1, d.scale, d.p_special, [0.0, -0.0])
        c = torch.full((M, N), float("nan"), dtype=orc.TORCH[out_dtype])
        kernel(a, b, c)
        a64, b64 = orc.as_float64(a), orc.as_float64(b)
        a64 = a64.T if trans_A else a64
        b64 = b64.T if trans_B else b64
        exact = a64 @ b64
        err = K * 2.0 ** -23 * (np.abs(a64) @ np.abs(b64)) * 1.01
        iv = orc.Iv(exact - err, exact + err, np.zeros((), bool), np.zeros((), bool), np.zeros((), np.int8))
        iv = orc.round_to(iv, out_dtype, 1.0)
        bad = orc.violations(c, iv)
        if bad.any():
            raise AssertionError(
                f"gemm arch {arch} M={M} N={N} K={K} tiles {bM}x{bN}x{bK} trans_A={trans_A} trans_B={trans_B} "
                f"{dtype}->{out_dtype} num_stages={num_stages} data {d}\n"
                f"  reproduce: check_gemm({arch!r}, {M}, {N}, {K}, {bM}, {bN}, {bK}, {trans_A}, {trans_B}, "
                f"{dtype!r}, {out_dtype!r}, {num_stages}, [{d!r}])\n" + orc.describe(c, iv, bad, {}))


# -- row reductions -------------------------------------------------------------------------------
def reduce_kernel(kind: str, dtype: str, M: int, N: int, bM: int, bN: int | None, clear: bool):
    """Y[i] = reduce_kind over row i of X; ``bN`` None: one tile holds whole rows, else rows are
    streamed in chunks of bN columns through T.Pipelined (accumulating: clear=False). With
    ``clear`` False the reduction combines with Y's initial value."""
    reduce_op = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min}[kind]
    cols = N if bN is None else bN

    @T.prim_func
    def prop_reduce(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            x = T.alloc_fragment((bM, cols), dtype)
            acc = T.alloc_fragment((bM,), dtype)
            if not clear or bN is not None:
                T.copy(Y[bx * bM], acc)
            if bN is None:
                T.copy(X[bx * bM, 0], x)
                reduce_op(x, acc, dim=1, clear=clear)
            else:
                for k in T.Pipelined(T.ceildiv(N, bN), num_stages=2):
                    T.copy(X[bx * bM, k * bN], x)
                    reduce_op(x, acc, dim=1, clear=False)
            T.copy(acc, Y[bx * bM])

    return prop_reduce


def reduce_interval(kind: str, x: np.ndarray, y0: np.ndarray | None, dtype: str) -> orc.Iv:
    """The interval of each row's reduction (combined with y0 when given) in ``dtype``."""
    vals = x if y0 is None else np.concatenate([x, y0[:, None]], axis=1)
    n = vals.shape[1]
    nan_in = np.isnan(vals).any(axis=1)
    if kind == "sum":
        work = "float32" if dtype == "bfloat16" else dtype
        finite = np.where(np.isfinite(vals), vals, 0.0)
        total, mag = finite.sum(axis=1), np.abs(finite).sum(axis=1)
        has_pinf, has_ninf = (vals == np.inf).any(axis=1), (vals == -np.inf).any(axis=1)
        # any order of the additions, each rounded in the working precision (twice Higham's bound)
        err = (n + 1) * 2.0 ** (1 - orc.PRECISION[work]) * mag + n * orc.min_subnormal(work)
        lo, hi = total - err, total + err
        lo = np.where(has_pinf, np.inf, np.where(has_ninf, -np.inf, lo))
        hi = np.where(has_pinf, np.inf, np.where(has_ninf, -np.inf, hi))
        must = nan_in | (has_pinf & has_ninf)
        # partial sums that may overflow: any infinity, and inf - inf, may appear
        unsure = mag + err > float(orc.finfo(work).max)
        lo = np.where(unsure | must, -np.inf, lo)
        hi = np.where(unsure | must, np.inf, hi)
        iv = orc.Iv(lo, hi, must | unsure, must, np.zeros((), np.int8))
        return orc.round_to(iv, dtype, 1.0) if work != dtype else iv
    red = np.max if kind == "max" else np.min
    v = red(np.where(np.isnan(vals), -np.inf if kind == "max" else np.inf, vals), axis=1)
    # the result is one of the inputs, exactly; the sign of a zero extreme is not specified
    return orc.Iv(v, v, nan_in, nan_in, np.zeros((), np.int8))


def check_reduce(kind: str, dtype: str, arch: str, M: int, N: int, bM: int, bN: int | None, clear: bool,
                 data: list[Data]) -> None:
    kernel = _compile(reduce_kernel(kind, dtype, M, N, bM, bN, clear), arch)
    # NaN in max/min: the propagation of WholeReduceMax/Min is not documented; sums take every value
    kinds = None if kind == "sum" else [v for v in orc.specials(dtype) if v == v]
    for d in data:
        x = orc.make_values((M, N), dtype, d.seed, d.scale, d.p_special, kinds)
        y0 = orc.make_values((M,), dtype, d.seed + 1, d.scale, d.p_special, kinds)
        if bN is not None and clear:
            y0 = torch.zeros(M, dtype=orc.TORCH[dtype]) if kind == "sum" else torch.full(
                (M,), float("-inf") if kind == "max" else float("inf"), dtype=orc.TORCH[dtype])
        y = y0.clone()
        kernel(x, y)
        init = None if (clear and bN is None) else orc.as_float64(y0)
        iv = reduce_interval(kind, orc.as_float64(x), init, dtype)
        bad = orc.violations(y, iv)
        if bad.any():
            raise AssertionError(
                f"T.reduce_{kind} arch {arch} {dtype} M={M} N={N} bM={bM} bN={bN} clear={clear} data {d}\n"
                f"  reproduce: check_reduce({kind!r}, {dtype!r}, {arch!r}, {M}, {N}, {bM}, {bN}, {clear}, [{d!r}])\n"
                + orc.describe(y, iv, bad, {}))
