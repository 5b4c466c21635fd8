#pragma once
// emu_vector_ext.h: the rest of the memory-vector-compute basic API (operands in UB, pipe V):
// compound element-wise ops (AddRelu, SubRelu, FusedMulAdd, MulAddRelu, MulAddDst, Axpy,
// LeakyRelu), logic ops (And, Or, Not, ShiftLeft/ShiftRight), the 3510 flexible-scalar forms
// (Adds/Subs/Muls/Divs/Maxs/Mins/Ands/Ors/Compares/Select with a scalar or a single-point
// LocalTensor), CreateVecIndex, Interleave/DeInterleave, GatherMask/Gather/Gatherb,
// Compare/Compares/Select in every documented form with the CmpMask register, the
// ReduceDataBlock/ReduceRepeat/ReducePairElem reductions and the mask forms of ReduceMax/Min/
// Sum, Sort32/MrgSort, Transpose/TransDataTo5HD, the int4b_t casts and SetPadValue.
// Written from the public Ascend C API pages (docs/emulator-ops.md names each page) and the
// declarations of the devkit headers; no implementation code was consulted.
// Semantics follow emu_vector.h: arithmetic in float (double where an op is fused) with one
// rounding to the element type per documented step; one repeat = 256 bytes = 8 blocks of 32
// bytes; strides in 32-byte blocks; counter mode (SetMaskCount) makes the mask the element
// count of the whole instruction.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>
#include "emu_vector.h"

namespace AscendC {

// ---------------------------------------------------------------- documented names
// Placeholder for the mask argument of calls with isSetMask = false (its value is unused).
// An integer variable, not a literal, so it never converts to the `uint64_t mask[]` overload.
constexpr uint64_t MASK_PLACEHOLDER = 0;
constexpr int32_t MRG_SORT_ELEMENT_LEN = 4;
constexpr int32_t NCHW_CONV_ADDR_LIST_SIZE = 16;

enum class ReduceType : uint8_t { SUM = 0, MAX, MIN };

struct BinaryConfig {
    int8_t scalarTensorIndex = 1;   // which operand is the single-point LocalTensor scalar: 0 left, 1 right
};
constexpr BinaryConfig DEFAULT_BINARY_CONFIG = {1};
struct BinaryDefaultType {};

enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
#if defined(EMU_ARCH_C220)
constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V2;
#else
constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V1;
#endif
constexpr GatherMaskMode defaultGahterMaskMode = defaultGatherMaskMode;   // the devkit's historic spelling

struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(uint8_t src0BlockStrideIn, uint16_t repeatTimesIn, uint16_t src0RepeatStrideIn,
                     uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn) {}
    uint8_t src0BlockStride = 1;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = 8;
    uint8_t src1RepeatStride = 8;
};

struct GatherRepeatParams {
    GatherRepeatParams() {}
    GatherRepeatParams(uint8_t dstBlkStrideIn, uint8_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
    uint32_t blockNumber = 8;
    uint16_t dstRepStride = 8;
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

struct MrgSort4Info {
    MrgSort4Info() {}
    MrgSort4Info(const uint16_t elementLengthsIn[MRG_SORT_ELEMENT_LEN], bool ifExhaustedSuspensionIn,
                 uint16_t validBitIn, uint16_t repeatTimesIn)
        : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn), repeatTimes((uint8_t)repeatTimesIn) {
        for (int32_t i = 0; i < MRG_SORT_ELEMENT_LEN; ++i) elementLengths[i] = elementLengthsIn[i];
    }
    uint16_t elementLengths[MRG_SORT_ELEMENT_LEN] = {0};
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 0;
    uint8_t repeatTimes = 1;
};

template <typename T>
struct MrgSortSrcList {
    MrgSortSrcList() {}
    MrgSortSrcList(const LocalTensor<T>& src1In, const LocalTensor<T>& src2In, const LocalTensor<T>& src3In,
                   const LocalTensor<T>& src4In)
        : src1(src1In[0]), src2(src2In[0]), src3(src3In[0]), src4(src4In[0]) {}
    LocalTensor<T> src1;
    LocalTensor<T> src2;
    LocalTensor<T> src3;
    LocalTensor<T> src4;
};

enum class TransposeType : uint8_t {
    TRANSPOSE_TYPE_NONE,
    TRANSPOSE_NZ2ND_0213,
    TRANSPOSE_NZ2NZ_0213,
    TRANSPOSE_NZ2NZ_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITHOUT_N,
    TRANSPOSE_NZ2NZ_012_WITHOUT_N,
    TRANSPOSE_ND2ND_ONLY,
    TRANSPOSE_ND_UB_GM,
    TRANSPOSE_GRAD_ND_UB_GM,
    TRANSPOSE_ND2ND_B16,
    TRANSPOSE_NCHW2NHWC,
    TRANSPOSE_NHWC2NCHW,
#if defined(EMU_ARCH_3510)
    TRANSPOSE_ND2ND_021,
    TRANSPOSE_ND2ND_102,
    TRANSPOSE_ND2ND_210,
    TRANSPOSE_ND2NZ_WITH_INTLV,
#endif
};

struct TransDataTo5HDParams {
    constexpr TransDataTo5HDParams() = default;
    constexpr TransDataTo5HDParams(bool dstHighHalfIn, bool srcHighHalfIn, uint8_t repeatTimesIn, uint16_t dstRepStrideIn,
                                   uint16_t srcRepStrideIn)
        : dstHighHalf(dstHighHalfIn), srcHighHalf(srcHighHalfIn), repeatTimes(repeatTimesIn),
          dstRepStride(dstRepStrideIn), srcRepStride(srcRepStrideIn) {}
    bool dstHighHalf = false;
    bool srcHighHalf = false;
    uint8_t repeatTimes = 1;
    uint16_t dstRepStride = 0;
    uint16_t srcRepStride = 0;
};

struct TransposeParamsExt {
    constexpr TransposeParamsExt() = default;
    constexpr TransposeParamsExt(uint16_t nSizeIn, uint16_t cSizeIn, uint16_t hSizeIn, uint16_t wSizeIn,
                                 TransposeType transposeTypeIn)
        : nSize(nSizeIn), cSize(cSizeIn), hSize(hSizeIn), wSize(wSizeIn), transposeType(transposeTypeIn) {}
    uint16_t nSize = 0;
    uint16_t cSize = 0;
    uint16_t hSize = 0;
    uint16_t wSize = 0;
    TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

}  // namespace AscendC

namespace emu::vec {

using AscendC::LocalTensor;

template <class X> struct is_local : std::false_type {};
template <class X> struct is_local<LocalTensor<X>> : std::true_type {};
template <class X> inline constexpr bool is_local_v = is_local<std::remove_cv_t<std::remove_reference_t<X>>>::value;
template <class X> struct elem_of { using type = X; };
template <class X> struct elem_of<LocalTensor<X>> { using type = X; };

// Pairwise (binary-tree) sum as the reduction pages define it (ReduceDataBlock, "关键特性说明"):
// level by level v[2i] + v[2i+1], every partial sum rounded to T (half stays half; overflow
// gives inf); an odd level is padded with 0. (emu-sync's emu::vec::tree_sum is the same tree on
// T values; this one works on Calc<T> so integer sums of the 950's int16 -> int32 form fit.)
template <class T>
inline Calc<T> tree_sum_c(std::vector<Calc<T>> v) {
    if (v.empty()) return Calc<T>(0);
    while (v.size() > 1) {
        if (v.size() % 2) v.push_back(Calc<T>(0));
        for (size_t i = 0; i < v.size() / 2; ++i) v[i] = in<T>(out<T>(v[2 * i] + v[2 * i + 1]));
        v.resize(v.size() / 2);
    }
    return v[0];
}

// ---- instruction shape: the resolved mask and repeat count of one call
struct Shape {
    Mask mk;
    int64_t repeat = 0;
    uint32_t E = 0;     // elements per repeat
    const ops::SpanSet* extra = nullptr;   // other bytes the instruction reads (a scalar in UB)
    uint64_t elems() const { return mk.counter ? mk.cnt : (uint64_t)repeat * E; }
};

inline void check_repeat_n(int64_t repeat, const char* op, const Loc& loc, int64_t hi = 255) {
    if (repeat < 0 || repeat > hi)
        emu::fail("invalid_param", std::string(op) + ": repeatTime " + std::to_string(repeat) + " is outside [0, " +
                  std::to_string(hi) + "]", loc);
}

// Mask/repeat form with a continuous mask (`isSetMask = false`: the mask register).
inline Shape shape_cont(bool isSetMask, uint64_t mask, int64_t repeat, uint32_t E, const char* op, const Loc& loc,
                        int64_t max_repeat = 255) {
    Shape s; s.E = E;
    if (isSetMask) s.mk = mask_cont<uint8_t>(mask, op, loc, E);
    else s.mk = mask_reg<uint8_t>();
    if (!s.mk.counter) check_repeat_n(repeat, op, loc, max_repeat);
    s.repeat = s.mk.repeats(repeat, E);
    return s;
}
// Mask/repeat form with a bit mask (mask[1] is unused when a repeat has 64 elements or fewer).
inline Shape shape_bits(bool isSetMask, const uint64_t* mask, int64_t repeat, uint32_t E, const char* op,
                        const Loc& loc, int64_t max_repeat = 255) {
    Shape s; s.E = E;
    if (!isSetMask) s.mk = mask_reg<uint8_t>();
    else if (mask_state().counter) { s.mk.counter = true; s.mk.cnt = mask[0]; }
    else {
        s.mk.bits = true; s.mk.m[0] = mask[0]; s.mk.m[1] = E > 64 ? mask[1] : 0;
        if (E <= 64 && mask[1] != 0)
            emu::fail("invalid_param", std::string(op) + ": mask[1] must be 0 when a repeat holds " + std::to_string(E) +
                      " elements", loc);
    }
    if (!s.mk.counter) check_repeat_n(repeat, op, loc, max_repeat);
    s.repeat = s.mk.repeats(repeat, E);
    return s;
}
// Count form: the first `count` elements. With isSetMask = false the mask register decides:
// in counter mode its count, in normal mode its bit mask over ceil(count / E) repeats
// (**assumed**: the pages only say count is then "not used, set it to 1").
inline Shape shape_count(bool isSetMask, int64_t count, uint32_t E, const char* op, const Loc& loc) {
    check_count(count, op, loc);
    Shape s; s.E = E;
    if (isSetMask) { s.mk.counter = true; s.mk.cnt = (uint64_t)count; }
    else s.mk = mask_reg<uint8_t>();
    s.repeat = s.mk.repeats((count + E - 1) / E, E);
    return s;
}

// An operand of an element-wise instruction: tensor, element pointer and its strides
// (32-byte blocks within a repeat, 32-byte blocks between repeats).
template <class X>
struct Opd {
    const LocalTensor<X>* t;
    X* p;
    uint64_t blk, rep;
    X& at(uint64_t r, uint32_t e) const { return p[eoff<X>(r, e, blk, rep)]; }
};
template <class X>
inline Opd<X> opd(const LocalTensor<X>& t, uint64_t blk, uint64_t rep) { return Opd<X>{&t, t.emu_ptr(), blk, rep}; }
// Contiguous operand of a count-form instruction with E elements per repeat.
template <class X>
inline Opd<X> opd_flat(const LocalTensor<X>& t, uint32_t E) {
    return Opd<X>{&t, t.emu_ptr(), 1, (uint64_t)E * sizeof(X) / 32};
}

template <class X>
inline void add_opd(ops::SpanSet& s, const Opd<X>& o, const Shape& sh) {
    add_rep_spans(s, *o.t, (uint64_t)sh.repeat, sh.mk, sh.E, o.blk, o.rep);
}

// Generic element-wise engine: dst(r, e) = g(r, e) for every active element; every repeat
// computes all its results before writing any (so in-place calls read old values).
template <class D, class G, class... In>
inline void ew(const char* op, const Opd<D>& d, bool dst_read, const Shape& sh, G g, const Loc& loc, const In&... ins) {
    check_ub(*d.t, op, loc);
    (check_ub(*ins.t, op, loc), ...);
    ops::SpanSet r, w;
    (add_opd(r, ins, sh), ...);
    if (sh.extra) for (const Span& x : sh.extra->v) r.add(x);
    if (dst_read) add_opd(r, d, sh);
    add_opd(w, d, sh);
    Cost c; c.elems = sh.elems(); c.repeats = (uint32_t)sh.repeat;
    ops::record_sets(op, Pipe::V, r, w, c, loc);
    std::vector<D> tmp(sh.E);
    for (int64_t rr = 0; rr < sh.repeat; ++rr) {
        const Mask mr = sh.mk.at((uint64_t)rr, sh.E);
        for (uint32_t e = 0; e < sh.E; ++e)
            if (mr.on(e)) tmp[e] = g((uint64_t)rr, e);
        for (uint32_t e = 0; e < sh.E; ++e)
            if (mr.on(e)) d.at((uint64_t)rr, e) = tmp[e];
    }
}

// Bits of a value (bitwise ops act on the storage of any element type).
template <class T> using UBits = std::conditional_t<sizeof(T) == 1, uint8_t, std::conditional_t<sizeof(T) == 2, uint16_t,
                                 std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
template <class T> inline UBits<T> bits_of(T v) { UBits<T> u; std::memcpy(&u, &v, sizeof(T)); return u; }
template <class T> inline T from_bits(UBits<T> u) { T v; std::memcpy(&v, &u, sizeof(T)); return v; }

// Documented shift semantics: unsigned types shift logically, signed types arithmetically
// (left shifts keep the sign bit and drop the bit below it); shifts of the type's width or
// more give 0 (negative signed values: -1). ShiftRight's roundEn adds the last bit shifted out.
template <class T>
inline T shift_left(T x, int64_t n) {
    constexpr int W = 8 * sizeof(T);
    if constexpr (std::is_signed_v<T>) {
        if (n >= W || n < 0) return x < 0 ? T(-1) : T(0);
        using U = UBits<T>;
        const U sign = (U)((U)1 << (W - 1));
        U u = (U)x;
        U r = (U)((U)(u << n) & (U)(sign - 1)) | (U)(u & sign);
        return (T)r;
    } else {
        if (n >= W || n < 0) return T(0);
        return (T)((UBits<T>)x << n);
    }
}
template <class T>
inline T shift_right(T x, int64_t n, bool roundEn = false) {
    constexpr int W = 8 * sizeof(T);
    if (n <= 0) return n == 0 ? x : T(0);
    if (n >= W) return (std::is_signed_v<T> && x < 0) ? T(-1) : T(0);
    T r = (T)(x >> n);
    if (roundEn && ((x >> (n - 1)) & 1)) r = (T)(r + 1);
    return r;
}

// Round a double to T once (fused ops): nearest-even for floating types.
template <class T>
inline T round1(double x) {
    if constexpr (std::is_same_v<T, float>) return (float)x;
    else if constexpr (is_f16_like<T>) return cast_one<T>(x, AscendC::RoundMode::CAST_RINT);
    else return (T)(int64_t)x;
}

// 3510 scalar operand of the flexible-scalar forms: a scalar value or the first element of a
// single-point LocalTensor (read by the vector unit, so it is recorded as a V read).
template <class T, class S>
inline T scalar_of(const S& s, ops::SpanSet& reads) {
    if constexpr (is_local_v<S>) {
        using X = typename elem_of<std::remove_cv_t<std::remove_reference_t<S>>>::type;
        reads.add(s, 0, sizeof(X));
        return T(in<X>(s.emu_ptr()[0]));
    } else {
        return T(s);
    }
}

}  // namespace emu::vec

namespace AscendC {

// =============================================================== element-wise compound ops
namespace emu_ext {
using emu::vec::Opd;
using emu::vec::Shape;
// dst = f(src0, src1[, dst]) over a binary-form instruction (BinaryRepeatParams).
template <class D, class S, bool READ_DST, class F>
inline void binary_ex(const char* op, const LocalTensor<D>& dst, const LocalTensor<S>& s0, const LocalTensor<S>& s1,
                      const Shape& sh, uint64_t dblk, uint64_t s0blk, uint64_t s1blk, uint64_t drep, uint64_t s0rep,
                      uint64_t s1rep, F f, const emu::Loc& loc) {
    Opd<D> d = emu::vec::opd(dst, dblk, drep);
    Opd<S> a = emu::vec::opd(s0, s0blk, s0rep), b = emu::vec::opd(s1, s1blk, s1rep);
    emu::vec::ew(op, d, READ_DST, sh, [&](uint64_t r, uint32_t e) { return f(a.at(r, e), b.at(r, e), d.at(r, e)); },
                 loc, a, b);
}
template <class D, class S, bool READ_DST, class F>
inline void binary_count(const char* op, const LocalTensor<D>& dst, const LocalTensor<S>& s0, const LocalTensor<S>& s1,
                         int64_t count, F f, const emu::Loc& loc) {
    constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(D), sizeof(S));
    Shape sh = emu::vec::shape_count(true, count, E, op, loc);
    binary_ex<D, S, READ_DST>(op, dst, s0, s1, sh, 1, 1, 1, E * sizeof(D) / 32, E * sizeof(S) / 32, E * sizeof(S) / 32,
                              f, loc);
}
template <class D, class S, bool READ_DST, class F>
inline void binary_rep(const char* op, const LocalTensor<D>& dst, const LocalTensor<S>& s0, const LocalTensor<S>& s1,
                       const Shape& sh, const BinaryRepeatParams& p, F f, const emu::Loc& loc) {
    binary_ex<D, S, READ_DST>(op, dst, s0, s1, sh, p.dstBlkStride, p.src0BlkStride, p.src1BlkStride, p.dstRepStride,
                              p.src0RepStride, p.src1RepStride, f, loc);
}
// dst = f(src[, dst]) over a unary-form instruction (UnaryRepeatParams).
template <class D, class S, bool READ_DST, class F>
inline void unary_ex(const char* op, const LocalTensor<D>& dst, const LocalTensor<S>& src, const Shape& sh,
                     uint64_t dblk, uint64_t sblk, uint64_t drep, uint64_t srep, F f, const emu::Loc& loc) {
    Opd<D> d = emu::vec::opd(dst, dblk, drep);
    Opd<S> a = emu::vec::opd(src, sblk, srep);
    emu::vec::ew(op, d, READ_DST, sh, [&](uint64_t r, uint32_t e) { return f(a.at(r, e), d.at(r, e)); }, loc, a);
}
template <class D, class S, bool READ_DST, class F>
inline void unary_count(const char* op, const LocalTensor<D>& dst, const LocalTensor<S>& src, const Shape& sh, F f,
                        const emu::Loc& loc) {
    const uint32_t E = sh.E;
    unary_ex<D, S, READ_DST>(op, dst, src, sh, 1, 1, E * sizeof(D) / 32, E * sizeof(S) / 32, f, loc);
}
template <class D, class S, bool READ_DST, class F>
inline void unary_rep(const char* op, const LocalTensor<D>& dst, const LocalTensor<S>& src, const Shape& sh,
                      const UnaryRepeatParams& p, F f, const emu::Loc& loc) {
    unary_ex<D, S, READ_DST>(op, dst, src, sh, p.dstBlkStride, p.srcBlkStride, p.dstRepStride, p.srcRepStride, f, loc);
}
template <class T> inline constexpr uint32_t rep_of = 256u / (uint32_t)sizeof(T);
template <class T> using C = emu::vec::Calc<T>;
template <class T> inline C<T> cin(T v) { return emu::vec::in<T>(v); }
template <class T> inline T cout(C<T> v) { return emu::vec::out<T>(v); }
template <class T> inline C<T> relu(C<T> v) { return (v > 0 || v != v) ? v : C<T>(0); }

// Per-arch dtype lists of the pages (checked at compile time, as bisheng would).
template <class T> inline constexpr bool dep = true;   // makes an arch check depend on T
template <class T, class... L> inline constexpr bool one_of = (std::is_same_v<T, L> || ...);
template <class T> inline constexpr bool hf = one_of<T, half, float>;
}  // namespace emu_ext

// Binary compound ops in three forms: count, continuous mask, bit mask (BinaryRepeatParams).
#define EMU_EXT_BINARY(NAME, READ_DST, TYPES_OK, EXPR)                                                               \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                 \
                     const int32_t& count, const emu::Loc& loc = emu::Loc::current()) {                                \
        static_assert(TYPES_OK, #NAME ": data type not supported on this arch (see the API page)");                    \
        emu_ext::binary_count<T, T, READ_DST>(                                                                         \
            #NAME, dst, src0, src1, count, [](T x0, T x1, T xd) { (void)xd; return EXPR; }, loc);                      \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask, \
                     const uint8_t repeatTime, const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) { \
        static_assert(TYPES_OK, #NAME ": data type not supported on this arch (see the API page)");                    \
        auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, #NAME, loc);                   \
        emu_ext::binary_rep<T, T, READ_DST>(                                                                           \
            #NAME, dst, src0, src1, sh, p, [](T x0, T x1, T xd) { (void)xd; return EXPR; }, loc);                      \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                 \
                     const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& p,                    \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        static_assert(TYPES_OK, #NAME ": data type not supported on this arch (see the API page)");                    \
        auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, #NAME, loc);                   \
        emu_ext::binary_rep<T, T, READ_DST>(                                                                           \
            #NAME, dst, src0, src1, sh, p, [](T x0, T x1, T xd) { (void)xd; return EXPR; }, loc);                      \
    }

#define EMU_C(x) emu_ext::cin<T>(x)
#define EMU_R(x) emu_ext::cout<T>(x)
#define EMU_HF_I16 (emu_ext::one_of<T, half, float, int16_t>)
#define EMU_HF (emu_ext::one_of<T, half, float> || (emu::is_3510() && std::is_same_v<T, bfloat16_t>))
#define EMU_LOGIC (emu_ext::one_of<T, int16_t, uint16_t> || (emu::is_3510() && emu_ext::one_of<T, int32_t, uint32_t, int8_t, uint8_t, int64_t, uint64_t>))
// AddRelu / SubRelu: Relu of the rounded sum / difference (AddRelu, SubRelu pages).
EMU_EXT_BINARY(AddRelu, false, EMU_HF_I16, EMU_R(emu_ext::relu<T>(EMU_C(EMU_R(EMU_C(x0) + EMU_C(x1))))))
EMU_EXT_BINARY(SubRelu, false, EMU_HF_I16, EMU_R(emu_ext::relu<T>(EMU_C(EMU_R(EMU_C(x0) - EMU_C(x1))))))
// FusedMulAdd: dst = src0 * dst + src1 with one rounding; MulAddRelu: Relu of it.
EMU_EXT_BINARY(FusedMulAdd, true, EMU_HF,
               emu::vec::round1<T>((double)EMU_C(x0) * (double)EMU_C(xd) + (double)EMU_C(x1)))
EMU_EXT_BINARY(MulAddRelu, true, EMU_HF,
               EMU_R(emu_ext::relu<T>(EMU_C(emu::vec::round1<T>((double)EMU_C(x0) * (double)EMU_C(xd) + (double)EMU_C(x1))))))
EMU_EXT_BINARY(FusedMulAddRelu, true, EMU_HF,
               EMU_R(emu_ext::relu<T>(EMU_C(emu::vec::round1<T>((double)EMU_C(x0) * (double)EMU_C(xd) + (double)EMU_C(x1))))))
// Bitwise And / Or on the element bits.
EMU_EXT_BINARY(And, false, EMU_LOGIC,
               emu::vec::from_bits<T>((emu::vec::UBits<T>)(emu::vec::bits_of(x0) & emu::vec::bits_of(x1))))
EMU_EXT_BINARY(Or, false, EMU_LOGIC,
               emu::vec::from_bits<T>((emu::vec::UBits<T>)(emu::vec::bits_of(x0) | emu::vec::bits_of(x1))))
#undef EMU_EXT_BINARY

// MulAddDst: dst = src0 * src1 + dst; the product is rounded to the dst type, then the sum
// (**assumed**: two roundings; the page gives only the formula). half x half -> float and
// same-type forms.
namespace emu_ext {
template <class T, class U>
inline T mul_add_dst(U a, U b, T d) {
    T p = emu::vec::out<T>((C<T>)(cin<U>(a) * cin<U>(b)));
    return cout<T>(cin<T>(p) + cin<T>(d));
}
template <class T, class U>
inline constexpr bool mad_ok = (std::is_same_v<T, U> && one_of<T, half, float>) ||
                               (std::is_same_v<T, float> && std::is_same_v<U, half>);
}  // namespace emu_ext
template <typename T, typename U>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                      const int32_t& count, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::mad_ok<T, U>, "MulAddDst: data type pair not supported (see the API page)");
    emu_ext::binary_count<T, U, true>("MulAddDst", dst, src0, src1, count,
                                      [](U a, U b, T d) { return emu_ext::mul_add_dst<T, U>(a, b, d); }, loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1, uint64_t mask,
                      const uint8_t repeatTime, const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::mad_ok<T, U>, "MulAddDst: data type pair not supported (see the API page)");
    constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(T), sizeof(U));
    auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, E, "MulAddDst", loc);
    emu_ext::binary_rep<T, U, true>("MulAddDst", dst, src0, src1, sh, p,
                                    [](U a, U b, T d) { return emu_ext::mul_add_dst<T, U>(a, b, d); }, loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                      const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& p,
                      const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::mad_ok<T, U>, "MulAddDst: data type pair not supported (see the API page)");
    constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(T), sizeof(U));
    auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, E, "MulAddDst", loc);
    emu_ext::binary_rep<T, U, true>("MulAddDst", dst, src0, src1, sh, p,
                                    [](U a, U b, T d) { return emu_ext::mul_add_dst<T, U>(a, b, d); }, loc);
}

