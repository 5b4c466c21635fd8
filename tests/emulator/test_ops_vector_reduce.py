"""ReduceDataBlock / ReduceRepeat / ReducePairElem (and their earlier names), the mask forms of
ReduceMax / ReduceMin / ReduceSum, the reduction special registers, Sort32 / MrgSort and
Transpose / TransDataTo5HD, against numpy references on both arches. Sums follow the pages'
binary tree with partial sums in the operand precision (the fp16 reference is the same tree in
numpy float16), e.g. [2048, 127 x 1.0] sums to 2174 in fp16, not 2175."""
import numpy as np
import pytest
import torch
from test_ops_harness import check_ok, run

ARCHES = ["dav-c220", "dav-3510"]
NB = 8192

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int NB = 8192;

template <class T>
__aicore__ inline void body(GM_ADDR x, GM_ADDR out, GM_ADDR aux, int op) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bo, bw;
    pipe.InitBuffer(bx, NB); pipe.InitBuffer(bo, NB); pipe.InitBuffer(bw, NB);
    GlobalTensor<uint8_t> gx, go;
    GlobalTensor<float> ga;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, NB); go.SetGlobalBuffer((__gm__ uint8_t*)out, NB);
    ga.SetGlobalBuffer((__gm__ float*)aux, 8);
    LocalTensor<uint8_t> ux = bx.Get<uint8_t>(), uo = bo.Get<uint8_t>();
    DataCopy(ux, gx, NB); DataCopy(uo, go, NB);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<T> lx = ux.ReinterpretCast<T>(), lo = uo.ReinterpretCast<T>(), lw = bw.Get<T>();
    constexpr int REP = 256 / sizeof(T), C0 = 32 / sizeof(T);
    uint64_t bits[2] = {0xF0F0F0F0FFFF0001ull, sizeof(T) == 2 ? 0x00000000FFFFFFFFull : 0ull};
    switch (op) {
        case 0: ReduceRepeat<ReduceType::SUM, T>(lo, lx, REP, 3, 1, 1, 8); break;
        case 1: ReduceRepeat<ReduceType::MAX, T>(lo, lx, REP / 2, 2, 1, 1, 8); break;
        case 2: ReduceRepeat<ReduceType::MIN, T>(lo, lx, bits, 2, 1, 1, 8, ReduceOrder::ORDER_INDEX_VALUE); break;
        case 3: ReduceRepeat<ReduceType::MAX, T>(lo, lx, REP, 3, 1, 1, 8, ReduceOrder::ORDER_ONLY_INDEX); break;
        case 4: SetMaskCount(); SetVectorMask<T>(0, 3 * REP + 5);
                ReduceRepeat<ReduceType::SUM, T, T, false>(lo, lx, MASK_PLACEHOLDER, 1, 1, 1, 8);
                SetMaskNorm(); ResetMask(); break;
        case 5: ReduceDataBlock<ReduceType::SUM, T>(lo, lx, REP, 2, 1, 1, 8); break;
        case 6: ReduceDataBlock<ReduceType::MAX, T>(lo, lx, 3 * C0 + 2, 2, 1, 1, 8); break;
        case 7: ReducePairElem<ReduceType::SUM, T>(lo, lx, bits, 2, 1, 1, 8); break;
        case 8: ReduceSum<T>(lo, lx, lw, REP, 3, 8);            // the three share the work buffer
                PipeBarrier<PIPE_V>();
                ReduceMax<T>(lo[C0], lx, lw, REP, 3, 8, true);
                PipeBarrier<PIPE_V>();
                ReduceMin<T>(lo[2 * C0], lx, lw, bits, 2, 8, true); break;
        case 9: { ReduceSum<T>(lo, lx, lw, 3 * REP);
                  SetFlag<HardEvent::V_S>(0); WaitFlag<HardEvent::V_S>(0);
                  ga.SetValue(0, (float)GetReduceRepeatSumSpr<T>()); break; }
        case 10: BlockReduceSum(lo, lx, 2, REP, 1, 1, 8);
                 PairReduceSum(lo[64], lx, 1, REP, 1, 1, 8);
                 RepeatReduceSum(lo[256], lx, 2, REP, 0, 1, 1, 8); break;
        case 11: ReduceRepeat<ReduceType::SUM, T>(lo, lx, REP, 1, 1, 2, 16); break;   // block stride 2
#if defined(EMU_ARCH_C220)
        case 12: { ReduceRepeat<ReduceType::MAX, T>(lo, lx, REP, 3, 1, 1, 8);           // max over all repeats
                   SetFlag<HardEvent::V_S>(0); WaitFlag<HardEvent::V_S>(0);
                   T v, i; GetReduceRepeatMaxMinSpr<T>(v, i);
                   uint32_t iv = sizeof(T) == 2 ? *reinterpret_cast<uint16_t*>(&i) : *reinterpret_cast<uint32_t*>(&i);
                   ga.SetValue(0, (float)v); ga.SetValue(1, (float)iv); break; }
#endif
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, uo, NB);
}

