"""The checker's model of one core along one path: pending accesses, flags, barriers.

Ordering model (the same as the emulator's, decided statically):
- every access records its pipe and the set ``done_for`` of pipes whose *later* ops are known
  to start after it has finished;
- ``SetFlag<P_Q>(id)`` captures the accesses known complete on P (those of pipe P, and those
  already ``done_for`` P); the matching ``WaitFlag`` adds Q to their ``done_for`` (all pipes when
  Q is S: the scalar unit stops issuing); ``PipeBarrier<P>`` adds P to the accesses of pipe P;
  ``PipeBarrier<PIPE_ALL>`` completes everything;
- a pipe runs its ops in order, except PIPE_V on dav-c220 (dependent vector ops need
  ``PipeBarrier<PIPE_V>``) and overlapping MTE2/MTE3 destinations (``PipeBarrier<PIPE_MTE2/3>``);
- with auto-sync on, the pairs bisheng orders (apis.auto_sync_covers) need nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .apis import ALL_PIPES, CORE_PIPES, auto_sync_covers, pipe_in_order
from .values import Access, Region, XAccess, covered_by_write, regions_overlap


@dataclass(frozen=True)
class Diagnostic:
    """One finding: ``file:line: severity: message`` (``check`` names the rule)."""

    file: str
    line: int
    severity: str  # "error" | "warning" | "note"
    check: str
    message: str
    core: str = ""

    def format(self) -> str:
        return f"{self.file}:{self.line}: {self.severity}: {self.message}"

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "severity": self.severity, "check": self.check,
                "message": self.message, "core": self.core}


@dataclass
class FlagState:
    event: str
    ident: object
    line: int
    captured: list


@dataclass
class Finding:
    """A diagnostic before its global line is mapped to file:line."""

    line: int
    severity: str
    check: str
    message: str
    region: Region | None = None  # for 'never written' (filtered against the other core's writes)


_DEP = {("W", "R"): "RAW", ("R", "W"): "WAR", ("W", "W"): "WAW"}


def _ev(p1: str, p2: str) -> str:
    return f"{p1}_{p2}"


@dataclass
class Machine:
    arch: str
    core: str
    auto_sync: bool
    findings: list = field(default_factory=list)
    flags: dict = field(default_factory=dict)  # (event, id key) -> FlagState
    buckets: dict = field(default_factory=dict)  # root -> {key: Access}
    writes: dict = field(default_factory=dict)  # root -> [Region]
    foreign_writes: list = field(default_factory=list)  # regions of the other core's memory
    xevents: list = field(default_factory=list)  # cross-core sets/waits in order
    serial: int = 0
    loop_depth: int = 0
    ops: int = 0
    mutexes: dict = field(default_factory=dict)  # MutexID -> {held pipe, line, captured accesses}
    unit_released: dict = field(default_factory=dict)  # pipe (M / FIX) -> L0C accesses unit flags release to it
    read_lines: set = field(default_factory=set)  # lines of local reads checked for a prior write
    causal: dict | None = None  # event prefix -> own cross-core set indices that release that wait
    xcaptured: dict = field(default_factory=dict)  # cross-core set index -> accesses complete on its pipe
    # cross-core data (see explore.py): this core's accesses to shared memory, what each of its
    # CrossCoreSetFlags publishes, and (second run) the other cores' accesses and their proxies
    sub: int = 0
    xaccesses: list = field(default_factory=list)
    xcap: dict = field(default_factory=dict)  # set index -> [xid]
    remote: dict | None = None  # shared root -> [XAccess of the other cores]
    reveal: dict | None = None  # event prefix -> [XAccess] a wait makes visible
    proxies: dict = field(default_factory=dict)  # xid -> Access
    x_ordered: set = field(default_factory=set)  # (remote xid, local xid): remote before local
    x_candidates: list = field(default_factory=list)  # (remote XAccess, local XAccess) not shown ordered

    def shared_root(self, root: tuple) -> tuple | None:
        """The name of ``root`` as the other cores see it (None: memory only this core has)."""
        if root[0] == "GM" or root[0] in ("UB@AIV", "L1@AIC"):
            return root
        if self.core == "AIV" and root == ("UB",):
            return ("UB@AIV", self.sub)
        if self.core == "AIC" and root == ("L1",):
            return ("L1@AIC",)
        return None

    def local_root(self, shared: tuple) -> tuple:
        if self.core == "AIV" and shared == ("UB@AIV", self.sub):
            return ("UB",)
        if self.core == "AIC" and shared == ("L1@AIC",):
            return ("L1",)
        return shared

    # ---------------------------------------------------------------------------------------
    def report(self, line: int, severity: str, check: str, message: str, region: Region | None = None) -> None:
        self.findings.append(Finding(line, severity, check, message, region))

    def pipe_on_core(self, pipe: str) -> bool:
        return pipe in CORE_PIPES[self.core]

    # ---------------------------------------------------------------------------------------
    def access(self, pipe: str, op: str, line: int, reads: list[Region], writes: list[Region],
               maybe_reads: list[Region] = (), auto_ok: bool = True) -> None:
        """One op of ``pipe`` reading and writing the given regions."""
        self.ops += 1
        new = [("R", r, False) for r in reads] + [("R", r, True) for r in maybe_reads] + \
              [("W", w, False) for w in writes]
        xids = []
        for kind, reg, maybe in new:
            xid = None
            sroot = self.shared_root(reg.root) if pipe != "?" else None
            if sroot is not None:
                xid = (self.core, self.sub, len(self.xaccesses))
                xa = XAccess(xid, kind, pipe, Region(sroot, reg.start, reg.fp, reg.size, reg.name), op, line,
                             self.core)
                self.xaccesses.append(xa)
                if self.remote:
                    self._check_remote(xa)
            xids.append(xid)
            if kind == "R" and not maybe and reg.root[0] not in ("GM", "UB@AIV", "L1@AIC") and pipe != "?" \
                    and reg.fp != ():
                self._check_written(reg, op, line)
            bucket = self.buckets.get(reg.root)
            if not bucket:
                continue
            for a in list(bucket.values()):
                if a.remote or (a.kind == "R" and kind == "R"):
                    continue
                if not regions_overlap(a.region, reg):
                    continue
                self._check_order(a, pipe, kind, reg, op, line, auto_ok)
        for (kind, reg, maybe), xid in zip(new, xids, strict=True):
            self.serial += 1
            acc = Access(pipe, kind, reg, op, line, set(), maybe, self.serial, auto_ok=auto_ok)
            bucket = self.buckets.setdefault(reg.root, {})
            key = (reg.key(), pipe, kind)
            old = bucket.pop(key, None)  # the newer access of the same kind subsumes the older one
            if old is not None:
                acc.xids.extend(old.xids)
            if xid is not None:
                acc.xids.append(xid)
            bucket[key] = acc
            if kind == "W":
                self.writes.setdefault(reg.root, []).append(reg)

    def _check_remote(self, xa: XAccess) -> None:
        for x in self.remote.get(xa.region.root, ()):
            if x.kind == "R" and xa.kind == "R":
                continue
            if not regions_overlap(x.region, xa.region):
                continue
            proxy = self.proxies.get(x.xid)
            if proxy is not None and xa.pipe in proxy.done_for:
                self.x_ordered.add((x.xid, xa.xid))
            else:
                self.x_candidates.append((x, xa))

    def _check_written(self, reg: Region, op: str, line: int) -> None:
        self.read_lines.add(line)
        for w in self.writes.get(reg.root, ()):
            if covered_by_write(reg, w):
                return
        self.report(line, "warning", "read-never-written",
                    f"'{op}' reads {reg.name} ({reg.root[0]}), which nothing wrote before it on this path",
                    region=reg)

    def _check_order(self, a: Access, pipe: str, kind: str, reg: Region, op: str, line: int,
                     auto_ok: bool = True) -> None:
        if pipe == "?" or a.pipe == "?" or pipe in a.done_for:
            return
        dep = _DEP[(a.kind, kind)]
        what = f"{reg.name}" if reg.name == a.region.name else f"{reg.name} / {a.region.name}"
        if a.pipe == pipe:
            if pipe == "V" and not pipe_in_order(self.arch, "V"):
                if self.auto_sync:
                    return
                self.report(line, "error", "missing-barrier",
                            f"{dep} on {what} ({reg.root[0]}): '{op}' (PIPE_V) after '{a.op}' (PIPE_V, line "
                            f"{a.line}) with no PipeBarrier<PIPE_V> between them: dependent vector ops are not "
                            f"ordered on {self.arch}; add PipeBarrier<PIPE_V>() before line {line}")
            elif pipe in ("MTE2", "MTE3") and dep == "WAW":
                self.report(line, "error", "overlapping-copies",
                            f"'{op}' (PIPE_{pipe}) writes {what} ({reg.root[0]}) overlapping the destination of "
                            f"'{a.op}' (line {a.line}) with no PipeBarrier<PIPE_{pipe}> between them; copies with "
                            f"overlapping destinations must be serialised: add PipeBarrier<PIPE_{pipe}>() "
                            f"before line {line}")
            else:
                return
        else:
            if a.maybe and kind == "W" and a.kind == "R":
                pass
            if self.auto_sync and a.auto_ok and auto_ok and auto_sync_covers(self.arch, self.core, a.pipe, pipe):
                return
            ev = _ev(a.pipe, pipe)
            self.report(line, "error", "missing-sync",
                        f"{dep} on {what} ({reg.root[0]}): '{op}' (PIPE_{pipe}) after '{a.op}' (PIPE_{a.pipe}, "
                        f"line {a.line}) with no SetFlag/WaitFlag<HardEvent::{ev}> between them"
                        + ("" if self.auto_sync or not auto_sync_covers(self.arch, self.core, a.pipe, pipe) else
                           " (auto-sync would cover this pair; it is checked off)")
                        + f"; add SetFlag<HardEvent::{ev}>(id) after line {a.line} and "
                        f"WaitFlag<HardEvent::{ev}>(id) before line {line}")
        a.done_for.add(pipe)  # reported once: do not cascade

    # ---------------------------------------------------------------------------------------
    def _complete_on(self, pipe: str) -> list[Access]:
        out = []
        for bucket in self.buckets.values():
            for a in bucket.values():
                if (a.pipe == pipe and not a.remote) or pipe in a.done_for:
                    out.append(a)
        return out

    def set_flag(self, src: str, dst: str, ident, id_text: str, line: int) -> None:
        key = (f"{src}_{dst}", ident)
        if key in self.flags:
            prev = self.flags[key]
            self.report(line, "error", "double-set",
                        f"SetFlag<HardEvent::{src}_{dst}>({id_text}) while the same event and id is already set "
                        f"(at line {prev.line}) and not yet waited: undefined behaviour (the flag is lost); "
                        f"wait it first or use another event id")
            return
        self.flags[key] = FlagState(f"{src}_{dst}", ident, line, self._complete_on(src))

    def wait_flag(self, src: str, dst: str, ident, id_text: str, line: int, path_note: str = "") -> None:
        key = (f"{src}_{dst}", ident)
        st = self.flags.pop(key, None)
        if st is None:
            self.report(line, "error", "wait-without-set",
                        f"WaitFlag<HardEvent::{src}_{dst}>({id_text}) with no matching SetFlag before it"
                        f"{path_note}: PIPE_{dst} would wait forever; add SetFlag<HardEvent::{src}_{dst}>"
                        f"({id_text}) on the producer side before it")
            return
        targets = ALL_PIPES if dst == "S" else {dst}
        for a in st.captured:
            a.done_for |= targets

    def cross_set(self, pipe: str | None) -> None:
        """A CrossCoreSetFlag on ``pipe`` (xevents already has it): what it waits for on this core."""
        cap = self._complete_on(pipe) if pipe and pipe != "ALL" else \
            [a for b in self.buckets.values() for a in b.values()]
        self.xcaptured[len(self.xevents) - 1] = cap
        self.xcap[len(self.xevents) - 1] = [x for a in cap if not a.remote for x in a.xids]

    def cross_wait(self, blocked: frozenset) -> None:
        """A CrossCoreWaitFlag (xevents already has it): the own sets whose release it depends on
        (from the cross-core simulation) now order ``blocked`` pipes after their accesses."""
        prefix = tuple(self.xevents)
        for x in (self.reveal or {}).get(prefix, ()):
            proxy = self.proxies.get(x.xid)
            if proxy is None:
                reg = x.region
                proxy = Access(x.pipe, x.kind, Region(self.local_root(reg.root), reg.start, reg.fp, reg.size, reg.name),
                               x.op, x.line, set(), False, 0, True, [x.xid])
                self.proxies[x.xid] = proxy
                self.buckets.setdefault(proxy.region.root, {})[("remote", x.xid)] = proxy
            proxy.done_for |= blocked
        if not self.causal:
            return
        own = self.causal.get(prefix)
        for j in own or ():
            for a in self.xcaptured.get(j, ()):
                a.done_for |= blocked

    def mutex(self, name: str, pipe: str, key, id_text: str, line: int) -> None:
        """Mutex::Lock<P>/Unlock<P> (Mutex(ISASI) page): a Lock holds P until the Unlocks of the
        same MutexID issued before it are done (each pipe pairs its own Lock and Unlock)."""
        st = self.mutexes.setdefault(key, {"held": {}, "captured": {}})
        held = st["held"]
        if name == "Lock":
            if pipe in held:
                self.report(line, "error", "mutex-pairing",
                            f"Mutex::Lock<PIPE_{pipe}>({id_text}) while PIPE_{pipe} already holds it (line "
                            f"{held[pipe]}): each Lock needs its Unlock<PIPE_{pipe}> first")
                return
            for a in st["captured"].values():
                a.done_for.add(pipe)
            held[pipe] = line
        else:
            if pipe not in held:
                other = next(iter(held.items()), None)
                self.report(line, "error", "mutex-pairing",
                            f"Mutex::Unlock<PIPE_{pipe}>({id_text}) with no Lock<PIPE_{pipe}> before it"
                            + (f" (it is locked on PIPE_{other[0]}, line {other[1]})" if other else "")
                            + ": Lock and Unlock of one MutexID must pair, on the same pipe")
                return
            del held[pipe]
            for a in self._complete_on(pipe):
                st["captured"][id(a)] = a

    def unit_wait(self, pipe: str) -> None:
        """An Mmad (M) or Fixpipe (FIX) with unitFlag 2/3 (UnitFlag page): it waits for the L0C unit
        flags the other side's last unitFlag-3 op released, so that op's L0C accesses (and the
        earlier ones of its pipe) are ordered before it."""
        for a in self.unit_released.get(pipe, ()):
            a.done_for.add(pipe)

    def unit_release(self, pipe: str, other: str) -> None:
        """After an op with unitFlag 3 on ``pipe``: what its pipe has done so far is released to ``other``
        (the waiting op starts after this one, which comes after its pipe's earlier work; the
        emulator orders it the same way)."""
        self.unit_released[other] = self._complete_on(pipe)

    def barrier(self, pipe: str) -> None:
        for bucket in self.buckets.values():
            for a in bucket.values():
                if pipe == "ALL":
                    a.done_for |= ALL_PIPES
                elif (a.pipe == pipe and not a.remote) or pipe in a.done_for:
                    a.done_for.add(pipe)

    def end(self, line: int, note: str = "") -> None:
        for key, st in self.mutexes.items():
            for pipe, ln in st["held"].items():
                self.report(ln, "error", "mutex-pairing",
                            f"Mutex::Lock<PIPE_{pipe}>({key}) is never unlocked before the kernel ends{note}")
        for st in self.flags.values():
            idt = st.ident if isinstance(st.ident, int) else st.ident
            self.report(st.line, "error", "set-never-waited",
                        f"SetFlag<HardEvent::{st.event}>({idt}) is never waited before the kernel ends{note}: "
                        f"every SetFlag needs its WaitFlag (a flag left set corrupts the next kernel); add "
                        f"WaitFlag<HardEvent::{st.event}>({idt}) (a drain) before the end")
        self.flags.clear()
