"""Each pass on a few lines of IR (ascend_backend.ir.builder), checked FileCheck-style on the printed
IR after it. Milliseconds each: no tilelang frontend, no emulator."""

import dataclasses

import pytest
from filecheck import filecheck

from ascend_backend.errors import InternalCompilerError, MemoryBudgetError, UnsupportedError
from ascend_backend.ir import Core, Route, Scope, walk
from ascend_backend.ir.builder import ProgramBuilder
from ascend_backend.ir.printer import print_program
from ascend_backend.ir.verify import verify_program
from ascend_backend.pipeline import passes

ORDER = [name for name, _ in passes()]


def upto(program, last: str):
    """Run the passes in order up to and including ``last``, verifying after each."""
    for name, fn in passes():
        program = verify_program(fn(program), name)
        if name == last:
            return program
    raise KeyError(last)


def after(program, last: str) -> str:
    return print_program(upto(program, last))


# ------------------------------------------------------------------ kernels


def vector_add(arch="dav-3510", stages=1, trips=2):
    b = ProgramBuilder("add", arch)
    A, C = b.tensor("A", (64, 64), "float16"), b.tensor("C", (64, 64), "float16")
    x = b.tile("x", (16, 64), "float16")
    with b.launch([4]) as (bx,):
        with b.loop("k", trips, stages=stages):
            b.copy(A[bx * 16, 0], x)
            b.parallel((16, 64), lambda i, j: [(x, (i, j), x.load(i, j) + x.load(i, j))])
            b.copy(x, C[bx * 16, 0])
    return b.build()


def gemm(arch="dav-c220", stages=1):
    b = ProgramBuilder("mm", arch)
    A, B = b.tensor("A", (64, 128), "float16"), b.tensor("B", (128, 64), "float16")
    C = b.tensor("C", (64, 64), "float32")
    a, w = b.tile("a", (64, 32), "float16"), b.tile("w", (32, 64), "float16")
    c = b.tile("c", (64, 64), "float32", fragment=True)
    with b.launch([1]):
        b.fill(c, 0.0)
        with b.loop("k", 4, stages=stages) as k:
            b.copy(A[0, k * 32], a)
            b.copy(B[k * 32, 0], w)
            b.gemm(a, w, c)
        b.copy(c, C[0, 0])
    return b.build()


def gemm_relu(arch="dav-c220"):
    b = ProgramBuilder("mm_relu", arch)
    A, B = b.tensor("A", (64, 64), "float16"), b.tensor("B", (64, 64), "float16")
    C = b.tensor("C", (64, 64), "float32")
    a, w = b.tile("a", (64, 64), "float16"), b.tile("w", (64, 64), "float16")
    c = b.tile("c", (64, 64), "float32", fragment=True)
    with b.launch([2]):
        with b.loop("k", 2):
            b.copy(A[0, 0], a)
            b.copy(B[0, 0], w)
            b.gemm(a, w, c, clear=False)  # adds into c, which the vector side owns
            b.parallel((64, 64), lambda i, j: [(c, (i, j), c.load(i, j) * 2.0)])
            b.copy(c, C[0, 0])
    return b.build()


def two_launches():
    b = ProgramBuilder("two", "dav-c220")
    A, C = b.tensor("A", (32, 64), "float32"), b.tensor("C", (32, 64), "float32")
    x = b.tile("x", (16, 64), "float32")
    with b.launch([2]) as (bx,):
        b.copy(A[bx * 16, 0], x)
        b.copy(x, C[bx * 16, 0])
    with b.launch([2]) as (bx,):
        b.copy(C[bx * 16, 0], x)
        b.parallel((16, 64), lambda i, j: [(x, (i, j), x.load(i, j) * 3.0)])
        b.copy(x, C[bx * 16, 0])
    return b.build()


def operand_fed_twice(rewrite=False, arch="dav-3510"):
    """A vector-made operand x read by two gemms (rewritten between them when ``rewrite``)."""
    b = ProgramBuilder("twice", arch)
    A, B = b.tensor("A", (64, 64), "float16"), b.tensor("B", (64, 64), "float16")
    C, D = b.tensor("C", (64, 64), "float32"), b.tensor("D", (64, 64), "float32")
    x, w = b.tile("x", (64, 64), "float16"), b.tile("w", (64, 64), "float16")
    c = b.tile("c", (64, 64), "float32", fragment=True)
    d = b.tile("d", (64, 64), "float32", fragment=True)
    with b.launch([1]):
        b.copy(B[0, 0], w)
        with b.loop("k", 2):
            b.copy(A[0, 0], x)
            b.parallel((64, 64), lambda i, j: [(x, (i, j), x.load(i, j) + x.load(i, j))])
            b.gemm(x, w, c, clear=True)
            if rewrite:
                b.parallel((64, 64), lambda i, j: [(x, (i, j), x.load(i, j) + x.load(i, j))])
            b.gemm(x, w, d, clear=True)
        b.copy(c, C[0, 0])
        b.copy(d, D[0, 0])
    return b.build()


# ------------------------------------------------------------------ partition


def test_partition_vector_kernel_goes_to_the_aivs():
    filecheck(after(vector_add(), "partition"), """
        CHECK: launch 0 grid=[4] type=AIV_ONLY
        CHECK: == AIV ==
        CHECK: copy A[bx * 16, 0]<16x64> -> x
        CHECK: parallel (i < 16, j < 64)
    """)


def test_partition_gemm_goes_to_the_aic():
    filecheck(after(gemm(), "partition"), """
        CHECK: type=AIC_ONLY
        CHECK: == AIC ==
        CHECK: fill c
        CHECK: gemm a[0, 0]<64x32> x w[0, 0]<32x64> -> c
        CHECK-NOT: == AIV ==
    """)


def test_partition_splits_a_gemm_with_vector_epilogue():
    text = after(gemm_relu(), "partition")
    filecheck(text, """
        CHECK: type=MIX_AIC_1_2
        CHECK: transfer 0: c -> c_part cube->vector ready=? free=? route=?
        CHECK: == AIC ==
        CHECK: gemm
        CHECK-NEXT: send c (transfer 0)
        CHECK: == AIV ==
        CHECK: buffer c_part
        CHECK: receive c -> c_part (transfer 0)
        CHECK-NEXT: accumulate c += c_part
        CHECK-NEXT: parallel
    """)


def test_partition_two_launches_each_get_their_core_kind():
    filecheck(after(two_launches(), "partition"), """
        CHECK: launch 0 grid=[2] type=AIV_ONLY
        CHECK: launch 1 grid=[2] type=AIV_ONLY
        CHECK: parallel
    """)


def test_partition_sends_an_unchanged_operand_once_for_two_gemms():
    filecheck(after(operand_fed_twice(), "partition"), """
        CHECK: transfer 0: x -> x vector->cube
        CHECK: == AIC ==
        CHECK: receive x -> x (transfer 0)
        CHECK-NEXT: gemm x
        CHECK-NOT: receive
        CHECK: -> d[0, 0]
        CHECK: == AIV ==
        CHECK: send x (transfer 0)
        CHECK-NOT: send
        CHECK: }
    """)


def test_partition_sends_an_operand_again_after_a_vector_write():
    filecheck(after(operand_fed_twice(rewrite=True), "partition"), """
        CHECK: == AIC ==
        CHECK: receive x -> x (transfer 0)
        CHECK-NEXT: -> c[0, 0]
        CHECK-NEXT: receive x -> x (transfer 0)
        CHECK-NEXT: -> d[0, 0]
        CHECK: == AIV ==
        CHECK: send x (transfer 0)
        CHECK-NEXT: parallel
        CHECK: send x (transfer 0)
    """)


# ------------------------------------------------------------------ route


def test_route_c220_uses_the_workspace_with_mode_2_flags():
    text = after(gemm_relu("dav-c220"), "route")
    filecheck(text, """
        CHECK: transfer 0: c -> c_part cube->vector ready=0 free=1 route=workspace
        CHECK: workspace 32768 bytes
        CHECK: == AIC ==
        CHECK: cross_core_wait flag=1 mode=2 on FIX
        CHECK-NEXT: copy c[0, 0]<64x64> -> ws_c[
        CHECK-NEXT: cross_core_set flag=0 mode=2 on FIX
        CHECK: cross_core_wait flag=1 mode=2 on FIX (transfer 0)  // drain
        CHECK: == AIV ==
        CHECK: cross_core_set flag=1 mode=2 on MTE2 (transfer 0)  // prime
        CHECK: cross_core_wait flag=0 mode=2 on MTE2
        CHECK-NEXT: copy ws_c[
    """)


