"""FP8 GEMM on the Cube core (dav-3510: fp8_e4m3fn_t / fp8_e5m2_t operands, float32 accumulator;
Mmad page, table 5), C = (A x B^T) with A [M, K] and B [N, K] in float8_e4m3fn, written as TileLang's
GEMM examples write it: `matmul_fp8` (the plain product, converted to the output dtype by Fixpipe),
and DeepSeek's two scaling schemes:

- `matmul_fp8_tensor_scale`: one scale per tensor, C = (A x B^T) * sa * sb, applied once to the
  float32 accumulator on the Vector side;
- `matmul_fp8_block_scale`: DeepSeek-V3's fine-grained scales, one per (token, 128 K-group) of A
  (SA [K / 128, M], the layout examples/fp8_quant.py writes) and one per 128 x 128 block of B
  (SB [N / 128, K / 128]); each 128-deep K step's product is scaled and added into a float32
  accumulator on the Vector side (the two-level accumulation of DeepGEMM);
- `matmul_fp8_mx`: power-of-two (E8M0) scales, one per row of A or B and 32 K elements, written with
  TileLang's target-neutral `T.gemm_blockscaled`: the Cube core applies them itself (MmadMx), so the
  product never leaves L0C per K step. DeepSeek-V3.1's UE8M0 scales (one per 1 x 128 / 128 x 128
  block, powers of two) are this form once repeated to every 32 K elements (`quantize_ue8m0_blocks`).

fp8 exists only on dav-3510; dav-c220 refuses these kernels at the gemm's line.
`tl-ascend run examples/fp8_gemm.py` runs the block-scaled one against torch.
"""

import tilelang.language as T

# fp8 exists only on dav-3510; dav-c220 refuses these kernels with the reason
ARCHES = ("dav-3510",)


def matmul_fp8(M=256, N=256, K=512, block_M=128, block_N=128, block_K=128, num_stages=2, in_dtype="float8_e4m3fn",
               b_dtype=None, out_dtype="bfloat16"):
    """C = A x B^T, fp8 operands (A and B may be either fp8 format), float32 accumulation."""
    b_dtype = b_dtype or in_dtype

    @T.prim_func
    def gemm_fp8_plain(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), b_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), b_dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm_fp8_plain


