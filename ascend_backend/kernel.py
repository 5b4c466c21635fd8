"""Compiled kernels: ``compile``, ``lower``, ``jit`` and the callable :class:`AscendKernel`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import AscendCompileError, RuntimeUnavailableError
from .ir import Program
from .pipeline import CompileResult, compile_kernel
from .target import parse_target

RUNTIMES = ("auto", "emulator", "npu")


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
        n = len(self.program.params)
        self.out_idx = sorted(i % n for i in (out_idx or []))
        self.last_report = None
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
    def block_dim(self) -> int:
        """Blocks of the (first) launch; ``block_dims`` has one per launch."""
        return self.program.launches[0].block_dim

    @property
    def block_dims(self) -> list[int]:
        return [lc.block_dim for lc in self.program.launches]

    def get_kernel_source(self) -> str:
        return self.result.source

    def memory_map(self) -> list[dict]:
        from .reports import memory_map

        return memory_map(self.program)

    def sync_table(self) -> list[dict]:
        from .reports import sync_table

        return sync_table(self.program)

    # -- running
    def __call__(self, *args: Any) -> Any:
        import torch

        params = self.program.params
        n_in = len(params) - len(self.out_idx)
        if len(args) not in (len(params), n_in):
            raise TypeError(f"kernel '{self.name}' takes {len(params)} arguments "
                            f"({', '.join(p.name for p in params)})"
                            + (f", or {n_in} without its outputs {self.out_idx}" if self.out_idx else "")
                            + f"; got {len(args)}")
        full: list = []
        it = iter(args)
        allocate = len(args) == n_in and bool(self.out_idx)
        outputs = []
        for i, p in enumerate(params):
            if allocate and i in self.out_idx:
                buf = self.program.buffer(p.buffer)
                t = torch.empty(buf.shape, dtype=buf.dtype.torch_dtype())
                outputs.append(t)
                full.append(t)
            else:
                full.append(next(it))
        self._check_args(full)
        full = launch_args(self.program, full)
        if self.runtime == "npu":
            self._run_npu(full)
        else:
            from .emulator import run_source

            # The launches of the PrimFunc run one after the other, as on the device's stream.
            # Generated code carries every sync it needs and is built with --cce-auto-sync=off on
            # the NPU (npu.py), so it is checked without bisheng's automatic syncs.
            self.reports = []
            for n, lc in enumerate(self.program.launches):
                self.reports.append(run_source(self.kernel_source, self.program.entry_name(n), full, lc.block_dim,
                                               arch=self.arch.name, strict=self.strict, auto_sync=False))
            self.last_report = self.reports[-1]
        if allocate:
            return outputs[0] if len(outputs) == 1 else outputs
        return None

    def _check_args(self, args: list) -> None:
        import torch

        for p, a in zip(self.program.params, args, strict=True):
            if not p.is_tensor:
                if not isinstance(a, int | float):
                    raise TypeError(f"argument '{p.name}' of kernel '{self.name}' is a scalar ({p.dtype}); "
                                    f"got {type(a).__name__}")
                continue
            buf = self.program.buffer(p.buffer)
            if not isinstance(a, torch.Tensor):
                raise TypeError(f"argument '{p.name}' of kernel '{self.name}' must be a torch tensor of shape "
                                f"{list(buf.shape)} and dtype {buf.dtype}; got {type(a).__name__}")
            if tuple(a.shape) != tuple(buf.shape) or a.dtype != buf.dtype.torch_dtype():
                raise TypeError(f"argument '{p.name}' of kernel '{self.name}' must have shape {list(buf.shape)} and "
                                f"dtype {buf.dtype}; got shape {list(a.shape)} and dtype {a.dtype}")
            if not a.is_contiguous():
                raise TypeError(f"argument '{p.name}' must be contiguous (call .contiguous() first)")
            if self.runtime != "npu" and a.device.type != "cpu":
                raise TypeError(f"argument '{p.name}' is on {a.device}; the emulator runs on CPU tensors")

    def _run_npu(self, args: list) -> None:
        from .npu import NpuLauncher

        if self._npu is None:
            self._npu = NpuLauncher(self.kernel_source, self.program)
        self._npu(args)

    def __repr__(self) -> str:
        types = ", ".join(lc.kernel_type.value for lc in self.program.launches)
        return (f"<AscendKernel {self.name} arch={self.arch.name} type={types} "
                f"block_dim={self.block_dims if len(self.block_dims) > 1 else self.block_dim} "
                f"runtime={self.runtime}>")


def launch_args(program: Program, args: list) -> list:
    """The kernel entry's arguments: the PrimFunc's, then (when tiles cross between the Cube and the
    Vector cores through GM) a zeroed workspace of ``program.workspace_bytes``."""
    import torch

    if not program.workspace_bytes:
        return list(args)
    device = next((a.device for a in args if isinstance(a, torch.Tensor)), "cpu")
    return [*args, torch.zeros(program.workspace_bytes, dtype=torch.uint8, device=device)]


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
