"""Atomics on the emulator: DMA atomics (SetAtomicAdd/Max/Min/Type, DisableDmaAtomic,
SetStoreAtomicConfig) on UB -> GM DataCopy and on Fixpipe L0C -> GM across blocks, scalar
atomics (AtomicAdd/Max/Min/Cas/Exch, dav-3510 only), the CTRL register (SetCtrlSpr/GetCtrlSpr on
both arches, ResetCtrlSpr on dav-3510, SetSaturationFlag/GetSaturationFlag on dav-c220) and
intra-core Mutex::Lock/Unlock (dav-3510). Numbers against torch;
atomics from different blocks are not races, but an unordered plain access to the same GM is."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER, line_of

from ascend_backend.emulator import EmulatorCompileError, EmulatorError, Report, run_source

ARCHES = ["dav-c220", "dav-3510"]
T = 128  # elements per tile

SRC = HEADER + r"""
constexpr int T = 128;

// Every block combines its tile of src into dst with the DMA-atomic op (0 add, 1 max, 2 min,
// 3 SetAtomicType alone, 4 SetStoreAtomicConfig); block 0 does a plain store when plain0.
// readBack: after SyncAll (when doSync), block 0 copies dst to res.
template <class D>
__aicore__ inline void dma_atomic(GM_ADDR src, GM_ADDR dst, GM_ADDR res, uint32_t op, uint32_t plain0,
                                  uint32_t readBack, uint32_t doSync) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * T * sizeof(D));
    LocalTensor<D> a = buf.GetWithOffset<D>(T, 0), b = buf.GetWithOffset<D>(T, T * sizeof(D));
    int blk = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<D> sg, dg, rg;
    sg.SetGlobalBuffer((__gm__ D*)src, n * T);
    dg.SetGlobalBuffer((__gm__ D*)dst, T);
    rg.SetGlobalBuffer((__gm__ D*)res, T);
    DataCopy(a, sg[blk * T], T);
    SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
    if (plain0 && blk == 0) {
        DataCopy(dg, a, T);                               // @PLAIN
    } else {
        if (op == 0) SetAtomicAdd<D>();
        else if (op == 1) SetAtomicMax<D>();
        else if (op == 2) SetAtomicMin<D>();
        else if (op == 3) SetAtomicType<D>();
        else SetStoreAtomicConfig<AtomicDtype::ATOMIC_F32, AtomicOp::ATOMIC_SUM>();
        DataCopy(dg, a, T);                               // @ATOMIC
        DisableDmaAtomic();
    }
    if (!readBack) return;
    if (doSync) SyncAll();
    if (blk != 0) return;
    SetFlag<HardEvent::MTE3_MTE2>(0); WaitFlag<HardEvent::MTE3_MTE2>(0);
    DataCopy(b, dg, T);                                   // @READBACK
    SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(rg, b, T);
}
extern "C" __global__ __aicore__ void atomic_f32(GM_ADDR s, GM_ADDR d, GM_ADDR r, uint32_t op, uint32_t p0, uint32_t rb, uint32_t sy) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    dma_atomic<float>(s, d, r, op, p0, rb, sy);
}
extern "C" __global__ __aicore__ void atomic_f16(GM_ADDR s, GM_ADDR d, GM_ADDR r, uint32_t op, uint32_t p0, uint32_t rb, uint32_t sy) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    dma_atomic<half>(s, d, r, op, p0, rb, sy);
}
extern "C" __global__ __aicore__ void atomic_bf16(GM_ADDR s, GM_ADDR d, GM_ADDR r, uint32_t op, uint32_t p0, uint32_t rb, uint32_t sy) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    dma_atomic<bfloat16_t>(s, d, r, op, p0, rb, sy);
}
extern "C" __global__ __aicore__ void atomic_s32(GM_ADDR s, GM_ADDR d, GM_ADDR r, uint32_t op, uint32_t p0, uint32_t rb, uint32_t sy) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    dma_atomic<int32_t>(s, d, r, op, p0, rb, sy);
}
extern "C" __global__ __aicore__ void atomic_s8(GM_ADDR s, GM_ADDR d, GM_ADDR r, uint32_t op, uint32_t p0, uint32_t rb, uint32_t sy) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    dma_atomic<int8_t>(s, d, r, op, p0, rb, sy);
}

