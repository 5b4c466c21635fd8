"""A small FileCheck: match CHECK lines in order against generated code.

Each pattern is a substring that must appear on a line after the previous match;
``CHECK-NEXT:`` must be on the very next line; ``CHECK-NOT:`` must not appear between the
previous match and the next one; ``CHECK-SAME:`` on the same line as the previous match.
"""

from __future__ import annotations


class CheckFailure(AssertionError):
    pass


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
            if pos < 0 or pat not in lines[pos]:
                raise CheckFailure(f"CHECK-SAME: {pat!r} not on line {pos + 1}: {lines[pos] if pos >= 0 else ''}")
            continue
        start = pos + 1
        if kind == "CHECK-NEXT":
            found = start if start < len(lines) and pat in lines[start] else -1
        elif kind == "CHECK":
            found = next((i for i in range(start, len(lines)) if pat in lines[i]), -1)
        else:
            raise ValueError(f"unknown directive {kind!r}")
        if found < 0:
            context = "\n".join(lines[max(0, start - 2): start + 8])
            raise CheckFailure(f"{kind}: {pat!r} not found after line {pos + 1}; next lines:\n{context}")
        for n in nots:
            for i in range(start, found):
                if n in lines[i]:
                    raise CheckFailure(f"CHECK-NOT: {n!r} found on line {i + 1}: {lines[i]}")
        nots = []
        pos = found
    for n in nots:
        for i in range(pos + 1, len(lines)):
            if n in lines[i]:
                raise CheckFailure(f"CHECK-NOT: {n!r} found on line {i + 1}: {lines[i]}")
