"""W4A16 GEMM (the dequantize-gemm family): C = A x dequant(B)^T with A [M, K] float16 and B packed
int4 [N, K / 2] (two signed 4-bit weights per int8 byte, the even element in the low nibble) and
one float16 scale per output channel, written as TileLang's dequantize examples write it.

The Vector side unpacks B: the element-wise shift / mask / sign-extend in T.Parallel is recognised
as the int4b_t packing and becomes one Cast (int4b_t -> half, Cast page, both arches); the
unpacked tile then crosses to the Cube for the gemm. `tl-ascend run examples/dequant_gemm_int4.py`
runs it against torch.
"""

import tilelang.language as T
from tvm import tirx


def decode_i4(packed, pos):
    """The signed 4-bit value at nibble ``pos`` (0: low, 1: high) of an int8 byte."""
    nib = (packed >> (pos.astype("int8") * tirx.const(4, "int8"))) & tirx.const(15, "int8")
    return (nib << tirx.const(4, "int8")) >> tirx.const(4, "int8")  # sign-extend the nibble


def matmul_w4a16(M=128, N=128, K=256, block_M=64, block_N=64, block_K=128, num_stages=1):
    @T.prim_func
    def gemm_w4a16(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K // 2), "int8"),
                   Scale: T.Tensor((N,), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_packed = T.alloc_fragment((block_N, block_K // 2), "int8")
            B_dq = T.alloc_shared((block_N, block_K), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            scale = T.alloc_fragment((block_N,), "float16")
            C_out = T.alloc_fragment((block_M, block_N), "float16")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K // 2], B_packed)
                for i, j in T.Parallel(block_N, block_K):
                    B_dq[i, j] = T.cast(decode_i4(B_packed[i, j // 2], j % 2), "float16")
                T.gemm(A_shared, B_dq, C_local, transpose_B=True)
            T.copy(Scale[bx * block_N], scale)
            for i, j in T.Parallel(block_M, block_N):
                C_out[i, j] = C_local[i, j] * scale[j]
            T.copy(C_out, C[by * block_M, bx * block_N])

    return gemm_w4a16


def pack_int4(w):
    """Signed int4 values [N, K] (in -8..7) -> int8 bytes [N, K / 2], element 2k in the low nibble."""
    import torch

    lo = w[:, 0::2].to(torch.int16) & 0xF
    hi = w[:, 1::2].to(torch.int16) & 0xF
    return (lo | (hi << 4)).to(torch.uint8).view(torch.int8)


def reference(A, W, scale):
    """W: the unpacked int4 values [N, K]."""
    return ((A.float() @ W.float().T) * scale.float()[None, :]).half()


def example():
    import torch

    from ascend_backend.testing import Case

    M, N, K = 128, 128, 256
    torch.manual_seed(0)
    a = torch.randn(M, K).half()
    w = torch.randint(-8, 8, (N, K), dtype=torch.int8)
    scale = (torch.rand(N) * 0.05).half()
    c = torch.zeros(M, N, dtype=torch.float16)
    return Case(func=matmul_w4a16(M, N, K), inputs=[a, pack_int4(w), scale, c], outputs=[3],
                reference=lambda a, b, s, c: [reference(a, w, s)], atol=1e-2, rtol=1e-2)
