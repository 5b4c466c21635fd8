"""How tiles cross between the Cube and the Vector cores, pinned in the generated code and run on the
emulator (strict: no race, flag error or deadlock):

* dav-3510: Cube -> Vector tiles go L0C -> UB (one dual-destination Fixpipe, split by rows: each AIV
  receives its half in its UB at twice the single-destination rate), Vector -> Cube tiles go
  UB -> L1 (each AIV's MTE3 DataCopy with Nd2NzParams into its rows of the AIC's NZ tile), both
  signalled per AIV with mode-4 cross-core flags (on the AIC, AIV 1's flag f is f + 16);
  transfers that need a "free" flag stay on chip too.
* dav-c220: every crossing goes through the GM workspace with mode-2 flags.
"""

import attention
import kernels
import pytest
from filecheck import filecheck

import ascend_backend
from ascend_backend.emulator import EmulatorError, run_source
from ascend_backend.ir import Route
from ascend_backend.testing import run_case


def src(func, arch):
    return ascend_backend.lower(func, {"kind": "ascendc", "arch": arch}).source


def test_flash_attention_3510_p_tile_goes_ub_to_l1_with_mode_4():
    # The loop is skewed (Cube/Vector overlap): part A of step k (QK^T on the Cube; the softmax on the
    # Vectors) runs before part B of step k - 1 (PV; its accumulation), which selects its slots by
    # k_b = k - 1. Every crossing tile has a slot per step: S in each AIV's UB, P in the AIC's L1.
    filecheck(src(attention.flashattn(is_causal=True, num_stages=2), "dav-3510"), """
        CHECK-NOT: workspace
        CHECK: if ASCEND_IS_AIC {
        CHECK: LocalTensor<half> acc_s_cast_slots = l1_buf.GetWithOffset<half>(8192,
        CHECK-SAME: acc_s_cast: L1 64x64xfloat16 NZ slots=2, attention.py
        CHECK: for (int32_t k = 0; k < (min_i(2, (((((bx + 1) * 64) + 64) - 1) / 64)) + 1); ++k) {
        CHECK: if ((k < min_i(2,
        # S = Q K^T: one dual-destination Fixpipe puts each AIV's half of the rows straight into
        # its UB slot; both AIVs are signalled after it
        CHECK: {  // one Fixpipe into both AIVs' UB: rows [0, 32) to AIV 0, [32, 64) to AIV 1
        CHECK-NEXT: FixpipeParamsArch3510 fp;
        CHECK-NEXT: fp.nSize = 64;
        CHECK-NEXT: fp.mSize = 64;
        CHECK: fp.dualDstCtl = 1;
        CHECK-NEXT: fp.unitFlag = 3;  // unit flag, sync table #
        CHECK-NEXT: Fixpipe<float, float, CFG_ROW_MAJOR_UB>(acc_s_part_peer[((k) % 2) * 2048], acc_s, fp);
        CHECK-NEXT: }
        CHECK-NOT: Fixpipe<
        CHECK: CrossCoreSetFlag<4, PIPE_FIX>(0);  // acc_s from the Cube to AIV 0: its half is in its UB
        CHECK-NEXT: CrossCoreSetFlag<4, PIPE_FIX>(16);  // acc_s from the Cube to AIV 1: its half is in its UB
        CHECK: if ((k >= 1)) {
        CHECK-NEXT: for (int32_t k_b = (k - 1); k_b < (k - 1) + (1) * 1; k_b += 1) {
        CHECK: LocalTensor<half> acc_s_cast = acc_s_cast_slots[(k_b % 2) * 4096];
        # P arrives in L1 from both AIVs: the AIC's MTE1 waits for each half before its LoadData
        CHECK-NOT: DataCopy(acc_s_cast
        CHECK: CrossCoreWaitFlag<4, PIPE_MTE1>(1);  // acc_s_cast from AIV 0: its half is in L1
        CHECK-NEXT: CrossCoreWaitFlag<4, PIPE_MTE1>(17);  // acc_s_cast from AIV 1: its half is in L1
        CHECK-NOT: DataCopy(acc_s_cast
        CHECK: LoadData(acc_s_cast_l0a, acc_s_cast, LoadData2DParamsV2{
        CHECK: Mmad(acc_o, acc_s_cast_l0a, V_shared_l0b, mp);
        CHECK: fp.dualDstCtl = 1;
        CHECK-NEXT: fp.unitFlag = 3;  // unit flag, sync table #
        CHECK-NEXT: Fixpipe<float, float, CFG_ROW_MAJOR_UB>(acc_o_part_peer[((k_b) % 2) * 2048], acc_o, fp);
        CHECK-NEXT: }
        CHECK-NOT: Fixpipe<
        CHECK: CrossCoreSetFlag<4, PIPE_FIX>(2);  // acc_o from the Cube to AIV 0
        CHECK-NEXT: CrossCoreSetFlag<4, PIPE_FIX>(18);  // acc_o from the Cube to AIV 1
        CHECK: if ASCEND_IS_AIV {
        CHECK: TBuf<TPosition::A1> peer_l1;
        CHECK: LocalTensor<half> acc_s_cast_l1_peer = peer_l1.GetWithOffset<half>(8192,
        CHECK: for (int32_t k = 0;
        CHECK: CrossCoreWaitFlag<4, PIPE_V>(0);  // acc_s from the Cube: this AIV's half is in its UB
        CHECK: Cast(acc_s_cast, acc_s, RoundMode::CAST_RINT, 2048);
        CHECK: WaitFlag<HardEvent::V_MTE3>(k % 2);
        CHECK-NEXT: DataCopy(acc_s_cast_l1_peer[sub_idx * 512 + ((k) % 2) * 4096], acc_s_cast, Nd2NzParams{1, (uint16_t)(32), (uint16_t)(64), 0, (uint16_t)(64), (uint16_t)(64), 1, 0});
        CHECK-NEXT: SetFlag<HardEvent::MTE3_V>(k % 2);
        CHECK-NEXT: CrossCoreSetFlag<4, PIPE_MTE3>(1);  // acc_s_cast from the Vector cores: this AIV's half is in the AIC's L1
        CHECK: for (int32_t k_b = (k - 1);
        CHECK: CrossCoreWaitFlag<4, PIPE_V>(2);
        CHECK-NOT: CrossCoreSetFlag<2
        CHECK-NOT: CrossCoreWaitFlag<2
    """)


