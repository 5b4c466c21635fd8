"""Intra-core flag rules of the emulator's race/flag checker (hand-written Ascend C kernels)."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER, kinds, line_of, run

from ascend_backend.emulator import EmulatorError, run_source

# Each block adds its slice of x and y into z. The variant `v` (a runtime argument, so one
# compiled kernel serves every test) plants one synchronisation bug:
CLEAN, MISSING, DOUBLE_SET, BAD_ID, WAIT_NO_SET, WRONG_DIR, BARRIER_ALL, CROSS_EVENT, PENDING = range(9)
VADD = HEADER + r"""
extern "C" __global__ __aicore__ void vadd(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n, uint32_t v) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bz;
    pipe.InitBuffer(bx, n * sizeof(float));
    pipe.InitBuffer(by, n * sizeof(float));
    pipe.InitBuffer(bz, n * sizeof(float));
    uint32_t off = GetBlockIdx() * n;
    GlobalTensor<float> gx, gy, gz;
    gx.SetGlobalBuffer((__gm__ float*)x + off, n);
    gy.SetGlobalBuffer((__gm__ float*)y + off, n);
    gz.SetGlobalBuffer((__gm__ float*)z + off, n);
    LocalTensor<float> lx = bx.Get<float>(), ly = by.Get<float>(), lz = bz.Get<float>();
    DataCopy(lx, gx, n);  // @LOADX
    DataCopy(ly, gy, n);
    int32_t id = v == 3 ? 8 : 0;
    bool flag = v != 1 && v != 5 && v != 6;  // 1: missing, 5: wrong direction, 6: PIPE_ALL instead
    if (flag) SetFlag<HardEvent::MTE2_V>(id);
    if (v == 2) SetFlag<HardEvent::MTE2_V>(id);  // @SET2
    if (flag) WaitFlag<HardEvent::MTE2_V>(id);
    if (v == 5) { SetFlag<HardEvent::V_MTE2>(0); WaitFlag<HardEvent::V_MTE2>(0); }
    if (v == 6) PipeBarrier<PIPE_ALL>();
    Add(lz, lx, ly, n);  // @ADD
    SetFlag<HardEvent::V_MTE3>(1);
    WaitFlag<HardEvent::V_MTE3>(1);
    DataCopy(gz, lz, n);  // @STORE
    if (v == 4) WaitFlag<HardEvent::MTE3_V>(2);  // @W
    if (v == 7) SetFlag<HardEvent::M_V>(0);  // @MV
    if (v == 8) SetFlag<HardEvent::MTE3_MTE2>(3);  // @P
}
"""


def vadd_args(variant: int = CLEAN, blocks: int = 2, n: int = 64) -> list:
    x = torch.arange(blocks * n, dtype=torch.float32)
    y = torch.full((blocks * n,), 0.5)
    z = torch.zeros(blocks * n)
    return [x, y, z, n, variant]


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_clean_kernel_is_ok_and_correct(arch):
    args = vadd_args()
    rep = run_source(VADD, "vadd", args, 2, arch=arch)
    assert rep.ok and not rep.races and not rep.flag_errors
    assert torch.equal(args[2], args[0] + args[1])
    assert rep.op_counts == {"V": 2, "MTE2": 4, "MTE3": 2}
    assert rep.timing["modelled"] is True and rep.timing["total_cycles"] > 0


def test_missing_flag_reports_race_with_both_ops_and_lines():
    src = VADD
    args = vadd_args(MISSING)
    rep = run(src, args, 2)
    assert not rep.ok
    assert args[2].sum() != 0  # numbers come out right in the emulator: only the checker sees the bug
    r = rep.races[0]
    assert r["kind"] == "write-read" and "UB" in r["where"]
    first = (r["first"]["op"], r["first"]["pipe"], r["first"]["line"])
    assert first == ("DataCopy", "MTE2", line_of(src, "@LOADX"))
    assert (r["second"]["op"], r["second"]["pipe"], r["second"]["line"]) == ("Add", "V", line_of(src, "@ADD"))
    assert r["hint"].startswith("SetFlag<HardEvent::MTE2_V>(id) after line")
    text = rep.summary()
    assert f"line {line_of(src, '@LOADX')}" in text and f"line {line_of(src, '@ADD')}" in text


def test_strict_mode_raises_even_when_numbers_are_right():
    args = vadd_args(MISSING)
    with pytest.raises(EmulatorError) as ei:
        run_source(VADD, "vadd", args, 2)
    assert ei.value.report is not None and ei.value.report.races
    assert torch.equal(args[2], args[0] + args[1])


def test_non_strict_returns_report():
    rep = run_source(VADD, "vadd", vadd_args(MISSING), 2, strict=False)
    assert not rep.ok and rep.races_total >= 2  # two loads race with the Add, in each block


def test_double_set():
    src = VADD
    rep = run(src, vadd_args(DOUBLE_SET))
    assert "double_set" in kinds(rep.flag_errors)
    e = rep.flag_errors[kinds(rep.flag_errors).index("double_set")]
    assert e["line"] == line_of(src, "@SET2") and e["event"] == "MTE2_V" and e["id"] == 0


def test_wait_without_set():
    src = VADD
    rep = run(src, vadd_args(WAIT_NO_SET))
    assert kinds(rep.flag_errors) == ["wait_without_set"] and not rep.races
    assert rep.flag_errors[0]["line"] == line_of(src, "@W")


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_cross_core_event(arch):
    src = VADD
    rep = run(src, vadd_args(CROSS_EVENT), arch=arch)
    assert kinds(rep.flag_errors) == ["cross_core_event"]
    assert rep.flag_errors[0]["line"] == line_of(src, "@MV")
    assert "different cores" in rep.flag_errors[0]["message"]


def test_event_id_out_of_range():
    rep = run(VADD, vadd_args(BAD_ID))
    assert set(kinds(rep.flag_errors)) == {"id_out_of_range"}
    assert rep.races  # the out-of-range flags did not synchronise anything


def test_pending_at_end():
    src = VADD
    rep = run(src, vadd_args(PENDING), 2)
    assert kinds(rep.flag_errors) == ["pending_at_end"] * 2  # one per block
    assert rep.flag_errors[0]["line"] == line_of(src, "@P")


def test_wrong_flag_direction_is_a_race():
    # V_MTE2 instead of MTE2_V: the Add is not ordered after the loads
    rep = run(VADD, vadd_args(WRONG_DIR))
    assert rep.races and not rep.flag_errors


def test_pipe_all_barrier_orders_everything():
    rep = run(VADD, vadd_args(BARRIER_ALL))
    assert rep.ok


# --- PipeBarrier<PIPE_V>: needed between dependent vector ops on c220 only -------------
# With bisheng's default --cce-auto-sync=on (auto_sync=True) the compiler inserts it, so the
# planted bug (barrier = 0) only means something with auto_sync=False.
VCHAIN = HEADER + r"""
extern "C" __global__ __aicore__ void vchain(GM_ADDR x, GM_ADDR z, uint32_t n, uint32_t barrier) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bt;
    pipe.InitBuffer(bx, n * sizeof(float));
    pipe.InitBuffer(bt, n * sizeof(float));
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    gz.SetGlobalBuffer((__gm__ float*)z, n);
    LocalTensor<float> lx = bx.Get<float>(), lt = bt.Get<float>();
    DataCopy(lx, gx, n);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Add(lt, lx, lx, n);  // @V1
    if (barrier) PipeBarrier<PIPE_V>();
    Add(lt, lt, lx, n);  // @V2
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gz, lt, n);
}
"""


@pytest.mark.parametrize("arch,barrier,auto_sync,expect_race", [
    ("dav-c220", 0, False, True),
    ("dav-c220", 1, False, False),
    ("dav-c220", 0, True, False),
    ("dav-3510", 0, False, False),
    ("dav-3510", 1, False, False),
    ("dav-3510", 0, True, False),
])
def test_pipe_v_barrier_per_arch(arch, barrier, auto_sync, expect_race):
    src = VCHAIN
    x = torch.arange(64, dtype=torch.float32)
    z = torch.zeros(64)
    rep = run(src, [x, z, 64, barrier], arch=arch, auto_sync=auto_sync)
    assert bool(rep.races) == expect_race
    assert torch.equal(z, 3 * x)
    if expect_race:
        r = rep.races[0]
        assert {r["first"]["line"], r["second"]["line"]} == {line_of(src, "@V1"), line_of(src, "@V2")}
        assert "PipeBarrier<PIPE_V>" in r["hint"]


# --- scalar accesses need flags too -------------------------------------------------------
SCALAR = HEADER + r"""
extern "C" __global__ __aicore__ void sc(GM_ADDR x, GM_ADDR z, uint32_t sync) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    gz.SetGlobalBuffer((__gm__ float*)z, 64);
    LocalTensor<float> t = b.Get<float>();
    DataCopy(t, gx, 64);
    if (sync) { SetFlag<HardEvent::MTE2_S>(0); WaitFlag<HardEvent::MTE2_S>(0); }
    float v = t.GetValue(5);  // @GET
    gz.SetValue(0, v);
}
"""


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_scalar_read_after_mte2_needs_flag_without_auto_sync(arch):
    # MTE2 -> S is one of the syncs bisheng inserts by default: the planted bug needs auto_sync=False
    x = torch.arange(64, dtype=torch.float32)
    z = torch.zeros(64)
    rep = run(SCALAR, [x, z, 0], arch=arch, auto_sync=False)
    assert rep.races and rep.races[0]["second"]["op"] == "GetValue" and rep.races[0]["second"]["pipe"] == "S"
    ok = run(SCALAR, [x, z, 1], arch=arch, auto_sync=False)
    assert ok.ok and z[0] == 5
    z.zero_()
    auto = run(SCALAR, [x, z, 0], arch=arch)
    assert auto.ok and auto.auto_sync and z[0] == 5


# --- GM conflicts between blocks -----------------------------------------------------------
GMBLOCKS = HEADER + r"""
extern "C" __global__ __aicore__ void gmb(GM_ADDR z, uint32_t stride) {
    GlobalTensor<float> gz;
    gz.SetGlobalBuffer((__gm__ float*)z, 64);
    gz.SetValue(GetBlockIdx() * stride, (float)GetBlockIdx());  // @W
}
"""


def test_gm_write_by_two_blocks_is_a_race():
    z = torch.zeros(64)
    rep = run(GMBLOCKS, [z, 0], block_dim=2)
    assert rep.races and rep.races[0]["kind"] == "write-write"
    assert {rep.races[0]["first"]["block"], rep.races[0]["second"]["block"]} == {0, 1}
    assert "arg 'z'" in rep.races[0]["where"]
    assert run(GMBLOCKS, [z, 1], block_dim=2).ok
