"""DeepSeek's low-precision kernels on the emulator's timing model: MODELLED time, bandwidth or
fraction of the dtype's Cube peak, roofline, and the issue's targets (MET / NOT MET).

Run: python benchmarks/deepseek.py [--quick] [--arch dav-3510,dav-c220] [--write-docs]

Kernels (examples/fp8_quant.py, fp8_gemm.py, int8_gemm.py), at the shapes DeepSeek published
where they fit (the FP8 cast: 4096 x 7168, FP32 -> E4M3FN, group 128) and 4096^3 for the GEMMs:
- FP8 cast FP32 -> E4M3FN, group 128 and per token, and the inverse (dav-3510 only);
- int8 GEMM (int32 out; both arches), FP8 GEMM with a per-tensor scale and with DeepSeek-V3's
  1 x 128 / 128 x 128 block scales (dav-3510 only).

Every figure is MODELLED by ascend_backend/emulator/timing.py (docs/timing-model.md); nothing is
measured on an NPU. Method (as benchmarks/gemm.py): the kernel is compiled for the full shape,
only its first wave of blocks is emulated (min(grid, cores) blocks, the cores being the AIVs of
a vector-only kernel and the AIC/AIV groups of a Cube one), and

    modelled total = waves x (modelled cycles of the first wave),  waves = ceil(grid / cores).

Every block of these kernels runs the same schedule, so this equals the model's list schedule
of all blocks. GEMM reads blend L2 hits and HBM as in benchmarks/gemm.py (every element of A and
B read from HBM once over the launch); the casts read every byte once (all misses).

Rooflines (cycles): casts: compulsory GM bytes / chip bandwidth; GEMMs: max(M*N*K / (the dtype's
MACs per cycle x AIC cores), compulsory GM bytes / chip bandwidth). Targets (issue 11, dav-3510):
the group-128 cast reaches >= 80 % of the modelled HBM bandwidth; int8 and fp8 GEMM 4096^3
reach >= 85 % of the dtype's Cube peak.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import fp8_gemm  # noqa: E402
import fp8_quant  # noqa: E402
import int8_gemm  # noqa: E402

import ascend_backend  # noqa: E402
from ascend_backend.emulator import run_source  # noqa: E402
from ascend_backend.emulator.timing import ASSUMPTIONS, l2_miss_fraction  # noqa: E402
from ascend_backend.errors import AscendCompileError  # noqa: E402

console = Console(width=200)
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- deepseek.py: begin -->", "<!-- deepseek.py: end -->"


@dataclass
class Spec:
    """One benchmark row: how to build the kernel and its arguments, and what to measure."""

    name: str
    shape: str
    kind: str  # "cast" (bandwidth) or "gemm" (fraction of the Cube peak)
    archs: tuple
    build: object  # () -> PrimFunc
    args: object  # () -> list of torch tensors (zeros of the right dtypes)
    gm_bytes: int  # compulsory GM traffic (read + written), bytes
    macs: int = 0
    op_bits: int = 8  # Cube operand width of a GEMM
    unique_read: int = 0  # distinct bytes a GEMM reads (its A and B)
    reread: int = 0  # bytes a cast reads a second time (L2 hits when they fit)
    target: str = ""  # "bw80" | "peak85" | ""
    config: str = ""
    tiles: list | None = None  # GEMM tile candidates (block_M, block_N, block_K); the fastest is reported


@dataclass
class Row:
    spec: Spec
    arch: str
    grid: int = 0
    cores: int = 0
    waves: int = 0
    wave_cycles: int = 0
    total_cycles: int = 0
    time_us: float = 0.0
    busy: dict | None = None
    roofline: float = 0.0
    achieved: float = 0.0  # GB/s (cast) or fraction of peak (gemm)
    skipped: str = ""
    wall: float = 0.0
    config: str = ""

    @property
    def of_roofline(self) -> float:
        return self.roofline / self.total_cycles if self.total_cycles else float("nan")

    def target(self) -> tuple[str, bool] | None:
        a = ASSUMPTIONS[self.arch]
        if self.spec.target == "bw80":
            return f">= 80 % of HBM ({0.8 * a['chip_gm_bandwidth_gbps']:.0f} GB/s)", \
                self.achieved >= 0.8 * a["chip_gm_bandwidth_gbps"]
        if self.spec.target == "peak85":
            return ">= 85 % of the Cube peak", self.achieved >= 0.85
        return None


def chip_bpc(arch: str) -> float:
    a = ASSUMPTIONS[arch]
    return a["chip_gm_bandwidth_gbps"] / a["clock_ghz"]


def cube_rate(arch: str, bits: int) -> int:
    return int(ASSUMPTIONS[arch][f"cube_macs_per_cycle_{bits}bit"])


def specs(quick: bool) -> list[Spec]:
    out: list[Spec] = []
    M, N = (1024, 7168) if quick else (4096, 7168)
    blk_m, gpb = 32, 8
    E4 = torch.float8_e4m3fn
    out.append(Spec(
        name="FP8 cast FP32 -> E4M3FN, group 128", shape=f"{M} x {N}", kind="cast", archs=("dav-3510",),
        build=lambda: fp8_quant.group_cast_to_fp8(M, N, blk_m, 128, groups_per_block=gpb),
        args=lambda: [torch.zeros(M, N), torch.zeros(M, N, dtype=E4), torch.zeros(N // 128, M)],
        gm_bytes=M * N * (4 + 1) + (N // 128) * M * 4, target="bw80",
        config=f"{blk_m} rows x 128, {gpb} groups per block (pipelined)"))
    out.append(Spec(
        name="FP8 cast FP32 -> E4M3FN, per token", shape=f"{M} x {N}", kind="cast", archs=("dav-3510",),
        build=lambda: fp8_quant.per_token_cast_to_fp8(M, N, 16, 512),
        args=lambda: [torch.zeros(M, N), torch.zeros(M, N, dtype=E4), torch.zeros(M)],
        gm_bytes=M * N * (4 + 1) + M * 4, reread=M * N * 4,
        config="16 rows x 512-column chunks, two passes (amax, cast; the second reads L2)"))
    out.append(Spec(
        name="FP8 dequant E4M3FN -> FP32, group 128", shape=f"{M} x {N}", kind="cast", archs=("dav-3510",),
        build=lambda: fp8_quant.group_dequant_fp8(M, N, blk_m, 128, groups_per_block=gpb),
        args=lambda: [torch.zeros(M, N, dtype=E4), torch.zeros(N // 128, M), torch.zeros(M, N)],
        gm_bytes=M * N * (1 + 4) + (N // 128) * M * 4,
        config=f"{blk_m} rows x 128, {gpb} groups per block (pipelined)"))
    S = 2048 if quick else 4096
    i8 = torch.int8
    gemm_tiles = {"dav-3510": [(256, 256, 128), (256, 192, 128), (192, 256, 128), (128, 256, 256)],
                  "dav-c220": [(256, 128, 128), (128, 256, 128), (192, 128, 128), (256, 128, 256)]}
    for arch, tiles in gemm_tiles.items():
        # int32 out, and the 16-bit conversion Fixpipe makes on the way out (bfloat16: QS322BF16_PRE,
        # dav-3510 only; float16: DEQF16)
        for od in ("int32", "bfloat16" if arch == "dav-3510" else "float16"):
            ob = 4 if od == "int32" else 2
            out.append(Spec(
                name=f"int8 GEMM ({od} out)", shape=f"{S}^3", kind="gemm", archs=(arch,),
                build=lambda t, od=od: int8_gemm.matmul_int8(S, S, S, *t, out_dtype=od),
                args=lambda od=od: [torch.zeros(S, S, dtype=i8), torch.zeros(S, S, dtype=i8),
                                    torch.zeros(S, S, dtype=getattr(torch, od))],
                gm_bytes=2 * S * S + ob * S * S, macs=S**3, unique_read=2 * S * S, target="peak85",
                tiles=tiles + ([(256, 224, 128)] if arch == "dav-3510" else [])))
    out.append(Spec(
        name="FP8 GEMM E4M3 x E4M3 (bf16 out)", shape=f"{S}^3", kind="gemm", archs=("dav-3510",),
        build=lambda t: fp8_gemm.matmul_fp8(S, S, S, *t),
        args=lambda: [torch.zeros(S, S, dtype=E4), torch.zeros(S, S, dtype=E4),
                      torch.zeros(S, S, dtype=torch.bfloat16)],
        gm_bytes=2 * S * S + 2 * S * S, macs=S**3, unique_read=2 * S * S, target="peak85",
        tiles=gemm_tiles["dav-3510"] + [(256, 224, 128)]))
    out.append(Spec(
        name="FP8 GEMM, per-tensor scale (bf16 out)", shape=f"{S}^3", kind="gemm", archs=("dav-3510",),
        build=lambda t: fp8_gemm.matmul_fp8_tensor_scale(S, S, S, *t),
        args=lambda: [torch.zeros(S, S, dtype=E4), torch.zeros(S, S, dtype=E4), torch.ones(1), torch.ones(1),
                      torch.zeros(S, S, dtype=torch.bfloat16)],
        gm_bytes=2 * S * S + 2 * S * S, macs=S**3, unique_read=2 * S * S, target="peak85",
        tiles=[(256, 128, 128), (128, 256, 128), (128, 128, 256)]))
    out.append(Spec(
        name="FP8 GEMM, 1x128 / 128x128 block scales (bf16 out)", shape=f"{S}^3", kind="gemm", archs=("dav-3510",),
        build=lambda t: fp8_gemm.matmul_fp8_block_scale(S, S, S, t[0], t[1]),
        args=lambda: [torch.zeros(S, S, dtype=E4), torch.zeros(S, S, dtype=E4), torch.ones(S // 128, S),
                      torch.ones(S // 128, S // 128), torch.zeros(S, S, dtype=torch.bfloat16)],
        gm_bytes=2 * S * S + 2 * S * S + 4 * S * S // 128, macs=S**3, unique_read=2 * S * S, target="peak85",
        tiles=[(128, 128, 128), (256, 128, 128)]))
    return out


def run(spec: Spec, arch: str) -> Row:
    """The spec's kernel (the fastest of its tile candidates, each at num_stages 2)."""
    if not spec.tiles:
        return run_one(spec, arch, spec.build, spec.config)
    rows = []
    for t in spec.tiles:
        r = run_one(spec, arch, lambda t=t: spec.build(t), f"tile {t[0]}x{t[1]}x{t[2]}, num_stages 2")
        busy = " ".join(f"{p} {v:.0f}%" for p, v in sorted((r.busy or {}).items()) if v >= 1)
        console.print(f"    [dim]{spec.name} {arch} {r.config}: "
                      f"{r.skipped or f'{r.time_us:,.1f} us, busy {busy}'} ({r.wall:.0f} s wall)[/dim]")
        rows.append(r)
    done = [r for r in rows if not r.skipped]
    return min(done, key=lambda r: r.total_cycles) if done else rows[0]


