"""Shared helpers of the emulator tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ascend_backend.emulator import EmulatorError, Report, run_source  # noqa: E402

HEADER = '#include "kernel_operator.h"\nusing namespace AscendC;\n'


def line_of(src: str, marker: str) -> int:
    """1-based line of the first line of `src` containing `marker`."""
    for i, line in enumerate(src.splitlines(), 1):
        if marker in line:
            return i
    raise AssertionError(f"marker {marker!r} not in source")


def run(src: str, args: list[Any], block_dim: int = 1, kernel: str | None = None, **kw: Any) -> Report:
    """run_source in non-strict mode; returns the report also when the run raised."""
    kw.setdefault("strict", False)
    try:
        return run_source(src, kernel, args, block_dim, **kw)
    except EmulatorError as e:
        if e.report is None:
            raise
        return e.report


def kinds(items: list[dict[str, Any]]) -> list[str]:
    return [x["kind"] for x in items]
