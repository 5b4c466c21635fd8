#pragma once
// emu_cube.h: Mmad and Fixpipe. The heavy loops live in src/emu_ops.cpp (compiled once);
// this header holds the documented parameter structs, the checks and the span recording.
#include <string>
#include <vector>
#include <type_traits>
#include "emu_types.h"
#include "emu_copy.h"

namespace emu::impl {
// C (+)= A x B on fractal layouts. a: L0A (NZ when a_nz, ZZ otherwise), b: L0B (ZN),
// c: L0C NZ with 16x16 fractals and row-block stride ceil(m/16). k is the valid depth.
void mmad(void* c, DT ct, const void* a, const void* b, DT abt, uint32_t m, uint32_t n, uint32_t k,
          bool a_nz, bool init);
// The general form (Mmad page): a_layout 0 ZZ (fractal (mb, kb) at mb*a_kb + kb), 1 NZ
// (kb*ceil(m/16) + mb), 2 ND (GEMV, m == 1: k contiguous elements); init 0 zero, 1 accumulate,
// 2 bias (C row = bias[0..n)); row0_only: GEMV writes row 0 of each output fractal only.
struct MmadArgs {
    void* c; DT ct; const void* a; const void* b; DT abt;
    uint32_t m, n, k;
    int a_layout; uint32_t a_kb;
    int init; const void* bias; DT bt;
    bool row0_only;
    DT bbt = DT::OTHER;      // B's element type when it differs from A's (fp8 pairings)
};
void mmad2(const MmadArgs& a);
// Fixpipe element loop. layout: 0 NZ, 1 ND (row major), 2 DN (column major).
struct FixArgs {
    void* dst; DT dt; const void* src; DT st;
    uint32_t m, n;           // mSize, nSize
    uint64_t srcStride;      // L0C: distance of 16-column blocks, in 16-element rows
    uint64_t dstStride;      // ND/DN: elements per dst row/column; NZ: 32-byte blocks
    int layout;
    uint32_t ndNum; uint64_t srcNdBytes, dstNdElems;
    bool relu; int quant; uint64_t deqScalar;
    const uint64_t* qvec = nullptr;  // tensor quantization: one quant word per output column
    bool arch3510 = false;           // quant word layout of dav-3510 (no shift/MCB fields)
    bool channelSplit = false;       // NZ float output in 16x8 fractals
    uint8_t f8mode = 1;              // emu::F8Mode of fp8 / hifloat8 outputs (from the CTRL register)
};
// Column placement of an NZ Fixpipe output (NZ2NZ page, Int8 Channel Merge and F32 Channel
// Split pages): columns go in blocks of 16; 1-byte outputs merge pairs of blocks into 32-wide
// ones (when n/16 is odd the last 16 columns stay a block of their own); channelSplit cuts
// float outputs into blocks of 8. Block b starts at b * dstStride 32-byte units; inside it,
// row i holds `width` consecutive elements.
struct NzCol { uint32_t block, within, width; };
inline NzCol nz_col(uint32_t j, uint32_t n, uint32_t dsz, bool split) {
    if (split) return {j / 8, j % 8, 8};
    if (dsz == 1) {
        const uint32_t merged = ((n + 15) / 16 % 2) ? (n + 15) / 16 * 16 - 16 : (n + 15) / 16 * 16;
        if (j < merged) return {j / 32, j % 32, 32};
        return {merged / 32 + (j - merged) / 16, (j - merged) % 16, 16};
    }
    return {j / 16, j % 16, 16};
}
// returns an error message (empty on success)
const char* fixpipe(const FixArgs& a);
}  // namespace emu::impl

namespace AscendC {

struct MmadParams {
    MmadParams() {}
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, bool isBiasIn, int32_t fmOffsetIn, bool enSsparseIn,
               bool enWinogradAIn, bool enWinogradBIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn) {}
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, uint8_t unitFlagIn, bool cmatrixSourceIn, bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn), cmatrixInitVal(cmatrixInitValIn) {}
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
#if defined(EMU_ARCH_3510)
    bool disableGemv = false;
#endif
};

enum class QuantMode_t : uint8_t {
    NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8,
    // dav-3510 only (Fixpipe page)
    QF322FP8_PRE, VQF322FP8_PRE, QF322HIF8_PRE, VQF322HIF8_PRE, QF322HIF8_PRE_HYBRID, VQF322HIF8_PRE_HYBRID,
    QS322BF16_PRE, VQS322BF16_PRE, QF322F16_PRE, VQF322F16_PRE, QF322BF16_PRE, VQF322BF16_PRE, QF322F32_PRE,
    VQF322F32_PRE,
};
enum class ClipReluMode { NOCLIP_RELU = 0, CLIP_RELU = 1 };
enum class ReluMode { NO_RELU = 0, NORMAL_RELU = 1, SCALAR_RELU = 2, VECTOR_RELU = 3 };

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };

struct FixpipeConfig {
    CO2Layout format;
    bool isToUB = false;
    constexpr FixpipeConfig(CO2Layout f) : format(f), isToUB(false) {}
    constexpr FixpipeConfig(CO2Layout f, bool toUB) : format(f), isToUB(toUB) {}
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ, false};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR, false};
constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR, false};
#if defined(EMU_ARCH_3510)
// Convenience configs for the L0C -> UB path (not names from the devkit).
constexpr FixpipeConfig EMU_CFG_NZ_UB = {CO2Layout::NZ, true};
constexpr FixpipeConfig EMU_CFG_ROW_MAJOR_UB = {CO2Layout::ROW_MAJOR, true};
#endif

// Declared on both arches (as the official headers do); the 950 Fixpipe page accepts it
// beside FixpipeParamsArch3510.
struct FixpipeParamsV220 {
    FixpipeParamsV220() {}
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn,
                      QuantMode_t quantPreIn, int64_t deqScalarIn, uint16_t ndNumIn, uint16_t srcNdStrideIn,
                      uint16_t dstNdStrideIn, uint8_t unitFlagIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
          deqScalar((uint64_t)deqScalarIn), ndNum(ndNumIn), srcNdStride(srcNdStrideIn), dstNdStride(dstNdStrideIn),
          reluEn(reluEnIn), unitFlag(unitFlagIn) {}
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn,
                      QuantMode_t quantPreIn, int64_t deqScalarIn, uint16_t ndNumIn, uint16_t srcNdStrideIn,
                      uint16_t dstNdStrideIn, uint8_t unitFlagIn, bool isChannelSplitIn)
        : FixpipeParamsV220(nSizeIn, mSizeIn, srcStrideIn, dstStrideIn, reluEnIn, quantPreIn, deqScalarIn, ndNumIn,
                            srcNdStrideIn, dstNdStrideIn, unitFlagIn) { isChannelSplit = isChannelSplitIn; }
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
};

#if defined(EMU_ARCH_3510)
struct Nz2NdParams {
    Nz2NdParams() {}
    Nz2NdParams(uint16_t ndNumIn, uint16_t srcNdStrideIn, uint32_t dstNdStrideIn)
        : ndNum(ndNumIn), srcNdStride(srcNdStrideIn), dstNdStride(dstNdStrideIn) {}
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint32_t dstNdStride = 0;
};
struct Nz2DnParams {
    Nz2DnParams() {}
    Nz2DnParams(uint16_t dnNumIn, uint16_t srcNzMatrixStrideIn, uint32_t dstDnMatrixStrideIn, uint16_t srcNzC0StrideIn)
        : dnNum(dnNumIn), srcNzMatrixStride(srcNzMatrixStrideIn), dstDnMatrixStride(dstDnMatrixStrideIn),
          srcNzC0Stride(srcNzC0StrideIn) {}
    uint16_t dnNum = 1;
    uint16_t srcNzMatrixStride = 0;
    uint32_t dstDnMatrixStride = 0;
    uint16_t srcNzC0Stride = 0;
};
template <CO2Layout format> struct TransformParams { using PARAMS = uint8_t; };
template <> struct TransformParams<CO2Layout::ROW_MAJOR> { using PARAMS = Nz2NdParams; };
template <> struct TransformParams<CO2Layout::COLUMN_MAJOR> { using PARAMS = Nz2DnParams; };