// Axpy: dst = scalar * src + dst (same rounding as MulAddDst, **assumed**).
template <typename T, typename U>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, const int32_t& count,
                 const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::mad_ok<T, U> || (emu::is_3510() && std::is_same_v<T, U> && std::is_same_v<T, bfloat16_t>),
                  "Axpy: data type pair not supported (see the API page)");
    const U s = scalarValue;
    constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(T), sizeof(U));
    auto sh = emu::vec::shape_count(true, count, E, "Axpy", loc);
    emu_ext::unary_count<T, U, true>("Axpy", dst, src, sh, [s](U a, T d) { return emu_ext::mul_add_dst<T, U>(a, s, d); },
                                     loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, uint64_t mask,
                 const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::mad_ok<T, U> || (emu::is_3510() && std::is_same_v<T, U> && std::is_same_v<T, bfloat16_t>),
                  "Axpy: data type pair not supported (see the API page)");
    const U s = scalarValue;
    constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(T), sizeof(U));
    auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, E, "Axpy", loc);
    emu_ext::unary_rep<T, U, true>("Axpy", dst, src, sh, p, [s](U a, T d) { return emu_ext::mul_add_dst<T, U>(a, s, d); },
                                   loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, const uint64_t mask[],
                 const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::mad_ok<T, U> || (emu::is_3510() && std::is_same_v<T, U> && std::is_same_v<T, bfloat16_t>),
                  "Axpy: data type pair not supported (see the API page)");
    const U s = scalarValue;
    constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(T), sizeof(U));
    auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, E, "Axpy", loc);
    emu_ext::unary_rep<T, U, true>("Axpy", dst, src, sh, p, [s](U a, T d) { return emu_ext::mul_add_dst<T, U>(a, s, d); },
                                   loc);
}

// AddReluCast / SubReluCast / MulCast: the op in the source type (rounded), Relu where named,
// then a conversion to the dst type (nearest-even, integers saturating: **assumed**, the pages
// name only "Cast"). AddDeqRelu: int32 sum, times the half DEQSCALE set by SetDeqScale (in
// float), converted to half by RINT (page), then Relu.
}  // namespace AscendC
namespace emu::vec {
struct DeqScale { float scale = 1.0f; };
inline DeqScale& deq_scale() { thread_local DeqScale d; return d; }
}  // namespace emu::vec
namespace AscendC {
inline void SetDeqScale(half scale, const emu::Loc& loc = emu::Loc::current()) {
    (void)loc;
    emu::vec::deq_scale().scale = (float)scale;
}
namespace emu_ext {
template <class T, class U>
inline constexpr bool relu_cast_ok = (std::is_same_v<U, half> && std::is_same_v<T, int8_t>) ||
                                     (std::is_same_v<U, int16_t> && std::is_same_v<T, int8_t>) ||
                                     (std::is_same_v<U, float> && std::is_same_v<T, half>);
template <class T, class U>
inline constexpr bool mul_cast_ok = std::is_same_v<U, half> && one_of<T, int8_t, uint8_t>;
template <class T, class U>
inline T cast_to(C<U> v) { return emu::vec::cast_one<T>((double)v, RoundMode::CAST_RINT); }
}  // namespace emu_ext
#define EMU_EXT_CASTOP(NAME, OK, EXPR)                                                                                \
    template <typename T, typename U>                                                                                 \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,                 \
                     const uint32_t count, const emu::Loc& loc = emu::Loc::current()) {                                \
        static_assert(OK, #NAME ": data type pair not supported (see the API page)");                                 \
        emu_ext::binary_count<T, U, false>(#NAME, dst, src0, src1, count, [](U a, U b, T) { return EXPR; }, loc);      \
    }                                                                                                                 \
    template <typename T, typename U, bool isSetMask = true>                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1, uint64_t mask, \
                     const uint8_t repeatTime, const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) { \
        static_assert(OK, #NAME ": data type pair not supported (see the API page)");                                 \
        constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(T), sizeof(U));                                        \
        auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, E, #NAME, loc);                                   \
        emu_ext::binary_rep<T, U, false>(#NAME, dst, src0, src1, sh, p, [](U a, U b, T) { return EXPR; }, loc);        \
    }                                                                                                                 \
    template <typename T, typename U, bool isSetMask = true>                                                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,                 \
                     const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& p,                    \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        static_assert(OK, #NAME ": data type pair not supported (see the API page)");                                 \
        constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(T), sizeof(U));                                        \
        auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, E, #NAME, loc);                                   \
        emu_ext::binary_rep<T, U, false>(#NAME, dst, src0, src1, sh, p, [](U a, U b, T) { return EXPR; }, loc);        \
    }
#define EMU_CU(x) emu_ext::cin<U>(x)
#define EMU_RU(x) emu_ext::cout<U>(x)
EMU_EXT_CASTOP(AddReluCast, (emu_ext::relu_cast_ok<T, U>),
               (emu_ext::cast_to<T, U>(emu_ext::relu<U>(EMU_CU(EMU_RU(EMU_CU(a) + EMU_CU(b)))))))
EMU_EXT_CASTOP(SubReluCast, (emu_ext::relu_cast_ok<T, U>),
               (emu_ext::cast_to<T, U>(emu_ext::relu<U>(EMU_CU(EMU_RU(EMU_CU(a) - EMU_CU(b)))))))
EMU_EXT_CASTOP(MulCast, (emu_ext::mul_cast_ok<T, U>), (emu_ext::cast_to<T, U>(EMU_CU(EMU_RU(EMU_CU(a) * EMU_CU(b))))))
#define EMU_DEQ_OK (std::is_same_v<T, half> && std::is_same_v<U, int32_t>)
#define EMU_DEQ_EXPR                                                                                                  \
    (emu_ext::relu_h(half((float)(int32_t)((int64_t)a + (int64_t)b) * emu::vec::deq_scale().scale)))
namespace emu_ext {
inline half relu_h(half h) { return ((float)h > 0 || h != h) ? h : half(0.0f); }
}  // namespace emu_ext
EMU_EXT_CASTOP(AddDeqRelu, EMU_DEQ_OK, EMU_DEQ_EXPR)
template <bool isSetMask = true>
inline void AddDeqRelu(const LocalTensor<half>& dst, const LocalTensor<int32_t>& src0, const LocalTensor<int32_t>& src1,
                       uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& p,
                       const emu::Loc& loc = emu::Loc::current()) {
    AddDeqRelu<half, int32_t, isSetMask>(dst, src0, src1, mask, repeatTime, p, loc);
}
template <bool isSetMask = true>
inline void AddDeqRelu(const LocalTensor<half>& dst, const LocalTensor<int32_t>& src0, const LocalTensor<int32_t>& src1,
                       const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& p,
                       const emu::Loc& loc = emu::Loc::current()) {
    AddDeqRelu<half, int32_t, isSetMask>(dst, src0, src1, mask, repeatTime, p, loc);
}
#undef EMU_DEQ_OK
#undef EMU_DEQ_EXPR
#undef EMU_EXT_CASTOP

// Cast with a bit mask (the count and continuous-mask forms are in emu_vector.h).
template <typename D, typename S, bool isSetMask = true>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& round_mode, const uint64_t mask[],
                 const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    if constexpr (std::is_same_v<D, int4b_t> || std::is_same_v<S, int4b_t>) {
        emu::vec::cast_int4(dst, src, round_mode, isSetMask, 0, mask, repeatTime, p, loc);
    } else {
        emu::vec::check_cast<D, S>(round_mode, loc);
        constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(D), sizeof(S));
        auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, E, "Cast", loc);
        auto f = emu::vec::cast_fn<D, S>(round_mode);
        emu_ext::unary_rep<D, S, false>("Cast", dst, src, sh, p, [f](S x, D) { return f(x); }, loc);
    }
}

// Unary Not (bitwise), count and mask forms.
template <typename T>
inline void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,
                const emu::Loc& loc = emu::Loc::current()) {
    static_assert(EMU_LOGIC || (emu::is_3510() && emu_ext::one_of<T, half, float>), "Not: data type not supported");
    auto sh = emu::vec::shape_count(true, count, emu_ext::rep_of<T>, "Not", loc);
    emu_ext::unary_count<T, T, false>("Not", dst, src, sh, [](T a, T) {
        return emu::vec::from_bits<T>((emu::vec::UBits<T>)~emu::vec::bits_of(a)); }, loc);
}
template <typename T, bool isSetMask = true>
inline void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask, const uint8_t repeatTime,
                const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(EMU_LOGIC || (emu::is_3510() && emu_ext::one_of<T, half, float>), "Not: data type not supported");
    auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Not", loc);
    emu_ext::unary_rep<T, T, false>("Not", dst, src, sh, p, [](T a, T) {
        return emu::vec::from_bits<T>((emu::vec::UBits<T>)~emu::vec::bits_of(a)); }, loc);
}
template <typename T, bool isSetMask = true>
inline void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const uint8_t repeatTime,
                const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(EMU_LOGIC || (emu::is_3510() && emu_ext::one_of<T, half, float>), "Not: data type not supported");
    auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Not", loc);
    emu_ext::unary_rep<T, T, false>("Not", dst, src, sh, p, [](T a, T) {
        return emu::vec::from_bits<T>((emu::vec::UBits<T>)~emu::vec::bits_of(a)); }, loc);
}

// Neg (3510): dst = -src.
template <typename T>
inline void Neg(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
                const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu::is_3510() && emu_ext::dep<T>, "Neg is documented for Ascend 950 (dav-3510) only");
    auto sh = emu::vec::shape_count(true, count, emu_ext::rep_of<T>, "Neg", loc);
    emu_ext::unary_count<T, T, false>("Neg", dst, src, sh, [](T a, T) { return EMU_R(-EMU_C(a)); }, loc);
}

// ------------------------------------------------ scalar-operand ops with isSetMask
// (LeakyRelu, ShiftLeft, ShiftRight): count form, continuous mask and bit mask forms; the
// scalar has the element type (the U overloads take any other scalar type and convert it to T
// first). EXPR sees x (element), s (scalar) and rnd (ShiftRight's roundEn).
#define EMU_EXT_SCALAR_COUNT(NAME, TYPES_OK, EXPR)                                                                    \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& count,  \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        static_assert(TYPES_OK, #NAME ": data type not supported on this arch (see the API page)");                    \
        const T s = scalarValue; const bool rnd = false; (void)rnd;                                                    \
        auto sh = emu::vec::shape_count(isSetMask, count, emu_ext::rep_of<T>, #NAME, loc);                             \
        emu_ext::unary_count<T, T, false>(#NAME, dst, src, sh, [s, rnd](T x, T) { return EXPR; }, loc);                \
    }                                                                                                                 \
    template <typename T, typename U, bool isSetMask = true,                                                          \
              std::enable_if_t<!emu::vec::is_local_v<U>, int> = 0>                            \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue, const int32_t& count,  \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        NAME<T, isSetMask>(dst, src, T(scalarValue), count, loc);                                                      \
    }
