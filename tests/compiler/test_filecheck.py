"""The FileCheck helper itself must be able to fail."""

import pytest
from filecheck import CheckFailure, filecheck

TEXT = "a\nb\nc\nd"


def test_in_order_passes():
    filecheck(TEXT, "CHECK: a\nCHECK-NEXT: b\nCHECK: d")


@pytest.mark.parametrize("checks", ["CHECK: b\nCHECK: a", "CHECK: a\nCHECK-NEXT: c", "CHECK: a\nCHECK-NOT: b\nCHECK: c",
                                    "CHECK: zz"])
def test_failures(checks):
    with pytest.raises(CheckFailure):
        filecheck(TEXT, checks)
