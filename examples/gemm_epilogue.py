"""GEMM with a fused epilogue: C = cast(scale * gelu_or_relu(A x B + bias)).

The gemm runs on the Cube core; the epilogue (a T.Parallel over the accumulator) on the Vector
cores. The compiler splits the kernel, routes the accumulator through a GM workspace and orders
the two sides with cross-core flags.
"""

import tilelang.language as T


def matmul_epilogue(M=256, N=256, K=256, block_M=128, block_N=128, block_K=64, dtype="float16",
                    out_dtype="float16", scale=0.5, act="relu", num_stages=2):
    @T.prim_func
    def gemm_epilogue(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), Bias: T.Tensor((N,), "float32"),
                      C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            bias = T.alloc_fragment((block_N,), "float32")
            out = T.alloc_fragment((block_M, block_N), out_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(Bias[bx * block_N], bias)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = C_local[i, j] + bias[j]
            if act == "relu":
                for i, j in T.Parallel(block_M, block_N):
                    out[i, j] = T.max(C_local[i, j], 0.0) * scale
            else:  # GELU, tanh approximation
                for i, j in T.Parallel(block_M, block_N):
                    out[i, j] = 0.5 * C_local[i, j] * (1.0 + T.tanh(0.7978845608 * (
                        C_local[i, j] + 0.044715 * C_local[i, j] * C_local[i, j] * C_local[i, j]))) * scale
            T.copy(out, C[by * block_M, bx * block_N])

    return gemm_epilogue


def reference(A, B, bias, scale=0.5, act="relu", out_dtype="float16"):
    import torch

    x = A.float() @ B.float() + bias.float()
    x = torch.relu(x) if act == "relu" else torch.nn.functional.gelu(x, approximate="tanh")
    return (x * scale).to(getattr(torch, out_dtype))


def example():
    import torch

    from ascend_backend.testing import Case

    torch.manual_seed(0)
    a = torch.randn(256, 256, dtype=torch.float16)
    b = torch.randn(256, 256, dtype=torch.float16)
    bias = torch.randn(256)
    c = torch.empty(256, 256, dtype=torch.float16)
    return Case(func=matmul_epilogue(), inputs=[a, b, bias, c], outputs=[3],
                reference=lambda a, b, bias, c: [reference(a, b, bias)], atol=2e-2, rtol=2e-2)
