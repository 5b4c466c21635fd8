"""lower_tile_ops: turn every tile op into Ascend ops, each on its pipe with the buffers it touches.

Needs: scopes and layouts assigned (infer_scope, assign_layout).
Establishes: the bodies hold only Loops, Ifs, scalar stores and Ascend ops (``AscOp``
subclasses: one class per template macro, each declaring its pipe and the buffers it reads and
writes). Copies become DataCopy / DataCopyPad (GM <-> UB, with tails), Nd2Nz (GM -> L1) and Fixpipe
(L0C -> GM, with the cast); a gemm becomes LoadData into L0A/L0B (buffers created here, in the
arch's fractal layouts) and Mmad, stepped through K in chunks when the operand tiles do not fit
L0A/L0B twice (ping/pong buffers inside a pipelined loop with num_stages > 1); fills, reduces and
T.Parallel bodies become vector ops (see lower_parallel). Where the arches differ the lowering
picks distinct op kinds (LoadData2D / LoadData2DV2, FixpipeToGmV220 / FixpipeToGmArch3510).
Tails of global shapes become runtime-valid extents (``Valid``); a tail the hardware path cannot
take is rejected with the dimension named. Cross-core flags whose pipe the route pass left open
(``orders``) get the pipe of the ops they order.
"""

from __future__ import annotations

import dataclasses

from tvm import tirx

from ascend_backend.dtypes import DType
from ascend_backend.errors import AlignmentError, InternalCompilerError, UnsupportedError
from ascend_backend.ir import (
    AscOp,
    Buffer,
    BufferKind,
    CopyForm,
    CopyGmToL1,
    CopyGmToUb,
    CopyToPeerL1,
    CopyToPeerUb,
    CopyUbToGm,
    CopyUbToPeerL1,
    Core,
    CrossCoreSet,
    CrossCoreSetOp,
    CrossCoreWait,
    CrossCoreWaitOp,
    FirstIteration,
    FixpipeToGmArch3510,
    FixpipeToGmV220,
    FixpipeToPeerUb,
    GmWindow,
    If,
    Kernel,
    KFractals,
    Layout,
    LoadData2D,
    LoadData2DV2,
    Loop,
    LoopKind,
    Mmad,
    Pipe,
    Print,
    Program,
    QuantMode,
    ReduceKind,
    Region,
    ScalarStore,
    Scope,
    TileAccumulate,
    TileCopy,
    TileCumsum,
    TileFill,
    TileGemm,
    TileParallel,
    TileReduce,
    Valid,
    VecBinary,
    VecBrcb,
    VecScanRows,
    VecUnary,
    VecWholeReduce,
    walk,
)

from .lower_parallel import ParallelLowerer, VectorEmitter, const_value


def _is_zero(e) -> bool:
    return isinstance(e, int) and e == 0 or isinstance(e, tirx.IntImm) and int(e.value) == 0


def gm_window(buf: Buffer, region: Region, tile_shape: tuple, loc) -> GmWindow:
    """Map a GM region onto a (rows, cols) tile: innermost dim = columns, next non-unit dim = rows."""
    shape = list(buf.shape)
    base = list(region.base)
    ext = [int(e) for e in region.extents]
    if len(base) != len(shape):
        raise UnsupportedError(f"region of '{buf.name}' has {len(base)} indices for a {len(shape)}-D tensor", loc=loc)
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    rows_t, cols_t = (tile_shape[0], tile_shape[1]) if len(tile_shape) == 2 else (1, tile_shape[0])
    if len(shape) == 1:
        row_dim = None
    else:
        non_unit = [d for d in range(len(shape) - 1) if ext[d] != 1]
        if len(non_unit) > 1 or ext[-1] not in (cols_t,) and not (rows_t == 1 and ext[-1] == cols_t):
            raise UnsupportedError(
                f"copy between '{buf.name}' region {ext} and a tile of shape {list(tile_shape)}: the tile's last "
                "dimension must be the tensor's innermost dimension",
                loc=loc,
                hint="copy a window whose last extent equals the tile's column count",
            )
        row_dim = non_unit[0] if non_unit else len(shape) - 2
    if ext[-1] != cols_t or (row_dim is not None and ext[row_dim] != rows_t and rows_t != 1):
        raise UnsupportedError(
            f"copy region of '{buf.name}' has extents {ext}, which do not match the tile shape {list(tile_shape)}",
            loc=loc,
        )
    cols_dim = len(shape) - 1

    def valid(d, n) -> Valid:
        if d is None or (shape[d] % n == 0 and shape[d] >= n):
            return Valid(n)
        return Valid(n, shape[d], base[d])

    vr = valid(row_dim, rows_t) if rows_t > 1 else Valid(1)
    vc = valid(cols_dim, cols_t)
    row_stride = strides[row_dim] if row_dim is not None else shape[-1]
    return GmWindow(buf.name, tuple(base), tuple(strides), rows_t, cols_t, row_stride, vr, vc)


