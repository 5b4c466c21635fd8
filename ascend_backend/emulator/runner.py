"""Compile an Ascend C source against the emulator and launch it on torch CPU tensors."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from . import cache, simt
from .report import EmulatorError, Report
from .timing import ASSUMPTIONS as _TIMING_ASSUMPTIONS

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

# A kernel entry: optional `template <...>`, then qualifiers in any order (extern "C",
# __global__, __aicore__, __vector__, __cube__, __mix__(c, v), __schedmode__(m), inline,
# static), `void NAME(params) {`. Only definitions that carry __global__ are kernels.
_QUAL = (r'(?:extern\s+"C"|__global__|__aicore__|__vector__|__cube__|__mix__\s*\(\s*\d+\s*,\s*\d+\s*\)'
         r'|__schedmode__\s*\(\s*\d+\s*\)|inline|static|__inline__)')
_KERNEL_RE = re.compile(
    r'(?:\btemplate\s*<(?P<tparams>[^{};]*?)>\s*)?(?P<quals>(?:' + _QUAL + r'\s*)+)'
    r'\bvoid\s+(?P<name>\w+)\s*\((?P<params>[^)]*)\)\s*\{')

_TASK_TYPE_RE = re.compile(r"KERNEL_TASK_TYPE_DEFAULT\s*\(\s*(?:AscendC::)?KERNEL_TYPE_(\w+)\s*\)")

# __mix__(cube, vec) ratios the docs allow, and the kernel type each one launches
_MIX_TYPES = {(1, 0): "MIX_AIC_1_0", (0, 1): "MIX_AIV_1_0", (1, 1): "MIX_AIC_1_1", (1, 2): "MIX_AIC_1_2"}


@dataclass
class Param:
    name: str
    ctype: str       # declared type text
    pointer: bool
    struct: bool = False   # passed by value, not a known scalar (a tiling struct): bytes in, bytes out


@dataclass
class TemplateParam:
    name: str
    kind: str        # "type" or "value"


@dataclass
class Signature:
    name: str
    params: list[Param]
    extern_c: bool = True
    template: list[TemplateParam] | None = None   # None: not a template kernel
    kernel_type: str | None = None                # from __vector__ / __cube__ / __mix__(c, v)
    task_type: str | None = None                  # KERNEL_TASK_TYPE_DEFAULT(...) in this entry's body
    targs: list[str] | None = None                # the instantiation asked for (template kernels)
    scope: str = ""                               # the enclosing named namespaces ("a::b"), "" at global scope

    @property
    def qualified(self) -> str:
        """The kernel's name as the trampoline (at global scope) spells it."""
        return f"::{self.scope}::{self.name}" if self.scope else f"::{self.name}"

    @property
    def entry(self) -> str:
        """Name of the trampoline symbol (one per kernel and template instantiation)."""
        scope = self.scope.replace("::", "__")
        base = f"__emu_entry_{scope}__{self.name}" if scope else f"__emu_entry_{self.name}"
        if self.targs is None:
            return base
        h = hashlib.sha1(", ".join(self.targs).encode()).hexdigest()[:12]
        return f"{base}__{h}"

    @property
    def display(self) -> str:
        return self.name + (f"<{', '.join(self.targs)}>" if self.targs is not None else "")


def _strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def _split_top(text: str) -> list[str]:
    """Split on commas outside <>, (), [], {}."""
    out, depth, cur = [], 0, []
    for c in text:
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _template_params(text: str) -> list[TemplateParam]:
    out = []
    for p in _split_top(text):
        p = p.split("=", 1)[0].strip()
        m = re.match(r"^(typename|class)\b\s*(?:\.\.\.)?\s*(\w+)?$", p)
        if m:
            out.append(TemplateParam(m.group(2) or "", "type"))
        else:
            nm = re.search(r"(\w+)\s*$", p)
            out.append(TemplateParam(nm.group(1) if nm else "", "value"))
    return out


def _kernel_type_of_quals(quals: str) -> str | None:
    if re.search(r"\b__vector__\b", quals):
        return "AIV_ONLY"
    if re.search(r"\b__cube__\b", quals):
        return "AIC_ONLY"
    m = re.search(r"__mix__\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)", quals)
    if m:
        ratio = (int(m.group(1)), int(m.group(2)))
        if ratio not in _MIX_TYPES:
            raise EmulatorError(f"__mix__{ratio}: the documented ratios are (1, 0), (0, 1), (1, 1), (1, 2)")
        return _MIX_TYPES[ratio]
    return None


