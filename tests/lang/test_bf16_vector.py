"""bfloat16 arithmetic in T.Parallel (issue 14, item 3: native bf16 where the arch has it).

dav-3510's vector units compute bfloat16 + - * max min and Select (the Add/Sub/Mul/Max/Min,
Adds/Muls/Maxs/Mins, Select and FusedMulAdd pages list bfloat16_t for the Ascend 950), so those
nodes stay bfloat16 there, one rounding per instruction as their TIR type says; other bfloat16
operations (/, exp, ...) and every bfloat16 operation on dav-c220 are computed in float32 and
rounded once where a bfloat16 value is needed (docs/supported.md). Each kernel runs on the emulator
in strict mode and must equal, bit for bit, a torch reference that rounds where that rule rounds;
the generated op sequence is pinned on both arches."""

import pytest
import tilelang.language as T
import torch
from filecheck import filecheck
from strict_run import run

BF = "bfloat16"
M, N, BM, BN = 64, 128, 32, 64


def _kernel(body, with_row: bool = False):
    """C = body(a, b, r) over (M, N) bfloat16 tensors, (BM, BN) tiles; r a per-row vector."""

    @T.prim_func
    def k(A: T.Tensor((M, N), BF), B: T.Tensor((M, N), BF), R: T.Tensor((M,), BF), C: T.Tensor((M, N), BF)):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM)) as (bx, by):
            a = T.alloc_shared((BM, BN), BF)
            b = T.alloc_shared((BM, BN), BF)
            r = T.alloc_shared((BM,), BF)
            c = T.alloc_shared((BM, BN), BF)
            T.copy(A[by * BM, bx * BN], a)
            T.copy(B[by * BM, bx * BN], b)
            T.copy(R[by * BM], r)
            for i, j in T.Parallel(BM, BN):
                c[i, j] = body(a[i, j], b[i, j], r[i])
            T.copy(c, C[by * BM, bx * BN])

    return k


def _inputs(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(M, N, generator=g) * 3).to(torch.bfloat16)
    b = (torch.rand(M, N, generator=g) + 0.75).to(torch.bfloat16)  # no zeros: b divides
    r = torch.randn(M, generator=g).to(torch.bfloat16)
    return a, b, r


def _run(body, arch):
    a, b, r = _inputs()
    c = torch.full((M, N), float("nan"), dtype=torch.bfloat16)
    k = run(_kernel(body), [a, b, r, c], arch)
    return k.kernel_source, (a, b, r), c


def _f(x):
    return x.to(torch.float32)


def test_bf16_add_mul_max_stay_bf16_on_dav_3510_and_widen_on_dav_c220(arch):
    """max(a * b + a, b): three native instructions on dav-3510, each rounding to bfloat16; on
    dav-c220 one float32 chain rounded once."""
    src, (a, b, r), c = _run(lambda x, y, _r: T.max(x * y + x, y), arch)
    if arch == "dav-3510":
        want = torch.maximum(a * b + a, b)  # torch's bf16 ops round after each one, as the Vector does
        filecheck(src, """
            CHECK-NOT: Cast(
            CHECK: Mul(tmp{{.*}}_bfloat16, a, b,
            CHECK-NEXT: Add(tmp{{.*}}_bfloat16
            CHECK-NEXT: Max(c, tmp{{.*}}_bfloat16, b,
            CHECK-NOT: Cast(
            CHECK: DataCopyPad(C_gm
        """)
    else:
        want = torch.maximum(_f(a) * _f(b) + _f(a), _f(b)).to(torch.bfloat16)
        filecheck(src, """
            CHECK: Cast(tmp{{.*}}_float32, a, RoundMode::CAST_NONE
            CHECK: Mul(tmp{{.*}}_float32
            CHECK: Add(tmp{{.*}}_float32
            CHECK: Max(tmp{{.*}}_float32
            CHECK: Cast(c, tmp{{.*}}_float32, RoundMode::CAST_RINT
        """)
    assert torch.equal(c, want), (c.float() - want.float()).abs().max()
    # the two semantics differ on these inputs: the test tells them apart
    other = (torch.maximum(_f(a) * _f(b) + _f(a), _f(b)).to(torch.bfloat16) if arch == "dav-3510"
             else torch.maximum(a * b + a, b))
    assert not torch.equal(c, other)


def test_a_division_widens_its_operands_and_native_subtrees_round_first(arch):
    """(a * b) / (a + 1.5): the product and the sum are bfloat16 instructions on dav-3510 (rounded),
    the division is not one (Div takes no bfloat16_t): both are cast to float32, divided, and the
    quotient rounded once."""
    one_half = T.bfloat16(1.5)
    src, (a, b, r), c = _run(lambda x, y, _r: (x * y) / (x + one_half), arch)
    if arch == "dav-3510":
        want = (_f(a * b) / _f(a + 1.5)).to(torch.bfloat16)
        filecheck(src, """
            CHECK: Mul(tmp{{.*}}_bfloat16, a, b,
            CHECK: Adds(tmp{{.*}}_bfloat16, a, (bfloat16_t)(1.5f),
            CHECK: Div(tmp{{.*}}_float32
            CHECK-NEXT: Cast(c, tmp{{.*}}_float32, RoundMode::CAST_RINT
        """)
    else:
        want = (_f(a) * _f(b) / (_f(a) + 1.5)).to(torch.bfloat16)
        filecheck(src, """
            CHECK-NOT: _bfloat16
            CHECK: Div(tmp{{.*}}_float32
        """)
    assert torch.equal(c, want), (c.float() - want.float()).abs().max()


