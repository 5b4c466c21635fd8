"""The closed sets of the kernel IR: pipes, memories, layouts, modes, events.

Values are the names the IR printer shows; how each is spelled in Ascend C is codegen's business
(ascend_backend/codegen.py), never a pass's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class _Named(str, enum.Enum):
    def __str__(self) -> str:
        return self.value


class Pipe(_Named):
    """A hardware pipe: each runs its instructions in order, pipes run in parallel."""

    S = "S"
    V = "V"
    M = "M"
    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    FIX = "FIX"


class Core(_Named):
    """A core kind of an AI-core group: one AIC (Cube) and two AIVs (Vector)."""

    AIC = "AIC"
    AIV = "AIV"

    @property
    def pipes(self) -> frozenset:
        return AIC_PIPES if self is Core.AIC else AIV_PIPES


AIC_PIPES = frozenset({Pipe.S, Pipe.MTE1, Pipe.MTE2, Pipe.FIX, Pipe.M})
AIV_PIPES = frozenset({Pipe.S, Pipe.V, Pipe.MTE2, Pipe.MTE3})


class Scope(_Named):
    """Where a buffer lives: global memory or one of a core's on-chip memories."""

    GM = "GM"
    L1 = "L1"
    L0A = "L0A"
    L0B = "L0B"
    L0C = "L0C"
    UB = "UB"
    LOCAL = "LOCAL"  # scalar registers / stack of the scalar unit (T.alloc_local, T.alloc_var)

    @property
    def core(self) -> Core | None:
        """The core kind that owns this memory (None for GM and scalar locals)."""
        if self is Scope.UB:
            return Core.AIV
        if self in (Scope.L1, Scope.L0A, Scope.L0B, Scope.L0C):
            return Core.AIC
        return None


ON_CHIP = (Scope.L1, Scope.L0A, Scope.L0B, Scope.L0C, Scope.UB)


class Layout(_Named):
    """ND: row-major. NZ: 16 x C0 fractals ordered column-major, row-major inside. ZZ: fractals
    row-major, row-major inside. ZN: fractals row-major, each fractal transposed. MX: the MX scale
    tile of a T.gemm_blockscaled operand in L1, [rows, K/32] E8M0 in 32-byte fractals of 16 rows x
    2 scales, fractals row-major, row-major inside (LoadData_2D_MX page: what L0A_MX/L0B_MX hold)."""

    ND = "ND"
    NZ = "NZ"
    ZZ = "ZZ"
    ZN = "ZN"
    MX = "MX"


class BufferKind(_Named):
    PARAM = "param"  # a tensor argument of the kernel (GM)
    SHARED = "shared"  # T.alloc_shared
    FRAGMENT = "fragment"  # T.alloc_fragment
    LOCAL = "local"  # T.alloc_local / T.alloc_var: scalar unit values
    TEMP = "temp"  # made by the compiler
    WORKSPACE = "workspace"  # a GM region carrying tiles between the Cube and the Vector cores
    GLOBAL = "global"  # T.alloc_global: GM scratch the launcher allocates, kept across the launches

    @property
    def in_gm(self) -> bool:
        """A tensor in global memory (an argument, a T.alloc_global, a workspace region)."""
        return self in (BufferKind.PARAM, BufferKind.GLOBAL, BufferKind.WORKSPACE)


class QuantMode(_Named):
    """Fixpipe's conversion of the accumulator on its way out (Fixpipe page, quantPre). The
    scaled modes multiply by a scale word first: 1.0 for a plain conversion, or a kernel's scalar
    (passes/fold_scale.py)."""

    NONE = "none"
    F32_TO_F16 = "f32->f16"
    F32_TO_BF16 = "f32->bf16"
    F32_TO_F16_SCALED = "f32->f16 (scaled)"  # QF322F16_PRE, dav-3510
    F32_TO_BF16_SCALED = "f32->bf16 (scaled)"  # QF322BF16_PRE, dav-3510
    F32_TO_S8 = "f32->s8 (scaled)"  # QF322B8_PRE
    F32_TO_FP8 = "f32->e4m3 (scaled)"  # QF322FP8_PRE, dav-3510
    S32_TO_F16 = "s32->f16 (scaled)"  # DEQF16
    S32_TO_BF16 = "s32->bf16 (scaled)"  # QS322BF16_PRE, dav-3510
    S32_TO_S8 = "s32->s8 (scaled)"  # REQ8

    @property
    def scaled(self) -> bool:
        return "scaled" in self.value


class Rounding(_Named):
    """Rounding of a vector Cast."""

    NONE = "none"
    RINT = "rint"  # round to nearest, ties to even
    TRUNC = "trunc"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"  # ties away from zero
    ODD = "odd"


