"""Vector op semantics, without the compiler: count forms, mask/repeat forms (continuous and
bit masks, block/repeat strides incl. stride-0 broadcast), scalar ops, unary ops, Duplicate,
Brcb, reductions, Compare/Select, in fp16/bf16/fp32, compared with torch doing the same
per-op rounding (bit-exact for arithmetic, 1-ulp for transcendental functions). bf16 only where
the API pages list it (tests/emulator/test_ops_vector_dtypes.py pins the type checks)."""
import pytest
import torch
from test_ops_harness import check_ok, run

N = 512   # elements per operand

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int N = 512;
// The pages' types: bfloat16_t takes Add/Sub/Mul/Max/Min and the scalar ops on dav-3510 only;
// Div, the unary ops and the reductions never (Duplicate and Brcb take it on both arches).
#if defined(EMU_ARCH_3510)
constexpr bool BF_ARITH = true;
#else
constexpr bool BF_ARITH = false;
#endif
#define IF_BF_ARITH(...) if constexpr (!std::is_same_v<T, bfloat16_t> || BF_ARITH) { __VA_ARGS__; }
#define IF_NOT_BF(...) if constexpr (!std::is_same_v<T, bfloat16_t>) { __VA_ARGS__; }

template <class T>
__aicore__ inline void body(GM_ADDR x, GM_ADDR y, GM_ADDR out, int op) {
    constexpr int REP = 256 / sizeof(T), C0 = 32 / sizeof(T);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo, bt;
    pipe.InitBuffer(bx, N * sizeof(T)); pipe.InitBuffer(by, N * sizeof(T));
    pipe.InitBuffer(bo, 2 * N * sizeof(T)); pipe.InitBuffer(bt, 2 * N * sizeof(T));
    GlobalTensor<T> gx, gy, go;
    gx.SetGlobalBuffer((__gm__ T*)x, N); gy.SetGlobalBuffer((__gm__ T*)y, N); go.SetGlobalBuffer((__gm__ T*)out, 2 * N);
    LocalTensor<T> lx = bx.Get<T>(), ly = by.Get<T>(), lo = bo.Get<T>(), lt = bt.Get<T>();
    DataCopy(lx, gx, N); DataCopy(ly, gy, N); DataCopy(lo, go, 2 * N);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    const T s = T(0.3f);
    switch (op) {
        case 0: IF_BF_ARITH(Add(lo, lx, ly, N)) break;
        case 1: IF_BF_ARITH(Sub(lo, lx, ly, N)) break;
        case 2: IF_BF_ARITH(Mul(lo, lx, ly, N)) break;
        case 3: IF_NOT_BF(Div(lo, lx, ly, N)) break;
        case 4: IF_BF_ARITH(Max(lo, lx, ly, N)) break;
        case 5: IF_BF_ARITH(Min(lo, lx, ly, N)) break;
        case 6: IF_BF_ARITH(Adds(lo, lx, s, N)) break;
        case 7: IF_BF_ARITH(Muls(lo, lx, s, N)) break;
        case 8: IF_BF_ARITH(Maxs(lo, lx, s, N)) break;
        case 9: IF_BF_ARITH(Mins(lo, lx, s, N)) break;
        case 10: IF_NOT_BF(Exp(lo, lx, N)) break;
        case 11: IF_NOT_BF(Ln(lo, lx, N)) break;
        case 12: IF_NOT_BF(Abs(lo, lx, N)) break;
        case 13: IF_NOT_BF(Sqrt(lo, lx, N)) break;
        case 14: IF_NOT_BF(Rsqrt(lo, lx, N)) break;
        case 15: IF_NOT_BF(Relu(lo, lx, N)) break;
        case 16: IF_NOT_BF(Reciprocal(lo, lx, N)) break;
        case 17: Duplicate(lo, T(1.5f), N); break;
        // mask/repeat forms
        case 20: IF_BF_ARITH(Add(lo, lx, ly, (uint64_t)(REP / 2), N / REP, BinaryRepeatParams(1, 1, 1, 8, 8, 8))) break;
        case 21: IF_BF_ARITH(Mul(lo, lx, ly, (uint64_t)REP, N / REP, BinaryRepeatParams(1, 1, 0, 8, 8, 0))) break;  // broadcast y's first block
        case 22: IF_BF_ARITH(uint64_t m[2] = {0x5555555555555555ull, sizeof(T) == 2 ? 0xF0F0F0F0F0F0F0F0ull : 0ull};
                             Sub(lo, lx, ly, m, N / REP, BinaryRepeatParams(1, 1, 1, 8, 8, 8))) break;
        case 23: // strided: dst blocks 2 apart (dst repeat 16), src0 repeat stride 4 (overlapping repeats)
                 IF_BF_ARITH(Add(lo, lx, ly, (uint64_t)REP, 2, BinaryRepeatParams(2, 1, 1, 16, 4, 8))) break;
        case 24: // row broadcast: Brcb y[0:R] into one block per row, then Mul rows of x by it
                 IF_BF_ARITH(Brcb(lt, ly, N / REP / 8 + 1, BrcbRepeatParams(1, 8));
                             PipeBarrier<PIPE_V>();
                             Mul(lo, lx, lt, (uint64_t)REP, N / REP, BinaryRepeatParams(1, 1, 0, 8, 8, 1))) break;
        case 25: Brcb(lo, ly, 2, BrcbRepeatParams(2, 16)); break;
        case 26: IF_BF_ARITH(Muls(lo, lx, s, (uint64_t)(REP - 3), N / REP, UnaryRepeatParams(1, 1, 8, 8))) break;
        case 27: IF_NOT_BF(Exp(lo, lx, (uint64_t)REP, N / REP / 2, UnaryRepeatParams(1, 2, 8, 16))) break;
        case 28: Duplicate(lo, T(2.5f), (uint64_t)(REP / 4), N / REP, 1, 8); break;
        // reductions (the ReduceSum/ReduceMax/ReduceMin/ReduceRepeat pages list no bfloat16_t)
        case 30: IF_NOT_BF(ReduceSum(lo, lx, lt, N)) break;
        case 31: IF_NOT_BF(ReduceMax(lo, lx, lt, N, true)) break;
        case 32: IF_NOT_BF(ReduceMin(lo, lx, lt, N, true)) break;
        case 33: IF_NOT_BF(WholeReduceSum(lo, lx, REP, N / REP, 1, 1, 8)) break;
        case 34: IF_NOT_BF(WholeReduceMax(lo, lx, REP, N / REP, 1, 1, 8)) break;
        case 35: IF_NOT_BF(WholeReduceMax(lo, lx, REP / 2, N / REP, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE)) break;
        // compare / select: lo = x < y ? x : y via a bit mask in lt
        // Compare/Select take half/float on A2/A3 (bf16 only on the 950): not instantiated for bf16
        case 40: if constexpr (!std::is_same_v<T, bfloat16_t>) { LocalTensor<uint8_t> mk = lt.template ReinterpretCast<uint8_t>();
                   Compare(mk, lx, ly, CMPMODE::LT, N); PipeBarrier<PIPE_V>();
                   Select(lo, mk, lx, ly, SELMODE::VSEL_TENSOR_TENSOR_MODE, N); break; }
        case 41: if constexpr (!std::is_same_v<T, bfloat16_t>) { LocalTensor<uint8_t> mk = lt.template ReinterpretCast<uint8_t>();
                   CompareScalar(mk, lx, s, CMPMODE::GE, N); PipeBarrier<PIPE_V>();
                   Select(lo, mk, lx, T(-2.0f), SELMODE::VSEL_TENSOR_SCALAR_MODE, N); break; }
        case 42: if constexpr (!std::is_same_v<T, bfloat16_t>) { LocalTensor<uint8_t> mk = lt.template ReinterpretCast<uint8_t>();
                   Compare(mk, lx, ly, CMPMODE::EQ, N); PipeBarrier<PIPE_V>();
                   LocalTensor<T> mt = mk.template ReinterpretCast<T>();
                   DataCopy(lo, mt, (uint32_t)(N / 8 / sizeof(T))); break; }
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, lo, 2 * N);
}

