"""Buffers, values and statements of the kernel IR.

Statements are dataclasses, one class per kind: control flow (``Loop``, ``If``), scalar code
(``ScalarStore``), tile ops as the frontend imports them (``Tile*``), the cross-core transfer
points the partition pass introduces, the Ascend ops the lowering produces (one class per
template macro, each declaring its pipe and the buffers it reads and writes) and the sync ops.
Index and scalar expressions are TVM ``PrimExpr``s until codegen prints them; buffers are named
(``Kernel.buffers``) so a pass can copy the buffer table without chasing references.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..dtypes import DType
from ..errors import SrcLoc
from .enums import (
    AtomicOp,
    BufferKind,
    CmpMode,
    CopyForm,
    Direction,
    Event,
    Layout,
    LoopKind,
    MaskLogic,
    Pipe,
    QuantMode,
    ReduceKind,
    Rounding,
    Scope,
    SimtArgKind,
    SyncPhase,
    VecBinary,
    VecScalarOp,
    VecUnary,
)

Expr = Any  # a tvm.tirx.PrimExpr (or a Python int where noted)


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def static_int(e) -> int | None:
    """``e`` as a Python int when it is a constant (an int or a TVM IntImm), else None."""
    if isinstance(e, bool):
        return int(e)
    if isinstance(e, int):
        return e
    from tvm import tirx

    if isinstance(e, tirx.IntImm):
        return int(e.value)
    return None


# ---------------------------------------------------------------- buffers and parameters


@dataclass
class Buffer:
    """A tensor: a GM parameter, a user tile buffer, a scalar local or a compiler temporary.

    ``shape`` holds ints, except the dimensions of a GM tensor that are symbolic (T.symbolic /
    T.dynamic, a runtime grid's workspace): those are TVM PrimExprs of the shape variables."""

    name: str
    shape: tuple
    dtype: DType
    kind: BufferKind
    loc: SrcLoc | None = None
    scope: Scope | None = None  # set by infer_scope (GM for parameters and workspaces)
    layout: Layout = Layout.ND
    pitch: int | None = None  # UB: elements between rows (padded to 32 B)
    offset: int | None = None  # byte offset in its memory (plan_memory)
    slots: int = 1  # rotating copies (multi_buffer)
    role: str = ""  # why the scope was chosen (shown in the memory map)
    align: int = 0  # bytes its offset must be a multiple of beyond its memory's own (MmadMx operands)

    @property
    def elem_bytes(self) -> int:
        return self.dtype.bytes

    @property
    def rows(self) -> int:
        return self.shape[0] if len(self.shape) > 1 else 1

    @property
    def cols(self) -> int:
        return self.shape[-1]

    @property
    def numel(self):
        """Elements: an int, or a PrimExpr when the shape is symbolic."""
        n = 1
        for s in self.shape:
            n = n * (static_int(s) if static_int(s) is not None else s)
        return n

    @property
    def symbolic(self) -> bool:
        return any(static_int(s) is None for s in self.shape)

    @property
    def wide(self) -> bool:
        """Whether an element offset may need 64 bits: the tensor may hold 2**31 or more elements
        (a symbolic shape, or a static one that large). Otherwise every in-bounds offset, and each
        non-negative partial sum of one, fits int32."""
        n = static_int(self.numel)
        return n is None or n >= 2**31

    @property
    def slot_elems(self) -> int:
        """Elements one slot occupies in its memory (padding included)."""
        if self.scope is Scope.UB:
            return self.rows * (self.pitch or self.cols)
        if self.layout is Layout.MX:
            return _round_up(self.rows, 16) * _round_up(self.cols, 2)
        if self.layout in (Layout.NZ, Layout.ZZ, Layout.ZN):
            c0 = 32 // self.elem_bytes if self.scope is not Scope.L0C else 16
            r = _round_up(self.rows, 16)
            c = _round_up(self.cols, c0 if self.layout is Layout.NZ else 16)
            return r * c
        return self.numel

    @property
    def nbytes(self) -> int:
        return self.slot_elems * self.elem_bytes * self.slots

    def describe(self) -> str:
        shape = "x".join(str(s) for s in self.shape)
        extra = f" pitch={self.pitch}" if self.pitch and self.pitch != self.cols else ""
        slots = f" slots={self.slots}" if self.slots > 1 else ""
        scope = self.scope.value if self.scope else "?"
        return f"{self.name}: {scope} {shape}x{self.dtype} {self.layout}{extra}{slots}"


@dataclass
class Param:
    """A kernel argument: a GM tensor (``buffer`` names it) or a scalar (``var``)."""

    name: str
    dtype: DType
    buffer: str | None = None
    var: Any = None  # the tvm Var of a scalar (or the handle of a tensor)

    @property
    def is_tensor(self) -> bool:
        return self.buffer is not None


@dataclass(frozen=True)
class ShapeVar:
    """A symbolic dimension of the kernel's tensors (``T.symbolic`` / ``T.dynamic``, ``N =
    T.int32()`` in the printed TIR). The kernel entry takes it as a scalar argument after the
    PrimFunc's own; the callable derives it from the tensors: ``sources`` lists the (parameter,
    dimension) pairs whose extent is exactly this variable. ``param`` when the PrimFunc also takes
    it as a scalar argument of its own (the callable then checks that the two agree)."""

    name: str
    var: Any
    dtype: DType
    sources: tuple = ()
    param: bool = False


@dataclass(frozen=True)
class GridAxis:
    """One dimension of the launch grid: its block index variable and extent (an int, or a PrimExpr
    of the scalar arguments and shape variables: a grid sized at call time)."""

    var: Any
    extent: Any
    tag: str = "blockIdx.x"


# ---------------------------------------------------------------- values


@dataclass(frozen=True)
class Region:
    """A rectangular window of a buffer: start indices and extents per dimension."""

    buffer: str
    base: tuple
    extents: tuple

    def with_buffer(self, name: str) -> Region:
        return dataclasses.replace(self, buffer=name)


@dataclass(frozen=True)
class Valid:
    """How many of a tile's ``n`` rows (or columns) hold data: ``n``, or at a tail of the global
    extent ``size`` the runtime value min(n, size - base). ``size`` is an int or, for a symbolic
    dimension, a PrimExpr; ``clamp`` when the window may start past the end (the value is then
    clamped to 0: DataCopyPad with a zero length is a no-op)."""

    n: int
    size: Any = None
    base: Expr = None
    clamp: bool = False

    @property
    def tail(self) -> bool:
        return self.size is not None

    def __str__(self) -> str:
        return str(self.n) if not self.tail else f"min({self.n}, {self.size} - ({self.base}))"


@dataclass(frozen=True)
class GmWindow:
    """A (rows, cols) tile window of a GM tensor: its start indices and element strides, the
    tensor dimension that carries the rows (None for 1-D), and the valid extents. Strides are
    ints or, for a tensor with symbolic dimensions, PrimExprs; ``wide`` when the element offset
    can exceed 2**31 - 1 (the offset is then computed in 64 bits)."""

    tensor: str
    base: tuple
    strides: tuple
    rows: int
    cols: int
    row_stride: Any
    valid_rows: Valid
    valid_cols: Valid
    wide: bool = False

    def __str__(self) -> str:
        base = ", ".join(str(b) for b in self.base)
        return f"{self.tensor}[{base}]<{self.rows}x{self.cols}>"


@dataclass(frozen=True)
class ScalarLit:
    """A constant scalar operand of a vector op, in the op's dtype."""

    value: float
    dtype: DType

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class ScalarExpr:
    """A runtime scalar (an expression of block indices, loop variables, arguments), converted
    to ``dtype``."""

    expr: Expr
    dtype: DType

    def __str__(self) -> str:
        return f"{self.dtype}({self.expr})"


@dataclass(frozen=True)
class ScalarConv:
    """``inner`` converted to ``dtype``."""

    inner: Any
    dtype: DType

    def __str__(self) -> str:
        return f"{self.dtype}({self.inner})"


@dataclass(frozen=True)
class ScalarNeg:
    inner: Any

    def __str__(self) -> str:
        return f"-({self.inner})"


ScalarValue = ScalarLit | ScalarExpr | ScalarConv | ScalarNeg


@dataclass(frozen=True)
class EventId:
    """The id of a SetFlag/WaitFlag: ``base``, or ``base + var % slots`` for one id per slot of a
    pipelined loop."""

    base: int
    slot_var: Any = None
    slots: int = 1

    def __str__(self) -> str:
        if self.slot_var is None:
            return str(self.base)
        idx = f"{self.slot_var} % {self.slots}"
        return f"{self.base} + {idx}" if self.base else idx


@dataclass(frozen=True)
class FirstIteration:
    """True in the first iteration of each of ``loop_vars`` (an Mmad that overwrites its
    accumulator once per pass of those loops): each variable at its loop's first value, ``starts``
    (0 when not given)."""

    loop_vars: tuple
    starts: tuple = ()

    def firsts(self) -> list[tuple]:
        """(variable, first value) pairs."""
        return list(zip(self.loop_vars, self.starts or (0,) * len(self.loop_vars), strict=True))

    def __str__(self) -> str:
        return " && ".join(f"{v} == {s}" for v, s in self.firsts())


@dataclass(frozen=True)
class InitFlag:
    """True when the scalar local ``flag`` is set: its accumulator was cleared (T.clear) since the
    last gemm into it, on a path the compiler cannot fold into FirstIteration (a clear at the end of
    a loop body, or inside an ``if``); each gemm into it resets the flag."""

    flag: str

    def __str__(self) -> str:
        return f"{self.flag} != 0"


@dataclass(frozen=True)
class UnitFlagLast:
    """The unitFlag of an accumulator's Mmad in its K loop (UnitFlag page): 3 on the trip where
    ``var`` is ``last`` (the last Mmad marks the L0C blocks full for the Fixpipe), 2 on the others."""

    var: Any
    last: Any

    def __str__(self) -> str:
        return f"{self.var} == {self.last} ? 3 : 2"


@dataclass
class UnitFlagUse:
    """How an Mmad or a Fixpipe takes part in unit flags: ``value`` (2, 3 or UnitFlagLast for an
    Mmad), ``when`` (a Fixpipe: 3 only if this scalar condition holds, the K loop ran at least once;
    None: always), ``flag`` (its row in Kernel.flags) and ``reason`` (the comment in the code)."""

    value: Any
    flag: int = -1
    reason: str = ""
    when: Any = None


@dataclass(frozen=True)
class RepeatOperand:
    """A source of a mask/repeat vector op that broadcasts: its buffer and its strides, in 32 B
    blocks (``blk`` within a repeat, ``rep`` between repeats), elements per row (``row``) and
    whether it advances with the column chunk (``chunk``)."""

    buffer: str
    row: int
    chunk: int
    blk: int
    rep: int


@dataclass(frozen=True)
class DiagPrefix:
    """Per row r of a diagonal mask, the number of leading columns that take the first value:
    r + c0 + 1 (``plus_one``) or r - c0."""

    c0: Expr
    plus_one: bool

    def __str__(self) -> str:
        return f"({self.c0}) + 1" if self.plus_one else f"-({self.c0})"


# ---------------------------------------------------------------- statements


@dataclass
class Stmt:
    loc: SrcLoc | None = field(default=None, kw_only=True)


@dataclass
class Loop(Stmt):
    """``for var in range(start, start + extent * step, step)``, or with kind WHILE ``while cond:``
    (var and extent None); ``slots`` (from multi_buffer) maps a rotating buffer to its slot count.

    ``skewed`` (route): a pipelined loop of a kernel on both core kinds whose body was split into a
    part A and a part B so that step k + ``lead``'s A runs before step k's B (Cube/Vector overlap).
    Its body is then ``[If(var < n, A), If(var >= lead, [Loop(var_b, start=var - lead, extent=1, B)])]``
    (insert_sync adds flags between them) over n + lead trips: A works on step ``var``, B on step
    ``var_b`` = var - lead, and every buffer B rotates is selected by ``var_b`` (the one-trip loop's
    own ``slots``). ``lead`` is 1, or 2 where the tiles cross through GM (route decides)."""

    var: Any
    extent: Expr
    body: list
    kind: LoopKind = LoopKind.SERIAL
    num_stages: int = 1
    slots: dict = field(default_factory=dict)
    start: Expr = 0
    step: int = 1
    cond: Expr = None
    skewed: bool = False
    lead: int = 1

    @property
    def steps(self) -> Expr:
        """A skewed loop's steps: its trips less ``lead`` (an int when the extent is static)."""
        e = static_int(self.extent)
        return e - self.lead if e is not None else self.extent - self.lead

    @property
    def text(self) -> str:
        """How the sync table names the loop when the scalar unit's reads of its bounds are ordered."""
        if self.kind is LoopKind.WHILE:
            return f"while {self.cond}"
        return f"for {self.var} in [{self.start}, {self.start} + {self.extent})"


@dataclass
class If(Stmt):
    """``if cond: then_body else: else_body`` on a scalar condition."""

    cond: Expr
    then_body: list
    else_body: list = field(default_factory=list)

    @property
    def text(self) -> str:
        """How the sync table names the ``if`` when the scalar unit's reads of its condition are ordered."""
        return f"if {self.cond}"


@dataclass
class ScalarStore(Stmt):
    """A store by the scalar unit: ``buffer[indices] = value`` (a scalar local, or one element of
    a UB tile or GM tensor). Loads inside ``value`` and ``indices`` are scalar loads."""

    buffer: str
    indices: tuple
    value: Expr

    pipe: ClassVar[Pipe] = Pipe.S

    @property
    def reads(self) -> tuple:
        return loaded_buffers(self.value, *self.indices)

    @property
    def writes(self) -> tuple:
        return (self.buffer,)

    @property
    def text(self) -> str:
        return f"{self.buffer}[{', '.join(map(str, self.indices))}] = {self.value}"


def loaded_buffers(*exprs) -> tuple:
    """Names of the buffers loaded in ``exprs`` (scalar loads), in first-use order."""
    from tvm import tirx

    names: list = []

    def visit(n):
        if isinstance(n, tirx.BufferLoad):
            names.append(n.buffer.name)

    for e in exprs:
        if isinstance(e, tirx.PrimExpr):
            tirx.stmt_functor.post_order_visit(e, visit)
    return tuple(dict.fromkeys(names))


# -- tile ops (frontend level)


@dataclass
class TileCopy(Stmt):
    src: Region
    dst: Region
    atomic: AtomicOp | None = None  # a store to GM that adds to (max/min with) what is there
    # A gemm accumulator stored to GM times this scalar (Fixpipe's scalar quant; passes/fold_scale.py).
    scale: Expr | None = None


@dataclass
class TileFill(Stmt):
    dst: Region
    value: Expr


@dataclass
class TileGemm(Stmt):
    """``c (+)= a x b``; with ``scale_a``/``scale_b`` (T.gemm_blockscaled) the MX form
    ``c (+)= (scale_a (x) a) x (scale_b (x) b)``, one E8M0 scale per row and 32 K elements."""

    a: Region
    b: Region
    c: Region
    trans_a: bool = False
    trans_b: bool = False
    clear_accum: bool = False
    scale_a: Region | None = None
    scale_b: Region | None = None

    @property
    def scale_tiles(self) -> tuple:
        """The MX scale tiles (T.gemm_blockscaled), or ()."""
        return tuple(r.buffer for r in (self.scale_a, self.scale_b) if r is not None)

    @property
    def inputs(self) -> tuple:
        """The buffers the Cube loads for this gemm: the operands, then the scale tiles if any."""
        return (self.a.buffer, self.b.buffer, *self.scale_tiles)


@dataclass
class TileReduce(Stmt):
    src: Region
    dst: Region
    kind: ReduceKind
    dim: int
    clear: bool = True


@dataclass(frozen=True)
class ParallelStore:
    """One assignment of a T.Parallel body (a tvm BufferStore) and its DSL line; ``atomic`` when it
    is an element-wise T.atomic_add (the value is added to what is in GM)."""

    store: Any
    loc: SrcLoc | None = None
    atomic: AtomicOp | None = None


@dataclass
class TileParallel(Stmt):
    """A T.Parallel nest: loop variables, extents and the element-wise assignments of its body."""

    vars: tuple
    extents: tuple
    stores: tuple


@dataclass
class TileCumsum(Stmt):
    """Inclusive prefix sums of ``src`` along ``dim`` into ``dst`` (from the end when ``reverse``)."""

    src: Region
    dst: Region
    dim: int
    reverse: bool = False


@dataclass
class SimtRegion(Stmt):
    """Thread-level code of a ``T.Kernel(..., threads=...)`` (frontend): TIR statements that every
    thread of the block runs, as tilelang built them (loads and stores indexed by thread, per-thread
    locals, warp collectives, barriers, atomics). dav-3510 runs it as one SIMT function launched by
    the AIV (passes/lower_simt.py). ``threads`` is the block's (x, y, z); ``thread_vars`` the TIR
    variables bound to threadIdx.x/y/z (None where the kernel binds none); ``locals`` the per-thread
    locals (T.alloc_local / T.alloc_var used by threads: registers of each thread, not tiles);
    ``reads`` / ``writes`` the kernel buffers (tiles, tensors) its loads and stores touch, an atomic
    counting as both."""

    body: tuple  # tvm tirx.Stmt
    threads: tuple
    thread_vars: tuple
    locals: tuple  # Buffer
    reads: tuple
    writes: tuple


@dataclass(frozen=True)
class SimtArg:
    """One argument of a SIMT function: a GM tensor's or a UB tile's address (``buffer``), or a
    scalar (``var``: a block index, a loop variable of the enclosing tile code, a kernel argument)."""

    name: str
    kind: SimtArgKind
    dtype: DType
    buffer: str | None = None
    var: Any = None


@dataclass
class Print(Stmt):
    """T.print of a scalar: ``label`` and the value (printed by the emulator; dropped on the device)."""

    label: str
    value: Expr

    pipe: ClassVar[Pipe] = Pipe.S

    @property
    def reads(self) -> tuple:
        return loaded_buffers(self.value)

    writes = property(lambda self: ())
    text = property(lambda self: f"print {self.label}")


@dataclass
class TileAccumulate(Stmt):
    """dst += src over whole tiles (the AIVs adding a fresh gemm product into their copy)."""

    dst: str
    src: str


# -- cross-core transfers (partition -> route)


@dataclass
class Send(Stmt):
    """This core hands tile ``tile`` to the other core kind (Program transfer ``transfer``)."""

    transfer: int
    tile: str


@dataclass
class Receive(Stmt):
    """This core takes tile ``tile`` from the other core kind into ``into`` (usually ``tile``;
    a fresh buffer when the AIVs add the product into their own copy)."""

    transfer: int
    tile: str
    into: str


@dataclass
class CopyToPeerUb(Stmt):
    """dav-3510, AIC: Fixpipe one AIV's half of the rows of accumulator ``src`` into that AIV's UB
    tile ``target``; in a skewed loop into the slot ``step`` % slots of it (multi_buffer sets
    ``slots`` when the target rotates)."""

    src: str
    target: str
    sub: int
    step: Any = None
    slots: int = 1


@dataclass
class CopyToPeerUbDual(Stmt):
    """dav-3510, AIC: one dual-destination Fixpipe of accumulator ``src`` split by rows, AIV s
    receiving rows [s * M/2, (s + 1) * M/2) in its UB tile ``target`` (its slot ``step`` % slots
    when it rotates, as for CopyToPeerUb)."""

    src: str
    target: str
    step: Any = None
    slots: int = 1


@dataclass
class CopyToPeerL1(Stmt):
    """dav-3510, AIV: this AIV's rows of UB tile ``src`` into the AIC's L1 tile ``target`` (its slot
    ``step`` % slots when it rotates, as for CopyToPeerUb)."""

    src: Region
    target: str
    rows: int
    step: Any = None
    slots: int = 1


@dataclass
class CrossCoreSet(Stmt):
    """Signal the other core kind: flag ``flag`` (logical id 0-10), in ``mode``, once every
    earlier op of ``pipe`` finished. In mode 4 the AIC names one AIV (``sub``). ``pipe`` None:
    decided by lowering (the pipe of the last access of ``orders``)."""

    flag: int
    pipe: Pipe | None
    reason: str
    mode: int = 2
    sub: int | None = None
    orders: str | None = None
    transfer: int | None = None  # the Transfer it signals (flag ids may be shared)


@dataclass
class CrossCoreWait(Stmt):
    """Block ``pipe`` until the other core kind has set flag ``flag``. ``pipe`` None: decided by
    lowering (the pipe that next accesses ``orders``, or S when several do)."""

    flag: int
    pipe: Pipe | None
    reason: str
    mode: int = 2
    sub: int | None = None
    orders: str | None = None
    transfer: int | None = None  # the Transfer it signals (flag ids may be shared)


# -- Ascend ops (after lower_tile_ops): one class per template macro


@dataclass
class AscOp(Stmt):
    """One Ascend C API call (or a short fixed loop of them) on one pipe."""

    macro: ClassVar[str] = ""
    pipe: ClassVar[Pipe] = Pipe.S

    @property
    def reads(self) -> tuple:
        return ()

    @property
    def writes(self) -> tuple:
        return ()

    @property
    def text(self) -> str:
        """A short description for the sync table and the IR printer."""
        return self.macro

    @property
    def index_reads(self) -> tuple:
        """Buffers the scalar unit reads to compute this op's addresses and extents (data-dependent
        windows): loads inside its index expressions."""
        exprs = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, GmWindow):
                exprs += [*v.base, v.valid_rows.base, v.valid_cols.base, v.valid_rows.size, v.valid_cols.size]
            elif isinstance(v, Valid):
                exprs += [v.base, v.size]
            elif f.name.endswith("_offset"):  # a tile offset (VecCopy): may hold a loaded index
                exprs.append(v)
            else:
                while isinstance(v, ScalarConv | ScalarNeg):
                    v = v.inner
                if isinstance(v, ScalarExpr):
                    exprs.append(v.expr)
        return loaded_buffers(*exprs)