def test_sync_table_names_the_dual_destination_fixpipe_3510():
    from ascend_backend.pipeline import compile_kernel
    from ascend_backend.reports import sync_table
    from ascend_backend.target import parse_target

    program = compile_kernel(attention.flashattn(is_causal=True), parse_target({"kind": "ascendc",
                                                                               "arch": "dav-3510"})).program
    ready = {r["buffer"]: r for r in sync_table(program) if r["event"] == "CrossCore (ready)"}
    assert ready["AIV:acc_s_part"]["producer"] == ("AIC: one dual-destination Fixpipe acc_s -> acc_s_part in the UB "
                                                   "of AIV 0 and AIV 1 (rows split)")
    assert "mode 4, one set per AIV" in ready["AIV:acc_s_part"]["kind"]
    assert ready["AIC:acc_s_cast"]["producer"].startswith("AIV: DataCopy acc_s_cast")


@pytest.mark.slow
def test_without_the_dual_mode_each_aiv_half_has_its_fixpipe_and_runs_clean(monkeypatch):
    # An arch with the on-chip path but without the dual-destination Fixpipe (Arch.l0c_to_ub_dual)
    # keeps one Fixpipe per AIV half (subBlockId), each AIV signalled after its own half; strict on
    # the emulator against torch.
    import dataclasses

    import gemm_epilogue

    from ascend_backend import arch as arch_mod

    monkeypatch.setitem(arch_mod.ARCHES, "dav-3510", dataclasses.replace(arch_mod.DAV_3510, l0c_to_ub_dual=False))
    k, report, _ = run_case(gemm_epilogue.example(), "dav-3510")
    filecheck(k.kernel_source, """
        CHECK-NOT: dualDstCtl
        CHECK: fp.subBlockId = false;
        CHECK-NEXT: fp.unitFlag = 3;  // unit flag, sync table #
        CHECK-NEXT: Fixpipe<float, float, CFG_ROW_MAJOR_UB>(
        CHECK-NEXT: }
        CHECK-NEXT: CrossCoreSetFlag<4, PIPE_FIX>(0);
        CHECK: fp.subBlockId = true;
        CHECK-NEXT: fp.unitFlag = 3;  // unit flag, sync table #
        CHECK-NEXT: Fixpipe<float, float, CFG_ROW_MAJOR_UB>(
        CHECK: CrossCoreSetFlag<4, PIPE_FIX>(16);
    """)
    assert report.ok and not report.races and not report.flag_errors and not report.deadlock


