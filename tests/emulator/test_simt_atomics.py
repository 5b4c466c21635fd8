"""SIMT atomics (原子操作/) on UB and GM: each operation's documented update and return value
(the pages' own examples: the wrapping tickets of inc/dec, one winner of cas, the and/or/xor
flags), the types and memories of each page's table 2, and atomicity across the blocks of a
launch."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER

from ascend_backend.emulator import EmulatorCompileError, run_source

SRC = HEADER + r"""
// o: [0] add counter, [1] sub quota, [2] max, [3] min, [4] inc ticket, [5] dec ticket, [6] cas owner,
// [7] and flags, [8] or flags, [9] xor parity, [10] exch status; per thread old values after 64
__simt_vf__ inline void gm_atomics(__gm__ uint32_t* o, __gm__ int32_t* oi, __gm__ float* of, uint32_t n) {
    uint32_t t = threadIdx.x;
    if (t >= n) return;
    __gm__ uint32_t* old = o + 64;
    old[t * 8 + 0] = asc_atomic_add(o, 1u);
    asc_atomic_sub(o + 1, t);
    asc_atomic_max(o + 2, t * 7 % 13);
    asc_atomic_min(&o[3], 100 - t);
    old[t * 8 + 1] = asc_atomic_inc(o + 4, 3u);        // capacity 4: 0, 1, 2, 3, 0, 1, ...
    old[t * 8 + 2] = asc_atomic_dec(o + 5, 3u);        // 0, 3, 2, 1, 0, 3, ...
    old[t * 8 + 3] = asc_atomic_cas(o + 6, 0u, 100u + t);
    asc_atomic_and(o + 7, ~(1u << (t % 4)));
    asc_atomic_or(o + 8, 1u << (t % 16));
    asc_atomic_xor(o + 9, 1u);
    old[t * 8 + 4] = asc_atomic_exch(o + 10, 1u);
    asc_atomic_add(oi, -2);
    asc_atomic_max(oi + 1, (int32_t)t - 10);
    asc_atomic_add(of, 0.5f);
    asc_atomic_max(of + 1, (float)t * 0.25f);
}
__global__ __vector__ void k_gm(__gm__ uint32_t* o, __gm__ int32_t* oi, __gm__ float* of, uint32_t n) {
    asc_vf_call<gm_atomics>(dim3(64), o, oi, of, n);
}

// the same on UB (a histogram: the usual block-local aggregation), then copied out
__simt_vf__ inline void ub_atomics(__gm__ const uint32_t* x, __gm__ uint32_t* hist, __ubuf__ uint32_t* h,
                                   __ubuf__ float* hf, __gm__ uint32_t* old) {
    uint32_t t = threadIdx.x;
    if (t < 16) { h[t] = 0; }
    if (t == 0) { hf[0] = 0.0f; hf[1] = -1.0f; }
    asc_syncthreads();
    old[t] = asc_atomic_add(h + x[t] % 16, 1u);
    asc_atomic_add(hf, 1.0f);
    asc_atomic_max(hf + 1, (float)(t % 37));
    asc_atomic_inc(h + 16 + 0, 1000u);
    asc_syncthreads();
    if (t < 16) hist[t] = h[t];
    if (t == 0) { hist[16] = (uint32_t)hf[0]; hist[17] = (uint32_t)hf[1]; hist[18] = h[16]; }
}
__global__ __vector__ void k_ub(__gm__ uint32_t* x, __gm__ uint32_t* hist, __gm__ uint32_t* old) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, bf;
    pipe.InitBuffer(b, 32 * sizeof(uint32_t));
    pipe.InitBuffer(bf, 32 * sizeof(float));
    __ubuf__ uint32_t* h = (__ubuf__ uint32_t*)b.Get<uint32_t>().GetPhyAddr();
    if (true) {
        // h[16] (the inc counter) starts at 0
        LocalTensor<uint32_t> t = b.Get<uint32_t>();
        t.SetValue(16, 0);
    }
    asc_vf_call<ub_atomics>(dim3(256), x, hist, h, (__ubuf__ float*)bf.Get<float>().GetPhyAddr(), old);
}