_SCOPE_RE = re.compile(r'\bnamespace\s+(?P<ns>[A-Za-z_][\w:]*)?\s*\{|\bextern\s+"C"\s*\{|"(?:\\.|[^"\\\n])*"'
                       r"|'(?:\\.|[^'\\\n])*'|\{|\}")


def _scopes(stripped: str, positions: list[int]) -> list[str]:
    """The named namespaces enclosing each position ("a::b"; unnamed namespaces and extern "C"
    blocks add nothing): braces counted outside string and character literals."""
    stack: list[str | None] = []  # per open brace: a namespace's name, "" for a transparent block, None otherwise
    todo = sorted(range(len(positions)), key=lambda i: positions[i])
    res = [""] * len(positions)
    k = 0
    for m in _SCOPE_RE.finditer(stripped):
        while k < len(todo) and positions[todo[k]] < m.start():
            res[todo[k]] = "::".join(n for n in stack if n)
            k += 1
        t = m.group(0)
        if t[0] in "\"'":
            continue
        if t == "}":
            if stack:
                stack.pop()
        elif t == "{":
            stack.append(None)
        else:
            stack.append(m.group("ns") or "")
    for i in todo[k:]:
        res[i] = "::".join(n for n in stack if n)
    return res


def parse_kernels(source: str) -> list[Signature]:
    """All ``__global__`` kernel entry points of a source, with their parameters (and the named
    namespaces they are declared in)."""
    out = []
    stripped = _strip_comments(source)
    entries = [m for m in _KERNEL_RE.finditer(stripped) if "__global__" in m.group("quals")]
    scopes = _scopes(stripped, [m.start() for m in entries])
    for n, m in enumerate(entries):
        quals = m.group("quals")
        # A source with several entries (one per launch) names each entry's type in its own body.
        body = stripped[m.end():entries[n + 1].start() if n + 1 < len(entries) else len(stripped)]
        tm = _TASK_TYPE_RE.search(body)
        name = m.group("name")
        tparams = _template_params(m.group("tparams")) if m.group("tparams") is not None else None
        params = []
        text = m.group("params").strip()
        if text and text != "void":
            for p in _split_top(text):
                p = " ".join(p.split())
                pm = re.match(r"^(.*?)(\w+)$", p)
                if not pm or not pm.group(1).strip():
                    raise EmulatorError(f"cannot parse kernel parameter {p!r} of {name}")
                ty, pname = pm.group(1).strip(), pm.group(2)
                pointer = "*" in ty or "GM_ADDR" in ty
                struct = False
                if not pointer:
                    base = re.sub(r"\b(const|volatile)\b|&", "", ty).strip()
                    base = " ".join(base.split())
                    if base not in _SCALARS:
                        # a struct (tiling data) or a template-dependent type, resolved at launch
                        struct = True
                    ty = base
                params.append(Param(pname, ty, pointer, struct))
        out.append(Signature(name, params, 'extern "C"' in " ".join(quals.split()), tparams,
                             _kernel_type_of_quals(quals), tm.group(1) if tm else None, scope=scopes[n]))
    return out


def _kernel_type_of(source: str, given: Any, sig: Signature | None = None) -> int:
    if given is not None:
        if isinstance(given, int):
            return given
        g = str(given).upper().replace("KERNEL_TYPE_", "").replace("ASCENDC::", "")
        g = _KT_ALIASES.get(str(given).lower(), g)
        if g not in KERNEL_TYPE_IDS:
            raise EmulatorError(f"unknown kernel_type {given!r}; use one of {sorted(KERNEL_TYPE_IDS)}")
        return KERNEL_TYPE_IDS[g]
    if sig is not None and sig.kernel_type is not None:  # the entry's own qualifier
        return KERNEL_TYPE_IDS[sig.kernel_type]
    text = _strip_comments(source)
    m = _TASK_TYPE_RE.search(text)
    task_type = sig.task_type if sig is not None and sig.task_type is not None else m and m.group(1)
    if task_type:
        if task_type not in KERNEL_TYPE_IDS:
            raise EmulatorError(f"kernel type KERNEL_TYPE_{task_type} is not emulated")
        return KERNEL_TYPE_IDS[task_type]
    cube = re.search(r"\b(Mmad|LoadData|Fixpipe|ASCEND_IS_AIC)\b|TPosition::(A1|A2|B1|B2|CO1|C1)\b", text)
    vec = re.search(r"ASCEND_IS_AIV|TPosition::VEC|\b(Add|Sub|Mul|Muls|Adds|Exp|Cast|Duplicate)\s*\(", text)
    if cube and vec:
        return KERNEL_TYPE_IDS["MIX_AIC_1_2"]
    return KERNEL_TYPE_IDS["AIC_ONLY"] if cube else KERNEL_TYPE_IDS["AIV_ONLY"]