#define EMU_EXT_SCALAR_MASK(NAME, TYPES_OK, MASK_T, SHAPE, EXPR)                                                      \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, MASK_T,              \
                     const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) { \
        static_assert(TYPES_OK, #NAME ": data type not supported on this arch (see the API page)");                    \
        const T s = scalarValue; const bool rnd = false; (void)rnd;                                                    \
        auto sh = emu::vec::SHAPE(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, #NAME, loc);                        \
        emu_ext::unary_rep<T, T, false>(#NAME, dst, src, sh, p, [s, rnd](T x, T) { return EXPR; }, loc);               \
    }                                                                                                                 \
    template <typename T, typename U, bool isSetMask = true,                                                          \
              std::enable_if_t<!emu::vec::is_local_v<U>, int> = 0>                            \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue, MASK_T,              \
                     const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) { \
        NAME<T, isSetMask>(dst, src, T(scalarValue), mask, repeatTime, p, loc);                                        \
    }
#define EMU_EXT_SCALAR(NAME, TYPES_OK, EXPR)                                                                          \
    EMU_EXT_SCALAR_COUNT(NAME, TYPES_OK, EXPR)                                                                        \
    EMU_EXT_SCALAR_MASK(NAME, TYPES_OK, uint64_t mask, shape_cont, EXPR)                                              \
    EMU_EXT_SCALAR_MASK(NAME, TYPES_OK, const uint64_t mask[], shape_bits, EXPR)

#define EMU_LEAKY_TYPES (emu_ext::one_of<T, half, float>)
#define EMU_SHIFT_TYPES (emu_ext::one_of<T, int16_t, uint16_t, int32_t, uint32_t> || \
                         (emu::is_3510() && emu_ext::one_of<T, int8_t, uint8_t, int64_t, uint64_t>))
// LeakyRelu: x >= 0 ? x : scalar * x (rounded once).
EMU_EXT_SCALAR(LeakyRelu, EMU_LEAKY_TYPES, (EMU_C(x) >= 0 ? x : EMU_R(EMU_C(x) * EMU_C(s))))
EMU_EXT_SCALAR(ShiftLeft, EMU_SHIFT_TYPES, emu::vec::shift_left<T>(x, (int64_t)s))
EMU_EXT_SCALAR_COUNT(ShiftRight, EMU_SHIFT_TYPES, emu::vec::shift_right<T>(x, (int64_t)s))
#undef EMU_EXT_SCALAR
#undef EMU_EXT_SCALAR_MASK
#undef EMU_EXT_SCALAR_COUNT
// ShiftRight mask forms carry roundEn (int16/int32 only on A2/A3; the 950 accepts false only).
namespace emu_ext {
template <class T, class MK>
inline void shift_right_rep(const LocalTensor<T>& dst, const LocalTensor<T>& src, T s, const Shape& sh,
                            const UnaryRepeatParams& p, bool roundEn, const emu::Loc& loc) {
    if (roundEn && (emu::is_3510() || !one_of<T, int16_t, int32_t>))
        emu::fail("invalid_param", "ShiftRight: roundEn is documented for int16_t/int32_t on A2/A3 only", loc);
    unary_rep<T, T, false>("ShiftRight", dst, src, sh, p,
                           [s, roundEn](T x, T) { return emu::vec::shift_right<T>(x, (int64_t)s, roundEn); }, loc);
}
}  // namespace emu_ext
template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask,
                       const uint8_t repeatTime, const UnaryRepeatParams& p, bool roundEn = false,
                       const emu::Loc& loc = emu::Loc::current()) {
    static_assert(EMU_SHIFT_TYPES, "ShiftRight: data type not supported on this arch (see the API page)");
    auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "ShiftRight", loc);
    emu_ext::shift_right_rep<T, int>(dst, src, scalarValue, sh, p, roundEn, loc);
}
template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const uint64_t mask[],
                       const uint8_t repeatTime, const UnaryRepeatParams& p, bool roundEn = false,
                       const emu::Loc& loc = emu::Loc::current()) {
    static_assert(EMU_SHIFT_TYPES, "ShiftRight: data type not supported on this arch (see the API page)");
    auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "ShiftRight", loc);
    emu_ext::shift_right_rep<T, int>(dst, src, scalarValue, sh, p, roundEn, loc);
}
template <typename T, typename U, bool isSetMask = true,
          std::enable_if_t<!emu::vec::is_local_v<U>, int> = 0>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue, uint64_t mask,
                       const uint8_t repeatTime, const UnaryRepeatParams& p, bool roundEn = false,
                       const emu::Loc& loc = emu::Loc::current()) {
    ShiftRight<T, isSetMask>(dst, src, T(scalarValue), mask, repeatTime, p, roundEn, loc);
}

// ShiftLeft / ShiftRight with a tensor of shift amounts (3510).
template <typename T, typename U, std::enable_if_t<std::is_integral_v<U>, int> = 0>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1,
                      const int32_t& count, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu::is_3510() && emu_ext::dep<T>, "ShiftLeft with a tensor of shift amounts is documented for Ascend 950 (dav-3510) only");
    static_assert(sizeof(T) == sizeof(U), "ShiftLeft: shift tensor must have the width of the data");
    emu_ext::binary_count<T, T, false>("ShiftLeft", dst, src0, src1.template ReinterpretCast<T>(), count,
        [](T a, T b, T) { return emu::vec::shift_left<T>(a, (int64_t)(U)emu::vec::bits_of(b)); }, loc);
}
template <typename T, typename U, std::enable_if_t<std::is_integral_v<U>, int> = 0>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1,
                       const int32_t& count, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu::is_3510() && emu_ext::dep<T>, "ShiftRight with a tensor of shift amounts is documented for Ascend 950 (dav-3510) only");
    static_assert(sizeof(T) == sizeof(U), "ShiftRight: shift tensor must have the width of the data");
    emu_ext::binary_count<T, T, false>("ShiftRight", dst, src0, src1.template ReinterpretCast<T>(), count,
        [](T a, T b, T) { return emu::vec::shift_right<T>(a, (int64_t)(U)emu::vec::bits_of(b)); }, loc);
}

// =============================================================== Duplicate (mask forms, 3510 tensor form)
namespace emu_ext {
template <class T, class SH>
inline void dup_rep(const LocalTensor<T>& dst, T v, const SH& sh, uint64_t blk, uint64_t rep, const emu::Loc& loc) {
    Opd<T> d = emu::vec::opd(dst, blk, rep);
    emu::vec::ew("Duplicate", d, false, sh, [v](uint64_t, uint32_t) { return v; }, loc);
}
}  // namespace emu_ext
template <typename T, typename U, bool isSetMask = true,
          std::enable_if_t<std::is_arithmetic_v<U> || emu::is_f16_like<U>, int> = 0>
inline void Duplicate(const LocalTensor<T>& dst, const U& scalarValue, uint64_t mask, const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, const emu::Loc& loc = emu::Loc::current()) {
    auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Duplicate", loc);
    emu_ext::dup_rep<T>(dst, T(scalarValue), sh, dstBlockStride, dstRepeatStride, loc);
}
template <typename T, typename U, bool isSetMask = true,
          std::enable_if_t<std::is_arithmetic_v<U> || emu::is_f16_like<U>, int> = 0>
inline void Duplicate(const LocalTensor<T>& dst, const U& scalarValue, const uint64_t mask[], const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, const emu::Loc& loc = emu::Loc::current()) {
    auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Duplicate", loc);
    emu_ext::dup_rep<T>(dst, T(scalarValue), sh, dstBlockStride, dstRepeatStride, loc);
}
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask, const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, const emu::Loc& loc = emu::Loc::current()) {
    Duplicate<T, T, isSetMask>(dst, scalarValue, mask, repeatTime, dstBlockStride, dstRepeatStride, loc);
}
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const uint64_t mask[], const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, const emu::Loc& loc = emu::Loc::current()) {
    Duplicate<T, T, isSetMask>(dst, scalarValue, mask, repeatTime, dstBlockStride, dstRepeatStride, loc);
}
// 950: fill with the first element of a LocalTensor (Duplicate page).
template <typename T>
inline void Duplicate(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,
                      const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu::is_3510() && emu_ext::dep<T>, "Duplicate from a LocalTensor is documented for Ascend 950 (dav-3510) only");
    emu::ops::SpanSet extra;
    const T v = emu::vec::scalar_of<T>(src, extra);
    auto sh = emu::vec::shape_count(true, count, emu_ext::rep_of<T>, "Duplicate", loc);
    sh.extra = &extra;
    emu_ext::dup_rep<T>(dst, v, sh, 1, 8, loc);
}

// =============================================================== CreateVecIndex
// dst element i (count form) or (repeat r, element e) of the mask form = firstValue + i, with
// i = r * elements-per-repeat + e (**assumed** for the mask form), computed in float and
// rounded to T (int types: exact).
namespace emu_ext {
template <class T> inline constexpr bool cvi_ok = one_of<T, int16_t, half, int32_t, float> ||
                                                 (emu::is_3510() && one_of<T, int8_t, int64_t>);
template <class T, class SH>
inline void cvi(const LocalTensor<T>& dst, T first, const SH& sh, uint64_t blk, uint64_t rep, const emu::Loc& loc) {
    Opd<T> d = emu::vec::opd(dst, blk, rep);
    const uint32_t E = sh.E;
    emu::vec::ew("CreateVecIndex", d, false, sh, [first, E](uint64_t r, uint32_t e) {
        if constexpr (emu::is_float_like<T>) return T((float)first + (float)(r * E + e));
        else return (T)((int64_t)first + (int64_t)(r * E + e));
    }, loc);
}
}  // namespace emu_ext
template <typename T>
inline void CreateVecIndex(LocalTensor<T> dst, const T& firstValue, uint32_t count,
                           const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::cvi_ok<T>, "CreateVecIndex: data type not supported on this arch (see the API page)");
    auto sh = emu::vec::shape_count(true, count, emu_ext::rep_of<T>, "CreateVecIndex", loc);
    emu_ext::cvi<T>(dst, firstValue, sh, 1, 8, loc);
}
template <typename T>
inline void CreateVecIndex(LocalTensor<T>& dst, const T& firstValue, uint64_t mask, uint8_t repeatTime, uint16_t dstBlkStride,
                           uint8_t dstRepStride, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::cvi_ok<T>, "CreateVecIndex: data type not supported on this arch (see the API page)");
    auto sh = emu::vec::shape_cont(true, mask, repeatTime, emu_ext::rep_of<T>, "CreateVecIndex", loc);
    emu_ext::cvi<T>(dst, firstValue, sh, dstBlkStride, dstRepStride, loc);
}
template <typename T>
inline void CreateVecIndex(LocalTensor<T>& dst, const T& firstValue, const uint64_t mask[], uint8_t repeatTime,
                           uint16_t dstBlkStride, uint8_t dstRepStride, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::cvi_ok<T>, "CreateVecIndex: data type not supported on this arch (see the API page)");
    auto sh = emu::vec::shape_bits(true, mask, repeatTime, emu_ext::rep_of<T>, "CreateVecIndex", loc);
    emu_ext::cvi<T>(dst, firstValue, sh, dstBlkStride, dstRepStride, loc);
}

// =============================================================== Interleave / DeInterleave (950)
// Interleave: the pairs (src0[i], src1[i]) laid out one after the other over 2*count
// elements, the first count in dst0 and the rest in dst1. DeInterleave: src0 then src1 read
// as one sequence of 2*count elements (or src alone); even positions to dst0, odd to dst1.
namespace emu_ext {
template <class T>
inline void interleave_impl(const char* op, const LocalTensor<T>& d0, const LocalTensor<T>& d1, const LocalTensor<T>& s0,
                            const LocalTensor<T>* s1, int64_t n_in, bool inter, const emu::Loc& loc) {
    static_assert(emu::is_3510() && dep<T>, "Interleave/DeInterleave are documented for Ascend 950 (dav-3510) only");
    emu::vec::check_count(n_in, op, loc);
    if (n_in % 2) emu::fail("invalid_param", std::string(op) + ": count must be even", loc);
    emu::vec::check_ub(d0, op, loc); emu::vec::check_ub(d1, op, loc); emu::vec::check_ub(s0, op, loc);
    const uint64_t n = (uint64_t)n_in;
    const uint64_t nout = s1 ? n : n / 2;          // elements per destination
    emu::ops::SpanSet r, w;
    r.add(s0, 0, n * sizeof(T));
    if (s1) r.add(*s1, 0, n * sizeof(T));
    w.add(d0, 0, nout * sizeof(T));
    w.add(d1, 0, nout * sizeof(T));
    emu::Cost c; c.elems = 2 * nout; c.repeats = (uint32_t)((2 * nout * sizeof(T) + 255) / 256);
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    std::vector<T> in(s0.emu_ptr(), s0.emu_ptr() + n);
    if (s1) in.insert(in.end(), s1->emu_ptr(), s1->emu_ptr() + n);
    std::vector<T> out(in.size());
    if (inter) {
        for (uint64_t i = 0; i < n; ++i) { out[2 * i] = in[i]; out[2 * i + 1] = in[n + i]; }
    } else {
        const uint64_t h = in.size() / 2;
        for (uint64_t i = 0; i < h; ++i) { out[i] = in[2 * i]; out[h + i] = in[2 * i + 1]; }
    }
    std::copy(out.begin(), out.begin() + nout, d0.emu_ptr());
    std::copy(out.begin() + nout, out.begin() + 2 * nout, d1.emu_ptr());
}
}  // namespace emu_ext
template <typename T>
inline void Interleave(const LocalTensor<T>& dst0, const LocalTensor<T>& dst1, const LocalTensor<T>& src0,
                       const LocalTensor<T>& src1, const int32_t count, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::interleave_impl<T>("Interleave", dst0, dst1, src0, &src1, count, true, loc);
}
template <typename T>
inline void DeInterleave(const LocalTensor<T>& dst0, const LocalTensor<T>& dst1, const LocalTensor<T>& src0,
                         const LocalTensor<T>& src1, const int32_t count, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::interleave_impl<T>("DeInterleave", dst0, dst1, src0, &src1, count, false, loc);
}
template <typename T>
inline void DeInterleave(const LocalTensor<T>& dst0, const LocalTensor<T>& dst1, const LocalTensor<T>& src,
                         const int32_t srcCount, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::interleave_impl<T>("DeInterleave", dst0, dst1, src, (const LocalTensor<T>*)nullptr, srcCount, false, loc);
}

// =============================================================== 950 flexible-scalar forms
// One of src0/src1 is a scalar: a value, or a single-point LocalTensor (its element 0). When
// both are LocalTensors, config.scalarTensorIndex names the scalar (0 left, 1 right).
namespace emu_ext {
template <const BinaryConfig& cfg, class S, class V>
inline constexpr int scalar_side() {
    if constexpr (emu::vec::is_local_v<S> && emu::vec::is_local_v<V>) return cfg.scalarTensorIndex == 0 ? 0 : 1;
    else if constexpr (emu::vec::is_local_v<S>) return 1;
    else return 0;
}
template <const BinaryConfig& cfg, class U, class S, class V, class F>
inline void flex(const char* op, const U& dst, const S& src0, const V& src1, Shape sh, uint64_t dblk, uint64_t sblk,
                 uint64_t drep, uint64_t srep, F f, const emu::Loc& loc) {
    static_assert(emu::vec::is_local_v<U>, "flexible-scalar form: dst must be a LocalTensor");
    static_assert(emu::vec::is_local_v<S> || emu::vec::is_local_v<V>, "flexible-scalar form: one operand must be a vector");
    using D = typename emu::vec::elem_of<U>::type;
    constexpr int side = scalar_side<cfg, S, V>();
    emu::ops::SpanSet extra;
    if constexpr (side == 0) {
        const D s = emu::vec::scalar_of<D>(src0, extra);
        sh.extra = &extra;
        unary_ex<D, D, false>(op, dst, src1, sh, dblk, sblk, drep, srep, [s, &f](D x, D) { return f(s, x); }, loc);
    } else {
        const D s = emu::vec::scalar_of<D>(src1, extra);
        sh.extra = &extra;
        unary_ex<D, D, false>(op, dst, src0, sh, dblk, sblk, drep, srep, [s, &f](D x, D) { return f(x, s); }, loc);
    }
}
}  // namespace emu_ext

