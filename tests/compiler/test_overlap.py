"""Cube/Vector overlap (skewed loops) and memory reuse, run on the emulator (strict: no race, flag
error or deadlock) against torch. The per-pass FileCheck tests are in tests/ir/test_passes.py; the
flags are mutation-tested in test_mutation.py (slow tier)."""

import kernels
import pytest
from filecheck import filecheck

import ascend_backend
from ascend_backend.ir import Core, Route
from ascend_backend.testing import run_case


def test_two_way_loop_keeps_a_free_flag_for_a_tile_with_one_slot():
    # S and the running max fill the UB: S crosses with one slot and a "free" flag, P with two.
    case = kernels.two_way_case()
    kernel, report, errors = run_case(case, "dav-3510")
    s, p = kernel.program.launch.transfers
    assert s.skewed and s.slots == 1 and s.free is not None and s.route is Route.ON_CHIP
    assert p.skewed and p.slots == 2 and p.free is None
    assert report.ok and max(errors) < 2e-2


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_two_way_loop_skews_through_the_workspace_too(arch):
    # dav-c220 carries both tiles through GM: a workspace copy per step in flight, no "free" flag;
    # there part A runs two steps ahead (three copies), on dav-3510 one (two copies).
    case = kernels.two_way_case(M=64, N=256, bM=64, bN=128)
    kernel, report, errors = run_case(case, arch)
    lc = kernel.program.launch
    lead = 2 if arch == "dav-c220" else 1
    assert all(t.skewed and t.lead == lead and t.slots == lead + 1 and t.free is None for t in lc.transfers)
    if arch == "dav-c220":
        assert all(t.route is Route.WORKSPACE for t in lc.transfers)
    assert report.ok and max(errors) < 2e-2


def test_reuse_across_pipes_runs_race_free():
    # x, y and u (64 KB each) in dav-c220's 184 KB UB: u takes a dead tile's bytes.
    kernel, report, errors = run_case(kernels.tight_ub_case(), "dav-c220")
    mm = {r["buffer"]: r for r in kernel.memory_map()}
    assert any(mm[n]["shares"] for n in "xyu")
    assert any("shared bytes" in r["kind"] for r in kernel.sync_table())
    assert report.ok and max(errors) == 0.0


def test_memory_map_of_a_skewed_flash_attention_names_what_shares():
    import attention

    k = ascend_backend.compile(attention.flashattn(1, 1, 256, 256, 128, False, 128, 64, 2),
                               target={"kind": "ascendc", "arch": "dav-3510"}, runtime="emulator")
    rows = {r["buffer"]: r for r in k.memory_map()}
    assert rows["AIV:O_shared"]["shares"], "the output tile reuses the bytes of a loop temporary"
    assert all(not rows[f"AIV:{t.target}"]["shares"] for t in k.program.launch.transfers
               if t.direction.value == "cube->vector")  # tiles the Cube writes in place share nothing
    assert k.program.launch.kernels[Core.AIV].memory_used


def test_one_way_crossing_in_a_pipelined_loop_takes_two_slots():
    # The block-scaled FP8 GEMM's partial product crosses Cube -> Vector every K step and nothing
    # comes back: its UB tile gets a second slot (the "free" flag, a counter, primed twice) and its
    # L0C accumulator rotates, so the Mmad and Fixpipe of step k + 1 need not wait for the AIVs to
    # finish step k. The promotion acc += part * scale[row] is one MulAddDst, with no temporary.
    # The Mmad -> Fixpipe order and the slot's reuse by the Mmad two steps on run on unit flags (no
    # M_FIX / FIX_M flag: passes/unit_flag.py).
    kernel, report, errors = run_case(kernels.block_scaled_fp8_case(), "dav-3510")
    (t,) = kernel.program.launch.transfers
    assert not t.skewed and t.route is Route.ON_CHIP and t.slots == 2 and t.free is not None
    src = kernel.kernel_source
    filecheck(src, """
        CHECK: C_local: L0C 128x128xfloat32 NZ slots=2
        CHECK-NOT: FIX_M
        CHECK: mp.unitFlag = 3;  // unit flag
        CHECK-NEXT: Mmad(C_local, A_shared_l0a, B_shared_l0b, mp);
        CHECK-NOT: M_FIX
        CHECK: fp.unitFlag = 3;  // unit flag
        CHECK-NEXT: Fixpipe<float, float, CFG_ROW_MAJOR_UB>(C_local_peer[((k) % 2) * 8192], C_local, fp);
        CHECK: C_local: UB 64x128xfloat32 ND slots=2
        CHECK: CrossCoreSetFlag<4, PIPE_V>(1);  // prime: this AIV's UB tile of C_local starts free
        CHECK-NEXT: CrossCoreSetFlag<4, PIPE_V>(1);  // prime: this AIV's UB tile of C_local starts free
        CHECK: MulAddDst(C_acc
    """)
    assert "Add(C_acc" not in src.replace("MulAddDst(C_acc", "")
    assert report.ok and max(errors) < 2e-2