# Kernel libraries are built with -fvisibility=hidden (cache.KERNEL_FLAGS): only these trampolines
# (and the cache id) are exported, so a kernel named like a C library function (getpid, usleep) is
# the function its trampoline calls, never interposed by the library's, and exports nothing a
# library or the runtime could bind to.
_EXPORT = 'extern "C" __attribute__((visibility("default")))'


def trampoline(sig: Signature) -> str:
    """C++ entry `sig.entry` that unpacks a void* array into the kernel's arguments, plus
    `<entry>_argsize(i)` (sizeof each parameter, to check by-value struct arguments).

    extern "C" kernels are re-declared weak (and hidden: a kernel the library does not define
    resolves to null, never to a library's function of that name), so a kernel removed by the
    preprocessor (e.g. inside `#if defined(EMU_ARCH_3510)`) leaves a null entry instead of a
    link error; `__emu_has_<entry>()` tells which. Template kernels are instantiated here with
    the arguments given at launch (``run_source(src, "name<2048, float>", ...)``)."""
    e = sig.entry
    if sig.targs is not None or not sig.extern_c:
        fn = f"&{sig.qualified}" + (f"<{', '.join(sig.targs)}>" if sig.targs is not None else "")
        return (f'{_EXPORT} int __emu_has_{e}() {{ return 1; }}\n'
                f'{_EXPORT} void {e}(void** a) {{ ::emu::entry_call({fn}, a); }}\n'
                f'{_EXPORT} size_t {e}_argsize(int i) {{ return ::emu::entry_argsize({fn}, i); }}\n')
    n = sig.name
    decl = ", ".join(f"{p.ctype} p{i}" for i, p in enumerate(sig.params))
    return (f'extern "C" __attribute__((weak, visibility("hidden"))) void {n}({decl});\n'
            f'{_EXPORT} int __emu_has_{e}() {{ return ::{n} != nullptr; }}\n'
            f'{_EXPORT} void {e}(void** a) {{ if (::{n}) ::emu::entry_call(::{n}, a); }}\n'
            f'{_EXPORT} size_t {e}_argsize(int i) {{ return ::{n} ? ::emu::entry_argsize(::{n}, i) : 0; }}\n')


def full_source(source: str, instantiate: Signature | None = None) -> str:
    """The kernel source plus one trampoline per non-template kernel (one build serves every
    kernel of it) and, for a template kernel, one for the instantiation asked for."""
    sigs = [k for k in parse_kernels(source) if k.template is None]
    if instantiate is not None and instantiate.targs is not None:
        sigs.append(instantiate)
    tramp = "".join(trampoline(k) for k in sigs)
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


@dataclass
class _Runtime:
    run: Any
    free: Any


def _runtime(lib: ctypes.CDLL) -> _Runtime:
    """Bind the runtime's entry points through the kernel library's handle: dlsym then resolves
    them in the very runtime copy the kernel is linked to (several cache dirs may hold copies with
    the same file name, and the loader binds a new kernel to the first one it loaded). Their names
    carry a reserved prefix no kernel can define (and the kernel library exports only its
    trampolines), so a kernel named ``emu_run`` is just a kernel."""
    run = getattr(lib, "__tl_ascend_emu_run")
    run.restype = ctypes.c_void_p
    run.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_double]
    free = getattr(lib, "__tl_ascend_emu_free")
    free.argtypes = [ctypes.c_void_p]
    return _Runtime(run, free)


