"""insert_sync: order every dependency between pipes with paired SetFlag/WaitFlag.

Needs: a lowered body (only Loops and AscOps), each op tagged with its pipe and buffers.
Establishes: for every pair of ops on different pipes that touch a buffer in conflict (one of
them writes it), the later op is ordered after the earlier one by a SetFlag<SRC_DST>/WaitFlag
pair, or by a chain of such pairs already placed. Rules:

* A flag is placed in the innermost statement list holding both ops (a loop counts as one item:
  a Set after a loop covers all its ops, a Wait before a loop covers all of them).
* A dependency carried across loop iterations (the consumer comes first in the body) is primed
  with a Set before the loop, waited before the consumer, set again after the producer and
  drained with a Wait after the loop, so every Set has its Wait. One carried to an ``if var < c``
  that is false from the carried distance on (a load only the first steps issue) never happens.
* Only the last producer on each pipe needs a flag (a Set covers every earlier op of its pipe),
  and a dependency already ordered by placed flags gets none of its own.
* PipeBarrier<PIPE_V> orders dependent vector ops on archs whose vector pipe does not keep them
  in order (dav-c220); no PIPE_ALL is ever emitted.
* Event ids are allocated per event type within 0-5 so that flags alive at the same time never
  share an id. In a pipelined loop a flag gets one id per iteration its pipes can run apart
  (proved from the placed flags), flags other flags imply are not placed (drains of inner loops,
  the flags between the parts of a skewed loop), and only then are flags merged; a loop that
  still needs more is an EventIdError for the user.
* An ``If`` is one item, like a loop without a next iteration: its branches are synced inside.
* A cross-core round trip on the AIC (it sets "ready" for a tile, the AIVs derive the next
  crossing tile from it and only then set "ready" for that one, which the AIC waits for) orders
  the set's pipe before the wait's pipe like a flag would; the analysis reads the AIV program.
Every flag records its producer, consumer and buffer in ``kernel.flags`` (the sync table).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ascend_backend.passes.route import SkewRetry
from ascend_backend.passes.skew import step_slots
from ascend_backend.passes.unit_flag import mark_unit_flags

from ascend_backend.errors import EventIdError, InternalCompilerError
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
    LoopKind,
    Mmad,
    Pipe,
    PipeBarrier,
    Print,
    Program,
    ScalarStore,
    Scope,
    SetFlag,
    SyncPhase,
    UnitFlagReset,
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
    wait_var: object = None  # the Wait's slot variable when it differs (the two parts of a skewed loop)
    base: int = 0  # first event id
    virtual: bool = False  # a cross-core round trip: used for coverage, never emitted
    covers: list = field(default_factory=list)  # a merged flag: the flags it stands for

    def reason(self) -> str:
        if self.covers:
            return "; ".join(dict.fromkeys(f.reason() for f in self.covers))
        return (f"{self.hazard} on {self.buffer}: '{self.consumer.text}' ({self.dst}) after "
                f"'{self.producer.text}' ({self.src})" + (", previous iteration" if self.carried else ""))

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


def _unit_flagged(p: _Event, c: _Event) -> frozenset:
    """The accumulator whose Mmad -> Fixpipe (or Fixpipe -> next Mmad) order between p and c the L0C
    unit flags keep (both carry unitFlag, passes/unit_flag.py): no flag needed for it."""
    uf_p, uf_c = getattr(p.op, "unit_flag", None), getattr(c.op, "unit_flag", None)
    if uf_p is None or uf_c is None or p.pipe == c.pipe:
        return frozenset()
    acc = {getattr(x, "dst", None) if isinstance(x, Mmad) else getattr(x, "src", None) for x in (p.op, c.op)}
    return frozenset(acc) if len(acc) == 1 else frozenset()


def _conflict(p: _Event, c: _Event, alias: dict | None = None) -> tuple[str, str] | None:
    """(buffer, hazard) if c must follow p. ``alias``: for each buffer, the others plan_memory gave
    some of its bytes (lifetimes disjoint): c writing such bytes must follow p's accesses to the
    other buffer (a read of them only follows that write, which orders it already). An accumulator
    that unit flags order between p and c is no conflict."""
    uf = _unit_flagged(p, c)
    for b in sorted((p.writes & c.reads) - uf):
        return b, "RAW"
    for b in sorted((p.reads & c.writes) - uf):
        return b, "WAR"
    for b in sorted((p.writes & c.writes) - uf):
        return b, "WAW"
    return _shared_bytes(p, c, alias) if alias else None


def _shared_bytes(p: _Event, c: _Event, alias: dict) -> tuple[str, str] | None:
    """(buffers, hazard) if c writes bytes plan_memory gave to another buffer that p accesses."""
    for b in sorted(c.writes):
        for x in sorted(alias.get(b, ())):
            if x in p.writes:
                return f"{x}/{b}", "WAW (shared bytes)"
            if x in p.reads:
                return f"{x}/{b}", "WAR (shared bytes)"
    return None


def _aliases(kernel: Kernel) -> dict:
    """{buffer: buffers of its memory whose bytes overlap its own} (plan_memory's reuse)."""
    bs = [b for b in kernel.buffers.values() if b.scope not in (None, Scope.GM, Scope.LOCAL) and b.offset is not None]
    out: dict = {}
    for b in bs:
        for o in bs:
            if o is not b and o.scope == b.scope and o.offset < b.offset + b.nbytes and b.offset < o.offset + o.nbytes:
                out.setdefault(b.name, set()).add(o.name)
    return out


class _IdsExhausted(Exception):
    def __init__(self, event: str, loop: Loop | None = None, live: tuple = ()) -> None:
        self.event = event
        self.loop = loop  # the innermost pipelined loop around the flag that found no id
        self.live = live  # the flags holding the event's ids there


class _SyncInserter:
    def __init__(self, kernel: Kernel, arch, trips: set, merge: frozenset = frozenset()) -> None:
        self.kernel, self.unit_records = mark_unit_flags(kernel, arch)
        self.trips = trips
        self.merge = merge  # event types whose flags in pipelined loops are merged to save ids
        self.vector_barrier = arch.needs_vector_barrier
        self.alias = _aliases(kernel)
        # scalar locals live in the scalar unit's registers: the S pipe's program order orders them
        self.skip = frozenset(n for n, b in kernel.buffers.items() if b.scope is Scope.LOCAL)
        self.flags: list[_Flag] = []
        self.loop_primes: dict[int, list] = {}  # id(new Loop) -> carried flags primed around it
        self.carry_skip: frozenset = frozenset()  # see _level_impl (the parts of a skewed loop)

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
            reason = f.reason()
            for s in f.syncs:
                s.flag = n
                s.reason = reason
            records.append(rec)
        # unit-flag rows follow the flags' (their ops carry the row index)
        base = len(records)
        for r in self.unit_records:
            records.append(dataclasses.replace(r, index=base + r.index))
        for x in walk(body):
            uf = x if isinstance(x, UnitFlagReset) else getattr(x, "unit_flag", None)
            if uf is not None:
                uf.flag += base
                uf.reason = f"unit flag, sync table #{uf.flag}: {uf.reason}"
        return self.kernel.replace(body=body, flags=records)

    def block(self, items: list, loop: Loop | None) -> list:
        """Sync one statement list (inner loops first), then wrap loops in their prime/drain."""
        new_items = []
        for s in items:
            if isinstance(s, Loop) and s.skewed:
                nl, primes = self.skewed(s)
                self.loop_primes[id(nl)] = primes
                new_items.append(nl)
            elif isinstance(s, Loop):
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

    def drained(self, item, src: Pipe, dst: Pipe, consumers: list) -> bool:
        """Does the drain after loop ``item`` (the Waits of its loop-carried flags) order its ``src``
        ops before the ``dst`` ops of ``consumers`` that follow the loop? A drained flag's last Set
        covers every ``src`` op of the loop up to its producer in the last trip; what ``src`` runs
        after that Set must not conflict with the consumers."""
        if not isinstance(item, Loop) or item.skewed:
            return False
        cons = [c for c in consumers if c.pipe is dst]
        for f in self.loop_primes.get(id(item), []):
            if f.src != src or f.dst != dst:
                continue
            at = [n for n, x in enumerate(item.body) if isinstance(x, SetFlag) and any(x is y for y in f.syncs)]
            if len(at) != 1:
                continue
            after = [e for x in item.body[at[0] + 1:] for e in _events(x, self.skip) if e.pipe is src]
            if not any(_conflict(e, c, self.alias) for e in after for c in cons):
                return True
        return False

    def skewed(self, lp: Loop) -> tuple[Loop, list]:
        """Sync a skewed loop (``Loop.skewed``): each part as the body of a loop over the steps (its own
        flags, carried ones by step), then what orders one part against the other. Through a buffer
        with a slot per step in both parts: A(k) before B(k), ``lead`` trips later (a Set in A and a
        Wait in B by step, balanced without prime or drain), and B(k) before A(k + s), s =
        skew.step_slots slots > lead (primed and drained). Through any other buffer (one copy, e.g.
        an L0 operand both parts load): the trip's order, A(k) before B(k - lead) (a Set after part
        A, a Wait before part B, every trip) and B(k - lead) before A(k + 1) (carried to the next
        trip, primed and drained)."""
        guard_a, guard_b = lp.body
        b_loop = guard_b.then_body[0]
        trips = lp.steps
        a_items = self.block(guard_a.then_body, lp)
        b_items = self.block(b_loop.body, b_loop)
        loop_a = dataclasses.replace(lp, extent=trips, body=a_items, skewed=False)
        loop_b = dataclasses.replace(b_loop, extent=trips, body=b_items)
        per_step = set(lp.slots) & set(b_loop.slots)

        def touched(items: list) -> set:
            return {b for x in items for e in _events(x, self.skip) for b in (*e.reads, *e.writes)}

        outer_skip = self.carry_skip
        self.carry_skip = frozenset((touched(a_items) & touched(b_items)) - per_step)
        n0 = len(self.flags)
        a_synced, primes = self.block_level(a_items, loop_a)
        n1 = len(self.flags)
        b_synced, primes_b = self.block_level(b_items, loop_b)
        self.carry_skip = outer_skip
        in_order = {"a": [f for f in self.flags[n0:n1] if not f.carried],
                    "b": [f for f in self.flags[n1:] if not f.carried]}

        def ordered_in(part: str, sp: Pipe, dp: Pipe, i: int) -> bool:
            # A flag of the part itself from its item i (or later) on sp to dp already orders the
            # step's op before every dp op of that trip, so before the other part's later trips.
            return any(f.src == sp and f.dst == dp and f.i >= i for f in in_order[part])

        def waited_in(part: str, sp: Pipe, dp: Pipe, j: int) -> bool:
            # A flag of the consuming part itself on sp to dp, waited at its item j (or before), is
            # set after an sp op of the consumer's trip: later in sp's order than the producer,
            # which ran in an earlier trip.
            return any(f.src == sp and f.dst == dp and f.j <= j for f in in_order[part])

        primes_a = primes
        primes = primes + primes_b
        slots = step_slots(lp)

        # each item's events with every buffer, and (events) only those of one kind: per step or not
        all_a = [list(_events(x, self.skip)) for x in a_items]
        all_b = [list(_events(x, self.skip)) for x in b_items]

        def events(evs: list, step: bool) -> list:
            def keep(names):
                return frozenset(x for x in names if (x in per_step) == step)

            return [[_Event(e.pipe, keep(e.reads), keep(e.writes), e.op) for e in item] for item in evs]

        def cross(prod_evs, cons_evs, step: bool, prod_all=None, cons_all=None):
            # prod_all / cons_all: the same events with every buffer. Shared bytes are a matter of
            # the trip's order whatever the buffers' slots, so the trip's pass (step False) checks
            # them on every buffer, those with a slot per step too.
            groups: dict = {}
            for i, pe in enumerate(prod_evs):
                for j, ce in enumerate(cons_evs):
                    for pn, p in enumerate(pe):
                        for cn, c in enumerate(ce):
                            hit = _conflict(p, c, None if step else self.alias)
                            if hit is None and prod_all is not None:
                                hit = _shared_bytes(prod_all[i][pn], cons_all[j][cn], self.alias)
                            if hit is None:
                                continue
                            g = groups.setdefault((p.pipe, c.pipe), [i, p, j, c, hit])
                            if i >= g[0]:
                                g[0], g[1] = i, p
                            if j <= g[2]:
                                g[2], g[3] = j, c
            return groups

        def pos(synced: list, item) -> int:
            return next(n for n, x in enumerate(synced) if x is item)

        def needs_barrier(p_synced, p_item, c_synced, c_item) -> bool:
            # a barrier after the producer in its part, or before the consumer in its part, orders
            # them whatever runs between (the other part, or nothing on the last trip)
            return not (_barrier_between(p_synced, pos(p_synced, p_item), None)
                        or _barrier_between(c_synced, None, pos(c_synced, c_item)))

        barrier = {"a": False, "b": False, "A": False, "B": False}  # lower case: inside a part; upper: before it
        sets_a: dict = {}
        waits_b: dict = {}
        sets_b: dict = {}
        waits_a: dict = {}
        around: dict = {"wait_a": [], "set_a": [], "wait_b": [], "set_b": []}
        # A flag around the parts from part B to part A (set after part B, waited before the next
        # trip's part A) orders every op of a trip before every op of the next trip on its pipe pair:
        # any other flag of that pair from one trip to a later one adds nothing.
        trip_pairs = {k for k in cross(events(all_b, False), events(all_a, False), False, all_b, all_a)
                      if k[0] != k[1]}
        for step in (True, False):
            ev_a, ev_b = events(all_a, step), events(all_b, step)
            full = (None, None) if step else (all_a, all_b)
            for (sp, dp), (i, p, j, c, (buf, hazard)) in cross(ev_a, ev_b, step, *full).items():
                if sp == dp:
                    if sp is Pipe.V and self.vector_barrier:
                        barrier["b" if step else "B"] |= needs_barrier(a_synced, a_items[i], b_synced, b_items[j])
                    continue
                if step and ((sp, dp) in trip_pairs or ordered_in("a", sp, dp, i) or waited_in("b", sp, dp, j)):
                    continue
                if step:
                    later = "one trip later" if lp.lead == 1 else f"{lp.lead} trips later"
                    f = _Flag(sp, dp, i, j, False, p.op, c.op, buf, hazard + f", the same step {later}",
                              slots=slots, slot_var=lp.var, wait_var=b_loop.var)
                    sets_a.setdefault(i, []).append(f)
                    waits_b.setdefault(j, []).append(f)
                else:
                    f = _Flag(sp, dp, 0, 1, False, p.op, c.op, buf, hazard + ", part A before part B of the trip")
                    around["set_a"].append(f)
                    around["wait_b"].append(f)
                self.flags.append(f)
            for (sp, dp), (i, p, j, c, (buf, hazard)) in cross(ev_b, ev_a, step, *full[::-1]).items():
                if sp == dp:
                    if sp is Pipe.V and self.vector_barrier:
                        barrier["a" if step else "A"] |= needs_barrier(b_synced, b_items[i], a_synced, a_items[j])
                    continue
                if step and ((sp, dp) in trip_pairs or ordered_in("b", sp, dp, i) or waited_in("a", sp, dp, j)):
                    continue
                if step:
                    f = _Flag(sp, dp, i, j, True, p.op, c.op, buf, hazard + f", the slot {slots} steps on",
                              slots=slots, slot_var=b_loop.var, wait_var=lp.var)
                    sets_b.setdefault(i, []).append(f)
                    waits_a.setdefault(j, []).append(f)
                else:
                    f = _Flag(sp, dp, 1, 0, True, p.op, c.op, buf, hazard + ", part B before the next trip's part A")
                    around["set_b"].append(f)
                    around["wait_a"].append(f)
                self.flags.append(f)
                primes.append(f)

        # A part's own loop-carried flag is implied by a flag of its pipe pair between trips: one
        # around the parts, or, for part A, one from part B's step k (a later trip than part A's
        # step k) to part A's step k + s, waited no later than the part's flag (s fewer steps on, or
        # as many and before the same or an earlier item).
        steps_on = [g for gs in waits_a.values() for g in gs]

        def implied(f: _Flag) -> bool:
            if (f.src, f.dst) in trip_pairs:
                return True
            return any(f in primes_a and g.src == f.src and g.dst == f.dst
                       and (g.slots < f.slots or (g.slots == f.slots and g.j <= f.j)) for g in steps_on)

        dropped = [f for f in primes_a + primes_b if implied(f)]
        if dropped:
            gone = {id(x) for f in dropped for x in f.syncs}
            a_synced = [x for x in a_synced if id(x) not in gone]
            b_synced = [x for x in b_synced if id(x) not in gone]
            for f in dropped:
                self.flags.remove(f)
                primes.remove(f)

        def vbarrier() -> PipeBarrier:
            return PipeBarrier(pipe=Pipe.V, reason="dependent vector ops: the vector pipe does not order them on "
                                                   "this arch (the other part of the skewed loop)")

        def weave(synced: list, items: list, sets: dict, waits: dict, barrier_first: bool) -> list:
            out = [vbarrier()] if barrier_first else []
            where = {id(x): n for n, x in enumerate(items)}
            for x in synced:
                n = where.get(id(x))
                for f in waits.get(n, []) if n is not None else []:
                    w = WaitFlag(event=f.event, loc=f.consumer.loc)
                    f.syncs.append(w)
                    out.append(w)
                out.append(x)
                for f in sets.get(n, []) if n is not None else []:
                    st = SetFlag(event=f.event, loc=f.producer.loc)
                    f.syncs.append(st)
                    out.append(st)
            return out

        def syncs(kind: str, flags: list) -> list:
            out = []
            for f in flags:
                x = (WaitFlag if kind == "wait" else SetFlag)(event=f.event, loc=(f.consumer if kind == "wait" else
                                                                                 f.producer).loc)
                f.syncs.append(x)
                out.append(x)
            return out

        a_out = weave(a_synced, a_items, sets_a, waits_a, barrier["a"])
        b_out = weave(b_synced, b_items, sets_b, waits_b, barrier["b"])
        nb = dataclasses.replace(b_loop, body=b_out)
        body = (syncs("wait", around["wait_a"]) + ([vbarrier()] if barrier["A"] else [])
                + [dataclasses.replace(guard_a, then_body=a_out)] + syncs("set", around["set_a"])
                + syncs("wait", around["wait_b"]) + ([vbarrier()] if barrier["B"] else [])
                + [dataclasses.replace(guard_b, then_body=[nb])] + syncs("set", around["set_b"]))
        return dataclasses.replace(lp, body=body), primes

    def _allocate_ids(self, body: list) -> None:
        # Linear positions of syncs; a flag lives from its first to its last sync.
        pos: dict[int, int] = {}
        owner: dict[int, Loop] = {}  # sync -> the innermost pipelined loop around it (for the error)
        counter = [0]

        def visit(items, pipelined):
            for s in items:
                counter[0] += 1
                if isinstance(s, SetFlag | WaitFlag):
                    pos[id(s)] = counter[0]
                    if pipelined is not None:
                        owner[id(s)] = pipelined
                if isinstance(s, Loop):
                    visit(s.body, s if s.num_stages > 1 else pipelined)
                    counter[0] += 1
                if isinstance(s, If):
                    visit(s.then_body, pipelined)
                    visit(s.else_body, pipelined)
                    counter[0] += 1

        visit(body, None)
        spans = []
        for f in self.flags:
            ps = [pos[id(s)] for s in f.syncs if id(s) in pos]
            if len(ps) != len(f.syncs) or not ps:
                raise InternalCompilerError("flag with unplaced syncs", stage="insert_sync")
            spans.append((min(ps), max(ps), f))
        busy: dict[str, list] = {}
        for start, end, f in sorted(spans, key=lambda t: t[0]):
            live = busy.setdefault(str(f.event), [])
            live[:] = [(e, k, g) for e, k, g in live if e >= start]
            used = {k for _, k, _ in live}
            bases = [b for b in range(MAX_EVENT_ID + 2 - f.slots) if not used & set(range(b, b + f.slots))]
            if not bases:
                loop = next((owner[id(x)] for x in f.syncs if id(x) in owner), None)
                holders = list({id(g): g for _, _, g in live}.values())
                raise _IdsExhausted(str(f.event), loop, (*holders, f))
            base = bases[0]
            f.base = base
            live.extend((end, k, f) for k in range(base, base + f.slots))
            for s in f.syncs:
                if f.slots == 1:
                    s.event_id = EventId(base)
                elif s.slot is not None:
                    s.event_id = EventId(base + s.slot)
                else:
                    var = f.wait_var if isinstance(s, WaitFlag) and f.wait_var is not None else f.slot_var
                    s.event_id = EventId(base, var, f.slots)


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
    # Buffers the other part of a skewed loop also uses (one copy): the flags between the parts
    # order them from one trip to the next, so a part carries nothing through them by itself.
    drop = self.carry_skip if loop is not None else frozenset()
    evs_carried = [[_Event(e.pipe, e.reads - drop, e.writes - drop, e.op) for e in ev] for ev in evs] if drop else evs

    def deps(i_range, j, evs=evs):
        found: dict = {}
        for i in i_range:
            for c in evs[j]:
                for p in evs[i]:
                    hit = _conflict(p, c, self.alias)
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
    # Unit flags order an accumulator's Mmad before its Fixpipe, and that Fixpipe before a later Mmad
    # with unitFlag into it, as a flag would (the waiting op starts after the releasing op's pipe
    # reached it): record them for the coverage checks too.
    uf_evs = [[e for e in ev if getattr(e.op, "unit_flag", None) is not None] for ev in evs]
    for a in range(n):
        for b in range(a + 1, n):
            pairs = {(x.pipe, y.pipe): (x, y) for x in uf_evs[a] for y in uf_evs[b] if _unit_flagged(x, y)}
            for (sp, dp), (x, y) in pairs.items():
                v = _Flag(sp, dp, a, b, False, x.op, y.op, "", "unit flags")
                v.virtual = True
                placed.append(v)
    for j in range(n):
        for (sp, dp), (i, p, c, buf, hazard) in sorted(deps(range(j), j).items(), key=lambda kv: -kv[1][0]):
            if sp == dp:
                continue
            if covered(sp, i, dp, j) or self.drained(items[i], sp, dp, evs[j]):
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
                            if p.pipe == c.pipe == Pipe.V and _conflict(p, c, self.alias) is not None
                            and not _barrier_inside(items[i], c, self.alias, last=True)
                            and not _barrier_inside(items[j], p, self.alias)
                            and not covered(Pipe.V, i, Pipe.V, j)),
                           None)
                if hit is not None:
                    barriers.add(j)
                    break
                if _runs_barrier(items[i]):
                    break  # a loop that runs at least once with a barrier in it orders what is before it
    if loop is not None and _static(loop.extent) != 1:  # (a one-trip loop carries nothing around)
        for j in range(n):
            found = deps(range(j, n), j, evs_carried)
            if drop:
                # the flags between the parts of a skewed loop order other pipes from trip to trip, but
                # a part's vector op still needs its barrier against its own previous step: the other
                # part does not run on the first and last trips
                same = deps(range(j, n), j).get((Pipe.V, Pipe.V))
                if same is not None:
                    found[(Pipe.V, Pipe.V)] = same
            for (sp, dp), (i, p, c, buf, hazard) in sorted(found.items(), key=lambda kv: -kv[1][0]):
                if sp == dp:
                    if sp is Pipe.V and self.vector_barrier and not (any(b <= j for b in barriers)
                                                                   or any(b > i for b in barriers)):
                        barriers.add(j)
                    continue
                if (dp is not Pipe.V or not self.vector_barrier) and (covered(sp, i, dp, n)
                                                                      or self.drained(items[i], sp, dp, evs[j])):
                    continue  # ordered within the iteration already; dp keeps its order into the next one
                need = rotating.get(buf, 1)
                if need > 1 and _static(loop.extent) is not None and _static(loop.extent) <= need:
                    continue  # every iteration has its own slot: the dependency never happens
                if _only_first(items[j], loop, need):
                    continue  # the consumer runs in the first iterations only, never `need` iterations on
                if any(f.carried and f.src == sp and f.dst == dp and f.i >= i and f.j <= j
                       and f.slots in (1, need) for f in placed):
                    continue
                f = slotted(_Flag(sp, dp, i, j, True, p.op, c.op, buf, hazard))
                placed.append(f)
                primes.append(f)
                sets[i].append(f)
                waits[j].append(f)
    if stages > 1:
        # A flag of this iteration needs a slot per stage only while its producer pipe can set it
        # again (d iterations on) before the consumer pipe waited for it: d ids are enough when the
        # flags already order the Wait of iteration k before the Set of iteration k + d.
        for f in placed:
            if f.slots > 1 and not f.carried and not f.virtual:
                need = next((d for d in range(1, f.slots) if _wait_before_set(f, placed, d)), f.slots)
                if need < f.slots:
                    f.slots = need
                    f.slot_var = f.slot_var if need > 1 else None
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