def test_route_3510_goes_on_chip_with_mode_4_flags_per_aiv():
    # one dual-destination copy into both AIVs' UB: both "free" waits before it, both "ready" sets after
    p = upto(gemm_relu("dav-3510"), "route")
    assert p.launch.transfers[0].route is Route.ON_CHIP and p.launch.workspace is None
    assert p.launch.transfers[0].dual
    filecheck(print_program(p), """
        CHECK: route=on-chip dual
        CHECK: == AIC ==
        CHECK: cross_core_wait flag=1 mode=4 aiv=0 on FIX
        CHECK-NEXT: cross_core_wait flag=1 mode=4 aiv=1 on FIX
        CHECK-NEXT: copy_to_peer_ub_dual c -> c_part of AIV 0 / AIV 1 (split rows)
        CHECK-NEXT: cross_core_set flag=0 mode=4 aiv=0 on FIX
        CHECK-NEXT: cross_core_set flag=0 mode=4 aiv=1 on FIX
        CHECK-NOT: copy_to_peer_ub
        CHECK: == AIV ==
        CHECK: cross_core_wait flag=0 mode=4 on <pipe of c_part>
        CHECK-NEXT: accumulate c += c_part
        CHECK-NEXT: cross_core_set flag=1 mode=4 on <pipe of c_part>
        CHECK-NEXT: parallel
    """)


def without_dual(program):
    """The program on a dav-3510 without the dual-destination Fixpipe (its two-half fallback)."""
    return program.replace(arch=dataclasses.replace(program.arch, l0c_to_ub_dual=False))


def test_route_3510_without_the_dual_mode_copies_each_aiv_half_on_its_own():
    p = upto(without_dual(gemm_relu("dav-3510")), "route")
    assert p.launch.transfers[0].route is Route.ON_CHIP and not p.launch.transfers[0].dual
    filecheck(print_program(p), """
        CHECK: route=on-chip
        CHECK-NOT: dual
        CHECK: == AIC ==
        CHECK: cross_core_wait flag=1 mode=4 aiv=0 on FIX
        CHECK-NEXT: copy_to_peer_ub c -> c_part of AIV 0
        CHECK-NEXT: cross_core_set flag=0 mode=4 aiv=0 on FIX
        CHECK-NEXT: cross_core_wait flag=1 mode=4 aiv=1 on FIX
        CHECK-NEXT: copy_to_peer_ub c -> c_part of AIV 1
        CHECK-NEXT: cross_core_set flag=0 mode=4 aiv=1 on FIX
        CHECK: == AIV ==
        CHECK: cross_core_wait flag=0 mode=4 on <pipe of c_part>
        CHECK-NEXT: accumulate c += c_part
        CHECK-NEXT: cross_core_set flag=1 mode=4 on <pipe of c_part>
        CHECK-NEXT: parallel
    """)


def test_verify_route_refuses_a_dual_copy_its_transfer_does_not_have():
    from passes.route import verify_route

    p = upto(gemm_relu("dav-3510"), "route")
    verify_route(p)
    lc = p.launch.replace(transfers=[dataclasses.replace(t, dual=False) for t in p.launch.transfers])
    with pytest.raises(InternalCompilerError, match="CopyToPeerUbDual"):
        verify_route(p.replace(launches=[lc]))
    # and no dual transfer where the arch lacks the mode
    with pytest.raises(InternalCompilerError, match="dual-destination Fixpipe of c"):
        verify_route(without_dual(p))


def test_verify_lowered_refuses_an_odd_dual_destination_split():
    from ascend_backend.ir import FixpipeToPeerUbDual, map_body
    from passes.lower_tile_ops import verify_lowered

    p = upto(gemm_relu("dav-3510"), "lower_tile_ops")
    verify_lowered(p)
    aic = p.launch.kernels[Core.AIC]
    odd = aic.replace(body=map_body(aic.body, lambda s: [dataclasses.replace(s, rows=63)]
                                    if isinstance(s, FixpipeToPeerUbDual) else [s]))
    lc = p.launch.replace(kernels={**p.launch.kernels, Core.AIC: odd})
    with pytest.raises(InternalCompilerError, match="63 rows"):
        verify_lowered(p.replace(launches=[lc]))


def test_lower_tile_ops_3510_fixpipes_both_halves_in_one_dual_destination_op():
    filecheck(after(gemm_relu("dav-3510"), "lower_tile_ops"), """
        CHECK: == AIC ==
        CHECK: [FIX] cross_core_wait CrossCoreWaitFlag<4> 1 (AIV 0's UB tile c_part is free)
        CHECK-NEXT: [FIX] cross_core_wait CrossCoreWaitFlag<4> 17 (AIV 1's UB tile c_part is free)
        CHECK-NEXT: [FIX] fixpipe_to_peer_ub_dual Fixpipe c rows [0, 32) / [32, 64) -> c_part in the UB of AIV 0 / AIV 1
        CHECK-SAME: reads(c) writes()  {target=c_part rows=64 cols=64 pitch=64
        CHECK-NEXT: [FIX] cross_core_set CrossCoreSetFlag<4> 0 (c from the Cube to AIV 0
        CHECK-NEXT: [FIX] cross_core_set CrossCoreSetFlag<4> 16 (c from the Cube to AIV 1
        CHECK-NOT: fixpipe_to_peer_ub
        CHECK: == AIV ==
    """)
    # without the mode: one Fixpipe per AIV half, each AIV signalled right after its own
    filecheck(after(without_dual(gemm_relu("dav-3510")), "lower_tile_ops"), """
        CHECK: == AIC ==
        CHECK: [FIX] fixpipe_to_peer_ub Fixpipe c rows [0, 32) -> c_part in the UB of AIV 0
        CHECK-NEXT: [FIX] cross_core_set CrossCoreSetFlag<4> 0 (c from the Cube to AIV 0
        CHECK-NEXT: [FIX] cross_core_wait CrossCoreWaitFlag<4> 17 (AIV 1's UB tile c_part is free)
        CHECK-NEXT: [FIX] fixpipe_to_peer_ub Fixpipe c rows [32, 64) -> c_part in the UB of AIV 1
        CHECK-NOT: dual
        CHECK: == AIV ==
    """)


def test_route_drops_free_for_a_tile_that_crosses_once():
    b = ProgramBuilder("once", "dav-c220")
    A, C = b.tensor("A", (64, 64), "float16"), b.tensor("C", (64, 64), "float32")
    a = b.tile("a", (64, 64), "float16")
    c = b.tile("c", (64, 64), "float32", fragment=True)
    with b.launch([1]):
        b.copy(A[0, 0], a)
        b.gemm(a, a, c, clear=True)
        b.parallel((64, 64), lambda i, j: [(c, (i, j), c.load(i, j) + 1.0)])
        b.copy(c, C[0, 0])
    text = after(b.build(), "route")
    filecheck(text, """
        CHECK: transfer 0: c -> c cube->vector ready=0 free=- route=workspace
        CHECK-NOT: flag=1
    """)


def test_route_3510_takes_the_workspace_when_on_chip_ids_run_out():
    # Six gemm results go to the AIVs in a loop, none answered: on chip each takes a "ready" and a
    # "free" id (12 > 11); through the workspace the six share one "ready" id.
    b = ProgramBuilder("six", "dav-3510")
    A, C = b.tensor("A", (64, 64), "float16"), b.tensor("C", (64, 64), "float32")
    a = b.tile("a", (64, 64), "float16")
    cs = [b.tile(f"c{n}", (64, 64), "float32", fragment=True) for n in range(6)]
    with b.launch([1]):
        with b.loop("k", 2):
            b.copy(A[0, 0], a)
            for c in cs:
                b.gemm(a, a, c, clear=True)
                b.parallel((64, 64), lambda i, j, c=c: [(c, (i, j), c.load(i, j) + 1.0)])
                b.copy(c, C[0, 0])
    filecheck(after(b.build(), "route"), """
        CHECK: transfer 0: c0 -> c0 cube->vector ready=0 free=1 route=workspace
        CHECK: transfer 5: c5 -> c5 cube->vector ready=0 free=6 route=workspace
    """)


def test_verify_route_rejects_a_wait_nobody_sets():
    from ascend_backend.passes.route import verify_route

    from ascend_backend.ir import CrossCoreSet, map_body

    p = upto(gemm_relu("dav-c220"), "route")
    lc = p.launch
    aiv = lc.kernels[Core.AIV]
    body = map_body(aiv.body, lambda s: [] if isinstance(s, CrossCoreSet) else [s])
    with pytest.raises(InternalCompilerError, match="never sets"):
        verify_route(p.replace(launches=[lc.replace(kernels={**lc.kernels, Core.AIV: aiv.replace(body=body)})]))


