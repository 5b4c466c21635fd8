"""What in a TileLang kernel is thread-level code (for the frontend's SIMT regions).

TileLang's GPU semantics: every statement of a ``T.Kernel(..., threads=N)`` body runs on every
thread, and tile ops (T.copy, T.gemm, T.Parallel, ...) are shared out among them. The ascendc
target runs tile ops once per block as SIMD/Cube instructions; what depends on the thread (a use
of a thread index, a warp collective, a barrier, a per-thread atomic, a per-thread local) runs as a
SIMT function on dav-3510 (docs/supported.md, "Thread-level code"). This module decides which
statements those are; it reads TIR and builds no IR.
"""

from __future__ import annotations

from tvm import tirx

# Calls that only make sense on a thread (their TIR op names).
THREAD_CALLS = frozenset({
    "tl.shfl_sync", "tl.shfl_xor_sync", "tl.shfl_up_sync", "tl.shfl_down_sync",
    "tl.warp_reduce_sum", "tl.warp_reduce_max", "tl.warp_reduce_min", "tl.warp_reduce_bitand",
    "tl.warp_reduce_bitor", "tl.get_lane_idx", "tl.get_warp_idx", "tl.get_warp_idx_sync", "tl.get_warp_group_idx",
    "tl.ballot", "tl.ballot_sync", "tl.any_sync", "tl.all_sync", "tl.activemask", "tl.sync_warp",
    "tirx.tvm_storage_sync", "tl.tvm_storage_sync", "tl.sync_threads", "tirx.thread_return", "tirx.ptx_wait_group",
    "tirx.ptx_commit_group", "tl.atomic_add_elem_op", "tl.atomic_add_ret_elem_op", "tl.atomic_max_elem_op",
    "tl.atomic_max_ret_elem_op", "tl.atomic_min_elem_op", "tl.atomic_min_ret_elem_op", "tl.atomic_addx2_elem_op",
    "tl.atomic_addx4_elem_op", "tl.atomic_load_elem_op", "tl.atomic_store_elem_op", "tl.atomic_exch_elem_op",
    "tl.atomic_exch_ret_elem_op", "tl.atomic_cas_elem_op", "tl.atomic_cas_ret_elem_op", "tl.atomic_and_elem_op",
    "tl.atomic_and_ret_elem_op", "tl.atomic_or_elem_op", "tl.atomic_or_ret_elem_op", "tl.atomic_xor_elem_op",
    "tl.atomic_xor_ret_elem_op", "tl.atomic_sub_elem_op", "tl.atomic_sub_ret_elem_op",
    "tirx.tvm_thread_allreduce", "tir.tvm_thread_allreduce", "tirx.break_loop",
})
# CUDA device functions TileKernels calls through T.call_extern (a thread-level construct too).
EXTERN_THREAD_CALLS = frozenset({"__match_any_sync", "__float2half_rz", "__shfl_sync", "__shfl_xor_sync",
                                 "__shfl_down_sync", "__shfl_up_sync", "__ballot_sync", "__syncthreads",
                                 "__syncwarp", "__activemask", "__any_sync", "__all_sync"})
TILE_OP_PREFIX = "tl.tileop."
ATOMIC_OPS = {  # TileLang's per-element atomics -> the SIMT API's asc_atomic_* (原子操作)
    "tl.atomic_add_elem_op": "add", "tl.atomic_add_ret_elem_op": "add", "tl.atomic_max_elem_op": "max",
    "tl.atomic_max_ret_elem_op": "max", "tl.atomic_min_elem_op": "min", "tl.atomic_min_ret_elem_op": "min",
    "tl.atomic_sub_elem_op": "sub", "tl.atomic_sub_ret_elem_op": "sub", "tl.atomic_exch_elem_op": "exch",
    "tl.atomic_exch_ret_elem_op": "exch", "tl.atomic_and_elem_op": "and", "tl.atomic_and_ret_elem_op": "and",
    "tl.atomic_or_elem_op": "or", "tl.atomic_or_ret_elem_op": "or", "tl.atomic_xor_elem_op": "xor",
    "tl.atomic_xor_ret_elem_op": "xor", "tl.atomic_cas_elem_op": "cas", "tl.atomic_cas_ret_elem_op": "cas",
}


