#pragma once
// emu_sync_ext.h: synchronisation-control, atomic, cache and special-register API beyond the
// SetFlag/WaitFlag/CrossCore core (pages under docs/zh/api/SIMD-API/基础API/{同步控制, 原子操作,
// 缓存控制, 特殊寄存器访问, 标量计算}; see docs/emulator-ops.md for the page of each call).
//
// Cross-block synchronisations (IBSet/IBWait, software SyncAll, NotifyNextBlock/WaitPreBlock,
// GroupBarrier, scalar GM flags, scalar atomics) publish and acquire happens-before through
// the runtime (emu_xblock.h), so a correct program gets no race report and a program missing
// the sync gets one. Their GM/UB workspaces are bounds-checked; the synchronisation words are
// accessed with CLS_SYNC so that polling them is not itself a race.
#include <cstring>
#include <string>
#include <type_traits>
#include "emu_core.h"
#include "emu_copy.h"
#include "emu_atomic.h"

namespace AscendC {

namespace emu_detail {
[[noreturn]] inline void sync_fail(const std::string& msg, const emu::Loc& loc) { emu::fail("invalid_param", msg, loc); }
inline emu::Span gm_word(const void* p, uint64_t bytes, uint8_t cls = emu::CLS_SYNC) {
    auto b = (uint64_t)(uintptr_t)p;
    return {emu::Mem::GM, b, b + bytes, -1, cls};
}
inline bool word_eq1(const void* p) { return *static_cast<const volatile int32_t*>(p) == 1; }
inline bool always(const void*) { return true; }
}  // namespace emu_detail

// ===================================================================== DMA atomics
// SetAtomicAdd / SetAtomicMax / SetAtomicMin / SetAtomicType / DisableDmaAtomic pages: the
// CTRL register's atomic type [8:6] and operation [10:9] fields; later copies to GM
// (UB -> GM DataCopy/DataCopyPad, Fixpipe L0C -> GM) combine with GM (emu_atomic.h).
enum class AtomicDtype { ATOMIC_NONE = 0, ATOMIC_F32, ATOMIC_F16, ATOMIC_S16, ATOMIC_S32, ATOMIC_S8, ATOMIC_BF16 };
enum class AtomicOp { ATOMIC_SUM = 0 };

namespace emu_detail {
template <class T> constexpr uint8_t atomic_code() {
    if constexpr (std::is_same_v<T, float>) return 1;
    else if constexpr (std::is_same_v<T, half>) return 2;
    else if constexpr (std::is_same_v<T, int16_t>) return 3;
    else if constexpr (std::is_same_v<T, int32_t>) return 4;
    else if constexpr (std::is_same_v<T, int8_t>) return 5;
    else if constexpr (std::is_same_v<T, bfloat16_t>) return 6;
    else return 0;
}
// dtype: new [8:6] value; op: new [10:9] value or -1 to keep it.
inline void set_atomic_bits(uint8_t dtype, int op, const char* what, const emu::Loc& loc) {
    emu::record(what, emu::Pipe::S, {}, {}, emu::Cost{}, loc);
    uint64_t c = emu::ctrl_get() & ~(7ull << 6);
    c |= (uint64_t)(dtype & 7u) << 6;
    if (op >= 0) c = (c & ~(3ull << 9)) | ((uint64_t)(op & 3) << 9);
    emu::ctrl_set(c);
}
}  // namespace emu_detail

template <typename T>
inline void SetAtomicAdd(const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::atomic_code<T>() != 0,
                  "SetAtomicAdd<T>: T must be int8_t, int16_t, half, bfloat16_t, int32_t or float");
    emu_detail::set_atomic_bits(emu_detail::atomic_code<T>(), 0, "SetAtomicAdd", loc);
}
template <typename T>
inline void SetAtomicMax(const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::atomic_code<T>() != 0,
                  "SetAtomicMax<T>: T must be int8_t, int16_t, half, bfloat16_t, int32_t or float");
    emu_detail::set_atomic_bits(emu_detail::atomic_code<T>(), 1, "SetAtomicMax", loc);
}
template <typename T>
inline void SetAtomicMin(const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::atomic_code<T>() != 0,
                  "SetAtomicMin<T>: T must be int8_t, int16_t, half, bfloat16_t, int32_t or float");
    emu_detail::set_atomic_bits(emu_detail::atomic_code<T>(), 2, "SetAtomicMin", loc);
}
// Sets only the data type; the operation field keeps its value (add after reset), so this
// alone turns on atomic accumulation (SetCtrlSpr page, CTRL[8:6]).
template <typename T>
inline void SetAtomicType(const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::atomic_code<T>() != 0,
                  "SetAtomicType<T>: T must be int8_t, int16_t, half, bfloat16_t, int32_t or float");
    emu_detail::set_atomic_bits(emu_detail::atomic_code<T>(), -1, "SetAtomicType", loc);
}
inline void DisableDmaAtomic(const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::set_atomic_bits(0, -1, "DisableDmaAtomic", loc);
}
inline void SetAtomicNone(const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::set_atomic_bits(0, -1, "SetAtomicNone", loc);
}
template <AtomicDtype type, AtomicOp op>
inline void SetStoreAtomicConfig(const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::set_atomic_bits((uint8_t)type, (int)op, "SetStoreAtomicConfig", loc);
}
inline void GetStoreAtomicConfig(uint16_t& atomicType, uint16_t& atomicOp) {
    emu::AtomicMode m = emu::atomic_mode();
    atomicType = m.dtype;
    atomicOp = m.op;
}