def handover_then_partial(arch="dav-c220"):
    """Retention's shape: in one iteration the accumulator o crosses to the AIVs as it is (they
    rescale it), then a product is added into it (a partial product crosses); v crosses to the Cube
    twice, as loaded and rescaled, neither derived from o."""
    from tvm import tirx

    b = ProgramBuilder("ret", arch)
    A, B = b.tensor("A", (64, 64), "float16"), b.tensor("B", (64, 64), "float16")
    C = b.tensor("C", (64, 64), "float32")
    a, v = b.tile("a", (64, 64), "float16"), b.tile("v", (64, 64), "float16")
    o = b.tile("o", (64, 64), "float32", fragment=True)
    with b.launch([1]):
        with b.loop("k", 2):
            b.copy(A[0, 0], a)
            b.copy(B[0, 0], v)
            b.gemm(a, a, o, clear=True)
            # per-row factors from the row index: both rescales use the same vector temporaries
            b.parallel((64, 64), lambda i, j: [(o, (i, j), o.load(i, j) * tirx.exp2(i.astype("float32")))])
            b.gemm(a, v, o)
            b.parallel((64, 64), lambda i, j: [(v, (i, j), (v.load(i, j).astype("float32") *
                                                           tirx.exp2(i.astype("float32"))).astype("float16"))])
            b.gemm(a, v, o)
            b.copy(o, C[0, 0])
    return b.build()


def staged_copy(rewrite_src=False):
    """The GPU idiom: a tile staged in shared memory, copied to a fragment, used element-wise."""
    b = ProgramBuilder("staged", "dav-c220")
    A, C = b.tensor("A", (64, 64), "float16"), b.tensor("C", (64, 64), "float16")
    s, f = b.tile("s", (64, 64), "float16"), b.tile("f", (64, 64), "float16", fragment=True)
    o = b.tile("o", (64, 64), "float16", fragment=True)
    with b.launch([1]):
        with b.loop("k", 2):
            b.copy(A[0, 0], s)
            b.copy(s, f)
            if rewrite_src:
                b.parallel((64, 64), lambda i, j: [(s, (i, j), s.load(i, j) + s.load(i, j))])
            b.parallel((64, 64), lambda i, j: [(o, (i, j), f.load(i, j) + s.load(i, j))])
            b.copy(o, C[0, 0])
    return b.build()


def test_partition_aliases_a_staging_copy_between_vector_tiles():
    filecheck(after(staged_copy(), "partition"), """
        CHECK: == AIV ==
        CHECK-NOT: buffer f:
        CHECK: copy A[0, 0]<64x64> -> s[0, 0]<64x64>
        CHECK-NEXT: parallel
        CHECK-NEXT: o[i, j] = s[i, j] + s[i, j]
        CHECK-NEXT: copy o[0, 0]<64x64> -> C[0, 0]<64x64>
    """)


def test_partition_keeps_the_copy_when_the_source_changes_after_it():
    filecheck(after(staged_copy(rewrite_src=True), "partition"), """
        CHECK: buffer f:
        CHECK: copy s[0, 0]<64x64> -> f[0, 0]<64x64>
        CHECK: o[i, j] = f[i, j] + s[i, j]
    """)


def test_partition_hand_over_and_partial_product_are_two_transfers():
    # The partial product goes into o_part and is added: received into o itself it would overwrite
    # the AIVs' rescaled o (retention's wrong numbers).
    filecheck(after(handover_then_partial(), "partition"), """
        CHECK: transfer 0: o -> o cube->vector
        CHECK: transfer 2: o -> o_part cube->vector
        CHECK: == AIV ==
        CHECK: receive o -> o (transfer 0)
        CHECK: receive o -> o_part (transfer 2)
        CHECK-NEXT: accumulate o += o_part
    """)


def test_route_two_crossings_of_one_tile_each_have_a_workspace_and_free_flag():
    # v coming back from the AIVs is not computed from o: no round trip orders the next Fixpipe of o
    # after the AIVs' read, so each workspace of o keeps its "free" flag.
    filecheck(after(handover_then_partial(), "route"), """
        CHECK: transfer 0: o -> o cube->vector ready=0 free=2 route=workspace
        CHECK: transfer 2: o -> o_part cube->vector ready=0 free=4 route=workspace
        CHECK: workspace 40960 bytes {'ws_o': 0, 'ws_v': 16384, 'ws_o_1': 24576}
        CHECK: == AIC ==
        CHECK: cross_core_wait flag=2 mode=2 on FIX (transfer 0)
        CHECK-NEXT: copy o[0, 0]<64x64> -> ws_o[
        CHECK: cross_core_wait flag=4 mode=2 on FIX (transfer 2)
        CHECK-NEXT: copy o[0, 0]<64x64> -> ws_o_1[
    """)


def test_route_keeps_dropping_free_for_a_derived_round_trip():
    # FlashAttention's shape: the AIVs compute p from s after receiving it and send p back, which the
    # AIC receives before its next write of s.
    b = ProgramBuilder("fa", "dav-c220")
    A, C = b.tensor("A", (64, 64), "float16"), b.tensor("C", (64, 64), "float32")
    a = b.tile("a", (64, 64), "float16")
    p = b.tile("p", (64, 64), "float16")
    s = b.tile("s", (64, 64), "float32", fragment=True)
    o = b.tile("o", (64, 64), "float32", fragment=True)
    with b.launch([1]):
        b.copy(A[0, 0], a)
        with b.loop("k", 2):
            b.gemm(a, a, s, clear=True)
            b.parallel((64, 64), lambda i, j: [(p, (i, j), s.load(i, j).astype("float16"))])
            b.gemm(p, a, o, clear=True)
            b.copy(o, C[0, 0])
    filecheck(after(b.build(), "route"), """
        CHECK: transfer 0: s -> s cube->vector ready=0 free=- route=workspace
    """)


def test_insert_sync_round_trip_needs_a_tile_derived_from_the_received_one():
    # On the AIC the Fixpipe of o and the next Mmad into o need FIX -> M: the v the AIC waits for in
    # between was not computed from o, so its arrival says nothing about the Fixpipe. (With unit flags
    # off: on, they order that pair instead, test_insert_sync_unit_flags_replace_m_fix_and_fix_m.)
    p = handover_then_partial()
    p = p.replace(arch=dataclasses.replace(p.arch, unit_flag=False))
    filecheck(after(p, "insert_sync"), """
        CHECK: == AIC ==
        CHECK: Fixpipe o -> ws_o (float32)  reads(o)
        CHECK-NEXT: WAR on o: 'Mmad o = a_l0a x v_l0b' (M) after 'Fixpipe o -> ws_o (float32)' (FIX)
        CHECK: WaitFlag<FIX_M>
        CHECK-SAME: WAR on o: 'Mmad o = a_l0a x v_l0b' (M) after 'Fixpipe o -> ws_o (float32)' (FIX)
        CHECK-NEXT: Mmad o = a_l0a x v_l0b  reads
    """)


def test_insert_sync_unit_flags_replace_m_fix_and_fix_m():
    # The same kernel with unit flags (both arches have them): o's first Mmad gets unitFlag 3 and
    # its Fixpipe 3; the chain after it (a product written, another added, then a Fixpipe) gets
    # 2, 3 and 3. No M_FIX / FIX_M flag orders o any more, and the sync table has a unitFlag row
    # for each chain naming its last Mmad and its Fixpipe.
    p = upto(handover_then_partial(), "insert_sync")
    aic = p.launch.kernels[Core.AIC]
    ops = [x for x in walk(aic.body) if getattr(x, "unit_flag", None) is not None]
    assert [type(x).__name__ for x in ops] == ["Mmad", "FixpipeToGmV220", "Mmad", "Mmad", "FixpipeToGmV220"]
    assert [x.unit_flag.value for x in ops] == [3, 3, 2, 3, 3]
    assert [x.init for x in ops if type(x).__name__ == "Mmad"] == [True, True, False]
    assert all("sync table #" in x.unit_flag.reason for x in ops)
    rows = [f for f in aic.flags if f.event == "unitFlag"]
    assert [(r.buffer, r.producer, r.consumer) for r in rows] == [
        ("o", ops[0].text, ops[1].text), ("o", ops[3].text, ops[4].text)]
    assert [x.unit_flag.flag for x in ops] == [rows[0].index] * 2 + [rows[1].index] * 3
    # no flag orders a marked pair either way (Mmad -> Fixpipe, Fixpipe -> the next Mmad)
    assert not [f for f in aic.flags if f.event in ("M_FIX", "FIX_M") and f.buffer == "o"]


