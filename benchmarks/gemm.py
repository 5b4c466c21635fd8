"""GEMM benchmark on the emulator's timing model: MODELLED cycles, Cube busy % and roofline ratio.

Run: python benchmarks/gemm.py [--quick] [--arch dav-3510,dav-c220] [--dtype float16,bfloat16] [--markdown]

fp16 and bf16 GEMM C = A x B (fp32 accumulation, output in the input dtype), 1024..8192 cubes
plus skinny shapes (M = 16..256, N = K = 4096..8192), on each arch, num_stages 1/2/3, with the
kernel of examples/gemm.py. Every figure is MODELLED by ascend_backend/emulator/timing.py with
the assumptions in docs/timing-model.md; nothing is measured on an NPU.

First-wave scaling. Every block of this GEMM runs the same schedule (one output tile, the full
K loop), so the kernel is compiled for the full shape but only its first wave of blocks is
emulated: block_dim = min(grid, groups), with `groups` the AICs of the arch in the timing
model's ASSUMPTIONS (Cube-only blocks take one AIC each). The GM bandwidth share of a core is
then the same as in the full launch (the model divides the chip bandwidth among the blocks
running at once); a partial last wave, whose fewer blocks share the chip among themselves, is
emulated on its own (ascend_backend.emulator.waves), and

    modelled total = (waves - 1) x (first wave) + (last wave),  waves = ceil(grid / groups)

which equals the model's own list schedule of all blocks when every block lasts the same.

L2: the timing model blends L2-hit and HBM rates by the launch's L2 miss fraction (first read of
a byte misses, later reads hit). Over the whole launch every element of A and B is read once
from HBM, so the miss fraction passed to the model is (|A| + |B|) / (bytes all blocks read).

Roofline bound (cycles) = max(Cube time at peak, compulsory GM traffic at the chip bandwidth):
    Cube  = M*N*K / (cube_macs_per_cycle_16bit * aic_cores)
    GM    = ((M*K + K*N) * in_bytes + M*N * out_bytes) / (chip_gm_bandwidth_gbps / clock_ghz)

For each shape and arch the tile configuration (block_M, block_N, block_K) with the fewest
modelled cycles at num_stages=2 (fp16) is chosen from a few candidates that fit L0A/L0B/L0C;
num_stages 1/2/3 and both dtypes are then run with it.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ascend_backend  # noqa: E402
from ascend_backend.emulator import run_source  # noqa: E402
from ascend_backend.emulator.timing import ASSUMPTIONS, l2_miss_fraction  # noqa: E402
from ascend_backend.emulator.waves import emulate_waves  # noqa: E402
from ascend_backend.errors import AscendCompileError  # noqa: E402
from examples.gemm import matmul  # noqa: E402

ARCHS = ("dav-3510", "dav-c220")
DTYPES = ("float16", "bfloat16")
STAGES = (1, 2, 3)
ELEM_BYTES = {"float16": 2, "bfloat16": 2}
TORCH_DTYPE = {"float16": torch.float16, "bfloat16": torch.bfloat16}

CUBES = [(s, s, s) for s in (1024, 2048, 4096, 8192)]
SKINNY = [(m, nk, nk) for nk in (4096, 8192) for m in (16, 64, 256)]
QUICK = [(1024, 1024, 1024), (4096, 4096, 4096), (64, 4096, 4096)]
TARGET_SHAPE = (4096, 4096, 4096)

# Tile candidates (block_M, block_N, block_K); block_M is clipped to M for skinny shapes. L0C
# must hold bM*bN*4 B: 128 KB (c220) or 256 KB (3510); L1 must hold num_stages x (bM + bN) x bK x 2 B
# of 512 KB. Operand tiles larger than half of L0A/L0B are stepped through K by the compiler.
# Candidates that do not fit are rejected by the compiler (MemoryBudgetError) and skipped. A 192-row
# or 192-column tile does not divide 4096: the last tiles are partial (tails), computed in full.
TILES = [(128, 128, 64), (128, 256, 64), (256, 128, 64), (256, 256, 64), (128, 128, 128), (128, 256, 128),
         (256, 128, 128), (256, 256, 128), (128, 256, 256), (256, 128, 256), (256, 256, 256), (192, 256, 128),
         (256, 192, 128), (192, 256, 256)]
DEFAULT_TILE = (128, 128, 64)

# Functional emulation cost grows with the MACs of the first wave; above this many MACs a run
# takes well over a minute on 2 cores and is skipped (and reported as skipped).
MAX_WAVE_MACS = 40e9

console = Console(width=230)


@dataclass
class Run:
    arch: str
    dtype: str
    shape: tuple[int, int, int]
    tile: tuple[int, int, int]
    stages: int
    grid: int = 0
    wave_blocks: int = 0
    waves: int = 0
    wave_cycles: int = 0
    total_cycles: int = 0
    time_us: float = 0.0
    busy: dict[str, float] = field(default_factory=dict)
    gm_bpc: float = 0.0
    l2_miss: float = 1.0
    cube_bound: float = 0.0
    gm_bound: float = 0.0
    wall: float = 0.0
    skipped: str = ""

    @property
    def bound(self) -> float:
        return max(self.cube_bound, self.gm_bound)

    @property
    def ratio(self) -> float:
        return self.total_cycles / self.bound if self.bound else float("nan")


def roofline(arch: str, dtype: str, M: int, N: int, K: int) -> tuple[float, float]:
    """(Cube cycles at peak, compulsory GM traffic cycles at the chip bandwidth)."""
    a = ASSUMPTIONS[arch]
    cube = M * N * K / (a["cube_macs_per_cycle_16bit"] * a["aic_cores"])
    eb = ELEM_BYTES[dtype]
    traffic = (M * K + K * N) * eb + M * N * eb
    chip_bpc = a["chip_gm_bandwidth_gbps"] / a["clock_ghz"]  # GB/s / (G cycles/s) = bytes/cycle
    return cube, traffic / chip_bpc


def clip_tile(tile: tuple[int, int, int], shape: tuple[int, int, int]) -> tuple[int, int, int]:
    M, N, K = shape
    bm, bn, bk = tile
    return min(bm, M), min(bn, N), min(bk, K)


def run_one(arch: str, dtype: str, shape: tuple[int, int, int], tile: tuple[int, int, int], stages: int) -> Run:
    M, N, K = shape
    bm, bn, bk = tile
    r = Run(arch, dtype, shape, tile, stages)
    r.cube_bound, r.gm_bound = roofline(arch, dtype, M, N, K)
    groups = int(ASSUMPTIONS[arch]["aic_cores"])  # Cube-only blocks: one per AIC
    r.grid = math.ceil(M / bm) * math.ceil(N / bn)
    r.wave_blocks = min(r.grid, groups)
    r.waves = math.ceil(r.grid / groups)
    if r.wave_blocks * bm * bn * K > MAX_WAVE_MACS:
        r.skipped = f"first wave is {r.wave_blocks * bm * bn * K / 1e9:.0f} GMAC of functional emulation (too slow)"
        return r
    try:
        kernel = ascend_backend.compile(
            matmul(M, N, K, bm, bn, bk, dtype=dtype, out_dtype=dtype, num_stages=stages),
            target={"kind": "ascendc", "arch": arch}, runtime="emulator")
    except AscendCompileError as e:
        r.skipped = f"{type(e).__name__}: {str(e).splitlines()[0]}".replace(f"{ROOT}/", "")
        return r
    assert kernel.block_dim == r.grid, (kernel.block_dim, r.grid)
    td = TORCH_DTYPE[dtype]
    args = [torch.zeros(M, K, dtype=td), torch.zeros(K, N, dtype=td), torch.zeros(M, N, dtype=td)]
    t0 = time.perf_counter()

    def run(blocks: int):
        return run_source(kernel.kernel_source, kernel.name, args, block_dim=blocks, arch=arch,
                          strict=False, checks=False, auto_sync=False)

    def launch_miss(rep) -> float:
        # L2: the emulated first wave reads its operand panels once per block; over the whole
        # launch every element of A and B is read from HBM once and then from L2
        # (docs/timing-model.md)
        launch_reads = rep.gm_reads["bytes"] / r.wave_blocks * r.grid
        return l2_miss_fraction(arch, launch_reads, (M * K + K * N) * ELEM_BYTES[dtype])

    w = emulate_waves(run, r.grid, groups, launch_miss)
    r.wall = time.perf_counter() - t0
    t = w.first
    assert t["modelled"] and not w.truncated
    r.l2_miss = float(t["l2_miss_fraction"])
    r.wave_cycles = int(t["total_cycles"])
    r.total_cycles = w.cycles
    r.time_us = r.total_cycles / (t["clock_ghz"] * 1e3)
    r.busy = dict(w.busy)
    r.gm_bpc = float(t["gm_bytes_per_cycle_per_core"])
    return r


def tiles_for(arch: str, shape: tuple[int, int, int], search: bool) -> list[tuple[int, int, int]]:
    cands = TILES if search else [DEFAULT_TILE]
    out: list[tuple[int, int, int]] = []
    for t in cands:
        c = clip_tile(t, shape)
        if c not in out:
            out.append(c)
    return out


def fmt_tile(t: tuple[int, int, int]) -> str:
    return "x".join(str(x) for x in t)


def fmt_shape(s: tuple[int, int, int]) -> str:
    return "x".join(str(x) for x in s)


def table(runs: list[Run], title: str) -> Table:
    tb = Table(title=title, show_lines=False)
    for col in ("arch", "dtype", "M x N x K", "tile bMxbNxbK", "stages", "grid", "waves", "L2 miss %", "GM B/cyc/core",
                "cycles (1st wave)", "cycles (total)", "time us", "Cube busy %", "MTE2 busy %",
                "roofline cyc", "bound by", "model/roofline"):
        tb.add_column(col, justify="right" if col not in ("arch", "dtype", "bound by") else "left")
    for r in runs:
        if r.skipped:
            tb.add_row(r.arch, r.dtype, fmt_shape(r.shape), fmt_tile(r.tile), str(r.stages), str(r.grid),
                       str(r.waves), "", "", "", f"skipped: {r.skipped}", "", "", "", f"{r.bound:,.0f}", "", "")
            continue
        tb.add_row(r.arch, r.dtype, fmt_shape(r.shape), fmt_tile(r.tile), str(r.stages), str(r.grid), str(r.waves),
                   f"{100 * r.l2_miss:.1f}", f"{r.gm_bpc:.2f}", f"{r.wave_cycles:,}", f"{r.total_cycles:,}",
                   f"{r.time_us:,.1f}",
                   f"{r.busy.get('M', 0):.1f}", f"{r.busy.get('MTE2', 0):.1f}", f"{r.bound:,.0f}",
                   "Cube" if r.cube_bound >= r.gm_bound else "GM", f"{r.ratio:.2f}x")
    return tb


def markdown(runs: list[Run]) -> str:
    head = ("| arch | dtype | M x N x K | tile | stages | grid | waves | L2 miss % | cycles (total) | time us "
            "| Cube busy % | MTE2 busy % | roofline cycles | bound | model / roofline |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in runs:
        if r.skipped:
            lines.append(f"| {r.arch} | {r.dtype} | {fmt_shape(r.shape)} | {fmt_tile(r.tile)} | {r.stages} | {r.grid} "
                         f"| {r.waves} | | skipped: {r.skipped} | | | | {r.bound:,.0f} | | |")
            continue
        lines.append(f"| {r.arch} | {r.dtype} | {fmt_shape(r.shape)} | {fmt_tile(r.tile)} | {r.stages} | {r.grid} "
                     f"| {r.waves} | {100 * r.l2_miss:.1f} | {r.total_cycles:,} | {r.time_us:,.1f} "
                     f"| {r.busy.get('M', 0):.1f} | {r.busy.get('MTE2', 0):.1f} | {r.bound:,.0f} "
                     f"| {'Cube' if r.cube_bound >= r.gm_bound else 'GM'} | {r.ratio:.2f}x |")
    return "\n".join(lines)


def check_targets(runs: list[Run], archs: list[str], dtypes: list[str]) -> list[tuple[str, str, str, bool, str]]:
    """Targets at 4096^3: Cube busy >= 85 %, model/roofline <= 1.2 (num_stages=2), t(1)/t(2) >= 1.5,
    for every tile that has both a num_stages=1 and a num_stages=2 run."""
    out = []
    for arch in archs:
        for dtype in dtypes:
            sel = [r for r in runs if r.arch == arch and r.dtype == dtype and r.shape == TARGET_SHAPE and not r.skipped]
            seen = set()
            for s2 in sorted((r for r in sel if r.stages == 2), key=lambda r: r.total_cycles):
                s1 = next((r for r in sel if r.stages == 1 and r.tile == s2.tile), None)
                if s1 is None or s2.tile in seen:
                    continue
                seen.add(s2.tile)
                key = f"{arch} {dtype} 4096^3 tile {fmt_tile(s2.tile)}"
                busy = s2.busy.get("M", 0.0)
                sp = s1.total_cycles / s2.total_cycles
                out.append((key, "Cube busy >= 85 % (num_stages=2)", f"{busy:.1f} %", busy >= 85.0, ""))
                out.append((key, "model / roofline <= 1.2 (num_stages=2)", f"{s2.ratio:.2f}x", s2.ratio <= 1.2, ""))
                out.append((key, "t(num_stages=1) / t(num_stages=2) >= 1.5", f"{sp:.2f}x", sp >= 1.5, ""))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few shapes (1024^3, 4096^3, 64x4096x4096)")
    ap.add_argument("--arch", default=",".join(ARCHS))
    ap.add_argument("--dtype", default=",".join(DTYPES))
    ap.add_argument("--no-search", action="store_true", help=f"use the {fmt_tile(DEFAULT_TILE)} tile only")
    ap.add_argument("--markdown", action="store_true", help="also print the tables as Markdown")
    args = ap.parse_args()
    archs = args.arch.split(",")
    dtypes = args.dtype.split(",")
    shapes = QUICK if args.quick else CUBES + SKINNY
    t_start = time.perf_counter()

    console.print("[bold]GEMM on the emulator's timing model: every figure is MODELLED (docs/timing-model.md), "
                  "not measured.[/bold]")
    console.print("Only the first wave of blocks (min(grid, AICs) blocks) and a partial last wave are "
                  "emulated; total = full waves x first wave + last wave, waves = ceil(grid / AICs). "
                  "Roofline = max(Cube at peak over all AIC cores, compulsory GM traffic at the chip bandwidth).")
    for arch in archs:
        a = ASSUMPTIONS[arch]
        console.print(f"  {arch}: {a['aic_cores']} AIC, groups {a['groups']}, "
                      f"{a['cube_macs_per_cycle_16bit']} MACs/cycle per AIC (16-bit), "
                      f"chip GM {a['chip_gm_bandwidth_gbps']} GB/s = "
                      f"{a['chip_gm_bandwidth_gbps'] / a['clock_ghz']:.1f} B/cycle at {a['clock_ghz']} GHz")

    search_runs: list[Run] = []
    runs: list[Run] = []
    best: dict[tuple[str, tuple[int, int, int]], tuple[int, int, int]] = {}
    for arch in archs:
        for shape in shapes:
            cands = []
            for tile in tiles_for(arch, shape, not args.no_search):
                r = run_one(arch, dtypes[0], shape, tile, 2)
                search_runs.append(r)
                if not r.skipped:
                    cands.append(r)
            best[(arch, shape)] = min(cands, key=lambda r: r.total_cycles).tile if cands else clip_tile(
                DEFAULT_TILE, shape)
            console.print(f"  [dim]{arch} {fmt_shape(shape)}: best tile {fmt_tile(best[(arch, shape)])} "
                          f"({time.perf_counter() - t_start:.0f} s)[/dim]")
    if not args.no_search:
        console.print(table(search_runs, f"Tile search at num_stages=2, {dtypes[0]} (MODELLED)"))
    for arch in archs:
        for shape in shapes:
            tile = best[(arch, shape)]
            for dtype in dtypes:
                for stages in STAGES:
                    done = next((r for r in search_runs if r.arch == arch and r.dtype == dtype and r.shape == shape
                                 and r.tile == tile and r.stages == stages), None)
                    runs.append(done or run_one(arch, dtype, shape, tile, stages))
    console.print(table(runs, "GEMM, best tile per shape, num_stages 1/2/3 (MODELLED)"))

    # num_stages=1 vs 2 with the default tile at the target shape too (the best tile may differ).
    extra = []
    if TARGET_SHAPE in shapes:
        for arch in archs:
            if best[(arch, TARGET_SHAPE)] != DEFAULT_TILE:
                for stages in STAGES:
                    done = next((r for r in search_runs if r.arch == arch and r.shape == TARGET_SHAPE
                                 and r.tile == DEFAULT_TILE and r.stages == stages), None)
                    extra.append(done or run_one(arch, dtypes[0], TARGET_SHAPE, DEFAULT_TILE, stages))
        # num_stages=1 for every tile tried at the target shape, so that each tile's targets are known.
        for r2 in [r for r in search_runs if r.shape == TARGET_SHAPE and r.stages == 2 and not r.skipped]:
            if not any(x.arch == r2.arch and x.dtype == r2.dtype and x.shape == TARGET_SHAPE and x.tile == r2.tile
                       and x.stages == 1 for x in runs + extra):
                extra.append(run_one(r2.arch, r2.dtype, TARGET_SHAPE, r2.tile, 1))
        if extra:
            console.print(table(extra, f"4096^3: the default {fmt_tile(DEFAULT_TILE)} tile, and num_stages=1 of "
                                       "every tile tried (MODELLED)"))

    tg = Table(title="Targets at 4096^3 (MODELLED)")
    for col in ("case", "target", "modelled", "met"):
        tg.add_column(col)
    checks = check_targets(runs + extra + search_runs, archs, dtypes)
    for key, target, value, ok, _ in checks:
        tg.add_row(key, target, value, "[green]yes[/green]" if ok else "[red]NO[/red]")
    if checks:
        console.print(tg)
    else:
        console.print("(4096^3 not in this sweep: targets not evaluated)")
    if args.markdown:
        print("\n### Tile search (num_stages=2)\n")
        print(markdown(search_runs))
        print("\n### Best tile, num_stages 1/2/3\n")
        print(markdown(runs))
        if extra:
            print(f"\n### 4096^3: the default {fmt_tile(DEFAULT_TILE)} tile, and num_stages=1 of every tile tried\n")
            print(markdown(extra))
        print("\n### Targets\n")
        print("| case | target | modelled | met |\n|---|---|---|---|")
        for key, target, value, ok, _ in checks:
            print(f"| {key} | {target} | {value} | {'yes' if ok else 'NO'} |")
    console.print(f"wall time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
