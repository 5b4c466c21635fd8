"""The kernel IR the passes work on.

The frontend imports a TileLang PrimFunc into a :class:`Kernel`: its parameters, grid, tile
buffers and a structured body of tile ops and loops (index expressions stay TVM PrimExprs).
Passes refine it step by step: buffers get a scope and layout, tile ops become Ascend ops
tagged with their pipe and the buffers they read and write, sync ops are inserted, and buffers
get offsets. Statements refer to buffers by name, so a pass can copy the buffer table without
chasing references. ``Kernel.dump()`` prints it after any stage.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .errors import SrcLoc

SCOPES = ("GM", "L1", "L0A", "L0B", "L0C", "UB")
PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")
# The pipes each core owns (docs/ascend-c-facts.md).
AIC_PIPES = frozenset({"S", "MTE1", "MTE2", "FIX", "M"})
AIV_PIPES = frozenset({"S", "V", "MTE2", "MTE3"})

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int32": 4, "int8": 1, "uint8": 1, "int16": 2,
               "float64": 8, "int64": 8, "bool": 1}
CTYPE = {"float16": "half", "bfloat16": "bfloat16_t", "float32": "float", "int32": "int32_t",
         "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "bool": "bool", "int64": "int64_t"}


def dtype_bytes(dtype: str) -> int:
    return DTYPE_BYTES[str(dtype)]


@dataclass
class Buffer:
    """A tensor: a GM parameter, a user tile buffer or a compiler temporary."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    kind: str  # "param" | "shared" | "fragment" | "temp"
    loc: SrcLoc | None = None
    scope: str | None = None  # one of SCOPES once infer_scope ran
    layout: str = "ND"  # ND | NZ | ZZ | ZN
    pitch: int | None = None  # UB: elements between rows (padded to 32 B)
    offset: int | None = None  # byte offset in its memory, from plan_memory
    slots: int = 1  # rotating copies (multi-buffering)
    role: str = ""  # why the scope was chosen (shown in the memory map)

    @property
    def elem_bytes(self) -> int:
        return dtype_bytes(self.dtype)

    @property
    def rows(self) -> int:
        return self.shape[0] if len(self.shape) > 1 else 1

    @property
    def cols(self) -> int:
        return self.shape[-1]

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= int(s)
        return n

    @property
    def slot_elems(self) -> int:
        """Elements one slot occupies in its memory (padding included)."""
        if self.scope == "UB":
            return self.rows * (self.pitch or self.cols)
        if self.layout in ("NZ", "ZZ", "ZN"):
            c0 = 32 // self.elem_bytes if self.scope != "L0C" else 16
            r = _round_up(self.rows, 16)
            c = _round_up(self.cols, c0 if self.layout == "NZ" else 16)
            return r * c
        return self.numel

    @property
    def nbytes(self) -> int:
        return self.slot_elems * self.elem_bytes * self.slots

    def describe(self) -> str:
        shape = "x".join(str(s) for s in self.shape)
        extra = f" pitch={self.pitch}" if self.pitch and self.pitch != self.cols else ""
        slots = f" slots={self.slots}" if self.slots > 1 else ""
        return f"{self.name}: {self.scope or '?'} {shape}x{self.dtype} {self.layout}{extra}{slots}"


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


@dataclass
class Param:
    name: str
    kind: str  # "tensor" | "scalar"
    dtype: str
    buffer: str | None = None  # buffer name for tensors
    var: Any = None  # tvm Var for scalars / handle


# ---------------------------------------------------------------- statements


@dataclass
class Stmt:
    loc: SrcLoc | None = field(default=None, kw_only=True)


@dataclass
class TileOp(Stmt):
    """A frontend tile op: copy, fill, gemm, reduce or parallel (a T.Parallel nest)."""

    op: str
    args: dict


@dataclass
class Loop(Stmt):
    var: Any  # tvm Var
    extent: Any  # PrimExpr (usually IntImm)
    body: list
    kind: str = "serial"  # serial | pipelined
    num_stages: int = 1
    slots: dict = field(default_factory=dict)  # buffer name -> rotating slots (multi_buffer)


@dataclass
class Access:
    """A buffer an op touches; ``slot`` is a C++ expression selecting a multi-buffer slot."""

    buffer: str
    slot: str | None = None


@dataclass
class AscOp(Stmt):
    """One Ascend C API call, tagged with its pipe and the buffers it reads and writes."""

    kind: str  # template macro name, e.g. "copy_gm_to_ub", "mmad", "vec_binary"
    pipe: str
    reads: list
    writes: list
    params: dict
    text: str = ""  # short human description, e.g. "DataCopyPad A -> A_s"


@dataclass
class Sync(Stmt):
    """SetFlag / WaitFlag / PipeBarrier, with the reason it exists."""

    action: str  # "set" | "wait" | "barrier"
    src: str  # producer pipe (for barrier: the pipe)
    dst: str
    event_id: int | str = 0
    reason: str = ""
    flag: int = -1  # index into Kernel.flags
    phase: str = ""  # "", "prime", "drain"
    slot: int | None = None  # prime/drain of a multi-slot flag: which slot

    @property
    def event(self) -> str:
        return f"{self.src}_{self.dst}"


@dataclass
class FlagRecord:
    """One row of the sync table."""

    index: int
    event: str
    event_id: int | str
    producer: str
    consumer: str
    buffer: str
    kind: str  # "intra-iteration", "loop-carried", "after-loop", ...
    producer_loc: SrcLoc | None = None
    consumer_loc: SrcLoc | None = None


@dataclass
class Kernel:
    name: str
    params: list
    grid: list  # [(tvm Var, extent int, thread tag)]
    buffers: dict  # name -> Buffer
    body: list
    arch: Any
    kernel_type: str = "AIV_ONLY"  # AIV_ONLY | AIC_ONLY | MIX_AIC_1_2
    flags: list = field(default_factory=list)
    source_file: str | None = None
    attrs: dict = field(default_factory=dict)

    def replace(self, **changes: Any) -> Kernel:
        return dataclasses.replace(self, **changes)

    def copy_buffers(self) -> dict:
        return {k: dataclasses.replace(v) for k, v in self.buffers.items()}

    @property
    def block_dim(self) -> int:
        n = 1
        for _, ext, *_tag in self.grid:
            n *= int(ext)
        return n

    def dump(self) -> str:
        from .printer import print_kernel

        return print_kernel(self)


def walk(body: list):
    """All statements of a body, depth first."""
    for s in body:
        yield s
        if isinstance(s, Loop):
            yield from walk(s.body)


def map_body(body: list, fn) -> list:
    """Rebuild a body, replacing each non-loop statement by the list ``fn`` returns."""
    out = []
    for s in body:
        if isinstance(s, Loop):
            out.append(dataclasses.replace(s, body=map_body(s.body, fn)))
        else:
            out.extend(fn(s))
    return out
