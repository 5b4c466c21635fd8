"""The kernel suite: every kernel family of the foundation issue as a Case (kernel, inputs,
reference, tolerance). Run on the emulator by tests/compiler/test_kernels_emulator.py and on an
NPU by tests/npu/test_device.py (``pytest -m npu``), against the same references."""

import elementwise
import gemm
import kernels
import rmsnorm
import softmax
import tilelang.language as T
import torch

from ascend_backend.testing import Case

DT = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def rand(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(DT[dtype])


def _all_binary(a, b):
    return T.max(a, b) + T.min(a, b) * (a - b) / (T.abs(b) + 1.0)


def _all_binary_ref(a, b):
    return torch.maximum(a, b) + torch.minimum(a, b) * (a - b) / (b.abs() + 1.0)


def binary_ops(dtype):
    # 100 x 120 with 32 x 64 tiles: both dimensions have tails.
    f = kernels.binary_2d(_all_binary, M=100, N=120, bM=32, bN=64, dtype=dtype, compute=dtype)
    a, b = rand((100, 120), dtype, 1), rand((100, 120), dtype, 2)
    tol = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 8e-2}[dtype]
    return Case(f, [a, b, torch.empty_like(a)], [2],
                lambda a, b, c: [_all_binary_ref(a.float(), b.float()).to(a.dtype)], atol=tol, rtol=tol)


def _scalar_ops(a, b):
    return T.max(a * 2.0 - 1.0, 0.0) + T.min(b, 0.5) - 3.0 / (T.abs(a) + 1.0)


def scalar_forms():
    f = kernels.binary_2d(_scalar_ops, M=64, N=128, bM=32, bN=128, dtype="float32", compute="float32")
    a, b = rand((64, 128), "float32", 3), rand((64, 128), "float32", 4)
    return Case(f, [a, b, torch.empty_like(a)], [2],
                lambda a, b, c: [torch.relu(a * 2 - 1) + torch.clamp(b, max=0.5) - 3.0 / (a.abs() + 1)],
                atol=1e-5, rtol=1e-5)


def cast(src, dst):
    f = kernels.unary_1d(lambda x: T.Cast(dst, x), N=1000, block=256, dtype=src, out_dtype=dst)
    x = rand((1000,), src, 5) * 3
    return Case(f, [x, torch.empty(1000, dtype=DT[dst])], [1], lambda x, y: [x.float().to(DT[dst])], atol=0, rtol=0)


def _unary_all(x):
    ax = T.abs(x) + 1.0
    return T.exp(x * 0.5) + T.log(ax) + T.sqrt(ax) + T.rsqrt(ax) + T.exp2(x * 0.25) + T.log2(ax)


def _unary_ref(x):
    ax = x.abs() + 1
    return (torch.exp(x * 0.5) + torch.log(ax) + torch.sqrt(ax) + torch.rsqrt(ax) + torch.exp2(x * 0.25)
            + torch.log2(ax))


def unary_math(dtype):
    f = kernels.unary_1d(_unary_all, N=1000, block=256, dtype=dtype)
    x = rand((1000,), dtype, 6)
    tol = 1e-4 if dtype == "float32" else 3e-2
    return Case(f, [x, torch.empty_like(x)], [1], lambda x, y: [_unary_ref(x.float()).to(x.dtype)],
                atol=tol, rtol=tol)


def axpby_1d():
    f = elementwise.axpby_1d(N=3000, block=1024)
    a, b = rand((3000,), "float16", 7), rand((3000,), "float16", 8)
    return Case(f, [a, b, torch.empty_like(a)], [2], lambda a, b, y: [torch.relu(a.float() * 2 - b.float()).half()],
                atol=1e-3, rtol=1e-3)


def broadcasts():
    f = kernels.bias_scale(M=70, N=96, bM=32)
    x, b, s = rand((70, 96), "float32", 9), rand((96,), "float32", 10), rand((70,), "float32", 11)
    return Case(f, [x, b, s, torch.empty(70, 96)], [3], lambda x, b, s, y: [(x + b) * s[:, None]],
                atol=1e-5, rtol=1e-5)


