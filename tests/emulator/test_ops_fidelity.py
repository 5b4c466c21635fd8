"""Numerics the pages define exactly: the pairwise reduction tree with partial sums in the
operand precision (ReduceSum / ReduceRepeat / ReduceDataBlock pages), DataCopyPad GM -> UB
filler elements ("DataCopyPad (GMToUB)" page) and Abs(-0.0) (Abs page: |x|)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import HEADER

from ascend_backend.emulator import run_source

ARCHS = ["dav-3510", "dav-c220"]

SRC = HEADER + r"""
template <class T>
__aicore__ inline void load(TPipe& pipe, TBuf<TPosition::VECCALC>& b, GlobalTensor<T>& g, GM_ADDR p, uint32_t n) {
    pipe.InitBuffer(b, (n * sizeof(T) + 31) / 32 * 32);
    g.SetGlobalBuffer((__gm__ T*)p, n);
}

// dst[0] = ReduceSum(src[0:n]); dst[1] = WholeReduceSum of the first repeat (128 halves)
extern "C" __global__ __aicore__ void rsum(GM_ADDR x, GM_ADDR z, uint32_t n) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz, bw;
    GlobalTensor<half> gx, gz;
    load(pipe, bx, gx, x, n);
    load(pipe, bz, gz, z, 16);
    pipe.InitBuffer(bw, 64 * 1024);
    LocalTensor<half> lx = bx.Get<half>(), lz = bz.Get<half>(), lw = bw.Get<half>();
    DataCopy(lx, gx, (n + 15) / 16 * 16);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    Duplicate(lz, half(0), 16);
    ReduceSum(lz, lx, lw, n);
    WholeReduceSum(lz[1], lx, 128, 1, 1, 1, 8);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gz, lz, 16);
}

extern "C" __global__ __aicore__ void rsumf(GM_ADDR x, GM_ADDR z, uint32_t n) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz, bw;
    GlobalTensor<float> gx, gz;
    load(pipe, bx, gx, x, n);
    load(pipe, bz, gz, z, 8);
    pipe.InitBuffer(bw, 64 * 1024);
    LocalTensor<float> lx = bx.Get<float>(), lz = bz.Get<float>(), lw = bw.Get<float>();
    DataCopy(lx, gx, (n + 7) / 8 * 8);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    Duplicate(lz, 0.0f, 8);
    ReduceSum(lz, lx, lw, n);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gz, lz, 8);
}

// rows x cols halves (cols * 2 bytes need not be 32-byte aligned) -> UB rows padded to 32 bytes
// (16 halves per block), copied back whole. UB is pre-filled with -1.
extern "C" __global__ __aicore__ void pad(GM_ADDR x, GM_ADDR z, uint32_t rows, uint32_t cols, uint32_t left,
                                          uint32_t right, uint32_t isPad) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 4096);
    GlobalTensor<half> gx, gz;
    gx.SetGlobalBuffer((__gm__ half*)x, rows * cols);
    gz.SetGlobalBuffer((__gm__ half*)z, 2048);
    LocalTensor<half> t = b.Get<half>();
    Duplicate(t, half(-1.0f), 2048);
    SetFlag<HardEvent::V_MTE2>(0); WaitFlag<HardEvent::V_MTE2>(0);
    DataCopyPad(t, gx, DataCopyExtParams(rows, cols * sizeof(half), 0, 0, 0),
                DataCopyPadExtParams<half>(isPad != 0, left, right, half(7.0f)));
    SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(gz, t, 2048);
}

extern "C" __global__ __aicore__ void absz(GM_ADDR x, GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz;
    pipe.InitBuffer(bx, 256);
    pipe.InitBuffer(bz, 256);
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    gz.SetGlobalBuffer((__gm__ float*)z, 64);
    LocalTensor<float> lx = bx.Get<float>(), lz = bz.Get<float>();
    DataCopy(lx, gx, 64);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    Abs(lz, lx, 32);
    Abs(lz[32], lx[32], 32, 1, UnaryRepeatParams(1, 1, 8, 8));
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gz, lz, 64);
}
"""


def _tree(v: np.ndarray) -> np.generic:
    """Pairwise sum of adjacent elements, level by level, in v's dtype (padded with zeros)."""
    m = 1
    while m < len(v):
        m *= 2
    w = np.zeros(m, dtype=v.dtype)
    w[: len(v)] = v
    while len(w) > 1:
        w = (w[0::2] + w[1::2]).astype(v.dtype)
    return w[0]