#define EMU_EXT_FLEX(NAME, EXPR)                                                                                      \
    template <typename T = BinaryDefaultType, bool isSetMask = true, const BinaryConfig& config = DEFAULT_BINARY_CONFIG, \
              typename U, typename S, typename V, std::enable_if_t<emu::vec::is_local_v<U>, int> = 0>                  \
    inline void NAME(const U& dst, const S& src0, const V& src1, const int32_t& count,                                \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        static_assert(emu::is_3510() && emu_ext::dep<U>, #NAME ": the flexible-scalar form is documented for Ascend 950 only"); \
        using D = typename emu::vec::elem_of<U>::type;                                                                \
        auto sh = emu::vec::shape_count(true, count, emu_ext::rep_of<D>, #NAME, loc);                                 \
        emu_ext::flex<config>(#NAME, dst, src0, src1, sh, 1, 1, 8, 8, [](D a, D b) { return EXPR; }, loc);             \
    }                                                                                                                 \
    template <typename T = BinaryDefaultType, bool isSetMask = true, const BinaryConfig& config = DEFAULT_BINARY_CONFIG, \
              typename U, typename S, typename V, std::enable_if_t<emu::vec::is_local_v<U>, int> = 0>                  \
    inline void NAME(const U& dst, const S& src0, const V& src1, uint64_t mask, const uint8_t repeatTime,             \
                     const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {                         \
        static_assert(emu::is_3510() && emu_ext::dep<U>, #NAME ": the flexible-scalar form is documented for Ascend 950 only"); \
        using D = typename emu::vec::elem_of<U>::type;                                                                \
        auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<D>, #NAME, loc);                  \
        emu_ext::flex<config>(#NAME, dst, src0, src1, sh, p.dstBlkStride, p.srcBlkStride, p.dstRepStride,             \
                              p.srcRepStride, [](D a, D b) { return EXPR; }, loc);                                    \
    }                                                                                                                 \
    template <typename T = BinaryDefaultType, bool isSetMask = true, const BinaryConfig& config = DEFAULT_BINARY_CONFIG, \
              typename U, typename S, typename V, std::enable_if_t<emu::vec::is_local_v<U>, int> = 0>                  \
    inline void NAME(const U& dst, const S& src0, const V& src1, const uint64_t mask[], const uint8_t repeatTime,     \
                     const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {                         \
        static_assert(emu::is_3510() && emu_ext::dep<U>, #NAME ": the flexible-scalar form is documented for Ascend 950 only"); \
        using D = typename emu::vec::elem_of<U>::type;                                                                \
        auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<D>, #NAME, loc);                  \
        emu_ext::flex<config>(#NAME, dst, src0, src1, sh, p.dstBlkStride, p.srcBlkStride, p.dstRepStride,             \
                              p.srcRepStride, [](D a, D b) { return EXPR; }, loc);                                    \
    }
#define EMU_CD(x) emu::vec::in<D>(x)
#define EMU_RD(x) emu::vec::out<D>(x)
#define EMU_BITS(OP) emu::vec::from_bits<D>((emu::vec::UBits<D>)(emu::vec::bits_of(a) OP emu::vec::bits_of(b)))
EMU_EXT_FLEX(Adds, EMU_RD(EMU_CD(a) + EMU_CD(b)))
EMU_EXT_FLEX(Subs, EMU_RD(EMU_CD(a) - EMU_CD(b)))
EMU_EXT_FLEX(Muls, EMU_RD(EMU_CD(a) * EMU_CD(b)))
EMU_EXT_FLEX(Divs, (b == D(0) && !emu::is_float_like<D>) ? D(0) : EMU_RD(EMU_CD(a) / EMU_CD(b)))
EMU_EXT_FLEX(Maxs, (EMU_CD(a) > EMU_CD(b) || a != a) ? a : b)
EMU_EXT_FLEX(Mins, (EMU_CD(a) < EMU_CD(b) || a != a) ? a : b)
EMU_EXT_FLEX(Ands, EMU_BITS(&))
EMU_EXT_FLEX(Ors, EMU_BITS(|))
#undef EMU_EXT_FLEX

// =============================================================== GatherMask / Gather / Gatherb
// GatherMask: the elements of src0 whose gather-mask bit is 1 are written one after another to
// dst[0..rsvdCnt). Normal mode (reduceMode false): repeatTimes repeats of 256 bytes, src0
// addressed with src0BlockStride / src0RepeatStride. Counter mode (reduceMode true; A2/A3/950:
// "configuration 1"): each of the repeatTimes repeats takes `mask` elements. The mask bits come
// from a built-in pattern (1..7, the same in every repeat) or from src1Pattern, consumed bit
// by bit within a repeat, src1RepeatStride blocks between repeats. The call leaves the mask
// mode in Normal (GatherMask page).
namespace emu_ext {
inline bool gm_pattern(uint8_t pat, uint64_t k) {
    switch (pat) {
        case 1: return k % 2 == 0;
        case 2: return k % 2 == 1;
        case 3: return k % 4 == 0;
        case 4: return k % 4 == 1;
        case 5: return k % 4 == 2;
        case 6: return k % 4 == 3;
        default: return true;     // 7
    }
}
template <class T, class PatBit>
inline void gather_mask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const emu::ops::SpanSet& pat_reads,
                        PatBit bit, bool reduceMode, uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt,
                        const emu::Loc& loc) {
    static_assert(one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float> ||
                  (emu::is_3510() && one_of<T, int8_t, uint8_t>), "GatherMask: data type not supported on this arch");
    const char* op = "GatherMask";
    emu::vec::check_ub(dst, op, loc); emu::vec::check_ub(src0, op, loc);
    constexpr uint32_t C0 = emu::C0<T>;
    const uint64_t per = reduceMode ? (uint64_t)mask : (uint64_t)emu::REP_ELEMS<T>;
    if (reduceMode && mask == 0) emu::fail("invalid_param", "GatherMask: mask must be in [1, 2^32-1] in counter mode", loc);
    std::vector<uint64_t> picked;
    emu::ops::SpanSet r, w;
    for (const emu::Span& x : pat_reads.v) r.add(x);
    for (uint64_t rr = 0; rr < p.repeatTimes; ++rr) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (uint64_t k = 0; k < per; ++k) {
            const uint64_t o = rr * p.src0RepeatStride * C0 + (k / C0) * p.src0BlockStride * C0 + k % C0;
            lo = std::min(lo, o); hi = std::max(hi, o + 1);
            if (bit(rr, k)) picked.push_back(o);
        }
        if (hi > lo) r.add(src0, lo * sizeof(T), hi * sizeof(T));
    }
    w.add(dst, 0, picked.size() * sizeof(T));
    emu::Cost c; c.elems = (uint64_t)p.repeatTimes * per;
    c.repeats = (uint32_t)std::max<uint64_t>(1, (c.elems * sizeof(T) + 255) / 256);
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    const T* s = src0.emu_ptr();
    std::vector<T> vals(picked.size());
    for (size_t i = 0; i < picked.size(); ++i) vals[i] = s[picked[i]];
    std::copy(vals.begin(), vals.end(), dst.emu_ptr());
    rsvdCnt = picked.size();
    emu::vec::mask_state().counter = false;
}
}  // namespace emu_ext
template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt,
                       const emu::Loc& loc = emu::Loc::current()) {
    static_assert(sizeof(U) == sizeof(T) && std::is_unsigned_v<U>, "GatherMask: src1Pattern must be the unsigned type of T's width");
    emu::vec::check_ub(src1Pattern, "GatherMask", loc);
    const uint8_t* pb = reinterpret_cast<const uint8_t*>(src1Pattern.emu_ptr());
    const uint64_t per = reduceMode ? (uint64_t)mask : (uint64_t)emu::REP_ELEMS<T>;
    emu::ops::SpanSet pr;
    for (uint64_t rr = 0; rr < p.repeatTimes; ++rr) {
        const uint64_t b0 = rr * p.src1RepeatStride * 32;
        pr.add(src1Pattern, b0, b0 + (per + 7) / 8);
    }
    const uint64_t stride = p.src1RepeatStride;
    emu_ext::gather_mask(dst, src0, pr, [pb, stride](uint64_t rr, uint64_t k) {
        const uint64_t bitpos = rr * stride * 256 + k;
        return ((pb[bitpos / 8] >> (bitpos % 8)) & 1u) != 0;
    }, reduceMode, mask, p, rsvdCnt, loc);
}
template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt,
                       const emu::Loc& loc = emu::Loc::current()) {
    if (src1Pattern < 1 || src1Pattern > 7)
        emu::fail("invalid_param", "GatherMask: the built-in pattern must be in [1, 7], got " + std::to_string(src1Pattern), loc);
    emu::ops::SpanSet none;
    const uint8_t pat = src1Pattern;
    emu_ext::gather_mask(dst, src0, none, [pat](uint64_t, uint64_t k) { return emu_ext::gm_pattern(pat, k); },
                         reduceMode, mask, p, rsvdCnt, loc);
}

}  // namespace AscendC
namespace emu::vec {
// Gather page, "数据类型": the A2/A3 line, and the 950 line (int8_t / uint8_t in the count form only).
using dt_gather = by_arch<dtypes_row<tlist<int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>>,
                          dtypes_row<tlist<int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float, int64_t,
                                           uint64_t>, tlist<int8_t, uint8_t>>>;
}  // namespace emu::vec
namespace AscendC {
// Gather: dst[i] = src[(srcBaseAddr + srcOffset[i]) / sizeof(T)] (byte offsets). Mask form:
// repeat r, element e reads offset r*E + e and writes dst element r*dstRepStride*C0 + e.
namespace emu_ext {
template <class T>
inline void gather_impl(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& off,
                        uint32_t base, const Shape& sh, uint64_t dst_rep, const emu::Loc& loc) {
    static_assert(emu::vec::dt_gather::count<T>, "Gather: data type not supported on this arch (Gather page)");
    const char* op = "Gather";
    emu::vec::check_ub(dst, op, loc); emu::vec::check_ub(src, op, loc); emu::vec::check_ub(off, op, loc);
    if (dst.emu_mem() == src.emu_mem() && dst.emu_offset() == src.emu_offset())
        emu::fail("invalid_param", "Gather: src and dst must not be the same memory (Gather page)", loc);
    const uint32_t E = sh.E;
    const uint32_t* po = off.emu_ptr();
    emu::ops::SpanSet r, w;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int64_t rr = 0; rr < sh.repeat; ++rr) {
        const emu::vec::Mask mr = sh.mk.at((uint64_t)rr, E);
        uint64_t dlo = UINT64_MAX, dhi = 0;
        for (uint32_t e = 0; e < E; ++e) {
            if (!mr.on(e)) continue;
            const uint64_t i = (uint64_t)rr * E + e;
            r.add(off, i * 4, i * 4 + 4);
            const uint64_t b = (uint64_t)base + po[i];
            if (b % sizeof(T)) emu::fail("invalid_param", "Gather: offset " + std::to_string(b) + " is not aligned to the element size", loc);
            lo = std::min(lo, b); hi = std::max(hi, b + sizeof(T));
            const uint64_t o = (uint64_t)rr * dst_rep + e;
            dlo = std::min(dlo, o); dhi = std::max(dhi, o + 1);
        }
        if (dhi > dlo) w.add(dst, dlo * sizeof(T), dhi * sizeof(T));
    }
    if (hi > lo) r.add(src, lo, hi);
    emu::Cost c; c.elems = sh.elems(); c.repeats = (uint32_t)sh.repeat;
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    const T* ps = src.emu_ptr(); T* pd = dst.emu_ptr();
    for (int64_t rr = 0; rr < sh.repeat; ++rr) {
        const emu::vec::Mask mr = sh.mk.at((uint64_t)rr, E);
        for (uint32_t e = 0; e < E; ++e)
            if (mr.on(e)) {
                const uint64_t i = (uint64_t)rr * E + e;
                pd[(uint64_t)rr * dst_rep + e] = ps[((uint64_t)base + po[i]) / sizeof(T)];
            }
    }
}
}  // namespace emu_ext
template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint32_t count, const emu::Loc& loc = emu::Loc::current()) {
    auto sh = emu::vec::shape_count(true, count, emu_ext::rep_of<T>, "Gather", loc);
    emu_ext::gather_impl<T>(dst, src, srcOffset, srcBaseAddr, sh, emu_ext::rep_of<T>, loc);
}
template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint64_t mask, const uint8_t repeatTime, const uint16_t dstRepStride,
                   const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu::vec::dt_gather::rep<T>, "Gather (mask form): data type not supported on this arch (Gather page)");
    auto sh = emu::vec::shape_cont(true, mask, repeatTime, emu_ext::rep_of<T>, "Gather", loc);
    emu_ext::gather_impl<T>(dst, src, srcOffset, srcBaseAddr, sh, (uint64_t)dstRepStride * emu::C0<T>, loc);
}
template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint64_t mask[], const uint8_t repeatTime, const uint16_t dstRepStride,
                   const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu::vec::dt_gather::rep<T>, "Gather (mask form): data type not supported on this arch (Gather page)");
    auto sh = emu::vec::shape_bits(true, mask, repeatTime, emu_ext::rep_of<T>, "Gather", loc);
    emu_ext::gather_impl<T>(dst, src, srcOffset, srcBaseAddr, sh, (uint64_t)dstRepStride * emu::C0<T>, loc);
}

// Gatherb: repeat i, block j copies the 32 bytes at byte offset offset[8i+j] of src to dst block
// i*dstRepStride + j*dstBlkStride (dstBlkStride 0 counts as 1).
template <typename T>
inline void Gatherb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& offset,
                    const uint8_t repeatTime, const GatherRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::one_of<T, uint16_t, uint32_t> || (emu::is_3510() && emu_ext::dep<T>),
                  "Gatherb: data type not supported on this arch (A2/A3: uint16_t, uint32_t)");
    const char* op = "Gatherb";
    emu::vec::check_ub(dst, op, loc); emu::vec::check_ub(src, op, loc); emu::vec::check_ub(offset, op, loc);
    const uint64_t bs = p.dstBlkStride == 0 ? 1 : p.dstBlkStride;
    const uint32_t* po = offset.emu_ptr();
    emu::ops::SpanSet r, w;
    r.add(offset, 0, (uint64_t)repeatTime * 8 * 4);
    for (uint64_t i = 0; i < repeatTime; ++i)
        for (uint64_t j = 0; j < 8; ++j) {
            const uint64_t o = po[i * 8 + j];
            if (o % 32) emu::fail("invalid_param", "Gatherb: offset " + std::to_string(o) + " is not 32-byte aligned", loc);
            r.add(src, o, o + 32);
            const uint64_t d = (i * p.dstRepStride + j * bs) * 32;
            w.add(dst, d, d + 32);
        }
    emu::Cost c; c.elems = (uint64_t)repeatTime * emu::REP_ELEMS<T>; c.repeats = repeatTime;
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    std::vector<uint8_t> tmp((uint64_t)repeatTime * 8 * 32);
    const uint8_t* ps = reinterpret_cast<const uint8_t*>(src.emu_ptr());
    uint8_t* pd = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    for (uint64_t k = 0; k < (uint64_t)repeatTime * 8; ++k) std::memcpy(&tmp[k * 32], ps + po[k], 32);
    for (uint64_t i = 0; i < repeatTime; ++i)
        for (uint64_t j = 0; j < 8; ++j) std::memcpy(pd + (i * p.dstRepStride + j * bs) * 32, &tmp[(i * 8 + j) * 32], 32);
}

// =============================================================== Compare / Compares / Select
// Compare writes one bit per element (bit i of byte i/8 = src0[i] OP src1[i]; NaN compares
// false except NE). Count forms need count * sizeof(T) to be whole 256-byte repeats. Mask forms
// write repeat r's E bits at bit r*E of dst (**assumed**: the pages do not give a dst stride);
// on A2/A3 the mask of the dst forms is a reserved parameter (every element is compared), on
// the 950 it selects the compared elements (others give 0 bits, **assumed**). The register form
// (no dst) compares one repeat into the 128-bit CmpMask register read by GetCmpMask and by
// Select's VSEL_CMPMASK_SPR mode; SetCmpMask loads it from UB.
}  // namespace AscendC
namespace emu::vec {
struct CmpMaskReg { uint8_t b[16] = {}; };
inline CmpMaskReg& cmp_reg() { thread_local CmpMaskReg r; return r; }
}  // namespace emu::vec
namespace AscendC {
namespace emu_ext {
template <class C>
inline bool cmp(CMPMODE m, C a, C b) {
    switch (m) {
        case CMPMODE::LT: return a < b; case CMPMODE::GT: return a > b; case CMPMODE::EQ: return a == b;
        case CMPMODE::LE: return a <= b; case CMPMODE::GE: return a >= b; case CMPMODE::NE: return a != b;
    }
    return false;
}
template <class T>
inline void check_cmp_type(CMPMODE m, const char* op, const emu::Loc& loc) {
    static_assert(one_of<T, half, float, int32_t> ||
                  (emu::is_3510() && one_of<T, int8_t, uint8_t, int16_t, uint16_t, bfloat16_t, uint32_t, int64_t, uint64_t, double>),
                  "Compare/Compares: data type not supported on this arch (see the API page)");
    if constexpr (emu::is_c220() && std::is_same_v<T, int32_t>)
        if (m != CMPMODE::EQ) emu::fail("invalid_param", std::string(op) + ": int32_t supports CMPMODE::EQ only on A2/A3", loc);
}
// Compare of an element stream into dst bits. `get0(r, e)` / `get1(r, e)` read the operands;
// the caller passes the spans they read.
template <class T, class U, class G0, class G1>
inline void cmp_bits(const char* op, const LocalTensor<U>& dst, emu::ops::SpanSet& r, const Shape& sh, bool use_mask,
                     CMPMODE m, G0 get0, G1 get1, const emu::Loc& loc) {
    static_assert(sizeof(U) == 1, "Compare: dst must be int8_t/uint8_t (one bit per element)");
    emu::vec::check_ub(dst, op, loc);
    const uint32_t E = sh.E;
    const uint64_t nbits = (uint64_t)sh.repeat * E;
    emu::ops::SpanSet w;
    w.add(dst, 0, (nbits + 7) / 8);
    emu::Cost c; c.elems = sh.elems(); c.repeats = (uint32_t)sh.repeat;
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    std::vector<uint8_t> bytes((nbits + 7) / 8, 0);
    for (int64_t rr = 0; rr < sh.repeat; ++rr) {
        const emu::vec::Mask mr = sh.mk.at((uint64_t)rr, E);
        for (uint32_t e = 0; e < E; ++e) {
            if (use_mask && !mr.on(e)) continue;
            if (cmp(m, emu::vec::in<T>(get0((uint64_t)rr, e)), emu::vec::in<T>(get1((uint64_t)rr, e)))) {
                const uint64_t i = (uint64_t)rr * E + e;
                bytes[i / 8] |= (uint8_t)(1u << (i % 8));
            }
        }
    }
    std::memcpy(dst.emu_ptr(), bytes.data(), bytes.size());
}
template <class T>
inline Shape cmp_count_shape(uint32_t count, const char* op, const emu::Loc& loc) {
    if (((uint64_t)count * sizeof(T)) % 256 != 0)
        emu::fail("invalid_param", std::string(op) + ": count * sizeof(T) must be a multiple of 256 bytes (whole repeats)", loc);
    return emu::vec::shape_count(true, count, rep_of<T>, op, loc);
}
}  // namespace emu_ext

template <typename T, typename U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint32_t count, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::check_cmp_type<T>(cmpMode, "Compare", loc);
    emu::vec::check_ub(src0, "Compare", loc); emu::vec::check_ub(src1, "Compare", loc);
    auto sh = emu_ext::cmp_count_shape<T>(count, "Compare", loc);
    auto a = emu::vec::opd_flat(src0, sh.E); auto b = emu::vec::opd_flat(src1, sh.E);
    emu::ops::SpanSet r; emu::vec::add_opd(r, a, sh); emu::vec::add_opd(r, b, sh);
    emu_ext::cmp_bits<T>("Compare", dst, r, sh, true, cmpMode, [&](uint64_t rr, uint32_t e) { return a.at(rr, e); },
                         [&](uint64_t rr, uint32_t e) { return b.at(rr, e); }, loc);
}
namespace emu_ext {
template <class T, class U>
inline void compare_rep(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE m,
                        Shape sh, const BinaryRepeatParams& p, const emu::Loc& loc) {
    check_cmp_type<T>(m, "Compare", loc);
    emu::vec::check_ub(src0, "Compare", loc); emu::vec::check_ub(src1, "Compare", loc);
    const bool use_mask = emu::is_3510();
    if (!use_mask && !sh.mk.counter) { sh.mk.bits = false; sh.mk.cnt = sh.E; }   // A2/A3: the mask is reserved
    auto a = emu::vec::opd(src0, p.src0BlkStride, p.src0RepStride);
    auto b = emu::vec::opd(src1, p.src1BlkStride, p.src1RepStride);
    emu::ops::SpanSet r; emu::vec::add_opd(r, a, sh); emu::vec::add_opd(r, b, sh);
    cmp_bits<T>("Compare", dst, r, sh, true, m, [&](uint64_t rr, uint32_t e) { return a.at(rr, e); },
                [&](uint64_t rr, uint32_t e) { return b.at(rr, e); }, loc);
}
// Register form: one repeat compared into CmpMask (bits of masked-off elements are 0).
template <class T>
inline void compare_reg(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE m, Shape sh,
                        const BinaryRepeatParams& p, const emu::Loc& loc) {
    static_assert(one_of<T, half, float>, "Compare (result in CmpMask): half and float only");
    emu::vec::check_ub(src0, "Compare", loc); emu::vec::check_ub(src1, "Compare", loc);
    sh.repeat = 1;
    if (sh.mk.counter) { sh.mk.counter = false; sh.mk.cnt = std::min<uint64_t>(sh.mk.cnt, sh.E); }
    auto a = emu::vec::opd(src0, p.src0BlkStride, p.src0RepStride);
    auto b = emu::vec::opd(src1, p.src1BlkStride, p.src1RepStride);
    emu::ops::SpanSet r, w; emu::vec::add_opd(r, a, sh); emu::vec::add_opd(r, b, sh);
    emu::Cost c; c.elems = sh.E; c.repeats = 1;
    emu::ops::record_sets("Compare", emu::Pipe::V, r, w, c, loc);
    emu::vec::CmpMaskReg reg;
    for (uint32_t e = 0; e < sh.E; ++e)
        if (sh.mk.on(e) && cmp(m, emu::vec::in<T>(a.at(0, e)), emu::vec::in<T>(b.at(0, e))))
            reg.b[e / 8] |= (uint8_t)(1u << (e % 8));
    emu::vec::cmp_reg() = reg;
}
}  // namespace emu_ext
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    const uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams& p,
                    const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::compare_rep(dst, src0, src1, cmpMode,
                         emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Compare", loc), p, loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    const uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams& p,
                    const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::compare_rep(dst, src0, src1, cmpMode,
                         emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Compare", loc), p, loc);
}
template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask[],
                    const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::compare_reg(src0, src1, cmpMode, emu::vec::shape_bits(isSetMask, mask, 1, emu_ext::rep_of<T>, "Compare", loc),
                         p, loc);
}
template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask,
                    const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::compare_reg(src0, src1, cmpMode, emu::vec::shape_cont(isSetMask, mask, 1, emu_ext::rep_of<T>, "Compare", loc),
                         p, loc);
}

