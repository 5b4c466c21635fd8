"""tl-ascend for a TileLang user's file: `run` on random inputs against a reference, build folders
of their own per kernel, the candidate list with each failing factory's error, TL_ASCEND_DUMP.

The first test of each kind runs the installed command in a subprocess; the variants run
``ascend_backend.cli.main`` in-process (the same code after argument parsing)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ascend_backend.cli import main

TL_ASCEND = Path(sys.executable).parent / "tl-ascend"

KERNELS = '''
import tilelang.language as T


def scale(N=1024, block=256, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            a = T.alloc_fragment((block,), dtype)
            T.copy(A[bx * block], a)
            for i in T.Parallel(block):
                a[i] = a[i] * 2.0
            T.copy(a, B[bx * block])
    return main


def ref(a):
    return a * 2


def wrong(a):
    return a * 3
'''

REFS = '''
def double(a):
    return a + a
'''

CANDIDATES = '''
import tilelang.language as T


def good(N=256):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_fragment((N,), "float32")
            T.copy(A, a)
            for i in T.Parallel(N):
                a[i] = a[i] + 1.0
            T.copy(a, A)
    return main


def also_good(N=512):
    return good(N)


def broken(N=64):
    @T.prim_func
    def main(A: T.Tensor((N, 32), "float16"), B: T.Tensor((N, N), "float16"), C: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((N, 32), "float16")
            b = T.alloc_shared((N, N), "float16")
            c = T.alloc_fragment((N, N), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c)  # marker:gemm
            T.copy(c, C)
    return main
'''


def tl(*argv: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(TL_ASCEND), *argv], capture_output=True, text=True, timeout=600, cwd=str(cwd),
                          env={**os.environ, **(env or {})})


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.fixture
def files(tmp_path) -> Path:
    (tmp_path / "k.py").write_text(KERNELS)
    (tmp_path / "refs.py").write_text(REFS)
    (tmp_path / "cands.py").write_text(CANDIDATES)
    return tmp_path


def _line(src: str, marker: str) -> int:
    return next(n for n, line in enumerate(src.splitlines(), 1) if marker in line)


# ---------------------------------------------------------------------------------------------
# run on random inputs
# ---------------------------------------------------------------------------------------------
def test_run_kernel_on_random_inputs_against_a_reference(files):
    p = tl("run", "k.py", "--kernel", "scale", "--param", "N=2048", "--ref", "refs.py:double", "--seed", "3",
           "--timeline", "t.svg", cwd=files)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = p.stdout
    assert "# inputs: A random (tilelang's TensorSupplyType.Auto, seed 3); outputs: B (zeroed)" in out
    assert re.search(r"│ B\s*│ 2048\s*│ float32 │\s*0 │\s*0/2048 │ PASS", out), out
    assert out.rstrip().endswith("PASS")
    assert "timeline (modelled) written to t.svg" in out and "k.py:" in (files / "t.svg").read_text()


def test_run_variants(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    rc, out, err = cli(capsys, "run", "k.py", "--ref", "wrong")  # the one factory with defaults; FILE's wrong()
    assert rc == 1 and out.rstrip().endswith("FAIL") and re.search(r"│ B .* FAIL", out), out + err
    rc, out, err = cli(capsys, "run", "k.py", "--kernel", "scale", "--ref", "ref", "--param", "dtype=float16")
    assert rc == 0 and "float16" in out and out.rstrip().endswith("PASS"), out + err
    rc, out, err = cli(capsys, "run", "k.py")  # no reference: the emulator's checks only
    assert rc == 0 and "values were not compared" in out and "output B: 1024 float32" in out, out + err
    values = [re.search(r"values (.*)", o).group(1) for o in
              (cli(capsys, "run", "k.py", "--seed", s)[1] for s in ("7", "7", "8"))]
    assert values[0] == values[1] != values[2]  # --seed decides the inputs
    for argv, msg in ((["--ref", "refs.py:nothing"], "has no function 'nothing'"),
                      (["--ref", "no_such_module:f"], "cannot import no_such_module"),
                      (["--arg", "Q=3"], "has no symbolic dimension or scalar parameter"),
                      (["--case", "example"], "has no function 'example()'")):
        rc, _, err = cli(capsys, "run", "k.py", *argv)
        assert rc == 2 and msg in err, (argv, err)
    rc, _, err = cli(capsys, "run", "k.py", "--ref", "refs.py:double", "--param", "N=256", "--kernel", "scale",
                     "--atol", "0", "--rtol", "0")
    assert rc == 0, err


def test_run_kernel_with_a_symbolic_dimension(tmp_path, capsys, monkeypatch):
    (tmp_path / "dyn.py").write_text(textwrap.dedent('''
        import tilelang.language as T

        def dyn(block=128):
            N = T.dynamic("N")

            @T.prim_func
            def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
                with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
                    a = T.alloc_fragment((block,), "float32")
                    T.copy(A[bx * block], a)
                    for i in T.Parallel(block):
                        a[i] = a[i] * 2.0
                    T.copy(a, B[bx * block])
            return main

        def ref(a):
            return 2 * a
    '''))
    monkeypatch.chdir(tmp_path)
    rc, _, err = cli(capsys, "run", "dyn.py", "--kernel", "dyn")
    assert rc == 2 and "--arg N=VALUE" in err, err
    rc, out, err = cli(capsys, "run", "dyn.py", "--kernel", "dyn", "--arg", "N=300", "--ref", "ref")
    assert rc == 0 and "300" in out and out.rstrip().endswith("PASS"), out + err


# ---------------------------------------------------------------------------------------------
# build folders and the candidate list
# ---------------------------------------------------------------------------------------------
def test_build_folders_are_unique_per_kernel(files, capsys, monkeypatch):
    p = tl("build", "cands.py", "--kernel", "good", cwd=files)
    assert p.returncode == 0, p.stderr[-3000:]
    first = re.search(r"wrote (\S+)", p.stdout).group(1)
    assert re.fullmatch(r"build/main_[0-9a-f]{12}/main\.cpp", first), first
    monkeypatch.chdir(files)
    again = re.search(r"wrote (\S+)", cli(capsys, "build", "cands.py", "--kernel", "good")[1]).group(1)
    other = re.search(r"wrote (\S+)", cli(capsys, "build", "cands.py", "--kernel", "also_good")[1]).group(1)
    c220 = re.search(r"wrote (\S+)", cli(capsys, "build", "cands.py", "--kernel", "good", "--arch", "dav-c220")[1])
    assert again == first  # the same kernel: its own folder again
    assert len({first, other, c220.group(1)}) == 3  # another kernel named main, another arch: other folders
    assert sorted(os.listdir(files / "build")) == sorted(Path(x).parent.name for x in (first, other, c220.group(1)))


def test_candidate_list_shows_the_error_of_a_failing_factory(files, capsys, monkeypatch):
    line = _line(CANDIDATES, "marker:gemm")
    p = tl("inspect", "cands.py", cwd=files)
    assert p.returncode == 2, p.stderr
    err = p.stderr
    assert "defines 2 kernels" in err and "good(N=256)" in err and "also_good(N=512)" in err
    assert "and 1 that failed:" in err and "broken(N=64)" in err
    assert re.search(rf"failed: \S*cands.py:{line}: shape: T.gemm: the K of A is 32 but the K of B is 64", err), err
    assert "hint:" in err  # the whole error, its hint included
    monkeypatch.chdir(files)
    (files / "one.py").write_text(CANDIDATES.replace("def also_good(N=512):\n    return good(N)\n", ""))
    rc, out, err = cli(capsys, "inspect", "one.py", "--source")
    assert rc == 0 and "note: using good" in err and "T.gemm" in err, err
    (files / "none.py").write_text(CANDIDATES.split("def good")[0] + "def broken" + CANDIDATES.split("def broken")[1]
                                   + "\n\ndef needs(M, N):\n    return None\n")
    rc, _, err = cli(capsys, "inspect", "none.py")
    assert rc == 2 and "no kernel found" in err and "T.gemm" in err
    assert "not tried: takes M, N without defaults (give them with --param M=... --param N=..." in err, err


# ---------------------------------------------------------------------------------------------
# TL_ASCEND_DUMP
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_dump_env_through_the_command(files):
    dump = files / "dumps"
    p = tl("inspect", "cands.py", "--kernel", "good", "--stage", "frontend", cwd=files,
           env={"TL_ASCEND_DUMP": str(dump)})
    assert p.returncode == 0, p.stderr[-2000:]
    (folder,) = dump.iterdir()
    assert re.fullmatch(r"main_[0-9a-f]{12}", folder.name)
    names = sorted(f.name for f in folder.iterdir())
    assert {"tir.py", "00_frontend.txt", "kernel.cpp", "report.txt"} <= set(names), names
    assert any(n.endswith("_insert_sync.txt") for n in names), names
