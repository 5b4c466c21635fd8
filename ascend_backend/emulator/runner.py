"""Compile an Ascend C source against the emulator and launch it on torch CPU tensors."""

from __future__ import annotations

import ctypes
import json
import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from . import cache
from .report import EmulatorError, Report

KERNEL_TYPE_IDS = {
    "AIV_ONLY": 0, "AIC_ONLY": 1, "MIX_AIV_1_0": 2, "MIX_AIC_1_0": 3, "MIX_AIC_1_1": 4, "MIX_AIC_1_2": 5,
}
_KT_ALIASES = {"aiv": "AIV_ONLY", "vector": "AIV_ONLY", "aic": "AIC_ONLY", "cube": "AIC_ONLY",
               "mix": "MIX_AIC_1_2"}

_SCALARS: dict[str, tuple[Any, str]] = {
    # declared type -> (ctypes type used to pass it, C expression prefix)
    "bool": (ctypes.c_bool, "bool"),
    "int8_t": (ctypes.c_int8, "int8_t"), "uint8_t": (ctypes.c_uint8, "uint8_t"),
    "int16_t": (ctypes.c_int16, "int16_t"), "uint16_t": (ctypes.c_uint16, "uint16_t"),
    "int32_t": (ctypes.c_int32, "int32_t"), "uint32_t": (ctypes.c_uint32, "uint32_t"),
    "int": (ctypes.c_int, "int"), "unsigned": (ctypes.c_uint, "unsigned"),
    "unsigned int": (ctypes.c_uint, "unsigned int"),
    "int64_t": (ctypes.c_int64, "int64_t"), "uint64_t": (ctypes.c_uint64, "uint64_t"),
    "long": (ctypes.c_long, "long"), "size_t": (ctypes.c_size_t, "size_t"),
    "float": (ctypes.c_float, "float"), "double": (ctypes.c_double, "double"),
    "half": (ctypes.c_float, "float"), "bfloat16_t": (ctypes.c_float, "float"),
}

_KERNEL_RE = re.compile(
    r'(?:extern\s+"C"\s+)?(?:(?:__global__|__aicore__|inline|static)\s+)+void\s+(\w+)\s*\(([^)]*)\)\s*\{')


@dataclass
class Param:
    name: str
    ctype: str       # declared type text
    pointer: bool


@dataclass
class Signature:
    name: str
    params: list[Param]
    extern_c: bool = True


def _strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def parse_kernels(source: str) -> list[Signature]:
    """All ``__global__`` kernel entry points of a source, with their parameters."""
    out = []
    for m in _KERNEL_RE.finditer(_strip_comments(source)):
        if "__global__" not in m.group(0):
            continue
        params = []
        text = m.group(2).strip()
        if text and text != "void":
            for i, p in enumerate(text.split(",")):
                p = " ".join(p.split())
                pm = re.match(r"^(.*?)(\w+)$", p)
                if not pm or not pm.group(1).strip():
                    raise EmulatorError(f"cannot parse kernel parameter {p!r} of {m.group(1)}")
                ty, name = pm.group(1).strip(), pm.group(2)
                pointer = "*" in ty or "GM_ADDR" in ty
                if not pointer:
                    base = re.sub(r"\b(const|volatile)\b", "", ty).strip()
                    if base not in _SCALARS:
                        raise EmulatorError(f"unsupported scalar parameter type {ty!r} for {name!r} "
                                            f"(param {i})")
                    ty = base
                params.append(Param(name, ty, pointer))
        out.append(Signature(m.group(1), params, m.group(0).lstrip().startswith("extern")))
    return out


def _kernel_type_of(source: str, given: Any) -> int:
    if given is not None:
        if isinstance(given, int):
            return given
        g = str(given).upper().replace("KERNEL_TYPE_", "").replace("ASCENDC::", "")
        g = _KT_ALIASES.get(str(given).lower(), g)
        if g not in KERNEL_TYPE_IDS:
            raise EmulatorError(f"unknown kernel_type {given!r}; use one of {sorted(KERNEL_TYPE_IDS)}")
        return KERNEL_TYPE_IDS[g]
    text = _strip_comments(source)
    m = re.search(r"KERNEL_TASK_TYPE_DEFAULT\s*\(\s*(?:AscendC::)?KERNEL_TYPE_(\w+)\s*\)", text)
    if m:
        if m.group(1) not in KERNEL_TYPE_IDS:
            raise EmulatorError(f"kernel type KERNEL_TYPE_{m.group(1)} is not emulated")
        return KERNEL_TYPE_IDS[m.group(1)]
    cube = re.search(r"\b(Mmad|LoadData|Fixpipe|ASCEND_IS_AIC)\b|TPosition::(A1|A2|B1|B2|CO1|C1)\b", text)
    vec = re.search(r"ASCEND_IS_AIV|TPosition::VEC|\b(Add|Sub|Mul|Muls|Adds|Exp|Cast|Duplicate)\s*\(", text)
    if cube and vec:
        return KERNEL_TYPE_IDS["MIX_AIC_1_2"]
    return KERNEL_TYPE_IDS["AIC_ONLY"] if cube else KERNEL_TYPE_IDS["AIV_ONLY"]