template <CO2Layout format = CO2Layout::ROW_MAJOR>
struct FixpipeParamsArch3510 {
    FixpipeParamsArch3510() {}
    FixpipeParamsArch3510(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
    ReluMode preReluMode = ReluMode::NO_RELU;
    ClipReluMode preClipReluMode = ClipReluMode::NOCLIP_RELU;
    uint64_t reluScalar = 0;
    uint64_t vectorRelu = 0;
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    uint8_t dualDstCtl = 0;
    bool subBlockId = false;
    typename TransformParams<format>::PARAMS params{};
    bool isChannelSplit = false;
};
template <CO2Layout format = CO2Layout::ROW_MAJOR>
struct FixpipeParamsC310 : FixpipeParamsArch3510<format> {
    FixpipeParamsC310() {}
    FixpipeParamsC310(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn)
        : FixpipeParamsArch3510<format>(nSizeIn, mSizeIn, srcStrideIn, dstStrideIn) {}
};
#endif

// ---------------------------------------------------------------- Mmad
namespace emu_detail {
template <class T> constexpr bool mm_fp8 = std::is_same_v<T, fp8_e4m3fn_t> || std::is_same_v<T, fp8_e5m2_t>;
// Mmad page, tables 5-8: the (fm, filter, dst) type combinations per arch.
template <class C, class A, class B>
inline void check_mmad_types(const emu::Loc& loc) {
    constexpr bool common =
        (std::is_same_v<A, B> && std::is_same_v<C, float> &&
         (std::is_same_v<A, half> || std::is_same_v<A, bfloat16_t> || std::is_same_v<A, float>)) ||
        (std::is_same_v<A, int8_t> && std::is_same_v<B, int8_t> && std::is_same_v<C, int32_t>);
    // int4b_t x int4b_t -> int32_t: dav-c220 only (Mmad page, table 7).
    constexpr bool int4 = std::is_same_v<A, int4b_t> && std::is_same_v<B, int4b_t> && std::is_same_v<C, int32_t>;
    constexpr bool eight = mm_fp8<A> || mm_fp8<B> || std::is_same_v<A, hifloat8_t> || std::is_same_v<B, hifloat8_t>;
#if defined(EMU_ARCH_3510)
    constexpr bool ok = common || (std::is_same_v<C, float> && ((mm_fp8<A> && mm_fp8<B>) ||
                                                               (std::is_same_v<A, hifloat8_t> && std::is_same_v<B, hifloat8_t>)));
    static_assert(ok, "Mmad (dav-3510, Mmad page table 5): the types are int8_t x int8_t -> int32_t; half, bfloat16_t "
                      "or float (A and B alike) -> float; fp8_e4m3fn_t / fp8_e5m2_t in any pairing -> float; "
                      "hifloat8_t x hifloat8_t -> float");
#else
    static_assert(!eight, "Mmad: fp8_e4m3fn_t / fp8_e5m2_t / hifloat8_t operands exist only on dav-3510 (Ascend 950); "
                          "the dav-c220 table of the Mmad page (table 7) has none");
    static_assert(eight || common || int4, "Mmad (dav-c220, Mmad page table 7): the types are int8_t x int8_t -> int32_t; "
                                   "int4b_t x int4b_t -> int32_t; "
                                   "half, bfloat16_t or float (A and B alike) -> float");
#endif
    (void)loc;
}
// int4b_t operands (Mmad page, table 7: dav-c220, no bias tensor): fractals of 16 x 64 nibbles
// (512 bytes; element 2i in the low nibble of byte i, as the Cast page packs int4b_t). Each
// is unpacked into the two int8 fractals (16 x 32) covering the same 64 K values, so the int8
// inner loop does the products (exact in int32). L0A ZZ: fractal (mb, kb) at mb*kb_n + kb;
// L0B ZN: fractal (kb, nb) at kb*Nb + nb, element (k, n) at n*C0 + k.
inline int8_t nibble(const uint8_t* p, uint64_t i) {
    const int v = (p[i / 2] >> (4 * (i % 2))) & 0xF;
    return (int8_t)(v >= 8 ? v - 16 : v);
}
inline void int4_a_to_int8(const uint8_t* a, int8_t* out, uint64_t Mb, uint64_t a_kb, uint64_t Kb) {
    for (uint64_t mb = 0; mb < Mb; ++mb)
        for (uint64_t kb = 0; kb < Kb; ++kb)
            for (uint64_t h = 0; h < 2; ++h)
                for (uint64_t r = 0; r < 16; ++r)
                    for (uint64_t c = 0; c < 32; ++c)
                        out[((mb * 2 * Kb + 2 * kb + h) * 16 + r) * 32 + c] = nibble(a, ((mb * a_kb + kb) * 16 + r) * 64 + 32 * h + c);
}
inline void int4_b_to_int8(const uint8_t* b, int8_t* out, uint64_t Kb, uint64_t Nb) {
    for (uint64_t kb = 0; kb < Kb; ++kb)
        for (uint64_t h = 0; h < 2; ++h)
            for (uint64_t nb = 0; nb < Nb; ++nb)
                for (uint64_t n = 0; n < 16; ++n)
                    for (uint64_t k = 0; k < 32; ++k)
                        out[(((2 * kb + h) * Nb + nb) * 16 + n) * 32 + k] = nibble(b, ((kb * Nb + nb) * 16 + n) * 64 + 32 * h + k);
}
}  // namespace emu_detail

// C (+)= A x B. L0A holds A [m, k] as ZZ fractals (dav-c220) or NZ fractals (dav-3510),
// 16 x C0 each; L0B holds B [k, n] as ZN fractals (C0 x 16, stored n-major); L0C receives
// C [m, n] as NZ 16x16 fractals with ceil(m/16) row blocks per column block. fp16/bf16/fp32
// accumulate in fp32, int8 in int32. Initial C (Mmad page): cmatrixInitVal = true zeroes it;
// false accumulates (isBias = true too, the deprecated form); the bias overload starts every
// row from bias[0..n) in BT. m == 1 is GEMV: L0A holds k contiguous elements (ND) and only row
// 0 of each output fractal is written (dav-3510: unless disableGemv). kDirectionAlign (float,
// dav-c220): the ZZ rows of L0A hold ceil(k/16)*16 elements.
namespace emu_detail {
template <class T, class U, class S, class B = T>
inline void mmad_impl(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                      const LocalTensor<B>* bias, const MmadParams& p, const emu::Loc& loc) {
    check_mmad_types<T, U, S>(loc);
    if (dst.emu_mem() != emu::Mem::L0C || fm.emu_mem() != emu::Mem::L0A || filter.emu_mem() != emu::Mem::L0B)
        emu::fail("invalid_param", "Mmad: operands must be in L0C, L0A, L0B", loc);
    if (bias && bias->emu_mem() != emu::Mem::BT) emu::fail("invalid_param", "Mmad: the bias tensor must be in BT (TPosition::C2)", loc);
    // cmatrixSource without a bias tensor: the initial C comes from BT (the page names no
    // address; taken at BT offset 0, where the examples place the bias: assumed)
    LocalTensor<B> btBias;
    if (!bias && p.cmatrixSource && !p.cmatrixInitVal) {
        btBias = LocalTensor<B>(emu::Mem::BT, 0, p.n, TPosition::C2);
        bias = &btBias;
    }
    if (p.m == 0 || p.n == 0 || p.k == 0) return;
    constexpr bool int4 = std::is_same_v<U, int4b_t>;
    constexpr uint64_t C0 = emu::C0<U> * emu::elems_per_byte<U>::value;
    bool gemv = p.m == 1;
#if defined(EMU_ARCH_3510)
    if (p.disableGemv) gemv = false;
#endif
    uint64_t Mb = (p.m + 15) / 16, Nb = (p.n + 15) / 16, Kb = (p.k + C0 - 1) / C0;
    uint64_t akb = Kb;
    if (emu::is_c220() && p.kDirectionAlign && std::is_same_v<U, float>) akb = (p.k + 15) / 16 * 2;
    emu::ops::SpanSet r, w;
    if (gemv) r.add(fm, 0, ((uint64_t)p.k * sizeof(U) + 31) / 32 * 32);
    else r.add(fm, 0, emu::is_c220() ? ((Mb - 1) * akb + Kb) * 512 : Mb * Kb * 512);
    r.add(filter, 0, Kb * Nb * 512);
    if (bias) r.add(*bias, 0, (uint64_t)p.n * sizeof(B));
    uint64_t cbytes = Mb * Nb * 256 * sizeof(T);
    const bool acc = !bias && (!p.cmatrixInitVal || p.isBias);
    if (acc) r.add(dst, 0, cbytes);
    w.add(dst, 0, cbytes);
    // timing model: output fractals, depth and operand width (docs/emulator-internals.md, Cost)
    emu::Cost c; c.macs = (uint64_t)p.m * p.n * p.k; c.repeats = (uint32_t)(Mb * Nb);
    c.elems = p.k; c.bytes = emu::bytes_of<U>(p.k);
    emu::ops::record_sets("Mmad", emu::Pipe::M, r, w, c, loc);
    const void* pa = fm.emu_ptr();
    const void* pb = filter.emu_ptr();
    emu::DT abt = emu::dt_of<U>();
    if constexpr (int4) {
        if (gemv) emu::fail("invalid_param", "Mmad: GEMV (m = 1) with int4b_t operands is not emulated", loc);
        thread_local std::vector<int8_t> a8, b8;
        a8.assign(Mb * 2 * Kb * 512, 0);
        b8.assign(2 * Kb * Nb * 512, 0);
        int4_a_to_int8(reinterpret_cast<const uint8_t*>(pa), a8.data(), Mb, akb, Kb);
        int4_b_to_int8(reinterpret_cast<const uint8_t*>(pb), b8.data(), Kb, Nb);
        pa = a8.data();
        pb = b8.data();
        abt = emu::DT::S8;
        akb = 2 * Kb;
    }
    emu::impl::MmadArgs a{dst.emu_ptr(), emu::dt_of<T>(), pa, pb, abt, p.m, p.n, p.k,
                          gemv ? 2 : (emu::is_3510() ? 1 : 0), (uint32_t)akb, bias ? 2 : (acc ? 1 : 0),
                          bias ? (const void*)bias->emu_ptr() : nullptr, bias ? emu::dt_of<B>() : emu::DT::OTHER, gemv,
                          emu::dt_of<S>()};
    // CTRL[45] (SetCtrlSpr page, 950): fp8_e4m3fn_t x fp8_e4m3fn_t computed as hifloat8_t x hifloat8_t
    if (emu::is_3510() && a.abt == emu::DT::E4M3 && a.bbt == emu::DT::E4M3 && ((emu::ctrl_get() >> 45) & 1u))
        a.abt = a.bbt = emu::DT::HIF8;
    emu::impl::mmad2(a);
}
}  // namespace emu_detail

template <typename T, typename U, typename S>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                 const MmadParams& p, const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::mmad_impl<T, U, S, T>(dst, fm, filter, nullptr, p, loc);
}
template <typename T, typename U, typename S, typename V>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                 const LocalTensor<V>& bias, const MmadParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(std::is_same_v<V, T>, "Mmad with bias: the bias type must equal the result type (float or int32_t)");
    static_assert(!std::is_same_v<U, int4b_t>, "Mmad: int4b_t takes no bias tensor (Mmad page, table 8)");
    emu_detail::mmad_impl<T, U, S, V>(dst, fm, filter, &bias, p, loc);
}

