"""Import a TileLang PrimFunc into the kernel IR (ascend_backend.ir).

Accepts the portable TileLang language as tilelang 0.1.15 builds it: one ``T.Kernel`` (block
thread bindings), tile buffers allocated in the root block, and a body of tile-op calls
(``tl.tileop.copy/fill/gemm/reduce``), ``T.Parallel`` nests and serial/pipelined loops.
Anything else is rejected here with the DSL line it comes from.
"""

from __future__ import annotations

import itertools
import math

import tvm
from tvm import tirx

from .cnames import entry_name
from .dtypes import dtype, known
from .errors import ShapeError, SrcLoc, UnsupportedError
from .ir import (
    AtomicOp,
    Buffer,
    BufferKind,
    GridAxis,
    If,
    Kernel,
    Launch,
    Loop,
    LoopKind,
    ParallelStore,
    Param,
    Print,
    Program,
    ReduceKind,
    Region,
    ScalarStore,
    Scope,
    ShapeVar,
    SimtRegion,
    TileCopy,
    TileCumsum,
    TileFill,
    TileGemm,
    TileParallel,
    TileReduce,
    static_int,
)
from .ir.program import global_scratch
from .threads import ABSORBED_TILE_OPS, ThreadUse, first_stmt, local_scope

_TILE_OPS = {
    "tl.tileop.copy": "copy",
    "tl.tileop.fill": "fill",
    "tl.tileop.gemm": "gemm",
    "tl.tileop.gemm_py": "gemm",
    "tl.tileop.gemm_blockscaled": "gemm_blockscaled",
    "tl.tileop.reduce": "reduce",
    "tl.tileop.atomicadd": "atomic_add",
    "tl.tileop.cumsum": "cumsum",
    "tl.tileop.finalize_reducer": "finalize_reducer",
}
# The DSL name a tilelang macro's statements come from, to find the user's line of the call.
_MACRO_NAMES = ("reduce_", "cumsum", "print", "atomic_add", "finalize_reducer", "fill", "clear", "copy")
# Constructs that only make sense on a GPU's threads, and what to write instead.
_GPU_HINT = ("the ascendc target runs tile programs: write the per-thread work as tile ops -- `T.copy` a "
             "window into a tile, element-wise code in `for i, j in T.Parallel(...)`, reductions with "
             "T.reduce_* or `acc[i] += x[i, j]` in T.Parallel; per-block scalar code (T.alloc_local / T.alloc_var) "
             "runs once per block (docs/supported.md shows the tile forms of TileLang's per-thread gemv and "
             "dequantize examples)")


def stmt_loc(node) -> SrcLoc | None:
    try:
        from tilelang.ir import get_stmt_span

        span = get_stmt_span(node)
    except Exception:  # noqa: BLE001 - spans are best effort
        span = None
    if span is None:
        return None
    return SrcLoc(str(span.source_name.name), int(span.line))


def buffer_loc(buf) -> SrcLoc | None:
    try:
        from tilelang.ir import get_buffer_span

        span = get_buffer_span(buf)
    except Exception:  # noqa: BLE001
        span = None
    if span is None:
        span = getattr(buf, "span", None)
    if span is None or span.source_name is None:
        return None
    return SrcLoc(str(span.source_name.name), int(span.line))


def _span_of(node):
    """The span of a node (statements keep theirs where tilelang.ir can read it)."""
    span = getattr(node, "span", None)
    if span is None:
        try:
            from tilelang.ir import get_stmt_span

            span = get_stmt_span(node)
        except Exception:  # noqa: BLE001 - spans are best effort
            span = None
    return span


def _rename_clashing_buffers(stmt, taken: set):
    """Give every tile allocated in ``stmt`` a name of its own.

    TVM buffers are told apart by identity, not by name: a T.macro called twice allocates two
    buffers of one name, and a tile may be named like a parameter. The IR and the passes find a
    buffer by its name (in tile-op regions and in the loads and stores of expressions alike), so a
    clashing allocation is replaced by a copy named ``<name>_<n>`` everywhere it is used.
    """
    renames: dict = {}

    def visit(n) -> bool:
        if isinstance(n, tirx.SBlock):
            for b in n.alloc_buffers:
                name = base = str(b.name)
                k = 1
                while name in taken:
                    name = f"{base}_{k}"
                    k += 1
                taken.add(name)
                if name != base:
                    renames[b] = tirx.Buffer(b.data, b.dtype, b.shape, b.strides, b.axis_separators, b.elem_offset,
                                             name, b.data_alignment, b.offset_factor, b.buffer_type, b.span)
        return True

    tirx.stmt_functor.pre_order_visit(stmt, visit)
    if not renames:
        return stmt

    def rewrite(n):
        if isinstance(n, tirx.BufferLoad) and n.buffer in renames:
            return tirx.BufferLoad(renames[n.buffer], n.indices, n.predicate, n.span)
        if isinstance(n, tirx.BufferStore) and n.buffer in renames:
            return tirx.BufferStore(renames[n.buffer], n.value, n.indices, n.predicate, _span_of(n))
        if isinstance(n, tirx.SBlock) and any(b in renames for b in n.alloc_buffers):
            return tirx.SBlock(n.iter_vars, n.reads, n.writes, n.name_hint, n.body, n.init,
                               [renames.get(b, b) for b in n.alloc_buffers], n.match_buffers, n.annotations,
                               _span_of(n))
        return None

    return tirx.stmt_functor.ir_transform(stmt, None, rewrite)


