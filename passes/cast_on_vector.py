"""cast_on_vector: a gemm result stored in a dtype the arch's Fixpipe does not write is converted by
the Vector cores.

Needs: unpartitioned launches (after fold_scale).
Establishes: every ``TileCopy`` of a gemm accumulator into a global tensor is of an (accumulator,
output) dtype pair the arch's Fixpipe writes (``Arch.fixpipe_dtypes``), or of one that neither the
Fixpipe nor the vector Cast takes (lower_tile_ops refuses it at its line) (``verify_cast_on_vector``).

The Ascend 950's Fixpipe writes a float32 accumulator as float32, float16, bfloat16, int8 or
float8_e4m3fn, not float8_e5m2; its vector Cast takes float32 -> float8_e5m2. So::

    T.copy(C_local, C[by * M, bx * N])        # C is float8_e5m2

becomes, with a fresh fragment ``C_local_e5m2`` of the accumulator's shape::

    for i, j in T.Parallel(M, N):
        C_local_e5m2[i, j] = T.Cast("float8_e5m2", C_local[i, j])
    T.copy(C_local_e5m2, C[by * M, bx * N])

and partition then moves the accumulator to the Vector cores as for any element-wise code on it
(TileLang's gemm_fp8 example with an e5m2 output). Only a copy of the whole accumulator, without
an atomic or a scale, is rewritten.
"""

from __future__ import annotations

import dataclasses

from tvm import tirx

from ascend_backend.arch import Arch
from ascend_backend.errors import InternalCompilerError
from ascend_backend.ir import (
    Buffer,
    BufferKind,
    Kernel,
    ParallelStore,
    Program,
    TileCopy,
    TileGemm,
    TileParallel,
    fresh_name,
    map_body,
    walk,
)

from .partition import full_region, is_whole


def _fixpipe_writes(arch: Arch, acc: Buffer, out: Buffer) -> bool:
    return out.dtype in dict(arch.fixpipe_dtypes).get(acc.dtype, ())


def _needs_vector_cast(s, buffers: dict, accs: set, arch: Arch) -> bool:
    if not (isinstance(s, TileCopy) and s.src.buffer in accs and s.atomic is None and s.scale is None):
        return False
    acc, out = buffers[s.src.buffer], buffers[s.dst.buffer]
    return (out.kind.in_gm and not _fixpipe_writes(arch, acc, out) and (acc.dtype, out.dtype) in arch.vector_casts
            and is_whole(s.src, acc.shape) and len(acc.shape) == 2)


def _cast_kernel(kernel: Kernel, arch: Arch) -> Kernel:
    accs = {s.c.buffer for s in walk(kernel.body) if isinstance(s, TileGemm)}
    buffers = dict(kernel.buffers)
    if not any(_needs_vector_cast(s, buffers, accs, arch) for s in walk(kernel.body)):
        return kernel
    made: dict = {}  # (accumulator, dtype) -> the fragment it is cast into

    def rewrite(s: TileCopy) -> list:
        acc, out = buffers[s.src.buffer], buffers[s.dst.buffer]
        key = (acc.name, out.dtype)
        if key not in made:
            name = fresh_name(f"{acc.name}_{out.dtype}", set(buffers))
            buffers[name] = Buffer(name=name, shape=acc.shape, dtype=out.dtype, kind=BufferKind.FRAGMENT, loc=acc.loc,
                                   role=f"{acc.name} converted to {out.dtype} by the Vector cores (the Fixpipe does "
                                   f"not write {out.dtype})")
            made[key] = name
        tmp = buffers[made[key]]
        i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
        src = tirx.decl_buffer(acc.shape, str(acc.dtype), acc.name)
        dst = tirx.decl_buffer(tmp.shape, str(tmp.dtype), tmp.name)
        store = tirx.BufferStore(dst, tirx.Cast(str(out.dtype), tirx.BufferLoad(src, [i, j])), [i, j])
        cast = TileParallel(vars=(i, j), extents=tuple(int(x) for x in acc.shape),
                            stores=(ParallelStore(store, s.loc),), loc=s.loc)
        return [cast, dataclasses.replace(s, src=full_region(tmp))]

    body = map_body(kernel.body, lambda s: rewrite(s) if _needs_vector_cast(s, buffers, accs, arch) else [s])
    return kernel.replace(body=body, buffers=buffers)


def cast_on_vector(program: Program) -> Program:
    """Convert on the Vector cores the gemm results the Fixpipe cannot write (module docstring)."""

    out = program.map_kernels(lambda k, lc, p: _cast_kernel(k, p.arch))
    verify_cast_on_vector(out)
    return out


def verify_cast_on_vector(program: Program) -> None:
    """No whole-accumulator copy into GM is left that the Fixpipe cannot write but the vector Cast could."""
    for lc in program.launches:
        for k in lc.kernels.values():
            accs = {s.c.buffer for s in walk(k.body) if isinstance(s, TileGemm)}
            for s in walk(k.body):
                if _needs_vector_cast(s, k.buffers, accs, program.arch):
                    raise InternalCompilerError(f"cast_on_vector left '{s.src.buffer}' -> '{s.dst.buffer}'",
                                                stage="cast_on_vector")
