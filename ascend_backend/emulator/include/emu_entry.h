#pragma once
// emu_entry.h: the kernel entry forms and kernel-side utilities of the official programming
// model (clean-room, written from the documented behaviour): entry qualifiers __vector__ /
// __cube__ / __mix__(c, v), the predefined macros __NPU_ARCH__ / __CCE_AICORE__, the
// trampoline helpers run_source uses to call an entry (template instantiations and structs
// passed by value included), the Kernel-Tiling macros (GET_TILING_DATA ...), static tensor
// programming (LocalMemAllocator, InitSocState), IsSameType, ascendc_assert, DumpTensor,
// GetUBSizeInBytes, the block_idx variable and the common constants.
// Included by kernel_operator.h after the op headers.
#include <cassert>  // kernels may use assert() as on the device
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

// ---- entry qualifiers and predefined macros (SIMD BuiltIn keywords page) ---------------
// The kernel type they select is read by runner.py from the source text; here they only
// have to disappear.
#define __vector__
#define __cube__
#define __mix__(cube, vec)
#define __schedmode__(mode)
#define __host__
#define __ssbuf__
#define __tiling_data_ptr__

// __NPU_ARCH__: 2201 for Atlas A2/A3 (dav-c220), 3510 for Ascend 950 (dav-3510), as the
// SIMD BuiltIn keywords page lists. __CCE_AICORE__: 220 on dav-c220; the docs give no value
// for dav-3510, so it stays undefined there. ASCENDC_CPU_DEBUG is never defined: the
// emulator runs the NPU code path.
#if defined(EMU_ARCH_C220)
#define __NPU_ARCH__ 2201
#define __CCE_AICORE__ 220
#else
#define __NPU_ARCH__ 3510
#endif

namespace emu {
// ---- trampoline helpers: call an entry with arguments packed by runner.py ----------------
// a[i] points at: the GM address (pointers), the value (scalars; half/bfloat16_t arrive as
// float), or the struct's bytes (by-value structs such as tiling data).
template <class P>
inline decltype(auto) entry_arg(void* a) {
    using U = std::remove_cv_t<std::remove_reference_t<P>>;
    if constexpr (std::is_pointer_v<U>) return (U)a;
    else if constexpr (is_f16_like<U>) return U(*(const float*)a);
    else return (*(U*)a);
}
template <class... P, size_t... I>
inline void entry_call_impl(void (*f)(P...), void** a, std::index_sequence<I...>) {
    (void)a;
    f(entry_arg<P>(a[I])...);
}
template <class... P>
inline void entry_call(void (*f)(P...), void** a) {
    entry_call_impl(f, a, std::index_sequence_for<P...>{});
}
template <class... P>
inline size_t entry_argsize(void (*)(P...), int i) {
    const size_t s[] = {sizeof(std::remove_cv_t<std::remove_reference_t<P>>)..., 0};
    return i >= 0 && i < (int)sizeof...(P) ? s[i] : 0;
}

// ---- Kernel-Tiling helpers ---------------------------------------------------------------
struct NoDefaultTiling {};
// Fill `dst` from the tiling argument at byte offset `off`: a GM pointer (read on the
// scalar pipe, bounds-checked against the argument) or a struct passed by value.
template <class S, class A>
inline void tiling_fill(S& dst, const A& src, size_t off, const Loc& loc) {
    static_assert(!std::is_same_v<S, NoDefaultTiling>,
                  "GET_TILING_DATA needs a default tiling struct: put REGISTER_TILING_DEFAULT(YourStruct); "
                  "before it in the kernel, or use GET_TILING_DATA_WITH_STRUCT(YourStruct, var, tiling)");
    if constexpr (std::is_pointer_v<A>) {
        auto b = (uint64_t)(uintptr_t)src + off;
        record("GET_TILING_DATA", Pipe::S, {{Mem::GM, b, b + sizeof(S)}}, {}, {sizeof(S), 1}, loc);
        std::memcpy((void*)&dst, (const uint8_t*)src + off, sizeof(S));
    } else {
        static_assert(sizeof(A) >= sizeof(S), "the tiling argument is smaller than the struct read from it");
        std::memcpy((void*)&dst, (const uint8_t*)&src + off, sizeof(S));
    }
}
// COPY_TILING_*: the source is an object (a member of a tiling struct) or a pointer to one.
template <class A>
inline const void* tiling_src(const A& src) {
    if constexpr (std::is_pointer_v<A>) return (const void*)src;
    else return (const void*)&src;
}

// ---- block_idx: the built-in variable (this core's block index, as GetBlockIdx()) ---------
struct BlockIdxVar {
    operator int64_t() const { return block_idx(); }
};
}  // namespace emu

