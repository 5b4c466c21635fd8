"""Python API of the emulator: signatures, scalar arguments, block queries, kernel types,
isolation modes, report views (summary, dict, timeline)."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import HEADER, run

from ascend_backend.emulator import EmulatorError, parse_kernels, run_source


def test_parse_kernels():
    src = HEADER + r"""
// extern "C" __global__ __aicore__ void commented_out(GM_ADDR x) {}
__aicore__ inline void helper(GM_ADDR x) {}
extern "C" __global__ __aicore__ void k1(GM_ADDR a, __gm__ half* b, uint32_t n, const float s) {}
extern "C" __global__ __aicore__ void k2() {}
"""
    ks = parse_kernels(src)
    assert [k.name for k in ks] == ["k1", "k2"]
    assert [(p.name, p.pointer) for p in ks[0].params] == [("a", True), ("b", True), ("n", False), ("s", False)]
    assert ks[0].params[3].ctype == "float" and ks[1].params == []


SCAL = HEADER + r"""
extern "C" __global__ __aicore__ void scal(GM_ADDR out, int32_t i, uint64_t u, float f, half h, bool b) {
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out, 8);
    go.SetValue(0, (float)i);
    go.SetValue(1, (float)(u >> 32));
    go.SetValue(2, f);
    go.SetValue(3, (float)h);
    go.SetValue(4, b ? 1.0f : 0.0f);
}
"""


def test_scalar_arguments():
    out = torch.zeros(8)
    run_source(SCAL, "scal", [out, -7, 5 << 32, 2.5, 0.333, True], 1)
    assert out[:5].tolist() == [-7.0, 5.0, 2.5, pytest.approx(0.333, abs=2e-4), 1.0]


def test_wrong_arguments_are_errors():
    with pytest.raises(EmulatorError, match="takes 6 arguments"):
        run_source(SCAL, "scal", [torch.zeros(8)], 1)
    with pytest.raises(EmulatorError, match="torch tensor"):
        run_source(SCAL, "scal", [[1.0], 1, 1, 1.0, 1.0, True], 1)
    with pytest.raises(EmulatorError, match="not found"):
        run_source(SCAL, "nope", [], 1)
    with pytest.raises(EmulatorError, match="unknown arch"):
        run_source(SCAL, "scal", [torch.zeros(8), 1, 1, 1.0, 1.0, True], 1, arch="dav-m200")


QUERY = HEADER + r"""
extern "C" __global__ __aicore__ void query(GM_ADDR out) {
    KTYPE
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out, 256);
    int64_t slot = ASCEND_IS_AIC ? GetBlockIdx() * 3 : GetBlockIdx() / GetTaskRation() * 3 + 1 + GetSubBlockIdx();
    go.SetValue(slot * 4 + 0, (float)GetBlockIdx());
    go.SetValue(slot * 4 + 1, (float)GetBlockNum());
    go.SetValue(slot * 4 + 2, (float)GetSubBlockIdx());
    go.SetValue(slot * 4 + 3, ASCEND_IS_AIC ? 100.0f : 200.0f);
}
"""


def test_block_queries_mix():
    out = torch.full((256,), -1.0)
    rep = run_source(QUERY.replace("KTYPE", "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);"), None, [out], 3)
    assert rep.kernel_type == "MIX_AIC_1_2"
    rows = out[: 9 * 4].view(9, 4).tolist()
    for b in range(3):
        assert rows[3 * b] == [b, 3, 0, 100]              # AIC of group b
        assert rows[3 * b + 1] == [2 * b, 3, 0, 200]      # AIV0: block idx 2b
        assert rows[3 * b + 2] == [2 * b + 1, 3, 1, 200]  # AIV1: block idx 2b+1


def test_block_queries_aiv_only_and_kernel_type_argument():
    out = torch.full((256,), -1.0)
    rep = run_source(QUERY.replace("KTYPE", ""), None, [out], 2, kernel_type="AIV_ONLY")
    assert rep.kernel_type == "AIV_ONLY"
    rows = out[: 6 * 4].view(6, 4).tolist()
    assert rows[1] == [0, 2, 0, 200] and rows[4] == [1, 2, 0, 200]
    # a launch type that contradicts KERNEL_TASK_TYPE_DEFAULT is reported
    rep = run(QUERY.replace("KTYPE", "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);"), [out], 1,
              kernel_type="AIV_ONLY")
    assert rep.errors and rep.errors[0]["kind"] == "invalid_param"


def test_each_entry_of_a_source_has_its_own_kernel_task_type():
    # One source, two entries (as a PrimFunc with two launches compiles): each entry's
    # KERNEL_TASK_TYPE_DEFAULT decides its own launch, not the first one in the file.
    src = (QUERY.replace("KTYPE", "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);")
           + QUERY.split(HEADER, 1)[1].replace("query(", "query_mix(")
           .replace("KTYPE", "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);"))
    assert [(k.name, k.task_type) for k in parse_kernels(src)] == [("query", "AIV_ONLY"),
                                                                    ("query_mix", "MIX_AIC_1_2")]
    out = torch.full((256,), -1.0)
    assert run_source(src, "query_mix", [out], 2).kernel_type == "MIX_AIC_1_2"
    assert out[:4].tolist() == [0, 2, 0, 100]  # the AIC of group 0 ran
    assert run_source(src, "query", [out], 2).kernel_type == "AIV_ONLY"


def test_in_process_mode_and_noncontiguous_tensor():
    big = torch.zeros(8, 2)
    out = big[:, 0]  # not contiguous
    assert not out.is_contiguous()
    run_source(SCAL, "scal", [out, 3, 0, 1.0, 1.0, False], 1, isolate=False)
    assert big[:3, 0].tolist() == [3.0, 0.0, 1.0] and big[:, 1].abs().sum() == 0


def test_raw_gm_pointer_writes_come_back_from_the_child():
    src = HEADER + r"""
