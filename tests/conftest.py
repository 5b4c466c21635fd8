import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (HERE, os.path.join(ROOT, "examples")):
    if p not in sys.path:
        sys.path.insert(0, p)

ARCHES = ["dav-3510", "dav-c220"]


@pytest.fixture(params=ARCHES)
def arch(request):
    return request.param

# Every compile in the test suite runs the structural IR verifier after each stage.
os.environ.setdefault("TL_ASCEND_VERIFY", "1")
