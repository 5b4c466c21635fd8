#pragma once
// emu_list_tensor.h: ListTensorDesc / TensorDesc (辅助数据结构/ListTensorDesc.md, TensorDesc/*.md).
// A list of tensors passed as one GM block: word 0 holds the byte offset of the data-pointer
// array; then one descriptor per tensor: a word with dim (low 32 bits) and index (high 32
// bits), followed by dim shape words; the data pointers (one 64-bit word each) start at that
// offset. The pointers are the caller's GM addresses: GetDataPtr maps them onto the memory
// the kernel works on (emu::gm_translate). Every word read is a scalar GM read (PIPE_S).
#include <string>

namespace AscendC {
class ListTensorDesc;

template <class T>
class TensorDesc {
public:
    TensorDesc() {}
    ~TensorDesc() {}
    void SetShapeAddr(uint64_t* shapePtr) { shape_ = shapePtr; }
    uint64_t GetDim() { return dim_; }
    uint64_t GetIndex() { return index_; }
    uint64_t GetShape(uint32_t offset, const emu::Loc& loc = emu::Loc::current()) {
        if (!shape_) emu::fail("invalid_param", "TensorDesc::GetShape: no shape storage (SetShapeAddr before GetDesc)", loc);
        if (offset >= dim_)
            emu::fail("invalid_param", "TensorDesc::GetShape(" + std::to_string(offset) + "): the tensor has " + std::to_string(dim_) +
                                           " dimensions", loc);
        return shape_[offset];
    }
    __gm__ T* GetDataPtr() { return data_; }
    GlobalTensor<T> GetDataObj() {
        GlobalTensor<T> g;
        g.SetGlobalBuffer(data_);
        return g;
    }

private:
    friend class ListTensorDesc;
    uint64_t* shape_ = nullptr;
    uint64_t dim_ = 0, index_ = 0;
    T* data_ = nullptr;
};

class ListTensorDesc {
public:
    ListTensorDesc() {}
    ~ListTensorDesc() {}
    ListTensorDesc(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff,
                   const emu::Loc& loc = emu::Loc::current()) {
        Init(data, length, shapeSize, loc);
    }
    // length (bytes of the block) and shapeSize (number of data pointers) are only checked
    void Init(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff,
              const emu::Loc& loc = emu::Loc::current()) {
        base_ = (const uint8_t*)data;
        if (!base_) emu::fail("invalid_param", "ListTensorDesc: null GM address", loc);
        ptr_off_ = word(0, loc);
        if (ptr_off_ < 8 || ptr_off_ % 8)
            emu::fail("invalid_param", "ListTensorDesc: word 0 (offset of the data pointers) is " + std::to_string(ptr_off_) +
                                           ", not a multiple of 8 past the first word", loc);
        count_ = 0;
        for (uint64_t off = 8; off < ptr_off_; ++count_) off += 8 * (1 + (word(off, loc) & 0xffffffffu));
        if (length != 0xffffffffu && ptr_off_ + 8 * count_ > length)
            emu::fail("invalid_param", "ListTensorDesc: the block needs " + std::to_string(ptr_off_ + 8 * count_) +
                                           " bytes, more than the length " + std::to_string(length) + " given", loc);
        if (shapeSize != 0xffffffffu && shapeSize != count_)
            emu::fail("invalid_param", "ListTensorDesc: " + std::to_string(count_) + " tensors described, shapeSize says " +
                                           std::to_string(shapeSize), loc);
    }
    template <class T>
    void GetDesc(TensorDesc<T>& desc, uint32_t index, const emu::Loc& loc = emu::Loc::current()) {
        check(index, "GetDesc", loc);
        if (!desc.shape_) emu::fail("invalid_param", "ListTensorDesc::GetDesc: call TensorDesc::SetShapeAddr first", loc);
        uint64_t off = 8;
        for (uint32_t i = 0; i < index; ++i) off += 8 * (1 + (word(off, loc) & 0xffffffffu));
        uint64_t w = word(off, loc);
        desc.dim_ = w & 0xffffffffu;
        desc.index_ = w >> 32;
        for (uint64_t d = 0; d < desc.dim_; ++d) desc.shape_[d] = word(off + 8 * (1 + d), loc);
        desc.data_ = GetDataPtr<T>(index, loc);
    }
    template <class T>
    __gm__ T* GetDataPtr(uint32_t index, const emu::Loc& loc = emu::Loc::current()) {
        check(index, "GetDataPtr", loc);
        return (T*)(uintptr_t)emu::gm_translate(word(ptr_off_ + 8ull * index, loc));
    }
    uint32_t GetSize() { return (uint32_t)count_; }

private:
    void check(uint32_t index, const char* what, const emu::Loc& loc) const {
        if (!base_) emu::fail("invalid_param", std::string("ListTensorDesc::") + what + ": Init was never called", loc);
        if (index >= count_)
            emu::fail("invalid_param", std::string("ListTensorDesc::") + what + "(" + std::to_string(index) + "): the list holds " +
                                           std::to_string(count_) + " tensors", loc);
    }
    uint64_t word(uint64_t off, const emu::Loc& loc) const {
        auto b = (uint64_t)(uintptr_t)(base_ + off);
        emu::record("ListTensorDesc", emu::Pipe::S, {{emu::Mem::GM, b, b + 8}}, {}, {8, 1}, loc);
        uint64_t v;
        __builtin_memcpy(&v, base_ + off, 8);
        return v;
    }
    const uint8_t* base_ = nullptr;
    uint64_t ptr_off_ = 0, count_ = 0;
};
}  // namespace AscendC
