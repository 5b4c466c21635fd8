"""DataCopy (count and DataCopyParams strides), DataCopyPad (unaligned rows, GM byte strides,
UB 32-byte row rounding, left/right padding) and Cast with every RoundMode, on both arches."""
import math

import pytest
import torch
from test_ops_harness import check_ok, run

COPY_SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
// x: [8, 40] half in GM; out: 1024 halves, pre-filled by the test.
extern "C" __global__ __aicore__ void cp(GM_ADDR x, GM_ADDR out, int32_t mode) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe; TBuf<TPosition::VECCALC> b; pipe.InitBuffer(b, 4096);
    GlobalTensor<half> gx, go; gx.SetGlobalBuffer((__gm__ half*)x, 320); go.SetGlobalBuffer((__gm__ half*)out, 1024);
    LocalTensor<half> t = b.Get<half>();
    Duplicate(t, half(-1.0f), 1024);
    SetFlag<HardEvent::V_MTE2>(0); WaitFlag<HardEvent::V_MTE2>(0);
    if (mode == 0) {
        // 8 rows of 33 halves (66 bytes, unaligned), GM rows 80 bytes apart (gap 14 bytes);
        // UB rows rounded to 96 bytes (3 blocks) plus a 1-block gap.
        DataCopyPad(t, gx, DataCopyExtParams(8, 66, 14, 1, 0), DataCopyPadExtParams<half>(false, 0, 0, half(0)));
        SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
        // back to GM: same UB layout (srcStride 1 block), GM rows of 66 bytes with a 2-byte gap
        DataCopyPad(go, t, DataCopyExtParams(8, 66, 1, 2, 0));
    } else if (mode == 1) {
        // padding: 2 left, 5 right elements of value 7 around 25 data elements per row
        DataCopyPad(t, gx, DataCopyExtParams(4, 50, 30, 0, 0), DataCopyPadExtParams<half>(true, 2, 5, half(7.0f)));
        SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
        DataCopy(go, t, 256);
    } else if (mode == 2) {
        // DataCopyParams: 4 blocks of 2x32 bytes, GM gap 1 block, UB gap 3 blocks; then back contiguous
        DataCopy(t, gx, DataCopyParams(4, 2, 1, 3));
        SetFlag<HardEvent::MTE2_MTE3>(0); WaitFlag<HardEvent::MTE2_MTE3>(0);
        DataCopy(go, t, DataCopyParams(1, 20, 0, 0));
    }
}
'''

CAST_SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
template <class D, class S>
__aicore__ inline void cast_body(GM_ADDR x, GM_ADDR out, int mode) {
    constexpr int N = 256;
    TPipe pipe; TBuf<TPosition::VECCALC> bs, bd; pipe.InitBuffer(bs, N * sizeof(S)); pipe.InitBuffer(bd, N * sizeof(D));
    GlobalTensor<S> gs; GlobalTensor<D> gd; gs.SetGlobalBuffer((__gm__ S*)x, N); gd.SetGlobalBuffer((__gm__ D*)out, N);
    LocalTensor<S> ls = bs.Get<S>(); LocalTensor<D> ld = bd.Get<D>();
    DataCopy(ls, gs, N);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    Cast(ld, ls, (RoundMode)mode, N);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gd, ld, N);
}
extern "C" __global__ __aicore__ void cast(GM_ADDR x, GM_ADDR out, int32_t pair, int32_t mode) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    switch (pair) {
        case 0: cast_body<half, float>(x, out, mode); break;
        case 1: cast_body<bfloat16_t, float>(x, out, mode); break;
        case 2: cast_body<int32_t, float>(x, out, mode); break;
        case 3: cast_body<float, half>(x, out, mode); break;
        case 4: cast_body<float, bfloat16_t>(x, out, mode); break;
        case 5: cast_body<float, int32_t>(x, out, mode); break;
        case 6: cast_body<int32_t, half>(x, out, mode); break;
    }
}
'''

ARCHES = ["dav-c220", "dav-3510"]


@pytest.mark.parametrize("arch", ARCHES)
def test_datacopypad_roundtrip(arch):
    x = torch.arange(320, dtype=torch.float32).half()
    out = torch.full((1024,), 5.0, dtype=torch.float16)
    check_ok(run(COPY_SRC, "cp", [x, out, 0], arch=arch))
    exp = torch.full((1024,), 5.0, dtype=torch.float16)
    for r in range(8):
        exp[r * 34:r * 34 + 33] = x[r * 40:r * 40 + 33]      # GM out rows: 33 elems + 1-elem gap
    assert torch.equal(out, exp)


@pytest.mark.parametrize("arch", ARCHES)
def test_datacopypad_padding(arch):
    x = torch.arange(320, dtype=torch.float32).half()
    out = torch.zeros(1024, dtype=torch.float16)
    check_ok(run(COPY_SRC, "cp", [x, out, 1], arch=arch))
    ub = torch.full((256,), -1.0, dtype=torch.float16)
    for r in range(4):   # row = [2 x 7][25 data][5 x 7] = 32 halves = 64 bytes, gm rows 80 bytes apart
        ub[r * 32:r * 32 + 2] = 7
        ub[r * 32 + 2:r * 32 + 27] = x[r * 40:r * 40 + 25]
        ub[r * 32 + 27:r * 32 + 32] = 7
    assert torch.equal(out[:256], ub)


