"""Vector lowering used by lower_tile_ops: T.Parallel bodies, fills, casts and row reductions.

A T.Parallel assignment is an expression tree over tiles; each node becomes one vector
instruction over the whole tile (count form), or a mask/repeat instruction when one operand
is broadcast along rows (a per-row value, expanded with Brcb) or along columns (a per-column
vector, read with a repeat stride of 0). Intermediate values live in UB temporaries drawn from
a pool, so the UB footprint stays bounded. fp16 expressions are computed in their own dtype, one
rounding per instruction, as the hardware does; bf16 ones too where the arch computes in bf16
(promote_narrow), in float32 elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import tvm
from tvm import tirx

from ascend_backend.arch import Arch
from ascend_backend.dtypes import DType, known
from ascend_backend.dtypes import dtype as to_dtype
from ascend_backend.errors import InternalCompilerError, UnsupportedError
from ascend_backend.ir import (
    Buffer,
    BufferKind,
    CmpMode,
    DiagPrefix,
    GmWindow,
    Layout,
    MaskLogic,
    ReduceKind,
    Region,
    RepeatOperand,
    Rounding,
    ScalarConv,
    ScalarExpr,
    ScalarLit,
    ScalarNeg,
    ScalarValue,
    Scope,
    Valid,
    VecBinary,
    VecBinaryBcast,
    VecBinaryBcastRows,
    VecBinaryOp,
    VecBrcb,
    VecCast,
    VecCompare,
    VecCopy,
    VecDiagFill,
    VecDuplicate,
    VecFold,
    VecFoldInit,
    VecFoldLoop,
    VecFoldRows,
    VecGather,
    VecIndex,
    VecMaskLogic,
    VecOther,
    VecScalar,
    VecScalarOp,
    VecSelect,
    VecTranspose,
    VecUnary,
    VecUnaryOp,
    VecWholeReduce,
)

from . import unpack_int4

LN2 = math.log(2.0)


def const_value(e) -> float | None:
    """Fold a constant scalar expression (literals, -inf, products of constants)."""
    if isinstance(e, int | float):
        return float(e)
    if isinstance(e, tirx.IntImm | tirx.FloatImm):
        return float(e.value)
    if isinstance(e, tirx.Cast):
        return const_value(e.value)
    if isinstance(e, tirx.Call):
        name = str(e.op.name) if hasattr(e.op, "name") else ""
        if name.endswith("infinity"):
            return math.inf
        return None
    if isinstance(e, tirx.Mul | tirx.Add | tirx.Sub | tirx.Div):
        a, b = const_value(e.a), const_value(e.b)
        if a is None or b is None:
            return None
        if isinstance(e, tirx.Mul):
            return a * b
        if isinstance(e, tirx.Add):
            return a + b
        if isinstance(e, tirx.Sub):
            return a - b
        return a / b if b else None
    return None


def factor_scale(e) -> tuple | None:
    """(x, k) with e = x * k, k a finite non-zero constant: ``x * k``, ``k * x``, ``x / k`` and
    ``a * k - b * k`` / ``a * k + b * k`` (the online softmax's exp2(s * scale - m * scale)). Folding
    k into exp2's ln 2 saves a vector pass per factored term (reassociated like fast-math)."""

    def scaled(t):
        if isinstance(t, tirx.Mul):
            for x, c in ((t.a, t.b), (t.b, t.a)):
                k = const_value(c)
                if k is not None and math.isfinite(k) and k != 0.0 and const_value(x) is None:
                    return x, k
        if isinstance(t, tirx.Div):
            k = const_value(t.b)
            if k is not None and math.isfinite(k) and k != 0.0 and const_value(t.a) is None:
                return t.a, 1.0 / k
        return None

    one = scaled(e)
    if one is not None:
        return one
    if isinstance(e, tirx.Sub | tirx.Add):
        a, b = scaled(e.a), scaled(e.b)
        if a is not None and b is not None and a[1] == b[1]:
            return (tirx.Sub if isinstance(e, tirx.Sub) else tirx.Add)(a[0], b[0]), a[1]
    return None


def exact_reciprocal(c: float | None, dt) -> float | None:
    """1 / c when multiplying by it gives x / c exactly (c a power of two whose reciprocal is a normal
    number of a float dtype ``dt``); else None: x / c stays a division, as TileLang's default (no fast
    math) computes it (x / 448 and x * (1 / 448) differ in the last bit, which an FP8 cast can show)."""
    d = to_dtype(dt)
    if c is None or not d.is_float or not math.isfinite(c) or c == 0.0:
        return None
    mant, exp = math.frexp(abs(c))
    min_exp = -14 if d is DType.FLOAT16 else -126  # the least normal exponent (bfloat16 has float32's)
    if mant != 0.5 or not min_exp <= 1 - exp <= -min_exp:
        return None
    return 1.0 / c


def _cast_key(e) -> tuple | None:
    """What identifies a conversion of a tile element: its type, the tile, the indices."""
    if isinstance(e, tirx.Cast) and isinstance(e.value, tirx.BufferLoad):
        return str(e.dtype), e.value.buffer.name, tuple(str(i) for i in e.value.indices)
    return None


def _repeated_casts(value) -> set:
    """The conversions of a tile element that ``value`` makes more than once."""
    seen: dict = {}

    def visit(n) -> None:
        key = _cast_key(n)
        if key is not None:
            seen[key] = seen.get(key, 0) + 1

    tirx.stmt_functor.post_order_visit(value, visit)
    return {k for k, n in seen.items() if n > 1}


def scalar_literal(v: float, dt) -> ScalarLit:
    return ScalarLit(float(v), to_dtype(dt))


def _scalar_dtype(dt: str) -> DType:
    """The dtype a runtime scalar operand is converted to (float where TVM's is not a data type)."""
    return to_dtype(dt) if known(dt) else DType.FLOAT32


@dataclass
class Opnd:
    """An operand of a vector instruction.

    kind: "tile" (a buffer shaped like the domain), "row" (a per-row vector broadcast along
    columns), "col" (a per-column vector broadcast along rows) or "scalar" (a runtime scalar).
    """

    kind: str
    dtype: str
    buffer: str | None = None
    expr: ScalarValue | None = None
    temp: bool = False


# T.Parallel function name -> the vector op, or a composite built from several ("exp2", ...)
_UNARY = {"exp": VecUnary.EXP, "log": VecUnary.LN, "sqrt": VecUnary.SQRT, "rsqrt": VecUnary.RSQRT,
          "fabs": VecUnary.ABS, "abs": VecUnary.ABS, "exp2": "exp2", "log2": "log2", "tanh": "tanh",
          "sigmoid": "sigmoid"}
_BINARY = {tirx.Add: VecBinary.ADD, tirx.Sub: VecBinary.SUB, tirx.Mul: VecBinary.MUL, tirx.Div: VecBinary.DIV,
           tirx.Max: VecBinary.MAX, tirx.Min: VecBinary.MIN}
_SCALAR_FORM = {VecBinary.ADD: VecScalarOp.ADDS, VecBinary.MUL: VecScalarOp.MULS, VecBinary.MAX: VecScalarOp.MAXS,
                VecBinary.MIN: VecScalarOp.MINS}


# What a vector op computes, in the DSL's words (the errors of VectorEmitter.check_dtype).
_OP_WORDS = {
    VecBinary.ADD: "`+`", VecBinary.SUB: "`-`", VecBinary.MUL: "`*`", VecBinary.DIV: "`/`",
    VecBinary.MAX: "T.max", VecBinary.MIN: "T.min",
    VecScalarOp.ADDS: "`+` or `-` of a scalar",
    VecScalarOp.MULS: "`*` by a scalar (so are `s - x`, `-x`, T.abs and `x / c` for a power of two c)",
    VecScalarOp.MAXS: "T.max with a scalar", VecScalarOp.MINS: "T.min with a scalar",
    VecUnary.EXP: "T.exp (and exp2, tanh, sigmoid)", VecUnary.LN: "T.log (and log2)", VecUnary.SQRT: "T.sqrt",
    VecUnary.RSQRT: "T.rsqrt", VecUnary.ABS: "T.abs", VecUnary.RECIPROCAL: "a reciprocal (tanh, sigmoid)",
    VecOther.DUPLICATE: "a fill (T.fill, T.clear, a scalar stored into every element)",
    VecOther.FUSED_MUL_ADD: "a fused multiply-add",
    VecOther.GATHER: "a read of a tile at computed indices (a Gather)",
}
_DTYPE_ORDER = (DType.BOOL, DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.FLOAT16, DType.BFLOAT16,
                DType.INT32, DType.UINT32, DType.FLOAT32, DType.INT64, DType.UINT64, DType.FLOAT8_E4M3FN,
                DType.FLOAT8_E5M2, DType.FLOAT8_E8M0FNU)
# The types a refused op's hint offers to compute in instead.
_WIDER = (DType.INT16, DType.INT32, DType.FLOAT16, DType.FLOAT32)


def _names(types) -> str:
    return ", ".join(str(t) for t in sorted(types, key=lambda t: _DTYPE_ORDER.index(t) if t in _DTYPE_ORDER else 99))


def _holds(wide: DType, dt: DType) -> bool:
    """Does ``wide`` hold every value of ``dt`` exactly?"""
    if dt.int_range is None:
        return wide == DType.FLOAT32 and dt.bytes < 4  # the narrow floats
    lo, hi = dt.int_range
    if wide.int_range is not None:
        return wide.int_range[0] <= lo and hi <= wide.int_range[1]
    exact = 2 ** 11 if wide == DType.FLOAT16 else 2 ** 24  # every integer up to this is exact
    return -exact <= lo and hi <= exact


def _byte_words(value: ScalarValue | float, dt: DType, arch, loc) -> ScalarValue:
    """The 16-bit word whose two bytes are both ``value`` converted to the 1-byte ``dt``: a
    constant, or the scalar unit's ``(x & 255) * 257`` of a runtime integer (its low byte is the
    int8 / uint8 conversion; a bool is 0 or 1)."""
    if isinstance(value, ScalarLit):
        value = value.value
    if isinstance(value, int | float):
        byte = (1 if value else 0) if dt == DType.BOOL else int(value) & 0xFF
        return ScalarLit(float(byte * 0x0101), DType.UINT16)
    e = _scalar_tir(ScalarConv(value, dt))
    floats: list = []
    tirx.stmt_functor.post_order_visit(e, lambda n: floats.append(n) if "float" in str(getattr(n, "dtype", ""))
                                       else None)
    if floats:
        raise UnsupportedError(f"a float scalar stored into every element of a {dt} tile on {arch.name}, whose "
                               f"Duplicate takes no 1-byte type (the tile is filled as 16-bit words)", loc=loc,
                               hint="convert the value to an integer scalar first (an int32 T.alloc_var)")
    i32 = "int32"
    byte = tirx.bitwise_and(tirx.Cast(i32, e), tirx.IntImm(i32, 0xFF))
    return ScalarExpr(byte * tirx.IntImm(i32, 0x0101), DType.UINT16)


def _scalar_tir(v: ScalarValue):
    """A runtime scalar operand as a TIR expression."""
    if isinstance(v, ScalarExpr):
        return tirx.Cast(str(v.dtype), v.expr)
    if isinstance(v, ScalarConv):
        return tirx.Cast(str(v.dtype), _scalar_tir(v.inner))
    if isinstance(v, ScalarNeg):
        return -_scalar_tir(v.inner)
    if isinstance(v, ScalarLit):
        if v.dtype.is_float:
            return tirx.FloatImm(str(v.dtype), v.value)
        return tirx.IntImm(str(v.dtype), int(v.value))
    raise InternalCompilerError(f"cannot convert scalar {v!r}", stage="lower_tile_ops")


class VectorEmitter:
    """Builds vector ops and manages UB temporaries. Every op built on a tile's element type is
    checked against the arch's list for it (``check_dtype``, ``Arch.vector_op_dtypes``)."""

    def __init__(self, buffers: dict, arch, compact: bool = False) -> None:
        self.buffers = buffers
        self.arch = arch
        # compact: a node's result may overwrite its operand's temporary (fewer UB temporaries);
        # the driver asks for it when the first plan does not fit the memory budget
        self.compact = compact
        self.free: dict[tuple, list[str]] = {}
        self.n = 0

    # -- temporaries
    def temp(self, shape: tuple, dt) -> Buffer:
        dt = to_dtype(dt)
        key = (tuple(shape), dt)
        pool = self.free.get(key, [])
        if pool:
            return self.buffers[pool.pop()]
        self.n += 1
        name = f"tmp{self.n}_{dt}"
        while name in self.buffers:  # a user tile may have this name
            self.n += 1
            name = f"tmp{self.n}_{dt}"
        cols = shape[-1]
        align = 32 if dt.bytes == 1 else 16  # every row starts 32 B aligned
        b = Buffer(name=name, shape=tuple(shape), dtype=dt, kind=BufferKind.TEMP, scope=Scope.UB, layout=Layout.ND,
                   pitch=(cols + align - 1) // align * align, role="vector temporary")
        self.buffers[name] = b
        return b

    def release(self, b: Buffer | str | None) -> None:
        if b is None:
            return
        buf = self.buffers[b] if isinstance(b, str) else b
        if buf.kind is not BufferKind.TEMP:
            return
        self.free.setdefault((tuple(buf.shape), buf.dtype), []).append(buf.name)

    def count(self, name: str) -> int:
        b = self.buffers[name]
        return b.rows * b.pitch

    # -- the element types of the arch's vector instructions
    def check_dtype(self, op: VecBinary | VecScalarOp | VecUnary | VecOther, dt: DType, loc, *, count_form: bool = True,
                    what: str | None = None) -> None:
        """Refuse, at the DSL line ``loc``, ``op`` built on ``dt`` elements when the arch's page for
        it does not list ``dt`` for the form it is built in: the count form (whole tiles) or, with
        ``count_form=False``, the mask/repeat form of the broadcast ops."""
        t = self.arch.vector_op(op)
        if t.takes(dt, count_form):
            return
        if what is None:
            what = _OP_WORDS[op] + ("" if count_form else " with a per-row or per-column operand")
        arch = self.arch.name
        also = f"; {_names(t.count_only)} in its count form only" if t.count_only else ""
        if t.takes(dt, True):
            msg = (f"{what} on {dt} tiles: on {arch} the vector unit's {op} takes {dt} only in its count form (whole "
                   f"tiles, element by element); the mask/repeat form a broadcast needs takes {_names(t.every)} "
                   f"({t.page}{also})")
        else:
            msg = f"{what} on {dt} tiles: the vector unit's {op} takes {_names(t.every)} on {arch} ({t.page}{also})"
        wide = [w for w in _WIDER if t.takes(w, count_form) and _holds(w, dt)]
        if wide:
            types = ", ".join(map(str, wide[:-1])) + " or " * (len(wide) > 1) + str(wide[-1])
            hint = (f"compute in {types} (exact for every {dt} value): cast the operands "
                    f"first, e.g. T.Cast(\"{wide[0]}\", x[i, j]), and the result back with T.Cast(\"{dt}\", ...)")
        else:
            hint = f"compute in float32: cast the operands first and the result back with T.Cast(\"{dt}\", ...)"
        raise UnsupportedError(msg, loc=loc, hint=hint)

    # -- simple instructions
    def duplicate(self, dst: str, value: float, loc) -> list:
        b = self.buffers[dst]
        if self._byte_fill(b):
            return self._duplicate_words(dst, _byte_words(value, b.dtype, self.arch, loc), loc)
        self.check_dtype(VecOther.DUPLICATE, b.dtype, loc)
        return [VecDuplicate(dst=dst, value=scalar_literal(value, b.dtype), count=self.count(dst), loc=loc)]

    def duplicate_expr(self, dst: str, expr: ScalarValue, loc) -> list:
        b = self.buffers[dst]
        if self._byte_fill(b):
            return self._duplicate_words(dst, _byte_words(expr, b.dtype, self.arch, loc), loc)
        self.check_dtype(VecOther.DUPLICATE, b.dtype, loc)
        return [VecDuplicate(dst=dst, value=ScalarConv(expr, b.dtype), count=self.count(dst), loc=loc)]

    def _byte_fill(self, b: Buffer) -> bool:
        """A 1-byte tile whose type the arch's Duplicate does not take (int8, uint8, bool on
        dav-c220): it is filled as 16-bit words, each holding the value's byte twice."""
        dup = self.arch.vector_op(VecOther.DUPLICATE)
        return b.dtype.bytes == 1 and not dup.takes(b.dtype) and dup.takes(DType.UINT16)

    def _duplicate_words(self, dst: str, word: ScalarValue, loc) -> list:
        n = self.count(dst)
        if n % 2:  # rows of 1-byte tiles are padded to 32 bytes in UB
            raise InternalCompilerError(f"1-byte tile '{dst}' of {n} elements filled as 16-bit words",
                                        stage="lower_tile_ops")
        return [VecDuplicate(dst=dst, value=word, count=n // 2, as_dtype=DType.UINT16, loc=loc)]

    def transpose(self, dst: str, src: str, loc) -> list:
        """dst = src^T (an R x C tile into a C x R one), one Transpose over the dense tile, or refused
        at ``loc`` where the page's limits do not hold."""
        s, d = self.buffers[src], self.buffers[dst]
        rows, cols = s.shape
        self.check_dtype(VecOther.TRANSPOSE, s.dtype, loc, what="a transposed read (x[j, i] in T.Parallel(i, j))")
        why = None
        if s.pitch != cols or d.pitch != rows:
            why = (f"its rows of {cols} and the result's of {rows} elements must fill whole 32-byte blocks (a dense "
                   "tile)")
        elif rows > 4095 or cols > 4095:
            why = "the page's Transpose takes at most 4095 rows and 4095 columns"
        if why is not None:
            raise UnsupportedError(f"the transposed read of '{src}' ({rows} x {cols}, {s.dtype}): {why}", loc=loc,
                                   hint="give the tile a column count whose bytes are a multiple of 32 (16 float16, "
                                   "8 float32 values), or store the transposed tile from a copy of a dense one")
        # sharedTmpBuffer: (cSize + 2) * h0 * w0 * sizeof(T) bytes, h0 = 16 (32 for 8-bit types), w0 = 32 / sizeof(T)
        h0 = 32 if s.dtype.bytes == 1 else 16
        tmp = self.temp(((rows + 2) * h0 * 32,), DType.UINT8)
        ops = [VecTranspose(dst=dst, src=src, tmp=tmp.name, rows=rows, cols=cols, loc=loc)]
        self.release(tmp)
        return ops

    def copy_or_cast(self, dst: str, src: str, loc) -> list:
        d, s = self.buffers[dst], self.buffers[src]
        if d.dtype == s.dtype:
            # A UB -> UB DataCopy runs on the vector pipe.
            return [VecCopy(dst=dst, src=src, count=self.count(dst), loc=loc)]
        steps = cast_steps(s.dtype, d.dtype, self.arch)
        if steps is None:
            fp8 = (DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2)
            if s.dtype in fp8 or d.dtype in fp8:
                raise UnsupportedError(f"no vector conversion from {s.dtype} ('{src}') to {d.dtype} ('{dst}') on "
                                       f"{self.arch.name}: fp8 exists only on dav-3510", loc=loc)
            return self._cast_fallback(dst, src, loc)
        ops: list = []
        cur = src
        for k, (a, b, mode) in enumerate(steps):
            out = dst if k == len(steps) - 1 else self.temp(s.shape, b).name
            ops.append(VecCast(dst=out, src=cur, mode=mode, count=self.count(dst), src_dtype=a, dst_dtype=b, loc=loc))
            if cur != src:
                self.release(cur)
            cur = out
        return ops

    def _cast_fallback(self, dst: str, src: str, loc) -> list:
        """Pairs outside the arch's Cast table (bool and uint16 tiles): 8-bit integers and bool go
        through float16 (exact for them), float16 <-> bfloat16 through float32, else one Cast."""
        d, s = self.buffers[dst], self.buffers[src]
        half_types = (DType.FLOAT16, DType.BFLOAT16)
        byte_ints = (DType.UINT8, DType.INT8, DType.BOOL)
        if (s.dtype in byte_ints) != (d.dtype in byte_ints) and DType.FLOAT16 not in (s.dtype, d.dtype):
            # 8-bit integers convert to and from float16 only: go through it (exact for them).
            mid = self.temp(s.shape, DType.FLOAT16)
            ops = self.copy_or_cast(mid.name, src, loc) + self.copy_or_cast(dst, mid.name, loc)
            self.release(mid)
            return ops
        if s.dtype in half_types and d.dtype in half_types:
            mid = self.temp(s.shape, DType.FLOAT32)
            ops = self.copy_or_cast(mid.name, src, loc) + self.copy_or_cast(dst, mid.name, loc)
            self.release(mid)
            return ops
        return [VecCast(dst=dst, src=src, mode=cast_round_mode(s.dtype, d.dtype), count=self.count(dst),
                        src_dtype=s.dtype, dst_dtype=d.dtype, loc=loc)]

    def unary(self, fn, dst: str, src: str, loc) -> list:
        b = self.buffers[dst]
        lit = lambda v: scalar_literal(v, b.dtype)  # noqa: E731
        if fn == "exp2":  # 2^x = e^(x ln 2)
            return self.scalar_op(VecScalarOp.MULS, dst, src, lit(LN2), loc) + self.unary(VecUnary.EXP, dst, dst, loc)
        if fn == "tanh":  # tanh(x) = 1 - 2 / (e^(2x) + 1): saturates to +-1 without overflow trouble
            return (self.scalar_op(VecScalarOp.MULS, dst, src, lit(2.0), loc)
                    + self.unary(VecUnary.EXP, dst, dst, loc)
                    + self.scalar_op(VecScalarOp.ADDS, dst, dst, lit(1.0), loc)
                    + self.unary(VecUnary.RECIPROCAL, dst, dst, loc)
                    + self.scalar_op(VecScalarOp.MULS, dst, dst, lit(-2.0), loc)
                    + self.scalar_op(VecScalarOp.ADDS, dst, dst, lit(1.0), loc))
        if fn == "sigmoid":  # 1 / (1 + e^-x)
            return (self.scalar_op(VecScalarOp.MULS, dst, src, lit(-1.0), loc)
                    + self.unary(VecUnary.EXP, dst, dst, loc)
                    + self.scalar_op(VecScalarOp.ADDS, dst, dst, lit(1.0), loc)
                    + self.unary(VecUnary.RECIPROCAL, dst, dst, loc))
        if fn == "log2":
            return (self.unary(VecUnary.LN, dst, src, loc)
                    + self.scalar_op(VecScalarOp.MULS, dst, dst, lit(1 / LN2), loc))
        self.check_dtype(fn, self.buffers[dst].dtype, loc)
        return [VecUnaryOp(op=fn, dst=dst, src=src, count=self.count(dst), loc=loc)]

    def scalar_op(self, op: VecScalarOp, dst: str, src: str, scalar: ScalarValue, loc) -> list:
        self.check_dtype(op, self.buffers[dst].dtype, loc)
        return [VecScalar(op=op, dst=dst, src=src, scalar=scalar, count=self.count(dst), loc=loc)]

    def binary(self, op: VecBinary, dst: str, a: str, b: str, loc) -> list:
        self.check_dtype(op, self.buffers[dst].dtype, loc)
        return [VecBinaryOp(op=op, dst=dst, src0=a, src1=b, count=self.count(dst), loc=loc)]

    def broadcast_binary(self, op: VecBinary, dst: str, a: Opnd, b: Opnd, rows: int, cols: int, loc,
                         what_bcast: str | None = None) -> list:
        """dst[r, c] = a op b where a/b are tiles, per-row vectors or per-column vectors."""
        d = self.buffers[dst]
        self.check_dtype(op, d.dtype, loc, count_form=False, what=what_bcast)
        esz = d.dtype.bytes
        blk = 32 // esz
        ops: list = []
        srcs = []
        temps = []
        long_rows = d.pitch * esz // 32 > 255 and rows > 1
        for n, o in enumerate((a, b)):
            if o.kind == "tile":
                srcs.append(RepeatOperand(o.buffer, row=d.pitch, chunk=1, blk=1, rep=d.pitch * esz // 32))
            elif o.kind == "col":
                srcs.append(RepeatOperand(o.buffer, row=0, chunk=1, blk=1, rep=0))
            elif o.kind == "row":
                if n == 1 and a.kind == "row" and a.buffer == b.buffer:
                    srcs.append(srcs[0])  # the same per-row vector twice: one Brcb
                    continue
                # Brcb writes each per-row value into its own 32 B block.
                rows8 = (rows + 7) // 8 * 8
                t = self.temp((rows8 * blk,), d.dtype)
                temps.append(t)
                ops.append(VecBrcb(dst=t.name, src=o.buffer, repeat=rows8 // 8, loc=loc))
                srcs.append(RepeatOperand(t.name, row=blk, chunk=0, blk=0, rep=1))
            else:
                raise UnsupportedError("internal: scalar operand in broadcast op")
        lanes = 256 // esz
        what = f"{a.buffer}({a.kind}), {b.buffer}({b.kind})"
        if long_rows:
            # Rows over 8160 bytes: a repeat stride cannot step from one row to the next, so each
            # row is one call whose column chunks are the repeats.
            ops.append(VecBinaryBcastRows(op=op, dst=dst, s0=srcs[0], s1=srcs[1], rows=rows, cols=cols, lanes=lanes,
                                          dst_row=d.pitch, dst_rep=8, chunks=(cols + lanes - 1) // lanes, what=what,
                                          loc=loc))
        else:
            dst_rep = d.pitch * esz // 32
            if dst_rep > 255:
                # One row: the repeat strides are never used, so a row longer than they reach is fine.
                dst_rep = 0
                srcs = [RepeatOperand(x.buffer, x.row, x.chunk, x.blk, 0) for x in srcs]
            ops.append(VecBinaryBcast(op=op, dst=dst, s0=srcs[0], s1=srcs[1], rows=rows, cols=cols, lanes=lanes,
                                      dst_row=d.pitch, dst_rep=dst_rep, chunks=(cols + lanes - 1) // lanes,
                                      what=what, loc=loc))
        for t in temps:
            self.release(t)
        return ops

    def expand(self, dst: str, o: Opnd, rows: int, cols: int, loc) -> list:
        """A per-row or per-column vector repeated into a whole tile (max(v, v) = v, exactly)."""
        return self.broadcast_binary(VecBinary.MAX, dst, o, o, rows, cols, loc,
                                     what_bcast="a per-row or per-column value repeated over a tile (a broadcast "
                                     "T.max(v, v))")

    def row_reduce(self, kind: ReduceKind, dst: str, src: str, clear: bool, loc, valid_cols=None,
                   scratch: bool = False) -> list:
        """dst[r] (op)= reduce over the columns of src[r, :]. ``scratch``: src is a temporary nobody
        reads afterwards, so its column chunks are folded into its own first chunk (no accumulator
        tile: a 128 x 128 float32 product saves 32 KB of UB)."""
        s = self.buffers[src]
        d = self.buffers[dst]
        esz = s.dtype.bytes
        lanes = 256 // esz
        rows, cols = s.rows, s.cols
        if rows > 255:
            raise UnsupportedError(f"reduction over {rows} rows of '{src}'; at most 255 rows per tile",
                                   loc=loc, hint="use a block of at most 255 rows")
        src_rep = s.pitch * esz // 32
        long_rows = src_rep > 255
        if long_rows and valid_cols is not None and rows > 1:
            raise UnsupportedError(f"rows of '{src}' are {s.pitch * esz} bytes and end at a runtime column tail; "
                                   "a reduction over such rows takes one row per tile", loc=loc,
                                   hint="use a block of one row, or a block width that divides the global width")
        vop = {ReduceKind.SUM: VecBinary.ADD, ReduceKind.MAX: VecBinary.MAX, ReduceKind.MIN: VecBinary.MIN}[kind]
        self.check_dtype(vop, s.dtype, loc, count_form=False, what=f"a {kind} reduction")
        ops: list = []
        out = dst if clear else self.temp(d.shape, d.dtype).name
        if valid_cols is not None:
            # The tile's last columns may be stale (a column tail of the global shape): fold only
            # the valid ones, chunk by chunk with a runtime mask, into an accumulator that starts
            # at the reduction's identity.
            acc = self.temp((rows * lanes,), s.dtype)
            ops.extend(self.duplicate(acc.name, identity(kind, s.dtype), loc))
            ops.append(VecFoldLoop(op=vop, dst=acc.name, src=src, lanes=lanes, repeat=rows,
                                   src_rep=0 if long_rows else src_rep, chunks=(cols + lanes - 1) // lanes,
                                   valid=valid_cols, barrier=self.arch.needs_vector_barrier, loc=loc))
            ops.append(VecWholeReduce(kind=kind, dst=out, src=acc.name, mask=lanes, repeat=rows, src_rep=8, loc=loc))
            self.release(acc)
        elif long_rows:
            # Rows over 8160 bytes (a repeat stride's reach): each row's column chunks are the
            # repeats of one call, accumulated into the row's lanes, then one WholeReduce.
            acc = self.temp((rows * lanes,), s.dtype)
            ops.extend(self.duplicate(acc.name, identity(kind, s.dtype), loc))
            ops.append(VecFoldRows(op=vop, dst=acc.name, src=src, lanes=lanes, rows=rows, pitch=s.pitch,
                                   chunks=cols // lanes, tail=cols % lanes, barrier=self.arch.needs_vector_barrier,
                                   loc=loc))
            ops.append(VecWholeReduce(kind=kind, dst=out, src=acc.name, mask=lanes, repeat=rows, src_rep=8, loc=loc))
            self.release(acc)
        elif cols <= lanes:
            ops.append(VecWholeReduce(kind=kind, dst=out, src=src, mask=cols, repeat=rows, src_rep=src_rep, loc=loc))
        elif scratch:
            for c in range(1, (cols + lanes - 1) // lanes):
                ops.append(VecFold(op=vop, dst=src, src=src, offset=c * lanes, mask=min(lanes, cols - c * lanes),
                                   repeat=rows, src_rep=src_rep, dst_rep=src_rep, loc=loc))
            ops.append(VecWholeReduce(kind=kind, dst=out, src=src, mask=lanes, repeat=rows, src_rep=src_rep, loc=loc))
        else:
            acc = self.temp((rows * lanes,), s.dtype)
            ops.append(VecFoldInit(dst=acc.name, src=src, lanes=lanes, repeat=rows, src_rep=src_rep,
                                   zero=scalar_literal(0, s.dtype), loc=loc))
            nchunks = (cols + lanes - 1) // lanes
            for c in range(1, nchunks):
                ops.append(VecFold(op=vop, dst=acc.name, src=src, offset=c * lanes, mask=min(lanes, cols - c * lanes),
                                   repeat=rows, src_rep=src_rep, loc=loc))
            ops.append(VecWholeReduce(kind=kind, dst=out, src=acc.name, mask=lanes, repeat=rows, src_rep=8, loc=loc))
            self.release(acc)
        if not clear:
            ops.extend(self.binary(vop, dst, dst, out, loc))
            self.release(out)
        return ops

    def col_reduce(self, kind: ReduceKind, dst: str, src: str, clear: bool, loc) -> list:
        """dst[c] = reduce over the rows r of src[r, c] (a reduction over dim 0): each row is one
        repeat that combines into the same lanes of dst (dst is also the second source, with
        repeat stride 0: the overlap the vector unit allows for Add/Max/Min)."""
        s = self.buffers[src]
        d = self.buffers[dst]
        esz = s.dtype.bytes
        rows, cols = s.rows, s.cols
        src_rep = s.pitch * esz // 32
        if rows > 255 or src_rep > 255:
            raise UnsupportedError(f"reduction over the {rows} rows of '{src}' (rows of {s.pitch * esz} bytes): a "
                                   "reduction over dim 0 takes at most 255 rows of at most 8160 bytes", loc=loc,
                                   hint="reduce a smaller block, or accumulate blocks in a loop")
        if d.numel != cols:
            raise UnsupportedError(f"reduce output '{dst}' has {d.numel} elements for the {cols} columns of '{src}'",
                                   loc=loc)
        vop = {ReduceKind.SUM: VecBinary.ADD, ReduceKind.MAX: VecBinary.MAX, ReduceKind.MIN: VecBinary.MIN}[kind]
        self.check_dtype(vop, s.dtype, loc, count_form=False, what=f"a {kind} reduction over dim 0")
        ops: list = []
        if clear:
            ops.extend(self.duplicate(dst, identity(kind, d.dtype), loc))
        lanes = 256 // esz
        ops.append(VecBinaryBcast(op=vop, dst=dst, s0=RepeatOperand(src, row=s.pitch, chunk=1, blk=1, rep=src_rep),
                                  s1=RepeatOperand(dst, row=0, chunk=1, blk=1, rep=0), rows=rows, cols=cols,
                                  lanes=lanes, dst_row=0, dst_rep=0, chunks=(cols + lanes - 1) // lanes,
                                  what=f"every row of {src} into {dst}", loc=loc))
        return ops


_CONDITIONS = (tirx.LT, tirx.LE, tirx.GT, tirx.GE, tirx.EQ, tirx.NE, tirx.And, tirx.Or, tirx.Not)
# Element types CreateVecIndex takes on both arches.
_INDEX_DTYPES = (DType.INT32, DType.FLOAT32, DType.FLOAT16, DType.INT16)


def _bound_window(w: GmWindow, bounds: dict, ndim: int) -> GmWindow:
    """``w`` with its rows (index 0 of a 2-D T.Parallel) and columns (the last index) cut at the
    exclusive upper bounds ``bounds`` (relative to the tile's first row / column), on top of any
    tail of the tensor's end: clamp(min(size - base, hi), 0, n)."""
    from tvm import arith

    ana = arith.Analyzer()

    def cut(v: Valid, hi) -> Valid:
        if v.tail:
            return Valid(v.n, ana.simplify(tirx.Min(v.size, v.base + hi)), v.base, clamp=True)
        return Valid(v.n, hi, tirx.IntImm("int32", 0), clamp=True)

    rows, cols = w.valid_rows, w.valid_cols
    for k, hi in bounds.items():
        if k == ndim - 1:
            cols = cut(cols, hi)
        else:
            rows = cut(rows, hi)
    return replace(w, valid_rows=rows, valid_cols=cols)


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def _to_f32(e, lw: ParallelLowerer):
    """An integer (or bfloat16) expression as float32: casts pushed to its leaves, so that index
    arithmetic runs on float32 vectors (exact for integers up to 2^24)."""
    f32 = "float32"
    if str(e.dtype) == f32:
        return e
    if not lw._uses_domain(e):
        return tirx.Cast(f32, e)
    if isinstance(e, tirx.IntImm):
        return tirx.FloatImm(f32, float(e.value))
    if isinstance(e, tirx.Add | tirx.Sub | tirx.Mul | tirx.Max | tirx.Min):
        return type(e)(_to_f32(e.a, lw), _to_f32(e.b, lw))
    if isinstance(e, tirx.Var | tirx.BufferLoad | tirx.Cast):
        return tirx.Cast(f32, e)
    if isinstance(e, tirx.Select):
        return tirx.Select(e.condition, _to_f32(e.true_value, lw), _to_f32(e.false_value, lw))
    if isinstance(e, tirx.Call) and str(e.op.name).endswith("if_then_else"):
        c, a, b = e.args
        return tirx.Call(f32, e.op, [c, _to_f32(a, lw), _to_f32(b, lw)])
    raise UnsupportedError(f"'{e}' ({e.dtype}) in a condition inside T.Parallel: integer division and modulo of "
                           "the loop indices are not supported", loc=lw.loc,
                           hint="compare affine expressions of the indices (i, j, block indices, loop variables)")


def identity(kind: ReduceKind, dt: DType) -> float:
    """The value a reduction starts from, in ``dt``."""
    if kind is ReduceKind.SUM:
        return 0.0
    if dt.is_int:
        lo, hi = dt.int_range
        return float(lo if kind is ReduceKind.MAX else hi)
    return -math.inf if kind is ReduceKind.MAX else math.inf


def cast_steps(src: DType, dst: DType, arch) -> list | None:
    """The vector Casts that convert ``src`` to ``dst`` on ``arch``: the direct one when the arch's
    Cast table has it (``Arch.vector_casts``), else the shortest chain through float32, float16
    or int32 (e.g. float16 -> bfloat16 through float32 on dav-c220, bfloat16 -> fp8 through
    float32, int8 -> float32 through float16). Each step is (src, dst, rounding); None when no
    chain exists. Narrowing float steps inside a chain to an integer take the final step's
    rounding (trunc): exact for values an 8/16-bit integer holds."""
    if (src, dst) in arch.vector_casts:
        return [(src, dst, cast_round_mode(src, dst))]
    final = cast_round_mode(src, dst) if dst.is_int else None
    for mids in ((DType.FLOAT32,), (DType.FLOAT16,), (DType.INT32,), (DType.FLOAT16, DType.FLOAT32),
                 (DType.FLOAT32, DType.FLOAT16)):
        chain = (src, *mids, dst)
        if len(set(chain)) == len(chain) and all(p in arch.vector_casts for p in zip(chain, chain[1:], strict=False)):
            return [(a, b, final if final is not None and b.is_float and a.is_float else cast_round_mode(a, b))
                    for a, b in zip(chain, chain[1:], strict=False)]
    return None


def cast_round_mode(src: DType, dst: DType) -> Rounding:
    """TileLang's cast semantics on the Cast page's modes: float -> integer (and bool) truncates;
    narrowing float conversions and int32 -> float round to nearest even; exact ones take CAST_NONE."""
    if dst == DType.BOOL or (src.is_float and dst.is_int):
        return Rounding.TRUNC
    if src.is_int and dst.is_int:
        return Rounding.NONE
    if src.is_float and dst.is_float and dst.bytes < src.bytes:
        return Rounding.RINT
    if src == DType.INT32 and dst.is_float:
        return Rounding.RINT  # the Cast page lists no CAST_NONE for int32 -> float on dav-3510
    if {src, dst} == {DType.FLOAT16, DType.BFLOAT16}:
        return Rounding.RINT
    return Rounding.NONE


# Float types the vector units convert but do not compute in: the fp8 types (dav-3510's Cast page
# converts them to and from float32 only) and bfloat16, except where the arch computes in it
# (Arch.bf16_vector_math: dav-3510's Add/Sub/Mul/Max/Min, their scalar forms and Select take
# bfloat16_t; dav-c220 converts bfloat16 only).
NARROW = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def promote_narrow(e: tirx.PrimExpr, arch: Arch) -> tirx.PrimExpr:
    """Rewrite the narrow-float arithmetic ``arch``'s vector units do not do to float32.

    Such a value is widened to float32 for arithmetic (casts at the leaves) and rounded back once
    where a narrow result is needed (a Cast, the store). On an arch with ``bf16_vector_math`` a
    bfloat16 + - * max min or select whose operands are bfloat16 values (tiles, vectors, constants,
    casts to bfloat16 and such operations) stays bfloat16: one instruction, one rounding per
    instruction, as its TIR type says. Every other bfloat16 operation (/, exp, ...) is widened.
    """
    f32 = "float32"
    native = "bfloat16" if arch.bf16_vector_math else None

    def wide(x):
        return tirx.Cast(f32, x) if str(x.dtype) in NARROW else x

    def go(x):
        dt = str(x.dtype)
        if isinstance(x, tirx.BufferLoad | tirx.Var | tirx.FloatImm | tirx.IntImm):
            return x if dt == native else wide(x)
        if isinstance(x, tirx.Cast):
            inner = go(x.value)
            if dt == native:
                return tirx.Cast(dt, inner) if str(inner.dtype) != dt else inner
            if dt in NARROW:  # keep the rounding to the narrow type, then widen again
                return tirx.Cast(f32, tirx.Cast(dt, inner))
            return tirx.Cast(dt, inner) if str(inner.dtype) != dt else inner
        for cls in _BINARY:
            if isinstance(x, cls):
                a, b = go(x.a), go(x.b)
                if dt == native and arch.vector_op(_BINARY[cls]).takes(DType.BFLOAT16) and \
                        str(a.dtype) == str(b.dtype) == dt:
                    return cls(a, b)
                return cls(wide(a), wide(b))
        if isinstance(x, tirx.Select) or _is_if_then_else(x):
            cond, t, f = (x.condition, x.true_value, x.false_value) if isinstance(x, tirx.Select) else x.args
            a, b = go(t), go(f)
            if not (dt == native and str(a.dtype) == str(b.dtype) == dt):
                a, b = wide(a), wide(b)
            if isinstance(x, tirx.Select):
                return tirx.Select(cond, a, b)
            return tirx.Call(str(a.dtype), x.op, [cond, a, b])
        if isinstance(x, tirx.Call) and dt in NARROW:
            return tirx.Call(f32, x.op, [wide(go(a)) for a in x.args])
        if isinstance(x, tirx.Call):
            return tirx.Call(dt, x.op, [go(a) for a in x.args])
        return x

    if not _has_narrow(e):
        return e
    out = go(e)
    if str(out.dtype) == str(e.dtype):
        return out
    if isinstance(out, tirx.Cast) and isinstance(out.value, tirx.Cast) and str(out.value.dtype) == str(e.dtype):
        return out.value  # a root Cast widened again only to be rounded back (float32 holds it exactly)
    return tirx.Cast(str(e.dtype), out)


def _is_if_then_else(e) -> bool:
    return isinstance(e, tirx.Call) and str(getattr(e.op, "name", "")).endswith("if_then_else")


def _has_narrow(e) -> bool:
    found = []

    def visit(n):
        if hasattr(n, "dtype") and str(n.dtype) in NARROW:
            found.append(n)

    tirx.stmt_functor.post_order_visit(e, visit)
    return bool(found)


class ParallelLowerer:
    """Lower one T.Parallel nest (a list of assignments) to vector ops."""

    def __init__(self, vec: VectorEmitter, buffers: dict, op, gm_ub_op, ub_gm_op, gm_window, columns=None) -> None:
        self.vec = vec
        # (column_of, column_to_ub, column_to_gm) of the TileLowerer: strided GM columns
        self.columns = columns
        self.buffers = buffers
        self.op = op
        self.loc = op.loc
        self.vars = list(op.vars)
        self.extents = list(op.extents)
        self.gm_ub_op = gm_ub_op
        self.ub_gm_op = ub_gm_op
        self.gm_window = gm_window
        if len(self.vars) > 2:
            raise UnsupportedError(f"T.Parallel over {len(self.vars)} dimensions; 1-D and 2-D are supported",
                                   loc=self.loc, hint="flatten the outer dimensions into rows")
        self.shape = tuple(self.extents)
        self.rows = self.shape[0] if len(self.shape) == 2 else 1
        self.cols = self.shape[-1]
        self.pre: list = []
        # conversions of one tile that a store's expression reads several times (dav-c220 widens each
        # bfloat16 leaf to float32): converted once (_repeated_casts; key -> (temporary, kind))
        self.shared_casts: set = set()
        self.cast_cache: dict = {}
        self.index_cache: dict = {}  # (loop index position, dtype) -> UB vector of its values
        self.scratch: str | None = None  # the stored tile, when its bytes may hold partial results (_scratch)

    # -- access patterns
    def _plain_pattern(self, load) -> str | None:
        """'tile' | 'row' | 'col' for a UB access with plain loop-variable indices, else None."""
        idx = list(load.indices)
        vs = self.vars
        same = lambda e, v: isinstance(e, tirx.Var) and e.same_as(v)  # noqa: E731
        if len(idx) == len(vs) and all(same(e, v) for e, v in zip(idx, vs, strict=True)):
            # read lane by lane as a tile of the domain: rows as far apart as the domain's
            buf = self.buffers[load.buffer.name]
            if len(vs) == 1 or (buf.pitch or buf.cols) == self._pitch(buf.dtype):
                return "tile"
            return None
        if len(vs) == 2 and len(idx) == 1:
            if same(idx[0], vs[0]):
                return "row"
            if same(idx[0], vs[1]):
                return "col"
        return None

    def _pitch(self, dt: DType) -> int:
        """The row pitch of a domain-shaped UB tile of ``dt`` (VectorEmitter.temp's rule)."""
        align = 32 if dt.bytes == 1 else 16
        return (self.cols + align - 1) // align * align

    def _pattern(self, load) -> str:
        """'tile' | 'row' | 'col' for a UB access with plain loop-variable indices."""
        pattern = self._plain_pattern(load)
        if pattern is not None:
            return pattern
        idx = list(load.indices)
        vs = self.vars
        raise UnsupportedError(
            f"access {load.buffer.name}[{', '.join(str(i) for i in idx)}] inside T.Parallel({', '.join(map(str, vs))})"
            " is not an element-wise pattern the vector lowering takes",
            loc=self.loc,
            hint="index tiles with the parallel loop variables directly: x[i, j], a per-row value v[i] or a "
            "per-column value w[j]",
        )

    def _transposed(self, load):
        """For x[j, i + r0] inside T.Parallel(i, j) over (rows, cols), x a cols-row tile with at least
        r0 + rows columns (r0 = this AIV's first row when split_rows halved the domain): r0; else None."""
        idx, vs = list(load.indices), self.vars
        if not (len(vs) == 2 and len(idx) == 2 and isinstance(idx[0], tirx.Var) and idx[0].same_as(vs[1])):
            return None
        shape = tuple(int(x) for x in load.buffer.shape)
        if shape[0] != self.cols:
            return None
        if isinstance(idx[1], tirx.Var) and idx[1].same_as(vs[0]):
            first = 0
        elif isinstance(idx[1], tirx.Add) and isinstance(idx[1].a, tirx.Var) and idx[1].a.same_as(vs[0]) and \
                not self._uses_domain(idx[1].b):
            first = idx[1].b
        else:
            return None
        return first if shape[1] >= self.rows else None

    def _transpose_read(self, buf: Buffer, first) -> Opnd:
        """The tile of x[j, i + first]: x transposed whole, then (for an AIV's half) its rows from first."""
        cols_x = int(buf.shape[1])
        t = self.vec.temp((cols_x, self.cols), buf.dtype)
        self.pre.extend(self.vec.transpose(t.name, buf.name, self.loc))
        if isinstance(first, int) and first == 0 and cols_x == self.rows:
            return Opnd("tile", buf.dtype, buffer=t.name, temp=True)
        part = self.vec.temp(self.shape, buf.dtype)
        pitch = t.pitch
        self.pre.append(VecCopy(dst=part.name, src=t.name, count=self.rows * pitch, src_offset=first * pitch,
                                loc=self.loc))
        self.vec.release(t)
        return Opnd("tile", buf.dtype, buffer=part.name, temp=True)

    def _uses_domain(self, e) -> bool:
        """Does ``e`` vary over the T.Parallel domain? A load at indices that do not (a scalar
        local, one element of a tile or tensor) is a scalar the scalar unit reads."""
        found = []

        def visit(n):
            if isinstance(n, tirx.Var) and any(n.same_as(v) for v in self.vars):
                found.append(n)
            if isinstance(n, tirx.BufferLoad) and self.buffers[n.buffer.name].scope is not Scope.LOCAL and \
                    any(self._uses_domain(i) for i in n.indices):
                found.append(n)

        tirx.stmt_functor.post_order_visit(e, visit)
        return bool(found)

    def _gm_region(self, buf: Buffer, indices: list) -> tuple[dict, tuple, str]:
        """Decompose GM indices into base + loop variable; returns (region, tile shape, pattern)."""
        from tvm import arith

        ana = arith.Analyzer()
        base, ext, used = [], [], []
        for e in indices:
            hit = None
            for k, v in enumerate(self.vars):
                coef = arith.detect_linear_equation(e, [v])
                if len(coef) == 2 and not (isinstance(coef[0], tirx.IntImm) and int(coef[0]) == 0):
                    if not (isinstance(coef[0], tirx.IntImm) and int(coef[0]) == 1):
                        raise UnsupportedError(
                            f"index {e} of '{buf.name}' steps by {coef[0]}; only unit-stride accesses are supported",
                            loc=self.loc)
                    hit = k
                    base.append(ana.simplify(coef[1]))
                    break
            if hit is None:
                base.append(e)
                ext.append(1)
            else:
                ext.append(self.extents[hit])
                used.append(hit)
        if used != sorted(used):
            raise UnsupportedError(f"access to '{buf.name}' transposes the loop variables", loc=self.loc)
        if len(used) == len(self.vars):
            pattern, shape = "tile", self.shape
        elif len(self.vars) == 2 and used == [0]:
            pattern, shape = "row", (self.rows,)
        elif len(self.vars) == 2 and used == [1]:
            pattern, shape = "col", (self.cols,)
        else:
            raise UnsupportedError(f"access to '{buf.name}' does not use the parallel loop variables", loc=self.loc)
        return Region(buf.name, tuple(base), tuple(ext)), shape, pattern

    # -- expressions
    def expr(self, e, out: str | None = None) -> Opnd:
        """Lower ``e``; if ``out`` is given, the root instruction writes there."""
        dtype = str(e.dtype)
        if not self._uses_domain(e):
            cv = const_value(e)
            if cv is not None:
                return Opnd("scalar", dtype, expr=scalar_literal(cv, dtype))
            return Opnd("scalar", dtype, expr=ScalarExpr(e, _scalar_dtype(dtype)))
        if isinstance(e, tirx.BufferLoad):
            buf = self.buffers[e.buffer.name] if e.buffer.name in self.buffers else None
            if buf is None:
                raise UnsupportedError(f"unknown buffer {e.buffer.name}", loc=self.loc)
            if buf.scope is Scope.GM:
                region, shape, pattern = self._gm_region(buf, list(e.indices))
                t = self.vec.temp(shape, buf.dtype)
                column = self.columns[0](buf, region, shape) if self.columns else None
                if column is not None:
                    self.pre.extend(self.columns[1](buf, region, t, *column, self.loc))
                else:
                    w = self.gm_window(buf, region, shape, self.loc)
                    self.pre.append(self.gm_ub_op(buf, t, w, self.loc))
                return Opnd(pattern, buf.dtype, buffer=t.name, temp=True)
            if buf.scope is not Scope.UB:
                raise UnsupportedError(f"'{buf.name}' lives in {buf.scope}; T.Parallel reads vector tiles only",
                                       loc=self.loc)
            row = self._row_of_tile(e, buf)
            if row is not None:
                return row
            first = self._transposed(e)
            if first is not None:
                return self._transpose_read(buf, first)
            pattern = self._plain_pattern(e)
            if pattern is None:
                return self._gather_read(e, buf)
            return Opnd(pattern, buf.dtype, buffer=buf.name)
        if isinstance(e, tirx.Var):
            return self._index(e, to_dtype(dtype))
        if dtype == "bool" and isinstance(e, _CONDITIONS):
            # a condition used as a value (stored into a bool / uint8 mask tile): 1 where it holds
            mask = self._cond(e)
            t = self.vec.temp(self.shape, DType.FLOAT16)
            self.pre.extend(self.vec.duplicate(t.name, 1.0, self.loc))
            self.pre.append(VecSelect(dst=t.name, mask=mask.name, src0=t.name, src1=None,
                                      scalar=scalar_literal(0.0, DType.FLOAT16), count=self._n, dtype=DType.FLOAT16,
                                      loc=self.loc))
            self.vec.release(mask)
            return Opnd("tile", "float16", buffer=t.name, temp=True)
        if isinstance(e, tirx.Cast) and isinstance(e.value, tirx.Var) and to_dtype(dtype) in _INDEX_DTYPES:
            return self._index(e.value, to_dtype(dtype))  # generated in the wanted type directly
        if isinstance(e, tirx.Cast):
            key = _cast_key(e) if out is None else None
            if key is not None and key in self.cast_cache:
                return Opnd(self.cast_cache[key][1], dtype, buffer=self.cast_cache[key][0])
            src = self.expr(e.value)
            if src.kind == "scalar":
                return Opnd("scalar", dtype, expr=ScalarConv(src.expr, to_dtype(dtype)))
            dst = self._dest(out, src.kind, dtype)
            self.pre.extend(self.vec.copy_or_cast(dst, src.buffer, self.loc))
            self._free(src)
            if key is not None and key in self.shared_casts:
                # the same tile converted again later in this expression: kept, not freed, and reused
                self.cast_cache[key] = (dst, src.kind)
                return Opnd(src.kind, dtype, buffer=dst)
            return Opnd(src.kind, dtype, buffer=dst, temp=dst != out)
        for cls, name in _BINARY.items():
            if isinstance(e, cls):
                return self._binary(name, e.a, e.b, dtype, out)
        if isinstance(e, tirx.FloorDiv | tirx.FloorMod):
            return self._floordiv(e, out)
        if isinstance(e, tirx.Select) or _is_if_then_else(e):
            return self._select(e, dtype, out)
        if isinstance(e, tirx.Call):
            fname = str(e.op.name).split(".")[-1] if hasattr(e.op, "name") else str(e.op)
            if fname == "clamp" and len(e.args) == 3:  # T.clamp(x, lo, hi) = min(max(x, lo), hi)
                return self.expr(tirx.Min(tirx.Max(e.args[0], e.args[1]), e.args[2]), out=out)
            if fname == "exp2" and len(e.args) == 1 and str(e.args[0].dtype) == dtype:
                folded = factor_scale(e.args[0])
                if folded is not None and self._uses_domain(folded[0]):
                    # exp2(x * k) = Exp(x * (k ln 2)): one Muls for the scale and ln 2 together
                    x, k = folded
                    src = self.expr(x)
                    dst = self._dest(out, src.kind, dtype, src)
                    self.pre.extend(self.vec.scalar_op(VecScalarOp.MULS, dst, src.buffer,
                                                       scalar_literal(k * LN2, dtype), self.loc))
                    self.pre.extend(self.vec.unary(VecUnary.EXP, dst, dst, self.loc))
                    self._free(src, keep=dst)
                    return Opnd(src.kind, dtype, buffer=dst, temp=dst != out)
            if fname in _UNARY and len(e.args) == 1:
                src = self.expr(e.args[0])
                if src.kind == "scalar":
                    raise UnsupportedError(f"{fname} of a scalar inside T.Parallel", loc=self.loc,
                                           hint="compute it outside the loop")
                dst = self._dest(out, src.kind, dtype, src)
                self.pre.extend(self.vec.unary(_UNARY[fname], dst, src.buffer, self.loc))
                self._free(src, keep=dst)
                return Opnd(src.kind, dtype, buffer=dst, temp=dst != out)
            raise UnsupportedError(
                f"function T.{fname} is not supported inside T.Parallel on the ascendc target", loc=self.loc,
                hint="supported: + - * / max min, exp, exp2, log, log2, sqrt, rsqrt, abs, tanh, sigmoid, casts, "
                "T.if_then_else, the loop indices as values")
        raise UnsupportedError(f"expression '{e}' ({type(e).__name__}) is not supported inside T.Parallel",
                               loc=self.loc)

    def _gather_read(self, load, buf: Buffer) -> Opnd:
        """``x[f(i, j), g(i, j)]`` for index expressions the plain patterns do not cover (shifted
        columns ``x[i, j + 4]``, steps ``x[i, 4 * jj + j]``, broadcasts by integer division
        ``sf[i // 128, j]``, ``sf[i, j // 32]``, ...): the byte offset of every element of the
        domain is computed as an int32 tile by the vector unit (CreateVecIndex, integer arithmetic,
        the divisions in float32: _floordiv), clamped into the tile, and one Gather reads them
        (离散与聚合/Gather.md: dst[k] = src at srcOffset[k] bytes; 16- and 32-bit types on both arches,
        8-bit ones too on dav-3510). An index outside the tile reads the nearest element of it."""
        idx = list(load.indices)
        name = load.buffer.name
        elem = f"{name}[{', '.join(str(i) for i in idx)}]"
        self.vec.check_dtype(VecOther.GATHER, buf.dtype, self.loc,
                             what=f"the read {elem} (a Gather of computed indices)")
        if len(idx) != len(buf.shape) or len(idx) > 2:
            raise UnsupportedError(
                f"access {elem} inside T.Parallel({', '.join(map(str, self.vars))}) of a {len(buf.shape)}-D tile: "
                "computed indices are taken into 1-D and 2-D tiles", loc=self.loc,
                hint="index tiles with the parallel loop variables, or copy the part you need into a 2-D tile")
        for i in idx:
            if str(i.dtype) not in ("int32", "int64"):
                raise UnsupportedError(f"index {i} of '{name}' is {i.dtype}", loc=self.loc)
        i32 = lambda e: e if str(e.dtype) == "int32" else tirx.Cast("int32", e)  # noqa: E731
        flat = i32(idx[0]) if len(idx) == 1 else i32(idx[0]) * int(buf.pitch or buf.cols) + i32(idx[1])
        esz = buf.elem_bytes
        offs = self.expr(tvm.arith.Analyzer().simplify(flat * esz) if esz != 1 else flat)
        if offs.kind == "scalar":  # (the access does not vary over the domain: not a gather)
            raise InternalCompilerError(f"gather of {elem} with a scalar offset", loc=self.loc)
        offs = self._as_tile(offs, DType.INT32)
        # An index outside the tile reads its nearest element, never another buffer's bytes.
        last = (buf.rows * int(buf.pitch or buf.cols) if len(buf.shape) == 2 else int(buf.shape[0])) - 1
        hi = last * esz
        o = offs.buffer if offs.temp else self.vec.temp(self.shape, DType.INT32).name
        self.pre.extend(self.vec.scalar_op(VecScalarOp.MAXS, o, offs.buffer, scalar_literal(0, DType.INT32), self.loc))
        self.pre.extend(self.vec.scalar_op(VecScalarOp.MINS, o, o, scalar_literal(hi, DType.INT32), self.loc))
        dst = self.vec.temp(self.shape, buf.dtype)
        self.pre.append(VecGather(dst=dst.name, src=buf.name, offsets=o, rows=self.rows, cols=self.cols,
                                  pitch=dst.pitch or self.cols, what=f" ({elem})", loc=self.loc))
        self.vec.release(o)
        return Opnd("tile", str(buf.dtype), buffer=dst.name, temp=True)

    def _floordiv(self, e, out: str | None) -> Opnd:
        """``a // c`` and ``a % c`` of an int32 expression of the loop indices by a positive constant
        c (tilelang's floor division, as index arithmetic writes it): the vector units have no
        int32 division on dav-c220 (Div takes half / float there), so q = floor((a + 0.5) / c) is
        computed in float32 (a Cast, Adds, Muls by 1 / c, a Cast with CAST_FLOOR back to int32):
        exact while |a| < 2**21 (the + 0.5 keeps the quotient at least 0.5 / c from an integer,
        more than the Muls' rounding); a % c = a - c * (a // c)."""
        c = const_value(e.b)
        if c is None or c != int(c) or c <= 0 or str(e.dtype) != "int32":
            raise UnsupportedError(
                f"integer division or modulo '{e}' inside T.Parallel: the divisor must be a positive constant",
                loc=self.loc, hint="divide by a constant, or compute the quotient outside the loop")
        c = int(c)
        if isinstance(e, tirx.FloorMod):
            q = tirx.FloorDiv(e.a, tirx.IntImm("int32", c))
            return self.expr(e.a - q * c, out=out)
        a = self.expr(e.a)
        if c == 1:
            return a
        if a.kind == "scalar":
            raise InternalCompilerError("scalar floordiv reached the vector lowering", loc=self.loc)
        shape = self._kind_shape(a.kind)
        f = self.vec.temp(shape, DType.FLOAT32)
        self.pre.extend(self.vec.copy_or_cast(f.name, a.buffer, self.loc))
        self._free(a)
        self.pre.extend(self.vec.scalar_op(VecScalarOp.ADDS, f.name, f.name, scalar_literal(0.5, DType.FLOAT32),
                                           self.loc))
        self.pre.extend(self.vec.scalar_op(VecScalarOp.MULS, f.name, f.name, scalar_literal(1.0 / c, DType.FLOAT32),
                                           self.loc))
        dst = self._dest(out, a.kind, "int32")
        self.pre.append(VecCast(dst=dst, src=f.name, mode=Rounding.FLOOR, count=self.vec.count(dst),
                                src_dtype=DType.FLOAT32, dst_dtype=DType.INT32, loc=self.loc))
        self.vec.release(f)
        return Opnd(a.kind, "int32", buffer=dst, temp=dst != out)

    def _row_of_tile(self, load, buf: Buffer) -> Opnd | None:
        """``x[k, j]`` with k fixed over the domain (a loop variable, a scalar) and j a loop index:
        row k of a 2-D tile, copied into a vector (rows start 32-byte aligned) that is then a
        per-column or per-row value (2-D T.Parallel) or the whole tile (1-D)."""
        idx = list(load.indices)
        if len(idx) != 2 or len(buf.shape) != 2 or self._uses_domain(idx[0]) or not isinstance(idx[1], tirx.Var):
            return None
        k = next((n for n, v in enumerate(self.vars) if idx[1].same_as(v)), None)
        if k is None or buf.cols != self.extents[k]:
            return None
        t = self.vec.temp((buf.cols,), buf.dtype)
        self.pre.append(VecCopy(dst=t.name, src=buf.name, count=self.vec.count(t.name),
                                src_offset=idx[0] * buf.pitch, loc=self.loc))
        return Opnd("tile" if len(self.vars) == 1 else ("row" if k == 0 else "col"), buf.dtype, buffer=t.name,
                    temp=True)

    def _select(self, e, dtype: str, out: str | None) -> Opnd:
        """T.if_then_else(cond, a, b): the diagonal fill where it applies, else a general select."""
        cond, a, b = (e.condition, e.true_value, e.false_value) if isinstance(e, tirx.Select) else e.args
        fast = self._diag_fill(cond, a, b, dtype, out)
        if fast is not None:
            return fast
        return self._general_select(cond, a, b, dtype, out)

    def _diag_fill(self, cond, a, b, dtype: str, out: str | None) -> Opnd | None:
        """Scalar a, b and cond linear in (i, j) with opposite unit coefficients (a causal mask):
        each row is a prefix of one value and a rest of the other (one Duplicate and a row loop)."""
        from tvm import arith

        if len(self.vars) != 2 or self._uses_domain(a) or self._uses_domain(b):
            return None
        if isinstance(cond, tirx.GE):
            diff = cond.a - cond.b
        elif isinstance(cond, tirx.GT):
            diff = cond.a - cond.b - 1
        elif isinstance(cond, tirx.LE):
            diff = cond.b - cond.a
        elif isinstance(cond, tirx.LT):
            diff = cond.b - cond.a - 1
        else:
            return None
        if "int" not in str(cond.a.dtype):
            return None
        i, j = self.vars
        coef = arith.detect_linear_equation(diff, [i, j])
        ana = arith.Analyzer()
        if len(coef) != 3 or not all(isinstance(ana.simplify(c), tirx.IntImm) for c in coef[:2]):
            return None
        ci, cj = (int(ana.simplify(c)) for c in coef[:2])
        c0 = ana.simplify(coef[2])
        if self._uses_domain(c0):
            return None
        va, vb = self.expr(a), self.expr(b)
        if (ci, cj) == (1, -1):  # j <= i + c0: the first i + c0 + 1 columns take a
            prefix, first, rest = DiagPrefix(c0, plus_one=True), va.expr, vb.expr
        elif (ci, cj) == (-1, 1):  # j >= i - c0: the first i - c0 columns take b
            prefix, first, rest = DiagPrefix(c0, plus_one=False), vb.expr, va.expr
        else:
            return None
        dst = self._dest(out, "tile", dtype)
        d = self.buffers[dst]
        self.vec.check_dtype(VecOther.DUPLICATE, d.dtype, self.loc,
                             what="a diagonal mask (T.if_then_else of i and j between two scalars, a Duplicate a row)")
        self.pre.append(VecDiagFill(dst=dst, rows=self.rows, cols=self.cols, pitch=d.pitch, prefix=prefix, first=first,
                                    rest=rest, barrier=self.vec.arch.needs_vector_barrier, loc=self.loc))
        return Opnd("tile", dtype, buffer=dst, temp=dst != out)

    # -- general masks: Compare/Compares into bit masks, And/Or/Not, Select
    @property
    def _n(self) -> int:
        """Elements of a domain tile in UB (rows x padded pitch): the count of a Select."""
        return self.rows * ((self.cols + 15) // 16 * 16)

    def _mask_temp(self) -> Buffer:
        """A bit mask over the domain tile (one bit per element of its padded rows), in 16-bit
        words, large enough for a Compare of whole 256-byte repeats of any element type."""
        words = -(-_round_up(self._n, 128) // 16)
        return self.vec.temp((_round_up(words, 16),), DType.UINT16)

    def _general_select(self, cond, a, b, dtype: str, out: str | None) -> Opnd:
        dt = to_dtype(dtype)
        if isinstance(cond, tirx.Not):  # else-branches: swap the values instead of inverting bits
            cond, a, b = cond.a, b, a
        mask = self._cond(cond)
        va, vb = self.expr(a), self.expr(b)
        dst = self._dest(out, "tile", dtype)
        as_dt = self._select_dtype(dt)
        # src0 is a tile; src1 a tile or a scalar (a scalar cannot be reinterpreted: make it a tile).
        # _as_tile consumes its operand (returns it, or a new tile and frees the old one).
        src0 = self._as_tile(va, dt, avoid=vb.buffer, prefer=dst)
        src1 = None
        if not (vb.kind == "scalar" and as_dt is None):
            src1 = self._as_tile(vb, dt, avoid=src0.buffer)
        self.pre.append(VecSelect(dst=dst, mask=mask.name, src0=src0.buffer, src1=src1.buffer if src1 else None,
                                  scalar=vb.expr if src1 is None else None, count=self._n, dtype=dt, as_dtype=as_dt,
                                  loc=self.loc))
        self.vec.release(mask)
        for o in (src0, src1):
            if o is not None and o.buffer != dst:
                self._free(o)
        return Opnd("tile", dtype, buffer=dst, temp=dst != out)

    def _select_dtype(self, dt: DType) -> DType | None:
        """The type a Select of ``dt`` tiles runs in when the arch's Select does not take ``dt``
        (its bits are moved unchanged): None when it does."""
        if dt in (DType.FLOAT16, DType.FLOAT32):
            return None
        if not self.vec.arch.needs_vector_barrier and dt in (DType.INT32, DType.INT16, DType.UINT16, DType.UINT32,
                                                             DType.INT8, DType.UINT8, DType.BFLOAT16):
            return None  # dav-3510's Select takes these
        if dt.bytes == 4:
            return DType.FLOAT32
        if dt.bytes == 2:
            return DType.FLOAT16
        raise UnsupportedError(f"T.if_then_else on {dt} tiles is not supported on {self.vec.arch.name}", loc=self.loc,
                               hint="select in float16 (cast the values) and cast the result back")

    def _as_tile(self, o: Opnd, dt: DType, avoid: str | None = None, prefer: str | None = None) -> Opnd:
        """``o`` as a whole tile of ``dt`` (a scalar duplicated, a vector expanded, a tile cast)."""
        if o.kind == "tile" and str(o.dtype) == str(dt):
            return o
        use_prefer = prefer is not None and prefer != avoid
        t = prefer if use_prefer else self.vec.temp(self.shape, dt).name
        if o.kind == "scalar":
            self.pre.extend(self.vec.duplicate_expr(t, o.expr, self.loc))
        elif str(o.dtype) != str(dt):
            o = self._as_tile(o, to_dtype(o.dtype))
            self.pre.extend(self.vec.copy_or_cast(t, o.buffer, self.loc))
            self._free(o)
        else:
            self.pre.extend(self.vec.expand(t, o, self.rows, self.cols, self.loc))
            self._free(o)
        return Opnd("tile", str(dt), buffer=t, temp=not use_prefer)

    def _cond(self, c) -> Buffer:
        """The bit mask of a condition over the domain (a UB temp the caller releases)."""
        if isinstance(c, tirx.Call) and str(c.dtype) == "bool" and len(c.args) == 2 and \
                str(c.op.name) in ("tirx.bitwise_and", "tirx.bitwise_or", "tir.bitwise_and", "tir.bitwise_or"):
            # `(m[j] != 0) & (j < n)`: Python's & and | on two conditions are TVM bitwise ops on bools
            c = (tirx.And if str(c.op.name).endswith("and") else tirx.Or)(c.args[0], c.args[1])
        if isinstance(c, tirx.And | tirx.Or):
            m0, m1 = self._cond(c.a), self._cond(c.b)
            op = MaskLogic.AND if isinstance(c, tirx.And) else MaskLogic.OR
            self.pre.append(VecMaskLogic(op=op, dst=m0.name, src0=m0.name, src1=m1.name, count=m0.numel, loc=self.loc))
            self.vec.release(m1)
            return m0
        if isinstance(c, tirx.Not):
            m = self._cond(c.a)
            self.pre.append(VecMaskLogic(op=MaskLogic.NOT, dst=m.name, src0=m.name, src1=None, count=m.numel,
                                         loc=self.loc))
            return m
        if not self._uses_domain(c):
            # the same for every element: all ones or all zeros, decided by the scalar unit
            m = self._mask_temp()
            value = ScalarExpr(tirx.Select(c, tirx.IntImm("int32", 0xFFFF), tirx.IntImm("int32", 0)), DType.UINT16)
            self.pre.append(VecDuplicate(dst=m.name, value=value, count=m.numel, loc=self.loc))
            return m
        modes = {tirx.LT: CmpMode.LT, tirx.LE: CmpMode.LE, tirx.GT: CmpMode.GT, tirx.GE: CmpMode.GE,
                 tirx.EQ: CmpMode.EQ, tirx.NE: CmpMode.NE}
        for cls, mode in modes.items():
            if isinstance(c, cls):
                return self._compare(mode, c.a, c.b)
        if str(c.dtype) == "bool" and isinstance(c, tirx.BufferLoad):  # a bool tile: its nonzero elements
            return self._compare(CmpMode.NE, c, tirx.IntImm("bool", 0))
        raise UnsupportedError(f"condition '{c}' inside T.Parallel is not supported", loc=self.loc,
                               hint="write comparisons of expressions of the loop indices, scalars and tiles, joined "
                               "with `and`, `or`, `not`")

    def _compare(self, mode: CmpMode, ea, eb) -> Buffer:
        """Compare two expressions element-wise into a bit mask. Integer and bfloat16 operands are
        compared as float32 (exact for integers up to 2^24), as the Compare of both arches takes
        float16 and float32 in every mode."""
        dt = str(ea.dtype)
        if "int" in dt:
            affine = self._affine(ea - eb)
            if affine is not None:
                # sum(c_k * index_k) + c0 OP 0, compared as  sum(c_k * index_k) OP -c0
                f, c0 = affine
                ea, eb = f, _to_f32(-c0, self) if not isinstance(c0, tirx.IntImm) else tirx.FloatImm(
                    "float32", -float(c0.value))
        if dt not in ("float16", "float32"):
            ea, eb = _to_f32(ea, self), _to_f32(eb, self)
            dt = "float32"
        a, b = self.expr(ea), self.expr(eb)
        cdt = to_dtype(dt)
        m = self._mask_temp()
        ncmp = _round_up(self._n, 256 // cdt.bytes)
        if a.kind == "scalar" or b.kind == "scalar":
            t, sc, mode = (a, b, mode) if b.kind == "scalar" else (b, a, mode.swapped)
            src = self._cmp_operand(t, cdt, ncmp)
            self.pre.append(VecCompare(mode=mode, dst=m.name, src0=src, src1=None, scalar=sc.expr, count=ncmp,
                                       dtype=cdt, loc=self.loc))
            self.vec.release(src)
        else:
            s0 = self._cmp_operand(a, cdt, ncmp)
            s1 = self._cmp_operand(b, cdt, ncmp)
            self.pre.append(VecCompare(mode=mode, dst=m.name, src0=s0, src1=s1, scalar=None, count=ncmp, dtype=cdt,
                                       loc=self.loc))
            self.vec.release(s0)
            self.vec.release(s1)
        return m

    def _affine(self, e) -> tuple | None:
        """``e`` (an integer expression) as (f, c0): f a sum of coefficient x loop index with the
        coefficients independent of the domain, c0 the rest; None when ``e`` is not of that form
        (loads of tiles, division)."""
        from tvm import arith

        ana = arith.Analyzer()
        coef = arith.detect_linear_equation(ana.simplify(e), self.vars)
        if len(coef) != len(self.vars) + 1 or any(self._uses_domain(c) for c in coef):
            return None
        f = None
        for c, v in zip(coef[:-1], self.vars, strict=True):
            c = ana.simplify(c)
            if isinstance(c, tirx.IntImm) and int(c.value) == 0:
                continue
            term = v if isinstance(c, tirx.IntImm) and int(c.value) == 1 else c * v
            if isinstance(c, tirx.IntImm) and int(c.value) == -1 and f is not None:
                f = f - v
                continue
            f = term if f is None else f + term
        if f is None:
            return None
        return f, ana.simplify(coef[-1])

    def _cmp_operand(self, o: Opnd, dt: DType, ncmp: int) -> str:
        """``o`` as a tile of at least ``ncmp`` elements (a Compare reads whole 256-byte repeats):
        copied into a padded temp when the tile itself is smaller."""
        t = self._as_tile(o, dt)
        if self.vec.count(t.buffer) >= ncmp:
            return t.buffer
        pitch = (self.cols + 15) // 16 * 16
        shape = (-(-ncmp // pitch), self.cols) if len(self.shape) == 2 else (ncmp,)
        padded = self.vec.temp(shape, dt)
        self.pre.append(VecCopy(dst=padded.name, src=t.buffer, count=self._n, loc=self.loc))
        self._free(t)
        return padded.name

    def _index(self, v, dt: DType) -> Opnd:
        """The values of parallel index ``v``: per row (i of a 2-D domain), per column (j) or the
        whole tile (1-D), made by CreateVecIndex."""
        k = next((n for n, x in enumerate(self.vars) if x.same_as(v)), None)
        if k is None:
            raise UnsupportedError(f"'{v}' inside T.Parallel is neither a loop index nor a scalar", loc=self.loc)
        if dt not in _INDEX_DTYPES:
            raise UnsupportedError(f"the loop index '{v}' used as a {dt} value", loc=self.loc,
                                   hint="cast it to int32, float32 or float16")
        kind = "tile" if len(self.vars) == 1 else ("row" if k == 0 else "col")
        key = (k, dt)
        if key not in self.index_cache:  # made once per T.Parallel, freed at its end
            t = self.vec.temp(self._kind_shape(kind), dt)
            n = self.rows if kind == "row" else self.cols
            self.pre.append(VecIndex(dst=t.name, first=scalar_literal(0, dt), count=n, dtype=dt, loc=self.loc))
            self.index_cache[key] = t.name
        return Opnd(kind, str(dt), buffer=self.index_cache[key], temp=False)

    def _dest(self, out: str | None, kind: str, dtype: str, *operands: Opnd) -> str:
        """Where a node's result goes: ``out`` when it has the result's shape and dtype; in compact
        mode the temporary of an operand of the same kind and dtype (it is dead after this node,
        and an element-wise instruction may write over its source); else a fresh temporary."""
        if out is not None and self.buffers[out].dtype == dtype and self._kind_shape(kind) == self.buffers[out].shape:
            return out
        scratch = self.scratch
        if scratch is not None and kind == "tile" and str(self.buffers[scratch].dtype) == str(dtype) \
                and self.buffers[scratch].shape == self._kind_shape(kind) \
                and any(o.buffer == scratch for o in operands):
            return scratch  # (the stored tile, read once, element by element: its bytes hold the partial results)
        if self.vec.compact:
            for o in operands:
                if o.temp and o.buffer and o.kind == kind and str(o.dtype) == str(dtype) and \
                        self.buffers[o.buffer].shape == self._kind_shape(kind):
                    return o.buffer
        return self.vec.temp(self._kind_shape(kind), dtype).name

    def _kind_shape(self, kind: str) -> tuple:
        return {"tile": self.shape, "row": (self.rows,), "col": (self.cols,)}[kind]

    def _free(self, o: Opnd, keep: str | None = None) -> None:
        """Release ``o``'s temporary, unless it became the result ``keep``."""
        if o.temp and o.buffer and o.buffer != keep and o.buffer != self.scratch:
            self.vec.release(o.buffer)

    def _binary(self, name: str, ea, eb, dtype: str, out: str | None) -> Opnd:
        a = self.expr(ea)
        b = self.expr(eb)
        if a.kind == "scalar" and b.kind == "scalar":
            raise UnsupportedError("internal: scalar-only binary op reached vector lowering", loc=self.loc)
        # tile-with-scalar: the scalar forms Adds/Muls/Maxs/Mins.
        if b.kind == "scalar" or a.kind == "scalar":
            t, s, scalar_first = (a, b, False) if b.kind == "scalar" else (b, a, True)
            dst = self._dest(out, t.kind, dtype, t)
            if name in _SCALAR_FORM:
                self.pre.extend(self.vec.scalar_op(_SCALAR_FORM[name], dst, t.buffer, s.expr, self.loc))
            elif name is VecBinary.SUB and not scalar_first:
                self.pre.extend(self.vec.scalar_op(VecScalarOp.ADDS, dst, t.buffer, ScalarNeg(s.expr), self.loc))
            elif name is VecBinary.SUB:  # s - t = (-1 * t) + s
                self.pre.extend(self.vec.scalar_op(VecScalarOp.MULS, dst, t.buffer, scalar_literal(-1, dtype),
                                                   self.loc))
                self.pre.extend(self.vec.scalar_op(VecScalarOp.ADDS, dst, dst, s.expr, self.loc))
            elif name is VecBinary.DIV and not scalar_first and exact_reciprocal(const_value(eb), dtype) is not None:
                self.pre.extend(self.vec.scalar_op(VecScalarOp.MULS, dst, t.buffer,
                                                   scalar_literal(exact_reciprocal(const_value(eb), dtype), dtype),
                                                   self.loc))
            else:  # a division with a scalar we cannot fold: materialise the scalar
                tmp = self.vec.temp(self._kind_shape(t.kind), dtype)
                self.pre.extend(self.vec.duplicate_expr(tmp.name, s.expr, self.loc))
                x, y = (tmp.name, t.buffer) if scalar_first else (t.buffer, tmp.name)
                self.pre.extend(self.vec.binary(name, dst, x, y, self.loc))
                self.vec.release(tmp)
            self._free(t, keep=dst)
            return Opnd(t.kind, dtype, buffer=dst, temp=dst != out)
        if a.kind == b.kind:
            dst = self._dest(out, a.kind, dtype, a, b)
            self.pre.extend(self.vec.binary(name, dst, a.buffer, b.buffer, self.loc))
            self._free(a, keep=dst)
            if b.buffer != a.buffer:
                self._free(b, keep=dst)
            return Opnd(a.kind, dtype, buffer=dst, temp=dst != out)
        dst = self._dest(out, "tile", dtype, a, b)
        self.pre.extend(self.vec.broadcast_binary(name, dst, a, b, self.rows, self.cols, self.loc))
        self._free(a, keep=dst)
        self._free(b, keep=dst)
        return Opnd("tile", dtype, buffer=dst, temp=dst != out)

    # -- statements
    def lower(self) -> list:
        ops: list = []
        for ps in self.op.stores:
            st, sloc = ps.store, ps.loc
            self.loc = sloc or self.op.loc
            if ps.atomic is not None and self.buffers[st.buffer.name].scope is not Scope.GM:
                # One vector program per block: an atomic add into a tile is a plain add.
                st = tirx.BufferStore(st.buffer, tirx.Add(tirx.BufferLoad(st.buffer, st.indices), st.value),
                                      st.indices)
                ops.extend(self._store(st))
            else:
                ops.extend(self._store(st, atomic=ps.atomic))
        for name in self.index_cache.values():
            self.vec.release(name)
        return ops

    def _store_bounds(self, st) -> dict | None:
        """For ``G[...] = T.if_then_else(cond, v, G[...])`` (an ``if`` around a store into a global
        tensor) whose condition is a conjunction of upper bounds on the loop indices (``i < n``,
        ``bx * 64 + i < len``, ``j <= m``), the bound of each index: {position: exclusive upper
        bound}. None when the condition is anything else (it stays a select)."""
        from tvm import arith

        v = st.value
        if not (isinstance(v, tirx.Call) and str(v.op.name).endswith("if_then_else")):
            return None
        old = v.args[2]
        if not (isinstance(old, tirx.BufferLoad) and old.buffer.same_as(st.buffer) and all(
                tirx.analysis.expr_deep_equal(p, q) for p, q in zip(old.indices, st.indices, strict=True))):
            return None
        conj, stack = [], [v.args[0]]
        while stack:
            c = stack.pop()
            if isinstance(c, tirx.And):
                stack.extend([c.a, c.b])
            else:
                conj.append(c)
        ana = arith.Analyzer()
        bounds: dict = {}
        for c in conj:
            if not isinstance(c, tirx.LT | tirx.LE | tirx.GT | tirx.GE) or "int" not in str(c.a.dtype):
                return None
            coef = arith.detect_linear_equation(ana.simplify(c.a - c.b), self.vars)
            if len(coef) != len(self.vars) + 1 or any(self._uses_domain(x) for x in coef):
                return None
            k = [n for n, x in enumerate(coef[:-1]) if not (isinstance(x, tirx.IntImm) and int(x) == 0)]
            if len(k) != 1 or not isinstance(coef[k[0]], tirx.IntImm) or abs(int(coef[k[0]])) != 1:
                return None
            sign, r = int(coef[k[0]]), coef[-1]  # sign * idx + r  OP  0
            # exclusive upper bound on the index, or None when the comparison bounds it from below
            if isinstance(c, tirx.LT):
                hi = -r if sign == 1 else None
            elif isinstance(c, tirx.LE):
                hi = 1 - r if sign == 1 else None
            elif isinstance(c, tirx.GT):
                hi = r if sign == -1 else None
            else:
                hi = r + 1 if sign == -1 else None
            if hi is None:
                return None
            hi = ana.simplify(hi)
            bounds[k[0]] = hi if k[0] not in bounds else ana.simplify(tirx.Min(bounds[k[0]], hi))
        return bounds or None

    def _reduce_store(self, st, buf: Buffer, pattern: str) -> list:
        """``r[i] = r[i] op e`` (or r[j]) inside a 2-D T.Parallel: a store that writes the same element
        for every value of the other index is a reduction over that index (T.alloc_reducer, or any
        per-row / per-column accumulator): op is +, T.max or T.min, e varies along both indices."""
        v = st.value
        target = tirx.BufferLoad(st.buffer, st.indices)
        same = lambda x: isinstance(x, tirx.BufferLoad) and x.buffer.same_as(st.buffer) and all(  # noqa: E731
            tirx.analysis.expr_deep_equal(p, q) for p, q in zip(x.indices, st.indices, strict=True))
        kinds = {tirx.Add: ReduceKind.SUM, tirx.Max: ReduceKind.MAX, tirx.Min: ReduceKind.MIN}
        kind = other = None
        for cls, k in kinds.items():
            if isinstance(v, cls):
                if same(v.a):
                    kind, other = k, v.b
                elif same(v.b):
                    kind, other = k, v.a
        axis = "j" if pattern == "row" else "i"
        if kind is None:
            raise UnsupportedError(
                f"store to {buf.name}[{', '.join(map(str, st.indices))}] inside a 2-D T.Parallel writes the same "
                f"element for every {axis}: only a reduction over {axis} is taken (`{target} += e`, "
                f"`{target} = T.max({target}, e)`, T.min)", loc=self.loc,
                hint="store per-row values in a T.Parallel over rows only, or reduce with T.reduce_*")
        if self._uses_domain(other) is False:
            raise UnsupportedError(f"'{other}' does not vary inside T.Parallel: accumulating it into {target} adds "
                                   f"it once per {axis}", loc=self.loc, hint="multiply it by the extent instead")
        res = self.expr(promote_narrow(other, self.vec.arch))
        if res.kind not in ("tile",):
            raise UnsupportedError(f"the value accumulated into {target} does not vary along {axis}", loc=self.loc,
                                   hint="accumulate a value of both indices, or write the per-row value directly")
        if str(res.dtype) != str(buf.dtype):
            t = self.vec.temp(self.shape, buf.dtype)
            self.pre.extend(self.vec.copy_or_cast(t.name, res.buffer, self.loc))
            self._free(res)
            res = Opnd("tile", str(buf.dtype), buffer=t.name, temp=True)
        if buf.dtype not in (DType.FLOAT16, DType.FLOAT32):
            raise UnsupportedError(f"a {buf.dtype} accumulator '{buf.name}' inside T.Parallel", loc=self.loc,
                                   hint="accumulate in a float32 or float16 fragment")
        if pattern == "row":
            self.pre.extend(self.vec.row_reduce(kind, buf.name, res.buffer, False, self.loc, scratch=res.temp))
        else:
            self.pre.extend(self.vec.col_reduce(kind, buf.name, res.buffer, False, self.loc))
        self._free(res)
        return self.pre

    def _scratch(self, st, buf) -> str | None:
        """In compact mode, ``x[i, j] = f(x[i, j], ...)`` with x read once, at the element it writes:
        the element-wise steps of f may write their partial results into x itself (each reads the
        one before, element by element), where a fresh tile-sized temporary would cost UB."""
        loads: list = []
        tirx.stmt_functor.post_order_visit(
            st.value, lambda n: loads.append(n) if isinstance(n, tirx.BufferLoad) and n.buffer.name == buf.name
            else None)
        if len(loads) != 1 or len(loads[0].indices) != len(st.indices):
            return None
        same = all(tvm.ir.structural_equal(a, b) for a, b in zip(loads[0].indices, st.indices, strict=True))
        return buf.name if same else None

    def _store(self, st, atomic=None) -> list:
        self.pre = []
        self.scratch = None
        buf = self.buffers[st.buffer.name]
        post: list = []
        if buf.scope is Scope.GM:
            region, shape, pattern = self._gm_region(buf, list(st.indices))
            if pattern != "tile":
                raise UnsupportedError(f"store to '{buf.name}' must cover the whole T.Parallel domain", loc=self.loc)
            column = self.columns[0](buf, region, shape) if self.columns else None
            bounds = self._store_bounds(st) if column is None or len(self.vars) == 1 else None
            if bounds is not None:
                # `if i < n: G[...] = v`: only the rows (columns) the condition keeps are copied out;
                # a select against G's old contents would rewrite rows other blocks own.
                st = tirx.BufferStore(st.buffer, st.value.args[1], st.indices)
            out_buf = self.vec.temp(shape, buf.dtype)
            if column is not None:
                post.extend(self.columns[2](out_buf, buf, region, *column, atomic, self.loc,
                                            cut=bounds[0] if bounds else None))
            else:
                w = self.gm_window(buf, region, shape, self.loc)
                if bounds is not None:
                    w = _bound_window(w, bounds, len(self.vars))
                post.append(self.ub_gm_op(out_buf, buf, w, self.loc, atomic=atomic))
            out = out_buf.name
        elif buf.scope is Scope.UB:
            idx = list(st.indices)
            if len(self.vars) == 1 and len(idx) == 2 and len(buf.shape) == 2 and not self._uses_domain(idx[0]) \
                    and isinstance(idx[1], tirx.Var) and idx[1].same_as(self.vars[0]) and buf.cols == self.cols:
                # x[k, i] = e over a 1-D T.Parallel: e into a vector, copied into row k (rows start
                # 32-byte aligned)
                row = self.vec.temp((self.cols,), buf.dtype)
                post.append(VecCopy(dst=buf.name, src=row.name, count=self.vec.count(row.name),
                                    dst_offset=idx[0] * buf.pitch, loc=self.loc))
                out = row.name
                res = self.expr(promote_narrow(st.value, self.vec.arch), out=out)
                if res.kind == "scalar":
                    self.pre.extend(self.vec.duplicate_expr(out, res.expr, self.loc))
                elif res.buffer != out:
                    self.pre.extend(self.vec.copy_or_cast(out, res.buffer, self.loc))
                    self._free(res)
                self.vec.release(row)
                return self.pre + post
            if self._plain_pattern(st) is None and len(idx) == len(self.vars) and any(
                    self._uses_domain(i) for i in idx):
                shape = "x".join(str(int(x)) for x in buf.shape)
                raise UnsupportedError(
                    f"the store to {buf.name}[{', '.join(str(i) for i in idx)}] inside "
                    f"T.Parallel({', '.join(map(str, self.extents))}) writes part of the tile '{buf.name}' ({shape}) "
                    "at computed positions: the vector unit writes whole rows of a tile lane by lane, and there is "
                    "no scatter instruction to write lanes at computed offsets", loc=self.loc,
                    hint=f"write a tile of the loop's shape ({', '.join(map(str, self.extents))}) and read it where "
                    "you need it (reads at computed indices are gathered), or run the loop over the whole tile")
            pattern = self._pattern(st)
            self.scratch = self._scratch(st, buf) if self.vec.compact and pattern == "tile" else None
            packed = unpack_int4.match(st, self.vars)
            if packed is not None and pattern == "tile":
                return unpack_int4.lower(self.vec, buf.name, packed[0], self.rows, self.cols, self.loc,
                                         signed=packed[1])
            if pattern != "tile":
                return self._reduce_store(st, buf, pattern)
            out = buf.name
        else:
            raise UnsupportedError(f"T.Parallel cannot write '{buf.name}' in {buf.scope}", loc=self.loc,
                                   hint="element-wise work on a gemm result needs the Cube/Vector split, "
                                   "not available yet" if buf.scope is Scope.L0C else None)
        value = promote_narrow(st.value, self.vec.arch)
        self.shared_casts = _repeated_casts(value)
        try:
            res = self.expr(value, out=out)
        finally:
            self.scratch = None
            for name, _ in self.cast_cache.values():
                self.vec.release(name)
            self.shared_casts, self.cast_cache = set(), {}
        if res.kind == "scalar":
            self.pre.extend(self.vec.duplicate_expr(out, res.expr, self.loc))
        elif res.buffer != out:
            if res.kind != "tile":  # a per-row or per-column value repeated over the tile
                res = self._as_tile(res, to_dtype(res.dtype), prefer=out if str(res.dtype) == str(buf.dtype) else None)
            if res.buffer != out:
                self.pre.extend(self.vec.copy_or_cast(out, res.buffer, self.loc))
                self._free(res)
        if buf.scope is Scope.GM:
            self.vec.release(out)
        return self.pre + post
