#pragma once
// emu_copy.h: data movement of the emulator: DataCopy (count, DataCopyParams, Nd2Nz),
// DataCopyPad, LoadData (c220 LoadData2DParams, 3510 LoadData2DParamsV2), the 3510 UB<->L1
// paths. Semantics are written from the public Ascend C documentation (see
// docs/emulator-ops.md); every op records its pipe and byte spans before its effect.
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>
#include "emu_types.h"
#include "emu_atomic.h"
#include "emu_dtypes.h"

namespace emu::ops {

// The value SetPadValue (emu_vector_ext.h) set for DataCopyPad GM -> UB padding: `set` is
// false until a kernel calls it; `bytes` hold the value's bit pattern (per core).
struct PadValue { bool set = false; uint8_t bytes[8] = {}; };
inline PadValue& pad_value() { thread_local PadValue v; return v; }

// ---------------------------------------------------------------- spans and recording
// A span of `tensor`'s bytes [b, e) relative to the tensor start. Built from the contract's
// emu_span(count) so that whatever the core puts in a Span (memory, address) stays right.
template <class TensorT>
inline Span bytes_of(const TensorT& t, uint64_t b, uint64_t e) {
    Span s = t.emu_span(0);
    uint64_t base = s.begin;
    s.begin = base + b;
    s.end = base + e;
    return s;
}

// Ordered list of spans; a span that starts where the previous one ends is merged into it.
struct SpanSet {
    std::vector<Span> v;
    void add(const Span& s) {
        if (s.end <= s.begin) return;
        if (!v.empty()) {
            Span& p = v.back();
            if (p.mem == s.mem && s.begin <= p.end && s.end >= p.begin &&
                s.begin >= p.begin) {           // overlapping or adjacent, extends forward
                if (s.end > p.end) p.end = s.end;
                return;
            }
        }
        v.push_back(s);
    }
    template <class TensorT> void add(const TensorT& t, uint64_t b, uint64_t e) { add(bytes_of(t, b, e)); }
};

template <class V>
concept HasVectorRecord = requires(const V& v, const Cost& c, const Loc& l) {
    emu::record("", Pipe::S, v, v, c, l);
};

// Covering span per memory, used when the core offers only the initializer_list record.
inline std::vector<Span> covering(const std::vector<Span>& in) {
    std::vector<Span> out;
    for (const Span& s : in) {
        bool merged = false;
        for (Span& o : out)
            if (o.mem == s.mem) { o.begin = std::min(o.begin, s.begin); o.end = std::max(o.end, s.end); merged = true; }
        if (!merged) out.push_back(s);
    }
    return out;
}

template <class V = std::vector<Span>>
inline void record_sets(const char* op, Pipe pipe, const SpanSet& reads, const SpanSet& writes,
                        const Cost& cost, const Loc& loc) {
    if constexpr (HasVectorRecord<V>) {
        emu::record(op, pipe, reads.v, writes.v, cost, loc);
    } else {
        std::vector<Span> r = covering(reads.v), w = covering(writes.v);
        if (r.size() > 4 || w.size() > 4) emu::fail("internal", "too many memories in one op", loc);
        auto call = [&](auto&&... ws) {
            switch (r.size()) {
                case 0: emu::record(op, pipe, {}, {ws...}, cost, loc); break;
                case 1: emu::record(op, pipe, {r[0]}, {ws...}, cost, loc); break;
                case 2: emu::record(op, pipe, {r[0], r[1]}, {ws...}, cost, loc); break;
                case 3: emu::record(op, pipe, {r[0], r[1], r[2]}, {ws...}, cost, loc); break;
                default: emu::record(op, pipe, {r[0], r[1], r[2], r[3]}, {ws...}, cost, loc); break;
            }
        };
        switch (w.size()) {
            case 0: call(); break;
            case 1: call(w[0]); break;
            case 2: call(w[0], w[1]); break;
            case 3: call(w[0], w[1], w[2]); break;
            default: call(w[0], w[1], w[2], w[3]); break;
        }
    }
}

// A view of a local tensor that lives in another core of the group (3510 cross-core paths:
// an AIC writing an AIV's UB, an AIV writing its AIC's L1). `core` follows emu::Span::core.
template <class T>
struct PeerView {
    T* ptr;
    Span base;
    T* emu_ptr() const { return ptr; }
    Span emu_span(uint64_t n) const { Span s = base; s.end = s.begin + n * sizeof(T); return s; }
};
template <class TensorT>
inline auto peer_view(const TensorT& t, int core) {
    using T = std::remove_reference_t<decltype(*t.emu_ptr())>;
    PeerView<T> v;
    v.base = t.emu_span(0);
    if (!emu::mem_present(t.emu_mem())) {
        v.base.core = (int8_t)core;
        uint8_t* b = emu::mem_base(t.emu_mem(), core);
        v.ptr = b ? reinterpret_cast<T*>(b + t.emu_offset()) : nullptr;
    } else {
        v.ptr = t.emu_ptr();
    }
    return v;
}

inline const char* mem_name(Mem m) {
    switch (m) {
        case Mem::GM: return "GM"; case Mem::UB: return "UB"; case Mem::L1: return "L1";
        case Mem::L0A: return "L0A"; case Mem::L0B: return "L0B"; case Mem::L0C: return "L0C";
        case Mem::BT: return "BT"; case Mem::FB: return "FB";
    }
    return "?";
}

[[noreturn]] inline void bad_path(const char* op, Mem src, Mem dst, const Loc& loc) {
    emu::fail("invalid_param", std::string(op) + ": unsupported path " + mem_name(src) + " -> " +
              mem_name(dst) + (is_c220() ? " on dav-c220" : " on dav-3510"), loc);
}

// Pipe of a local -> local copy, by memories (fails for a path the arch lacks).
inline Pipe local_copy_pipe(const char* op, Mem src, Mem dst, const Loc& loc) {
    if (src == Mem::UB && dst == Mem::UB) return Pipe::V;
    if (is_3510()) {
        if (src == Mem::UB && dst == Mem::L1) return Pipe::MTE3;
        if (src == Mem::L1 && dst == Mem::UB) return Pipe::MTE1;
    }
    bad_path(op, src, dst, loc);
}

inline void check_gm_to_local(const char* op, Mem dst, const Loc& loc) {
    if (dst == Mem::UB || dst == Mem::L1) return;
    bad_path(op, Mem::GM, dst, loc);
}
inline void check_local_to_gm(const char* op, Mem src, const Loc& loc) {
    if (src == Mem::UB) return;
    if (src == Mem::L1 && is_c220()) return;  // DataCopy L1ToGM (dav-c220 only; MTE3 of the AIC)
    bad_path(op, src, Mem::GM, loc);
}

}  // namespace emu::ops

