"""tl-ascend never prints a traceback: every bad input a new user tries gives one clear message and
the documented exit code (issue 13 item 6; docs/cli.md, "Errors and exit codes")."""

from __future__ import annotations

import os
import textwrap

import pytest

from ascend_backend.cli import EXIT_INTERNAL, EXIT_USAGE, main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ELEMENTWISE = os.path.join(ROOT, "examples", "elementwise.py")

KERNEL = """
import tilelang.language as T
import torch
from ascend_backend.testing import Case


def add(M=64, N=128, block_M=32):
    @T.prim_func
    def k(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            a = T.alloc_shared((block_M, N), "float16")
            b = T.alloc_shared((block_M, N), "float16")
            T.copy(A[bx * block_M, 0], a)
            T.copy(B[bx * block_M, 0], b)
            for i, j in T.Parallel(block_M, N):
                a[i, j] = a[i, j] + b[i, j]
            T.copy(a, C[bx * block_M, 0])
    return k
"""


def case_file(tmp_path, body: str, name: str = "kern.py") -> str:
    p = tmp_path / name
    p.write_text(KERNEL + textwrap.dedent(body))
    return str(p)


def line_in(path: str, marker: str) -> int:
    with open(path) as f:
        for n, text in enumerate(f, start=1):
            if marker in text:
                return n
    raise AssertionError(marker)


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    assert "make_closure" not in cap.out + cap.err and "__tb" not in cap.out + cap.err  # tilelang's builder dump
    return rc, cap.out, cap.err


GOOD_EXAMPLE = """
def example():
    a = torch.randn(64, 128, dtype=torch.float16)
    return Case(func=add(), inputs=[a, a.clone(), torch.empty_like(a)], outputs=[2],
                reference=lambda a, b, c: [a + b])
"""


def test_reference_that_raises(tmp_path, capsys):
    path = case_file(tmp_path, """
        def ref(a, b, c):
            raise ValueError("my reference is broken")  # marker

        def example():
            a = torch.randn(64, 128, dtype=torch.float16)
            return Case(func=add(), inputs=[a, a.clone(), torch.empty_like(a)], outputs=[2], reference=ref)
    """)
    rc, _, err = cli(capsys, "run", path)
    assert rc == EXIT_USAGE
    assert err.strip() == (f"error: the reference of example() raised at {path}:{line_in(path, '# marker')}: "
                           "ValueError: my reference is broken")


@pytest.mark.parametrize("body, message", [
    ("inputs=[torch.zeros(32, 128, dtype=torch.float16), a, torch.empty_like(a)], outputs=[2]",
     "error: the inputs of example() do not fit kernel 'k': argument 'A' of kernel 'k' must have shape [64, 128] "
     "and dtype float16; got shape [32, 128]"),
    ("inputs=[a, a], outputs=[2]",
     "error: example() returned a Case whose inputs has 2 values, but the kernel takes 3 (A, B, C)"),
    ("inputs=[a, a, torch.empty_like(a)], outputs=[5]",
     "error: example() returned a Case whose outputs names argument 5, but the kernel takes 3 arguments"),
    ("inputs=[a, a, 3], outputs=[2]", "error: example() returned a Case whose output 2 is not a tensor (it is int)"),
])
def test_case_that_does_not_fit_its_kernel(tmp_path, capsys, body, message):
    path = case_file(tmp_path, f"""
        def example():
            a = torch.randn(64, 128, dtype=torch.float16)
            return Case(func=add(), {body}, reference=lambda *args: [args[0]])
    """)
    rc, _, err = cli(capsys, "run", path)
    assert rc == EXIT_USAGE
    assert err.startswith(message), err
    assert len(err.strip().splitlines()) == 1


def test_case_func_that_is_the_factory(tmp_path, capsys):
    path = case_file(tmp_path, GOOD_EXAMPLE.replace("func=add()", "func=add"))
    rc, _, err = cli(capsys, "run", path)
    assert rc == EXIT_USAGE
    assert "func is function, not a PrimFunc" in err and "Case(func=make_kernel(...)" in err