def trampoline(sig: Signature) -> str:
    """C++ entry `__emu_entry_<name>` that unpacks a void* array into the kernel's arguments.

    extern "C" kernels are re-declared weak, so a kernel removed by the preprocessor (e.g.
    inside `#if defined(EMU_ARCH_3510)`) leaves a null entry instead of a link error;
    `__emu_has_<name>()` tells which."""
    args = []
    for i, p in enumerate(sig.params):
        if p.pointer:
            args.append(f"({p.ctype})a[{i}]")
        else:
            c = _SCALARS[p.ctype][1]
            expr = f"*({c}*)a[{i}]"
            args.append(f"({p.ctype})({expr})" if p.ctype in ("half", "bfloat16_t") else expr)
    n = sig.name
    if not sig.extern_c:
        return (f'extern "C" int __emu_has_{n}() {{ return 1; }}\n'
                f'extern "C" void __emu_entry_{n}(void** a) {{ (void)a; {n}({", ".join(args)}); }}\n')
    decl = ", ".join(f"{p.ctype} p{i}" for i, p in enumerate(sig.params))
    return (f'extern "C" __attribute__((weak)) void {n}({decl});\n'
            f'extern "C" int __emu_has_{n}() {{ return {n} != nullptr; }}\n'
            f'extern "C" void __emu_entry_{n}(void** a) {{ (void)a; if ({n}) {n}({", ".join(args)}); }}\n')


def full_source(source: str) -> str:
    """The kernel source plus one trampoline per kernel: one build serves every kernel of it."""
    tramp = "".join(trampoline(k) for k in parse_kernels(source))
    return source + '\n#line 1 "emu_trampoline.cpp"\n' + tramp


_lib_lock = threading.Lock()
_libs: dict[str, ctypes.CDLL] = {}
_loaded_sha: dict[str, str] = {}  # kernel binary path -> sha256 of the content opened


def _load(path: str) -> ctypes.CDLL:
    with _lib_lock:
        lib = _libs.get(path)
        if lib is None:
            lib = ctypes.CDLL(path)
            _libs[path] = lib
        return lib


def _runtime(lib: ctypes.CDLL) -> ctypes.CDLL:
    """Bind emu_run/emu_free through the kernel library's handle: dlsym then resolves them in
    the very runtime copy the kernel is linked to (several cache dirs may hold copies with
    the same file name, and the loader binds a new kernel to the first one it loaded)."""
    lib.emu_run.restype = ctypes.c_void_p
    lib.emu_run.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                            ctypes.c_double]
    lib.emu_free.argtypes = [ctypes.c_void_p]
    return lib


def _select(source: str, kernel: str | None) -> Signature:
    kernels = parse_kernels(source)
    if not kernels:
        raise EmulatorError('no `extern "C" __global__ __aicore__ void NAME(...)` kernel found in the source')
    if kernel is None:
        return kernels[0]
    for k in kernels:
        if k.name == kernel:
            return k
    raise EmulatorError(f"kernel {kernel!r} not found; the source defines {[k.name for k in kernels]}")


def compile_source(source: str, kernel: str | None = None, arch: str = "dav-3510") -> cache.KernelBinary:
    """Compile (or fetch from the cache) the kernel; raises EmulatorCompileError on g++ errors."""
    _select(source, kernel)
    return cache.kernel_lib(full_source(source), arch, user_source=source)


