"""lower_tile_ops / lower_parallel on the vector forms of issue 10: general masks (index vectors,
Compare/Compares into bit masks, And/Or/Not, Select), loop indices as values, reductions over dim 0,
over long rows and as reducer stores, T.cumsum and strided GM columns. FileCheck on the printed IR
after lowering; milliseconds each."""

import math

import pytest
from filecheck import filecheck
from test_passes import after
from tvm import tirx

from ascend_backend.errors import UnsupportedError
from ascend_backend.ir.builder import ProgramBuilder
from ascend_backend.ir.printer import print_program

NEG_INF = tirx.FloatImm("float32", -math.inf)


def _ite(c, a, b):
    return tirx.if_then_else(c, a, b)


def masked(arch="dav-c220", cond=None, a=None, b=None, dt="float32", shape=(32, 64)):
    b_ = ProgramBuilder("mask", arch)
    A = b_.tensor("A", (64, 256), dt)
    x = b_.tile("x", shape, dt)
    with b_.launch([2]) as (bx,):
        with b_.loop("k", 4) as k:
            b_.copy(A[bx * 32, k * 64], x)
            b_.parallel(shape, lambda i, j: [(x, (i, j), _ite(cond(i, j, k, bx), a(x, i, j), b(x, i, j)))])
            b_.copy(x, A[bx * 32, k * 64])
    return b_.build()


def test_tail_mask_is_index_compare_select():
    p = masked(cond=lambda i, j, k, bx: k * 64 + j >= 200, a=lambda x, i, j: NEG_INF, b=lambda x, i, j: x.load(i, j))
    filecheck(after(p, "lower_tile_ops"), """
        CHECK: [V] vec_index CreateVecIndex
        CHECK-SAME: count=64
        CHECK-NEXT: [V] vec_binary_bcast Max
        CHECK: [V] vec_compare Compares
        CHECK-SAME: GE
        CHECK-SAME: count=2048
        CHECK: [V] vec_duplicate Duplicate
        CHECK: [V] vec_select Select x =
        CHECK-SAME: : x  reads
        CHECK-NOT: vec_diag_fill
        CHECK: [MTE3] copy_ub_to_gm
    """)


def test_causal_mask_keeps_the_diagonal_fill():
    p = masked(cond=lambda i, j, k, bx: bx * 32 + i >= k * 64 + j, a=lambda x, i, j: 0.0, b=lambda x, i, j: NEG_INF)
    text = after(p, "lower_tile_ops")
    filecheck(text, """
        CHECK: [V] vec_diag_fill
        CHECK-NOT: vec_select
        CHECK: [MTE3] copy_ub_to_gm
    """)
    assert "vec_compare" not in text


def test_window_mask_joins_two_compares():
    def cond(i, j, k, bx):
        q, kk = bx * 32 + i, k * 64 + j
        return tirx.And(q >= kk, q < kk + 16)

    p = masked(cond=cond, a=lambda x, i, j: x.load(i, j), b=lambda x, i, j: NEG_INF)
    filecheck(after(p, "lower_tile_ops"), """
        CHECK: [V] vec_index CreateVecIndex
        CHECK-NEXT: [V] vec_index CreateVecIndex
        CHECK: [V] vec_binary_bcast Sub
        CHECK-NEXT: [V] vec_compare Compares
        CHECK-SAME: GE
        CHECK: [V] vec_binary_bcast Sub
        CHECK-NEXT: [V] vec_compare Compares
        CHECK-SAME: LT
        CHECK-NEXT: [V] vec_mask_logic And bits
        CHECK-NEXT: [V] vec_select Select x =
    """)


def test_else_branch_swaps_the_values_instead_of_inverting():
    p = masked(cond=lambda i, j, k, bx: tirx.Not(j < 10), a=lambda x, i, j: x.load(i, j), b=lambda x, i, j: 0.0)
    text = after(p, "lower_tile_ops")
    assert "vec_mask_logic" not in text
    filecheck(text, """
        CHECK: [V] vec_compare Compares
        CHECK-SAME: LT
        CHECK: [V] vec_duplicate
        CHECK: [V] vec_select
        CHECK-SAME: : x  reads
    """)


