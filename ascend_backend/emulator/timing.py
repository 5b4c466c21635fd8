"""Timing model: replays the emulator's trace per pipe with the recorded flag dependencies.

Every number produced here is MODELLED from the assumptions in ``ASSUMPTIONS`` (documented,
one table per arch, in docs/timing-model.md; a test keeps the two in sync). Nothing is
measured on hardware.

Model, per core: the scalar unit issues every instruction in program order
(``issue_cycles`` each). An op on pipe P starts when it is issued, when P is free, and
after every flag the pipe waited on; it occupies P for its busy cycles, and its result is
visible ``gm_latency`` cycles later when it touches GM (requests are pipelined: the latency
does not occupy the pipe). SetFlag on SRC fires when every earlier op of SRC is complete;
WaitFlag holds the DST pipe (the scalar unit too when DST is S) until then. PipeBarrier<PIPE_ALL> holds the scalar unit
until every pipe is idle. Cross-core sets reach the waiting core ``cross_core_latency``
cycles after the setting pipe is idle. Blocks are list-scheduled, in index order, onto
the physical cores (``aiv_cores`` for AIV-only blocks, ``aic_cores`` for AIC-only ones,
``groups`` for mix blocks); each block is replayed independently (mode-0 barriers
between blocks are not modelled in time).
"""

from __future__ import annotations

import math
from typing import Any

PIPES = ["S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"]
MEMS = ["GM", "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"]

# ONE table of assumptions per arch. Bandwidths in bytes per cycle of one core.
ASSUMPTIONS: dict[str, dict[str, float]] = {
    "dav-c220": {
        "clock_ghz": 1.8,                 # no official clock; public estimates
        "chip_gm_bandwidth_gbps": 1600,   # 910B, GB/s (facts page: 1.6-1.8 TB/s)
        "aic_cores": 24,                  # 910B2: 24 AIC + 48 AIV
        "aiv_cores": 48,
        "groups": 24,                     # physical AI-core groups that run blocks
        "l1_to_l0a_bpc": 256,
        "l1_to_l0b_bpc": 128,
        "l1_to_bt_bpc": 128,
        "l0c_to_l1_bpc": 128,
        "ub_to_l1_bpc": 128,              # (3510-only path; kept for symmetry)
        "l1_to_ub_bpc": 128,              # (3510-only path)
        "l0c_to_ub_bpc": 128,             # (3510-only path)
        "vector_bpc": 256,
        "cube_macs_per_cycle_16bit": 4096,   # 16x16x16 fp16/bf16
        "cube_macs_per_cycle_8bit": 8192,    # 16x32x16 int8
        "cube_macs_per_cycle_32bit": 1024,   # fp32 operands: assumed a quarter of fp16
        "core_gm_bpc_max": 64,            # one core's own GM bandwidth cap, bytes/cycle (assumed)
        "gm_op_issue": 16,                # pipe occupancy per GM op besides the transfer (assumed)
        "gm_latency": 200,                # GM access latency, not occupying the pipe (assumed)
        "local_copy_overhead": 16,        # fixed cycles per on-chip copy
        "vector_op_overhead": 8,          # fixed cycles per vector instruction
        "cube_op_overhead": 16,           # fixed cycles per Mmad
        "scalar_local_cycles": 1,         # GetValue/SetValue on on-chip memory
        "scalar_gm_cycles": 200,          # GetValue/SetValue on GM
        "issue_cycles": 1,                # scalar issue cost of every instruction
        "cross_core_latency": 64,         # CrossCoreSetFlag -> CrossCoreWaitFlag
    },
    "dav-3510": {
        "clock_ghz": 1.8,
        "chip_gm_bandwidth_gbps": 1600,   # 950PR (950DT: up to 4000)
        "aic_cores": 32,                  # 950PR: 28..36 AIC; 32 assumed
        "aiv_cores": 64,
        "groups": 32,
        "l1_to_l0a_bpc": 256,
        "l1_to_l0b_bpc": 256,
        "l1_to_bt_bpc": 128,
        "l0c_to_l1_bpc": 128,
        "ub_to_l1_bpc": 128,
        "l1_to_ub_bpc": 128,
        "l0c_to_ub_bpc": 128,
        "vector_bpc": 256,
        "cube_macs_per_cycle_16bit": 4096,
        "cube_macs_per_cycle_8bit": 8192,
        "cube_macs_per_cycle_32bit": 1024,
        "core_gm_bpc_max": 64,
        "gm_op_issue": 16,
        "gm_latency": 200,
        "local_copy_overhead": 16,
        "vector_op_overhead": 8,
        "cube_op_overhead": 16,
        "scalar_local_cycles": 1,
        "scalar_gm_cycles": 200,
        "issue_cycles": 1,
        "cross_core_latency": 64,
    },
}


