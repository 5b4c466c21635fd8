#pragma once
// emu_core.h: core of the Ascend C CPU emulator (clean-room, written from documented
// behaviour only). Macros of the kernel dialect, the `emu::` runtime interface every op
// uses, tensors, TPipe/TBuf, intra- and cross-core synchronisation, block/core queries.
// The runtime itself (threads, memories, trace, race checker, flags, deadlock detection,
// report) lives in src/emu_runtime.cpp, compiled once per arch into a shared library.
// Keep this header light: every kernel translation unit includes it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include "emu_xblock.h"

#if !defined(EMU_ARCH_C220) && !defined(EMU_ARCH_3510)
#error "build with -DEMU_ARCH_C220 or -DEMU_ARCH_3510"
#endif

// ---- kernel dialect -------------------------------------------------------------------
#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__
#define __inout_pipe__(p)
#define GM_ADDR uint8_t*

// Global pipe enum (values as commonly documented; only the names matter here).
enum pipe_t : uint8_t {
    PIPE_S = 0,
    PIPE_V = 1,
    PIPE_M = 2,
    PIPE_MTE1 = 3,
    PIPE_MTE2 = 4,
    PIPE_MTE3 = 5,
    PIPE_ALL = 6,
    PIPE_FIX = 10,
};

enum event_t : int32_t {
    EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7,
};

namespace emu {
using Loc = std::source_location;

enum class Mem : uint8_t { GM, UB, L1, L0A, L0B, L0C, BT, FB };
enum class Pipe : uint8_t { S, V, M, MTE1, MTE2, MTE3, FIX };
enum class CoreKind : uint8_t { AIC, AIV };
constexpr int kNumPipes = 7;
constexpr int kNumMems = 8;

// Byte span [begin, end). GM: host addresses; on-chip: offsets inside a core's memory.
// `core` selects whose on-chip memory: -1 = the calling core (the usual case); for the
// 3510 cross-core paths, an AIC names an AIV of its group by sub-block index (0/1) for UB,
// and an AIV names its group's AIC with 0 for L1.
struct Span {
    Mem mem;
    uint64_t begin, end;
    int8_t core = -1;
    uint8_t cls = 0;  // access class (CLS_ATOMIC / CLS_SYNC in emu_xblock.h); 0 = plain
};
// What the timing model costs (docs/emulator-internals.md): copies `bytes`; vector ops
// `repeats`/`bytes`; Mmad `macs`, `repeats` = 16x16 output fractals, `elems` = K and
// `bytes` = K x operand size (the dtype rate); Fixpipe `elems`/`bytes` written.
struct Cost {
    uint64_t bytes = 0, elems = 0, macs = 0;
    uint32_t repeats = 0;
};

constexpr bool is_c220() {
#if defined(EMU_ARCH_C220)
    return true;
#else
    return false;
#endif
}
constexpr bool is_3510() { return !is_c220(); }

// Called by every op before its effect (see docs/emulator-internals.md).
void record_n(const char* op, Pipe pipe, const Span* reads, size_t n_reads, const Span* writes,
              size_t n_writes, const Cost& cost, const Loc& loc);
inline void record(const char* op, Pipe pipe, std::initializer_list<Span> reads,
                   std::initializer_list<Span> writes, const Cost& cost, const Loc& loc) {
    record_n(op, pipe, reads.begin(), reads.size(), writes.begin(), writes.size(), cost, loc);
}
// Same for any contiguous container of Span (std::vector<Span>, std::array<Span, N>, ...).
template <class C, class = decltype(std::declval<const C&>().data() + std::declval<const C&>().size())>
inline void record(const char* op, Pipe pipe, const C& reads, const C& writes, const Cost& cost,
                   const Loc& loc) {
    record_n(op, pipe, reads.data(), reads.size(), writes.data(), writes.size(), cost, loc);
}
// Stops this run with a kernel error (unwinds this core's thread).
[[noreturn]] void fail(const char* kind, const std::string& msg, const Loc& loc);
uint8_t* mem_base(Mem m, int core = -1);   // a core's memory (nullptr for GM / absent memory)
uint64_t mem_size(Mem m);                  // capacity on the current arch (0 for GM)
bool mem_present(Mem m);                   // does the calling core have this memory?

// sync and queries (implemented in the runtime)
void set_flag(Pipe src, Pipe dst, int32_t id, const Loc& loc);
void wait_flag(Pipe src, Pipe dst, int32_t id, const Loc& loc);
void pipe_barrier(int pipe, const Loc& loc);
void cross_set(int mode, int pipe, int32_t id, const Loc& loc);
void cross_wait(int mode, int pipe, int32_t id, const Loc& loc);
void sync_all(bool aiv_only, const Loc& loc);
void check_kernel_type(int type, const Loc& loc);
// Implicit synchronisation of TQue: a flag keyed by an address (not an event id).
void queue_signal(Pipe src, Pipe dst, const void* key, const char* what, const Loc& loc);
void queue_wait(Pipe src, Pipe dst, const void* key, const char* what, const Loc& loc);
void queue_forget(const void* begin, size_t bytes);
// TPipe::Reset: wait for the FreeTensor events still pending on this core (also of destroyed queues).
void pipe_reset(const Loc& loc);
// TBufPool::Reset: wait for the FreeTensor events pending on the queue object [begin, begin + bytes).
void queue_drain(const void* begin, size_t bytes, const char* what, const Loc& loc);
// L0C unit flags (UnitFlag page): one bit per 512-byte block of L0C. `mmad`: an Mmad writing
// `l0c` (else a Fixpipe reading it) with unitFlag `flag` (0, 2 or 3). unit_flag_pre goes right
// before the op's record (the waits: joins the clocks that released the blocks, notes the
// producer for the timing model, reports misuse), unit_flag_post right after it (2: bits
// unchanged; 3: an Mmad sets them to 1, a Fixpipe clears them to 0). Only L0C spans count.
void unit_flag_pre(bool mmad, uint8_t flag, const Span* l0c, size_t n, const Loc& loc);
void unit_flag_post(bool mmad, uint8_t flag, const Span* l0c, size_t n, const Loc& loc);
// SetFixPipeConfig(l0cTensor, isUnitFlag = true): every block's bit to 0.
void unit_flag_reset(const Loc& loc);
int64_t block_idx();
int64_t block_num();
// A GM address the caller put into GM data (a pointer of a ListTensorDesc) -> the address the
// kernel works on (arguments run on guarded copies, docs/emulator-internals.md); others unchanged.
uint64_t gm_translate(uint64_t addr);
int64_t sub_block_idx();
int64_t task_ration();
CoreKind core_kind();
void note_capacity(Mem m, uint64_t used, uint64_t request, const char* detail, const Loc& loc);
// An allocation of [begin, end) in memory m (TPipe, TBufPool, LocalMemAllocator, static tensors):
// the SIMT engine lets threads touch only allocated UB (the rest is its Data Cache).
void note_alloc(Mem m, uint64_t begin, uint64_t end, const Loc& loc);

constexpr Pipe pipe_from_global(pipe_t p) {
    switch (p) {
        case PIPE_S: return Pipe::S;
        case PIPE_V: return Pipe::V;
        case PIPE_M: return Pipe::M;
        case PIPE_MTE1: return Pipe::MTE1;
        case PIPE_MTE2: return Pipe::MTE2;
        case PIPE_MTE3: return Pipe::MTE3;
        case PIPE_FIX: return Pipe::FIX;
        default: return Pipe::S;
    }
}
constexpr uint16_t event_code(Pipe src, Pipe dst) { return (uint16_t)((uint16_t)src * 16 + (uint16_t)dst); }
}  // namespace emu

