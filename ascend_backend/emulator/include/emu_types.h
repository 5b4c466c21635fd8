#pragma once
// emu_types.h: scalar types of the Ascend C emulator.
//
// `half` (IEEE 754 binary16) and `bfloat16_t` (upper half of an IEEE binary32) are 2-byte
// storage types with the same bit layout as torch.float16 / torch.bfloat16. They convert
// implicitly to float; construction from any arithmetic value rounds to nearest, ties to
// even. They deliberately define no arithmetic operators: `a + b` on two halves is computed
// in float, and assigning the result back to a half rounds once, which is exactly the
// "compute in float, round per operation" rule the emulator applies everywhere.
// Written from the IEEE 754 definitions only.
#include <cstdint>
#include <cstring>
#include <cmath>
#include <limits>
#include <type_traits>

namespace emu {

inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// binary32 -> binary16, round to nearest even; overflow to inf; NaN stays a quiet NaN.
inline uint16_t f32_to_f16_rne(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {                       // inf or nan
        if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x1ffu));
        return (uint16_t)(sign | 0x7c00u);
    }
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);   // >= 65520 rounds to inf
    if (ax < 0x38800000u) {                        // below the smallest normal half (2^-14)
        if (ax < 0x33000000u) return sign;         // < 2^-25: rounds to zero (2^-25 ties to 0)
        uint32_t e = ax >> 23;                     // biased exponent, 102..112
        uint32_t m = (ax & 0x7fffffu) | 0x800000u; // 24-bit significand
        uint32_t shift = 126 - e;                  // value = m * 2^(e-150); half subnormal unit 2^-24
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t q = (ax >> 13) - (112u << 10);        // rebias exponent 127 -> 15
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++;
    return (uint16_t)(sign | q);
}

inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return bits_f32(sign);
        float v = (float)m * (1.0f / 16777216.0f);  // m * 2^-24, exact
        return sign ? -v : v;
    }
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

inline uint16_t f32_to_bf16_rne(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet NaN
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}
inline float bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

}  // namespace emu

struct half {
    uint16_t bits_ = 0;
    half() = default;
    template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>
    half(U v) : bits_(emu::f32_to_f16_rne((float)v)) {}
    operator float() const { return emu::f16_to_f32(bits_); }
    static half from_bits(uint16_t b) { half h; h.bits_ = b; return h; }
    uint16_t bits() const { return bits_; }
    template <class U> half& operator+=(U v) { return *this = half((float)*this + (float)v); }
    template <class U> half& operator-=(U v) { return *this = half((float)*this - (float)v); }
    template <class U> half& operator*=(U v) { return *this = half((float)*this * (float)v); }
    template <class U> half& operator/=(U v) { return *this = half((float)*this / (float)v); }
};

struct bfloat16_t {
    uint16_t bits_ = 0;
    bfloat16_t() = default;
    template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>
    bfloat16_t(U v) : bits_(emu::f32_to_bf16_rne((float)v)) {}
    bfloat16_t(half h) : bits_(emu::f32_to_bf16_rne((float)h)) {}
    operator float() const { return emu::bf16_to_f32(bits_); }
    static bfloat16_t from_bits(uint16_t b) { bfloat16_t h; h.bits_ = b; return h; }
    uint16_t bits() const { return bits_; }
    template <class U> bfloat16_t& operator+=(U v) { return *this = bfloat16_t((float)*this + (float)v); }
    template <class U> bfloat16_t& operator-=(U v) { return *this = bfloat16_t((float)*this - (float)v); }
    template <class U> bfloat16_t& operator*=(U v) { return *this = bfloat16_t((float)*this * (float)v); }
    template <class U> bfloat16_t& operator/=(U v) { return *this = bfloat16_t((float)*this / (float)v); }
};

static_assert(sizeof(half) == 2 && std::is_trivially_copyable_v<half>, "half must be 2-byte storage");
static_assert(sizeof(bfloat16_t) == 2 && std::is_trivially_copyable_v<bfloat16_t>, "bf16 must be 2-byte storage");

namespace AscendC {
using ::half;
using ::bfloat16_t;
}

namespace emu {

template <class T> inline constexpr bool is_f16_like = std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;
template <class T> inline constexpr bool is_float_like = is_f16_like<T> || std::is_floating_point_v<T>;
// C0: elements per 32-byte block (the fractal width in the K direction).
template <class T> inline constexpr uint32_t C0 = 32u / (uint32_t)sizeof(T);
// Elements per 256-byte vector repeat.
template <class T> inline constexpr uint32_t REP_ELEMS = 256u / (uint32_t)sizeof(T);

template <class T> inline float to_f(T v) { return (float)v; }
// float -> T with round to nearest even for floating types; integers are rounded to
// nearest even and saturated (used only where an op documents an integer result).
template <class T> inline T from_f(float v) {
    if constexpr (is_float_like<T>) return T(v);
    else {
        if (std::isnan(v)) return T(0);
        double r = std::nearbyint((double)v);
        if (r < (double)std::numeric_limits<T>::lowest()) return std::numeric_limits<T>::lowest();
        if (r > (double)std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
        return (T)r;
    }
}

}  // namespace emu
// The 8-bit float storage types (defined in emu_dtypes.h).
struct fp8_e4m3fn_t;
struct fp8_e5m2_t;
struct hifloat8_t;
namespace emu {
// Data type tags shared with the compiled-once helpers in src/emu_ops.cpp.
enum class DT : uint8_t { F16, BF16, F32, S32, S8, U8, S16, U16, U32, E4M3, E5M2, HIF8, OTHER };
template <class T> inline constexpr DT dt_of() {
    if constexpr (std::is_same_v<T, half>) return DT::F16;
    else if constexpr (std::is_same_v<T, bfloat16_t>) return DT::BF16;
    else if constexpr (std::is_same_v<T, float>) return DT::F32;
    else if constexpr (std::is_same_v<T, int32_t>) return DT::S32;
    else if constexpr (std::is_same_v<T, int8_t>) return DT::S8;
    else if constexpr (std::is_same_v<T, uint8_t>) return DT::U8;
    else if constexpr (std::is_same_v<T, int16_t>) return DT::S16;
    else if constexpr (std::is_same_v<T, uint16_t>) return DT::U16;
    else if constexpr (std::is_same_v<T, uint32_t>) return DT::U32;
    else if constexpr (std::is_same_v<T, fp8_e4m3fn_t>) return DT::E4M3;
    else if constexpr (std::is_same_v<T, fp8_e5m2_t>) return DT::E5M2;
    else if constexpr (std::is_same_v<T, hifloat8_t>) return DT::HIF8;
    else return DT::OTHER;
}

}  // namespace emu
