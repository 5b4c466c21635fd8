"""insert_sync: order every dependency between pipes with paired SetFlag/WaitFlag.

Needs: a lowered body (only Loops and AscOps), each op tagged with its pipe and buffers.
Establishes: for every pair of ops on different pipes that touch a buffer in conflict (one of
them writes it), the later op is ordered after the earlier one by a SetFlag<SRC_DST>/WaitFlag
pair, or by a chain of such pairs already placed. Rules:

* A flag is placed in the innermost statement list holding both ops (a loop counts as one item:
  a Set after a loop covers all its ops, a Wait before a loop covers all of them).
* A dependency carried across loop iterations (the consumer comes first in the body) is primed
  with a Set before the loop, waited before the consumer, set again after the producer and
  drained with a Wait after the loop, so every Set has its Wait.
* Only the last producer on each pipe needs a flag (a Set covers every earlier op of its pipe),
  and a dependency already ordered by placed flags gets none of its own.
* PipeBarrier<PIPE_V> orders dependent vector ops on archs whose vector pipe does not keep them
  in order (dav-c220); no PIPE_ALL is ever emitted.
* Event ids are allocated per event type within 0-5 so that flags alive at the same time never
  share an id.
* An ``If`` is one item, like a loop without a next iteration: its branches are synced inside.
* A cross-core round trip on the AIC (it sets "ready" for a tile, the AIVs derive the next
  crossing tile from it and only then set "ready" for that one, which the AIC waits for) orders
  the set's pipe before the wait's pipe like a flag would; the analysis reads the AIV program.
Every flag records its producer, consumer and buffer in ``kernel.flags`` (the sync table).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ascend_backend.errors import InternalCompilerError
from ascend_backend.ir import (
    AscOp,
    CopyGmToUb,
    CopyUbToGm,
    CopyUbToPeerL1,
    Core,
    CrossCoreSetOp,
    CrossCoreWaitOp,
    Direction,
    Event,
    EventId,
    FlagRecord,
    If,
    Kernel,
    Launch,
    Loop,
    Pipe,
    PipeBarrier,
    Print,
    Program,
    ScalarStore,
    Scope,
    SetFlag,
    SyncPhase,
    WaitFlag,
    walk,
)
from ascend_backend.ir.nodes import loaded_buffers

MAX_EVENT_ID = 5


@dataclass
class _Event:
    pipe: Pipe
    reads: frozenset
    writes: frozenset
    op: AscOp


@dataclass
class _Flag:
    src: str
    dst: str
    i: int  # producer item (Set after it)
    j: int  # consumer item (Wait before it)
    carried: bool
    producer: AscOp
    consumer: AscOp
    buffer: str
    hazard: str
    record: FlagRecord | None = None
    syncs: list = field(default_factory=list)
    slots: int = 1  # >1: one event id per slot of a pipelined loop, selected by ``slot_var`` % slots
    slot_var: object = None
    base: int = 0  # first event id
    virtual: bool = False  # a cross-core round trip: used for coverage, never emitted

    @property
    def event(self) -> Event:
        return Event(self.src, self.dst)


def _events(item, skip: frozenset = frozenset()) -> list:
    """The accesses of a statement per pipe: an op's own, plus the scalar unit's reads of the
    buffers its addresses are computed from (a data-dependent window reads its index on S, when
    the op is issued). ``skip``: buffers no flag ever orders (scalar locals live in registers)."""
    if isinstance(item, AscOp | ScalarStore | Print):
        out = [_Event(item.pipe, frozenset(item.reads) - skip, frozenset(item.writes) - skip, item)]
        idx = frozenset(getattr(item, "index_reads", ())) - skip
        if idx:
            out.insert(0, _Event(Pipe.S, idx, frozenset(), item))
        return out
    if isinstance(item, Loop):
        # the scalar unit evaluates the bounds (and a while loop's condition) before each trip
        bounds = frozenset(loaded_buffers(item.extent, item.start, item.cond)) - skip
        return [e for s in item.body for e in _events(s, skip)] + (
            [_Event(Pipe.S, bounds, frozenset(), item)] if bounds else [])
    if isinstance(item, If):
        cond = frozenset(loaded_buffers(item.cond)) - skip
        return [e for s in (*item.then_body, *item.else_body) for e in _events(s, skip)] + (
            [_Event(Pipe.S, cond, frozenset(), item)] if cond else [])
    return []


def _conflict(p: _Event, c: _Event) -> tuple[str, str] | None:
    """(buffer, hazard) if c must follow p."""
    for b in sorted(p.writes & c.reads):
        return b, "RAW"
    for b in sorted(p.reads & c.writes):
        return b, "WAR"
    for b in sorted(p.writes & c.writes):
        return b, "WAW"
    return None


class _IdsExhausted(Exception):
    def __init__(self, event: str) -> None:
        self.event = event


class _SyncInserter:
    def __init__(self, kernel: Kernel, arch, trips: set, merge: frozenset = frozenset()) -> None:
        self.kernel = kernel
        self.trips = trips
        self.merge = merge  # event types whose flags in pipelined loops are merged to save ids
        self.vector_barrier = arch.needs_vector_barrier
        # scalar locals live in the scalar unit's registers: the S pipe's program order orders them
        self.skip = frozenset(n for n, b in kernel.buffers.items() if b.scope is Scope.LOCAL)
        self.flags: list[_Flag] = []
        self.loop_primes: dict[int, list] = {}  # id(new Loop) -> carried flags primed around it

    def run(self) -> Kernel:
        body = self.block(self.kernel.body, None)
        self._allocate_ids(body)
        records = []
        for n, f in enumerate(self.flags):
            kind = "loop-carried" if f.carried else "in order"
            if f.slots > 1:
                kind += f", {f.slots} slots"
            ev_id = f.base if f.slots == 1 else f"{f.base}..{f.base + f.slots - 1} by {f.slot_var} % {f.slots}"
            rec = FlagRecord(index=n, event=str(f.event), event_id=ev_id,
                             producer=f.producer.text, consumer=f.consumer.text, buffer=f.buffer,
                             kind=f"{kind} {f.hazard}", producer_loc=f.producer.loc, consumer_loc=f.consumer.loc)
            for s in f.syncs:
                s.flag = n
                s.reason = (f"{f.hazard} on {f.buffer}: '{f.consumer.text}' ({f.dst}) after "
                            f"'{f.producer.text}' ({f.src})" + (", previous iteration" if f.carried else ""))
            records.append(rec)
        return self.kernel.replace(body=body, flags=records)

    def block(self, items: list, loop: Loop | None) -> list:
        """Sync one statement list (inner loops first), then wrap loops in their prime/drain."""
        new_items = []
        for s in items:
            if isinstance(s, Loop):
                inner, primes = self.block_level(self.block(s.body, s), s)
                nl = dataclasses.replace(s, body=inner)
                self.loop_primes[id(nl)] = primes
                new_items.append(nl)
            elif isinstance(s, If):
                new_items.append(dataclasses.replace(s, then_body=self.block(s.then_body, None),
                                                     else_body=self.block(s.else_body, None)))
            else:
                new_items.append(s)
        if loop is not None:
            return new_items  # the caller runs block_level with the loop context
        body, _ = self.block_level(new_items, None)
        return body

    def block_level(self, items: list, loop: Loop | None):
        body, primes = _level_impl(self, items, loop)
        out: list = []
        for s in body:
            primes_here = self.loop_primes.get(id(s), []) if isinstance(s, Loop) else []
            for f in primes_here:
                for n in range(f.slots):
                    ps = SetFlag(event=f.event, phase=SyncPhase.PRIME, loc=s.loc, slot=n if f.slots > 1 else None)
                    f.syncs.append(ps)
                    out.append(ps)
            out.append(s)
            for f in primes_here:
                for n in range(f.slots):
                    ds = WaitFlag(event=f.event, phase=SyncPhase.DRAIN, loc=s.loc, slot=n if f.slots > 1 else None)
                    f.syncs.append(ds)
                    out.append(ds)
        return out, primes

    def _allocate_ids(self, body: list) -> None:
        # Linear positions of syncs; a flag lives from its first to its last sync.
        pos: dict[int, int] = {}
        counter = [0]

        def visit(items):
            for s in items:
                counter[0] += 1
                if isinstance(s, SetFlag | WaitFlag):
                    pos[id(s)] = counter[0]
                if isinstance(s, Loop):
                    visit(s.body)
                    counter[0] += 1
                if isinstance(s, If):
                    visit(s.then_body)
                    visit(s.else_body)
                    counter[0] += 1

        visit(body)
        spans = []
        for f in self.flags:
            ps = [pos[id(s)] for s in f.syncs if id(s) in pos]
            if len(ps) != len(f.syncs) or not ps:
                raise InternalCompilerError("flag with unplaced syncs", stage="insert_sync")
            spans.append((min(ps), max(ps), f))
        busy: dict[str, list] = {}
        for start, end, f in sorted(spans, key=lambda t: t[0]):
            live = busy.setdefault(str(f.event), [])
            live[:] = [(e, k) for e, k in live if e >= start]
            used = {k for _, k in live}
            bases = [b for b in range(MAX_EVENT_ID + 2 - f.slots) if not used & set(range(b, b + f.slots))]
            if not bases:
                raise _IdsExhausted(str(f.event))
            base = bases[0]
            f.base = base
            live.extend((end, k) for k in range(base, base + f.slots))
            for s in f.syncs:
                if f.slots == 1:
                    s.event_id = EventId(base)
                elif s.slot is not None:
                    s.event_id = EventId(base + s.slot)
                else:
                    s.event_id = EventId(base, f.slot_var, f.slots)


def _level_impl(self: _SyncInserter, items: list, loop: Loop | None):
    rotating = dict(loop.slots) if loop is not None else {}
    stages = max(rotating.values(), default=1)

    def slotted(f: _Flag) -> _Flag:
        # Pipes run up to `stages` iterations apart once buffers rotate: a flag set inside the loop
        # gets one id per slot, so a Set never meets the unconsumed Set of an earlier iteration.
        # A carried dependency on a non-rotating buffer keeps distance 1 and one id.
        n = rotating.get(f.buffer, 1) if f.carried else stages
        if n > 1:
            f.slots, f.slot_var = n, loop.var
        return f

    evs = [_events(s, self.skip) for s in items]
    n = len(items)
    placed: list[_Flag] = []
    barriers: set[int] = set()
    waits: dict[int, list] = {j: [] for j in range(n)}
    sets: dict[int, list] = {i: [] for i in range(n)}
    primes: list[_Flag] = []

    def deps(i_range, j):
        found: dict = {}
        for i in i_range:
            for c in evs[j]:
                for p in evs[i]:
                    hit = _conflict(p, c)
                    if hit is not None:
                        found[(p.pipe, c.pipe)] = (i, p, c, *hit)
        return found

    def covered(src: str, i: int, dst: str, j: int) -> bool:
        frontier = [(src, i)]
        seen = set()
        while frontier:
            pipe, pos = frontier.pop()
            if (pipe, pos) in seen:
                continue
            seen.add((pipe, pos))
            for f in placed:
                if f.carried or f.src != pipe or f.i < pos or f.j > j:
                    continue
                if f.dst == dst:
                    return True
                frontier.append((f.dst, f.j))
        return False

    # A cross-core round trip (this core sets "ready" for a tile, the other core consumes it and
    # only then sets "ready" for a tile it derives from it, which this core waits for) orders the
    # set's pipe before the wait's pipe like a flag would: record it for the coverage checks.
    for a, x in enumerate(items):
        if isinstance(x, CrossCoreSetOp):
            for b in range(a + 1, n):
                y = items[b]
                if isinstance(y, CrossCoreWaitOp) and (x.transfer, y.transfer) in self.trips:
                    v = _Flag(x.pipe, y.pipe, a, b, False, x, y, "", "round trip")
                    v.virtual = True
                    placed.append(v)
    for j in range(n):
        for (sp, dp), (i, p, c, buf, hazard) in sorted(deps(range(j), j).items(), key=lambda kv: -kv[1][0]):
            if sp == dp:
                continue
            if covered(sp, i, dp, j):
                continue
            f = slotted(_Flag(sp, dp, i, j, False, p.op, c.op, buf, hazard))
            placed.append(f)
            sets[i].append(f)
            waits[j].append(f)
        if self.vector_barrier and j not in barriers:
            # Same-pipe vector order: every earlier conflicting vector op needs a barrier between it and
            # this item, unless one already sits between them (here, or inside a loop on either side).
            for i in range(j - 1, -1, -1):
                if any(i < b <= j for b in barriers):
                    break
                hit = next((p for p in evs[i] for c in evs[j]
                            if p.pipe == c.pipe == Pipe.V and _conflict(p, c) is not None
                            and not _barrier_inside(items[i], c, last=True) and not _barrier_inside(items[j], p)
                            and not covered(Pipe.V, i, Pipe.V, j)),
                           None)
                if hit is not None:
                    barriers.add(j)
                    break
    if loop is not None:
        for j in range(n):
            for (sp, dp), (i, p, c, buf, hazard) in sorted(deps(range(j, n), j).items(), key=lambda kv: -kv[1][0]):
                if sp == dp:
                    if sp is Pipe.V and self.vector_barrier and not (any(b <= j for b in barriers)
                                                                   or any(b > i for b in barriers)):
                        barriers.add(j)
                    continue
                if (dp is not Pipe.V or not self.vector_barrier) and covered(sp, i, dp, n):
                    continue  # ordered within the iteration already; dp keeps its order into the next one
                need = rotating.get(buf, 1)
                if need > 1 and _static(loop.extent) is not None and _static(loop.extent) <= need:
                    continue  # every iteration has its own slot: the dependency never happens
                if any(f.carried and f.src == sp and f.dst == dp and f.i >= i and f.j <= j
                       and f.slots in (1, need) for f in placed):
                    continue
                f = slotted(_Flag(sp, dp, i, j, True, p.op, c.op, buf, hazard))
                placed.append(f)
                primes.append(f)
                sets[i].append(f)
                waits[j].append(f)
    placed = [f for f in placed if not getattr(f, "virtual", False)]
    if stages > 1 and self.merge:
        # In a pipelined loop every flag costs one event id per slot: where the ids 0-5 run out,
        # merge the flags of one pipe pair into a single one (Set after the last producer, Wait
        # before the first consumer). Merging costs overlap, so it is done only where needed.
        placed = _merge(placed, sets, waits, primes, self.merge)
    self.flags.extend(placed)
    out: list = []
    for j, item in enumerate(items):
        if j in barriers:
            out.append(PipeBarrier(pipe=Pipe.V,
                                   reason="dependent vector ops: the vector pipe does not order them on this arch"))
        for f in waits[j]:
            s = WaitFlag(event=f.event, loc=f.consumer.loc)
            f.syncs.append(s)
            out.append(s)
        out.append(item)
        for f in sets[j]:
            s = SetFlag(event=f.event, loc=f.producer.loc)
            f.syncs.append(s)
            out.append(s)
    return out, primes


def _static(extent) -> int | None:
    from tvm import tirx

    return int(extent.value) if isinstance(extent, tirx.IntImm) else (extent if isinstance(extent, int) else None)


def _barrier_inside(item, other: _Event, last: bool = False) -> bool:
    """A vector barrier inside loop ``item`` separates its vector ops in conflict with ``other`` from
    the outside: before the first one (``last=False``: ``item`` is the consumer, ``other`` the
    producer) or after the last one (``last=True``: ``item`` is the producer, ``other`` the consumer)."""
    if not isinstance(item, Loop):
        return False
    seq = list(reversed(item.body)) if last else list(item.body)
    for s in seq:
        if isinstance(s, PipeBarrier) and s.pipe is Pipe.V:
            return True
        evs = _events(s)
        for e in evs:
            if e.pipe is Pipe.V and (_conflict(other, e) if not last else _conflict(e, other)):
                return False
    return False


def _merge(placed: list, sets: dict, waits: dict, primes: list, events: frozenset) -> list:
    groups: dict = {}
    for f in placed:
        groups.setdefault((f.src, f.dst, f.carried, f.slots), []).append(f)
    out = []
    for (src, dst, carried, _), fs in groups.items():
        i, j = max(f.i for f in fs), min(f.j for f in fs)
        if len(fs) == 1 or (not carried and i >= j) or str(Event(src, dst)) not in events:
            out.extend(fs)
            continue
        first_c = min(fs, key=lambda f: f.j)
        last_p = max(fs, key=lambda f: f.i)
        m = dataclasses.replace(fs[0], i=i, j=j, producer=last_p.producer, consumer=first_c.consumer,
                                buffer=", ".join(dict.fromkeys(f.buffer for f in fs)), syncs=[])
        for f in fs:
            sets[f.i].remove(f)
            waits[f.j].remove(f)
            if f in primes:
                primes.remove(f)
        sets[i].append(m)
        waits[j].append(m)
        if carried:
            primes.append(m)
        out.append(m)
    return out


def round_trips(aiv: Kernel, transfers: list) -> set:
    """(a Cube -> Vector transfer, a Vector -> Cube transfer) where the AIVs compute the second
    tile from the first in the same statement list: the AIC's wait for the second then implies the
    AIVs consumed the first."""
    c2v = {t.index: t for t in transfers if t.direction is Direction.C2V}
    v2c = {t.index for t in transfers if t.direction is Direction.V2C}
    trips: set = set()

    def is_ready(op, ids) -> bool:
        return op.transfer in ids and op.flag == transfers[op.transfer].ready

    # The AIC matches a set and a wait by transfer: that names the derived occurrence only when the
    # Vector -> Cube tile is sent once, and the Cube -> Vector one received once, per iteration
    # (retention sends `v` twice: as loaded, and rescaled after `o` arrived).
    once: dict = {}
    waits: dict = {}
    for x in walk(aiv.body):
        if isinstance(x, CrossCoreSetOp) and is_ready(x, v2c):
            once[x.transfer] = once.get(x.transfer, 0) + 1
        if isinstance(x, CrossCoreWaitOp) and is_ready(x, c2v):
            waits[x.transfer] = waits.get(x.transfer, 0) + 1

    def scan(body: list) -> None:
        for s in body:
            if isinstance(s, Loop):
                scan(s.body)
            elif isinstance(s, If):
                scan(s.then_body)
                scan(s.else_body)
        for a, s in enumerate(body):
            if not (isinstance(s, CrossCoreWaitOp) and is_ready(s, c2v)):
                continue
            nxt = body[a + 1] if a + 1 < len(body) else None
            # the tile arrives through the workspace (the copy after the wait writes it), or in UB
            tainted = set(nxt.writes) if isinstance(nxt, CopyGmToUb) else {c2v[s.transfer].target}
            for k, t in enumerate(body[a + 1:], start=a + 1):
                # Data flow only: what an op reading a tainted buffer writes is derived from the tile
                # (an op that merely writes a tainted scratch buffer derives nothing from it).
                for x in walk([t]):
                    if isinstance(x, AscOp | ScalarStore) and not isinstance(x, CrossCoreSetOp | CrossCoreWaitOp):
                        if set(x.reads) & tainted:
                            tainted |= set(x.writes)
                if isinstance(t, CrossCoreSetOp) and is_ready(t, v2c) and once[t.transfer] == 1 \
                        and waits[s.transfer] == 1:
                    prev = body[k - 1]
                    if isinstance(prev, CopyUbToGm | CopyUbToPeerL1) and set(prev.reads) & tainted:
                        trips.add((s.transfer, t.transfer))

    scan(aiv.body)
    return trips


def sync_kernel(kernel: Kernel, arch, trips: set) -> Kernel:
    merge: frozenset = frozenset()
    while True:
        try:
            return _SyncInserter(kernel, arch, trips, merge).run()
        except _IdsExhausted as e:
            if e.event in merge:
                raise InternalCompilerError(f"more than {MAX_EVENT_ID + 1} event ids of {e.event} needed at once",
                                            stage="insert_sync") from None
            merge = merge | {e.event}


def sync_launch(launch: Launch, arch) -> Launch:
    trips = round_trips(launch.kernels[Core.AIV], launch.transfers) if launch.mixed else set()
    kernels = {c: sync_kernel(k, arch, trips if c is Core.AIC else set()) for c, k in launch.kernels.items()}
    return launch.replace(kernels=kernels)


def insert_sync(program: Program) -> Program:
    """Insert SetFlag/WaitFlag pairs and vector barriers; fill the sync table."""
    out = program.replace(launches=[sync_launch(lc, program.arch) for lc in program.launches])
    verify_sync(out)
    return out


def verify_sync(program: Program) -> None:
    """Every flag's Sets and Waits balance over the kernel (prime + per-iteration set / per-iteration
    wait + drain for loop-carried ones); ids in 0-5; every flag has a reason; no PIPE_ALL."""
    for _, _, kernel in program.kernels():
        balance: dict = {}
        for s in walk(kernel.body):
            if isinstance(s, PipeBarrier):
                if s.pipe is not Pipe.V:
                    raise InternalCompilerError(f"PipeBarrier on {s.pipe} emitted", stage="insert_sync")
                continue
            if not isinstance(s, SetFlag | WaitFlag):
                continue
            top = s.event_id.base + (s.event_id.slots - 1 if s.event_id.slot_var is not None else 0)
            if not 0 <= s.event_id.base <= top <= MAX_EVENT_ID:
                raise InternalCompilerError(f"event id {s.event_id} out of 0-{MAX_EVENT_ID}", stage="insert_sync")
            if s.flag < 0:
                raise InternalCompilerError("a flag without a reason", stage="insert_sync")
            balance[s.flag] = balance.get(s.flag, 0) + (1 if isinstance(s, SetFlag) else -1)
        for flag, bal in balance.items():
            if bal != 0:
                raise InternalCompilerError(f"flag #{flag} has unmatched SetFlag/WaitFlag", stage="insert_sync")
