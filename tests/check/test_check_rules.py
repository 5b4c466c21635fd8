"""tl-ascend check on small hand-written programs in the official forms: each planted bug is
reported at its line with its rule, and the correct twin of each program is clean."""

from __future__ import annotations

import pytest
from check_helpers import checks, drop, found, insert_before, line_of, src

# ---------------------------------------------------------------------------------------------
# Clean programs in the official forms
# ---------------------------------------------------------------------------------------------
TQUE_ADD = src("""
    #include "kernel_operator.h"
    constexpr int32_t TILE = 1024;
    constexpr int32_t BUFFER_NUM = 2;

    class KernelAdd {
    public:
        __aicore__ inline KernelAdd() {}
        __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t tiles)
        {
            this->tiles = tiles;
            xGm.SetGlobalBuffer((__gm__ half*)x + AscendC::GetBlockIdx() * TILE * tiles, TILE * tiles);
            yGm.SetGlobalBuffer((__gm__ half*)y + AscendC::GetBlockIdx() * TILE * tiles, TILE * tiles);
            zGm.SetGlobalBuffer((__gm__ half*)z + AscendC::GetBlockIdx() * TILE * tiles, TILE * tiles);
            pipe.InitBuffer(inQueueX, BUFFER_NUM, TILE * sizeof(half));
            pipe.InitBuffer(inQueueY, BUFFER_NUM, TILE * sizeof(half));
            pipe.InitBuffer(outQueueZ, BUFFER_NUM, TILE * sizeof(half));
        }
        __aicore__ inline void Process()
        {
            for (int32_t i = 0; i < tiles; i++) {
                CopyIn(i);
                Compute(i);
                CopyOut(i);
            }
        }

    private:
        __aicore__ inline void CopyIn(int32_t progress)
        {
            AscendC::LocalTensor<half> xLocal = inQueueX.AllocTensor<half>();
            AscendC::LocalTensor<half> yLocal = inQueueY.AllocTensor<half>();
            AscendC::DataCopy(xLocal, xGm[progress * TILE], TILE);
            AscendC::DataCopy(yLocal, yGm[progress * TILE], TILE);
            inQueueX.EnQue(xLocal);
            inQueueY.EnQue(yLocal);
        }
        __aicore__ inline void Compute(int32_t progress)
        {
            AscendC::LocalTensor<half> xLocal = inQueueX.DeQue<half>();
            AscendC::LocalTensor<half> yLocal = inQueueY.DeQue<half>();
            AscendC::LocalTensor<half> zLocal = outQueueZ.AllocTensor<half>();
            AscendC::Add(zLocal, xLocal, yLocal, TILE);
            outQueueZ.EnQue<half>(zLocal);
            inQueueX.FreeTensor(xLocal);
            inQueueY.FreeTensor(yLocal);
        }
        __aicore__ inline void CopyOut(int32_t progress)
        {
            AscendC::LocalTensor<half> zLocal = outQueueZ.DeQue<half>();
            AscendC::DataCopy(zGm[progress * TILE], zLocal, TILE);
            outQueueZ.FreeTensor(zLocal);
        }

        AscendC::TPipe pipe;
        AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inQueueX, inQueueY;
        AscendC::TQue<AscendC::TPosition::VECOUT, BUFFER_NUM> outQueueZ;
        AscendC::GlobalTensor<half> xGm, yGm, zGm;
        uint32_t tiles;
    };

    extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t tiles)
    {
        KernelAdd op;
        op.Init(x, y, z, tiles);
        op.Process();
    }
""")

STATIC_ADD = src("""
    #include "kernel_operator.h"
    constexpr uint32_t N = 2048;

    __global__ __vector__ void add_static(__gm__ uint8_t* x, __gm__ uint8_t* y, __gm__ uint8_t* z)
    {
        AscendC::GlobalTensor<float> xGm, yGm, zGm;
        xGm.SetGlobalBuffer((__gm__ float*)x, N);
        yGm.SetGlobalBuffer((__gm__ float*)y, N);
        zGm.SetGlobalBuffer((__gm__ float*)z, N);
        AscendC::LocalMemAllocator<AscendC::Hardware::UB> ub;
        AscendC::LocalTensor<float> xLocal = ub.Alloc<float, N>();
        AscendC::LocalTensor<float> yLocal = ub.Alloc<float, N>();
        AscendC::LocalTensor<float> zLocal = ub.Alloc<float, N>();
        AscendC::DataCopy(xLocal, xGm, N);
        AscendC::DataCopy(yLocal, yGm, N);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);   // @set
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);  // @wait
        AscendC::Add(zLocal, xLocal, yLocal, N);                    // @add
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
        AscendC::DataCopy(zGm, zLocal, N);
        AscendC::PipeBarrier<PIPE_ALL>();
    }
""")

