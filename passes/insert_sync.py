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
Every flag records its producer, consumer and buffer in ``kernel.flags`` (the sync table).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ascend_backend.errors import InternalCompilerError
from ascend_backend.ir import AscOp, FlagRecord, Kernel, Loop, Sync, walk

MAX_EVENT_ID = 5


@dataclass
class _Event:
    pipe: str
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


def _key(acc) -> str:
    return acc.buffer if acc.slot is None else f"{acc.buffer}#{acc.slot}"


def _events(item) -> list:
    if isinstance(item, AscOp):
        return [_Event(item.pipe, frozenset(_key(a) for a in item.reads), frozenset(_key(a) for a in item.writes),
                       item)]
    if isinstance(item, Loop):
        return [e for s in item.body if isinstance(s, AscOp | Loop) for e in _events(s)]
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


def _bare(name: str) -> str:
    return name.split("#", 1)[0]


class _SyncInserter:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.vector_barrier = kernel.arch.needs_vector_barrier
        self.flags: list[_Flag] = []
        self.loop_primes: dict[int, list] = {}  # id(new Loop) -> carried flags primed around it

    def run(self) -> Kernel:
        body = self.block(self.kernel.body, None)
        self._allocate_ids(body)
        records = []
        for n, f in enumerate(self.flags):
            kind = "loop-carried" if f.carried else "in order"
            rec = FlagRecord(index=n, event=f"{f.src}_{f.dst}", event_id=f.syncs[0].event_id,
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
                nl = Loop(var=s.var, extent=s.extent, body=inner, kind=s.kind, num_stages=s.num_stages, loc=s.loc)
                self.loop_primes[id(nl)] = primes
                new_items.append(nl)
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
                ps = Sync(action="set", src=f.src, dst=f.dst, phase="prime", loc=s.loc)
                f.syncs.append(ps)
                out.append(ps)
            out.append(s)
            for f in primes_here:
                ds = Sync(action="wait", src=f.src, dst=f.dst, phase="drain", loc=s.loc)
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
                if isinstance(s, Sync):
                    pos[id(s)] = counter[0]
                if isinstance(s, Loop):
                    visit(s.body)
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
            live = busy.setdefault(f"{f.src}_{f.dst}", [])
            live[:] = [(e, k) for e, k in live if e >= start]
            used = {k for _, k in live}
            free = [k for k in range(MAX_EVENT_ID + 1) if k not in used]
            if not free:
                raise InternalCompilerError(f"more than {MAX_EVENT_ID + 1} flags of event {f.src}_{f.dst} alive at "
                                            "once", stage="insert_sync")
            live.append((end, free[0]))
            for s in f.syncs:
                s.event_id = free[0]


def _level_impl(self: _SyncInserter, items: list, loop: Loop | None):
    evs = [_events(s) for s in items]
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

    for j in range(n):
        for (sp, dp), (i, p, c, buf, hazard) in sorted(deps(range(j), j).items(), key=lambda kv: -kv[1][0]):
            if sp == dp:
                if sp == "V" and self.vector_barrier and not any(i < b <= j for b in barriers):
                    barriers.add(j)
                continue
            if covered(sp, i, dp, j):
                continue
            f = _Flag(sp, dp, i, j, False, p.op, c.op, _bare(buf), hazard)
            placed.append(f)
            sets[i].append(f)
            waits[j].append(f)
    if loop is not None:
        for j in range(n):
            for (sp, dp), (i, p, c, buf, hazard) in sorted(deps(range(j, n), j).items(), key=lambda kv: -kv[1][0]):
                if sp == dp:
                    if sp == "V" and self.vector_barrier and not (any(b <= j for b in barriers)
                                                                   or any(b > i for b in barriers)):
                        barriers.add(j)
                    continue
                if any(f.carried and f.src == sp and f.dst == dp and f.i >= i and f.j <= j for f in placed):
                    continue
                f = _Flag(sp, dp, i, j, True, p.op, c.op, _bare(buf), hazard)
                placed.append(f)
                primes.append(f)
                sets[i].append(f)
                waits[j].append(f)
    self.flags.extend(placed)
    out: list = []
    for j, item in enumerate(items):
        if j in barriers:
            out.append(Sync(action="barrier", src="V", dst="V",
                            reason="dependent vector ops: the vector pipe does not order them on this arch"))
        for f in waits[j]:
            s = Sync(action="wait", src=f.src, dst=f.dst, loc=f.consumer.loc)
            f.syncs.append(s)
            out.append(s)
        out.append(item)
        for f in sets[j]:
            s = Sync(action="set", src=f.src, dst=f.dst, loc=f.producer.loc)
            f.syncs.append(s)
            out.append(s)
    return out, primes


def insert_sync(kernel: Kernel) -> Kernel:
    """Insert SetFlag/WaitFlag pairs and vector barriers; fill the sync table."""
    out = _SyncInserter(kernel).run()
    verify_sync(out)
    return out


def verify_sync(kernel: Kernel) -> None:
    """Every Set has its Wait in the same statement list (or prime/drain around a loop); ids in 0-5;
    no PIPE_ALL."""
    def check(items, depth):
        balance: dict = {}
        for s in items:
            if isinstance(s, Loop):
                check(s.body, depth + 1)
            elif isinstance(s, Sync):
                if s.action == "barrier":
                    if s.src == "ALL":
                        raise InternalCompilerError("PIPE_ALL barrier emitted", stage="insert_sync")
                    continue
                if not (isinstance(s.event_id, int) and 0 <= s.event_id <= MAX_EVENT_ID):
                    raise InternalCompilerError(f"event id {s.event_id} out of 0-{MAX_EVENT_ID}", stage="insert_sync")
                k = (s.event, s.event_id, s.flag)
                balance[k] = balance.get(k, 0) + (1 if s.action == "set" else -1)
        # Within one list, a flag's sets and waits balance; carried flags balance across the loop
        # (prime + set in body / wait in body + drain), which check_carried covers.
        return balance

    total: dict = {}

    def count(items):
        for s in items:
            if isinstance(s, Loop):
                count(s.body)
            elif isinstance(s, Sync) and s.action != "barrier":
                total[s.flag] = total.get(s.flag, 0) + (1 if s.action == "set" else -1)

    check(kernel.body, 0)
    count(kernel.body)
    for flag, bal in total.items():
        if bal != 0:
            raise InternalCompilerError(f"flag #{flag} has unmatched SetFlag/WaitFlag", stage="insert_sync")
    for s in walk(kernel.body):
        if isinstance(s, Sync) and s.action != "barrier" and s.flag < 0:
            raise InternalCompilerError("a flag without a reason", stage="insert_sync")
