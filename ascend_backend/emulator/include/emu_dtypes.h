#pragma once
// emu_dtypes.h: the 8-bit and 4-bit storage types the docs name (fp8_e4m3fn_t, fp8_e5m2_t,
// fp8_e8m0_t, hifloat8_t; AscendC::int4b_t). Each is one byte of storage with the bit layout
// of its format (内置数据类型 page, table 5 and table 6 for hifloat8_t). Like half, they define
// no arithmetic: values are computed in float. Written from the format definitions only.
//
// Conversions from float (emu::to_minifloat, emu::to_hif8) take the saturation behaviour as a
// parameter (SetCtrlSpr page, CTRL[48]/[50]; Reg Cast page, "不饱和模式和饱和模式"):
//   F8Mode::TORCH      what a C++ conversion of the storage type does (construction from a
//                      value): round to nearest even; e4m3fn saturates to +-448 (infinities
//                      too), e5m2 overflows to inf; NaN stays NaN. This is torch.float8_*'s rule.
//   F8Mode::SAT        saturation mode (the 950's default: CTRL[48] = 0): overflow and inf give
//                      +-max; NaN gives 0 (CTRL[50] = 0).
//   F8Mode::SAT_NAN    saturation with CTRL[50] = 1: as SAT, but NaN stays NaN.
//   F8Mode::NOSAT      non-saturation mode (CTRL[48] = 1): e5m2 overflows to inf; e4m3fn, which
//                      has no infinity, gives NaN for inf and for results beyond 448 (Fixpipe
//                      page, 950 special values); NaN stays NaN.
// hifloat8_t has no CTRL[50] bit: SAT and SAT_NAN both turn NaN into 0 and inf into +-max.
#include <cmath>
#include <cstdint>