# double buffering through a loop: prime the reverse flags, wait at the top, set when the slot is
# consumed, drain after the loop (ids from the slot, slot = i % 2)
PINGPONG = src("""
    #include "kernel_operator.h"
    using namespace AscendC;
    __global__ __vector__ void scale(GM_ADDR x, GM_ADDR y, int32_t tiles)
    {
        GlobalTensor<float> xGm, yGm;
        xGm.SetGlobalBuffer((__gm__ float*)x);
        yGm.SetGlobalBuffer((__gm__ float*)y);
        TPipe pipe;
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, 4 * 4096);
        LocalTensor<float> in = buf.GetWithOffset<float>(2048, 0);
        LocalTensor<float> out = buf.GetWithOffset<float>(2048, 8192);
        SetFlag<HardEvent::V_MTE2>(0);                         // @prime0
        SetFlag<HardEvent::V_MTE2>(1);                         // @prime1
        SetFlag<HardEvent::MTE3_V>(0);
        SetFlag<HardEvent::MTE3_V>(1);
        for (int32_t i = 0; i < tiles; ++i) {
            int32_t slot = i % 2;
            LocalTensor<float> a = in[slot * 1024];
            LocalTensor<float> b = out[slot * 1024];
            WaitFlag<HardEvent::V_MTE2>(slot);                 // @topwait
            DataCopy(a, xGm[i * 1024], 1024);
            SetFlag<HardEvent::MTE2_V>(slot);
            WaitFlag<HardEvent::MTE2_V>(slot);
            WaitFlag<HardEvent::MTE3_V>(slot);
            Muls(b, a, 2.0f, 1024);                            // @muls
            SetFlag<HardEvent::V_MTE2>(slot);                  // @release
            SetFlag<HardEvent::V_MTE3>(slot);
            WaitFlag<HardEvent::V_MTE3>(slot);
            DataCopy(yGm[i * 1024], b, 1024);
            SetFlag<HardEvent::MTE3_V>(slot);
        }
        WaitFlag<HardEvent::V_MTE2>(0);                        // @drain0
        WaitFlag<HardEvent::V_MTE2>(1);                        // @drain1
        WaitFlag<HardEvent::MTE3_V>(0);
        WaitFlag<HardEvent::MTE3_V>(1);
    }
""")


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
@pytest.mark.parametrize("auto_sync", [True, False])
@pytest.mark.parametrize("name", ["tque", "static", "pingpong"])
def test_official_forms_are_clean(name, arch, auto_sync):
    text = {"tque": TQUE_ADD, "static": STATIC_ADD, "pingpong": PINGPONG}[name]
    assert found(text, arch=arch, auto_sync=auto_sync) == set()


# ---------------------------------------------------------------------------------------------
# Planted bugs in the intra-core flags
# ---------------------------------------------------------------------------------------------
def test_wait_never_set():
    bad = STATIC_ADD.replace("WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);  // @wait",
                             "WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID1);  // @wait")
    got = found(bad)
    assert ("wait-without-set", line_of(bad, "wait"), "error") in got
    assert ("set-never-waited", line_of(bad, "set"), "error") in got
    # and the Add is no longer ordered after the copies
    assert ("missing-sync", line_of(bad, "add"), "error") in got


def test_double_set():
    bad = insert_before(STATIC_ADD, "wait", "AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);  // @again")
    assert ("double-set", line_of(bad, "again"), "error") in found(bad)


def test_event_id_out_of_range_and_reserved():
    bad = STATIC_ADD.replace("MTE2_V>(EVENT_ID0);   // @set", "MTE2_V>(9);   // @set")
    assert ("event-id-range", line_of(bad, "set"), "error") in found(bad)
    seven = STATIC_ADD.replace("MTE2_V>(EVENT_ID0)", "MTE2_V>(EVENT_ID7)")
    got = found(seven)
    assert ("event-id-reserved", line_of(seven, "set"), "warning") in got
    assert not [g for g in got if g[2] == "error"]


def test_event_of_the_other_core():
    bad = STATIC_ADD.replace("MTE2_V>(EVENT_ID0);   // @set", "M_V>(EVENT_ID0);   // @set")
    assert ("event-not-on-core", line_of(bad, "set"), "error") in found(bad)


def test_pingpong_without_prime_or_drain():
    no_prime = drop(PINGPONG, "prime1")
    assert ("wait-without-set", line_of(no_prime, "topwait"), "error") in found(no_prime)
    no_drain = drop(PINGPONG, "drain1")
    # the set of the last iteration of slot 1 (or the prime, for a single iteration) stays set
    got = found(no_drain)
    assert {c for c, _, _ in got} == {"set-never-waited"}
    assert {ln for _, ln, _ in got} <= {line_of(no_drain, "release"), line_of(no_drain, "prime1")}


def test_pingpong_release_forgotten_is_a_wait_without_set_on_the_second_lap():
    bad = drop(PINGPONG, "release")
    got = found(bad)
    assert ("wait-without-set", line_of(bad, "topwait"), "error") in got or \
        ("wait-without-set", line_of(bad, "drain0"), "error") in got


def test_flag_set_on_one_branch_only():
    text = src("""
        #include "kernel_operator.h"
        using namespace AscendC;
        __global__ __vector__ void k(GM_ADDR x, int32_t n)
        {
            if (n > 4) {
                SetFlag<HardEvent::V_MTE3>(0);
            }
            WaitFlag<HardEvent::V_MTE3>(0);   // @w
        }
    """)
    got = [d for d in __import__("ascend_backend.check", fromlist=["check_source"]).check_source(text)]
    assert [(d.check, d.line) for d in got] == [("wait-without-set", line_of(text, "w"))]
    assert "n < 5" in got[0].message or "4 < n" in got[0].message  # names the path