@dataclass
class SimtCall(AscOp):
    """``asc_vf_call<func>(dim3{x, y, z}, args...)``: a SIMT function (``__simt_vf__``) run by every
    thread of a block of ``threads`` on the AIV's Vector unit. Its UB and GM loads and stores are the
    op's reads and writes, so insert_sync orders it with the other pipes like any vector op (the
    hybrid sample gather_and_adds.asc waits PIPE_V -> PIPE_MTE3 after its SIMT VF). ``body`` stays
    TIR (printed by codegen), with every buffer it names among ``args`` or ``locals``."""

    func: str
    threads: tuple
    thread_vars: tuple
    body: tuple
    locals: tuple  # Buffer: per-thread locals declared inside the function
    args: tuple  # SimtArg
    loads: tuple
    stores: tuple

    macro: ClassVar[str] = "simt_call"
    pipe: ClassVar[Pipe] = Pipe.V

    reads = property(lambda self: self.loads)
    writes = property(lambda self: self.stores)

    @property
    def nthreads(self) -> int:
        x, y, z = self.threads
        return x * y * z

    @property
    def text(self) -> str:
        dims = "x".join(str(t) for t in self.threads)
        return f"SIMT {self.func}<<<{dims}>>>"


def _one_of(*names) -> tuple:
    return tuple(dict.fromkeys(n for n in names if n))


