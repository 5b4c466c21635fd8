"""simt_sync: barriers between the threads of a SIMT function, where TileLang puts them.

TileLang's GPU lowering inserts ``__syncthreads()`` wherever a shared-memory element written by one
thread may next be touched by another (its thread-storage sync), and its examples rely on it (the
gemv's ``A_shared`` filled by every thread, then read). The SIMT functions do the same with
``asc_syncthreads`` (同步与内存栅栏/asc_syncthreads.md), on UB tiles only (GM is not shared
memory; TileLang does not sync it either).

Needs: SimtCalls (lower_simt).
Establishes: in every SIMT function, two accesses of one UB tile by possibly different threads, one
of them a write (an atomic counts as a write, two atomics do not conflict), have an
``asc_syncthreads`` between them on every path. Accesses with the same indices, which name every
thread axis, are the same thread's and need none. A kernel built with TileLang's
TL_DISABLE_THREAD_STORAGE_SYNC still gets them (the pass config does not reach this compiler).

Every barrier is then a whole-block ``asc_syncthreads`` at a point every thread of the block
reaches (the page: a barrier in a branch not every thread takes deadlocks). The SIMT API has no
barrier of part of the block, which TileLang's GPU code uses in two places: ``T.sync_threads(id,
count)`` (``bar.sync id, count``) inside ``if tx < count``, and the barriers its thread-storage
sync puts inside an ``if`` on the thread. Such an ``if`` is split at each barrier inside it:
``if c: A; sync; B`` becomes ``if c: A; sync; if c: B``, and through a loop whose trips every
thread shares, ``if c: for i: A; sync; B`` becomes ``for i: if c: A; sync; if c: B``. The threads
for which c is false now wait at the barriers too, which orders no less than the partial barrier
did; c must read nothing the ``if`` writes (it is evaluated once per part), and a let computed
from memory before such a barrier, a return or break before it, or a barrier in a loop whose trip
count depends on the thread are refused at the line, as are UB accesses of different threads that
meet inside a loop or ``if`` of that kind (no barrier can go between them).
``verify_simt_sync`` checks every barrier is a whole-block one at a point every thread reaches.
"""

from __future__ import annotations

import dataclasses

import tvm
from tvm import arith, tirx

from ascend_backend.errors import InternalCompilerError, UnsupportedError
from ascend_backend.ir import Program, Scope, SimtCall, map_body, walk
from ascend_backend.threads import ATOMIC_OPS, THREAD_CALLS, op_name

