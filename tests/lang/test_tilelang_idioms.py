"""Idioms of TileLang's own examples that the ascendc target refused or computed differently from
TileLang, each on the emulator against torch in strict mode:

* T.clear / T.fill of a T.alloc_var or T.alloc_local (deepseek_mla's split combine): scalar stores;
* GPU register-allocation hints (T.no_set_max_nreg, T.set_max_nreg, the warp-group annotations:
  mamba_chunk_scan) are dropped, as T.use_swizzle is;
* an element of a 1-element fragment set from a global tensor for the vector code of a mixed kernel
  (mamba's `D_local[0] = D[h]`): the Cube side, which does not read it, drops the store;
* T.Persistent's truncmod indices (gemm_persistent);
* a T.clear of a tile nothing reads is dropped (it put a gemm kernel on both core kinds);
* a gemm result stored in a dtype the Fixpipe does not write (float8_e5m2 on dav-3510) is cast on
  the Vector cores;
* x / c for a constant c: a division, as TileLang's default (no fast math) computes it, unless 1 / c
  is exact (a power of two), which stays one Muls;
* a transposed read x[j, i] in T.Parallel(i, j) (mamba_chunk_state's xt = x^T * scale): one
  Transpose ([N,C,H,W] -> [N,H,W,C] with N = H = 1); in a kernel with a gemm each AIV holds the tile
  whole, transposes it and takes its half of the rows.
"""

import pytest
import tilelang.language as T
import torch
from dsl_lines import marker_line
from filecheck import filecheck
from strict_run import run

import ascend_backend
from ascend_backend.errors import SrcLoc, UnsupportedError


def locals_fill(n_local: int):
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), Out: T.Tensor((2,), "float32")):
        with T.Kernel(1) as _:
            s = T.alloc_var("float32")
            acc = T.alloc_local([n_local], "float32")
            T.clear(s)
            T.fill(acc, 0.5)
            for i in T.serial(64):
                s += A[i]
            Out[0] = s
            Out[1] = acc[0] + acc[n_local - 1]

    return k


@pytest.mark.parametrize("n_local", [4, 40])  # unrolled stores; a loop of them
def test_fill_of_scalar_locals(arch, n_local):
    a = torch.randn(64)
    o = torch.full((2,), float("nan"))
    k = run(locals_fill(n_local), [a, o], arch)
    torch.testing.assert_close(o[0], a.sum(), rtol=1e-5, atol=1e-5)
    assert o[1] == 1.0
    filecheck(k.kernel_source, "CHECK: s[0] = 0.0f;" if n_local == 4 else """
        CHECK: s[0] = 0.0f;
        CHECK: for (int32_t acc_i0 = 0; acc_i0 < 40; ++acc_i0) {
        CHECK-NEXT: acc[acc_i0] = 0.5f;
    """)


M, N, K = 64, 64, 64


def mixed_with_hints_and_scalar_tile():
    """O = (A @ B) + X * D[1]: the gemm on the Cube, the scaled residual on the Vectors, the scalar
    read into a 1-element fragment; with the register hints of a warp-specialized GPU kernel."""

    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), X: T.Tensor((M, N), "float32"),
          D: T.Tensor((4,), "float32"), Out: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as _:
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            x = T.alloc_fragment((M, N), "float32")
            d = T.alloc_fragment((1,), "float32")
            T.no_set_max_nreg()
            T.set_max_nreg(240, 1)
            T.annotate_producer_reg_dealloc()
            T.annotate_consumer_reg_alloc()
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            d[0] = D[1]
            T.copy(X, x)
            for i, j in T.Parallel(M, N):
                c[i, j] += x[i, j] * d[0]
            T.copy(c, Out)

    return k


def test_register_hints_and_a_scalar_tile_of_the_vector_side(arch):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(M, K, generator=g).half(), torch.randn(K, N, generator=g).half()
    x, d = torch.randn(M, N, generator=g), torch.randn(4, generator=g)
    o = torch.full((M, N), float("nan"))
    run(mixed_with_hints_and_scalar_tile(), [a, b, x, d, o], arch)
    torch.testing.assert_close(o, a.float() @ b.float() + x * d[1], atol=1e-3, rtol=1e-4)


