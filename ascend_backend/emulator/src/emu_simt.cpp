// emu_simt.cpp: the SIMT engine of the emulator (dav-3510), written from the SIMT-API pages.
//
// asc_vf_call<f>(dim3, args...) on an AIV runs f as one thread block on that AIV's core thread:
// every SIMT thread is a fiber (its own stack; a 60-instruction context switch on x86-64,
// ucontext elsewhere) and a scheduler resumes them warp by warp. A thread runs until it reaches
// a warp function, a barrier or its end (or, every kFair memory accesses, yields so that spin
// loops on memory another thread writes make progress). When no lane of a warp can run, the
// lanes waiting at the warp function with the lowest source position execute it together: they
// are the active lanes (Warp函数简介: lanes on another path are inactive). When no thread of the
// block can run and all wait at one asc_syncthreads, the barrier opens; threads that ended or
// wait elsewhere make it a deadlock report naming the lines, never a hang.
//
// Memory: every load and store of a SIMT thread goes through load()/store() (the pointer
// classes of emu_simt.h). UB accesses are checked against what the kernel allocated, and for
// thread races: a per-byte shadow of the current barrier interval keeps the last writer and
// two readers; two threads touching a byte in one interval, one writing, race (atomics not
// with atomics; a second write of the identical bytes is not a race). GM accesses are checked
// against the arguments. The whole call is then recorded as one PIPE_V op reading and writing
// the union of the bytes its threads touched, so the pipe-level checks see it like any op.
#include "emu_types.h"
#include "emu_core.h"
#include "emu_simt.h"

#if defined(EMU_ARCH_3510)

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

thread_local dim3 threadIdx{0, 0, 0};
thread_local dim3 blockIdx{0, 0, 0};
thread_local dim3 blockDim{1, 1, 1};
thread_local dim3 gridDim{1, 1, 1};

#if defined(__x86_64__)
// void emu_simt_switch(void** save_sp, void* new_sp): saves the callee-saved registers, MXCSR
// and the x87 control word on the current stack, stores the stack pointer to *save_sp and
// resumes the context whose stack pointer is new_sp (System V x86-64 ABI).
extern "C" void emu_simt_switch(void** save_sp, void* new_sp);
asm(R"(
    .text
    .p2align 4
    .globl emu_simt_switch
    .hidden emu_simt_switch
    .type emu_simt_switch,@function
emu_simt_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_simt_switch,.-emu_simt_switch
)");
#endif

