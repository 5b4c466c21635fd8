"""FileCheck-style golden tests of the generated Ascend C: the op order, the flags and their reasons.

Every kernel checked here is also run on the emulator against torch in test_kernels_emulator.py.
"""

import elementwise
import gemm
import rmsnorm
import softmax
from filecheck import filecheck

import ascend_backend


def src(func, arch):
    return ascend_backend.lower(func, {"kind": "ascendc", "arch": arch}).source


def test_elementwise_add_c220():
    filecheck(src(elementwise.add_2d(), "dav-c220"), """
        CHECK: KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
        CHECK: TBuf<TPosition::VECCALC> ub_buf;
        CHECK: LocalTensor<half> A_s = ub_buf.GetWithOffset<half>(4096, 0);
        CHECK: DataCopyPad(A_s, A_gm[(by * 32) * 256 + (bx * 128)]
        CHECK: DataCopyPad(B_s, B_gm
        CHECK-NEXT: SetFlag<HardEvent::MTE2_V>(0);  // RAW on B_s
        CHECK-NEXT: WaitFlag<HardEvent::MTE2_V>(0);
        CHECK-NEXT: Add(C_s, A_s, B_s, 4096);
        CHECK-NEXT: SetFlag<HardEvent::V_MTE3>(0);  // RAW on C_s: 'DataCopyPad C_s -> C' (MTE3) after 'Add A_s, B_s -> C_s' (V)
        CHECK-NEXT: WaitFlag<HardEvent::V_MTE3>(0);
        CHECK-NEXT: DataCopyPad(C_gm
        CHECK-NOT: PipeBarrier
    """)


def test_gemm_c220_k_loop_is_primed_and_drained():
    filecheck(src(gemm.matmul(num_stages=1), "dav-c220"), """
        CHECK: KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
        CHECK: LocalTensor<half> A_shared = l1_buf.GetWithOffset<half>
        CHECK: A_shared_l0a: L0A 128x64xfloat16 ZZ
        CHECK: B_shared_l0b: L0B 64x128xfloat16 ZN
        CHECK: SetFlag<HardEvent::MTE1_MTE2>(0);  // prime: WAR on A_shared
        CHECK: SetFlag<HardEvent::MTE1_MTE2>(1);  // prime: WAR on B_shared
        CHECK: SetFlag<HardEvent::M_MTE1>(0);  // prime: WAR on A_shared_l0a
        CHECK: for (int32_t k = 0; k < 4; ++k)
        CHECK-NEXT: WaitFlag<HardEvent::MTE1_MTE2>(0);
        CHECK-NEXT: DataCopy(A_shared, A_gm[(by * 128) * 256 + (k * 64)], Nd2NzParams{1, (uint16_t)(128), (uint16_t)(64), 0, (uint16_t)(256), (uint16_t)(128), 1, 0});
        CHECK-NEXT: SetFlag<HardEvent::MTE2_MTE1>(0);  // RAW on A_shared
        CHECK: DataCopy(B_shared, B_gm
        CHECK: WaitFlag<HardEvent::MTE2_MTE1>(0);
        CHECK: WaitFlag<HardEvent::M_MTE1>(0);
        CHECK: LoadData(A_shared_l0a[i_ * 64 * 16], A_shared[i_ * 256], LoadData2DParams{0, (uint8_t)(64 / 16), 8, 0, 0, false, 0});
        CHECK: SetFlag<HardEvent::MTE1_MTE2>(0);
        CHECK: LoadData(B_shared_l0b[i_ * 2048], B_shared[i_ * 256], LoadData2DParams{0, 8, 4, 0, 0, true, 0});
        CHECK: SetFlag<HardEvent::MTE1_M>(0);
        CHECK: WaitFlag<HardEvent::MTE1_M>(0);
        CHECK: mp.cmatrixInitVal = (k == 0);
        # unit flags (UnitFlag page) order the accumulator's Fixpipe after the K loop's last Mmad
        CHECK-NEXT: mp.unitFlag = (k == 3) ? 3 : 2;  // unit flag, sync table #
        CHECK-NEXT: Mmad(C_local, A_shared_l0a, B_shared_l0b, mp);
        CHECK: SetFlag<HardEvent::M_MTE1>(0);
        CHECK: WaitFlag<HardEvent::MTE1_MTE2>(0);  // drain
        CHECK: WaitFlag<HardEvent::MTE1_MTE2>(1);  // drain
        CHECK: WaitFlag<HardEvent::M_MTE1>(0);  // drain
        CHECK-NOT: M_FIX
        CHECK: FixpipeParamsV220 fp;
        CHECK: fp.quantPre = QuantMode_t::F322F16;
        CHECK: fp.unitFlag = 3;  // unit flag, sync table #
        CHECK-NEXT: Fixpipe<half, float, CFG_ROW_MAJOR>(C_gm[(by * 128) * 256 + (bx * 128)], C_local, fp);
        CHECK-NOT: PIPE_ALL
    """)


