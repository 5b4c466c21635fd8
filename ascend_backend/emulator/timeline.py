"""Text and SVG pictures of the modelled timeline (every figure is from the timing model)."""

from __future__ import annotations

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


def write_svg(report: Report, path: str, blocks: int = 2, max_ops: int = 20000) -> None:
    """Write the modelled timeline as SVG: one row per (block, core, pipe), one box per op."""
    rows, t0, t1 = _rows(report, blocks)
    span = max(1, t1 - t0)
    left, width, rh, top = 170, 1200, 18, 48
    height = top + rh * max(1, len(rows)) + 40
    t = report.timing
    idx = {r: i for i, r in enumerate(rows)}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{height}" '
        f'font-family="monospace" font-size="11">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="8" y="16" font-size="13">MODELLED timeline (timing model, not a measurement) - '
        f'{escape(report.arch)}, {t.get("total_cycles", 0):,} cycles = {t.get("time_us", 0):.2f} us at an '
        f'assumed {t.get("clock_ghz")} GHz</text>',
        f'<text x="8" y="32">blocks shown: {min(blocks, report.block_dim)} of {report.block_dim}; '
        f'x axis: modelled cycles {t0:,}..{t1:,}</text>',
    ]
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
        parts.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{rh - 4}" fill="{color}">'
                     f"<title>{escape(name)} line {line}: cycles {s}-{e} (modelled)</title></rect>")
    if n > max_ops:
        parts.append(f'<text x="8" y="{height - 8}">(only the first {max_ops} ops drawn)</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))
