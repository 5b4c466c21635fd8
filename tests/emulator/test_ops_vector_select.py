"""GatherMask / Gather / Gatherb, Compare / Compares (count, mask and CmpMask-register forms),
GetCmpMask / SetCmpMask and Select (modes 0/1/2, count, mask and register forms, 950
flexible-scalar forms) against numpy/torch references on both arches, plus the race records of
these ops (the index / pattern / selMask operands are reads the checker sees)."""
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

extern "C" __global__ __aicore__ void gsel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR out, GM_ADDR cnt, int32_t op) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bz, bo;
    pipe.InitBuffer(bx, NB); pipe.InitBuffer(by, NB); pipe.InitBuffer(bz, NB); pipe.InitBuffer(bo, NB);
    GlobalTensor<uint8_t> gx, gy, gz, go;
    GlobalTensor<uint64_t> gc;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, NB); gy.SetGlobalBuffer((__gm__ uint8_t*)y, NB);
    gz.SetGlobalBuffer((__gm__ uint8_t*)z, NB); go.SetGlobalBuffer((__gm__ uint8_t*)out, NB);
    gc.SetGlobalBuffer((__gm__ uint64_t*)cnt, 4);
    LocalTensor<uint8_t> ux = bx.Get<uint8_t>(), uy = by.Get<uint8_t>(), uz = bz.Get<uint8_t>(), uo = bo.Get<uint8_t>();
    DataCopy(ux, gx, NB); DataCopy(uy, gy, NB); DataCopy(uz, gz, NB); DataCopy(uo, go, NB);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<uint32_t> u32x = ux.ReinterpretCast<uint32_t>(), u32y = uy.ReinterpretCast<uint32_t>(),
                          u32o = uo.ReinterpretCast<uint32_t>();
    LocalTensor<half> hx = ux.ReinterpretCast<half>(), hy = uy.ReinterpretCast<half>(), ho = uo.ReinterpretCast<half>();
    LocalTensor<float> fx = ux.ReinterpretCast<float>(), fy = uy.ReinterpretCast<float>(), fo = uo.ReinterpretCast<float>();
    LocalTensor<uint16_t> u16x = ux.ReinterpretCast<uint16_t>(), u16o = uo.ReinterpretCast<uint16_t>();
    uint64_t rsvd = 0;
    const int pat = op % 10;
    switch (op / 10) {
        case 0:   // GatherMask built-in pattern 1..7, normal mode, uint32, 4 repeats, in place
            GatherMask(u32x, u32x, (uint8_t)pat, false, 0, {1, 4, 8, 0}, rsvd);
            PipeBarrier<PIPE_V>();
            DataCopy(uo, ux, NB); break;   // V -> V copy of the result
        case 1:   // GatherMask built-in pattern, half, src0 block stride 2 / repeat stride 16, 2 repeats
            GatherMask(hy, hx, (uint8_t)pat, false, 0, {2, 2, 16, 0}, rsvd);
            PipeBarrier<PIPE_V>();
            DataCopy(uo, uy, NB); break;
        case 2:   // GatherMask user pattern, counter mode: 70 elements per repeat, 2 repeats
            SetMaskCount();
            GatherMask(u32o, u32x, u32y, true, 70, {1, 2, 4, 0}, rsvd);
            Add(fo[512], fx, fx, (uint64_t)64, 1, BinaryRepeatParams());  // normal mode again: 64 elements
            break;
        case 3:   // GatherMask user pattern, normal mode, src1RepeatStride 1 (256 bits apart)
            GatherMask(ho, hx, uy.ReinterpretCast<uint16_t>(), false, 0, {1, 3, 8, 1}, rsvd); break;
        case 4:   // Gather count form: byte offsets in y
            Gather(ho, hx, u32y, (uint32_t)64, 200); break;
        case 5:   // Gather mask form: 2 repeats, mask 100 of 128, dst repeat stride 10 blocks
            Gather(ho, hx, u32y, (uint32_t)0, (uint64_t)100, 2, 10); break;
        case 6: { // Gatherb: 2 repeats of 8 blocks, dst block stride 2
            GatherRepeatParams gp(2, 16);
            Gatherb<uint16_t>(u16o, u16x, u32y, 2, gp); break; }
        case 7: { // Compare count form LT / EQ / NE (half and float)
            LocalTensor<uint8_t> m = uo;
            CMPMODE modes[3] = {CMPMODE::LT, CMPMODE::EQ, CMPMODE::NE};
            Compare(m, hx, hy, modes[pat % 3], 256);
            Compare(m[64], fx[128], fy[128], modes[pat % 3], 128); break; }
        case 8: { // Compare mask form: 950 honours the mask, A2/A3 compare every element
            Compare(uo, fx, fy, CMPMODE::GT, (uint64_t)20, 2, BinaryRepeatParams()); break; }
        case 9: { // Compare into CmpMask, GetCmpMask, then Select mode 0 from the register
            Compare(hx, hy, CMPMODE::LE, (uint64_t)128, BinaryRepeatParams());
            PipeBarrier<PIPE_V>();
            GetCmpMask(uo[4096]);
            PipeBarrier<PIPE_V>();
            SetVectorMask<half>(0xFFFFFFFFFFFFFFFFull, 0x00000000FFFFFFFFull);
            Select<half, SELMODE::VSEL_CMPMASK_SPR>(ho, hx, hy, 2, BinaryRepeatParams());
            ResetMask(); break; }
        case 10: { // Compares / CompareScalar count and mask forms
            float s = 0.25f;
            Compares(uo, fx, s, CMPMODE::GE, 128);
            CompareScalar(uo[64], hx, half(-0.5f), CMPMODE::LT, 256);
            Compares(uo[128], fx, s, CMPMODE::LT, (uint64_t)64, 2, UnaryRepeatParams(1, 1, 8, 8)); break; }
        case 11:  // Select mode 0 count form: the first 64 bits serve every repeat
            Select(fo, uz, fx, fy, SELMODE::VSEL_CMPMASK_SPR, 256); break;
        case 12:  // Select mode 1 / 2 count forms: bits consumed continuously
            Select(fo, uz, fx, 7.5f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 192);
            Select(ho[1024], uz, hx, hy, SELMODE::VSEL_TENSOR_TENSOR_MODE, 256); break;
        case 13: { // Select mask forms: inactive elements keep dst
            uint64_t m[2] = {0xF0F0F0F0F0F0F0F0ull, 0};
            Select(fo, uz, fx, fy, SELMODE::VSEL_TENSOR_TENSOR_MODE, m, 2, BinaryRepeatParams());
            Select(ho[1024], uz, hx, half(2.0f), SELMODE::VSEL_TENSOR_SCALAR_MODE, (uint64_t)100, 2, BinaryRepeatParams()); break; }
        case 14: { // register forms: mode 2 (CmpMask holds the selMask address), mode 1 (holds the scalar)
            LocalTensor<uint64_t> addr = uo[6144].ReinterpretCast<uint64_t>();
            SetFlag<HardEvent::MTE2_S>(0); WaitFlag<HardEvent::MTE2_S>(0);
            addr.SetValue(0, (uint64_t)uz.GetPhyAddr());
            SetFlag<HardEvent::S_V>(0); WaitFlag<HardEvent::S_V>(0);
            SetCmpMask(addr);
            PipeBarrier<PIPE_V>();
            SetVectorMask<float>(0, 0xFFFFFFFFFFFFFFFFull);
            Select<float, SELMODE::VSEL_TENSOR_TENSOR_MODE>(fo, fx, fy, 2, BinaryRepeatParams());
            SetCmpMask(fy[300]);
            PipeBarrier<PIPE_V>();
            Select(fo[128], uz, fx, 2, BinaryRepeatParams());
            ResetMask(); break; }
#if defined(EMU_ARCH_3510)
        case 15: { // flexible-scalar Compares (scalar on the left, a single point) and Select
            static constexpr BinaryConfig left = {0};
            Compares<BinaryDefaultType, BinaryDefaultType, true, left>(uo, fy[3], fx, CMPMODE::LT, 128);
            Select<BinaryDefaultType, uint8_t, left>(fo[64], uz, fy[5], fx, SELMODE::VSEL_TENSOR_SCALAR_MODE, 64);
            Select(fo[128], uz, fx, fy[6], SELMODE::VSEL_TENSOR_SCALAR_MODE, 64); break; }
#endif
    }
    gc.SetValue(0, rsvd);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, uo, NB);
}