namespace emu::simt {
namespace {

constexpr uint32_t kWarp = 32;
constexpr uint32_t kMaxThreads = 2048;
constexpr size_t kStack = 128 * 1024;  // per thread (virtual; a guard page at the bottom)
constexpr uint64_t kFair = 4096;       // accesses between two yields of a running thread
constexpr uint64_t kUbTotal = 256 * 1024, kUbReserved = 8 * 1024, kDcacheMin = 32 * 1024, kDcacheMax = 128 * 1024;

enum St : uint8_t { S_NEW, S_RUN, S_COLL, S_BAR, S_DONE };
struct Cancel {};

struct Th {
    void* sp = nullptr;
#if !defined(__x86_64__)
    ucontext_t uc;
#endif
    uint32_t tid = 0;
    dim3 idx;
    uint8_t st = S_NEW;
    uint8_t kind = 0, ty = 0;
    uint64_t in = 0, out = 0;
    int32_t a = 0, b = 0;
    const char* file = "";
    uint32_t line = 0, col = 0;
    uint64_t acc = 0;
};

// Shadow of one UB byte for the current barrier interval `ep`.
// w: the last writer; w2: another thread whose atomic w's atomic followed (atomics do not race,
// but a later plain access races with both); r1, r2: two readers.
enum : uint8_t { F_W = 1, F_WPLAIN = 2, F_R1 = 4, F_R2 = 8, F_W2 = 16 };
struct Sh {
    uint32_t ep;
    uint16_t w, w2, r1, r2;
    uint8_t fl;
    const void* wpc;
    const void* w2pc;
    const void* r1pc;
    const void* r2pc;
};

// What a run needs that is worth keeping between calls: the stacks and the UB shadow
// (pooled: at most one per core thread running a SIMT call at a time).
struct Engine {
    uint8_t* stacks = nullptr;
    std::vector<Th> th;
    std::vector<Sh> sh;
    std::vector<uint64_t> bm_r, bm_w, bm_a;  // UB bytes read / written / updated atomically by this call
    std::vector<uint8_t> ub_pre;             // UB as it was before the call (identical-writes check)
};
std::mutex g_pool_mu;
std::vector<Engine*> g_pool;

Engine* acquire_engine() {
    {
        std::lock_guard<std::mutex> lk(g_pool_mu);
        if (!g_pool.empty()) {
            Engine* e = g_pool.back();
            g_pool.pop_back();
            return e;
        }
    }
    Engine* e = new Engine;
    const size_t total = kStack * kMaxThreads;
    void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        delete e;
        return nullptr;
    }
    e->stacks = (uint8_t*)m;
    const long pg = sysconf(_SC_PAGESIZE);
    for (uint32_t i = 0; i < kMaxThreads; ++i) mprotect(e->stacks + i * kStack, (size_t)pg, PROT_NONE);
    e->th.resize(kMaxThreads);
    const size_t ub = mem_size(Mem::UB);
    e->sh.assign(ub, Sh{0, 0, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr});
    e->bm_r.assign(ub / 64 + 1, 0);
    e->bm_w.assign(ub / 64 + 1, 0);
    e->bm_a.assign(ub / 64 + 1, 0);
    return e;
}
void release_engine(Engine* e) {
    std::lock_guard<std::mutex> lk(g_pool_mu);
    g_pool.push_back(e);
}
std::atomic<uint32_t> g_epoch{1};  // barrier intervals, unique in the process

enum AccKind : uint8_t { K_READ, K_WRITE, K_ATOMIC };
struct GmAcc {
    uint64_t b, e;
    uint8_t k;
};
struct RaceKey {
    uint8_t kind;
    const void* pa;
    const void* pb;
    bool operator==(const RaceKey& o) const { return kind == o.kind && pa == o.pa && pb == o.pb; }
};
struct RaceKeyHash {
    size_t operator()(const RaceKey& k) const {
        return std::hash<const void*>()(k.pa) * 31 ^ std::hash<const void*>()(k.pb) ^ k.kind;
    }
};
struct RaceInfo {
    uint32_t ta, tb;
    uint8_t ka, kb;  // AccKind of each access
    uint64_t lo, hi;
    uint64_t count;   // racing access pairs (not bytes)
    uint64_t last;    // serial of the access counted last
};

struct Ctx {
    Engine* eng = nullptr;
    Th* th = nullptr;
    uint32_t n = 0;
    dim3 bdim;
    void* main_sp = nullptr;
#if !defined(__x86_64__)
    ucontext_t main_uc;
#endif
    Th* cur = nullptr;
    void (*thunk)(void*) = nullptr;
    void* arg = nullptr;
    std::exception_ptr err;
    bool cancel = false;
    uint8_t* ub = nullptr;
    uint64_t ub_alloc = 0;  // UB bytes the kernel allocated (the rest is reserved space and Data Cache)
    uint32_t ep = 0;
    bool checks = true;
    uint64_t ub_lo = ~0ull, ub_hi = 0;
    std::vector<GmAcc> gm;
    uint64_t gm_rb = 0, gm_re = 0;  // the argument region of the last GM access
    std::unordered_map<RaceKey, RaceInfo, RaceKeyHash> races;
    uint64_t races_total = 0;
    uint64_t acc_serial = 0;  // numbers the accesses, so a race is counted once per access
    // GM bytes as they were before the call's first write to them: 8-byte word -> (bytes, saved mask)
    std::unordered_map<uint64_t, std::pair<uint64_t, uint8_t>> gm_pre;
    // counts for the timing model
    uint64_t n_ub = 0, n_gm = 0, n_atom = 0, n_coll = 0, n_bar = 0, gm_bytes = 0;
    uint64_t warp_phases = 0;
};
thread_local Ctx* T = nullptr;

[[noreturn]] void fail_here(const char* kind, const std::string& msg, const void* pc, const char* op) {
    simt_rt::fail_pc(kind, msg, pc, op);
}

std::string thread_name(const Ctx* c, uint32_t tid) {
    const dim3& b = c->bdim;
    std::string s = "thread " + std::to_string(tid);
    if (b.y > 1 || b.z > 1) {
        s += " (threadIdx " + std::to_string(tid % b.x) + ", " + std::to_string(tid / b.x % b.y);
        if (b.z > 1) s += ", " + std::to_string(tid / (b.x * b.y));
        s += ")";
    }
    return s;
}

// ---- fibers -----------------------------------------------------------------------------
void fiber_main() {
    Ctx* c = T;
    Th* t = c->cur;
    std::exception_ptr ep;
    try {
        c->thunk(c->arg);
    } catch (Cancel&) {
    } catch (...) {
        ep = std::current_exception();
    }
    if (ep && !c->err) c->err = ep;
    t->st = S_DONE;
#if defined(__x86_64__)
    emu_simt_switch(&t->sp, c->main_sp);
#else
    setcontext(&c->main_uc);
#endif
    __builtin_unreachable();
}

void prepare(Ctx* c, Th* t) {
    uint8_t* top = c->eng->stacks + (size_t)(t->tid + 1) * kStack;
#if defined(__x86_64__)
    uint64_t* s = (uint64_t*)((uintptr_t)top & ~(uintptr_t)15);
    s[-1] = 0;                              // fake return address of fiber_main
    s[-2] = (uint64_t)(uintptr_t)&fiber_main;  // where the switch's `ret` goes
    for (int i = 3; i <= 8; ++i) s[-i] = 0;   // rbp, rbx, r12-r15
    uint32_t mx;
    uint16_t cw;
    asm volatile("stmxcsr %0" : "=m"(mx));
    asm volatile("fnstcw %0" : "=m"(cw));
    uint64_t ctl = (uint64_t)mx | ((uint64_t)cw << 32);
    s[-9] = ctl;
    t->sp = &s[-9];
#else
    getcontext(&t->uc);
    t->uc.uc_stack.ss_sp = c->eng->stacks + (size_t)t->tid * kStack + 4096;
    t->uc.uc_stack.ss_size = kStack - 4096;
    t->uc.uc_link = nullptr;
    makecontext(&t->uc, (void (*)())fiber_main, 0);
    (void)top;
#endif
}

void resume(Ctx* c, Th* t) {
    if (t->st == S_NEW) prepare(c, t);
    t->st = S_RUN;
    c->cur = t;
    threadIdx = t->idx;
#if defined(__x86_64__)
    emu_simt_switch(&c->main_sp, t->sp);
#else
    swapcontext(&c->main_uc, &t->uc);
#endif
    c->cur = nullptr;
}

// Called on a thread's stack: back to the scheduler until resumed.
void suspend(Ctx* c, Th* t) {
#if defined(__x86_64__)
    emu_simt_switch(&t->sp, c->main_sp);
#else
    swapcontext(&t->uc, &c->main_uc);
#endif
    if (c->cancel) throw Cancel{};
}

// Unwinds every thread that started and has not ended (after an error), so no stack is left
// with live objects.
void cancel_all(Ctx* c) {
    c->cancel = true;
    for (uint32_t i = 0; i < c->n; ++i) {
        Th* t = &c->th[i];
        if (t->st == S_NEW) t->st = S_DONE;
        else if (t->st != S_DONE) resume(c, t);
    }
}

// ---- memory ------------------------------------------------------------------------------
inline void bits_set(std::vector<uint64_t>& bm, uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) bm[i >> 6] |= 1ull << (i & 63);
}