// GetCmpMask: the 128-bit CmpMask register to dst (16 bytes); SetCmpMask: 16 bytes of src to it.
template <typename T>
inline void GetCmpMask(const LocalTensor<T>& dst, const emu::Loc& loc = emu::Loc::current()) {
    emu::vec::check_ub(dst, "GetCmpMask", loc);
    emu::ops::SpanSet r, w; w.add(dst, 0, 16);
    emu::Cost c; c.elems = 128 / (8 * sizeof(T)); c.repeats = 1;
    emu::ops::record_sets("GetCmpMask", emu::Pipe::V, r, w, c, loc);
    std::memcpy(dst.emu_ptr(), emu::vec::cmp_reg().b, 16);
}
template <typename T>
inline void SetCmpMask(const LocalTensor<T>& src, const emu::Loc& loc = emu::Loc::current()) {
    emu::vec::check_ub(src, "SetCmpMask", loc);
    emu::ops::SpanSet r, w; r.add(src, 0, 16);
    emu::Cost c; c.elems = 128 / (8 * sizeof(T)); c.repeats = 1;
    emu::ops::record_sets("SetCmpMask", emu::Pipe::V, r, w, c, loc);
    std::memcpy(emu::vec::cmp_reg().b, src.emu_ptr(), 16);
}

// Compares / CompareScalar: src0 OP scalar.
namespace emu_ext {
template <class T, class U>
inline void compares_impl(const char* op, const LocalTensor<U>& dst, const LocalTensor<T>& src0, T s, CMPMODE m,
                          Shape sh, uint64_t blk, uint64_t rep, bool scalar_left, const emu::ops::SpanSet* extra,
                          const emu::Loc& loc) {
    check_cmp_type<T>(m, op, loc);
    emu::vec::check_ub(src0, op, loc);
    const bool use_mask = emu::is_3510() || sh.mk.counter;
    if (!use_mask) { sh.mk.bits = false; sh.mk.cnt = sh.E; }
    auto a = emu::vec::opd(src0, blk, rep);
    emu::ops::SpanSet r; emu::vec::add_opd(r, a, sh);
    if (extra) for (const emu::Span& x : extra->v) r.add(x);
    if (scalar_left)
        cmp_bits<T>(op, dst, r, sh, true, m, [s](uint64_t, uint32_t) { return s; },
                    [&](uint64_t rr, uint32_t e) { return a.at(rr, e); }, loc);
    else
        cmp_bits<T>(op, dst, r, sh, true, m, [&](uint64_t rr, uint32_t e) { return a.at(rr, e); },
                    [s](uint64_t, uint32_t) { return s; }, loc);
}
}  // namespace emu_ext
#define EMU_EXT_COMPARES(NAME)                                                                                        \
    template <typename T, typename U>                                                                                 \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,       \
                     uint32_t count, const emu::Loc& loc = emu::Loc::current()) {                                     \
        auto sh = emu_ext::cmp_count_shape<T>(count, #NAME, loc);                                                      \
        emu_ext::compares_impl<T>(#NAME, dst, src0, src1Scalar, cmpMode, sh, 1, 8, false, nullptr, loc);              \
    }                                                                                                                 \
    template <typename T, typename U, typename S,                                                                     \
              std::enable_if_t<!std::is_same_v<S, T> && (std::is_arithmetic_v<S> || emu::is_f16_like<S>), int> = 0>  \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const S src1Scalar, CMPMODE cmpMode,       \
                     uint32_t count, const emu::Loc& loc = emu::Loc::current()) {                                     \
        NAME<T, U>(dst, src0, T(src1Scalar), cmpMode, count, loc);                                                     \
    }                                                                                                                 \
    template <typename T, typename U, bool isSetMask = true>                                                          \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,       \
                     const uint64_t mask[], uint8_t repeatTime, const UnaryRepeatParams& p,                          \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, #NAME, loc);                  \
        emu_ext::compares_impl<T>(#NAME, dst, src0, src1Scalar, cmpMode, sh, p.srcBlkStride, p.srcRepStride, false,   \
                                  nullptr, loc);                                                                      \
    }                                                                                                                 \
    template <typename T, typename U, bool isSetMask = true>                                                          \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,       \
                     const uint64_t mask, uint8_t repeatTime, const UnaryRepeatParams& p,                            \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, #NAME, loc);                  \
        emu_ext::compares_impl<T>(#NAME, dst, src0, src1Scalar, cmpMode, sh, p.srcBlkStride, p.srcRepStride, false,   \
                                  nullptr, loc);                                                                      \
    }
EMU_EXT_COMPARES(Compares)
EMU_EXT_COMPARES(CompareScalar)
#undef EMU_EXT_COMPARES