// ===================================================================== scalar atomics (dav-3510)
// AtomicAdd/AtomicMax/AtomicMin/AtomicCas/AtomicExch pages: a read-modify-write of one GM
// element that bypasses the data cache and returns the old value. They synchronise like a
// lock word: each publishes the scalar unit's completed work and acquires what earlier
// atomics on the same address published.
#if defined(EMU_ARCH_3510)
namespace emu_detail {
template <class T, class F>
inline T scalar_atomic(const char* what, __gm__ T* address, F f, const emu::Loc& loc) {
    emu::Span w = gm_word(address, sizeof(T), emu::CLS_ATOMIC | emu::CLS_SYNC);
    emu::record(what, emu::Pipe::S, {w}, {w}, emu::Cost{sizeof(T), 1}, loc);
    T old;
    // Publish, then write, then acquire: a core that sees the new value must also find this core's
    // clocks (write-then-publish let it pass in between and report a race the protocol has not).
    emu::xb_release(w.begin, emu::PIPES_S, loc);
    {
        emu::AtomicGuard g;
        std::memcpy(&old, address, sizeof(T));
        T nv = f(old);
        std::memcpy(address, &nv, sizeof(T));
    }
    emu::xb_acquire(w.begin, w.end, loc);
    emu::xb_notify();
    return old;
}
template <class T> constexpr bool add_type = std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>;
template <class T> constexpr bool cas_type = std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>;
}  // namespace emu_detail

template <typename T>
inline T AtomicAdd(__gm__ T* address, T value, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::add_type<T>, "AtomicAdd: T must be int32_t, uint32_t, float, int64_t or uint64_t");
    return emu_detail::scalar_atomic<T>("AtomicAdd", address, [&](T o) {
        if constexpr (std::is_integral_v<T>)
            return (T)((std::make_unsigned_t<T>)o + (std::make_unsigned_t<T>)value);  // wraps
        else
            return (T)(o + value);
    }, loc);
}
template <typename T>
inline T AtomicMax(__gm__ T* address, T value, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::add_type<T>, "AtomicMax: T must be int32_t, uint32_t, float, int64_t or uint64_t");
    return emu_detail::scalar_atomic<T>("AtomicMax", address, [&](T o) { return value > o ? value : o; }, loc);
}
template <typename T>
inline T AtomicMin(__gm__ T* address, T value, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::add_type<T>, "AtomicMin: T must be int32_t, uint32_t, float, int64_t or uint64_t");
    return emu_detail::scalar_atomic<T>("AtomicMin", address, [&](T o) { return value < o ? value : o; }, loc);
}
template <typename T>
inline T AtomicCas(__gm__ T* address, T value1, T value2, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::cas_type<T>, "AtomicCas: T must be uint32_t or uint64_t");
    return emu_detail::scalar_atomic<T>("AtomicCas", address, [&](T o) { return o == value1 ? value2 : o; }, loc);
}
template <typename T>
inline T AtomicExch(__gm__ T* address, T value, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::cas_type<T>, "AtomicExch: T must be uint32_t or uint64_t");
    return emu_detail::scalar_atomic<T>("AtomicExch", address, [&](T) { return value; }, loc);
}
#endif

