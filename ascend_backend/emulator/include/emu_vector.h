#pragma once
// emu_vector.h: vector (PIPE_V) ops of the emulator: element-wise binary/unary/scalar ops in
// the count form and the mask/repeat form, Duplicate, Cast, reductions, Brcb, Compare/Select,
// and the vector mask register (SetVectorMask/SetMaskCount/SetMaskNorm/ResetMask).
// Arithmetic is done in float for half/bfloat16_t/float and rounded once to the element type
// (round to nearest even) per op; integer types use integer arithmetic.
// One repeat covers 256 bytes = 8 blocks of 32 bytes; block and repeat strides are in 32-byte
// blocks (a block stride of 0 re-reads the same block: broadcast).
// The element-wise ops, Duplicate and the count-form reductions accept only the data types their
// API page lists for the arch (compile-time tables in emu::vec, below), as bisheng does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>
#include "emu_types.h"
#include "emu_dtypes.h"
#include "emu_copy.h"

namespace AscendC {

struct BinaryRepeatParams {
    BinaryRepeatParams() {}
    BinaryRepeatParams(uint8_t dstBlkStrideIn, uint8_t src0BlkStrideIn, uint8_t src1BlkStrideIn, uint8_t dstRepStrideIn,
                       uint8_t src0RepStrideIn, uint8_t src1RepStrideIn)
        : dstBlkStride(dstBlkStrideIn), src0BlkStride(src0BlkStrideIn), src1BlkStride(src1BlkStrideIn),
          dstRepStride(dstRepStrideIn), src0RepStride(src0RepStrideIn), src1RepStride(src1RepStrideIn) {}
    uint32_t blockNumber = 8;
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

struct UnaryRepeatParams {
    UnaryRepeatParams() {}
    UnaryRepeatParams(uint16_t dstBlkStrideIn, uint16_t srcBlkStrideIn, uint8_t dstRepStrideIn, uint8_t srcRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn), srcRepStride(srcRepStrideIn) {}
    UnaryRepeatParams(uint16_t dstBlkStrideIn, uint16_t srcBlkStrideIn, uint8_t dstRepStrideIn, uint8_t srcRepStrideIn,
                      bool halfBlockIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn), halfBlock(halfBlockIn) {}
    uint32_t blockNumber = 8;
    uint16_t dstBlkStride = 1;
    uint16_t srcBlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t srcRepStride = 8;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
    bool halfBlock = false;
};

struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(uint16_t dstBlkStrideIn, uint16_t dstRepStrideIn) : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
    uint32_t blockNumber = 8;
    uint16_t dstRepStride = 8;
    uint16_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

enum class RoundMode : uint8_t {
    CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD,
#if defined(EMU_ARCH_3510)
    CAST_HYBRID, CAST_EVEN, CAST_ZERO,
#endif
    UNKNOWN = 0xFF,
};
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

}  // namespace AscendC

namespace emu::vec {

using AscendC::LocalTensor;

// ---- per-arch data types of the basic ops (checked at compile time, as bisheng would)
// One table per op family, from the "数据类型" section of the op's API page: dav-c220 is the
// page's "Atlas A2 训练系列产品/Atlas A2 推理系列产品" line, dav-3510 its "Ascend 950PR/Ascend 950DT"
// line. dtypes_row<Every, CountOnly>: Every = the types of all forms, CountOnly = the types the
// page gives to the count form only ("仅支持tensor前n个数据计算接口"; the mask/repeat forms reject
// them). Types the emulator does not define (complex32, complex64) are left out.
template <class... L> struct tlist {};
template <class T, class L> inline constexpr bool in_list = false;
template <class T, class... L> inline constexpr bool in_list<T, tlist<L...>> = (std::is_same_v<T, L> || ...);
template <class Every, class CountOnly = tlist<>>
struct dtypes_row {
    template <class T> static constexpr bool rep = in_list<T, Every>;                       // mask/repeat forms
    template <class T> static constexpr bool count = in_list<T, Every> || in_list<T, CountOnly>;  // count form
};
template <class C220, class A3510> using by_arch = std::conditional_t<is_c220(), C220, A3510>;
using dt_a2_basic = dtypes_row<tlist<int16_t, half, int32_t, float>>;   // A2 line of most arithmetic pages
using dt_hf = dtypes_row<tlist<half, float>>;
// Add, Sub, Max, Min pages
using dt_add = by_arch<dt_a2_basic, dtypes_row<tlist<int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                                               tlist<int8_t, uint8_t, int64_t, uint64_t>>>;
// Mul page
using dt_mul = by_arch<dt_a2_basic, dtypes_row<tlist<int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                                               tlist<int64_t, uint64_t>>>;
// Div page (no bfloat16_t on either arch)
using dt_div = by_arch<dt_hf, dtypes_row<tlist<int16_t, uint16_t, half, int32_t, uint32_t, float>, tlist<int64_t, uint64_t>>>;
// Adds, Maxs, Mins pages
using dt_adds = by_arch<dt_a2_basic, dtypes_row<tlist<int16_t, half, bfloat16_t, int32_t, float>,
                                                tlist<int8_t, uint8_t, int64_t, uint64_t>>>;
// Muls page
using dt_muls = by_arch<dt_a2_basic, dtypes_row<tlist<int16_t, half, bfloat16_t, int32_t, float>, tlist<int64_t, uint64_t>>>;
// Exp, Ln, Sqrt, Rsqrt pages: half and float on every product
using dt_exp = dt_hf;
// Reciprocal page
using dt_recip = by_arch<dt_hf, dtypes_row<tlist<half, float>, tlist<int64_t, uint64_t>>>;
// Abs page
using dt_abs = by_arch<dt_hf, dtypes_row<tlist<int16_t, half, int32_t, float>, tlist<int8_t, int64_t>>>;
// Relu page
using dt_relu = by_arch<dtypes_row<tlist<half, int32_t, float>>, dtypes_row<tlist<half, int32_t, float>, tlist<int64_t>>>;
// Duplicate page (the count form here; its mask/repeat forms are in emu_vector_ext.h)
using dt_dup = by_arch<dtypes_row<tlist<int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>>,
                       dtypes_row<tlist<int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                                  tlist<bool, int8_t, uint8_t, fp4x2_e2m1_t, fp4x2_e1m2_t, hifloat8_t, fp8_e8m0_t,
                                        fp8_e5m2_t, fp8_e4m3fn_t, int64_t, uint64_t>>>;
// ReduceSum page (count form; its mask forms are in emu_vector_ext.h)
using dt_rsum = by_arch<dt_hf, dtypes_row<tlist<half, float, int32_t, uint32_t>, tlist<int64_t, uint64_t>>>;
// ReduceMax, ReduceMin pages (count form)
using dt_rmax = by_arch<dt_hf, dtypes_row<tlist<int16_t, uint16_t, half, int32_t, uint32_t, float>, tlist<int64_t, uint64_t>>>;
// The checks of one call (count form, or a mask/repeat form); #undef at the end of this file.
#define EMU_DT_MSG(NAME) NAME ": data type not supported on this arch (see the API page)"
#define EMU_DT_COUNT_MSG(NAME) \
    NAME ": on this arch this data type takes only the count form, not the mask/repeat forms (see the API page)"
#define EMU_DT_CHECK_COUNT(TABLE, NAME, T) static_assert(emu::vec::TABLE::count<T>, EMU_DT_MSG(NAME))
#define EMU_DT_CHECK_REP(TABLE, NAME, T)                                \
    static_assert(emu::vec::TABLE::count<T>, EMU_DT_MSG(NAME));         \
    static_assert(emu::vec::TABLE::rep<T> || !emu::vec::TABLE::count<T>, EMU_DT_COUNT_MSG(NAME))

// Per-core vector mask register (each emulated core is one thread).
struct MaskState { bool counter = false; uint64_t hi = ~0ull, lo = ~0ull; };
inline MaskState& mask_state() { thread_local MaskState s; return s; }

// Special registers the reductions leave behind (GetReduceRepeatSumSpr / GetReduceRepeatMaxMinSpr
// in emu_vector_ext.h): the count-form ReduceSum/Max/Min note where their result went (read at
// Get time), the ReduceRepeat family stores value and index directly.
struct ReduceSpr {
    bool at_dst = false; Mem mem = Mem::UB; uint64_t off = 0;   // last count-form result location
    double sum = 0; double mm_val = 0; uint32_t mm_idx = 0;
};
inline ReduceSpr& reduce_spr() { thread_local ReduceSpr s; return s; }

// Active-element selector of one repeat. In counter mode (SetMaskCount) `cnt` counts the
// elements of the whole instruction: repeatTime is ignored, the repeats are ceil(cnt / E)
// and the last one is partial (mask page, "Counter模式").
struct Mask {
    bool bits = false;
    bool counter = false;
    uint64_t m[2] = {0, 0};
    uint64_t cnt = 0;
    bool on(uint32_t e) const { return bits ? ((m[e / 64] >> (e % 64)) & 1u) : (e < cnt); }
    // The mask of repeat r of an instruction with E elements per repeat.
    Mask at(uint64_t r, uint32_t E) const {
        if (!counter) return *this;
        Mask k; k.cnt = cnt > r * E ? std::min<uint64_t>(E, cnt - r * E) : 0; return k;
    }
    int64_t repeats(int64_t given, uint32_t E) const { return counter ? (int64_t)((cnt + E - 1) / E) : given; }
};

// Continuous mask: more than one repeat's elements counts as a full repeat (mask page:
// "mask超出范围按照对应数据类型下mask最大值计算"); in counter mode the value is the total count.
template <class T>
inline Mask mask_cont(uint64_t n, const char* op, const Loc& loc, uint32_t E = REP_ELEMS<T>) {
    (void)op; (void)loc;
    Mask k;
    if (mask_state().counter) { k.counter = true; k.cnt = n; return k; }
    k.cnt = std::min<uint64_t>(n, E); return k;
}
template <class T>
inline Mask mask_bits(const uint64_t* m, const char* op, const Loc& loc) {
    Mask k;
    if (mask_state().counter) { k.counter = true; k.cnt = m[0]; return k; }   // only the low 64 bits count
    k.bits = true; k.m[0] = m[0]; k.m[1] = m[1];
    if (sizeof(T) >= 4 && m[1] != 0)
        emu::fail("invalid_param", std::string(op) + ": mask[1] must be 0 for 32-bit types", loc);
    return k;
}
// The mask register, for mask-form calls with isSetMask = false.
template <class T>
inline Mask mask_reg() {
    Mask k; const MaskState& s = mask_state();
    if (s.counter) { k.counter = true; k.cnt = s.lo; } else { k.bits = true; k.m[0] = s.lo; k.m[1] = s.hi; }
    return k;
}

// Element offset of element e (0..REP_ELEMS-1) of repeat r.
template <class T>
inline uint64_t eoff(uint64_t r, uint32_t e, uint64_t blk, uint64_t rep) {
    constexpr uint32_t C0 = emu::C0<T>;
    return r * rep * C0 + (uint64_t)(e / C0) * blk * C0 + e % C0;
}

// Span of operand bytes touched by active elements, repeat by repeat.
template <class T>
inline void add_rep_spans(ops::SpanSet& s, const LocalTensor<T>& t, uint64_t repeat, const Mask& mk, uint32_t elems,
                          uint64_t blk, uint64_t rep) {
    repeat = (uint64_t)mk.repeats((int64_t)repeat, elems);
    for (uint64_t r = 0; r < repeat; ++r) {
        uint64_t lo = UINT64_MAX, hi = 0;
        const Mask mr = mk.at(r, elems);
        for (uint32_t e = 0; e < elems; ++e)
            if (mr.on(e)) { uint64_t o = eoff<T>(r, e, blk, rep); lo = std::min(lo, o); hi = std::max(hi, o + 1); }
        if (hi > lo) s.add(t, lo * sizeof(T), hi * sizeof(T));
    }
}

template <class T>
inline void check_repeat(int64_t repeat, const char* op, const Loc& loc) {
    if (repeat < 0 || repeat > 255)
        emu::fail("invalid_param", std::string(op) + ": repeatTimes " + std::to_string(repeat) + " is outside [0, 255]", loc);
}
inline void check_count(int64_t count, const char* op, const Loc& loc) {
    if (count < 0) emu::fail("invalid_param", std::string(op) + ": negative count", loc);
}
template <class T>
inline void check_ub(const LocalTensor<T>& t, const char* op, const Loc& loc) {
    if (t.emu_mem() != Mem::UB)
        emu::fail("invalid_param", std::string(op) + ": vector operands must be in UB, got " + ops::mem_name(t.emu_mem()), loc);
}

// Numeric domain: float for floating types, int64 for integers.
template <class T> using Calc = std::conditional_t<is_float_like<T>, float, int64_t>;
template <class T> inline Calc<T> in(T v) { if constexpr (is_float_like<T>) return (float)v; else return (int64_t)v; }
template <class T> inline T out(Calc<T> v) {
    if constexpr (is_float_like<T>) return T(v);
    else return (T)v;   // integer results wrap like two's-complement hardware adders
}

// |a| (Abs page: dst = |src|): clears the sign bit of floats, so Abs(-0.0) is +0.0.
template <class C> inline C abs_val(C a) {
    if constexpr (std::is_floating_point_v<C>) return std::fabs(a);
    else return a < 0 ? -a : a;
}

// ---- generic engines
template <class T, class F>
inline void binary_count(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,
                         int64_t count, F f, const Loc& loc) {
    check_count(count, op, loc); check_ub(dst, op, loc); check_ub(a, op, loc); check_ub(b, op, loc);
    ops::SpanSet r, w;
    r.add(a, 0, count * sizeof(T)); r.add(b, 0, count * sizeof(T)); w.add(dst, 0, count * sizeof(T));
    Cost c; c.elems = (uint64_t)count; c.repeats = (uint32_t)((count * sizeof(T) + 255) / 256);
    ops::record_sets(op, Pipe::V, r, w, c, loc);
    const T* pa = a.emu_ptr(); const T* pb = b.emu_ptr(); T* pd = dst.emu_ptr();
    for (int64_t i = 0; i < count; ++i) pd[i] = out<T>(f(in<T>(pa[i]), in<T>(pb[i])));
}

template <class T, class F>
inline void binary_rep(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,
                       const Mask& mk, int64_t repeat, const AscendC::BinaryRepeatParams& p, F f, const Loc& loc) {
    check_repeat<T>(repeat, op, loc); check_ub(dst, op, loc); check_ub(a, op, loc); check_ub(b, op, loc);
    constexpr uint32_t E = REP_ELEMS<T>;
    repeat = mk.repeats(repeat, E);
    ops::SpanSet r, w;
    add_rep_spans(r, a, repeat, mk, E, p.src0BlkStride, p.src0RepStride);
    add_rep_spans(r, b, repeat, mk, E, p.src1BlkStride, p.src1RepStride);
    add_rep_spans(w, dst, repeat, mk, E, p.dstBlkStride, p.dstRepStride);
    Cost c; c.elems = (uint64_t)repeat * E; c.repeats = (uint32_t)repeat;
    ops::record_sets(op, Pipe::V, r, w, c, loc);
    const T* pa = a.emu_ptr(); const T* pb = b.emu_ptr(); T* pd = dst.emu_ptr();
    T tmp[E];
    for (int64_t rr = 0; rr < repeat; ++rr) {
        const Mask mr = mk.at(rr, E);
        for (uint32_t e = 0; e < E; ++e)
            if (mr.on(e))
                tmp[e] = out<T>(f(in<T>(pa[eoff<T>(rr, e, p.src0BlkStride, p.src0RepStride)]),
                                  in<T>(pb[eoff<T>(rr, e, p.src1BlkStride, p.src1RepStride)])));
        for (uint32_t e = 0; e < E; ++e)
            if (mr.on(e)) pd[eoff<T>(rr, e, p.dstBlkStride, p.dstRepStride)] = tmp[e];
    }
}

template <class D, class S, class F>
inline void unary_count(const char* op, const LocalTensor<D>& dst, const LocalTensor<S>& src, int64_t count, F f,
                        const Loc& loc) {
    check_count(count, op, loc); check_ub(dst, op, loc); check_ub(src, op, loc);
    ops::SpanSet r, w;
    r.add(src, 0, count * sizeof(S)); w.add(dst, 0, count * sizeof(D));
    Cost c; c.elems = (uint64_t)count;
    c.repeats = (uint32_t)((count * std::max(sizeof(D), sizeof(S)) + 255) / 256);
    ops::record_sets(op, Pipe::V, r, w, c, loc);
    const S* ps = src.emu_ptr(); D* pd = dst.emu_ptr();
    for (int64_t i = 0; i < count; ++i) pd[i] = f(ps[i]);
}

// Mask/repeat form of a unary op; elements per repeat = 256 / max(sizeof(D), sizeof(S)).
template <class D, class S, class F>
inline void unary_rep(const char* op, const LocalTensor<D>& dst, const LocalTensor<S>& src, const Mask& mk, int64_t repeat,
                      uint64_t dblk, uint64_t sblk, uint64_t drep, uint64_t srep, F f, const Loc& loc) {
    check_repeat<D>(repeat, op, loc); check_ub(dst, op, loc); check_ub(src, op, loc);
    constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(D), sizeof(S));
    repeat = mk.repeats(repeat, E);
    ops::SpanSet r, w;
    add_rep_spans(r, src, repeat, mk, E, sblk, srep);
    add_rep_spans(w, dst, repeat, mk, E, dblk, drep);
    Cost c; c.elems = (uint64_t)repeat * E; c.repeats = (uint32_t)repeat;
    ops::record_sets(op, Pipe::V, r, w, c, loc);
    const S* ps = src.emu_ptr(); D* pd = dst.emu_ptr();
    D tmp[E];
    for (int64_t rr = 0; rr < repeat; ++rr) {
        const Mask mr = mk.at(rr, E);
        for (uint32_t e = 0; e < E; ++e)
            if (mr.on(e)) tmp[e] = f(ps[eoff<S>(rr, e, sblk, srep)]);
        for (uint32_t e = 0; e < E; ++e)
            if (mr.on(e)) pd[eoff<D>(rr, e, dblk, drep)] = tmp[e];
    }
}

// ---- rounding of Cast
// Round x (finite double) to a binary format with `mant` fraction bits and exponent range
// [emin, emax] using `mode`; returns the rounded value (or +-inf / +-max on overflow).
inline double round_fmt(double x, int mant, int emin, int emax, AscendC::RoundMode mode) {
    using RM = AscendC::RoundMode;
    if (x == 0 || std::isnan(x) || std::isinf(x)) return x;
    const bool neg = x < 0;
    const double a = std::fabs(x);
    int e; std::frexp(a, &e);          // a = f * 2^e, f in [0.5, 1): leading bit exponent e-1
    int q = std::max(e - 1, emin);
    const double ulp = std::ldexp(1.0, q - mant);
    const double t = a / ulp;          // exact: scaling by a power of two
    const double fl = std::floor(t);
    const double frac = t - fl;
    double rt;
    switch (mode) {
        case RM::CAST_FLOOR: rt = neg ? (frac > 0 ? fl + 1 : fl) : fl; break;
        case RM::CAST_CEIL: rt = neg ? fl : (frac > 0 ? fl + 1 : fl); break;
        case RM::CAST_TRUNC: rt = fl; break;
        case RM::CAST_ROUND: rt = frac >= 0.5 ? fl + 1 : fl; break;
        case RM::CAST_ODD: rt = (frac > 0 && std::fmod(fl, 2.0) == 0) ? fl + 1 : fl; break;
        default: rt = (frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) != 0)) ? fl + 1 : fl; break;  // RINT / NONE
    }
    double r = rt * ulp;
    const double maxv = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
    if (r > maxv) {
        bool to_inf;
        switch (mode) {
            case RM::CAST_TRUNC: case RM::CAST_ODD: to_inf = false; break;
            case RM::CAST_FLOOR: to_inf = neg; break;
            case RM::CAST_CEIL: to_inf = !neg; break;
            default: to_inf = true; break;
        }
        r = to_inf ? std::numeric_limits<double>::infinity() : maxv;
    }
    return neg ? -r : r;
}

