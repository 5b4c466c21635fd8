"""Cross-block synchronisation on the emulator: IBSet/IBWait, software SyncAll,
InitDetermineComputeWorkspace/WaitPreBlock/NotifyNextBlock, GroupBarrier, scalar GM flags
(WriteGmByPassDCache/ReadGmByPassDCache with DataSyncBarrier; SetValue and GetValue after
DataCacheCleanAndInvalid) and the dav-3510 SyncAll<isAIVOnly, config>. Each correct program
runs clean and gives the numbers of a torch reference; each planted bug (the sync removed) is
reported as a race; a wait nothing satisfies is a deadlock report, not a hang."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER, line_of

from ascend_backend.emulator import EmulatorError, Report, run_source

ARCHES = ["dav-c220", "dav-3510"]
T = 64  # floats per block tile (256 bytes)

SRC = HEADER + r"""
constexpr int T = 64;

// Block 0: z[0:T] = x + y[0:T], then IBSet. Block 1 (after IBWait): z[T:2T] = z[0:T] + y[T:2T].
extern "C" __global__ __aicore__ void ib_chain(GM_ADDR x, GM_ADDR y, GM_ADDR sync, GM_ADDR z, uint32_t wait) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * T * 4 + 32);
    LocalTensor<float> a = buf.GetWithOffset<float>(T, 0), b = buf.GetWithOffset<float>(T, T * 4);
    LocalTensor<float> c = buf.GetWithOffset<float>(T, 2 * T * 4);
    LocalTensor<int32_t> ws = buf.GetWithOffset<int32_t>(8, 3 * T * 4);
    GlobalTensor<float> xg, yg, zg;
    GlobalTensor<int32_t> sg;
    xg.SetGlobalBuffer((__gm__ float*)x, T);
    yg.SetGlobalBuffer((__gm__ float*)y, 2 * T);
    zg.SetGlobalBuffer((__gm__ float*)z, 2 * T);
    sg.SetGlobalBuffer((__gm__ int32_t*)sync, 64);
    int blk = GetBlockIdx();
    if (blk == 1 && wait) IBWait(sg, ws, 0, 0);
    DataCopy(a, blk == 1 ? zg : xg, T);                  // @IBREAD
    DataCopy(b, yg[blk * T], T);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    Add(c, a, b, T);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(zg[blk * T], c, T);                         // @IBWRITE
    if (blk == 0) IBSet(sg, ws, 0, 0);
}

// Every block writes 2 * src[blk] to work, syncs (software SyncAll), then sums all tiles.
extern "C" __global__ __aicore__ void soft_syncall(GM_ADDR src, GM_ADDR work, GM_ADDR sync, GM_ADDR dst, uint32_t doSync) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * T * 4 + 64 * 32);
    LocalTensor<float> a = buf.GetWithOffset<float>(T, 0), b = buf.GetWithOffset<float>(T, T * 4);
    LocalTensor<int32_t> ws = buf.GetWithOffset<int32_t>(64 * 8, 2 * T * 4);
    int blk = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<float> sg, wg, dg;
    GlobalTensor<int32_t> yg;
    sg.SetGlobalBuffer((__gm__ float*)src, n * T);
    wg.SetGlobalBuffer((__gm__ float*)work, n * T);
    dg.SetGlobalBuffer((__gm__ float*)dst, n * T);
    yg.SetGlobalBuffer((__gm__ int32_t*)sync, n * 8);
    DataCopy(a, sg[blk * T], T);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    Muls(b, a, 2.0f, T);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(wg[blk * T], b, T);                         // @SAWRITE
    if (doSync) SyncAll(yg, ws);
    for (int i = 0; i < n; ++i) {
        if (i == blk) continue;
        SetFlag<HardEvent::V_MTE2>(0); WaitFlag<HardEvent::V_MTE2>(0);
        DataCopy(a, wg[i * T], T);                       // @SAREAD
        SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
        Add(b, b, a, T);
        PipeBarrier<PIPE_V>();
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(dg[blk * T], b, T);
}

