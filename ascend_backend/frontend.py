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
    Buffer,
    BufferKind,
    GridAxis,
    Kernel,
    Launch,
    Loop,
    LoopKind,
    ParallelStore,
    Param,
    Program,
    ReduceKind,
    Region,
    Scope,
    TileCopy,
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
}


def stmt_loc(node) -> SrcLoc | None:
    try:
        from tilelang.ir import get_stmt_span

        span = get_stmt_span(node)
    except Exception:  # noqa: BLE001 - spans are best effort
        span = None
    if span is None:
        return None
    return SrcLoc(span.source_name.name, int(span.line))


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
    return SrcLoc(span.source_name.name, int(span.line))


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
        body = self._strip_launch(self.func.body)
        stmts = self._stmts(body)
        launch = Launch(grid=self.grid, kernels={None: Kernel(core=None, buffers=self.buffers, body=stmts)})
        return Program(name=self.name, arch=self.arch, params=params, launches=[launch],
                       source_file=self.first_loc.file if self.first_loc else None)

    def _strip_launch(self, stmt):
        """Peel the block bindings, launch-thread binds and root blocks; collect allocations."""
        while True:
            if isinstance(stmt, tirx.For) and stmt.thread_binding is not None:
                tag = str(stmt.thread_binding.thread_tag)
                if not tag.startswith("blockIdx"):
                    raise UnsupportedError(f"thread binding '{tag}' is not supported", loc=stmt_loc(stmt))
                self.grid.append(GridAxis(stmt.loop_var, int(stmt.extent), tag))
                stmt = stmt.body
            elif isinstance(stmt, tirx.SBlockRealize):
                stmt = stmt.block
            elif isinstance(stmt, tirx.SBlock):
                for buf in stmt.alloc_buffers:
                    scope = str(buf.scope())
                    self._add_buffer(buf, _kind_of(scope), buffer_loc(buf))
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

    @staticmethod
    def _is_launch_bind(s) -> bool:
        if type(s).__name__ == "Bind":
            return "launch_thread" in str(s.value)
        return False

    def _stmts(self, stmt) -> list:
        if isinstance(stmt, tirx.SeqStmt):
            out = []
            for s in _inline_binds(stmt.seq):
                out.extend(self._stmts(s))
            return out
        loc = self._user_loc(stmt)
        if isinstance(stmt, tirx.Evaluate):
            return [self._tile_call(stmt.value, loc)]
        if isinstance(stmt, tirx.For):
            if stmt.kind == tirx.ForKind.PARALLEL:
                return [self._parallel(stmt, loc)]
            if stmt.thread_binding is not None:
                raise UnsupportedError("a thread binding inside the kernel body is not supported", loc=loc)
            ann = dict(stmt.annotations) if stmt.annotations else {}
            stages = int(ann.get("num_stages", 1)) if "num_stages" in ann else 1
            if not isinstance(stmt.min, tirx.IntImm) or int(stmt.min) != 0:
                raise UnsupportedError("loops must start at 0", loc=loc)
            return [
                Loop(
                    var=stmt.loop_var,
                    extent=stmt.extent,
                    body=self._stmts(stmt.body),
                    kind=LoopKind.PIPELINED if "num_stages" in ann else LoopKind.SERIAL,
                    num_stages=max(1, stages),
                    loc=loc,
                )
            ]
        if isinstance(stmt, tirx.SBlockRealize | tirx.SBlock):
            inner = stmt.block if isinstance(stmt, tirx.SBlockRealize) else stmt
            for buf in inner.alloc_buffers:
                scope = str(buf.scope())
                self._add_buffer(buf, _kind_of(scope), buffer_loc(buf))
            return self._stmts(inner.body)
        if isinstance(stmt, tirx.BufferStore):
            raise UnsupportedError(
                f"a scalar store to '{stmt.buffer.name}' outside T.Parallel is not supported",
                loc=loc,
                hint="write element-wise code inside `for i, j in T.Parallel(...)`",
            )
        raise UnsupportedError(f"statement of type {type(stmt).__name__} is not supported by the ascendc target",
                               loc=loc)

    def _user_loc(self, stmt) -> SrcLoc | None:
        """The DSL line of ``stmt``; for tilelang macros (reduce_*) recover the caller's line."""
        loc = stmt_loc(stmt)
        if loc is None:
            return self.last_loc
        if _is_tilelang_file(loc.file):
            return _find_call_line(self.last_loc, stmt) or self.last_loc
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
        stores = []

        def collect(s):
            if isinstance(s, tirx.SeqStmt):
                for x in _inline_binds(s.seq):
                    collect(x)
            elif isinstance(s, tirx.BufferStore):
                stores.append((s, stmt_loc(s) or loc))
            else:
                raise UnsupportedError(
                    f"{type(s).__name__} inside T.Parallel is not supported (only assignments are)",
                    loc=stmt_loc(s) or loc,
                )

        collect(body)
        for s, _ in stores:
            self.buffer_name(s.buffer)  # validate
        return TileParallel(vars=tuple(loop_vars), extents=tuple(extents),
                            stores=tuple(ParallelStore(st, sl) for st, sl in stores), loc=loc)

    def _region(self, arg, loc) -> Region:
        """Decode a ``tl.region(buf[base...], access, extents...)`` (or a BufferLoad/Buffer)."""
        if isinstance(arg, tirx.Call) and str(arg.op.name) == "tl.region":
            load = arg.args[0]
            extents = tuple(int(e) if isinstance(e, tirx.IntImm) else e for e in arg.args[2:])
            return Region(self.buffer_name(load.buffer), tuple(load.indices), extents)
        if isinstance(arg, tirx.BufferLoad):
            return Region(self.buffer_name(arg.buffer), tuple(arg.indices), (1,) * len(arg.indices))
        raise UnsupportedError(f"unexpected tile-op operand {arg}", loc=loc)

    def _tile_call(self, call, loc):
        if not isinstance(call, tirx.Call):
            raise UnsupportedError(f"expression statement {call} is not supported", loc=loc)
        name = str(call.op.name) if hasattr(call.op, "name") else str(call.op)
        if name not in _TILE_OPS:
            short = name.replace("tl.tileop.", "T.")
            raise UnsupportedError(
                f"op '{short}' is not supported by the ascendc target",
                loc=loc,
                hint="supported tile ops: T.copy, T.fill/T.clear, T.gemm, T.reduce_sum/T.reduce_max, T.Parallel",
            )
        op = _TILE_OPS[name]
        a = call.args
        if op == "copy":
            return TileCopy(src=self._region(a[0], loc), dst=self._region(a[1], loc), loc=loc)
        if op == "fill":
            return TileFill(dst=self._region(a[0], loc), value=a[1], loc=loc)
        if op == "reduce":
            kind = str(a[2].value) if hasattr(a[2], "value") else str(a[2])
            if kind not in {k.value for k in ReduceKind}:
                raise UnsupportedError(f"T.reduce_{kind} is not supported (sum, max, min are)", loc=loc)
            return TileReduce(src=self._region(a[0], loc), dst=self._region(a[1], loc), kind=ReduceKind(kind),
                              dim=int(a[3]), clear=bool(a[4]), loc=loc)
        # gemm: A, B, C, trans_A, trans_B, M, N, K, policy, clear_accum, ...
        return TileGemm(a=self._region(a[0], loc), b=self._region(a[1], loc), c=self._region(a[2], loc),
                        trans_a=bool(a[3]), trans_b=bool(a[4]), clear_accum=bool(a[9]) if len(a) > 9 else False,
                        loc=loc)


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


