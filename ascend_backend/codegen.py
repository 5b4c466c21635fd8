"""Render the final Program as Ascend C with the Jinja templates in ascend_backend.templates.

This module and the templates are the only places that spell C++. The walk over the IR (loops,
ifs, indentation) is here; each op kind has one function that turns its typed fields into the
strings its template macro prints (``_PARAMS``), and one macro in templates/ops.j2 that prints
them; the kernel frame is templates/kernel.cpp.j2.
"""

from __future__ import annotations

import contextvars
import dataclasses
import enum
import functools
import os
from collections.abc import Callable

import jinja2
from tvm import tirx

from .cexpr import LOAD, VAR_NAMES, c_string, cexpr, cname, float_literal
from .cnames import ENTRY_NAMESPACE, CxxCode, Names, c_text
from .dtypes import DType
from .errors import InternalCompilerError, UnsupportedError
from .ir import (
    AscOp,
    AtomicOp,
    BufferKind,
    CopyForm,
    CopyGmToL1,
    CopyGmToUb,
    CopyMxScalesGmToL1,
    CopyUbToGm,
    CopyUbToPeerL1,
    Core,
    CrossCoreSetOp,
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
    Launch,
    LoadData2D,
    LoadData2DMx,
    LoadData2DV2,
    Loop,
    LoopKind,
    Mmad,
    MmadMx,
    PipeBarrier,
    Print,
    Program,
    QuantMode,
    Rounding,
    ScalarConv,
    ScalarExpr,
    ScalarLit,
    ScalarNeg,
    ScalarStore,
    Scope,
    SetFlag,
    SimtArg,
    SimtArgKind,
    SimtCall,
    UnitFlagLast,
    UnitFlagReset,
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
    VecFusedMulAddBcast,
    VecGather,
    VecIndex,
    VecMaskLogic,
    VecMulAddDstBcast,
    VecScalar,
    VecScalarOp,
    VecScanRows,
    VecSelect,
    VecTranspose,
    VecUnary,
    VecUnaryOp,
    VecWholeReduce,
    WaitFlag,
    static_int,
    walk,
)
from .threads import ATOMIC_OPS

# The TPosition each memory is declared with.
POSITION = {Scope.UB: "VECCALC", Scope.L1: "A1", Scope.L0A: "A2", Scope.L0B: "B2", Scope.L0C: "CO1"}
QUANT = {QuantMode.NONE: "QuantMode_t::NoQuant", QuantMode.F32_TO_F16: "QuantMode_t::F322F16",
         QuantMode.F32_TO_BF16: "QuantMode_t::F322BF16", QuantMode.F32_TO_S8: "QuantMode_t::QF322B8_PRE",
         QuantMode.F32_TO_FP8: "QuantMode_t::QF322FP8_PRE", QuantMode.S32_TO_F16: "QuantMode_t::DEQF16",
         QuantMode.S32_TO_BF16: "QuantMode_t::QS322BF16_PRE", QuantMode.S32_TO_S8: "QuantMode_t::REQ8",
         QuantMode.F32_TO_F16_SCALED: "QuantMode_t::QF322F16_PRE",
         QuantMode.F32_TO_BF16_SCALED: "QuantMode_t::QF322BF16_PRE"}
# Quant word of scale 1.0 (随路量化 page: the scale as a float in bits [31:13]; bit 46 selects a
# signed int8 result).
QUANT_ONE = 0x3F800000
QUANT_SIGNED = 1 << 46
ROUND = {Rounding.NONE: "RoundMode::CAST_NONE", Rounding.RINT: "RoundMode::CAST_RINT",
         Rounding.TRUNC: "RoundMode::CAST_TRUNC", Rounding.FLOOR: "RoundMode::CAST_FLOOR",
         Rounding.CEIL: "RoundMode::CAST_CEIL", Rounding.ROUND: "RoundMode::CAST_ROUND",
         Rounding.ODD: "RoundMode::CAST_ODD"}
VEC_BINARY = {VecBinary.ADD: "Add", VecBinary.SUB: "Sub", VecBinary.MUL: "Mul", VecBinary.DIV: "Div",
              VecBinary.MAX: "Max", VecBinary.MIN: "Min"}
VEC_UNARY = {VecUnary.EXP: "Exp", VecUnary.LN: "Ln", VecUnary.ABS: "Abs", VecUnary.SQRT: "Sqrt",
             VecUnary.RSQRT: "Rsqrt", VecUnary.RECIPROCAL: "Reciprocal"}
VEC_SCALAR = {VecScalarOp.ADDS: "Adds", VecScalarOp.MULS: "Muls", VecScalarOp.MAXS: "Maxs",
              VecScalarOp.MINS: "Mins"}


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    from ascend_backend import templates

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(os.path.dirname(templates.__file__)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        finalize=_template_value,
    )
    env.filters["code"] = CxxCode  # a macro's output printed by another macro: C++ already
    return env


def _template_value(value):
    """Every value a template prints: text goes through c_text (user text reaches the comments: the
    file name, buffer names, the sync reasons), except C++ codegen built itself (CxxCode: a kernel
    body, a macro's output marked ``| code``)."""
    if isinstance(value, CxxCode) or not isinstance(value, str):
        return value
    return c_text(value)


@functools.lru_cache(maxsize=1)
def _ops():
    return _env().get_template("ops.j2").module


def _render(macro: str, params) -> str:
    fn = getattr(_ops(), macro, None)
    if fn is None:
        raise InternalCompilerError(f"no template macro '{macro}'", stage="codegen")
    return str(fn(params))


# ---------------------------------------------------------------- values as C++ text


# The C++ names of the kernel entry being generated (cnames.Names) and the buffer names of its
# launch; None outside generate().
_NAMES: contextvars.ContextVar = contextvars.ContextVar("codegen_names", default=None)
_BUFFERS: contextvars.ContextVar = contextvars.ContextVar("codegen_buffers", default=None)


def B(name: str) -> str:
    """The C++ name of buffer ``name`` in the kernel entry being generated."""
    names = _NAMES.get()
    return names.buffer(name) if names is not None else name


def gm_tensor(name: str) -> str:
    """The GlobalTensor variable of GM buffer ``name`` (its DSL name)."""
    return f"{B(name)}_gm"


def _at(name: str, off: str) -> str:
    return name if off in ("0", "") else f"{name}[{off}]"


def _factors(e) -> list:
    """The factors of a product (a stride of a symbolic shape is a product of dimensions)."""
    if isinstance(e, tirx.Mul):
        return _factors(e.a) + _factors(e.b)
    return [e]


def wide_product(head: str, stride) -> str:
    """``head * stride`` computed in 64 bits: the head and every factor of the stride cast first, so
    that no partial product is formed in 32 bits."""
    out = f"(int64_t)({head})"
    if static_int(stride) == 1:
        return out
    for f in _factors(stride):
        v = static_int(f)
        out += f" * {v}" if v is not None else f" * (int64_t)({cexpr(f)})"
    return out


def window_offset(w: GmWindow) -> str:
    """The element offset of a GM window: sum of start index x stride over its dimensions; in 64
    bits when the tensor may hold 2**31 or more elements (``w.wide``)."""
    terms = []
    for b, stride in zip(w.base, w.strides, strict=True):
        txt = cexpr(b)
        if txt == "0":
            continue
        if w.wide:
            terms.append(wide_product(txt, stride))
        else:
            terms.append(txt if static_int(stride) == 1 else f"{txt} * {cexpr(stride)}")
    return " + ".join(terms) if terms else "0"


