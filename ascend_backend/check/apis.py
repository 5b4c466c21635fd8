"""What the checker knows about the Ascend C API: pipes, events, automatic syncs, parameter
structs, and the bytes each data-movement/compute call touches.

Facts from the official pages (docs/zh/api/SIMD-API/基础API/...):
- SetFlag/WaitFlag (同步控制/核内同步/SetFlag-WaitFlag(ISASI).md): event ids 0-7 on A2/A3 and
  950; ids 6 and 7 are reserved by convention (6 system, 7 TPipe automatic sync); a second Set
  of one (event, id) before its Wait is undefined behaviour; Set and Wait must pair exactly.
- PipeBarrier (…/PipeBarrier(ISASI).md): orders one pipe; PIPE_S is not supported; MTE2/MTE3
  copies with overlapping destinations need PipeBarrier<PIPE_MTE2/MTE3> between them.
- CrossCoreSetFlag/CrossCoreWaitFlag (同步控制/核间同步/…): modes 0, 1, 2 (and 4 on 950 only);
  flag ids 0-15 for modes 0-2 (the low 4 bits are taken), mode 4 ids 0-10 (the AIC also 16-26);
  PIPE_S and PIPE_ALL are not allowed for modes 0-2, PIPE_ALL not for mode 4; SyncAll uses ids
  11-14.
- Automatic sync (同步控制/核内同步/关键特性说明.md): with --cce-auto-sync=on bisheng inserts
  PIPE_V <-> PIPE_V (2201 only; on 3510 the hardware orders V) and, on the Vector core,
  V/MTE2/MTE3 <-> S syncs; nothing on the Cube core. The TPipe/TQue framework orders a queue's
  producer and consumer at EnQue/DeQue and FreeTensor/AllocTensor.
"""

from __future__ import annotations

from .values import merge_intervals, strided

PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")
CORE_PIPES = {"AIC": {"S", "M", "MTE1", "MTE2", "MTE3", "FIX"}, "AIV": {"S", "V", "MTE2", "MTE3"}}
ALL_PIPES = frozenset(PIPES)


def event_pipes(name: str) -> tuple[str, str] | None:
    """'MTE2_V' -> ('MTE2', 'V'); None if not SRC_DST of known pipes."""
    for src in PIPES:
        if name.startswith(src + "_") and name[len(src) + 1:] in PIPES:
            return src, name[len(src) + 1:]
    return None


def pipe_of(name: str) -> str | None:
    """'PIPE_MTE2' -> 'MTE2', 'PIPE_ALL' -> 'ALL'."""
    if name.startswith("PIPE_"):
        p = name[5:]
        if p in PIPES or p == "ALL":
            return p
    return None


def auto_sync_covers(arch: str, core: str, p1: str, p2: str) -> bool:
    """Whether bisheng's --cce-auto-sync=on orders op on p1 before a dependent op on p2."""
    if core != "AIV":
        return False
    if p1 == p2 == "V":
        return arch == "dav-c220"
    return (p1 == "S" and p2 in ("V", "MTE2", "MTE3")) or (p2 == "S" and p1 in ("V", "MTE2", "MTE3"))


def pipe_in_order(arch: str, pipe: str) -> bool:
    """Whether the hardware runs dependent ops of one pipe in program order (V on 2201 does not)."""
    return not (pipe == "V" and arch == "dav-c220")


# Producer and consumer pipe of a TQue by position (the framework's EnQue/DeQue and
# FreeTensor/AllocTensor syncs, as the emulator models them).
QUEUE_PIPES = {
    "VECIN": ("MTE2", "V"), "VECOUT": ("V", "MTE3"), "A1": ("MTE2", "MTE1"), "B1": ("MTE2", "MTE1"),
    "C1": ("MTE2", "MTE1"), "A2": ("MTE1", "M"), "B2": ("MTE1", "M"), "CO1": ("M", "FIX"),
    "CO2": ("FIX", "V"),
}


