"""Mmad with 8-bit operands (Mmad page, tables 5-8): int8_t x int8_t -> int32_t on both arches;
on dav-3510 fp8_e4m3fn_t / fp8_e5m2_t in all four pairings and hifloat8_t x hifloat8_t -> float
(and CTRL[45], which computes e4m3 x e4m3 as hifloat8); dav-c220 refuses fp8 at compile time.
Path: GM ND -> L1 NZ (Nd2Nz, 16 x 32 fractals for 1-byte types) -> L0A / L0B (LoadData, B given
as N x K so its NZ fractals are already ZN) -> Mmad -> Fixpipe ND to GM, against torch."""

import pytest
import torch
from test_ops_harness import check_ok, run

from ascend_backend.emulator import EmulatorCompileError, run_source

M, N, K = 32, 48, 96

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int M = 32, N = 48, K = 96;
template <class TA, class TB, class TC>
__aicore__ inline void mm(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b;
    TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, M * K); pipe.InitBuffer(b1b, N * K);
    pipe.InitBuffer(a2b, M * K); pipe.InitBuffer(b2b, N * K);
    pipe.InitBuffer(c1b, M * N * 4);
    GlobalTensor<TA> ag; GlobalTensor<TB> bg; GlobalTensor<TC> cg;
    ag.SetGlobalBuffer((__gm__ TA*)a, M * K); bg.SetGlobalBuffer((__gm__ TB*)b, N * K);
    cg.SetGlobalBuffer((__gm__ TC*)c, M * N);
    LocalTensor<TA> a1 = a1b.Get<TA>(), a2 = a2b.Get<TA>();
    LocalTensor<TB> b1 = b1b.Get<TB>(), b2 = b2b.Get<TB>();
    LocalTensor<TC> c1 = c1b.Get<TC>();
    DataCopy(a1, ag, Nd2NzParams(1, M, K, 0, K, M, 1, 0));
    DataCopy(b1, bg, Nd2NzParams(1, N, K, 0, K, N, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
#if defined(EMU_ARCH_C220)
    for (int i = 0; i < M / 16; ++i)      // ZZ: each 16-row block of A, its K / 32 fractals
        LoadData(a2[i * 16 * K], a1[i * 16 * 32], LoadData2DParams(0, K / 32, M / 16, 0, 0, false, 0));
    LoadData(b2, b1, LoadData2DParams(0, (K / 32) * (N / 16), 1, 0, 0, false, 0));
#else
    LoadData(a2, a1, LoadData2DParamsV2(0, 0, M / 16, K / 32, M / 16, M / 16, false, 0));
    LoadData(b2, b1, LoadData2DParamsV2(0, 0, N / 16, K / 32, N / 16, N / 16, false, 0));
#endif
    SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
    Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
    SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0);
#if defined(EMU_ARCH_C220)
    FixpipeParamsV220 fp(N, M, M, N, false);
    Fixpipe<TC, TC, CFG_ROW_MAJOR>(cg, c1, fp);
#else
    FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fp(N, M, M, N);
    Fixpipe<TC, TC, CFG_ROW_MAJOR>(cg, c1, fp);
#endif
}
extern "C" __global__ __aicore__ void mm_i8(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    mm<int8_t, int8_t, int32_t>(a, b, c);
}
#if defined(EMU_ARCH_3510)
extern "C" __global__ __aicore__ void mm_f8(GM_ADDR a, GM_ADDR b, GM_ADDR c, int32_t pair, int32_t hif) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    if (hif) SetCtrlSpr<45, 45>(1);
    switch (pair) {
        case 0: mm<fp8_e4m3fn_t, fp8_e4m3fn_t, float>(a, b, c); break;
        case 1: mm<fp8_e4m3fn_t, fp8_e5m2_t, float>(a, b, c); break;
        case 2: mm<fp8_e5m2_t, fp8_e4m3fn_t, float>(a, b, c); break;
        case 3: mm<fp8_e5m2_t, fp8_e5m2_t, float>(a, b, c); break;
        case 4: mm<hifloat8_t, hifloat8_t, float>(a, b, c); break;
    }
}
// e4m3 x e4m3 -> float in L0C -> Fixpipe quantizing to fp8 / hifloat8 (mode: 0 QF322FP8_PRE,
// 1 VQF322FP8_PRE (one quant word per column, from L1), 2 QF322HIF8_PRE, 3 QF322HIF8_PRE_HYBRID)
extern "C" __global__ __aicore__ void mm_q(GM_ADDR a, GM_ADDR b, GM_ADDR q, GM_ADDR c, int32_t mode, uint64_t deq,
                                           int32_t nosat) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    if (nosat) SetCtrlSpr<48, 48>(1);
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b; TBuf<TPosition::C1> q1b;
    TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, M * K); pipe.InitBuffer(b1b, N * K); pipe.InitBuffer(q1b, N * 8);
    pipe.InitBuffer(a2b, M * K); pipe.InitBuffer(b2b, N * K); pipe.InitBuffer(c1b, M * N * 4);
    GlobalTensor<fp8_e4m3fn_t> ag, bg; GlobalTensor<uint64_t> qg;
    ag.SetGlobalBuffer((__gm__ fp8_e4m3fn_t*)a, M * K); bg.SetGlobalBuffer((__gm__ fp8_e4m3fn_t*)b, N * K);
    qg.SetGlobalBuffer((__gm__ uint64_t*)q, N);
    LocalTensor<fp8_e4m3fn_t> a1 = a1b.Get<fp8_e4m3fn_t>(), a2 = a2b.Get<fp8_e4m3fn_t>();
    LocalTensor<fp8_e4m3fn_t> b1 = b1b.Get<fp8_e4m3fn_t>(), b2 = b2b.Get<fp8_e4m3fn_t>();
    LocalTensor<uint64_t> q1 = q1b.Get<uint64_t>();
    LocalTensor<float> c1 = c1b.Get<float>();
    DataCopy(a1, ag, Nd2NzParams(1, M, K, 0, K, M, 1, 0));
    DataCopy(b1, bg, Nd2NzParams(1, N, K, 0, K, N, 1, 0));
    DataCopy(q1, qg, N);
    SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
    LoadData(a2, a1, LoadData2DParamsV2(0, 0, M / 16, K / 32, M / 16, M / 16, false, 0));
    LoadData(b2, b1, LoadData2DParamsV2(0, 0, N / 16, K / 32, N / 16, N / 16, false, 0));
    SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
    Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
    SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0);
    SetFlag<HardEvent::MTE2_FIX>(0); WaitFlag<HardEvent::MTE2_FIX>(0);
    FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fp(N, M, M, N);
    fp.deqScalar = deq;
    if (mode <= 1) {
        GlobalTensor<fp8_e4m3fn_t> cg; cg.SetGlobalBuffer((__gm__ fp8_e4m3fn_t*)c, M * N);
        fp.quantPre = mode == 0 ? QuantMode_t::QF322FP8_PRE : QuantMode_t::VQF322FP8_PRE;
        if (mode == 0) Fixpipe<fp8_e4m3fn_t, float, CFG_ROW_MAJOR>(cg, c1, fp);
        else Fixpipe<fp8_e4m3fn_t, float, CFG_ROW_MAJOR>(cg, c1, q1, fp);
    } else {
        GlobalTensor<hifloat8_t> cg; cg.SetGlobalBuffer((__gm__ hifloat8_t*)c, M * N);
        fp.quantPre = mode == 2 ? QuantMode_t::QF322HIF8_PRE : QuantMode_t::QF322HIF8_PRE_HYBRID;
        Fixpipe<hifloat8_t, float, CFG_ROW_MAJOR>(cg, c1, fp);
    }
}
#endif
'''

E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2
PAIRS = [(E4, E4), (E4, E5), (E5, E4), (E5, E5)]


def small_ints(shape, seed):
    """Integers in [-8, 8]: exact in every 8-bit format, so every partial sum is exact in fp32
    and the result does not depend on the summation order."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-8, 9, shape, generator=g).float()


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_int8_mmad_int32(arch):
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    c = torch.zeros(M, N, dtype=torch.int32)
    check_ok(run(SRC, "mm_i8", [a, b, c], arch=arch, kernel_type="aic"))
    assert torch.equal(c, a.int() @ b.int().T)


@pytest.mark.parametrize("pair", range(4))
def test_fp8_mmad_all_pairings(pair):
    ta, tb = PAIRS[pair]
    a = small_ints((M, K), 1).to(ta)
    b = small_ints((N, K), 2).to(tb)
    c = torch.zeros(M, N)
    check_ok(run(SRC, "mm_f8", [a.view(torch.uint8), b.view(torch.uint8), c, pair, 0], kernel_type="aic"))
    assert torch.equal(c, a.float() @ b.float().T)


def test_fp8_mmad_random_values_fp32_accumulation():
    g = torch.Generator().manual_seed(3)
    a = (torch.randn(M, K, generator=g) * 4).to(E4)
    b = (torch.randn(N, K, generator=g) * 1e-2).to(E5)
    c = torch.zeros(M, N)
    check_ok(run(SRC, "mm_f8", [a.view(torch.uint8), b.view(torch.uint8), c, 1, 0], kernel_type="aic"))
    ref = a.double() @ b.double().T
    torch.testing.assert_close(c.double(), ref, rtol=1e-6, atol=1e-6)


def hif8_codes(values):
    """hifloat8 codes of small integers (table 6 of the 内置数据类型 page): 1, 2, 4, 8 and
    1.5 * 2^e; only magnitudes 0..8 with at most 3 significant bits are used."""
    table = {0.0: 0x00, 1.0: 0x08, 1.5: 0x0C, 2.0: 0x10, 3.0: 0x14, 4.0: 0x20, 5.0: 0x22, 6.0: 0x24, 7.0: 0x26,
             8.0: 0x28, -1.0: 0x88, -2.0: 0x90, -3.0: 0x94, -4.0: 0xA0, -6.0: 0xA4, -8.0: 0xA8}
    return torch.tensor([table[v] for v in values.flatten().tolist()], dtype=torch.uint8).view(values.shape)


def test_hifloat8_mmad():
    vals = torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, 5.0, 7.0, 1.5])
    g = torch.Generator().manual_seed(4)
    a = vals[torch.randint(0, 16, (M, K), generator=g)]
    b = vals[torch.randint(0, 16, (N, K), generator=g)]
    c = torch.zeros(M, N)
    check_ok(run(SRC, "mm_f8", [hif8_codes(a), hif8_codes(b), c, 4, 0], kernel_type="aic"))
    assert torch.equal(c, a @ b.T)


def test_ctrl45_reads_e4m3_operands_as_hifloat8():
    """With CTRL[45] set, e4m3 x e4m3 bytes are read as hifloat8 codes."""
    vals = torch.tensor([1.0, 2.0, -4.0, 3.0])
    g = torch.Generator().manual_seed(6)
    a = vals[torch.randint(0, 4, (M, K), generator=g)]
    b = vals[torch.randint(0, 4, (N, K), generator=g)]
    c = torch.zeros(M, N)
    check_ok(run(SRC, "mm_f8", [hif8_codes(a), hif8_codes(b), c, 0, 1], kernel_type="aic"))
    assert torch.equal(c, a @ b.T)


def test_fp8_mmad_does_not_compile_on_dav_c220():
    src = SRC.replace("#if defined(EMU_ARCH_3510)\nextern", "#if 1\nextern").replace(
        "        case 4: mm<hifloat8_t, hifloat8_t, float>(a, b, c); break;\n", "")
    with pytest.raises(EmulatorCompileError, match="exist only on dav-3510"):
        run_source(src, "mm_f8", [torch.zeros(4), torch.zeros(4), torch.zeros(4), 0, 0], 1, arch="dav-c220",
                   kernel_type=1)


def quant_word(scale: float) -> int:
    """随路量化 page, table 2: the scale as a float in bits [31:13] (10-bit mantissa)."""
    return int(torch.tensor([scale]).view(torch.int32).item()) & 0xFFFFE000


def test_fixpipe_quantizes_float_to_fp8_scalar_and_per_column():
    a = small_ints((M, K), 7).to(E4)
    b = small_ints((N, K), 8).to(E4)
    acc = a.float() @ b.float().T
    q = torch.zeros(N, dtype=torch.int64)
    c = torch.zeros(M, N, dtype=torch.uint8)
    # scalar scale 1.375: some results go beyond 448 (saturate to +-448 by default)
    check_ok(run(SRC, "mm_q", [a.view(torch.uint8), b.view(torch.uint8), q, c, 0, quant_word(1.375), 0],
                 kernel_type="aic"))
    assert (acc * 1.375).abs().max() > 448
    assert torch.equal(c, (acc * 1.375).to(E4).view(torch.uint8))
    # non-saturating (CTRL[48] = 1): beyond 448 gives NaN for e4m3fn (Fixpipe page)
    check_ok(run(SRC, "mm_q", [a.view(torch.uint8), b.view(torch.uint8), q, c, 0, quant_word(1.375), 1],
                 kernel_type="aic"))
    over = (acc * 1.375).abs() > 464
    assert torch.equal(c[over] & 0x7F, torch.full_like(c[over], 0x7F))
    assert torch.equal(c[~over], (acc * 1.375).to(E4).view(torch.uint8)[~over])
    # one scale per column; the low 13 bits of a word are ignored
    scales = torch.tensor([2.0 ** -(i % 7) * (1 + (i % 3) / 4) for i in range(N)])
    q = torch.tensor([quant_word(float(s)) | 0x1FFF for s in scales], dtype=torch.int64)
    check_ok(run(SRC, "mm_q", [a.view(torch.uint8), b.view(torch.uint8), q, c, 1, 0, 0], kernel_type="aic"))
    assert torch.equal(c, (acc * scales).to(E4).view(torch.uint8))


def test_fixpipe_quantizes_float_to_hifloat8():
    a = small_ints((M, K), 9).to(E4)
    b = small_ints((N, K), 10).to(E4)
    acc = a.float() @ b.float().T
    c = torch.zeros(M, N, dtype=torch.uint8)
    q = torch.zeros(N, dtype=torch.int64)
    check_ok(run(SRC, "mm_q", [a.view(torch.uint8), b.view(torch.uint8), q, c, 2, quant_word(1.0), 0],
                 kernel_type="aic"))
    # decode and check: the nearest hifloat8 value, ties away from zero (values here are
    # integers < 2^12, where hifloat8 keeps 1-3 mantissa bits)
    from test_ops_lowp_cast import HIF8, hif8_round_away

    exp = torch.tensor([hif8_round_away(v, True) for v in acc.flatten().tolist()], dtype=torch.uint8)
    assert torch.equal(c.flatten(), exp)
    assert all(abs(HIF8[x] - v) <= abs(v) / 4 for x, v in zip(c.flatten().tolist(), acc.flatten().tolist(),
                                                                 strict=True))


def test_mmadmx_checks_the_page_constraints():
    """MmadMx page: K a multiple of 64 (checked before any scale is read)."""
    src = r'''
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void mx(GM_ADDR x) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    TPipe pipe; TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a2b, 2048); pipe.InitBuffer(b2b, 2048); pipe.InitBuffer(c1b, 1024);
    LocalTensor<fp8_e4m3fn_t> a2 = a2b.Get<fp8_e4m3fn_t>(), b2 = b2b.Get<fp8_e4m3fn_t>();
    LocalTensor<float> c1 = c1b.Get<float>();
    MmadMx(c1, a2, b2, MmadParams(16, 16, 32, 0, false, true));
}
'''
    rep = run(src, "mx", [torch.zeros(4)], kernel_type="aic")
    assert any("multiple of 64" in e.get("message", "") for e in rep.get("errors", [])), rep