from .lower_simt import dsl_line, span_of

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
        self.loc = op.loc
        self.lets: dict = {}  # every let of the body: var -> value
        self.ranges: dict = {}  # every loop of the body, and the threads: var -> Range
        self.shapes: dict = {}  # UB tile -> its TIR shape
        for v, n in zip(op.thread_vars, op.threads, strict=True):
            if v is not None:
                self.ranges[v] = tvm.ir.Range(0, n)
        for st in op.body:
            tirx.stmt_functor.post_order_visit(st, self._collect)
        self.varying: set = set()  # per-thread locals whose value may differ between threads
        for _ in range(64):  # to a fixed point: each round marks at least one more local or let
            before = (len(self.varying), len(self.thread_dep))
            for st in op.body:
                self._classify(st, False)
            if (len(self.varying), len(self.thread_dep)) == before:
                break

    def _collect(self, n) -> None:
        if isinstance(n, tirx.Bind):
            self.lets[n.var] = n.value
        elif isinstance(n, tirx.For):
            self.ranges[n.loop_var] = tvm.ir.Range.from_min_extent(n.min, n.extent)
        elif isinstance(n, tirx.BufferLoad | tirx.BufferStore) and n.buffer.name in self.ub:
            self.shapes[n.buffer.name] = tuple(n.buffer.shape)

    def _classify(self, s, divergent: bool) -> None:
        """Which lets, loop variables and per-thread locals may differ between threads: those set
        from thread-dependent values, or under a condition or loop some threads only run."""
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                self._classify(x, divergent)
        elif isinstance(s, tirx.For):
            d = divergent or not (self.uniform(s.min) and self.uniform(s.extent))
            if d:
                self.thread_dep.add(s.loop_var)
            self._classify(s.body, d)
        elif isinstance(s, tirx.While):
            self._classify(s.body, divergent or not self.uniform(s.condition))
        elif isinstance(s, tirx.IfThenElse):
            d = divergent or not self.uniform(s.condition)
            self._classify(s.then_case, d)
            if s.else_case is not None:
                self._classify(s.else_case, d)
        elif isinstance(s, tirx.SBlockRealize):
            self._classify(s.block, divergent)
        elif isinstance(s, tirx.SBlock | tirx.AttrStmt):
            self._classify(s.body, divergent)
        elif isinstance(s, tirx.Bind):
            if not self.uniform(s.value):
                self.thread_dep.add(s.var)
        elif isinstance(s, tirx.BufferStore) and s.buffer.name in self.own:
            if divergent or not self.uniform(s.value) or not all(self.uniform(i) for i in s.indices):
                self.varying.add(s.buffer.name)

    # -- accesses
    def accesses(self, s) -> _State:
        """The UB accesses of ``s``: (tile, indices, the loops inside ``s``: {var: Range}), with the
        lets inlined into the indices (so that they name the thread and the loop variables)."""
        st = _State()
        inner: dict = {}

        def visit(n):
            if isinstance(n, tirx.For):
                inner[n.loop_var] = tvm.ir.Range.from_min_extent(n.min, n.extent)
            elif isinstance(n, tirx.Call) and op_name(n) in ATOMIC_OPS:
                ptr = n.args[0]
                load = ptr.args[0] if isinstance(ptr, tirx.Call) and op_name(ptr) == "tl.access_ptr" else ptr
                if isinstance(load, tirx.BufferLoad) and load.buffer.name in self.ub:
                    st.atomics.append((load.buffer.name, self.inline(load.indices), inner))
            elif isinstance(n, tirx.BufferStore) and n.buffer.name in self.ub:
                st.writes.append((n.buffer.name, self.inline(n.indices), inner))
            elif isinstance(n, tirx.BufferLoad) and n.buffer.name in self.ub:
                st.reads.append((n.buffer.name, self.inline(n.indices), inner))

        tirx.stmt_functor.post_order_visit(s, visit)
        # an atomic's address load is not a plain read
        st.reads = [r for r in st.reads if not any(r[0] == a[0] and _same(r[1], a[1]) for a in st.atomics)]
        return st

    def inline(self, indices) -> tuple:
        out = []
        for i in indices:
            for _ in range(16):  # lets of lets
                j = tirx.stmt_functor.substitute(i, self.lets)
                if tvm.ir.structural_equal(i, j):
                    break
                i = j
            out.append(i)
        return tuple(out)

    def same_thread(self, a: tuple, b: tuple) -> bool:
        if a[0] != b[0] or not _same(a[1], b[1]):
            return False
        used: set = set()
        for i in a[1]:
            tirx.stmt_functor.post_order_visit(i, lambda n: used.add(n) if isinstance(n, tirx.Var) else None)
        return all(v in used for v in self.axes)

    def apart(self, a: tuple, b: tuple, carried: dict) -> bool:
        """Do accesses ``a`` and ``b`` of one tile never touch one element from two threads? Both
        flat indices c * t + r(loops) with one thread axis t and one constant c, and |r_a - r_b| < |c|
        over the loops inside each access (and ``carried``: the loop whose next trip ``b`` is in),
        each access taking its own values of them; the loops around both have one value."""
        if len(self.axes) != 1 or a[0] not in self.shapes:
            return False
        t = self.axes[0]
        ana = arith.Analyzer()
        for v, r in self.ranges.items():
            ana.bind(v, r)
        if _same(a[1], b[1]) and self.injective(a, carried, ana):
            return True
        parts = []
        for acc in (a, b):
            free = {**acc[2], **carried}
            fresh = {v: tirx.Var(f"{v.name}_{len(parts)}", v.dtype) for v in free}
            for v, r in free.items():
                lo = tirx.stmt_functor.substitute(r.min, fresh)
                ana.bind(fresh[v], tvm.ir.Range.from_min_extent(lo, tirx.stmt_functor.substitute(r.extent, fresh)))
            flat = _flatten(acc[1], self.shapes[acc[0]])
            if flat is None:
                return False
            coef = arith.detect_linear_equation(ana.simplify(tirx.stmt_functor.substitute(flat, fresh)), [t])
            if len(coef) != 2 or not isinstance(ana.simplify(coef[0]), tirx.IntImm):
                return False
            parts.append((int(ana.simplify(coef[0])), coef[1]))
        (ca, ra), (cb, rb) = parts
        if ca != cb or ca == 0:
            return False
        bound = ana.const_int_bound(ana.simplify(ra - rb))
        return -abs(ca) < bound.min_value and bound.max_value < abs(ca)

    def injective(self, a: tuple, carried: dict, ana) -> bool:
        """Is the flat index of ``a``, as a function of the thread and the loops that may differ
        between the two accesses (``a``'s own, ``carried``), one-to-one? Linear, constant
        coefficients, and sorted by size each coefficient above the span of the smaller terms (a
        mixed-radix number), as in ``i * 2048 + tx * 16 + v`` with v < 16, tx < 128."""
        flat = _flatten(a[1], self.shapes[a[0]])
        if flat is None:
            return False
        digits = {self.axes[0]: self.ranges[self.axes[0]], **a[2], **carried}
        names = list(digits)
        coefs = arith.detect_linear_equation(ana.simplify(flat), names)
        if len(coefs) != len(names) + 1:
            return False
        terms = []
        for v, c in zip(names, coefs[:-1], strict=True):
            c, ext = ana.simplify(c), digits[v].extent
            if not isinstance(c, tirx.IntImm) or not isinstance(ext, tirx.IntImm):
                return False
            if int(c) != 0 and int(ext) > 1:
                terms.append((abs(int(c)), int(ext)))
            elif v.same_as(self.axes[0]):
                return False  # every thread at one index
        span = 0
        for c, ext in sorted(terms):
            if c <= span:
                return False
            span += c * (ext - 1)
        return True

    def conflict(self, before: _State, after: _State, carried: dict | None = None) -> bool:
        carried = carried or {}

        def clash(xs, ys) -> bool:
            return any(x[0] == y[0] and not (not carried and self.same_thread(x, y)) and
                       not self.apart(x, y, carried) for x in xs for y in ys)

        return (clash(before.writes, after.reads) or clash(before.writes, after.writes)
                or clash(before.writes, after.atomics) or clash(before.reads, after.writes)
                or clash(before.reads, after.atomics) or clash(before.atomics, after.reads)
                or clash(before.atomics, after.writes))

    def uniform(self, e) -> bool:
        """Does ``e`` have one value in every thread of the block? No thread index, let or loop
        variable that depends on it, per-thread local that may differ, warp collective or atomic;
        a load of one address for every thread (a UB or GM element, after the barriers this pass
        places) counts as one value, as TileLang's sync takes it."""
        found = [False]

        def visit(n):
            if isinstance(n, tirx.Var) and n in self.thread_dep:
                found[0] = True
            elif isinstance(n, tirx.BufferLoad) and n.buffer.name in self.varying:
                found[0] = True
            elif isinstance(n, tirx.Call) and (op_name(n) in THREAD_CALLS or op_name(n) in ATOMIC_OPS):
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
            if isinstance(s, tirx.IfThenElse) and (self.uniform(s.condition) or self.stable(s)):
                # on the thread but evaluated the same in every part: barriers go inside, and
                # _Distribute splits the if at them
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
                out.append(tirx.IfThenElse(s.condition, then_case, else_case, span=span_of(s)))
                continue
            if isinstance(s, tirx.For | tirx.While | tirx.IfThenElse) and self.meet_inside(s):
                what = {tirx.For: "a loop whose trip count", tirx.While: "a while loop whose condition",
                        tirx.IfThenElse: "an `if` whose condition"}[type(s)]
                raise UnsupportedError(
                    f"UB accesses of different threads meet inside {what} depends on the thread (or on what it "
                    "changes): the barrier between them (asc_syncthreads) would not be reached by every thread of "
                    "the block", loc=dsl_line(s, self.loc),
                    hint="loop over a trip count every thread shares and test the thread's own bound inside (for k "
                    "in T.serial(n_max): if k < n: ...), or compute the condition into a per-thread local the "
                    "`if` does not change")
            if self.conflict(state, acc):
                out.append(_barrier())
                state.reads, state.writes, state.atomics = [], [], []
            state.add(acc)
            out.append(s)
        return out

    def stable(self, s) -> bool:
        """Does the condition of ``if`` statement ``s`` read nothing its branches write, and no warp
        collective (so that it has the same value in each part _Distribute splits it into)?"""
        return _stable(s)

    def meet_inside(self, s) -> bool:
        """Would accesses inside ``s`` (a loop or if run by only some threads, or a different number
        of times) need a barrier between them?"""
        parts = [s.then_case] + ([s.else_case] if s.else_case is not None else []) \
            if isinstance(s, tirx.IfThenElse) else [s.body]
        for part in parts:
            st = _State()
            items = _items(part)
            if _count_barriers(self.seq(items, st)) > _count_barriers(items):
                return True
            if not isinstance(s, tirx.IfThenElse) and self.conflict(st, self.accesses(part)):
                return True
        return False

    def loop(self, s, state: _State):
        """A loop every thread runs the same trips of: barriers inside it, and one at the top of its
        body when an access of one trip meets the next trip's."""
        first = _State()
        first.add(state)
        inner = self.seq(_items(s.body), first)
        # what is left unsynced at the end of a trip against the next trip's accesses before its
        # first barrier
        head = _State()
        for x in inner:
            if _is_barrier(x):
                break
            head.add(self.accesses(x))
        if self.conflict(first, head, {s.loop_var: tvm.ir.Range.from_min_extent(s.min, s.extent)}):
            second = _State()
            inner = self.seq([_barrier(), *_items(s.body)], second)
            first = second
        state.reads, state.writes, state.atomics = first.reads, first.writes, first.atomics
        return _for(s, inner)


