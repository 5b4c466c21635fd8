"""Kernels written in the official forms: entry qualifiers (__vector__, __cube__, __mix__(c, v),
any order, with or without extern "C"), template kernels launched as `name<args>`, tiling
structs passed by value (bytes / ctypes / dict) and read with the Kernel-Tiling macros, TQue
classes with Init/Process, LocalMemAllocator static tensors, EVENT_ID forms, __NPU_ARCH__
guards, ascendc_assert, DumpTensor, fp8 storage types; each checked against torch."""

from __future__ import annotations

import ctypes
import struct

import pytest
import torch
from conftest import HEADER, line_of, run

from ascend_backend.emulator import EmulatorCompileError, EmulatorError, parse_kernels, run_source

ARCHES = ["dav-c220", "dav-3510"]


# ---------------------------------------------------------------------------------- parsing
def test_entry_qualifiers_parse_and_select_the_kernel_type():
    src = HEADER + r"""
__global__ __vector__ void v1(GM_ADDR x) {}
__vector__ __global__ __aicore__ void v2(GM_ADDR x) {}
extern "C" __global__ __aicore__ __vector__ void v3(GM_ADDR x) {}
extern "C" __global__ __cube__ void c1(GM_ADDR x) {}
__global__ __mix__(1, 2) void m12(GM_ADDR x) {}
__schedmode__(1) __global__ __mix__(1,1) void m11(GM_ADDR x) {}
__global__ __mix__(1, 0) void m10(GM_ADDR x) {}
__global__ __mix__(0, 1) void m01(GM_ADDR x) {}
template <uint32_t N, typename T>
__global__ __vector__ void t1(GM_ADDR x, T s) {}
extern "C" __global__ __aicore__ void plain(GM_ADDR x) {}
__aicore__ inline void helper(GM_ADDR x) {}
"""
    ks = {k.name: k for k in parse_kernels(src)}
    assert list(ks) == ["v1", "v2", "v3", "c1", "m12", "m11", "m10", "m01", "t1", "plain"]
    assert [ks[n].kernel_type for n in ks] == ["AIV_ONLY"] * 3 + [
        "AIC_ONLY", "MIX_AIC_1_2", "MIX_AIC_1_1", "MIX_AIC_1_0", "MIX_AIV_1_0", "AIV_ONLY", None]
    assert ks["v3"].extern_c and not ks["v1"].extern_c
    assert [(t.name, t.kind) for t in ks["t1"].template] == [("N", "value"), ("T", "type")]
    with pytest.raises(EmulatorError, match="documented ratios"):
        parse_kernels(HEADER + "__global__ __mix__(2, 1) void bad(GM_ADDR x) {}\n")


# The kernel type follows the qualifier: block structure seen by the kernel.
QUERY = HEADER + r"""
__global__ QUAL void q(GM_ADDR out) {
    GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t*)out, 64);
    int slot = ASCEND_IS_AIC ? 0 : 1 + (int)GetSubBlockIdx();
    o.SetValue(slot, 100 + (int)GetTaskRation());  // one block: slot 0 = AIC, 1/2 = AIVs
}
"""


@pytest.mark.parametrize("qual,expect", [
    ("__vector__", {1: 101}),
    ("__cube__", {0: 101}),
    ("__mix__(1, 2)", {0: 102, 1: 102, 2: 102}),
    ("__mix__(1, 1)", {0: 101, 1: 101}),
])
def test_kernel_type_follows_the_qualifier(qual, expect):
    out = torch.zeros(64, dtype=torch.int32)
    rep = run_source(QUERY.replace("QUAL", qual), "q", [out], 1, arch="dav-3510")
    got = {i: int(v) for i, v in enumerate(out.tolist()) if v}
    assert got == expect, (qual, got, rep.kernel_type)


