"""Bad input fails at compile time with what, where (the DSL file:line) and what to do."""

import inspect

import pytest
import tilelang.language as T
import torch

import ascend_backend
from ascend_backend import (
    AlignmentError,
    AscendCompileError,
    InternalCompilerError,
    MemoryBudgetError,
    RuntimeUnavailableError,
    TargetError,
    UnsupportedError,
)
from ascend_backend.reports import memory_map


def line_of(marker: str) -> int:
    src, _ = inspect.getsourcelines(inspect.getmodule(line_of))
    for n, text in enumerate(src, start=1):
        if marker in text and "line_of(" not in text:
            return n
    raise AssertionError(marker)


def compile_err(func, arch="dav-3510"):
    with pytest.raises(AscendCompileError) as info:
        ascend_backend.lower(func, {"kind": "ascendc", "arch": arch})
    err = info.value
    assert err.loc is not None and err.loc.file == __file__, f"no DSL location in: {err}"
    assert str(err).startswith(f"{__file__}:{err.loc.line}:")
    return err


def unsupported_function():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_fragment((64,), "float32")
            T.copy(A[0], a)
            for i in T.Parallel(64):
                a[i] = T.sin(a[i])  # marker:sin
            T.copy(a, B[0])

    return k


def test_unsupported_function_names_it_and_its_line():
    err = compile_err(unsupported_function())
    assert isinstance(err, UnsupportedError)
    assert "T.sin" in err.what and err.loc.line == line_of("marker:sin")
    assert "exp" in err.hint