@pytest.mark.parametrize("arch,as_dtype", [("dav-c220", "as_dtype=float32"), ("dav-3510", "as_dtype=None")])
def test_int32_select_moves_bits_where_the_arch_lacks_it(arch, as_dtype):
    p = masked(arch, cond=lambda i, j, k, bx: j < 7, a=lambda x, i, j: j, b=lambda x, i, j: x.load(i, j), dt="int32")
    filecheck(after(p, "lower_tile_ops"), f"""
        CHECK: [V] vec_index CreateVecIndex
        CHECK: [V] vec_select
        CHECK-SAME: dtype=int32 {as_dtype}
    """)


def test_loop_indices_as_values():
    b = ProgramBuilder("iota", "dav-3510")
    A = b.tensor("A", (32, 64), "int32")
    x = b.tile("x", (32, 64), "int32")
    with b.launch([1]):
        b.parallel((32, 64), lambda i, j: [(x, (i, j), i * 64 + j)])
        b.copy(x, A[0, 0])
    filecheck(after(b.build(), "lower_tile_ops"), """
        CHECK: [V] vec_index CreateVecIndex
        CHECK-SAME: count=32 dtype=int32
        CHECK: [V] vec_scalar Muls
        CHECK: [V] vec_index CreateVecIndex
        CHECK-SAME: count=64 dtype=int32
        CHECK: [V] vec_binary_bcast Add {{row}}
    """.replace(" {{row}}", ""))


def test_reduce_over_dim_0_accumulates_rows_into_the_same_lanes():
    b = ProgramBuilder("colsum", "dav-c220")
    A, C = b.tensor("A", (32, 96), "float32"), b.tensor("C", (96,), "float32")
    x, c = b.tile("x", (32, 96), "float32"), b.tile("c", (96,), "float32")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.reduce("max", x, c, dim=0)
        b.copy(c, C[0])
    filecheck(after(b.build(), "lower_tile_ops"), """
        CHECK: [V] vec_duplicate Duplicate c = -inf
        CHECK-NEXT: [V] vec_binary_bcast Max every row of x into c
        CHECK-SAME: rows=32 cols=96
        CHECK-SAME: dst_rep=0
    """)


def test_reduce_over_long_rows_folds_each_row_by_repeats():
    b = ProgramBuilder("longrow", "dav-c220")
    A, M = b.tensor("A", (2, 8192), "float16"), b.tensor("M", (2,), "float16")
    x, m = b.tile("x", (2, 8192), "float16"), b.tile("m", (2,), "float16")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.reduce("max", x, m)
        b.copy(m, M[0])
    filecheck(after(b.build(), "lower_tile_ops"), """
        CHECK: [V] vec_duplicate
        CHECK-NEXT: [V] vec_fold_rows Max every column chunk of each row of x
        CHECK-SAME: chunks=64 tail=0
        CHECK-NEXT: [V] vec_whole_reduce WholeReduceMax
    """)


def test_reducer_stores_become_row_and_column_reductions():
    b = ProgramBuilder("reducer", "dav-3510")
    A = b.tensor("A", (32, 64), "float32")
    R, Cc = b.tensor("R", (32,), "float32"), b.tensor("Cc", (64,), "float32")
    x = b.tile("x", (32, 64), "float32")
    r, c = b.tile("r", (32,), "float32"), b.tile("c", (64,), "float32")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.fill(r, 0.0)
        b.fill(c, 0.0)
        b.parallel((32, 64), lambda i, j: [(r, (i,), r.load(i) + x.load(i, j) * 2.0),
                                           (c, (j,), tirx.Max(c.load(j), x.load(i, j)))])
        b.copy(r, R[0])
        b.copy(c, Cc[0])
    filecheck(after(b.build(), "lower_tile_ops"), """
        CHECK: [V] vec_scalar Muls x, 2.0
        CHECK: [V] vec_whole_reduce WholeReduceSum
        CHECK: [V] vec_binary Add r,
        CHECK: [V] vec_binary_bcast Max every row of x into c
    """)