def test_correlated_branches_are_not_a_false_report():
    text = src("""
        #include "kernel_operator.h"
        using namespace AscendC;
        __global__ __vector__ void k(GM_ADDR x, int32_t n)
        {
            if (GetBlockIdx() % 2 == 0) {
                SetFlag<HardEvent::V_MTE3>(0);
            }
            Duplicate(LocalTensor<float>(TPosition::VECCALC, 0, 64), 1.0f, 64);
            if (GetBlockIdx() % 2 == 0) {
                WaitFlag<HardEvent::V_MTE3>(0);
            }
        }
    """)
    assert found(text) == set()


# ---------------------------------------------------------------------------------------------
# Barriers, auto-sync and the data dependencies
# ---------------------------------------------------------------------------------------------
VV = src("""
    #include "kernel_operator.h"
    using namespace AscendC;
    __global__ __vector__ void vv(GM_ADDR x, GM_ADDR y)
    {
        GlobalTensor<float> xGm, yGm;
        xGm.SetGlobalBuffer((__gm__ float*)x, 1024);
        yGm.SetGlobalBuffer((__gm__ float*)y, 1024);
        LocalTensor<float> a(TPosition::VECCALC, 0, 1024);
        LocalTensor<float> b(TPosition::VECCALC, 4096, 1024);
        DataCopy(a, xGm, 1024);
        SetFlag<HardEvent::MTE2_V>(0);
        WaitFlag<HardEvent::MTE2_V>(0);
        Exp(b, a, 1024);
        Muls(a, b, 0.5f, 1024);                    // @muls
        float first = a.GetValue(0);               // @get
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(yGm, a, 1024);
    }
""")


def test_vector_after_vector_needs_a_barrier_on_c220_without_auto_sync():
    got = found(VV, arch="dav-c220", auto_sync=False)
    assert ("missing-barrier", line_of(VV, "muls"), "error") in got
    # the scalar read after a vector write needs V_S without auto-sync
    assert ("missing-sync", line_of(VV, "get"), "error") in got
    assert found(VV, arch="dav-c220", auto_sync=True) == set()  # bisheng inserts both
    assert checks(VV, arch="dav-3510", auto_sync=False) == {"missing-sync"}  # V is ordered on 3510
    fixed = VV.replace("    Muls(a, b,", "    PipeBarrier<PIPE_V>();\n    Muls(a, b,")
    assert "missing-barrier" not in checks(fixed, arch="dav-c220", auto_sync=False)


def test_missing_cross_pipe_flag_is_an_error_even_with_auto_sync():
    bad = drop(STATIC_ADD, "set", "wait")
    got = found(bad, auto_sync=True)
    assert {c for c, _, _ in got} == {"missing-sync"}
    assert {ln for _, ln, _ in got} == {line_of(bad, "add")}
    msg = [d.message for d in __import__("ascend_backend.check", fromlist=["x"]).check_source(bad)][0]
    assert "MTE2_V" in msg and "RAW" in msg


def test_pipe_all_inside_a_loop_is_a_warning():
    text = src("""
        #include "kernel_operator.h"
        using namespace AscendC;
        __global__ __vector__ void k(GM_ADDR x, GM_ADDR y, int32_t n)
        {
            GlobalTensor<float> xGm;
            xGm.SetGlobalBuffer((__gm__ float*)x);
            LocalTensor<float> a(TPosition::VECCALC, 0, 256);
            for (int32_t i = 0; i < n; ++i) {
                DataCopy(a, xGm[i * 256], 256);
                PipeBarrier<PIPE_ALL>();           // @all
                DataCopy(xGm[i * 256], a, 256);
                PipeBarrier<PIPE_ALL>();
            }
        }
    """)
    got = found(text)
    assert ("pipe-all-in-loop", line_of(text, "all"), "warning") in got
    assert not [g for g in got if g[2] == "error"]


def test_overlapping_copies_without_barrier():
    text = src("""
        #include "kernel_operator.h"
        using namespace AscendC;
        __global__ __vector__ void k(GM_ADDR x, GM_ADDR y)
        {
            GlobalTensor<half> xGm, yGm;
            xGm.SetGlobalBuffer((__gm__ half*)x, 4096);
            yGm.SetGlobalBuffer((__gm__ half*)y, 4096);
            LocalTensor<half> a(TPosition::VECIN, 0, 2048);
            DataCopy(a, xGm, 1024);
            DataCopy(a[512], yGm, 1024);           // @second
            SetFlag<HardEvent::MTE2_MTE3>(0);
            WaitFlag<HardEvent::MTE2_MTE3>(0);
            DataCopy(yGm, a, 1536);
            DataCopy(yGm[1024], a, 512);           // @gm
        }
    """)
    got = found(text)
    assert ("overlapping-copies", line_of(text, "second"), "error") in got
    assert ("overlapping-copies", line_of(text, "gm"), "error") in got
    fixed = insert_before(text, "second", "PipeBarrier<PIPE_MTE2>();")
    assert line_of(fixed, "second") not in {ln for c, ln, _ in found(fixed) if c == "overlapping-copies"}
    disjoint = text.replace("DataCopy(a[512], yGm, 1024);", "DataCopy(a[1024], yGm, 1024);")
    assert ("overlapping-copies", line_of(disjoint, "second"), "error") not in found(disjoint)


