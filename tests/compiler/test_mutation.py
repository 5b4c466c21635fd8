"""Delete each SetFlag/WaitFlag pair and each PipeBarrier of the compiler's kernels in turn: the
emulator must catch every deletion (a race, a flag error, a deadlock or wrong numbers). A deletion
nobody notices is a checker blind spot or a flag the compiler never needed; both fail here."""

import elementwise
import gemm
import pytest
import rmsnorm
import softmax

from ascend_backend.mutation import run_mutations

CASES = {"elementwise": elementwise.example, "gemm": gemm.example, "rmsnorm": rmsnorm.example,
         "softmax": softmax.example}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_flag_is_needed_and_caught(arch, name, capsys):
    res = run_mutations(CASES[name](), arch)
    with capsys.disabled():
        print(f"\n[mutation] {res.line()}")
    assert res.deleted > 0
    assert not res.unneeded, f"{len(res.unneeded)} deletions not caught:\n  " + "\n  ".join(res.unneeded)
    assert res.caught == res.deleted
