"""Memory-vector-compute ops of emu_vector_ext.h against torch/numpy references, on both arches
where the op exists: compound ops (AddRelu, SubRelu, FusedMulAdd, MulAddRelu, MulAddDst, Axpy,
LeakyRelu, AddReluCast, MulCast, AddDeqRelu), logic (And/Or/Not/ShiftLeft/ShiftRight), counter
mode and mask clamping, CreateVecIndex, Duplicate mask forms, the 950 flexible-scalar forms and
Interleave/DeInterleave. Bit-exact where the pages define the rounding; the source is one
hand-written kernel with an op switch (compiled once per arch)."""
import numpy as np
import pytest
import torch
from test_ops_harness import check_ok, run

ARCHES = ["dav-c220", "dav-3510"]
NB = 8192          # bytes per GM / UB operand

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int NB = 8192;

template <class T>
__aicore__ inline void body(GM_ADDR x, GM_ADDR y, GM_ADDR out, int op) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    pipe.InitBuffer(bx, NB); pipe.InitBuffer(by, NB); pipe.InitBuffer(bo, NB);
    GlobalTensor<uint8_t> gx, gy, go;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, NB); gy.SetGlobalBuffer((__gm__ uint8_t*)y, NB);
    go.SetGlobalBuffer((__gm__ uint8_t*)out, NB);
    LocalTensor<uint8_t> ux = bx.Get<uint8_t>(), uy = by.Get<uint8_t>(), uo = bo.Get<uint8_t>();
    DataCopy(ux, gx, NB); DataCopy(uy, gy, NB); DataCopy(uo, go, NB);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<T> lx = ux.ReinterpretCast<T>(), ly = uy.ReinterpretCast<T>(), lo = uo.ReinterpretCast<T>();
    constexpr int REP = 256 / sizeof(T);
    const BinaryRepeatParams bp(1, 1, 1, 8, 8, 8);
    const UnaryRepeatParams up(1, 1, 8, 8);
    uint64_t bits[2] = {0x00FF00FF0F0F3333ull, sizeof(T) == 2 ? 0x8000000000000001ull : 0ull};
    switch (op) {
        // ---- compound ops (count / continuous mask / bit mask)
        case 0: AddRelu(lo, lx, ly, 3 * REP + 5); break;
        case 1: SubRelu(lo, lx, ly, (uint64_t)(REP - 7), 3, bp); break;
        case 2: AddRelu(lo, lx, ly, bits, 3, bp); break;
        case 3: FusedMulAdd(lo, lx, ly, 2 * REP); break;
        case 4: MulAddRelu(lo, lx, ly, (uint64_t)REP, 2, BinaryRepeatParams(1, 2, 1, 8, 16, 8)); break;
        case 5: { T s = T(0.125f); LeakyRelu(lo, lx, s, 2 * REP); break; }
        case 6: { T s = T(-1.5f); LeakyRelu(lo, lx, s, (uint64_t)(REP / 2), 4, UnaryRepeatParams(1, 1, 8, 8)); break; }
        case 7: { T s = T(0.75f); LeakyRelu(lo, lx, s, bits, 2, up); break; }
        case 8: { T s = T(3.0f); Axpy<T, T>(lo, lx, s, 2 * REP); break; }
        // ---- counter mode, register masks, clamped masks
        case 10: SetMaskCount(); SetVectorMask<T, MaskMode::COUNTER>(0, 2 * REP + 3);
                 Add<T, false>(lo, lx, ly, MASK_PLACEHOLDER, 1, bp); SetMaskNorm(); ResetMask(); break;
        case 11: { SetMaskCount(); uint64_t m[2] = {(uint64_t)(REP + 9), 0};
                   Adds<T, true>(lo, lx, T(1.0f), m, 1, up); SetMaskNorm(); break; }
        case 12: Add(lo, lx, ly, (uint64_t)(REP + 100), 2, bp); break;          // mask > REP: one full repeat
        case 13: SetVectorMask<T>(0, 0b10110); Muls<T, false>(lo, lx, T(2.0f), MASK_PLACEHOLDER, 2, up); ResetMask(); break;
        case 19: SetVectorMask<T>(5); Muls<T, false>(lo, lx, T(2.0f), MASK_PLACEHOLDER, 2, up); ResetMask(); break;
        case 14: SetMaskCount(); SetVectorMask<T>(0, REP + 1);
                 Adds<T, false>(lo, lx, T(1.0f), 1); SetMaskNorm(); ResetMask(); break;
        case 15: Duplicate<T, false>(lo, T(7.0f), MASK_PLACEHOLDER, 2, 1, 8); break;   // full mask register
        case 16: Duplicate(lo, T(-2.0f), bits, 2, 2, 16); break;
        case 17: CreateVecIndex(lo, T(3.0f), 2 * REP + 16); break;
        case 18: CreateVecIndex(lo, T(-4.0f), (uint64_t)(REP / 2), 3, 1, 8); break;
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, uo, NB);
}