extern "C" __global__ __aicore__ void raw(GM_ADDR out, GM_ADDR other) {
    ((__gm__ float*)out)[1000] = 42.0f;  // plain scalar store through a __gm__ pointer
}
"""
    out, other = torch.zeros(4096), torch.ones(4096)
    rep = run_source(src, None, [out, other], 1)
    assert out[1000] == 42.0 and out.sum() == 42.0 and other.sum() == 4096
    assert rep.ok


def test_report_views(tmp_path):
    src = HEADER + r"""
extern "C" __global__ __aicore__ void vadd(GM_ADDR x, GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz;
    pipe.InitBuffer(bx, 4096);
    pipe.InitBuffer(bz, 4096);
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * 1024, 1024);
    gz.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * 1024, 1024);
    LocalTensor<float> lx = bx.Get<float>(), lz = bz.Get<float>();
    DataCopy(lx, gx, 1024);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(lz, lx, 2.0f, 1024);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gz, lz, 1024);
}
"""
    x = torch.arange(4096, dtype=torch.float32)
    z = torch.zeros(4096)
    rep = run_source(src, None, [x, z], 4)
    assert torch.equal(z, 2 * x)
    d = rep.to_dict()
    json.dumps(d)
    assert d["ok"] and d["op_counts"] == {"V": 4, "MTE2": 4, "MTE3": 4}
    t = d["timing"]
    assert t["modelled"] and t["total_cycles"] > 0 and "not measured" in t["note"]
    assert set(t["busy_percent"]) == {"V", "MTE2", "MTE3"}
    assert all(0 < v <= 100 for v in t["busy_percent"].values())
    ops = [e["op"] for e in t["timeline"] if e["block"] == 0]
    assert ops == ["DataCopy", "Muls", "DataCopy"]
    b0 = [e for e in t["timeline"] if e["block"] == 0]
    assert b0[0]["end"] <= b0[1]["start"] and b0[1]["end"] <= b0[2]["start"]  # flags serialise them
    s = rep.summary()
    assert "OK" in s and "MODELLED" in s
    txt = rep.timeline_text(width=40)
    assert "MODELLED" in txt and "MTE2" in txt
    svg = tmp_path / "t.svg"
    rep.write_timeline_svg(str(svg))
    body = svg.read_text()
    assert body.startswith("<svg") and "MODELLED" in body and "Muls" in body


def test_trace_cap_keeps_counts_and_marks_timing(monkeypatch):
    out = torch.zeros(8)
    monkeypatch.setenv("TL_ASCEND_EMU_TRACE_CAP", "3")
    rep = run_source(SCAL, "scal", [out, 1, 2, 3.0, 4.0, True], 1)
    assert rep.op_counts == {"S": 5} and rep.op_counts_by_name == {"SetValue": 5}
    assert rep.timing["truncated_trace"] is True
    rep = run_source(SCAL, "scal", [out, 1, 2, 3.0, 4.0, True], 1, timing=False)
    assert rep.op_counts == {"S": 5} and rep.timing == {}