// Global fallback: GET_TILING_DATA without REGISTER_TILING_DEFAULT in scope fails to compile
// with the message above. REGISTER_TILING_DEFAULT shadows it inside the kernel.
using EmuDefaultTilingType_ = ::emu::NoDefaultTiling;

// Kernel-Tiling macros (docs/zh/api/SIMD-API/基础API/Kernel-Tiling/*.md).
#define REGISTER_TILING_DEFAULT(TILING_STRUCT) using EmuDefaultTilingType_ = TILING_STRUCT
#define REGISTER_NONE_TILING static_assert(true, "REGISTER_NONE_TILING")
#define GET_TILING_DATA(tiling_data, tiling_arg) \
    EmuDefaultTilingType_ tiling_data;           \
    ::emu::tiling_fill(tiling_data, tiling_arg, 0, ::emu::Loc::current())
#define GET_TILING_DATA_WITH_STRUCT(struct_name, tiling_data, tiling_arg) \
    struct_name tiling_data;                                              \
    ::emu::tiling_fill(tiling_data, tiling_arg, 0, ::emu::Loc::current())
#define GET_TILING_DATA_MEMBER(struct_name, mem_name, tiling_data, tiling_arg) \
    decltype(struct_name::mem_name) tiling_data;                               \
    ::emu::tiling_fill(tiling_data, tiling_arg, offsetof(struct_name, mem_name), ::emu::Loc::current())
