"""Element-wise kernels on 1-D and 2-D tiles, as TileLang's examples write them."""

import tilelang.language as T


def add_2d(M=256, N=256, block_M=32, block_N=128, dtype="float16"):
    @T.prim_func
    def add(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_N), dtype)
            B_s = T.alloc_shared((block_M, block_N), dtype)
            C_s = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_s)
            T.copy(B[by * block_M, bx * block_N], B_s)
            for i, j in T.Parallel(block_M, block_N):
                C_s[i, j] = A_s[i, j] + B_s[i, j]
            T.copy(C_s, C[by * block_M, bx * block_N])

    return add


def axpby_1d(N=4096, block=1024, dtype="float16"):
    """y = relu(2 * a - b) on a 1-D tensor, in fp32 inside the tile."""

    @T.prim_func
    def axpby(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            a = T.alloc_fragment((block,), "float32")
            b = T.alloc_fragment((block,), "float32")
            a_h = T.alloc_shared((block,), dtype)
            b_h = T.alloc_shared((block,), dtype)
            T.copy(A[bx * block], a_h)
            T.copy(B[bx * block], b_h)
            T.copy(a_h, a)
            T.copy(b_h, b)
            for i in T.Parallel(block):
                a[i] = T.max(a[i] * 2.0 - b[i], 0.0)
            T.copy(a, a_h)
            T.copy(a_h, Y[bx * block])

    return axpby


def example():
    import torch

    from ascend_backend.testing import Case

    torch.manual_seed(0)
    a = torch.randn(256, 256, dtype=torch.float16)
    b = torch.randn(256, 256, dtype=torch.float16)
    c = torch.empty_like(a)
    return Case(func=add_2d(), inputs=[a, b, c], outputs=[2], reference=lambda a, b, c: [a + b])
