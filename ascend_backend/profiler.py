"""``kernel.get_profiler()``: TileLang's profiler, for AscendKernels.

TileLang's examples check and time a kernel with

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(ref_program, rtol=0.01, atol=0.01)
    latency = profiler.do_bench()            # the kernel, in ms
    latency = profiler.do_bench(ref_program)  # any other function, in ms

:class:`Profiler` has those methods with tilelang 0.1.15's signatures (``tilelang.profiler.Profiler``),
and the same meaning, with two differences the docs state (docs/jit.md, "Profiling"):

* ``do_bench()`` of the kernel on the emulator returns the **modelled** time of one call (the timing
  model's cycles at its assumed clock: docs/timing-model.md), not a measurement: it runs the kernel
  once, as warm-up and repetitions would only repeat the same figure. On an NPU it is measured (with
  tilelang's own ``do_bench``). The value is a :class:`BenchTime`, a float in milliseconds that says
  which (``.kind``, its repr). Any other function is timed on the CPU's wall clock (tilelang's
  ``do_bench`` with ``backend="wall"``).
* A kernel without ``out_idx`` writes its outputs in place: the profiler then takes as outputs the
  tensors the kernel writes (``Profiler.result_idx``), allocates them (zeroed) for each call, and gives
  the reference the other arguments, as TileLang gives a reference a kernel's inputs.

Inputs come from tilelang's own tensor supply (``tilelang.utils.tensor.get_tensor_supply``), so a
``TensorSupplyType`` draws what it draws for TileLang.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

MODELLED = "modelled"
MEASURED = "measured"


class BenchTime(float):
    """A time in milliseconds (a float, as tilelang's ``do_bench`` returns) that says what it is:
    ``kind`` is "modelled" (the emulator's timing model) or "measured"; ``what`` says by what."""

    kind: str
    what: str
    cycles: int | None

    def __new__(cls, ms: float, kind: str, what: str, cycles: int | None = None) -> BenchTime:
        obj = super().__new__(cls, ms)
        obj.kind, obj.what, obj.cycles = kind, what, cycles
        return obj

    def __repr__(self) -> str:
        return f"BenchTime({float(self)!r} ms, {self.kind}: {self.what})"

    def __str__(self) -> str:  # a number, as tilelang's: examples print f"{latency} ms"
        return float.__repr__(self)


def _supply_type(kind: Any):
    from tilelang.utils.tensor import TensorSupplyType

    if isinstance(kind, TensorSupplyType):
        return kind
    if isinstance(kind, str) and kind.capitalize() in TensorSupplyType.__members__:
        return TensorSupplyType[kind.capitalize()]
    names = ", ".join(TensorSupplyType.__members__)
    raise ValueError(f"tensor_supply_type {kind!r} is not a tilelang.TensorSupplyType ({names})")


def written_params(program) -> list[int]:
    """Indices of the tensor parameters some statement of the kernel writes (its outputs)."""
    from .ir.program import walk

    gm = {p.buffer: i for i, p in enumerate(program.params) if p.is_tensor}
    out: set[int] = set()
    for _n, _core, k in program.kernels():
        for s in walk(k.body):
            for name in getattr(s, "writes", ()) or ():
                name = getattr(name, "buffer", name)
                if name in gm:
                    out.add(gm[name])
    return sorted(out)


def make_inputs(program, supply_type: Any = "auto", dims: dict[str, int] | None = None,
                scalars: dict[str, Any] | None = None, skip: Sequence[int] = ()) -> list:
    """One argument per parameter of ``program`` (None at the indices in ``skip``): tensors of the
    parameter's shape and dtype drawn by tilelang's tensor supply, scalars from ``scalars``.
    ``dims`` gives the symbolic dimensions; a missing one or a missing scalar is a ValueError
    saying how to give it."""
    import tvm
    from tilelang.engine.param import KernelParam
    from tilelang.utils.tensor import get_tensor_supply

    from .ir.nodes import static_int
    from .shapes import evaluate

    supply = get_tensor_supply(_supply_type(supply_type))
    dims = dict(dims or {})
    scalars = dict(scalars or {})
    env = {v.var: dims[v.name] for v in program.shape_vars if v.name in dims}
    out: list = []
    for i, (p, buf) in enumerate(program.param_buffers()):
        if i in skip:
            out.append(None)
            continue
        if buf is None:
            if p.name in scalars:
                out.append(scalars[p.name])
                continue
            sv = next((v for v in program.shape_vars if v.param and v.name == p.name), None)
            if sv is not None and sv.name in dims:
                out.append(dims[sv.name])
                continue
            raise ValueError(f"kernel '{program.name}' takes the scalar '{p.name}' ({p.dtype.value}): give its value "
                             "(input_tensors=[...] to the profiler; --arg NAME=VALUE to tl-ascend run)")
        shape = []
        for d, s in enumerate(buf.shape):
            n = static_int(s)
            if n is None:
                missing = [v.name for v in program.shape_vars if v.name not in dims and v.name in str(s)]
                if missing:
                    raise ValueError(
                        f"kernel '{program.name}': dimension {d} of '{p.name}' is {s}, and no value was given for "
                        f"{', '.join(missing)}: pass dynamic_symbolic_constraints={{'{missing[0]}': ...}} (do_bench) "
                        f"or input_tensors=[...]; to tl-ascend run, --arg {missing[0]}=VALUE")
                n = evaluate(s, env)
            shape.append(int(n))
        out.append(supply(KernelParam(tvm.DataType(buf.dtype.value), shape)))
    return out


class Profiler:
    """Checks and times an :class:`~ascend_backend.kernel.AscendKernel` as tilelang's Profiler does."""

    def __init__(self, kernel, tensor_supply_type: Any = "auto") -> None:
        self.kernel = kernel
        self.supply_type = _supply_type(tensor_supply_type)
        self.params = kernel.params
        # TileLang's result_idx is the kernel's out_idx; a kernel writing in place: what it writes.
        self.result_idx: list[int] = list(kernel.out_idx) or written_params(kernel.program)

    # ---- inputs and calls ------------------------------------------------------------------
    def _get_inputs(self, with_output: bool = False, dynamic_symbolic_constraints: dict[str, int] | None = None):
        """The inputs (the parameters that are not outputs), drawn for one call."""
        args = make_inputs(self.kernel.program, self.supply_type, dims=dynamic_symbolic_constraints,
                           skip=() if with_output else self.result_idx)
        return [a for i, a in enumerate(args) if with_output or i not in self.result_idx]

    @property
    def func(self) -> Callable[..., Any]:
        """The kernel as a function of its inputs returning its outputs (TileLang's adapter)."""
        return self._call

    def __call__(self, *args: Any, **kwds: Any) -> Any:
        return self._call(*args, **kwds)

    def _call(self, *ins: Any) -> Any:
        k = self.kernel
        if k.out_idx:
            return k(*ins)
        import torch

        from .shapes import bind, output_shape

        # In-place outputs: allocate them from the inputs' shapes (zeroed), run, return them.
        params = k.program.params
        inputs_only = k.program.replace(params=[p for i, p in enumerate(params) if i not in self.result_idx])
        env = bind(inputs_only, list(ins), k.runtime, complete=False)
        device = next((a.device for a in ins if isinstance(a, torch.Tensor)), "cpu")
        it = iter(ins)
        full, outs = [], []
        for i, p in enumerate(params):
            if i in self.result_idx:
                buf = k.program.buffer(p.buffer)
                t = torch.zeros(output_shape(k.program, p, env), dtype=buf.dtype.torch_dtype(), device=device)
                outs.append(t)
                full.append(t)
            else:
                full.append(next(it))
        k(*full)
        return outs[0] if len(outs) == 1 else outs

    def run_once(self, func: Callable | None = None) -> Any:
        ins = self._get_inputs()
        return (func or self._call)(*ins)

    # ---- checking ------------------------------------------------------------------------------
    def assert_allclose(self, reference_program: Callable, input_tensors: list | None = None, atol: float = 1e-2,
                        rtol: float = 1e-2, max_mismatched_ratio: float = 0.01) -> None:
        """The kernel's outputs against ``reference_program(*inputs)``'s, as tilelang compares them
        (``tilelang.utils.tensor.torch_assert_close``: at most ``max_mismatched_ratio`` of the elements
        outside ``atol + rtol * |ref|``); an AssertionError saying how many and where otherwise."""
        from tilelang.utils.tensor import is_float8_dtype, torch_assert_close

        ins = self._get_inputs() if input_tensors is None else list(input_tensors)
        ref_outs = _as_list(reference_program(*ins))
        lib_outs = _as_list(self._call(*ins))
        if len(lib_outs) != len(ref_outs):
            raise AssertionError(f"the reference returned {len(ref_outs)} tensors, and kernel '{self.kernel.name}' "
                                 f"has {len(lib_outs)} outputs (parameters {self.result_idx}): return one tensor per "
                                 "output, in parameter order")
        for lhs, rhs in zip(lib_outs, ref_outs, strict=True):
            if lhs is None or rhs is None:  # as tilelang: a None reference output is not compared
                continue
            torch_assert_close(lhs.float() if is_float8_dtype(lhs.dtype) else lhs,
                               rhs.float() if is_float8_dtype(rhs.dtype) else rhs, rtol=rtol, atol=atol,
                               max_mismatched_ratio=max_mismatched_ratio, base_name="tilelang-ascendc",
                               ref_name="ref")
        report = self.kernel.last_report
        if report is not None and not report.ok:
            raise AssertionError(f"kernel '{self.kernel.name}' matched the reference, but the emulator reported "
                                 f"problems:\n{report.summary()}")

    def manual_assert_close(self, reference_program: Callable, input_tensors: list | None = None,
                            manual_check_prog: Callable | None = None) -> None:
        ins = self._get_inputs() if input_tensors is None else list(input_tensors)
        ref_outs = _as_list(reference_program(*ins))
        lib_outs = _as_list(self._call(*ins))
        if manual_check_prog is None:
            raise ValueError("manual_assert_close needs manual_check_prog(lib_outs, ref_outs)")
        manual_check_prog(lib_outs, ref_outs)

    def assert_consistent(self, repeat: int = 10) -> None:
        """The kernel gives the same outputs on the same inputs ``repeat`` times."""
        import torch

        ins = self._get_inputs()
        first = _as_list(self._call(*ins))
        for _ in range(repeat):
            for lhs, rhs in zip(_as_list(self._call(*ins)), first, strict=True):
                if not torch.equal(lhs, rhs):
                    raise AssertionError(f"kernel '{self.kernel.name}' gave different outputs on the same inputs")

    # ---- timing --------------------------------------------------------------------------------
    def do_bench(self, func: Callable | None = None, warmup: int = 25, rep: int = 100, n_warmup: int = 0,
                 n_repeat: int = 0, input_tensors: list | None = None, backend: str = "event",
                 quantiles: list[float] | None = None, return_mode: str = "mean",
                 dynamic_symbolic_constraints: dict[str, int] | None = None, device: Any = None,
                 early_stop_baseline: float | None = None) -> BenchTime:
        """Milliseconds per call of the kernel (``func`` None, the kernel, or ``profiler.func``), or of
        ``func``. The kernel on the emulator: its MODELLED time (one run; ``warmup``, ``rep``,
        ``backend`` and the other timing options do not apply). On an NPU, and for any other function:
        measured, by tilelang's ``do_bench`` (an NPU's events; the CPU's wall clock for a function)."""
        if input_tensors is not None:
            ins = list(input_tensors)
        else:
            ins = self._get_inputs(dynamic_symbolic_constraints=dynamic_symbolic_constraints)
        is_kernel = func is None or func is self.kernel or func == self._call
        if is_kernel and self.kernel.runtime != "npu":
            return self._modelled(ins)
        import functools

        from tilelang.profiler.bench import do_bench

        target = self._call if is_kernel else func
        on_npu = is_kernel and self.kernel.runtime == "npu"
        ms = do_bench(functools.partial(target, *ins), warmup=warmup, rep=rep, _n_warmup=n_warmup,
                      _n_repeat=n_repeat, quantiles=quantiles, backend=backend if on_npu else "wall",
                      return_mode=return_mode, device=device if on_npu else "cpu",
                      early_stop_baseline=early_stop_baseline)
        if isinstance(ms, list):  # quantiles
            return ms  # type: ignore[return-value]
        what = f"the NPU, backend={backend}" if on_npu else "the CPU's wall clock"
        return BenchTime(float(ms), MEASURED, what)

    def _modelled(self, ins: list) -> BenchTime:
        self._call(*ins)
        reports = list(self.kernel.reports)
        cycles, us = 0, 0.0
        for r in reports:
            t = r.timing
            if not t:
                raise RuntimeError(f"kernel '{self.kernel.name}': the emulator recorded no timing for this run")
            cycles += int(t["total_cycles"])
            us += float(t["time_us"])
        clock = reports[-1].timing["clock_ghz"] if reports else 0
        warnings.warn(f"do_bench() of kernel '{self.kernel.name}' on the emulator: {us / 1e3:.6g} ms is MODELLED "
                      f"({cycles:,} cycles at an assumed {clock} GHz; docs/timing-model.md), not measured",
                      stacklevel=3)
        what = (f"the emulator's timing model, {cycles:,} cycles at an assumed {clock} GHz"
                + (f", {len(reports)} launches" if len(reports) > 1 else ""))
        return BenchTime(us / 1e3, MODELLED, what, cycles)


def _as_list(x: Any) -> list:
    if x is None:
        return []
    if isinstance(x, list | tuple):
        return list(x)
    return [x]