namespace AscendC {

enum class HardEvent : uint16_t {
#define EMU_EV(S, D) S##_##D = ::emu::event_code(::emu::Pipe::S, ::emu::Pipe::D)
    EMU_EV(MTE2, MTE1), EMU_EV(MTE1, MTE2), EMU_EV(MTE1, M), EMU_EV(M, MTE1), EMU_EV(MTE2, V),
    EMU_EV(V, MTE2), EMU_EV(MTE3, V), EMU_EV(V, MTE3), EMU_EV(M, V), EMU_EV(V, M), EMU_EV(V, V),
    EMU_EV(MTE3, MTE1), EMU_EV(MTE1, MTE3), EMU_EV(MTE1, V), EMU_EV(MTE2, M), EMU_EV(M, MTE2),
    EMU_EV(V, MTE1), EMU_EV(M, FIX), EMU_EV(FIX, M), EMU_EV(MTE3, MTE2), EMU_EV(MTE2, MTE3),
    EMU_EV(S, V), EMU_EV(V, S), EMU_EV(S, MTE2), EMU_EV(MTE2, S), EMU_EV(S, MTE3), EMU_EV(MTE3, S),
    EMU_EV(MTE2, FIX), EMU_EV(FIX, MTE2), EMU_EV(FIX, S), EMU_EV(M, S), EMU_EV(FIX, MTE3),
    EMU_EV(MTE1, FIX), EMU_EV(FIX, MTE1), EMU_EV(FIX, FIX),
#undef EMU_EV
};
using TEventID = int8_t;

enum class TPosition : uint8_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM, SPM, SHM, TSCM,
    C2PIPE2GM, C2PIPE2LOCAL, MAX,
};
using QuePosition = TPosition;

constexpr emu::Mem mem_of(TPosition p) {
    switch (p) {
        case TPosition::A1: case TPosition::B1: case TPosition::C1: case TPosition::TSCM:
            return emu::Mem::L1;
        case TPosition::A2: return emu::Mem::L0A;
        case TPosition::B2: return emu::Mem::L0B;
        case TPosition::CO1: return emu::Mem::L0C;
        case TPosition::C2: return emu::Mem::BT;
        case TPosition::C2PIPE2GM: case TPosition::C2PIPE2LOCAL: return emu::Mem::FB;
        case TPosition::GM: return emu::Mem::GM;
        default: return emu::Mem::UB;  // VECIN/VECOUT/VECCALC/LCM/CO2/SPM/SHM
    }
}
constexpr uint32_t align_of(emu::Mem m) {
    switch (m) {
        case emu::Mem::L0A: case emu::Mem::L0B: return 512;
        case emu::Mem::L0C: case emu::Mem::BT: case emu::Mem::FB: return 64;
        default: return 32;
    }
}

enum KernelMetaType : int32_t {
    KERNEL_TYPE_AIV_ONLY = 0,
    KERNEL_TYPE_AIC_ONLY = 1,
    KERNEL_TYPE_MIX_AIV_1_0 = 2,
    KERNEL_TYPE_MIX_AIC_1_0 = 3,
    KERNEL_TYPE_MIX_AIC_1_1 = 4,
    KERNEL_TYPE_MIX_AIC_1_2 = 5,
};
enum AscendCoreType : int32_t { AIC = 1, AIV = 2 };

// ---- GlobalTensor -----------------------------------------------------------------
template <class T>
class GlobalTensor {
public:
    using PrimType = T;
    GlobalTensor() = default;
    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize = 0) {
        addr_ = buffer;
        size_ = bufferSize;
    }
    GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor r;
        r.addr_ = addr_ + offset;
        r.size_ = size_ > offset ? size_ - offset : 0;
        return r;
    }
    // Scalar GM accesses go through the core's data cache: a store publishes the scalar unit's
    // completed work; a load synchronises with it only right after DataCacheCleanAndInvalid
    // of its line (emu_xblock.h), the documented way to poll a GM flag written by another core.
    T GetValue(uint64_t i, const emu::Loc& loc = emu::Loc::current()) const {
        auto b = (uint64_t)(uintptr_t)(addr_ + i);
        const uint8_t cls = emu::xb_load_class(addr_ + i);
        emu::record("GetValue", emu::Pipe::S, {{emu::Mem::GM, b, b + sizeof(T), -1, cls}}, {}, {sizeof(T), 1}, loc);
        // Read, then acquire; SetValue publishes, then stores. So a load that sees another core's
        // store acquires what that core published (the other order let a poll see the flag
        // before its publication and report a race that a real flag protocol does not have).
        const T v = addr_[i];
        emu::xb_scalar_load(addr_ + i, sizeof(T), cls != 0, loc);
        return v;
    }
    void SetValue(uint64_t i, T v, const emu::Loc& loc = emu::Loc::current()) const {
        auto b = (uint64_t)(uintptr_t)(addr_ + i);
        emu::record("SetValue", emu::Pipe::S, {}, {{emu::Mem::GM, b, b + sizeof(T), -1, emu::CLS_SSTORE}}, {sizeof(T), 1}, loc);
        emu::xb_release(b, emu::PIPES_S, loc);
        addr_[i] = v;
        emu::xb_notify();  // wake pollers now that the value is there
    }
    uint64_t GetSize() const { return size_; }
    void SetSize(uint64_t n) { size_ = n; }
    __gm__ T* GetPhyAddr() const { return addr_; }
    __gm__ T* GetPhyAddr(uint64_t offset) const { return addr_ + offset; }
    template <class... A> void SetL2CacheHint(A...) {}
    // emulator hooks for ops
    T* emu_ptr() const { return addr_; }
    emu::Span emu_span(uint64_t count) const {
        auto b = (uint64_t)(uintptr_t)addr_;
        return {emu::Mem::GM, b, b + count * sizeof(T)};
    }
    emu::Span emu_span_bytes(uint64_t byte_off, uint64_t nbytes) const {
        auto b = (uint64_t)(uintptr_t)addr_ + byte_off;
        return {emu::Mem::GM, b, b + nbytes};
    }

