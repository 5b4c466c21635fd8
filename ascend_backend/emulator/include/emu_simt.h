#pragma once
// emu_simt.h: the SIMT part of the Ascend C API on dav-3510 (Ascend 950), written from the
// SIMT-API pages of the official docs (docs/zh/api/SIMT-API): a `__simt_vf__` function started
// from an AIV kernel with asc_vf_call<f>(dim3{...}, args...) runs as a block of up to 2048
// threads in warps of 32 (编程模型-140, 核函数配置-147); the built-in variables (内置变量-145);
// `__ubuf__` / `__gm__` pointers (内存空间限定符-143); warp functions (Warp函数/), atomics
// (原子操作/), asc_syncthreads and the fences (同步与内存栅栏/), lane ids, conversions and the
// math functions a thread-level kernel calls.
//
// How it runs (docs/emulator-internals.md, "SIMT engine"): every thread of the block is a
// fiber on the AIV's core thread; a scheduler switches at barriers and warp functions, so a
// warp function sees exactly the lanes that reached it together and a barrier not every thread
// reaches is a deadlock report. Inside SIMT functions the Python side (emulator/simt.py)
// rewrites `__ubuf__ T*` / `__gm__ T*` to the pointer classes below (lines unchanged), so every
// load and store is seen: bounds, thread races on UB, and the VF's reads and writes, which the
// whole call records as one PIPE_V op for the pipe-level checks.
//
// SIMT exists only on dav-3510: on dav-c220 `__simt_vf__` is a compile error saying so.
#include <cstdint>
#include <cstring>
#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

// Hooks of the runtime for the SIMT engine (defined in src/emu_runtime.cpp, used by src/emu_simt.cpp).
namespace emu::simt_rt {
[[noreturn]] void fail_pc(const char* kind, const std::string& msg, const void* pc, const char* op);
std::string pc_json(const void* pc);  // "pc":"0x<offset in the kernel library>" (simt.py maps it to a line)
[[noreturn]] void fail_deadlock(const std::string& scope, const std::string& msg, const std::string& waiters);
bool gm_region(uint64_t b, uint64_t e, uint64_t* rb, uint64_t* re, std::string* msg);
std::string core_json();
int block();
void poll_abort();
uint64_t alloc_high(Mem m);
bool checks();
void add_race(const std::string& json, uint64_t count);
void atomic_lock();
void atomic_unlock();
double cfg(const char* key, double dflt);
// While set, the identical-writes check of this core takes the bytes before the op from `f`
// (the SIMT call is recorded after its effect): f(mem, begin, end, out).
void set_pre_image(std::function<void(Mem, uint64_t, uint64_t, uint8_t*)> f);
uint64_t static_ub(const char* file, uint32_t line, uint32_t col, uint64_t bytes, uint64_t align, const Loc& loc);
}  // namespace emu::simt_rt

#if defined(EMU_ARCH_C220)
#define __simt_vf__ _Pragma("GCC error \"SIMT (__simt_vf__) exists only on dav-3510 (Ascend 950): Atlas A2/A3 (dav-c220) have no SIMT units (SIMT-API pages: A2/A3 not supported); compile this kernel for dav-3510\"")
#define __simt_callee__ _Pragma("GCC error \"SIMT (__simt_callee__) exists only on dav-3510 (Ascend 950): Atlas A2/A3 (dav-c220) have no SIMT units; compile this kernel for dav-3510\"")
#define __launch_bounds__(...)
#else
#define __simt_vf__
#define __simt_callee__
#define __callee__
#define __launch_bounds__(...)

// ---- built-in types and variables (内置数据类型-144, 内置变量-145) ---------------------------
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
// Set by the SIMT scheduler before it resumes a thread (threadIdx) and at each asc_vf_call
// (the others). blockIdx.x is the AIV's block index, gridDim.x the launch's block count (the
// mixed-programming gridDim is one-dimensional, 核函数配置-147).
extern thread_local dim3 threadIdx;
extern thread_local dim3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
constexpr int32_t warpSize = 32;