template <class T>
__aicore__ inline void sorts(GM_ADDR x, GM_ADDR out, GM_ADDR aux, int op) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bi, bo, bw;
    pipe.InitBuffer(bx, NB); pipe.InitBuffer(bi, NB); pipe.InitBuffer(bo, NB); pipe.InitBuffer(bw, NB);
    GlobalTensor<uint8_t> gx, go;
    GlobalTensor<uint16_t> ga;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, NB); go.SetGlobalBuffer((__gm__ uint8_t*)out, NB);
    ga.SetGlobalBuffer((__gm__ uint16_t*)aux, 16);
    LocalTensor<uint8_t> ux = bx.Get<uint8_t>(), uo = bo.Get<uint8_t>(), uw = bw.Get<uint8_t>();
    DataCopy(ux, gx, NB); DataCopy(uo, go, NB);
    LocalTensor<uint32_t> idx = bi.Get<uint32_t>();
    CreateVecIndex(idx.ReinterpretCast<int32_t>(), (int32_t)0, 256);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<T> lx = ux.ReinterpretCast<T>(), lo = uo.ReinterpretCast<T>(), lw = uw.ReinterpretCast<T>();
    PipeBarrier<PIPE_V>();
    Sort32<T>(lw, lx, idx, 8);        // 8 sorted queues of 32, each 32 * 8 bytes
    PipeBarrier<PIPE_V>();
    const int Q = 32 * 8 / sizeof(T);  // elements of T per queue
    MrgSort4Info p;
    MrgSortSrcList<T> s(lw[0], lw[Q], lw[2 * Q], lw[3 * Q]);
    switch (op) {
        case 0: DataCopy(uo, uw, NB); break;                          // Sort32 output only
        case 1: p.elementLengths[0] = 32; p.elementLengths[1] = 32; p.elementLengths[2] = 32; p.elementLengths[3] = 32;
                p.validBit = 15; p.repeatTimes = 2;                    // two merges of 4 contiguous queues
                MrgSort<T>(lo, s, p); break;
        case 2: { uint16_t len[4] = {32, 5, 0, 0};
                  MrgSort4Info q(len, true, 3, 1);                      // stops when queue 2 (5 long) runs out
                  MrgSortSrcList<T> s2(lw[0], lw[Q], lw[2 * Q], lw[3 * Q]);
                  MrgSort<T>(lo, s2, q);
                  uint16_t a, b, c, d;
                  SetFlag<HardEvent::V_S>(0); WaitFlag<HardEvent::V_S>(0);
                  GetMrgSortResult(a, b, c, d);
                  ga.SetValue(0, a); ga.SetValue(1, b); ga.SetValue(2, c); ga.SetValue(3, d); break; }
        case 3: p.elementLengths[0] = 32; p.elementLengths[1] = 16; p.elementLengths[2] = 8; p.elementLengths[3] = 0;
                p.validBit = 7; p.repeatTimes = 1;
                MrgSort<T>(lo, s, p); break;
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, uo, NB);
}

