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
    ("loop", "for j in T.serial(tx):\n            A[(tx + 1) % 64] = v[0]\n            T.sync_threads()",
     "trip count depends on the thread"),
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


def suffix_sums(n=256, threads=1024):
    """The top-k selector's histogram scan: threads tx < n add the element `offset` above theirs,
    with TileLang's partial barriers (T.sync_threads(3, n), bar.sync of the first n threads)."""

    @T.prim_func
    def k(A: T.Tensor((n,), "int32"), B: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            h = T.alloc_shared((n,), "int32")
            v = T.alloc_var("int32")
            if tx < n:
                h[tx] = A[tx]
            T.sync_threads()
            if tx < n:  # marker:partial_if
                for i in T.serial(8):
                    offset = 1 << i
                    T.sync_threads(3, n)
                    if tx < n - offset:
                        v = h[tx] + h[tx + offset]
                    T.sync_threads(3, n)
                    if tx < n - offset:
                        h[tx] = v
            T.sync_threads()
            if tx < n:
                B[tx] = h[tx]

    return k


def test_partial_barriers_split_their_if_into_whole_block_barriers():
    filecheck(source(suffix_sums()), """
        CHECK: for (int32_t i = 0; i < 8; ++i) {
        CHECK-NEXT: int32_t offset = (1 << i);
        CHECK-NEXT: asc_syncthreads();
        CHECK-NEXT: if ((tx < 256)) {
        CHECK-NEXT: if ((tx < (256 - offset))) {
        CHECK-NEXT: v_r[0] = (int32_t)((h[tx] + h[(tx + offset)]));
        CHECK: asc_syncthreads();
        CHECK-NEXT: if ((tx < 256)) {
        CHECK-NEXT: if ((tx < (256 - offset))) {
        CHECK-NEXT: h[tx] = (int32_t)(v_r[0]);
    """)


@needs_simt_engine
def test_partial_barriers_on_the_emulator():
    a = torch.randint(0, 100, (256,), dtype=torch.int32)
    b = torch.zeros(256, dtype=torch.int32)
    run(suffix_sums(), [a, b], "dav-3510")
    torch.testing.assert_close(b, a.flip(0).cumsum(0).flip(0).to(torch.int32))


def clean(threads=128, block=512):
    """The lightning indexer's logit cleaning: a loop bound to threadIdx.x, stores past the end of
    a row (seq_kv not a multiple of the block) that TileLang's safe-memory rule skips."""
    seq, seq_kv = T.dynamic("seq"), T.dynamic("seq_kv")

    @T.prim_func
    def k(L: T.Tensor((seq, seq_kv), "float32"), S: T.Tensor((seq,), "int32"), E: T.Tensor((seq,), "int32")):
        with T.Kernel(seq, threads=threads) as bx:
            tx = T.thread_binding(0, threads, thread="threadIdx.x")
            lo = S[bx]
            hi = E[bx]
            for n in T.serial(T.ceildiv(seq_kv, block)):
                for j in T.serial(block // threads):
                    idx = n * block + j * threads + tx
                    if idx < lo or idx >= hi:
                        L[bx, idx] = -T.infinity("float32")

    return k


def test_thread_bound_loop_and_out_of_range_stores_are_skipped():
    filecheck(source(clean()), """
        CHECK: for (int32_t n = 0; n < ((seq_kv + 511) / 512); ++n) {
        CHECK: int32_t idx = (((n * 512) + (j * 128)) + tx);
        CHECK-NEXT: if (((idx < S[bx]) || (idx >= E[bx]))) {
        CHECK-NEXT: if ((idx < seq_kv)) {
        CHECK-NEXT: L[(bx) * seq_kv + idx] = (float)((INFINITY * -1.0f));
    """)


@needs_simt_engine
def test_thread_bound_loop_and_out_of_range_stores_on_the_emulator():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(4, 700, generator=g)
    lo = torch.tensor([0, 100, 650, 3], dtype=torch.int32)
    hi = torch.tensor([700, 200, 700, 3], dtype=torch.int32)
    ref = logits.clone()
    j = torch.arange(700)[None, :]
    ref[(j < lo[:, None]) | (j >= hi[:, None])] = float("-inf")
    run(clean(), [logits, lo, hi], "dav-3510")
    torch.testing.assert_close(logits, ref)


def bounded_histogram(n=64, threads=64):
    """A per-thread local read only in a condition (the top-k's l_start_idx) is the thread's: the
    fill and the loop around it stay in one SIMT function."""

    @T.prim_func
    def k(A: T.Tensor((n,), "int32"), S: T.Tensor((1,), "int32"), H: T.Tensor((16,), "int32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            lo = T.alloc_var("int32")
            h = T.alloc_shared((16,), "int32")
            lo = S[0]
            T.fill(h, 0)
            T.sync_threads()
            if tx >= lo:
                T.atomic_add(h[A[tx] % 16], 1)
            T.sync_threads()
            if tx < 16:
                H[tx] = h[tx]

    return k


def test_a_local_read_in_a_condition_keeps_one_simt_function():
    src = source(bounded_histogram())
    assert src.count("asc_vf_call<") == 1
    filecheck(src, """
        CHECK: lo_r[0] = (int32_t)(S[0]);
        CHECK: h[((h_fill * 64) + tx)] = (int32_t)(0);
        CHECK: if ((tx >= lo_r[0])) {
        CHECK-NEXT: asc_atomic_add(&h[(A[tx] % 16)], (int32_t)(1));
    """)


@needs_simt_engine
def test_a_local_read_in_a_condition_on_the_emulator():
    a = torch.randint(0, 1000, (64,), dtype=torch.int32)
    h = torch.zeros(16, dtype=torch.int32)
    run(bounded_histogram(), [a, torch.tensor([10], dtype=torch.int32), h], "dav-3510")
    torch.testing.assert_close(h, torch.bincount(a[10:] % 16, minlength=16).to(torch.int32))


def dequant_gemm(M=64, N=64, K=64, threads=128):
    """TileLang's fine-grained dequantize GEMM (uint4 in int8, dequantized by the threads into a
    shared tile the gemm reads): each AIV holds the SIMT tiles whole, runs the function and sends its
    half of the rows to the Cube; the 16-column int8 tile only copies and threads touch."""
    bK = 32

    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K // 2), "int8"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(1, 1, threads=threads):
            a = T.alloc_shared((M, bK), "float16")
            b = T.alloc_shared((N, bK // 2), "int8")
            w = T.alloc_shared((N, bK), "float16")
            c = T.alloc_fragment((M, N), "float16")  # a float16 accumulator: float32 on the Cube
            tx = T.get_thread_binding()
            T.clear(c)
            for ko in T.Pipelined(K // bK, num_stages=2):
                T.copy(A[0, ko * bK], a)
                T.copy(B[0, ko * bK // 2], b)
                for i in T.serial(N * bK // 2 // threads):
                    idx = i * threads + tx
                    q = b[idx // (bK // 2), idx % (bK // 2)]
                    w[idx // (bK // 2), idx % (bK // 2) * 2] = T.cast(q & 15, "float16")
                    w[idx // (bK // 2), idx % (bK // 2) * 2 + 1] = T.cast((q >> 4) & 15, "float16")
                T.gemm(a, w, c, transpose_B=True)
            T.copy(c, C[0, 0])

    return k


def test_thread_level_code_beside_a_gemm_runs_whole_on_each_aiv():
    filecheck(source(dequant_gemm()), """
        CHECK: __simt_vf__ __launch_bounds__(128) inline void k_simt0(__ubuf__ int8_t* b, __ubuf__ half* w)
        CHECK: Fixpipe<half, float, CFG_ROW_MAJOR>
        CHECK: LocalTensor<int8_t> b_slots = {{.*}}// b: UB 64x16xint8 ND pitch=32 slots=2
        CHECK: LocalTensor<half> w_slots = {{.*}}// w: UB 64x32xfloat16 ND slots=2
        CHECK: asc_vf_call<k_simt0>(dim3{128, 1, 1}
        CHECK: DataCopy(w_l1_peer[sub_idx * 512{{.*}}], w[((sub_idx * 32)) * 32], Nd2NzParams{1, (uint16_t)(32), (uint16_t)(32)
    """)


@needs_simt_engine
def test_thread_level_code_beside_a_gemm_on_the_emulator():
    g = torch.Generator().manual_seed(5)
    a = (torch.randn(64, 64, generator=g) * 0.1).half()
    q = torch.randint(0, 16, (64, 64), generator=g, dtype=torch.int32)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).to(torch.uint8).view(torch.int8)
    c = torch.zeros(64, 64, dtype=torch.float16)
    run(dequant_gemm(), [a, packed, c], "dav-3510")
    torch.testing.assert_close(c.float(), a.float() @ q.float().T, atol=1e-2, rtol=1e-3)


def test_thread_level_code_reading_a_gemm_result_is_refused():
    @T.prim_func
    def k(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=32):
            a = T.alloc_shared((32, 32), "float16")
            c = T.alloc_fragment((32, 32), "float32")
            tx = T.get_thread_binding()
            T.copy(A[0, 0], a)
            T.gemm(a, a, c, clear_accum=True)
            for j in T.serial(32):  # marker:reads_cube
                C[tx, j] = c[tx, j] * 2.0

    with pytest.raises(ascend_backend.UnsupportedError, match="comes from the Cube") as info:
        source(k)
    assert info.value.loc.line == marker_line(HERE, "reads_cube")
