"""TBufPool and custom pools (EXTERN_IMPL_BUFPOOL): memory reuse between stages, with the
framework's syncs at TBufPool::Reset (资源管理/TBufPool/*.md, 自定义TBufPool/*.md)."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER, kinds, run

from ascend_backend.emulator import EmulatorError, run_source

# Two stages through pools that share one UB range: stage 1 z1 = x + y, stage 2 z2 = x - y.
# mode 0: two pools from TPipe::InitBufPool (the second shares the first);
# mode 1: one pool split into a sub-pool, a queue, and a second sub-pool sharing the first;
# skip_reset = 1 leaves out the Reset between the stages (a planted bug).
POOLS = HEADER + r"""
constexpr uint32_t N = 1024;

class Stages {
public:
    __aicore__ inline void Run(GM_ADDR x, GM_ADDR y, GM_ADDR z1, GM_ADDR z2, uint32_t mode, uint32_t skip_reset) {
        xg.SetGlobalBuffer((__gm__ float*)x);
        yg.SetGlobalBuffer((__gm__ float*)y);
        z1g.SetGlobalBuffer((__gm__ float*)z1);
        z2g.SetGlobalBuffer((__gm__ float*)z2);
        if (mode == 0) {
            pipe.InitBufPool(p1, N * sizeof(float) * 3);
            pipe.InitBufPool(p2, N * sizeof(float) * 3, p1);
            p1.InitBuffer(qa, 1, N * sizeof(float));
            p1.InitBuffer(qb, 1, N * sizeof(float));
            p1.InitBuffer(qo, 1, N * sizeof(float));
        } else {
            pipe.InitBufPool(p0, N * sizeof(float) * 3);
            p0.InitBufPool(p1, N * sizeof(float) * 2);
            p0.InitBuffer(qa, 1, N * sizeof(float));      // stays: used by both stages
            p0.InitBufPool(p2, N * sizeof(float) * 2, p1);
            p1.InitBuffer(qb, 1, N * sizeof(float));
            p1.InitBuffer(qo, 1, N * sizeof(float));
        }
        Stage(qa, qb, qo, z1g, false);
        if (!skip_reset) p1.Reset();
        if (mode == 0) p2.InitBuffer(qa2, 1, N * sizeof(float));
        p2.InitBuffer(qb2, 1, N * sizeof(float));
        p2.InitBuffer(qo2, 1, N * sizeof(float));
        if (mode == 0) Stage(qa2, qb2, qo2, z2g, true);
        else Stage(qa, qb2, qo2, z2g, true);
        p2.Reset();
        if (mode == 1) p0.Reset();
    }

private:
    template <class QA, class QB, class QO>
    __aicore__ inline void Stage(QA& a, QB& b, QO& o, GlobalTensor<float>& out, bool sub) {
        LocalTensor<float> ta = a.template AllocTensor<float>();
        LocalTensor<float> tb = b.template AllocTensor<float>();
        DataCopy(ta, xg, N);
        DataCopy(tb, yg, N);
        a.EnQue(ta);
        b.EnQue(tb);
        ta = a.template DeQue<float>();
        tb = b.template DeQue<float>();
        LocalTensor<float> to = o.template AllocTensor<float>();
        if (sub) Sub(to, ta, tb, N);
        else Add(to, ta, tb, N);
        o.EnQue(to);
        a.FreeTensor(ta);
        b.FreeTensor(tb);
        to = o.template DeQue<float>();
        DataCopy(out, to, N);
        o.FreeTensor(to);
    }
    TPipe pipe;
    TBufPool<TPosition::VECCALC> p0, p1, p2;
    TQue<TPosition::VECIN, 1> qa, qb, qa2, qb2;
    TQue<TPosition::VECOUT, 1> qo, qo2;
    GlobalTensor<float> xg, yg, z1g, z2g;
};

extern "C" __global__ __aicore__ void pools(GM_ADDR x, GM_ADDR y, GM_ADDR z1, GM_ADDR z2, uint32_t mode, uint32_t skip_reset) {
    Stages op;
    op.Run(x, y, z1, z2, mode, skip_reset);
}

