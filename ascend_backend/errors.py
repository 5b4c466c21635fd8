"""User-facing compile errors.

Every error says what is wrong, where (the DSL file:line when there is one) and what to do.
A user error is a subclass of :class:`AscendCompileError`; a bug in the compiler itself is an
:class:`InternalCompilerError`, which says so.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SrcLoc:
    """A position in the user's DSL source."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class AscendCompileError(Exception):
    """A kernel the ascendc target cannot compile, with where and what to do."""

    kind = "error"

    def __init__(self, what: str, *, loc: SrcLoc | None = None, hint: str | None = None) -> None:
        # plain str/int only: TVM strings in a message would make the error unpicklable
        self.what = "".join(str(what))
        self.loc = SrcLoc("".join(str(loc.file)), int(loc.line)) if loc is not None else None
        self.hint = "".join(str(hint)) if hint is not None else None
        super().__init__(self.format())

    def format(self) -> str:
        where = f"{self.loc}: " if self.loc else ""
        text = f"{where}{self.kind}: {self.what}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class UnsupportedError(AscendCompileError):
    """The kernel uses an op, dtype or form this backend does not support."""

    kind = "unsupported"


class AlignmentError(AscendCompileError):
    """A shape or offset breaks an alignment rule of the Ascend memories."""

    kind = "alignment"


class TargetError(AscendCompileError):
    """The target or arch given is not one this backend knows."""

    kind = "target"


class MemoryBudgetError(AscendCompileError):
    """The buffers of one on-chip memory do not fit its capacity on the chosen arch."""

    kind = "memory budget"

    def __init__(self, what: str, *, table: str, loc: SrcLoc | None = None, hint: str | None = None) -> None:
        self.table = table
        super().__init__(what, loc=loc, hint=hint)

    def format(self) -> str:
        head = super().format()
        return f"{head}\n{self.table}" if getattr(self, "table", None) else head


class RuntimeUnavailableError(AscendCompileError):
    """The requested runtime (NPU) is not usable on this machine."""

    kind = "runtime"


class InternalCompilerError(Exception):
    """A bug in tilelang-ascendc itself, not in the user's kernel."""

    def __init__(self, what: str, *, stage: str | None = None) -> None:
        where = f" in stage '{stage}'" if stage else ""
        super().__init__(
            f"internal compiler error{where}: {what}\n"
            "  This is a bug in tilelang-ascendc, not in your kernel. Please report it with the kernel "
            "and the output of `tl-ascend inspect FILE --stage all`."
        )
