"""Timing model: the documented assumptions table matches the code; replay semantics."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
from conftest import HEADER, ROOT, run

from ascend_backend.emulator import timing

GM, UB = 0, 1
MTE2, V, MTE3, S = 4, 1, 5, 0


def test_docs_table_matches_code():
    text = (ROOT / "docs" / "timing-model.md").read_text()
    rows = dict()
    for m in re.finditer(r"^\| `(\w+)` \| ([\d.]+) \| ([\d.]+) \|", text, re.M):
        rows[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    assert set(rows) == set(timing.ASSUMPTIONS["dav-c220"]) == set(timing.ASSUMPTIONS["dav-3510"])
    for k, (c220, a3510) in rows.items():
        assert timing.ASSUMPTIONS["dav-c220"][k] == c220, k
        assert timing.ASSUMPTIONS["dav-3510"][k] == a3510, k


def _trace(ops: list[list[int]]) -> dict:
    return {"names": ["copy", "add", "SetFlag", "WaitFlag"], "threads": [{"block": 0, "core": "AIV0", "ops": ops}]}


def _op(pipe, src, dst, nbytes, name=0, repeats=0):
    return [0, pipe, name, 1, src, dst, nbytes, 0, 0, repeats]


def test_flag_serialises_and_independent_pipes_overlap():
    arch = "dav-3510"
    load = _op(MTE2, GM, UB, 16384)
    add = _op(V, UB, UB, 16384, name=1, repeats=64)
    # without a flag the V op overlaps the load
    t, tl = timing.model(_trace([load, add]), arch, 1)
    assert tl[1][4] < tl[0][5]
    # SetFlag<MTE2_V> (record 1) / WaitFlag (record 2, depends on thread 0 record 1)
    ops = [load, [1, MTE2, 2, 2, MTE2, V, 0, 0, 0, 0], [2, V, 3, 3, MTE2, V, 0, 0, 0, 0, 0, 1], add]
    t, tl = timing.model(_trace(ops), arch, 1)
    (_, _, _, _, s0, e0, _), (_, _, _, _, s1, e1, _) = tl
    busy_load, lat = timing.op_cost(arch, MTE2, GM, UB, 16384, 0, 0, 0, timing.gm_rates(arch, 1))
    busy_add, _ = timing.op_cost(arch, V, UB, UB, 16384, 0, 0, 64)
    assert e0 - s0 == busy_load and e1 - s1 == busy_add
    assert s1 >= e0 + lat  # the flag fires once the load's data has landed
    assert t["total_cycles"] >= busy_load + lat + busy_add
    assert t["busy_percent"]["V"] == pytest.approx(100 * busy_add / t["total_cycles"])


def test_gm_latency_does_not_occupy_the_pipe():
    arch = "dav-3510"
    loads = [_op(MTE2, GM, UB, 4096) for _ in range(4)]
    t, tl = timing.model(_trace(loads), arch, 1)
    busy, lat = timing.op_cost(arch, MTE2, GM, UB, 4096, 0, 0, 0, timing.gm_rates(arch, 1))
    assert [e[4] for e in tl] == [1 + i * busy for i in range(4)]  # back to back
    assert t["total_cycles"] == 1 + 4 * busy + lat


def test_cost_formulas():
    a = timing.ASSUMPTIONS["dav-c220"]
    # all 72 cores busy: the chip bandwidth is shared; one core alone hits its own cap
    assert timing.gm_bytes_per_cycle("dav-c220") == pytest.approx(1600e9 / 72 / 1.8e9)
    assert timing.gm_bytes_per_cycle("dav-c220", 1) == a["core_hbm_read_bpc"]
    gm = timing.gm_bytes_per_cycle("dav-c220")
    assert timing.op_cost("dav-c220", MTE2, GM, UB, 4096, 0, 0, 0) == (a["gm_op_issue"] + -(-4096 // gm),
                                                                       a["gm_latency"])
    # L1 -> L0B is twice as slow on c220 as on 3510
    L1, L0B = 2, 4
    c220, _ = timing.op_cost("dav-c220", 3, L1, L0B, 32768, 0, 0, 0)
    c3510, _ = timing.op_cost("dav-3510", 3, L1, L0B, 32768, 0, 0, 0)
    assert c220 == 2 * c3510
    # a 128x128x64 fp16 Mmad: 8 x 8 output fractals x 64/16 K steps (= 1M MACs / 4096 per cycle)
    assert timing.op_cost("dav-3510", 2, 3, 5, 64 * 2, 64, 128 * 128 * 64, 64) == (256, 0)
    # an Mmad without the operand record: the 16-bit rate on the MAC count
    assert timing.op_cost("dav-3510", 2, 3, 5, 0, 0, 128 * 128 * 64, 0) == (a["cube_op_overhead"] + 256, 0)


M_PIPE, MTE1, FIX = 2, 3, 6
L1_, L0A, L0B_, L0C, BT, FB = 2, 3, 4, 5, 6, 7
CUBE_K = {"dav-c220": {8: 32, 16: 16, 32: 4}, "dav-3510": {4: 64, 8: 32, 16: 16, 32: 1}}  # mmad_perf README


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_mmad_cost_follows_the_mmad_perf_formula(arch):
    a = timing.ASSUMPTIONS[arch]
    for bits, cube_k in CUBE_K[arch].items():
        # the table's MACs/cycle is one 16x16 output fractal times cube_k per cycle
        assert a[f"cube_macs_per_cycle_{bits}bit"] == 16 * 16 * cube_k
        for m, n, k in [(128, 128, 128), (130, 20, 100), (16, 16, 64), (256, 64, 512)]:
            fractals = -(-m // 16) * -(-n // 16)
            busy, lat = timing.op_cost(arch, M_PIPE, L0A, L0C, k * bits // 8, k, m * n * k, fractals)
            assert lat == 0
            assert busy == a["cube_op_overhead"] + fractals * -(-k // cube_k), (bits, m, n, k)


def test_mmad_dtype_ratios():
    def cyc(arch, bits, m=128, n=128, k=256):
        return timing.op_cost(arch, M_PIPE, L0A, L0C, k * bits // 8, k, m * n * k, (m // 16) * (n // 16))[0]

    a = timing.ASSUMPTIONS["dav-3510"]
    # dav-3510: fp32 is 4096/256 = 16x slower than fp16, int8 2x faster, mxfp4 4x faster
    assert cyc("dav-3510", 32) == 16 * cyc("dav-3510", 16)
    assert cyc("dav-3510", 32) / cyc("dav-3510", 16) == a["cube_macs_per_cycle_16bit"] / a["cube_macs_per_cycle_32bit"]
    assert cyc("dav-3510", 8) * 2 == cyc("dav-3510", 16)
    assert cyc("dav-3510", 4) * 4 == cyc("dav-3510", 16)
    # dav-c220: fp32 4x slower than fp16
    assert cyc("dav-c220", 32) == 4 * cyc("dav-c220", 16)


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_load_data_cost_per_path(arch):
    a = timing.ASSUMPTIONS[arch]
    nbytes = 128 * 64 * 2
    # (busy = bytes / bandwidth, then the path's first-instruction latency until the result is visible)
    for dst, bw, lat in [(L0A, "l1_to_l0a_bpc", "l1_to_l0a_latency"), (L0B_, "l1_to_l0b_bpc", "l1_to_l0b_latency")]:
        busy = -(-nbytes // int(a[bw]))
        assert timing.op_cost(arch, MTE1, L1_, dst, nbytes, 0, 0, 0, name="LoadData") == (busy, a[lat])
        assert timing.op_cost(arch, MTE1, L1_, dst, nbytes, 0, 0, 0,
                              name="LoadDataWithTranspose") == (busy, a["load_transpose_latency"])
        assert timing.op_cost(arch, MTE1, L1_, dst, nbytes, 0, 0, 0, name="LoadData3DV2") == (busy, a["load_3d_latency"])
    assert a["l1_to_bt_bpc"] == a["l1_to_fb_bpc"] == 32
    assert timing.op_cost(arch, MTE1, L1_, BT, 1024, 0, 0, 0) == (1024 // 32, a["l1_to_bt_latency"])
    assert timing.op_cost(arch, FIX, L1_, FB, 1024, 0, 0, 0) == (1024 // 32, a["l1_to_fb_latency"])


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_load_data_latency_is_paid_once_per_burst(arch):
    # four back-to-back LoadData, then SetFlag<MTE1_M> / WaitFlag and an Mmad: the transfers stream
    # at the bandwidth and the Mmad starts one latency after the last (load_data_perf's costing of
    # a loop of LoadData: latency + all bytes / bandwidth)
    a = timing.ASSUMPTIONS[arch]
    load = [0, MTE1, 0, 1, L1_, L0A, 2048, 0, 0, 0]
    mmad = [0, M_PIPE, 1, 2, L0A, L0C, 64 * 2, 64, 64 * 64 * 64, 16]
    ops = [load, load, load, load, [1, MTE1, 2, 3, MTE1, M_PIPE, 0, 0, 0, 0],
           [2, M_PIPE, 3, 4, MTE1, M_PIPE, 0, 0, 0, 0, 0, 4], mmad]
    tr = {"names": ["LoadData", "Mmad", "SetFlag", "WaitFlag"], "threads": [{"block": 0, "core": "AIC", "ops": ops}]}
    t, tl = timing.model(tr, arch, 1)
    per = 2048 // int(a["l1_to_l0a_bpc"])
    starts = [e[4] for e in tl[:4]]
    assert [s - starts[0] for s in starts] == [0, per, 2 * per, 3 * per]
    assert tl[4][4] == starts[0] + 4 * per + a["l1_to_l0a_latency"]
    assert t["busy_percent"]["MTE1"] == pytest.approx(100 * 4 * per / t["total_cycles"])


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_fixpipe_cost_per_path(arch):
    a = timing.ASSUMPTIONS[arch]
    e = 128 * 128  # output elements
    lat = a["fixpipe_latency"]
    # 64 output elements per cycle x destination size, at most 128 B/cycle (fixpipe_perf README)
    for dsz, bpc in [(2, 128), (1, 64), (4, 128)]:
        assert bpc == min(64 * dsz, 128)
        assert timing.op_cost(arch, FIX, L0C, L1_, e * dsz, e, 0, 0) == (e * dsz // bpc, lat)
    if arch == "dav-3510":  # L0C -> UB: fp32 128 B/cycle, 256 with both AIVs (dual destination)
        assert timing.op_cost(arch, FIX, L0C, UB, e * 4, e, 0, 0) == (e * 4 // 128, lat)
        assert timing.op_cost(arch, FIX, L0C, UB, e * 4, e, 0, 2) == (e * 4 // 256, lat)
    # to GM: the core's GM write rate, bounded by the Fixpipe output rate (int8 out: 64 B/cycle)
    r = timing.gm_rates(arch, 1, 1.0)
    busy, glat = timing.op_cost(arch, FIX, L0C, GM, e, e, 0, 0, r)
    assert glat == a["gm_latency"] and busy == a["gm_op_issue"] + -(-e // min(r.write, 64))
    busy, _ = timing.op_cost(arch, FIX, L0C, GM, 4 * e, e, 0, 0, r)
    assert busy == a["gm_op_issue"] + -(-4 * e // min(r.write, 128))


def test_l2_term():
    a = timing.ASSUMPTIONS["dav-c220"]
    # every read a miss: the HBM rate; every read a hit: the core's L2 rate (its chip share is larger)
    assert timing.gm_rates("dav-c220", 24, 1.0).read == pytest.approx(a["core_hbm_read_bpc"])
    assert timing.gm_rates("dav-c220", 24, 0.0).read == pytest.approx(a["core_l2_read_bpc"])
    # all 72 cores busy: the chip's L2 bandwidth (3.5x HBM) caps the hit rate below the core's own
    assert timing.gm_rates("dav-c220", None, 0.0).read == pytest.approx(3.5 * 1600 / 1.8 / 72)
    half = timing.gm_rates("dav-c220", 24, 0.5).read
    assert half == pytest.approx(1 / (0.5 / a["core_hbm_read_bpc"] + 0.5 / a["core_l2_read_bpc"]))
    # writes land in L2: the core's L2 write rate, or its L2 share when every core writes
    assert timing.gm_rates("dav-c220", 24, 0.0).write == a["core_l2_write_bpc"]
    assert timing.gm_rates("dav-c220", None, 0.0).write == pytest.approx(3.5 * 1600 / 1.8 / 72)
    # miss fraction: distinct over all; beyond the L2 capacity the hits shrink in proportion
    assert timing.l2_miss_fraction("dav-c220", 100, 25) == pytest.approx(0.25)
    big = 2 * a["l2_bytes"]
    assert timing.l2_miss_fraction("dav-c220", 4 * big, big) == pytest.approx(1 - 0.75 * 0.5)
    assert timing.l2_miss_fraction("dav-c220", 0, 0) == 1.0
    # re-reads that come soon (a reuse distance inside L2) hit however large the launch's reads
    assert timing.l2_miss_fraction("dav-c220", 4 * big, big, reuse_bytes=a["l2_bytes"] / 2) == pytest.approx(0.25)
    assert timing.l2_miss_fraction("dav-c220", 4 * big, big, reuse_bytes=4 * a["l2_bytes"]) == \
        pytest.approx(1 - 0.75 * 0.25)


def test_repeated_reads_hit_l2_in_the_model():
    load = _op(MTE2, GM, UB, 65536)
    tr = _trace([load, load, load, load])
    cold = timing.model(tr, "dav-3510", 1)[0]
    warm = timing.model(tr, "dav-3510", 1, gm_reads={"bytes": 4 * 65536, "unique_bytes": 65536})[0]
    assert warm["l2_miss_fraction"] == pytest.approx(0.25) and cold["l2_miss_fraction"] == 1.0
    assert warm["total_cycles"] < cold["total_cycles"]
    assert timing.model(tr, "dav-3510", 1, miss_fraction=1.0)[0]["total_cycles"] == cold["total_cycles"]


def test_hbm_floor_bounds_streaming_launches():
    # 64 AIV blocks each writing 64 KB: per op the writes go at the L2 rate, but the launch cannot
    # beat the chip's HBM taking every written byte
    tr = {"names": ["copy"], "threads": [{"block": b, "core": "AIV0", "ops": [_op(MTE3, UB, GM, 65536)]}
                                         for b in range(64)]}
    t = timing.model(tr, "dav-c220", 64)[0]
    floor = math.ceil(64 * 65536 / (1600 / 1.8))
    assert t["hbm_floor_cycles"] == floor and t["total_cycles"] == floor
    assert max(t["block_cycles"].values()) < floor


def test_blocks_are_list_scheduled():
    ops = [_op(MTE2, GM, UB, 16384)]
    threads = [{"block": b, "core": "AIV0", "ops": ops} for b in range(3)]
    tr = {"names": ["copy"], "threads": threads}
    t = timing.model(tr, "dav-3510", 3)[0]
    assert len(set(t["block_cycles"].values())) == 1
    one = t["block_cycles"]["0"]
    assert t["total_cycles"] == one  # 3 AIV blocks run side by side on a 64-AIV chip
    saved = timing.ASSUMPTIONS["dav-3510"]["aiv_cores"]
    timing.ASSUMPTIONS["dav-3510"]["aiv_cores"] = 1
    try:
        assert timing.model(tr, "dav-3510", 3)[0]["total_cycles"] == 3 * one
    finally:
        timing.ASSUMPTIONS["dav-3510"]["aiv_cores"] = saved


def test_module_docstring_says_modelled():
    assert "MODELLED" in (Path(timing.__file__).read_text())


REREAD = HEADER + r"""
extern "C" __global__ __aicore__ void reread(GM_ADDR x, GM_ADDR y) {
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 1024);
    gy.SetGlobalBuffer((__gm__ float*)y, 256);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    LocalTensor<float> t = buf.Get<float>();
    // every block reads x[0:256) twice and its own quarter x[256*b : 256*(b+1)) once
    DataCopy(t, gx, 256);
    PipeBarrier<PIPE_MTE2>();
    DataCopy(t, gx, 256);
    PipeBarrier<PIPE_MTE2>();
    DataCopy(t, gx[256 * GetBlockIdx()], 256);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    if (GetBlockIdx() == 0) DataCopy(gy, t, 256);
}
"""


def test_emulator_counts_distinct_gm_reads():
    rep = run(REREAD, [torch.zeros(1024), torch.zeros(256)], block_dim=4)
    assert rep.ok, rep
    # 4 blocks x 3 reads of 1 KB; distinct: x[0:256) once, then the quarters of blocks 1-3
    assert rep.gm_reads == {"bytes": 12 * 1024, "unique_bytes": 4 * 1024}
    assert rep.timing["l2_miss_fraction"] == pytest.approx(4 / 12)


REWRITE = HEADER + r"""
extern "C" __global__ __aicore__ void rewrite(GM_ADDR x, GM_ADDR y) {
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 256);
    gy.SetGlobalBuffer((__gm__ float*)y, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, gx, 256);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    // each block writes its quarter of y 8 times (a workspace tile rewritten every step)
    for (int i = 0; i < 8; ++i) {
        DataCopy(gy[256 * GetBlockIdx()], t, 256);
        PipeBarrier<PIPE_MTE3>();
    }
}
"""


def test_emulator_counts_distinct_gm_writes_and_the_hbm_floor_counts_them_once():
    x = torch.arange(256, dtype=torch.float32)
    y = torch.zeros(1024)
    rep = run(REWRITE, [x, y], block_dim=4)
    assert rep.ok, rep
    assert torch.equal(y, x.repeat(4))
    assert rep.gm_writes == {"bytes": 4 * 8 * 1024, "unique_bytes": 4 * 1024}
    a = timing.ASSUMPTIONS[rep.arch]
    chip = a["chip_gm_bandwidth_gbps"] / a["clock_ghz"]
    f = rep.timing["l2_miss_fraction"]
    assert rep.timing["hbm_floor_cycles"] == math.ceil((4 * 1024 * f + 4 * 1024) / chip)
    # without the distinct count every rewrite would go to HBM
    trace = rep._trace
    t = timing.model(trace, rep.arch, 4, rep.gm_reads)[0]
    assert t["hbm_floor_cycles"] == math.ceil((4 * 1024 * f + 4 * 8 * 1024) / chip)


WRITE_THEN_READ = HEADER + r"""
extern "C" __global__ __aicore__ void write_then_read(GM_ADDR x, GM_ADDR ws, GM_ADDR y) {
    GlobalTensor<float> gx, gw, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 256);
    gw.SetGlobalBuffer((__gm__ float*)ws, 1024);
    gy.SetGlobalBuffer((__gm__ float*)y, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<float> t = buf.Get<float>();
    // each block reads x (first reads), writes its quarter of a workspace and reads it back twice
    DataCopy(t, gx, 256);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(gw[256 * GetBlockIdx()], t, 256);
    SetFlag<HardEvent::MTE3_MTE2>(0);
    WaitFlag<HardEvent::MTE3_MTE2>(0);
    DataCopy(t, gw[256 * GetBlockIdx()], 256);
    PipeBarrier<PIPE_MTE2>();
    DataCopy(t, gw[256 * GetBlockIdx()], 256);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(gy[256 * GetBlockIdx()], t, 256);
}
"""


def test_reading_back_bytes_the_launch_wrote_is_not_a_first_read():
    # the write left them in L2: only x's 1 KB is a compulsory miss, not the workspace's 4 KB
    x = torch.arange(256, dtype=torch.float32)
    rep = run(WRITE_THEN_READ, [x, torch.zeros(1024), torch.zeros(1024)], block_dim=4)
    assert rep.ok, rep
    assert rep.gm_reads == {"bytes": 12 * 1024, "unique_bytes": 1024}
    assert rep.timing["l2_miss_fraction"] == pytest.approx(1 / 12)


CUBE_DTYPES = HEADER + r"""
// One 128x128x128 Mmad per operand type, then a Fixpipe L0C -> L1 (fp32 -> fp16), each after a
// PIPE_ALL barrier so that every op starts on an idle core.
template <class A, class C>
__aicore__ inline void mm(LocalTensor<C> c, TBuf<TPosition::A2>& a2, TBuf<TPosition::B2>& b2) {
    Mmad(c, a2.Get<A>(), b2.Get<A>(), MmadParams(128, 128, 128, 0, false, true));
    PipeBarrier<PIPE_ALL>();
}
extern "C" __global__ __aicore__ void cube_dtypes(GM_ADDR unused) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    TPipe pipe;
    TBuf<TPosition::A1> a1; TBuf<TPosition::A2> a2; TBuf<TPosition::B2> b2; TBuf<TPosition::CO1> c1;
    pipe.InitBuffer(a1, 128 * 128 * 2); pipe.InitBuffer(a2, 128 * 128 * 4);
    pipe.InitBuffer(b2, 128 * 128 * 4); pipe.InitBuffer(c1, 128 * 128 * 4);
    mm<half>(c1.Get<float>(), a2, b2);
    mm<float>(c1.Get<float>(), a2, b2);
    mm<int8_t>(c1.Get<int32_t>(), a2, b2);