// 950 flexible-scalar Compares / CompareScalar (a scalar or single-point LocalTensor on either side).
namespace emu_ext {
template <const BinaryConfig& cfg, class T2, class T3, class T4>
inline void compares_flex(const char* op, const T2& dst, const T3& src0, const T4& src1, CMPMODE m, Shape sh,
                          uint64_t blk, uint64_t rep, const emu::Loc& loc) {
    static_assert(emu::is_3510() && dep<T2>, "the flexible-scalar Compares is documented for Ascend 950 only");
    static_assert(emu::vec::is_local_v<T3> || emu::vec::is_local_v<T4>, "Compares: one operand must be a vector");
    constexpr int side = scalar_side<cfg, T3, T4>();
    emu::ops::SpanSet extra;
    if constexpr (side == 0) {
        using T = typename emu::vec::elem_of<T4>::type;
        const T s = emu::vec::scalar_of<T>(src0, extra);
        compares_impl<T>(op, dst, src1, s, m, sh, blk, rep, true, &extra, loc);
    } else {
        using T = typename emu::vec::elem_of<T3>::type;
        const T s = emu::vec::scalar_of<T>(src1, extra);
        compares_impl<T>(op, dst, src0, s, m, sh, blk, rep, false, &extra, loc);
    }
}
template <class X> using vec_elem_t = typename emu::vec::elem_of<X>::type;
template <class T3, class T4> using flex_elem_t = std::conditional_t<emu::vec::is_local_v<T3>, vec_elem_t<T3>, vec_elem_t<T4>>;
}  // namespace emu_ext
#define EMU_EXT_COMPARES_FLEX(NAME)                                                                                   \
    template <typename T0 = BinaryDefaultType, typename T1 = BinaryDefaultType, bool isSetMask = true,               \
              const BinaryConfig& config = DEFAULT_BINARY_CONFIG, typename T2, typename T3, typename T4,              \
              std::enable_if_t<emu::vec::is_local_v<T2>, int> = 0>                                                     \
    inline void NAME(const T2& dst, const T3& src0, const T4& src1, CMPMODE cmpMode, uint32_t count,                  \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        using T = emu_ext::flex_elem_t<T3, T4>;                                                                       \
        auto sh = emu_ext::cmp_count_shape<T>(count, #NAME, loc);                                                      \
        emu_ext::compares_flex<config>(#NAME, dst, src0, src1, cmpMode, sh, 1, 8, loc);                               \
    }                                                                                                                 \
    template <typename T0 = BinaryDefaultType, typename T1 = BinaryDefaultType, bool isSetMask = true,               \
              const BinaryConfig& config = DEFAULT_BINARY_CONFIG, typename T2, typename T3, typename T4,              \
              std::enable_if_t<emu::vec::is_local_v<T2>, int> = 0>                                                     \
    inline void NAME(const T2& dst, const T3& src0, const T4& src1, CMPMODE cmpMode, const uint64_t mask,             \
                     uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {     \
        using T = emu_ext::flex_elem_t<T3, T4>;                                                                       \
        auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, #NAME, loc);                  \
        emu_ext::compares_flex<config>(#NAME, dst, src0, src1, cmpMode, sh, p.srcBlkStride, p.srcRepStride, loc);     \
    }                                                                                                                 \
    template <typename T0 = BinaryDefaultType, typename T1 = BinaryDefaultType, bool isSetMask = true,               \
              const BinaryConfig& config = DEFAULT_BINARY_CONFIG, typename T2, typename T3, typename T4,              \
              std::enable_if_t<emu::vec::is_local_v<T2>, int> = 0>                                                     \
    inline void NAME(const T2& dst, const T3& src0, const T4& src1, CMPMODE cmpMode, const uint64_t mask[],           \
                     uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {     \
        using T = emu_ext::flex_elem_t<T3, T4>;                                                                       \
        auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, #NAME, loc);                  \
        emu_ext::compares_flex<config>(#NAME, dst, src0, src1, cmpMode, sh, p.srcBlkStride, p.srcRepStride, loc);     \
    }
EMU_EXT_COMPARES_FLEX(Compares)
EMU_EXT_COMPARES_FLEX(CompareScalar)
#undef EMU_EXT_COMPARES_FLEX

// Select: dst = selMask bit ? src0 : src1 (then, in mask forms, only active elements are
// written). VSEL_CMPMASK_SPR (mode 0): the first E bits of selMask serve every repeat;
// VSEL_TENSOR_SCALAR_MODE (1) and VSEL_TENSOR_TENSOR_MODE (2): repeat r uses bits
// [r*E, (r+1)*E), consumed continuously. The forms without selMask / mask take the mask from
// the mask register and the selection from CmpMask (mode 0: its bits; mode 1: the scalar src1;
// mode 2: the UB address of selMask), as SetCmpMask's page describes.
namespace emu_ext {
template <class T>
inline constexpr bool sel_ok = one_of<T, half, float> ||
    (emu::is_3510() && one_of<T, int8_t, uint8_t, int16_t, uint16_t, bfloat16_t, int32_t, uint32_t, int64_t, uint64_t>);
// bit(r, e) gives the selection; pick1(r, e) gives the src1 value.
template <class T, class Bit, class Pick1>
inline void select_core(const LocalTensor<T>& dst, const Opd<T>& d, const Opd<T>& a, const Opd<T>* b, const Shape& sh,
                        emu::ops::SpanSet& sel_reads, Bit bit, Pick1 pick1, const emu::Loc& loc) {
    static_assert(sel_ok<T>, "Select: data type not supported on this arch (see the API page)");
    emu::vec::check_ub(dst, "Select", loc);
    Shape s2 = sh; s2.extra = &sel_reads;
    if (b)
        emu::vec::ew("Select", d, false, s2, [&](uint64_t r, uint32_t e) { return bit(r, e) ? a.at(r, e) : pick1(r, e); },
                     loc, a, *b);
    else
        emu::vec::ew("Select", d, false, s2, [&](uint64_t r, uint32_t e) { return bit(r, e) ? a.at(r, e) : pick1(r, e); },
                     loc, a);
}
inline bool bit_at(const uint8_t* p, uint64_t i) { return (p[i / 8] >> (i % 8)) & 1u; }
template <class T, class U>
inline void select_any(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                       const LocalTensor<T>* src1, T scalar, SELMODE mode, const Shape& sh, uint64_t dblk, uint64_t s0blk,
                       uint64_t s1blk, uint64_t drep, uint64_t s0rep, uint64_t s1rep, const emu::Loc& loc) {
    emu::vec::check_ub(selMask, "Select", loc);
    const uint32_t E = sh.E;
    const uint8_t* pm = reinterpret_cast<const uint8_t*>(selMask.emu_ptr());
    emu::ops::SpanSet sr;
    if (sh.extra) sr = *sh.extra;
    const bool same = mode == SELMODE::VSEL_CMPMASK_SPR;
    sr.add(selMask, 0, same ? E / 8 : ((uint64_t)sh.repeat * E + 7) / 8);
    auto d = emu::vec::opd(dst, dblk, drep);
    auto a = emu::vec::opd(src0, s0blk, s0rep);
    auto bit = [pm, same, E](uint64_t r, uint32_t e) { return bit_at(pm, same ? e : r * E + e); };
    if (src1) {
        auto b = emu::vec::opd(*src1, s1blk, s1rep);
        select_core<T>(dst, d, a, &b, sh, sr, bit, [&](uint64_t r, uint32_t e) { return b.at(r, e); }, loc);
    } else {
        select_core<T>(dst, d, a, (const Opd<T>*)nullptr, sh, sr, bit, [scalar](uint64_t, uint32_t) { return scalar; }, loc);
    }
}
// A tensor src1 given with VSEL_TENSOR_SCALAR_MODE: on the 950 it is a single-point scalar
// (flexible-scalar Select, default config); elsewhere the mode needs a scalar.
template <class T, class U>
inline void select_tensor(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                          const LocalTensor<T>& src1, SELMODE mode, Shape sh, const BinaryRepeatParams& p,
                          const emu::Loc& loc) {
    if (mode == SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        if constexpr (emu::is_3510()) {
            emu::ops::SpanSet extra;
            const T s = emu::vec::scalar_of<T>(src1, extra);
            sh.extra = &extra;   // select_any adds it to the reads
            select_any<T, U>(dst, selMask, src0, nullptr, s, mode, sh, p.dstBlkStride, p.src0BlkStride, 0, p.dstRepStride,
                             p.src0RepStride, 0, loc);
            return;
        } else {
            emu::fail("invalid_param", "Select: VSEL_TENSOR_SCALAR_MODE takes a scalar src1 on A2/A3", loc);
        }
    }
    select_any<T, U>(dst, selMask, src0, &src1, T(), mode, sh, p.dstBlkStride, p.src0BlkStride, p.src1BlkStride,
                     p.dstRepStride, p.src0RepStride, p.src1RepStride, loc);
}
}  // namespace emu_ext

// count forms
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint32_t count, const emu::Loc& loc = emu::Loc::current()) {
    auto sh = emu::vec::shape_count(true, count, emu_ext::rep_of<T>, "Select", loc);
    BinaryRepeatParams p;
    emu_ext::select_tensor<T, U>(dst, selMask, src0, src1, selMode, sh, p, loc);
}
template <typename T, typename U, typename S, std::enable_if_t<std::is_arithmetic_v<S> || emu::is_f16_like<S>, int> = 0>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, S src1,
                   SELMODE selMode, uint32_t count, const emu::Loc& loc = emu::Loc::current()) {
    if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
        emu::fail("invalid_param", "Select: a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE", loc);
    auto sh = emu::vec::shape_count(true, count, emu_ext::rep_of<T>, "Select", loc);
    emu_ext::select_any<T, U>(dst, selMask, src0, nullptr, T(src1), selMode, sh, 1, 1, 0, 8, 8, 0, loc);
}
// mask forms
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, const uint64_t mask[], uint8_t repeatTime,
                   const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Select", loc);
    emu_ext::select_tensor<T, U>(dst, selMask, src0, src1, selMode, sh, p, loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint64_t mask, uint8_t repeatTime,
                   const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Select", loc);
    emu_ext::select_tensor<T, U>(dst, selMask, src0, src1, selMode, sh, p, loc);
}
template <typename T, typename U, bool isSetMask = true, typename S,
          std::enable_if_t<std::is_arithmetic_v<S> || emu::is_f16_like<S>, int> = 0>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, S src1,
                   SELMODE selMode, const uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams& p,
                   const emu::Loc& loc = emu::Loc::current()) {
    if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
        emu::fail("invalid_param", "Select: a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE", loc);
    auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Select", loc);
    emu_ext::select_any<T, U>(dst, selMask, src0, nullptr, T(src1), selMode, sh, p.dstBlkStride, p.src0BlkStride, 0,
                              p.dstRepStride, p.src0RepStride, 0, loc);
}
template <typename T, typename U, bool isSetMask = true, typename S,
          std::enable_if_t<std::is_arithmetic_v<S> || emu::is_f16_like<S>, int> = 0>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, S src1,
                   SELMODE selMode, uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams& p,
                   const emu::Loc& loc = emu::Loc::current()) {
    if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
        emu::fail("invalid_param", "Select: a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE", loc);
    auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Select", loc);
    emu_ext::select_any<T, U>(dst, selMask, src0, nullptr, T(src1), selMode, sh, p.dstBlkStride, p.src0BlkStride, 0,
                              p.dstRepStride, p.src0RepStride, 0, loc);
}
// register forms (mask from SetVectorMask, selection from SetCmpMask / Compare)
template <typename T, SELMODE selMode>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint8_t repeatTime,
                   const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE, "Select<T, VSEL_TENSOR_SCALAR_MODE>: use the selMask form");
    auto sh = emu::vec::shape_cont(false, 0, repeatTime, emu_ext::rep_of<T>, "Select", loc);
    const emu::vec::CmpMaskReg reg = emu::vec::cmp_reg();
    if constexpr (selMode == SELMODE::VSEL_CMPMASK_SPR) {
        auto d = emu::vec::opd(dst, p.dstBlkStride, p.dstRepStride);
        auto a = emu::vec::opd(src0, p.src0BlkStride, p.src0RepStride);
        auto b = emu::vec::opd(src1, p.src1BlkStride, p.src1RepStride);
        emu::ops::SpanSet none;
        emu_ext::select_core<T>(dst, d, a, &b, sh, none, [reg](uint64_t, uint32_t e) { return emu_ext::bit_at(reg.b, e); },
                                [&](uint64_t r, uint32_t e) { return b.at(r, e); }, loc);
    } else {
        uint64_t addr; std::memcpy(&addr, reg.b, 8);
        LocalTensor<uint8_t> sel(emu::Mem::UB, (uint32_t)addr, (uint32_t)((sh.repeat * sh.E + 7) / 8));
        emu_ext::select_any<T, uint8_t>(dst, sel, src0, &src1, T(), selMode, sh, p.dstBlkStride, p.src0BlkStride,
                                        p.src1BlkStride, p.dstRepStride, p.src0RepStride, p.src1RepStride, loc);
    }
}
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, uint8_t repeatTime,
                   const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    auto sh = emu::vec::shape_cont(false, 0, repeatTime, emu_ext::rep_of<T>, "Select", loc);
    T s; std::memcpy(&s, emu::vec::cmp_reg().b, sizeof(T));
    emu_ext::select_any<T, U>(dst, selMask, src0, nullptr, s, SELMODE::VSEL_TENSOR_SCALAR_MODE, sh, p.dstBlkStride,
                              p.src0BlkStride, 0, p.dstRepStride, p.src0RepStride, 0, loc);
}
// 950 flexible-scalar Select (mode 1 with the scalar on either side).
namespace emu_ext {
template <const BinaryConfig& cfg, class T2, class T1, class T3, class T4>
inline void select_flex(const T2& dst, const LocalTensor<T1>& selMask, const T3& src0, const T4& src1, SELMODE mode,
                        Shape sh, const BinaryRepeatParams& p, const emu::Loc& loc) {
    static_assert(emu::is_3510() && dep<T2>, "the flexible-scalar Select is documented for Ascend 950 only");
    using T = vec_elem_t<T2>;
    constexpr int side = scalar_side<cfg, T3, T4>();
    if (mode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
        emu::fail("invalid_param", "Select: the flexible-scalar form needs SELMODE::VSEL_TENSOR_SCALAR_MODE", loc);
    emu::ops::SpanSet extra;
    if constexpr (side == 1) {
        const T s = emu::vec::scalar_of<T>(src1, extra);
        sh.extra = &extra;
        select_any<T, T1>(dst, selMask, src0, nullptr, s, mode, sh, p.dstBlkStride, p.src0BlkStride, 0, p.dstRepStride,
                          p.src0RepStride, 0, loc);
    } else {
        // scalar on the left: bit 1 picks the scalar, bit 0 the vector src1
        const T s = emu::vec::scalar_of<T>(src0, extra);
        emu::vec::check_ub(selMask, "Select", loc);
        const uint32_t E = sh.E;
        const uint8_t* pm = reinterpret_cast<const uint8_t*>(selMask.emu_ptr());
        emu::ops::SpanSet sr = extra;
        sr.add(selMask, 0, ((uint64_t)sh.repeat * E + 7) / 8);
        auto d = emu::vec::opd(dst, p.dstBlkStride, p.dstRepStride);
        auto b = emu::vec::opd(src1, p.src1BlkStride, p.src1RepStride);
        Shape s2 = sh; s2.extra = &sr;
        emu::vec::ew("Select", d, false, s2, [&](uint64_t r, uint32_t e) { return bit_at(pm, r * E + e) ? s : b.at(r, e); },
                     loc, b);
    }
}
}  // namespace emu_ext
template <typename T0 = BinaryDefaultType, typename T1 = BinaryDefaultType, const BinaryConfig& config = DEFAULT_BINARY_CONFIG,
          typename T2, typename T3, typename T4, std::enable_if_t<emu::vec::is_local_v<T2>, int> = 0>
inline void Select(const T2& dst, const LocalTensor<T1>& selMask, const T3& src0, const T4& src1, SELMODE selMode,
                   uint32_t count, const emu::Loc& loc = emu::Loc::current()) {
    using T = emu_ext::vec_elem_t<T2>;
    auto sh = emu::vec::shape_count(true, count, emu_ext::rep_of<T>, "Select", loc);
    emu_ext::select_flex<config>(dst, selMask, src0, src1, selMode, sh, BinaryRepeatParams(), loc);
}
template <typename T0 = BinaryDefaultType, typename T1 = BinaryDefaultType, bool isSetMask = true,
          const BinaryConfig& config = DEFAULT_BINARY_CONFIG, typename T2, typename T3, typename T4,
          std::enable_if_t<emu::vec::is_local_v<T2>, int> = 0>
inline void Select(const T2& dst, const LocalTensor<T1>& selMask, const T3& src0, const T4& src1, SELMODE selMode,
                   uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    using T = emu_ext::vec_elem_t<T2>;
    auto sh = emu::vec::shape_cont(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Select", loc);
    emu_ext::select_flex<config>(dst, selMask, src0, src1, selMode, sh, p, loc);
}
template <typename T0 = BinaryDefaultType, typename T1 = BinaryDefaultType, bool isSetMask = true,
          const BinaryConfig& config = DEFAULT_BINARY_CONFIG, typename T2, typename T3, typename T4,
          std::enable_if_t<emu::vec::is_local_v<T2>, int> = 0>
inline void Select(const T2& dst, const LocalTensor<T1>& selMask, const T3& src0, const T4& src1, SELMODE selMode,
                   const uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams& p,
                   const emu::Loc& loc = emu::Loc::current()) {
    using T = emu_ext::vec_elem_t<T2>;
    auto sh = emu::vec::shape_bits(isSetMask, mask, repeatTime, emu_ext::rep_of<T>, "Select", loc);
    emu_ext::select_flex<config>(dst, selMask, src0, src1, selMode, sh, p, loc);
}

// =============================================================== ReduceDataBlock / ReduceRepeat / ReducePairElem
// Sums are binary trees with partial sums in the operand precision (emu::vec::tree_sum);
// inactive elements count as 0 in a sum and are skipped by max/min. Max/min keep the first
// (lowest-index) extreme element. Results of repeat r go to dst at r * dstRepStride units, a
// unit being one repeat's output (ReduceDataBlock: 8 elements; ReducePairElem: E/2 elements;
// ReduceRepeat: see unit_bytes, the page's table 3).
namespace emu_ext {
template <class T> inline constexpr bool red_ok = one_of<T, half, float> ||
                                                  (emu::is_3510() && one_of<T, int16_t, uint16_t, int32_t, uint32_t>);
template <ReduceType RT, class T>
inline T red_default() {   // the 950's value for a data block without active elements
    if constexpr (RT == ReduceType::SUM) return T(0);
    else if constexpr (emu::is_float_like<T>) return T(RT == ReduceType::MAX ? -INFINITY : INFINITY);
    else return RT == ReduceType::MAX ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}
// Reduce `vals` (one entry per position, `on` marks active ones) into (value, index).
template <ReduceType RT, class T, class U>
inline bool red_one(const std::vector<U>& vals, const std::vector<char>& on, T& out, uint32_t& idx) {
    bool any = false;
    for (char c : on) any |= c != 0;
    if (!any) return false;
    if constexpr (RT == ReduceType::SUM) {
        std::vector<emu::vec::Calc<T>> v(vals.size());
        for (size_t i = 0; i < vals.size(); ++i) v[i] = on[i] ? (emu::vec::Calc<T>)emu::vec::in<U>(vals[i]) : 0;
        out = emu::vec::out<T>(emu::vec::tree_sum_c<T>(std::move(v)));
        idx = 0;
    } else {
        int64_t best = -1;
        for (size_t i = 0; i < vals.size(); ++i) {
            if (!on[i]) continue;
            if (best < 0) { best = (int64_t)i; continue; }
            auto v = emu::vec::in<U>(vals[i]), b = emu::vec::in<U>(vals[(size_t)best]);
            if (RT == ReduceType::MAX ? v > b : v < b) best = (int64_t)i;
        }
        out = T(vals[(size_t)best]);
        idx = (uint32_t)best;
    }
    return true;
}
inline uint64_t unit_bytes(ReduceType rt, size_t tsize, ReduceOrder order) {
    if (rt == ReduceType::SUM) return tsize;
    switch (order) {
        case ReduceOrder::ORDER_VALUE_INDEX: case ReduceOrder::ORDER_INDEX_VALUE: return 2 * tsize;
        case ReduceOrder::ORDER_ONLY_VALUE: return tsize;
        default: return 4;   // ORDER_ONLY_INDEX: a uint32 index for half and float alike
    }
}
// kind: 0 ReduceDataBlock (per block), 1 ReduceRepeat (per repeat), 2 ReducePairElem (per pair)
template <ReduceType RT, class T, class U, int KIND>
inline void reduce_groups(const char* op, const LocalTensor<T>& dst, const LocalTensor<U>& src, const Shape& sh,
                          int64_t dstRepStride, int64_t srcBlkStride, int64_t srcRepStride, ReduceOrder order,
                          const emu::Loc& loc) {
    static_assert(red_ok<U>, "reduction: data type not supported on this arch (see the API page)");
    static_assert(std::is_same_v<T, U> || (emu::is_3510() && KIND == 1 && RT == ReduceType::SUM &&
                  ((std::is_same_v<T, int32_t> && std::is_same_v<U, int16_t>) ||
                   (std::is_same_v<T, uint32_t> && std::is_same_v<U, uint16_t>))),
                  "reduction: dst and src types must match (950 ReduceRepeat<SUM>: int16->int32, uint16->uint32 too)");
    static_assert(KIND != 2 || RT == ReduceType::SUM, "ReducePairElem supports ReduceType::SUM only");
    emu::vec::check_ub(dst, op, loc); emu::vec::check_ub(src, op, loc);
    if (dstRepStride < 0 || srcBlkStride < 0 || srcRepStride < 0 || dstRepStride > 65535 || srcBlkStride > 65535 ||
        srcRepStride > 65535)
        emu::fail("invalid_param", std::string(op) + ": strides must be in [0, 65535]", loc);
    const uint32_t E = sh.E;
    constexpr uint32_t C0 = emu::C0<U>;
    const uint32_t gsz = KIND == 0 ? C0 : (KIND == 1 ? E : 2);        // elements per group
    const uint32_t ngroups = E / gsz;
    const uint64_t unit = KIND == 1 ? unit_bytes(RT, sizeof(T), order) : (uint64_t)ngroups * sizeof(T);
    auto so = emu::vec::opd(src, (uint64_t)srcBlkStride, (uint64_t)srcRepStride);
    // plan: which groups write (c220 skips groups without active elements; the 950 writes
    // defaults for ReduceDataBlock / zeros for ReducePairElem)
    struct Out { uint64_t byte; T val; uint32_t idx; };
    std::vector<Out> outs;
    emu::ops::SpanSet r, w;
    emu::vec::add_opd(r, so, sh);
    std::vector<U> vals(gsz);
    std::vector<char> on(gsz);
    double best_v = 0; uint32_t best_i = 0; bool have_best = false;
    for (int64_t rr = 0; rr < sh.repeat; ++rr) {
        const emu::vec::Mask mr = sh.mk.at((uint64_t)rr, E);
        for (uint32_t g = 0; g < ngroups; ++g) {
            for (uint32_t k = 0; k < gsz; ++k) {
                const uint32_t e = g * gsz + k;
                on[k] = mr.on(e);
                vals[k] = on[k] ? so.at((uint64_t)rr, e) : U(0);
            }
            Out o; o.byte = (uint64_t)rr * (uint64_t)dstRepStride * unit + (KIND == 1 ? 0 : (uint64_t)g * sizeof(T));
            if (!red_one<RT, T, U>(vals, on, o.val, o.idx)) {
                if (!emu::is_3510() || KIND == 1) continue;
                o.val = KIND == 0 ? red_default<RT, T>() : T(0);
                o.idx = 0;
            }
            if (KIND == 1 && RT != ReduceType::SUM) {
                const double v = (double)emu::vec::in<T>(o.val);
                if (!have_best || (RT == ReduceType::MAX ? v > best_v : v < best_v)) {
                    best_v = v; best_i = (uint32_t)rr * E + o.idx; have_best = true;
                }
            }
            outs.push_back(o);
            w.add(dst, o.byte, o.byte + (KIND == 1 ? unit : sizeof(T)));
        }
    }
    emu::Cost c; c.elems = sh.elems(); c.repeats = (uint32_t)sh.repeat;
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    uint8_t* pd = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    for (const Out& o : outs) {
        T* q = reinterpret_cast<T*>(pd + o.byte);
        if (KIND != 1 || RT == ReduceType::SUM) { std::memcpy(q, &o.val, sizeof(T)); continue; }
        switch (order) {
            case ReduceOrder::ORDER_VALUE_INDEX: std::memcpy(q, &o.val, sizeof(T)); emu::vec::write_index(q + 1, o.idx); break;
            case ReduceOrder::ORDER_INDEX_VALUE: emu::vec::write_index(q, o.idx); std::memcpy(q + 1, &o.val, sizeof(T)); break;
            case ReduceOrder::ORDER_ONLY_VALUE: std::memcpy(q, &o.val, sizeof(T)); break;
            case ReduceOrder::ORDER_ONLY_INDEX: { uint32_t i = o.idx; std::memcpy(q, &i, 4); break; }
        }
    }
    if (have_best) {
        auto& spr = emu::vec::reduce_spr();
        spr.at_dst = false; spr.mm_val = best_v; spr.mm_idx = best_i;
    }
}
template <class U>
inline Shape red_shape_c(bool isSetMask, int32_t mask, int32_t repeat, const char* op, const emu::Loc& loc) {
    if (isSetMask && mask < 0) emu::fail("invalid_param", std::string(op) + ": negative mask", loc);
    return emu::vec::shape_cont(isSetMask, (uint64_t)(isSetMask ? mask : 0), repeat, rep_of<U>, op, loc);
}
template <class U>
inline Shape red_shape_b(bool isSetMask, const uint64_t* mask, int32_t repeat, const char* op, const emu::Loc& loc) {
    return emu::vec::shape_bits(isSetMask, mask, repeat, rep_of<U>, op, loc);
}
}  // namespace emu_ext

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask, const int32_t repeatTime,
                            const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                            const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::reduce_groups<reduceType, T, U, 0>("ReduceDataBlock", dst, src,
        emu_ext::red_shape_c<U>(isSetMask, mask, repeatTime, "ReduceDataBlock", loc), dstRepStride, srcBlkStride,
        srcRepStride, ReduceOrder::ORDER_ONLY_VALUE, loc);
}
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                            const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                            const int32_t srcRepStride, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::reduce_groups<reduceType, T, U, 0>("ReduceDataBlock", dst, src,
        emu_ext::red_shape_b<U>(isSetMask, mask, repeatTime, "ReduceDataBlock", loc), dstRepStride, srcBlkStride,
        srcRepStride, ReduceOrder::ORDER_ONLY_VALUE, loc);
}
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask, const int32_t repeatTime,
                           const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                           const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::reduce_groups<reduceType, T, U, 2>("ReducePairElem", dst, src,
        emu_ext::red_shape_c<U>(isSetMask, mask, repeatTime, "ReducePairElem", loc), dstRepStride, srcBlkStride,
        srcRepStride, ReduceOrder::ORDER_ONLY_VALUE, loc);
}
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::reduce_groups<reduceType, T, U, 2>("ReducePairElem", dst, src,
        emu_ext::red_shape_b<U>(isSetMask, mask, repeatTime, "ReducePairElem", loc), dstRepStride, srcBlkStride,
        srcRepStride, ReduceOrder::ORDER_ONLY_VALUE, loc);
}
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask, const int32_t repeatTime,
                         const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                         ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::reduce_groups<reduceType, T, U, 1>("ReduceRepeat", dst, src,
        emu_ext::red_shape_c<U>(isSetMask, mask, repeatTime, "ReduceRepeat", loc), dstRepStride, srcBlkStride,
        srcRepStride, order, loc);
}
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[], const int32_t repeatTime,
                         const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                         ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::reduce_groups<reduceType, T, U, 1>("ReduceRepeat", dst, src,
        emu_ext::red_shape_b<U>(isSetMask, mask, repeatTime, "ReduceRepeat", loc), dstRepStride, srcBlkStride,
        srcRepStride, order, loc);
}
// The earlier names of these instructions (same semantics; repeatTime comes before mask).
#define EMU_EXT_OLD_REDUCE(NAME, NEW, RT)                                                                            \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime, const int32_t mask, \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,              \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        NEW<RT, T, T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride, loc);          \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime, const uint64_t mask[], \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,              \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        NEW<RT, T, T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride, loc);          \
    }