class _Importer:
    def __init__(self, func: tirx.PrimFunc, name: str, arch) -> None:
        self.func = func
        self.name = name
        self.arch = arch
        self.buffers: dict[str, Buffer] = {}
        self.tvm_buffers: dict = {}  # tvm Buffer -> name
        self.grid: list = []
        self.first_loc: SrcLoc | None = None
        self.last_loc: SrcLoc | None = None
        self.macro: tuple | None = None  # (tilelang file, line, user line) of the last macro statement
        self.macro_user: SrcLoc | None = None  # the user line the last macro call was found at
        self.thread_vars: set = set()  # the vars T.Kernel binds to thread indices (threads=...)
        self.thread_axes: list = [None, None, None]  # this launch's threadIdx.x/y/z vars
        self.launch_threads: tuple | None = None  # this launch's (x, y, z) threads
        self.tu: ThreadUse | None = None  # which statements of this launch are thread-level
        self.simt_regions: list = []  # this launch's SimtRegions
        # Scalar arguments and symbolic dimensions: what a grid extent or a tensor shape may use.
        self.arg_vars: set = {p for p in func.params if p not in func.buffer_map}
        self.shape_vars: dict = {}  # tvm Var -> [(parameter, dimension)] where it is a whole extent

    # -- helpers
    def _add_buffer(self, buf, kind: BufferKind, loc: SrcLoc | None) -> str:
        name = str(buf.name)
        base, n = name, 1
        while name in self.buffers:
            name = f"{base}_{n}"
            n += 1
        shape = []
        what = {BufferKind.PARAM: "tensor", BufferKind.GLOBAL: "T.alloc_global tensor"}.get(kind, "tile")
        for d, s in enumerate(buf.shape):
            if isinstance(s, tirx.IntImm | int):
                if int(s) <= 0:
                    raise UnsupportedError(
                        f"{what} '{buf.name}' has shape {_shape_text(buf.shape)}: dimension {d} is {int(s)}",
                        loc=loc, hint="every dimension of a tensor or tile must be at least 1")
                if int(s) >= 2**31:
                    # Indices along one dimension are int32 in the generated code (offsets over several
                    # dimensions are computed in 64 bits where the tensor needs it).
                    raise UnsupportedError(
                        f"{what} '{buf.name}' has shape {_shape_text(buf.shape)}: dimension {d} has 2**31 or more "
                        "elements", loc=loc, hint="split the dimension in two (a view of shape [n // k, k])")
                shape.append(int(s))
            elif kind is BufferKind.PARAM:
                self._shape_dim(buf, d, s, loc)
                shape.append(s)
            elif kind is BufferKind.GLOBAL:
                raise UnsupportedError(
                    f"T.alloc_global tensor '{buf.name}' has a symbolic shape {_shape_text(buf.shape)}: the launcher "
                    "allocates it from a size known at compile time", loc=loc,
                    hint="give it a constant shape (an upper bound), or pass the tensor as a kernel argument")
            else:
                raise UnsupportedError(
                    f"tile '{buf.name}' has a symbolic shape {_shape_text(buf.shape)}: tiles are planned into "
                    "on-chip memory at compile time, so their shapes must be constants",
                    loc=loc,
                    hint="give the tile a constant size (e.g. block_M) and let the copies take the runtime tail: "
                    "T.copy(A[bx * block_M, 0], tile) clips the window at the end of A",
                )
        if not known(buf.dtype):
            raise UnsupportedError(f"buffer '{buf.name}' has dtype {buf.dtype}, which the ascendc target does not know",
                                   loc=loc, hint="use float16, bfloat16, float32 or an integer type")
        self.buffers[name] = Buffer(name=name, shape=tuple(shape), dtype=dtype(buf.dtype), kind=kind, loc=loc,
                                    scope=Scope.GM if kind is BufferKind.GLOBAL else None)
        self.tvm_buffers[buf] = name
        return name

    def _shape_dim(self, buf, d: int, s, loc) -> None:
        """A symbolic dimension of a tensor parameter: record where each shape variable appears alone
        (the callable reads its value there); an expression of them must use only known ones."""
        if isinstance(s, tirx.Var):
            if not s.dtype.startswith("int"):
                raise UnsupportedError(f"tensor '{buf.name}' dimension {d} is '{s.name}' of dtype {s.dtype}",
                                       loc=loc, hint="declare symbolic dimensions as integers (T.symbolic / "
                                       "T.dynamic give int32)")
            self.shape_vars.setdefault(s, []).append((str(buf.name), d))
            return
        self._pending_dims.append((buf, d, s, loc))

    def _check_pending_dims(self) -> None:
        """A dimension that is an expression: each of its variables must be known from elsewhere, or
        be its only unknown with the dimension linear in it (``batch + 1``: the callable solves it)."""
        known_vars = set(self.shape_vars) | self.arg_vars
        for buf, d, s, loc in self._pending_dims:
            missing = [v for v in _free_vars(s) if v not in known_vars]
            if len(missing) == 1 and _linear(s, missing[0]) is not None:
                self.shape_vars.setdefault(missing[0], []).append((str(buf.name), d))
                known_vars.add(missing[0])
                continue
            if missing:
                raise UnsupportedError(
                    f"tensor '{buf.name}' dimension {d} is '{_dsl(s)}': the callable cannot derive "
                    f"'{missing[0].name}' from it, because no tensor has '{missing[0].name}' as a whole dimension",
                    loc=loc, hint=f"give some tensor a dimension that is exactly '{missing[0].name}' (or a + b * "
                    f"{missing[0].name}), or pass it as a scalar argument of the kernel")

    def buffer_name(self, buf, loc: SrcLoc | None = None) -> str:
        if buf not in self.tvm_buffers:
            loc = loc or self.last_loc
            base = next((b for b in self.tvm_buffers if b.data.same_as(buf.data)), None)
            if base is not None:  # T.reshape / T.view: a second Buffer over the same data
                raise UnsupportedError(
                    f"'{buf.name}' is a view of '{base.name}' with another shape or dtype (T.reshape / T.view), which "
                    "the ascendc target does not support", loc=loc,
                    hint=f"index '{base.name}' itself (e.g. {base.name}[i * n + j] for a 2-D view of a 1-D tile), or "
                    "allocate the tile in the shape the code uses")
            raise UnsupportedError(f"buffer '{buf.name}' is not a kernel parameter or a tile buffer of this kernel",
                                   loc=loc)
        return self.tvm_buffers[buf]

    # -- entry
    def run(self) -> Program:
        self._pending_dims: list = []
        params = []
        for p in self.func.params:
            if p in self.func.buffer_map:
                buf = self.func.buffer_map[p]
                loc = buffer_loc(buf)
                name = self._add_buffer(buf, BufferKind.PARAM, loc)
                self.buffers[name].scope = Scope.GM
                params.append(Param(name=name, dtype=dtype(buf.dtype), buffer=name, var=p))
            else:
                if not known(p.dtype):
                    raise UnsupportedError(f"scalar argument '{p.name}' has dtype {p.dtype}, which the ascendc target "
                                           "does not know")
                params.append(Param(name=str(p.name), dtype=dtype(p.dtype), var=p))
        self._check_pending_dims()
        scalar_names = {p.name for p in params if not p.is_tensor}
        shape_vars = [ShapeVar(name=str(v.name), var=v, dtype=dtype(v.dtype), sources=tuple(src),
                               param=v in self.arg_vars) for v, src in self.shape_vars.items()]
        for sv in shape_vars:
            if not sv.param and sv.name in scalar_names:
                raise UnsupportedError(f"the symbolic dimension '{sv.name}' has the name of a scalar argument",
                                       hint="give the two different names")
        launches = [self._launch(s) for s in self._top_level(self.func.body)]
        program = Program(name=self.name, arch=self.arch, params=params, launches=launches,
                          source_file=self.first_loc.file if self.first_loc else None, shape_vars=shape_vars,
                          globals=global_scratch(self.buffers))
        program.bounds_checks = check_windows(program)
        return program

    def _top_level(self, stmt) -> list:
        """The launches of the PrimFunc: each T.Kernel is a blockIdx-bound loop nest; several run in order."""
        while isinstance(stmt, tirx.SBlockRealize | tirx.SBlock):
            inner = stmt.block if isinstance(stmt, tirx.SBlockRealize) else stmt
            for buf in inner.alloc_buffers:
                self._add_buffer(buf, _kind_of(str(buf.scope())), buffer_loc(buf))
            stmt = inner.body
        items = list(stmt.seq) if isinstance(stmt, tirx.SeqStmt) else [stmt]
        launches = []
        for s in items:
            if isinstance(s, tirx.For) and s.thread_binding is not None and \
                    str(s.thread_binding.thread_tag).startswith("blockIdx"):
                launches.append(s)
            elif isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.IntImm):
                continue
            else:
                raise UnsupportedError(
                    f"{_describe(s)} outside `with T.Kernel(...)`: statements must sit inside a T.Kernel block",
                    loc=stmt_loc(s) or self.last_loc, hint="move it into the T.Kernel body")
        if not launches:
            raise UnsupportedError("the kernel has no `with T.Kernel(...)` block",
                                   hint="wrap the body in T.Kernel(grid...)")
        return launches

    def _launch(self, stmt) -> Launch:
        # Each launch sees the parameters and the PrimFunc-level allocations plus its own tiles.
        shared = dict(self.buffers), dict(self.tvm_buffers)
        self.grid = []
        self.bad_grid: UnsupportedError | None = None
        self.thread_axes, self.launch_threads, self.simt_regions = [None, None, None], None, []
        body = self._strip_launch(_rename_clashing_buffers(stmt, set(self.buffers)))
        if self.bad_grid is not None:  # raised after the tiles: a bad tile size is the better message
            raise self.bad_grid
        launch_vars = {v for v in self.thread_axes if v is not None}
        if launch_vars:
            body = self._thread_loops(body)
        self.tu = ThreadUse(body, launch_vars) if launch_vars else None
        stmts = self._stmts(body)
        buffers = dict(self.buffers)
        for name in self._per_thread_locals():
            buffers.pop(name, None)  # registers of each thread, declared inside its SIMT function
        buffers, stmts = split_column_tiles(buffers, stmts)
        launch = Launch(grid=self.grid, kernels={None: Kernel(core=None, buffers=buffers, body=stmts)})
        self.buffers, self.tvm_buffers = shared
        return launch

    def _thread_loops(self, body):
        """``for v in T.thread_binding(n, "threadIdx.x")`` inside a T.Kernel with threads: the
        block's threads along that axis (v is the thread index; with fewer trips than threads the
        others skip the body, as on the GPU)."""
        threads = self.launch_threads or DEFAULT_THREADS

        def rewrite(n):
            if not (isinstance(n, tirx.For) and n.thread_binding is not None):
                return None
            tag = str(n.thread_binding.thread_tag)
            if not tag.startswith("threadIdx."):
                return None
            axis = "xyz".index(tag[-1])
            tv = self.thread_axes[axis]
            loc = self._user_loc(n)
            ext = n.extent
            if tv is None or not isinstance(ext, tirx.IntImm) or int(ext) > threads[axis] or \
                    not (isinstance(n.min, tirx.IntImm) and int(n.min) == 0):
                raise UnsupportedError(
                    f"a loop bound to '{tag}' over {ext} threads in a T.Kernel with {threads[axis]} along that axis",
                    loc=loc, hint="bind at most the kernel's threads (T.Kernel(..., threads=...)), from 0, or use "
                    "T.get_thread_binding()")
            inner = tirx.stmt_functor.substitute(n.body, {n.loop_var: tv})
            if int(ext) < threads[axis]:
                inner = tirx.IfThenElse(tv < ext, inner, None, span=_span_of(n))
            return inner

        return tirx.stmt_functor.ir_transform(body, None, rewrite, ["tirx.For"])

    def _strip_launch(self, stmt):
        """Peel the block bindings, launch-thread binds and root blocks; collect allocations."""
        while True:
            if isinstance(stmt, tirx.For) and stmt.thread_binding is not None:
                tag = str(stmt.thread_binding.thread_tag)
                if tag.startswith("threadIdx.") and any(v is not None for v in self.thread_axes):
                    return stmt  # the block's threads (_thread_loops)
                if not tag.startswith("blockIdx"):
                    raise _gpu_only(f"a loop bound to the thread index '{tag}'", stmt_loc(stmt) or self.last_loc)
                self.grid.append(GridAxis(stmt.loop_var, self._grid_extent(stmt), tag))
                stmt = stmt.body
            elif isinstance(stmt, tirx.SBlockRealize):
                stmt = stmt.block
            elif isinstance(stmt, tirx.SBlock):
                for buf in stmt.alloc_buffers:
                    self._add_buffer(buf, _kind_of(str(buf.scope())), buffer_loc(buf))
                ann = dict(stmt.annotations) if stmt.annotations else {}
                if "tl.launch_threads" in ann:
                    self.launch_threads = tuple(int(x) for x in ann["tl.launch_threads"])
                stmt = stmt.body
            elif isinstance(stmt, tirx.SeqStmt):
                rest = [s for s in stmt.seq if not self._is_launch_bind(s)]
                if len(rest) == 1:
                    stmt = rest[0]
                    continue
                # Bind statements sit beside the body in a SeqStmt.
                return tirx.SeqStmt(rest) if len(rest) != len(stmt.seq) else stmt
            elif self._is_launch_bind(stmt):
                return tirx.SeqStmt([])
            else:
                return stmt

    def _grid_extent(self, stmt):
        """A grid extent: a constant in [1, MAX_BLOCKS], or an expression of the scalar arguments and
        symbolic dimensions (the callable computes it at each call)."""
        extent = stmt.extent
        loc = stmt_loc(stmt) or self.last_loc
        if isinstance(extent, tirx.IntImm):
            n = int(extent)
            if (n < 1 or n > MAX_BLOCKS) and self.bad_grid is None:
                hint = (f"numBlocks of an Ascend C launch is in [1, {MAX_BLOCKS}]; give each block more work (a "
                        "larger tile, or a loop over several tiles inside the kernel)") if n > MAX_BLOCKS else \
                    "a grid extent is a count of blocks: check the sizes it is computed from (T.ceildiv(n, block))"
                self.bad_grid = UnsupportedError(
                    f"T.Kernel grid extent {n} ('{stmt.loop_var}'): a launch has 1 to {MAX_BLOCKS} blocks",
                    loc=loc, hint=hint)
            return n
        missing = [v for v in _free_vars(extent) if v not in self.arg_vars and v not in self.shape_vars]
        if missing:
            raise UnsupportedError(
                f"T.Kernel grid extent '{_dsl(extent)}' uses '{missing[0].name}', which is neither a scalar argument "
                "nor a symbolic dimension of the kernel's tensors", loc=loc,
                hint="size the grid with constants, scalar arguments or symbolic dimensions")
        return extent

    def _is_launch_bind(self, s) -> bool:
        if type(s).__name__ == "Bind" and "launch_thread" in str(s.value):
            self.thread_vars.add(s.var)
            if isinstance(s.value, tirx.Call) and s.value.args and isinstance(s.value.args[0], tirx.IntImm):
                self.thread_axes[int(s.value.args[0])] = s.var
            return True
        return False

    def _check_threads(self, stmt, loc) -> None:
        """A use of a thread index (threadIdx via T.get_thread_binding) is GPU-only: say so at its line."""
        if not self.thread_vars:
            return
        used = []

        def visit(n):
            if isinstance(n, tirx.Var) and n in self.thread_vars:
                used.append(n)

        tirx.stmt_functor.post_order_visit(stmt, visit)
        if used:
            raise _gpu_only(f"the thread index '{used[0]}' (T.get_thread_binding / the threads of T.Kernel)", loc)

    def _stmts(self, stmt) -> list:
        if isinstance(stmt, tirx.SeqStmt):
            if self.tu is not None:
                return self._seq_with_threads(list(stmt.seq))
            out = []
            for s in _inline_binds(stmt.seq):
                out.extend(self._stmts(s))
            return out
        if self.tu is not None and self.tu.is_thread_level(stmt):
            return self._seq_with_threads([stmt])
        loc = self._user_loc(stmt)
        if not isinstance(stmt, tirx.For | tirx.IfThenElse | tirx.SBlockRealize | tirx.SBlock | tirx.AttrStmt):
            self._check_threads(stmt, loc)
        elif isinstance(stmt, tirx.For | tirx.IfThenElse):
            self._check_threads(stmt.extent if isinstance(stmt, tirx.For) else stmt.condition, loc)
        if isinstance(stmt, tirx.Evaluate):
            if isinstance(stmt.value, tirx.IntImm):
                return []  # a no-op (e.g. what `None` in the DSL leaves)
            return self._tile_call(stmt.value, loc)
        if isinstance(stmt, tirx.For):
            if stmt.kind == tirx.ForKind.PARALLEL:
                par = self._parallel(stmt, loc)
                return self._row_gather(par) or [par]
            if stmt.thread_binding is not None:
                tag = str(stmt.thread_binding.thread_tag)
                if tag.startswith("blockIdx"):
                    raise UnsupportedError(
                        "a second T.Kernel nested inside a T.Kernel body", loc=loc,
                        hint="write the kernels one after the other (each `with T.Kernel(...)` at the top level): "
                        "they run in order")
                raise _gpu_only(f"a loop bound to the thread index '{tag}'", loc)
            ann = dict(stmt.annotations) if stmt.annotations else {}
            stages = int(ann.get("num_stages", 1)) if "num_stages" in ann else 1
            kind = LoopKind.PIPELINED if "num_stages" in ann else LoopKind.SERIAL
            if stmt.kind == tirx.ForKind.UNROLLED:
                kind = LoopKind.UNROLLED
            step = getattr(stmt, "step", None)
            if step is not None and not isinstance(step, tirx.IntImm):
                raise UnsupportedError(f"loop '{stmt.loop_var}' has a step of {step}, which is not a constant",
                                       loc=loc, hint="use a constant step")
            start = stmt.min
            body = self._stmts(stmt.body)  # imported (and checked) even when it never runs
            if isinstance(stmt.extent, tirx.IntImm) and stmt.extent.value <= 0:
                return []  # T.Pipelined(0), T.serial(0): the body never runs
            return [
                Loop(
                    var=stmt.loop_var,
                    extent=stmt.extent,
                    body=body,
                    kind=kind,
                    num_stages=max(1, stages),
                    start=int(start) if isinstance(start, tirx.IntImm) else start,
                    step=int(step) if step is not None else 1,
                    loc=loc,
                )
            ]
        if isinstance(stmt, tirx.While):
            return [Loop(var=None, extent=None, body=self._stmts(stmt.body), kind=LoopKind.WHILE,
                         cond=stmt.condition, loc=loc)]
        if isinstance(stmt, tirx.IfThenElse):
            else_body = self._stmts(stmt.else_case) if stmt.else_case is not None else []
            return [If(cond=stmt.condition, then_body=self._stmts(stmt.then_case), else_body=else_body, loc=loc)]
        if isinstance(stmt, tirx.SBlockRealize | tirx.SBlock):
            inner = stmt.block if isinstance(stmt, tirx.SBlockRealize) else stmt
            for buf in inner.alloc_buffers:
                self._add_buffer(buf, _kind_of(str(buf.scope())), buffer_loc(buf))
            return self._stmts(inner.body)
        if isinstance(stmt, tirx.BufferStore):
            name = self.buffer_name(stmt.buffer)
            _check_depth(stmt.value, loc)
            return [ScalarStore(buffer=name, indices=tuple(stmt.indices), value=stmt.value, loc=loc)]
        if isinstance(stmt, tirx.AttrStmt):
            if str(stmt.attr_key) == "threadblock_swizzle_pattern":
                # T.use_swizzle: the order in which blocks are rasterised over a 2-D grid (an L2
                # locality hint for GPUs). Ascend blocks take their indices from GetBlockIdx(); the
                # kernel computes the same result either way, so the hint is accepted and dropped.
                return self._stmts(stmt.body)
            if str(stmt.attr_key) == "reduce_scope":  # T.comm_reducer around T.tvm_thread_allreduce
                raise _gpu_only("a cross-thread reduction (T.comm_reducer / T.tvm_thread_allreduce)", loc)
            raise UnsupportedError(f"the attribute '{stmt.attr_key}' ({_describe(stmt)}) is not supported by the "
                                   "ascendc target", loc=loc)
        raise UnsupportedError(f"{_describe(stmt)} is not supported by the ascendc target", loc=loc)

    # -- thread-level code (SIMT regions; ascend_backend/threads.py says which statements)
    def _seq_with_threads(self, items: list) -> list:
        """A statement list of a kernel with threads: each run of thread-level statements is one
        SimtRegion, the rest is imported as tile code. A T.fill between thread-level statements is
        shared out among the threads (it stays in the run); a scalar let of a thread-level value is
        a local of the SIMT function, the others are substituted as usual."""
        out: list = []
        pending: list = []
        n = 0
        while n < len(items):
            s = items[n]
            if isinstance(s, tirx.Bind):
                if s.var in self.tu.bound:
                    pending.append(s)
                else:
                    items[n + 1:] = [tirx.stmt_functor.substitute(x, {s.var: s.value}) for x in items[n + 1:]]
                n += 1
                continue
            if self.tu.is_thread_level(s) or (pending and _is_fill(s) and self._thread_level_follows(items[n + 1:])):
                pending.append(s)
            else:
                if pending:
                    out.append(self._simt_region(pending))
                    pending = []
                out.extend(self._stmts(s))
            n += 1
        if pending:
            out.append(self._simt_region(pending))
        return out

    def _thread_level_follows(self, rest: list) -> bool:
        """Is a thread-level statement next after some fills (so that the fills join its run)?"""
        for x in rest:
            if isinstance(x, tirx.Bind) or _is_fill(x) and not self.tu.is_thread_level(x):
                continue
            return self.tu.is_thread_level(x)
        return False

    def _simt_region(self, stmts: list) -> SimtRegion:
        first = next((x for x in stmts if not isinstance(x, tirx.Bind)), stmts[0])
        loc = self._user_loc(first)
        if not self.arch.simt:
            # the statement that uses the thread (a per-thread local's first store is thread-level
            # only through a later use of it)
            direct = next((x for x in stmts if _first_direct(self.tu, x) is not None), None)
            if direct is not None:
                at = _first_direct(self.tu, direct)
                what = f"{_describe(at)} uses {self.tu.direct_use(at)}: it is thread-level code"
                loc = self._user_loc(at) or loc
            else:
                what = f"{_describe(first)} is thread-level code (it uses a per-thread local)"
            raise UnsupportedError(
                f"{what}, and {self.arch.name} has no SIMT: the SIMT API (asc_vf_call, __simt_vf__) "
                "exists on the Ascend 950 only (dav-3510); Atlas A2/A3 run tile programs", loc=loc,
                hint="compile for dav-3510 (target 'ascendc' or 'ascendc:dav-3510'), whose Vector cores run "
                "thread-level code as SIMT functions; for dav-c220 write the per-thread work as tile ops "
                "(T.copy, T.Parallel, T.reduce_*; docs/supported.md)")
        # T.Kernel without threads=: the backend picks the count; TileLang's CUDA backend runs 128
        threads = self.launch_threads or DEFAULT_THREADS
        nthreads = math.prod(threads)
        from .arch import SIMT_MAX_THREADS

        if nthreads > SIMT_MAX_THREADS:
            raise UnsupportedError(
                f"T.Kernel has {nthreads} threads ({' x '.join(map(str, threads))}); a SIMT thread block has at most "
                f"{SIMT_MAX_THREADS} (blockDim.x * blockDim.y * blockDim.z, SIMT 编程模型)", loc=loc,
                hint="give each thread more elements (a T.serial loop over them) and launch fewer threads")
        tvars = tuple(self.thread_axes)
        zero = tirx.IntImm("int32", 0)
        tid = zero
        stride = 1
        for v, n in zip(tvars, threads, strict=True):
            if v is not None and n > 1:
                tid = tid + v * stride if stride != 1 else (v if tid is zero else tid + v)
            stride *= n
        body = tuple(self._allreduce(_share_fills(x, self.tu.locals, tid, nthreads), tid, threads, loc)
                     for x in stmts)
        writes, local_names = [], []
        loads_only, atomics = [], []

        def visit(n):
            if isinstance(n, tirx.BufferStore):
                writes.append(n.buffer)
            elif isinstance(n, tirx.BufferLoad):
                loads_only.append(n.buffer)
            elif isinstance(n, tirx.Call) and _op_name(n) == "tl.access_ptr" and isinstance(n.args[0], tirx.BufferLoad):
                atomics.append(n.args[0].buffer)  # an atomic's address: read and written

        for x in body:
            tirx.stmt_functor.post_order_visit(x, visit)
        for b in [*writes, *loads_only, *atomics]:
            name = self.buffer_name(b, loc)
            if name in self.tu.locals and local_scope(b):
                if name not in local_names:
                    local_names.append(name)
                continue
        read_names = _unique(self.buffer_name(b, loc) for b in [*loads_only, *atomics])
        write_names = _unique(self.buffer_name(b, loc) for b in [*writes, *atomics])
        region = SimtRegion(body=body, threads=tuple(threads), thread_vars=tvars,
                            locals=tuple(self.buffers[n] for n in local_names),
                            reads=tuple(n for n in read_names if n not in local_names),
                            writes=tuple(n for n in write_names if n not in local_names), loc=loc)
        self.simt_regions.append(region)
        return region

    def _allreduce(self, stmt, tid, threads: tuple, loc):
        """``T.tvm_thread_allreduce`` over thread axes (inside its T.comm_reducer attribute): each
        thread puts its value in a UB tile, a barrier, each thread combines the values of the threads
        that differ from it only along the reduced axes, a barrier (the tile is free again)."""

        def rewrite(n):
            if not (isinstance(n, tirx.AttrStmt) and str(n.attr_key) == "reduce_scope"):
                return None
            red = n.node
            call = n.body.value if isinstance(n.body, tirx.Evaluate) else None
            if call is None or _op_name(call) not in ("tirx.tvm_thread_allreduce", "tir.tvm_thread_allreduce") or \
                    int(call.args[0]) != 1 or len(red.lhs) != 1:
                return None
            value, result = call.args[1], call.args[3]
            axes = [v for v in call.args[4:] if isinstance(v, tirx.Var)]
            if not isinstance(result, tirx.BufferLoad) or not axes or \
                    any(v not in self.thread_axes for v in axes):
                return None
            dt = str(value.dtype)
            name = f"allreduce_{len(self.buffers)}"
            scratch = tirx.decl_buffer((math.prod(threads),), dt, name=name, scope="shared.dyn")
            self._add_buffer(scratch, BufferKind.SHARED, loc)
            strides = {}
            st = 1
            for v, t in zip(self.thread_axes, threads, strict=True):
                strides[v] = st
                st *= t
            barrier = tirx.Evaluate(tirx.call_intrin("int32", "tirx.tvm_storage_sync", tirx.StringImm("shared")))
            stmts = [tirx.BufferStore(scratch, value, [tid], span=_span_of(n)), barrier]
            base = tid
            for v in axes:
                base = _simplify(base - v * strides[v])
            acc = tirx.BufferLoad(scratch, [base])
            others = [base]
            for v in axes:
                n_ax = threads[self.thread_axes.index(v)]
                others = [_simplify(o + j * strides[v]) for o in others for j in range(n_ax)]
            for o in others[1:]:
                acc = tirx.stmt_functor.substitute(red.result[0], {red.lhs[0]: acc,
                                                                    red.rhs[0]: tirx.BufferLoad(scratch, [o])})
            stmts += [tirx.BufferStore(result.buffer, acc, result.indices, span=_span_of(n)), barrier]
            return tirx.SeqStmt(stmts, span=_span_of(n))

        return tirx.stmt_functor.ir_transform(stmt, None, rewrite, ["tirx.AttrStmt"])

    def _per_thread_locals(self) -> list:
        """The per-thread locals of this launch; each lives in one SIMT function (a thread's registers
        do not outlive it)."""
        seen: dict = {}
        for r in self.simt_regions:
            for b in r.locals:
                if b.name in seen and seen[b.name] is not r:
                    raise UnsupportedError(
                        f"the per-thread local '{b.name}' is used by thread-level code on both sides of tile code "
                        f"(the thread-level code at {seen[b.name].loc} and at this line): each run of thread-level "
                        "statements is one SIMT function, and a thread's locals live only as long as it", loc=r.loc,
                        hint=f"keep '{b.name}' in a T.alloc_shared tile indexed by the thread, or move the tile ops "
                        "before or after the thread-level code")
                seen[b.name] = r
        return list(seen)

    def _user_loc(self, stmt) -> SrcLoc | None:
        """The DSL line of ``stmt``; for statements a tilelang macro built (T.reduce_*, T.cumsum,
        T.print, ...) the line of the user's call: the first call of such a macro after the previous
        user line. The statements of one macro call share its line (their spans inside the macro
        keep increasing; a new call starts over)."""
        loc = stmt_loc(stmt)
        if loc is None:
            return self.last_loc
        if _is_tilelang_file(loc.file):
            prev = self.macro
            if prev is not None and prev[0] == loc.file and prev[1] < loc.line:
                self.macro = (loc.file, loc.line, prev[2])
                return prev[2]
            found = _find_call_line(self.last_loc, self.macro_user) or self.last_loc
            self.macro = (loc.file, loc.line, found)
            self.macro_user = found
            return found
        self.macro = None
        self.macro_user = None
        if self.first_loc is None:
            self.first_loc = loc
        self.last_loc = loc
        return loc

    def _parallel(self, stmt, loc) -> TileParallel:
        loop_vars, extents = [], []
        body = stmt
        while isinstance(body, tirx.For) and body.kind == tirx.ForKind.PARALLEL:
            if not isinstance(body.extent, tirx.IntImm):
                raise UnsupportedError(
                    f"T.Parallel extent '{_dsl(body.extent)}' of '{body.loop_var}' is not a constant", loc=loc,
                    hint="T.Parallel runs over a tile: give it the tile's constant shape and mask the runtime tail "
                    "with T.if_then_else")
            loop_vars.append(body.loop_var)
            extents.append(int(body.extent))
            body = body.body
        stores: list[ParallelStore] = []

        def collect(s, cond=None):
            sl = stmt_loc(s) or loc
            if sl is not None and _is_tilelang_file(sl.file):
                sl = loc
            if isinstance(s, tirx.SeqStmt):
                for x in _inline_binds(s.seq):
                    collect(x, cond)
            elif isinstance(s, tirx.BufferStore):
                value = s.value
                if cond is not None:  # `if c: x[i, j] = v` is x[i, j] = c ? v : x[i, j]
                    value = tirx.if_then_else(cond, value, tirx.BufferLoad(s.buffer, s.indices))
                _check_depth(value, sl)
                stores.append(ParallelStore(tirx.BufferStore(s.buffer, value, s.indices), sl))
            elif isinstance(s, tirx.IfThenElse):
                c = s.condition if cond is None else tirx.And(cond, s.condition)
                collect(s.then_case, c)
                if s.else_case is not None:
                    neg = tirx.Not(s.condition)
                    collect(s.else_case, neg if cond is None else tirx.And(cond, neg))
            elif isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.Call) and _op_name(s.value) in (
                    "tl.atomic_add_elem_op", "tl.atomic_addx2_elem_op", "tl.atomic_addx4_elem_op"):
                dst, value = s.value.args[0], s.value.args[1]
                target = dst.args[0] if isinstance(dst, tirx.Call) and _op_name(dst) == "tl.access_ptr" else dst
                if not isinstance(target, tirx.BufferLoad):
                    raise UnsupportedError(f"T.atomic_add into {dst} inside T.Parallel: the destination must be an "
                                           "element of a tensor, e.g. C[i, j]", loc=sl)
                if cond is not None:
                    raise UnsupportedError("a conditional T.atomic_add inside T.Parallel is not supported", loc=sl,
                                           hint="add 0 where the condition fails: "
                                           "T.atomic_add(C[i, j], T.if_then_else(cond, v, 0))")
                stores.append(ParallelStore(tirx.BufferStore(target.buffer, value, target.indices), sl,
                                            atomic=AtomicOp.ADD))
            elif isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.IntImm):
                return
            else:
                raise UnsupportedError(
                    f"{_describe(s)} inside T.Parallel is not supported (assignments, `if` around them and "
                    "T.atomic_add are)", loc=sl)

        collect(body)
        for ps in stores:
            read: list = []  # (not raised inside TVM's visitor: it would arrive as a RuntimeError)
            tirx.stmt_functor.post_order_visit(
                ps.store.value, lambda n, acc=read: acc.append(n.buffer) if isinstance(n, tirx.BufferLoad) else None)
            for buf in [ps.store.buffer, *read]:  # validate
                self.buffer_name(buf, ps.loc)
            self._check_threads(ps.store, ps.loc)
            _check_tile_indices(ps, loop_vars, extents)
        return TileParallel(vars=tuple(loop_vars), extents=tuple(extents), stores=tuple(stores), loc=loc)

    def _row_gather(self, par: TileParallel) -> list | None:
        """``t[i, j] = G[..., idx[i], ..., c0 + j]``: a tile whose rows come from rows of a global
        tensor chosen by values read from memory (sparse MLA's gather of the top-k keys). Each row
        is one copy of a contiguous GM row, issued by the scalar unit in a loop over the rows:
        ``for r in T.serial(rows): T.copy(G[..., idx[r], ..., c0:c0 + cols], t[r, :])``. None when
        the T.Parallel is anything else (it stays element-wise)."""
        from tvm import arith

        if len(par.vars) != 2 or len(par.stores) != 1 or par.stores[0].atomic is not None:
            return None
        st = par.stores[0].store
        i, j = par.vars
        v = st.value
        tile = self.buffers.get(self.buffer_name(st.buffer))
        if tile is None or tile.kind not in (BufferKind.SHARED, BufferKind.FRAGMENT) or len(tile.shape) != 2:
            return None
        if not (len(st.indices) == 2 and st.indices[0].same_as(i) and st.indices[1].same_as(j)) or \
                tuple(par.extents) != tuple(tile.shape):
            return None
        if not isinstance(v, tirx.BufferLoad) or v.buffer not in self.tvm_buffers:
            return None
        src = self.buffers[self.buffer_name(v.buffer)]
        if not src.kind.in_gm:
            return None

        def uses(e, var) -> bool:
            found = []
            tirx.stmt_functor.post_order_visit(e, lambda n: found.append(n) if isinstance(n, tirx.Var)
                                               and n.same_as(var) else None)
            return bool(found)

        def loads_with(e, var) -> bool:
            found = []
            tirx.stmt_functor.post_order_visit(e, lambda n: found.append(n) if isinstance(n, tirx.BufferLoad)
                                               and any(uses(x, var) for x in n.indices) else None)
            return bool(found)

        idx = list(v.indices)
        last = idx[-1]
        coef = arith.detect_linear_equation(last, [j])
        if len(coef) != 2 or not (isinstance(coef[0], tirx.IntImm) and int(coef[0]) == 1) or uses(coef[1], i):
            return None
        if any(uses(x, j) for x in idx[:-1]) or not any(loads_with(x, i) for x in idx[:-1]):
            return None  # an ordinary window (affine rows) or something else
        r = tirx.Var(f"{i.name}_row", "int32")
        base = [tirx.stmt_functor.substitute(x, {i: r}) for x in idx[:-1]] + [coef[1]]
        for d in range(len(base) - 1):
            if loads_with(idx[d], i):
                # An index read from memory may point past the tensor (sparse MLA pads its top-k
                # list with seq_kv, and masks those rows): the gather reads the nearest row
                # instead of memory outside the tensor.
                size = src.shape[d]
                hi = tirx.IntImm("int32", size - 1) if isinstance(size, int) else size - 1
                base[d] = tirx.Min(tirx.Max(base[d], tirx.IntImm("int32", 0)), hi)
        zero = tirx.IntImm("int32", 0)
        cols = tile.shape[1]
        copy = TileCopy(src=Region(src.name, tuple(base), (1,) * (len(idx) - 1) + (cols,)),
                        dst=Region(tile.name, (r, zero), (1, cols)), loc=par.loc)
        return [Loop(var=r, extent=tirx.IntImm("int32", tile.shape[0]), body=[copy], kind=LoopKind.SERIAL,
                     loc=par.loc)]

    def _region(self, arg, loc) -> Region:
        """Decode a ``tl.region(buf[base...], access, extents...)`` (or a BufferLoad/Buffer)."""
        if isinstance(arg, tirx.Call) and str(arg.op.name) == "tl.region":
            load = arg.args[0]
            extents = []
            for d, e in enumerate(arg.args[2:]):
                if not isinstance(e, tirx.IntImm):
                    e = _simplify(e)  # H1 - H0 of a slice H0:H1 often cancels to a constant
                if not isinstance(e, tirx.IntImm):
                    raise UnsupportedError(
                        f"the window of '{load.buffer.name}' has the extent '{_dsl(e)}' in dimension {d}, which is not "
                        "a constant", loc=loc,
                        hint="a T.copy window has the constant shape of its tile (e.g. A[bx * 32 : bx * 32 + 32, :]); "
                        "at the end of a tensor the copy takes the tail by itself")
                extents.append(int(e))
            return Region(self.buffer_name(load.buffer), tuple(load.indices), tuple(extents))
        if isinstance(arg, tirx.BufferLoad):
            return Region(self.buffer_name(arg.buffer), tuple(arg.indices), (1,) * len(arg.indices))
        raise UnsupportedError(f"unexpected tile-op operand {arg}", loc=loc)

    def _fill_scalars(self, buf, value, loc) -> list:
        """T.fill / T.clear of a T.alloc_var or T.alloc_local: scalar stores, one per element (a
        local holds a few scalars; the scalar unit writes them)."""
        shape = [static_int(x) for x in buf.shape]
        if any(n is None for n in shape):
            raise UnsupportedError(f"T.fill of the local '{buf.name}' of shape {list(buf.shape)}: a local has a "
                                   "constant shape", loc=loc)
        dt = str(buf.dtype)
        if isinstance(value, tirx.IntImm | tirx.FloatImm) and str(value.dtype) != dt:
            value = tirx.const(float(value.value) if "float" in dt else int(value.value), dt)
        elif str(value.dtype) != dt:
            value = tirx.Cast(dt, value)
        name = self.buffer_name(buf)
        if math.prod(shape) <= 16:
            return [ScalarStore(buffer=name, indices=tuple(tirx.IntImm("int32", i) for i in idx), value=value, loc=loc)
                    for idx in itertools.product(*(range(n) for n in shape))]
        idx = [tirx.Var(f"{buf.name}_i{d}", "int32") for d in range(len(shape))]
        body: list = [ScalarStore(buffer=name, indices=tuple(idx), value=value, loc=loc)]
        for v, n in reversed(list(zip(idx, shape, strict=True))):
            body = [Loop(var=v, extent=tirx.IntImm("int32", n), body=body, kind=LoopKind.SERIAL, loc=loc)]
        return body

    def _tile_call(self, call, loc) -> list:
        if not isinstance(call, tirx.Call):
            raise UnsupportedError(f"expression statement {call} is not supported", loc=loc)
        name = _op_name(call)
        if name == "tirx.call_extern" and call.args and str(call.args[0]).strip('"') == "debug_print_var":
            msg = call.args[1] if len(call.args) > 2 else None
            label = "value" if msg is None else msg.value if isinstance(msg, tirx.StringImm) else str(msg).strip('"')
            if label.startswith("expr<") and label.endswith(">"):
                label = label[5:-1]
            return [Print(label=label, value=call.args[-1], loc=loc)]
        if name in _GPU_ONLY:
            raise _gpu_only(_GPU_ONLY[name], loc)
        if name in _REGISTER_HINTS:
            # register-allocation hints for GPU warp groups: the Ascend cores have no register file to
            # divide, and the kernel computes the same result without them, so they are dropped
            return []
        if name not in _TILE_OPS:
            short = name.replace("tl.tileop.", "T.").replace("tl.", "T.").replace("tirx.", "T.")
            raise UnsupportedError(
                f"op '{short}' is not supported by the ascendc target",
                loc=loc,
                hint="supported tile ops: T.copy, T.fill/T.clear, T.gemm, T.gemm_blockscaled, T.reduce_*, T.cumsum, "
                "T.atomic_add, "
                "T.Parallel; see docs/supported.md",
            )
        op = _TILE_OPS[name]
        a = call.args
        if op == "copy":
            return [TileCopy(src=self._region(a[0], loc), dst=self._region(a[1], loc), loc=loc)]
        if op == "atomic_add":
            return [TileCopy(src=self._region(a[0], loc), dst=self._region(a[1], loc), atomic=AtomicOp.ADD, loc=loc)]
        if op == "cumsum":
            return [TileCumsum(src=self._region(a[0], loc), dst=self._region(a[1], loc), dim=int(a[2]),
                               reverse=bool(a[3]) if len(a) > 3 else False, loc=loc)]
        if op == "finalize_reducer":
            # A reducer accumulates straight into its buffer here (one vector program per block, no
            # per-thread copies to combine): finalizing it is a no-op.
            return []
        if op == "fill":
            dst = self._region(a[0], loc)
            target = a[0].args[0].buffer if isinstance(a[0], tirx.Call) else getattr(a[0], "buffer", None)
            if target is not None and str(target.scope()) in ("local", "local.var"):
                return self._fill_scalars(target, a[1], loc)
            return [TileFill(dst=dst, value=a[1], loc=loc)]
        if op == "reduce":
            kind = str(a[2].value) if hasattr(a[2], "value") else str(a[2])
            if kind not in {k.value for k in ReduceKind}:
                raise UnsupportedError(f"T.reduce_{kind} is not supported (sum, max, min, abssum, absmax are)", loc=loc)
            return [TileReduce(src=self._region(a[0], loc), dst=self._region(a[1], loc), kind=ReduceKind(kind),
                               dim=int(a[3]), clear=bool(a[4]), loc=loc)]
        if op == "gemm_blockscaled":
            return [self._gemm_blockscaled(call, loc)]
        # gemm: A, B, C, trans_A, trans_B, M, N, K, policy, clear_accum, ...
        return [TileGemm(a=self._region(a[0], loc), b=self._region(a[1], loc), c=self._region(a[2], loc),
                         trans_a=bool(a[3]), trans_b=bool(a[4]), clear_accum=bool(a[9]) if len(a) > 9 else False,
                         loc=loc)]

    def _gemm_blockscaled(self, call, loc) -> TileGemm:
        """T.gemm_blockscaled: the 13 slots of T.gemm, then SFA, SFB and k_start; the K elements
        one scale covers in the annotations. The MX form (MmadMx) has one E8M0 scale per 32 K
        elements, and the scale tiles cover exactly the K of this gemm."""
        a = call.args
        ann = dict(call.annotations) if getattr(call, "annotations", None) is not None else {}
        for which in ("a", "b"):
            g = ann.get(f"sf_{which}_granularity_k")
            if g is None or int(g) != 32:
                raise UnsupportedError(
                    f"T.gemm_blockscaled with sf_{which}_granularity_k={g}: the ascendc target lowers block-scaled "
                    "gemms to MmadMx, whose E8M0 scales each cover 32 consecutive K elements (MmadMx page)",
                    loc=loc, hint="pass sf_a_granularity_k=32, sf_b_granularity_k=32; scales of coarser blocks (e.g. "
                    "one per 128 K elements) are the same scale repeated: expand them before the kernel "
                    "(torch.repeat_interleave(s, 4, dim=-1))")
        return TileGemm(a=self._region(a[0], loc), b=self._region(a[1], loc), c=self._region(a[2], loc),
                        trans_a=bool(a[3]), trans_b=bool(a[4]), clear_accum=bool(a[9]),
                        scale_a=self._region(a[13], loc), scale_b=self._region(a[14], loc), loc=loc)


