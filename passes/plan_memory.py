"""plan_memory: give every on-chip buffer a static byte offset, reusing the bytes of dead buffers.

Needs: all buffers known with scope, layout and slot count (after lowering and multi-buffering),
and the body they are used in; runs before insert_sync, which orders the accesses of buffers that
share bytes like those of one buffer.
Establishes: every UB/L1/L0A/L0B/L0C buffer has an offset aligned for its memory; two buffers share
bytes only when their lifetimes are disjoint; the buffers of each memory fit its usable capacity
on the target arch. Otherwise raises a MemoryBudgetError listing every buffer of that memory with
its size, its place and what it shares, the capacity, and what to change.

Lifetimes (``lifetimes``): statements are numbered in program order; a buffer lives from its first
to its last access. A buffer used in a loop and live across the loop's back edge (its first access
in the body is not a write that runs in every iteration, or it was used before the loop) lives for
the whole loop. Multi-buffered slots are part of the buffer's bytes.

Which dead bytes may be reused (``compatible``, ``place``), in three tiers, each tried only when
the one before does not fit:
* only hand-overs that need no flag: the earlier buffer is touched by the vector pipe alone and the
  later one is first written by it (the vector pipe keeps its order; the vector barrier of dav-c220
  is placed by insert_sync), and, when both live in one loop, the same the other way round;
* also hand-overs between pipes, except for multi-buffered buffers (their slots exist so that two
  pipes overlap; a flag between them and another buffer would serialise that) and between a tile
  used only in one part of a skewed loop and one used only in its other part (such bytes are
  handed over from part to part in every trip, which serialises the parts the skew overlaps);
* any two buffers with disjoint lifetimes but the parts' tiles;
* any two buffers with disjoint lifetimes.
From the second tier on insert_sync orders the last access of one buffer before the first access
of the other (it sees the shared bytes), at the cost of the flags that takes.
Buffers the other core kind writes in place (``Launch.fixed_tiles``) never share bytes.
Placement: largest first, each at the lowest aligned offset free of every incompatible buffer
placed before it (the usual greedy interval colouring).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ascend_backend.arch import ALIGN
from ascend_backend.errors import InternalCompilerError, MemoryBudgetError
from ascend_backend.ir import (
    AscOp,
    If,
    Kernel,
    Loop,
    Pipe,
    PipeBarrier,
    Print,
    Program,
    ScalarStore,
    Scope,
    SetFlag,
    SimtCall,
    WaitFlag,
    walk,
)
from ascend_backend.ir.nodes import loaded_buffers

MEMORIES = (Scope.L1, Scope.L0A, Scope.L0B, Scope.L0C, Scope.UB)


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


# ---------------------------------------------------------------- lifetimes


@dataclass
class Life:
    """Where a buffer is used: positions [first, last] in program order (after the loop rule),
    the pipes that touch it, the pipe of its first access, the loops it is used in, and the parts
    of skewed loops it is used in ((loop id, "A" | "B"))."""

    first: int
    last: int
    pipes: set = field(default_factory=set)
    first_pipe: Pipe | None = None
    loops: set = field(default_factory=set)
    parts: set = field(default_factory=set)

    def overlaps(self, other: Life) -> bool:
        return not (self.last < other.first or other.last < self.first)

    def in_other_part(self, other: Life) -> bool:
        """Is one of the two used only in part A of a skewed loop, and the other only in its part B?
        (Shared bytes would then hand the bytes over from part to part in every trip, which
        serialises the parts the skew runs side by side.)"""
        for lid in {lid for lid, _ in self.parts} & {lid for lid, _ in other.parts}:
            mine = {p for x, p in self.parts if x == lid}
            theirs = {p for x, p in other.parts if x == lid}
            if len(mine) == 1 and len(theirs) == 1 and mine != theirs:
                return True
        return False


@dataclass
class _Access:
    pos: int
    buffer: str
    write: bool
    read: bool
    pipe: Pipe
    once: frozenset  # loops (ids) of which it runs exactly once per iteration
    loops: tuple  # enclosing loops, outermost first (ids)
    part: tuple = ()  # (skewed loop id, "A" | "B") for accesses in the parts of a skewed loop


def _static_one(e) -> bool:
    return getattr(e, "value", e) == 1


def _accesses(body: list) -> tuple[list, dict]:
    """Every buffer access in program order, and each loop's span {id: (start, end)}."""
    out: list = []
    spans: dict = {}
    pos = [0]

    def leaf(s, loops: tuple, once: frozenset, part: tuple) -> None:
        reads, writes = set(s.reads), set(s.writes)
        for b in dict.fromkeys([*s.reads, *s.writes]):
            out.append(_Access(pos[0], b, b in writes, b in reads, s.pipe, once, loops, part))
        for b in getattr(s, "index_reads", ()):
            out.append(_Access(pos[0], b, False, True, Pipe.S, frozenset(), loops, part))

    def visit(items: list, loops: tuple, once: frozenset, part: tuple) -> None:
        for s in items:
            pos[0] += 1
            here = pos[0]
            if isinstance(s, Loop):
                for b in loaded_buffers(s.extent, s.start, s.cond):
                    out.append(_Access(here, b, False, True, Pipe.S, frozenset(), loops, part))
                lid = id(s)
                if s.skewed:
                    # A and B each run once per step: the guards and B's one-trip loop are transparent
                    (guard_a, guard_b) = s.body
                    visit(guard_a.then_body, loops + (lid,), frozenset({lid}), (lid, "A"))
                    b_loop = guard_b.then_body[0]
                    pos[0] += 1
                    b_start = pos[0]
                    visit(b_loop.body, loops + (lid, id(b_loop)), frozenset({lid, id(b_loop)}), (lid, "B"))
                    pos[0] += 1
                    spans[id(b_loop)] = (b_start, pos[0])
                else:
                    inner = once | {lid} if _static_one(s.extent) else frozenset({lid})
                    visit(s.body, loops + (lid,), inner, part)
                pos[0] += 1
                spans[lid] = (here, pos[0])
            elif isinstance(s, If):
                for b in loaded_buffers(s.cond):
                    out.append(_Access(here, b, False, True, Pipe.S, frozenset(), loops, part))
                visit(s.then_body, loops, frozenset(), part)
                visit(s.else_body, loops, frozenset(), part)
            elif isinstance(s, SetFlag | WaitFlag | PipeBarrier):
                continue
            elif isinstance(s, AscOp | ScalarStore | Print):
                leaf(s, loops, once, part)

    visit(body, (), frozenset(), ())
    return out, spans


