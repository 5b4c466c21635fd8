"""The Reg-API subset a memory-vector kernel can call on dav-3510 (Reg矢量计算 pages): a SIMD VF
function started with asc_vf_call, RegTensor / MaskReg (CreateMask, UpdateMask), LoadAlign /
StoreAlign and Add; its UB accesses are PIPE_V accesses."""

from __future__ import annotations

import torch
from conftest import HEADER, run

from ascend_backend.emulator import run_source

# z[0..count) = x + y through a VF loop; the tail repeat stores only `count % 64` floats
# (UpdateMask); z beyond count keeps its old contents. sync = 0 leaves out MTE2 -> V.
SRC = HEADER + r"""
template <typename T>
__simd_vf__ inline void AddVF(__ubuf__ T* z, __ubuf__ T* x, __ubuf__ T* y, uint32_t count, uint16_t rep, uint16_t times) {
    Reg::RegTensor<T> a, b, c;
    Reg::MaskReg mask;
    for (uint16_t i = 0; i < times; ++i) {
        mask = Reg::UpdateMask<T>(count);
        Reg::LoadAlign(a, x + i * rep);
        Reg::LoadAlign(b, y + i * rep);
        Reg::Add(c, a, b, mask);
        Reg::StoreAlign(z + i * rep, c, mask);
    }
}

__global__ __vector__ void vf_add(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n, uint32_t count, uint32_t sync) {
    InitSocState();
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<float> xl = ub.Alloc<float>(n);
    LocalTensor<float> yl = ub.Alloc<float>(n);
    LocalTensor<float> zl = ub.Alloc<float>(n);
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x);
    yg.SetGlobalBuffer((__gm__ float*)y);
    zg.SetGlobalBuffer((__gm__ float*)z);
    DataCopy(xl, xg, n);
    DataCopy(yl, yg, n);
    DataCopy(zl, zg, n);
    if (sync) {
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    }
    constexpr uint32_t rep = GetVecLen() / sizeof(float);
    uint16_t times = CeilDivision(count, rep);
    asc_vf_call<AddVF<float>>((__ubuf__ float*)zl.GetPhyAddr(), (__ubuf__ float*)xl.GetPhyAddr(),
                              (__ubuf__ float*)yl.GetPhyAddr(), count, (uint16_t)rep, times);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(zg, zl, n);
    PipeBarrier<PIPE_ALL>();
}
"""


def test_vf_add_with_tail_mask() -> None:
    n, count = 256, 200
    x, y = torch.randn(n), torch.randn(n)
    z = torch.full((n,), 7.0)
    rep = run_source(SRC, "vf_add", [x, y, z, n, count, 1], 1, arch="dav-3510")
    assert rep.ok
    torch.testing.assert_close(z[:count], x[:count] + y[:count])
    assert torch.equal(z[count:], torch.full((n - count,), 7.0))


def test_vf_loads_race_with_copy_in() -> None:
    n = 128
    rep = run(SRC, [torch.randn(n), torch.randn(n), torch.zeros(n), n, n, 0], kernel="vf_add", arch="dav-3510")
    assert any(r["second"]["op"] == "LoadAlign" for r in rep.races), rep.summary()
