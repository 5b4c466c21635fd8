#pragma once
// emu_cube_ext.h: matrix-compute data movement beyond Load2D and the Fixpipe structs
// (pages under docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）): LoadDataWithTranspose,
// LoadData (卷积数据搬运, Load3D v2 and v2 Pro) and LoadDataWithStride with their configuration
// registers (SetFmatrix, SetLoadDataPaddingValue, SetLoadDataRepeat, SetLoadDataRepeatWithStride,
// SetLoadDataBoundary), Fill / InitConstValue, and DataCopy L0C -> GM/L1 with the Fixpipe
// registers (SetFixPipeConfig, SetFixpipeNz2ndFlag, SetFixpipePreQuantFlag).
//
// Layout rule shared by every load here (derived from the pages' figures): the destination
// is the layout Mmad reads. L0A: ZZ fractals (16 x C0, row-block major) on dav-c220, NZ
// (column-block major) on dav-3510; L0B: ZN fractals (C0 rows of K x 16 columns of N, stored
// with N major inside the fractal, K-block major between fractals).
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>
#include "emu_core.h"
#include "emu_copy.h"
#include "emu_cube.h"
#include "emu_dtypes.h"

namespace AscendC {

// ===================================================================== parameter structs
// (kernel_struct_mm.h / kernel_struct_data_copy.h: field names, order, defaults)
struct LoadData2dTransposeParams {
    LoadData2dTransposeParams() {}
    LoadData2dTransposeParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint16_t dstGapIn,
                              uint16_t dstfracGapIn, uint8_t addrModeIn)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstfracGapIn), addrMode(addrModeIn) {}
    LoadData2dTransposeParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint16_t dstGapIn,
                              uint16_t dstfracGapIn)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstfracGapIn) {}
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
};

struct LoadData2dTransposeParamsV2 {
    LoadData2dTransposeParamsV2() {}
    LoadData2dTransposeParamsV2(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint16_t dstGapIn,
                                uint16_t dstFracGapIn, uint16_t srcFracGapIn)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstFracGapIn), srcFracGap(srcFracGapIn) {}
    LoadData2dTransposeParamsV2(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint16_t dstGapIn,
                                uint16_t dstFracGapIn, uint16_t srcFracGapIn, uint8_t addrModeIn)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstFracGapIn), srcFracGap(srcFracGapIn), addrMode(addrModeIn) {}
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint16_t srcFracGap = 0;
    uint8_t addrMode = 0;
};

constexpr int32_t PAD_SIZE = 4;
struct IsResetLoad3dConfig {
    bool isSetFMatrix = true;
    bool isSetPadding = true;
};
constexpr IsResetLoad3dConfig IS_RESER_LOAD3D_DEFAULT_CONFIG = {true, true};
enum class FmatrixMode : uint8_t { FMATRIX_LEFT = 0, FMATRIX_RIGHT = 1 };

template <typename T>
struct LoadData3DParamsV2 {
    LoadData3DParamsV2() {}
    LoadData3DParamsV2(const uint8_t padListIn[PAD_SIZE], uint16_t l1HIn, uint16_t l1WIn, uint16_t channelSizeIn,
                       uint16_t kExtensionIn, uint16_t mExtensionIn, uint16_t kStartPtIn, uint16_t mStartPtIn,
                       uint8_t strideWIn, uint8_t strideHIn, uint8_t filterWIn, uint8_t filterHIn, uint8_t dilationFilterWIn,
                       uint8_t dilationFilterHIn, bool enTransposeIn, bool enSmallKIn, T padValueIn)
        : l1H(l1HIn), l1W(l1WIn), channelSize(channelSizeIn), kExtension(kExtensionIn), mExtension(mExtensionIn),
          kStartPt(kStartPtIn), mStartPt(mStartPtIn), strideW(strideWIn), strideH(strideHIn), filterW(filterWIn),
          filterH(filterHIn), dilationFilterW(dilationFilterWIn), dilationFilterH(dilationFilterHIn),
          enTranspose(enTransposeIn), enSmallK(enSmallKIn), padValue(padValueIn) {
        for (int i = 0; i < PAD_SIZE; ++i) padList[i] = padListIn[i];
    }
    LoadData3DParamsV2(const uint8_t padListIn[PAD_SIZE], uint16_t l1HIn, uint16_t l1WIn, uint16_t channelSizeIn,
                       uint16_t kExtensionIn, uint16_t mExtensionIn, uint16_t kStartPtIn, uint16_t mStartPtIn,
                       uint8_t strideWIn, uint8_t strideHIn, uint8_t filterWIn, uint8_t filterHIn, uint8_t dilationFilterWIn,
                       uint8_t dilationFilterHIn, bool enTransposeIn, bool enSmallKIn, T padValueIn, bool filterSizeWIn,
                       bool filterSizeHIn, bool fMatrixCtrlIn)
        : LoadData3DParamsV2(padListIn, l1HIn, l1WIn, channelSizeIn, kExtensionIn, mExtensionIn, kStartPtIn, mStartPtIn,
                             strideWIn, strideHIn, filterWIn, filterHIn, dilationFilterWIn, dilationFilterHIn,
                             enTransposeIn, enSmallKIn, padValueIn) {
        filterSizeW = filterSizeWIn;
        filterSizeH = filterSizeHIn;
        fMatrixCtrl = fMatrixCtrlIn;
    }
    uint8_t padList[PAD_SIZE] = {0, 0, 0, 0};
    uint16_t l1H = 0;
    uint16_t l1W = 0;
    uint16_t channelSize = 0;
    uint16_t kExtension = 0;
    uint16_t mExtension = 0;
    uint16_t kStartPt = 0;
    uint16_t mStartPt = 0;
    uint8_t strideW = 1;
    uint8_t strideH = 1;
    uint8_t filterW = 1;
    uint8_t filterH = 1;
    uint8_t dilationFilterW = 1;
    uint8_t dilationFilterH = 1;
    bool enTranspose = false;
    bool enSmallK = false;
    T padValue = T(0);
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
};

struct LoadData3DParamsV2Pro {
    LoadData3DParamsV2Pro() {}
    LoadData3DParamsV2Pro(uint16_t channelSizeIn, bool enTransposeIn, bool enSmallKIn, bool filterSizeWIn, bool filterSizeHIn,
                          bool fMatrixCtrlIn, uint64_t extConfigIn, uint64_t filterConfigIn)
        : channelSize(channelSizeIn), enTranspose(enTransposeIn), enSmallK(enSmallKIn), filterSizeW(filterSizeWIn),
          filterSizeH(filterSizeHIn), fMatrixCtrl(fMatrixCtrlIn), extConfig(extConfigIn), filterConfig(filterConfigIn) {}
    uint16_t channelSize = 0;
    bool enTranspose = false;
    bool enSmallK = false;
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
    uint64_t extConfig = 0;
    uint64_t filterConfig = 0X10101010101;
};

#if defined(EMU_ARCH_3510)
struct LoadDataRepeatParam {
    LoadDataRepeatParam() {}
    LoadDataRepeatParam(uint16_t repeatStrideIn, uint8_t repeatTimeIn, uint8_t repeatModeIn)
        : repeatStride(repeatStrideIn), repeatTime(repeatTimeIn), repeatMode(repeatModeIn) {}
    uint16_t repeatStride = 0;
    uint8_t repeatTime = 1;
    uint8_t repeatMode = 0;
    uint8_t reserved = 0;
};
struct LoadDataRepeatParamWithStride {
    LoadDataRepeatParamWithStride() {}
    LoadDataRepeatParamWithStride(uint16_t repeatStrideIn, uint8_t repeatTimeIn, uint8_t repeatModeIn, uint16_t dstStrideIn)
        : repeatStride(repeatStrideIn), repeatTime(repeatTimeIn), repeatMode(repeatModeIn), dstStride(dstStrideIn) {}
    uint16_t repeatStride = 0;
    uint8_t repeatTime = 1;
    uint8_t repeatMode = 0;
    uint16_t dstStride = 0;
};
#else
struct LoadDataRepeatParam {
    LoadDataRepeatParam() {}
    LoadDataRepeatParam(uint16_t repeatStrideIn, uint8_t repeatTimeIn, uint8_t repeatModeIn)
        : repeatStride(repeatStrideIn), repeatTime(repeatTimeIn), repeatMode(repeatModeIn) {}
    uint16_t repeatStride = 0;
    uint8_t repeatTime = 1;
    uint8_t repeatMode = 0;
    uint8_t reserved = 0;
};
struct LoadDataRepeatParamWithStride {};
#endif

