"""fold_scale: a per-tensor scale of a gemm's result is applied by the Fixpipe on its way to GM.

Needs: unpartitioned launches (the frontend's IR).
Establishes: every ``TileCopy`` with a ``scale`` copies a whole gemm accumulator into a global
tensor, for an (accumulator, output) dtype pair the arch's Fixpipe scales (``Arch.fixpipe_scaled``);
its scale reads no tile (``verify_fold_scale``).

The form folded, at positions n and n + 1 of one statement list (DeepSeek's per-tensor-scaled FP8
GEMM; an int8 GEMM dequantized by one scale)::

    for i, j in T.Parallel(M, N):
        C_out[i, j] = C_local[i, j] * s          # s * C_local[i, j] too, and a cast to C_out's dtype
    T.copy(C_out, C[by * M, bx * N])

becomes ``copy C_local -> C[by * M, bx * N] scale=s``: the Fixpipe multiplies by ``s`` while it
converts (quantPre QF322BF16_PRE, QF322F16_PRE, DEQF16, QS322BF16_PRE; 随路量化 page), so the
accumulator does not cross to the Vector cores and the kernel may need no Vector core at all.
Conditions, so that the result is the one the T.Parallel computes:

* ``C_local`` is a gemm accumulator, the T.Parallel covers it whole (indices exactly its loop
  variables) and ``C_out`` (a tile of the same shape) is written by it only and read by the copy
  only, which covers it whole into a global tensor of ``C_out``'s dtype;
* ``s`` is a scalar: a constant or a loaded scalar local (``T.alloc_var``), not a tile element;
* the arch's Fixpipe has a scalar-scaled mode for the pair (dav-3510: float32 -> float16/bfloat16 and
  int32 -> float16/bfloat16; dav-c220: int32 -> float16).

Precision: the Fixpipe multiplies with the scale in a (1, 8, 10) float format (the page); codegen
rounds the scale to it, a relative error of at most 2^-11 before the output's own rounding (half
a float16 ulp; a quarter of a bfloat16 one).
"""

from __future__ import annotations

import dataclasses

from tvm import tirx

from ascend_backend.arch import Arch
from ascend_backend.bounds import free_vars
from ascend_backend.errors import InternalCompilerError
from ascend_backend.ir import (
    If,
    Kernel,
    Loop,
    Program,
    Region,
    TileCopy,
    TileGemm,
    TileParallel,
    walk,
)
from ascend_backend.ir.nodes import loaded_buffers

from .partition import is_whole, tile_buffers


def _scaled_load(value, kernel: Kernel, ij: tuple):
    """(accumulator name, scale) when ``value`` is ``[cast](acc[i, j] * s)`` or ``s * acc[i, j]``
    (the accumulator possibly cast to float32 first); else None."""
    if isinstance(value, tirx.Cast):
        value = value.value
    if not isinstance(value, tirx.Mul):
        return None
    for a, s in ((value.a, value.b), (value.b, value.a)):
        acc = a.value if isinstance(a, tirx.Cast) and a.dtype == "float32" else a
        if not (isinstance(acc, tirx.BufferLoad) and len(acc.indices) == 2
                and all(isinstance(x, tirx.Var) and x.same_as(v) for x, v in zip(acc.indices, ij, strict=True))):
            continue
        if isinstance(s, tirx.FloatImm | tirx.IntImm):
            return acc.buffer.name, s
        names = loaded_buffers(s)
        scalar = all(kernel.buffers[n].numel == 1 and not kernel.buffers[n].kind.in_gm
                     for n in names if n in kernel.buffers)
        if names and scalar and not any(isinstance(n, tirx.Var) and any(n.same_as(v) for v in ij)
                                        for n in free_vars(s)):
            return acc.buffer.name, s
    return None


