"""TQue/TQueBind: implicit synchronisation of the classic queue-style Ascend C kernels."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER, kinds, line_of, run

from ascend_backend.emulator import run_source

# The usual hand-written vector kernel: CopyIn / Compute / CopyOut stages with queues,
# BUFFER_NUM = 2 (double buffering through the queue depth). `bug` drops the FreeTensor calls of the inputs.
QADD = HEADER + r"""
constexpr int32_t BUFFER_NUM = 2;
constexpr uint32_t TILE = 512;

class KernelAdd {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t per, uint32_t bug) {
        xg.SetGlobalBuffer((__gm__ half*)x + GetBlockIdx() * per, per);
        yg.SetGlobalBuffer((__gm__ half*)y + GetBlockIdx() * per, per);
        zg.SetGlobalBuffer((__gm__ half*)z + GetBlockIdx() * per, per);
        pipe.InitBuffer(inX, BUFFER_NUM, TILE * sizeof(half));
        pipe.InitBuffer(inY, BUFFER_NUM, TILE * sizeof(half));
        pipe.InitBuffer(outZ, BUFFER_NUM, TILE * sizeof(half));
        tiles = per / TILE;
        this->bug = bug;
    }
    __aicore__ inline void Process() {
        for (uint32_t i = 0; i < tiles; ++i) {
            CopyIn(i);
            Compute(i);
            CopyOut(i);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t i) {
        LocalTensor<half> x = inX.AllocTensor<half>();  // @ALLOC
        LocalTensor<half> y = inY.AllocTensor<half>();
        DataCopy(x, xg[i * TILE], TILE);
        DataCopy(y, yg[i * TILE], TILE);
        inX.EnQue(x);
        inY.EnQue(y);
    }
    __aicore__ inline void Compute(uint32_t i) {
        LocalTensor<half> x = inX.DeQue<half>();
        LocalTensor<half> y = inY.DeQue<half>();
        LocalTensor<half> z = outZ.AllocTensor<half>();
        Add(z, x, y, TILE);
        outZ.EnQue<half>(z);
        if (!bug) {
            inX.FreeTensor(x);
            inY.FreeTensor(y);
        }
    }
    __aicore__ inline void CopyOut(uint32_t i) {
        LocalTensor<half> z = outZ.DeQue<half>();
        DataCopy(zg[i * TILE], z, TILE);
        outZ.FreeTensor(z);
    }
    TPipe pipe;
    TQue<TPosition::VECIN, BUFFER_NUM> inX, inY;
    TQue<TPosition::VECOUT, BUFFER_NUM> outZ;
    GlobalTensor<half> xg, yg, zg;
    uint32_t tiles = 0, bug = 0;
};

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t per, uint32_t bug) {
    KernelAdd op;
    op.Init(x, y, z, per, bug);
    op.Process();
}
"""


def _args(bug: int, blocks: int = 4, per: int = 4096):
    x = torch.randn(blocks * per, dtype=torch.float16)
    y = torch.randn(blocks * per, dtype=torch.float16)
    return [x, y, torch.zeros(blocks * per, dtype=torch.float16), per, bug]


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_queue_kernel_is_clean_and_correct(arch):
    args = _args(0)
    rep = run_source(QADD, "add_custom", args, 4, arch=arch)
    assert rep.ok and torch.equal(args[2], args[0] + args[1])
    assert rep.op_counts == {"V": 32, "MTE2": 64, "MTE3": 32}


def test_missing_free_tensor_is_reported():
    rep = run(QADD, _args(1), 4)
    assert "wait_without_set" in kinds(rep.flag_errors)
    e = rep.flag_errors[0]
    assert e["line"] == line_of(QADD, "@ALLOC") and "FreeTensor" in e["message"]
    # the reused input buffers are overwritten while the Add may still read them (and while the
    # previous load into them may still be writing: overlapping MTE2 writes need a barrier)
    pairs = {(r["first"]["pipe"], r["second"]["pipe"], r["kind"]) for r in rep.races}
    assert ("V", "MTE2", "read-write") in pairs and ("MTE2", "MTE2", "write-write") in pairs
