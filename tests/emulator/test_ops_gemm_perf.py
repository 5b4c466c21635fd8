"""Emulation speed of the cube path: a 1024^3 fp16 GEMM (8 AIC blocks, 128x128 tiles, K steps
of 256) must emulate in well under 3 s, and be numerically right."""
import time

import pytest
import torch
from test_ops_harness import check_ok, run

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int M = 1024, N = 1024, K = 1024, BM = 128, BN = 128, BK = 256;

extern "C" __global__ __aicore__ void gemm(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b;
    TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, BM * BK * 2); pipe.InitBuffer(b1b, BK * BN * 2);
    pipe.InitBuffer(a2b, BM * BK * 2); pipe.InitBuffer(b2b, BK * BN * 2);
    pipe.InitBuffer(c1b, BM * BN * 4);
    GlobalTensor<half> ag, bg, cg;
    ag.SetGlobalBuffer((__gm__ half*)a, M * K); bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ half*)c, M * N);
    LocalTensor<half> a1 = a1b.Get<half>(), b1 = b1b.Get<half>(), a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
    LocalTensor<float> c1 = c1b.Get<float>();
    const int tiles = (M / BM) * (N / BN);
    for (int t = GetBlockIdx(); t < tiles; t += GetBlockNum()) {
        int tm = t / (N / BN), tn = t % (N / BN);
        for (int kk = 0; kk < K; kk += BK) {
            DataCopy(a1, ag[tm * BM * K + kk], Nd2NzParams(1, BM, BK, 0, K, BM, 1, 0));
            DataCopy(b1, bg[kk * N + tn * BN], Nd2NzParams(1, BK, BN, 0, N, BK, 1, 0));
            SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
#if defined(EMU_ARCH_C220)
            for (int i = 0; i < BM / 16; ++i)
                LoadData(a2[i * BK * 16], a1[i * 256], LoadData2DParams(0, BK / 16, BM / 16, 0, 0, false, 0));
            for (int i = 0; i < BK / 16; ++i)
                LoadData(b2[i * BN * 16], b1[i * 256], LoadData2DParams(0, BN / 16, BK / 16, 0, 0, true, 0));
#else
            LoadData(a2, a1, LoadData2DParamsV2(0, 0, BM / 16, BK / 16, BM / 16, BM / 16, false, 0));
            LoadData(b2, b1, LoadData2DParamsV2(0, 0, BK / 16, BN / 16, BK / 16, BN / 16, true, 0));
#endif
            SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
            Mmad(c1, a2, b2, MmadParams(BM, BN, BK, 0, false, kk == 0));
            PipeBarrier<PIPE_ALL>();
        }
#if defined(EMU_ARCH_C220)
        FixpipeParamsV220 fp(BN, BM, BM, N, false);
        fp.quantPre = QuantMode_t::F322F16;
        Fixpipe<half, float, CFG_ROW_MAJOR>(cg[tm * BM * N + tn * BN], c1, fp);
#else
        FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fp(BN, BM, BM, N);
        fp.quantPre = QuantMode_t::F322F16;
        Fixpipe<half, float, CFG_ROW_MAJOR>(cg[tm * BM * N + tn * BN], c1, fp);
#endif
        PipeBarrier<PIPE_ALL>();
    }
}
'''


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_gemm_1024_speed(arch):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(1024, 1024, generator=g).half()
    b = torch.randn(1024, 1024, generator=g).half()
    c = torch.zeros(1024, 1024, dtype=torch.float16)
    run(SRC, "gemm", [a, b, c], block_dim=1, arch=arch, kernel_type="aic")   # warm the build cache
    c.zero_()
    t0 = time.perf_counter()
    rep = run(SRC, "gemm", [a, b, c], block_dim=8, arch=arch, kernel_type="aic")
    dt = time.perf_counter() - t0
    check_ok(rep)
    ref = (a.float() @ b.float()).half()
    torch.testing.assert_close(c.float(), ref.float(), rtol=2e-3, atol=2e-2)
    print(f"{arch}: 1024^3 fp16 GEMM emulated in {dt:.2f} s")
    assert dt < 3.0, f"1024^3 GEMM took {dt:.2f} s"
