"""The build caches' common machinery: self-identifying entries, orphan cleanup, a size cap.

Two caches share one root (``TL_ASCEND_CACHE_DIR``, default ``~/.cache/tilelang-ascendc``):
``emulator/`` (g++ builds of the CPU emulator: kernels, runtime libraries, precompiled headers;
see ``ascend_backend/emulator/cache.py``) and ``npu/`` (bisheng builds, ``ascend_backend/npu.py``).

Entries. A binary is published atomically (``os.replace``) next to a ``.meta`` file naming
the entry: its kind, its key (the hash the file name is made of) and the fields the key was
made from (source hash, arch, emulator hash, compiler and flags), plus the binary's SHA-256.
Kernel and runtime binaries also carry their key inside themselves (a string compiled into
the library, ``tl-ascend-cache-id:<key>``). An entry is used only when the meta names exactly
the expected key and fields, the binary's hash matches, and (when embedded) the binary names
the key: a partial or corrupt file, or a valid entry of another kernel copied under this key,
is rebuilt, never loaded.

Housekeeping. Temporary files are named after the process that makes them
(``.k-<pid>-*``, ``.build-<pid>-*``, ``.tmp-<pid>-*``, ...); one whose process is gone (or
that is older than ``ORPHAN_MAX_AGE_S``) is an orphan of a killed build and is removed. The
cache is held under a size cap (``TL_ASCEND_CACHE_MAX_MB``, default ``DEFAULT_MAX_MB``): after
every build the least recently used entries are removed until it fits (entries used in the
last ``AUTO_PRUNE_MIN_IDLE_S`` seconds, and the current emulator's runtime and precompiled
header, are kept). ``tl-ascend cache info`` / ``tl-ascend cache prune`` show and prune it.

Environment faults (a cache path that is a file, a directory that cannot be written, a full
disk) raise :class:`BuildEnvironmentError` with a one-line message saying what to do.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_DIR = "TL_ASCEND_CACHE_DIR"
ENV_MAX_MB = "TL_ASCEND_CACHE_MAX_MB"
DEFAULT_MAX_MB = 1024
META_FORMAT = 2
ID_MARKER = "tl-ascend-cache-id:"
TOUCH_EVERY_S = 30.0          # last-use stamps are refreshed at most this often
AUTO_PRUNE_MIN_IDLE_S = 120.0  # the automatic prune never removes an entry used more recently
ORPHAN_DEAD_PID_AGE_S = 60.0  # a temp of a dead process older than this is an orphan
ORPHAN_MAX_AGE_S = 6 * 3600.0  # any temp older than this is an orphan (no build takes hours)
SUBDIRS = ("emulator", "npu")
BUILD_KINDS = ("kernel", "runtime", "pch", "npu")

# A temporary made by process <pid>: .k-<pid>-..., .build-<pid>-..., .tmp-<pid>-..., .meta-<pid>-...
_TEMP_RE = re.compile(r"^\.(?:k|build|meta|tmp|alias|npu)-(\d+)[-.]")
_LEGACY_TEMP_RE = re.compile(r"^\.(?:k|build|meta|tmp)-")  # older temps without a pid: by age only
_LOCK_RE = re.compile(r"^\.(?P<name>.+)\.lock$")


class BuildEnvironmentError(Exception):
    """A fault of the environment (compiler, cache directory, disk), not of the kernel. The
    message is one line: what is wrong, where, and what to do."""


def cache_root() -> Path:
    """The cache root (not created): ``$TL_ASCEND_CACHE_DIR`` or ``~/.cache/tilelang-ascendc``."""
    return Path(os.environ.get(ENV_DIR) or Path.home() / ".cache" / "tilelang-ascendc").expanduser()


def _root_hint() -> str:
    return f"{ENV_DIR}={os.environ[ENV_DIR]}" if os.environ.get(ENV_DIR) else f"default, set {ENV_DIR} to move it"


def env_error(exc: OSError, where: Path, doing: str) -> BuildEnvironmentError:
    """One-line error for an OSError met while ``doing`` something in the cache at ``where``."""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return BuildEnvironmentError(
            f"error: no space left for the build cache at {where} while {doing} ({why}): free disk space, "
            f"run `tl-ascend cache prune`, or set {ENV_DIR} to a directory on another disk")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return BuildEnvironmentError(
            f"error: the build cache at {where} is not writable ({why}) while {doing}: make it writable, "
            f"or set {ENV_DIR} to a writable directory")
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return BuildEnvironmentError(
            f"error: the build cache path {_first_file(where)} is a file, not a directory ({_root_hint()}): "
            f"remove or rename it, or set {ENV_DIR} to a directory")
    return BuildEnvironmentError(f"error: the build cache at {where} failed while {doing} ({why}): "
                                 f"check the directory, or set {ENV_DIR} to another one")


def _first_file(p: Path) -> Path:
    """The first component of ``p`` (from the root down) that exists and is not a directory."""
    for q in [*reversed(p.parents), p]:
        if q.exists() and not q.is_dir():
            return q
    return p


@contextmanager
def guard(where: Path, doing: str) -> Iterator[None]:
    """Turn an OSError of the block into a one-line BuildEnvironmentError."""
    try:
        yield
    except BuildEnvironmentError:
        raise
    except OSError as exc:
        raise env_error(exc, where, doing) from None


def ensure_dir(d: Path) -> Path:
    """Create ``d`` (and parents); a path component that is a file, or a directory that cannot be
    created, is a BuildEnvironmentError."""
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise env_error(exc, d, "creating the cache directory") from None
    if not d.is_dir():
        raise env_error(OSError(errno.ENOTDIR, "Not a directory"), d, "creating the cache directory")
    return d


def no_space_in(text: str) -> bool:
    """Does a tool's output say the disk is full?"""
    return "No space left on device" in text or "Disk quota exceeded" in text


