"""The oracle itself, without the emulator: torch's evaluation of a tree with the documented
rounding (float16 per operation, bfloat16 through float32 rounded once, float32) lies inside the
oracle's intervals, and a result that is off by a few ulps, has a lost NaN or a wrong sign of zero
does not."""

import numpy as np
import prop_oracle as orc
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from prop_kernels import Data
from test_prop_elementwise import DTYPES, trees

pytestmark = pytest.mark.property

_TORCH_BINARY = {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.div, "max": torch.maximum,
                 "min": torch.minimum}
_TORCH_UNARY = {"neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "exp2": torch.exp2, "log": torch.log,
                "log2": torch.log2, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "tanh": torch.tanh,
                "sigmoid": torch.sigmoid}


def torch_eval(tree, leaves: dict, dtype: str) -> torch.Tensor:
    work = torch.float32 if dtype in ("bfloat16", "float32") else torch.float16

    def go(t):
        if t[0] == "c":
            return torch.tensor(t[1], dtype=work)
        if len(t) == 1:
            return leaves[t[0]].to(work)
        if t[0] in _TORCH_BINARY:
            return _TORCH_BINARY[t[0]](go(t[1]), go(t[2]))
        return _TORCH_UNARY[t[0]](go(t[1]))

    return go(tree).to(orc.TORCH[dtype])


def _leaves(dtype, d: Data, M=5, N=7):
    t = {"a": orc.make_values((M, N), dtype, d.seed, d.scale, d.p_special),
         "b": orc.make_values((M, N), dtype, d.seed + 1, d.scale, d.p_special),
         "r": orc.make_values((M, 1), dtype, d.seed + 2, d.scale, d.p_special),
         "w": orc.make_values((1, N), dtype, d.seed + 3, d.scale, d.p_special)}
    return t, {k: orc.as_float64(v) for k, v in t.items()}


@st.composite
def cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    d = Data(draw(st.integers(0, 2**31 - 1)), draw(st.sampled_from([1.0, 1e-3, 30.0, 250.0])),
             draw(st.sampled_from([0.0, 0.05, 0.3])))
    return dtype, draw(trees(dtype)), d


@settings(max_examples=300)
@given(case=cases())
def test_torch_evaluation_is_inside_the_intervals(case):
    dtype, tree, d = case
    t, f64 = _leaves(dtype, d)
    got = torch_eval(tree, t, dtype).expand(5, 7)
    iv = orc.evaluate(tree, f64, dtype)
    bad = orc.violations(got, iv)
    assert not bad.any(), f"{tree!r} {dtype} {d}\n" + orc.describe(got, iv, bad, f64)


def test_wrong_results_are_outside():
    d = Data(3, 1.0, 0.0)
    t, f64 = _leaves("float32", d)
    tree = ("+", ("a",), ("*", ("b",), ("r",)))
    good = torch_eval(tree, t, "float32")
    iv = orc.evaluate(tree, f64, "float32")
    assert not orc.violations(good, iv).any()
    # 0.1% off, a lost NaN, a NaN out of nothing: each is caught
    assert orc.violations(good * (1 + 1e-3) + 1e-6, iv).all()
    nan_tree = ("+", ("a",), ("c", float("nan")))
    assert orc.violations(good, orc.evaluate(nan_tree, f64, "float32")).all()
    assert orc.violations(torch.full_like(good, float("nan")), iv).all()


def test_signed_zero_of_abs_and_neg():
    zero = {"a": np.array([[-0.0, 0.0]])}
    iv = orc.evaluate(("abs", ("a",)), zero, "float16")
    assert not orc.violations(torch.tensor([[0.0, 0.0]]), iv).any()
    assert orc.violations(torch.tensor([[-0.0, 0.0]]), iv).tolist() == [[True, False]]  # Abs(-0.0) = +0.0
    iv = orc.evaluate(("neg", ("a",)), zero, "float32")
    assert orc.violations(torch.tensor([[-0.0, -0.0]]), iv).tolist() == [[True, False]]
