#pragma once
// emu_copy_ext.h: data movement beyond the DataCopy/DataCopyPad core (pages under
// docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据搬运): Copy (UB -> UB, masked high-dimension
// form and the dav-3510 count form), DataCopy with SliceInfo (GM <-> UB slices) and the
// dav-3510 multi-dimensional NDDMA DataCopy (NdDmaLoopInfo / NdDmaParams / NdDmaConfig).
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>
#include "emu_core.h"
#include "emu_copy.h"
#include "emu_vector.h"

namespace AscendC {

// ===================================================================== Copy (UB -> UB)
// Copy (UBToUB掩码式高维数据搬运) page, pipe V. Repeat r moves the selected elements of its 8
// 32-byte blocks: element e of the repeat is at element r*repeatSize*C0 + (e/C0)*stride*C0 +
// e%C0 on each side (strides in blocks). Normal mask mode selects elements (continuous count or
// bit mask); in counter mode (SetMaskCount) the mask is the number of elements of EVERY repeat
// (repeatTime still counts, unlike other vector ops) and the repeat moves
// ceil(mask * sizeof(T) / 32) whole blocks, possibly more than 8.
struct CopyRepeatParams {
    CopyRepeatParams() {}
    CopyRepeatParams(uint16_t dstStrideIn, uint16_t srcStrideIn, uint16_t dstRepeatSizeIn, uint16_t srcRepeatSizeIn)
        : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn), srcRepeatSize(srcRepeatSizeIn) {}
    uint16_t dstStride = 0;
    uint16_t srcStride = 0;
    uint16_t dstRepeatSize = 8;
    uint16_t srcRepeatSize = 8;
};

namespace emu_detail {
template <class T>
inline void copy_ub(const LocalTensor<T>& dst, const LocalTensor<T>& src, bool counter, uint64_t cnt, bool bits,
                    const uint64_t m[2], uint32_t repeats, const CopyRepeatParams& p, const emu::Loc& loc) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "Copy: 1, 2, 4 or 8-byte types");
    if (dst.emu_mem() != emu::Mem::UB || src.emu_mem() != emu::Mem::UB)
        emu::ops::bad_path("Copy", src.emu_mem(), dst.emu_mem(), loc);
    if (sizeof(T) == 1 && emu::is_c220()) emu::fail("invalid_param", "Copy: 1-byte types need dav-3510 (Copy page)", loc);
    constexpr uint64_t C0 = 32 / sizeof(T), E = 256 / sizeof(T);
    const uint64_t perRep = counter ? (cnt * sizeof(T) + 31) / 32 * C0 : E;   // element slots per repeat
    auto on = [&](uint64_t e) {
        if (counter) return true;                     // whole blocks in counter mode
        if (bits) return ((m[e / 64] >> (e % 64)) & 1u) != 0;
        return e < cnt;
    };
    auto soff = [&](uint64_t r, uint64_t e) { return r * p.srcRepeatSize * C0 + (e / C0) * p.srcStride * C0 + e % C0; };
    auto doff = [&](uint64_t r, uint64_t e) { return r * p.dstRepeatSize * C0 + (e / C0) * p.dstStride * C0 + e % C0; };
    emu::ops::SpanSet rs, ws;
    for (uint64_t r = 0; r < repeats; ++r)
        for (uint64_t e = 0; e < perRep; ++e)
            if (on(e)) {
                rs.add(src, soff(r, e) * sizeof(T), (soff(r, e) + 1) * sizeof(T));
                ws.add(dst, doff(r, e) * sizeof(T), (doff(r, e) + 1) * sizeof(T));
            }
    emu::Cost c; c.repeats = repeats; c.bytes = (uint64_t)repeats * perRep * sizeof(T);
    emu::ops::record_sets("Copy", emu::Pipe::V, rs, ws, c, loc);
    const T* s = src.emu_ptr();
    T* d = dst.emu_ptr();
    std::vector<T> tmp(perRep);
    for (uint64_t r = 0; r < repeats; ++r) {   // each repeat reads its inputs before writing
        for (uint64_t e = 0; e < perRep; ++e)
            if (on(e)) tmp[e] = s[soff(r, e)];
        for (uint64_t e = 0; e < perRep; ++e)
            if (on(e)) d[doff(r, e)] = tmp[e];
    }
}
}  // namespace emu_detail

