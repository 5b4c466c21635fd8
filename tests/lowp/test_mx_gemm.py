"""T.gemm_blockscaled -> MmadMx (dav-3510): the MX-scaled FP8 GEMM of examples/fp8_gemm.py on the
emulator against torch in strict mode, the generated code's key lines, and the refusals (dav-c220,
scale granularity, operand layout, tile shapes) at the gemm's line."""

import fp8_gemm
import pytest
import tilelang.language as T
import torch
from filecheck import filecheck
from strict_run import run

import ascend_backend
from ascend_backend.errors import AscendCompileError, UnsupportedError

E4, E5, E8 = torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e8m0fnu


def compile_for(func, arch="dav-3510"):
    return ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True)


def random_scales(rows: int, groups: int, g: torch.Generator) -> torch.Tensor:
    """E8M0 codes 2^-7 .. 2^6: every scale differs, so a scale applied to the wrong row or K group shows."""
    return torch.randint(120, 134, (rows, groups), generator=g, dtype=torch.uint8).view(E8)


def test_mx_gemm_ue8m0_blocks_against_torch():
    """DeepSeek-V3.1's UE8M0 quantization (1 x 128 / 128 x 128, powers of two) as MX scales: the
    result equals torch's product of the dequantized operands (powers of two scale exactly)."""
    M, N, K = 128, 256, 256
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(M, K, generator=g), torch.randn(N, K, generator=g)
    aq, sa, bq, sb = fp8_gemm.quantize_ue8m0_blocks(a, b)
    c = torch.zeros(M, N)
    run(fp8_gemm.matmul_fp8_mx(M, N, K, 64, 128, 128, out_dtype="float32"), [aq, bq, sa, sb, c], "dav-3510")
    torch.testing.assert_close(c, fp8_gemm.reference_mx(aq, bq, sa, sb, "float32"), rtol=1e-5, atol=1e-5)
    # and the quantization is the one DeepSeek describes: within E4M3's precision of the float product
    assert ((c - a @ b.T).abs().max() / (a @ b.T).abs().max()) < 0.05


