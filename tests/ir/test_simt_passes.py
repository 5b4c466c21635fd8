"""Per-pass tests of lower_simt and simt_sync on thread-level code built with ProgramBuilder (the
IR text after the pass, FileCheck style; the kernels that run on the emulator are in
tests/lang/test_simt.py)."""

import dataclasses

import pytest
from ascend_backend.passes.lower_simt import verify_simt
from ascend_backend.passes.simt_sync import verify_simt_sync
from filecheck import filecheck
from test_passes import after, upto
from tvm import ir, tirx

from ascend_backend.errors import InternalCompilerError, SrcLoc, UnsupportedError
from ascend_backend.ir import SimtCall, walk
from ascend_backend.ir.builder import ProgramBuilder

LOC = SrcLoc("kernel.py", 7)


def barrier(*partial):
    args = [tirx.StringImm("shared"), *(tirx.IntImm("int32", x) for x in partial)]
    return tirx.Evaluate(tirx.call_intrin("int32", "tirx.tvm_storage_sync", *args))


def store(h, idx, value):
    idx = idx if isinstance(idx, tuple) else (idx,)
    value = value if isinstance(value, tirx.PrimExpr) else tirx.const(value, str(h.buffer.dtype))
    return tirx.BufferStore(h.tvm_buffer, value, list(idx))


def kernel(body, n=64, threads=64, loop=False, locals_=()):
    """A[bx*n:] -> UB tile s (SIMD copy), thread-level ``body(b, tx, s, A, C, k)``, C out."""
    b = ProgramBuilder("k", "dav-3510")
    A, C = b.tensor("A", (4 * n,), "float32"), b.tensor("C", (4 * n,), "float32")
    s = b.tile("s", (n,), "float32")
    loc_handles = [b.thread_local(name, (1,), "float32") for name in locals_]
    with b.launch([4]) as (bx,):
        b.copy(A[bx * n], s)
        if loop:
            with b.loop("k", 2) as k:
                b.simt((threads,), lambda tx, ty, tz: body(bx, tx, s, A, C, k, *loc_handles),
                       locals_=tuple(loc_handles), loc=LOC)
        else:
            b.simt((threads,), lambda tx, ty, tz: body(bx, tx, s, A, C, None, *loc_handles),
                   locals_=tuple(loc_handles), loc=LOC)
        b.copy(s, C[bx * n])
    return b.build()


# ------------------------------------------------------------------ lower_simt


def test_lower_simt_makes_a_vector_op_with_an_argument_for_each_buffer_and_scalar():
    def body(bx, tx, s, A, C, k, v):
        return [store(v, 0, s.load(tx) + tirx.Cast("float32", k)), store(s, tx, v.load(0) * 2.0)]

    filecheck(after(kernel(body, loop=True, locals_=("v",)), "lower_simt"), """
        CHECK: copy A[bx * 64]<64> -> s[0]<64>
        CHECK: for k in 0..2 (serial) {
        CHECK-NEXT: [V] simt_call SIMT k_simt0<<<64x1x1>>> args(s: __ubuf__ pointer, k: scalar) reads(s) writes(s) {
        CHECK-NEXT: | v[0] = s[tx] + T.Cast("float32", k)
        CHECK-NEXT: | s[tx] = v[0] * T.float32(2.0)
    """)


def test_lower_simt_guards_gm_accesses_it_cannot_prove_inside_the_tensor():
    """TileLang's safe-memory rule: a store outside the tensor is skipped, a load reads 0; what the
    thread, block and loop ranges or an enclosing if prove inside stays as it is."""

    def body(bx, tx, s, A, C, k):
        return [store(C, bx * 64 + tx, A.load(bx * 64 + tx)),  # inside: bx < 4, tx < 64
                store(C, bx * 64 + tx * 2, A.load(bx * 64 + tx * 2 + 1)),  # may pass the end
                tirx.IfThenElse(bx * 64 + tx * 2 < 256, store(C, bx * 64 + tx * 2, 1.0), None)]

    filecheck(after(kernel(body), "lower_simt"), """
        CHECK: | C[bx * 64 + tx] = A[bx * 64 + tx]
        CHECK-NEXT: | if bx * 64 + tx * 2 < 256:
        CHECK-NEXT: |     C[bx * 64 + tx * 2] = T.if_then_else(bx * 64 + tx * 2 + 1 < 256, A[bx * 64 + tx * 2 + 1], T.float32(0.0))
        CHECK-NEXT: | if bx * 64 + tx * 2 < 256:
        CHECK-NEXT: |     C[bx * 64 + tx * 2] = T.float32(1.0)
    """)