__aicore__ inline void transposes(GM_ADDR x, GM_ADDR out, int op) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bo, bt;
    pipe.InitBuffer(bx, NB); pipe.InitBuffer(bo, NB); pipe.InitBuffer(bt, NB);
    GlobalTensor<uint8_t> gx, go;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, NB); go.SetGlobalBuffer((__gm__ uint8_t*)out, NB);
    LocalTensor<uint8_t> ux = bx.Get<uint8_t>(), uo = bo.Get<uint8_t>(), ut = bt.Get<uint8_t>();
    DataCopy(ux, gx, NB); DataCopy(uo, go, NB);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<half> hx = ux.ReinterpretCast<half>(), ho = uo.ReinterpretCast<half>();
    switch (op) {
        case 0: Transpose<half>(hx, hx); PipeBarrier<PIPE_V>(); DataCopy(ho, hx, 256); break;   // in place
        case 1: { TransposeParamsExt tp(2, 3, 4, 4, TransposeType::TRANSPOSE_NCHW2NHWC);
                  Transpose(ho, hx, ut, tp); break; }
        case 2: { TransposeParamsExt tp(2, 3, 4, 4, TransposeType::TRANSPOSE_NHWC2NCHW);
                  Transpose(ho, hx, ut, tp); break; }
        case 3: { // NCHW (C = 16, H*W = 64) -> NC1HWC0 with C0 = 16: repeat H*W/16, strides 16 / 1
                  TransDataTo5HDParams p(false, false, 4, 16, 1);
                  uint64_t dl[16], sl[16];
                  for (int i = 0; i < 16; ++i) { dl[i] = ho[16 * i].GetPhyAddr(); sl[i] = hx[64 * i].GetPhyAddr(); }
                  TransDataTo5HD<half>(dl, sl, p); break; }
        case 4: { // one repeat: addresses move by one stride (page); stride 0 keeps them
                  TransDataTo5HDParams p(false, false, 1, 0, 0);
                  LocalTensor<half> dl[16], sl[16];
                  for (int i = 0; i < 16; ++i) { dl[i] = ho[16 * i]; sl[i] = hx[16 * i]; }
                  TransDataTo5HD<half>(dl, sl, p);
                  TransDataTo5HDParams q(false, false, 1, 16, 16);
                  TransDataTo5HD<half>(dl, sl, q); break; }
        case 5: { // b8: high half of the source blocks into the high half of the destination blocks
                  TransDataTo5HDParams p(true, true, 1, 0, 0);
                  uint64_t dl[16], sl[16];
                  for (int i = 0; i < 16; ++i) { dl[i] = uo[32 * i].GetPhyAddr(); sl[i] = ux[32 * i].GetPhyAddr(); }
                  TransDataTo5HD<uint8_t>(dl, sl, p); break; }
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, uo, NB);
}

