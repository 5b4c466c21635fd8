"""``tl-ascend check``: a static synchronization lint for Ascend C sources (no inputs needed).

    from ascend_backend.check import check_source
    for d in check_source(text, arch="dav-c220", auto_sync=False):
        print(d.format())            # file:line: error|warning: message

What is checked, what is not, and the C++ subset read: docs/check.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .lexer import CheckSyntaxError
from .machine import Diagnostic

__all__ = ["CheckError", "CheckResult", "Diagnostic", "check_file", "check_source", "ARCHES"]

ARCHES = ("dav-3510", "dav-c220")


class CheckError(Exception):
    """The source cannot be read or parsed; ``str()`` is one line naming file:line."""

    def __init__(self, message: str, file: str = "", line: int = 0) -> None:
        self.file, self.line, self.message = file, line, message
        super().__init__(f"{file}:{line}: error: {message}" if line else f"{file}: error: {message}")


@dataclass
class CheckResult:
    file: str
    arch: str
    auto_sync: bool
    diagnostics: list = field(default_factory=list)
    kernels: list = field(default_factory=list)  # {name, line, cores, ratio, how, paths}
    notes: list = field(default_factory=list)
    dropped: list = field(default_factory=list)  # (file, line) of top-level declarations not parsed

    @property
    def errors(self) -> list:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list:
        return [d for d in self.diagnostics if d.severity == "warning"]

    def to_dict(self) -> dict:
        return {"file": self.file, "arch": self.arch, "auto_sync": self.auto_sync,
                "errors": len(self.errors), "warnings": len(self.warnings),
                "kernels": self.kernels, "diagnostics": [d.to_dict() for d in self.diagnostics],
                "notes": self.notes}


def check(text: str, arch: str = "dav-3510", auto_sync: bool = True, filename: str = "<source>",
          path: str | None = None, defines: dict | None = None, follow_includes: bool = True,
          kernel: str | None = None, max_paths: int | None = None) -> CheckResult:
    """Check ``text``; returns a CheckResult (raises CheckError when the source cannot be parsed)."""
    from .explore import DEFAULT_MAX_PATHS, check_kernels
    from .parser import parse_tokens, tokens_for

    if arch not in ARCHES:
        raise ValueError(f"unknown arch {arch!r} (one of {', '.join(ARCHES)})")
    parsed = {}
    smap = None
    seen_toks = None
    for core in ("AIV", "AIC"):
        try:
            toks, smap_c = tokens_for(text, filename, arch, core, path=path, defines=defines,
                                      follow_includes=follow_includes)
            sig = [(t.type, t.value, t.line) for t in toks]
            if seen_toks is not None and sig == seen_toks[0]:
                parsed[core] = seen_toks[1]  # no core-dependent #if: one parse serves both cores
            else:
                parsed[core] = parse_tokens(toks, smap_c)
                seen_toks = (sig, parsed[core])
        except CheckSyntaxError as exc:
            # the line may be in an included header: preprocess again just to map it
            f, ln = _locate(exc.line, filename, text, path, arch, core, defines, follow_includes) \
                if exc.line else (filename, 0)
            raise CheckError(exc.message, f, ln) from None
        smap = parsed[core].smap
    results = check_kernels(parsed, arch, auto_sync, max_paths or DEFAULT_MAX_PATHS, kernel)
    res = CheckResult(filename, arch, auto_sync)
    seen = {}
    for kr in results:
        res.kernels.append({"name": kr.plan.name, "line": smap.locate(kr.plan.line)[1], "cores": list(kr.plan.cores),
                            "aivs_per_aic": kr.plan.ratio, "how": kr.plan.how, "paths": kr.paths})
        for fd, note, core in kr.findings:
            file, line = smap.locate(fd.line)
            msg = fd.message + (f" [{core}]" if core else "")
            key = (file, line, fd.severity, fd.check, fd.message)
            if key in seen:
                prev = seen[key]
                if core and f"[{core}]" not in prev.message:
                    seen[key] = Diagnostic(prev.file, prev.line, prev.severity, prev.check,
                                           fd.message, "")
                continue
            if fd.check in ("wait-without-set",) and note and note not in msg:
                pass
            seen[key] = Diagnostic(file, line, fd.severity, fd.check, msg, core)
        res.notes.extend(sorted(kr.notes))
    res.diagnostics = sorted(seen.values(), key=lambda d: (d.file, d.line, d.severity != "error", d.message))
    for core, p in parsed.items():
        for gl in p.dropped:
            loc = p.smap.locate(gl)
            if loc not in res.dropped:
                res.dropped.append(loc)
        del core
    return res


def _locate(gline, filename, text, path, arch, core, defines, follow):
    from .lexer import Preprocessor, SourceMap

    smap = SourceMap()
    pp = Preprocessor(arch, core, defines, follow_includes=follow, smap=smap)
    try:
        pp.run(text, filename, path)
    except CheckSyntaxError:
        pass
    return smap.locate(gline)


def check_source(text: str, arch: str = "dav-3510", auto_sync: bool = True, filename: str = "<source>",
                 **kw) -> list[Diagnostic]:
    """The diagnostics of ``text`` (errors and warnings, sorted by line)."""
    return check(text, arch=arch, auto_sync=auto_sync, filename=filename, **kw).diagnostics


def check_file(path: str, arch: str = "dav-3510", auto_sync: bool = True, **kw) -> CheckResult:
    """Check the file at ``path`` (local ``#include "x.h"`` headers beside it are read too)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        raise CheckError(f"cannot read the file ({exc.strerror or exc})", path) from None
    if os.path.isdir(path):
        raise CheckError("is a directory, not an Ascend C source", path)
    return check(text, arch=arch, auto_sync=auto_sync, filename=path, path=path, **kw)