def run_source(
    source: str,
    kernel: str | None,
    args: Sequence[Any],
    block_dim: int,
    arch: str = "dav-3510",
    strict: bool = True,
    checks: bool = True,
    kernel_type: Any = None,
    *,
    isolate: bool = True,
    pool: int | None = None,
    timeout: float | None = None,
    timing: bool = True,
    auto_sync: bool = True,
) -> Report:
    """Compile ``source`` with g++ against the emulator and run ``kernel`` over ``block_dim`` blocks.

    ``args`` follow the kernel signature: torch CPU tensors (or None) for GM pointers, written
    in place; Python numbers for scalars. Returns a Report; raises EmulatorError (with
    ``.report``) on kernel errors, deadlocks and crashes, and in strict mode on any race or
    flag error. ``isolate`` (default) runs the kernel in a forked child process so a wild
    pointer cannot take Python down. ``pool``: worker threads (default: CPU count, at most 2
    unless TL_ASCEND_EMU_POOL says otherwise). ``auto_sync`` (default) models bisheng's default
    ``--cce-auto-sync=on``: the syncs it inserts by itself (docs/emulator.md, "Automatic
    synchronisation") are treated as present; pass False for code built with
    ``--cce-auto-sync=off``, such as everything tilelang-ascendc generates.
    """
    arch = cache.normalize_arch(arch)
    sig = _select(source, kernel)
    if len(args) != len(sig.params):
        raise EmulatorError(f"{sig.name} takes {len(sig.params)} arguments "
                            f"({', '.join(p.name for p in sig.params)}), got {len(args)}")
    if not isinstance(block_dim, int) or block_dim < 1:
        raise EmulatorError(f"block_dim must be a positive int, got {block_dim!r}")
    kt = _kernel_type_of(source, kernel_type)
    binary = cache.kernel_lib(full_source(source), arch, user_source=source)
    with _lib_lock:
        kpath = str(cache.loadable_path(binary, _loaded_sha))
        _loaded_sha.setdefault(kpath, binary.sha256)
    klib = _load(kpath)
    rt = _runtime(klib)
    if not getattr(klib, f"__emu_has_{sig.name}")():
        raise EmulatorError(f"kernel {sig.name} is not compiled for {arch} (removed by the preprocessor)")
    entry = ctypes.cast(getattr(klib, f"__emu_entry_{sig.name}"), ctypes.c_void_p).value

    if pool is None:
        pool = int(os.environ.get("TL_ASCEND_EMU_POOL", "0")) or min(2, os.cpu_count() or 1)
    if timeout is None:
        timeout = float(os.environ.get("TL_ASCEND_EMU_TIMEOUT", "300"))
    text = _strip_comments(source)
    mode0 = bool(re.search(r"CrossCoreSetFlag\s*<\s*(0|0x0)\s*,|SyncAll\b", text))

    keep: list[Any] = []
    ptrs = (ctypes.c_void_p * max(1, len(args)))()
    cfg = [f"block_dim {block_dim}", f"kernel_type {kt}", f"checks {int(bool(checks))}", f"pool {pool}",
           f"auto_sync {int(bool(auto_sync))}",
           f"mode0 {int(mode0)}",
           f"trace_cap {int(os.environ.get('TL_ASCEND_EMU_TRACE_CAP', '1000000')) if timing else 0}"]
    copies: list[tuple[torch.Tensor, torch.Tensor]] = []  # (user tensor, contiguous stand-in)
    for i, (p, a) in enumerate(zip(sig.params, args, strict=True)):
        if p.pointer:
            if a is None or (isinstance(a, int) and a == 0):
                ptrs[i] = None
                continue
            if not isinstance(a, torch.Tensor):
                raise EmulatorError(f"argument {p.name!r} is a GM pointer: pass a torch tensor "
                                    f"(got {type(a).__name__})")
            if a.device.type != "cpu":
                raise EmulatorError(f"argument {p.name!r} must be a CPU tensor")
            nbytes = a.numel() * a.element_size()
            # The kernel works on the tensor's own memory (in a forked child, the results
            # are streamed back into it), so only non-contiguous tensors need a stand-in.
            src = a if a.is_contiguous() else a.contiguous()
            if src is not a:
                copies.append((a, src))
            keep.append(src)
            addr = src.data_ptr()
            ptrs[i] = addr
            if nbytes:
                cfg.append(f"gm {addr} {addr + nbytes} {p.name} {i}")
        else:
            if isinstance(a, torch.Tensor):
                a = a.item()
            if not isinstance(a, (int, float, bool)):  # numpy scalars and the like
                if hasattr(a, "__index__"):
                    a = int(a)
                elif hasattr(a, "__float__"):
                    a = float(a)
            if not isinstance(a, (int, float, bool)):
                raise EmulatorError(f"argument {p.name!r} is a scalar ({p.ctype}): pass a Python number")
            ct = _SCALARS[p.ctype][0]
            if ct in (ctypes.c_float, ctypes.c_double):
                v = ct(float(a))
            else:
                v = ct(int(a))
            keep.append(v)
            ptrs[i] = ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
    t0 = time.perf_counter()
    raw = rt.emu_run("\n".join(cfg).encode(), entry, ptrs, int(bool(isolate)), float(timeout))
    wall = time.perf_counter() - t0
    try:
        text_out = ctypes.string_at(raw).decode("utf-8", "replace")
    finally:
        rt.emu_free(raw)
    for user, src in copies:  # results of non-contiguous arguments
        user.copy_(src)
    # The trace (last key, possibly megabytes) is parsed only if the timing model is used.
    marker = ',"trace":'
    cut = text_out.rfind(marker)
    trace_text = None
    if cut >= 0 and text_out.endswith("}"):
        trace_text = text_out[cut + len(marker):-1]
        text_out = text_out[:cut] + "}"
    try:
        d = json.loads(text_out)
        if trace_text is not None and trace_text != "null":
            d["_trace_text"] = trace_text
    except ValueError as e:
        raise EmulatorError(f"emulator returned an unreadable report: {text_out[:500]}") from e
    if "fatal" in d:
        raise EmulatorError(f"emulator failed to launch: {d['fatal']}")
    report = Report.from_json(d, timing_enabled=timing)
    report.wall_seconds = wall
    report.compiled = binary.compiled
    if report.fatal:
        first = report.errors[0]["message"] if report.errors else report.deadlock.get("message", "deadlock")
        raise EmulatorError(f"kernel {sig.name} failed: {first}\n{report.summary()}", report)
    if strict and not report.ok:
        raise EmulatorError(f"kernel {sig.name}: synchronisation problems (strict mode)\n{report.summary()}",
                            report)
    return report
