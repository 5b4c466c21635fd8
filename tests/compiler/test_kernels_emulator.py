"""Every kernel of the suite (tests/cases.py), compiled for both arches and run on the emulator in
strict mode (any race or flag error fails) against its torch reference."""

import pytest
from cases import CASES

from ascend_backend.testing import run_case


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_on_emulator(arch, name):
    kernel, report, errors = run_case(CASES[name](), arch, runtime="emulator")
    assert report is not None and report.ok
    assert not report.races and not report.flag_errors
    # checked as built for the device: bisheng --cce-auto-sync=off, every sync explicit
    assert report.auto_sync is False