void race(Ctx* c, uint8_t kind, uint32_t ta, uint8_t ka, const void* pa, uint32_t tb, uint8_t kb, const void* pb, uint64_t at) {
    RaceKey k{kind, pa, pb};
    auto it = c->races.find(k);
    if (it != c->races.end()) {
        RaceInfo& r = it->second;
        if (r.last != c->acc_serial) {
            r.last = c->acc_serial;
            r.count++;
            c->races_total++;
        }
        r.lo = std::min(r.lo, at);
        r.hi = std::max(r.hi, at + 1);
        return;
    }
    c->races_total++;
    if (c->races.size() >= 100) return;
    c->races.emplace(k, RaceInfo{ta, tb, ka, kb, at, at + 1, 1, c->acc_serial});
}

// Thread-race check of one access of thread `tid` to UB bytes [b, e) (one barrier interval).
void shadow(Ctx* c, uint64_t b, uint64_t e, uint8_t k, uint16_t tid, const void* pc, const uint8_t* newv) {
    Sh* sh = c->eng->sh.data();
    const uint32_t ep = c->ep;
    c->acc_serial++;
    for (uint64_t i = b; i < e; ++i) {
        Sh& s = sh[i];
        if (s.ep != ep) s = Sh{ep, 0, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr};
        if (k == K_READ) {
            if ((s.fl & F_W) && s.w != tid)
                race(c, 0, s.w, (s.fl & F_WPLAIN) ? K_WRITE : K_ATOMIC, s.wpc, tid, K_READ, pc, i);
            else if ((s.fl & F_W2) && s.w2 != tid)
                race(c, 0, s.w2, K_ATOMIC, s.w2pc, tid, K_READ, pc, i);
            if (!(s.fl & F_R1)) {
                s.r1 = tid, s.r1pc = pc, s.fl |= F_R1;
            } else if (s.r1 != tid && !(s.fl & F_R2)) {
                s.r2 = tid, s.r2pc = pc, s.fl |= F_R2;
            }
            continue;
        }
        // a write or an atomic read-modify-write
        if ((s.fl & F_R1) && s.r1 != tid) race(c, 1, s.r1, K_READ, s.r1pc, tid, k, pc, i);
        else if ((s.fl & F_R2) && s.r2 != tid) race(c, 1, s.r2, K_READ, s.r2pc, tid, k, pc, i);
        const bool same_data = k == K_WRITE && newv && newv[i - b] == c->ub[i];
        if ((s.fl & F_W) && s.w != tid) {
            const bool both_atomic = k == K_ATOMIC && !(s.fl & F_WPLAIN);
            if (!both_atomic && !same_data)
                race(c, 2, s.w, (s.fl & F_WPLAIN) ? K_WRITE : K_ATOMIC, s.wpc, tid, k, pc, i);
        } else if ((s.fl & F_W2) && s.w2 != tid && k == K_WRITE && !same_data) {
            race(c, 2, s.w2, K_ATOMIC, s.w2pc, tid, k, pc, i);
        }
        if (k == K_WRITE) {
            s.w = tid, s.wpc = pc, s.fl = (uint8_t)((s.fl | F_W | F_WPLAIN) & ~F_W2);
        } else if (!(s.fl & F_WPLAIN)) {  // an atomic does not hide an earlier plain write
            if ((s.fl & F_W) && s.w != tid) s.w2 = s.w, s.w2pc = s.wpc, s.fl |= F_W2;
            s.w = tid, s.wpc = pc, s.fl |= F_W;
        }
    }
}

inline void note_gm(Ctx* c, uint64_t b, uint64_t e, uint8_t k) {
    if (!c->gm.empty()) {
        GmAcc& g = c->gm.back();
        if (g.k == k && b <= g.e && e >= g.b) {
            g.b = std::min(g.b, b);
            g.e = std::max(g.e, e);
            return;
        }
    }
    c->gm.push_back(GmAcc{b, e, k});
    if (c->gm.size() >= (1u << 22)) {  // keep the list compact: sort and merge
        std::sort(c->gm.begin(), c->gm.end(), [](const GmAcc& x, const GmAcc& y) { return x.k != y.k ? x.k < y.k : x.b < y.b; });
        std::vector<GmAcc> m;
        for (auto& g : c->gm) {
            if (!m.empty() && m.back().k == g.k && g.b <= m.back().e) m.back().e = std::max(m.back().e, g.e);
            else m.push_back(g);
        }
        c->gm.swap(m);
    }
}

Ctx* need_ctx(const char* what, const void* pc) {
    Ctx* c = T;
    if (!c || !c->cur)
        fail_here("invalid_param", std::string(what) + " outside a SIMT function: __ubuf__/__gm__ pointers of this kind exist only in code "
                                   "started by asc_vf_call<f>(dim3, ...)", pc, what);
    return c;
}

