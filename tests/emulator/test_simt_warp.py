"""SIMT warp functions (Warp函数/): shuffles with widths, reductions, votes, active masks and lane
ids, with divergence and partial warps. The expected values are the pages' own examples
(asc_shfl(laneId, 1, 16) gives 1 / 17, ...) and their rules for inactive lanes."""

from __future__ import annotations

import torch
from conftest import HEADER, kinds, line_of, run

from ascend_backend.emulator import run_source

NOUT = 24  # outputs per thread of k_warp

SRC = HEADER + r"""
__simt_vf__ __launch_bounds__(1024) inline void warp_ops(__gm__ int32_t* o, __gm__ const float* xf, __gm__ float* of,
                                                          uint32_t active) {
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    __gm__ int32_t* r = o + idx * 24;
    int32_t lane = idx % 32;
    r[0] = asc_shfl(lane, 1, 16);           // the pages' examples
    r[1] = asc_shfl_up(lane, 2, 16);
    r[2] = asc_shfl_down(lane, 2, 16);
    r[3] = asc_shfl_xor(lane, 1, 16);
    int32_t v = lane;
    v += asc_shfl_down(v, 16, 32); v += asc_shfl_down(v, 8, 32); v += asc_shfl_down(v, 4, 32);
    v += asc_shfl_down(v, 2, 32); v += asc_shfl_down(v, 1, 32);
    r[4] = v;                               // lane 0 holds the sum
    v = lane;
    v += asc_shfl_xor(v, 1, 32); v += asc_shfl_xor(v, 2, 32); v += asc_shfl_xor(v, 4, 32);
    v += asc_shfl_xor(v, 8, 32); v += asc_shfl_xor(v, 16, 32);
    r[5] = v;                               // every lane holds it
    r[6] = asc_reduce_add(lane);
    r[7] = asc_reduce_max(lane);
    r[8] = asc_reduce_min(lane);
    r[9] = (int32_t)asc_ballot(lane % 3 == 0);
    r[10] = asc_any(lane == 7);
    r[11] = asc_all(lane < 31);
    r[12] = laneid();
    r[13] = lanemask_lt();
    r[14] = lanemask_ge();
    // divergence: each side of the branch is its own set of active lanes
    if (lane % 2) r[15] = asc_reduce_add(lane); else r[15] = asc_reduce_max(lane);
    if (lane < 20) r[16] = asc_reduce_add(lane); else r[16] = (int32_t)asc_ballot(lane & 1);
    // a loop with a different trip count per lane: the mask of the lanes still in the loop
    uint32_t m = 0;
    for (int32_t k = 0; k < lane % 4; ++k) m = asc_activemask();
    r[17] = (int32_t)m;
    r[18] = (int32_t)asc_activemask();      // all lanes again after the loop
    // 64-bit and unsigned shuffles
    int64_t big = ((int64_t)lane << 40) | 5;
    r[19] = (int32_t)(asc_shfl(big, 31 - lane) >> 40);
    uint32_t u = 0xF0000000u + (uint32_t)lane;
    r[20] = (int32_t)(asc_shfl_xor(u, 3) - 0xF0000000u);
    // float: shuffle and the tree sum
    float f = xf[idx];
    of[idx * 2] = asc_shfl_up(f, 1);
    of[idx * 2 + 1] = asc_reduce_add(f);
    r[21] = 0;
    // lanes that return are inactive (asc_activemask page example)
    if ((uint32_t)lane >= active) return;
    r[22] = (int32_t)asc_activemask();
    r[23] = asc_shfl_down(lane, 4);         // from an inactive lane: uninitialised (all ones)
}
__global__ __vector__ void k_warp(__gm__ int32_t* o, __gm__ float* xf, __gm__ float* of, uint32_t n, uint32_t active) {
    asc_vf_call<warp_ops>(dim3(n), o, xf, of, active);
}

// a partial last warp (40 threads) and a 2-D block whose warps are 32 consecutive linear ids
__simt_vf__ inline void partial(__gm__ int32_t* o) {
    uint32_t lin = threadIdx.x + threadIdx.y * blockDim.x;
    o[lin * 2] = (int32_t)asc_activemask();
    o[lin * 2 + 1] = asc_reduce_add((int32_t)threadIdx.y);
}
__global__ __vector__ void k_partial(__gm__ int32_t* o, uint32_t dx, uint32_t dy) {
    asc_vf_call<partial>(dim3(dx, dy), o);
}

__simt_vf__ inline void halves(__gm__ half* h, __gm__ float* o) {
    half v = h[threadIdx.x];
    half s = asc_reduce_add(v);
    half mx = asc_reduce_max(v);
    o[threadIdx.x * 2] = (float)s;
    o[threadIdx.x * 2 + 1] = (float)mx;
}
__global__ __vector__ void k_half(__gm__ half* h, __gm__ float* o) { asc_vf_call<halves>(dim3(32), h, o); }

__simt_vf__ inline void badwidth(__gm__ int32_t* o, int32_t w) {
    o[threadIdx.x] = asc_shfl((int32_t)threadIdx.x, 0, w);  // @WIDTH
}
__global__ __vector__ void k_badwidth(__gm__ int32_t* o, int32_t w) { asc_vf_call<badwidth>(dim3(32), o, w); }
"""


