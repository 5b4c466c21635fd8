"""Cube API beyond the plain matmul path (emu_cube_ext.h, emu_cube.h, emu_copy.h), each checked
end to end against torch with our own small programs, on both arches where the API exists:

- Load3D v2 / v2 Pro (img2col) feeding Mmad: conv2d with padding, stride and dilation;
  LoadDataWithStride (dav-3510) against the documented NZ image with a fractal stride;
- LoadDataWithTranspose (b8 on both arches, b32 on dav-c220) feeding an int8 / float Mmad;
- Mmad with a bias table (L1 -> BT, half widened to float, or float), cmatrixSource, GEMV
  (m == 1), Fill/InitConstValue of L0A;
- Fixpipe quantisation: DEQF16 (scalar word), VDEQF16 (quant tensor through cbufWorkspace),
  REQ8 with the int8 NZ output (Int8 Channel Merge), DataCopy L0C -> GM with
  DataCopyCO12DstParams and the Fixpipe registers (SetFixpipePreQuantFlag,
  SetFixpipeNz2ndFlag, SetFixPipeConfig);
- dav-3510: Dn2Nz (GM DN -> L1 NZ), the L0C -> UB dual-destination Fixpipe, and MmadMx with
  the MX LoadData (fp8 and fp4x2 operands, e8m0 scales)."""

from __future__ import annotations

import pytest
import torch
from test_ops_harness import check_ok, run

ARCHES = ["dav-c220", "dav-3510"]

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;