def test_flash_attention_c220_keeps_the_workspace_and_mode_2():
    filecheck(src(attention.flashattn(is_causal=True, num_stages=2), "dav-c220"), """
        CHECK: void flash_fwd(GM_ADDR Q, GM_ADDR K, GM_ADDR V, GM_ADDR Output, GM_ADDR workspace)
        CHECK: ws_acc_s_cast_gm.SetGlobalBuffer((__gm__ half*)(workspace +
        CHECK: if ASCEND_IS_AIC {
        CHECK: Fixpipe<float, float, CFG_ROW_MAJOR>(ws_acc_s_gm
        CHECK: CrossCoreSetFlag<2, PIPE_FIX>(0);
        CHECK: CrossCoreWaitFlag<2, PIPE_MTE2>(1);
        CHECK-NEXT: DataCopy(acc_s_cast, ws_acc_s_cast_gm
        CHECK-SAME: Nd2NzParams{
        CHECK: if ASCEND_IS_AIV {
        CHECK: CrossCoreWaitFlag<2, PIPE_MTE2>(0);
        CHECK: DataCopy(ws_acc_s_cast_gm
        CHECK: CrossCoreSetFlag<2, PIPE_MTE3>(1);
        CHECK-NOT: CrossCoreSetFlag<4
        CHECK-NOT: CrossCoreWaitFlag<4
        CHECK-NOT: peer
    """)


def test_free_flags_3510_on_chip_per_aiv():
    # Cube -> Vector in a loop with nothing travelling back: each AIV frees its UB tile after its
    # last use; the AIC waits for both AIVs' "free" before its one dual-destination Fixpipe.
    filecheck(src(kernels.gemm_tiles_epilogue(), "dav-3510"), """
        CHECK-NOT: workspace
        CHECK: for (int32_t n = 0;
        CHECK: CrossCoreWaitFlag<4, PIPE_FIX>(1);  // AIV 0's UB tile c is free
        CHECK-NEXT: CrossCoreWaitFlag<4, PIPE_FIX>(17);  // AIV 1's UB tile c is free
        CHECK: fp.dualDstCtl = 1;
        CHECK-NEXT: fp.unitFlag = 3;  // unit flag, sync table #
        CHECK-NEXT: Fixpipe<float, float, CFG_ROW_MAJOR_UB>(c_peer, c, fp);
        CHECK-NEXT: }
        CHECK: CrossCoreSetFlag<4, PIPE_FIX>(0);
        CHECK-NEXT: CrossCoreSetFlag<4, PIPE_FIX>(16);
        CHECK-NOT: Fixpipe<
        CHECK: CrossCoreWaitFlag<4, PIPE_FIX>(1);  // drain
        CHECK-NEXT: CrossCoreWaitFlag<4, PIPE_FIX>(17);  // drain
        CHECK: if ASCEND_IS_AIV {
        CHECK: CrossCoreSetFlag<4, PIPE_V>(1);  // prime
        CHECK: for (int32_t n = 0;
        CHECK-NEXT: CrossCoreWaitFlag<4, PIPE_V>(0);
        CHECK: Cast(y,
        CHECK: CrossCoreSetFlag<4, PIPE_V>(1);  // this AIV's UB tile c is free (its last use in the iteration)
        CHECK: DataCopyPad(Y_gm
    """)
    # Vector -> Cube in a loop with nothing travelling back: the AIC frees the L1 tile for each AIV
    # once its LoadData (MTE1) is issued; each AIV waits for it before writing its rows again.
    filecheck(src(kernels.scaled_a_gemm(), "dav-3510"), """
        CHECK-NOT: workspace
        CHECK: CrossCoreSetFlag<4, PIPE_MTE1>(1);  // prime: L1 tile a starts free for AIV 0
        CHECK-NEXT: CrossCoreSetFlag<4, PIPE_MTE1>(17);  // prime: L1 tile a starts free for AIV 1
        CHECK: for (int32_t k = 0;
        CHECK: CrossCoreWaitFlag<4, PIPE_MTE1>(0);
        CHECK-NEXT: CrossCoreWaitFlag<4, PIPE_MTE1>(16);
        CHECK: LoadData(a_l0a, a,
        CHECK: Mmad(c, a_l0a, b_l0b, mp);
        CHECK: CrossCoreSetFlag<4, PIPE_MTE1>(1);  // L1 tile a loaded: AIV 0 may write it again
        CHECK-NEXT: CrossCoreSetFlag<4, PIPE_MTE1>(17);  // L1 tile a loaded: AIV 1 may write it again
        CHECK: if ASCEND_IS_AIV {
        CHECK: for (int32_t k = 0;
        CHECK: CrossCoreWaitFlag<4, PIPE_MTE3>(1);  // the AIC's L1 tile a is free
        CHECK: DataCopy(a_l1_peer[sub_idx * 512], a, Nd2NzParams{
        CHECK: CrossCoreSetFlag<4, PIPE_MTE3>(0);
        CHECK: CrossCoreWaitFlag<4, PIPE_MTE3>(1);  // drain
    """)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemm_tiles", "scaled_a"])