// Read-modify-write of acc in blockIdx order, `rounds` times (WaitPreBlock / NotifyNextBlock);
// ATOMIC: the section is an atomic-add DataCopy (the sequential_block_sync pattern) instead.
template <bool ATOMIC>
__aicore__ inline void ordered_rmw(GM_ADDR src, GM_ADDR acc, GM_ADDR wsp, uint32_t doSync, int rounds) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * T * 4 + 64 * 32 + 32);
    LocalTensor<float> a = buf.GetWithOffset<float>(T, 0), c = buf.GetWithOffset<float>(T, T * 4);
    LocalTensor<int32_t> ws = buf.GetWithOffset<int32_t>(64 * 8 + 8, 2 * T * 4);
    int blk = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<float> sg, ag;
    GlobalTensor<int32_t> wg;
    sg.SetGlobalBuffer((__gm__ float*)src, n * T);
    ag.SetGlobalBuffer((__gm__ float*)acc, rounds * T);
    wg.SetGlobalBuffer((__gm__ int32_t*)wsp, n * 8);
    InitDetermineComputeWorkspace(wg, ws);
    DataCopy(c, sg[blk * T], T);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    for (int r = 0; r < rounds; ++r) {
        if (doSync) WaitPreBlock(wg, ws);
        if constexpr (ATOMIC) {
            SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
            SetAtomicAdd<float>();
            DataCopy(ag[r * T], c, T);                   // @DETATOMIC
            DisableDmaAtomic();
        } else {
            if (r > 0) { SetFlag<HardEvent::MTE3_MTE2>(0); WaitFlag<HardEvent::MTE3_MTE2>(0); }
            DataCopy(a, ag[r * T], T);                   // @DETREAD
            SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
            Add(a, a, c, T);
            SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
            DataCopy(ag[r * T], a, T);                   // @DETWRITE
        }
        if (doSync) NotifyNextBlock(wg, ws);
    }
}
extern "C" __global__ __aicore__ void ordered_plain(GM_ADDR src, GM_ADDR acc, GM_ADDR wsp, uint32_t doSync) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    ordered_rmw<false>(src, acc, wsp, doSync, 2);
}
extern "C" __global__ __aicore__ void ordered_atomic(GM_ADDR src, GM_ADDR acc, GM_ADDR wsp, uint32_t doSync) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    ordered_rmw<true>(src, acc, wsp, doSync, 2);
}

// Blocks 0, 1 write their tiles of mid and Arrive; blocks 2, 3 Wait, then res = mid0 + mid1.
extern "C" __global__ __aicore__ void group_barrier(GM_ADDR wsRaw, GM_ADDR src, GM_ADDR mid, GM_ADDR res, uint32_t doWait) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GM_ADDR ws = (GM_ADDR)(((uintptr_t)wsRaw + 511) / 512 * 512);
    GroupBarrier<PipeMode::MTE3_MODE> bar(ws, 2, 2);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * T * 4);
    LocalTensor<float> a = buf.GetWithOffset<float>(T, 0), b = buf.GetWithOffset<float>(T, T * 4);
    GlobalTensor<float> sg, mg, rg;
    sg.SetGlobalBuffer((__gm__ float*)src, 2 * T);
    mg.SetGlobalBuffer((__gm__ float*)mid, 2 * T);
    rg.SetGlobalBuffer((__gm__ float*)res, 2 * T);
    int blk = GetBlockIdx();
    if (blk < 2) {
        DataCopy(a, sg[blk * T], T);
        SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
        DataCopy(mg[blk * T], a, T);                     // @GBWRITE
        bar.Arrive(blk);
    } else {
        if (doWait) bar.Wait(blk - 2);
        DataCopy(a, mg, T);                              // @GBREAD
        DataCopy(b, mg[T], T);
        SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
        Add(a, a, b, T);
        SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(rg[(blk - 2) * T], a, T);
    }
}