template <typename T>
struct InitConstValueParams {
    InitConstValueParams() {}
    InitConstValueParams(uint16_t repeatTimesIn, uint16_t blockNumIn, uint16_t dstGapIn, T initValueIn)
        : repeatTimes(repeatTimesIn), blockNum(blockNumIn), dstGap(dstGapIn), initValue(initValueIn) {}
    InitConstValueParams(uint16_t repeatTimesIn, T initValueIn) : repeatTimes(repeatTimesIn), initValue(initValueIn) {}
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;
    uint16_t dstGap = 0;
    T initValue = T(0);
};

struct DataCopyCO12DstParams {
    DataCopyCO12DstParams() {}
    DataCopyCO12DstParams(uint16_t nSizeIn, uint16_t mSizeIn, uint32_t dstStrideIn, uint16_t srcStrideIn,
                          QuantMode_t quantPreIn, uint8_t reluPreIn, bool channelSplitIn, bool nz2ndEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), dstStride(dstStrideIn), srcStride(srcStrideIn), quantPre(quantPreIn),
          reluPre(reluPreIn), channelSplit(channelSplitIn), nz2ndEn(nz2ndEnIn) {}
    uint8_t sid = 0;
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint32_t dstStride = 0;
    uint16_t srcStride = 0;
    uint8_t unitFlag = 0;
    uint8_t clipReluPre = 0;
    uint8_t eltWiseOp = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint8_t reluPre = 0;
    bool channelSplit = false;
    bool nz2ndEn = false;
};

// ===================================================================== per-core registers
// Load3D feature-map / padding / repeat registers and the Fixpipe registers of the DataCopy
// L0C path. One emulated core = one thread, fresh for every launch.
namespace emu_detail {
struct Load3DRegs {
    uint16_t l1H[2] = {0, 0}, l1W[2] = {0, 0};
    uint8_t pad[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    uint64_t padBits = 0;                               // SetLoadDataPaddingValue (bit pattern)
    uint16_t repeatStride = 0, dstStride = 0;
    uint8_t repeatTime = 1, repeatMode = 0;
};
inline Load3DRegs& load3d_regs() {
    static thread_local Load3DRegs r;
    return r;
}
struct FixRegs {
    bool haveQuantTensor = false;
    emu::Mem qmem = emu::Mem::FB;
    uint64_t qoff = 0;
    uint32_t qcount = 0;
    uint64_t preQuant = 0;                              // SetFixpipePreQuantFlag
    uint16_t ndNum = 1, srcNdStride = 0;
    uint32_t dstNdStride = 0;                           // SetFixpipeNz2ndFlag
};
inline FixRegs& fix_regs() {
    static thread_local FixRegs r;
    return r;
}
}  // namespace emu_detail

// ===================================================================== LoadDataWithTranspose
// LoadDataWithTranspose page. Each iteration reads one square matrix from L1 and writes its
// transpose as 512-byte fractals: b16 one 16x16 fractal; b8 two 16x32 fractals stacked into a
// 32x32 square (split the same way after the transpose); b4 (int4b_t, dav-c220 L1 -> L0B only)
// four 16x64 fractals stacked into a 64x64 square (elements are nibbles, the even one low);
// b32 two 16x8 fractals side by side into a 16x16 square (split into left/right halves after
// the transpose). LoadData2dTransposeParams: iteration i reads square startIndex +/- i*srcStride
// (in squares), its first destination fractal is at i*(1 + dstGap) fractals and fractal j of
// the square a further j*(1 + dstFracGap).
// V2 (dav-3510): startIndex and srcStride count fractals, srcFracGap separates the fractals of
// one square in the source. dav-3510 supports only L1 -> L0B (b8/b16 with V2 params).
namespace emu_detail {
// fractals per square: b4 4, b8 2, b16 1, b32 2 (the page's "分形转置" list)
template <class T>
constexpr uint64_t transpose_fracs() {
    if constexpr (emu::elems_per_byte<T>::value == 2) return 4;
    else return sizeof(T) == 2 ? 1 : 2;
}
template <class T>
inline void load_transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t repeats,
                           int64_t firstFrac, int64_t stepFrac, uint64_t srcFracGap, uint64_t dstGap, uint64_t dstFracGap,
                           const char* op, const emu::Loc& loc) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "LoadDataWithTranspose: b4, b8, b16 or b32 types");
    constexpr bool b4 = emu::elems_per_byte<T>::value == 2;
    const emu::Mem dm = dst.emu_mem();
    if (src.emu_mem() != emu::Mem::L1 || (dm != emu::Mem::L0A && dm != emu::Mem::L0B))
        emu::ops::bad_path(op, src.emu_mem(), dm, loc);
    if (emu::is_3510() && dm != emu::Mem::L0B)
        emu::fail("invalid_param", std::string(op) + ": dav-3510 supports only L1 -> L0B", loc);
    if constexpr (b4) {
        // the page's data types: int4b_t only into L0B of the A2/A3 products; not on 950
        if (!std::is_same_v<T, int4b_t>)
            emu::fail("invalid_param", std::string(op) + ": 4-bit types other than int4b_t are not in the page's data types", loc);
        if (emu::is_3510())
            emu::fail("invalid_param", std::string(op) + ": int4b_t is not a dav-3510 (Ascend 950) data type of this API; "
                      "use int8_t/half/float or dav-c220", loc);
        if (dm != emu::Mem::L0B)
            emu::fail("invalid_param", std::string(op) + ": int4b_t (b4) is supported only with an L0B destination "
                      "(LoadDataWithTranspose page, constraints); load A with LoadData (2D or 3D) instead", loc);
    }
    if (repeats == 0) return;
    // C0: elements per fractal row; F: fractals per square; Q: side of the square
    constexpr uint64_t es = sizeof(T), EPB = emu::elems_per_byte<T>::value, C0 = 32 * EPB / es;
    constexpr uint64_t F = transpose_fracs<T>(), Q = es == 4 ? 16 : 16 * F, FR = 512;
    auto srcFrac = [&](uint64_t i, uint64_t j) -> int64_t { return firstFrac + (int64_t)i * stepFrac + (int64_t)(j * (1 + srcFracGap)); };
    auto dstFrac = [&](uint64_t i, uint64_t j) -> uint64_t { return i * (1 + dstGap) + j * (1 + dstFracGap); };
    emu::ops::SpanSet r, w;
    for (uint64_t i = 0; i < repeats; ++i)
        for (uint64_t j = 0; j < F; ++j) {
            int64_t sf = srcFrac(i, j);
            if (sf < 0) emu::fail("local_out_of_bounds", std::string(op) + ": the source fractal index went below 0", loc);
            r.add(src, (uint64_t)sf * FR, (uint64_t)sf * FR + FR);
        }
    for (uint64_t i = 0; i < repeats; ++i)
        for (uint64_t j = 0; j < F; ++j) w.add(dst, dstFrac(i, j) * FR, dstFrac(i, j) * FR + FR);
    emu::Cost c; c.bytes = (uint64_t)repeats * F * FR;
    emu::ops::record_sets(op, emu::Pipe::MTE1, r, w, c, loc);
    // element e of a fractal that starts at fractal index f: b4 moves nibbles, others whole T
    const uint8_t* sb = reinterpret_cast<const uint8_t*>(src.emu_ptr());
    uint8_t* db = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    using E = std::conditional_t<b4, uint8_t, T>;
    auto get = [&](uint64_t f, uint64_t e) -> E {
        if constexpr (b4) return (uint8_t)((sb[f * FR + e / 2] >> (4 * (e % 2))) & 0xF);
        else { E v; std::memcpy(&v, sb + f * FR + e * es, es); return v; }
    };
    auto put = [&](uint64_t f, uint64_t e, E v) {
        if constexpr (b4) {
            uint8_t& b = db[f * FR + e / 2];
            b = (uint8_t)((b & ~(0xF << (4 * (e % 2)))) | ((v & 0xF) << (4 * (e % 2))));
        } else {
            std::memcpy(db + f * FR + e * es, &v, es);
        }
    };
    std::vector<E> sq(Q * Q);
    for (uint64_t i = 0; i < repeats; ++i) {
        // gather the square S[Q][Q] (rows of the stacked fractals; b32: side by side)
        for (uint64_t j = 0; j < F; ++j) {
            const uint64_t f = (uint64_t)srcFrac(i, j);
            for (uint64_t rr = 0; rr < 16; ++rr)
                for (uint64_t cc = 0; cc < C0; ++cc) {
                    uint64_t R = es == 4 ? rr : j * 16 + rr, Cc = es == 4 ? j * C0 + cc : cc;
                    sq[R * Q + Cc] = get(f, rr * C0 + cc);
                }
        }
        // write the transpose, split like the source
        for (uint64_t j = 0; j < F; ++j) {
            const uint64_t f = dstFrac(i, j);
            for (uint64_t rr = 0; rr < 16; ++rr)
                for (uint64_t cc = 0; cc < C0; ++cc) {
                    uint64_t R = es == 4 ? rr : j * 16 + rr, Cc = es == 4 ? j * C0 + cc : cc;
                    put(f, rr * C0 + cc, sq[Cc * Q + R]);
                }
        }
    }
}
}  // namespace emu_detail