namespace emu::simt {
enum Space : uint8_t { UB = 0, GM = 1 };
// Type codes of the warp functions and atomics (the bits travel as uint64).
enum Ty : uint8_t { I32, U32, F32, I64, U64, F16, BF16, H2, BF2, OTHER };
enum Coll : uint8_t { SHFL, SHFL_UP, SHFL_DOWN, SHFL_XOR, RED_ADD, RED_MAX, RED_MIN, ALL, ANY, BALLOT, ACTIVEMASK };
enum AOp : uint8_t { A_ADD, A_SUB, A_EXCH, A_MAX, A_MIN, A_INC, A_DEC, A_CAS, A_AND, A_OR, A_XOR };

// ---- runtime (src/emu_simt.cpp) ---------------------------------------------------------------
// Loads and stores of SIMT threads. Never inlined: the return address is the access in the
// kernel (mapped to its source line only when something is reported).
void load(uint8_t space, uint64_t addr, uint32_t n, void* out);
void store(uint8_t space, uint64_t addr, uint32_t n, const void* in);
// `p->member`: records a read of the whole object and returns its host address.
void* member(uint8_t space, uint64_t addr, uint32_t n);
uint64_t atomic(uint8_t space, uint64_t addr, uint8_t op, uint8_t ty, uint64_t val, uint64_t cmp, const Loc& loc);
uint64_t collective(uint8_t kind, uint8_t ty, uint64_t val, int32_t a, int32_t b, const Loc& loc);
void syncthreads(const Loc& loc);
void fence(bool block, const Loc& loc);
void bounds(uint32_t max_threads, const Loc& loc);
// A `__ubuf__ T name[N]` of a SIMT function: its UB offset (one per declaration, the same for
// every thread and call), placed after the UB the kernel allocated before.
uint64_t static_ub(const char* file, uint32_t line, uint32_t col, uint64_t bytes, uint64_t align, const Loc& loc);
void launch(void (*thunk)(void*), void* arg, dim3 dims, const Loc& loc);
int32_t lane_id();
bool in_simt();

template <class T> constexpr Ty ty_of() {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_same_v<U, float>) return F32;
    else if constexpr (std::is_same_v<U, half>) return F16;
    else if constexpr (std::is_same_v<U, bfloat16_t>) return BF16;
    else if constexpr (std::is_integral_v<U> && sizeof(U) == 8) return std::is_signed_v<U> ? I64 : U64;
    else if constexpr (std::is_integral_v<U> && sizeof(U) <= 4) return std::is_signed_v<U> ? I32 : U32;
    else return OTHER;
}
template <class T> inline uint64_t to_bits(const T& v) {
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T) < 8 ? sizeof(T) : 8);
    return b;
}
template <class T> inline T from_bits(uint64_t b) {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}

template <class T, uint8_t S> class ptr;

// What `p[i]` / `*p` gives: a reference into UB or GM that loads on conversion and stores on
// assignment. (Bind it to a value, `float x = p[i];`, not to `auto`: an `auto` copy is still
// this reference and reads the memory when used.)
template <class T, uint8_t S>
class ref {
    using V = std::remove_cv_t<T>;

public:
    explicit ref(uint64_t a) : a_(a) {}
    ref(const ref&) = default;
    operator V() const {
        V v;
        load(S, a_, sizeof(V), &v);
        return v;
    }
    // half / bfloat16_t elements also convert to float directly (`p[i] * 2.0f`).
    template <class F, std::enable_if_t<std::is_same_v<F, float> && emu::is_f16_like<V>, int> = 0>
    operator F() const { return (float)(V)*this; }
    V get() const { return (V)*this; }
    const ref& operator=(const V& v) const {
        static_assert(!std::is_const_v<T>, "store through a pointer to const");
        store(S, a_, sizeof(V), &v);
        return *this;
    }
    const ref& operator=(const ref& o) const { return *this = (V)o; }
    template <class U, std::enable_if_t<!std::is_same_v<std::decay_t<U>, V> && std::is_convertible_v<U, V>, int> = 0>
    const ref& operator=(U&& v) const { return *this = V(std::forward<U>(v)); }
#define EMU_SIMT_CASSIGN(OP)                                          \
    template <class U>                                                \
    const ref& operator OP##=(const U& v) const {                     \
        V cur = (V)*this;                                             \
        cur OP## = v;                                                 \
        return *this = cur;                                           \
    }
    EMU_SIMT_CASSIGN(+) EMU_SIMT_CASSIGN(-) EMU_SIMT_CASSIGN(*) EMU_SIMT_CASSIGN(/) EMU_SIMT_CASSIGN(%)
    EMU_SIMT_CASSIGN(&) EMU_SIMT_CASSIGN(|) EMU_SIMT_CASSIGN(^) EMU_SIMT_CASSIGN(<<) EMU_SIMT_CASSIGN(>>)
#undef EMU_SIMT_CASSIGN
    const ref& operator++() const { V c = (V)*this; ++c; return *this = c; }
    const ref& operator--() const { V c = (V)*this; --c; return *this = c; }
    V operator++(int) const { V c = (V)*this, n = c; ++n; *this = n; return c; }
    V operator--(int) const { V c = (V)*this, n = c; --n; *this = n; return c; }
    ptr<T, S> operator&() const;
    // `p[i].field` is not expressible; `p[i]->field` (reads the whole object) or a copy are.
    const V* operator->() const { return static_cast<const V*>(member(S, a_, sizeof(V))); }
    uint64_t emu_addr() const { return a_; }

