"""GQA backward (examples/gqa_backward.py): three launches in one PrimFunc (Delta, the dK/dV/dQ
kernel with dQ added atomically, the dQ cast), BF16, K/V shared by a group of query heads. dQ, dK
and dV against torch autograd in float32, strict emulator (no race, no flag error)."""

import importlib.util
from pathlib import Path

import pytest
from ascend_backend.passes.partition import partition

from ascend_backend.arch import get_arch
from ascend_backend.frontend import import_primfunc
from ascend_backend.ir import Core, Send, walk
from ascend_backend.testing import run_case

_spec = importlib.util.spec_from_file_location(
    "gqa_backward_example", Path(__file__).resolve().parents[2] / "examples" / "gqa_backward.py")
gqa = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gqa)


def _check(arch, **shape):
    kernel, _, errors = run_case(gqa.case(**shape), arch=arch)
    assert len(kernel.reports) == (4 if shape.get("head_split", 1) > 1 else 3) and all(r.ok for r in kernel.reports)
    # The dS tile feeds two gemms (dK and dQ) from one crossing to the Cube.
    program = partition(import_primfunc(gqa.case(**shape).func, get_arch(arch)))
    sends = [s for s in walk(program.launches[1].kernels[Core.AIV].body) if isinstance(s, Send)]
    assert sorted(s.tile for s in sends) == ["dsT_cast", "qkT_cast"]
    return errors


def test_gqa_backward_two_heads_per_kv_head_3510():
    _check("dav-3510")


@pytest.mark.slow
def test_gqa_backward_two_heads_per_kv_head_c220():
    _check("dav-c220")


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_gqa_backward_one_kv_head_dim_128(arch):
    # DeepSeek's published shape: one K/V head, head dim 128 (here 4 query heads, seq 256).
    _check(arch, heads=4, groups=4, seq=256, dim=128)


def test_gqa_backward_heads_split_over_blocks_dq_deferred_3510():
    # head_split=2: each block takes half of the group's query heads and adds its partial dK / dV
    # atomically (FP32), cast by a fourth launch; 4 query heads on one K/V head. defer_dq: step
    # k's dQ is added during step k + 1 (the last one after the loop).
    _check("dav-3510", heads=4, groups=4, seq=128, dim=64, head_split=2, defer_dq=True)


@pytest.mark.slow
@pytest.mark.parametrize("defer_dq", [False, True])
def test_gqa_backward_heads_split_over_blocks_c220(defer_dq):
    _check("dav-c220", heads=4, groups=4, seq=128, dim=64, head_split=2, defer_dq=defer_dq)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_gqa_backward_dq_deferred_one_block_per_group(arch):
    _check(arch, heads=2, groups=2, seq=256, dim=64, defer_dq=True)


@pytest.mark.slow
def test_gqa_backward_heads_split_without_deferring_3510():
    _check("dav-3510", heads=4, groups=4, seq=128, dim=64, head_split=2)


@pytest.mark.slow
def test_gqa_backward_benchmark_configuration_3510():
    # benchmarks/deepseek.py's fastest configuration at a small size: head dim 128, 128 x 64
    # blocks, 8 query heads on one K/V head split over 4 blocks, dQ added one step late.
    _check("dav-3510", heads=8, groups=8, seq=256, dim=128, block_M=128, block_N=64, head_split=4, defer_dq=True)
