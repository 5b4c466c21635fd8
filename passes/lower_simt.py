"""lower_simt: thread-level code as SIMT functions (dav-3510).

Needs: scopes and layouts (infer_scope, assign_layout): every tile a SimtRegion names is in UB (of
the AIV that runs it) with its row pitch, every tensor in GM.
Establishes: no SimtRegion is left; each is a ``SimtCall`` (``asc_vf_call`` of a ``__simt_vf__``
function, an op on the AIV's Vector pipe) whose arguments give the function every GM tensor, UB
tile and scalar (block index, loop variable of the tile code around it, kernel argument) its body
names, and whose reads / writes are the buffers its loads / stores (atomics: both) touch, so that
insert_sync orders it with the other pipes; every construct of its body is one the SIMT API has
(docs/supported.md, "Thread-level code"), else an UnsupportedError at the DSL line
(``verify_simt``).
"""

from __future__ import annotations

import dataclasses

import tvm
from tvm import arith, tirx

from ascend_backend.arch import SIMT_MAX_THREADS, SIMT_WARP
from ascend_backend.dtypes import dtype as to_dtype
from ascend_backend.dtypes import known
from ascend_backend.errors import InternalCompilerError, SrcLoc, UnsupportedError
from ascend_backend.ir import (
    Core,
    Kernel,
    Program,
    Scope,
    SimtArg,
    SimtArgKind,
    SimtCall,
    SimtRegion,
    map_body,
    walk,
)
from ascend_backend.threads import ATOMIC_OPS, extern_name, op_name

# What each thread-level call becomes (codegen prints it; docs/supported.md has the table).
SIMT_CALLS = frozenset({
    "tl.shfl_sync", "tl.shfl_xor_sync", "tl.shfl_up_sync", "tl.shfl_down_sync", "tl.warp_reduce_sum",
    "tl.warp_reduce_max", "tl.warp_reduce_min", "tl.get_lane_idx", "tl.get_warp_idx", "tl.get_warp_idx_sync",
    "tl.ballot", "tl.ballot_sync", "tl.any_sync", "tl.all_sync", "tl.activemask", "tl.sync_warp",
    "tirx.tvm_storage_sync", "tl.sync_threads", "tirx.thread_return", "tirx.ptx_wait_group", "tirx.ptx_commit_group",
    "tirx.break_loop", "tl.access_ptr", "tirx.if_then_else", "tirx.reinterpret", "tirx.bitwise_and",
    "tirx.bitwise_or", "tirx.bitwise_xor", "tirx.bitwise_not", "tirx.shift_left", "tirx.shift_right",
    "tirx.exp", "tirx.exp2", "tirx.log", "tirx.log2", "tirx.sqrt", "tirx.rsqrt", "tirx.fabs", "tirx.tanh",
    "tirx.floor", "tirx.ceil", "tirx.round", "tirx.pow", "tirx.trunc", "tirx.nearbyint",
    "tirx.isnan", "tirx.sigmoid", "tirx.infinity", "tl.infinity", "tirx.abs", "tirx.log10", "tirx.exp10",
})
EXTERN_CALLS = frozenset({"__match_any_sync", "__float2half_rz", "__float2half_rn", "__float2bfloat16_rn",
                          "__half2float", "__bfloat162float"})
FULL_MASK = 0xFFFFFFFF
# Thread-level calls with a GPU meaning the SIMT API has no form for, and why.
_NO_SIMT = {
    "tl.warp_reduce_bitand": "a warp-wide bitwise AND (the Warp-Reduce functions are add, max and min)",
    "tl.warp_reduce_bitor": "a warp-wide bitwise OR (the Warp-Reduce functions are add, max and min)",
    "tl.atomic_addx2_elem_op": "a 2-wide vector atomic add", "tl.atomic_addx4_elem_op": "a 4-wide vector atomic add",
    "tl.atomic_load_elem_op": "an atomic load with a memory order", "tl.atomic_store_elem_op": "an atomic store",
    "tl.get_warp_group_idx": "a warp-group index (Hopper's 128-thread groups)",
}


def span_of(stmt):
    """The span of a TIR statement, for the statements the SIMT passes rebuild (so that later
    errors still name the user's line)."""
    from ascend_backend.frontend import _span_of

    return _span_of(stmt)