namespace AscendC {

// ---------------------------------------------------------------- parameter structs
struct DataCopyParams {
    DataCopyParams() {}
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcStrideIn, uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    union { uint16_t srcGap = 0; uint16_t srcStride; };
    union { uint16_t dstGap = 0; uint16_t dstStride; };
};

struct DataCopyExtParams {
#if defined(EMU_ARCH_3510)
    using StrideT = int64_t;
#else
    using StrideT = uint32_t;
#endif
    DataCopyExtParams() {}
    DataCopyExtParams(uint16_t count, uint32_t len, StrideT srcStrideIn, StrideT dstStrideIn, uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    StrideT srcStride = 0;
    StrideT dstStride = 0;
    uint32_t rsv = 0;
};

struct DataCopyPadParams {
    DataCopyPadParams() {}
    DataCopyPadParams(bool isPadValue, uint8_t leftPadValue, uint8_t rightPadValue, uint64_t padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;   // bit pattern of the element
};

template <typename T>
struct DataCopyPadExtParams {
    DataCopyPadExtParams() {}
    DataCopyPadExtParams(bool isPadValue, uint8_t leftPadValue, uint8_t rightPadValue, T padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T(0);
};

struct Nd2NzParams {
#if defined(EMU_ARCH_3510)
    Nd2NzParams() {}
    Nd2NzParams(uint16_t ndNumIn, uint16_t nValueIn, uint32_t dValueIn, uint64_t srcNdMatrixStrideIn,
                uint64_t srcDValueIn, uint16_t dstNzC0StrideIn, uint16_t dstNzNStrideIn, uint32_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint32_t dValue = 0;
    uint64_t srcNdMatrixStride = 0;
    uint64_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint32_t dstNzMatrixStride = 0;
#else
    Nd2NzParams() {}
    Nd2NzParams(uint16_t ndNumIn, uint16_t nValueIn, uint16_t dValueIn, uint16_t srcNdMatrixStrideIn,
                uint16_t srcDValueIn, uint16_t dstNzC0StrideIn, uint16_t dstNzNStrideIn, uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
#endif
};

// Declared on both arches (as the official headers do); on dav-3510 LoadData takes it for
// L1 -> L0A/L0B only and ignores dstGap (LoadData_2D page).
struct LoadData2DParams {
    LoadData2DParams() {}
    LoadData2DParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint8_t sidIn,
                     uint16_t dstGapIn, bool ifTransposeIn, uint8_t addrModeIn)
        : startIndex(startIndexIn), dstGap(dstGapIn), srcStride(srcStrideIn), ifTranspose(ifTransposeIn),
          repeatTimes(repeatTimesIn), sid(sidIn), addrMode(addrModeIn) {}
    uint16_t startIndex = 0;
    uint16_t dstGap = 0;
    uint16_t srcStride = 0;
    bool ifTranspose = false;
    uint8_t repeatTimes = 0;
    uint8_t sid = 0;
    uint8_t addrMode = 0;
};
using LoadData2dParams = LoadData2DParams;

#if defined(EMU_ARCH_3510)
struct LoadData2DParamsV2 {
    LoadData2DParamsV2() {}
    LoadData2DParamsV2(uint32_t mStartPositionIn, uint32_t kStartPositionIn, uint16_t mStepIn, uint16_t kStepIn,
                       int32_t srcStrideIn, uint16_t dstStrideIn, bool ifTransposeIn, uint8_t sidIn)
        : mStartPosition(mStartPositionIn), kStartPosition(kStartPositionIn), mStep(mStepIn), kStep(kStepIn),
          srcStride(srcStrideIn), dstStride(dstStrideIn), ifTranspose(ifTransposeIn), sid(sidIn) {}
    uint32_t mStartPosition = 0;
    uint32_t kStartPosition = 0;
    uint16_t mStep = 0;
    uint16_t kStep = 0;
    int32_t srcStride = 0;
    uint16_t dstStride = 0;
    bool ifTranspose = false;
    uint8_t sid = 0;
};
#endif

// ---------------------------------------------------------------- DataCopy, count form
namespace emu_detail {
template <class T>
inline void check_count32(const char* op, uint32_t count, const emu::Loc& loc) {
    if (((uint64_t)count * sizeof(T)) % 32 != 0)
        emu::fail("invalid_param", std::string(op) + ": count * sizeof(T) = " +
                  std::to_string((uint64_t)count * sizeof(T)) + " bytes is not a multiple of 32 "
                  "(use DataCopyPad for unaligned lengths)", loc);
}
// Generic strided block copy: blockCount rows of rowBytes, row starts srcPitch/dstPitch apart.
template <class D, class S>
inline void strided_copy(const char* op, emu::Pipe pipe, const D& dst, const S& src, uint32_t blockCount,
                         uint64_t rowBytes, uint64_t srcPitch, uint64_t dstPitch, const emu::Loc& loc) {
    emu::ops::SpanSet r, w;
    for (uint32_t i = 0; i < blockCount; ++i) {
        r.add(src, i * srcPitch, i * srcPitch + rowBytes);
        w.add(dst, i * dstPitch, i * dstPitch + rowBytes);
    }
    emu::Cost c; c.bytes = (uint64_t)blockCount * rowBytes;
    // A store to GM with a DMA-atomic mode set (SetAtomicAdd/Max/Min) combines with GM.
    const emu::AtomicMode am = dst.emu_span(0).mem == emu::Mem::GM ? emu::atomic_mode() : emu::AtomicMode{};
    if (am.dtype)
        for (auto& sp : w.v) sp.cls = emu::CLS_ATOMIC;
    emu::ops::record_sets(op, pipe, r, w, c, loc);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.emu_ptr());
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    if (am.dtype) {
        for (uint32_t i = 0; i < blockCount; ++i) emu::ops::atomic_store(d + i * dstPitch, s + i * srcPitch, rowBytes, am);
        return;
    }
    for (uint32_t i = 0; i < blockCount; ++i) std::memmove(d + i * dstPitch, s + i * srcPitch, rowBytes);
}
}  // namespace emu_detail

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count,
                     const emu::Loc& loc = emu::Loc::current()) {
    emu::ops::check_gm_to_local("DataCopy", dst.emu_mem(), loc);
    emu_detail::check_count32<T>("DataCopy", count, loc);
    uint64_t n = (uint64_t)count * sizeof(T);
    emu_detail::strided_copy("DataCopy", emu::Pipe::MTE2, dst, src, 1, n, n, n, loc);
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
                     const emu::Loc& loc = emu::Loc::current()) {
    emu::ops::check_local_to_gm("DataCopy", src.emu_mem(), loc);
    emu_detail::check_count32<T>("DataCopy", count, loc);
    uint64_t n = (uint64_t)count * sizeof(T);
    emu_detail::strided_copy("DataCopy", emu::Pipe::MTE3, dst, src, 1, n, n, n, loc);
}

// L1 -> BiasTable (C1 -> C2, MTE1) and L1 -> Fixpipe buffer (C1 -> C2PIPE2GM, FIX). BT: blockLen
// and dstGap in 64-byte units on dav-c220, 32-byte units on dav-3510 (blockLen even), srcGap in
// 32-byte units, gaps from the end of one block to the start of the next; the element type may
// widen (half -> float), blockLen then counts destination bytes. FB: blockLen in 128-byte
// units, srcGap (32 B) and dstGap (128 B) from the start of one block to the start of the next
// (DataCopy L1ToBiasTable / L1ToFixpipe pages).
namespace emu_detail {
template <class D, class S>
inline void copy_to_bt_fb(const LocalTensor<D>& dst, const LocalTensor<S>& src, uint32_t blockCount, uint32_t blockLen,
                          uint32_t srcGap, uint32_t dstGap, bool countForm, const emu::Loc& loc) {
    const bool fb = dst.emu_mem() == emu::Mem::FB;
    if (src.emu_mem() != emu::Mem::L1)
        emu::ops::bad_path("DataCopy", src.emu_mem(), dst.emu_mem(), loc);
    if (!fb && !(std::is_same_v<D, float> || std::is_same_v<D, int32_t>))
        emu::fail("invalid_param", "DataCopy L1 -> BT: the destination type must be float or int32_t", loc);
    if (fb && sizeof(D) != sizeof(S)) emu::fail("invalid_param", "DataCopy L1 -> FB: source and destination types must match", loc);
    if (blockCount == 0 || blockLen == 0) return;
    const uint64_t dunit = countForm ? 1 : (fb ? 128 : (emu::is_c220() ? 64 : 32));
    if (!countForm && !fb && emu::is_3510() && blockLen % 2)
        emu::fail("invalid_param", "DataCopy L1 -> BT: blockLen must be even on dav-3510", loc);
    const uint64_t dbytes = (uint64_t)blockLen * dunit;          // destination bytes per block
    const uint64_t delems = dbytes / sizeof(D), sbytes = delems * sizeof(S);
    uint64_t spitch, dpitch;
    if (fb) { spitch = (uint64_t)srcGap * 32; dpitch = (uint64_t)dstGap * 128; }
    else { spitch = sbytes + (uint64_t)srcGap * 32; dpitch = dbytes + (uint64_t)dstGap * (emu::is_c220() ? 64 : 32); }
    if (blockCount == 1) { spitch = sbytes; dpitch = dbytes; }
    emu::ops::SpanSet r, w;
    for (uint32_t i = 0; i < blockCount; ++i) {
        r.add(src, i * spitch, i * spitch + sbytes);
        w.add(dst, i * dpitch, i * dpitch + dbytes);
    }
    emu::Cost c; c.bytes = (uint64_t)blockCount * dbytes;
    // L1 -> BT moves on MTE1, L1 -> FB on FIX (数据通路 page, table 1)
    emu::ops::record_sets("DataCopy", fb ? emu::Pipe::FIX : emu::Pipe::MTE1, r, w, c, loc);
    for (uint32_t i = 0; i < blockCount; ++i) {
        const S* sp = reinterpret_cast<const S*>(reinterpret_cast<const uint8_t*>(src.emu_ptr()) + i * spitch);
        D* dp = reinterpret_cast<D*>(reinterpret_cast<uint8_t*>(dst.emu_ptr()) + i * dpitch);
        if constexpr (std::is_same_v<D, S>) std::memmove(dp, sp, dbytes);
        else for (uint64_t k = 0; k < delems; ++k) dp[k] = D((float)sp[k]);
    }
}
inline bool to_bt_fb(emu::Mem dst) { return dst == emu::Mem::BT || dst == emu::Mem::FB; }
}  // namespace emu_detail

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
                     const emu::Loc& loc = emu::Loc::current()) {
    if (emu_detail::to_bt_fb(dst.emu_mem()))
        return emu_detail::copy_to_bt_fb(dst, src, 1, (uint32_t)((uint64_t)count * sizeof(T) / 32 * 32), 0, 0, true, loc);
    emu::Pipe p = emu::ops::local_copy_pipe("DataCopy", src.emu_mem(), dst.emu_mem(), loc);
    emu_detail::check_count32<T>("DataCopy", count, loc);
    uint64_t n = (uint64_t)count * sizeof(T);
    emu_detail::strided_copy("DataCopy", p, emu::ops::peer_view(dst, 0), emu::ops::peer_view(src, 0), 1, n, n, n, loc);
}

// ---------------------------------------------------------------- DataCopy, DataCopyParams
// blockCount blocks of blockLen * 32 bytes; srcGap/dstGap: 32-byte blocks skipped between
// the end of one block and the start of the next, on both sides (GM included).
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    emu::ops::check_gm_to_local("DataCopy", dst.emu_mem(), loc);
    uint64_t row = (uint64_t)p.blockLen * 32;
    emu_detail::strided_copy("DataCopy", emu::Pipe::MTE2, dst, src, p.blockCount, row,
                             row + (uint64_t)p.srcGap * 32, row + (uint64_t)p.dstGap * 32, loc);
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    emu::ops::check_local_to_gm("DataCopy", src.emu_mem(), loc);
    uint64_t row = (uint64_t)p.blockLen * 32;
    emu_detail::strided_copy("DataCopy", emu::Pipe::MTE3, dst, src, p.blockCount, row,
                             row + (uint64_t)p.srcGap * 32, row + (uint64_t)p.dstGap * 32, loc);
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    if (emu_detail::to_bt_fb(dst.emu_mem()))
        return emu_detail::copy_to_bt_fb(dst, src, p.blockCount, p.blockLen, p.srcGap, p.dstGap, false, loc);
    emu::Pipe pipe = emu::ops::local_copy_pipe("DataCopy", src.emu_mem(), dst.emu_mem(), loc);
    uint64_t row = (uint64_t)p.blockLen * 32;
    emu_detail::strided_copy("DataCopy", pipe, emu::ops::peer_view(dst, 0), emu::ops::peer_view(src, 0), p.blockCount, row,
                             row + (uint64_t)p.srcGap * 32, row + (uint64_t)p.dstGap * 32, loc);
}

// L1 -> BT with a wider destination type (half/bfloat16_t -> float).
template <typename T, typename U, std::enable_if_t<!std::is_same_v<T, U>, bool> = true>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    if (dst.emu_mem() != emu::Mem::BT) emu::ops::bad_path("DataCopy (converting)", src.emu_mem(), dst.emu_mem(), loc);
    emu_detail::copy_to_bt_fb(dst, src, p.blockCount, p.blockLen, p.srcGap, p.dstGap, false, loc);
}