// ===================================================================== CTRL register
// SetCtrlSpr / GetCtrlSpr (950, A2, A3) / ResetCtrlSpr (950) pages: the per-core 64-bit CTRL
// register; defaults: CTRL[60] = 1 on dav-3510, every other bit 0. SetSaturationFlag /
// GetSaturationFlag (A2/A3): SaturationMode::FLOAT is CTRL[48] (0 = saturate), CAST taken as
// CTRL[59] (0 = saturate, as on the 950 table; assumed for A2/A3). Vector ops do not read the
// saturation bits (docs/emulator-ops.md, gaps).
namespace emu_detail {
template <int8_t s, int8_t e> constexpr uint64_t ctrl_mask() {
    static_assert(0 <= s && s <= e && e <= 63, "CtrlSpr: need 0 <= startBit <= endBit <= 63");
    return (e - s == 63) ? ~0ull : (((1ull << (e - s + 1)) - 1) << s);
}
constexpr uint64_t kCtrlDefault = emu::is_3510() ? 1ull << 60 : 0;
}  // namespace emu_detail
template <int8_t startBit, int8_t endBit>
static inline void SetCtrlSpr(int64_t value, const emu::Loc& loc = emu::Loc::current()) {
    constexpr uint64_t m = emu_detail::ctrl_mask<startBit, endBit>();
    if (((uint64_t)value << startBit & m) >> startBit != (uint64_t)value)
        emu_detail::sync_fail("SetCtrlSpr<" + std::to_string(startBit) + ", " + std::to_string(endBit) + ">(" +
                              std::to_string(value) + "): value does not fit the bit range", loc);
    emu::record("SetCtrlSpr", emu::Pipe::S, {}, {}, emu::Cost{}, loc);
    emu::ctrl_set((emu::ctrl_get() & ~m) | (((uint64_t)value << startBit) & m));
}
template <int8_t startBit, int8_t endBit>
static inline int64_t GetCtrlSpr() {
    return (int64_t)((emu::ctrl_get() & emu_detail::ctrl_mask<startBit, endBit>()) >> startBit);
}
#if defined(EMU_ARCH_3510)
template <int8_t startBit, int8_t endBit>
static inline void ResetCtrlSpr(const emu::Loc& loc = emu::Loc::current()) {
    constexpr uint64_t m = emu_detail::ctrl_mask<startBit, endBit>();
    emu::record("ResetCtrlSpr", emu::Pipe::S, {}, {}, emu::Cost{}, loc);
    emu::ctrl_set((emu::ctrl_get() & ~m) | (emu_detail::kCtrlDefault & m));
}
#else
enum class SaturationMode : uint8_t { FLOAT = 0, CAST = 1 };
template <SaturationMode mode>
inline void SetSaturationFlag(bool enableSat, const emu::Loc& loc = emu::Loc::current()) {
    constexpr int bit = mode == SaturationMode::FLOAT ? 48 : 59;
    emu::record("SetSaturationFlag", emu::Pipe::S, {}, {}, emu::Cost{}, loc);
    emu::ctrl_set((emu::ctrl_get() & ~(1ull << bit)) | ((enableSat ? 0ull : 1ull) << bit));
}
template <SaturationMode mode>
inline bool GetSaturationFlag() {
    constexpr int bit = mode == SaturationMode::FLOAT ? 48 : 59;
    return ((emu::ctrl_get() >> bit) & 1u) == 0;
}
#endif