def _reduce_sum_ref(v: np.ndarray, arch: str) -> np.generic:
    """ReduceSum (count form) per the page: method 1 on A2/A3 (dav-c220), methods 2/3 on the 950."""
    e = 256 // v.itemsize
    reps = [v[i:i + e] for i in range(0, len(v), e)]
    if arch == "dav-3510" and 256 <= v.nbytes <= 1024:   # method 3: add repeats, then one tree
        acc = np.zeros(e, dtype=v.dtype)
        for r in reps:
            acc[: len(r)] = (acc[: len(r)] + r).astype(v.dtype)
        return _tree(acc)
    part = np.array([_tree(r) for r in reps], dtype=v.dtype)
    if arch == "dav-3510":                               # method 2: trees of repeat results
        while len(part) > 1:
            part = np.array([_tree(part[i:i + e]) for i in range(0, len(part), e)], dtype=v.dtype)
        return part[0]
    acc = part[0]                                        # method 1: repeats added in order
    for p in part[1:]:
        acc = v.dtype.type(acc + p)
    return acc


@pytest.mark.parametrize("arch", ARCHS)
def test_fp16_sum_is_a_tree_in_half_precision(arch):
    # [2048, then 127 ones]: pairwise in half: 2048 + 1 rounds to 2048, then +2, +4, ... +64 = 2174;
    # a sum in double rounded once would give 2176.
    x = torch.ones(128, dtype=torch.float16)
    x[0] = 2048
    z = torch.zeros(16, dtype=torch.float16)
    assert run_source(SRC, "rsum", [x, z, 128], 1, arch=arch).ok
    assert z[0].item() == 2174 and z[1].item() == 2174


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n", [100, 384, 1000, 4096, 20000])
def test_reduce_sum_combines_repeats_as_documented(arch, n):
    g = torch.Generator().manual_seed(n)
    x = (torch.rand(n, generator=g) * 8).to(torch.float16)
    z = torch.zeros(16, dtype=torch.float16)
    xp = torch.cat([x, torch.zeros(-n % 16, dtype=torch.float16)])  # the load copies whole 32-byte blocks
    assert run_source(SRC, "rsum", [xp, z, n], 1, arch=arch).ok
    v = x.numpy()
    with np.errstate(over="ignore"):  # n = 20000 overflows half: inf, the sums do not saturate
        assert z[0].item() == float(_reduce_sum_ref(v, arch))
    if n >= 128:  # WholeReduceSum reads one full repeat
        assert z[1].item() == float(_tree(v[:128]))
    xf = torch.rand(n, generator=g) * 100
    zf = torch.zeros(8)
    assert run_source(SRC, "rsumf", [torch.cat([xf, torch.zeros(-n % 8)]), zf, n], 1, arch=arch).ok
    assert zf[0].item() == float(_reduce_sum_ref(xf.numpy(), arch))


def _pad_ref(x: torch.Tensor, rows: int, cols: int, left: int, right: int, is_pad: bool) -> torch.Tensor:
    ub = torch.full((2048,), -1.0, dtype=torch.float16)
    row = (left + cols + right + 15) // 16 * 16
    for r in range(rows):
        base = r * row
        ub[base + left: base + left + cols] = x[r * cols:(r + 1) * cols]
        if is_pad:
            ub[base: base + left] = 7
            ub[base + left + cols: base + row] = 7             # padding and dummy = paddingValue
        elif left == 0 and right == 0:
            ub[base + cols: base + row] = x[r * cols]           # dummy = the row's first element
    return ub


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("cols,left,right,is_pad", [
    (20, 0, 0, 0),   # 40 bytes: 12 dummy elements = first element
    (20, 0, 0, 1),   # the same with isPad: paddingValue (the official example's reading)
    (16, 0, 0, 0),   # aligned: no filler
    (19, 2, 5, 1),   # padding + dummy = paddingValue
    (19, 2, 5, 0),   # padding without isPad: undefined, left unwritten
    (12, 0, 4, 1),   # aligned with padding: paddingValue, no dummy
])
def test_data_copy_pad_filler(arch, cols, left, right, is_pad):
    rows = 3
    x = torch.arange(1, rows * cols + 1, dtype=torch.float16)
    z = torch.zeros(2048, dtype=torch.float16)
    rep = run_source(SRC, "pad", [x, z, rows, cols, left, right, is_pad], 1, arch=arch)
    assert rep.ok
    assert torch.equal(z, _pad_ref(x, rows, cols, left, right, bool(is_pad)))


@pytest.mark.parametrize("arch", ARCHS)
def test_abs_of_negative_zero_is_positive_zero(arch):
    x = torch.tensor([-0.0, 0.0, -1.5, 2.0] * 16)
    z = torch.full((64,), 9.0)
    assert run_source(SRC, "absz", [x, z], 1, arch=arch).ok
    assert torch.equal(z, x.abs())
    assert not torch.signbit(z).any()  # both the count and the mask/repeat forms
