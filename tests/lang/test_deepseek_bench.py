"""benchmarks/deepseek.py's arithmetic: the useful MACs it credits each attention kernel with are
the MACs that kernel's Mmads issue on the emulator (so its fraction of the Cube peak is not
inflated), and the roofline takes the binding side."""

import sys
from pathlib import Path

import pytest

import ascend_backend
from ascend_backend.emulator import run_source
from ascend_backend.emulator.timing import ASSUMPTIONS, PIPES
from ascend_backend.kernel import launch_args

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import deepseek  # noqa: E402

ARCH = "dav-3510"


def issued_macs(case, launch):
    """MACs of every Mmad of launch ``launch`` of the case's kernel, all blocks emulated."""
    k = ascend_backend.compile(case.func, target={"kind": "ascendc", "arch": ARCH}, runtime="emulator")
    entry = launch_args(k.program, [a.clone() for a in case.inputs])
    rep = run_source(k.kernel_source, k.program.entry_name(launch), entry, k.block_dims[launch], arch=ARCH,
                     strict=False, checks=False, auto_sync=False,
                     kernel_type=k.program.launches[launch].kernel_type.value)
    assert rep.timing["total_cycles"] > 0 and not rep.timing["truncated_trace"]
    m = PIPES.index("M")
    return sum(r[8] for th in rep._trace["threads"] for r in th["ops"] if r[1] == m)


@pytest.mark.slow
def test_gqa_backward_macs_are_the_five_gemms():
    gqa = deepseek.gqa_backward
    macs, _ = deepseek.gqa_bwd_work(batch=1, heads=2, head_kv=1, seq=128, dim=64)
    assert issued_macs(gqa.case(), launch=1) == macs


@pytest.mark.slow
def test_mla_decode_macs():
    mla = deepseek.mla_decode
    macs, _ = deepseek.mla_decode_work(batch=2, heads=16, seq=512)
    assert issued_macs(mla.case(seqlens=(512, 512)), launch=0) == macs


@pytest.mark.slow
def test_sparse_mla_macs():
    dsa = deepseek.dsa
    macs, _ = deepseek.sparse_mla_work(seq_q=32, heads=16, topk=64, seq_kv=256)
    assert issued_macs(dsa.sparse_mla_case(), launch=0) == macs


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_roofline_takes_the_binding_side(arch):
    a = ASSUMPTIONS[arch]
    peak = a["cube_macs_per_cycle_16bit"] * a["aic_cores"]
    bpc = a["chip_gm_bandwidth_gbps"] / a["clock_ghz"]
    # GQA backward at seq 4096: 5 x 4096^2 x 128 x 8 MACs against ~50 MB: the Cube binds.
    macs, gm = deepseek.gqa_bwd_work(1, 8, 1, 4096, 128)
    assert deepseek.roofline(arch, macs, gm) == (pytest.approx(macs / peak), "Cube")
    # MLA decode with 16 heads: 16 x 1088 MACs per 1152 cached bytes, far below the chip's
    # MACs per byte (peak / bpc, about 118 on dav-3510): HBM binds.
    macs, gm = deepseek.mla_decode_work(64, 16, 4096)
    assert deepseek.roofline(arch, macs, gm) == (pytest.approx(gm / bpc), "HBM")
    assert gm == 2 * 64 * 4096 * 576 + 2 * 64 * 16 * (512 + 576)


def test_mla_decode_l2_reuse_follows_the_grid_order():
    # Head blocks first: the two readers of a page run at once, so half the reads hit L2; batch
    # first: a page is read again only after the whole 302 MB cache, beyond L2.
    spec = deepseek.mla_spec(quick=False)
    miss = {}
    for config, *_rest, per_launch in spec.candidates:
        reads = per_launch[0]
        miss[config] = deepseek.l2_miss_fraction(ARCH, 2 * reads.unique, reads.unique, reads.reuse)
    first = [m for c, m in miss.items() if "head blocks first" in c]
    batch = [m for c, m in miss.items() if "batch first" in c]
    assert first and batch
    assert all(m == pytest.approx(0.5) for m in first)
    assert all(m > 0.8 for m in batch)


def test_targets_are_judged_on_dav_3510_only():
    """The issue sets its targets for dav-3510: a dav-c220 row shows its figure without a verdict."""
    spec = next(s for s in deepseek.specs(quick=True) if s.name.startswith("int8 GEMM (int32"))
    for arch, verdict in (("dav-3510", "NOT MET (>= 85 % of the Cube peak)"), ("dav-c220", "-")):
        row = deepseek.Row(spec, arch)
        row.achieved = 0.839
        assert deepseek.verdict(row) == verdict
    row = deepseek.Row(spec, "dav-3510")
    row.achieved = 0.86
    assert deepseek.verdict(row).startswith("MET")