# Threads of a T.Kernel that gives none (TileLang's CUDA default, which its examples assume).
DEFAULT_THREADS = (128, 1, 1)

# numBlocks of a kernel launch <<<numBlocks, ...>>> is in [1, 65535] (Ascend C guide, SIMD BuiltIn
# keywords, "kernel function configuration").
MAX_BLOCKS = 65535


def _unique(names) -> list:
    return list(dict.fromkeys(names))


def _first_direct(tu: ThreadUse, stmt):
    """The first statement under ``stmt`` (pre-order) that is thread-level by itself, else None."""
    return first_stmt(stmt, lambda n: tu.direct_use(n) is not None)


def _is_fill(stmt) -> bool:
    return isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.Call) and \
        _op_name(stmt.value) in ABSORBED_TILE_OPS


def _share_fills(stmt, per_thread: set, tid, nthreads: int):
    """The T.fill / T.clear calls in thread-level code as stores: a per-thread local is filled whole
    by each thread; a tile (UB) or tensor is shared out, thread t storing elements t, t + nthreads,
    ... (TileLang shares a fill out among the block's threads the same way)."""

    def fill_loop(call, sp):
        dst, value = call.args[0], call.args[1]
        if isinstance(dst, tirx.Call) and _op_name(dst) == "tl.region":
            load, extents = dst.args[0], [int(e) for e in dst.args[2:]]
        elif isinstance(dst, tirx.BufferLoad):
            load, extents = dst, [1] * len(dst.indices)
        else:
            return None
        buf, base = load.buffer, list(load.indices)
        if str(value.dtype) != str(buf.dtype):
            value = tirx.Cast(str(buf.dtype), value)
        total = math.prod(extents)
        k = tirx.Var(f"{buf.name}_fill", "int32")
        own = buf.name in per_thread and local_scope(buf)
        flat = k if own else k * nthreads + tid
        idx, inner = [], 1
        for d in reversed(range(len(extents))):
            e = extents[d]
            part = flat if inner == 1 else tirx.FloorDiv(flat, inner)
            if d > 0:
                part = tirx.FloorMod(part, e)
            idx.append(base[d] + part)
            inner *= e
        store = tirx.BufferStore(buf, value, list(reversed(idx)), span=sp)
        trips = total if own else (total + nthreads - 1) // nthreads
        if not own and total % nthreads:
            store = tirx.IfThenElse(flat < total, store, None, span=sp)
        return tirx.For(k, 0, trips, tirx.ForKind.SERIAL, store, span=sp)

    def rewrite(n):
        if isinstance(n, tirx.Evaluate) and isinstance(n.value, tirx.Call) and _op_name(n.value) in ABSORBED_TILE_OPS:
            return fill_loop(n.value, _span_of(n))
        return None

    return tirx.stmt_functor.ir_transform(stmt, None, rewrite, ["tirx.Evaluate"])


