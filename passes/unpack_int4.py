"""int4 unpacking on the Vector side: the dequantize-gemm family's `T.Parallel` that decodes a
packed int4 tile (two signed 4-bit values per int8/uint8 byte, element 2k in the low nibble).

Unsigned nibbles (0..15, TileLang's uint4 dequantize) take the same Cast and a fix-up of the
negative values. TileLang writes it element-wise with shifts and masks, e.g.

    for i, j in T.Parallel(block_N, block_K):
        B_dq[i, j] = ((B_packed[i, j // 2] >> ((j % 2) * 4)) & 15 ...sign-extended...)

The vector units have no per-element shifts by a lane-dependent amount, but their Cast takes
int4b_t, packed exactly so (Cast page: int4b_t -> half on both arches, -> bfloat16 / int16 on
dav-3510). The value is recognised by evaluating it for every byte and both nibble positions: if
it is the signed nibble (possibly converted to another type), the store becomes one Cast of the
packed tile reinterpreted as int4b_t (plus the conversion to the destination's dtype).
"""

from __future__ import annotations

from tvm import tirx

from ascend_backend.dtypes import DType
from ascend_backend.errors import UnsupportedError
from ascend_backend.ir import Rounding, VecBinary, VecCast, VecScalarOp


class _NoMatch(Exception):
    pass


def _wrap(v: int, dt: str) -> int:
    """``v`` as a value of integer dtype ``dt`` (two's complement wrap)."""
    d = DType(dt) if dt != "bool" else DType.BOOL
    if d.is_float:
        return v
    bits = d.bits
    v &= (1 << bits) - 1
    if d.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


class _Eval:
    """Evaluates an integer TIR expression with the loop variables and one packed load bound."""

    def __init__(self, env: dict, load, byte: int) -> None:
        self.env = env
        self.load = load
        self.byte = byte

    def __call__(self, e) -> int:
        dt = str(e.dtype)
        if isinstance(e, tirx.IntImm):
            return int(e.value)
        if isinstance(e, tirx.FloatImm):
            return float(e.value)
        if isinstance(e, tirx.Var):
            for v, x in self.env.items():
                if v.same_as(e):
                    return x
            raise _NoMatch
        if isinstance(e, tirx.BufferLoad):
            if e.same_as(self.load):
                return _wrap(self.byte, str(e.buffer.dtype))
            raise _NoMatch
        if isinstance(e, tirx.Cast):
            v = self(e.value)
            if DType(dt).is_float:
                return float(v)
            return _wrap(int(v), dt)
        bin_ops = {tirx.Add: lambda a, b: a + b, tirx.Sub: lambda a, b: a - b, tirx.Mul: lambda a, b: a * b,
                   tirx.FloorDiv: lambda a, b: a // b, tirx.FloorMod: lambda a, b: a % b}
        for cls, f in bin_ops.items():
            if isinstance(e, cls):
                r = f(self(e.a), self(e.b))
                return r if DType(dt).is_float else _wrap(int(r), dt)
        if isinstance(e, tirx.Call):
            name = str(e.op.name).split(".")[-1]   # tir.* or tirx.* by TVM version
            args = [self(a) for a in e.args]
            if name == "shift_right":
                return _wrap(int(args[0]) >> int(args[1]), dt)
            if name == "shift_left":
                return _wrap(int(args[0]) << int(args[1]), dt)
            if name == "bitwise_and":
                return _wrap(int(args[0]) & int(args[1]), dt)
            if name == "bitwise_or":
                return _wrap(int(args[0]) | int(args[1]), dt)
            if name == "bitwise_xor":
                return _wrap(int(args[0]) ^ int(args[1]), dt)
            if name == "reinterpret":
                src_dt = str(e.args[0].dtype)
                return _wrap(int(args[0]) & ((1 << DType(src_dt).bits) - 1), dt)
        raise _NoMatch


def _packed_load(e, i, j):
    """The one BufferLoad of ``e`` at [i, j // 2] (a packed tile), or None."""
    loads = []
    tirx.stmt_functor.post_order_visit(e, lambda n: loads.append(n) if isinstance(n, tirx.BufferLoad) else None)
    if len(loads) != 1 or str(loads[0].buffer.dtype) not in ("int8", "uint8") or len(loads[0].indices) != 2:
        return None
    a, b = loads[0].indices
    if not (isinstance(a, tirx.Var) and a.same_as(i)):
        return None
    if not (isinstance(b, tirx.FloorDiv) and isinstance(b.a, tirx.Var) and b.a.same_as(j)
            and isinstance(b.b, tirx.IntImm) and int(b.b.value) == 2):
        return None
    return loads[0]


def match(store, vars_: list) -> tuple[str, bool] | None:
    """(the packed tile's name, signed) if ``store``'s value is the signed or the unsigned int4
    nibble of ``packed[i, j // 2]`` selected by ``j % 2`` (low nibble first), else None."""
    if len(vars_) != 2:
        return None
    i, j = vars_
    value = store.value
    load = _packed_load(value, i, j)
    if load is None:
        return None
    for signed in (True, False):
        try:
            ok = True
            for jv in range(4):
                for byte in range(256):
                    nib = (byte >> (4 * (jv % 2))) & 0xF
                    want = nib - 16 if signed and nib >= 8 else nib
                    if _Eval({i: 0, j: jv}, load, byte)(value) != want:
                        ok = False
                        break
                if not ok:
                    break
        except (_NoMatch, ValueError, KeyError):
            return None
        if ok:
            return load.buffer.name, signed
    return None


def lower(vec, dst: str, packed: str, rows: int, cols: int, loc, signed: bool = True) -> list:
    """Cast the packed tile, read as int4b_t, into ``dst`` (through float16 when ``dst`` is not a
    type the int4 Cast writes on this arch). Unsigned nibbles (TileLang's uint4 dequantize): the
    signed value s in [-8, 7] plus 16 where s < 0, in float16 with exact integer steps:
    u = s - max(min(s, 0) * 16, -16)."""
    d = vec.buffers[dst]
    p = vec.buffers[packed]
    if p.pitch * 2 != d.pitch or p.rows != d.rows:
        raise UnsupportedError(
            f"unpacking int4 tile '{packed}' {list(p.shape)} into '{dst}' {list(d.shape)}: the packed tile must "
            "have the destination's rows and half its columns", loc=loc)
    direct = (DType.INT4, d.dtype) in vec.arch.vector_casts and (signed or d.dtype is DType.FLOAT16)
    mid = dst if direct else vec.temp(d.shape, DType.FLOAT16).name
    ops = [VecCast(dst=mid, src=packed, mode=Rounding.NONE, count=vec.count(dst), src_dtype=DType.INT4,
                   dst_dtype=vec.buffers[mid].dtype, loc=loc)]
    if not signed:
        from .lower_parallel import scalar_literal

        lit = lambda v: scalar_literal(v, DType.FLOAT16)  # noqa: E731
        t = vec.temp(d.shape, DType.FLOAT16).name
        ops += vec.scalar_op(VecScalarOp.MINS, t, mid, lit(0), loc)
        ops += vec.scalar_op(VecScalarOp.MULS, t, t, lit(16), loc)
        ops += vec.scalar_op(VecScalarOp.MAXS, t, t, lit(-16), loc)
        ops += vec.binary(VecBinary.SUB, mid, mid, t, loc)
        vec.release(t)
    if not direct:
        ops += vec.copy_or_cast(dst, mid, loc)
        vec.release(mid)
    return ops


__all__ = ["match", "lower"]
