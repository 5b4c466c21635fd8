"""Per-argument GM bounds: an access past one argument's end is reported even when another
argument's memory follows (two views of one buffer), through the API and through a raw
`__gm__` pointer; overlapping views (in-place) stay legal."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER, kinds, line_of, run

from ascend_backend.emulator import run_source

ARCHS = ["dav-3510", "dav-c220"]

SRC = HEADER + r"""
// z[0:n] = x[0:n] through the API; n may run past x.
extern "C" __global__ __aicore__ void copy(GM_ADDR x, GM_ADDR z, uint32_t n) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024 * sizeof(float));
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    gz.SetGlobalBuffer((__gm__ float*)z, n);
    LocalTensor<float> t = b.Get<float>();
    DataCopy(t, gx, n);  // @LOAD
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(gz, t, n);
}

// In place: x *= 2 (x and z may be the same tensor, or overlapping views).
extern "C" __global__ __aicore__ void twice(GM_ADDR x, GM_ADDR z, uint32_t n) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024 * sizeof(float));
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    gz.SetGlobalBuffer((__gm__ float*)z, n);
    LocalTensor<float> t = b.Get<float>();
    DataCopy(t, gx, n);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(t, t, 2.0f, n);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gz, t, n);
}

// Raw pointer accesses, no API: z[i] = x[i] * 3 for i < n (n may run past either).
extern "C" __global__ __aicore__ void raw(__gm__ float* x, __gm__ float* z, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) z[i] = x[i] * 3.0f;
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_api_access_past_an_argument_into_its_neighbour_view(arch):
    buf = torch.arange(512, dtype=torch.float32)
    x, y = buf[:256], buf[256:]          # one storage: y starts where x ends
    z = torch.zeros(512)
    rep = run(SRC, [x, z, 512], kernel="copy", arch=arch)
    assert kinds(rep.errors) == ["gm_out_of_bounds"]
    e = rep.errors[0]
    assert e["line"] == line_of(SRC, "@LOAD") and "'x'" in e["message"] and "1024 bytes" in e["message"]
    assert torch.equal(y, torch.arange(256, 512, dtype=torch.float32))  # the neighbour is untouched
    z = torch.zeros(256)
    assert run_source(SRC, "copy", [x, z, 256], 1, arch=arch).ok and torch.equal(z, x)


@pytest.mark.parametrize("arch", ARCHS)
def test_overlapping_views_are_legal(arch):
    x = torch.arange(256, dtype=torch.float32)
    ref = x * 2
    assert run_source(SRC, "twice", [x, x, 256], 1, arch=arch).ok   # the same tensor twice
    assert torch.equal(x, ref)
    buf = torch.arange(512, dtype=torch.float32)
    a, b = buf[:384], buf[128:]          # overlapping views: b's first 256 elements get a's doubled
    assert run_source(SRC, "twice", [a, b, 256], 1, arch=arch).ok
    assert torch.equal(buf[128:384], 2 * torch.arange(256, dtype=torch.float32))


@pytest.mark.parametrize("arch", ARCHS)
def test_raw_pointer_access_past_an_argument_is_reported(arch):
    buf = torch.arange(128, dtype=torch.float32)
    x, after = buf[:64], buf[64:]
    z = torch.zeros(64)
    ok = run_source(SRC, "raw", [x, z, 64], 1, arch=arch)
    assert ok.ok and torch.equal(z, 3 * x)
    # reading x[64] (the neighbour view's first element) and writing z[64]
    rep = run(SRC, [x, torch.zeros(64), 65], kernel="raw", arch=arch)
    assert kinds(rep.errors) == ["gm_out_of_bounds"]
    msg = rep.errors[0]["message"]
    assert "raw __gm__ pointer" in msg and "past the end of argument 'x' (256 bytes): at its byte offset 256" in msg
    assert torch.equal(after, torch.arange(64, 128, dtype=torch.float32))
    # a write one element past the output
    big = torch.arange(65, dtype=torch.float32)
    rep = run(SRC, [big, torch.zeros(64), 65], kernel="raw", arch=arch)
    assert kinds(rep.errors) == ["gm_out_of_bounds"] and "past the end of argument 'z'" in rep.errors[0]["message"]