// Bounds, counts and race checks of one access; returns the host address.
uint8_t* access(Ctx* c, uint8_t space, uint64_t a, uint32_t n, uint8_t k, const void* pc, const uint8_t* newv, const char* what) {
    Th* t = c->cur;
    if (++t->acc >= kFair) {  // let spin loops on memory other threads write make progress
        t->acc = 0;
        simt_rt::poll_abort();
        suspend(c, t);
    }
    if (space == UB) {
        if (a + n > c->ub_alloc || a + n < a) {
            fail_here("local_out_of_bounds",
                      std::string(what) + " of " + thread_name(c, t->tid) + ": UB bytes [" + std::to_string(a) + ", " + std::to_string(a + n) +
                          ") lie beyond the " + std::to_string(c->ub_alloc) +
                          " bytes of UB the kernel allocated (TPipe/TBuf, LocalMemAllocator or __ubuf__ arrays); the rest of UB is the "
                          "8 KB reserved space and the SIMT Data Cache (编程模型 UB划分: accesses must stay inside the static and "
                          "dynamic memory)",
                      pc, what);
        }
        c->n_ub++;
        if (a < c->ub_lo) c->ub_lo = a;
        if (a + n > c->ub_hi) c->ub_hi = a + n;
        auto& bm = k == K_READ ? c->eng->bm_r : (k == K_WRITE ? c->eng->bm_w : c->eng->bm_a);
        bits_set(bm, a, a + n);
        if (c->checks) shadow(c, a, a + n, k, (uint16_t)t->tid, pc, newv);
        return c->ub + a;
    }
    if (!(a >= c->gm_rb && a + n <= c->gm_re)) {
        std::string msg;
        if (!simt_rt::gm_region(a, a + n, &c->gm_rb, &c->gm_re, &msg))
            fail_here("gm_out_of_bounds", std::string(what) + " of " + thread_name(c, t->tid) + ": " + msg, pc, what);
    }
    c->n_gm++;
    c->gm_bytes += n;
    note_gm(c, a, a + n, k);
    if (k != K_READ && c->checks)
        for (uint64_t x = a; x < a + n; ++x) {
            auto& [bytes, mask] = c->gm_pre[x >> 3];
            const uint8_t bit = (uint8_t)(1u << (x & 7));
            if (!(mask & bit)) {
                mask |= bit;
                std::memcpy((uint8_t*)&bytes + (x & 7), (const void*)(uintptr_t)x, 1);
            }
        }
    return (uint8_t*)(uintptr_t)a;
}

// ---- warp functions ------------------------------------------------------------------------
uint64_t poison(uint8_t ty) {
    switch (ty) {
        case I64: case U64: return ~0ull;
        case F16: case BF16: return 0xffffull;
        default: return 0xffffffffull;
    }
}
float bits_float(uint8_t ty, uint64_t v) {
    if (ty == F32) { float f; uint32_t u = (uint32_t)v; std::memcpy(&f, &u, 4); return f; }
    if (ty == F16) return (float)half::from_bits((uint16_t)v);
    return (float)bfloat16_t::from_bits((uint16_t)v);
}
uint64_t float_bits(uint8_t ty, float f) {
    if (ty == F32) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
    if (ty == F16) return half(f).bits();
    return bfloat16_t(f).bits();
}
bool is_float_ty(uint8_t ty) { return ty == F32 || ty == F16 || ty == BF16; }
// a OP b for the reductions (floats in float, rounded to the type each step; NaN propagates
// in max/min as in the vector Max/Min; integers wrap)
uint64_t red2(uint8_t kind, uint8_t ty, uint64_t a, uint64_t b) {
    if (is_float_ty(ty)) {
        const float x = bits_float(ty, a), y = bits_float(ty, b);
        float r;
        if (kind == RED_ADD) r = x + y;
        else if (std::isnan(x) || std::isnan(y)) r = NAN;
        else r = kind == RED_MAX ? (x > y ? x : y) : (x < y ? x : y);
        return float_bits(ty, r);
    }
    if (ty == I32) {
        const int32_t x = (int32_t)(uint32_t)a, y = (int32_t)(uint32_t)b;
        if (kind == RED_ADD) return (uint32_t)((uint32_t)x + (uint32_t)y);
        return (uint32_t)(kind == RED_MAX ? std::max(x, y) : std::min(x, y));
    }
    const uint32_t x = (uint32_t)a, y = (uint32_t)b;
    if (kind == RED_ADD) return (uint32_t)(x + y);
    return kind == RED_MAX ? std::max(x, y) : std::min(x, y);
}

// The lanes `lanes` (of warp w) execute the warp function they wait at, together.
void exec_collective(Ctx* c, uint32_t w, const std::vector<uint32_t>& lanes) {
    Th* th = c->th;
    uint32_t active = 0;
    for (uint32_t l : lanes) active |= 1u << l;
    Th& first = th[w * kWarp + lanes[0]];
    const uint8_t kind = first.kind, ty = first.ty;
    auto val_of = [&](uint32_t l) -> uint64_t { return (active >> l & 1u) ? th[w * kWarp + l].in : poison(ty); };
    c->n_coll++;
    switch (kind) {
        case SHFL: case SHFL_UP: case SHFL_DOWN: case SHFL_XOR:
            for (uint32_t l : lanes) {
                Th& t = th[w * kWarp + l];
                const int32_t width = t.b;
                const uint32_t base = l & ~(uint32_t)(width - 1);
                int64_t src = l;
                if (kind == SHFL) {
                    src = base + (uint32_t)(((t.a % width) + width) % width);
                } else if (kind == SHFL_UP) {
                    const uint32_t d = (uint32_t)t.a;
                    src = (d >= (uint32_t)width || l - base < d) ? l : (int64_t)l - d;
                } else if (kind == SHFL_DOWN) {
                    const uint32_t d = (uint32_t)t.a;
                    src = (d >= (uint32_t)width || (uint64_t)(l - base) + d >= (uint64_t)width) ? l : (int64_t)l + d;
                } else {
                    const int64_t d = (int64_t)(l ^ (uint32_t)t.a);
                    src = d > (int64_t)(base + width - 1) ? l : d;
                }
                t.out = (src == l) ? t.in : val_of((uint32_t)src);
            }
            break;
        case RED_ADD: case RED_MAX: case RED_MIN: {
            // a binary tree over the lanes (adjacent pairs first; the pages: a bisection
            // algorithm, so float sums may differ from a sequential sum), inactive lanes absent
            uint64_t v[kWarp];
            bool has[kWarp];
            for (uint32_t l = 0; l < kWarp; ++l) {
                has[l] = active >> l & 1u;
                v[l] = has[l] ? th[w * kWarp + l].in : 0;
            }
            for (uint32_t s = 1; s < kWarp; s <<= 1)
                for (uint32_t l = 0; l + s < kWarp; l += 2 * s) {
                    if (has[l] && has[l + s]) v[l] = red2(kind, ty, v[l], v[l + s]);
                    else if (has[l + s]) v[l] = v[l + s], has[l] = true;
                }
            for (uint32_t l : lanes) th[w * kWarp + l].out = v[0];
            break;
        }
        case ALL: case ANY: case BALLOT: {
            uint32_t ball = 0;
            for (uint32_t l : lanes)
                if (th[w * kWarp + l].in) ball |= 1u << l;
            const uint64_t r = kind == BALLOT ? ball : kind == ANY ? (ball != 0) : (ball == active);
            for (uint32_t l : lanes) th[w * kWarp + l].out = r;
            break;
        }
        case ACTIVEMASK:
            for (uint32_t l : lanes) th[w * kWarp + l].out = active;
            break;
    }
    for (uint32_t l : lanes) th[w * kWarp + l].st = S_RUN;
}