def queue_pipes(src_pos: str, dst_pos: str | None = None) -> tuple[str, str] | None:
    if dst_pos is None or dst_pos == src_pos:
        return QUEUE_PIPES.get(src_pos)
    a, b = QUEUE_PIPES.get(src_pos), QUEUE_PIPES.get(dst_pos)
    if a and b:
        return a[0], b[1]
    return a or b


# ---------------------------------------------------------------------------------------------
# Parameter structs: positional constructor order and defaults
# ---------------------------------------------------------------------------------------------
STRUCT_FIELDS = {
    "DataCopyParams": ["blockCount", "blockLen", "srcStride", "dstStride"],
    "DataCopyExtParams": ["blockCount", "blockLen", "srcStride", "dstStride", "rsv"],
    "DataCopyPadParams": ["isPad", "leftPadding", "rightPadding", "paddingValue"],
    "DataCopyPadExtParams": ["isPad", "leftPadding", "rightPadding", "paddingValue"],
    "Nd2NzParams": ["ndNum", "nValue", "dValue", "srcNdMatrixStride", "srcDValue", "dstNzC0Stride",
                    "dstNzNStride", "dstNzMatrixStride"],
    "Dn2NzParams": ["dnNum", "nValue", "dValue", "srcDnMatrixStride", "srcDValue", "dstNzC0Stride",
                    "dstNzNStride", "dstNzMatrixStride"],
    "LoadData2DMxParams": ["xStartPosition", "yStartPosition", "xStep", "yStep", "srcStride", "dstStride"],
    "LoadData2DParams": ["startIndex", "repeatTimes", "srcStride", "sid", "dstGap", "ifTranspose", "addrMode"],
    "LoadData2DParamsV2": ["mStartPosition", "kStartPosition", "mStep", "kStep", "srcStride", "dstStride",
                           "ifTranspose", "sid"],
    "MmadParams": ["m", "n", "k", "unitFlag", "cmatrixSource", "cmatrixInitVal"],
    "FixpipeParamsV220": ["nSize", "mSize", "srcStride", "dstStride", "reluEn", "quantPre", "deqScalar",
                          "ndNum", "srcNdStride", "dstNdStride", "unitFlag"],
    "FixpipeParamsArch3510": ["nSize", "mSize", "srcStride", "dstStride"],
    "BinaryRepeatParams": ["dstBlkStride", "src0BlkStride", "src1BlkStride", "dstRepStride", "src0RepStride",
                           "src1RepStride"],
    "UnaryRepeatParams": ["dstBlkStride", "srcBlkStride", "dstRepStride", "srcRepStride", "halfBlock"],
    "BrcbRepeatParams": ["dstBlkStride", "dstRepStride"],
}
_MMAD8 = ["m", "n", "k", "isBias", "fmOffset", "enSsparse", "enWinogradA", "enWinogradB"]
STRUCT_DEFAULTS = {
    "DataCopyParams": {"blockCount": 1, "blockLen": 0, "srcStride": 0, "dstStride": 0},
    "DataCopyExtParams": {"blockCount": 1, "blockLen": 0, "srcStride": 0, "dstStride": 0, "rsv": 0},
    "DataCopyPadParams": {"isPad": False, "leftPadding": 0, "rightPadding": 0, "paddingValue": 0},
    "DataCopyPadExtParams": {"isPad": False, "leftPadding": 0, "rightPadding": 0, "paddingValue": 0},
    "Nd2NzParams": dict.fromkeys(STRUCT_FIELDS["Nd2NzParams"], 0),
    "Dn2NzParams": dict.fromkeys(STRUCT_FIELDS["Dn2NzParams"], 0),
    "LoadData2DMxParams": dict.fromkeys(STRUCT_FIELDS["LoadData2DMxParams"], 0),
    "LoadData2DParams": dict.fromkeys(STRUCT_FIELDS["LoadData2DParams"], 0),
    "LoadData2DParamsV2": dict.fromkeys(STRUCT_FIELDS["LoadData2DParamsV2"], 0),
    "MmadParams": {"m": 0, "n": 0, "k": 0, "unitFlag": 0, "cmatrixSource": False, "cmatrixInitVal": True,
                   "isBias": False},
    "FixpipeParamsV220": {"nSize": 0, "mSize": 0, "srcStride": 0, "dstStride": 0, "ndNum": 1, "unitFlag": 0},
    "FixpipeParamsArch3510": {"nSize": 0, "mSize": 0, "srcStride": 0, "dstStride": 0, "unitFlag": 0},
    "BinaryRepeatParams": {"dstBlkStride": 1, "src0BlkStride": 1, "src1BlkStride": 1, "dstRepStride": 8,
                           "src0RepStride": 8, "src1RepStride": 8},
    "UnaryRepeatParams": {"dstBlkStride": 1, "srcBlkStride": 1, "dstRepStride": 8, "srcRepStride": 8},
    "BrcbRepeatParams": {"dstBlkStride": 1, "dstRepStride": 8},
}
FIELD_ALIASES = {"srcGap": "srcStride", "dstGap_": "dstGap"}