@pytest.mark.parametrize("stages", [2, 3])
def test_loop_sharing_a_loaded_tile_between_its_parts_skews_from_three_stages(stages):
    # MLA decode's K/V tile is read by both gemms (S = Q K^T in part A, P V in part B). Skewed, it
    # lives from its load in trip k to part B in trip k + 1: with 2 slots the load of step k + 1
    # could not run ahead of step k (502 -> 712 us in the benchmark), so 2 stages stay serial; with
    # 3 slots it still runs a step ahead, and the Cube and Vector steps overlap.
    import mla_decode

    f = mla_decode.mla_decode_paged(1, 16, 256, 512, 64, 64, 16, 1, 64, num_stages=stages, heads_inner=True)
    k = ascend_backend.compile(f, target={"kind": "ascendc", "arch": "dav-3510"}, runtime="emulator")
    skewed = [t.skewed for t in k.program.launches[0].transfers]
    assert skewed and all(s == (stages == 3) for s in skewed)
    assert ("for (int32_t k_b = (k - 1)" in k.kernel_source) == (stages == 3)


def test_flash_attention_c220_runs_part_a_two_steps_ahead():
    # dav-c220: S and P cross through GM, so each step's chain waits two GM round trips; part A
    # runs two steps ahead of part B (route.skew_lead): n + 2 trips, B works on k - 2, and the
    # tiles both parts use and the workspace copies rotate through three slots.
    import attention

    src = ascend_backend.lower(attention.flashattn(1, 1, 64, 256, 64, False, 64, 64, 2),
                               {"kind": "ascendc", "arch": "dav-c220"}).source
    filecheck(src, """
        CHECK: if ASCEND_IS_AIC {
        CHECK: for (int32_t k = 0; k < 6; ++k) {
        CHECK: if ((k < 4)) {
        CHECK: Fixpipe<float, float, CFG_ROW_MAJOR>(ws_acc_s_gm[{{.*}}(k % 3)
        CHECK: if ((k >= 2)) {
        CHECK-NEXT: for (int32_t k_b = (k - 2);
        CHECK: CrossCoreWaitFlag<2, PIPE_MTE2>(1);
        CHECK-NEXT: DataCopy(acc_s_cast, ws_acc_s_cast_gm[{{.*}}(k_b % 3)
        CHECK: if ASCEND_IS_AIV {
        CHECK: LocalTensor<float> scores_scale_slots = {{.*}}slots=3
        CHECK: for (int32_t k = 0; k < 6; ++k) {
        CHECK: if ((k >= 2)) {
        CHECK-NEXT: for (int32_t k_b = (k - 2);
        CHECK-NEXT: LocalTensor<float> scores_scale = scores_scale_slots[(k_b % 3) * 32];
    """)


def test_flash_attention_unrolled_k_chain_streams_out_on_unit_flags():
    # dim 128 does not fit L0A/L0B twice: QK^T runs as four unrolled K chunks (ping/pong), no K
    # loop. The chain's Mmads carry unitFlag 2, its last 3, and the Fixpipe 3: S streams out behind
    # the last chunk, and the next step's first chunk writes each block once the Fixpipe read it
    # (no M_FIX / FIX_M flag on acc_s). The same kernel runs strict in the sweep below (64x256, S=1024).
    import attention

    src = ascend_backend.lower(attention.flashattn(1, 1, 1024, 1024, 128, False, 64, 256, 2, causal_mask="diagonal"),
                               {"kind": "ascendc", "arch": "dav-c220"}).source
    filecheck(src, """
        CHECK: if ASCEND_IS_AIC {
        CHECK-NOT: M_FIX>{{.*}}on acc_s
        CHECK: mp.unitFlag = 2;  // unit flag, sync table #{{.*}}: 2: writes acc_s once
        CHECK-NEXT: Mmad(acc_s, Q_shared_l0a_ping, K_shared_l0b_ping, mp);
        CHECK: mp.unitFlag = 2;  // unit flag, sync table #{{.*}}
        CHECK: mp.unitFlag = 2;  // unit flag, sync table #{{.*}}
        CHECK: mp.unitFlag = 3;  // unit flag, sync table #{{.*}}: 3 marks acc_s's blocks full
        CHECK-NEXT: Mmad(acc_s, Q_shared_l0a_pong, K_shared_l0b_pong, mp);
        CHECK-NOT: M_FIX
        CHECK: fp.unitFlag = 3;  // unit flag, sync table #{{.*}}
        CHECK-NEXT: Fixpipe<float, float, CFG_ROW_MAJOR>(ws_acc_s_gm
        CHECK-NOT: FIX_M>{{.*}}on acc_s
        CHECK: if ASCEND_IS_AIV {
    """)