@pytest.mark.parametrize("b_dtype,block_k", [(E5, 64), (E4, 256)])
def test_mx_gemm_random_scales_mixed_formats(b_dtype, block_k):
    """E4M3 x E5M2 with a different scale per row and 32 K elements, four K steps of 64 (the scale
    pairs' start moves each step); block_K 256 with 256-row tiles steps K in two L0 chunks."""
    M, N, K = (128, 128, 256) if block_k == 64 else (256, 128, 512)
    bm = 64 if block_k == 64 else 256
    g = torch.Generator().manual_seed(1)
    aq = (torch.randn(M, K, generator=g) * 4).to(E4)
    bq = (torch.randn(N, K, generator=g) * 4).to(b_dtype)
    sa, sb = random_scales(M, K // 32, g), random_scales(N, K // 32, g)
    c = torch.zeros(M, N)
    func = fp8_gemm.matmul_fp8_mx(M, N, K, bm, 128, block_k, b_dtype=str(b_dtype).split(".")[-1],
                                  out_dtype="float32")
    k = run(func, [aq, bq, sa, sb, c], "dav-3510")
    ref = fp8_gemm.reference_mx(aq, bq, sa, sb, "float32")
    torch.testing.assert_close(c, ref, rtol=1e-5, atol=1e-5 * ref.abs().max().item())
    if block_k == 256:
        assert k.kernel_source.count("MmadMx(") == 2, "K of 256 in two L0 chunks of 128"


def test_mx_gemm_code():
    """The scales travel GM -> L1 as 16-bit pairs (one Dn2Nz), L1 -> L0A_MX / L0B_MX with their
    operand's LoadData, each LoadData waiting for its own scale copy; the Mmad is MmadMx with unit flags."""
    k = compile_for(fp8_gemm.matmul_fp8_mx(256, 256, 256, 128, 128, 128))
    filecheck(k.kernel_source, """
        CHECK: SA_shared: L1 128x4xfloat8_e8m0fnu MX
        CHECK: for (int32_t k = 0; k < 2; ++k) {
        CHECK: pairs_.SetGlobalBuffer((__gm__ uint16_t*)SA_gm[
        CHECK-NEXT: DataCopy(SA_shared.ReinterpretCast<uint16_t>(), pairs_, Dn2NzParams{1, (uint16_t)((4) / 2), (uint32_t)(128), 0, (uint64_t)((8) / 2), (uint16_t)(2), 1, 0});
        CHECK: SetFlag<HardEvent::MTE2_MTE1>
        CHECK-SAME: RAW on SA_shared
        CHECK: WaitFlag<HardEvent::MTE2_MTE1>
        CHECK-SAME: RAW on SA_shared
        CHECK-NEXT: LoadData(A_shared_l0a, A_shared, SA_shared, LoadData2DParamsV2{
        CHECK-SAME: LoadData2DMxParams{0, (uint16_t)(0), 8, 2, 2, 2}
        CHECK: LoadData(B_shared_l0b, B_shared, SB_shared,
        CHECK: mp.unitFlag = (k == 1) ? 3 : 2;
        CHECK-NEXT: MmadMx(C_local, A_shared_l0a, B_shared_l0b, mp);
        CHECK-NOT: Mmad(
        CHECK: fp.unitFlag = 3;
    """)
    # MmadMx page: fp8 operands at 1024-byte aligned L0A / L0B addresses
    aic = next(kern for _, core, kern in k.program.kernels() if str(core) == "AIC")
    l0 = [b for b in aic.buffers.values() if b.scope.value in ("L0A", "L0B")]
    assert l0 and all(b.offset % 1024 == 0 and b.align == 1024 for b in l0)


def test_plan_memory_honours_a_buffers_alignment():
    """A buffer that asks for 1024-byte alignment is placed at one, past a 512-byte neighbour."""
    from ascend_backend.dtypes import DType
    from ascend_backend.ir import Buffer, BufferKind, Layout, Scope
    from passes.plan_memory import STRICT, place

    small = Buffer("small", (16, 32), DType.FLOAT8_E4M3FN, BufferKind.TEMP, scope=Scope.L0A, layout=Layout.NZ)
    big = Buffer("big", (32, 64), DType.FLOAT8_E4M3FN, BufferKind.TEMP, scope=Scope.L0A, layout=Layout.NZ)
    offsets, _ = place([small, big], {}, {"small"}, STRICT)
    assert offsets["big"] == 512                 # the memory's own 512-byte alignment
    big.align = 1024
    offsets, _ = place([small, big], {}, {"small"}, STRICT)
    assert offsets["big"] == 1024


def _mx(block_k=128, g=32, trans_b=True, sa_cols=None):
    M = N = K = 256
    sa_cols = sa_cols or block_k // 32

    @T.prim_func
    def mx(A: T.Tensor((M, K), "float8_e4m3fn"), B: T.Tensor((N, K), "float8_e4m3fn"),
           SA: T.Tensor((M, K // 32), "float8_e8m0fnu"), SB: T.Tensor((N, K // 32), "float8_e8m0fnu"),
           C: T.Tensor((M, N), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((128, block_k), "float8_e4m3fn")
            B_s = T.alloc_shared((128, block_k) if trans_b else (block_k, 128), "float8_e4m3fn")
            SA_s = T.alloc_shared((128, sa_cols), "float8_e8m0fnu")
            SB_s = T.alloc_shared((128, block_k // 32), "float8_e8m0fnu")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for k in T.serial(K // block_k):
                T.copy(A[by * 128, k * block_k], A_s)
                T.copy(B[bx * 128, k * block_k] if trans_b else B[k * block_k, bx * 128], B_s)
                T.copy(SA[by * 128, 0 if sa_cols != block_k // 32 else k * sa_cols], SA_s)
                T.copy(SB[bx * 128, k * block_k // 32], SB_s)
                T.gemm_blockscaled(A_s, B_s, C_l, SA_s, SB_s, transpose_B=trans_b, k_start=k * block_k,  # the line
                                   sf_a_granularity_k=g, sf_b_granularity_k=g)
            T.copy(C_l, C[by * 128, bx * 128])

    return mx


@pytest.mark.parametrize("kw,arch,match", [
    ({}, "dav-c220", "exist only on dav-3510"),
    ({"g": 128}, "dav-3510", "sf_a_granularity_k=128.*32 consecutive K"),
    ({"trans_b": False}, "dav-3510", "B stored K x N"),
    ({"sa_cols": 8}, "dav-3510", r"scale tile 'SA_s' of operand A is \[128, 8\].*\[128, 4\]"),
    ({"block_k": 32}, "dav-3510", "scales move in fractals of 16 rows x 2 scales"),
])
def test_mx_gemm_refusals_point_at_the_gemm(kw, arch, match):
    with pytest.raises(AscendCompileError, match=match) as ei:
        compile_for(_mx(**kw), arch)
    assert ei.value.loc is not None and ei.value.loc.file.endswith("test_mx_gemm.py")
    line = ei.value.loc.line
    text = open(__file__).read().splitlines()[line - 1]
    assert "T.gemm_blockscaled" in text or "SA_s" in text or "SB_s" in text, text


def test_mx_gemm_refused_on_c220_is_unsupported_with_a_hint():
    with pytest.raises(UnsupportedError) as ei:
        compile_for(fp8_gemm.matmul_fp8_mx(), "dav-c220")
    assert "compile for dav-3510" in ei.value.hint
    assert ei.value.loc.file.endswith("fp8_gemm.py")


def test_mx_scales_written_by_vector_code_are_refused_at_the_write():
    M = N = K = 256

    @T.prim_func
    def mx(A: T.Tensor((M, K), "float8_e4m3fn"), B: T.Tensor((N, K), "float8_e4m3fn"),
           SA: T.Tensor((M, K // 32), "float8_e8m0fnu"), SB: T.Tensor((N, K // 32), "float8_e8m0fnu"),
           C: T.Tensor((M, N), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((128, 128), "float8_e4m3fn")
            B_s = T.alloc_shared((128, 128), "float8_e4m3fn")
            SA_s = T.alloc_shared((128, 4), "float8_e8m0fnu")
            SB_s = T.alloc_shared((128, 4), "float8_e8m0fnu")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for k in T.serial(2):
                T.copy(A[by * 128, k * 128], A_s)
                T.copy(B[bx * 128, k * 128], B_s)
                for i, j in T.Parallel(128, 4):  # the write
                    SA_s[i, j] = SA[by * 128 + i, k * 4 + j]
                T.copy(SB[bx * 128, k * 4], SB_s)
                T.gemm_blockscaled(A_s, B_s, C_l, SA_s, SB_s, transpose_B=True, k_start=k * 128,
                                   sf_a_granularity_k=32, sf_b_granularity_k=32)
            T.copy(C_l, C[by * 128, bx * 128])

    with pytest.raises(UnsupportedError, match="scale tile 'SA_s' .* written here by vector code") as ei:
        compile_for(mx)
    assert "# the write" in open(__file__).read().splitlines()[ei.value.loc.line - 1]
