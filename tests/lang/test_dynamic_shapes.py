"""Dynamic shapes: symbolic dimensions (T.symbolic / T.dynamic) as scalar kernel arguments the
callable derives from the tensors, windows across the runtime end of such a dimension, grids sized
by the arguments; the same compiled kernel called with several shapes, on the emulator against
torch, both arches, strict mode. Then the errors of a call whose arguments do not agree."""

import re

import pytest
import tilelang.language as T
import torch
from dsl_lines import marker_line

import ascend_backend
from ascend_backend.errors import UnsupportedError
from ascend_backend.npu import host_wrapper


def compile_(func, arch="dav-3510", **kw):
    return ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True,
                                  **kw)


def scale_rows(bM=32, D=64):
    """C = A * 2 + B over a symbolic number of rows N, one block per bM rows (the last may be a tail)."""
    N = T.dynamic("N")

    @T.prim_func
    def scale(A: T.Tensor((N, D), "float16"), B: T.Tensor((N, D), "float16"), C: T.Tensor((N, D), "float16")):
        with T.Kernel(T.ceildiv(N, bM)) as bx:
            a = T.alloc_fragment((bM, D), "float16")
            b = T.alloc_fragment((bM, D), "float16")
            T.copy(A[bx * bM, 0], a)
            T.copy(B[bx * bM, 0], b)
            for i, j in T.Parallel(bM, D):
                a[i, j] = a[i, j] * 2.0 + b[i, j]
            T.copy(a, C[bx * bM, 0])

    return scale


