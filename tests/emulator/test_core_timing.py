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
    assert s1 >= e0
    c_load = timing.op_cycles(arch, MTE2, GM, UB, "copy", 16384, 0, 0, 0)
    c_add = timing.op_cycles(arch, V, UB, UB, "add", 16384, 0, 0, 64)
    assert e0 - s0 == c_load and e1 - s1 == c_add
    assert t["total_cycles"] >= c_load + c_add
    assert t["busy_percent"]["V"] == pytest.approx(100 * c_add / t["total_cycles"])


def test_cost_formulas():
    a = timing.ASSUMPTIONS["dav-c220"]
    gm = timing.gm_bytes_per_cycle("dav-c220")
    assert gm == pytest.approx(1600e9 / 72 / 1.8e9)
    assert timing.op_cycles("dav-c220", MTE2, GM, UB, "x", 4096, 0, 0, 0) == a["gm_op_overhead"] + -(-4096 // gm)
    # L1 -> L0B is twice as slow on c220 as on 3510
    L1, L0B = 2, 4
    c220 = timing.op_cycles("dav-c220", 3, L1, L0B, "LoadData", 32768, 0, 0, 0)
    c3510 = timing.op_cycles("dav-3510", 3, L1, L0B, "LoadData", 32768, 0, 0, 0)
    assert c220 - a["local_copy_overhead"] == 2 * (c3510 - a["local_copy_overhead"])
    # a 128x128x64 fp16 Mmad: 1M MACs / 4096 per cycle
    assert timing.op_cycles("dav-3510", 2, 3, 5, "Mmad", 0, 0, 128 * 128 * 64, 0) == a["cube_op_overhead"] + 256


def test_blocks_are_list_scheduled():
    ops = [_op(MTE2, GM, UB, 16384)]
    threads = [{"block": b, "core": "AIV0", "ops": ops} for b in range(3)]
    tr = {"names": ["copy"], "threads": threads}
    one = timing.model({"names": ["copy"], "threads": threads[:1]}, "dav-3510", 1)[0]["total_cycles"]
    t = timing.model(tr, "dav-3510", 3)[0]
    assert t["total_cycles"] == one  # 3 blocks on 32 groups run side by side
    saved = timing.ASSUMPTIONS["dav-3510"]["groups"]
    timing.ASSUMPTIONS["dav-3510"]["groups"] = 1
    try:
        assert timing.model(tr, "dav-3510", 3)[0]["total_cycles"] == 3 * one
    finally:
        timing.ASSUMPTIONS["dav-3510"]["groups"] = saved


def test_module_docstring_says_modelled():
    assert "MODELLED" in (Path(timing.__file__).read_text())
