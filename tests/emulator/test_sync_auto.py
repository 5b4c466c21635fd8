"""bisheng's automatic synchronisation (auto_sync, the default of run_source), the TPipe/TQue
framework's events and the overlapping-copy rule, per the sync key-features page
(docs/zh/api/SIMD-API/基础API/同步控制/核内同步/关键特性说明.md) and the PipeBarrier page.

Each rule has a right program (no report) and a planted bug (reported). Planted bugs that
bisheng's default would fix by itself are checked with auto_sync=False, as generated code is."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER, line_of, run

from ascend_backend.emulator import run_source

ARCHS = ["dav-3510", "dav-c220"]

SRC = HEADER + r"""
// Vector chain written the way bisheng's default allows: no PipeBarrier<PIPE_V> between
// dependent vector ops (c220), no V_S / S_V flags around GetValue / SetValue.
extern "C" __global__ __aicore__ void vchain(GM_ADDR x, GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bt, bw, br;
    pipe.InitBuffer(bx, 256 * sizeof(float));
    pipe.InitBuffer(bt, 256 * sizeof(float));
    pipe.InitBuffer(bw, 256 * sizeof(float));
    pipe.InitBuffer(br, 8 * sizeof(float));
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, 256);
    gz.SetGlobalBuffer((__gm__ float*)z, 256);
    LocalTensor<float> lx = bx.Get<float>(), lt = bt.Get<float>(), lw = bw.Get<float>(), lr = br.Get<float>();
    DataCopy(lx, gx, 256);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(lt, lx, 2.0f, 256);      // @V1
    Adds(lt, lt, 1.0f, 256);      // @V2 reuses V1's output: c220 needs PIPE_V order
    ReduceSum(lr, lt, lw, 256);   // @RED
    float sum = lr.GetValue(0);   // @GET V -> S
    lt.SetValue(0, sum);          // @SET S after the vector reads of lt
    Muls(lt, lt, 0.5f, 256);      // @V3 S -> V
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gz, lt, 256);
}

// The sync bisheng puts before a dependent GetValue stalls the scalar unit until every vector
// op issued so far is done, so the copy-out after it needs no V_MTE3 flag. Without the
// dependency (dep = 0) bisheng inserts nothing and the copy-out races.
extern "C" __global__ __aicore__ void trans(GM_ADDR x, GM_ADDR z, GM_ADDR s, uint32_t dep) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bt;
    pipe.InitBuffer(bx, 64 * sizeof(float));
    pipe.InitBuffer(bt, 64 * sizeof(float));
    GlobalTensor<float> gx, gz, gs;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    gz.SetGlobalBuffer((__gm__ float*)z, 64);
    gs.SetGlobalBuffer((__gm__ float*)s, 8);
    LocalTensor<float> lx = bx.Get<float>(), lt = bt.Get<float>();
    DataCopy(lx, gx, 64);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(lt, lx, 3.0f, 64);                            // @MUL
    float v = dep ? lt.GetValue(1) : lx.GetValue(1);   // MTE2 -> S when dep = 0
    DataCopy(gz, lt, 64);                              // @OUT
    gs.SetValue(0, v);
}

// GetReduceRepeatSumSpr reads the register ReduceSum set: bisheng syncs V -> S before it, so
// the copy-out after it needs no V_MTE3 flag (only with auto-sync).
extern "C" __global__ __aicore__ void spr(GM_ADDR x, GM_ADDR z, GM_ADDR s) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bw, br;
    pipe.InitBuffer(bx, 256 * sizeof(float));
    pipe.InitBuffer(bw, 256 * sizeof(float));
    pipe.InitBuffer(br, 8 * sizeof(float));
    GlobalTensor<float> gx, gz, gs;
    gx.SetGlobalBuffer((__gm__ float*)x, 256);
    gz.SetGlobalBuffer((__gm__ float*)z, 8);
    gs.SetGlobalBuffer((__gm__ float*)s, 8);
    LocalTensor<float> lx = bx.Get<float>(), lw = bw.Get<float>(), lr = br.Get<float>();
    DataCopy(lx, gx, 256);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    ReduceSum(lr, lx, lw, 256);                 // @SRED
    float v = GetReduceRepeatSumSpr<float>();
    DataCopy(gz, lr, 8);                        // @SOUT
    gs.SetValue(0, v);
}

// GlobalTensor::SetValue is not among the scalar calls auto-sync covers.
extern "C" __global__ __aicore__ void gmset(GM_ADDR x, GM_ADDR z, uint32_t sync) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 64 * sizeof(float));
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    gz.SetGlobalBuffer((__gm__ float*)z, 64);
    LocalTensor<float> t = b.Get<float>();
    gx.SetValue(0, 42.0f);   // @SETGM
    if (sync) { SetFlag<HardEvent::S_MTE2>(0); WaitFlag<HardEvent::S_MTE2>(0); }
    DataCopy(t, gx, 64);     // @LOAD
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(gz, t, 64);
}

