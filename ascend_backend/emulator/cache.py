"""Build and cache of emulator binaries.

Three kinds of artefacts live in the cache directory (``$TL_ASCEND_CACHE_DIR/emulator``, default
``~/.cache/tilelang-ascendc/emulator``):

* the runtime library ``libemu_<arch>_<hash>.so``: every ``src/*.cpp`` of the emulator,
  compiled once per (arch, hash of the emulator sources, compiler and flags);
* the precompiled ``kernel_operator.h`` per (arch, emulator hash, flags), ``pch_*/``;
* one ``k_<key>.so`` per kernel, keyed by the kernel text (with its generated trampoline),
  the arch, the emulator hash, the compiler and the flags, linked against the runtime library.

Every artefact is built in a temporary named after this process, published with
``os.replace`` (atomic on POSIX), followed by a ``.meta`` file naming the entry (kind, key and
the fields of the key) and holding the SHA-256 of the binary; kernels and runtimes also carry
their key inside the binary. A binary is used only when all of that matches
(``ascend_backend/buildcache.py``), so a crash mid-write, a truncated file, corruption or a valid
entry of another kernel copied under this key leads to a rebuild, never to loading it. Temps
of killed builds are removed once their process is gone, and the cache is held under a size cap
(``TL_ASCEND_CACHE_MAX_MB``) by removing the least recently used entries after each build.
Environment faults (no compiler, a cache path that is a file, a read-only directory, a full
disk) raise :class:`EmulatorEnvironmentError` with a one-line message.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .. import buildcache
from ..buildcache import BuildEnvironmentError
from ..status import build_status
from .report import EmulatorCompileError, EmulatorError

PKG_DIR = Path(__file__).resolve().parent
INCLUDE_DIR = PKG_DIR / "include"
SRC_DIR = PKG_DIR / "src"

COMMON_FLAGS = ["-std=c++20", "-fPIC", "-pthread", "-w"]
RUNTIME_FLAGS = ["-O2"]
# Hidden by default: a kernel library exports only its trampolines (runner.trampoline) and its cache
# id, so what a kernel defines (its entry named getpid, usleep, ...) binds locally and interposes no
# library function; kernel_operator.h keeps the emulator's own declarations at default visibility.
# -g1: line tables, so the SIMT engine's code addresses map to source lines (simt.py).
KERNEL_FLAGS = ["-O2", "-g1", "-fvisibility=hidden"]
KERNEL_LINK_FLAGS = ["-Wl,--no-as-needed"]  # keep the runtime as a dependency of every kernel
ARCHES = {"dav-3510": "-DEMU_ARCH_3510", "dav-c220": "-DEMU_ARCH_C220"}
_ARCH_ALIASES = {
    "dav-3510": "dav-3510", "3510": "dav-3510", "dav-c310": "dav-3510", "ascend950": "dav-3510",
    "dav-c220": "dav-c220", "c220": "dav-c220", "dav-2201": "dav-c220", "2201": "dav-c220",
}

# Statistics of this process (the tests use them to prove that a second run compiles nothing).
stats = {"kernel_compiles": 0, "runtime_compiles": 0, "kernel_hits": 0}
_lock = threading.Lock()


class EmulatorEnvironmentError(EmulatorError, BuildEnvironmentError):
    """The environment cannot build or cache the emulator (no compiler, a cache path that is a
    file, a read-only cache directory, a full disk). The message is one line saying what to do."""


_F = TypeVar("_F", bound=Callable[..., Any])


def _env_errors(fn: _F) -> _F:
    """Re-raise environment faults as EmulatorEnvironmentError, without a chained traceback."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EmulatorEnvironmentError:
            raise
        except BuildEnvironmentError as exc:
            raise EmulatorEnvironmentError(str(exc)) from None
    return wrapper  # type: ignore[return-value]


def cxx() -> str:
    """The C++ compiler: ``$TL_ASCEND_CXX`` or g++ (read on every build)."""
    return os.environ.get("TL_ASCEND_CXX") or "g++"


def _check_compiler() -> str:
    c = cxx()
    if shutil.which(c) is None:
        how = f"TL_ASCEND_CXX={c}" if os.environ.get("TL_ASCEND_CXX") else "the default g++"
        raise EmulatorEnvironmentError(
            f"error: the C++ compiler {c!r} ({how}) was not found, and the emulator must build its runtime and "
            "kernels with it: install g++ 10 or newer (C++20), or set TL_ASCEND_CXX to one")
    return c


def normalize_arch(arch: str) -> str:
    """Map an arch spelling to ``dav-3510`` or ``dav-c220``; raise EmulatorError otherwise."""
    a = _ARCH_ALIASES.get(str(arch).lower())
    if a is None:
        raise EmulatorError(f"unknown arch {arch!r}: use 'dav-3510' (default) or 'dav-c220'")
    return a


