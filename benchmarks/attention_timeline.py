"""The MODELLED timeline of one steady-state K/V step of FlashAttention forward, as SVG, per arch.

Run: python benchmarks/attention_timeline.py [--arch dav-3510,dav-c220] [--seq 4096] [--block 256x64]
     [--out docs/img]

Compiles examples/attention.flashattn (fp16, dim 128, num_stages=2, non-causal) for the arch,
emulates the first wave of blocks (so each core's GM bandwidth share is the full launch's, as in
benchmarks/attention.py) and draws block 0's AIC and two AIVs, one row per pipe, over one step
in the middle of the K/V loop: from the start of step k's first QK^T Mmad to the start of step
k + 1's. Every figure comes from the emulator's timing model (docs/timing-model.md), nothing is
measured. Ops are coloured by pipe; hovering a box shows the op, its source line and its cycles.
"""

from __future__ import annotations

import argparse
import math
import sys
from html import escape
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ascend_backend  # noqa: E402
from ascend_backend.emulator import run_source  # noqa: E402
from ascend_backend.emulator.timeline import COLORS, PIPE_ORDER  # noqa: E402
from ascend_backend.emulator.timing import ASSUMPTIONS  # noqa: E402
from ascend_backend.kernel import launch_args  # noqa: E402
from examples.attention import flashattn  # noqa: E402

DIM = 128
BEST = {"dav-3510": (64, 256), "dav-c220": (64, 256)}  # the autotuner's choices at S = 4096


def step_window(timeline: list, steps: int) -> tuple[int, int, int]:
    """(start, end, k): block 0's QK^T Mmads (the AIC's first gemm of each step, the first Mmad
    line in the trace) split into ``steps`` equal groups; the window is step k = steps // 2."""
    mm = sorted((s, ln) for (b, c, p, n, s, _e, ln) in timeline if b == 0 and c == "AIC" and p == "M")
    first_line = mm[0][1]
    qk = [s for s, ln in mm if ln == first_line]
    per = max(1, len(qk) // steps)
    k = steps // 2
    return qk[k * per], qk[min(len(qk) - 1, (k + 1) * per)], k


def svg(arch: str, timeline: list, t0: int, t1: int, title: str) -> str:
    rows = sorted({(c, p) for (b, c, p, *_r) in timeline if b == 0},
                  key=lambda r: ({"AIC": 0, "AIV0": 1, "AIV1": 2}.get(r[0], 9), PIPE_ORDER.index(r[1])))
    left, width, rh, top = 150, 1100, 20, 56
    span = max(1, t1 - t0)
    busy = {r: 0 for r in rows}
    boxes = []
    for b, c, p, name, s, e, line in timeline:
        if b != 0 or e <= t0 or s >= t1:
            continue
        lo, hi = max(s, t0), min(e, t1)
        busy[(c, p)] += hi - lo
        x = left + (lo - t0) / span * width
        w = max(0.6, (hi - lo) / span * width)
        y = top + rows.index((c, p)) * rh + 3
        boxes.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{rh - 6}" fill="{COLORS.get(p, "#555")}">'
                     f'<title>{escape(name)} (line {line}): cycles {s:,}-{e:,}</title></rect>')
    height = top + rh * len(rows) + 44
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 90}" height="{height}" '
           f'font-family="monospace" font-size="11">', '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="8" y="18" font-size="13">{escape(title)}</text>',
           f'<text x="8" y="36">MODELLED by the emulator\'s timing model, not measured. Block 0, cycles '
           f'{t0:,}..{t1:,} ({span:,} cycles); right column: busy % of the pipe in this window</text>']
    for i, (c, p) in enumerate(rows):
        y = top + i * rh
        out.append(f'<text x="8" y="{y + 14}">{c} {p}</text>')
        out.append(f'<line x1="{left}" y1="{y + rh}" x2="{left + width}" y2="{y + rh}" stroke="#eee"/>')
        out.append(f'<text x="{left + width + 8}" y="{y + 14}">{100 * busy[(c, p)] / span:4.0f} %</text>')
    out += boxes
    legend = " ".join(f"{p}" for p in PIPE_ORDER)
    out.append(f'<text x="8" y="{height - 12}">pipes: {legend} (colours as in Report.write_timeline_svg)</text>')
    out.append("</svg>")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="dav-3510,dav-c220")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--block", default=None, help="block_MxN (default: the benchmark's best per arch)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    args = ap.parse_args()
    for arch in args.arch.split(","):
        bm, bn = (int(x) for x in args.block.split("x")) if args.block else BEST[arch]
        heads = max(1, math.ceil(32 / math.ceil(args.seq / bm)))
        k = ascend_backend.compile(flashattn(1, heads, args.seq, args.seq, DIM, False, bm, bn, 2),
                                   target={"kind": "ascendc", "arch": arch}, runtime="emulator")
        shape = (1, heads, args.seq, DIM)
        blocks = min(k.block_dim, int(ASSUMPTIONS[arch]["groups"]))
        rep = run_source(k.kernel_source, k.name, launch_args(k.program, [torch.zeros(shape).half() for _ in range(4)]),
                         block_dim=blocks, arch=arch, strict=False, checks=False, auto_sync=False)
        tl = rep._timeline  # (block, core, pipe, op, start, end, line)
        steps = math.ceil(args.seq / bn)
        t0, t1, kstep = step_window(tl, steps)
        title = (f"FlashAttention forward, {arch}, S={args.seq}, block {bm}x{bn}, dim {DIM}, fp16, num_stages=2: "
                 f"steady-state step {kstep} of {steps}")
        Path(args.out).mkdir(parents=True, exist_ok=True)
        path = Path(args.out) / f"attention_step_{arch}.svg"
        path.write_text(svg(arch, tl, t0, t1, title))
        print(f"{path}: cycles {t0}..{t1} ({t1 - t0} per step)")


if __name__ == "__main__":
    main()