@pytest.mark.parametrize("arch", ARCHES)
def test_datacopy_params_strides(arch):
    x = torch.arange(320, dtype=torch.float32).half()
    out = torch.zeros(1024, dtype=torch.float16)
    check_ok(run(COPY_SRC, "cp", [x, out, 2], arch=arch))
    ub = torch.full((320,), -1.0, dtype=torch.float16)
    for i in range(4):   # 32 halves per block of 2x32 B; GM pitch 48 halves, UB pitch 80 halves
        ub[i * 80:i * 80 + 32] = x[i * 48:i * 48 + 32]
    assert torch.equal(out[:320], ub)


def _h_step(h, up):
    """The half next to h (a python float) toward +inf (up) or -inf."""
    bits = torch.tensor([h], dtype=torch.float16).view(torch.int16).item()
    if h == 0:
        bits = 0x0001 if up else -0x7fff   # smallest subnormal of the right sign
    elif (h > 0) == up:
        bits += 1
    else:
        bits -= 1
    return torch.tensor([bits], dtype=torch.int16).view(torch.float16).item()


def _round_ref(v, mode):
    """Rounding of a python float to half with RoundMode `mode`, from its two neighbours."""
    a = torch.tensor(v, dtype=torch.float64).half().item()      # nearest, ties to even
    if a == v or mode in (0, 1):
        return a
    down, up = (a, _h_step(a, True)) if a < v else (_h_step(a, False), a)
    if mode == 2:
        return down
    if mode == 3:
        return up
    if mode == 5:
        return down if v > 0 else up
    if mode == 4:
        dd, du = v - down, up - v
        return down if dd < du else up if du < dd else (up if v > 0 else down)
    if mode == 6:
        return down if torch.tensor([down], dtype=torch.float16).view(torch.int16).item() & 1 else up
    raise ValueError(mode)


@pytest.mark.parametrize("arch", ARCHES)
def test_cast_float_to_half_modes(arch):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(256, generator=g) * 10
    x[0], x[1], x[2], x[3] = 1 + 2 ** -11, -(1 + 2 ** -11), 1 + 3 * 2 ** -11, 70000.0   # ties and overflow
    for mode in (1, 2, 3, 4, 5, 6):
        out = torch.zeros(256, dtype=torch.float16)
        check_ok(run(CAST_SRC, "cast", [x, out, 0, mode], arch=arch))
        exp = torch.tensor([_round_ref(float(v), mode) for v in x[:3]], dtype=torch.float16)
        assert torch.equal(out[:3], exp), (mode, out[:3], exp)
        if mode == 1:
            assert torch.equal(out, x.half())
            assert math.isinf(float(out[3]))
        if mode == 5:
            assert float(out[3]) == 65504.0
        for v, o in zip(x[4:].tolist(), out[4:].tolist(), strict=True):
            assert o == _round_ref(v, mode), (mode, v, o)


@pytest.mark.parametrize("arch", ARCHES)
def test_cast_other_pairs(arch):
    g = torch.Generator().manual_seed(6)
    x = torch.randn(256, generator=g) * 100
    x[0], x[1], x[2], x[3] = 2.5, -2.5, 3.5, -0.5
    out = torch.zeros(256, dtype=torch.bfloat16)
    check_ok(run(CAST_SRC, "cast", [x, out, 1, 1], arch=arch))
    assert torch.equal(out.view(torch.int16), x.bfloat16().view(torch.int16))
    expect = {1: torch.round(x), 2: torch.floor(x), 3: torch.ceil(x), 5: torch.trunc(x),
              4: torch.sign(x) * torch.floor(x.abs() + 0.5)}
    for mode, e in expect.items():
        out = torch.zeros(256, dtype=torch.int32)
        check_ok(run(CAST_SRC, "cast", [x, out, 2, mode], arch=arch))
        assert torch.equal(out, e.int()), mode
    h = x.half()
    out = torch.zeros(256)
    check_ok(run(CAST_SRC, "cast", [h, out, 3, 0], arch=arch))
    assert torch.equal(out, h.float())
    bf = x.bfloat16()
    check_ok(run(CAST_SRC, "cast", [bf, out, 4, 0], arch=arch))
    assert torch.equal(out, bf.float())
    xi = (x * 1e5).int()
    check_ok(run(CAST_SRC, "cast", [xi, out, 5, 1], arch=arch))
    assert torch.equal(out, xi.float())
    outi = torch.zeros(256, dtype=torch.int32)
    check_ok(run(CAST_SRC, "cast", [h, outi, 6, 2], arch=arch))
    assert torch.equal(outi, torch.floor(h.float()).int())


@pytest.mark.parametrize("arch", ARCHES)
def test_cast_rejects_mode_on_exact_conversion(arch):
    out = torch.zeros(256)
    rep = run(CAST_SRC, "cast", [torch.zeros(256, dtype=torch.float16), out, 3, 1], arch=arch)
    assert any("invalid_param" in str(e) for e in rep.get("errors", [])), rep