private:
    uint64_t a_;
};

// `__ubuf__ T*` (S = UB: `a_` is a byte offset into the AIV's UB, as LocalTensor::GetPhyAddr
// gives it) and `__gm__ T*` (S = GM: a host address).
template <class T, uint8_t S>
class ptr {
    using V = std::remove_cv_t<T>;
    template <class, uint8_t> friend class ptr;
    static constexpr uint64_t step() {
        if constexpr (std::is_void_v<T>) return 1;
        else return sizeof(T);
    }

public:
    ptr() = default;
    ptr(std::nullptr_t) {}
    // from the SIMD side: `(__ubuf__ float*)tensor.GetPhyAddr()`, a `__gm__ float*` argument
    template <class U, std::enable_if_t<std::is_convertible_v<U*, T*>, int> = 0>
    ptr(U* p) : a_((uint64_t)(uintptr_t)p) {}
    template <class U, std::enable_if_t<!std::is_convertible_v<U*, T*>, int> = 0>
    explicit ptr(U* p) : a_((uint64_t)(uintptr_t)p) {}
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    explicit ptr(I a) : a_((uint64_t)a) {}
    template <class U, std::enable_if_t<std::is_convertible_v<U*, T*>, int> = 0>
    ptr(const ptr<U, S>& o) : a_(o.a_) {}
    template <class U, std::enable_if_t<!std::is_convertible_v<U*, T*>, int> = 0>
    explicit ptr(const ptr<U, S>& o) : a_(o.a_) {}

    template <class U = T, std::enable_if_t<!std::is_void_v<U>, int> = 0>
    ref<U, S> operator*() const { return ref<U, S>(a_); }
    template <class U = T, class I, std::enable_if_t<!std::is_void_v<U> && std::is_integral_v<I>, int> = 0>
    ref<U, S> operator[](I i) const { return ref<U, S>(a_ + (uint64_t)((int64_t)i * (int64_t)sizeof(U))); }
    template <class U = T, std::enable_if_t<!std::is_void_v<U>, int> = 0>
    const std::remove_cv_t<U>* operator->() const {
        return static_cast<const std::remove_cv_t<U>*>(member(S, a_, sizeof(U)));
    }
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    ptr operator+(I i) const { ptr r; r.a_ = a_ + (uint64_t)((int64_t)i * (int64_t)step()); return r; }
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    friend ptr operator+(I i, const ptr& p) { return p + i; }
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    ptr operator-(I i) const { ptr r; r.a_ = a_ - (uint64_t)((int64_t)i * (int64_t)step()); return r; }
    int64_t operator-(const ptr& o) const { return ((int64_t)a_ - (int64_t)o.a_) / (int64_t)step(); }
    template <class I> ptr& operator+=(I i) { return *this = *this + i; }
    template <class I> ptr& operator-=(I i) { return *this = *this - i; }
    ptr& operator++() { a_ += step(); return *this; }
    ptr& operator--() { a_ -= step(); return *this; }
    ptr operator++(int) { ptr r = *this; a_ += step(); return r; }
    ptr operator--(int) { ptr r = *this; a_ -= step(); return r; }
    explicit operator bool() const { return a_ != 0; }
    bool operator!() const { return a_ == 0; }
    explicit operator uint64_t() const { return a_; }
    explicit operator int64_t() const { return (int64_t)a_; }
    template <class U> explicit operator U*() const { return (U*)(uintptr_t)a_; }
    friend bool operator==(const ptr& a, const ptr& b) { return a.a_ == b.a_; }
    friend bool operator!=(const ptr& a, const ptr& b) { return a.a_ != b.a_; }
    friend bool operator<(const ptr& a, const ptr& b) { return a.a_ < b.a_; }
    friend bool operator>(const ptr& a, const ptr& b) { return a.a_ > b.a_; }
    friend bool operator<=(const ptr& a, const ptr& b) { return a.a_ <= b.a_; }
    friend bool operator>=(const ptr& a, const ptr& b) { return a.a_ >= b.a_; }
    friend bool operator==(const ptr& a, std::nullptr_t) { return a.a_ == 0; }
    friend bool operator!=(const ptr& a, std::nullptr_t) { return a.a_ != 0; }
    uint64_t emu_addr() const { return a_; }

private:
    uint64_t a_ = 0;
};

template <class T, uint8_t S>
ptr<T, S> ref<T, S>::operator&() const { return ptr<T, S>((uint64_t)a_); }