private:
    T* addr_ = nullptr;
    uint64_t size_ = 0;
};

// ---- LocalTensor ------------------------------------------------------------------
// Sub-byte element types (fp4x2_e2m1_t / fp4x2_e1m2_t declare emu_elems_per_byte = 2): tensor
// offsets and sizes count 4-bit elements, as the official MX examples index them (LoadData_2D_MX).
}  // namespace AscendC
namespace emu {
template <class T, class = void> struct elems_per_byte { static constexpr uint64_t value = 1; };
template <class T> struct elems_per_byte<T, std::void_t<decltype(T::emu_elems_per_byte)>> {
    static constexpr uint64_t value = T::emu_elems_per_byte;
};
template <class T> constexpr uint64_t bytes_of(uint64_t n) { return n * sizeof(T) / elems_per_byte<T>::value; }
}  // namespace emu
namespace AscendC {
template <class T>
class LocalTensor {
public:
    using PrimType = T;
    LocalTensor() = default;
    LocalTensor(emu::Mem mem, uint32_t byte_off, uint32_t count, TPosition pos = TPosition::VECCALC)
        : mem_(mem), off_(byte_off), size_(count), pos_(pos) {}
    // Static tensor programming: a tensor at byte address `addr` of the memory of `pos`.
    LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize, const emu::Loc& loc = emu::Loc::current())
        : mem_(mem_of(pos)), off_(addr), size_(tileSize), pos_(pos) {
        emu::note_alloc(mem_, addr, addr + emu::bytes_of<T>(tileSize), loc);
    }
    LocalTensor operator[](uint32_t offset) const {
        return LocalTensor(mem_, off_ + (uint32_t)emu::bytes_of<T>(offset), size_ > offset ? size_ - offset : 0, pos_);
    }
    T GetValue(uint32_t i, const emu::Loc& loc = emu::Loc::current()) const {
        uint64_t b = off_ + (uint64_t)i * sizeof(T);
        emu::record("GetValue", emu::Pipe::S, {{mem_, b, b + sizeof(T)}}, {}, {sizeof(T), 1}, loc);
        return emu_ptr()[i];
    }
    void SetValue(uint32_t i, T v, const emu::Loc& loc = emu::Loc::current()) const {
        uint64_t b = off_ + (uint64_t)i * sizeof(T);
        emu::record("SetValue", emu::Pipe::S, {}, {{mem_, b, b + sizeof(T)}}, {sizeof(T), 1}, loc);
        emu_ptr()[i] = v;
    }
    uint32_t GetSize() const { return size_; }
    void SetSize(uint32_t n) { size_ = n; }
    uint64_t GetPhyAddr() const { return off_; }
    uint64_t GetPhyAddr(uint32_t offset) const { return off_ + emu::bytes_of<T>(offset); }
    TPosition GetPosition() const { return pos_; }
    int32_t GetLength() const { return (int32_t)emu::bytes_of<T>(size_); }
    template <class U> LocalTensor<U> ReinterpretCast() const {
        return LocalTensor<U>(mem_, off_, (uint32_t)(emu::bytes_of<T>(size_) * emu::elems_per_byte<U>::value / sizeof(U)), pos_);
    }
    // emulator hooks for ops
    T* emu_ptr() const { return reinterpret_cast<T*>(emu::mem_base(mem_) + off_); }
    emu::Mem emu_mem() const { return mem_; }
    uint64_t emu_offset() const { return off_; }
    emu::Span emu_span(uint64_t count) const { return {mem_, off_, off_ + emu::bytes_of<T>(count)}; }
    emu::Span emu_span_bytes(uint64_t byte_off, uint64_t nbytes) const {
        return {mem_, off_ + byte_off, off_ + byte_off + nbytes};
    }

private:
    emu::Mem mem_ = emu::Mem::UB;
    uint32_t off_ = 0;
    uint32_t size_ = 0;
    TPosition pos_ = TPosition::VECCALC;
};

