"""``ascend_backend.autotune``: a configuration search ranked by the emulator's timing model.

In the style of tilelang's autotuner (``tilelang.autotuner``): a kernel factory, a list of
configurations (keyword arguments of the factory), and a run that tries each one and keeps the
best. On this target "best" is the fewest **modelled** cycles (``Report.timing``,
docs/timing-model.md): each configuration is compiled and its launch emulated, in parallel worker
processes, with a progress bar; results are cached on disk, keyed by the generated Ascend C and
the emulator and timing model that measured it, so a second run of the same search emulates
nothing.

    from ascend_backend.autotune import AutoTuner, autotune

    result = (AutoTuner.from_kernel(kernel=matmul, configs=[{"block_M": 128}, {"block_M": 256}])
              .set_compile_args(target="ascendc:dav-3510")
              .set_profile_args(fixed={"M": 4096, "N": 4096, "K": 4096})
              .run(workers=2))
    result.config, result.latency, result.table()

    @autotune(configs={"block_M": [128, 256], "block_N": [128, 256]})   # dict of lists: every combination
    def matmul(M, N, K, block_M=128, block_N=128): ...                  # returns a @T.prim_func
    kernel = matmul(4096, 4096, 4096)           # tunes, then compiles the best configuration
    matmul.tune(4096, 4096, 4096).table()       # the ranking

Which blocks are emulated (``blocks``): "first_wave" (default) emulates min(grid, groups) blocks,
scales them by the number of full waves and emulates a partial last wave on its own (right when
every block runs the same schedule: each wave's blocks share the chip as in the full launch, see
docs/timing-model.md), "all" emulates every block (blocks that differ, like causal attention).
Inputs are zeros unless ``supply_prog`` gives them: values do not change the modelled time.
Every figure is modelled, not measured.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import itertools
import json
import math
import os
import pickle
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BLOCKS = ("first_wave", "all")
CACHE_FORMAT = 2  # 2: a partial last wave emulated on its own; block_cycles over the grid


@dataclass
class Trial:
    """One configuration's outcome: modelled cycles of the whole launch (None when it failed),
    its time, per-pipe busy %, and why it failed (a compile error such as a MemoryBudgetError, or
    an emulator error)."""

    config: dict
    cycles: int | None = None
    time_us: float | None = None
    busy: dict = field(default_factory=dict)
    blocks_emulated: int = 0
    waves: int = 1
    block_dim: int = 0
    block_cycles: int = 0  # modelled durations of every block of the grid, summed (per-core figures)
    gm_bpc: float = 0.0  # GM read bytes per cycle per core the model used
    error: str = ""
    cached: bool = False
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.cycles is not None


@dataclass
class TuneResult:
    """The search's outcome, best first (tilelang's AutotuneResult has ``latency``, ``config``,
    ``kernel``; ``latency`` here is the modelled time in microseconds)."""

    trials: list
    arch: str
    fixed: dict = field(default_factory=dict)
    _factory: Any = None
    _kernel: Any = None

    @property
    def best(self) -> Trial | None:
        ok = [t for t in self.trials if t.ok]
        return ok[0] if ok else None

    @property
    def config(self) -> dict | None:
        return dict(self.best.config) if self.best else None

    @property
    def latency(self) -> float | None:
        """Modelled time of the best configuration, microseconds."""
        return self.best.time_us if self.best else None

    @property
    def cycles(self) -> int | None:
        return self.best.cycles if self.best else None

    @property
    def kernel(self):
        """The best configuration compiled (an AscendKernel), made on first use."""
        if self._kernel is None and self.best is not None and self._factory is not None:
            from .kernel import compile as compile_kernel

            self._kernel = compile_kernel(_unwrap(self._factory)(**self.fixed, **self.best.config),
                                          target={"kind": "ascendc", "arch": self.arch})
        return self._kernel

    def table(self) -> str:
        """The ranking as text: one line per configuration, best first."""
        rows = [f"{'rank':>4}  {'modelled cycles':>16}  {'time us':>10}  config"]
        for n, t in enumerate(self.trials, 1):
            cfg = ", ".join(f"{k}={v}" for k, v in t.config.items())
            if t.ok:
                rows.append(f"{n:>4}  {t.cycles:>16,}  {t.time_us:>10.1f}  {cfg}")
            else:
                rows.append(f"{n:>4}  {'-':>16}  {'-':>10}  {cfg}  (skipped: {t.error.splitlines()[0]})")
        return "\n".join(rows)


def expand_configs(configs) -> list[dict]:
    """A list of dicts as given; a dict of lists gives every combination (tilelang accepts both
    forms through a callable; a callable is called once)."""
    if callable(configs):
        configs = configs()
    if isinstance(configs, dict):
        keys = list(configs)
        values = [v if isinstance(v, list | tuple) else [v] for v in configs.values()]
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]
    out = [dict(c) for c in configs]
    if not out:
        raise ValueError("autotune: no configurations to try")
    return out


# ---------------------------------------------------------------- the factory across processes


def factory_ref(fn: Callable) -> tuple:
    """How a worker process finds ``fn`` again: by pickling it (by reference, for a function of an
    importable module), or by its file and name (a file ``tl-ascend`` loaded by path, or a
    function pickle refuses)."""
    loaded_by_path = str(getattr(fn, "__module__", "")).startswith("_tl_ascend_cli_")
    if not loaded_by_path:
        try:
            pickle.dumps(fn)
            return ("pickle", fn)
        except Exception:  # noqa: BLE001 - not picklable: by file below
            pass
    path = inspect.getsourcefile(fn)
    if path is None or "<locals>" in fn.__qualname__:
        raise TypeError(f"autotune: {fn!r} cannot be sent to worker processes (define it at the top level of a "
                        "file, or use workers=1)")
    return ("file", os.path.abspath(path), fn.__qualname__)


def _resolve(ref: tuple) -> Callable:
    if ref[0] == "pickle":
        return ref[1]
    from .cli import load_module

    obj = load_module(ref[1])
    for part in ref[2].split("."):
        obj = getattr(obj, part)
    return obj


def _unwrap(fn: Callable) -> Callable:
    """The factory behind an @autotune-decorated function."""
    return getattr(fn, "__wrapped_factory__", fn)


# ---------------------------------------------------------------- measuring one configuration


def _cache_dir() -> Path:
    from . import buildcache

    return buildcache.ensure_dir(buildcache.cache_root() / "tune")


def _model_hash() -> str:
    """The emulator's sources and the timing model: a change to either re-measures."""
    from .emulator import timing
    from .emulator.cache import emulator_hash

    h = hashlib.sha256(emulator_hash().encode())
    h.update(Path(timing.__file__).read_bytes())
    return h.hexdigest()[:20]


