"""Cross-core flags (CrossCoreSetFlag/CrossCoreWaitFlag) per mode, deadlock detection."""

from __future__ import annotations

import time

import pytest
import torch
from conftest import HEADER, kinds, line_of, run

# mode 2, AIC -> both AIVs: the AIC writes GM, the AIVs read it after the flag.
AIC2AIV = HEADER + r"""
extern "C" __global__ __aicore__ void aic2aiv(GM_ADDR buf, GM_ADDR out, uint32_t v) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<float> gb, go;
    gb.SetGlobalBuffer((__gm__ float*)buf, 64);
    go.SetGlobalBuffer((__gm__ float*)out, 64);
    if ASCEND_IS_AIC {
        gb.SetValue(GetBlockIdx(), 10.0f + GetBlockIdx());  // @AICW
        if (v) CrossCoreSetFlag<2, PIPE_S>(1);
    }
    if ASCEND_IS_AIV {
        if (v == 1) CrossCoreWaitFlag(1);
        if (v == 2) CrossCoreWaitFlag<2, PIPE_S>(1);
        float v = gb.GetValue(GetBlockIdx() / 2);  // @AIVR
        go.SetValue(GetBlockIdx(), v);
    }
}
"""


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_mode2_aic_to_aivs(arch):
    buf, out = torch.zeros(64), torch.zeros(64)
    rep = run(AIC2AIV, [buf, out, 1], block_dim=3, arch=arch)
    assert rep.ok, rep.summary()
    assert rep.kernel_type == "MIX_AIC_1_2"
    assert out[:6].tolist() == [10, 10, 11, 11, 12, 12]


def test_mode2_missing_sync_is_a_race_between_cores():
    src = AIC2AIV
    rep = run(src, [torch.zeros(64), torch.zeros(64), 0], block_dim=1)
    assert rep.races
    cores = {(r["first"]["core"], r["second"]["core"]) for r in rep.races}
    assert cores <= {("AIC", "AIV0"), ("AIC", "AIV1"), ("AIV0", "AIC"), ("AIV1", "AIC")}
    r = rep.races[0]
    assert {r["first"]["line"], r["second"]["line"]} == {line_of(src, "@AICW"), line_of(src, "@AIVR")}


def test_template_wait_form_is_accepted():
    assert run(AIC2AIV, [torch.zeros(64), torch.zeros(64), 2], block_dim=2).ok


# mode 2, AIVs -> AIC: the AIC continues only after BOTH AIVs set.
AIV2AIC = HEADER + r"""
extern "C" __global__ __aicore__ void aiv2aic(GM_ADDR out, GM_ADDR res, uint32_t both) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<float> go, gr;
    go.SetGlobalBuffer((__gm__ float*)out, 64);
    gr.SetGlobalBuffer((__gm__ float*)res, 64);
    if ASCEND_IS_AIV {
        go.SetValue(GetBlockIdx(), 1.0f + GetBlockIdx());
        if (both || GetSubBlockIdx() == 0) CrossCoreSetFlag<2, PIPE_S>(2);
    }
    if ASCEND_IS_AIC {
        CrossCoreWaitFlag(2);  // @AICWAIT
        int64_t b = GetBlockIdx();
        gr.SetValue(b, go.GetValue(2 * b) + go.GetValue(2 * b + 1));
    }
}
"""


def test_mode2_aivs_to_aic_waits_for_both():
    out, res = torch.zeros(64), torch.zeros(64)
    rep = run(AIV2AIC, [out, res, 1], block_dim=2)
    assert rep.ok, rep.summary()
    assert res[:2].tolist() == [3.0, 7.0]


def test_mode2_only_one_aiv_sets_is_a_deadlock_reported_at_once():
    src = AIV2AIC
    t0 = time.perf_counter()
    rep = run(src, [torch.zeros(64), torch.zeros(64), 0], block_dim=2)
    assert time.perf_counter() - t0 < 10
    assert rep.deadlock is not None and not rep.ok
    w = rep.deadlock["waiters"]
    assert all(x["core"] == "AIC" and x["flag"] == 2 and x["line"] == line_of(src, "@AICWAIT") for x in w)
    assert "flag 2" in rep.summary()