def run_one(spec: Spec, arch: str, build, config: str) -> Row:
    row = Row(spec, arch, config=config)
    a = ASSUMPTIONS[arch]
    try:
        k = ascend_backend.compile(build(), target={"kind": "ascendc", "arch": arch}, runtime="emulator")
    except AscendCompileError as e:
        row.skipped = f"{type(e).__name__}: {str(e).splitlines()[0]}".replace(f"{ROOT}/", "")
        return row
    row.grid = k.block_dim
    ktype = k.program.launches[0].kernel_type
    vector_only = "AIV" in str(ktype) and "MIX" not in str(ktype)
    row.cores = int(a["aiv_cores"] if vector_only else a["groups"])
    first = min(row.grid, row.cores)
    row.waves = math.ceil(row.grid / row.cores)
    t0 = time.perf_counter()
    rep = run_source(k.kernel_source, k.name, spec.args(), block_dim=first, arch=arch, strict=False, checks=False,
                     auto_sync=False)
    row.wall = time.perf_counter() - t0
    if spec.kind == "gemm":
        launch_reads = rep.gm_reads["bytes"] / first * row.grid
        miss = l2_miss_fraction(arch, launch_reads, spec.unique_read)
    else:   # a cast reads every byte once from HBM, plus what it reads again
        reads = rep.gm_reads["bytes"] / first * row.grid
        miss = l2_miss_fraction(arch, reads, reads - spec.reread) if spec.reread else 1.0
    t = rep.timing_with(miss)
    row.wave_cycles = int(t["total_cycles"])
    row.total_cycles = row.waves * row.wave_cycles
    row.time_us = row.total_cycles / (t["clock_ghz"] * 1e3)
    row.busy = dict(t["busy_percent"])
    gm_cycles = spec.gm_bytes / chip_bpc(arch)
    if spec.kind == "cast":
        row.roofline = gm_cycles
        row.achieved = spec.gm_bytes / (row.time_us * 1e-6) / 1e9
    else:
        peak = cube_rate(arch, spec.op_bits) * a["aic_cores"]
        row.roofline = max(spec.macs / peak, gm_cycles)
        row.achieved = spec.macs / peak / row.total_cycles
    return row


