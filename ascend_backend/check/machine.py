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
from .values import Access, Region, covered_by_write, regions_overlap


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
    causal: dict | None = None  # event prefix -> own cross-core set indices that release that wait
    xcaptured: dict = field(default_factory=dict)  # cross-core set index -> accesses complete on its pipe

    # ---------------------------------------------------------------------------------------
    def report(self, line: int, severity: str, check: str, message: str, region: Region | None = None) -> None:
        self.findings.append(Finding(line, severity, check, message, region))

    def pipe_on_core(self, pipe: str) -> bool:
        return pipe in CORE_PIPES[self.core]

    # ---------------------------------------------------------------------------------------
    def access(self, pipe: str, op: str, line: int, reads: list[Region], writes: list[Region],
               maybe_reads: list[Region] = ()) -> None:
        """One op of ``pipe`` reading and writing the given regions."""
        self.ops += 1
        new = [("R", r, False) for r in reads] + [("R", r, True) for r in maybe_reads] + \
              [("W", w, False) for w in writes]
        for kind, reg, maybe in new:
            if kind == "R" and not maybe and reg.root[0] != "GM" and pipe != "?":
                self._check_written(reg, op, line)
            bucket = self.buckets.get(reg.root)
            if not bucket:
                continue
            for a in list(bucket.values()):
                if a.kind == "R" and kind == "R":
                    continue
                if not regions_overlap(a.region, reg):
                    continue
                self._check_order(a, pipe, kind, reg, op, line)
        for kind, reg, maybe in new:
            self.serial += 1
            acc = Access(pipe, kind, reg, op, line, set(), maybe, self.serial)
            bucket = self.buckets.setdefault(reg.root, {})
            key = (reg.key(), pipe, kind)
            bucket.pop(key, None)  # the newer access of the same kind subsumes the older one
            bucket[key] = acc
            if kind == "W":
                self.writes.setdefault(reg.root, []).append(reg)

    def _check_written(self, reg: Region, op: str, line: int) -> None:
        for w in self.writes.get(reg.root, ()):
            if covered_by_write(reg, w):
                return
        self.report(line, "warning", "read-never-written",
                    f"'{op}' reads {reg.name} ({reg.root[0]}), which nothing wrote before it on this path",
                    region=reg)

    def _check_order(self, a: Access, pipe: str, kind: str, reg: Region, op: str, line: int) -> None:
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
            if self.auto_sync and auto_sync_covers(self.arch, self.core, a.pipe, pipe):
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
                if a.pipe == pipe or pipe in a.done_for:
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
        self.xcaptured[len(self.xevents) - 1] = self._complete_on(pipe) if pipe and pipe != "ALL" else \
            [a for b in self.buckets.values() for a in b.values()]

    def cross_wait(self, blocked: frozenset) -> None:
        """A CrossCoreWaitFlag (xevents already has it): the own sets whose release it depends on
        (from the cross-core simulation) now order ``blocked`` pipes after their accesses."""
        if not self.causal:
            return
        own = self.causal.get(tuple(self.xevents))
        for j in own or ():
            for a in self.xcaptured.get(j, ()):
                a.done_for |= blocked

    def barrier(self, pipe: str) -> None:
        for bucket in self.buckets.values():
            for a in bucket.values():
                if pipe == "ALL":
                    a.done_for |= ALL_PIPES
                elif a.pipe == pipe or pipe in a.done_for:
                    a.done_for.add(pipe)

    def end(self, line: int, note: str = "") -> None:
        for st in self.flags.values():
            idt = st.ident if isinstance(st.ident, int) else st.ident
            self.report(st.line, "error", "set-never-waited",
                        f"SetFlag<HardEvent::{st.event}>({idt}) is never waited before the kernel ends{note}: "
                        f"every SetFlag needs its WaitFlag (a flag left set corrupts the next kernel); add "
                        f"WaitFlag<HardEvent::{st.event}>({idt}) (a drain) before the end")
        self.flags.clear()