def dsl_line(stmt, default: SrcLoc | None) -> SrcLoc | None:
    """The user's line of a TIR statement of thread-level code (else ``default``)."""
    from ascend_backend.frontend import stmt_loc

    loc = stmt_loc(stmt)
    return loc if loc is not None and "tilelang" not in loc.file.rsplit("/site-packages/", 1)[-1][:9] else default


class _Check:
    """Refuse, at its line, what the SIMT API has no form for."""

    def __init__(self, region: SimtRegion) -> None:
        self.region = region
        self.loc = region.loc

    def stmt(self, s) -> None:
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                self.stmt(x)
            return
        loc = dsl_line(s, self.loc)
        if isinstance(s, tirx.For):
            if s.kind == tirx.ForKind.PARALLEL:
                self.fail("a T.Parallel loop inside thread-level code", loc,
                          "write the loop as T.serial (each thread runs its own iterations), or move the T.Parallel "
                          "out of the code that uses the thread index")
            if s.thread_binding is not None:
                self.fail(f"a loop bound to '{s.thread_binding.thread_tag}' inside thread-level code", loc,
                          "use T.get_thread_binding() for the thread index")
            self.expr(s.min, loc)
            self.expr(s.extent, loc)
            self.stmt(s.body)
        elif isinstance(s, tirx.While):
            self.expr(s.condition, loc)
            self.stmt(s.body)
        elif isinstance(s, tirx.IfThenElse):
            self.expr(s.condition, loc)
            self.stmt(s.then_case)
            if s.else_case is not None:
                self.stmt(s.else_case)
        elif isinstance(s, tirx.SBlockRealize):
            self.stmt(s.block)
        elif isinstance(s, tirx.SBlock):
            self.stmt(s.body)
        elif isinstance(s, tirx.AttrStmt):
            if str(s.attr_key) == "reduce_scope":
                self.fail("a cross-thread reduction (T.comm_reducer / T.tvm_thread_allreduce)", loc,
                          "reduce a tile with T.reduce_* (tile code), a value of each thread over the block's thread "
                          "axes with T.tvm_thread_allreduce over those axes only, within a warp with "
                          "T.warp_reduce_sum / max / min, or through a T.alloc_shared tile and T.sync_threads")
            self.stmt(s.body)
        elif isinstance(s, tirx.Bind):
            self.dtype(s.var.dtype, f"the local '{s.var.name}'", loc)
            self.expr(s.value, loc)
        elif isinstance(s, tirx.BufferStore):
            for i in s.indices:
                self.expr(i, loc)
            self.expr(s.value, loc)
        elif isinstance(s, tirx.Evaluate):
            self.expr(s.value, loc)
        else:
            self.fail(f"a statement of type {type(s).__name__} inside thread-level code", loc, None)

    def dtype(self, dt, what: str, loc) -> None:
        if str(dt) not in ("bool", "handle") and not known(str(dt)):
            self.fail(f"{what} has dtype {dt}, which the SIMT functions of the ascendc target do not have", loc,
                      "use an int, float16, bfloat16 or float32 type")

    def expr(self, e, loc) -> None:
        problems: list = []

        def visit(n):
            if problems or not isinstance(n, tirx.Call):
                return
            name = op_name(n)
            if name in _NO_SIMT:
                problems.append((f"{_NO_SIMT[name]}", "the SIMT API (docs/zh/api/SIMT-API) has no such instruction"))
            elif name in ATOMIC_OPS:
                dt = str(n.args[1].dtype)
                if ATOMIC_OPS[name] in ("and", "or", "xor", "inc", "dec") and "int" not in dt:
                    problems.append((f"an atomic {ATOMIC_OPS[name]} on {dt}", "the SIMT atomics take integers"))
            elif name == "tirx.call_extern":
                fn = extern_name(n)
                if fn not in EXTERN_CALLS:
                    problems.append((f"the CUDA function '{fn}' (T.call_extern)",
                                     "the SIMT API has no equivalent; the ascendc target maps __match_any_sync and the "
                                     "float conversions it lists in docs/supported.md"))
                elif fn == "__match_any_sync":
                    _full_mask(n.args[1], problems, "__match_any_sync")
            elif name in ("tl.shfl_sync", "tl.shfl_xor_sync", "tl.shfl_up_sync", "tl.shfl_down_sync", "tl.ballot_sync"):
                _full_mask(n.args[0], problems, name.split(".")[-1])
            elif name in ("tl.any_sync", "tl.all_sync"):
                _full_mask(n.args[1], problems, name.split(".")[-1])
            elif name == "tirx.tvm_storage_sync":
                # a barrier of part of the block (T.sync_threads(id, count)) is placed by simt_sync
                if n.args and str(n.args[0]).strip('"') not in ("shared", "shared.dyn", "warp"):
                    problems.append((f"a '{n.args[0]}' barrier", "asc_syncthreads orders UB (shared) accesses"))
            elif name == "tirx.reinterpret":
                pair = (str(n.args[0].dtype), str(n.dtype))
                if pair not in _REINTERPRET:
                    problems.append((f"T.reinterpret from {pair[0]} to {pair[1]}",
                                     "the SIMT API's bit casts are __float_as_int / __float_as_uint / __int_as_float / "
                                     "__uint_as_float / __ushort_as_half / __ushort_as_bfloat16"))
            elif name not in SIMT_CALLS and not name.startswith("tl.tileop."):
                problems.append((f"'{name.replace('tirx.', 'T.').replace('tl.', 'T.')}'",
                                 "the SIMT functions of the ascendc target have no form for it"))

        tirx.stmt_functor.post_order_visit(e, visit)
        if problems:
            what, why = problems[0]
            self.fail(f"{what} inside thread-level code: {why}", loc, "see docs/supported.md, 'Thread-level code'")

    def fail(self, what: str, loc, hint) -> None:
        raise UnsupportedError(what, loc=loc or self.loc, hint=hint)


