"""FlashAttention forward on the emulator's timing model: MODELLED cycles, per-pipe busy %, Cube peak %.

Run: python benchmarks/attention.py [--quick] [--arch dav-3510,dav-c220] [--seqs 4096,8192] [--no-causal]
     [--markdown] [--workers N] [--causal-mask diagonal|every_block]

The block shape of each (arch, S) is chosen by ``ascend_backend.autotune`` (the fewest modelled
cycles per head over BLOCKS, configurations emulated in worker processes, results cached under
TL_ASCEND_CACHE_DIR/tune); causal runs try the three best non-causal shapes, with the causal mask
applied to the K/V blocks that cross the diagonal only (``causal_mask="diagonal"``; TileLang's
example masks every block: ``--causal-mask every_block``).

The kernel is examples/attention.flashattn (fp16 in/out, fp32 softmax state, num_stages=2,
dim=128), seq_q = seq_kv = S for S in 1024..8192. Every figure is MODELLED by
ascend_backend/emulator/timing.py with the assumptions in docs/timing-model.md; nothing is
measured on an NPU.

Heads: the grid is ceil(S / block_M) x heads x batch(=1); heads = max(1, 32 / ceil(S / block_M))
so that even S=1024 fills one wave of the larger chip.

Non-causal: every block runs the same schedule, so only the first wave of blocks is emulated
(block_dim = min(grid, groups), `groups` from the timing model's ASSUMPTIONS; the GM bandwidth
share of each core is then the same as in the full launch), and a partial last wave on its own
(its fewer blocks share the chip among themselves):

    modelled total = (waves - 1) x (cycles of the first wave) + (cycles of the last wave),
    waves = ceil(grid / groups).

Causal: block bx processes ceil((bx+1) * block_M / block_N) K/V blocks, so blocks differ and the
first wave is not representative: every block is emulated and the total is the model's own
list schedule of them (no scaling).

Fraction of Cube peak:
  per core = MACs of the two gemms issued by every block of the grid / (sum of their modelled
             block cycles x cube_macs_per_cycle_16bit)
  chip     = useful MACs of the whole launch (causal: only the unmasked half, S(S+1)/2 pairs) /
             (modelled total x cube_macs_per_cycle_16bit x aic_cores)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ascend_backend.autotune import Trial, tune  # noqa: E402
from ascend_backend.emulator.timing import ASSUMPTIONS  # noqa: E402
from examples.attention import flashattn  # noqa: E402

ARCHS = ("dav-3510", "dav-c220")
SEQS = (1024, 2048, 4096, 8192)
QUICK_SEQS = (1024, 4096)
DIM = 128
STAGES = 2
# (block_M, block_N): the autotuner's search space (shapes that do not fit UB/L1/L0 are reported
# with the compiler's MemoryBudgetError and cannot win).
BLOCKS = ((256, 64), (128, 256), (128, 128), (128, 64), (64, 256), (64, 128), (64, 64))
QUICK_BLOCKS = ((128, 128), (128, 64))

console = Console(width=230)
# Causal runs emulate every block; c220 traces of S >= 4096 exceed the default cap of 1M records.
os.environ.setdefault("TL_ASCEND_EMU_TRACE_CAP", "6000000")


@dataclass
class Run:
    arch: str
    seq: int
    causal: bool
    block: tuple[int, int]
    heads: int = 1
    grid: int = 0
    emulated: int = 0
    waves: int = 0
    total_cycles: int = 0
    time_us: float = 0.0
    busy: dict[str, float] = field(default_factory=dict)
    gm_bpc: float = 0.0
    core_peak: float = 0.0
    chip_peak: float = 0.0
    wall: float = 0.0
    skipped: str = ""


def heads_for(seq: int, block_m: int) -> int:
    return max(1, math.ceil(32 / math.ceil(seq / block_m)))


def _issued(seq: int, causal: bool, bm: int, bn: int, blocks: int) -> int:
    """MACs of the two gemms issued by the first ``blocks`` blocks (2 x bm x bn x DIM per K/V block)."""
    rows = math.ceil(seq / bm)
    issued = 0
    for b in range(blocks):
        bx = b % rows
        kv = min(math.ceil(seq / bn), math.ceil((bx + 1) * bm / bn)) if causal else math.ceil(seq / bn)
        issued += 2 * bm * bn * DIM * kv
    return issued


def from_trial(arch: str, seq: int, causal: bool, t: Trial) -> Run:
    """A benchmark row from one autotuner trial (the same figures run_one computes)."""
    bm, bn = t.config["block_M"], t.config["block_N"]
    r = Run(arch, seq, causal, (bm, bn), heads=t.config["heads"], wall=t.wall_s)
    a = ASSUMPTIONS[arch]
    r.grid, r.waves = t.block_dim or math.ceil(seq / bm) * r.heads, t.waves or 1
    if not t.ok:
        r.skipped = t.error.replace(f"{ROOT}/", "")
        return r
    r.emulated, r.total_cycles = t.blocks_emulated, int(t.cycles)
    r.time_us, r.busy, r.gm_bpc = float(t.time_us), dict(t.busy), t.gm_bpc
    macs16 = a["cube_macs_per_cycle_16bit"]
    r.core_peak = 100.0 * _issued(seq, causal, bm, bn, r.grid) / (t.block_cycles * macs16)
    pairs = seq * (seq + 1) // 2 if causal else seq * seq
    r.chip_peak = 100.0 * 2 * pairs * DIM * r.heads / (r.total_cycles * macs16 * a["aic_cores"])
    return r


def tuned(arch: str, seq: int, causal: bool, blocks, workers: int | None,
          causal_mask: str = "diagonal") -> list[Run]:
    """Every block shape of ``blocks`` through the autotuner, best (fewest cycles per head) first."""
    configs = [{"block_M": bm, "block_N": bn, "heads": heads_for(seq, bm)} for bm, bn in blocks]
    fixed = {"batch": 1, "seq_q": seq, "seq_kv": seq, "dim": DIM, "is_causal": causal, "num_stages": STAGES}
    if causal:
        fixed["causal_mask"] = causal_mask
    res = tune(flashattn, configs, fixed=fixed, target=f"ascendc:{arch}",
               blocks="all" if causal else "first_wave", workers=workers)
    runs = [from_trial(arch, seq, causal, t) for t in res.trials]
    return sorted(runs, key=lambda r: (bool(r.skipped), r.total_cycles / (r.heads * seq) if not r.skipped else 0))


PIPE_COLS = ("M", "V", "MTE1", "MTE2", "MTE3", "FIX", "S")


def _row(r: Run) -> list[str]:
    head = [r.arch, "yes" if r.causal else "no", str(r.seq), f"{r.block[0]}x{r.block[1]}", str(r.heads), str(r.grid)]
    if r.skipped:
        return head + ["", "", f"skipped: {r.skipped}"] + [""] * (5 + len(PIPE_COLS))
    return head + [str(r.emulated), str(r.waves), f"{r.total_cycles:,}", f"{r.time_us:,.1f}", f"{r.gm_bpc:.2f}"] + [
        f"{r.busy.get(p, 0):.1f}" for p in PIPE_COLS] + [f"{r.core_peak:.1f}", f"{r.chip_peak:.1f}", f"{r.wall:.0f}"]


HEAD = ["arch", "causal", "S", "block MxN", "heads", "grid", "blocks emulated", "waves", "cycles (total)", "time us",
        "GM B/cyc/core"] + [f"{p} busy %" for p in PIPE_COLS] + ["Cube peak % (core)", "Cube peak % (chip)",
                                                                  "wall s"]


def table(runs: list[Run], title: str) -> Table:
    tb = Table(title=title)
    for col in HEAD:
        tb.add_column(col, justify="left" if col in ("arch", "causal") else "right")
    for r in runs:
        tb.add_row(*_row(r))
    return tb


def markdown(runs: list[Run]) -> str:
    head = [h for h in HEAD if h != "wall s"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in runs:
        out.append("| " + " | ".join(_row(r)[:len(head)]) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="S = 1024 and 4096, blocks 128x128 and 128x64, non-causal")
    ap.add_argument("--arch", default=",".join(ARCHS))
    ap.add_argument("--no-causal", action="store_true")
    ap.add_argument("--seqs", help="comma-separated sequence lengths (default 1024,2048,4096,8192)")
    ap.add_argument("--workers", type=int, default=None, help="autotuner worker processes (default 2)")
    ap.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    ap.add_argument("--causal-mask", choices=("diagonal", "every_block"), default="diagonal",
                    help="causal runs: mask the K/V blocks that cross the diagonal only (default), or every "
                    "block as TileLang's example does (examples/attention.flashattn's causal_mask)")
    args = ap.parse_args()
    archs = args.arch.split(",")
    seqs = QUICK_SEQS if args.quick else SEQS
    if args.seqs:
        seqs = tuple(int(x) for x in args.seqs.split(","))
    blocks = QUICK_BLOCKS if args.quick else BLOCKS
    causals = (False,) if args.quick or args.no_causal else (False, True)
    t_start = time.perf_counter()
    console.print("[bold]FlashAttention forward on the emulator's timing model: every figure is MODELLED "
                  "(docs/timing-model.md), not measured.[/bold]")
    console.print(f"dim={DIM}, fp16, num_stages={STAGES}, batch=1. Non-causal: first wave (and a partial last "
                  "wave) emulated, total = full waves x first wave + last wave. Causal: every block emulated "
                  "(blocks differ), total = the model's list schedule.")
    runs: list[Run] = []
    best: list[Run] = []
    ranked: dict = {}
    for arch in archs:
        for causal in causals:
            for seq in seqs:
                if causal:
                    # the three best non-causal shapes (causal adds the mask: a winner may not fit UB,
                    # and the causal ranking can differ from the non-causal one)
                    win = [r.block for r in ranked.get((arch, seq), []) if not r.skipped][:3]
                    cands = tuned(arch, seq, True, win or blocks[:1], args.workers, args.causal_mask)
                else:
                    cands = ranked[(arch, seq)] = tuned(arch, seq, False, blocks, args.workers)
                runs.extend(cands)
                if cands and not cands[0].skipped:
                    best.append(cands[0])
                console.print(f"  [dim]{arch} S={seq} causal={causal} ({time.perf_counter() - t_start:.0f} s)[/dim]")
    console.print(table(runs, "FlashAttention forward, dim 128, all block shapes tried (MODELLED)"))
    console.print(table(best, "Best block shape per (arch, S, causal) by modelled cycles per head (MODELLED)"))
    if args.markdown:
        print("\n### All runs\n")
        print(markdown(runs))
        print("\n### Best block shape per (arch, S, causal)\n")
        print(markdown(best))
    console.print(f"wall time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