def _free_vars(e) -> list:
    """The TVM Vars ``e`` uses, in first-use order."""
    out: list = []

    def visit(n):
        if isinstance(n, tirx.Var) and not any(n.same_as(v) for v in out):
            out.append(n)

    tirx.stmt_functor.post_order_visit(e, visit)
    return out


def _linear(e, v) -> tuple | None:
    """(a, b) with e == a * v + b for integers a != 0, b; else None."""
    import tvm

    coef = tvm.arith.detect_linear_equation(e, [v])
    if len(coef) != 2 or not all(isinstance(c, tirx.IntImm) for c in coef) or int(coef[0]) == 0:
        return None
    return int(coef[0]), int(coef[1])


def _simplify(e):
    import tvm

    return tvm.arith.Analyzer().simplify(e)


def _shape_text(shape) -> str:
    return "[" + ", ".join(_dsl(x) for x in shape) + "]"


def _dsl(e) -> str:
    """A shape, extent or index as the DSL reads it (TVM prints ceildiv as (x + 31) // 32)."""
    if isinstance(e, tirx.IntImm):
        return str(int(e))
    if isinstance(e, tirx.PrimExpr) and not isinstance(e, tirx.Var):
        e = _simplify(e)  # bx * 64 + -16 -> bx * 64 - 16
    return str(int(e)) if isinstance(e, tirx.IntImm) else str(e)


