"""SIMT functions in an Ascend C source: the rewrite that lets the emulator see their memory
accesses, and the mapping of the access addresses it reports back to source lines.

Inside every ``__simt_vf__`` / ``__simt_callee__`` function (signature and body), and nowhere
else, ``__ubuf__ T*`` / ``__gm__ T*`` become the emulator's pointer classes
(``emu::simt::ptr<T, UB|GM>``, include/emu_simt.h), ``__ubuf__ T name[N]`` arrays become
``emu::simt::ub_array``, ``reinterpret_cast`` to such a pointer becomes ``emu::simt::ptr_cast``,
and each ``__simt_vf__`` body starts with the ``__launch_bounds__`` check. Every edit stays on
its line, so compiler messages and reports keep the user's line numbers.

A plain load or store has no source location in C++ (``p[i]`` takes no default argument); the
runtime reports it by its return address in the kernel library, which ``resolve_pcs`` turns into
a line with ``addr2line`` (kernels are built with line tables, ``-g1``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .report import EmulatorError

_QUAL_RE = re.compile(r"\b__simt_(vf|callee)__\b")
_BOUNDS_RE = re.compile(r"\b__launch_bounds__\s*\(")

# a type as it appears after __ubuf__ / __gm__: qualifiers, a (qualified) name with optional
# template arguments (one level of nesting), trailing `int` / `long` words
_TARGS = r"(?:\s*<[^<>;{}()]*(?:<[^<>;{}()]*>[^<>;{}()]*)*>)?"
_TYPE = (r"(?:(?:const|volatile|unsigned|signed|long|short|struct)\s+)*[A-Za-z_][\w:]*" + _TARGS +
         r"(?:\s+(?:const|volatile|int|long|char|short|double))*")
_PTR_RE = re.compile(r"(?P<pre>(?:\b(?:const|volatile)\s+)*)\b__(?P<sp>ubuf|gm)__\s+(?P<ty>" + _TYPE +
                     r")\s*\*(?P<restrict>\s*__restrict(?:__)?\b)?")
_ARR_RE = re.compile(r"(?P<ext>\bextern\s+)?\b__ubuf__\s+(?P<ty>" + _TYPE + r")\s+(?P<name>[A-Za-z_]\w*)\s*"
                     r"(?P<dims>(?:\[[^\]]*\]\s*)+)(?P<after>[;=,)])")
_CAST_RE = re.compile(r"\breinterpret_cast(?=\s*<\s*(?:(?:const|volatile)\s+)*__(?:ubuf|gm)__\b)")


def _mask(src: str) -> str:
    """``src`` with comments, string and character literals blanked (same length and lines)."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c in "\"'":
            if c == '"' and i > 0 and src[i - 1] == "R":  # raw string literal R"d( ... )d"
                m = re.match(r'"([^(\s]*)\(', src[i:])
                if m:
                    end = src.find(")" + m.group(1) + '"', i)
                    j = n if end < 0 else end + len(m.group(1)) + 2
                    blank(i + 1, j - 1)
                    i = j
                    continue
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _match_close(text: str, i: int, open_c: str, close_c: str) -> int:
    """Index of the bracket closing the one at ``i`` (-1 if none)."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_c:
            depth += 1
        elif text[j] == close_c:
            depth -= 1
            if depth == 0:
                return j
    return -1


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def has_simt(source: str) -> bool:
    """Does the source define or declare a SIMT function?"""
    return bool(_QUAL_RE.search(_mask(source)))


def _regions(masked: str) -> list[tuple[int, int, bool, int | None, str | None]]:
    """(start, end, is_vf, index of the body's '{' or None, launch-bounds expression) of every
    SIMT function definition or declaration."""
    out = []
    pos = 0
    while True:
        m = _QUAL_RE.search(masked, pos)
        if not m:
            return out
        start = m.start()
        is_vf = m.group(1) == "vf"
        i = m.end()
        bounds: str | None = None
        body = None
        end = len(masked)
        depth = 0
        while i < len(masked):
            ch = masked[i]
            if ch == "(":
                if depth == 0:
                    bm = _BOUNDS_RE.match(masked, _rfind_word(masked, i))
                    if bm and bm.end() - 1 == i:
                        close = _match_close(masked, i, "(", ")")
                        bounds = masked[i + 1:close].strip()
                        i = close + 1
                        continue
                depth += 1
            elif ch == ")":
                depth -= 1
            elif depth == 0 and ch == ";":
                end = i + 1
                break
            elif depth == 0 and ch == "{":
                body = i
                close = _match_close(masked, i, "{", "}")
                end = len(masked) if close < 0 else close + 1
                break
            i += 1
        out.append((start, end, is_vf, body, bounds))
        pos = end


def _rfind_word(text: str, i: int) -> int:
    """Start of the identifier (and spaces) right before index ``i``."""
    j = i
    while j > 0 and text[j - 1].isspace():
        j -= 1
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    return j


def rewrite(source: str) -> str:
    """The source with its SIMT functions rewritten for the emulator (see the module docstring).
    Raises EmulatorError for the ``__ubuf__`` forms that are not emulated, naming the line."""
    masked = _mask(source)
    regions = _regions(masked)
    if not regions:
        return source
    edits: list[tuple[int, int, str]] = []
    for start, end, is_vf, body, bounds in regions:
        seg = masked[start:end]
        taken: list[tuple[int, int]] = []
        for m in _ARR_RE.finditer(seg):
            a, b = start + m.start(), start + m.end("dims")
            line = _line_of(source, a)
            if m.group("ext") or re.search(r"\[\s*\]", m.group("dims")):
                raise EmulatorError(
                    f"line {line}: `extern __ubuf__ ... []` (dynamic UB sized by <<<..., dyn_ub_size>>>) inside a "
                    f"SIMT function is not emulated: declare a sized array (`__ubuf__ float buf[256];`) or "
                    f"allocate the buffer with TPipe/TBuf in the kernel and pass a __ubuf__ pointer")
            if m.group("after") == "=":
                raise EmulatorError(f"line {line}: a __ubuf__ array with an initialiser is not emulated (UB is not "
                                    f"initialised on the device either): fill it from the threads")
            dims = [d.strip() for d in re.findall(r"\[([^\]]*)\]", m.group("dims"))]
            ty = " ".join(m.group("ty").split()) + "".join(f"[{d}]" for d in dims[1:])
            edits.append((a, b, f"::emu::simt::ub_array<{ty}, ({dims[0]})> {m.group('name')}"))
            taken.append((a, b))
        for m in _PTR_RE.finditer(seg):
            a, b = start + m.start(), start + m.end()
            if any(x <= a < y for x, y in taken):
                continue
            space = "UB" if m.group("sp") == "ubuf" else "GM"
            # const / volatile pointees become plain ones: a template `const T*` parameter then
            # still deduces T from a `T*` argument (a class template would not); constness is
            # the device compiler's check, not the emulator's
            ty = " ".join(re.sub(r"\b(?:const|volatile)\b", " ", m.group("pre") + m.group("ty")).split())
            edits.append((a, b, f"::emu::simt::ptr<{ty}, ::emu::simt::{space}> "))
        for m in _CAST_RE.finditer(seg):
            edits.append((start + m.start(), start + m.end(), "::emu::simt::ptr_cast"))
        if is_vf and body is not None:
            n = bounds if bounds else "1024"
            edits.append((body + 1, body + 1, f" ::emu::simt::bounds((uint32_t)({n}), ::emu::Loc::current());"))
    out = source
    for a, b, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:a] + text + out[b:]
    return out


def resolve_pcs(d: dict[str, Any], library: Path) -> None:
    """Fill in ``line`` for every report entry the runtime gave as a code address (``pc``: an
    offset into the kernel library): races of SIMT threads and errors of their accesses."""
    entries: list[dict[str, Any]] = []
    for r in d.get("races") or []:
        for k in ("first", "second"):
            if isinstance(r.get(k), dict) and "pc" in r[k]:
                entries.append(r[k])
    for e in d.get("errors") or []:
        if "pc" in e:
            entries.append(e)
    if not entries:
        return
    tool = shutil.which("addr2line")
    pcs = sorted({int(e["pc"], 16) for e in entries if int(e["pc"], 16) > 0})
    lines: dict[int, int] = {}
    if tool and pcs:
        # the return address follows the call: look up the byte before it
        args = [tool, "-a", "-i", "-e", str(library)] + [hex(p - 1) for p in pcs]
        try:
            out = subprocess.run(args, capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        cur = None
        for ln in out.splitlines():
            if ln.startswith("0x"):
                cur = int(ln, 16) + 1
                continue
            m = re.match(r"^(.*):(\d+)(?: \(discriminator \d+\))?$", ln.strip())
            if cur is not None and m and Path(m.group(1)).name == "kernel.cpp" and cur not in lines:
                lines[cur] = int(m.group(2))
    for e in entries:
        pc = int(e["pc"], 16)
        if pc in lines:
            e["line"] = lines[pc]
        else:
            e["line"] = 0
            e.setdefault("note", "source line unknown (addr2line found none)")
