"""Unordered writes of different cores to the same bytes race only when they store different
data (docs/emulator-internals.md, "Identical writes"): the official create_vec_index example has
8 blocks copy the same index vector to one GM output."""

from __future__ import annotations

import pytest
import torch
from conftest import HEADER, kinds, run

# Every block fills a UB row with 0, 1, 2, ... (mode 0), adds its block index at element
# `odd` (mode 1), and copies the row to the same GM bytes.
SRC = HEADER + r"""
__global__ __vector__ void same_out(GM_ADDR z, int32_t n, int32_t mode, int32_t odd) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, n * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    CreateVecIndex(t, 0.0f, n);
    if (mode == 1) {
        SetFlag<HardEvent::V_S>(EVENT_ID0);
        WaitFlag<HardEvent::V_S>(EVENT_ID0);
        t.SetValue(odd, (float)GetBlockIdx());
        SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
    } else {
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    }
    GlobalTensor<float> zg;
    zg.SetGlobalBuffer((__gm__ float*)z);
    DataCopy(zg, t, n);  // @COPY
}
"""


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_same_data_from_every_block_is_no_race(arch: str) -> None:
    z = torch.zeros(256)
    rep = run(SRC, [z, 256, 0, 0], block_dim=8, arch=arch)
    assert rep.ok, rep.summary()
    assert torch.equal(z, torch.arange(256, dtype=torch.float32))


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_one_differing_element_is_a_race(arch: str) -> None:
    rep = run(SRC, [torch.zeros(256), 256, 1, 77], block_dim=4, arch=arch)
    assert rep.races and set(kinds(rep.races)) == {"write-write"}, rep.summary()