def fmt_achieved(r: Row) -> str:
    if r.spec.kind == "cast":
        hbm = ASSUMPTIONS[r.arch]["chip_gm_bandwidth_gbps"]
        return f"{r.achieved:,.0f} GB/s ({100 * r.achieved / hbm:.0f} % of HBM)"
    return f"{100 * r.achieved:.1f} % of the b{r.spec.op_bits} Cube peak"


def verdict(r: Row) -> str:
    t = r.target()
    if t is None:
        return "-"
    return f"{'MET' if t[1] else 'NOT MET'} ({t[0]})"


COLS = ("kernel", "arch", "shape", "config", "grid", "waves", "time us", "achieved", "roofline us", "of roofline",
        "busy (V / MTE2 / M)", "target")


def cells(r: Row) -> list[str]:
    if r.skipped:
        return [r.spec.name, r.arch, r.spec.shape, r.config, "", "", f"skipped: {r.skipped}", "", "", "", "", ""]
    clock = ASSUMPTIONS[r.arch]["clock_ghz"]
    b = r.busy or {}
    return [r.spec.name, r.arch, r.spec.shape, r.config, str(r.grid), str(r.waves), f"{r.time_us:,.1f}",
            fmt_achieved(r), f"{r.roofline / (clock * 1e3):,.1f}", f"{100 * r.of_roofline:.0f} %",
            f"{b.get('V', 0):.0f} / {b.get('MTE2', 0):.0f} / {b.get('M', 0):.0f} %", verdict(r)]