def gemm_transposes(trans_A, trans_B):
    M, N, K = 128, 192, 256
    f = gemm.matmul(M, N, K, 64, 64, 64, trans_A, trans_B, "float16", "float16")
    a = rand((K, M) if trans_A else (M, K), "float16", 12)
    b = rand((N, K) if trans_B else (K, N), "float16", 13)
    return Case(f, [a, b, torch.empty(M, N, dtype=torch.float16)], [2],
                lambda a, b, c: [gemm.reference(a, b, trans_A, trans_B, "float16")], atol=5e-2, rtol=1e-2)


def gemm_tails(dtype, out_dtype):
    # M, N tails (200 % 128, 136 % 128) and a K tail (80 % 64 = 16).
    M, N, K = 200, 136, 80
    f = gemm.matmul(M, N, K, 128, 128, 64, False, True, dtype, out_dtype)
    a, b = rand((M, K), dtype, 14), rand((N, K), dtype, 15)
    tol = 2e-2 if out_dtype == "float32" else 6e-2
    return Case(f, [a, b, torch.empty(M, N, dtype=DT[out_dtype])], [2],
                lambda a, b, c: [gemm.reference(a, b, False, True, out_dtype)], atol=tol, rtol=tol)


def row_reduce(kind):
    f = kernels.row_reduce(kind, M=64, N=200, bM=16)
    x = rand((64, 200), "float32", 16)
    return Case(f, [x, torch.empty(64)], [1], lambda x, y: [x.sum(-1) if kind == "sum" else x.amax(-1)],
                atol=1e-4, rtol=1e-5)


def rms(M, N, bM):
    f = rmsnorm.rms_norm(M, N, bM)
    x, w = rand((M, N), "float16", 17), rand((N,), "float16", 18)
    return Case(f, [x, w, torch.empty_like(x)], [2], lambda x, w, y: [rmsnorm.reference(x, w)], atol=2e-2, rtol=2e-2)


def soft(M, N, bM):
    f = softmax.softmax(M, N, bM)
    x = rand((M, N), "float16", 19)
    return Case(f, [x, torch.empty_like(x)], [1], lambda x, y: [softmax.reference(x)], atol=1e-2, rtol=1e-2)


CASES = {
    **{f"binary_ops_{d}": (lambda d=d: binary_ops(d)) for d in ("float16", "bfloat16", "float32")},
    "scalar_forms": scalar_forms,
    **{f"cast_{s}_{d}": (lambda s=s, d=d: cast(s, d)) for s, d in (
        ("float16", "float32"), ("bfloat16", "float32"), ("float32", "float16"), ("float32", "bfloat16"),
        ("float16", "bfloat16"))},
    **{f"unary_math_{d}": (lambda d=d: unary_math(d)) for d in ("float32", "float16")},
    "elementwise_example": elementwise.example,
    "axpby_1d": axpby_1d,
    "row_col_broadcast_gm_store": broadcasts,
    **{f"gemm_tA{int(a)}_tB{int(b)}": (lambda a=a, b=b: gemm_transposes(a, b))
       for a in (False, True) for b in (False, True)},
    **{f"gemm_tails_{d}_{o}": (lambda d=d, o=o: gemm_tails(d, o)) for d, o in (
        ("bfloat16", "bfloat16"), ("bfloat16", "float32"), ("float16", "float32"), ("float16", "bfloat16"))},
    "gemm_example": gemm.example,
    "reduce_sum": lambda: row_reduce("sum"),
    "reduce_max": lambda: row_reduce("max"),
    "rmsnorm_256x128": lambda: rms(256, 128, 32),
    "rmsnorm_tails_100x72": lambda: rms(100, 72, 32),
    "softmax_256x256": lambda: soft(256, 256, 16),
    "softmax_tails_50x100": lambda: soft(50, 100, 16),
}
