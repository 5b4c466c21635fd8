"""Exceptions tilelang's front end or TVM raise while the user's Python builds a kernel become our
error classes at the user's line with a hint (issue 13 item 4; docs/errors.md).

Each test builds a bad kernel through an entry point (``ascend_backend.jit``, or the
``building_kernel`` guard the entry points use) and checks the error type, that the message
starts with this file's ``file:line`` of the offending DSL line (the ``# marker:`` comment), and
the hint.
"""

from __future__ import annotations

import pickle

import pytest
import tilelang
import tilelang.language as T
import torch
from dsl_lines import marker_line

import ascend_backend
from ascend_backend import DslError, InternalCompilerError, ShapeError, TargetError, UnsupportedError
from ascend_backend.diagnostics import building_kernel, translate
from ascend_backend.errors import AscendCompileError, SrcLoc


def line_of(marker: str) -> int:
    return marker_line(__file__, marker)


def check(err: AscendCompileError, cls: type, marker: str, *, what: str, hint: str) -> None:
    assert type(err) is cls, f"{type(err).__name__}: {err}"
    assert err.loc == SrcLoc(__file__, line_of(marker)), str(err)
    assert str(err).startswith(f"{__file__}:{line_of(marker)}: "), str(err)
    assert what in err.what, err.what
    assert err.hint and hint in err.hint, err.hint
    # every error crosses pytest-xdist's process boundary intact
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls and str(again) == str(err)


# -- kernels with one mistake each --------------------------------------------------------------
def gemm_k_mismatch(bK: int = 32):
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((64, bK), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A[0, 0], a)
            T.copy(B[0, 0], b)
            T.gemm(a, b, c)  # marker:gemm-k
            T.copy(c, C[0, 0])

    return k


def gemm_n_mismatch():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 32), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A[0, 0], a)
            T.copy(B[0, 0], b)
            T.gemm(a, b, c, transpose_B=False)  # marker:gemm-n
            T.copy(c, C[0, 0])

    return k


def copy_shape_mismatch():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((32, 64), "float16")
            T.copy(A[0, 0], a)
            T.copy(a, b)  # marker:copy
            T.copy(b, B[0, 0])

    return k