template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2dTransposeParams& p,
                                  const emu::Loc& loc = emu::Loc::current()) {
    // startIndex and srcStride count squares (b4: four fractals, b8/b32: two, b16: one)
    constexpr int64_t F = (int64_t)emu_detail::transpose_fracs<T>();
    const int64_t step = (p.addrMode ? -1 : 1) * (int64_t)p.srcStride * F;
    emu_detail::load_transpose(dst, src, p.repeatTimes, (int64_t)p.startIndex * F, step, 0, p.dstGap, p.dstFracGap,
                               "LoadDataWithTranspose", loc);
}
#if defined(EMU_ARCH_3510)
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2dTransposeParamsV2& p,
                                  const emu::Loc& loc = emu::Loc::current()) {
    if constexpr (sizeof(T) == 4)
        emu::fail("invalid_param", "LoadDataWithTranspose(V2): b32 types (four fractals per iteration) are not emulated", loc);
    const int64_t step = (p.addrMode ? -1 : 1) * (int64_t)p.srcStride;
    emu_detail::load_transpose(dst, src, p.repeatTimes, (int64_t)p.startIndex, step, p.srcFracGap, p.dstGap, p.dstFracGap,
                               "LoadDataWithTranspose", loc);
}
#endif

// ===================================================================== Load3D (img2col)
// LoadData (卷积数据搬运) page. The L1 source is a feature map in NC1HWC0 (N = 1): element
// (c1, h, w, c0) at ((c1*l1H + h)*l1W + w)*C0 + c0. Its image-to-column matrix X has one row
// per output position m = oh*Wout + ow and one column per k = (c1*Hk*Wk + hk*Wk + wk)*C0 + c0,
// with X(m, k) = the input at (c1, oh*strideH + hk*dilationH - padTop, ow*strideW +
// wk*dilationW - padLeft, c0), or padValue outside the map (padList = left, right, top,
// bottom; filter sizes +256 with filterSizeW/H). The region [mStartPt, +mExtension) x
// [kStartPt, +kExtension) of X goes to L0A as X (enTranspose: as X^T) in the L0A layout, or to
// L0B as the ZN matrix with X's rows as the reduction (K) dimension. dav-3510 destinations
// place K blocks dstStride fractals apart (SetLoadDataRepeatWithStride; LoadData: dense).
// Only channelSize multiples of C0 and repeatTime 1 are emulated.
namespace emu_detail {
struct Load3D {
    uint16_t l1H, l1W, channelSize, kExt, mExt, kStart, mStart;
    uint8_t pad[4];
    uint32_t strideW, strideH, filterW, filterH, dilW, dilH;
    bool transpose;
    uint64_t padBits;
    uint32_t dstStride;  // 0: dense
};

template <class T>
inline void load3d(const LocalTensor<T>& dst, const LocalTensor<T>& src, const Load3D& p, const char* op, const emu::Loc& loc) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "LoadData (3D): b4, b8, b16 or b32 types");
    constexpr bool b4 = emu::elems_per_byte<T>::value == 2;
    const emu::Mem dm = dst.emu_mem();
    if (src.emu_mem() != emu::Mem::L1 || (dm != emu::Mem::L0A && dm != emu::Mem::L0B))
        emu::ops::bad_path(op, src.emu_mem(), dm, loc);
    if constexpr (b4) {
        // LoadData_3D page, data types: int4b_t only with TPosition A1/A2 on the A2/A3 products
        // (dav-c220); not in the 950 list, and "L1 -> L0B does not take b4/b8 data"
        if (!std::is_same_v<T, int4b_t>)
            emu::fail("invalid_param", std::string(op) + ": 4-bit types other than int4b_t are not in the page's data types", loc);
        if (emu::is_3510())
            emu::fail("invalid_param", std::string(op) + ": int4b_t is not a dav-3510 (Ascend 950) data type of this API", loc);
        if (dm == emu::Mem::L0B)
            emu::fail("invalid_param", std::string(op) + ": L1 -> L0B does not take b4 (int4b_t) data on dav-c220; "
                      "use LoadDataWithTranspose for B", loc);
        // enTranspose is effective only for b16/b32 (page, constraints); what it does to b4
        // data is not documented, so it is refused rather than guessed
        if (p.transpose)
            emu::fail("invalid_param", std::string(op) + ": enTranspose with int4b_t data is not emulated (the page makes "
                      "it effective only for b16/b32 on dav-c220); set enTranspose = false", loc);
    }
    if (p.l1H == 0 || p.l1W == 0 || p.channelSize == 0 || p.kExt == 0 || p.mExt == 0 || p.filterW == 0 || p.filterH == 0)
        return;  // documented NOP
    // C0: elements per 32-byte row of a fractal (b4: 64 nibbles, the even element low)
    constexpr uint64_t es = sizeof(T), C0 = 32 * emu::elems_per_byte<T>::value / es;
    if (p.channelSize % C0)
        emu::fail("invalid_param", std::string(op) + ": channelSize " + std::to_string(p.channelSize) + " is not a multiple of " +
                  std::to_string(C0) + " (small-channel packing is not emulated)", loc);
    if (p.kStart % C0) emu::fail("invalid_param", std::string(op) + ": kStartPt must be a multiple of C0", loc);
    if (p.strideW == 0 || p.strideH == 0 || p.dilW == 0 || p.dilH == 0)
        emu::fail("invalid_param", std::string(op) + ": strides and dilations must be >= 1", loc);
    const bool toB = dm == emu::Mem::L0B;
    if (emu::is_c220()) {
        if (toB && es == 1) emu::fail("invalid_param", std::string(op) + ": L1 -> L0B does not take b8 data on dav-c220", loc);
        if (!toB && p.transpose && es == 1) emu::fail("invalid_param", std::string(op) + ": no b8 transpose on dav-c220", loc);
    }
    const bool tr = !toB && p.transpose;
    const int64_t C1 = p.channelSize / C0, fh = p.filterH, fw = p.filterW;
    const int64_t Hp = (int64_t)p.l1H + p.pad[2] + p.pad[3], Wp = (int64_t)p.l1W + p.pad[0] + p.pad[1];
    const int64_t Hout = (Hp - ((fh - 1) * p.dilH + 1)) / p.strideH + 1, Wout = (Wp - ((fw - 1) * p.dilW + 1)) / p.strideW + 1;
    if (Hout <= 0 || Wout <= 0) emu::fail("invalid_param", std::string(op) + ": the filter does not fit the padded feature map", loc);
    // elements as stored: T, or one nibble of a byte for b4
    using E = std::conditional_t<b4, uint8_t, T>;
    E padv;
    if constexpr (b4) padv = (uint8_t)(p.padBits & 0xF);
    else std::memcpy(&padv, &p.padBits, sizeof(T));
    const uint8_t* sb = reinterpret_cast<const uint8_t*>(src.emu_ptr());
    auto sget = [&](int64_t e) -> E {
        if constexpr (b4) return (uint8_t)((sb[e / 2] >> (4 * (e % 2))) & 0xF);
        else { E v; std::memcpy(&v, sb + e * (int64_t)es, es); return v; }
    };
    auto x = [&](int64_t m, int64_t k) -> E {
        if (m >= Hout * Wout) return padv;
        const int64_t oh = m / Wout, ow = m % Wout, kb = k / (int64_t)C0, c0 = k % (int64_t)C0;
        const int64_t c1 = kb / (fh * fw), kp = kb % (fh * fw), hk = kp / fw, wk = kp % fw;
        const int64_t ih = oh * p.strideH + hk * p.dilH - p.pad[2], iw = ow * p.strideW + wk * p.dilW - p.pad[0];
        if (c1 >= C1 || ih < 0 || iw < 0 || ih >= p.l1H || iw >= p.l1W) return padv;
        return sget(((c1 * p.l1H + ih) * p.l1W + iw) * (int64_t)C0 + c0);
    };
    // destination: rows/columns of Y (X, or X^T for a transposed L0A load) and the element index
    const uint64_t Ry = tr ? p.kExt : p.mExt, Cy = tr ? p.mExt : p.kExt;
    auto didx = [&](uint64_t ry, uint64_t cy) -> uint64_t {
        if (toB) {   // ZN: K = rows of X in blocks of C0, N = columns in blocks of 16
            uint64_t nb = (Cy + 15) / 16, stride = p.dstStride ? p.dstStride : nb;
            return ((ry / C0) * stride + cy / 16) * 16 * C0 + (cy % 16) * C0 + ry % C0;
        }
        if (emu::is_c220()) {  // ZZ
            uint64_t cb = (Cy + C0 - 1) / C0;
            return ((ry / 16) * cb + cy / C0) * 16 * C0 + (ry % 16) * C0 + cy % C0;
        }
        uint64_t rb = (Ry + 15) / 16, stride = p.dstStride ? p.dstStride : rb;   // NZ
        return ((cy / C0) * stride + ry / 16) * 16 * C0 + (ry % 16) * C0 + cy % C0;
    };
    emu::ops::SpanSet r, w;
    const int64_t c1lo = ((int64_t)p.kStart / (int64_t)C0) / (fh * fw);
    const int64_t c1hi = std::min<int64_t>(C1 - 1, (((int64_t)p.kStart + p.kExt - 1) / (int64_t)C0) / (fh * fw));
    for (int64_t c1 = c1lo; c1 <= c1hi; ++c1) {
        uint64_t plane = (uint64_t)p.l1H * p.l1W * 32;   // C0 elements = 32 bytes per (h, w)
        r.add(src, (uint64_t)c1 * plane, (uint64_t)(c1 + 1) * plane);
    }
    {   // destination fractals touched (whole fractals, as the hardware writes them)
        std::vector<uint64_t> fr;
        const uint64_t rstep = toB ? C0 : 16, cstep = toB ? 16 : C0;
        for (uint64_t ry = 0; ry < Ry; ry += rstep)
            for (uint64_t cy = 0; cy < Cy; cy += cstep) fr.push_back(didx(ry, cy) / (16 * C0));
        std::sort(fr.begin(), fr.end());
        fr.erase(std::unique(fr.begin(), fr.end()), fr.end());
        for (uint64_t f : fr) w.add(dst, f * 512, f * 512 + 512);
    }
    emu::Cost c; c.bytes = emu::bytes_of<T>((uint64_t)p.mExt * p.kExt);
    emu::ops::record_sets(op, emu::Pipe::MTE1, r, w, c, loc);
    std::vector<E> tmp((size_t)p.mExt * p.kExt);   // read everything first (src and dst never alias, but be safe)
    for (uint64_t m = 0; m < p.mExt; ++m)
        for (uint64_t k = 0; k < p.kExt; ++k) tmp[m * p.kExt + k] = x((int64_t)p.mStart + (int64_t)m, (int64_t)p.kStart + (int64_t)k);
    uint8_t* db = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    auto dput = [&](uint64_t e, E v) {
        if constexpr (b4) {
            uint8_t& b = db[e / 2];
            b = (uint8_t)((b & ~(0xF << (4 * (e % 2)))) | ((v & 0xF) << (4 * (e % 2))));
        } else {
            std::memcpy(db + e * es, &v, es);
        }
    };
    for (uint64_t m = 0; m < p.mExt; ++m)
        for (uint64_t k = 0; k < p.kExt; ++k) dput(tr ? didx(k, m) : didx(m, k), tmp[m * p.kExt + k]);
}

