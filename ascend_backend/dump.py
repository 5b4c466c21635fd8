"""``TL_ASCEND_DUMP=DIR``: every compile writes what went in, every stage's IR and its report to a
folder of its own under DIR, as Triton's ``TRITON_KERNEL_DUMP`` does (docs/usage.md, "Dumps").

    DIR/<kernel>_<hash>/
        tir.py                  the PrimFunc as tilelang built it (its TVM script)
        00_frontend.txt ...     the IR after each stage that ran, numbered in pipeline order
        kernel.cpp              the Ascend C (codegen)
        report.txt              arch, launches, compile time per stage, memory map, sync table
        error.txt               when the compile failed: the error, as the user saw it

``<kernel>`` is the kernel's name made like a C name (no '/' or '..' can leave DIR) and
``<hash>`` the SHA-256 of the TIR and the arch: one folder per distinct kernel, rewritten when the
same kernel is compiled again. A dump that cannot be written is a warning, never a failed compile.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from typing import Any

ENV = "TL_ASCEND_DUMP"


def dump_root() -> str | None:
    """The folder TL_ASCEND_DUMP names, or None when unset (or empty)."""
    value = os.environ.get(ENV, "").strip()
    return os.path.abspath(os.path.expanduser(value)) if value else None


def _script(func: Any) -> str:
    try:
        return func.script()
    except Exception as exc:  # noqa: BLE001 - best effort: say what could not be printed
        return f"# (could not print the PrimFunc: {type(exc).__name__}: {exc})\n"


def _report(program, timings: dict) -> str:
    import io

    from rich.console import Console

    from .reports import render_memory_map, render_sync_table, sync_table

    buf = io.StringIO()
    console = Console(file=buf, width=200, highlight=False, soft_wrap=False)
    kinds = ", ".join(lc.kernel_type.value for lc in program.launches)
    blocks = ", ".join(str(lc.block_dim) for lc in program.launches)
    buf.write(f"kernel {program.name}, arch {program.arch.name}, type {kinds}, block_dim {blocks}\n\n")
    buf.write("compile time per stage (ms):\n")
    for stage, sec in timings.items():
        buf.write(f"  {stage:<16}{sec * 1e3:10.2f}\n")
    buf.write(f"  {'total':<16}{sum(timings.values()) * 1e3:10.2f}\n\n")
    console.print(render_memory_map(program))
    if sync_table(program):
        console.print(render_sync_table(program))
    else:
        buf.write("(no SetFlag/WaitFlag pairs: no cross-pipe dependency in this kernel)\n")
    return buf.getvalue()


def write(func: Any, arch, name: str, stages: list[tuple[str, str]], program=None, source: str | None = None,
          timings: dict | None = None, error: BaseException | None = None) -> str | None:
    """Write one compile's dump under TL_ASCEND_DUMP; its folder, or None (unset, or not writable)."""
    root = dump_root()
    if root is None:
        return None
    from .cnames import sanitize

    tir = _script(func)
    digest = hashlib.sha256(f"{arch.name}\0{tir}".encode()).hexdigest()[:12]
    folder = os.path.join(root, f"{sanitize(name)}_{digest}")
    files: dict[str, str] = {"tir.py": tir}
    for n, (stage, text) in enumerate(stages):
        if stage == "codegen":
            continue
        files[f"{n:02d}_{stage}.txt"] = text if text.endswith("\n") else text + "\n"
    if source is not None:
        files["kernel.cpp"] = source
    if program is not None:
        try:
            files["report.txt"] = _report(program, timings or {})
        except Exception as exc:  # noqa: BLE001 - a report that cannot be made is said, not raised
            files["report.txt"] = f"(could not make the report: {type(exc).__name__}: {exc})\n"
    if error is not None:
        files["error.txt"] = f"{type(error).__name__}: {error}\n"
    try:
        os.makedirs(folder, exist_ok=True)
        for old in os.listdir(folder):  # a previous compile of this kernel: only this one's files remain
            if old.endswith(".txt") and old not in files:
                os.remove(os.path.join(folder, old))
        for fname, text in files.items():
            with open(os.path.join(folder, fname), "w") as fh:
                fh.write(text)
    except OSError as exc:
        warnings.warn(f"{ENV}={root}: cannot write the dump of kernel '{name}' ({exc.strerror or exc}); "
                      "the compile itself went on", stacklevel=3)
        return None
    return folder