@_env_errors
def cache_dir() -> Path:
    """The cache directory (created on demand; a path that is a file is an EmulatorEnvironmentError)."""
    return buildcache.ensure_dir(buildcache.cache_root() / "emulator")


def _emulator_files() -> list[Path]:
    return sorted(INCLUDE_DIR.glob("*.h")) + sorted(SRC_DIR.glob("*.cpp"))


def emulator_hash() -> str:
    """SHA-256 over the names and contents of the emulator's headers and sources, plus flags."""
    h = hashlib.sha256()
    for f in _emulator_files():
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(" ".join([cxx(), *COMMON_FLAGS, *RUNTIME_FLAGS]).encode())
    return h.hexdigest()[:20]


def protect_current(e: buildcache.Entry) -> bool:
    """The current emulator's runtime libraries and precompiled headers (the automatic prune keeps them)."""
    return e.kind in ("runtime", "pch") and emulator_hash() in e.name


def _publish(tmp_binary: Path, final: Path, ident: dict[str, Any]) -> str:
    with buildcache.guard(final.parent, f"publishing {final.name}"):
        return buildcache.publish(tmp_binary, final, ident)


def _housekeeping() -> None:
    buildcache.auto_prune(protect_current)


@contextmanager
def _file_lock(name: str) -> Iterator[None]:
    path = cache_dir() / f".{name}.lock"
    with buildcache.guard(path.parent, "locking the cache"), open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        _check_compiler()
        raise
    _check_disk(r.stderr)
    return r


def _check_disk(stderr: str) -> None:
    if buildcache.no_space_in(stderr):
        raise EmulatorEnvironmentError(
            f"error: the compiler ran out of disk space (cache {buildcache.cache_root()}, temporary files in "
            f"{tempfile.gettempdir()}): free disk space, run `tl-ascend cache prune`, or set TL_ASCEND_CACHE_DIR / "
            "TMPDIR to another disk")


def _mkdtemp(kind: str) -> Path:
    d = cache_dir()
    with buildcache.guard(d, "creating a build directory"):
        return Path(tempfile.mkdtemp(dir=d, prefix=buildcache.temp_prefix(kind)))


def _runtime_ident(arch: str, final: Path) -> dict[str, Any]:
    return buildcache.identity("runtime", final.stem, arch=arch, emulator_hash=emulator_hash(), cxx=cxx(),
                               flags=" ".join([*COMMON_FLAGS, *RUNTIME_FLAGS]))