// ---------------------------------------------------------------- Fixpipe
namespace emu_detail {
// Saturation of fp8 / hifloat8 Fixpipe outputs (Fixpipe page, 950 special values; SetCtrlSpr
// page): CTRL[48] = 1 (with CTRL[60] = 1) non-saturating, else saturating with CTRL[50] keeping NaN.
inline uint8_t fix_f8_mode() {
    const uint64_t c = emu::ctrl_get();
    if (((c >> 60) & 1u) && ((c >> 48) & 1u)) return (uint8_t)emu::F8Mode::NOSAT;
    return (uint8_t)(((c >> 50) & 1u) ? emu::F8Mode::SAT_NAN : emu::F8Mode::SAT);
}
// true while fix3510_dual issues its two halves (the timing model's dual-destination rate)
inline bool& fix_dual_half() {
    static thread_local bool on = false;
    return on;
}
template <class D, class S, class DstT>
inline void fixpipe_common(const DstT& dst, const LocalTensor<S>& src, CO2Layout fmt, uint32_t m, uint32_t n,
                           uint64_t srcStride, uint64_t dstStride, uint32_t ndNum, uint64_t srcNdBytes,
                           uint64_t dstNdElems, bool relu, QuantMode_t q, uint64_t deq, const emu::Loc& loc,
                           const LocalTensor<uint64_t>* quantTensor = nullptr, bool channelSplit = false) {
    if (src.emu_mem() != emu::Mem::L0C) emu::fail("invalid_param", "Fixpipe: source must be in L0C (CO1)", loc);
    if (quantTensor && quantTensor->emu_mem() != emu::Mem::L1 && quantTensor->emu_mem() != emu::Mem::FB)
        emu::fail("invalid_param", "Fixpipe: the quant tensor (cbufWorkspace) must be in L1 (TPosition::C1)", loc);
    static_assert(std::is_same_v<S, float> || std::is_same_v<S, int32_t>, "Fixpipe: source must be float or int32_t");
    if (ndNum == 0 || m == 0 || n == 0) return;
    if (channelSplit && (fmt != CO2Layout::NZ || !std::is_same_v<D, float> || !std::is_same_v<S, float>))
        emu::fail("invalid_param", "Fixpipe: channelSplit needs float -> float NZ output (F32 Channel Split page)", loc);
    if (fmt == CO2Layout::NZ && n % (channelSplit ? 8 : 16) != 0)
        emu::fail("invalid_param", std::string("Fixpipe: nSize must be a multiple of ") + (channelSplit ? "8 with channelSplit" : "16 without NZ2ND"), loc);
    if (fmt != CO2Layout::NZ && dstStride == 0) emu::fail("invalid_param", "Fixpipe: dstStride must not be 0", loc);
    emu::ops::SpanSet r, w;
    // reads: the first m rows (16 elements each) of every 16-column block; not the block's padded
    // rows (half of a dual-destination transfer starts 8 rows into its blocks and reads 8 rows)
    const uint64_t nblk = (n + 15) / 16;
    for (uint32_t t = 0; t < ndNum; ++t) {
        uint64_t sb = t * srcNdBytes;
        for (uint64_t j = 0; j < nblk; ++j)
            r.add(src, sb + j * srcStride * 16 * sizeof(S), sb + (j * srcStride + m) * 16 * sizeof(S));
    }
    for (uint32_t t = 0; t < ndNum; ++t) {
        uint64_t db = t * dstNdElems * sizeof(D);
        if (fmt == CO2Layout::ROW_MAJOR) {
            for (uint64_t i = 0; i < m; ++i) w.add(dst, db + i * dstStride * sizeof(D), db + (i * dstStride + n) * sizeof(D));
        } else if (fmt == CO2Layout::COLUMN_MAJOR) {
            for (uint64_t j = 0; j < n; ++j) w.add(dst, db + j * dstStride * sizeof(D), db + (j * dstStride + m) * sizeof(D));
        } else {
            for (uint32_t j = 0; j < n;) {
                emu::impl::NzCol c = emu::impl::nz_col(j, n, sizeof(D), channelSplit);
                w.add(dst, db + (uint64_t)c.block * dstStride * 32, db + (uint64_t)c.block * dstStride * 32 + (uint64_t)m * c.width * sizeof(D));
                j += c.width - c.within;
            }
        }
    }
    if (quantTensor) r.add(*quantTensor, 0, (uint64_t)n * sizeof(uint64_t));
    // timing model: bytes and elements written (the Fixpipe rate is per output element)
    emu::Cost c; c.elems = (uint64_t)ndNum * m * n; c.bytes = c.elems * sizeof(D);
    if (fix_dual_half()) c.repeats = 2;   // one half of a dual-destination transfer (both AIVs at once)
    // L0C -> GM with a DMA-atomic mode set combines with GM (SetAtomicAdd page: UB/L0C -> GM).
    const emu::AtomicMode am = dst.emu_span(0).mem == emu::Mem::GM ? emu::atomic_mode() : emu::AtomicMode{};
    if (am.dtype)
        for (auto& sp : w.v) sp.cls = emu::CLS_ATOMIC;
    emu::ops::record_sets("Fixpipe", emu::Pipe::FIX, r, w, c, loc);
    uint8_t* out = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    std::vector<uint8_t> tmp;
    const uint64_t base = dst.emu_span(0).begin;
    if (am.dtype) {   // convert into a scratch image, then combine the written bytes with GM
        uint64_t ext = 0;
        for (auto& sp : w.v) ext = std::max<uint64_t>(ext, sp.end - base);
        tmp.assign(ext, 0);
        out = tmp.data();
    }
    // the quant words are read before any output is written (they may share L1 with the output)
    std::vector<uint64_t> qwords;
    if (quantTensor) {
        const uint64_t* qp = reinterpret_cast<const uint64_t*>(quantTensor->emu_ptr());
        qwords.assign(qp, qp + n);
    }
    emu::impl::FixArgs a{out, emu::dt_of<D>(), src.emu_ptr(), emu::dt_of<S>(), m, n, srcStride, dstStride,
                         fmt == CO2Layout::NZ ? 0 : (fmt == CO2Layout::ROW_MAJOR ? 1 : 2), ndNum, srcNdBytes,
                         dstNdElems, relu, (int)q, deq,
                         quantTensor ? qwords.data() : nullptr, emu::is_3510(),
                         channelSplit, fix_f8_mode()};
    const char* err = emu::impl::fixpipe(a);
    if (err && *err) emu::fail("invalid_param", std::string("Fixpipe: ") + err, loc);
    if (am.dtype)
        for (auto& sp : w.v)
            emu::ops::atomic_store(reinterpret_cast<uint8_t*>(dst.emu_ptr()) + (sp.begin - base), tmp.data() + (sp.begin - base),
                                   sp.end - sp.begin, am);
}
template <class T>
inline void check_fix_local_dst(const LocalTensor<T>& dst, bool isToUB, const emu::Loc& loc) {
    emu::Mem m = dst.emu_mem();
    if (m == emu::Mem::L1 && !isToUB) return;
    if (m == emu::Mem::UB && emu::is_3510() && isToUB) return;
    if (m == emu::Mem::UB && !emu::is_3510()) emu::ops::bad_path("Fixpipe", emu::Mem::L0C, m, loc);
    if (m == emu::Mem::UB || m == emu::Mem::L1)
        emu::fail("invalid_param", std::string("Fixpipe: destination is in ") + emu::ops::mem_name(m) +
                  " but FixpipeConfig.isToUB is " + (isToUB ? "true" : "false"), loc);
    emu::ops::bad_path("Fixpipe", emu::Mem::L0C, m, loc);
}
}  // namespace emu_detail