template <class T> using ub_ptr = ptr<T, UB>;
template <class T> using gm_ptr = ptr<T, GM>;

// reinterpret_cast<__ubuf__ U*>(x) inside SIMT functions (simt.py rewrites the cast's name)
template <class P, class X> inline P ptr_cast(const X& x) {
    if constexpr (std::is_pointer_v<X>) return P((uint64_t)(uintptr_t)x);
    else if constexpr (std::is_integral_v<X>) return P((uint64_t)x);
    else return P((uint64_t)x.emu_addr());
}

// `__ubuf__ T name[N]` (T itself may be an array type: `__ubuf__ float tile[32][33]`).
template <class T> struct elem_of { using type = T; };
template <class T, size_t M> struct elem_of<T[M]> { using type = typename elem_of<T>::type; };
template <class T, size_t N>
class ub_array {
    using E = typename elem_of<T>::type;

public:
    explicit ub_array(const Loc& loc = Loc::current())
        : a_(static_ub(loc.file_name(), loc.line(), loc.column(), sizeof(T) * N, alignof(E) < 32 ? 32 : alignof(E), loc)) {}
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    auto operator[](I i) const {
        const uint64_t a = a_ + (uint64_t)((int64_t)i * (int64_t)sizeof(T));
        if constexpr (std::is_array_v<T>) return ptr<std::remove_extent_t<T>, UB>((uint64_t)a);
        else return ref<T, UB>(a);
    }
    operator ptr<T, UB>() const { return ptr<T, UB>((uint64_t)a_); }
    template <class U = T, std::enable_if_t<std::is_array_v<U>, int> = 0>
    operator ptr<std::remove_extent_t<U>, UB>() const { return ptr<std::remove_extent_t<U>, UB>((uint64_t)a_); }
    ptr<T, UB> operator+(int64_t i) const { return ptr<T, UB>((uint64_t)a_) + i; }
    uint64_t emu_addr() const { return a_; }

private:
    uint64_t a_;
};

template <auto F, class Tup>
void thunk(void* p) {
    std::apply([](auto&... a) { F(a...); }, *static_cast<Tup*>(p));
}
// The first parameter of asc_vf_call: its converting constructors capture the call's line.
struct LaunchDim {
    dim3 d;
    Loc loc;
    LaunchDim(dim3 v, const Loc& l = Loc::current()) : d(v), loc(l) {}
    LaunchDim(unsigned int x, unsigned int y = 1, unsigned int z = 1, const Loc& l = Loc::current()) : d(x, y, z), loc(l) {}
};
template <class... A> constexpr bool dim_first = false;
template <class A0, class... A> constexpr bool dim_first<A0, A...> =
    std::is_same_v<std::decay_t<A0>, dim3> || std::is_same_v<std::decay_t<A0>, LaunchDim>;
template <class P> struct is_simt_ptr : std::false_type {};
template <class T, uint8_t S> struct is_simt_ptr<ptr<T, S>> : std::true_type {};
template <class T> struct ptr_elem;
template <class T, uint8_t S> struct ptr_elem<ptr<T, S>> { using type = T; static constexpr uint8_t space = S; };
}  // namespace emu::simt

// ---- asc_vf_call of a SIMT function (核函数配置-147) ---------------------------------------------
template <auto funcPtr, typename... Args>
inline void asc_vf_call(::emu::simt::LaunchDim threadNums, Args&&... args) {
    using Tup = std::tuple<std::decay_t<Args>...>;
    Tup tup(std::forward<Args>(args)...);
    ::emu::simt::launch(&::emu::simt::thunk<funcPtr, Tup>, &tup, threadNums.d, threadNums.loc);
}

// ---- synchronisation and fences (同步与内存栅栏/) ---------------------------------------------------
inline void asc_syncthreads(const ::emu::Loc& loc = ::emu::Loc::current()) { ::emu::simt::syncthreads(loc); }
inline void asc_threadfence(const ::emu::Loc& loc = ::emu::Loc::current()) { ::emu::simt::fence(false, loc); }
inline void asc_threadfence_block(const ::emu::Loc& loc = ::emu::Loc::current()) { ::emu::simt::fence(true, loc); }

// ---- lane ids (Warp函数/Lane-ID类函数) ---------------------------------------------------------------
inline int32_t laneid() { return ::emu::simt::lane_id(); }
inline int32_t lanemask_eq() { return (int32_t)(1u << laneid()); }
inline int32_t lanemask_lt() { return (int32_t)((1u << laneid()) - 1u); }
inline int32_t lanemask_le() { return (int32_t)(laneid() == 31 ? 0xffffffffu : (2u << laneid()) - 1u); }
inline int32_t lanemask_gt() { return (int32_t)~(uint32_t)lanemask_le(); }
inline int32_t lanemask_ge() { return (int32_t)~(uint32_t)lanemask_lt(); }

