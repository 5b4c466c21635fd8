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


def test_any_text_between_parts_of_a_pattern():
    text = "SetFlag<V_MTE2>(1);  // WAR on x\nSetFlag<V_MTE2>(2);  // WAR on y"
    filecheck(text, "CHECK: SetFlag<V_MTE2>({{.*}}on y")
    with pytest.raises(CheckFailure):
        filecheck(text, "CHECK: on x{{.*}}SetFlag")      # the parts match in order on one line
    with pytest.raises(CheckFailure):
        filecheck(text, "CHECK: SetFlag<V_MTE2>(2){{.*}}on x")