// ---------------------------------------------------------------- DataCopyPad
// GM -> UB: blockCount rows of blockLen bytes. GM rows are blockLen + srcStride bytes apart
// (srcStride is the gap in bytes). In UB each row is [leftPadding elems][data][rightPadding
// elems][dummy elems up to the next 32-byte boundary], and rows are dstStride 32-byte blocks
// apart (gap). Filler, per the "DataCopyPad (GMToUB)" page: isPad gives paddingValue to the
// padding and the dummy elements (the isPad row of its table; the official example
// data_copy_pad_gm2ub_ub2gm pads 40-byte rows with paddingValue -1 and no left/right padding);
// without isPad they take the value of SetPadValue if the kernel called it; else, with no
// left/right padding, the dummy elements take the row's first element, and with padding they
// are undefined ("random"): the emulator then leaves them unwritten.
namespace emu_detail {
template <class T>
inline void pad_gm_to_ub(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t blockCount,
                         uint64_t blockLen, uint64_t srcGapBytes, uint64_t dstGapBlocks, bool isPad,
                         uint32_t left, uint32_t right, T padValue, const emu::Loc& loc) {
    emu::ops::check_gm_to_local("DataCopyPad", dst.emu_mem(), loc);
    if (dst.emu_mem() != emu::Mem::UB) emu::ops::bad_path("DataCopyPad", emu::Mem::GM, dst.emu_mem(), loc);
    if (blockLen % sizeof(T) != 0)
        emu::fail("invalid_param", "DataCopyPad: blockLen " + std::to_string(blockLen) +
                  " is not a whole number of elements", loc);
    if (left * sizeof(T) > 32 || right * sizeof(T) > 32)
        emu::fail("invalid_param", "DataCopyPad: leftPadding and rightPadding may each cover at most 32 bytes", loc);
    uint64_t lb = (uint64_t)left * sizeof(T), rb = (uint64_t)right * sizeof(T);
    uint64_t rowUb = (lb + blockLen + rb + 31) / 32 * 32;
    uint64_t dstPitch = rowUb + dstGapBlocks * 32, srcPitch = blockLen + srcGapBytes;
    const emu::ops::PadValue& reg = emu::ops::pad_value();
    const bool pad_fill = isPad || reg.set;                                     // padding and dummy
    const bool first_fill = !pad_fill && left == 0 && right == 0 && blockLen > 0;  // dummy = the row's first element
    if (!isPad && reg.set) std::memcpy(&padValue, reg.bytes, sizeof(T));    // SetPadValue's value
    emu::ops::SpanSet r, w;
    for (uint32_t i = 0; i < blockCount; ++i) {
        r.add(src, i * srcPitch, i * srcPitch + blockLen);
        if (first_fill || pad_fill) w.add(dst, i * dstPitch, i * dstPitch + rowUb);
        else w.add(dst, i * dstPitch + lb, i * dstPitch + lb + blockLen);
    }
    emu::Cost c; c.bytes = (uint64_t)blockCount * blockLen;
    emu::ops::record_sets("DataCopyPad", emu::Pipe::MTE2, r, w, c, loc);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.emu_ptr());
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    for (uint32_t i = 0; i < blockCount; ++i) {
        uint8_t* row = d + i * dstPitch;
        std::memmove(row + lb, s + i * srcPitch, blockLen);
        if (first_fill)
            for (uint64_t o = blockLen; o < rowUb; o += sizeof(T)) std::memmove(row + o, row, sizeof(T));
        if (pad_fill) {
            for (uint32_t k = 0; k < left; ++k) std::memcpy(row + k * sizeof(T), &padValue, sizeof(T));
            for (uint64_t o = lb + blockLen; o < rowUb; o += sizeof(T)) std::memcpy(row + o, &padValue, sizeof(T));
        }
    }
}
// UB -> GM: rows of blockLen bytes; UB rows start at whole 32-byte blocks, srcStride blocks
// of gap after each row's 32-byte-rounded length; GM rows blockLen + dstStride bytes apart.
template <class T>
inline void pad_ub_to_gm(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t blockCount,
                         uint64_t blockLen, uint64_t srcGapBlocks, uint64_t dstGapBytes, const emu::Loc& loc) {
    emu::ops::check_local_to_gm("DataCopyPad", src.emu_mem(), loc);
    uint64_t rowUb = (blockLen + 31) / 32 * 32;
    emu_detail::strided_copy("DataCopyPad", emu::Pipe::MTE3, dst, src, blockCount, blockLen,
                             rowUb + srcGapBlocks * 32, blockLen + dstGapBytes, loc);
}
}  // namespace emu_detail