# The bit casts the SIMT math functions have (数学函数: __float_as_int, ...), as (from, to).
_REINTERPRET = {("float32", "int32"), ("float32", "uint32"), ("int32", "float32"), ("uint32", "float32"),
                ("uint16", "float16"), ("uint16", "bfloat16"), ("float16", "uint16"), ("bfloat16", "uint16"),
                ("int16", "float16"), ("float16", "int16")}


def _full_mask(mask, problems: list, what: str) -> None:
    if not (isinstance(mask, tirx.IntImm) and int(mask.value) & FULL_MASK == FULL_MASK):
        problems.append((f"{what} with the lane mask {mask}",
                         "the SIMT warp functions take the warp's active threads, not a mask: only the full mask "
                         "0xffffffff (every lane) has a SIMT form"))


def _free_vars(body: tuple, bound: set) -> list:
    """Scalars the body reads that it does not define (in first-use order)."""
    defined: set = set(bound)
    used: list = []

    def visit(n):
        if isinstance(n, tirx.Bind):
            defined.add(n.var)
        elif isinstance(n, tirx.For):
            defined.add(n.loop_var)
        elif isinstance(n, tirx.Var) and str(n.dtype) != "handle" and n not in used:
            used.append(n)

    for s in body:
        tirx.stmt_functor.post_order_visit(s, visit)
    return [v for v in used if v not in defined]