def test_a_store_of_the_same_element_that_is_no_reduction_is_refused():
    b = ProgramBuilder("bad", "dav-3510")
    A = b.tensor("A", (32, 64), "float32")
    x, r = b.tile("x", (32, 64), "float32"), b.tile("r", (32,), "float32")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.parallel((32, 64), lambda i, j: [(r, (i,), x.load(i, j) * 2.0)])
    with pytest.raises(UnsupportedError, match="writes the same element for every j"):
        after(b.build(), "lower_tile_ops")


def test_cumsum_over_rows_is_vector_and_along_rows_is_scalar():
    b = ProgramBuilder("cs", "dav-c220")
    A = b.tensor("A", (16, 32), "float32")
    x, y = b.tile("x", (16, 32), "float32"), b.tile("y", (16, 32), "float32")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.cumsum(x, y, dim=0, reverse=True)
        b.cumsum(y, y, dim=1)
        b.copy(y, A[0, 0])
    filecheck(after(b.build(), "lower_tile_ops"), """
        CHECK: [V] vec_scan_rows prefix Add over the rows of x -> y (reversed)
        CHECK: for y_r in
        CHECK: for y_k in 1 + 0..31
        CHECK-NEXT: [S] y[y_r, y_k] = y[y_r, y_k] + y[y_r, y_k - 1]
    """)


def test_strided_gm_columns_go_through_one_block_per_element():
    b = ProgramBuilder("col", "dav-3510")
    G = b.tensor("G", (128, 4), "float32")
    Ii = b.tensor("I", (128, 4), "int32")
    g, ii = b.tile("g", (1, 32), "float32"), b.tile("ii", (32,), "int32")
    with b.launch([4, 4]) as (bs, bh):
        b.copy(G.window(bs * 32, bh, extents=(32, 1)), g)
        b.copy(Ii.window(bs * 32, bh, extents=(32, 1)), ii)
        b.copy(g, G.window(bs * 32, bh, extents=(32, 1)))
    filecheck(after(b.build(), "lower_tile_ops"), """
        CHECK: [MTE2] copy_gm_to_ub DataCopyPad G -> tmp
        CHECK-SAME: ub_pitch=8
        CHECK-NEXT: [V] vec_whole_reduce WholeReduceMax tmp
        CHECK-SAME: mask=1 repeat=32 src_rep=1
        CHECK: for ii_k in
        CHECK-NEXT: [S] ii[ii_k] = I
        CHECK: [V] vec_brcb Brcb g
        CHECK-NEXT: [MTE3] copy_ub_to_gm DataCopyPad tmp
    """)


def test_split_rows_refuses_to_combine_rows_split_between_the_aivs():
    b = ProgramBuilder("mm_colsum", "dav-c220")
    A, B = b.tensor("A", (64, 64), "float16"), b.tensor("B", (64, 64), "float16")
    C = b.tensor("C", (64,), "float32")
    a, w = b.tile("a", (64, 64), "float16"), b.tile("w", (64, 64), "float16")
    c = b.tile("c", (64, 64), "float32", fragment=True)
    s = b.tile("s", (64,), "float32")
    with b.launch([1]):
        b.copy(A[0, 0], a)
        b.copy(B[0, 0], w)
        b.gemm(a, w, c, clear=True)
        b.reduce("sum", c, s, dim=0)
        b.copy(s, C[0])
    with pytest.raises(UnsupportedError, match="over dim 0 of 'c' combines the rows"):
        after(b.build(), "split_rows")