// ===================================================================== data cache
// DataCacheCleanAndInvalid page. The emulator keeps no cache contents (every scalar access
// sees GM); invalidating a line makes this core's next GetValue of it a synchronising load
// (CLS_SLOAD + acquire of what SetValue/WriteGmByPassDCache published there), so a GM flag
// polled the documented way orders cores, and one polled without it is a race.
enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst) {
    if constexpr (dcciDst != DcciDst::CACHELINE_UB) emu::xb_dcci(dst.emu_ptr(), entireType == CacheLine::ENTIRE_DATA_CACHE);
}
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const LocalTensor<T>&) {}
template <typename T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst) {
    emu::xb_dcci(dst.emu_ptr(), entireType == CacheLine::ENTIRE_DATA_CACHE);
}
template <typename T>
inline void DataCachePreload(const GlobalTensor<uint64_t>&, const T) {}
inline void ICachePreLoad(const int64_t) {}

// ===================================================================== scalar GM bypassing the cache
// ReadGmByPassDCache / WriteGmByPassDCache pages (int8..uint64). A write publishes what the
// scalar unit has completed; a read acquires what was published at that address (and a
// spin loop over such reads sleeps until the value changes).
namespace emu_detail {
template <class T> constexpr bool bypass_type = std::is_integral_v<T> && sizeof(T) <= 8 && !std::is_same_v<T, bool>;
}
template <typename T>
inline T ReadGmByPassDCache(__gm__ T* addr, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::bypass_type<T>, "ReadGmByPassDCache: T must be an 8/16/32/64-bit integer type");
    emu::Span w = emu_detail::gm_word(addr, sizeof(T));
    emu::record("ReadGmByPassDCache", emu::Pipe::S, {w}, {}, emu::Cost{sizeof(T), 1}, loc);
    T v;  // read, then acquire (see GlobalTensor::GetValue)
    std::memcpy(&v, (const void*)addr, sizeof(T));
    emu::xb_scalar_load(addr, sizeof(T), true, loc);
    return v;
}
template <typename T>
inline void WriteGmByPassDCache(__gm__ T* addr, T value, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(emu_detail::bypass_type<T>, "WriteGmByPassDCache: T must be an 8/16/32/64-bit integer type");
    emu::Span w = emu_detail::gm_word(addr, sizeof(T));
    emu::record("WriteGmByPassDCache", emu::Pipe::S, {}, {w}, emu::Cost{sizeof(T), 1}, loc);
    emu::xb_release(w.begin, emu::PIPES_S, loc);  // publish, then store (see GlobalTensor::SetValue)
    std::memcpy((void*)addr, &value, sizeof(T));
    emu::xb_notify();
}

// ===================================================================== DataSyncBarrier
// DataSyncBarrier page: blocks later instructions until the earlier memory accesses (GM and/or
// UB per MemDsbT) are done. Modelled as PipeBarrier<PIPE_ALL> (it covers more than the GM/UB
// accesses the page names; assumed).
enum class MemDsbT : uint8_t { ALL = 0, DDR, UB, SEQ };
template <MemDsbT arg0>
inline void DataSyncBarrier(const emu::Loc& loc = emu::Loc::current()) {
    emu::pipe_barrier(PIPE_ALL, loc);
}