def temp_prefix(kind: str) -> str:
    """Prefix of a temporary file or directory of this process (``kind``: k, build, tmp, meta, alias, npu)."""
    return f".{kind}-{os.getpid()}-"


def marker(key: str) -> bytes:
    """The bytes a self-identifying binary contains: ``tl-ascend-cache-id:<key>``."""
    return (ID_MARKER + key).encode()


def id_definition(symbol: str, key: str) -> str:
    """C++ that compiles the entry's key into the binary (kept by ``used`` at any -O level)."""
    return (f'\nextern "C" __attribute__((used, visibility("default"))) const char {symbol}[] = '
            f'"{ID_MARKER}{key}";\n')


def meta_path(binary: Path) -> Path:
    return binary.with_suffix(".meta")


def identity(kind: str, key: str, **fields: Any) -> dict[str, Any]:
    """What an entry's meta must name: kind, key and the fields the key was made from."""
    return {"kind": kind, "key": key, "id": {k: str(v) for k, v in sorted(fields.items())}}


# (binary path, size, mtime, inode) -> (meta text, sha256) of a successful verification
_verified: dict[tuple, tuple[str, str]] = {}


def verify(binary: Path, ident: dict[str, Any], embedded: bool = True) -> str:
    """The binary's SHA-256 when it is the entry ``ident`` names, else ''. Checked: the meta
    names the same kind, key and fields; the binary's hash is the meta's; with ``embedded``, the
    binary contains its key. A success is remembered while the binary's size, mtime and inode
    and the meta's text stay the same. A use refreshes the entry's last-use stamp."""
    meta = meta_path(binary)
    try:
        text = meta.read_text()
        st = binary.stat()
    except (OSError, UnicodeDecodeError):
        return ""
    k = (str(binary), st.st_size, st.st_mtime_ns, st.st_ino)
    hit = _verified.get(k)
    if hit is not None and hit[0] == text:
        touch(meta)
        return hit[1]
    try:
        m = json.loads(text)
    except ValueError:
        return ""
    if not isinstance(m, dict) or m.get("format") != META_FORMAT:
        return ""
    if m.get("kind") != ident["kind"] or m.get("key") != ident["key"] or m.get("id") != ident["id"]:
        return ""
    try:
        data = binary.read_bytes()
    except OSError:
        return ""
    sha = hashlib.sha256(data).hexdigest()
    if sha != m.get("sha256") or (embedded and marker(ident["key"]) not in data):
        return ""
    _verified[k] = (text, sha)
    touch(meta)
    return sha


