"""Passes on the forms TileLang's attention examples use (ascend_backend.ir.builder, milliseconds
each): rows of a UB tile copied at an offset, the Cube reading a vector tile's element from GM, rows
of a split tile in one AIV's half, `(a) & (b)` conditions, if-bounded stores into strided GM
columns, tiles used as column ranges, pipelined loops that keep the stages that fit."""

import warnings

import pytest
from ascend_backend.passes.multi_buffer import multi_buffer
from filecheck import filecheck
from test_passes import after
from test_shape_passes import copies, upto
from tvm import tirx

from ascend_backend.errors import MemoryBudgetError, UnsupportedError
from ascend_backend.frontend import split_column_tiles
from ascend_backend.ir import CopyUbToGm, Core, If, Region, TileGemm, VecCopy, walk
from ascend_backend.ir.builder import ProgramBuilder

# -- rows of a UB tile


def rows_kernel(arch="dav-c220"):
    b = ProgramBuilder("rows", arch)
    L, R = b.tensor("L", (4, 64), "float16"), b.tensor("R", (2, 64), "float32")
    lse = b.tile("lse", (4, 64), "float16")
    v = b.tile("v", (64,), "float16")
    acc = b.tile("acc", (64,), "float32")
    two = b.tile("two", (2, 64), "float32")
    with b.launch([1]):
        b.copy(L[0, 0], lse)
        b.fill(acc, 0.0)
        with b.loop("k", 4) as k:
            b.copy(lse.window(k, 0, extents=(1, 64)), v)
            b.parallel((64,), lambda i: [(acc, (i,), acc.load(i) + lse.load(k, i))])
        b.parallel((64,), lambda i: [(two, (0, i), acc.load(i) * 2.0)])
        b.copy(acc, two.window(1, 0, extents=(1, 64)))
        b.copy(two, R[0, 0])
    return b.build()


def test_rows_of_a_tile_are_one_datacopy_at_the_row_offset():
    text = after(rows_kernel(), "lower_tile_ops")
    filecheck(text, """
        CHECK: for k
        CHECK: [V] vec_copy DataCopy lse[k * 64] -> v
        CHECK-SAME: count=64
        CHECK: [V] vec_copy DataCopy lse[k * 64] -> tmp
        CHECK: [V] vec_cast Cast
        CHECK: [V] vec_binary Add acc
        CHECK: [V] vec_copy DataCopy tmp
        CHECK-SAME: -> two
        CHECK: [V] vec_copy DataCopy acc -> two[64]
    """)
    p = upto(rows_kernel(), "lower_tile_ops")
    ops = [s for _, _, k in p.kernels() for s in walk(k.body) if isinstance(s, VecCopy)]
    assert any(str(o.src_offset) == "k * 64" for o in ops) and any(o.dst_offset == 64 for o in ops)


def test_rows_into_a_tile_of_another_shape_are_refused():
    b = ProgramBuilder("rows_bad", "dav-c220")
    L = b.tensor("L", (4, 64), "float32")
    x, y = b.tile("x", (4, 64), "float32"), b.tile("y", (3, 64), "float32")
    with b.launch([1]):
        b.copy(L[0, 0], x)
        b.copy(x.window(0, 0, extents=(2, 64)), y)
        b.copy(y, L[0, 0], extents=(3, 64))
    with pytest.raises(UnsupportedError, match="do not have the other tile's shape"):
        upto(b.build(), "lower_tile_ops")


# -- the Cube reads an element of a vector tile from GM


def sparse_blocks(arch="dav-3510", mask_in_loop=False):
    b = ProgramBuilder("bsa", arch)
    Q, K = b.tensor("Q", (64, 64), "float16"), b.tensor("K", (256, 64), "float16")
    M, Out = b.tensor("M", (2, 4), "int32"), b.tensor("O", (128, 64), "float32")
    q, k_s = b.tile("q", (64, 64), "float16"), b.tile("k_s", (64, 64), "float16")
    s = b.tile("s", (64, 64), "float32", fragment=True)
    m = b.tile("m", (4,), "int32", fragment=True)
    with b.launch([2]) as (bx,):
        b.copy(Q[0, 0], q)
        if not mask_in_loop:
            b.copy(M.window(bx, 0, extents=(1, 4)), m)
        b.fill(s, 0.0)
        with b.loop("k", 4) as k:
            if mask_in_loop:
                b.copy(M.window(bx, 0, extents=(1, 4)), m)
            with b.if_(tirx.NE(m.load(k), 0)):
                b.copy(K[k * 64, 0], k_s)
                b.gemm(q, k_s, s, trans_b=True)
                b.parallel((64, 64), lambda i, j: [(s, (i, j), s.load(i, j) * 0.5)])
        b.copy(s, Out[bx * 64, 0])
    return b.build()


