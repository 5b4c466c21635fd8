// emu_runtime.cpp: runtime of the Ascend C CPU emulator (clean-room).
//
// One run = one kernel launch. Every AIC / AIV of every block is a std::thread; at most
// `pool` of them run at once (a slot scheduler), the others wait for a slot. A thread gives
// its slot up while it is blocked on a cross-core wait, so every block's cores make
// progress and all-core barriers (mode 0, SyncAll) work with any block count.
//
// Happens-before: vector clocks with one component per (core slot, pipe) of a block
// (3 cores x 7 pipes). Access histories are interval maps per memory; GM has one history
// shared by all blocks (different blocks are unordered except through mode-0 barriers).
//
// The kernel runs either in-process or in a forked child (the default from Python), so a
// wild pointer in kernel code cannot take the Python process down.
#include "emu_types.h"
#include "emu_core.h"
#include "emu_simt.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace emu {
namespace {

constexpr int kSlots = 3;  // cores per block: AIC + 2 AIV at most
constexpr int kDim = kSlots * kNumPipes;
using VC = std::array<uint32_t, kDim>;

inline void join(VC& a, const VC& b) {
    for (int i = 0; i < kDim; ++i) a[i] = std::max(a[i], b[i]);
}

struct Abort {};   // unwinds a core thread after another thread stopped the run
struct Fault {};   // unwinds the core thread that hit a kernel error

const char* const kPipeNames[kNumPipes] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
const char* const kMemNames[kNumMems] = {"GM", "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"};

uint64_t arch_mem_size(Mem m) {
    switch (m) {
        // c220: the physical 192 KB (the official tbufpool_management example, built for
        // dav-2201 with default options, gives TPipe all of it; the 8 KB the API reserves are
        // only used by Select-class APIs, static-Tensor guide); 3510: 248 KB usable.
        case Mem::UB: return is_c220() ? 192 * 1024 : 248 * 1024;
        case Mem::L1: return 512 * 1024;
        case Mem::L0A: return 64 * 1024;
        case Mem::L0B: return 64 * 1024;
        case Mem::L0C: return is_c220() ? 128 * 1024 : 256 * 1024;
        case Mem::BT: return is_c220() ? 1024 : 4096;
        case Mem::FB: return is_c220() ? 2048 : 4096;
        default: return 0;
    }
}
bool mem_on(CoreKind k, Mem m) {
    if (m == Mem::GM) return true;
    if (k == CoreKind::AIV) return m == Mem::UB;
    return m != Mem::UB;
}
bool pipe_on(CoreKind k, Pipe p) {
    if (p == Pipe::S || p == Pipe::MTE2) return true;
    if (k == CoreKind::AIV) return p == Pipe::V || p == Pipe::MTE3;
    // dav-c220's AIC also has MTE3: L1 -> GM DataCopy (DataCopy L1ToGM page, FIX_MTE3 events)
    return p == Pipe::M || p == Pipe::MTE1 || p == Pipe::FIX || (p == Pipe::MTE3 && is_c220());
}
bool pipe_in_order(Pipe p) { return !(is_c220() && p == Pipe::V); }
// Pipes whose own clock component counts only ops known complete (raised by PipeBarrier,
// PIPE_ALL and flag joins) instead of every issued op: c220's V (dependent vector ops need
// PipeBarrier<PIPE_V>) and MTE2/MTE3, whose writes to overlapping bytes need
// PipeBarrier<PIPE_MTE2/MTE3> (PipeBarrier(ISASI) page). MTE2/MTE3 reads and other access
// pairs of those pipes stay in program order (see ordered()).
bool own_clock_is_completion(Pipe p) { return !pipe_in_order(p) || p == Pipe::MTE2 || p == Pipe::MTE3; }

// ---- access history ---------------------------------------------------------------
struct Acc {
    const char* name;
    const char* file;
    uint32_t line;
    int32_t gt;      // global thread index
    int32_t block;
    uint8_t tid;     // slot * 7 + pipe
    uint8_t kind;    // CoreKind
    uint32_t epoch;
    uint32_t setgen, waitgen;  // mode-0 barrier generations (cross-block order)
    uint8_t cls;               // access class (emu::CLS_*): same-class pairs never race
    bool auto_ok;    // an S access bisheng's auto-sync covers (GetValue, LocalTensor::SetValue, ...)
};
struct Seg {
    uint64_t end;
    bool has_w = false;
    Acc w{};
    std::vector<Acc> reads;
};
struct History {
    std::mutex mu;
    std::map<uint64_t, Seg> m;
};

// ---- trace ----------------------------------------------------------------------
enum RecKind : uint8_t { R_OP = 0, R_SET = 1, R_WAIT = 2, R_BARRIER = 3, R_XSET = 4, R_XWAIT = 5 };
struct OpRec {
    const char* name;
    uint32_t line;
    uint8_t kind, pipe, src, dst;
    uint64_t bytes, elems, macs;
    uint32_t repeats;
    uint32_t dep_off, dep_n;
};
struct Dep {
    int32_t gt;
    uint32_t idx;
};

struct FlagSlot {
    bool set = false;
    VC clk{};
    uint32_t idx = 0;
    uint32_t line = 0;
    uint8_t dst = 0;     // TQue events: the waiting pipe
    bool free = false;   // TQue events: a FreeTensor signal (TPipe::Reset waits for these)
};
struct Token {
    VC clk{};
    int block = -1;
    uint32_t round0 = 0;
    std::vector<Dep> refs;
    std::shared_ptr<const std::vector<VC>> xk;  // the setter's knowledge of other blocks (if any)
};

// Releases published on one GM word: per releasing block, the join of the released clocks.
struct XTok {
    std::vector<std::pair<int32_t, VC>> per_block;
    void add(int32_t b, const VC& v) {
        for (auto& [bb, vv] : per_block)
            if (bb == b) { join(vv, v); return; }
        per_block.emplace_back(b, v);
    }
};
// One 512-byte block of L0C under unit flags (UnitFlag page): its bit, and the op that last
// changed it (an Mmad with unitFlag 3 set it, a Fixpipe with unitFlag 3 cleared it): that op's
// pipe clock (what a later op waiting on the bit is ordered after) and trace index (timing).
struct UnitBlk {
    uint8_t bit = 0;
    bool has_clk = false;   // false: never changed, or cleared by a reset (nothing to order after)
    bool fresh = false;     // the release is not yet a dependency of an Mmad (timing: record it once)
    VC clk{};
    uint32_t idx = 0, line = 0;
};
struct MutexSlot {
    bool locked = false, has_unlock = false;
    int8_t lock_pipe = -1, unlock_pipe = -1;
    VC clk{};
    uint32_t idx = 0, line = 0;
};
constexpr int kPollTable = 8;
struct PollEntry { uint64_t addr = 0; uint32_t bytes = 0; uint8_t val[8] = {}; };

enum State : uint8_t { READY, RUNNING, BLOCKED, DONE };

// An unordered write-write pair of different cores (docs/emulator-internals.md, "Identical
// writes"): the earlier write's bytes, compared with the memory after the later write's effect.
struct WwPending {
    Acc a, b;
    Mem mem;
    uint64_t lo, hi;
    const struct Core* owner;
    uint8_t* ptr;                 // the bytes [lo, hi) in host memory
    std::vector<uint8_t> before;  // the earlier write's data
};

// The scalar unit's data cache, for the timing model only (docs/timing-model.md, "Scalar data
// cache"): which 64-byte GM lines this core's cached scalar accesses (GetValue/SetValue, tiling,
// ListTensorDesc) would find resident. 64-byte lines, write-allocate and one DCache per AIC/AIV
// are documented; the capacity (`dcache_lines` from the config, the timing table's
// scalar_dcache_lines) and full associativity with LRU replacement are assumed. Values are not
// affected: every access still reads and writes GM directly.
struct DCacheModel {
    size_t cap = 256;
    std::list<uint64_t> lru;  // most recently used first
    std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where;
    // Touches line `l` (most recently used); true when it was resident.
    bool touch(uint64_t l) {
        auto it = where.find(l);
        if (it != where.end()) {
            lru.splice(lru.begin(), lru, it->second);
            return true;
        }
        if (cap == 0) return false;
        if (where.size() >= cap) {
            where.erase(lru.back());
            lru.pop_back();
        }
        lru.push_front(l);
        where.emplace(l, lru.begin());
        return false;
    }
    void invalidate(uint64_t l) {
        auto it = where.find(l);
        if (it == where.end()) return;
        lru.erase(it->second);
        where.erase(it);
    }
    void clear() {
        lru.clear();
        where.clear();
    }
};

struct Core {
    int gt = 0, block = 0, slot = 0, sub = 0;
    CoreKind kind = CoreKind::AIV;
    uint8_t* mem[kNumMems] = {};
    std::unique_ptr<History> hist[kNumMems];
    VC clk[kNumPipes]{};
    uint32_t cnt[kNumPipes]{};
    std::vector<FlagSlot> flags;  // event code (<128) x 8 ids
    std::map<const void*, FlagSlot> qflags;  // TQue implicit flags, keyed by address
    std::vector<FlagSlot> orphan_free;       // FreeTensor signals of destroyed queues, still pending
    std::vector<OpRec> trace;
    std::vector<Dep> deps;
    uint32_t x0_set = 0, x0_wait = 0;
    std::deque<Token> xq[32];
    // scheduler state (guarded by g.mu)
    State state = READY;
    int wait_id = -1, wait_mode = 0;
    uint32_t wait_line = 0;
    const char* wait_file = "";
    uint64_t ops = 0;
    std::unordered_map<const char*, uint64_t> op_names;  // op count per API name
    std::condition_variable cv;  // this thread sleeps here (slot grant, cross-core wait)
    // cross-block synchronisation (emu_xblock.h)
    std::vector<VC> xk;          // per block: that block's ops known complete (empty until a cross-block acquire)
    XbPred xb_pred = nullptr;    // while blocked in xb_wait
    const void* xb_arg = nullptr;
    const char* xb_what = "";
    PollEntry polls[kPollTable];  // spin-loop detection of scalar GM loads
    std::set<uint64_t> fresh_lines, loaded_since_all;  // DataCacheCleanAndInvalid state (64-byte lines)
    bool dcci_all = false;
    DCacheModel dcache;  // timing only: resident lines of this core's scalar data cache
    int poll_next = 0;
    uint32_t poll_streak = 0;
    uint64_t poll_ops = 0;
    uint64_t ctrl = is_3510() ? (1ull << 60) : 0;  // CTRL special register (defaults per the SetCtrlSpr page)
    std::map<int, MutexSlot> mtx;
    std::vector<UnitBlk> ublk;   // L0C unit flags (AIC; sized on first use)
    std::vector<Dep> op_deps;    // dependencies of the next op record (unit flags: the releasing op)
    uint32_t last_op_idx = 0;    // trace index of the latest op record
    // The op whose effect is being applied (recorded, next API call not yet made): tid << 32 |
    // epoch, 0 when none. Another core comparing data with it waits for the effect (ww_settle).
    std::atomic<uint64_t> busy{0};
    std::vector<WwPending> ww;  // unordered write-write pairs with another core, judged after this op's effect
    std::vector<WwPending> ww_new;  // found by the op being recorded (bytes not yet captured)
    // SIMT (src/emu_simt.cpp): the end of the highest allocation made in each memory
    // (TPipe, TBufPool, LocalMemAllocator, static tensors), and the __ubuf__ arrays of SIMT
    // functions, one UB offset per declaration (file, line, column)
    uint64_t alloc_high[kNumMems] = {};
    // set while the SIMT engine records a call after its effect: the bytes as they were before it
    std::function<void(Mem, uint64_t, uint64_t, uint8_t*)> pre_image;
    std::map<std::tuple<const char*, uint32_t, uint32_t>, uint64_t> simt_static;
    uint64_t simt_static_lo = ~0ull, simt_static_hi = 0;
    std::string name() const {
        if (kind == CoreKind::AIC) return "AIC";
        return "AIV" + std::to_string(sub);
    }
};

struct Region {
    uint64_t b, e;       // the emulator's guarded copy the kernel works on (see relocate_gm)
    std::string name;
    int arg = -1;        // kernel argument index
    uint64_t ob = 0;     // the caller's address of the argument
    std::atomic<bool> written{false};
    std::vector<uint64_t> read_blocks;  // bitmap of the 32 B blocks read so far (L2 model: first reads miss,
                                        // unless written before: see note_gm)
    std::vector<uint64_t> write_blocks;  // ... written so far (HBM floor: a rewritten block leaves L2 once)
    Region(uint64_t b_, uint64_t e_, std::string n) : b(b_), e(e_), name(std::move(n)) {}
};

struct LastOp {
    const char* name;
    const char* file;
    uint32_t line;
    int32_t block;
    int32_t core;  // 0 AIC, 1 AIV0, 2 AIV1
    int32_t active;
};

struct RaceKey {
    const char* n1; uint32_t l1; uint8_t p1; const char* n2; uint32_t l2; uint8_t p2; uint8_t mem; uint8_t kind;
    bool operator<(const RaceKey& o) const {
        return std::tie(l1, l2, p1, p2, mem, kind, n1, n2) < std::tie(o.l1, o.l2, o.p1, o.p2, o.mem, o.kind, o.n1, o.n2);
    }
};
struct RaceRec {
    Acc a, b;
    uint8_t mem, kind;
    int owner_block;
    std::string owner;
    uint64_t begin, end;
    uint64_t count;
};

struct Agg {  // pending sets of a mode-1/2 pair, per AIV sub-block
    std::deque<Token> q[2];
};
struct Agg0 {
    uint32_t count = 0;
    std::vector<VC> per_block;
    std::vector<char> has_block;
    std::vector<Dep> refs;
    std::vector<VC> xk;  // the setters' knowledge of other blocks (joined)
};

// One guarded copy of a group of GM arguments (overlapping views share one): PROT_NONE guard
// zones of kGuard bytes on both sides, data ending at (or just before) a page boundary.
struct GuardMap {
    uint8_t* base = nullptr;
    size_t len = 0;
    uint64_t data_b = 0, data_e = 0;  // the copy
    uint64_t ob = 0;                  // the caller's address of the group
    std::vector<int> regions;
};
constexpr size_t kGuard = 256ull << 20;

// What a SIGSEGV/SIGBUS in an isolated run hit (shared with the parent).
struct FaultInfo {
    volatile int set;
    int gt;
    uint64_t addr;
};

struct Global {
    // config
    int block_dim = 1, ktype = 0;
    bool checks = true, mode0_hint = false;
    bool auto_sync = true;  // model bisheng's --cce-auto-sync=on (docs/emulator.md)
    int pool = 2;
    uint64_t trace_cap = 1'000'000;  // trace records kept for the timing model, all cores together
    uint64_t dcache_lines = 256;     // capacity of each core's scalar data cache model (64-byte lines; assumed)
    std::atomic<uint64_t> trace_used{0};
    std::atomic<bool> trace_truncated{false};
    bool has_aic = false;
    int naiv = 1, per_block = 1;
    std::deque<Region> gm;
    std::vector<GuardMap> maps;
    std::string arch;
    void (*entry)(void**) = nullptr;
    void** args = nullptr;
    LastOp* last = nullptr;
    // state
    std::vector<std::unique_ptr<Core>> cores;
    History gm_hist;
    std::mutex mu;  // scheduler, cross-core flags, errors, races
    int free_slots = 2;
    std::set<int> ready;
    int running = 0, blocked = 0;
    std::atomic<bool> abort{false};
    bool mode0_seen = false;
    std::map<std::pair<int, int>, Agg> agg1, agg2;  // (block, id)
    std::map<std::pair<int, int>, Agg0> agg0;       // (group kind, id)
    uint32_t rounds0[3] = {0, 0, 0};
    // results
    std::vector<std::string> errors, flag_errors;
    std::map<RaceKey, RaceRec> races;
    uint64_t races_total = 0;
    std::string deadlock;  // JSON object or empty
    std::vector<std::string> simt_races;  // thread races of SIMT blocks (JSON, see emu_simt.cpp)
    std::map<std::string, double> simt_cfg;  // simt_* timing assumptions from the configuration
    std::mutex race_mu;
    // cross-block synchronisation (guarded by mu)
    std::map<uint64_t, XTok> xtok;
    std::map<uint64_t, int64_t> xcells;
    bool xb_seen = false;
    int xb_waiting = 0;
    std::mutex atomic_mu;
    // GM read traffic, for the timing model's L2 term: every byte read, and the distinct ones
    std::mutex reads_mu;
    uint64_t gm_read_bytes = 0, gm_read_unique_bytes = 0;
    uint64_t gm_write_bytes = 0, gm_write_unique_bytes = 0;  // the same for GM writes
};

Global* G = nullptr;
thread_local Core* tls = nullptr;

// ---- JSON helpers ---------------------------------------------------------------
std::string jstr(const std::string& s) {
    std::string r = "\"";
    for (char ch : s) {
        unsigned char c = (unsigned char)ch;
        if (c == '"') r += "\\\"";
        else if (c == '\\') r += "\\\\";
        else if (c == '\n') r += "\\n";
        else if (c < 0x20) {
            char b[8];
            snprintf(b, sizeof b, "\\u%04x", c);
            r += b;
        } else r += ch;
    }
    return r + "\"";
}
const char* base_name(const char* f) {
    const char* s = strrchr(f, '/');
    return s ? s + 1 : f;
}
std::string loc_json(const char* file, uint32_t line) {
    return "\"line\":" + std::to_string(line) + ",\"file\":" + jstr(base_name(file ? file : ""));
}
std::string core_json(const Core* c) {
    if (!c) return "\"block\":-1,\"core\":\"host\"";
    return "\"block\":" + std::to_string(c->block) + ",\"core\":" + jstr(c->name());
}

std::string gm_where(uint64_t b, uint64_t e) {
    for (auto& r : G->gm)
        if (b >= r.b && b < r.e)
            return "arg '" + r.name + "' bytes [" + std::to_string(b - r.b) + ", " + std::to_string(e - r.b) + ")";
    return "host address 0x" + [&] { char t[32]; snprintf(t, sizeof t, "%llx", (unsigned long long)b); return std::string(t); }();
}

void add_flag_error(const char* kind, const std::string& event, int id, const std::string& msg, const Loc& loc) {
    Core* c = tls;
    std::string j = "{\"kind\":" + jstr(kind) + ",\"event\":" + jstr(event) + ",\"id\":" + std::to_string(id) + "," +
                    loc_json(loc.file_name(), loc.line()) + "," + core_json(c) + ",\"message\":" + jstr(msg) + "}";
    std::lock_guard<std::mutex> lk(G->race_mu);
    if (G->flag_errors.size() < 200) G->flag_errors.push_back(j);
}

void wake_all_locked() {
    for (auto& c : G->cores) c->cv.notify_all();
}

void stop_all() {
    G->abort.store(true);
    std::lock_guard<std::mutex> lk(G->mu);
    wake_all_locked();
}

void add_error(const char* kind, const std::string& msg, const char* file, uint32_t line, const char* op) {
    Core* c = tls;
    std::string j = "{\"kind\":" + jstr(kind) + ",\"message\":" + jstr(msg) + "," + loc_json(file, line) + "," +
                    core_json(c) + ",\"op\":" + jstr(op ? op : "") + "}";
    {
        std::lock_guard<std::mutex> lk(G->race_mu);
        if (G->errors.size() < 50) G->errors.push_back(j);
    }
    stop_all();
}

[[noreturn]] void fail_op(const char* kind, const std::string& msg, const char* op, const Loc& loc) {
    if (G->abort.load()) throw Abort{};
    add_error(kind, msg, loc.file_name(), loc.line(), op);
    throw Fault{};
}

inline void check_abort() {
    if (G->abort.load(std::memory_order_relaxed)) throw Abort{};
}

std::string event_name(Pipe s, Pipe d) { return std::string(kPipeNames[(int)s]) + "_" + kPipeNames[(int)d]; }

// ---- race checker ----------------------------------------------------------------
// Access classes that never race with each other (emu_xblock.h).
// Runtime-internal class of a DMA (MTE2) read of GM: like a scalar atomic it bypasses the data
// cache, so it sees a word a scalar atomic of another core updates either before or after
// that update (the AtomicAdd page's own example copies the word in right after its atomic,
// while other blocks still add): compatible with scalar atomics (CLS_ATOMIC | CLS_SYNC), not
// with DMA atomics or plain stores.
constexpr uint8_t CLS_DMA_READ = 0x40;
inline bool compatible(uint8_t a, uint8_t b) {
    if (a & b & (CLS_ATOMIC | CLS_FILL | CLS_SYNC)) return true;
    constexpr uint8_t scalar_atomic = CLS_ATOMIC | CLS_SYNC;
    if (((a & CLS_DMA_READ) && (b & scalar_atomic) == scalar_atomic) || ((b & CLS_DMA_READ) && (a & scalar_atomic) == scalar_atomic))
        return true;
    constexpr uint8_t coh = CLS_SYNC | CLS_SLOAD | CLS_SSTORE;
    return (a & coh) && (b & coh) && !(a & b & CLS_SSTORE);
}

// ww: both accesses write (MTE2/MTE3 order their overlapping writes only through barriers).
inline bool ordered(const Acc& a, const Acc& cur, const VC& clk, bool ww) {
    if (a.gt == cur.gt && a.tid == cur.tid && a.epoch == cur.epoch) return true;  // same op
    if ((a.cls | cur.cls) && compatible(a.cls, cur.cls)) return true;
    if (a.block == cur.block) {
        if (a.gt == cur.gt && a.tid == cur.tid) {  // same core and pipe: program order, except...
            Pipe p = (Pipe)(a.tid % kNumPipes);
            if (p == Pipe::MTE2 || p == Pipe::MTE3) {
                if (!ww) return true;  // ...overlapping writes of MTE2/MTE3
            } else if (pipe_in_order(p)) {
                return true;           // ...and c220's V
            }
        }
        return a.epoch <= clk[a.tid];
    }
    // Different blocks synchronise through mode-0 barriers between cores of the same kind:
    // a precedes cur when a's core had set fewer barriers than cur's core had passed...
    if (a.kind == cur.kind && a.setgen < cur.waitgen) return true;
    // ... and through cross-block releases/acquires (emu_xblock.h) this core has seen.
    const Core* c = tls;
    return c && !c->xk.empty() && a.epoch <= c->xk[a.block][a.tid];
}

void report_race(const Acc& a, const Acc& b, Mem mem, uint8_t kind, uint64_t lo, uint64_t hi, const Core* owner) {
    RaceKey k{a.name, a.line, (uint8_t)(a.tid % kNumPipes), b.name, b.line, (uint8_t)(b.tid % kNumPipes),
              (uint8_t)mem, kind};
    std::lock_guard<std::mutex> lk(G->race_mu);
    G->races_total++;
    auto it = G->races.find(k);
    if (it != G->races.end()) {
        it->second.count++;
        return;
    }
    if (G->races.size() >= 100) return;
    RaceRec r{a, b, (uint8_t)mem, kind, owner ? owner->block : -1, owner ? owner->name() : "", lo, hi, 1};
    G->races.emplace(k, r);
}

// bisheng's --cce-auto-sync=on (docs/emulator.md, "Automatic synchronisation"): is the
// unordered pair (a, then cur) one that bisheng synchronises by itself? Same AIV only:
// V<->V on c220, and S<->V/MTE2/MTE3 (both directions) when the S access is an eligible call.
inline bool auto_synced(const Acc& a, const Acc& cur) {
    if (!G->auto_sync || a.gt != cur.gt || cur.kind != (uint8_t)CoreKind::AIV) return false;
    const Pipe pa = (Pipe)(a.tid % kNumPipes), pc = (Pipe)(cur.tid % kNumPipes);
    if (pa == Pipe::V && pc == Pipe::V) return is_c220();
    auto vec_or_mte = [](Pipe p) { return p == Pipe::V || p == Pipe::MTE2 || p == Pipe::MTE3; };
    if (pa == Pipe::S && vec_or_mte(pc)) return a.auto_ok;
    if (pc == Pipe::S && vec_or_mte(pa)) return cur.auto_ok;
    return false;
}

void split_at(std::map<uint64_t, Seg>& m, uint64_t x) {
    auto it = m.upper_bound(x);
    if (it == m.begin()) return;
    --it;
    if (it->first < x && it->second.end > x) {
        Seg right = it->second;
        it->second.end = x;
        m.emplace(x, std::move(right));
    }
}

// kind: 0 RAW (write then read), 1 WAR (read then write), 2 WAW. A conflict that auto-sync
// covers is not reported; its earlier pipe is added to *auto_pipes (the caller then applies
// the inserted sync to the clocks).
void access(History& h, Mem mem, uint64_t b, uint64_t e, bool write, const Acc& cur, const VC& clk, const Core* owner,
            unsigned* auto_pipes) {
    auto conflict = [&](const Acc& a, uint8_t kind, uint64_t lo, uint64_t hi) {
        if (ordered(a, cur, clk, kind == 2)) return;
        if (auto_synced(a, cur)) {
            *auto_pipes |= 1u << (a.tid % kNumPipes);
            return;
        }
        if (kind == 2 && a.gt != cur.gt && tls) {  // other core: a race only if the data differ
            tls->ww_new.push_back(WwPending{a, cur, mem, lo, hi, owner, nullptr, {}});
            return;
        }
        report_race(a, cur, mem, kind, lo, hi, owner);
    };
    if (b >= e) return;
    std::lock_guard<std::mutex> lk(h.mu);
    auto& m = h.m;
    split_at(m, b);
    split_at(m, e);
    auto it = m.lower_bound(b);
    if (!write) {
        uint64_t pos = b;
        while (pos < e) {
            if (it == m.end() || it->first > pos) {
                uint64_t gap_end = (it == m.end()) ? e : std::min(e, it->first);
                Seg s;
                s.end = gap_end;
                s.reads.push_back(cur);
                it = m.emplace_hint(it, pos, std::move(s));
                ++it;
                pos = gap_end;
                continue;
            }
            Seg& s = it->second;
            if (s.has_w) conflict(s.w, 0, it->first, s.end);
            bool found = false;
            for (auto& r : s.reads)
                if (r.gt == cur.gt && r.tid == cur.tid) {
                    r = cur;
                    found = true;
                    break;
                }
            if (!found) s.reads.push_back(cur);
            pos = s.end;
            ++it;
        }
        return;
    }
    // write: check every overlapping segment, then replace them with one segment
    auto first = it;
    while (it != m.end() && it->first < e) {
        Seg& s = it->second;
        if (s.has_w) conflict(s.w, 2, it->first, s.end);
        for (auto& r : s.reads) conflict(r, 1, it->first, s.end);
        ++it;
    }
    m.erase(first, it);
    Seg s;
    s.end = e;
    s.has_w = true;
    s.w = cur;
    auto ins = m.emplace(b, std::move(s)).first;
    // merge with a left neighbour written by the same op
    if (ins != m.begin()) {
        auto l = std::prev(ins);
        if (l->second.end == b && l->second.has_w && l->second.reads.empty() && l->second.w.gt == cur.gt &&
            l->second.w.tid == cur.tid && l->second.w.epoch == cur.epoch) {
            l->second.end = e;
            m.erase(ins);
        }
    }
}

Core* peer(Core* c, int which) {
    // which: for an AIC, the AIV of sub-block `which`; for an AIV, its group's AIC.
    int base = c->block * G->per_block;
    if (c->kind == CoreKind::AIC) {
        if (!G->has_aic || which < 0 || which >= G->naiv) return nullptr;
        return G->cores[base + 1 + which].get();
    }
    if (!G->has_aic) return nullptr;
    return G->cores[base].get();
}

History& hist_of(Core* c, Mem m) {
    if (!c->hist[(int)m]) c->hist[(int)m] = std::make_unique<History>();
    return *c->hist[(int)m];
}

struct Resolved {
    Core* owner;
    uint64_t b, e;
    Region* region;
};

Resolved check_span(Core* c, const Span& s, const char* op, const Loc& loc) {
    if (s.end < s.begin) fail_op("invalid_param", std::string(op) + ": negative byte range", op, loc);
    if (s.mem == Mem::GM) {
        if (s.begin == s.end) return {nullptr, 0, 0, nullptr};
        for (auto& r : G->gm)
            if (s.begin >= r.b && s.end <= r.e) return {nullptr, s.begin, s.end, &r};
        std::string near;
        const Region* best = nullptr;
        uint64_t best_d = ~0ull;
        for (auto& r : G->gm) {
            uint64_t d = (s.end > r.b && s.begin < r.e) ? 0 : (s.begin >= r.e ? s.begin - r.e : r.b - s.end);
            if (d < best_d) { best_d = d; best = &r; }
        }
        if (best && best_d < (1ull << 30))
            near = "; nearest argument '" + best->name + "' has " + std::to_string(best->e - best->b) + " bytes and the access is at bytes [" +
                   std::to_string((int64_t)(s.begin - best->b)) + ", " + std::to_string((int64_t)(s.end - best->b)) + ")";
        fail_op("gm_out_of_bounds",
                std::string(op) + ": GM access of " + std::to_string(s.end - s.begin) + " bytes lies outside every argument tensor" + near,
                op, loc);
    }
    Core* owner = c;
    if (s.core >= 0) {
        if (is_c220()) fail_op("invalid_param", std::string(op) + ": cross-core on-chip access does not exist on dav-c220", op, loc);
        owner = peer(c, s.core);
        if (!owner) fail_op("invalid_param", std::string(op) + ": no such peer core in this kernel type", op, loc);
    }
    if (!mem_on(owner->kind, s.mem))
        fail_op("invalid_memory", std::string(op) + ": " + kMemNames[(int)s.mem] + " does not exist on the " + owner->name(), op, loc);
    uint64_t cap = arch_mem_size(s.mem);
    if (s.end > cap)
        fail_op("local_out_of_bounds",
                std::string(op) + ": " + kMemNames[(int)s.mem] + " bytes [" + std::to_string(s.begin) + ", " + std::to_string(s.end) +
                    ") exceed its capacity of " + std::to_string(cap) + " bytes",
                op, loc);
    return {owner, s.begin, s.end, nullptr};
}

uint32_t push_rec(Core* c, OpRec r) {
    uint32_t idx = (uint32_t)c->trace.size();
    if (G->trace_used.fetch_add(1, std::memory_order_relaxed) < G->trace_cap) c->trace.push_back(r);
    else G->trace_truncated.store(true, std::memory_order_relaxed);
    return idx;
}

VC pipe_done_clock(Core* c, Pipe p) {
    VC v = c->clk[(int)p];
    int t = c->slot * kNumPipes + (int)p;
    v[t] = std::max(v[t], c->cnt[(int)p]);
    return v;
}

Core* cur_core(const Loc& loc, const char* what) {
    Core* c = tls;
    if (!c) {
        fprintf(stderr, "emulator: %s called outside a kernel thread (line %u)\n", what, loc.line());
        return nullptr;
    }
    check_abort();
    return c;
}

// Write-write pairs of different cores (docs/emulator-internals.md, "Identical writes"): the
// later op's effect is done (this core makes its next API call, or ends): equal bytes -> the two
// writes stored the same data and the order does not matter; else a race.
void ww_settle(Core* c) {
    for (auto& w : c->ww)
        if (std::memcmp(w.ptr, w.before.data(), w.before.size()) != 0) report_race(w.a, w.b, w.mem, 2, w.lo, w.hi, w.owner);
    c->ww.clear();
}
inline uint64_t busy_key(uint8_t tid, uint32_t epoch) { return ((uint64_t)tid + 1) << 32 | epoch; }

void note_last(Core* c, const char* name, const Loc& loc) {
    c->busy.store(0, std::memory_order_release);
    if (!c->ww.empty()) ww_settle(c);
    if (G->last) {
        LastOp& l = G->last[c->gt];
        l.name = name;
        l.file = loc.file_name();
        l.line = loc.line();
    }
}

// ---- scheduler ------------------------------------------------------------------
void grant_locked() {
    while (G->free_slots > 0 && !G->ready.empty()) {
        int gt = *G->ready.begin();
        G->ready.erase(G->ready.begin());
        G->cores[gt]->state = RUNNING;
        G->running++;
        G->free_slots--;
        G->cores[gt]->cv.notify_one();
    }
}

std::string waiter_json(const Core* w) {
    std::string what = w->xb_pred ? std::string(",\"what\":") + jstr(w->xb_what) : std::string();
    return "{" + core_json(w) + ",\"flag\":" + std::to_string(w->wait_id) + ",\"mode\":" + std::to_string(w->wait_mode) + what + "," +
           loc_json(w->wait_file, w->wait_line) + "}";
}

// Makes a core blocked in xb_wait runnable again (it re-checks its condition).
void xb_wake_locked(Core* w) {
    w->state = READY;
    G->blocked--;
    G->xb_waiting--;
    G->ready.insert(w->gt);
}
void xb_wake_all_locked() {
    if (G->xb_waiting == 0) return;
    for (auto& c : G->cores)
        if (c->state == BLOCKED && c->xb_pred) xb_wake_locked(c.get());
    grant_locked();
}

void deadlock_locked(const std::vector<Core*>& waiters, const std::string& scope) {
    if (!G->deadlock.empty() || G->abort.load()) return;
    std::string msg = "deadlock (" + scope + "): every live core is blocked on a CrossCoreWaitFlag or a GM synchronisation:";
    std::string ws;
    for (auto* w : waiters) {
        if (w->xb_pred)
            msg += " block " + std::to_string(w->block) + " " + w->name() + " waits in " + w->xb_what + " at line " +
                   std::to_string(w->wait_line) + " for a GM value no running core will write;";
        else
            msg += " block " + std::to_string(w->block) + " " + w->name() + " waits for flag " + std::to_string(w->wait_id) +
                   " at line " + std::to_string(w->wait_line) + ";";
        if (!ws.empty()) ws += ",";
        ws += waiter_json(w);
    }
    G->deadlock = "{\"scope\":" + jstr(scope) + ",\"message\":" + jstr(msg) + ",\"waiters\":[" + ws + "]}";
    G->abort.store(true);
    wake_all_locked();
}

void check_deadlock_locked(int block) {
    if (G->abort.load()) return;
    if (G->running == 0 && G->ready.empty() && G->blocked > 0) {
        // A GM condition may have been satisfied by a store that published nothing (e.g. a
        // plain DataCopy): re-check before calling it a deadlock.
        bool woke = false;
        if (G->xb_waiting > 0)
            for (auto& c : G->cores)
                if (c->state == BLOCKED && c->xb_pred && c->xb_pred(c->xb_arg)) {
                    xb_wake_locked(c.get());
                    woke = true;
                }
        if (woke) {
            grant_locked();
            return;
        }
        std::vector<Core*> w;
        for (auto& c : G->cores)
            if (c->state == BLOCKED) w.push_back(c.get());
        deadlock_locked(w, "all blocks");
        return;
    }
    if (G->mode0_hint || G->mode0_seen || G->xb_seen) return;
    int base = block * G->per_block;
    std::vector<Core*> w;
    for (int i = 0; i < G->per_block; ++i) {
        Core* c = G->cores[base + i].get();
        if (c->state == DONE) continue;
        if (c->state != BLOCKED) return;
        w.push_back(c);
    }
    if (!w.empty()) deadlock_locked(w, "block " + std::to_string(block));
}

void push_token_locked(Core* to, int id, Token t, const Loc& loc) {
    if (to->xq[id].size() >= 15) {
        add_flag_error("counter_overflow", "cross-core", id,
                       "cross-core flag " + std::to_string(id) + " of block " + std::to_string(to->block) + " " + to->name() +
                           " already counts 15 (the counter saturates; this Set is lost)",
                       loc);
        return;
    }
    to->xq[id].push_back(std::move(t));
    if (to->state == BLOCKED && to->wait_id == id) {
        to->state = READY;
        G->blocked--;
        G->ready.insert(to->gt);
        grant_locked();
    }
}

Token merge(Token a, const Token& b) {
    join(a.clk, b.clk);
    a.refs.insert(a.refs.end(), b.refs.begin(), b.refs.end());
    if (b.xk) {
        if (!a.xk) a.xk = b.xk;
        else {
            auto m = std::make_shared<std::vector<VC>>(*a.xk);
            for (size_t i = 0; i < m->size() && i < b.xk->size(); ++i) join((*m)[i], (*b.xk)[i]);
            a.xk = m;
        }
    }
    return a;
}

}  // namespace