def test_read_of_a_buffer_never_written():
    text = src("""
        #include "kernel_operator.h"
        using namespace AscendC;
        __global__ __vector__ void k(GM_ADDR y)
        {
            GlobalTensor<float> yGm;
            yGm.SetGlobalBuffer((__gm__ float*)y, 64);
            LocalTensor<float> a(TPosition::VECCALC, 0, 64);
            LocalTensor<float> b(TPosition::VECCALC, 256, 64);
            Duplicate(a, 0.0f, 64);
            Add(b, a, b, 64);                       // @add
            SetFlag<HardEvent::V_MTE3>(0);
            WaitFlag<HardEvent::V_MTE3>(0);
            DataCopy(yGm, b, 64);
        }
    """)
    assert found(text) == {("read-never-written", line_of(text, "add"), "warning")}


# ---------------------------------------------------------------------------------------------
# Cross-core flags
# ---------------------------------------------------------------------------------------------
MIX = src("""
    #include "kernel_operator.h"
    using namespace AscendC;
    __global__ __mix__(1, 2) void mix(GM_ADDR ab, GM_ADDR ws, GM_ADDR y)
    {
        GlobalTensor<half> abGm;
        abGm.SetGlobalBuffer((__gm__ half*)ab, 4096);
        GlobalTensor<float> wsGm, yGm;
        wsGm.SetGlobalBuffer((__gm__ float*)ws, 8192);
        yGm.SetGlobalBuffer((__gm__ float*)y, 8192);
        if ASCEND_IS_AIC {
            LocalTensor<float> c(TPosition::CO1, 0, 4096);
            LocalTensor<half> a1(TPosition::A1, 0, 4096);
            LocalTensor<half> a2(TPosition::A2, 0, 4096);
            LocalTensor<half> b2(TPosition::B2, 0, 4096);
            DataCopy(a1, abGm, 4096);
            SetFlag<HardEvent::MTE2_MTE1>(0);
            WaitFlag<HardEvent::MTE2_MTE1>(0);
            LoadData(a2, a1, LoadData2DParams{0, 16, 1, 0, 0, false, 0});
            LoadData(b2, a1, LoadData2DParams{0, 16, 1, 0, 0, false, 0});
            SetFlag<HardEvent::MTE1_M>(0);
            WaitFlag<HardEvent::MTE1_M>(0);
            for (int32_t k = 0; k < 2; ++k) {
                Mmad(c, a2, b2, MmadParams{64, 64, 64, 0, false, true});
                SetFlag<HardEvent::M_FIX>(0);
                WaitFlag<HardEvent::M_FIX>(0);
                CrossCoreWaitFlag(1);                                       // @aicwait
                Fixpipe(wsGm[GetBlockIdx() * 4096], c, FixpipeParamsV220{64, 64, 64, 64, false});  // @fix
                CrossCoreSetFlag<2, PIPE_FIX>(0);                           // @aicset
                SetFlag<HardEvent::FIX_M>(0);
                WaitFlag<HardEvent::FIX_M>(0);
            }
            CrossCoreWaitFlag(1);                                           // @drain
        }
        if ASCEND_IS_AIV {
            LocalTensor<float> v(TPosition::VECCALC, 0, 2048);
            CrossCoreSetFlag<2, PIPE_MTE2>(1);                              // @prime
            for (int32_t k = 0; k < 2; ++k) {
                CrossCoreWaitFlag(0);                                       // @aivwait
                DataCopy(v, wsGm[GetBlockIdx() * 2048], 2048);              // @read
                CrossCoreSetFlag<2, PIPE_MTE2>(1);                          // @free
                SetFlag<HardEvent::MTE2_MTE3>(0);
                WaitFlag<HardEvent::MTE2_MTE3>(0);
                DataCopy(yGm[GetBlockIdx() * 2048], v, 2048);
                SetFlag<HardEvent::MTE3_MTE2>(0);
                WaitFlag<HardEvent::MTE3_MTE2>(0);
            }
        }
    }
""")


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_mix_kernel_with_ready_and_free_flags_is_clean(arch):
    assert found(MIX, arch=arch, auto_sync=False) == set()


def test_cross_core_ready_flag_deleted_is_a_race():
    bad = drop(MIX, "aivwait", "aicset")
    got = found(bad, auto_sync=False)
    assert ("cross-core-race", line_of(bad, "read"), "error") in got


def test_cross_core_unbalanced():
    bad = insert_before(MIX, "aicset", "CrossCoreSetFlag<2, PIPE_FIX>(0);   // @extra")
    got = checks(bad, auto_sync=False)
    assert "cross-core-unmatched" in got


def test_cross_core_deadlock():
    bad = drop(MIX, "prime")
    got = found(bad, auto_sync=False)
    assert ("cross-core-deadlock", line_of(bad, "aicwait"), "error") in got