// PaddingMode (DataCopyPad GMToUB page) and the loop-mode registers (SetLoopModePara page,
// dav-3510): Compact packs the blockCount rows back to back and pads only the end to 32 bytes
// (dstStride, leftPadding and rightPadding unused); with loop mode set for a direction, the copy
// repeats loop2Size x loop1Size times, the source and destination moving by the loop strides
// (bytes) of the outer and inner loop.
enum class PaddingMode : uint8_t { Normal = 0, Compact };
enum class DataCopyMVType : uint8_t { UB_TO_OUT = 0, OUT_TO_UB = 1 };
struct LoopModeParams {
    LoopModeParams() {}
    LoopModeParams(uint32_t loop1SizeIn, uint32_t loop2SizeIn, uint64_t loop1SrcStrideIn, uint64_t loop1DstStrideIn,
                   uint64_t loop2SrcStrideIn, uint64_t loop2DstStrideIn)
        : loop1Size(loop1SizeIn), loop2Size(loop2SizeIn), loop1SrcStride(loop1SrcStrideIn), loop1DstStride(loop1DstStrideIn),
          loop2SrcStride(loop2SrcStrideIn), loop2DstStride(loop2DstStrideIn) {}
    uint32_t loop1Size = 0;
    uint32_t loop2Size = 0;
    uint64_t loop1SrcStride = 0;
    uint64_t loop1DstStride = 0;
    uint64_t loop2SrcStride = 0;
    uint64_t loop2DstStride = 0;
};
namespace emu_detail {
struct LoopRegs { bool on[2] = {false, false}; LoopModeParams p[2]; };
inline LoopRegs& loop_regs() {
    static thread_local LoopRegs r;
    return r;
}
// Calls f(srcByteOffset, dstByteOffset) once per loop-mode iteration (once when loop mode is off).
template <class F>
inline void for_each_loop(DataCopyMVType t, uint64_t elem, F f, const emu::Loc& loc) {
    const LoopRegs& g = loop_regs();
    if (!g.on[(int)t]) return f(0, 0);
    const LoopModeParams& p = g.p[(int)t];
    const uint64_t n1 = p.loop1Size ? p.loop1Size : 1, n2 = p.loop2Size ? p.loop2Size : 1;
    if (p.loop1SrcStride % elem || p.loop1DstStride % elem || p.loop2SrcStride % elem || p.loop2DstStride % elem)
        emu::fail("invalid_param", "DataCopyPad (loop mode): the loop strides must be whole elements", loc);
    for (uint64_t o = 0; o < n2; ++o)
        for (uint64_t i = 0; i < n1; ++i)
            f(o * p.loop2SrcStride + i * p.loop1SrcStride, o * p.loop2DstStride + i * p.loop1DstStride);
}
// Compact GM -> UB: the rows back to back, the tail up to the next 32 bytes gets paddingValue
// with isPad (else it is not written).
template <class T>
inline void pad_gm_to_ub_compact(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t blockCount, uint64_t blockLen,
                                 uint64_t srcGapBytes, bool isPad, T padValue, const emu::Loc& loc) {
    if (dst.emu_mem() != emu::Mem::UB) emu::ops::bad_path("DataCopyPad", emu::Mem::GM, dst.emu_mem(), loc);
    if (blockLen % sizeof(T) != 0)
        emu::fail("invalid_param", "DataCopyPad: blockLen " + std::to_string(blockLen) + " is not a whole number of elements", loc);
    const uint64_t total = (uint64_t)blockCount * blockLen, padded = (total + 31) / 32 * 32, srcPitch = blockLen + srcGapBytes;
    emu::ops::SpanSet r, w;
    for (uint32_t i = 0; i < blockCount; ++i) r.add(src, i * srcPitch, i * srcPitch + blockLen);
    w.add(dst, 0, isPad ? padded : total);
    emu::Cost c; c.bytes = total;
    emu::ops::record_sets("DataCopyPad", emu::Pipe::MTE2, r, w, c, loc);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.emu_ptr());
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    for (uint32_t i = 0; i < blockCount; ++i) std::memmove(d + i * blockLen, s + i * srcPitch, blockLen);
    if (isPad)
        for (uint64_t o = total; o < padded; o += sizeof(T)) std::memcpy(d + o, &padValue, sizeof(T));
}
}  // namespace emu_detail
#if defined(EMU_ARCH_3510)
inline void SetLoopModePara(const LoopModeParams& loopParams, DataCopyMVType type) {
    emu_detail::LoopRegs& g = emu_detail::loop_regs();
    g.on[(int)type] = true;
    g.p[(int)type] = loopParams;
}
inline void ResetLoopModePara(DataCopyMVType type) {
    emu_detail::loop_regs().on[(int)type] = false;
    emu_detail::loop_regs().p[(int)type] = LoopModeParams();
}
#endif