std::string site(const char* file, uint32_t line) {
    (void)file;
    return "line " + std::to_string(line);
}

// ---- the scheduler -----------------------------------------------------------------------------
[[noreturn]] void deadlock(Ctx* c, const std::string& msg, const std::vector<uint32_t>& who) {
    std::string ws;
    size_t shown = 0;
    for (uint32_t tid : who) {
        if (shown++ >= 8) break;
        const Th& t = c->th[tid];
        if (!ws.empty()) ws += ",";
        ws += "{\"thread\":" + std::to_string(tid) + ",\"line\":" + std::to_string(t.line) + ",\"state\":\"" +
              (t.st == S_DONE ? "ended" : t.st == S_BAR ? "asc_syncthreads" : "warp function") + "\"}";
    }
    cancel_all(c);
    simt_rt::fail_deadlock("SIMT block " + std::to_string(simt_rt::block()), msg, ws);
}

void check_barrier(Ctx* c) {
    std::vector<uint32_t> at_bar, ended;
    for (uint32_t i = 0; i < c->n; ++i) {
        if (c->th[i].st == S_BAR) at_bar.push_back(i);
        else if (c->th[i].st == S_DONE) ended.push_back(i);
    }
    const Th& f = c->th[at_bar[0]];
    std::map<uint32_t, std::vector<uint32_t>> by_line;  // barrier sites (line, col) in use
    for (uint32_t tid : at_bar) by_line[c->th[tid].line * 4096u + c->th[tid].col].push_back(tid);
    if (!ended.empty()) {
        std::string msg = "asc_syncthreads at line " + std::to_string(f.line) + " is never reached by every thread of the block: " +
                          std::to_string(at_bar.size()) + " of " + std::to_string(c->n) + " threads wait there, " +
                          std::to_string(ended.size()) + " ended without reaching it (" + thread_name(c, ended[0]) +
                          (ended.size() > 1 ? ", ..." : "") + "); every thread of the block must call asc_syncthreads "
                          "(asc_syncthreads page: otherwise the block deadlocks), e.g. do not return early before a barrier";
        std::vector<uint32_t> who = at_bar;
        who.insert(who.begin(), ended.begin(), ended.begin() + std::min<size_t>(ended.size(), 4));
        deadlock(c, msg, who);
    }
    if (by_line.size() > 1) {
        std::string msg = "the threads of the block wait at different asc_syncthreads calls:";
        std::vector<uint32_t> who;
        for (auto& [k, v] : by_line) {
            msg += " " + std::to_string(v.size()) + " at line " + std::to_string(c->th[v[0]].line) + " (" + thread_name(c, v[0]) + ", ...);";
            who.push_back(v[0]);
        }
        msg += " each barrier waits for every thread of the block (asc_syncthreads page: do not call it in a branch not every "
               "thread takes)";
        deadlock(c, msg, who);
    }
    c->ep = g_epoch.fetch_add(1);
    c->n_bar++;
    for (uint32_t tid : at_bar) c->th[tid].st = S_RUN;
}

void run_block(Ctx* c) {
    const uint32_t nw = (c->n + kWarp - 1) / kWarp;
    std::vector<uint32_t> group;
    for (;;) {
        bool runnable = false;
        uint32_t done = 0;
        for (uint32_t w = 0; w < nw; ++w) {
            const uint32_t lo = w * kWarp, hi = std::min(c->n, lo + kWarp);
            for (;;) {
                bool still = false;
                for (uint32_t i = lo; i < hi; ++i) {
                    Th* t = &c->th[i];
                    if (t->st == S_NEW || t->st == S_RUN) {
                        resume(c, t);
                        if (c->err) return;
                        if (t->st == S_RUN) still = true;
                    }
                }
                c->warp_phases++;
                if (still) {  // a lane yielded (spinning): the warp cannot settle yet
                    runnable = true;
                    break;
                }
                // every lane waits or ended: the lanes at the lowest warp-function call run it
                const Th* best = nullptr;
                for (uint32_t i = lo; i < hi; ++i) {
                    const Th* t = &c->th[i];
                    if (t->st != S_COLL) continue;
                    if (!best || t->line < best->line || (t->line == best->line && t->col < best->col)) best = t;
                }
                if (!best) break;
                group.clear();
                for (uint32_t i = lo; i < hi; ++i) {
                    const Th* t = &c->th[i];
                    if (t->st == S_COLL && t->line == best->line && t->col == best->col && t->file == best->file) group.push_back(i - lo);
                }
                exec_collective(c, w, group);
            }
            for (uint32_t i = lo; i < hi; ++i) done += c->th[i].st == S_DONE;
        }
        if (done == c->n) return;
        if (runnable) {
            simt_rt::poll_abort();
            continue;
        }
        check_barrier(c);  // nothing can run: every live thread waits at a barrier
    }
}