extern "C" __global__ __aicore__ void red(GM_ADDR x, GM_ADDR out, GM_ADDR aux, int32_t op, int32_t dt) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (dt == 0) body<half>(x, out, aux, op); else body<float>(x, out, aux, op);
}
extern "C" __global__ __aicore__ void srt(GM_ADDR x, GM_ADDR out, GM_ADDR aux, int32_t op, int32_t dt) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (dt == 0) sorts<half>(x, out, aux, op); else sorts<float>(x, out, aux, op);
}
extern "C" __global__ __aicore__ void trn(GM_ADDR x, GM_ADDR out, int32_t op) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    transposes(x, out, op);
}
'''

NP = {0: np.float16, 1: np.float32}
TT = {0: torch.float16, 1: torch.float32}


def _bytes(t):
    b = t.contiguous().view(torch.uint8).reshape(-1)
    out = torch.zeros(NB, dtype=torch.uint8)
    out[:b.numel()] = b
    return out


def _go(kernel, x, op, dt, arch, init=None):
    xb = _bytes(x)
    ob = _bytes(init) if init is not None else torch.full((NB,), 0xEE, dtype=torch.uint8)
    aux = torch.zeros(8, dtype=torch.float32)
    args = [xb, ob, aux, op] + ([dt] if dt is not None else [])
    rep = run(SRC, kernel, args, arch=arch, kernel_type="aiv")
    check_ok(rep)
    return ob, aux


def _tree(vals, npdt):
    """The pages' binary tree: level by level v[2i] + v[2i+1] in the operand precision."""
    v = [npdt(a) for a in vals]
    while len(v) > 1:
        if len(v) % 2:
            v.append(npdt(0))
        v = [npdt(v[2 * i] + v[2 * i + 1]) for i in range(len(v) // 2)]
    return v[0]


def _mask_bits(rep):
    lo, hi = 0xF0F0F0F0FFFF0001, 0x00000000FFFFFFFF
    return [bool(((hi if e >= 64 else lo) >> (e % 64)) & 1) if (e < 64 or rep > 64) else False for e in range(rep)]


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dti", [0, 1])
def test_reduce_repeat_data_block_pair(arch, dti):
    npdt, tdt = NP[dti], TT[dti]
    esz = np.dtype(npdt).itemsize
    rep, c0 = 256 // esz, 32 // esz
    g = torch.Generator().manual_seed(11)
    x = (torch.randn(NB // esz, generator=g) * 4).to(tdt)
    xn = x.numpy()
    idt = np.uint16 if esz == 2 else np.uint32
    init = torch.zeros(NB // esz, dtype=tdt)

    def out(op):
        return _go("red", x, op, dti, arch, init)[0]

    o = out(0).view(tdt).numpy()                               # SUM per repeat, tree
    for r in range(3):
        assert o[r] == _tree(xn[r * rep:(r + 1) * rep], npdt), r
    o = out(1)                                                 # MAX, value/index pairs, mask REP/2
    v, i = o.view(tdt).numpy(), o.numpy().view(idt)
    for r in range(2):
        seg = xn[r * rep:r * rep + rep // 2]
        assert v[2 * r] == seg.max() and i[2 * r + 1] == int(np.argmax(seg))
    o = out(2)                                                 # MIN, index/value, bit mask
    v, i = o.view(tdt).numpy(), o.numpy().view(idt)
    mb = _mask_bits(rep)
    for r in range(2):
        act = [e for e in range(rep) if mb[e]]
        seg = xn[r * rep:(r + 1) * rep]
        best = min(act, key=lambda e: (seg[e], e))
        assert i[2 * r] == best and v[2 * r + 1] == seg[best]
    o = out(3).numpy().view(np.uint32)                         # ORDER_ONLY_INDEX: a uint32 per repeat
    for r in range(3):
        assert o[r] == int(np.argmax(xn[r * rep:(r + 1) * rep]))
    o = out(4).view(tdt).numpy()                               # counter mode: 3 full repeats + 5
    n = 3 * rep + 5
    for r in range(4):
        seg = xn[r * rep:min(n, (r + 1) * rep)]
        assert o[r] == _tree(list(seg) + [0] * (rep - len(seg)), npdt), r
    o = out(5).view(tdt).numpy()                               # ReduceDataBlock SUM: 8 per repeat
    for b in range(16):
        assert o[b] == _tree(xn[b * c0:(b + 1) * c0], npdt), b
    o = out(6).view(tdt).numpy()                               # ReduceDataBlock MAX, mask 3*C0+2
    for r in range(2):
        for b in range(8):
            k = 3 * c0 + 2 - b * c0
            if k > 0:
                assert o[r * 8 + b] == xn[r * rep + b * c0:r * rep + b * c0 + min(k, c0)].max()
            elif arch == "dav-3510":
                assert o[r * 8 + b] == -np.inf                   # the 950 fills blocks without elements
            else:
                assert o[r * 8 + b] == 0                         # A2/A3 leave them untouched
    o = out(7).view(tdt).numpy()                               # ReducePairElem with a bit mask
    for r in range(2):
        for p in range(rep // 2):
            a, b = mb[2 * p], mb[2 * p + 1]
            got = o[r * (rep // 2) + p]
            if not (a or b):
                assert got == 0                                  # untouched (A2/A3) or zero (950)
            else:
                want = npdt(npdt(xn[r * rep + 2 * p] if a else 0) + npdt(xn[r * rep + 2 * p + 1] if b else 0))
                assert got == want
    o = out(11).view(tdt).numpy()                              # srcBlkStride 2: every other block
    seg = np.concatenate([xn[b * 2 * c0:b * 2 * c0 + c0] for b in range(8)])
    assert o[0] == _tree(seg, npdt)


def test_documented_fp16_tree_sum():
    """The pages' example: [2048, 127 ones] in one fp16 repeat sums to 2174 (pairwise tree in fp16)."""
    x = torch.ones(4096, dtype=torch.float16)
    x[0] = 2048
    for arch in ARCHES:
        o, _ = _go("red", x, 0, 0, arch, torch.zeros(4096, dtype=torch.float16))
        assert float(o.view(torch.float16)[0]) == 2174.0


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dti", [0, 1])
def test_reduce_all_mask_forms_and_spr(arch, dti):
    npdt, tdt = NP[dti], TT[dti]
    esz = np.dtype(npdt).itemsize
    rep, c0 = 256 // esz, 32 // esz
    g = torch.Generator().manual_seed(12)
    x = (torch.randn(NB // esz, generator=g) * 4).to(tdt)
    xn = x.numpy()
    idt = np.uint16 if esz == 2 else np.uint32
    o, _ = _go("red", x, 8, dti, arch, torch.zeros(NB // esz, dtype=tdt))
    v, iv = o.view(tdt).numpy(), o.numpy().view(idt)
    parts = [_tree(xn[r * rep:(r + 1) * rep], npdt) for r in range(3)]
    assert v[0] == _tree(parts + [0] * (rep - 3), npdt)         # tree of the per-repeat trees
    seg = xn[:3 * rep]
    assert v[c0] == seg.max() and iv[c0 + 1] == int(np.argmax(seg))
    mb = _mask_bits(rep)
    act = [r * rep + e for r in range(2) for e in range(rep) if mb[e]]
    best = min(act, key=lambda k: (xn[k], k))
    assert v[2 * c0] == xn[best] and iv[2 * c0 + 1] == best
    o, aux = _go("red", x, 9, dti, arch, torch.zeros(NB // esz, dtype=tdt))
    assert float(aux[0]) == float(o.view(tdt)[0])                 # GetReduceRepeatSumSpr = ReduceSum result
    if arch == "dav-c220":                                      # GetReduceRepeatMaxMinSpr after ReduceRepeat<MAX>
        _, aux = _go("red", x, 12, dti, arch, torch.zeros(NB // esz, dtype=tdt))
        seg = xn[:3 * rep]
        assert float(aux[0]) == float(seg.max()) and int(aux[1]) == int(np.argmax(seg))
    o, _ = _go("red", x, 10, dti, arch, torch.zeros(NB // esz, dtype=tdt))   # the earlier names
    v = o.view(tdt).numpy()
    for b in range(16):
        assert v[b] == _tree(xn[b * c0:(b + 1) * c0], npdt)
    for p in range(rep // 2):
        assert v[64 + p] == npdt(xn[2 * p] + xn[2 * p + 1])
    for r in range(2):
        assert v[256 + r] == _tree(xn[r * rep:(r + 1) * rep], npdt)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dti", [0, 1])
def test_sort32_mrgsort(arch, dti):
    npdt, tdt = NP[dti], TT[dti]
    esz = np.dtype(npdt).itemsize
    g = torch.Generator().manual_seed(13)
    x = torch.randint(-20, 20, (256,), generator=g).to(tdt)     # many equal scores: stability matters
    xn = x.numpy()

    def structs(ob, n):
        b = ob.numpy()[:n * 8].reshape(n, 8)
        score = b[:, :esz].copy().view(npdt).reshape(-1)
        idx = b[:, 4:8].copy().view(np.uint32).reshape(-1)
        return score, idx

    o, _ = _go("srt", x, 0, dti, arch)
    sc, ix = structs(o, 256)
    for r in range(8):
        order = sorted(range(32), key=lambda i: (-float(xn[r * 32 + i]), i))
        assert list(ix[r * 32:(r + 1) * 32]) == [r * 32 + i for i in order]
        assert np.array_equal(sc[r * 32:(r + 1) * 32], xn[[r * 32 + i for i in order]])
    if esz == 2:
        assert (o.numpy()[:256 * 8].reshape(256, 8)[:, 2:4] == 0).all()   # reserved bytes

    def merged(queues):
        items = []
        for q, lst in enumerate(queues):
            items += [(-float(xn[i]), q, k, i) for k, i in enumerate(lst)]
        return [t[3] for t in sorted(items)]

    sorted_q = [[r * 32 + i for i in sorted(range(32), key=lambda i, r=r: (-float(xn[r * 32 + i]), i))] for r in range(8)]
    o, _ = _go("srt", x, 1, dti, arch)
    _, ix = structs(o, 256)
    assert list(ix[:128]) == merged(sorted_q[:4])
    assert list(ix[128:256]) == merged(sorted_q[4:8])
    o, aux = _go("srt", x, 2, dti, arch)                        # validBit 3, lengths 32 / 5, suspension
    cnt = aux.view(torch.int16)[:4].tolist()
    items = sorted([(-float(xn[i]), q, k, i) for q, lst in enumerate([sorted_q[0], sorted_q[1][:5]])
                    for k, i in enumerate(lst)])
    out_ix, taken = [], [0, 0]
    for _, q, _, i in items:
        out_ix.append(i)
        taken[q] += 1
        if taken[0] == 32 or taken[1] == 5:
            break
    _, ix = structs(o, len(out_ix))
    assert list(ix) == out_ix and cnt == [taken[0], taken[1], 0, 0]
    o, _ = _go("srt", x, 3, dti, arch)                          # validBit 7, lengths 32 / 16 / 8
    _, ix = structs(o, 56)
    assert list(ix) == merged([sorted_q[0], sorted_q[1][:16], sorted_q[2][:8]])


@pytest.mark.parametrize("arch", ARCHES)
def test_transpose_and_trans5hd(arch):
    g = torch.Generator().manual_seed(14)
    x = torch.randn(4096, generator=g).half()

    def out(op, xx=x):
        return _go_t(op, xx, arch)

    o = out(0).view(torch.float16)
    assert torch.equal(o[:256].reshape(16, 16), x[:256].reshape(16, 16).T)
    o = out(1).view(torch.float16)
    assert torch.equal(o[:96], x[:96].reshape(2, 3, 4, 4).permute(0, 2, 3, 1).reshape(-1))
    o = out(2).view(torch.float16)
    assert torch.equal(o[:96], x[:96].reshape(2, 4, 4, 3).permute(0, 3, 1, 2).reshape(-1))
    o = out(3).view(torch.float16)                               # NCHW [1,16,8,8] -> NC1HWC0 [1,1,8,8,16]
    assert torch.equal(o[:1024], x[:1024].reshape(16, 64).T.reshape(-1))
    o = out(4).view(torch.float16)
    blk = x[:256].reshape(16, 16)
    assert torch.equal(o[:256].reshape(16, 16), blk.T)           # first call: stride 0
    assert torch.equal(o[256:512].reshape(16, 16), x[256:512].reshape(16, 16).T)   # second: moved one stride
    xb = torch.randint(0, 256, (NB,), generator=g, dtype=torch.int32).to(torch.uint8)
    o = out(5, xb)
    src = xb[:512].reshape(16, 32)
    got = o[:512].reshape(16, 32)
    assert torch.equal(got[:, 16:], src[:, 16:].T)               # dst block j high half: src blocks' element 16 + j
    assert (got[:, :16] == 0xEE).all()                           # the low halves are not written


def _go_t(op, x, arch):
    xb = _bytes(x)
    ob = torch.full((NB,), 0xEE, dtype=torch.uint8)
    rep = run(SRC, "trn", [xb, ob, op], arch=arch, kernel_type="aiv")
    check_ok(rep)
    return ob