def test_per_row_scale_and_select_in_bf16(arch):
    """if a > 0: a * r[i] else b: a broadcast Mul (Brcb of r) and a Select of bfloat16 tiles; the
    condition is compared in float32 on both arches (exact)."""
    src, (a, b, r), c = _run(lambda x, y, rr: T.if_then_else(x > T.bfloat16(0.0), x * rr, y), arch)
    prod = a * r[:, None] if arch == "dav-3510" else (_f(a) * _f(r)[:, None]).to(torch.bfloat16)
    want = torch.where(a > 0, prod, b)
    assert torch.equal(c, want), (c.float() - want.float()).abs().max()
    if arch == "dav-3510":
        filecheck(src, """
            CHECK: Brcb(tmp{{.*}}_bfloat16, r,
            CHECK: Mul(tmp{{.*}}_bfloat16
            CHECK: Select(c,
        """)


def test_the_online_softmax_rescale_fuses_in_bf16_on_dav_3510(arch):
    """x = x * r[i]; x = x + p in two statements: one FusedMulAdd (x = r * x + p, one rounding;
    bfloat16_t is on its page for the Ascend 950) instead of a broadcast Mul and an Add."""

    @T.prim_func
    def k(X: T.Tensor((M, N), BF), P: T.Tensor((M, N), BF), R: T.Tensor((M,), BF), Y: T.Tensor((M, N), BF)):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM)) as (bx, by):
            x = T.alloc_shared((BM, BN), BF)
            p = T.alloc_shared((BM, BN), BF)
            r = T.alloc_shared((BM,), BF)
            T.copy(X[by * BM, bx * BN], x)
            T.copy(P[by * BM, bx * BN], p)
            T.copy(R[by * BM], r)
            for i, j in T.Parallel(BM, BN):
                x[i, j] = x[i, j] * r[i]
            for i, j in T.Parallel(BM, BN):
                x[i, j] = x[i, j] + p[i, j]
            T.copy(x, Y[by * BM, bx * BN])

    xs, ps, rs = _inputs(1)
    y = torch.full((M, N), float("nan"), dtype=torch.bfloat16)
    kern = run(k, [xs, ps, rs, y], arch)
    d = torch.float64
    if arch == "dav-3510":
        want = (xs.to(d) * rs.to(d)[:, None] + ps.to(d)).to(torch.bfloat16)  # one rounding
        filecheck(kern.kernel_source, """
            CHECK-NOT: Cast(
            CHECK: FusedMulAdd(x[
            CHECK-NOT: Cast(
            CHECK: DataCopyPad(Y_gm
        """)
    else:
        want = (_f((_f(xs) * _f(rs)[:, None]).to(torch.bfloat16)) + _f(ps)).to(torch.bfloat16)
        assert "FusedMulAdd" not in kern.kernel_source
    assert torch.equal(y, want), (y.float() - want.float()).abs().max()


@pytest.mark.parametrize("arch", ["dav-3510"])
def test_exp_of_bf16_is_computed_in_float32(arch):
    """Exp takes no bfloat16_t on either arch: exp(a * b) rounds the product (a bfloat16 Mul on
    dav-3510), widens it, and rounds the exponential once."""
    src, (a, b, r), c = _run(lambda x, y, _r: T.exp(x * y * T.bfloat16(0.25)), arch)
    want = torch.exp(_f(a * b * 0.25)).to(torch.bfloat16)
    assert torch.equal(c, want), (c.float() - want.float()).abs().max()
    filecheck(src, """
        CHECK: Mul(tmp{{.*}}_bfloat16, a, b,
        CHECK: Muls(tmp{{.*}}_bfloat16
        CHECK: Cast(tmp{{.*}}_float32
        CHECK-NEXT: Exp(tmp{{.*}}_float32
        CHECK-NEXT: Cast(c,
    """)


def test_a_float32_literal_makes_a_float32_multiply_rounded_once_at_the_store(arch):
    """a * 2.0: tilelang types the literal float32 and builds Cast("bfloat16", Cast("float32", a)
    * 2.0f): one Cast up, one Muls, one Cast into the stored tile (the root's rounding is not
    repeated through a bfloat16 temporary)."""
    src, (a, b, r), c = _run(lambda x, y, _r: x * 2.0 + y * 0.5, arch)
    assert torch.equal(c, (_f(a) * 2.0 + _f(b) * 0.5).to(torch.bfloat16))
    filecheck(src, """
        CHECK: Cast(tmp{{.*}}_float32, a, RoundMode::CAST_NONE
        CHECK: Muls(tmp{{.*}}_float32
        CHECK: Add(tmp{{.*}}_float32
        CHECK-NOT: _bfloat16
        CHECK: Cast(c, tmp{{.*}}_float32, RoundMode::CAST_RINT
    """)
    assert "_bfloat16" not in src


def test_a_bf16_tile_read_twice_is_widened_once_on_dav_c220():
    """max(a * b + a, b) reads a and b twice each: on dav-c220 each is converted to float32 once
    (the conversion is kept for the second read), then the one rounding at the store: 3 Casts."""
    src, (a, b, r), c = _run(lambda x, y, _r: T.max(x * y + x, y), "dav-c220")
    assert torch.equal(c, torch.maximum(_f(a) * _f(b) + _f(a), _f(b)).to(torch.bfloat16))
    casts = [line.strip() for line in src.splitlines() if line.strip().startswith("Cast(")]
    assert len(casts) == 3, casts  # 5 before: a and b converted at each read
    filecheck(src, """
        CHECK: Cast(tmp{{.*}}_float32, a, RoundMode::CAST_NONE
        CHECK: Cast(tmp{{.*}}_float32, b, RoundMode::CAST_NONE
        CHECK-NOT: Cast(
        CHECK: Cast(c, tmp{{.*}}_float32, RoundMode::CAST_RINT
    """)
