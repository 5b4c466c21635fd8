"""Cube and Vector together: the split kernels on the emulator against torch, both arches, strict mode
(no race, flag error or deadlock). Tolerances: fp16 outputs 2e-2 abs/rel (fp32 accumulation, fp16
storage of P and O), fp32 outputs 1e-3."""

import re

import attention
import gemm_epilogue
import pytest
import torch

import ascend_backend
from ascend_backend.emulator import EmulatorError, run_source
from ascend_backend.kernel import launch_args
from ascend_backend.testing import Case, run_case


def _ok(report):
    assert report.ok and not report.races and not report.flag_errors and not report.deadlock


@pytest.mark.parametrize("act,out_dtype", [("relu", "float16"), ("gelu", "bfloat16")])
def test_gemm_epilogue(arch, act, out_dtype):
    M, N, K = 200, 192, 256  # an M tail
    f = gemm_epilogue.matmul_epilogue(M, N, K, 128, 64, 64, out_dtype=out_dtype, scale=0.5, act=act)
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(M, K, generator=g).half() * 0.2, torch.randn(K, N, generator=g).half() * 0.2
    bias = torch.randn(N, generator=g)
    c = torch.empty(M, N, dtype=getattr(torch, out_dtype))
    k, report, _ = run_case(Case(f, [a, b, bias, c], [3], lambda a, b, bias, c: [
        gemm_epilogue.reference(a, b, bias, 0.5, act, out_dtype)], atol=3e-2, rtol=3e-2), arch)
    _ok(report)
    assert k.program.launch.kernel_type.value == "MIX_AIC_1_2"
    assert "if ASCEND_IS_AIC" in k.kernel_source and "if ASCEND_IS_AIV" in k.kernel_source


def test_softmax_qk(arch):
    _, report, _ = run_case(attention.example_softmax_qk(), arch)
    _ok(report)


@pytest.mark.parametrize("batch,heads,seq_q,seq_kv,dim,causal", [
    (1, 1, 128, 128, 64, False),
    pytest.param(2, 2, 128, 256, 64, True, marks=pytest.mark.slow),
    pytest.param(1, 2, 128, 128, 128, True, marks=pytest.mark.slow),
])
def test_flash_attention(arch, batch, heads, seq_q, seq_kv, dim, causal):
    c = attention.case(batch=batch, heads=heads, seq_q=seq_q, seq_kv=seq_kv, dim=dim, is_causal=causal)
    _, report, _ = run_case(c, arch)
    _ok(report)


@pytest.mark.slow
@pytest.mark.parametrize("block_M,block_N", [(128, 64), (64, 128)])
def test_flash_attention_causal_mask_on_the_diagonal_blocks_only(arch, block_M, block_N):
    """causal_mask="diagonal": the scores are masked after the gemm, in the K/V blocks that cross the
    diagonal only (past_len = 128 here, so the first blocks of every query block are unmasked)."""
    c = attention.case(heads=1, seq_q=256, seq_kv=384, dim=64, block_M=block_M, block_N=block_N,
                       causal_mask="diagonal")
    k, report, _ = run_case(c, arch)
    _ok(report)
    src = k.kernel_source
    # the select sits in an `if` on the block index: no vector pass on the blocks under the diagonal
    before_select = src.split("Select(")[0]
    assert "(k + 1) * " in before_select.rsplit("if (", 1)[1], "the mask is not under the diagonal test"


def test_flash_attention_diagonal_mask_is_a_select_under_the_diagonal_test(arch):
    """Compile only (the emulator runs are slow-tier): the mask is one Compares + Select per
    diagonal block, inside `if ((k + 1) * 64 > ...)`, and the unmasked blocks run no mask pass."""
    c = attention.case(heads=1, seq_q=256, seq_kv=384, dim=64, block_M=128, block_N=64, causal_mask="diagonal")
    src = ascend_backend.compile(c.func, target={"kind": "ascendc", "arch": arch}, runtime="emulator").kernel_source
    before_select = src.split("Select(")[0]
    assert src.count("Select(") == 1 and "(k + 1) * 64) > " in before_select.rsplit("if (", 1)[1]


def test_gqa(arch):
    _, report, _ = run_case(attention.case(heads=4, groups=2, is_causal=True, seq_q=128, seq_kv=128), arch)
    _ok(report)


def test_sync_table_lists_cross_core_flags():
    k = ascend_backend.compile(attention.flashattn(is_causal=True), target={"kind": "ascendc", "arch": "dav-c220"},
                               runtime="emulator")
    rows = k.sync_table()
    cc = [r for r in rows if r["event"].startswith("CrossCore")]
    assert {r["buffer"] for r in cc} == {"ws_acc_s", "ws_acc_s_cast", "ws_acc_o"}
    assert all(0 <= r["id"] <= 10 for r in cc)
    assert any(r["producer"].startswith("AIC: Fixpipe acc_s") and r["consumer"].startswith("AIV") for r in cc)
    src = k.kernel_source
    assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)" in src and "GetSubBlockIdx()" in src
    assert re.search(r"CrossCoreSetFlag<2, PIPE_FIX>\(\d+\);  // acc_s from the Cube to the Vector cores", src)


def test_removed_cross_core_flags_fail_with_a_report_not_a_hang():
    case = attention.case(is_causal=False, heads=1, seq_kv=128)
    k = ascend_backend.compile(case.func, target={"kind": "ascendc", "arch": "dav-c220"}, runtime="emulator")
    stripped = "\n".join(line for line in k.kernel_source.splitlines() if "CrossCore" not in line)
    args = launch_args(k.program, [a.clone() for a in case.inputs])
    with pytest.raises(EmulatorError) as info:
        run_source(stripped, k.name, args, k.block_dim, arch="dav-c220", auto_sync=False)
    rep = info.value.report
    assert rep is not None and (rep.races or rep.errors or rep.deadlock)
    assert "race" in rep.summary().lower()
