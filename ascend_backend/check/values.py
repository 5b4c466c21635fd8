"""Symbolic values of the checker's interpreter: linear integer expressions, unknown conditions,
tensors, regions and footprints."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

_uid = itertools.count(1)


def fresh(text: str) -> str:
    """A symbol name no other value shares (for results of calls that are not pure)."""
    return f"{text}#{next(_uid)}"


class Lin:
    """``c + sum(coef * sym)`` over integer symbols; exact integer arithmetic where it can be."""

    __slots__ = ("c", "t")

    def __init__(self, c: int = 0, t: tuple = ()) -> None:
        self.c = c
        self.t = t  # sorted ((sym, coef), ...), coef != 0

    @staticmethod
    def sym(name: str) -> Lin:
        return Lin(0, ((name, 1),))

    @staticmethod
    def of(v) -> Lin | None:
        if isinstance(v, Lin):
            return v
        if isinstance(v, bool):
            return Lin(int(v))
        if isinstance(v, int):
            return Lin(v)
        if isinstance(v, float) and v.is_integer():
            return Lin(int(v))
        return None

    def is_const(self) -> bool:
        return not self.t

    def simplify(self):
        return self.c if not self.t else self

    def __add__(self, o: Lin) -> Lin:
        d = dict(self.t)
        for s, k in o.t:
            d[s] = d.get(s, 0) + k
        return Lin(self.c + o.c, tuple(sorted((s, k) for s, k in d.items() if k)))

    def __neg__(self) -> Lin:
        return Lin(-self.c, tuple((s, -k) for s, k in self.t))

    def __sub__(self, o: Lin) -> Lin:
        return self + (-o)

    def scale(self, k: int) -> Lin:
        if k == 0:
            return Lin(0)
        return Lin(self.c * k, tuple((s, c * k) for s, c in self.t))

    def subst(self, known: dict) -> Lin:
        """Symbols with a known value replaced by it."""
        if not known or not any(s in known for s, _ in self.t):
            return self
        c = self.c
        t = []
        for s, k in self.t:
            if s in known:
                c += k * known[s]
            else:
                t.append((s, k))
        return Lin(c, tuple(t))

    def text(self) -> str:
        parts = [s if k == 1 else f"{k}*{s}" for s, k in self.t]
        if self.c or not parts:
            parts.append(str(self.c))
        return " + ".join(parts)

    def __eq__(self, o) -> bool:
        return isinstance(o, Lin) and self.c == o.c and self.t == o.t

    def __hash__(self) -> int:
        return hash((self.c, self.t))

    def __repr__(self) -> str:
        return f"Lin({self.text()})"


@dataclass(frozen=True)
class Cond:
    """An unknown truth value; conditions with the same text are the same condition.

    ``kind``/``info`` let a decision teach the interpreter more: "eq" (``info`` = (symbol, value):
    the condition is ``symbol == value``), "or"/"and" (``info`` = the operand conditions)."""

    text: str
    neg: bool = False
    kind: str | None = field(default=None, compare=False)
    info: object = field(default=None, compare=False)

    def negate(self) -> Cond:
        return Cond(self.text, not self.neg, self.kind, self.info)

    def raw(self) -> Cond:
        return Cond(self.text, False, self.kind, self.info)


@dataclass(frozen=True)
class Unk:
    """An unknown non-integer value (float, pointer, object of an unknown class...)."""

    text: str = "?"


UNKNOWN = Unk()


def is_known_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or isinstance(v, bool)


def as_int(v) -> int | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, Lin) and v.is_const():
        return v.c
    return None


def text_of(v) -> str:
    if isinstance(v, Lin):
        return v.text()
    if isinstance(v, Cond):
        return ("!" if v.neg else "") + f"({v.text})"
    if isinstance(v, Unk):
        return v.text
    if isinstance(v, Tensor):
        return v.name
    return str(v)


# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------
SCALAR_SIZES = {
    "half": 2, "bfloat16_t": 2, "float16_t": 2, "int16_t": 2, "uint16_t": 2, "short": 2,
    "float": 4, "int32_t": 4, "uint32_t": 4, "int": 4, "unsigned": 4, "event_t": 4,
    "int8_t": 1, "uint8_t": 1, "char": 1, "bool": 1, "fp8_e4m3fn_t": 1, "fp8_e5m2_t": 1,
    "fp8_e8m0_t": 1, "hifloat8_t": 1,  # int4b_t (half a byte) is left unknown: its extents are not computed
    "int64_t": 8, "uint64_t": 8, "double": 8, "long": 8, "size_t": 8, "uintptr_t": 8,
}


@dataclass(frozen=True)
class TypeVal:
    """A type (a template argument bound to a type, or the element type of a tensor)."""

    name: str
    args: tuple = ()

    @property
    def size(self) -> int | None:
        return SCALAR_SIZES.get(self.name)


# ---------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------
POSITION_MEM = {
    "VECIN": "UB", "VECOUT": "UB", "VECCALC": "UB", "A1": "L1", "B1": "L1", "C1": "L1",
    "A2": "L0A", "B2": "L0B", "CO1": "L0C", "CO2": "UB", "C2": "BT", "C2PIPE2GM": "FB", "GM": "GM",
    "TSCM": "L1", "SHM": "L1",
}
HARDWARE_MEM = {"UB": "UB", "L1": "L1", "L0A": "L0A", "L0B": "L0B", "L0C": "L0C", "BIAS": "BT",
                "FIXBUF": "FB", "GM": "GM"}
# Which core owns each on-chip memory.
MEM_CORE = {"UB": "AIV", "L1": "AIC", "L0A": "AIC", "L0B": "AIC", "L0C": "AIC", "BT": "AIC", "FB": "AIC"}
MEM_ALIGN = {"UB": 32, "L1": 32, "L0A": 512, "L0B": 512, "L0C": 64, "BT": 64, "FB": 64}


@dataclass
class GmPtr:
    """A ``__gm__ T*`` into kernel argument ``root`` (byte offset ``off``)."""

    root: str
    off: Lin
    elem: int | None = 1


@dataclass
class Tensor:
    """A LocalTensor or GlobalTensor view: memory root, byte start, element size, extent."""

    kind: str  # "L" local, "G" global
    root: tuple | None  # ("UB",) / ("L1",) ... / ("GM", argname); None: not bound yet
    start: Lin
    elem: int | None
    size: Lin | None = None  # bytes from start to the end of the view, when known
    name: str = "?"
    dtype: str = "?"
    que: object = None  # the TQue this buffer belongs to (Alloc/EnQue/DeQue/Free)
    buf_index: int | None = None
    foreign: bool = False  # memory of the other core (a Fixpipe into the AIVs' UB, ...)

    def mem(self) -> str:
        return self.root[0] if self.root else "?"

    def view(self, off_elems, name: str | None = None) -> Tensor:
        """``self[off]``."""
        e = self.elem
        lo = Lin.of(off_elems)
        if lo is None or e is None:
            start = Lin.sym(fresh(f"{self.name}[?]"))
            size = None
        else:
            delta = lo.scale(e)
            start = self.start + delta
            size = (self.size - delta) if self.size is not None else None
        return Tensor(self.kind, self.root, start, e, size, name or self.name, self.dtype, self.que,
                      self.buf_index, self.foreign)


# ---------------------------------------------------------------------------------------------
# Footprints (byte intervals relative to a view's start)
# ---------------------------------------------------------------------------------------------
MAX_INTERVALS = 4096


def merge_intervals(iv: list[tuple[int, int]]) -> tuple:
    if not iv:
        return ()
    iv = sorted(iv)
    out = [list(iv[0])]
    for lo, hi in iv[1:]:
        if lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    if len(out) > MAX_INTERVALS:
        return ((out[0][0], out[-1][1]),)
    return tuple((a, b) for a, b in out)


def strided(rows: int, row_bytes: int, stride: int, base: int = 0) -> tuple:
    if rows <= 0 or row_bytes <= 0:
        return ()
    if stride <= row_bytes:
        return ((base, base + (rows - 1) * stride + row_bytes),) if stride > 0 or rows == 1 else \
            ((base, base + row_bytes),)
    if rows > MAX_INTERVALS:
        return ((base, base + (rows - 1) * stride + row_bytes),)
    return tuple((base + r * stride, base + r * stride + row_bytes) for r in range(rows))


def intervals_overlap(a: tuple, b: tuple, shift: int) -> bool:
    """Whether a and (b + shift) share a byte."""
    i = j = 0
    while i < len(a) and j < len(b):
        alo, ahi = a[i]
        blo, bhi = b[j][0] + shift, b[j][1] + shift
        if alo < bhi and blo < ahi:
            return True
        if ahi <= blo:
            i += 1
        else:
            j += 1
    return False


def contains(iv: tuple, x: int) -> bool:
    return any(lo <= x < hi for lo, hi in iv)


@dataclass
class Region:
    """What one access touches: ``root`` memory, ``start`` bytes, ``fp`` intervals (None: the
    extent is not known statically; then ``size`` (to the end of the view) or just the start)."""

    root: tuple
    start: Lin
    fp: tuple | None
    size: Lin | None = None
    name: str = "?"

    def extent(self) -> tuple | None:
        if self.fp is not None:
            return self.fp
        if self.size is not None and self.size.is_const() and self.size.c > 0:
            return ((0, self.size.c),)
        return None

    def key(self) -> tuple:
        return (self.root, self.start, self.fp, self.size.c if self.size is not None and self.size.is_const()
                else None)


def regions_overlap(a: Region, b: Region) -> bool:
    if a.root != b.root:
        return False
    d = b.start - a.start
    if not d.is_const():
        return False  # different symbolic starts: taken as disjoint (see docs/check.md)
    shift = d.c
    ea, eb = a.extent(), b.extent()
    if ea is not None and eb is not None:
        return intervals_overlap(ea, eb, shift)
    if ea is not None:
        return contains(ea, shift)
    if eb is not None:
        return contains(eb, -shift)
    return shift == 0


def covered_by_write(read: Region, write: Region) -> bool:
    """For 'read of a buffer never written': a write of unknown extent covers the rest of its view."""
    if read.root != write.root:
        return False
    d = read.start - write.start
    if not d.is_const():
        return True  # cannot tell: assume written
    ew, er = write.extent(), read.extent()
    if ew is None:
        return d.c >= 0 or (er is not None and any(hi > -d.c for _, hi in er))
    if er is not None:
        return intervals_overlap(ew, er, d.c)
    return contains(ew, d.c)


@dataclass
class Access:
    pipe: str
    kind: str  # "R" or "W"
    region: Region
    op: str
    line: int
    done_for: set = field(default_factory=set)
    maybe: bool = False  # a read that may not happen (Mmad accumulation with an unknown init flag)
    serial: int = 0
    remote: bool = False  # a proxy of another core's access, made visible by a cross-core wait
    auto_ok: bool = True  # bisheng's auto-sync may order it (GlobalTensor::SetValue may not)
    xids: list = field(default_factory=list)  # ids of the shared-memory accesses this one stands for


@dataclass
class XAccess:
    """An access to memory another core can touch (GM, the AIVs' UB, the AIC's L1), for the
    cross-core check; ``region.root`` uses the shared naming (("UB@AIV", sub), ("L1@AIC",), GM)."""

    xid: tuple
    kind: str
    pipe: str
    region: Region
    op: str
    line: int
    core: str