# ------------------------------------------------------------------ template kernels, TQue
TQUE_ADD = HEADER + r"""
template <typename T, uint32_t TILE, uint32_t BUFS>
class KernelAdd {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t perBlock) {
        n_ = perBlock;
        xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * perBlock, perBlock);
        yg.SetGlobalBuffer((__gm__ T*)y + GetBlockIdx() * perBlock, perBlock);
        zg.SetGlobalBuffer((__gm__ T*)z + GetBlockIdx() * perBlock, perBlock);
        pipe.InitBuffer(inX, BUFS, TILE * sizeof(T));
        pipe.InitBuffer(inY, BUFS, TILE * sizeof(T));
        pipe.InitBuffer(outZ, BUFS, TILE * sizeof(T));
    }
    __aicore__ inline void Process() {
        for (uint32_t i = 0; i < n_ / TILE; ++i) { CopyIn(i); Compute(); CopyOut(i); }
    }
private:
    __aicore__ inline void CopyIn(uint32_t i) {
        LocalTensor<T> x = inX.AllocTensor<T>(), y = inY.AllocTensor<T>();
        DataCopy(x, xg[i * TILE], TILE);
        DataCopy(y, yg[i * TILE], TILE);
        inX.EnQue(x); inY.EnQue(y);
    }
    __aicore__ inline void Compute() {
        LocalTensor<T> x = inX.DeQue<T>(), y = inY.DeQue<T>(), z = outZ.AllocTensor<T>();
        Add(z, x, y, TILE);
        outZ.EnQue<T>(z);
        inX.FreeTensor(x); inY.FreeTensor(y);
    }
    __aicore__ inline void CopyOut(uint32_t i) {
        LocalTensor<T> z = outZ.DeQue<T>();
        DataCopy(zg[i * TILE], z, TILE);
        outZ.FreeTensor(z);
    }
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inX, inY;
    TQue<TPosition::VECOUT, 2> outZ;
    GlobalTensor<T> xg, yg, zg;
    uint32_t n_ = 0;
};

template <typename T, uint32_t TILE>
__global__ __aicore__ __vector__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t perBlock) {
    KernelAdd<T, TILE, 2> op;
    op.Init(x, y, z, perBlock);
    op.Process();
}
"""


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kernel,dt", [("add_custom<float, 128>", torch.float32),
                                       ("add_custom<half, 256>", torch.float16)])
def test_template_kernel_with_tque_class(arch, kernel, dt):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4 * 1024, generator=g).to(dt)
    y = torch.randn(4 * 1024, generator=g).to(dt)
    z = torch.zeros_like(x)
    rep = run_source(TQUE_ADD, kernel, [x, y, z, 1024], 4, arch=arch)
    assert torch.equal(z, x + y)
    assert rep.ok and rep.kernel_type == "AIV_ONLY"


def test_template_launch_errors():
    with pytest.raises(EmulatorError, match="is a template"):
        run_source(TQUE_ADD, "add_custom", [None, None, None, 1], 1)
    with pytest.raises(EmulatorError, match="takes 2 template arguments"):
        run_source(TQUE_ADD, "add_custom<float, 128, 3>", [None, None, None, 1], 1)
    src = HEADER + "__global__ __vector__ void k(GM_ADDR x) {}\n"
    with pytest.raises(EmulatorError, match="not a template"):
        run_source(src, "k<1>", [None], 1)
    with pytest.raises(EmulatorCompileError):
        run_source(TQUE_ADD, "add_custom<float, nonsense>", [None, None, None, 1], 1)


# ----------------------------------------------- static tensors: LocalMemAllocator, EVENT_ID
STATIC = HEADER + r"""
template <uint32_t N>
__global__ __vector__ void axpy(GM_ADDR x, GM_ADDR y, GM_ADDR z, float a) {
    InitSocState();
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + block_idx * N, N);
    yg.SetGlobalBuffer((__gm__ float*)y + block_idx * N, N);
    zg.SetGlobalBuffer((__gm__ float*)z + block_idx * N, N);
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<float> xl = ub.Alloc<float, N>();
    LocalTensor<float> yl = ub.Alloc<TPosition::VECIN, float>(N);
    // a tensor at an explicit UB address (static tensor programming)
    LocalTensor<float> zl(TPosition::VECOUT, ub.GetCurAddr(), N);
    DataCopy(xl, xg, N);
    DataCopy(yl, yg, N);
    event_t e = static_cast<event_t>(GetTPipePtr() ? 0 : EVENT_ID1);
    SetFlag<HardEvent::MTE2_V>(e);
    WaitFlag<HardEvent::MTE2_V>(e);
    Muls(zl, xl, a, N);
    PipeBarrier<PIPE_V>();
    Add(zl, zl, yl, N);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(zg, zl, N);
}
"""


