#pragma once
// emu_atomic.h: DMA-atomic stores to GM (the SetAtomicAdd / SetAtomicMax / SetAtomicMin pages):
// with an atomic mode set in the CTRL register, a copy whose destination is GM combines each
// element with the value already in GM instead of overwriting it. Used by the UB -> GM
// DataCopy/DataCopyPad paths (MTE3) and by Fixpipe L0C -> GM (FIX).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>
#include "emu_types.h"
#include "emu_xblock.h"

namespace emu::ops {

namespace atomic_detail {
template <class T>
inline void combine(uint8_t* d, const uint8_t* s, uint8_t op) {
    T a, b;
    std::memcpy(&a, d, sizeof(T));
    std::memcpy(&b, s, sizeof(T));
    T r;
    if constexpr (std::is_integral_v<T>) {
        // integer add wraps like the two's-complement adder (assumed: the pages do not say)
        if (op == 0) r = (T)(typename std::make_unsigned<T>::type)((uint64_t)(int64_t)a + (uint64_t)(int64_t)b);
        else if (op == 1) r = a > b ? a : b;
        else r = a < b ? a : b;
    } else {
        float x = (float)a, y = (float)b;   // compute in float, round once to the element type
        float v;
        if (op == 0) v = x + y;
        else if (std::isnan(x) || std::isnan(y)) v = std::isnan(x) ? x : y;  // NaN propagates
        else v = op == 1 ? (x > y ? x : y) : (x < y ? x : y);
        r = T(v);
    }
    std::memcpy(d, &r, sizeof(T));
}
}  // namespace atomic_detail

// Element size of a CTRL[8:6] atomic data type code (0: none).
inline size_t atomic_elem_size(uint8_t dtype) {
    switch (dtype) {
        case 1: case 4: return 4;
        case 2: case 3: case 6: return 2;
        case 5: return 1;
        default: return 0;
    }
}

// dst (GM) op= src, element-wise in the atomic data type, under the global atomic lock.
inline void atomic_store(uint8_t* dst, const uint8_t* src, size_t n, AtomicMode m) {
    size_t es = atomic_elem_size(m.dtype);
    AtomicGuard g;
    for (size_t i = 0; i + es <= n; i += es) {
        switch (m.dtype) {
            case 1: atomic_detail::combine<float>(dst + i, src + i, m.op); break;
            case 2: atomic_detail::combine<half>(dst + i, src + i, m.op); break;
            case 3: atomic_detail::combine<int16_t>(dst + i, src + i, m.op); break;
            case 4: atomic_detail::combine<int32_t>(dst + i, src + i, m.op); break;
            case 5: atomic_detail::combine<int8_t>(dst + i, src + i, m.op); break;
            case 6: atomic_detail::combine<bfloat16_t>(dst + i, src + i, m.op); break;
            default: break;
        }
    }
}

}  // namespace emu::ops