def _check_tile_indices(ps: ParallelStore, loop_vars: list, extents: list) -> None:
    """An element of a tile that a T.Parallel store writes, or its value reads, outside the tile's
    shape for some index of the loop is an error at the line (on a GPU the fragment layout may hide
    it; here it would be another buffer's bytes). Indices that depend on more than the loop's own
    variables are not judged; loads under T.if_then_else / Select are not either (they may be masked)."""
    from .bounds import Fit, Ranges, fit

    ranges = Ranges()
    for v, n in zip(loop_vars, extents, strict=True):
        ranges = ranges.with_var(v, 0, n)
    store, value = ps.store, ps.store.value
    if isinstance(value, tirx.Call) and _op_name(value) == "tirx.if_then_else" and \
            isinstance(value.args[2], tirx.BufferLoad) and value.args[2].buffer.same_as(store.buffer):
        ranges, value = ranges.with_cond(value.args[0]), value.args[1]  # `if c: t[i] = v`
    accesses = [(store.buffer, store.indices, "writes")]

    def loads(e) -> None:
        if isinstance(e, tirx.BufferLoad):
            accesses.append((e.buffer, e.indices, "reads"))
        if isinstance(e, tirx.Select):  # its branches may be masked: only the condition is judged
            kids = [e.condition]
        elif isinstance(e, tirx.Call) and _op_name(e) == "tirx.if_then_else":
            kids = [e.args[0]]
        else:
            kids = _expr_children(e)
        for k in kids:
            loads(k)

    loads(value)
    for buf, indices, verb in accesses:
        if str(buf.scope()) == "global" or len(indices) != len(buf.shape):
            continue
        for d, (ix, size) in enumerate(zip(indices, buf.shape, strict=True)):
            if static_int(size) is None:
                continue
            v = fit(ranges, ix, 1, size)
            if v.fit in (Fit.OUTSIDE, Fit.NEGATIVE):
                at = v.hi if v.fit is Fit.OUTSIDE else v.lo
                elem = f"{buf.name}[{', '.join(_dsl(x) for x in indices)}]"
                raise ShapeError(
                    f"T.Parallel {verb} {elem} outside the tile '{buf.name}' of shape {[int(x) for x in buf.shape]}: "
                    f"its index in dimension {d} reaches {at}", loc=ps.loc,
                    hint=f"allocate '{buf.name}' with the extent the loop runs over, or run the loop over the tile's "
                    "own shape")