def test_compact_lowering_writes_results_over_their_operands_temporaries():
    def program():
        b = ProgramBuilder("chain", "dav-c220")
        X, V = b.tensor("X", (16, 64), "float32"), b.tensor("V", (16,), "float32")
        x, y, v = b.tile("x", (16, 64), "float32"), b.tile("y", (16, 64), "float32"), b.tile("v", (16,), "float32")
        with b.launch([1]):
            b.copy(X[0, 0], x)
            b.copy(V[0], v)
            b.parallel((16, 64), lambda i, j: [(y, (i, j), (x.load(i, j) * 0.5 - v.load(i)) * 0.25 + x.load(i, j))])
            b.copy(y, X[0, 0])
        return b.build()

    from ascend_backend.passes.lower_tile_ops import lower_tile_ops
    from test_passes import upto

    from ascend_backend.ir.printer import print_program

    first = after(program(), "lower_tile_ops")
    assert "tmp3_float32" in first  # x * 0.5, then the broadcast Sub in a second tile temporary
    compact = print_program(lower_tile_ops(upto(program(), "assign_layout"), compact_temps=True))
    filecheck(compact, """
        CHECK: [V] vec_scalar Muls x, 0.5 -> tmp1_float32
        CHECK: [V] vec_binary_bcast Sub tmp1_float32(tile), v(row) -> tmp1_float32
        CHECK-NEXT: [V] vec_scalar Muls tmp1_float32, 0.25 -> tmp1_float32
        CHECK-NEXT: [V] vec_binary Add tmp1_float32, x -> y
    """)


def test_compact_lowering_computes_a_tile_into_itself_when_it_reads_it_once():
    # x = (x - v[row]) * 0.25 + 1: x is read once, at the element it writes, so the compact lowering
    # writes each step into x (no tile temporary); y = x * x + x reads x three times: a temporary
    def program(expr):
        b = ProgramBuilder("inplace", "dav-c220")
        X, V = b.tensor("X", (16, 64), "float32"), b.tensor("V", (16,), "float32")
        x, v = b.tile("x", (16, 64), "float32"), b.tile("v", (16,), "float32")
        with b.launch([1]):
            b.copy(X[0, 0], x)
            b.copy(V[0], v)
            b.parallel((16, 64), lambda i, j: [(x, (i, j), expr(x, v, i, j))])
            b.copy(x, X[0, 0])
        return b.build()

    from ascend_backend.passes.lower_tile_ops import lower_tile_ops
    from test_passes import upto

    from ascend_backend.ir.printer import print_program

    def compact(expr):
        return print_program(lower_tile_ops(upto(program(expr), "assign_layout"), compact_temps=True))

    once = compact(lambda x, v, i, j: (x.load(i, j) - v.load(i)) * 0.25 + 1.0)
    filecheck(once, """
        CHECK: [V] vec_binary_bcast Sub x(tile), v(row) -> x
        CHECK-NEXT: [V] vec_scalar Muls x, 0.25 -> x
        CHECK-NEXT: [V] vec_scalar Adds x, 1.0 -> x
    """)
    assert "Muls x, 0.25 -> x" not in print_program(upto(program(
        lambda x, v, i, j: (x.load(i, j) - v.load(i)) * 0.25 + 1.0), "lower_tile_ops"))  # only when compact
    thrice = compact(lambda x, v, i, j: x.load(i, j) * x.load(i, j) + x.load(i, j))
    filecheck(thrice, """
        CHECK: [V] vec_binary Mul x, x -> tmp
        CHECK-NEXT: [V] vec_binary Add tmp{{.*}}, x -> x
    """)


def test_long_rows_broadcast_one_call_per_row():
    b = ProgramBuilder("longbc", "dav-3510")
    X = b.tensor("X", (2, 4096), "float32")
    x, m = b.tile("x", (2, 4096), "float32"), b.tile("m", (2,), "float32")
    with b.launch([1]):
        b.copy(X[0, 0], x)
        b.reduce("max", x, m)
        b.parallel((2, 4096), lambda i, j: [(x, (i, j), x.load(i, j) - m.load(i))])
        b.copy(x, X[0, 0])
    filecheck(after(b.build(), "lower_tile_ops"), """
        CHECK: [V] vec_fold_rows Max
        CHECK: [V] vec_brcb Brcb m
        CHECK-NEXT: [V] vec_binary_bcast_rows Sub x(tile), m(row) -> x
        CHECK-SAME: rows=2 cols=4096
    """)


