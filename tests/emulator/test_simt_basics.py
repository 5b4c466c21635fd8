"""SIMT on dav-3510, the basics: a __simt_vf__ function started from an AIV kernel with
asc_vf_call<f>(dim3, args...) (SIMD与SIMT混合编程 pages, 核函数配置-147), the built-in variables
(内置变量-145), __ubuf__ / __gm__ pointers, per-thread locals, divergence, asc_syncthreads,
__ubuf__ arrays, __launch_bounds__, the UB partition (编程模型-140) and the dav-c220 refusal.
Every expectation comes from the pages, not from the compiler."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER, kinds, line_of, run

from ascend_backend.emulator import EmulatorCompileError, EmulatorError, run_source

SRC = HEADER + r"""
// every thread writes its indices: (threadIdx.x, .y, .z, linear id, blockIdx.x, gridDim.x, blockDim.x * y * z)
__simt_vf__ __launch_bounds__(512) inline void ids(__gm__ int32_t* out) {
    uint32_t lin = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
    uint32_t nt = blockDim.x * blockDim.y * blockDim.z;
    __gm__ int32_t* o = out + (blockIdx.x * nt + lin) * 7;
    o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z; o[3] = lin;
    o[4] = blockIdx.x; o[5] = gridDim.x; o[6] = nt;
}
__global__ __vector__ void k_ids(__gm__ int32_t* out, uint32_t dx, uint32_t dy, uint32_t dz) {
    asc_vf_call<ids>(dim3(dx, dy, dz), out);
}

// per-thread locals and divergence: odd threads take another path and loop a different number of times
__simt_vf__ __launch_bounds__(256) inline void diverge(__gm__ const float* x, __gm__ float* y, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc[4];
    for (int k = 0; k < 4; ++k) acc[k] = x[i] * (float)(k + 1);
    float s = 0.0f;
    if (threadIdx.x % 2) {
        for (uint32_t k = 0; k < threadIdx.x % 4; ++k) s += acc[k];
    } else {
        s = -acc[3];
    }
    y[i] = s;
}
__global__ __vector__ void k_diverge(__gm__ float* x, __gm__ float* y, uint32_t n) {
    asc_vf_call<diverge>(dim3{256, 1, 1}, x, y, n);
}

// UB shared by the block: a barrier orders the stores of one thread before the loads of another
__simt_vf__ __launch_bounds__(128) inline void rotate(__gm__ float* x, __gm__ float* y, __ubuf__ float* ub) {
    uint32_t t = threadIdx.x;
    ub[t] = x[blockIdx.x * 128 + t];
    asc_syncthreads();
    y[blockIdx.x * 128 + t] = ub[(t + 1) % 128];
}
__global__ __vector__ void k_rotate(__gm__ float* x, __gm__ float* y) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 128 * sizeof(float));
    LocalTensor<float> t = b.Get<float>();
    asc_vf_call<rotate>(dim3(128), x, y, (__ubuf__ float*)t.GetPhyAddr());
}

// a __ubuf__ array of the SIMT function (2-D), and a __simt_callee__ helper taking pointers
__simt_callee__ inline float pick(__ubuf__ float* row, uint32_t j) { return row[j]; }
__simt_vf__ __launch_bounds__(1024) inline void transpose(__gm__ const float* x, __gm__ float* y) {
    __ubuf__ float tile[32][33];
    uint32_t r = threadIdx.y, c = threadIdx.x;
    tile[r][c] = x[r * 32 + c];
    asc_syncthreads();
    y[r * 32 + c] = pick(tile[c], r);
}
__global__ __vector__ void k_transpose(__gm__ float* x, __gm__ float* y) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    asc_vf_call<transpose>(dim3(32, 32), x, y);
}