def test_unit_flag_chain_stops_at_anything_but_an_accumulating_mmad():
    # an unrolled chain is marked only when every op on the accumulator between its overwriting
    # Mmad and the Fixpipe is an Mmad into it of the same shape
    from ascend_backend.passes.unit_flag import mark_unit_flags

    from ascend_backend.ir import Mmad

    p = upto(handover_then_partial(), "insert_sync")
    aic = p.launch.kernels[Core.AIC]
    plain = dataclasses.replace(aic, body=_strip_unit_flags(aic.body))
    first, second, third = [x for x in walk(plain.body) if isinstance(x, Mmad)]
    # the third Mmad made an overwrite: the chain is then that Mmad alone (marked 3)
    broken = _replace_op(plain.body, third, dataclasses.replace(third, init=True))
    marked, rows = mark_unit_flags(dataclasses.replace(plain, body=broken), p.arch)
    mm = [x for x in walk(marked.body) if isinstance(x, Mmad)]
    assert [x.unit_flag.value if x.unit_flag else None for x in mm] == [3, None, 3] and len(rows) == 2


def _strip_unit_flags(items: list) -> list:
    from ascend_backend.ir import If, Loop

    out = []
    for x in items:
        if isinstance(x, Loop):
            x = dataclasses.replace(x, body=_strip_unit_flags(x.body))
        elif isinstance(x, If):
            x = dataclasses.replace(x, then_body=_strip_unit_flags(x.then_body),
                                    else_body=_strip_unit_flags(x.else_body))
        elif getattr(x, "unit_flag", None) is not None:
            x = dataclasses.replace(x, unit_flag=None)
        out.append(x)
    return out


def _replace_op(items: list, old, new) -> list:
    from ascend_backend.ir import If, Loop

    out = []
    for x in items:
        if x is old:
            x = new
        elif isinstance(x, Loop):
            x = dataclasses.replace(x, body=_replace_op(x.body, old, new))
        elif isinstance(x, If):
            x = dataclasses.replace(x, then_body=_replace_op(x.then_body, old, new),
                                    else_body=_replace_op(x.else_body, old, new))
        out.append(x)
    return out


# ------------------------------------------------------------------ split_rows


def test_split_rows_halves_the_aiv_tiles_and_their_gm_windows():
    filecheck(after(gemm_relu(), "split_rows"), """
        CHECK: == AIV ==
        CHECK: row_split sub_idx rows/AIV=32
        CHECK: buffer c: ? 32x64xfloat32
        CHECK: copy ws_c[bx * 64 + sub_idx * 32, 0]<32x64> -> c
        CHECK: parallel (i < 32, j < 64)
        CHECK: copy c[0, 0]<32x64> -> C[sub_idx * 32, 0]<32x64>
    """)


def test_split_rows_leaves_single_kind_kernels_alone():
    p = upto(vector_add(), "split_rows")
    assert p.launch.kernels[Core.AIV].row_split is None


def test_split_rows_verifier_refuses_aivs_sharing_no_rows():
    from ascend_backend.passes.split_rows import verify_split_rows

    p = upto(gemm_relu(), "split_rows")
    lc = p.launch
    aiv = lc.kernels[Core.AIV].replace(row_split=None)
    with pytest.raises(InternalCompilerError, match="do not share the rows"):
        verify_split_rows(p.replace(launches=[lc.replace(kernels={**lc.kernels, Core.AIV: aiv})]))



def test_split_rows_keeps_a_per_column_vector_whole():
    # m has one value per column of c, and as many as c has rows: the T.Parallel that fills it
    # touches no row-split tile, so each AIV computes all of it; c's rows are still split.
    from tvm import tirx  # after ascend_backend, which puts tilelang's TVM on the path

    b = ProgramBuilder("colvec", "dav-3510")
    A, C = b.tensor("A", (64, 64), "float16"), b.tensor("C", (64, 64), "float32")
    a = b.tile("a", (64, 64), "float16")
    c = b.tile("c", (64, 64), "float32", fragment=True)
    m = b.tile("m", (64,), "float32", fragment=True)
    with b.launch([1]):
        b.copy(A[0, 0], a)
        b.gemm(a, a, c, clear=True)
        b.parallel((64,), lambda j: [(m, (j,), tirx.Cast("float32", j))])
        b.parallel((64, 64), lambda i, j: [(c, (i, j), c.load(i, j) + m.load(j))])
        b.copy(c, C[0, 0])
    filecheck(after(b.build(), "split_rows"), """
        CHECK: == AIV ==
        CHECK: buffer c: ? 32x64xfloat32
        CHECK: buffer m: ? 64xfloat32
        CHECK: parallel (i < 64):
        CHECK-NEXT: m[i] = T.Cast("float32", i)
        CHECK: parallel (i < 32, j < 64)
    """)

# ------------------------------------------------------------------ infer_scope


def test_infer_scope_cube_tiles():
    filecheck(after(gemm(), "infer_scope"), """
        CHECK: buffer A: GM
        CHECK: buffer a: L1 64x32xfloat16
        CHECK: buffer w: L1 32x64xfloat16
        CHECK: buffer c: L0C 64x64xfloat32
    """)


def test_infer_scope_vector_tiles_and_locals():
    b = ProgramBuilder("loc", "dav-3510")
    A = b.tensor("A", (64,), "float32")
    x = b.tile("x", (64,), "float32")
    s = b.local("s", (1,), "int32")
    with b.launch([1]):
        b.scalar_store(s, (0,), 7)
        b.copy(A[0], x)
        b.copy(x, A[0])
    filecheck(after(b.build(), "infer_scope"), """
        CHECK: buffer x: UB 64xfloat32
        CHECK: buffer s: LOCAL 1xint32
        CHECK: [S] s[0] = 7
    """)


def test_infer_scope_two_launches():
    p = upto(two_launches(), "infer_scope")
    assert all(k.buffers["x"].scope is Scope.UB for _, _, k in p.kernels())


# ------------------------------------------------------------------ assign_layout


def test_assign_layout_nz_for_cube_and_padded_pitch_for_ub():
    filecheck(after(gemm(), "assign_layout"), """
        CHECK: buffer a: L1 64x32xfloat16 NZ
        CHECK: buffer c: L0C 64x64xfloat32 NZ
    """)
    b = ProgramBuilder("pitch", "dav-c220")
    A = b.tensor("A", (8, 24), "float32")
    x = b.tile("x", (8, 24), "float32")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.copy(x, A[0, 0])
    filecheck(after(b.build(), "assign_layout"), "CHECK: buffer x: UB 8x24xfloat32 ND pitch=32")


def test_assign_layout_rejects_unaligned_cube_tiles():
    b = ProgramBuilder("odd", "dav-c220")
    A, C = b.tensor("A", (24, 32), "float16"), b.tensor("C", (24, 24), "float32")
    a = b.tile("a", (24, 32), "float16")
    c = b.tile("c", (24, 24), "float32", fragment=True)
    with b.launch([1]):
        b.copy(A[0, 0], a)
        b.gemm(a, a, c, trans_b=True, clear=True)
        b.copy(c, C[0, 0])
    with pytest.raises(Exception, match="multiples of 16"):
        upto(b.build(), "assign_layout")


def test_lower_tile_ops_rejects_fp8_gemm_on_c220_at_the_gemm():
    b = ProgramBuilder("f8", "dav-c220")
    A, C = b.tensor("A", (32, 32), "float8_e4m3fn"), b.tensor("C", (32, 32), "float32")
    a = b.tile("a", (32, 32), "float8_e4m3fn")
    c = b.tile("c", (32, 32), "float32", fragment=True)
    with b.launch([1]):
        b.copy(A[0, 0], a)
        b.gemm(a, a, c, clear=True)
        b.copy(c, C[0, 0])
    with pytest.raises(UnsupportedError, match="has no fp8") as ei:
        upto(b.build(), "lower_tile_ops")
    assert "dav-3510" in str(ei.value)


def test_assign_layout_rejects_an_int16_accumulator():
    b = ProgramBuilder("i16", "dav-3510")
    A, C = b.tensor("A", (32, 32), "int8"), b.tensor("C", (32, 32), "int16")
    a = b.tile("a", (32, 32), "int8")
    c = b.tile("c", (32, 32), "int16", fragment=True)
    with b.launch([1]):
        b.copy(A[0, 0], a)
        b.gemm(a, a, c, clear=True)
        b.copy(c, C[0, 0])
    with pytest.raises(UnsupportedError, match="int32 for int8 operands"):
        upto(b.build(), "assign_layout")


# ------------------------------------------------------------------ lower_tile_ops


def test_lower_copies_and_gemm_c220():
    filecheck(after(gemm("dav-c220"), "lower_tile_ops"), """
        CHECK: [MTE2] copy_gm_to_l1 Nd2Nz A -> a
        CHECK: [MTE2] copy_gm_to_l1 Nd2Nz B -> w
        CHECK: [MTE1] load_data_2d LoadData a -> a_l0a
        CHECK: [MTE1] load_data_2d LoadData w -> w_l0b
        CHECK: [M] mmad Mmad c += a_l0a x w_l0b
        CHECK-SAME: init=k == 0
        CHECK: [FIX] fixpipe_to_gm_v220 Fixpipe c -> C (float32)
    """)


