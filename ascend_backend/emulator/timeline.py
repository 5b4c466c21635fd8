"""Text and SVG pictures of the modelled timeline (every figure is from the timing model)."""

from __future__ import annotations

import re
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report import Report

PIPE_ORDER = ["S", "MTE2", "MTE1", "M", "FIX", "V", "MTE3"]
COLORS = {"S": "#9e9e9e", "MTE2": "#1f77b4", "MTE1": "#17becf", "M": "#d62728", "FIX": "#ff7f0e",
          "V": "#2ca02c", "MTE3": "#9467bd"}
CORE_ORDER = {"AIC": 0, "AIV0": 1, "AIV1": 2}


def _rows(report: Report, blocks: int) -> tuple[list[tuple[int, str, str]], int, int]:
    rows = sorted({(b, c, p) for (b, c, p, *_rest) in report._timeline if b < blocks},
                  key=lambda r: (r[0], CORE_ORDER.get(r[1], 9), PIPE_ORDER.index(r[2])))
    ends = [e for (b, _c, _p, _n, _s, e, _l) in report._timeline if b < blocks]
    starts = [s for (b, _c, _p, _n, s, _e, _l) in report._timeline if b < blocks]
    return rows, (min(starts) if starts else 0), (max(ends) if ends else 1)


def text(report: Report, width: int = 100, blocks: int = 1) -> str:
    """One line per (block, core, pipe): each character is a time slice, shaded by how busy
    the pipe is in it (' ' idle, '.' <25%, ':' <50%, '=' <75%, '#' busier)."""
    if not report._timeline:
        return "(no modelled timeline: the run recorded no ops or timing was disabled)"
    rows, t0, t1 = _rows(report, blocks)
    span = max(1, t1 - t0)
    cell = span / width
    fill: dict[tuple[int, str, str], list[float]] = {r: [0.0] * width for r in rows}
    for b, c, p, _n, s, e, _l in report._timeline:
        key = (b, c, p)
        if key not in fill:
            continue
        acc = fill[key]
        x0 = (s - t0) / cell
        x1 = (e - t0) / cell
        i = int(x0)
        while i < width and i < x1:
            lo = max(x0, i)
            hi = min(x1, i + 1)
            if hi > lo:
                acc[i] += hi - lo
            i += 1
    t = report.timing
    out = [f"MODELLED timeline (timing model, not measured): {t.get('total_cycles', 0):,} cycles total, "
           f"{t.get('time_us', 0):.2f} us at an assumed {t.get('clock_ghz')} GHz; "
           f"showing {min(blocks, report.block_dim)} block(s), cycles {t0:,}..{t1:,}, "
           f"one column = {cell:,.0f} cycles"]
    for key in rows:
        b, c, p = key
        line = "".join(" " if v <= 0 else "." if v < .25 else ":" if v < .5 else "=" if v < .75 else "#"
                       for v in fill[key])
        busy = sum(min(1.0, v) for v in fill[key]) / width * 100
        out.append(f"b{b:<2} {c:<4} {p:<4} |{line}| {busy:3.0f}%")
    return "\n".join(out)


#: What each pipe does (the legend), docs/ascend-c-facts.md.
PIPE_ROLES = {"S": "scalar unit", "MTE2": "copies in: GM -> L1 / UB", "MTE1": "L1 -> L0A / L0B",
              "M": "Cube: Mmad", "FIX": "Fixpipe: L0C -> GM / L1", "V": "Vector unit", "MTE3": "copies out: UB -> GM"}

_LOC = re.compile(r"([\w.\-]+\.py):(\d+)")


def dsl_lines(source: str | None) -> dict[int, str]:
    """The DSL ``file:line`` of each line of generated Ascend C: the ``// k.py:12`` comment codegen
    writes after an op, else that of the innermost block opened by a commented line (the statements
    of a ``{  // k.py:32`` block, a Mmad's parameters). Lines of no DSL statement are left out."""
    out: dict[int, str] = {}
    if not source:
        return out
    stack: list[tuple[int, str | None]] = []  # (brace depth the block opened at, its DSL loc)
    depth = 0
    for n, line in enumerate(source.splitlines(), 1):
        code, _, comment = line.partition("//")
        locs = _LOC.findall(comment)
        own = f"{locs[-1][0]}:{locs[-1][1]}" if locs else None
        inherited = next((loc for _d, loc in reversed(stack) if loc), None)
        loc = own or inherited
        if loc:
            out[n] = loc
        opens, closes = code.count("{"), code.count("}")
        for _ in range(closes):
            depth -= 1
            while stack and stack[-1][0] > depth:
                stack.pop()
        for _ in range(opens):
            depth += 1
            stack.append((depth, own))
    return out


