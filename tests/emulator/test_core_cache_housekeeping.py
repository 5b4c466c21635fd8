"""Build cache housekeeping and environment faults: orphaned temps, the size cap (LRU), the
`tl-ascend cache` command, and one-line errors for a missing compiler, a cache path that is a
file, a read-only cache directory and a full disk."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from test_core_cache import SRC, fresh_cache  # noqa: F401 - fixture

from ascend_backend import buildcache
from ascend_backend.cli import main
from ascend_backend.emulator import EmulatorEnvironmentError, cache, run_source

HOUR = 3600.0


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _age(p: Path, seconds: float) -> None:
    t = time.time() - seconds
    for q in [*p.rglob("*"), p] if p.is_dir() else [p]:
        os.utime(q, (t, t), follow_symlinks=False)


def _fake_kernel(d: Path, key: str, size: int, idle_s: float) -> Path:
    """A published-looking kernel entry of `size` bytes last used `idle_s` ago."""
    so = d / f"k_{key}.so"
    so.write_bytes(b"\0" * size)
    meta = so.with_suffix(".meta")
    meta.write_text(json.dumps({"format": buildcache.META_FORMAT, "kind": "kernel", "key": so.stem}))
    _age(so, idle_s)
    _age(meta, idle_s)
    return so


def _one_line(e: BaseException) -> str:
    text = str(e)
    assert "\n" not in text and text.startswith("error: "), text
    assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__), "chained traceback"
    return text


def _run_fill(**kw) -> torch.Tensor:
    out = torch.zeros(8)
    run_source(SRC.replace("VARIANT", "9"), "fill", [out, 1.0], 1, **kw)
    return out


# ---------------------------------------------------------------------------------------------
# environment faults
# ---------------------------------------------------------------------------------------------
def test_missing_compiler_on_a_fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TL_ASCEND_CXX", "/nonexistent/g++")
    with pytest.raises(EmulatorEnvironmentError) as ei:
        _run_fill()
    msg = _one_line(ei.value)
    assert "/nonexistent/g++" in msg and "TL_ASCEND_CXX" in msg and "install g++" in msg


def test_cache_path_that_is_a_file(tmp_path, monkeypatch):
    f = tmp_path / "cachefile"
    f.write_text("not a directory")
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(f))
    with pytest.raises(EmulatorEnvironmentError) as ei:
        _run_fill()
    msg = _one_line(ei.value)
    assert str(f) in msg and "is a file" in msg and "TL_ASCEND_CACHE_DIR" in msg


def test_read_only_cache_dir_by_chmod(tmp_path, monkeypatch):
    d = tmp_path / "ro"
    (d / "emulator").mkdir(parents=True)
    (d / "emulator").chmod(0o555)
    try:
        probe = d / "emulator" / "probe"
        try:
            probe.write_text("x")
        except PermissionError:
            pass
        else:
            pytest.skip("chmod does not deny writes here (running as root); "
                        "test_read_only_or_full_cache_dir_simulated covers the error path")
        monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(d))
        with pytest.raises(EmulatorEnvironmentError) as ei:
            _run_fill()
        assert "not writable" in _one_line(ei.value)
    finally:
        (d / "emulator").chmod(0o755)


@pytest.mark.parametrize("err,words", [(errno.EROFS, "not writable"), (errno.EACCES, "not writable"),
                                       (errno.ENOSPC, "no space left")])
def test_read_only_or_full_cache_dir_simulated(tmp_path, monkeypatch, err, words):
    # the first write of a build (its temporary directory) fails as a read-only / full file system would
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path))

    def refuse(*a, **k):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(cache.tempfile, "mkdtemp", refuse)
    with pytest.raises(EmulatorEnvironmentError) as ei:
        _run_fill()
    msg = _one_line(ei.value)
    assert words in msg and str(tmp_path) in msg and "TL_ASCEND_CACHE_DIR" in msg


def test_compiler_out_of_disk_space(tmp_path, monkeypatch):
    fake = tmp_path / "fake-g++"
    fake.write_text("#!/bin/sh\necho 'cc1plus: fatal error: error writing to /tmp/cc0.s: No space left on device' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("TL_ASCEND_CXX", str(fake))
    with pytest.raises(EmulatorEnvironmentError) as ei:
        _run_fill()
    assert "ran out of disk space" in _one_line(ei.value)


def test_bad_cap_setting_is_one_line(monkeypatch):
    monkeypatch.setenv("TL_ASCEND_CACHE_MAX_MB", "lots")
    with pytest.raises(buildcache.BuildEnvironmentError) as ei:
        buildcache.max_bytes_from_env()
    assert "TL_ASCEND_CACHE_MAX_MB" in _one_line(ei.value)


# ---------------------------------------------------------------------------------------------
# orphans and the size cap
# ---------------------------------------------------------------------------------------------
def test_orphaned_temps_are_removed_live_ones_kept(tmp_path):
    d = tmp_path / "emulator"
    d.mkdir()
    dead, live = _dead_pid(), os.getpid()
    killed = d / f".k-{dead}-abc"          # a killed kernel build
    killed.mkdir()
    (killed / "k.so").write_bytes(b"\0" * 1000)
    pch = d / "pch_dav_3510_x_y"           # a killed precompiled-header build inside its directory
    pch.mkdir()
    gch_tmp = pch / f".tmp-{dead}-kernel_operator.h.gch"
    gch_tmp.write_bytes(b"\0" * 4096)
    legacy = d / ".k-crashed"              # an old temp without a pid: by age
    legacy.mkdir()
    running = d / f".build-{live}-xyz"     # this process's build in progress
    running.mkdir()
    fresh_dead = d / f".meta-{dead}-q"      # a dead process's temp, but just made: not yet an orphan
    fresh_dead.write_text("{}")
    for p in (killed, gch_tmp, running):
        _age(p, 2 * buildcache.ORPHAN_DEAD_PID_AGE_S)
    _age(legacy, buildcache.ORPHAN_MAX_AGE_S + HOUR)
    info = buildcache.info(tmp_path)
    assert info["orphans"] == 3 and info["in_progress"] == 2
    res = buildcache.prune(tmp_path)
    assert {e.paths[0] for e in res.removed} == {killed, gch_tmp, legacy}
    assert res.freed >= 5096
    assert running.exists() and fresh_dead.exists() and pch.exists() and not gch_tmp.exists()


def test_prune_to_a_cap_removes_least_recently_used(tmp_path):
    d = tmp_path / "emulator"
    d.mkdir()
    mb = 2**20
    ks = [_fake_kernel(d, f"{i:032x}", mb, idle_s=1000 * (5 - i)) for i in range(5)]  # k0 oldest
    rt = d / "libemu_dav_3510_cafe.so"
    rt.write_bytes(b"\0" * mb)
    rt.with_suffix(".meta").write_text("{}")
    _age(rt, 10 * HOUR)
    _age(rt.with_suffix(".meta"), 10 * HOUR)

    def protect(e):
        return e.kind == "runtime"

    res = buildcache.prune(tmp_path, max_bytes=int(3.5 * mb), protect=protect)
    assert [e.name for e in res.removed] == [f"emulator/{k.stem}" for k in ks[:3]]
    assert res.total <= 3.5 * mb and rt.exists() and all(k.exists() for k in ks[3:])
    assert not ks[0].with_suffix(".meta").exists()
    # entries used recently are kept by a prune with a minimum idle time (the automatic one)
    res = buildcache.prune(tmp_path, max_bytes=0, min_idle_s=1500, protect=protect)
    assert [e.name for e in res.removed] == [f"emulator/{ks[3].stem}"]
    # an explicit size may also remove the protected entries, last
    res = buildcache.prune(tmp_path, max_bytes=0, keep_protected=False, protect=protect)
    assert [e.kind for e in res.removed] == ["kernel", "runtime"] and res.total == 0


def test_cache_stays_under_its_cap_after_a_build(fresh_cache, monkeypatch):  # noqa: F811
    stale = [_fake_kernel(fresh_cache, f"{i:032x}", 2**20, idle_s=HOUR) for i in range(3)]
    dead = fresh_cache / f".k-{_dead_pid()}-zz"
    dead.mkdir()
    _age(dead, HOUR)
    monkeypatch.setenv("TL_ASCEND_CACHE_MAX_MB", "1")
    out = _run_fill()
    assert out[0] == 10.0
    assert not any(s.exists() for s in stale) and not dead.exists()
    kernels = list(fresh_cache.glob("k_*.so"))
    assert len(kernels) == 1  # the kernel just built (used now) stays, and so does the runtime
    assert list(fresh_cache.glob("libemu_*.so"))


# ---------------------------------------------------------------------------------------------
# tl-ascend cache info | prune
# ---------------------------------------------------------------------------------------------
def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_cli_cache_info_and_prune(tmp_path, monkeypatch, capsys):
    tmp_path = tmp_path / "cache"
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TL_ASCEND_CACHE_MAX_MB", "64")
    rc, out, err = _cli(capsys, "cache", "info")
    assert rc == 0 and "does not exist yet" in out and "of a 64.0 MB cap (TL_ASCEND_CACHE_MAX_MB)" in out
    d = tmp_path / "emulator"
    d.mkdir(parents=True)
    for i in range(4):
        _fake_kernel(d, f"{i:032x}", 2**20, idle_s=100 * (4 - i))
    npu = tmp_path / "npu"
    npu.mkdir()
    (npu / "gemm-0123456789abcdef.so").write_bytes(b"\0" * 2**19)
    orphan = d / f".k-{_dead_pid()}-o"
    orphan.write_bytes(b"\0" * 100)
    _age(orphan, HOUR)
    rc, out, err = _cli(capsys, "cache", "info")
    assert rc == 0 and err == ""
    assert str(tmp_path) in out and "4.5 MB of a 64.0 MB cap" in out
    rows = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines() if ln and ln.split()[0] in
            ("kernel", "runtime", "pch", "npu", "temp")}
    assert rows["kernel"] == ["4", "4.0", "MB"] and rows["npu"] == ["1", "0.5", "MB"] and rows["temp"][0] == "1"
    assert "1 orphaned" in out
    rc, out, err = _cli(capsys, "cache", "prune", "--max-size", "2.6M")  # 2 x 1 MB + 0.5 MB + metas
    assert rc == 0 and "removed 2 kernel, 1 temp" in out and "now holds 2.5 MB" in out
    assert not orphan.exists() and len(list(d.glob("k_*.so"))) == 2
    rc, out, err = _cli(capsys, "cache", "prune", "--all")
    assert rc == 0 and "removed 2 kernel, 1 npu" in out and "now holds 0.0 MB" in out
    assert not list(d.glob("k_*")) and not list(npu.iterdir())
    rc, out, err = _cli(capsys, "cache", "prune")  # default: to the cap; nothing left to do
    assert rc == 0 and "removed nothing" in out


def test_cli_cache_errors(tmp_path, monkeypatch, capsys):
    rc, out, err = _cli(capsys, "cache", "prune", "--max-size", "big")
    assert rc == 2 and "--max-size" in err and "500M" in err
    rc, out, err = _cli(capsys, "cache", "prune", "--all", "--max-size", "1G")
    assert rc == 2 and "not allowed with" in err
    rc, out, err = _cli(capsys, "cache")
    assert rc == 2 and "ACTION" in err
    f = tmp_path / "file"
    f.write_text("")
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(f))
    for argv in (["cache", "info"], ["cache", "prune"]):
        rc, out, err = _cli(capsys, *argv)
        assert rc == 2 and err.count("\n") == 1 and "is a file" in err and "Traceback" not in err, err


def test_cli_prune_of_a_read_only_cache_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path))
    d = tmp_path / "emulator"
    d.mkdir()
    _fake_kernel(d, "0" * 32, 100, idle_s=HOUR)

    def refuse(*a, **k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(buildcache, "remove", refuse)
    rc, out, err = _cli(capsys, "cache", "prune", "--all")
    assert rc == 2 and err.count("\n") == 1 and "not writable" in err and "Traceback" not in err


def test_cli_run_without_a_compiler_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TL_ASCEND_CXX", "/nonexistent/g++")
    example = Path(__file__).resolve().parents[2] / "examples" / "elementwise.py"
    rc, out, err = _cli(capsys, "run", str(example))
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "/nonexistent/g++" in err and "TL_ASCEND_CXX" in err