def test_gemm_3510_uses_v2_params_and_nz_l0a():
    filecheck(src(gemm.matmul(trans_A=True, trans_B=True, out_dtype="bfloat16"), "dav-3510"), """
        CHECK: A_shared_l0a: L0A 128x64xfloat16 NZ
        CHECK: for (int32_t k = 0; k < 4; ++k)
        CHECK: LoadData(A_shared_l0a, A_shared, LoadData2DParamsV2{0, 0, (uint16_t)(64 / 16), (uint16_t)(8), 4, 8, true, 0});
        CHECK: LoadData(B_shared_l0b, B_shared, LoadData2DParamsV2{0, 0, (uint16_t)(8), (uint16_t)(64 / 16), 8, 8, false, 0});
        CHECK: Mmad(C_local, A_shared_l0a, B_shared_l0b, mp);
        CHECK: FixpipeParamsArch3510 fp;
        CHECK: fp.quantPre = QuantMode_t::F322BF16;
        CHECK-NOT: LoadData2DParams{
    """)


def test_gemm_k_tail_loads_only_valid_fractals():
    source = src(gemm.matmul(M=64, N=96, K=80, block_M=64, block_N=96, block_K=64), "dav-c220")
    filecheck(source, """
        CHECK: Nd2NzParams{1, (uint16_t)(64), (uint16_t)(min_i(64, 80 - ((k * 64))))
        CHECK: LoadData(A_shared_l0a[i_ * (min_i(64, 80 - ((k * 64)))) * 16]
        CHECK: mp.k = (min_i(64, 80 - ((k * 64))));
    """)


def test_softmax_c220_barriers_between_dependent_vector_ops():
    filecheck(src(softmax.softmax(), "dav-c220"), """
        CHECK: DataCopy(x_s, X_gm[(bx * 16) * 256], 4096);
        CHECK: Cast(x, x_s, RoundMode::CAST_NONE, 4096);
        CHECK-NEXT: PipeBarrier<PIPE_V>();
        CHECK-NEXT: Adds(tmp1_float32, x, 0.0f, 64, 16, UnaryRepeatParams{1, 1, 8, 32});
        CHECK: Max(tmp1_float32, tmp1_float32, x[64], 64, 16, BinaryRepeatParams{1, 1, 1, 8, 8, 32});
        CHECK: WholeReduceMax(mx, tmp1_float32, 64, 16, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
        CHECK: Brcb(tmp3_float32, mx, 2, BrcbRepeatParams{1, 8});
        CHECK: Sub(tmp2_float32[c_ * 64], x[c_ * 64], tmp3_float32[c_ * 0]
        CHECK-SAME: BinaryRepeatParams{1, 1, 0, 32, 32, 1}
        CHECK: Exp(x, tmp2_float32, 4096);
        CHECK: WholeReduceSum(sm, tmp1_float32, 64, 16, 1, 1, 8);
        CHECK: Div(x[c_ * 64], x[c_ * 64], tmp3_float32[c_ * 0]
        CHECK: Cast(x_s, x, RoundMode::CAST_RINT, 4096);
        CHECK-NEXT: SetFlag<HardEvent::V_MTE3>(0);
    """)


def test_softmax_3510_has_no_vector_barriers():
    filecheck(src(softmax.softmax(), "dav-3510"), """
        CHECK: Cast(x, x_s
        CHECK-NOT: PipeBarrier
        CHECK: DataCopy(Y_gm
    """)


def test_rmsnorm_row_and_column_broadcasts():
    filecheck(src(rmsnorm.rms_norm(), "dav-c220"), """
        CHECK: Mul(sq, x, x, 4096);
        CHECK: WholeReduceSum(ss, tmp1_float32, 64, 32, 1, 1, 8);
        CHECK: Muls(tmp2_float32, ss, 0.0078125f, 32);
        CHECK: Adds(tmp3_float32, tmp2_float32, 1e-06f, 32);
        CHECK: Rsqrt(ss, tmp3_float32, 32);
        # x * ss[i]: ss expanded one 32 B block per row, read with block stride 0
        CHECK: Brcb(tmp5_float32, ss, 4, BrcbRepeatParams{1, 8});
        CHECK: Mul(
        CHECK-SAME: BinaryRepeatParams{1, 1, 0, 16, 16, 1}
        # ... * w[j]: the same 256 B of w for every row (repeat stride 0)
        CHECK: Mul(x[c_ * 64],
        CHECK-SAME: BinaryRepeatParams{1, 1, 1, 16, 16, 0}
    """)