def gm_bytes_per_cycle(arch: str, active_cores: int | None = None) -> float:
    """GM bandwidth of one core, bytes/cycle: the chip bandwidth shared by the cores of the
    launch that run at once (at most every AIC and AIV of the chip), capped by one core's own
    limit. ``active_cores=None``: every core of the chip is busy."""
    a = ASSUMPTIONS[arch]
    chip_cores = int(a["aic_cores"] + a["aiv_cores"])
    n = chip_cores if active_cores is None else max(1, min(int(active_cores), chip_cores))
    share = a["chip_gm_bandwidth_gbps"] * 1e9 / n / (a["clock_ghz"] * 1e9)
    return min(a["core_gm_bpc_max"], share)


def op_cost(arch: str, pipe: int, src: int, dst: int, nbytes: int, elems: int, macs: int, repeats: int,
            gm_bpc: float | None = None) -> tuple[int, int]:
    """Modelled (busy, latency) cycles of one op (see ASSUMPTIONS): the op occupies its pipe for
    `busy` cycles and its result is visible `latency` cycles after that."""
    a = ASSUMPTIONS[arch]
    p = PIPES[pipe]
    s = MEMS[src] if src < len(MEMS) else None
    d = MEMS[dst] if dst < len(MEMS) else None
    if p == "S":
        return int(a["scalar_gm_cycles"] if "GM" in (s, d) else a["scalar_local_cycles"]), 0
    if p == "V":
        return int(a["vector_op_overhead"] + max(repeats, math.ceil(nbytes / a["vector_bpc"]))), 0
    if p == "M":
        rate = a["cube_macs_per_cycle_16bit"]
        if elems and nbytes:
            esz = nbytes / elems
            if esz <= 1:
                rate = a["cube_macs_per_cycle_8bit"]
            elif esz >= 4:
                rate = a["cube_macs_per_cycle_32bit"]
        return int(a["cube_op_overhead"] + math.ceil(macs / rate)), 0
    if "GM" in (s, d):
        bpc = gm_bpc if gm_bpc is not None else gm_bytes_per_cycle(arch)
        return int(a["gm_op_issue"] + math.ceil(nbytes / bpc)), int(a["gm_latency"])
    bw = {
        ("L1", "L0A"): a["l1_to_l0a_bpc"], ("L1", "L0B"): a["l1_to_l0b_bpc"], ("L1", "BT"): a["l1_to_bt_bpc"],
        ("L0C", "L1"): a["l0c_to_l1_bpc"], ("UB", "L1"): a["ub_to_l1_bpc"], ("L1", "UB"): a["l1_to_ub_bpc"],
        ("L0C", "UB"): a["l0c_to_ub_bpc"],
    }.get((s, d), 128)
    return int(a["local_copy_overhead"] + math.ceil(nbytes / bw)), 0


def _replay_block(arch: str, names: list[str], threads: list[dict[str, Any]], gts: list[int],
                  times: dict[int, list[int]], gm_bpc: float) -> tuple[int, dict[tuple[int, int], int], list[tuple]]:
    """Replay the cores of one block together. Returns (cycles, busy[(gt, pipe)], timeline)."""
    a = ASSUMPTIONS[arch]
    issue = int(a["issue_cycles"])
    xlat = int(a["cross_core_latency"])
    state = {gt: {"i": 0, "s": 0, "free": [0] * 7, "done": [0] * 7} for gt in gts}
    cost_cache: dict[tuple, tuple[int, int]] = {}
    for gt in gts:
        times[gt] = [0] * len(threads[gt]["ops"])
    busy: dict[tuple[int, int], int] = {}
    tl: list[tuple] = []
    gtset = set(gts)
    progress = True
    while progress:
        progress = False
        for gt in gts:
            st = state[gt]
            ops = threads[gt]["ops"]
            t = times[gt]
            free = st["free"]
            done = st["done"]
            while st["i"] < len(ops):
                r = ops[st["i"]]
                kind, pipe = r[0], r[1]
                deps = r[10:]
                dep_t = 0
                blocked = False
                for k in range(0, len(deps), 2):
                    dg, di = deps[k], deps[k + 1]
                    if dg in gtset and di < len(times[dg]):
                        if dg != gt and state[dg]["i"] <= di:
                            blocked = True
                            break
                        dep_t = max(dep_t, times[dg][di])
                if blocked:
                    break
                s = st["s"]
                if kind == 0:
                    s += issue
                    key = (pipe, r[4], r[5], r[6], r[7], r[8], r[9])
                    cl = cost_cache.get(key)
                    if cl is None:
                        cl = cost_cache[key] = op_cost(arch, pipe, r[4], r[5], r[6], r[7], r[8], r[9], gm_bpc)
                    c, lat = cl
                    start = max(s, free[pipe])
                    end = start + c
                    free[pipe] = end
                    done[pipe] = max(done[pipe], end + lat)
                    if pipe == 0:
                        s = end
                    busy[(gt, pipe)] = busy.get((gt, pipe), 0) + c
                    tl.append((gt, pipe, r[2], start, end, r[3]))
                    t[st["i"]] = end + lat
                elif kind == 1:  # SetFlag on src pipe: fires when its earlier ops are complete
                    s += issue
                    t[st["i"]] = max(s, done[pipe])
                elif kind == 2:  # WaitFlag on dst pipe
                    s += issue
                    if len(deps) >= 2:
                        free[pipe] = max(free[pipe], dep_t)
                        if pipe == 0:
                            s = max(s, dep_t)
                    t[st["i"]] = s
                elif kind == 3:  # PipeBarrier
                    s += issue
                    if pipe == 255:
                        s = max([s, *free, *done])
                        free[:] = [s] * 7
                        done[:] = [s] * 7
                    t[st["i"]] = s
                elif kind == 4:  # CrossCoreSetFlag
                    s += issue
                    ready = max(done) if pipe == 255 else done[pipe]
                    t[st["i"]] = max(s, ready) + xlat
                elif kind == 5:  # CrossCoreWaitFlag
                    s += issue
                    if pipe in (0, 255):
                        s = max(s, dep_t)
                        free[:] = [max(f, dep_t) for f in free]
                    else:
                        free[pipe] = max(free[pipe], dep_t)
                    t[st["i"]] = s
                st["s"] = s
                st["i"] += 1
                progress = True
        if all(state[g]["i"] >= len(threads[g]["ops"]) for g in gts):
            break
        if not progress:  # unresolvable dependency (e.g. cut trace): release the first waiting core
            for gt in gts:
                st = state[gt]
                if st["i"] < len(threads[gt]["ops"]):
                    times[gt][st["i"]] = st["s"]
                    st["i"] += 1
                    progress = True
                    break
    total = max([max([state[g]["s"], *state[g]["free"], *state[g]["done"]]) for g in gts] or [0])
    return total, busy, tl