def column_of(gm: Buffer, region: Region, tile_shape: tuple) -> tuple[int, int] | None:
    """(GM dimension, length) when ``region`` is a strided column copied to or from a (n,) or
    (1, n) tile: its only non-unit extent is n, on a dimension other than the innermost."""
    ext = [int(e) if isinstance(e, int | tirx.IntImm) else -1 for e in region.extents]
    n = 1
    for d in tile_shape:
        n *= int(d)
    if len(tile_shape) > 1 and tile_shape[0] != 1 or n == 1 or len(ext) < 2:
        return None
    non_unit = [d for d, e in enumerate(ext) if e != 1]
    if len(non_unit) == 1 and non_unit[0] != len(ext) - 1 and ext[non_unit[0]] == n:
        return non_unit[0], n
    return None


# Suffixes of the two L0 buffers a K-stepped gemm alternates between (multi_buffer leaves them alone).
PINGPONG = ("_ping", "_pong")


class TileLowerer:
    def __init__(self, kernel: Kernel, arch, compact_temps: bool = False) -> None:
        self.kernel = kernel
        self.buffers = kernel.copy_buffers()
        self.arch = arch
        self.vec = VectorEmitter(self.buffers, arch, compact=compact_temps)
        self.loop_stack: list = []
        self.pending_clear: dict[str, int] = {}  # L0C buffer -> loop depth at T.clear
        self.valid_extents: dict[str, tuple] = {}  # L1 buffer -> (valid rows, valid cols, global shape, loc)
        # UB tile -> runtime valid column count, when its last fill from GM may have had a column
        # tail (the columns past it hold stale data, which reductions must not see).
        self.ub_valid_cols: dict[str, Valid] = {}
        self._gemms = [s for s in walk(kernel.body) if isinstance(s, TileGemm)]

    # ------------------------------------------------------------ driver
    def run(self) -> Kernel:
        body = resolve_cross_core_pipes(self.lower_body(self.kernel.body))
        return self.kernel.replace(body=body, buffers=self.buffers)

    def lower_body(self, body: list) -> list:
        out: list = []
        for s in body:
            if isinstance(s, Loop):
                self.loop_stack.append(s)
                inner = self.lower_body(s.body)
                self.loop_stack.pop()
                out.append(dataclasses.replace(s, body=inner))
            elif isinstance(s, If):
                out.append(dataclasses.replace(s, then_body=self.lower_body(s.then_body),
                                               else_body=self.lower_body(s.else_body)))
            elif isinstance(s, ScalarStore | Print):
                out.append(s)
            else:
                rule = self.RULES.get(type(s))
                if rule is None:
                    raise InternalCompilerError(f"no lowering for {type(s).__name__}", stage="lower_tile_ops")
                for op in rule(self, s):
                    if op.loc is None:
                        op.loc = s.loc
                    self._track_valid(op)
                    out.append(op)
        return out

    def _track_valid(self, op) -> None:
        """Propagate the valid column count of UB tiles through the ops that write them."""
        if isinstance(op, CopyGmToUb):
            if op.window.valid_cols.tail:
                self.ub_valid_cols[op.ub] = op.window.valid_cols
            else:
                self.ub_valid_cols.pop(op.ub, None)
        elif isinstance(op, AscOp) and op.pipe is Pipe.V:
            vcs = [self.ub_valid_cols[r] for r in op.reads if r in self.ub_valid_cols]
            for w in op.writes:
                if vcs and self.buffers[w].cols == max(
                        self.buffers[r].cols for r in op.reads if r in self.ub_valid_cols):
                    self.ub_valid_cols[w] = sorted(vcs, key=str)[0]
                elif op.macro != "vec_fold_loop":
                    self.ub_valid_cols.pop(w, None)

    # ------------------------------------------------------------ copy
    def lower_copy(self, s: TileCopy) -> list:
        src = self.buffers[s.src.buffer]
        dst = self.buffers[s.dst.buffer]
        key = (src.scope, dst.scope)
        if key == (Scope.GM, Scope.UB):
            return self.copy_gm_ub(s, src, dst)
        if key == (Scope.UB, Scope.GM):
            return self.copy_ub_gm(s, src, dst)
        if key == (Scope.GM, Scope.L1):
            return [self.copy_gm_l1(s, src, dst)]
        if key == (Scope.L0C, Scope.GM):
            return [self.fixpipe_gm(s, src, dst)]
        if s.atomic is not None and dst.scope is Scope.UB:
            # One vector program per block: an atomic add into a tile is a plain add.
            self._check_full(s.src, src, s)
            self._check_full(s.dst, dst, s)
            return self.vec.binary(VecBinary.ADD, dst.name, dst.name, src.name, s.loc)
        if s.atomic is not None and key not in ((Scope.UB, Scope.GM), (Scope.L0C, Scope.GM)):
            raise UnsupportedError(f"T.atomic_add from {src.scope} ('{src.name}') to {dst.scope} ('{dst.name}') is not "
                                   "supported", loc=s.loc, hint="add a vector tile (UB) into a global tensor")
        if key == (Scope.UB, Scope.UB):
            self._check_full(s.src, src, s)
            self._check_full(s.dst, dst, s)
            if src.shape != dst.shape:
                raise UnsupportedError(
                    f"T.copy from '{src.name}' {list(src.shape)} to '{dst.name}' {list(dst.shape)}: shapes differ",
                    loc=s.loc)
            return self.vec.copy_or_cast(dst.name, src.name, s.loc)
        raise UnsupportedError(
            f"T.copy from {src.scope} ('{src.name}') to {dst.scope} ('{dst.name}') is not supported on this path",
            loc=s.loc)

    def _check_full(self, region: Region, buf: Buffer, s) -> None:
        if any(not _is_zero(b) for b in region.base) or [int(e) for e in region.extents] != list(buf.shape):
            raise UnsupportedError(
                f"T.copy of a part of tile '{buf.name}' is not supported; copy whole tiles", loc=s.loc)

    def copy_gm_ub(self, s: TileCopy, gm: Buffer, ub: Buffer) -> list:
        self._check_full(s.dst, ub, s)
        column = column_of(gm, s.src, ub.shape)
        w = gm_window(gm, s.src, ub.shape, s.loc) if column is None else None
        stage = ub
        ops = []
        if gm.dtype != ub.dtype:
            stage = self.vec.temp(ub.shape, gm.dtype)
        if column is not None:
            ops.extend(self.column_to_ub(gm, s.src, stage, *column, s.loc))
        else:
            ops.append(self.gm_ub_op(gm, stage, w, s.loc))
        if stage is not ub:
            ops.extend(self.vec.copy_or_cast(ub.name, stage.name, s.loc))
            self.vec.release(stage)
        return ops

    def copy_ub_gm(self, s: TileCopy, ub: Buffer, gm: Buffer) -> list:
        self._check_full(s.src, ub, s)
        column = column_of(gm, s.dst, ub.shape)
        w = gm_window(gm, s.dst, ub.shape, s.loc) if column is None else None
        ops = []
        stage = ub
        if gm.dtype != ub.dtype:
            stage = self.vec.temp(ub.shape, gm.dtype)
            ops.extend(self.vec.copy_or_cast(stage.name, ub.name, s.loc))
        if column is not None:
            ops.extend(self.column_to_gm(stage, gm, s.dst, *column, s.atomic, s.loc))
        else:
            ops.append(self.ub_gm_op(stage, gm, w, s.loc, atomic=s.atomic))
        if stage is not ub:
            self.vec.release(stage)
        return ops

    # A strided column: the window runs along a GM dimension that is not the innermost (its
    # elements are a stride apart) into a (n,) or (1, n) tile. DataCopyPad moves it as n rows of
    # one element, each into its own 32-byte block of a staging buffer (element k at block k);
    # the blocks are packed into the tile (or spread out of it) on the vector unit.
    def _column_window(self, gm: Buffer, region: Region, dim: int, n: int) -> GmWindow:
        shape = list(gm.shape)
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        base = tuple(region.base)
        vr = Valid(n) if shape[dim] % n == 0 else Valid(n, shape[dim], base[dim])
        return GmWindow(gm.name, base, tuple(strides), n, 1, strides[dim], vr, Valid(1))

    def column_to_ub(self, gm: Buffer, region: Region, ub: Buffer, dim: int, n: int, loc) -> list:
        w = self._column_window(gm, region, dim, n)
        if gm.dtype in (DType.FLOAT16, DType.FLOAT32) and n <= 255:
            blk = 32 // gm.elem_bytes
            stage = self.vec.temp((n * blk,), gm.dtype)
            # WholeReduceMax over one element per repeat, one repeat per 32-byte block: the max of a
            # single value is the value itself, written packed (one result per repeat).
            ops = [CopyGmToUb(gm=gm.name, ub=stage.name, window=w, form=CopyForm.PAD, ub_pitch=blk, dtype=gm.dtype,
                              loc=loc),
                   VecWholeReduce(kind=ReduceKind.MAX, dst=ub.name, src=stage.name, mask=1, repeat=n, src_rep=1,
                                  loc=loc)]
            self.vec.release(stage)
            return ops
        # Other element types: the scalar unit reads the column element by element.
        k = tirx.Var(f"{ub.name}_k", "int32")
        src_idx = list(region.base)
        src_idx[dim] = src_idx[dim] + k
        dst_idx = (k,) if len(ub.shape) == 1 else (tirx.IntImm("int32", 0), k)
        value = tirx.BufferLoad(tirx.decl_buffer(gm.shape, str(gm.dtype), gm.name), src_idx)
        extent = n if not w.valid_rows.tail else tirx.Min(tirx.IntImm("int32", n), w.valid_rows.size -
                                                          w.valid_rows.base)
        return [Loop(var=k, extent=extent, body=[ScalarStore(buffer=ub.name, indices=dst_idx, value=value, loc=loc)],
                     loc=loc)]

    def column_to_gm(self, ub: Buffer, gm: Buffer, region: Region, dim: int, n: int, atomic, loc) -> list:
        if ub.elem_bytes not in (2, 4):
            raise UnsupportedError(f"T.copy of the {ub.dtype} tile '{ub.name}' into a strided column of '{gm.name}' "
                                   "(elements a row apart) is not supported", loc=loc,
                                   hint="store a 16- or 32-bit tile, or copy into a window along the last dimension")
        blk = 32 // ub.elem_bytes
        rows8 = (n + 7) // 8 * 8
        stage = self.vec.temp((rows8 * blk,), ub.dtype)
        w = self._column_window(gm, region, dim, n)
        ops = [VecBrcb(dst=stage.name, src=ub.name, repeat=rows8 // 8, loc=loc),
               CopyUbToGm(ub=stage.name, gm=gm.name, window=w, form=CopyForm.PAD, ub_pitch=blk, dtype=gm.dtype,
                          atomic=atomic, loc=loc)]
        self.vec.release(stage)
        return ops

    @staticmethod
    def _form(gm: Buffer, ub: Buffer, w: GmWindow) -> CopyForm:
        """One DataCopy when the window is whole, contiguous rows of 32 B multiples; else DataCopyPad."""
        contiguous = (w.cols * gm.elem_bytes) % 32 == 0 and not w.valid_cols.tail and (w.rows == 1 or (
            w.row_stride == w.cols and ub.pitch == w.cols))
        return CopyForm.COUNT if contiguous else CopyForm.PAD

    def gm_ub_op(self, gm: Buffer, ub: Buffer, w: GmWindow, loc) -> CopyGmToUb:
        return CopyGmToUb(gm=gm.name, ub=ub.name, window=w, form=self._form(gm, ub, w), ub_pitch=ub.pitch,
                          dtype=gm.dtype, loc=loc)

    def ub_gm_op(self, ub: Buffer, gm: Buffer, w: GmWindow, loc, atomic=None) -> CopyUbToGm:
        return CopyUbToGm(ub=ub.name, gm=gm.name, window=w, form=self._form(gm, ub, w), ub_pitch=ub.pitch,
                          dtype=gm.dtype, atomic=atomic, loc=loc)

    def copy_gm_l1(self, s: TileCopy, gm: Buffer, l1: Buffer) -> CopyGmToL1:
        self._check_full(s.dst, l1, s)
        if gm.dtype != l1.dtype:
            raise UnsupportedError(
                f"T.copy from '{gm.name}' ({gm.dtype}) to gemm operand '{l1.name}' ({l1.dtype}) would need a cast "
                "on the way into L1, which the hardware path (Nd2Nz) cannot do",
                loc=s.loc, hint="give the global tensor the operand's dtype")
        w = gm_window(gm, s.src, l1.shape, s.loc)
        self.valid_extents[l1.name] = (w.valid_rows, w.valid_cols, gm.shape, s.loc)
        return CopyGmToL1(gm=gm.name, l1=l1.name, window=w, l1_rows=l1.rows, dtype=gm.dtype, loc=s.loc)

    def fixpipe_gm(self, s: TileCopy, l0c: Buffer, gm: Buffer):
        self._check_full(s.src, l0c, s)
        w = gm_window(gm, s.dst, l0c.shape, s.loc)
        quant = {DType.FLOAT16: QuantMode.F32_TO_F16, DType.BFLOAT16: QuantMode.F32_TO_BF16,
                 DType.FLOAT32: QuantMode.NONE}.get(gm.dtype)
        if quant is None:
            raise UnsupportedError(f"gemm result copied to '{gm.name}' of dtype {gm.dtype}; Fixpipe writes "
                                   "float16, bfloat16 or float32", loc=s.loc)
        cls = FixpipeToGmArch3510 if self.arch.fixpipe_arch3510 else FixpipeToGmV220
        return cls(gm=gm.name, src=l0c.name, window=w, src_stride=l0c.rows, quant=quant, relu=False, dtype=gm.dtype,
                   atomic=s.atomic, loc=s.loc)

    # ------------------------------------------------------------ fill
    def lower_fill(self, s: TileFill) -> list:
        dst = self.buffers[s.dst.buffer]
        value = const_value(s.value)
        if dst.scope is Scope.L0C:
            if value != 0:
                raise UnsupportedError(f"T.fill of gemm accumulator '{dst.name}' with {value}; only T.clear (0) is "
                                       "supported on an accumulator", loc=s.loc)
            self.pending_clear[dst.name] = len(self.loop_stack)
            return []
        if dst.scope is not Scope.UB:
            raise UnsupportedError(f"T.fill of '{dst.name}' in {dst.scope} is not supported", loc=s.loc)
        self._check_full(s.dst, dst, s)
        if value is None:
            raise UnsupportedError(f"T.fill value {s.value} is not a constant", loc=s.loc)
        return self.vec.duplicate(dst.name, value, s.loc)

    # ------------------------------------------------------------ reduce
    def lower_reduce(self, s: TileReduce) -> list:
        src = self.buffers[s.src.buffer]
        dst = self.buffers[s.dst.buffer]
        name = f"T.reduce_{s.kind.value}"
        if src.scope is not Scope.UB or dst.scope is not Scope.UB:
            raise UnsupportedError("reductions work on vector tiles (T.alloc_fragment / T.alloc_shared not used "
                                   "by a gemm)", loc=s.loc)
        dim = s.dim + len(src.shape) if s.dim < 0 else s.dim
        if len(src.shape) == 2 and dim not in (0, 1) or len(src.shape) == 1 and dim != 0:
            raise UnsupportedError(f"{name} over dim={s.dim} of the {len(src.shape)}-D tile '{src.name}'", loc=s.loc)
        over_rows = len(src.shape) == 2 and dim == 0
        want = src.cols if over_rows else src.rows
        if dst.numel != want:
            raise UnsupportedError(f"reduce output '{dst.name}' has {dst.numel} elements for the {want} "
                                   f"{'columns' if over_rows else 'rows'} of '{src.name}'", loc=s.loc)
        cdt = self._reduce_dtype(src.dtype, dst.dtype, name, s.loc)
        kind = {ReduceKind.ABSSUM: ReduceKind.SUM, ReduceKind.ABSMAX: ReduceKind.MAX}.get(s.kind, s.kind)
        ops: list = []
        temps: list = []
        work = src.name
        if src.dtype != cdt:  # reduce a widened copy (bfloat16, or float16 into a float32 result)
            t = self.vec.temp(src.shape, cdt)
            temps.append(t)
            ops += self.vec.copy_or_cast(t.name, work, s.loc)
            work = t.name
        if s.kind in (ReduceKind.ABSSUM, ReduceKind.ABSMAX):
            t = self.vec.temp(src.shape, cdt)
            temps.append(t)
            ops += self.vec.unary(VecUnary.ABS, t.name, work, s.loc)
            work = t.name
        out = dst.name
        if dst.dtype != cdt:
            t = self.vec.temp(dst.shape, cdt)
            temps.append(t)
            if not s.clear:
                ops += self.vec.copy_or_cast(t.name, dst.name, s.loc)
            out = t.name
        valid = self.ub_valid_cols.get(src.name)  # the widened copies keep the columns
        if over_rows:
            ops += self.vec.col_reduce(kind, out, work, s.clear, s.loc)
        else:
            ops += self.vec.row_reduce(kind, out, work, s.clear, s.loc, valid_cols=valid)
        if out != dst.name:
            ops += self.vec.copy_or_cast(dst.name, out, s.loc)
        for t in temps:
            self.vec.release(t)
        return ops

    def _reduce_dtype(self, src: DType, dst: DType, name: str, loc) -> DType:
        """The element type a reduction runs in: the tiles' own where the vector unit reduces it
        (float16, float32), float32 for bfloat16 and for a float16 tile reduced into float32; int32
        tiles in float32 (exact up to 2^24: the reduce instructions take no int32 on dav-c220)."""
        floats = (DType.FLOAT16, DType.FLOAT32)
        if src == dst and src in floats:
            return src
        if src in (*floats, DType.BFLOAT16, DType.INT32) and dst in (*floats, DType.BFLOAT16, DType.INT32):
            return DType.FLOAT32
        raise UnsupportedError(f"{name} from {src} to {dst}: reductions take float16, bfloat16, float32 and int32 "
                               "tiles", loc=loc, hint="T.copy the tile into a float32 fragment first")

    # ------------------------------------------------------------ cumsum
    def lower_cumsum(self, s: TileCumsum) -> list:
        """Inclusive prefix sums. Over the rows of a 2-D tile (dim 0): one vector Add per row, each
        adding the previous row's result. Along a row (dim 1, or a 1-D tile): the elements of a
        row depend on each other one by one, which no vector instruction takes (its lanes cannot
        shift), so the scalar unit adds them in place: rows x (cols - 1) scalar steps."""
        src, dst = self.buffers[s.src.buffer], self.buffers[s.dst.buffer]
        if src.scope is not Scope.UB or dst.scope is not Scope.UB:
            raise UnsupportedError("T.cumsum works on vector tiles (T.alloc_shared / T.alloc_fragment)", loc=s.loc)
        self._check_full(s.src, src, s)
        self._check_full(s.dst, dst, s)
        if src.shape != dst.shape or src.dtype != dst.dtype:
            raise UnsupportedError(f"T.cumsum from '{src.name}' ({list(src.shape)}, {src.dtype}) into '{dst.name}' "
                                   f"({list(dst.shape)}, {dst.dtype}): the tiles must have one shape and dtype",
                                   loc=s.loc, hint="T.copy into a tile of the result's dtype first")
        if src.dtype not in (DType.FLOAT16, DType.FLOAT32, DType.INT32):
            raise UnsupportedError(f"T.cumsum of the {src.dtype} tile '{src.name}'", loc=s.loc,
                                   hint="use a float16, float32 or int32 tile")
        dim = s.dim + len(src.shape) if s.dim < 0 else s.dim
        if dim not in range(len(src.shape)):
            raise UnsupportedError(f"T.cumsum over dim={s.dim} of the {len(src.shape)}-D tile '{src.name}'", loc=s.loc)
        if len(src.shape) == 2 and dim == 0:
            return [VecScanRows(op=VecBinary.ADD, dst=dst.name, src=src.name, rows=src.rows, cols=src.cols,
                                pitch=src.pitch, reverse=s.reverse, barrier=self.arch.needs_vector_barrier, loc=s.loc)]
        ops = [] if dst.name == src.name else self.vec.copy_or_cast(dst.name, src.name, s.loc)
        n = dst.cols
        if n == 1:
            return ops
        tb = tirx.decl_buffer(dst.shape, str(dst.dtype), dst.name)
        k = tirx.Var(f"{dst.name}_k", "int32")
        one = tirx.IntImm("int32", 1)
        c, prev = (tirx.IntImm("int32", n - 2) - k, tirx.IntImm("int32", n - 1) - k) if s.reverse else (k, k - one)
        if len(dst.shape) == 1:
            idx, pidx, outer = (c,), (prev,), None
        else:
            outer = tirx.Var(f"{dst.name}_r", "int32")
            idx, pidx = (outer, c), (outer, prev)
        step = ScalarStore(buffer=dst.name, indices=idx,
                           value=tirx.BufferLoad(tb, list(idx)) + tirx.BufferLoad(tb, list(pidx)), loc=s.loc)
        loop = Loop(var=k, extent=n - 1, body=[step], start=0 if s.reverse else 1, loc=s.loc)
        if outer is not None:
            loop = Loop(var=outer, extent=dst.rows, body=[loop], loc=s.loc)
        return [*ops, loop]

    # ------------------------------------------------------------ cross-core (from route)
    def lower_cc_set(self, s: CrossCoreSet) -> list:
        return [CrossCoreSetOp(flag=s.flag, on=s.pipe, reason=s.reason, mode=s.mode, sub=s.sub, orders=s.orders,
                               transfer=s.transfer, loc=s.loc)]

    def lower_cc_wait(self, s: CrossCoreWait) -> list:
        return [CrossCoreWaitOp(flag=s.flag, on=s.pipe, reason=s.reason, mode=s.mode, sub=s.sub, orders=s.orders,
                                transfer=s.transfer, loc=s.loc)]

    def lower_copy_to_peer_ub(self, s: CopyToPeerUb) -> list:
        """dav-3510: Fixpipe one AIV's half of the rows of an accumulator straight into that AIV's UB."""
        C = self.buffers[s.src]
        rows, cols = C.shape
        return [FixpipeToPeerUb(src=C.name, target=s.target, half=rows // 2, rows=rows, cols=cols,
                                pitch=(cols + 15) // 16 * 16, sub=s.sub, loc=s.loc)]

    def lower_copy_to_peer_l1(self, s: CopyToPeerL1) -> list:
        """dav-3510: this AIV's half of the rows of a UB tile into the AIC's L1 tile (MTE3, ND -> NZ)."""
        src = self.buffers[s.src.buffer]
        self._check_full(s.src, src, s)
        if len(src.shape) != 2:
            raise InternalCompilerError(f"UB -> L1 transfer of a {len(src.shape)}-D tile", stage="lower_tile_ops")
        if self.kernel.row_split is None:
            raise InternalCompilerError("UB -> L1 transfer without a row split between the AIVs",
                                        stage="lower_tile_ops")
        return [CopyUbToPeerL1(src=src.name, target=s.target, sub_var=self.kernel.row_split.var, src_rows=src.rows,
                               src_cols=src.cols, src_pitch=src.pitch or src.cols, c0=32 // src.elem_bytes,
                               dst_c0_stride=(s.rows + 15) // 16 * 16, rows=s.rows, loc=s.loc)]

    def lower_accumulate(self, s: TileAccumulate) -> list:
        return self.vec.binary(VecBinary.ADD, s.dst, s.dst, s.src, s.loc)

    # ------------------------------------------------------------ parallel
    def lower_parallel(self, s: TileParallel) -> list:
        return ParallelLowerer(self.vec, self.buffers, s, self.gm_ub_op, self.ub_gm_op, gm_window,
                               columns=(column_of, self.column_to_ub, self.column_to_gm)).lower()

    # ------------------------------------------------------------ gemm
    def lower_gemm(self, s: TileGemm) -> list:
        A = self.buffers[s.a.buffer]
        B = self.buffers[s.b.buffer]
        C = self.buffers[s.c.buffer]
        tA, tB = s.trans_a, s.trans_b
        if A.scope is not Scope.L1 or B.scope is not Scope.L1 or C.scope is not Scope.L0C:
            raise InternalCompilerError("gemm operands not in L1/L0C", stage="lower_tile_ops")
        if A.dtype != B.dtype:
            raise UnsupportedError(f"gemm operands '{A.name}' ({A.dtype}) and '{B.name}' ({B.dtype}) differ in dtype",
                                   loc=s.loc, hint="use the same dtype for A and B")
        M, K = (A.cols, A.rows) if tA else (A.rows, A.cols)
        Kb, N = (B.cols, B.rows) if tB else (B.rows, B.cols)
        if K != Kb or (M, N) != tuple(C.shape):
            raise UnsupportedError(f"gemm shapes do not agree: A gives MxK={M}x{K}, B gives KxN={Kb}x{N}, C is "
                                   f"{C.shape[0]}x{C.shape[1]}", loc=s.loc)
        # The valid K of this step: the tail of the last copy into A along K.
        kv = self._valid_k(A, tA, s)
        init = self._init(C, s.clear_accum)
        ks = self._k_step(A, B, M, N, K, kv)
        if ks == K:
            l0a = self._l0(A, Scope.L0A, (M, K))
            l0b = self._l0(B, Scope.L0B, (K, N))
            return self._gemm_step(A, B, C, l0a, l0b, tA, tB, M, N, K, kv, 0, init, s)
        # The operand tiles exceed what L0A/L0B hold twice over: step through K in chunks of ks.
        # Inside a T.Pipelined loop with num_stages > 1 the chunks alternate between two L0
        # buffers (ping/pong), so the LoadData of one chunk overlaps the Mmad of the previous one
        # (also across iterations: insert_sync's loop-carried flags); otherwise one buffer, serial.
        pingpong = any(lp.kind is LoopKind.PIPELINED and lp.num_stages > 1 for lp in self.loop_stack)
        names = PINGPONG if pingpong else ("",)
        l0as = [self._l0(A, Scope.L0A, (M, ks), n) for n in names]
        l0bs = [self._l0(B, Scope.L0B, (ks, N), n) for n in names]
        ops: list = []
        for c in range(K // ks):
            ops += self._gemm_step(A, B, C, l0as[c % len(names)], l0bs[c % len(names)], tA, tB, M, N, ks, Valid(ks),
                                   c * ks, init if c == 0 else False, s)
        return ops

    def _k_step(self, A: Buffer, B: Buffer, M: int, N: int, K: int, kv: Valid) -> int:
        """The K of one LoadData/Mmad step: all of K when both operands fit L0A/L0B twice (the
        multi_buffer pass may then double them) or when K has a runtime tail; otherwise the
        largest multiple of 16 dividing K whose operand chunks fit twice. L0A/L0B are shared with
        the other gemms of the kernel: their operands (one copy each, other L1 tiles) are
        reserved first."""
        cap = self.arch.capacity
        esz = A.nbytes // (A.rows * A.cols)
        res_a, res_b = self._l0_reserve(A.name, B.name)

        def fits(k: int, copies: int) -> bool:
            return (copies * M * k * esz + res_a <= cap[Scope.L0A]
                    and copies * k * N * esz + res_b <= cap[Scope.L0B])

        if fits(K, 2) or kv.tail:
            return K
        for ks in range(K - 16, 15, -16):
            if K % ks == 0 and fits(ks, 2):
                return ks
        return K

    def _l0_reserve(self, a: str, b: str) -> tuple[int, int]:
        """L0A/L0B bytes the kernel's other gemms need for operands loaded from other L1 tiles
        (whole operands, one copy: what they take at the least when they are not stepped)."""
        res = {Scope.L0A: {}, Scope.L0B: {}}
        for g in self._gemms:
            ga, gb = self.buffers[g.a.buffer], self.buffers[g.b.buffer]
            for scope, buf in ((Scope.L0A, ga), (Scope.L0B, gb)):
                if buf.name not in (a, b):
                    res[scope][buf.name] = max(res[scope].get(buf.name, 0), buf.numel * buf.elem_bytes)
        return sum(res[Scope.L0A].values()), sum(res[Scope.L0B].values())

    def _gemm_step(self, A: Buffer, B: Buffer, C: Buffer, l0a: Buffer, l0b: Buffer, tA: bool, tB: bool, M: int,
                   N: int, K: int, kv: Valid, k0: int, init, s: TileGemm) -> list:
        """LoadData A and B rows k0..k0+K of their L1 tiles into L0A/L0B, then one Mmad."""
        # Element offset of K row k0 inside the NZ tiles in L1: a stored [rows, cols] tile keeps
        # each 16-column block contiguous (rows x 16 elements), so a step along the columns moves
        # k0 * rows elements and a step along the rows k0 * 16.
        a_off = k0 * 16 if tA else k0 * A.rows
        b_off = k0 * B.rows if tB else k0 * 16
        part = f" K {k0}..{k0 + K}" if k0 or K != (A.rows if tA else A.cols) else ""
        if self.arch.load_data_v2:
            kf = KFractals(kv)
            # LoadData2DParamsV2: the L1 region is (mStep x kStep) fractals of the stored tile;
            # ifTranspose stores the transposed region (A stored K x M -> NZ M x K; B stored K x N ->
            # ZN). srcStride/dstStride are the distances between column blocks in fractals.
            load_a = (LoadData2DV2(dst=l0a.name, src=A.name, src_offset=a_off, m_step=kf, k_step=M // 16,
                                   src_stride=A.rows // 16, dst_stride=M // 16, trans=True,
                                   note="A stored K x M, transposed into NZ", part=part, operand_transposed=True,
                                   loc=s.loc) if tA else
                      LoadData2DV2(dst=l0a.name, src=A.name, src_offset=a_off, m_step=M // 16, k_step=kf,
                                   src_stride=A.rows // 16, dst_stride=M // 16, trans=False,
                                   note="A stored M x K, NZ into NZ", part=part, loc=s.loc))
            load_b = (LoadData2DV2(dst=l0b.name, src=B.name, src_offset=b_off, m_step=N // 16, k_step=kf,
                                   src_stride=B.rows // 16, dst_stride=N // 16, trans=False,
                                   note="B stored N x K: its NZ fractals are already ZN", part=part,
                                   operand_transposed=True, loc=s.loc) if tB
                      else LoadData2DV2(dst=l0b.name, src=B.name, src_offset=b_off, m_step=kf, k_step=N // 16,
                                        src_stride=B.rows // 16, dst_stride=N // 16, trans=True,
                                        note="B stored K x N, each fractal transposed into ZN", part=part, loc=s.loc))
        else:
            load_a = LoadData2D(operand="A", dst=l0a.name, src=A.name, src_offset=a_off, mn=M, k=kv, trans=tA,
                                src_rows=A.rows, part=part, loc=s.loc)
            load_b = LoadData2D(operand="B", dst=l0b.name, src=B.name, src_offset=b_off, mn=N, k=kv, trans=tB,
                                src_rows=B.rows, part=part, loc=s.loc)
        mmad = Mmad(dst=C.name, a=l0a.name, b=l0b.name, m=M, n=N, k=kv, init=init, loc=s.loc)
        return [load_a, load_b, mmad]

    def _valid_k(self, A: Buffer, tA: bool, s: TileGemm) -> Valid:
        K = A.rows if tA else A.cols
        info = self.valid_extents.get(A.name)
        if info is None:
            return Valid(K)
        vr, vc, gshape, _cloc = info
        kv = vr if tA else vc
        if not kv.tail:
            return Valid(K)
        gk = gshape[-2] if tA else gshape[-1]
        if gk % 16:
            raise AlignmentError(
                f"the reduction dimension K = {gk} of the gemm is not a multiple of 16, and the tile K = {K} "
                "does not divide it: the Cube core cannot take a partial fractal along K",
                loc=s.loc,
                hint=f"pad K to a multiple of 16 (e.g. {(gk + 15) // 16 * 16}) with zeros, or pick a block_K "
                f"that divides {gk}",
            )
        return kv

    def _l0(self, l1: Buffer, scope: Scope, shape: tuple, suffix: str = "") -> Buffer:
        name = f"{l1.name}_{scope.value.lower()}{suffix}"
        n = 1
        while name in self.buffers and self.buffers[name].numel < shape[0] * shape[1]:
            # another gemm loads this L1 tile into a smaller L0 buffer: a buffer of its own
            name = f"{l1.name}_{scope.value.lower()}{suffix}_{n}"
            n += 1
        if name not in self.buffers:
            layout = self.arch.l0a_layout if scope is Scope.L0A else self.arch.l0b_layout
            self.buffers[name] = Buffer(name=name, shape=shape, dtype=l1.dtype, kind=BufferKind.TEMP, loc=l1.loc,
                                        scope=scope, layout=Layout(layout),
                                        role=f"{'A' if scope is Scope.L0A else 'B'} operand of the Mmad, loaded from "
                                        f"{l1.name}")
        return self.buffers[name]

    def _init(self, C: Buffer, clear_accum: bool):
        if clear_accum:
            return True
        if C.name not in self.pending_clear:
            return False
        depth = self.pending_clear.pop(C.name)
        new_loops = self.loop_stack[depth:]
        if not new_loops:
            return True
        return FirstIteration(tuple(lp.var for lp in new_loops))

    RULES = {
        TileCopy: lower_copy,
        TileFill: lower_fill,
        TileReduce: lower_reduce,
        TileCumsum: lower_cumsum,
        TileGemm: lower_gemm,
        TileParallel: lower_parallel,
        TileAccumulate: lower_accumulate,
        CrossCoreSet: lower_cc_set,
        CrossCoreWait: lower_cc_wait,
        CopyToPeerUb: lower_copy_to_peer_ub,
        CopyToPeerL1: lower_copy_to_peer_l1,
    }


def resolve_cross_core_pipes(body: list) -> list:
    """Give cross-core flags that order accesses to a tile (``orders``) their pipe: a wait blocks
    the one pipe that next uses the tile in its statement list (the scalar unit, which orders them
    all, when several do); a set fires after the pipe of the tile's last access before it."""
    out = list(body)
    for n, s in enumerate(out):
        if isinstance(s, Loop):
            out[n] = dataclasses.replace(s, body=resolve_cross_core_pipes(s.body))
        elif isinstance(s, If):
            out[n] = dataclasses.replace(s, then_body=resolve_cross_core_pipes(s.then_body),
                                         else_body=resolve_cross_core_pipes(s.else_body))
    for n, s in enumerate(out):
        if not isinstance(s, CrossCoreSetOp | CrossCoreWaitOp) or s.on is not None:
            continue
        orders = s.orders
        if isinstance(s, CrossCoreWaitOp):
            pipes = {x.pipe for x in walk(out[n + 1:]) if isinstance(x, AscOp) and orders in (*x.reads, *x.writes)}
            pipe = pipes.pop() if len(pipes) == 1 else (Pipe.S if pipes else Pipe.V)
        else:
            before = [x for x in walk(out[:n]) if isinstance(x, AscOp) and orders in (*x.reads, *x.writes)]
            pipe = before[-1].pipe if before else Pipe.V
        out[n] = dataclasses.replace(s, on=pipe)
    return out


def lower_tile_ops(program: Program, compact_temps: bool = False) -> Program:
    """Lower tile ops to pipe-tagged Ascend ops in every kernel. ``compact_temps``: element-wise
    results overwrite their operands' temporaries (the driver's second try when the first
    lowering does not fit the memory budget)."""
    out = program.map_kernels(lambda k, lc, p: TileLowerer(k, p.arch, compact_temps).run())
    verify_lowered(out)
    return out


def verify_lowered(program: Program) -> None:
    """Only Loops, Ifs, scalar stores and Ascend ops remain; every op's buffers exist; every op runs on
    a pipe of its core kind."""
    for _, core, k in program.kernels():
        for s in walk(k.body):
            if isinstance(s, Loop | If | ScalarStore | Print):
                continue
            if not isinstance(s, AscOp):
                raise InternalCompilerError(f"{type(s).__name__} left after lowering", stage="lower_tile_ops")
            if not isinstance(s.pipe, Pipe):
                raise InternalCompilerError(f"op {s.macro} has no pipe", stage="lower_tile_ops")
            if core is not None and s.pipe not in Core(core).pipes:
                raise InternalCompilerError(f"op {s.macro} on pipe {s.pipe}, which the {core} does not have",
                                            stage="lower_tile_ops")
            for b in (*s.reads, *s.writes):
                if b not in k.buffers:
                    raise InternalCompilerError(f"op {s.macro} touches unknown buffer {b}", stage="lower_tile_ops")


__all__ = ["PINGPONG", "lower_tile_ops", "verify_lowered", "gm_window"]