def test_cross_core_ids_and_modes():
    bad = MIX.replace("CrossCoreSetFlag<2, PIPE_FIX>(0);", "CrossCoreSetFlag<2, PIPE_FIX>(17);")
    assert ("cross-core-id", line_of(bad, "aicset"), "error") in found(bad, auto_sync=False)
    mode4 = MIX.replace("CrossCoreSetFlag<2, PIPE_FIX>(0);", "CrossCoreSetFlag<4, PIPE_FIX>(0);")
    assert ("cross-core-mode", line_of(mode4, "aicset"), "error") in found(mode4, arch="dav-c220", auto_sync=False)
    allpipe = MIX.replace("CrossCoreSetFlag<2, PIPE_FIX>(0);", "CrossCoreSetFlag<2, PIPE_ALL>(0);")
    assert ("cross-core-pipe", line_of(allpipe, "aicset"), "error") in found(allpipe, auto_sync=False)


def test_cross_core_flags_in_a_vector_only_kernel():
    text = src("""
        #include "kernel_operator.h"
        __global__ __vector__ void k(GM_ADDR x)
        {
            AscendC::CrossCoreSetFlag<0, PIPE_MTE3>(0);   // @set
            AscendC::CrossCoreWaitFlag(0);
        }
    """)
    assert ("cross-core-kernel-type", line_of(text, "set"), "error") in found(text)
    mixed = text.replace("__global__ __vector__", "__global__ __mix__(0, 1)")
    assert found(mixed) == set()


def test_mode4_ids_on_3510():
    text = src("""
        #include "kernel_operator.h"
        using namespace AscendC;
        __global__ __mix__(1, 2) void k(GM_ADDR x)
        {
            if ASCEND_IS_AIC {
                CrossCoreSetFlag<4, PIPE_FIX>(3);
                CrossCoreSetFlag<4, PIPE_FIX>(19);
            }
            if ASCEND_IS_AIV {
                CrossCoreWaitFlag<4, PIPE_V>(3);
            }
        }
    """)
    assert found(text) == set()  # 3 reaches AIV0, 19 reaches AIV1 as 3
    one = text.replace("CrossCoreSetFlag<4, PIPE_FIX>(19);", "")
    assert "cross-core-deadlock" in checks(one)


# dav-3510's dual-destination Fixpipe (dualDstCtl = 1, L0C Buffer到UB双目标模式 page): one op on the
# AIC writes rows [0, 32) into AIV 0's UB and rows [32, 64) into AIV 1's, at the same address.
DUAL = src("""
    #include "kernel_operator.h"
    using namespace AscendC;
    constexpr FixpipeConfig CFG_ROW_MAJOR_UB = {CO2Layout::ROW_MAJOR, true};
    __global__ __mix__(1, 2) void dual(GM_ADDR ab, GM_ADDR y)
    {
        GlobalTensor<half> abGm;
        abGm.SetGlobalBuffer((__gm__ half*)ab, 4096);
        GlobalTensor<float> yGm;
        yGm.SetGlobalBuffer((__gm__ float*)y, 4096);
        if ASCEND_IS_AIC {
            LocalTensor<float> c(TPosition::CO1, 0, 4096);
            LocalTensor<half> a1(TPosition::A1, 0, 4096);
            LocalTensor<half> a2(TPosition::A2, 0, 4096);
            LocalTensor<half> b2(TPosition::B2, 0, 4096);
            LocalTensor<float> peer(TPosition::VECCALC, 0, 2048);   // the tile in each AIV's UB
            DataCopy(a1, abGm, 4096);
            SetFlag<HardEvent::MTE2_MTE1>(0);
            WaitFlag<HardEvent::MTE2_MTE1>(0);
            LoadData(a2, a1, LoadData2DParamsV2{0, 0, 4, 4, 4, 4, false, 0});
            LoadData(b2, a1, LoadData2DParamsV2{0, 0, 4, 4, 4, 4, false, 0});
            SetFlag<HardEvent::MTE1_M>(0);
            WaitFlag<HardEvent::MTE1_M>(0);
            Mmad(c, a2, b2, MmadParams{64, 64, 64, 0, false, true});
            SetFlag<HardEvent::M_FIX>(0);
            WaitFlag<HardEvent::M_FIX>(0);
            CrossCoreSetFlag<4, PIPE_FIX>(16);                          // @early
            FixpipeParamsArch3510 fp;
            fp.nSize = 64;
            fp.mSize = 64;
            fp.srcStride = 64;
            fp.dstStride = 64;
            fp.dualDstCtl = 1;
            Fixpipe<float, float, CFG_ROW_MAJOR_UB>(peer, c, fp);      // @fix
            CrossCoreSetFlag<4, PIPE_FIX>(0);                           // @ready0
            CrossCoreSetFlag<4, PIPE_FIX>(16);                          // @ready1
        }
        if ASCEND_IS_AIV {
            LocalTensor<float> v(TPosition::VECCALC, 0, 2048);
            CrossCoreWaitFlag<4, PIPE_V>(0);                            // @wait
            Muls(v, v, 2.0f, 2048);                                     // @use
            SetFlag<HardEvent::V_MTE3>(0);
            WaitFlag<HardEvent::V_MTE3>(0);
            DataCopy(yGm[GetSubBlockIdx() * 2048], v, 2048);
        }
    }
""")


