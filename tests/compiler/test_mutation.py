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
    if name == "gemm":  # the accumulator's Fixpipe runs on unit flags: dropping them (either side) is caught
        assert sum("unitFlag" in k for k in res.how) == 3, sorted(res.how)


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
        # three 64 KB tiles in dav-c220's 184 KB UB: a tile reuses a dead one's bytes across pipes
        "tight_ub": kernels.tight_ub_case(),
        # MmadMx (dav-3510): the scale tiles' own MTE2 -> MTE1 flags, two L0 chunks per step
        "gemm_mx": kernels.mx_gemm_case(),
    }


@pytest.mark.parametrize("arch,name", [("dav-c220", "gemm_3_stages"), ("dav-c220", "stream_2_stages"),
                                       ("dav-3510", "gemm_3_stages"), ("dav-c220", "gemm_k_stepped"),
                                       ("dav-3510", "gemm_k_stepped"), ("dav-c220", "tight_ub"),
                                       ("dav-3510", "gemm_mx")])
def test_pipelined_flags_are_all_needed(arch, name, capsys):
    res = run_mutations(_pipelined_cases()[name], arch)
    with capsys.disabled():
        print(f"\n[mutation] {name}: {res.line()}")
    assert not res.unneeded, f"{len(res.unneeded)} deletions not caught:\n  " + "\n  ".join(res.unneeded)
    assert res.caught == res.deleted > 0


# Deletions known not to matter in skewed loops: a part's slot-indexed WAR/WAW flag from step k to
# step k + 2 is implied by the cross-core round trip of step k (e.g. the Cube's Fixpipe of S(k) is
# done once the Vectors sent P(k) back, which the Cube waits for in part B(k), before A(k + 2)), and
# after the loop the last trip's flags order what follows. insert_sync does not prove chains through
# the other part and the other core yet, so it keeps these flags (each costs a Set and a Wait). Exact
# lists: a flag leaving or joining them fails the test.
KNOWN_REDUNDANT = {
    # (the FIX_M flags of acc_s and acc_o were two of them: their Mmads and Fixpipes now run on unit flags)
    # (K_shared's MTE1_MTE2 flag on dav-c220 was one: part B now loads K two steps on, passes/prefetch.py,
    # and part A's load of the first two steps carries no flag)
    ("dav-3510", "flash_attention_causal"): {
        "AIC: flag #2 M_MTE1(0..1 by k % 2) on Q_shared_l0a",
        "AIC: flag #6 M_MTE1(2..3 by k_b % 2) on acc_s_cast_l0a",
        "AIV: flag #1 MTE3_V(0..1 by k % 2) on acc_s_cast"},
    # (dav-c220 had five: with part A two steps ahead there, route.skew_lead, the round trip of step k
    # ends after the reuse of its slot in step k + 2, so each of them is needed and caught)
    ("dav-c220", "flash_attention_causal"): set(),
    ("dav-3510", "two_way_free"): {"AIV: flag #1 V_MTE3(0) on run"},
}


# dav-3510's on-chip routes (L0C -> UB, UB -> L1, mode-4 flags, "free" flags per AIV) on FlashAttention
# and on the two kernels whose crossing tile needs a "free" flag; dav-c220's workspace "free" flag on one.
# FlashAttention's loop is skewed (Cube/Vector overlap): its flags by step, causal too; two_way_free is
# a skewed loop whose S tile has one slot and a "free" flag.
@pytest.mark.parametrize("arch,name", [("dav-c220", "gemm_epilogue"), ("dav-c220", "flash_attention"),
                                       ("dav-3510", "flash_attention"), ("dav-c220", "gemm_tiles"),
                                       ("dav-3510", "gemm_tiles"), ("dav-3510", "scaled_a"),
                                       ("dav-3510", "flash_attention_causal"), ("dav-c220", "flash_attention_causal"),
                                       ("dav-3510", "two_way_free"), ("dav-3510", "block_scaled_fp8")])
def test_mix_kernel_flags_including_cross_core(arch, name, capsys):
    import attention
    import gemm_epilogue
    import kernels

    if name in ("gemm_tiles", "scaled_a"):
        case = kernels.free_flag_cases()[name]
    elif name == "gemm_epilogue":
        case = gemm_epilogue.example()
    elif name == "two_way_free":
        case = kernels.two_way_case()
    elif name == "block_scaled_fp8":
        case = kernels.block_scaled_fp8_case()
    else:
        # causal: 3 and 4 steps per block, so a slot is reused (2 steps would never reuse one)
        seq_kv = 256 if name.endswith("causal") else 128
        case = attention.case(heads=1, seq_kv=seq_kv, is_causal=name.endswith("causal"))
    res = run_mutations(case, arch)
    with capsys.disabled():
        print(f"\n[mutation] {name}: {res.line()}")
    assert any(k.startswith("cross-core") for k in res.how), "no cross-core flag was mutated"
    if name in ("gemm_tiles", "scaled_a", "two_way_free", "block_scaled_fp8"):
        assert any(k.startswith("cross-core") and "(free," in k for k in res.how), "no 'free' flag was mutated"
    known = KNOWN_REDUNDANT.get((arch, name), set())
    unneeded = {":".join(u.split(":")[:2]) for u in res.unneeded}  # "core: flag #n ... on buffer"
    assert unneeded == known, ("deletions not caught (beyond the known redundant ones):\n  "
                               + "\n  ".join(sorted(unneeded - known)) + "\nknown, now caught:\n  "
                               + "\n  ".join(sorted(known - unneeded)))
    assert res.caught == res.deleted - len(known) > 0