def _fold_pair(par, copy, kernel: Kernel, arch: Arch, accs: set, uses: dict):
    """The scaled copy that replaces (``par``, ``copy``), or None."""
    if not (isinstance(par, TileParallel) and isinstance(copy, TileCopy) and len(par.stores) == 1
            and len(par.vars) == 2 and copy.atomic is None and copy.scale is None):
        return None
    ps = par.stores[0]
    if ps.atomic is not None:
        return None
    out = ps.store.buffer.name
    ij = tuple(par.vars)
    if out not in kernel.buffers or copy.src.buffer != out or len(ps.store.indices) != 2 or not all(
            isinstance(x, tirx.Var) and x.same_as(v) for x, v in zip(ps.store.indices, ij, strict=True)):
        return None
    found = _scaled_load(ps.store.value, kernel, ij)
    if found is None:
        return None
    acc, scale = found
    if acc not in accs or acc == out:
        return None
    A, tile, G = kernel.buffers[acc], kernel.buffers[out], kernel.buffers[copy.dst.buffer]
    if not G.kind.in_gm or G.dtype != tile.dtype or tile.kind.in_gm or tuple(A.shape) != tuple(tile.shape):
        return None
    if tuple(int(x) for x in par.extents) != tuple(int(x) for x in A.shape) or not is_whole(copy.src, tile.shape):
        return None
    if (A.dtype, tile.dtype) not in dict(arch.fixpipe_scaled) or uses.get(out, 0) != 2:
        return None
    return TileCopy(src=Region(acc, (tirx.IntImm("int32", 0),) * 2, tuple(A.shape)), dst=copy.dst, scale=scale,
                    loc=copy.loc)


def _fold_kernel(kernel: Kernel, arch: Arch) -> Kernel:
    accs = {s.c.buffer for s in walk(kernel.body) if isinstance(s, TileGemm)}
    if not accs:
        return kernel
    uses: dict = {}
    for s in walk(kernel.body):
        if not isinstance(s, Loop | If):
            for n in tile_buffers(s):
                uses[n] = uses.get(n, 0) + 1
    dropped: set = set()

    def go(items: list) -> list:
        out: list = []
        n = 0
        while n < len(items):
            s = items[n]
            if isinstance(s, Loop):
                out.append(dataclasses.replace(s, body=go(s.body)))
            elif isinstance(s, If):
                out.append(dataclasses.replace(s, then_body=go(s.then_body), else_body=go(s.else_body)))
            else:
                folded = _fold_pair(s, items[n + 1], kernel, arch, accs, uses) if n + 1 < len(items) else None
                if folded is not None:
                    dropped.add(s.stores[0].store.buffer.name)
                    out.append(folded)
                    n += 2
                    continue
                out.append(s)
            n += 1
        return out

    body = go(kernel.body)
    if not dropped:
        return kernel
    return kernel.replace(body=body, buffers={k: b for k, b in kernel.buffers.items() if k not in dropped})


def verify_fold_scale(program: Program) -> None:
    """Every scaled copy takes a whole gemm accumulator to GM, for a pair the arch's Fixpipe scales."""
    for launch in program.launches:
        for kernel in launch.kernels.values():
            accs = {s.c.buffer for s in walk(kernel.body) if isinstance(s, TileGemm)}
            for s in walk(kernel.body):
                if not isinstance(s, TileCopy) or s.scale is None:
                    continue
                A, G = kernel.buffers.get(s.src.buffer), kernel.buffers.get(s.dst.buffer)
                ok = (A is not None and G is not None and s.src.buffer in accs and G.kind.in_gm
                      and is_whole(s.src, A.shape) and (A.dtype, G.dtype) in dict(program.arch.fixpipe_scaled)
                      and all(kernel.buffers[n].numel == 1 for n in loaded_buffers(s.scale)
                              if n in kernel.buffers))
                if not ok:
                    raise InternalCompilerError(f"fold_scale: the scaled copy {s.src.buffer} -> {s.dst.buffer} is "
                                                "not a whole gemm accumulator stored to GM with a scalar scale",
                                                stage="fold_scale")


def fold_scale(program: Program) -> Program:
    """Fold a per-tensor scale of a gemm's result into the Fixpipe that stores it (module docstring)."""

    out = program.map_kernels(lambda k, lc, p: _fold_kernel(k, p.arch))
    verify_fold_scale(out)
    return out
