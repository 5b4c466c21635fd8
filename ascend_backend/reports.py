"""The memory map and the sync table of a compiled kernel, as rows and as rich tables."""

from __future__ import annotations

from .ir import Kernel


def memory_map(kernel: Kernel) -> list[dict]:
    rows = []
    for b in kernel.buffers.values():
        if b.scope == "GM":
            continue
        cap = kernel.arch.capacity[b.scope]
        rows.append({"buffer": b.name, "scope": b.scope, "offset": b.offset, "size": b.nbytes,
                     "percent": 100.0 * b.nbytes / cap, "shape": "x".join(map(str, b.shape)), "dtype": b.dtype,
                     "layout": b.layout, "slots": b.slots, "role": b.role,
                     "defined_at": str(b.loc) if b.loc else "(compiler)"})
    return rows


def sync_table(kernel: Kernel) -> list[dict]:
    return [{"flag": f.index, "event": f.event, "id": f.event_id, "producer": f.producer, "consumer": f.consumer,
             "buffer": f.buffer, "kind": f.kind,
             "producer_at": str(f.producer_loc) if f.producer_loc else "",
             "consumer_at": str(f.consumer_loc) if f.consumer_loc else ""} for f in kernel.flags]


def render_memory_map(kernel: Kernel):
    from rich.table import Table

    t = Table(title=f"memory map of {kernel.name} on {kernel.arch.name}")
    for c in ("buffer", "scope", "offset", "size", "% of capacity", "shape", "layout", "defined at"):
        t.add_column(c, justify="right" if c in ("offset", "size", "% of capacity") else "left")
    for r in memory_map(kernel):
        t.add_row(r["buffer"], r["scope"], str(r["offset"]), str(r["size"]), f"{r['percent']:.1f}",
                  f"{r['shape']} {r['dtype']}", r["layout"] + (f" x{r['slots']}" if r["slots"] > 1 else ""),
                  _short(r["defined_at"]))
    return t


def _short(loc: str) -> str:
    """file:line with the file's directories dropped (tables stay narrow)."""
    return loc.rsplit("/", 1)[-1] if loc else ""


def render_sync_table(kernel: Kernel):
    from rich.table import Table

    t = Table(title=f"sync table of {kernel.name} on {kernel.arch.name}")
    for c in ("flag", "event", "id", "producer", "consumer", "buffer", "kind"):
        # Names and ids never wrap, so they stay searchable in captured output.
        t.add_column(c, no_wrap=c in ("flag", "event", "id", "buffer"))
    for r in sync_table(kernel):
        t.add_row(str(r["flag"]), r["event"], str(r["id"]), f"{r['producer']} ({_short(r['producer_at'])})",
                  f"{r['consumer']} ({_short(r['consumer_at'])})", r["buffer"], r["kind"])
    return t