def _ticks(t0: int, t1: int, want: int = 8) -> list[int]:
    """Round cycle counts (1, 2 or 5 times a power of ten apart) from t0 to t1."""
    span = max(1, t1 - t0)
    raw = span / want
    mag = 10 ** max(0, len(str(int(raw))) - 1)
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = -(-t0 // step) * step
    return list(range(first, t1 + 1, step))


def write_svg(report: Report, path: str, blocks: int = 2, max_ops: int = 20000, source: str | None = None) -> None:
    """Write the modelled timeline as SVG: one row per (block, core, pipe), one box per op, a cycle
    axis with ticks, a colour legend; a box's tooltip names the op, its DSL line (from ``source``,
    the generated Ascend C, default the report's) and its cycles.

    The axis runs from the launch's start (cycle 0) to its end (``timing['total_cycles']``, the
    figure in the header) when every block is shown, else to the last op of the blocks shown (the
    header then gives both)."""
    rows, _t0, t1 = _rows(report, blocks)
    t = report.timing
    total = int(t.get("total_cycles", 0) or 0)
    shown = min(blocks, report.block_dim)
    everything = shown >= report.block_dim
    t0 = 0
    t_end = max(t1, total) if everything else t1
    span = max(1, t_end - t0)
    lines = dsl_lines(source if source is not None else getattr(report, "source", None))
    left, width, rh, top = 170, 1200, 18, 74
    pipes = [p for p in PIPE_ORDER if any(r[2] == p for r in rows)]
    legend_h = 18 * ((len(pipes) + 2) // 3)
    rows_h = rh * max(1, len(rows))
    height = top + rows_h + 30 + legend_h + 24
    clock = t.get("clock_ghz")
    us = (t_end - t0) / (clock * 1e3) if clock else 0.0
    idx = {r: i for i, r in enumerate(rows)}
    head = (f"MODELLED timeline (timing model, not a measurement) - {escape(report.arch)}: "
            f"{t_end - t0:,} cycles = {us:.2f} us at an assumed {clock} GHz")
    if everything:
        sub = (f"all {report.block_dim} block(s) of the launch; x axis: modelled cycles {t0:,}..{t_end:,}, "
               "the launch's start to its end")
        if total > t1:
            sub += f" (its ops end at {t1:,}; the rest is the chip's GM bandwidth floor)"
    else:
        sub = (f"blocks shown: {shown} of {report.block_dim}; x axis: modelled cycles {t0:,}..{t_end:,}, up to "
               f"the last op of the blocks shown; the whole launch takes {total:,} cycles")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{height}" '
        f'font-family="monospace" font-size="11">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="8" y="16" font-size="13">{head}</text>',
        f'<text x="8" y="32">{sub}</text>',
    ]
    # the cycle axis: ticks and labels above the rows, a light grid line through them
    axis_y = top - 8
    parts.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + width}" y2="{axis_y}" stroke="#333"/>')
    parts.append(f'<text x="8" y="{axis_y - 4}">cycles</text>')
    for tick in _ticks(t0, t_end):
        x = left + (tick - t0) / span * width
        parts.append(f'<line x1="{x:.2f}" y1="{axis_y - 4}" x2="{x:.2f}" y2="{axis_y}" stroke="#333"/>')
        parts.append(f'<line x1="{x:.2f}" y1="{top}" x2="{x:.2f}" y2="{top + rows_h}" stroke="#f0f0f0"/>')
        parts.append(f'<text x="{x:.2f}" y="{axis_y - 7}" text-anchor="middle">{tick:,}</text>')
    for r, i in idx.items():
        y = top + i * rh
        parts.append(f'<text x="8" y="{y + 13}">block {r[0]} {r[1]} {r[2]}</text>')
        parts.append(f'<line x1="{left}" y1="{y + rh}" x2="{left + width}" y2="{y + rh}" stroke="#eee"/>')
    n = 0
    for b, c, p, name, s, e, line in report._timeline:
        key = (b, c, p)
        if key not in idx:
            continue
        n += 1
        if n > max_ops:
            break
        x = left + (s - t0) / span * width
        w = max(0.5, (e - s) / span * width)
        y = top + idx[key] * rh + 2
        color = COLORS.get(p, "#555")
        where = f"{lines[line]} (kernel.cpp line {line})" if line in lines else f"kernel.cpp line {line}"
        parts.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{rh - 4}" fill="{color}">'
                     f"<title>{escape(name)} at {escape(where)}: cycles {s:,}-{e:,} (modelled)</title></rect>")
    # the legend: one swatch per pipe drawn, with what the pipe does
    ly = top + rows_h + 30
    for i, p in enumerate(pipes):
        x = left + (i % 3) * 400
        y = ly + (i // 3) * 18
        parts.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{COLORS.get(p, "#555")}"/>')
        parts.append(f'<text x="{x + 18}" y="{y}">{p}: {escape(PIPE_ROLES.get(p, ""))}</text>')
    parts.append(f'<text x="8" y="{ly}">pipes</text>')
    if n > max_ops:
        parts.append(f'<text x="8" y="{height - 8}">(only the first {max_ops} ops drawn)</text>')
    else:
        parts.append(f'<text x="8" y="{height - 8}">hover over a box: the op, its line in the kernel\'s Python '
                     "file and in the generated Ascend C, its modelled cycles</text>")
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))
