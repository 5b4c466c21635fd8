"""simt_sync: barriers between the threads of a SIMT function, where TileLang puts them.

TileLang's GPU lowering inserts ``__syncthreads()`` wherever a shared-memory element written by one
thread may next be touched by another (its thread-storage sync), and its examples rely on it (the
gemv's ``A_shared`` filled by every thread, then read). The SIMT functions do the same with
``asc_syncthreads`` (同步与内存栅栏/asc_syncthreads.md), on UB tiles only (GM is not shared
memory; TileLang does not sync it either).

Needs: SimtCalls (lower_simt).
Establishes: in every SIMT function, two accesses of one UB tile by possibly different threads, one
of them a write (an atomic counts as a write, two atomics do not conflict), have an
``asc_syncthreads`` between them on every path, placed where every thread of the block arrives
(never under a condition or in a loop whose bounds depend on the thread: the barrier then goes
before that statement). Accesses with the same indices, which name every thread axis, are the same
thread's and need none. A kernel built with TileLang's TL_DISABLE_THREAD_STORAGE_SYNC still gets
them (the pass config does not reach this compiler). ``verify_simt_sync`` checks every barrier is
at a point every thread reaches.
"""

from __future__ import annotations

import dataclasses

import tvm
from tvm import tirx

from ascend_backend.errors import InternalCompilerError
from ascend_backend.ir import Program, Scope, SimtCall, map_body, walk
from ascend_backend.threads import ATOMIC_OPS, op_name

_BARRIERS = ("tirx.tvm_storage_sync", "tl.sync_threads")


def _barrier():
    return tirx.Evaluate(tirx.call_intrin("int32", "tirx.tvm_storage_sync", tirx.StringImm("shared")))


def _is_barrier(s) -> bool:
    return isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.Call) and op_name(s.value) in _BARRIERS


@dataclasses.dataclass
class _State:
    """UB accesses since the last barrier: (buffer, indices) pairs."""

    reads: list = dataclasses.field(default_factory=list)
    writes: list = dataclasses.field(default_factory=list)
    atomics: list = dataclasses.field(default_factory=list)

    def add(self, other: _State) -> None:
        self.reads += other.reads
        self.writes += other.writes
        self.atomics += other.atomics

    def empty(self) -> bool:
        return not (self.reads or self.writes or self.atomics)


class _Sync:
    def __init__(self, op: SimtCall, ub: set) -> None:
        self.ub = ub
        self.axes = [v for v, n in zip(op.thread_vars, op.threads, strict=True) if v is not None and n > 1]
        self.thread_dep = {v for v in op.thread_vars if v is not None}
        self.own = {b.name for b in op.locals}

    # -- accesses
    def accesses(self, s) -> _State:
        st = _State()

        def visit(n):
            if isinstance(n, tirx.Call) and op_name(n) in ATOMIC_OPS:
                ptr = n.args[0]
                load = ptr.args[0] if isinstance(ptr, tirx.Call) and op_name(ptr) == "tl.access_ptr" else ptr
                if isinstance(load, tirx.BufferLoad) and load.buffer.name in self.ub:
                    st.atomics.append((load.buffer.name, tuple(load.indices)))
                    self._skip.add(id(load))
            elif isinstance(n, tirx.BufferStore) and n.buffer.name in self.ub:
                st.writes.append((n.buffer.name, tuple(n.indices)))
            elif isinstance(n, tirx.BufferLoad) and n.buffer.name in self.ub:
                st.reads.append((n.buffer.name, tuple(n.indices)))

        self._skip: set = set()
        tirx.stmt_functor.post_order_visit(s, visit)
        # an atomic's address load is not a plain read
        st.reads = [r for r in st.reads if not any(r[0] == a[0] and _same(r[1], a[1]) for a in st.atomics)]
        return st

    def same_thread(self, a: tuple, b: tuple) -> bool:
        if a[0] != b[0] or not _same(a[1], b[1]):
            return False
        used: set = set()
        for i in a[1]:
            tirx.stmt_functor.post_order_visit(i, lambda n: used.add(n) if isinstance(n, tirx.Var) else None)
        return all(v in used for v in self.axes)

    def conflict(self, before: _State, after: _State) -> bool:
        def clash(xs, ys) -> bool:
            return any(x[0] == y[0] and not self.same_thread(x, y) for x in xs for y in ys)

        return (clash(before.writes, after.reads) or clash(before.writes, after.writes)
                or clash(before.writes, after.atomics) or clash(before.reads, after.writes)
                or clash(before.reads, after.atomics) or clash(before.atomics, after.reads)
                or clash(before.atomics, after.writes))

    def uniform(self, e) -> bool:
        """Does ``e`` have one value in every thread (no thread index, no per-thread local)?"""
        found = [False]

        def visit(n):
            if isinstance(n, tirx.Var) and n in self.thread_dep:
                found[0] = True
            elif isinstance(n, tirx.BufferLoad) and (n.buffer.name in self.own or n.buffer.name in self.ub):
                found[0] = True

        tirx.stmt_functor.post_order_visit(e, visit)
        return not found[0]

    # -- placement
    def seq(self, items: list, state: _State) -> list:
        out: list = []
        for s in items:
            if isinstance(s, tirx.SeqStmt):
                out.extend(self.seq(list(s.seq), state))
                continue
            if _is_barrier(s):
                out.append(s)
                state.reads, state.writes, state.atomics = [], [], []
                continue
            acc = self.accesses(s)
            if acc.empty():
                out.append(s)
                continue
            if isinstance(s, tirx.For) and self.uniform(s.min) and self.uniform(s.extent) and \
                    s.kind != tirx.ForKind.PARALLEL:
                if self.conflict(state, acc):
                    out.append(_barrier())
                    state.reads, state.writes, state.atomics = [], [], []
                out.append(self.loop(s, state))
                continue
            if isinstance(s, tirx.IfThenElse) and self.uniform(s.condition):
                if self.conflict(state, acc):
                    out.append(_barrier())
                    state.reads, state.writes, state.atomics = [], [], []
                then_state = dataclasses.replace(state, reads=list(state.reads), writes=list(state.writes),
                                                 atomics=list(state.atomics))
                then_case = _as_stmt(self.seq(_items(s.then_case), then_state))
                else_case = None
                if s.else_case is not None:
                    else_state = dataclasses.replace(state, reads=list(state.reads), writes=list(state.writes),
                                                     atomics=list(state.atomics))
                    else_case = _as_stmt(self.seq(_items(s.else_case), else_state))
                    then_state.add(else_state)
                state.reads, state.writes, state.atomics = then_state.reads, then_state.writes, then_state.atomics
                out.append(tirx.IfThenElse(s.condition, then_case, else_case))
                continue
            if self.conflict(state, acc):
                out.append(_barrier())
                state.reads, state.writes, state.atomics = [], [], []
            state.add(acc)
            out.append(s)
        return out

    def loop(self, s, state: _State):
        """A loop every thread runs the same trips of: barriers inside it, and one at the top of its
        body when an access of one trip meets the next trip's."""
        body_acc = self.accesses(s.body)
        first = _State()
        first.add(state)
        inner = self.seq(_items(s.body), first)
        # what is left unsynced at the end of a trip against the body's accesses in the next trip
        if self.conflict(first, body_acc):
            second = _State()
            inner = self.seq([_barrier(), *inner], second)
            first = second
        state.reads, state.writes, state.atomics = first.reads, first.writes, first.atomics
        return tirx.For(s.loop_var, s.min, s.extent, s.kind, _as_stmt(inner), s.thread_binding, s.annotations)


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(tvm.ir.structural_equal(x, y) for x, y in zip(a, b, strict=True))


