"""Zero-trip loops and sizes of 0 are valid (issue 26, item 8): T.Pipelined(0), a symbolic K = 0 and a
grid of 0 blocks at a call run correctly on both arches (before: the per-call window check said the
window "would start at -68719476736", or the grid was refused). A grid of no block launches nothing
and leaves the outputs untouched."""

import pytest
import tilelang.language as T
import torch
from strict_run import run

import ascend_backend


def gemm_loop(K, trips):
    @T.prim_func
    def g(A: T.Tensor((64, K), "float16"), B: T.Tensor((K, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1):
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.clear(c)
            for k in T.Pipelined(trips, num_stages=2):
                T.copy(A[0, k * 64], a)
                T.copy(B[k * 64, 0], b)
                T.gemm(a, b, c)
            T.copy(c, C[0, 0])

    return g


def test_static_trips_need_no_zeroing_gemm():
    src = ascend_backend.lower(gemm_loop(128, 2), "ascendc").source
    assert "Fill(" not in src and src.count("Mmad(") == 1


def test_pipelined_zero_trips(arch):
    c = torch.full((64, 64), 7.0)
    run(gemm_loop(64, 0), [torch.randn(64, 64).half(), torch.randn(64, 64).half(), c], arch)
    assert torch.equal(c, torch.zeros(64, 64))  # the sum over no K is 0


def test_symbolic_columns_zero(arch):
    """Row sums streamed over a symbolic number of columns, K = 0 among others."""
    K = T.dynamic("K")

    @T.prim_func
    def rowsum(X: T.Tensor((64, K), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1):
            x = T.alloc_fragment((64, 64), "float32")
            acc = T.alloc_fragment((64,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, 64), num_stages=2):
                T.copy(X[0, k * 64], x)
                T.reduce_sum(x, acc, dim=1, clear=False)
            T.copy(acc, Y[0])

    k = ascend_backend.compile(rowsum, target={"kind": "ascendc", "arch": arch}, runtime="emulator")
    for n in (0, 64, 100):
        x, y = torch.randn(64, n), torch.full((64,), 5.0)
        k(x, y)
        assert all(r.ok for r in k.reports)
        torch.testing.assert_close(y, x.sum(dim=1), atol=1e-4, rtol=1e-5)


def scale_kernel():
    N = T.dynamic("N")

    @T.prim_func
    def scale(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), Z: T.Tensor((64,), "float32")):
        with T.Kernel(T.ceildiv(N, 64)) as bx:  # no block for N = 0
            x = T.alloc_fragment((64,), "float32")
            T.copy(X[bx * 64], x)
            for i in T.Parallel(64):
                x[i] = x[i] * 2.0
            T.copy(x, Y[bx * 64])
        with T.Kernel(1):  # a second launch that always runs
            z = T.alloc_fragment((64,), "float32")
            T.fill(z, 3.0)
            T.copy(z, Z[0])

    return scale


def test_grid_of_no_block_launches_nothing(arch):
    k = ascend_backend.compile(scale_kernel(), target={"kind": "ascendc", "arch": arch}, runtime="emulator")
    x, y, z = torch.randn(0), torch.randn(0), torch.zeros(64)
    k(x, y, z)
    assert k.last_block_dims == [0, 1]
    first = k.reports[0]
    assert first.ok and first.block_dim == 0 and not first.op_counts and "not launched" in first.summary()
    assert torch.equal(z, torch.full((64,), 3.0))  # the other launch ran
    x, y = torch.randn(100), torch.zeros(100)
    k(x, y, z)
    assert k.last_block_dims == [2, 1]
    torch.testing.assert_close(y, 2 * x)


def test_negative_grid_is_still_refused():
    @T.prim_func
    def neg(X: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(n - 4):
            x = T.alloc_fragment((64,), "float32")
            T.copy(X[0], x)
            T.copy(x, X[0])

    k = ascend_backend.compile(neg, target="ascendc", runtime="emulator")
    with pytest.raises(ValueError, match="an extent of 0 skips the launch"):
        k(torch.zeros(64), 2)


def gemm_symbolic_k(epilogue: bool):
    K = T.dynamic("K")

    @T.prim_func
    def g(A: T.Tensor((64, K), "float16"), B: T.Tensor((K, 64), "float16"), Bias: T.Tensor((64,), "float32"),
          C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1):
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            bias = T.alloc_fragment((64,), "float32")
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, 64), num_stages=2):
                T.copy(A[0, k * 64], a)
                T.copy(B[k * 64, 0], b)
                T.gemm(a, b, c)
            if epilogue:
                T.copy(Bias[0], bias)
                for i, j in T.Parallel(64, 64):
                    c[i, j] = c[i, j] + bias[j]
            T.copy(c, C[0, 0])

    return g


@pytest.mark.parametrize("epilogue", [False, True])
def test_gemm_over_a_symbolic_k_of_zero(arch, epilogue):
    """The T.clear folds into the first Mmad's overwrite; with K = 0 no Mmad runs, and the zero gemm
    after the loop (empty_loops) gives C = 0 (+ bias) instead of what L0C held (NaN in the emulator)."""
    k = ascend_backend.compile(gemm_symbolic_k(epilogue), target={"kind": "ascendc", "arch": arch},
                               runtime="emulator")
    assert "Fill(" in k.kernel_source and "InitConstValueParams<uint16_t>" in k.kernel_source
    bias = torch.randn(64)
    for n in (0, 64, 128):
        a, b, c = torch.randn(64, n).half(), torch.randn(n, 64).half(), torch.full((64, 64), 7.0)
        k(a, b, bias, c)
        assert all(r.ok for r in k.reports)
        ref = a.float() @ b.float() + (bias if epilogue else 0)
        torch.testing.assert_close(c, ref, atol=1e-2, rtol=1e-3)