// ---- public runtime interface -------------------------------------------------------
uint64_t mem_size(Mem m) { return arch_mem_size(m); }
bool mem_present(Mem m) {
    Core* c = tls;
    return c && mem_on(c->kind, m);
}
uint8_t* mem_base(Mem m, int core) {
    Core* c = tls;
    if (!c || m == Mem::GM) return nullptr;
    if (core >= 0) c = peer(c, core);
    if (!c) return nullptr;
    return c->mem[(int)m];
}

void fail(const char* kind, const std::string& msg, const Loc& loc) {
    if (!tls) {
        fprintf(stderr, "emulator error outside a kernel thread: %s\n", msg.c_str());
        std::abort();
    }
    fail_op(kind, msg, "", loc);
}

// Count a GM access for the timing model: all its bytes, and those of its 32 B blocks not
// touched before in the same way (reads: the L2 term, first reads miss; writes: the HBM floor,
// a block rewritten while it sits in L2 leaves for HBM once). A read of a block the launch has
// written before is not a first read: the write left it in L2 (``in_l2``, the write bitmap).
static void note_gm(std::vector<uint64_t>& blocks, const Region* r, uint64_t b, uint64_t e, uint64_t& bytes,
                    uint64_t& unique, const std::vector<uint64_t>* in_l2 = nullptr) {
    const uint64_t lo = (b - r->b) / 32, hi = (e - r->b + 31) / 32;
    std::lock_guard<std::mutex> lk(G->reads_mu);
    if (blocks.empty()) blocks.assign(((r->e - r->b + 31) / 32 + 63) / 64, 0);
    const bool warm = in_l2 && !in_l2->empty();
    uint64_t fresh = 0;
    for (uint64_t k = lo; k < hi; ++k) {
        uint64_t& w = blocks[k >> 6];
        const uint64_t bit = 1ull << (k & 63);
        if (!(w & bit)) {
            w |= bit;
            if (!(warm && ((*in_l2)[k >> 6] & bit))) ++fresh;
        }
    }
    bytes += e - b;
    unique += std::min<uint64_t>(fresh * 32, e - b);
}
void note_gm_read(Region* r, uint64_t b, uint64_t e) {
    if (r && e > b) note_gm(r->read_blocks, r, b, e, G->gm_read_bytes, G->gm_read_unique_bytes, &r->write_blocks);
}
static void note_gm_write(Region* r, uint64_t b, uint64_t e) {
    if (r && e > b) note_gm(r->write_blocks, r, b, e, G->gm_write_bytes, G->gm_write_unique_bytes);
}