// Modelled busy cycles of the call (docs/timing-model.md, "SIMT"; placeholder until the model lands).
uint64_t model_cycles(const Ctx& c, uint64_t warps) {
    const double per_access = simt_rt::cfg("simt_access_cycles", 1);
    const double launch = simt_rt::cfg("simt_launch_cycles", 64);
    const double accesses = (double)(c.n_ub + c.n_gm + c.n_atom);
    return (uint64_t)(launch + per_access * accesses / kWarp + (double)c.n_coll / kWarp + (double)c.n_bar * warps);
}

struct EngineHold {
    Engine* e;
    ~EngineHold() { if (e) release_engine(e); }
};

// The UB bytes set in a bitmap over [lo, hi) as spans.
void bitmap_spans(std::vector<uint64_t>& bm, uint64_t lo, uint64_t hi, uint8_t cls, std::vector<Span>& out) {
    if (lo >= hi) return;
    uint64_t i = lo;
    while (i < hi) {
        uint64_t& w = bm[i >> 6];
        if (w == 0) { i = (i | 63) + 1; continue; }
        if (!(w >> (i & 63) & 1ull)) { ++i; continue; }
        uint64_t s = i;
        while (i < hi && (bm[i >> 6] >> (i & 63) & 1ull)) ++i;
        out.push_back(Span{Mem::UB, s, i, -1, cls});
    }
    for (uint64_t k = lo >> 6; k <= (hi - 1) >> 6; ++k) bm[k] = 0;
}

std::string race_json(Ctx* c, const RaceKey& k, const RaceInfo& r) {
    static const char* const kinds[3] = {"write-read", "read-write", "write-write"};
    static const char* const acc[3] = {"read", "write", "atomic"};
    const std::string core = simt_rt::core_json();
    auto op = [&](uint32_t tid, uint8_t ka, const void* pc) {
        return "{\"op\":\"SIMT " + std::string(acc[ka]) + " (" + thread_name(c, tid) + ")\",\"pipe\":\"V\"," + core +
               ",\"thread\":" + std::to_string(tid) + "," + simt_rt::pc_json(pc) + "}";
    };
    const std::string where = "UB bytes [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + ") of block " +
                              std::to_string(simt_rt::block());
    const std::string hint = "two threads of one SIMT block touch the same UB bytes between the same two barriers (" +
                             thread_name(c, r.ta) + ", " + thread_name(c, r.tb) +
                             "): put asc_syncthreads() between the two accesses, give each thread its own bytes, or make both "
                             "accesses asc_atomic_* (atomics do not race with atomics)";
    return "{\"mem\":\"UB\",\"kind\":\"" + std::string(kinds[k.kind]) + "\",\"count\":" + std::to_string(r.count) +
           ",\"where\":\"" + where + "\",\"simt\":true,\"first\":" + op(r.ta, r.ka, k.pa) + ",\"second\":" + op(r.tb, r.kb, k.pb) +
           ",\"hint\":\"" + hint + "\"}";
}

}  // namespace

// ---- interface of emu_simt.h -----------------------------------------------------------------------
void load(uint8_t space, uint64_t a, uint32_t n, void* out) {
    const void* pc = __builtin_return_address(0);
    Ctx* c = need_ctx("SIMT load", pc);
    std::memcpy(out, access(c, space, a, n, K_READ, pc, nullptr, "load"), n);
}
void store(uint8_t space, uint64_t a, uint32_t n, const void* in) {
    const void* pc = __builtin_return_address(0);
    Ctx* c = need_ctx("SIMT store", pc);
    std::memcpy(access(c, space, a, n, K_WRITE, pc, (const uint8_t*)in, "store"), in, n);
}
void* member(uint8_t space, uint64_t a, uint32_t n) {
    const void* pc = __builtin_return_address(0);
    Ctx* c = need_ctx("SIMT member access", pc);
    return access(c, space, a, n, K_READ, pc, nullptr, "load");
}

namespace {
template <class V> V amax(V a, V b) { return a > b ? a : b; }
template <class V> V amin(V a, V b) { return a < b ? a : b; }
// new value of an atomic on a value of integer type V
template <class V> V int_op(uint8_t op, V old, V v, V cmp) {
    using U = std::make_unsigned_t<V>;
    switch (op) {
        case A_ADD: return (V)((U)old + (U)v);
        case A_SUB: return (V)((U)old - (U)v);
        case A_EXCH: return v;
        case A_MAX: return amax(old, v);
        case A_MIN: return amin(old, v);
        case A_INC: return (U)old >= (U)v ? (V)0 : (V)((U)old + 1);               // asc_atomic_inc page
        case A_DEC: return ((U)old == 0 || (U)old > (U)v) ? v : (V)((U)old - 1);  // asc_atomic_dec page
        case A_CAS: return old == cmp ? v : old;
        case A_AND: return old & v;
        case A_OR: return old | v;
        case A_XOR: return old ^ v;
    }
    return old;
}
float flt_op(uint8_t op, float old, float v, float cmp, bool& write) {
    write = true;
    switch (op) {
        case A_ADD: return old + v;
        case A_SUB: return old - v;
        case A_EXCH: return v;
        case A_MAX: return (std::isnan(old) || std::isnan(v)) ? NAN : amax(old, v);
        case A_MIN: return (std::isnan(old) || std::isnan(v)) ? NAN : amin(old, v);
        case A_CAS:
            write = std::memcmp(&old, &cmp, 4) == 0;  // compares the bits
            return write ? v : old;
    }
    return old;
}
const char* atomic_name(uint8_t op) {
    static const char* const n[] = {"asc_atomic_add", "asc_atomic_sub", "asc_atomic_exch", "asc_atomic_max", "asc_atomic_min",
                                    "asc_atomic_inc", "asc_atomic_dec", "asc_atomic_cas", "asc_atomic_and", "asc_atomic_or",
                                    "asc_atomic_xor"};
    return op <= A_XOR ? n[op] : "asc_atomic";
}
}  // namespace