def test_flash_attention_c220_with_one_step_ahead_loads_the_k_tile_two_steps_on_before_waiting_for_p():
    # dav-c220 with part A one step ahead (the pipeline's first fallback when two do not fit): P
    # comes back through the workspace and the Cube's MTE2 waits for it in part B. The K tile (2
    # L1 slots, read by part A only) of step k_b + 2 is loaded before that wait, so MTE2 loads it
    # while the Vector cores run the softmax; part A loads steps 0 and 1 itself.
    import attention
    from ascend_backend.passes.route import DEEP_SKEW

    token = DEEP_SKEW.set(False)
    try:
        src = ascend_backend.lower(attention.flashattn(1, 1, 64, 256, 64, False, 64, 64, 2),
                                   {"kind": "ascendc", "arch": "dav-c220"}).source
    finally:
        DEEP_SKEW.reset(token)
    filecheck(src, """
        CHECK: if ASCEND_IS_AIC {
        CHECK: for (int32_t k = 0; k < 5; ++k) {
        CHECK: if ((k < 4)) {
        CHECK-NEXT: if ((k < 2)) {
        CHECK-NEXT: DataCopy(K_shared, K_gm[bz * 16384 + by * 16384 + (k * 64) * 64]
        CHECK: for (int32_t k_b = (k - 1);
        CHECK: LocalTensor<half> K_shared = K_shared_slots[(k_b % 2) * 4096];
        CHECK: DataCopy(V_shared, V_gm[
        CHECK-NEXT: WaitFlag<HardEvent::MTE1_MTE2>(2 + k_b % 2);  // WAR, the same step one trip later on K_shared
        CHECK-NEXT: if (((k_b + 2) < 4)) {
        CHECK-NEXT: DataCopy(K_shared, K_gm[bz * 16384 + by * 16384 + ((k_b + 2) * 64) * 64]
        CHECK-NEXT: }
        CHECK-NEXT: CrossCoreWaitFlag<2, PIPE_MTE2>(1);
        CHECK-NEXT: DataCopy(acc_s_cast, ws_acc_s_cast_gm[
        CHECK: if ASCEND_IS_AIV {
    """)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
@pytest.mark.parametrize("causal,stages", [(False, 2), (True, 2), (False, 3), (True, 3)])
def test_flash_attention_with_loads_ahead_runs_clean(arch, causal, stages):
    # four (2 stages) or eight (3 stages) K/V steps per block, fewer in causal blocks: part B loads
    # K `stages` steps on and each slot is reused
    import attention
    from ascend_backend.passes.route import DEEP_SKEW

    seq_kv = 256 if stages == 2 else 512
    case = attention.case(batch=1, heads=1, seq_q=128, seq_kv=seq_kv, dim=64, is_causal=causal, num_stages=stages)
    # (two steps ahead, dav-c220's default, the K tile needs three slots to be loaded ahead)
    token = DEEP_SKEW.set(stages > 2)
    try:
        kernel, report, errors = run_case(case, arch)
    finally:
        DEEP_SKEW.reset(token)
    assert f"k_b + {stages}" in kernel.kernel_source
    assert report.ok and not report.races and not report.flag_errors and not report.deadlock
    assert max(errors) < 2e-2


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_skewed_parts_sharing_bytes_are_ordered_by_the_trip(arch, monkeypatch):
    """Causal FlashAttention with a sink logit, 128-row blocks: on dav-c220 UB is full, and with
    plan_memory's tier that keeps the parts of a skewed loop apart taken out, part A's tiles (the
    scores' cast) share bytes with part B's per-step tile (the partial output). Those bytes are
    handed over in the trip's order: part A before part B, part B before the next trip's part A
    (the emulator once reported 260 races here)."""
    from ascend_backend.passes import plan_memory
    from ascend_backend.passes.route import DEEP_SKEW

    monkeypatch.setattr(plan_memory.Life, "in_other_part", lambda self, other: False)
    token = DEEP_SKEW.set(False)  # (the flags pinned below are those of one step ahead)
    try:
        kernel, report, errors = run_case(kernels.causal_sink_attention_case(), arch)
    finally:
        DEEP_SKEW.reset(token)
    assert report.ok and max(errors) < 2e-3
    if arch == "dav-c220":
        aiv = kernel.kernel_source[kernel.kernel_source.index("ASCEND_IS_AIV"):]
        filecheck(aiv, """
            CHECK: for (int32_t k = 0;
            CHECK: Cast(p, s,
            CHECK: SetFlag<HardEvent::V_MTE2>({{.*}}WAR (shared bytes), part A before part B of the trip on s_part/o_part
            CHECK: WaitFlag<HardEvent::V_MTE2>({{.*}}WAR (shared bytes), part A before part B of the trip on s_part/o_part
            CHECK: for (int32_t k_b = (k - 1);
            CHECK: DataCopy(o_part, ws_o_gm[
            CHECK: SetFlag<HardEvent::MTE2_V>({{.*}}part B before the next trip's part A on o_part/mx_prev
        """)