def check_windows(program: Program) -> list:
    """Check every T.copy window into a global tensor against the tensor's shape: a window that can
    start before the tensor or past its end is an error at its DSL line (a window across the end
    is fine: the copy takes the tail). Returns the checks that depend on symbolic dimensions, for
    the callable to run with each call's shapes."""
    from .bounds import BoundsCheck, Fit, Ranges, fit

    runtime: list = []

    def window_text(r: Region) -> str:
        dims = [f"{_dsl(b)} : {_dsl(b + e)}" for b, e in zip(r.base, r.extents, strict=True)]
        return f"{r.buffer}[{', '.join(dims)}]"

    def check(r: Region, kernel: Kernel, ranges: Ranges, loc) -> None:
        buf = kernel.buffers.get(r.buffer)
        if buf is None or buf.kind not in (BufferKind.PARAM, BufferKind.GLOBAL) or len(r.base) != len(buf.shape):
            return
        for d, (b, e, size) in enumerate(zip(r.base, r.extents, buf.shape, strict=True)):
            n = e if isinstance(e, int) else (int(e) if isinstance(e, tirx.IntImm) else None)
            if n is None:
                continue
            v = fit(ranges, b, n, size)
            what = f"the T.copy window {window_text(r)}"
            if v.fit is Fit.NEGATIVE:
                raise UnsupportedError(
                    f"{what} can start before the beginning of '{r.buffer}': in dimension {d} its start can be "
                    f"{v.lo}", loc=loc, hint="a window's start must be >= 0 for every block and iteration")
            if v.fit is Fit.OUTSIDE:
                raise UnsupportedError(
                    f"{what} can lie outside '{r.buffer}': dimension {d} has {size} elements and the window can start "
                    f"at {v.hi}", loc=loc,
                    hint=f"make the grid or loop cover the tensor exactly (T.ceildiv({size}, {n}) steps of {n}), or "
                    f"guard the copy with `if start < {size}:`")
            if v.fit is Fit.UNKNOWN and isinstance(size, tirx.PrimExpr) and not isinstance(size, tirx.IntImm):
                deps = _free_vars(b)
                if not any(isinstance(x, tirx.BufferLoad) for x in _loads(b)) and deps:
                    runtime.append(BoundsCheck(r.buffer, d, b, n, size, ranges, loc, window_text(r)))

    def walk_body(body: list, kernel: Kernel, ranges: Ranges) -> None:
        for s in body:
            if isinstance(s, Loop) and (s.var is None or s.extent is None):  # a while loop: no range
                walk_body(s.body, kernel, ranges)
            elif isinstance(s, Loop):
                step = s.step if isinstance(s.step, int) else 1
                span = s.extent if step == 1 else (s.extent - 1) * step + 1
                walk_body(s.body, kernel, ranges.with_var(s.var, s.start, span))
            elif isinstance(s, If):
                walk_body(s.then_body, kernel, ranges.with_cond(s.cond))
                walk_body(s.else_body, kernel, ranges.with_cond(tirx.Not(s.cond)))
            elif isinstance(s, TileCopy):
                check(s.src, kernel, ranges, s.loc)
                check(s.dst, kernel, ranges, s.loc)

    for lc in program.launches:
        ranges = Ranges()
        for ax in lc.grid:
            ranges = ranges.with_var(ax.var, 0, ax.extent)
        for k in lc.kernels.values():
            walk_body(k.body, k, ranges)
    return runtime


