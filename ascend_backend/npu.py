"""The hardware path: build with bisheng and launch through torch_npu.

Nothing here runs on a machine without an Ascend NPU, CANN's bisheng and torch_npu: every
entry checks first and says which of them is missing. The build command is the one the
Ascend C documentation gives for a kernel library (``-xasc``, ``--npu-arch``), with a small host
wrapper that launches the kernel with ``<<<blockDim, nullptr, stream>>>``.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import buildcache
from .errors import RuntimeUnavailableError


def npu_unavailable_reason() -> str | None:
    """None when the NPU runtime can work here, else why not (checked without importing torch_npu
    unless bisheng is present, since importing it without CANN breaks torch)."""
    if shutil.which("bisheng") is None:
        return "bisheng (the CANN Ascend C compiler) is not on PATH"
    try:
        import importlib.util

        if importlib.util.find_spec("torch_npu") is None:
            return "torch_npu is not installed (pip install tilelang-ascendc[npu], with CANN set up)"
        import torch
        import torch_npu  # noqa: F401

        if not torch.npu.is_available():
            return "torch_npu found no NPU device"
    except Exception as exc:  # noqa: BLE001 - any failure means no usable NPU
        return f"torch_npu failed to load: {exc}"
    return None


def bisheng_command(source_path: str, out_path: str, arch) -> list[str]:
    """The exact bisheng command that builds ``source_path`` into a loadable library."""
    cann = os.environ.get("ASCEND_HOME_PATH", os.environ.get("ASCEND_TOOLKIT_HOME", ""))
    inc = [f"-I{cann}/include", f"-I{cann}/compiler/tikcpp/tikcfw",
           f"-I{cann}/compiler/tikcpp/tikcfw/impl", f"-I{cann}/compiler/tikcpp/tikcfw/interface"] if cann else []
    libs = [f"-L{cann}/lib64"] if cann else []
    # --cce-auto-sync=off: the device runs exactly the syncs the generated code carries, which
    # are what the emulator checked (run_source(auto_sync=False)); bisheng's default is on.
    return ["bisheng", "-O2", "-std=c++17", f"--npu-arch={arch.bisheng_arch}", "-xasc", "--cce-auto-sync=off",
            "-shared", "-fPIC",
            *inc, source_path, "-o", out_path, *libs, "-lascendcl", "-lruntime"]


def host_wrapper(program) -> str:
    """A C entry ``launch_<name>(stream, blocks_0, ..., args...)`` that launches the program's kernels
    in order with <<<>>>, launch n over ``blocks_n`` blocks (the callable computes them for each
    call: a grid may be sized by the arguments): tensors as device pointers, scalars of their own
    C type (16-bit floats as float, converted by the call), the symbolic dimensions, then the GM
    workspace when the program has one."""
    from .cnames import ENTRY_NAMESPACE
    from .codegen import entry_arg_names

    decl = [f"uint32_t blocks_{n}" for n in range(len(program.launches))]
    call = entry_arg_names(program)  # the entry's own argument names (DSL names made safe C++)
    for p, c in zip(program.params, call, strict=False):
        decl.append(f"uint8_t* {c}" if p.is_tensor else f"{p.dtype.host_ctype} {c}")
    for v, c in zip(program.entry_shape_vars(), call[len(program.params):], strict=True):
        decl.append(f"{v.dtype.ctype} {c}")
    if program.has_workspace:
        decl.append("uint8_t* workspace")
        call.append("workspace")
    args = ", ".join(call)
    # a launch of 0 blocks (a grid extent of 0 at this call) is skipped: numBlocks is at least 1
    launches = "".join(f"    if (blocks_{n} > 0) {ENTRY_NAMESPACE}::{program.entry_name(n)}"
                       f"<<<blocks_{n}, nullptr, stream>>>({args});\n"
                       for n in range(len(program.launches)))
    return f'\nextern "C" void launch_{program.name}(void* stream, {", ".join(decl)}) {{\n{launches}}}\n'


def _ctype_arg(dtype, value):
    """A ctypes value for a scalar argument passed as ``dtype.host_ctype``."""
    table = {"float": ctypes.c_float, "double": ctypes.c_double, "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16,
             "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64, "uint8_t": ctypes.c_uint8,
             "uint16_t": ctypes.c_uint16, "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
             "bool": ctypes.c_bool}
    return table[dtype.host_ctype](value)


def _bisheng_build(source_path: str, out_path: str, arch) -> None:
    proc = subprocess.run(bisheng_command(source_path, out_path, arch), capture_output=True, text=True)
    if proc.returncode:
        if buildcache.no_space_in(proc.stderr):
            raise buildcache.BuildEnvironmentError(
                f"error: bisheng ran out of disk space (cache {buildcache.cache_root()}): free disk space, run "
                "`tl-ascend cache prune`, or set TL_ASCEND_CACHE_DIR to another disk")
        raise RuntimeUnavailableError(f"bisheng failed for kernel {Path(source_path).stem}:\n{proc.stderr[-4000:]}")


def npu_library(full_source: str, name: str, arch, build: Callable[[str, str, Any], None] | None = None) -> Path:
    """The bisheng-built library of ``full_source`` from the NPU build cache
    (``$TL_ASCEND_CACHE_DIR/npu``), building it when missing or when the entry fails its check:
    like the emulator's entries (ascend_backend/buildcache.py) it is loaded only when its meta
    names this kernel's key and fields, its SHA-256 matches, and the library carries its key.
    ``build(source_path, out_path, arch)`` builds (default: bisheng)."""
    digest = hashlib.sha256((full_source + arch.name).encode()).hexdigest()[:16]
    root = buildcache.ensure_dir(buildcache.cache_root() / "npu")
    lib = root / f"{name}-{digest}.so"
    ident = buildcache.identity("npu", lib.stem, name=name, arch=arch.name,
                                source_sha256=hashlib.sha256(full_source.encode()).hexdigest())
    if buildcache.verify(lib, ident):
        return lib
    with buildcache.guard(root, f"building {lib.name}"):
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=buildcache.temp_prefix("npu")))
        try:
            src = tmp / f"{name}.cpp"
            # host-side string naming the entry, so that the library identifies itself
            src.write_text(full_source + buildcache.id_definition("__tl_ascend_cache_id_npu", lib.stem))
            out = tmp / "k.so"
            (build or _bisheng_build)(str(src), str(out), arch)
            buildcache.publish(out, lib, ident)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    buildcache.auto_prune()
    if not buildcache.verify(lib, ident):
        raise RuntimeUnavailableError(f"the NPU build of {name} does not carry its cache key; it was not loaded")
    return lib


class NpuLauncher:
    """Builds a kernel with bisheng once and launches it on the current NPU stream."""

    def __init__(self, source: str, program) -> None:
        reason = npu_unavailable_reason()
        if reason:
            raise RuntimeUnavailableError(f"cannot run on an NPU: {reason}", hint="use runtime='emulator'")
        self.program = program
        name, arch = program.name, program.arch
        lib = npu_library(source + host_wrapper(program), name, arch)
        self.lib = ctypes.CDLL(str(lib))
        self.fn = getattr(self.lib, f"launch_{name}")

    def __call__(self, args: list, block_dims: list) -> None:
        """Launch on the current stream; ``args`` are the kernel entry's arguments (the PrimFunc's,
        the symbolic dimensions, the workspace last), ``block_dims`` each launch's block count."""
        import torch

        stream = torch.npu.current_stream().npu_stream
        cargs = [ctypes.c_void_p(stream), *(ctypes.c_uint32(b) for b in block_dims)]
        params = list(self.program.params)
        dims = self.program.entry_shape_vars()
        for n, a in enumerate(args):
            if n < len(params):
                p = params[n]
                cargs.append(ctypes.c_void_p(a.data_ptr()) if p.is_tensor else _ctype_arg(p.dtype, a))
            elif n < len(params) + len(dims):
                cargs.append(_ctype_arg(dims[n - len(params)].dtype, a))
            else:  # the workspace
                cargs.append(ctypes.c_void_p(a.data_ptr()))
        self.fn(*cargs)
        torch.npu.synchronize()