inline double round_int(double x, AscendC::RoundMode mode) {
    using RM = AscendC::RoundMode;
    switch (mode) {
        case RM::CAST_FLOOR: return std::floor(x);
        case RM::CAST_CEIL: return std::ceil(x);
        case RM::CAST_TRUNC: return std::trunc(x);
        case RM::CAST_ROUND: return std::round(x);   // half away from zero
        default: return std::nearbyint(x);           // RINT / NONE: half to even
    }
}

template <class D>
inline D cast_one(double x, AscendC::RoundMode mode) {
    if constexpr (std::is_same_v<D, half>) {
        if (std::isnan(x)) return half::from_bits(0x7e00);
        return half((float)round_fmt(x, 10, -14, 15, mode));
    } else if constexpr (std::is_same_v<D, bfloat16_t>) {
        if (std::isnan(x)) return bfloat16_t::from_bits(0x7fc0);
        return bfloat16_t((float)round_fmt(x, 7, -126, 127, mode));
    } else if constexpr (std::is_same_v<D, float>) {
        return (float)round_fmt(x, 23, -126, 127, mode);
    } else {
        if (std::isnan(x)) return D(0);
        double r = round_int(x, mode);
        if (r < (double)std::numeric_limits<D>::lowest()) return std::numeric_limits<D>::lowest();
        if (r > (double)std::numeric_limits<D>::max()) return std::numeric_limits<D>::max();
        return (D)r;
    }
}