// ---- shared pieces: A [M,K] ND -> L1 NZ -> L0A, B [K,N] ND -> L1 NZ -> L0B (b16 types)
template <class T, int M, int K>
__aicore__ inline void load_a(const LocalTensor<T>& a2, const LocalTensor<T>& a1, const GlobalTensor<T>& ag) {
    constexpr int C0 = 32 / sizeof(T), MP = (M + 15) / 16 * 16;
    DataCopy(a1, ag, Nd2NzParams(1, M, K, 0, K, MP, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
#if defined(EMU_ARCH_C220)
    for (int i = 0; i < MP / 16; ++i)
        LoadData(a2[i * K * 16], a1[i * 16 * C0], LoadData2DParams(0, K / C0, MP / 16, 0, 0, false, 0));
#else
    LoadData(a2, a1, LoadData2DParamsV2(0, 0, MP / 16, K / C0, MP / 16, MP / 16, false, 0));
#endif
}
template <class T, int K, int N>
__aicore__ inline void load_b16(const LocalTensor<T>& b2, const LocalTensor<T>& b1, const GlobalTensor<T>& bg) {
    constexpr int C0 = 32 / sizeof(T);
    DataCopy(b1, bg, Nd2NzParams(1, K, N, 0, N, K, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(1); WaitFlag<HardEvent::MTE2_MTE1>(1);
#if defined(EMU_ARCH_C220)
    for (int i = 0; i < K / 16; ++i)
        LoadData(b2[i * N * 16], b1[i * 256], LoadData2DParams(0, N / 16, K / 16, 0, 0, true, 0));
#else
    LoadData(b2, b1, LoadData2DParamsV2(0, 0, K / 16, N / C0, K / 16, N / 16, true, 0));
#endif
}
// B [K,N] ND (b8: C0 = 32; b32: C0 = 8) -> L1 NZ -> L0B through LoadDataWithTranspose
template <class T, int K, int N>
__aicore__ inline void load_b_transpose(const LocalTensor<T>& b2, const LocalTensor<T>& b1, const GlobalTensor<T>& bg) {
    DataCopy(b1, bg, Nd2NzParams(1, K, N, 0, N, K, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(1); WaitFlag<HardEvent::MTE2_MTE1>(1);
    if constexpr (sizeof(T) == 1) {
        // a 32x32 square = the two 16x32 fractals of one K block in one column block; its
        // transpose is the two 16(N)x32(K) L0B fractals of that K block side by side
        for (int kb = 0; kb < K / 32; ++kb) {
#if defined(EMU_ARCH_C220)
            LoadDataWithTranspose(b2[kb * (N / 16) * 512], b1, LoadData2dTransposeParams(kb, N / 32, K / 32, 1, 0));
#else
            LoadDataWithTranspose(b2[kb * (N / 16) * 512], b1, LoadData2dTransposeParamsV2(2 * kb, N / 32, K / 16, 1, 0, 0));
#endif
        }
    } else {
        // b32 (K = 16): a 16x16 square = two 16x8 fractals side by side; its transpose splits
        // into the K-block 0 and K-block 1 fractals of one 16-column block of N
        LoadDataWithTranspose(b2, b1, LoadData2dTransposeParams(0, N / 16, 1, 0, N / 16 - 1));
    }
}
template <class TO, class TC, int M, int N>
__aicore__ inline void fix_nd(const GlobalTensor<TO>& cg, const LocalTensor<TC>& c1, QuantMode_t q = QuantMode_t::NoQuant,
                              uint64_t deq = 0) {
    SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0);
    FixpipeParamsV220 fp(N, M, (M + 15) / 16 * 16, N, false);
    fp.quantPre = q;
    fp.deqScalar = deq;
    Fixpipe<TO, TC, CFG_ROW_MAJOR>(cg, c1, fp);
}

// ---- conv2d through Load3D: x [C1, H, W, C0] (NC1HWC0), w [K, N] with K = (c1, kh, kw, c0)
template <int C, int H, int W, int KH, int KW, int S, int D, int P, int N, bool PRO>
__aicore__ inline void conv(GM_ADDR x, GM_ADDR w, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr int HO = (H + 2 * P - (KH - 1) * D - 1) / S + 1, WO = (W + 2 * P - (KW - 1) * D - 1) / S + 1;
    constexpr int M = HO * WO, MP = (M + 15) / 16 * 16, K = C * KH * KW;
    TPipe pipe;
    TBuf<TPosition::A1> f1b; TBuf<TPosition::B1> b1b; TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b;
    TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(f1b, C * H * W * 2); pipe.InitBuffer(b1b, K * N * 2);
    pipe.InitBuffer(a2b, MP * K * 2); pipe.InitBuffer(b2b, K * N * 2); pipe.InitBuffer(c1b, MP * N * 4);
    GlobalTensor<half> xg, wg; GlobalTensor<float> og;
    xg.SetGlobalBuffer((__gm__ half*)x, C * H * W); wg.SetGlobalBuffer((__gm__ half*)w, K * N);
    og.SetGlobalBuffer((__gm__ float*)out, MP * N);
    LocalTensor<half> f1 = f1b.Get<half>(), b1 = b1b.Get<half>(), a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
    LocalTensor<float> c1 = c1b.Get<float>();
    DataCopy(f1, xg, C * H * W);
    load_b16<half, K, N>(b2, b1, wg);
    const uint8_t pad[4] = {P, P, P, P};
    if constexpr (PRO) {
        SetFmatrix(H, W, pad, FmatrixMode::FMATRIX_LEFT);
        SetLoadDataPaddingValue<half>(half(0));
        uint64_t ext = (uint64_t)K | ((uint64_t)MP << 16);
        uint64_t flt = (uint64_t)S | ((uint64_t)S << 8) | ((uint64_t)KW << 16) | ((uint64_t)KH << 24) |
                       ((uint64_t)D << 32) | ((uint64_t)D << 40);
        LoadData(a2, f1, LoadData3DParamsV2Pro(C, false, false, false, false, false, ext, flt));
    } else {
        LoadData(a2, f1, LoadData3DParamsV2<half>(pad, H, W, C, K, MP, 0, 0, S, S, KW, KH, D, D, false, false, half(0)));
    }
    SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
    Mmad(c1, a2, b2, MmadParams(MP, N, K, 0, false, true));
    fix_nd<float, float, MP, N>(og, c1);
}
extern "C" __global__ __aicore__ void conv_a(GM_ADDR x, GM_ADDR w, GM_ADDR o) { conv<16, 8, 8, 3, 3, 1, 1, 1, 16, false>(x, w, o); }
extern "C" __global__ __aicore__ void conv_b(GM_ADDR x, GM_ADDR w, GM_ADDR o) { conv<32, 9, 7, 3, 3, 2, 1, 1, 32, false>(x, w, o); }
extern "C" __global__ __aicore__ void conv_c(GM_ADDR x, GM_ADDR w, GM_ADDR o) { conv<16, 10, 10, 3, 3, 1, 2, 0, 16, false>(x, w, o); }
extern "C" __global__ __aicore__ void conv_b_pro(GM_ADDR x, GM_ADDR w, GM_ADDR o) { conv<32, 9, 7, 3, 3, 2, 1, 1, 32, true>(x, w, o); }

#if defined(EMU_ARCH_3510)
// LoadDataWithStride: the img2col matrix of a 16-channel 6x6 map (3x3, pad 1) in L0A with the
// K blocks GAP fractals further apart than dense; the L0A image goes to `dump`.
extern "C" __global__ __aicore__ void ld_stride(GM_ADDR x, GM_ADDR dump) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr int C = 16, H = 6, W = 6, K = C * 9, MP = 48, STRIDE = MP / 16 + 1, SIZE = (K / 16) * STRIDE * 256;
    TPipe pipe;
    TBuf<TPosition::A1> f1b; TBuf<TPosition::A2> a2b;
    pipe.InitBuffer(f1b, C * H * W * 2 + SIZE * 2); pipe.InitBuffer(a2b, SIZE * 2);
    GlobalTensor<half> xg, dg;
    xg.SetGlobalBuffer((__gm__ half*)x, C * H * W); dg.SetGlobalBuffer((__gm__ half*)dump, SIZE);
    LocalTensor<half> f1 = f1b.Get<half>(), a2 = a2b.Get<half>();
    DataCopy(f1, xg, C * H * W);
    SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
    const uint8_t pad[4] = {1, 1, 1, 1};
    // mark every L0A fractal with 7 (3510 fills only L1: fill there, then a plain 2D load)
    LocalTensor<half> m1 = f1b.GetWithOffset<half>(SIZE, C * H * W * 2);
    Fill(m1, InitConstValueParams<half>(1, SIZE * 2 / 32, 0, half(7)));
    SetFlag<HardEvent::MTE2_MTE1>(1); WaitFlag<HardEvent::MTE2_MTE1>(1);
    LoadData(a2, m1, LoadData2DParams(0, SIZE / 256, 1, 0, 0, false, 0));
    SetLoadDataRepeatWithStride(LoadDataRepeatParamWithStride(0, 1, 0, STRIDE));
    LoadDataWithStride(a2, f1, LoadData3DParamsV2<half>(pad, H, W, C, K, MP, 0, 0, 1, 1, 3, 3, 1, 1, false, false, half(-1)));
    PipeBarrier<PIPE_ALL>();
    for (int i = 0; i < SIZE; ++i) dg.SetValue(i, a2.GetValue(i));
}
#endif

// ---- int8 matmul with the B operand through LoadDataWithTranspose; the output path by MODE:
// 0 int32 ND, 1 DEQF16 half ND, 2 VDEQF16 half ND (quant tensor in L1), 3 REQ8 int8 NZ,
// 4 DataCopy L0C -> GM (DataCopyCO12DstParams, DEQF16 through SetFixpipePreQuantFlag),
// 5 the same with VDEQF16 through SetFixPipeConfig
template <int MODE>
__aicore__ inline void mm_s8(GM_ADDR a, GM_ADDR b, GM_ADDR q, GM_ADDR c, uint64_t deq) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr int M = 32, K = 64, N = 64;
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b; TBuf<TPosition::A1> q1b;
    TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, M * K); pipe.InitBuffer(b1b, K * N); pipe.InitBuffer(q1b, N * 8);
    pipe.InitBuffer(a2b, M * K); pipe.InitBuffer(b2b, K * N); pipe.InitBuffer(c1b, M * N * 4);
    GlobalTensor<int8_t> ag, bg; GlobalTensor<uint64_t> qg;
    ag.SetGlobalBuffer((__gm__ int8_t*)a, M * K); bg.SetGlobalBuffer((__gm__ int8_t*)b, K * N);
    qg.SetGlobalBuffer((__gm__ uint64_t*)q, N);
    LocalTensor<int8_t> a1 = a1b.Get<int8_t>(), b1 = b1b.Get<int8_t>(), a2 = a2b.Get<int8_t>(), b2 = b2b.Get<int8_t>();
    LocalTensor<uint64_t> q1 = q1b.Get<uint64_t>();
    LocalTensor<int32_t> c1 = c1b.Get<int32_t>();
    load_a<int8_t, M, K>(a2, a1, ag);
    load_b_transpose<int8_t, K, N>(b2, b1, bg);
    DataCopy(q1, qg, N);
    SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
    Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
    SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0);
    SetFlag<HardEvent::MTE2_FIX>(0); WaitFlag<HardEvent::MTE2_FIX>(0);
    if constexpr (MODE == 0) {
        GlobalTensor<int32_t> cg; cg.SetGlobalBuffer((__gm__ int32_t*)c, M * N);
        fix_nd<int32_t, int32_t, M, N>(cg, c1);
    } else if constexpr (MODE == 1 || MODE == 2) {
        GlobalTensor<half> cg; cg.SetGlobalBuffer((__gm__ half*)c, M * N);
        FixpipeParamsV220 fp(N, M, M, N, false);
        fp.quantPre = MODE == 1 ? QuantMode_t::DEQF16 : QuantMode_t::VDEQF16;
        fp.deqScalar = deq;
        if constexpr (MODE == 1) Fixpipe<half, int32_t, CFG_ROW_MAJOR>(cg, c1, fp);
        else Fixpipe<half, int32_t, CFG_ROW_MAJOR>(cg, c1, q1, fp);
    } else if constexpr (MODE == 3) {
        GlobalTensor<int8_t> cg; cg.SetGlobalBuffer((__gm__ int8_t*)c, M * N);
#if defined(EMU_ARCH_C220)
        FixpipeParamsV220 fp(N, M, M, M, false);   // NZ: dstStride in 32-byte blocks
        fp.quantPre = QuantMode_t::REQ8;
        fp.deqScalar = deq;
        Fixpipe<int8_t, int32_t, CFG_NZ>(cg, c1, fp);
#else
        FixpipeParamsArch3510<CO2Layout::NZ> fp(N, M, M, M * 32);   // NZ: dstStride in elements
        fp.quantPre = QuantMode_t::REQ8;
        fp.deqScalar = deq;
        Fixpipe<int8_t, int32_t, CFG_NZ>(cg, c1, fp);
#endif
    } else {
        GlobalTensor<half> cg; cg.SetGlobalBuffer((__gm__ half*)c, M * N);
        if constexpr (MODE == 4) SetFixpipePreQuantFlag(deq);
        else SetFixPipeConfig<uint64_t>(q1);
        SetFixpipeNz2ndFlag(1, 0, 0);
        DataCopy(cg, c1, DataCopyCO12DstParams(N, M, N, M, MODE == 4 ? QuantMode_t::DEQF16 : QuantMode_t::VDEQF16, 0, false, true));
    }
}
extern "C" __global__ __aicore__ void s8_i32(GM_ADDR a, GM_ADDR b, GM_ADDR q, GM_ADDR c, uint64_t d) { mm_s8<0>(a, b, q, c, d); }
extern "C" __global__ __aicore__ void s8_deq(GM_ADDR a, GM_ADDR b, GM_ADDR q, GM_ADDR c, uint64_t d) { mm_s8<1>(a, b, q, c, d); }
extern "C" __global__ __aicore__ void s8_vdeq(GM_ADDR a, GM_ADDR b, GM_ADDR q, GM_ADDR c, uint64_t d) { mm_s8<2>(a, b, q, c, d); }
extern "C" __global__ __aicore__ void s8_req8_nz(GM_ADDR a, GM_ADDR b, GM_ADDR q, GM_ADDR c, uint64_t d) { mm_s8<3>(a, b, q, c, d); }
extern "C" __global__ __aicore__ void s8_dc_deq(GM_ADDR a, GM_ADDR b, GM_ADDR q, GM_ADDR c, uint64_t d) { mm_s8<4>(a, b, q, c, d); }
extern "C" __global__ __aicore__ void s8_dc_vdeq(GM_ADDR a, GM_ADDR b, GM_ADDR q, GM_ADDR c, uint64_t d) { mm_s8<5>(a, b, q, c, d); }

#if defined(EMU_ARCH_C220)
// float matmul [32,16] x [16,32] with B through the b32 LoadDataWithTranspose
extern "C" __global__ __aicore__ void f32_transpose(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr int M = 32, K = 16, N = 32;
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b; TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b;
    TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, M * K * 4); pipe.InitBuffer(b1b, K * N * 4);
    pipe.InitBuffer(a2b, M * K * 4); pipe.InitBuffer(b2b, K * N * 4); pipe.InitBuffer(c1b, M * N * 4);
    GlobalTensor<float> ag, bg, cg;
    ag.SetGlobalBuffer((__gm__ float*)a, M * K); bg.SetGlobalBuffer((__gm__ float*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    LocalTensor<float> a1 = a1b.Get<float>(), b1 = b1b.Get<float>(), a2 = a2b.Get<float>(), b2 = b2b.Get<float>();
    LocalTensor<float> c1 = c1b.Get<float>();
    load_a<float, M, K>(a2, a1, ag);
    load_b_transpose<float, K, N>(b2, b1, bg);
    SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
    Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
    fix_nd<float, float, M, N>(cg, c1);
}
#endif

// ---- half matmul [32,64] x [64,48] + bias through the bias table.
// MODE 0: half bias widened to float on L1 -> BT; 1: float bias; 2: cmatrixSource (no bias
// tensor: C starts from BT offset 0); 3: A := Fill(2.0) in L0A instead of loading A;
// 4: GEMV (m = 1, A a K-vector in L1 and L0A)
template <int MODE>
__aicore__ inline void mm_bias(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr int M = MODE == 4 ? 1 : 32, MP = (M + 15) / 16 * 16, K = MODE == 4 ? 512 : 64, N = 48;
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b; TBuf<TPosition::C1> z1b;
    TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b; TBuf<TPosition::C2> btb;
    pipe.InitBuffer(a1b, MP * K * 2); pipe.InitBuffer(b1b, K * N * 2); pipe.InitBuffer(z1b, N * 4);
    pipe.InitBuffer(a2b, MP * K * 2); pipe.InitBuffer(b2b, K * N * 2); pipe.InitBuffer(c1b, MP * N * 4);
    pipe.InitBuffer(btb, N * 4);
    GlobalTensor<half> ag, bg; GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, M * K); bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    LocalTensor<half> a1 = a1b.Get<half>(), b1 = b1b.Get<half>(), a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
    LocalTensor<float> c1 = c1b.Get<float>(), bt = btb.Get<float>();
    if constexpr (MODE == 3) {
#if defined(EMU_ARCH_C220)
        InitConstValue(a2, InitConstValueParams<half>(1, MP * K * 2 / 512, 0, half(2.0)));   // L0A, 512-byte units
#else
        Fill(a1, InitConstValueParams<half>(2, MP * K * 2 / 64, 0, half(2.0)));   // 3510: L1 only, 32-byte units
        SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
        LoadData(a2, a1, LoadData2DParamsV2(0, 0, MP / 16, K / 16, MP / 16, MP / 16, false, 0));
#endif
    } else if constexpr (MODE == 4) {
        DataCopy(a1, ag, Nd2NzParams(1, 1, K, 0, K, 1, 1, 0));    // L1: A is a plain K-vector
        SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
#if defined(EMU_ARCH_C220)
        LoadData(a2, a1, LoadData2DParams(0, K / 256, 1, 0, 0, false, 0));
#else
        LoadData(a2, a1, LoadData2DParamsV2(0, 0, 1, K / 256, 1, 1, false, 0));
#endif
    } else {
        load_a<half, M, K>(a2, a1, ag);
    }
    load_b16<half, K, N>(b2, b1, bg);
#if defined(EMU_ARCH_C220)
    constexpr uint16_t unit = 64;   // BT blockLen unit in bytes
#else
    constexpr uint16_t unit = 32;
#endif
    if constexpr (MODE == 0) {
        GlobalTensor<half> zg; zg.SetGlobalBuffer((__gm__ half*)bias, N);
        LocalTensor<half> z1 = z1b.Get<half>();
        DataCopy(z1, zg, N);
        SetFlag<HardEvent::MTE2_MTE1>(2); WaitFlag<HardEvent::MTE2_MTE1>(2);
        DataCopy(bt, z1, DataCopyParams(1, N * 4 / unit, 0, 0));     // blockLen counts BT (float) bytes
    } else if constexpr (MODE != 4 && MODE != 3) {
        GlobalTensor<float> zg; zg.SetGlobalBuffer((__gm__ float*)bias, N);
        LocalTensor<float> z1 = z1b.Get<float>();
        DataCopy(z1, zg, N);
        SetFlag<HardEvent::MTE2_MTE1>(2); WaitFlag<HardEvent::MTE2_MTE1>(2);
        DataCopy(bt, z1, DataCopyParams(1, N * 4 / unit, 0, 0));
    }
    SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
    if constexpr (MODE <= 1) {
        Mmad(c1, a2, b2, bt, MmadParams(M, N, K, 0, false, true));
    } else if constexpr (MODE == 2) {
        Mmad(c1, a2, b2, MmadParams(M, N, K, 0, true, false));
    } else {
        Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
    }
    fix_nd<float, float, M, N>(cg, c1);
}
extern "C" __global__ __aicore__ void bias_h(GM_ADDR a, GM_ADDR b, GM_ADDR z, GM_ADDR c) { mm_bias<0>(a, b, z, c); }
extern "C" __global__ __aicore__ void bias_f(GM_ADDR a, GM_ADDR b, GM_ADDR z, GM_ADDR c) { mm_bias<1>(a, b, z, c); }
extern "C" __global__ __aicore__ void bias_csrc(GM_ADDR a, GM_ADDR b, GM_ADDR z, GM_ADDR c) { mm_bias<2>(a, b, z, c); }
extern "C" __global__ __aicore__ void fill_a(GM_ADDR a, GM_ADDR b, GM_ADDR z, GM_ADDR c) { mm_bias<3>(a, b, z, c); }
extern "C" __global__ __aicore__ void gemv(GM_ADDR a, GM_ADDR b, GM_ADDR z, GM_ADDR c) { mm_bias<4>(a, b, z, c); }

#if defined(EMU_ARCH_3510)
// A given column-major (GM holds A^T [K, M]) through Dn2Nz
extern "C" __global__ __aicore__ void dn2nz(GM_ADDR at, GM_ADDR b, GM_ADDR c) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr int M = 32, K = 64, N = 48, C0 = 16;
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b; TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b;
    TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, M * K * 2); pipe.InitBuffer(b1b, K * N * 2);
    pipe.InitBuffer(a2b, M * K * 2); pipe.InitBuffer(b2b, K * N * 2); pipe.InitBuffer(c1b, M * N * 4);
    GlobalTensor<half> ag, bg; GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)at, M * K); bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    LocalTensor<half> a1 = a1b.Get<half>(), b1 = b1b.Get<half>(), a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
    LocalTensor<float> c1 = c1b.Get<float>();
    DataCopy(a1, ag, Dn2NzParams(1, M, K, 0, M, M, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
    LoadData(a2, a1, LoadData2DParamsV2(0, 0, M / 16, K / C0, M / 16, M / 16, false, 0));
    load_b16<half, K, N>(b2, b1, bg);
    SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
    Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
    fix_nd<float, float, M, N>(cg, c1);
}

// MmadMx: A [32, 64] and B^T [32, 64] (fp8 or fp4x2, packed bytes in GM), e8m0 scales
// [rows, K/32] for both; LoadData with LoadData2DMxParams moves data and scales together.
template <class TA, class TB>
__aicore__ inline void mx(GM_ADDR a, GM_ADDR sa, GM_ADDR b, GM_ADDR sb, GM_ADDR c) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr int M = 32, N = 32, K = 64;
    constexpr int EPB = IsSameType<TA, fp8_e4m3fn_t>::value || IsSameType<TA, fp8_e5m2_t>::value ? 1 : 2;
    constexpr int KB = K / EPB;   // bytes per row
    TPipe pipe;
    TBuf<TPosition::A1> a1b, sa1b; TBuf<TPosition::B1> b1b, sb1b;
    TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, M * KB); pipe.InitBuffer(sa1b, M * 2); pipe.InitBuffer(b1b, N * KB); pipe.InitBuffer(sb1b, N * 2);
    pipe.InitBuffer(a2b, M * KB); pipe.InitBuffer(b2b, N * KB); pipe.InitBuffer(c1b, M * N * 4);
    GlobalTensor<TA> ag; GlobalTensor<TB> bg; GlobalTensor<uint16_t> sag, sbg; GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ TA*)a, M * KB); bg.SetGlobalBuffer((__gm__ TB*)b, N * KB);
    sag.SetGlobalBuffer((__gm__ uint16_t*)sa, M); sbg.SetGlobalBuffer((__gm__ uint16_t*)sb, N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    LocalTensor<TA> a1 = a1b.Get<TA>(), a2 = a2b.Get<TA>();
    LocalTensor<TB> b1 = b1b.Get<TB>(), b2 = b2b.Get<TB>();
    LocalTensor<fp8_e8m0_t> sa1 = sa1b.Get<fp8_e8m0_t>(), sb1 = sb1b.Get<fp8_e8m0_t>();
    LocalTensor<float> c1 = c1b.Get<float>();
    DataCopy(a1, ag, Nd2NzParams(1, M, KB, 0, KB, M, 1, 0));
    DataCopy(b1, bg, Nd2NzParams(1, N, KB, 0, KB, N, 1, 0));
    // the scale pairs of a row as one b16 element: [rows, 1] DN -> the 16 x 2 scale fractals
    LocalTensor<uint16_t> sa16 = sa1.template ReinterpretCast<uint16_t>(), sb16 = sb1.template ReinterpretCast<uint16_t>();
    DataCopy(sa16, sag, Dn2NzParams(1, 1, M, 0, 1, 1, 1, 0));
    DataCopy(sb16, sbg, Dn2NzParams(1, 1, N, 0, 1, 1, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
    LoadData(a2, a1, sa1, LoadData2DParamsV2(0, 0, M / 16, KB / 32, M / 16, M / 16, false, 0), LoadData2DMxParams(0, 0, M / 16, 1, 1, 1));
    LoadData(b2, b1, sb1, LoadData2DParamsV2(0, 0, N / 16, KB / 32, N / 16, N / 16, false, 0), LoadData2DMxParams(0, 0, N / 16, 1, 1, 1));
    SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
    MmadParams mp(M, N, K, 0, false, true);
    MmadMx(c1, a2, b2, mp);
    fix_nd<float, float, M, N>(cg, c1);
}
extern "C" __global__ __aicore__ void mx_fp8(GM_ADDR a, GM_ADDR sa, GM_ADDR b, GM_ADDR sb, GM_ADDR c) { mx<fp8_e4m3fn_t, fp8_e5m2_t>(a, sa, b, sb, c); }
extern "C" __global__ __aicore__ void mx_fp4(GM_ADDR a, GM_ADDR sa, GM_ADDR b, GM_ADDR sb, GM_ADDR c) { mx<fp4x2_e2m1_t, fp4x2_e1m2_t>(a, sa, b, sb, c); }

// L0C -> UB with dualDstCtl (1: AIV s gets rows [s*M/2, (s+1)*M/2); 2: columns [s*N/2, ...)),
// each AIV writes its half of C to GM after a mode-2 flag from the AIC.
template <int CTL>
__aicore__ inline void dual(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    constexpr int M = 32, K = 64, N = 64;
    GlobalTensor<float> cg; cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    LocalTensor<float> ub(TPosition::VECOUT, 0, M * N / 2);
    if ASCEND_IS_AIC {
        TPipe pipe;
        TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b; TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b;
        TBuf<TPosition::CO1> c1b;
        pipe.InitBuffer(a1b, M * K * 2); pipe.InitBuffer(b1b, K * N * 2);
        pipe.InitBuffer(a2b, M * K * 2); pipe.InitBuffer(b2b, K * N * 2); pipe.InitBuffer(c1b, M * N * 4);
        GlobalTensor<half> ag, bg;
        ag.SetGlobalBuffer((__gm__ half*)a, M * K); bg.SetGlobalBuffer((__gm__ half*)b, K * N);
        LocalTensor<half> a1 = a1b.Get<half>(), b1 = b1b.Get<half>(), a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
        LocalTensor<float> c1 = c1b.Get<float>();
        load_a<half, M, K>(a2, a1, ag);
        load_b16<half, K, N>(b2, b1, bg);
        SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
        Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
        SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0);
        FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fp(N, M, M, CTL == 1 ? N : N / 2);
        fp.dualDstCtl = CTL;
        Fixpipe<float, float, EMU_CFG_ROW_MAJOR_UB>(ub, c1, fp);
        CrossCoreSetFlag<2, PIPE_FIX>(3);
    }
    if ASCEND_IS_AIV {
        int s = GetSubBlockIdx();
        CrossCoreWaitFlag<2, PIPE_MTE3>(3);
        if constexpr (CTL == 1) {
            DataCopy(cg[s * (M / 2) * N], ub, M * N / 2);
        } else {
            DataCopy(cg[s * (N / 2)], ub, DataCopyParams(M, N / 2 * 4 / 32, 0, N / 2 * 4 / 32));
        }
    }
}
extern "C" __global__ __aicore__ void dual_m(GM_ADDR a, GM_ADDR b, GM_ADDR c) { dual<1>(a, b, c); }
extern "C" __global__ __aicore__ void dual_n(GM_ADDR a, GM_ADDR b, GM_ADDR c) { dual<2>(a, b, c); }
// 16 rows: each AIV's half is 8 rows, starting 8 rows into the accumulator's fractals. The next
// accumulator sits right after it in L0C; its Mmad needs no flag against the Fixpipe (other bytes).
extern "C" __global__ __aicore__ void dual_tail(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    constexpr int M = 16, K = 64, N = 64;
    GlobalTensor<float> cg; cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    LocalTensor<float> ub(TPosition::VECOUT, 0, M * N / 2);
    if ASCEND_IS_AIC {
        TPipe pipe;
        TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b; TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b;
        TBuf<TPosition::CO1> c1b;
        pipe.InitBuffer(a1b, M * K * 2); pipe.InitBuffer(b1b, K * N * 2);
        pipe.InitBuffer(a2b, M * K * 2); pipe.InitBuffer(b2b, K * N * 2); pipe.InitBuffer(c1b, 2 * M * N * 4);
        GlobalTensor<half> ag, bg;
        ag.SetGlobalBuffer((__gm__ half*)a, M * K); bg.SetGlobalBuffer((__gm__ half*)b, K * N);
        GlobalTensor<float> dg; dg.SetGlobalBuffer((__gm__ float*)d, M * N);
        LocalTensor<half> a1 = a1b.Get<half>(), b1 = b1b.Get<half>(), a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
        LocalTensor<float> c1 = c1b.Get<float>();
        LocalTensor<float> c2 = c1[M * N];
        load_a<half, M, K>(a2, a1, ag);
        load_b16<half, K, N>(b2, b1, bg);
        SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
        Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
        SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0);
        FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fp(N, M, M, N);
        fp.dualDstCtl = 1;
        Fixpipe<float, float, EMU_CFG_ROW_MAJOR_UB>(ub, c1, fp);
        CrossCoreSetFlag<2, PIPE_FIX>(3);
        Mmad(c2, a2, b2, MmadParams(M, N, K, 0, false, true));
        SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0);
        FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fg(N, M, M, N);
        Fixpipe(dg, c2, fg);
    }
    if ASCEND_IS_AIV {
        int s = GetSubBlockIdx();
        CrossCoreWaitFlag<2, PIPE_MTE3>(3);
        DataCopy(cg[s * (M / 2) * N], ub, M * N / 2);
    }
}
#endif
'''


def _f32_bits(x: float) -> int:
    return int(torch.tensor([x], dtype=torch.float32).view(torch.int32).item()) & 0xFFFFFFFF


def _im2col(x: torch.Tensor, kh: int, kw: int, s: int, d: int, p: int) -> torch.Tensor:
    """[C, H, W] -> [Ho*Wo, K] with K ordered (c1, kh, kw, c0), C0 = 16 (half)."""
    c = x.shape[0]
    cols = torch.nn.functional.unfold(x[None].double(), (kh, kw), dilation=d, padding=p, stride=s)[0]  # [C*kh*kw, L]
    cols = cols.reshape(c // 16, 16, kh, kw, -1).permute(4, 0, 2, 3, 1)   # [L, c1, kh, kw, c0]
    return cols.reshape(cols.shape[0], -1)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kernel,c,h,w,kh,kw,s,d,p,n", [
    ("conv_a", 16, 8, 8, 3, 3, 1, 1, 1, 16),
    ("conv_b", 32, 9, 7, 3, 3, 2, 1, 1, 32),
    ("conv_c", 16, 10, 10, 3, 3, 1, 2, 0, 16),
    ("conv_b_pro", 32, 9, 7, 3, 3, 2, 1, 1, 32),
])
def test_load3d_conv(arch, kernel, c, h, w, kh, kw, s, d, p, n):
    """Load3D (LoadData_3D page: v2 params, or the Pro form with SetFmatrix and
    SetLoadDataPaddingValue) + Mmad computes conv2d = im2col(x) @ W."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(c, h, w, generator=g).half()
    wt = torch.randn(n, c, kh, kw, generator=g).half()
    ho, wo = (h + 2 * p - (kh - 1) * d - 1) // s + 1, (w + 2 * p - (kw - 1) * d - 1) // s + 1
    mp = (ho * wo + 15) // 16 * 16
    xg = x.reshape(c // 16, 16, h, w).permute(0, 2, 3, 1).contiguous()          # NC1HWC0
    wk = wt.reshape(n, c // 16, 16, kh, kw).permute(1, 3, 4, 2, 0).reshape(-1, n).contiguous()  # [K, N]
    out = torch.full((mp, n), 99.0)
    check_ok(run(SRC, kernel, [xg, wk, out], arch=arch, kernel_type="aic"))
    ref = torch.nn.functional.conv2d(x[None].double(), wt.double(), stride=s, padding=p, dilation=d)[0]
    ref = ref.reshape(n, -1).T
    torch.testing.assert_close(out[: ho * wo].double(), ref, rtol=1e-3, atol=1e-3)
    assert (out[ho * wo:] == 0).all()   # rows past Ho*Wo are padding (pad value 0)
    # the img2col order itself
    torch.testing.assert_close(_im2col(x, kh, kw, s, d, p) @ wk.double(), ref, rtol=1e-9, atol=1e-9)


def test_load_data_with_stride_3510():
    """LoadDataWithStride (dav-3510): L0A NZ with the K blocks STRIDE fractals apart; the
    fractals in the gaps keep what was there before (7, from Fill on L1 and a 2D load), padding positions hold the pad
    value (-1)."""
    c, h, w, mp = 16, 6, 6, 48
    stride = mp // 16 + 1
    x = torch.randn(c, h, w, generator=torch.Generator().manual_seed(3)).half()
    xg = x.reshape(1, 16, h, w).permute(0, 2, 3, 1).contiguous()
    size = (c * 9 // 16) * stride * 256
    dump = torch.zeros(size, dtype=torch.float16)
    check_ok(run(SRC, "ld_stride", [xg, dump], arch="dav-3510", kernel_type="aic"))
    xp = torch.nn.functional.pad(x.double(), (1, 1, 1, 1), value=-1.0)   # pad value -1
    cols = _im2col(xp, 3, 3, 1, 1, 0).half()                              # [36, 144]
    xm = torch.full((mp, c * 9), -1.0, dtype=torch.float16)
    xm[:36] = cols
    exp = torch.full((c * 9 // 16, stride, 16, 16), 7.0, dtype=torch.float16)
    exp[:, : mp // 16] = xm.reshape(mp // 16, 16, c * 9 // 16, 16).permute(2, 0, 1, 3)
    assert torch.equal(dump.view(torch.int16), exp.reshape(-1).view(torch.int16))


def _s8(shape, g, lo=-4, hi=4):
    return torch.randint(lo, hi + 1, shape, generator=g, dtype=torch.int8)


def _scales(n):
    # exact in a 10-bit mantissa (the quant word keeps bits [31:13] of the float)
    return [2.0 ** -(j % 5) * (1 + (j % 3) / 4) for j in range(n)]


def _qwords(scales, signed=False):
    return torch.tensor([_f32_bits(s) | ((1 << 46) if signed else 0) for s in scales], dtype=torch.int64)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kernel", ["s8_i32", "s8_deq", "s8_vdeq", "s8_req8_nz", "s8_dc_deq", "s8_dc_vdeq"])
def test_int8_matmul_transpose_and_quant(arch, kernel):
    """int8 Mmad with B through LoadDataWithTranspose (b8 squares), then the Fixpipe quant
    modes (随路量化 page) and the DataCopy L0C -> GM form with its registers."""
    m, k, n = 32, 64, 64
    g = torch.Generator().manual_seed(11)
    a, b = _s8((m, k), g), _s8((k, n), g)
    acc = a.int() @ b.int()
    scales = _scales(n)
    q = _qwords(scales)
    if kernel == "s8_i32":
        c = torch.zeros(m, n, dtype=torch.int32)
        check_ok(run(SRC, kernel, [a, b, q, c, 0], arch=arch, kernel_type="aic"))
        assert torch.equal(c, acc)
        return
    if kernel == "s8_req8_nz":
        c = torch.zeros(m * n, dtype=torch.int8)
        word = _f32_bits(1 / 16) | (1 << 46)           # scale 1/16, int8 result (bit 46)
        check_ok(run(SRC, kernel, [a, b, q, c, word], arch=arch, kernel_type="aic"))
        r = torch.round(acc.double() / 16).clamp(-128, 127).to(torch.int8)   # ties to even
        # Int8 Channel Merge: NZ blocks 32 columns wide, [n/32][m][32]
        exp = r.reshape(m, n // 32, 32).permute(1, 0, 2).reshape(-1)
        assert torch.equal(c, exp)
        return
    c = torch.zeros(m, n, dtype=torch.float16)
    word = _f32_bits(0.0625)
    check_ok(run(SRC, kernel, [a, b, q, c, word], arch=arch, kernel_type="aic"))
    sc = torch.tensor(scales, dtype=torch.float64) if kernel in ("s8_vdeq", "s8_dc_vdeq") else 0.0625
    exp = (acc.double() * sc).half()
    assert torch.equal(c.view(torch.int16), exp.view(torch.int16))


def test_f32_transpose_c220():
    """b32 LoadDataWithTranspose (dav-c220): two 16x8 fractals per square."""
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(32, 16, generator=g), torch.randn(16, 32, generator=g)
    c = torch.zeros(32, 32)
    check_ok(run(SRC, "f32_transpose", [a, b, c], arch="dav-c220", kernel_type="aic"))
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kernel", ["bias_h", "bias_f", "bias_csrc", "fill_a", "gemv"])
def test_mmad_bias_fill_gemv(arch, kernel):
    """Mmad with a bias table (L1 -> BT, half widened to float, or float), cmatrixSource
    (C starts from BT), A filled by InitConstValue / Fill (L0A on c220, L1 on 3510), GEMV (m = 1)."""
    g = torch.Generator().manual_seed(13)
    m, k, n = (1, 512, 48) if kernel == "gemv" else (32, 64, 48)
    a = torch.randn(m, k, generator=g).half()
    b = torch.randn(k, n, generator=g).half()
    z = torch.randn(n, generator=g)
    z = z.half() if kernel == "bias_h" else z
    c = torch.full((m, n), 99.0)
    check_ok(run(SRC, kernel, [a, b, z, c], arch=arch, kernel_type="aic"))
    if kernel == "fill_a":
        ref = (2.0 * b.double().sum(0)).expand(m, n)
    else:
        ref = a.double() @ b.double()
        if kernel != "gemv":
            ref = ref + z.double()
    torch.testing.assert_close(c.double(), ref, rtol=2e-3, atol=2e-3)


def test_dn2nz_3510():
    """DataCopy GM DN -> L1 NZ (DN2NZ page): A stored column-major."""
    g = torch.Generator().manual_seed(17)
    a = torch.randn(32, 64, generator=g).half()
    b = torch.randn(64, 48, generator=g).half()
    c = torch.zeros(32, 48)
    check_ok(run(SRC, "dn2nz", [a.T.contiguous(), b, c], arch="dav-3510", kernel_type="aic"))
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("kernel", ["dual_m", "dual_n"])
def test_dual_destination_fixpipe_3510(kernel):
    """L0C -> UB with dualDstCtl (L0C-Buffer到UB双目标模式 page): each AIV receives half of C."""
    g = torch.Generator().manual_seed(19)
    a = torch.randn(32, 64, generator=g).half()
    b = torch.randn(64, 64, generator=g).half()
    c = torch.zeros(32, 64)
    check_ok(run(SRC, kernel, [a, b, c], arch="dav-3510", kernel_type="mix_aic_1_2"))
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-3, atol=1e-3)


def test_dual_destination_fixpipe_reads_only_its_rows_3510():
    """Each half of a dual-destination Fixpipe of 16 rows reads 8 rows of every fractal (the
    Fixpipe reads mSize rows, not the fractal's padded 16): an Mmad into the L0C bytes right after
    the accumulator, with no flag against the Fixpipe, is no race."""
    g = torch.Generator().manual_seed(29)
    a = torch.randn(16, 64, generator=g).half()
    b = torch.randn(64, 64, generator=g).half()
    c, d = torch.zeros(16, 64), torch.zeros(16, 64)
    check_ok(run(SRC, "dual_tail", [a, b, c, d], arch="dav-3510", kernel_type="mix_aic_1_2"))
    ref = a.double() @ b.double()
    torch.testing.assert_close(c.double(), ref, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(d.double(), ref, rtol=1e-3, atol=1e-3)


_FP4 = {
    "e2m1": [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0],
    "e1m2": [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75],
}


def _fp4(codes, fmt):
    mag = torch.tensor(_FP4[fmt], dtype=torch.float64)[codes & 7]
    return torch.where(codes & 8 != 0, -mag, mag)


@pytest.mark.parametrize("kernel", ["mx_fp8", "mx_fp4"])
def test_mmad_mx_3510(kernel):
    """MmadMx (MmadMx page): C = (scaleA (x) A) * (scaleB (x) B), one e8m0 scale per 32 K
    elements; data and scales moved by one LoadData with LoadData2DMxParams (LoadData_2D_MX)."""
    m, n, k = 32, 32, 64
    g = torch.Generator().manual_seed(23)
    sa = torch.randint(124, 131, (m, k // 32), generator=g, dtype=torch.uint8)
    sb = torch.randint(124, 131, (n, k // 32), generator=g, dtype=torch.uint8)
    if kernel == "mx_fp8":
        a = (torch.randn(m, k, generator=g) * 4).to(torch.float8_e4m3fn)
        bt = (torch.randn(n, k, generator=g) * 4).to(torch.float8_e5m2)
        av, bv = a.double(), bt.double()
        a_gm, b_gm = a.view(torch.uint8), bt.view(torch.uint8)
    else:
        ac = torch.randint(0, 16, (m, k), generator=g)
        bc = torch.randint(0, 16, (n, k), generator=g)
        av, bv = _fp4(ac, "e2m1"), _fp4(bc, "e1m2")
        # two fp4 per byte, element 2i in the low nibble
        a_gm = (ac[:, 0::2] | (ac[:, 1::2] << 4)).to(torch.uint8)
        b_gm = (bc[:, 0::2] | (bc[:, 1::2] << 4)).to(torch.uint8)
    c = torch.zeros(m, n)
    check_ok(run(SRC, kernel, [a_gm.contiguous(), sa, b_gm.contiguous(), sb, c], arch="dav-3510", kernel_type="aic"))
    ea = torch.pow(2.0, sa.double() - 127).repeat_interleave(32, 1)
    eb = torch.pow(2.0, sb.double() - 127).repeat_interleave(32, 1)
    ref = (av * ea) @ (bv * eb).T
    torch.testing.assert_close(c.double(), ref, rtol=1e-5, atol=1e-5)
