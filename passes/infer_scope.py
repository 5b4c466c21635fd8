"""infer_scope: give every tile buffer its home in the Ascend memory hierarchy.

Needs: partitioned kernels (each runs on one core kind) with their tile ops.
Establishes: every buffer has exactly one scope. GM for parameters and workspaces; on the AIC a
gemm accumulator lives in L0C and a gemm operand (or an MX scale tile) in L1 (loaded into L0A/L0B per gemm: those
buffers are created by lower_tile_ops); on the AIVs every tile is in UB; a scalar local
(T.alloc_local / T.alloc_var) in LOCAL.
"""

from __future__ import annotations

from ascend_backend.errors import InternalCompilerError, UnsupportedError
from ascend_backend.ir import BufferKind, Core, Kernel, Loop, Program, Scope, TileGemm, walk

from .partition import tile_buffers


def infer_kernel_scopes(kernel: Kernel) -> Kernel:
    buffers = kernel.copy_buffers()
    operands: dict = {}
    accs: dict = {}
    scales: set = set()
    for s in walk(kernel.body):
        if isinstance(s, TileGemm):
            for name in s.inputs:
                operands.setdefault(name, s)
            scales |= set(s.scale_tiles)
            accs.setdefault(s.c.buffer, s)
    used = {n for s in walk(kernel.body) if not isinstance(s, Loop) for n in tile_buffers(s)}
    for name, buf in buffers.items():
        if buf.kind is BufferKind.PARAM:
            buf.scope, buf.role = Scope.GM, "kernel argument"
        elif buf.kind is BufferKind.WORKSPACE:
            buf.scope = Scope.GM
        elif buf.kind is BufferKind.GLOBAL:
            buf.scope, buf.role = Scope.GM, "T.alloc_global (GM allocated by the launcher)"
        elif buf.kind is BufferKind.LOCAL:
            buf.scope, buf.role = Scope.LOCAL, "scalar local"
        elif kernel.core is Core.AIC:
            if name in accs:
                buf.scope, buf.role = Scope.L0C, "gemm accumulator"
            elif name in scales:
                buf.scope, buf.role = Scope.L1, "gemm scale factors (MX)"
            elif name in operands:
                buf.scope, buf.role = Scope.L1, "gemm operand"
            elif name in used:
                # Point at the first statement the Cube runs with the tile (its allocation says less).
                at = next((x for x in walk(kernel.body) if not isinstance(x, Loop) and name in tile_buffers(x)), None)
                raise UnsupportedError(f"tile '{name}' is used on the Cube core but is neither a gemm operand nor a "
                                       "gemm accumulator", loc=getattr(at, "loc", None) or buf.loc,
                                       hint="Cube code moves gemm operands in and accumulators out; element-wise work "
                                       "belongs to T.Parallel. The Cube core has no UB: where it needs values as "
                                       "indices or bounds (a gather's rows), read them from the global tensor, e.g. "
                                       "into a T.alloc_var local")
            else:
                buf.scope, buf.role = Scope.UB, "vector tile"
        else:
            buf.scope, buf.role = Scope.UB, "vector tile"
    out = kernel.replace(buffers=buffers)
    return out


def infer_scope(program: Program) -> Program:
    """Assign GM/L1/L0C/UB/LOCAL to every buffer by the core kind that uses it and how."""
    out = program.map_kernels(lambda k, lc, p: infer_kernel_scopes(k))
    verify_scope(out)
    return out


def verify_scope(program: Program) -> None:
    """Every buffer has exactly one scope, and on-chip ones belong to their kernel's core kind."""
    for _, core, k in program.kernels():
        for b in k.buffers.values():
            if not isinstance(b.scope, Scope):
                raise InternalCompilerError(f"buffer {b.name} has no scope after infer_scope", stage="infer_scope")
            owner = b.scope.core
            used = any(b.name in tile_buffers(s) for s in walk(k.body) if not isinstance(s, Loop))
            if owner is not None and core is not None and owner is not core and used:
                raise InternalCompilerError(f"buffer {b.name} in {b.scope} is used on the {core}", stage="infer_scope")