// ---- the 8-bit float types (Cast page, table of Ascend 950PR/950DT; 内置数据类型 page)
template <class T> inline constexpr bool is_fp8 = std::is_same_v<T, fp8_e4m3fn_t> || std::is_same_v<T, fp8_e5m2_t>;
template <class T> inline constexpr bool is_f8 = is_fp8<T> || std::is_same_v<T, hifloat8_t>;
// Saturation of float -> 8-bit float conversions from the CTRL register (SetCtrlSpr page: CTRL[60]
// = 1 makes CTRL[48] global, 0 = saturate; CTRL[50] = 1 keeps NaN in saturation mode). With
// CTRL[60] = 0 only the Reg API's per-instruction satMode applies; this Cast has none, so it
// saturates (精度转换 page: overflow saturates by default).
inline F8Mode f8_mode() {
    const uint64_t c = ctrl_get();
    if (((c >> 60) & 1u) && ((c >> 48) & 1u)) return F8Mode::NOSAT;
    return ((c >> 50) & 1u) ? F8Mode::SAT_NAN : F8Mode::SAT;
}
// One element of a Cast that involves an 8-bit float type: fp8 -> float and hifloat8_t -> half /
// float are exact; float -> fp8 rounds to nearest even (CAST_RINT); float / half -> hifloat8_t
// rounds half away (CAST_ROUND) or by the page's hybrid rule (CAST_HYBRID).
template <class D, class S>
inline D cast_f8(S x, AscendC::RoundMode mode, F8Mode fm) {
    if constexpr (std::is_same_v<D, fp8_e4m3fn_t>) return D::from_bits(to_minifloat<4, 3, 7, true>((float)x, fm));
    else if constexpr (std::is_same_v<D, fp8_e5m2_t>) return D::from_bits(to_minifloat<5, 2, 15, false>((float)x, fm));
    else if constexpr (std::is_same_v<D, hifloat8_t>) {
#if defined(EMU_ARCH_3510)
        const bool hybrid = mode == AscendC::RoundMode::CAST_HYBRID;
#else
        const bool hybrid = false;
#endif
        if constexpr (std::is_same_v<S, half>) return D::from_bits(to_hif8((float)x, hybrid, fm, 2, ((x.bits() & 1u) << 1) | 1u));
        else return D::from_bits(to_hif8((float)x, hybrid, fm));
    } else {
        (void)mode; (void)fm;
        return D((float)x);
    }
}
template <class D, class S>
inline void check_cast_f8(AscendC::RoundMode mode, const Loc& loc) {
#if defined(EMU_ARCH_C220)
    static_assert(!sizeof(D*), "Cast: conversions to or from fp8_e4m3fn_t / fp8_e5m2_t / hifloat8_t exist only on "
                               "dav-3510 (Ascend 950); the dav-c220 table of the Cast page has none");
    (void)mode; (void)loc;
#else
    using RM = AscendC::RoundMode;
    constexpr bool from_fp8 = is_fp8<S> && std::is_same_v<D, float>;
    constexpr bool to_fp8 = is_fp8<D> && std::is_same_v<S, float>;
    constexpr bool from_hif8 = std::is_same_v<S, hifloat8_t> && (std::is_same_v<D, float> || std::is_same_v<D, half>);
    constexpr bool to_hif8 = std::is_same_v<D, hifloat8_t> && (std::is_same_v<S, float> || std::is_same_v<S, half>);
    static_assert(from_fp8 || to_fp8 || from_hif8 || to_hif8,
                  "Cast: the dav-3510 table of the Cast page converts fp8_e4m3fn_t / fp8_e5m2_t only to and from "
                  "float, and hifloat8_t only to and from half / float");
    if ((from_fp8 || from_hif8) && mode != RM::CAST_NONE)
        emu::fail("invalid_param", "Cast: an fp8 / hifloat8_t source converts exactly: use RoundMode::CAST_NONE", loc);
    if (to_fp8 && mode != RM::CAST_RINT)
        emu::fail("invalid_param", "Cast: float -> fp8_e4m3fn_t / fp8_e5m2_t takes RoundMode::CAST_RINT only (Cast page)", loc);
    if (to_hif8 && mode != RM::CAST_ROUND && mode != RM::CAST_HYBRID)
        emu::fail("invalid_param", "Cast: -> hifloat8_t takes RoundMode::CAST_ROUND or CAST_HYBRID only (Cast page)", loc);
#endif
}
// The element function of every Cast form.
template <class D, class S>
inline auto cast_fn(AscendC::RoundMode mode) {
    if constexpr (is_f8<D> || is_f8<S>) {
        const F8Mode fm = f8_mode();
        return [mode, fm](S x) { return cast_f8<D, S>(x, mode, fm); };
    } else {
        return [mode](S x) { return cast_one<D>((double)x, mode); };
    }
}