def _flatten(indices: tuple, shape: tuple):
    """The row-major element offset of ``indices`` in a buffer of ``shape`` (None if symbolic)."""
    flat = None
    for i, n in zip(indices, shape, strict=True):
        if not isinstance(n, tirx.IntImm | int):
            return None
        flat = i if flat is None else flat * int(n) + i
    return flat


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(tvm.ir.structural_equal(x, y) for x, y in zip(a, b, strict=True))


def _items(s) -> list:
    return list(s.seq) if isinstance(s, tirx.SeqStmt) else [s]


def _as_stmt(items: list):
    return items[0] if len(items) == 1 else tirx.SeqStmt(items)


def _count_barriers(items) -> int:
    n = [0]

    def visit(x):
        if _is_barrier(x):
            n[0] += 1

    for st in items:
        tirx.stmt_functor.post_order_visit(st, visit)
    return n[0]


def _stores(s) -> set:
    """The buffers statement ``s`` writes (stores and atomics)."""
    out: set = set()

    def visit(n):
        if isinstance(n, tirx.BufferStore):
            out.add(n.buffer.name)
        elif isinstance(n, tirx.Call) and op_name(n) == "tl.access_ptr" and isinstance(n.args[0], tirx.BufferLoad):
            out.add(n.args[0].buffer.name)

    tirx.stmt_functor.post_order_visit(s, visit)
    return out


