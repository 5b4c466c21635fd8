"""Compiled kernels: ``compile``, ``lower``, ``jit`` and the callable :class:`AscendKernel`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import AscendCompileError, RuntimeUnavailableError
from .ir import Program
from .pipeline import CompileResult, compile_kernel
from .target import parse_target

RUNTIMES = ("auto", "emulator", "npu")
# The emulator's own cap on blocks per launch (emulator/src/emu_runtime.cpp, parse_cfg): a resource
# limit of the emulator, which allocates every core's memories at launch; not a hardware limit.
EMULATOR_MAX_BLOCKS = 4096


class AscendKernel:
    """A compiled kernel: its Ascend C, its reports, and a call that runs it.

    ``kernel(a, b, c)`` writes the output parameters in place (as tilelang's compiled kernels
    do); with ``out_idx`` the outputs are allocated and returned instead.
    """

    def __init__(self, result: CompileResult, runtime: str, out_idx: Sequence[int] | None = None,
                 strict: bool = True) -> None:
        self.result = result
        self.program: Program = result.program
        self.arch = result.program.arch
        self.runtime = runtime
        self.strict = strict
        self.out_idx = check_out_idx(self.program, out_idx)
        self.last_report = None
        self.last_block_dims: list = []  # each launch's block count in the last call
        self.reports: list = []  # one emulator report per launch of the last call
        self._npu = None

    # -- what was generated
    @property
    def kernel_source(self) -> str:
        return self.result.source

    source = kernel_source

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def params(self) -> list:
        return self.program.params

    @property
    def block_dim(self):
        """Blocks of the (first) launch; ``block_dims`` has one per launch. A grid sized at call time
        gives a PrimExpr of the arguments here (``last_block_dims`` holds the last call's counts)."""
        return self.program.launches[0].block_dim

    @property
    def block_dims(self) -> list:
        return [lc.block_dim for lc in self.program.launches]

    def get_kernel_source(self) -> str:
        return self.result.source

    def memory_map(self) -> list[dict]:
        from .reports import memory_map

        return memory_map(self.program)

    def sync_table(self) -> list[dict]:
        from .reports import sync_table

        return sync_table(self.program)

    def get_profiler(self, tensor_supply_type: Any = None):
        """TileLang's ``kernel.get_profiler()``: ``assert_allclose(ref_program, rtol=, atol=)`` and
        ``do_bench()`` (the modelled time on the emulator, measured on an NPU); ascend_backend/profiler.py.
        ``tensor_supply_type`` is a ``tilelang.TensorSupplyType`` (default ``Auto``, as tilelang)."""
        from .profiler import Profiler

        return Profiler(self, "auto" if tensor_supply_type is None else tensor_supply_type)

    # -- running
    def __call__(self, *args: Any) -> Any:
        import torch

        from .shapes import bind, block_dims, output_shape, run_bounds_checks

        params = self.program.params
        n_in = len(params) - len(self.out_idx)
        if len(args) not in (len(params), n_in):
            raise TypeError(f"kernel '{self.name}' takes {len(params)} arguments "
                            f"({', '.join(p.name for p in params)})"
                            + (f", or {n_in} without its outputs {self.out_idx}" if self.out_idx else "")
                            + f"; got {len(args)}")
        allocate = len(args) == n_in and bool(self.out_idx)
        full: list = []
        it = iter(args)
        for i, _p in enumerate(params):
            full.append(None if allocate and i in self.out_idx else next(it))
        outputs = []
        if allocate:
            # The outputs' symbolic dimensions come from the inputs: bind those first.
            inputs_only = self.program.replace(params=[p for i, p in enumerate(params) if i not in self.out_idx])
            env = bind(inputs_only, [a for i, a in enumerate(full) if i not in self.out_idx], self.runtime,
                       complete=False)
            device = next((a.device for a in args if isinstance(a, torch.Tensor)), "cpu")
            for i in self.out_idx:
                buf = self.program.buffer(params[i].buffer)
                t = torch.empty(output_shape(self.program, params[i], env), dtype=buf.dtype.torch_dtype(),
                                device=device)
                outputs.append(t)
                full[i] = t
        env = bind(self.program, full, self.runtime)
        run_bounds_checks(self.program, env)
        dims = block_dims(self.program, env)
        self.last_block_dims = dims
        if self.runtime != "npu" and max(dims) > EMULATOR_MAX_BLOCKS:
            raise ValueError(f"kernel '{self.name}' would run {max(dims)} blocks; the emulator runs at most "
                             f"{EMULATOR_MAX_BLOCKS} per launch (it allocates every core's memories up front; the "
                             "hardware takes up to 65535): use fewer, larger blocks to run it here")
        entry = launch_args(self.program, full, env)
        if self.runtime == "npu":
            self._run_npu(entry, dims)
        else:
            from .emulator import run_source

            # The launches of the PrimFunc run one after the other, as on the device's stream.
            # Generated code carries every sync it needs and is built with --cce-auto-sync=off on
            # the NPU (npu.py), so it is checked without bisheng's automatic syncs.
            from .emulator.report import Report

            self.reports = []
            for n, lc in enumerate(self.program.launches):
                if dims[n] == 0:  # a grid of no block (an extent 0 at this call): nothing runs, nothing is written
                    self.reports.append(Report.not_launched(self.arch.name, lc.kernel_type.value))
                    continue
                # Each entry's own type: the launches of one PrimFunc may differ (AIV only, then mixed).
                self.reports.append(run_source(self.kernel_source, self.program.entry_name(n), entry, dims[n],
                                               arch=self.arch.name, strict=self.strict, auto_sync=False,
                                               kernel_type=lc.kernel_type.value))
            self.last_report = self.reports[-1]
        if allocate:
            return outputs[0] if len(outputs) == 1 else outputs
        return None

    def _run_npu(self, args: list, dims: list) -> None:
        from .npu import NpuLauncher

        if self._npu is None:
            self._npu = NpuLauncher(self.kernel_source, self.program)
        self._npu(args, dims)

    def __repr__(self) -> str:
        types = ", ".join(lc.kernel_type.value for lc in self.program.launches)
        return (f"<AscendKernel {self.name} arch={self.arch.name} type={types} "
                f"block_dim={self.block_dims if len(self.block_dims) > 1 else self.block_dim} "
                f"runtime={self.runtime}>")


def check_out_idx(program: Program, out_idx: Sequence[int] | None) -> list[int]:
    """The output parameters ``out_idx`` names (negative indices count from the end), each a tensor
    named once; anything else is a ValueError."""
    params = program.params
    n = len(params)
    names = ", ".join(f"{i}: {p.name}" for i, p in enumerate(params))
    out: list[int] = []
    for i in out_idx or []:
        if isinstance(i, bool) or not isinstance(i, int):
            raise ValueError(f"out_idx must hold parameter indices (ints); got {i!r}")
        if not -n <= i < n:
            raise ValueError(f"out_idx {i} is out of range for kernel '{program.name}', which has {n} parameters "
                             f"({names}): use 0..{n - 1} (or -{n}..-1 from the end)")
        j = i % n
        if not params[j].is_tensor:
            raise ValueError(f"out_idx {i} names '{params[j].name}' of kernel '{program.name}', a scalar; outputs "
                             "are tensors")
        if j in out:
            raise ValueError(f"out_idx names parameter {j} ('{params[j].name}') twice")
        out.append(j)
    return sorted(out)


def launch_args(program: Program, args: list, env: dict | None = None) -> list:
    """The kernel entry's arguments: the PrimFunc's, then the symbolic dimensions it does not take
    itself (their values from the tensors), then (when tiles cross between the Cube and the Vector
    cores through GM) a zeroed workspace of ``program.workspace_bytes``. ``env`` are the values
    ``shapes.bind`` gave (worked out here when None)."""
    import torch

    from .shapes import bind, workspace_bytes

    if env is None and (program.shape_vars or not isinstance(program.workspace_bytes, int)):
        env = bind(program, args)
    out = list(args) + [env[v.var] for v in program.entry_shape_vars()]
    if not program.has_workspace:
        return out
    device = next((a.device for a in args if isinstance(a, torch.Tensor)), "cpu")
    return [*out, torch.zeros(workspace_bytes(program, env or {}), dtype=torch.uint8, device=device)]


def resolve_runtime(runtime: str) -> str:
    """'auto' -> 'npu' when torch_npu and bisheng work here, else 'emulator'."""
    if runtime not in RUNTIMES:
        raise AscendCompileError(f"unknown runtime {runtime!r}", hint=f"use one of {', '.join(RUNTIMES)}")
    from .npu import npu_unavailable_reason

    if runtime == "emulator":
        return runtime
    reason = npu_unavailable_reason()
    if runtime == "npu":
        if reason:
            raise RuntimeUnavailableError(
                f"runtime='npu' cannot run here: {reason}",
                hint="use runtime='emulator' (or 'auto') on a machine without an Ascend NPU",
            )
        return "npu"
    return "emulator" if reason else "npu"


def compile(func, target: Any = "ascendc", runtime: str = "auto", out_idx: Sequence[int] | int | None = None,  # noqa: A001
            strict: bool = True, dump: set | None = None) -> AscendKernel:
    """Compile a TileLang PrimFunc for Ascend and return a callable kernel."""
    arch = parse_target(target)
    rt = resolve_runtime(runtime)
    if isinstance(out_idx, int):
        out_idx = [out_idx]
    result = compile_kernel(func, arch, dump=dump)
    return AscendKernel(result, rt, out_idx=out_idx, strict=strict)


def lower(func, target: Any = "ascendc", dump: set | None = None) -> CompileResult:
    """Run the compiler only: the kernel IR, its Ascend C and the requested stage dumps."""
    return compile_kernel(func, parse_target(target), dump=dump)
