"""Mmad / Fixpipe unitFlag (UnitFlag page, Mmad and Fixpipe pages' unitFlag rows, SetFixPipeConfig
page's isUnitFlag), without the compiler: one unit flag per 512-byte block of L0C; an Mmad with
unitFlag 2/3 waits for its blocks' flags to be 0 (3 sets them to 1 after), a Fixpipe with 2/3
waits for 1 (3 clears them to 0 after). The unit flags order the accumulator's Mmad -> Fixpipe and
Fixpipe -> next Mmad dependencies for the race checker; misuse is a `unit_flag` flag error; the
timing model lets the Fixpipe stream behind the last Mmad."""
import pytest
import torch
from test_ops_harness import ARCHES, check_ok, run

from ascend_backend.emulator import run_source

# Two output tiles through one L0C accumulator: tile t = A x B[t], K in two Mmads (the K loop).
# MODE: 0 unit flags (Mmads 2 then 3, Fixpipe 3), no M_FIX / FIX_M flags; 1 flags only; 2 neither;
# 3 Mmads without unitFlag, Fixpipe 3, with the flags; 4 Fixpipe without unitFlag, no flags;
# 5 every Mmad 2 (none 3); 6 Fixpipe of half the columns; 7 as 6, then SetFixPipeConfig(l0c, true);
# 8 the last tile's Fixpipe 2 (the flags stay 1); 9 unitFlag 1 (reserved).
SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;