@pytest.mark.parametrize("arch", ARCHES)
def test_local_mem_allocator_static_tensors(arch):
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(3 * 512, generator=g), torch.randn(3 * 512, generator=g)
    z = torch.zeros(3 * 512)
    rep = run_source(STATIC, "axpy<512>", [x, y, z, 0.5], 3, arch=arch)
    assert torch.allclose(z, 0.5 * x + y, atol=1e-6)
    assert rep.ok


def test_local_mem_allocator_capacity_is_an_error():
    src = STATIC.replace("ub.Alloc<float, N>()", "ub.Alloc<float, 100000>()")
    with pytest.raises(EmulatorError, match="capacity"):
        run_source(src, "axpy<512>", [torch.zeros(512)] * 3 + [1.0], 1, arch="dav-c220")


# ------------------------------------------------------------------------------ tiling structs
TILING = HEADER + r"""
struct Inner { uint32_t off; uint32_t cnt; };
struct ScaleTiling {
    uint32_t total;
    float scale;
    Inner part;
    uint64_t arr[2];
};

// by value
__global__ __vector__ void by_value(GM_ADDR x, GM_ADDR z, ScaleTiling t) {
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x, t.total);
    zg.SetGlobalBuffer((__gm__ float*)z, t.total);
    for (uint32_t i = t.part.off; i < t.part.off + t.part.cnt; ++i)
        zg.SetValue(i, xg.GetValue(i) * t.scale + (float)(t.arr[0] + t.arr[1]));
}

// from a GM tiling buffer, with each macro of the Kernel-Tiling pages
__global__ __vector__ void by_macro(GM_ADDR x, GM_ADDR z, GM_ADDR tiling) {
    REGISTER_TILING_DEFAULT(ScaleTiling);
    GET_TILING_DATA(td, tiling);
    GET_TILING_DATA_WITH_STRUCT(ScaleTiling, td2, tiling);
    GET_TILING_DATA_MEMBER(ScaleTiling, part, part, tiling);
    GET_TILING_DATA_PTR_WITH_STRUCT(ScaleTiling, tp, tiling);
    COPY_TILING_WITH_STRUCT(Inner, tp->part, ip);
    COPY_TILING_WITH_ARRAY(uint64_t, 2, tp->arr, ap);
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x, td.total);
    zg.SetGlobalBuffer((__gm__ float*)z, td.total);
    ascendc_assert(td2.total == td.total && part.cnt == ip->cnt, "tiling copies disagree");
    for (uint32_t i = ip->off; i < part.off + part.cnt; ++i)
        zg.SetValue(i, xg.GetValue(i) * tp->scale + (float)((*ap)[0] + (*ap)[1]));
}
"""


class Inner(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint32), ("cnt", ctypes.c_uint32)]


class ScaleTiling(ctypes.Structure):
    _fields_ = [("total", ctypes.c_uint32), ("scale", ctypes.c_float), ("part", Inner),
                ("arr", ctypes.c_uint64 * 2)]


def _tiling_ref(x):
    ref = torch.zeros_like(x)
    ref[8:40] = x[8:40] * 1.5 + 3.0
    return ref


@pytest.mark.parametrize("arch", ARCHES)
def test_tiling_struct_by_value_bytes_ctypes_dict(arch):
    x = torch.randn(64)
    t = ScaleTiling(64, 1.5, Inner(8, 32), (ctypes.c_uint64 * 2)(1, 2))
    for arg in (t, bytes(t), bytearray(bytes(t)),
                {"total": 64, "scale": 1.5, "part": {"off": 8, "cnt": 32}, "arr": [1, 2]}):
        z = torch.zeros(64)
        run_source(TILING, "by_value", [x, z, arg], 1, arch=arch)
        assert torch.equal(z, _tiling_ref(x)), type(arg)