// 64-bit atomics (GM only) and every block adding into one GM counter: atomic across cores
__simt_vf__ inline void wide(__gm__ uint64_t* c, __gm__ int64_t* m) {
    asc_atomic_add(c, (uint64_t)1 << 33);
    asc_atomic_min(m, -(int64_t)(blockIdx.x * blockDim.x + threadIdx.x));
    asc_atomic_add(c + 1, (uint64_t)1);
}
__global__ __vector__ void k_wide(__gm__ uint64_t* c, __gm__ int64_t* m) { asc_vf_call<wide>(dim3(128), c, m); }
"""


def test_gm_atomics_semantics_and_returns():
    n = 6
    o = torch.zeros(64 + 64 * 8, dtype=torch.int32)
    o[1] = 1000
    o[3] = 1 << 30
    o[7] = 0xF
    o[2] = 0
    oi = torch.tensor([0, -100], dtype=torch.int32)
    of = torch.tensor([1.0, -5.0])
    rep = run_source(SRC, "k_gm", [o, oi, of, n], 1)
    assert rep.ok
    u = o.long() & 0xFFFFFFFF
    old = u[64:].view(64, 8)[:n]
    assert u[0] == n and sorted(old[:, 0].tolist()) == list(range(n))
    assert u[1] == 1000 - sum(range(n))
    assert u[2] == max(t * 7 % 13 for t in range(n)) and u[3] == 100 - (n - 1)
    # the pages' examples (the emulator runs the threads in order, so the sequence is theirs)
    assert old[:, 1].tolist() == [0, 1, 2, 3, 0, 1] and u[4] == 2
    assert old[:, 2].tolist() == [0, 3, 2, 1, 0, 3] and u[5] == 2
    winners = (old[:, 3] == 0).sum()
    assert winners == 1 and 100 <= u[6] < 100 + n
    assert u[7] == 0 and u[8] == (1 << n) - 1 and u[9] == n % 2
    assert old[:, 4].tolist() == [0] + [1] * (n - 1) and u[10] == 1
    assert oi.tolist() == [-2 * n, (n - 1) - 10]
    assert of[0] == 1.0 + 0.5 * n and of[1] == (n - 1) * 0.25


def test_ub_atomics_histogram():
    x = torch.randint(0, 1 << 20, (256,), dtype=torch.int32)
    hist = torch.zeros(32, dtype=torch.int32)
    old = torch.full((256,), -1, dtype=torch.int32)
    rep = run_source(SRC, "k_ub", [x, hist, old], 1)
    assert rep.ok, rep.summary()
    exp = torch.bincount(x % 16, minlength=16)
    assert torch.equal(hist[:16].long(), exp)
    assert hist[16] == 256 and hist[17] == 36 and hist[18] == 256 % 1001
    # each bin's old values are 0 .. count-1
    for b in range(16):
        assert sorted(old[(x % 16) == b].tolist()) == list(range(int(exp[b])))


def test_64bit_atomics_and_atomicity_across_blocks():
    c = torch.zeros(2, dtype=torch.int64)
    m = torch.zeros(1, dtype=torch.int64)
    rep = run_source(SRC, "k_wide", [c, m, ], 4)
    assert rep.ok and rep.races == []  # GM atomics of different blocks do not race
    assert c[0] == 4 * 128 * (1 << 33) and c[1] == 4 * 128 and m[0] == -(4 * 128 - 1)


def test_64bit_atomic_on_ub_does_not_compile():
    src = HEADER + r"""
__simt_vf__ inline void f(__ubuf__ int64_t* p) { asc_atomic_add(p, (int64_t)1); }
__global__ __vector__ void k() {
    TPipe pipe; TBuf<TPosition::VECCALC> b; pipe.InitBuffer(b, 64);
    asc_vf_call<f>(dim3(32), (__ubuf__ int64_t*)b.Get<int64_t>().GetPhyAddr());
}
"""
    with pytest.raises(EmulatorCompileError, match="64-bit atomics exist on GM only"):
        run_source(src, "k", [], 1)
