"""A launch's MODELLED time from its first wave, with a partial last wave emulated on its own.

When every block of a launch runs the same schedule, emulating all of them repeats the same work:
the first wave (min(grid, slots) blocks, ``slots`` being how many blocks run at once) stands for
every full wave, since its blocks share the chip's bandwidth as the full launch's do. A partial
last wave runs fewer blocks at once, each with a larger part of the chip (docs/timing-model.md),
so it is emulated as a launch of its own blocks, at the first wave's L2 miss fraction:

    total = (waves - 1) x (first wave) + (last wave),   waves = ceil(grid / slots)

Used by the autotuner and the benchmarks; every figure is modelled, not measured.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .timing import ASSUMPTIONS


def slots(arch: str, kernel_type: Any) -> int:
    """How many blocks of a launch run at once in the timing model's list schedule: AIV-only
    blocks take every AIV, AIC-only blocks every AIC, mix blocks the AI-core groups."""
    from ..ir import KernelType

    key = {KernelType.AIV_ONLY: "aiv_cores", KernelType.AIC_ONLY: "aic_cores"}.get(kernel_type, "groups")
    return int(ASSUMPTIONS[arch][key])


@dataclass
class WaveTiming:
    """The modelled launch: ``cycles`` in all; ``first`` / ``last`` the timing dicts of the first
    wave and of the partial last wave (None when every wave is full); ``block_cycles`` the modelled
    durations of every block of the grid, summed; ``busy`` per-pipe busy % weighted by them."""

    cycles: int
    waves: int
    blocks_emulated: int
    block_cycles: int
    busy: dict[str, float]
    first: dict
    last: dict | None
    report: Any  # the first wave's emulator Report

    @property
    def truncated(self) -> bool:
        return bool(self.first.get("truncated_trace") or (self.last or {}).get("truncated_trace"))


def emulate_waves(run: Callable[[int], Any], grid: int, slots: int,
                  miss: Callable[[Any], float] | float | None = None) -> WaveTiming:
    """Model a launch of ``grid`` equal blocks. ``run(block_dim)`` emulates that many blocks and
    returns the Report; ``miss`` is the L2 miss fraction to replay the first wave with (a number,
    or a function of its Report), None for the Report's own."""
    waves = max(1, math.ceil(grid / slots))
    first_n = min(grid, slots)
    rep = run(first_n)
    f = miss(rep) if callable(miss) else miss
    t = rep.timing_with(f) if f is not None else rep.timing
    per_wave = sum(int(v) for v in t["block_cycles"].values())
    rest = grid - (waves - 1) * slots
    if waves == 1 or rest == slots:
        return WaveTiming(waves * int(t["total_cycles"]), waves, first_n, waves * per_wave,
                          dict(t["busy_percent"]), t, None, rep)
    last = run(rest).timing_with(t["l2_miss_fraction"])
    last_cycles = sum(int(v) for v in last["block_cycles"].values())
    full = (waves - 1) * per_wave
    busy = {k: (float(t["busy_percent"].get(k, 0.0)) * full + float(last["busy_percent"].get(k, 0.0)) * last_cycles)
            / (full + last_cycles) for k in set(t["busy_percent"]) | set(last["busy_percent"])}
    return WaveTiming((waves - 1) * int(t["total_cycles"]) + int(last["total_cycles"]), waves, first_n + rest,
                      full + last_cycles, busy, t, last, rep)
