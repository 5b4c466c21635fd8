"""Data movement beyond DataCopy/DataCopyPad's core (emu_copy_ext.h, emu_copy.h), our own
small programs against a Python model of each doc page:

- Copy (UBToUB掩码式高维数据搬运): continuous mask, bit mask and counter mode, with block and
  repeat strides, both arches; the dav-3510 count form (UBToUB连续数据搬运);
- DataCopy with SliceInfo (GM与UB切片数据搬运), GM -> UB -> GM, both arches;
- dav-3510 NDDMA DataCopy (GMToUB多维数据搬运NDDMA): constant and nearest-value padding;
- dav-3510 DataCopyPad with PaddingMode::Compact and the loop-mode registers
  (SetLoopModePara / ResetLoopModePara)."""

from __future__ import annotations

import pytest
import torch
from test_ops_harness import check_ok, run

ARCHES = ["dav-c220", "dav-3510"]
N = 1024

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int N = 1024;

// y := Copy(x) over y's old contents; MODE 0 continuous mask, 1 bit mask, 2 counter mode, 3 count form
template <int MODE>
__aicore__ inline void copy_k(GM_ADDR x, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * N * sizeof(half));
    LocalTensor<half> s = buf.GetWithOffset<half>(N, 0), d = buf.GetWithOffset<half>(N, N * sizeof(half));
    GlobalTensor<half> xg, yg;
    xg.SetGlobalBuffer((__gm__ half*)x, N); yg.SetGlobalBuffer((__gm__ half*)y, N);
    DataCopy(s, xg, N);
    DataCopy(d, yg, N);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    if constexpr (MODE == 0) {
        Copy(d, s, 100, 2, CopyRepeatParams(1, 2, 8, 16));
    } else if constexpr (MODE == 1) {
        uint64_t m[2] = {0xF0F0F0F0F0F0F0F0ull, 0x00000000FFFF0001ull};
        Copy(d, s, m, 3, CopyRepeatParams(2, 1, 16, 8));
    } else if constexpr (MODE == 2) {
        SetMaskCount();
        Copy(d, s, 40, 3, CopyRepeatParams(1, 1, 4, 5));
        SetMaskNorm();
    } else {
#if defined(EMU_ARCH_3510)
        Copy(d[16], s[32], 320);
#endif
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, d, N);
}
extern "C" __global__ __aicore__ void copy_cont(GM_ADDR x, GM_ADDR y) { copy_k<0>(x, y); }
extern "C" __global__ __aicore__ void copy_bits(GM_ADDR x, GM_ADDR y) { copy_k<1>(x, y); }
extern "C" __global__ __aicore__ void copy_counter(GM_ADDR x, GM_ADDR y) { copy_k<2>(x, y); }
extern "C" __global__ __aicore__ void copy_count(GM_ADDR x, GM_ADDR y) { copy_k<3>(x, y); }

// x [4][8][32] float; rows 1, 3, 5 of every second plane (0, 2), columns 8..23, go to UB
// [2][3][16] and back to y at planes 1, 3, rows 0, 2, 4, columns 0..15.
extern "C" __global__ __aicore__ void slice(GM_ADDR x, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * 3 * 16 * sizeof(float));
    LocalTensor<float> u = buf.Get<float>();
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, 4 * 8 * 32); yg.SetGlobalBuffer((__gm__ float*)y, 4 * 8 * 32);
    SliceInfo gsrc[3] = {SliceInfo(8, 23, 0, 2, 32), SliceInfo(1, 5, 1, 1, 8), SliceInfo(0, 2, 1, 1, 4)};
    SliceInfo ub[3] = {SliceInfo(0, 15, 0, 2, 16), SliceInfo(0, 2, 0, 1, 3), SliceInfo(0, 1, 0, 1, 2)};
    SliceInfo gdst[3] = {SliceInfo(0, 15, 0, 2, 32), SliceInfo(0, 4, 1, 1, 8), SliceInfo(1, 3, 1, 1, 4)};
    DataCopy(u, xg, ub, gsrc, 3);
    SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(yg, u, gdst, ub, 3);
}

