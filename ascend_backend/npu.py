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
    return ["bisheng", "-O2", "-std=c++17", f"--npu-arch={arch.bisheng_arch}", "-xasc", "-shared", "-fPIC",
            *inc, source_path, "-o", out_path, *libs, "-lascendcl", "-lruntime"]


def host_wrapper(program) -> str:
    """A C entry ``launch_<name>(stream, args...)`` that launches the program's kernels in order with
    <<<>>> (each with its own block count): tensors as device pointers, scalars of their own C type
    (16-bit floats as float, converted by the call), then the GM workspace when the program has one."""
    decl, call = [], []
    for p in program.params:
        decl.append(f"uint8_t* {p.name}" if p.is_tensor else f"{p.dtype.host_ctype} {p.name}")
        call.append(p.name)
    if program.workspace_bytes:
        decl.append("uint8_t* workspace")
        call.append("workspace")
    launches = "".join(f"    {program.entry_name(n)}<<<{lc.block_dim}, nullptr, stream>>>({', '.join(call)});\n"
                       for n, lc in enumerate(program.launches))
    return (f'\nextern "C" void launch_{program.name}(void* stream{", " if decl else ""}{", ".join(decl)}) '
            f'{{\n{launches}}}\n')


def _ctype_arg(dtype, value):
    """A ctypes value for a scalar argument passed as ``dtype.host_ctype``."""
    table = {"float": ctypes.c_float, "double": ctypes.c_double, "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16,
             "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64, "uint8_t": ctypes.c_uint8,
             "uint16_t": ctypes.c_uint16, "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
             "bool": ctypes.c_bool}
    return table[dtype.host_ctype](value)


class NpuLauncher:
    """Builds a kernel with bisheng once and launches it on the current NPU stream."""

    def __init__(self, source: str, program) -> None:
        reason = npu_unavailable_reason()
        if reason:
            raise RuntimeUnavailableError(f"cannot run on an NPU: {reason}", hint="use runtime='emulator'")
        self.program = program
        name, arch = program.name, program.arch
        full = source + host_wrapper(program)
        digest = hashlib.sha256((full + arch.name).encode()).hexdigest()[:16]
        root = os.path.join(os.path.expanduser(os.environ.get("TL_ASCEND_CACHE_DIR", "~/.cache/tilelang-ascendc")),
                            "npu")
        os.makedirs(root, exist_ok=True)
        lib = os.path.join(root, f"{name}-{digest}.so")
        if not os.path.exists(lib):
            with tempfile.TemporaryDirectory() as tmp:
                src = os.path.join(tmp, f"{name}.cpp")
                with open(src, "w") as f:
                    f.write(full)
                out = os.path.join(tmp, "k.so")
                proc = subprocess.run(bisheng_command(src, out, arch), capture_output=True, text=True)
                if proc.returncode:
                    raise RuntimeUnavailableError(f"bisheng failed for kernel {name}:\n{proc.stderr[-4000:]}")
                os.replace(out, lib)
        self.lib = ctypes.CDLL(lib)
        self.fn = getattr(self.lib, f"launch_{name}")

    def __call__(self, args: list) -> None:
        """Launch on the current stream; ``args`` are the kernel's arguments, workspace last."""
        import torch

        stream = torch.npu.current_stream().npu_stream
        cargs = [ctypes.c_void_p(stream)]
        for n, a in enumerate(args):
            p = self.program.params[n] if n < len(self.program.params) else None
            if p is None or p.is_tensor:  # a tensor, or the workspace after the parameters
                cargs.append(ctypes.c_void_p(a.data_ptr()))
            else:
                cargs.append(_ctype_arg(p.dtype, a))
        self.fn(*cargs)
        torch.npu.synchronize()
