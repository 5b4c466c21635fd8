"""T.clear of a gemm accumulator that the next gemm cannot fold statically (TileLang's fp8 "2xAcc"
promotion, DeepSeek's idiom: every step, or every few steps, the partial product is added into a
float32 accumulator on the Vector cores and the Cube's accumulator is cleared).

The Cube clears an accumulator by overwriting it in its next Mmad. A clear before a loop whose gemm
comes next folds into that Mmad (its first iteration); a clear at the end of a loop body, or inside
an `if`, reaches the gemm of the next iteration, so it sets a flag that the Mmad reads
(cmatrixInitVal) and resets (passes/lower_tile_ops.py, _clears_needing_a_flag). Before, the clear
was lost: the accumulator kept adding, and the result was the sum of the prefix sums (or zeros
under the `if`)."""


import pytest
import tilelang.language as T
import torch
from filecheck import filecheck
from strict_run import run

M, N, K, BK = 64, 64, 256, 64


def promote(every: int | None, dtype: str = "float16"):
    """C = A B^T, the partial product of each step (every=None) or of every `every` steps added
    into a float32 accumulator on the Vector cores, and the Cube's accumulator cleared after it."""

    @T.prim_func
    def k2x(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((M, BK), dtype)
            b = T.alloc_shared((N, BK), dtype)
            c = T.alloc_fragment((M, N), "float32")
            acc = T.alloc_fragment((M, N), "float32")
            T.clear(c)
            T.clear(acc)
            for k in T.Pipelined(K // BK, num_stages=2):
                T.copy(A[0, k * BK], a)
                T.copy(B[0, k * BK], b)
                T.gemm(a, b, c, transpose_B=True)
                if every is None:
                    for i, j in T.Parallel(M, N):
                        acc[i, j] += c[i, j]
                    T.clear(c)
                else:
                    if (k + 1) % every == 0:
                        for i, j in T.Parallel(M, N):
                            acc[i, j] += c[i, j]
                        T.clear(c)
            T.copy(acc, C)

    return k2x


def _check(func, arch, dtype="float16"):
    g = torch.Generator().manual_seed(3)
    tdt = getattr(torch, dtype)
    a, b = torch.randn(M, K, generator=g).to(tdt), torch.randn(N, K, generator=g).to(tdt)
    c = torch.full((M, N), float("nan"))
    k = run(func, [a, b, c], arch)
    torch.testing.assert_close(c, a.float() @ b.float().T, atol=1e-3, rtol=1e-4)
    return k.kernel_source


@pytest.mark.parametrize("every", [None, 2])
def test_a_clear_after_the_promotion_reaches_the_next_iterations_gemm(arch, every):
    src = _check(promote(every), arch)
    # the flag: set by the clear, read by the Mmad as its overwrite, reset after it
    filecheck(src, """
        CHECK: c_cleared[0] = 0;
        CHECK: c_cleared[0] = 1;
        CHECK: mp.cmatrixInitVal = (c_cleared[0] != 0);
        CHECK: Mmad(c,
        CHECK: c_cleared[0] = 0;
        CHECK: c_cleared[0] = 1;
    """)


@pytest.mark.parametrize("arch", ["dav-3510"])
def test_the_fp8_2xacc_promotion(arch):
    """TileLang's gemm_fp8_2xAcc shape of it: E4M3 operands, promoted every 2 K steps."""
    a8 = torch.randn(M, K).to(torch.float8_e4m3fn)
    b8 = torch.randn(N, K).to(torch.float8_e4m3fn)
    c = torch.full((M, N), float("nan"))
    run(promote(2, "float8_e4m3fn"), [a8, b8, c], arch)
    torch.testing.assert_close(c, a8.float() @ b8.float().T, atol=1e-3, rtol=1e-4)


def test_a_clear_the_next_gemm_folds_needs_no_flag(arch):
    """A clear before the loop, then the gemm: the first iteration's Mmad overwrites (no flag)."""

    @T.prim_func
    def plain(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((M, BK), "float16")
            b = T.alloc_shared((N, BK), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.clear(c)
            for k in T.Pipelined(K // BK, num_stages=2):
                T.copy(A[0, k * BK], a)
                T.copy(B[0, k * BK], b)
                T.gemm(a, b, c, transpose_B=True)
            T.copy(c, C)

    src = _check(plain, arch)
    assert "_cleared" not in src
    assert "mp.cmatrixInitVal = (k == 0);" in src


def test_vector_code_reading_an_accumulator_cleared_on_one_path_only(arch):
    """After `if cond: T.clear(c)` the accumulator is zero on one path only; the Cube clears by
    overwriting in the next gemm, so the Vector cores take the transfer, then zeros where the
    accumulator's flag (set by the clear, reset by each gemm) says it is still zero."""

    @T.prim_func
    def one_path(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((2 * M, N), "float32")):
        with T.Kernel(2, 1) as (bx, by):
            a = T.alloc_shared((M, BK), "float16")
            b = T.alloc_shared((N, BK), "float16")
            c = T.alloc_fragment((M, N), "float32")
            acc = T.alloc_fragment((M, N), "float32")
            T.fill(acc, 1.0)
            T.copy(A[0, 0], a)
            T.copy(B[0, 0], b)
            T.gemm(a, b, c, transpose_B=True, clear_accum=True)
            if bx == 0:
                T.clear(c)
            for i, j in T.Parallel(M, N):
                acc[i, j] += c[i, j]
            T.copy(acc, C[bx * M, 0])

    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(M, K, generator=g).half(), torch.randn(N, K, generator=g).half()
    c = torch.full((2 * M, N), float("nan"))
    k = run(one_path, [a, b, c], arch)
    torch.testing.assert_close(c[:M], torch.ones(M, N))
    torch.testing.assert_close(c[M:], a[:, :BK].float() @ b[:, :BK].float().T + 1, atol=1e-3, rtol=1e-4)
    filecheck(k.kernel_source, """
        CHECK: c_still_zero[0] = 1;
        CHECK: if ((c_still_zero[0] != 0)) {
    """)


def blocksparse(mask_rows: int):
    """TileLang's blocksparse GEMM: every gemm under `if mask[by, k]`, the clear before the loop; a
    block whose mask is all zero never runs a gemm and must store zeros."""

    @T.prim_func
    def bs(A: T.Tensor((2 * M, K), "float16"), B: T.Tensor((K, N), "float16"), Mask: T.Tensor((2, K // BK), "int32"),
           C: T.Tensor((2 * M, N), "float16")):
        with T.Kernel(1, 2) as (bx, by):
            a = T.alloc_shared((M, BK), "float16")
            b = T.alloc_shared((BK, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            c_half = T.alloc_shared((M, N), "float16")
            T.clear(c)
            for k in T.Pipelined(K // BK, num_stages=2):
                if Mask[by, k] != 0:
                    T.copy(A[by * M, k * BK], a)
                    T.copy(B[k * BK, 0], b)
                    T.gemm(a, b, c)
            T.copy(c, c_half)
            T.copy(c_half, C[by * M, 0])

    return bs


def test_a_block_sparse_gemm_whose_block_runs_no_gemm_stores_zeros(arch):
    g = torch.Generator().manual_seed(6)
    a, b = torch.randn(2 * M, K, generator=g).half(), torch.randn(K, N, generator=g).half()
    mask = torch.tensor([[0, 0, 0, 0], [0, 1, 0, 1]], dtype=torch.int32)  # block 0: no gemm; block 1: k = 1, 3
    c = torch.full((2 * M, N), float("nan")).half()
    run(blocksparse(2), [a, b, mask, c], arch)
    ref = torch.zeros(2 * M, N)
    for k in (1, 3):
        ref[M:] += a[M:, k * BK:(k + 1) * BK].float() @ b[k * BK:(k + 1) * BK].float()
    assert torch.equal(c[:M], torch.zeros(M, N).half())
    torch.testing.assert_close(c.float(), ref, atol=2e-2, rtol=2e-3)


def test_a_k_loop_that_starts_past_zero_overwrites_on_its_first_trip(arch):
    """The first trip of `for k in T.Pipelined(lo, hi)` is k == lo, not k == 0 (the attention-sink
    backward's causal loop starts at the block's own row): the folded clear overwrites there. The
    emulator's on-chip memory starts as NaN, so a first Mmad that added to it would show."""

    @T.prim_func
    def from_lo(A: T.Tensor((2 * M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((2 * M, N), "float32")):
        with T.Kernel(2) as bx:
            a = T.alloc_shared((M, BK), "float16")
            b = T.alloc_shared((N, BK), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.clear(c)
            for k in T.Pipelined(bx, K // BK, num_stages=2):  # block 1 skips the first K block
                T.copy(A[bx * M, k * BK], a)
                T.copy(B[0, k * BK], b)
                T.gemm(a, b, c, transpose_B=True)
            T.copy(c, C[bx * M, 0])

    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(2 * M, K, generator=g).half(), torch.randn(N, K, generator=g).half()
    c = torch.full((2 * M, N), float("nan"))
    k = run(from_lo, [a, b, c], arch)
    want = a.float() @ b.float().T
    want[M:] -= a[M:, :BK].float() @ b[:, :BK].float().T
    torch.testing.assert_close(c, want, atol=1e-3, rtol=1e-4)
    assert "mp.cmatrixInitVal = (k == bx);" in k.kernel_source