def test_lower_simt_refuses_a_shuffle_of_part_of_the_warp_at_the_line():
    def body(bx, tx, s, A, C, k):
        shfl = tirx.call_intrin("float32", ir.Op.get("tl.shfl_xor_sync"), tirx.IntImm("uint32", 0xFFFF), s.load(tx),
                                tirx.IntImm("int32", 1), tirx.IntImm("int32", 32))
        return [store(s, tx, shfl)]

    with pytest.raises(UnsupportedError, match="lane mask") as info:
        upto(kernel(body), "lower_simt")
    assert info.value.loc == LOC


def test_verify_simt_refuses_a_function_naming_a_buffer_it_has_no_argument_for():
    def body(bx, tx, s, A, C, k):
        return [store(s, tx, A.load(tx))]

    p = upto(kernel(body), "lower_simt")
    call = next(x for _, _, k in p.kernels() for x in walk(k.body) if isinstance(x, SimtCall))
    broken = dataclasses.replace(call, args=tuple(a for a in call.args if a.buffer != "A"))

    def drop(k, lc, prog):
        return k.replace(body=[broken if x is call else x for x in k.body])

    with pytest.raises(InternalCompilerError, match=r"names \['A'\] without an argument"):
        verify_simt(p.map_kernels(drop))


def test_insert_sync_orders_a_simt_function_like_a_vector_op():
    def body(bx, tx, s, A, C, k):
        return [store(s, tx, s.load(tx) + 1.0)]

    filecheck(after(kernel(body), "insert_sync"), """
        CHECK: copy_gm_to_ub DataCopy A -> s
        CHECK-NEXT: SetFlag<MTE2_V>(0)  // RAW on s: 'SIMT k_simt0<<<64x1x1>>>' (V) after 'DataCopy A -> s' (MTE2)
        CHECK-NEXT: WaitFlag<MTE2_V>(0)
        CHECK-NEXT: [V] simt_call SIMT k_simt0<<<64x1x1>>>
        CHECK: SetFlag<V_MTE3>(0)  // RAW on s: 'DataCopy s -> C' (MTE3) after 'SIMT k_simt0<<<64x1x1>>>' (V)
    """)


# ------------------------------------------------------------------ simt_sync


def test_simt_sync_puts_a_barrier_between_threads_and_none_within_one():
    def body(bx, tx, s, A, C, k):
        return [store(s, tx, s.load(tx) * 2.0),  # its own element: no barrier
                store(C, bx * 64 + tx, s.load((tx + 1) % 64))]  # the next thread's

    filecheck(after(kernel(body), "simt_sync"), """
        CHECK: | s[tx] = s[tx] * T.float32(2.0)
        CHECK-NEXT: | T.tvm_storage_sync("shared")
        CHECK-NEXT: | C[bx * 64 + tx] = s[(tx + 1) % 64]
    """)


def test_simt_sync_orders_the_next_trip_only_where_threads_meet():
    """In a loop: a thread's 4 elements (tx * 4 + j, one-to-one) meet nothing in the next trip; a
    read of the neighbour's element before the writes of the next trip needs a barrier at the top."""

    def body(bx, tx, s, A, C, k, v):
        j = tirx.Var("j", "int32")
        mine = tirx.For(j, 0, 4, tirx.ForKind.SERIAL, store(s, tx * 4 + j, s.load(tx * 4 + j) + 1.0))
        neighbour = [store(v, 0, s.load((tx + 1) % 16)), barrier(), store(s, tx, v.load(0))]
        i, m = tirx.Var("i", "int32"), tirx.Var("m", "int32")
        return [tirx.For(i, 0, 3, tirx.ForKind.SERIAL, mine),
                tirx.For(m, 0, 3, tirx.ForKind.SERIAL, tirx.SeqStmt(neighbour))]

    filecheck(after(kernel(body, threads=16, locals_=("v",)), "simt_sync"), """
        CHECK: | for i, j in T.grid(3, 4):
        CHECK-NEXT: |     s[tx * 4 + j] = s[tx * 4 + j] + T.float32(1.0)
        CHECK-NEXT: | T.tvm_storage_sync("shared")
        CHECK-NEXT: | for m in range(3):
        CHECK-NEXT: |     T.tvm_storage_sync("shared")
        CHECK-NEXT: |     v[0] = s[(tx + 1) % 16]
        CHECK-NEXT: |     T.tvm_storage_sync("shared")
        CHECK-NEXT: |     s[tx] = v[0]
    """)