extern "C" __global__ __aicore__ void vec(GM_ADDR x, GM_ADDR y, GM_ADDR out, int32_t op, int32_t dt) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (dt == 0) body<half>(x, y, out, op);
    else if (dt == 1) body<bfloat16_t>(x, y, out, op);
    else body<float>(x, y, out, op);
}
'''

DTS = {0: torch.float16, 1: torch.bfloat16, 2: torch.float32}
ARCHES = ["dav-c220", "dav-3510"]
# bf16 cases of test_count_form_arith per arch (what the pages list: see SRC)
BF16_ARITH = {"dav-c220": {17}, "dav-3510": {0, 1, 2, 4, 5, 6, 7, 8, 9, 17}}


def _data(dt, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(N, generator=g) * 2).to(dt)
    y = (torch.randn(N, generator=g) * 2).to(dt)
    y[::7] = x[::7]            # some equal pairs for EQ / Max / Min ties
    return x, y


def _run(op, dti, x, y, arch, out_init=None):
    out = torch.full((2 * N,), -9.0, dtype=DTS[dti]) if out_init is None else out_init.clone()
    rep = run(SRC, "vec", [x, y, out, op, dti], arch=arch, kernel_type="aiv")
    check_ok(rep)
    return out


def _bits(t):
    return t.view(torch.int16) if t.element_size() == 2 else t.view(torch.int32)


def _same(a, b):
    assert torch.equal(_bits(a), _bits(b)), (a[:16], b[:16])


def _ulp_close(a, b, ulps=1):
    ai, bi = _bits(a).long(), _bits(b).long()
    assert (ai - bi).abs().max() <= ulps, ((ai - bi).abs().max(), a[:8], b[:8])


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dti", [0, 1, 2])
def test_count_form_arith(arch, dti):
    dt = DTS[dti]
    x, y = _data(dt)
    s = torch.tensor(0.3).to(dt)
    cases = {0: x + y, 1: x - y, 2: x * y, 3: x / y, 4: torch.maximum(x, y), 5: torch.minimum(x, y),
             6: x + s, 7: x * s, 8: torch.maximum(x, s), 9: torch.minimum(x, s), 12: x.abs(), 15: x.relu(),
             17: torch.full((N,), 1.5, dtype=dt)}
    for op, exp in cases.items():
        if dt == torch.bfloat16 and op not in BF16_ARITH[arch]:
            continue
        out = _run(op, dti, x, y, arch)
        _same(out[:N], exp)
        assert (out[N:] == -9).all()                     # nothing written past count


@pytest.mark.parametrize("arch", ["dav-3510"])
@pytest.mark.parametrize("dti", [0, 2])
def test_count_form_transcendental(arch, dti):
    dt = DTS[dti]
    x, y = _data(dt)
    xp = x.abs() + torch.tensor(0.05).to(dt)
    cases = {10: (x, torch.exp(x.float()).to(dt)), 11: (xp, torch.log(xp.float()).to(dt)),
             13: (xp, torch.sqrt(xp.float()).to(dt)), 14: (xp, torch.rsqrt(xp.float()).to(dt)),
             16: (x, (1.0 / x.float()).to(dt))}
    for op, (inp, exp) in cases.items():
        out = _run(op, dti, inp, y, arch)
        _ulp_close(out[:N], exp)       # one rounding of a float result; libm may differ by 1 ulp


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dti", [0, 2])
def test_mask_repeat_forms(arch, dti):
    dt = DTS[dti]
    rep_e = 256 // torch.tensor([], dtype=dt).element_size()
    c0 = rep_e // 8
    x, y = _data(dt, seed=1)
    init = torch.full((2 * N,), -9.0, dtype=dt)
    R = N // rep_e
    # 20: continuous mask of half a repeat
    out = _run(20, dti, x, y, arch)
    exp = init.clone()
    for r in range(R):
        sl = slice(r * rep_e, r * rep_e + rep_e // 2)
        exp[sl] = x[sl] + y[sl]
    _same(out, exp)
    # 21: src1 block stride 0 and repeat stride 0: every block multiplies by y[0:C0]
    out = _run(21, dti, x, y, arch)
    exp = init.clone()
    exp[:N] = x * y[:c0].repeat(N // c0)
    _same(out, exp)
    # 22: bit mask (mask[1] only for 16-bit types)
    out = _run(22, dti, x, y, arch)
    exp = init.clone()
    bits = [(0x5555555555555555 >> i) & 1 for i in range(64)]
    if rep_e == 128:
        bits += [(0xF0F0F0F0F0F0F0F0 >> i) & 1 for i in range(64)]
    for r in range(R):
        for e in range(rep_e):
            if bits[e]:
                exp[r * rep_e + e] = x[r * rep_e + e] - y[r * rep_e + e]
    _same(out, exp)
    # 23: dst block stride 2 / repeat 16, src0 repeat stride 4 (half a repeat apart)
    out = _run(23, dti, x, y, arch)
    exp = init.clone()
    for r in range(2):
        for e in range(rep_e):
            b, i = divmod(e, c0)
            exp[r * 16 * c0 + b * 2 * c0 + i] = x[r * 4 * c0 + e] + y[r * 8 * c0 + e]
    _same(out, exp)
    # 24: Brcb + Mul with src1 block stride 0, repeat stride 1 (per-row scalar broadcast)
    out = _run(24, dti, x, y, arch)
    exp = init.clone()
    exp[:N] = (x.view(R, rep_e) * y[:R].view(R, 1)).reshape(-1)
    _same(out, exp)
    # 25: Brcb alone with dst block stride 2: 16 source elements, one 32-byte block each
    out = _run(25, dti, x, y, arch)
    exp = init.clone()
    for r in range(2):
        for j in range(8):
            blk = r * 16 + j * 2
            exp[blk * c0:(blk + 1) * c0] = y[r * 8 + j]
    _same(out, exp)
    # 26: scalar op with a partial mask
    out = _run(26, dti, x, y, arch)
    exp = init.clone()
    s = torch.tensor(0.3).to(dt)
    for r in range(R):
        sl = slice(r * rep_e, r * rep_e + rep_e - 3)
        exp[sl] = x[sl] * s
    _same(out, exp)
    # 28: Duplicate mask form
    out = _run(28, dti, x, y, arch)
    exp = init.clone()
    for r in range(R):
        exp[r * rep_e:r * rep_e + rep_e // 4] = 2.5
    _same(out, exp)


def _tree_rows(v: torch.Tensor) -> torch.Tensor:
    """Pairwise sum along the last dim, every partial sum rounded to v's dtype (the documented
    in-repeat tree of ReduceSum / ReduceRepeat / ReduceDataBlock)."""
    while v.shape[-1] > 1:
        v = v[..., 0::2] + v[..., 1::2]
    return v[..., 0]


def _reduce_sum_ref(x: torch.Tensor, arch: str) -> torch.Tensor:
    """ReduceSum count form (N = 512: whole repeats): c220 adds the repeat trees in order; on
    dav-3510 up to 1024 bytes the repeats are added element-wise first (method 3), more bytes
    sum the repeat trees by a tree again (method 2)."""
    rep_e = 256 // x.element_size()
    rows = x.view(-1, rep_e)
    if arch == "dav-3510" and x.numel() * x.element_size() <= 1024:
        acc = rows[0]
        for r in rows[1:]:
            acc = acc + r
        return _tree_rows(acc)
    part = _tree_rows(rows)
    if arch == "dav-3510":
        n = 1
        while n < part.numel():
            n *= 2
        return _tree_rows(torch.cat([part, torch.zeros(n - part.numel(), dtype=part.dtype)]))
    acc = part[0]
    for p in part[1:]:
        acc = acc + p
    return acc


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dti", [0, 2])
def test_reductions(arch, dti):
    dt = DTS[dti]
    rep_e = 256 // torch.tensor([], dtype=dt).element_size()
    x, y = _data(dt, seed=2)
    ibits = torch.int16 if dt != torch.float32 else torch.int32
    out = _run(30, dti, x, y, arch)
    assert out[0] == _reduce_sum_ref(x, arch)
    out = _run(31, dti, x, y, arch)
    assert out[0] == x.max()
    assert out[1:2].view(ibits).item() == int(torch.argmax(x.float()))
    out = _run(32, dti, x, y, arch)
    assert out[0] == x.min()
    assert out[1:2].view(ibits).item() == int(torch.argmin(x.float()))
    R = N // rep_e
    out = _run(33, dti, x, y, arch)
    assert torch.equal(out[:R], _tree_rows(x.view(R, rep_e)))
    out = _run(34, dti, x, y, arch)
    v, i = x.float().view(R, rep_e).max(1)
    assert torch.equal(out[0:2 * R:2].float(), v)
    assert torch.equal(out[1:2 * R:2].contiguous().view(ibits).long(), i)
    out = _run(35, dti, x, y, arch)
    assert torch.equal(out[:R].float(), x.float().view(R, rep_e)[:, :rep_e // 2].max(1).values)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dti", [0, 2])
def test_compare_select(arch, dti):
    dt = DTS[dti]
    x, y = _data(dt, seed=3)
    out = _run(40, dti, x, y, arch)
    _same(out[:N], torch.where(x < y, x, y))
    out = _run(41, dti, x, y, arch)
    s = torch.tensor(0.3).to(dt)
    _same(out[:N], torch.where(x >= s, x, torch.tensor(-2.0).to(dt)))
    out = _run(42, dti, x, y, arch)
    mb = out.view(torch.uint8)[:N // 8]
    bits = ((mb.view(-1, 1).int() >> torch.arange(8)) & 1).reshape(-1).bool()
    assert torch.equal(bits, x == y)


@pytest.mark.parametrize("arch", ARCHES)
def test_mask_errors(arch):
    """mask[1] != 0 for a 32-bit type is invalid_param; a continuous mask above one repeat's
    elements counts as a full repeat (mask page: out-of-range masks use the type's maximum)."""
    src = r'''
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void bad(GM_ADDR x, int32_t which) {
    TPipe pipe; TBuf<TPosition::VECCALC> b; pipe.InitBuffer(b, 4096);
    GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)x, 128);
    LocalTensor<float> t = b.Get<float>();
    Duplicate(t, 1.0f, 128);
    PipeBarrier<PIPE_V>();
    if (which == 0) Add(t, t, t, (uint64_t)65, 1, BinaryRepeatParams());
    else { uint64_t m[2] = {1, 1}; Add(t, t, t, m, 1, BinaryRepeatParams()); }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(g, t, 128);
}
'''
    x = torch.zeros(128)
    rep = run(src, "bad", [x, 0], arch=arch, kernel_type="aiv")
    check_ok(rep)
    assert (x[:64] == 2).all() and (x[64:] == 1).all()
    rep = run(src, "bad", [torch.zeros(128), 1], arch=arch, kernel_type="aiv")
    assert any("invalid_param" in str(e) for e in rep.get("errors", [])), rep