#if defined(EMU_ARCH_C220)
    FixpipeParamsV220 fp(128, 128, 128, 128, false);
#else
    FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fp(128, 128, 128, 128);
#endif
    fp.quantPre = QuantMode_t::F322F16;
    Fixpipe<half, float, CFG_ROW_MAJOR>(a1.Get<half>(), c1.Get<float>(), fp);
}
"""


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_cube_ops_report_their_dtype_to_the_model(arch):
    rep = run(CUBE_DTYPES, [torch.zeros(8)], arch=arch)
    assert rep.ok, rep.summary()
    a = timing.ASSUMPTIONS[arch]
    ops = [e for e in rep.to_dict()["timing"]["timeline"] if e["pipe"] in ("M", "FIX")]
    assert [e["op"] for e in ops] == ["Mmad", "Mmad", "Mmad", "Fixpipe"]
    fp16, fp32, int8, fix = (e["end"] - e["start"] for e in ops)
    fractals = 8 * 8
    for cyc, bits in ((fp16, 16), (fp32, 32), (int8, 8)):
        cube_k = a[f"cube_macs_per_cycle_{bits}bit"] // 256
        assert cyc == a["cube_op_overhead"] + fractals * 128 // cube_k, bits
    # documented ratios: fp32 vs fp16 = 4096/1024 (dav-c220) or 4096/256 (dav-3510); int8 twice as fast
    assert fp32 == fp16 * (4 if arch == "dav-c220" else 16)
    assert int8 * 2 == fp16
    # Fixpipe fp32 -> fp16 into L1: 64 output elements per cycle, then its latency (nothing follows it)
    assert fix == 128 * 128 // 64
    assert rep.timing["total_cycles"] == ops[-1]["end"] + a["fixpipe_latency"]


# ---- GM bandwidth shared by the cores that transfer (timing.share_bandwidth) -----------------
L1 = 2


def _mixed_launch(blocks: int, aic: list, aiv0: list, aiv1: list) -> dict:
    """``blocks`` mix blocks (1 AIC + 2 AIVs), every block running the same ops."""
    threads = []
    for b in range(blocks):
        threads += [{"block": b, "core": "AIC", "ops": aic}, {"block": b, "core": "AIV0", "ops": aiv0},
                    {"block": b, "core": "AIV1", "ops": aiv1}]
    return {"names": ["copy", "add"], "threads": threads}


def _durations(tl: list, block: int = 0) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for b, core, _pipe, _op, s, e, _line in tl:
        if b == block:
            out.setdefault(core, []).append(e - s)
    return out


def test_share_bandwidth_splits_by_bytes_up_to_the_cap():
    # equal traffic: exactly the equal share, capped or not
    assert timing.share_bandwidth(100.0, [7.0, 7.0, 7.0], 1000.0) == [100.0 / 3] * 3
    assert timing.share_bandwidth(100.0, [7.0, 7.0, 7.0], 20.0) == [20.0] * 3
    # proportional, the capped core's surplus water-filled to the others by their bytes (8:6:1 of
    # 150 is 80/60/10; 80 > 70, so the 10 left go 6:1), the light core floored at the equal share
    got = timing.share_bandwidth(150.0, [8.0, 6.0, 1.0], 70.0)
    assert got == pytest.approx([70.0, 80.0 * 6 / 7, 50.0])
    # a core that moves no bytes keeps the equal share (it has nothing to use it on)
    assert timing.share_bandwidth(90.0, [5.0, 0.0, 0.0], 1000.0) == [90.0, 30.0, 30.0]
    assert timing.share_bandwidth(90.0, [5.0, 0.0, 0.0], 40.0) == [40.0, 30.0, 30.0]


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_equal_traffic_gives_the_equal_shares(arch):
    # every core of a mixed launch moves the same bytes: each gets chip / (blocks x 3), as before
    a = timing.ASSUMPTIONS[arch]
    n = int(a["groups"])
    load = _op(MTE2, GM, UB, 65536)
    store = _op(MTE3, UB, GM, 8192)
    tr = _mixed_launch(n, [_op(MTE2, GM, L1, 65536), _op(FIX, L0C, GM, 8192)], [load, store], [load, store])
    t, tl = timing.model(tr, arch, n, miss_fraction=0.3)
    old = timing.gm_rates(arch, 3 * n, 0.3)
    assert t["gm_read_bytes_per_cycle_by_core"] == {"AIC": old.read, "AIV0": old.read, "AIV1": old.read}
    assert t["gm_bytes_per_cycle_per_core"] == old.read and t["gm_write_bytes_per_cycle_per_core"] == old.write
    d = _durations(tl)
    busy, _ = timing.op_cost(arch, MTE2, GM, UB, 65536, 0, 0, 0, old)
    assert d["AIC"][0] == d["AIV0"][0] == d["AIV1"][0] == busy


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_only_the_aic_reads_in_a_mixed_launch(arch, monkeypatch):
    # the AIC streams, the AIVs only compute: the AIC gets min(its own rate, chip / AICs running),
    # not chip / (AICs + AIVs)
    a = timing.ASSUMPTIONS[arch]
    n = int(a["groups"])
    chip = a["chip_gm_bandwidth_gbps"] / a["clock_ghz"]
    vadd = _op(V, UB, UB, 16384, name=1, repeats=64)
    tr = _mixed_launch(n, [_op(MTE2, GM, L1, 65536)], [vadd], [vadd])
    t, tl = timing.model(tr, arch, n, miss_fraction=1.0)
    assert t["gm_bytes_per_cycle_per_core"] == min(a["core_hbm_read_bpc"], chip / n) == a["core_hbm_read_bpc"]
    assert t["gm_bytes_per_cycle_per_core"] > 2 * timing.gm_rates(arch, 3 * n, 1.0).read  # was chip / 3n
    assert _durations(tl)["AIC"] == [a["gm_op_issue"] + math.ceil(65536 / a["core_hbm_read_bpc"])]
    # all hits: the core's L2 rate (its part of the chip L2 bandwidth is larger)
    t = timing.model(tr, arch, n, miss_fraction=0.0)[0]
    assert t["gm_bytes_per_cycle_per_core"] == min(a["core_l2_read_bpc"], 3.5 * chip / n) == a["core_l2_read_bpc"]
    # a core faster than its part of the chip: the part binds, chip / AICs
    monkeypatch.setitem(a, "core_hbm_read_bpc", 1000)
    t = timing.model(tr, arch, n, miss_fraction=1.0)[0]
    assert t["gm_bytes_per_cycle_per_core"] == pytest.approx(chip / n)
    # fewer blocks than groups: the chip divides among those running
    t = timing.model(_mixed_launch(4, [_op(MTE2, GM, L1, 65536)], [vadd], [vadd]), arch, 4, miss_fraction=1.0)[0]
    assert t["gm_bytes_per_cycle_per_core"] == pytest.approx(chip / 4)


def test_proportional_split_in_a_mixed_launch():
    # 20 blocks: AIC 1 MB, AIV0 512 KB, AIV1 a 64-byte scale. The AIC and AIV0 split the block's
    # HBM part 2:1, the AIC held to its cap and AIV0 taking the rest; AIV1 still gets the equal
    # share for its one short transfer, not a proportional trickle
    arch = "dav-3510"
    a = timing.ASSUMPTIONS[arch]
    n = 20
    pool = a["chip_gm_bandwidth_gbps"] / a["clock_ghz"] / n  # 48.5 B/cycle
    aic = [_op(MTE2, GM, L1, 65536)] * 16
    aiv0 = [_op(MTE2, GM, UB, 65536)] * 8
    aiv1 = [_op(MTE2, GM, UB, 64)]
    t, tl = timing.model(_mixed_launch(n, aic, aiv0, aiv1), arch, n, miss_fraction=1.0)
    rates = t["gm_read_bytes_per_cycle_by_core"]
    want = timing.share_bandwidth(pool, [16 * 65536.0, 8 * 65536.0, 64.0], a["core_hbm_read_bpc"])
    assert [rates["AIC"], rates["AIV0"], rates["AIV1"]] == pytest.approx(want)
    # 48.5 x 2/3 = 32.3 > 27: the AIC is capped and AIV0 takes the rest, 48.5 - 27 = 21.5
    assert rates["AIC"] == a["core_hbm_read_bpc"]
    assert rates["AIV0"] == pytest.approx(pool - a["core_hbm_read_bpc"], rel=1e-3)
    assert rates["AIV1"] == pytest.approx(pool / 3)
    assert t["gm_bytes_per_cycle_per_core"] == rates["AIC"]  # the core that reads the most
    d = _durations(tl)
    assert d["AIV1"] == [a["gm_op_issue"] + math.ceil(64 / (pool / 3))]
    assert d["AIV0"][0] == a["gm_op_issue"] + math.ceil(65536 / rates["AIV0"])
    # together the AIC and AIV0 draw the block's HBM part, never more: the floors do not bind
    assert t["total_cycles"] > t["hbm_floor_cycles"] and t["total_cycles"] > t["l2_floor_cycles"]


def test_chip_floors_bind_when_per_core_shares_exceed_the_chip():
    # HBM floor: 64 AIV blocks each writing 64 KB (test_hbm_floor_bounds_streaming_launches);
    # L2 floor: a core reading GM on two pipes at once (synthetic) would draw twice its share of
    # the chip's L2; the launch still cannot beat the chip's L2 serving every hit
    arch = "dav-3510"
    a = timing.ASSUMPTIONS[arch]
    n = int(a["aic_cores"])
    ops = [_op(MTE2, GM, L1, 65536), _op(MTE1, GM, L1, 65536)] * 8
    tr = {"names": ["copy"], "threads": [{"block": b, "core": "AIC", "ops": ops} for b in range(n)]}
    t = timing.model(tr, arch, n, miss_fraction=0.0)[0]
    l2 = a["l2_to_hbm_bandwidth_ratio"] * a["chip_gm_bandwidth_gbps"] / a["clock_ghz"]
    floor = math.ceil(n * 16 * 65536 / l2)
    assert t["l2_floor_cycles"] == floor and t["total_cycles"] == floor
    assert max(t["block_cycles"].values()) < floor
    assert t["hbm_floor_cycles"] == 0  # every read a hit, nothing written
    # one pipe per core: the shares hold the chip by themselves, the floor does not bind
    one = {"names": ["copy"], "threads": [{"block": b, "core": "AIC", "ops": ops[::2] * 2} for b in range(n)]}
    t = timing.model(one, arch, n, miss_fraction=0.0)[0]
    assert t["total_cycles"] > t["l2_floor_cycles"] == floor


def test_blocks_running_is_the_time_weighted_count_over_each_run():
    # block 0 runs 0..10 with block 1 beside it for 0..2; block 2 runs alone, 10..14
    start = {0: 0, 1: 0, 2: 10}
    dur = {0: 10, 1: 2, 2: 4}
    got = timing._blocks_running(start, dur)
    assert got == {0: pytest.approx((2 * 2 + 8 * 1) / 10), 1: 2.0, 2: 1.0}


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_a_partial_last_wave_shares_the_chip_among_fewer_blocks(arch, monkeypatch):
    # the part of the chip binds (the cores' own rates raised): the 4 blocks of the second wave
    # each get chip / 4, the first wave's blocks chip / groups
    a = timing.ASSUMPTIONS[arch]
    monkeypatch.setitem(a, "core_hbm_read_bpc", 10_000)
    n = int(a["groups"])
    vadd = _op(V, UB, UB, 16384, name=1, repeats=64)
    tr = _mixed_launch(n + 4, [_op(MTE2, GM, L1, 65536)], [vadd], [vadd])
    t = timing.model(tr, arch, n + 4, miss_fraction=1.0)[0]
    first, last = t["block_cycles"]["0"], t["block_cycles"][str(n)]
    alone = timing.model(_mixed_launch(4, [_op(MTE2, GM, L1, 65536)], [vadd], [vadd]), arch, 4,
                         miss_fraction=1.0)[0]["block_cycles"]["0"]
    full = timing.model(_mixed_launch(n, [_op(MTE2, GM, L1, 65536)], [vadd], [vadd]), arch, n,
                        miss_fraction=1.0)[0]["block_cycles"]["0"]
    assert first == full and last == alone and last < first
    assert t["total_cycles"] == first + last