// C = sum over blocks of A_b x B (16 x 32 x 16, fp16 -> fp32), accumulated by Fixpipe atomics.
extern "C" __global__ __aicore__ void fixpipe_atomic(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr int M = 16, K = 32, N = 16;
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b;
    TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, M * K * 2); pipe.InitBuffer(b1b, K * N * 2);
    pipe.InitBuffer(a2b, M * K * 2); pipe.InitBuffer(b2b, K * N * 2); pipe.InitBuffer(c1b, M * N * 4);
    GlobalTensor<half> ag, bg; GlobalTensor<float> cg;
    int blk = GetBlockIdx();
    ag.SetGlobalBuffer((__gm__ half*)a + blk * M * K, M * K);
    bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    LocalTensor<half> a1 = a1b.Get<half>(), b1 = b1b.Get<half>(), a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
    LocalTensor<float> c1 = c1b.Get<float>();
    DataCopy(a1, ag, Nd2NzParams(1, M, K, 0, K, M, 1, 0));
    DataCopy(b1, bg, Nd2NzParams(1, K, N, 0, N, K, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
#if defined(EMU_ARCH_C220)
    LoadData(a2, a1, LoadData2DParams(0, K / 16, 1, 0, 0, false, 0));
    for (int i = 0; i < K / 16; ++i) LoadData(b2[i * N * 16], b1[i * 256], LoadData2DParams(0, N / 16, K / 16, 0, 0, true, 0));
#else
    LoadData(a2, a1, LoadData2DParamsV2(0, 0, M / 16, K / 16, M / 16, M / 16, false, 0));
    LoadData(b2, b1, LoadData2DParamsV2(0, 0, K / 16, N / 16, K / 16, N / 16, true, 0));
#endif
    SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
    Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
    SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0);
    SetAtomicAdd<float>();
#if defined(EMU_ARCH_C220)
    Fixpipe<float, float, CFG_ROW_MAJOR>(cg, c1, FixpipeParamsV220(N, M, M, N, false));
#else
    Fixpipe<float, float, CFG_ROW_MAJOR>(cg, c1, FixpipeParamsArch3510<CO2Layout::ROW_MAJOR>(N, M, M, N));
#endif
    DisableDmaAtomic();
}

#if defined(EMU_ARCH_3510)
// Scalar atomics: every block adds 1 to ctr[0], maxes/mins ctr[1]/ctr[2] with its index,
// exchanges ctr[3]; block 0 compare-and-swaps ctr[4] twice; old values to olds[blk].
extern "C" __global__ __aicore__ void scalar_atomics(GM_ADDR ctr, GM_ADDR f, GM_ADDR olds) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    __gm__ uint32_t* c = (__gm__ uint32_t*)ctr;
    __gm__ int32_t* ci = (__gm__ int32_t*)ctr;
    int blk = GetBlockIdx();
    uint32_t o = AtomicAdd(c, 1u);
    AtomicMax(ci + 1, (int32_t)blk);
    AtomicMin(ci + 2, (int32_t)blk);
    AtomicExch(c + 3, 7u);
    AtomicAdd((__gm__ float*)f, 0.5f);
    if (blk == 0) {
        uint32_t x = AtomicCas(c + 4, 5u, 9u);   // 5 -> 9, returns 5
        uint32_t y = AtomicCas(c + 4, 5u, 11u);  // no change, returns 9
        AtomicExch(c + 5, x * 100 + y);
    }
    AtomicExch((__gm__ uint32_t*)olds + blk, o + 1000);
}

// Every block adds 1 to ctr[0] with a scalar atomic and copies the counter in right after
// (the AtomicAdd page's example): the copy sees the word before or after the other blocks'
// atomics, which is not a race; the value seen goes to peek[blk * 8].
extern "C" __global__ __aicore__ void atomic_peek(GM_ADDR ctr, GM_ADDR peek) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    int blk = GetBlockIdx();
    AtomicAdd((__gm__ uint32_t*)ctr, 1u);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 32);
    LocalTensor<uint32_t> t = b.Get<uint32_t>();
    GlobalTensor<uint32_t> cg, pg;
    cg.SetGlobalBuffer((__gm__ uint32_t*)ctr);
    pg.SetGlobalBuffer((__gm__ uint32_t*)peek + blk * 8);
    SetFlag<HardEvent::S_MTE2>(0); WaitFlag<HardEvent::S_MTE2>(0);
    DataCopy(t, cg, 8);
    SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(pg, t, 8);
}