def _loads(e) -> list:
    out: list = []
    if isinstance(e, tirx.PrimExpr):
        tirx.stmt_functor.post_order_visit(e, lambda n: out.append(n) if isinstance(n, tirx.BufferLoad) else None)
    return out


#: The deepest expression tree the passes take. They walk expressions recursively; a tree this deep
#: compiles with room to spare below Python's default recursion limit (about 480 levels do).
MAX_EXPR_DEPTH = 256
_EXPR_CHILDREN = ("a", "b", "value", "args", "indices", "condition", "true_value", "false_value")


def _expr_children(node) -> list:
    """The sub-expressions of an expression node (operands, call arguments, load indices)."""
    out: list = []
    for attr in _EXPR_CHILDREN:
        child = getattr(node, attr, None) if isinstance(node, tvm.ir.PrimExpr) else None
        if isinstance(child, tvm.ir.PrimExpr):
            out.append(child)
        elif child is not None and not isinstance(child, str | int | float) and hasattr(child, "__len__"):
            out.extend(c for c in child if isinstance(c, tvm.ir.PrimExpr))
    return out


def expr_depth(expr) -> int:
    """The depth of an expression tree (a leaf is 1), walked without recursion."""
    deepest, stack = 0, [(expr, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in _expr_children(node))
    return deepest


def _check_depth(expr, loc) -> None:
    depth = expr_depth(expr)
    if depth > MAX_EXPR_DEPTH:
        raise UnsupportedError(
            f"this expression is nested {depth} levels deep; the ascendc target takes at most {MAX_EXPR_DEPTH}",
            loc=loc, hint="split it into several statements through a temporary tile (t[i, j] = <first part>; "
            "x[i, j] = t[i, j] + <rest>)")


def _inline_binds(seq) -> list:
    """The statements of ``seq`` with each scalar let (e.g. `loop_range = T.min(...)`, or
    `q_idx = ...` inside a T.Parallel body) substituted into the statements after it."""
    seq = list(seq)
    out = []
    for n, s in enumerate(seq):
        if isinstance(s, tirx.Bind):
            seq[n + 1:] = [tirx.stmt_functor.substitute(x, {s.var: s.value}) for x in seq[n + 1:]]
        else:
            out.append(s)
    return out


def _is_tilelang_file(path: str) -> bool:
    import os

    import tilelang

    return os.path.abspath(path).startswith(os.path.dirname(os.path.abspath(tilelang.__file__)))


def _find_call_line(after: SrcLoc | None, previous: SrcLoc | None) -> SrcLoc | None:
    """Statements built inside a tilelang macro carry the macro's span; find the user's call: the
    first line after the previous user statement (and after the previous macro call found) that
    calls one of tilelang's statement macros."""
    if after is None:
        return None
    try:
        with open(after.file) as f:
            lines = f.readlines()
    except OSError:
        return None
    start = max(after.line, previous.line if previous is not None and previous.file == after.file else 0)
    for n in range(start, len(lines)):
        code = lines[n].split("#", 1)[0]
        if any(f"T.{m}" in code for m in _MACRO_NAMES):
            return SrcLoc(after.file, n + 1)
    return None


def _op_name(call) -> str:
    return str(call.op.name) if hasattr(call.op, "name") else str(call.op)


def _describe(stmt) -> str:
    """What a TIR statement is, in the user's words."""
    names = {"IfThenElse": "an `if` statement", "BufferStore": "an assignment", "For": "a loop",
             "AttrStmt": "an attribute (T.attr / T.annotate)", "Evaluate": "an expression statement",
             "SeqStmt": "a statement block", "AssertStmt": "an assert", "Allocate": "an allocation",
             "While": "a while loop", "Bind": "a scalar let"}
    kind = type(stmt).__name__
    if isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.Call):
        return f"a call of '{_op_name(stmt.value).replace('tl.tileop.', 'T.').replace('tl.', 'T.')}'"
    return names.get(kind, f"a statement of type {kind}")