def test_lower_gemm_picks_the_3510_op_kinds():
    filecheck(after(gemm("dav-3510"), "lower_tile_ops"), """
        CHECK: [MTE1] load_data_2d_v2 LoadData a -> a_l0a
        CHECK: [FIX] fixpipe_to_gm_3510
    """)


def gemm_windows(arch="dav-3510"):
    """C = a[16:48, 32:96] x w[32:96, 16:48]: windows of both operands, K stepped in two chunks when
    the L0 budget asks (it does not here)."""
    b = ProgramBuilder("mm_win", arch)
    A, B = b.tensor("A", (64, 128), "float16"), b.tensor("B", (128, 64), "float16")
    C = b.tensor("C", (32, 32), "float32")
    a, w = b.tile("a", (64, 128), "float16"), b.tile("w", (128, 64), "float16")
    c = b.tile("c", (32, 32), "float32", fragment=True)
    with b.launch([1]):
        b.copy(A[0, 0], a)
        b.copy(B[0, 0], w)
        b.gemm(a.region(16, 32, extents=(32, 64)), w.region(32, 16, extents=(64, 32)), c, clear=True)
        b.copy(c, C[0, 0])
    return b.build()


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_lower_gemm_of_windows_offsets_into_the_tiles(arch):
    # a[16:48, 32:96]: 32 columns (2 blocks of 64 x 16) and 16 rows in: 32 * 64 + 16 * 16 = 2304;
    # w[32:96, 16:48]: 16 * 128 + 32 * 16 = 2560. The L0 buffers have the windows' shapes.
    text = after(gemm_windows(arch), "lower_tile_ops")
    filecheck(text, """
        CHECK: a_l0a: L0A 32x64xfloat16
        CHECK: w_l0b: L0B 64x32xfloat16
        CHECK: LoadData a[16:48, 32:96] -> a_l0a
        CHECK-SAME: src_offset=2304
        CHECK: LoadData w[32:96, 16:48] -> w_l0b
        CHECK-SAME: src_offset=2560
        CHECK: Mmad c = a_l0a x w_l0b
    """)


def test_lower_parallel_to_vector_ops():
    filecheck(after(vector_add(), "lower_tile_ops"), """
        CHECK: [MTE2] copy_gm_to_ub DataCopy A -> x
        CHECK-NEXT: [V] vec_binary Add x, x -> x
        CHECK-NEXT: [MTE3] copy_ub_to_gm DataCopy x -> C
    """)


def test_lower_resolves_the_pipe_of_an_on_chip_wait():
    filecheck(after(gemm_relu("dav-3510"), "lower_tile_ops"), """
        CHECK: == AIV ==
        CHECK: [V] cross_core_wait CrossCoreWaitFlag<4>
        CHECK-NEXT: [V] vec_binary Add c, c_part -> c
        CHECK-NEXT: [V] cross_core_set CrossCoreSetFlag<4>
        CHECK-NEXT: [V] vec_scalar Muls c, 2.0
    """)



def latent_attention_gemms(arch="dav-3510"):
    """MLA's two gemms on one 64x512 K/V tile: S = Q K^T (K = 512) and O = P V (N = 512)."""
    b = ProgramBuilder("mla", arch)
    Q, KV = b.tensor("Q", (64, 512), "bfloat16"), b.tensor("KV", (256, 512), "bfloat16")
    P, S = b.tensor("P", (64, 64), "bfloat16"), b.tensor("S", (64, 64), "float32")
    Out = b.tensor("O", (64, 512), "float32")
    q, kv = b.tile("q", (64, 512), "bfloat16"), b.tile("kv", (64, 512), "bfloat16")
    p = b.tile("p", (64, 64), "bfloat16")
    s = b.tile("s", (64, 64), "float32", fragment=True)
    o = b.tile("o", (64, 512), "float32", fragment=True)
    with b.launch([1]):
        b.copy(Q[0, 0], q)
        b.copy(P[0, 0], p)
        with b.loop("k", 4, stages=2) as k:
            b.copy(KV[k * 64, 0], kv)
            b.gemm(q, kv, s, trans_b=True, clear=True)
            b.copy(s, S[0, 0])
            b.gemm(p, kv, o)
        b.copy(o, Out[0, 0])
    return b.build()


def test_lower_gemms_sharing_l0_each_take_k_chunks_that_fit_together():
    # Q K^T steps through its K = 512 first; P V then takes K chunks of 16 into the same L0B
    # buffers (64x512 whole would fill L0B alone).
    text = after(latent_attention_gemms(), "plan_memory")
    filecheck(text, """
        CHECK: buffer kv_l0b_ping: L0B
        CHECK: [M] mmad Mmad s = q_l0a_ping x kv_l0b_ping
        CHECK-SAME: k=128
        CHECK: [M] mmad Mmad o += p_l0a_ping x kv_l0b_ping
        CHECK-SAME: k=16
    """)
    assert "kv_l0b:" not in text


def gathered_rows(cols=64, start_col=0):
    """Row i of a gemm operand copied from row 3 i of A (a gather into L1, one row per step)."""
    b = ProgramBuilder("gather", "dav-3510")
    A, B = b.tensor("A", (256, 64), "float16"), b.tensor("B", (64, 64), "float16")
    C = b.tensor("C", (16, 64), "float32")
    a, w = b.tile("a", (16, 64), "float16"), b.tile("w", (64, 64), "float16")
    c = b.tile("c", (16, 64), "float32", fragment=True)
    with b.launch([1]):
        with b.loop("i", 16) as i:
            b.copy(A.window(i * 3, start_col, extents=(1, cols)), a.window(i, start_col, extents=(1, cols)))
        b.copy(B[0, 0], w)
        b.gemm(a, w, c, clear=True)
        b.copy(c, C[0, 0])
    return b.build()


def test_lower_copies_whole_rows_into_an_l1_tile():
    filecheck(after(gathered_rows(), "lower_tile_ops"), """
        CHECK: for i in 0..16 (serial) {
        CHECK-NEXT: [MTE2] copy_gm_to_l1 Nd2Nz A -> a
        CHECK-SAME: window=A[i * 3, 0]<1x64> l1_rows=16 dtype=float16 row0=i
        CHECK: [MTE1] load_data_2d_v2 LoadData a -> a_l0a
    """)


def test_lower_refuses_a_copy_into_part_of_a_row():
    with pytest.raises(UnsupportedError, match="a part of tile 'a'"):
        upto(gathered_rows(cols=32, start_col=32), "lower_tile_ops")

# ------------------------------------------------------------------ multi_buffer


def test_multi_buffer_rotates_the_tiles_of_a_pipelined_loop():
    filecheck(after(vector_add(stages=2), "multi_buffer"), """
        CHECK: buffer x: UB 16x64xfloat16 ND slots=2
        CHECK: for k in 0..2 (pipelined stages=2) slots={'x': 2}
    """)


def test_multi_buffer_leaves_serial_loops_alone():
    text = after(vector_add(stages=1), "multi_buffer")
    assert "slots=" not in text


def test_multi_buffer_doubles_l0_of_a_pipelined_gemm():
    filecheck(after(gemm(stages=2), "multi_buffer"), """
        CHECK: buffer a: L1 64x32xfloat16 NZ slots=2
        CHECK: buffer a_l0a: L0A 64x32xfloat16 ZZ slots=2
        CHECK: for k in 0..4 (pipelined stages=2) slots={'a': 2, 'w': 2, 'a_l0a': 2, 'w_l0b': 2}
    """)


def test_multi_buffer_names_the_stages_that_fit():
    b = ProgramBuilder("big", "dav-c220")
    A = b.tensor("A", (256, 1024), "float32")
    x = b.tile("x", (16, 1024), "float32")
    with b.launch([16]) as (bx,):
        with b.loop("k", 4, stages=4):
            b.copy(A[bx * 16, 0], x)
            b.copy(x, A[bx * 16, 0])
    with pytest.raises(MemoryBudgetError, match="num_stages=2"):
        upto(b.build(), "multi_buffer")


# ------------------------------------------------------------------ insert_sync


def test_insert_sync_orders_load_compute_store():
    filecheck(after(vector_add(), "insert_sync"), """
        CHECK: [MTE2] copy_gm_to_ub
        CHECK-NEXT: SetFlag<MTE2_V>(0)  // RAW on x
        CHECK-NEXT: WaitFlag<MTE2_V>(0)
        CHECK-NEXT: WaitFlag<MTE3_V>(0)  // WAR on x
        CHECK-NEXT: [V] vec_binary
        CHECK-NEXT: SetFlag<V_MTE3>(0)  // RAW on x
        CHECK: WaitFlag<V_MTE3>(0)
        CHECK-NEXT: [MTE3] copy_ub_to_gm
    """)