// ---- TBufPool state (TBufPool and the custom pools of EXTERN_IMPL_BUFPOOL) -----------------
// A pool is a byte range [start, start + len) of one memory, split by InitBuffer / InitBufPool
// from `cur` on; `ids` is the bufIDSize (blocks it may hand out), `used` the blocks handed out.
// It remembers its queues, so Reset can wait for their pending FreeTensor events
// (TBufPool/Reset page: "ends the events the pool is processing").
}  // namespace AscendC
namespace emu {
struct PoolState {
    struct Que { void* obj; size_t bytes; void (*reset)(void*); };
    Mem mem = Mem::UB;
    uint32_t start = 0, len = 0, cur = 0, ids = 4, used = 0;
    bool inited = false;
    std::vector<Que> ques;
    void init(Mem m, uint32_t s, uint32_t l, const Loc& loc) {
        if (inited) fail("invalid_param", "TBufPool initialised twice (TPipe::InitBufPool / TBufPool::InitBufPool)", loc);
        mem = m; start = s; len = l; cur = s; used = 0; inited = true;
    }
    void need_init(const char* what, const Loc& loc) const {
        if (!inited)
            fail("invalid_param", std::string(what) + ": the pool was never initialised (TPipe::InitBufPool or TBufPool::InitBufPool first)", loc);
    }
    // a block [addr, addr + n) handed to a queue or TBuf must lie in the pool, in its memory
    void check_block(Mem m, uint64_t addr, uint64_t n, const char* what, const Loc& loc) const {
        need_init(what, loc);
        if (m != mem) fail("invalid_param", std::string(what) + ": the buffer's memory differs from the pool's (TBufPool/InitBuffer page: they must agree)", loc);
        if (addr < start || addr + n > (uint64_t)start + len)
            fail("invalid_param", std::string(what) + ": block [" + std::to_string(addr) + ", " + std::to_string(addr + n) +
                                      ") lies outside the pool [" + std::to_string(start) + ", " + std::to_string(start + len) + ")", loc);
    }
    // take n bytes (32-byte aligned) at cur
    uint32_t take(uint64_t n, const char* what, const Loc& loc) {
        need_init(what, loc);
        uint64_t b = (uint64_t)cur, e = b + (n + 31) / 32 * 32;
        if (e > (uint64_t)start + len)
            fail("invalid_param", std::string(what) + ": " + std::to_string(n) + " bytes do not fit in the pool (" +
                                      std::to_string(start + len - cur) + " of " + std::to_string(len) + " bytes left)", loc);
        cur = (uint32_t)e;
        return (uint32_t)b;
    }
    void count_blocks(uint32_t n, const char* what, const Loc& loc) {
        if (used + n > ids)
            fail("invalid_param", std::string(what) + ": the pool hands out at most bufIDSize = " + std::to_string(ids) +
                                      " buffers (TBufPool constructor page); raise bufIDSize (up to 16)", loc);
        used += n;
    }
    void add_queue(void* obj, size_t bytes, void (*reset)(void*)) {
        for (auto& q : ques)
            if (q.obj == obj) return;
        ques.push_back({obj, bytes, reset});
    }
    void drain(const char* what, const Loc& loc) {
        for (auto& q : ques) {
            queue_drain(q.obj, q.bytes, what, loc);
            q.reset(q.obj);
        }
    }
};
}  // namespace emu
namespace AscendC {

// ---- TPipe / TBuf -------------------------------------------------------------------
// TBufHandle (InitBufHandle page: "actually uint8_t*"): the emulator only passes it around.
using TBufHandle = uint8_t*;

template <TPosition pos = TPosition::VECCALC>
class TBuf {
public:
    template <class T> LocalTensor<T> Get() const {
        return LocalTensor<T>(mem_of(pos), off_, (uint32_t)(bytes_ * emu::elems_per_byte<T>::value / sizeof(T)), pos);
    }
    template <class T> LocalTensor<T> Get(uint32_t count, const emu::Loc& loc = emu::Loc::current()) const {
        if (emu::bytes_of<T>(count) > bytes_)
            emu::fail("invalid_param", "TBuf::Get<T>(count) asks for more bytes than the buffer holds", loc);
        return LocalTensor<T>(mem_of(pos), off_, count, pos);
    }
    template <class T>
    LocalTensor<T> GetWithOffset(uint32_t count, uint32_t byteOffset, const emu::Loc& loc = emu::Loc::current()) const {
        if ((uint64_t)byteOffset + emu::bytes_of<T>(count) > bytes_)
            emu::fail("invalid_param", "TBuf::GetWithOffset range exceeds the buffer", loc);
        return LocalTensor<T>(mem_of(pos), off_ + byteOffset, count, pos);
    }
    uint32_t emu_bytes() const { return bytes_; }
    uint32_t emu_offset() const { return off_; }
    void emu_set(uint32_t off, uint32_t bytes) {
        off_ = off;
        bytes_ = bytes;
    }
    // Custom TBufPool (InitBufHandle page: TBuf, like TQue, inherits it from TQueBind): a TBuf
    // has one block; its address and size come from InitBufHandle.
    void InitStartBufHandle(TBufHandle, uint8_t num, uint32_t len, const emu::Loc& loc = emu::Loc::current()) {
        if (num != 1) emu::fail("invalid_param", "TBuf::InitStartBufHandle: a TBuf has exactly one block (num = 1)", loc);
        bytes_ = len;
    }
    template <class P>
    void InitBufHandle(P* bufPool, uint32_t index, TBufHandle, uint32_t curPoolAddr, uint32_t len,
                       const emu::Loc& loc = emu::Loc::current()) {
        if (index != 0) emu::fail("invalid_param", "TBuf::InitBufHandle: a TBuf has one block, index must be 0", loc);
        if (bufPool) bufPool->emu_pool().check_block(mem_of(pos), curPoolAddr, len, "TBuf::InitBufHandle", loc);
        emu_set(curPoolAddr, len);
    }

private:
    uint32_t off_ = 0, bytes_ = 0;
};

// ---- TQue / TQueBind: queues with implicit synchronisation ----------------------------
// The TPipe/TQue framework's events (sync key-features page, tables 1 and 2; TQueBind page,
// table 1 for the data paths): EnQue sets producer -> consumer, DeQue waits for it;
// FreeTensor sets consumer -> producer, and AllocTensor of a reused buffer waits for it.
// Per data path (a TQue<pos> is the TQueBind of its path):
//   GM -> VECIN          TQue<VECIN>     UB   MTE2 -> V
//   VECOUT -> GM         TQue<VECOUT>    UB   V -> MTE3
//   VECIN -> VECOUT      (bind only)     UB   MTE2 -> MTE3
//   GM -> A1/B1/C1       TQue<A1/B1/C1>  L1   MTE2 -> MTE1
//   A1 -> A2, B1 -> B2   TQue<A2/B2>     L0A/L0B  MTE1 -> M
//   C1 -> C2             TQue<C2>        BT   MTE1 -> M
//   CO1 -> CO2           TQue<CO1>       L0C  M -> FIX
//   VECOUT -> A1/B1/C1   (bind only)     UB   V -> MTE3 (the UB -> L1 copy, dav-3510)
// Other paths (CO2 -> GM, CO2 -> VECIN, VECCALC) get no events. Every pair above is in the
// page's tables (AIV: MTE2<->V, V<->MTE3, MTE2<->MTE3; AIC: MTE2<->MTE1, MTE1<->M, M<->FIX).
struct QuePath {
    TPosition buf;     // where InitBuffer places the buffers
    int prod, cons;    // emu::Pipe values, -1: no events
};
constexpr QuePath que_path(TPosition src, TPosition dst) {
    using P = TPosition;
    constexpr int MTE2 = (int)emu::Pipe::MTE2, MTE1 = (int)emu::Pipe::MTE1, MTE3 = (int)emu::Pipe::MTE3;
    constexpr int V = (int)emu::Pipe::V, M = (int)emu::Pipe::M, FIX = (int)emu::Pipe::FIX;
    if (src == P::GM) src = dst;  // GM -> X is TQue<X>
    if (dst == P::GM) dst = src;  // X -> GM is TQue<X>
    auto l1 = [](P p) { return p == P::A1 || p == P::B1 || p == P::C1; };
    if (src == P::VECIN && dst == P::VECIN) return {P::VECIN, MTE2, V};
    if (src == P::VECOUT && dst == P::VECOUT) return {P::VECOUT, V, MTE3};
    if (src == P::VECIN && dst == P::VECOUT) return {P::VECIN, MTE2, MTE3};
    if (src == P::VECOUT && l1(dst)) return {P::VECOUT, V, MTE3};
    if (l1(src) && dst == src) return {src, MTE2, MTE1};
    if ((src == P::A1 && dst == P::A2) || (src == P::A2 && dst == P::A2)) return {P::A2, MTE1, M};
    if ((src == P::B1 && dst == P::B2) || (src == P::B2 && dst == P::B2)) return {P::B2, MTE1, M};
    if ((src == P::C1 && dst == P::C2) || (src == P::C2 && dst == P::C2)) return {P::C2, MTE1, M};
    if (src == P::CO1 && (dst == P::CO1 || dst == P::CO2)) return {P::CO1, M, FIX};
    return {src == P::GM ? dst : src, -1, -1};
}

template <TPosition src, TPosition dst, int32_t depth = 1, auto... cfg>
class TQueBind {
public:
    static constexpr int kMax = 32;
    TQueBind() = default;
    TQueBind(const TQueBind&) = delete;
    TQueBind& operator=(const TQueBind&) = delete;
    ~TQueBind() { emu::queue_forget(this, sizeof(*this)); }
    static constexpr QuePath kPath = que_path(src, dst);
    template <class T> LocalTensor<T> AllocTensor(const emu::Loc& loc = emu::Loc::current()) {
        check_init(loc);
        int i = (int)(allocs_ % num_);
        if (allocs_ >= num_ && sync()) emu::queue_wait(cons(), prod(), &free_key_[i], "AllocTensor", loc);
        ++allocs_;
        return LocalTensor<T>(mem_of(kPath.buf), addr_[i], elems<T>(), kPath.buf);
    }
    template <class T> bool EnQue(const LocalTensor<T>& t, const emu::Loc& loc = emu::Loc::current()) {
        int i = index_of(t.emu_offset(), "EnQue", loc);
        if (count_ >= num_) emu::fail("invalid_param", "TQue::EnQue: the queue is full", loc);
        if (sync()) emu::queue_signal(prod(), cons(), &data_key_[i], "EnQue", loc);
        fifo_[(head_ + count_) % kMax] = i;
        ++count_;
        return true;
    }
    template <class T> LocalTensor<T> DeQue(const emu::Loc& loc = emu::Loc::current()) {
        if (count_ == 0) emu::fail("invalid_param", "TQue::DeQue on an empty queue (no EnQue before it; would hang)", loc);
        int i = fifo_[head_];
        head_ = (head_ + 1) % kMax;
        --count_;
        if (sync()) emu::queue_wait(prod(), cons(), &data_key_[i], "DeQue", loc);
        return LocalTensor<T>(mem_of(kPath.buf), addr_[i], elems<T>(), kPath.buf);
    }
    template <class T> void FreeTensor(const LocalTensor<T>& t, const emu::Loc& loc = emu::Loc::current()) {
        int i = index_of(t.emu_offset(), "FreeTensor", loc);
        if (sync()) emu::queue_signal(cons(), prod(), &free_key_[i], "FreeTensor", loc);
    }
    bool VacantInQue() const { return count_ < num_; }
    bool HasTensorInQue() const { return count_ > 0; }
    int32_t GetTensorCountInQue() const { return (int32_t)count_; }
    void emu_init(uint32_t off, uint32_t num, uint32_t len, uint32_t stride, const emu::Loc& loc) {
        if (num == 0 || num > kMax) emu::fail("invalid_param", "TPipe::InitBuffer(queue): num must be 1..32", loc);
        num_ = num;
        len_ = len;
        for (uint32_t i = 0; i < num; ++i) addr_[i] = off + i * stride;
    }
    // Custom TBufPool (InitBufHandle page): InitStartBufHandle gives the block count and size,
    // then InitBufHandle places each block (blocks need not be contiguous).
    void InitStartBufHandle(TBufHandle, uint8_t num, uint32_t len, const emu::Loc& loc = emu::Loc::current()) {
        if (num == 0 || num > kMax) emu::fail("invalid_param", "TQue::InitStartBufHandle: num must be 1..32", loc);
        num_ = num;
        len_ = len;
        for (uint32_t i = 0; i < num; ++i) addr_[i] = kUnset;
        emu_pool_reset(this);
    }
    template <class P>
    void InitBufHandle(P* bufPool, uint32_t index, TBufHandle, uint32_t curPoolAddr, uint32_t len,
                       const emu::Loc& loc = emu::Loc::current()) {
        if (index >= num_)
            emu::fail("invalid_param", "TQue::InitBufHandle: index " + std::to_string(index) + " is not below the num given to InitStartBufHandle (" +
                                           std::to_string(num_) + ")", loc);
        if (bufPool) {
            bufPool->emu_pool().check_block(mem_of(kPath.buf), curPoolAddr, len, "TQue::InitBufHandle", loc);
            bufPool->emu_pool().add_queue(this, sizeof(*this), &TQueBind::emu_pool_reset);
        }
        addr_[index] = curPoolAddr;
    }
    // TBufPool::Reset: the pool waited for the queue's pending events; its buffers start afresh.
    static void emu_pool_reset(void* q) {
        auto* self = static_cast<TQueBind*>(q);
        self->allocs_ = 0;
        self->head_ = self->count_ = 0;
    }
    static constexpr emu::Mem emu_mem() { return mem_of(kPath.buf); }

private:
    static constexpr bool sync() { return kPath.prod >= 0 && kPath.cons >= 0; }
    static constexpr emu::Pipe prod() { return (emu::Pipe)kPath.prod; }
    static constexpr emu::Pipe cons() { return (emu::Pipe)kPath.cons; }
    static constexpr uint32_t kUnset = 0xffffffffu;
    template <class T> uint32_t elems() const { return (uint32_t)((uint64_t)len_ * emu::elems_per_byte<T>::value / sizeof(T)); }
    void check_init(const emu::Loc& loc) const {
        if (num_ == 0) emu::fail("invalid_param", "TQue used before TPipe::InitBuffer", loc);
        for (uint32_t i = 0; i < num_; ++i)
            if (addr_[i] == kUnset)
                emu::fail("invalid_param", "TQue: block " + std::to_string(i) + " was never placed with InitBufHandle", loc);
    }
    int index_of(uint64_t off, const char* what, const emu::Loc& loc) const {
        check_init(loc);
        for (uint32_t i = 0; i < num_; ++i)
            if (addr_[i] == off) return (int)i;
        emu::fail("invalid_param", std::string("TQue::") + what + ": tensor is not a buffer of this queue", loc);
    }
    uint32_t num_ = 0, len_ = 0;
    uint32_t addr_[kMax] = {};
    uint64_t allocs_ = 0;
    uint32_t head_ = 0, count_ = 0;
    int fifo_[kMax] = {};
    char data_key_[kMax] = {};
    char free_key_[kMax] = {};
};
template <TPosition pos, int32_t depth = 1, auto... cfg>
using TQue = TQueBind<pos, pos, depth, cfg...>;

class TPipe;
namespace emu_detail {
TPipe*& current_pipe();
}

class TPipe {
public:
    // Only one TPipe may exist at a time; a further one needs Destroy() on the previous first
    // (TPipe constructor page: otherwise hangs or random behaviour).
    TPipe(const emu::Loc& loc = emu::Loc::current()) : line_(loc.line()) {
        TPipe* prev = emu_detail::current_pipe();
        if (prev && !prev->destroyed_)
            emu::fail("invalid_param",
                      "a second TPipe while the TPipe constructed at line " + std::to_string(prev->line_) +
                          " is alive and not destroyed: only one TPipe may exist at a time; call Destroy() on the first",
                      loc);
        emu_detail::current_pipe() = this;
    }
    ~TPipe() {
        if (emu_detail::current_pipe() == this) emu_detail::current_pipe() = nullptr;
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;
    template <TPosition pos>
    bool InitBuffer(TBuf<pos>& buf, uint32_t bytes, const emu::Loc& loc = emu::Loc::current()) {
        constexpr emu::Mem m = mem_of(pos);
        uint64_t a = align_of(m);
        uint64_t start = (used_[(int)m] + a - 1) / a * a;
        uint64_t cap = emu::mem_size(m);
        if (start + bytes > cap) emu::note_capacity(m, start, bytes, detail_[(int)m].c_str(), loc);
        buf.emu_set((uint32_t)start, bytes);
        emu::note_alloc(m, start, start + bytes, loc);
        used_[(int)m] = start + bytes;
        detail_[(int)m] += std::to_string(bytes) + " B at line " + std::to_string(loc.line()) + "; ";
        return true;
    }
    template <TPosition src, TPosition dst, int32_t depth, auto... cfg>
    bool InitBuffer(TQueBind<src, dst, depth, cfg...>& que, uint8_t num, uint32_t len,
                    const emu::Loc& loc = emu::Loc::current()) {
        constexpr emu::Mem m = mem_of(TQueBind<src, dst, depth, cfg...>::kPath.buf);
        uint64_t a = align_of(m);
        uint64_t stride = ((uint64_t)len + a - 1) / a * a;
        uint64_t start = (used_[(int)m] + a - 1) / a * a;
        uint64_t bytes = stride * num;
        if (start + bytes > emu::mem_size(m)) emu::note_capacity(m, start, bytes, detail_[(int)m].c_str(), loc);
        que.emu_init((uint32_t)start, num, len, (uint32_t)stride, loc);
        emu::note_alloc(m, start, start + bytes, loc);
        used_[(int)m] = start + bytes;
        detail_[(int)m] += "queue " + std::to_string(num) + " x " + std::to_string(len) + " B at line " +
                           std::to_string(loc.line()) + "; ";
        return true;
    }
    // TPipe::InitBufPool page: a pool of `len` bytes (rounded up to 32) taken from the pipe's
    // memory of the pool's position; with `shareBuf`, the same start and at most its length.
    template <class T>
    bool InitBufPool(T& bufPool, uint32_t len, const emu::Loc& loc = emu::Loc::current()) {
        constexpr emu::Mem m = mem_of(T::emu_pool_pos);
        uint64_t a = align_of(m);
        uint64_t start = (used_[(int)m] + a - 1) / a * a;
        uint64_t bytes = ((uint64_t)len + 31) / 32 * 32;
        if (start + bytes > emu::mem_size(m)) emu::note_capacity(m, start, bytes, detail_[(int)m].c_str(), loc);
        bufPool.emu_pool().init(m, (uint32_t)start, (uint32_t)bytes, loc);
        emu::note_alloc(m, start, start + bytes, loc);
        used_[(int)m] = start + bytes;
        detail_[(int)m] += "TBufPool " + std::to_string(bytes) + " B at line " + std::to_string(loc.line()) + "; ";
        return true;
    }
    template <class T, class U>
    bool InitBufPool(T& bufPool, uint32_t len, U& shareBuf, const emu::Loc& loc = emu::Loc::current()) {
        emu::PoolState& sh = shareBuf.emu_pool();
        sh.need_init("TPipe::InitBufPool (shared)", loc);
        uint32_t bytes = (len + 31) / 32 * 32;
        if (mem_of(T::emu_pool_pos) != sh.mem)
            emu::fail("invalid_param", "TPipe::InitBufPool: a pool and the pool it shares must be in the same memory", loc);
        if (bytes > sh.len)
            emu::fail("invalid_param", "TPipe::InitBufPool: the shared pool's length (" + std::to_string(sh.len) +
                                           " B) is below the requested " + std::to_string(bytes) + " B", loc);
        bufPool.emu_pool().init(sh.mem, sh.start, bytes, loc);
        return true;
    }
    // Destroy ends with PipeBarrier<PIPE_ALL> (DestroyWithoutPipeAll page: "unlike Destroy, no
    // PIPE_ALL inside"); Reset waits for the pending FreeTensor events, then frees the memory.
    void Destroy(const emu::Loc& loc = emu::Loc::current()) {
        emu::pipe_barrier(PIPE_ALL, loc);
        Reset(loc);
        destroyed_ = true;
    }
    void DestroyWithoutPipeAll() {
        release();
        destroyed_ = true;
    }
    void Reset(const emu::Loc& loc = emu::Loc::current()) {
        emu::pipe_reset(loc);
        release();
    }
    // Event-id helpers of the documented TPipe interface (no queues in this emulator).
    int32_t FetchEventID(HardEvent e) const {
        uint8_t mask = busy_[slot(e)];
        for (int i = 0; i < 8; ++i)
            if (!(mask & (1u << i))) return i;
        return 0;
    }
    template <HardEvent e> int32_t FetchEventID() const { return FetchEventID(e); }
    template <HardEvent e> int32_t AllocEventID() {
        int32_t id = FetchEventID(e);
        busy_[slot(e)] |= (uint8_t)(1u << id);
        return id;
    }
    template <HardEvent e> void ReleaseEventID(int32_t id) { busy_[slot(e)] &= (uint8_t)~(1u << (id & 7)); }
    uint64_t emu_used(emu::Mem m) const { return used_[(int)m]; }

private:
    void release() {
        for (auto& u : used_) u = 0;
        for (auto& d : detail_) d.clear();
    }
    static int slot(HardEvent e) { return (int)((uint16_t)e % 128); }
    uint32_t line_ = 0;
    bool destroyed_ = false;
    uint64_t used_[emu::kNumMems] = {};
    std::string detail_[emu::kNumMems];
    uint8_t busy_[128] = {};
};

inline TPipe* GetTPipePtr() { return emu_detail::current_pipe(); }

// ---- TBufPool (资源管理/TBufPool/*.md) ------------------------------------------------------
// Splits a pool from TPipe::InitBufPool into queues, TBufs and sub-pools; pools that share a
// start address reuse memory between stages. Reset waits for the pending FreeTensor events of
// the pool's queues (the framework's syncs for the reuse) and keeps the buffers allocated.
template <TPosition pos, uint32_t bufIDSize = 4>
class TBufPool {
public:
    static_assert(bufIDSize >= 1 && bufIDSize <= 16, "TBufPool: bufIDSize is 1..16 (TBufPool constructor page)");
    static constexpr TPosition poolPos = pos;
    static constexpr TPosition emu_pool_pos = pos;
    TBufPool() { st_.ids = bufIDSize; }
    TBufPool(const TBufPool&) = delete;
    TBufPool& operator=(const TBufPool&) = delete;
    template <class T>
    bool InitBuffer(T& que, uint8_t num, uint32_t len, const emu::Loc& loc = emu::Loc::current()) {
        if (st_.mem != T::emu_mem() && st_.inited)
            emu::fail("invalid_param", "TBufPool::InitBuffer: the queue's memory differs from the pool's", loc);
        st_.count_blocks(num, "TBufPool::InitBuffer", loc);
        uint32_t stride = (len + 31) / 32 * 32;
        uint32_t at = st_.take((uint64_t)stride * num, "TBufPool::InitBuffer", loc);
        que.emu_init(at, num, len, stride, loc);
        st_.add_queue(&que, sizeof(que), &T::emu_pool_reset);
        return true;
    }
    template <TPosition bufPos>
    bool InitBuffer(TBuf<bufPos>& buf, uint32_t len, const emu::Loc& loc = emu::Loc::current()) {
        if (st_.inited && st_.mem != mem_of(bufPos))
            emu::fail("invalid_param", "TBufPool::InitBuffer: the TBuf's memory differs from the pool's", loc);
        st_.count_blocks(1, "TBufPool::InitBuffer", loc);
        buf.emu_set(st_.take(len, "TBufPool::InitBuffer", loc), len);
        return true;
    }
    template <class T>
    bool InitBufPool(T& bufPool, uint32_t len, const emu::Loc& loc = emu::Loc::current()) {
        emu::PoolState& sub = bufPool.emu_pool();
        if (mem_of(T::emu_pool_pos) != st_.mem)
            emu::fail("invalid_param", "TBufPool::InitBufPool: a sub-pool must be in the pool's memory", loc);
        if (sub.ids > st_.ids - st_.used)
            emu::fail("invalid_param", "TBufPool::InitBufPool: the sub-pool's bufIDSize exceeds the buffers this pool has left (TBufPool constructor page)", loc);
        uint32_t at = st_.take(len, "TBufPool::InitBufPool", loc);
        sub.init(st_.mem, at, (len + 31) / 32 * 32, loc);
        return true;
    }
    template <class T, class U>
    bool InitBufPool(T& bufPool, uint32_t len, U& shareBuf, const emu::Loc& loc = emu::Loc::current()) {
        emu::PoolState& sub = bufPool.emu_pool();
        emu::PoolState& sh = shareBuf.emu_pool();
        sh.need_init("TBufPool::InitBufPool (shared)", loc);
        uint32_t bytes = (len + 31) / 32 * 32;
        if (mem_of(T::emu_pool_pos) != sh.mem || sh.mem != st_.mem)
            emu::fail("invalid_param", "TBufPool::InitBufPool: a pool and the pool it shares must be in the same memory", loc);
        if (bytes > sh.len)
            emu::fail("invalid_param", "TBufPool::InitBufPool: the shared pool's length (" + std::to_string(sh.len) +
                                           " B) is below the requested " + std::to_string(bytes) + " B", loc);
        if (sub.ids > st_.ids)
            emu::fail("invalid_param", "TBufPool::InitBufPool: the sub-pool's bufIDSize exceeds this pool's (TBufPool constructor page)", loc);
        sub.init(sh.mem, sh.start, bytes, loc);
        return true;
    }
    void Reset(const emu::Loc& loc = emu::Loc::current()) { st_.drain("TBufPool::Reset", loc); }
    emu::PoolState& emu_pool() { return st_; }

private:
    emu::PoolState st_;
};

}  // namespace AscendC
// EXTERN_IMPL_BUFPOOL (自定义TBufPool/EXTERN_IMPL_BUFPOOL宏.md): the members a custom pool class
// gets: Reset, Init, GetBufHandle, SetCurAddr, GetCurAddr, SetCurBufSize, GetCurBufSize. The
// class's own InitBuffer places blocks with InitStartBufHandle / InitBufHandle. Reset waits for
// the pending events of its queues and frees the pool (its buffers may not be used afterwards).
#define EXTERN_IMPL_BUFPOOL(EXT_BUFPOOL, POSITION, BUFID_SIZE)                                                \
public:                                                                                                    \
    static constexpr ::AscendC::TPosition emu_pool_pos = POSITION;                                         \
    ::emu::PoolState& emu_pool() { return emu_pool_state_; }                                               \
    void Init() { emu_pool_state_.used = 0; }                                                              \
    void Reset(const ::emu::Loc& emu_loc = ::emu::Loc::current()) {                                        \
        emu_pool_state_.drain(#EXT_BUFPOOL "::Reset", emu_loc);                                            \
        emu_pool_state_.cur = emu_pool_state_.start;                                                       \
        emu_pool_state_.used = 0;                                                                          \
    }                                                                                                      \
    ::AscendC::TBufHandle GetBufHandle(uint8_t offset, const ::emu::Loc& emu_loc = ::emu::Loc::current()) { \
        if (offset >= (BUFID_SIZE))                                                                        \
            ::emu::fail("invalid_param", #EXT_BUFPOOL "::GetBufHandle: offset beyond BUFID_SIZE", emu_loc); \
        return &emu_handles_[offset];                                                                      \
    }                                                                                                      \
    uint32_t GetCurAddr() const { return emu_pool_state_.cur; }                                            \
    void SetCurAddr(uint32_t curAddr) { emu_pool_state_.cur = curAddr; }                                   \
    uint8_t GetCurBufSize() const { return (uint8_t)emu_pool_state_.used; }                                \
    void SetCurBufSize(uint8_t curBufSize) { emu_pool_state_.used = curBufSize; }                          \
    ::emu::PoolState emu_pool_state_{.ids = (BUFID_SIZE)};                                                 \
    uint8_t emu_handles_[(BUFID_SIZE) > 0 ? (BUFID_SIZE) : 1] = {}
namespace AscendC {

// ---- synchronisation ----------------------------------------------------------------
template <HardEvent e>
inline void SetFlag(int32_t id, const emu::Loc& loc = emu::Loc::current()) {
    emu::set_flag((emu::Pipe)((uint16_t)e / 16), (emu::Pipe)((uint16_t)e % 16), id, loc);
}
template <HardEvent e>
inline void WaitFlag(int32_t id, const emu::Loc& loc = emu::Loc::current()) {
    emu::wait_flag((emu::Pipe)((uint16_t)e / 16), (emu::Pipe)((uint16_t)e % 16), id, loc);
}
template <pipe_t p>
inline void PipeBarrier(const emu::Loc& loc = emu::Loc::current()) {
    emu::pipe_barrier((int)p, loc);
}
template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId, const emu::Loc& loc = emu::Loc::current()) {
    emu::cross_set(modeId, (int)pipe, flagId, loc);
}
// CrossCoreWaitFlag page: on the 950 the wait blocks the named pipe; on A2/A3 (dav-c220) the
// hardware takes no pipe (the template argument has no effect) and the wait blocks every pipe.
template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId, const emu::Loc& loc = emu::Loc::current()) {
#if defined(EMU_ARCH_3510)
    emu::cross_wait(modeId, (int)pipe, flagId, loc);
#else
    emu::cross_wait(modeId, (int)PIPE_ALL, flagId, loc);
#endif
}
#if defined(EMU_ARCH_3510)
// SyncAll page: on dav-3510 the hardware form takes the pipes that trigger and wait.
struct SyncAllConfig {
    pipe_t triggerPipe;
    pipe_t waitPipe;
};
constexpr SyncAllConfig DEFAULT_SYNC_ALL_CONFIG = {PIPE_ALL, PIPE_ALL};
template <bool isAIVOnly = true, const SyncAllConfig& config = DEFAULT_SYNC_ALL_CONFIG>
inline void SyncAll(const emu::Loc& loc = emu::Loc::current()) {
    emu::sync_all_cfg(isAIVOnly, (int)config.triggerPipe, (int)config.waitPipe, loc);
}
#else
template <bool isAIVOnly = true>
inline void SyncAll(const emu::Loc& loc = emu::Loc::current()) {
    emu::sync_all(isAIVOnly, loc);
}
#endif
inline void SetSyncBaseAddr(uint64_t) {}

template <pipe_t src, pipe_t dst>
class TQueSync {
public:
    void SetFlag(int32_t id, const emu::Loc& loc = emu::Loc::current()) {
        emu::set_flag(emu::pipe_from_global(src), emu::pipe_from_global(dst), id, loc);
    }
    void WaitFlag(int32_t id, const emu::Loc& loc = emu::Loc::current()) {
        emu::wait_flag(emu::pipe_from_global(src), emu::pipe_from_global(dst), id, loc);
    }
};

// ---- queries ------------------------------------------------------------------------
inline int64_t GetBlockIdx() { return emu::block_idx(); }
inline int64_t GetBlockNum() { return emu::block_num(); }
inline int64_t GetSubBlockIdx() { return emu::sub_block_idx(); }
inline int64_t GetTaskRation() { return emu::task_ration(); }
inline int64_t GetSubBlockNum() { return emu::task_ration(); }
using ::printf;  // AscendC::printf / PRINTF print from the core (stdout of the run)

}  // namespace AscendC

#define KERNEL_TASK_TYPE_DEFAULT(t) ::emu::check_kernel_type((int)(t), ::emu::Loc::current())
#define PRINTF printf
#define ASCEND_IS_AIC (::emu::core_kind() == ::emu::CoreKind::AIC)
#define ASCEND_IS_AIV (::emu::core_kind() == ::emu::CoreKind::AIV)
#define ASCEND_IS_NOT_AIC (!ASCEND_IS_AIC)
#define ASCEND_IS_NOT_AIV (!ASCEND_IS_AIV)
#define g_coreType (ASCEND_IS_AIC ? ::AscendC::AIC : ::AscendC::AIV)

// Bring the kernel-type names into the global namespace too (kernels use them unqualified
// inside KERNEL_TASK_TYPE_DEFAULT before `using namespace AscendC;` sometimes).
using AscendC::KERNEL_TYPE_AIV_ONLY;
using AscendC::KERNEL_TYPE_AIC_ONLY;
using AscendC::KERNEL_TYPE_MIX_AIV_1_0;
using AscendC::KERNEL_TYPE_MIX_AIC_1_0;
using AscendC::KERNEL_TYPE_MIX_AIC_1_1;
using AscendC::KERNEL_TYPE_MIX_AIC_1_2;
