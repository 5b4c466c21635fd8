"""assign_layout: choose the data layout (and padding) of every buffer for the target arch.

Needs: every buffer has a scope (infer_scope).
Establishes: GM buffers are ND; L1 gemm operands are NZ (fractals of 16 x C0, C0 = 32 bytes) with
rows a multiple of 16 and columns a multiple of C0; L0C accumulators (float32, or int32 for int8
operands) are NZ with 16 x 16 fractals; MX scale tiles (T.gemm_blockscaled) are MX (16 x 2 E8M0
fractals); UB tiles are ND with a row pitch padded to 16 elements
(32 B for fp16, 64 B for fp32), so every row starts 32 B aligned and tiles of different dtypes share
one element pitch (1-byte tiles need a multiple of 32 columns for that). Dtypes each unit takes
come from the arch (``Arch.vector_dtypes``; the gemm's operand pairs are checked at the gemm's
line in lower_tile_ops against ``Arch.cube_dtypes``). The L0A/L0B layouts of the arch
(ZZ/ZN on dav-c220, NZ/ZN on dav-3510) are decided in lower_tile_ops, which creates those buffers.
"""

from __future__ import annotations

from ascend_backend.dtypes import DType
from ascend_backend.errors import AlignmentError, InternalCompilerError, UnsupportedError
from ascend_backend.ir import (
    CopyToPeerL1,
    CopyToPeerUb,
    CopyToPeerUbDual,
    Kernel,
    Layout,
    Program,
    Receive,
    Scope,
    Send,
    SimtRegion,
    TileCopy,
    TileGemm,
    walk,
)

UB_PITCH_ELEMS = 16


def _mx_scale_layout(b, gemm) -> None:
    """An MX scale tile: [rows, K/32] E8M0, rows in 16s and scales in pairs (32-byte fractals)."""
    if b.dtype is not DType.FLOAT8_E8M0FNU or len(b.shape) != 2:
        raise UnsupportedError(
            f"scale tile '{b.name}' of T.gemm_blockscaled is {list(b.shape)} {b.dtype}; MmadMx takes one "
            "float8_e8m0fnu scale per row and 32 K elements, a 2-D [rows, K / 32] tile", loc=gemm.loc,
            hint="allocate it as T.alloc_shared((rows, block_K // 32), 'float8_e8m0fnu') and copy "
            "float8_e8m0fnu scales into it")
    if b.rows % 16 or b.cols % 2:
        raise AlignmentError(
            f"scale tile '{b.name}' is {b.rows} x {b.cols}; MX scales move in fractals of 16 rows x 2 scales "
            "(LoadData_2D_MX page), so its rows must be a multiple of 16 and its columns (K / 32) even",
            loc=gemm.loc, hint="use block sizes that are multiples of 16 and a block_K that is a multiple of 64")
    b.layout = Layout.MX


def _only_copied_or_addressed(kernel: Kernel) -> set:
    """Tiles no vector instruction touches: only copies and SIMT functions (thread-level code)."""
    from .partition import tile_buffers

    simt: set = set()
    other: set = set()
    for s in walk(kernel.body):
        if isinstance(s, SimtRegion):
            simt |= tile_buffers(s)
        elif not isinstance(s, TileCopy | Send | Receive | CopyToPeerL1 | CopyToPeerUb | CopyToPeerUbDual):
            other |= tile_buffers(s)
    return simt - other


