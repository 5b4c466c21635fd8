"""int4b_t matrix multiply on dav-c220 (Mmad page, table 7: int4b_t x int4b_t -> int32_t):
two int4 per byte (even element in the low nibble), tensors indexed in 4-bit elements, GM ND
-> L1 NZ with the byte-wise Nd2Nz, L1 -> L0A (ZZ) / L0B (ZN) with LoadData2DParams."""

from __future__ import annotations

import pytest
import torch

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