def struct_fields(type_name: str, nargs: int) -> list[str] | None:
    if type_name == "MmadParams" and nargs > 6:
        return _MMAD8
    if type_name == "DataCopyParams" and nargs > 4:
        return None
    return STRUCT_FIELDS.get(type_name)


# ---------------------------------------------------------------------------------------------
# Data movement: pipe by (source memory, destination memory)
# ---------------------------------------------------------------------------------------------


def copy_pipe(src: str, dst: str, arch: str) -> str | None:
    """Pipe of DataCopy/DataCopyPad from memory ``src`` to ``dst`` (None: not a path)."""
    if src == "GM" and dst in ("UB", "L1", "L0A", "L0B"):
        return "MTE2"
    if src in ("UB", "L1") and dst == "GM":
        return "MTE3"
    if src == "UB" and dst == "UB":
        return "V"
    if src == "UB" and dst == "L1":
        return "MTE3"
    if src == "L1" and dst == "UB":
        return "MTE1"
    if src == "L1" and dst in ("L0A", "L0B", "BT"):
        return "MTE1"
    if src == "L1" and dst == "FB":
        return "FIX"
    if src == "L0C":
        return "FIX"
    if src == "UB" and dst == "L0C":
        return "V"
    return None


# Calls that set configuration registers and touch no buffer (nothing to order).
CONFIG_CALLS = {
    "SetVectorMask", "SetMaskCount", "SetMaskNorm", "ResetMask", "SetAtomicAdd", "SetAtomicMax",
    "SetAtomicMin", "SetAtomicNone", "DisableDmaAtomic", "SetAtomicType", "SetFixPipeConfig",
    "SetFixpipeNz2ndFlag", "SetFixpipePreQuantFlag", "SetFmatrix", "SetLoadDataPaddingValue",
    "SetLoadDataBoundary", "SetLoadDataRepeat", "SetPadValue", "SetCtrlSpr", "ResetCtrlSpr", "SetFlagValue",
    "SetSysWorkspace", "SetSyncBaseAddr", "InitSocState", "KERNEL_TASK_TYPE_DEFAULT", "KERNEL_TASK_TYPE",
    "SetDeqScale", "SetLoopModePara", "ResetLoopModePara", "SetHF32Mode", "SetHF32TransMode", "SetMMLayoutTransform",
    "DataSyncBarrier", "ascendc_assert", "ASSERT", "assert", "printf", "PRINTF", "DumpTensor", "DumpAccChkPoint",
    "trap", "SetCmpMask", "SetKernelMode", "SetL2CacheHint", "ICachePreLoad", "SetNextTaskStart",
    "WaitPreTaskEnd", "SetMaskCountValue",
}
# Calls that drain every pipe before and after their own work (their implementation starts and ends
# with PipeBarrier<PIPE_ALL>: the deterministic-computation helpers).
BARRIER_CALLS = {"InitDetermineComputeWorkspace", "WaitPreBlock", "NotifyNextBlock"}
# Scalar helpers whose results the checker treats as unknown but stable within a run.
PURE_UNKNOWN = {"GetBlockIdx", "GetBlockNum", "GetTaskRation", "GetSubBlockNum", "GetUBSizeInBytes",
                "GetSysWorkSpacePtr", "GetUserWorkspace", "GetCurrentBlockIdx"}
