"""DeepSeek's kernels on the emulator's timing model: MODELLED time, bandwidth or fraction of the
dtype's Cube peak, roofline, and the issue's targets (MET / NOT MET).

Run: python benchmarks/deepseek.py [--quick] [--arch dav-3510,dav-c220] [--only TEXT] [--write-docs]

Kernels (examples/), at the shapes DeepSeek published where they fit:
- fp8_quant.py: FP8 cast FP32 -> E4M3FN, group 128 (4096 x 7168) and per token, and the inverse
  (dav-3510 only);
- int8_gemm.py, fp8_gemm.py at 4096^3: int8 GEMM (both arches), FP8 GEMM with a per-tensor scale
  and with DeepSeek-V3's 1 x 128 / 128 x 128 block scales (dav-3510 only);
- gqa_backward.py: BF16, batch 1, one K/V head (8 query heads on it), head dim 128, non-causal,
  seq 4096; timed as DeepSeek did: the dQ/dK/dV launch and the final BF16 cast(s), without the
  Delta preprocessing launch;
- mla_decode.py: batch 64, 128 query heads on one latent head (512 + rope 64), paged KV (64-token
  pages), every sequence 4096 tokens; the fastest of its forms (one split writing the output, or
  splits and a combine launch; batch or head blocks first in the grid; 64 or 128 tokens a step);
- dsa.py: sparse MLA forward over top-k 2048 of 8192 keys for 4096 query tokens (64 heads per
  token), and the lightning indexer's scores (64 heads of dim 128, bf16); not top-k selection
  (2048 rounds of row maxima over 8192 scores per token: too slow to emulate at this size).
The attention rows run on dav-3510 only (the issue's targets are for dav-3510).

Every figure is MODELLED by ascend_backend/emulator/timing.py (docs/timing-model.md); nothing is
measured on an NPU. Method (as benchmarks/gemm.py): each kernel is compiled for the full shape,
only the first wave of blocks of a launch is emulated (min(grid, cores) blocks, the cores being
the AIVs of a vector-only launch and the AIC/AIV groups of a mixed one), plus a partial last wave
on its own (its fewer blocks share the chip among themselves; ascend_backend.emulator.waves), and

    modelled launch = (waves - 1) x (first wave) + (last wave),  waves = ceil(grid / cores).

Every block of these kernels runs the same schedule (the attention inputs have equal sequence
lengths and full top-k sets), so this equals the model's list schedule of all blocks. A kernel
of several launches (GQA backward, MLA decode) is the sum of its timed launches' modelled times:
they run one after the other on the stream, and each launch's first wave is emulated on its own.
GM reads blend L2 hits and HBM by the whole launch's miss fraction (distinct bytes the launch
reads / bytes all its blocks read, as benchmarks/gemm.py; an attention launch whose re-reads come
soon also passes their reuse distance, see L2Reads); the casts and the small follow-up
launches (the dQ cast, the MLA combine) are charged as all misses (the model has no L2 reuse
across launches).

Rooflines (cycles): max(useful MACs / (the dtype's MACs per cycle x AIC cores), compulsory GM
bytes / chip bandwidth); the binding side is printed (Cube or HBM). Useful MACs: GEMMs M*N*K;
GQA backward 5 gemms per (query, key, head), FlashAttention-2's count; MLA (decode and sparse)
(512 + 64) + 512 per (head, key). Compulsory bytes: every input read once, every output written
once (gqa_bwd_work, mla_decode_work, sparse_mla_work below). Targets (issue 11, dav-3510): the
group-128 cast >= 80 % of the modelled HBM bandwidth; int8 and fp8 GEMM 4096^3 >= 85 % of the
dtype's Cube peak; GQA backward >= 40 % of the BF16 Cube peak; MLA decode and DSA sparse MLA
forward >= 50 % of their roofline.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
# The attention rows' first waves record a few million trace records (the timing model's input);
# the emulator keeps 1M by default and would cut the trace short.
os.environ.setdefault("TL_ASCEND_EMU_TRACE_CAP", "20000000")
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import dsa  # noqa: E402
import fp8_gemm  # noqa: E402
import fp8_quant  # noqa: E402
import gqa_backward  # noqa: E402
import int8_gemm  # noqa: E402
import mla_decode  # noqa: E402

import ascend_backend  # noqa: E402
from ascend_backend.emulator import run_source  # noqa: E402
from ascend_backend.emulator.timing import ASSUMPTIONS, l2_miss_fraction  # noqa: E402
from ascend_backend.emulator.waves import emulate_waves, slots  # noqa: E402
from ascend_backend.errors import AscendCompileError  # noqa: E402
from ascend_backend.kernel import launch_args  # noqa: E402

console = Console(width=200)
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- deepseek.py: begin -->", "<!-- deepseek.py: end -->"


@dataclass
class Spec:
    """One benchmark row: how to build the kernel and its arguments, and what to measure."""

    name: str
    shape: str
    kind: str  # "cast" (bandwidth), "gemm" (fraction of the Cube peak) or "attn" (several launches)
    archs: tuple
    build: object  # () -> PrimFunc
    args: object  # () -> list of torch tensors (zeros of the right dtypes)
    gm_bytes: int  # compulsory GM traffic (read + written), bytes
    macs: int = 0
    op_bits: int = 8  # Cube operand width of a GEMM
    unique_read: int = 0  # distinct bytes a GEMM reads (its A and B)
    reread: int = 0  # bytes a cast reads a second time (L2 hits when they fit)
    target: str = ""  # "bw80" | "peak85" | "peak40" | "roof50" | ""
    config: str = ""
    tiles: list | None = None  # GEMM tile candidates (block_M, block_N, block_K); the fastest is reported
    # "attn": the launches timed (their modelled times add up), a name for each, and what each
    # reads from GM over the whole launch (its L2 miss fraction; None: every read misses)
    launches: tuple = ()
    unique: tuple = ()  # of L2Reads | None
    candidates: list | None = None  # "attn": (config text, build) pairs; the fastest is reported


@dataclass(frozen=True)
class L2Reads:
    """What a launch reads from GM, for its L2 miss fraction (timing.l2_miss_fraction): the
    distinct bytes, and the reuse distance of what it reads again (the distinct bytes read between
    two reads of one byte; None: all of the launch's distinct bytes, i.e. everything is read once
    before anything is read again)."""
    unique: int
    reuse: int | None = None


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
    parts: list | None = None  # "attn": (launch name, grid, waves, cycles) of each timed launch

    @property
    def of_roofline(self) -> float:
        return self.roofline / self.total_cycles if self.total_cycles else float("nan")

    def target(self) -> tuple[str, bool] | None:
        if self.arch != "dav-3510":  # the targets are set for dav-3510; other arches are shown
            return None
        a = ASSUMPTIONS[self.arch]
        if self.spec.target == "bw80":
            return f">= 80 % of HBM ({0.8 * a['chip_gm_bandwidth_gbps']:.0f} GB/s)", \
                self.achieved >= 0.8 * a["chip_gm_bandwidth_gbps"]
        if self.spec.target == "peak85":
            return ">= 85 % of the Cube peak", self.achieved >= 0.85
        if self.spec.target == "peak40":
            return ">= 40 % of the Cube peak", self.achieved >= 0.40
        if self.spec.target == "roof50":
            return ">= 50 % of the roofline", self.of_roofline >= 0.50
        return None

    @property
    def bound(self) -> str:
        """Which side of the roofline binds: the Cube or HBM."""
        if self.spec.kind == "cast":
            return "HBM"
        return roofline(self.arch, self.spec.macs, self.spec.gm_bytes, self.spec.op_bits)[1]


def chip_bpc(arch: str) -> float:
    a = ASSUMPTIONS[arch]
    return a["chip_gm_bandwidth_gbps"] / a["clock_ghz"]


def cube_rate(arch: str, bits: int) -> int:
    return int(ASSUMPTIONS[arch][f"cube_macs_per_cycle_{bits}bit"])


def specs(quick: bool, stages: int = 2) -> list[Spec]:
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
        # the scale rides on the Fixpipe (passes/fold_scale.py): a Cube-only kernel, the plain GEMM's tiles
        tiles=gemm_tiles["dav-3510"] + [(256, 224, 128)]))
    out.append(Spec(
        name="FP8 GEMM, 1x128 / 128x128 block scales (bf16 out)", shape=f"{S}^3", kind="gemm", archs=("dav-3510",),
        build=lambda t: fp8_gemm.matmul_fp8_block_scale(S, S, S, t[0], t[1]),
        args=lambda: [torch.zeros(S, S, dtype=E4), torch.zeros(S, S, dtype=E4), torch.ones(S // 128, S),
                      torch.ones(S // 128, S // 128), torch.zeros(S, S, dtype=torch.bfloat16)],
        gm_bytes=2 * S * S + 2 * S * S + 4 * S * S // 128, macs=S**3, unique_read=2 * S * S, target="peak85",
        tiles=[(128, 128, 128), (256, 128, 128)]))
    E8 = torch.float8_e8m0fnu
    out.append(Spec(
        name="FP8 GEMM, MX / UE8M0 scales in the Cube (MmadMx, bf16 out)", shape=f"{S}^3", kind="gemm",
        archs=("dav-3510",),
        build=lambda t: fp8_gemm.matmul_fp8_mx(S, S, S, *t),
        args=lambda: [torch.zeros(S, S, dtype=E4), torch.zeros(S, S, dtype=E4),
                      torch.zeros(S, S // 32, dtype=torch.uint8).view(E8),
                      torch.zeros(S, S // 32, dtype=torch.uint8).view(E8), torch.zeros(S, S, dtype=torch.bfloat16)],
        gm_bytes=2 * S * S + 2 * S * S + 2 * S * S // 32, macs=S**3, unique_read=2 * S * S + 2 * S * S // 32,
        target="peak85", tiles=gemm_tiles["dav-3510"] + [(256, 224, 128)]))
    if quick:  # one tile per GEMM: the full run's fastest (256 x 224 on dav-3510, 256 x 128 otherwise)
        for sp in out:
            if sp.tiles:
                sp.tiles = [t for t in sp.tiles if t in ((256, 224, 128), (256, 128, 128))][:1]
    out += attention_specs(quick, stages)
    return out


def gqa_bwd_work(batch: int, heads: int, head_kv: int, seq: int, dim: int) -> tuple[int, int]:
    """(MACs, compulsory GM bytes) of GQA backward's timed launches (dQ/dK/dV, then the dQ cast).
    MACs: the five gemms per (query, key) pair and head (S = Q K^T recomputed, dP = dO V^T, dV, dK,
    dQ), 2.5 x the forward's, as FlashAttention-2 counts them. Bytes: Q, dO, K, V (bf16), lse and
    Delta (fp32) read; dK, dV (bf16) and the fp32 dQ accumulator written; the cast reads it back
    and writes dQ (bf16)."""
    q = batch * seq * heads * dim
    kv = batch * seq * head_kv * dim
    macs = 5 * batch * heads * seq * seq * dim
    return macs, 2 * 2 * q + 2 * 2 * kv + 2 * 4 * batch * heads * seq + 2 * 2 * kv + 4 * q + 4 * q + 2 * q


def mla_decode_work(batch: int, heads: int, seq: int, dv: int = 512, dpe: int = 64) -> tuple[int, int]:
    """(MACs, compulsory GM bytes) of MLA decode: per head and cached token, q . [kv | k_pe]
    (dv + dpe MACs) and p x kv (dv MACs); the latent cache (dv + dpe bf16 per token) read once,
    the query read and the output written (bf16)."""
    return batch * heads * seq * (2 * dv + dpe), 2 * batch * seq * (dv + dpe) + 2 * batch * heads * (2 * dv + dpe)


def sparse_mla_work(seq_q: int, heads: int, topk: int, seq_kv: int, dv: int = 512, dpe: int = 64) -> tuple[int, int]:
    """(MACs, compulsory GM bytes) of sparse MLA forward over topk selected keys per query token:
    MACs as MLA over topk keys; bytes: the latent cache (bf16) and the query read once, the
    indices (int32) read, the output (bf16) and the log-sum-exp (fp32) written."""
    dqk = dv + dpe
    return (seq_q * heads * topk * (dqk + dv),
            2 * seq_kv * dqk + 2 * seq_q * heads * dqk + 4 * seq_q * topk + 2 * seq_q * heads * dv + 4 * seq_q * heads)


def roofline(arch: str, macs: int, gm_bytes: int, op_bits: int = 16) -> tuple[float, str]:
    """(cycles, binding side) of the roofline: the larger of MACs at the chip's Cube peak for the
    operand width and the compulsory GM bytes at the chip's HBM bandwidth."""
    cube = macs / (cube_rate(arch, op_bits) * ASSUMPTIONS[arch]["aic_cores"])
    hbm = gm_bytes / chip_bpc(arch)
    return (cube, "Cube") if cube >= hbm else (hbm, "HBM")


