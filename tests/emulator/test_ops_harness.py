"""Shared runner for the op-semantics tests (tests/emulator/test_ops_*.py).

`run(source, kernel, args, block_dim=1, arch=..., kernel_type=...)` runs hand-written Ascend C
on the emulator and returns the report as a dict. It uses
`ascend_backend.emulator.run_source` when the package provides it; otherwise it builds the
kernel together with the emulator's C++ sources itself (g++) and drives the runtime's
`emu_run` entry through ctypes. Torch tensors in `args` are the kernel's GM arguments and are
updated in place.
"""
import ctypes
import hashlib
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
EMU = ROOT / "ascend_backend" / "emulator"
ARCHES = ("dav-c220", "dav-3510")
KTYPES = {"aiv": 0, "aic": 1, "mix_aic_1_1": 4, "mix_aic_1_2": 5}
_CACHE = Path(os.environ.get("TL_ASCEND_TEST_CACHE", Path(tempfile.gettempdir()) / "tl_ascend_ops_tests"))
_LIBS = {}


def _run_source():
    try:
        from ascend_backend import emulator  # noqa: WPS433
    except Exception:  # pragma: no cover - package import problems show up elsewhere
        return None
    return getattr(emulator, "run_source", None)


def _arch_flag(arch):
    return "-DEMU_ARCH_C220" if arch == "dav-c220" else "-DEMU_ARCH_3510"


def _emu_hash():
    h = hashlib.sha256()
    for p in sorted(list((EMU / "include").glob("*.h")) + list((EMU / "src").glob("*.cpp"))):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _objects(arch):
    out = _CACHE / f"{_emu_hash()}-{arch}"
    out.mkdir(parents=True, exist_ok=True)
    objs = []
    for src in sorted((EMU / "src").glob("*.cpp")):
        obj = out / (src.stem + ".o")
        if not obj.exists():
            tmp = obj.with_suffix(f".{os.getpid()}.o")
            subprocess.run(["g++", "-std=c++20", "-O2", "-fPIC", "-pthread", _arch_flag(arch), "-I", str(EMU / "include"),
                            "-c", str(src), "-o", str(tmp)], check=True)
            os.replace(tmp, obj)
        objs.append(obj)
    return objs


def _kernel_names(source):
    return re.findall(r'extern\s+"C"\s+__global__\s+__aicore__\s+void\s+(\w+)\s*\(([^)]*)\)', source)


def _build(source, arch):
    key = hashlib.sha256((_emu_hash() + arch + source).encode()).hexdigest()[:20]
    if key in _LIBS:
        return _LIBS[key]
    out = _CACHE / "kernels"
    out.mkdir(parents=True, exist_ok=True)
    so = out / f"{key}.so"
    if not so.exists():
        wrappers = []
        for name, params in _kernel_names(source):
            n = len([p for p in params.split(",") if p.strip()])
            call = ", ".join(f"(uint8_t*)a[{i}]" for i in range(n))
            wrappers.append(f'extern "C" void emu_entry_{name}(void** a) {{ {name}({call}); }}')
        cpp = out / f"{key}.cpp"
        cpp.write_text('#include "kernel_operator.h"\n' + source + "\n" + "\n".join(wrappers) + "\n")
        tmp = so.with_suffix(f".{os.getpid()}.so")
        subprocess.run(["g++", "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", _arch_flag(arch),
                        "-I", str(EMU / "include"), str(cpp), *map(str, _objects(arch)), "-o", str(tmp)], check=True)
        os.replace(tmp, so)
    lib = ctypes.CDLL(str(so))
    lib.emu_run.restype = ctypes.c_void_p
    lib.emu_run.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                            ctypes.c_double]
    lib.emu_free.argtypes = [ctypes.c_void_p]
    _LIBS[key] = lib
    return lib


def run(source, kernel, args, block_dim=1, arch="dav-3510", kernel_type="aiv"):
    rs = _run_source()
    if rs is not None:
        rep = rs(source, kernel, args, block_dim, arch=arch, kernel_type=kernel_type)
        if hasattr(rep, "raw"):
            return rep.raw
        if hasattr(rep, "to_dict"):
            return rep.to_dict()
        return rep if isinstance(rep, dict) else vars(rep)
    lib = _build(source, arch)
    cfg = [f"block_dim {block_dim}", f"kernel_type {KTYPES[kernel_type]}"]
    ptrs = []
    for i, t in enumerate(args):
        assert t.is_contiguous()
        b = t.data_ptr()
        cfg.append(f"gm {b} {b + t.numel() * t.element_size()} arg{i}")
        ptrs.append(b)
    arr = (ctypes.c_void_p * max(1, len(ptrs)))(*ptrs)
    entry = ctypes.cast(getattr(lib, f"emu_entry_{kernel}"), ctypes.c_void_p)
    p = lib.emu_run(" ".join(cfg).encode(), entry, arr, 0, 0.0)
    txt = ctypes.string_at(p).decode()
    lib.emu_free(p)
    return json.loads(txt)


def check_ok(rep):
    """Assert a clean run: no errors, races, flag errors or deadlock."""
    assert not rep.get("errors"), rep.get("errors")
    assert not rep.get("races"), rep.get("races")
    assert not rep.get("flag_errors"), rep.get("flag_errors")
    assert not rep.get("deadlock"), rep.get("deadlock")


def test_harness_reports_an_error():
    """The runner must surface a kernel error (a DataCopy count that is not 32-byte aligned)."""
    src = r'''
extern "C" __global__ __aicore__ void bad(GM_ADDR x) {
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    AscendC::GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)x, 64);
    AscendC::LocalTensor<float> t = b.Get<float>();
    AscendC::DataCopy(t, g, 7);
}
'''
    x = torch.zeros(64)
    rep = run(src, "bad", [x], arch="dav-3510")
    assert rep.get("errors"), rep
    assert any("invalid_param" in json.dumps(e) for e in rep["errors"])
