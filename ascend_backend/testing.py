"""Helpers to run a kernel against a torch reference (used by the CLI, examples and tests)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Case:
    """A runnable example: a PrimFunc, its arguments, which are outputs, and the reference."""

    func: Any
    inputs: list
    outputs: list
    reference: Callable[..., list]
    atol: float = 1e-2
    rtol: float = 1e-2
    name: str = ""
    extra: dict = field(default_factory=dict)


def run_case(case: Case, arch: str = "dav-3510", runtime: str = "emulator", strict: bool = True):
    """Compile and run ``case``; return (kernel, report, max abs error per output). Raises on mismatch."""
    import torch

    from .kernel import compile as compile_kernel

    kernel = compile_kernel(case.func, target={"kind": "ascendc", "arch": arch}, runtime=runtime, strict=strict)
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in case.inputs]
    kernel(*args)
    expected = case.reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in case.inputs])
    errors = []
    for idx, exp in zip(case.outputs, expected, strict=True):
        got = args[idx]
        err = (got.float() - exp.float()).abs().max().item() if got.numel() else 0.0
        errors.append(err)
        torch.testing.assert_close(got.float(), exp.float(), atol=case.atol, rtol=case.rtol)
    return kernel, kernel.last_report, errors