// V <-> MTE2 / MTE3 are never automatic: the load -> compute flag is planted missing.
extern "C" __global__ __aicore__ void nomte(GM_ADDR x, GM_ADDR z, uint32_t sync) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by;
    pipe.InitBuffer(bx, 64 * sizeof(float));
    pipe.InitBuffer(by, 64 * sizeof(float));
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    gz.SetGlobalBuffer((__gm__ float*)z, 64);
    LocalTensor<float> lx = bx.Get<float>(), ly = by.Get<float>();
    DataCopy(lx, gx, 64);    // @NLOAD
    if (sync) { SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0); }
    Adds(ly, lx, 1.0f, 64);  // @NADD
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gz, ly, 64);
}

// Two copies of one MTE pipe with overlapping destinations (PipeBarrier page): bit 0 of
// `barriers` puts PipeBarrier<PIPE_MTE2> between the UB loads, bit 1 PipeBarrier<PIPE_MTE3>
// between the GM stores.
extern "C" __global__ __aicore__ void overlap(GM_ADDR x, GM_ADDR z, uint32_t barriers) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 128 * sizeof(float));
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, 128);
    gz.SetGlobalBuffer((__gm__ float*)z, 128);
    LocalTensor<float> t = b.Get<float>();
    DataCopy(t, gx, 64);              // @L1 UB bytes [0, 256)
    if (barriers & 1) PipeBarrier<PIPE_MTE2>();
    DataCopy(t[32], gx[64], 64);      // @L2 UB bytes [128, 384)
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(gz, t, 64);              // @S1 z[0, 64)
    if (barriers & 2) PipeBarrier<PIPE_MTE3>();
    DataCopy(gz[32], t[32], 64);      // @S2 z[32, 96)
}

// The TPipe reuse form: one TPipe after another over the same memory. how: 0 Destroy (ends
// with PIPE_ALL), 1 Reset (waits for the pending FreeTensor events) and the same TPipe again,
// 2 DestroyWithoutPipeAll, 3 a second TPipe while the first is alive (not allowed).
__aicore__ inline void stage(GM_ADDR x, GM_ADDR z, TPipe* pipe, float s) {
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, 128);
    gz.SetGlobalBuffer((__gm__ float*)z, 128);
    TQue<TPosition::VECIN, 1> in;
    TQue<TPosition::VECOUT, 1> out;
    pipe->InitBuffer(in, 1, 128 * sizeof(float));
    pipe->InitBuffer(out, 1, 128 * sizeof(float));
    LocalTensor<float> a = in.AllocTensor<float>();
    DataCopy(a, gx, 128);
    in.EnQue(a);
    a = in.DeQue<float>();
    LocalTensor<float> r = out.AllocTensor<float>();
    Muls(r, a, s, 128);
    out.EnQue<float>(r);
    in.FreeTensor(a);
    r = out.DeQue<float>();
    DataCopy(gz, r, 128);
    out.FreeTensor(r);
}
extern "C" __global__ __aicore__ void reuse(GM_ADDR x, GM_ADDR z, uint32_t how) {
    TPipe p1;
    stage(x, z, &p1, 3.0f);
    if (how == 1) {
        p1.Reset();
        stage(x, z, &p1, 5.0f);
        return;
    }
    if (how == 0) p1.Destroy();
    else if (how == 2) p1.DestroyWithoutPipeAll();
    TPipe p2;  // @P2
    stage(x, z, &p2, 5.0f);
    p2.Destroy();
}

