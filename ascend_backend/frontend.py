"""Import a TileLang PrimFunc into the kernel IR (ascend_backend.ir).

Accepts the portable TileLang language as tilelang 0.1.15 builds it: one ``T.Kernel`` (block
thread bindings), tile buffers allocated in the root block, and a body of tile-op calls
(``tl.tileop.copy/fill/gemm/reduce``), ``T.Parallel`` nests and serial/pipelined loops.
Anything else is rejected here with the DSL line it comes from.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from .dtypes import dtype, known
from .errors import SrcLoc, UnsupportedError
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
    TileCopy,
    TileCumsum,
    TileFill,
    TileGemm,
    TileParallel,
    TileReduce,
)

_TILE_OPS = {
    "tl.tileop.copy": "copy",
    "tl.tileop.fill": "fill",
    "tl.tileop.gemm": "gemm",
    "tl.tileop.gemm_py": "gemm",
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
             "T.reduce_*; per-block scalar code (T.alloc_local / T.alloc_var) runs once per block")


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

    # -- helpers
    def _add_buffer(self, buf, kind: BufferKind, loc: SrcLoc | None) -> str:
        name = str(buf.name)
        base, n = name, 1
        while name in self.buffers:
            name = f"{base}_{n}"
            n += 1
        shape = []
        for s in buf.shape:
            if not isinstance(s, tirx.IntImm | int):
                raise UnsupportedError(
                    f"buffer '{buf.name}' has a symbolic shape {list(buf.shape)}",
                    loc=loc,
                    hint="give the kernel static shapes (the ascendc target compiles one kernel per shape)",
                )
            shape.append(int(s))
        if not known(buf.dtype):
            raise UnsupportedError(f"buffer '{buf.name}' has dtype {buf.dtype}, which the ascendc target does not know",
                                   loc=loc, hint="use float16, bfloat16, float32 or an integer type")
        self.buffers[name] = Buffer(name=name, shape=tuple(shape), dtype=dtype(buf.dtype), kind=kind, loc=loc)
        self.tvm_buffers[buf] = name
        return name

    def buffer_name(self, buf) -> str:
        if buf not in self.tvm_buffers:
            raise UnsupportedError(f"buffer '{buf.name}' is not a kernel parameter or a tile buffer of this kernel")
        return self.tvm_buffers[buf]

    # -- entry
    def run(self) -> Program:
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
        launches = [self._launch(s) for s in self._top_level(self.func.body)]
        return Program(name=self.name, arch=self.arch, params=params, launches=launches,
                       source_file=self.first_loc.file if self.first_loc else None)

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
        body = self._strip_launch(_rename_clashing_buffers(stmt, set(self.buffers)))
        stmts = self._stmts(body)
        launch = Launch(grid=self.grid, kernels={None: Kernel(core=None, buffers=dict(self.buffers), body=stmts)})
        self.buffers, self.tvm_buffers = shared
        return launch

    def _strip_launch(self, stmt):
        """Peel the block bindings, launch-thread binds and root blocks; collect allocations."""
        while True:
            if isinstance(stmt, tirx.For) and stmt.thread_binding is not None:
                tag = str(stmt.thread_binding.thread_tag)
                if not tag.startswith("blockIdx"):
                    raise _gpu_only(f"a loop bound to the thread index '{tag}'", stmt_loc(stmt) or self.last_loc)
                extent = stmt.extent
                self.grid.append(GridAxis(stmt.loop_var, int(extent) if isinstance(extent, tirx.IntImm) else extent,
                                          tag))
                stmt = stmt.body
            elif isinstance(stmt, tirx.SBlockRealize):
                stmt = stmt.block
            elif isinstance(stmt, tirx.SBlock):
                for buf in stmt.alloc_buffers:
                    self._add_buffer(buf, _kind_of(str(buf.scope())), buffer_loc(buf))
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

    def _is_launch_bind(self, s) -> bool:
        if type(s).__name__ == "Bind" and "launch_thread" in str(s.value):
            self.thread_vars.add(s.var)
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
            out = []
            for s in _inline_binds(stmt.seq):
                out.extend(self._stmts(s))
            return out
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
                return [self._parallel(stmt, loc)]
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
            return [
                Loop(
                    var=stmt.loop_var,
                    extent=stmt.extent,
                    body=self._stmts(stmt.body),
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
            return [ScalarStore(buffer=name, indices=tuple(stmt.indices), value=stmt.value, loc=loc)]
        if isinstance(stmt, tirx.AttrStmt):
            if str(stmt.attr_key) == "threadblock_swizzle_pattern":
                # T.use_swizzle: the order in which blocks are rasterised over a 2-D grid (an L2
                # locality hint for GPUs). Ascend blocks take their indices from GetBlockIdx(); the
                # kernel computes the same result either way, so the hint is accepted and dropped.
                return self._stmts(stmt.body)
            raise UnsupportedError(f"the attribute '{stmt.attr_key}' ({_describe(stmt)}) is not supported by the "
                                   "ascendc target", loc=loc)
        raise UnsupportedError(f"{_describe(stmt)} is not supported by the ascendc target", loc=loc)

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
            self.buffer_name(ps.store.buffer)  # validate
            self._check_threads(ps.store, ps.loc)
        return TileParallel(vars=tuple(loop_vars), extents=tuple(extents), stores=tuple(stores), loc=loc)

    def _region(self, arg, loc) -> Region:
        """Decode a ``tl.region(buf[base...], access, extents...)`` (or a BufferLoad/Buffer)."""
        if isinstance(arg, tirx.Call) and str(arg.op.name) == "tl.region":
            load = arg.args[0]
            extents = tuple(int(e) if isinstance(e, tirx.IntImm) else e for e in arg.args[2:])
            return Region(self.buffer_name(load.buffer), tuple(load.indices), extents)
        if isinstance(arg, tirx.BufferLoad):
            return Region(self.buffer_name(arg.buffer), tuple(arg.indices), (1,) * len(arg.indices))
        raise UnsupportedError(f"unexpected tile-op operand {arg}", loc=loc)

    def _tile_call(self, call, loc) -> list:
        if not isinstance(call, tirx.Call):
            raise UnsupportedError(f"expression statement {call} is not supported", loc=loc)
        name = _op_name(call)
        if name == "tirx.call_extern" and call.args and str(call.args[0]).strip('"') == "debug_print_var":
            label = str(call.args[1]).strip('"') if len(call.args) > 2 else "value"
            if label.startswith("expr<") and label.endswith(">"):
                label = label[5:-1]
            return [Print(label=label, value=call.args[-1], loc=loc)]
        if name in _GPU_ONLY:
            raise _gpu_only(_GPU_ONLY[name], loc)
        if name not in _TILE_OPS:
            short = name.replace("tl.tileop.", "T.").replace("tl.", "T.").replace("tirx.", "T.")
            raise UnsupportedError(
                f"op '{short}' is not supported by the ascendc target",
                loc=loc,
                hint="supported tile ops: T.copy, T.fill/T.clear, T.gemm, T.reduce_*, T.cumsum, T.atomic_add, "
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
            return [TileFill(dst=self._region(a[0], loc), value=a[1], loc=loc)]
        if op == "reduce":
            kind = str(a[2].value) if hasattr(a[2], "value") else str(a[2])
            if kind not in {k.value for k in ReduceKind}:
                raise UnsupportedError(f"T.reduce_{kind} is not supported (sum, max, min, abssum, absmax are)", loc=loc)
            return [TileReduce(src=self._region(a[0], loc), dst=self._region(a[1], loc), kind=ReduceKind(kind),
                               dim=int(a[3]), clear=bool(a[4]), loc=loc)]
        # gemm: A, B, C, trans_A, trans_B, M, N, K, policy, clear_accum, ...
        return [TileGemm(a=self._region(a[0], loc), b=self._region(a[1], loc), c=self._region(a[2], loc),
                         trans_a=bool(a[3]), trans_b=bool(a[4]), clear_accum=bool(a[9]) if len(a) > 9 else False,
                         loc=loc)]


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
}


def _gpu_only(what: str, loc) -> UnsupportedError:
    return UnsupportedError(f"{what} is a GPU thread-level construct, which the ascendc target does not have",
                            loc=loc, hint=_GPU_HINT)


def _kind_of(scope: str) -> BufferKind:
    if scope in ("local", "local.var"):
        return BufferKind.LOCAL
    return BufferKind.FRAGMENT if "fragment" in scope or scope.startswith("local") else BufferKind.SHARED


def import_primfunc(func: tirx.PrimFunc, arch, name: str | None = None) -> Program:
    """Import ``func`` into the kernel IR (stage ``frontend``)."""
    if not isinstance(func, tirx.PrimFunc):
        raise UnsupportedError(f"expected a TileLang PrimFunc, got {type(func).__name__}")
    gname = name or (str(func.attrs["global_symbol"]) if func.attrs and "global_symbol" in func.attrs else "main")
    kname = _c_identifier(gname)
    if kname == "main":
        kname = "main_kernel"  # `main` is reserved for the C++ entry point
    return _Importer(func, kname, arch).run()


def _c_identifier(s: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in s)
    return out if out and not out[0].isdigit() else f"k_{out}"


__all__ = ["import_primfunc", "stmt_loc", "buffer_loc", "tvm"]