// CTRL register: set bits 60 and 48, read 48; reset, read again; then an atomic add through
// SetCtrlSpr<6, 8>(1) (float) and the config it reads back.
extern "C" __global__ __aicore__ void ctrl_spr(GM_ADDR out, GM_ADDR dst) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<int64_t> og; og.SetGlobalBuffer((__gm__ int64_t*)out, 8);
    SetCtrlSpr<60, 60>(1);
    SetCtrlSpr<48, 48>(1);
    int64_t v1 = GetCtrlSpr<48, 48>();
    int64_t all1 = GetCtrlSpr<0, 63>();
    ResetCtrlSpr<48, 48>();
    ResetCtrlSpr<60, 60>();
    int64_t v2 = GetCtrlSpr<48, 48>(), v3 = GetCtrlSpr<60, 60>();
    SetCtrlSpr<6, 8>(1);
    uint16_t ty = 0, op = 0;
    GetStoreAtomicConfig(ty, op);
    TPipe pipe; TBuf<TPosition::VECCALC> buf; pipe.InitBuffer(buf, 256);
    LocalTensor<float> a = buf.Get<float>();
    Duplicate(a, 1.5f, 64);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    GlobalTensor<float> dg; dg.SetGlobalBuffer((__gm__ float*)dst, 64);
    DataCopy(dg, a, 64);
    ResetCtrlSpr<6, 8>();
    og.SetValue(0, v1); og.SetValue(1, all1); og.SetValue(2, v2); og.SetValue(3, v3);
    og.SetValue(4, ty); og.SetValue(5, op);
}

// A two-stage pipeline per tile ordered by Mutex::Lock/Unlock (the Mutex page's pattern):
// MTE2 loads x, V computes x + 1, MTE3 stores; two mutex ids alternate over the tiles.
// lockV = 0 plants the bug of a V stage that does not take the lock.
extern "C" __global__ __aicore__ void mutex_pipeline(GM_ADDR x, GM_ADDR z, uint32_t lockV) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    constexpr int TILES = 6;
    TPipe pipe; TBuf<TPosition::VECCALC> buf; pipe.InitBuffer(buf, 4 * T * 4);
    LocalTensor<float> in[2] = {buf.GetWithOffset<float>(T, 0), buf.GetWithOffset<float>(T, T * 4)};
    LocalTensor<float> out[2] = {buf.GetWithOffset<float>(T, 2 * T * 4), buf.GetWithOffset<float>(T, 3 * T * 4)};
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x, TILES * T);
    zg.SetGlobalBuffer((__gm__ float*)z, TILES * T);
    MutexID ids[2] = {AllocMutexID(), AllocMutexID()};
    for (int i = 0; i < TILES; ++i) {
        int k = i % 2;
        Mutex::Lock<PIPE_MTE2>(ids[k]);
        DataCopy(in[k], xg[i * T], T);                    // @MTXLOAD
        Mutex::Unlock<PIPE_MTE2>(ids[k]);
        if (lockV) Mutex::Lock<PIPE_V>(ids[k]);
        Adds(out[k], in[k], 1.0f, T);                     // @MTXADD
        if (lockV) Mutex::Unlock<PIPE_V>(ids[k]);
        Mutex::Lock<PIPE_MTE3>(ids[k]);
        DataCopy(zg[i * T], out[k], T);
        Mutex::Unlock<PIPE_MTE3>(ids[k]);
    }
    ReleaseMutexID(ids[0]);
    ReleaseMutexID(ids[1]);
}