// ===================================================================== Mutex (dav-3510)
// Mutex / Lock / Unlock / AllocMutexID / ReleaseMutexID pages: Lock<pipe>(id) makes the later
// instructions of `pipe` wait for the Unlock of `id` that precedes it in program order (on
// another pipe); Unlock<pipe>(id) happens when `pipe`'s earlier instructions are complete.
// The header declares them for every arch; they act only on dav-3510 (no-ops elsewhere).
using MutexID = uint8_t;
class Mutex {
public:
    template <pipe_t pipe>
    static inline void Lock(MutexID id, const emu::Loc& loc = emu::Loc::current()) {
        if constexpr (emu::is_3510()) {
            if (id > 31) emu_detail::sync_fail("Mutex::Lock: MutexID " + std::to_string(id) + " is out of range 0-31", loc);
            emu::mutex_lock((int)emu::pipe_from_global(pipe), id, loc);
        }
    }
    template <pipe_t pipe>
    static inline void Unlock(MutexID id, const emu::Loc& loc = emu::Loc::current()) {
        if constexpr (emu::is_3510()) {
            if (id > 31) emu_detail::sync_fail("Mutex::Unlock: MutexID " + std::to_string(id) + " is out of range 0-31", loc);
            emu::mutex_unlock((int)emu::pipe_from_global(pipe), id, loc);
        }
    }
};
namespace emu_detail {
inline uint32_t& mutex_ids_in_use() {
    static thread_local uint32_t used = 0;   // per core thread; a launch's cores are fresh threads
    return used;
}
}  // namespace emu_detail
// IDs 28-31 are reserved for the framework (Mutex page); AllocMutexID hands out the lowest free
// ID of 0-27.
inline MutexID AllocMutexID(const emu::Loc& loc = emu::Loc::current()) {
    uint32_t& used = emu_detail::mutex_ids_in_use();
    for (uint32_t i = 0; i < 28; ++i)
        if (!(used & (1u << i))) {
            used |= 1u << i;
            return (MutexID)i;
        }
    emu_detail::sync_fail("AllocMutexID: all 28 MutexIDs are in use (release them with ReleaseMutexID)", loc);
}
inline void ReleaseMutexID(MutexID id) { emu_detail::mutex_ids_in_use() &= ~(1u << (id & 31)); }

// ===================================================================== inter-task sync
// WaitPreTaskEnd / SetNextTaskStart pages: SuperKernel early start between launches. One
// emulated launch has no neighbouring task, so they order nothing.
template <bool FORCE = false>
inline void WaitPreTaskEnd() {}
template <pipe_t AIV_PIPE = PIPE_MTE3, pipe_t AIC_PIPE = PIPE_FIX, bool FORCE = false>
inline void SetNextTaskStart() {}

// ===================================================================== IBSet / IBWait
// IBSet / IBWait pages: the flag of (blockIdx, eventID) is the int32 at 32-byte slot
// eventID * coreNum + blockIdx of gmWorkspace (coreNum = GetBlockNum(), x2 for a mix kernel
// when isAIVOnly = false); IBSet writes 1 there, IBWait waits until it reads 1. The workspace
// must start at 0 (the pages' constraint), ubWorkspace holds at least 32 bytes.
namespace emu_detail {
template <bool isAIVOnly>
inline int32_t* ib_word(const GlobalTensor<int32_t>& gm, const LocalTensor<int32_t>& ub, int32_t blockIdx,
                        int32_t eventID, const char* what, const emu::Loc& loc) {
    int64_t cores = GetBlockNum() * (isAIVOnly ? 1 : 2);
    if (blockIdx < 0 || blockIdx >= cores || eventID < 0)
        sync_fail(std::string(what) + ": blockIdx " + std::to_string(blockIdx) + " / eventID " + std::to_string(eventID) +
                  " out of range (blockIdx 0.." + std::to_string(cores - 1) + ")", loc);
    if (ub.emu_mem() != emu::Mem::UB) sync_fail(std::string(what) + ": ubWorkspace must be a UB tensor (VECIN/VECCALC/VECOUT)", loc);
    return gm.emu_ptr() + ((int64_t)eventID * cores + blockIdx) * 8;
}
}  // namespace emu_detail

template <bool isAIVOnly = true>
inline void IBSet(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                  int32_t eventID, const emu::Loc& loc = emu::Loc::current()) {
    int32_t* w = emu_detail::ib_word<isAIVOnly>(gmWorkspace, ubWorkspace, blockIdx, eventID, "IBSet", loc);
    emu::record("IBSet", emu::Pipe::S, {}, {ubWorkspace.emu_span(8), emu_detail::gm_word(w, 32)}, emu::Cost{32, 8}, loc);
    emu::xb_release((uint64_t)(uintptr_t)w, emu::PIPES_S | emu::PIPES_MTE3, loc);  // publish, then set
    {
        emu::AtomicGuard g;
        *w = 1;
    }
    emu::xb_notify();
}
template <bool isAIVOnly = true>
inline void IBWait(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                   int32_t eventID, const emu::Loc& loc = emu::Loc::current()) {
    int32_t* w = emu_detail::ib_word<isAIVOnly>(gmWorkspace, ubWorkspace, blockIdx, eventID, "IBWait", loc);
    emu::record("IBWait", emu::Pipe::S, {emu_detail::gm_word(w, 32)}, {ubWorkspace.emu_span(8)}, emu::Cost{32, 8}, loc);
    auto b = (uint64_t)(uintptr_t)w;
    emu::xb_wait(emu_detail::word_eq1, w, b, b + 32, emu::PIPES_S | emu::PIPES_MTE2, "IBWait", loc);
}