def lifetimes(kernel: Kernel) -> dict[str, Life]:
    """The Life of every buffer of ``kernel`` that its body touches."""
    acc, spans = _accesses(kernel.body)
    lives: dict[str, Life] = {}
    by_buf: dict[str, list] = {}
    for a in acc:
        by_buf.setdefault(a.buffer, []).append(a)
    for name, xs in by_buf.items():
        first = min(xs, key=lambda a: a.pos)
        life = Life(first=first.pos, last=max(a.pos for a in xs), pipes={a.pipe for a in xs},
                    first_pipe=first.pipe, loops={lid for a in xs for lid in a.loops},
                    parts={a.part for a in xs if a.part})
        for lid in life.loops:
            start, end = spans[lid]
            inside = sorted((a for a in xs if lid in a.loops), key=lambda a: (a.pos, not a.write))
            before = any(a.pos < start for a in xs)
            head = inside[0]
            # in both parts of a skewed loop: step k's value is read after step k + 1's A ran
            both = {a.part[1] for a in inside if a.part and a.part[0] == lid} == {"A", "B"}
            # defined afresh in every iteration: its first access in the body is a pure write that
            # runs every time; otherwise the value flows around the back edge
            fresh = not before and not both and head.write and not head.read and lid in head.once
            if not fresh:
                life.first = min(life.first, start)
                life.last = max(life.last, end)
        lives[name] = life
    return lives


# ---------------------------------------------------------------- which buffers may share bytes


def compatible(x: Life, y: Life, relaxed: bool) -> bool:
    """May buffers with these lives share bytes? Their lifetimes must be disjoint; unless
    ``relaxed``, the hand-over must also need no flag (see the module doc)."""
    if x.overlaps(y):
        return False
    if relaxed:
        return True
    early, late = (x, y) if x.last < y.first else (y, x)
    if early.pipes != {Pipe.V} or late.first_pipe is not Pipe.V:
        return False
    if early.loops & late.loops:  # both live in one loop: the back edge hands the bytes back
        return late.pipes == {Pipe.V} and early.first_pipe is Pipe.V
    return True


STRICT, MULTI_BUFFERED_APART, PARTS_APART, RELAXED = 0, 1, 2, 3  # the tiers of reuse, tried in this order