template <class U>
inline uint64_t pad_bits(U v) {
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(U) < 8 ? sizeof(U) : 8);
    return b;
}

template <const IsResetLoad3dConfig& cfg, class U>
inline Load3D from_v2(const LoadData3DParamsV2<U>& p, uint32_t dstStride) {
    Load3DRegs& g = load3d_regs();
    const int side = p.fMatrixCtrl ? 1 : 0;
    if (cfg.isSetFMatrix) {  // the parameters' feature-map description becomes the register value
        g.l1H[side] = p.l1H;
        g.l1W[side] = p.l1W;
        for (int i = 0; i < 4; ++i) g.pad[side][i] = p.padList[i];
    }
    if (cfg.isSetPadding) g.padBits = pad_bits(p.padValue);
    Load3D l{g.l1H[side], g.l1W[side], p.channelSize, p.kExtension, p.mExtension, p.kStartPt, p.mStartPt,
             {g.pad[side][0], g.pad[side][1], g.pad[side][2], g.pad[side][3]},
             p.strideW, p.strideH, (uint32_t)p.filterW + (p.filterSizeW ? 256u : 0u), (uint32_t)p.filterH + (p.filterSizeH ? 256u : 0u),
             p.dilationFilterW, p.dilationFilterH, p.enTranspose, g.padBits, dstStride};
    return l;
}
}  // namespace emu_detail

template <typename T, const IsResetLoad3dConfig& defaultConfig = IS_RESER_LOAD3D_DEFAULT_CONFIG, typename U = T,
          std::enable_if_t<std::is_same_v<T, U>, bool> = true>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2<U>& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::load3d(dst, src, emu_detail::from_v2<defaultConfig>(p, 0), "LoadData(3D)", loc);
}