#if defined(EMU_ARCH_C220)
// L0C (NZ, float/int32) -> GM or L1. CFG_ROW_MAJOR: dst (i, j) at i*dstStride + j (elements);
// CFG_NZ: 16-column blocks dstStride 32-byte blocks apart. Source block j starts at row
// j*srcStride (16-element rows). ndNum matrices, srcNdStride in 1024-byte units, dstNdStride
// in elements. quantPre casts (F322F16/F322BF16 round to nearest even) or quantizes with the
// scalar deqScalar or, for the V* modes, one quant word per column from cbufWorkspace (L1);
// reluEn applies ReLU.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p,
                    const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::fixpipe_common<T>(dst, src, config.format, p.mSize, p.nSize, p.srcStride, p.dstStride,
                                  p.ndNum, (uint64_t)p.srcNdStride * 1024, p.dstNdStride, p.reluEn, p.quantPre,
                                  p.deqScalar, loc, nullptr, p.isChannelSplit);
}
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p,
                    const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::check_fix_local_dst(dst, config.isToUB, loc);
    emu_detail::fixpipe_common<T>(dst, src, config.format, p.mSize, p.nSize, p.srcStride, p.dstStride,
                                  p.ndNum, (uint64_t)p.srcNdStride * 1024, p.dstNdStride, p.reluEn, p.quantPre,
                                  p.deqScalar, loc, nullptr, p.isChannelSplit);
}
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR, typename S,
          std::enable_if_t<std::is_same_v<S, uint64_t>, bool> = true>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<S>& cbufWorkspace,
                    const FixpipeParamsV220& p, const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::fixpipe_common<T>(dst, src, config.format, p.mSize, p.nSize, p.srcStride, p.dstStride,
                                  p.ndNum, (uint64_t)p.srcNdStride * 1024, p.dstNdStride, p.reluEn, p.quantPre,
                                  p.deqScalar, loc, &cbufWorkspace, p.isChannelSplit);
}
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR, typename S,
          std::enable_if_t<std::is_same_v<S, uint64_t>, bool> = true>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<S>& cbufWorkspace,
                    const FixpipeParamsV220& p, const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::check_fix_local_dst(dst, config.isToUB, loc);
    emu_detail::fixpipe_common<T>(dst, src, config.format, p.mSize, p.nSize, p.srcStride, p.dstStride,
                                  p.ndNum, (uint64_t)p.srcNdStride * 1024, p.dstNdStride, p.reluEn, p.quantPre,
                                  p.deqScalar, loc, &cbufWorkspace, p.isChannelSplit);
}
#endif