// TQueBind data paths: GM -> VECIN, VECOUT -> GM (the TQue forms spelled as binds) and
// VECIN -> VECOUT (MTE2 -> MTE3, a copy without vector work). bug: the copy-through reads
// the buffer before DeQue, so nothing orders the store after the load.
extern "C" __global__ __aicore__ void binds(GM_ADDR x, GM_ADDR z, GM_ADDR w, uint32_t bug) {
    TPipe pipe;
    TQueBind<TPosition::GM, TPosition::VECIN, 1> in;
    TQueBind<TPosition::VECOUT, TPosition::GM, 1> out;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> thru;
    pipe.InitBuffer(in, 2, 256 * sizeof(float));
    pipe.InitBuffer(out, 2, 256 * sizeof(float));
    pipe.InitBuffer(thru, 2, 256 * sizeof(float));
    GlobalTensor<float> gx, gz, gw;
    gx.SetGlobalBuffer((__gm__ float*)x, 1024);
    gz.SetGlobalBuffer((__gm__ float*)z, 1024);
    gw.SetGlobalBuffer((__gm__ float*)w, 1024);
    for (int i = 0; i < 4; ++i) {
        LocalTensor<float> a = in.AllocTensor<float>();
        DataCopy(a, gx[i * 256], 256);
        in.EnQue(a);
        a = in.DeQue<float>();
        LocalTensor<float> r = out.AllocTensor<float>();
        Adds(r, a, 1.0f, 256);
        out.EnQue(r);
        in.FreeTensor(a);
        r = out.DeQue<float>();
        DataCopy(gz[i * 256], r, 256);
        out.FreeTensor(r);

        LocalTensor<float> t = thru.AllocTensor<float>();
        DataCopy(t, gx[i * 256], 256);
        thru.EnQue(t);
        if (bug) {
            DataCopy(gw[i * 256], t, 256);  // @EARLY
            t = thru.DeQue<float>();
        } else {
            t = thru.DeQue<float>();
            DataCopy(gw[i * 256], t, 256);
        }
        thru.FreeTensor(t);
    }
}