template <class T>
__aicore__ inline void ibody(GM_ADDR x, GM_ADDR y, GM_ADDR out, int op) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    pipe.InitBuffer(bx, NB); pipe.InitBuffer(by, NB); pipe.InitBuffer(bo, NB);
    GlobalTensor<uint8_t> gx, gy, go;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, NB); gy.SetGlobalBuffer((__gm__ uint8_t*)y, NB);
    go.SetGlobalBuffer((__gm__ uint8_t*)out, NB);
    LocalTensor<uint8_t> ux = bx.Get<uint8_t>(), uy = by.Get<uint8_t>(), uo = bo.Get<uint8_t>();
    DataCopy(ux, gx, NB); DataCopy(uy, gy, NB); DataCopy(uo, go, NB);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<T> lx = ux.ReinterpretCast<T>(), ly = uy.ReinterpretCast<T>(), lo = uo.ReinterpretCast<T>();
    constexpr int REP = 256 / sizeof(T);
    switch (op) {
        case 0: And(lo, lx, ly, 2 * REP + 3); break;
        case 1: Or(lo, lx, ly, (uint64_t)(REP - 1), 2, BinaryRepeatParams(1, 1, 1, 8, 8, 8)); break;
        case 2: Not(lo, lx, 2 * REP); break;
        case 3: ShiftLeft(lo, lx, T(3), 2 * REP); break;
        case 4: ShiftRight(lo, lx, T(5), 2 * REP); break;
        case 5: ShiftRight(lo, lx, T(5), (uint64_t)REP, 2, UnaryRepeatParams(1, 1, 8, 8), true); break;
        case 6: ShiftLeft(lo, lx, T(sizeof(T) * 8), 2 * REP); break;     // shift of the full width
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, uo, NB);
}