template <typename T, PaddingMode mode = PaddingMode::Normal>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad, const emu::Loc& loc = emu::Loc::current()) {
    if ((int64_t)p.srcStride < 0 || (int64_t)p.dstStride < 0)
        emu::fail("invalid_param", "DataCopyPad: negative strides are not supported by the emulator", loc);
    emu_detail::for_each_loop(DataCopyMVType::OUT_TO_UB, sizeof(T), [&](uint64_t so, uint64_t dof) {
        const LocalTensor<T> d = dst[(uint32_t)(dof / sizeof(T))];
        const GlobalTensor<T> s = src[so / sizeof(T)];
        if constexpr (mode == PaddingMode::Compact)
            emu_detail::pad_gm_to_ub_compact(d, s, p.blockCount, p.blockLen, (uint64_t)p.srcStride, pad.isPad, (T)pad.paddingValue, loc);
        else
            emu_detail::pad_gm_to_ub(d, s, p.blockCount, p.blockLen, (uint64_t)p.srcStride, (uint64_t)p.dstStride,
                                     pad.isPad, pad.leftPadding, pad.rightPadding, (T)pad.paddingValue, loc);
    }, loc);
}

template <typename T, PaddingMode mode = PaddingMode::Normal>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p,
                        const emu::Loc& loc = emu::Loc::current()) {
    static_assert(mode == PaddingMode::Normal, "DataCopyPad UB -> GM: only PaddingMode::Normal");
    if ((int64_t)p.srcStride < 0 || (int64_t)p.dstStride < 0)
        emu::fail("invalid_param", "DataCopyPad: negative strides are not supported by the emulator", loc);
    emu_detail::for_each_loop(DataCopyMVType::UB_TO_OUT, sizeof(T), [&](uint64_t so, uint64_t dof) {
        emu_detail::pad_ub_to_gm(dst[dof / sizeof(T)], src[(uint32_t)(so / sizeof(T))], p.blockCount, p.blockLen,
                                 (uint64_t)p.srcStride, (uint64_t)p.dstStride, loc);
    }, loc);
}

