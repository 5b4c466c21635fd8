"""The layering rules of the IR: passes decide, codegen and the templates spell C++."""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Spellings that belong to codegen and the templates only.
CPP = ["AscendC::", "QuantMode_t", "RoundMode", "HardEvent", "DataCopy(", "LocalTensor", "GlobalTensor", "min_i(",
       "PIPE_ALL>", "__gm__", "int32_t"]


def _sources(folder: str) -> list:
    d = os.path.join(ROOT, folder)
    return [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".py")]


@pytest.mark.parametrize("path", _sources("passes"), ids=os.path.basename)
def test_no_cpp_spelling_in_passes(path):
    text = open(path).read()
    found = [w for w in CPP if w in text]
    assert not found, f"{os.path.basename(path)} spells C++ ({found}): render it in codegen/templates instead"


def test_templates_take_no_arch_decisions():
    d = os.path.join(ROOT, "templates")
    for f in os.listdir(d):
        text = open(os.path.join(d, f)).read()
        assert not re.search(r"{%-?\s*if[^%]*arch", text), f"{f} branches on the arch"


def test_the_checker_can_fail(tmp_path):
    # the rule above is not vacuous: a pass that spelled C++ would be caught
    assert any(w in 'fp.quantPre = QuantMode_t::F322F16;' for w in CPP)
