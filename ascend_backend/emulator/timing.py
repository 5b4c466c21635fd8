"""Timing model: replays the emulator's trace per pipe with the recorded flag dependencies.

Every number produced here is MODELLED from the assumptions in ``ASSUMPTIONS`` (documented,
one table per arch, in docs/timing-model.md; a test keeps the two in sync). Nothing is
measured on hardware.

Model, per core: the scalar unit issues every instruction in program order
(``issue_cycles`` each). An op on pipe P starts when it is issued, when P is free, and
after every flag the pipe waited on; it occupies P for its busy cycles, and its result is
visible ``gm_latency`` cycles later when it touches GM, or the path's documented
first-instruction latency later for LoadData, Fixpipe and L1 -> BT/FB (requests are
pipelined: the latency does not occupy the pipe). SetFlag on SRC fires when every earlier op of SRC is complete;
WaitFlag holds the DST pipe (the scalar unit too when DST is S) until then. PipeBarrier<PIPE_ALL> holds the scalar unit
until every pipe is idle. Cross-core sets reach the waiting core ``cross_core_latency``
cycles after the setting pipe is idle. Blocks are list-scheduled, in index order, onto
the physical cores (``aiv_cores`` for AIV-only blocks, ``aic_cores`` for AIC-only ones,
``groups`` for mix blocks); each block is replayed independently (mode-0 barriers
between blocks are not modelled in time). GM reads cost a blend of L2-hit and HBM rates: the
first read of each byte in the launch misses L2 unless the launch wrote it before, later reads
hit (``l2_miss_fraction``). GM bandwidth is shared: each block gets an equal part of the chip's
HBM and L2 bandwidth with the blocks running beside it (their time-weighted count over its run,
read off the list schedule), split among its cores by the GM bytes each moves
(``share_bandwidth``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

PIPES = ["S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"]
MEMS = ["GM", "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"]

# ONE table of assumptions per arch. Bandwidths in bytes per cycle of one core. Sources of the
# sourced rows: docs/timing-model.md (CANN platform configuration files, Ascend C best practices).
ASSUMPTIONS: dict[str, dict[str, float]] = {
    "dav-c220": {
        "clock_ghz": 1.8,                 # platform config Ascend910B2C: cube_freq 1800 MHz
        "chip_gm_bandwidth_gbps": 1600,   # 910B, GB/s (facts page: 1.6-1.8 TB/s)
        "aic_cores": 24,                  # 910B2: 24 AIC + 48 AIV
        "aiv_cores": 48,
        "groups": 24,                     # physical AI-core groups that run blocks
        # L1 -> L0 (MTE1) and the Fixpipe unit: devkit tests/perf/{load_data_perf,fixpipe_perf}
        # README (theoretical bandwidth and fixed latency per path). A transfer occupies its pipe
        # for ceil(bytes / bandwidth); its result is visible `latency` cycles later (the
        # first-instruction latency: a burst of back-to-back transfers pays it once).
        "l1_to_l0a_bpc": 256,             # LoadData 2D L1 -> L0A (load_data_perf scenario 1)
        "l1_to_l0a_latency": 28,
        "l1_to_l0b_bpc": 128,             # LoadData 2D L1 -> L0B (scenario 2)
        "l1_to_l0b_latency": 28,
        "load_transpose_latency": 28,     # LoadDataWithTranspose, same bandwidth as 2D (scenarios 3, 4)
        "load_3d_latency": 50,            # LoadData 3D v2 (img2col); bandwidth: top of 32-256 / 28.4-128
        "l1_to_bt_bpc": 32,               # L1 -> BiasTable (scenario 8)
        "l1_to_bt_latency": 20,
        "l1_to_fb_bpc": 32,               # L1 -> Fixpipe buffer (scenario 9)
        "l1_to_fb_latency": 20,
        "fixpipe_out_elems_per_cycle": 64,  # Fixpipe: 64 output elements per cycle (fixpipe_perf)
        "fixpipe_max_bpc": 128,           # ... at most 128 B/cycle (fp32 out: 32 elements/cycle)
        "fixpipe_dual_dst_factor": 2,     # dual-destination L0C -> UB (both AIVs) doubles it (3510 path)
        "fixpipe_latency": 20,            # L0C -> L1 (fixpipe_perf scenarios 1, 2)
        "ub_to_l1_bpc": 128,              # (3510-only path; kept for symmetry)
        "l1_to_ub_bpc": 128,              # (3510-only path)
        "vector_bpc": 256,
        # Mmad: mmad_perf README, MACs/cycle by operand width (cube_k = rate / 256 per 16x16 fractal)
        "cube_macs_per_cycle_4bit": 0,       # no 4-bit Mmad on dav-2201
        "cube_macs_per_cycle_8bit": 8192,    # b8: 16x16x32
        "cube_macs_per_cycle_16bit": 4096,   # b16: 16x16x16 fp16/bf16
        "cube_macs_per_cycle_32bit": 1024,   # b32: 16x16x4
        "core_hbm_read_bpc": 32,          # one core reading HBM (L2 miss), platform config ddr_read_rate
        "core_l2_read_bpc": 110,          # one core reading L2 (hit), platform config l2_read_rate
        "core_l2_write_bpc": 86,          # one core writing GM through L2, platform config l2_write_rate
        "l2_bytes": 201326592,            # 192 MB L2, platform config l2_size
        "l2_to_hbm_bandwidth_ratio": 3.5,  # chip L2 read bandwidth / HBM ("about 3-4x", best practices)
        "gm_op_issue": 16,                # pipe occupancy per GM op besides the transfer (assumed)
        "gm_latency": 200,                # GM access latency, not occupying the pipe (assumed)
        "local_copy_overhead": 16,        # fixed cycles per on-chip copy without a documented latency
        "vector_op_overhead": 8,          # fixed cycles per vector instruction
        "cube_op_overhead": 0,            # fixed cycles per Mmad (mmad_perf: first-instruction overhead 0)
        "scalar_local_cycles": 1,         # GetValue/SetValue on on-chip memory
        "scalar_gm_cycles": 200,          # GetValue/SetValue on GM missing the data cache (assumed)
        # Scalar data cache (DCache): 64-byte lines, one per AIC/AIV (DataCacheCleanAndInvalid page,
        # "Scalar读写数据" guide page); 16 KB is the size the CANN guide's compute-units page gives as
        # its example. Fully associative LRU and the hit cost are assumed.
        "scalar_dcache_lines": 256,       # 16 KB / 64 B
        "scalar_dcache_hit_cycles": 4,    # GetValue/SetValue on GM hitting the data cache (assumed)
        "issue_cycles": 1,                # scalar issue cost of every instruction
        "cross_core_latency": 64,         # CrossCoreSetFlag -> CrossCoreWaitFlag
    },
    "dav-3510": {
        "clock_ghz": 1.65,                # platform config Ascend950PR: cube_freq 1650 MHz
        "chip_gm_bandwidth_gbps": 1600,   # 950PR (950DT: up to 4000)
        "aic_cores": 28,                  # platform config Ascend950PR: 28 cube + 56 vector cores
        "aiv_cores": 56,
        "groups": 28,
        "l1_to_l0a_bpc": 256,             # LoadData 2D V2 (load_data_perf scenario 11)
        "l1_to_l0a_latency": 30,
        "l1_to_l0b_bpc": 256,             # scenario 12
        "l1_to_l0b_latency": 30,
        "load_transpose_latency": 28,     # scenario 17
        "load_3d_latency": 50,            # scenarios 15, 16 (32-256 B/cycle)
        "l1_to_bt_bpc": 32,               # scenario 18
        "l1_to_bt_latency": 20,
        "l1_to_fb_bpc": 32,               # scenario 19
        "l1_to_fb_latency": 26,
        "fixpipe_out_elems_per_cycle": 64,
        "fixpipe_max_bpc": 128,           # fixpipe_perf scenario 13: fp32 to UB 128 B/cycle
        "fixpipe_dual_dst_factor": 2,     # scenario 14: both AIVs, 256 B/cycle
        "fixpipe_latency": 26,            # L0C -> L1 and L0C -> UB (scenarios 11-14)
        "ub_to_l1_bpc": 128,              # (assumed; no documented rate)
        "l1_to_ub_bpc": 128,              # (assumed)
        "vector_bpc": 256,
        "cube_macs_per_cycle_4bit": 16384,   # mxfp4: 16x16x64
        "cube_macs_per_cycle_8bit": 8192,    # b8 and mxfp8: 16x16x32
        "cube_macs_per_cycle_16bit": 4096,   # b16: 16x16x16
        "cube_macs_per_cycle_32bit": 256,    # b32: 16x16x1
        "core_hbm_read_bpc": 27,
        "core_l2_read_bpc": 100,
        "core_l2_write_bpc": 100,
        "l2_bytes": 117440512,            # 112 MB
        "l2_to_hbm_bandwidth_ratio": 3.5,
        "gm_op_issue": 16,
        "gm_latency": 200,
        "local_copy_overhead": 16,
        "vector_op_overhead": 8,
        "cube_op_overhead": 0,
        "scalar_local_cycles": 1,
        "scalar_gm_cycles": 200,
        "scalar_dcache_lines": 256,
        "scalar_dcache_hit_cycles": 4,
        "issue_cycles": 1,
        "cross_core_latency": 64,
    },
}


@dataclass(frozen=True)
class GMRates:
    """GM bandwidth of one core, bytes/cycle: reads blended from L2 hits and misses, writes."""

    read: float
    write: float
    miss_fraction: float


def _active(arch: str, active_cores: int | None) -> int:
    a = ASSUMPTIONS[arch]
    chip_cores = int(a["aic_cores"] + a["aiv_cores"])
    return chip_cores if active_cores is None else max(1, min(int(active_cores), chip_cores))


def gm_bytes_per_cycle(arch: str, active_cores: int | None = None) -> float:
    """HBM bandwidth of one core, bytes/cycle: the chip bandwidth shared by the cores of the
    launch that run at once (at most every AIC and AIV of the chip), capped by one core's own
    HBM read rate. ``active_cores=None``: every core of the chip is busy."""
    a = ASSUMPTIONS[arch]
    share = a["chip_gm_bandwidth_gbps"] / a["clock_ghz"] / _active(arch, active_cores)
    return min(a["core_hbm_read_bpc"], share)


def l2_miss_fraction(arch: str, read_bytes: float, unique_read_bytes: float,
                     reuse_bytes: float | None = None) -> float:
    """Fraction of GM reads that miss L2: the first read of every byte misses (compulsory); a
    later read hits when the distinct bytes read since the byte's previous read (its reuse
    distance, ``reuse_bytes``) fit in L2, as in an LRU cache; beyond that the hits shrink in
    proportion (a crude capacity term). ``reuse_bytes`` defaults to all the distinct bytes of the
    launch: a launch that reads everything once before reading it again. A kernel whose re-reads
    come soon (blocks running at once that read the same pages, K/V rows every query token picks
    again) passes the smaller distance. No reads recorded: 1.0."""
    if read_bytes <= 0:
        return 1.0
    first = min(1.0, max(0.0, unique_read_bytes / read_bytes))
    reuse = unique_read_bytes if reuse_bytes is None else reuse_bytes
    fit = min(1.0, ASSUMPTIONS[arch]["l2_bytes"] / reuse) if reuse > 0 else 1.0
    return 1.0 - (1.0 - first) * fit


def gm_rates(arch: str, active_cores: int | None = None, miss_fraction: float = 1.0) -> GMRates:
    """Per-core GM rates when ``active_cores`` cores run at once, each taking an equal share of the
    chip (what ``thread_gm_rates`` gives cores that move the same bytes), and ``miss_fraction`` of
    the reads miss L2. Hits: min(core L2 read rate, the core's share of the chip L2 bandwidth).
    Misses: gm_bytes_per_cycle. Writes land in L2: min(core L2 write rate, the same L2 share);
    that they leave for HBM in the end is the launch-wide HBM floor of ``model``."""
    a = ASSUMPTIONS[arch]
    n = _active(arch, active_cores)
    l2_share = a["l2_to_hbm_bandwidth_ratio"] * a["chip_gm_bandwidth_gbps"] / a["clock_ghz"] / n
    miss = gm_bytes_per_cycle(arch, active_cores)
    hit = min(a["core_l2_read_bpc"], l2_share)
    f = min(1.0, max(0.0, miss_fraction))
    read = 1.0 / (f / miss + (1.0 - f) / hit)
    return GMRates(read=read, write=min(a["core_l2_write_bpc"], l2_share), miss_fraction=f)


def share_bandwidth(pool: float, demands: list[float], cap: float, equal: float | None = None) -> list[float]:
    """Split ``pool`` bytes/cycle among the cores of one block that move ``demands`` bytes each.

    Water-filling in proportion to the bytes, each core held to its own ``cap`` (what a capped
    core cannot use goes to the others, in proportion again): every uncapped core then finishes
    its traffic at the same time, the split that leaves no bandwidth idle while bytes remain.
    Each core gets at least the equal share ``min(cap, pool / cores)``: the rate a fair
    interconnect gives it while every core of the block transfers at once, so that a core moving a
    few bytes (a scale, a flag word) is not starved to a proportional trickle; it uses that rate
    only for its short transfers, and the launch-wide HBM/L2 floors of ``model`` bound the total.
    Equal demands give exactly the equal share (``equal``: pool / cores computed by the caller,
    so that it is bit-for-bit the figure of ``gm_rates``)."""
    n = len(demands)
    if n == 0:
        return []
    equal = min(cap, pool / n if equal is None else equal)
    alloc = [0.0] * n
    left = pool
    open_ = [i for i in range(n) if demands[i] > 0]
    while open_ and left > 0:
        tot = sum(demands[i] for i in open_)
        over = [i for i in open_ if left * demands[i] / tot > cap]
        if not over:
            for i in open_:
                alloc[i] = left * demands[i] / tot
            break
        for i in over:
            alloc[i] = cap
        left -= cap * len(over)
        open_ = [i for i in open_ if alloc[i] < cap]
    # within rounding of the equal share: exactly the equal share (equal traffic = the old model)
    return [x if x > equal * (1 + 1e-9) else equal for x in alloc]


def thread_gm_rates(arch: str, blocks_at_once: int, reads: list[float], writes: list[float],
                    miss_fraction: float = 1.0) -> list[GMRates]:
    """GM rates of the cores of one block (``reads`` / ``writes``: the GM bytes each moves) when
    ``blocks_at_once`` blocks run at once. The block's part of the chip: HBM / blocks for misses,
    the chip L2 bandwidth (``l2_to_hbm_bandwidth_ratio`` x HBM) / blocks for hits and, separately,
    for writes; each part split by ``share_bandwidth`` up to the per-core rates
    (``core_hbm_read_bpc``, ``core_l2_read_bpc``, ``core_l2_write_bpc``). Reads blend the miss
    and hit rates by ``miss_fraction``."""
    a = ASSUMPTIONS[arch]
    b = max(1, int(blocks_at_once))
    chip_hbm = a["chip_gm_bandwidth_gbps"] / a["clock_ghz"]
    chip_l2 = a["l2_to_hbm_bandwidth_ratio"] * a["chip_gm_bandwidth_gbps"] / a["clock_ghz"]
    # the equal shares as gm_rates computes them (chip / all cores running), bit for bit
    cores = _active(arch, b * len(reads))
    miss = share_bandwidth(chip_hbm / b, reads, a["core_hbm_read_bpc"], chip_hbm / cores)
    hit = share_bandwidth(chip_l2 / b, reads, a["core_l2_read_bpc"], chip_l2 / cores)
    wr = share_bandwidth(chip_l2 / b, writes, a["core_l2_write_bpc"], chip_l2 / cores)
    f = min(1.0, max(0.0, miss_fraction))
    return [GMRates(read=1.0 / (f / m + (1.0 - f) / h), write=w, miss_fraction=f)
            for m, h, w in zip(miss, hit, wr, strict=True)]


_CUBE_RATE_KEY = {4: "cube_macs_per_cycle_4bit", 8: "cube_macs_per_cycle_8bit",
                  16: "cube_macs_per_cycle_16bit", 32: "cube_macs_per_cycle_32bit"}


def cube_cycles(arch: str, macs: int, k: int = 0, operand_bytes: int = 0, fractals: int = 0) -> int:
    """Busy cycles of one Mmad, the mmad_perf README's theoretical formula:
    ``fractals x ceil(k / cube_k)`` with ``fractals = ceil(m/16) x ceil(n/16)`` and
    ``cube_k = MACs per cycle / 256`` for the operand width ``8 x operand_bytes / k`` bits
    (b4 mxfp4, b8 int8/fp8/mxfp8, b16 fp16/bf16, b32 fp32), plus ``cube_op_overhead`` (0).
    Without the operand record (k, bytes, fractals): ``ceil(macs / 16-bit rate)``."""
    a = ASSUMPTIONS[arch]
    if k and operand_bytes and fractals:
        bits = round(8 * operand_bytes / k)
        rate = a.get(_CUBE_RATE_KEY.get(bits, ""), 0) or a["cube_macs_per_cycle_16bit"]
        cube_k = max(1, int(rate) // 256)
        return int(a["cube_op_overhead"] + fractals * math.ceil(k / cube_k))
    return int(a["cube_op_overhead"] + math.ceil(macs / a["cube_macs_per_cycle_16bit"]))


def fixpipe_bpc(arch: str, out_elems: int, out_bytes: int, dual: bool = False) -> float:
    """Fixpipe output bandwidth, bytes/cycle (fixpipe_perf README): 64 output elements per cycle,
    at most 128 B/cycle, doubled for a dual-destination (both AIVs) L0C -> UB transfer. Without
    the element count the destination type is unknown: the 128 B/cycle cap."""
    a = ASSUMPTIONS[arch]
    bpc = a["fixpipe_max_bpc"]
    if out_elems and out_bytes:
        bpc = min(bpc, a["fixpipe_out_elems_per_cycle"] * out_bytes / out_elems)
    return bpc * (a["fixpipe_dual_dst_factor"] if dual else 1)


def local_path(arch: str, src: str | None, dst: str | None, name: str = "") -> tuple[float, int, bool]:
    """(bytes per cycle, fixed cycles, documented) of an on-chip copy from ``src`` to ``dst`` by op
    ``name``. Documented paths (load_data_perf README): the fixed cycles are the path's
    first-instruction latency, which delays the result but does not occupy the pipe. Other
    paths: 128 B/cycle unless ``*_bpc`` says otherwise, and ``local_copy_overhead`` occupying it."""
    a = ASSUMPTIONS[arch]
    if src == "L1" and dst in ("L0A", "L0B"):
        bw = a["l1_to_l0a_bpc"] if dst == "L0A" else a["l1_to_l0b_bpc"]
        if "3D" in name:
            return bw, int(a["load_3d_latency"]), True
        if "Transpose" in name:
            return bw, int(a["load_transpose_latency"]), True
        return bw, int(a["l1_to_l0a_latency"] if dst == "L0A" else a["l1_to_l0b_latency"]), True
    if (src, dst) == ("L1", "BT"):
        return a["l1_to_bt_bpc"], int(a["l1_to_bt_latency"]), True
    if (src, dst) == ("L1", "FB"):
        return a["l1_to_fb_bpc"], int(a["l1_to_fb_latency"]), True
    bw = {("UB", "L1"): a["ub_to_l1_bpc"], ("L1", "UB"): a["l1_to_ub_bpc"]}.get((src, dst), 128)
    return bw, int(a["local_copy_overhead"]), False


def op_cost(arch: str, pipe: int, src: int, dst: int, nbytes: int, elems: int, macs: int, repeats: int,
            rates: GMRates | None = None, name: str = "") -> tuple[int, int]:
    """Modelled (busy, latency) cycles of one op (see ASSUMPTIONS): the op occupies its pipe for
    `busy` cycles and its result is visible `latency` cycles after that. ``rates``: the core's
    GM rates (default: every core of the chip busy, every read an L2 miss). ``name``: the op's
    name (LoadDataWithTranspose and 3D loads have their own latency)."""
    a = ASSUMPTIONS[arch]
    p = PIPES[pipe]
    s = MEMS[src] if src < len(MEMS) else None
    d = MEMS[dst] if dst < len(MEMS) else None
    if p == "S":  # repeats: the runtime's data cache outcome (0 none/bypass, 1 hit, 2 miss)
        if "GM" not in (s, d):
            return int(a["scalar_local_cycles"]), 0
        return int(a["scalar_dcache_hit_cycles"] if repeats == 1 else a["scalar_gm_cycles"]), 0
    if p == "V":
        return int(a["vector_op_overhead"] + max(repeats, math.ceil(nbytes / a["vector_bpc"]))), 0
    if p == "M":
        return cube_cycles(arch, macs, elems, nbytes, repeats), 0
    from_l0c = p == "FIX" and s == "L0C"
    if "GM" in (s, d):
        r = rates if rates is not None else gm_rates(arch)
        bpc = r.read if s == "GM" else r.write
        if from_l0c:  # the Fixpipe output unit also bounds a write to GM
            bpc = min(bpc, fixpipe_bpc(arch, elems, nbytes))
        return int(a["gm_op_issue"] + math.ceil(nbytes / bpc)), int(a["gm_latency"])
    if from_l0c:  # the Fixpipe unit's first-instruction latency: the result is visible after it
        bw = fixpipe_bpc(arch, elems, nbytes, dual=repeats >= 2)
        return int(math.ceil(nbytes / bw)), int(a["fixpipe_latency"])
    bw, fixed, documented = local_path(arch, s, d, name)
    if documented:  # back-to-back transfers stream at the bandwidth; the latency delays the result
        return int(math.ceil(nbytes / bw)), fixed
    return int(fixed + math.ceil(nbytes / bw)), 0


_L0C_PIPES = (PIPES.index("M"), PIPES.index("FIX"))


def _unit_blocks(r: list, pipe: int) -> int:
    """The 512-byte L0C blocks an M or FIX op record covers (UnitFlag page): an Mmad writes its
    16x16 output fractals of 4-byte accumulators (``repeats`` of them, 1 KB each); a Fixpipe reads
    4 bytes of L0C per output element (``elems``)."""
    if pipe == _L0C_PIPES[0]:
        return max(1, 2 * r[9])
    return max(1, math.ceil(4 * r[7] / 512))


def _replay_block(arch: str, names: list[str], threads: list[dict[str, Any]], gts: list[int],
                  times: dict[int, list[int]], rates: dict[int, GMRates]
                  ) -> tuple[int, dict[tuple[int, int], int], list[tuple]]:
    """Replay the cores of one block together (``rates``: each core's GM rates). Returns
    (cycles, busy[(gt, pipe)], timeline)."""
    a = ASSUMPTIONS[arch]
    issue = int(a["issue_cycles"])
    xlat = int(a["cross_core_latency"])
    state = {gt: {"i": 0, "s": 0, "free": [0] * 7, "done": [0] * 7} for gt in gts}
    cost_caches: dict[int, dict[tuple, tuple[int, int]]] = {gt: {} for gt in gts}  # per core: its own rates
    for gt in gts:
        times[gt] = [0] * len(threads[gt]["ops"])
    busy: dict[tuple[int, int], int] = {}
    spans: dict[tuple[int, int], tuple[int, int, int, int]] = {}  # M / FIX ops: (start, end, busy, L0C blocks)
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
            cost_cache = cost_caches[gt]
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
                    key = (pipe, r[2], r[4], r[5], r[6], r[7], r[8], r[9])
                    cl = cost_cache.get(key)
                    if cl is None:
                        cl = cost_cache[key] = op_cost(arch, pipe, r[4], r[5], r[6], r[7], r[8], r[9], rates[gt],
                                                       names[r[2]])
                    c, lat = cl
                    start = max(s, free[pipe])
                    end = start + c
                    if deps:  # unit flags: stream behind the op that released the L0C blocks
                        for k in range(0, len(deps), 2):
                            pr = spans.get((deps[k], deps[k + 1]))
                            if pr is not None:
                                p_start, p_end, p_busy, p_blocks = pr
                                start = max(start, p_start + math.ceil(p_busy / p_blocks))
                                end = max(start + c, p_end + math.ceil(c / _unit_blocks(r, pipe)))
                    free[pipe] = end
                    done[pipe] = max(done[pipe], end + lat)
                    if pipe == 0:
                        s = end
                    busy[(gt, pipe)] = busy.get((gt, pipe), 0) + c
                    if pipe in _L0C_PIPES:
                        spans[(gt, st["i"])] = (start, end, c, _unit_blocks(r, pipe))
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


def _list_schedule(durations: dict[int, int], groups: int) -> tuple[dict[int, int], list[int]]:
    """Blocks in index order onto the first free of ``groups`` physical groups: (each block's
    start, when each group is free)."""
    free_at = [0] * groups
    start: dict[int, int] = {}
    for b in sorted(durations):
        g = min(range(groups), key=lambda i: free_at[i])
        start[b] = free_at[g]
        free_at[g] += durations[b]
    return start, free_at


def _blocks_running(start: dict[int, int], durations: dict[int, int]) -> dict[int, float]:
    """Each block's mean number of blocks running (itself included) over its run, weighted by
    time: the integral of the running count over [start, end), divided by the duration."""
    delta: dict[int, int] = {}
    for b, s in start.items():
        delta[s] = delta.get(s, 0) + 1
        delta[s + durations[b]] = delta.get(s + durations[b], 0) - 1
    integral: dict[int, float] = {}  # the running count integrated from 0 to each edge
    acc, running, prev = 0.0, 0, 0
    for t in sorted(delta):
        acc += running * (t - prev)
        integral[t] = acc
        running += delta[t]
        prev = t
    return {b: (integral[s + durations[b]] - integral[s]) / durations[b] if durations[b] > 0 else 1.0
            for b, s in start.items()}


def model(trace: dict[str, Any], arch: str, block_dim: int, gm_reads: dict[str, int] | None = None,
          miss_fraction: float | None = None, gm_writes: dict[str, int] | None = None
          ) -> tuple[dict[str, Any], list[tuple]]:
    """Replay a trace. Returns (timing dict, per-op timeline tuples).

    ``gm_reads`` ({"bytes", "unique_bytes"}, as the emulator reports them) gives the L2 miss
    fraction (l2_miss_fraction); ``miss_fraction`` overrides it (e.g. a benchmark that emulates
    one wave of a larger launch passes the whole launch's fraction). Neither: every read misses.
    ``gm_writes`` (the same for writes): the HBM floor counts each distinct written byte once (a
    workspace tile rewritten every step leaves L2 for HBM once); without it, every written byte."""
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
    if miss_fraction is None:
        miss_fraction = l2_miss_fraction(arch, gm_reads["bytes"], gm_reads["unique_bytes"]) if gm_reads else 1.0
    f = min(1.0, max(0.0, miss_fraction))
    # GM bytes each core reads and writes (S-pipe GetValue/SetValue excluded: not DMA traffic)
    reads = [0.0] * len(threads)
    writes = [0.0] * len(threads)
    for gt, th in enumerate(threads):
        rd = wr = 0
        for r in th["ops"]:
            if r[0] == 0 and r[1] != 0:
                if r[4] == 0:
                    rd += r[6]
                elif r[5] == 0:
                    wr += r[6]
        reads[gt], writes[gt] = float(rd), float(wr)
    # the chip's bandwidth is split evenly among the blocks running at once, then among each
    # block's cores by the bytes they move (thread_gm_rates). How many run at once is read off the
    # list schedule: a block's count is the time-weighted mean over its run, so the blocks of a
    # partial last wave, or the tail of blocks of unequal length, share the chip among fewer.
    # Replayed until the counts settle (blocks of equal length: one replay).
    full = min(len(by_block), groups)
    conc = {b: full for b in by_block}
    replayed_at: dict[int, int] = {}  # block -> the count its last replay used
    block_rates: dict[int, list[GMRates]] = {}
    for _round in range(4):
        for b, gts in sorted(by_block.items()):
            if replayed_at.get(b) == conc[b]:
                continue
            block_rates[b] = thread_gm_rates(arch, conc[b], [reads[g] for g in gts], [writes[g] for g in gts], f)
            dur, busy, tl = _replay_block(arch, names, threads, gts, times,
                                          dict(zip(gts, block_rates[b], strict=True)))
            durations[b] = dur
            busy_all.update(busy)
            block_tl[b] = tl
            replayed_at[b] = conc[b]
        start, free_at = _list_schedule(durations, groups)
        running = _blocks_running(start, durations)
        settled = {b: max(1, min(full, round(running[b]))) for b in by_block}
        if settled == conc:
            break
        conc = settled
    rates = {g: r for b, gts in by_block.items() for g, r in zip(gts, block_rates[b], strict=True)}
    total = max(free_at) if durations else 0
    # Chip floors: the launch cannot end before the chip's HBM has moved its L2 misses and its
    # written bytes (writes go to L2 per op, but leave for HBM in the end), nor before the chip's
    # L2 has served its hits and taken its writes (kept apart, as the per-core rates are). The
    # per-core shares may exceed a block's part of the chip for short transfers (the equal-share
    # floor of share_bandwidth); these bound the total.
    read_bytes, write_bytes = sum(reads), sum(writes)
    hbm_write_bytes = min(write_bytes, gm_writes["unique_bytes"]) if gm_writes else write_bytes
    chip_bpc = a["chip_gm_bandwidth_gbps"] / a["clock_ghz"]
    hbm_floor = math.ceil((read_bytes * f + hbm_write_bytes) / chip_bpc)
    l2_floor = math.ceil(max(read_bytes * (1.0 - f), write_bytes) / (a["l2_to_hbm_bandwidth_ratio"] * chip_bpc))
    total = max(total, hbm_floor, l2_floor)
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
    top_reader = max(range(len(threads)), key=lambda g: reads[g], default=0)
    top_writer = max(range(len(threads)), key=lambda g: writes[g], default=0)
    first = min(by_block) if by_block else None
    first_block_rates = {threads[g]["core"]: rates[g].read for g in by_block.get(first, [])}
    timing = {
        "modelled": True,
        "note": "timing model (docs/timing-model.md): modelled from stated assumptions, not measured",
        "total_cycles": int(total),
        "clock_ghz": a["clock_ghz"],
        "time_us": total / (a["clock_ghz"] * 1e3),
        "busy_percent": busy_pct,
        "block_cycles": {str(b): int(d) for b, d in durations.items()},
        "groups": groups,
        # the rates of the core that reads (writes) the most GM bytes: the one they bound
        "gm_bytes_per_cycle_per_core": rates[top_reader].read if rates else 0.0,
        "gm_write_bytes_per_cycle_per_core": rates[top_writer].write if rates else 0.0,
        "gm_read_bytes_per_cycle_by_core": first_block_rates,
        "l2_miss_fraction": f,
        "hbm_floor_cycles": hbm_floor,
        "l2_floor_cycles": l2_floor,
        "truncated_trace": bool(trace.get("truncated")),
    }
    return timing, timeline