def _wait_before_set(f: _Flag, placed: list, d: int) -> bool:
    """Does flag ``f``'s Wait in iteration 0 happen before its Set in iteration d, through program
    order on each pipe and the flags ``placed`` at this level? A point is (pipe, iteration, p): on
    that pipe, just before item p. A Set after item a on that pipe is later when a >= p; its Wait
    is before item j of the same iteration (in order) or of iteration + slots (carried). f's Set in
    iteration d follows every point of f.src in earlier iterations and those up to its producer
    item in iteration d."""
    start = (f.dst, 0, f.j)
    seen = {start}
    frontier = [start]
    while frontier:
        pipe, it, p = frontier.pop()
        if pipe == f.src and (it < d or p <= f.i):
            return True
        nxt = [(pipe, it + 1, 0)] if it < d else []
        for g in placed:
            if g is f or g.src != pipe or g.i < p:
                continue
            it2 = it + (g.slots if g.carried else 0)
            if it2 <= d:
                nxt.append((g.dst, it2, g.j))
        for s in nxt:
            if s not in seen:
                seen.add(s)
                frontier.append(s)
    return False


def _only_first(item, loop: Loop, distance: int) -> bool:
    """Is ``item`` an ``if var < c`` of ``loop``'s variable that is false from iteration ``distance``
    on (the start of a load that later iterations issue ahead, passes/prefetch.py)? A dependency
    carried ``distance`` iterations to it then never happens."""
    from tvm import tirx

    if not isinstance(item, If) or item.else_body or not isinstance(item.cond, tirx.LT):
        return False
    c, start = _static(item.cond.b), _static(loop.start)
    return (item.cond.a.same_as(loop.var) and c is not None and start is not None and loop.step >= 1
            and start + distance * loop.step >= c)