EMU_EXT_OLD_REDUCE(BlockReduceSum, ReduceDataBlock, ReduceType::SUM)
EMU_EXT_OLD_REDUCE(BlockReduceMax, ReduceDataBlock, ReduceType::MAX)
EMU_EXT_OLD_REDUCE(BlockReduceMin, ReduceDataBlock, ReduceType::MIN)
EMU_EXT_OLD_REDUCE(PairReduceSum, ReducePairElem, ReduceType::SUM)
#undef EMU_EXT_OLD_REDUCE
template <typename T, bool isSetMask = true>
inline void RepeatReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime, const int32_t mask,
                            const int32_t dstBlkStride, const int32_t srcBlkStride, const int32_t dstRepStride,
                            const int32_t srcRepStride, const emu::Loc& loc = emu::Loc::current()) {
    (void)dstBlkStride;   // documented as unused
    ReduceRepeat<ReduceType::SUM, T, T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                                                   ReduceOrder::ORDER_ONLY_VALUE, loc);
}

// ReduceMax / ReduceMin / ReduceSum, mask forms: every active element of `repeatTime` repeats
// (src repeat r at r * srcRepStride blocks, blocks contiguous within a repeat; repeatTime may
// exceed 255). dst[0] = result; with calIndex dst[1] = index r*E + e of the first extreme
// element, as integer bits (uint16 in half, uint32 in float). ReduceSum: tree within each
// repeat, then the per-repeat sums reduced again E at a time by trees (the pages' "方式二").
// On A2/A3 the first round's results go to sharedTmpBuffer (recorded as written).
namespace emu_ext {
template <class T>
inline void record_work(const LocalTensor<T>& work, uint64_t elems, emu::ops::SpanSet& w) {
    if constexpr (emu::is_c220()) {
        constexpr uint64_t C0 = emu::C0<T>;
        w.add(work, 0, (elems + C0 - 1) / C0 * C0 * sizeof(T));
    } else {
        (void)work; (void)elems; (void)w;
    }
}
template <ReduceType RT, class T>
inline void reduce_all_rep(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,
                           Shape sh, int32_t srcRepStride, bool calIndex, const emu::Loc& loc) {
    static_assert(one_of<T, half, float> || (emu::is_3510() && one_of<T, int16_t, uint16_t, int32_t, uint32_t>),
                  "ReduceMax/ReduceMin/ReduceSum: data type not supported on this arch");
    emu::vec::check_ub(dst, op, loc); emu::vec::check_ub(src, op, loc); emu::vec::check_ub(work, op, loc);
    if (srcRepStride < 0 || srcRepStride > 65535) emu::fail("invalid_param", std::string(op) + ": srcRepStride must be in [0, 65535]", loc);
    const uint32_t E = sh.E;
    auto so = emu::vec::opd(src, 1, (uint64_t)srcRepStride);
    emu::ops::SpanSet r, w;
    emu::vec::add_opd(r, so, sh);
    const bool with_idx = RT != ReduceType::SUM && calIndex;
    record_work(work, RT == ReduceType::SUM ? (uint64_t)sh.repeat : 2 * (uint64_t)sh.repeat, w);
    if (sh.repeat > 0) w.add(dst, 0, (with_idx ? 2 : 1) * sizeof(T));
    emu::Cost c; c.elems = sh.elems(); c.repeats = (uint32_t)std::min<int64_t>(sh.repeat, UINT32_MAX);
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    if (sh.repeat == 0) return;
    std::vector<T> vals(E);
    std::vector<char> on(E);
    T* pd = dst.emu_ptr();
    if constexpr (RT == ReduceType::SUM) {
        std::vector<emu::vec::Calc<T>> part;
        for (int64_t rr = 0; rr < sh.repeat; ++rr) {
            const emu::vec::Mask mr = sh.mk.at((uint64_t)rr, E);
            std::vector<emu::vec::Calc<T>> v(E);
            for (uint32_t e = 0; e < E; ++e) v[e] = mr.on(e) ? emu::vec::in<T>(so.at((uint64_t)rr, e)) : 0;
            part.push_back(emu::vec::tree_sum_c<T>(std::move(v)));
        }
        while (part.size() > 1) {
            std::vector<emu::vec::Calc<T>> next;
            for (size_t i = 0; i < part.size(); i += E) {
                std::vector<emu::vec::Calc<T>> chunk(E, 0);
                for (size_t k = 0; k < E && i + k < part.size(); ++k) chunk[k] = part[i + k];
                next.push_back(emu::vec::tree_sum_c<T>(std::move(chunk)));
            }
            part.swap(next);
        }
        pd[0] = emu::vec::out<T>(part[0]);
    } else {
        bool have = false; T best = T(0); uint64_t bi = 0;
        for (int64_t rr = 0; rr < sh.repeat; ++rr) {
            const emu::vec::Mask mr = sh.mk.at((uint64_t)rr, E);
            for (uint32_t e = 0; e < E; ++e) {
                if (!mr.on(e)) continue;
                const T v = so.at((uint64_t)rr, e);
                const auto cv = emu::vec::in<T>(v), cb = emu::vec::in<T>(best);
                if (!have || (RT == ReduceType::MAX ? cv > cb : cv < cb)) { best = v; bi = (uint64_t)rr * E + e; have = true; }
            }
        }
        if (!have) return;
        pd[0] = best;
        if (with_idx) emu::vec::write_index(pd + 1, (uint32_t)bi);
        auto& spr = emu::vec::reduce_spr();
        spr.at_dst = false; spr.mm_val = (double)emu::vec::in<T>(best); spr.mm_idx = (uint32_t)bi;
    }
}
}  // namespace emu_ext
#define EMU_EXT_REDUCE_ALL(NAME, RT, IDX_PARAM, IDX_ARG)                                                              \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,      \
                     const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride IDX_PARAM,               \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        if (mask < 0) emu::fail("invalid_param", #NAME ": negative mask", loc);                                       \
        auto sh = emu::vec::shape_cont(true, (uint64_t)mask, repeatTime, emu_ext::rep_of<T>, #NAME, loc, INT32_MAX);  \
        emu_ext::reduce_all_rep<RT, T>(#NAME, dst, src, sharedTmpBuffer, sh, srcRepStride, IDX_ARG, loc);             \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,      \
                     const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride IDX_PARAM,            \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        auto sh = emu::vec::shape_bits(true, mask, repeatTime, emu_ext::rep_of<T>, #NAME, loc, INT32_MAX);            \
        emu_ext::reduce_all_rep<RT, T>(#NAME, dst, src, sharedTmpBuffer, sh, srcRepStride, IDX_ARG, loc);             \
    }
#define EMU_COMMA_CALIDX , bool calIndex
EMU_EXT_REDUCE_ALL(ReduceMax, ReduceType::MAX, EMU_COMMA_CALIDX, calIndex)
EMU_EXT_REDUCE_ALL(ReduceMin, ReduceType::MIN, EMU_COMMA_CALIDX, calIndex)
EMU_EXT_REDUCE_ALL(ReduceSum, ReduceType::SUM, , false)
#undef EMU_COMMA_CALIDX
#undef EMU_EXT_REDUCE_ALL

// Values the reductions leave in special registers (read on the scalar unit).
template <typename T>
inline T GetReduceRepeatSumSpr(const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::one_of<T, half, float>, "GetReduceRepeatSumSpr: half and float only");
    emu::record("GetReduceRepeatSumSpr", emu::Pipe::S, {}, {}, emu::Cost{}, loc);
    const auto& spr = emu::vec::reduce_spr();
    if (!spr.at_dst) return T(spr.sum);
    T v; std::memcpy(&v, emu::mem_base(spr.mem) + spr.off, sizeof(T));   // the count-form ReduceSum's result
    return v;
}
template <typename T>
inline void GetReduceRepeatMaxMinSpr(T& maxMinValue, T& maxMinIndex, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::one_of<T, half, float>, "GetReduceRepeatMaxMinSpr: half and float only");
    static_assert(emu::is_c220() && emu_ext::dep<T>, "GetReduceRepeatMaxMinSpr(value, index) is documented for A2/A3 only");
    emu::record("GetReduceRepeatMaxMinSpr", emu::Pipe::S, {}, {}, emu::Cost{}, loc);
    const auto& spr = emu::vec::reduce_spr();
    T idx;
    if (spr.at_dst) {   // after ReduceMax/ReduceMin: the value only (the page: the index is not exact)
        std::memcpy(&maxMinValue, emu::mem_base(spr.mem) + spr.off, sizeof(T));
        emu::vec::write_index(&idx, 0);
    } else {
        maxMinValue = T(spr.mm_val);
        emu::vec::write_index(&idx, spr.mm_idx);
    }
    maxMinIndex = idx;
}

// =============================================================== Sort32 / MrgSort
// Sort32: each repeat sorts 32 (score, index) pairs by score, descending, equal scores keeping
// their order; dst holds 8-byte structures (float: score in the low 4 bytes, index in the high
// 4; half: score in the low 2 bytes, 2 reserved bytes written as 0, index in the high 4).
// Repeat r reads src0/src1 elements [32r, 32r+32) and writes dst bytes [256r, 256r+256).
namespace emu_ext {
template <class T>
inline float score_at(const uint8_t* p) { T v; std::memcpy(&v, p, sizeof(T)); return (float)v; }
}  // namespace emu_ext
template <typename T>
inline void Sort32(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<uint32_t>& src1,
                   const int32_t repeatTime, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::one_of<T, half, float>, "Sort32: half and float only");
    const char* op = "Sort32";
    emu::vec::check_ub(dst, op, loc); emu::vec::check_ub(src0, op, loc); emu::vec::check_ub(src1, op, loc);
    emu::vec::check_repeat_n(repeatTime, op, loc);
    const uint64_t n = (uint64_t)repeatTime * 32;
    emu::ops::SpanSet r, w;
    r.add(src0, 0, n * sizeof(T)); r.add(src1, 0, n * 4); w.add(dst, 0, n * 8);
    emu::Cost c; c.elems = n; c.repeats = (uint32_t)repeatTime;
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    const T* s = src0.emu_ptr(); const uint32_t* ix = src1.emu_ptr();
    std::vector<uint8_t> out(n * 8, 0);
    for (uint64_t rr = 0; rr < (uint64_t)repeatTime; ++rr) {
        std::vector<uint32_t> ord(32);
        for (uint32_t i = 0; i < 32; ++i) ord[i] = i;
        std::stable_sort(ord.begin(), ord.end(), [&](uint32_t a, uint32_t b) {
            return (float)s[rr * 32 + a] > (float)s[rr * 32 + b];
        });
        for (uint32_t k = 0; k < 32; ++k) {
            uint8_t* o = &out[(rr * 32 + k) * 8];
            std::memcpy(o, &s[rr * 32 + ord[k]], sizeof(T));
            std::memcpy(o + 4, &ix[rr * 32 + ord[k]], 4);
        }
    }
    std::memcpy(dst.emu_ptr(), out.data(), out.size());
}

// MrgSort: merges up to 4 score-descending queues of 8-byte structures (elementLengths in
// structures; validBit 3/7/15 = first 2/3/4 queues) into dst, the highest score first, equal
// scores taken from the lower-numbered queue first. ifExhaustedSuspension stops the merge when
// a queue runs out (GetMrgSortResult then tells how many structures each queue gave).
// repeatTimes > 1 applies only to 4 contiguous queues of equal length with validBit 15 and no
// suspension: repeat r merges the 4 queues found r * 4 * length structures further on.
}  // namespace AscendC
namespace emu::vec {
struct MrgSortCounts { uint16_t n[4] = {0, 0, 0, 0}; };
inline MrgSortCounts& mrg_counts() { thread_local MrgSortCounts c; return c; }
}  // namespace emu::vec
namespace AscendC {
template <typename T>
inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& params,
                    const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_ext::one_of<T, half, float>, "MrgSort: half and float only");
    const char* op = "MrgSort";
    int nq;
    switch (params.validBit) {
        case 3: nq = 2; break;
        case 7: nq = 3; break;
        case 15: nq = 4; break;
        default: emu::fail("invalid_param", "MrgSort: validBit must be 3, 7 or 15, got " + std::to_string(params.validBit), loc);
    }
    const LocalTensor<T>* qs[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
    emu::vec::check_ub(dst, op, loc);
    for (int q = 0; q < nq; ++q) {
        emu::vec::check_ub(*qs[q], op, loc);
        if (params.elementLengths[q] > 4095) emu::fail("invalid_param", "MrgSort: elementLengths must be in [0, 4095]", loc);
    }
    const uint64_t L = params.elementLengths[0];
    bool rep_ok = nq == 4 && !params.ifExhaustedSuspension;
    for (int q = 1; q < 4 && rep_ok; ++q)
        rep_ok = params.elementLengths[q] == L && qs[q]->emu_offset() == qs[0]->emu_offset() + q * L * 8;
    const uint64_t reps = params.repeatTimes == 0 ? 0 : (rep_ok ? params.repeatTimes : 1);
    // plan the merge first (pure), then record, then write
    struct Pick { int q; uint64_t k; };
    std::vector<std::vector<Pick>> plans(reps);
    uint16_t taken[4] = {0, 0, 0, 0};
    emu::ops::SpanSet r, w;
    uint64_t total = 0;
    for (uint64_t rr = 0; rr < reps; ++rr) {
        const uint64_t shift = rr * 4 * L * 8;
        const uint8_t* base[4] = {};
        uint64_t len[4] = {0, 0, 0, 0}, pos[4] = {0, 0, 0, 0};
        for (int q = 0; q < nq; ++q) {
            base[q] = reinterpret_cast<const uint8_t*>(qs[q]->emu_ptr()) + shift;
            len[q] = params.elementLengths[q];
            r.add(*qs[q], shift, shift + len[q] * 8);
        }
        std::vector<Pick>& plan = plans[rr];
        while (true) {
            int best = -1; float bv = 0;
            for (int q = 0; q < nq; ++q) {
                if (pos[q] >= len[q]) continue;
                const float v = emu_ext::score_at<T>(base[q] + pos[q] * 8);
                if (best < 0 || v > bv) { best = q; bv = v; }
            }
            if (best < 0) break;
            plan.push_back({best, pos[best]});
            ++pos[best];
            if (params.ifExhaustedSuspension && pos[best] == len[best]) break;
        }
        for (int q = 0; q < nq; ++q) taken[q] = (uint16_t)pos[q];
        w.add(dst, total * 8, (total + plan.size()) * 8);
        total += plan.size();
    }
    emu::Cost c; c.elems = total; c.repeats = (uint32_t)std::max<uint64_t>(1, (total * 8 + 255) / 256);
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    std::vector<uint8_t> out(total * 8);
    uint64_t o = 0;
    for (uint64_t rr = 0; rr < reps; ++rr) {
        const uint64_t shift = rr * 4 * L * 8;
        for (const auto& pk : plans[rr]) {
            std::memcpy(&out[o * 8], reinterpret_cast<const uint8_t*>(qs[pk.q]->emu_ptr()) + shift + pk.k * 8, 8);
            ++o;
        }
    }
    std::memcpy(dst.emu_ptr(), out.data(), out.size());
    for (int q = 0; q < 4; ++q) emu::vec::mrg_counts().n[q] = q < nq ? taken[q] : 0;
}
inline void GetMrgSortResult(uint16_t& mrgSortList1, uint16_t& mrgSortList2, uint16_t& mrgSortList3, uint16_t& mrgSortList4,
                             const emu::Loc& loc = emu::Loc::current()) {
    emu::record("GetMrgSortResult", emu::Pipe::S, {}, {}, emu::Cost{}, loc);
    const auto& c = emu::vec::mrg_counts();
    mrgSortList1 = c.n[0]; mrgSortList2 = c.n[1]; mrgSortList3 = c.n[2]; mrgSortList4 = c.n[3];
}

