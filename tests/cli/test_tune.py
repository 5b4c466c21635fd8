"""ascend_backend.autotune and `tl-ascend tune`: configurations ranked by modelled cycles, failures
reported per configuration, results cached on disk. In-process (workers=1) to stay quick; every
figure is the timing model's."""

from __future__ import annotations

import os

import pytest

from ascend_backend.autotune import AutoTuner, autotune, expand_configs, tune
from ascend_backend.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ELEMENTWISE = os.path.join(ROOT, "examples", "elementwise.py")


def _add_2d():
    import elementwise

    return elementwise.add_2d


def test_expand_configs_takes_a_list_or_every_combination():
    assert expand_configs([{"a": 1}, {"a": 2}]) == [{"a": 1}, {"a": 2}]
    assert expand_configs({"a": [1, 2], "b": 3}) == [{"a": 1, "b": 3}, {"a": 2, "b": 3}]
    with pytest.raises(ValueError):
        expand_configs([])


@pytest.mark.slow  # compiles and emulates each configuration (a fresh cache: g++ builds)
def test_tune_ranks_by_modelled_cycles_and_reports_a_config_that_does_not_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path))
    # block_N = 100000: the tiles do not fit UB -> skipped with the compiler's error
    configs = [{"block_M": 32, "block_N": 128}, {"block_M": 64, "block_N": 256}, {"block_M": 8, "block_N": 100000}]
    res = tune(_add_2d(), configs, fixed={"M": 256, "N": 256}, target="ascendc:dav-3510", workers=1, progress=False)
    ok = [t for t in res.trials if t.ok]
    assert len(ok) == 2 and ok[0].cycles <= ok[1].cycles and res.best is ok[0]
    assert res.trials[-1].error and not res.trials[-1].ok
    assert all(t.busy and t.block_cycles > 0 for t in ok)
    again = tune(_add_2d(), configs[:2], fixed={"M": 256, "N": 256}, target="ascendc:dav-3510", workers=1,
                 progress=False)
    assert all(t.cached for t in again.trials)  # keyed by the generated code: nothing emulated twice
    assert [t.cycles for t in again.trials] == [t.cycles for t in ok]


@pytest.mark.slow  # compiles and emulates each configuration (a fresh cache: g++ builds)
def test_autotune_decorator_compiles_the_best_config(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path))
    add_2d = _add_2d()

    @autotune(configs={"block_M": [32, 64]}, target="ascendc:dav-c220", workers=1, progress=False)
    def tuned(M, N, block_M=32):
        return add_2d(M=M, N=N, block_M=block_M, block_N=128)

    res = tuned.tune(128, 256)
    assert res.config in ({"block_M": 32}, {"block_M": 64}) and res.arch == "dav-c220"
    assert AutoTuner.from_kernel(tuned, [{"block_M": 32}]).configs == [{"block_M": 32}]


@pytest.mark.slow  # compiles and emulates each configuration (a fresh cache: g++ builds)
def test_cli_tune_prints_the_ranking_and_the_best(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TL_ASCEND_CACHE_DIR", str(tmp_path))
    rc = main([ "tune", ELEMENTWISE, "--kernel", "add_2d", "--param", "M=128", "--param", "N=256",
               "--space", "block_M=32,64", "--workers", "1", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0 and "best: block_M=" in out and "MODELLED" in out


def test_cli_tune_without_a_space_says_what_to_give(capsys):
    rc = main(["tune", ELEMENTWISE, "--kernel", "add_2d"])
    err = capsys.readouterr().err
    assert rc == 2 and "--space" in err