def op_name(call) -> str:
    return str(call.op.name) if hasattr(call.op, "name") else str(call.op)


def extern_name(call) -> str | None:
    if op_name(call) == "tirx.call_extern" and call.args:
        return str(call.args[0]).strip('"')
    return None


def local_scope(buf) -> bool:
    return str(buf.scope()) in ("local", "local.var")


class ThreadUse:
    """Which statements of a launch body are thread-level.

    ``thread_vars``: the variables T.Kernel binds to threadIdx.x/y/z. A per-thread local is a
    T.alloc_local / T.alloc_var that a thread-level statement touches; a statement is thread-level
    when it (or a loop or if around it) uses a thread index, a thread-only call, or a per-thread
    local (computed to a fixed point: a local written from thread-level values makes the statements
    that read it thread-level, and so on).
    """

    def __init__(self, body, thread_vars: set) -> None:
        self.thread_vars = set(thread_vars)
        self.locals: set = set()  # names of the per-thread locals
        self.bound: set = set()  # vars bound (Bind) to thread-level values
        if not self.thread_vars:
            return
        for _ in range(64):  # each round adds at least one local or var; kernels have far fewer
            before = (len(self.locals), len(self.bound))
            self._scan(body, False)
            if (len(self.locals), len(self.bound)) == before:
                break

    # -- the fixed point
    def _scan(self, stmt, under: bool) -> None:
        if isinstance(stmt, tirx.SeqStmt):
            for s in stmt.seq:
                self._scan(s, under)
        elif isinstance(stmt, tirx.For):
            inner = under or self.expr_level(stmt.min) or self.expr_level(stmt.extent)
            if inner:  # the locals its bounds read are each thread's too
                self._mark(stmt.min, stmt.extent)
            self._scan(stmt.body, inner)
        elif isinstance(stmt, tirx.While):
            inner = under or self.expr_level(stmt.condition)
            if inner:
                self._mark(stmt.condition)
            self._scan(stmt.body, inner)
        elif isinstance(stmt, tirx.IfThenElse):
            inner = under or self.expr_level(stmt.condition)
            if inner:
                self._mark(stmt.condition)
            self._scan(stmt.then_case, inner)
            if stmt.else_case is not None:
                self._scan(stmt.else_case, inner)
        elif isinstance(stmt, tirx.SBlockRealize):
            self._scan(stmt.block, under)
        elif isinstance(stmt, tirx.SBlock):
            self._scan(stmt.body, under)
        elif isinstance(stmt, tirx.AttrStmt):
            if str(stmt.attr_key) == "reduce_scope":
                under = True
            self._scan(stmt.body, under)
        elif isinstance(stmt, tirx.Bind):
            if under or self.expr_level(stmt.value):
                self.bound.add(stmt.var)
                self._mark(stmt.value)
        elif under or self.leaf_level(stmt):
            self.locals |= {b.name for b in _buffers(stmt) if local_scope(b)}

    def _mark(self, *exprs) -> None:
        """The locals ``exprs`` read are per-thread (a thread-level condition, bound or let reads them)."""
        for e in exprs:
            self.locals |= {b.name for b in _buffers(e) if local_scope(b)}

    # -- queries
    def expr_level(self, e) -> bool:
        """Does expression (or statement) ``e`` depend on the thread?"""
        if not self.thread_vars:
            return False
        found = [False]

        def visit(n):
            if found[0]:
                return
            if isinstance(n, tirx.Var) and (n in self.thread_vars or n in self.bound):
                found[0] = True
            elif isinstance(n, tirx.BufferLoad | tirx.BufferStore) and n.buffer.name in self.locals and \
                    local_scope(n.buffer):
                found[0] = True
            elif isinstance(n, tirx.Call):
                name = op_name(n)
                if name in THREAD_CALLS or extern_name(n) in EXTERN_THREAD_CALLS:
                    found[0] = True
                elif name == "tl.region" or name == "tl.access_ptr":
                    load = n.args[0]
                    if isinstance(load, tirx.BufferLoad) and load.buffer.name in self.locals:
                        found[0] = True

        tirx.stmt_functor.post_order_visit(e, visit)
        return found[0]

    def leaf_level(self, stmt) -> bool:
        return self.expr_level(stmt)

    def direct_use(self, stmt) -> str | None:
        """What makes ``stmt`` thread-level by itself (a thread index or a thread-only call in its own
        expressions: a loop's bounds, an if's condition, a leaf's whole text), in the user's words;
        None when only a per-thread local does (the use that made that local per-thread is
        elsewhere)."""
        if isinstance(stmt, tirx.For):
            exprs = [stmt.min, stmt.extent]
        elif isinstance(stmt, tirx.IfThenElse | tirx.While):
            exprs = [stmt.condition]
        elif isinstance(stmt, tirx.Bind):
            exprs = [stmt.value]
        elif isinstance(stmt, tirx.BufferStore | tirx.Evaluate):
            exprs = [stmt]
        else:
            return None
        found: list = []

        def visit(n):
            if found:
                return
            if isinstance(n, tirx.Var) and n in self.thread_vars:
                found.append(f"the thread index '{n.name}' (T.get_thread_binding / the threads of T.Kernel)")
            elif isinstance(n, tirx.Call):
                name = op_name(n)
                if name in THREAD_CALLS:
                    found.append(f"'{name.replace('tirx.', 'T.').replace('tl.', 'T.')}'")
                elif extern_name(n) in EXTERN_THREAD_CALLS:
                    found.append(f"the CUDA function '{extern_name(n)}'")

        for e in exprs:
            tirx.stmt_functor.post_order_visit(e, visit)
        return found[0] if found else None

    def is_thread_level(self, stmt) -> bool:
        """A statement that is thread-level as a whole: it depends on the thread and holds no tile op
        (a loop or if holding both is split by the frontend)."""
        return self.expr_level(stmt) and not has_tile_op(stmt)