class ReduceKind(_Named):
    SUM = "sum"
    MAX = "max"
    MIN = "min"
    ABSSUM = "abssum"  # sum of |x|
    ABSMAX = "absmax"  # max of |x|


class CmpMode(_Named):
    """A comparison of vector elements (Compare / Compares), one bit per element."""

    LT = "LT"
    GT = "GT"
    LE = "LE"
    GE = "GE"
    EQ = "EQ"
    NE = "NE"

    @property
    def swapped(self) -> CmpMode:
        """The mode with the operands exchanged (a < b is b > a)."""
        return {CmpMode.LT: CmpMode.GT, CmpMode.GT: CmpMode.LT, CmpMode.LE: CmpMode.GE,
                CmpMode.GE: CmpMode.LE}.get(self, self)


class MaskLogic(_Named):
    """A bitwise op on bit masks (And / Or / Not over their 16-bit words)."""

    AND = "And"
    OR = "Or"
    NOT = "Not"


class VecBinary(_Named):
    ADD = "Add"
    SUB = "Sub"
    MUL = "Mul"
    DIV = "Div"
    MAX = "Max"
    MIN = "Min"


class VecUnary(_Named):
    EXP = "Exp"
    LN = "Ln"
    ABS = "Abs"
    SQRT = "Sqrt"
    RSQRT = "Rsqrt"
    RECIPROCAL = "Reciprocal"


class VecScalarOp(_Named):
    """A vector op with one scalar operand: dst = src op scalar."""

    ADDS = "Adds"
    MULS = "Muls"
    MAXS = "Maxs"
    MINS = "Mins"


class VecOther(_Named):
    """The other vector instructions the compiler builds on a tile's element type, whose types an
    arch lists beside VecBinary / VecScalarOp / VecUnary's (``Arch.vector_op_dtypes``)."""

    DUPLICATE = "Duplicate"
    FUSED_MUL_ADD = "FusedMulAdd"
    TRANSPOSE = "Transpose"  # its [N,C,H,W] <-> [N,H,W,C] form (TransposeParamsExt)
    GATHER = "Gather"  # its count form: dst[k] = src at byte offset offset[k]


class AtomicOp(_Named):
    """How a store to GM combines with what is there (DMA atomics)."""

    ADD = "add"
    MAX = "max"
    MIN = "min"


class CopyForm(_Named):
    """GM <-> UB: one contiguous DataCopy of ``count`` elements, or DataCopyPad row by row."""

    COUNT = "count"
    PAD = "pad"


class LoopKind(_Named):
    SERIAL = "serial"
    PIPELINED = "pipelined"
    UNROLLED = "unrolled"
    WHILE = "while"  # `while cond:` (no loop variable, no extent)


class SimtArgKind(_Named):
    """What one argument of a SIMT function is (扩展语法/函数执行空间限定符-142.md: pointers to GM or
    UB, or built-in scalar types)."""

    GM = "__gm__ pointer"
    UB = "__ubuf__ pointer"
    SCALAR = "scalar"


class Direction(_Named):
    """Which way a tile crosses between the core kinds."""

    C2V = "cube->vector"
    V2C = "vector->cube"


class Route(_Named):
    """How a crossing tile travels: through a GM workspace, or on chip (dav-3510: L0C -> UB by
    Fixpipe, UB -> L1 by DataCopy)."""

    WORKSPACE = "workspace"
    ON_CHIP = "on-chip"


class SyncPhase(_Named):
    STEADY = ""
    PRIME = "prime"
    DRAIN = "drain"


class KernelType(_Named):
    AIV_ONLY = "AIV_ONLY"
    AIC_ONLY = "AIC_ONLY"
    MIX_AIC_1_2 = "MIX_AIC_1_2"


@dataclass(frozen=True)
class Event:
    """An intra-core event type: the producer pipe and the consumer pipe (HardEvent SRC_DST)."""

    src: Pipe
    dst: Pipe

    def __str__(self) -> str:
        return f"{self.src.value}_{self.dst.value}"


__all__ = [
    "AIC_PIPES", "AIV_PIPES", "ON_CHIP", "AtomicOp", "BufferKind", "CmpMode", "CopyForm", "Core", "Direction", "Event",
    "KernelType", "Layout", "LoopKind", "MaskLogic", "Pipe", "QuantMode", "ReduceKind", "Rounding", "Route", "Scope",
    "SimtArgKind", "SyncPhase", "VecBinary", "VecOther", "VecScalarOp", "VecUnary",
]
