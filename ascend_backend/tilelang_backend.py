"""The glue that makes ``tilelang.lower(func, target="ascendc")`` run this compiler.

tilelang's engine calls the backend's pass pipeline on the IRModule, splits host and device
functions by their calling convention, then calls the device codegen and reads the kernel
source from the module it returns (``inspect_source``). Our pipeline runs the whole compiler
on each PrimFunc and hands tilelang a device-only stub carrying the Ascend C source (and the
launch facts) as attributes; the device codegen wraps that source in a TVM source module.
"""

from __future__ import annotations

import tvm
from tvm import tirx

SOURCE_ATTR = "ascendc.source"


def lower_module(mod, target):
    """PassPipeline entry: compile every PrimFunc of ``mod`` for ``target``."""
    from tvm.ir import CallingConv

    from .pipeline import compile_kernel
    from .target import parse_target

    arch = parse_target(target)
    funcs = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        result = compile_kernel(func, arch, name=str(gv.name_hint))
        stub = tirx.PrimFunc(func.params, tirx.Evaluate(0), buffer_map=func.buffer_map)
        stub = stub.with_attrs({
            "global_symbol": result.program.name,
            "calling_conv": int(CallingConv.DEVICE_KERNEL_LAUNCH),
            "target": target,
            SOURCE_ATTR: result.source,
            "ascendc.block_dim": result.program.launch.block_dim,
            "ascendc.arch": arch.name,
            "tir.noalias": True,
        })
        funcs[gv] = stub
    return tvm.IRModule(funcs)


def codegen_device(mod, target):
    """DeviceCodegen entry: a source module holding the Ascend C of every kernel."""
    sources = []
    for _, func in mod.functions.items():
        if func.attrs and SOURCE_ATTR in func.attrs:
            sources.append(str(func.attrs[SOURCE_ATTR]))
    create = tvm.ffi.get_global_func("runtime.SourceModuleCreate")
    return create("\n".join(sources), "cce")
