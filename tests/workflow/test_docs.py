"""The docs say what the code does: their runnable examples run, and the statements issue 29 found
untrue are checked against the code (the messages docs/errors.md calls exact, the launch wrapper
docs/cli.md describes, eager-style kernels in `tl-ascend inspect` as docs/jit.md says)."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest
import tilelang.language as T

import ascend_backend
from ascend_backend.errors import MemoryBudgetError, UnsupportedError

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RUNNABLE = ("jit.md", "usage.md")


def doc_tests(name: str) -> list[str]:
    """The ```python blocks of a doc that follow a `<!-- doc-test -->` line."""
    text = (DOCS / name).read_text()
    return re.findall(r"<!-- doc-test -->\n```python\n(.*?)```", text, re.S)


@pytest.mark.parametrize("name", RUNNABLE)
def test_doc_examples_run(name, tmp_path, capsys):
    """Each block runs as a file of its own (tilelang reads a kernel's source from its file)."""
    import runpy

    blocks = doc_tests(name)
    assert blocks, f"docs/{name} has no <!-- doc-test --> python block"
    saved = dict(os.environ)
    try:
        for n, code in enumerate(blocks):
            path = tmp_path / f"doc_{Path(name).stem}_{n}.py"
            path.write_text(code)
            runpy.run_path(str(path), run_name="__main__")
    finally:  # a block may set environment variables (TL_ASCEND_DUMP)
        for key in set(os.environ) - set(saved):
            del os.environ[key]
        os.environ.update(saved)
    assert capsys.readouterr().out  # the examples print what they show


def _norm(text: str) -> list[list[str]]:
    """A message with its file:line as kernel.py:N and its table columns compared cell by cell."""
    text = re.sub(r"\S*?([\w.]+\.py):\d+", "kernel.py:N", text)
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def _fences(text: str) -> list[str]:
    """The contents of the plain ``` blocks (no language) of a markdown text."""
    out, cur, lang = [], None, None
    for line in text.splitlines():
        if line.startswith("```"):
            if cur is None:
                cur, lang = [], line[3:].strip()
            else:
                if not lang:
                    out.append("\n".join(cur))
                cur = None
        elif cur is not None:
            cur.append(line)
    return out


def _doc_message(first_line_has: str) -> str:
    """The message block of docs/errors.md whose first line contains ``first_line_has``."""
    for block in _fences((DOCS / "errors.md").read_text()):
        if block and first_line_has in block.splitlines()[0]:
            return block
    raise AssertionError(f"docs/errors.md has no message starting {first_line_has!r}")


def _kernel(body: str):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((64,), "float32")
            T.copy(A, a)
            for i in T.Parallel(64):
                a[i] = T.sin(a[i]) if body == "sin" else a[i]
            T.copy(a, A)

    @T.prim_func
    def big(A: T.Tensor((512, 512), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((512, 512), "float32")
            T.copy(A, a)
            for i, j in T.Parallel(512, 512):
                a[i, j] = a[i, j] * 2.0
            T.copy(a, A)

    return big if body == "budget" else main


@pytest.mark.parametrize("body, cls, doc", [
    ("sin", UnsupportedError, "unsupported: function T.sin is not supported inside T.Parallel"),
    ("budget", MemoryBudgetError, "memory budget: UB needs 1048576 bytes but holds 253952 bytes on dav-3510"),
])
def test_errors_md_messages_are_exact(body, cls, doc):
    with pytest.raises(cls) as info:
        ascend_backend.lower(_kernel(body))
    assert _norm(str(info.value)) == _norm(_doc_message(doc))


def test_cli_md_launch_wrapper_signature():
    from ascend_backend.npu import host_wrapper

    prim = _kernel("id")
    program = ascend_backend.lower(prim.with_attr("global_symbol", "scale")).program
    wrapper = host_wrapper(program)
    assert f'extern "C" void launch_{program.name}(void* stream, uint32_t blocks_0, ' in wrapper
    assert f"{program.name}<<<blocks_0, nullptr, stream>>>(" in wrapper
    cli_md = (DOCS / "cli.md").read_text()
    assert 'launch_<kernel>(void* stream, uint32_t blocks_0[, uint32_t blocks_1 ...], args...)' in cli_md
    assert "<<<blocks_n, nullptr, stream>>>" in cli_md and "uint32_t block_dim" not in cli_md


def test_jit_md_eager_kernels_in_tl_ascend_inspect(tmp_path, capsys):
    from ascend_backend.cli import main

    path = tmp_path / "add.py"
    path.write_text(textwrap.dedent('''
        import tilelang.language as T
        import ascend_backend

        @ascend_backend.jit(runtime="emulator")
        def add(A, B, block_M: int = 32, block_N: int = 128):
            M, N = T.const("M, N")
            A: T.Tensor((M, N), T.float16)
            B: T.Tensor((M, N), T.float16)
            C = T.empty((M, N), T.float16)
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                a = T.alloc_shared((block_M, block_N), T.float16)
                b = T.alloc_shared((block_M, block_N), T.float16)
                T.copy(A[by * block_M, bx * block_N], a)
                T.copy(B[by * block_M, bx * block_N], b)
                for i, j in T.Parallel(block_M, block_N):
                    a[i, j] = a[i, j] + b[i, j]
                T.copy(a, C[by * block_M, bx * block_N])
            return C
    '''))
    rc = main(["inspect", str(path), "--param", "M=64", "--param", "N=256", "--stage", "frontend"])
    out = capsys.readouterr().out
    assert rc == 0 and "(ascend_backend.jit, M=64, N=256)" in out and "block_dim 4" in out
    assert "takes its `T.const` shapes from them" in (DOCS / "jit.md").read_text()