def _attention_benchmark():
    """benchmarks/attention.py as a module (its name would clash with examples/attention.py)."""
    import importlib.util
    import sys
    from pathlib import Path

    if "bench_attention" not in sys.modules:
        path = Path(__file__).resolve().parents[2] / "benchmarks" / "attention.py"
        spec = importlib.util.spec_from_file_location("bench_attention", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # its dataclasses look their module up
        spec.loader.exec_module(mod)
    return sys.modules["bench_attention"]


def test_skewed_loop_keeps_two_slots_of_its_shared_tiles_when_stages_do_not_fit():
    """dav-c220, 256 x 64 blocks: two stages do not fit UB. The running max and rescale factor, which
    both parts of the skewed loop use, keep two slots (with one, part B would rescale with the next
    step's factor: wrong numbers, no race); the largest tiles one part uses get one slot instead,
    and the loop stays skewed."""
    import attention

    case = attention.case(heads=1, seq_q=512, seq_kv=512, dim=128, is_causal=False, block_M=256, block_N=64)
    with pytest.warns(UserWarning, match="keeps the slots of the tiles both parts of its skewed loop use"):
        kernel, report, errors = run_case(case, "dav-c220")
    assert report.ok and max(errors) < 2e-3
    assert any(t.skewed for t in kernel.program.launch.transfers)
    aiv = kernel.program.launch.kernels[Core.AIV]
    assert aiv.buffers["scores_scale"].slots == 3  # part A runs two steps ahead: three in flight
    assert aiv.buffers["acc_o_part"].slots == 1  # the largest (128 x 128 float32), B only


def test_skewed_loop_whose_shared_tiles_cannot_keep_two_slots_is_lowered_serial(monkeypatch):
    """When even two slots of the shared tiles (the others at one) do not fit, the pipeline lowers
    the loop serial with one stage (multi_buffer.SkewSlotsDoNotFit)."""
    import attention
    from ascend_backend.passes import multi_buffer

    monkeypatch.setattr(multi_buffer, "_keep_shared_slots", lambda *a: None)
    case = attention.case(heads=1, seq_q=512, seq_kv=512, dim=128, is_causal=False, block_M=256, block_N=64)
    with pytest.warns(UserWarning, match="lowered with 1 stage"):
        kernel, report, errors = run_case(case, "dav-c220")
    assert report.ok and max(errors) < 2e-3
    assert not any(t.skewed for t in kernel.program.launch.transfers)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
@pytest.mark.parametrize("causal", [False, True])
def test_every_block_shape_the_attention_benchmark_tries_is_right(arch, causal):
    """The FlashAttention benchmark times these shapes without checks (benchmarks/attention.py, BLOCKS):
    each must be a kernel that is right and race-free, which a short sequence shows (strict)."""
    import warnings

    import attention

    from ascend_backend.errors import MemoryBudgetError

    bench = _attention_benchmark()
    for bm, bn in bench.BLOCKS:
        seq = max(2 * bm, 4 * bn, 512)  # at least 4 K/V steps: a step's rescale read by the wrong step shows
        case = attention.case(heads=1, seq_q=seq, seq_kv=seq, dim=bench.DIM, is_causal=causal, block_M=bm,
                              block_N=bn, num_stages=bench.STAGES, causal_mask="diagonal")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # stages that do not fit fall back (tested above)
            try:
                _, report, errors = run_case(case, arch)
            except MemoryBudgetError:
                continue  # the benchmark reports the shape as not fitting
        assert report.ok and max(errors) < 2e-3, (bm, bn)