def _instantiate(sig: Signature, targs: list[str]) -> Signature:
    """The signature of one instantiation: template type parameters substituted in the
    parameter types (so `T scale` with T = float is passed as a float)."""
    assert sig.template is not None
    if len(targs) > len(sig.template):
        raise EmulatorError(f"kernel {sig.name} takes {len(sig.template)} template arguments, got {len(targs)}")
    subst = {tp.name: a for tp, a in zip(sig.template, targs, strict=False) if tp.kind == "type" and tp.name}
    params = []
    for p in sig.params:
        ty = p.ctype
        for k, v in subst.items():
            ty = re.sub(rf"\b{re.escape(k)}\b", v, ty)
        if p.pointer:
            params.append(Param(p.name, ty, True))
        else:
            base = " ".join(re.sub(r"\b(const|volatile)\b|&", "", ty).split())
            params.append(Param(p.name, base, False, base not in _SCALARS))
    return replace(sig, params=params, targs=targs)


def _select(source: str, kernel: str | None) -> Signature:
    kernels = parse_kernels(source)
    if not kernels:
        raise EmulatorError("no kernel entry found in the source: write `__global__ __aicore__ void NAME(...) {...}` "
                            "(optionally extern \"C\", __vector__/__cube__/__mix__(1, 2), template <...>)")
    targs: list[str] | None = None
    if kernel is not None:
        kernel = kernel.strip()
        m = re.match(r"^(?:::)?((?:\w+::)*\w+)\s*(?:<(.*)>)?$", kernel, re.S)
        if not m:
            raise EmulatorError(f"cannot read kernel name {kernel!r}: use NAME, NAMESPACE::NAME or NAME<template args>")
        base = m.group(1)
        if m.group(2) is not None:
            targs = _split_top(m.group(2))
        for k in kernels:
            if base in (k.name, k.qualified[2:]):
                sig = k
                break
        else:
            raise EmulatorError(f"kernel {base!r} not found; the source defines {[k.name for k in kernels]}")
    else:
        sig = kernels[0]
    if sig.template is None:
        if targs is not None:
            raise EmulatorError(f"kernel {sig.name} is not a template; launch it as {sig.name!r}")
        return sig
    if targs is None:
        raise EmulatorError(f"kernel {sig.name} is a template (template <{', '.join(t.name for t in sig.template)}>): "
                            f"name the instantiation, e.g. run_source(src, \"{sig.name}<...>\", ...)")
    return _instantiate(sig, targs)


# C type -> (ctypes type, how a dict value is stored) for struct fields given as a dict
_FIELD_CTYPES: dict[str, Any] = {
    "bool": ctypes.c_bool, "char": ctypes.c_char, "int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8,
    "int16_t": ctypes.c_int16, "uint16_t": ctypes.c_uint16, "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32, "int": ctypes.c_int, "unsigned": ctypes.c_uint,
    "unsigned int": ctypes.c_uint, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64,
    "long": ctypes.c_long, "size_t": ctypes.c_size_t, "float": ctypes.c_float, "double": ctypes.c_double,
    "half": ctypes.c_uint16, "bfloat16_t": ctypes.c_uint16,
}


def _struct_body(source: str, name: str) -> str | None:
    m = re.search(rf"\b(?:struct|class)\s+{re.escape(name)}\s*(?::[^{{]*)?\{{", _strip_comments(source))
    if not m:
        return None
    depth, i = 0, m.end() - 1
    text = _strip_comments(source)
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
    return None


def struct_type(source: str, name: str, _depth: int = 0) -> type[ctypes.Structure]:
    """A ctypes.Structure laid out like the C struct `name` of the source (plain data fields:
    scalars, half/bfloat16_t (as raw bits), fixed arrays, nested structs of the source)."""
    name = name.split("::")[-1]
    body = _struct_body(source, name)
    if body is None or _depth > 8:
        raise EmulatorError(f"cannot find the definition of struct {name!r} in the source: pass the "
                            f"struct's bytes (bytes or a ctypes.Structure) instead of a dict")
    fields: list[tuple[str, Any]] = []
    for decl in body.split(";"):
        decl = " ".join(decl.split())
        if not decl or "(" in decl or decl.startswith(("public", "private", "static", "using", "template")):
            continue
        decl = re.sub(r"\s*=.*$", "", decl)  # default member initialisers
        m = re.match(r"^(?:const\s+)?([\w:]+(?:\s+int)?)\s+(.+)$", decl)
        if not m:
            raise EmulatorError(f"struct {name}: cannot read field declaration {decl!r}")
        ty = m.group(1).split("::")[-1]
        base = _FIELD_CTYPES.get(ty) or struct_type(source, ty, _depth + 1)
        for var in _split_top(m.group(2)):
            vm = re.match(r"^(\w+)((?:\s*\[[^\]]+\])*)$", var.strip())
            if not vm:
                raise EmulatorError(f"struct {name}: cannot read field {var!r}")
            ct = base
            for dim in reversed(re.findall(r"\[([^\]]+)\]", vm.group(2))):
                try:
                    ct = ct * int(dim, 0)
                except ValueError as e:
                    raise EmulatorError(f"struct {name}: array size {dim!r} of field {vm.group(1)!r} is not a "
                                        f"literal; pass the struct's bytes instead of a dict") from e
            fields.append((vm.group(1), ct))
    return type(name, (ctypes.Structure,), {"_fields_": fields})


