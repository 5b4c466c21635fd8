"""Helpers for the tl-ascend check tests (imported as check_helpers): sources with ``// @tag`` markers on the lines a
diagnostic must point at."""

from __future__ import annotations

import textwrap

from ascend_backend.check import check_source


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def line_of(text: str, tag: str) -> int:
    for i, ln in enumerate(text.splitlines(), 1):
        if f"// @{tag}" in ln:
            return i
    raise AssertionError(f"no marker @{tag}")


def found(text: str, arch: str = "dav-3510", auto_sync: bool = True, **kw) -> set:
    """{(check, line, severity)} of the diagnostics of ``text``."""
    return {(d.check, d.line, d.severity) for d in check_source(text, arch=arch, auto_sync=auto_sync, **kw)}


def checks(text: str, **kw) -> set:
    return {c for c, _, _ in found(text, **kw)}


def drop(text: str, *tags: str) -> str:
    """``text`` without the lines marked ``// @tag``."""
    return "\n".join(ln for ln in text.splitlines() if not any(f"// @{t}" in ln for t in tags)) + "\n"


def insert_before(text: str, tag: str, code: str) -> str:
    """``code`` inserted (with the same indentation) before the line marked ``// @tag``."""
    out = []
    for ln in text.splitlines():
        if f"// @{tag}" in ln:
            out.append(ln[:len(ln) - len(ln.lstrip())] + code)
        out.append(ln)
    return "\n".join(out) + "\n"