def place(members: list, lives: dict, fixed: set, tier: int) -> tuple[dict, int]:
    """Offsets {name: offset} for the buffers of one memory and the bytes used (the end of the
    highest buffer). ``fixed``: names that share with nothing. ``tier``: STRICT (hand-overs that
    need no flag), MULTI_BUFFERED_APART (also hand-overs that need one, except for multi-buffered
    buffers, whose slots exist to let two pipes overlap, and for a tile of one part of a skewed loop
    with a tile of the other), PARTS_APART (any disjoint lifetimes but the parts' tiles), RELAXED
    (any disjoint lifetimes)."""
    if not members:
        return {}, 0
    mem = members[0].scope
    al = ALIGN[mem]
    order = sorted(members, key=lambda b: (b.name not in fixed, -b.nbytes, lives[b.name].first if b.name in lives
                                           else -1, b.name))
    placed: list = []  # (start, end, buffer)
    offsets: dict = {}
    for b in order:
        bal = max(al, b.align)  # a buffer may need more than its memory's alignment (MmadMx operands)
        size = _align(b.nbytes, bal)
        life = lives.get(b.name)

        def clash(other, b=b, life=life) -> bool:
            if b.name in fixed or other.name in fixed:
                return True
            lo = lives.get(other.name)
            if life is None or lo is None:
                return True  # a buffer this core never touches keeps bytes of its own
            if compatible(life, lo, relaxed=False):
                return False
            if tier == STRICT or (tier == MULTI_BUFFERED_APART and (b.slots > 1 or other.slots > 1)):
                return True
            if tier in (MULTI_BUFFERED_APART, PARTS_APART) and life.in_other_part(lo):
                return True
            return not compatible(life, lo, relaxed=True)

        busy = sorted((s, e) for s, e, o in placed if clash(o))
        off = 0
        for s, e in busy:
            if off + size <= s:
                break
            off = max(off, _align(e, bal))
        offsets[b.name] = off
        placed.append((off, off + size, b))
    used = max(e for _, e, _ in placed)
    return offsets, used


def capacities(kernel: Kernel | None, arch) -> dict:
    """The bytes each memory has for the kernel's buffers. A kernel that calls SIMT functions leaves
    UB its 8 KB reserved and at least 32 KB of SIMT Data Cache (UB划分: DataCache = 256 KB - static -
    dynamic - 8 KB, at least 32 KB, else the launch fails its check)."""
    from ascend_backend.arch import KB, SIMT_DATA_CACHE_MIN, SIMT_UB_RESERVED

    cap = dict(arch.capacity)
    if kernel is not None and any(isinstance(s, SimtCall) for s in walk(kernel.body)):
        cap[Scope.UB] = min(cap[Scope.UB], 256 * KB - SIMT_UB_RESERVED - SIMT_DATA_CACHE_MIN)
    return cap


def plan_buffers(buffers: dict, lives: dict, fixed: set, arch, last_tier: int = RELAXED,
                 cap: dict | None = None) -> tuple[dict, dict, dict]:
    """Place every on-chip memory: ({name: offset}, {scope: bytes used}, {scope: over capacity?}),
    trying the tiers of reuse up to ``last_tier``."""
    cap = cap or arch.capacity
    offsets: dict = {}
    used: dict = {}
    over: dict = {}
    for mem in MEMORIES:
        members = [b for b in buffers.values() if b.scope == mem]
        for tier in (STRICT, MULTI_BUFFERED_APART, PARTS_APART, RELAXED)[:last_tier + 1]:
            offs, n = place(members, lives, fixed, tier)
            if n <= cap[mem]:
                break
        offsets.update(offs)
        used[mem] = n
        over[mem] = n > cap[mem]
    return offsets, used, over


def plan_kernel_memory(kernel: Kernel, launch, arch) -> Kernel:
    buffers = kernel.copy_buffers()
    fixed = launch.fixed_tiles(kernel.core) if kernel.core is not None else set()
    lives = lifetimes(kernel)
    caps = capacities(kernel, arch)
    offsets, used, over = plan_buffers(buffers, lives, fixed, arch, cap=caps)
    for name, off in offsets.items():
        buffers[name].offset = off
    for mem in MEMORIES:
        if over[mem]:
            members = [b for b in buffers.values() if b.scope == mem]
            cap = caps[mem]
            total = sum(b.nbytes for b in members)
            reuse = f" after reusing the bytes of dead buffers ({total} without)" if total != used[mem] else ""
            simt = " (the rest of UB is the SIMT functions' 8 KB reserved and 32 KB Data Cache)" \
                if cap != arch.capacity[mem] else ""
            raise MemoryBudgetError(
                f"{mem} needs {used[mem]} bytes{reuse} but holds {cap} bytes on {arch.name}{simt}",
                table=budget_table(members, mem, cap, arch.name, used=used[mem]),
                loc=max(members, key=lambda b: b.nbytes).loc,
                hint=_hint(mem, members),
            )
    return kernel.replace(buffers=buffers, memory_used=used)


