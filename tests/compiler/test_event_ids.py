"""Event ids of pipelined and skewed loops (passes/insert_sync.py): a flag gets only as many ids as
its pipes can run iterations apart, flags implied by others are not emitted, and when the ids
0-5 truly run out the user is told which loop and what to do."""

import importlib.util
from pathlib import Path

import kernels
import pytest
from filecheck import filecheck

import ascend_backend
from ascend_backend import EventIdError
from ascend_backend.testing import run_case

_ROOT = Path(__file__).resolve().parents[2]


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_example", _ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _source(func, arch: str) -> str:
    return ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator").kernel_source


def test_in_order_flag_takes_the_ids_its_distance_needs():
    # 3 stages: the L1 tiles a and b rotate through 3 slots (their flags keep 3 ids each), a_l0a and
    # b_l0b through 2. LoadData b(k + 1) may run before Mmad(k) waited for LoadData b(k), but
    # LoadData b(k + 2) waits for Mmad(k) (the carried WAR on the L0 slots): 2 ids, not 3.
    src = _source(kernels.gemm_loop(K=224, num_stages=3), "dav-3510")
    filecheck(src, """
        CHECK: for (int32_t k = 0; k < 7; ++k)
        CHECK: WaitFlag<HardEvent::MTE1_MTE2>(k % 3);  // WAR on a:
        CHECK: WaitFlag<HardEvent::MTE1_MTE2>(3 + k % 3);  // WAR on b:
        CHECK: LoadData(b_l0b
        CHECK-NEXT: SetFlag<HardEvent::MTE1_M>(k % 2);  // RAW on b_l0b:
        CHECK: WaitFlag<HardEvent::MTE1_M>(k % 2);  // RAW on b_l0b:
        CHECK-NEXT: {
    """)


def test_in_order_flag_ordered_by_the_carried_one_takes_one_id():
    # K stepped in two chunks with ping/pong L0 buffers: LoadData into b_l0b_ping of iteration k + 1
    # waits for the last Mmad on it in iteration k, which follows this flag's Wait: one id.
    src = _source(kernels.gemm_loop(M=128, N=128, K=768, bK=256, num_stages=2), "dav-c220")
    filecheck(src, """
        CHECK: for (int32_t k = 0; k < 3; ++k)
        CHECK: SetFlag<HardEvent::MTE1_M>(0);  // RAW on b_l0b_ping:
        CHECK: WaitFlag<HardEvent::MTE1_M>(0);  // RAW on b_l0b_ping:
        CHECK-NOT: MTE1_M>(k %
        CHECK: Mmad(c, a_l0a_pong, b_l0b_pong
    """)


def test_merged_flag_lists_every_reason():
    # 4 stages of 2 rotating L1 tiles need 8 MTE1_MTE2 ids: the two WAR flags become one, whose
    # comment names both dependencies
    src = _source(kernels.gemm_loop(K=32 * 12, num_stages=4), "dav-3510")
    filecheck(src, """
        CHECK: SetFlag<HardEvent::MTE1_MTE2>(3);  // prime: WAR on a: 'Nd2Nz A -> a' (MTE2) after 'LoadData a -> a_l0a' (MTE1), previous iteration; WAR on b: 'Nd2Nz B -> b' (MTE2) after 'LoadData b -> b_l0b' (MTE1), previous iteration
        CHECK: WaitFlag<HardEvent::MTE1_MTE2>(k % 4);  // WAR on a:
        CHECK-SAME: ; WAR on b:
    """)


def test_skewed_mla_decode_with_three_stages_keeps_its_flags_apart():
    # MLA decode's skewed loop at num_stages=3 used to run out of M_MTE1 ids even with every flag of
    # the pair merged: the parts' own loop-carried flags are implied by the flag around the parts
    # (part B of a trip before part A of the next), so none is merged and the loop stays skewed.
    mla = _example("mla_decode")
    src = _source(mla.mla_decode_paged(1, 16, 256, 512, 64, 64, 16, 1, 64, num_stages=3), "dav-3510")
    aic = src.split("__global__")[1]  # the AIC's kernel
    filecheck(aic, """
        CHECK: SetFlag<HardEvent::M_MTE1>(0);  // prime: WAR, part B before the next trip's part A
        CHECK-NEXT: for (int32_t k = 0;
        CHECK: WaitFlag<HardEvent::M_MTE1>(0);  // WAR, part B before the next trip's part A
        CHECK-NOT: M_MTE1>(k
        CHECK: SetFlag<HardEvent::M_MTE1>(1);  // WAR on Q_shared_l0a_ping:
        CHECK-NOT: M_MTE1>(k
        CHECK: for (int32_t k_b = (k - 1)
        CHECK-NOT: M_MTE1>(k
        CHECK: SetFlag<HardEvent::M_MTE1>(1);  // WAR on acc_s_cast_l0a_ping:
        CHECK-NOT: M_MTE1>(k
        CHECK: SetFlag<HardEvent::M_MTE1>(0);  // WAR, part B before the next trip's part A
        CHECK: WaitFlag<HardEvent::M_MTE1>(0);  // drain: WAR, part B before the next trip's part A
    """)
    assert "; WAR" not in aic  # no merged flag


def test_out_of_event_ids_is_a_user_error():
    # 7 stages of two rotating L1 tiles: one merged flag still needs 7 MTE1_MTE2 ids
    with pytest.raises(EventIdError) as info:
        _source(kernels.gemm_loop(K=32 * 12, num_stages=7), "dav-3510")
    err = info.value
    assert err.loc is not None and err.loc.file.endswith("kernels.py")
    assert "T.Pipelined" in open(err.loc.file).read().splitlines()[err.loc.line - 1]
    assert "num_stages=7 needs 7 event ids of MTE1_MTE2" in err.what and "WAR on a, b" in err.what
    assert err.hint.startswith("lower num_stages to 6 or fewer")
    assert str(err).startswith(f"{err.loc}: event ids: ")


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_mla_decode_three_stages(arch):
    mla = _example("mla_decode")
    kernel, _, _ = run_case(mla.case(batch=1, heads=16, max_seqlen=256, num_split=1, seqlens=(200,), num_stages=3),
                            arch=arch)
    assert all(r.ok for r in kernel.reports)


@pytest.mark.slow
def test_gqa_backward_three_stages():
    # 128 x 64 blocks with head dim 128 (the benchmark's tile): 3 stages ran out of M_MTE1 ids;
    # dav-c220's L0C cannot hold this tile, so dav-3510 only
    gqa = _example("gqa_backward")
    kernel, _, _ = run_case(gqa.case(1, 4, 4, 256, 128, 128, 64, 3, head_split=2, defer_dq=True), arch="dav-3510")
    assert all(r.ok for r in kernel.reports)
