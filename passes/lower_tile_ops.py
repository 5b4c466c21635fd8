"""lower_tile_ops: turn every tile op into Ascend ops, each on its pipe with the buffers it touches.

Needs: scopes and layouts assigned (infer_scope, assign_layout).
Establishes: the bodies hold only Loops, Ifs, scalar stores and Ascend ops (``AscOp``
subclasses: one class per template macro, each declaring its pipe and the buffers it reads and
writes). Copies become DataCopy / DataCopyPad (GM <-> UB, with tails), Nd2Nz (GM -> L1) and Fixpipe
(L0C -> GM, with the cast); a gemm becomes LoadData into L0A/L0B (buffers created here, in the
arch's fractal layouts; an operand may be a window of its L1 tile on fractal boundaries: an element
offset with the tile's strides) and Mmad, stepped through K in chunks when the operand tiles do not fit
L0A/L0B twice (ping/pong buffers inside a pipelined loop with num_stages > 1); fills, reduces and
T.Parallel bodies become vector ops (see lower_parallel). Where the arches differ the lowering
picks distinct op kinds (LoadData2D / LoadData2DV2, FixpipeToGmV220 / FixpipeToGmArch3510).
Tails of global shapes become runtime-valid extents (``Valid``); a tail the hardware path cannot
take is rejected with the dimension named; a gemm's symbolic K adds a check the callable runs at
each call (``bounds.MultipleCheck`` in ``Program.bounds_checks``: K a multiple of the fractal
width). Cross-core flags whose pipe the route pass left open (``orders``) get the pipe of the ops
they order.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import tvm
from tvm import tirx

from ascend_backend.bounds import Fit, MultipleCheck, Ranges, fit
from ascend_backend.dtypes import DType
from ascend_backend.errors import AlignmentError, InternalCompilerError, UnsupportedError
from ascend_backend.ir import (
    AscOp,
    Buffer,
    BufferKind,
    CopyForm,
    CopyGmToL1,
    CopyGmToUb,
    CopyMxScalesGmToL1,
    CopyToPeerL1,
    CopyToPeerUb,
    CopyToPeerUbDual,
    CopyUbToGm,
    CopyUbToPeerL1,
    Core,
    CrossCoreSet,
    CrossCoreSetOp,
    CrossCoreWait,
    CrossCoreWaitOp,
    Direction,
    FillL1,
    FirstIteration,
    FixpipeToGmArch3510,
    FixpipeToGmV220,
    FixpipeToPeerUb,
    FixpipeToPeerUbDual,
    GmWindow,
    If,
    InitFlag,
    Kernel,
    KFractals,
    Layout,
    LoadData2D,
    LoadData2DMx,
    LoadData2DV2,
    Loop,
    LoopKind,
    Mmad,
    MmadMx,
    Pipe,
    Print,
    Program,
    QuantMode,
    ReduceKind,
    Region,
    RepeatOperand,
    Route,
    ScalarStore,
    Scope,
    SimtCall,
    TileAccumulate,
    TileCopy,
    TileCumsum,
    TileFill,
    TileGemm,
    TileParallel,
    TileReduce,
    Valid,
    VecBinary,
    VecBinaryBcast,
    VecBinaryOp,
    VecBrcb,
    VecCopy,
    VecFusedMulAddBcast,
    VecMulAddDstBcast,
    VecOther,
    VecScanRows,
    VecUnary,
    VecWholeReduce,
    fresh_name,
    map_body,
    static_int,
    walk,
)

from .lower_parallel import ParallelLowerer, VectorEmitter, const_value, identity

# Fixpipe's conversion for (accumulator, output) dtypes; the scaled modes get scale 1.0.
FIXPIPE_QUANT = {
    (DType.FLOAT32, DType.FLOAT32): QuantMode.NONE, (DType.FLOAT32, DType.FLOAT16): QuantMode.F32_TO_F16,
    (DType.FLOAT32, DType.BFLOAT16): QuantMode.F32_TO_BF16, (DType.FLOAT32, DType.INT8): QuantMode.F32_TO_S8,
    (DType.FLOAT32, DType.FLOAT8_E4M3FN): QuantMode.F32_TO_FP8, (DType.INT32, DType.INT32): QuantMode.NONE,
    (DType.INT32, DType.FLOAT16): QuantMode.S32_TO_F16, (DType.INT32, DType.BFLOAT16): QuantMode.S32_TO_BF16,
    (DType.INT32, DType.INT8): QuantMode.S32_TO_S8,
}


def _is_zero(e) -> bool:
    return isinstance(e, int) and e == 0 or isinstance(e, tirx.IntImm) and int(e.value) == 0


def gm_window(buf: Buffer, region: Region, tile_shape: tuple, loc, ranges: Ranges | None = None) -> GmWindow:
    """Map a GM region onto a (rows, cols) tile: innermost dim = columns, next non-unit dim = rows.

    A dimension gets a runtime valid extent (``Valid``) where the window may cross the tensor's
    end: decided from the ranges of the block indices, loop variables and enclosing conditions
    (``ranges``) when the start depends only on them; a start read from memory crosses where the
    dimension is symbolic or, along the rows, always (clamped at 0: such a window may even start
    past the end); along the columns such a start is assumed in bounds when the tile divides the
    dimension (a column tail changes how the tile is reduced)."""
    shape = list(buf.shape)
    base = list(region.base)
    ext = [static_int(e) for e in region.extents]
    if len(base) != len(shape):
        raise UnsupportedError(f"region of '{buf.name}' has {len(base)} indices for a {len(shape)}-D tensor", loc=loc)
    if None in ext:
        raise UnsupportedError(
            f"the copy window of '{buf.name}' has the runtime extent {region.extents[ext.index(None)]} in dimension "
            f"{ext.index(None)}", loc=loc,
            hint="a window has the constant shape of its tile; at the end of a symbolic dimension the copy takes "
            "the tail by itself")
    strides: list = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = _mul(strides[d + 1], shape[d + 1])
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
    trusted = buf.kind is BufferKind.WORKSPACE  # laid out by route: one region per block, always inside

    def valid(d, n, along_rows: bool) -> Valid:
        if d is None or trusted:
            return Valid(n)
        size = shape[d]
        v = fit(ranges or Ranges(), base[d], n, size)
        if v.fit is Fit.INSIDE:
            return Valid(n)
        if v.fit is Fit.TAIL:
            return Valid(n, size, base[d])
        if v.fit is Fit.NEGATIVE:
            raise UnsupportedError(f"a copy window of '{buf.name}' can start at {v.lo} in dimension {d}", loc=loc,
                                   hint="a window's start must be >= 0")
        if v.fit is Fit.UNKNOWN and static_int(size) is not None and not along_rows:
            s = static_int(size)
            return Valid(n) if s % n == 0 and s >= n else Valid(n, size, base[d])
        return Valid(n, size, base[d], clamp=True)

    vr = valid(row_dim, rows_t, True) if rows_t > 1 else Valid(1)
    vc = valid(cols_dim, cols_t, False)
    row_stride = strides[row_dim] if row_dim is not None else shape[-1]
    return GmWindow(buf.name, tuple(base), tuple(strides), rows_t, cols_t, row_stride, vr, vc, wide=buf.wide)


def _window_2d(region: Region, buf: Buffer, loc) -> tuple:
    """(rows, cols) of a GM window: the innermost extent and the one other extent above 1."""
    ext = [int(e) for e in region.extents]
    outer = [e for e in ext[:-1] if e != 1]
    if len(outer) > 1:
        raise UnsupportedError(f"T.copy between global tensors of the window {ext} of '{buf.name}': a GM -> GM copy "
                               "moves a 2-D window (one extent above 1 besides the innermost)", loc=loc,
                               hint="copy one 2-D slice at a time (a loop over the outer dimension)")
    return (outer[0] if outer else 1), ext[-1]


def _rows_of(region: Region, r0: int, n: int) -> Region:
    """Rows r0 .. r0 + n of a 2-D GM window (its non-unit outer dimension)."""
    ext = [int(e) for e in region.extents]
    outer = [d for d in range(len(ext) - 1) if ext[d] != 1]
    if not outer:
        return region
    d = outer[0]
    base, extents = list(region.base), list(ext)
    base[d] = base[d] + r0 if r0 else base[d]
    extents[d] = n
    return Region(region.buffer, tuple(base), tuple(extents))


def _mul(a, b):
    x, y = static_int(a), static_int(b)
    if x is not None and y is not None:
        return x * y
    return (x if x is not None else a) * (y if y is not None else b)


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


def _cut_rows(w: GmWindow, hi) -> GmWindow:
    """``w`` with its valid rows also below ``hi`` (relative to its first row)."""
    from tvm import arith

    v = w.valid_rows
    if v.tail:
        cut = Valid(v.n, arith.Analyzer().simplify(tirx.Min(v.size, v.base + hi)), v.base, clamp=True)
    else:
        cut = Valid(v.n, hi, tirx.IntImm("int32", 0), clamp=True)
    return dataclasses.replace(w, valid_rows=cut)


@dataclasses.dataclass(frozen=True)
class _Window:
    """A gemm operand's window of its L1 tile (start row/column: ints, or PrimExprs of loop
    variables; extents: ints), with what its element offsets need from the stored tile."""

    r0: Any
    c0: Any
    rows: int
    cols: int
    parent_rows: int
    c0_elems: int
    whole: bool
    name: str

    def offset(self, dr: int, dc: int):
        """Element offset of the window's element (dr, dc) in the NZ tile, both on fractal
        boundaries: column blocks are parent_rows x C0 elements, rows C0 elements apart."""
        off = (self.c0 + dc) * self.parent_rows + (self.r0 + dr) * self.c0_elems
        return static_int(off) if static_int(off) is not None else tvm.arith.Analyzer().simplify(off)

    @property
    def text(self) -> str:
        """``[r0:r1, c0:c1]`` for a window, empty for the whole tile."""
        return "" if self.whole else _slice_text("", [self.r0, self.c0], [self.rows, self.cols])


def _expr_text(e) -> str:
    return str(e) if isinstance(e, int) else str(e).replace("T.int32(", "(")


def _slice_text(name: str, base: list, ext: list) -> str:
    def one(b, e):
        b_i, e_i = static_int(b), static_int(e)
        if b_i is not None and e_i is not None:
            return f"{b_i}:{b_i + e_i}"
        return f"{_expr_text(b)}:{_expr_text(b)} + {_expr_text(e)}"
    return f"{name}[{', '.join(one(b, e) for b, e in zip(base, ext, strict=True))}]"


def _multiple_of(an, e, unit: int) -> bool:
    """Whether the analyzer proves ``e`` a multiple of ``unit`` for every value of its variables."""
    ms = an.modular_set(e)
    return ms.coeff % unit == 0 and ms.base % unit == 0


def _aligned_alternatives(start: int, extent: int, size: int, unit: int) -> list[tuple[int, int]]:
    """Windows on ``unit`` boundaries near [start, start + extent) inside ``size``: the same
    extent at the aligned starts either side, or (an unaligned extent) the aligned cover."""
    if extent % unit:
        lo = start - start % unit
        hi = (start + extent + unit - 1) // unit * unit
        return [(lo, hi - lo)] if hi <= size else []
    lo = start - start % unit
    return [(b, extent) for b in dict.fromkeys((lo, lo + unit)) if b + extent <= size]


# Suffixes of the two L0 buffers a K-stepped gemm alternates between (multi_buffer leaves them alone).
PINGPONG = ("_ping", "_pong")


class TileLowerer:
    def __init__(self, kernel: Kernel, arch, grid: list | None = None, compact_temps: bool = False) -> None:
        self.kernel = kernel
        self.grid = grid or []
        self.cond_stack: list = []  # conditions of the enclosing ifs
        self.l0_names: dict = {}  # (L1 tile, scope, ping/pong suffix) -> its L0 buffers
        self.buffers = kernel.copy_buffers()
        self.arch = arch
        self.vec = VectorEmitter(self.buffers, arch, compact=compact_temps)
        self.loop_stack: list = []
        self.pending_clear: dict[str, int] = {}  # L0C buffer -> loop depth at T.clear
        # L0C accumulators whose T.clear the next gemm cannot be told statically -> their clear flag
        self.clear_flags: dict[str, str] = {}
        for acc in sorted(_clears_needing_a_flag(kernel.body, self.buffers)):
            flag = fresh_name(f"{acc}_cleared", set(self.buffers))
            self.buffers[flag] = Buffer(name=flag, shape=(1,), dtype=DType.INT32, kind=BufferKind.LOCAL,
                                        loc=self.buffers[acc].loc, scope=Scope.LOCAL,
                                        role=f"set by T.clear({acc}), read and reset by the next gemm into it")
            self.clear_flags[acc] = flag
        self.valid_extents: dict[str, tuple] = {}  # L1 buffer -> (valid rows, valid cols, global shape, loc)
        # UB tile -> runtime valid column count, when its last fill from GM may have had a column
        # tail (the columns past it hold stale data, which reductions must not see).
        self.ub_valid_cols: dict[str, Valid] = {}
        self._gemms = [s for s in walk(kernel.body) if isinstance(s, TileGemm)]
        self._lowered: set = set()  # id() of the gemms lowered so far
        self._l0_of: dict = {}  # (L1 tile, L0 scope) -> names of its L0 buffers
        self.runtime_checks: list = []  # checks the callable runs with each call's sizes (a symbolic K)

    # ------------------------------------------------------------ driver
    def run(self) -> Kernel:
        body = [_set_flag(flag, 0, None) for flag in self.clear_flags.values()]
        body += self.lower_body(_elide_staging_copies(self.kernel.body, self.buffers))
        body = _fuse_rescale(_fuse_mul_add_dst(body, self.buffers), self.buffers, self.arch)
        body = resolve_cross_core_pipes(body)
        # vector temporaries a fusion left unused take no memory
        used = {b for s in walk(body) if isinstance(s, AscOp) for b in (*s.reads, *s.writes)}
        buffers = {n: b for n, b in self.buffers.items()
                   if not (b.kind is BufferKind.TEMP and b.scope is Scope.UB and n not in used)}
        return self.kernel.replace(body=body, buffers=buffers)

    def lower_body(self, body: list) -> list:
        out: list = []
        for s in _fold_fill_reduce(body, self.buffers):
            if isinstance(s, Loop):
                self.loop_stack.append(s)
                inner = self.lower_body(s.body)
                self.loop_stack.pop()
                out.append(dataclasses.replace(s, body=inner))
            elif isinstance(s, If):
                self.cond_stack.append(s.cond)
                then_body = self.lower_body(s.then_body)
                self.cond_stack[-1] = tirx.Not(s.cond)
                else_body = self.lower_body(s.else_body)
                self.cond_stack.pop()
                out.append(dataclasses.replace(s, then_body=then_body, else_body=else_body))
            elif isinstance(s, ScalarStore | Print | SimtCall):
                out.append(s)  # a SIMT function is already an op (passes/lower_simt.py)
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

    def ranges(self) -> Ranges:
        """The block indices, loop variables (and this AIV's half) in scope, with their ranges."""
        r = Ranges()
        for ax in self.grid:
            r = r.with_var(ax.var, 0, ax.extent)
        if self.kernel.row_split is not None:
            r = r.with_var(self.kernel.row_split.var, 0, 2)
        for lp in self.loop_stack:
            if lp.var is None or lp.extent is None:  # a while loop: its variables have no range
                continue
            span = lp.extent if lp.step == 1 else (lp.extent - 1) * lp.step + 1
            r = r.with_var(lp.var, lp.start, span)
        for c in self.cond_stack:
            r = r.with_cond(c)
        return r

    def window(self, buf: Buffer, region: Region, tile_shape: tuple, loc) -> GmWindow:
        return gm_window(buf, region, tile_shape, loc, self.ranges())

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
        if key == (Scope.GM, Scope.L1) and dst.layout is Layout.MX:
            return [self.copy_mx_scales(s, src, dst)]
        if key == (Scope.GM, Scope.L1):
            return [self.copy_gm_l1(s, src, dst)]
        if key == (Scope.L0C, Scope.GM):
            return [self.fixpipe_gm(s, src, dst)]
        if key == (Scope.GM, Scope.GM):
            return self.copy_gm_gm(s, src, dst)
        if s.atomic is not None and dst.scope is Scope.UB:
            # One vector program per block: an atomic add into a tile is a plain add.
            self._check_full(s.src, src, s)
            self._check_full(s.dst, dst, s)
            return self.vec.binary(VecBinary.ADD, dst.name, dst.name, src.name, s.loc)
        if s.atomic is not None and key not in ((Scope.UB, Scope.GM), (Scope.L0C, Scope.GM)):
            raise UnsupportedError(f"T.atomic_add from {src.scope} ('{src.name}') to {dst.scope} ('{dst.name}') is not "
                                   "supported", loc=s.loc, hint="add a vector tile (UB) into a global tensor")
        if key == (Scope.UB, Scope.UB):
            rows = self._ub_rows_copy(s, src, dst)
            if rows is not None:
                return rows
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

    def _ub_rows_copy(self, s: TileCopy, src: Buffer, dst: Buffer) -> list | None:
        """``T.copy(x[r0:r0 + n, :], y)`` / ``T.copy(x[k, :], v)`` and the reverse: whole rows of a 2-D
        tile to or from a whole tile of those rows (or a 1-D tile of one row). Rows start 32-byte
        aligned in UB, so the row range is one DataCopy at an offset (a cast goes through a
        temporary of the source's dtype). None when either side is a whole tile (the plain copy)."""
        def rows_of(region: Region, buf: Buffer):
            if len(buf.shape) != 2 or len(region.extents) != 2 or not _is_zero(region.base[1]) or \
                    static_int(region.extents[1]) != buf.cols or static_int(region.extents[0]) is None:
                return None
            r0, n = region.base[0], int(static_int(region.extents[0]))
            if _is_zero(r0) and n == buf.rows:
                return None
            if static_int(r0) is not None and not 0 <= static_int(r0) <= buf.rows - n:
                raise UnsupportedError(f"rows [{r0}, {static_int(r0) + n}) of tile '{buf.name}' ({buf.rows} rows) "
                                       "are outside it", loc=s.loc)
            return r0, n

        part_src, part_dst = rows_of(s.src, src), rows_of(s.dst, dst)
        if (part_src is None) == (part_dst is None):
            return None
        part, whole, region = (part_src, dst, s.dst) if part_src is not None else (part_dst, src, s.src)
        self._check_full(region, whole, s)
        r0, n = part
        tile = src if part_src is not None else dst
        fits = (len(whole.shape) == 2 and tuple(whole.shape) == (n, tile.cols) and whole.pitch == tile.pitch) or \
            (len(whole.shape) == 1 and n == 1 and whole.shape[0] == tile.cols)
        if not fits:
            raise UnsupportedError(
                f"T.copy between rows of '{tile.name}' {list(tile.shape)} and '{whole.name}' {list(whole.shape)}: "
                f"{n} rows of {tile.cols} columns do not have the other tile's shape", loc=s.loc,
                hint="copy whole rows into a tile of exactly those rows (or one row into a 1-D tile of its length)")
        count = n * tile.pitch
        offset = r0 * tile.pitch if not _is_zero(r0) else 0
        if part_dst is not None:  # into rows of dst
            if src.dtype == dst.dtype:
                return [VecCopy(dst=dst.name, src=src.name, count=count, dst_offset=offset, loc=s.loc)]
            stage = self.vec.temp(src.shape, dst.dtype)
            ops = self.vec.copy_or_cast(stage.name, src.name, s.loc)
            ops.append(VecCopy(dst=dst.name, src=stage.name, count=count, dst_offset=offset, loc=s.loc))
            self.vec.release(stage)
            return ops
        if src.dtype == dst.dtype:
            return [VecCopy(dst=dst.name, src=src.name, count=count, src_offset=offset, loc=s.loc)]
        stage = self.vec.temp(dst.shape, src.dtype)
        ops = [VecCopy(dst=stage.name, src=src.name, count=count, src_offset=offset, loc=s.loc)]
        ops.extend(self.vec.copy_or_cast(dst.name, stage.name, s.loc))
        self.vec.release(stage)
        return ops

    def _check_full(self, region: Region, buf: Buffer, s) -> None:
        if any(not _is_zero(b) for b in region.base) or [int(e) for e in region.extents] != list(buf.shape):
            raise UnsupportedError(
                f"T.copy of a part of tile '{buf.name}' is not supported; copy whole tiles", loc=s.loc)

    def copy_gm_ub(self, s: TileCopy, gm: Buffer, ub: Buffer) -> list:
        r0, n = self._tile_rows(s.dst, ub, s) if len(ub.shape) == 2 else (0, ub.rows)
        if n != ub.rows:
            # rows of the tile (a gather, one row per index): into a temporary of those rows, then
            # one DataCopy to the rows' offset (rows start 32-byte aligned)
            part = self.vec.temp((n, ub.cols), ub.dtype)
            ops = self.copy_gm_ub(dataclasses.replace(s, dst=Region(part.name, (0, 0), (n, ub.cols))), gm, part)
            ops.append(VecCopy(dst=ub.name, src=part.name, count=n * ub.pitch, dst_offset=r0 * ub.pitch, loc=s.loc))
            self.vec.release(part)
            return ops
        self._check_full(s.dst, ub, s)
        column = column_of(gm, s.src, ub.shape)
        w = self.window(gm, s.src, ub.shape, s.loc) if column is None else None
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
        w = self.window(gm, s.dst, ub.shape, s.loc) if column is None else None
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

    def column_to_gm(self, ub: Buffer, gm: Buffer, region: Region, dim: int, n: int, atomic, loc, cut=None) -> list:
        """``cut``: an exclusive upper bound on the elements stored (``if i < n:`` around the store)."""
        if ub.elem_bytes not in (2, 4):
            raise UnsupportedError(f"T.copy of the {ub.dtype} tile '{ub.name}' into a strided column of '{gm.name}' "
                                   "(elements a row apart) is not supported", loc=loc,
                                   hint="store a 16- or 32-bit tile, or copy into a window along the last dimension")
        blk = 32 // ub.elem_bytes
        rows8 = (n + 7) // 8 * 8
        stage = self.vec.temp((rows8 * blk,), ub.dtype)
        w = self._column_window(gm, region, dim, n)
        if cut is not None:
            w = _cut_rows(w, cut)
        ops = [VecBrcb(dst=stage.name, src=ub.name, repeat=rows8 // 8, loc=loc),
               CopyUbToGm(ub=stage.name, gm=gm.name, window=w, form=CopyForm.PAD, ub_pitch=blk, dtype=gm.dtype,
                          atomic=atomic, loc=loc)]
        self.vec.release(stage)
        return ops

    # Bytes of UB one GM -> GM stage takes at most (the rest of the UB stays for the kernel's tiles).
    GM_GM_STAGE_BYTES = 32 * 1024

    def copy_gm_gm(self, s: TileCopy, src: Buffer, dst: Buffer) -> list:
        """GM -> GM: there is no documented GM -> GM DataCopy, so the window goes through UB: GM -> UB
        (MTE2), a cast on the vector unit when the dtypes differ, UB -> GM (MTE3, atomic when asked),
        in chunks of rows that keep each stage within GM_GM_STAGE_BYTES."""
        rows_s, cols_s = _window_2d(s.src, src, s.loc)
        rows_d, cols_d = _window_2d(s.dst, dst, s.loc)
        if (rows_s, cols_s) != (rows_d, cols_d):
            raise UnsupportedError(
                f"T.copy from '{src.name}' window {[int(e) for e in s.src.extents]} to '{dst.name}' window "
                f"{[int(e) for e in s.dst.extents]}: the windows have different shapes", loc=s.loc,
                hint="copy windows of the same (rows, columns) shape")
        rows, cols = rows_s, cols_s
        pitch = (cols + 15) // 16 * 16
        per_row = pitch * (src.elem_bytes + (dst.elem_bytes if dst.dtype != src.dtype else 0))
        chunk = max(1, min(rows, self.GM_GM_STAGE_BYTES // per_row))
        ops: list = []
        for r0 in range(0, rows, chunk):
            n = min(chunk, rows - r0)
            shape = (n, cols) if rows > 1 else (cols,)
            stage = self.vec.temp(shape, src.dtype)
            src_r, dst_r = _rows_of(s.src, r0, n), _rows_of(s.dst, r0, n)
            ops.append(self.gm_ub_op(src, stage, self.window(src, src_r, shape, s.loc), s.loc))
            out = stage
            if dst.dtype != src.dtype:
                out = self.vec.temp(shape, dst.dtype)
                ops.extend(self.vec.copy_or_cast(out.name, stage.name, s.loc))
            ops.append(self.ub_gm_op(out, dst, self.window(dst, dst_r, shape, s.loc), s.loc, atomic=s.atomic))
            self.vec.release(stage)
            if out is not stage:
                self.vec.release(out)
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

    def _tile_rows(self, region: Region, buf: Buffer, s) -> tuple:
        """(first row, row count) of a region of a 2-D tile that is whole rows; the tile's own
        (0, rows) when it is all of it. Anything else is refused at the copy."""
        if len(buf.shape) == 2 and len(region.extents) == 2 and _is_zero(region.base[1]) \
                and isinstance(region.extents[0], int | tirx.IntImm) and int(region.extents[1]) == buf.cols:
            n = int(region.extents[0])
            r0 = int(region.base[0]) if isinstance(region.base[0], int | tirx.IntImm) else None
            if r0 is None or 0 <= r0 <= buf.rows - n:
                return region.base[0], n
        self._check_full(region, buf, s)
        return 0, buf.rows

    def copy_gm_l1(self, s: TileCopy, gm: Buffer, l1: Buffer) -> CopyGmToL1:
        row0, n = self._tile_rows(s.dst, l1, s)
        if n != l1.rows:
            # Whole rows of the tile (e.g. a gather, one row per index): Nd2Nz writes them at their
            # row of every column block. A row index past the tile is the caller's to keep in range.
            if gm.dtype != l1.dtype:
                raise UnsupportedError(f"T.copy from '{gm.name}' ({gm.dtype}) to gemm operand '{l1.name}' ({l1.dtype}) "
                                       "would need a cast on the way into L1", loc=s.loc,
                                       hint="give the global tensor the operand's dtype")
            w = self.window(gm, s.src, (n, l1.cols), s.loc)
            self.valid_extents.pop(l1.name, None)
            return CopyGmToL1(gm=gm.name, l1=l1.name, window=w, l1_rows=l1.rows, dtype=gm.dtype, row0=row0, loc=s.loc)
        if gm.dtype != l1.dtype:
            raise UnsupportedError(
                f"T.copy from '{gm.name}' ({gm.dtype}) to gemm operand '{l1.name}' ({l1.dtype}) would need a cast "
                "on the way into L1, which the hardware path (Nd2Nz) cannot do",
                loc=s.loc, hint="give the global tensor the operand's dtype")
        w = self.window(gm, s.src, l1.shape, s.loc)
        self.valid_extents[l1.name] = (w.valid_rows, w.valid_cols, gm.shape, s.loc)
        return CopyGmToL1(gm=gm.name, l1=l1.name, window=w, l1_rows=l1.rows, dtype=gm.dtype, loc=s.loc)

    def copy_mx_scales(self, s: TileCopy, gm: Buffer, l1: Buffer) -> CopyMxScalesGmToL1:
        """Scales of a T.gemm_blockscaled from GM into their MX tile: read as 16-bit pairs, so the
        window starts at an even column of a tensor whose rows hold an even number of scales."""
        self._check_full(s.dst, l1, s)
        if gm.dtype != l1.dtype:
            raise UnsupportedError(f"T.copy from '{gm.name}' ({gm.dtype}) to scale tile '{l1.name}' ({l1.dtype}): "
                                   "MX scales are copied as they are, without a conversion", loc=s.loc,
                                   hint="give the global tensor the dtype float8_e8m0fnu")
        w = self.window(gm, s.src, l1.shape, s.loc)
        cols = static_int(gm.shape[-1]) if len(gm.shape) == 2 else None
        base = s.src.base[-1]
        even = static_int(base) % 2 == 0 if static_int(base) is not None else \
            _multiple_of(self.ranges().analyzer(), base, 2)
        if cols is None or cols % 2 or not even or w.valid_cols.tail:
            raise UnsupportedError(
                f"T.copy of MX scales from '{gm.name}' {list(gm.shape)} into '{l1.name}': the Cube moves scales in "
                "pairs (two E8M0 per 16-bit element), so the tensor must be 2-D with a constant, even number of "
                "columns (K / 32) and the window must start at an even column and lie inside the columns",
                loc=s.loc, hint="use a K that is a multiple of 64 and a block_K that is a multiple of 64")
        return CopyMxScalesGmToL1(gm=gm.name, l1=l1.name, window=w, l1_pairs=l1.cols // 2, loc=s.loc)

    def fixpipe_gm(self, s: TileCopy, l0c: Buffer, gm: Buffer):
        self._check_full(s.src, l0c, s)
        w = self.window(gm, s.dst, l0c.shape, s.loc)
        quant = FIXPIPE_QUANT.get((l0c.dtype, gm.dtype))
        if s.scale is not None:  # fold_scale only folds where the arch has the scaled mode
            quant = dict(self.arch.fixpipe_scaled).get((l0c.dtype, gm.dtype))
            if quant is None:
                raise InternalCompilerError(f"no scalar-scaled Fixpipe mode for {l0c.dtype} -> {gm.dtype} on "
                                            f"{self.arch.name}", stage="lower_tile_ops")
        outs = dict(self.arch.fixpipe_dtypes).get(l0c.dtype, ())
        if quant is None or gm.dtype not in outs:
            raise UnsupportedError(f"gemm result '{l0c.name}' ({l0c.dtype}) copied to '{gm.name}' of dtype {gm.dtype}; "
                                   f"Fixpipe on {self.arch.name} writes a {l0c.dtype} accumulator as "
                                   f"{', '.join(map(str, outs))}", loc=s.loc,
                                   hint="copy the accumulator into a vector tile and convert it there")
        cls = FixpipeToGmArch3510 if self.arch.fixpipe_arch3510 else FixpipeToGmV220
        return cls(gm=gm.name, src=l0c.name, window=w, src_stride=l0c.rows, quant=quant, relu=False, dtype=gm.dtype,
                   src_dtype=l0c.dtype, atomic=s.atomic, scale=s.scale, loc=s.loc)

    # ------------------------------------------------------------ fill
    def lower_fill(self, s: TileFill) -> list:
        dst = self.buffers[s.dst.buffer]
        value = const_value(s.value)
        if dst.scope is Scope.L0C:
            if value != 0:
                raise UnsupportedError(f"T.fill of gemm accumulator '{dst.name}' with {value}; only T.clear (0) is "
                                       "supported on an accumulator", loc=s.loc)
            if dst.name in self.clear_flags:
                return [_set_flag(self.clear_flags[dst.name], 1, s.loc)]
            self.pending_clear[dst.name] = len(self.loop_stack)
            return []
        if dst.scope is Scope.L1 and value == 0:  # a zero gemm operand (empty_loops): the Cube's Fill
            self._check_full(s.dst, dst, s)
            return [FillL1(dst=dst.name, nbytes=dst.numel * dst.elem_bytes, loc=s.loc)]
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
                                pitch=(cols + 15) // 16 * 16, sub=s.sub, step=s.step, dtype=C.dtype, loc=s.loc)]

    def lower_copy_to_peer_ub_dual(self, s: CopyToPeerUbDual) -> list:
        """dav-3510: one dual-destination Fixpipe of an accumulator into both AIVs' UB, split by rows."""
        C = self.buffers[s.src]
        rows, cols = C.shape
        if rows % 2:
            raise InternalCompilerError(f"dual-destination Fixpipe of {C.name}: {rows} rows do not split between the "
                                        "two AIVs", stage="lower_tile_ops")
        return [FixpipeToPeerUbDual(src=C.name, target=s.target, rows=rows, cols=cols, pitch=(cols + 15) // 16 * 16,
                                    step=s.step, dtype=C.dtype, loc=s.loc)]

    def lower_copy_to_peer_l1(self, s: CopyToPeerL1) -> list:
        """dav-3510: this AIV's half of the rows of a UB tile into the AIC's L1 tile (MTE3, ND -> NZ)."""
        src = self.buffers[s.src.buffer]
        if len(src.shape) != 2:
            raise InternalCompilerError(f"UB -> L1 transfer of a {len(src.shape)}-D tile", stage="lower_tile_ops")
        if self.kernel.row_split is None:
            raise InternalCompilerError("UB -> L1 transfer without a row split between the AIVs",
                                        stage="lower_tile_ops")
        # this AIV's rows: its whole (half) tile, or of a tile each AIV holds whole (thread-level
        # code's, split_rows) the rows from sub * half
        rows = static_int(s.src.extents[0])
        if rows != src.rows:
            if rows is None or static_int(s.src.extents[1]) != src.cols or not _is_zero(s.src.base[1]):
                raise InternalCompilerError(f"UB -> L1 transfer of part of {src.name}", stage="lower_tile_ops")
            row0 = s.src.base[0]
        else:
            self._check_full(s.src, src, s)
            row0 = 0
        return [CopyUbToPeerL1(src=src.name, target=s.target, sub_var=self.kernel.row_split.var, src_rows=rows,
                               src_cols=src.cols, src_pitch=src.pitch or src.cols, c0=32 // src.elem_bytes,
                               dst_c0_stride=(s.rows + 15) // 16 * 16, rows=s.rows, step=s.step, src_row0=row0,
                               loc=s.loc)]

    def lower_accumulate(self, s: TileAccumulate) -> list:
        return self.vec.binary(VecBinary.ADD, s.dst, s.dst, s.src, s.loc)

    # ------------------------------------------------------------ parallel
    def lower_parallel(self, s: TileParallel) -> list:
        return ParallelLowerer(self.vec, self.buffers, s, self.gm_ub_op, self.ub_gm_op, self.window,
                               columns=(column_of, self.column_to_ub, self.column_to_gm)).lower()

    # ------------------------------------------------------------ gemm
    def lower_gemm(self, s: TileGemm) -> list:
        ops = self._lower_gemm(s)
        flag = self.clear_flags.get(s.c.buffer)
        if flag is not None:  # the accumulator holds a product: the next gemm adds to it unless cleared again
            ops.append(_set_flag(flag, 0, s.loc))
        return ops

    def _lower_gemm(self, s: TileGemm) -> list:
        A = self.buffers[s.a.buffer]
        B = self.buffers[s.b.buffer]
        C = self.buffers[s.c.buffer]
        tA, tB = s.trans_a, s.trans_b
        if A.scope is not Scope.L1 or B.scope is not Scope.L1 or C.scope is not Scope.L0C:
            raise InternalCompilerError("gemm operands not in L1/L0C", stage="lower_tile_ops")
        mx = self._mx_scales(s, A, B, C) if s.scale_a is not None else None
        if mx is None:
            self._check_cube_dtypes(A, B, C, tA, tB, s)
        wa = self._window(s.a, A, s, "A", k_dim=0 if tA else 1)
        wb = self._window(s.b, B, s, "B", k_dim=1 if tB else 0)
        self._check_whole_acc(s.c, C, s)
        M, K = (wa.cols, wa.rows) if tA else (wa.rows, wa.cols)
        Kb, N = (wb.cols, wb.rows) if tB else (wb.rows, wb.cols)
        if K != Kb or (M, N) != tuple(C.shape):
            raise UnsupportedError(f"gemm shapes do not agree: A{wa.text} gives MxK={M}x{K}, B{wb.text} gives "
                                   f"KxN={Kb}x{N}, C is {C.shape[0]}x{C.shape[1]}", loc=s.loc)
        # The valid K of this step: the tail of the last copy into A along K.
        kv = self._valid_k(A, tA, wa, s)
        if mx is not None:
            self._check_mx_shapes(s, mx, wa, wb, M, N, K, kv)
        init = self._init(C, s.clear_accum)
        ks = self._k_step(A, B, M, N, K, kv, unit=64 if mx else 0)
        self._lowered.add(id(s))
        if ks == K:
            l0a = self._l0(A, Scope.L0A, (M, K), mx=mx is not None)
            l0b = self._l0(B, Scope.L0B, (K, N), mx=mx is not None)
            return self._gemm_step(A, B, C, l0a, l0b, tA, tB, M, N, K, kv, 0, init, s, wa, wb, mx)
        # The operand tiles exceed what L0A/L0B hold twice over: step through K in chunks of ks.
        # Inside a T.Pipelined loop with num_stages > 1 the chunks alternate between two L0
        # buffers (ping/pong), so the LoadData of one chunk overlaps the Mmad of the previous one
        # (also across iterations: insert_sync's loop-carried flags); otherwise one buffer, serial.
        pingpong = any(lp.kind is LoopKind.PIPELINED and lp.num_stages > 1 for lp in self.loop_stack)
        names = PINGPONG if pingpong else ("",)
        l0as = [self._l0(A, Scope.L0A, (M, ks), n, mx=mx is not None) for n in names]
        l0bs = [self._l0(B, Scope.L0B, (ks, N), n, mx=mx is not None) for n in names]
        ops: list = []
        for c in range(K // ks):
            ops += self._gemm_step(A, B, C, l0as[c % len(names)], l0bs[c % len(names)], tA, tB, M, N, ks, Valid(ks),
                                   c * ks, init if c == 0 else False, s, wa, wb, mx)
        return ops

    def _mx_scales(self, s: TileGemm, A: Buffer, B: Buffer, C: Buffer) -> tuple[Buffer, Buffer]:
        """The scale tiles of a T.gemm_blockscaled, checked against what MmadMx takes (MmadMx and
        LoadData_2D_MX pages): Ascend 950 only; fp8 operands (E4M3 / E5M2, any pairing) into a float32
        accumulator; A stored M x K and B N x K."""
        arch = self.arch
        if not arch.mmad_mx:
            raise UnsupportedError(
                f"T.gemm_blockscaled on {arch.name}: MX-scaled gemms (MmadMx) exist only on dav-3510 (Ascend 950); "
                f"{arch.name}'s Cube core has no MX scale buffers", loc=s.loc,
                hint="compile for dav-3510, or apply the scales yourself: a T.gemm per 32-deep K block and a "
                "scaled add of each product on the Vector cores (examples/fp8_gemm.py, matmul_fp8_block_scale)")
        fp8 = (DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2)
        if A.dtype not in fp8 or B.dtype not in fp8 or C.dtype is not DType.FLOAT32:
            raise UnsupportedError(
                f"T.gemm_blockscaled of '{A.name}' ({A.dtype}) x '{B.name}' ({B.dtype}) -> '{C.name}' ({C.dtype}): "
                "MmadMx takes float8_e4m3fn / float8_e5m2 operands into a float32 accumulator", loc=s.loc,
                hint="use fp8 operand tiles and a float32 accumulator (fp4 operands are not supported here)")
        if s.trans_a or not s.trans_b:
            raise UnsupportedError(
                "T.gemm_blockscaled with A stored K x M (transpose_A=True) or B stored K x N (transpose_B=False): "
                "the compiler emits the MX form whose operands and scales both run along K in the rows "
                "(A M x K, B N x K)", loc=s.loc,
                hint="store A as M x K and B as N x K and pass transpose_B=True")
        return self.buffers[s.scale_a.buffer], self.buffers[s.scale_b.buffer]

    def _check_mx_shapes(self, s: TileGemm, mx: tuple, wa: _Window, wb: _Window, M: int, N: int, K: int,
                         kv: Valid) -> None:
        """Whole operand tiles, K a multiple of 64 without a runtime tail, and scale tiles of
        [M, K/32] and [N, K/32]."""
        if not (wa.whole and wb.whole):
            raise UnsupportedError("T.gemm_blockscaled takes whole operand tiles, not windows of them", loc=s.loc,
                                   hint="copy each operand into a tile of its own shape")
        if K % 64 or kv.tail:
            raise UnsupportedError(
                f"T.gemm_blockscaled with K = {K}" + (" and a runtime tail along K" if kv.tail else "") +
                ": MmadMx steps through K in multiples of 64 (MmadMx page)", loc=s.loc,
                hint="use a block_K that is a multiple of 64 and divides the tensors' K")
        for region, buf, rows, what in ((s.scale_a, mx[0], M, "A"), (s.scale_b, mx[1], N, "B")):
            self._check_full(region, buf, s)
            if tuple(buf.shape) != (rows, K // 32):
                raise UnsupportedError(
                    f"scale tile '{buf.name}' of operand {what} is {list(buf.shape)}; for a {M} x {N} x {K} gemm it "
                    f"holds one scale per row of {what} and 32 K elements: [{rows}, {K // 32}]", loc=s.loc,
                    hint=f"allocate it as T.alloc_shared(({rows}, {K // 32}), 'float8_e8m0fnu')")

    def _window(self, region: Region, buf: Buffer, s: TileGemm, which: str, k_dim: int) -> _Window:
        """The window ``region`` of the L1 tile ``buf`` a gemm operand takes, checked: in the NZ
        layout every C0-column block of the stored tile is contiguous (rows x C0 elements), so a
        window starting at a multiple of 16 rows and C0 columns (C0: 32 bytes) is the element
        offset ``c * rows + r * C0`` of whole 16 x C0 fractals, read with the tile's own strides.
        Its extents are whole fractals too (rows multiples of 16, columns of C0), and along K
        (``k_dim``) a multiple of the K step of L0 (C0). Offsets may be loop variables when they
        are provably aligned and inside the tile."""
        if len(region.base) != 2 or len(buf.shape) != 2:
            raise UnsupportedError(f"gemm operand {which} '{buf.name}' must be a 2-D tile (or a 2-D window of one)",
                                   loc=s.loc)
        c0 = 32 // buf.elem_bytes
        ext = [static_int(e) for e in region.extents]
        base = [static_int(e) for e in region.base]
        an = self.ranges().analyzer() if None in base else None
        if an is not None:
            base = [b if b is not None else an.simplify(e) for b, e in zip(base, region.base, strict=True)]
            base = [static_int(b) if static_int(b) is not None else b for b in base]
        dims = ("rows", "columns")
        units = (16, c0)
        name = buf.name
        for d in range(2):
            b, e, n, u = base[d], ext[d], buf.shape[d], units[d]
            if isinstance(b, int):
                if b < 0 or b + e > n:
                    raise UnsupportedError(
                        f"gemm operand {which}: the window {_slice_text(name, base, ext)} reaches past the "
                        f"{dims[d]} of '{name}' ({buf.shape[0]} x {buf.shape[1]})", loc=s.loc,
                        hint=f"keep the window inside the tile: {dims[d]} 0 .. {n}")
            else:
                bound = an.const_int_bound(b)
                lo, hi = bound.min_value, bound.max_value
                if lo < 0 or hi + e > n:
                    raise UnsupportedError(
                        f"gemm operand {which}: the window {_slice_text(name, base, ext)} of '{name}' "
                        f"({buf.shape[0]} x {buf.shape[1]}) starts at {dims[d][:-1]} '{_expr_text(b)}', which the "
                        f"compiler cannot bound within 0 .. {n - e}", loc=s.loc,
                        hint="use a loop variable with a constant range (T.serial / T.unroll) in the offset, or a "
                        "constant offset")
            aligned = b % u == 0 if isinstance(b, int) else _multiple_of(an, b, u)
            if not aligned or e % u:
                what = f"starts at {dims[d][:-1]} {_expr_text(b)}" if not aligned else f"has {e} {dims[d]}"
                unit_why = f"{u} {dims[d]}" + ("" if d == 0 else f" ({c0} {buf.dtype} elements are 32 bytes)")
                alts = []
                for good in (_aligned_alternatives(b, e, n, u) if isinstance(b, int) else ()):
                    gb, ge = list(base), list(ext)
                    gb[d], ge[d] = good
                    alts.append(_slice_text(name, gb, ge))
                alt = f" (e.g. {' or '.join(alts)})" if alts else ""
                raise AlignmentError(
                    f"gemm operand {which}: the window {_slice_text(name, base, ext)} of '{name}' {what}; the Cube "
                    f"core loads whole 16 x {c0} fractals from L1, so a window's start and extent must be multiples "
                    f"of {unit_why}", loc=s.loc,
                    hint=f"align the window's {dims[d]} to multiples of {u}{alt}, or T.copy the window into a tile of "
                    "its own and multiply that tile")
        if ext[k_dim] % c0:
            raise AlignmentError(
                f"gemm operand {which}: K = {ext[k_dim]} ({dims[k_dim]} of {_slice_text(name, base, ext)}) is not a "
                f"multiple of {c0}; the Cube core steps through K in fractals of {c0} {buf.dtype} elements",
                loc=s.loc, hint=f"use a K that is a multiple of {c0}")
        return _Window(r0=base[0], c0=base[1], rows=ext[0], cols=ext[1], parent_rows=buf.rows, c0_elems=c0,
                       whole=base == [0, 0] and tuple(ext) == tuple(buf.shape), name=name)

    @staticmethod
    def _check_whole_acc(region: Region, C: Buffer, s: TileGemm) -> None:
        if any(static_int(b) != 0 for b in region.base) or tuple(static_int(e) for e in region.extents) != \
                tuple(C.shape):
            window = _slice_text(C.name, list(region.base), list(region.extents))
            raise UnsupportedError(
                f"gemm accumulator '{C.name}' is taken as the window {window}; the accumulator of a gemm is a whole "
                "L0C tile", loc=s.loc,
                hint="allocate a fragment of the window's shape for the product and pass it whole")

    def _check_cube_dtypes(self, A: Buffer, B: Buffer, C: Buffer, tA: bool, tB: bool, s: TileGemm) -> None:
        """The operand and accumulator dtypes must be a combination the arch's Mmad takes
        (Mmad page, tables 5-8); the error names the gemm's line and the arch's combinations."""
        arch = self.arch
        combos = arch.cube_dtypes
        if (A.dtype, B.dtype, C.dtype) in combos:
            if A.elem_bytes != 2 and not arch.b8_transpose and (tA or not tB):
                which = "A stored K x M (transpose_A=True)" if tA else "B stored K x N (transpose_B=False)"
                size = f"{A.elem_bytes}-byte"
                raise UnsupportedError(
                    f"gemm with {size} ({A.dtype}) operands and {which}: {arch.name}'s LoadData transposes only "
                    "2-byte fractals on the way into L0A/L0B (LoadData page, ifTranspose)",
                    loc=s.loc, hint="store A as M x K and B as N x K (T.gemm(A, B, C, transpose_B=True)), the layout "
                    f"{size} Cube operands load without a transpose")
            return
        fp8 = (DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2)
        listed = "; ".join(f"{a} x {b} -> {c}" for a, b, c in combos)
        if A.dtype in fp8 or B.dtype in fp8:
            if not any(a in fp8 for a, _, _ in combos):
                raise UnsupportedError(
                    f"gemm of '{A.name}' ({A.dtype}) x '{B.name}' ({B.dtype}): {arch.name}'s Cube core has no fp8 "
                    f"(its Mmad takes {listed}); fp8 operands exist only on dav-3510 (Ascend 950)",
                    loc=s.loc, hint="compile for dav-3510, or cast the operands to float16/bfloat16 before the gemm")
        accs = [c for a, b, c in combos if (a, b) == (A.dtype, B.dtype)]
        if accs:
            raise UnsupportedError(
                f"gemm of {A.dtype} operands into accumulator '{C.name}' ({C.dtype}); the Cube core accumulates "
                f"{A.dtype} x {B.dtype} in {accs[0]}", loc=s.loc,
                hint=f"allocate '{C.name}' as T.alloc_fragment(..., '{accs[0]}')")
        raise UnsupportedError(
            f"gemm of '{A.name}' ({A.dtype}) x '{B.name}' ({B.dtype}) -> '{C.name}' ({C.dtype}) is not a combination "
            f"{arch.name}'s Cube core takes: {listed}", loc=s.loc,
            hint="cast the operands to float16/bfloat16 (float32 accumulator) before the gemm")

    def _k_step(self, A: Buffer, B: Buffer, M: int, N: int, K: int, kv: Valid, unit: int = 0) -> int:
        """The K of one LoadData/Mmad step: all of K when both operands fit L0A/L0B twice (the
        multi_buffer pass may then double them) or when K has a runtime tail; otherwise the
        largest multiple of 16 dividing K whose operand chunks fit twice. L0A/L0B are shared with
        the other gemms of the kernel (see ``_l0_reserve``)."""
        cap = self.arch.capacity
        esz = A.nbytes // (A.rows * A.cols)

        def fits(k: int, copies: int) -> bool:
            res_a, res_b = self._l0_reserve(A.name, B.name, M * k, k * N)
            return (copies * M * k * esz + res_a <= cap[Scope.L0A]
                    and copies * k * N * esz + res_b <= cap[Scope.L0B])

        c0 = unit or 32 // A.elem_bytes   # chunks of K stay whole fractals (MmadMx: multiples of 64)
        if fits(K, 2) or kv.tail:
            return K
        for ks in range(K - c0, c0 - 1, -c0):
            if K % ks == 0 and fits(ks, 2):
                return ks
        return K

    def _l0_reserve(self, a: str, b: str, numel_a: int, numel_b: int) -> tuple[int, int]:
        """L0A/L0B bytes the kernel's other gemms keep while a gemm of the L1 tiles ``a`` and
        ``b`` loads chunks of ``numel_a`` / ``numel_b`` elements: the L0 buffers made for the
        gemms lowered before (those of ``a`` and ``b`` themselves when too small to be reused),
        and for the gemms still to lower, the least their operands can take (a 16-deep K chunk,
        twice; the whole operand when K is 16)."""
        res = {Scope.L0A: 0, Scope.L0B: 0}
        made = set()
        for (l1, scope), names in self._l0_of.items():
            made.add((l1, scope))
            own = {Scope.L0A: (a, numel_a), Scope.L0B: (b, numel_b)}[scope]
            for n in names:
                buf = self.buffers[n]
                if l1 != own[0] or buf.numel < own[1]:
                    res[scope] += buf.nbytes
        least: dict = {}
        for g in self._gemms:
            if id(g) in self._lowered:
                continue
            ga, gb = self.buffers[g.a.buffer], self.buffers[g.b.buffer]
            ea = [static_int(e) for e in g.a.extents][-2:]   # the operands' windows (whole tiles mostly)
            eb = [static_int(e) for e in g.b.extents][-2:]
            gm = ea[1] if g.trans_a else ea[0]
            gk = ea[0] if g.trans_a else ea[1]
            gn = eb[0] if g.trans_b else eb[1]
            k_least, copies = (16, 2) if gk > 16 and gk % 16 == 0 else (gk, 1)
            for scope, buf, mn in ((Scope.L0A, ga, gm), (Scope.L0B, gb, gn)):
                if buf.name in (a, b) or (buf.name, scope) in made:
                    continue
                key = (buf.name, scope)
                least[key] = max(least.get(key, 0), copies * mn * k_least * buf.elem_bytes)
        for (_, scope), nbytes in least.items():
            res[scope] += nbytes
        return res[Scope.L0A], res[Scope.L0B]

    def _gemm_step(self, A: Buffer, B: Buffer, C: Buffer, l0a: Buffer, l0b: Buffer, tA: bool, tB: bool, M: int,
                   N: int, K: int, kv: Valid, k0: int, init, s: TileGemm, wa: _Window, wb: _Window,
                   mx: tuple | None = None) -> list:
        """LoadData A and B rows k0..k0+K of their windows of the L1 tiles into L0A/L0B, then one
        Mmad (MX: the scales of those K come along with each LoadData, then MmadMx)."""
        # Element offset of K row k0 inside the NZ tiles in L1: a stored [rows, cols] tile keeps
        # each C0-column block contiguous (rows x C0 elements; C0 = 16 for 2-byte types, 32 for
        # 1-byte ones), so a step along the columns moves k0 * rows elements and a step along the
        # rows k0 * C0; a window adds the offset of its first fractal (the strides stay the tile's).
        c0 = 32 // A.elem_bytes
        a_off = wa.offset(k0 if tA else 0, 0 if tA else k0)
        b_off = wb.offset(0 if tB else k0, k0 if tB else 0)
        chunk = f" K {k0}..{k0 + K}" if k0 or K != (wa.rows if tA else wa.cols) else ""
        part = chunk if wa.whole and wb.whole else None
        part_a = part if part is not None else wa.text + chunk
        part_b = part if part is not None else wb.text + chunk
        if self.arch.load_data_v2:
            # LoadData2DParamsV2: the L1 region is mStep row blocks (16 rows) x kStep column blocks
            # (32 bytes: C0 elements) of the stored tile; ifTranspose stores the transposed region
            # (A stored K x M -> NZ M x K; B stored K x N -> ZN). srcStride/dstStride are the
            # distances between column blocks in fractals.
            rows_k, cols_k = KFractals(kv, 16), KFractals(kv, c0)
            # MX: the same LoadData moves the operand's scales into L0A_MX / L0B_MX
            # (LoadData2DMxParams: x in fractals of 16 rows, y in pairs of scales, 64 K elements;
            # the L1 scale tile holds its row fractal's pairs consecutively, Layout.MX).
            V2, ext_a, ext_b = LoadData2DV2, {}, {}
            if mx is not None:
                V2 = LoadData2DMx
                ext_a, ext_b = ({"scales": sc.name, "x_step": mn // 16, "y_start": k0 // 64, "y_step": K // 64,
                                 "scale_stride": sc.cols // 2} for sc, mn in ((mx[0], M), (mx[1], N)))
            load_a = (V2(dst=l0a.name, src=A.name, src_offset=a_off, m_step=rows_k, k_step=M // c0,
                         src_stride=A.rows // 16, dst_stride=M // 16, trans=True,
                         note="A stored K x M, transposed into NZ", part=part_a, operand_transposed=True,
                         loc=s.loc, **ext_a) if tA else
                      V2(dst=l0a.name, src=A.name, src_offset=a_off, m_step=M // 16, k_step=cols_k,
                         src_stride=A.rows // 16, dst_stride=M // 16, trans=False,
                         note="A stored M x K, NZ into NZ", part=part_a, loc=s.loc, **ext_a))
            load_b = (V2(dst=l0b.name, src=B.name, src_offset=b_off, m_step=N // 16, k_step=cols_k,
                         src_stride=B.rows // 16, dst_stride=N // 16, trans=False,
                         note="B stored N x K: its NZ fractals are already ZN", part=part_b,
                         operand_transposed=True, loc=s.loc, **ext_b) if tB
                      else V2(dst=l0b.name, src=B.name, src_offset=b_off, m_step=rows_k, k_step=N // c0,
                              src_stride=B.rows // 16, dst_stride=N // 16, trans=True,
                              note="B stored K x N, each fractal transposed into ZN", part=part_b, loc=s.loc,
                              **ext_b))
        else:
            load_a = LoadData2D(operand="A", dst=l0a.name, src=A.name, src_offset=a_off, mn=M, k=kv, trans=tA,
                                src_rows=A.rows, part=part_a, c0=c0, loc=s.loc)
            load_b = LoadData2D(operand="B", dst=l0b.name, src=B.name, src_offset=b_off, mn=N, k=kv, trans=tB,
                                src_rows=B.rows, part=part_b, c0=c0, loc=s.loc)
        mmad = (MmadMx if mx is not None else Mmad)(dst=C.name, a=l0a.name, b=l0b.name, m=M, n=N, k=kv, init=init,
                                                    loc=s.loc)
        return [load_a, load_b, mmad]

    def _valid_k(self, A: Buffer, tA: bool, wa: _Window, s: TileGemm) -> Valid:
        K = wa.rows if tA else wa.cols
        info = self.valid_extents.get(A.name)
        if info is None:
            return Valid(K)
        vr, vc, gshape, _cloc = info
        kv = vr if tA else vc
        if not kv.tail:
            return Valid(K)
        if not wa.whole and K != (A.rows if tA else A.cols):
            raise UnsupportedError(
                f"gemm operand A is the K window {wa.text} of '{A.name}', whose last copy from GM may stop short "
                "of its K (a runtime tail): the window and the tail would have to be combined at run time",
                loc=s.loc, hint="take all of the tile's K in the gemm, or pick a block_K that divides K")
        gk = gshape[-2] if tA else gshape[-1]
        unit = 16 if tA or A.elem_bytes != 1 else 32   # fractal width along K: 32 bytes of a column block
        if static_int(gk) is None:
            # a runtime tail of K is taken in whole fractals: the callable checks K at each call
            self.runtime_checks.append(MultipleCheck(
                size=gk, unit=unit, what=f"the reduction dimension K = {gk} of the gemm", loc=s.loc,
                hint=f"pad K with zeros to a multiple of {unit}"))
            return kv
        if gk % unit:
            raise AlignmentError(
                f"the reduction dimension K = {gk} of the gemm is not a multiple of {unit}, and the tile K = {K} "
                "does not divide it: the Cube core cannot take a partial fractal along K",
                loc=s.loc,
                hint=f"pad K to a multiple of {unit} (e.g. {(gk + unit - 1) // unit * unit}) with zeros, or pick a "
                f"block_K that divides {gk}",
            )
        return kv

    def _l0(self, l1: Buffer, scope: Scope, shape: tuple, suffix: str = "", mx: bool = False) -> Buffer:
        # The L0 buffers made for this L1 tile: reuse the first that is large enough (another gemm
        # may load this tile into a smaller chunk: then a buffer of its own); fresh names never take
        # a user tile's (a_l0a).
        made = self.l0_names.setdefault((l1.name, scope, suffix), [])
        name = next((n for n in made if self.buffers[n].numel >= shape[0] * shape[1]), None)
        if name is None:
            name = fresh_name(f"{l1.name}_{scope.value.lower()}{suffix}", self.buffers)
            made.append(name)
        self._l0_of.setdefault((l1.name, scope), set()).add(name)
        if name not in self.buffers:
            layout = self.arch.l0a_layout if scope is Scope.L0A else self.arch.l0b_layout
            self.buffers[name] = Buffer(name=name, shape=shape, dtype=l1.dtype, kind=BufferKind.TEMP, loc=l1.loc,
                                        scope=scope, layout=Layout(layout),
                                        role=f"{'A' if scope is Scope.L0A else 'B'} operand of the Mmad, loaded from "
                                        f"{l1.name}")
        if mx:  # MmadMx page: fp8 A and B start at 1024-byte aligned L0A / L0B addresses
            self.buffers[name].align = 1024
        return self.buffers[name]

    def _init(self, C: Buffer, clear_accum: bool):
        if clear_accum:
            return True
        if C.name in self.clear_flags:
            return InitFlag(self.clear_flags[C.name])
        if C.name not in self.pending_clear:
            return False
        depth = self.pending_clear.pop(C.name)
        new_loops = self.loop_stack[depth:]
        if not new_loops:
            return True
        # Each loop at its first value. In part B of a skewed loop (its one-trip loop over the step
        # variable, Loop.skewed) the first step is the step variable at the loop's start: the skewed
        # loop's own variable is `lead` steps ahead there.
        firsts: list = []
        n = 0
        while n < len(new_loops):
            lp = new_loops[n]
            if lp.skewed and n + 1 < len(new_loops) and _is_part_b_loop(new_loops[n + 1], lp):
                firsts.append((new_loops[n + 1].var, lp.start))
                n += 2
                continue
            firsts.append((lp.var, lp.start))
            n += 1
        return FirstIteration(tuple(v for v, _ in firsts), tuple(s for _, s in firsts))

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
        CopyToPeerUbDual: lower_copy_to_peer_ub_dual,
        CopyToPeerL1: lower_copy_to_peer_l1,
    }


def _fuse_rescale(body: list, buffers: dict, arch) -> list:
    """``x = x * r[row]`` (a broadcast Mul) followed, with nothing touching x or r's block vector in
    between, by ``x = x + p`` over the same whole tile: one FusedMulAdd (x = r * x + p), the online
    softmax's rescale of acc_o and the add of the step's P V. A vector pass fewer per step. Only
    for the types the arch's FusedMulAdd takes (half, float; bfloat16 on dav-3510): the others
    keep the Mul and the Add."""
    out: list = []
    pending: dict = {}  # x -> index in out of its broadcast Mul
    fma = arch.vector_op(VecOther.FUSED_MUL_ADD)
    for s in body:
        if isinstance(s, Loop):
            s = dataclasses.replace(s, body=_fuse_rescale(s.body, buffers, arch))
        elif isinstance(s, If):
            s = dataclasses.replace(s, then_body=_fuse_rescale(s.then_body, buffers, arch),
                                    else_body=_fuse_rescale(s.else_body, buffers, arch))
        if (isinstance(s, VecBinaryOp) and s.op is VecBinary.ADD and s.dst == s.src0 != s.src1
                and s.dst in pending):
            n = pending.pop(s.dst)
            mul = out[n]
            if s.count == mul.rows * mul.cols and s.src1 != mul.s1.buffer:
                out[n] = None
                part = RepeatOperand(s.src1, row=mul.dst_row, chunk=1, blk=1, rep=mul.dst_rep)
                out.append(VecFusedMulAddBcast(op=VecBinary.MUL, dst=s.dst, s0=mul.s1, s1=part, rows=mul.rows,
                                               cols=mul.cols, lanes=mul.lanes, dst_row=mul.dst_row,
                                               dst_rep=mul.dst_rep, chunks=mul.chunks,
                                               what=f"{mul.s1.buffer}(row), {s.dst}, {s.src1}", loc=s.loc))
                continue
        touched = set()
        if isinstance(s, AscOp):
            touched = {*s.reads, *s.writes}
        elif isinstance(s, Loop | If):
            touched = {b for x in walk([s]) if isinstance(x, AscOp) for b in (*x.reads, *x.writes)}
        for x in [x for x, n in pending.items() if x in touched or out[n].s1.buffer in touched]:
            del pending[x]
        if (type(s) is VecBinaryBcast and s.op is VecBinary.MUL and s.s0.buffer == s.dst and s.s0.blk == 1
                and s.s0.chunk == 1 and s.s1.blk == 0 and s.s1.chunk == 0 and s.cols == s.dst_row
                and s.s1.buffer != s.dst and fma.takes(buffers[s.dst].dtype, count_form=False)):
            pending[s.dst] = len(out)
        out.append(s)
    return [x for x in out if x is not None]


def _fuse_mul_add_dst(body: list, buffers: dict) -> list:
    """``t = x * r[row]`` (a broadcast Mul into a vector temporary) directly followed, in the same
    statement, by ``y = y + t`` over the same whole tile: one MulAddDst (y = x * r + y, documented
    for half/float; two roundings, as the pair it replaces). A vector pass and the temporary fewer,
    e.g. a block-scaled GEMM's per-step promotion of its partial product."""
    out: list = []
    for s in body:
        if isinstance(s, Loop):
            s = dataclasses.replace(s, body=_fuse_mul_add_dst(s.body, buffers))
        elif isinstance(s, If):
            s = dataclasses.replace(s, then_body=_fuse_mul_add_dst(s.then_body, buffers),
                                    else_body=_fuse_mul_add_dst(s.else_body, buffers))
        mul = out[-1] if out else None
        if (isinstance(s, VecBinaryOp) and s.op is VecBinary.ADD and s.dst == s.src0 and type(mul) is VecBinaryBcast
                and mul.op is VecBinary.MUL and mul.dst == s.src1 and s.loc == mul.loc
                and buffers[mul.dst].kind is BufferKind.TEMP and s.dst not in (mul.s0.buffer, mul.s1.buffer)
                and s.count == mul.rows * mul.cols and buffers[s.dst].dtype == buffers[mul.dst].dtype
                and (buffers[s.dst].pitch or buffers[s.dst].cols) == (buffers[mul.dst].pitch or buffers[mul.dst].cols)
                and buffers[s.dst].dtype in (DType.FLOAT16, DType.FLOAT32)):
            out[-1] = VecMulAddDstBcast(op=VecBinary.MUL, dst=s.dst, s0=mul.s0, s1=mul.s1, rows=mul.rows,
                                        cols=mul.cols, lanes=mul.lanes, dst_row=mul.dst_row, dst_rep=mul.dst_rep,
                                        chunks=mul.chunks, what=f"{mul.what}, {s.dst}", loc=s.loc)
            continue
        out.append(s)
    return out


def _fold_fill_reduce(body: list, buffers: dict) -> list:
    """``T.fill(x, identity)`` right before ``T.reduce_max/min/sum(..., x, clear=False)`` (the online
    softmax's running max) is the reduction with clear=True: max(-inf, m) = m and 0 + s = s exactly,
    so the reduction writes x directly (a Duplicate and a combining op fewer per step)."""
    out: list = []
    for s in body:
        prev = out[-1] if out else None
        if (isinstance(s, TileReduce) and not s.clear and isinstance(prev, TileFill)
                and s.kind in (ReduceKind.MAX, ReduceKind.MIN, ReduceKind.SUM)
                and prev.dst.buffer == s.dst.buffer != s.src.buffer and s.dst.buffer in buffers
                and [const_value(x) for x in prev.dst.extents] == [float(n) for n in buffers[s.dst.buffer].shape]
                and const_value(prev.value) == identity(s.kind, buffers[s.dst.buffer].dtype)):
            out[-1] = dataclasses.replace(s, clear=True)
        else:
            out.append(s)
    return out


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


def _share_product_buffers(kernel: Kernel, transfers: list) -> Kernel:
    """Memory-short retry: the UB tiles that receive fresh gemm products through the workspace
    (``acc_s_part``, ``acc_o_part`` of FlashAttention on dav-c220), when they have one shape and
    dtype, become one tile. Each is written by this AIV's own copy from the workspace and read by
    the add right after it, so sharing it only orders the next copy after the previous add (the
    flags follow from the shared name); products written on chip by the AIC keep their own."""
    keep: dict = {}
    rename: dict = {}
    into: dict = {}  # kept product tile -> the accumulators it serves
    for t in transfers:
        if t.route is not Route.WORKSPACE or t.direction is not Direction.C2V or t.target == t.tile:
            continue
        b = kernel.buffers.get(t.target)
        if b is None or b.kind is not BufferKind.FRAGMENT:
            continue
        key = (tuple(b.shape), b.dtype)
        if key in keep and keep[key] != t.target:
            rename[t.target] = keep[key]
        else:
            keep[key] = t.target
        into.setdefault(keep[key], []).append(t.tile)
    if not rename:
        return kernel

    def fix(s) -> list:
        if isinstance(s, TileCopy) and s.dst.buffer in rename:
            return [dataclasses.replace(s, dst=s.dst.with_buffer(rename[s.dst.buffer]))]
        if isinstance(s, TileAccumulate) and s.src in rename:
            return [dataclasses.replace(s, src=rename[s.src])]
        return [s]

    buffers = {n: b for n, b in kernel.buffers.items() if n not in rename}
    for new in set(rename.values()):
        buffers[new] = dataclasses.replace(
            buffers[new], role=f"fresh gemm products added into {', '.join(dict.fromkeys(into[new]))} (one tile)")
    body = map_body(kernel.body, fix)
    leftover = {n for x in walk(body) if not isinstance(x, Loop | If) for n in _stmt_names(x)} & rename.keys()
    if leftover:
        raise InternalCompilerError(f"product buffers {sorted(leftover)} still used after sharing",
                                    stage="lower_tile_ops")
    return kernel.replace(buffers=buffers, body=body)


def _is_part_b_loop(inner: Loop, skewed: Loop) -> bool:
    """Is ``inner`` the one-trip loop of ``skewed``'s part B (skew.skewed_loop: its variable is the
    step, starting `lead` trips behind the skewed loop's)?"""
    uses = []
    tirx.stmt_functor.post_order_visit(tirx.Evaluate(inner.start) if isinstance(inner.start, tirx.PrimExpr)
                                       else tirx.Evaluate(0), lambda x: uses.append(x) if x.same_as(skewed.var)
                                       else None)
    return static_int(inner.extent) == 1 and bool(uses)


def _set_flag(flag: str, value: int, loc) -> ScalarStore:
    i32 = "int32"
    return ScalarStore(buffer=flag, indices=(tirx.IntImm(i32, 0),), value=tirx.IntImm(i32, value), loc=loc)


def _clears_needing_a_flag(body: list, buffers: dict) -> set[str]:
    """The L0C accumulators with a T.clear that the next gemm into them cannot fold statically.

    A clear is folded into the overwrite of the gemm that comes next in the same statement list,
    possibly inside loops that follow (FirstIteration of those loops), when nothing else touches the
    accumulator first and no ``if`` lies on the way. A clear with no such gemm after it -- at the end
    of a loop body, whose next gemm is the next iteration's, or inside an ``if`` -- needs a runtime
    flag: T.clear sets it, every gemm into the accumulator overwrites while it is set and resets it.
    (A clear at the end of the kernel, with nothing after it, is dead and needs nothing.)"""
    from .partition import tile_buffers

    def first(items: list, acc: str) -> str | None:
        """'folds' when the first access to ``acc`` in ``items`` is a gemm into it that the fold
        reaches (or another clear: this one is then dead); 'other' for anything else; None when
        nothing touches it."""
        for s in items:
            if isinstance(s, Loop):
                # a skewed loop's two parts (each under its `if`) are folded into as a plain body:
                # FirstIteration of part B is its step variable's first value (_init)
                body = [x for part in s.body for x in part.then_body] if s.skewed else s.body
                r = first(body, acc)
                if r is not None:
                    return r
            elif isinstance(s, If):
                if any(acc in tile_buffers(x) for x in walk([s]) if not isinstance(x, Loop | If)):
                    return "other"
            elif acc in tile_buffers(s):
                folds = (isinstance(s, TileGemm) and s.c.buffer == acc) or (isinstance(s, TileFill) and
                                                                              s.dst.buffer == acc)
                return "folds" if folds else "other"
        return None

    out: set[str] = set()

    def visit(items: list, top: bool) -> None:
        for n, s in enumerate(items):
            if isinstance(s, Loop):
                visit(s.body, False)
            elif isinstance(s, If):
                visit(s.then_body, False)
                visit(s.else_body, False)
            elif isinstance(s, TileFill) and buffers[s.dst.buffer].scope is Scope.L0C:
                after = first(items[n + 1:], s.dst.buffer)
                if after != "folds" and not (top and after is None):
                    out.add(s.dst.buffer)

    visit(body, True)
    # a clear matters only to a gemm that would otherwise add to the accumulator
    adds = {s.c.buffer for s in walk(body) if isinstance(s, TileGemm) and not s.clear_accum}
    return out & adds


def _stmt_names(s) -> set:
    from .partition import tile_buffers

    return set(tile_buffers(s)) | ({s.dst, s.src} if isinstance(s, TileAccumulate) else set())


def _elide_staging_copies(body: list, buffers: dict) -> list:
    """``T.copy(a, b)`` between two whole UB tiles of one shape and dtype, where b is written by this
    copy alone and only read as the source of the copies into global tensors that follow it in the
    same statement list (before a changes): those copies read a itself, and b takes no UB (FA
    backward's ``T.copy(dk, dk_shared); T.atomic_add(dK[...], dk_shared)``)."""
    from .partition import tile_buffers, tile_writes

    def writes(s) -> set:
        if isinstance(s, Loop | If):
            return {n for x in walk([s]) if not isinstance(x, Loop | If) for n in writes(x)}
        extra = {s.into} if hasattr(s, "into") else set()
        return set(tile_writes(s)) | extra | ({s.dst} if isinstance(s, TileAccumulate) else set())

    def touches(s) -> set:
        if isinstance(s, Loop | If):
            return {n for x in walk([s]) if not isinstance(x, Loop | If) for n in touches(x)}
        return set(tile_buffers(s)) | writes(s)

    every = [x for x in walk(body) if not isinstance(x, Loop | If)]

    def whole(r: Region, b: Buffer) -> bool:
        return all(_is_zero(x) for x in r.base) and [static_int(e) for e in r.extents] == list(b.shape)

    def go(items: list) -> list:
        items = [dataclasses.replace(s, body=go(s.body)) if isinstance(s, Loop) else
                 dataclasses.replace(s, then_body=go(s.then_body), else_body=go(s.else_body)) if isinstance(s, If)
                 else s for s in items]
        n = 0
        while n < len(items):
            s = items[n]
            a, b = (buffers.get(s.src.buffer), buffers.get(s.dst.buffer)) if isinstance(s, TileCopy) else (None, None)
            if a is None or b is None or a.scope is not Scope.UB or b.scope is not Scope.UB or s.atomic is not None \
                    or a.shape != b.shape or a.dtype != b.dtype \
                    or b.kind not in (BufferKind.SHARED, BufferKind.FRAGMENT) \
                    or not whole(s.src, a) or not whole(s.dst, b):
                n += 1
                continue
            uses = [m for m in range(n + 1, len(items)) if b.name in touches(items[m])]
            users = [items[m] for m in uses]
            to_gm = all(isinstance(u, TileCopy) and u.src.buffer == b.name and whole(u.src, b)
                        and u.dst.buffer in buffers and buffers[u.dst.buffer].scope is Scope.GM for u in users)
            if not uses or not to_gm or sum(b.name in touches(x) for x in every) != len(uses) + 1 or any(
                    a.name in writes(items[m]) for m in range(n + 1, uses[-1] + 1)):
                n += 1
                continue
            for m in uses:
                items[m] = dataclasses.replace(items[m], src=items[m].src.with_buffer(a.name))
            del items[n]
            del buffers[b.name]
        return items

    return go(body)


def lower_tile_ops(program: Program, compact_temps: bool = False) -> Program:
    """Lower tile ops to pipe-tagged Ascend ops in every kernel. ``compact_temps``: element-wise
    results overwrite their operands' temporaries (the driver's second try when the first
    lowering does not fit the memory budget)."""
    checks: list = []

    def one(k: Kernel, lc, p) -> Kernel:
        if compact_temps and k.core is Core.AIV:
            k = _share_product_buffers(k, lc.transfers)
        lowerer = TileLowerer(k, p.arch, lc.grid, compact_temps)
        out = lowerer.run()
        seen = {(str(c.size), c.unit, c.loc) for c in checks}
        checks.extend(c for c in lowerer.runtime_checks if (str(c.size), c.unit, c.loc) not in seen)
        return out

    out = program.map_kernels(one)
    out = out.replace(bounds_checks=[*program.bounds_checks, *checks])
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
            # the dual-destination Fixpipe's page: an arch with the mode, an even M split between the AIVs
            if isinstance(s, FixpipeToPeerUbDual) and (not program.arch.l0c_to_ub_dual or s.rows % 2):
                raise InternalCompilerError(f"dual-destination Fixpipe of {s.src} ({s.rows} rows) on "
                                            f"{program.arch.name}", stage="lower_tile_ops")


__all__ = ["PINGPONG", "lower_tile_ops", "verify_lowered", "gm_window"]