@dataclass
class CopyGmToUb(AscOp):
    gm: str
    ub: str
    window: GmWindow
    form: CopyForm
    ub_pitch: int
    dtype: DType

    macro: ClassVar[str] = "copy_gm_to_ub"
    pipe: ClassVar[Pipe] = Pipe.MTE2

    reads = property(lambda self: (self.gm,))
    writes = property(lambda self: (self.ub,))

    @property
    def text(self) -> str:
        return f"{'DataCopy' if self.form is CopyForm.COUNT else 'DataCopyPad'} {self.gm} -> {self.ub}"


@dataclass
class CopyUbToGm(AscOp):
    ub: str
    gm: str
    window: GmWindow
    form: CopyForm
    ub_pitch: int
    dtype: DType
    atomic: AtomicOp | None = None

    macro: ClassVar[str] = "copy_ub_to_gm"
    pipe: ClassVar[Pipe] = Pipe.MTE3

    reads = property(lambda self: (self.ub,))
    writes = property(lambda self: (self.gm,))

    @property
    def text(self) -> str:
        verb = "DataCopy" if self.form is CopyForm.COUNT else "DataCopyPad"
        return f"{verb} {self.ub} -> {self.gm}" + (f" (atomic {self.atomic})" if self.atomic else "")


@dataclass
class CopyGmToL1(AscOp):
    """GM ND -> L1 NZ (Nd2Nz), ``l1_rows`` the tile's row count (its C0 stride); the window's rows
    land at rows ``row0`` .. of the tile (0: the whole tile)."""

    gm: str
    l1: str
    window: GmWindow
    l1_rows: int
    dtype: DType
    row0: Expr = 0

    macro: ClassVar[str] = "copy_gm_to_l1"
    pipe: ClassVar[Pipe] = Pipe.MTE2

    reads = property(lambda self: (self.gm,))
    writes = property(lambda self: (self.l1,))

    @property
    def text(self) -> str:
        return f"Nd2Nz {self.gm} -> {self.l1}"