def markdown(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(COLS) + " |", "|" + "---|" * len(COLS)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    return "\n".join(lines)


def write_docs(rows: list[Row], quick: bool) -> None:
    text = DOC.read_text()
    arch_lines = []
    for arch in sorted({r.arch for r in rows}):
        a = ASSUMPTIONS[arch]
        arch_lines.append(f"- {arch}: {a['aic_cores']} AIC / {a['aiv_cores']} AIV at {a['clock_ghz']} GHz, HBM "
                          f"{a['chip_gm_bandwidth_gbps']} GB/s ({chip_bpc(arch):.0f} B/cycle), Cube "
                          f"{cube_rate(arch, 8)} MACs/cycle per AIC for 8-bit operands "
                          f"({cube_rate(arch, 8) * a['aic_cores'] * a['clock_ghz'] * 2 / 1e3:,.0f} TOPS)")
    block = "\n".join([
        BEGIN,
        "Generated by `python benchmarks/deepseek.py --write-docs`" + (" (--quick shapes)" if quick else "") +
        ". MODELLED: first wave emulated, total = waves x first wave (see the script's docstring).",
        "",
        *arch_lines,
        "",
        markdown(rows),
        END,
    ])
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        marker = "## History"
        section = "## DeepSeek's low-precision kernels (issue 11)\n\n" + block + "\n\n"
        text = text.replace(marker, section + marker, 1) if marker in text else text + "\n" + section
    DOC.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller shapes (1024 x 7168 casts, 2048^3 GEMMs)")
    ap.add_argument("--arch", default="dav-3510,dav-c220")
    ap.add_argument("--only", default="", help="run only kernels whose name contains this text")
    ap.add_argument("--write-docs", action="store_true", help="write the table into docs/performance.md")
    args = ap.parse_args()
    archs = args.arch.split(",")
    console.print("[bold]DeepSeek's low-precision kernels on the emulator's timing model: every figure is MODELLED "
                  "(docs/timing-model.md), not measured.[/bold]")
    rows = []
    for spec in specs(args.quick):
        if args.only and args.only not in spec.name:
            continue
        for arch in archs:
            if arch not in spec.archs:
                continue
            r = run(spec, arch)
            rows.append(r)
            console.print(f"  [dim]{spec.name} on {arch}: {r.time_us:,.1f} us modelled ({r.wall:.0f} s wall)[/dim]")
    tb = Table(title="DeepSeek kernels (MODELLED)")
    for c in COLS:
        tb.add_column(c)
    for r in rows:
        tb.add_row(*cells(r))
    console.print(tb)
    for r in rows:
        if r.target() is not None and not r.skipped:
            console.print(f"  {r.spec.name} ({r.arch}): {fmt_achieved(r)}: {verdict(r)}")
    if args.write_docs:
        write_docs(rows, args.quick)
        console.print(f"wrote the table into {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