namespace emu {
enum class F8Mode : uint8_t { TORCH, SAT, SAT_NAN, NOSAT };

// Minifloat with E exponent bits, M mantissa bits, exponent bias B. `fn`: no infinities, the
// all-ones code is NaN (e4m3fn); otherwise IEEE-like (e5m2). Rounds to nearest, ties to even.
// The input is a double so that a product computed exactly (Fixpipe's quantization) rounds once.
template <int E, int M, int B, bool fn>
inline uint8_t to_minifloat(double f, F8Mode mode = F8Mode::TORCH) {
    const uint8_t sign = std::signbit(f) ? 0x80 : 0;
    const uint8_t nan = 0x7f;
    const uint8_t max_code = fn ? 0x7e : (uint8_t)((((1 << E) - 2) << M) | ((1 << M) - 1));
    const uint8_t inf_code = fn ? nan : (uint8_t)(((1 << E) - 1) << M);
    // what an infinity or an overflowing finite value becomes
    auto overflow = [&]() -> uint8_t {
        if (mode == F8Mode::SAT || mode == F8Mode::SAT_NAN) return (uint8_t)(sign | max_code);
        if (mode == F8Mode::TORCH && fn) return (uint8_t)(sign | max_code);
        return (uint8_t)(sign | inf_code);   // e5m2 inf; e4m3fn NaN (NOSAT)
    };
    if (std::isnan(f)) return mode == F8Mode::SAT ? (uint8_t)0 : (uint8_t)(sign | nan);
    if (std::isinf(f)) return overflow();
    double a = std::fabs(f);
    if (a == 0) return sign;
    int ex;
    std::frexp(a, &ex);
    int e = ex - 1;
    const int emin = 1 - B;
    if (e < emin) e = emin;
    double n = std::ldexp(a, M - e);          // exact: scaling by a power of two
    double r = std::nearbyint(n);             // round to nearest, ties to even
    uint32_t code;
    if (r < (double)(1 << M)) code = (uint32_t)r;  // subnormal (or zero)
    else {
        if (r >= (double)(2 << M)) { r /= 2; ++e; }
        code = (uint32_t)((e + B) << M) | ((uint32_t)r - (1u << M));
    }
    if (code > max_code) return overflow();
    return (uint8_t)(sign | code);
}
template <int E, int M, int B, bool fn>
inline float from_minifloat(uint8_t c) {
    const bool neg = c & 0x80;
    const int ef = (c >> M) & ((1 << E) - 1), mf = c & ((1 << M) - 1);
    float v;
    if (fn && (c & 0x7f) == 0x7f) v = NAN;
    else if (!fn && ef == (1 << E) - 1) v = mf ? NAN : INFINITY;
    else if (ef == 0) v = std::ldexp((float)mf, 1 - B - M);
    else v = std::ldexp((float)((1 << M) | mf), ef - B - M);
    return neg ? -v : v;
}

// ---- HiFloat8 (内置数据类型 page, table 6 and its formulas; special values: 0x00 zero, 0x80
// NaN, 0x6F / 0xEF +-inf, as the Reg Cast page's conversion rules spell them). After the sign
// bit a prefix-coded dot field D selects the exponent width: D = 11 (4 exponent bits, 1
// mantissa bit), 10 (3, 2), 01 (2, 3), 001 (1, 3), 0001 (0, 3: Ev = 0) and 0000 (subnormal:
// value 2^(M - 23), M = 1..7). The exponent's top bit is its sign, the rest with a leading 1
// its magnitude (Ev = +-1, +-[2,3], +-[4,7], +-[8,15]). No negative zero (0x80 is NaN).
inline float hif8_to_float(uint8_t c) {
    if (c == 0x00) return 0.0f;
    if (c == 0x80) return NAN;
    const bool neg = c & 0x80;
    if ((c & 0x7f) == 0x6f) return neg ? -INFINITY : INFINITY;
    const uint32_t b = c & 0x7f;
    int ev, mbits;
    uint32_t m;
    float v;
    if ((b >> 5) == 3) { uint32_t e = (b >> 1) & 0xf; m = b & 1; mbits = 1; ev = (int)(8 | (e & 7)) * ((e & 8) ? -1 : 1); }
    else if ((b >> 5) == 2) { uint32_t e = (b >> 2) & 7; m = b & 3; mbits = 2; ev = (int)(4 | (e & 3)) * ((e & 4) ? -1 : 1); }
    else if ((b >> 5) == 1) { uint32_t e = (b >> 3) & 3; m = b & 7; mbits = 3; ev = (int)(2 | (e & 1)) * ((e & 2) ? -1 : 1); }
    else if ((b >> 4) == 1) { m = b & 7; mbits = 3; ev = ((b >> 3) & 1) ? -1 : 1; }
    else if ((b >> 3) == 1) { m = b & 7; mbits = 3; ev = 0; }
    else { v = std::ldexp(1.0f, (int)(b & 7) - 23); return neg ? -v : v; }
    v = std::ldexp(1.0f + (float)m / (float)(1u << mbits), ev);
    return neg ? -v : v;
}
// Encode a normal HiFloat8 value 2^ev * (1 + m / 2^mbits(ev)), |ev| <= 15.
inline uint8_t hif8_pack(bool neg, int ev, uint32_t m) {
    const uint32_t a = (uint32_t)(ev < 0 ? -ev : ev), s = ev < 0 ? 1u : 0u;
    uint32_t code;
    if (a == 0) code = (1u << 3) | m;
    else if (a == 1) code = (1u << 4) | (s << 3) | m;
    else if (a <= 3) code = (1u << 5) | (((s << 1) | (a & 1)) << 3) | m;
    else if (a <= 7) code = (2u << 5) | (((s << 2) | (a & 3)) << 2) | m;
    else code = (3u << 5) | (((s << 3) | (a & 7)) << 1) | m;
    return (uint8_t)((neg ? 0x80 : 0) | code);
}
// float -> hifloat8_t following the Reg Cast page's "float转hifloat8_t转换规则": `hybrid` false is
// CAST_ROUND (half away from zero), true CAST_HYBRID (round up when the `fracbits` bits from the
// first dropped one are >= thr; the page's float rule: 14 bits, thr = the input's low 14 bits;
// its half rule: 2 bits, thr = {bit 0 of the half, 1}). Exponents +-[0,3] always round half
// away. The result then saturates per `mode` (F8Mode::TORCH keeps inf and NaN, as NOSAT).
inline uint8_t to_hif8(float f, bool hybrid, F8Mode mode, int fracbits, uint32_t thr) {
    const uint32_t x = f32_bits(f);
    const bool neg = x >> 31;
    int ev = (int)((x >> 23) & 0xff) - 127;
    const uint32_t man = x & 0x7fffffu;
    const bool sat = mode == F8Mode::SAT || mode == F8Mode::SAT_NAN;
    const uint8_t inf = neg ? 0xef : 0x6f, maxc = neg ? 0xee : 0x6e;
    if (ev == 128 && man) return sat ? 0x00 : 0x80;
    if (ev == 128 || ev > 15) return sat ? maxc : inf;
    if (ev == -127) return 0x00;    // zero and float subnormals (< 2^-126) are below 2^-23
    if (ev < -23) return 0x00;
    // the `n` bits of the mantissa from bit position `top` (22 = first fraction bit) down
    auto bits = [&](int top, int n) -> uint32_t { return (man >> (top - n + 1)) & ((1u << n) - 1); };
    if (ev == -23) {
        const bool up = !hybrid || ((1u << (fracbits - 1)) | bits(22, fracbits - 1)) >= thr;
        return up ? (uint8_t)((neg ? 0x80 : 0) | 1) : 0x00;
    }
    if (ev <= -16) {   // subnormal range: 2^ev, the first fraction bit decides
        const bool ta = bits(22, 1), up = hybrid ? bits(22, fracbits) >= thr : ta;
        if (up) ++ev;
        if (ev == -15) return hif8_pack(neg, -15, 0);
        return (uint8_t)((neg ? 0x80 : 0) | (uint32_t)(ev + 23));
    }
    const int a = ev < 0 ? -ev : ev;
    const int mbits = a <= 3 ? 3 : (a <= 7 ? 2 : 1);
    uint32_t m = bits(22, mbits);
    const bool ta = bits(22 - mbits, 1);
    const bool up = (a <= 3 || !hybrid) ? ta : bits(22 - mbits, fracbits) >= thr;
    if (up && ++m == (1u << mbits)) { m = 0; ++ev; }
    if (ev > 15) return sat ? maxc : inf;
    const uint8_t c = hif8_pack(neg, ev, m);
    if ((c & 0x7f) == 0x6f && sat) return maxc;   // 2^15 * 1.5 is the inf code
    return c;
}
inline uint8_t to_hif8(float f, bool hybrid = false, F8Mode mode = F8Mode::TORCH) {
    return to_hif8(f, hybrid, mode, 14, f32_bits(f) & 0x3fffu);
}
}  // namespace emu

