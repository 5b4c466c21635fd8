"""int8 GEMM on the Cube core (int8 x int8 -> int32, Mmad page tables 5 and 7): C = A x B^T with A
[M, K] and B [N, K] (the weight layout, K contiguous for both operands, which 1-byte operands need
on dav-c220), written as TileLang's GEMM examples write it.

`matmul_int8` writes the int32 accumulator (or its float16 / bfloat16 conversion);
`matmul_int8_dequant` dequantizes on the Vector side: C = (A x B^T) * sa[m] * sb[n] in float16
(per-token activation scales, per-channel weight scales: the W8A8 form).
`tl-ascend run examples/int8_gemm.py` runs the dequantized one against torch.
"""

import tilelang.language as T


def matmul_int8(M=256, N=256, K=512, block_M=128, block_N=128, block_K=128, num_stages=2, out_dtype="int32"):
    """C = A x B^T; out_dtype int32 (the accumulator), or float16 / bfloat16 (bfloat16: dav-3510),
    which Fixpipe converts the int32 accumulator to on the way out."""

    @T.prim_func
    def gemm_i8(A: T.Tensor((M, K), "int8"), B: T.Tensor((N, K), "int8"), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "int8")
            B_shared = T.alloc_shared((block_N, block_K), "int8")
            C_local = T.alloc_fragment((block_M, block_N), "int32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm_i8


def matmul_int8_dequant(M=256, N=256, K=512, block_M=128, block_N=128, block_K=128, num_stages=2,
                        out_dtype="float16"):
    @T.prim_func
    def gemm_w8a8(A: T.Tensor((M, K), "int8"), B: T.Tensor((N, K), "int8"), SA: T.Tensor((M,), "float32"),
                  SB: T.Tensor((N,), "float32"), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "int8")
            B_shared = T.alloc_shared((block_N, block_K), "int8")
            C_local = T.alloc_fragment((block_M, block_N), "int32")
            sa = T.alloc_fragment((block_M,), "float32")
            sb = T.alloc_fragment((block_N,), "float32")
            C_out = T.alloc_fragment((block_M, block_N), out_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(SA[by * block_M], sa)
            T.copy(SB[bx * block_N], sb)
            for i, j in T.Parallel(block_M, block_N):
                C_out[i, j] = C_local[i, j] * sa[i] * sb[j]
            T.copy(C_out, C[by * block_M, bx * block_N])

    return gemm_w8a8


def reference(A, B, SA=None, SB=None, out_dtype="float16"):
    import torch

    acc = A.int() @ B.int().T
    if SA is None:
        return acc
    return (acc.float() * SA[:, None] * SB[None, :]).to(getattr(torch, out_dtype))


def example():
    """The case `tl-ascend run` uses: the W8A8 GEMM with dequantized float16 output."""
    import torch

    from ascend_backend.testing import Case

    M, N, K = 128, 128, 256
    torch.manual_seed(0)
    a = torch.randint(-128, 128, (M, K), dtype=torch.int8)
    b = torch.randint(-128, 128, (N, K), dtype=torch.int8)
    sa = torch.rand(M) * 1e-2
    sb = torch.rand(N) * 1e-2
    c = torch.zeros(M, N, dtype=torch.float16)
    return Case(func=matmul_int8_dequant(M, N, K, 64, 64, 128), inputs=[a, b, sa, sb, c], outputs=[4],
                reference=lambda a, b, sa, sb, c: [reference(a, b, sa, sb)], atol=1e-2, rtol=1e-2)