// Message passing through scalar GM accesses that bypass the data cache (DataSyncBarrier page).
extern "C" __global__ __aicore__ void bypass_flag(GM_ADDR flagData, GM_ADDR out, uint32_t barrier) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    __gm__ int32_t* p = (__gm__ int32_t*)flagData;
    if (GetBlockIdx() == 0) {
        WriteGmByPassDCache(p + 8, 7);
        if (barrier) DataSyncBarrier<MemDsbT::DDR>();
        WriteGmByPassDCache(p, 6);
    } else {
        while (ReadGmByPassDCache(p) != 6) {
        }
        int32_t v = ReadGmByPassDCache(p + 8);
        WriteGmByPassDCache((__gm__ int32_t*)out, 2 * v);
    }
}

// Blocks 1..n-1 publish a tile and a flag (MTE3 -> S sync, SetValue, dcci); block 0 polls the
// flags (dcci + GetValue when `dcci`, plain GetValue otherwise) and sums the tiles.
extern "C" __global__ __aicore__ void dcache_flags(GM_ADDR data, GM_ADDR flags, GM_ADDR out, uint32_t dcci) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * T * 4);
    LocalTensor<float> a = buf.GetWithOffset<float>(T, 0), b = buf.GetWithOffset<float>(T, T * 4);
    int blk = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<float> dg, og;
    GlobalTensor<int32_t> fg;
    dg.SetGlobalBuffer((__gm__ float*)data, n * T);
    og.SetGlobalBuffer((__gm__ float*)out, T);
    fg.SetGlobalBuffer((__gm__ int32_t*)flags, n * 16);
    if (blk > 0) {
        Duplicate(a, (float)blk, T);
        SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(dg[blk * T], a, T);
        SetFlag<HardEvent::MTE3_S>(0); WaitFlag<HardEvent::MTE3_S>(0);
        fg.SetValue(blk * 16, 1);                        // @FLAGSET
        DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(fg[blk * 16]);
        return;
    }
    for (int i = 1; i < n; ++i) {
        while (true) {
            if (dcci) DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(fg[i * 16]);
            if (fg.GetValue(i * 16) == 1) break;          // @FLAGGET
        }
    }
    Duplicate(b, 0.0f, T);
    for (int i = 1; i < n; ++i) {
        SetFlag<HardEvent::V_MTE2>(0); WaitFlag<HardEvent::V_MTE2>(0);
        DataCopy(a, dg[i * T], T);
        SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
        PipeBarrier<PIPE_V>();
        Add(b, b, a, T);
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(og, b, T);
}

// Block 1 waits for a flag that no core ever sets.
extern "C" __global__ __aicore__ void never_set(GM_ADDR sync, GM_ADDR flag, uint32_t which) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 32);
    LocalTensor<int32_t> ws = buf.Get<int32_t>();
    GlobalTensor<int32_t> sg;
    sg.SetGlobalBuffer((__gm__ int32_t*)sync, 64);
    if (GetBlockIdx() != 1) return;
    if (which == 0) IBWait(sg, ws, 0, 0);                // @NEVER
    else while (ReadGmByPassDCache((__gm__ int32_t*)flag) != 1) {}
}

