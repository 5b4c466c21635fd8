"""The NPU build cache (no NPU needed: bisheng is replaced by a stand-in builder). A library is
loaded only when its entry names this kernel's key and its hash matches; anything else is
rebuilt."""

from __future__ import annotations

import re
import shutil

import pytest

from ascend_backend.arch import get_arch
from ascend_backend.errors import RuntimeUnavailableError
from ascend_backend.npu import npu_library


class FakeBisheng:
    """Writes a 'library' holding the source's strings, as a compiler keeps string literals."""

    def __init__(self, keep_id: bool = True) -> None:
        self.builds = 0
        self.keep_id = keep_id

    def __call__(self, src: str, out: str, arch) -> None:
        self.builds += 1
        text = open(src).read()
        ids = re.findall(r'"(tl-ascend-cache-id:[^"]*)"', text) if self.keep_id else []
        open(out, "wb").write(b"\x7fELF fake " + arch.name.encode() + b" " + "|".join(ids).encode()
                               + b" " + text.encode()[:64])


@pytest.fixture
def npu_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path))
    return tmp_path / "npu"


def test_npu_entries_are_verified(npu_cache):
    arch = get_arch("dav-3510")
    b = FakeBisheng()
    lib = npu_library("// kernel one\n", "one", arch, build=b)
    assert b.builds == 1 and lib.parent == npu_cache and lib.with_suffix(".meta").exists()
    assert f"tl-ascend-cache-id:{lib.stem}".encode() in lib.read_bytes()
    assert npu_library("// kernel one\n", "one", arch, build=b) == lib and b.builds == 1  # a hit
    # a valid entry of another kernel copied under this key is rebuilt, not loaded
    other = npu_library("// kernel two\n", "one", arch, build=b)
    assert other != lib and b.builds == 2
    shutil.copy(other, lib)
    shutil.copy(other.with_suffix(".meta"), lib.with_suffix(".meta"))
    assert npu_library("// kernel one\n", "one", arch, build=b) == lib and b.builds == 3
    assert f"tl-ascend-cache-id:{lib.stem}".encode() in lib.read_bytes()
    # a modified library (hash mismatch) is rebuilt
    lib.write_bytes(lib.read_bytes() + b"patched")
    npu_library("// kernel one\n", "one", arch, build=b)
    assert b.builds == 4
    # another arch is another entry
    npu_library("// kernel one\n", "one", get_arch("dav-c220"), build=b)
    assert b.builds == 5


def test_npu_library_without_its_key_is_not_loaded(npu_cache):
    with pytest.raises(RuntimeUnavailableError, match="does not carry its cache key"):
        npu_library("// kernel\n", "k", get_arch("dav-3510"), build=FakeBisheng(keep_id=False))