def attention_specs(quick: bool, stages: int = 2) -> list[Spec]:
    """GQA backward, MLA decode, DSA sparse MLA forward and the lightning indexer (dav-3510);
    ``stages``: num_stages of GQA backward's and MLA decode's pipelined loops."""
    return [gqa_spec(quick, stages), mla_spec(quick, stages), *dsa_specs(quick)]


BF16 = torch.bfloat16


def gqa_spec(quick: bool, stages: int = 2) -> Spec:
    """GQA backward: batch 1, one K/V head, head dim 128, non-causal (DeepSeek's published setting),
    8 query heads sharing the K/V head. Candidates: block_M x block_N, head_split (the group's
    heads split over that many blocks, dK/dV then added atomically and cast by a fourth launch)
    and defer_dq (step k's atomic dQ add issued in step k + 1, after its S and dP crossings)."""
    H, S, D = (8, 2048, 128) if quick else (8, 4096, 128)
    macs, gm = gqa_bwd_work(1, H, 1, S, D)
    tried = [(128, 64, 8, True)] if quick else [(128, 64, 1, False), (64, 128, 1, False), (128, 64, 4, False),
                                                (128, 64, 4, True), (128, 64, 8, True)]
    bf = BF16
    read = 2 * 2 * S * H * D + 2 * 2 * S * D + 2 * 4 * H * S  # Q, dO, K, V, lse, Delta

    def args(hs: int) -> list:
        return [torch.zeros(1, S, H, D, dtype=bf), torch.zeros(1, S, 1, D, dtype=bf), torch.zeros(1, S, 1, D, dtype=bf),
                torch.zeros(1, S, H, D, dtype=bf), torch.zeros(1, S, H, D, dtype=bf), torch.zeros(1, H, S),
                torch.zeros(1, H, S), torch.zeros(1, S, H, D), torch.zeros(1, S, H, D, dtype=bf),
                torch.zeros(1, S, 1, D, dtype=bf), torch.zeros(1, S, 1, D, dtype=bf)] + (
                    [torch.zeros(1, S, 1, D), torch.zeros(1, S, 1, D)] if hs > 1 else [])

    cands = []
    for m, n, hs, defer in tried:
        launches, unique = ((1, "dQ/dK/dV"), (2, "dQ cast")), (L2Reads(read), None)
        if hs > 1:
            launches, unique = (*launches, (3, "dK/dV cast")), (*unique, None)
        cands.append((f"block {m}x{n}" + (f", heads split over {hs} blocks" if hs > 1 else "")
                      + (", dQ added a step late" if defer else "") + (f", num_stages {stages}" if stages != 2 else ""),
                      lambda m=m, n=n, hs=hs, defer=defer: gqa_backward.gqa_backward(1, H, H, S, D, m, n, stages,
                                                                                   head_split=hs, defer_dq=defer),
                      lambda hs=hs: args(hs), launches, unique))
    return Spec(
        name="GQA backward (dQ/dK/dV + casts)", shape=f"b1 h{H} kv1 s{S} d{D}", kind="attn", archs=("dav-3510",),
        build=None, macs=macs, gm_bytes=gm, op_bits=16, target="peak40", args=None, candidates=cands)