@dataclass
class FillL1(AscOp):
    """An L1 tile of ``nbytes`` bytes set to zero on the Cube: Fill with InitConstValueParams (Fill
    page: L1 on every arch, on PIPE_MTE2, 32-byte blocks), written as 16-bit words (a type the page
    lists on both arches: zero bits are zero in every dtype)."""

    dst: str
    nbytes: int

    macro: ClassVar[str] = "fill_l1"
    pipe: ClassVar[Pipe] = Pipe.MTE2

    writes = property(lambda self: (self.dst,))

    @property
    def text(self) -> str:
        return f"Fill {self.dst} = 0"


@dataclass
class CopyMxScalesGmToL1(AscOp):
    """GM [rows, K/32] E8M0 (ND) -> an MX scale tile in L1: viewed as 16-bit pairs of scales, one
    Dn2Nz (DataCopy GM->L1 DN2NZ page) whose transposed NZ output is the 16 rows x 2 scales
    fractals LoadData with LoadData2DMxParams takes (the official MX sample moves scales so)."""

    gm: str
    l1: str
    window: GmWindow
    l1_pairs: int  # scale pairs per row of the tile (its columns / 2)

    macro: ClassVar[str] = "copy_mx_scales_gm_to_l1"
    pipe: ClassVar[Pipe] = Pipe.MTE2

    reads = property(lambda self: (self.gm,))
    writes = property(lambda self: (self.l1,))

    @property
    def text(self) -> str:
        return f"Dn2Nz (MX scales) {self.gm} -> {self.l1}"