uint64_t atomic(uint8_t space, uint64_t a, uint8_t op, uint8_t ty, uint64_t val, uint64_t cmp, const Loc& loc) {
    const void* pc = __builtin_return_address(0);
    Ctx* c = need_ctx(atomic_name(op), pc);
    const uint32_t n = (ty == I64 || ty == U64) ? 8 : (ty == F16 || ty == BF16) ? 2 : 4;
    if (a % n)
        fail_here("invalid_param", std::string(atomic_name(op)) + ": the address must be aligned to the element size (" +
                                       std::to_string(n) + " bytes)", pc, atomic_name(op));
    uint8_t* p = access(c, space, a, n, K_ATOMIC, pc, nullptr, atomic_name(op));
    c->n_atom++;
    (void)loc;
    // GM atomics are atomic with respect to the other cores (process-wide lock); UB belongs to this AIV.
    if (space == GM) simt_rt::atomic_lock();
    uint64_t old = 0;
    std::memcpy(&old, p, n);
    uint64_t nv = old;
    bool write = true;
    switch (ty) {
        case I32: nv = (uint32_t)int_op<int32_t>(op, (int32_t)(uint32_t)old, (int32_t)(uint32_t)val, (int32_t)(uint32_t)cmp); break;
        case U32: nv = int_op<uint32_t>(op, (uint32_t)old, (uint32_t)val, (uint32_t)cmp); break;
        case I64: nv = (uint64_t)int_op<int64_t>(op, (int64_t)old, (int64_t)val, (int64_t)cmp); break;
        case U64: nv = int_op<uint64_t>(op, old, val, cmp); break;
        case F32: case F16: case BF16:
            nv = float_bits(ty, flt_op(op, bits_float(ty, old), bits_float(ty, val), bits_float(ty, cmp), write));
            break;
        default: break;
    }
    if (write) std::memcpy(p, &nv, n);
    if (space == GM) simt_rt::atomic_unlock();
    if (ty == F16 || ty == BF16) return poison(ty);  // the pages: these returns are inaccurate, do not use them
    return old;
}

uint64_t collective(uint8_t kind, uint8_t ty, uint64_t val, int32_t a, int32_t b, const Loc& loc) {
    const void* pc = __builtin_return_address(0);
    static const char* const names[] = {"asc_shfl", "asc_shfl_up", "asc_shfl_down", "asc_shfl_xor", "asc_reduce_add",
                                        "asc_reduce_max", "asc_reduce_min", "asc_all", "asc_any", "asc_ballot", "asc_activemask"};
    Ctx* c = need_ctx(names[kind], pc);
    if (kind <= SHFL_XOR && !(b >= 1 && b <= 32 && (b & (b - 1)) == 0))
        emu::fail("invalid_param", std::string(names[kind]) + ": width " + std::to_string(b) +
                                       " must be a power of two in (0, 32] (Warp-Shfl pages: otherwise the result is undefined)", loc);
    Th* t = c->cur;
    t->kind = kind, t->ty = ty, t->in = val, t->a = a, t->b = b;
    t->file = loc.file_name(), t->line = loc.line(), t->col = loc.column();
    t->st = S_COLL;
    t->acc = 0;
    suspend(c, t);
    return t->out;
}

void syncthreads(const Loc& loc) {
    Ctx* c = need_ctx("asc_syncthreads", __builtin_return_address(0));
    Th* t = c->cur;
    t->file = loc.file_name(), t->line = loc.line(), t->col = loc.column();
    t->st = S_BAR;
    t->acc = 0;
    suspend(c, t);
}

// The fences order one thread's own accesses for other observers; every access of the
// emulator is visible at once, so there is nothing to do (they order nothing between threads
// for the race check either: asc_threadfence page, "does not block").
void fence(bool block, const Loc& loc) {
    (void)block;
    need_ctx(block ? "asc_threadfence_block" : "asc_threadfence", __builtin_return_address(0));
    (void)loc;
}

void bounds(uint32_t max_threads, const Loc& loc) {
    Ctx* c = T;
    if (!c || !c->cur || c->cur->tid != 0) return;
    if (max_threads < 1 || max_threads > kMaxThreads)
        emu::fail("invalid_param", "__launch_bounds__(" + std::to_string(max_threads) + "): N must be in 1..2048 (核函数配置 page)", loc);
    if (c->n > max_threads)
        emu::fail("invalid_param", "asc_vf_call starts " + std::to_string(c->n) + " threads but the SIMT function allows at most " +
                                       std::to_string(max_threads) + " (__launch_bounds__, default 1024: 核函数配置 page): raise "
                                       "__launch_bounds__ or start fewer threads", loc);
}

uint64_t static_ub(const char* file, uint32_t line, uint32_t col, uint64_t bytes, uint64_t align, const Loc& loc) {
    Ctx* c = T;
    if (!c) emu::fail("invalid_param", "a __ubuf__ array outside a SIMT function is not emulated", loc);
    uint64_t off = simt_rt::static_ub(file, line, col, bytes, align, loc);
    if (off + bytes > c->ub_alloc) c->ub_alloc = off + bytes;
    return off;
}

int32_t lane_id() {
    Ctx* c = T;
    return c && c->cur ? (int32_t)(c->cur->tid % kWarp) : 0;
}
bool in_simt() { return T && T->cur; }

