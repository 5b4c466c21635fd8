"""Planted SIMT bugs: each is reported (with the lines), its fixed variant is not, nothing hangs.
Thread races on UB (racecheck's rule: two threads, the same bytes, one writing, no barrier
between; atomics do not race with atomics), barriers some thread never reaches, and the SIMT
call as a PIPE_V op for the pipe-level checks (missing flags between a DMA copy and the threads
reading or writing its UB, blocks writing the same GM)."""

from __future__ import annotations

import time

import torch
from conftest import HEADER, line_of, run

from ascend_backend.emulator import run_source

SRC = HEADER + r"""
// bug 1: no barrier between the store and another thread's load; bug 2: every thread stores
// to slot 0 (values differ); bug 3: the same, all storing the same value (not a race);
// bug 4: plain load of a counter other threads update atomically; 5: only atomics (no race)
__simt_vf__ __launch_bounds__(128) inline void share(__gm__ float* y, __ubuf__ float* ub, __ubuf__ uint32_t* cnt, uint32_t bug) {
    uint32_t t = threadIdx.x;
    ub[t] = (float)t;                           // @STORE
    if (bug != 1) asc_syncthreads();
    float v = ub[(t + 1) % 128];                // @LOAD
    if (bug == 2) cnt[1] = (uint32_t)t;         // @WAW
    if (bug == 3) cnt[2] = 5u;
    if (bug == 4 || bug == 5) asc_atomic_add(cnt, 1u);   // @ATOMIC
    if (bug == 4 && t == 64) v = (float)cnt[0];          // @PLAIN
    y[t] = v;
}
__global__ __vector__ void k_share(__gm__ float* y, uint32_t bug) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, c;
    pipe.InitBuffer(b, 128 * sizeof(float));
    pipe.InitBuffer(c, 32);
    asc_vf_call<share>(dim3(128), y, (__ubuf__ float*)b.Get<float>().GetPhyAddr(),
                       (__ubuf__ uint32_t*)c.Get<uint32_t>().GetPhyAddr(), bug);
}

// barriers: bug 1 returns early before the barrier; bug 2 puts it in a branch (two call sites)
__simt_vf__ __launch_bounds__(64) inline void bar(__gm__ float* y, uint32_t bug) {
    uint32_t t = threadIdx.x;
    if (bug == 1 && t >= 48) return;            // @RETURN
    if (bug == 2 && t % 2) {
        asc_syncthreads();                      // @BAR_ODD
    } else {
        asc_syncthreads();                      // @BAR_ALL
    }
    y[t] = 1.0f;
}
__global__ __vector__ void k_bar(__gm__ float* y, uint32_t bug) { asc_vf_call<bar>(dim3(64), y, bug); }

// pipe level: MTE2 fills UB, the SIMT threads read it and write UB, MTE3 copies it out
__simt_vf__ inline void scale(__ubuf__ float* in, __ubuf__ float* out) {
    out[threadIdx.x] = in[threadIdx.x] * 2.0f;
}
__global__ __vector__ void k_pipe(__gm__ float* x, __gm__ float* y, uint32_t bug) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bi, bo;
    pipe.InitBuffer(bi, 256 * sizeof(float));
    pipe.InitBuffer(bo, 256 * sizeof(float));
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer(x, 256);
    gy.SetGlobalBuffer(y, 256);
    LocalTensor<float> ti = bi.Get<float>(), to = bo.Get<float>();
    DataCopy(ti, gx, 256);                      // @MTE2
    if (bug != 1) { SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0); }
    asc_vf_call<scale>(dim3(256), (__ubuf__ float*)ti.GetPhyAddr(), (__ubuf__ float*)to.GetPhyAddr());  // @VF
    if (bug != 2) { SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0); }
    DataCopy(gy, to, 256);                      // @MTE3
}

// blocks: each block's threads write y[blockIdx.x * 64 + t]; with bug, every block writes y[t]
__simt_vf__ inline void blocks(__gm__ float* y, uint32_t bug) {
    uint32_t base = bug ? 0 : blockIdx.x * 64;
    y[base + threadIdx.x] = (float)(blockIdx.x + 1);  // @GMSTORE
}
__global__ __vector__ void k_blocks(__gm__ float* y, uint32_t bug) { asc_vf_call<blocks>(dim3(64), y, bug); }  // @VFB
"""


def _simt_races(rep):
    return [r for r in rep.races if r.get("simt")]


