"""Build and cache of emulator binaries.

Two kinds of artefacts live in the cache directory (env ``TL_ASCEND_CACHE_DIR``, default
``~/.cache/tilelang-ascendc``):

* the runtime library ``libemu_<arch>_<hash>.so``: every ``src/*.cpp`` of the emulator,
  compiled once per (arch, hash of the emulator sources, compiler flags);
* one ``k_<key>.so`` per kernel, keyed by the kernel text (with its generated trampoline),
  the arch, the emulator hash and the flags, linked against the runtime library.

Every artefact is written to a temporary file in the same directory and published with
``os.replace`` (atomic on POSIX), followed by a ``.meta`` file holding the SHA-256 of the
binary. A binary is used only when its meta file exists and the hash matches, so a crash
mid-write, a truncated file or any other corruption leads to a rebuild, never to loading a
stale or partial binary.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .report import EmulatorCompileError, EmulatorError

PKG_DIR = Path(__file__).resolve().parent
INCLUDE_DIR = PKG_DIR / "include"
SRC_DIR = PKG_DIR / "src"

CXX = os.environ.get("TL_ASCEND_CXX", "g++")
COMMON_FLAGS = ["-std=c++20", "-fPIC", "-pthread", "-w"]
RUNTIME_FLAGS = ["-O2"]
KERNEL_FLAGS = ["-O2"]
KERNEL_LINK_FLAGS = ["-Wl,--no-as-needed"]  # keep the runtime as a dependency of every kernel
ARCHES = {"dav-3510": "-DEMU_ARCH_3510", "dav-c220": "-DEMU_ARCH_C220"}
_ARCH_ALIASES = {
    "dav-3510": "dav-3510", "3510": "dav-3510", "dav-c310": "dav-3510", "ascend950": "dav-3510",
    "dav-c220": "dav-c220", "c220": "dav-c220", "dav-2201": "dav-c220", "2201": "dav-c220",
}

# Statistics of this process (the tests use them to prove that a second run compiles nothing).
stats = {"kernel_compiles": 0, "runtime_compiles": 0, "kernel_hits": 0}
_lock = threading.Lock()


def normalize_arch(arch: str) -> str:
    """Map an arch spelling to ``dav-3510`` or ``dav-c220``; raise EmulatorError otherwise."""
    a = _ARCH_ALIASES.get(str(arch).lower())
    if a is None:
        raise EmulatorError(f"unknown arch {arch!r}: use 'dav-3510' (default) or 'dav-c220'")
    return a


def cache_dir() -> Path:
    """The cache directory (created on demand)."""
    d = Path(os.environ.get("TL_ASCEND_CACHE_DIR") or Path.home() / ".cache" / "tilelang-ascendc")
    d = d / "emulator"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _emulator_files() -> list[Path]:
    return sorted(INCLUDE_DIR.glob("*.h")) + sorted(SRC_DIR.glob("*.cpp"))


def emulator_hash() -> str:
    """SHA-256 over the names and contents of the emulator's headers and sources, plus flags."""
    h = hashlib.sha256()
    for f in _emulator_files():
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(" ".join([CXX, *COMMON_FLAGS, *RUNTIME_FLAGS]).encode())
    return h.hexdigest()[:20]


