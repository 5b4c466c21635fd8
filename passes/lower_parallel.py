"""Vector lowering used by lower_tile_ops: T.Parallel bodies, fills, casts and row reductions.

A T.Parallel assignment is an expression tree over tiles; each node becomes one vector
instruction over the whole tile (count form), or a mask/repeat instruction when one operand
is broadcast along rows (a per-row value, expanded with Brcb) or along columns (a per-column
vector, read with a repeat stride of 0). Intermediate values live in UB temporaries drawn from
a pool, so the UB footprint stays bounded. fp16/bf16 expressions are computed in their own
dtype, one rounding per instruction, as the hardware does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tvm import tirx

from ascend_backend.dtypes import DType, known
from ascend_backend.dtypes import dtype as to_dtype
from ascend_backend.errors import UnsupportedError
from ascend_backend.ir import (
    Buffer,
    BufferKind,
    DiagPrefix,
    Layout,
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
    VecBinary,
    VecBinaryBcast,
    VecBinaryOp,
    VecBrcb,
    VecCast,
    VecCopy,
    VecDiagFill,
    VecDuplicate,
    VecFold,
    VecFoldInit,
    VecFoldLoop,
    VecScalar,
    VecScalarOp,
    VecUnary,
    VecUnaryOp,
    VecWholeReduce,
)

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


class VectorEmitter:
    """Builds vector ops and manages UB temporaries."""

    def __init__(self, buffers: dict, arch) -> None:
        self.buffers = buffers
        self.arch = arch
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
        b = Buffer(name=name, shape=tuple(shape), dtype=dt, kind=BufferKind.TEMP, scope=Scope.UB, layout=Layout.ND,
                   pitch=(cols + 15) // 16 * 16, role="vector temporary")
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

    # -- simple instructions
    def duplicate(self, dst: str, value: float, loc) -> list:
        b = self.buffers[dst]
        return [VecDuplicate(dst=dst, value=scalar_literal(value, b.dtype), count=self.count(dst), loc=loc)]

    def duplicate_expr(self, dst: str, expr: ScalarValue, loc) -> list:
        b = self.buffers[dst]
        return [VecDuplicate(dst=dst, value=ScalarConv(expr, b.dtype), count=self.count(dst), loc=loc)]

    def copy_or_cast(self, dst: str, src: str, loc) -> list:
        d, s = self.buffers[dst], self.buffers[src]
        if d.dtype == s.dtype:
            # A UB -> UB DataCopy runs on the vector pipe.
            return [VecCopy(dst=dst, src=src, count=self.count(dst), loc=loc)]
        half_types = (DType.FLOAT16, DType.BFLOAT16)
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
        return [VecUnaryOp(op=fn, dst=dst, src=src, count=self.count(dst), loc=loc)]

    def scalar_op(self, op: VecScalarOp, dst: str, src: str, scalar: ScalarValue, loc) -> list:
        return [VecScalar(op=op, dst=dst, src=src, scalar=scalar, count=self.count(dst), loc=loc)]

    def binary(self, op: VecBinary, dst: str, a: str, b: str, loc) -> list:
        return [VecBinaryOp(op=op, dst=dst, src0=a, src1=b, count=self.count(dst), loc=loc)]

    def broadcast_binary(self, op: VecBinary, dst: str, a: Opnd, b: Opnd, rows: int, cols: int, loc) -> list:
        """dst[r, c] = a op b where a/b are tiles, per-row vectors or per-column vectors."""
        d = self.buffers[dst]
        esz = d.dtype.bytes
        blk = 32 // esz
        ops: list = []
        srcs = []
        temps = []
        for o in (a, b):
            if o.kind == "tile":
                srcs.append(RepeatOperand(o.buffer, row=d.pitch, chunk=1, blk=1, rep=d.pitch * esz // 32))
            elif o.kind == "col":
                srcs.append(RepeatOperand(o.buffer, row=0, chunk=1, blk=1, rep=0))
            elif o.kind == "row":
                # Brcb writes each per-row value into its own 32 B block.
                rows8 = (rows + 7) // 8 * 8
                t = self.temp((rows8 * blk,), d.dtype)
                temps.append(t)
                ops.append(VecBrcb(dst=t.name, src=o.buffer, repeat=rows8 // 8, loc=loc))
                srcs.append(RepeatOperand(t.name, row=blk, chunk=0, blk=0, rep=1))
            else:
                raise UnsupportedError("internal: scalar operand in broadcast op")
        dst_rep = d.pitch * esz // 32
        if dst_rep > 255:
            raise UnsupportedError(f"tile '{dst}' rows are {d.pitch * esz} bytes; row-broadcast vector ops take rows "
                                   "of at most 8160 bytes", loc=loc, hint="use a narrower tile")
        lanes = 256 // esz
        ops.append(VecBinaryBcast(op=op, dst=dst, s0=srcs[0], s1=srcs[1], rows=rows, cols=cols, lanes=lanes,
                                  dst_row=d.pitch, dst_rep=dst_rep, chunks=(cols + lanes - 1) // lanes,
                                  what=f"{a.buffer}({a.kind}), {b.buffer}({b.kind})", loc=loc))
        for t in temps:
            self.release(t)
        return ops

    def row_reduce(self, kind: ReduceKind, dst: str, src: str, clear: bool, loc, valid_cols=None) -> list:
        s = self.buffers[src]
        d = self.buffers[dst]
        esz = s.dtype.bytes
        lanes = 256 // esz
        rows, cols = s.rows, s.cols
        if rows > 255:
            raise UnsupportedError(f"reduction over {rows} rows of '{src}'; at most 255 rows per tile",
                                   loc=loc, hint="use a block of at most 255 rows")
        src_rep = s.pitch * esz // 32
        if src_rep > 255:
            raise UnsupportedError(f"rows of '{src}' are {s.pitch * esz} bytes, over the 8160 bytes a reduction "
                                   "repeat can stride", loc=loc)
        vop = {ReduceKind.SUM: VecBinary.ADD, ReduceKind.MAX: VecBinary.MAX, ReduceKind.MIN: VecBinary.MIN}[kind]
        ops: list = []
        out = dst if clear else self.temp(d.shape, d.dtype).name
        if valid_cols is not None:
            # The tile's last columns may be stale (a column tail of the global shape): fold only
            # the valid ones, chunk by chunk with a runtime mask, into an accumulator that starts
            # at the reduction's identity.
            acc = self.temp((rows * lanes,), s.dtype)
            identity = {ReduceKind.SUM: 0.0, ReduceKind.MAX: -math.inf, ReduceKind.MIN: math.inf}[kind]
            ops.extend(self.duplicate(acc.name, identity, loc))
            ops.append(VecFoldLoop(op=vop, dst=acc.name, src=src, lanes=lanes, repeat=rows, src_rep=src_rep,
                                   chunks=(cols + lanes - 1) // lanes, valid=valid_cols,
                                   barrier=self.arch.needs_vector_barrier, loc=loc))
            ops.append(VecWholeReduce(kind=kind, dst=out, src=acc.name, mask=lanes, repeat=rows, src_rep=8, loc=loc))
            self.release(acc)
        elif cols <= lanes:
            ops.append(VecWholeReduce(kind=kind, dst=out, src=src, mask=cols, repeat=rows, src_rep=src_rep, loc=loc))
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


def cast_round_mode(src: DType, dst: DType) -> Rounding:
    if dst in (DType.INT32, DType.INT16, DType.INT8):
        return Rounding.TRUNC
    if src == DType.FLOAT32 and dst in (DType.FLOAT16, DType.BFLOAT16):
        return Rounding.RINT
    if src == DType.INT32 and dst in (DType.FLOAT16, DType.BFLOAT16):
        return Rounding.RINT
    return Rounding.NONE


def promote_bf16(e):
    """Rewrite bfloat16 arithmetic to float32 (casts at the leaves and at the root).

    The vector units compute bfloat16 only in casts on dav-c220, so every bfloat16 value is
    widened to float32 for arithmetic and rounded back once where a bfloat16 result is needed.
    """
    bf, f32 = "bfloat16", "float32"

    def go(x):
        dt = str(x.dtype)
        if isinstance(x, tirx.BufferLoad | tirx.Var | tirx.FloatImm | tirx.IntImm):
            return tirx.Cast(f32, x) if dt == bf else x
        if isinstance(x, tirx.Cast):
            inner = go(x.value)
            if dt == bf:  # keep the rounding to bfloat16, then widen again
                return tirx.Cast(f32, tirx.Cast(bf, inner))
            return tirx.Cast(dt, inner) if str(inner.dtype) != dt else inner
        for cls in _BINARY:
            if isinstance(x, cls):
                return cls(go(x.a), go(x.b))
        if isinstance(x, tirx.Call) and dt == bf:
            return tirx.Call(f32, x.op, [go(a) for a in x.args])
        if isinstance(x, tirx.Call):
            return tirx.Call(dt, x.op, [go(a) for a in x.args])
        return x

    if not _has_bf16(e):
        return e
    out = go(e)
    return tirx.Cast(bf, out) if str(e.dtype) == bf else out


def _has_bf16(e) -> bool:
    found = []

    def visit(n):
        if hasattr(n, "dtype") and str(n.dtype) == "bfloat16":
            found.append(n)

    tirx.stmt_functor.post_order_visit(e, visit)
    return bool(found)


class ParallelLowerer:
    """Lower one T.Parallel nest (a list of assignments) to vector ops."""

    def __init__(self, vec: VectorEmitter, buffers: dict, op, gm_ub_op, ub_gm_op, gm_window) -> None:
        self.vec = vec
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

    # -- access patterns
    def _pattern(self, load) -> str:
        """'tile' | 'row' | 'col' for a UB access with plain loop-variable indices."""
        idx = list(load.indices)
        vs = self.vars
        same = lambda e, v: isinstance(e, tirx.Var) and e.same_as(v)  # noqa: E731
        if len(idx) == len(vs) and all(same(e, v) for e, v in zip(idx, vs, strict=True)):
            return "tile"
        if len(vs) == 2 and len(idx) == 1:
            if same(idx[0], vs[0]):
                return "row"
            if same(idx[0], vs[1]):
                return "col"
        raise UnsupportedError(
            f"access {load.buffer.name}[{', '.join(str(i) for i in idx)}] inside T.Parallel({', '.join(map(str, vs))})"
            " is not an element-wise pattern the vector lowering takes",
            loc=self.loc,
            hint="index tiles with the parallel loop variables directly: x[i, j], a per-row value v[i] or a "
            "per-column value w[j]",
        )

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
                w = self.gm_window(buf, region, shape, self.loc)
                self.pre.append(self.gm_ub_op(buf, t, w, self.loc))
                return Opnd(pattern, buf.dtype, buffer=t.name, temp=True)
            if buf.scope is not Scope.UB:
                raise UnsupportedError(f"'{buf.name}' lives in {buf.scope}; T.Parallel reads vector tiles only",
                                       loc=self.loc)
            return Opnd(self._pattern(e), buf.dtype, buffer=buf.name)
        if isinstance(e, tirx.Cast):
            src = self.expr(e.value)
            if src.kind == "scalar":
                return Opnd("scalar", dtype, expr=ScalarConv(src.expr, to_dtype(dtype)))
            dst = self._dest(out, src.kind, dtype)
            self.pre.extend(self.vec.copy_or_cast(dst, src.buffer, self.loc))
            self._free(src)
            return Opnd(src.kind, dtype, buffer=dst, temp=dst != out)
        for cls, name in _BINARY.items():
            if isinstance(e, cls):
                return self._binary(name, e.a, e.b, dtype, out)
        if isinstance(e, tirx.Call | tirx.Select) and (isinstance(e, tirx.Select) or str(e.op.name).endswith(
                "if_then_else")):
            return self._select(e, dtype, out)
        if isinstance(e, tirx.Call):
            fname = str(e.op.name).split(".")[-1] if hasattr(e.op, "name") else str(e.op)
            if fname in _UNARY and len(e.args) == 1:
                src = self.expr(e.args[0])
                if src.kind == "scalar":
                    raise UnsupportedError(f"{fname} of a scalar inside T.Parallel", loc=self.loc,
                                           hint="compute it outside the loop")
                dst = self._dest(out, src.kind, dtype)
                self.pre.extend(self.vec.unary(_UNARY[fname], dst, src.buffer, self.loc))
                self._free(src)
                return Opnd(src.kind, dtype, buffer=dst, temp=dst != out)
            raise UnsupportedError(
                f"function T.{fname} is not supported inside T.Parallel on the ascendc target", loc=self.loc,
                hint="supported: + - * / max min, exp, exp2, log, log2, sqrt, rsqrt, abs, tanh, sigmoid, casts, "
                "if_then_else (diagonal masks)")
        raise UnsupportedError(f"expression '{e}' ({type(e).__name__}) is not supported inside T.Parallel",
                               loc=self.loc)

    def _select(self, e, dtype: str, out: str | None) -> Opnd:
        """T.if_then_else(cond, a, b) with scalar a, b and cond linear in (i, j) with opposite unit
        coefficients (a causal mask): each row is a prefix of one value and a rest of the other."""
        from tvm import arith

        cond, a, b = (e.condition, e.true_value, e.false_value) if isinstance(e, tirx.Select) else e.args
        hint = ("supported: T.if_then_else(<i and j compared, e.g. q_idx >= k_idx>, scalar, scalar), as in a "
                "causal mask")
        if len(self.vars) != 2:
            raise UnsupportedError("T.if_then_else inside a 1-D T.Parallel is not supported", loc=self.loc, hint=hint)
        va, vb = self.expr(a), self.expr(b)
        if va.kind != "scalar" or vb.kind != "scalar":
            raise UnsupportedError("T.if_then_else with tile-valued branches is not supported", loc=self.loc,
                                   hint=hint)
        if isinstance(cond, tirx.GE):
            diff = cond.a - cond.b
        elif isinstance(cond, tirx.GT):
            diff = cond.a - cond.b - 1
        elif isinstance(cond, tirx.LE):
            diff = cond.b - cond.a
        elif isinstance(cond, tirx.LT):
            diff = cond.b - cond.a - 1
        else:
            raise UnsupportedError(f"condition '{cond}' of T.if_then_else is not a comparison", loc=self.loc, hint=hint)
        i, j = self.vars
        coef = arith.detect_linear_equation(diff, [i, j])
        ana = arith.Analyzer()
        if len(coef) != 3 or not all(isinstance(ana.simplify(c), tirx.IntImm) for c in coef[:2]):
            raise UnsupportedError(f"condition '{cond}' of T.if_then_else is not linear in {i} and {j}",
                                   loc=self.loc, hint=hint)
        ci, cj = (int(ana.simplify(c)) for c in coef[:2])
        c0 = ana.simplify(coef[2])
        if (ci, cj) == (1, -1):  # j <= i + c0: the first i + c0 + 1 columns take a
            prefix, first, rest = DiagPrefix(c0, plus_one=True), va.expr, vb.expr
        elif (ci, cj) == (-1, 1):  # j >= i - c0: the first i - c0 columns take b
            prefix, first, rest = DiagPrefix(c0, plus_one=False), vb.expr, va.expr
        else:
            raise UnsupportedError(f"condition '{cond}' of T.if_then_else compares {i} and {j} with coefficients "
                                   f"{ci}, {cj}; only i - j (a diagonal mask) is supported", loc=self.loc, hint=hint)
        dst = self._dest(out, "tile", dtype)
        d = self.buffers[dst]
        self.pre.append(VecDiagFill(dst=dst, rows=self.rows, cols=self.cols, pitch=d.pitch, prefix=prefix, first=first,
                                    rest=rest, barrier=self.vec.arch.needs_vector_barrier, loc=self.loc))
        return Opnd("tile", dtype, buffer=dst, temp=dst != out)

    def _dest(self, out: str | None, kind: str, dtype: str) -> str:
        if out is not None and self.buffers[out].dtype == dtype and self._kind_shape(kind) == self.buffers[out].shape:
            return out
        return self.vec.temp(self._kind_shape(kind), dtype).name

    def _kind_shape(self, kind: str) -> tuple:
        return {"tile": self.shape, "row": (self.rows,), "col": (self.cols,)}[kind]

    def _free(self, o: Opnd) -> None:
        if o.temp and o.buffer:
            self.vec.release(o.buffer)

    def _binary(self, name: str, ea, eb, dtype: str, out: str | None) -> Opnd:
        a = self.expr(ea)
        b = self.expr(eb)
        if a.kind == "scalar" and b.kind == "scalar":
            raise UnsupportedError("internal: scalar-only binary op reached vector lowering", loc=self.loc)
        # tile-with-scalar: the scalar forms Adds/Muls/Maxs/Mins.
        if b.kind == "scalar" or a.kind == "scalar":
            t, s, scalar_first = (a, b, False) if b.kind == "scalar" else (b, a, True)
            dst = self._dest(out, t.kind, dtype)
            if name in _SCALAR_FORM:
                self.pre.extend(self.vec.scalar_op(_SCALAR_FORM[name], dst, t.buffer, s.expr, self.loc))
            elif name is VecBinary.SUB and not scalar_first:
                self.pre.extend(self.vec.scalar_op(VecScalarOp.ADDS, dst, t.buffer, ScalarNeg(s.expr), self.loc))
            elif name is VecBinary.SUB:  # s - t = (-1 * t) + s
                self.pre.extend(self.vec.scalar_op(VecScalarOp.MULS, dst, t.buffer, scalar_literal(-1, dtype),
                                                   self.loc))
                self.pre.extend(self.vec.scalar_op(VecScalarOp.ADDS, dst, dst, s.expr, self.loc))
            elif name is VecBinary.DIV and not scalar_first and const_value(eb) not in (None, 0.0):
                self.pre.extend(self.vec.scalar_op(VecScalarOp.MULS, dst, t.buffer,
                                                   scalar_literal(1.0 / const_value(eb), dtype), self.loc))
            else:  # a division with a scalar we cannot fold: materialise the scalar
                tmp = self.vec.temp(self._kind_shape(t.kind), dtype)
                self.pre.extend(self.vec.duplicate_expr(tmp.name, s.expr, self.loc))
                x, y = (tmp.name, t.buffer) if scalar_first else (t.buffer, tmp.name)
                self.pre.extend(self.vec.binary(name, dst, x, y, self.loc))
                self.vec.release(tmp)
            self._free(t)
            return Opnd(t.kind, dtype, buffer=dst, temp=dst != out)
        if a.kind == b.kind:
            dst = self._dest(out, a.kind, dtype)
            self.pre.extend(self.vec.binary(name, dst, a.buffer, b.buffer, self.loc))
            self._free(a)
            self._free(b)
            return Opnd(a.kind, dtype, buffer=dst, temp=dst != out)
        kinds = {a.kind, b.kind}
        if kinds == {"row", "col"}:
            raise UnsupportedError("an operation between a per-row and a per-column vector (an outer product) is "
                                   "not supported inside T.Parallel", loc=self.loc,
                                   hint="broadcast one of them into a full tile first")
        dst = self._dest(out, "tile", dtype)
        self.pre.extend(self.vec.broadcast_binary(name, dst, a, b, self.rows, self.cols, self.loc))
        self._free(a)
        self._free(b)
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
        return ops

    def _store(self, st, atomic=None) -> list:
        self.pre = []
        buf = self.buffers[st.buffer.name]
        post: list = []
        if buf.scope is Scope.GM:
            region, shape, pattern = self._gm_region(buf, list(st.indices))
            if pattern != "tile":
                raise UnsupportedError(f"store to '{buf.name}' must cover the whole T.Parallel domain", loc=self.loc)
            out_buf = self.vec.temp(shape, buf.dtype)
            w = self.gm_window(buf, region, shape, self.loc)
            post.append(self.ub_gm_op(out_buf, buf, w, self.loc, atomic=atomic))
            out = out_buf.name
        elif buf.scope is Scope.UB:
            if self._pattern(st) != "tile":
                raise UnsupportedError(
                    f"store to {buf.name}[{', '.join(map(str, st.indices))}] inside a "
                    f"{len(self.vars)}-D T.Parallel writes the same element many times",
                    loc=self.loc, hint="store per-row values in a T.Parallel over rows only")
            out = buf.name
        else:
            raise UnsupportedError(f"T.Parallel cannot write '{buf.name}' in {buf.scope}", loc=self.loc,
                                   hint="element-wise work on a gemm result needs the Cube/Vector split, "
                                   "not available yet" if buf.scope is Scope.L0C else None)
        res = self.expr(promote_bf16(st.value), out=out)
        if res.kind == "scalar":
            self.pre.extend(self.vec.duplicate_expr(out, res.expr, self.loc))
        elif res.buffer != out:
            if res.kind != "tile":
                raise UnsupportedError(
                    f"the value stored to '{buf.name}' varies along one dimension only; broadcasting a vector into "
                    "a tile is written as `x[i, j] = v[i] + 0` for now", loc=self.loc)
            self.pre.extend(self.vec.copy_or_cast(out, res.buffer, self.loc))
            self._free(res)
        if buf.scope is Scope.GM:
            self.vec.release(out)
        return self.pre + post
