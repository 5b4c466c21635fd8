"""GEMM C = op(A) x op(B), written as TileLang's own GEMM examples write it.

`tl-ascend run examples/gemm.py` runs it on the emulator against torch.
"""

import tilelang.language as T


def matmul(M=256, N=256, K=256, block_M=128, block_N=128, block_K=64, trans_A=False, trans_B=False,
           dtype="float16", out_dtype="float16", accum_dtype="float32", num_stages=2):
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_tile = (block_K, block_M) if trans_A else (block_M, block_K)
    B_tile = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def gemm(A: T.Tensor(A_shape, dtype), B: T.Tensor(B_shape, dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared(A_tile, dtype)
            B_shared = T.alloc_shared(B_tile, dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_A:
                    T.copy(A[k * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_A=trans_A, transpose_B=trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


def reference(A, B, trans_A=False, trans_B=False, out_dtype="float16"):
    import torch

    a = A.float().T if trans_A else A.float()
    b = B.float().T if trans_B else B.float()
    return (a @ b).to(getattr(torch, out_dtype))


def example():
    """The case `tl-ascend run` uses: kernel, inputs, reference and tolerance."""
    import torch

    from ascend_backend.testing import Case

    M, N, K = 256, 256, 256
    torch.manual_seed(0)
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=torch.float16)
    return Case(func=matmul(M, N, K), inputs=[a, b, c], outputs=[2],
                reference=lambda a, b, c: [reference(a, b)], atol=1e-2, rtol=1e-2)