template <class D, class S>
inline void check_cast(AscendC::RoundMode mode, const Loc& loc) {
    if constexpr (is_f8<D> || is_f8<S>) {
        check_cast_f8<D, S>(mode, loc);
        return;
    }
    static_assert(!std::is_same_v<D, S> || std::is_same_v<D, float>, "Cast: source and destination types are equal");
    constexpr bool s_f = is_float_like<S>, d_f = is_float_like<D>;
    constexpr bool exact = (std::is_same_v<S, half> && std::is_same_v<D, float>) ||
                           (std::is_same_v<S, bfloat16_t> && std::is_same_v<D, float>) ||
                           (!s_f && d_f && sizeof(S) <= 2) || (!s_f && !d_f && sizeof(D) > sizeof(S));
    using RM = AscendC::RoundMode;
    if (mode == RM::UNKNOWN) emu::fail("invalid_param", "Cast: RoundMode::UNKNOWN", loc);
    if (exact && mode != RM::CAST_NONE)
        emu::fail("invalid_param", "Cast: an exact conversion takes RoundMode::CAST_NONE", loc);
    if (mode == RM::CAST_ODD && !(std::is_same_v<S, float> && std::is_same_v<D, half>))
        emu::fail("invalid_param", "Cast: CAST_ODD is documented for float -> half only", loc);
    if (s_f && !d_f && mode == RM::CAST_NONE && !std::is_same_v<S, half>)
        emu::fail("invalid_param", "Cast: float -> integer needs an explicit rounding mode", loc);
}

