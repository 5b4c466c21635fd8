"""Cube path semantics, without the compiler: GM ND -> L1 NZ (Nd2Nz), L1 -> L0A/L0B (LoadData,
c220 ZZ/ZN sequences and 3510 Load2Dv2), Mmad (fp32 accumulation, init/accumulate), Fixpipe
(NZ -> ND with F322F16/F322BF16 casts, ReLU, NZ output) on both arches, against torch."""
import pytest
import torch
from test_ops_harness import check_ok, run

# One kernel template per arch; each extern "C" kernel instantiates it with constants.
SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;

template <class T> struct QuantOf { static constexpr QuantMode_t v = QuantMode_t::NoQuant; };
template <> struct QuantOf<half> { static constexpr QuantMode_t v = QuantMode_t::F322F16; };
template <> struct QuantOf<bfloat16_t> { static constexpr QuantMode_t v = QuantMode_t::F322BF16; };

// C[M,N] = A[M,K] x B[K,N]; K consumed in KSPLIT chunks (Mmad init then accumulate).
// NZOUT: Fixpipe without NZ2ND (dense NZ output). DUMP: copy the L1 NZ image of A to `dump`.
template <class TI, class TO, int M, int K, int N, bool RELU, bool NZOUT, int KSPLIT, bool DUMP, bool DUMP0 = false>
__aicore__ inline void mm(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR dump) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr int C0 = 32 / sizeof(TI);
    constexpr int MP = (M + 15) / 16 * 16;       // padded M
    constexpr int KC = K / KSPLIT;               // K per chunk
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b;
    TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, MP * K * sizeof(TI));
    pipe.InitBuffer(b1b, K * N * sizeof(TI));
    pipe.InitBuffer(a2b, MP * KC * sizeof(TI));
    pipe.InitBuffer(b2b, KC * N * sizeof(TI));
    pipe.InitBuffer(c1b, MP * N * sizeof(float));
    GlobalTensor<TI> ag, bg; GlobalTensor<TO> cg;
    ag.SetGlobalBuffer((__gm__ TI*)a, M * K);
    bg.SetGlobalBuffer((__gm__ TI*)b, K * N);
    cg.SetGlobalBuffer((__gm__ TO*)c);
    LocalTensor<TI> a1 = a1b.Get<TI>(), b1 = b1b.Get<TI>(), a2 = a2b.Get<TI>(), b2 = b2b.Get<TI>();
    LocalTensor<float> c1 = c1b.Get<float>();

    DataCopy(a1, ag, Nd2NzParams(1, M, K, 0, K, MP, 1, 0));
    DataCopy(b1, bg, Nd2NzParams(1, K, N, 0, N, K, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
    if constexpr (DUMP) {
        SetFlag<HardEvent::MTE2_S>(0); WaitFlag<HardEvent::MTE2_S>(0);
        GlobalTensor<TI> dg; dg.SetGlobalBuffer((__gm__ TI*)dump, MP * K);
        for (int i = 0; i < MP * K; ++i) dg.SetValue(i, a1.GetValue(i));
    }
    for (int kc = 0; kc < KSPLIT; ++kc) {
        if (kc > 0) { SetFlag<HardEvent::M_MTE1>(0); WaitFlag<HardEvent::M_MTE1>(0); }
#if defined(EMU_ARCH_C220)
        // L1 NZ -> L0A ZZ: one LoadData per 16-row block; -> L0B ZN: one per 16-row block of B
        for (int i = 0; i < MP / 16; ++i)
            LoadData(a2[i * KC * 16], a1[i * 16 * C0 + kc * (KC / C0) * MP * C0],
                     LoadData2DParams(0, KC / C0, MP / 16, 0, 0, false, 0));
        for (int i = 0; i < KC / 16; ++i)
            LoadData(b2[i * N * 16], b1[(kc * KC / 16 + i) * 256],
                     LoadData2DParams(0, N / 16, K / 16, 0, 0, true, 0));
#else
        LoadData(a2, a1, LoadData2DParamsV2(0, kc * (KC / C0), MP / 16, KC / C0, MP / 16, MP / 16, false, 0));
        LoadData(b2, b1, LoadData2DParamsV2(kc * (KC / 16), 0, KC / 16, N / C0, K / 16, N / 16, true, 0));
#endif
        if constexpr (DUMP0) {   // the L0A / L0B images after the loads
            PipeBarrier<PIPE_ALL>();
            GlobalTensor<TI> dg; dg.SetGlobalBuffer((__gm__ TI*)dump, MP * KC + KC * N);
            for (int i = 0; i < MP * KC; ++i) dg.SetValue(i, a2.GetValue(i));
            for (int i = 0; i < KC * N; ++i) dg.SetValue(MP * KC + i, b2.GetValue(i));
        }
        SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
        Mmad(c1, a2, b2, MmadParams(M, N, KC, 0, false, kc == 0));
    }
    SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0);
    constexpr uint32_t dstStride = NZOUT ? (uint32_t)(M * 16 * sizeof(TO) / 32) : (uint32_t)N;
#if defined(EMU_ARCH_C220)
    FixpipeParamsV220 fp(N, M, MP, dstStride, RELU);
    fp.quantPre = QuantOf<TO>::v;
    if constexpr (NZOUT) Fixpipe<TO, float, CFG_NZ>(cg, c1, fp);
    else Fixpipe<TO, float, CFG_ROW_MAJOR>(cg, c1, fp);
#else
    if constexpr (NZOUT) {
        // dav-3510 gives the NZ destination stride in elements (NZ2NZ page)
        FixpipeParamsArch3510<CO2Layout::NZ> fp(N, M, MP, (uint32_t)(M * 16));
        fp.quantPre = QuantOf<TO>::v; fp.reluEn = RELU;
        Fixpipe<TO, float, CFG_NZ>(cg, c1, fp);
    } else {
        FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fp(N, M, MP, dstStride);
        fp.quantPre = QuantOf<TO>::v; fp.reluEn = RELU;
        Fixpipe<TO, float, CFG_ROW_MAJOR>(cg, c1, fp);
    }
#endif
}