def _stable(s) -> bool:
    read: set = set()
    collective = [False]

    def visit(n):
        if isinstance(n, tirx.BufferLoad):
            read.add(n.buffer.name)
        elif isinstance(n, tirx.Call) and op_name(n) in THREAD_CALLS:
            collective[0] = True

    tirx.stmt_functor.post_order_visit(s.condition, visit)
    written = _stores(s.then_case) | (_stores(s.else_case) if s.else_case is not None else set())
    return not collective[0] and not (read & written)


def _pure(e) -> bool:
    """No memory read, no collective: safe for every thread to evaluate, with one value each time."""
    bad = [False]

    def visit(n):
        if isinstance(n, tirx.BufferLoad) or isinstance(n, tirx.Call) and (
                op_name(n) in THREAD_CALLS or op_name(n) == "tirx.call_extern"):
            bad[0] = True

    tirx.stmt_functor.post_order_visit(e, visit)
    return not bad[0]


def _exits(s) -> bool:
    found = [False]

    def visit(n):
        if isinstance(n, tirx.Call) and op_name(n) in ("tirx.thread_return", "tirx.break_loop"):
            found[0] = True

    tirx.stmt_functor.post_order_visit(s, visit)
    return found[0]


class _Distribute:
    """Every barrier a whole-block one at a point every thread reaches: an ``if`` on the thread with
    barriers inside is split at them (the module docstring)."""

    def __init__(self, sync: _Sync) -> None:
        self.sync = sync

    def fail(self, what: str, s, hint: str) -> None:
        raise UnsupportedError(f"{what}: asc_syncthreads, the SIMT barrier, must be reached by every thread of the "
                               "block, and the SIMT API has no barrier of part of it", loc=dsl_line(s, self.sync.loc),
                               hint=hint)

    def seq(self, items: list) -> list:
        """Statements every thread reaches (a barrier right after another, pure lets between them,
        is dropped)."""
        out: list = []
        for s in items:
            if _is_barrier(s) and _barrier_last(out):
                continue
            if isinstance(s, tirx.SeqStmt):
                out.extend(self.seq(list(s.seq)))
            elif _is_barrier(s):
                out.append(_barrier())
            elif _count_barriers([s]) == 0:
                out.append(s)
            elif isinstance(s, tirx.For):
                self.shared_trips(s)
                out.append(_for(s, self.seq(_items(s.body))))
            elif isinstance(s, tirx.IfThenElse) and self.sync.uniform(s.condition):
                else_case = _as_stmt(self.seq(_items(s.else_case))) if s.else_case is not None else None
                out.append(tirx.IfThenElse(s.condition, _as_stmt(self.seq(_items(s.then_case))), else_case,
                                           span=span_of(s)))
            elif isinstance(s, tirx.IfThenElse):
                out.extend(self.split(s, None))
            elif isinstance(s, tirx.AttrStmt):
                out.append(tirx.AttrStmt(s.node, s.attr_key, s.value, _as_stmt(self.seq(_items(s.body))),
                                         span=span_of(s)))
            else:
                self.fail(f"a barrier inside {type(s).__name__}", s, "put T.sync_threads() at the top level")
        return out

    def shared_trips(self, s) -> None:
        if not (self.sync.uniform(s.min) and self.sync.uniform(s.extent)) or s.kind == tirx.ForKind.PARALLEL:
            self.fail("a barrier inside a loop whose trip count depends on the thread", _first_barrier(s) or s,
                      "loop over a trip count every thread shares and test the thread's own bound inside "
                      "(for k in T.serial(n_max): if k < n: ...)")

    def split(self, s, outer) -> list:
        """``if`` statement ``s`` (under the thread condition ``outer``, or None) with barriers
        inside, as parts every thread reaches."""
        if not _stable(s):
            self.fail("a barrier inside an `if` whose condition reads what the `if` changes (or a warp collective)",
                      s, "compute the condition into a per-thread local before the `if`, which the `if` does not "
                      "change")
        if s.else_case is not None and _count_barriers([s.else_case]) > 0:
            self.fail("a barrier in the else branch of an `if` on the thread", s,
                      "write the branches as two `if` statements with opposite conditions")
        always = isinstance(s.condition, tirx.IntImm) and bool(s.condition.value)
        cond = s.condition if outer is None else outer if always else tirx.And(outer, s.condition)
        items = _items(s.then_case)
        out: list = []
        cur: list = []
        pending_else = [s.else_case] if s.else_case is not None else []

        def flush():
            if cur or pending_else:
                then_case = _as_stmt(cur) if cur else tirx.Evaluate(tirx.IntImm("int32", 0))
                out.append(tirx.IfThenElse(cond, then_case, pending_else[0] if pending_else else None,
                                           span=span_of(s)))
                cur.clear()
                pending_else.clear()

        for n, x in enumerate(items):
            later = _count_barriers(items[n + 1:]) > 0
            if _is_barrier(x):
                flush()
                out.append(_barrier())
            elif _count_barriers([x]) == 0:
                if isinstance(x, tirx.Bind) and later:
                    if not _pure(x.value):
                        self.fail(f"the let '{x.var.name}' reads memory before a barrier inside an `if` on the thread",
                                  x, f"store '{x.var.name}' in a T.alloc_var before the barrier")
                    flush()
                    out.append(x)  # every thread computes it: its value is used past the split
                    continue
                if later and _exits(x):
                    self.fail("a return or break before a barrier inside an `if` on the thread", x,
                              "let every thread reach the barrier and skip the rest with an `if`")
                cur.append(x)
            elif isinstance(x, tirx.For):
                self.shared_trips(x)
                flush()
                out.append(_for(x, self._inside(_items(x.body), cond)))
            elif isinstance(x, tirx.IfThenElse):
                flush()
                if self.sync.uniform(x.condition):
                    # the same branch in every thread: split each branch under cond
                    then = self._inside(_items(x.then_case), cond)
                    other = self._inside(_items(x.else_case), cond) if x.else_case is not None else []
                    out.append(tirx.IfThenElse(x.condition, _as_stmt(then), _as_stmt(other) if other else None,
                                               span=span_of(x)))
                else:
                    out.extend(self.split(x, cond))
            elif isinstance(x, tirx.SeqStmt):
                flush()
                out.extend(self._inside(list(x.seq), cond))
            else:
                self.fail(f"a barrier inside {type(x).__name__} inside an `if` on the thread", x,
                          "put T.sync_threads() at the top level")
        flush()
        return out

    def _inside(self, items: list, cond) -> list:
        """Statements run under ``cond``, as parts every thread reaches."""
        wrapper = tirx.IfThenElse(tirx.IntImm("bool", 1), _as_stmt(items), None)
        return self.split(wrapper, cond)