template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const uint8_t repeatTime,
                 const CopyRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    const auto& st = emu::vec::mask_state();
    uint64_t m[2] = {mask[0], mask[1]};
    if (!isSetMask) { m[0] = st.lo; m[1] = st.hi; }
    if (st.counter) emu_detail::copy_ub(dst, src, true, m[0], false, m, repeatTime, p, loc);
    else {
        if (sizeof(T) >= 4 && m[1] != 0) emu::fail("invalid_param", "Copy: mask[1] must be 0 for 32-bit types", loc);
        emu_detail::copy_ub(dst, src, false, 0, true, m, repeatTime, p, loc);
    }
}
template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask, const uint8_t repeatTime,
                 const CopyRepeatParams& p, const emu::Loc& loc = emu::Loc::current()) {
    const auto& st = emu::vec::mask_state();
    uint64_t m[2] = {st.lo, st.hi};
    if (st.counter) {
        emu_detail::copy_ub(dst, src, true, isSetMask ? mask : st.lo, false, m, repeatTime, p, loc);
    } else if (isSetMask) {
        const uint64_t E = 256 / sizeof(T);
        emu_detail::copy_ub(dst, src, false, mask > E ? E : mask, false, m, repeatTime, p, loc);
    } else {
        emu_detail::copy_ub(dst, src, false, 0, true, m, repeatTime, p, loc);
    }
}
#if defined(EMU_ARCH_3510)
// Copy (UBToUB连续数据搬运) page: count contiguous elements.
template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
                 const emu::Loc& loc = emu::Loc::current()) {
    if (dst.emu_mem() != emu::Mem::UB || src.emu_mem() != emu::Mem::UB)
        emu::ops::bad_path("Copy", src.emu_mem(), dst.emu_mem(), loc);
    const uint64_t n = (uint64_t)count * sizeof(T);
    emu::Cost c; c.bytes = n; c.repeats = (uint32_t)((n + 255) / 256);
    emu::record("Copy", emu::Pipe::V, {src.emu_span(count)}, {dst.emu_span(count)}, c, loc);
    std::memmove(dst.emu_ptr(), src.emu_ptr(), n);
}
#endif

// ===================================================================== slices
// DataCopy (GM与UB切片数据搬运) page: per dimension d (0 = innermost, extent shapeValue), the
// selected indices run from startIndex to endIndex inclusive in pieces of burstLen * 32 bytes
// (d = 0) or of one index (d > 0), `stride` indices skipped after each piece. The source
// selection, enumerated row-major, goes element by element to the destination selection.
// GM -> UB on MTE2, UB -> GM on MTE3.
constexpr int32_t K_MAX_DIM = 8;
struct SliceInfo {
    SliceInfo() {}
    SliceInfo(uint32_t startIndexIn, uint32_t endIndexIn, uint32_t strideIn, uint32_t burstLenIn, uint32_t shapeValueIn = 0)
        : startIndex(startIndexIn), endIndex(endIndexIn), stride(strideIn), burstLen(burstLenIn), shapeValue(shapeValueIn) {}
    uint32_t startIndex = 0;
    uint32_t endIndex = 32 - 1;
    uint32_t stride = 0;
    uint32_t burstLen = 32;
    uint32_t shapeValue = 0;
};