def test_gemm_pipelined_prologue_steady_state_epilogue():
    # Two stages: L1 and L0 tiles rotate through two slots; every flag of the loop has one event
    # id per slot, primed before the loop (prologue), indexed by k % 2 inside (steady state)
    # and drained after it (epilogue).
    filecheck(src(gemm.matmul(num_stages=2), "dav-c220"), """
        CHECK: LocalTensor<half> A_shared_slots = l1_buf.GetWithOffset<half>(16384, 0);  // A_shared: L1 128x64xfloat16 NZ slots=2
        CHECK: LocalTensor<half> A_shared_l0a_slots = l0a_buf.GetWithOffset<half>(16384, 0);
        # prologue: one id per slot and per buffer (flags are merged only when ids run out)
        CHECK: SetFlag<HardEvent::MTE1_MTE2>(0);  // prime: WAR on A_shared:
        CHECK-NEXT: SetFlag<HardEvent::MTE1_MTE2>(1);  // prime: WAR on A_shared:
        CHECK-NEXT: SetFlag<HardEvent::MTE1_MTE2>(2);  // prime: WAR on B_shared:
        CHECK-NEXT: SetFlag<HardEvent::MTE1_MTE2>(3);  // prime: WAR on B_shared:
        CHECK-NEXT: SetFlag<HardEvent::M_MTE1>(0);  // prime: WAR on A_shared_l0a
        CHECK-NEXT: SetFlag<HardEvent::M_MTE1>(1);  // prime
        # steady state: the A copy waits only for A's slot, the B copy for B's
        CHECK-NEXT: for (int32_t k = 0; k < 4; ++k)
        CHECK-SAME: (pipelined, 2 stages)
        CHECK-NEXT: LocalTensor<half> A_shared = A_shared_slots[(k % 2) * 8192];
        CHECK: WaitFlag<HardEvent::MTE1_MTE2>(k % 2);
        CHECK-NEXT: DataCopy(A_shared, A_gm
        CHECK-NEXT: SetFlag<HardEvent::MTE2_MTE1>(k % 2);  // RAW on A_shared:
        CHECK-NEXT: WaitFlag<HardEvent::MTE1_MTE2>(2 + k % 2);
        CHECK-NEXT: DataCopy(B_shared, B_gm
        CHECK-NEXT: SetFlag<HardEvent::MTE2_MTE1>(2 + k % 2);  // RAW on B_shared:
        CHECK-NEXT: WaitFlag<HardEvent::MTE2_MTE1>(k % 2);
        CHECK-NEXT: WaitFlag<HardEvent::M_MTE1>(k % 2);
        CHECK: LoadData(A_shared_l0a
        CHECK: SetFlag<HardEvent::MTE1_MTE2>(k % 2);
        CHECK-NEXT: WaitFlag<HardEvent::MTE2_MTE1>(2 + k % 2);
        CHECK: LoadData(B_shared_l0b
        CHECK: SetFlag<HardEvent::MTE1_M>(k % 2);
        CHECK-NEXT: SetFlag<HardEvent::MTE1_MTE2>(2 + k % 2);
        CHECK-NEXT: WaitFlag<HardEvent::MTE1_M>(k % 2);
        CHECK: Mmad(C_local, A_shared_l0a, B_shared_l0b, mp);
        CHECK: SetFlag<HardEvent::M_MTE1>(k % 2);
        CHECK-NEXT: }
        # epilogue
        CHECK-NEXT: WaitFlag<HardEvent::MTE1_MTE2>(0);  // drain
        CHECK-NEXT: WaitFlag<HardEvent::MTE1_MTE2>(1);  // drain
        CHECK-NEXT: WaitFlag<HardEvent::MTE1_MTE2>(2);  // drain
        CHECK-NEXT: WaitFlag<HardEvent::MTE1_MTE2>(3);  // drain
        CHECK-NEXT: WaitFlag<HardEvent::M_MTE1>(0);  // drain
        CHECK-NEXT: WaitFlag<HardEvent::M_MTE1>(1);  // drain
        CHECK-NEXT: {  // gemm.py:33
        CHECK: fp.unitFlag = 3;
        CHECK-NOT: PIPE_ALL
    """)


