"""tl-ascend starts fast (--help and --version never import tilelang or torch) and says what it
is doing while the emulator's runtime is built the first time."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ascend_backend import buildcache, cli_parser, pipeline
from ascend_backend.emulator import cache
from ascend_backend.status import build_status

ROOT = Path(__file__).resolve().parents[2]
TL_ASCEND = Path(sys.executable).parent / "tl-ascend"


def _installed_launcher() -> bool:
    """The venv's tl-ascend script imports the tl_ascend launcher (pip writes the entry point into it;
    an install made before the launcher existed imports ascend_backend.cli)."""
    try:
        return "from tl_ascend import main" in TL_ASCEND.read_text()
    except OSError:
        return False


needs_launcher = pytest.mark.skipif(
    not _installed_launcher(),
    reason="the installed tl-ascend predates the tl_ascend launcher: run `pip install -e .` again")


def test_parser_facts_agree_with_the_package():
    assert cli_parser.STAGES == pipeline.STAGES
    assert cli_parser.DEFAULT_MAX_MB == buildcache.DEFAULT_MAX_MB
    import ascend_backend

    assert cli_parser.version() == ascend_backend.__version__


@needs_launcher
@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["inspect", "--help"], ["run", "--help"], []])
def test_help_and_version_import_neither_tilelang_nor_torch(argv):
    """The installed command, run with -X importtime: the modules it imported, and how long it took
    (the wall clock is printed, not asserted: the machine is shared; benchmarks/ has no target)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-X", "importtime", str(TL_ASCEND), *argv], capture_output=True,
                          text=True, timeout=60, cwd=str(ROOT / "examples"))
    wall = time.perf_counter() - t0
    assert proc.returncode == (2 if not argv else 0), proc.stderr[-2000:]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "argparse" in imported, proc.stderr[-2000:]  # the -X importtime lines were read
    heavy = imported & {"tilelang", "torch", "tvm", "ascend_backend", "rich", "jinja2", "numpy"}
    assert not heavy, f"tl-ascend {' '.join(argv)} imported {sorted(heavy)}"
    out = proc.stdout
    if argv == ["--version"]:
        import ascend_backend

        assert out.strip() == f"tl-ascend {ascend_backend.__version__}"
    elif argv:
        assert "usage: tl-ascend" in out
    print(f"tl-ascend {' '.join(argv)}: {wall:.2f} s")


@needs_launcher
def test_a_command_still_runs_through_the_launcher():
    proc = subprocess.run([str(TL_ASCEND), "inspect", str(ROOT / "examples" / "elementwise.py"), "--stage",
                           "frontend"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "==== frontend IR ====" in proc.stdout


# ---------------------------------------------------------------------------------------------
# The status line of a first build
# ---------------------------------------------------------------------------------------------
class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_status_line_plain_stream():
    s = io.StringIO()
    with build_status("the thing", "about 1 s", stream=s):
        pass
    lines = s.getvalue().splitlines()
    assert lines[0] == "tilelang-ascendc: building the thing (about 1 s) ..."
    assert lines[1].startswith("tilelang-ascendc: built the thing in ") and lines[1].endswith(" s")
    s = io.StringIO()
    with pytest.raises(RuntimeError), build_status("the thing", stream=s):
        raise RuntimeError("boom")
    assert "failed to build the thing" in s.getvalue()


def test_status_line_terminal_is_a_rich_spinner():
    s = _Tty()
    with build_status("the thing", stream=s):
        time.sleep(0.3)  # rich refreshes the spinner line while the block runs
    text = s.getvalue()
    assert "\x1b[" in text  # drawn with terminal control codes, then erased
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    assert "tilelang-ascendc: building the thing" in plain
    assert plain.rstrip().splitlines()[-1].startswith("tilelang-ascendc: built the thing in ")


def test_status_line_quiet(monkeypatch):
    monkeypatch.setenv("TL_ASCEND_QUIET", "1")
    s = io.StringIO()
    with build_status("the thing", stream=s):
        pass
    assert s.getvalue() == ""


def test_first_runtime_build_says_so(tmp_path, monkeypatch, capsys):
    """runtime_lib on an empty cache, with the emulator's sources replaced by one small file (the
    real ones take 30-60 s): the status line is written while it builds, nothing when it is cached."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "tiny.cpp").write_text("extern \"C\" int tiny_emulator_runtime() { return 1; }\n")
    monkeypatch.setattr(cache, "SRC_DIR", src)
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TL_ASCEND_QUIET", raising=False)
    lib = cache.runtime_lib("dav-3510")
    assert lib.is_file()
    err = capsys.readouterr().err
    assert "tilelang-ascendc: building the emulator runtime for dav-3510" in err
    assert "tilelang-ascendc: built the emulator runtime for dav-3510 in" in err
    assert cache.runtime_lib("dav-3510") == lib
    assert capsys.readouterr().err == ""
    assert os.environ["TL_ASCEND_CACHE_DIR"] == str(tmp_path / "cache")
