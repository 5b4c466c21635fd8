"""A small builder for Programs, so that each pass can be tested on a few lines of IR.

    b = ProgramBuilder("k", arch="dav-c220")
    A = b.tensor("A", (128, 64), "float16")
    x = b.tile("x", (32, 64), "float16")
    with b.launch(grid=[4]) as (bx,):
        b.copy(A[bx * 32, 0], x)          # a start index; the extents come from the other side
        with b.loop("k", 2, stages=2) as k:
            b.parallel((32, 64), lambda i, j: [(x, (i, j), x.load(i, j) * 2.0)])
        b.copy(x, A[bx * 32, 0])
    program = b.build()                   # what the frontend would give: one unpartitioned kernel

Expressions are TVM PrimExprs (block and loop variables are tvm Vars), so everything a pass
sees is what it would see from a real TileLang kernel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tvm import tirx

from ..arch import get_arch
from ..dtypes import dtype
from .enums import AtomicOp, BufferKind, LoopKind, ReduceKind, Scope
from .nodes import (
    Buffer,
    GridAxis,
    If,
    Loop,
    ParallelStore,
    Param,
    Region,
    ScalarStore,
    ShapeVar,
    SimtRegion,
    TileCopy,
    TileCumsum,
    TileFill,
    TileGemm,
    TileParallel,
    TileReduce,
)
from .program import Kernel, Launch, Program, global_scratch


def _imm(x):
    return tirx.IntImm("int32", x) if isinstance(x, int) else x


@dataclass
class Handle:
    """A buffer of the program being built: index it for a region start, ``load`` it for a value."""

    buffer: Buffer
    tvm_buffer: object

    @property
    def name(self) -> str:
        return self.buffer.name

    def __getitem__(self, idx) -> _At:
        idx = idx if isinstance(idx, tuple) else (idx,)
        return _At(self, tuple(_imm(i) for i in idx))

    def window(self, *start, extents: tuple) -> _At:
        """A region of explicit extents (a strided column, a window of another shape than the tile)."""
        return _At(self, tuple(_imm(i) for i in start), tuple(extents))

    def load(self, *idx):
        return tirx.BufferLoad(self.tvm_buffer, [_imm(i) for i in idx])

    def full(self) -> Region:
        zero = tirx.IntImm("int32", 0)
        return Region(self.name, (zero,) * len(self.buffer.shape), tuple(self.buffer.shape))

    def region(self, *start, extents: tuple) -> Region:
        """A window of the tile as a tile op's operand (``T.gemm(a[16:48, 0:32], ...)``)."""
        return Region(self.name, tuple(_imm(i) for i in start), tuple(extents))


@dataclass
class _At:
    handle: Handle
    start: tuple
    extents: tuple | None = None  # None: the other side's shape