def test_tiling_struct_argument_errors():
    x, z = torch.zeros(64), torch.zeros(64)
    with pytest.raises(EmulatorError, match="is 32 bytes in the kernel, got 8"):
        run_source(TILING, "by_value", [x, z, b"\0" * 8], 1)
    with pytest.raises(EmulatorError, match="has no field 'nope'"):
        run_source(TILING, "by_value", [x, z, {"nope": 1}], 1)
    with pytest.raises(EmulatorError, match="passed by value"):
        run_source(TILING, "by_value", [x, z, 3], 1)


@pytest.mark.parametrize("arch", ARCHES)
def test_get_tiling_data_macros(arch):
    x = torch.randn(64)
    z = torch.zeros(64)
    t = ScaleTiling(64, 1.5, Inner(8, 32), (ctypes.c_uint64 * 2)(1, 2))
    tiling = torch.frombuffer(bytearray(bytes(t)), dtype=torch.uint8)
    rep = run_source(TILING, "by_macro", [x, z, tiling], 1, arch=arch)
    assert torch.equal(z, _tiling_ref(x)) and rep.ok


def test_get_tiling_data_reads_are_bounds_checked_and_need_a_registered_struct():
    x, z = torch.randn(64), torch.zeros(64)
    short = torch.zeros(8, dtype=torch.uint8)  # smaller than ScaleTiling
    with pytest.raises(EmulatorError, match="out_of_bounds|out of bounds"):
        run_source(TILING, "by_macro", [x, z, short], 1)
    src = TILING.replace("REGISTER_TILING_DEFAULT(ScaleTiling);", "")
    with pytest.raises(EmulatorCompileError, match="REGISTER_TILING_DEFAULT"):
        run_source(src, "by_macro", [x, z, short], 1)


# ------------------------------------------------------------ predefined macros, arch guards
ARCHQ = HEADER + r"""
__global__ __vector__ void archq(GM_ADDR out) {
    GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t*)out, 8);
    o.SetValue(0, __NPU_ARCH__);
#ifdef __CCE_AICORE__
    o.SetValue(1, __CCE_AICORE__);
#endif
#ifdef ASCENDC_CPU_DEBUG
    o.SetValue(2, 1);
#endif
#if __NPU_ARCH__ == 2201
    o.SetValue(3, 22);
#elif __NPU_ARCH__ == 3510
    o.SetValue(3, 35);
#endif
    o.SetValue(4, (int32_t)GetUBSizeInBytes() / 1024);
    o.SetValue(5, ONE_BLK_SIZE + ONE_REPEAT_BYTE_SIZE + BLOCK_CUBE);
    o.SetValue(6, IsSameType<half, AscendC::half>::value && !IsSameType<half, float>::value);
}
"""


@pytest.mark.parametrize("arch,expect", [("dav-c220", [2201, 220, 0, 22, 184, 304, 1]),
                                         ("dav-3510", [3510, 0, 0, 35, 248, 304, 1])])
def test_npu_arch_macros(arch, expect):
    out = torch.zeros(8, dtype=torch.int32)
    run_source(ARCHQ, "archq", [out], 1, arch=arch)
    assert out[:7].tolist() == expect


# ------------------------------------------------------------------- assert, DumpTensor
DEBUG = HEADER + r"""
__global__ __vector__ void dbg(GM_ADDR x, int32_t limit) {
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<float> t = ub.Alloc<float, 8>();
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)x, 8);
    DataCopy(t, g, 8);
    SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
    DumpTensor(t, 7, 4);
    ascendc_assert(limit < 5, "limit is %d", limit);  // ASSERT-LINE
}
"""