# mode 1: barrier between the two AIVs of a group
MODE1 = HEADER + r"""
extern "C" __global__ __aicore__ void mode1(GM_ADDR out, uint32_t sync) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out, 64);
    if ASCEND_IS_AIV {
        int64_t g = GetBlockIdx() / 2;
        if (GetSubBlockIdx() == 0) go.SetValue(2 * g, 7.0f + g);
        if (sync) { CrossCoreSetFlag<1, PIPE_S>(3); CrossCoreWaitFlag(3); }
        if (GetSubBlockIdx() == 1) go.SetValue(2 * g + 1, go.GetValue(2 * g) + 1.0f);
    }
}
"""


def test_mode1_orders_the_two_aivs():
    out = torch.zeros(64)
    rep = run(MODE1, [out, 1], block_dim=2)
    assert rep.ok, rep.summary()
    assert out[:4].tolist() == [7, 8, 8, 9]
    bad = run(MODE1, [torch.zeros(64), 0], block_dim=2)
    assert bad.races and {bad.races[0]["first"]["core"], bad.races[0]["second"]["core"]} == {"AIV0", "AIV1"}


# mode 4 (3510 only): AIC <-> one AIV; AIC ids 0-10 reach AIV0, 16-26 reach AIV1
MODE4 = HEADER + r"""
extern "C" __global__ __aicore__ void mode4(GM_ADDR out, uint32_t id1) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out, 64);
    if ASCEND_IS_AIC {
        go.SetValue(0, 5.0f);
        CrossCoreSetFlag<4, PIPE_S>(3);
        CrossCoreSetFlag<4, PIPE_S>(id1);
    }
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag<4, PIPE_S>(3);  // @W4
        go.SetValue(1 + GetSubBlockIdx(), go.GetValue(0));
    }
}
"""


def test_mode4_targets_one_aiv():
    out = torch.zeros(64)
    rep = run(MODE4, [out, 19], arch="dav-3510")
    assert rep.ok, rep.summary()
    assert out[:3].tolist() == [5, 5, 5]
    # both sets to AIV0: AIV1 waits forever
    bad = run(MODE4, [torch.zeros(64), 3], arch="dav-3510")
    assert bad.deadlock is not None
    assert [(w["core"], w["flag"]) for w in bad.deadlock["waiters"]] == [("AIV1", 3)]


def test_mode4_is_rejected_on_c220():
    rep = run(MODE4, [torch.zeros(64), 19], arch="dav-c220")
    assert kinds(rep.errors) == ["invalid_param"] and "mode 4" in rep.errors[0]["message"]


# mode 0: all cores of one kind (across blocks)
MODE0 = HEADER + r"""
extern "C" __global__ __aicore__ void mode0(GM_ADDR z, GM_ADDR out, uint32_t v) {
    GlobalTensor<float> gz, go;
    gz.SetGlobalBuffer((__gm__ float*)z, 64);
    go.SetGlobalBuffer((__gm__ float*)out, 64);
    int64_t b = GetBlockIdx(), n = GetBlockNum();
    gz.SetValue(b, 1.0f + b);
    if (v == 1) { CrossCoreSetFlag<0, PIPE_S>(0); CrossCoreWaitFlag(0); }
    if (v == 2) SyncAll();
    go.SetValue(b, gz.GetValue((b + 1) % n));  // @R
}
"""


def test_mode0_barrier_across_blocks():
    out = torch.zeros(64)
    rep = run(MODE0, [torch.zeros(64), out, 1], block_dim=5, kernel_type="MIX_AIV_1_0")
    assert rep.ok, rep.summary()
    assert out[:5].tolist() == [2, 3, 4, 5, 1]
    bad = run(MODE0, [torch.zeros(64), torch.zeros(64), 0], block_dim=5)
    assert bad.races and bad.races[0]["first"]["block"] != bad.races[0]["second"]["block"]