@pytest.mark.parametrize("where", ["missing-dir/t.svg", "."])
def test_unwritable_timeline_fails_before_the_run(tmp_path, capsys, where):
    path = case_file(tmp_path, GOOD_EXAMPLE)
    target = str(tmp_path / where)
    rc, out, err = cli(capsys, "run", path, "--timeline", target)
    assert rc == EXIT_USAGE
    assert err.startswith(f"error: --timeline {target}: ") and len(err.strip().splitlines()) == 1
    assert "# running" not in out  # nothing was compiled or run


def test_param_of_the_wrong_type(capsys):
    rc, _, err = cli(capsys, "inspect", ELEMENTWISE, "--kernel", "add_2d", "--param", "M=abc")
    assert rc == EXIT_USAGE
    assert err.strip() == ("error: --param M='abc': add_2d's M takes int values (its default is 256); "
                           "write an integer such as 512")


def test_param_that_divides_by_zero_names_the_kernel_line(capsys):
    rc, _, err = cli(capsys, "inspect", ELEMENTWISE, "--kernel", "add_2d", "--param", "block_M=0")
    assert rc == EXIT_USAGE
    line = line_in(ELEMENTWISE, "with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)")
    assert err.startswith(f"{ELEMENTWISE}:{line}: error: division by zero")
    assert "hint: a divisor on this line is 0" in err


def test_top_level_kernel_with_a_gemm_mismatch(tmp_path, capsys):
    p = tmp_path / "top.py"
    p.write_text(textwrap.dedent("""
        import tilelang.language as T

        @T.prim_func
        def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=128) as _:
                a = T.alloc_shared((64, 32), "float16")
                b = T.alloc_shared((64, 64), "float16")
                c = T.alloc_fragment((64, 64), "float32")
                T.copy(A[0, 0], a)
                T.copy(B[0, 0], b)
                T.gemm(a, b, c)  # marker
                T.copy(c, C[0, 0])
    """))
    rc, _, err = cli(capsys, "inspect", str(p))
    assert rc == EXIT_USAGE
    assert err.startswith(f"{p}:{line_in(str(p), '# marker')}: shape: T.gemm: the K of A is 32 but the K of B is 64")
    assert "hint: T.gemm(A, B, C) computes" in err


def test_failing_candidate_is_listed_when_none_qualifies(tmp_path, capsys):
    path = case_file(tmp_path, "")
    rc, _, err = cli(capsys, "inspect", path, "--param", "block_M=0")
    assert rc == EXIT_USAGE
    assert "no kernel found" in err and "failed: " in err and "division by zero" in err


def test_syntax_error_in_one_line(tmp_path, capsys):
    p = tmp_path / "bad.py"
    p.write_text("def f(:\n    pass\n")
    rc, _, err = cli(capsys, "inspect", str(p))
    assert rc == EXIT_USAGE
    assert err.strip() == f"error: cannot import {p}: {p}:1: SyntaxError: invalid syntax"


def test_unwritable_build_directory(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    rc, _, err = cli(capsys, "build", ELEMENTWISE, "--kernel", "add_2d", "--out", str(blocker / "sub"))
    assert rc == EXIT_USAGE
    assert err.startswith(f"error: --out {blocker / 'sub'}: cannot write") and "hint: give a writable directory" in err


def test_a_bug_in_the_cli_itself_is_one_line_exit_3(monkeypatch, capsys):
    import ascend_backend.cli as cli_mod

    def boom(*args, **kwargs):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(cli_mod, "_compile", boom)
    rc, _, err = cli(capsys, "inspect", ELEMENTWISE)
    assert rc == EXIT_INTERNAL
    assert err.startswith("tl-ascend: internal error at ") and "RuntimeError: unexpected" in err
    assert "This is a bug in tl-ascend" in err


def test_case_with_a_bad_tolerance(tmp_path, capsys):
    path = case_file(tmp_path, GOOD_EXAMPLE.replace("outputs=[2],", "outputs=[2], atol='tight',"))
    rc, _, err = cli(capsys, "run", path)
    assert rc == EXIT_USAGE
    assert err.strip() == "error: example() returned a Case whose atol is 'tight': give a number >= 0 (e.g. atol=1e-2)"
