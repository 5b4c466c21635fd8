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

// ---- instruction shape: the resolved mask and repeat count of one call
struct Shape {
    Mask mk;
    int64_t repeat = 0;
    uint32_t E = 0;     // elements per repeat
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

}  // namespace AscendC