def test_dual_destination_fixpipe_writes_both_aivs_ub():
    # AIV 1's "ready" set before the Fixpipe: its half can still be landing when AIV 1 reads
    # (AIV 0's flag comes after it: no race there)
    early = drop(DUAL, "ready1")
    got = found(early, arch="dav-3510", auto_sync=False)
    assert ("cross-core-race", line_of(early, "use"), "error") in got, got
    assert found(drop(DUAL, "early"), arch="dav-3510", auto_sync=False) == set()
    # the same ops without the dual mode write AIV 0's UB only: AIV 1's early flag is then harmless
    single = drop(DUAL, "ready1").replace("fp.dualDstCtl = 1;", "")
    assert not any(c == "cross-core-race" for c, _, _ in found(single, arch="dav-3510", auto_sync=False))


# ---------------------------------------------------------------------------------------------
# Double (and triple, quadruple) buffering: slot k % m is reused m iterations later
# ---------------------------------------------------------------------------------------------
SLOTS = src("""
    #include "kernel_operator.h"
    using namespace AscendC;
    extern "C" __global__ __aicore__ void slots(GM_ADDR x, GM_ADDR y, int32_t n)
    {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
        GlobalTensor<float> xGm, yGm;
        xGm.SetGlobalBuffer((__gm__ float*)x, 8192);
        yGm.SetGlobalBuffer((__gm__ float*)y, 1024);
        LocalTensor<float> in(TPosition::VECCALC, 0, 4096);       // up to four slots of 1024 floats
        LocalTensor<float> acc(TPosition::VECCALC, 16384, 1024);
        Duplicate(acc, 0.0f, 1024);
        SetFlag<HardEvent::V_MTE2>(0);                            // @prime0
        SetFlag<HardEvent::V_MTE2>(1);                            // @prime1
        SetFlag<HardEvent::V_MTE2>(2);                            // @prime2
        SetFlag<HardEvent::V_MTE2>(3);                            // @prime3
        for (int32_t k = 0; k < 8; ++k) {
            LocalTensor<float> slot = in[(k % 2) * 1024];
            WaitFlag<HardEvent::V_MTE2>(k % 2);                   // @warwait
            DataCopy(slot, xGm[k * 1024], 1024);                  // @load
            SetFlag<HardEvent::MTE2_V>(0);
            WaitFlag<HardEvent::MTE2_V>(0);
            PipeBarrier<PIPE_V>();
            Add(acc, acc, slot, 1024);                            // @add
            SetFlag<HardEvent::V_MTE2>(k % 2);                    // @warset
        }
        WaitFlag<HardEvent::V_MTE2>(0);                           // @drain0
        WaitFlag<HardEvent::V_MTE2>(1);                           // @drain1
        WaitFlag<HardEvent::V_MTE2>(2);                           // @drain2
        WaitFlag<HardEvent::V_MTE2>(3);                           // @drain3
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(yGm, acc, 1024);
    }
""")


def _slots(ring: int, bound: str) -> str:
    """SLOTS with a ring of ``ring`` slots (flag ids 0..ring-1) and loop bound ``bound``."""
    text = SLOTS.replace("k < 8", f"k < {bound}").replace("k % 2", f"k % {ring}")
    return drop(text, *[f"{w}{i}" for w in ("prime", "drain") for i in range(ring, 4)])


WAR_FLAG = ("prime0", "prime1", "prime2", "prime3", "warwait", "warset", "drain0", "drain1", "drain2", "drain3")


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
@pytest.mark.parametrize("bound", ["8", "n"])
@pytest.mark.parametrize("ring", [2, 3, 4])
def test_slot_reused_m_iterations_later_needs_its_war_flag(arch, bound, ring):
    text = _slots(ring, bound)
    assert found(text, arch=arch, auto_sync=False) == set()
    # iterations k and k + 1 .. k + m - 1 use other slots: only the reuse by k + m is a hazard (the
    # copy of k + m overwrites what the Add of k reads, and what the copy of k wrote). With an
    # unknown bound the loop must be followed for m + 1 laps to see it.
    bad = drop(text, *WAR_FLAG)
    got = found(bad, arch=arch, auto_sync=False)
    assert ("missing-sync", line_of(bad, "load"), "error") in got
    assert ("overlapping-copies", line_of(bad, "load"), "error") in got
    # one slot for every iteration: then k + 1 is the reuse
    single = bad.replace(f"in[(k % {ring}) * 1024]", "in[0]")
    assert ("missing-sync", line_of(single, "load"), "error") in found(single, arch=arch, auto_sync=False)