extern "C" __global__ __aicore__ void racy(GM_ADDR x, GM_ADDR y, int32_t which) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    pipe.InitBuffer(bx, NB); pipe.InitBuffer(by, NB); pipe.InitBuffer(bo, NB);
    GlobalTensor<uint8_t> gx, gy;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, NB); gy.SetGlobalBuffer((__gm__ uint8_t*)y, NB);
    LocalTensor<uint8_t> ux = bx.Get<uint8_t>(), uy = by.Get<uint8_t>(), uo = bo.Get<uint8_t>();
    DataCopy(ux, gx, NB);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    DataCopy(uy, gy, NB);              // offsets / pattern / selMask arrive after the wait: a race
    if (which == 0) Gather(uo.ReinterpretCast<half>(), ux.ReinterpretCast<half>(), uy.ReinterpretCast<uint32_t>(), 0u, 64u);
    else if (which == 1) { uint64_t r; GatherMask(uo.ReinterpretCast<uint32_t>(), ux.ReinterpretCast<uint32_t>(),
                                                  uy.ReinterpretCast<uint32_t>(), false, 0, {1, 1, 8, 8}, r); }
    else Select(uo.ReinterpretCast<float>(), uy, ux.ReinterpretCast<float>(), 1.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 64);
    PipeBarrier<PIPE_ALL>();
}
'''


def _bytes(t):
    b = t.contiguous().view(torch.uint8).reshape(-1)
    out = torch.zeros(NB, dtype=torch.uint8)
    out[:b.numel()] = b
    return out


def _go(op, x, y, z, arch, init=None):
    xb, yb, zb = _bytes(x), _bytes(y), _bytes(z)
    ob = _bytes(init) if init is not None else torch.full((NB,), 0xEE, dtype=torch.uint8)
    cnt = torch.zeros(4, dtype=torch.int64)
    rep = run(SRC, "gsel", [xb, yb, zb, ob, cnt, op], arch=arch, kernel_type="aiv")
    check_ok(rep)
    return ob, int(cnt[0])


def _pat(p, k):
    return {1: k % 2 == 0, 2: k % 2 == 1, 3: k % 4 == 0, 4: k % 4 == 1, 5: k % 4 == 2, 6: k % 4 == 3, 7: True}[p]


def _eq(a, b):
    assert torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)), (a[:16], b[:16])


def _bits(byts, n):
    return ((byts[:(n + 7) // 8].int().view(-1, 1) >> torch.arange(8)) & 1).reshape(-1)[:n].bool()


@pytest.mark.parametrize("arch", ARCHES)
def test_gather_mask_patterns(arch):
    x = torch.arange(1, 2049, dtype=torch.int32)
    hx = (torch.arange(4096) * 0.5).half()
    for pat in range(1, 8):
        o, cnt = _go(pat, x, x, x, arch)
        sel = [v for k, v in enumerate(range(1, 257)) if _pat(pat, k % 64)]
        assert cnt == len(sel)
        got = o.view(torch.int32)[:cnt]
        assert got.tolist() == sel
        assert torch.equal(o.view(torch.int32)[cnt:256], x[cnt:256])   # in place: the tail keeps src0
        o, cnt = _go(10 + pat, hx, hx, hx, arch)
        # repeat r, element k at r*16*16 + (k//16)*2*16 + k%16 (block stride 2, repeat stride 16 blocks)
        src = [hx[r * 256 + (k // 16) * 32 + k % 16].item() for r in range(2) for k in range(128) if _pat(pat, k)]
        assert cnt == len(src)
        assert o.view(torch.float16)[:cnt].tolist() == src


@pytest.mark.parametrize("arch", ARCHES)
def test_gather_mask_user_pattern_and_gathers(arch):
    g = torch.Generator().manual_seed(7)
    x = torch.randint(0, 2**31 - 1, (2048,), generator=g, dtype=torch.int32)
    pat = torch.full((2048,), 0x7E7C00A5, dtype=torch.int32)
    bits = _bits(pat.view(torch.uint8), 70)
    o, cnt = _go(20, x, pat, x, arch)
    sel = []
    for r in range(2):                                       # 70 elements per repeat, repeat stride 4 blocks
        sel += [x[r * 32 + k].item() for k in range(70) if bits[k]]
    assert cnt == len(sel)
    assert o.view(torch.int32)[:cnt].tolist() == sel
    fx = x.view(torch.float32)                               # after GatherMask the mode is Normal again
    assert torch.equal(o.view(torch.float32)[512:576], fx[:64] + fx[:64])
    # user pattern, normal mode, src1RepeatStride 1 block: repeat r uses bits [256 r, 256 r + 128)
    hx = torch.randn(4096, generator=g).half()
    patb = torch.randint(0, 256, (NB,), generator=g, dtype=torch.int32).to(torch.uint8)
    o, cnt = _go(30, hx, patb, hx, arch)
    allbits = _bits(patb, 3 * 256)
    sel = [hx[r * 128 + k].item() for r in range(3) for k in range(128) if allbits[r * 256 + k]]
    assert cnt == len(sel)
    assert o.view(torch.float16)[:cnt].tolist() == sel
    # Gather count form: dst[i] = src[(64 + off[i]) / 2]
    off = (torch.randint(0, 1000, (2048,), generator=g) * 2).to(torch.int32)
    o, _ = _go(40, hx, off, hx, arch, torch.zeros(4096, dtype=torch.float16))
    idx = (64 + off[:200]) // 2
    _eq(o.view(torch.float16)[:200], hx[idx])
    assert (o.view(torch.float16)[200:] == 0).all()
    # Gather mask form: repeat r element e (e < 100) reads off[128 r + e], writes 160 r + e
    o, _ = _go(50, hx, off, hx, arch, torch.zeros(4096, dtype=torch.float16))
    exp = torch.zeros(4096, dtype=torch.float16)
    for r in range(2):
        exp[160 * r:160 * r + 100] = hx[off[128 * r:128 * r + 100] // 2]
    _eq(o.view(torch.float16), exp)
    # Gatherb: block j of repeat i from byte offset off[8i+j], to dst block 16 i + 2 j
    u16 = torch.arange(4096, dtype=torch.int32).to(torch.int16)
    boff = (torch.randperm(100, generator=g)[:16] * 32).to(torch.int32)
    o, _ = _go(60, u16, boff, u16, arch, torch.zeros(4096, dtype=torch.int16))
    exp = torch.zeros(4096, dtype=torch.int16)
    for i in range(2):
        for j in range(8):
            s = int(boff[i * 8 + j]) // 2
            d = (i * 16 + j * 2) * 16
            exp[d:d + 16] = u16[s:s + 16]
    _eq(o.view(torch.int16), exp)


@pytest.mark.parametrize("arch", ARCHES)
def test_compare_forms(arch):
    g = torch.Generator().manual_seed(8)
    hx, hy = torch.randn(4096, generator=g).half(), torch.randn(4096, generator=g).half()
    hy[::5] = hx[::5]
    hx[7] = float("nan")
    fx, fy = hx[:2048].float(), hy[:2048].float()
    xb = torch.cat([hx[:256].view(torch.uint8), torch.zeros(512, dtype=torch.uint8)])
    xb[512:1024] = fx[:128].view(torch.uint8)
    yb = torch.cat([hy[:256].view(torch.uint8), torch.zeros(512, dtype=torch.uint8)])
    yb[512:1024] = fy[:128].view(torch.uint8)
    # Compare count form: half at x[0:256] vs y, float at bytes 512.. (elements 128..255 of float view)
    hxx, hyy = xb[:512].view(torch.float16), yb[:512].view(torch.float16)
    fxx, fyy = xb[512:1024].view(torch.float32), yb[512:1024].view(torch.float32)
    for pat, fn in ((0, torch.lt), (1, torch.eq), (2, torch.ne)):
        o, _ = _go(70 + pat, xb, yb, yb, arch)
        assert torch.equal(_bits(o, 256), fn(hxx, hyy))
        assert torch.equal(_bits(o[64:], 128), fn(fxx, fyy))
    # Compare mask form (mask 20, 2 repeats of 64 floats): the 950 honours the mask, A2/A3 do not
    fa, fb = torch.randn(2048, generator=g), torch.randn(2048, generator=g)
    o, _ = _go(80, fa, fb, fb, arch)
    want = fa[:128] > fb[:128]
    if arch == "dav-3510":
        want = want & torch.tensor([e % 64 < 20 for e in range(128)])
    assert torch.equal(_bits(o, 128), want)
    # Compare into CmpMask (one repeat of 128 halves), GetCmpMask, Select from the register with
    # the mask register 0xFFFF...F / 0x0000_0000_FFFF_FFFF (elements 0..31 and 64..127)
    o, _ = _go(90, hx, hy, hy, arch, torch.full((4096,), 3.0, dtype=torch.float16))
    le = hx[:128] <= hy[:128]
    got_bits = _bits(o.view(torch.uint8)[4096:4112], 128)
    assert torch.equal(got_bits, le)
    exp = torch.full((4096,), 3.0, dtype=torch.float16)
    for r in range(2):
        for e in range(128):
            if e < 32 or e >= 64:
                exp[r * 128 + e] = hx[r * 128 + e] if le[e] else hy[r * 128 + e]
    _eq(o.view(torch.float16)[:256], exp[:256])
    # Compares / CompareScalar
    o, _ = _go(100, torch.cat([fa[:1024].view(torch.uint8)]), hx, hx, arch)
    assert torch.equal(_bits(o, 128), fa[:128] >= 0.25)
    hxa = fa[:1024].view(torch.uint8)[:512].view(torch.float16)
    assert torch.equal(_bits(o[64:], 256), hxa < -0.5)
    want = fa[:128] < 0.25
    assert torch.equal(_bits(o[128:], 128), want)


@pytest.mark.parametrize("arch", ARCHES)
def test_select_forms(arch):
    g = torch.Generator().manual_seed(9)
    fx, fy = torch.randn(2048, generator=g), torch.randn(2048, generator=g)
    sel = torch.randint(0, 256, (NB,), generator=g, dtype=torch.int32).to(torch.uint8)
    sb = _bits(sel, 1024)
    init = torch.full((2048,), -7.0)
    hx, hy = _bytes(fx).view(torch.float16), _bytes(fy).view(torch.float16)   # the same bytes read as half
    hinit = _bytes(init).view(torch.float16)
    o, _ = _go(110, fx, fy, sel, arch, init)                 # mode 0: bit e % 64 in every repeat
    exp = torch.where(torch.tensor([bool(sb[i % 64]) for i in range(256)]), fx[:256], fy[:256])
    _eq(o.view(torch.float32)[:256], exp)
    o, _ = _go(120, fx, fy, sel, arch, init)                 # modes 1 and 2: bits consumed continuously
    _eq(o.view(torch.float32)[:192], torch.where(sb[:192], fx[:192], torch.tensor(7.5)))
    _eq(o.view(torch.float16)[1024:1280], torch.where(sb[:256], hx[:256], hy[:256]))
    o, _ = _go(130, fx, fy, sel, arch, init)                 # mask forms: inactive elements keep dst
    exp = init.clone()
    for r in range(2):
        for e in range(64):
            if (0xF0F0F0F0F0F0F0F0 >> e) & 1:
                i = r * 64 + e
                exp[i] = fx[i] if sb[i] else fy[i]
    _eq(o.view(torch.float32)[:512], exp[:512])
    eh = hinit.clone()
    for r in range(2):
        for e in range(100):
            i = r * 128 + e
            eh[1024 + i] = hx[i] if sb[i] else torch.tensor(2.0, dtype=torch.float16)
    _eq(o.view(torch.float16)[1024:], eh[1024:])
    o, _ = _go(140, fx, fy, sel, arch, init)                 # register forms
    _eq(o.view(torch.float32)[:128], torch.where(sb[:128], fx[:128], fy[:128]))
    _eq(o.view(torch.float32)[128:256], torch.where(sb[:128], fx[:128], fy[300]))


@pytest.mark.parametrize("arch", ["dav-3510"])
def test_950_flexible_compare_select(arch):
    g = torch.Generator().manual_seed(10)
    fx, fy = torch.randn(2048, generator=g), torch.randn(2048, generator=g)
    sel = torch.randint(0, 256, (NB,), generator=g, dtype=torch.int32).to(torch.uint8)
    sb = _bits(sel, 256)
    o, _ = _go(150, fx, fy, sel, arch, torch.zeros(2048))
    assert torch.equal(_bits(o, 128), fy[3] < fx[:128])
    f = o.view(torch.float32)
    _eq(f[64:128], torch.where(sb[:64], fy[5], fx[:64]))     # scalar on the left: bit 1 takes it
    _eq(f[128:192], torch.where(sb[:64], fx[:64], fy[6]))


@pytest.mark.parametrize("arch", ARCHES)
def test_index_pattern_and_selmask_reads_are_recorded(arch):
    """Gather's offsets, GatherMask's pattern and Select's selMask are reads: loading them after the
    MTE2 -> V wait is a write-read race the checker reports."""
    x = torch.zeros(NB, dtype=torch.uint8)
    for which in range(3):
        rep = run(SRC, "racy", [x, x.clone(), which], arch=arch, kernel_type="aiv")
        races = rep.get("races") or []
        assert any(r["kind"] == "write-read" and r["first"]["op"] == "DataCopy" for r in races), (which, rep)


def test_numpy_reference_sanity():
    assert np.array_equal(_bits(torch.tensor([5], dtype=torch.uint8), 3).numpy(), np.array([True, False, True]))