def test_insert_sync_vector_barrier_on_c220_only():
    filecheck(after(vector_add("dav-c220"), "insert_sync"), """
        CHECK: SetFlag<MTE2_V>(0)
        CHECK-NEXT: PipeBarrier<PIPE_V>  // dependent vector ops
    """)
    assert "PipeBarrier" not in after(vector_add("dav-3510"), "insert_sync")


def test_insert_sync_primes_and_drains_loop_carried_flags():
    filecheck(after(vector_add(), "insert_sync"), """
        CHECK: SetFlag<MTE3_MTE2>(0) [prime]
        CHECK: for k in 0..2
        CHECK: WaitFlag<MTE3_MTE2>(0)  // WAR on x
        CHECK: SetFlag<MTE3_MTE2>(0)  // WAR on x
        CHECK: WaitFlag<MTE3_MTE2>(0) [drain]
    """)


def test_insert_sync_one_id_per_slot_in_pipelined_loops():
    filecheck(after(vector_add(stages=2, trips=4), "insert_sync"), """
        CHECK: SetFlag<MTE3_MTE2>(0) [prime]
        CHECK: SetFlag<MTE3_MTE2>(1) [prime]
        CHECK: WaitFlag<MTE2_V>(k % 2)
    """)


def test_insert_sync_inside_both_branches_of_an_if():
    b = ProgramBuilder("br", "dav-3510")
    A, C = b.tensor("A", (64,), "float32"), b.tensor("C", (64,), "float32")
    x = b.tile("x", (64,), "float32")
    with b.launch([2]) as (bx,):
        b.copy(A[0], x)
        with b.if_(bx > 0) as node:
            b.parallel((64,), lambda i: [(x, (i,), x.load(i) * 2.0)])
        with b.else_(node):
            b.parallel((64,), lambda i: [(x, (i,), x.load(i) + 1.0)])
        b.copy(x, C[0])
    filecheck(after(b.build(), "insert_sync"), """
        CHECK: SetFlag<MTE2_V>(0)
        CHECK-NEXT: WaitFlag<MTE2_V>(0)
        CHECK-NEXT: if bx > 0 {
        CHECK: Muls
        CHECK: } else {
        CHECK: Adds
        CHECK: }
        CHECK-NEXT: SetFlag<V_MTE3>(0)
    """)


def test_insert_sync_orders_an_if_on_a_loaded_tile_element_after_its_load():
    """`if mask[k] != 0:` inside a loop (block-sparse attention): the scalar unit reads the condition
    from a UB tile MTE2 filled; the flag's record names the `if` (and a loop whose bound is loaded)."""
    from tvm import tirx  # tilelang's tvm, on the path once ascend_backend is imported

    b = ProgramBuilder("sparse", "dav-3510")
    A, M, C = b.tensor("A", (4, 64), "float32"), b.tensor("M", (8,), "int32"), b.tensor("C", (64,), "float32")
    x, m = b.tile("x", (64,), "float32"), b.tile("m", (8,), "int32")
    with b.launch([1]):
        b.copy(M[0], m)
        b.fill(x, 0.0)
        with b.loop("k", m.load(0)) as k:
            with b.if_(tirx.NE(m.load(k), 0)):
                b.copy(A[k, 0], x, extents=(1, 64))
        b.copy(x, C[0])
    p = upto(b.build(), "insert_sync")
    filecheck(print_program(p), """
        CHECK: DataCopy M -> m
        CHECK-NEXT: SetFlag<MTE2_S>
        CHECK-SAME: 'for k in [0, 0 + m[0])' (S) after 'DataCopy M -> m'
        CHECK: WaitFlag<MTE2_S>
        CHECK-NEXT: for k
        CHECK-NEXT: if m[k] != 0 {
    """)
    assert any(r.consumer.startswith("for k") for _, _, k in p.kernels() for r in k.flags)


# ------------------------------------------------------------------ plan_memory


def test_plan_memory_offsets_and_alignment():
    filecheck(after(gemm(), "plan_memory"), """
        CHECK: buffer a: L1 64x32xfloat16 NZ @0
        CHECK: buffer w: L1 32x64xfloat16 NZ @4096
        CHECK: buffer a_l0a: L0A 64x32xfloat16 ZZ @0
    """)


def test_plan_memory_budget_error_names_every_buffer():
    b = ProgramBuilder("huge", "dav-c220")
    A = b.tensor("A", (64, 8192), "float32")
    x, y = b.tile("x", (8, 4096), "float32"), b.tile("y", (8, 4096), "float32")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.copy(x, y)
        b.parallel((8, 4096), lambda i, j: [(x, (i, j), x.load(i, j) + 1.0)])  # x changes: y keeps a copy
        b.copy(y, A[0, 0])
        b.copy(x, A[8, 0])
    with pytest.raises(MemoryBudgetError) as info:
        upto(b.build(), "plan_memory")
    assert "x " in info.value.table and "y " in info.value.table and "capacity" in info.value.table


def test_plan_memory_two_launches_planned_separately():
    p = upto(two_launches(), "plan_memory")
    assert [k.buffers["x"].offset for _, _, k in p.kernels()] == [0, 0]


def temps_in_turn(arch="dav-3510"):
    """Two vector-only tiles used one after the other (t1 dies before t2 is born)."""
    b = ProgramBuilder("turns", arch)
    A, C = b.tensor("A", (16, 64), "float32"), b.tensor("C", (16, 64), "float32")
    x, y = b.tile("x", (16, 64), "float32"), b.tile("y", (16, 64), "float32")
    t1, t2 = b.tile("t1", (16, 64), "float32"), b.tile("t2", (16, 64), "float32")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.parallel((16, 64), lambda i, j: [(t1, (i, j), x.load(i, j) * 2.0)])
        b.parallel((16, 64), lambda i, j: [(y, (i, j), t1.load(i, j) + 1.0)])
        b.parallel((16, 64), lambda i, j: [(t2, (i, j), y.load(i, j) * 3.0)])
        b.parallel((16, 64), lambda i, j: [(y, (i, j), t2.load(i, j) + y.load(i, j))])
        b.copy(y, C[0, 0])
    return b.build()


def test_plan_memory_reuses_a_dead_vector_tile():
    p = upto(temps_in_turn(), "plan_memory")
    k = next(iter(p.launch.kernels.values()))
    assert k.buffers["t1"].offset == k.buffers["t2"].offset
    assert k.buffers["x"].offset != k.buffers["t1"].offset  # x (MTE2 then V) hands over nothing flag-free
    text = print_program(upto(temps_in_turn(), "insert_sync"))
    assert "shared bytes" not in text  # the vector pipe keeps its order: no flag for the reuse


def test_plan_memory_keeps_a_loop_carried_buffer_for_the_whole_loop():
    b = ProgramBuilder("carried", "dav-3510")
    A, C = b.tensor("A", (64, 64), "float32"), b.tensor("C", (16, 64), "float32")
    x, acc = b.tile("x", (16, 64), "float32"), b.tile("acc", (16, 64), "float32")
    t1, t2 = b.tile("t1", (16, 64), "float32"), b.tile("t2", (16, 64), "float32")
    with b.launch([1]):
        b.fill(acc, 0.0)
        with b.loop("k", 4) as k:
            b.copy(A[k * 16, 0], x)
            b.parallel((16, 64), lambda i, j: [(t1, (i, j), x.load(i, j) * 2.0)])
            b.parallel((16, 64), lambda i, j: [(acc, (i, j), acc.load(i, j) + t1.load(i, j))])
        b.parallel((16, 64), lambda i, j: [(t2, (i, j), acc.load(i, j) * 3.0)])
        b.copy(t2, C[0, 0])
    p = upto(b.build(), "plan_memory")
    bufs = next(iter(p.launch.kernels.values())).buffers

    def overlap(a, c):
        return bufs[a].offset < bufs[c].offset + bufs[c].nbytes and bufs[c].offset < bufs[a].offset + bufs[a].nbytes

    assert not overlap("acc", "t1") and not overlap("acc", "x")  # acc lives around the back edge
    assert overlap("t1", "t2")  # t1 dies with the loop; t2 is born after it