@dataclass(frozen=True)
class KFractals:
    """A LoadData step count that is the gemm's (possibly runtime) K in fractal units: k / unit
    (16 rows, or C0 columns: 16 for 2-byte types, 32 for 1-byte ones)."""

    k: Valid
    unit: int = 16

    def __str__(self) -> str:
        return f"{self.k}/{self.unit}"


@dataclass
class LoadData2D(AscOp):
    """dav-c220: L1 NZ -> L0A ZZ (``operand`` "A") or L0B ZN ("B"), one LoadData per fractal row,
    each fractal transposed where the layouts require. ``mn`` is M (A) or N (B)."""

    operand: str
    dst: str
    src: str
    src_offset: Expr  # elements: an int, or a PrimExpr for a window at a loop variable's offset
    mn: int
    k: Valid
    trans: bool
    src_rows: int
    part: str = ""
    c0: int = 16  # elements per 32-byte fractal row (16 x C0 fractals)

    macro: ClassVar[str] = "load_data_2d"
    pipe: ClassVar[Pipe] = Pipe.MTE1

    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.dst,))

    @property
    def text(self) -> str:
        return f"LoadData {self.src}{self.part} -> {self.dst}{' (transposed)' if self.trans else ''}"


@dataclass
class LoadData2DV2(AscOp):
    """dav-3510: L1 NZ -> L0A NZ / L0B ZN in one LoadData2DParamsV2 call: a region of (m_step x
    k_step) fractals of the stored tile, stored transposed when ``trans``."""

    dst: str
    src: str
    src_offset: Expr  # elements: an int, or a PrimExpr for a window at a loop variable's offset
    m_step: int | KFractals
    k_step: int | KFractals
    src_stride: int
    dst_stride: int
    trans: bool
    note: str
    part: str = ""
    operand_transposed: bool = False  # the gemm's trans_A / trans_B (for the description)

    macro: ClassVar[str] = "load_data_2d_v2"
    pipe: ClassVar[Pipe] = Pipe.MTE1

    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.dst,))

    @property
    def text(self) -> str:
        return f"LoadData {self.src}{self.part} -> {self.dst}{' (transposed)' if self.operand_transposed else ''}"


@dataclass
class LoadData2DMx(LoadData2DV2):
    """dav-3510: LoadData with LoadData2DMxParams: the operand as LoadData2DV2, and its MX scales
    (``scales``, an MX tile in L1) into L0A_MX / L0B_MX: ``x_step`` fractals of 16 rows from row
    fractal 0, ``y_step`` pairs of scales from pair ``y_start``; ``scale_stride`` pairs per
    row fractal of the L1 tile, ``y_step`` of the destination."""

    scales: str = ""
    x_step: int = 0
    y_start: Expr = 0
    y_step: int = 0
    scale_stride: int = 0

    macro: ClassVar[str] = "load_data_2d_mx"

    reads = property(lambda self: (self.src, self.scales))

    @property
    def text(self) -> str:
        return f"LoadData {self.src}{self.part} + MX scales {self.scales} -> {self.dst}"


@dataclass
class Mmad(AscOp):
    """dst (+)= a x b: ``init`` True overwrites, False accumulates, FirstIteration overwrites in
    the first iteration of its loops, InitFlag when its flag is set."""

    dst: str
    a: str
    b: str
    m: int
    n: int
    k: Valid
    init: bool | FirstIteration | InitFlag
    unit_flag: UnitFlagUse | None = None  # insert_sync: unit flags order it against the accumulator's Fixpipe

    macro: ClassVar[str] = "mmad"
    pipe: ClassVar[Pipe] = Pipe.M

    @property
    def reads(self) -> tuple:
        return (self.a, self.b) if self.init is True else (self.a, self.b, self.dst)

    writes = property(lambda self: (self.dst,))

    @property
    def text(self) -> str:
        return f"Mmad {self.dst} {'=' if self.init is True else '+='} {self.a} x {self.b}"


@dataclass
class MmadMx(Mmad):
    """dst (+)= (scaleA (x) a) x (scaleB (x) b): the MX scales were loaded into L0A_MX / L0B_MX with
    the operands (LoadData2DMx)."""

    @property
    def text(self) -> str:
        return f"MmadMx {self.dst} {'=' if self.init is True else '+='} {self.a} x {self.b}"


@dataclass
class _FixpipeToGm(AscOp):
    gm: str
    src: str
    window: GmWindow
    src_stride: int
    quant: QuantMode
    relu: bool
    dtype: DType
    src_dtype: DType = DType.FLOAT32  # the accumulator's (float32, or int32 for int8 operands)
    atomic: AtomicOp | None = None
    scale: Expr | None = None  # the scalar a scaled quant mode multiplies by (None: 1.0)
    unit_flag: UnitFlagUse | None = None  # insert_sync: unit flags order it after the accumulator's Mmads

    pipe: ClassVar[Pipe] = Pipe.FIX

    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.gm,))

    @property
    def text(self) -> str:
        return f"Fixpipe {self.src} -> {self.gm} ({self.dtype})"


@dataclass
class FixpipeToGmV220(_FixpipeToGm):
    """L0C NZ -> GM ND with FixpipeParamsV220 (dav-c220)."""

    macro: ClassVar[str] = "fixpipe_to_gm_v220"


@dataclass
class FixpipeToGmArch3510(_FixpipeToGm):
    """L0C NZ -> GM ND with FixpipeParamsArch3510 (dav-3510)."""

    macro: ClassVar[str] = "fixpipe_to_gm_3510"


@dataclass
class UnitFlagReset(AscOp):
    """SetFixPipeConfig(acc, true) after a Fixpipe that read part of the accumulator's blocks under
    unit flags: every L0C unit flag back to 0 (SetFixPipeConfig page, isUnitFlag), so the next Mmad
    with unitFlag does not wait for blocks no Fixpipe reads. No data access: the flags order it."""

    acc: str
    flag: int = -1  # its row in Kernel.flags
    reason: str = ""

    macro: ClassVar[str] = "unit_flag_reset"
    pipe: ClassVar[Pipe] = Pipe.FIX

    @property
    def text(self) -> str:
        return f"reset the unit flags after a partial read of {self.acc}"


