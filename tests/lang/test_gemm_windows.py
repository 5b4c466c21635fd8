"""gemm operands that are windows of an L1 tile (``T.gemm(a[32:64, :], b[:, 32:96], c)``): in
the NZ layout a window on fractal boundaries (rows multiples of 16, columns of C0 = 32 bytes) is
an element offset of the tile with the tile's own strides. FileCheck on the LoadData lines, runs
on the emulator against torch (both arches, strict), and the errors for windows the Cube core
cannot load."""

from __future__ import annotations

import pytest
import tilelang.language as T
import torch
from dsl_lines import marker_line
from filecheck import filecheck
from strict_run import run

import ascend_backend
from ascend_backend.errors import AlignmentError, SrcLoc, UnsupportedError

ACC = {"float16": "float32", "bfloat16": "float32", "int8": "int32", "float8_e4m3fn": "float32"}


def window_gemm(a_shape, a_win, b_shape, b_win, trans_a=False, trans_b=False, dtype="float16"):
    """Copy whole tiles A and B from GM, multiply the windows ``a_win`` and ``b_win`` (row start,
    row end, column start, column end) of them into C."""
    ar0, ar1, ac0, ac1 = a_win
    br0, br1, bc0, bc1 = b_win
    M = ac1 - ac0 if trans_a else ar1 - ar0
    N = br1 - br0 if trans_b else bc1 - bc0
    acc = ACC[dtype]

    @T.prim_func
    def windows(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), acc)):
        with T.Kernel(1) as _:
            a = T.alloc_shared(a_shape, dtype)
            b = T.alloc_shared(b_shape, dtype)
            c = T.alloc_fragment((M, N), acc)
            T.copy(A[0, 0], a)
            T.copy(B[0, 0], b)
            T.gemm(a[ar0:ar1, ac0:ac1], b[br0:br1, bc0:bc1], c, transpose_A=trans_a, transpose_B=trans_b,
                   clear_accum=True)
            T.copy(c, C[0, 0])

    return windows


