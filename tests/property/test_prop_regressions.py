"""Every failure the property tier found, as a plain test with its example (tests/property/*.py
print the ``check_*(...)`` line of a failing example; paste it here with what it found)."""

import pytest
from prop_kernels import Data, check_elementwise, check_reduce, elementwise_kernel

ARCHES = ["dav-3510", "dav-c220"]


# -- TVM's constant folding (docs/errors.md, "What TVM folds before the compiler sees the kernel") --
def _stored_value(tree) -> str:
    """The right-hand side of the T.Parallel store, as the built PrimFunc holds it."""
    script = elementwise_kernel(tree, "float32", 1, 8, 1, 8).script()
    return next(ln for ln in script.splitlines() if "c_t[i, j] =" in ln).split("=", 1)[1].strip()


@pytest.mark.parametrize("tree, folded", [
    # found as sigmoid(-(0.0 / b)) and sigmoid(b * -0.0) giving 0.5 for b = NaN (expected NaN)
    (("*", ("b",), ("c", -0.0)), "T.float32(-0.0)"),
    (("*", ("c", 0.0), ("b",)), "T.float32(0.0)"),
    (("/", ("c", 0.0), ("b",)), "T.float32(0.0)"),
    (("+", ("b",), ("c", 0.0)), "b_t[i, j]"),
])
def test_tvm_folds_zero_constants_before_we_see_them(tree, folded):
    """Pinned (docs/errors.md has the table): the kernel computes what TVM left, so a kernel that
    multiplies a NaN by 0.0 stores 0.0 on every backend."""
    assert _stored_value(tree) == folded


def test_exact_folds_stay_exact():
    assert _stored_value(("*", ("b",), ("c", 1.0))) == "b_t[i, j]"
    assert _stored_value(("-", ("c", 0.0), ("b",))) == "T.float32(0.0) - b_t[i, j]"


# -- numerical examples (each compiles one kernel and runs it on the emulator) ----------------------
@pytest.mark.parametrize("arch", ARCHES)
def test_exp2_of_large_arguments(arch):
    """exp2(x) is e^(x ln 2): its error grows with |x| (found at a = 27.1: 10 ulps in float32);
    the documented composition, not a bug, now in the oracle and docs/supported.md."""
    check_elementwise(("/", ("w",), ("+", ("-", ("c", -1.5), ("*", ("w",), ("w",))), ("exp2", ("a",)))),
                      "float32", arch, 8, 6, 16, 8, [Data(seed=4940397, scale=30.0, p_special=0.3)])


@pytest.mark.parametrize("arch", ARCHES)
def test_float16_log_argument_promoted_to_float32_by_tilelang(arch):
    """Found as log(a + 100.0) = 11.09 for a = 65504 in float16 (an oracle of per-operation float16
    rounding expected log(inf) = inf): tilelang builds it as Cast("float16", log(Cast("float32", a)
    + 100f)), so the sum does not overflow. The oracle now evaluates the TIR as built."""
    from prop_kernels import stored_value

    tree = ("log", ("+", ("a",), ("c", 100.0)))
    built = str(stored_value(elementwise_kernel(tree, "float16", 1, 16, 1, 16)))
    assert built == 'T.Cast("float16", T.log(T.Cast("float32", a_t[i, j]) + T.float32(100.0)))'
    check_elementwise(tree, "float16", arch, 1, 33, 1, 16, [Data(seed=441765673, scale=1.0, p_special=0.05)])


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_signed_zeros_and_specials_through_abs_and_neg(arch, dtype):
    """Abs(-0.0) = +0.0 and -(+0.0) = -0.0, NaN and +-Inf kept (the issue's fuzzer found Abs(-0.0)
    wrong in the emulator): every input a special value."""
    check_elementwise(("-", ("abs", ("a",)), ("neg", ("b",))), dtype, arch, 5, 40, 4, 16,
                      [Data(seed=11, scale=1.0, p_special=1.0)])


@pytest.mark.parametrize("arch", ARCHES)
def test_streamed_sum_with_column_tail_and_specials(arch):
    check_reduce("sum", "float16", arch, 7, 150, 4, 64, False, [Data(seed=5, scale=300.0, p_special=0.2)])



def test_bf16_adds_round_per_instruction_on_dav_3510():
    """r + (a - r) in bfloat16: on dav-3510 both adds are bfloat16 instructions, each rounding
    (issue 14's native bf16); an oracle that widened bfloat16 to float32 there rejected the
    kernel's exact per-instruction result (found by the elementwise tier when the compiler began
    computing bfloat16 natively). The oracle now follows docs/supported.md's rule per arch."""
    check_elementwise(("+", ("r",), ("+", ("a",), ("neg", ("r",)))), "bfloat16", "dav-3510", 1, 2, 1, 8,
                      [Data(seed=0, scale=1.0, p_special=0.0)])