def model(trace: dict[str, Any], arch: str, block_dim: int) -> tuple[dict[str, Any], list[tuple]]:
    """Replay a trace. Returns (timing dict, per-op timeline tuples)."""
    a = ASSUMPTIONS[arch]
    threads = trace["threads"]
    names = trace["names"]
    by_block: dict[int, list[int]] = {}
    for gt, th in enumerate(threads):
        by_block.setdefault(th["block"], []).append(gt)
    times: dict[int, list[int]] = {}
    durations: dict[int, int] = {}
    busy_all: dict[tuple[int, int], int] = {}
    block_tl: dict[int, list[tuple]] = {}
    kinds = {th["core"] == "AIC" for th in threads}
    per_block = max(1, len(threads) // max(1, len(by_block)))
    if kinds == {False} and per_block == 1:
        groups = int(a["aiv_cores"])      # AIV-only blocks: every AIV of the chip takes one
    elif kinds == {True}:
        groups = int(a["aic_cores"])      # AIC-only blocks
    else:
        groups = int(a["groups"])         # mix blocks occupy a whole AI-core group
    gm_bpc = gm_bytes_per_cycle(arch, min(len(by_block), groups) * per_block)
    for b, gts in sorted(by_block.items()):
        dur, busy, tl = _replay_block(arch, names, threads, gts, times, gm_bpc)
        durations[b] = dur
        busy_all.update(busy)
        block_tl[b] = tl
    # list-schedule blocks onto the physical groups
    free_at = [0] * groups
    start: dict[int, int] = {}
    for b in sorted(durations):
        g = min(range(groups), key=lambda i: free_at[i])
        start[b] = free_at[g]
        free_at[g] += durations[b]
    total = max(free_at) if durations else 0
    # busy % per pipe: busy cycles over (block duration x cores owning that pipe)
    busy_pct: dict[str, float] = {}
    for pi, pn in enumerate(PIPES):
        num = 0
        den = 0
        for b, gts in by_block.items():
            for gt in gts:
                core = threads[gt]["core"]
                owns = pn in ("S", "MTE2") or (core == "AIC" and pn in ("M", "MTE1", "FIX")) or (
                    core != "AIC" and pn in ("V", "MTE3"))
                if owns:
                    num += busy_all.get((gt, pi), 0)
                    den += durations[b]
        if num:
            busy_pct[pn] = 100.0 * num / den if den else 0.0
    timeline: list[tuple] = []
    for b in sorted(block_tl):
        off = start[b]
        for gt, pipe, nid, s, e, line in block_tl[b]:
            timeline.append((b, threads[gt]["core"], PIPES[pipe], names[nid], s + off, e + off, line))
    timing = {
        "modelled": True,
        "note": "timing model (docs/timing-model.md): modelled from stated assumptions, not measured",
        "total_cycles": int(total),
        "clock_ghz": a["clock_ghz"],
        "time_us": total / (a["clock_ghz"] * 1e3),
        "busy_percent": busy_pct,
        "block_cycles": {str(b): int(d) for b, d in durations.items()},
        "groups": groups,
        "gm_bytes_per_cycle_per_core": gm_bpc,
        "truncated_trace": bool(trace.get("truncated")),
    }
    return timing, timeline