def test_uint8_mask_is_cast_through_half_and_a_condition_can_be_stored_as_bool():
    b = ProgramBuilder("m8", "dav-c220")
    X, U = b.tensor("X", (32, 64), "float32"), b.tensor("U", (64,), "uint8")
    Mo = b.tensor("Mo", (32, 64), "bool")
    x, u, mo = b.tile("x", (32, 64), "float32"), b.tile("u", (64,), "uint8"), b.tile("mo", (32, 64), "bool")
    with b.launch([1]):
        b.copy(X[0, 0], x)
        b.copy(U[0], u)
        b.parallel((32, 64), lambda i, j: [
            (x, (i, j), _ite(tirx.NE(u.load(j), tirx.const(0, "uint8")), x.load(i, j), NEG_INF)),
            (mo, (i, j), x.load(i, j) > 0.0)])
        b.copy(x, X[0, 0])
        b.copy(mo, Mo[0, 0])
    filecheck(after(b.build(), "lower_tile_ops"), """
        CHECK: [V] vec_cast Cast u (uint8) -> tmp{{h}}
        CHECK-NEXT: [V] vec_cast Cast tmp
        CHECK-SAME: (float32)
        CHECK: [V] vec_compare Compares
        CHECK-SAME: NE
        CHECK: [V] vec_select Select x =
        CHECK: [V] vec_compare Compares x GT
        CHECK: [V] vec_select Select tmp
        CHECK-SAME: dtype=float16
        CHECK: [V] vec_cast Cast tmp
        CHECK-SAME: -> mo (bool)
    """.replace("{{h}}", ""))


# -- an `if` around a store into a global tensor (varlen attention's last rows)


def guarded_store(cond, arch="dav-c220"):
    """Y[s0 + bx * 32 + i, j] = x[i, j] where cond(i, j, bx, n), with s0 and n read from cu."""
    b_ = ProgramBuilder("guarded", arch)
    X, Y = b_.tensor("X", (100, 64), "float16"), b_.tensor("Y", (100, 64), "float16")
    cu = b_.tensor("cu", (3,), "int32")
    x = b_.tile("x", (32, 64), "float16")
    with b_.launch([4, 2]) as (bx, bz):
        s0, n = cu.load(bz), cu.load(bz + 1) - cu.load(bz)
        b_.copy(X[s0 + bx * 32, 0], x)
        b_.parallel((32, 64), lambda i, j: [
            (Y, (s0 + bx * 32 + i, j), _ite(cond(i, j, bx, n), x.load(i, j), Y.load(s0 + bx * 32 + i, j)))])
    return b_.build()


def _stores(p):
    from test_shape_passes import copies, upto

    from ascend_backend.ir import CopyGmToUb, CopyUbToGm

    p = upto(p, "lower_tile_ops")
    return copies(p, CopyGmToUb), copies(p, CopyUbToGm), print_program(p)


def test_row_bounded_gm_store_copies_only_the_kept_rows():
    loads, (store,), text = _stores(guarded_store(lambda i, j, bx, n: bx * 32 + i < n))
    assert len(loads) == 1  # no read of Y's old rows: a select against them would race other blocks
    assert "vec_select" not in text and "vec_compare" not in text
    v = store.window.valid_rows
    # clamp(min(100, cu[by + 1]) - (cu[by] + bx * 32), 0, 32): the tensor's end and the sequence's
    assert v.tail and v.clamp and str(v.size) == "T.min(100, cu[by + 1])" and str(v.base) == "bx * 32 + cu[by]"
    assert not store.window.valid_cols.tail