def _key(source: str, arch: str, blocks: int, waves: int, inputs: list, miss) -> tuple[str, dict]:
    fields = {"format": CACHE_FORMAT, "arch": arch, "blocks": blocks, "waves": waves,
              "source": hashlib.sha256(source.encode()).hexdigest(), "model": _model_hash(),
              "inputs": inputs, "miss": miss}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32], fields


def _load(key: str, fields: dict) -> dict | None:
    from . import buildcache

    path = _cache_dir() / f"t_{key}.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.get("identity") != buildcache.identity("tune", key, **fields):
        return None  # another entry copied here, or a partial write: measure again
    return data.get("trial")


def _store(key: str, fields: dict, trial: dict) -> None:
    from . import buildcache

    d = _cache_dir()
    tmp = d / f"{buildcache.temp_prefix('tmp')}t_{key}.json"
    with buildcache.guard(d, "writing a tuning result"):
        tmp.write_text(json.dumps({"identity": buildcache.identity("tune", key, **fields), "trial": trial}))
        os.replace(tmp, d / f"t_{key}.json")


def _zeros(program) -> list:
    import torch

    out = []
    for _param, buf in program.param_buffers():
        if buf is None:
            out.append(0)
        else:
            out.append(torch.zeros(buf.shape, dtype=buf.dtype.torch_dtype()))
    return out