def matmul_fp8_tensor_scale(M=256, N=256, K=512, block_M=128, block_N=128, block_K=128, num_stages=2,
                            in_dtype="float8_e4m3fn", out_dtype="bfloat16"):
    @T.prim_func
    def gemm_fp8(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), in_dtype), SA: T.Tensor((1,), "float32"),
                 SB: T.Tensor((1,), "float32"), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            C_out = T.alloc_fragment((block_M, block_N), out_dtype)
            s = T.alloc_var("float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            s = SA[0] * SB[0]
            for i, j in T.Parallel(block_M, block_N):
                C_out[i, j] = C_local[i, j] * s
            T.copy(C_out, C[by * block_M, bx * block_N])

    return gemm_fp8


def matmul_fp8_block_scale(M=256, N=256, K=512, block_M=128, block_N=128, num_stages=2, in_dtype="float8_e4m3fn",
                           out_dtype="bfloat16"):
    group = 128  # the scale granularity along K (and N for B): DeepSeek-V3's 1 x 128 / 128 x 128
    block_K = group
    assert block_N == group, "one B scale per block: block_N is the 128 of the 128 x 128 weight blocks"

    @T.prim_func
    def gemm_fp8_bs(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), in_dtype),
                    SA: T.Tensor((K // group, M), "float32"), SB: T.Tensor((N // group, K // group), "float32"),
                    C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            C_acc = T.alloc_fragment((block_M, block_N), "float32")
            C_out = T.alloc_fragment((block_M, block_N), out_dtype)
            sa = T.alloc_fragment((block_M,), "float32")
            sb = T.alloc_var("float32")
            T.clear(C_acc)
            for k in T.Pipelined(K // block_K, num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True, clear_accum=True)
                T.copy(SA[k, by * block_M], sa)
                sb = SB[bx, k]
                # one scale per row for this K step (sa * sb), then one multiply-add pass per element
                for i in T.Parallel(block_M):
                    sa[i] = sa[i] * sb
                for i, j in T.Parallel(block_M, block_N):
                    C_acc[i, j] = C_acc[i, j] + C_local[i, j] * sa[i]
            T.copy(C_acc, C_out)
            T.copy(C_out, C[by * block_M, bx * block_N])

    return gemm_fp8_bs


def matmul_fp8_mx(M=256, N=256, K=512, block_M=128, block_N=128, block_K=128, num_stages=2, in_dtype="float8_e4m3fn",
                  b_dtype=None, out_dtype="bfloat16"):
    """C = (SA (x) A) x (SB (x) B)^T: SA [M, K / 32] and SB [N, K / 32] float8_e8m0fnu, each scale shared by
    32 consecutive K elements of its row (MX). block_K a multiple of 64."""
    b_dtype = b_dtype or in_dtype
    sf = 32

    @T.prim_func
    def gemm_fp8_mx(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), b_dtype),
                    SA: T.Tensor((M, K // sf), "float8_e8m0fnu"), SB: T.Tensor((N, K // sf), "float8_e8m0fnu"),
                    C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), b_dtype)
            SA_shared = T.alloc_shared((block_M, block_K // sf), "float8_e8m0fnu")
            SB_shared = T.alloc_shared((block_N, block_K // sf), "float8_e8m0fnu")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.copy(SA[by * block_M, k * block_K // sf], SA_shared)
                T.copy(SB[bx * block_N, k * block_K // sf], SB_shared)
                T.gemm_blockscaled(A_shared, B_shared, C_local, SA_shared, SB_shared, transpose_B=True,
                                   k_start=k * block_K, sf_a_granularity_k=sf, sf_b_granularity_k=sf)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm_fp8_mx


def reference_mx(A, B, SA, SB, out_dtype="bfloat16"):
    """float32 reference of the MX GEMM: every operand element times its row's scale of its 32 K."""
    import torch

    sa = SA.float().repeat_interleave(32, dim=1)
    sb = SB.float().repeat_interleave(32, dim=1)
    return ((A.float() * sa) @ (B.float() * sb).T).to(getattr(torch, out_dtype))


def quantize_ue8m0_blocks(a, b):
    """DeepSeek-V3.1's UE8M0 quantization: A [M, K] per (row, 128-group), B [N, K] per 128 x 128 block,
    each scale amax / 448 rounded up to a power of two. Returns (A_fp8, SA, B_fp8, SB) with SA [M, K / 32]
    and SB [N, K / 32] float8_e8m0fnu, each block's scale repeated to every 32 K elements (the MX form)."""
    import torch

    M, K = a.shape
    N = b.shape[0]
    ag = a.view(M, K // 128, 128)
    sa = torch.exp2(torch.ceil(torch.log2(ag.abs().amax(2).clamp(min=1e-4) / 448.0)))
    aq = (ag / sa[:, :, None]).to(torch.float8_e4m3fn).view(M, K)
    bg = b.view(N // 128, 128, K // 128, 128)
    sb = torch.exp2(torch.ceil(torch.log2(bg.abs().amax((1, 3)).clamp(min=1e-4) / 448.0)))
    bq = (bg / sb[:, None, :, None]).to(torch.float8_e4m3fn).view(N, K)
    e8 = torch.float8_e8m0fnu
    sa_mx = sa.repeat_interleave(4, dim=1).to(e8)
    sb_mx = sb.repeat_interleave(128, dim=0).repeat_interleave(4, dim=1).to(e8)
    return aq, sa_mx, bq, sb_mx


def reference_tensor_scale(A, B, sa, sb, out_dtype="bfloat16"):
    import torch

    return ((A.float() @ B.float().T) * (sa * sb)).to(getattr(torch, out_dtype))


def reference_block_scale(A, B, SA, SB, out_dtype="bfloat16"):
    """float32 reference with the kernel's order: per 128-deep K step, scale and accumulate."""
    import torch

    M, K = A.shape
    N = B.shape[0]
    acc = torch.zeros(M, N)
    for k in range(K // 128):
        part = A[:, k * 128:(k + 1) * 128].float() @ B[:, k * 128:(k + 1) * 128].float().T
        sb = SB[:, k].repeat_interleave(128)[:N]
        acc += part * SA[k][:, None] * sb[None, :]
    return acc.to(getattr(torch, out_dtype))


def quantize_blocks(a, b):
    """Quantize float32 A [M, K] per (row, 128-group) and B [N, K] per 128 x 128 block to E4M3FN,
    returning (A_fp8, SA [K / 128, M], B_fp8, SB [N / 128, K / 128])."""
    import torch

    M, K = a.shape
    N = b.shape[0]
    ag = a.view(M, K // 128, 128)
    sa = ag.abs().amax(2).clamp(min=1e-4) / 448.0
    aq = (ag / sa[:, :, None]).to(torch.float8_e4m3fn).view(M, K)
    bg = b.view(N // 128, 128, K // 128, 128)
    sb = bg.abs().amax((1, 3)).clamp(min=1e-4) / 448.0
    bq = (bg / sb[:, None, :, None]).to(torch.float8_e4m3fn).view(N, K)
    return aq, sa.T.contiguous(), bq, sb


def example():
    """The case `tl-ascend run` uses: the block-scaled FP8 GEMM (dav-3510)."""
    import torch

    from ascend_backend.testing import Case

    M, N, K = 128, 256, 256
    torch.manual_seed(0)
    aq, sa, bq, sb = quantize_blocks(torch.randn(M, K), torch.randn(N, K))
    c = torch.zeros(M, N, dtype=torch.bfloat16)
    return Case(func=matmul_fp8_block_scale(M, N, K, 64, 128), inputs=[aq, bq, sa, sb, c], outputs=[4],
                reference=lambda a, b, sa, sb, c: [reference_block_scale(a, b, sa, sb)], atol=2e-2, rtol=2e-2)
