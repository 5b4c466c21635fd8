"""Thread-level TileLang as SIMT functions on dav-3510 (passes/lower_simt.py, passes/simt_sync.py):
the key lines of the generated SIMT code, the refusals (with their lines), dav-c220's refusal, and
the kernels on the emulator in strict mode against torch (once the emulator has its SIMT engine)."""

import os

import pytest
import tilelang.language as T
import torch

import ascend_backend
from ascend_backend.emulator.cache import INCLUDE_DIR
from tests.dsl_lines import marker_line
from tests.filecheck import filecheck
from tests.strict_run import run

HERE = os.path.abspath(__file__)


def _emulator_has_simt() -> bool:
    for root, _, files in os.walk(INCLUDE_DIR):
        for f in files:
            if f.endswith(".h"):
                with open(os.path.join(root, f), errors="replace") as fh:
                    if "__simt_vf__" in fh.read():
                        return True
    return False


needs_simt_engine = pytest.mark.skipif(not _emulator_has_simt(), reason="the emulator has no SIMT engine yet "
                                       "(asc_vf_call): the simt-emu work of issue 24")


def source(func, arch="dav-3510") -> str:
    return ascend_backend.lower(func, target={"kind": "ascendc", "arch": arch}).source


def scale_shift(n=256, threads=128):
    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(n // threads, threads=threads) as bx:
            tx = T.get_thread_binding(0)
            B[bx * threads + tx] = A[bx * threads + tx] * 2.0 + 1.0  # marker:first_thread_line

    return k


def test_elementwise_is_one_simt_function():
    filecheck(source(scale_shift()), """
        CHECK: __simt_vf__ __launch_bounds__(128) inline void k_simt0(__gm__ float* A, __gm__ float* B, int32_t bx)
        CHECK: const int32_t tx = (int32_t)threadIdx.x;
        CHECK: B[((bx * 128) + tx)] = (float)(((A[((bx * 128) + tx)] * 2.0f) + 1.0f));
        CHECK: KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
        CHECK: asc_vf_call<k_simt0>(dim3{128, 1, 1}, (__gm__ float*)A_gm.GetPhyAddr(), (__gm__ float*)B_gm.GetPhyAddr(), (int32_t)(bx));
    """)


def test_dav_c220_refuses_thread_level_code_at_its_first_line():
    with pytest.raises(ascend_backend.UnsupportedError) as info:
        source(scale_shift(), "dav-c220")
    e = info.value
    assert e.loc.line == marker_line(HERE, "first_thread_line")
    assert "dav-c220 has no SIMT" in str(e)
    assert "dav-3510" in e.hint


def staged(n=256, threads=128):
    """SIMD copies around a SIMT region: the flags between them are inferred as for any vector op."""

    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(n // threads, threads=threads) as bx:
            a = T.alloc_shared((threads,), "float32")
            b = T.alloc_shared((threads,), "float32")
            T.copy(A[bx * threads], a)
            tx = T.get_thread_binding(0)
            b[tx] = a[threads - 1 - tx] + 1.0
            T.copy(b, B[bx * threads])

    return k


def test_simt_region_is_ordered_with_simd_copies_by_flags():
    filecheck(source(staged()), """
        CHECK: __simt_vf__ __launch_bounds__(128) inline void k_simt0(__ubuf__ float* a, __ubuf__ float* b)
        CHECK: b[tx] = (float)((a[(127 - tx)] + 1.0f));
        CHECK: DataCopy(a, A_gm[(bx * 128)], 128);
        CHECK: SetFlag<HardEvent::MTE2_V>
        CHECK: WaitFlag<HardEvent::MTE2_V>
        CHECK: asc_vf_call<k_simt0>(dim3{128, 1, 1}, reinterpret_cast<__ubuf__ float*>(a.GetPhyAddr()), reinterpret_cast<__ubuf__ float*>(b.GetPhyAddr()));
        CHECK: SetFlag<HardEvent::V_MTE3>
        CHECK: WaitFlag<HardEvent::V_MTE3>
        CHECK: DataCopy(B_gm[(bx * 128)], b, 128);
    """)


def warp_ops(n=64):
    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((8,), "float32"),
          M: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((n,), "float32")
            acc = T.alloc_shared((2,), "float32")
            v = T.alloc_var("float32")
            w = T.alloc_local((2,), "float32")
            T.fill(acc, 0.0)
            v = A[tx]
            s[tx] = v
            T.sync_threads()
            v = v + s[(tx + 1) % n]
            v = T.shfl_xor(v, 1) + T.shfl_down(v, 2) + T.shfl_up(v, 1) + T.shfl_sync(v, 0)
            total = T.warp_reduce_sum(v)
            hi = T.warp_reduce_max(v)
            lo = T.warp_reduce_min(v)
            for i in T.unroll(2):
                w[i] = total + hi * i
            T.atomic_add(acc[T.get_warp_idx()], lo)
            T.atomic_max(C[T.get_lane_idx() % 8], v)
            M[tx] = T.cast(T.ballot(v > 0.0) & T.uint64(0xFF), "int32") + \
                T.call_extern("int32", "__match_any_sync", T.uint32(0xFFFFFFFF), tx // 4)
            T.sync_warp()
            if tx >= n - 1:
                T.thread_return()
            B[tx] = w[0] + w[1] + acc[0]

    return k


def test_warp_functions_atomics_and_barriers_map_to_the_simt_api():
    filecheck(source(warp_ops()), """
        CHECK: __simt_callee__ inline uint32_t tl_match_any_int32_t(int32_t v)
        CHECK: if (asc_shfl(v, lane, warpSize) == v)
        CHECK: __simt_vf__ __launch_bounds__(64) inline void k_simt0(
        CHECK: float v_r[1];  // per-thread local v
        CHECK: float w_r[2];  // per-thread local w
        CHECK: asc_syncthreads();  // T.sync_threads
        CHECK: asc_shfl_xor(v_r[0], 1, 32)
        CHECK-SAME: asc_shfl_down(v_r[0], 2, 32)
        CHECK-SAME: asc_shfl_up(v_r[0], 1, 32)
        CHECK-SAME: asc_shfl(v_r[0], 0, 32)
        CHECK: float total = asc_reduce_add(v_r[0]);
        CHECK: float hi = asc_reduce_max(v_r[0]);
        CHECK: float lo = asc_reduce_min(v_r[0]);
        CHECK: // T.unroll
        CHECK: asc_atomic_add(&acc[({{.*}} / warpSize)], (float)(lo));
        CHECK: asc_atomic_max(&C[(laneid() % 8)], (float)(v_r[0]));
        CHECK: asc_ballot((int32_t)((v_r[0] > 0.0f)))
        CHECK-SAME: tl_match_any_int32_t((tx / 4))
        CHECK: return;  // T.thread_return
        CHECK: asc_syncthreads();
        CHECK: B[tx] = (float)(((w_r[0] + w_r[1]) + acc[0]));
        # the fill before any thread-level statement stays a SIMD Duplicate
        CHECK: Duplicate(acc, 0.0f
        CHECK: asc_vf_call<k_simt0>(dim3{64, 1, 1}
    """)


def test_shared_tiles_get_the_barriers_tilelang_inserts():
    """Every thread fills a row of a shared tile, then reads the others' (TileLang's gemv): a barrier
    before the reads, and one at the top of the next trip (its writes meet this trip's reads)."""

    @T.prim_func
    def k(A: T.Tensor((4, 32), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((32,), "float32")
            r = T.alloc_local((1,), "float32")
            T.clear(r)
            for step in T.serial(4):
                s[tx] = A[step, tx]
                for j in T.serial(32):
                    r[0] += s[j]
            B[tx] = r[0]

    filecheck(source(k), """
        CHECK: for (int32_t step = 0; step < 4; ++step) {
        CHECK-NEXT: asc_syncthreads();
        CHECK-NEXT: s[tx] = (float)(A[(step) * 32 + tx]);
        CHECK-NEXT: asc_syncthreads();
        CHECK-NEXT: for (int32_t j = 0; j < 32; ++j) {
    """)


@pytest.mark.parametrize("what, body, text", [
    ("mask", "v[0] = T.shfl_xor(v[0], 1, mask=T.uint32(0xFFFF))", "lane mask"),
    ("barrier", "T.sync_threads(3, 64)", "part of the block"),
    ("extern", 'v[0] = T.call_extern("float32", "__nanosleep", v[0])', "__nanosleep"),
])
def test_what_the_simt_api_lacks_is_refused_at_its_line(what, body, text, tmp_path):
    path = tmp_path / f"k_{what}.py"
    path.write_text(f'''
import tilelang.language as T

@T.prim_func
def k(A: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=64):
        tx = T.get_thread_binding(0)
        v = T.alloc_local((1,), "float32")
        v[0] = A[tx]
        {body}  # marker:bad
        A[tx] = v[0]
''')
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"k_{what}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(ascend_backend.UnsupportedError) as info:
        source(mod.k)
    assert text in str(info.value)
    assert info.value.loc.line == marker_line(str(path), "bad")


def test_a_per_thread_local_across_tile_code_is_refused():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            t = T.alloc_shared((64,), "float32")
            v = T.alloc_local((1,), "float32")
            v[0] = A[tx]
            T.copy(A[0], t)
            B[tx] = v[0] + t[tx]  # marker:second_use

    with pytest.raises(ascend_backend.UnsupportedError) as info:
        source(k)
    assert "per-thread local 'v'" in str(info.value)
    assert info.value.loc.line == marker_line(HERE, "second_use")


def test_more_than_2048_threads_are_refused():
    with pytest.raises(ascend_backend.UnsupportedError, match="at most 2048"):
        source(scale_shift(n=4096, threads=4096))


@needs_simt_engine
def test_elementwise_on_the_emulator():
    a = torch.randn(256)
    b = torch.empty(256)
    run(scale_shift(), [a, b], "dav-3510")
    torch.testing.assert_close(b, a * 2 + 1)


@needs_simt_engine
def test_staged_on_the_emulator():
    a = torch.randn(256)
    b = torch.empty(256)
    run(staged(), [a, b], "dav-3510")
    torch.testing.assert_close(b, torch.cat([a[:128].flip(0), a[128:].flip(0)]) + 1)


def test_thread_allreduce_goes_through_a_ub_tile():
    """TileLang's splitk_gemv_vectorized_tvm form: T.tvm_thread_allreduce over the threads' y axis."""

    @T.prim_func
    def k(A: T.Tensor((2, 32), "float32"), C: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=(2, 32)):
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            acc = T.alloc_local((1,), "float32")
            red = T.alloc_local((1,), "float32")
            acc[0] = A[tn, tk]
            with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, "float32")]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], tk, dtype="handle"))
            C[tn] = red[0]

    filecheck(source(k), """
        CHECK: __simt_vf__ __launch_bounds__(64)
        CHECK: allreduce_{{.*}}[(tn + (tk * 2))] = (float)(acc_r[0]);
        CHECK-NEXT: asc_syncthreads();
        CHECK-NEXT: red_r[0] = (float)({{.*}}(allreduce_{{.*}}[tn] + allreduce_{{.*}}[(tn + 2)]) + allreduce_{{.*}}[(tn + 62)]));
        CHECK-NEXT: asc_syncthreads();
        CHECK-NEXT: C[tn] = (float)(red_r[0]);
    """)


def test_ub_budget_leaves_the_simt_data_cache():
    """216 KB of tiles fit a SIMT kernel's UB; 224 KB do not (8 KB reserved + 32 KB Data Cache)."""

    def kernel(kb):
        n = kb * 1024 // 4

        @T.prim_func
        def k(A: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=128):
                tx = T.get_thread_binding(0)
                t = T.alloc_shared((n,), "float32")
                T.copy(A[0], t)
                A[tx] = t[tx]

        return k

    source(kernel(216))
    with pytest.raises(ascend_backend.MemoryBudgetError, match="Data Cache"):
        source(kernel(224))