def _tree_sum(v: torch.Tensor) -> torch.Tensor:
    """Adjacent pairs first, in float32 (the emulator's reading of 'bisection')."""
    v = v.clone()
    while v.numel() > 1:
        v = v.view(-1, 2).sum(1)
    return v[0]


def test_warp_functions_page_examples_and_divergence():
    n, nb = 64, 2
    o = torch.zeros(nb * n * NOUT, dtype=torch.int32)
    xf = torch.randn(nb * n)
    of = torch.zeros(nb * n * 2)
    rep = run_source(SRC, "k_warp", [o, xf, of, n, 20], nb)
    assert rep.ok
    r = o.view(nb * n, NOUT)
    lane = torch.arange(nb * n) % 32
    g16 = lane // 16 * 16
    assert torch.equal(r[:, 0], (g16 + 1).int())                                        # asc_shfl page: 1 / 17
    up = torch.where(lane % 16 < 2, lane, lane - 2)
    assert torch.equal(r[:, 1], up.int())                                              # {0,1,0,1,2,...}
    down = torch.where(lane % 16 + 2 >= 16, lane, lane + 2)
    assert torch.equal(r[:, 2], down.int())                                            # {2,...,15,14,15}
    assert torch.equal(r[:, 3], (lane ^ 1).int())
    assert (r[lane == 0, 4] == 496).all()
    assert (r[:, 5] == 496).all() and (r[:, 6] == 496).all()
    assert (r[:, 7] == 31).all() and (r[:, 8] == 0).all()
    assert (r[:, 9] == sum(1 << k for k in range(0, 32, 3))).all()
    assert (r[:, 10] == 1).all() and (r[:, 11] == 0).all()
    assert torch.equal(r[:, 12], lane.int())
    assert torch.equal(r[:, 13], ((1 << lane) - 1).int())
    assert torch.equal(r[:, 14].view(torch.int32), (~((1 << lane) - 1)).int())
    odd = sum(range(1, 32, 2))
    assert torch.equal(r[:, 15], torch.where(lane % 2 == 1, odd, 30).int())
    ball_hi = sum(1 << k for k in range(21, 32, 2))
    assert torch.equal(r[:, 16], torch.where(lane < 20, 190, ball_hi - (1 << 32)).int())
    # lanes with lane % 4 == t run t iterations: the last one sees the lanes with a higher count
    in_loop = {1: 0, 2: 0, 3: 0}
    for t in (1, 2, 3):
        in_loop[t] = sum(1 << k for k in range(32) if k % 4 >= t)
    exp17 = torch.tensor([in_loop.get(int(x) % 4, 0) for x in lane], dtype=torch.int64)
    assert torch.equal(r[:, 17].long() & 0xFFFFFFFF, exp17)
    assert (r[:, 18] == -1).all()
    assert torch.equal(r[:, 19], (31 - lane).int())
    assert torch.equal(r[:, 20], (lane ^ 3).int())
    f = xf.view(-1, 32)
    upf = torch.cat([f[:, :1], f[:, :-1]], dim=1)
    assert torch.equal(of.view(-1, 2)[:, 0], upf.reshape(-1))
    sums = torch.stack([_tree_sum(w) for w in f])
    assert torch.equal(of.view(-1, 2)[:, 1].view(-1, 32), sums[:, None].expand(-1, 32))
    # only lanes 0..19 of each warp stay: their mask; lanes 16..19 shuffle from lanes 20..23 (ended)
    act = r[lane < 20]
    assert (act[:, 22] == (1 << 20) - 1).all()
    l20 = lane[lane < 20]
    assert torch.equal(act[:, 23], torch.where(l20 + 4 < 20, l20 + 4, -1).int())


def test_partial_warp_and_2d_block():
    o = torch.zeros(40 * 2, dtype=torch.int32)
    run_source(SRC, "k_partial", [o, 40, 1], 1)
    m = o.view(40, 2)[:, 0]
    assert (m[:32] == -1).all() and (m[32:] == 0xFF).all()   # the last warp has 8 lanes
    o = torch.zeros(16 * 4 * 2, dtype=torch.int32)
    run_source(SRC, "k_partial", [o, 16, 4], 1)
    s = o.view(64, 2)[:, 1]
    assert (s[:32] == 16 * (0 + 1)).all() and (s[32:] == 16 * (2 + 3)).all()


def test_half_reduce():
    h = (torch.arange(32, dtype=torch.float32) * 0.37 - 3).half()
    o = torch.zeros(64)
    run_source(SRC, "k_half", [h, o], 1)
    v = h.float()
    while v.numel() > 1:  # every step rounded to half
        v = v.view(-1, 2).sum(1).half().float()
    assert (o.view(32, 2)[:, 0] == v[0]).all() and (o.view(32, 2)[:, 1] == h.float().max()).all()


def test_bad_width_is_an_error_at_its_line():
    o = torch.zeros(32, dtype=torch.int32)
    assert run_source(SRC, "k_badwidth", [o, 8], 1).ok and torch.equal(o, (torch.arange(32) // 8 * 8).int())
    rep = run(SRC, [o, 6], kernel="k_badwidth")
    assert kinds(rep.errors) == ["invalid_param"] and rep.errors[0]["line"] == line_of(SRC, "@WIDTH")
    assert "power of two" in rep.errors[0]["message"]
