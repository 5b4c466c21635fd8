"""ListTensorDesc / TensorDesc: a list of GM tensors passed as one descriptor block
(辅助数据结构/ListTensorDesc.md), the tensors given to run_source as gm_buffers."""

from __future__ import annotations

import struct

import pytest
import torch
from conftest import run

from ascend_backend.emulator import EmulatorError, run_source

# out = sum of the listed tensors (each of out's length); out[0..dims) also records, per
# tensor, dim * 1000 + index * 100 + shape[last] read through GetDesc, in a second output.
SRC = r"""
#include "kernel_operator.h"
#include "kernel_operator_list_tensor_intf.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void sum_list(GM_ADDR list, GM_ADDR out, GM_ADDR info, uint32_t n) {
    ListTensorDesc desc((__gm__ void*)list);
    uint32_t count = desc.GetSize();
    TPipe pipe;
    TBuf<TPosition::VECCALC> acc_buf, in_buf;
    pipe.InitBuffer(acc_buf, n * sizeof(float));
    pipe.InitBuffer(in_buf, n * sizeof(float));
    LocalTensor<float> acc = acc_buf.Get<float>();
    LocalTensor<float> in = in_buf.Get<float>();
    Duplicate(acc, 0.0f, n);
    GlobalTensor<float> infoGm;
    infoGm.SetGlobalBuffer((__gm__ float*)info);
    for (uint32_t t = 0; t < count; ++t) {
        uint64_t shape[8] = {0};
        TensorDesc<float> td;
        td.SetShapeAddr(shape);
        desc.GetDesc(td, t);
        infoGm.SetValue(t, (float)(td.GetDim() * 1000 + td.GetIndex() * 100 + td.GetShape(td.GetDim() - 1)));
        GlobalTensor<float> g = (t % 2) ? td.GetDataObj() : GlobalTensor<float>();
        if (t % 2 == 0) g.SetGlobalBuffer(desc.GetDataPtr<float>(t));
        SetFlag<HardEvent::V_MTE2>(0);
        WaitFlag<HardEvent::V_MTE2>(0);
        DataCopy(in, g, n);
        SetFlag<HardEvent::MTE2_V>(0);
        WaitFlag<HardEvent::MTE2_V>(0);
        Add(acc, acc, in, n);
    }
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    GlobalTensor<float> o;
    o.SetGlobalBuffer((__gm__ float*)out);
    DataCopy(o, acc, n);
}
"""

N = 256


def descriptor(tensors: list[torch.Tensor], shapes: list[tuple[int, ...]]) -> torch.Tensor:
    """The documented layout: word 0 = byte offset of the pointers; per tensor a word with dim
    (low 32 bits) and index (high 32 bits) and its shape words; then the data pointers."""
    words = []
    for i, shp in enumerate(shapes):
        words.append(len(shp) | (i << 32))
        words.extend(shp)
    ptr_off = 8 * (1 + len(words))
    raw = struct.pack(f"<{2 + len(words) + len(tensors) - 1}Q", ptr_off, *words, *[t.data_ptr() for t in tensors])
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8)


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_list_of_tensors(arch: str) -> None:
    torch.manual_seed(0)
    xs = [torch.randn(N) for _ in range(3)]
    shapes = [(N,), (2, N // 2), (4, 8, N // 32)]
    d = descriptor(xs, shapes)
    out, info = torch.zeros(N), torch.zeros(8)
    rep = run_source(SRC, "sum_list", [d, out, info, N], 1, arch=arch, gm_buffers={"x0": xs[0], "x1": xs[1], "x2": xs[2]})
    assert rep.ok
    torch.testing.assert_close(out, xs[0] + xs[1] + xs[2])
    assert info[:3].tolist() == [1000 + 0 + N, 2000 + 100 + N // 2, 3000 + 200 + N // 32]


def test_tensor_not_given_is_out_of_bounds() -> None:
    xs = [torch.randn(N) for _ in range(2)]
    d = descriptor(xs, [(N,), (N,)])
    rep = run(SRC, [d, torch.zeros(N), torch.zeros(8), N], kernel="sum_list", arch="dav-c220", gm_buffers=[xs[0]])
    assert [e["kind"] for e in rep.errors] == ["gm_out_of_bounds"], rep.summary()


def test_gm_buffers_must_be_tensors() -> None:
    xs = [torch.randn(N)]
    with pytest.raises(EmulatorError, match="gm_buffers"):
        run_source(SRC, "sum_list", [descriptor(xs, [(N,)]), torch.zeros(N), torch.zeros(8), N], 1,
                   arch="dav-c220", gm_buffers=[xs[0].numpy()])
