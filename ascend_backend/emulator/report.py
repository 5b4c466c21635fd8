"""The emulator's report and exception types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PIPES = ["S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"]
KERNEL_TYPES = {
    0: "AIV_ONLY",
    1: "AIC_ONLY",
    2: "MIX_AIV_1_0",
    3: "MIX_AIC_1_0",
    4: "MIX_AIC_1_1",
    5: "MIX_AIC_1_2",
}


class EmulatorError(Exception):
    """Any failure of an emulated run. ``.report`` holds the Report when there is one."""

    def __init__(self, message: str, report: Report | None = None) -> None:
        super().__init__(message)
        self.report = report


class EmulatorCompileError(EmulatorError):
    """g++ rejected the kernel. ``.line``/``.source_line`` point into the kernel source."""

    def __init__(self, message: str, compiler_output: str = "", line: int | None = None,
                 source_line: str = "") -> None:
        super().__init__(message, None)
        self.compiler_output = compiler_output
        self.line = line
        self.source_line = source_line


HARD_EVENTS = {
    "MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3", "M_V", "V_M", "V_V",
    "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M", "M_MTE2", "V_MTE1", "M_FIX", "FIX_M", "MTE3_MTE2", "MTE2_MTE3",
    "S_V", "V_S", "S_MTE2", "MTE2_S", "S_MTE3", "MTE3_S", "MTE2_FIX", "FIX_MTE2", "FIX_S", "M_S", "FIX_MTE3",
    "MTE1_FIX", "FIX_MTE1", "FIX_FIX",
}


def race_hint(race: dict[str, Any], arch: str) -> str:
    """What would order the two ops of a race (a suggestion, not a proof)."""
    a, b = race["first"], race["second"]
    if a.get("block") != b.get("block"):
        return ("different blocks never synchronise: give each block its own range, or separate the "
                "accesses with a mode-0 barrier (CrossCoreSetFlag<0, pipe> + CrossCoreWaitFlag / SyncAll)")
    if a.get("core") != b.get("core"):
        return (f"{a.get('core')} and {b.get('core')} are different cores: order them with "
                f"CrossCoreSetFlag<mode, PIPE_{a.get('pipe')}>(id) on the {a.get('core')} and "
                f"CrossCoreWaitFlag(id) on the {b.get('core')}")
    pa, pb = a.get("pipe"), b.get("pipe")
    if pa == pb == "V" and arch == "dav-c220":
        return ("dependent vector ops on dav-c220: put PipeBarrier<PIPE_V>() between them (bisheng's default "
                "--cce-auto-sync=on inserts it)")
    if pa == pb and pa in ("MTE2", "MTE3") and race.get("kind") == "write-write":
        return (f"two {pa} copies write overlapping bytes: put PipeBarrier<PIPE_{pa}>() between them "
                "(never inserted automatically)")
    ev = f"{pa}_{pb}"
    if ev in HARD_EVENTS:
        return (f"SetFlag<HardEvent::{ev}>(id) after line {a.get('line')} and "
                f"WaitFlag<HardEvent::{ev}>(id) before line {b.get('line')}")
    return f"no direct {ev} event exists: order them through an intermediate pipe or PipeBarrier<PIPE_ALL>()"


def _op(o: dict[str, Any]) -> str:
    where = f"line {o.get('line')}"
    if o.get("file") and o.get("file") != "kernel.cpp":
        where += f" ({o['file']})"
    return f"{o.get('op')} on {o.get('pipe')}, block {o.get('block')} {o.get('core')}, {where}"


@dataclass
class Report:
    """Result of one emulated launch.

    ``timing`` comes from the timing model (docs/timing-model.md): every figure in it is
    modelled, not measured; it says so in ``timing['modelled']``. It is computed on first
    use (replaying a big trace takes a while), so runs that never look at it pay nothing.
    """

    ok: bool
    arch: str
    block_dim: int
    kernel_type: str
    checks: bool = True
    auto_sync: bool = True
    races: list[dict[str, Any]] = field(default_factory=list)
    races_total: int = 0
    flag_errors: list[dict[str, Any]] = field(default_factory=list)
    deadlock: dict[str, Any] | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    op_counts: dict[str, int] = field(default_factory=dict)
    op_counts_by_name: dict[str, int] = field(default_factory=dict)
    wall_seconds: float = 0.0
    compiled: bool = False
    _trace: dict[str, Any] | None = field(default=None, repr=False)
    _trace_text: str | None = field(default=None, repr=False)  # raw JSON of the trace, parsed lazily
    _timing: dict[str, Any] | None = field(default=None, repr=False)
    gm_reads: dict[str, int] | None = None  # {"bytes", "unique_bytes"} read from GM (L2 term of the model)
    gm_writes: dict[str, int] | None = None  # {"bytes", "unique_bytes"} written to GM (the model's HBM floor)
    _timeline_data: list[tuple] | None = field(default=None, repr=False)
    # The Ascend C that ran (its `// k.py:12` comments give the timeline's tooltips their DSL lines).
    source: str | None = field(default=None, repr=False)

    # ---- construction -------------------------------------------------------------
    @classmethod
    def from_json(cls, d: dict[str, Any], timing_enabled: bool = True) -> Report:
        trace = d.get("trace")
        kt = KERNEL_TYPES.get(int(d.get("kernel_type_id", 0)), str(d.get("kernel_type_id")))
        r = cls(
            ok=False,
            arch=d.get("arch", "?"),
            block_dim=int(d.get("block_dim", 0)),
            kernel_type=kt,
            checks=bool(d.get("checks", True)),
            auto_sync=bool(d.get("auto_sync", True)),
            races=list(d.get("races") or []),
            races_total=int(d.get("races_total") or 0),
            flag_errors=list(d.get("flag_errors") or []),
            deadlock=d.get("deadlock"),
            errors=list(d.get("errors") or []),
            _trace=trace,
        )
        counts = d.get("op_counts") or {}
        r.op_counts = {p: int(counts[p]) for p in PIPES if counts.get(p)}
        r.op_counts_by_name = dict(sorted((d.get("op_counts_by_name") or {}).items(), key=lambda kv: -kv[1]))
        for race in r.races:
            race.setdefault("hint", race_hint(race, r.arch))
        r._trace_text = d.get("_trace_text")
        r.gm_reads = d.get("gm_reads")
        r.gm_writes = d.get("gm_writes")
        if not timing_enabled or not (trace or r._trace_text):
            r._trace, r._trace_text, r._timing, r._timeline_data = None, None, {}, []
        r.ok = not (r.races or r.races_total or r.flag_errors or r.deadlock or r.errors)
        return r

    @classmethod
    def not_launched(cls, arch: str, kernel_type: str) -> Report:
        """The report of a launch of 0 blocks (a grid extent of 0 at this call): nothing ran."""
        r = cls(ok=True, arch=arch, block_dim=0, kernel_type=kernel_type, auto_sync=False)
        r._timing, r._timeline_data = {}, []
        return r

    # ---- timing model (lazy) ---------------------------------------------------------
    def _model(self) -> None:
        if self._timing is None:
            self._timing, self._timeline_data = self._replay(None)

    def _replay(self, miss_fraction: float | None) -> tuple[dict[str, Any], list[tuple]]:
        from . import timing as timing_mod

        if self._trace is None and self._trace_text:
            import json

            self._trace = json.loads(self._trace_text)
            self._trace_text = None
        if self._trace and any(th["ops"] for th in self._trace["threads"]):
            return timing_mod.model(self._trace, self.arch, self.block_dim, self.gm_reads, miss_fraction,
                                    gm_writes=self.gm_writes)
        return {}, []

    def timing_with(self, miss_fraction: float) -> dict[str, Any]:
        """MODELLED timing with the L2 miss fraction given instead of the one this run measured
        (a benchmark emulating one wave of a larger launch passes the whole launch's fraction)."""
        return self._replay(miss_fraction)[0]

    @property
    def timing(self) -> dict[str, Any]:
        """MODELLED timing: total_cycles, time_us, clock_ghz, busy_percent, block_cycles, note
        ({} when the run was made with timing=False or recorded no ops)."""
        self._model()
        return self._timing or {}

    @property
    def _timeline(self) -> list[tuple]:
        self._model()
        return self._timeline_data or []

    # ---- views ----------------------------------------------------------------------
    @property
    def fatal(self) -> bool:
        """True when the run stopped early (kernel error, crash or deadlock)."""
        return bool(self.errors or self.deadlock)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data view (JSON-serialisable); the per-op timeline is capped at 5000 entries."""
        t = dict(self.timing)
        t["timeline"] = [
            {"block": b, "core": c, "pipe": p, "op": n, "start": s, "end": e, "line": ln}
            for (b, c, p, n, s, e, ln) in self._timeline[:5000]
        ]
        return {
            "ok": self.ok,
            "arch": self.arch,
            "block_dim": self.block_dim,
            "kernel_type": self.kernel_type,
            "checks": self.checks,
            "auto_sync": self.auto_sync,
            "races": self.races,
            "races_total": self.races_total,
            "flag_errors": self.flag_errors,
            "deadlock": self.deadlock,
            "errors": self.errors,
            "op_counts": self.op_counts,
            "op_counts_by_name": self.op_counts_by_name,
            "timing": t,
            "wall_seconds": self.wall_seconds,
        }

    def summary(self) -> str:
        """Human-readable multi-line summary (races with both ops and lines)."""
        status = "OK" if self.ok else "FAILED"
        if self.block_dim == 0:
            return (f"Emulator report ({self.arch}, block_dim=0, kernel type {self.kernel_type}): not launched (a grid "
                    "of no block: nothing ran, no output was written)")
        out = [f"Emulator report ({self.arch}, block_dim={self.block_dim}, kernel type {self.kernel_type}, "
               f"checks {'on' if self.checks else 'off'}, auto_sync {'on' if self.auto_sync else 'off'}): "
               f"{status}"]
        for e in self.errors:
            out.append(f"error [{e.get('kind')}] block {e.get('block')} {e.get('core')}, "
                       f"line {e.get('line')}: {e.get('message')}")
        if self.deadlock:
            out.append(f"deadlock: {self.deadlock.get('message')}")
        if self.races:
            distinct = len(self.races)
            out.append(f"races: {distinct} distinct, {self.races_total} in total")
            for r in self.races:
                out.append(f"  {r['kind']} race on {r['where']} ({r['count']}x)")
                out.append(f"    first : {_op(r['first'])}")
                out.append(f"    second: {_op(r['second'])}")
                out.append(f"    fix?  : {r['hint']}")
        for f in self.flag_errors:
            out.append(f"flag error [{f.get('kind')}] {f.get('event')} id {f.get('id')}, "
                       f"block {f.get('block')} {f.get('core')}, line {f.get('line')}: {f.get('message')}")
        if self.op_counts:
            out.append("op counts per pipe: " + ", ".join(f"{k}={v}" for k, v in self.op_counts.items()))
        if self.timing:
            t = self.timing
            busy = ", ".join(f"{k} {v:.0f}%" for k, v in t.get("busy_percent", {}).items())
            out.append(f"timing (MODELLED, not measured): {t['total_cycles']:,} cycles = "
                       f"{t['time_us']:.2f} us at an assumed {t['clock_ghz']} GHz; "
                       f"pipe busy (modelled): {busy}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.summary()

    def timeline_text(self, width: int = 100, blocks: int = 1) -> str:
        """Per-pipe utilisation strip chart of the modelled timeline (text)."""
        from . import timeline

        return timeline.text(self, width=width, blocks=blocks)

    def write_timeline_svg(self, path: str, blocks: int = 2) -> None:
        """Write the modelled timeline as an SVG picture (cycle axis, legend, DSL lines in the tooltips)."""
        from . import timeline

        timeline.write_svg(self, path, blocks=blocks)