__aicore__ inline void mixed(GM_ADDR x, GM_ADDR y, GM_ADDR out, int op) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    pipe.InitBuffer(bx, NB); pipe.InitBuffer(by, NB); pipe.InitBuffer(bo, NB);
    GlobalTensor<uint8_t> gx, gy, go;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, NB); gy.SetGlobalBuffer((__gm__ uint8_t*)y, NB);
    go.SetGlobalBuffer((__gm__ uint8_t*)out, NB);
    LocalTensor<uint8_t> ux = bx.Get<uint8_t>(), uy = by.Get<uint8_t>(), uo = bo.Get<uint8_t>();
    DataCopy(ux, gx, NB); DataCopy(uy, gy, NB); DataCopy(uo, go, NB);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<half> hx = ux.ReinterpretCast<half>(), hy = uy.ReinterpretCast<half>();
    LocalTensor<float> fx = ux.ReinterpretCast<float>(), fy = uy.ReinterpretCast<float>(), fo = uo.ReinterpretCast<float>();
    LocalTensor<half> ho = uo.ReinterpretCast<half>();
    LocalTensor<int8_t> io = uo.ReinterpretCast<int8_t>();
    LocalTensor<int32_t> ix = ux.ReinterpretCast<int32_t>(), iy = uy.ReinterpretCast<int32_t>();
    switch (op) {
        case 0: MulAddDst(fo, hx, hy, 128); break;                                   // half x half + float
        case 1: Axpy(fo, hx, half(0.5f), (uint64_t)64, 2, UnaryRepeatParams(1, 1, 8, 4)); break;
        case 2: AddReluCast(ho, fx, fy, 128); break;                                 // float -> half
        case 3: MulCast(io, hx, hy, 256); break;                                     // half -> int8
        case 4: SetDeqScale(half(0.25f)); AddDeqRelu(ho, ix, iy, 128); break;
        case 5: { LocalTensor<int4b_t> q = io.ReinterpretCast<int4b_t>();           // half -> int4, CEIL
                  Cast<int4b_t, half>(q, hx, RoundMode::CAST_CEIL, (uint64_t)128, 2, {1, 1, 2, 8}); break; }
        case 6: { LocalTensor<int4b_t> q = ux.ReinterpretCast<int4b_t>();          // int4 -> half
                  Cast(ho, q, RoundMode::CAST_NONE, 256); break; }
        case 7: { uint64_t m[2] = {0x00FF00FF00FF00FFull, 0};                        // Cast with a bit mask
                  Cast(fo, hx, RoundMode::CAST_NONE, m, 2, {1, 1, 8, 4}); break; }
#if defined(EMU_ARCH_3510)
        // ---- 950 flexible-scalar forms, Interleave / DeInterleave, Duplicate from a tensor
        case 20: Subs(fo, float(10.0f), fx, 64); break;                              // scalar on the left
        case 21: { static constexpr BinaryConfig left = {0};
                   Subs<BinaryDefaultType, true, left>(fo, fy[3], fx, 64); break; }  // fy[3] is the scalar
        case 22: Maxs(fo, fx, fy[5], 64); break;                                     // default: src1 scalar
        case 23: Interleave(fo, fo[128], fx, fy, 128); break;
        case 24: DeInterleave(fo, fo[128], fx, fy, 128); break;
        case 25: DeInterleave(fo, fo[128], fx, 256); break;
        case 26: Duplicate(fo, fy[7], 100); break;
        case 27: { LocalTensor<int16_t> sx = ux.ReinterpretCast<int16_t>(), sy = uy.ReinterpretCast<int16_t>();
                   LocalTensor<int16_t> so = uo.ReinterpretCast<int16_t>();
                   ShiftLeft(so, sx, sy, 256); break; }
        case 28: Neg(fo, fx, 64); break;
#endif
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, uo, NB);
}