def _sha_file(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


_verified: dict[tuple, str] = {}  # (path, size, mtime, meta size, meta mtime) -> sha256 verified


def _valid(binary: Path) -> str:
    """The binary's SHA-256 when its meta file vouches for its exact content, else ''.
    A successful check is remembered while the two files' size and mtime stay the same."""
    meta = binary.with_suffix(".meta")
    try:
        st, sm = binary.stat(), meta.stat()
        key = (str(binary), st.st_size, st.st_mtime_ns, st.st_ino, sm.st_size, sm.st_mtime_ns, sm.st_ino)
        if key in _verified:
            return _verified[key]
        want = json.loads(meta.read_text())["sha256"]
        if _sha_file(binary) != want:
            return ""
        _verified[key] = want
        return want
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _publish(tmp_binary: Path, final: Path) -> None:
    """Atomically publish a built binary and then its meta file."""
    digest = _sha_file(tmp_binary)
    meta = final.with_suffix(".meta")
    try:
        meta.unlink()  # never leave a meta that could vouch for a new, partial binary
    except FileNotFoundError:
        pass
    os.replace(tmp_binary, final)
    fd, tmp_meta = tempfile.mkstemp(dir=final.parent, prefix=".meta-")
    with os.fdopen(fd, "w") as f:
        json.dump({"sha256": digest}, f)
    os.replace(tmp_meta, meta)


@contextmanager
def _file_lock(name: str) -> Iterator[None]:
    path = cache_dir() / f".{name}.lock"
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise EmulatorError(f"C++ compiler {cmd[0]!r} not found (set TL_ASCEND_CXX)") from e


def runtime_lib(arch: str) -> Path:
    """Path of the runtime library for ``arch``, building it when missing or invalid."""
    arch = normalize_arch(arch)
    final = cache_dir() / f"libemu_{arch.replace('-', '_')}_{emulator_hash()}.so"
    if _valid(final):
        return final
    with _lock, _file_lock(final.stem):
        if _valid(final):
            return final
        srcs = sorted(SRC_DIR.glob("*.cpp"))
        tmpdir = Path(tempfile.mkdtemp(dir=cache_dir(), prefix=".build-"))
        try:
            flags = [*COMMON_FLAGS, *RUNTIME_FLAGS, ARCHES[arch], f"-I{INCLUDE_DIR}"]
            procs = []
            objs = []
            for s in srcs:  # compile the sources in parallel
                o = tmpdir / (s.stem + ".o")
                objs.append(o)
                procs.append((s, subprocess.Popen([CXX, *flags, "-c", str(s), "-o", str(o)],
                                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            errors = []
            for s, p in procs:
                _, err = p.communicate()
                if p.returncode != 0:
                    errors.append(f"{s.name}:\n{err}")
            if errors:
                raise EmulatorError("building the emulator runtime failed:\n" + "\n".join(errors)[:20000])
            out = tmpdir / "lib.so"
            r = _run([CXX, *COMMON_FLAGS, "-shared", *map(str, objs), "-o", str(out)])
            if r.returncode != 0:
                raise EmulatorError("linking the emulator runtime failed:\n" + r.stderr[:20000])
            _publish(out, final)
            stats["runtime_compiles"] += 1
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return final


_pch_checked: dict[str, bool] = {}


def pch_dir(arch: str) -> Path | None:
    """Directory holding a precompiled ``kernel_operator.h.gch`` for kernel compiles (built once
    per arch and emulator hash; g++ uses it when the kernel's first include is
    kernel_operator.h, and silently falls back to the header otherwise). None if it cannot be
    built."""
    arch = normalize_arch(arch)
    flags_key = hashlib.sha256(" ".join([*COMMON_FLAGS, *KERNEL_FLAGS]).encode()).hexdigest()[:8]
    d = cache_dir() / f"pch_{arch.replace('-', '_')}_{emulator_hash()}_{flags_key}"
    gch = d / "kernel_operator.h.gch"
    key = str(gch)
    if _pch_checked.get(key) and gch.is_file():
        return d
    with _lock, _file_lock(d.name):
        if _valid(gch):
            _pch_checked[key] = True
            return d
        d.mkdir(exist_ok=True)
        tmp = d / f".tmp-{os.getpid()}.gch"
        r = _run([CXX, *COMMON_FLAGS, *KERNEL_FLAGS, ARCHES[arch], f"-I{INCLUDE_DIR}", "-x", "c++-header",
                  str(INCLUDE_DIR / "kernel_operator.h"), "-o", str(tmp)])
        if r.returncode != 0:
            tmp.unlink(missing_ok=True)
            return None
        _publish(tmp, gch)
        _gc_pch(keep=d)
    _pch_checked[key] = True
    return d


def _gc_pch(keep: Path, min_age_s: float = 600.0) -> None:
    """Remove precompiled headers of other emulator versions (about 45 MB each) that have not
    been touched for `min_age_s`. They are only accelerators: a compile that loses its PCH
    still works (g++ falls back to the headers)."""
    import time

    now = time.time()
    for d in cache_dir().glob("pch_*"):
        try:
            if d == keep or not d.is_dir() or now - d.stat().st_mtime < min_age_s:
                continue
            shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass


@dataclass
class KernelBinary:
    path: Path
    runtime: Path
    compiled: bool  # True when this call compiled it
    sha256: str = ""


_ERR_RE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)? (?:fatal )?error: (?P<msg>.*)$", re.M)


def _compile_error(stderr: str, source: str, src_name: str) -> EmulatorCompileError:
    lines = source.splitlines()
    first = None
    for m in _ERR_RE.finditer(stderr):
        if Path(m.group("file")).name == src_name:
            first = m
            break
    if first is None:
        first = _ERR_RE.search(stderr)
    line = None
    src_line = ""
    msg = "compile error"
    if first is not None:
        msg = first.group("msg")
        if Path(first.group("file")).name == src_name:
            line = int(first.group("line"))
            if 1 <= line <= len(lines):
                src_line = lines[line - 1]
    where = f" at kernel line {line}: {src_line.strip()}" if line else ""
    text = f"g++ could not compile the kernel: {msg}{where}\n--- compiler output ---\n{stderr[:8000]}"
    return EmulatorCompileError(text, compiler_output=stderr, line=line, source_line=src_line)


def kernel_lib(full_source: str, arch: str, user_source: str | None = None) -> KernelBinary:
    """Compile (or fetch from the cache) a kernel translation unit linked to the runtime."""
    arch = normalize_arch(arch)
    rt = runtime_lib(arch)
    key = hashlib.sha256(
        "\0".join([full_source, arch, rt.name, CXX, *COMMON_FLAGS, *KERNEL_FLAGS, *KERNEL_LINK_FLAGS]).encode()
    ).hexdigest()[:32]
    final = cache_dir() / f"k_{key}.so"
    sha = _valid(final)
    if sha:
        stats["kernel_hits"] += 1
        return KernelBinary(final, rt, False, sha)
    tmpdir = Path(tempfile.mkdtemp(dir=cache_dir(), prefix=".k-"))
    try:
        src = tmpdir / "kernel.cpp"
        src.write_text(full_source)
        out = tmpdir / "k.so"
        pch = pch_dir(arch) if os.environ.get("TL_ASCEND_EMU_PCH", "1") != "0" else None
        inc = ([f"-I{pch}"] if pch else []) + [f"-I{INCLUDE_DIR}"]
        cmd = [CXX, *COMMON_FLAGS, *KERNEL_FLAGS, ARCHES[arch], *inc, "-shared", str(src),
               "-o", str(out), f"-L{rt.parent}", *KERNEL_LINK_FLAGS, f"-l:{rt.name}", f"-Wl,-rpath,{rt.parent}"]
        r = _run(cmd)
        if r.returncode != 0:
            shown = user_source if user_source is not None else full_source
            raise _compile_error(r.stderr, shown, "kernel.cpp")
        _publish(out, final)
        stats["kernel_compiles"] += 1
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return KernelBinary(final, rt, True, _valid(final))


def loadable_path(binary: KernelBinary, loaded: dict[str, str]) -> Path:
    """A path to dlopen for this exact binary content.

    The dynamic loader returns an already-open library for the same path string, so when a
    path was loaded before with different content (a rebuilt entry), a hard link named after
    the content hash is used instead. ``loaded`` maps path -> sha of what this process opened.
    """
    p = str(binary.path)
    if loaded.get(p, binary.sha256) == binary.sha256:
        return binary.path
    alias = binary.path.with_name(f"{binary.path.stem}.{binary.sha256[:16]}.so")
    if not alias.exists():
        tmp = alias.with_name(f".{alias.name}.{os.getpid()}")
        os.link(binary.path, tmp)
        os.replace(tmp, alias)
    return alias
