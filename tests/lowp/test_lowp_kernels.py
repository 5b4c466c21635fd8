"""DeepSeek's low-precision kernels (examples/fp8_quant.py, fp8_gemm.py, int8_gemm.py) on the
emulator against torch, strict mode, small shapes, on every arch that has their dtypes; the arch
that lacks them refuses them at the right line with the reason."""

import fp8_gemm
import fp8_quant
import int8_gemm
import pytest
import tilelang.language as T
import torch
from strict_run import run

import ascend_backend
from ascend_backend.errors import UnsupportedError

E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2


def compile_for(func, arch):
    return ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True)




# ------------------------------------------------------------------ FP8 quantization (dav-3510)


@pytest.mark.parametrize("group", [128, pytest.param(256, marks=pytest.mark.slow)])
def test_fp8_group_cast_and_inverse(group):
    """group 128: DeepSeek's activation cast; group = N: the per-token cast."""
    M, N = 64, 256
    g = torch.Generator().manual_seed(0)
    x = torch.randn(M, N, generator=g) * torch.exp2(torch.randint(-6, 6, (M, 1), generator=g).float())
    x[3, 5] = 0.0
    x[7] = 0.0                       # an all-zero row: amax clamps to 1e-4
    q = torch.zeros(M, N, dtype=E4)
    s = torch.zeros(N // group, M)
    run(fp8_quant.group_cast_to_fp8(M, N, 32, group), [x, q, s], "dav-3510")
    ref_q, ref_s = fp8_quant.reference_cast(x, group)
    # the scale is amax / 448, divided as torch divides (a multiplication by 1/448 was one rounding
    # apart, and then a code near a rounding boundary one E4M3 step apart): bit-exact, and so the codes
    assert torch.equal(s, ref_s)
    assert torch.equal(q.view(torch.uint8), ref_q.view(torch.uint8))
    y = torch.zeros(M, N)
    run(fp8_quant.group_dequant_fp8(M, N, 32, group), [q, s, y], "dav-3510")
    assert torch.equal(y, fp8_quant.reference_dequant(q, s, group))
    rel = ((y - x).abs() / x.abs().clamp(min=1e-3))[x.abs() > 1e-2]
    assert rel.max() < 2**-3       # E4M3: 3 mantissa bits


@pytest.mark.slow
def test_fp8_cast_from_bfloat16_input():
    M, N = 32, 128
    x = (torch.randn(M, N) * 10).bfloat16()
    q = torch.zeros(M, N, dtype=E4)
    s = torch.zeros(1, M)
    run(fp8_quant.group_cast_to_fp8(M, N, 32, 128, in_dtype="bfloat16"), [x, q, s], "dav-3510")
    exp_q = (x.float() / s.T).clamp(-448, 448).to(E4)
    assert torch.equal(q.view(torch.uint8), exp_q.view(torch.uint8))


def test_fp8_cast_refused_on_c220_at_the_tile():
    with pytest.raises(UnsupportedError, match="exists only on dav-3510") as ei:
        compile_for(fp8_quant.group_cast_to_fp8(64, 256, 32, 128), "dav-c220")
    assert ei.value.loc.file.endswith("fp8_quant.py")


# ------------------------------------------------------------------ int8 GEMM (both arches)


@pytest.mark.slow
def test_int8_gemm_int32_output(arch):
    M, N, K = 64, 128, 256
    g = torch.Generator().manual_seed(1)
    a = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    c = torch.zeros(M, N, dtype=torch.int32)
    run(int8_gemm.matmul_int8(M, N, K, 64, 64, 64), [a, b, c], arch)
    assert torch.equal(c, int8_gemm.reference(a, b))


def test_int8_gemm_w8a8_dequant(arch):
    M, N, K = 64, 64, 128
    g = torch.Generator().manual_seed(2)
    a = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    sa, sb = torch.rand(M, generator=g) * 1e-2, torch.rand(N, generator=g) * 1e-2
    c = torch.zeros(M, N, dtype=torch.float16)
    run(int8_gemm.matmul_int8_dequant(M, N, K, 64, 64, 64), [a, b, sa, sb, c], arch)
    ref = int8_gemm.reference(a, b, sa, sb)
    torch.testing.assert_close(c, ref, rtol=1e-3, atol=1e-3)


@pytest.mark.slow
def test_int8_gemm_b_stored_k_by_n_on_3510():
    """B [K, N]: on dav-3510 LoadData transposes 1-byte fractals (LoadData2DParamsV2)."""
    M, N, K = 64, 64, 128

    @T.prim_func
    def mm(A: T.Tensor((M, K), "int8"), B: T.Tensor((K, N), "int8"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((M, 64), "int8")
            b = T.alloc_shared((64, N), "int8")
            c = T.alloc_fragment((M, N), "int32")
            T.clear(c)
            for k in T.serial(K // 64):
                T.copy(A[0, k * 64], a)
                T.copy(B[k * 64, 0], b)
                T.gemm(a, b, c)
            T.copy(c, C[0, 0])

    g = torch.Generator().manual_seed(3)
    a = torch.randint(-16, 16, (M, K), generator=g, dtype=torch.int8)
    b = torch.randint(-16, 16, (K, N), generator=g, dtype=torch.int8)
    c = torch.zeros(M, N, dtype=torch.float16)
    run(mm, [a, b, c], "dav-3510")
    assert torch.equal(c, (a.int() @ b.int()).half())     # |c| < 2048: exact in float16
    with pytest.raises(UnsupportedError, match="transpose_B=True"):
        compile_for(mm, "dav-c220")


# ------------------------------------------------------------------ FP8 GEMM (dav-3510)


@pytest.mark.slow
@pytest.mark.parametrize("dts", [(E4, E4), (E5, E4)])
def test_fp8_gemm_tensor_scale(dts):
    M, N, K = 64, 128, 256
    g = torch.Generator().manual_seed(4)
    a = torch.randn(M, K, generator=g).to(dts[0])
    b = torch.randn(N, K, generator=g).to(dts[1])

    @T.prim_func
    def mm(A: T.Tensor((M, K), str(dts[0]).split(".")[1]), B: T.Tensor((N, K), str(dts[1]).split(".")[1]),
           SA: T.Tensor((1,), "float32"), SB: T.Tensor((1,), "float32"), C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            a_s = T.alloc_shared((M, 128), str(dts[0]).split(".")[1])
            b_s = T.alloc_shared((N, 128), str(dts[1]).split(".")[1])
            c = T.alloc_fragment((M, N), "float32")
            o = T.alloc_fragment((M, N), "bfloat16")
            s = T.alloc_var("float32")
            T.clear(c)
            for k in T.Pipelined(K // 128, num_stages=2):
                T.copy(A[0, k * 128], a_s)
                T.copy(B[0, k * 128], b_s)
                T.gemm(a_s, b_s, c, transpose_B=True)
            s = SA[0] * SB[0]
            for i, j in T.Parallel(M, N):
                o[i, j] = c[i, j] * s
            T.copy(o, C[0, 0])

    sa, sb = torch.tensor([0.5]), torch.tensor([0.375])
    c = torch.zeros(M, N, dtype=torch.bfloat16)
    run(mm, [a, b, sa, sb, c], "dav-3510")
    torch.testing.assert_close(c, fp8_gemm.reference_tensor_scale(a, b, sa, sb), rtol=1e-2, atol=1e-2)


@pytest.mark.slow
def test_fp8_gemm_example_tensor_scale_kernel():
    M, N, K = 128, 128, 256
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(M, K, generator=g).to(E4), torch.randn(N, K, generator=g).to(E4)
    sa, sb = torch.tensor([2.0]), torch.tensor([0.125])
    c = torch.zeros(M, N, dtype=torch.bfloat16)
    run(fp8_gemm.matmul_fp8_tensor_scale(M, N, K, 64, 128, 128), [a, b, sa, sb, c], "dav-3510")
    torch.testing.assert_close(c, fp8_gemm.reference_tensor_scale(a, b, sa, sb), rtol=1e-2, atol=1e-2)


def test_fp8_gemm_block_scale():
    """DeepSeek-V3's 1 x 128 activation and 128 x 128 weight scales, accumulated per K step."""
    M, N, K = 64, 256, 384
    g = torch.Generator().manual_seed(6)
    aq, sa, bq, sb = fp8_gemm.quantize_blocks(torch.randn(M, K, generator=g), torch.randn(N, K, generator=g) * 4)
    c = torch.zeros(M, N, dtype=torch.bfloat16)
    run(fp8_gemm.matmul_fp8_block_scale(M, N, K, 64, 128), [aq, bq, sa, sb, c], "dav-3510")
    ref = fp8_gemm.reference_block_scale(aq, bq, sa, sb)
    torch.testing.assert_close(c, ref, rtol=1e-2, atol=1e-2)
    # and close to the unquantized product
    full = (aq.float().view(M, K // 128, 128) * sa.T[:, :, None]).view(M, K) @ \
        (bq.float().view(N // 128, 128, K // 128, 128) * sb[:, None, :, None]).view(N, K).T
    torch.testing.assert_close(c.float(), full, rtol=2e-2, atol=2e-2)


@pytest.mark.slow
def test_fp8_gemm_writes_fp8_through_fixpipe():
    """A float32 accumulator copied to an E4M3 tensor: Fixpipe's QF322FP8_PRE (scale 1.0)."""
    M, N, K = 64, 64, 128

    @T.prim_func
    def mm(A: T.Tensor((M, K), "float8_e4m3fn"), B: T.Tensor((N, K), "float8_e4m3fn"),
           C: T.Tensor((M, N), "float8_e4m3fn")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((M, K), "float8_e4m3fn")
            b = T.alloc_shared((N, K), "float8_e4m3fn")
            c = T.alloc_fragment((M, N), "float32")
            T.copy(A[0, 0], a)
            T.copy(B[0, 0], b)
            T.gemm(a, b, c, transpose_B=True, clear_accum=True)
            T.copy(c, C[0, 0])

    g = torch.Generator().manual_seed(7)
    a, b = (torch.randn(M, K, generator=g) * 4).to(E4), (torch.randn(N, K, generator=g) * 4).to(E4)
    c = torch.zeros(M, N, dtype=E4)
    run(mm, [a, b, c], "dav-3510")
    acc = a.float() @ b.float().T
    assert acc.abs().max() > 448       # saturates (the 950's default), as torch's cast does
    assert torch.equal(c.view(torch.uint8), acc.to(E4).view(torch.uint8))


def test_fp8_gemm_refused_on_c220_at_the_gemm():
    with pytest.raises(UnsupportedError, match="has no fp8") as ei:
        compile_for(fp8_gemm.matmul_fp8_block_scale(64, 128, 256, 64, 128), "dav-c220")
    assert "T.gemm" in open(ei.value.loc.file).read().splitlines()[ei.value.loc.line - 1]


# ------------------------------------------------------------------ int4 unpacking (both arches)


def test_w4a16_gemm_unpacks_int4_on_the_vector_side(arch):
    import dequant_gemm_int4 as dq

    M, N, K = 64, 64, 128
    g = torch.Generator().manual_seed(8)
    a = torch.randn(M, K, generator=g).half()
    w = torch.randint(-8, 8, (N, K), generator=g, dtype=torch.int8)
    s = (torch.rand(N, generator=g) * 0.05).half()
    c = torch.zeros(M, N, dtype=torch.float16)
    k = run(dq.matmul_w4a16(M, N, K, 64, 64, 128), [a, dq.pack_int4(w), s, c], arch)
    torch.testing.assert_close(c, dq.reference(a, w, s), rtol=1e-3, atol=1e-3)
    assert "ReinterpretCast<int4b_t>()" in k.kernel_source