# Compute calls on the Cube pipe.
CUBE_CALLS = {"Mmad", "MmadMx", "MmadWithSparse", "Gemm"}
LOAD_CALLS = {"LoadData", "LoadDataWithTranspose", "LoadDataWithSparse", "LoadDataUnzip", "LoadData3DV2",
              "LoadData3DV1", "LoadImageToLocal", "LoadDataMx"}
COPY_CALLS = {"DataCopy", "DataCopyPad", "Copy", "DataCopyTrans"}
FIX_CALLS = {"Fixpipe"}
# Vector calls that write more than their first tensor argument (argument indices).
VECTOR_WRITES = {
    "ReduceMax": (0, 2), "ReduceMin": (0, 2), "ReduceSum": (0, 2), "Interleave": (0, 1), "DeInterleave": (0, 1),
    "Sort": (0, 3), "GatherMask": (0,), "Transpose": (0, 2), "TransDataTo5HD": (0,),
}
# Vector calls that read but write nothing (S-pipe helpers and the like are handled apart).
SCALAR_READS = {"GetValue"}
# Vector calls whose first tensor is read, not written.
VECTOR_READ_ONLY = {"SetCmpMask"}
# Calls that read a tensor on the S pipe and return a value.
S_PIPE_CALLS = {"GetReduceRepeatMaxMinSpr", "GetReduceRepeatSumSpr", "GetMrgSortResult", "GetCmpMask"}

# ---------------------------------------------------------------------------------------------
# Footprints
# ---------------------------------------------------------------------------------------------


def fp_count(n: int, e: int) -> tuple:
    return ((0, n * e),) if n > 0 else ()


