"""The memory map and the sync table of a compiled Program, as rows and as rich tables.

In a kernel that runs on both core kinds, buffers and intra-core flags are named per core
(``AIC: ...`` / ``AIV: ...``) and each cross-core flag has a row of its own.
"""

from __future__ import annotations

from .cnames import c_text
from .ir import Direction, FlagRecord, Program, Route, Scope


def memory_map(program: Program) -> list[dict]:
    """One row per on-chip buffer; ``shares`` names the buffers of its memory whose bytes overlap
    its own (plan_memory reuses the bytes of buffers whose lifetimes do not overlap)."""
    from ascend_backend.passes.plan_memory import sharing

    rows = []
    for lc in program.launches:
        for core, k in lc.kernels.items():
            shares = sharing(k.buffers.values())
            for b in k.buffers.values():
                if b.scope in (Scope.GM, Scope.LOCAL):
                    continue
                cap = program.arch.capacity[b.scope]
                name = f"{core.value}:{b.name}" if lc.mixed else b.name
                rows.append({"buffer": name, "scope": b.scope.value, "offset": b.offset, "size": b.nbytes,
                             "percent": 100.0 * b.nbytes / cap, "shape": "x".join(map(str, b.shape)),
                             "dtype": str(b.dtype), "layout": b.layout.value, "slots": b.slots, "role": b.role,
                             "shares": list(shares.get(b.name, [])),
                             "defined_at": str(b.loc) if b.loc else "(compiler)"})
    return rows


def _cross_core_rows(lc, start: int) -> list[FlagRecord]:
    rows = []
    for t in lc.transfers:
        name = t.tile
        if t.direction is Direction.C2V and t.route is Route.ON_CHIP:
            prod = (f"AIC: one dual-destination Fixpipe {name} -> {t.target} in the UB of AIV 0 and AIV 1 (rows "
                    "split)" if t.dual else f"AIC: Fixpipe {name} -> {t.target} in the UB of AIV 0 / AIV 1")
            cons = f"AIV: vector ops on {t.target}"
            buf, mode = f"AIV:{t.target}", "mode 4, one set per AIV (AIC ids {0} / {1})"
        elif t.direction is Direction.V2C and t.route is Route.ON_CHIP:
            prod, cons = f"AIV: DataCopy {name} -> its rows of L1 {name} (Nd2Nz, MTE3)", f"AIC: LoadData {name}"
            buf, mode = f"AIC:{name}", "mode 4, one set per AIV (AIC ids {0} / {1})"
        elif t.direction is Direction.C2V:
            prod, cons = f"AIC: Fixpipe {name} -> workspace", f"AIV: DataCopy workspace -> {name}"
            buf, mode = t.ws or f"ws_{name}", "mode 2"
        else:
            prod, cons = f"AIV: DataCopy {name} -> workspace", f"AIC: Nd2Nz workspace -> {name}"
            buf, mode = t.ws or f"ws_{name}", "mode 2"
        rows.append(FlagRecord(index=start + len(rows), event="CrossCore (ready)", event_id=t.ready, producer=prod,
                               consumer=cons, buffer=buf, kind=f"cross-core RAW, {mode.format(t.ready, t.ready + 16)}",
                               producer_loc=t.loc, consumer_loc=t.loc))
        if t.free is not None:
            rows.append(FlagRecord(index=start + len(rows), event="CrossCore (free)", event_id=t.free, producer=cons,
                                   consumer=prod + " (next)", buffer=buf,
                                   kind=f"cross-core WAR, {mode.format(t.free, t.free + 16)}, primed and drained",
                                   producer_loc=t.loc, consumer_loc=t.loc))
    return rows


def flag_records(program: Program) -> list[FlagRecord]:
    """Every sync-table row: each core's intra-core flags, then the cross-core flags."""
    out: list[FlagRecord] = []
    for lc in program.launches:
        for core, k in lc.kernels.items():
            for f in k.flags:
                prod = f"{core.value}: {f.producer}" if lc.mixed else f.producer
                cons = f"{core.value}: {f.consumer}" if lc.mixed else f.consumer
                out.append(FlagRecord(index=len(out), event=f.event, event_id=f.event_id, producer=prod, consumer=cons,
                                      buffer=f.buffer, kind=f.kind, producer_loc=f.producer_loc,
                                      consumer_loc=f.consumer_loc))
        out.extend(_cross_core_rows(lc, len(out)))
    return out


def sync_table(program: Program) -> list[dict]:
    return [{"flag": f.index, "event": f.event, "id": f.event_id, "producer": f.producer, "consumer": f.consumer,
             "buffer": f.buffer, "kind": f.kind,
             "producer_at": str(f.producer_loc) if f.producer_loc else "",
             "consumer_at": str(f.consumer_loc) if f.consumer_loc else ""} for f in flag_records(program)]


def render_memory_map(program: Program):
    from rich.table import Table

    t = Table(title=f"memory map of {program.name} on {program.arch.name}")
    for c in ("buffer", "scope", "offset", "size", "% of capacity", "shape", "layout", "shares bytes with",
              "defined at"):
        t.add_column(c, justify="right" if c in ("offset", "size", "% of capacity") else "left")
    for r in memory_map(program):
        t.add_row(_cell(r["buffer"]), r["scope"], str(r["offset"]), str(r["size"]), f"{r['percent']:.1f}",
                  f"{r['shape']} {r['dtype']}", r["layout"] + (f" x{r['slots']}" if r["slots"] > 1 else ""),
                  _cell(", ".join(r["shares"]) or "-"), _cell(_short(r["defined_at"])))
    return t


def _cell(text: str):
    """User text in a table cell: as the generated code's comments show it (a control character in a
    file name would drive the terminal), and never read as rich markup (`acc[i, j]`)."""
    from rich.text import Text

    return Text(c_text(text))


def _short(loc: str) -> str:
    """file:line with the file's directories dropped (tables stay narrow)."""
    return loc.rsplit("/", 1)[-1] if loc else ""


def render_sync_table(program: Program):
    from rich.table import Table

    t = Table(title=f"sync table of {program.name} on {program.arch.name}")
    for c in ("flag", "event", "id", "producer", "consumer", "buffer", "kind"):
        # Names and ids never wrap, so they stay searchable in captured output.
        t.add_column(c, no_wrap=c in ("flag", "event", "id", "buffer"))
    for r in sync_table(program):
        t.add_row(str(r["flag"]), r["event"], str(r["id"]), _cell(f"{r['producer']} ({_short(r['producer_at'])})"),
                  _cell(f"{r['consumer']} ({_short(r['consumer_at'])})"), _cell(r["buffer"]), r["kind"])
    return t