#if defined(EMU_ARCH_3510)
namespace emu_detail {
// Nz2NdParams.srcNdStride / Nz2DnParams.srcNzMatrixStride count C0_SIZE units (16 source
// elements) on dav-3510 (Fixpipe page, table 3).
template <class S, CO2Layout F>
inline void fix3510_nd(const FixpipeParamsArch3510<F>& p, uint32_t& nd, uint64_t& sbytes, uint64_t& delems,
                       const emu::Loc& loc) {
    nd = 1; sbytes = 0; delems = 0;
    if constexpr (F == CO2Layout::ROW_MAJOR) { nd = p.params.ndNum; sbytes = (uint64_t)p.params.srcNdStride * 16 * sizeof(S); delems = p.params.dstNdStride; }
    if constexpr (F == CO2Layout::COLUMN_MAJOR) {
        nd = p.params.dnNum; sbytes = (uint64_t)p.params.srcNzMatrixStride * 16 * sizeof(S); delems = p.params.dstDnMatrixStride;
        if (p.params.srcNzC0Stride > 1)
            emu::fail("invalid_param", "Fixpipe: Nz2DnParams.srcNzC0Stride > 1 (rows of an NZ fractal not adjacent) is not emulated", loc);
    }
}
template <CO2Layout F>
inline bool fix3510_relu(const FixpipeParamsArch3510<F>& p) { return p.reluEn || p.preReluMode == ReluMode::NORMAL_RELU; }
// FixpipeParamsArch3510 gives the NZ destination stride in elements (NZ2NZ page); the element
// loop takes 32-byte blocks.
template <class D, CO2Layout F>
inline uint64_t fix3510_dst_stride(const FixpipeParamsArch3510<F>& p, const emu::Loc& loc) {
    if constexpr (F != CO2Layout::NZ) return p.dstStride;
    uint64_t bytes = (uint64_t)p.dstStride * sizeof(D);
    if (bytes % 32 != 0)
        emu::fail("invalid_param", "Fixpipe: NZ dstStride (elements on dav-3510) must be a whole number of 32-byte blocks", loc);
    return bytes / 32;
}
template <class T, class U, const FixpipeConfig& config, class DstT>
inline void fix3510(const DstT& dst, const LocalTensor<U>& src, const FixpipeParamsArch3510<config.format>& p,
                    const LocalTensor<uint64_t>* qt, const emu::Loc& loc) {
    uint32_t nd; uint64_t sb, de;
    fix3510_nd<U>(p, nd, sb, de, loc);
    fixpipe_common<T>(dst, src, config.format, p.mSize, p.nSize, p.srcStride, fix3510_dst_stride<T>(p, loc), nd, sb, de,
                      fix3510_relu(p), p.quantPre, p.deqScalar, loc, qt, p.isChannelSplit);
}
}  // namespace emu_detail