def unsupported_reduce():
    @T.prim_func
    def k(A: T.Tensor((16, 64), "int32"), B: T.Tensor((16,), "int32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_fragment((16, 64), "int32")
            r = T.alloc_fragment((16,), "int32")
            T.copy(A[0, 0], a)
            T.reduce_bitand(a, r, dim=1)  # marker:bitand
            T.copy(r, B[0])

    return k


def test_unsupported_reduce_kind():
    err = compile_err(unsupported_reduce())
    assert "bitand" in err.what and err.loc.line == line_of("marker:bitand")


def gemm_kernel(dtype="float16", bM=64, K=64, bK=64, M=64):
    @T.prim_func
    def k(A: T.Tensor((M, K), dtype), B: T.Tensor((K, 64), dtype), C: T.Tensor((M, 64), "float32")):
        with T.Kernel(1, T.ceildiv(M, bM), threads=128) as (_, by):
            a = T.alloc_shared((bM, bK), dtype)  # marker:a_alloc
            b = T.alloc_shared((bK, 64), dtype)
            c = T.alloc_fragment((bM, 64), "float32")
            T.clear(c)
            for kk in T.serial(T.ceildiv(K, bK)):
                T.copy(A[by * bM, kk * bK], a)
                T.copy(B[kk * bK, 0], b)
                T.gemm(a, b, c)  # marker:gemm
            T.copy(c, C[by * bM, 0])

    return k


def test_cube_rejects_int16_operands():
    err = compile_err(gemm_kernel(dtype="int16"))
    assert "float16 x float16 -> float32" in err.what and "'a' (int16)" in err.what
    assert err.loc.line == line_of("marker:gemm") and "cast" in err.hint


def test_cube_float32_operands_stored_k_x_n_on_dav_c220():
    """float32 x float32 runs (tests/lang/test_gemm_fp32.py); dav-c220 cannot transpose B stored K x N."""
    err = compile_err(gemm_kernel(dtype="float32"), arch="dav-c220")
    assert "4-byte (float32) operands and B stored K x N" in err.what and err.loc.line == line_of("marker:gemm")
    assert "transpose_B=True" in err.hint


def test_cube_tile_alignment():
    err = compile_err(gemm_kernel(bM=40, M=80))
    assert isinstance(err, AlignmentError)
    assert "40 rows" in err.what and "multiples of 16" in err.what and err.loc.line == line_of("marker:a_alloc")


def test_k_tail_not_multiple_of_16_names_dimension_and_gemm_line():
    err = compile_err(gemm_kernel(K=72, bK=64), arch="dav-c220")
    assert isinstance(err, AlignmentError)
    assert "K = 72" in err.what and err.loc.line == line_of("marker:gemm")
    assert "80" in err.hint


def big_ub(rows):
    @T.prim_func
    def k(A: T.Tensor((rows, 512), "float32"), B: T.Tensor((rows, 512), "float32")):
        with T.Kernel(1, threads=128) as _:
            x = T.alloc_fragment((rows, 512), "float32")  # marker:big_x
            y = T.alloc_fragment((rows, 512), "float32")  # marker:big_y
            T.copy(A[0, 0], x)
            for i, j in T.Parallel(rows, 512):
                y[i, j] = x[i, j] * 2.0
            T.copy(y, B[0, 0])

    return k


def test_budget_overflow_lists_every_buffer():
    err = compile_err(big_ub(64), arch="dav-c220")  # 2 x 128 KB of UB
    assert isinstance(err, MemoryBudgetError)
    text = str(err)
    assert "UB needs 262144 bytes but holds 188416 bytes on dav-c220" in text
    for name, marker in (("x", "marker:big_x"), ("y", "marker:big_y")):
        row = next(r for r in err.table.splitlines() if r.strip().startswith(name + " "))
        assert "64x512" in row and "131072" in row and row.endswith(f":{line_of(marker)}")
    assert "139%" in text and "reduce the tile sizes" in err.hint


def test_budget_depends_on_arch():
    # 2 x 96 KB = 192 KB: over c220's 184 KB of usable UB, within 3510's 248 KB.
    ascend_backend.lower(big_ub(48), {"kind": "ascendc", "arch": "dav-3510"})
    err = compile_err(big_ub(48), arch="dav-c220")
    assert isinstance(err, MemoryBudgetError)


def mixed():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")  # marker:mixed_c
            T.copy(A[0, 0], a)
            T.copy(B[0, 0], b)
            T.gemm(a, b, c, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                c[i, j] = T.max(c[i, j], 0.0)
            T.copy(c, C[0, 0])

    return k


def test_cube_and_vector_on_one_tile_is_split_not_rejected():
    # Once rejected; now split between the Cube and the Vector cores (tests/compiler/test_mix.py runs it).
    result = ascend_backend.lower(mixed(), {"kind": "ascendc", "arch": "dav-c220"})
    assert {c.value for c in result.program.launch.kernels} == {"AIC", "AIV"}
    assert "KERNEL_TYPE_MIX_AIC_1_2" in result.source
    rows = {r["buffer"]: r for r in memory_map(result.program)}
    assert rows["AIV:c"]["defined_at"].endswith(f":{line_of('marker:mixed_c')}")


def test_unknown_arch_and_target():
    with pytest.raises(TargetError, match="unknown Ascend arch 'dav-9999'"):
        ascend_backend.lower(unsupported_function(), {"kind": "ascendc", "arch": "dav-9999"})
    with pytest.raises(TargetError, match="not an ascendc target"):
        ascend_backend.compile(unsupported_function(), target="cuda")


def test_npu_runtime_fails_at_once_without_hardware():
    with pytest.raises(RuntimeUnavailableError, match="bisheng"):
        ascend_backend.compile(gemm_kernel(), target="ascendc", runtime="npu")
    k = ascend_backend.compile(gemm_kernel(), target="ascendc", runtime="auto")
    assert k.runtime == "emulator"


def test_wrong_arguments_are_named():
    k = ascend_backend.compile(gemm_kernel(), target="ascendc", runtime="emulator")
    a = torch.zeros(64, 64, dtype=torch.float16)
    with pytest.raises(TypeError, match="argument 'C' .* shape \\[64, 64\\] and dtype float32"):
        k(a, a, a)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        k(a)


def test_compiler_bug_says_it_is_one(monkeypatch):
    import ascend_backend.pipeline as pipeline

    def broken(kernel):
        raise KeyError("oops")

    monkeypatch.setattr(pipeline, "passes", lambda: [("assign_layout", broken)])
    with pytest.raises(InternalCompilerError) as info:
        ascend_backend.lower(unsupported_function(), "ascendc")
    assert "internal compiler error in stage 'assign_layout'" in str(info.value)
    assert "bug in tilelang-ascendc" in str(info.value)


def parallel_past_its_tile(masked: bool, read: bool = False):
    """TileLang's attention-sink forward: a [heads] fragment written for every row of the block."""

    @T.prim_func
    def k(S: T.Tensor((8,), "float32"), X: T.Tensor((64,), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(1) as _:
            sinks = T.alloc_fragment((8,), "float32")
            x = T.alloc_fragment((64,), "float32")
            T.copy(S, sinks)
            T.copy(X, x)
            if read:
                for i in T.Parallel(64):
                    x[i] = x[i] + sinks[i]  # marker:tile-read
            elif masked:
                for i in T.Parallel(64):
                    if i < 8:
                        sinks[i] = sinks[i] + x[i]
            else:
                for i in T.Parallel(64):
                    sinks[i] = X[0]  # marker:tile-write
            T.copy(sinks, Y)

    return k


@pytest.mark.parametrize("read", [False, True])
def test_parallel_index_past_the_tile(read):
    err = compile_err(parallel_past_its_tile(False, read))
    assert type(err).__name__ == "ShapeError"
    assert err.loc.line == line_of("marker:tile-read" if read else "marker:tile-write")
    verb = "reads" if read else "writes"
    assert f"T.Parallel {verb} sinks[i] outside the tile 'sinks' of shape [8]: its index in dimension 0 reaches 63" \
        in err.what
    assert "allocate 'sinks' with the extent the loop runs over" in err.hint


def test_parallel_index_masked_inside_the_tile_is_accepted():
    x, s = torch.randn(64), torch.randn(8)
    y = torch.full_like(s, float("nan"))
    k = ascend_backend.compile(parallel_past_its_tile(True), target={"kind": "ascendc", "arch": "dav-3510"},
                               runtime="emulator", strict=True)
    k(s, x, y)
    torch.testing.assert_close(y, s + x[:8])


def reshaped_tile():
    @T.prim_func
    def k(X: T.Tensor((64,), "float32"), Y: T.Tensor((8, 8), "float32")):
        with T.Kernel(1) as _:
            x = T.alloc_fragment((64,), "float32")
            y = T.alloc_fragment((8, 8), "float32")
            T.copy(X, x)
            x2 = T.reshape(x, (8, 8))
            for i, j in T.Parallel(8, 8):
                y[i, j] = x2[i, j] * 2.0  # marker:reshape
            T.copy(y, Y)

    return k


def test_a_reshaped_tile_is_refused_at_its_use():
    err = compile_err(reshaped_tile())
    assert isinstance(err, UnsupportedError)
    assert err.loc.line in (line_of("marker:reshape") - 1, line_of("marker:reshape"))  # the T.Parallel's line
    assert "'x2' is a view of 'x' with another shape or dtype (T.reshape / T.view)" in err.what
    assert "index 'x' itself" in err.hint
