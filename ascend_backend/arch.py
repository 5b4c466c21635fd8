"""Per-arch facts the compiler decides with (docs/ascend-c-facts.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .dtypes import DType
from .ir.enums import Layout, QuantMode, Scope, VecBinary, VecOther, VecScalarOp, VecUnary

KB = 1024


@dataclass(frozen=True)
class VecOpTypes:
    """The element types one vector instruction takes on one arch, as the "数据类型" section of its
    API page lists them: ``every`` in all its forms, ``count_only`` in the count form only (the
    Ascend 950 pages' "仅支持tensor前n个数据计算接口": the mask/repeat forms reject them). The
    compiler's whole-tile ops use the count form; its broadcast and fold ops (VecBinaryBcast,
    VecFold, ...) the mask/repeat forms. ``page`` is the page's path under
    docs/zh/api/SIMD-API/基础API/Memory矢量计算/."""

    page: str
    every: frozenset
    count_only: frozenset = frozenset()

    def takes(self, dt: DType, count_form: bool = True) -> bool:
        return dt in self.every or (count_form and dt in self.count_only)


@dataclass(frozen=True)
class Arch:
    """One Ascend AI-core architecture."""

    name: str  # the name users write: "dav-3510" or "dav-c220"
    bisheng_arch: str  # value of bisheng's --npu-arch
    capacity: dict  # usable bytes per on-chip memory (Scope -> bytes)
    l0c_dtype_bytes: int = 4
    # Same-pipe vector ops are ordered by the hardware on 3510 (PipeBarrier<PIPE_V> emits nothing);
    # on c220 dependent vector ops need an explicit barrier.
    needs_vector_barrier: bool = True
    l0a_layout: Layout = Layout.ZZ
    l0b_layout: Layout = Layout.ZN
    # Data paths between the cores (docs/ascend-c-facts.md): Fixpipe L0C -> UB and DataCopy
    # UB -> L1 exist on dav-3510 only; on dav-c220 the Cube and the Vector cores meet in GM.
    l0c_to_ub: bool = False
    ub_to_l1: bool = False
    # L0C -> UB in one Fixpipe into both AIVs' UB, split by M (dualDstCtl = 1; L0C Buffer到UB双目标模式
    # page: M even, no conversion or ReLU on the way), at twice the single-destination rate.
    l0c_to_ub_dual: bool = False
    # Cross-core flag mode 4 (the AIC and one AIV) exists on dav-3510 only.
    cross_core_mode4: bool = False
    # Parameter structs of the Cube API: LoadData2DParamsV2 and FixpipeParamsArch3510 on dav-3510,
    # LoadData2DParams and FixpipeParamsV220 on dav-c220.
    load_data_v2: bool = False
    fixpipe_arch3510: bool = False
    # Mmad operand and accumulator dtypes: (A, B, accumulator) triples (Mmad page, tables 5-8;
    # float32 x float32 is documented but the compiler does not emit it).
    cube_dtypes: tuple = ()
    # Vector tile dtypes: what the vector units compute in (fp16, bf16 through float32, fp32) plus
    # what they convert from and to (Cast page's per-arch table).
    vector_dtypes: tuple = ()
    # Direct vector Cast pairs (src, dst) from the Cast page's per-arch table that the compiler
    # uses; other conversions go through float32 / float16 (passes/lower_parallel.cast_steps).
    # int32 -> half is left out: it needs SetDeqScale. ifTranspose of LoadData2DParams is b16 only.
    vector_casts: frozenset = frozenset()
    # LoadData with ifTranspose takes 1-byte types (LoadData2DParamsV2 on dav-3510; LoadData2DParams
    # on dav-c220 transposes b16 only).
    b8_transpose: bool = False
    # Fixpipe output dtypes per accumulator dtype (Fixpipe page, data type table).
    fixpipe_dtypes: tuple = ()
    # Fixpipe's scalar-scaled conversions to a 16-bit float (随路量化 page), ((accumulator, output),
    # mode) pairs: what passes/fold_scale.py may fold a per-tensor scale into.
    fixpipe_scaled: tuple = ()
    # Mmad / Fixpipe unitFlag (UnitFlag page; the Mmad page's unitFlag row: Ascend 950 and the A2 /
    # A3 series): the accumulator's Fixpipe streams out behind the K loop's last Mmad.
    unit_flag: bool = False
    # MX-scaled fp8 gemms (MmadMx and LoadData with LoadData2DMxParams, Ascend 950 only on both
    # pages): T.gemm_blockscaled with one E8M0 scale per 32 K elements.
    mmad_mx: bool = False
    # SIMT: thread-level code in __simt_vf__ functions launched by asc_vf_call from the AIV (the
    # SIMT-API pages: Ascend 950 only; every page says A2/A3 "不支持"). Thread blocks of up to
    # 2048 threads, warps of 32; UB keeps 8 KB reserved plus a Data Cache of at least 32 KB
    # (SIMD与SIMT混合编程简介/编程模型-140.md, UB划分).
    simt: bool = False
    # The element types of the vector instructions the compiler builds on a tile's dtype
    # (VecBinary / VecScalarOp / VecUnary / VecOther -> VecOpTypes), from each op's page: dav-c220 is
    # the pages' "Atlas A2 训练系列产品/Atlas A2 推理系列产品" line, dav-3510 their "Ascend 950PR/
    # Ascend 950DT" line. passes/lower_parallel.py refuses any other type at the DSL line (bisheng,
    # and the emulator's tables at the top of emu_vector.h, would fail to compile it).
    vector_op_dtypes: dict = field(default_factory=dict)

    @property
    def macro(self) -> str:
        return "EMU_ARCH_C220" if self.name == "dav-c220" else "EMU_ARCH_3510"

    def vector_op(self, op: VecBinary | VecScalarOp | VecUnary | VecOther) -> VecOpTypes:
        """The element types ``op`` takes on this arch."""
        return self.vector_op_dtypes[op]

    @property
    def bf16_vector_math(self) -> bool:
        """Does the Vector compute in bfloat16? Add, Sub, Mul, Max, Min, their scalar forms,
        FusedMulAdd and Select take bfloat16_t on Ascend 950; on the A2/A3 series bfloat16 is
        converted (Cast), copied and filled only."""
        return BF16 in self.vector_op(VecBinary.ADD).every


F16, BF16, F32, I8, U8, I32, I16 = (DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.INT8, DType.UINT8,
                                    DType.INT32, DType.INT16)
E4M3, E5M2, I4 = DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2, DType.INT4
U16, U32, I64, U64, BOOL, E8M0 = (DType.UINT16, DType.UINT32, DType.INT64, DType.UINT64, DType.BOOL,
                                  DType.FLOAT8_E8M0FNU)
_COMMON_CUBE = ((F16, F16, F32), (BF16, BF16, F32), (I8, I8, I32))
_COMMON_CASTS = frozenset({
    (F16, F32), (BF16, F32), (F32, F16), (F32, BF16), (F32, I32), (I32, F32), (F16, I32), (BF16, I32),
    (F16, I8), (F16, U8), (I8, F16), (U8, F16), (F16, I16), (I16, F16), (I16, F32), (F32, I16), (I32, I16),
    (I4, F16), (F16, I4),
})

# The vector op tables (VecOpTypes). Types the pages list that DType has no member for (complex32,
# complex64, hifloat8, fp4x2) are left out.
_HF = frozenset({F16, F32})
# dav-c220: the A2 line of the pages.
_A2_ARITH = frozenset({I16, F16, I32, F32})  # Add, Sub, Mul, Max, Min, Adds, Muls, Maxs, Mins
_C220_VECTOR_OPS = {
    VecBinary.ADD: VecOpTypes("基础算术/Add.md", _A2_ARITH),
    VecBinary.SUB: VecOpTypes("基础算术/Sub.md", _A2_ARITH),
    VecBinary.MUL: VecOpTypes("基础算术/Mul.md", _A2_ARITH),
    VecBinary.DIV: VecOpTypes("基础算术/Div.md", _HF),
    VecBinary.MAX: VecOpTypes("基础算术/Max.md", _A2_ARITH),
    VecBinary.MIN: VecOpTypes("基础算术/Min.md", _A2_ARITH),
    VecScalarOp.ADDS: VecOpTypes("基础算术/Adds.md", _A2_ARITH),
    VecScalarOp.MULS: VecOpTypes("基础算术/Muls.md", _A2_ARITH),
    VecScalarOp.MAXS: VecOpTypes("基础算术/Maxs.md", _A2_ARITH),
    VecScalarOp.MINS: VecOpTypes("基础算术/Mins.md", _A2_ARITH),
    VecUnary.EXP: VecOpTypes("基础算术/Exp.md", _HF),
    VecUnary.LN: VecOpTypes("基础算术/Ln.md", _HF),
    VecUnary.SQRT: VecOpTypes("基础算术/Sqrt.md", _HF),
    VecUnary.RSQRT: VecOpTypes("基础算术/Rsqrt.md", _HF),
    VecUnary.RECIPROCAL: VecOpTypes("基础算术/Reciprocal.md", _HF),
    VecUnary.ABS: VecOpTypes("基础算术/Abs.md", _HF),
    # no 1-byte type: a 1-byte fill is a Duplicate of the tile's 16-bit words (lower_parallel)
    VecOther.DUPLICATE: VecOpTypes("数据填充/Duplicate.md", frozenset({I16, U16, F16, BF16, I32, U32, F32})),
    VecOther.FUSED_MUL_ADD: VecOpTypes("复合计算/FusedMulAdd.md", _HF),
    VecOther.TRANSPOSE: VecOpTypes("数据排布转换/Transpose.md", frozenset({I8, U8, I16, U16, F16, I32, U32, F32})),
    VecOther.GATHER: VecOpTypes("离散与聚合/Gather.md", frozenset({I16, U16, F16, BF16, I32, U32, F32})),
}
# dav-3510: the Ascend 950 line of the pages; the 8-bit integers (and the 64-bit ones) of Add, Sub,
# Max, Min, Adds, Maxs, Mins take the count form only.
_950_ADD = frozenset({I16, U16, F16, BF16, I32, U32, F32})  # Add, Sub, Mul, Max, Min
_950_ADDS = frozenset({I16, F16, BF16, I32, F32})  # Adds, Muls, Maxs, Mins: no uint16
_950_B8 = frozenset({I8, U8, I64, U64})
_950_B64 = frozenset({I64, U64})
_3510_VECTOR_OPS = {
    VecBinary.ADD: VecOpTypes("基础算术/Add.md", _950_ADD, _950_B8),
    VecBinary.SUB: VecOpTypes("基础算术/Sub.md", _950_ADD, _950_B8),
    VecBinary.MUL: VecOpTypes("基础算术/Mul.md", _950_ADD, _950_B64),
    VecBinary.DIV: VecOpTypes("基础算术/Div.md", frozenset({I16, U16, F16, I32, U32, F32}), _950_B64),
    VecBinary.MAX: VecOpTypes("基础算术/Max.md", _950_ADD, _950_B8),
    VecBinary.MIN: VecOpTypes("基础算术/Min.md", _950_ADD, _950_B8),
    VecScalarOp.ADDS: VecOpTypes("基础算术/Adds.md", _950_ADDS, _950_B8),
    VecScalarOp.MULS: VecOpTypes("基础算术/Muls.md", _950_ADDS, _950_B64),
    VecScalarOp.MAXS: VecOpTypes("基础算术/Maxs.md", _950_ADDS, _950_B8),
    VecScalarOp.MINS: VecOpTypes("基础算术/Mins.md", _950_ADDS, _950_B8),
    VecUnary.EXP: VecOpTypes("基础算术/Exp.md", _HF),
    VecUnary.LN: VecOpTypes("基础算术/Ln.md", _HF),
    VecUnary.SQRT: VecOpTypes("基础算术/Sqrt.md", _HF),
    VecUnary.RSQRT: VecOpTypes("基础算术/Rsqrt.md", _HF),
    VecUnary.RECIPROCAL: VecOpTypes("基础算术/Reciprocal.md", _HF, _950_B64),
    VecUnary.ABS: VecOpTypes("基础算术/Abs.md", frozenset({I16, F16, I32, F32}), frozenset({I8, I64})),
    VecOther.DUPLICATE: VecOpTypes("数据填充/Duplicate.md", frozenset({I16, U16, F16, BF16, I32, U32, F32}),
                                   frozenset({BOOL, I8, U8, E4M3, E5M2, E8M0, I64, U64})),
    VecOther.FUSED_MUL_ADD: VecOpTypes("复合计算/FusedMulAdd.md", frozenset({F16, BF16, F32})),
    VecOther.TRANSPOSE: VecOpTypes("数据排布转换/Transpose.md", frozenset({I8, U8, I16, U16, F16, BF16, I32, U32, F32,
                                                                      E4M3, E5M2, E8M0})),
    VecOther.GATHER: VecOpTypes("离散与聚合/Gather.md", frozenset({I16, U16, F16, BF16, I32, U32, F32, I64, U64}),
                                frozenset({I8, U8})),
}

DAV_C220 = Arch(
    name="dav-c220",
    bisheng_arch="dav-2201",
    capacity={Scope.UB: 192 * KB - 8 * KB, Scope.L1: 512 * KB, Scope.L0A: 64 * KB, Scope.L0B: 64 * KB,
              Scope.L0C: 128 * KB},
    needs_vector_barrier=True,
    l0a_layout=Layout.ZZ,
    cube_dtypes=_COMMON_CUBE,
    vector_dtypes=(F16, BF16, F32, I32, I16, DType.UINT16, U8, I8, DType.BOOL),
    vector_casts=_COMMON_CASTS,
    fixpipe_dtypes=((F32, (F32, F16, BF16, I8)), (I32, (I32, F16, I8))),
    fixpipe_scaled=(((I32, F16), QuantMode.S32_TO_F16),),
    unit_flag=True,
    vector_op_dtypes=_C220_VECTOR_OPS,
)

DAV_3510 = Arch(
    name="dav-3510",
    bisheng_arch="dav-3510",
    capacity={Scope.UB: 248 * KB, Scope.L1: 512 * KB, Scope.L0A: 64 * KB, Scope.L0B: 64 * KB,
              Scope.L0C: 256 * KB},
    needs_vector_barrier=False,
    l0a_layout=Layout.NZ,
    l0c_to_ub=True,
    ub_to_l1=True,
    l0c_to_ub_dual=True,
    cross_core_mode4=True,
    load_data_v2=True,
    fixpipe_arch3510=True,
    cube_dtypes=_COMMON_CUBE + tuple((a, b, F32) for a in (E4M3, E5M2) for b in (E4M3, E5M2)),
    vector_dtypes=(F16, BF16, F32, I32, I16, DType.UINT16, U8, I8, DType.BOOL, E4M3, E5M2),
    vector_casts=_COMMON_CASTS | {(F32, E4M3), (F32, E5M2), (E4M3, F32), (E5M2, F32), (I8, I32), (I8, I16),
                                  (F16, BF16), (BF16, F16), (I4, BF16)},
    b8_transpose=True,
    fixpipe_dtypes=((F32, (F32, F16, BF16, I8, E4M3)), (I32, (I32, F16, BF16, I8))),
    fixpipe_scaled=(((I32, F16), QuantMode.S32_TO_F16), ((I32, BF16), QuantMode.S32_TO_BF16),
                    ((F32, F16), QuantMode.F32_TO_F16_SCALED), ((F32, BF16), QuantMode.F32_TO_BF16_SCALED)),
    unit_flag=True,
    mmad_mx=True,
    simt=True,
    vector_op_dtypes=_3510_VECTOR_OPS,
)

ARCHES = {a.name: a for a in (DAV_3510, DAV_C220)}
# Other spellings people use for the same chips.
ALIASES = {"dav-c310": "dav-3510", "3510": "dav-3510", "ascend950": "dav-3510", "dav-2201": "dav-c220",
           "c220": "dav-c220", "910b": "dav-c220", "ascend910b": "dav-c220"}
DEFAULT_ARCH = "dav-3510"

ALIGN = {Scope.UB: 32, Scope.L1: 32, Scope.L0A: 512, Scope.L0B: 512, Scope.L0C: 1024}


def get_arch(name: str | None) -> Arch:
    from .errors import TargetError

    key = (name or DEFAULT_ARCH).lower()
    key = ALIASES.get(key, key)
    if key not in ARCHES:
        raise TargetError(
            f"unknown Ascend arch {name!r}",
            hint=f"use one of {sorted(ARCHES)} (aliases: {sorted(ALIASES)})",
        )
    return ARCHES[key]


# SIMT limits (SIMD与SIMT混合编程简介/编程模型-140.md and 核函数配置-147.md): a thread block has at
# most 2048 threads (blockDim.x * blockDim.y * blockDim.z), a warp 32; UB keeps 8 KB reserved and a
# Data Cache of at least 32 KB beside the static and dynamic memory (else "校验报错").
SIMT_MAX_THREADS = 2048
SIMT_WARP = 32
SIMT_UB_RESERVED = 8 * KB
SIMT_DATA_CACHE_MIN = 32 * KB