template <int MODE>
__aicore__ inline void uf(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr int M = 32, K = 32, N = 32, KSPLIT = 2, KC = K / KSPLIT, C0 = 16, TILES = 2;
    constexpr bool FLAGS = MODE == 1 || MODE == 3;
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b;
    TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, M * K * 2);
    pipe.InitBuffer(b1b, TILES * K * N * 2);
    pipe.InitBuffer(a2b, M * KC * 2);
    pipe.InitBuffer(b2b, KC * N * 2);
    pipe.InitBuffer(c1b, M * N * 4);
    GlobalTensor<half> ag, bg; GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, M * K);
    bg.SetGlobalBuffer((__gm__ half*)b, TILES * K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, TILES * M * N);
    LocalTensor<half> a1 = a1b.Get<half>(), b1all = b1b.Get<half>(), a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
    LocalTensor<float> c1 = c1b.Get<float>();
    DataCopy(a1, ag, Nd2NzParams(1, M, K, 0, K, M, 1, 0));
    for (int t = 0; t < TILES; ++t)
        DataCopy(b1all[t * K * N], bg[t * K * N], Nd2NzParams(1, K, N, 0, N, K, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(0); WaitFlag<HardEvent::MTE2_MTE1>(0);
    for (int t = 0; t < TILES; ++t) {
        LocalTensor<half> b1 = b1all[t * K * N];
        for (int kc = 0; kc < KSPLIT; ++kc) {
            if (t > 0 || kc > 0) { SetFlag<HardEvent::M_MTE1>(0); WaitFlag<HardEvent::M_MTE1>(0); }
#if defined(EMU_ARCH_C220)
            for (int i = 0; i < M / 16; ++i)
                LoadData(a2[i * KC * 16], a1[i * 16 * C0 + kc * (KC / C0) * M * C0],
                         LoadData2DParams(0, KC / C0, M / 16, 0, 0, false, 0));
            for (int i = 0; i < KC / 16; ++i)
                LoadData(b2[i * N * 16], b1[(kc * KC / 16 + i) * 256], LoadData2DParams(0, N / 16, K / 16, 0, 0, true, 0));
#else
            LoadData(a2, a1, LoadData2DParamsV2(0, kc * (KC / C0), M / 16, KC / C0, M / 16, M / 16, false, 0));
            LoadData(b2, b1, LoadData2DParamsV2(kc * (KC / 16), 0, KC / 16, N / C0, K / 16, N / 16, true, 0));
#endif
            SetFlag<HardEvent::MTE1_M>(0); WaitFlag<HardEvent::MTE1_M>(0);
            MmadParams mp(M, N, KC, 0, false, kc == 0);
            const bool last = kc == KSPLIT - 1;
            if (MODE == 0 || MODE >= 4) mp.unitFlag = (last && MODE != 5) ? 3 : 2;
            if (MODE == 9) mp.unitFlag = 1;
            Mmad(c1, a2, b2, mp);
        }
        if (FLAGS) { SetFlag<HardEvent::M_FIX>(0); WaitFlag<HardEvent::M_FIX>(0); }
        const uint16_t ns = (MODE == 6 || MODE == 7) ? N / 2 : N;
        const uint8_t fuf = (MODE == 1 || MODE == 2 || MODE == 4) ? 0 : ((MODE == 8 && t == TILES - 1) ? 2 : 3);
#if defined(EMU_ARCH_C220)
        FixpipeParamsV220 fp(ns, M, M, N, false);
#else
        FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fp(ns, M, M, N);
#endif
        fp.unitFlag = fuf;
        Fixpipe<float, float, CFG_ROW_MAJOR>(cg[t * M * N], c1, fp);
        if (MODE == 7) SetFixPipeConfig<float>(c1, true);
        if (FLAGS) { SetFlag<HardEvent::FIX_M>(0); WaitFlag<HardEvent::FIX_M>(0); }
    }
}
''' + "".join(f'extern "C" __global__ __aicore__ void uf{m}(GM_ADDR a, GM_ADDR b, GM_ADDR c) {{ uf<{m}>(a, b, c); }}\n'
              for m in range(10))

M = K = N = 32
TILES = 2


def _args():
    g = torch.Generator().manual_seed(7)
    a = (torch.rand(M, K, generator=g) - 0.5).half()
    b = (torch.rand(TILES, K, N, generator=g) - 0.5).half()
    return a, b, torch.zeros(TILES, M, N)


def _ref(a, b):
    return torch.stack([a.float() @ b[t].float() for t in range(TILES)])


def _uf_errors(rep) -> list:
    return [e for e in rep.get("flag_errors") or [] if e.get("kind") == "unit_flag"]


@pytest.mark.parametrize("arch", ARCHES)
def test_unit_flags_order_mmad_and_fixpipe(arch):
    """Mmads 2, 2 -> 3 and a Fixpipe 3 with no M_FIX / FIX_M flag: right numbers, no race (the
    Fixpipe waits for the last Mmad's flags, the next tile's Mmad for the Fixpipe's)."""
    a, b, c = _args()
    rep = run(SRC, "uf0", [a, b, c], arch=arch, kernel_type="aic")
    check_ok(rep)
    torch.testing.assert_close(c, _ref(a, b), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("arch", ARCHES)
def test_missing_unit_flags_and_flags_race(arch):
    """Neither unit flags nor flags: both the M -> FIX and the FIX -> M order on L0C are races."""
    a, b, c = _args()
    rep = run(SRC, "uf2", [a, b, c], arch=arch, kernel_type="aic")
    pipes = {(r["first"]["pipe"], r["second"]["pipe"]) for r in rep.get("races") or []}
    assert ("M", "FIX") in pipes and ("FIX", "M") in pipes, rep.get("races")


@pytest.mark.parametrize("mode, words", [
    (3, "no Mmad with unitFlag 3 has marked full"),     # Fixpipe 3 behind Mmads without it (flags order them)
    (4, "Fixpipe without unitFlag reads"),              # the Fixpipe drops it
    (5, "no Mmad with unitFlag 3 has marked full"),     # the last Mmad keeps 2
    (6, "still marked full"),                           # Fixpipe reads half: the next Mmad finds flags at 1
    (8, "never read by a Fixpipe with unitFlag 3"),     # the last Fixpipe keeps 2: flags left at 1
])
def test_unit_flag_misuse_is_reported(mode, words):
    a, b, c = _args()
    rep = run(SRC, f"uf{mode}", [a, b, c], arch="dav-3510", kernel_type="aic")
    errs = _uf_errors(rep)
    assert errs and any(words in e["message"] for e in errs), rep.get("flag_errors")


def test_fixpipe_without_unit_flag_races():
    """Dropping the Fixpipe's unitFlag leaves the Mmad -> Fixpipe order to nothing: a race too."""
    a, b, c = _args()
    rep = run(SRC, "uf4", [a, b, c], arch="dav-c220", kernel_type="aic")
    assert _uf_errors(rep)
    assert any((r["first"]["pipe"], r["second"]["pipe"]) == ("M", "FIX") for r in rep.get("races") or []), rep


def test_reset_clears_the_flags():
    """SetFixPipeConfig(l0c, true) after a Fixpipe of part of the accumulator: every flag back to 0,
    so the next tile's Mmads proceed (ordered after the Fixpipe); the half read is right."""
    a, b, c = _args()
    rep = run(SRC, "uf7", [a, b, c], arch="dav-3510", kernel_type="aic")
    check_ok(rep)
    torch.testing.assert_close(c[:, :, : N // 2], _ref(a, b)[:, :, : N // 2], rtol=1e-3, atol=1e-3)


def test_reserved_unit_flag_value():
    a, b, c = _args()
    rep = run(SRC, "uf9", [a, b, c], arch="dav-3510", kernel_type="aic")
    assert any(e["kind"] == "invalid_param" and "unitFlag 1" in e["message"] for e in rep.get("errors") or []), rep


@pytest.mark.parametrize("arch", ARCHES)
def test_timing_fixpipe_streams_behind_mmad(arch):
    """The modelled time with unit flags is below the flag version's: the Fixpipe starts after
    the last Mmad's first block, the next Mmad after the Fixpipe's first read (not after its GM
    write lands)."""
    a, b, c = _args()
    t = {}
    for m in (0, 1):
        rep = run_source(SRC, f"uf{m}", [a, b, c.clone()], 1, arch=arch, kernel_type=1, timing=True)
        t[m] = rep.timing["total_cycles"]
    assert t[0] < t[1], t