void launch(void (*thunk)(void*), void* arg, dim3 d, const Loc& loc) {
    if (T) emu::fail("invalid_param", "asc_vf_call inside a SIMT function: SIMT VFs are started from the kernel (核函数配置 page)", loc);
    if (core_kind() != CoreKind::AIV)
        emu::fail("invalid_param", "asc_vf_call of a SIMT function on the AIC: SIMT runs on the Vector core (AIV); call it from "
                                   "vector code (ASCEND_IS_AIV)", loc);
    const uint64_t n = (uint64_t)d.x * d.y * d.z;
    if (n == 0 || n > kMaxThreads)
        emu::fail("invalid_param", "asc_vf_call: dim3(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) +
                                       ") is " + std::to_string(n) + " threads; a thread block has 1 to 2048 (核函数配置 page)", loc);
    // UB partition (编程模型 UB划分): static + dynamic memory, 8 KB reserved, then the Data Cache,
    // which must keep at least 32 KB.
    const uint64_t used = simt_rt::alloc_high(Mem::UB);
    if (used + kUbReserved + kDcacheMin > kUbTotal)
        emu::fail("capacity", "asc_vf_call of a SIMT function: the kernel allocated " + std::to_string(used) +
                                  " bytes of UB, which leaves the SIMT Data Cache " +
                                  std::to_string((int64_t)kUbTotal - (int64_t)kUbReserved - (int64_t)used) +
                                  " bytes; it needs at least 32 KB (UB 256 KB = static + dynamic memory + 8 KB reserved + Data "
                                  "Cache >= 32 KB, 编程模型 UB划分): allocate at most " +
                                  std::to_string(kUbTotal - kUbReserved - kDcacheMin) + " bytes of UB in a kernel that runs SIMT",
                  loc);
    Engine* eng = acquire_engine();
    if (!eng) emu::fail("internal", "cannot map the SIMT thread stacks", loc);
    EngineHold hold{eng};
    Ctx c;
    c.eng = eng;
    c.th = eng->th.data();
    c.n = (uint32_t)n;
    c.bdim = d;
    c.thunk = thunk;
    c.arg = arg;
    c.ub = mem_base(Mem::UB);
    c.ub_alloc = used;
    c.checks = simt_rt::checks();
    c.ep = g_epoch.fetch_add(1);
    for (uint32_t i = 0; i < c.n; ++i) {
        Th& t = c.th[i];
        t = Th{};
        t.tid = i;
        t.idx = dim3(i % d.x, i / d.x % d.y, i / (d.x * d.y));
    }
    if (c.checks) eng->ub_pre.assign(c.ub, c.ub + used);
    blockDim = d;
    blockIdx = dim3((unsigned)block_idx(), 0, 0);
    gridDim = dim3((unsigned)block_num(), 1, 1);
    T = &c;
    try {
        run_block(&c);
    } catch (...) {
        // deadlock reports and scheduler errors (the threads are unwound already)
        T = nullptr;
        throw;
    }
    if (c.err) {
        cancel_all(&c);
        T = nullptr;
        std::rethrow_exception(c.err);
    }
    T = nullptr;
    threadIdx = dim3(0, 0, 0);
    // thread races of this call
    for (auto& [k, r] : c.races) simt_rt::add_race(race_json(&c, k, r), r.count);
    if (c.races_total > 0) {
        uint64_t listed = 0;
        for (auto& [k, r] : c.races) listed += r.count;
        if (c.races_total > listed) simt_rt::add_race("", c.races_total - listed);
    }
    // the call as one PIPE_V op reading / writing the union of its threads' bytes
    std::vector<Span> reads, writes;
    bitmap_spans(eng->bm_r, c.ub_lo, c.ub_hi, 0, reads);
    bitmap_spans(eng->bm_w, c.ub_lo, c.ub_hi, 0, writes);
    {
        std::vector<Span> at;
        bitmap_spans(eng->bm_a, c.ub_lo, c.ub_hi, CLS_ATOMIC, at);
        reads.insert(reads.end(), at.begin(), at.end());
        writes.insert(writes.end(), at.begin(), at.end());
    }
    std::sort(c.gm.begin(), c.gm.end(), [](const GmAcc& x, const GmAcc& y) { return x.k != y.k ? x.k < y.k : x.b < y.b; });
    std::vector<GmAcc> m;
    for (auto& g : c.gm) {
        if (!m.empty() && m.back().k == g.k && g.b <= m.back().e) m.back().e = std::max(m.back().e, g.e);
        else m.push_back(g);
    }
    for (auto& g : m) {
        if (g.k == K_READ) reads.push_back(Span{Mem::GM, g.b, g.e, -1, 0});
        else if (g.k == K_WRITE) writes.push_back(Span{Mem::GM, g.b, g.e, -1, 0});
        else {
            reads.push_back(Span{Mem::GM, g.b, g.e, -1, CLS_ATOMIC});
            writes.push_back(Span{Mem::GM, g.b, g.e, -1, CLS_ATOMIC});
        }
    }
    // timing (docs/timing-model.md, "SIMT"): modelled cycles in `repeats`
    const uint64_t warps = (c.n + kWarp - 1) / kWarp;
    const uint64_t cycles = model_cycles(c, warps);
    Cost cost{0, c.n, 0, (uint32_t)std::min<uint64_t>(cycles, 0xffffffffu)};
    // recorded after its effect: the identical-writes check must compare with the bytes before it
    if (c.checks)
        simt_rt::set_pre_image([&](Mem m, uint64_t lo, uint64_t hi, uint8_t* out) {
            for (uint64_t x = lo; x < hi; ++x) {
                if (m == Mem::GM) {
                    auto it = c.gm_pre.find(x >> 3);
                    const bool saved = it != c.gm_pre.end() && (it->second.second >> (x & 7) & 1u);
                    out[x - lo] = saved ? ((const uint8_t*)&it->second.first)[x & 7] : *(const uint8_t*)(uintptr_t)x;
                } else {
                    out[x - lo] = x < eng->ub_pre.size() ? eng->ub_pre[x] : c.ub[x];
                }
            }
        });
    struct Clear {
        bool on;
        ~Clear() { if (on) simt_rt::set_pre_image(nullptr); }
    } clear{c.checks};
    record_n("asc_vf_call", Pipe::V, reads.data(), reads.size(), writes.data(), writes.size(), cost, loc);
}

}  // namespace emu::simt
#endif  // dav-3510