def persistent_gemm(m: int, n: int, cores: int):
    bm = bn = 32

    @T.prim_func
    def k(A: T.Tensor((m, K), "float16"), B: T.Tensor((K, n), "float16"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(cores) as block_id:
            a = T.alloc_shared((bm, K), "float16")
            b = T.alloc_shared((K, bn), "float16")
            c = T.alloc_fragment((bm, bn), "float32")
            for bx, by in T.Persistent([T.ceildiv(m, bm), T.ceildiv(n, bn)], cores, block_id):
                T.copy(A[bx * bm, 0], a)
                T.copy(B[0, by * bn], b)
                T.gemm(a, b, c, clear_accum=True)
                T.copy(c, C[bx * bm, by * bn])

    return k


def test_persistent_tile_loop(arch):
    # 3 x 2 tiles over 4 blocks: two waves, the second one partial
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(96, K, generator=g).half(), torch.randn(K, 64, generator=g).half()
    c = torch.full((96, 64), float("nan"))
    k = run(persistent_gemm(96, 64, 4), [a, b, c], arch)
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-3, rtol=1e-4)
    assert " % " in k.kernel_source  # T.truncmod, printed as C's (truncating) %


def divide(c: float):
    @T.prim_func
    def k(X: T.Tensor((32, 64), "float32"), Y: T.Tensor((32, 64), "float32")):
        with T.Kernel(1) as _:
            x = T.alloc_fragment((32, 64), "float32")
            T.copy(X, x)
            for i, j in T.Parallel(32, 64):
                x[i, j] = x[i, j] / c
            T.copy(x, Y)

    return k


@pytest.mark.parametrize("c", [448.0, 3.0, 0.1])
def test_division_by_a_constant_is_a_division(arch, c):
    x = torch.randn(32, 64) * 100
    y = torch.full_like(x, float("nan"))
    k = run(divide(c), [x, y], arch)
    assert torch.equal(y, x / c)  # bit-exact: x * (1 / c) is not, for these c
    filecheck(k.kernel_source, """
        CHECK: Duplicate(
        CHECK: Div(
    """)


def test_division_by_a_power_of_two_is_one_multiplication(arch):
    x = torch.randn(32, 64) * 100
    y = torch.full_like(x, float("nan"))
    k = run(divide(0.25), [x, y], arch)
    assert torch.equal(y, x / 0.25)
    filecheck(k.kernel_source, "CHECK: Muls(x, x, 4.0f,")
    assert "Div(" not in k.kernel_source


def test_an_expression_codegen_cannot_print_names_the_statement_line():
    # the expression printer knows no lines: codegen gives its error the statement's
    from tvm import tirx

    from ascend_backend.codegen import _body
    from ascend_backend.ir import If

    weird = tirx.Ramp(tirx.IntImm("int32", 0), tirx.IntImm("int32", 1), 4)
    loc = SrcLoc("kernel.py", 7)
    with pytest.raises(UnsupportedError) as e:
        _body([If(cond=weird, then_body=[], else_body=[], loc=loc)], 1, None, [])
    assert e.value.loc == loc and str(e.value).startswith("kernel.py:7: unsupported: expression")


def transposed(R: int, C: int, dt: str):
    @T.prim_func
    def k(X: T.Tensor((R, C), dt), S: T.Tensor((R,), dt), Y: T.Tensor((C, R), dt)):
        with T.Kernel(1) as _:
            x = T.alloc_fragment((R, C), dt)
            s = T.alloc_fragment((R,), dt)
            y = T.alloc_fragment((C, R), dt)
            T.copy(X, x)
            T.copy(S, s)
            for i, j in T.Parallel(C, R):
                y[i, j] = x[j, i] * s[j]  # marker:transposed
            T.copy(y, Y)

    return k


@pytest.mark.parametrize("R, C, dt", [(32, 48, "float16"), (16, 32, "float32"), (32, 64, "int32")])
def test_a_transposed_read_is_one_transpose(arch, R, C, dt):
    tdt = getattr(torch, dt)
    x = (torch.randn(R, C) * 20).to(tdt)
    s = (torch.randn(R) * 4).to(tdt)
    y = torch.zeros(C, R, dtype=tdt)
    k = run(transposed(R, C, dt), [x, s, y], arch)
    assert torch.equal(y, (x * s[:, None]).T)
    filecheck(k.kernel_source, f"""
        CHECK: Transpose(tmp{{{{.*}}}}, x, tmp{{{{.*}}}}_uint8, TransposeParamsExt(1, {R}, 1, {C}, TransposeType::TRANSPOSE_NCHW2NHWC));
        CHECK: Mul(
    """)


def test_a_transposed_read_of_bfloat16_is_refused_on_dav_c220():
    with pytest.raises(UnsupportedError) as e:
        ascend_backend.lower(transposed(16, 32, "bfloat16"), {"kind": "ascendc", "arch": "dav-c220"})
    assert "a transposed read (x[j, i] in T.Parallel(i, j)) on bfloat16 tiles: the vector unit's Transpose takes" \
        in e.value.what
    assert e.value.loc.line == marker_line(__file__, "transposed")


def test_a_transposed_read_of_a_tile_with_partial_blocks_is_refused():
    with pytest.raises(UnsupportedError) as e:
        ascend_backend.lower(transposed(16, 40, "float16"), {"kind": "ascendc", "arch": "dav-3510"})
    assert "the transposed read of 'x' (16 x 40, float16): its rows of 40 and the result's of 16 elements must fill " \
        "whole 32-byte blocks" in e.value.what
    assert e.value.loc.line == marker_line(__file__, "transposed")


def transposed_gemm_operand():
    """mamba_chunk_state's step: xt = x^T * scale, then xt @ b on the Cube."""

    @T.prim_func
    def k(X: T.Tensor((K, M), "float16"), S: T.Tensor((K,), "float16"), B: T.Tensor((K, N), "float16"),
          C: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as _:
            x = T.alloc_fragment((K, M), "float16")
            s = T.alloc_fragment((K,), "float16")
            xt = T.alloc_fragment((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.copy(X, x)
            T.copy(S, s)
            T.copy(B, b)
            for i, j in T.Parallel(M, K):
                xt[i, j] = x[j, i] * s[j]
            T.gemm(xt, b, c, clear_accum=True)
            T.copy(c, C)

    return k


def test_a_transposed_gemm_operand_split_between_the_aivs(arch):
    g = torch.Generator().manual_seed(2)
    x, s, b = torch.randn(K, M, generator=g).half(), torch.randn(K, generator=g).half(), torch.randn(K, N,
                                                                                                    generator=g).half()
    c = torch.full((M, N), float("nan"))
    k = run(transposed_gemm_operand(), [x, s, b, c], arch)
    torch.testing.assert_close(c, (x * s[:, None]).T.float() @ b.float(), atol=1e-2, rtol=1e-3)
    # each AIV copies the whole of x, transposes it and takes its 32 rows
    filecheck(k.kernel_source, """
        CHECK: DataCopy(x, X_gm, 4096);
        CHECK: Transpose(tmp{{.*}}, x, tmp{{.*}}_uint8, TransposeParamsExt(1, 64, 1, 64, TransposeType::TRANSPOSE_NCHW2NHWC));
        CHECK: DataCopy(tmp{{.*}}[((sub_idx * 32) * 64)], 2048);
    """)


def test_a_gemm_result_read_transposed_is_refused():
    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((N, M), "float32")):
        with T.Kernel(1) as _:
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            ct = T.alloc_fragment((N, M), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            for i, j in T.Parallel(N, M):
                ct[i, j] = c[j, i]  # marker:from-cube
            T.copy(ct, C)

    with pytest.raises(UnsupportedError) as e:
        ascend_backend.lower(k, {"kind": "ascendc", "arch": "dav-3510"})
    assert "'c' comes from the Cube and is read transposed" in e.value.what
    assert e.value.loc.line == marker_line(__file__, "from-cube")
    assert "transpose on the Cube instead" in e.value.hint


def test_a_clear_of_an_unused_tile_is_dropped(arch):
    # a leftover T.clear of a fragment nothing reads put vector work in a gemm kernel that shares
    # no tile with it: refused ("no tile crosses between them") before
    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as _:
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            unused = T.alloc_fragment((M, N), "float32")
            T.clear(unused)
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c, C)

    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    c = torch.full((M, N), float("nan"))
    kern = run(k, [a, b, c], arch)
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-3, rtol=1e-4)
    assert "AIC_ONLY" in kern.kernel_source and "unused" not in kern.kernel_source


def fp8_gemm(out_dtype: str):
    @T.prim_func
    def k(A: T.Tensor((M, K), "float8_e4m3fn"), B: T.Tensor((N, K), "float8_e4m3fn"), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(1) as _:
            a = T.alloc_shared((M, K), "float8_e4m3fn")
            b = T.alloc_shared((N, K), "float8_e4m3fn")
            c = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, transpose_B=True, clear_accum=True)
            T.copy(c, C)

    return k


def test_a_gemm_result_the_fixpipe_cannot_write_is_cast_on_the_vector_cores():
    # TileLang's gemm_fp8 example with an e5m2 output: the 950's Fixpipe writes float32 as e4m3 but
    # not e5m2, its vector Cast takes float32 -> e5m2 (passes/cast_on_vector.py)
    g = torch.Generator().manual_seed(4)
    a = torch.randn(M, K, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(N, K, generator=g).to(torch.float8_e4m3fn)
    c = torch.zeros(M, N, dtype=torch.float8_e5m2)
    k = run(fp8_gemm("float8_e5m2"), [a, b, c], "dav-3510")
    ref = (a.float() @ b.float().T).to(torch.float8_e5m2)
    assert torch.equal(c.view(torch.uint8), ref.view(torch.uint8))
    filecheck(k.kernel_source, """
        CHECK: Kernel k: MIX_AIC_1_2
        CHECK: Cast(c_float8_e5m2, c, RoundMode::CAST_RINT,
    """)
    # e4m3 stays on the Fixpipe: a Cube-only kernel
    assert "AIC_ONLY" in ascend_backend.lower(fp8_gemm("float8_e4m3fn"), {"kind": "ascendc", "arch": "dav-3510"}).source