// ===================================================================== software SyncAll
// SyncAll page (software form, pure Vector kernels): each of the first usedCores AIVs (0: all)
// raises its 32-byte slot of gmWorkspace and polls all slots. Modelled with a generation count
// per slot (the n-th SyncAll waits until every slot reached n), so repeated calls work
// (assumed; the page describes one round: write 1, wait for all 1). The workspace must start at 0.
namespace emu_detail {
struct SoftSyncArg { const int32_t* base; int64_t n; int32_t gen; };
inline bool soft_sync_done(const void* p) {
    auto* a = static_cast<const SoftSyncArg*>(p);
    for (int64_t i = 0; i < a->n; ++i)
        if (*(const volatile int32_t*)(a->base + i * 8) < a->gen) return false;
    return true;
}
}  // namespace emu_detail
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0, const emu::Loc& loc = emu::Loc::current()) {
    static_assert(isAIVOnly, "SyncAll(gmWorkspace, ubWorkspace): the software form exists only for pure Vector kernels (isAIVOnly = true)");
    if (!ASCEND_IS_AIV) emu_detail::sync_fail("SyncAll(gmWorkspace, ubWorkspace) runs on AIVs only", loc);
    int64_t total = GetBlockNum() * GetTaskRation();
    int64_t n = usedCores == 0 ? total : usedCores;
    int64_t me = GetBlockIdx();
    if (n < 1 || n > total) emu_detail::sync_fail("SyncAll: usedCores " + std::to_string(usedCores) + " exceeds the " +
                                                  std::to_string(total) + " AIVs of the launch", loc);
    if (me >= n) emu_detail::sync_fail("SyncAll: AIV " + std::to_string(me) + " is not among the first usedCores = " +
                                       std::to_string(n) + " AIVs that synchronise", loc);
    int32_t* base = gmWorkspace.emu_ptr();
    auto b = (uint64_t)(uintptr_t)base;
    emu::Span all = {emu::Mem::GM, b, b + (uint64_t)n * 32, -1, emu::CLS_SYNC};
    emu::record("SyncAll", emu::Pipe::S, {all}, {ubWorkspace.emu_span((uint32_t)(n * 8)), emu_detail::gm_word(base + me * 8, 32)},
                emu::Cost{(uint64_t)n * 32, (uint64_t)n * 8}, loc);
    emu_detail::SoftSyncArg arg{base, n, 0};
    // Release before the counter moves: a block that sees the new count must also find this
    // block's clocks (the other order let a waiter pass in between: a false race, now and then).
    emu::xb_release(b + (uint64_t)me * 32, emu::PIPES_S | emu::PIPES_MTE3, loc);
    {
        emu::AtomicGuard g;
        arg.gen = ++base[me * 8];
    }
    emu::xb_wait(emu_detail::soft_sync_done, &arg, b, b + (uint64_t)n * 32, emu::PIPES_S | emu::PIPES_MTE2, "SyncAll", loc);
}