def measure(job: dict) -> dict:
    """Compile and emulate one configuration; a dict of Trial's fields (run in a worker)."""
    t0 = time.perf_counter()
    config = job["config"]
    trial = Trial(config=config)
    try:
        from .emulator import run_source
        from .emulator.waves import emulate_waves, slots
        from .errors import AscendCompileError
        from .kernel import compile as compile_kernel
        from .kernel import launch_args

        fn = _unwrap(_resolve(job["factory"]))
        try:
            kernel = compile_kernel(fn(**job["fixed"], **config), target={"kind": "ascendc", "arch": job["arch"]},
                                    runtime="emulator")
        except AscendCompileError as exc:
            trial.error = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            return dataclasses.asdict(trial)
        program = kernel.program
        if len(program.launches) != 1:
            trial.error = "autotune: kernels with several T.Kernel launches are not supported"
            return dataclasses.asdict(trial)
        grid = program.launch.block_dim
        groups = slots(job["arch"], program.launch.kernel_type)
        if job["blocks"] == "all":
            blocks, waves = grid, 1
        else:
            blocks, waves = min(grid, groups), math.ceil(grid / groups)
        supply = job.get("supply")
        inputs = list(supply(program)) if supply is not None else _zeros(program)
        spec = [[list(a.shape), str(a.dtype)] if hasattr(a, "shape") else [a] for a in inputs]
        miss = job.get("miss")
        miss_id = miss if miss is None or isinstance(miss, int | float) else getattr(miss, "__qualname__", repr(miss))
        key, fields = _key(kernel.kernel_source, job["arch"], blocks, waves, spec, miss_id)
        trial.block_dim, trial.blocks_emulated, trial.waves = grid, blocks, waves
        if job.get("cache", True):
            hit = _load(key, fields)
            if hit is not None:
                hit.update(config=config, cached=True, wall_s=time.perf_counter() - t0)
                return hit

        def run(n: int):
            return run_source(kernel.kernel_source, kernel.name, launch_args(program, inputs), block_dim=n,
                              arch=job["arch"], strict=False, checks=False, auto_sync=False)

        def launch_miss(rep) -> float | None:  # the launch's L2 miss fraction (e.g. from a first wave's run)
            return float(miss(rep, program, config)) if callable(miss) else miss

        if job["blocks"] == "all":
            rep = run(grid)
            f = launch_miss(rep)
            t = rep.timing_with(f) if f is not None else rep.timing
            cycles, block_cycles, busy = int(t["total_cycles"]), sum(int(v) for v in t["block_cycles"].values()), \
                t["busy_percent"]
            truncated = not t or t.get("truncated_trace")
        else:
            w = emulate_waves(run, grid, groups, launch_miss)
            t, cycles, block_cycles, busy, truncated = w.first, w.cycles, w.block_cycles, w.busy, w.truncated
            trial.blocks_emulated = w.blocks_emulated
        if truncated:
            trial.error = "the emulator's trace was cut short (raise TL_ASCEND_EMU_TRACE_CAP)"
            return dataclasses.asdict(trial)
        trial.cycles, trial.block_cycles = cycles, block_cycles
        trial.time_us = trial.cycles / (t["clock_ghz"] * 1e3)
        trial.busy = {k: round(float(v), 2) for k, v in busy.items()}
        trial.gm_bpc = float(t["gm_bytes_per_cycle_per_core"])
        out = dataclasses.asdict(trial)
        if job.get("cache", True):
            _store(key, fields, {k: v for k, v in out.items() if k not in ("config", "cached", "wall_s")})
    except Exception as exc:  # noqa: BLE001 - one failing configuration does not stop the search
        trial.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        out = dataclasses.asdict(trial)
    out["wall_s"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------- the tuner


class AutoTuner:
    """tilelang's AutoTuner shape: ``from_kernel(kernel, configs)``, ``set_compile_args``,
    ``set_profile_args``, ``run`` (a TuneResult, best first)."""

    def __init__(self, fn: Callable, configs) -> None:
        self.fn = fn
        self.configs = expand_configs(configs)
        self.arch = "dav-3510"
        self.fixed: dict = {}
        self.blocks = "first_wave"
        self.supply_prog: Callable | None = None
        self.miss_fraction: float | None = None

    @classmethod
    def from_kernel(cls, kernel: Callable, configs) -> AutoTuner:
        return cls(kernel, configs)

    def set_compile_args(self, target: Any = "ascendc", **_ignored: Any) -> AutoTuner:
        """``target``: an ascendc target (the arch to model). tilelang's other compile arguments
        (out_idx, execution_backend, pass_configs, ...) are accepted and ignored."""
        from .target import parse_target

        self.arch = parse_target(target).name
        return self

    def set_profile_args(self, fixed: dict | None = None, blocks: str = "first_wave",
                         supply_prog: Callable | None = None, miss_fraction: float | None = None,
                         **_ignored: Any) -> AutoTuner:
        """``fixed``: keyword arguments of the factory shared by every configuration (the problem);
        ``blocks``: "first_wave" or "all" (see the module doc); ``supply_prog(program)``: the
        kernel's arguments (default zeros); ``miss_fraction``: the L2 miss fraction to model with
        (default: the emulated blocks' own). tilelang's warmup/rep/timeout/ref_prog/... are accepted
        and ignored: nothing is timed, and correctness is the test suite's job."""
        if blocks not in BLOCKS:
            raise ValueError(f"autotune: blocks={blocks!r}: use one of {BLOCKS}")
        self.fixed = dict(fixed or {})
        self.blocks = blocks
        self.supply_prog = supply_prog
        self.miss_fraction = miss_fraction
        return self

    def run(self, workers: int | None = None, cache: bool = True, progress: bool = True,
            console=None) -> TuneResult:
        """Try every configuration; ``workers`` processes (default: min(configs, CPUs, 2)); ``cache``:
        reuse (and keep) results on disk; ``progress``: a rich progress bar on stderr."""
        jobs = [{"config": c, "fixed": self.fixed, "arch": self.arch, "blocks": self.blocks,
                 "supply": self.supply_prog, "miss": self.miss_fraction, "cache": cache} for c in self.configs]
        n = workers or min(len(jobs), os.cpu_count() or 1, 2)
        results: list = [None] * len(jobs)
        bar = _Progress(len(jobs), f"tuning {getattr(self.fn, '__name__', 'kernel')} on {self.arch}", progress,
                        console)
        with bar:
            if n <= 1:
                for i, job in enumerate(jobs):
                    results[i] = measure({**job, "factory": ("pickle", self.fn)})
                    bar.advance(results[i])
            else:
                import concurrent.futures
                import multiprocessing

                ref = factory_ref(self.fn)
                ctx = multiprocessing.get_context("spawn")  # TVM's threads do not survive a fork
                with concurrent.futures.ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
                    futs = {pool.submit(measure, {**job, "factory": ref}): i for i, job in enumerate(jobs)}
                    for fut in concurrent.futures.as_completed(futs):
                        i = futs[fut]
                        try:
                            results[i] = fut.result()
                        except concurrent.futures.process.BrokenProcessPool:
                            results[i] = dataclasses.asdict(Trial(config=jobs[i]["config"], error=(
                                "the worker process died (a script that starts worker processes must guard "
                                "its top-level code with `if __name__ == '__main__':`; or use workers=1)")))
                        except Exception as exc:  # noqa: BLE001 - a worker that died
                            results[i] = dataclasses.asdict(Trial(config=jobs[i]["config"],
                                                                  error=f"worker failed: {exc}"))
                        bar.advance(results[i])
        trials = [Trial(**r) for r in results]
        trials.sort(key=lambda t: (not t.ok, t.cycles if t.ok else 0))
        return TuneResult(trials=trials, arch=self.arch, fixed=self.fixed, _factory=self.fn)


class _Progress:
    """A rich progress bar (or nothing): one step per finished configuration."""

    def __init__(self, total: int, label: str, enabled: bool, console=None) -> None:
        self.p = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.p = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                              TextColumn("{task.fields[last]}"), console=console or Console(stderr=True),
                              transient=False)
            self.task = self.p.add_task(label, total=total, last="")

    def __enter__(self) -> _Progress:
        if self.p:
            self.p.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.p:
            self.p.__exit__(*exc)

    def advance(self, r: dict) -> None:
        if self.p:
            cfg = ", ".join(f"{k}={v}" for k, v in r["config"].items())
            what = f"{r['cycles']:,} cycles" if r.get("cycles") is not None else "skipped"
            self.p.update(self.task, advance=1, last=f"{cfg}: {what}" + (" (cached)" if r.get("cached") else ""))