# The generated FlashAttention kernels' shape: each iteration the AIVs send a tile to the Cube and
# wait for the Cube's next tile, which the Cube only produces after receiving theirs. That round trip
# orders everything an AIV did in iteration k before what it does after its wait in k + 1, so the
# slot's own WAR flag is redundant: deleting it is harmless (the emulator agrees), while without the
# Cube's wait for the AIVs' tile nothing orders the reuse.
ROUNDTRIP = src("""
    #include "kernel_operator.h"
    using namespace AscendC;
    __global__ __mix__(1, 2) void roundtrip(GM_ADDR ab, GM_ADDR ws, GM_ADDR y)
    {
        GlobalTensor<half> abGm;
        abGm.SetGlobalBuffer((__gm__ half*)ab, 4096);
        GlobalTensor<float> wsGm, yGm;
        wsGm.SetGlobalBuffer((__gm__ float*)ws, 8192);
        yGm.SetGlobalBuffer((__gm__ float*)y, 32768);
        if ASCEND_IS_AIC {
            LocalTensor<float> c(TPosition::CO1, 0, 4096);
            LocalTensor<half> a1(TPosition::A1, 0, 4096);
            LocalTensor<half> a2(TPosition::A2, 0, 4096);
            LocalTensor<half> b2(TPosition::B2, 0, 4096);
            DataCopy(a1, abGm, 4096);
            SetFlag<HardEvent::MTE2_MTE1>(0);
            WaitFlag<HardEvent::MTE2_MTE1>(0);
            LoadData(a2, a1, LoadData2DParams{0, 16, 1, 0, 0, false, 0});
            LoadData(b2, a1, LoadData2DParams{0, 16, 1, 0, 0, false, 0});
            SetFlag<HardEvent::MTE1_M>(0);
            WaitFlag<HardEvent::MTE1_M>(0);
            for (int32_t k = 0; k < 4; ++k) {
                Mmad(c, a2, b2, MmadParams{64, 64, 64, 0, false, true});
                SetFlag<HardEvent::M_FIX>(0);
                WaitFlag<HardEvent::M_FIX>(0);
                if (k > 0) {
                    CrossCoreWaitFlag(1);                               // @aicwait
                }
                Fixpipe(wsGm[GetBlockIdx() * 4096], c, FixpipeParamsV220{64, 64, 64, 64, false});
                CrossCoreSetFlag<2, PIPE_FIX>(0);
                SetFlag<HardEvent::FIX_M>(0);
                WaitFlag<HardEvent::FIX_M>(0);
            }
            CrossCoreWaitFlag(1);                                       // @aicdrain
        }
        if ASCEND_IS_AIV {
            LocalTensor<float> in(TPosition::VECCALC, 0, 4096);       // two slots of 2048 floats
            LocalTensor<float> acc(TPosition::VECCALC, 16384, 2048);
            Duplicate(acc, 0.0f, 2048);
            SetFlag<HardEvent::V_MTE2>(0);                            // @prime0
            SetFlag<HardEvent::V_MTE2>(1);                            // @prime1
            for (int32_t k = 0; k < 4; ++k) {
                LocalTensor<float> slot = in[(k % 2) * 2048];
                CrossCoreWaitFlag(0);
                WaitFlag<HardEvent::V_MTE2>(k % 2);                   // @warwait
                DataCopy(slot, wsGm[GetBlockIdx() * 2048], 2048);     // @load
                SetFlag<HardEvent::MTE2_V>(0);
                WaitFlag<HardEvent::MTE2_V>(0);
                PipeBarrier<PIPE_V>();
                Add(acc, acc, slot, 2048);
                SetFlag<HardEvent::V_MTE2>(k % 2);                    // @warset
                SetFlag<HardEvent::V_MTE3>(0);
                WaitFlag<HardEvent::V_MTE3>(0);
                DataCopy(yGm[(GetBlockIdx() * 4 + k) * 2048], acc, 2048);
                CrossCoreSetFlag<2, PIPE_MTE3>(1);
                SetFlag<HardEvent::MTE3_V>(0);
                WaitFlag<HardEvent::MTE3_V>(0);
            }
            WaitFlag<HardEvent::V_MTE2>(0);                           // @drain0
            WaitFlag<HardEvent::V_MTE2>(1);                           // @drain1
        }
    }
""")


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_slot_reuse_ordered_by_a_cross_core_round_trip(arch):
    assert found(ROUNDTRIP, arch=arch, auto_sync=False) == set()
    no_war = drop(ROUNDTRIP, *WAR_FLAG)
    assert found(no_war, arch=arch, auto_sync=False) == set()
    # the Cube no longer waits for the AIVs' tile before producing the next one (it collects the
    # four signals at the end): the round trip is gone and the reuse of the slot is unordered
    no_reply = drop(no_war, "aicwait").replace(
        "CrossCoreWaitFlag(1);                                       // @aicdrain",
        "for (int32_t k = 0; k < 4; ++k) { CrossCoreWaitFlag(1); }")
    got = found(no_reply, arch=arch, auto_sync=False)
    assert ("missing-sync", line_of(no_reply, "load"), "error") in got
    assert ("cross-core-race", line_of(no_reply, "load"), "error") in got


@pytest.mark.parametrize("form", ["LocalTensor<float> in = LocalTensor<float>(TPosition::VECCALC, 0, 4096);",
                                  "auto in = AscendC::LocalTensor<float>(TPosition::VECCALC, 0, 4096);"])
def test_local_tensor_temporary_is_a_buffer(form):
    text = _slots(2, "8").replace("LocalTensor<float> in(TPosition::VECCALC, 0, 4096);", form)
    assert form in text
    assert found(text, auto_sync=False) == set()
    bad = drop(text, *WAR_FLAG)
    assert ("missing-sync", line_of(bad, "load"), "error") in found(bad, auto_sync=False)


