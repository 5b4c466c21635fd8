"""The timeline SVG: a colour legend, a cycle axis with ticks, the DSL line of each op in its
tooltip, and a header total equal to the axis range."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

import pytest
import tilelang.language as T
import torch
from dsl_lines import marker_line

import ascend_backend
from ascend_backend.emulator.timeline import COLORS, PIPE_ROLES, _ticks, dsl_lines

NS = {"s": "http://www.w3.org/2000/svg"}
HERE = os.path.abspath(__file__)


def _kernel(N=2048, block=256):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            a = T.alloc_fragment((block,), "float32")
            T.copy(A[bx * block], a)  # marker:load
            for i in T.Parallel(block):
                a[i] = a[i] * 2.0  # marker:scale
            T.copy(a, B[bx * block])  # marker:store

    return main


@pytest.fixture(scope="module")
def run():
    kernel = ascend_backend.compile(_kernel(), runtime="emulator")
    a = torch.randn(2048)
    b = torch.zeros(2048)
    kernel(a, b)
    assert torch.equal(b, 2 * a)
    return kernel.last_report


def _svg(report, tmp_path, blocks):
    path = tmp_path / f"t{blocks}.svg"
    report.write_timeline_svg(str(path), blocks=blocks)
    root = ET.parse(path).getroot()
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    titles = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
    return root, texts, titles


def test_all_blocks_header_total_is_the_axis_and_the_launch(run, tmp_path):
    _root, texts, titles = _svg(run, tmp_path, blocks=run.block_dim)
    total = run.timing["total_cycles"]
    head = re.search(r"- dav-3510: ([\d,]+) cycles = ([\d.]+) us", texts[0])
    assert head and int(head.group(1).replace(",", "")) == total, texts[0]
    axis = re.search(r"x axis: modelled cycles 0\.\.([\d,]+)", texts[1])
    assert axis and int(axis.group(1).replace(",", "")) == total, texts[1]
    assert f"{run.timing['time_us']:.2f}" == head.group(2)
    # ticks: round numbers from 0, increasing, none past the axis end
    ticks = [int(t.replace(",", "")) for t in texts if re.fullmatch(r"[\d,]+", t)]
    assert ticks[0] == 0 and ticks == sorted(ticks) and len(ticks) >= 4 and ticks[-1] <= total
    assert len({b - a for a, b in zip(ticks, ticks[1:], strict=False)}) == 1


def test_legend_names_every_pipe_drawn(run, tmp_path):
    root, texts, _ = _svg(run, tmp_path, blocks=2)
    drawn = {m.group(1) for t in texts if (m := re.fullmatch(r"block \d+ \S+ (\S+)", t))}
    assert drawn == {"MTE2", "V", "MTE3"}
    for p in drawn:
        assert f"{p}: {PIPE_ROLES[p]}" in texts
        assert root.find(f".//s:rect[@fill='{COLORS[p]}'][@width='12']", NS) is not None  # its swatch


def test_tooltips_give_the_dsl_line(run, tmp_path):
    _, texts, titles = _svg(run, tmp_path, blocks=2)
    name = os.path.basename(HERE)
    want = {op: f"{name}:{marker_line(HERE, m)}" for op, m in (("DataCopy", "load"), ("Muls", "scale"))}
    assert titles and all(re.search(rf"at {re.escape(name)}:\d+ \(kernel\.cpp line \d+\)", t) for t in titles), titles
    for op, loc in want.items():
        assert any(t.startswith(f"{op} at {loc} ") for t in titles), (op, loc, titles[:6])
    assert any(f"at {name}:{marker_line(HERE, 'store')} " in t for t in titles)
    # some blocks only: the header is the axis (the shown blocks' span) and names the launch's total
    axis = int(re.search(r"0\.\.([\d,]+)", texts[1]).group(1).replace(",", ""))
    assert int(re.search(r": ([\d,]+) cycles", texts[0]).group(1).replace(",", "")) == axis
    assert f"the whole launch takes {run.timing['total_cycles']:,} cycles" in texts[1]


def test_dsl_lines_of_generated_code():
    src = "\n".join([
        "void k() {",                        # 1
        "    DataCopy(a, b, 8);  // k.py:9",  # 2
        "    {  // k.py:12",                 # 3
        "        MmadParams mp;",            # 4
        "        Mmad(c, a, b, mp);",        # 5
        "    }",                             # 6
        "    SetFlag<HardEvent::V_MTE3>(0);  // RAW on a",  # 7
        "    LocalTensor<half> x = y;  // x: UB 16xfloat16 ND, other.py:3",  # 8
        "}",                                 # 9
    ])
    assert dsl_lines(src) == {2: "k.py:9", 3: "k.py:12", 4: "k.py:12", 5: "k.py:12", 6: "k.py:12", 8: "other.py:3"}


def test_ticks_are_round():
    assert _ticks(0, 3864) == [0, 500, 1000, 1500, 2000, 2500, 3000, 3500]
    assert _ticks(0, 7) == list(range(8))
    assert _ticks(0, 1_000_000)[:3] == [0, 200_000, 400_000]