def _items(s) -> list:
    return list(s.seq) if isinstance(s, tirx.SeqStmt) else [s]


def _as_stmt(items: list):
    return items[0] if len(items) == 1 else tirx.SeqStmt(items)


def sync_call(op: SimtCall, ub: set) -> SimtCall:
    body = tuple(_Sync(op, ub).seq(list(op.body), _State()))
    return dataclasses.replace(op, body=body)


def simt_sync(program: Program) -> Program:
    """Barriers between the threads of every SIMT function where their UB accesses meet."""

    def one(k, lc, p):
        ub = {n for n, b in k.buffers.items() if b.scope is Scope.UB}
        return k.replace(body=map_body(k.body, lambda s: [sync_call(s, ub)] if isinstance(s, SimtCall) else [s]))

    out = program.map_kernels(one)
    verify_simt_sync(out, program)
    return out


def verify_simt_sync(program: Program, before: Program | None = None) -> None:
    """The pass put no barrier where some thread may not arrive: each SIMT function has no more
    barriers under thread-dependent conditions than its thread-level code had."""
    calls = {}
    if before is not None:
        for _, _core, k in before.kernels():
            calls.update({s.func: s for s in walk(k.body) if isinstance(s, SimtCall)})
    for _, _core, k in program.kernels():
        for s in walk(k.body):
            if not isinstance(s, SimtCall):
                continue
            old = calls.get(s.func)
            if old is not None and _divergent_barriers(old) < _divergent_barriers(s):
                raise InternalCompilerError(f"a barrier of {s.func} under a thread-dependent condition",
                                            stage="simt_sync")


def _divergent_barriers(op: SimtCall) -> int:
    sync = _Sync(op, set())
    count = [0]

    def go(s, reached: bool) -> None:
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                go(x, reached)
        elif isinstance(s, tirx.For):
            go(s.body, reached and sync.uniform(s.min) and sync.uniform(s.extent))
        elif isinstance(s, tirx.IfThenElse):
            go(s.then_case, reached and sync.uniform(s.condition))
            if s.else_case is not None:
                go(s.else_case, reached and sync.uniform(s.condition))
        elif isinstance(s, tirx.While):
            go(s.body, False)
        elif isinstance(s, tirx.SBlockRealize):
            go(s.block, reached)
        elif isinstance(s, tirx.SBlock | tirx.AttrStmt):
            go(s.body, reached)
        elif _is_barrier(s) and not reached:
            count[0] += 1

    for st in op.body:
        go(st, True)
    return count[0]


__all__ = ["simt_sync", "verify_simt_sync", "sync_call"]