// bugs, each behind a flag: too many threads for __launch_bounds__, a UB access past what the
// kernel allocated, more UB than the SIMT Data Cache leaves
__simt_vf__ __launch_bounds__(64) inline void small(__gm__ float* y, __ubuf__ float* ub, uint32_t reach) {
    ub[threadIdx.x * reach] = 1.0f;  // @UBSTORE
    y[threadIdx.x] = 2.0f;
}
__global__ __vector__ void k_small(__gm__ float* y, uint32_t threads, uint32_t reach, uint32_t ub_bytes) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, ub_bytes);
    asc_vf_call<small>(dim3(threads), y, (__ubuf__ float*)b.Get<float>().GetPhyAddr(), reach);  // @CALL
}
"""


def test_thread_and_block_indices():
    nb, dims = 3, (8, 4, 2)
    n = dims[0] * dims[1] * dims[2]
    out = torch.full((nb * n * 7,), -5, dtype=torch.int32)
    rep = run_source(SRC, "k_ids", [out, *dims], nb)
    assert rep.ok
    got = out.view(nb, n, 7)
    lin = torch.arange(n)
    exp_x, exp_y, exp_z = lin % dims[0], lin // dims[0] % dims[1], lin // (dims[0] * dims[1])
    for b in range(nb):
        assert torch.equal(got[b, :, 0], exp_x.int()) and torch.equal(got[b, :, 1], exp_y.int())
        assert torch.equal(got[b, :, 2], exp_z.int()) and torch.equal(got[b, :, 3], lin.int())
        assert (got[b, :, 4] == b).all() and (got[b, :, 5] == nb).all() and (got[b, :, 6] == n).all()
    # the whole call is one vector-pipe op of the AIV
    assert rep.op_counts == {"V": nb} and rep.op_counts_by_name == {"asc_vf_call": nb}


def test_locals_and_divergence():
    n = 600  # the last block's threads past n return at once
    x = torch.randn(768)
    y = torch.full((768,), 7.0)
    run_source(SRC, "k_diverge", [x, y, n], 3)
    t = torch.arange(768) % 256
    acc = x[:, None] * torch.tensor([1.0, 2.0, 3.0, 4.0])
    exp = torch.where(t % 2 == 1, torch.stack([acc[i, : int(t[i] % 4)].sum() for i in range(768)]), -acc[:, 3])
    assert torch.allclose(y[:n], exp[:n]) and (y[n:] == 7.0).all()


def test_ub_barrier_rotate():
    x = torch.randn(2 * 128)
    y = torch.zeros_like(x)
    rep = run_source(SRC, "k_rotate", [x, y], 2)
    assert rep.ok and torch.equal(y.view(2, 128), torch.roll(x.view(2, 128), -1, dims=1))


def test_ubuf_array_and_callee():
    x = torch.randn(32 * 32)
    y = torch.zeros_like(x)
    assert run_source(SRC, "k_transpose", [x, y], 1).ok
    assert torch.equal(y.view(32, 32), x.view(32, 32).t())


def test_planted_launch_bounds_ub_reach_and_data_cache_share():
    y = torch.zeros(2048)
    # the fine variant: 64 threads, each inside the 256 bytes allocated, a small UB allocation
    assert run_source(SRC, "k_small", [y, 64, 1, 256], 1).ok and (y[:64] == 2.0).all()
    # more threads than __launch_bounds__(64) allows
    rep = run(SRC, [y, 65, 1, 512], kernel="k_small")
    assert kinds(rep.errors) == ["invalid_param"] and "__launch_bounds__" in rep.errors[0]["message"]
    # a thread's store past the 256 bytes the kernel allocated (into the Data Cache): the store's line
    rep = run(SRC, [y, 64, 2, 256], kernel="k_small")
    assert kinds(rep.errors) == ["local_out_of_bounds"]
    assert rep.errors[0]["line"] == line_of(SRC, "@UBSTORE") and "allocated" in rep.errors[0]["message"]
    # 216 KB of UB allocated leaves the Data Cache exactly 32 KB: allowed; 32 bytes more is not
    assert run_source(SRC, "k_small", [y, 64, 1, 216 * 1024], 1).ok
    rep = run(SRC, [y, 64, 1, 216 * 1024 + 32], kernel="k_small")
    assert kinds(rep.errors) == ["capacity"] and rep.errors[0]["line"] == line_of(SRC, "@CALL")
    assert "Data Cache" in rep.errors[0]["message"] and "32 KB" in rep.errors[0]["message"]


def test_dav_c220_refuses_simt():
    with pytest.raises(EmulatorCompileError) as ei:
        run_source(SRC, "k_ids", [torch.zeros(7, dtype=torch.int32), 1, 1, 1], 1, arch="dav-c220")
    e = ei.value
    assert "exists only on dav-3510" in str(e) and "dav-c220" in str(e)
    assert e.line == line_of(SRC, "__simt_vf__ __launch_bounds__(512)")


def test_ubuf_forms_not_emulated_are_refused_at_their_line():
    src = HEADER + r"""
__simt_vf__ inline void f(__gm__ float* y) {
    extern __ubuf__ float dyn[];
    y[threadIdx.x] = dyn[threadIdx.x];
}
__global__ __vector__ void k(__gm__ float* y) { asc_vf_call<f>(dim3(32), y); }
"""
    with pytest.raises(EmulatorError, match=f"line {line_of(src, 'extern __ubuf__')}: `extern __ubuf__"):
        run_source(src, "k", [torch.zeros(32)], 1)