namespace emu_detail {
// Contiguous runs (element offset, length) of one slice selection, in selection order.
template <class T>
inline std::vector<std::pair<uint64_t, uint64_t>> slice_runs(const SliceInfo* s, uint32_t dims, const char* side,
                                                             const emu::Loc& loc) {
    if (dims == 0 || dims > (uint32_t)K_MAX_DIM) emu::fail("invalid_param", "DataCopy (slice): dimValue must be 1..8", loc);
    std::vector<std::vector<uint64_t>> idx(dims);   // selected start indices per dimension (pieces for d = 0)
    uint64_t piece0 = 0;
    for (uint32_t d = 0; d < dims; ++d) {
        const SliceInfo& si = s[d];
        if (d > 0 && si.burstLen != 1)
            emu::fail("invalid_param", std::string("DataCopy (slice): ") + side + " burstLen must be 1 above dimension 0", loc);
        if (si.endIndex < si.startIndex) emu::fail("invalid_param", std::string("DataCopy (slice): ") + side + " endIndex < startIndex", loc);
        uint64_t piece = d == 0 ? (uint64_t)si.burstLen * 32 / sizeof(T) : 1;
        if (d == 0) {
            if (((uint64_t)si.burstLen * 32) % sizeof(T)) emu::fail("invalid_param", "DataCopy (slice): burstLen is not whole elements", loc);
            piece0 = piece;
        }
        if (piece == 0) emu::fail("invalid_param", "DataCopy (slice): burstLen must be > 0", loc);
        for (uint64_t i = si.startIndex; i <= si.endIndex; i += piece + si.stride) idx[d].push_back(i);
    }
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    std::vector<size_t> pos(dims, 0);
    while (true) {
        uint64_t off = 0, pitch = 1;
        for (uint32_t d = 0; d < dims; ++d) {
            off += idx[d][pos[d]] * pitch;
            pitch *= s[d].shapeValue ? s[d].shapeValue : 1;
        }
        uint64_t len = std::min<uint64_t>(piece0, (uint64_t)s[0].endIndex + 1 - idx[0][pos[0]]);
        runs.emplace_back(off, len);
        uint32_t d = 0;
        while (d < dims && ++pos[d] == idx[d].size()) pos[d++] = 0;
        if (d == dims) break;
    }
    return runs;
}
template <class T, class D, class S>
inline void slice_copy(const D& dst, const S& src, const SliceInfo* dsi, const SliceInfo* ssi, uint32_t dims, emu::Pipe pipe,
                       const emu::Loc& loc) {
    auto sr = slice_runs<T>(ssi, dims, "source", loc), dr = slice_runs<T>(dsi, dims, "destination", loc);
    uint64_t sn = 0, dn = 0;
    for (auto& r : sr) sn += r.second;
    for (auto& r : dr) dn += r.second;
    if (sn != dn)
        emu::fail("invalid_param", "DataCopy (slice): the source selects " + std::to_string(sn) + " elements, the destination " +
                  std::to_string(dn), loc);
    emu::ops::SpanSet rs, ws;
    for (auto& r : sr) rs.add(src, r.first * sizeof(T), (r.first + r.second) * sizeof(T));
    for (auto& r : dr) ws.add(dst, r.first * sizeof(T), (r.first + r.second) * sizeof(T));
    emu::Cost c; c.bytes = sn * sizeof(T);
    emu::ops::record_sets("DataCopy (slice)", pipe, rs, ws, c, loc);
    std::vector<T> tmp;
    tmp.reserve(sn);
    const T* s = src.emu_ptr();
    for (auto& r : sr) tmp.insert(tmp.end(), s + r.first, s + r.first + r.second);
    T* d = dst.emu_ptr();
    uint64_t k = 0;
    for (auto& r : dr) {
        std::memcpy(d + r.first, tmp.data() + k, r.second * sizeof(T));
        k += r.second;
    }
}
}  // namespace emu_detail

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1, const emu::Loc& loc = emu::Loc::current()) {
    emu::ops::check_gm_to_local("DataCopy (slice)", dst.emu_mem(), loc);
    if (dst.emu_mem() != emu::Mem::UB) emu::ops::bad_path("DataCopy (slice)", emu::Mem::GM, dst.emu_mem(), loc);
    emu_detail::slice_copy<T>(dst, src, dstSliceInfo, srcSliceInfo, dimValue, emu::Pipe::MTE2, loc);
}
template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1, const emu::Loc& loc = emu::Loc::current()) {
    if (src.emu_mem() != emu::Mem::UB) emu::ops::bad_path("DataCopy (slice)", src.emu_mem(), emu::Mem::GM, loc);
    emu_detail::slice_copy<T>(dst, src, dstSliceInfo, srcSliceInfo, dimValue, emu::Pipe::MTE3, loc);
}