def tile_size_zero(block_M: int = 0):
    M = 64

    @T.prim_func
    def k(A: T.Tensor((M, 64), "float16"), B: T.Tensor((M, 64), "float16")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:  # marker:tile0
            a = T.alloc_shared((block_M, 64), "float16")
            T.copy(A[bx * block_M, 0], a)
            T.copy(a, B[bx * block_M, 0])

    return k


def divide_by_constant_zero():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((64, 64), "float32")
            T.copy(A[0, 0], a)
            for i, j in T.Parallel(64, 64):
                a[i, j] = a[i, j] / 0.0  # marker:div0
            T.copy(a, B[0, 0])

    return k


def unknown_dtype(dtype: str = "banana"):
    # Python evaluates parameter annotations as part of the decorated `def`: its first line.
    @T.prim_func  # marker:dtype
    def k(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((64,), dtype)
            T.copy(A[0], a)
            T.copy(a, B[0])

    return k


def _chain(x, n):
    e = x
    for _ in range(n):
        e = e + x
    return e


def deep_expression(n: int):
    @T.prim_func
    def k(A: T.Tensor((16, 64), "float32"), B: T.Tensor((16, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((16, 64), "float32")
            T.copy(A[0, 0], a)
            for i, j in T.Parallel(16, 64):
                a[i, j] = _chain(a[i, j], n)  # marker:deep
            T.copy(a, B[0, 0])

    return k


# -- through ascend_backend.jit (the factory is called by our entry point) ------------------------
def test_gemm_k_mismatch_is_a_shape_error_at_the_gemm_line():
    kernel = ascend_backend.jit(out_idx=-1, runtime="emulator")(gemm_k_mismatch)
    with pytest.raises(ShapeError) as info:
        kernel()
    check(info.value, ShapeError, "gemm-k", what="T.gemm: the K of A is 32 but the K of B is 64",
          hint="C[M, N] += A[M, K] @ B[K, N]")
    assert isinstance(info.value.__cause__, AssertionError)  # tilelang's, kept as the cause


def test_gemm_n_mismatch():
    with pytest.raises(ShapeError) as info, building_kernel():
        gemm_n_mismatch()
    check(info.value, ShapeError, "gemm-n", what="the N of B is 32 but the N of C is 64", hint="transpose_B")


def test_tile_copy_shape_mismatch_is_a_shape_error_at_the_copy_line():
    with pytest.raises(ShapeError) as info, building_kernel():
        copy_shape_mismatch()
    check(info.value, ShapeError, "copy", what="T.copy: the source has shape (64, 64) but the destination has "
          "(32, 64)", hint="same shape")


def test_tile_size_zero_is_a_division_by_zero_at_the_kernel_line():
    kernel = ascend_backend.jit(runtime="emulator")(tile_size_zero)
    with pytest.raises(DslError) as info:
        kernel()
    check(info.value, DslError, "tile0", what="division by zero", hint="tile sizes must be positive")


def test_divide_by_constant_zero():
    with pytest.raises(DslError) as info, building_kernel():
        divide_by_constant_zero()
    check(info.value, DslError, "div0", what="division by zero", hint="T.infinity(dtype)")


def test_unknown_dtype_keeps_tilelangs_text():
    with pytest.raises(DslError) as info, building_kernel():
        unknown_dtype()
    check(info.value, DslError, "dtype", what="ValueError: unknown dtype `banana`", hint="dtypes")


def test_eager_kernel_errors_are_translated_too():
    @ascend_backend.jit(runtime="emulator")
    def eager(A, block_M: int = 0):
        M, N = T.const("M, N")
        A: T.Tensor((M, N), T.float16)
        C = T.empty((M, N), T.float16)
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:  # marker:eager0
            a = T.alloc_shared((block_M, N), T.float16)
            T.copy(A[bx * block_M, 0], a)
            T.copy(a, C[bx * block_M, 0])
        return C

    with pytest.raises(DslError) as info:
        eager(torch.zeros(64, 64, dtype=torch.float16))
    check(info.value, DslError, "eager0", what="division by zero", hint="tile sizes must be positive")


def test_the_users_own_exception_is_left_alone():
    def factory(n: int = 3):
        if n % 2:
            raise ValueError("n must be even")  # the user's own check: not ours to rewrite
        return gemm_k_mismatch(64)

    with pytest.raises(ValueError, match="n must be even"):
        ascend_backend.jit(factory)()
    try:
        raise ValueError("mine")
    except ValueError as exc:
        assert translate(exc) is None


def test_builder_source_dump_is_silenced(capfd):
    with pytest.raises(ShapeError), building_kernel():
        copy_shape_mismatch()
    out, err = capfd.readouterr()
    assert "make_closure" not in out + err and "__tb" not in out + err


# -- inside the compiler ------------------------------------------------------------------------
def test_expression_nested_too_deeply_is_refused_at_its_line():
    with pytest.raises(UnsupportedError) as info:
        ascend_backend.lower(deep_expression(400))
    check(info.value, UnsupportedError, "deep", what="nested 402 levels deep", hint="temporary tile")


def test_expression_at_the_depth_limit_compiles():
    from ascend_backend.frontend import MAX_EXPR_DEPTH

    ascend_backend.lower(deep_expression(MAX_EXPR_DEPTH - 2), {"kind": "ascendc", "arch": "dav-c220"})


def test_compile_of_a_factory_says_to_call_it():
    with pytest.raises(UnsupportedError) as info:
        ascend_backend.compile(gemm_k_mismatch, runtime="emulator")
    assert "got function" in info.value.what and "gemm_k_mismatch(...)" in info.value.hint


def test_internal_error_names_stage_and_writes_a_dump(monkeypatch, tmp_path):
    import ascend_backend.pipeline as pipeline

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    real = pipeline.passes()

    def broken(program):
        raise KeyError("oops")

    upto = [n for n, _ in real].index("split_rows") + 1
    monkeypatch.setattr(pipeline, "passes", lambda: [*real[:upto], ("infer_scope", broken)])
    with pytest.raises(InternalCompilerError) as info:
        ascend_backend.lower(copy_ok())
    ice = info.value
    assert ice.stage == "infer_scope" and "KeyError: 'oops'" in str(ice)
    assert ice.dump_path and ice.dump_path.startswith(str(tmp_path)) and ice.dump_path in str(ice)
    assert "Please report it" in str(ice)
    dump = open(ice.dump_path).read()
    for section in ("==== traceback ====", "==== TIR", "==== frontend IR ====", "==== after partition ====",
                    "==== after split_rows ===="):
        assert section in dump, section
    assert "after infer_scope" not in dump  # the failed stage left no IR
    assert str(pickle.loads(pickle.dumps(ice))) == str(ice)


def copy_ok():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((64, 64), "float16")
            T.copy(A[0, 0], a)
            T.copy(a, B[0, 0])

    return k


# -- tilelang's own entry points on our target ---------------------------------------------------
@pytest.mark.parametrize("target", ["ascendc:dav-9999", {"kind": "ascendc", "arch": "dav-9999"}, "ascendc -arch=x"])
def test_tilelang_lower_keeps_our_target_error(target):
    with pytest.raises(TargetError) as info:
        tilelang.lower(copy_ok(), target=target)
    assert "unknown Ascend arch" in str(info.value) and "dav-3510" in info.value.hint


def test_tilelang_lower_of_other_targets_is_untouched():
    with pytest.raises(AssertionError, match="is not supported"):
        tilelang.lower(copy_ok(), target="no-such-target")


def test_tilelang_compile_gives_one_line_naming_ascend_backend_compile():
    with pytest.raises(UnsupportedError) as info:
        tilelang.compile(copy_ok(), target="ascendc")  # marker:tl-compile
    err = info.value
    assert err.loc == SrcLoc(__file__, line_of("tl-compile"))
    assert "ascend_backend.compile(func" in str(err) and "\n" not in str(err)


def parallel_over_a_scalar_argument():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_fragment((64,), "float32")
            T.copy(A[0], a)
            for i in T.Parallel(n):  # marker:parallel-n
                a[i] = a[i] + 1.0
            T.copy(a, A[0])

    return k


def test_parallel_over_a_runtime_extent_is_refused_at_its_line():
    """Was an internal error of stage 'frontend' (int() of a Var)."""
    with pytest.raises(UnsupportedError) as info:
        ascend_backend.lower(parallel_over_a_scalar_argument())
    check(info.value, UnsupportedError, "parallel-n", what="T.Parallel extent 'n' of 'i' is not a constant",
          hint="constant shape and mask the runtime tail")


def gather_rows_indexed_by_a_tile():
    @T.prim_func
    def k(KV: T.Tensor((64, 64), "float16"), Idx: T.Tensor((16,), "int32"), Q: T.Tensor((16, 64), "float16"),
          S: T.Tensor((16, 16), "float32")):
        with T.Kernel(1) as _:
            idx = T.alloc_fragment((16,), "int32")
            kv = T.alloc_shared((16, 64), "float16")
            q = T.alloc_shared((16, 64), "float16")
            s = T.alloc_fragment((16, 16), "float32")
            row = T.alloc_var("int32")
            T.copy(Idx[0], idx)
            T.copy(Q[0, 0], q)
            for i in T.serial(16):
                row = idx[i]  # marker:cube-reads-ub
                T.copy(KV[row, 0:64], kv[i, :])
            T.gemm(q, kv, s, transpose_B=True)
            for i, j in T.Parallel(16, 16):
                s[i, j] = s[i, j] * 2.0
            T.copy(s, S[0, 0])

    return k


def test_cube_index_read_from_a_vector_tile_points_at_the_read():
    """The gather's rows are on the Cube core, which has no UB: the error names the statement that
    reads the tile (it named the tile's allocation) and says to read the indices from GM."""
    with pytest.raises(UnsupportedError) as info:
        ascend_backend.lower(gather_rows_indexed_by_a_tile())
    check(info.value, UnsupportedError, "cube-reads-ub", what="tile 'idx' is used on the Cube core",
          hint="read them from the global tensor")


def vector_work_sharing_no_tile_with_the_gemm():
    @T.prim_func
    def k(A: T.Tensor((16, 64), "float16"), X: T.Tensor((64,), "float32"), S: T.Tensor((16, 16), "float32"),
          Y: T.Tensor((64,), "float32")):
        with T.Kernel(1) as _:
            a = T.alloc_shared((16, 64), "float16")
            s = T.alloc_fragment((16, 16), "float32")
            x = T.alloc_fragment((64,), "float32")
            T.copy(X[0], x)  # marker:no-crossing
            for i in T.Parallel(64):
                x[i] = x[i] * 2.0
            T.copy(x, Y[0])
            T.copy(A[0, 0], a)
            T.gemm(a, a, s, transpose_B=True)
            T.copy(s, S[0, 0])

    return k


def test_vector_work_sharing_no_tile_with_the_gemm_is_refused_at_its_first_line():
    with pytest.raises(UnsupportedError) as info:
        ascend_backend.lower(vector_work_sharing_no_tile_with_the_gemm())
    check(info.value, UnsupportedError, "no-crossing", what="no tile crosses between them",
          hint="split the matrix part")