template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                        const DataCopyPadParams& pad, const emu::Loc& loc = emu::Loc::current()) {
    T v; uint64_t bits = pad.paddingValue; std::memcpy(&v, &bits, sizeof(T));
    emu_detail::pad_gm_to_ub(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad,
                             pad.leftPadding, pad.rightPadding, v, loc);
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                        const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::pad_ub_to_gm(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, loc);
}

// ---------------------------------------------------------------- Nd2Nz (GM ND -> L1 NZ)
// For matrix i < ndNum, row r < nValue, column c < dValue:
//   src element  i*srcNdMatrixStride + r*srcDValue + c
//   dst element  i*dstNzMatrixStride + (c/C0)*dstNzC0Stride*C0 + r*dstNzNStride*C0 + c%C0
// (strides of the NZ side in 32-byte blocks, matrix strides in elements). Only the valid
// elements are written: padding rows/columns keep their previous contents.
namespace emu_detail {
template <class T, class D, class S>
inline void nd2nz(const char* op, emu::Pipe pipe, const D& dst, const S& src, const Nd2NzParams& p,
                  const emu::Loc& loc) {
    constexpr uint64_t C0 = emu::C0<T>;
    const uint64_t nd = p.ndNum, n = p.nValue, d = p.dValue;
    emu::ops::SpanSet r, w;
    for (uint64_t i = 0; i < nd; ++i) {
        uint64_t sb = i * (uint64_t)p.srcNdMatrixStride;
        for (uint64_t row = 0; row < n; ++row)
            r.add(src, (sb + row * p.srcDValue) * sizeof(T), (sb + row * p.srcDValue + d) * sizeof(T));
    }
    for (uint64_t i = 0; i < nd; ++i) {
        uint64_t db = i * (uint64_t)p.dstNzMatrixStride;
        for (uint64_t j = 0; j * C0 < d; ++j) {
            uint64_t w_el = std::min<uint64_t>(C0, d - j * C0);
            for (uint64_t row = 0; row < n; ++row) {
                uint64_t e = db + j * p.dstNzC0Stride * C0 + row * p.dstNzNStride * C0;
                w.add(dst, e * sizeof(T), (e + w_el) * sizeof(T));
            }
        }
    }
    emu::Cost c; c.bytes = nd * n * d * sizeof(T);
    emu::ops::record_sets(op, pipe, r, w, c, loc);
    const T* s = src.emu_ptr();
    T* o = dst.emu_ptr();
    for (uint64_t i = 0; i < nd; ++i) {
        const T* sm = s + i * (uint64_t)p.srcNdMatrixStride;
        T* om = o + i * (uint64_t)p.dstNzMatrixStride;
        for (uint64_t row = 0; row < n; ++row) {
            const T* srow = sm + row * p.srcDValue;
            T* orow = om + row * p.dstNzNStride * C0;
            for (uint64_t c0 = 0; c0 < d; c0 += C0) {
                uint64_t w_el = std::min<uint64_t>(C0, d - c0);
                std::memmove(orow + (c0 / C0) * p.dstNzC0Stride * C0, srow + c0, w_el * sizeof(T));
            }
        }
    }
}
}  // namespace emu_detail

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    if (dst.emu_mem() != emu::Mem::L1) emu::ops::bad_path("DataCopy(Nd2Nz)", emu::Mem::GM, dst.emu_mem(), loc);
    emu_detail::nd2nz<T>("DataCopy(Nd2Nz)", emu::Pipe::MTE2, dst, src, p, loc);
}

#if defined(EMU_ARCH_3510)
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const Nd2NzParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    if (dst.emu_mem() != emu::Mem::L1 || src.emu_mem() != emu::Mem::UB)
        emu::ops::bad_path("DataCopy(Nd2Nz)", src.emu_mem(), dst.emu_mem(), loc);
    emu_detail::nd2nz<T>("DataCopy(Nd2Nz)", emu::Pipe::MTE3, emu::ops::peer_view(dst, 0), src, p, loc);
}
#endif