def test_the_cube_reads_a_mask_tile_element_from_its_gm_window():
    p = upto(sparse_blocks(), "partition")
    aic = next(k for _, c, k in p.kernels() if c is Core.AIC)
    aiv = next(k for _, c, k in p.kernels() if c is Core.AIV)
    cube_if = next(s for s in walk(aic.body) if isinstance(s, If))
    vec_if = next(s for s in walk(aiv.body) if isinstance(s, If))
    assert str(cube_if.cond) == "M[bx, k] != 0" and "m" not in aic.buffers
    assert str(vec_if.cond) == "m[k] != 0"  # the AIVs keep their tile


def test_a_mask_tile_rewritten_in_a_loop_is_refused_for_the_cube():
    with pytest.raises(UnsupportedError, match="element of a vector tile it does not have"):
        upto(sparse_blocks(mask_in_loop=True), "partition")


# -- rows of a split tile in one AIV's half


def valid_heads(rows=(0, 4), arch="dav-3510"):
    b = ProgramBuilder("dec", arch)
    Q, K = b.tensor("Q", (64, 64), "float16"), b.tensor("K", (64, 64), "float16")
    Out = b.tensor("O", (8, 64), "float32")
    q, k_s = b.tile("q", (64, 64), "float16"), b.tile("k_s", (64, 64), "float16")
    o = b.tile("o", (64, 64), "float32", fragment=True)
    small = b.tile("small", (rows[1] - rows[0], 64), "float32")
    with b.launch([1]):
        b.copy(Q[0, 0], q)
        b.copy(K[0, 0], k_s)
        b.fill(o, 0.0)
        b.gemm(q, k_s, o, trans_b=True)
        b.parallel((64, 64), lambda i, j: [(o, (i, j), o.load(i, j) * 2.0)])
        b.copy(o.window(rows[0], 0, extents=(rows[1] - rows[0], 64)), small)
        b.copy(small, Out[0, 0])
    return b.build()


def test_rows_in_one_half_are_copied_and_stored_by_that_aiv():
    filecheck(after(valid_heads((36, 40)), "split_rows"), """
        CHECK: == AIV ==
        CHECK: if sub_idx == 1 {
        CHECK-NEXT: copy o[4, 0]<4x64> -> small
        CHECK: if sub_idx == 1 {
        CHECK-NEXT: copy small
        CHECK-SAME: -> O[0, 0]
    """)


def test_rows_across_both_halves_are_refused():
    with pytest.raises(UnsupportedError, match="lie in both halves"):
        upto(valid_heads((28, 36)), "split_rows")


# -- `(a) & (b)` and bounded stores into strided columns


def test_bitwise_and_of_two_conditions_is_a_mask_and():
    b = ProgramBuilder("band", "dav-c220")
    A, Mk = b.tensor("A", (32, 64), "float32"), b.tensor("Mk", (64,), "uint8")
    x, m = b.tile("x", (32, 64), "float32"), b.tile("m", (64,), "uint8")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.copy(Mk[0], m)
        b.parallel((32, 64), lambda i, j: [(x, (i, j), tirx.if_then_else(
            tirx.bitwise_and(tirx.NE(m.load(j), tirx.IntImm("uint8", 0)), j < 48), x.load(i, j), -1.0))])
        b.copy(x, A[0, 0])
    filecheck(after(b.build(), "lower_tile_ops"), """
        CHECK: [V] vec_compare
        CHECK: [V] vec_compare Compares
        CHECK-SAME: LT
        CHECK-NEXT: [V] vec_mask_logic And bits
        CHECK-NEXT: [V] vec_select Select x =
    """)


def test_a_bounded_store_into_a_strided_column_cuts_its_rows():
    b = ProgramBuilder("col", "dav-c220")
    L = b.tensor("L", (8, 2), "float32")
    v = b.tile("v", (16,), "float32")
    with b.launch([2]) as (bx,):
        b.fill(v, 1.0)
        b.parallel((16,), lambda i: [(L, (bx * 4 + i, 1), tirx.if_then_else(i < 4, v.load(i),
                                                                             L.load(bx * 4 + i, 1)))])
    p = upto(b.build(), "lower_tile_ops")
    (store,) = copies(p, CopyUbToGm)
    assert store.window.valid_rows.clamp and "4" in str(store.window.valid_rows.size)
    assert "vec_select" not in after(b.build(), "lower_tile_ops")