def mla_spec(quick: bool, stages: int = 2) -> Spec:
    """MLA decode: 128 query heads on one latent head (dv 512 + rope 64), paged KV (64-token pages),
    every sequence 4096 tokens long. Candidates: the number of splits along the sequence (one:
    the split launch writes the output, no combine launch) and the grid order. Both head blocks of
    a sequence read all its pages. Batch first (TileLang's order), they are ``batch`` blocks
    apart: every page is read again after the whole cache has been (reuse distance = the cache, 302
    MB, beyond L2). Heads first, they run at once: a page is read again within what the running
    blocks read (at most their sequences' pages, 66 MB at 28 blocks; well inside L2)."""
    B, H, S, page = (8, 128, 1024, 64) if quick else (64, 128, 4096, 64)
    block_H = 64
    macs, gm = mla_decode_work(B, H, S)
    tried = [(1, True, 64)] if quick else [(1, False, 64), (1, True, 64), (2, True, 64), (1, True, 128)]
    pages = S // page
    bf = BF16
    unique = 2 * B * S * 576 + 2 * B * H * 576 + 4 * B * pages + 4 * B
    running_seqs = max(1, ASSUMPTIONS["dav-3510"]["groups"] // (H // block_H))

    def args(ns: int) -> list:
        return [torch.zeros(B, H, 512, dtype=bf), torch.zeros(B, H, 64, dtype=bf), torch.zeros(B * S, 512, dtype=bf),
                torch.zeros(B * S, 64, dtype=bf), torch.arange(B * pages, dtype=torch.int32).view(B, pages),
                torch.full((B,), S, dtype=torch.int32), torch.zeros(B, ns, H), torch.zeros(B, ns, H, 512),
                torch.zeros(B, H, 512, dtype=bf)]

    cands = []
    for ns, inner, bn in tried:
        reads = L2Reads(unique, 2 * min(B, running_seqs) * S * 576 if inner else None)
        launches, per_launch = ((0, "split"), (1, "combine")), (reads, None)
        if ns == 1:
            launches, per_launch = ((0, "split"),), (reads,)
        cands.append((f"block_H {block_H}, block_N {bn}, {ns} split{'s' if ns > 1 else ''}"
                      + (", head blocks first" if inner else ", batch first")
                      + (f", num_stages {stages}" if stages != 2 else ""),
                      lambda ns=ns, inner=inner, bn=bn: mla_decode.mla_decode_paged(
                          B, H, S, 512, 64, bn, block_H, ns, page, stages, heads_inner=inner),
                      lambda ns=ns: args(ns), launches, per_launch))
    return Spec(
        name="MLA decode", shape=f"b{B} h{H} s{S} d512+64 page{page}", kind="attn",
        archs=("dav-3510",), build=None, macs=macs, gm_bytes=gm, op_bits=16, target="roof50",
        args=None, candidates=cands)


def dsa_specs(quick: bool) -> list[Spec]:
    """DSA: sparse MLA forward over 2048 selected keys per query token (DeepSeek-V3.2's top-k), 64
    heads per token (128 do not fit one block's UB), and the lightning indexer's scores."""
    SQ, SKV, H, K = (112, 2048, 64, 512) if quick else (4096, 8192, 64, 2048)
    macs, gm = sparse_mla_work(SQ, H, K, SKV)
    bf = BF16

    def args() -> list:
        # Distinct random rows of indices, repeated (the timing does not depend on their values).
        g = torch.Generator().manual_seed(0)
        rows = min(SQ, 64)
        idx = torch.stack([torch.randperm(SKV, generator=g)[:K] for _ in range(rows)]).to(torch.int32)
        idx = idx.repeat(SQ // rows + 1, 1)[:SQ].contiguous()
        return [torch.zeros(SQ, H, 576, dtype=bf), torch.zeros(SKV, 576, dtype=bf), idx,
                torch.zeros(SQ, H, 512, dtype=bf), torch.zeros(SQ, H)]

    sparse = Spec(
        name="DSA sparse MLA forward", shape=f"s_q {SQ} s_kv {SKV} h{H} top-k {K} d512+64", kind="attn",
        archs=("dav-3510",), build=None, macs=macs, gm_bytes=gm, op_bits=16, target="roof50", args=args,
        # Every query token reads its top-k rows of the one K/V sequence again: between two reads
        # of a row, at most the K/V rows and the running blocks' queries and indices are read.
        launches=((0, "sparse MLA"),),
        unique=(L2Reads(2 * SKV * 576 + 2 * SQ * H * 576 + 4 * SQ * K,
                        2 * SKV * 576 + ASSUMPTIONS["dav-3510"]["groups"] * (2 * H * 576 + 4 * K)),),
        candidates=[(f"block_I {bi}", lambda bi=bi: dsa.sparse_mla_fwd(SQ, SKV, H, 512, 64, K, bi))
                    for bi in ([32] if quick else [32, 64, 128])])
    IH, ID = 64, 128  # DeepSeek-V3.2's indexer: 64 heads of dim 128 (bf16 here; fp8 in DeepSeek's)
    indexer = Spec(
        name="DSA lightning indexer (bf16)", shape=f"s_q {SQ} s_kv {SKV} h{IH} d{ID}", kind="attn",
        archs=("dav-3510",), build=None, macs=SQ * SKV * IH * ID,
        gm_bytes=2 * SQ * IH * ID + 2 * SKV * ID + 4 * SQ * IH + 4 * SQ * SKV, op_bits=16,
        args=lambda: [torch.zeros(SQ, IH, ID, dtype=bf), torch.zeros(SKV, ID, dtype=bf), torch.zeros(SQ, IH),
                      torch.zeros(SQ, SKV)],
        launches=((0, "indexer"),), unique=(L2Reads(2 * SQ * IH * ID + 2 * SKV * ID + 4 * SQ * IH),),
        candidates=[(f"block_N {bn}", lambda bn=bn: dsa.lightning_indexer(SQ, SKV, IH, ID, bn))
                    for bn in ([64] if quick else [64, 128])])
    return [sparse, indexer]


def run(spec: Spec, arch: str) -> Row:
    """The spec's kernel (the fastest of its tile candidates, each at num_stages 2)."""
    if spec.kind != "attn" and not spec.tiles:
        return run_one(spec, arch, spec.build, spec.config)
    rows = []
    if spec.kind == "attn":
        for cand in spec.candidates:
            config, build = cand[0], cand[1]
            args = cand[2] if len(cand) > 2 else spec.args
            launches = cand[3] if len(cand) > 3 else spec.launches
            unique = cand[4] if len(cand) > 4 else spec.unique
            rows.append(_shown(spec, arch, run_launches(spec, arch, build, args, config, launches, unique)))
    else:
        for t in spec.tiles:
            rows.append(_shown(spec, arch, run_one(spec, arch, lambda t=t: spec.build(t),
                                                   f"tile {t[0]}x{t[1]}x{t[2]}, num_stages 2")))
    done = [r for r in rows if not r.skipped]
    return min(done, key=lambda r: r.total_cycles) if done else rows[0]


def _shown(spec: Spec, arch: str, r: Row) -> Row:
    """Print one candidate's figures as it finishes; return it."""
    busy = " ".join(f"{p} {v:.0f}%" for p, v in sorted((r.busy or {}).items()) if v >= 1)
    console.print(f"    [dim]{spec.name} {arch} {r.config}: "
                  f"{r.skipped or f'{r.time_us:,.1f} us, busy {busy}'} ({r.wall:.0f} s wall)[/dim]")
    return r


def run_launches(spec: Spec, arch: str, build, args, config: str, launches: tuple, unique: tuple) -> Row:
    """An "attn" spec: every timed launch emulated over its first wave (min(grid, cores) blocks, the
    cores being the AIVs of an AIV-only launch and the AI-core groups of a mixed one), scaled by
    its waves, at the L2 miss fraction of the whole launch; the launches' times add up (they run
    one after the other on the stream)."""
    row = Row(spec, arch, config=config, parts=[])
    a = ASSUMPTIONS[arch]
    try:
        k = ascend_backend.compile(build(), target={"kind": "ascendc", "arch": arch}, runtime="emulator")
    except AscendCompileError as e:
        row.skipped = f"{type(e).__name__}: {str(e).splitlines()[0]}".replace(f"{ROOT}/", "")
        return row
    entry = launch_args(k.program, args())
    t0 = time.perf_counter()
    for (n, name), uniq in zip(launches, unique, strict=True):
        lc = k.program.launches[n]
        grid = int(k.block_dims[n])
        ktype = lc.kernel_type.value
        cores = slots(arch, lc.kernel_type)
        waves = math.ceil(grid / cores)

        def run(blocks: int, n=n, ktype=ktype):
            return run_source(k.kernel_source, k.program.entry_name(n), entry, blocks, arch=arch, strict=False,
                              checks=False, auto_sync=False, kernel_type=ktype)

        def launch_miss(rep, grid=grid, uniq=uniq, cores=cores) -> float:
            if not uniq:
                return 1.0
            return l2_miss_fraction(arch, rep.gm_reads["bytes"] / min(grid, cores) * grid, uniq.unique, uniq.reuse)

        w = emulate_waves(run, grid, cores, launch_miss)
        if w.truncated:
            raise RuntimeError(f"{spec.name}: the emulator's trace was truncated; raise TL_ASCEND_EMU_TRACE_CAP")
        cycles = w.cycles
        row.parts.append((name, grid, waves, cycles))
        if row.busy is None:  # the first timed launch is the main one
            row.grid, row.cores, row.waves, row.wave_cycles = grid, cores, waves, int(w.first["total_cycles"])
            row.busy = dict(w.busy)
        row.total_cycles += cycles
    row.wall = time.perf_counter() - t0
    row.time_us = row.total_cycles / (a["clock_ghz"] * 1e3)
    row.roofline = roofline(arch, spec.macs, spec.gm_bytes, spec.op_bits)[0]
    row.achieved = spec.macs / (cube_rate(arch, spec.op_bits) * a["aic_cores"]) / row.total_cycles
    if len(row.parts) > 1:
        clock = a["clock_ghz"] * 1e3
        row.config += "; " + " + ".join(f"{nm} {c / clock:,.1f} us ({g} blocks, {w} waves)"
                                        for nm, g, w, c in row.parts)
    return row


def run_one(spec: Spec, arch: str, build, config: str) -> Row:
    row = Row(spec, arch, config=config)
    a = ASSUMPTIONS[arch]
    try:
        k = ascend_backend.compile(build(), target={"kind": "ascendc", "arch": arch}, runtime="emulator")
    except AscendCompileError as e:
        row.skipped = f"{type(e).__name__}: {str(e).splitlines()[0]}".replace(f"{ROOT}/", "")
        return row
    row.grid = k.block_dim
    row.cores = slots(arch, k.program.launches[0].kernel_type)
    first = min(row.grid, row.cores)
    row.waves = math.ceil(row.grid / row.cores)
    t0 = time.perf_counter()

    def run(blocks: int):
        return run_source(k.kernel_source, k.name, spec.args(), block_dim=blocks, arch=arch, strict=False,
                          checks=False, auto_sync=False)

    def launch_miss(rep) -> float:
        if spec.kind == "gemm":
            return l2_miss_fraction(arch, rep.gm_reads["bytes"] / first * row.grid, spec.unique_read)
        # a cast reads every byte once from HBM, plus what it reads again
        reads = rep.gm_reads["bytes"] / first * row.grid
        return l2_miss_fraction(arch, reads, reads - spec.reread) if spec.reread else 1.0

    w = emulate_waves(run, row.grid, row.cores, launch_miss)
    row.wall = time.perf_counter() - t0
    t = w.first
    row.wave_cycles = int(t["total_cycles"])
    row.total_cycles = w.cycles
    row.time_us = row.total_cycles / (t["clock_ghz"] * 1e3)
    row.busy = dict(w.busy)
    gm_cycles = spec.gm_bytes / chip_bpc(arch)
    if spec.kind == "cast":
        row.roofline = gm_cycles
        row.achieved = spec.gm_bytes / (row.time_us * 1e-6) / 1e9
    else:
        peak = cube_rate(arch, spec.op_bits) * a["aic_cores"]
        row.roofline = roofline(arch, spec.macs, spec.gm_bytes, spec.op_bits)[0]
        row.achieved = spec.macs / peak / row.total_cycles
    return row


def fmt_achieved(r: Row) -> str:
    if r.spec.kind == "cast":
        hbm = ASSUMPTIONS[r.arch]["chip_gm_bandwidth_gbps"]
        return f"{r.achieved:,.0f} GB/s ({100 * r.achieved / hbm:.0f} % of HBM)"
    if r.spec.kind == "attn":
        return (f"{100 * r.achieved:.1f} % of the b{r.spec.op_bits} Cube peak, {100 * r.of_roofline:.0f} % of the "
                f"roofline ({r.bound}-bound)")
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
            fmt_achieved(r), f"{r.roofline / (clock * 1e3):,.1f} ({r.bound})", f"{100 * r.of_roofline:.0f} %",
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
                          f"({cube_rate(arch, 8) * a['aic_cores'] * a['clock_ghz'] * 2 / 1e3:,.0f} TOPS), "
                          f"{cube_rate(arch, 16)} for 16-bit "
                          f"({cube_rate(arch, 16) * a['aic_cores'] * a['clock_ghz'] * 2 / 1e3:,.0f} TFLOPS)")
    block = "\n".join([
        BEGIN,
        "Generated by `python benchmarks/deepseek.py --write-docs`" + (" (--quick shapes)" if quick else "") +
        ". MODELLED: first wave and a partial last wave emulated, total = full waves x first wave + last wave "
        "(see the script's docstring); a kernel of "
        "several launches: the sum of the timed launches, grid, waves and busy % of the first.",
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
    ap.add_argument("--quick", action="store_true",
                    help="smaller shapes (1024 x 7168 casts, 2048^3 GEMMs, seq 2048 GQA, batch 8 x 1024 MLA decode, "
                         "112 query tokens of DSA) and fewer candidates")
    ap.add_argument("--arch", default="dav-3510,dav-c220")
    ap.add_argument("--only", default="", help="run only kernels whose name contains this text")
    ap.add_argument("--write-docs", action="store_true", help="write the table into docs/performance.md")
    ap.add_argument("--num-stages", type=int, default=2,
                    help="num_stages of GQA backward's and MLA decode's pipelined loops (default 2)")
    args = ap.parse_args()
    archs = args.arch.split(",")
    console.print("[bold]DeepSeek's kernels on the emulator's timing model: every figure is MODELLED "
                  "(docs/timing-model.md), not measured.[/bold]")
    rows = []
    for spec in specs(args.quick, args.num_stages):
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
