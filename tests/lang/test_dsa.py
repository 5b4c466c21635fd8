"""DeepSeek Sparse Attention (examples/dsa.py): the lightning indexer's scores, top-k selection and
sparse MLA forward over the selected keys (gathered row by row from GM into the Cube's tile, one DMA
per key with the PV gemm on a window of it; and the older two-tile form), each against torch on the
emulator, strict."""

import importlib.util
from pathlib import Path

import pytest
import torch

import ascend_backend

_spec = importlib.util.spec_from_file_location("dsa_example", Path(__file__).resolve().parents[2] / "examples" / "dsa.py")
dsa = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dsa)


def _run(case, arch):
    kernel = ascend_backend.compile(case.func, target={"kind": "ascendc", "arch": arch}, runtime="emulator",
                                    strict=True)
    args = [a.clone() for a in case.inputs]
    kernel(*args)
    assert kernel.last_report.ok
    return kernel, [args[i] for i in case.outputs], case.reference(*[a.clone() for a in case.inputs])


def check_indexer(arch, **shape):
    _, (got,), (want,) = _run(dsa.indexer_case(**shape), arch)
    assert torch.equal(torch.isinf(got), torch.isinf(want))  # the causal mask
    torch.testing.assert_close(got.nan_to_num(0, 0, 0), want.nan_to_num(0, 0, 0), atol=5e-2, rtol=1e-2)


def check_topk(arch, **shape):
    kernel, (got,), (want,) = _run(dsa.topk_case(**shape), arch)
    assert torch.equal(got.sort(dim=1).values, want)
    return kernel


def check_sparse_mla(arch, **shape):
    _, (out, lse), (out_ref, lse_ref) = _run(dsa.sparse_mla_case(**shape), arch)
    torch.testing.assert_close(out.float(), out_ref.float(), atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(lse, lse_ref, atol=1e-3, rtol=1e-3)


def test_indexer_scores_3510():
    check_indexer("dav-3510")


def test_topk_selects_the_visible_keys_3510():
    # seq_q == seq_kv: token t sees t + 1 keys, so the first rows pad with -1.
    check_topk("dav-3510", seq_q=64, seq_kv=64, topk=32)


def test_topk_kernel_named_like_a_c_function():
    # The PrimFunc is called `select`, as POSIX's select(2): its entry is a C++ function of namespace
    # tl_ascend, which keeps the name without clashing.
    kernel = check_topk("dav-3510", seq_q=16, seq_kv=64, topk=4)
    assert "__global__ __aicore__ void select(" in kernel.kernel_source


def test_sparse_mla_forward_3510():
    check_sparse_mla("dav-3510")


@pytest.mark.slow
@pytest.mark.parametrize("which", ["indexer", "topk", "sparse_mla"])
def test_dsa_c220(which):
    {"indexer": check_indexer, "topk": check_topk, "sparse_mla": check_sparse_mla}[which]("dav-c220")


@pytest.mark.slow
def test_sparse_mla_64_heads_per_token():
    # 64 heads split between the two AIVs while the per-key mask (64 keys) stays whole on each.
    check_sparse_mla("dav-3510", seq_q=8, heads=64, topk=128, block_I=64)


@pytest.mark.slow
def test_sparse_mla_benchmark_configuration_3510():
    # benchmarks/deepseek.py's sparse MLA: 64 heads per token, 128 selected keys per step.
    check_sparse_mla("dav-3510", seq_q=4, heads=64, topk=256, block_I=128)


@pytest.mark.slow
def test_indexer_benchmark_configuration_3510():
    # benchmarks/deepseek.py's indexer: DeepSeek-V3.2's 64 heads of dim 128, 128 keys per step.
    check_indexer("dav-3510", seq_q=8, seq_kv=256, heads=64, dim=128, block_N=128)


@pytest.mark.slow
def test_sparse_mla_forward_two_dmas_per_key_3510():
    # The form with the latent and RoPE columns of each key in two tiles (two DMAs, two QK^T gemms).
    check_sparse_mla("dav-3510", one_dma=False)