def _static(extent) -> int | None:
    from tvm import tirx

    return int(extent.value) if isinstance(extent, tirx.IntImm) else (extent if isinstance(extent, int) else None)


def _barrier_inside(item, other: _Event, alias: dict, last: bool = False) -> bool:
    """A vector barrier inside loop ``item`` separates its vector ops in conflict with ``other`` from
    the outside: before the first one (``last=False``: ``item`` is the consumer, ``other`` the
    producer) or after the last one (``last=True``: ``item`` is the producer, ``other`` the consumer)."""
    if not isinstance(item, Loop):
        return False
    body = _skew_flat(item) if item.skewed else list(item.body)
    seq = list(reversed(body)) if last else body
    for s in seq:
        if isinstance(s, PipeBarrier) and s.pipe is Pipe.V:
            return True
        evs = _events(s)
        for e in evs:
            if e.pipe is Pipe.V and (_conflict(other, e, alias) if not last else _conflict(e, other, alias)):
                return False
    return False


def _runs_barrier(item) -> bool:
    """``item`` is a loop of at least one trip whose body runs a vector barrier on every trip (at its
    top level, or in a part of a skewed loop: each part runs on some trip when there is one step)."""
    if not isinstance(item, Loop) or item.kind is LoopKind.WHILE:
        return False
    n = _static(item.extent)
    if n is None or n < (item.lead + 1 if item.skewed else 1):
        return False
    body = _skew_flat(item) if item.skewed else item.body
    return any(isinstance(x, PipeBarrier) and x.pipe is Pipe.V for x in body)


