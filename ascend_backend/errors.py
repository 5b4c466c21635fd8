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

    def __reduce__(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("what", "loc", "hint")}
        return (_rebuild, (type(self), self.what, self.loc, self.hint, state))

    def format(self) -> str:
        where = f"{self.loc}: " if self.loc else ""
        text = f"{where}{self.kind}: {self.what}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


def _rebuild(cls: type, what: str, loc: SrcLoc | None, hint: str | None, state: dict) -> AscendCompileError:
    err = cls.__new__(cls)
    err.__dict__.update(state)
    AscendCompileError.__init__(err, what, loc=loc, hint=hint)
    return err


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


class EventIdError(AscendCompileError):
    """A pipelined loop whose flags need more hardware event ids of one pipe pair at once than a
    core has (0-5 for generated code), even with flags merged."""

    kind = "event ids"


class ShapeError(AscendCompileError):
    """Operand shapes that do not agree (a T.gemm whose K differs between A and B, a tile copy
    between tiles of different shapes) or a size that cannot be (zero, negative)."""

    kind = "shape"


class DslError(AscendCompileError):
    """tilelang's front end or TVM rejected the kernel while the user's Python built it (a division
    by zero in a constant, a value of the wrong type, ...). The message keeps the original
    exception's type and text; the exception itself is chained as ``__cause__``."""

    kind = "error"


class RuntimeUnavailableError(AscendCompileError):
    """The requested runtime (NPU) is not usable on this machine."""

    kind = "runtime"


class InternalCompilerError(Exception):
    """A bug in tilelang-ascendc itself, not in the user's kernel.

    ``stage`` names the compiler stage that failed; ``dump_path`` (when set) is a file holding the
    kernel's TIR and the IR after every stage that ran, written for the bug report.
    """

    def __init__(self, what: str, *, stage: str | None = None, dump_path: str | None = None) -> None:
        self.what = what
        self.stage = stage
        self.dump_path = dump_path
        where = f" in stage '{stage}'" if stage else ""
        if dump_path:
            attach = f"the IR dump written to {dump_path}"
        else:
            attach = "the output of `tl-ascend inspect FILE --stage all`"
        super().__init__(
            f"internal compiler error{where}: {what}\n"
            f"  This is a bug in tilelang-ascendc, not in your kernel. Please report it with the kernel and {attach}."
        )

    def __reduce__(self):
        return (_rebuild_ice, (self.what, self.stage, self.dump_path))


def _rebuild_ice(what: str, stage: str | None, dump_path: str | None) -> InternalCompilerError:
    return InternalCompilerError(what, stage=stage, dump_path=dump_path)