class ProgramBuilder:
    def __init__(self, name: str = "k", arch: str = "dav-c220") -> None:
        self.name = name
        self.arch = get_arch(arch)
        self.params: list[Param] = []
        self.buffers: dict[str, Buffer] = {}
        self.launches: list[Launch] = []
        self.shape_vars: list[ShapeVar] = []
        self._stack: list[list] | None = None

    # -- declarations
    def _buffer(self, name: str, shape: tuple, dt: str, kind: BufferKind, scope=None) -> Handle:
        buf = Buffer(name=name, shape=tuple(shape), dtype=dtype(dt), kind=kind, scope=scope)
        self.buffers[name] = buf
        return Handle(buf, tirx.decl_buffer(shape, dt, name))

    def tensor(self, name: str, shape: tuple, dt: str) -> Handle:
        """A GM tensor argument."""
        h = self._buffer(name, shape, dt, BufferKind.PARAM, Scope.GM)
        self.params.append(Param(name=name, dtype=dtype(dt), buffer=name))
        return h

    def scalar(self, name: str, dt: str = "int32"):
        """A scalar argument (its tvm Var)."""
        v = tirx.Var(name, dt)
        self.params.append(Param(name=name, dtype=dtype(dt), var=v))
        return v

    def dim(self, name: str, dt: str = "int32"):
        """A symbolic dimension (T.dynamic): its tvm Var, for tensor shapes and grid extents."""
        v = tirx.Var(name, dt)
        self.shape_vars.append(ShapeVar(name=name, var=v, dtype=dtype(dt)))
        return v

    def global_(self, name: str, shape: tuple, dt: str) -> Handle:
        """A T.alloc_global tensor."""
        return self._buffer(name, shape, dt, BufferKind.GLOBAL, Scope.GM)

    def tile(self, name: str, shape: tuple, dt: str, fragment: bool = False) -> Handle:
        return self._buffer(name, shape, dt, BufferKind.FRAGMENT if fragment else BufferKind.SHARED)

    def local(self, name: str, shape: tuple = (1,), dt: str = "int32") -> Handle:
        """A scalar local (T.alloc_local / T.alloc_var)."""
        return self._buffer(name, shape, dt, BufferKind.LOCAL)

    def thread_local(self, name: str, shape: tuple = (1,), dt: str = "float32") -> Handle:
        """A per-thread local of thread-level code (registers of each thread: no kernel buffer)."""
        buf = Buffer(name=name, shape=tuple(shape), dtype=dtype(dt), kind=BufferKind.LOCAL)
        return Handle(buf, tirx.decl_buffer(shape, dt, name, scope="local"))

    # -- structure
    @contextlib.contextmanager
    def launch(self, grid: list) -> Iterator[tuple]:
        """One T.Kernel: yields its block index variables."""
        axes = [GridAxis(tirx.Var(f"b{'xyz'[n]}", "int32"), e if isinstance(e, int) else _imm(e),
                         f"blockIdx.{'xyz'[n]}") for n, e in enumerate(grid)]
        body: list = []
        self._stack = [body]
        yield tuple(ax.var for ax in axes)
        self._stack = None
        kernel = Kernel(core=None, buffers=dict(self.buffers), body=body)
        self.launches.append(Launch(grid=axes, kernels={None: kernel}))

    @contextlib.contextmanager
    def loop(self, var: str, extent, stages: int = 1, start=0, step: int = 1) -> Iterator:
        v = tirx.Var(var, "int32")
        body: list = []
        self._stack.append(body)
        yield v
        self._stack.pop()
        kind = LoopKind.PIPELINED if stages > 1 else LoopKind.SERIAL
        self._emit(Loop(var=v, extent=_imm(extent), body=body, kind=kind, num_stages=stages, start=start, step=step))

    @contextlib.contextmanager
    def if_(self, cond) -> Iterator:
        node = If(cond=cond, then_body=[])
        self._stack.append(node.then_body)
        yield node
        self._stack.pop()
        self._emit(node)

    @contextlib.contextmanager
    def else_(self, node: If) -> Iterator:
        self._stack.append(node.else_body)
        yield node
        self._stack.pop()

    def _emit(self, s) -> None:
        self._stack[-1].append(s)

    # -- ops
    @staticmethod
    def _regions(src, dst, extents: tuple | None = None) -> tuple[Region, Region]:
        def shape_of(x):
            return tuple(x.buffer.shape) if isinstance(x, Handle) else None

        def region(x, ext):
            if isinstance(x, Handle):
                return x.full()
            return Region(x.handle.name, x.start, tuple(x.extents if x.extents is not None else ext))

        ext = extents or shape_of(src) or shape_of(dst)
        return region(src, ext), region(dst, ext)

    def copy(self, src, dst, atomic: AtomicOp | None = None, extents: tuple | None = None) -> None:
        """``extents``: the window's, when neither side is a whole tile (GM -> GM, a row of a tensor)."""
        s, d = self._regions(src, dst, extents)
        self._emit(TileCopy(src=s, dst=d, atomic=atomic))

    def atomic_add(self, src, dst) -> None:
        self.copy(src, dst, atomic=AtomicOp.ADD)

    def fill(self, dst: Handle, value) -> None:
        self._emit(TileFill(dst=dst.full(), value=value))

    def gemm(self, a: Handle | Region, b: Handle | Region, c: Handle, trans_a: bool = False, trans_b: bool = False,
             clear: bool = False) -> None:
        """``a`` and ``b`` are whole tiles (handles) or windows of them (``Handle.region``)."""
        def whole(x):
            return x if isinstance(x, Region) else x.full()
        self._emit(TileGemm(a=whole(a), b=whole(b), c=c.full(), trans_a=trans_a, trans_b=trans_b, clear_accum=clear))

    def reduce(self, kind: str, src: Handle, dst: Handle, dim: int = 1, clear: bool = True) -> None:
        self._emit(TileReduce(src=src.full(), dst=dst.full(), kind=ReduceKind(kind), dim=dim, clear=clear))

    def cumsum(self, src: Handle, dst: Handle, dim: int = 0, reverse: bool = False) -> None:
        self._emit(TileCumsum(src=src.full(), dst=dst.full(), dim=dim, reverse=reverse))

    def parallel(self, extents: tuple, body: Callable) -> None:
        """``body(*loop_vars)`` returns [(handle, indices, value)] assignments."""
        vs = tuple(tirx.Var("ij"[n] if n < 2 else f"v{n}", "int32") for n in range(len(extents)))
        stores = []
        for h, idx, value in body(*vs):
            value = value if isinstance(value, tirx.PrimExpr) else tirx.const(value, str(h.buffer.dtype))
            stores.append(ParallelStore(tirx.BufferStore(h.tvm_buffer, value, [_imm(i) for i in idx])))
        self._emit(TileParallel(vars=vs, extents=tuple(extents), stores=tuple(stores)))

    def simt(self, threads: tuple, body: Callable, locals_: tuple = (), loc=None) -> None:
        """Thread-level code (what the frontend makes of statements that use the thread):
        ``body(tx, ty, tz)`` returns TIR statements (the thread variables of axes with one thread are
        None); ``locals_`` are ``thread_local`` handles. Reads and writes are the buffers its loads
        and stores name, an atomic's address counting as both."""
        threads = tuple(threads) + (1,) * (3 - len(threads))
        tvars = tuple(tirx.Var(f"t{'xyz'[n]}", "int32") if n == 0 or threads[n] > 1 else None for n in range(3))
        stmts = tuple(body(*tvars))
        own = {h.name for h in locals_}
        reads: list = []
        writes: list = []

        def visit(n):
            if isinstance(n, tirx.BufferStore):
                writes.append(n.buffer.name)
            elif isinstance(n, tirx.BufferLoad):
                reads.append(n.buffer.name)
            elif isinstance(n, tirx.Call) and getattr(n.op, "name", "") == "tl.access_ptr":
                writes.append(n.args[0].buffer.name)

        for st in stmts:
            tirx.stmt_functor.post_order_visit(st, visit)
        self._emit(SimtRegion(body=stmts, threads=threads, thread_vars=tvars,
                              locals=tuple(h.buffer for h in locals_),
                              reads=tuple(dict.fromkeys(n for n in reads if n not in own)),
                              writes=tuple(dict.fromkeys(n for n in writes if n not in own)), loc=loc))

    def scalar_store(self, dst: Handle, idx: tuple, value) -> None:
        self._emit(ScalarStore(buffer=dst.name, indices=tuple(_imm(i) for i in idx), value=value))

    def build(self) -> Program:
        return Program(name=self.name, arch=self.arch, params=list(self.params), launches=list(self.launches),
                       shape_vars=list(self.shape_vars), globals=global_scratch(self.buffers))


__all__ = ["Handle", "ProgramBuilder"]
