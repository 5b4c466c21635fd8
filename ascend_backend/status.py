"""A status line on stderr while something slow happens once (the emulator's runtime and
precompiled headers: 30-60 s on the first run, with nothing else to show for it).

On a terminal it is a rich spinner with the elapsed time, erased when done; elsewhere (a pipe, a
CI log) one line when it starts and one when it ends. ``TL_ASCEND_QUIET=1`` turns it off.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

PREFIX = "tilelang-ascendc"


def enabled() -> bool:
    return os.environ.get("TL_ASCEND_QUIET", "") in ("", "0")


class _Elapsed:
    """A rich renderable: the message and the seconds since it started (rendered on each refresh)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.t0 = time.monotonic()

    def __rich__(self) -> str:
        return f"{self.text} ({time.monotonic() - self.t0:.0f} s)"


@contextmanager
def build_status(what: str, note: str = "", stream: IO[str] | None = None) -> Iterator[None]:
    """Say that ``what`` is being built (``note``: why, how long) until the block ends."""
    stream = stream if stream is not None else sys.stderr
    if not enabled():
        yield
        return
    t0 = time.monotonic()
    tty = bool(getattr(stream, "isatty", lambda: False)())
    if tty:
        from rich.console import Console

        console = Console(file=stream, force_terminal=True, highlight=False)
        with console.status(_Elapsed(f"{PREFIX}: building {what}" + (f" ({note})" if note else ""))):
            yield
        stream.write(f"{PREFIX}: built {what} in {time.monotonic() - t0:.1f} s\n")
        return
    stream.write(f"{PREFIX}: building {what}" + (f" ({note})" if note else "") + " ...\n")
    stream.flush()
    ok = False
    try:
        yield
        ok = True
    finally:
        stream.write(f"{PREFIX}: {'built' if ok else 'failed to build'} {what} "
                     f"in {time.monotonic() - t0:.1f} s\n")
        stream.flush()