def test_one_kernel_many_shapes(arch):
    k = compile_(scale_rows(), arch, out_idx=[2])
    assert "int32_t N)" in k.kernel_source  # the symbolic dimension is a scalar argument of the entry
    for n in (64, 100, 7):
        a, b = torch.randn(n, 64).half(), torch.randn(n, 64).half()
        c = k(a, b)
        assert c.shape == (n, 64)
        assert k.last_block_dims == [(n + 31) // 32]
        assert all(r.ok for r in k.reports)
        torch.testing.assert_close(c, (a.float() * 2 + b.float()).half(), atol=1e-2, rtol=1e-2)


def gemm_rows(K=64, N=64, bM=32, bN=32, bK=32):
    """C = A @ B with a symbolic M: a Cube + Vector kernel whose grid (and, on dav-c220, whose GM
    workspace for the crossing tile) is sized at call time."""
    M = T.dynamic("M")

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM)) as (bx, by):
            a = T.alloc_shared((bM, bK), "float16")
            b = T.alloc_shared((bK, bN), "float16")
            c = T.alloc_fragment((bM, bN), "float32")
            T.clear(c)
            for k in T.Pipelined(K // bK, num_stages=2):
                T.copy(A[by * bM, k * bK], a)
                T.copy(B[k * bK, bx * bN], b)
                T.gemm(a, b, c)
            for i, j in T.Parallel(bM, bN):
                c[i, j] = c[i, j] + 1.0
            T.copy(c, C[by * bM, bx * bN])

    return gemm


def test_gemm_with_a_symbolic_m(arch):
    k = compile_(gemm_rows(), arch, out_idx=[2])
    for m in (64, 40):
        a, b = torch.randn(m, 64).half(), torch.randn(64, 64).half()
        c = k(a, b)
        assert k.last_block_dims == [2 * ((m + 31) // 32)]
        assert all(r.ok for r in k.reports)
        torch.testing.assert_close(c, a.float() @ b.float() + 1, atol=1e-2, rtol=1e-2)


def segments(bM=16, D=32):
    """Varlen style: sequence b is rows [cu[b], cu[b + 1]) of X; a grid of (ceil(max_len / bM), batch)
    blocks, sized by the scalar argument max_len; block (bx, b) scales its rows by b + 1. The
    tensors' row count and the batch are symbolic (cu has batch + 1 entries)."""
    total = T.dynamic("total")
    batch = T.dynamic("batch")

    @T.prim_func
    def seg(X: T.Tensor((total, D), "float32"), cu: T.Tensor((batch + 1,), "int32"), max_len: T.int32,
            Y: T.Tensor((total, D), "float32")):
        with T.Kernel(T.ceildiv(max_len, bM), batch) as (bx, bz):
            x = T.alloc_fragment((bM, D), "float32")
            start = cu[bz]
            length = cu[bz + 1] - start
            if bx * bM < length:
                T.copy(X[start + bx * bM, 0], x)  # the last sequence's window crosses the end of X
                for i, j in T.Parallel(bM, D):
                    x[i, j] = x[i, j] * (bz + 1)
                T.copy(x, Y[start + bx * bM, 0])

    return seg


def test_varlen_runtime_grid(arch):
    k = compile_(segments(), arch)
    for lens in ([32, 16, 5], [16, 48]):
        cu = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32)
        x = torch.randn(int(cu[-1]), 32)
        y = torch.zeros_like(x)
        k(x, cu, max(lens), y)
        assert k.last_block_dims == [(max(lens) + 15) // 16 * len(lens)]
        assert all(r.ok for r in k.reports)
        ref = torch.cat([x[cu[b]:cu[b + 1]] * (b + 1) for b in range(len(lens))])
        torch.testing.assert_close(y, ref)


def test_symbolic_dimensions_in_the_ir_and_the_host_wrapper():
    res = ascend_backend.lower(segments(), target="ascendc:dav-3510", dump={"frontend"})
    text = res.dumps["frontend"]
    assert "dim total: int32 = X.shape[0], Y.shape[0]" in text
    assert "dim batch: int32 = cu.shape[0]" in text
    assert "grid=[(max_len + 16 - 1) // 16, batch]" in text
    assert "tail_i(16, total," in res.source  # the window's valid rows, clamped, in 64 bits
    wrapper = host_wrapper(res.program)
    assert "void launch_seg(void* stream, uint32_t blocks_0, uint8_t* X, uint8_t* cu, int32_t max_len" in wrapper
    assert "seg<<<blocks_0, nullptr, stream>>>(X, cu, max_len, Y, total, batch);" in wrapper


# ---------------------------------------------------------------- errors


def test_mismatched_shapes_are_named():
    k = compile_(scale_rows())
    a = torch.zeros(64, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"argument 'B' of kernel 'scale': dimension 0 is 48, but N = 64 from "
                                         r"argument 'A' dimension 0"):
        k(a, torch.zeros(48, 64, dtype=torch.float16), torch.zeros(64, 64, dtype=torch.float16))
    with pytest.raises(TypeError, match=r"argument 'C' of kernel 'scale' must have shape \[N, 64\] and dtype "
                                        r"float16; got shape \[64, 32\]"):
        k(a, a, torch.zeros(64, 32, dtype=torch.float16))
    with pytest.raises(TypeError, match=r"argument 'B' .* dtype float16; got shape \[64, 64\] and dtype torch.float32"):
        k(a, torch.zeros(64, 64), a)


def test_a_linear_dimension_is_solved_and_checked():
    k = compile_(segments())
    x = torch.zeros(10, 32)
    with pytest.raises(ValueError, match=r"argument 'Y' of kernel 'seg': dimension 0 is 12, but total = 10 from "
                                         r"argument 'X' dimension 0"):
        k(x, torch.tensor([0, 10], dtype=torch.int32), 10, torch.zeros(12, 32))


def test_a_grid_of_zero_blocks_launches_nothing_and_too_many_are_refused():
    k = compile_(segments())
    x, y = torch.zeros(10, 32), torch.full((10, 32), 5.0)
    k(x, torch.tensor([0, 10], dtype=torch.int32), 0, y)  # max_len = 0: no block
    assert k.last_block_dims == [0] and torch.equal(y, torch.full((10, 32), 5.0))
    with pytest.raises(ValueError, match=r"kernel 'seg' would run a grid of \(\(max_len \+ 16 - 1\) // 16 = 70000, "
                                         r"batch = 1\), 70000 blocks, for these arguments; a launch has 1 to 65535 "
                                         r"blocks \(or none"):
        k(x, torch.tensor([0, 10], dtype=torch.int32), 16 * 70000, y)


def test_outputs_of_an_unknown_dimension_must_be_passed():
    M = T.dynamic("M")

    @T.prim_func
    def widen(A: T.Tensor((32,), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(1):
            x = T.alloc_fragment((32,), "float32")
            T.copy(A[0], x)
            T.copy(x, B[0])

    k = compile_(widen, out_idx=[1])
    with pytest.raises(TypeError, match="cannot allocate its output 'B': dimension 0 is M, and no input gives M; "
                                        "pass 'B' yourself"):
        k(torch.zeros(32))
    b = torch.zeros(40)
    k(torch.ones(32), b)  # passed: fine
    assert b[:32].eq(1).all() and b[32:].eq(0).all()


def test_a_window_past_a_symbolic_end_is_refused_at_call_time():
    N = T.dynamic("N")

    @T.prim_func
    def overshoot(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 32) + 1) as bx:  # one block too many
            x = T.alloc_fragment((32,), "float32")
            T.copy(A[bx * 32], x)
            T.copy(x, B[bx * 32])

    k = compile_(overshoot)
    with pytest.raises(ValueError, match=r"test_dynamic_shapes.py:\d+: the T.copy window A\[bx \* 32 : bx \* 32 \+ 32\] "
                                         r"would lie outside 'A' for these arguments \(N = 64\): dimension 0 has 64 "
                                         r"elements and the window can start at 64"):
        k(torch.zeros(64), torch.zeros(64))


def test_a_symbolic_tile_is_refused_at_its_line():
    N = T.dynamic("N")

    @T.prim_func
    def bad(A: T.Tensor((N,), "float32")):
        with T.Kernel(1):
            x = T.alloc_fragment((N,), "float32")
            T.copy(A[0], x)
            T.copy(x, A[0])

    with pytest.raises(UnsupportedError) as e:
        ascend_backend.lower(bad, target="ascendc")
    msg = str(e.value)
    assert re.search(r"test_dynamic_shapes.py:\d+: unsupported: tile 'x' has a symbolic shape \[N\]", msg)
    assert "hint: give the tile a constant size" in msg


def test_a_symbolic_gemm_k_takes_its_tail_in_whole_fractals(arch):
    # TileLang's dynamic_shape example: one kernel for every K; K = 48 ends in a 16-column tail
    # (one Mmad over 16 of the tile's 32), and a K that is not a multiple of 16 is refused at the call
    K = T.dynamic("K")

    @T.prim_func
    def gemm_k(A: T.Tensor((32, K), "float16"), B: T.Tensor((K, 32), "float16"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1):
            a = T.alloc_shared((32, 32), "float16")
            b = T.alloc_shared((32, 32), "float16")
            c = T.alloc_fragment((32, 32), "float32")
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=2):
                T.copy(A[0, k * 32], a)
                T.copy(B[k * 32, 0], b)
                T.gemm(a, b, c)  # marker:symbolic-k
            T.copy(c, C[0, 0])

    k = compile_(gemm_k, arch)
    for n in (64, 48, 16, 112):
        a, b = torch.randn(32, n).half(), torch.randn(n, 32).half()
        c = torch.full((32, 32), float("nan"))
        k(a, b, c)
        assert all(r.ok for r in k.reports)
        torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-3, rtol=1e-3)
    line = marker_line(__file__, "symbolic-k")
    with pytest.raises(ValueError, match=rf"test_dynamic_shapes.py:{line}: the reduction dimension K = K of the gemm "
                                         r"is 40 for these arguments, not a multiple of 16: the Cube core takes whole "
                                         r"fractals along K \(hint: pad K with zeros to a multiple of 16\)"):
        k(torch.randn(32, 40).half(), torch.randn(40, 32).half(), torch.zeros(32, 32))