template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2Pro& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    // the Pro form takes the feature map from SetFmatrix and the pad value from
    // SetLoadDataPaddingValue; extConfig / filterConfig pack the other fields (LoadData_3D page)
    emu_detail::Load3DRegs& g = emu_detail::load3d_regs();
    const int side = p.fMatrixCtrl ? 1 : 0;
    const uint64_t e = p.extConfig, f = p.filterConfig;
    emu_detail::Load3D l{g.l1H[side], g.l1W[side], p.channelSize, (uint16_t)(e & 0xffff), (uint16_t)((e >> 16) & 0xffff),
                         (uint16_t)((e >> 32) & 0xffff), (uint16_t)((e >> 48) & 0xffff),
                         {g.pad[side][0], g.pad[side][1], g.pad[side][2], g.pad[side][3]},
                         (uint32_t)(f & 0xff), (uint32_t)((f >> 8) & 0xff),
                         (uint32_t)((f >> 16) & 0xff) + (p.filterSizeW ? 256u : 0u), (uint32_t)((f >> 24) & 0xff) + (p.filterSizeH ? 256u : 0u),
                         (uint32_t)((f >> 32) & 0xff), (uint32_t)((f >> 40) & 0xff), p.enTranspose, g.padBits, 0};
    emu_detail::load3d(dst, src, l, "LoadData(3D Pro)", loc);
}

#if defined(EMU_ARCH_3510)
// LoadDataWithStride page (dav-3510): Load3D whose destination K blocks are dstStride fractals
// apart (SetLoadDataRepeatWithStride, which must be called first).
template <typename T, const IsResetLoad3dConfig& defaultConfig = IS_RESER_LOAD3D_DEFAULT_CONFIG, typename U = T,
          std::enable_if_t<std::is_same_v<T, U>, bool> = true>
inline void LoadDataWithStride(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2<U>& p,
                               const emu::Loc& loc = emu::Loc::current()) {
    const emu_detail::Load3DRegs& g = emu_detail::load3d_regs();
    if (g.repeatTime == 0) return;  // documented NOP
    if (g.repeatTime > 1)
        emu::fail("invalid_param", "LoadDataWithStride: repeatTime > 1 (repeat mode) is not emulated", loc);
    if (g.dstStride == 0)
        emu::fail("invalid_param", "LoadDataWithStride: set dstStride with SetLoadDataRepeatWithStride first (LoadDataWithStride page)", loc);
    emu_detail::load3d(dst, src, emu_detail::from_v2<defaultConfig>(p, g.dstStride), "LoadDataWithStride(3D)", loc);
}
inline void SetLoadDataRepeatWithStride(const LoadDataRepeatParamWithStride& p, const emu::Loc& loc = emu::Loc::current()) {
    emu::record("SetLoadDataRepeatWithStride", emu::Pipe::S, {}, {}, emu::Cost{}, loc);
    emu_detail::Load3DRegs& g = emu_detail::load3d_regs();
    g.repeatStride = p.repeatStride;
    g.repeatTime = p.repeatTime;
    g.repeatMode = p.repeatMode;
    g.dstStride = p.dstStride;
}
#endif

template <typename T>
inline void SetLoadDataPaddingValue(const T padValue) {
    emu_detail::load3d_regs().padBits = emu_detail::pad_bits(padValue);
}
inline void SetFmatrix(uint16_t l1H, uint16_t l1W, const uint8_t padList[4], const FmatrixMode& fmatrixMode) {
    emu_detail::Load3DRegs& g = emu_detail::load3d_regs();
    const int side = fmatrixMode == FmatrixMode::FMATRIX_RIGHT ? 1 : 0;
    g.l1H[side] = l1H;
    g.l1W[side] = l1W;
    for (int i = 0; i < 4; ++i) g.pad[side][i] = padList[i];
}
inline void SetLoadDataBoundary(uint32_t) {}
inline void SetLoadDataRepeat(const LoadDataRepeatParam& p, const emu::Loc& loc = emu::Loc::current()) {
    if (p.repeatTime > 1) emu::fail("invalid_param", "SetLoadDataRepeat: repeatTime > 1 (Load3D repeat mode) is not emulated", loc);
    emu_detail::Load3DRegs& g = emu_detail::load3d_regs();
    g.repeatStride = p.repeatStride;
    g.repeatTime = p.repeatTime;
    g.repeatMode = p.repeatMode;
}

// ===================================================================== Fill / InitConstValue
// Fill page: repeatTimes iterations, each fills blockNum 32-byte blocks (L0A/L0B: 512-byte
// fractals) with initValue, iterations dstGap units apart (gap after each iteration);
// repeatTimes 0 or blockNum 0 (e.g. the two-argument constructor) is a NOP on these chips.
// Destinations: L1 (pipe MTE2), L0A/L0B (pipe MTE1; not on dav-3510, which fills L1 only).
namespace emu_detail {
template <class T, class U>
inline void fill_impl(const LocalTensor<T>& dst, const InitConstValueParams<U>& p, const char* op, const emu::Loc& loc) {
    const emu::Mem m = dst.emu_mem();
    if (m != emu::Mem::L1 && (emu::is_3510() || (m != emu::Mem::L0A && m != emu::Mem::L0B)))
        emu::fail("invalid_param", std::string(op) + (emu::is_3510() ? ": the destination must be in L1 on dav-3510"
                                                                    : ": the destination must be in L1, L0A or L0B"), loc);
    if (p.repeatTimes == 0 || p.blockNum == 0) return;
    const uint64_t unit = m == emu::Mem::L1 ? 32 : 512;
    const uint64_t len = (uint64_t)p.blockNum * unit, pitch = len + (uint64_t)p.dstGap * unit;
    emu::ops::SpanSet w, r;
    for (uint64_t i = 0; i < p.repeatTimes; ++i) w.add(dst, i * pitch, i * pitch + len);
    emu::Cost c; c.bytes = (uint64_t)p.repeatTimes * len;
    emu::ops::record_sets(op, m == emu::Mem::L1 ? emu::Pipe::MTE2 : emu::Pipe::MTE1, r, w, c, loc);
    T v = T(p.initValue);
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    for (uint64_t i = 0; i < p.repeatTimes; ++i)
        for (uint64_t e = 0; e < len / sizeof(T); ++e) std::memcpy(d + i * pitch + e * sizeof(T), &v, sizeof(T));
}
}  // namespace emu_detail
template <typename T, typename U = T, std::enable_if_t<std::is_same_v<T, U>, bool> = true>
inline void Fill(const LocalTensor<T>& dst, const InitConstValueParams<U>& p, const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::fill_impl(dst, p, "Fill", loc);
}
template <typename T, typename U = T, std::enable_if_t<std::is_same_v<T, U>, bool> = true>
inline void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<U>& p,
                           const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::fill_impl(dst, p, "InitConstValue", loc);
}