#if defined(EMU_ARCH_3510)
// GM DN -> L1 NZ (DataCopy GMToL1 DN2NZ page, dav-3510): source element (row d, column n) of
// matrix i at i*srcDnMatrixStride + d*srcDValue + n (nValue columns, dValue rows) goes to the
// NZ matrix of the transpose: (n, d) at i*dstNzMatrixStride + (d/C0)*dstNzC0Stride*C0 +
// n*dstNzNStride*C0 + d%C0 (strides in 32-byte blocks); the last C0 group of each row is
// zero-filled past dValue.
struct Dn2NzParams {
    Dn2NzParams() {}
    Dn2NzParams(uint16_t dnNumIn, uint16_t nValueIn, uint32_t dValueIn, uint64_t srcDnMatrixStrideIn, uint64_t srcDValueIn,
                uint16_t dstNzC0StrideIn, uint16_t dstNzNStrideIn, uint32_t dstNzMatrixStrideIn)
        : dnNum(dnNumIn), nValue(nValueIn), dValue(dValueIn), srcDnMatrixStride(srcDnMatrixStrideIn), srcDValue(srcDValueIn),
          dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn), dstNzMatrixStride(dstNzMatrixStrideIn) {}
    uint16_t dnNum = 0;
    uint16_t nValue = 0;
    uint32_t dValue = 0;
    uint64_t srcDnMatrixStride = 0;
    uint64_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint32_t dstNzMatrixStride = 0;
};
template <typename T, bool enableSmallC0 = false>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Dn2NzParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    static_assert(!enableSmallC0, "DataCopy(Dn2Nz): the SmallC0 mode is not emulated");
    if (dst.emu_mem() != emu::Mem::L1) emu::ops::bad_path("DataCopy(Dn2Nz)", emu::Mem::GM, dst.emu_mem(), loc);
    if (p.dnNum == 0 || p.nValue == 0 || p.dValue == 0) return;
    constexpr uint64_t C0 = emu::C0<T>;
    const uint64_t dpad = (p.dValue + C0 - 1) / C0 * C0;
    emu::ops::SpanSet r, w;
    for (uint64_t i = 0; i < p.dnNum; ++i)
        for (uint64_t d = 0; d < p.dValue; ++d) {
            uint64_t e = i * p.srcDnMatrixStride + d * p.srcDValue;
            r.add(src, e * sizeof(T), (e + p.nValue) * sizeof(T));
        }
    auto didx = [&](uint64_t i, uint64_t n, uint64_t d) {
        return i * p.dstNzMatrixStride + (d / C0) * p.dstNzC0Stride * C0 + n * p.dstNzNStride * C0 + d % C0;
    };
    for (uint64_t i = 0; i < p.dnNum; ++i)
        for (uint64_t d0 = 0; d0 < dpad; d0 += C0)
            for (uint64_t n = 0; n < p.nValue; ++n) {
                uint64_t e = didx(i, n, d0);
                w.add(dst, e * sizeof(T), (e + C0) * sizeof(T));
            }
    emu::Cost c; c.bytes = (uint64_t)p.dnNum * p.nValue * p.dValue * sizeof(T);
    emu::ops::record_sets("DataCopy(Dn2Nz)", emu::Pipe::MTE2, r, w, c, loc);
    const T* s = src.emu_ptr();
    T* o = dst.emu_ptr();
    for (uint64_t i = 0; i < p.dnNum; ++i)
        for (uint64_t n = 0; n < p.nValue; ++n)
            for (uint64_t d = 0; d < dpad; ++d) {
                T v{};
                if (d < p.dValue) v = s[i * p.srcDnMatrixStride + d * p.srcDValue + n];
                else std::memset(&v, 0, sizeof(T));
                o[didx(i, n, d)] = v;
            }
}
#endif

// ---------------------------------------------------------------- LoadData
namespace emu_detail {
template <class T>
inline emu::Pipe load_pipe(emu::Mem src, emu::Mem dst, const emu::Loc& loc) {
    bool dst_ok = dst == emu::Mem::L0A || dst == emu::Mem::L0B;
    if (src == emu::Mem::L1 && dst_ok) return emu::Pipe::MTE1;
    if (src == emu::Mem::GM && (dst_ok || dst == emu::Mem::L1) && emu::is_c220()) return emu::Pipe::MTE2;
    emu::ops::bad_path("LoadData", src, dst, loc);
}
}  // namespace emu_detail

// c220 Load2D: repeatTimes fractals of 512 bytes. Fractal i is read from fractal index
// startIndex + i*srcStride of the source and written to fractal index i*(1 + dstGap) of the
// destination. ifTranspose transposes each 16x16 fractal (2-byte types only).
namespace emu_detail {
template <class T, class S>
inline void load2d_c220(const LocalTensor<T>& dst, const S& src, emu::Mem srcMem, const LoadData2DParams& p,
                        const emu::Loc& loc) {
    emu::Pipe pipe = load_pipe<T>(srcMem, dst.emu_mem(), loc);
    if (p.ifTranspose && sizeof(T) != 2)
        emu::fail("invalid_param", "LoadData: ifTranspose needs a 2-byte type on dav-c220 "
                  "(use LoadDataWithTranspose for other types)", loc);
    if (p.ifTranspose && srcMem == emu::Mem::GM)
        emu::fail("invalid_param", "LoadData: ifTranspose is only for L1 -> L0A/L0B", loc);
    constexpr uint64_t FR = 512;
    const uint64_t gap = emu::is_3510() ? 0 : p.dstGap;  // dav-3510 ignores dstGap
    emu::ops::SpanSet r, w;
    for (uint64_t i = 0; i < p.repeatTimes; ++i) {
        uint64_t sf = (uint64_t)p.startIndex + i * p.srcStride, df = i * (1 + (uint64_t)gap);
        r.add(src, sf * FR, sf * FR + FR);
        w.add(dst, df * FR, df * FR + FR);
    }
    emu::Cost c; c.bytes = (uint64_t)p.repeatTimes * FR;
    emu::ops::record_sets("LoadData", pipe, r, w, c, loc);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.emu_ptr());
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    for (uint64_t i = 0; i < p.repeatTimes; ++i) {
        const uint8_t* sf = s + ((uint64_t)p.startIndex + i * p.srcStride) * FR;
        uint8_t* df = d + i * (1 + (uint64_t)gap) * FR;
        if (!p.ifTranspose) { std::memmove(df, sf, FR); continue; }
        uint16_t tmp[256];
        std::memcpy(tmp, sf, FR);
        uint16_t* o = reinterpret_cast<uint16_t*>(df);
        for (int a = 0; a < 16; ++a)
            for (int b = 0; b < 16; ++b) o[b * 16 + a] = tmp[a * 16 + b];
    }
}
}  // namespace emu_detail

template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::load2d_c220(dst, src, src.emu_mem(), p, loc);
}
#if defined(EMU_ARCH_C220)
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const LoadData2DParams& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::load2d_c220(dst, src, emu::Mem::GM, p, loc);
}
#endif