// A custom pool: blocks placed with a 64-byte hole between them (not contiguous), a queue and
// a TBuf, z = x * y.
class HolePool {
public:
    __aicore__ inline HolePool() { Init(); }
    template <class T>
    __aicore__ inline bool InitBuffer(T& que, uint8_t num, uint32_t len) {
        auto h = GetBufHandle(GetCurBufSize());
        uint32_t at = GetCurAddr();
        que.InitStartBufHandle(h, num, len);
        for (uint32_t i = 0; i < num; ++i) que.InitBufHandle(this, i, h, at + i * (len + 64), len);
        SetCurAddr(at + num * (len + 64));
        SetCurBufSize(GetCurBufSize() + num);
        return true;
    }
    template <TPosition P>
    __aicore__ inline bool InitBuffer(TBuf<P>& buf, uint32_t len) {
        auto h = GetBufHandle(GetCurBufSize());
        buf.InitStartBufHandle(h, 1, len);
        buf.InitBufHandle(this, 0, h, GetCurAddr(), len);
        SetCurAddr(GetCurAddr() + len + 64);
        SetCurBufSize(GetCurBufSize() + 1);
        return true;
    }
    EXTERN_IMPL_BUFPOOL(HolePool, TPosition::VECCALC, 8);
};

extern "C" __global__ __aicore__ void custom_pool(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t len_blocks) {
    TPipe pipe;
    HolePool pool;
    TQue<TPosition::VECIN, 1> qx;
    TBuf<TPosition::VECIN> by;
    TQue<TPosition::VECOUT, 1> qz;
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x);
    yg.SetGlobalBuffer((__gm__ float*)y);
    zg.SetGlobalBuffer((__gm__ float*)z);
    pipe.InitBufPool(pool, len_blocks * 32);
    pool.InitBuffer(qx, 1, N * sizeof(float));
    pool.InitBuffer(by, N * sizeof(float));
    pool.InitBuffer(qz, 1, N * sizeof(float));
    LocalTensor<float> tx = qx.AllocTensor<float>();
    LocalTensor<float> ty = by.Get<float>();
    DataCopy(tx, xg, N);
    DataCopy(ty, yg, N);
    qx.EnQue(tx);
    tx = qx.DeQue<float>();
    LocalTensor<float> tz = qz.AllocTensor<float>();
    PipeBarrier<PIPE_ALL>();  // ty came from a TBuf: no queue event orders its copy
    Mul(tz, tx, ty, N);
    qz.EnQue(tz);
    qx.FreeTensor(tx);
    tz = qz.DeQue<float>();
    DataCopy(zg, tz, N);
    qz.FreeTensor(tz);
    pool.Reset();
}
"""

ARCHES = ["dav-c220", "dav-3510"]
N = 1024


def _xy():
    torch.manual_seed(3)
    return torch.randn(N), torch.randn(N)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("mode", [0, 1])
def test_pools_reuse_memory_between_stages(arch: str, mode: int) -> None:
    x, y = _xy()
    z1, z2 = torch.zeros(N), torch.zeros(N)
    rep = run_source(POOLS, "pools", [x, y, z1, z2, mode, 0], 1, arch=arch)  # strict: no race
    assert rep.ok
    torch.testing.assert_close(z1, x + y)
    torch.testing.assert_close(z2, x - y)


@pytest.mark.parametrize("arch", ARCHES)
def test_pool_reset_left_out_is_a_race(arch: str) -> None:
    # without Reset nothing waits for stage 1's reads before stage 2 overwrites the shared UB
    x, y = _xy()
    rep = run(POOLS, [x, y, torch.zeros(N), torch.zeros(N), 0, 1], kernel="pools", arch=arch)
    assert rep.races, rep.summary()
    assert {r["first"]["op"] for r in rep.races} & {"Add", "DataCopy"}


@pytest.mark.parametrize("arch", ARCHES)
def test_custom_pool_places_blocks(arch: str) -> None:
    x, y = _xy()
    z = torch.zeros(N)
    blocks = 3 * (N * 4 + 64) // 32
    rep = run_source(POOLS, "custom_pool", [x, y, z, blocks], 1, arch=arch)
    assert rep.ok
    torch.testing.assert_close(z, x * y)


def test_custom_pool_block_outside_the_pool_fails() -> None:
    x, y = _xy()
    # room for two blocks only: the third InitBufHandle lies outside the pool
    blocks = 2 * (N * 4 + 64) // 32
    with pytest.raises(EmulatorError, match="outside the pool"):
        run_source(POOLS, "custom_pool", [x, y, torch.zeros(N), blocks], 1, arch="dav-c220")


@pytest.mark.slow
def test_pool_overflow_fails() -> None:
    small = POOLS.replace("InitBufPool(p1, N * sizeof(float) * 3);\n            pipe.InitBufPool(p2, N * sizeof(float) * 3, p1)",
                          "InitBufPool(p1, N * sizeof(float) * 2);\n            pipe.InitBufPool(p2, N * sizeof(float) * 2, p1)")
    assert small != POOLS
    rep = run(small,
              [*_xy(), torch.zeros(N), torch.zeros(N), 0, 0], kernel="pools", arch="dav-c220")
    assert "invalid_param" in kinds(rep.errors), rep.summary()
    assert "do not fit in the pool" in rep.errors[0]["message"]
