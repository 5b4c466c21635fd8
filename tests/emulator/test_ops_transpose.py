"""The enhanced Transpose(dst, src, sharedTmpBuffer, TransposeParamsExt) of the Transpose page
(数据排布转换/Transpose.md), pinned on hand-written kernels independently of the compiler:
[N,C,H,W] -> [N,H,W,C] (TRANSPOSE_NCHW2NHWC) and back (TRANSPOSE_NHWC2NCHW) as the page's numpy
pseudo code (np.transpose axes (0,2,3,1) / (0,3,1,2)); with N = H = 1 it is the 2-D transpose
of a [C, W] matrix. The page's constraints: hSize*wSize*sizeof(T) a multiple of 32 bytes,
cSize <= 4095, hSize*wSize <= 4095, no src/dst reuse, sharedTmpBuffer at least
(cSize + 2) * h0 * w0 * sizeof(T) bytes for NCHW2NHWC and (2 * cSize + 1) * h0 * w0 * sizeof(T)
for NHWC2NCHW (h0 = 32 for 8-bit types, else 16; w0 = 32 / sizeof(T)); a zero size computes
nothing. Its per-arch data types: emu::vec::dt_transpose (NCHW/NHWC forms), dt_transpose_b16
(TRANSPOSE_ND2ND_B16: uint16_t only on A2/A3). The 16x16 plain form and a half [2,3,4,4] case
are in test_ops_vector_reduce.py."""
import shutil
import subprocess

import pytest
import torch
from test_ops_harness import ARCHES, check_ok, run

from ascend_backend.emulator import EmulatorCompileError, run_source
from ascend_backend.emulator.cache import ARCHES as EMU_ARCH_FLAGS
from ascend_backend.emulator.cache import COMMON_FLAGS, INCLUDE_DIR, cxx

NB = 8192      # bytes of the src / dst buffers
TMAX = 69632   # bytes of the sharedTmpBuffer's TBuf (a smaller view of it is passed)

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int NB = 8192, TMAX = 69632;

template <class T>
__aicore__ inline void body(GM_ADDR x, GM_ADDR out, const TransposeParamsExt& tp, int32_t tmpBytes, int32_t inplace) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bo, bt;
    pipe.InitBuffer(bx, NB); pipe.InitBuffer(bo, NB); pipe.InitBuffer(bt, TMAX);
    GlobalTensor<uint8_t> gx, go;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, NB); go.SetGlobalBuffer((__gm__ uint8_t*)out, NB);
    LocalTensor<uint8_t> ux = bx.Get<uint8_t>(), uo = bo.Get<uint8_t>(), ut = bt.Get<uint8_t>(tmpBytes);
    DataCopy(ux, gx, NB); DataCopy(uo, go, NB);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<T> lx = ux.ReinterpretCast<T>(), lo = uo.ReinterpretCast<T>();
    if (inplace) Transpose(lx, lx, ut, tp); else Transpose(lo, lx, ut, tp);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, inplace ? ux : uo, NB);
}

