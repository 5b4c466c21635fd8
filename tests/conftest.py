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


# The fast tier (`pytest -m "not slow"`, under 3 minutes on 2 cores) runs the emulator's op tests,
# the language families, the suite's kernels and the pipelining twins on dav-3510 only; their
# dav-c220 twins run in the full suite. The other compiler tests (test_mix, test_cross_core_routes,
# tests/ir, ...) keep both arches there.
_ONE_ARCH_IN_FAST_TIER = ("tests/emulator/", "tests/lang/", "tests/lowp/", "tests/compiler/test_pipelining.py",
                          "tests/compiler/test_kernels_emulator.py")


def pytest_collection_modifyitems(config, items):
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.nodeid.startswith(_ONE_ARCH_IN_FAST_TIER) and "dav-c220" in params.values():
            item.add_marker(pytest.mark.slow)
