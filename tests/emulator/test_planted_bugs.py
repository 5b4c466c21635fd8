"""Planted bugs: each must be reported; none may hang or crash the Python process."""

from __future__ import annotations

import time

import pytest
import torch
from conftest import HEADER, kinds, line_of, run

from ascend_backend.emulator import EmulatorError, run_source

COPY = HEADER + r"""
extern "C" __global__ __aicore__ void copyk(GM_ADDR x, GM_ADDR z, uint32_t n, uint32_t dst_off, uint32_t bug) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, n * sizeof(float));
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    gz.SetGlobalBuffer((__gm__ float*)z, n);
    LocalTensor<float> t = b.Get<float>();
    DataCopy(t, gx, n);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(gz[dst_off], t, n);  // @STORE
    if (bug) {
        for (int i = 0; i < 2; ++i) {
            SetFlag<HardEvent::MTE3_MTE2>(1);  // @LOOPSET
        }
        WaitFlag<HardEvent::MTE3_MTE2>(1);
    }
}
"""


def test_gm_out_of_bounds_write():
    x, z = torch.arange(64, dtype=torch.float32), torch.zeros(64)
    src = COPY
    with pytest.raises(EmulatorError) as ei:
        run_source(src, None, [x, z, 64, 32, 0], 1, strict=False)  # raises even when not strict
    rep = ei.value.report
    assert kinds(rep.errors) == ["gm_out_of_bounds"]
    e = rep.errors[0]
    assert e["line"] == line_of(src, "@STORE") and "'z'" in e["message"] and e["op"] == "DataCopy"
    assert "gm_out_of_bounds" in rep.summary()
    # the in-bounds variant of the same kernel is fine
    assert run_source(src, None, [x, z, 64, 0, 0], 1).ok and torch.equal(z, x)


def test_double_set_in_a_loop():
    src = COPY
    rep = run(src, [torch.zeros(64), torch.zeros(64), 64, 0, 1])
    assert kinds(rep.flag_errors) == ["double_set"] and rep.flag_errors[0]["line"] == line_of(src, "@LOOPSET")


MIX_WAIT = HEADER + r"""
extern "C" __global__ __aicore__ void mixwait(GM_ADDR out, uint32_t far) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out, 16);
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag(7);  // @WAIT
        go.SetValue(GetBlockIdx(), 1.0f);
    }
    if ASCEND_IS_AIC {
        go.SetValue(far ? 100000 : 15, 2.0f);  // @OOB
    }
}
"""


def test_cross_core_wait_never_satisfied():
    src = MIX_WAIT
    t0 = time.perf_counter()
    with pytest.raises(EmulatorError) as ei:
        run_source(src, None, [torch.zeros(16), 0], 4)
    assert time.perf_counter() - t0 < 10
    rep = ei.value.report
    assert rep.deadlock is not None
    assert {(w["core"], w["flag"], w["line"]) for w in rep.deadlock["waiters"]} == {
        ("AIV0", 7, line_of(src, "@WAIT")), ("AIV1", 7, line_of(src, "@WAIT"))}


def test_error_on_one_core_stops_blocked_cores():
    # the AIC writes out of bounds while both AIVs are blocked waiting for it
    src = MIX_WAIT
    t0 = time.perf_counter()
    rep = run(src, [torch.zeros(16), 1], block_dim=2)
    assert time.perf_counter() - t0 < 10
    assert kinds(rep.errors)[0] == "gm_out_of_bounds" and rep.errors[0]["line"] == line_of(src, "@OOB")
    assert rep.deadlock is None


WILD = HEADER + r"""
extern "C" __global__ __aicore__ void wild(GM_ADDR out, uint32_t crash) {
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out, 16);
    go.SetValue(0, 1.0f);  // @LAST
    volatile float* p = (volatile float*)(uintptr_t)16;
    if (crash) *p = 3.0f;  // wild pointer: segfaults
}
"""


def test_wild_pointer_segfault_does_not_kill_python():
    with pytest.raises(EmulatorError) as ei:
        run_source(WILD, None, [torch.zeros(16), 1], 1)
    rep = ei.value.report
    assert kinds(rep.errors) == ["crash"]
    assert "signal" in rep.errors[0]["message"] and rep.errors[0]["line"] == line_of(WILD, "@LAST")
    # the process is fine and the emulator still works
    out = torch.zeros(16)
    run_source(WILD, None, [out, 0], 1)
    assert out[0] == 1.0


def test_endless_loop_is_stopped_by_the_timeout():
    src = HEADER + r"""
extern "C" __global__ __aicore__ void spin(GM_ADDR out) {
    volatile int k = 1;
    while (k) { }
}
"""
    t0 = time.perf_counter()
    with pytest.raises(EmulatorError) as ei:
        run_source(src, None, [torch.zeros(4)], 1, timeout=1.0)
    assert time.perf_counter() - t0 < 8
    assert "did not finish" in ei.value.report.errors[0]["message"]


def test_local_out_of_bounds_and_capacity():
    src = HEADER + r"""
extern "C" __global__ __aicore__ void loc(GM_ADDR out, uint32_t idx, uint32_t bytes) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, bytes);  // @INIT
    LocalTensor<float> t = b.Get<float>();
    t.SetValue(idx, 1.0f);  // @SET
}
"""
    rep = run(src, [torch.zeros(4), 70000, 1024])
    assert kinds(rep.errors) == ["local_out_of_bounds"] and rep.errors[0]["line"] == line_of(src, "@SET")
    rep = run(src, [torch.zeros(4), 0, 300 * 1024])
    assert kinds(rep.errors) == ["capacity"] and rep.errors[0]["line"] == line_of(src, "@INIT")
    assert "UB" in rep.errors[0]["message"]
    rep = run(src, [torch.zeros(4), 0, 200 * 1024], arch="dav-c220")  # 192 KB on c220
    assert kinds(rep.errors) == ["capacity"]
    assert run(src, [torch.zeros(4), 0, 200 * 1024], arch="dav-3510").ok  # 248 KB on 3510


def test_memory_of_the_other_core_kind():
    src = HEADER + r"""
extern "C" __global__ __aicore__ void l1onaiv(GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::A1> b;
    pipe.InitBuffer(b, 1024);
    b.Get<float>().SetValue(0, 1.0f);  // @SET
}
"""
    rep = run(src, [torch.zeros(4)], kernel_type="AIV_ONLY")
    assert kinds(rep.errors) == ["invalid_memory"] and "L1" in rep.errors[0]["message"]
