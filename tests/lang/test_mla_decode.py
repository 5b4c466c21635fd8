"""MLA decode over a paged KV cache (examples/mla_decode.py): latent dim 512 + rope 64, page
lookups read from GM at run time, the sequence length read from GM (a runtime loop trip count and
a tail mask), split along the sequence and combined in a second launch. Against torch, strict
emulator."""

import importlib.util
from pathlib import Path

import pytest

from ascend_backend.testing import run_case

_spec = importlib.util.spec_from_file_location(
    "mla_decode_example", Path(__file__).resolve().parents[2] / "examples" / "mla_decode.py")
mla = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mla)


def _check(arch, **shape):
    kernel, _, _ = run_case(mla.case(**shape), arch=arch)
    launches = 1 if shape.get("num_split") == 1 else 2
    assert len(kernel.reports) == launches and all(r.ok for r in kernel.reports)
    assert "block_table_gm.GetValue(" in kernel.kernel_source


def test_mla_decode_paged_3510():
    _check("dav-3510")


@pytest.mark.slow
def test_mla_decode_paged_c220():
    _check("dav-c220")


@pytest.mark.slow
def test_mla_decode_splits_without_blocks():
    # A 40-token sequence over 4 splits: three of them have no K/V block (zeros, lse = -inf).
    _check("dav-3510", seqlens=(40, 512), num_split=4)


@pytest.mark.slow
def test_mla_decode_64_heads_per_block():
    # 64 query heads against one latent head in one block (the two gemms share L0B: the P V gemm
    # steps through K in chunks of 16).
    _check("dav-3510", batch=1, heads=64, block_H=64, seqlens=(512,))


def test_mla_decode_one_split_heads_inner():
    # One split: the split launch writes the output itself (no combine launch); the head blocks
    # of a sequence are the grid's first axis (consecutive blocks).
    _check("dav-3510", heads=32, num_split=1, heads_inner=True)


@pytest.mark.slow
def test_mla_decode_heads_inner_c220():
    _check("dav-c220", heads=32, num_split=2, heads_inner=True)


@pytest.mark.slow
def test_mla_decode_two_pages_per_block():
    # block_N 128 over 64-token pages: two page table lookups and copies per K/V block (the
    # benchmark's configuration), with a tail block that ends inside its second page.
    _check("dav-3510", heads=64, block_H=64, block_N=128, num_split=1, heads_inner=True, seqlens=(300, 512))