extern "C" __global__ __aicore__ void mm_h_h(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d) { mm<half, half, 32, 64, 48, false, false, 1, false>(a, b, c, d); }
extern "C" __global__ __aicore__ void mm_b_b(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d) { mm<bfloat16_t, bfloat16_t, 32, 64, 48, false, false, 1, false>(a, b, c, d); }
extern "C" __global__ __aicore__ void mm_h_f_relu(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d) { mm<half, float, 32, 64, 48, true, false, 1, false>(a, b, c, d); }
extern "C" __global__ __aicore__ void mm_b_f_acc(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d) { mm<bfloat16_t, float, 32, 64, 48, false, false, 2, false>(a, b, c, d); }
extern "C" __global__ __aicore__ void mm_h_h_m20(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d) { mm<half, half, 20, 64, 48, false, false, 1, true>(a, b, c, d); }
extern "C" __global__ __aicore__ void mm_h_f_nz(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d) { mm<half, float, 32, 64, 48, false, true, 1, false>(a, b, c, d); }
extern "C" __global__ __aicore__ void mm_h_h_l0(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d) { mm<half, half, 32, 64, 48, false, false, 1, false, true>(a, b, c, d); }
#if defined(EMU_ARCH_3510)
extern "C" __global__ __aicore__ void mm_f_f(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d) { mm<float, float, 32, 64, 48, false, false, 2, false>(a, b, c, d); }
#endif
'''

ARCHES = ["dav-c220", "dav-3510"]
TD = {"h": torch.float16, "b": torch.bfloat16, "f": torch.float32}


def _inputs(m, k, n, dt, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g).to(dt)
    b = torch.randn(k, n, generator=g).to(dt)
    return a, b


def _ref(a, b, relu=False):
    r = a.double() @ b.double()
    return r.clamp_min(0) if relu else r


def _nz(x, c0, pad=None):
    """ND [R, C] (R padded to 16) -> NZ image: element (r, c) at ((c // c0) * Rp + r) * c0 + c % c0;
    the padding rows hold ``pad`` (zeros when None)."""
    r, c = x.shape
    rp = (r + 15) // 16 * 16
    p = torch.zeros(rp, c, dtype=x.dtype) if pad is None else pad.expand(rp, c).clone()
    p[:r] = x
    return p.reshape(rp, c // c0, c0).permute(1, 0, 2).reshape(-1)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kernel,ti,to,relu,m", [
    ("mm_h_h", "h", "h", False, 32), ("mm_b_b", "b", "b", False, 32), ("mm_h_f_relu", "h", "f", True, 32),
    ("mm_b_f_acc", "b", "f", False, 32), ("mm_h_h_m20", "h", "h", False, 20),
])
def test_matmul_nd_out(arch, kernel, ti, to, relu, m):
    k, n = 64, 48
    a, b = _inputs(m, k, n, TD[ti])
    c = torch.full((m, n), 7.0, dtype=TD[to])
    dump = torch.zeros((m + 15) // 16 * 16 * k, dtype=TD[ti])
    rep = run(SRC, kernel, [a, b, c, dump], arch=arch, kernel_type="aic")
    check_ok(rep)
    ref = _ref(a, b, relu)
    # fp32 accumulation of exact fp16/bf16 products: only summation order differs from fp64.
    exp = ref.to(TD[to])
    tol = {"h": 2e-3, "b": 1.6e-2, "f": 1e-4}[to]
    torch.testing.assert_close(c.double(), exp.double(), rtol=tol, atol=tol * 4)
    if relu:
        assert (c >= 0).all() and (c == 0).any()
    if kernel == "mm_h_h_m20":
        # the L1 image written by Nd2Nz is exactly the NZ layout of A; the padding rows are untouched:
        # they keep what L1 held before, the emulator's all-ones fill (a NaN half)
        untouched = torch.tensor(-1, dtype=torch.int16).view(TD[ti])
        assert torch.equal(dump.view(torch.int16), _nz(a, 16, untouched).view(torch.int16))


@pytest.mark.parametrize("arch", ARCHES)
def test_matmul_nz_out(arch):
    m, k, n = 32, 64, 48
    a, b = _inputs(m, k, n, torch.float16, seed=1)
    c = torch.zeros(m * n, dtype=torch.float32)
    rep = run(SRC, "mm_h_f_nz", [a, b, c, torch.zeros(1, dtype=torch.float16)], arch=arch, kernel_type="aic")
    check_ok(rep)
    exp = _nz(_ref(a, b).float(), 16)     # L0C-style NZ with 16-wide column blocks
    torch.testing.assert_close(c, exp, rtol=1e-4, atol=1e-4)


def test_matmul_fp32_3510():
    m, k, n = 32, 64, 48
    a, b = _inputs(m, k, n, torch.float32, seed=2)
    c = torch.zeros(m, n)
    rep = run(SRC, "mm_f_f", [a, b, c, torch.zeros(1)], arch="dav-3510", kernel_type="aic")
    check_ok(rep)
    torch.testing.assert_close(c.double(), _ref(a, b), rtol=1e-4, atol=1e-4)


def _frac(x, rows, cols, order, inner_t):
    """Fractal image of x [R, C] with rows x cols fractals. order: 'rowmajor' (fractal (i, j) at
    i * Cb + j) or 'colmajor' (at j * Rb + i); inner_t stores each fractal transposed."""
    r, c = x.shape
    t = x.reshape(r // rows, rows, c // cols, cols).permute(0, 2, 1, 3)   # [Rb, Cb, rows, cols]
    if order == "colmajor":
        t = t.permute(1, 0, 2, 3)
    if inner_t:
        t = t.transpose(2, 3)
    return t.reshape(-1)


@pytest.mark.parametrize("arch", ARCHES)
def test_l0_layouts(arch):
    """L0A: ZZ on c220, NZ on 3510 (16 x C0 fractals); L0B: ZN on both (C0 x 16 fractals,
    each stored transposed), after the documented LoadData sequences from L1 NZ."""
    m, k, n = 32, 64, 48
    a, b = _inputs(m, k, n, torch.float16, seed=3)
    c = torch.zeros(m, n, dtype=torch.float16)
    dump = torch.zeros(m * k + k * n, dtype=torch.float16)
    check_ok(run(SRC, "mm_h_h_l0", [a, b, c, dump], arch=arch, kernel_type="aic"))
    a_exp = _frac(a, 16, 16, "rowmajor" if arch == "dav-c220" else "colmajor", False)
    b_exp = _frac(b, 16, 16, "rowmajor", True)
    assert torch.equal(dump[: m * k].view(torch.int16), a_exp.view(torch.int16))
    assert torch.equal(dump[m * k:].view(torch.int16), b_exp.view(torch.int16))


MIX_SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int M = 32, K = 32, N = 32;
// 3510 mix kernel: the AIC computes C = A x B and writes it with Fixpipe straight into the UB of
// AIV 0 (FixpipeConfig isToUB); AIV 0 then copies it to GM. Cross-core flag 1 orders the two.
constexpr FixpipeConfig CFG_ROW_MAJOR_UB = {CO2Layout::ROW_MAJOR, true};
extern "C" __global__ __aicore__ void mix(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ub; pipe.InitBuffer(ub, M * N * sizeof(float));
    LocalTensor<float> cu = ub.Get<float>();
    if ASCEND_IS_AIC {
        TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b; TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b;
        TBuf<TPosition::CO1> c1b;
        pipe.InitBuffer(a1b, M * K * 2); pipe.InitBuffer(b1b, K * N * 2); pipe.InitBuffer(a2b, M * K * 2);
        pipe.InitBuffer(b2b, K * N * 2); pipe.InitBuffer(c1b, M * N * 4);
        GlobalTensor<half> ag, bg; ag.SetGlobalBuffer((__gm__ half*)a, M * K); bg.SetGlobalBuffer((__gm__ half*)b, K * N);
        LocalTensor<half> a1 = a1b.Get<half>(), b1 = b1b.Get<half>(), a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
        LocalTensor<float> c1 = c1b.Get<float>();
        DataCopy(a1, ag, Nd2NzParams(1, M, K, 0, K, M, 1, 0));
        DataCopy(b1, bg, Nd2NzParams(1, K, N, 0, N, K, 1, 0));
        SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
        LoadData(a2, a1, LoadData2DParamsV2(0, 0, M / 16, K / 16, M / 16, M / 16, false, 0));
        LoadData(b2, b1, LoadData2DParamsV2(0, 0, K / 16, N / 16, K / 16, N / 16, true, 0));
        SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
        Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
        SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0);
        if (GetBlockIdx() == 0) {
            FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fp(N, M, M, N);
            Fixpipe<float, float, CFG_ROW_MAJOR_UB>(cu, c1, fp);
        }
        CrossCoreSetFlag<4, PIPE_FIX>(1);
    }
    if ASCEND_IS_AIV {
        if (GetSubBlockIdx() == 0) {
            CrossCoreWaitFlag<4, PIPE_MTE3>(1);
            GlobalTensor<float> cg; cg.SetGlobalBuffer((__gm__ float*)c, M * N);
            DataCopy(cg, cu, M * N);
        }
    }
}
'''


def test_fixpipe_to_ub_3510_mix():
    a, b = _inputs(32, 32, 32, torch.float16, seed=7)
    c = torch.zeros(32, 32)
    rep = run(MIX_SRC, "mix", [a, b, c], arch="dav-3510", kernel_type="mix_aic_1_2")
    check_ok(rep)
    torch.testing.assert_close(c.double(), _ref(a, b), rtol=1e-4, atol=1e-4)
