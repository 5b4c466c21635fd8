"""4:2 structured-sparse matmul on dav-c220 (LoadDataWithSparse, MmadWithSparse pages): B keeps
two values of every four K values plus a 2-bit index per kept value; the result must equal the
dense product with the original B."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ascend_backend.emulator import run_source

SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t M = 32, N = 48, K = 128;
constexpr uint32_t MB = M / 16, NB = N / 16, KB = K / 32, KDB = K / 2 / 32;

// a: A as NZ fractals (kb, mb); b: densified B as ZN fractals (kbd, nb); idx: its index fractals
__global__ __cube__ void sparse_mm(GM_ADDR a, GM_ADDR b, GM_ADDR idx, GM_ADDR c, uint32_t accumulate) {
    GlobalTensor<int8_t> ag, bg;
    GlobalTensor<uint8_t> ig;
    GlobalTensor<int32_t> cg;
    ag.SetGlobalBuffer((__gm__ int8_t*)a);
    bg.SetGlobalBuffer((__gm__ int8_t*)b);
    ig.SetGlobalBuffer((__gm__ uint8_t*)idx);
    cg.SetGlobalBuffer((__gm__ int32_t*)c);
    LocalTensor<int8_t> a1(TPosition::A1, 0, M * K), b1(TPosition::B1, 65536, K / 2 * N);
    LocalTensor<uint8_t> i1(TPosition::B1, 131072, K / 8 * N);
    LocalTensor<int8_t> a2(TPosition::A2, 0, M * K), b2(TPosition::B2, 0, K / 2 * N);
    LocalTensor<int32_t> c1(TPosition::CO1, 0, M * N);
    DataCopy(a1, ag, M * K);
    DataCopy(b1, bg, K / 2 * N);
    DataCopy(i1, ig, K / 8 * N);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t i = 0; i < MB; ++i)
        LoadData(a2[i * KB * 512], a1[i * 512], LoadData2DParams(0, KB, MB, 0, 0, false, 0));
    LoadDataWithSparse(b2, b1, i1, LoadData2DParams(0, KDB * NB, 0, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadWithSparse(c1, a2, b2, MmadParams(M, N, K, false, 0, false, false, false));
    if (accumulate) MmadWithSparse(c1, a2, b2, MmadParams(M, N, K, true, 0, false, false, false));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 f(N, M, M, N, false);
    Fixpipe<int32_t, int32_t, CFG_ROW_MAJOR>(cg, c1, f);
}
"""

M, N, K = 32, 48, 128


def densify(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[K, N] with at most 2 nonzeros per 4 K values -> dense [K/2, N] and the 2-bit indices
    [K/2, N] (the page's table: idx0 = first kept value's place among elements 0..2, idx1 the
    second's among elements 1..3)."""
    kk, n = b.shape
    dense = np.zeros((kk // 2, n), np.int8)
    index = np.zeros((kk // 2, n), np.uint8)
    for j in range(n):
        for g in range(kk // 4):
            grp = b[4 * g:4 * g + 4, j]
            nz = [p for p in range(4) if grp[p] != 0]
            if len(nz) == 2:
                i0, i1, vals = nz[0], nz[1] - 1, [grp[nz[0]], grp[nz[1]]]
            elif len(nz) == 1 and nz[0] == 3:
                i0, i1, vals = 0, 2, [0, grp[3]]
            elif len(nz) == 1:
                i0, i1, vals = nz[0], 0, [grp[nz[0]], 0]
            else:
                i0, i1, vals = 0, 0, [0, 0]
            dense[2 * g:2 * g + 2, j] = vals
            index[2 * g, j], index[2 * g + 1, j] = i0, i1
    return dense, index


def zn(x: np.ndarray) -> np.ndarray:
    """[Kd, N] int8 -> ZN fractals: fractal (kd // 32, n // 16) row-major, inside n-major rows of 32 k."""
    kd, n = x.shape
    return x.reshape(kd // 32, 32, n // 16, 16).transpose(0, 2, 3, 1).reshape(-1)


def test_sparse_matmul_equals_dense_product() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(-9, 10, (M, K)).astype(np.int8)
    b = np.zeros((K, N), np.int8)
    for j in range(N):
        for g in range(K // 4):
            keep = rng.choice(4, rng.integers(0, 3), replace=False)   # 0, 1 or 2 nonzeros
            b[4 * g + keep, j] = rng.integers(1, 10, len(keep))
    dense, index = densify(b)
    a_nz = a.reshape(M // 16, 16, K // 32, 32).transpose(2, 0, 1, 3).reshape(-1)
    idx_entries = zn(index.astype(np.int8)).astype(np.uint8).reshape(-1, 4)
    idx_bytes = (idx_entries[:, 0] | idx_entries[:, 1] << 2 | idx_entries[:, 2] << 4 | idx_entries[:, 3] << 6).astype(np.uint8)
    ref = a.astype(np.int64) @ b.astype(np.int64)
    for acc in (0, 1):
        c = torch.zeros(M, N, dtype=torch.int32)
        rep = run_source(SRC, "sparse_mm", [torch.from_numpy(a_nz.copy()), torch.from_numpy(zn(dense).copy()),
                                             torch.from_numpy(idx_bytes.copy()), c, acc], 1, arch="dav-c220")
        assert rep.ok
        assert np.array_equal(c.numpy(), ref * (1 + acc))


@pytest.mark.slow
def test_sparse_is_c220_only() -> None:
    from ascend_backend.emulator import EmulatorCompileError

    with pytest.raises(EmulatorCompileError):
        run_source(SRC, "sparse_mm", [torch.zeros(M * K, dtype=torch.int8), torch.zeros(K * N // 2, dtype=torch.int8),
                                      torch.zeros(K * N // 8, dtype=torch.uint8), torch.zeros(M, N, dtype=torch.int32), 0],
                   1, arch="dav-3510")