# -- a tile used as column ranges


def test_a_tile_used_as_two_column_ranges_becomes_two_tiles():
    b = ProgramBuilder("mla", "dav-c220")
    Q, K = b.tensor("Q", (64, 96), "float16"), b.tensor("K", (64, 96), "float16")
    q = b.tile("q", (64, 96), "float16")
    k1, k2 = b.tile("k1", (64, 64), "float16"), b.tile("k2", (64, 32), "float16")
    s = b.tile("s", (64, 64), "float32", fragment=True)
    with b.launch([1]):
        b.copy(Q.window(0, 0, extents=(64, 64)), q.window(0, 0, extents=(64, 64)))
        b.copy(Q.window(0, 64, extents=(64, 32)), q.window(0, 64, extents=(64, 32)))
        b.copy(K.window(0, 0, extents=(64, 64)), k1)
        b.copy(K.window(0, 64, extents=(64, 32)), k2)
        b.fill(s, 0.0)
        for c0, w, kk in ((0, 64, k1), (64, 32, k2)):  # T.gemm(q[:, c0:c0 + w], kk, s, transpose_B=True)
            b._emit(TileGemm(a=Region("q", (0, c0), (64, w)), b=kk.full(), c=s.full(), trans_b=True))
    p = b.build()
    k = p.launches[0].kernels[None]
    buffers, body = split_column_tiles(dict(k.buffers), k.body)
    assert "q" not in buffers and buffers["q_c0"].shape == (64, 64) and buffers["q_c64"].shape == (64, 32)
    gemms = [s for s in body if type(s).__name__ == "TileGemm"]
    assert [g.a.buffer for g in gemms] == ["q_c0", "q_c64"]


# -- pipelined loops keep the stages that fit


def test_fit_stages_lowers_a_loop_with_the_slots_that_fit():
    b = ProgramBuilder("big", "dav-c220")
    A = b.tensor("A", (8, 4, 2048), "float32")
    x, y = b.tile("x", (4, 2048), "float32"), b.tile("y", (4, 2048), "float32")
    with b.launch([1]):
        with b.loop("k", 8, stages=3) as k:
            b.copy(A.window(k, 0, 0, extents=(1, 4, 2048)), x)
            b.parallel((4, 2048), lambda i, j: [(y, (i, j), x.load(i, j) * 2.0)])
            b.copy(y, A.window(k, 0, 0, extents=(1, 4, 2048)))
    lowered = upto(b.build(), "lower_tile_ops")
    with pytest.raises(MemoryBudgetError, match="cannot hold 3 pipeline stages"):
        multi_buffer(lowered)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = multi_buffer(lowered, fit_stages=True)
    (kernel,) = [k for _, _, k in out.kernels()]
    assert kernel.buffers["x"].slots == 2 and kernel.buffers["y"].slots == 2
    assert any("num_stages=3 is lowered with 2 stage(s)" in str(w.message) for w in caught)


# -- a T.Parallel gather of rows chosen by indices (frontend)


def test_a_parallel_gather_of_indexed_rows_becomes_row_copies():
    import tilelang.language as T

    from ascend_backend.arch import get_arch
    from ascend_backend.frontend import import_primfunc
    from ascend_backend.ir.printer import print_program

    @T.prim_func
    def gather(KV: T.Tensor((64, 96), "float16"), Idx: T.Tensor((32,), "int32"), Output: T.Tensor((32, 64), "float32")):
        with T.Kernel(1) as _:
            kv = T.alloc_shared((32, 64), "float16")
            s = T.alloc_fragment((32, 64), "float32")
            for r, d in T.Parallel(32, 64):
                kv[r, d] = KV[Idx[r], 32 + d]
            T.copy(kv, s)
            T.copy(s, Output[0, 0])

    text = print_program(import_primfunc(gather, get_arch("dav-c220")))
    filecheck(text, """
        CHECK: for r_row in 0..32
        CHECK-NEXT: copy KV[T.min(T.max(Idx[r_row], 0), 63), 32]<1x64> -> kv[r_row, 0]<1x64>
    """)
    assert "parallel" not in text.split("for r_row")[1].split("copy kv")[0]


# -- a staging copy before an atomic add takes no UB


def staged_atomic(rewrite_src=False):
    b = ProgramBuilder("stage", "dav-c220")
    A, D = b.tensor("A", (64, 64), "float32"), b.tensor("D", (64, 64), "float32")
    x, y = b.tile("x", (64, 64), "float32", fragment=True), b.tile("y", (64, 64), "float32")
    with b.launch([2]):
        b.copy(A[0, 0], x)
        b.copy(x, y)
        if rewrite_src:
            b.fill(x, 0.0)
        b.atomic_add(y, D[0, 0])
    return b.build()