def valid(v: Valid) -> str:
    """A valid extent: its static size, or min(n, size - base) at a tail of the global shape; with a
    symbolic size or a window that may start past the end, clamp(size - base, 0, n) in 64 bits."""
    if not v.tail:
        return str(v.n)
    if v.clamp or static_int(v.size) is None:
        return f"tail_i({v.n}, {cexpr(v.size)}, {cexpr(v.base)})"
    return f"min_i({v.n}, {v.size} - ({cexpr(v.base)}))"


def valid_k(v: Valid) -> str:
    """A gemm K extent (parenthesized when it is a runtime tail)."""
    return str(v.n) if not v.tail else f"({valid(v)})"


def scalar(v) -> str:
    """A scalar operand of a vector op."""
    if isinstance(v, ScalarLit):
        if v.dtype == DType.FLOAT32:
            return float_literal(v.value)
        if v.dtype.is_int:
            return str(int(v.value))
        return f"({v.dtype.ctype})({float_literal(v.value)})"
    if isinstance(v, ScalarExpr):
        return f"({v.dtype.ctype})({cexpr(v.expr)})"
    if isinstance(v, ScalarConv):
        return f"({v.dtype.ctype})({scalar(v.inner)})"
    if isinstance(v, ScalarNeg):
        return f"-({scalar(v.inner)})"
    raise InternalCompilerError(f"cannot render scalar {v!r}", stage="codegen")


def local_ctype(b) -> str:
    return b.dtype.ctype


def _flat(b, indices) -> str:
    """The element offset of ``indices`` in buffer ``b`` (UB rows are ``pitch`` apart; a GM tensor
    that may hold 2**31 or more elements is addressed in 64 bits)."""
    shape = list(b.shape)
    if b.scope is Scope.UB and len(shape) == 2 and b.pitch:
        shape[-1] = b.pitch
    if len(indices) != len(shape):
        raise UnsupportedError(f"'{b.name}' is indexed with {len(indices)} indices but has {len(shape)} dimensions")
    wide = b.scope is Scope.GM and b.wide
    terms = []
    stride = 1
    for i, n in reversed(list(zip(indices, shape, strict=True))):
        txt = cexpr(i)
        if txt != "0":
            if wide:
                terms.append(wide_product(txt, stride))
            else:
                terms.append(txt if static_int(stride) == 1 else f"({txt}) * {cexpr(stride)}")
        stride = _mul(stride, n)
    return " + ".join(reversed(terms)) if terms else "0"


def _add(a: int, b):
    """a + b: an int when b is a constant, else a PrimExpr."""
    return a + static_int(b) if static_int(b) is not None else (b + a if a else b)


def _mul(a, b):
    """a * b: an int when both are constants, else a PrimExpr."""
    x, y = static_int(a), static_int(b)
    if x is not None and y is not None:
        return x * y
    return (x if x is not None else a) * (y if y is not None else b)


def scalar_access(kernel: Kernel, tvm_buffer, indices) -> tuple:
    """(buffer, C++ lvalue-ish text) of one element read or written by the scalar unit."""
    b = kernel.buffer_of(tvm_buffer)
    flat = _flat(b, indices)
    if b.scope is Scope.LOCAL:
        return b, f"{B(b.name)}[{flat}]"
    if b.scope is Scope.UB:
        return b, f"{B(b.name)}.GetValue({flat})"
    if b.scope is Scope.GM:
        return b, f"{gm_tensor(b.name)}.GetValue({flat})"
    raise UnsupportedError(f"the scalar unit cannot read '{b.name}' in {b.scope}; only scalar locals, vector tiles "
                           "(UB) and global tensors", hint="copy the values into a T.alloc_fragment tile first")


def _store(kernel: Kernel, s: ScalarStore) -> str:
    b = kernel.buffers[s.buffer]
    flat = _flat(b, s.indices)
    value = cexpr(s.value)
    if b.scope is Scope.LOCAL:
        return f"{B(b.name)}[{flat}] = {value};"
    if b.scope is Scope.UB:
        return f"{B(b.name)}.SetValue({flat}, ({b.dtype.ctype})({value}));"
    if b.scope is Scope.GM:
        return f"{gm_tensor(b.name)}.SetValue({flat}, ({b.dtype.ctype})({value}));"
    raise UnsupportedError(f"the scalar unit cannot write '{b.name}' in {b.scope}", loc=s.loc,
                           hint="write element-wise code inside `for i, j in T.Parallel(...)`")


# ---------------------------------------------------------------- one function per op kind


def _gm_ub(op: CopyGmToUb | CopyUbToGm, to_ub: bool) -> dict:
    w = op.window
    esz = op.dtype.bytes
    gm = _at(f"{op.gm}_gm", window_offset(w))
    p = {"dst": op.ub if to_ub else gm, "src": gm if to_ub else op.ub, "ctype": op.dtype.ctype,
         "form": op.form.value}
    if op.form is CopyForm.COUNT:
        p["count"] = f"{valid(w.valid_rows)} * {w.cols}" if w.valid_rows.tail else str(w.rows * w.cols)
    else:
        vc = valid(w.valid_cols)
        gm_gap = f"({cexpr(w.row_stride)} - ({vc})) * {esz}"
        ub_gap = f"({op.ub_pitch * esz} - (({vc}) * {esz} + 31) / 32 * 32) / 32"
        p.update(block_count=valid(w.valid_rows), block_len=f"({vc}) * {esz}",
                 src_stride=gm_gap if to_ub else ub_gap, dst_stride=ub_gap if to_ub else gm_gap)
    return p


ATOMIC = {AtomicOp.ADD: "SetAtomicAdd", AtomicOp.MAX: "SetAtomicMax", AtomicOp.MIN: "SetAtomicMin"}


def _copy_ub_to_gm(op: CopyUbToGm) -> dict:
    p = _gm_ub(op, False)
    # A DMA-atomic store: the copy adds (max, min) into GM; the mode is set around it on the scalar
    # unit, whose order with the copy the hardware keeps for the atomic-mode calls.
    p["atomic"] = f"{ATOMIC[op.atomic]}<{op.dtype.ctype}>" if op.atomic is not None else None
    return p


def _copy_gm_to_l1(op: CopyGmToL1) -> dict:
    w = op.window
    # Row r of an NZ tile starts r C0-blocks (32 bytes each) into its first column block.
    row0 = cexpr(op.row0)
    dst = op.l1 if row0 == "0" else _at(op.l1, f"({row0}) * {32 // op.dtype.bytes}")
    return {"dst": dst, "src": _at(f"{op.gm}_gm", window_offset(w)), "n_value": valid(w.valid_rows),
            "d_value": valid(w.valid_cols), "src_d_value": cexpr(w.row_stride), "dst_c0_stride": str(op.l1_rows)}


def _copy_mx_scales(op: CopyMxScalesGmToL1) -> dict:
    w = op.window
    # The [rows, K/32] E8M0 window read as [rows, K/64] 16-bit pairs, as a DN matrix (row d =
    # tile row, n = pair): Dn2Nz writes the transpose's NZ, 16 rows of one pair per 32 bytes,
    # a row fractal's pairs consecutive (dstNzC0Stride = the tile's pairs, dstNzNStride = 1).
    return {"dst": op.l1, "src": _at(f"{op.gm}_gm", window_offset(w)), "n_value": f"({valid(w.valid_cols)}) / 2",
            "d_value": valid(w.valid_rows), "src_d_value": f"({cexpr(w.row_stride)}) / 2", "c0_stride": op.l1_pairs}


def _load_data_2d_mx(op: LoadData2DMx) -> dict:
    return {**_load_data_2d_v2(op), "scales": op.scales, "x_step": op.x_step, "y_start": cexpr(op.y_start),
            "y_step": op.y_step, "scale_stride": op.scale_stride}