def _fill(obj: ctypes.Structure, values: dict[str, Any], path: str) -> None:
    names = {f[0]: f[1] for f in obj._fields_}
    for k, v in values.items():
        if k not in names:
            raise EmulatorError(f"{path} has no field {k!r} (fields: {list(names)})")
        ft = names[k]
        if isinstance(v, dict):
            _fill(getattr(obj, k), v, f"{path}.{k}")
        elif isinstance(v, (list, tuple)):
            arr = getattr(obj, k)
            if len(v) > len(arr):
                raise EmulatorError(f"{path}.{k} holds {len(arr)} elements, got {len(v)}")
            for j, x in enumerate(v):
                arr[j] = x
        else:
            setattr(obj, k, float(v) if ft in (ctypes.c_float, ctypes.c_double) else int(v))


def struct_bytes(source: str, p: Param, value: Any, size: int) -> bytes:
    """The bytes of a by-value struct argument (see run_source)."""
    if isinstance(value, ctypes.Structure):
        raw = bytes(value)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
    elif isinstance(value, dict):
        obj = struct_type(source, p.ctype)()
        _fill(obj, value, p.ctype)
        raw = bytes(obj)
    else:
        raise EmulatorError(f"argument {p.name!r} is a struct ({p.ctype}) passed by value: pass its bytes "
                            f"(bytes/bytearray), a ctypes.Structure or a dict of field values "
                            f"(got {type(value).__name__})")
    if size and len(raw) != size:
        raise EmulatorError(f"argument {p.name!r} ({p.ctype}) is {size} bytes in the kernel, got {len(raw)} bytes")
    return raw


def compile_source(source: str, kernel: str | None = None, arch: str = "dav-3510") -> cache.KernelBinary:
    """Compile (or fetch from the cache) the kernel; raises EmulatorCompileError on g++ errors."""
    sig = _select(source, kernel)
    arch = cache.normalize_arch(arch)
    return cache.kernel_lib(full_source(_for_build(source, arch), sig), arch, user_source=source)