class _GuardGm:
    """TileLang's safe-memory rule for global tensors (its LegalizeSafeMemoryAccess): a GM load whose
    indices are not provably inside the tensor reads 0 there, a store (or an atomic) there is
    skipped. Proofs use the thread ranges, the loops' ranges, the lets and the enclosing ``if``
    conditions (tvm's arith.Analyzer), as TileLang's do."""

    def __init__(self, region: SimtRegion, gm: set, grid: list) -> None:
        self.gm = gm
        self.ana = arith.Analyzer()
        for ax in grid:  # the block indices
            self.ana.bind(ax.var, tvm.ir.Range(0, ax.extent))
        for v, n in zip(region.thread_vars, region.threads, strict=True):
            if v is not None:
                self.ana.bind(v, tvm.ir.Range(0, n))

    def inside(self, buf, indices) -> list:
        """The conditions of ``indices`` lying inside ``buf`` that cannot be proven."""
        conds = []
        for i, n in zip(indices, buf.shape, strict=True):
            if not self.ana.can_prove(i >= 0):
                conds.append(i >= 0)
            if not self.ana.can_prove(i < n):
                conds.append(i < n)
        return conds

    def expr(self, e, stmt_conds: list):
        """``e`` with its GM loads guarded; atomics' address conditions go to ``stmt_conds``."""

        def pre(n):
            if isinstance(n, tirx.Call) and op_name(n) == "tl.access_ptr":
                load = n.args[0]
                if isinstance(load, tirx.BufferLoad) and load.buffer.name in self.gm:
                    stmt_conds.extend(self.inside(load.buffer, load.indices))
                return n  # an address, not a load
            return None

        def post(n):
            if isinstance(n, tirx.BufferLoad) and n.buffer.name in self.gm:
                conds = self.inside(n.buffer, n.indices)
                if conds:
                    return tirx.if_then_else(_all(conds), n, tirx.const(0, str(n.dtype)))
            return None

        wrapped = tirx.stmt_functor.ir_transform(tirx.Evaluate(e), pre, post, ["tirx.BufferLoad", "tirx.Call"])
        return wrapped.value

    def stmt(self, s):
        if isinstance(s, tirx.SeqStmt):
            return tirx.SeqStmt([self.stmt(x) for x in s.seq], span=span_of(s))
        if isinstance(s, tirx.For):
            self.ana.bind(s.loop_var, tvm.ir.Range.from_min_extent(s.min, s.extent))
            return tirx.For(s.loop_var, self.expr(s.min, []), self.expr(s.extent, []), s.kind, self.stmt(s.body),
                            s.thread_binding, s.annotations, span=span_of(s))
        if isinstance(s, tirx.While):
            return tirx.While(self.expr(s.condition, []), self.stmt(s.body), span=span_of(s))
        if isinstance(s, tirx.IfThenElse):
            cond = self.expr(s.condition, [])
            with self.ana.constraint_scope(s.condition):
                then_case = self.stmt(s.then_case)
            else_case = None
            if s.else_case is not None:
                with self.ana.constraint_scope(tirx.Not(s.condition)):
                    else_case = self.stmt(s.else_case)
            return tirx.IfThenElse(cond, then_case, else_case, span=span_of(s))
        if isinstance(s, tirx.SBlockRealize | tirx.SBlock):
            return s
        if isinstance(s, tirx.AttrStmt):
            return tirx.AttrStmt(s.node, s.attr_key, s.value, self.stmt(s.body), span=span_of(s))
        conds: list = []
        if isinstance(s, tirx.Bind):
            out = tirx.Bind(s.var, self.expr(s.value, conds), span=span_of(s))
            if "int" in str(s.var.dtype):
                self.ana.bind(s.var, s.value)
            if conds:  # an atomic's value: 0 where it is skipped, as TileLang returns its safe value
                out = tirx.Bind(s.var, tirx.if_then_else(_all(conds), out.value, tirx.const(0, str(s.var.dtype))),
                                span=span_of(s))
            return out
        if isinstance(s, tirx.BufferStore):
            value = self.expr(s.value, conds)
            indices = [self.expr(i, []) for i in s.indices]
            if s.buffer.name in self.gm:
                conds += self.inside(s.buffer, s.indices)
            out = tirx.BufferStore(s.buffer, value, indices, span=span_of(s))
        elif isinstance(s, tirx.Evaluate):
            out = tirx.Evaluate(self.expr(s.value, conds), span=span_of(s))
        else:
            return s
        return tirx.IfThenElse(_all(conds), out, None, span=span_of(s)) if conds else out


def _all(conds: list):
    out = conds[0]
    for c in conds[1:]:
        out = tirx.And(out, c)
    return out