// ===================================================================== DataCopy L0C -> GM / L1
// DataCopy (L0C到GM数据搬运) page: the Fixpipe element semantics, configured by registers.
// SetFixpipePreQuantFlag: the scalar quant word; SetFixPipeConfig: the quant tensor (one word
// per column) in the Fixpipe buffer; SetFixpipeNz2ndFlag: ndNum / srcNdStride (1024-byte units
// on dav-c220, C0_SIZE on dav-3510) / dstNdStride (elements) for nz2ndEn.
template <typename T>
inline void SetFixPipeConfig(const LocalTensor<T>& reluPre, const LocalTensor<T>& quantPre, bool isUnitFlag = false,
                             const emu::Loc& loc = emu::Loc::current()) {
    static_assert(std::is_same_v<T, uint64_t>, "SetFixPipeConfig: the tensors hold uint64_t words");
    (void)reluPre;
    if (isUnitFlag) emu::unit_flag_reset(loc);
    emu_detail::FixRegs& g = emu_detail::fix_regs();
    g.haveQuantTensor = true;
    g.qmem = quantPre.emu_mem();
    g.qoff = quantPre.emu_offset();
    g.qcount = quantPre.GetSize();
}
template <typename T, bool setRelu = false>
inline void SetFixPipeConfig(const LocalTensor<T>& preData, bool isUnitFlag = false,
                             const emu::Loc& loc = emu::Loc::current()) {
    static_assert(!setRelu, "SetFixPipeConfig: setRelu = true (a ReLU tensor) is not supported (page: only quant tensors)");
    // An L0C tensor: with isUnitFlag = true every L0C block's unit flag goes to 0 (SetFixPipeConfig
    // page, isUnitFlag); nothing else is configured.
    if (preData.emu_mem() == emu::Mem::L0C) {
        if (isUnitFlag) emu::unit_flag_reset(loc);
        return;
    }
    if constexpr (!std::is_same_v<T, uint64_t>) {
        emu::fail("invalid_param", "SetFixPipeConfig: a quant tensor in L1/FB holds uint64_t words", loc);
    } else {
        emu_detail::FixRegs& g = emu_detail::fix_regs();
        g.haveQuantTensor = true;
        g.qmem = preData.emu_mem();
        g.qoff = preData.emu_offset();
        g.qcount = preData.GetSize();
    }
}
inline void SetFixpipePreQuantFlag(uint64_t config) { emu_detail::fix_regs().preQuant = config; }
inline void SetFixpipeNz2ndFlag(uint16_t ndNum, uint16_t srcNdStride, uint32_t dstNdStride) {
    emu_detail::FixRegs& g = emu_detail::fix_regs();
    g.ndNum = ndNum;
    g.srcNdStride = srcNdStride;
    g.dstNdStride = dstNdStride;
}

namespace emu_detail {
inline bool vector_quant(QuantMode_t q) {
    switch (q) {
        case QuantMode_t::VDEQF16: case QuantMode_t::VQF322B8_PRE: case QuantMode_t::VREQ8: case QuantMode_t::VQF322FP8_PRE:
        case QuantMode_t::VQF322HIF8_PRE: case QuantMode_t::VQF322HIF8_PRE_HYBRID: case QuantMode_t::VQS322BF16_PRE:
        case QuantMode_t::VQF322F16_PRE: case QuantMode_t::VQF322BF16_PRE: case QuantMode_t::VQF322F32_PRE: return true;
        default: return false;
    }
}
template <class T, class U, class DstT>
inline void datacopy_l0c(const DstT& dst, const LocalTensor<U>& src, const DataCopyCO12DstParams& p, const emu::Loc& loc) {
    const FixRegs& g = fix_regs();
    LocalTensor<uint64_t> qt;
    const LocalTensor<uint64_t>* qp = nullptr;
    if (vector_quant(p.quantPre)) {
        if (!g.haveQuantTensor)
            emu::fail("invalid_param", "DataCopy L0C: a tensor quant mode needs SetFixPipeConfig(quant tensor) first", loc);
        qt = LocalTensor<uint64_t>(g.qmem, (uint32_t)g.qoff, g.qcount, TPosition::C2PIPE2GM);
        qp = &qt;
    }
    uint32_t nd = 1;
    uint64_t sb = 0, de = 0;
    if (p.nz2ndEn) {
        nd = g.ndNum;
        sb = emu::is_c220() ? (uint64_t)g.srcNdStride * 1024 : (uint64_t)g.srcNdStride * 16 * sizeof(U);
        de = g.dstNdStride;
    }
    fixpipe_common<T>(dst, src, p.nz2ndEn ? CO2Layout::ROW_MAJOR : CO2Layout::NZ, p.mSize, p.nSize, p.srcStride, p.dstStride,
                      nd, sb, de, p.reluPre == 1, p.quantPre, g.preQuant, loc, qp, p.channelSplit, p.unitFlag);
}
}  // namespace emu_detail

template <typename T, typename U>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyCO12DstParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::datacopy_l0c<T>(dst, src, p, loc);
}
template <typename T, typename U>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyCO12DstParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    if (dst.emu_mem() != emu::Mem::L1) emu::ops::bad_path("DataCopy (L0C)", src.emu_mem(), dst.emu_mem(), loc);
    emu_detail::datacopy_l0c<T>(dst, src, p, loc);
}