def test_plan_memory_keeps_the_parts_of_a_skewed_loop_apart_before_the_last_tier():
    # a (part A only) dies before b (part B only) is born, across pipes: bytes handed from part to
    # part would need a flag pair every trip and serialise the parts the skew overlaps, so only
    # the last tier (any disjoint lifetimes) lets them share
    from ascend_backend.passes.plan_memory import (
        MULTI_BUFFERED_APART,
        PARTS_APART,
        RELAXED,
        STRICT,
        Life,
        place,
    )

    from ascend_backend.dtypes import DType
    from ascend_backend.ir import Pipe
    from ascend_backend.ir.nodes import Buffer, BufferKind

    lid = 7
    lives = {"a": Life(first=1, last=3, pipes={Pipe.MTE2, Pipe.V}, first_pipe=Pipe.MTE2, loops={lid},
                       parts={(lid, "A")}),
             "b": Life(first=5, last=6, pipes={Pipe.MTE2, Pipe.V}, first_pipe=Pipe.MTE2, loops={lid},
                       parts={(lid, "B")}),
             "c": Life(first=5, last=6, pipes={Pipe.MTE2, Pipe.V}, first_pipe=Pipe.MTE2, loops={lid},
                       parts={(lid, "A")})}

    def bufs(*names):
        return [Buffer(name=n, shape=(16, 64), dtype=DType.FLOAT32, kind=BufferKind.FRAGMENT, scope=Scope.UB)
                for n in names]

    assert lives["a"].in_other_part(lives["b"]) and not lives["a"].in_other_part(lives["c"])
    for tier, shared in ((STRICT, False), (MULTI_BUFFERED_APART, False), (PARTS_APART, False), (RELAXED, True)):
        offs, _ = place(bufs("a", "b"), lives, set(), tier)
        assert (offs["a"] == offs["b"]) is shared, tier
    offs, _ = place(bufs("a", "c"), lives, set(), MULTI_BUFFERED_APART)  # one part: shared from tier 1
    assert offs["a"] == offs["c"]


def test_plan_memory_budget_error_shows_the_reuse():
    b = ProgramBuilder("huge", "dav-c220")
    A = b.tensor("A", (64, 8192), "float32")
    x, y, z = (b.tile(n, (8, 4096), "float32") for n in "xyz")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.parallel((8, 4096), lambda i, j: [(y, (i, j), x.load(i, j) * 2.0)])
        b.parallel((8, 4096), lambda i, j: [(z, (i, j), y.load(i, j) + x.load(i, j))])
        b.copy(z, A[0, 0])
    with pytest.raises(MemoryBudgetError) as info:
        upto(b.build(), "plan_memory")
    table = info.value.table
    assert all(f"  {n} " in table for n in "xyz") and "shares bytes with" in table and "without reuse" in table


def test_insert_sync_orders_buffers_that_share_bytes_across_pipes():
    # dav-c220's 184 KB UB holds two of the three 64 KB tiles: y and u reuse x's bytes once x is dead,
    # across pipes (MTE2 / V / MTE3), which insert_sync then orders like accesses to one buffer.
    b = ProgramBuilder("tight", "dav-c220")
    A, C = b.tensor("A", (16, 1024), "float32"), b.tensor("C", (16, 1024), "float32")
    x, y, u = (b.tile(n, (16, 1024), "float32") for n in "xyu")
    with b.launch([1]):
        b.copy(A[0, 0], x)
        b.parallel((16, 1024), lambda i, j: [(y, (i, j), x.load(i, j) * 2.0)])
        b.copy(y, C[0, 0])
        b.copy(A[0, 0], u)
        b.parallel((16, 1024), lambda i, j: [(u, (i, j), u.load(i, j) + 1.0)])
        b.copy(u, C[0, 0])
    p = upto(b.build(), "insert_sync")
    bufs = next(iter(p.launch.kernels.values())).buffers
    shared = {n for n in "yu" if bufs[n].offset == bufs["x"].offset or bufs[n].offset == bufs["y"].offset}
    assert shared, "nothing reuses a dead tile"
    filecheck(print_program(p), """
        CHECK: [MTE3] copy_ub_to_gm DataCopy y -> C
        CHECK: (shared bytes)
        CHECK: [MTE2] copy_gm_to_ub DataCopy A -> u
    """)


def two_way_loop(arch="dav-3510", trips=4, stages=3, name="twoway", v_tile=False):
    """A FlashAttention-like loop: S = q k^T crosses to the Vectors, P = S / 2 comes back, o += P k.
    Both gemms read kt, so the loop skews from 3 stages (at 2 its load could not run a step ahead).
    ``v_tile``: the second gemm reads a tile of its own, vt, loaded after P (FlashAttention's V)."""
    from tvm import tirx

    b = ProgramBuilder(name, arch)
    Q, K = b.tensor("Q", (64, 64), "float16"), b.tensor("K", (64 * trips, 64), "float16")
    V = b.tensor("V", (64 * trips, 64), "float16") if v_tile else None
    Out = b.tensor("Out", (64, 64), "float32")
    q, kt = b.tile("q", (64, 64), "float16"), b.tile("kt", (64, 64), "float16")
    vt = b.tile("vt", (64, 64), "float16") if v_tile else kt
    s = b.tile("s", (64, 64), "float32", fragment=True)
    pt = b.tile("pt", (64, 64), "float16", fragment=True)
    o = b.tile("o", (64, 64), "float32", fragment=True)
    with b.launch([1]):
        b.copy(Q[0, 0], q)
        b.fill(o, 0.0)
        with b.loop("kk", trips, stages=stages) as kk:
            b.copy(K[kk * 64, 0], kt)
            b.gemm(q, kt, s, trans_b=True, clear=True)
            b.parallel((64, 64), lambda i, j: [(pt, (i, j), tirx.Cast("float16", s.load(i, j) * 0.5))])
            if v_tile:
                b.copy(V[kk * 64, 0], vt)
            b.gemm(pt, vt, o)
        b.copy(o, Out[0, 0])
    return b.build()


def test_route_skews_a_loop_whose_tiles_cross_both_ways():
    filecheck(after(two_way_loop(), "route"), """
        CHECK: == AIC ==
        CHECK: for kk in 0..5 (pipelined stages=3 skewed) {
        CHECK-NEXT: if kk < 4 {
        CHECK: gemm q[0, 0]<64x64> x kt[0, 0]<64x64> -> s
        CHECK: copy_to_peer_ub_dual s -> s of AIV 0 / AIV 1
        CHECK: if kk >= 1 {
        CHECK-NEXT: for kk_b in kk - 1 + 0..1 (serial) {
        CHECK: cross_core_wait flag=1 mode=4 aiv=0 on MTE1
        CHECK: gemm pt[0, 0]<64x64> x kt[0, 0]<64x64> -> o
        CHECK: == AIV ==
        CHECK: for kk in 0..5 (pipelined stages=3 skewed) {
        CHECK: cross_core_wait flag=0
        CHECK: copy_to_peer_l1 pt
    """)
    # at 2 stages kt, loaded in part A and read in part B, would lose its step ahead: not skewed
    assert "skewed" not in after(two_way_loop(stages=2), "route")


def test_route_leaves_a_one_way_loop_alone():
    assert "skewed" not in after(gemm_relu("dav-3510"), "route")


def test_multi_buffer_gives_the_crossing_tiles_of_a_skewed_loop_a_slot_per_step():
    p = upto(two_way_loop(), "multi_buffer")
    lc = p.launch
    assert all(t.skewed and t.slots == 2 and t.free is None for t in lc.transfers)
    aiv, aic = lc.kernels[Core.AIV], lc.kernels[Core.AIC]
    assert aiv.buffers["s"].slots == 2 and aic.buffers["pt"].slots == 2
    filecheck(print_program(p), """
        CHECK: == AIC ==
        CHECK: fixpipe_to_peer_ub_dual Fixpipe s rows [0, 32) / [32, 64) -> s in the UB of AIV 0 / AIV 1
        CHECK-SAME: step=kk slots=2
        CHECK: for kk_b in kk - 1 + 0..1 (serial) slots=
        CHECK-SAME: 'pt': 2
        CHECK: == AIV ==
        CHECK: copy_ub_to_peer_l1 DataCopy pt
        CHECK-SAME: step=kk slots=2
    """)


def test_insert_sync_syncs_each_part_of_a_skewed_loop_by_its_step():
    # part B's own loop-carried M -> MTE1 flag (pt_l0a, by kk_b) is implied by the flag around the
    # parts (part B of a trip before part A of the next, on kt_l0b): not emitted
    filecheck(after(two_way_loop(), "insert_sync"), """
        CHECK: == AIC ==
        CHECK: for kk in 0..5 (pipelined stages=3 skewed)
        CHECK: WaitFlag<M_MTE1>(0)  // WAR, part B before the next trip's part A
        CHECK: if kk < 4 {
        CHECK: WaitFlag<MTE1_MTE2>(kk % 3)
        CHECK: if kk >= 1 {
        CHECK: for kk_b in kk - 1 + 0..1
        CHECK: SetFlag<MTE1_MTE2>(kk_b % 3)
        CHECK-NOT: M_MTE1
        CHECK: SetFlag<M_MTE1>(0)  // WAR, part B before the next trip's part A
        CHECK: WaitFlag<M_MTE1>(0) [drain]
    """)


# ------------------------------------------------------------------ prefetch