#define GET_TILING_DATA_PTR_WITH_STRUCT(tiling_struct, dst_ptr, tiling_ptr)            \
    tiling_struct dst_ptr##_emu_data_;                                                 \
    ::emu::tiling_fill(dst_ptr##_emu_data_, tiling_ptr, 0, ::emu::Loc::current()); \
    tiling_struct* dst_ptr = &dst_ptr##_emu_data_
#define COPY_TILING_WITH_STRUCT(tiling_struct, src_ptr, dst_ptr)                            \
    tiling_struct dst_ptr##_emu_data_;                                                      \
    std::memcpy((void*)&dst_ptr##_emu_data_, ::emu::tiling_src(src_ptr), sizeof(tiling_struct)); \
    tiling_struct* dst_ptr = &dst_ptr##_emu_data_
#define COPY_TILING_WITH_ARRAY(arr_type, arr_count, src_ptr, dst_ptr)                        \
    arr_type dst_ptr##_emu_data_[arr_count];                                                 \
    std::memcpy((void*)dst_ptr##_emu_data_, ::emu::tiling_src(src_ptr), sizeof(arr_type) * (arr_count)); \
    arr_type(*dst_ptr)[arr_count] = &dst_ptr##_emu_data_

inline constexpr ::emu::BlockIdxVar block_idx{};

namespace AscendC {

// ---- constants (values from the docs: 32-byte data block, 256-byte repeat, 16x16 cube) ----
constexpr uint32_t ONE_BLK_SIZE = 32;
constexpr uint32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr uint32_t BLOCK_CUBE = 16;
constexpr uint32_t CUBE_MAX_SIZE = 256;
constexpr int32_t DEFAULT_BLK_NUM = 8;
constexpr int32_t DEFAULT_BLK_STRIDE = 1;
constexpr uint8_t DEFAULT_REPEAT_STRIDE = 8;
constexpr uint32_t ONE_BYTE_BIT_SIZE = 8;
constexpr uint32_t MAX_REPEAT_TIMES = 255;

template <class T, class U>
struct IsSameType {
    static constexpr bool value = std::is_same_v<T, U>;
};
// Conditional<cond, T1, T2>::type (the C++ standard library page "conditional")
template <bool cond, class T1, class T2>
struct Conditional {
    using type = std::conditional_t<cond, T1, T2>;
};

// UB size in bytes (GetUBSizeInBytes page: 248 KB on Ascend 950). dav-c220: 192 KB less the
// 8 KB the API reserves for Select-class APIs (static-Tensor guide), 184 KB.
inline uint32_t GetUBSizeInBytes() { return emu::is_c220() ? 184u * 1024 : (uint32_t)emu::mem_size(emu::Mem::UB); }
#if defined(EMU_ARCH_3510)
// GetRuntimeUBSize page (Ascend 950 only): the UB available at run time; without SIMT, all of it.
inline uint32_t GetRuntimeUBSize() { return (uint32_t)emu::mem_size(emu::Mem::UB); }
#endif

// InitSocState: resets the core state the emulator models (on the AIV: normal mask mode and
// a full mask). Everything else it initialises starts in its initial state in the emulator.
inline void InitSocState() {
    if (emu::core_kind() == emu::CoreKind::AIV) {
        SetMaskNorm();
        ResetMask();
    }
}

// ---- static tensor programming: LocalMemAllocator ------------------------------------------
enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

constexpr emu::Mem mem_of(Hardware h) {
    switch (h) {
        case Hardware::L1: return emu::Mem::L1;
        case Hardware::L0A: return emu::Mem::L0A;
        case Hardware::L0B: return emu::Mem::L0B;
        case Hardware::L0C: return emu::Mem::L0C;
        case Hardware::BIAS: return emu::Mem::BT;
        case Hardware::FIXBUF: return emu::Mem::FB;
        default: return emu::Mem::UB;
    }
}
constexpr TPosition default_pos(Hardware h) {
    switch (h) {
        case Hardware::L1: return TPosition::A1;
        case Hardware::L0A: return TPosition::A2;
        case Hardware::L0B: return TPosition::B2;
        case Hardware::L0C: return TPosition::CO1;
        case Hardware::BIAS: return TPosition::C2;
        case Hardware::FIXBUF: return TPosition::C2PIPE2GM;
        default: return TPosition::VECCALC;
    }
}

// Hands out consecutive tensors of one physical memory from address 0 (each aligned as the
// memory requires); running past the memory's capacity is a `capacity` error.
template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
public:
    LocalMemAllocator() = default;
    uint32_t GetCurAddr() const { return head_; }
    template <TPosition pos, class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc(const emu::Loc& loc = emu::Loc::current()) {
        return take<DataType>(pos, tileSize, loc);
    }
    template <TPosition pos, class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize, const emu::Loc& loc = emu::Loc::current()) {
        return take<DataType>(pos, tileSize, loc);
    }
    template <class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc(const emu::Loc& loc = emu::Loc::current()) {
        return take<DataType>(default_pos(hard), tileSize, loc);
    }
    template <class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize, const emu::Loc& loc = emu::Loc::current()) {
        return take<DataType>(default_pos(hard), tileSize, loc);
    }

private:
    template <class DataType>
    LocalTensor<DataType> take(TPosition pos, uint32_t n, const emu::Loc& loc) {
        constexpr emu::Mem m = mem_of(hard);
        const uint64_t a = align_of(m);
        const uint64_t start = ((uint64_t)head_ + a - 1) / a * a;
        const uint64_t bytes = (uint64_t)n * sizeof(DataType);
        if (start + bytes > emu::mem_size(m))
            emu::note_capacity(m, start, bytes, "LocalMemAllocator::Alloc", loc);
        head_ = (uint32_t)(start + bytes);
        emu::note_alloc(m, start, start + bytes, loc);
        return LocalTensor<DataType>(m, (uint32_t)start, n, pos);
    }
    uint32_t head_ = 0;
};

// ---- debugging: ascendc_assert / DumpTensor ---------------------------------------------
namespace emu_detail {
[[noreturn]] inline void assert_fail(const char* expr, const emu::Loc& loc, const char* fmt = nullptr, ...) {
    std::string msg = std::string("Assertion `") + expr + "' failed";
    if (fmt) {
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        msg += ": ";
        msg += buf;
        while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    }
    emu::fail("assert", msg, loc);
}
template <class T>
const char* dtype_name() {
    if constexpr (std::is_same_v<T, half>) return "float16";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16";
    else if constexpr (std::is_same_v<T, float>) return "float32";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32";
    else if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16";
    else if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64";
    else if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
    else return "other";
}
inline const char* mem_name(emu::Mem m) {
    static const char* n[] = {"GM", "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"};
    return n[(int)m];
}
template <class T>
void dump_values(const T* p, uint32_t n) {
    std::string s = "[";
    char buf[64];
    for (uint32_t i = 0; i < n; ++i) {
        if constexpr (std::is_floating_point_v<T> || emu::is_f16_like<T>) snprintf(buf, sizeof buf, "%f", (double)(float)p[i]);
        else if constexpr (std::is_integral_v<T>) snprintf(buf, sizeof buf, "%lld", (long long)p[i]);
        else snprintf(buf, sizeof buf, "?");
        s += buf;
        if (i + 1 < n) s += ", ";
    }
    s += "]\n";
    fputs(s.c_str(), stdout);
    fflush(stdout);
}
}  // namespace emu_detail

// Prints `DumpTensor: desc=..., addr=..., data_type=..., position=..., dump_size=...` and
// the first dumpSize elements to the run's stdout, as the DumpTensor page shows. The page names
// no sync to put before it, and the official batch_matmul example dumps an L1 tensor right after
// the Fixpipe that writes it: the dump shows the tensor once the core's earlier work is done,
// so it is modelled as PipeBarrier<PIPE_ALL>, the scalar read, PipeBarrier<PIPE_ALL>.
template <class T>
void DumpTensor(const LocalTensor<T>& t, uint32_t desc, uint32_t dumpSize, const emu::Loc& loc = emu::Loc::current()) {
    uint32_t n = dumpSize < t.GetSize() ? dumpSize : t.GetSize();
    emu::pipe_barrier(PIPE_ALL, loc);
    emu::record("DumpTensor", emu::Pipe::S, {t.emu_span(n)}, {}, {n * sizeof(T), n}, loc);
    emu::pipe_barrier(PIPE_ALL, loc);
    printf("DumpTensor: desc=%u, addr=%llu, data_type=%s, position=%s, dump_size=%u\n", desc,
           (unsigned long long)t.emu_offset(), emu_detail::dtype_name<T>(), emu_detail::mem_name(t.emu_mem()), n);
    emu_detail::dump_values(t.emu_ptr(), n);
}
template <class T>
void DumpTensor(const GlobalTensor<T>& t, uint32_t desc, uint32_t dumpSize, const emu::Loc& loc = emu::Loc::current()) {
    emu::pipe_barrier(PIPE_ALL, loc);
    emu::record("DumpTensor", emu::Pipe::S, {t.emu_span(dumpSize)}, {}, {dumpSize * sizeof(T), dumpSize}, loc);
    emu::pipe_barrier(PIPE_ALL, loc);
    printf("DumpTensor: desc=%u, addr=%p, data_type=%s, position=GM, dump_size=%u\n", desc, (void*)t.emu_ptr(),
           emu_detail::dtype_name<T>(), dumpSize);
    emu_detail::dump_values(t.emu_ptr(), dumpSize);
}
template <class T, class S>
void DumpTensor(const T& t, uint32_t desc, uint32_t dumpSize, const S&, const emu::Loc& loc = emu::Loc::current()) {
    DumpTensor(t, desc, dumpSize, loc);
}

}  // namespace AscendC

// ascendc_assert(expr) / ascendc_assert(expr, fmt, args...): a failed assertion stops the run
// with an `assert` kernel error naming the line and the formatted message.
#define ascendc_assert(expr, ...) \
    ((expr) ? (void)0 : ::AscendC::emu_detail::assert_fail(#expr, ::emu::Loc::current() __VA_OPT__(, ) __VA_ARGS__))
#ifndef ASSERT
#define ASSERT(expr) ascendc_assert(expr)
#endif
using AscendC::QuantMode_t;
using AscendC::GetTPipePtr;  // the official examples call it unqualified