def test_simt_sync_splits_an_if_on_the_thread_at_its_barriers():
    """TileLang's partial barrier (T.sync_threads(3, 32) in ``if tx < 32``, bar.sync id, count): the
    if is split at it, through the loop every thread runs, so every thread reaches a whole-block
    barrier; the pure let before it is computed by every thread."""

    def body(bx, tx, s, A, C, k, v):
        i = tirx.Var("i", "int32")
        off = tirx.Var("off", "int32")
        step = tirx.SeqStmt([tirx.Bind(off, tirx.call_intrin("int32", "tirx.shift_left", 1, i)),
                             barrier(3, 32),
                             tirx.IfThenElse(tx < 32 - off, store(v, 0, s.load(tx) + s.load(tx + off)), None),
                             barrier(3, 32),
                             tirx.IfThenElse(tx < 32 - off, store(s, tx, v.load(0)), None)])
        return [tirx.IfThenElse(tx < 32, tirx.For(i, 0, 5, tirx.ForKind.SERIAL, step), None)]

    filecheck(after(kernel(body, locals_=("v",)), "simt_sync"), """
        CHECK: | for i in range(5):
        CHECK-NEXT: |     off: T.int32 = T.shift_left(1, i)
        CHECK-NEXT: |     T.tvm_storage_sync("shared")
        CHECK-NEXT: |     if tx < 32:
        CHECK-NEXT: |         if tx < 32 - off:
        CHECK-NEXT: |             v[0] = s[tx] + s[tx + off]
        CHECK-NEXT: |     T.tvm_storage_sync("shared")
        CHECK-NEXT: |     if tx < 32:
        CHECK-NEXT: |         if tx < 32 - off:
        CHECK-NEXT: |             s[tx] = v[0]
        CHECK-NOT: T.tvm_storage_sync("shared", 3, 32)
    """)


@pytest.mark.parametrize("what", ["trips", "condition"])
def test_simt_sync_refuses_a_barrier_not_every_thread_can_reach(what):
    def body(bx, tx, s, A, C, k, v):
        if what == "trips":  # a loop of tx trips with threads meeting inside
            j = tirx.Var("j", "int32")
            return [tirx.For(j, 0, tx, tirx.ForKind.SERIAL,
                             tirx.SeqStmt([store(s, tx, 1.0), store(v, 0, s.load((tx + 1) % 64))]))]
        # an if whose condition reads what it writes
        return [store(v, 0, tirx.Cast("float32", tx)),
                tirx.IfThenElse(v.load(0) > 0.0, tirx.SeqStmt([store(s, tx, 2.0), barrier(), store(v, 0, s.load(0))]),
                                None)]

    match = {"trips": "trip count depends on the thread", "condition": "reads what the `if` changes"}[what]
    with pytest.raises(UnsupportedError, match=match) as info:
        upto(kernel(body, locals_=("v",)), "simt_sync")
    assert info.value.loc == LOC


def test_verify_simt_sync_refuses_a_barrier_under_a_condition_on_the_thread():
    def body(bx, tx, s, A, C, k):
        return [store(s, tx, 1.0)]

    p = upto(kernel(body), "simt_sync")
    call = next(x for _, _, k in p.kernels() for x in walk(k.body) if isinstance(x, SimtCall))
    tx = call.thread_vars[0]
    broken = dataclasses.replace(call, body=(tirx.IfThenElse(tx < 32, barrier(), None), *call.body))
    p = p.map_kernels(lambda k, lc, prog: k.replace(body=[broken if x is call else x for x in k.body]))
    with pytest.raises(InternalCompilerError, match="not reached by every thread"):
        verify_simt_sync(p)