@_env_errors
def runtime_lib(arch: str) -> Path:
    """Path of the runtime library for ``arch``, building it when missing or invalid."""
    arch = normalize_arch(arch)
    final = cache_dir() / f"libemu_{arch.replace('-', '_')}_{emulator_hash()}.so"
    ident = _runtime_ident(arch, final)
    if buildcache.verify(final, ident):
        return final
    with _lock, _file_lock(final.stem):
        if buildcache.verify(final, ident):
            return final
        compiler = _check_compiler()
        srcs = sorted(SRC_DIR.glob("*.cpp"))
        tmpdir = _mkdtemp("build")
        try:
            with build_status(f"the emulator runtime for {arch}", "once per emulator version, about 30 s"):
                flags = [*COMMON_FLAGS, *RUNTIME_FLAGS, ARCHES[arch], f"-I{INCLUDE_DIR}"]
                idsrc = tmpdir / "cache_id.cpp"  # the entry's key, compiled into the library
                with buildcache.guard(tmpdir, "writing the build directory"):
                    idsrc.write_text(buildcache.id_definition("__tl_ascend_cache_id_runtime", final.stem))
                procs = []
                objs = []
                for s in [*srcs, idsrc]:  # compile the sources in parallel
                    o = tmpdir / (s.stem + ".o")
                    objs.append(o)
                    procs.append((s, subprocess.Popen([compiler, *flags, "-c", str(s), "-o", str(o)],
                                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
                errors = []
                for s, p in procs:
                    _, err = p.communicate()
                    if p.returncode != 0:
                        _check_disk(err)
                        errors.append(f"{s.name}:\n{err}")
                if errors:
                    raise EmulatorError("building the emulator runtime failed:\n" + "\n".join(errors)[:20000])
                out = tmpdir / "lib.so"
                r = _run([compiler, *COMMON_FLAGS, "-shared", *map(str, objs), "-o", str(out)])
                if r.returncode != 0:
                    raise EmulatorError("linking the emulator runtime failed:\n" + r.stderr[:20000])
                _publish(out, final, ident)
                stats["runtime_compiles"] += 1
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
    _housekeeping()
    return final


_pch_checked: dict[str, bool] = {}


@_env_errors
def pch_dir(arch: str) -> Path | None:
    """Directory holding a precompiled ``kernel_operator.h.gch`` for kernel compiles (built once
    per arch and emulator hash; g++ uses it when the kernel's first include is
    kernel_operator.h, and silently falls back to the header otherwise). None if it cannot be
    built."""
    arch = normalize_arch(arch)
    flags = " ".join([*COMMON_FLAGS, *KERNEL_FLAGS])
    flags_key = hashlib.sha256(flags.encode()).hexdigest()[:8]
    d = cache_dir() / f"pch_{arch.replace('-', '_')}_{emulator_hash()}_{flags_key}"
    gch = d / "kernel_operator.h.gch"
    ident = buildcache.identity("pch", d.name, arch=arch, emulator_hash=emulator_hash(), cxx=cxx(), flags=flags)
    key = str(gch)
    if (_pch_checked.get(key) and gch.is_file()) or buildcache.verify(gch, ident, embedded=False):
        _pch_checked[key] = True
        return d
    with _lock, _file_lock(d.name):
        if buildcache.verify(gch, ident, embedded=False):
            _pch_checked[key] = True
            return d
        compiler = _check_compiler()
        with buildcache.guard(d, "creating the precompiled-header directory"):
            d.mkdir(exist_ok=True)
        tmp = d / f"{buildcache.temp_prefix('tmp')}kernel_operator.h.gch"
        try:
            with build_status(f"the emulator's precompiled headers for {arch}",
                              "once per emulator version, about 15 s"):
                r = _run([compiler, *COMMON_FLAGS, *KERNEL_FLAGS, ARCHES[arch], f"-I{INCLUDE_DIR}", "-x", "c++-header",
                          str(INCLUDE_DIR / "kernel_operator.h"), "-o", str(tmp)])
                if r.returncode != 0:
                    return None
                _publish(tmp, gch, ident)
        finally:
            tmp.unlink(missing_ok=True)
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


@_env_errors
def kernel_lib(full_source: str, arch: str, user_source: str | None = None) -> KernelBinary:
    """Compile (or fetch from the cache) a kernel translation unit linked to the runtime."""
    arch = normalize_arch(arch)
    rt = runtime_lib(arch)
    c = cxx()
    flags = " ".join([*COMMON_FLAGS, *KERNEL_FLAGS, *KERNEL_LINK_FLAGS])
    key = hashlib.sha256("\0".join([full_source, arch, rt.name, c, flags]).encode()).hexdigest()[:32]
    final = cache_dir() / f"k_{key}.so"
    ident = buildcache.identity("kernel", final.stem, source_sha256=hashlib.sha256(full_source.encode()).hexdigest(),
                                arch=arch, runtime=rt.name, cxx=c, flags=flags)
    sha = buildcache.verify(final, ident)
    if sha:
        stats["kernel_hits"] += 1
        return KernelBinary(final, rt, False, sha)
    compiler = _check_compiler()
    tmpdir = _mkdtemp("k")
    try:
        src = tmpdir / "kernel.cpp"
        with buildcache.guard(tmpdir, "writing the kernel source"):
            # the entry's key is compiled into the binary, after the user's code (lines unchanged)
            src.write_text(full_source + buildcache.id_definition("__tl_ascend_cache_id_kernel", final.stem))
        out = tmpdir / "k.so"
        pch = pch_dir(arch) if os.environ.get("TL_ASCEND_EMU_PCH", "1") != "0" else None
        inc = ([f"-I{pch}"] if pch else []) + [f"-I{INCLUDE_DIR}"]
        cmd = [compiler, *COMMON_FLAGS, *KERNEL_FLAGS, ARCHES[arch], *inc, "-shared", str(src),
               "-o", str(out), f"-L{rt.parent}", *KERNEL_LINK_FLAGS, f"-l:{rt.name}", f"-Wl,-rpath,{rt.parent}"]
        r = _run(cmd)
        if r.returncode != 0:
            shown = user_source if user_source is not None else full_source
            raise _compile_error(r.stderr, shown, "kernel.cpp")
        sha = _publish(out, final, ident)
        stats["kernel_compiles"] += 1
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    _housekeeping()
    return KernelBinary(final, rt, True, sha)


@_env_errors
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
        tmp = alias.with_name(f"{buildcache.temp_prefix('alias')}{alias.name}")
        with buildcache.guard(alias.parent, "linking a kernel alias"):
            os.link(binary.path, tmp)
            os.replace(tmp, alias)
    return alias
