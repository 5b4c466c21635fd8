"""The low-precision parts of the passes on a few lines of IR (FileCheck style, milliseconds each):
1-byte gemm operands (16 x 32 fractals), int32 accumulators and Fixpipe conversions, vector casts
through the arch's Cast table, fp8 refused on dav-c220 with its reason."""

import re

import pytest
from filecheck import filecheck

from ascend_backend.arch import DAV_3510, DAV_C220
from ascend_backend.dtypes import DType
from ascend_backend.errors import AlignmentError, UnsupportedError
from ascend_backend.ir import Rounding
from ascend_backend.ir.builder import ProgramBuilder
from ascend_backend.ir.printer import print_program
from ascend_backend.ir.verify import verify_program
from ascend_backend.pipeline import passes
from passes.lower_parallel import cast_steps


def upto(program, last: str):
    for name, fn in passes():
        program = verify_program(fn(program), name)
        if name == last:
            return program
    raise KeyError(last)


def gemm8(arch, dt="int8", acc="int32", out="int32", trans_b=True, block_k=64):
    b = ProgramBuilder("mm8", arch)
    A = b.tensor("A", (64, 128), dt)
    B = b.tensor("B", (64, 128) if trans_b else (128, 64), dt)
    C = b.tensor("C", (64, 64), out)
    a = b.tile("a", (64, block_k), dt)
    w = b.tile("w", (64, block_k) if trans_b else (block_k, 64), dt)
    c = b.tile("c", (64, 64), acc, fragment=True)
    with b.launch([1]):
        b.fill(c, 0.0)
        with b.loop("k", 128 // block_k) as k:
            b.copy(A[0, k * block_k], a)
            b.copy(B[0, k * block_k] if trans_b else B[k * block_k, 0], w)
            b.gemm(a, w, c, trans_b=trans_b)
        b.copy(c, C[0, 0])
    return b.build()


def test_int8_gemm_3510_loads_32_wide_fractals():
    text = print_program(upto(gemm8("dav-3510"), "lower_tile_ops"))
    filecheck(text, """
        CHECK: load_data_2d_v2 LoadData a -> a_l0a
        CHECK-SAME: m_step=4 k_step=64/32
        CHECK: load_data_2d_v2 LoadData w -> w_l0b
        CHECK-SAME: m_step=4 k_step=64/32
        CHECK-SAME: trans=False
        CHECK: mmad Mmad c += a_l0a x w_l0b
        CHECK: fixpipe_to_gm_3510
        CHECK-SAME: quant=none relu=False dtype=int32 src_dtype=int32
    """)


def test_int8_gemm_c220_loads_32_wide_fractals():
    text = print_program(upto(gemm8("dav-c220"), "lower_tile_ops"))
    filecheck(text, """
        CHECK: load_data_2d LoadData a -> a_l0a
        CHECK-SAME: trans=False src_rows=64 part= c0=32
        CHECK: load_data_2d LoadData w -> w_l0b
        CHECK-SAME: trans=True src_rows=64 part= c0=32
    """)


def test_int8_gemm_source_spells_int32_accumulator_and_fixpipe():
    from ascend_backend.codegen import generate

    src = generate(upto(gemm8("dav-3510", out="float16"), "plan_memory"))
    assert re.search(r"LocalTensor<int32_t> c(_\d+)? = ", src)  # codegen may suffix a reserved name
    assert "Fixpipe<half, int32_t, CFG_ROW_MAJOR>" in src and "QuantMode_t::DEQF16" in src
    assert "fp.deqScalar = 0x3f800000ULL" in src
    assert "LoadData2DParamsV2{0, 0, (uint16_t)(4), (uint16_t)(64 / 32)" in src


def test_int8_gemm_b_stored_k_by_n_transposes_on_3510_only():
    text = print_program(upto(gemm8("dav-3510", trans_b=False), "lower_tile_ops"))
    filecheck(text, """
        CHECK: load_data_2d_v2 LoadData w -> w_l0b
        CHECK-SAME: m_step=64/16 k_step=2
        CHECK-SAME: trans=True
    """)
    with pytest.raises(UnsupportedError, match="transposes only 2-byte fractals") as ei:
        upto(gemm8("dav-c220", trans_b=False), "lower_tile_ops")
    assert "transpose_B=True" in ei.value.hint


def test_fp8_gemm_refused_on_c220_and_int8_needs_int32():
    with pytest.raises(UnsupportedError, match="has no fp8"):
        upto(gemm8("dav-c220", dt="float8_e4m3fn", acc="float32", out="float32"), "lower_tile_ops")
    with pytest.raises(UnsupportedError, match="accumulates int8 x int8 in int32"):
        upto(gemm8("dav-3510", acc="float32", out="float32"), "lower_tile_ops")
    upto(gemm8("dav-3510", dt="float8_e5m2", acc="float32", out="float8_e4m3fn"), "lower_tile_ops")


def test_one_byte_tiles_need_32_columns():
    with pytest.raises(AlignmentError, match="multiple of 32"):
        upto(gemm8("dav-3510", block_k=16), "assign_layout")


def test_cast_steps_follow_the_arch_table():
    f32, f16, bf16, e4, i8, i32 = (DType.FLOAT32, DType.FLOAT16, DType.BFLOAT16, DType.FLOAT8_E4M3FN, DType.INT8,
                                   DType.INT32)
    assert cast_steps(f32, e4, DAV_3510) == [(f32, e4, Rounding.RINT)]
    assert cast_steps(f32, e4, DAV_C220) is None
    assert cast_steps(bf16, e4, DAV_3510) == [(bf16, f32, Rounding.NONE), (f32, e4, Rounding.RINT)]
    assert cast_steps(e4, f16, DAV_3510) == [(e4, f32, Rounding.NONE), (f32, f16, Rounding.RINT)]
    assert cast_steps(f16, bf16, DAV_3510) == [(f16, bf16, Rounding.RINT)]
    assert cast_steps(f16, bf16, DAV_C220) == [(f16, f32, Rounding.NONE), (f32, bf16, Rounding.RINT)]
    # int32 -> half needs SetDeqScale as a direct Cast: through float32
    assert cast_steps(i32, f16, DAV_C220) == [(i32, f32, Rounding.RINT), (f32, f16, Rounding.RINT)]
    assert cast_steps(i8, f32, DAV_C220) == [(i8, f16, Rounding.NONE), (f16, f32, Rounding.NONE)]
    # float -> int8 truncates in both steps (exact for values an int8 holds)
    assert cast_steps(f32, i8, DAV_C220) == [(f32, f16, Rounding.TRUNC), (f16, i8, Rounding.TRUNC)]


def test_fp8_vector_tile_refused_on_c220_with_the_reason():
    b = ProgramBuilder("q", "dav-c220")
    X, Q = b.tensor("X", (32, 128), "float32"), b.tensor("Q", (32, 128), "float8_e4m3fn")
    x, q = b.tile("x", (32, 128), "float32"), b.tile("q", (32, 128), "float8_e4m3fn")
    with b.launch([1]):
        b.copy(X[0, 0], x)
        b.copy(x, q)
        b.copy(q, Q[0, 0])
    with pytest.raises(UnsupportedError, match="exists only on dav-3510"):
        upto(b.build(), "assign_layout")


def test_int4_unpack_matcher_accepts_the_signed_and_unsigned_decodes_only():
    """The T.Parallel store is recognised by evaluating it for every byte and nibble position."""
    import tilelang.language as T
    from tvm import tirx

    from passes import unpack_int4

    def store_of(decode):
        @T.prim_func
        def k(B: T.Tensor((16, 32), "int8"), C: T.Tensor((16, 64), "float16")):
            with T.Kernel(1) as _:
                p = T.alloc_fragment((16, 32), "int8")
                d = T.alloc_fragment((16, 64), "float16")
                T.copy(B[0, 0], p)
                for i, j in T.Parallel(16, 64):
                    d[i, j] = T.cast(decode(p[i, j // 2], j % 2), "float16")
                T.copy(d, C[0, 0])

        found = []
        tirx.stmt_functor.post_order_visit(k.body, lambda n: found.append(n) if isinstance(n, tirx.BufferStore)
                                           and n.buffer.name == "d" else None)
        loops = []
        tirx.stmt_functor.post_order_visit(k.body, lambda n: loops.append(n.loop_var) if isinstance(n, tirx.For)
                                           and n.loop_var.name in ("i", "j") else None)
        return found[0], sorted(loops, key=lambda v: v.name)

    four, eight, fifteen = tirx.const(4, "int8"), tirx.const(8, "int8"), tirx.const(15, "int8")

    def signed(b, pos):
        nib = (b >> (pos.astype("int8") * four)) & fifteen
        return (nib << four) >> four

    def unsigned(b, pos):        # 0..15: int4b_t's Cast plus 16 on the negative values
        return (b >> (pos.astype("int8") * four)) & fifteen

    def high_first(b, pos):      # the other nibble order
        nib = (b >> ((1 - pos).astype("int8") * four)) & fifteen
        return (nib << four) >> four

    def offset(b, pos):          # u - 8: also not the signed nibble
        return ((b >> (pos.astype("int8") * four)) & fifteen) - eight

    for fn, want in ((signed, ("p", True)), (unsigned, ("p", False)), (high_first, None), (offset, None)):
        st, vs = store_of(fn)
        assert unpack_int4.match(st, vs) == want, fn.__name__