def assign_kernel_layouts(kernel: Kernel, arch) -> Kernel:
    buffers = kernel.copy_buffers()
    scale_of = {n: s for s in walk(kernel.body) if isinstance(s, TileGemm) for n in s.scale_tiles}
    addressed = _only_copied_or_addressed(kernel)
    for b in buffers.values():
        if b.scope in (Scope.GM, Scope.LOCAL):
            b.layout = Layout.ND
        elif b.scope is Scope.L1 and b.name in scale_of:
            _mx_scale_layout(b, scale_of[b.name])
        elif b.scope in (Scope.L1, Scope.L0C):
            if len(b.shape) != 2:
                raise UnsupportedError(f"gemm tile '{b.name}' must be 2-D, it has shape {list(b.shape)}", loc=b.loc)
            if b.scope is Scope.L0C and b.dtype in (DType.FLOAT16, DType.BFLOAT16):
                # Mmad accumulates in float32 only (its page lists no float16 L0C): the accumulator is
                # float32 and rounds to its DSL dtype where it is stored (a GPU mma would add in float16)
                b.dtype = DType.FLOAT32
            if b.scope is Scope.L0C and b.dtype not in (DType.FLOAT32, DType.INT32):
                raise UnsupportedError(
                    f"gemm accumulator '{b.name}' has dtype {b.dtype}; the Cube core accumulates in float32 "
                    "(int32 for int8 operands)",
                    loc=b.loc,
                    hint="allocate the accumulator as T.alloc_fragment(..., 'float32') ('int32' for int8 operands)",
                )
            if b.scope is Scope.L1 and b.elem_bytes == 1 and b.cols % 32:
                raise AlignmentError(
                    f"gemm tile '{b.name}' ({b.dtype}) has {b.cols} columns; a 1-byte Cube tile's contiguous "
                    "dimension must be a multiple of 32 (one fractal is 16 x 32 for 1-byte types)",
                    loc=b.loc, hint=f"use a block size that is a multiple of 32 (e.g. {(b.cols + 31) // 32 * 32})")
            for dim, size in zip(("rows", "columns"), b.shape, strict=True):
                if size % 16:
                    raise AlignmentError(
                        f"gemm tile '{b.name}' has {size} {dim}; Cube tiles must be multiples of 16 in both "
                        "dimensions (one fractal is 16 x 16)",
                        loc=b.loc,
                        hint=f"use a block size that is a multiple of 16 (e.g. {max(16, (size + 15) // 16 * 16)}); "
                        "tails of the global shape are handled, tile sizes must be aligned",
                    )
            b.layout = Layout.NZ
        elif b.scope is Scope.UB:
            if b.dtype not in arch.vector_dtypes:
                what = (f"; {b.dtype} exists only on dav-3510 (Ascend 950)" if b.dtype in
                        (DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2) else "")
                raise UnsupportedError(
                    f"tile '{b.name}' has dtype {b.dtype}; vector tiles on {arch.name} take "
                    f"{', '.join(map(str, arch.vector_dtypes))}{what}",
                    loc=b.loc,
                )
            if len(b.shape) > 2:
                raise UnsupportedError(
                    f"tile '{b.name}' has {len(b.shape)} dimensions; vector tiles are 1-D or 2-D",
                    loc=b.loc,
                    hint="flatten the leading dimensions into the row dimension",
                )
            b.layout = Layout.ND
            b.pitch = (b.cols + UB_PITCH_ELEMS - 1) // UB_PITCH_ELEMS * UB_PITCH_ELEMS
            if b.elem_bytes == 1 and b.pitch % 32:
                # 8-bit rows are padded to 32 elements (32 B); a 2-D such tile would no longer share
                # the element pitch of the other tiles, so it needs whole 32-column rows, unless only
                # copies and SIMT functions (which address it by its own pitch) touch it.
                if b.rows > 1 and b.name not in addressed:
                    raise AlignmentError(
                        f"tile '{b.name}' ({b.dtype}) has {b.cols} columns; 2-D 8-bit vector tiles take a multiple "
                        "of 32 columns", loc=b.loc, hint="use a 1-D tile, or 32, 64, ... columns")
                b.pitch = (b.cols + 31) // 32 * 32
        else:
            raise InternalCompilerError(f"buffer {b.name} in scope {b.scope} before lowering", stage="assign_layout")
    return kernel.replace(buffers=buffers)


def assign_layout(program: Program) -> Program:
    """Pick ND/NZ layouts and UB row pitches."""
    arch = program.arch
    out = program.map_kernels(lambda k, lc, p: assign_kernel_layouts(k, arch))
    verify_layout(out)
    return out


def verify_layout(program: Program) -> None:
    """UB rows start 32 B aligned; fractal buffers are 16-aligned."""
    for _, _, k in program.kernels():
        for b in k.buffers.values():
            if b.scope is Scope.UB and (b.pitch * b.elem_bytes) % 32:
                raise InternalCompilerError(f"UB tile {b.name} pitch {b.pitch} is not 32 B aligned",
                                            stage="assign_layout")
            if b.layout is Layout.NZ and any(s % 16 for s in b.shape):
                raise InternalCompilerError(f"NZ tile {b.name} is not 16-aligned", stage="assign_layout")


__all__ = ["assign_layout", "verify_layout", "AlignmentError"]