def _load_data_2d(op: LoadData2D) -> dict:
    kv = valid_k(op.k)
    src = _at(op.src, cexpr(op.src_offset))
    fr = 16 * op.c0  # elements per fractal
    if op.operand == "A":
        # one fractal row of A per call: ZZ in L0A
        return {"dst": op.dst, "src": src, "count": str(op.mn // 16), "dst_step": f"{kv} * 16",
                "src_step": f"{op.src_rows // 16} * {fr}" if op.trans else str(fr),
                "repeat": f"(uint8_t)({kv} / {op.c0})", "src_stride": "1" if op.trans else str(op.src_rows // 16),
                "trans": "true" if op.trans else "false",
                "note": "A stored K x M: transpose each fractal into ZZ" if op.trans else
                "one fractal row of A per call: ZZ in L0A"}
    # one C0-column block of B stored N x K per call: the next one is the stored tile's rows on
    # (a window of N rows keeps the tile's stride)
    return {"dst": op.dst, "src": src, "count": f"{kv} / {op.c0}", "dst_step": str(op.mn * op.c0),
            "src_step": f"{op.src_rows // 16} * {fr}" if op.trans else str(fr), "repeat": str(op.mn // 16),
            "src_stride": "1" if op.trans else str(op.src_rows // 16), "trans": "false" if op.trans else "true",
            "note": "B stored N x K: its NZ fractals are already ZN" if op.trans else
            "one fractal row of B per call, each fractal transposed: ZN in L0B"}


def _steps(x) -> str:
    return f"{valid_k(x.k)} / {x.unit}" if isinstance(x, KFractals) else str(x)


def _load_data_2d_v2(op: LoadData2DV2) -> dict:
    return {"dst": op.dst, "src": _at(op.src, cexpr(op.src_offset)), "m_step": _steps(op.m_step),
            "k_step": _steps(op.k_step), "src_stride": op.src_stride, "dst_stride": op.dst_stride,
            "trans": "true" if op.trans else "false", "note": op.note}


def _mmad(op: Mmad) -> dict:
    if isinstance(op.init, FirstIteration):
        init = " && ".join(f"({cname(v)} == {cexpr(s)})" for v, s in op.init.firsts())
    elif isinstance(op.init, InitFlag):
        init = f"({B(op.init.flag)}[0] != 0)"
    else:
        init = "true" if op.init else "false"
    return {"dst": op.dst, "a": op.a, "b": op.b, "m": op.m, "n": op.n, "k": valid_k(op.k), "init": init,
            "call": "MmadMx" if isinstance(op, MmadMx) else "Mmad", **_unit_flag(op)}


def _unit_flag(op) -> dict:
    """The unitFlag line of an Mmad or a Fixpipe (passes/unit_flag.py): its value and its reason."""
    uf = op.unit_flag
    if uf is None:
        return {"unit_flag": None}
    if isinstance(uf.value, UnitFlagLast):
        value = f"({cname(uf.value.var)} == {cexpr(uf.value.last)}) ? 3 : 2"
    else:
        value = str(uf.value)
    if uf.when is not None:
        value = f"({cexpr(uf.when)}) ? {value} : 0"
    return {"unit_flag": value, "unit_flag_reason": uf.reason}


def _fixpipe_to_gm(op) -> dict:
    w = op.window
    return {"dst": _at(f"{op.gm}_gm", window_offset(w)), "src": op.src, "ctype": op.dtype.ctype,
            "m_size": valid(w.valid_rows), "n_size": valid(w.valid_cols), "src_stride": str(op.src_stride),
            "dst_stride": cexpr(w.row_stride), "quant": QUANT[op.quant], "relu": "true" if op.relu else "false",
            "src_ctype": op.src_dtype.ctype,
            "deq": (f"{QUANT_ONE | (QUANT_SIGNED if op.dtype == DType.INT8 else 0):#x}ULL"
                    if op.quant.scaled and op.scale is None else None),
            "scale": cexpr(op.scale) if op.scale is not None else None,
            "atomic": f"{ATOMIC[op.atomic]}<{op.dtype.ctype}>" if op.atomic is not None else None,
            **_unit_flag(op)}


def _peer_slot(op) -> str:
    """The element offset of the slot a peer-memory write goes to ('' when the target does not rotate)."""
    if op.slots <= 1:
        return ""
    return f"(({cexpr(op.step)}) % {op.slots}) * {op.slot_elems}"


def _fixpipe_to_peer_ub(op: FixpipeToPeerUb) -> dict:
    slot = _peer_slot(op)
    return {"src": op.src, "dst": f"{op.target}_peer" + (f"[{slot}]" if slot else ""), "half": op.half,
            "rows": op.rows, "cols": op.cols, "pitch": op.pitch, "sub": op.sub, "ctype": op.dtype.ctype,
            **_unit_flag(op)}


def _fixpipe_to_peer_ub_dual(op: FixpipeToPeerUbDual) -> dict:
    slot = _peer_slot(op)
    return {"src": op.src, "dst": f"{op.target}_peer" + (f"[{slot}]" if slot else ""), "rows": op.rows,
            "cols": op.cols, "pitch": op.pitch, "ctype": op.dtype.ctype, **_unit_flag(op)}


def _copy_ub_to_peer_l1(op: CopyUbToPeerL1) -> dict:
    slot = _peer_slot(op)
    src = op.src if static_int(op.src_row0) == 0 else f"{op.src}[({cexpr(op.src_row0)}) * {op.src_pitch}]"
    return {"dst": f"{op.target}_l1_peer", "src": src,
            "offset": f"{cexpr(op.sub_var)} * {op.src_rows * op.c0}" + (f" + {slot}" if slot else ""),
            "n_value": op.src_rows, "d_value": op.src_cols, "src_d_value": op.src_pitch,
            "dst_c0_stride": op.dst_c0_stride, "rows": op.rows}


def _cross_core(op: CrossCoreSetOp | CrossCoreWaitOp) -> dict:
    return {"mode": op.mode, "pipe": op.pipe.value, "hw_id": op.hw_id, "reason": op.reason}


def _as(name: str, dt) -> str:
    """A UB tensor seen as elements of ``dt`` (LocalTensor::ReinterpretCast), or itself."""
    return f"{name}.ReinterpretCast<{dt.ctype}>()" if dt is not None else name


def _select(op: VecSelect) -> dict:
    return {"dst": _as(op.dst, op.as_dtype), "mask": op.mask, "src0": _as(op.src0, op.as_dtype),
            "src1": _as(op.src1, op.as_dtype) if op.src1 is not None else None,
            "scalar": scalar(op.scalar) if op.scalar is not None else None, "ctype": op.dtype.ctype,
            "count": op.count}


def _scan_rows(op: VecScanRows) -> dict:
    first = op.rows - 1 if op.reverse else 0
    return {"op": VEC_BINARY[op.op], "dst": op.dst, "src": op.src, "rows": op.rows, "cols": op.cols,
            "pitch": op.pitch, "reverse": op.reverse, "barrier": op.barrier, "first": first,
            "copy_first": op.dst != op.src}


def _repeat(o) -> dict:
    return {"name": o.buffer, "row": o.row, "chunk": o.chunk, "blk": o.blk, "rep": o.rep}


_PARAMS: dict[type, Callable[[AscOp], dict]] = {
    SimtCall: lambda op: _simt_call(op),
    CopyGmToUb: lambda op: _gm_ub(op, True),
    CopyUbToGm: _copy_ub_to_gm,
    CopyGmToL1: _copy_gm_to_l1,
    CopyMxScalesGmToL1: _copy_mx_scales,
    FillL1: lambda op: {"dst": op.dst, "blocks": op.nbytes // 32},
    LoadData2D: _load_data_2d,
    LoadData2DV2: _load_data_2d_v2,
    LoadData2DMx: _load_data_2d_mx,
    Mmad: _mmad,
    MmadMx: _mmad,
    FixpipeToGmV220: _fixpipe_to_gm,
    FixpipeToGmArch3510: _fixpipe_to_gm,
    FixpipeToPeerUb: _fixpipe_to_peer_ub,
    FixpipeToPeerUbDual: _fixpipe_to_peer_ub_dual,
    CopyUbToPeerL1: _copy_ub_to_peer_l1,
    UnitFlagReset: lambda op: {"acc": op.acc, "reason": op.reason},
    VecCopy: lambda op: {"dst": _at(op.dst, cexpr(op.dst_offset)), "src": _at(op.src, cexpr(op.src_offset)),
                         "count": op.count},
    VecDuplicate: lambda op: {"dst": _as(op.dst, op.as_dtype), "value": scalar(op.value), "count": op.count,
                              "ctype": op.as_dtype.ctype if op.as_dtype is not None else None},
    VecScalar: lambda op: {"op": VEC_SCALAR[op.op], "dst": op.dst, "src": op.src, "scalar": scalar(op.scalar),
                           "count": op.count},
    VecUnaryOp: lambda op: {"op": VEC_UNARY[op.op], "dst": op.dst, "src": op.src, "count": op.count},
    VecBinaryOp: lambda op: {"op": VEC_BINARY[op.op], "dst": op.dst, "src0": op.src0, "src1": op.src1,
                             "count": op.count},
    # bool tiles hold one byte per element: the Cast reads / writes them as uint8; an int4 source
    # is a packed 1-byte tile read as int4b_t (two values per byte)
    VecCast: lambda op: {"dst": _as(op.dst, DType.UINT8 if op.dst_dtype is DType.BOOL else None),
                         "src": _as(op.src, {DType.BOOL: DType.UINT8, DType.INT4: DType.INT4}.get(op.src_dtype)),
                         "mode": ROUND[op.mode], "count": op.count},
    VecBrcb: lambda op: {"dst": op.dst, "src": op.src, "repeat": op.repeat},
    VecGather: lambda op: {"dst": op.dst, "src": op.src, "offsets": op.offsets, "rows": op.rows, "cols": op.cols,
                           "pitch": op.pitch, "dense": op.rows == 1 or op.pitch == op.cols},
    VecTranspose: lambda op: {"dst": op.dst, "src": op.src, "tmp": op.tmp, "rows": op.rows, "cols": op.cols},
    VecBinaryBcast: lambda op: {"op": VEC_BINARY[op.op], "dst": op.dst, "s0": _repeat(op.s0), "s1": _repeat(op.s1),
                                "rows": op.rows, "cols": op.cols, "lanes": op.lanes, "dst_rep": op.dst_rep,
                                "chunks": op.chunks},
    VecFusedMulAddBcast: lambda op: {"op": "FusedMulAdd", "dst": op.dst, "s0": _repeat(op.s0), "s1": _repeat(op.s1),
                                     "rows": op.rows, "cols": op.cols, "lanes": op.lanes, "dst_rep": op.dst_rep,
                                     "chunks": op.chunks},
    VecMulAddDstBcast: lambda op: {"op": "MulAddDst", "dst": op.dst, "s0": _repeat(op.s0), "s1": _repeat(op.s1),
                                   "rows": op.rows, "cols": op.cols, "lanes": op.lanes, "dst_rep": op.dst_rep,
                                   "chunks": op.chunks},
    VecBinaryBcastRows: lambda op: {"op": VEC_BINARY[op.op], "dst": op.dst, "s0": _repeat(op.s0),
                                    "s1": _repeat(op.s1), "rows": op.rows, "lanes": op.lanes, "dst_row": op.dst_row,
                                    "full": op.cols // op.lanes, "tail": op.cols % op.lanes},
    VecWholeReduce: lambda op: {"kind": op.kind.value, "dst": op.dst, "src": op.src, "mask": op.mask,
                                "repeat": op.repeat, "src_rep": op.src_rep},
    VecFoldInit: lambda op: {"dst": op.dst, "src": op.src, "lanes": op.lanes, "repeat": op.repeat,
                             "src_rep": op.src_rep, "zero": scalar(op.zero)},
    VecFold: lambda op: {"op": VEC_BINARY[op.op], "dst": op.dst, "src": op.src, "offset": op.offset,
                         "mask": op.mask, "repeat": op.repeat, "src_rep": op.src_rep, "dst_rep": op.dst_rep},
    VecFoldLoop: lambda op: {"op": VEC_BINARY[op.op], "dst": op.dst, "src": op.src, "lanes": op.lanes,
                             "repeat": op.repeat, "src_rep": op.src_rep, "chunks": op.chunks,
                             "valid": valid(op.valid), "barrier": op.barrier},
    VecDiagFill: lambda op: {"dst": op.dst, "rows": op.rows, "cols": op.cols, "pitch": op.pitch,
                             "prefix": f"({cexpr(op.prefix.c0)}) + 1" if op.prefix.plus_one
                             else f"-({cexpr(op.prefix.c0)})",
                             "first": scalar(op.first), "rest": scalar(op.rest), "barrier": op.barrier},
    VecIndex: lambda op: {"dst": op.dst, "first": scalar(op.first), "ctype": op.dtype.ctype, "count": op.count},
    VecCompare: lambda op: {"dst": op.dst, "src0": op.src0, "src1": op.src1, "mode": op.mode.value,
                            "scalar": scalar(op.scalar) if op.scalar is not None else None,
                            "ctype": op.dtype.ctype, "count": op.count},
    VecMaskLogic: lambda op: {"op": op.op.value, "dst": op.dst, "src0": op.src0, "src1": op.src1, "count": op.count},
    VecSelect: _select,
    VecFoldRows: lambda op: {"op": VEC_BINARY[op.op], "dst": op.dst, "src": op.src, "lanes": op.lanes,
                             "rows": op.rows, "pitch": op.pitch, "chunks": op.chunks, "tail": op.tail,
                             "barrier": op.barrier},
    VecScanRows: _scan_rows,
    CrossCoreSetOp: _cross_core,
    CrossCoreWaitOp: _cross_core,
}


def render_op(op: AscOp) -> str:
    fn = _PARAMS.get(type(op))
    if fn is None:
        raise InternalCompilerError(f"no codegen rule for op {type(op).__name__}", stage="codegen")
    return _render(op.macro, fn(_named(op)))


def _named(x):
    """``x`` with every field that names a buffer of the launch replaced by its C++ name (nested
    operands too): the rules in _PARAMS then print fields as they are, whatever names the user chose."""
    known = _BUFFERS.get()
    if known is None or not dataclasses.is_dataclass(x):
        return x
    changes = {}
    for f in dataclasses.fields(x):
        v = getattr(x, f.name)
        if isinstance(v, enum.Enum):  # DType, ReduceKind, ... are str enums, never buffer names
            continue
        if isinstance(v, str) and v in known:
            changes[f.name] = B(v)
        elif isinstance(v, tuple) and v and all(isinstance(e, str) for e in v):
            if any(e in known for e in v):
                changes[f.name] = tuple(B(e) if e in known else e for e in v)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type) and not isinstance(v, GmWindow | Valid):
            nv = _named(v)
            if nv is not v:
                changes[f.name] = nv
    return dataclasses.replace(x, **changes) if changes else x


def _sync(s) -> str:
    if isinstance(s, PipeBarrier):
        return _render("pipe_barrier", {"pipe": s.pipe.value, "reason": s.reason})
    phase = s.phase.value
    return _render("set_flag" if isinstance(s, SetFlag) else "wait_flag",
                   {"event": str(s.event), "event_id": _event_id(s.event_id), "reason": s.reason, "phase": phase})


def _event_id(e) -> str:
    if e.slot_var is None:
        return str(e.base)
    idx = f"{cname(e.slot_var)} % {e.slots}"
    return f"{e.base} + {idx}" if e.base else idx


# ---------------------------------------------------------------- SIMT functions (dav-3510)
#
# A SimtCall is one ``__simt_vf__`` function and its ``asc_vf_call`` (SIMT-API 扩展语法); its body
# is TIR, printed here statement by statement with every thread-level call spelled as the SIMT API
# spells it (docs/supported.md, "Thread-level code").

_SIMT_SHFL = {"tl.shfl_sync": "asc_shfl", "tl.shfl_xor_sync": "asc_shfl_xor", "tl.shfl_up_sync": "asc_shfl_up",
              "tl.shfl_down_sync": "asc_shfl_down"}
_SIMT_REDUCE = {"tl.warp_reduce_sum": "asc_reduce_add", "tl.warp_reduce_max": "asc_reduce_max",
                "tl.warp_reduce_min": "asc_reduce_min"}
_SIMT_MATH = {"exp": "expf", "exp2": "exp2f", "exp10": "exp10f", "log": "logf", "log2": "log2f", "log10": "log10f",
              "sqrt": "sqrtf", "rsqrt": "rsqrtf", "fabs": "fabsf", "abs": "fabsf", "tanh": "tanhf", "floor": "floorf",
              "ceil": "ceilf", "round": "roundf", "nearbyint": "roundf", "pow": "powf", "trunc": "truncf"}
_SIMT_BITCAST = {("float32", "int32"): "__float_as_int", ("float32", "uint32"): "__float_as_uint",
                 ("int32", "float32"): "__int_as_float", ("uint32", "float32"): "__uint_as_float",
                 ("uint16", "float16"): "__ushort_as_half", ("uint16", "bfloat16"): "__ushort_as_bfloat16"}
_SIMT_BINARY = {tirx.Add: "+", tirx.Sub: "-", tirx.Mul: "*", tirx.Div: "/", tirx.Mod: "%", tirx.FloorDiv: "/",
                tirx.FloorMod: "%", tirx.LT: "<", tirx.LE: "<=", tirx.GT: ">", tirx.GE: ">=", tirx.EQ: "==",
                tirx.NE: "!=", tirx.And: "&&", tirx.Or: "||"}
_SIMT_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "shift_left": "<<", "shift_right": ">>"}


def _ct(dt: str) -> str:
    from .dtypes import dtype as to_dtype

    return "bool" if dt == "bool" else to_dtype(dt).ctype


class _SimtPrinter:
    """Prints the TIR body of one SIMT function."""

    def __init__(self, op: SimtCall, kernel: Kernel) -> None:
        self.op = op
        self.kernel = kernel
        self.bufs = {b.name: b for b in op.locals}
        self.own = {b.name for b in op.locals}  # per-thread locals (C arrays of each thread)
        for a in op.args:
            if a.buffer is not None:
                self.bufs[a.buffer] = kernel.buffers[a.buffer]
        self.helpers: set = set()  # __simt_callee__ helpers the body calls (match_any per ctype)
        x, y, _ = op.threads
        self.tid = f"((int32_t)threadIdx.x + (int32_t)threadIdx.y * {x} + (int32_t)threadIdx.z * {x * y})"

    # -- statements
    def stmts(self, s, ind: int, out: list) -> None:
        pad = "    " * ind
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                self.stmts(x, ind, out)
        elif isinstance(s, tirx.For):
            v = cname(s.loop_var)
            lo, n = self.expr(s.min), self.expr(s.extent)
            kinds = {tirx.ForKind.UNROLLED: "  // T.unroll", tirx.ForKind.VECTORIZED: "  // T.vectorized"}
            kind = kinds.get(s.kind, "")
            head = f"for (int32_t {v} = {lo}; {v} < {lo} + {n}; ++{v}) {{" if lo != "0" else \
                f"for (int32_t {v} = 0; {v} < {n}; ++{v}) {{"
            out.append(f"{pad}{head}{kind}")
            self.stmts(s.body, ind + 1, out)
            out.append(f"{pad}}}")
        elif isinstance(s, tirx.While):
            out.append(f"{pad}while ({self.expr(s.condition)}) {{")
            self.stmts(s.body, ind + 1, out)
            out.append(f"{pad}}}")
        elif isinstance(s, tirx.IfThenElse):
            out.append(f"{pad}if ({self.expr(s.condition)}) {{")
            self.stmts(s.then_case, ind + 1, out)
            if s.else_case is not None:
                out.append(f"{pad}}} else {{")
                self.stmts(s.else_case, ind + 1, out)
            out.append(f"{pad}}}")
        elif isinstance(s, tirx.SBlockRealize):
            self.stmts(s.block, ind, out)
        elif isinstance(s, tirx.SBlock):
            for b in s.alloc_buffers:
                n = 1
                for d in b.shape:
                    n *= int(d)
                out.append(f"{pad}{_ct(str(b.dtype))} {cname_buf(b.name)}[{n}];")
            self.stmts(s.body, ind, out)
        elif isinstance(s, tirx.AttrStmt):
            self.stmts(s.body, ind, out)
        elif isinstance(s, tirx.Bind):
            out.append(f"{pad}{_ct(str(s.var.dtype))} {cname(s.var)} = {self.expr(s.value)};")
        elif isinstance(s, tirx.BufferStore):
            ct = _ct(str(s.buffer.dtype))
            out.append(f"{pad}{self.access(s.buffer, s.indices)} = ({ct})({self.expr(s.value)});")
        elif isinstance(s, tirx.Evaluate):
            line = self.evaluate(s.value)
            if line:
                out.append(f"{pad}{line}")
        else:
            raise InternalCompilerError(f"SIMT body: cannot print {type(s).__name__}", stage="codegen")

    def evaluate(self, e) -> str:
        if isinstance(e, tirx.IntImm):
            return ""
        name = _simt_op(e)
        if name in ("tirx.tvm_storage_sync", "tl.sync_threads"):
            return "asc_syncthreads();  // T.sync_threads"
        if name == "tl.sync_warp":
            return "// T.sync_warp: the threads of a warp run in lockstep (SIMT 编程模型, Warp执行机制)"
        if name == "tirx.thread_return":
            return "return;  // T.thread_return"
        if name == "tirx.break_loop":
            return "break;"
        if name in ("tirx.ptx_wait_group", "tirx.ptx_commit_group"):
            return "// T.ptx_wait_group: the copies above were ordered stores already"
        return f"{self.expr(e)};"

    # -- addresses
    def access(self, buf, indices) -> str:
        b = self.bufs.get(buf.name)
        shape = list(b.shape) if b is not None else [int(x) for x in buf.shape]
        if b is not None and b.scope is Scope.UB and len(shape) == 2 and b.pitch:
            shape[-1] = b.pitch
        terms, stride = [], 1
        for i, n in reversed(list(zip(indices, shape, strict=True))):
            txt = self.expr(i)
            if txt != "0":
                terms.append(txt if stride == 1 else f"({txt}) * {self.expr(stride)}")
            stride = _mul(stride, n)
        flat = " + ".join(reversed(terms)) if terms else "0"
        name = cname_buf(buf.name) if buf.name in self.own or b is None else B(buf.name)
        return f"{name}[{flat}]"

    # -- expressions
    def expr(self, e) -> str:
        if isinstance(e, int):
            return str(e)
        if isinstance(e, tirx.IntImm):
            dt = str(e.dtype)
            if dt == "bool":
                return "true" if e.value else "false"
            v = int(e.value)
            if dt.startswith("uint"):
                return f"(({_ct(dt)}){v}u)" if dt != "uint32" else f"{v}u"
            if dt == "int64":
                return f"((int64_t){v})"
            return str(v) if dt == "int32" else f"(({_ct(dt)}){v})"
        if isinstance(e, tirx.FloatImm):
            lit = float_literal(float(e.value))
            return lit if str(e.dtype) == "float32" else f"(({_ct(str(e.dtype))}){lit})"
        if isinstance(e, tirx.Var):
            return cname(e)
        for cls, sym in _SIMT_BINARY.items():
            if isinstance(e, cls):
                return f"({self.expr(e.a)} {sym} {self.expr(e.b)})"
        if isinstance(e, tirx.Min | tirx.Max):
            a, b = self.expr(e.a), self.expr(e.b)
            return f"(({a}) < ({b}) ? ({a}) : ({b}))" if isinstance(e, tirx.Min) else f"(({a}) > ({b}) ? ({a}) : ({b}))"
        if isinstance(e, tirx.Not):
            return f"(!{self.expr(e.a)})"
        if isinstance(e, tirx.Cast):
            return f"(({_ct(str(e.dtype))})({self.expr(e.value)}))"
        if isinstance(e, tirx.Select):
            return f"({self.expr(e.condition)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"
        if isinstance(e, tirx.BufferLoad):
            return self.access(e.buffer, e.indices)
        if isinstance(e, tirx.Call):
            return self.call(e)
        raise UnsupportedError(f"the expression '{e}' has no SIMT form here")

    def call(self, e) -> str:
        name = _simt_op(e)
        a = list(e.args)
        short = name.split(".")[-1]
        if name in _SIMT_SHFL:  # (mask, value, lane / delta, width)
            return f"{_SIMT_SHFL[name]}({self.expr(a[1])}, {self.expr(a[2])}, {self.expr(a[3])})"
        if name in _SIMT_REDUCE:
            return f"{_SIMT_REDUCE[name]}({self.expr(a[0])})"
        if name == "tl.get_lane_idx":
            return "laneid()"
        if name in ("tl.get_warp_idx", "tl.get_warp_idx_sync"):
            return f"({self.tid} / warpSize)"
        if name in ("tl.ballot", "tl.ballot_sync"):
            pred = a[-1]
            return f"((uint64_t)asc_ballot((int32_t)({self.expr(pred)})))"
        if name == "tl.any_sync":
            return f"asc_any((int32_t)({self.expr(a[0])}))"
        if name == "tl.all_sync":
            return f"asc_all((int32_t)({self.expr(a[0])}))"
        if name == "tl.activemask":
            return "asc_activemask()"
        if name in ATOMIC_OPS:
            kind = ATOMIC_OPS[name]
            ptr = a[0]
            load = ptr.args[0] if isinstance(ptr, tirx.Call) and _simt_op(ptr) == "tl.access_ptr" else ptr
            ct = _ct(str(load.buffer.dtype))
            addr = f"&{self.access(load.buffer, load.indices)}"
            if kind == "cas":
                return f"asc_atomic_cas({addr}, ({ct})({self.expr(a[1])}), ({ct})({self.expr(a[2])}))"
            return f"asc_atomic_{kind}({addr}, ({ct})({self.expr(a[1])}))"
        if name == "tirx.call_extern":
            fn = str(a[0]).strip('"')
            if fn == "__match_any_sync":
                ct = _ct(str(a[2].dtype))
                self.helpers.add(ct)
                return f"tl_match_any_{ct}({self.expr(a[2])})"
            return f"{fn}({', '.join(self.expr(x) for x in a[1:])})"
        if short == "if_then_else":
            return f"({self.expr(a[0])} ? {self.expr(a[1])} : {self.expr(a[2])})"
        if short == "reinterpret":
            pair = (str(a[0].dtype), str(e.dtype))
            if pair in _SIMT_BITCAST:
                return f"{_SIMT_BITCAST[pair]}({self.expr(a[0])})"
            # a 16-bit float's bits: the SIMT math pages have __ushort_as_half but no inverse; the bytes of a
            # register copy read back as the integer type
            return f"tl_bits<{_ct(pair[1])}>({self.expr(a[0])})"
        if short in _SIMT_BITWISE:
            return f"({self.expr(a[0])} {_SIMT_BITWISE[short]} {self.expr(a[1])})"
        if short == "bitwise_not":
            return f"(~{self.expr(a[0])})"
        if short == "isnan":
            return f"isnan({self.expr(a[0])})"
        if short == "infinity":
            return "INFINITY" if str(e.dtype) == "float32" else f"(({_ct(str(e.dtype))})INFINITY)"
        if short == "sigmoid":
            return f"(1.0f / (1.0f + expf(-({self.expr(a[0])}))))"
        if short in _SIMT_MATH:
            args = ", ".join(f"(float)({self.expr(x)})" for x in a)
            return f"(({_ct(str(e.dtype))}){_SIMT_MATH[short]}({args}))"
        raise UnsupportedError(f"the call '{name}' has no SIMT form")


def _simt_op(e) -> str:
    return str(e.op.name) if hasattr(e.op, "name") else str(e.op)


def cname_buf(name: str) -> str:
    """A per-thread local's C++ name inside its SIMT function (its DSL name, made an identifier)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) + "_r"


def _simt_arg_decl(a: SimtArg) -> str:
    if a.kind is SimtArgKind.GM:
        return f"__gm__ {a.dtype.ctype}* {B(a.buffer)}"
    if a.kind is SimtArgKind.UB:
        return f"__ubuf__ {a.dtype.ctype}* {B(a.buffer)}"
    return f"{a.dtype.ctype} {cname(a.var)}"


def _simt_arg_value(a: SimtArg) -> str:
    if a.kind is SimtArgKind.GM:
        return f"(__gm__ {a.dtype.ctype}*){gm_tensor(a.buffer)}.GetPhyAddr()"
    if a.kind is SimtArgKind.UB:
        return f"reinterpret_cast<__ubuf__ {a.dtype.ctype}*>({B(a.buffer)}.GetPhyAddr())"
    return f"({a.dtype.ctype})({cname(a.var)})"


def _simt_call(op: SimtCall) -> dict:
    x, y, z = op.threads
    return {"func": op.func, "dims": f"{x}, {y}, {z}", "args": [_simt_arg_value(a) for a in op.args],
            "what": op.text}


def simt_function(op: SimtCall, kernel: Kernel) -> tuple[str, set]:
    """The ``__simt_vf__`` definition of ``op`` and the match_any helpers it calls."""
    pr = _SimtPrinter(op, kernel)
    body: list = []
    used: set = set()
    for st in op.body:
        tirx.stmt_functor.post_order_visit(st, lambda n: used.add(n) if isinstance(n, tirx.Var) else None)
    for ax, v in zip("xyz", op.thread_vars, strict=True):
        if v is not None and v in used:
            body.append(f"    const int32_t {cname(v)} = (int32_t)threadIdx.{ax};")
    for b in op.locals:
        body.append(f"    {b.dtype.ctype} {cname_buf(b.name)}[{b.numel}];  // per-thread local {b.name}")
    for s in op.body:
        pr.stmts(s, 1, body)
    where = f" from {_short_loc(op.loc)}" if op.loc else ""
    text = _render("simt_function", {"name": op.func, "bound": op.nthreads,
                                     "params": [_simt_arg_decl(a) for a in op.args], "body": CxxCode("\n".join(body)),
                                     "what": f"{op.text}{where}"})
    return text, pr.helpers


# ---------------------------------------------------------------- bodies


def _short_loc(loc) -> str:
    """A DSL line as the comments give it: the file's base name (user text: escaped) and the line."""
    return f"{c_text(loc.file.rsplit('/', 1)[-1])}:{loc.line}"


def _body(items: list, indent: int, kernel: Kernel, out: list) -> None:
    for s in items:
        try:
            _item(s, indent, kernel, out)
        except UnsupportedError as e:
            # an expression the printer cannot write (cexpr knows no lines): the statement's DSL line
            loc = getattr(s, "loc", None)
            if e.loc is not None or loc is None:
                raise
            raise UnsupportedError(e.what, loc=loc, hint=e.hint) from e


def _item(s, indent: int, kernel: Kernel, out: list) -> None:
    pad = "    " * indent
    if isinstance(s, Loop) and s.kind is LoopKind.WHILE:
        note = f"  // {_short_loc(s.loc)}" if s.loc else ""
        out.append(f"{pad}while ({cexpr(s.cond)}) {{{note}")
        _body(s.body, indent + 1, kernel, out)
        out.append(f"{pad}}}")
    elif isinstance(s, Loop):
        v = cname(s.var)
        note = f"  // {_short_loc(s.loc)}" if s.loc else ""
        stages = f" (pipelined, {s.num_stages} stages)" if s.kind is LoopKind.PIPELINED else ""
        if isinstance(s.start, int) and s.start == 0 and s.step == 1:
            head = f"for (int32_t {v} = 0; {v} < {cexpr(s.extent)}; ++{v}) {{"
        else:
            start, step = cexpr(s.start), cexpr(s.step)
            head = (f"for (int32_t {v} = {start}; {v} < {start} + ({cexpr(s.extent)}) * {step}; {v} += {step}) "
                    "{")
        out.append(f"{pad}{head}{note}{stages}")
        for name, n in s.slots.items():
            b = kernel.buffers[name]
            out.append(f"{pad}    LocalTensor<{local_ctype(b)}> {B(name)} = {B(name)}_slots[({v} % {n}) * "
                       f"{b.slot_elems}];  // slot {v} % {n} of {b.slots}")
        _body(s.body, indent + 1, kernel, out)
        out.append(f"{pad}}}")
    elif isinstance(s, If):
        note = f"  // {_short_loc(s.loc)}" if s.loc else ""
        out.append(f"{pad}if ({cexpr(s.cond)}) {{{note}")
        _body(s.then_body, indent + 1, kernel, out)
        if s.else_body:
            out.append(f"{pad}}} else {{")
            _body(s.else_body, indent + 1, kernel, out)
        out.append(f"{pad}}}")
    elif isinstance(s, ScalarStore):
        note = f"  // {_short_loc(s.loc)}" if s.loc else ""
        out.append(f"{pad}{_store(kernel, s)}{note}")
    elif isinstance(s, Print):
        value = cexpr(s.value)
        fmt = "%lld" if "int" in str(s.value.dtype) else "%f"
        cast = "(long long)" if fmt == "%lld" else "(double)"
        # the message is an argument, never the format: a % or a newline in it prints as it is
        out.append(f'{pad}printf("%s = {fmt}\\n", {c_string(s.label)}, {cast}({value}));  // T.print'
                   + (f", {_short_loc(s.loc)}" if s.loc else ""))
    elif isinstance(s, AscOp):
        lines = render_op(s).splitlines()
        if s.loc:
            lines[0] += f"  // {_short_loc(s.loc)}"
        out.extend(pad + ln for ln in lines)
    elif isinstance(s, SetFlag | WaitFlag | PipeBarrier):
        out.append(pad + _sync(s))
    else:
        raise InternalCompilerError(f"cannot render {type(s).__name__}", stage="codegen")


def _section(kernel: Kernel, launch: Launch, arch, indent: int, block_expr: str) -> dict:
    """Memories, local tensors, block indices and body of one core's program."""
    memories = []
    for mem in (Scope.L1, Scope.L0A, Scope.L0B, Scope.L0C, Scope.UB):
        if kernel.memory_used.get(mem):
            memories.append({"name": mem.value, "position": POSITION[mem], "var": f"{mem.value.lower()}_buf",
                             "used": kernel.memory_used[mem], "capacity": arch.capacity[mem]})
    locals_ = []
    scalars = []
    for b in kernel.buffers.values():
        if b.scope is Scope.LOCAL:
            where = f", {_short_loc(b.loc)}" if b.loc else ""
            scalars.append({"name": B(b.name), "ctype": b.dtype.ctype, "count": b.numel,
                            "desc": f"scalar local {b.name}{where}"})
            continue
        if b.scope is Scope.GM:
            continue
        if b.offset is None:
            raise InternalCompilerError(f"buffer {b.name} has no offset", stage="codegen")
        where = f", {_short_loc(b.loc)}" if b.loc else ""
        locals_.append({"name": f"{B(b.name)}_slots" if b.slots > 1 else B(b.name), "ctype": local_ctype(b),
                        "mem_var": f"{b.scope.value.lower()}_buf", "count": b.slot_elems * b.slots,
                        "offset": b.offset, "desc": f"{b.describe()}{where}"})
    block_index = []
    stride = 1
    grid = launch.grid
    for n, ax in enumerate(grid):
        v = cname(ax.var)
        expr = block_expr if static_int(stride) == 1 else f"({block_expr} / {cexpr(stride)})"
        if n < len(grid) - 1:
            expr = f"{expr} % {cexpr(ax.extent)}"
        block_index.append(f"const int32_t {v} = {expr};")
        stride = _mul(stride, ax.extent)
    rs = kernel.row_split
    if rs is not None:
        v = cname(rs.var)
        half = rs.rows if rs.rows is not None else "rows/2"
        block_index.append(f"const int32_t {v} = GetSubBlockIdx();  // this AIV's half of the rows: [{v} * {half}, "
                           f"+{half})")
    if any(getattr(x, "unit_flag", None) is not None for x in walk(kernel.body)):
        # every Fixpipe the compiler emits converts NZ to ND: under unit flags the page asks the Mmad
        # to produce N first, so it finishes blocks in the order the Fixpipe reads them
        block_index.append("SetMMRowMajor();  // unit flags: the Mmads walk N first, the order the Fixpipe's NZ2ND "
                           "reads L0C (UnitFlag page)")
    body: list = []
    token = LOAD.set(lambda e: scalar_access(kernel, e.buffer, list(e.indices))[1])
    try:
        _body(kernel.body, indent, kernel, body)
    finally:
        LOAD.reset(token)
    return {"memories": memories, "locals": locals_, "scalars": scalars, "block_index": block_index,
            "body": CxxCode("\n".join(body))}


def _globals(program: Program, launch: Launch) -> list:
    """One GlobalTensor per GM buffer: the tensor arguments, then the workspace windows."""
    seen: dict = {}
    for k in launch.kernels.values():
        for b in k.buffers.values():
            if b.scope is Scope.GM and b.name not in seen:
                seen[b.name] = b
    out = []
    for b in seen.values():
        numel = b.numel if static_int(b.numel) is not None else " * ".join(
            str(static_int(f)) if static_int(f) is not None else f"(uint64_t)({cexpr(f)})" for f in _factors(b.numel))
        g = {"name": b.name, "var": gm_tensor(b.name), "ctype": b.dtype.ctype, "numel": numel, "dtype": str(b.dtype),
             "shape": "x".join(map(str, b.shape)), "ptr": B(b.name)}
        if b.kind is BufferKind.WORKSPACE:
            off = _add(program.global_bytes, launch.workspace.offsets[b.name])
            g["ptr"] = f"(workspace + {cexpr(off)})"
        elif b.kind is BufferKind.GLOBAL:
            g["ptr"] = f"(workspace + {program.globals.offsets[b.name]})"
        out.append(g)
    return out


def kernel_params(program: Program) -> list:
    """The C parameter list of the kernel entry: the PrimFunc's arguments, then the workspace."""
    params = []
    for p in program.params:
        if p.is_tensor:
            params.append(f"GM_ADDR {B(p.buffer)}")
        else:
            params.append(f"{p.dtype.ctype} {cname(p.var) if p.var is not None else cname(p.name)}")
    for v in program.entry_shape_vars():
        params.append(f"{v.dtype.ctype} {cname(v.var)}")
    if program.has_workspace:
        params.append("GM_ADDR workspace")
    return params


def _peer_memory(sec: dict, owner: Kernel, targets, arch, scope: Scope, label: str, position: str, var: str,
                 suffix: str, desc: str) -> None:
    """Let one core of a group address tiles in its peer's memory (3510 on-chip routes), at the
    offsets the peer's memory plan gave them."""
    sec["memories"].append({"name": label, "position": position, "var": var, "used": owner.memory_used.get(scope, 0),
                            "capacity": arch.capacity[scope]})
    for target in targets:
        b = owner.buffers[target]
        sec["locals"].append({"name": f"{B(target)}{suffix}", "ctype": b.dtype.ctype, "mem_var": var,
                              "count": b.slot_elems * b.slots, "offset": b.offset,
                              "desc": desc.format(target=target, layout=b.layout)})


def entry_names(program: Program) -> Names:
    """A fresh name table for one kernel entry, its arguments named first (in order: they keep their
    DSL names unless unsafe, the same in every entry and in the NPU host wrapper)."""
    # The entries' names and the NPU host wrapper's own (launch_<name>, blocks_<n>) too.
    extra = {program.entry_name(n) for n in range(len(program.launches))} | {f"launch_{program.name}"} | {
        f"blocks_{n}" for n in range(len(program.launches))}
    for table in (VEC_BINARY, VEC_UNARY, VEC_SCALAR):
        extra |= set(table.values())
    names = Names(extra)
    for p in program.params:
        if p.is_tensor:
            names.buffer(p.buffer)
        elif p.var is not None:
            names.var(p.var)
    for v in program.entry_shape_vars():
        names.var(v.var)
    return names


def entry_arg_names(program: Program) -> list:
    """The C++ names of the kernel entry's arguments: the PrimFunc's, then the symbolic dimensions."""
    names = entry_names(program)
    return [names.buffer(p.buffer) if p.is_tensor else names.var(p.var) if p.var is not None else p.name
            for p in program.params] + [names.var(v.var) for v in program.entry_shape_vars()]


def _launch_frame(program: Program, n: int, launch: Launch) -> dict:
    """The kernel entry of one launch: its name, type, grid, parameters, GM tensors and sections."""
    names = entry_names(program)
    known = {name for k in launch.kernels.values() for name in k.buffers}
    t_names, t_vars, t_bufs = _NAMES.set(names), VAR_NAMES.set(names.var), _BUFFERS.set(known)
    try:
        return _launch_frame_named(program, n, launch)
    finally:
        _NAMES.reset(t_names)
        VAR_NAMES.reset(t_vars)
        _BUFFERS.reset(t_bufs)


def _launch_frame_named(program: Program, n: int, launch: Launch) -> dict:
    arch = program.arch
    frame = {"name": program.entry_name(n), "kernel_type": launch.kernel_type.value,
             "block_dim": block_dim_text(launch),
             "params": kernel_params(program), "globals": _globals(program, launch), "peer_ub": False,
             **_simt_functions(launch)}
    if not launch.mixed:
        (kernel,) = launch.kernels.values()
        return {**frame, "sections": [{"guard": None, **_section(kernel, launch, arch, 1, "GetBlockIdx()")}]}
    aic, aiv = launch.kernels[Core.AIC], launch.kernels[Core.AIV]
    aic_sec = _section(aic, launch, arch, 2, "GetBlockIdx()")
    aiv_sec = _section(aiv, launch, arch, 2, "(GetBlockIdx() / GetTaskRation())")
    peers_ub = launch.peer_targets(Direction.C2V)
    if peers_ub:
        _peer_memory(aic_sec, aiv, peers_ub, arch, Scope.UB, "UB of the AIVs (written by Fixpipe)", "VECCALC",
                     "peer_ub", "_peer", "{target} in each AIV's UB")
    peers_l1 = launch.peer_targets(Direction.V2C)
    if peers_l1:
        _peer_memory(aiv_sec, aic, peers_l1, arch, Scope.L1, "L1 of the AIC (written by DataCopy UB -> L1)", "A1",
                     "peer_l1", "_l1_peer", "{target} in the AIC's L1 ({layout})")
    return {**frame, "peer_ub": bool(peers_ub),
            "sections": [{"guard": "ASCEND_IS_AIC", **aic_sec}, {"guard": "ASCEND_IS_AIV", **aiv_sec}]}


def _simt_functions(launch: Launch) -> dict:
    """The SIMT functions the launch's AIV program calls (defined before its entry) and the
    match_any helpers they use."""
    funcs, helpers = [], set()
    for k in launch.kernels.values():
        for s in walk(k.body):
            if isinstance(s, SimtCall):
                text, used = simt_function(s, k)
                funcs.append(CxxCode(text))  # a whole definition: C++ already
                helpers |= used
    return {"simt": funcs, "simt_helpers": sorted(helpers)}


def _workspace_note(program: Program) -> dict | None:
    """What the header comment says about the workspace argument."""
    if not program.has_workspace:
        return None
    ws = program.workspace_bytes
    parts = []
    if program.globals:
        names = ", ".join(program.globals.offsets)
        parts.append(f"its first {program.global_bytes} bytes hold the T.alloc_global tensors ({names}), kept across "
                     "the launches" + (";" if any(lc.workspace for lc in program.launches) else "."))
    if any(lc.workspace for lc in program.launches):
        parts.append("tiles that cross between the Cube core and the Vector cores go through "
                     + ("the rest." if program.globals else "it."))
    return {"bytes": ws, "when": "" if static_int(ws) is not None else " (computed at each call)", "parts": parts}


def block_dim_text(launch: Launch) -> str:
    """The launch's block count as the generated code's comment states it."""
    n = launch.static_block_dim
    return str(n) if n is not None else f"{launch.block_dim} (computed at each call)"


def generate(program: Program) -> str:
    """Ascend C source of a compiled Program: one kernel entry per launch, launched in order."""
    from ascend_backend import __version__

    src = program.source_file.rsplit("/", 1)[-1] if program.source_file else None
    kernels = [_launch_frame(program, n, lc) for n, lc in enumerate(program.launches)]
    uses_tail = any("tail_i(" in sec["body"] for k in kernels for sec in k["sections"])
    simt_helpers = sorted({h for k in kernels for h in k["simt_helpers"]})
    uses_bits = any("tl_bits<" in f for k in kernels for f in k["simt"])
    return _env().get_template("kernel.cpp.j2").render(
        version=__version__, arch=program.arch.name, source=src, kernels=kernels, workspace=_workspace_note(program),
        shape_vars=[v.name for v in program.entry_shape_vars()], tail_i=uses_tail,
        peer_ub=any(k["peer_ub"] for k in kernels), namespace=ENTRY_NAMESPACE, simt_helpers=simt_helpers,
        simt_bits=uses_bits).rstrip("\n")


__all__ = ["generate", "kernel_params", "render_op", "POSITION", "entry_arg_names"]