@dataclass
class _FixpipeToPeerUb(AscOp):
    """dav-3510: accumulator ``src`` (``rows`` x ``cols``, ``pitch`` columns in UB) into an AIV's UB
    tile ``target`` (another core's memory: no local write); into its slot ``step`` % slots when
    the target rotates (``slot_elems`` elements apart)."""

    src: str
    target: str
    rows: int
    cols: int
    pitch: int
    dtype: DType = DType.FLOAT32  # the accumulator's (it crosses unconverted)
    step: Any = None
    slots: int = 1
    slot_elems: int = 0
    unit_flag: UnitFlagUse | None = None  # insert_sync: unit flags order it after the accumulator's Mmads

    pipe: ClassVar[Pipe] = Pipe.FIX

    reads = property(lambda self: (self.src,))


@dataclass(kw_only=True)
class FixpipeToPeerUb(_FixpipeToPeerUb):
    """dav-3510: rows [sub * half, (sub + 1) * half) of the accumulator into AIV ``sub``'s UB tile."""

    half: int
    sub: int

    macro: ClassVar[str] = "fixpipe_to_peer_ub"

    @property
    def text(self) -> str:
        return (f"Fixpipe {self.src} rows [{self.sub * self.half}, {(self.sub + 1) * self.half}) -> {self.target} "
                f"in the UB of AIV {self.sub}")


@dataclass
class FixpipeToPeerUbDual(_FixpipeToPeerUb):
    """dav-3510: the accumulator into both AIVs' UB tile in one dual-destination Fixpipe split by M
    (dualDstCtl = 1: AIV s gets rows [s * rows/2, (s + 1) * rows/2)); the mode allows no
    conversion."""

    macro: ClassVar[str] = "fixpipe_to_peer_ub_dual"

    @property
    def text(self) -> str:
        h = self.rows // 2
        return f"Fixpipe {self.src} rows [0, {h}) / [{h}, {self.rows}) -> {self.target} in the UB of AIV 0 / AIV 1"


@dataclass
class CopyUbToPeerL1(AscOp):
    """dav-3510: this AIV's rows of UB tile ``src`` into the AIC's L1 tile ``target`` (Nd2Nz on
    MTE3), at row ``sub_var * src_rows``; into its slot ``step`` % slots when the target rotates
    (``slot_elems`` elements apart)."""

    src: str
    target: str
    sub_var: Any
    src_rows: int
    src_cols: int
    src_pitch: int
    c0: int
    dst_c0_stride: int
    rows: int
    step: Any = None
    slots: int = 1
    slot_elems: int = 0
    src_row0: Any = 0  # the first row of src it copies (a tile each AIV holds whole: sub * half)

    macro: ClassVar[str] = "copy_ub_to_peer_l1"
    pipe: ClassVar[Pipe] = Pipe.MTE3

    reads = property(lambda self: (self.src,))

    @property
    def text(self) -> str:
        return f"DataCopy {self.src} -> this AIV's rows of {self.target} in the AIC's L1 (Nd2Nz)"


@dataclass
class _VecOp(AscOp):
    pipe: ClassVar[Pipe] = Pipe.V


@dataclass
class VecCopy(_VecOp):
    """UB -> UB DataCopy of ``count`` elements; the offsets (elements, 32-byte aligned: whole rows
    of a tile) address a row range of either side (``T.copy(x[k, :], v)``)."""

    dst: str
    src: str
    count: int
    src_offset: Expr = 0
    dst_offset: Expr = 0

    macro: ClassVar[str] = "vec_copy"
    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"DataCopy {_off(self.src, self.src_offset)} -> {_off(self.dst, self.dst_offset)}")


def _off(name: str, offset) -> str:
    return name if isinstance(offset, int) and offset == 0 else f"{name}[{offset}]"


@dataclass
class VecDuplicate(_VecOp):
    """dst[k] = value, k < count. ``as_dtype``: the element type the Duplicate writes in when the
    tile's own is not one it takes (dst seen as ``as_dtype`` elements, ``count`` of them, ``value``
    one of them: a 1-byte tile filled as 16-bit words on dav-c220); None: the tile's own."""

    dst: str
    value: ScalarValue
    count: int
    as_dtype: DType | None = None

    macro: ClassVar[str] = "vec_duplicate"
    writes = property(lambda self: (self.dst,))

    @property
    def text(self) -> str:
        if self.as_dtype is None:
            return f"Duplicate {self.dst} = {self.value}"
        value = f"0x{int(self.value.value):04x}" if isinstance(self.value, ScalarLit) else str(self.value)
        return f"Duplicate {self.dst} = {value} (as {self.as_dtype} words)"


@dataclass
class VecScalar(_VecOp):
    op: VecScalarOp
    dst: str
    src: str
    scalar: ScalarValue
    count: int

    macro: ClassVar[str] = "vec_scalar"
    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"{self.op} {self.src}, {self.scalar} -> {self.dst}")


@dataclass
class VecUnaryOp(_VecOp):
    op: VecUnary
    dst: str
    src: str
    count: int

    macro: ClassVar[str] = "vec_unary"
    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"{self.op} {self.src} -> {self.dst}")


@dataclass
class VecBinaryOp(_VecOp):
    op: VecBinary
    dst: str
    src0: str
    src1: str
    count: int

    macro: ClassVar[str] = "vec_binary"
    reads = property(lambda self: _one_of(self.src0, self.src1))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"{self.op} {self.src0}, {self.src1} -> {self.dst}")


@dataclass
class VecCast(_VecOp):
    dst: str
    src: str
    mode: Rounding
    count: int
    src_dtype: DType
    dst_dtype: DType

    macro: ClassVar[str] = "vec_cast"
    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"Cast {self.src} ({self.src_dtype}) -> {self.dst} ({self.dst_dtype})")


@dataclass
class VecTranspose(_VecOp):
    """dst = src^T for a dense ``rows`` x ``cols`` tile: Transpose's [N,C,H,W] -> [N,H,W,C] form with
    N = H = 1, C = rows, W = cols (数据排布转换/Transpose.md); ``tmp`` is its sharedTmpBuffer."""

    dst: str
    src: str
    tmp: str
    rows: int
    cols: int

    macro: ClassVar[str] = "vec_transpose"
    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.dst, self.tmp))
    text = property(lambda self: f"Transpose {self.src} ({self.rows} x {self.cols}) -> {self.dst}")


@dataclass
class VecGather(_VecOp):
    """dst[k] = the element of src at byte offset offsets[k] (Gather's count form, 离散与聚合/Gather.md)
    over ``rows`` rows of ``cols`` elements, ``pitch`` apart in dst and offsets (one call per row when
    the rows are padded: the padding lanes are never read); ``offsets`` is an int32 tile read as the
    uint32 srcOffset tensor."""

    dst: str
    src: str
    offsets: str
    rows: int
    cols: int
    pitch: int
    what: str = ""

    macro: ClassVar[str] = "vec_gather"
    reads = property(lambda self: (self.src, self.offsets))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"Gather {self.src}{self.what} at {self.offsets} -> {self.dst}")