// Lock twice without Unlock; Unlock on another pipe.
extern "C" __global__ __aicore__ void mutex_misuse(GM_ADDR x) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    Mutex::Lock<PIPE_MTE2>(3);
    Mutex::Lock<PIPE_MTE2>(3);                            // @LOCK2
    Mutex::Unlock<PIPE_V>(3);                             // @UNLOCKV
}
#else
// CTRL register on dav-c220 (SetCtrlSpr page, A2/A3 table): default 0; CTRL[48] through
// SetSaturationFlag<FLOAT>; CTRL[8:6] = 1 makes the UB -> GM copy a float atomic add.
extern "C" __global__ __aicore__ void ctrl_spr_c220(GM_ADDR out, GM_ADDR dst) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<int64_t> og; og.SetGlobalBuffer((__gm__ int64_t*)out, 8);
    int64_t all0 = GetCtrlSpr<0, 63>();
    bool sat0 = GetSaturationFlag<SaturationMode::FLOAT>();
    SetSaturationFlag<SaturationMode::FLOAT>(false);
    int64_t b48 = GetCtrlSpr<48, 48>();
    bool sat1 = GetSaturationFlag<SaturationMode::FLOAT>();
    SetCtrlSpr<48, 48>(0);
    SetCtrlSpr<6, 8>(1);
    TPipe pipe; TBuf<TPosition::VECCALC> buf; pipe.InitBuffer(buf, 256);
    LocalTensor<float> a = buf.Get<float>();
    Duplicate(a, 1.5f, 64);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    GlobalTensor<float> dg; dg.SetGlobalBuffer((__gm__ float*)dst, 64);
    DataCopy(dg, a, 64);
    SetCtrlSpr<6, 8>(0);
    og.SetValue(0, all0); og.SetValue(1, sat0); og.SetValue(2, b48); og.SetValue(3, sat1);
    og.SetValue(4, GetCtrlSpr<0, 63>());
}
#endif
"""

SCALAR_C220 = HEADER + r"""
extern "C" __global__ __aicore__ void k(GM_ADDR c) {
    AtomicAdd((__gm__ uint32_t*)c, 1u);
}
"""


def run(src: str, args: list, block_dim: int = 1, kernel: str | None = None, **kw) -> Report:
    kw.setdefault("strict", False)
    kw.setdefault("timing", False)
    try:
        return run_source(src, kernel, args, block_dim, **kw)
    except EmulatorError as e:
        if e.report is None:
            raise
        return e.report


DTYPES = {"atomic_f32": torch.float32, "atomic_f16": torch.float16, "atomic_bf16": torch.bfloat16,
          "atomic_s32": torch.int32, "atomic_s8": torch.int8}


def _src(kernel, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    dt = DTYPES[kernel]
    if dt.is_floating_point:
        return (torch.randn(n * T, generator=g) * 4).to(dt)
    return torch.randint(-20, 20, (n * T,), generator=g).to(dt)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kernel", list(DTYPES))
@pytest.mark.parametrize("op", [0, 1, 2])
def test_dma_atomic_across_blocks(arch, kernel, op):
    n = 3
    src = _src(kernel, n)
    init = _src(kernel, 1, seed=1)
    dst, res = init.clone(), torch.zeros(T, dtype=src.dtype)
    rep = run(SRC, [src, dst, res, op, 0, 1, 1], block_dim=n, arch=arch, kernel=kernel)
    assert rep.ok, rep.summary()
    parts = [init.float()] + [src[b * T:(b + 1) * T].float() for b in range(n)]
    if op == 0:
        ref = parts[0]
        for p in parts[1:]:  # the result of every order is within rounding of this one
            ref = ref + p
        if src.dtype.is_floating_point:
            torch.testing.assert_close(dst.float(), ref.to(src.dtype).float(), rtol=2e-2, atol=1e-1)
        else:
            assert torch.equal(dst, ref.to(torch.int64).to(src.dtype))  # integer adds wrap
    else:
        ref = torch.stack(parts).amax(0) if op == 1 else torch.stack(parts).amin(0)
        assert torch.equal(dst, ref.to(src.dtype))
    assert torch.equal(res, dst)  # block 0 read the final value after SyncAll


@pytest.mark.parametrize("op", [3, 4])
def test_set_atomic_type_and_store_config_enable_add(op):
    n = 2
    src = _src("atomic_f32", n)
    dst = torch.ones(T)
    rep = run(SRC, [src, dst, torch.zeros(T), op, 0, 0, 0], block_dim=n, kernel="atomic_f32")
    assert rep.ok, rep.summary()
    torch.testing.assert_close(dst, 1 + src[:T] + src[T:])


def test_read_of_atomic_result_without_syncall_is_a_race():
    n = 3
    # One worker thread: blocks run in turn, so the read-back never observes another block's atomic
    # (a read that observes a write is ordered after it; with two workers that happened in about
    # one run of five, and the race went unreported).
    rep = run(SRC, [_src("atomic_f32", n), torch.zeros(T), torch.zeros(T), 0, 0, 1, 0], block_dim=n, kernel="atomic_f32",
              pool=1)
    want = {line_of(SRC, "@ATOMIC"), line_of(SRC, "@READBACK")}
    assert any({r["first"]["line"], r["second"]["line"]} == want for r in rep.races), rep.summary()


def test_plain_store_racing_atomics_is_a_race():
    n = 3
    rep = run(SRC, [_src("atomic_f32", n), torch.zeros(T), torch.zeros(T), 0, 1, 0, 0], block_dim=n, kernel="atomic_f32")
    want = {line_of(SRC, "@ATOMIC"), line_of(SRC, "@PLAIN")}
    assert any({r["first"]["line"], r["second"]["line"]} == want and r["kind"] == "write-write" for r in rep.races), \
        rep.summary()


@pytest.mark.parametrize("arch", ARCHES)
def test_fixpipe_atomic_add_across_blocks(arch):
    n = 3
    a = torch.randn(n, 16, 32).half()
    b = torch.randn(32, 16).half()
    c = torch.ones(16, 16)
    rep = run(SRC, [a, b, c], block_dim=n, arch=arch, kernel="fixpipe_atomic", kernel_type=1)
    assert rep.ok, rep.summary()
    ref = 1 + sum(a[i].float() @ b.float() for i in range(n))
    torch.testing.assert_close(c, ref, rtol=1e-4, atol=1e-3)


def test_scalar_atomics_3510():
    n = 4
    ctr = torch.zeros(8, dtype=torch.int32)
    ctr[2] = 100
    ctr[4] = 5
    f = torch.zeros(1)
    olds = torch.zeros(n, dtype=torch.int32)
    rep = run(SRC, [ctr, f, olds], block_dim=n, arch="dav-3510", kernel="scalar_atomics")
    assert rep.ok, rep.summary()
    assert ctr[:6].tolist() == [n, n - 1, 0, 7, 9, 509]
    assert f.item() == 0.5 * n
    assert sorted((olds - 1000).tolist()) == list(range(n))  # each block saw a distinct old value


def test_dma_read_of_a_scalar_atomic_word_is_no_race_3510():
    n = 4
    ctr = torch.zeros(8, dtype=torch.int32)
    peek = torch.zeros(n * 8, dtype=torch.int32)
    rep = run(SRC, [ctr, peek], block_dim=n, arch="dav-3510", kernel="atomic_peek")
    assert rep.ok, rep.summary()
    assert ctr[0].item() == n
    assert all(1 <= v <= n for v in peek[0::8].tolist())  # each saw its own add, maybe others'


def test_scalar_atomics_do_not_exist_on_c220():
    with pytest.raises(EmulatorCompileError, match="AtomicAdd"):
        run_source(SCALAR_C220, None, [torch.zeros(8, dtype=torch.int32)], 1, arch="dav-c220")


def test_ctrl_spr_3510():
    out = torch.zeros(8, dtype=torch.int64)
    dst = torch.full((64,), 2.0)
    rep = run(SRC, [out, dst], arch="dav-3510", kernel="ctrl_spr")
    assert rep.ok, rep.summary()
    assert out[:6].tolist() == [1, (1 << 60) | (1 << 48), 0, 1, 1, 0]
    assert torch.equal(dst, torch.full((64,), 3.5))  # CTRL[8:6] = 1: float atomic add


def test_ctrl_spr_c220():
    out = torch.zeros(8, dtype=torch.int64)
    dst = torch.full((64,), 2.0)
    rep = run(SRC, [out, dst], arch="dav-c220", kernel="ctrl_spr_c220")
    assert rep.ok, rep.summary()
    assert out[:5].tolist() == [0, 1, 1, 0, 0]
    assert torch.equal(dst, torch.full((64,), 3.5))


def test_mutex_pipeline_3510():
    x = torch.randn(6 * T)
    z = torch.zeros(6 * T)
    rep = run(SRC, [x, z, 1], arch="dav-3510", kernel="mutex_pipeline")
    assert rep.ok, rep.summary()
    torch.testing.assert_close(z, x + 1)


def test_mutex_stage_without_lock_is_a_race_3510():
    rep = run(SRC, [torch.randn(6 * T), torch.zeros(6 * T), 0], arch="dav-3510", kernel="mutex_pipeline")
    want = {line_of(SRC, "@MTXLOAD"), line_of(SRC, "@MTXADD")}
    assert any({r["first"]["line"], r["second"]["line"]} == want for r in rep.races), rep.summary()


def test_mutex_misuse_3510():
    rep = run(SRC, [torch.zeros(8)], arch="dav-3510", kernel="mutex_misuse")
    errs = [(f["kind"], f["line"]) for f in rep.flag_errors]
    assert ("mutex_misuse", line_of(SRC, "@LOCK2")) in errs and ("mutex_misuse", line_of(SRC, "@UNLOCKV")) in errs, \
        rep.summary()