def test_missing_barrier_is_a_thread_race_with_both_lines():
    y = torch.zeros(128)
    rep = run_source(SRC, "k_share", [y, 0], 1)
    assert rep.ok and torch.equal(y, torch.roll(torch.arange(128.0), -1))
    rep = run(SRC, [y, 1], kernel="k_share")
    races = _simt_races(rep)
    assert races and {r["kind"] for r in races} <= {"write-read", "read-write"}
    lines = {(r["first"]["line"], r["second"]["line"]) for r in races}
    store, load = line_of(SRC, "@STORE"), line_of(SRC, "@LOAD")
    assert lines <= {(store, load), (load, store)} and len(lines) >= 1
    r = races[0]
    assert r["where"].startswith("UB bytes [") and r["first"]["thread"] != r["second"]["thread"]
    assert "asc_syncthreads" in r["hint"] and "SIMT" in rep.summary()


def test_write_write_race_unless_identical_data():
    y = torch.zeros(128)
    rep = run(SRC, [y, 2], kernel="k_share")
    ww = [r for r in _simt_races(rep) if r["kind"] == "write-write"]
    assert ww and ww[0]["first"]["line"] == ww[0]["second"]["line"] == line_of(SRC, "@WAW")
    assert run_source(SRC, "k_share", [y, 3], 1).ok  # all threads store the same bytes


def test_atomics_do_not_race_with_atomics_but_with_plain_loads():
    y = torch.zeros(128)
    assert run_source(SRC, "k_share", [y, 5], 1).ok
    rep = run(SRC, [y, 4], kernel="k_share")
    races = _simt_races(rep)
    pairs = {(r["first"]["line"], r["second"]["line"]) for r in races}
    # the plain load races with the atomics of the threads before and after it
    assert pairs == {(line_of(SRC, "@ATOMIC"), line_of(SRC, "@PLAIN")), (line_of(SRC, "@PLAIN"), line_of(SRC, "@ATOMIC"))}
    assert all("atomic" in r["first"]["op"] or "atomic" in r["second"]["op"] for r in races)


def test_barrier_not_reached_by_every_thread_is_a_deadlock_not_a_hang():
    y = torch.zeros(64)
    assert run_source(SRC, "k_bar", [y, 0], 1).ok and (y == 1).all()
    t0 = time.perf_counter()
    rep = run(SRC, [y, 1], kernel="k_bar")
    assert time.perf_counter() - t0 < 60
    d = rep.deadlock
    assert d and d["scope"] == "SIMT block 0" and f"line {line_of(SRC, '@BAR_ALL')}" in d["message"]
    assert "48 of 64 threads" in d["message"] and "16 ended" in d["message"] and "thread 48" in d["message"]
    rep = run(SRC, [y, 2], kernel="k_bar")
    d = rep.deadlock
    assert d and "different asc_syncthreads" in d["message"]
    assert f"line {line_of(SRC, '@BAR_ODD')}" in d["message"] and f"line {line_of(SRC, '@BAR_ALL')}" in d["message"]


def test_simt_call_is_a_vector_pipe_op_for_the_pipe_checks():
    x = torch.randn(256)
    y = torch.zeros(256)
    rep = run_source(SRC, "k_pipe", [x, y, 0], 1, auto_sync=False)
    assert rep.ok and torch.equal(y, 2 * x)
    for bug, (a, b) in ((1, ("@MTE2", "@VF")), (2, ("@VF", "@MTE3"))):
        rep = run(SRC, [x, y, bug], kernel="k_pipe", auto_sync=False)
        got = {(r["first"]["op"], r["first"]["line"], r["second"]["op"], r["second"]["line"]) for r in rep.races}
        names = ("DataCopy", "asc_vf_call") if bug == 1 else ("asc_vf_call", "DataCopy")
        assert got == {(names[0], line_of(SRC, a), names[1], line_of(SRC, b))}, rep.summary()
        assert "MTE2_V" in rep.races[0]["hint"] if bug == 1 else "V_MTE3" in rep.races[0]["hint"]


def test_blocks_writing_the_same_gm_race():
    y = torch.zeros(4 * 64)
    assert run_source(SRC, "k_blocks", [y, 0], 4).ok
    rep = run(SRC, [y, 1], kernel="k_blocks", block_dim=4)
    assert rep.races and all(r["kind"] == "write-write" and r["where"].startswith("arg 'y'") for r in rep.races)
    vf = line_of(SRC, "@VFB")
    assert {(r["first"]["op"], r["first"]["line"], r["second"]["line"]) for r in rep.races} == {("asc_vf_call", vf, vf)}