#if defined(EMU_ARCH_3510)
// 3510 Load2Dv2. The source is an NZ matrix in L1: fractal (row block fr, column block fc)
// (16 rows x 32 bytes) starts at fractal index fc*srcStride + fr. The moved region is row
// blocks [mStartPosition, +mStep) x column blocks [kStartPosition, +kStep).
// Without transpose the destination is NZ again: region fractal (r, c) goes to fractal index
// c*dstStride + r. With ifTranspose the region is transposed element-wise and stored as an NZ
// matrix of the transposed shape whose C0-wide column blocks are dstStride fractals apart
// (for 2-byte types: fractal (r, c) -> index r*dstStride + c, each fractal transposed), which
// is the ZN layout L0B expects. b32 transposes need an even kStep, b8 an even mStep.
namespace emu_detail {
// Elements per byte: 2 for the fp4x2 types (two fp4 values per byte, element 2i in the low
// nibble), else 1. Fractals of fp4 data are 16 x 64 elements (512 bytes, LoadData_2D_MX page).
template <class T>
constexpr int64_t kElemsPerByte = (int64_t)emu::elems_per_byte<T>::value;  // also int4b_t
template <class T>
inline void load2d_v2(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParamsV2& p,
                      const emu::Loc& loc) {
    emu::Pipe pipe = load_pipe<T>(src.emu_mem(), dst.emu_mem(), loc);
    constexpr int64_t EPB = kElemsPerByte<T>, C0 = emu::C0<T> * EPB, FR = 16 * C0;   // C0, FR in elements
    constexpr int64_t ES = (int64_t)sizeof(T);                                         // bytes per EPB elements
    const int64_t rows = 16 * (int64_t)p.mStep, cols = C0 * (int64_t)p.kStep;
    if (p.ifTranspose) {
        if (sizeof(T) == 4 && (p.kStep % 2)) emu::fail("invalid_param", "LoadData: b32 transpose needs an even kStep", loc);
        if (sizeof(T) == 1 && EPB == 1 && (p.mStep % 2)) emu::fail("invalid_param", "LoadData: b8 transpose needs an even mStep", loc);
        if (EPB == 2 && (p.mStep % 4)) emu::fail("invalid_param", "LoadData: b4 transpose needs an mStep multiple of 4", loc);
    }
    auto src_idx = [&](int64_t j, int64_t i) -> int64_t {   // region row j, col i
        int64_t aj = j + 16 * (int64_t)p.mStartPosition, ai = i + C0 * (int64_t)p.kStartPosition;
        return ((ai / C0) * (int64_t)p.srcStride + aj / 16) * FR + (aj % 16) * C0 + ai % C0;
    };
    auto dst_idx = [&](int64_t j, int64_t i) -> int64_t {
        if (!p.ifTranspose) return ((i / C0) * (int64_t)p.dstStride + j / 16) * FR + (j % 16) * C0 + i % C0;
        return ((j / C0) * (int64_t)p.dstStride + i / 16) * FR + (i % 16) * C0 + j % C0;
    };
    auto bytes = [&](int64_t e) { return (uint64_t)(e / EPB * ES); };
    emu::ops::SpanSet r, w;
    for (int64_t fc = 0; fc < p.kStep; ++fc)
        for (int64_t fr = 0; fr < p.mStep; ++fr) {
            int64_t s0 = src_idx(fr * 16, fc * C0);
            if (s0 < 0) emu::fail("local_out_of_bounds", "LoadData: negative source offset", loc);
            r.add(src, bytes(s0), bytes(s0 + FR));
        }
    if (!p.ifTranspose) {
        for (int64_t fc = 0; fc < p.kStep; ++fc)
            for (int64_t fr = 0; fr < p.mStep; ++fr) {
                int64_t d0 = dst_idx(fr * 16, fc * C0);
                w.add(dst, bytes(d0), bytes(d0 + FR));
            }
    } else {  // destination fractals: (cols/16) row blocks x (rows/C0) column blocks
        for (int64_t jb = 0; jb < rows / C0; ++jb)
            for (int64_t ib = 0; ib < cols / 16; ++ib) {
                int64_t d0 = dst_idx(jb * C0, ib * 16);
                w.add(dst, bytes(d0), bytes(d0 + FR));
            }
    }
    emu::Cost c; c.bytes = bytes(rows * cols);
    emu::ops::record_sets("LoadData", pipe, r, w, c, loc);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.emu_ptr());
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.emu_ptr());
    if (!p.ifTranspose) {   // row pieces of C0 elements (32 bytes) are contiguous on both sides
        for (int64_t j = 0; j < rows; ++j)
            for (int64_t i = 0; i < cols; i += C0) std::memmove(d + bytes(dst_idx(j, i)), s + bytes(src_idx(j, i)), 32);
        return;
    }
    if constexpr (EPB == 2) {   // fp4: move nibbles
        std::vector<uint8_t> tmp((size_t)(rows * cols));
        for (int64_t j = 0; j < rows; ++j)
            for (int64_t i = 0; i < cols; ++i) {
                int64_t e = src_idx(j, i);
                tmp[(size_t)(j * cols + i)] = (s[e / 2] >> (4 * (e % 2))) & 0xf;
            }
        for (int64_t j = 0; j < rows; ++j)
            for (int64_t i = 0; i < cols; ++i) {
                int64_t e = dst_idx(j, i);
                uint8_t& b = d[e / 2];
                b = (uint8_t)((b & ~(0xf << (4 * (e % 2)))) | (tmp[(size_t)(j * cols + i)] << (4 * (e % 2))));
            }
    } else {
        const T* st = src.emu_ptr();
        T* dt = dst.emu_ptr();
        std::vector<T> tmp((size_t)(rows * cols));
        for (int64_t j = 0; j < rows; ++j)
            for (int64_t i = 0; i < cols; ++i) tmp[(size_t)(j * cols + i)] = st[src_idx(j, i)];
        for (int64_t j = 0; j < rows; ++j)
            for (int64_t i = 0; i < cols; ++i) dt[dst_idx(j, i)] = tmp[(size_t)(j * cols + i)];
    }
}
}  // namespace emu_detail

template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParamsV2& p,
                     const emu::Loc& loc = emu::Loc::current()) {
    emu_detail::load2d_v2(dst, src, p, loc);
}
#endif

}  // namespace AscendC