def test_ascendc_assert_and_dump_tensor(capfd):
    x = torch.arange(8, dtype=torch.float32)
    run_source(DEBUG, "dbg", [x, 1], 1, arch="dav-c220")
    out = capfd.readouterr().out
    assert "DumpTensor: desc=7, addr=0, data_type=float32, position=UB, dump_size=4" in out
    assert "[0.000000, 1.000000, 2.000000, 3.000000]" in out
    with pytest.raises(EmulatorError, match=r"Assertion `limit < 5' failed: limit is 9") as ei:
        run_source(DEBUG, "dbg", [x, 9], 1, arch="dav-3510")
    err = ei.value.report.errors[0]
    assert err["kind"] == "assert" and err["line"] == line_of(DEBUG, "ASSERT-LINE")


# DumpTensor right after the op that writes the tensor, with no sync (as the official
# batch_matmul example dumps an L1 tensor after its Fixpipe): it shows the written data and
# races with nothing; a DataCopy after it still needs its own sync with the earlier copy.
DUMP_NOSYNC = HEADER + r"""
__global__ __vector__ void dump_now(GM_ADDR x, GM_ADDR y) {
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<float> t = ub.Alloc<float, 8>();
    GlobalTensor<float> g, h;
    g.SetGlobalBuffer((__gm__ float*)x, 8);
    h.SetGlobalBuffer((__gm__ float*)y, 8);
    DataCopy(t, g, 8);
    DumpTensor(t, 3, 8);
    Muls(t, t, 2.0f, 8);
    DataCopy(h, t, 8);  // @OUT: V -> MTE3 unsynchronised
}
"""


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_dump_tensor_waits_for_earlier_work(capfd, arch):
    x = torch.arange(8, dtype=torch.float32)
    rep = run(DUMP_NOSYNC, [x, torch.zeros(8)], arch=arch)
    out = capfd.readouterr().out
    assert "[0.000000, 1.000000, 2.000000, 3.000000, 4.000000, 5.000000, 6.000000, 7.000000]" in out
    # the only race left: Muls (V) -> DataCopy (MTE3) after the dump, which nothing orders
    assert rep.races and all(r["second"]["line"] == line_of(DUMP_NOSYNC, "@OUT") for r in rep.races), rep.summary()


# --------------------------------------------------------------------------- fp8 storage types
FP8 = HEADER + r"""
__global__ __vector__ void conv(GM_ADDR x, GM_ADDR e4, GM_ADDR e5, GM_ADDR back4, GM_ADDR back5, uint32_t n) {
    GlobalTensor<float> xg, b4, b5;
    GlobalTensor<fp8_e4m3fn_t> g4;
    GlobalTensor<fp8_e5m2_t> g5;
    xg.SetGlobalBuffer((__gm__ float*)x, n);
    g4.SetGlobalBuffer((__gm__ fp8_e4m3fn_t*)e4, n);
    g5.SetGlobalBuffer((__gm__ fp8_e5m2_t*)e5, n);
    b4.SetGlobalBuffer((__gm__ float*)back4, 256);
    b5.SetGlobalBuffer((__gm__ float*)back5, 256);
    for (uint32_t i = 0; i < n; ++i) {
        g4.SetValue(i, fp8_e4m3fn_t(xg.GetValue(i)));
        g5.SetValue(i, fp8_e5m2_t(xg.GetValue(i)));
    }
    for (uint32_t c = 0; c < 256; ++c) {
        b4.SetValue(c, (float)fp8_e4m3fn_t::from_bits((uint8_t)c));
        b5.SetValue(c, (float)fp8_e5m2_t::from_bits((uint8_t)c));
    }
}
"""