#define EMU_FP8_TYPE(NAME, E, M, B, FN)                                                                 \
    struct NAME {                                                                                     \
        uint8_t bits_ = 0;                                                                            \
        NAME() = default;                                                                             \
        template <class U, std::enable_if_t<std::is_arithmetic_v<U> || emu::is_f16_like<U>, int> = 0> \
        NAME(U v) : bits_(emu::to_minifloat<E, M, B, FN>((float)v)) {}                                \
        operator float() const { return emu::from_minifloat<E, M, B, FN>(bits_); }                    \
        static NAME from_bits(uint8_t b) { NAME h; h.bits_ = b; return h; }                           \
        uint8_t bits() const { return bits_; }                                                        \
    };
EMU_FP8_TYPE(fp8_e4m3fn_t, 4, 3, 7, true)
EMU_FP8_TYPE(fp8_e5m2_t, 5, 2, 15, false)
#undef EMU_FP8_TYPE

// E8M0: an exponent only, value 2^(bits - 127); 0xFF is NaN. From float: the float's own
// exponent (2^floor(log2|x|), sign dropped); 0 and subnormals give 0x00, NaN/inf give 0xFF.
struct fp8_e8m0_t {
    uint8_t bits_ = 0;
    fp8_e8m0_t() = default;
    template <class U, std::enable_if_t<std::is_arithmetic_v<U> || emu::is_f16_like<U>, int> = 0>
    fp8_e8m0_t(U v) {
        float f = (float)v;
        bits_ = (std::isnan(f) || std::isinf(f)) ? 0xff : (uint8_t)((emu::f32_bits(f) >> 23) & 0xff);
    }
    operator float() const { return bits_ == 0xff ? NAN : std::ldexp(1.0f, (int)bits_ - 127); }
    static fp8_e8m0_t from_bits(uint8_t b) { fp8_e8m0_t h; h.bits_ = b; return h; }
    uint8_t bits() const { return bits_; }
};

// HiFloat8 (encoding above). Construction from a value rounds half away from zero (CAST_ROUND,
// the mode the Cast page documents for it) and keeps inf/NaN.
struct hifloat8_t {
    uint8_t bits_ = 0;
    hifloat8_t() = default;
    template <class U, std::enable_if_t<std::is_arithmetic_v<U> || emu::is_f16_like<U>, int> = 0>
    hifloat8_t(U v) : bits_(emu::to_hif8((float)v)) {}
    operator float() const { return emu::hif8_to_float(bits_); }
    static hifloat8_t from_bits(uint8_t b) { hifloat8_t h; h.bits_ = b; return h; }
    uint8_t bits() const { return bits_; }
};

// Two fp4 values per byte (e2m1 / e1m2): storage only, raw bits. LocalTensor offsets and sizes
// count the 4-bit elements (emu_elems_per_byte; emu_core.h).
struct fp4x2_e2m1_t {
    uint8_t bits_ = 0;
    static constexpr uint64_t emu_elems_per_byte = 2;
    uint8_t bits() const { return bits_; }
};
struct fp4x2_e1m2_t {
    uint8_t bits_ = 0;
    static constexpr uint64_t emu_elems_per_byte = 2;
    uint8_t bits() const { return bits_; }
};

namespace AscendC {
using ::fp4x2_e1m2_t;
using ::fp4x2_e2m1_t;
using ::fp8_e4m3fn_t;
using ::fp8_e5m2_t;
using ::fp8_e8m0_t;
using ::hifloat8_t;
// int4b_t: a signed 4-bit integer, two per byte in memory. C++ has no half-byte type: this is
// the tag type tensors are declared with; ops that take it (Cast, Mmad) handle the packing.
// Tensor offsets and sizes count 4-bit elements (emu_elems_per_byte), as the official mmad
// example indexes its int4b_t L1/L0 tensors (fractal = 16 x 64 elements = 512 bytes).
struct int4b_t {
    uint8_t bits_ = 0;
    static constexpr int emu_bits = 4;
    static constexpr uint64_t emu_elems_per_byte = 2;
};
}  // namespace AscendC
using AscendC::int4b_t;
