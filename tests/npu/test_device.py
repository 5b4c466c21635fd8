"""The suite on real hardware: ``pytest -m npu`` builds every kernel of tests/cases.py with bisheng
and runs it on the NPU against the same torch references. Skipped, with the reason, on machines
without an Ascend NPU, CANN's bisheng and torch_npu."""

import pytest
from cases import CASES

from ascend_backend.npu import npu_unavailable_reason
from ascend_backend.testing import run_case

REASON = npu_unavailable_reason()


@pytest.mark.npu
@pytest.mark.skipif(REASON is not None, reason=f"no NPU runtime here: {REASON}")
@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_on_npu(arch, name):
    import torch

    case = CASES[name]()
    case.inputs = [a.to("npu") if isinstance(a, torch.Tensor) else a for a in case.inputs]
    ref = case.reference
    case.reference = lambda *xs: [r.to("npu") for r in ref(*[x.cpu() if isinstance(x, torch.Tensor) else x
                                                             for x in xs])]
    run_case(case, arch, runtime="npu")
