#pragma once
// emu_reg.h: the smallest part of the Reg (register) vector API that memory-vector kernels of
// the basic-API examples use on dav-3510 (tensor_allocation, scenario 4): a SIMD VF function
// (__simd_vf__) started with asc_vf_call, RegTensor / MaskReg, CreateMask / UpdateMask,
// LoadAlign / StoreAlign (contiguous, DIST_NORM), Add; GetVecLen and CeilDivision.
// Pages: Reg矢量计算/VF调用/asc_vf_call.md, 寄存器数据类型/RegTensor.md, MaskReg.md,
// Reg数据搬入/连续对齐搬入（LoadAlign）.md, Reg数据搬出/连续对齐搬出（StoreAlign）.md, 基础算术/Add.md,
// 工具接口/系统资源与变量/GetVecLen.md, 标量计算/CeilDivision.md.
// A VF runs on the vector unit: its UB loads and stores are PIPE_V accesses. `__ubuf__ T*`
// values are UB byte addresses (LocalTensor::GetPhyAddr()), never dereferenced directly.
#include <bitset>
#include <cstring>
#include <type_traits>

#define __simd_vf__
#define __simd_callee__
#define __local_mem__

#if defined(EMU_ARCH_3510)
namespace AscendC {
// GetVecLen page: the RegTensor width VL, 256 bytes.
constexpr uint32_t GetVecLen() { return 256; }
// CeilDivision page: num1 / num2 rounded up; 0 when num2 is 0.
constexpr int32_t CeilDivision(int32_t num1, int32_t num2) { return num2 == 0 ? 0 : (num1 + num2 - 1) / num2; }

namespace Reg {
enum class MaskPattern { ALL, VL1, VL2, VL3, VL4, VL8, VL16, VL32, VL64, VL128, M3, M4, H, Q, ALLF = 15 };
enum class MaskMergeMode { UNKNOWN, MERGING, ZEROING };
struct RegTrait { uint32_t regNum; };
constexpr RegTrait RegTraitNumOne = {1};

// One bit per byte of the VL: element e of a b16 / b32 type owns bits [e*2, e*2+2) /
// [e*4, e*4+4), of which the lowest is the one that counts (MaskReg page).
struct MaskReg {
    std::bitset<256> bits;
    template <class T> bool on(uint32_t e) const { return bits[e * sizeof(T)]; }
};
template <typename T, const RegTrait& regTrait = RegTraitNumOne>
struct RegTensor {
    static_assert(sizeof(T) <= 8, "RegTensor: b8/b16/b32/b64 element types");
    T v[256 / sizeof(T)] = {};
    static constexpr uint32_t kElems = 256 / sizeof(T);
};

namespace detail {
template <class T> MaskReg first(uint32_t n) {
    MaskReg m;
    for (uint32_t e = 0; e < n && e < 256 / sizeof(T); ++e) m.bits[e * sizeof(T)] = true;
    return m;
}
inline uint64_t ub_addr(const void* p, const char* op, const emu::Loc& loc) {
    const uint64_t a = (uint64_t)(uintptr_t)p;
    if (a % 32) emu::fail("invalid_param", std::string(op) + ": the UB address must be 32-byte aligned", loc);
    return a;
}
}  // namespace detail

template <typename T, MaskPattern mode = MaskPattern::ALL, const RegTrait& regTrait = RegTraitNumOne>
inline MaskReg CreateMask() {
    constexpr uint32_t n = 256 / sizeof(T);
    switch (mode) {
        case MaskPattern::ALL: return detail::first<T>(n);
        case MaskPattern::VL1: return detail::first<T>(1);
        case MaskPattern::VL2: return detail::first<T>(2);
        case MaskPattern::VL3: return detail::first<T>(3);
        case MaskPattern::VL4: return detail::first<T>(4);
        case MaskPattern::VL8: return detail::first<T>(8);
        case MaskPattern::VL16: return detail::first<T>(16);
        case MaskPattern::VL32: return detail::first<T>(32);
        case MaskPattern::VL64: return detail::first<T>(64);
        case MaskPattern::VL128: return detail::first<T>(128);
        case MaskPattern::H: return detail::first<T>(n / 2);
        case MaskPattern::Q: return detail::first<T>(n / 4);
        case MaskPattern::M3: case MaskPattern::M4: {
            MaskReg m;
            const uint32_t k = mode == MaskPattern::M3 ? 3 : 4;
            for (uint32_t e = 0; e < n; e += k) m.bits[e * sizeof(T)] = true;
            return m;
        }
        default: return MaskReg{};
    }
}
// UpdateMask page: the first min(scalarValue, VL_T) elements; scalarValue -= VL_T (floor 0).
template <typename T, const RegTrait& regTrait = RegTraitNumOne>
inline MaskReg UpdateMask(uint32_t& scalarValue) {
    constexpr uint32_t n = 256 / sizeof(T);
    MaskReg m = detail::first<T>(scalarValue);
    scalarValue = scalarValue < n ? 0 : scalarValue - n;
    return m;
}

// LoadAlign (single load, DIST_NORM): VL bytes from UB.
template <typename T, typename U>
inline void LoadAlign(U& dstReg, __ubuf__ T* srcAddr, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(sizeof(T) == sizeof(dstReg.v[0]), "LoadAlign: the address type must match the RegTensor's");
    const uint64_t a = detail::ub_addr(srcAddr, "LoadAlign", loc);
    emu::record("LoadAlign", emu::Pipe::V, {{emu::Mem::UB, a, a + 256}}, {}, {256, U::kElems, 0, 1}, loc);
    std::memcpy(dstReg.v, emu::mem_base(emu::Mem::UB) + a, 256);
}
// StoreAlign (single store, DIST_NORM): the elements the mask selects go to UB.
template <typename T, typename U>
inline void StoreAlign(__ubuf__ T* dstAddr, U& srcReg, MaskReg& mask, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(sizeof(T) == sizeof(srcReg.v[0]), "StoreAlign: the address type must match the RegTensor's");
    const uint64_t a = detail::ub_addr(dstAddr, "StoreAlign", loc);
    uint32_t lo = U::kElems, hi = 0;
    for (uint32_t e = 0; e < U::kElems; ++e)
        if (mask.template on<T>(e)) { lo = e < lo ? e : lo; hi = e + 1; }
    if (hi <= lo) return;
    emu::record("StoreAlign", emu::Pipe::V, {}, {{emu::Mem::UB, a + lo * sizeof(T), a + hi * sizeof(T)}},
                {(hi - lo) * sizeof(T), hi - lo, 0, 1}, loc);
    uint8_t* d = emu::mem_base(emu::Mem::UB) + a;
    for (uint32_t e = lo; e < hi; ++e)
        if (mask.template on<T>(e)) std::memcpy(d + e * sizeof(T), &srcReg.v[e], sizeof(T));
}
// Add page: dst = src0 + src1 on the selected elements; the others are zeroed (ZEROING, the
// default) or keep dst (MERGING). Floating types compute in float and round once per element.
template <typename T = void, MaskMergeMode mode = MaskMergeMode::ZEROING, typename U>
inline void Add(U& dstReg, U& srcReg0, U& srcReg1, MaskReg& mask) {
    using E = std::remove_reference_t<decltype(dstReg.v[0])>;
    for (uint32_t e = 0; e < U::kElems; ++e) {
        if (!mask.template on<E>(e)) {
            if (mode != MaskMergeMode::MERGING) dstReg.v[e] = E{};
            continue;
        }
        if constexpr (std::is_integral_v<E>) {
            using UE = std::make_unsigned_t<E>;
            dstReg.v[e] = (E)(UE)((UE)srcReg0.v[e] + (UE)srcReg1.v[e]);
        } else {
            dstReg.v[e] = E((float)srcReg0.v[e] + (float)srcReg1.v[e]);
        }
    }
}
}  // namespace Reg
}  // namespace AscendC

// asc_vf_call page: starts the SIMD VF function funcPtr with the arguments (on the AIV).
// (A first argument of type dim3 starts a SIMT function instead: emu_simt.h.)
template <auto funcPtr, typename... Args>
    requires(!::emu::simt::dim_first<Args...>)
inline void asc_vf_call(Args&&... args) {
    if (ASCEND_IS_AIV) funcPtr(args...);
}
#endif