// ---- warp functions (Warp函数/) -------------------------------------------------------------------
// Types of the pages' prototypes: shfl int32/uint32/float/int64/uint64/half/half2/bfloat16_t/
// bfloat16x2_t; reduce int32/uint32/float/half; vote int32 predicates.
namespace emu::simt {
template <class T> constexpr bool shfl_type =
    std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, float> || std::is_same_v<T, int64_t> ||
    std::is_same_v<T, uint64_t> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;
template <class T> constexpr bool reduce_type =
    std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, float> || std::is_same_v<T, half>;
template <class T> inline T shfl(uint8_t kind, T v, int32_t a, int32_t width, const Loc& loc) {
    static_assert(shfl_type<T>, "asc_shfl*: var must be int32_t, uint32_t, float, int64_t, uint64_t, half, bfloat16_t (or half2 / bfloat16x2_t)");
    return from_bits<T>(collective(kind, ty_of<T>(), to_bits(v), a, width, loc));
}
template <class T> inline T reduce(uint8_t kind, T v, const Loc& loc) {
    static_assert(reduce_type<T>, "asc_reduce_*: val must be int32_t, uint32_t, float or half");
    return from_bits<T>(collective(kind, ty_of<T>(), to_bits(v), 0, 0, loc));
}
// An integral argument of another type picks the int32 / uint32 / int64 / uint64 overload as the
// pages' overload set would (int -> int32_t, unsigned -> uint32_t, long -> int64_t).
template <class T> using shfl_arg_t = std::conditional_t<
    std::is_integral_v<T>,
    std::conditional_t<(sizeof(T) > 4), std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>,
                       std::conditional_t<std::is_signed_v<T> || sizeof(T) < 4, int32_t, uint32_t>>,
    std::conditional_t<std::is_same_v<T, double>, float, T>>;
}  // namespace emu::simt

template <class T>
inline auto asc_shfl(T var, int32_t src_lane, int32_t width = warpSize, const ::emu::Loc& loc = ::emu::Loc::current()) {
    using A = ::emu::simt::shfl_arg_t<T>;
    return ::emu::simt::shfl<A>(::emu::simt::SHFL, (A)var, src_lane, width, loc);
}
template <class T>
inline auto asc_shfl_up(T var, uint32_t delta, int32_t width = warpSize, const ::emu::Loc& loc = ::emu::Loc::current()) {
    using A = ::emu::simt::shfl_arg_t<T>;
    return ::emu::simt::shfl<A>(::emu::simt::SHFL_UP, (A)var, (int32_t)delta, width, loc);
}
template <class T>
inline auto asc_shfl_down(T var, uint32_t delta, int32_t width = warpSize, const ::emu::Loc& loc = ::emu::Loc::current()) {
    using A = ::emu::simt::shfl_arg_t<T>;
    return ::emu::simt::shfl<A>(::emu::simt::SHFL_DOWN, (A)var, (int32_t)delta, width, loc);
}
template <class T>
inline auto asc_shfl_xor(T var, int32_t lane_mask, int32_t width = warpSize, const ::emu::Loc& loc = ::emu::Loc::current()) {
    using A = ::emu::simt::shfl_arg_t<T>;
    return ::emu::simt::shfl<A>(::emu::simt::SHFL_XOR, (A)var, lane_mask, width, loc);
}
template <class T>
inline auto asc_reduce_add(T val, const ::emu::Loc& loc = ::emu::Loc::current()) {
    using A = ::emu::simt::shfl_arg_t<T>;
    return ::emu::simt::reduce<A>(::emu::simt::RED_ADD, (A)val, loc);
}
template <class T>
inline auto asc_reduce_max(T val, const ::emu::Loc& loc = ::emu::Loc::current()) {
    using A = ::emu::simt::shfl_arg_t<T>;
    return ::emu::simt::reduce<A>(::emu::simt::RED_MAX, (A)val, loc);
}
template <class T>
inline auto asc_reduce_min(T val, const ::emu::Loc& loc = ::emu::Loc::current()) {
    using A = ::emu::simt::shfl_arg_t<T>;
    return ::emu::simt::reduce<A>(::emu::simt::RED_MIN, (A)val, loc);
}
inline int32_t asc_all(int32_t predicate, const ::emu::Loc& loc = ::emu::Loc::current()) {
    return (int32_t)::emu::simt::collective(::emu::simt::ALL, ::emu::simt::I32, (uint64_t)(predicate != 0), 0, 0, loc);
}
inline int32_t asc_any(int32_t predicate, const ::emu::Loc& loc = ::emu::Loc::current()) {
    return (int32_t)::emu::simt::collective(::emu::simt::ANY, ::emu::simt::I32, (uint64_t)(predicate != 0), 0, 0, loc);
}
inline uint32_t asc_ballot(int32_t predicate, const ::emu::Loc& loc = ::emu::Loc::current()) {
    return (uint32_t)::emu::simt::collective(::emu::simt::BALLOT, ::emu::simt::I32, (uint64_t)(predicate != 0), 0, 0, loc);
}
inline uint32_t asc_activemask(const ::emu::Loc& loc = ::emu::Loc::current()) {
    return (uint32_t)::emu::simt::collective(::emu::simt::ACTIVEMASK, ::emu::simt::U32, 0, 0, 0, loc);
}