def test_fp8_conversions_are_bit_exact_against_torch():
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.randn(2000, generator=g) * 4, torch.randn(500, generator=g) * 1e-3,
                   torch.tensor([0.0, -0.0, 448.0, 449.0, 463.9, 57344.0, 61000.0, 1e-9, 2.0 ** -9, 2.0 ** -10, 1e6, -1e6, float('inf'), -float('inf')])])
    n = x.numel()
    e4, e5 = torch.zeros(n, dtype=torch.uint8), torch.zeros(n, dtype=torch.uint8)
    b4, b5 = torch.zeros(256), torch.zeros(256)
    run_source(FP8, "conv", [x, e4, e5, b4, b5, n], 1, arch="dav-3510")
    assert torch.equal(e4, x.to(torch.float8_e4m3fn).view(torch.uint8))
    assert torch.equal(e5, x.to(torch.float8_e5m2).view(torch.uint8))
    codes = torch.arange(256, dtype=torch.uint8)
    for got, dt in ((b4, torch.float8_e4m3fn), (b5, torch.float8_e5m2)):
        ref = codes.view(dt).float()
        assert torch.equal(got.isnan(), ref.isnan())
        assert torch.equal(got[~ref.isnan()], ref[~ref.isnan()])


def test_fp8_e8m0_decodes_like_torch():
    src = HEADER + r"""
__global__ __vector__ void e8(GM_ADDR out, GM_ADDR enc) {
    GlobalTensor<float> o; o.SetGlobalBuffer((__gm__ float*)out, 256);
    GlobalTensor<uint8_t> e; e.SetGlobalBuffer((__gm__ uint8_t*)enc, 4);
    for (uint32_t c = 0; c < 256; ++c) o.SetValue(c, (float)fp8_e8m0_t::from_bits((uint8_t)c));
    e.SetValue(0, fp8_e8m0_t(1.0f).bits()); e.SetValue(1, fp8_e8m0_t(0.75f).bits());
    e.SetValue(2, fp8_e8m0_t(1024.0f).bits()); e.SetValue(3, fp8_e8m0_t(NAN).bits());
}
"""
    out, enc = torch.zeros(256), torch.zeros(4, dtype=torch.uint8)
    run_source(src, "e8", [out, enc], 1, arch="dav-3510")
    ref = torch.arange(256, dtype=torch.uint8).view(torch.float8_e8m0fnu).float()
    assert torch.equal(out.isnan(), ref.isnan()) and torch.equal(out[:255], ref[:255])
    assert enc.tolist() == [127, 126, 137, 255]


# ------------------------------------------------ cube entry, queue-based, V220 params on both
CUBE = HEADER + r"""
template <uint32_t M, uint32_t K, uint32_t N>
__global__ __cube__ void mm(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    TPipe pipe;
    TQue<TPosition::A1, 1> qa1; TQue<TPosition::B1, 1> qb1;
    TQue<TPosition::A2, 1> qa2; TQue<TPosition::B2, 1> qb2;
    TQue<TPosition::CO1, 1> qc1;
    pipe.InitBuffer(qa1, 1, M * K * sizeof(half));
    pipe.InitBuffer(qb1, 1, K * N * sizeof(half));
    pipe.InitBuffer(qa2, 1, M * K * sizeof(half));
    pipe.InitBuffer(qb2, 1, K * N * sizeof(half));
    pipe.InitBuffer(qc1, 1, M * N * sizeof(float));
    GlobalTensor<half> ag, bg; GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, M * K);
    bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    LocalTensor<half> a1 = qa1.AllocTensor<half>(), b1 = qb1.AllocTensor<half>();
    DataCopy(a1, ag, Nd2NzParams(1, M, K, 0, K, M, 1, 0));
    DataCopy(b1, bg, Nd2NzParams(1, K, N, 0, N, K, 1, 0));
    qa1.EnQue(a1); qb1.EnQue(b1);
    a1 = qa1.DeQue<half>(); b1 = qb1.DeQue<half>();
    LocalTensor<half> a2 = qa2.AllocTensor<half>(), b2 = qb2.AllocTensor<half>();
    // LoadData2DParams on both arches (dav-3510 accepts it for L1 -> L0A/L0B)
#if __NPU_ARCH__ == 3510
    // L0A holds A in NZ on dav-3510: the fractals of L1 in order
    LoadData(a2, a1, LoadData2DParams(0, (M / 16) * (K / 16), 1, 0, 0, false, 0));
#else
    // L0A holds A in ZZ on dav-c220: one LoadData per 16-row block
    for (uint32_t i = 0; i < M / 16; ++i)
        LoadData(a2[i * K * 16], a1[i * 256], LoadData2DParams(0, K / 16, M / 16, 0, 0, false, 0));
#endif
    for (uint32_t i = 0; i < K / 16; ++i)
        LoadData(b2[i * N * 16], b1[i * 256], LoadData2DParams(0, N / 16, K / 16, 0, 0, true, 0));
    qa2.EnQue(a2); qb2.EnQue(b2);
    qa1.FreeTensor(a1); qb1.FreeTensor(b1);
    a2 = qa2.DeQue<half>(); b2 = qb2.DeQue<half>();
    LocalTensor<float> c1 = qc1.AllocTensor<float>();
    Mmad(c1, a2, b2, MmadParams(M, N, K, 0, false, true));
    qc1.EnQue(c1);
    qa2.FreeTensor(a2); qb2.FreeTensor(b2);
    c1 = qc1.DeQue<float>();
    FixpipeParamsV220 fp(N, M, M, N, false);   // FixpipeParamsV220 on both arches
    Fixpipe<float, float, CFG_ROW_MAJOR>(cg, c1, fp);
    qc1.FreeTensor(c1);
}
"""