def lower_region(region: SimtRegion, kernel: Kernel, name: str, grid: list = ()) -> SimtCall:
    _Check(region).stmt(tirx.SeqStmt(list(region.body)) if len(region.body) > 1 else region.body[0])
    gm = {n for n in (*region.reads, *region.writes) if kernel.buffers[n].scope is Scope.GM}
    if gm:
        guard = _GuardGm(region, gm, list(grid))
        region = dataclasses.replace(region, body=tuple(guard.stmt(s) for s in region.body))
    args = []
    for buf_name in dict.fromkeys([*region.reads, *region.writes]):
        b = kernel.buffers[buf_name]
        if b.scope is Scope.GM:
            kind = SimtArgKind.GM
        elif b.scope is Scope.UB:
            kind = SimtArgKind.UB
        else:
            raise UnsupportedError(f"thread-level code reads or writes '{buf_name}', which is in {b.scope}: SIMT "
                                   "functions address GM and UB only", loc=region.loc,
                                   hint="use a T.alloc_shared tile (UB) or a global tensor")
        args.append(SimtArg(name=buf_name, kind=kind, dtype=b.dtype, buffer=buf_name))
    names = {a.name for a in args}
    for v in _free_vars(region.body, {t for t in region.thread_vars if t is not None}):
        if not known(str(v.dtype)) and str(v.dtype) != "bool":
            raise UnsupportedError(f"thread-level code uses '{v.name}' of dtype {v.dtype}", loc=region.loc)
        dt = to_dtype(str(v.dtype)) if str(v.dtype) != "bool" else to_dtype("int32")
        vname = str(v.name)
        while vname in names:
            vname += "_"
        names.add(vname)
        args.append(SimtArg(name=vname, kind=SimtArgKind.SCALAR, dtype=dt, var=v))
    return SimtCall(func=name, threads=region.threads, thread_vars=region.thread_vars, body=region.body,
                    locals=region.locals, args=tuple(args), loads=region.reads, stores=region.writes, loc=region.loc)


def lower_simt(program: Program) -> Program:
    """Every SimtRegion as a SimtCall (a SIMT function and its launch)."""
    count = [0]

    def one(k: Kernel, lc, p: Program) -> Kernel:
        def rewrite(s):
            if isinstance(s, SimtRegion):
                if k.core is not Core.AIV or not p.arch.simt:
                    raise InternalCompilerError(f"thread-level code on {k.core} of {p.arch.name}", stage="lower_simt")
                call = lower_region(s, k, f"{p.name}_simt{count[0]}", lc.grid)
                count[0] += 1
                return [call]
            return [s]

        return k.replace(body=map_body(k.body, rewrite))

    out = program.map_kernels(one)
    verify_simt(out)
    return out


def verify_simt(program: Program) -> None:
    """No SimtRegion left; each SimtCall on an AIV of an arch with SIMT, within the thread limit, its
    body naming only its arguments and locals."""
    for _, core, k in program.kernels():
        for s in walk(k.body):
            if isinstance(s, SimtRegion):
                raise InternalCompilerError("a SimtRegion left after lower_simt", stage="lower_simt")
            if not isinstance(s, SimtCall):
                continue
            if core is not Core.AIV or not program.arch.simt:
                raise InternalCompilerError(f"SIMT function {s.func} on {core} of {program.arch.name}",
                                            stage="lower_simt")
            if not 1 <= s.nthreads <= SIMT_MAX_THREADS:
                raise InternalCompilerError(f"SIMT function {s.func} with {s.nthreads} threads", stage="lower_simt")
            known_bufs = {a.buffer for a in s.args if a.buffer} | {b.name for b in s.locals}
            missing = _named_buffers(s.body) - known_bufs - _inner_allocs(s.body)
            if missing:
                raise InternalCompilerError(f"SIMT function {s.func} names {sorted(missing)} without an argument",
                                            stage="lower_simt")


def _named_buffers(body: tuple) -> set:
    names: set = set()

    def visit(n):
        if isinstance(n, tirx.BufferLoad | tirx.BufferStore):
            names.add(n.buffer.name)

    for s in body:
        tirx.stmt_functor.post_order_visit(s, visit)
    return names


def _inner_allocs(body: tuple) -> set:
    names: set = set()

    def visit(n):
        if isinstance(n, tirx.SBlock):
            names.update(b.name for b in n.alloc_buffers)

    for s in body:
        tirx.stmt_functor.post_order_visit(s, visit)
    return names


__all__ = ["lower_simt", "verify_simt", "SIMT_CALLS", "ATOMIC_OPS", "EXTERN_CALLS", "SIMT_WARP"]