def test_sync_table_names_producer_consumer_buffer():
    k = ascend_backend.compile(gemm.matmul(num_stages=1), target="ascendc", runtime="emulator")
    rows = k.sync_table()
    carried = [r for r in rows if r["kind"].startswith("loop-carried")]
    assert {(r["event"], r["buffer"]) for r in carried} == {("MTE1_MTE2", "A_shared"), ("MTE1_MTE2", "B_shared"),
                                                              ("M_MTE1", "A_shared_l0a")}
    # the accumulator's Mmad -> Fixpipe order is the unit flags' (passes/unit_flag.py): a row of its own
    assert not [r for r in rows if r["event"] == "M_FIX"]
    fix = [r for r in rows if r["event"] == "unitFlag"]
    assert len(fix) == 1 and fix[0]["producer"].startswith("Mmad") and fix[0]["consumer"].startswith("Fixpipe")
    assert fix[0]["producer_at"].endswith("gemm.py:32") and fix[0]["consumer_at"].endswith("gemm.py:33")
    assert all(0 <= r["id"] <= 5 for r in rows if r["event"] != "unitFlag")


def test_memory_map_lists_every_on_chip_buffer():
    k = ascend_backend.compile(rmsnorm.rms_norm(), target={"kind": "ascendc", "arch": "dav-c220"},
                               runtime="emulator")
    mm = {r["buffer"]: r for r in k.memory_map()}
    assert mm["x"]["scope"] == "UB" and mm["x"]["size"] == 32 * 128 * 4
    assert mm["x"]["defined_at"].endswith("rmsnorm.py:12")
    ub = [r for r in mm.values() if r["scope"] == "UB"]
    for a in ub:
        for b in ub:
            overlap = a is not b and a["offset"] < b["offset"] + b["size"] and b["offset"] < a["offset"] + a["size"]
            # buffers share bytes only where the map says so (plan_memory's reuse of dead buffers)
            assert overlap == (b["buffer"] in a["shares"]), (a["buffer"], b["buffer"])


def test_k_stepped_gemm_alternates_ping_pong_l0_buffers():
    # A 128x256 tile of a does not fit L0A twice: the gemm runs as two K chunks, ping then pong.
    # The LoadData of the pong chunk waits for the pong Mmad of the previous iteration only (not
    # for this iteration's ping Mmad), so it overlaps the ping Mmad; the L1 slot of a is released
    # after its last (pong) LoadData.
    import kernels

    filecheck(src(kernels.gemm_loop(M=128, N=128, K=768, bK=256, num_stages=2), "dav-c220"), """
        CHECK: LocalTensor<half> a_l0a_ping = l0a_buf.GetWithOffset<half>(16384, 0);
        CHECK-NEXT: LocalTensor<half> a_l0a_pong = l0a_buf.GetWithOffset<half>(16384, 32768);
        CHECK: SetFlag<HardEvent::M_MTE1>(0);  // prime: WAR on a_l0a_ping
        CHECK-NEXT: SetFlag<HardEvent::M_MTE1>(1);  // prime: WAR on a_l0a_pong
        CHECK-NEXT: for (int32_t k = 0; k < 3; ++k)
        CHECK: WaitFlag<HardEvent::M_MTE1>(0);  // WAR on a_l0a_ping
        CHECK-SAME: previous iteration
        CHECK-NEXT: for (int32_t i_ = 0; i_ < 8; ++i_)
        CHECK-NEXT: LoadData(a_l0a_ping[i_ * 128 * 16], a[i_ * 256]
        CHECK: Mmad(c, a_l0a_ping, b_l0b_ping, mp);
        CHECK-NEXT: }
        CHECK-NEXT: SetFlag<HardEvent::M_MTE1>(0);  // WAR on a_l0a_ping
        CHECK-NEXT: WaitFlag<HardEvent::M_MTE1>(1);  // WAR on a_l0a_pong
        CHECK-SAME: previous iteration
        CHECK-NEXT: for (int32_t i_ = 0; i_ < 8; ++i_)
        CHECK-NEXT: LoadData(a_l0a_pong[i_ * 128 * 16], a[16384][i_ * 256]
        CHECK-NEXT: }
        CHECK-NEXT: SetFlag<HardEvent::MTE1_MTE2>(k % 2);  // WAR on a:
        CHECK: LoadData(b_l0b_pong[i_ * 2048], b[2048][i_ * 256]
        CHECK: Mmad(c, a_l0a_pong, b_l0b_pong, mp);
        CHECK: SetFlag<HardEvent::M_MTE1>(1);  // WAR on a_l0a_pong
        CHECK-NEXT: }
        CHECK-NOT: PIPE_ALL
    """)