#if defined(EMU_ARCH_3510)
// x [6][10] half -> UB [8][16] with 2 left / 4 right padding columns and 1 padding row on each side
template <bool NEAREST>
__aicore__ inline void nddma(GM_ADDR x, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    static constexpr NdDmaConfig cfg = {NEAREST, NdDmaConfig::unsetPad, NdDmaConfig::unsetPad, false};
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 8 * 16 * sizeof(half));
    LocalTensor<half> u = buf.Get<half>();
    GlobalTensor<half> xg, yg;
    xg.SetGlobalBuffer((__gm__ half*)x, 60); yg.SetGlobalBuffer((__gm__ half*)y, 128);
    NdDmaParams<half, 2> p;
    p.loopInfo.loopSrcStride[0] = 1; p.loopInfo.loopDstStride[0] = 1; p.loopInfo.loopSize[0] = 10;
    p.loopInfo.loopLpSize[0] = 2; p.loopInfo.loopRpSize[0] = 4;
    p.loopInfo.loopSrcStride[1] = 10; p.loopInfo.loopDstStride[1] = 16; p.loopInfo.loopSize[1] = 6;
    p.loopInfo.loopLpSize[1] = 1; p.loopInfo.loopRpSize[1] = 1;
    p.constantValue = half(-1.0);
    DataCopy<half, 2, cfg>(u, xg, p);
    SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(yg, u, 128);
}
extern "C" __global__ __aicore__ void nddma_const(GM_ADDR x, GM_ADDR y) { nddma<false>(x, y); }
extern "C" __global__ __aicore__ void nddma_nearest(GM_ADDR x, GM_ADDR y) { nddma<true>(x, y); }