def test_column_bound_and_two_row_bounds_combine():
    _, (store,), _ = _stores(guarded_store(lambda i, j, bx, n: tirx.And(tirx.And(i <= 20, j < 48), i < n)))
    assert store.window.valid_cols.tail and str(store.window.valid_cols.size) == "48"
    assert "min" in str(store.window.valid_rows.size)
    assert store.form.value == "pad"


def test_a_lower_bound_keeps_the_select():
    loads, _, text = _stores(guarded_store(lambda i, j, bx, n: i >= 4))
    assert len(loads) == 2 and "vec_select" in text


def test_unsigned_int4_decode_is_the_int4_cast_plus_a_fix_up_of_negative_values():
    # (p >> 4 * (j % 2)) & 15: the nibble as 0..15. Cast of the tile read as int4b_t gives -8..7;
    # u = s - max(min(s, 0) * 16, -16) adds 16 to the negative ones.
    b = ProgramBuilder("uint4", "dav-c220")
    P, D = b.tensor("P", (16, 32), "int8"), b.tensor("D", (16, 64), "float16")
    p, d = b.tile("p", (16, 32), "int8"), b.tile("d", (16, 64), "float16")
    four, fifteen = tirx.const(4, "int8"), tirx.const(15, "int8")
    with b.launch([1]):
        b.copy(P[0, 0], p)
        b.parallel((16, 64), lambda i, j: [(d, (i, j), tirx.Cast(
            "float16", (p.load(i, tirx.floordiv(j, 2)) >> (tirx.floormod(j, 2).astype("int8") * four)) & fifteen))])
        b.copy(d, D[0, 0])
    filecheck(after(b.build(), "lower_tile_ops"), """
        CHECK: Cast p (int4) -> d (float16)
        CHECK-NEXT: Mins d, 0
        CHECK-NEXT: Muls
        CHECK-NEXT: Maxs
        CHECK-NEXT: Sub d,
    """)


@pytest.mark.parametrize("arch,checks", [
    ("dav-c220", """
        CHECK: [V] vec_duplicate Duplicate m = 0xc8c8 (as uint16 words)  reads() writes(m)
        CHECK-SAME: count=1024 as_dtype=uint16
        CHECK: [V] vec_duplicate Duplicate v = 0x0101 (as uint16 words)
        CHECK-SAME: count=16 as_dtype=uint16
    """),
    ("dav-3510", """
        CHECK: [V] vec_duplicate Duplicate m = 200.0  reads() writes(m)
        CHECK-SAME: count=2048 as_dtype=None
        CHECK: [V] vec_duplicate Duplicate v = 1.0
        CHECK-SAME: count=32 as_dtype=None
    """),
])
def test_byte_fill_writes_16_bit_words_where_duplicate_takes_no_byte(arch, checks):
    """T.fill of 1-byte tiles: dav-c220's Duplicate takes no 1-byte type, so it writes the tile's
    bytes as half as many uint16 words, the byte twice in each (and still declares the whole tile
    written); dav-3510's takes them in the count form."""
    b = ProgramBuilder("fill8", arch)
    M, V = b.tensor("M", (32, 64), "uint8"), b.tensor("V", (20,), "bool")
    m, v = b.tile("m", (32, 64), "uint8"), b.tile("v", (20,), "bool")
    with b.launch([1]):
        b.fill(m, 200)
        b.fill(v, 1)
        b.copy(m, M[0, 0])
        b.copy(v, V[0])
    filecheck(after(b.build(), "lower_tile_ops"), checks)


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_int8_multiply_is_refused_where_the_op_is_built(arch):
    b = ProgramBuilder("mul8", arch)
    A = b.tensor("A", (32, 64), "int8")
    x = b.tile("x", (32, 64), "int8")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.parallel((32, 64), lambda i, j: [(x, (i, j), x.load(i, j) * x.load(i, j))])
        b.copy(x, A[0, 0])
    with pytest.raises(UnsupportedError, match=f"`\\*` on int8 tiles: the vector unit's Mul takes .* on {arch}"):
        after(b.build(), "lower_tile_ops")