def _for_build(source: str, arch: str) -> str:
    """The text g++ compiles: on dav-3510 the SIMT functions rewritten (emulator/simt.py); on
    dav-c220 unchanged, where `__simt_vf__` is a compile error saying SIMT needs dav-3510."""
    if arch == "dav-3510" and simt.has_simt(source):
        return simt.rewrite(source)
    return source


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
    gm_buffers: Sequence[torch.Tensor] | Mapping[str, torch.Tensor] = (),
) -> Report:
    """Compile ``source`` with g++ against the emulator and run ``kernel`` over ``block_dim`` blocks.

    ``kernel``: the entry's name, or for a template kernel the instantiation as in C++
    (``"add_custom<2048, float>"``); None takes the first kernel of the source.
    ``args`` follow the kernel signature: torch CPU tensors (or None) for GM pointers, written
    in place; Python numbers for scalars; for a struct passed by value (tiling data) the
    struct's bytes (``bytes``/``bytearray`` of exactly its size), a ``ctypes.Structure``, or a
    dict of field values (the struct's definition is read from the source). Returns a Report; raises EmulatorError (with
    ``.report``) on kernel errors, deadlocks and crashes, and in strict mode on any race or
    flag error. ``isolate`` (default) runs the kernel in a forked child process so a wild
    pointer cannot take Python down. ``pool``: worker threads (default: CPU count, at most 2
    unless TL_ASCEND_EMU_POOL says otherwise). ``auto_sync`` (default) models bisheng's default
    ``--cce-auto-sync=on``: the syncs it inserts by itself (docs/emulator.md, "Automatic
    synchronisation") are treated as present; pass False for code built with
    ``--cce-auto-sync=off``, such as everything tilelang-ascendc generates. ``gm_buffers``:
    further GM tensors the kernel reaches through pointers stored in GM data rather than through
    its arguments (the data pointers of a ``ListTensorDesc``); a sequence, or a dict naming them
    for the report. Put their ``data_ptr()`` into the descriptor; they are bounds- and
    race-checked like arguments and written back in place.
    """
    arch = cache.normalize_arch(arch)
    sig = _select(source, kernel)
    if len(args) != len(sig.params):
        raise EmulatorError(f"{sig.name} takes {len(sig.params)} arguments "
                            f"({', '.join(p.name for p in sig.params)}), got {len(args)}")
    if not isinstance(block_dim, int) or block_dim < 1:
        raise EmulatorError(f"block_dim must be a positive int, got {block_dim!r}")
    kt = _kernel_type_of(source, kernel_type, sig)
    binary = cache.kernel_lib(full_source(_for_build(source, arch), sig), arch, user_source=source)
    with _lib_lock:
        kpath = str(cache.loadable_path(binary, _loaded_sha))
        _loaded_sha.setdefault(kpath, binary.sha256)
    klib = _load(kpath)
    rt = _runtime(klib)
    if not getattr(klib, f"__emu_has_{sig.entry}")():
        raise EmulatorError(f"kernel {sig.name} is not compiled for {arch} (removed by the preprocessor)")
    entry = ctypes.cast(getattr(klib, sig.entry), ctypes.c_void_p).value
    argsize = getattr(klib, f"{sig.entry}_argsize")
    argsize.restype = ctypes.c_size_t
    argsize.argtypes = [ctypes.c_int]

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
           f"trace_cap {int(os.environ.get('TL_ASCEND_EMU_TRACE_CAP', '1000000')) if timing else 0}",
           # the scalar data cache the trace records hits and misses of (timing model only)
           f"dcache_lines {int(_TIMING_ASSUMPTIONS.get(arch, _TIMING_ASSUMPTIONS['dav-3510'])['scalar_dcache_lines'])}"]
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
        elif p.struct:
            raw = struct_bytes(source, p, a, int(argsize(i)))
            buf = ctypes.create_string_buffer(raw, max(1, len(raw)))
            keep.append(buf)
            ptrs[i] = ctypes.cast(buf, ctypes.c_void_p)
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
    named = gm_buffers.items() if isinstance(gm_buffers, Mapping) else (
        (f"gm_buffers[{i}]", t) for i, t in enumerate(gm_buffers))
    for name, t in named:
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
            raise EmulatorError(f"gm_buffers: {name} must be a CPU torch tensor (got {type(t).__name__})")
        if not t.is_contiguous():
            raise EmulatorError(f"gm_buffers: {name} must be contiguous: the kernel reaches it through a raw address")
        nbytes = t.numel() * t.element_size()
        if nbytes:
            keep.append(t)
            label = re.sub(r"\s+", "_", str(name))
            cfg.append(f"gm {t.data_ptr()} {t.data_ptr() + nbytes} {label} -1")
    t0 = time.perf_counter()
    raw = rt.run("\n".join(cfg).encode(), entry, ptrs, int(bool(isolate)), float(timeout))
    wall = time.perf_counter() - t0
    try:
        text_out = ctypes.string_at(raw).decode("utf-8", "replace")
    finally:
        rt.free(raw)
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
    simt.resolve_pcs(d, binary.path)
    report = Report.from_json(d, timing_enabled=timing)
    report.wall_seconds = wall
    report.compiled = binary.compiled
    report.source = source
    if report.fatal:
        first = report.errors[0]["message"] if report.errors else report.deadlock.get("message", "deadlock")
        raise EmulatorError(f"kernel {sig.display} failed: {first}\n{report.summary()}", report)
    if strict and not report.ok:
        raise EmulatorError(f"kernel {sig.display}: synchronisation problems (strict mode)\n{report.summary()}",
                            report)
    return report