# ---------------------------------------------------------------- the decorator


def autotune(configs, *, target: Any = "ascendc", blocks: str = "first_wave", workers: int | None = None,
             supply_prog: Callable | None = None, cache: bool = True, progress: bool = True,
             **_tilelang_args: Any) -> Callable:
    """Decorate a kernel factory (a function returning a PrimFunc): calling it with the problem's
    arguments tunes the configurations (keyword arguments it also takes) and returns the best one
    compiled (an AscendKernel). ``f.tune(...)`` returns the TuneResult instead; ``f.configs`` lists
    the configurations (``tl-ascend tune`` reads them). tilelang's profiling arguments are accepted
    and ignored."""
    space = expand_configs(configs)

    def decorate(fn: Callable) -> Callable:
        def tune(*args: Any, **kwargs: Any) -> TuneResult:
            fixed = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
            return (AutoTuner(call, space).set_compile_args(target=target)
                    .set_profile_args(fixed=dict(fixed), blocks=blocks, supply_prog=supply_prog)
                    .run(workers=workers, cache=cache, progress=progress))

        def call(*args: Any, **kwargs: Any):
            return tune(*args, **kwargs).kernel

        call.tune = tune
        call.configs = space
        call.__wrapped_factory__ = fn
        call.__name__ = getattr(fn, "__name__", "kernel")
        call.__doc__ = fn.__doc__
        call.__module__ = fn.__module__
        call.__qualname__ = getattr(fn, "__qualname__", call.__name__)
        call.__signature__ = inspect.signature(fn)
        return call

    return decorate


def tune(fn: Callable, configs: Iterable[dict] | dict, fixed: dict | None = None, target: Any = "ascendc",
         blocks: str = "first_wave", workers: int | None = None, cache: bool = True, progress: bool = True,
         supply_prog: Callable | None = None, miss_fraction: float | None = None) -> TuneResult:
    """One call: AutoTuner(fn, configs) with these arguments, run."""
    return (AutoTuner(fn, configs).set_compile_args(target=target)
            .set_profile_args(fixed=fixed, blocks=blocks, supply_prog=supply_prog, miss_fraction=miss_fraction)
            .run(workers=workers, cache=cache, progress=progress))


__all__ = ["AutoTuner", "Trial", "TuneResult", "autotune", "tune", "expand_configs", "measure", "BLOCKS"]