def touch(meta: Path) -> None:
    """Refresh an entry's last-use stamp (its meta's mtime); silently skipped when read-only."""
    try:
        if time.time() - meta.stat().st_mtime > TOUCH_EVERY_S:
            os.utime(meta)
    except OSError:
        pass


def publish(tmp_binary: Path, final: Path, ident: dict[str, Any]) -> str:
    """Atomically publish a built binary, then the meta that names it; returns its SHA-256."""
    data = tmp_binary.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    meta = meta_path(final)
    meta.unlink(missing_ok=True)  # never leave a meta that could vouch for a new, partial binary
    os.replace(tmp_binary, final)
    fd, tmp_meta = tempfile.mkstemp(dir=final.parent, prefix=temp_prefix("meta"))
    try:
        with os.fdopen(fd, "w") as f:
            json.dump({"format": META_FORMAT, **ident, "sha256": digest, "created": time.time(),
                       "pid": os.getpid()}, f)
        os.replace(tmp_meta, meta)
    except BaseException:
        Path(tmp_meta).unlink(missing_ok=True)
        raise
    return digest


# ---------------------------------------------------------------------------------------------
# Scanning, pruning
# ---------------------------------------------------------------------------------------------
@dataclass
class Entry:
    """One cache entry: a build (kernel, runtime, pch, npu), a temp, a lock, or other files."""

    kind: str
    name: str
    paths: list[Path]
    size: int = 0
    last_used: float = 0.0
    orphan: bool = False      # a temp whose builder is gone
    protected: bool = False   # the current emulator's runtime / pch: kept by the automatic prune


@dataclass
class PruneResult:
    removed: list[Entry] = field(default_factory=list)
    freed: int = 0
    total: int = 0            # bytes left
    errors: list[str] = field(default_factory=list)


def _walk(p: Path) -> Iterator[Path]:
    if p.is_dir() and not p.is_symlink():
        yield from p.rglob("*")
    yield p


def _size_mtime(paths: list[Path], seen: set[tuple[int, int]]) -> tuple[int, float]:
    size, mtime = 0, 0.0
    for p in paths:
        for q in _walk(p):
            try:
                st = q.lstat()
            except OSError:
                continue
            mtime = max(mtime, st.st_mtime)
            if (st.st_dev, st.st_ino) in seen:
                continue  # hard links (kernel aliases) count once
            seen.add((st.st_dev, st.st_ino))
            if not q.is_dir() or q.is_symlink():
                size += st.st_size
    return size, mtime


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _temp_orphan(name: str, mtime: float, now: float) -> bool:
    age = now - mtime
    if age > ORPHAN_MAX_AGE_S:
        return True
    m = _TEMP_RE.match(name)
    return bool(m) and not pid_alive(int(m.group(1))) and age > ORPHAN_DEAD_PID_AGE_S


def _group(name: str, sub: str) -> tuple[str, str] | None:
    """(kind, entry name) of a published file of subdir ``sub``, or None."""
    if sub == "emulator":
        m = re.match(r"^(k_[0-9a-f]+)(?:\.[0-9a-f]+)?\.(?:so|meta)$", name)
        if m:
            return "kernel", m.group(1)
        m = re.match(r"^(libemu_.+)\.(?:so|meta)$", name)
        if m:
            return "runtime", m.group(1)
        if name.startswith("pch_"):
            return "pch", name
    elif sub == "npu":
        m = re.match(r"^(.+-[0-9a-f]+)\.(?:so|meta)$", name)
        if m:
            return "npu", m.group(1)
    return None


