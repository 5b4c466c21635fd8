"""Every kernel family of the foundation issue, compiled for both arches and run on the emulator
in strict mode (any race or flag error fails) against a torch reference."""

import elementwise
import gemm
import kernels
import pytest
import rmsnorm
import softmax
import tilelang.language as T
import torch

from ascend_backend.testing import Case, run_case

DT = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def _rand(shape, dtype, seed=0, positive=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    if positive:
        x = x.abs() + 0.5
    return x.to(DT[dtype])


# ---------------------------------------------------------------- element-wise


def _all_binary(a, b):
    return T.max(a, b) + T.min(a, b) * (a - b) / (T.abs(b) + 1.0)


def _all_binary_ref(a, b):
    return torch.maximum(a, b) + torch.minimum(a, b) * (a - b) / (b.abs() + 1.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_binary_ops_with_tails(arch, dtype):
    # 100 x 120 with 32 x 64 tiles: both dimensions have tails.
    f = kernels.binary_2d(_all_binary, M=100, N=120, bM=32, bN=64, dtype=dtype, compute=dtype)
    a, b = _rand((100, 120), dtype, 1), _rand((100, 120), dtype, 2)
    c = torch.empty_like(a)
    tol = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 8e-2}[dtype]
    run_case(Case(f, [a, b, c], [2], lambda a, b, c: [_all_binary_ref(a.float(), b.float()).to(a.dtype)],
                  atol=tol, rtol=tol), arch)


def _scalar_ops(a, b):
    return T.max(a * 2.0 - 1.0, 0.0) + T.min(b, 0.5) - 3.0 / (T.abs(a) + 1.0)


def _scalar_ref(a, b):
    return torch.relu(a * 2 - 1) + torch.clamp(b, max=0.5) - 3.0 / (a.abs() + 1)


def test_scalar_forms_and_relu(arch):
    f = kernels.binary_2d(_scalar_ops, M=64, N=128, bM=32, bN=128, dtype="float32", compute="float32")
    a, b = _rand((64, 128), "float32", 3), _rand((64, 128), "float32", 4)
    run_case(Case(f, [a, b, torch.empty_like(a)], [2], lambda a, b, c: [_scalar_ref(a, b)], atol=1e-5, rtol=1e-5),
             arch)


@pytest.mark.parametrize("src,dst", [("float16", "float32"), ("bfloat16", "float32"), ("float32", "float16"),
                                     ("float32", "bfloat16"), ("float16", "bfloat16")])
def test_casts(arch, src, dst):
    f = kernels.unary_1d(lambda x: T.Cast(dst, x), N=1000, block=256, dtype=src, out_dtype=dst)
    x = _rand((1000,), src, 5) * 3
    run_case(Case(f, [x, torch.empty(1000, dtype=DT[dst])], [1], lambda x, y: [x.float().to(DT[dst])],
                  atol=0, rtol=0), arch)


def _unary_all(x):
    ax = T.abs(x) + 1.0
    return T.exp(x * 0.5) + T.log(ax) + T.sqrt(ax) + T.rsqrt(ax) + T.exp2(x * 0.25) + T.log2(ax)


def _unary_ref(x):
    ax = x.abs() + 1
    return torch.exp(x * 0.5) + torch.log(ax) + torch.sqrt(ax) + torch.rsqrt(ax) + torch.exp2(x * 0.25) + \
        torch.log2(ax)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_unary_math_1d(arch, dtype):
    f = kernels.unary_1d(_unary_all, N=1000, block=256, dtype=dtype)
    x = _rand((1000,), dtype, 6)
    tol = 1e-4 if dtype == "float32" else 3e-2
    run_case(Case(f, [x, torch.empty_like(x)], [1], lambda x, y: [_unary_ref(x.float()).to(x.dtype)],
                  atol=tol, rtol=tol), arch)


def test_examples_elementwise(arch):
    run_case(elementwise.example(), arch)


def test_axpby_1d_fp16_via_fp32(arch):
    f = elementwise.axpby_1d(N=3000, block=1024)
    a, b = _rand((3000,), "float16", 7), _rand((3000,), "float16", 8)
    run_case(Case(f, [a, b, torch.empty_like(a)], [2],
                  lambda a, b, y: [torch.relu(a.float() * 2 - b.float()).half()], atol=1e-3, rtol=1e-3), arch)


def test_row_and_column_broadcast_with_gm_store(arch):
    f = kernels.bias_scale(M=70, N=96, bM=32)
    x, b, s = _rand((70, 96), "float32", 9), _rand((96,), "float32", 10), _rand((70,), "float32", 11)
    run_case(Case(f, [x, b, s, torch.empty(70, 96)], [3], lambda x, b, s, y: [(x + b) * s[:, None]],
                  atol=1e-5, rtol=1e-5), arch)


# ---------------------------------------------------------------- GEMM


@pytest.mark.parametrize("trans_A", [False, True])
@pytest.mark.parametrize("trans_B", [False, True])
def test_gemm_transposes_fp16(arch, trans_A, trans_B):
    M, N, K = 128, 192, 256
    f = gemm.matmul(M, N, K, 64, 64, 64, trans_A, trans_B, "float16", "float16")
    a = _rand((K, M) if trans_A else (M, K), "float16", 12)
    b = _rand((N, K) if trans_B else (K, N), "float16", 13)
    run_case(Case(f, [a, b, torch.empty(M, N, dtype=torch.float16)], [2],
                  lambda a, b, c: [gemm.reference(a, b, trans_A, trans_B, "float16")], atol=5e-2, rtol=1e-2), arch)


@pytest.mark.parametrize("dtype,out_dtype", [("bfloat16", "bfloat16"), ("bfloat16", "float32"),
                                             ("float16", "float32"), ("float16", "bfloat16")])
def test_gemm_dtypes_with_tails(arch, dtype, out_dtype):
    # M, N tails (200 % 128, 136 % 128) and a K tail (80 % 64 = 16).
    M, N, K = 200, 136, 80
    f = gemm.matmul(M, N, K, 128, 128, 64, False, True, dtype, out_dtype)
    a, b = _rand((M, K), dtype, 14), _rand((N, K), dtype, 15)
    tol = 2e-2 if out_dtype == "float32" else 6e-2
    run_case(Case(f, [a, b, torch.empty(M, N, dtype=DT[out_dtype])], [2],
                  lambda a, b, c: [gemm.reference(a, b, False, True, out_dtype)], atol=tol, rtol=tol), arch)


def test_gemm_example(arch):
    run_case(gemm.example(), arch)


# ---------------------------------------------------------------- reductions


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_row_reduce_with_column_tail(arch, kind):
    f = kernels.row_reduce(kind, M=64, N=200, bM=16)
    x = _rand((64, 200), "float32", 16)
    run_case(Case(f, [x, torch.empty(64)], [1], lambda x, y: [x.sum(-1) if kind == "sum" else x.amax(-1)],
                  atol=1e-4, rtol=1e-5), arch)


@pytest.mark.parametrize("M,N,bM", [(256, 128, 32), (100, 72, 32)])
def test_rmsnorm(arch, M, N, bM):
    f = rmsnorm.rms_norm(M, N, bM)
    x, w = _rand((M, N), "float16", 17), _rand((N,), "float16", 18)
    run_case(Case(f, [x, w, torch.empty_like(x)], [2], lambda x, w, y: [rmsnorm.reference(x, w)],
                  atol=2e-2, rtol=2e-2), arch)


@pytest.mark.parametrize("M,N,bM", [(256, 256, 16), (50, 100, 16)])
def test_softmax(arch, M, N, bM):
    f = softmax.softmax(M, N, bM)
    x = _rand((M, N), "float16", 19)
    run_case(Case(f, [x, torch.empty_like(x)], [1], lambda x, y: [softmax.reference(x)], atol=1e-2, rtol=1e-2),
             arch)