def plan_memory(program: Program) -> Program:
    """Place each memory's buffers, sharing the bytes of buffers whose lifetimes do not overlap."""
    out = program.map_kernels(lambda k, lc, p: plan_kernel_memory(k, lc, p.arch))
    verify_memory(out)
    return out


# ---------------------------------------------------------------- reports


def sharing(buffers) -> dict[str, list]:
    """For each on-chip buffer, the buffers of its memory whose bytes overlap its own."""
    out: dict = {}
    bs = [b for b in buffers if b.scope in MEMORIES and b.offset is not None]
    for b in bs:
        out[b.name] = [o.name for o in bs if o is not b and o.scope == b.scope
                       and o.offset < b.offset + b.nbytes and b.offset < o.offset + o.nbytes]
    return out


def budget_table(members: list, mem: str, cap: int, arch: str, used: int | None = None) -> str:
    """Every buffer of one memory: shape, slots, bytes, its place (when planned), the buffers whose
    bytes it reuses, and where it was defined; the total with and without reuse."""
    shares = sharing(members)
    rows = [f"  {mem} on {arch}: capacity {cap} bytes ({cap // 1024} KB)",
            f"  {'buffer':<24} {'shape':<18} {'dtype':<9} {'slots':>5} {'bytes':>9} {'at':>15}  "
            f"{'shares bytes with':<24} defined at"]
    total = 0
    for b in sorted(members, key=lambda b: -b.nbytes):
        total += b.nbytes
        shape = "x".join(str(s) for s in b.shape)
        where = str(b.loc) if b.loc else f"(compiler: {b.role or b.kind})"
        at = f"{b.offset}..{b.offset + b.nbytes}" if b.offset is not None else ""
        share = ", ".join(shares.get(b.name, [])) or "-"
        rows.append(f"  {b.name:<24} {shape:<18} {b.dtype:<9} {b.slots:>5} {b.nbytes:>9} {at:>15}  {share:<24} {where}")
    rows.append(f"  {'total':<24} {'':<18} {'':<9} {'':>5} {total:>9}  ({100.0 * total / cap:.0f}% of capacity "
                "without reuse)")
    if used is not None and used != total:
        rows.append(f"  {'after reuse':<24} {'':<18} {'':<9} {'':>5} {used:>9}  ({100.0 * used / cap:.0f}% of "
                    "capacity: buffers whose lifetimes do not overlap share bytes)")
    return "\n".join(rows)


def _hint(mem: str, members: list) -> str:
    big = max(members, key=lambda b: b.nbytes)
    staged = [b for b in members if b.slots > 1]
    text = f"reduce the tile sizes (the largest is '{big.name}', {big.nbytes} bytes)"
    if staged:
        text += f", or use fewer pipeline stages (num_stages; '{staged[0].name}' has {staged[0].slots} slots)"
    if mem is Scope.UB:
        text += ", or compute in float16 instead of float32 where precision allows"
    return text


def verify_memory(program: Program) -> None:
    """Offsets aligned and inside capacity; two buffers share bytes only if their lifetimes are
    disjoint and neither is written in place by the other core kind."""
    for launch, kernel in [(lc, k) for lc in program.launches for k in lc.kernels.values()]:
        lives = lifetimes(kernel)
        fixed = launch.fixed_tiles(kernel.core) if kernel.core is not None else set()
        caps = capacities(kernel, program.arch)
        for mem in MEMORIES:
            bs = [b for b in kernel.buffers.values() if b.scope == mem]
            for b in bs:
                if b.offset is None or b.offset % max(ALIGN[mem], b.align) or \
                        b.offset + b.nbytes > caps[mem]:
                    raise InternalCompilerError(f"{b.name} misplaced in {mem}", stage="plan_memory")
            for i, b in enumerate(bs):
                for o in bs[i + 1:]:
                    if not (o.offset < b.offset + b.nbytes and b.offset < o.offset + o.nbytes):
                        continue
                    lb, lo = lives.get(b.name), lives.get(o.name)
                    if b.name in fixed or o.name in fixed or lb is None or lo is None or lb.overlaps(lo):
                        raise InternalCompilerError(f"{b.name} and {o.name} overlap in {mem} while both are live",
                                                    stage="plan_memory")