def _skew_flat(lp: Loop) -> list:
    """A skewed loop's statements in the order one step runs them: part A, then part B (the first
    trip runs A first, the last trip B last)."""
    out: list = []
    for x in lp.body:  # [syncs, If(A), syncs, If(B: one-trip loop), syncs]
        if isinstance(x, If):
            inner = x.then_body
            out += inner[0].body if len(inner) == 1 and isinstance(inner[0], Loop) else inner
        else:
            out.append(x)
    return out


def _barrier_between(items: list, i: int | None, j: int | None) -> bool:
    """A vector barrier in ``items`` after position ``i`` (``j`` None) or before position ``j``."""
    lo, hi = (i + 1, len(items)) if j is None else (0, j)
    return any(isinstance(x, PipeBarrier) and x.pipe is Pipe.V for x in items[lo:hi])


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
                                buffer=", ".join(dict.fromkeys(f.buffer for f in fs)), syncs=[],
                                covers=[c for f in fs for c in (f.covers or [f])])
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


class SkewIdsExhausted(SkewRetry):
    """A skewed loop's flags need more event ids than a pipe pair has: the pipeline lowers the
    kernel again without skewing (route.SKEW)."""


def sync_kernel(kernel: Kernel, arch, trips: set) -> Kernel:
    merge: frozenset = frozenset()
    while True:
        try:
            return _SyncInserter(kernel, arch, trips, merge).run()
        except _IdsExhausted as e:
            if e.event in merge:
                what = f"more than {MAX_EVENT_ID + 1} event ids of {e.event} needed at once"
                if any(isinstance(s, Loop) and s.skewed for s in walk(kernel.body)):
                    raise SkewIdsExhausted(what, stage="insert_sync") from None
                if e.loop is None:
                    raise InternalCompilerError(what, stage="insert_sync") from None
                raise _user_error(e) from None
            merge = merge | {e.event}


def _user_error(e: _IdsExhausted) -> EventIdError:
    """Out of ids in a pipelined loop even with its flags merged: the loop's stages are what the
    user controls (each stage takes one id per flag that spans iterations)."""
    n = e.loop.num_stages
    need = sum(f.slots for f in e.live)
    why = "; ".join(dict.fromkeys(f"{f.hazard} on {f.buffer} ({f.slots} id{'s' if f.slots > 1 else ''})"
                                  for f in e.live))
    per_stage = sum(1 for f in e.live if f.slots == n)
    fits = (MAX_EVENT_ID + 1 - (need - per_stage * n)) // per_stage if per_stage else 0
    hint = (f"lower num_stages to {fits} or fewer: each stage takes one {e.event} id per flag that spans "
            f"iterations" if 2 <= fits < n else
            "use T.serial for this loop, or fewer buffers that pass between these pipes in it")
    return EventIdError(f"T.Pipelined with num_stages={n} needs {need} event ids of {e.event} at once, and a "
                        f"core has {MAX_EVENT_ID + 1} (0-{MAX_EVENT_ID}) for them: {why}",
                        loc=e.loop.loc, hint=hint)


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
