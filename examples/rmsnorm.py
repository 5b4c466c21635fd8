"""RMSNorm over rows, on the vector cores: y = x * rsqrt(mean(x^2) + eps) * w."""

import tilelang.language as T


def rms_norm(M=256, N=128, block_M=32, dtype="float16", eps=1e-6):
    @T.prim_func
    def rmsnorm(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x_s = T.alloc_shared((block_M, N), dtype)
            w_s = T.alloc_shared((N,), dtype)
            x = T.alloc_fragment((block_M, N), "float32")
            sq = T.alloc_fragment((block_M, N), "float32")
            w = T.alloc_fragment((N,), "float32")
            ss = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x_s)
            T.copy(W[0], w_s)
            T.copy(x_s, x)
            T.copy(w_s, w)
            for i, j in T.Parallel(block_M, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, ss, dim=1)
            for i in T.Parallel(block_M):
                ss[i] = T.rsqrt(ss[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * ss[i] * w[j]
            T.copy(x, x_s)
            T.copy(x_s, Y[bx * block_M, 0])

    return rmsnorm


def reference(x, w, eps=1e-6):
    xf = x.float()
    return (xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w.float()).to(x.dtype)


def example():
    import torch

    from ascend_backend.testing import Case

    torch.manual_seed(0)
    x = torch.randn(256, 128, dtype=torch.float16)
    w = torch.randn(128, dtype=torch.float16)
    y = torch.empty_like(x)
    return Case(func=rms_norm(), inputs=[x, w, y], outputs=[2], reference=lambda x, w, y: [reference(x, w)],
                atol=2e-2, rtol=2e-2)
