#pragma once
// emu_xblock.h: runtime interface for synchronisation that goes through GM or orders pipes
// without event flags (implemented in src/emu_runtime.cpp; included by emu_core.h):
//  - cross-block release/acquire on GM words (IBSet/IBWait, software SyncAll,
//    NotifyNextBlock/WaitPreBlock, GroupBarrier, scalar GM flags, scalar atomics), which give
//    the race checker its happens-before edges between blocks;
//  - blocking waits on a GM condition that give the core's slot up (no busy spinning) and
//    end in a deadlock report when nothing can ever satisfy them;
//  - the DMA-atomic mode register (SetAtomicAdd/Max/Min) and the lock for atomic
//    read-modify-write of GM;
//  - intra-core Mutex::Lock/Unlock (pipe-to-pipe ordering by mutex id).
#include <cstddef>
#include <cstdint>
#include <source_location>

namespace emu {

// Access classes of a Span (emu::Span::cls). 0 = plain. Pairs of classed accesses that never
// race with each other (see ordered() in emu_runtime.cpp):
//  - two CLS_ATOMIC accesses (hardware atomics serialise read-modify-writes);
//  - two CLS_FILL writes (InitOutput: every core writes the same initial value);
//  - two coherent scalar accesses (CLS_SYNC: sync words of software syncs, scalar accesses that
//    bypass the data cache, scalar atomics; CLS_SLOAD: a GetValue right after
//    DataCacheCleanAndInvalid of its line; CLS_SSTORE: a GetValue's partner SetValue), except
//    two CLS_SSTORE stores (two cores storing to one word through their caches do race).
// Any classed access still races with unordered plain accesses.
constexpr uint8_t CLS_ATOMIC = 1;
constexpr uint8_t CLS_SYNC = 2;
constexpr uint8_t CLS_FILL = 4;
constexpr uint8_t CLS_SSTORE = 8;
constexpr uint8_t CLS_SLOAD = 16;

// Pipe masks for releases (bit = 1 << (int)emu::Pipe).
constexpr uint32_t PIPES_S = 1u << 0;
constexpr uint32_t PIPES_MTE2 = 1u << 4;
constexpr uint32_t PIPES_MTE3 = 1u << 5;
constexpr uint32_t PIPES_ALL = 0x7fu;

// Publishes, on GM byte address `addr`, everything the pipes in `pipe_mask` of the calling
// core have completed (plus what this core knows of other blocks). Wakes blocked waiters.
void xb_release(uint64_t addr, uint32_t pipe_mask, const std::source_location& loc);
// Joins every release published on GM addresses [lo, hi) into all pipes of the calling core
// (a scalar-unit wait: everything issued later is after it).
void xb_acquire(uint64_t lo, uint64_t hi, const std::source_location& loc);
// Blocks the calling core until pred(arg) is true (re-evaluated after every release and
// whenever every other core is blocked or done), then acquires [lo, hi). `what` names the API
// call in deadlock reports.
using XbPred = bool (*)(const void* arg);
// `local_mask`: pipes of the calling core whose issued work the wait also completes (a
// software wait that reads the workspace through MTE2 and polls it from the scalar unit
// passes PIPES_S | PIPES_MTE2).
void xb_wait(XbPred pred, const void* arg, uint64_t lo, uint64_t hi, uint32_t local_mask, const char* what,
             const std::source_location& loc);
// Per-launch int64 cell keyed by `key` (zero at the start of every launch; stable address).
// Software syncs whose GM workspace needs no initialisation keep their state here.
int64_t* xb_cell(uint64_t key);
// Hardware SyncAll with the pipes that trigger and wait (pipe_t values; PIPE_ALL = all).
void sync_all_cfg(bool aiv_only, int trigger_pipe, int wait_pipe, const std::source_location& loc);
// Class of a scalar GM load (GetValue) at `addr`: CLS_SLOAD when this core invalidated the
// line with DataCacheCleanAndInvalid since its last load of it (the load then reads GM and
// synchronises), else 0 (a cached load). Consumes the invalidation.
uint8_t xb_load_class(const void* addr);
// DataCacheCleanAndInvalid of the 64-byte line holding `addr` (entire: the whole data cache).
void xb_dcci(const void* addr, bool entire);
// A scalar GM load of `bytes` at `addr`: with `acquire`, joins releases published there.
// After a long run of loads that all return unchanged values (a spin loop), blocks until one
// of the polled words changes (or reports a deadlock when nothing can change it).
void xb_scalar_load(const void* addr, size_t bytes, bool acquire, const std::source_location& loc);
// Wakes blocked waiters after a GM store that may satisfy them but publishes nothing.
void xb_notify();

// Per-core CTRL special register (SetCtrlSpr/GetCtrlSpr page). Bits the emulator uses:
// [8:6] DMA-atomic data type (0 off, 1 float, 2 half, 3 int16, 4 int32, 5 int8, 6 bf16),
// [10:9] DMA-atomic operation (0 add, 1 max, 2 min), [48] float non-saturation, [60] global
// saturation control (default 1 on dav-3510). SetAtomicAdd/Max/Min/Type and DisableDmaAtomic
// write bits [10:6].
uint64_t ctrl_get();
void ctrl_set(uint64_t v);
struct AtomicMode { uint8_t op = 0, dtype = 0; };   // dtype 0: no DMA atomic
inline AtomicMode atomic_mode() {
    uint64_t c = ctrl_get();
    return AtomicMode{(uint8_t)((c >> 9) & 3u), (uint8_t)((c >> 6) & 7u)};
}
// Serialises atomic read-modify-writes of GM between the emulated cores.
void atomic_lock();
void atomic_unlock();
struct AtomicGuard {
    AtomicGuard() { atomic_lock(); }
    ~AtomicGuard() { atomic_unlock(); }
    AtomicGuard(const AtomicGuard&) = delete;
    AtomicGuard& operator=(const AtomicGuard&) = delete;
};

// Mutex::Lock<pipe>(id) / Unlock<pipe>(id) (pipe: emu::Pipe value).
void mutex_lock(int pipe, int id, const std::source_location& loc);
void mutex_unlock(int pipe, int id, const std::source_location& loc);

}  // namespace emu