def test_syncall_barrier():
    out = torch.zeros(64)
    rep = run(MODE0, [torch.zeros(64), out, 2], block_dim=4)
    assert rep.ok, rep.summary()
    assert out[:4].tolist() == [2, 3, 4, 1]


# flag-id range, counter saturation, pending at end
MISC = HEADER + r"""
extern "C" __global__ __aicore__ void misc(GM_ADDR out, uint32_t v) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    if (v == 0 && ASCEND_IS_AIC) CrossCoreSetFlag<2, PIPE_S>(16);  // @X0 (ids 0-15)
    if (v == 1 && ASCEND_IS_AIC)
        for (int i = 0; i < 16; ++i) CrossCoreSetFlag<2, PIPE_S>(4);  // @X1
    if (v == 2) CrossCoreWaitFlag(5);  // @X2
}
"""


def test_cross_core_id_out_of_range():
    rep = run(MISC, [torch.zeros(4), 0])
    assert kinds(rep.flag_errors) == ["id_out_of_range"] and rep.flag_errors[0]["line"] == line_of(MISC, "@X0")


def test_cross_core_counter_overflow_and_pending():
    rep = run(MISC, [torch.zeros(4), 1])
    ks = kinds(rep.flag_errors)
    assert ks.count("counter_overflow") == 2  # once per AIV
    assert ks.count("pending_at_end") == 2


def test_deadlock_everyone_waits():
    t0 = time.perf_counter()
    rep = run(MISC, [torch.zeros(4), 2], block_dim=2)
    assert time.perf_counter() - t0 < 10
    assert rep.deadlock is not None
    assert len(rep.deadlock["waiters"]) == 3  # one block's AIC + 2 AIVs
    assert all(w["flag"] == 5 and w["line"] == line_of(MISC, "@X2") for w in rep.deadlock["waiters"])


# CrossCoreWaitFlag page: the pipe template argument takes effect on the 950 only; on A2/A3 the
# wait blocks every pipe. Here the AIVs wait "on PIPE_V" and then read the AIC's GM on MTE2.
WAIT_PIPE = HEADER + r"""
extern "C" __global__ __aicore__ void wait_pipe(GM_ADDR buf, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<float> gb, go;
    gb.SetGlobalBuffer((__gm__ float*)buf, 64);
    go.SetGlobalBuffer((__gm__ float*)out, 64);
    if ASCEND_IS_AIC {
        gb.SetValue(0, 5.0f);  // @AICW
        CrossCoreSetFlag<2, PIPE_S>(3);
    }
    if ASCEND_IS_AIV {
        TPipe pipe;
        TBuf<TPosition::VECCALC> tb;
        pipe.InitBuffer(tb, 256);
        LocalTensor<float> t = tb.Get<float>();
        CrossCoreWaitFlag<2, PIPE_V>(3);
        DataCopy(t, gb, 8);  // @AIVR
        SetFlag<HardEvent::MTE2_MTE3>(0);
        WaitFlag<HardEvent::MTE2_MTE3>(0);
        DataCopy(go[GetSubBlockIdx() * 8], t, 8);
    }
}
"""


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_wait_pipe_argument_matters_on_3510_only(arch):
    out = torch.zeros(64)
    rep = run(WAIT_PIPE, [torch.zeros(64), out], block_dim=1, arch=arch)
    if arch == "dav-c220":
        assert rep.ok, rep.summary()
        assert out[0] == 5.0 and out[8] == 5.0
    else:
        lines = {(r["first"]["line"], r["second"]["line"]) for r in rep.races}
        assert (line_of(WAIT_PIPE, "@AICW"), line_of(WAIT_PIPE, "@AIVR")) in lines, rep.summary()
