// emu_ops.cpp: compiled-once heavy loops of the emulator's op semantics (Mmad, Fixpipe).
// Pointer-level code only: it knows fractal layouts and element types, not tensors, pipes
// or the runtime (the inline wrappers in emu_cube.h check parameters and record spans).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>
#include "emu_types.h"
#include "emu_core.h"
#include "emu_cube.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

namespace emu::impl {
namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EMU_MULTIVERSION __attribute__((target_clones("avx2", "default")))
#else
#define EMU_MULTIVERSION
#endif

template <class T> inline float ld(const void* p, uint64_t i) { return (float)static_cast<const T*>(p)[i]; }

// Unpack L0A (ZZ or NZ fractals, 16 x C0) into row-major Acc[Mpad][k].
template <class In, class Acc>
void unpack_a(const In* a, Acc* out, uint32_t Mpad, uint32_t k, bool a_nz) {
    constexpr uint32_t C0 = 32 / sizeof(In);
    const uint32_t Mb = Mpad / 16, Kb = (k + C0 - 1) / C0;
    for (uint32_t mb = 0; mb < Mb; ++mb)
        for (uint32_t kb = 0; kb < Kb; ++kb) {
            const In* f = a + (uint64_t)(a_nz ? (kb * Mb + mb) : (mb * Kb + kb)) * 16 * C0;
            uint32_t kw = std::min(C0, k - kb * C0);
            for (uint32_t r = 0; r < 16; ++r) {
                Acc* o = out + (uint64_t)(mb * 16 + r) * k + kb * C0;
                const In* s = f + r * C0;
                for (uint32_t c = 0; c < kw; ++c) o[c] = (Acc)(float)s[c];
            }
        }
}
template <>
void unpack_a<int8_t, int32_t>(const int8_t* a, int32_t* out, uint32_t Mpad, uint32_t k, bool a_nz) {
    constexpr uint32_t C0 = 32;
    const uint32_t Mb = Mpad / 16, Kb = (k + C0 - 1) / C0;
    for (uint32_t mb = 0; mb < Mb; ++mb)
        for (uint32_t kb = 0; kb < Kb; ++kb) {
            const int8_t* f = a + (uint64_t)(a_nz ? (kb * Mb + mb) : (mb * Kb + kb)) * 16 * C0;
            uint32_t kw = std::min(C0, k - kb * C0);
            for (uint32_t r = 0; r < 16; ++r)
                for (uint32_t c = 0; c < kw; ++c) out[(uint64_t)(mb * 16 + r) * k + kb * C0 + c] = f[r * C0 + c];
        }
}

// Unpack L0B (ZN fractals: C0 (k) x 16 (n), stored n-major) into Acc[Nb][k][16].
template <class In, class Acc>
void unpack_b(const In* b, Acc* out, uint32_t Nb, uint32_t k) {
    constexpr uint32_t C0 = 32 / sizeof(In);
    const uint32_t Kb = (k + C0 - 1) / C0;
    for (uint32_t kb = 0; kb < Kb; ++kb)
        for (uint32_t nb = 0; nb < Nb; ++nb) {
            const In* f = b + (uint64_t)(kb * Nb + nb) * 16 * C0;
            uint32_t kw = std::min(C0, k - kb * C0);
            Acc* o = out + (uint64_t)nb * k * 16 + (uint64_t)kb * C0 * 16;
            for (uint32_t nn = 0; nn < 16; ++nn)
                for (uint32_t kk = 0; kk < kw; ++kk) {
                    if constexpr (std::is_same_v<In, int8_t>) o[kk * 16 + nn] = (Acc)f[nn * C0 + kk];
                    else o[kk * 16 + nn] = (Acc)(float)f[nn * C0 + kk];
                }
        }
}

// C NZ rows: for each 16-column block nb and each row m, 16 accumulators over k.
template <class Acc>
EMU_MULTIVERSION void kernel(Acc* __restrict c, const Acc* __restrict A, const Acc* __restrict B, uint32_t Mpad,
                             uint32_t Nb, uint32_t k, bool init) {
    for (uint32_t nb = 0; nb < Nb; ++nb) {
        const Acc* Bn = B + (uint64_t)nb * k * 16;
        for (uint32_t m = 0; m < Mpad; m += 4) {
            Acc acc[4][16];
            Acc* crow = c + ((uint64_t)nb * Mpad + m) * 16;
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 16; ++j) acc[i][j] = init ? Acc(0) : crow[i * 16 + j];
            const Acc* a0 = A + (uint64_t)m * k;
            for (uint32_t kk = 0; kk < k; ++kk) {
                const Acc* br = Bn + (uint64_t)kk * 16;
                const Acc x0 = a0[kk], x1 = a0[k + kk], x2 = a0[2 * (uint64_t)k + kk], x3 = a0[3 * (uint64_t)k + kk];
                for (int j = 0; j < 16; ++j) {
                    acc[0][j] += x0 * br[j];
                    acc[1][j] += x1 * br[j];
                    acc[2][j] += x2 * br[j];
                    acc[3][j] += x3 * br[j];
                }
            }
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 16; ++j) crow[i * 16 + j] = acc[i][j];
        }
    }
}

template <class In, class Acc>
void mmad_t(Acc* c, const In* a, const In* b, uint32_t m, uint32_t n, uint32_t k, bool a_nz, bool init) {
    const uint32_t Mpad = (m + 15) / 16 * 16, Nb = (n + 15) / 16;
    thread_local std::vector<Acc> As, Bs;
    As.resize((size_t)Mpad * k);
    Bs.resize((size_t)Nb * k * 16);
    unpack_a<In, Acc>(a, As.data(), Mpad, k, a_nz);
    unpack_b<In, Acc>(b, Bs.data(), Nb, k);
    kernel<Acc>(c, As.data(), Bs.data(), Mpad, Nb, k, init);
}

