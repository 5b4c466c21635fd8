"""The scalar unit's data cache in the timing model: 64-byte lines per core, hits and misses of
GetValue/SetValue on GM recorded in the trace and costed by timing.op_cost (docs/timing-model.md,
"Scalar data cache"). Values are unaffected: every kernel also checks its numbers."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER, run

from ascend_backend.emulator import timing

ARCH = "dav-3510"
LINES = int(timing.ASSUMPTIONS[ARCH]["scalar_dcache_lines"])

# Each kernel sums int32 values read from x with GetValue and stores the sum in y[0] (SetValue,
# then DataCacheCleanAndInvalid so the line is written out, as the SetValue page asks).
SRC = HEADER + r"""
__aicore__ inline void store(GM_ADDR y, int64_t v) {
    GlobalTensor<int64_t> gy;
    gy.SetGlobalBuffer((__gm__ int64_t*)y, 8);
    gy.SetValue(0, v);
    DataCacheCleanAndInvalid<int64_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(gy);
}
// n consecutive values
extern "C" __global__ __aicore__ void seq(GM_ADDR x, GM_ADDR y, int32_t n) {
    GlobalTensor<int32_t> gx;
    gx.SetGlobalBuffer((__gm__ int32_t*)x, n);
    int64_t s = 0;
    for (int32_t i = 0; i < n; ++i) s += gx.GetValue(i);
    store(y, s);
}
// one value per 64 bytes: every read touches a new line
extern "C" __global__ __aicore__ void strided(GM_ADDR x, GM_ADDR y, int32_t n) {
    GlobalTensor<int32_t> gx;
    gx.SetGlobalBuffer((__gm__ int32_t*)x, n * 16);
    int64_t s = 0;
    for (int32_t i = 0; i < n; ++i) s += gx.GetValue(i * 16);
    store(y, s);
}
// one value n times
extern "C" __global__ __aicore__ void reread(GM_ADDR x, GM_ADDR y, int32_t n) {
    GlobalTensor<int32_t> gx;
    gx.SetGlobalBuffer((__gm__ int32_t*)x, 16);
    int64_t s = 0;
    for (int32_t i = 0; i < n; ++i) s += gx.GetValue(3);
    store(y, s);
}
// x[0], then n more lines (one value each), then x[0] again: a hit while n + 1 lines fit
extern "C" __global__ __aicore__ void evict(GM_ADDR x, GM_ADDR y, int32_t n) {
    GlobalTensor<int32_t> gx;
    gx.SetGlobalBuffer((__gm__ int32_t*)x, (n + 1) * 16);
    int64_t s = gx.GetValue(0);
    for (int32_t i = 1; i <= n; ++i) s += gx.GetValue(i * 16);
    s += gx.GetValue(0);
    store(y, s);
}
// x[0] cached, invalidated, read again; two reads that bypass the cache
extern "C" __global__ __aicore__ void dcci(GM_ADDR x, GM_ADDR y, int32_t n) {
    GlobalTensor<int32_t> gx;
    gx.SetGlobalBuffer((__gm__ int32_t*)x, 16);
    int64_t s = gx.GetValue(0);
    DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(gx);
    s += gx.GetValue(0);
    s += ReadGmByPassDCache<int32_t>((__gm__ int32_t*)x + 1);
    s += ReadGmByPassDCache<int32_t>((__gm__ int32_t*)x + 1);
    store(y, s);
}
"""


def _x(n: int) -> torch.Tensor:
    x = torch.randint(-1000, 1000, (n,), dtype=torch.int32)
    assert x.data_ptr() % 64 == 0  # the emulator's copy keeps the address modulo 64: lines start at x[0]
    return x


def _scalar_ops(rep, name: str) -> list[tuple[int, int]]:
    """(data cache outcome, modelled S cycles) of every `name` op, in program order."""
    assert rep.timing["total_cycles"] > 0
    trace = rep._trace
    nid = trace["names"].index(name)
    outcomes = [r[9] for th in trace["threads"] for r in th["ops"] if r[0] == 0 and r[1] == 0 and r[2] == nid]
    cycles = [e - s for (_, _, pipe, op, s, e, _) in rep._timeline if pipe == "S" and op == name]
    assert len(outcomes) == len(cycles)
    return list(zip(outcomes, cycles, strict=True))


def _launch(kernel: str, x: torch.Tensor, n: int, expect: int):
    y = torch.zeros(8, dtype=torch.int64)
    rep = run(SRC, [x, y, n], kernel=kernel, arch=ARCH, strict=True)
    assert rep.ok, rep
    assert int(y[0]) == expect  # the cache is timing only: the values are GM's
    return rep


HIT = int(timing.ASSUMPTIONS[ARCH]["scalar_dcache_hit_cycles"])
MISS = int(timing.ASSUMPTIONS[ARCH]["scalar_gm_cycles"])


def test_consecutive_reads_miss_once_per_line():
    n = 256
    x = _x(n)
    rep = _launch("seq", x, n, int(x.long().sum()))
    ops = _scalar_ops(rep, "GetValue")
    assert len(ops) == n
    # 16 int32 per 64-byte line: the first read of each line misses, the other 15 hit
    assert [o for o, _ in ops] == ([2] + [1] * 15) * (n // 16)
    assert sum(c for _, c in ops) == n // 16 * MISS + (n - n // 16) * HIT
    assert HIT < MISS


def test_strided_reads_miss_every_time():
    n = 64
    x = _x(n * 16)
    rep = _launch("strided", x, n, int(x[::16].long().sum()))
    ops = _scalar_ops(rep, "GetValue")
    assert [o for o, _ in ops] == [2] * n
    assert all(c == MISS for _, c in ops)


def test_rereading_one_value_hits():
    n = 10
    x = _x(16)
    rep = _launch("reread", x, n, n * int(x[3]))
    assert [o for o, _ in _scalar_ops(rep, "GetValue")] == [2] + [1] * (n - 1)


@pytest.mark.parametrize("n, outcome", [(LINES - 1, 1), (LINES, 2)])
def test_capacity_and_lru(n, outcome):
    # x[0]'s line survives n more distinct lines while they all fit (n + 1 <= capacity)
    x = _x((n + 1) * 16)
    rep = _launch("evict", x, n, int(x[::16].long().sum()) + int(x[0]))
    ops = _scalar_ops(rep, "GetValue")
    assert [o for o, _ in ops[:-1]] == [2] * (n + 1)
    assert ops[-1][0] == outcome


def test_invalidate_and_bypass_miss():
    x = _x(16)
    rep = _launch("dcci", x, 0, 2 * int(x[0]) + 2 * int(x[1]))
    # DataCacheCleanAndInvalid of the line: the next GetValue reads GM again
    assert [o for o, _ in _scalar_ops(rep, "GetValue")] == [2, 2]
    # ReadGmByPassDCache never uses the cache (outcome 0): GM cost every time
    assert _scalar_ops(rep, "ReadGmByPassDCache") == [(0, MISS), (0, MISS)]
    # SetValue allocates its line (write-allocate), a miss on a line not read before
    assert [o for o, _ in _scalar_ops(rep, "SetValue")] == [2]


def test_op_cost_scalar_branch():
    UB = 1
    for arch in ("dav-c220", "dav-3510"):
        a = timing.ASSUMPTIONS[arch]
        assert timing.op_cost(arch, 0, 0, 255, 4, 1, 0, 1) == (a["scalar_dcache_hit_cycles"], 0)
        assert timing.op_cost(arch, 0, 0, 255, 4, 1, 0, 2) == (a["scalar_gm_cycles"], 0)
        assert timing.op_cost(arch, 0, 0, 255, 4, 1, 0, 0) == (a["scalar_gm_cycles"], 0)  # bypass
        assert timing.op_cost(arch, 0, UB, 255, 4, 1, 0, 0) == (a["scalar_local_cycles"], 0)