static void consume_signal(Core* c, OpRec& r, FlagSlot& f, Pipe dst);

namespace {
// The PIPE_S calls that bisheng's auto-sync covers (sync key-features page): LocalTensor
// GetValue/SetValue/operator(), GlobalTensor GetValue/operator() (not GlobalTensor::SetValue),
// GetReduceRepeatSumSpr, GetReduceRepeatMaxMinSpr, GetMrgSortResult.
bool s_call_auto_synced(const char* op, const Span* writes, size_t n_writes) {
    static const char* const kNames[] = {"GetValue", "SetValue", "operator()", "GetReduceRepeatSumSpr",
                                         "GetReduceRepeatMaxMinSpr", "GetMrgSortResult"};
    bool named = false;
    for (const char* n : kNames)
        if (strcmp(op, n) == 0) named = true;
    if (!named) return false;
    if (strcmp(op, "SetValue") == 0)
        for (size_t i = 0; i < n_writes; ++i)
            if (writes[i].mem == Mem::GM) return false;  // GlobalTensor::SetValue
    return true;
}

// Applies the syncs bisheng would have inserted right before the op numbered `e` on `pipe`:
// PipeBarrier<PIPE_V> for c220 V->V, else SetFlag<Q_P> + WaitFlag<Q_P> for each earlier pipe Q.
// They appear in the trace as "auto-sync" records, so the timing model pays for them.
void apply_auto_sync(Core* c, Pipe pipe, uint32_t e, unsigned pipes, const Loc& loc) {
    for (int q = 0; q < kNumPipes; ++q) {
        if (!(pipes >> q & 1u)) continue;
        if (q == (int)pipe) {
            OpRec r{"auto-sync", loc.line(), R_BARRIER, (uint8_t)q, 0, 0, 0, 0, 0, 0, 0, 0};
            push_rec(c, r);
            uint32_t& own = c->clk[q][c->slot * kNumPipes + q];
            own = std::max(own, e - 1);
            continue;
        }
        OpRec rs{"auto-sync", loc.line(), R_SET, (uint8_t)q, (uint8_t)q, (uint8_t)pipe, 0, 0, 0, 0, 0, 0};
        FlagSlot f;
        f.set = true;
        f.clk = pipe_done_clock(c, (Pipe)q);
        f.idx = push_rec(c, rs);
        OpRec rw{"auto-sync", loc.line(), R_WAIT, (uint8_t)pipe, (uint8_t)q, (uint8_t)pipe, 0, 0, 0, 0, 0, 0};
        consume_signal(c, rw, f, pipe);
    }
}
}  // namespace

// Scalar data cache outcome of an S-pipe op, stored in its trace record's `repeats` (S ops
// have no repeats): 0 = no cached GM access (on-chip only, or every GM span bypasses the cache:
// CLS_SYNC / CLS_ATOMIC, i.e. ReadGmByPassDCache/WriteGmByPassDCache, scalar atomics, the sync
// words of software syncs), 1 = every 64-byte line it touched was resident (hit), 2 = at least
// one line missed. Reads and writes alike allocate their lines (write-allocate, write-back:
// the SetValue page and the "Scalar读写数据" guide page); dirty write-backs cost nothing here.
namespace {
uint32_t dcache_outcome(Core* c, const Span* reads, size_t n_reads, const Span* writes, size_t n_writes) {
    bool any = false, miss = false;
    auto scan = [&](const Span* v, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            const Span& s = v[i];
            if (s.mem != Mem::GM || s.end <= s.begin || (s.cls & (CLS_SYNC | CLS_ATOMIC))) continue;
            any = true;
            for (uint64_t l = s.begin / 64; l <= (s.end - 1) / 64; ++l)
                if (!c->dcache.touch(l)) miss = true;
        }
    };
    c->dcache.cap = G->dcache_lines;
    scan(reads, n_reads);
    scan(writes, n_writes);
    return any ? (miss ? 2u : 1u) : 0u;
}
}  // namespace

void record_n(const char* op, Pipe pipe, const Span* reads, size_t n_reads, const Span* writes, size_t n_writes, const Cost& cost,
              const Loc& loc) {
    Core* c = cur_core(loc, op);
    if (!c) return;
    note_last(c, op, loc);
    if (!pipe_on(c->kind, pipe))
        fail_op("invalid_pipe", std::string(op) + ": pipe " + kPipeNames[(int)pipe] + " does not exist on the " + c->name(), op, loc);
    Resolved small_r[8], small_w[8];
    std::vector<Resolved> big_r, big_w;
    Resolved* rr = small_r;
    Resolved* rw = small_w;
    if (n_reads > 8) { big_r.resize(n_reads); rr = big_r.data(); }
    if (n_writes > 8) { big_w.resize(n_writes); rw = big_w.data(); }
    for (size_t i = 0; i < n_reads; ++i) {
        rr[i] = check_span(c, reads[i], op, loc);
        if (reads[i].mem == Mem::GM) note_gm_read(rr[i].region, rr[i].b, rr[i].e);
    }
    for (size_t i = 0; i < n_writes; ++i) {
        rw[i] = check_span(c, writes[i], op, loc);
        if (rw[i].region && !rw[i].region->written.load(std::memory_order_relaxed)) rw[i].region->written.store(true);
        if (writes[i].mem == Mem::GM) note_gm_write(rw[i].region, rw[i].b, rw[i].e);
    }
    int p = (int)pipe;
    uint32_t e = ++c->cnt[p];
    int tid = c->slot * kNumPipes + p;
    if (!own_clock_is_completion(pipe)) c->clk[p][tid] = e;
    c->ops++;
    c->op_names[op]++;
    if (G->checks) {
        const bool auto_ok = pipe == Pipe::S && G->auto_sync && s_call_auto_synced(op, writes, n_writes);
        Acc cur{op, loc.file_name(), loc.line(), c->gt, c->block, (uint8_t)tid, (uint8_t)c->kind, e, c->x0_set, c->x0_wait,
                0, auto_ok};
        const VC& clk = c->clk[p];
        unsigned auto_pipes = 0;
        for (size_t i = 0; i < n_reads; ++i) {
            const Resolved& x = rr[i];
            Mem m = reads[i].mem;
            cur.cls = reads[i].cls;
            if (m == Mem::GM && pipe == Pipe::MTE2 && cur.cls == 0) cur.cls = CLS_DMA_READ;
            if (m == Mem::GM) access(G->gm_hist, Mem::GM, x.b, x.e, false, cur, clk, nullptr, &auto_pipes);
            else access(hist_of(x.owner, m), m, x.b, x.e, false, cur, clk, x.owner, &auto_pipes);
        }
        for (size_t i = 0; i < n_writes; ++i) {
            const Resolved& x = rw[i];
            Mem m = writes[i].mem;
            cur.cls = writes[i].cls;
            if (m == Mem::GM) access(G->gm_hist, Mem::GM, x.b, x.e, true, cur, clk, nullptr, &auto_pipes);
            else access(hist_of(x.owner, m), m, x.b, x.e, true, cur, clk, x.owner, &auto_pipes);
        }
        // The reduction / sort special-register reads depend on the vector op that set them
        // (no memory access to find): bisheng syncs V -> S before them.
        if (auto_ok && c->kind == CoreKind::AIV && n_reads == 0 && n_writes == 0 && strncmp(op, "Get", 3) == 0 &&
            strcmp(op, "GetValue") != 0)
            auto_pipes |= 1u << (int)Pipe::V;
        if (auto_pipes) apply_auto_sync(c, pipe, e, auto_pipes, loc);
        // unordered writes of another core to the same bytes: capture that write's data once
        // its effect is complete (the writer is running: it clears `busy` at its next call)
        for (auto& w : c->ww_new) {
            Core* wc = G->cores[w.a.gt].get();
            const uint64_t key = busy_key(w.a.tid, w.a.epoch);
            for (int spin = 0; wc->busy.load(std::memory_order_acquire) == key && spin < 2000000; ++spin) std::this_thread::yield();
            w.ptr = w.mem == Mem::GM ? (uint8_t*)(uintptr_t)w.lo : w.owner->mem[(int)w.mem] + w.lo;
            if (c->pre_image) {  // an op recorded after its effect (a SIMT call): the bytes before it
                w.before.resize(w.hi - w.lo);
                c->pre_image(w.mem, w.lo, w.hi, w.before.data());
            } else {
                w.before.assign(w.ptr, w.ptr + (w.hi - w.lo));
            }
            c->ww.push_back(std::move(w));
        }
        c->ww_new.clear();
    }
    OpRec r{op, loc.line(), R_OP, (uint8_t)pipe, (uint8_t)(n_reads ? (int)reads[0].mem : 255),
            (uint8_t)(n_writes ? (int)writes[0].mem : 255), cost.bytes, cost.elems, cost.macs, cost.repeats, 0, 0};
    if (pipe == Pipe::S) r.repeats = dcache_outcome(c, reads, n_reads, writes, n_writes);
    if (!c->op_deps.empty()) {  // unit flags: the op waits for the op that released its blocks
        r.dep_off = (uint32_t)c->deps.size();
        r.dep_n = (uint32_t)c->op_deps.size();
        c->deps.insert(c->deps.end(), c->op_deps.begin(), c->op_deps.end());
        c->op_deps.clear();
    }
    c->last_op_idx = push_rec(c, r);
    c->busy.store(busy_key((uint8_t)tid, e), std::memory_order_release);
}