// ---- Fixpipe element conversion
inline float relu_f(float v, bool relu) { return (relu && !(v > 0.0f)) ? (std::isnan(v) ? v : 0.0f) : v; }

template <class I>
inline I sat_round(float v) {
    if (std::isnan(v)) return I(0);
    double r = std::nearbyint((double)v);
    if (r < (double)std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
    if (r > (double)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
    return (I)r;
}

}  // namespace

void mmad(void* c, DT ct, const void* a, const void* b, DT abt, uint32_t m, uint32_t n, uint32_t k, bool a_nz,
          bool init) {
    switch (abt) {
        case DT::F16: mmad_t<half, float>((float*)c, (const half*)a, (const half*)b, m, n, k, a_nz, init); break;
        case DT::BF16: mmad_t<bfloat16_t, float>((float*)c, (const bfloat16_t*)a, (const bfloat16_t*)b, m, n, k, a_nz, init); break;
        case DT::F32: mmad_t<float, float>((float*)c, (const float*)a, (const float*)b, m, n, k, a_nz, init); break;
        case DT::S8: mmad_t<int8_t, int32_t>((int32_t*)c, (const int8_t*)a, (const int8_t*)b, m, n, k, a_nz, init); break;
        default: break;
    }
    (void)ct;
}

const char* fixpipe(const FixArgs& a) {
    // Quant modes (values of AscendC::QuantMode_t): 0 NoQuant, 1 F322F16, 2 F322BF16, 3 DEQF16,
    // 5 QF322B8_PRE, 7 REQ8 (vector-quant modes need a tensor and are not emulated).
    const bool srcInt = a.st == DT::S32;
    float scale = 1.0f;
    switch (a.quant) {
        case 0:
            if (!((a.st == DT::F32 && a.dt == DT::F32) || (a.st == DT::S32 && a.dt == DT::S32)))
                return "quantPre NoQuant needs dst type == src type (float -> float or int32 -> int32)";
            break;
        case 1: if (a.st != DT::F32 || a.dt != DT::F16) return "F322F16 needs float -> half"; break;
        case 2: if (a.st != DT::F32 || a.dt != DT::BF16) return "F322BF16 needs float -> bfloat16_t"; break;
        case 3: if (a.st != DT::S32 || a.dt != DT::F16) return "DEQF16 needs int32 -> half";
                scale = bits_f32((uint32_t)(a.deqScalar & 0xffffffffu)); break;
        case 5: if (a.st != DT::F32 || (a.dt != DT::S8 && a.dt != DT::U8)) return "QF322B8_PRE needs float -> int8/uint8";
                scale = bits_f32((uint32_t)(a.deqScalar & 0xffffffffu)); break;
        case 7: if (a.st != DT::S32 || (a.dt != DT::S8 && a.dt != DT::U8)) return "REQ8 needs int32 -> int8/uint8";
                scale = bits_f32((uint32_t)(a.deqScalar & 0xffffffffu)); break;
        default: return "this quantPre mode is not emulated";
    }
    const uint32_t dsz = a.dt == DT::F32 || a.dt == DT::S32 ? 4 : (a.dt == DT::F16 || a.dt == DT::BF16 ? 2 : 1);
    for (uint32_t t = 0; t < a.ndNum; ++t) {
        const uint8_t* sbase = static_cast<const uint8_t*>(a.src) + t * a.srcNdBytes;
        uint8_t* dbase = static_cast<uint8_t*>(a.dst) + (uint64_t)t * a.dstNdElems * dsz;
        for (uint32_t i = 0; i < a.m; ++i)
            for (uint32_t j = 0; j < a.n; ++j) {
                uint64_t sidx = ((uint64_t)(j / 16) * a.srcStride + i) * 16 + j % 16;
                uint64_t doff;
                if (a.layout == 1) doff = ((uint64_t)i * a.dstStride + j) * dsz;
                else if (a.layout == 2) doff = ((uint64_t)j * a.dstStride + i) * dsz;
                else doff = (uint64_t)(j / 16) * a.dstStride * 32 + ((uint64_t)i * 16 + j % 16) * dsz;
                uint8_t* d = dbase + doff;
                if (a.quant == 0) {
                    if (srcInt) {
                        int32_t v = reinterpret_cast<const int32_t*>(sbase)[sidx];
                        if (a.relu && v < 0) v = 0;
                        std::memcpy(d, &v, 4);
                    } else {
                        float v = relu_f(reinterpret_cast<const float*>(sbase)[sidx], a.relu);
                        std::memcpy(d, &v, 4);
                    }
                    continue;
                }
                float v = srcInt ? (float)reinterpret_cast<const int32_t*>(sbase)[sidx]
                                 : reinterpret_cast<const float*>(sbase)[sidx];
                v = relu_f(v * scale, a.relu);
                switch (a.dt) {
                    case DT::F16: { uint16_t h = f32_to_f16_rne(v); std::memcpy(d, &h, 2); break; }
                    case DT::BF16: { uint16_t h = f32_to_bf16_rne(v); std::memcpy(d, &h, 2); break; }
                    case DT::S8: { int8_t x = sat_round<int8_t>(v); std::memcpy(d, &x, 1); break; }
                    case DT::U8: { uint8_t x = sat_round<uint8_t>(v); std::memcpy(d, &x, 1); break; }
                    default: return "unsupported destination type";
                }
            }
    }
    return "";
}

}  // namespace emu::impl