@pytest.mark.parametrize("arch", ARCHES)
def test_cube_entry_queue_matmul_with_v220_params(arch):
    g = torch.Generator().manual_seed(4)
    a = torch.randn(32, 64, generator=g).half()
    b = torch.randn(64, 48, generator=g).half()
    c = torch.zeros(32, 48)
    rep = run_source(CUBE, "mm<32, 64, 48>", [a, b, c], 1, arch=arch)
    assert rep.kernel_type == "AIC_ONLY"
    torch.testing.assert_close(c, (a.double() @ b.double()).float(), rtol=1e-5, atol=1e-4)


# --------------------------------------------------------------- mixed Cube + Vector entry
MIX = HEADER + r"""
__global__ __mix__(1, 2) void mixk(GM_ADDR x, GM_ADDR z) {
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<2, PIPE_S>(3);
        return;
    }
    CrossCoreWaitFlag<2, PIPE_S>(3);
    GlobalTensor<float> xg, zg;
    int64_t i = GetBlockIdx();
    xg.SetGlobalBuffer((__gm__ float*)x + i * 8, 8);
    zg.SetGlobalBuffer((__gm__ float*)z + i * 8, 8);
    for (int j = 0; j < 8; ++j) zg.SetValue(j, xg.GetValue(j) * 2.0f + (float)GetSubBlockIdx());
}
"""


@pytest.mark.parametrize("arch", ARCHES)
def test_mix_entry_runs_one_aic_and_two_aivs_per_block(arch):
    x = torch.randn(2 * 2 * 8)
    z = torch.zeros_like(x)
    rep = run_source(MIX, "mixk", [x, z], 2, arch=arch)
    assert rep.kernel_type == "MIX_AIC_1_2"
    sub = torch.tensor([0.0, 1.0]).repeat_interleave(8).repeat(2)
    assert torch.equal(z, x * 2 + sub)


def test_struct_pack_of_dict_matches_c_layout():
    # the dict path lays fields out like the C compiler (natural alignment, padding)
    src = HEADER + r"""
struct P { uint8_t a; uint32_t b; half h; uint64_t c; };
__global__ __vector__ void k(GM_ADDR out, P p) {
    GlobalTensor<float> o; o.SetGlobalBuffer((__gm__ float*)out, 4);
    o.SetValue(0, (float)p.a); o.SetValue(1, (float)p.b); o.SetValue(2, (float)p.h); o.SetValue(3, (float)p.c);
}
"""
    out = torch.zeros(4)
    hbits = struct.unpack("<H", struct.pack("<e", 0.5))[0]
    run_source(src, "k", [out, {"a": 7, "b": 70000, "h": hbits, "c": 1 << 40}], 1)
    assert out.tolist() == [7.0, 70000.0, 0.5, float(1 << 40)]