// ---- atomics (原子操作/) ----------------------------------------------------------------------------
// Types and memories per page (table 2 of each): 64-bit types on GM only; add/sub/exch/max/min/
// cas also float (and add/max/min half, bfloat16_t), inc/dec uint32 (UB, GM) and uint64 (GM),
// and/or/xor 32-bit integers (UB, GM) and 64-bit (GM). The return value is the old data; half
// and bfloat16_t returns are documented as inaccurate ("禁止直接使用"): the emulator returns NaN.
namespace emu::simt {
template <class T> constexpr bool is_i32 = std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>;
template <class T> constexpr bool is_i64 = std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>;
template <uint8_t OP, class T, uint8_t S>
inline T atomic_op(const ptr<T, S>& p, T val, T cmp, const Loc& loc) {
    using V = std::remove_cv_t<T>;
    constexpr bool f16 = std::is_same_v<V, half> || std::is_same_v<V, bfloat16_t>;
    constexpr bool arith = OP == A_ADD || OP == A_MAX || OP == A_MIN;
    constexpr bool ok_type =
        is_i32<V> || is_i64<V> ||
        (std::is_same_v<V, float> && (OP == A_ADD || OP == A_SUB || OP == A_EXCH || OP == A_MAX || OP == A_MIN || OP == A_CAS)) ||
        (f16 && arith);
    static_assert(ok_type, "this asc_atomic_* has no overload for this element type (see the page's prototypes)");
    static_assert(!((OP == A_INC || OP == A_DEC) && !std::is_same_v<V, uint32_t> && !std::is_same_v<V, uint64_t>),
                  "asc_atomic_inc / asc_atomic_dec take uint32_t (UB, GM) or uint64_t (GM)");
    static_assert(!(is_i64<V> && S == UB), "64-bit atomics exist on GM only (原子操作 pages, table 2): use a __gm__ address");
    return from_bits<V>(atomic(S, p.emu_addr(), OP, ty_of<V>(), to_bits<V>(val), to_bits<V>(cmp), loc));
}
// The address argument: a SIMT pointer, `&p[i]`, or a raw pointer (taken as GM).
template <class P> inline auto as_ptr(const P& p) {
    if constexpr (is_simt_ptr<P>::value) return p;
    else if constexpr (std::is_pointer_v<P>) return ptr<std::remove_pointer_t<P>, GM>(p);
    else return &p;  // a ref
}
}  // namespace emu::simt

#define EMU_SIMT_ATOMIC2(NAME, OP)                                                                          \
    template <class P, class U>                                                                             \
    inline auto NAME(const P& address, U val, const ::emu::Loc& loc = ::emu::Loc::current()) {              \
        auto p = ::emu::simt::as_ptr(address);                                                              \
        using T = std::remove_cv_t<typename ::emu::simt::ptr_elem<decltype(p)>::type>;                       \
        return ::emu::simt::atomic_op<::emu::simt::OP>(p, (T)val, T{}, loc);                                \
    }
EMU_SIMT_ATOMIC2(asc_atomic_add, A_ADD)
EMU_SIMT_ATOMIC2(asc_atomic_sub, A_SUB)
EMU_SIMT_ATOMIC2(asc_atomic_exch, A_EXCH)
EMU_SIMT_ATOMIC2(asc_atomic_max, A_MAX)
EMU_SIMT_ATOMIC2(asc_atomic_min, A_MIN)
EMU_SIMT_ATOMIC2(asc_atomic_inc, A_INC)
EMU_SIMT_ATOMIC2(asc_atomic_dec, A_DEC)
EMU_SIMT_ATOMIC2(asc_atomic_and, A_AND)
EMU_SIMT_ATOMIC2(asc_atomic_or, A_OR)
EMU_SIMT_ATOMIC2(asc_atomic_xor, A_XOR)
#undef EMU_SIMT_ATOMIC2
template <class P, class U, class W>
inline auto asc_atomic_cas(const P& address, U compare, W val, const ::emu::Loc& loc = ::emu::Loc::current()) {
    auto p = ::emu::simt::as_ptr(address);
    using T = std::remove_cv_t<typename ::emu::simt::ptr_elem<decltype(p)>::type>;
    return ::emu::simt::atomic_op<::emu::simt::A_CAS>(p, (T)val, (T)compare, loc);
}