def test_a_staging_copy_read_only_by_the_next_copy_is_elided():
    p = upto(staged_atomic(), "lower_tile_ops")
    (k,) = [k for _, _, k in p.kernels()]
    assert "y" not in k.buffers
    filecheck(after(staged_atomic(), "lower_tile_ops"), """
        CHECK: copy_gm_to_ub DataCopy A -> x
        CHECK-NEXT: copy_ub_to_gm DataCopy x -> D
        CHECK-SAME: atomic=add
    """)
    p2 = upto(staged_atomic(rewrite_src=True), "lower_tile_ops")
    assert "y" in [k for _, _, k in p2.kernels()][0].buffers  # x changes before y is read: kept


def test_one_stage_that_does_not_fit_names_the_largest_buffers():
    b = ProgramBuilder("huge", "dav-c220")
    A = b.tensor("A", (8, 8, 4096), "float32")
    x, y = b.tile("x", (8, 4096), "float32"), b.tile("y", (8, 4096), "float32")
    with b.launch([1]):
        with b.loop("k", 8, stages=2) as k:
            b.copy(A.window(k, 0, 0, extents=(1, 8, 4096)), x)
            b.parallel((8, 4096), lambda i, j: [(y, (i, j), x.load(i, j) * 2.0)])
            b.copy(y, A.window(k, 0, 0, extents=(1, 8, 4096)))
    with pytest.raises(MemoryBudgetError) as info:
        multi_buffer(upto(b.build(), "lower_tile_ops"), fit_stages=True)
    assert "even one stage does not fit (262144 bytes" in info.value.hint and "'x' 8x4096 float32" in info.value.hint


# -- memory-short retry: one UB tile receives every gemm product of one shape


def fa_like(arch="dav-c220"):
    b = ProgramBuilder("fa", arch)
    Q, K, V = (b.tensor(n, (64, 64), "float16") for n in "QKV")
    Out = b.tensor("O", (64, 64), "float32")
    q, k_s, v_s = (b.tile(n, (64, 64), "float16") for n in ("q", "k_s", "v_s"))
    p = b.tile("p", (64, 64), "float16")
    s, o = b.tile("s", (64, 64), "float32", fragment=True), b.tile("o", (64, 64), "float32", fragment=True)
    with b.launch([1]):
        b.copy(Q[0, 0], q)
        b.copy(K[0, 0], k_s)
        b.copy(V[0, 0], v_s)
        b.fill(o, 0.0)
        with b.loop("k", 2):
            b.parallel((64, 64), lambda i, j: [(s, (i, j), tirx.if_then_else(i >= j, 0.0, -1e9))])
            b.gemm(q, k_s, s, trans_b=True)
            b.copy(s, p)
            b.parallel((64, 64), lambda i, j: [(o, (i, j), o.load(i, j) * 0.5)])
            b.gemm(p, v_s, o)
        b.copy(o, Out[0, 0])
    return b.build()


def test_compact_retry_shares_the_product_tile_of_both_accumulators():
    from ascend_backend.passes.lower_tile_ops import lower_tile_ops

    routed = upto(fa_like(), "assign_layout")
    aiv = lambda prog: next(k for _, c, k in prog.kernels() if c is Core.AIV)  # noqa: E731
    first = aiv(lower_tile_ops(routed))
    assert {"s_part", "o_part"} <= set(first.buffers)
    compact = aiv(lower_tile_ops(routed, compact_temps=True))
    assert "s_part" in compact.buffers and "o_part" not in compact.buffers
    assert "fresh gemm products added into s, o" in compact.buffers["s_part"].role
    on_chip = aiv(lower_tile_ops(upto(fa_like("dav-3510"), "assign_layout"), compact_temps=True))
    assert "o_part" in on_chip.buffers  # written by the AIC's Fixpipe: kept apart


def test_a_gemm_into_a_vector_accumulator_inside_an_if_keeps_only_the_transfers_it_uses():
    """A dry run of the `if` may make a hand-over of the accumulator that the final walk replaces by
    a partial product: only transfers that some Send/Receive names remain."""
    p = upto(sparse_blocks(), "partition")
    lc = p.launches[0]
    named = {s.transfer for k in lc.kernels.values() for s in walk(k.body) if type(s).__name__ in ("Send", "Receive")}
    assert named == set(range(len(lc.transfers)))
    assert [t.index for t in lc.transfers] == list(range(len(lc.transfers)))