extern "C" __global__ __aicore__ void fvec(GM_ADDR x, GM_ADDR y, GM_ADDR out, int32_t op, int32_t dt) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (dt == 0) body<half>(x, y, out, op); else body<float>(x, y, out, op);
}
extern "C" __global__ __aicore__ void ivec(GM_ADDR x, GM_ADDR y, GM_ADDR out, int32_t op, int32_t dt) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (dt == 0) ibody<int16_t>(x, y, out, op); else ibody<uint16_t>(x, y, out, op);
}
extern "C" __global__ __aicore__ void mvec(GM_ADDR x, GM_ADDR y, GM_ADDR out, int32_t op) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    mixed(x, y, out, op);
}
'''

FDT = {0: torch.float16, 1: torch.float32}
IDT = {0: torch.int16, 1: torch.uint16}


def _bytes(t):
    b = t.contiguous().view(torch.uint8).reshape(-1)
    out = torch.zeros(NB, dtype=torch.uint8)
    out[:b.numel()] = b
    return out


def _go(kernel, x, y, args, arch, init=None):
    xb, yb = _bytes(x), _bytes(y)
    ob = _bytes(init) if init is not None else torch.full((NB,), 0xEE, dtype=torch.uint8)
    rep = run(SRC, kernel, [xb, yb, ob, *args], arch=arch, kernel_type="aiv")
    check_ok(rep)
    return ob


def _as(ob, dt):
    return ob.view(dt)


def _data(dt, n, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=g) * 3).to(dt), (torch.randn(n, generator=g) * 3).to(dt)


def _eq(a, b):
    assert a.shape == b.shape
    ok = torch.equal(a.view(torch.uint8), b.view(torch.uint8)) if a.dtype != torch.uint8 else torch.equal(a, b)
    if not ok:
        bad = (a.float() != b.float()).nonzero()[:8].reshape(-1)
        raise AssertionError(f"mismatch at {bad.tolist()}: got {a[bad].tolist()} want {b[bad].tolist()}")


def _rep_mask(n_rep, rep, active):
    """Boolean [n_rep*rep] with `active(e)` per element of every repeat."""
    m = torch.zeros(n_rep * rep, dtype=torch.bool)
    for r in range(n_rep):
        for e in range(rep):
            m[r * rep + e] = active(e)
    return m


BITS = (0x00FF00FF0F0F3333, 0x8000000000000001)


def _bit_on(e, rep):
    lo, hi = BITS
    if rep <= 64:
        hi = 0
    return bool(((hi if e >= 64 else lo) >> (e % 64)) & 1)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dti", [0, 1])
def test_compound_and_leaky(arch, dti):
    dt = FDT[dti]
    rep = 256 // torch.tensor([], dtype=dt).element_size()
    n = NB // torch.tensor([], dtype=dt).element_size()
    x, y = _data(dt, n, 1)
    x[::9] = -0.0                                           # signed zeros through Relu / LeakyRelu
    init = torch.full((n,), -5.0, dtype=dt)

    def out(op):
        return _as(_go("fvec", x, y, [op, dti], arch, init), dt)

    # 0: AddRelu count form over 3 repeats + 5: Relu of the rounded sum, rest untouched
    exp = init.clone()
    k = 3 * rep + 5
    exp[:k] = (x[:k] + y[:k]).relu()
    _eq(out(0), exp)
    # 1: SubRelu continuous mask REP-7 over 3 repeats
    exp = init.clone()
    m = _rep_mask(3, rep, lambda e: e < rep - 7)
    exp[:3 * rep][m] = (x[:3 * rep] - y[:3 * rep]).relu()[m]
    _eq(out(1), exp)
    # 2: AddRelu bit mask
    exp = init.clone()
    m = _rep_mask(3, rep, lambda e: _bit_on(e, rep))
    exp[:3 * rep][m] = (x[:3 * rep] + y[:3 * rep]).relu()[m]
    _eq(out(2), exp)
    # 3: FusedMulAdd dst = x * dst + y, one rounding (double reference rounded once)
    exp = init.clone()
    k = 2 * rep
    exp[:k] = (x[:k].double() * init[:k].double() + y[:k].double()).to(dt)
    _eq(out(3), exp)
    # 4: MulAddRelu with src0 block stride 2 / repeat stride 16 (src0 reads every other block)
    c0 = rep // 8
    idx = torch.cat([torch.arange(r * 16 * c0 + b * 2 * c0, r * 16 * c0 + b * 2 * c0 + c0) for r in range(2) for b in range(8)])
    exp = init.clone()
    k = 2 * rep
    exp[:k] = (x[idx].double() * init[:k].double() + y[:k].double()).to(dt).relu()
    _eq(out(4), exp)
    # 5-7: LeakyRelu: x >= 0 ? x : s * x (rounded)
    exp = init.clone()
    k = 2 * rep
    s = torch.tensor(0.125, dtype=dt)
    exp[:k] = torch.where(x[:k] >= 0, x[:k], x[:k] * s)
    _eq(out(5), exp)
    exp = init.clone()
    s = torch.tensor(-1.5, dtype=dt)
    m = _rep_mask(4, rep, lambda e: e < rep // 2)
    exp[:4 * rep][m] = torch.where(x[:4 * rep] >= 0, x[:4 * rep], x[:4 * rep] * s)[m]
    _eq(out(6), exp)
    exp = init.clone()
    s = torch.tensor(0.75, dtype=dt)
    m = _rep_mask(2, rep, lambda e: _bit_on(e, rep))
    exp[:2 * rep][m] = torch.where(x[:2 * rep] >= 0, x[:2 * rep], x[:2 * rep] * s)[m]
    _eq(out(7), exp)
    # 8: Axpy dst = s * x + dst, product and sum each rounded to T (assumed two roundings)
    exp = init.clone()
    k = 2 * rep
    s = torch.tensor(3.0, dtype=dt)
    exp[:k] = (x[:k] * s) + init[:k]
    _eq(out(8), exp)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dti", [0, 1])
def test_counter_mode_and_mask_register(arch, dti):
    dt = FDT[dti]
    rep = 256 // torch.tensor([], dtype=dt).element_size()
    n = NB // torch.tensor([], dtype=dt).element_size()
    x, y = _data(dt, n, 2)
    init = torch.full((n,), -5.0, dtype=dt)

    def out(op):
        return _as(_go("fvec", x, y, [op, dti], arch, init), dt)

    exp = init.clone()
    k = 2 * rep + 3  # counter mode: repeatTime ignored
    exp[:k] = x[:k] + y[:k]
    _eq(out(10), exp)
    exp = init.clone()
    k = rep + 9  # isSetMask=true in counter mode: mask[0] = count
    exp[:k] = x[:k] + 1
    _eq(out(11), exp)
    exp = init.clone()
    k = 2 * rep  # a continuous mask above REP acts as REP
    exp[:k] = x[:k] + y[:k]
    _eq(out(12), exp)
    exp = init.clone()                                      # normal mode register bits 0b10110, 2 repeats
    for r in range(2):
        for e in (1, 2, 4):
            exp[r * rep + e] = x[r * rep + e] * 2
    _eq(out(13), exp)
    exp = init.clone()                                      # SetVectorMask(len): the first 5 of each repeat
    for r in range(2):
        exp[r * rep:r * rep + 5] = x[r * rep:r * rep + 5] * 2
    _eq(out(19), exp)
    exp = init.clone()
    k = rep + 1  # count form, isSetMask=false, counter register
    exp[:k] = x[:k] + 1
    _eq(out(14), exp)
    exp = init.clone()
    exp[:2 * rep] = 7  # Duplicate with the (reset) register mask
    _eq(out(15), exp)
    exp = init.clone()
    c0 = rep // 8  # Duplicate bit mask, dst block stride 2
    for r in range(2):
        for e in range(rep):
            if _bit_on(e, rep):
                exp[r * 16 * c0 + (e // c0) * 2 * c0 + e % c0] = -2
    _eq(out(16), exp)
    exp = init.clone()
    k = 2 * rep + 16  # CreateVecIndex count form
    exp[:k] = (torch.arange(k, dtype=torch.float32) + 3).to(dt)
    _eq(out(17), exp)
    exp = init.clone()                                      # CreateVecIndex mask form: first + r*REP + e
    for r in range(3):
        exp[r * rep:r * rep + rep // 2] = (torch.arange(rep // 2, dtype=torch.float32) + r * rep - 4).to(dt)
    _eq(out(18), exp)


def _shl(v, n, bits, signed):
    if n >= bits:
        return -1 if (signed and v < 0) else 0
    if not signed:
        return (v << n) & ((1 << bits) - 1)
    u = v & ((1 << bits) - 1)
    sign = u & (1 << (bits - 1))
    r = ((u << n) & ((1 << (bits - 1)) - 1)) | sign
    return r - (1 << bits) if r & (1 << (bits - 1)) else r


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dti", [0, 1])
def test_logic_and_shifts(arch, dti):
    """int16 (arithmetic shifts, sign kept on the left shift) and uint16 (logical shifts)."""
    signed = dti == 0
    n = NB // 2
    g = torch.Generator().manual_seed(3)
    xt = torch.randint(-32768, 32768, (n,), generator=g, dtype=torch.int32).to(torch.int16)
    yt = torch.randint(-32768, 32768, (n,), generator=g, dtype=torch.int32).to(torch.int16)
    init = torch.full((n,), 0x5A5A, dtype=torch.int16)

    def out(op):
        return _go("ivec", xt, yt, [op, dti], arch, init).view(torch.int16)

    def val(v):                     # the element as the kernel's type sees it
        return v if signed else v & 0xFFFF

    def bits16(vs):
        t = torch.tensor([v & 0xFFFF for v in vs], dtype=torch.int32)
        return torch.where(t >= 32768, t - 65536, t).to(torch.int16)

    exp = init.clone()
    k = 2 * 128 + 3
    exp[:k] = xt[:k] & yt[:k]
    _eq(out(0), exp)
    exp = init.clone()
    m = _rep_mask(2, 128, lambda e: e < 127)
    exp[:256][m] = (xt[:256] | yt[:256])[m]
    _eq(out(1), exp)
    exp = init.clone()
    exp[:256] = ~xt[:256]
    _eq(out(2), exp)
    xv = [val(v) for v in xt.tolist()]
    exp = init.clone()
    exp[:256] = bits16([_shl(v, 3, 16, signed) for v in xv[:256]])
    _eq(out(3), exp)
    exp = init.clone()
    exp[:256] = bits16([v >> 5 for v in xv[:256]])
    _eq(out(4), exp)
    if arch == "dav-c220" and signed:                       # roundEn: int16/int32 on A2/A3 only
        exp = init.clone()
        exp[:256] = bits16([(v >> 5) + ((v >> 4) & 1) for v in xv[:256]])
        _eq(out(5), exp)
    exp = init.clone()
    exp[:256] = bits16([_shl(v, 16, 16, signed) for v in xv[:256]])
    _eq(out(6), exp)


@pytest.mark.parametrize("arch", ARCHES)
def test_mixed_type_ops(arch):
    g = torch.Generator().manual_seed(4)
    hx, hy = (torch.randn(4096, generator=g) * 4).half(), (torch.randn(4096, generator=g) * 4).half()

    def outm(op, x, y, init=None):
        return _go("mvec", x, y, [op], arch, init)

    f_init = torch.full((2048,), 1.5)
    o = outm(0, hx, hy, f_init).view(torch.float32)                        # MulAddDst half -> float
    exp = f_init.clone()
    exp[:128] = (hx[:128].float() * hy[:128].float()) + 1.5
    _eq(o, exp)
    o = outm(1, hx, hy, f_init).view(torch.float32)                        # Axpy half -> float, dst rep 8, src rep 4
    exp = f_init.clone()
    exp[:128] = hx[:128].float() * 0.5 + 1.5
    _eq(o, exp)
    fxx, fyy = (torch.randn(2048, generator=g) * 100).float(), (torch.randn(2048, generator=g) * 100).float()
    o = outm(2, fxx, fyy, torch.zeros(4096, dtype=torch.float16)).view(torch.float16)   # AddReluCast float -> half
    exp = torch.zeros(4096, dtype=torch.float16)
    exp[:128] = (fxx[:128] + fyy[:128]).relu().half()
    _eq(o, exp)
    o = outm(3, hx, hy, torch.zeros(NB, dtype=torch.int8)).view(torch.int8)  # MulCast half -> int8 (RINT, saturate)
    prod = (hx[:256] * hy[:256]).double().numpy()
    exp = torch.zeros(NB, dtype=torch.int8)
    exp[:256] = torch.from_numpy(np.clip(np.rint(prod), -128, 127).astype(np.int8))
    _eq(o, exp)
    ix = torch.randint(-30000, 30000, (2048,), generator=g, dtype=torch.int32)
    iy = torch.randint(-30000, 30000, (2048,), generator=g, dtype=torch.int32)
    o = outm(4, ix, iy, torch.zeros(4096, dtype=torch.float16)).view(torch.float16)  # AddDeqRelu, scale 0.25
    exp = torch.zeros(4096, dtype=torch.float16)
    exp[:128] = ((ix[:128] + iy[:128]).float() * 0.25).half().relu()
    _eq(o, exp)
    # int4: half -> int4 CEIL (mask 128, 2 repeats, dst repeat stride 2 blocks = 128 nibbles), then back
    src = (torch.rand(4096, generator=torch.Generator().manual_seed(99)) * 20 - 10).half()
    o = outm(5, src, hy, torch.zeros(NB, dtype=torch.uint8))
    q = np.clip(np.ceil(src[:256].float().numpy()), -8, 7).astype(np.int8) & 0xF
    packed = (q[0::2] | (q[1::2] << 4)).astype(np.uint8)
    assert np.array_equal(o[:128].numpy(), packed)
    assert (o[128:] == 0).all()
    nib = torch.randint(0, 256, (NB,), generator=g, dtype=torch.int32).to(torch.uint8)
    o = outm(6, nib, hy, torch.zeros(4096, dtype=torch.float16)).view(torch.float16)
    v = nib[:128].int()
    vals = torch.stack([v & 0xF, v >> 4], 1).reshape(-1)
    vals = torch.where(vals >= 8, vals - 16, vals)
    _eq(o[:256], vals.half())
    o = outm(7, hx, hy, f_init).view(torch.float32)                        # Cast half -> float, bit mask
    exp = f_init.clone()
    for r in range(2):
        for e in range(64):
            if (0x00FF00FF00FF00FF >> e) & 1:
                exp[r * 64 + e] = hx[r * 64 + e].float()
    _eq(o, exp)


@pytest.mark.parametrize("arch", ["dav-3510"])
def test_950_flexible_scalar_interleave(arch):
    g = torch.Generator().manual_seed(5)
    fx, fy = torch.randn(2048, generator=g), torch.randn(2048, generator=g)
    init = torch.full((2048,), 9.0)

    def o(op, x=fx, y=fy):
        return _go("mvec", x, y, [op], arch, init).view(torch.float32)

    exp = init.clone()
    exp[:64] = 10.0 - fx[:64]
    _eq(o(20), exp)
    exp = init.clone()
    exp[:64] = fy[3] - fx[:64]  # config {0}: left single point
    _eq(o(21), exp)
    exp = init.clone()
    exp[:64] = torch.maximum(fx[:64], fy[5])
    _eq(o(22), exp)
    exp = init.clone()
    inter = torch.stack([fx[:128], fy[:128]], 1).reshape(-1)
    exp[:256] = inter
    _eq(o(23), exp)
    exp = init.clone()
    cat = torch.cat([fx[:128], fy[:128]])
    exp[:128] = cat[0::2]
    exp[128:256] = cat[1::2]
    _eq(o(24), exp)
    exp = init.clone()
    exp[:128] = fx[:256][0::2]
    exp[128:256] = fx[:256][1::2]
    _eq(o(25), exp)
    exp = init.clone()
    exp[:100] = fy[7]
    _eq(o(26), exp)
    exp = init.clone()
    exp[:64] = -fx[:64]
    _eq(o(28), exp)
    sx = torch.randint(-32768, 32767, (4096,), generator=g, dtype=torch.int32).to(torch.int16)
    sh = torch.randint(-2, 20, (4096,), generator=g, dtype=torch.int32).to(torch.int16)
    out = _go("mvec", sx, sh, [27], arch, torch.zeros(4096, dtype=torch.int16)).view(torch.int16)
    exp = torch.tensor([_shl(a, b, 16, True) if b >= 0 else (-1 if a < 0 else 0)
                        for a, b in zip(sx[:256].tolist(), sh[:256].tolist(), strict=True)], dtype=torch.int32)
    exp = torch.where(exp >= 32768, exp - 65536, exp).to(torch.int16)
    _eq(out[:256], exp)


def test_arch_only_ops_do_not_compile_on_c220():
    """Ops the pages document for the 950 only are rejected at compile time on dav-c220, as with
    bisheng, with a message naming the arch."""
    src = r'''
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void bad(GM_ADDR x) {
    TPipe pipe
    TBuf<TPosition::VECCALC> b
    pipe.InitBuffer(b, 4096);
    LocalTensor<float> t = b.Get<float>();
    Interleave(t, t[64], t[128], t[192], 64);
}
'''
    rep = run(src, "bad", [torch.zeros(8)], arch="dav-c220", kernel_type="aiv")
    assert "950" in str(rep.get("exception", "")) or "950" in str(rep.get("errors", "")), rep