#if defined(EMU_ARCH_3510)
// SyncAll<true, {MTE3, ALL}> (dav-3510): the copies to GM trigger, everything waits.
constexpr SyncAllConfig kMte3Trigger = {PIPE_MTE3, PIPE_ALL};
extern "C" __global__ __aicore__ void hw_syncall_cfg(GM_ADDR src, GM_ADDR work, GM_ADDR dst) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * T * 4);
    LocalTensor<float> a = buf.GetWithOffset<float>(T, 0), b = buf.GetWithOffset<float>(T, T * 4);
    int blk = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<float> sg, wg, dg;
    sg.SetGlobalBuffer((__gm__ float*)src, n * T);
    wg.SetGlobalBuffer((__gm__ float*)work, n * T);
    dg.SetGlobalBuffer((__gm__ float*)dst, n * T);
    DataCopy(a, sg[blk * T], T);
    SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(wg[blk * T], a, T);
    SyncAll<true, kMte3Trigger>();
    DataCopy(b, wg[((blk + 1) % n) * T], T);
    SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(dg[blk * T], b, T);
}
#endif
"""


def run(src: str, args: list, block_dim: int = 1, kernel: str | None = None, **kw) -> Report:
    """run_source of one kernel of `src`, non-strict; the report also when the run raised."""
    kw.setdefault("strict", False)
    kw.setdefault("timing", False)
    try:
        return run_source(src, kernel, args, block_dim, **kw)
    except EmulatorError as e:
        if e.report is None:
            raise
        return e.report


def _race_lines(rep):
    return {(r["first"]["line"], r["second"]["line"]) for r in rep.races}


@pytest.mark.parametrize("arch", ARCHES)
def test_ibset_ibwait_orders_two_blocks(arch):
    x, y = torch.randn(T), torch.randn(2 * T)
    z, sync = torch.zeros(2 * T), torch.zeros(64, dtype=torch.int32)
    rep = run(SRC, [x, y, sync, z, 1], block_dim=2, arch=arch, kernel="ib_chain")
    assert rep.ok, rep.summary()
    torch.testing.assert_close(z[:T], x + y[:T])
    torch.testing.assert_close(z[T:], x + y[:T] + y[T:])
    assert sync[0].item() == 1  # IBSet wrote the flag of (block 0, event 0)


def test_ibwait_removed_is_a_race():
    x, y = torch.randn(T), torch.randn(2 * T)
    rep = run(SRC, [x, y, torch.zeros(64, dtype=torch.int32), torch.zeros(2 * T), 0], block_dim=2, kernel="ib_chain")
    assert rep.races, rep.summary()
    want = {line_of(SRC, "@IBREAD"), line_of(SRC, "@IBWRITE")}
    assert any({a, b} == want for a, b in _race_lines(rep)), rep.summary()


@pytest.mark.parametrize("arch", ARCHES)
def test_software_syncall(arch):
    n = 4
    src = torch.randn(n * T)
    work, dst = torch.zeros(n * T), torch.zeros(n * T)
    sync = torch.zeros(n * 8, dtype=torch.int32)
    rep = run(SRC, [src, work, sync, dst, 1], block_dim=n, arch=arch, kernel="soft_syncall")
    assert rep.ok, rep.summary()
    total = (2 * src).view(n, T).sum(0)
    for b in range(n):
        torch.testing.assert_close(dst[b * T:(b + 1) * T], total)
    assert sync.view(n, 8)[:, 0].tolist() == [1] * n  # one generation per block


def test_software_syncall_removed_is_a_race():
    n = 4
    rep = run(SRC, [torch.randn(n * T), torch.zeros(n * T), torch.zeros(n * 8, dtype=torch.int32), torch.zeros(n * T), 0],
              block_dim=n, kernel="soft_syncall")
    want = {line_of(SRC, "@SAWRITE"), line_of(SRC, "@SAREAD")}
    assert any({a, b} == want for a, b in _race_lines(rep)), rep.summary()


@pytest.mark.parametrize("arch", ARCHES)
def test_wait_pre_block_orders_read_modify_write(arch):
    n = 4
    src = torch.randn(n * T)
    acc = torch.zeros(2 * T)
    ws = torch.full((n * 8,), 12345, dtype=torch.int32)  # needs no initialisation (page)
    rep = run(SRC, [src, acc, ws, 1], block_dim=n, arch=arch, kernel="ordered_plain")
    assert rep.ok, rep.summary()
    ref = torch.zeros(T)
    for b in range(n):
        ref = ref + src[b * T:(b + 1) * T]
    assert torch.equal(acc[:T], ref) and torch.equal(acc[T:], ref)  # block order, bit for bit
    assert ws.view(n, 8)[:, 0].tolist() == [2] * n  # two NotifyNextBlock per block


def test_wait_pre_block_removed_is_a_race():
    n = 4
    rep = run(SRC, [torch.randn(n * T), torch.zeros(2 * T), torch.zeros(n * 8, dtype=torch.int32), 0],
              block_dim=n, kernel="ordered_plain")
    lines = {x for pair in _race_lines(rep) for x in pair}
    assert {line_of(SRC, "@DETREAD"), line_of(SRC, "@DETWRITE")} <= lines, rep.summary()


@pytest.mark.parametrize("arch", ARCHES)
def test_sequential_atomic_add_is_deterministic(arch):
    n = 4
    src = torch.randn(n * T) * 1e4
    src[:T] = 1e8  # makes the float sum order-dependent
    acc = torch.zeros(2 * T)
    rep = run(SRC, [src, acc, torch.zeros(n * 8, dtype=torch.int32), 1], block_dim=n, arch=arch,
              kernel="ordered_atomic")
    assert rep.ok, rep.summary()
    ref = torch.zeros(T)
    for b in range(n):
        ref = ref + src[b * T:(b + 1) * T]
    assert torch.equal(acc[:T], ref) and torch.equal(acc[T:], ref)


@pytest.mark.parametrize("arch", ARCHES)
def test_group_barrier(arch):
    src = torch.randn(2 * T)
    mid, res = torch.zeros(2 * T), torch.zeros(2 * T)
    ws = torch.zeros(2048, dtype=torch.uint8)
    rep = run(SRC, [ws, src, mid, res, 1], block_dim=4, arch=arch, kernel="group_barrier")
    assert rep.ok, rep.summary()
    torch.testing.assert_close(res[:T], src[:T] + src[T:])
    torch.testing.assert_close(res[T:], src[:T] + src[T:])


def test_group_barrier_wait_removed_is_a_race():
    rep = run(SRC, [torch.zeros(2048, dtype=torch.uint8), torch.randn(2 * T), torch.zeros(2 * T), torch.zeros(2 * T), 0],
              block_dim=4, kernel="group_barrier")
    want = {line_of(SRC, "@GBWRITE"), line_of(SRC, "@GBREAD")}
    assert any({a, b} == want for a, b in _race_lines(rep)), rep.summary()


@pytest.mark.parametrize("arch", ARCHES)
def test_bypass_dcache_message_passing(arch):
    buf = torch.zeros(16, dtype=torch.int32)
    out = torch.zeros(8, dtype=torch.int32)
    rep = run(SRC, [buf, out, 1], block_dim=2, arch=arch, kernel="bypass_flag")
    assert rep.ok, rep.summary()
    assert out[0].item() == 14 and buf[0].item() == 6


@pytest.mark.parametrize("arch", ARCHES)
def test_dcache_flags_with_clean_and_invalidate(arch):
    n = 4
    data, flags, out = torch.zeros(n * T), torch.zeros(n * 16, dtype=torch.int32), torch.zeros(T)
    rep = run(SRC, [data, flags, out, 1], block_dim=n, arch=arch, kernel="dcache_flags")
    assert rep.ok, rep.summary()
    assert torch.equal(out, torch.full((T,), float(sum(range(1, n)))))


def test_dcache_flag_polled_without_invalidate_is_a_race():
    n = 3
    rep = run(SRC, [torch.zeros(n * T), torch.zeros(n * 16, dtype=torch.int32), torch.zeros(T), 0], block_dim=n,
              kernel="dcache_flags")
    want = {line_of(SRC, "@FLAGSET"), line_of(SRC, "@FLAGGET")}
    assert any({a, b} == want for a, b in _race_lines(rep)), rep.summary()


@pytest.mark.parametrize("which", [0, 1])
def test_wait_that_nothing_satisfies_is_a_deadlock(which):
    rep = run(SRC, [torch.zeros(64, dtype=torch.int32), torch.zeros(8, dtype=torch.int32), which], block_dim=2,
              kernel="never_set", timeout=60)
    assert rep.deadlock, rep.summary()
    w = rep.deadlock["waiters"][0]
    assert w["block"] == 1 and w["what"] == ("IBWait" if which == 0 else "a GM polling loop")
    if which == 0:
        assert w["line"] == line_of(SRC, "@NEVER")


def test_hardware_syncall_with_config_3510():
    n = 3
    src = torch.randn(n * T)
    work, dst = torch.zeros(n * T), torch.zeros(n * T)
    rep = run(SRC, [src, work, dst], block_dim=n, arch="dav-3510", kernel="hw_syncall_cfg")
    assert rep.ok, rep.summary()
    assert torch.equal(dst, src.view(n, T).roll(-1, 0).reshape(-1))


# Every block's AIV0 writes its tile of z; then the AIVs of all blocks meet in a mode-0 barrier
# (flag 12: ids 0-15 are valid in modes 0/1/2), both AIVs of a block set a mode-2 flag (14) for
# their AIC, and the AIC of block 0 reads all of z with scalar loads.
CHAIN = HEADER + r"""
extern "C" __global__ __aicore__ void chain(GM_ADDR z, GM_ADDR out, uint32_t barrier) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    int n = GetBlockNum();
    GlobalTensor<float> zg, og;
    zg.SetGlobalBuffer((__gm__ float*)z, 64 * n);
    og.SetGlobalBuffer((__gm__ float*)out, 64 * n);
    if ASCEND_IS_AIV {
        TPipe pipe;
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, 64 * 4);
        LocalTensor<float> u = buf.Get<float>();
        int b = GetBlockIdx() / 2;
        if (GetSubBlockIdx() == 0) {
            Duplicate(u, (float)(b + 1), 64);
            SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
            DataCopy(zg[64 * b], u, 64);                      // @ZWRITE
        }
        if (barrier) { CrossCoreSetFlag<0, PIPE_MTE3>(12); CrossCoreWaitFlag(12); }
        CrossCoreSetFlag<2, PIPE_MTE3>(14);
    }
    if ASCEND_IS_AIC {
        CrossCoreWaitFlag(14);
        if (GetBlockIdx() == 0)
            for (int i = 0; i < 64 * n; ++i) og.SetValue(i, zg.GetValue(i));   // @ZREAD
    }
}
"""


@pytest.mark.parametrize("arch", ARCHES)
def test_mode0_barrier_then_mode2_flag_orders_other_blocks(arch):
    """A mode-0 barrier of the AIVs followed by a mode-2 flag to the AIC orders the other
    blocks' writes before the AIC's read (the barrier's knowledge travels on with the flag);
    flag ids 12 and 14 are valid in modes 0 and 2 (0-15)."""
    n = 3
    z, out = torch.zeros(64 * n), torch.zeros(64 * n)
    rep = run(CHAIN, [z, out, 1], block_dim=n, arch=arch, kernel="chain")
    assert rep.ok, rep.summary()
    assert torch.equal(out, torch.arange(1, n + 1, dtype=torch.float32).repeat_interleave(64))


def test_mode2_flag_alone_does_not_order_other_blocks():
    n = 3
    rep = run(CHAIN, [torch.zeros(64 * n), torch.zeros(64 * n), 0], block_dim=n, kernel="chain")
    assert rep.races, rep.summary()
    want = {line_of(CHAIN, "@ZWRITE"), line_of(CHAIN, "@ZREAD")}
    assert any({a, b} == want for a, b in _race_lines(rep)), rep.summary()