def _find_call_line(after: SrcLoc | None, stmt) -> SrcLoc | None:
    """Statements built inside a tilelang macro carry the macro's span; find the user's call.

    Only ``T.reduce_*`` is built that way among the ops we accept: look for the first line after
    the previous user statement that calls it.
    """
    if after is None or not isinstance(stmt, tirx.Evaluate):
        return None
    try:
        with open(after.file) as f:
            lines = f.readlines()
    except OSError:
        return None
    for n in range(after.line, len(lines)):
        if "reduce_" in lines[n]:
            return SrcLoc(after.file, n + 1)
    return None


def _kind_of(scope: str) -> BufferKind:
    return BufferKind.FRAGMENT if "fragment" in scope or scope.startswith("local") else BufferKind.SHARED


def import_primfunc(func: tirx.PrimFunc, arch, name: str | None = None) -> Program:
    """Import ``func`` into the kernel IR (stage ``frontend``)."""
    if not isinstance(func, tirx.PrimFunc):
        raise UnsupportedError(f"expected a TileLang PrimFunc, got {type(func).__name__}")
    gname = name or (str(func.attrs["global_symbol"]) if func.attrs and "global_symbol" in func.attrs else "main")
    kname = _c_identifier(gname)
    if kname == "main":
        kname = "main_kernel"  # `main` is reserved for the C++ entry point
    program = _Importer(func, kname, arch).run()
    if not program.launches[0].grid:
        raise UnsupportedError("the kernel has no `with T.Kernel(...)` block",
                               hint="wrap the body in T.Kernel(grid...)")
    return program


def _c_identifier(s: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in s)
    return out if out and not out[0].isdigit() else f"k_{out}"


__all__ = ["import_primfunc", "stmt_loc", "buffer_loc", "tvm"]
