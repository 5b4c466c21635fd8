"""A small FileCheck: match CHECK lines in order against generated code.

Each pattern is a substring that must appear on a line after the previous match;
``CHECK-NEXT:`` must be on the very next line; ``CHECK-NOT:`` must not appear between the
previous match and the next one; ``CHECK-SAME:`` on the same line as the previous match.
``{{.*}}`` inside a pattern stands for any text on the line (the parts around it match in order).
"""

from __future__ import annotations


class CheckFailure(AssertionError):
    pass


def _has(line: str, pat: str) -> bool:
    """``pat`` occurs in ``line``; its ``{{.*}}`` parts skip any text."""
    at = 0
    for part in pat.split("{{.*}}"):
        at = line.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


def filecheck(text: str, checks: str) -> None:
    lines = text.splitlines()
    pos = -1  # index of the last matched line
    nots: list[str] = []
    for raw in checks.strip().splitlines():
        raw = raw.strip()
        if not raw or raw.startswith("#"):
            continue
        kind, _, pat = raw.partition(":")
        pat = pat.strip()
        if kind == "CHECK-NOT":
            nots.append(pat)
            continue
        if kind == "CHECK-SAME":
            if pos < 0 or not _has(lines[pos], pat):
                raise CheckFailure(f"CHECK-SAME: {pat!r} not on line {pos + 1}: {lines[pos] if pos >= 0 else ''}")
            continue
        start = pos + 1
        if kind == "CHECK-NEXT":
            found = start if start < len(lines) and _has(lines[start], pat) else -1
        elif kind == "CHECK":
            found = next((i for i in range(start, len(lines)) if _has(lines[i], pat)), -1)
        else:
            raise ValueError(f"unknown directive {kind!r}")
        if found < 0:
            context = "\n".join(lines[max(0, start - 2): start + 8])
            raise CheckFailure(f"{kind}: {pat!r} not found after line {pos + 1}; next lines:\n{context}")
        for n in nots:
            for i in range(start, found):
                if _has(lines[i], n):
                    raise CheckFailure(f"CHECK-NOT: {n!r} found on line {i + 1}: {lines[i]}")
        nots = []
        pos = found
    for n in nots:
        for i in range(pos + 1, len(lines)):
            if _has(lines[i], n):
                raise CheckFailure(f"CHECK-NOT: {n!r} found on line {i + 1}: {lines[i]}")