def inputs(a_shape, b_shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == "int8":
        return [torch.randint(-8, 8, s, generator=g, dtype=torch.int8) for s in (a_shape, b_shape)]
    return [(torch.randn(s, generator=g) * 0.5).to(getattr(torch, dtype)) for s in (a_shape, b_shape)]


def reference(a, b, a_win, b_win, trans_a, trans_b):
    wa = a[a_win[0]:a_win[1], a_win[2]:a_win[3]].double()
    wb = b[b_win[0]:b_win[1], b_win[2]:b_win[3]].double()
    return (wa.T if trans_a else wa) @ (wb.T if trans_b else wb)


# name: (A tile, A window, B tile, B window, transpose_A, transpose_B, dtype)
CASES = {
    # N window: columns 32..96 of a K x N tile (each fractal transposed into ZN).
    "b_columns": ((32, 64), (0, 32, 0, 64), (64, 96), (0, 64, 32, 96), False, False, "float16"),
    # K window of a B stored N x K: columns 32..96.
    "b_columns_transposed": ((32, 64), (0, 32, 0, 64), (32, 96), (0, 32, 32, 96), False, True, "float16"),
    # M window: rows 32..64 of A.
    "a_rows": ((64, 64), (32, 64, 0, 64), (64, 32), (0, 64, 0, 32), False, False, "float16"),
    # K window on both operands.
    "k_window": ((32, 96), (0, 32, 32, 96), (96, 32), (32, 96, 0, 32), False, False, "float16"),
    # Both dimensions of both operands windowed.
    "both": ((64, 96), (16, 48, 0, 64), (64, 128), (32, 64, 32, 96), False, True, "float16"),
    # A stored K x M, a window of both its dimensions.
    "a_transposed": ((96, 64), (32, 96, 16, 48), (64, 32), (0, 64, 0, 32), True, False, "float16"),
    # 1-byte: C0 is 32 columns, so windows start at multiples of 32 columns.
    "int8": ((32, 128), (0, 32, 32, 96), (64, 128), (16, 48, 32, 96), False, True, "int8"),
    # fp8 B stored K x N: the b8 transpose of LoadData2DParamsV2 from a window (dav-3510 only).
    "fp8": ((32, 128), (0, 32, 32, 96), (128, 64), (32, 96, 32, 64), False, False, "float8_e4m3fn"),
}
ARCHES = {"fp8": ("dav-3510",)}
FAST = {("both", "dav-3510"), ("both", "dav-c220"), ("fp8", "dav-3510")}


def _params():
    for name in CASES:
        for arch in ARCHES.get(name, ("dav-3510", "dav-c220")):
            marks = () if (name, arch) in FAST else (pytest.mark.slow,)
            yield pytest.param(name, arch, id=f"{name}-{arch}", marks=marks)


@pytest.mark.parametrize("name,arch", list(_params()))
def test_window_gemm_against_torch(name, arch):
    a_shape, a_win, b_shape, b_win, tA, tB, dtype = CASES[name]
    a, b = inputs(a_shape, b_shape, dtype)
    want = reference(a, b, a_win, b_win, tA, tB)
    c = torch.zeros(want.shape, dtype=torch.int32 if dtype == "int8" else torch.float32)
    run(window_gemm(a_shape, a_win, b_shape, b_win, tA, tB, dtype), [a, b, c], arch)
    if dtype == "int8":
        assert torch.equal(c.long(), want.long())
    else:
        torch.testing.assert_close(c.double(), want, atol=1e-2, rtol=1e-3)


def source(func, arch: str) -> str:
    return ascend_backend.lower(func, {"kind": "ascendc", "arch": arch}).source


def test_column_window_is_an_offset_with_the_tiles_strides_3510():
    # b[:, 32:96] of a 64 x 96 fp16 tile: 2 column blocks of 64 x 16 in, offset 2 * 64 * 16 = 2048;
    # the distance between column blocks stays the tile's (64 rows: 4 fractals).
    filecheck(source(window_gemm(*CASES["b_columns"][:6]), "dav-3510"), """
        CHECK: LoadData(a_l0a, a, LoadData2DParamsV2{0, 0, (uint16_t)(2), (uint16_t)(64 / 16), 2, 2, false, 0});
        CHECK: LoadData(b_l0b, b[2048], LoadData2DParamsV2{0, 0, (uint16_t)(64 / 16), (uint16_t)(4), 4, 4, true, 0});
    """)


def test_windows_of_both_operands_c220():
    # a[16:48, 0:64]: 16 rows x C0 = 256 elements in; b[32:64, 32:96] of a 64 x 128 tile:
    # 32 * 64 + 32 * 16 = 2560; the column blocks stay the tiles' distance apart (64 rows: 4
    # fractals), not the window's (32 rows of B).
    filecheck(source(window_gemm(*CASES["both"][:6]), "dav-c220"), """
        CHECK: LoadData(a_l0a[i_ * 64 * 16], a[256][i_ * 256], LoadData2DParams{0, (uint8_t)(64 / 16), 4, 0, 0, false, 0});
        CHECK: LoadData(b_l0b[i_ * 512], b[2560][i_ * 4 * 256], LoadData2DParams{0, 2, 1, 0, 0, false, 0});
    """)


def test_int8_window_steps_in_32_columns_3510():
    # 1-byte C0 = 32: a[:, 32:96] is one 32 x 32 column block in (32 * 32 = 1024 elements);
    # b[16:48, 32:96] of a 64 x 128 tile: 32 * 64 + 16 * 32 = 2560.
    filecheck(source(window_gemm(*CASES["int8"][:6], dtype="int8"), "dav-3510"), """
        CHECK: LoadData(a_l0a, a[1024], LoadData2DParamsV2{0, 0, (uint16_t)(2), (uint16_t)(64 / 32), 2, 2, false, 0});
        CHECK: LoadData(b_l0b, b[2560], LoadData2DParamsV2{0, 0, (uint16_t)(2), (uint16_t)(64 / 32), 4, 2, false, 0});
    """)


def k_loop(step: int, dtype: str = "float16", M=32, N=32, K=96):
    """K windows at a loop variable's offset: a[:, k * step : (k + 1) * step]."""

    @T.prim_func
    def k_steps(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as _:
            a = T.alloc_shared((M, K), dtype)
            b = T.alloc_shared((K, N), dtype)
            c = T.alloc_fragment((M, N), "float32")
            T.copy(A[0, 0], a)
            T.copy(B[0, 0], b)
            T.clear(c)
            for k in T.serial(K // step):
                T.gemm(a[:, k * step:(k + 1) * step], b[k * step:(k + 1) * step, :], c)  # marker:k_loop
            T.copy(c, C[0, 0])

    return k_steps


@pytest.mark.parametrize("arch", ["dav-3510", pytest.param("dav-c220", marks=pytest.mark.slow)])
def test_window_at_a_loop_variable_offset(arch):
    a, b = inputs((32, 96), (96, 32), "float16", seed=1)
    c = torch.zeros(32, 32)
    k = run(k_loop(32), [a, b, c], arch)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), atol=1e-2, rtol=1e-3)
    filecheck(k.kernel_source, "CHECK: a[(k * 1024)]")


# ------------------------------------------------------------------ errors


def line_of(marker: str) -> int:
    return marker_line(__file__, marker)


def misaligned(which: str, dtype: str = "float16"):
    @T.prim_func
    def bad(A: T.Tensor((32, 64), dtype), B: T.Tensor((64, 96), dtype), C: T.Tensor((32, 64), ACC[dtype])):
        with T.Kernel(1) as _:
            a = T.alloc_shared((32, 64), dtype)
            b = T.alloc_shared((64, 96), dtype)
            c = T.alloc_fragment((32, 64), ACC[dtype])
            c2 = T.alloc_fragment((64, 64), ACC[dtype])
            T.copy(A[0, 0], a)
            T.copy(B[0, 0], b)
            if which == "columns":
                T.gemm(a, b[:, 8:72], c, clear_accum=True)  # marker:columns
                T.copy(c, C[0, 0])
            elif which == "acc":
                T.gemm(a, b[:, 0:64], c2[0:32, :], clear_accum=True)  # marker:acc
                T.copy(c2[0:32, :], C[0, 0])
            else:
                T.gemm(a[:, 0:48], b[16:64, 0:64], c, clear_accum=True)  # marker:kwin
                T.copy(c, C[0, 0])

    return bad


def compile_error(func, arch="dav-3510"):
    with pytest.raises((AlignmentError, UnsupportedError)) as e:
        ascend_backend.lower(func, {"kind": "ascendc", "arch": arch})
    return e.value


def test_misaligned_column_window_names_the_line_and_aligned_windows():
    err = compile_error(misaligned("columns"))
    assert type(err) is AlignmentError
    assert err.loc == SrcLoc(__file__, line_of("columns"))
    assert "b[0:64, 8:72]" in err.what and "starts at column 8" in err.what and "multiples of 16 columns" in err.what
    assert "b[0:64, 0:64] or b[0:64, 16:80]" in err.hint


def test_int8_window_on_a_16_column_boundary_is_misaligned():
    # 16 columns are one fp16 fractal row but half of an int8 one (C0 = 32 bytes = 32 int8).
    err = compile_error(window_gemm((32, 64), (0, 32, 0, 64), (64, 96), (0, 64, 16, 80), trans_b=True, dtype="int8"))
    assert type(err) is AlignmentError
    assert "multiples of 32 columns (32 int8 elements are 32 bytes)" in err.what
    assert "b[0:64, 0:64] or b[0:64, 32:96]" in err.hint


def test_k_window_of_48_int8_is_not_whole_fractals():
    err = compile_error(misaligned("k", "int8"))
    assert type(err) is AlignmentError and err.loc == SrcLoc(__file__, line_of("kwin"))
    assert "a[0:32, 0:48]" in err.what


def test_window_of_the_accumulator_is_rejected():
    err = compile_error(misaligned("acc"))
    assert type(err) is UnsupportedError and err.loc == SrcLoc(__file__, line_of("acc"))
    assert "whole L0C tile" in err.what and "c2[0:32, 0:64]" in err.what


def test_loop_offset_not_on_a_fractal_boundary():
    err = compile_error(k_loop(24))
    assert type(err) is AlignmentError and err.loc == SrcLoc(__file__, line_of("k_loop"))
    assert "starts at column k * 24" in err.what