// ---- reductions
// Sums follow the ReduceDataBlock / ReduceRepeat / ReduceSum pages: inside a repeat, a binary
// tree of adjacent pairs ((e0+e1), (e2+e3), ... then pairs of those), every partial sum
// rounded to T (half stays half), inactive elements counting as 0.
template <class T>
inline T add_t(T a, T b) { return out<T>(in<T>(a) + in<T>(b)); }
// Tree sum of v[0..n); n is padded with zeros to a power of two. Overwrites v (size >= pow2(n)).
template <class T>
inline T tree_sum(T* v, uint32_t n) {
    if (n == 0) return T(0);
    uint32_t m = 1;
    while (m < n) m <<= 1;
    for (uint32_t i = n; i < m; ++i) v[i] = T(0);
    for (; m > 1; m >>= 1)
        for (uint32_t i = 0; i < m / 2; ++i) v[i] = add_t(v[2 * i], v[2 * i + 1]);
    return v[0];
}
// "Method 2" of the ReduceSum page: per-repeat results are themselves summed by trees of one
// repeat's width (REP_ELEMS), level after level, until one value is left.
template <class T>
inline T tree_levels(std::vector<T> r) {
    constexpr uint32_t E = REP_ELEMS<T>;
    if (r.empty()) return T(0);
    while (r.size() > 1) {
        std::vector<T> next;
        T buf[E];
        for (size_t b = 0; b < r.size(); b += E) {
            uint32_t k = (uint32_t)std::min<size_t>(E, r.size() - b);
            for (uint32_t i = 0; i < k; ++i) buf[i] = r[b + i];
            next.push_back(tree_sum(buf, k));
        }
        r.swap(next);
    }
    return r[0];
}

template <class T>
inline void write_index(T* dst, uint32_t idx) {
    if constexpr (sizeof(T) == 2) { uint16_t v = (uint16_t)idx; std::memcpy(dst, &v, 2); }
    else { uint32_t v = idx; std::memcpy(dst, &v, 4); }
}

}  // namespace emu::vec