namespace {
bool flag_event_ok(Core* c, Pipe src, Pipe dst, int32_t id, const char* what, const Loc& loc) {
    std::string ev = event_name(src, dst);
    if (!pipe_on(c->kind, src) || !pipe_on(c->kind, dst)) {
        bool src_aic = pipe_on(CoreKind::AIC, src), dst_aic = pipe_on(CoreKind::AIC, dst);
        bool src_aiv = pipe_on(CoreKind::AIV, src), dst_aiv = pipe_on(CoreKind::AIV, dst);
        bool same_core_possible = (src_aic && dst_aic) || (src_aiv && dst_aiv);
        std::string msg = std::string(what) + "<" + ev + ">: ";
        if (!same_core_possible)
            msg += "pipes " + std::string(kPipeNames[(int)src]) + " and " + kPipeNames[(int)dst] +
                   " are on different cores (AIC owns S, MTE1, MTE2, FIX, M; AIV owns S, V, MTE2, MTE3); use CrossCoreSetFlag/CrossCoreWaitFlag";
        else
            msg += "event pipes are not on the " + c->name() + " executing it";
        add_flag_error("cross_core_event", ev, id, msg, loc);
        return false;
    }
    if (id < 0 || id > 7) {
        add_flag_error("id_out_of_range", ev, id, std::string(what) + "<" + ev + ">(" + std::to_string(id) + "): event ids are 0-7", loc);
        return false;
    }
    return true;
}
}  // namespace

void set_flag(Pipe src, Pipe dst, int32_t id, const Loc& loc) {
    Core* c = cur_core(loc, "SetFlag");
    if (!c) return;
    note_last(c, "SetFlag", loc);
    OpRec r{"SetFlag", loc.line(), R_SET, (uint8_t)src, (uint8_t)src, (uint8_t)dst, 0, 0, 0, (uint32_t)id, 0, 0};
    if (!flag_event_ok(c, src, dst, id, "SetFlag", loc)) return;
    uint32_t idx = push_rec(c, r);
    FlagSlot& f = c->flags[event_code(src, dst) * 8 + id];
    if (f.set) {
        add_flag_error("double_set", event_name(src, dst), id,
                       "SetFlag<" + event_name(src, dst) + ">(" + std::to_string(id) + ") while the flag set at line " +
                           std::to_string(f.line) + " has not been waited",
                       loc);
        return;  // keep the first Set's clock (the conservative choice)
    }
    f.set = true;
    f.clk = pipe_done_clock(c, src);
    f.idx = idx;
    f.line = loc.line();
}

// A wait that found its signal: record the dependency for the timing model, join the signal's
// clock into the waiting pipe (every pipe when the scalar unit waits) and clear the signal.
static void consume_signal(Core* c, OpRec& r, FlagSlot& f, Pipe dst) {
    r.dep_off = (uint32_t)c->deps.size();
    r.dep_n = 1;
    c->deps.push_back({c->gt, f.idx});
    push_rec(c, r);
    if (dst == Pipe::S) {
        for (int p = 0; p < kNumPipes; ++p) join(c->clk[p], f.clk);
    } else {
        join(c->clk[(int)dst], f.clk);
    }
    f.set = false;
}

void wait_flag(Pipe src, Pipe dst, int32_t id, const Loc& loc) {
    Core* c = cur_core(loc, "WaitFlag");
    if (!c) return;
    note_last(c, "WaitFlag", loc);
    if (!flag_event_ok(c, src, dst, id, "WaitFlag", loc)) return;
    FlagSlot& f = c->flags[event_code(src, dst) * 8 + id];
    OpRec r{"WaitFlag", loc.line(), R_WAIT, (uint8_t)dst, (uint8_t)src, (uint8_t)dst, 0, 0, 0, (uint32_t)id, 0, 0};
    if (!f.set) {
        add_flag_error("wait_without_set", event_name(src, dst), id,
                       "WaitFlag<" + event_name(src, dst) + ">(" + std::to_string(id) + ") with no SetFlag before it (would hang on hardware)",
                       loc);
        push_rec(c, r);
        return;
    }
    consume_signal(c, r, f, dst);
}

void queue_signal(Pipe src, Pipe dst, const void* key, const char* what, const Loc& loc) {
    Core* c = cur_core(loc, what);
    if (!c) return;
    note_last(c, what, loc);
    if (!pipe_on(c->kind, src) || !pipe_on(c->kind, dst))
        fail_op("invalid_pipe", std::string(what) + ": this queue's pipes " + kPipeNames[(int)src] + " -> " + kPipeNames[(int)dst] +
                                    " are not on the " + c->name(), what, loc);
    OpRec r{what, loc.line(), R_SET, (uint8_t)src, (uint8_t)src, (uint8_t)dst, 0, 0, 0, 0, 0, 0};
    uint32_t idx = push_rec(c, r);
    FlagSlot& f = c->qflags[key];
    VC v = pipe_done_clock(c, src);
    if (f.set) join(f.clk, v);  // a newer signal supersedes (queues never hang on it)
    else f.clk = v;
    f.set = true;
    f.idx = idx;
    f.line = loc.line();
    f.dst = (uint8_t)dst;
    f.free = strcmp(what, "FreeTensor") == 0;
}

void queue_wait(Pipe src, Pipe dst, const void* key, const char* what, const Loc& loc) {
    Core* c = cur_core(loc, what);
    if (!c) return;
    note_last(c, what, loc);
    OpRec r{what, loc.line(), R_WAIT, (uint8_t)dst, (uint8_t)src, (uint8_t)dst, 0, 0, 0, 0, 0, 0};
    auto it = c->qflags.find(key);
    if (it == c->qflags.end() || !it->second.set) {
        add_flag_error("wait_without_set", "TQue", -1,
                       std::string(what) + ": nothing to wait for (" +
                           (std::string(what) == "AllocTensor" ? "the buffer was never released with FreeTensor" : "no EnQue") +
                           "; would hang on hardware)",
                       loc);
        push_rec(c, r);
        return;
    }
    FlagSlot& f = it->second;
    consume_signal(c, r, f, dst);
}

void queue_forget(const void* begin, size_t bytes) {
    Core* c = tls;
    if (!c) return;
    auto lo = c->qflags.lower_bound(begin);
    auto hi = c->qflags.lower_bound((const char*)begin + bytes);
    // A destroyed queue's pending FreeTensor signals still guard its memory: TPipe::Reset /
    // Destroy wait for them.
    for (auto it = lo; it != hi; ++it)
        if (it->second.set && it->second.free) c->orphan_free.push_back(it->second);
    c->qflags.erase(lo, hi);
}

void pipe_reset(const Loc& loc) {
    Core* c = cur_core(loc, "TPipe::Reset");
    if (!c) return;
    note_last(c, "TPipe::Reset", loc);
    auto drain = [&](FlagSlot& f) {
        OpRec r{"TPipe::Reset", loc.line(), R_WAIT, f.dst, 0, f.dst, 0, 0, 0, 0, 0, 0};
        consume_signal(c, r, f, (Pipe)f.dst);
    };
    for (auto& [key, f] : c->qflags)
        if (f.set && f.free) drain(f);
    for (auto& f : c->orphan_free) drain(f);
    c->orphan_free.clear();
}

void queue_drain(const void* begin, size_t bytes, const char* what, const Loc& loc) {
    Core* c = cur_core(loc, what);
    if (!c) return;
    note_last(c, what, loc);
    auto lo = c->qflags.lower_bound(begin);
    auto hi = c->qflags.lower_bound((const char*)begin + bytes);
    for (auto it = lo; it != hi; ++it) {
        FlagSlot& f = it->second;
        if (!f.set || !f.free) continue;
        OpRec r{what, loc.line(), R_WAIT, f.dst, 0, f.dst, 0, 0, 0, 0, 0, 0};
        consume_signal(c, r, f, (Pipe)f.dst);
    }
}