// ---- conversions and math (数学函数/, device_functions.h, asc_fp16.h, asc_bf16.h) -----------------
namespace emu::simt {
enum Rnd : uint8_t { RN, RZ, RD, RU, RNA };
inline double round_mode(double x, uint8_t m) {
    switch (m) {
        case RZ: return std::trunc(x);
        case RD: return std::floor(x);
        case RU: return std::ceil(x);
        case RNA: return std::round(x);
        default: return std::nearbyint(x);
    }
}
// float -> integer with saturation (NaN -> 0), as the conversion pages' examples do.
template <class I> inline I f2i(float x, uint8_t m) {
    if (std::isnan(x)) return 0;
    const long double r = (long double)round_mode((double)x, m);
    if (r <= (long double)std::numeric_limits<I>::lowest()) return std::numeric_limits<I>::lowest();
    if (r >= (long double)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
    return (I)r;
}
// double (exact for every int32 and float) -> float rounded with mode m
inline float d2f(double x, uint8_t m) {
    float n = (float)x;  // nearest even
    if (m == RN || (double)n == x || std::isnan(x)) return n;
    float lo = (double)n < x ? n : std::nextafter(n, -INFINITY);
    float hi = (double)n > x ? n : std::nextafter(n, INFINITY);
    switch (m) {
        case RZ: return x > 0 ? lo : hi;
        case RD: return lo;
        case RU: return hi;
        default: return (x - (double)lo) < ((double)hi - x) ? lo : ((x - (double)lo) > ((double)hi - x) ? hi : (x > 0 ? hi : lo));
    }
}
template <class H> inline H f2h(float x, uint8_t m) {
    H n = H(x);
    if (m == RN || std::isnan(x) || (float)n == x) return n;
    // the two neighbours of x in H
    const uint16_t b = n.bits();
    auto next = [](uint16_t v, bool up) -> uint16_t {  // step the magnitude-ordered encoding
        const bool neg = v & 0x8000u;
        if ((v & 0x7fffu) == 0) return up ? (uint16_t)1 : (uint16_t)0x8001u;
        return (up != neg) ? (uint16_t)(v + 1) : (uint16_t)(v - 1);
    };
    H lo = (float)n < x ? n : H::from_bits(next(b, false));
    H hi = (float)n > x ? n : H::from_bits(next(b, true));
    switch (m) {
        case RZ: return x > 0 ? lo : hi;
        case RD: return lo;
        case RU: return hi;
        default: {
            const float dl = x - (float)lo, dh = (float)hi - x;
            return dl < dh ? lo : (dl > dh ? hi : (x > 0 ? hi : lo));
        }
    }
}
}  // namespace emu::simt

#define EMU_SIMT_F2I(SUF, M)                                                                              \
    inline int __float2int_##SUF(const float x) { return ::emu::simt::f2i<int32_t>(x, ::emu::simt::M); }  \
    inline unsigned int __float2uint_##SUF(const float x) { return ::emu::simt::f2i<uint32_t>(x, ::emu::simt::M); } \
    inline long long int __float2ll_##SUF(const float x) { return ::emu::simt::f2i<int64_t>(x, ::emu::simt::M); } \
    inline unsigned long long int __float2ull_##SUF(const float x) { return ::emu::simt::f2i<uint64_t>(x, ::emu::simt::M); } \
    inline float __float2float_##SUF(const float x) { return (float)::emu::simt::round_mode(x, ::emu::simt::M); } \
    inline float __int2float_##SUF(const int x) { return ::emu::simt::d2f((double)x, ::emu::simt::M); }    \
    inline float __uint2float_##SUF(const unsigned int x) { return ::emu::simt::d2f((double)x, ::emu::simt::M); } \
    inline float __ll2float_##SUF(const long long int x) { return ::emu::simt::d2f((double)x, ::emu::simt::M); } \
    inline float __ull2float_##SUF(const unsigned long long int x) { return ::emu::simt::d2f((double)x, ::emu::simt::M); } \
    inline half __float2half_##SUF(const float x) { return ::emu::simt::f2h<half>(x, ::emu::simt::M); }   \
    inline bfloat16_t __float2bfloat16_##SUF(const float x) { return ::emu::simt::f2h<bfloat16_t>(x, ::emu::simt::M); } \
    inline int __half2int_##SUF(const half x) { return ::emu::simt::f2i<int32_t>((float)x, ::emu::simt::M); } \
    inline int __bfloat162int_##SUF(const bfloat16_t x) { return ::emu::simt::f2i<int32_t>((float)x, ::emu::simt::M); } \
    inline half __int2half_##SUF(const int x) { return ::emu::simt::f2h<half>(::emu::simt::d2f((double)x, ::emu::simt::RZ) == (double)x ? (float)x : (float)x, ::emu::simt::M); } \
    inline bfloat16_t __int2bfloat16_##SUF(const int x) { return ::emu::simt::f2h<bfloat16_t>((float)x, ::emu::simt::M); }
EMU_SIMT_F2I(rn, RN)
EMU_SIMT_F2I(rz, RZ)
EMU_SIMT_F2I(rd, RD)
EMU_SIMT_F2I(ru, RU)
EMU_SIMT_F2I(rna, RNA)
#undef EMU_SIMT_F2I
inline half __float2half(const float x) { return half(x); }
inline bfloat16_t __float2bfloat16(const float x) { return bfloat16_t(x); }
inline float __half2float(const half x) { return (float)x; }
inline float __bfloat162float(const bfloat16_t x) { return (float)x; }
inline float __int_as_float(const int x) { float f; std::memcpy(&f, &x, 4); return f; }
inline float __uint_as_float(const unsigned int x) { float f; std::memcpy(&f, &x, 4); return f; }
inline int __float_as_int(const float x) { int i; std::memcpy(&i, &x, 4); return i; }
inline unsigned int __float_as_uint(const float x) { unsigned int i; std::memcpy(&i, &x, 4); return i; }
inline half __ushort_as_half(const unsigned short x) { return half::from_bits(x); }
inline bfloat16_t __ushort_as_bfloat16(const unsigned short x) { return bfloat16_t::from_bits(x); }
inline half __habs(const half x) { return half::from_bits((uint16_t)(x.bits() & 0x7fffu)); }
inline bfloat16_t __habs(const bfloat16_t x) { return bfloat16_t::from_bits((uint16_t)(x.bits() & 0x7fffu)); }
inline half __hmax(const half a, const half b) { return (float)a >= (float)b ? a : b; }
inline half __hmin(const half a, const half b) { return (float)a <= (float)b ? a : b; }
inline bfloat16_t __hmax(const bfloat16_t a, const bfloat16_t b) { return (float)a >= (float)b ? a : b; }
inline bfloat16_t __hmin(const bfloat16_t a, const bfloat16_t b) { return (float)a <= (float)b ? a : b; }
inline half __hfma(const half a, const half b, const half c) { return half(std::fmaf((float)a, (float)b, (float)c)); }
inline bool __hisnan(const half a) { return std::isnan((float)a); }
inline bool __hisinf(const half a) { return std::isinf((float)a); }
inline half hexp(const half x) { return half(std::exp((float)x)); }
inline half hlog(const half x) { return half(std::log((float)x)); }
inline half hsqrt(const half x) { return half(std::sqrt((float)x)); }
inline half hrsqrt(const half x) { return half(1.0f / std::sqrt((float)x)); }
inline half hrcp(const half x) { return half(1.0f / (float)x); }
inline half htanh(const half x) { return half(std::tanh((float)x)); }
inline half hfloor(const half x) { return half(std::floor((float)x)); }
inline half hceil(const half x) { return half(std::ceil((float)x)); }
inline half htrunc(const half x) { return half(std::trunc((float)x)); }
inline half hrint(const half x) { return half(std::nearbyint((float)x)); }
inline half hsin(const half x) { return half(std::sin((float)x)); }
inline half hcos(const half x) { return half(std::cos((float)x)); }
inline half hexp2(const half x) { return half(std::exp2((float)x)); }
inline half hlog2(const half x) { return half(std::log2((float)x)); }
// math_functions.h names that are not in the C library
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float fdividef(float x, float y) { return x / y; }
inline float rcbrtf(float x) { return 1.0f / std::cbrt(x); }
inline float sinpif(float x) { return std::sin((float)M_PI * x); }
inline float cospif(float x) { return std::cos((float)M_PI * x); }
inline float normcdff(float x) { return 0.5f * std::erfc(-x / std::sqrt(2.0f)); }
inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline long long int llmax(long long int a, long long int b) { return a > b ? a : b; }
inline long long int llmin(long long int a, long long int b) { return a < b ? a : b; }
inline unsigned long long int ullmax(unsigned long long int a, unsigned long long int b) { return a > b ? a : b; }
inline unsigned long long int ullmin(unsigned long long int a, unsigned long long int b) { return a < b ? a : b; }
#endif  // dav-3510
