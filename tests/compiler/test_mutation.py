"""Delete each SetFlag/WaitFlag pair and each PipeBarrier of the compiler's kernels in turn: the
emulator must catch every deletion (a race, a flag error, a deadlock or wrong numbers). A deletion
nobody notices is a checker blind spot or a flag the compiler never needed; both fail here."""

import elementwise
import gemm
import pytest
import rmsnorm
import softmax

from ascend_backend.mutation import run_mutations

# Mutation sweeps compile and run one kernel per deleted flag: the slow tier.
pytestmark = pytest.mark.slow

CASES = {"elementwise": elementwise.example, "gemm": gemm.example, "rmsnorm": rmsnorm.example,
         "softmax": softmax.example}


# dav-c220 carries every flag dav-3510 does plus the vector barriers, so it is the arch mutated for
# every kernel; dav-3510 is mutated on the GEMM (its LoadData/Fixpipe paths differ) to keep the
# suite's time in budget.
ARCH_CASES = [("dav-c220", n) for n in sorted(CASES)] + [("dav-3510", "gemm")]


@pytest.mark.parametrize("arch,name", ARCH_CASES)
def test_every_flag_is_needed_and_caught(arch, name, capsys):
    res = run_mutations(CASES[name](), arch)
    with capsys.disabled():
        print(f"\n[mutation] {res.line()}")
    assert res.deleted > 0
    assert not res.unneeded, f"{len(res.unneeded)} deletions not caught:\n  " + "\n  ".join(res.unneeded)
    assert res.caught == res.deleted


def _pipelined_cases():
    import kernels
    import torch

    from ascend_backend.testing import Case

    a, b = torch.randn(64, 224).half(), torch.randn(224, 64).half()
    x = torch.randn(32, 184).half()
    ak, bk = torch.randn(128, 768).half(), torch.randn(768, 128).half()
    return {
        # 3 iterations of a gemm stepped through K in two chunks with ping/pong L0 buffers
        "gemm_k_stepped": Case(kernels.gemm_loop(M=128, N=128, K=768, bK=256, num_stages=2),
                               [ak, bk, torch.empty(128, 128)], [2], lambda a, b, c: [a.float() @ b.float()],
                               atol=1e-2, rtol=1e-3),
        "gemm_3_stages": Case(kernels.gemm_loop(K=224, num_stages=3), [a, b, torch.empty(64, 64)], [2],
                              lambda a, b, c: [a.float() @ b.float()], atol=1e-3, rtol=1e-3),
        "stream_2_stages": Case(kernels.stream(N=184, num_stages=2), [x, torch.empty_like(x), torch.empty(32)],
                                [1, 2], lambda x, y, s: [(x.float() * 2 + 1).half(), x.float().sum(-1)],
                                atol=1e-3, rtol=1e-4),
    }


@pytest.mark.parametrize("arch,name", [("dav-c220", "gemm_3_stages"), ("dav-c220", "stream_2_stages"),
                                       ("dav-3510", "gemm_3_stages"), ("dav-c220", "gemm_k_stepped"),
                                       ("dav-3510", "gemm_k_stepped")])
def test_pipelined_flags_are_all_needed(arch, name, capsys):
    res = run_mutations(_pipelined_cases()[name], arch)
    with capsys.disabled():
        print(f"\n[mutation] {name}: {res.line()}")
    assert not res.unneeded, f"{len(res.unneeded)} deletions not caught:\n  " + "\n  ".join(res.unneeded)
    assert res.caught == res.deleted > 0


# dav-3510's on-chip routes (L0C -> UB, UB -> L1, mode-4 flags, "free" flags per AIV) on FlashAttention
# and on the two kernels whose crossing tile needs a "free" flag; dav-c220's workspace "free" flag on one.
@pytest.mark.parametrize("arch,name", [("dav-c220", "gemm_epilogue"), ("dav-c220", "flash_attention"),
                                       ("dav-3510", "flash_attention"), ("dav-c220", "gemm_tiles"),
                                       ("dav-3510", "gemm_tiles"), ("dav-3510", "scaled_a")])
def test_mix_kernel_flags_including_cross_core(arch, name, capsys):
    import attention
    import gemm_epilogue
    import kernels

    if name in ("gemm_tiles", "scaled_a"):
        case = kernels.free_flag_cases()[name]
    elif name == "gemm_epilogue":
        case = gemm_epilogue.example()
    else:
        case = attention.case(heads=1, seq_kv=128, is_causal=False)
    res = run_mutations(case, arch)
    with capsys.disabled():
        print(f"\n[mutation] {name}: {res.line()}")
    assert any(k.startswith("cross-core") for k in res.how), "no cross-core flag was mutated"
    if name in ("gemm_tiles", "scaled_a"):
        assert any(k.startswith("cross-core") and "(free," in k for k in res.how), "no 'free' flag was mutated"
    assert not res.unneeded, f"{len(res.unneeded)} deletions not caught:\n  " + "\n  ".join(res.unneeded)
    assert res.caught == res.deleted > 0
