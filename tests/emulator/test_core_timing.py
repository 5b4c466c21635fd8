"""Timing model: the documented assumptions table matches the code; replay semantics."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

from ascend_backend.emulator import timing

GM, UB = 0, 1
MTE2, V, MTE3, S = 4, 1, 5, 0


def test_docs_table_matches_code():
    text = (ROOT / "docs" / "timing-model.md").read_text()
    rows = dict()
    for m in re.finditer(r"^\| `(\w+)` \| ([\d.]+) \| ([\d.]+) \|", text, re.M):
        rows[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    assert set(rows) == set(timing.ASSUMPTIONS["dav-c220"]) == set(timing.ASSUMPTIONS["dav-3510"])
    for k, (c220, a3510) in rows.items():
        assert timing.ASSUMPTIONS["dav-c220"][k] == c220, k
        assert timing.ASSUMPTIONS["dav-3510"][k] == a3510, k


def _trace(ops: list[list[int]]) -> dict:
    return {"names": ["copy", "add", "SetFlag", "WaitFlag"], "threads": [{"block": 0, "core": "AIV0", "ops": ops}]}


def _op(pipe, src, dst, nbytes, name=0, repeats=0):
    return [0, pipe, name, 1, src, dst, nbytes, 0, 0, repeats]


def test_flag_serialises_and_independent_pipes_overlap():
    arch = "dav-3510"
    load = _op(MTE2, GM, UB, 16384)
    add = _op(V, UB, UB, 16384, name=1, repeats=64)
    # without a flag the V op overlaps the load
    t, tl = timing.model(_trace([load, add]), arch, 1)
    assert tl[1][4] < tl[0][5]
    # SetFlag<MTE2_V> (record 1) / WaitFlag (record 2, depends on thread 0 record 1)
    ops = [load, [1, MTE2, 2, 2, MTE2, V, 0, 0, 0, 0], [2, V, 3, 3, MTE2, V, 0, 0, 0, 0, 0, 1], add]
    t, tl = timing.model(_trace(ops), arch, 1)
    (_, _, _, _, s0, e0, _), (_, _, _, _, s1, e1, _) = tl
    bpc = timing.gm_bytes_per_cycle(arch, 1)
    busy_load, lat = timing.op_cost(arch, MTE2, GM, UB, 16384, 0, 0, 0, bpc)
    busy_add, _ = timing.op_cost(arch, V, UB, UB, 16384, 0, 0, 64)
    assert e0 - s0 == busy_load and e1 - s1 == busy_add
    assert s1 >= e0 + lat  # the flag fires once the load's data has landed
    assert t["total_cycles"] >= busy_load + lat + busy_add
    assert t["busy_percent"]["V"] == pytest.approx(100 * busy_add / t["total_cycles"])


def test_gm_latency_does_not_occupy_the_pipe():
    arch = "dav-3510"
    loads = [_op(MTE2, GM, UB, 4096) for _ in range(4)]
    t, tl = timing.model(_trace(loads), arch, 1)
    busy, lat = timing.op_cost(arch, MTE2, GM, UB, 4096, 0, 0, 0, timing.gm_bytes_per_cycle(arch, 1))
    assert [e[4] for e in tl] == [1 + i * busy for i in range(4)]  # back to back
    assert t["total_cycles"] == 1 + 4 * busy + lat


def test_cost_formulas():
    a = timing.ASSUMPTIONS["dav-c220"]
    # all 72 cores busy: the chip bandwidth is shared; one core alone hits its own cap
    assert timing.gm_bytes_per_cycle("dav-c220") == pytest.approx(1600e9 / 72 / 1.8e9)
    assert timing.gm_bytes_per_cycle("dav-c220", 1) == a["core_gm_bpc_max"]
    gm = timing.gm_bytes_per_cycle("dav-c220")
    assert timing.op_cost("dav-c220", MTE2, GM, UB, 4096, 0, 0, 0) == (a["gm_op_issue"] + -(-4096 // gm),
                                                                       a["gm_latency"])
    # L1 -> L0B is twice as slow on c220 as on 3510
    L1, L0B = 2, 4
    c220, _ = timing.op_cost("dav-c220", 3, L1, L0B, 32768, 0, 0, 0)
    c3510, _ = timing.op_cost("dav-3510", 3, L1, L0B, 32768, 0, 0, 0)
    assert c220 - a["local_copy_overhead"] == 2 * (c3510 - a["local_copy_overhead"])
    # a 128x128x64 fp16 Mmad: 1M MACs / 4096 per cycle
    assert timing.op_cost("dav-3510", 2, 3, 5, 0, 0, 128 * 128 * 64, 0) == (a["cube_op_overhead"] + 256, 0)


def test_blocks_are_list_scheduled():
    ops = [_op(MTE2, GM, UB, 16384)]
    threads = [{"block": b, "core": "AIV0", "ops": ops} for b in range(3)]
    tr = {"names": ["copy"], "threads": threads}
    t = timing.model(tr, "dav-3510", 3)[0]
    assert len(set(t["block_cycles"].values())) == 1
    one = t["block_cycles"]["0"]
    assert t["total_cycles"] == one  # 3 AIV blocks run side by side on a 64-AIV chip
    saved = timing.ASSUMPTIONS["dav-3510"]["aiv_cores"]
    timing.ASSUMPTIONS["dav-3510"]["aiv_cores"] = 1
    try:
        assert timing.model(tr, "dav-3510", 3)[0]["total_cycles"] == 3 * one
    finally:
        timing.ASSUMPTIONS["dav-3510"]["aiv_cores"] = saved


def test_module_docstring_says_modelled():
    assert "MODELLED" in (Path(timing.__file__).read_text())
