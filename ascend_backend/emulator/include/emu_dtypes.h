#pragma once
// emu_dtypes.h: the 8-bit and 4-bit storage types the docs name (fp8_e4m3fn_t, fp8_e5m2_t,
// fp8_e8m0_t, hifloat8_t; AscendC::int4b_t). Each is one byte of storage with the bit layout
// of its format; the fp8 types convert to and from float bit-exactly (float -> fp8 rounds to
// nearest, ties to even, like torch.float8_e4m3fn / torch.float8_e5m2; e4m3fn saturates). Like half, they define
// no arithmetic: values are computed in float. Written from the format definitions only.
#include <cmath>
#include <cstdint>

namespace emu {
// Minifloat with E exponent bits, M mantissa bits, exponent bias B. `fn`: no infinities, the
// all-ones code is NaN, and out-of-range values (infinities included) saturate to the largest
// finite value, as torch.float8_e4m3fn does; otherwise IEEE-like (overflow -> inf).
template <int E, int M, int B, bool fn>
inline uint8_t to_minifloat(float f) {
    const uint8_t sign = std::signbit(f) ? 0x80 : 0;
    const uint8_t nan = 0x7f;
    const uint8_t max_code = fn ? 0x7e : (uint8_t)((((1 << E) - 2) << M) | ((1 << M) - 1));
    if (std::isnan(f)) return (uint8_t)(sign | nan);
    double a = std::fabs((double)f);
    if (std::isinf(f)) return (uint8_t)(sign | (fn ? max_code : (uint8_t)(((1 << E) - 1) << M)));
    if (a == 0) return sign;
    int ex;
    std::frexp(a, &ex);
    int e = ex - 1;
    const int emin = 1 - B;
    if (e < emin) e = emin;
    double n = std::ldexp(a, M - e);          // exact: a has 24 significant bits
    double r = std::nearbyint(n);             // round to nearest, ties to even
    uint32_t code;
    if (r < (double)(1 << M)) code = (uint32_t)r;  // subnormal (or zero)
    else {
        if (r >= (double)(2 << M)) { r /= 2; ++e; }
        code = (uint32_t)((e + B) << M) | ((uint32_t)r - (1u << M));
    }
    if (code > max_code) return (uint8_t)(sign | (fn ? max_code : (uint8_t)(((1 << E) - 1) << M)));
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

// HiFloat8: storage only (raw bits); the docs do not define its encoding, so there is no
// float conversion here.
struct hifloat8_t {
    uint8_t bits_ = 0;
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
struct int4b_t {
    uint8_t bits_ = 0;
    static constexpr int emu_bits = 4;
};
}  // namespace AscendC
using AscendC::int4b_t;