void pipe_barrier(int pipe, const Loc& loc) {
    Core* c = cur_core(loc, "PipeBarrier");
    if (!c) return;
    note_last(c, "PipeBarrier", loc);
    OpRec r{"PipeBarrier", loc.line(), R_BARRIER, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    if (pipe == PIPE_ALL) {
        VC j{};
        for (int p = 0; p < kNumPipes; ++p) join(j, pipe_done_clock(c, (Pipe)p));
        for (int p = 0; p < kNumPipes; ++p) c->clk[p] = j;
        r.pipe = 255;
        push_rec(c, r);
        return;
    }
    Pipe p = pipe_from_global((pipe_t)pipe);
    r.pipe = (uint8_t)p;
    push_rec(c, r);
    if (!pipe_on(c->kind, p)) return;
    if (own_clock_is_completion(p)) c->clk[(int)p][c->slot * kNumPipes + (int)p] = c->cnt[(int)p];
}

// ---- L0C unit flags (UnitFlag page) -------------------------------------------------
namespace {
constexpr uint64_t kUnitBytes = 512;
// The 512-byte blocks of L0C the spans cover, in order, each once.
std::vector<uint32_t> unit_blocks(Core* c, const Span* sp, size_t n) {
    if (c->ublk.empty()) c->ublk.resize(arch_mem_size(Mem::L0C) / kUnitBytes);
    std::vector<uint32_t> out;
    for (size_t i = 0; i < n; ++i) {
        if (sp[i].mem != Mem::L0C || sp[i].end <= sp[i].begin) continue;
        for (uint64_t b = sp[i].begin / kUnitBytes; b < (sp[i].end + kUnitBytes - 1) / kUnitBytes && b < c->ublk.size(); ++b)
            out.push_back((uint32_t)b);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}
// "bytes [a, b)" of the first run of blocks in `bl` for which pred holds, plus how many blocks hold it.
template <class P>
std::string unit_where(const std::vector<uint32_t>& bl, P pred, size_t* count = nullptr) {
    size_t k = 0;
    int64_t lo = -1, hi = -1;
    for (uint32_t b : bl) {
        if (!pred(b)) continue;
        ++k;
        if (lo < 0) lo = b, hi = b + 1;
        else if ((int64_t)b == hi) hi = b + 1;
    }
    if (count) *count = k;
    if (lo < 0) return "";
    return "L0C bytes [" + std::to_string(lo * kUnitBytes) + ", " + std::to_string(hi * kUnitBytes) + ")";
}
void unit_error(const std::string& msg, const Loc& loc) { add_flag_error("unit_flag", "unitFlag", -1, msg, loc); }
}  // namespace

void unit_flag_pre(bool mmad, uint8_t flag, const Span* l0c, size_t n, const Loc& loc) {
    const char* op = mmad ? "Mmad" : "Fixpipe";
    Core* c = cur_core(loc, op);
    if (!c) return;
    if (flag == 1 || flag > 3)
        fail_op("invalid_param", std::string(op) + ": unitFlag " + std::to_string(flag) +
                                     " is not a valid value (0 off, 2 keep the unit flags, 3 flip them; 1 is reserved)", op, loc);
    std::vector<uint32_t> bl = unit_blocks(c, l0c, n);
    if (bl.empty()) return;
    auto& u = c->ublk;
    auto full = [&](uint32_t b) { return u[b].bit == 1; };
    size_t nfull = 0;
    const std::string where_full = unit_where(bl, full, &nfull);
    const uint32_t full_line = nfull ? u[*std::find_if(bl.begin(), bl.end(), full)].line : 0;
    const Pipe pipe = mmad ? Pipe::M : Pipe::FIX;
    auto join_block = [&](UnitBlk& k, bool dep) {
        if (!k.has_clk) return;
        join(c->clk[(int)pipe], k.clk);
        if (dep) {
            bool seen = false;
            for (auto& d : c->op_deps) seen |= d.idx == k.idx;
            if (!seen) c->op_deps.push_back({c->gt, k.idx});
        }
    };
    if (mmad) {
        if (flag == 0) {
            if (nfull)
                unit_error("Mmad without unitFlag overwrites " + where_full + ", which the Mmad at line " + std::to_string(full_line) +
                               " marked full (unitFlag 3) and no Fixpipe with unitFlag has read yet: the result is lost. "
                               "Give this Mmad unitFlag 2 or 3 too (it then waits for the Fixpipe), or read the blocks first "
                               "(UnitFlag page: Mmad and Fixpipe enable it together)", loc);
            return;
        }
        if (nfull)
            unit_error("Mmad with unitFlag " + std::to_string(flag) + " writes " + where_full + ", still marked full by the Mmad at line " +
                           std::to_string(full_line) + " (unitFlag 3) and not read by a Fixpipe with unitFlag 3 since: on hardware "
                           "it waits for a Fixpipe issued after it (a hang or the next tile's data in that Fixpipe). Read the "
                           "accumulator with a Fixpipe with unitFlag 3 first (UnitFlag page)", loc);
        for (uint32_t b : bl)
            if (u[b].bit == 0) {
                join_block(u[b], u[b].fresh);
                u[b].fresh = false;
            }
        return;
    }
    // Fixpipe
    if (flag == 0) {
        if (nfull) {
            unit_error("Fixpipe without unitFlag reads " + where_full + ", which the Mmad at line " + std::to_string(full_line) +
                           " marked with unitFlag 3: the blocks stay marked full and the next Mmad with unitFlag waits "
                           "forever. Set the Fixpipe's unitFlag to 3 too (UnitFlag page: Mmad and Fixpipe enable it together)", loc);
            for (uint32_t b : bl) u[b].bit = 0, u[b].has_clk = false;  // reported once
        }
        return;
    }
    size_t nempty = 0;
    const std::string where_empty = unit_where(bl, [&](uint32_t b) { return u[b].bit == 0; }, &nempty);
    if (nempty == bl.size())
        unit_error("Fixpipe with unitFlag " + std::to_string(flag) + " reads " + where_empty +
                       " that no Mmad with unitFlag 3 has marked full: on hardware it waits forever (or reads the "
                       "accumulator when a later Mmad marks it). Give the accumulator's last Mmad unitFlag 3 (the K loop's "
                       "others 2), or drop the Fixpipe's unitFlag and order it with SetFlag/WaitFlag<M_FIX> (UnitFlag page)", loc);
    else if (nempty)
        unit_error("Fixpipe with unitFlag " + std::to_string(flag) + " reads " + where_empty +
                       " that no Mmad with unitFlag 3 has marked full, beside blocks the Mmad at line " + std::to_string(full_line) +
                       " marked: the Fixpipe's region is not the Mmad's (UnitFlag page: Mmad and Fixpipe should cover the "
                       "same data; SetFixPipeConfig(l0c, true) resets the flags)", loc);
    for (uint32_t b : bl)
        if (u[b].bit == 1) join_block(u[b], true);
}

void unit_flag_post(bool mmad, uint8_t flag, const Span* l0c, size_t n, const Loc& loc) {
    if (flag != 3) return;
    Core* c = cur_core(loc, mmad ? "Mmad" : "Fixpipe");
    if (!c) return;
    std::vector<uint32_t> bl = unit_blocks(c, l0c, n);
    const Pipe pipe = mmad ? Pipe::M : Pipe::FIX;
    const VC v = pipe_done_clock(c, pipe);
    for (uint32_t b : bl) {
        UnitBlk& k = c->ublk[b];
        k.bit = mmad ? 1 : 0;
        k.has_clk = true;
        k.fresh = true;
        k.clk = v;
        k.idx = c->last_op_idx;
        k.line = loc.line();
    }
}

void unit_flag_reset(const Loc& loc) {
    Core* c = cur_core(loc, "SetFixPipeConfig");
    if (!c) return;
    // the reset is issued on FIX after every earlier Fixpipe: an Mmad behind it is ordered after them
    const VC v = pipe_done_clock(c, Pipe::FIX);
    for (UnitBlk& k : c->ublk) {
        if (k.bit == 0 && k.has_clk) continue;
        k.bit = 0;
        k.has_clk = true;
        k.fresh = false;
        k.clk = v;
        k.line = loc.line();
    }
}

namespace {
void cross_set_impl(int mode, int pipe_g, int32_t id, const Loc& loc, int key0);
}
void cross_set(int mode, int pipe_g, int32_t id, const Loc& loc) { cross_set_impl(mode, pipe_g, id, loc, -1); }

namespace {
void cross_set_impl(int mode, int pipe_g, int32_t id, const Loc& loc, int key0) {
    Core* c = cur_core(loc, "CrossCoreSetFlag");
    if (!c) return;
    note_last(c, "CrossCoreSetFlag", loc);
    bool internal = id == 31;
    Pipe pipe = pipe_from_global((pipe_t)pipe_g);
    std::string ev = "mode " + std::to_string(mode);
    if (pipe_g != PIPE_ALL && !pipe_on(c->kind, pipe)) {
        add_flag_error("cross_core_event", ev, id,
                       "CrossCoreSetFlag<" + std::to_string(mode) + ", PIPE_" + kPipeNames[(int)pipe] + ">: pipe not on the " + c->name(), loc);
        return;
    }
    bool mode4 = mode == 4;
    if (mode4 && !is_3510()) fail_op("invalid_param", "CrossCoreSetFlag mode 4 exists only on dav-3510", "CrossCoreSetFlag", loc);
    if (mode != 0 && mode != 1 && mode != 2 && mode != 4)
        fail_op("invalid_param", "CrossCoreSetFlag: mode must be 0, 1, 2 (or 4 on dav-3510)", "CrossCoreSetFlag", loc);
    // flagId ranges (CrossCoreSetFlag page): 0-15 in modes 0/1/2 (hardware keeps the low 4 bits
    // of larger ids: reported here as a likely mistake); mode 4: 0-10, and 16-26 from an AIC.
    bool id_ok = internal || (!mode4 && id >= 0 && id <= 15) || (mode4 && id >= 0 && id <= 10) ||
                 (mode4 && c->kind == CoreKind::AIC && id >= 16 && id <= 26);
    if (!id_ok) {
        add_flag_error("id_out_of_range", ev, id,
                       "CrossCoreSetFlag(" + std::to_string(id) + "): cross-core flag ids are " +
                           (mode4 ? "0-10 in mode 4 (16-26 from an AIC)" : "0-15 in modes 0, 1, 2"),
                       loc);
        return;
    }
    if ((mode == 1 || mode == 2 || mode4) && G->naiv < (mode == 1 ? 2 : 1))
        fail_op("invalid_param", "CrossCoreSetFlag mode " + std::to_string(mode) + " needs a mix kernel with AIVs in the group",
                "CrossCoreSetFlag", loc);
    if ((mode == 2 || mode4) && !G->has_aic)
        fail_op("invalid_param", "CrossCoreSetFlag mode " + std::to_string(mode) + " needs a mix kernel (AIC + AIV)", "CrossCoreSetFlag", loc);
    if (mode == 1 && c->kind != CoreKind::AIV)
        fail_op("invalid_param", "CrossCoreSetFlag mode 1 synchronises the AIVs of a group; called on the AIC", "CrossCoreSetFlag", loc);
    if (mode == 2 && c->kind == CoreKind::AIV && G->naiv != 2)
        fail_op("invalid_param", "CrossCoreSetFlag mode 2 from an AIV needs the 1:2 mix", "CrossCoreSetFlag", loc);

    OpRec r{"CrossCoreSetFlag", loc.line(), R_XSET, (uint8_t)(pipe_g == PIPE_ALL ? 255 : (int)pipe), (uint8_t)mode, 0, 0, 0, 0,
            (uint32_t)id, 0, 0};
    uint32_t idx = push_rec(c, r);
    Token t;
    if (pipe_g == PIPE_ALL) {
        for (int p = 0; p < kNumPipes; ++p) join(t.clk, pipe_done_clock(c, (Pipe)p));
    } else {
        t.clk = pipe_done_clock(c, pipe);
    }
    t.block = c->block;
    t.refs.push_back({c->gt, idx});
    if (!c->xk.empty()) t.xk = std::make_shared<const std::vector<VC>>(c->xk);

    std::lock_guard<std::mutex> lk(G->mu);
    int base = c->block * G->per_block;
    auto aiv = [&](int s) { return G->cores[base + (G->has_aic ? 1 : 0) + s].get(); };
    auto aic = [&]() { return G->cores[base].get(); };
    if (mode == 0) {
        G->mode0_seen = true;
        c->x0_set++;
        int key = key0 >= 0 ? key0 : (int)c->kind;
        auto& a = G->agg0[{key, id}];
        if (a.per_block.empty()) {
            a.per_block.assign(G->block_dim, VC{});
            a.has_block.assign(G->block_dim, 0);
        }
        join(a.per_block[c->block], t.clk);
        if (t.xk) {
            if (a.xk.empty()) a.xk.assign(G->block_dim, VC{});
            for (size_t b = 0; b < a.xk.size() && b < t.xk->size(); ++b) join(a.xk[b], (*t.xk)[b]);
        }
        a.has_block[c->block] = 1;
        a.refs.push_back({c->gt, idx});
        a.count++;
        uint32_t need = 0;
        for (auto& x : G->cores)
            if (key == 2 || (int)x->kind == key) need++;
        if (a.count >= need) {
            uint32_t round = ++G->rounds0[key];
            // Every participant learns what each block's setters had done (and knew): a chain
            // through a mode-0 barrier and then another kind of core (mode 2, a GM flag) keeps
            // the order of the other blocks' work.
            if (a.xk.empty()) a.xk.assign(G->block_dim, VC{});
            for (int b = 0; b < G->block_dim; ++b) join(a.xk[b], a.per_block[b]);
            auto xk = std::make_shared<const std::vector<VC>>(std::move(a.xk));
            for (auto& x : G->cores) {
                if (!(key == 2 || (int)x->kind == key)) continue;
                Token tok;
                tok.clk = a.per_block[x->block];
                tok.block = x->block;
                tok.round0 = round;
                tok.refs = a.refs;
                tok.xk = xk;
                push_token_locked(x.get(), id, std::move(tok), loc);
            }
            a = Agg0{};
        }
        return;
    }
    if (mode == 1 || (mode == 2 && c->kind == CoreKind::AIV)) {
        auto& a = (mode == 1 ? G->agg1 : G->agg2)[{c->block, id}];
        a.q[c->sub].push_back(std::move(t));
        if (!a.q[0].empty() && !a.q[1].empty()) {
            Token m = merge(a.q[0].front(), a.q[1].front());
            a.q[0].pop_front();
            a.q[1].pop_front();
            if (mode == 1) {
                push_token_locked(aiv(0), id, m, loc);
                push_token_locked(aiv(1), id, m, loc);
            } else {
                push_token_locked(aic(), id, m, loc);
            }
        }
        return;
    }
    if (mode == 2) {  // AIC -> both AIVs
        for (int s = 0; s < G->naiv; ++s) push_token_locked(aiv(s), id, t, loc);
        return;
    }
    // mode 4 (3510): AIC <-> one AIV. AIV0 id f -> AIC f; AIV1 id f -> AIC f+16;
    // AIC id f (0-10) -> AIV0 f; AIC id f (16-26) -> AIV1 f-16.
    if (c->kind == CoreKind::AIC) {
        int s = id >= 16 ? 1 : 0;
        if (s >= G->naiv) fail_op("invalid_param", "CrossCoreSetFlag mode 4: that AIV is not in this kernel's group", "CrossCoreSetFlag", loc);
        push_token_locked(aiv(s), id - 16 * s, t, loc);
    } else {
        push_token_locked(aic(), id + 16 * c->sub, t, loc);
    }
}
}  // namespace

void cross_wait(int mode, int pipe_g, int32_t id, const Loc& loc) {
    Core* c = cur_core(loc, "CrossCoreWaitFlag");
    if (!c) return;
    note_last(c, "CrossCoreWaitFlag", loc);
    bool internal = id == 31;
    // 0-15 (modes 0/1/2; CrossCoreWaitFlag page), 16-26 on a dav-3510 AIC for mode-4 sets from AIV1.
    bool id_ok = internal || (id >= 0 && id <= 15) || (is_3510() && c->kind == CoreKind::AIC && id >= 16 && id <= 26);
    if (!id_ok) {
        add_flag_error("id_out_of_range", "mode " + std::to_string(mode), id,
                       "CrossCoreWaitFlag(" + std::to_string(id) + "): cross-core flag ids are 0-15" +
                           (is_3510() ? " (16-26 on an AIC for mode-4 sets from AIV1)" : ""),
                       loc);
        return;
    }
    Pipe pipe = pipe_from_global((pipe_t)pipe_g);
    Token t;
    {
        std::unique_lock<std::mutex> lk(G->mu);
        if (c->xq[id].empty()) {
            c->state = BLOCKED;
            c->wait_id = id;
            c->wait_mode = mode;
            c->wait_line = loc.line();
            c->wait_file = loc.file_name();
            G->running--;
            G->blocked++;
            G->free_slots++;
            grant_locked();
            check_deadlock_locked(c->block);
            c->cv.wait(lk, [&] { return G->abort.load() || c->state == RUNNING; });
            c->wait_id = -1;
            if (G->abort.load()) throw Abort{};
        }
        t = std::move(c->xq[id].front());
        c->xq[id].pop_front();
    }
    OpRec r{"CrossCoreWaitFlag", loc.line(), R_XWAIT, (uint8_t)(pipe_g == PIPE_ALL ? 255 : (int)pipe), (uint8_t)mode, 0, 0, 0, 0,
            (uint32_t)id, (uint32_t)c->deps.size(), (uint32_t)t.refs.size()};
    c->deps.insert(c->deps.end(), t.refs.begin(), t.refs.end());
    push_rec(c, r);
    c->x0_wait = std::max(c->x0_wait, t.round0);
    if (t.block == c->block) {
        if (pipe == Pipe::S || pipe_g == PIPE_ALL) {
            for (int p = 0; p < kNumPipes; ++p) join(c->clk[p], t.clk);
        } else {
            join(c->clk[(int)pipe], t.clk);
        }
        if (t.xk) {  // what the setter knew of other blocks (cross-block syncs) carries over
            if (c->xk.empty()) c->xk.assign(G->block_dim, VC{});
            for (size_t i = 0; i < c->xk.size() && i < t.xk->size(); ++i) join(c->xk[i], (*t.xk)[i]);
        }
    }
}

void sync_all_cfg(bool aiv_only, int trigger_pipe, int wait_pipe, const Loc& loc) {
    Core* c = cur_core(loc, "SyncAll");
    if (!c) return;
    if (aiv_only && c->kind != CoreKind::AIV) return;
    cross_set_impl(0, trigger_pipe, 31, loc, aiv_only ? (int)CoreKind::AIV : 2);
    cross_wait(0, wait_pipe == PIPE_ALL ? PIPE_S : wait_pipe, 31, loc);
}
void sync_all(bool aiv_only, const Loc& loc) { sync_all_cfg(aiv_only, PIPE_ALL, PIPE_S, loc); }

// ---- cross-block synchronisation through GM words (emu_xblock.h) -----------------------
namespace {
constexpr size_t kMaxXTok = 1u << 20;  // GM words with published releases (beyond: not recorded)

void ensure_xk(Core* c) {
    if (c->xk.empty()) c->xk.assign(G->block_dim, VC{});
}

void acquire_locked(Core* c, uint64_t lo, uint64_t hi) {
    for (auto it = G->xtok.lower_bound(lo); it != G->xtok.end() && it->first < hi; ++it)
        for (auto& [b, v] : it->second.per_block) {
            if (b == c->block) {
                for (int p = 0; p < kNumPipes; ++p) join(c->clk[p], v);
            } else {
                ensure_xk(c);
                join(c->xk[b], v);
            }
        }
}

void release_locked(Core* c, uint64_t addr, uint32_t pipe_mask) {
    auto it = G->xtok.find(addr);
    if (it == G->xtok.end()) {
        if (G->xtok.size() >= kMaxXTok) return;
        it = G->xtok.emplace(addr, XTok{}).first;
    }
    VC v{};
    for (int p = 0; p < kNumPipes; ++p)
        if (pipe_mask & (1u << p)) join(v, pipe_done_clock(c, (Pipe)p));
    it->second.add(c->block, v);
    for (size_t b = 0; b < c->xk.size(); ++b) {
        const VC& k = c->xk[b];
        if (std::any_of(k.begin(), k.end(), [](uint32_t x) { return x != 0; })) it->second.add((int32_t)b, k);
    }
}

// Spin-loop detection: true when one of the polled words now differs from the value seen.
bool polls_changed(const void* arg) {
    const Core* c = static_cast<const Core*>(arg);
    for (const PollEntry& e : c->polls)
        if (e.bytes && std::memcmp((const void*)(uintptr_t)e.addr, e.val, e.bytes) != 0) return true;
    return false;
}
}  // namespace

void xb_release(uint64_t addr, uint32_t pipe_mask, const Loc& loc) {
    Core* c = cur_core(loc, "release");
    if (!c) return;
    std::lock_guard<std::mutex> lk(G->mu);
    G->xb_seen = true;
    release_locked(c, addr, pipe_mask);
    xb_wake_all_locked();
}

void xb_acquire(uint64_t lo, uint64_t hi, const Loc& loc) {
    Core* c = cur_core(loc, "acquire");
    if (!c) return;
    std::lock_guard<std::mutex> lk(G->mu);
    acquire_locked(c, lo, hi);
}

void xb_notify() {
    if (!G) return;
    std::lock_guard<std::mutex> lk(G->mu);
    xb_wake_all_locked();
}

void xb_wait(XbPred pred, const void* arg, uint64_t lo, uint64_t hi, uint32_t local_mask, const char* what, const Loc& loc) {
    Core* c = cur_core(loc, what);
    if (!c) return;
    note_last(c, what, loc);
    {
        std::unique_lock<std::mutex> lk(G->mu);
        G->xb_seen = true;
        while (!pred(arg)) {
            c->state = BLOCKED;
            c->wait_id = -1;
            c->wait_mode = -1;
            c->wait_line = loc.line();
            c->wait_file = loc.file_name();
            c->xb_pred = pred;
            c->xb_arg = arg;
            c->xb_what = what;
            G->running--;
            G->blocked++;
            G->xb_waiting++;
            G->free_slots++;
            grant_locked();
            check_deadlock_locked(c->block);
            c->cv.wait(lk, [&] { return G->abort.load() || c->state == RUNNING; });
            c->xb_pred = nullptr;
            if (G->abort.load()) throw Abort{};
        }
        acquire_locked(c, lo, hi);
    }
    if (local_mask) {
        VC v{};
        for (int p = 0; p < kNumPipes; ++p)
            if (local_mask & (1u << p)) join(v, pipe_done_clock(c, (Pipe)p));
        for (int p = 0; p < kNumPipes; ++p) join(c->clk[p], v);
    }
    OpRec r{what, loc.line(), R_XWAIT, 0, 255, 0, 0, 0, 0, 0, 0, 0};
    push_rec(c, r);
}

uint8_t xb_load_class(const void* addr) {
    Core* c = tls;
    if (!c) return 0;
    uint64_t line = (uint64_t)(uintptr_t)addr / 64;
    if (c->dcci_all) {
        if (c->loaded_since_all.insert(line).second) return CLS_SLOAD;
        return 0;
    }
    return c->fresh_lines.erase(line) ? CLS_SLOAD : 0;
}

void xb_dcci(const void* addr, bool entire) {
    Core* c = tls;
    if (!c) return;
    if (entire) {
        c->dcci_all = true;
        c->loaded_since_all.clear();
        c->fresh_lines.clear();
        c->dcache.clear();
    } else {
        uint64_t line = (uint64_t)(uintptr_t)addr / 64;
        c->fresh_lines.insert(line);
        c->loaded_since_all.erase(line);
        c->dcache.invalidate(line);
    }
}

void xb_scalar_load(const void* addr, size_t bytes, bool acquire, const Loc& loc) {
    Core* c = cur_core(loc, "GetValue");
    if (!c) return;
    uint64_t a = (uint64_t)(uintptr_t)addr;
    size_t n = std::min<size_t>(bytes, 8);
    // A poll is a load with no other op since the previous load (the GetValue itself is one op).
    bool consecutive = c->ops == c->poll_ops + 1;
    c->poll_ops = c->ops;
    PollEntry* e = nullptr;
    for (PollEntry& p : c->polls)
        if (p.bytes && p.addr == a && p.bytes == n) e = &p;
    bool same = e && std::memcmp(addr, e->val, n) == 0;
    if (!e) {
        e = &c->polls[c->poll_next];
        c->poll_next = (c->poll_next + 1) % kPollTable;
        e->addr = a;
        e->bytes = (uint32_t)n;
    }
    std::memcpy(e->val, addr, n);
    if (!consecutive) c->poll_streak = 0;
    else if (same) c->poll_streak++;
    // else: a polled value changed: keep the streak (other words of the same loop still spin)
    if (c->poll_streak >= 256) {
        // A spin loop: sleep until one of the polled words changes instead of burning a slot.
        c->poll_streak = 0;
        xb_wait(polls_changed, c, a, a + bytes, 0, "a GM polling loop", loc);
        for (PollEntry& p : c->polls) p.bytes = 0;
        c->poll_ops = c->ops;
        return;
    }
    if (!acquire) return;
    std::lock_guard<std::mutex> lk(G->mu);
    acquire_locked(c, a, a + bytes);
}

int64_t* xb_cell(uint64_t key) {
    std::lock_guard<std::mutex> lk(G->mu);
    return &G->xcells[key];
}

uint64_t ctrl_get() {
    Core* c = tls;
    return c ? c->ctrl : 0;
}
void ctrl_set(uint64_t v) {
    if (Core* c = tls) c->ctrl = v;
}
void atomic_lock() {
    if (G) G->atomic_mu.lock();
}
void atomic_unlock() {
    if (G) G->atomic_mu.unlock();
}

// ---- Mutex::Lock / Unlock (intra-core pipe ordering) ---------------------------------
void mutex_lock(int pipe, int id, const Loc& loc) {
    Core* c = cur_core(loc, "Mutex::Lock");
    if (!c) return;
    note_last(c, "Mutex::Lock", loc);
    std::string ev = "mutex " + std::to_string(id);
    if (pipe < 0 || pipe >= kNumPipes || !pipe_on(c->kind, (Pipe)pipe)) {
        add_flag_error("cross_core_event", ev, id, "Mutex::Lock: pipe not on the " + c->name(), loc);
        return;
    }
    MutexSlot& m = c->mtx[id];
    OpRec r{"Mutex::Lock", loc.line(), R_WAIT, (uint8_t)pipe, (uint8_t)(m.has_unlock ? m.unlock_pipe : pipe), (uint8_t)pipe,
            0, 0, 0, (uint32_t)id, 0, 0};
    if (m.locked) {
        add_flag_error("mutex_misuse", ev, id,
                       "Mutex::Lock<PIPE_" + std::string(kPipeNames[pipe]) + ">(" + std::to_string(id) + ") while the Lock at line " +
                           std::to_string(m.line) + " is not unlocked (Lock and Unlock must alternate; hardware behaviour is undefined)",
                       loc);
    }
    if (m.has_unlock && m.unlock_pipe != pipe) {
        // waits for the Unlock before it in program order
        r.dep_off = (uint32_t)c->deps.size();
        r.dep_n = 1;
        c->deps.push_back({c->gt, m.idx});
        join(c->clk[pipe], m.clk);
    }
    push_rec(c, r);
    m.locked = true;
    m.lock_pipe = (int8_t)pipe;
    m.line = loc.line();
}

void mutex_unlock(int pipe, int id, const Loc& loc) {
    Core* c = cur_core(loc, "Mutex::Unlock");
    if (!c) return;
    note_last(c, "Mutex::Unlock", loc);
    std::string ev = "mutex " + std::to_string(id);
    if (pipe < 0 || pipe >= kNumPipes || !pipe_on(c->kind, (Pipe)pipe)) {
        add_flag_error("cross_core_event", ev, id, "Mutex::Unlock: pipe not on the " + c->name(), loc);
        return;
    }
    MutexSlot& m = c->mtx[id];
    if (!m.locked || m.lock_pipe != pipe) {
        add_flag_error("mutex_misuse", ev, id,
                       "Mutex::Unlock<PIPE_" + std::string(kPipeNames[pipe]) + ">(" + std::to_string(id) + ") " +
                           (m.locked ? "on another pipe than its Lock<PIPE_" + std::string(kPipeNames[m.lock_pipe]) + "> at line " +
                                           std::to_string(m.line)
                                     : std::string("without a Lock before it")),
                       loc);
    }
    OpRec r{"Mutex::Unlock", loc.line(), R_SET, (uint8_t)pipe, (uint8_t)pipe, (uint8_t)pipe, 0, 0, 0, (uint32_t)id, 0, 0};
    m.idx = push_rec(c, r);
    m.clk = pipe_done_clock(c, (Pipe)pipe);
    m.has_unlock = true;
    m.unlock_pipe = (int8_t)pipe;
    m.locked = false;
    m.line = loc.line();
}

void check_kernel_type(int type, const Loc& loc) {
    Core* c = cur_core(loc, "KERNEL_TASK_TYPE_DEFAULT");
    if (!c) return;
    if (type != G->ktype)
        fail_op("invalid_param",
                "KERNEL_TASK_TYPE_DEFAULT(" + std::to_string(type) + ") differs from the launch's kernel type " + std::to_string(G->ktype) +
                    " (pass kernel_type= consistently)",
                "KERNEL_TASK_TYPE_DEFAULT", loc);
}

int64_t block_idx() {
    Core* c = tls;
    if (!c) return 0;
    if (c->kind == CoreKind::AIV && G->naiv == 2 && G->has_aic) return c->block * 2 + c->sub;
    return c->block;
}
int64_t block_num() { return G ? G->block_dim : 1; }

uint64_t gm_translate(uint64_t addr) {
    if (!G) return addr;
    for (auto& r : G->gm)
        if (r.ob && addr >= r.ob && addr < r.ob + (r.e - r.b)) return r.b + (addr - r.ob);
    return addr;
}
int64_t sub_block_idx() {
    Core* c = tls;
    return c && c->kind == CoreKind::AIV ? c->sub : 0;
}
int64_t task_ration() { return G && G->has_aic && G->naiv == 2 ? 2 : 1; }
CoreKind core_kind() {
    Core* c = tls;
    return c ? c->kind : CoreKind::AIV;
}
void note_capacity(Mem m, uint64_t used, uint64_t request, const char* detail, const Loc& loc) {
    fail_op("capacity",
            std::string("TPipe::InitBuffer: ") + kMemNames[(int)m] + " overflow: " + std::to_string(used) + " bytes already allocated (" +
                detail + ") + " + std::to_string(request) + " requested > capacity " + std::to_string(arch_mem_size(m)) + " bytes",
            "InitBuffer", loc);
}


// Allocations (TPipe::InitBuffer, TBufPool, LocalMemAllocator, static-address LocalTensor): the
// SIMT engine needs the UB the kernel allocated (its threads may touch only that, and the rest
// of UB is the SIMT Data Cache: 编程模型 UB划分).
void note_alloc(Mem m, uint64_t begin, uint64_t end, const Loc& loc) {
    Core* c = tls;
    if (!c || (int)m >= kNumMems) return;
    if (m == Mem::UB && c->simt_static_hi > c->simt_static_lo && begin < c->simt_static_hi && end > c->simt_static_lo)
        fail_op("capacity",
                "UB bytes [" + std::to_string(begin) + ", " + std::to_string(end) + ") allocated here overlap the __ubuf__ arrays of "
                "SIMT functions, which the emulator placed at [" + std::to_string(c->simt_static_lo) + ", " +
                    std::to_string(c->simt_static_hi) + ") after the UB allocated when they were first used: allocate every UB "
                    "buffer before the first asc_vf_call",
                "InitBuffer", loc);
    if (end > c->alloc_high[(int)m]) c->alloc_high[(int)m] = end;
}

// ---- hooks of the SIMT engine (src/emu_simt.cpp) -------------------------------------------
namespace simt_rt {
[[noreturn]] void fail_pc(const char* kind, const std::string& msg, const void* pc, const char* op) {
    if (G->abort.load()) throw Abort{};
    Core* c = tls;
    std::string j = "{\"kind\":" + jstr(kind) + ",\"message\":" + jstr(msg) + ",\"line\":0,\"file\":\"kernel.cpp\"," + pc_json(pc) +
                    "," + core_json(c) + ",\"op\":" + jstr(op ? op : "") + "}";
    {
        std::lock_guard<std::mutex> lk(G->race_mu);
        if (G->errors.size() < 50) G->errors.push_back(j);
    }
    stop_all();
    throw Fault{};
}
std::string pc_json(const void* pc) {
    Dl_info di{};
    uint64_t off = 0;
    if (pc && dladdr(pc, &di) && di.dli_fbase) off = (uint64_t)((const char*)pc - (const char*)di.dli_fbase);
    char b[64];
    snprintf(b, sizeof b, "\"pc\":\"0x%llx\"", (unsigned long long)off);
    return b;
}
[[noreturn]] void fail_deadlock(const std::string& scope, const std::string& msg, const std::string& waiters) {
    if (G->abort.load()) throw Abort{};
    {
        std::lock_guard<std::mutex> lk(G->mu);
        if (G->deadlock.empty())
            G->deadlock = "{\"scope\":" + jstr(scope) + ",\"message\":" + jstr("deadlock (" + scope + "): " + msg) + ",\"simt\":true," +
                          core_json(tls) + ",\"waiters\":[" + waiters + "]}";
    }
    stop_all();
    throw Fault{};
}
bool gm_region(uint64_t b, uint64_t e, uint64_t* rb, uint64_t* re, std::string* msg) {
    for (auto& r : G->gm)
        if (b >= r.b && e <= r.e) {
            *rb = r.b;
            *re = r.e;
            return true;
        }
    const Region* best = nullptr;
    uint64_t best_d = ~0ull;
    for (auto& r : G->gm) {
        uint64_t d = (e > r.b && b < r.e) ? 0 : (b >= r.e ? b - r.e : r.b - e);
        if (d < best_d) { best_d = d; best = &r; }
    }
    *msg = "GM access of " + std::to_string(e - b) + " bytes lies outside every argument tensor";
    if (best && best_d < (1ull << 30))
        *msg += "; nearest argument '" + best->name + "' has " + std::to_string(best->e - best->b) + " bytes and the access is at bytes [" +
                std::to_string((int64_t)(b - best->b)) + ", " + std::to_string((int64_t)(e - best->b)) + ")";
    return false;
}
std::string core_json() { return ::emu::core_json(tls); }
int block() { return tls ? tls->block : -1; }
void poll_abort() { check_abort(); }
uint64_t alloc_high(Mem m) { return tls ? tls->alloc_high[(int)m] : 0; }
bool checks() { return G->checks; }
void add_race(const std::string& j, uint64_t count) {
    std::lock_guard<std::mutex> lk(G->race_mu);
    G->races_total += count;
    if (!j.empty() && G->simt_races.size() < 100) G->simt_races.push_back(j);
}
void atomic_lock() { ::emu::atomic_lock(); }
void atomic_unlock() { ::emu::atomic_unlock(); }
void set_pre_image(std::function<void(Mem, uint64_t, uint64_t, uint8_t*)> f) {
    if (tls) tls->pre_image = std::move(f);
}
double cfg(const char* key, double dflt) {
    auto it = G->simt_cfg.find(key);
    return it == G->simt_cfg.end() ? dflt : it->second;
}
uint64_t static_ub(const char* file, uint32_t line, uint32_t col, uint64_t bytes, uint64_t align, const Loc& loc) {
    Core* c = tls;
    auto key = std::make_tuple(file, line, col);
    auto it = c->simt_static.find(key);
    if (it != c->simt_static.end()) return it->second;
    const uint64_t a = align ? align : 32;
    const uint64_t off = (c->alloc_high[(int)Mem::UB] + a - 1) / a * a;
    const uint64_t limit = 256 * 1024 - 8 * 1024 - 32 * 1024;
    if (off + bytes > limit)
        fail_op("capacity",
                "__ubuf__ array of " + std::to_string(bytes) + " bytes at UB offset " + std::to_string(off) + ": static + dynamic UB may "
                "use at most " + std::to_string(limit) + " bytes when SIMT runs (256 KB UB = static + dynamic memory + 8 KB reserved + "
                "Data Cache >= 32 KB, 编程模型 UB划分)",
                "__ubuf__", loc);
    c->simt_static.emplace(key, off);
    c->alloc_high[(int)Mem::UB] = off + bytes;
    c->simt_static_lo = std::min(c->simt_static_lo, off);
    c->simt_static_hi = std::max(c->simt_static_hi, off + bytes);
    return off;
}
}  // namespace simt_rt
}  // namespace emu

namespace AscendC::emu_detail {
TPipe*& current_pipe() {
    static thread_local TPipe* p = nullptr;
    return p;
}
}  // namespace AscendC::emu_detail

// ---- launch -------------------------------------------------------------------------
namespace emu {
namespace {

void thread_main(Core* c) {
    tls = c;
    {
        std::unique_lock<std::mutex> lk(G->mu);
        c->cv.wait(lk, [&] { return G->abort.load() || c->state == RUNNING; });
    }
    if (G->last) G->last[c->gt].active = 1;
    bool clean = false;
    if (!G->abort.load()) {
        try {
            G->entry(G->args);
            clean = true;
        } catch (Abort&) {
        } catch (Fault&) {
        } catch (std::exception& e) {
            add_error("internal", std::string("C++ exception escaped the kernel: ") + e.what(), "", 0, "");
        } catch (...) {
            add_error("internal", "unknown C++ exception escaped the kernel", "", 0, "");
        }
    }
    c->busy.store(0, std::memory_order_release);
    if (!c->ww.empty()) ww_settle(c);
    if (clean) {
        for (int code = 0; code < 128; ++code)
            for (int id = 0; id < 8; ++id) {
                FlagSlot& f = c->flags[code * 8 + id];
                if (!f.set) continue;
                std::string ev = event_name((Pipe)(code / 16), (Pipe)(code % 16));
                std::string j = "{\"kind\":\"pending_at_end\",\"event\":" + jstr(ev) + ",\"id\":" + std::to_string(id) +
                                ",\"line\":" + std::to_string(f.line) + ",\"file\":\"\"," + core_json(c) +
                                ",\"message\":" + jstr("SetFlag<" + ev + ">(" + std::to_string(id) + ") at line " + std::to_string(f.line) +
                                                       " is never waited before the kernel ends") +
                                "}";
                std::lock_guard<std::mutex> lk(G->race_mu);
                G->flag_errors.push_back(j);
            }
    }
    if (clean && !c->ublk.empty()) {
        std::vector<uint32_t> all(c->ublk.size());
        for (uint32_t b = 0; b < all.size(); ++b) all[b] = b;
        size_t nfull = 0;
        const std::string where = unit_where(all, [&](uint32_t b) { return c->ublk[b].bit == 1; }, &nfull);
        if (nfull) {
            uint32_t line = 0;
            for (auto& k : c->ublk)
                if (k.bit == 1) { line = k.line; break; }
            std::string j = "{\"kind\":\"unit_flag\",\"event\":\"unitFlag\",\"id\":-1,\"line\":" + std::to_string(line) +
                            ",\"file\":\"\"," + core_json(c) + ",\"message\":" +
                            jstr(where + " (" + std::to_string(nfull * kUnitBytes) + " bytes of L0C in all) marked full by the Mmad at line " +
                                 std::to_string(line) + " (unitFlag 3) are never read by a Fixpipe with unitFlag 3 before the kernel "
                                 "ends: the next Mmad with unitFlag on them would wait forever (UnitFlag page: the last Fixpipe "
                                 "takes unitFlag 3)") + "}";
            std::lock_guard<std::mutex> lk(G->race_mu);
            G->flag_errors.push_back(j);
        }
    }
    if (clean)
        for (auto& [id, m] : c->mtx)
            if (m.locked) {
                std::string j = "{\"kind\":\"pending_at_end\",\"event\":" + jstr("mutex " + std::to_string(id)) + ",\"id\":" +
                                std::to_string(id) + ",\"line\":" + std::to_string(m.line) + ",\"file\":\"\"," + core_json(c) +
                                ",\"message\":" + jstr("Mutex::Lock(" + std::to_string(id) + ") at line " + std::to_string(m.line) +
                                                       " is never unlocked before the kernel ends") + "}";
                std::lock_guard<std::mutex> lk(G->race_mu);
                G->flag_errors.push_back(j);
            }
    if (G->last) G->last[c->gt].active = 0;
    std::lock_guard<std::mutex> lk(G->mu);
    if (c->state == RUNNING) {
        G->running--;
        G->free_slots++;
    } else if (c->state == BLOCKED) {
        G->blocked--;
    } else if (c->state == READY) {
        G->ready.erase(c->gt);
    }
    c->state = DONE;
    grant_locked();
    check_deadlock_locked(c->block);
}

std::string build_report() {
    std::string o;
    o.reserve(1 << 16);
    o += "{\"arch\":" + jstr(G->arch) + ",\"block_dim\":" + std::to_string(G->block_dim) + ",\"kernel_type_id\":" + std::to_string(G->ktype);
    o += ",\"checks\":" + std::string(G->checks ? "true" : "false");
    o += ",\"auto_sync\":" + std::string(G->auto_sync ? "true" : "false");
    // races
    o += ",\"races_total\":" + std::to_string(G->races_total) + ",\"races\":[";
    bool first = true;
    const char* kinds[3] = {"write-read", "read-write", "write-write"};
    auto opj = [&](const Acc& a) {
        int slot = a.tid / kNumPipes;
        std::string core = a.kind == (uint8_t)CoreKind::AIC ? "AIC" : ("AIV" + std::to_string(G->has_aic ? slot - 1 : slot));
        return "{\"op\":" + jstr(a.name) + ",\"pipe\":" + jstr(kPipeNames[a.tid % kNumPipes]) + ",\"block\":" + std::to_string(a.block) +
               ",\"core\":" + jstr(core) + "," + loc_json(a.file, a.line) + "}";
    };
    for (auto& [k, r] : G->races) {
        if (!first) o += ",";
        first = false;
        o += "{\"mem\":" + jstr(kMemNames[r.mem]) + ",\"kind\":" + jstr(kinds[r.kind]) + ",\"count\":" + std::to_string(r.count);
        if (r.mem == (uint8_t)Mem::GM) {
            o += ",\"where\":" + jstr(gm_where(r.begin, r.end));
        } else {
            o += ",\"where\":" + jstr("block " + std::to_string(r.owner_block) + " " + r.owner + " " + kMemNames[r.mem] + " bytes [" +
                                      std::to_string(r.begin) + ", " + std::to_string(r.end) + ")");
        }
        o += ",\"first\":" + opj(r.a) + ",\"second\":" + opj(r.b) + "}";
    }
    for (auto& j : G->simt_races) {
        if (!first) o += ",";
        first = false;
        o += j;
    }
    o += "],\"flag_errors\":[";
    for (size_t i = 0; i < G->flag_errors.size(); ++i) o += (i ? "," : "") + G->flag_errors[i];
    o += "],\"errors\":[";
    for (size_t i = 0; i < G->errors.size(); ++i) o += (i ? "," : "") + G->errors[i];
    o += "],\"deadlock\":" + (G->deadlock.empty() ? std::string("null") : G->deadlock);
    o += ",\"gm_reads\":{\"bytes\":" + std::to_string(G->gm_read_bytes) + ",\"unique_bytes\":" +
         std::to_string(G->gm_read_unique_bytes) + "}";
    o += ",\"gm_writes\":{\"bytes\":" + std::to_string(G->gm_write_bytes) + ",\"unique_bytes\":" +
         std::to_string(G->gm_write_unique_bytes) + "}";
    o += ",\"gm_written\":[";
    bool fw = true;
    for (auto& r : G->gm)
        if (r.written.load()) {
            o += (fw ? "" : ",") + jstr(r.name);
            fw = false;
        }
    o += "]";
    // trace
    std::map<std::string, int> names;
    std::vector<std::string> name_list;
    auto nid = [&](const char* n) {
        auto it = names.find(n);
        if (it != names.end()) return it->second;
        int i = (int)name_list.size();
        names.emplace(n, i);
        name_list.push_back(n);
        return i;
    };
    std::string th;
    bool truncated = false;
    for (size_t ci = 0; ci < G->cores.size(); ++ci) {
        Core* c = G->cores[ci].get();
        if (ci) th += ",";
        th += "{\"block\":" + std::to_string(c->block) + ",\"core\":" + jstr(c->name()) + ",\"ops\":[";
        char buf[256];
        for (size_t i = 0; i < c->trace.size(); ++i) {
            const OpRec& r = c->trace[i];
            int n = snprintf(buf, sizeof buf, "%s[%d,%d,%d,%u,%d,%d,%llu,%llu,%llu,%u", i ? "," : "", r.kind, r.pipe, nid(r.name), r.line, r.src,
                             r.dst, (unsigned long long)r.bytes, (unsigned long long)r.elems, (unsigned long long)r.macs, r.repeats);
            th.append(buf, n);
            for (uint32_t d = 0; d < r.dep_n; ++d) {
                const Dep& dp = c->deps[r.dep_off + d];
                n = snprintf(buf, sizeof buf, ",%d,%u", dp.gt, dp.idx);
                th.append(buf, n);
            }
            th += "]";
        }
        th += "]}";
    }
    // op counts (independent of the trace cap)
    {
        uint64_t per_pipe[kNumPipes] = {};
        std::map<std::string, uint64_t> per_name;
        for (auto& c : G->cores) {
            for (int p = 0; p < kNumPipes; ++p) per_pipe[p] += c->cnt[p];
            for (auto& [n, k] : c->op_names) per_name[n] += k;
        }
        o += ",\"op_counts\":{";
        bool f = true;
        for (int p = 0; p < kNumPipes; ++p)
            if (per_pipe[p]) {
                o += (f ? "" : ",") + jstr(kPipeNames[p]) + ":" + std::to_string(per_pipe[p]);
                f = false;
            }
        o += "},\"op_counts_by_name\":{";
        f = true;
        for (auto& [n, k] : per_name) {
            o += (f ? "" : ",") + jstr(n) + ":" + std::to_string(k);
            f = false;
        }
        o += "}";
    }
    truncated = G->trace_truncated.load();
    o += ",\"trace\":{\"truncated\":" + std::string(truncated ? "true" : "false") + ",\"names\":[";
    for (size_t i = 0; i < name_list.size(); ++i) o += (i ? "," : "") + jstr(name_list[i]);
    o += "],\"threads\":[" + th + "]}}";
    return o;
}

void end_checks() {
    // cross-core counters and half-finished pairs left at the end
    for (auto& c : G->cores)
        for (int id = 0; id < 32; ++id)
            if (!c->xq[id].empty()) {
                std::string j = "{\"kind\":\"pending_at_end\",\"event\":\"cross-core\",\"id\":" + std::to_string(id) +
                                ",\"line\":0,\"file\":\"\"," + core_json(c.get()) + ",\"message\":" +
                                jstr("cross-core flag " + std::to_string(id) + " of block " + std::to_string(c->block) + " " + c->name() +
                                     " still counts " + std::to_string(c->xq[id].size()) + " unconsumed Set(s) at kernel end") +
                                "}";
                G->flag_errors.push_back(j);
            }
    auto pend = [&](std::map<std::pair<int, int>, Agg>& m, int mode) {
        for (auto& [k, a] : m)
            for (int s = 0; s < 2; ++s)
                if (!a.q[s].empty()) {
                    std::string j = "{\"kind\":\"pending_at_end\",\"event\":\"cross-core\",\"id\":" + std::to_string(k.second) +
                                    ",\"line\":0,\"file\":\"\",\"block\":" + std::to_string(k.first) + ",\"core\":" +
                                    jstr("AIV" + std::to_string(s)) + ",\"message\":" +
                                    jstr("mode-" + std::to_string(mode) + " CrossCoreSetFlag(" + std::to_string(k.second) + ") of AIV" +
                                         std::to_string(s) + " never met the matching Set of the other AIV") +
                                    "}";
                    G->flag_errors.push_back(j);
                }
    };
    pend(G->agg1, 1);
    pend(G->agg2, 2);
}

std::string run_inproc() {
    int n = G->block_dim * G->per_block;
    for (int b = 0; b < G->block_dim; ++b)
        for (int s = 0; s < G->per_block; ++s) {
            auto c = std::make_unique<Core>();
            c->gt = (int)G->cores.size();
            c->block = b;
            c->slot = s;
            c->kind = (G->has_aic && s == 0) ? CoreKind::AIC : CoreKind::AIV;
            c->sub = c->kind == CoreKind::AIV ? s - (G->has_aic ? 1 : 0) : 0;
            c->flags.resize(128 * 8);
            for (int m = 1; m < kNumMems; ++m)
                if (mem_on(c->kind, (Mem)m)) {
                    // On-chip memory holds whatever ran before, not zeros: it starts as all-ones bytes
                    // (NaN in every float type, -1 in the signed integers), so a kernel that reads what it
                    // never wrote (an accumulator it forgot to overwrite, a pad it never filled) gets
                    // visibly wrong numbers instead of the zeros a fresh allocation would give.
                    c->mem[m] = (uint8_t*)malloc(arch_mem_size((Mem)m));
                    memset(c->mem[m], 0xFF, arch_mem_size((Mem)m));
                }
            G->cores.push_back(std::move(c));
        }
    {
        std::lock_guard<std::mutex> lk(G->mu);
        G->free_slots = std::max(1, G->pool);
        for (int i = 0; i < n; ++i) G->ready.insert(i);
        grant_locked();
    }
    std::vector<std::thread> ths;
    ths.reserve(n);
    for (int i = 0; i < n; ++i) ths.emplace_back(thread_main, G->cores[i].get());
    for (auto& t : ths) t.join();
    if (!G->abort.load()) end_checks();
    std::string r = build_report();
    for (auto& c : G->cores)
        for (int m = 1; m < kNumMems; ++m) free(c->mem[m]);
    return r;
}

bool parse_cfg(const char* cfg) {
    std::istringstream in(cfg);
    std::string key;
    while (in >> key) {
        if (key == "block_dim") in >> G->block_dim;
        else if (key == "kernel_type") in >> G->ktype;
        else if (key == "checks") { int v; in >> v; G->checks = v != 0; }
        else if (key == "auto_sync") { int v; in >> v; G->auto_sync = v != 0; }
        else if (key == "pool") in >> G->pool;
        else if (key == "mode0") { int v; in >> v; G->mode0_hint = v != 0; }
        else if (key == "trace_cap") in >> G->trace_cap;
        else if (key == "dcache_lines") in >> G->dcache_lines;
        else if (key.rfind("simt_", 0) == 0) { double v; in >> v; G->simt_cfg[key] = v; }
        else if (key == "gm") {
            unsigned long long b, e;
            std::string name;
            int arg = -1;
            in >> b >> e >> name >> arg;
            G->gm.emplace_back(b, e, name).arg = arg;
        } else {
            std::string rest;
            std::getline(in, rest);
        }
    }
    switch (G->ktype) {
        case KERNEL_TYPE_AIV_ONLY: case KERNEL_TYPE_MIX_AIV_1_0: G->has_aic = false; G->naiv = 1; break;
        case KERNEL_TYPE_AIC_ONLY: case KERNEL_TYPE_MIX_AIC_1_0: G->has_aic = true; G->naiv = 0; break;
        case KERNEL_TYPE_MIX_AIC_1_1: G->has_aic = true; G->naiv = 1; break;
        case KERNEL_TYPE_MIX_AIC_1_2: G->has_aic = true; G->naiv = 2; break;
        default: return false;
    }
    G->per_block = (G->has_aic ? 1 : 0) + G->naiv;
    return G->block_dim >= 1 && G->block_dim <= 4096;
}

// Copies every GM argument (a group of overlapping views together) into its own mapping
// between PROT_NONE guard zones and points the kernel's argument at the copy, so that an
// access past one argument never lands in another: through the API it is outside every
// argument (gm_out_of_bounds), through a raw pointer it faults in a guard zone (reported as
// gm_out_of_bounds in isolated runs). The copy ends within 64 bytes of a page end and keeps
// the caller's address modulo 64 (alignment the kernel may rely on).
bool relocate_gm(void** args) {
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    std::vector<int> order(G->gm.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = (int)i;
    std::sort(order.begin(), order.end(), [](int a, int b) { return G->gm[a].b < G->gm[b].b; });
    for (size_t i = 0; i < order.size();) {
        uint64_t gb = G->gm[order[i]].b, ge = G->gm[order[i]].e;
        size_t j = i + 1;
        while (j < order.size() && G->gm[order[j]].b < ge) ge = std::max(ge, G->gm[order[j++]].e);
        GuardMap m;
        const uint64_t size = ge - gb, data_len = (size + 64 + page - 1) / page * page;
        m.len = kGuard + data_len + kGuard;
        void* base = mmap(nullptr, m.len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED) return false;
        m.base = (uint8_t*)base;
        if (mprotect(m.base + kGuard, data_len, PROT_READ | PROT_WRITE) != 0) return false;
        // big arguments: 2 MB pages make the copy's page faults (and the fork's page tables) cheap
        if (data_len >= (4u << 20)) madvise(m.base + kGuard, data_len, MADV_HUGEPAGE);
        const uint64_t end = (uint64_t)(uintptr_t)(m.base + kGuard + data_len);
        uint64_t start = ((end - size) & ~63ull) + (gb & 63);
        if (start + size > end) start -= 64;
        m.data_b = start;
        m.data_e = start + size;
        m.ob = gb;
        memcpy((void*)(uintptr_t)start, (const void*)(uintptr_t)gb, size);
        for (size_t k = i; k < j; ++k) {
            Region& r = G->gm[order[k]];
            const uint64_t nb = start + (r.b - gb);
            if (r.arg >= 0 && (uint64_t)(uintptr_t)args[r.arg] == r.b) args[r.arg] = (void*)(uintptr_t)nb;
            r.ob = r.b;
            r.e = nb + (r.e - r.b);
            r.b = nb;
            m.regions.push_back(order[k]);
        }
        G->maps.push_back(std::move(m));
        i = j;
    }
    return true;
}

// In-process runs: the results go back into the caller's memory, whole groups.
void copy_back_gm() {
    for (auto& m : G->maps) memcpy((void*)(uintptr_t)m.ob, (const void*)(uintptr_t)m.data_b, m.data_e - m.data_b);
}
void unmap_gm() {
    for (auto& m : G->maps) munmap(m.base, m.len);
    G->maps.clear();
}

// A fault address in a guard zone, as a sentence naming the argument(s), or "".
std::string guard_fault_text(uint64_t a) {
    for (auto& m : G->maps) {
        const uint64_t lo = (uint64_t)(uintptr_t)m.base, hi = lo + m.len;
        if (a < lo || a >= hi || (a >= m.data_b && a < m.data_e)) continue;
        std::string names;
        for (int r : m.regions) names += (names.empty() ? "'" : " / '") + G->gm[r].name + "'";
        const uint64_t size = m.data_e - m.data_b;
        std::string where = a >= m.data_e ? "past the end" : "before the start";
        return "raw __gm__ pointer access " + where + " of argument " + names + " (" + std::to_string(size) +
               " bytes): at its byte offset " + std::to_string((int64_t)(a - m.data_b)) +
               " (not an API call, so no line; index __gm__ pointers within their argument)";
    }
    return "";
}

FaultInfo* g_fault = nullptr;
void on_fault(int sig, siginfo_t* si, void*) {
    if (g_fault && !g_fault->set) {
        g_fault->addr = (uint64_t)(uintptr_t)si->si_addr;
        g_fault->gt = tls ? tls->gt : -1;
        g_fault->set = 1;
    }
    signal(sig, SIG_DFL);  // returning re-runs the access, which now kills the process
}

char* dup_str(const std::string& s) {
    char* p = (char*)malloc(s.size() + 1);
    memcpy(p, s.c_str(), s.size() + 1);
    return p;
}

// only_gt >= 0: one error, for that core (the one that faulted), of kind `kind`.
std::string crash_report(const std::string& why, LastOp* last, int n, const char* kind = "crash", int only_gt = -1) {
    std::string errs;
    for (int i = 0; i < n; ++i) {
        if (!last[i].active || (only_gt >= 0 && i != only_gt)) continue;
        std::string core = G->has_aic ? (i % G->per_block == 0 ? "AIC" : "AIV" + std::to_string(i % G->per_block - 1))
                                      : "AIV0";
        if (!errs.empty()) errs += ",";
        errs += "{\"kind\":" + jstr(kind) + ",\"message\":" +
                jstr(why + (last[i].name ? "; this core's last emulated op was " + std::string(last[i].name) + " at line " +
                                                std::to_string(last[i].line)
                                          : std::string("; this core had run no emulated op yet"))) +
                ",\"line\":" + std::to_string(last[i].line) + ",\"file\":" + jstr(last[i].file ? base_name(last[i].file) : "") +
                ",\"block\":" + std::to_string(i / G->per_block) + ",\"core\":" + jstr(core) + ",\"op\":\"\"}";
    }
    if (errs.empty())
        errs = "{\"kind\":\"crash\",\"message\":" + jstr(why) + ",\"line\":0,\"file\":\"\",\"block\":-1,\"core\":\"\",\"op\":\"\"}";
    return "{\"arch\":" + jstr(G->arch) + ",\"block_dim\":" + std::to_string(G->block_dim) + ",\"kernel_type_id\":" +
           std::to_string(G->ktype) + ",\"races_total\":0,\"races\":[],\"flag_errors\":[],\"errors\":[" + errs +
           "],\"deadlock\":null,\"trace\":null}";
}

std::mutex g_run_mu;

void write_all(int fd, const void* p, size_t n) {
    const char* c = (const char*)p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        c += w;
        n -= (size_t)w;
    }
}

struct Reader {
    int fd;
    struct timespec t0;
    double timeout_s;
    bool timed_out = false;
    bool read(void* dst, size_t n) {
        char* p = (char*)dst;
        while (n > 0) {
            int wait_ms = -1;
            if (timeout_s > 0) {
                struct timespec t1;
                clock_gettime(CLOCK_MONOTONIC, &t1);
                double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
                if (el >= timeout_s) {
                    timed_out = true;
                    return false;
                }
                wait_ms = (int)std::max(1.0, (timeout_s - el) * 1000.0);
            }
            struct pollfd pfd{fd, POLLIN, 0};
            int pr = poll(&pfd, 1, wait_ms);
            if (pr < 0 && errno == EINTR) continue;
            if (pr < 0) return false;
            if (pr == 0) continue;
            ssize_t r = ::read(fd, p, n);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return false;
            p += r;
            n -= (size_t)r;
        }
        return true;
    }
};

}  // namespace
}  // namespace emu

// The runtime's C entry points carry a reserved prefix (a double underscore: no kernel, generated or
// written by hand in valid C++, defines such a name), so no kernel named emu_run or the like can stand
// in for them when runner.py looks them up through the kernel library.
extern "C" {

const char* __tl_ascend_emu_arch() { return emu::is_c220() ? "dav-c220" : "dav-3510"; }

// Runs one launch. Returns a malloc'd JSON report (free with __tl_ascend_emu_free).
// isolate: run in a forked child (GM must then be MAP_SHARED memory); timeout_s <= 0: none.
char* __tl_ascend_emu_run(const char* cfg, void (*entry)(void**), void** args, int isolate, double timeout_s) {
    using namespace emu;
    std::lock_guard<std::mutex> run_lk(g_run_mu);
    auto g = std::make_unique<Global>();
    G = g.get();
    G->arch = __tl_ascend_emu_arch();
    G->entry = entry;
    G->args = args;
    if (!parse_cfg(cfg)) {
        std::string r = crash_report("invalid launch configuration (kernel type or block_dim)", nullptr, 0);
        G = nullptr;
        return dup_str(r);
    }
    int n = G->block_dim * G->per_block;
    if (!relocate_gm(args)) {
        unmap_gm();
        G = nullptr;
        return dup_str("{\"fatal\":\"mmap of the guarded GM copies failed\"}");
    }
    if (!isolate) {
        std::vector<LastOp> last(n);
        G->last = last.data();
        std::string r = run_inproc();
        copy_back_gm();
        unmap_gm();
        G = nullptr;
        return dup_str(r);
    }
    // one shared page: each core's last op, then what a fatal signal hit
    size_t last_bytes = sizeof(LastOp) * (size_t)n + sizeof(FaultInfo);
    auto* last = (LastOp*)mmap(nullptr, last_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (last == MAP_FAILED) {
        unmap_gm();
        G = nullptr;
        return dup_str("{\"fatal\":\"mmap failed\"}");
    }
    memset(last, 0, last_bytes);
    G->last = last;
    g_fault = reinterpret_cast<FaultInfo*>(last + n);
    int fds[2];
    if (pipe(fds) != 0) {
        munmap(last, last_bytes);
        unmap_gm();
        G = nullptr;
        return dup_str("{\"fatal\":\"pipe failed\"}");
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        // restore default crash handlers (the parent's, e.g. Python's faulthandler, must not run here)
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, SIG_DFL);
        // a fault records its address first, so the parent can tell a guard-zone hit (raw
        // pointer out of bounds) from any other crash
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, nullptr);
        sigaction(SIGBUS, &sa, nullptr);
        close(fds[0]);
        std::string r = run_inproc();
        fflush(stdout);
        fflush(stderr);
        // stream: u64 json length, json, then chunks {u32 region, u64 offset, u64 bytes, data},
        // ended by region 0xffffffff. Regions the API wrote go back whole; in the others only
        // the pages this process modified (raw __gm__ pointer writes), found in
        // /proc/self/pagemap as present + exclusively mapped after the fork.
        uint64_t jl = r.size();
        write_all(fds[1], &jl, sizeof jl);
        write_all(fds[1], r.data(), r.size());
        auto chunk = [&](uint32_t idx, uint64_t off, uint64_t nb) {
            write_all(fds[1], &idx, sizeof idx);
            write_all(fds[1], &off, sizeof off);
            write_all(fds[1], &nb, sizeof nb);
            write_all(fds[1], (const void*)(uintptr_t)(G->gm[idx].b + off), nb);
        };
        int pm = open("/proc/self/pagemap", O_RDONLY);
        const uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
        for (uint32_t idx = 0; idx < G->gm.size(); ++idx) {
            Region& reg = G->gm[idx];
            if (reg.written.load() || pm < 0) {
                chunk(idx, 0, reg.e - reg.b);
                continue;
            }
            uint64_t p0 = reg.b / ps, p1 = (reg.e - 1) / ps + 1;
            std::vector<uint64_t> ent(p1 - p0);
            if (pread(pm, ent.data(), ent.size() * 8, (off_t)(p0 * 8)) != (ssize_t)(ent.size() * 8)) {
                chunk(idx, 0, reg.e - reg.b);
                continue;
            }
            for (uint64_t i = 0; i < ent.size();) {
                auto dirty = [&](uint64_t k) { return (ent[k] >> 63 & 1) && (ent[k] >> 56 & 1); };
                if (!dirty(i)) { ++i; continue; }
                uint64_t j = i;
                while (j < ent.size() && dirty(j)) ++j;
                uint64_t lo = std::max(reg.b, (p0 + i) * ps), hi = std::min(reg.e, (p0 + j) * ps);
                chunk(idx, lo - reg.b, hi - lo);
                i = j;
            }
        }
        uint32_t end = 0xffffffffu;
        write_all(fds[1], &end, sizeof end);
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    std::string out;
    std::string why;
    if (pid < 0) {
        why = "fork failed";
    } else {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        Reader rd{fds[0], t0, timeout_s};
        uint64_t jl = 0;
        if (rd.read(&jl, sizeof jl) && jl < (1ull << 34)) {
            out.resize(jl);
            if (!rd.read(out.data(), jl)) out.clear();
            // results: GM bytes straight into the caller's memory
            while (!out.empty()) {
                uint32_t idx;
                uint64_t off, nb;
                if (!rd.read(&idx, sizeof idx) || idx == 0xffffffffu) break;
                if (!rd.read(&off, sizeof off) || !rd.read(&nb, sizeof nb) || idx >= G->gm.size() ||
                    off + nb > G->gm[idx].e - G->gm[idx].b) {
                    why = "corrupt result stream from the kernel process";
                    break;
                }
                if (!rd.read((void*)(uintptr_t)(G->gm[idx].ob + off), nb)) break;  // the caller's memory
            }
        }
        if (rd.timed_out) {
            kill(pid, SIGKILL);
            why = "the kernel did not finish within " + std::to_string((int)timeout_s) +
                  " s (a loop without emulated ops? set TL_ASCEND_EMU_TIMEOUT to change the limit)";
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (why.empty()) {
            if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                why = std::string("the kernel process died with signal ") + std::to_string(sig) + " (" + strsignal(sig) +
                      "), e.g. a wild pointer in kernel code";
                if (g_fault->set) {
                    char t[32];
                    snprintf(t, sizeof t, "0x%llx", (unsigned long long)g_fault->addr);
                    std::string oob = guard_fault_text(g_fault->addr);
                    if (!oob.empty()) {
                        std::string r = crash_report(oob, last, n, "gm_out_of_bounds", g_fault->gt);
                        close(fds[0]);
                        munmap(last, last_bytes);
                        unmap_gm();
                        g_fault = nullptr;
                        G = nullptr;
                        return dup_str(r);
                    }
                    why += std::string(" at address ") + t;
                }
            } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                why = "the kernel process exited with status " + std::to_string(WEXITSTATUS(status));
            } else if (out.empty()) {
                why = "the kernel process produced no report";
            }
        }
    }
    close(fds[0]);
    std::string r = why.empty() ? out : crash_report(why, last, n);
    munmap(last, last_bytes);
    unmap_gm();
    g_fault = nullptr;
    G = nullptr;
    return dup_str(r);
}

void __tl_ascend_emu_free(char* p) { free(p); }
}