namespace AscendC {

// ---------------------------------------------------------------- mask register
template <typename T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(uint64_t maskHigh, uint64_t maskLow) {
    auto& s = emu::vec::mask_state();
    if (mode == MaskMode::COUNTER || s.counter) { s.counter = true; s.lo = maskLow; s.hi = 0; }
    else { s.hi = maskHigh; s.lo = maskLow; }
}
template <typename T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(int32_t len) {
    auto& s = emu::vec::mask_state();
    if (mode == MaskMode::COUNTER || s.counter) { s.counter = true; s.lo = (uint64_t)len; s.hi = 0; return; }
    uint64_t n = (uint64_t)std::max(0, len);
    s.lo = n >= 64 ? ~0ull : ((1ull << n) - 1);
    s.hi = n >= 128 ? ~0ull : (n > 64 ? ((1ull << (n - 64)) - 1) : 0);
}
inline void SetMaskCount() { emu::vec::mask_state().counter = true; }
inline void SetMaskNorm() { emu::vec::mask_state().counter = false; }
inline void ResetMask() { auto& s = emu::vec::mask_state(); s.hi = ~0ull; s.lo = ~0ull; }

// ---------------------------------------------------------------- binary ops
#define EMU_BINARY_OP(NAME, TYPES, EXPR)                                                                              \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                 \
                     const int32_t& count, const emu::Loc& loc = emu::Loc::current()) {                                \
        EMU_DT_CHECK_COUNT(TYPES, #NAME, T);                                                                          \
        emu::vec::binary_count(#NAME, dst, src0, src1, count, [](auto a, auto b) { return EXPR; }, loc);               \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask, \
                     const uint8_t repeatTime, const BinaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) { \
        EMU_DT_CHECK_REP(TYPES, #NAME, T);                                                                            \
        emu::vec::Mask mk = isSetMask ? emu::vec::mask_cont<T>(mask, #NAME, loc) : emu::vec::mask_reg<T>();           \
        emu::vec::binary_rep(#NAME, dst, src0, src1, mk, repeatTime, p, [](auto a, auto b) { return EXPR; }, loc);     \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                 \
                     const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& p,                    \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        EMU_DT_CHECK_REP(TYPES, #NAME, T);                                                                            \
        emu::vec::Mask mk = isSetMask ? emu::vec::mask_bits<T>(mask, #NAME, loc) : emu::vec::mask_reg<T>();           \
        emu::vec::binary_rep(#NAME, dst, src0, src1, mk, repeatTime, p, [](auto a, auto b) { return EXPR; }, loc);     \
    }

EMU_BINARY_OP(Add, dt_add, a + b)
EMU_BINARY_OP(Sub, dt_add, a - b)
EMU_BINARY_OP(Mul, dt_mul, a * b)
EMU_BINARY_OP(Div, dt_div, (b == 0 && !std::is_floating_point_v<decltype(a)>) ? decltype(a)(0) : a / b)
EMU_BINARY_OP(Max, dt_add, (a > b || a != a) ? a : b)
EMU_BINARY_OP(Min, dt_add, (a < b || a != a) ? a : b)
#undef EMU_BINARY_OP

// ---------------------------------------------------------------- scalar ops (tensor op scalar)
// The scalar is first converted to T (rounded), as the hardware holds it in T. Overloads as
// documented: <T, isSetMask> with a T scalar, and <T, U, isSetMask> for another scalar type
// (a LocalTensor is never a scalar here: the 3510 single-point forms are in emu_vector_ext.h).
// The count form with isSetMask = false takes its extent from the mask register: its count in
// counter mode; in normal mode its bit mask over ceil(count * sizeof(T) / 256) repeats
// (**assumed**; the page only says count is then unused).
#define EMU_SCALAR_OP(NAME, TYPES, EXPR)                                                                              \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& count, \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        EMU_DT_CHECK_COUNT(TYPES, #NAME, T);                                                                          \
        const auto b = emu::vec::in<T>(T(scalarValue));                                                              \
        auto f = [b](T x) { auto a = emu::vec::in<T>(x); return emu::vec::out<T>(EXPR); };                             \
        if (isSetMask) { emu::vec::unary_count(#NAME, dst, src, count, f, loc); return; }                             \
        emu::vec::Mask mk = emu::vec::mask_reg<T>();                                                                  \
        emu::vec::unary_rep(#NAME, dst, src, mk, (count * (int64_t)sizeof(T) + 255) / 256, 1, 1, 8, 8, f, loc);        \
    }                                                                                                                 \
    template <typename T, typename U, bool isSetMask = true,                                                          \
              std::enable_if_t<std::is_arithmetic_v<U> || emu::is_f16_like<U>, int> = 0>        \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue, const int32_t& count, \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        NAME<T, isSetMask>(dst, src, T(scalarValue), count, loc);                                                     \
    }                                                                                                                 \
    template <typename T, typename U, bool isSetMask = true,                                                          \
              std::enable_if_t<std::is_arithmetic_v<U> || emu::is_f16_like<U>, int> = 0>                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue, uint64_t mask,        \
                     const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) { \
        EMU_DT_CHECK_REP(TYPES, #NAME, T);                                                                            \
        const auto b = emu::vec::in<T>(T(scalarValue));                                                              \
        emu::vec::Mask mk = isSetMask ? emu::vec::mask_cont<T>(mask, #NAME, loc) : emu::vec::mask_reg<T>();           \
        emu::vec::unary_rep(#NAME, dst, src, mk, repeatTime, p.dstBlkStride, p.srcBlkStride, p.dstRepStride,           \
                            p.srcRepStride, [b](T x) { auto a = emu::vec::in<T>(x); return emu::vec::out<T>(EXPR); }, loc); \
    }                                                                                                                 \
    template <typename T, typename U, bool isSetMask = true,                                                          \
              std::enable_if_t<std::is_arithmetic_v<U> || emu::is_f16_like<U>, int> = 0>                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue, const uint64_t mask[], \
                     const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) { \
        EMU_DT_CHECK_REP(TYPES, #NAME, T);                                                                            \
        const auto b = emu::vec::in<T>(T(scalarValue));                                                              \
        emu::vec::Mask mk = isSetMask ? emu::vec::mask_bits<T>(mask, #NAME, loc) : emu::vec::mask_reg<T>();           \
        emu::vec::unary_rep(#NAME, dst, src, mk, repeatTime, p.dstBlkStride, p.srcBlkStride, p.dstRepStride,           \
                            p.srcRepStride, [b](T x) { auto a = emu::vec::in<T>(x); return emu::vec::out<T>(EXPR); }, loc); \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask,        \
                     const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) { \
        NAME<T, T, isSetMask>(dst, src, scalarValue, mask, repeatTime, p, loc);                                       \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const uint64_t mask[], \
                     const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) { \
        NAME<T, T, isSetMask>(dst, src, scalarValue, mask, repeatTime, p, loc);                                       \
    }

EMU_SCALAR_OP(Adds, dt_adds, a + b)
EMU_SCALAR_OP(Muls, dt_muls, a * b)
EMU_SCALAR_OP(Maxs, dt_adds, (a > b || a != a) ? a : b)
EMU_SCALAR_OP(Mins, dt_adds, (a < b || a != a) ? a : b)
#undef EMU_SCALAR_OP

// ---------------------------------------------------------------- unary ops
#define EMU_UNARY_OP(NAME, TYPES, EXPR)                                                                              \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,                       \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        EMU_DT_CHECK_COUNT(TYPES, #NAME, T);                                                                          \
        emu::vec::unary_count(#NAME, dst, src, count,                                                                 \
                              [](T x) { auto a = emu::vec::in<T>(x); return emu::vec::out<T>(EXPR); }, loc);          \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask, const uint8_t repeatTime,   \
                     const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {                          \
        EMU_DT_CHECK_REP(TYPES, #NAME, T);                                                                            \
        emu::vec::Mask mk = isSetMask ? emu::vec::mask_cont<T>(mask, #NAME, loc) : emu::vec::mask_reg<T>();           \
        emu::vec::unary_rep(#NAME, dst, src, mk, repeatTime, p.dstBlkStride, p.srcBlkStride, p.dstRepStride,           \
                            p.srcRepStride, [](T x) { auto a = emu::vec::in<T>(x); return emu::vec::out<T>(EXPR); }, loc); \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                     \
                     const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) { \
        EMU_DT_CHECK_REP(TYPES, #NAME, T);                                                                            \
        emu::vec::Mask mk = isSetMask ? emu::vec::mask_bits<T>(mask, #NAME, loc) : emu::vec::mask_reg<T>();           \
        emu::vec::unary_rep(#NAME, dst, src, mk, repeatTime, p.dstBlkStride, p.srcBlkStride, p.dstRepStride,           \
                            p.srcRepStride, [](T x) { auto a = emu::vec::in<T>(x); return emu::vec::out<T>(EXPR); }, loc); \
    }

EMU_UNARY_OP(Exp, dt_exp, std::exp(a))
EMU_UNARY_OP(Ln, dt_exp, std::log(a))
EMU_UNARY_OP(Sqrt, dt_exp, std::sqrt(a))
EMU_UNARY_OP(Rsqrt, dt_exp, 1.0f / std::sqrt(a))
EMU_UNARY_OP(Reciprocal, dt_recip, 1.0f / a)
EMU_UNARY_OP(Abs, dt_abs, emu::vec::abs_val(a))
EMU_UNARY_OP(Relu, dt_relu, (a > 0 || a != a) ? a : decltype(a)(0))
#undef EMU_UNARY_OP

// ---------------------------------------------------------------- Duplicate
template <typename T, typename U, std::enable_if_t<std::is_arithmetic_v<U> || emu::is_f16_like<U>, int> = 0>
inline void Duplicate(const LocalTensor<T>& dst, const U& scalarValue, const int32_t& count,
                      const emu::Loc& loc = emu::Loc::current()) {
    EMU_DT_CHECK_COUNT(dt_dup, "Duplicate", T);
    emu::vec::check_count(count, "Duplicate", loc); emu::vec::check_ub(dst, "Duplicate", loc);
    emu::ops::SpanSet r, w; w.add(dst, 0, (uint64_t)count * sizeof(T));
    emu::Cost c; c.elems = (uint64_t)count; c.repeats = (uint32_t)(((uint64_t)count * sizeof(T) + 255) / 256);
    emu::ops::record_sets("Duplicate", emu::Pipe::V, r, w, c, loc);
    const T v = T(scalarValue);
    T* d = dst.emu_ptr();
    for (int32_t i = 0; i < count; ++i) d[i] = v;
}
// Mask/repeat forms of Duplicate: emu_vector_ext.h (they only write dst).

// ---------------------------------------------------------------- Cast
// Conversion with the documented rounding modes: CAST_NONE (exact conversions, or round to
// nearest even where precision is lost), CAST_RINT (nearest, ties to even), CAST_FLOOR,
// CAST_CEIL, CAST_ROUND (nearest, ties away from zero), CAST_TRUNC (toward zero), CAST_ODD
// (round to odd, float -> half). Integer results saturate; NaN -> 0.
}  // namespace AscendC
namespace emu::vec {   // int4b_t casts (emu_vector_ext.h): count form when repeat < 0
template <class D, class S>
void cast_int4(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src, AscendC::RoundMode mode,
               bool isSetMask, uint64_t mask, const uint64_t* maskBits, int64_t repeat,
               const AscendC::UnaryRepeatParams& p, const Loc& loc);
}  // namespace emu::vec
namespace AscendC {
template <typename D, typename S>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& round_mode, const uint32_t count,
                 const emu::Loc& loc = emu::Loc::current()) {
    if constexpr (std::is_same_v<D, int4b_t> || std::is_same_v<S, int4b_t>) {
        emu::vec::cast_int4(dst, src, round_mode, true, count, nullptr, -1, UnaryRepeatParams(), loc);
    } else {
    emu::vec::check_cast<D, S>(round_mode, loc);
    emu::vec::unary_count("Cast", dst, src, count, emu::vec::cast_fn<D, S>(round_mode), loc);
    }
}
template <typename D, typename S, bool isSetMask = true>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& round_mode, uint64_t mask,
                 const uint8_t repeatTime, const UnaryRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    if constexpr (std::is_same_v<D, int4b_t> || std::is_same_v<S, int4b_t>) {
        emu::vec::cast_int4(dst, src, round_mode, isSetMask, mask, nullptr, repeatTime, p, loc);
    } else {
    emu::vec::check_cast<D, S>(round_mode, loc);
    constexpr uint32_t E = 256 / (uint32_t)std::max(sizeof(D), sizeof(S));
    emu::vec::Mask mk = isSetMask ? emu::vec::mask_cont<D>(mask, "Cast", loc, E) : emu::vec::mask_reg<D>();
    emu::vec::unary_rep("Cast", dst, src, mk, repeatTime, p.dstBlkStride, p.srcBlkStride, p.dstRepStride, p.srcRepStride,
                        emu::vec::cast_fn<D, S>(round_mode), loc);
    }
}

// ---------------------------------------------------------------- reductions
// ReduceSum/ReduceMax/ReduceMin over `count` elements: dst[0] = result. ReduceMax/Min with
// calIndex also store the index of the first extreme element in dst[1] (its integer bits:
// uint16 for 2-byte types, uint32 for 4-byte types). ReduceSum (count form), per the ReduceSum
// page's "key features": a tree inside each repeat (partial sums in T); then on dav-c220 the
// repeat results are added in order (method 1); on dav-3510 a count of 256..1024 bytes first
// adds the repeats element-wise into one repeat, then one tree (method 3), other counts sum
// the repeat results by trees again (method 2). workLocal is accepted but not modelled.
namespace emu_detail {
template <typename T, int KIND>
inline void reduce_all(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,
                       int32_t count, bool calIndex, const emu::Loc& loc) {
    (void)work;
    emu::vec::reduce_spr() = {true, dst.emu_mem(), dst.emu_offset()};   // the SPR reads dst[0] (ext header)
    emu::vec::check_count(count, op, loc); emu::vec::check_ub(dst, op, loc); emu::vec::check_ub(src, op, loc);
    emu::ops::SpanSet r, w;
    r.add(src, 0, (uint64_t)count * sizeof(T));
    w.add(dst, 0, (calIndex && KIND != 0 ? 2 : 1) * sizeof(T));
    emu::Cost c; c.elems = (uint64_t)count; c.repeats = (uint32_t)(((uint64_t)count * sizeof(T) + 255) / 256);
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    const T* s = src.emu_ptr(); T* d = dst.emu_ptr();
    if (count == 0) return;
    if constexpr (KIND == 0) {
        constexpr uint32_t E = emu::REP_ELEMS<T>;
        const uint64_t n = (uint64_t)count, reps = (n + E - 1) / E;
        const uint64_t bytes = n * sizeof(T);
        T buf[E];
        if (emu::is_3510() && bytes >= 256 && bytes <= 1024) {   // method 3
            for (uint32_t e = 0; e < E; ++e) buf[e] = s[e];
            for (uint64_t r = 1; r < reps; ++r)
                for (uint32_t e = 0; e < E && r * E + e < n; ++e) buf[e] = emu::vec::add_t(buf[e], s[r * E + e]);
            d[0] = emu::vec::tree_sum(buf, E);
            return;
        }
        std::vector<T> part(reps);
        for (uint64_t r = 0; r < reps; ++r) {
            uint32_t k = (uint32_t)std::min<uint64_t>(E, n - r * E);
            for (uint32_t e = 0; e < k; ++e) buf[e] = s[r * E + e];
            part[r] = emu::vec::tree_sum(buf, k);
        }
        if (emu::is_3510()) {                                        // method 2
            d[0] = emu::vec::tree_levels(std::move(part));
        } else {                                                     // method 1
            T acc = part[0];
            for (uint64_t r = 1; r < reps; ++r) acc = emu::vec::add_t(acc, part[r]);
            d[0] = acc;
        }
    } else {
        uint32_t best = 0;
        for (int32_t i = 1; i < count; ++i) {
            auto v = emu::vec::in<T>(s[i]), b = emu::vec::in<T>(s[best]);
            if (KIND == 1 ? v > b : v < b) best = (uint32_t)i;
        }
        d[0] = s[best];
        if (calIndex) emu::vec::write_index(d + 1, best);
    }
}
}  // namespace emu_detail

template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
                      const int32_t count, const emu::Loc& loc = emu::Loc::current()) {
    EMU_DT_CHECK_COUNT(dt_rsum, "ReduceSum", T);
    emu_detail::reduce_all<T, 0>("ReduceSum", dst, src, workLocal, count, false, loc);
}
template <typename T>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
                      const int32_t count, bool calIndex = false, const emu::Loc& loc = emu::Loc::current()) {
    EMU_DT_CHECK_COUNT(dt_rmax, "ReduceMax", T);
    emu_detail::reduce_all<T, 1>("ReduceMax", dst, src, workLocal, count, calIndex, loc);
}
template <typename T>
inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
                      const int32_t count, bool calIndex = false, const emu::Loc& loc = emu::Loc::current()) {
    EMU_DT_CHECK_COUNT(dt_rmax, "ReduceMin", T);
    emu_detail::reduce_all<T, 2>("ReduceMin", dst, src, workLocal, count, calIndex, loc);
}

// WholeReduce*: one result per repeat over its active elements. dstRepStride is in units of
// one repeat's result: 1 element for sums and ORDER_ONLY_* orders, 2 elements for
// value/index pairs (index = position of the first extreme element inside the repeat).
namespace emu_detail {
template <typename T, int KIND>
inline void whole_reduce(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& src, const emu::vec::Mask& mk,
                         int32_t repeat, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride,
                         ReduceOrder order, const emu::Loc& loc) {
    emu::vec::check_repeat<T>(repeat, op, loc); emu::vec::check_ub(dst, op, loc); emu::vec::check_ub(src, op, loc);
    constexpr uint32_t E = emu::REP_ELEMS<T>;
    const bool pair = KIND != 0 && (order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE);
    const uint64_t unit = pair ? 2 : 1;
    emu::ops::SpanSet r, w;
    emu::vec::add_rep_spans(r, src, repeat, mk, E, srcBlkStride, srcRepStride);
    for (int32_t rr = 0; rr < repeat; ++rr) {
        uint64_t o = (uint64_t)rr * dstRepStride * unit;
        w.add(dst, o * sizeof(T), (o + unit) * sizeof(T));
    }
    emu::Cost c; c.elems = (uint64_t)repeat * E; c.repeats = (uint32_t)repeat;
    emu::ops::record_sets(op, emu::Pipe::V, r, w, c, loc);
    const T* s = src.emu_ptr(); T* d = dst.emu_ptr();
    for (int32_t rr = 0; rr < repeat; ++rr) {
        T* o = d + (uint64_t)rr * dstRepStride * unit;
        if constexpr (KIND == 0) {   // ReduceRepeat page: a tree over the repeat, inactive lanes 0
            T buf[E];
            for (uint32_t e = 0; e < E; ++e)
                buf[e] = mk.on(e) ? s[emu::vec::eoff<T>(rr, e, srcBlkStride, srcRepStride)] : T(0);
            o[0] = emu::vec::tree_sum(buf, E);
        } else {
            int64_t best = -1;
            for (uint32_t e = 0; e < E; ++e) {
                if (!mk.on(e)) continue;
                if (best < 0) { best = e; continue; }
                auto v = emu::vec::in<T>(s[emu::vec::eoff<T>(rr, e, srcBlkStride, srcRepStride)]);
                auto b = emu::vec::in<T>(s[emu::vec::eoff<T>(rr, (uint32_t)best, srcBlkStride, srcRepStride)]);
                if (KIND == 1 ? v > b : v < b) best = e;
            }
            if (best < 0) continue;
            T val = s[emu::vec::eoff<T>(rr, (uint32_t)best, srcBlkStride, srcRepStride)];
            switch (order) {
                case ReduceOrder::ORDER_VALUE_INDEX: o[0] = val; emu::vec::write_index(o + 1, (uint32_t)best); break;
                case ReduceOrder::ORDER_INDEX_VALUE: emu::vec::write_index(o, (uint32_t)best); o[1] = val; break;
                case ReduceOrder::ORDER_ONLY_VALUE: o[0] = val; break;
                case ReduceOrder::ORDER_ONLY_INDEX: emu::vec::write_index(o, (uint32_t)best); break;
            }
        }
    }
}
}  // namespace emu_detail

#define EMU_WHOLE_REDUCE(NAME, KIND, ORDER_PARAM, ORDER_ARG)                                                         \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask, const int32_t repeatTime, \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride ORDER_PARAM,    \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        emu::vec::Mask mk = isSetMask ? emu::vec::mask_cont<T>((uint64_t)mask, #NAME, loc) : emu::vec::mask_reg<T>(); \
        emu_detail::whole_reduce<T, KIND>(#NAME, dst, src, mk, repeatTime, dstRepStride, srcBlkStride, srcRepStride,   \
                                          ORDER_ARG, loc);                                                            \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const int32_t repeatTime, \
                     const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride ORDER_PARAM,    \
                     const emu::Loc& loc = emu::Loc::current()) {                                                     \
        emu::vec::Mask mk = isSetMask ? emu::vec::mask_bits<T>(mask, #NAME, loc) : emu::vec::mask_reg<T>();           \
        emu_detail::whole_reduce<T, KIND>(#NAME, dst, src, mk, repeatTime, dstRepStride, srcBlkStride, srcRepStride,   \
                                          ORDER_ARG, loc);                                                            \
    }
#define EMU_COMMA ,
EMU_WHOLE_REDUCE(WholeReduceSum, 0, , ReduceOrder::ORDER_ONLY_VALUE)
EMU_WHOLE_REDUCE(WholeReduceMax, 1, EMU_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
EMU_WHOLE_REDUCE(WholeReduceMin, 2, EMU_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
#undef EMU_COMMA
#undef EMU_WHOLE_REDUCE

// ---------------------------------------------------------------- Brcb
// Each repeat takes 8 consecutive source elements; element j fills one whole 32-byte block
// of the destination at block (r*dstRepStride + j*dstBlkStride).
template <typename T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint8_t repeatTime,
                 const BrcbRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Brcb supports 16- and 32-bit types");
    emu::vec::check_ub(dst, "Brcb", loc); emu::vec::check_ub(src, "Brcb", loc);
    constexpr uint64_t C0 = emu::C0<T>;
    emu::ops::SpanSet r, w;
    r.add(src, 0, (uint64_t)repeatTime * 8 * sizeof(T));
    for (uint64_t rr = 0; rr < repeatTime; ++rr)
        for (uint64_t j = 0; j < 8; ++j) {
            uint64_t b = rr * p.dstRepStride + j * p.dstBlkStride;
            w.add(dst, b * 32, b * 32 + 32);
        }
    emu::Cost c; c.elems = (uint64_t)repeatTime * 8 * C0; c.repeats = repeatTime;
    emu::ops::record_sets("Brcb", emu::Pipe::V, r, w, c, loc);
    const T* s = src.emu_ptr(); T* d = dst.emu_ptr();
    T vals[8 * 255];
    for (uint64_t i = 0; i < (uint64_t)repeatTime * 8; ++i) vals[i] = s[i];
    for (uint64_t rr = 0; rr < repeatTime; ++rr)
        for (uint64_t j = 0; j < 8; ++j) {
            T* blk = d + (rr * p.dstRepStride + j * p.dstBlkStride) * C0;
            for (uint64_t k = 0; k < C0; ++k) blk[k] = vals[rr * 8 + j];
        }
}

// Compare / Compares / Select (all forms) and the CmpMask register: emu_vector_ext.h.

}  // namespace AscendC

#undef EMU_DT_CHECK_REP
#undef EMU_DT_CHECK_COUNT
#undef EMU_DT_COUNT_MSG
#undef EMU_DT_MSG