@dataclass
class VecBrcb(_VecOp):
    """Each of ``repeat`` x 8 values of src into its own 32 B block of dst."""

    dst: str
    src: str
    repeat: int

    macro: ClassVar[str] = "vec_brcb"
    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"Brcb {self.src} -> {self.dst} (one 32 B block per row)")


@dataclass
class VecBinaryBcast(_VecOp):
    """dst[r, c] = s0 op s1 over ``rows`` x ``cols``, one repeat per row, ``chunks`` column chunks of
    ``lanes`` elements; each source a tile, a per-row block vector or a per-column vector."""

    op: VecBinary
    dst: str
    s0: RepeatOperand
    s1: RepeatOperand
    rows: int
    cols: int
    lanes: int
    dst_row: int
    dst_rep: int
    chunks: int
    what: str = ""

    macro: ClassVar[str] = "vec_binary_bcast"
    reads = property(lambda self: _one_of(self.s0.buffer, self.s1.buffer))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"{self.op} {self.what} -> {self.dst}")


@dataclass
class VecBinaryBcastRows(VecBinaryBcast):
    """VecBinaryBcast for rows longer than a repeat stride reaches (over 8160 bytes): one call per
    row, whose column chunks are the repeats (256 bytes apart; a broadcast operand 0 apart)."""

    macro: ClassVar[str] = "vec_binary_bcast_rows"


@dataclass
class VecFusedMulAddBcast(VecBinaryBcast):
    """FusedMulAdd in VecBinaryBcast's form: dst = s0 * dst + s1 (one rounding), e.g. the online
    softmax's rescale-and-accumulate acc_o = scale[row] * acc_o + part (``op`` is unused)."""

    reads = property(lambda self: _one_of(self.s0.buffer, self.s1.buffer, self.dst))
    text = property(lambda self: f"FusedMulAdd {self.what} -> {self.dst}")


@dataclass
class VecMulAddDstBcast(VecBinaryBcast):
    """MulAddDst in VecBinaryBcast's form: dst = s0 * s1 + dst (the product rounded, then the sum,
    as the Mul and Add it replaces), e.g. a block-scaled GEMM's promotion acc = acc + part * scale[row]
    (``op`` is unused)."""

    reads = property(lambda self: _one_of(self.s0.buffer, self.s1.buffer, self.dst))
    text = property(lambda self: f"MulAddDst {self.what} -> {self.dst}")


@dataclass
class VecWholeReduce(_VecOp):
    """dst[r] = reduce(src row r's first ``mask`` elements), ``repeat`` rows ``src_rep`` blocks apart."""

    kind: ReduceKind
    dst: str
    src: str
    mask: int
    repeat: int
    src_rep: int

    macro: ClassVar[str] = "vec_whole_reduce"
    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"WholeReduce{self.kind.value.capitalize()} {self.src} -> {self.dst}")


@dataclass
class VecFoldInit(_VecOp):
    """The first ``lanes`` columns of each row of src into a ``lanes``-wide accumulator."""

    dst: str
    src: str
    lanes: int
    repeat: int
    src_rep: int
    zero: ScalarValue

    macro: ClassVar[str] = "vec_fold_init"
    reads = property(lambda self: (self.src,))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"copy first {self.lanes} columns of {self.src} -> {self.dst}")


@dataclass
class VecFold(_VecOp):
    """dst op= src columns [offset, offset + mask) of each row."""

    op: VecBinary
    dst: str
    src: str
    offset: int
    mask: int
    repeat: int
    src_rep: int
    dst_rep: int = 8  # compact rows of ``lanes``; src_rep when folding a scratch source in place

    macro: ClassVar[str] = "vec_fold"
    reads = property(lambda self: _one_of(self.dst, self.src))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"{self.op} columns {self.offset}.. of {self.src} into {self.dst}")


@dataclass
class VecFoldLoop(_VecOp):
    """dst op= src, chunk by chunk over the ``valid`` columns only (a runtime column tail)."""

    op: VecBinary
    dst: str
    src: str
    lanes: int
    repeat: int
    src_rep: int
    chunks: int
    valid: Valid
    barrier: bool

    macro: ClassVar[str] = "vec_fold_loop"
    reads = property(lambda self: _one_of(self.dst, self.src))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"{self.op} the valid columns of {self.src} into {self.dst}")


@dataclass
class VecDiagFill(_VecOp):
    """A diagonal mask: row r's first ``prefix(r)`` columns ``first``, the rest ``rest``."""

    dst: str
    rows: int
    cols: int
    pitch: int
    prefix: DiagPrefix
    first: ScalarValue
    rest: ScalarValue
    barrier: bool

    macro: ClassVar[str] = "vec_diag_fill"
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"mask {self.dst}: per row, the first (row + {self.prefix}) columns {self.first}, "
                    f"the rest {self.rest}")


@dataclass
class VecIndex(_VecOp):
    """dst[k] = first + k for k < count (CreateVecIndex): the values of a T.Parallel index."""

    dst: str
    first: ScalarValue
    count: int
    dtype: DType

    macro: ClassVar[str] = "vec_index"
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"CreateVecIndex {self.dst} = {self.first} + k")


@dataclass
class VecCompare(_VecOp):
    """Bit k of ``dst`` = src0[k] ``mode`` src1[k] (or the scalar), k < count; count covers whole
    256-byte repeats of ``dtype`` (the operands are that large)."""

    mode: CmpMode
    dst: str
    src0: str
    src1: str | None
    scalar: ScalarValue | None
    count: int
    dtype: DType

    macro: ClassVar[str] = "vec_compare"
    reads = property(lambda self: _one_of(self.src0, self.src1))
    writes = property(lambda self: (self.dst,))

    @property
    def text(self) -> str:
        other = self.src1 if self.src1 is not None else self.scalar
        return f"Compare{'s' if self.src1 is None else ''} {self.src0} {self.mode} {other} -> bits {self.dst}"


@dataclass
class VecMaskLogic(_VecOp):
    """dst = src0 op src1 (Not: op src0) on bit masks, as ``count`` 16-bit words."""

    op: MaskLogic
    dst: str
    src0: str
    src1: str | None
    count: int

    macro: ClassVar[str] = "vec_mask_logic"
    reads = property(lambda self: _one_of(self.src0, self.src1))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"{self.op} bits {self.src0}{', ' + self.src1 if self.src1 else ''} -> {self.dst}")