def fa_like_loop(arch="dav-c220", trips=4, stages=2):
    """FlashAttention's shape of loop: S = q kt^T crosses to the Vectors, P = S / 2 comes back,
    o += P vt; kt is read by part A only, vt by part B only, so the loop skews at 2 stages."""
    return two_way_loop(arch, trips, stages, name="falike", v_tile=True)


@pytest.fixture
def one_step_ahead():
    """Skewed loops with part A one step ahead where it would run two (dav-c220; the pipeline's
    first fallback, route.DEEP_SKEW)."""
    from ascend_backend.passes.route import DEEP_SKEW

    token = DEEP_SKEW.set(False)
    yield
    DEEP_SKEW.reset(token)


def test_route_runs_part_a_two_steps_ahead_where_tiles_cross_through_gm():
    # dav-c220: every tile crosses through GM, so part A runs two steps ahead: n + 2 trips, part B
    # on kk - 2, the workspace copies and the flags between the parts by three steps
    filecheck(after(fa_like_loop(), "insert_sync"), """
        CHECK: == AIC ==
        CHECK: for kk in 0..6 (pipelined stages=2 skewed lead 2)
        CHECK-NEXT: if kk < 4 {
        CHECK: fixpipe_to_gm_v220 Fixpipe s -> ws_s (float32)
        CHECK-SAME: window=ws_s[(bx * 3 + kk % 3) * 64, 0]
        CHECK: if kk >= 2 {
        CHECK-NEXT: for kk_b in kk - 2 + 0..1 (serial)
        CHECK: copy_gm_to_l1 Nd2Nz ws_pt -> pt
        CHECK-SAME: window=ws_pt[(bx * 3 + kk_b % 3) * 64, 0]
        CHECK: == AIV ==
        CHECK: for kk in 0..6 (pipelined stages=2 skewed lead 2)
    """)
    lc = upto(fa_like_loop(), "multi_buffer").launch
    assert all(t.skewed and t.lead == 2 and t.slots == 3 for t in lc.transfers)
    # dav-3510 keeps its tiles on chip (two copies each): one step ahead
    assert "skewed lead" not in after(fa_like_loop("dav-3510"), "route")


def test_prefetch_issues_the_next_load_of_part_a_before_part_b_waits_for_the_vectors(one_step_ahead):
    # dav-c220: P comes back through GM, so the Cube's MTE2 waits for it; kt (2 slots, part A only)
    # is loaded by part B of step kk_b for step kk_b + 2, ahead of that wait; part A loads steps 0, 1
    filecheck(after(fa_like_loop(), "prefetch"), """
        CHECK: == AIC ==
        CHECK: for kk in 0..5 (pipelined stages=2 skewed) slots={'kt': 2
        CHECK-NEXT: if kk < 4 {
        CHECK-NEXT: if kk < 2 {
        CHECK-NEXT: copy_gm_to_l1 Nd2Nz K -> kt
        CHECK-SAME: window=K[kk * 64, 0]
        CHECK: LoadData kt -> kt_l0b
        CHECK: for kk_b in kk - 1 + 0..1 (serial) slots=
        CHECK-SAME: 'kt': 2
        CHECK-NEXT: copy_gm_to_l1 Nd2Nz V -> vt
        CHECK-NEXT: if kk_b + 2 < 4 {
        CHECK-NEXT: copy_gm_to_l1 Nd2Nz K -> kt
        CHECK-SAME: window=K[(kk_b + 2) * 64, 0]
        CHECK: cross_core_wait CrossCoreWaitFlag<2> 1 (pt from the Vector cores to the Cube
        CHECK-NEXT: copy_gm_to_l1 Nd2Nz ws_pt -> pt
        CHECK: == AIV ==
    """)


def test_prefetch_leaves_short_loops_and_tiles_part_b_reads_alone():
    # two steps: nothing to load ahead; two_way_loop's kt is read by both parts (it rotates by step
    # in each, a load for a later step would overwrite part B's)
    assert after(fa_like_loop(trips=2), "prefetch") == after(fa_like_loop(trips=2), "multi_buffer")
    assert after(two_way_loop(), "prefetch") == after(two_way_loop(), "multi_buffer")


def test_prefetch_needs_a_slot_per_step_in_flight_and_one_more():
    # two steps ahead (dav-c220's default), part B of step kk_b runs in trip kk_b + 2, after part A
    # of step kk_b + 2: a load for s = 2 steps on would come after its use, so with kt's 2 slots
    # nothing is loaded ahead (with 3, num_stages=3, it is: the slow test in test_overlap.py)
    assert "kk_b + 2" not in after(fa_like_loop(), "prefetch")


def test_insert_sync_orders_a_load_ahead_by_step_and_drops_its_part_a_carried_flag(one_step_ahead):
    # part A's read of kt before part B's load into that slot for two steps on: a flag by step, one
    # trip later; part A's own load runs in steps 0 and 1 only, so no flag carries a read of step k
    # to it at step k + 2 (no MTE1 -> MTE2 prime on kt); the load's RAW to part A of step kk_b + 2
    # is ordered by part B's own MTE2 -> MTE1 flag after it (the pipes keep their order)
    text = after(fa_like_loop(), "insert_sync")
    filecheck(text, """
        CHECK: == AIC ==
        CHECK-NOT: [prime]  // WAR on kt
        CHECK: for kk in 0..5 (pipelined stages=2 skewed)
        CHECK: if kk < 2 {
        CHECK: SetFlag<MTE2_MTE1>(kk % 2)  // RAW on kt
        CHECK: WaitFlag<MTE2_MTE1>(kk % 2)  // RAW on kt
        CHECK: LoadData kt -> kt_l0b
        CHECK-NEXT: SetFlag<MTE1_MTE2>(2 + kk % 2)  // WAR, the same step one trip later on kt
        CHECK: for kk_b in kk - 1 + 0..1
        CHECK: WaitFlag<MTE1_MTE2>(2 + kk_b % 2)  // WAR, the same step one trip later on kt
        CHECK-NEXT: if kk_b + 2 < 4 {
        CHECK: cross_core_wait
        CHECK-NEXT: copy_gm_to_l1 Nd2Nz ws_pt -> pt
        CHECK-NEXT: SetFlag<MTE2_MTE1>(kk_b % 2)  // RAW on pt
        CHECK: == AIV ==
    """)


# ------------------------------------------------------------------ the room for what comes next


def test_loop_with_start_and_step_prints_and_survives_the_passes():
    b = ProgramBuilder("steps", "dav-3510")
    A = b.tensor("A", (256,), "float32")
    x = b.tile("x", (16,), "float32")
    with b.launch([1]):
        with b.loop("k", 4, start=2, step=3) as k:
            b.copy(A[k * 16], x)
            b.copy(x, A[k * 16])
    filecheck(after(b.build(), "plan_memory"), """
        CHECK: for k in 2 + 0..4 step 3 (serial)
    """)


def test_atomic_add_store_is_kept_through_lowering():
    b = ProgramBuilder("atom", "dav-3510")
    A, C = b.tensor("A", (64,), "float32"), b.tensor("C", (64,), "float32")
    x = b.tile("x", (64,), "float32")
    with b.launch([4]):
        b.copy(A[0], x)
        b.atomic_add(x, C[0])
    text = after(b.build(), "lower_tile_ops")
    filecheck(text, """
        CHECK: [MTE3] copy_ub_to_gm DataCopy x -> C (atomic add)
        CHECK-SAME: atomic=add
    """)


def test_structural_verifier_catches_unknown_buffers_and_bad_ids():
    from ascend_backend.ir import Event, EventId, Pipe, SetFlag
    from ascend_backend.ir.verify import VerifyError

    p = vector_add()
    k = p.launch.kernels[None]
    k.body.append(SetFlag(event=Event(Pipe.MTE2, Pipe.V), event_id=EventId(9)))
    with pytest.raises(VerifyError, match="outside 0-7"):
        verify_program(p)
    p = vector_add()
    p.launch.kernels[None].body[0].body[0].dst.__class__  # noqa: B018 - the region class exists
    from ascend_backend.ir import Region, TileCopy

    p.launch.kernels[None].body.append(TileCopy(src=Region("nope", (0,), (1,)), dst=Region("x", (0,), (1,))))
    with pytest.raises(VerifyError, match="'nope'"):
        verify_program(p)


def test_every_statement_class_has_a_printer_rule():
    import dataclasses

    from ascend_backend.ir import AscOp, Stmt, nodes
    from ascend_backend.ir.printer import RULES

    classes = [c for c in vars(nodes).values() if isinstance(c, type) and issubclass(c, Stmt) and c is not Stmt
               and dataclasses.is_dataclass(c) and not c.__name__.startswith("_")]
    missing = [c.__name__ for c in classes if c not in RULES and not issubclass(c, AscOp)]
    assert not missing, missing
