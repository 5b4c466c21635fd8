"""int4b_t matrix multiply on dav-c220 (Mmad page, table 7: int4b_t x int4b_t -> int32_t):
two int4 per byte (even element in the low nibble), tensors indexed in 4-bit elements, GM ND
-> L1 NZ with the byte-wise Nd2Nz, L1 -> L0A (ZZ) / L0B (ZN) with LoadData2DParams; A through
Load3D v2 (LoadData_3D page: int4b_t with A1/A2 only) and B through LoadDataWithTranspose
(64x64 squares of four 16x64 fractals, L0B only), and the int4 loads the pages do not give."""

from __future__ import annotations

import pytest
import torch
from test_ops_harness import check_ok, run

from ascend_backend.emulator import EmulatorCompileError, run_source

# C[M, N] = A[M, K] x B[K, N]; A given as [M, K] and B as B^T [N, K], both packed int4.
SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t M = 30, N = 40, K = 70;
constexpr uint32_t C0 = 64;                       // int4 elements per 32-byte row of a fractal
constexpr uint32_t MB = (M + 15) / 16, NB = (N + 15) / 16, KB = (K + C0 - 1) / C0;
constexpr uint32_t FRAC = 16 * C0;                // elements per fractal (512 bytes)

__global__ __cube__ void mm_int4(GM_ADDR a, GM_ADDR bt, GM_ADDR c) {
    GlobalTensor<int4b_t> ag, bg;
    GlobalTensor<int32_t> cg;
    ag.SetGlobalBuffer((__gm__ int4b_t*)a);
    bg.SetGlobalBuffer((__gm__ int4b_t*)bt);
    cg.SetGlobalBuffer((__gm__ int32_t*)c);
    LocalTensor<int4b_t> a1(TPosition::A1, 0, MB * 16 * KB * C0);
    LocalTensor<int4b_t> b1(TPosition::B1, 16384, NB * 16 * KB * C0);
    LocalTensor<int4b_t> a2(TPosition::A2, 0, MB * KB * FRAC);
    LocalTensor<int4b_t> b2(TPosition::B2, 0, NB * KB * FRAC);
    LocalTensor<int32_t> c1(TPosition::CO1, 0, MB * NB * 256);
    // rows of K / 2 bytes (two int4 per byte) into NZ with 32-byte column blocks
    DataCopy(a1, ag, Nd2NzParams(1, M, K / 2, 0, K / 2, MB * 16, 1, 0));
    DataCopy(b1, bg, Nd2NzParams(1, N, K / 2, 0, K / 2, NB * 16, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t i = 0; i < MB; ++i)                // NZ -> ZZ, one 16-row block at a time
        LoadData(a2[i * KB * FRAC], a1[i * FRAC], LoadData2DParams(0, KB, MB, 0, 0, false, 0));
    LoadData(b2, b1, LoadData2DParams(0, NB * KB, 1, 0, 0, false, 0));   // B^T NZ is B's ZN
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams p;
    p.m = M;
    p.n = N;
    p.k = K;
    Mmad(c1, a2, b2, p);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 f(N, M, MB * 16, N, false);
    Fixpipe<int32_t, int32_t, CFG_ROW_MAJOR>(cg, c1, f);
}
"""

M, N, K = 30, 40, 70


def pack_int4(x: torch.Tensor) -> torch.Tensor:
    """[R, C] int values in [-8, 7] -> [R, C / 2] bytes, element 2i in the low nibble."""
    u = (x & 0xF).to(torch.uint8)
    return (u[:, 0::2] | (u[:, 1::2] << 4)).contiguous()


def test_int4_matmul_c220() -> None:
    g = torch.Generator().manual_seed(4)
    a = torch.randint(-8, 8, (M, K), generator=g, dtype=torch.int32)
    b = torch.randint(-8, 8, (K, N), generator=g, dtype=torch.int32)
    c = torch.zeros(M, N, dtype=torch.int32)
    rep = run_source(SRC, "mm_int4", [pack_int4(a), pack_int4(b.T.contiguous()), c], 1, arch="dav-c220")
    assert rep.ok
    assert torch.equal(c, a @ b)


@pytest.mark.slow
def test_int4_mmad_is_c220_only() -> None:
    with pytest.raises(EmulatorCompileError, match="int4b_t"):
        run_source(SRC, "mm_int4", [torch.zeros(M, K // 2, dtype=torch.uint8), torch.zeros(N, K // 2, dtype=torch.uint8),
                                    torch.zeros(M, N, dtype=torch.int32)], 1, arch="dav-3510")


# ---- int4 through Load3D v2 (A: NZ -> ZZ) and LoadDataWithTranspose (B: NZ -> ZN)
# A [M, K] and B [K, N] are both given row-major (B not pre-transposed), so B's 64x64 squares
# (four 16x64 fractals of one 64-column block) must be transposed on the way into L0B.
SRC_LOADS = r"""
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t M = 20, N = 70, K = 130;
constexpr uint32_t C0 = 64, FRAC = 16 * C0;        // int4 elements per fractal row / fractal
constexpr uint32_t MB = (M + 15) / 16;             // 16-row blocks of A
constexpr uint32_t KB = (K + C0 - 1) / C0;         // 64-deep K blocks (= squares down a column block)
constexpr uint32_t NQ = (N + C0 - 1) / C0;         // 64-wide column blocks of B (squares across)
constexpr uint32_t NB = NQ * 4;                    // 16-wide N blocks of L0B

struct Tiles {
    LocalTensor<int4b_t> a1{TPosition::A1, 0, MB * 16 * KB * C0};
    LocalTensor<int4b_t> b1{TPosition::B1, 32768, KB * C0 * NQ * C0};
    LocalTensor<int4b_t> a2{TPosition::A2, 0, MB * KB * FRAC};
    LocalTensor<int4b_t> b2{TPosition::B2, 0, KB * NB * FRAC};
    LocalTensor<int32_t> c1{TPosition::CO1, 0, MB * NB * 256};
};

__aicore__ inline void copy_in(Tiles& t, GM_ADDR a, GM_ADDR b) {
    GlobalTensor<int4b_t> ag, bg;
    ag.SetGlobalBuffer((__gm__ int4b_t*)a);
    bg.SetGlobalBuffer((__gm__ int4b_t*)b);
    // Nd2Nz moves b4 data as bytes (its page): rows of K/2 or N/2 bytes; B's K rows are
    // spaced for whole 64-row squares
    DataCopy(t.a1, ag, Nd2NzParams(1, M, K / 2, 0, K / 2, MB * 16, 1, 0));
    DataCopy(t.b1, bg, Nd2NzParams(1, K, N / 2, 0, N / 2, KB * C0, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
}

// A through img2col: a 1 x (MB*16) map with KB*64 channels and a 1x1 filter is the NZ matrix;
// the region [mStart, +mExt) x [kStart, +kExt) lands in L0A as ZZ
__aicore__ inline void load_a3d(Tiles& t, uint16_t mStart, uint16_t mExt, uint16_t kStart, uint16_t kExt) {
    LoadData3DParamsV2<int4b_t> p;
    p.l1H = 1;
    p.l1W = MB * 16;
    p.channelSize = KB * C0;
    p.kExtension = kExt;
    p.mExtension = mExt;
    p.kStartPt = kStart;
    p.mStartPt = mStart;
    LoadData(t.a2, t.a1, p);
}

__aicore__ inline void mmad_out(Tiles& t, GM_ADDR c, uint16_t m, uint16_t k, uint16_t mOut) {
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams p;
    p.m = m;
    p.n = NQ * C0;      // every N block that L0B holds (its ZN rows are NB blocks wide)
    p.k = k;
    Mmad(t.c1, t.a2, t.b2, p);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    GlobalTensor<int32_t> cg;
    cg.SetGlobalBuffer((__gm__ int32_t*)c);
    FixpipeParamsV220 f(N, mOut, (m + 15) / 16 * 16, N, false);
    Fixpipe<int32_t, int32_t, CFG_ROW_MAJOR>(cg, t.c1, f);
}

// B: one call per K block, iterating over the squares of that block's row (srcStride KB
// squares), each square's four fractals at consecutive N blocks (dstGap 3)
__global__ __cube__ void int4_by_kblock(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    Tiles t;
    copy_in(t, a, b);
    load_a3d(t, 0, M, 0, K);            // extensions that cover the last fractals: any size
    for (uint32_t kb = 0; kb < KB; ++kb)
        LoadDataWithTranspose(t.b2[kb * NB * FRAC], t.b1, LoadData2dTransposeParams(kb, NQ, KB, 3, 0));
    mmad_out(t, c, M, K, M);
}

// B: one call per 64-column block, iterating down its K blocks (squares adjacent, srcStride 1),
// consecutive iterations NB fractals apart (dstGap NB - 1)
__global__ __cube__ void int4_by_column(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    Tiles t;
    copy_in(t, a, b);
    load_a3d(t, 0, MB * 16, 0, KB * C0);
    for (uint32_t q = 0; q < NQ; ++q)
        LoadDataWithTranspose(t.b2[q * 4 * FRAC], t.b1, LoadData2dTransposeParams(q * KB, KB, 1, NB - 1, 0));
    mmad_out(t, c, M, K, M);
}

// a window: rows [16, 32) x K block 1 of A (mStartPt / kStartPt), K block 1 of B (startIndex)
__global__ __cube__ void int4_window(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    Tiles t;
    copy_in(t, a, b);
    load_a3d(t, 16, 16, C0, C0);
    LoadDataWithTranspose(t.b2, t.b1, LoadData2dTransposeParams(1, NQ, KB, 3, 0));
    mmad_out(t, c, 16, C0, M - 16);
}

// what the pages do not give int4b_t: each must be refused, not computed
__global__ __cube__ void int4_transpose_to_l0a(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    Tiles t;
    copy_in(t, a, b);
    LoadDataWithTranspose(t.a2, t.a1, LoadData2dTransposeParams(0, 1, 1, 0, 0));
}
__global__ __cube__ void int4_3d_to_l0b(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    Tiles t;
    copy_in(t, a, b);
    LoadData3DParamsV2<int4b_t> p;
    p.l1H = 1; p.l1W = KB * C0; p.channelSize = NQ * C0; p.kExtension = NQ * C0; p.mExtension = KB * C0;
    LoadData(t.b2, t.b1, p);
}
__global__ __cube__ void int4_3d_entranspose(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    Tiles t;
    copy_in(t, a, b);
    LoadData3DParamsV2<int4b_t> p;
    p.l1H = 1; p.l1W = MB * 16; p.channelSize = KB * C0; p.kExtension = KB * C0; p.mExtension = MB * 16;
    p.enTranspose = true;
    LoadData(t.a2, t.a1, p);
}
__global__ __cube__ void int4_3d_small_channel(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    Tiles t;
    copy_in(t, a, b);
    LoadData3DParamsV2<int4b_t> p;
    p.l1H = 1; p.l1W = MB * 16; p.channelSize = 32; p.kExtension = 32; p.mExtension = MB * 16;
    LoadData(t.a2, t.a1, p);
}
"""

LM, LN, LK = 20, 70, 130


def _load_inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-8, 8, (LM, LK), generator=g, dtype=torch.int32)
    b = torch.randint(-8, 8, (LK, LN), generator=g, dtype=torch.int32)
    return a, b


@pytest.mark.parametrize("kernel", ["int4_by_kblock", "int4_by_column"])
def test_int4_load3d_and_transpose_matmul_c220(kernel: str) -> None:
    a, b = _load_inputs(7)
    c = torch.full((LM, LN), -1, dtype=torch.int32)
    rep = run(SRC_LOADS, kernel, [pack_int4(a), pack_int4(b), c], arch="dav-c220", kernel_type="aic")
    check_ok(rep)
    assert torch.equal(c, a @ b)


def test_int4_load3d_window_and_start_index_c220() -> None:
    a, b = _load_inputs(8)
    c = torch.full((LM - 16, LN), -1, dtype=torch.int32)
    rep = run(SRC_LOADS, "int4_window", [pack_int4(a), pack_int4(b), c], arch="dav-c220", kernel_type="aic")
    check_ok(rep)
    assert torch.equal(c, a[16:, 64:128] @ b[64:128])


@pytest.mark.parametrize(
    ("kernel", "words"),
    [
        ("int4_transpose_to_l0a", "only with an L0B destination"),
        ("int4_3d_to_l0b", "does not take b4"),
        ("int4_3d_entranspose", "enTranspose with int4b_t"),
        ("int4_3d_small_channel", "small-channel packing"),
    ],
)
def test_int4_undocumented_loads_are_refused_c220(kernel: str, words: str) -> None:
    a, b = _load_inputs(9)
    rep = run(SRC_LOADS, kernel, [pack_int4(a), pack_int4(b), torch.zeros(LM, LN, dtype=torch.int32)],
              arch="dav-c220", kernel_type="aic")
    errs = rep.get("errors") or []
    assert errs and errs[0]["kind"] == "invalid_param", rep
    assert words in errs[0]["message"], errs[0]


SRC_LOADS_3510 = r"""
#include "kernel_operator.h"
using namespace AscendC;
__global__ __cube__ void int4_loads_3510(GM_ADDR b, uint32_t which) {
    GlobalTensor<int4b_t> bg;
    bg.SetGlobalBuffer((__gm__ int4b_t*)b);
    LocalTensor<int4b_t> b1(TPosition::B1, 0, 4 * 1024);
    LocalTensor<int4b_t> a2(TPosition::A2, 0, 4 * 1024);
    LocalTensor<int4b_t> b2(TPosition::B2, 0, 4 * 1024);
    DataCopy(b1, bg, Nd2NzParams(1, 64, 32, 0, 32, 64, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    if (which == 0) {
        LoadDataWithTranspose(b2, b1, LoadData2dTransposeParams(0, 1, 1, 0, 0));
    } else {
        LoadData3DParamsV2<int4b_t> p;
        p.l1H = 1; p.l1W = 64; p.channelSize = 64; p.kExtension = 64; p.mExtension = 64;
        LoadData(a2, b1, p);
    }
}
"""


@pytest.mark.slow
@pytest.mark.parametrize("which", [0, 1])
def test_int4_loads_refused_on_3510(which: int) -> None:
    """The 950 data-type lists of both pages have no int4b_t (nor has its Mmad)."""
    rep = run(SRC_LOADS_3510, "int4_loads_3510", [torch.zeros(64, 32, dtype=torch.uint8), which],
              arch="dav-3510", kernel_type="aic")
    errs = rep.get("errors") or []
    assert errs and errs[0]["kind"] == "invalid_param", rep
    assert "dav-3510" in errs[0]["message"], errs[0]