@dataclass
class VecSelect(_VecOp):
    """dst[k] = bit k of ``mask`` ? src0[k] : (src1[k] or the scalar), k < count. ``as_dtype``:
    the element type the Select runs in when the tiles' own is not one it takes (the bits are
    moved unchanged)."""

    dst: str
    mask: str
    src0: str
    src1: str | None
    scalar: ScalarValue | None
    count: int
    dtype: DType
    as_dtype: DType | None = None

    macro: ClassVar[str] = "vec_select"
    reads = property(lambda self: _one_of(self.mask, self.src0, self.src1))
    writes = property(lambda self: (self.dst,))

    @property
    def text(self) -> str:
        other = self.src1 if self.src1 is not None else self.scalar
        return f"Select {self.dst} = {self.mask} ? {self.src0} : {other}"


@dataclass
class VecFoldRows(_VecOp):
    """Per row r of src (``rows`` rows ``pitch`` elements apart): dst[r * lanes ..] op= each of the
    row's ``chunks`` column chunks of ``lanes`` (one repeat each, accumulated into the same lanes),
    then the ``tail`` columns past them. For rows longer than a repeat stride can reach."""

    op: VecBinary
    dst: str
    src: str
    lanes: int
    rows: int
    pitch: int
    chunks: int
    tail: int
    barrier: bool

    macro: ClassVar[str] = "vec_fold_rows"
    reads = property(lambda self: _one_of(self.dst, self.src))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"{self.op} every column chunk of each row of {self.src} into {self.dst}")


@dataclass
class VecScanRows(_VecOp):
    """Inclusive prefix op over the rows of a tile: row r of dst = row r of src op row r-1 of dst
    (from the last row up when ``reverse``); row 0 (or the last) is copied."""

    op: VecBinary
    dst: str
    src: str
    rows: int
    cols: int
    pitch: int
    reverse: bool
    barrier: bool

    macro: ClassVar[str] = "vec_scan_rows"
    reads = property(lambda self: _one_of(self.src, self.dst))
    writes = property(lambda self: (self.dst,))
    text = property(lambda self: f"prefix {self.op} over the rows of {self.src} -> {self.dst}"
                    + (" (reversed)" if self.reverse else ""))


@dataclass
class CrossCoreSetOp(AscOp):
    """CrossCoreSetFlag after lowering, on pipe ``on``; ``orders`` is the tile whose accesses chose
    that pipe, if any."""

    flag: int
    on: Pipe | None
    reason: str
    mode: int = 2
    sub: int | None = None
    orders: str | None = None
    transfer: int | None = None

    macro: ClassVar[str] = "cross_core_set"
    pipe = property(lambda self: self.on)

    @property
    def hw_id(self) -> int:
        """Mode 4 (dav-3510): an AIC names AIV 1's flag f as f + 16."""
        return self.flag + 16 * (self.sub or 0)

    text = property(lambda self: f"CrossCoreSetFlag<{self.mode}> {self.hw_id} ({self.reason})")


@dataclass
class CrossCoreWaitOp(AscOp):
    """CrossCoreWaitFlag after lowering, blocking pipe ``on``."""

    flag: int
    on: Pipe | None
    reason: str
    mode: int = 2
    sub: int | None = None
    orders: str | None = None
    transfer: int | None = None

    macro: ClassVar[str] = "cross_core_wait"
    pipe = property(lambda self: self.on)

    @property
    def hw_id(self) -> int:
        return self.flag + 16 * (self.sub or 0)

    text = property(lambda self: f"CrossCoreWaitFlag<{self.mode}> {self.hw_id} ({self.reason})")


# -- synchronisation (insert_sync)


@dataclass
class SetFlag(Stmt):
    event: Event
    event_id: EventId = EventId(0)
    reason: str = ""
    flag: int = -1  # index into Kernel.flags
    phase: SyncPhase = SyncPhase.STEADY
    slot: int | None = None  # prime/drain of a multi-slot flag: which slot


@dataclass
class WaitFlag(Stmt):
    event: Event
    event_id: EventId = EventId(0)
    reason: str = ""
    flag: int = -1
    phase: SyncPhase = SyncPhase.STEADY
    slot: int | None = None


@dataclass
class PipeBarrier(Stmt):
    pipe: Pipe
    reason: str = ""


@dataclass
class FlagRecord:
    """One row of the sync table."""

    index: int
    event: str
    event_id: str
    producer: str
    consumer: str
    buffer: str
    kind: str  # "in order RAW", "loop-carried WAR, 2 slots", "cross-core RAW, mode 2", ...
    producer_loc: SrcLoc | None = None
    consumer_loc: SrcLoc | None = None


TILE_OPS = (TileCopy, TileFill, TileGemm, TileReduce, TileParallel, TileAccumulate, TileCumsum, SimtRegion)
TRANSFER_OPS = (Send, Receive, CopyToPeerUb, CopyToPeerUbDual, CopyToPeerL1, CrossCoreSet, CrossCoreWait)
SYNC_OPS = (SetFlag, WaitFlag, PipeBarrier)

__all__ = [
    "AscOp", "Buffer", "CopyGmToL1", "FillL1", "CopyMxScalesGmToL1", "CopyGmToUb", "CopyToPeerL1", "CopyToPeerUb",
    "CopyToPeerUbDual", "CopyUbToGm",
    "CopyUbToPeerL1",
    "CrossCoreSet", "CrossCoreSetOp", "CrossCoreWait", "CrossCoreWaitOp", "DiagPrefix", "Direction", "EventId",
    "FirstIteration", "InitFlag", "FixpipeToGmArch3510", "FixpipeToGmV220", "FixpipeToPeerUb", "FixpipeToPeerUbDual",
    "FlagRecord",
    "GmWindow",
    "GridAxis", "If", "KFractals", "LoadData2D", "LoadData2DMx", "LoadData2DV2", "Loop", "Mmad", "MmadMx", "Param",
    "ParallelStore",
    "PipeBarrier", "Receive", "Region", "RepeatOperand", "SYNC_OPS", "ScalarConv", "ScalarExpr", "ScalarLit",
    "ScalarNeg", "ScalarStore", "ScalarValue", "Send", "ShapeVar", "SimtArg", "SimtCall", "SimtRegion", "static_int",
    "SetFlag", "Stmt", "TILE_OPS", "TRANSFER_OPS", "TileAccumulate",
    "TileCopy", "TileCumsum", "TileFill", "TileGemm", "TileParallel", "TileReduce", "Print",
    "UnitFlagLast", "UnitFlagReset", "UnitFlagUse", "VecTranspose",
    "Valid", "VecBinaryBcast", "VecBinaryBcastRows", "VecBinaryOp", "VecFusedMulAddBcast", "VecMulAddDstBcast",
    "VecBrcb", "VecCast", "VecCopy", "VecDiagFill", "VecDuplicate", "VecFold", "VecFoldInit", "VecFoldLoop",
    "VecScalar", "VecUnaryOp", "VecWholeReduce", "WaitFlag", "VecIndex", "VecCompare", "VecMaskLogic", "VecSelect",
    "VecFoldRows", "VecScanRows", "VecGather",
]