// 3510: same element semantics as on c220; the destination may also be UB (FixpipeConfig
// with isToUB = true) or L1. CO2Layout::COLUMN_MAJOR writes dst (i, j) at j*dstStride + i.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsArch3510<config.format>& p,
                    const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::fix3510<T, U, config>(dst, src, p, nullptr, loc);
}
namespace emu_detail {
// L0C -> UB dual destination (L0C Buffer到UB双目标模式 page): dualDstCtl 1 splits M (rows
// [0, m/2) to AIV 0's UB, the rest to AIV 1's), 2 splits N (columns [0, n/2) / [n/2, n)); each
// half lands at the same UB address with the destination parameters as given.
template <class T, class U, const FixpipeConfig& config>
inline void fix3510_dual(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsArch3510<config.format>& p,
                         const LocalTensor<uint64_t>* qt, const emu::Loc& loc) {
    if (dst.emu_mem() != emu::Mem::UB) emu::fail("invalid_param", "Fixpipe: dualDstCtl needs a UB destination", loc);
    if (p.dualDstCtl > 2) emu::fail("invalid_param", "Fixpipe: dualDstCtl must be 0, 1 (split M) or 2 (split N)", loc);
    if (p.quantPre != QuantMode_t::NoQuant || fix3510_relu(p))
        emu::fail("invalid_param", "Fixpipe: the dual-destination mode takes no quantization or ReLU (page constraint)", loc);
    const bool splitM = p.dualDstCtl == 1;
    if (splitM ? p.mSize % 2 : p.nSize % 32)
        emu::fail("invalid_param", splitM ? "Fixpipe: dual destination by M needs an even mSize"
                                          : "Fixpipe: dual destination by N needs nSize a multiple of 32", loc);
    FixpipeParamsArch3510<config.format> h = p;
    h.dualDstCtl = 0;
    for (int half = 0; half < 2; ++half) {
        uint32_t off;
        if (splitM) { h.mSize = p.mSize / 2; off = (uint32_t)half * h.mSize * 16; }
        else { h.nSize = p.nSize / 2; off = (uint32_t)half * (h.nSize / 16) * p.srcStride * 16; }
        fix_dual_half() = true;
        fix3510<T, U, config>(emu::ops::peer_view(dst, half), src[off], h, qt, loc);
        fix_dual_half() = false;
    }
}
}  // namespace emu_detail
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsArch3510<config.format>& p,
                    const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::check_fix_local_dst(dst, config.isToUB, loc);
    if (p.dualDstCtl != 0) return emu_detail::fix3510_dual<T, U, config>(dst, src, p, nullptr, loc);
    emu_detail::fix3510<T, U, config>(emu::ops::peer_view(dst, p.subBlockId ? 1 : 0), src, p, nullptr, loc);
}
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR, typename S,
          std::enable_if_t<std::is_same_v<S, uint64_t>, bool> = true>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<S>& cbufWorkspace,
                    const FixpipeParamsArch3510<config.format>& p, const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::fix3510<T, U, config>(dst, src, p, &cbufWorkspace, loc);
}
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR, typename S,
          std::enable_if_t<std::is_same_v<S, uint64_t>, bool> = true>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<S>& cbufWorkspace,
                    const FixpipeParamsArch3510<config.format>& p, const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::check_fix_local_dst(dst, config.isToUB, loc);
    if (p.dualDstCtl != 0) return emu_detail::fix3510_dual<T, U, config>(dst, src, p, &cbufWorkspace, loc);
    emu_detail::fix3510<T, U, config>(emu::ops::peer_view(dst, p.subBlockId ? 1 : 0), src, p, &cbufWorkspace, loc);
}
// FixpipeParamsV220 on dav-3510: the same fields, mapped onto FixpipeParamsArch3510. The
// units follow each struct's table on the Fixpipe page: V220's NZ dstStride counts 32-byte
// blocks (3510: elements) and its srcNdStride counts 16 * C0_SIZE (3510: C0_SIZE).
namespace emu_detail {
template <CO2Layout F, class T>
inline FixpipeParamsArch3510<F> from_v220(const FixpipeParamsV220& v) {
    const uint32_t dstStride = F == CO2Layout::NZ ? (uint32_t)((uint64_t)v.dstStride * 32 / sizeof(T)) : v.dstStride;
    FixpipeParamsArch3510<F> p(v.nSize, v.mSize, v.srcStride, dstStride);
    p.quantPre = v.quantPre;
    p.deqScalar = v.deqScalar;
    p.reluEn = v.reluEn;
    p.unitFlag = v.unitFlag;
    p.isChannelSplit = v.isChannelSplit;
    if constexpr (F == CO2Layout::ROW_MAJOR) p.params = Nz2NdParams(v.ndNum, (uint16_t)(v.srcNdStride * 16), v.dstNdStride);
    if constexpr (F == CO2Layout::COLUMN_MAJOR) p.params.dnNum = v.ndNum;
    return p;
}
}  // namespace emu_detail
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p,
                    const emu::Loc& loc = emu::Loc::current()) {
    Fixpipe<T, U, config>(dst, src, emu_detail::from_v220<config.format, T>(p), loc);
}
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p,
                    const emu::Loc& loc = emu::Loc::current()) {
    Fixpipe<T, U, config>(dst, src, emu_detail::from_v220<config.format, T>(p), loc);
}
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR, typename S>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<S>& cbufWorkspace,
                    const FixpipeParamsV220& p, const emu::Loc& loc = emu::Loc::current()) {
    Fixpipe<T, U, config>(dst, src, cbufWorkspace, emu_detail::from_v220<config.format, T>(p), loc);
}
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR, typename S>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<S>& cbufWorkspace,
                    const FixpipeParamsV220& p, const emu::Loc& loc = emu::Loc::current()) {
    Fixpipe<T, U, config>(dst, src, cbufWorkspace, emu_detail::from_v220<config.format, T>(p), loc);
}
#endif

}  // namespace AscendC