def scan(root: Path | None = None, now: float | None = None,
         protect: Callable[[Entry], bool] | None = None) -> list[Entry]:
    """Every entry under the cache root's subdirectories (nothing is created)."""
    root = cache_root() if root is None else root
    now = time.time() if now is None else now
    entries: dict[tuple[str, str], Entry] = {}
    seen: set[tuple[int, int]] = set()
    out: list[Entry] = []
    for sub in SUBDIRS:
        d = root / sub
        if not d.is_dir():
            continue
        names = sorted(os.listdir(d))
        for name in names:
            p = d / name
            g = _group(name, sub)
            if g is not None:
                entries.setdefault((sub, g[1]), Entry(g[0], f"{sub}/{g[1]}", [])).paths.append(p)
                continue
            if _TEMP_RE.match(name) or _LEGACY_TEMP_RE.match(name):
                out.append(Entry("temp", f"{sub}/{name}", [p]))
            elif _LOCK_RE.match(name):
                out.append(Entry("lock", f"{sub}/{name}", [p]))
            else:
                out.append(Entry("other", f"{sub}/{name}", [p]))
        # temps left inside precompiled-header directories (about 45 MB each when a build is killed)
        for name in names:
            if name.startswith("pch_") and (d / name).is_dir():
                for q in sorted((d / name).iterdir()):
                    if _TEMP_RE.match(q.name) or _LEGACY_TEMP_RE.match(q.name):
                        out.append(Entry("temp", f"{sub}/{name}/{q.name}", [q]))
    temps = {str(e.paths[0]) for e in out if e.kind == "temp"}
    for e in [*entries.values(), *out]:
        e.size, mtime = _size_mtime(e.paths, seen) if e.kind != "pch" else _pch_size(e.paths[0], temps, seen)
        e.last_used = _last_used(e, mtime)
        if e.kind == "temp":
            e.orphan = _temp_orphan(e.paths[0].name, mtime, now)
        if protect is not None and e.kind in BUILD_KINDS:
            e.protected = protect(e)
    return sorted([*entries.values(), *out], key=lambda e: (e.kind, e.name))


def _pch_size(d: Path, temps: set[str], seen: set[tuple[int, int]]) -> tuple[int, float]:
    if d.is_symlink():
        return _size_mtime([d], seen)  # a link to another cache's directory: only the link is ours
    files = [q for q in d.iterdir() if str(q) not in temps] if d.is_dir() else [d]
    return _size_mtime(files, seen)


def _last_used(e: Entry, mtime: float) -> float:
    """An entry's last use: its meta's mtime (refreshed on every use), else the newest file."""
    metas = [p for p in e.paths if p.suffix == ".meta"]
    if e.kind == "pch":
        metas = list(e.paths[0].glob("*.meta")) if e.paths[0].is_dir() else []
    for m in metas:
        try:
            return m.stat().st_mtime
        except OSError:
            pass
    return mtime


def remove(e: Entry) -> None:
    """Remove an entry: meta files first, so that no meta ever vouches for a half-removed binary."""
    for p in sorted(e.paths, key=lambda p: p.suffix != ".meta"):
        if p.is_dir() and not p.is_symlink():
            metas = list(p.glob("*.meta"))
            for m in metas:
                m.unlink(missing_ok=True)
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)


def max_bytes_from_env() -> int:
    """The size cap in bytes: ``TL_ASCEND_CACHE_MAX_MB`` (megabytes), default DEFAULT_MAX_MB."""
    text = os.environ.get(ENV_MAX_MB, "").strip()
    if not text:
        return DEFAULT_MAX_MB * 2**20
    try:
        mb = float(text)
        if mb < 0:
            raise ValueError
    except ValueError:
        raise BuildEnvironmentError(f"error: {ENV_MAX_MB}={text!r} is not a number of megabytes: set it to, e.g., "
                                    f"{DEFAULT_MAX_MB} (the default) or unset it") from None
    return int(mb * 2**20)