def _buffers(stmt) -> list:
    out: list = []

    def visit(n):
        if isinstance(n, tirx.BufferLoad | tirx.BufferStore):
            out.append(n.buffer)

    tirx.stmt_functor.post_order_visit(stmt, visit)
    return out


# Tile ops thread-level code may hold: a fill is shared out among the threads of a SIMT function
# (each thread stores every nthreads-th element), as TileLang shares it out among GPU threads.
ABSORBED_TILE_OPS = frozenset({"tl.tileop.fill"})


def has_tile_op(stmt) -> bool:
    """Does ``stmt`` hold a tile op (T.copy, T.gemm, T.reduce, ...; a fill does not count) or a
    T.Parallel?"""
    found = [False]

    def visit(n):
        if isinstance(n, tirx.Call) and op_name(n).startswith(TILE_OP_PREFIX) and \
                op_name(n) not in ABSORBED_TILE_OPS:
            found[0] = True
        elif isinstance(n, tirx.For) and n.kind == tirx.ForKind.PARALLEL:
            found[0] = True

    tirx.stmt_functor.post_order_visit(stmt, visit)
    return found[0]


def first_stmt(stmt, pred):
    """The first statement under ``stmt`` (pre-order) for which ``pred`` holds, else None."""
    found: list = []

    def visit(n):
        if found:
            return False
        if isinstance(n, tirx.Stmt) and not isinstance(n, tirx.SeqStmt) and pred(n):
            found.append(n)
            return False
        return True

    tirx.stmt_functor.pre_order_visit(stmt, visit)
    return found[0] if found else None


__all__ = ["ThreadUse", "THREAD_CALLS", "EXTERN_THREAD_CALLS", "has_tile_op", "op_name", "extern_name",
           "local_scope", "first_stmt", "ABSORBED_TILE_OPS", "ATOMIC_OPS"]
