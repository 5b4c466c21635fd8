"""ascend_backend.emulator.waves: a launch modelled from its first wave plus a partial last wave
emulated on its own (fake Reports: the arithmetic, not the emulator)."""

from __future__ import annotations

import pytest

from ascend_backend.emulator.timing import ASSUMPTIONS
from ascend_backend.emulator.waves import emulate_waves, slots
from ascend_backend.ir import KernelType


class FakeReport:
    def __init__(self, blocks: int, miss: float) -> None:
        self.blocks, self.miss, self.replayed_with = blocks, miss, []

    def _timing(self, f: float) -> dict:
        per = 100 if self.blocks >= 4 else 60  # fewer blocks at once: each one faster
        return {"total_cycles": per, "block_cycles": {str(b): per for b in range(self.blocks)},
                "busy_percent": {"M": 50.0 if self.blocks >= 4 else 80.0}, "l2_miss_fraction": f}

    @property
    def timing(self) -> dict:
        return self._timing(self.miss)

    def timing_with(self, f: float) -> dict:
        self.replayed_with.append(f)
        return self._timing(f)


def _runner(own_miss: dict[int, float]):
    calls: list[FakeReport] = []

    def run(blocks: int) -> FakeReport:
        calls.append(FakeReport(blocks, own_miss.get(blocks, 1.0)))
        return calls[-1]

    return run, calls


def test_a_partial_last_wave_is_emulated_on_its_own_at_the_first_waves_miss_fraction():
    run, calls = _runner({4: 0.25, 2: 0.5})
    w = emulate_waves(run, grid=10, slots=4)
    assert [c.blocks for c in calls] == [4, 2]
    assert calls[1].replayed_with == [0.25]  # not its own 0.5
    assert w.waves == 3 and w.blocks_emulated == 6
    assert w.cycles == 2 * 100 + 60
    assert w.block_cycles == 2 * 4 * 100 + 2 * 60
    assert w.busy["M"] == pytest.approx((800 * 50.0 + 120 * 80.0) / 920)


def test_full_waves_emulate_one_wave_and_a_miss_function_sees_its_report():
    run, calls = _runner({4: 0.25})
    w = emulate_waves(run, grid=8, slots=4, miss=lambda rep: 0.1 * rep.blocks)
    assert [c.blocks for c in calls] == [4] and w.last is None
    assert calls[0].replayed_with == [pytest.approx(0.4)]
    assert w.cycles == 200 and w.block_cycles == 800 and w.blocks_emulated == 4
    one = emulate_waves(_runner({})[0], grid=3, slots=4)
    assert one.waves == 1 and one.cycles == 60 and one.last is None


@pytest.mark.parametrize("arch", ["dav-c220", "dav-3510"])
def test_slots_follow_the_model_s_list_schedule(arch):
    a = ASSUMPTIONS[arch]
    assert slots(arch, KernelType.AIV_ONLY) == a["aiv_cores"]
    assert slots(arch, KernelType.AIC_ONLY) == a["aic_cores"]
    assert slots(arch, KernelType.MIX_AIC_1_2) == a["groups"]
