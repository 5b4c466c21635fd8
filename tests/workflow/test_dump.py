"""TL_ASCEND_DUMP=DIR: every compile leaves its TIR, the IR after each stage, the Ascend C and its
report (or its error) in a folder of its own."""

from __future__ import annotations

import os
import re
import warnings

import pytest
import tilelang.language as T

import ascend_backend
from ascend_backend.errors import UnsupportedError


def _kernel(fn="mul", N=512):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((N,), "float32")
            T.copy(A, a)
            for i in T.Parallel(N):
                a[i] = a[i] * 2.0 if fn == "mul" else T.sin(a[i])
            T.copy(a, A)

    return main


def _folders(root):
    return sorted(os.listdir(root))


def test_every_compile_dumps_its_stages_source_and_report(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_ASCEND_DUMP", str(tmp_path))
    result = ascend_backend.lower(_kernel(N=512))
    ascend_backend.lower(_kernel(N=512))  # the same kernel: the same folder
    ascend_backend.lower(_kernel(N=1024))  # another kernel named main: a folder of its own
    names = _folders(tmp_path)
    assert len(names) == 2 and all(re.fullmatch(r"main_[0-9a-f]{12}", n) for n in names), names
    folder = next(tmp_path / n for n in names if "512" in (tmp_path / n / "tir.py").read_text())
    files = sorted(os.listdir(folder))
    from ascend_backend.pipeline import STAGES

    stage_files = [f for f in files if re.fullmatch(r"\d\d_\w+\.txt", f)]
    assert [f[3:-4] for f in stage_files] == STAGES[:-1]  # every stage before codegen, in order
    assert (folder / "kernel.cpp").read_text() == result.source
    assert "T.prim_func" in (folder / "tir.py").read_text()
    report = (folder / "report.txt").read_text()
    assert "compile time per stage" in report and "memory map" in report and "sync table" in report
    assert "error.txt" not in files


def test_a_failed_compile_dumps_what_ran_and_its_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_ASCEND_DUMP", str(tmp_path))
    with pytest.raises(UnsupportedError) as info:
        ascend_backend.lower(_kernel("sin"))
    (name,) = _folders(tmp_path)
    folder = tmp_path / name
    assert (folder / "error.txt").read_text() == f"UnsupportedError: {info.value}\n"
    assert (folder / "00_frontend.txt").exists() and not (folder / "kernel.cpp").exists()


def test_dump_names_are_sanitised_and_a_bad_folder_only_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_ASCEND_DUMP", str(tmp_path / "d"))
    ascend_backend.lower(_kernel().with_attr("global_symbol", "../../evil/x"))
    assert _folders(tmp_path) == ["d"] and len(_folders(tmp_path / "d")) == 1
    (blocker := tmp_path / "file").write_text("")
    monkeypatch.setenv("TL_ASCEND_DUMP", str(blocker))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ascend_backend.lower(_kernel())  # compiles all the same
    assert any("TL_ASCEND_DUMP" in str(w.message) and "cannot write" in str(w.message) for w in caught)