def test_transfers_with_free_flags(arch, name):
    k, report, _ = run_case(kernels.free_flag_cases()[name], arch)
    assert report.ok and not report.races and not report.flag_errors and not report.deadlock
    cc = k.program.launch.transfers
    assert len(cc) == 1 and cc[0].free is not None
    if arch == "dav-3510":
        assert cc[0].route is Route.ON_CHIP and not k.program.workspace_bytes
    else:
        assert cc[0].route is Route.WORKSPACE and k.program.workspace_bytes > 0


def test_sync_table_3510_lists_on_chip_flags_with_mode_4():
    k = ascend_backend.compile(attention.flashattn(is_causal=True), target={"kind": "ascendc", "arch": "dav-3510"},
                               runtime="emulator")
    cc = [r for r in k.sync_table() if r["event"].startswith("CrossCore")]
    assert {r["buffer"] for r in cc} == {"AIV:acc_s_part", "AIC:acc_s_cast", "AIV:acc_o_part"}
    assert all(0 <= r["id"] <= 10 and "mode 4" in r["kind"] for r in cc)
    p = next(r for r in cc if r["buffer"] == "AIC:acc_s_cast")
    assert p["producer"].startswith("AIV: DataCopy acc_s_cast") and p["consumer"] == "AIC: LoadData acc_s_cast"
    pv = next(n for n, line in enumerate(open(attention.__file__), 1) if "T.gemm(acc_s_cast, V_shared" in line)
    assert "AIC ids 1 / 17" in p["kind"] and p["producer_at"].endswith(f"attention.py:{pv}")
    k2 = ascend_backend.compile(kernels.scaled_a_gemm(), target={"kind": "ascendc", "arch": "dav-3510"},
                                runtime="emulator")
    free = [r for r in k2.sync_table() if r["event"] == "CrossCore (free)"]
    assert len(free) == 1 and "cross-core WAR, mode 4" in free[0]["kind"] and free[0]["buffer"] == "AIC:a"


@pytest.mark.parametrize("which", ["fa", "scaled_a"])
def test_removed_3510_cross_core_flags_fail_with_a_report_not_a_hang(which):
    case = (attention.case(is_causal=False, heads=1, seq_kv=128) if which == "fa" else kernels.free_flag_cases()["scaled_a"])
    k = ascend_backend.compile(case.func, target={"kind": "ascendc", "arch": "dav-3510"}, runtime="emulator")
    assert "CrossCoreSetFlag<4, PIPE_MTE3>" in k.kernel_source
    stripped = "\n".join(line for line in k.kernel_source.splitlines() if "CrossCore" not in line)
    args = [a.clone() for a in case.inputs]
    assert not k.program.workspace_bytes  # everything crosses on chip: no workspace argument
    with pytest.raises(EmulatorError) as info:
        run_source(stripped, k.name, args, k.block_dim, arch="dav-3510", timeout=120, auto_sync=False)
    rep = info.value.report
    assert rep is not None and rep.races and not rep.deadlock
    text = rep.summary()
    # the race names the on-chip memories the flags protected and suggests a cross-core flag
    assert "race" in text.lower() and ("AIC L1" in text or "UB" in text) and "CrossCoreSetFlag" in text


def test_verify_route_rejects_a_wait_nobody_sets():
    from ascend_backend.passes.partition import partition
    from ascend_backend.passes.route import route, verify_route

    from ascend_backend.errors import InternalCompilerError
    from ascend_backend.frontend import import_primfunc
    from ascend_backend.ir import Core, CrossCoreSet, map_body
    from ascend_backend.target import parse_target

    program = route(partition(import_primfunc(kernels.scaled_a_gemm(),
                                              parse_target({"kind": "ascendc", "arch": "dav-3510"}), None)))
    verify_route(program)
    lc = program.launch
    aic = lc.kernels[Core.AIC]
    # the AIC forgets to free the L1 tile for AIV 1
    body = map_body(aic.body, lambda s: [] if isinstance(s, CrossCoreSet) and s.sub == 1 else [s])
    broken = program.replace(launches=[lc.replace(kernels={**lc.kernels, Core.AIC: aic.replace(body=body)})])
    with pytest.raises(InternalCompilerError, match="never sets"):
        verify_route(broken)