// ===================================================================== MX (dav-3510)
// LoadData_2D_MX and MmadMx pages. The quant-scale buffers L0A_MX / L0B_MX (4 KB each) sit at
// the L0A / L0B address / 16. LoadData with LoadData2DMxParams moves the data like
// LoadData2DParamsV2 and the scales in 32-byte fractals (16 rows x 2 fp8_e8m0_t): source unit
// (xStartPosition + x) * srcStride + yStartPosition + y -> destination unit x * dstStride + y.
// MmadMx: C = (scaleA (x) A) * (scaleB (x) B) (+ bias), each scale shared by 32 consecutive K
// elements; A NZ in L0A, B ZN in L0B (fp8_e4m3fn_t / fp8_e5m2_t, or two fp4 per byte for
// fp4x2_e2m1_t / fp4x2_e1m2_t: element 2i in the low nibble, assumed); the scale of row r
// (m of A, n of B) and K group g at byte ((r/16) * ceil(k/64) + g/2) * 32 + (r%16) * 2 + g%2 of
// the MX buffer. Products and sums in float (sum order: k).
#if defined(EMU_ARCH_3510)
struct LoadData2DMxParams {
    LoadData2DMxParams() {}
    LoadData2DMxParams(const uint16_t xStartPositionIn, const uint16_t yStartPositionIn, const uint8_t xStepIn,
                       const uint8_t yStepIn, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
        : xStartPosition(xStartPositionIn), yStartPosition(yStartPositionIn), xStep(xStepIn), yStep(yStepIn),
          srcStride(srcStrideIn), dstStride(dstStrideIn) {}
    uint16_t xStartPosition = 0;
    uint16_t yStartPosition = 0;
    uint8_t xStep = 0;
    uint8_t yStep = 0;
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
};
namespace emu_detail {
constexpr uint64_t kMxBytes = 4096;
inline uint8_t* mx_buffer(emu::Mem m) {
    static thread_local uint8_t a[kMxBytes], b[kMxBytes];
    return m == emu::Mem::L0A ? a : b;
}
template <class T> constexpr bool is_fp4x2 = std::is_same_v<T, fp4x2_e2m1_t> || std::is_same_v<T, fp4x2_e1m2_t>;
template <class T> constexpr bool mx_type = is_fp4x2<T> || std::is_same_v<T, fp8_e4m3fn_t> || std::is_same_v<T, fp8_e5m2_t>;
// value of element e (an fp4 index for fp4x2 types) of a byte array
template <class T>
inline float mx_value(const uint8_t* base, uint64_t e) {
    if constexpr (std::is_same_v<T, fp8_e4m3fn_t>) return emu::from_minifloat<4, 3, 7, true>(base[e]);
    else if constexpr (std::is_same_v<T, fp8_e5m2_t>) return emu::from_minifloat<5, 2, 15, false>(base[e]);
    else {
        uint8_t nib = (base[e / 2] >> (4 * (e % 2))) & 0xf;
        uint8_t c = (uint8_t)(((nib & 8) << 4) | (nib & 7));
        if constexpr (std::is_same_v<T, fp4x2_e2m1_t>) return emu::from_minifloat<2, 1, 1, true>(c);
        else return emu::from_minifloat<1, 2, 1, true>(c);
    }
}
}  // namespace emu_detail

template <typename T, typename U>
inline void LoadData(const LocalTensor<U>& dst, const LocalTensor<T>& src, const LocalTensor<fp8_e8m0_t>& srcMx,
                     const LoadData2DParamsV2& loadDataParams, const LoadData2DMxParams& mx,
                     const emu::Loc& loc = emu::Loc::current()) {
    static_assert(std::is_same_v<T, U> && emu_detail::mx_type<T>,
                  "LoadData (MX): src and dst types are one of fp4x2_e2m1_t, fp4x2_e1m2_t, fp8_e4m3fn_t, fp8_e5m2_t");
    const emu::Mem dm = dst.emu_mem();
    if (srcMx.emu_mem() != emu::Mem::L1 || (dm != emu::Mem::L0A && dm != emu::Mem::L0B))
        emu::ops::bad_path("LoadData (MX)", srcMx.emu_mem(), dm, loc);
    LoadData(dst, src, loadDataParams, loc);
    if (mx.xStep == 0 || mx.yStep == 0) return;   // documented NOP
    emu::ops::SpanSet r, w;
    for (uint64_t x = 0; x < mx.xStep; ++x) {
        uint64_t su = ((uint64_t)mx.xStartPosition + x) * mx.srcStride + mx.yStartPosition;
        r.add(srcMx, su * 32, (su + mx.yStep) * 32);
    }
    emu::Cost c; c.bytes = (uint64_t)mx.xStep * mx.yStep * 32;
    emu::ops::record_sets("LoadData (MX scales)", emu::Pipe::MTE1, r, w, c, loc);
    const uint64_t base = dst.emu_offset() / 16;
    uint8_t* d = emu_detail::mx_buffer(dm);
    const uint8_t* sp = reinterpret_cast<const uint8_t*>(srcMx.emu_ptr());
    for (uint64_t x = 0; x < mx.xStep; ++x)
        for (uint64_t y = 0; y < mx.yStep; ++y) {
            uint64_t su = ((uint64_t)mx.xStartPosition + x) * mx.srcStride + mx.yStartPosition + y;
            uint64_t du = base + (x * mx.dstStride + y) * 32;
            if (du + 32 > emu_detail::kMxBytes)
                emu::fail("local_out_of_bounds", "LoadData (MX): the scale destination exceeds the 4 KB L0A_MX/L0B_MX buffer", loc);
            std::memcpy(d + du, sp + su * 32, 32);
        }
}

namespace emu_detail {
template <class T, class U, class S, class B>
inline void mmad_mx(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter, const LocalTensor<B>* bias,
                    const MmadParams& p, const emu::Loc& loc) {
    static_assert(std::is_same_v<T, float> && mx_type<U> && mx_type<S> && is_fp4x2<U> == is_fp4x2<S>,
                  "MmadMx: float result from fp8 x fp8 or fp4x2 x fp4x2 operands");
    if (dst.emu_mem() != emu::Mem::L0C || fm.emu_mem() != emu::Mem::L0A || filter.emu_mem() != emu::Mem::L0B)
        emu::fail("invalid_param", "MmadMx: operands must be in L0C, L0A, L0B", loc);
    LocalTensor<B> btBias;
    if (!bias && p.cmatrixSource && !p.cmatrixInitVal) {
        btBias = LocalTensor<B>(emu::Mem::BT, 0, p.n, TPosition::C2);
        bias = &btBias;
    }
    static_assert(std::is_same_v<B, float>, "MmadMx: the bias is float (MmadMx page, table 3)");
    if (p.m == 0 || p.n == 0 || p.k == 0) return;
    // MmadMx page, constraints: K a multiple of 64; A and B at 1024-byte addresses for fp8
    // (512 for fp4, which L0A/L0B's own alignment already gives)
    if (p.k % 64 != 0) emu::fail("invalid_param", "MmadMx: K = " + std::to_string(p.k) + " is not a multiple of 64", loc);
    if (!is_fp4x2<U> && (fm.emu_offset() % 1024 != 0 || filter.emu_offset() % 1024 != 0))
        emu::fail("invalid_param", "MmadMx: fp8 A and B must start at 1024-byte aligned L0A/L0B addresses", loc);
    constexpr uint64_t EPB = is_fp4x2<U> ? 2 : 1;          // elements per byte
    constexpr uint64_t KC0 = 32 * EPB;                      // K elements per fractal row
    const uint64_t Mb = (p.m + 15) / 16, Nb = (p.n + 15) / 16, Kb = (p.k + KC0 - 1) / KC0, K64 = (p.k + 63) / 64;
    emu::ops::SpanSet r, w;
    r.add(fm, 0, Mb * Kb * 512);
    r.add(filter, 0, Kb * Nb * 512);
    if (bias) r.add(*bias, 0, (uint64_t)p.n * sizeof(B));
    const uint64_t cbytes = Mb * Nb * 256 * sizeof(T);
    const bool acc = !bias && !p.cmatrixInitVal;
    if (acc) r.add(dst, 0, cbytes);
    w.add(dst, 0, cbytes);
    emu::Cost c; c.macs = (uint64_t)p.m * p.n * p.k; c.repeats = (uint32_t)(Mb * Nb);
    c.elems = p.k; c.bytes = (uint64_t)p.k / EPB;
    // unitFlag (UnitFlag page; MmadMx takes Mmad's MmadParams): as for Mmad
    emu::unit_flag_pre(true, p.unitFlag, w.v.data(), w.v.size(), loc);
    emu::ops::record_sets("MmadMx", emu::Pipe::M, r, w, c, loc);
    emu::unit_flag_post(true, p.unitFlag, w.v.data(), w.v.size(), loc);
    const uint8_t* a = reinterpret_cast<const uint8_t*>(fm.emu_ptr());
    const uint8_t* b = reinterpret_cast<const uint8_t*>(filter.emu_ptr());
    const uint8_t* sa = mx_buffer(emu::Mem::L0A) + fm.emu_offset() / 16;
    const uint8_t* sb = mx_buffer(emu::Mem::L0B) + filter.emu_offset() / 16;
    if (fm.emu_offset() / 16 + Mb * K64 * 32 > kMxBytes || filter.emu_offset() / 16 + Nb * K64 * 32 > kMxBytes)
        emu::fail("local_out_of_bounds", "MmadMx: the scales lie beyond the 4 KB L0A_MX/L0B_MX buffer", loc);
    auto scale = [&](const uint8_t* s, uint64_t row, uint64_t g) {
        return (float)fp8_e8m0_t::from_bits(s[((row / 16) * K64 + g / 2) * 32 + (row % 16) * 2 + g % 2]);
    };
    // Each operand element times its scale, once (row-major [m][k] / [n][k]); then the sums.
    thread_local std::vector<float> as, bs;
    as.resize(p.m * p.k);
    bs.resize(p.n * p.k);
    for (uint64_t m = 0; m < p.m; ++m)
        for (uint64_t k = 0; k < p.k; ++k)  // L0A NZ: fractal (k / KC0, m / 16)
            as[m * p.k + k] = mx_value<U>(a, (((k / KC0) * Mb + m / 16) * 16 + m % 16) * KC0 + k % KC0) * scale(sa, m, k / 32);
    for (uint64_t n = 0; n < p.n; ++n)
        for (uint64_t k = 0; k < p.k; ++k)  // L0B ZN: fractal (k / KC0, n / 16), n-major inside
            bs[n * p.k + k] = mx_value<S>(b, (((k / KC0) * Nb + n / 16) * 16 + n % 16) * KC0 + k % KC0) * scale(sb, n, k / 32);
    float* cp = dst.emu_ptr();
    for (uint64_t m = 0; m < p.m; ++m)
        for (uint64_t n = 0; n < p.n; ++n) {
            const uint64_t ci = ((n / 16) * Mb + m / 16) * 256 + (m % 16) * 16 + n % 16;
            float v = bias ? (float)bias->emu_ptr()[n] : (acc ? cp[ci] : 0.0f);
            const float* ar = &as[m * p.k];
            const float* br = &bs[n * p.k];
            for (uint64_t k = 0; k < p.k; ++k) v += ar[k] * br[k];
            cp[ci] = v;
        }
}
}  // namespace emu_detail
template <typename T, typename U, typename S>
inline void MmadMx(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter, const MmadParams& p,
                   const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::mmad_mx<T, U, S, T>(dst, fm, filter, nullptr, p, loc);
}
template <typename T, typename U, typename S, typename V>
inline void MmadMx(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter, const LocalTensor<V>& bias,
                   const MmadParams& p, const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::mmad_mx<T, U, S, V>(dst, fm, filter, &bias, p, loc);
}
#endif

// ===================================================================== 4:2 sparse matmul (dav-c220)
// LoadDataWithSparse / MmadWithSparse pages and the 4选2稀疏索引矩阵 section of 辅助矩阵分形格式详解.md.
// B is the densified K/2 x N int8 matrix (two values kept of every 4 K values), ZN in L0B; each
// of its elements has a 2-bit index at the same position of a 128-byte index fractal (Zn, four
// indices per byte, the first in the lowest bits). LoadDataWithSparse moves repeatTimes B
// fractals (512 B) and their index fractals (128 B) from startIndex on, consecutively (the page's
// figure; the official example passes srcStride 0), B to L0B and the indices to the Cube's
// index buffer (a quarter of L0B, mirroring it: the index of L0B byte o is entry o).
// MmadWithSparse: for K group g (A columns 4g..4g+3) and column n, dense value 2g pairs with
// A column 4g + idx0 and dense value 2g+1 with 4g + max(idx0, 1 + idx1) (the selection table:
// idx0 places the first kept value among elements 0..2, idx1 the second among 1..3).
#if defined(EMU_ARCH_C220)
namespace emu_detail {
inline uint8_t* sparse_index_buffer() {
    thread_local uint8_t buf[64 * 1024 / 4] = {};
    return buf;
}
}  // namespace emu_detail

template <typename T, typename U>
inline void LoadDataWithSparse(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<U>& idx,
                               const LoadData2DParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(std::is_same_v<T, int8_t> && std::is_same_v<U, uint8_t>,
                  "LoadDataWithSparse: dst/src are int8_t, idx is uint8_t");
    if (dst.emu_mem() != emu::Mem::L0B || src.emu_mem() != emu::Mem::L1 || idx.emu_mem() != emu::Mem::L1)
        emu::fail("invalid_param", "LoadDataWithSparse: L1 (B and its index) -> L0B only", loc);
    if (p.repeatTimes == 0) return;
    if (dst.emu_offset() % 512) emu::fail("invalid_param", "LoadDataWithSparse: the L0B address must be 512-byte aligned", loc);
    const uint64_t n = p.repeatTimes, s0 = p.startIndex;
    emu::ops::SpanSet r, w;
    r.add(src, s0 * 512, (s0 + n) * 512);
    r.add(idx, s0 * 128, (s0 + n) * 128);
    w.add(dst, 0, n * 512);
    emu::Cost c; c.bytes = n * (512 + 128);
    emu::ops::record_sets("LoadDataWithSparse", emu::Pipe::MTE1, r, w, c, loc);
    std::memmove(reinterpret_cast<uint8_t*>(dst.emu_ptr()), reinterpret_cast<const uint8_t*>(src.emu_ptr()) + s0 * 512, n * 512);
    std::memmove(emu_detail::sparse_index_buffer() + dst.emu_offset() / 4,
                 reinterpret_cast<const uint8_t*>(idx.emu_ptr()) + s0 * 128, n * 128);
}

template <typename T, typename U>
inline void MmadWithSparse(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<U>& filter,
                           const MmadParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(std::is_same_v<T, int32_t> && std::is_same_v<U, int8_t>, "MmadWithSparse: int8_t x int8_t -> int32_t");
    if (dst.emu_mem() != emu::Mem::L0C || fm.emu_mem() != emu::Mem::L0A || filter.emu_mem() != emu::Mem::L0B)
        emu::fail("invalid_param", "MmadWithSparse: operands must be in L0C, L0A, L0B", loc);
    if (p.m == 0 || p.n == 0 || p.k == 0) return;
    if (p.k % 4) emu::fail("invalid_param", "MmadWithSparse: k must be a multiple of 4 (groups of 4 K values)", loc);
    if (p.cmatrixSource && !p.cmatrixInitVal)
        emu::fail("invalid_param", "MmadWithSparse: C from BT (cmatrixSource) is not emulated", loc);
    const uint64_t Mb = (p.m + 15) / 16, Nb = (p.n + 15) / 16, Kb = (p.k + 31) / 32, Kd = p.k / 2, Kdb = (Kd + 31) / 32;
    const bool acc = !p.cmatrixInitVal || p.isBias;
    emu::ops::SpanSet r, w;
    r.add(fm, 0, Mb * Kb * 512);
    r.add(filter, 0, Kdb * Nb * 512);
    if (acc) r.add(dst, 0, Mb * Nb * 1024);
    w.add(dst, 0, Mb * Nb * 1024);
    emu::Cost c; c.macs = (uint64_t)p.m * p.n * Kd; c.repeats = (uint32_t)(Mb * Nb); c.elems = Kd; c.bytes = Kd;
    emu::ops::record_sets("MmadWithSparse", emu::Pipe::M, r, w, c, loc);
    const int8_t* a = fm.emu_ptr();
    const int8_t* b = filter.emu_ptr();
    const uint8_t* ix = emu_detail::sparse_index_buffer() + filter.emu_offset() / 4;
    int32_t* cc = dst.emu_ptr();
    auto a_at = [&](uint64_t i, uint64_t k) { return (int32_t)a[((i / 16) * Kb + k / 32) * 512 + (i % 16) * 32 + k % 32]; };
    auto b_off = [&](uint64_t kd, uint64_t j) { return ((kd / 32) * Nb + j / 16) * 512 + (j % 16) * 32 + kd % 32; };
    for (uint64_t j = 0; j < Nb * 16; ++j)
        for (uint64_t i = 0; i < Mb * 16; ++i) {
            int32_t& out = cc[((j / 16) * Mb + i / 16) * 256 + (i % 16) * 16 + j % 16];
            int64_t sum = acc ? out : 0;
            if (i < p.m && j < p.n)
                for (uint64_t g = 0; g < (uint64_t)p.k / 4; ++g) {
                    const uint64_t o0 = b_off(2 * g, j), o1 = b_off(2 * g + 1, j);
                    const uint32_t i0 = (ix[o0 / 4] >> (2 * (o0 % 4))) & 3u, i1 = (ix[o1 / 4] >> (2 * (o1 % 4))) & 3u;
                    const uint32_t s1 = i0 > 1 + i1 ? i0 : 1 + i1;
                    sum += a_at(i, 4 * g + i0) * (int32_t)b[o0] + a_at(i, 4 * g + s1) * (int32_t)b[o1];
                }
            out = (int32_t)sum;
        }
}
#endif

// ===================================================================== Mmad configuration
// SetHF32Mode / SetHF32TransMode / SetMMRowMajor / SetMMColumnMajor pages: HF32 (reduced
// float32 inputs) and the compute order are accepted; the emulator computes float32 Mmad in
// full precision and in one order (documented gap).
enum class HF32Mode { ENABLE, DISABLE };
enum class HF32TransMode { NEAREST_ZERO, NEAREST_EVEN };
inline void SetHF32Mode(HF32Mode) {}
inline void SetHF32Mode(bool) {}
inline void SetHF32TransMode(HF32TransMode) {}
inline void SetHF32TransMode(bool) {}
inline void SetMMRowMajor() {}
inline void SetMMColumnMajor() {}
inline void SetMMLayoutTransform(bool) {}

}  // namespace AscendC