// ===================================================================== NDDMA (dav-3510)
// DataCopy (GMToUB多维数据搬运NDDMA) page: per dimension d (0 = innermost) the destination
// index t runs over [0, loopLpSize + loopSize + loopRpSize); t in [Lp, Lp + size) reads source
// index t - Lp (offset sum of index * loopSrcStride), the rest is padding: constantValue, or
// with isNearestValueMode the source value at the nearest valid index; destination offset is
// the sum of t * loopDstStride (element units). NdDmaConfig's loopLpSize/loopRpSize (when not
// unsetPad) override every dimension's padding. Pipe MTE2.
struct NdDmaConfig {
    static constexpr uint16_t unsetPad = 0xffff;
    bool isNearestValueMode = false;
    uint16_t loopLpSize = unsetPad;
    uint16_t loopRpSize = unsetPad;
    bool ascOptimize = false;
};
using MultiCopyConfig = NdDmaConfig;
constexpr NdDmaConfig kDefaultNdDmaConfig = {false, NdDmaConfig::unsetPad, NdDmaConfig::unsetPad, false};
constexpr NdDmaConfig kDefaultMultiCopyConfig = kDefaultNdDmaConfig;
template <uint8_t dim>
struct MultiCopyLoopInfo {
    static_assert(dim >= 1 && dim <= 5, "NdDmaLoopInfo: dim must be 1..5");
    uint64_t loopSrcStride[dim] = {0};
    uint32_t loopDstStride[dim] = {0};
    uint32_t loopSize[dim] = {0};
    uint8_t loopLpSize[dim] = {0};
    uint8_t loopRpSize[dim] = {0};
};
template <uint8_t dim>
using NdDmaLoopInfo = MultiCopyLoopInfo<dim>;
template <typename T, uint8_t dim>
struct MultiCopyParams {
    MultiCopyLoopInfo<dim> loopInfo;
    T constantValue;
};
template <typename T, uint8_t dim>
using NdDmaParams = MultiCopyParams<T, dim>;

#if defined(EMU_ARCH_3510)
inline void NdDmaDci() {}   // NDDMA cache refresh: the emulator has no NDDMA cache

template <typename T, uint8_t dim, const NdDmaConfig& config = kDefaultNdDmaConfig>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const NdDmaParams<T, dim>& params,
                     const emu::Loc& loc = emu::Loc::current()) {
    if (dst.emu_mem() != emu::Mem::UB) emu::ops::bad_path("DataCopy (NDDMA)", emu::Mem::GM, dst.emu_mem(), loc);
    const auto& li = params.loopInfo;
    uint64_t lp[dim], rp[dim], ext[dim];
    for (int d = 0; d < dim; ++d) {
        if (li.loopSize[d] == 0) emu::fail("invalid_param", "DataCopy (NDDMA): loopSize must be >= 1 in every dimension", loc);
        lp[d] = config.loopLpSize != NdDmaConfig::unsetPad ? config.loopLpSize : li.loopLpSize[d];
        rp[d] = config.loopRpSize != NdDmaConfig::unsetPad ? config.loopRpSize : li.loopRpSize[d];
        ext[d] = lp[d] + li.loopSize[d] + rp[d];
    }
    // enumerate destination points: (dst offset, src offset or -1 for constant padding)
    std::vector<std::pair<uint64_t, int64_t>> pts;
    uint64_t t[dim] = {0};
    while (true) {
        uint64_t doff = 0, soff = 0;
        bool pad = false;
        for (int d = 0; d < dim; ++d) {
            doff += t[d] * li.loopDstStride[d];
            int64_t si = (int64_t)t[d] - (int64_t)lp[d];
            if (si < 0 || si >= (int64_t)li.loopSize[d]) {
                pad = true;
                si = si < 0 ? 0 : (int64_t)li.loopSize[d] - 1;   // nearest valid index
            }
            soff += (uint64_t)si * li.loopSrcStride[d];
        }
        pts.emplace_back(doff, pad && !config.isNearestValueMode ? -1 : (int64_t)soff);
        int d = 0;
        while (d < dim && ++t[d] == ext[d]) t[d++] = 0;
        if (d == dim) break;
    }
    emu::ops::SpanSet rs, ws;
    std::vector<uint64_t> sv, dv;
    for (auto& p : pts) {
        dv.push_back(p.first);
        if (p.second >= 0) sv.push_back((uint64_t)p.second);
    }
    std::sort(sv.begin(), sv.end());
    sv.erase(std::unique(sv.begin(), sv.end()), sv.end());
    std::sort(dv.begin(), dv.end());
    for (uint64_t o : sv) rs.add(src, o * sizeof(T), (o + 1) * sizeof(T));
    for (uint64_t o : dv) ws.add(dst, o * sizeof(T), (o + 1) * sizeof(T));
    emu::Cost c; c.bytes = (uint64_t)pts.size() * sizeof(T);
    emu::ops::record_sets("DataCopy (NDDMA)", emu::Pipe::MTE2, rs, ws, c, loc);
    const T* s = src.emu_ptr();
    T* d = dst.emu_ptr();
    for (auto& p : pts) d[p.first] = p.second >= 0 ? s[p.second] : params.constantValue;
}
#endif

}  // namespace AscendC