// ===================================================================== sequential block order
// InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock pages: the AIVs run the
// sections between WaitPreBlock and NotifyNextBlock strictly in blockIdx order. Modelled as a
// turn counter of the launch keyed by gmWorkspace: block b's k-th WaitPreBlock waits for turn
// k * blockNum + b, NotifyNextBlock passes the turn on (so block 0's next round follows the
// last block's previous one; assumed). The workspace needs no initialisation (the page says so);
// each block's slot also receives its Notify count for inspection.
namespace emu_detail {
struct TurnArg { const int64_t* cell; int64_t want; };
inline bool turn_reached(const void* p) {
    auto* a = static_cast<const TurnArg*>(p);
    return *(const volatile int64_t*)a->cell >= a->want;
}
inline void determine_check(const GlobalTensor<int32_t>& gm, const LocalTensor<int32_t>& ub, const char* what, const emu::Loc& loc) {
    if (!ASCEND_IS_AIV) sync_fail(std::string(what) + " synchronises AIVs only", loc);
    if (ub.emu_mem() != emu::Mem::UB) sync_fail(std::string(what) + ": ubWorkspace must be a UB tensor", loc);
    (void)gm;
}
inline int32_t& determine_round() {
    static thread_local int32_t r = 0;   // WaitPreBlock calls of this core in this launch
    return r;
}
}  // namespace emu_detail
inline void InitDetermineComputeWorkspace(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace,
                                          const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::determine_check(gmWorkspace, ubWorkspace, "InitDetermineComputeWorkspace", loc);
    int64_t n = GetBlockNum() * GetTaskRation(), me = GetBlockIdx();
    int32_t* base = gmWorkspace.emu_ptr();
    emu::record("InitDetermineComputeWorkspace", emu::Pipe::S, {},
                {ubWorkspace.emu_span((uint32_t)(n * 8 + 8)), emu_detail::gm_word(base + me * 8, 32)}, emu::Cost{32, 8}, loc);
    base[me * 8] = 0;
    emu_detail::determine_round() = 0;
}
inline void WaitPreBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace,
                         const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::determine_check(gmWorkspace, ubWorkspace, "WaitPreBlock", loc);
    int64_t n = GetBlockNum() * GetTaskRation(), me = GetBlockIdx();
    int32_t* base = gmWorkspace.emu_ptr();
    auto b = (uint64_t)(uintptr_t)base;
    emu::Span all = {emu::Mem::GM, b, b + (uint64_t)n * 32, -1, emu::CLS_SYNC};
    emu::record("WaitPreBlock", emu::Pipe::S, {all}, {ubWorkspace.emu_span((uint32_t)(n * 8 + 8))}, emu::Cost{32, 8}, loc);
    emu_detail::TurnArg arg{emu::xb_cell(b), emu_detail::determine_round()++ * n + me};
    emu::xb_wait(emu_detail::turn_reached, &arg, b, b + (uint64_t)n * 32, emu::PIPES_S | emu::PIPES_MTE2, "WaitPreBlock", loc);
}
inline void NotifyNextBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace,
                            const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::determine_check(gmWorkspace, ubWorkspace, "NotifyNextBlock", loc);
    int64_t n = GetBlockNum() * GetTaskRation(), me = GetBlockIdx();
    int32_t* base = gmWorkspace.emu_ptr();
    auto b = (uint64_t)(uintptr_t)base;
    emu::record("NotifyNextBlock", emu::Pipe::S, {ubWorkspace.emu_span(8)}, {emu_detail::gm_word(base + me * 8, 32)}, emu::Cost{32, 8}, loc);
    int64_t* cell = emu::xb_cell(b);
    // Publish, then pass the turn: the next block must find this block's stores once it sees its turn.
    emu::xb_release(b + (uint64_t)me * 32, emu::PIPES_S | emu::PIPES_MTE3, loc);
    {
        emu::AtomicGuard g;
        ++*cell;
        base[me * 8] += 1;
    }
    emu::xb_notify();
    // The notification is a GM write through the UB workspace that the next WaitPreBlock reuses:
    // NotifyNextBlock returns once its MTE3 work (the section's stores included) is done
    // (assumed; the official sequential_block_sync example reuses the section's UB tensor in the
    // next round with no other sync).
    emu::xb_wait(emu_detail::always, nullptr, b, b, emu::PIPES_S | emu::PIPES_MTE3, "NotifyNextBlock", loc);
}