// =============================================================== Transpose / TransDataTo5HD
}  // namespace AscendC
namespace emu::vec {
// Transpose page, "数据类型" (dav-c220 = the A2 line, dav-3510 = the 950 line; only one form, so
// count<T> == rep<T>). dt_transpose: the enhanced form with TRANSPOSE_NCHW2NHWC /
// TRANSPOSE_NHWC2NCHW (complex32 and int4x2_t, in the 950 line, are not emulator types).
// dt_transpose_b16: the enhanced form with TRANSPOSE_ND2ND_B16 (A2/A3: uint16_t only).
// dt_transpose16: the plain 16x16 Transpose(dst, src), the same on every product.
using dt_transpose16 = dtypes_row<tlist<int16_t, uint16_t, half>>;
using dt_transpose_b16 = by_arch<dtypes_row<tlist<uint16_t>>, dt_transpose16>;
using dt_transpose = by_arch<dtypes_row<tlist<int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float>>,
                             dtypes_row<tlist<int8_t, uint8_t, fp4x2_e2m1_t, fp4x2_e1m2_t, hifloat8_t, fp8_e8m0_t,
                                              fp8_e5m2_t, fp8_e4m3fn_t, int16_t, uint16_t, half, bfloat16_t, int32_t,
                                              uint32_t, float>>>;
}  // namespace emu::vec
namespace AscendC {
// Transpose(dst, src): one 16x16 matrix of a 2-byte type, dst[j][i] = src[i][j] (in place
// allowed). The extended form also converts [N,C,H,W] <-> [N,H,W,C] (sharedTmpBuffer must hold
// the page's minimum; it is recorded as written).
namespace emu_ext {
template <class T>
inline void transpose16(const LocalTensor<T>& dst, const LocalTensor<T>& src, const emu::Loc& loc) {
    static_assert(sizeof(T) == 2, "Transpose (16x16): 2-byte types only");
    emu::vec::check_ub(dst, "Transpose", loc); emu::vec::check_ub(src, "Transpose", loc);
    emu::ops::SpanSet r, w; r.add(src, 0, 512); w.add(dst, 0, 512);
    emu::Cost c; c.elems = 256; c.repeats = 2;
    emu::ops::record_sets("Transpose", emu::Pipe::V, r, w, c, loc);
    T tmp[256];
    const T* s = src.emu_ptr();
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) tmp[j * 16 + i] = s[i * 16 + j];
    std::memcpy(dst.emu_ptr(), tmp, sizeof(tmp));
}
}  // namespace emu_ext
template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu::vec::dt_transpose16::count<T>, "Transpose: data type not supported on this arch (see the API page)");
    emu_ext::transpose16(dst, src, loc);
}
namespace emu_ext {
// [N,C,H,W] <-> [N,H,W,C] (to_nhwc: NCHW2NHWC) with the page's range, in-place and
// sharedTmpBuffer-size checks.
template <class T>
inline void transpose_nchw(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                           const TransposeParamsExt& tp, bool to_nhwc, const emu::Loc& loc) {
    const char* op = "Transpose";
    emu::vec::check_ub(dst, op, loc); emu::vec::check_ub(src, op, loc); emu::vec::check_ub(sharedTmpBuffer, op, loc);
    const uint64_t N = tp.nSize, Cn = tp.cSize, HW = (uint64_t)tp.hSize * tp.wSize;
    if (N == 0 || Cn == 0 || HW == 0) return;   // documented: no computation, dst untouched
    if (Cn > 4095 || HW > 4095 || (HW * sizeof(T)) % 32)
        emu::fail("invalid_param", "Transpose: needs cSize <= 4095, hSize*wSize <= 4095 and hSize*wSize*sizeof(T) a "
                  "multiple of 32 bytes", loc);
    if (dst.emu_offset() == src.emu_offset()) emu::fail("invalid_param", "Transpose: NCHW<->NHWC cannot work in place", loc);
    const uint64_t h0 = sizeof(T) == 1 ? 32 : 16, w0 = 32 / sizeof(T);
    const uint64_t need = (to_nhwc ? (Cn + 2) : (2 * Cn + 1)) * h0 * w0 * sizeof(T);
    if (sharedTmpBuffer.GetSize() < need)
        emu::fail("invalid_param", "Transpose: sharedTmpBuffer holds " + std::to_string(sharedTmpBuffer.GetSize()) +
                  " bytes, the page requires at least " + std::to_string(need), loc);
    const uint64_t total = N * Cn * HW;
    emu::ops::SpanSet r, w;
    r.add(src, 0, total * sizeof(T)); w.add(dst, 0, total * sizeof(T)); w.add(sharedTmpBuffer, 0, need);
    emu::Cost c; c.elems = total; c.repeats = (uint32_t)((total * sizeof(T) + 255) / 256);
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    const T* s = src.emu_ptr(); T* d = dst.emu_ptr();
    for (uint64_t n = 0; n < N; ++n)
        for (uint64_t ch = 0; ch < Cn; ++ch)
            for (uint64_t x = 0; x < HW; ++x) {
                const uint64_t nchw = (n * Cn + ch) * HW + x, nhwc = (n * HW + x) * Cn + ch;
                if (to_nhwc) d[nhwc] = s[nchw]; else d[nchw] = s[nhwc];
            }
}
}  // namespace emu_ext
// The form is a runtime value, so the type check at compile time is the union of the forms'
// types (dt_transpose: it holds dt_transpose_b16 on both arches); TRANSPOSE_ND2ND_B16 with a
// type of the NCHW forms only fails at run time.
template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                      const TransposeParamsExt& tp, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu::vec::dt_transpose::count<T>, "Transpose: data type not supported on this arch (see the API page)");
    if (tp.transposeType == TransposeType::TRANSPOSE_ND2ND_B16) {
        if constexpr (emu::vec::dt_transpose_b16::count<T>) {
            emu_ext::transpose16(dst, src, loc);
        } else {
            emu::fail("invalid_param", std::string("Transpose TRANSPOSE_ND2ND_B16: data type not supported on this arch (") +
                      (emu::is_c220() ? "A2/A3: uint16_t only" : "int16_t, uint16_t, half") + "; see the API page)", loc);
        }
        return;
    }
    const bool to_nhwc = tp.transposeType == TransposeType::TRANSPOSE_NCHW2NHWC;
    if (!to_nhwc && tp.transposeType != TransposeType::TRANSPOSE_NHWC2NCHW)
        emu::fail("invalid_param", "Transpose: only TRANSPOSE_ND2ND_B16, TRANSPOSE_NCHW2NHWC and TRANSPOSE_NHWC2NCHW are "
                  "documented as supported", loc);
    // fp4x2 tensors count 4-bit elements; the page does not say whether the sizes (and the
    // 32-byte rule, sizeof(T) = 1) count nibbles or bytes, nor which nibble goes where.
    if constexpr (emu::elems_per_byte<T>::value != 1)
        emu::fail("invalid_param", "Transpose [N,C,H,W] <-> [N,H,W,C] of fp4x2 types is not emulated (the page does "
                  "not say whether the sizes count 4-bit elements)", loc);
    else
        emu_ext::transpose_nchw(dst, src, sharedTmpBuffer, tp, to_nhwc, loc);
}

// TransDataTo5HD: 16 source blocks (srcList, UB byte addresses from GetPhyAddr) are
// transposed into 16 destination blocks per repeat. b16: dst block j element i = src block i
// element j. b32: dst block 2j holds element j of src blocks 0..7, dst block 2j+1 element j of
// src blocks 8..15 (**assumed**, the page shows it only as a figure). b8: the low or high half
// (srcHighHalf) of each source block gives element j in 0..15, written to the low or high half
// (dstHighHalf) of dst block j, byte i = src block i. Repeat r offsets every address by
// r * repStride blocks, except that a single repeat is offset by one stride (page, repeatTimes).
namespace emu_ext {
template <class T>
inline void trans5hd(const uint64_t* dl, const uint64_t* sl, const TransDataTo5HDParams& p,
                     const emu::ops::SpanSet& extra, const emu::Loc& loc) {
    static_assert(one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float> ||
                  (emu::is_3510() && std::is_same_v<T, bfloat16_t>), "TransDataTo5HD: data type not supported on this arch");
    const char* op = "TransDataTo5HD";
    const uint64_t reps = p.repeatTimes;
    const uint64_t ub = emu::mem_size(emu::Mem::UB);
    auto mult = [&](uint64_t rr) { return reps == 1 ? 1 : rr; };
    emu::ops::SpanSet r = extra, w;
    for (uint64_t rr = 0; rr < reps; ++rr)
        for (int i = 0; i < 16; ++i) {
            const uint64_t sa = sl[i] + mult(rr) * p.srcRepStride * 32, da = dl[i] + mult(rr) * p.dstRepStride * 32;
            if (sa % 32 || da % 32) emu::fail("invalid_param", "TransDataTo5HD: addresses must be 32-byte aligned", loc);
            r.add(emu::Span{emu::Mem::UB, sa, sa + 32});
            if (sizeof(T) == 1) {
                const uint64_t h = p.dstHighHalf ? 16 : 0;
                w.add(emu::Span{emu::Mem::UB, da + h, da + h + 16});
            } else {
                w.add(emu::Span{emu::Mem::UB, da, da + 32});
            }
            if (sa + 32 > ub || da + 32 > ub) break;   // the record reports it
        }
    emu::Cost c; c.elems = reps * 16 * emu::C0<T>; c.repeats = (uint32_t)(reps * 2);
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    uint8_t* u = emu::mem_base(emu::Mem::UB);
    constexpr uint32_t C0 = emu::C0<T>;
    for (uint64_t rr = 0; rr < reps; ++rr) {
        T in[16][C0];
        for (int i = 0; i < 16; ++i) std::memcpy(in[i], u + sl[i] + mult(rr) * p.srcRepStride * 32, 32);
        for (int j = 0; j < 16; ++j) {
            uint8_t* d = u + dl[j] + mult(rr) * p.dstRepStride * 32;
            if constexpr (sizeof(T) == 2) {
                T blk[16];
                for (int i = 0; i < 16; ++i) blk[i] = in[i][j];
                std::memcpy(d, blk, 32);
            } else if constexpr (sizeof(T) == 4) {
                T blk[8];
                for (int i = 0; i < 8; ++i) blk[i] = in[(j % 2) * 8 + i][j / 2];
                std::memcpy(d, blk, 32);
            } else {
                T half_blk[16];
                for (int i = 0; i < 16; ++i) half_blk[i] = in[i][j + (p.srcHighHalf ? 16 : 0)];
                std::memcpy(d + (p.dstHighHalf ? 16 : 0), half_blk, 16);
            }
        }
    }
}
}  // namespace emu_ext
template <typename T>
inline void TransDataTo5HD(uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE], uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams& p, const emu::Loc& loc = emu::Loc::current()) {
    emu_ext::trans5hd<T>(dstList, srcList, p, emu::ops::SpanSet(), loc);
}
template <typename T>
inline void TransDataTo5HD(const LocalTensor<T> (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const LocalTensor<T> (&srcList)[NCHW_CONV_ADDR_LIST_SIZE], const TransDataTo5HDParams& p,
                           const emu::Loc& loc = emu::Loc::current()) {
    uint64_t d[16], s[16];
    for (int i = 0; i < 16; ++i) {
        emu::vec::check_ub(dstList[i], "TransDataTo5HD", loc); emu::vec::check_ub(srcList[i], "TransDataTo5HD", loc);
        d[i] = dstList[i].emu_offset(); s[i] = srcList[i].emu_offset();
    }
    emu_ext::trans5hd<T>(d, s, p, emu::ops::SpanSet(), loc);
}
template <typename T>
inline void TransDataTo5HD(const LocalTensor<uint64_t>& dst, const LocalTensor<uint64_t>& src, const TransDataTo5HDParams& p,
                           const emu::Loc& loc = emu::Loc::current()) {
    emu::vec::check_ub(dst, "TransDataTo5HD", loc); emu::vec::check_ub(src, "TransDataTo5HD", loc);
    emu::ops::SpanSet extra;
    extra.add(dst, 0, 16 * 8); extra.add(src, 0, 16 * 8);
    uint64_t d[16], s[16];
    std::memcpy(d, dst.emu_ptr(), sizeof(d)); std::memcpy(s, src.emu_ptr(), sizeof(s));
    emu_ext::trans5hd<T>(d, s, p, extra, loc);
}

// =============================================================== utilities the vector examples use
// DivCeil (used by the official examples and by the ReduceMax/ReduceSum pages' formulas) and
// GetSystemCycle (system counter on the scalar pipe; the emulator returns a per-core count of
// GetSystemCycle calls, not time: **assumed** stand-in). Conditional is emu-entry's.
template <class T, class U>
constexpr inline auto DivCeil(T a, U b) { return (a + b - 1) / b; }
inline int64_t GetSystemCycle(const emu::Loc& loc = emu::Loc::current()) {
    thread_local int64_t n = 0;
    emu::record("GetSystemCycle", emu::Pipe::S, {}, {}, emu::Cost{}, loc);
    return ++n;
}

// =============================================================== SetPadValue
// Sets the value DataCopyPad (GM -> UB) writes into padding (SetPadValue page; the DataCopyPad
// side reads emu::ops::pad_value()). Scalar-unit register write: no memory access.
template <typename T, TPosition pos = TPosition::MAX>
inline void SetPadValue(T paddingValue, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(sizeof(T) <= 8 && (std::is_arithmetic_v<T> || emu::is_f16_like<T>), "SetPadValue: scalar types only");
    static_assert(pos == TPosition::MAX || pos == TPosition::VECIN || pos == TPosition::VECOUT,
                  "SetPadValue: pos must be VECIN, VECOUT or MAX");
    (void)loc;
    auto& v = emu::ops::pad_value();
    v.set = true;
    std::memset(v.bytes, 0, sizeof(v.bytes));
    std::memcpy(v.bytes, &paddingValue, sizeof(T));
}

}  // namespace AscendC

// The official examples call GetTPipePtr() unqualified outside `using namespace AscendC`
// (compare, reduce_computation): it is reachable from the global namespace. A using-declaration
// may be repeated, so another header declaring the same is harmless.
using AscendC::GetTPipePtr;

// =============================================================== int4b_t casts
// half / bfloat16_t / int16_t <-> int4b_t (Cast page: two int4b_t per byte, even element in the
// low nibble; count and continuous masks even). To int4: round by the mode (CAST_NONE as
// CAST_RINT), saturate to [-8, 7], NaN -> 0. From int4: exact. One repeat: 128 elements (the
// wide operand's 256 bytes); int4 strides count 32-byte blocks of 64 nibbles.
namespace emu::vec {
template <class D, class S>
void cast_int4(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src, AscendC::RoundMode mode,
               bool isSetMask, uint64_t mask, const uint64_t* maskBits, int64_t repeat, const AscendC::UnaryRepeatParams& p,
               const Loc& loc) {
    using AscendC::int4b_t;
    constexpr bool to4 = std::is_same_v<D, int4b_t>;
    using X = std::conditional_t<to4, S, D>;
    static_assert(!std::is_same_v<X, int4b_t>, "Cast: int4b_t to int4b_t");
    static_assert(std::is_same_v<X, half> || std::is_same_v<X, int16_t> || std::is_same_v<X, bfloat16_t>,
                  "Cast with int4b_t: the other type must be half, bfloat16_t or int16_t");
    const char* op = "Cast";
    check_ub(dst, op, loc); check_ub(src, op, loc);
    constexpr uint32_t E = 256 / sizeof(X);
    Shape sh;
    uint64_t xb, xr, nb, nr;    // strides of the wide (X) and nibble operands
    if (repeat < 0) {
        if (mask % 2) fail("invalid_param", "Cast with int4b_t: count must be even", loc);
        sh = shape_count(true, (int64_t)mask, E, op, loc);
        xb = 1; xr = 8; nb = 1; nr = E / 64;
    } else {
        if (maskBits) sh = shape_bits(isSetMask, maskBits, repeat, E, op, loc);
        else {
            if (isSetMask && mask % 2) fail("invalid_param", "Cast with int4b_t: mask must be even", loc);
            sh = shape_cont(isSetMask, mask, repeat, E, op, loc);
        }
        xb = to4 ? p.srcBlkStride : p.dstBlkStride; xr = to4 ? p.srcRepStride : p.dstRepStride;
        nb = to4 ? p.dstBlkStride : p.srcBlkStride; nr = to4 ? p.dstRepStride : p.srcRepStride;
    }
    auto nib = [&](uint64_t r, uint32_t e) { return r * nr * 64 + (uint64_t)(e / 64) * nb * 64 + e % 64; };
    const AscendC::LocalTensor<X>& xt = [&]() -> const AscendC::LocalTensor<X>& {
        if constexpr (to4) return src; else return dst; }();
    ops::SpanSet xs, ns;
    add_rep_spans(xs, xt, (uint64_t)sh.repeat, sh.mk, E, xb, xr);
    const auto& nt = [&]() -> const auto& { if constexpr (to4) return dst; else return src; }();
    for (int64_t rr = 0; rr < sh.repeat; ++rr) {
        const Mask mr = sh.mk.at((uint64_t)rr, E);
        uint64_t lo = UINT64_MAX, hi = 0;
        for (uint32_t e = 0; e < E; ++e)
            if (mr.on(e)) { const uint64_t q = nib((uint64_t)rr, e); lo = std::min(lo, q); hi = std::max(hi, q + 1); }
        if (hi > lo) ns.add(nt.emu_span_bytes(lo / 2, (hi + 1) / 2 - lo / 2));
    }
    Cost c; c.elems = sh.elems(); c.repeats = (uint32_t)sh.repeat;
    if constexpr (to4) ops::record_sets(op, Pipe::V, xs, ns, c, loc);
    else ops::record_sets(op, Pipe::V, ns, xs, c, loc);
    const AscendC::RoundMode m = mode == AscendC::RoundMode::CAST_NONE ? AscendC::RoundMode::CAST_RINT : mode;
    X* px = xt.emu_ptr();
    uint8_t* pn = reinterpret_cast<uint8_t*>(nt.emu_ptr());
    std::vector<int8_t> tmp(E);
    for (int64_t rr = 0; rr < sh.repeat; ++rr) {
        const Mask mr = sh.mk.at((uint64_t)rr, E);
        for (uint32_t e = 0; e < E; ++e) {
            if (!mr.on(e)) continue;
            if constexpr (to4) {
                const double v = (double)in<X>(px[eoff<X>((uint64_t)rr, e, xb, xr)]);
                double q = std::isnan(v) ? 0.0 : round_int(v, m);
                tmp[e] = (int8_t)std::clamp(q, -8.0, 7.0);
            } else {
                const uint64_t q = nib((uint64_t)rr, e);
                int8_t v = (int8_t)((pn[q / 2] >> (4 * (q % 2))) & 0xF);
                tmp[e] = (int8_t)(v >= 8 ? v - 16 : v);
            }
        }
        for (uint32_t e = 0; e < E; ++e) {
            if (!mr.on(e)) continue;
            if constexpr (to4) {
                const uint64_t q = nib((uint64_t)rr, e);
                uint8_t& b = pn[q / 2];
                const int sh4 = 4 * (int)(q % 2);
                b = (uint8_t)((b & ~(0xF << sh4)) | (((uint8_t)tmp[e] & 0xF) << sh4));
            } else {
                px[eoff<X>((uint64_t)rr, e, xb, xr)] = X((float)tmp[e]);
            }
        }
    }
}
}  // namespace emu::vec