def fp_repeat(mask: int | None, repeat: int, blk: int, rep: int, e: int) -> tuple | None:
    """Mask/repeat form: ``repeat`` repeats of up to 8 32-byte blocks (mask = elements per repeat)."""
    if repeat <= 0:
        return ()
    per_blk = 32 // e if e and e <= 32 else 0
    if per_blk <= 0:
        return None
    m = min(mask, 8 * per_blk) if mask is not None else 8 * per_blk
    if m <= 0:
        return ()
    nb = -(-m // per_blk)
    iv = []
    for r in range(repeat):
        for j in range(nb):
            lo = r * rep * 32 + j * blk * 32
            nbytes = min(per_blk, m - j * per_blk) * e
            iv.append((lo, lo + nbytes))
            if len(iv) > 8192:
                return None
    return merge_intervals(iv)


def fp_brcb_dst(repeat: int, blk: int, rep: int) -> tuple:
    iv = []
    for r in range(repeat):
        for j in range(8):
            b = r * rep + j * blk
            iv.append((b * 32, b * 32 + 32))
    return merge_intervals(iv)


def fp_nd2nz_dst(p: dict, e: int) -> tuple | None:
    """NZ destination of an Nd2Nz copy: per nd matrix, ceil(d / C0) column blocks of n rows."""
    try:
        nd, n, d = int(p["ndNum"]), int(p["nValue"]), int(p["dValue"])
        c0s, ns, ms = int(p["dstNzC0Stride"]), int(p["dstNzNStride"]), int(p["dstNzMatrixStride"])
    except (TypeError, ValueError, KeyError):
        return None
    c0 = 32 // e if e else 0
    if c0 <= 0 or n <= 0 or d <= 0:
        return ()
    iv = []
    for k in range(max(nd, 1)):
        base = k * ms * e
        for j in range(-(-d // c0)):
            col = base + j * c0s * 32
            iv.extend(strided(n, 32, max(ns, 1) * 32, col))
            if len(iv) > 8192:
                return None
    return merge_intervals(iv)


def fp_nd2nz_src(p: dict, e: int) -> tuple | None:
    try:
        nd, n, d = int(p["ndNum"]), int(p["nValue"]), int(p["dValue"])
        sd, sm = int(p["srcDValue"]), int(p["srcNdMatrixStride"])
    except (TypeError, ValueError, KeyError):
        return None
    iv = []
    for k in range(max(nd, 1)):
        iv.extend(strided(n, d * e, sd * e, k * sm * e))
    return merge_intervals(iv)


def fp_load_mx_scales(p: dict) -> tuple | None:
    """The L1 scale bytes LoadData reads with LoadData2DMxParams (LoadData_2D_MX page): xStep rows
    of yStep 32-byte fractals, from fractal (xStartPosition * srcStride + yStartPosition)."""
    try:
        x0, y0, xs, ys, ss = (int(p[k]) for k in ("xStartPosition", "yStartPosition", "xStep", "yStep", "srcStride"))
    except (TypeError, ValueError, KeyError):
        return None
    if xs <= 0 or ys <= 0:
        return ()
    return merge_intervals(strided(xs, ys * 32, ss * 32, (x0 * ss + y0) * 32))


def _as_nd2nz(p: dict) -> dict:
    """Dn2Nz's fields under Nd2Nz's names: its NZ output (the transpose of a DN source) is laid out
    like an Nd2Nz of nValue rows and dValue columns (DataCopy GMToL1 DN2NZ page)."""
    return {"ndNum": p.get("dnNum"), "nValue": p.get("nValue"), "dValue": p.get("dValue"),
            "dstNzC0Stride": p.get("dstNzC0Stride"), "dstNzNStride": p.get("dstNzNStride"),
            "dstNzMatrixStride": p.get("dstNzMatrixStride")}


def fp_dn2nz_dst(p: dict, e: int) -> tuple | None:
    """NZ destination of a Dn2Nz copy: the transposed source, as Nd2Nz writes nValue x dValue."""
    return fp_nd2nz_dst(_as_nd2nz(p), e)


def fp_dn2nz_src(p: dict, e: int) -> tuple | None:
    """DN source of a Dn2Nz copy: per matrix, dValue rows of nValue contiguous elements."""
    try:
        dn, n, d = int(p["dnNum"]), int(p["nValue"]), int(p["dValue"])
        sd, sm = int(p["srcDValue"]), int(p["srcDnMatrixStride"])
    except (TypeError, ValueError, KeyError):
        return None
    iv = []
    for k in range(max(dn, 1)):
        iv.extend(strided(d, n * e, sd * e, k * sm * e))
    return merge_intervals(iv)


def fp_copy_params(p: dict, side: str, ext: bool, e: int, src_mem: str, dst_mem: str,
                   pad: dict | None = None) -> tuple | None:
    """DataCopy(…, DataCopyParams) / DataCopyPad(…, DataCopyExtParams): ``side`` 'src' or 'dst'.

    DataCopyParams: blockLen and the gaps in 32-byte blocks. DataCopyExtParams: blockLen in
    bytes; a GM-side gap in bytes, a local-side gap in 32-byte blocks; a local row is padded to
    32 bytes (plus left/right padding elements of the pad parameters on GM -> UB)."""
    try:
        cnt, ln = int(p["blockCount"]), int(p["blockLen"])
        gap = int(p["srcStride"] if side == "src" else p["dstStride"])
    except (TypeError, ValueError, KeyError):
        return None
    mem = src_mem if side == "src" else dst_mem
    if not ext:
        row = ln * 32
        return strided(cnt, row, row + gap * 32)
    if mem == "GM":
        return strided(cnt, ln, ln + gap)
    extra = 0
    if pad and side == "dst":
        try:
            extra = (int(pad.get("leftPadding", 0)) + int(pad.get("rightPadding", 0))) * e
        except (TypeError, ValueError):
            extra = 0
    row = -(-(ln + extra) // 32) * 32
    return strided(cnt, row, row + gap * 32)


def fp_load2d(p: dict, side: str) -> tuple | None:
    """LoadData2DParams: fractal i read from (startIndex + i*srcStride), written at i*(1 + dstGap)."""
    try:
        rep, start, ss, gap = int(p["repeatTimes"]), int(p["startIndex"]), int(p["srcStride"]), int(p["dstGap"])
    except (TypeError, ValueError, KeyError):
        return None
    if side == "dst":
        return merge_intervals([(i * (1 + gap) * 512, i * (1 + gap) * 512 + 512) for i in range(rep)])
    return merge_intervals([((start + i * ss) * 512, (start + i * ss) * 512 + 512) for i in range(rep)])


def fp_load2d_v2(p: dict, e: int) -> tuple[tuple | None, tuple | None]:
    """LoadData2DParamsV2 (dav-3510): an mStep x kStep block of fractals (512 bytes each); the
    source fractal (m, k) is at k * srcStride + m (from the start positions), the destination at
    k * dstStride + m (transposed: the roles of the two counts swap, in C0-wide blocks)."""
    try:
        ms, ks, m0, k0 = int(p["mStep"]), int(p["kStep"]), int(p["mStartPosition"]), int(p["kStartPosition"])
        ss, ds, tr = int(p["srcStride"]), int(p["dstStride"]), bool(p["ifTranspose"])
    except (TypeError, ValueError, KeyError):
        return None, None
    if ms <= 0 or ks <= 0 or ms * ks > 8192:
        return (), ()
    src = merge_intervals([(((k0 + k) * ss + m0 + m) * 512, ((k0 + k) * ss + m0 + m) * 512 + 512)
                           for k in range(ks) for m in range(ms)])
    if not tr:
        dst = merge_intervals([((k * ds + m) * 512, (k * ds + m) * 512 + 512) for k in range(ks) for m in range(ms)])
    else:
        c0 = 32 // e if e else 16
        na, nb = -(-16 * ms // c0), -(-c0 * ks // 16)
        dst = merge_intervals([((a * ds + b) * 512, (a * ds + b) * 512 + 512) for a in range(na) for b in range(nb)])
    return src, dst


def ceil_to(x: int, a: int) -> int:
    return -(-x // a) * a


def fp_mmad(p: dict, ea: int, eb: int, ec: int) -> tuple | None:
    try:
        m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
    except (TypeError, ValueError, KeyError):
        return None
    ca, cb = 32 // ea if ea else 16, 32 // eb if eb else 16
    fa = ((0, ceil_to(m, 16) * ceil_to(k, ca) * ea),)
    fb = ((0, ceil_to(k, cb) * ceil_to(n, 16) * eb),)
    fc = ((0, ceil_to(m, 16) * ceil_to(n, 16) * ec),)
    return fa, fb, fc


def fp_fixpipe_src(p: dict, e: int) -> tuple | None:
    """L0C (NZ) source of a Fixpipe: in each of the ceil(nSize / 16) column blocks (srcStride rows
    of 16 elements apart), mSize rows of 16 elements from the view's start."""
    try:
        n, m, ss = int(p["nSize"]), int(p["mSize"]), int(p["srcStride"])
    except (TypeError, ValueError, KeyError):
        return None
    if n <= 0 or m <= 0 or ss <= 0:
        return None
    return strided(-(-n // 16), m * 16 * e, ss * 16 * e)


def fp_fixpipe_dst_rows(p: dict, e: int) -> tuple | None:
    try:
        n, m, ds = int(p["nSize"]), int(p["mSize"]), int(p["dstStride"])
    except (TypeError, ValueError, KeyError):
        return None
    return strided(m, n * e, ds * e)