_GPU_ONLY = {
    "tl.tileop.mma": "an mma instruction", "tl.ptx_mma": "a PTX mma instruction",
    "tl.ptx_ldmatrix": "ldmatrix", "tirx.ptx_ldmatrix": "ldmatrix", "tirx.ptx_mma": "a PTX mma instruction",
    "tl.tvm_storage_sync": "a thread barrier (__syncthreads)", "tirx.tvm_storage_sync": "a thread barrier",
    "tl.sync_threads": "a thread barrier (T.sync_threads)", "tl.shuffle_elect": "a warp election",
    "tirx.tvm_thread_allreduce": "a cross-thread reduction (T.tvm_thread_allreduce)",
    "tir.tvm_thread_allreduce": "a cross-thread reduction (T.tvm_thread_allreduce)",
}


_REGISTER_HINTS = ("tl.no_set_max_nreg", "tl.set_max_nreg", "tl.annotate_producer_reg_dealloc",
                   "tl.annotate_consumer_reg_alloc")


def _gpu_only(what: str, loc) -> UnsupportedError:
    return UnsupportedError(f"{what} is a GPU thread-level construct, which the ascendc target does not have",
                            loc=loc, hint=_GPU_HINT)


def _kind_of(scope: str) -> BufferKind:
    if scope == "global":
        return BufferKind.GLOBAL
    if scope in ("local", "local.var"):
        return BufferKind.LOCAL
    return BufferKind.FRAGMENT if "fragment" in scope or scope.startswith("local") else BufferKind.SHARED


def split_column_tiles(buffers: dict, body: list) -> tuple[dict, list]:
    """A 2-D tile that every op touches as a column range of all its rows (sparse MLA's
    ``Q_shared[:, :D]`` and ``Q_shared[:, D:]``, copied and multiplied separately) becomes one tile
    per range: the ranges are then whole tiles, in the layouts each memory gives them."""
    import dataclasses

    from .ir import fresh_name, walk

    ranges: dict = {}  # tile -> set of (c0, width); None once it is used any other way
    fields = {TileCopy: ("src", "dst"), TileGemm: ("a", "b", "c")}
    for s in walk(body):
        regions = [getattr(s, f) for f in fields.get(type(s), ())]
        touched = _stmt_buffers(s) - {r.buffer for r in regions}
        for n in touched:
            ranges[n] = None
        for r in regions:
            b = buffers.get(r.buffer)
            if b is None or b.kind not in (BufferKind.SHARED, BufferKind.FRAGMENT) or len(b.shape) != 2:
                continue
            base = [_static(x) for x in r.base]
            ext = [_static(x) for x in r.extents]
            if ranges.get(r.buffer, set()) is None or None in base or None in ext or base[0] != 0 or \
                    ext[0] != b.shape[0]:
                ranges[r.buffer] = None
                continue
            ranges.setdefault(r.buffer, set()).add((base[1], ext[1]))
    parts: dict = {}
    for n, rs in ranges.items():
        if not rs or len(rs) < 2 and next(iter(rs)) == (0, buffers[n].shape[1]):
            continue
        spans = sorted(rs)
        if any(a[0] + a[1] > b[0] for a, b in zip(spans, spans[1:], strict=False)):
            continue  # overlapping ranges share elements: keep one tile
        b = buffers.pop(n)
        for c0, w in spans:
            name = fresh_name(f"{n}_c{c0}", set(buffers) | set(ranges))
            buffers[name] = dataclasses.replace(b, name=name, shape=(b.shape[0], w))
            parts[(n, c0, w)] = name
    if not parts:
        return buffers, body

    def region(r: Region) -> Region:
        c0 = _static(r.base[1]) if r.buffer not in buffers and len(r.base) == 2 else None
        name = parts.get((r.buffer, c0, _static(r.extents[1]))) if c0 is not None else None
        if name is None:
            return r
        zero = tirx.IntImm("int32", 0)
        return Region(name, (zero, zero), tuple(r.extents))

    def go(items: list) -> list:
        out = []
        for s in items:
            if isinstance(s, Loop):
                s = dataclasses.replace(s, body=go(s.body))
            elif isinstance(s, If):
                s = dataclasses.replace(s, then_body=go(s.then_body), else_body=go(s.else_body))
            elif type(s) in fields:
                s = dataclasses.replace(s, **{f: region(getattr(s, f)) for f in fields[type(s)]})
            out.append(s)
        return out

    return buffers, go(body)


def _static(x):
    return int(x) if isinstance(x, int | tirx.IntImm) else None


def _stmt_buffers(s) -> set:
    """Every buffer a statement names (for split_column_tiles: the ones it does not take apart)."""
    from ascend_backend.passes.partition import tile_buffers

    return set(tile_buffers(s))


def import_primfunc(func: tirx.PrimFunc, arch, name: str | None = None) -> Program:
    """Import ``func`` into the kernel IR (stage ``frontend``)."""
    if not isinstance(func, tirx.PrimFunc):
        raise UnsupportedError(f"expected a TileLang PrimFunc, got {type(func).__name__}",
                               hint=_not_primfunc_hint(func))
    gname = name or (str(func.attrs["global_symbol"]) if func.attrs and "global_symbol" in func.attrs else "main")
    return _Importer(func, entry_name(gname), arch).run()


def _not_primfunc_hint(obj) -> str:
    """What to pass instead of ``obj``."""
    if type(obj).__name__ == "JITImpl":
        return ("a @tilelang.jit function: decorate it with @ascend_backend.jit instead, or pass its PrimFunc "
                "(f.get_tir(...))")
    if callable(obj):
        name = getattr(obj, "__name__", "f")
        return f"'{name}' is a function: pass the PrimFunc it returns, e.g. ascend_backend.compile({name}(...))"
    return "pass the @T.prim_func kernel (or the PrimFunc a kernel factory returns)"


__all__ = ["import_primfunc", "stmt_loc", "buffer_loc", "tvm", "MAX_BLOCKS"]