RING_IN_A_METHOD = src("""
    #include "kernel_operator.h"
    using namespace AscendC;
    class Ring {
    public:
        __aicore__ inline void Init(GM_ADDR x)
        {
            xGm.SetGlobalBuffer((__gm__ float*)x, 8192);
            Duplicate(acc, 0.0f, 128);
        }
        __aicore__ inline void Step(int32_t progress, int32_t rows)
        {
            LocalTensor<float> slot = in[(progress % 3) * 1024];
            WaitFlag<HardEvent::V_MTE2>(progress % 3);                // @warwait
            DataCopy(slot, xGm[progress * 1024], 1024);               // @load
            SetFlag<HardEvent::MTE2_V>(0);
            WaitFlag<HardEvent::MTE2_V>(0);
            for (int32_t r = 0; r < rows; ++r) {
                PipeBarrier<PIPE_V>();
                Add(acc, acc, slot[r * 128], 128);
            }
            SetFlag<HardEvent::V_MTE2>(progress % 3);                 // @warset
        }
        GlobalTensor<float> xGm;
        LocalTensor<float> in{TPosition::VECCALC, 0, 3072};
        LocalTensor<float> acc{TPosition::VECCALC, 16384, 128};
    };
    extern "C" __global__ __aicore__ void ring(GM_ADDR x, int32_t n, int32_t rows)
    {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
        Ring op;
        op.Init(x);
        SetFlag<HardEvent::V_MTE2>(0);                                // @prime0
        SetFlag<HardEvent::V_MTE2>(1);                                // @prime1
        SetFlag<HardEvent::V_MTE2>(2);                                // @prime2
        for (int32_t k = 0; k < n; ++k) {
            op.Step(k, rows);
        }
        WaitFlag<HardEvent::V_MTE2>(0);                               // @drain0
        WaitFlag<HardEvent::V_MTE2>(1);                               // @drain1
        WaitFlag<HardEvent::V_MTE2>(2);                               // @drain2
    }
""")


def test_ring_indexed_in_an_inlined_method_by_an_unknown_loop():
    # k reaches the ring as Step's parameter; the inner loop (unknown bound too) is not the ring's
    assert found(RING_IN_A_METHOD, auto_sync=False) == set()
    bad = drop(RING_IN_A_METHOD, *WAR_FLAG)
    got = found(bad, auto_sync=False)
    assert ("missing-sync", line_of(bad, "load"), "error") in got


UNIT_FLAGS = src("""
    #include "kernel_operator.h"
    using namespace AscendC;
    extern "C" __global__ __aicore__ void uf(GM_ADDR ab, GM_ADDR y)
    {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
        GlobalTensor<half> abGm;
        abGm.SetGlobalBuffer((__gm__ half*)ab, 4096);
        GlobalTensor<float> yGm;
        yGm.SetGlobalBuffer((__gm__ float*)y, 8192);
        LocalTensor<float> c(TPosition::CO1, 0, 4096);
        LocalTensor<half> a1(TPosition::A1, 0, 4096);
        LocalTensor<half> a2(TPosition::A2, 0, 4096);
        LocalTensor<half> b2(TPosition::B2, 0, 4096);
        DataCopy(a1, abGm, 4096);
        SetFlag<HardEvent::MTE2_MTE1>(0);
        WaitFlag<HardEvent::MTE2_MTE1>(0);
        LoadData(a2, a1, LoadData2DParams{0, 16, 1, 0, 0, false, 0});
        LoadData(b2, a1, LoadData2DParams{0, 16, 1, 0, 0, false, 0});
        SetFlag<HardEvent::MTE1_M>(0);
        WaitFlag<HardEvent::MTE1_M>(0);
        for (int32_t t = 0; t < 2; ++t) {
            for (int32_t k = 0; k < 4; ++k) {
                MmadParams mp{64, 64, 64, 0, false, k == 0};
                mp.unitFlag = (k == 3) ? 3 : 2;                                 // @mmuf
                Mmad(c, a2, b2, mp);
            }
            FixpipeParamsV220 fp{64, 64, 64, 64, false};
            fp.unitFlag = 3;                                                    // @fixuf
            Fixpipe(yGm[t * 4096], c, fp);
        }
    }
""")


def test_unit_flags_order_mmad_fixpipe_and_the_next_mmad():
    # UnitFlag page: the Fixpipe waits for the blocks the last Mmad (unitFlag 3) marked; the next
    # tile's Mmads (unitFlag 2) wait for the Fixpipe (3) to have read them. No flag needed.
    assert not {x for x in found(UNIT_FLAGS, arch="dav-c220", auto_sync=False) if x[2] == "error"}


@pytest.mark.parametrize("tag, line_tag", [("fixuf", "fixuf"), ("mmuf", "mmuf")])
def test_unit_flag_dropped_is_a_missing_sync(tag, line_tag):
    # the Fixpipe without it: M -> FIX unordered; the Mmads without it: FIX -> M (next tile) and the
    # Fixpipe's wait finds nothing marked, so M -> FIX too
    bad = drop(UNIT_FLAGS, tag)
    assert "missing-sync" in checks(bad, arch="dav-c220", auto_sync=False)