// Compact: 5 rows of 6 floats (row pitch 10 in GM) packed back to back in UB, tail padded with 9.
// Loop mode: the same copy repeated for 2 x 3 blocks (inner loop 3, outer 2).
template <bool LOOP>
__aicore__ inline void pad_compact(GM_ADDR x, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 6 * 32 * sizeof(float));
    LocalTensor<float> u = buf.Get<float>();
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, 1024); yg.SetGlobalBuffer((__gm__ float*)y, 6 * 32);
    Duplicate(u, 0.0f, 6 * 32);
    SetFlag<HardEvent::V_MTE2>(0); WaitFlag<HardEvent::V_MTE2>(0);
    DataCopyExtParams p(5, 6 * sizeof(float), 4 * sizeof(float), 0, 0);
    DataCopyPadExtParams<float> pad(true, 0, 0, 9.0f);
    // inner loop: next GM block 64 floats on, next UB block 32 floats on; outer: 256 / 96 floats
    if constexpr (LOOP) SetLoopModePara(LoopModeParams(3, 2, 64 * 4, 32 * 4, 256 * 4, 96 * 4), DataCopyMVType::OUT_TO_UB);
    DataCopyPad<float, PaddingMode::Compact>(u, xg, p, pad);
    if constexpr (LOOP) ResetLoopModePara(DataCopyMVType::OUT_TO_UB);
    SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(yg, u, 6 * 32);
}
extern "C" __global__ __aicore__ void compact(GM_ADDR x, GM_ADDR y) { pad_compact<false>(x, y); }
extern "C" __global__ __aicore__ void compact_loop(GM_ADDR x, GM_ADDR y) { pad_compact<true>(x, y); }
#endif
'''


def _copy_model(x, y, sel, repeats, dst_stride, src_stride, dst_rep, src_rep, slots=128):
    """Copy page: element e of repeat r, if selected, moves from r*srcRep*C0 + (e//C0)*srcStride*C0
    + e%C0 to the same form on the destination side (C0 = 16 halves)."""
    y = y.clone()
    for r in range(repeats):
        for e in range(slots):
            if sel(e):
                y[r * dst_rep * 16 + (e // 16) * dst_stride * 16 + e % 16] = x[r * src_rep * 16 + (e // 16) * src_stride * 16 + e % 16]
    return y


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kernel", ["copy_cont", "copy_bits", "copy_counter"])
def test_copy_masked(arch, kernel):
    x = torch.arange(N, dtype=torch.float16)
    y0 = torch.full((N,), -3.0, dtype=torch.float16)
    y = y0.clone()
    check_ok(run(SRC, kernel, [x, y], arch=arch))
    if kernel == "copy_cont":
        exp = _copy_model(x, y0, lambda e: e < 100, 2, 1, 2, 8, 16)
    elif kernel == "copy_bits":
        m = [0xF0F0F0F0F0F0F0F0, 0x00000000FFFF0001]
        exp = _copy_model(x, y0, lambda e: (m[e // 64] >> (e % 64)) & 1, 3, 2, 1, 16, 8)
    else:
        # counter mode: 40 elements per repeat = 3 whole 32-byte blocks (48 halves), every repeat
        exp = _copy_model(x, y0, lambda e: True, 3, 1, 1, 4, 5, slots=48)
    assert torch.equal(y, exp)


def test_copy_count_3510():
    x = torch.arange(N, dtype=torch.float16)
    y = torch.full((N,), -3.0, dtype=torch.float16)
    check_ok(run(SRC, "copy_count", [x, y], arch="dav-3510"))
    exp = torch.full((N,), -3.0, dtype=torch.float16)
    exp[16:336] = x[32:352]
    assert torch.equal(y, exp)


@pytest.mark.parametrize("arch", ARCHES)
def test_slice_copy(arch):
    x = torch.arange(4 * 8 * 32, dtype=torch.float32)
    y = torch.zeros(4 * 8 * 32)
    check_ok(run(SRC, "slice", [x, y], arch=arch))
    xs = x.reshape(4, 8, 32)[0:3:2, 1:6:2, 8:24]          # [2, 3, 16]
    exp = torch.zeros(4, 8, 32)
    exp[1:4:2, 0:5:2, 0:16] = xs
    assert torch.equal(y.reshape(4, 8, 32), exp)


@pytest.mark.parametrize("kernel", ["nddma_const", "nddma_nearest"])
def test_nddma_3510(kernel):
    x = torch.arange(60, dtype=torch.float16).reshape(6, 10)
    y = torch.zeros(128, dtype=torch.float16)
    check_ok(run(SRC, kernel, [x, y], arch="dav-3510"))
    if kernel == "nddma_const":
        exp = torch.full((8, 16), -1.0, dtype=torch.float16)
        exp[1:7, 2:12] = x
    else:
        ri = torch.arange(8).sub(1).clamp(0, 5)
        ci = torch.arange(16).sub(2).clamp(0, 9)
        exp = x[ri][:, ci]
    assert torch.equal(y.reshape(8, 16), exp)


@pytest.mark.parametrize("kernel", ["compact", "compact_loop"])
def test_datacopypad_compact_and_loop_3510(kernel):
    x = torch.arange(1024, dtype=torch.float32)
    y = torch.full((6 * 32,), -5.0)
    check_ok(run(SRC, kernel, [x, y], arch="dav-3510"))

    def block(src_off):
        rows = [x[src_off + 10 * r: src_off + 10 * r + 6] for r in range(5)]
        return torch.cat(rows + [torch.full((2,), 9.0)])       # 30 floats + pad to 32

    exp = torch.zeros(6 * 32)
    if kernel == "compact":
        exp[:32] = block(0)
    else:
        for o in range(2):
            for i in range(3):
                d = o * 96 + i * 32
                exp[d:d + 32] = block(o * 256 + i * 64)
    assert torch.equal(y, exp)