extern "C" __global__ __aicore__ void tr(GM_ADDR x, GM_ADDR out, int32_t n, int32_t c, int32_t h, int32_t w,
                                         int32_t kind, int32_t dt, int32_t tmpBytes, int32_t inplace) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TransposeType t = kind == 0 ? TransposeType::TRANSPOSE_NCHW2NHWC
                    : kind == 1 ? TransposeType::TRANSPOSE_NHWC2NCHW : TransposeType::TRANSPOSE_ND2ND_B16;
    TransposeParamsExt tp(n, c, h, w, t);
    switch (dt) {
        case 0: body<half>(x, out, tp, tmpBytes, inplace); break;
        case 1: body<float>(x, out, tp, tmpBytes, inplace); break;
        case 2: body<int8_t>(x, out, tp, tmpBytes, inplace); break;
        case 3: body<uint8_t>(x, out, tp, tmpBytes, inplace); break;
        case 4: body<int16_t>(x, out, tp, tmpBytes, inplace); break;
        case 5: body<uint16_t>(x, out, tp, tmpBytes, inplace); break;
        case 6: body<int32_t>(x, out, tp, tmpBytes, inplace); break;
        case 7: body<uint32_t>(x, out, tp, tmpBytes, inplace); break;
#if defined(EMU_ARCH_3510)
        case 8: body<bfloat16_t>(x, out, tp, tmpBytes, inplace); break;
        case 9: body<fp8_e4m3fn_t>(x, out, tp, tmpBytes, inplace); break;
        case 10: body<fp8_e5m2_t>(x, out, tp, tmpBytes, inplace); break;
        case 11: body<hifloat8_t>(x, out, tp, tmpBytes, inplace); break;
        case 12: body<fp8_e8m0_t>(x, out, tp, tmpBytes, inplace); break;
        case 13: body<fp4x2_e2m1_t>(x, out, tp, tmpBytes, inplace); break;
#endif
    }
}
'''

# name -> (kernel code, sizeof, arches whose Transpose page line lists it)
DT = {
    "half": (0, 2, ARCHES), "float": (1, 4, ARCHES), "int8_t": (2, 1, ARCHES), "uint8_t": (3, 1, ARCHES),
    "int16_t": (4, 2, ARCHES), "uint16_t": (5, 2, ARCHES), "int32_t": (6, 4, ARCHES), "uint32_t": (7, 4, ARCHES),
    "bfloat16_t": (8, 2, ("dav-3510",)), "fp8_e4m3fn_t": (9, 1, ("dav-3510",)), "fp8_e5m2_t": (10, 1, ("dav-3510",)),
    "hifloat8_t": (11, 1, ("dav-3510",)), "fp8_e8m0_t": (12, 1, ("dav-3510",)),
}
NCHW2NHWC, NHWC2NCHW, ND2ND_B16 = 0, 1, 2
_RAW = {1: torch.int8, 2: torch.int16, 4: torch.int32}


def _h0w0(size):
    return (32 if size == 1 else 16), 32 // size


def tmp_need(kind, c, size):
    """The page's minimum sharedTmpBuffer bytes."""
    h0, w0 = _h0w0(size)
    return ((c + 2) if kind == NCHW2NHWC else (2 * c + 1)) * h0 * w0 * size


def _bytes(t):
    b = t.contiguous().view(torch.uint8).reshape(-1)
    out = torch.full((NB,), 0x5A, dtype=torch.uint8)
    out[:b.numel()] = b
    return out


def _go(x, shape, kind, dt, arch, tmp=None, inplace=False):
    """Run one Transpose on x (a tensor of the element's size); returns (report, output bytes)."""
    n, c, h, w = shape
    tmp = tmp_need(kind, c, DT[dt][1]) if tmp is None else tmp
    xb = _bytes(x)
    ob = torch.full((NB,), 0xEE, dtype=torch.uint8)
    rep = run(SRC, "tr", [xb, ob, n, c, h, w, kind, DT[dt][0], tmp, int(inplace)], arch=arch, kernel_type="aiv")
    return rep, ob


def _ok(x, shape, kind, dt, arch, **kw):
    rep, ob = _go(x, shape, kind, dt, arch, **kw)
    check_ok(rep)
    return ob


def _fails(rep, text):
    errs = rep.get("errors") or []
    assert any(e.get("kind") == "invalid_param" and text in e.get("message", "") for e in errs), rep


def _raw(numel, size, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-(1 << 8 * size - 1), 1 << 8 * size - 1, (numel,), generator=g, dtype=torch.int64).to(_RAW[size])


# ------------------------------------------------------------------ semantics


@pytest.mark.parametrize("arch", ARCHES)
def test_nchw2nhwc_is_a_2d_transpose_half(arch):
    """N = H = 1: [C, W] = [64, 48] half becomes its transpose [48, 64] (the page's pseudo code)."""
    x = torch.randn(64, 48, generator=torch.Generator().manual_seed(1)).half()
    ob = _ok(x, (1, 64, 1, 48), NCHW2NHWC, "half", arch)
    got = ob[:64 * 48 * 2].view(torch.float16).reshape(48, 64)
    assert torch.equal(got, x.T)
    assert (ob[64 * 48 * 2:] == 0xEE).all()   # nothing past the tensor is written


@pytest.mark.parametrize("arch", ARCHES)
def test_nchw2nhwc_is_a_2d_transpose_float(arch):
    x = torch.randn(24, 32, generator=torch.Generator().manual_seed(2))
    ob = _ok(x, (1, 24, 1, 32), NCHW2NHWC, "float", arch)
    assert torch.equal(ob[:24 * 32 * 4].view(torch.float32).reshape(32, 24), x.T)


@pytest.mark.parametrize("arch", ARCHES)
def test_nhwc2nchw_inverts_the_2d_transpose(arch):
    """NHWC2NCHW of [1, 1, 48, 64] (H = 1, W = 48, C = 64) is the transpose back to [64, 48]."""
    x = torch.randn(64, 48, generator=torch.Generator().manual_seed(3)).half()
    y = _ok(x, (1, 64, 1, 48), NCHW2NHWC, "half", arch)[:64 * 48 * 2].view(torch.float16)
    back = _ok(y, (1, 64, 1, 48), NHWC2NCHW, "half", arch)[:64 * 48 * 2].view(torch.float16)
    assert torch.equal(back.reshape(64, 48), x)


@pytest.mark.parametrize("arch", ARCHES)
def test_two_batches_both_directions(arch):
    """N = 2 float [2, 5, 2, 4] (H*W*4 = 32 bytes): each batch is permuted on its own."""
    n, c, h, w = 2, 5, 2, 4
    x = torch.randn(n * c * h * w, generator=torch.Generator().manual_seed(4))
    size = n * c * h * w * 4
    y = _ok(x, (n, c, h, w), NCHW2NHWC, "float", arch)[:size].view(torch.float32)
    assert torch.equal(y, x.reshape(n, c, h, w).permute(0, 2, 3, 1).reshape(-1))
    z = _ok(x, (n, c, h, w), NHWC2NCHW, "float", arch)[:size].view(torch.float32)
    assert torch.equal(z, x.reshape(n, h, w, c).permute(0, 3, 1, 2).reshape(-1))
    back = _ok(y, (n, c, h, w), NHWC2NCHW, "float", arch)[:size].view(torch.float32)
    assert torch.equal(back, x)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dt", list(DT))
def test_every_listed_type_moves_its_elements(arch, dt):
    """Every type of the arch's page line: the elements (as raw bits) are permuted, N = 2."""
    code, size, arches = DT[dt]
    if arch not in arches:
        pytest.skip(f"{dt} is not in the {arch} line of the page")
    hw = 64 // size            # H*W*sizeof(T) = 64 bytes
    n, c, h, w = 2, 3, 2, hw // 2
    x = _raw(n * c * h * w, size, 10 + code)
    nbytes = x.numel() * size
    y = _ok(x, (n, c, h, w), NCHW2NHWC, dt, arch)[:nbytes].view(_RAW[size])
    assert torch.equal(y, x.reshape(n, c, h, w).permute(0, 2, 3, 1).reshape(-1))
    z = _ok(x, (n, c, h, w), NHWC2NCHW, dt, arch)[:nbytes].view(_RAW[size])
    assert torch.equal(z, x.reshape(n, h, w, c).permute(0, 3, 1, 2).reshape(-1))


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("shape", [(0, 4, 1, 16), (1, 0, 1, 16), (1, 4, 0, 16), (1, 4, 1, 0)])
def test_a_zero_size_writes_nothing(arch, shape):
    """Page, constraints: a zero nSize/cSize/hSize/wSize computes nothing and leaves dst alone
    (the range and tmp checks do not apply then)."""
    x = torch.randn(64, generator=torch.Generator().manual_seed(5)).half()
    ob = _ok(x, shape, NCHW2NHWC, "half", arch, tmp=32)
    assert (ob == 0xEE).all()


# ------------------------------------------------------------------ constraints


@pytest.mark.parametrize("arch", ARCHES)
def test_hw_bytes_must_be_a_multiple_of_32(arch):
    x = torch.randn(64).half()
    rep, _ = _go(x, (1, 4, 1, 8), NCHW2NHWC, "half", arch)           # 8 halves = 16 bytes
    _fails(rep, "multiple of 32 bytes")
    rep, _ = _go(x, (1, 4, 3, 8), NHWC2NCHW, "float", arch)          # 24 floats = 96 bytes: fine
    check_ok(rep)
    rep, _ = _go(x, (1, 4, 3, 4), NHWC2NCHW, "float", arch)          # 12 floats = 48 bytes
    _fails(rep, "multiple of 32 bytes")
    rep, _ = _go(x, (1, 2, 1, 16), NCHW2NHWC, "int8_t", arch)        # 16 bytes
    _fails(rep, "multiple of 32 bytes")


@pytest.mark.parametrize("arch", ARCHES)
def test_c_and_hw_ranges(arch):
    """cSize <= 4095 and hSize*wSize <= 4095 (checked before the buffers are looked at)."""
    x = torch.randn(64).half()
    rep, _ = _go(x, (1, 4096, 1, 16), NCHW2NHWC, "half", arch, tmp=32)
    _fails(rep, "cSize <= 4095")
    rep, _ = _go(x, (1, 1, 64, 64), NCHW2NHWC, "half", arch, tmp=32)   # H*W = 4096
    _fails(rep, "hSize*wSize <= 4095")


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kind", [NCHW2NHWC, NHWC2NCHW])
def test_in_place_is_refused(arch, kind):
    x = torch.randn(64).half()
    rep, _ = _go(x, (1, 4, 1, 16), kind, "half", arch, inplace=True)
    _fails(rep, "cannot work in place")


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kind,dt,c,hw", [
    (NCHW2NHWC, "half", 4, 16),      # (4 + 2) * 16 * 16 * 2 = 3072
    (NCHW2NHWC, "float", 4, 8),      # (4 + 2) * 16 * 8 * 4 = 3072
    (NCHW2NHWC, "int8_t", 4, 32),    # h0 = 32 for 8-bit types: (4 + 2) * 32 * 32 = 6144
    (NHWC2NCHW, "half", 4, 16),      # (2 * 4 + 1) * 16 * 16 * 2 = 4608
    (NHWC2NCHW, "uint8_t", 3, 64),   # (2 * 3 + 1) * 32 * 32 = 7168
])
def test_tmp_buffer_minimum(arch, kind, dt, c, hw):
    """The page's sharedTmpBuffer size is enough; 32 bytes less is refused."""
    need = tmp_need(kind, c, DT[dt][1])
    assert need == {(0, "half"): 3072, (0, "float"): 3072, (0, "int8_t"): 6144, (1, "half"): 4608,
                    (1, "uint8_t"): 7168}[(kind, dt)]
    size = DT[dt][1]
    x = _raw(c * hw, size, 20)
    ob = _ok(x, (1, c, 1, hw), kind, dt, arch, tmp=need)
    ref = x.reshape(c, hw).T if kind == NCHW2NHWC else x.reshape(hw, c).T
    assert torch.equal(ob[:c * hw * size].view(_RAW[size]), ref.reshape(-1))
    rep, _ = _go(x, (1, c, 1, hw), kind, dt, arch, tmp=need - 32)
    _fails(rep, f"the page requires at least {need}")


def test_fp4x2_is_listed_but_not_emulated():
    """fp4x2_e2m1_t is in the 950 line (so it compiles), but the page does not say whether the
    sizes count 4-bit elements or bytes: the emulator refuses it at run time."""
    xb = _bytes(torch.zeros(64, dtype=torch.uint8))
    ob = torch.full((NB,), 0xEE, dtype=torch.uint8)
    rep = run(SRC, "tr", [xb, ob, 1, 4, 1, 64, NCHW2NHWC, 13, 8192, 0], arch="dav-3510", kernel_type="aiv")
    _fails(rep, "fp4x2 types is not emulated")


# ------------------------------------------------------------------ TRANSPOSE_ND2ND_B16


@pytest.mark.parametrize("arch", ARCHES)
def test_nd2nd_b16_types(arch):
    """The enhanced form's 16x16 transpose: uint16_t on both arches, half/int16_t on dav-3510 only
    (A2/A3 line: uint16_t); in place allowed."""
    x = _raw(256, 2, 30)
    for dt in ("uint16_t", "half", "int16_t"):
        rep, ob = _go(x, (0, 0, 16, 16), ND2ND_B16, dt, arch, tmp=32)
        if arch == "dav-c220" and dt != "uint16_t":
            _fails(rep, "TRANSPOSE_ND2ND_B16: data type not supported on this arch")
            continue
        check_ok(rep)
        assert torch.equal(ob[:512].view(torch.int16).reshape(16, 16), x.reshape(16, 16).T)
    ob = _ok(x, (0, 0, 16, 16), ND2ND_B16, "uint16_t", arch, tmp=32, inplace=True)
    assert torch.equal(ob[:512].view(torch.int16).reshape(16, 16), x.reshape(16, 16).T)
    rep, _ = _go(x, (0, 0, 16, 16), ND2ND_B16, "float", arch, tmp=32)
    _fails(rep, "TRANSPOSE_ND2ND_B16: data type not supported on this arch")


# ------------------------------------------------------------------ data-type table

# type -> arches whose NCHW/NHWC line lists it; every other emulator type is refused on both
_TABLE = {
    "int8_t": ARCHES, "uint8_t": ARCHES, "int16_t": ARCHES, "uint16_t": ARCHES, "half": ARCHES,
    "int32_t": ARCHES, "uint32_t": ARCHES, "float": ARCHES,
    "bfloat16_t": ("dav-3510",), "hifloat8_t": ("dav-3510",), "fp8_e8m0_t": ("dav-3510",),
    "fp8_e5m2_t": ("dav-3510",), "fp8_e4m3fn_t": ("dav-3510",), "fp4x2_e2m1_t": ("dav-3510",),
    "fp4x2_e1m2_t": ("dav-3510",),
    "int64_t": (), "uint64_t": (), "bool": (), "double": (), "int4b_t": (),
}
_B16 = {"uint16_t": ARCHES, "int16_t": ("dav-3510",), "half": ("dav-3510",), "float": (), "int8_t": (),
        "bfloat16_t": ()}


@pytest.mark.skipif(shutil.which(cxx()) is None, reason="no C++ compiler")
@pytest.mark.parametrize("arch", ARCHES)
def test_dt_transpose_table(arch, tmp_path):
    """emu::vec::dt_transpose (count and rep alike) holds exactly the page's types of the arch."""
    lines = ['#include "kernel_operator.h"', "using namespace AscendC;"]
    for table, rows in (("dt_transpose", _TABLE), ("dt_transpose_b16", _B16)):
        for ty, arches in rows.items():
            want = "true" if arch in arches else "false"
            for form in ("count", "rep"):
                lines.append(f'static_assert(emu::vec::{table}::{form}<{ty}> == {want}, '
                             f'"{arch}: {table}::{form}<{ty}> should be {want}");')
    src = tmp_path / "t.cpp"
    src.write_text("\n".join(lines) + "\n")
    r = subprocess.run([cxx(), *COMMON_FLAGS, "-fsyntax-only", EMU_ARCH_FLAGS[arch], f"-I{INCLUDE_DIR}", str(src)],
                       capture_output=True, text=True)
    failed = [line.split("static assertion failed: ")[1] for line in r.stderr.splitlines()
              if "static assertion failed: " in line]
    assert r.returncode == 0, "\n".join(failed) or r.stderr[-4000:]


def _compile_fails(type_, arch):
    src = r'''
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void k(GM_ADDR x) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe; TBuf<TPosition::VECCALC> b, t; pipe.InitBuffer(b, 4096); pipe.InitBuffer(t, 4096);
    LocalTensor<TYPE> s = b.Get<TYPE>(), d = s[1024 / sizeof(TYPE)];
    Transpose(d, s, t.Get<uint8_t>(), TransposeParamsExt(1, 4, 1, 32, TransposeType::TRANSPOSE_NCHW2NHWC));
}
'''.replace("TYPE", type_)
    with pytest.raises(EmulatorCompileError) as ei:
        run_source(src, "k", [torch.zeros(4)], 1, arch=arch)
    out = ei.value.compiler_output
    assert "Transpose: data type not supported on this arch" in out and "see the API page" in out, out[:3000]


def test_unlisted_types_do_not_compile():
    """The enhanced Transpose refuses at compile time what the arch's line does not list:
    bfloat16_t on dav-c220, int64_t on both."""
    _compile_fails("bfloat16_t", "dav-c220")
    for arch in ARCHES:
        _compile_fails("int64_t", arch)