def parse_size(text: str) -> int:
    """'500' (megabytes), '500M', '2G', '2GB', '300k', '0' -> bytes; ValueError otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:i?[bB])?\s*", text)
    if not m:
        raise ValueError(f"{text!r} is not a size (for example 500M or 2G; a plain number is megabytes)")
    unit = {"": 2**20, "k": 2**10, "m": 2**20, "g": 2**30}[m.group(2).lower()]
    return int(float(m.group(1)) * unit)


def _lock_target(e: Entry) -> str:
    """The entry a lock file ``<sub>/.<name>.lock`` serialises builds of: ``<sub>/<name>``."""
    m = _LOCK_RE.match(e.paths[0].name)
    return f"{e.paths[0].parent.name}/{m.group('name')}" if m else ""


def prune(root: Path | None = None, max_bytes: int | None = None, remove_all: bool = False,
          min_idle_s: float = 0.0, keep_protected: bool = True, protect: Callable[[Entry], bool] | None = None,
          now: float | None = None, strict: bool = False) -> PruneResult:
    """Remove orphaned temps and stale locks; then with ``remove_all`` every build entry, else the
    least recently used build entries until the cache holds at most ``max_bytes`` (entries used
    within ``min_idle_s`` are kept; protected ones too with ``keep_protected``, otherwise they go
    last). Temps of running builds are never removed. ``strict``: a removal that fails is a
    BuildEnvironmentError (else it is listed in ``errors``)."""
    root = cache_root() if root is None else root
    now = time.time() if now is None else now
    _check_root(root)
    entries = scan(root, now, protect)
    res = PruneResult()
    builds = {e.name for e in entries if e.kind in BUILD_KINDS}

    def drop(e: Entry) -> bool:
        try:
            remove(e)
        except OSError as exc:
            if strict:
                raise env_error(exc, e.paths[0].parent, f"removing {e.name}") from None
            res.errors.append(f"{e.name}: {exc.strerror or exc}")
            return False
        res.removed.append(e)
        res.freed += e.size
        return True

    left = []
    for e in entries:
        if e.kind == "temp" and e.orphan:
            drop(e)
        elif e.kind == "lock" and now - e.last_used > ORPHAN_DEAD_PID_AGE_S and (
                remove_all or _lock_target(e) not in builds):
            drop(e)  # the lock of an entry that no longer exists
        else:
            left.append(e)
    if remove_all:
        for e in left:
            if e.kind in BUILD_KINDS:
                drop(e)
    elif max_bytes is not None:
        total = sum(e.size for e in left)
        cands = [e for e in left if e.kind in BUILD_KINDS and now - e.last_used >= min_idle_s
                 and not (keep_protected and e.protected)]
        cands.sort(key=lambda e: (e.protected, e.last_used))
        for e in cands:
            if total <= max_bytes:
                break
            if drop(e):
                total -= e.size
    gone = {id(e) for e in res.removed}
    res.total = sum(e.size for e in entries if id(e) not in gone)
    return res


def auto_prune(protect: Callable[[Entry], bool] | None = None) -> PruneResult | None:
    """Housekeeping after a build: orphans, then LRU down to the cap. Never raises."""
    try:
        return prune(cache_root(), max_bytes_from_env(), min_idle_s=AUTO_PRUNE_MIN_IDLE_S, protect=protect)
    except (OSError, BuildEnvironmentError):
        return None


def _check_root(root: Path) -> None:
    for d in (root, *(root / sub for sub in SUBDIRS)):
        if d.exists() and not d.is_dir():
            raise env_error(OSError(errno.ENOTDIR, "Not a directory"), d, "reading the cache")


def info(root: Path | None = None, protect: Callable[[Entry], bool] | None = None) -> dict[str, Any]:
    """What ``tl-ascend cache info`` shows: location, size, cap, entries and bytes by kind."""
    root = cache_root() if root is None else root
    _check_root(root)
    entries = scan(root, protect=protect) if root.is_dir() else []
    kinds: dict[str, dict[str, int]] = {k: {"entries": 0, "bytes": 0} for k in (*BUILD_KINDS, "temp")}
    for e in entries:
        k = kinds.setdefault(e.kind, {"entries": 0, "bytes": 0})
        k["entries"] += 1
        k["bytes"] += e.size
    return {
        "root": str(root),
        "root_from_env": bool(os.environ.get(ENV_DIR)),
        "exists": root.is_dir(),
        "total_bytes": sum(e.size for e in entries),
        "cap_bytes": max_bytes_from_env(),
        "cap_from_env": bool(os.environ.get(ENV_MAX_MB, "").strip()),
        "kinds": kinds,
        "orphans": sum(1 for e in entries if e.kind == "temp" and e.orphan),
        "in_progress": sum(1 for e in entries if e.kind == "temp" and not e.orphan),
    }
