"""Vector Cast to and from the 8-bit float types on dav-3510 (Cast page, the 950 table:
float <-> fp8_e4m3fn_t / fp8_e5m2_t, half / float <-> hifloat8_t), bit-exact against torch's
float8 types over every code and the rounding edge cases, in the three saturation settings of
the CTRL register (SetCtrlSpr page: CTRL[48], CTRL[50]); hifloat8_t against a decoder written
here from the 内置数据类型 page's table 6. dav-c220 has none of these conversions: the kernel
fails to compile with that reason."""

import math
import struct

import pytest
import torch
from test_ops_harness import check_ok, run

from ascend_backend.emulator import EmulatorCompileError, run_source

N = 2048

CAST_SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int N = 2048;
template <class D, class S>
__aicore__ inline void body(GM_ADDR x, GM_ADDR out, int mode, int form) {
    TPipe pipe; TBuf<TPosition::VECCALC> bs, bd; pipe.InitBuffer(bs, N * sizeof(S)); pipe.InitBuffer(bd, N * sizeof(D));
    GlobalTensor<S> gs; GlobalTensor<D> gd; gs.SetGlobalBuffer((__gm__ S*)x, N); gd.SetGlobalBuffer((__gm__ D*)out, N);
    LocalTensor<S> ls = bs.Get<S>(); LocalTensor<D> ld = bd.Get<D>();
    DataCopy(ls, gs, N);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    constexpr uint32_t E = 256 / (sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
    if (form == 0) {
        Cast(ld, ls, (RoundMode)mode, N);
    } else {   // mask/repeat form: whole repeats, contiguous
        UnaryRepeatParams p(1, 1, (uint8_t)(E * sizeof(D) / 32), (uint8_t)(E * sizeof(S) / 32));
        Cast(ld, ls, (RoundMode)mode, (uint64_t)E, (uint8_t)(N / E), p);
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gd, ld, N);
}
extern "C" __global__ __aicore__ void cast8(GM_ADDR x, GM_ADDR out, int32_t pair, int32_t mode, int32_t ctrl,
                                            int32_t form) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (ctrl == 1) SetCtrlSpr<50, 50>(1);       // saturation, NaN kept
    if (ctrl == 2) SetCtrlSpr<48, 48>(1);       // non-saturation
    switch (pair) {
        case 0: body<fp8_e4m3fn_t, float>(x, out, mode, form); break;
        case 1: body<fp8_e5m2_t, float>(x, out, mode, form); break;
        case 2: body<float, fp8_e4m3fn_t>(x, out, mode, form); break;
        case 3: body<float, fp8_e5m2_t>(x, out, mode, form); break;
        case 4: body<hifloat8_t, float>(x, out, mode, form); break;
        case 5: body<hifloat8_t, half>(x, out, mode, form); break;
        case 6: body<float, hifloat8_t>(x, out, mode, form); break;
        case 7: body<half, hifloat8_t>(x, out, mode, form); break;
    }
}
'''''

# RoundMode values (Cast page's enum)
NONE, RINT, ROUND, HYBRID = 0, 1, 4, 7
CTRL_DEFAULT, CTRL_KEEP_NAN, CTRL_NOSAT = 0, 1, 2
F8 = {0: torch.float8_e4m3fn, 1: torch.float8_e5m2}
MAXCODE = {0: 0x7E, 1: 0x7B}


def cast(pair, x, out, mode, ctrl=CTRL_DEFAULT, form=0):
    check_ok(run(CAST_SRC, "cast8", [x, out, pair, mode, ctrl, form], arch="dav-3510"))
    return out


def edge_values(dt) -> torch.Tensor:
    """Every finite code, the midpoints between neighbours (ties), a hair either side of them,
    beyond the largest value, infinities, NaN, zeros; padded to N with random values."""
    codes = torch.arange(256, dtype=torch.uint8).view(dt).double()
    fin = torch.sort(codes[torch.isfinite(codes)]).values
    mid = (fin[1:] + fin[:-1]) / 2
    vals = torch.cat([fin, mid, mid * (1 + 2**-20), mid * (1 - 2**-20),
                      torch.tensor([1e6, -1e6, 600.0, 464.0, 465.0, 480.0, 57344.0, 61440.0, 61441.0, 65536.0,
                                    math.inf, -math.inf, math.nan, -math.nan, 0.0, -0.0, 2.0**-30, -(2.0**-30)],
                                   dtype=torch.float64)])
    vals = vals.float()
    g = torch.Generator().manual_seed(1)
    rest = torch.randn(N - vals.numel(), generator=g) * torch.exp2(torch.randint(-12, 12, (N - vals.numel(),),
                                                                                  generator=g).float())
    return torch.cat([vals, rest])


def expected_fp8(pair, x, ctrl):
    """torch's conversion, adjusted per the documented saturation setting."""
    dt = F8[pair]
    bits = x.to(dt).view(torch.uint8).clone()
    sign = torch.signbit(x).to(torch.uint8) * 0x80
    nan = torch.isnan(x)
    if pair == 0:
        # torch saturates e4m3fn (+-448), inf included; NaN stays NaN (0x7F with the sign)
        if ctrl == CTRL_DEFAULT:
            bits[nan] = 0
        elif ctrl == CTRL_NOSAT:
            over = ~nan & (x.abs() > 464)
            bits[over] = (sign | 0x7F)[over]
    else:
        # torch: IEEE e5m2 (overflow -> inf), NaN stays NaN
        if ctrl != CTRL_NOSAT:
            big = ~nan & ((bits & 0x7F) == 0x7C)
            bits[big] = (sign | MAXCODE[pair])[big]
            if ctrl == CTRL_DEFAULT:
                bits[nan] = 0
    return bits


@pytest.mark.parametrize("pair", [0, 1])
@pytest.mark.parametrize("ctrl", [CTRL_DEFAULT, CTRL_KEEP_NAN, CTRL_NOSAT])
def test_float_to_fp8_every_code_and_tie(pair, ctrl):
    x = edge_values(F8[pair])
    out = torch.zeros(N, dtype=torch.uint8)
    cast(pair, x, out, RINT, ctrl)
    exp = expected_fp8(pair, x, ctrl)
    bad = (out != exp).nonzero().flatten()
    assert bad.numel() == 0, [(x[i].item(), out[i].item(), exp[i].item()) for i in bad[:8]]


def test_float_to_fp8_default_saturates_and_zeroes_nan():
    """The documented default (CTRL[48] = 0, CTRL[50] = 0) differs from torch on purpose."""
    x = torch.zeros(N)
    x[:6] = torch.tensor([1e9, -1e9, math.inf, -math.inf, math.nan, 464.0])
    out = torch.zeros(N, dtype=torch.uint8)
    cast(0, x, out, RINT)
    assert out[:6].tolist() == [0x7E, 0xFE, 0x7E, 0xFE, 0x00, 0x7E]
    cast(1, x, out, RINT)
    assert out[:6].tolist() == [0x7B, 0xFB, 0x7B, 0xFB, 0x00, 0x5F]


@pytest.mark.parametrize("pair", [2, 3])
def test_fp8_to_float_every_code(pair):
    codes = torch.arange(256, dtype=torch.uint8).repeat(N // 256)
    out = torch.zeros(N)
    cast(pair, codes, out, NONE, form=1)
    exp = codes.view(F8[pair - 2]).float()
    assert torch.equal(out.view(torch.int32)[~torch.isnan(exp)], exp.view(torch.int32)[~torch.isnan(exp)])
    assert torch.isnan(out).equal(torch.isnan(exp))


def test_float_to_fp8_mask_form_matches_count_form():
    x = edge_values(torch.float8_e4m3fn)
    a = torch.zeros(N, dtype=torch.uint8)
    b = torch.zeros(N, dtype=torch.uint8)
    cast(0, x, a, RINT)
    cast(0, x, b, RINT, form=1)
    assert torch.equal(a, b)


# ---- hifloat8_t: a decoder written from table 6 of the 内置数据类型 page


def hif8_value(c: int) -> float:
    if c == 0x00:
        return 0.0
    if c == 0x80:
        return math.nan
    s = -1.0 if c & 0x80 else 1.0
    b = c & 0x7F
    if b == 0x6F:
        return s * math.inf
    bits = format(b, "07b")
    if bits.startswith("0000"):                       # subnormal: 2^(M - 23)
        return s * 2.0 ** (int(bits[4:], 2) - 23)
    for dot, ew in (("11", 4), ("10", 3), ("01", 2), ("001", 1), ("0001", 0)):
        if bits.startswith(dot):
            rest = bits[len(dot):]
            e, m = rest[:ew], rest[ew:]
            ev = 0 if ew == 0 else (-1 if e[0] == "1" else 1) * int("1" + e[1:], 2)
            return s * 2.0 ** ev * (1 + int(m, 2) / 2 ** len(m))
    raise AssertionError(c)


HIF8 = [hif8_value(c) for c in range(256)]


def test_hifloat8_to_float_and_half_every_code():
    codes = torch.arange(256, dtype=torch.uint8).repeat(N // 256)
    exp = torch.tensor([HIF8[c] for c in codes.tolist()])
    out = torch.zeros(N)
    cast(6, codes, out, NONE)
    assert torch.equal(torch.isnan(out), torch.isnan(exp))
    assert torch.equal(out[~torch.isnan(exp)], exp[~torch.isnan(exp)])
    out16 = torch.zeros(N, dtype=torch.float16)
    cast(7, codes, out16, NONE)
    assert torch.equal(out16.float()[~torch.isnan(exp)], exp[~torch.isnan(exp)])


def hif8_round_away(v: float, sat: bool) -> int:
    """CAST_ROUND: the nearest code by value, ties away from zero (exponents use the page's
    rule: inside a binade the midpoints are arithmetic)."""
    if math.isnan(v):
        return 0x00 if sat else 0x80
    finite = sorted((HIF8[c], c) for c in range(256) if math.isfinite(HIF8[c]) and c != 0x80)
    a = abs(v)
    if a >= 2.0**16 or math.isinf(v):
        code = 0x6F
    else:
        pos = [(val, c) for val, c in finite if val >= 0]
        code = 0
        for (lo, clo), (hi, chi) in zip(pos, pos[1:], strict=False):
            if lo <= a < hi:
                code = chi if a >= (lo + hi) / 2 else clo
                break
        else:
            code = 0x6F if a >= 2.0**15 * 1.25 else 0x6E
    if code == 0x6F and sat:
        code = 0x6E
    return code | (0x80 if v < 0 and code != 0 else 0)


def test_float_to_hifloat8_round_every_code_and_midpoint():
    fin = sorted(v for v in HIF8 if math.isfinite(v) and v >= 0)
    mids = [(a + b) / 2 for a, b in zip(fin, fin[1:], strict=False)]
    vals = fin + mids + [m * (1 - 2**-12) for m in mids] + [2.0**-23, 2.0**-23 * 0.99, 2.0**-24, 40000.0, 1e9]
    vals = vals + [-v for v in vals]
    vals = (vals + [math.inf, -math.inf, math.nan] + [0.0] * N)[:N]
    x = torch.tensor(vals, dtype=torch.float32)
    for ctrl in (CTRL_DEFAULT, CTRL_NOSAT):
        out = torch.zeros(N, dtype=torch.uint8)
        cast(4, x, out, ROUND, ctrl)
        exp = [hif8_round_away(v, ctrl != CTRL_NOSAT) for v in x.tolist()]
        bad = [(v, o, e) for v, o, e in zip(x.tolist(), out.tolist(), exp, strict=True) if o != e]
        assert not bad, bad[:8]


def test_half_and_float_to_hifloat8_round_agree_on_halves():
    g = torch.Generator().manual_seed(3)
    h = (torch.randn(N, generator=g) * 100).half()
    a = torch.zeros(N, dtype=torch.uint8)
    b = torch.zeros(N, dtype=torch.uint8)
    cast(4, h.float(), a, ROUND)
    cast(5, h, b, ROUND)
    assert torch.equal(a, b)


def hybrid_ref(v: float) -> int:
    """The page's hybrid rule for a float input (exponent ranges +-[4, 15] and the subnormals:
    round up when the 14 bits from the first dropped one >= the input's low 14 bits)."""
    u = struct.unpack("<I", struct.pack("<f", v))[0]
    man, ev, thr = u & 0x7FFFFF, ((u >> 23) & 0xFF) - 127, u & 0x3FFF
    a = abs(ev)
    mb = 3 if a <= 3 else (2 if a <= 7 else 1)
    if ev < -23:
        return 0
    if ev == -23:   # below the smallest code 2^-22: {1, the first 13 fraction bits} against thr
        return (0x81 if v < 0 else 0x01) if ((1 << 13) | (man >> 10)) >= thr else 0
    if -22 <= ev <= -16:
        frac = (man >> 9) & 0x3FFF
        lo = 2.0**ev
        return hif8_round_away(math.copysign(2 * lo if frac >= thr else lo, v), True)
    trunc = math.copysign(2.0**ev * (1 + (man >> (23 - mb)) / 2**mb), v)
    if a <= 3:
        return hif8_round_away(v, True)
    frac = (man >> (9 - mb)) & 0x3FFF
    up = math.copysign(2.0**ev * (1 + ((man >> (23 - mb)) + 1) / 2**mb), v)
    return hif8_round_away(up if frac >= thr else trunc, True)


def test_float_to_hifloat8_hybrid_rule():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(N, generator=g) * torch.exp2(torch.randint(-20, 14, (N,), generator=g).float())
    out = torch.zeros(N, dtype=torch.uint8)
    cast(4, x, out, HYBRID)
    exp = [hybrid_ref(v) for v in x.tolist()]
    bad = [(v, o, e) for v, o, e in zip(x.tolist(), out.tolist(), exp, strict=True) if o != e]
    assert not bad, bad[:8]
    # hybrid is not plain rounding: some inputs round differently from CAST_ROUND
    rnd = torch.zeros(N, dtype=torch.uint8)
    cast(4, x, rnd, ROUND)
    assert (rnd != out).any()


def test_fp8_cast_mode_outside_the_table_is_an_error():
    x = torch.ones(N)
    out = torch.zeros(N, dtype=torch.uint8)
    rep = run(CAST_SRC, "cast8", [x, out, 0, ROUND, 0, 0], arch="dav-3510")
    assert any("CAST_RINT" in e.get("message", "") for e in rep.get("errors", [])), rep


def test_fp8_cast_does_not_compile_on_dav_c220():
    src = r'''
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void k(GM_ADDR x) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe; TBuf<TPosition::VECCALC> b, c; pipe.InitBuffer(b, 1024); pipe.InitBuffer(c, 256);
    LocalTensor<float> f = b.Get<float>();
    LocalTensor<fp8_e4m3fn_t> q = c.Get<fp8_e4m3fn_t>();
    Cast(q, f, RoundMode::CAST_RINT, 256);
}
'''
    with pytest.raises(EmulatorCompileError, match="only on dav-3510"):
        run_source(src, "k", [torch.zeros(4)], 1, arch="dav-c220")