"""


# A separate source: KERNEL_TASK_TYPE_DEFAULT applies to the whole source text.
CUBE = HEADER + r"""
// The Cube core gets no automatic sync (the emulator lets the scalar unit read L1, as debug
// dumps do): MTE2 -> S needs its flag on the AIC even with auto_sync.
extern "C" __global__ __aicore__ void cube_s(GM_ADDR x, GM_ADDR z, uint32_t sync) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    TPipe pipe;
    TBuf<TPosition::A1> b;
    pipe.InitBuffer(b, 256 * sizeof(half));
    GlobalTensor<half> gx, gz;
    gx.SetGlobalBuffer((__gm__ half*)x, 256);
    gz.SetGlobalBuffer((__gm__ half*)z, 8);
    LocalTensor<half> t = b.Get<half>();
    DataCopy(t, gx, 256);
    if (sync) { SetFlag<HardEvent::MTE2_S>(0); WaitFlag<HardEvent::MTE2_S>(0); }
    half v = t.GetValue(3);   // @CGET
    gz.SetValue(0, v);
}
"""


def _races(rep) -> set[tuple[int, int]]:
    return {(r["first"]["line"], r["second"]["line"]) for r in rep.races}


def _lines(*marks: str) -> tuple[int, ...]:
    return tuple(line_of(SRC, m) for m in marks)


@pytest.mark.parametrize("arch", ARCHS)
def test_vector_chain_is_clean_with_auto_sync_and_races_without(arch):
    x = torch.randn(256)
    t = 2 * x + 1
    expect = t.clone()
    expect[0] = t.sum()
    expect = expect * 0.5
    z = torch.zeros(256)
    rep = run_source(SRC, "vchain", [x, z], 1, arch=arch)
    assert rep.ok and rep.auto_sync
    torch.testing.assert_close(z, expect, rtol=1e-5, atol=1e-4)

    bad = run(SRC, [x, torch.zeros(256)], kernel="vchain", arch=arch, auto_sync=False)
    v1, v2, red, get, st, v3 = _lines("@V1", "@V2", "@RED", "@GET", "@SET", "@V3")
    pairs = _races(bad)
    assert (red, get) in pairs    # V -> S: GetValue after the reduction
    assert (red, st) in pairs     # V -> S: SetValue over what ReduceSum read
    assert (st, v3) in pairs      # S -> V
    assert ((v1, v2) in pairs) == (arch == "dav-c220")  # V -> V: c220 only
    assert {r["second"]["pipe"] for r in bad.races} <= {"S", "V"}


@pytest.mark.parametrize("arch", ARCHS)
def test_scalar_wait_orders_later_ops_only_when_there_is_a_dependency(arch):
    x = torch.randn(64)
    z, s = torch.zeros(64), torch.zeros(8)
    rep = run_source(SRC, "trans", [x, z, s, 1], 1, arch=arch)
    assert rep.ok and torch.equal(z, 3 * x) and s[0] == 3 * x[1]
    bad = run(SRC, [x, torch.zeros(64), torch.zeros(8), 0], kernel="trans", arch=arch)
    assert _races(bad) == {_lines("@MUL", "@OUT")}


@pytest.mark.parametrize("arch", ARCHS)
def test_reduce_spr_read_is_synced_after_the_vector_op(arch):
    x = torch.randn(256)
    z, s = torch.zeros(8), torch.zeros(8)
    rep = run_source(SRC, "spr", [x, z, s], 1, arch=arch)
    assert rep.ok and z[0] == s[0] and abs(s[0].item() - x.sum().item()) < 1e-3
    bad = run(SRC, [x, torch.zeros(8), torch.zeros(8)], kernel="spr", arch=arch, auto_sync=False)
    assert _races(bad) == {_lines("@SRED", "@SOUT")}


@pytest.mark.parametrize("arch", ARCHS)
def test_global_set_value_is_not_auto_synced(arch):
    x = torch.randn(64)
    bad = run(SRC, [x.clone(), torch.zeros(64), 0], kernel="gmset", arch=arch)
    assert _races(bad) == {_lines("@SETGM", "@LOAD")}
    xs, z = x.clone(), torch.zeros(64)
    rep = run_source(SRC, "gmset", [xs, z, 1], 1, arch=arch)
    assert rep.ok and z[0] == 42 and torch.equal(z[1:], x[1:])


@pytest.mark.parametrize("arch", ARCHS)
def test_vector_and_mte_pipes_are_never_auto_synced(arch):
    x = torch.randn(64)
    bad = run(SRC, [x, torch.zeros(64), 0], kernel="nomte", arch=arch)
    assert bad.auto_sync and _races(bad) == {_lines("@NLOAD", "@NADD")}
    assert bad.races[0]["hint"].startswith("SetFlag<HardEvent::MTE2_V>")
    z = torch.zeros(64)
    assert run_source(SRC, "nomte", [x, z, 1], 1, arch=arch).ok and torch.equal(z, x + 1)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("auto_sync", [True, False])
def test_overlapping_mte_writes_need_a_barrier(arch, auto_sync):
    x = torch.randn(128)
    expect = torch.zeros(128)
    expect[:32] = x[:32]
    expect[32:96] = x[64:128]
    for barriers in range(4):
        z = torch.zeros(128)
        rep = run(SRC, [x, z, barriers], kernel="overlap", arch=arch, auto_sync=auto_sync)
        want = set()
        if not barriers & 1:
            want.add(_lines("@L1", "@L2"))
        if not barriers & 2:
            want.add(_lines("@S1", "@S2"))
        assert _races(rep) == want, barriers
        assert all(r["kind"] == "write-write" and "PipeBarrier<PIPE_MTE" in r["hint"] for r in rep.races)
        assert torch.equal(z, expect)


@pytest.mark.parametrize("arch", ARCHS)
def test_tpipe_destroy_and_reset_order_the_next_pipe(arch):
    x = torch.randn(128)
    for how in (0, 1):
        z = torch.zeros(128)
        rep = run_source(SRC, "reuse", [x, z, how], 1, arch=arch)
        assert rep.ok, how
        assert torch.equal(z, x * 5)
    bad = run(SRC, [x, torch.zeros(128), 2], kernel="reuse", arch=arch)
    kinds = {(r["first"]["pipe"], r["second"]["pipe"]) for r in bad.races}
    assert ("V", "MTE2") in kinds and ("MTE3", "MTE3") in kinds  # buffer reuse, and z written twice
    two = run(SRC, [x, torch.zeros(128), 3], kernel="reuse", arch=arch)
    assert [e["kind"] for e in two.errors] == ["invalid_param"] and two.errors[0]["line"] == line_of(SRC, "@P2")
    assert "only one TPipe" in two.errors[0]["message"]


@pytest.mark.parametrize("arch", ARCHS)
def test_queue_bind_paths(arch):
    x = torch.randn(1024)
    z, w = torch.zeros(1024), torch.zeros(1024)
    rep = run_source(SRC, "binds", [x, z, w, 0], 1, arch=arch)
    assert rep.ok and torch.equal(z, x + 1) and torch.equal(w, x)
    bad = run(SRC, [x, torch.zeros(1024), torch.zeros(1024), 1], kernel="binds", arch=arch)
    assert bad.races and all(r["second"]["line"] == line_of(SRC, "@EARLY") for r in bad.races)
    assert {(r["first"]["pipe"], r["second"]["pipe"]) for r in bad.races} == {("MTE2", "MTE3")}


@pytest.mark.parametrize("arch", ARCHS)
def test_cube_core_gets_no_auto_sync(arch):
    x = torch.randn(256, dtype=torch.float16)
    bad = run(CUBE, [x, torch.zeros(8, dtype=torch.float16), 0], arch=arch)
    assert bad.auto_sync and bad.races and bad.races[0]["second"]["line"] == line_of(CUBE, "@CGET")
    z = torch.zeros(8, dtype=torch.float16)
    assert run_source(CUBE, "cube_s", [x, z, 1], 1, arch=arch).ok and z[0] == x[3]