def _first_barrier(s):
    found: list = []

    def visit(n):
        if not found and _is_barrier(n):
            found.append(n)

    tirx.stmt_functor.post_order_visit(s, visit)
    return found[0] if found else None


def _barrier_last(out: list) -> bool:
    for x in reversed(out):
        if _is_barrier(x):
            return True
        if not (isinstance(x, tirx.Bind) and _pure(x.value)):
            return False
    return False


def _for(s, body: list):
    return tirx.For(s.loop_var, s.min, s.extent, s.kind, _as_stmt(body), s.thread_binding, s.annotations,
                    span=span_of(s))


def sync_call(op: SimtCall, ub: set) -> SimtCall:
    sync = _Sync(op, ub)
    body = sync.seq(list(op.body), _State())
    return dataclasses.replace(op, body=tuple(_Distribute(sync).seq(body)))


def simt_sync(program: Program) -> Program:
    """Barriers between the threads of every SIMT function where their UB accesses meet."""

    def one(k, lc, p):
        ub = {n for n, b in k.buffers.items() if b.scope is Scope.UB}
        return k.replace(body=map_body(k.body, lambda s: [sync_call(s, ub)] if isinstance(s, SimtCall) else [s]))

    out = program.map_kernels(one)
    verify_simt_sync(out)
    return out


def verify_simt_sync(program: Program) -> None:
    """Every barrier of every SIMT function is a whole-block one at a point every thread reaches."""
    for _, _core, k in program.kernels():
        for s in walk(k.body):
            if isinstance(s, SimtCall) and _divergent_barriers(s):
                raise InternalCompilerError(f"a barrier of {s.func} not reached by every thread, or of part of the "
                                            "block", stage="simt_sync")


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
            go(s.body, reached and sync.uniform(s.condition))
        elif isinstance(s, tirx.SBlockRealize):
            go(s.block, reached)
        elif isinstance(s, tirx.SBlock | tirx.AttrStmt):
            go(s.body, reached)
        elif _is_barrier(s) and (not reached or len(s.value.args) > 1):
            count[0] += 1

    for st in op.body:
        go(st, True)
    return count[0]


__all__ = ["simt_sync", "verify_simt_sync", "sync_call"]
