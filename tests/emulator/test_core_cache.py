"""Compile cache: reuse, integrity (never a stale, partial or foreign binary), compile errors."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import torch
from conftest import HEADER, line_of

from ascend_backend.emulator import EmulatorCompileError, cache, run_source
from ascend_backend.emulator.runner import full_source

SRC = HEADER + r"""
extern "C" __global__ __aicore__ void fill(GM_ADDR out, float v) {
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out, 8);
    go.SetValue(GetBlockIdx(), v + VARIANT);
}
"""


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty cache dir seeded with the runtime library, so only kernels compile."""
    d = tmp_path / "emulator"
    d.mkdir()
    for arch in ("dav-3510", "dav-c220"):
        rt = cache.runtime_lib(arch)
        shutil.copy(rt, d / rt.name)
        shutil.copy(rt.with_suffix(".meta"), d / rt.with_suffix(".meta").name)
        pch = cache.pch_dir(arch)
        if pch is not None:
            (d / pch.name).symlink_to(pch)
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path))
    return d


def _run(variant: str) -> tuple[bool, torch.Tensor]:
    out = torch.zeros(8)
    rep = run_source(SRC.replace("VARIANT", variant), "fill", [out, 1.5], 2)
    return rep.compiled, out


def _kernels(d: Path) -> list[Path]:
    return sorted(d.glob("k_*.so"))


def test_second_run_does_not_compile(fresh_cache):
    before = cache.stats["kernel_compiles"]
    compiled, out = _run("0")
    assert compiled and cache.stats["kernel_compiles"] == before + 1
    compiled, out = _run("0")
    assert not compiled and cache.stats["kernel_compiles"] == before + 1
    assert out[:2].tolist() == [1.5, 1.5]
    assert len(_kernels(fresh_cache)) == 1


def test_truncated_binary_is_rebuilt(fresh_cache):
    _run("1")
    (so,) = _kernels(fresh_cache)
    data = so.read_bytes()
    so.write_bytes(data[: len(data) // 2])  # partial file, meta still claims the full one
    compiled, out = _run("1")
    assert compiled and out[0] == 2.5
    assert so.read_bytes() == data or so.stat().st_size > len(data) // 2


def test_missing_meta_means_rebuild(fresh_cache):
    _run("2")
    (so,) = _kernels(fresh_cache)
    so.with_suffix(".meta").unlink()
    compiled, out = _run("2")
    assert compiled and out[0] == 3.5


def test_forged_binary_is_never_loaded(fresh_cache):
    _run("3")
    (so,) = _kernels(fresh_cache)
    so.write_bytes(b"\x7fELF garbage that would crash dlopen")
    compiled, out = _run("3")
    assert compiled and out[0] == 4.5


def test_leftover_temp_files_are_ignored(fresh_cache):
    # a crash mid-compile leaves a temp dir with a partial binary and no published file
    tmp = fresh_cache / ".k-crashed"
    tmp.mkdir()
    (tmp / "k.so").write_bytes(b"partial")
    compiled, out = _run("4")
    assert compiled and out[0] == 5.5


def test_compile_error_names_the_kernel_line():
    src = SRC.replace("VARIANT", "0").replace("go.SetValue(GetBlockIdx(), v + 0);",
                                                 "go.SetValue(GetBlockIdx(), v + undefined_name);")
    with pytest.raises(EmulatorCompileError) as ei:
        run_source(src, "fill", [torch.zeros(8), 1.0], 1)
    e = ei.value
    line = line_of(src, "undefined_name")
    assert e.line == line and "undefined_name" in e.source_line
    assert "undefined_name" in str(e) and f"kernel line {line}" in str(e)


def test_cache_key_includes_arch(fresh_cache):
    _run("5")
    out = torch.zeros(8)
    rep = run_source(SRC.replace("VARIANT", "5"), "fill", [out, 1.0], 1, arch="dav-c220")
    assert rep.compiled and rep.arch == "dav-c220"
    assert len(_kernels(fresh_cache)) == 2


def test_entry_names_its_key(fresh_cache):
    _run("6")
    (so,) = _kernels(fresh_cache)
    meta = json.loads(so.with_suffix(".meta").read_text())
    assert meta["kind"] == "kernel" and meta["key"] == so.stem
    assert meta["sha256"] == hashlib.sha256(so.read_bytes()).hexdigest()
    ident = meta["id"]
    assert ident["arch"] == "dav-3510" and ident["runtime"].startswith("libemu_dav_3510_")
    assert ident["source_sha256"] == hashlib.sha256(full_source(SRC.replace("VARIANT", "6")).encode()).hexdigest()
    assert f"tl-ascend-cache-id:{so.stem}".encode() in so.read_bytes()  # the binary names its key too
    rt = next(fresh_cache.glob("libemu_dav_3510_*.so"))
    assert f"tl-ascend-cache-id:{rt.stem}".encode() in rt.read_bytes()


def test_valid_entry_of_another_kernel_copied_under_a_key_is_rebuilt(fresh_cache):
    _run("7")
    (a,) = _kernels(fresh_cache)
    _run("8")
    (b,) = [k for k in _kernels(fresh_cache) if k != a]
    # 1. the whole entry of kernel "7" (binary and meta) copied under the key of kernel "8"
    shutil.copy(a, b)
    shutil.copy(a.with_suffix(".meta"), b.with_suffix(".meta"))
    compiled, out = _run("8")
    assert compiled and out[0] == 9.5  # kernel "8" (1.5 + 8), not "7" (8.5)
    # 2. kernel "7"'s binary under "8", with a meta forged to name key "8" and the copied binary's
    #    hash: the binary itself names key "7"
    shutil.copy(a, b)
    meta = json.loads(b.with_suffix(".meta").read_text())
    meta["sha256"] = hashlib.sha256(a.read_bytes()).hexdigest()
    b.with_suffix(".meta").write_text(json.dumps(meta))
    compiled, out = _run("8")
    assert compiled and out[0] == 9.5
    compiled, out = _run("8")
    assert not compiled and out[0] == 9.5