// ===================================================================== GroupBarrier
// GroupBarrier pages (Cube group management): arriveSize AIVs Arrive, waitSize AIVs Wait until
// all of them arrived; usable in loops (the n-th Wait of an object waits for the n-th round of
// arrivals). The GM workspace (waitSize x 512 bytes, zeroed by the user) is
// bounds-checked; the arrival count lives in a per-launch cell keyed by the workspace address.
enum class PipeMode : uint8_t { SCALAR_MODE = 0, MTE3_MODE = 1, MAX };
template <PipeMode pipeMode>
class GroupBarrier {
public:
    GroupBarrier(GM_ADDR groupWorkspace, uint32_t arriveSizeIn, uint32_t waitSizeIn,
                 const emu::Loc& loc = emu::Loc::current())
        : ws_(groupWorkspace), arriveSize_(arriveSizeIn), waitSize_(waitSizeIn) {
        static_assert(pipeMode == PipeMode::MTE3_MODE, "GroupBarrier: only PipeMode::MTE3_MODE is supported");
        // The 512-byte alignment the page asks for is not checked: device allocations are aligned,
        // the host buffers the emulator runs on need not be.
        if (arriveSizeIn == 0 || waitSizeIn == 0) emu_detail::sync_fail("GroupBarrier: arriveSize and waitSize must be > 0", loc);
    }
    void Arrive(uint32_t arriveIndex, const emu::Loc& loc = emu::Loc::current()) {
        if (arriveIndex >= arriveSize_)
            emu_detail::sync_fail("GroupBarrier::Arrive: arriveIndex " + std::to_string(arriveIndex) + " >= arriveSize " +
                                  std::to_string(arriveSize_), loc);
        auto b = (uint64_t)(uintptr_t)ws_;
        emu::Span all = {emu::Mem::GM, b, b + GetWorkspaceLen(), -1, emu::CLS_SYNC};
        emu::record("GroupBarrier::Arrive", emu::Pipe::MTE3, {}, {all}, emu::Cost{GetWorkspaceLen(), 0}, loc);
        emu::xb_release(b, emu::PIPES_S | emu::PIPES_MTE3, loc);  // publish, then arrive
        {
            emu::AtomicGuard g;
            ++*emu::xb_cell(b);
        }
        emu::xb_notify();
    }
    void Wait(uint32_t waitIndex, const emu::Loc& loc = emu::Loc::current()) {
        if (waitIndex >= waitSize_)
            emu_detail::sync_fail("GroupBarrier::Wait: waitIndex " + std::to_string(waitIndex) + " >= waitSize " +
                                  std::to_string(waitSize_), loc);
        auto b = (uint64_t)(uintptr_t)ws_;
        emu::record("GroupBarrier::Wait", emu::Pipe::S, {emu_detail::gm_word(ws_ + (uint64_t)waitIndex * 512, 512)}, {},
                    emu::Cost{512, 0}, loc);
        ++counter_;
        emu_detail::TurnArg arg{emu::xb_cell(b), (int64_t)counter_ * arriveSize_};
        emu::xb_wait(emu_detail::turn_reached, &arg, b, b + 1, emu::PIPES_S | emu::PIPES_MTE2, "GroupBarrier::Wait", loc);
    }
    uint64_t GetWorkspaceLen() const { return (uint64_t)waitSize_ * 512; }

private:
    GM_ADDR ws_;
    uint32_t arriveSize_, waitSize_;
    uint32_t counter_ = 0;
};

// ===================================================================== InitOutput (deprecated: use Fill)
// kernel_operator_common_intf.h: fills `size` elements of GM with `value` (V then MTE3).
// Meant to be called by every core before a barrier, so two InitOutput writes never race
// with each other (CLS_FILL); they race with anything else that is not ordered.
template <typename T>
inline void InitOutput(GlobalTensor<T> gmWorkspaceAddr, uint32_t size, T value = 0,
                       const emu::Loc& loc = emu::Loc::current()) {
    emu::Span w = gmWorkspaceAddr.emu_span(size);
    w.cls = emu::CLS_FILL;
    emu::record("InitOutput", emu::Pipe::MTE3, {}, {w}, emu::Cost{(uint64_t)size * sizeof(T), size}, loc);
    T* p = gmWorkspaceAddr.emu_ptr();
    for (uint32_t i = 0; i < size; ++i) p[i] = value;
}

}  // namespace AscendC
