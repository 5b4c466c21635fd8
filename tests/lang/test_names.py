"""Any DSL name is safe in the generated code: C++ keywords, the API's names, the names codegen
itself declares (pipe, ub_buf, workspace, A_gm for a tensor A, the op macros' loop counters) and the
compiler's own buffers (tmp1_float32, c_part, sub_idx) -- 33 such names in one kernel that compiles
and runs on the emulator against torch, both arches. A name that is safe stays as it is."""

import re

import tilelang.language as T
import torch

import ascend_backend
from ascend_backend.cnames import Names, reserved
from ascend_backend.npu import host_wrapper

NAMES = ["new", "auto", "A_gm", "workspace", "stream", "int", "main", "do", "float", "c", "pipe", "ub_buf", "min_i",
         "tmp1_float32", "c_peer", "Add", "bx", "fp", "mp", "printf", "DataCopy", "register", "l1_buf", "half",
         "void", "goto", "this", "GetBlockIdx", "INFINITY", "short", "sub_idx", "i", "n"]


def names_kernel():
    @T.prim_func
    def names(new: T.Tensor((64, 64), "float16"), auto: T.Tensor((64, 64), "float16"),
              A_gm: T.Tensor((64, 64), "float32"), workspace: T.Tensor((64, 64), "float16"),
              stream: T.Tensor((64,), "float32"), int: T.int32, main: T.float32):
        with T.Kernel(2) as pid:
            do = T.alloc_shared((32, 64), "float16")
            float = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((32, 64), "float32")
            printf = T.alloc_fragment((64,), "float32")
            pipe = T.alloc_fragment((64,), "float32")
            ub_buf = T.alloc_fragment((32, 64), "float32")
            tmp1_float32 = T.alloc_fragment((32, 64), "float32")
            min_i = T.alloc_fragment((32, 64), "float32")
            c_peer = T.alloc_fragment((32, 64), "float32")
            bx = T.alloc_fragment((32, 64), "float32")
            fp = T.alloc_fragment((32, 64), "float32")
            mp = T.alloc_fragment((32, 64), "float32")
            DataCopy = T.alloc_fragment((32, 64), "float32")
            register = T.alloc_fragment((32, 64), "float32")
            l1_buf = T.alloc_fragment((32, 64), "float32")
            Add = T.alloc_fragment((32, 64), "float32")
            half = T.alloc_var("int32")
            void = T.alloc_local((1,), "float32")
            goto = T.alloc_var("float32")
            this = T.alloc_local((1,), "float32")
            GetBlockIdx = T.alloc_var("int32")
            INFINITY = T.alloc_var("float32")
            short = T.alloc_var("int32")
            T.copy(new[pid * 32, 0], do)
            T.copy(auto[0, 0], float)
            T.gemm(do, float, c, clear_accum=True)
            T.copy(stream[0], printf)
            T.copy(printf, pipe)
            half = int + pid
            void[0] = main
            goto = void[0] * 2.0
            this[0] = 1.0
            GetBlockIdx = 2
            INFINITY = 0.25
            short = int * 2
            for x, y in T.Parallel(32, 64):
                ub_buf[x, y] = c[x, y] + pipe[y]
            T.clear(tmp1_float32)
            for i in T.serial(2):
                for n in T.serial(2):
                    for sub_idx in T.serial(2):
                        for x, y in T.Parallel(32, 64):
                            tmp1_float32[x, y] = tmp1_float32[x, y] + ub_buf[x, y] * void[0] + half + i + n + sub_idx
            for x, y in T.Parallel(32, 64):
                min_i[x, y] = tmp1_float32[x, y] + goto
            T.copy(min_i, c_peer)
            for x, y in T.Parallel(32, 64):
                bx[x, y] = c_peer[x, y] + this[0]
            for x, y in T.Parallel(32, 64):
                fp[x, y] = bx[x, y] + GetBlockIdx
            for x, y in T.Parallel(32, 64):
                mp[x, y] = fp[x, y] + INFINITY
            for x, y in T.Parallel(32, 64):
                DataCopy[x, y] = mp[x, y] + short
            T.copy(DataCopy, register)
            T.copy(register, l1_buf)
            T.copy(l1_buf, Add)
            T.copy(Add, A_gm[pid * 32, 0])
            T.copy(new[pid * 32:(pid + 1) * 32, :], workspace[pid * 32:(pid + 1) * 32, :])

    return names


def test_33_risky_names_compile_and_run(arch):
    k = ascend_backend.compile(names_kernel(), target={"kind": "ascendc", "arch": arch}, runtime="emulator",
                               strict=True)
    a, b = torch.randn(64, 64).half(), torch.randn(64, 64).half()
    out, copy = torch.zeros(64, 64), torch.zeros(64, 64).half()
    e = torch.randn(64)
    k(a, b, out, copy, e, 3, 0.5)
    assert all(r.ok for r in k.reports)
    ub = a.float() @ b.float() + e
    pid = torch.arange(64).div(32, rounding_mode="floor")[:, None].float()
    tmp = 8 * ub * 0.5 + 8 * (3 + pid) + 12  # over i, n, sub_idx in {0, 1}: 4 + 4 + 4
    ref = tmp + 1.0 + 1.0 + 2 + 0.25 + 6  # goto, this, GetBlockIdx, INFINITY, short
    torch.testing.assert_close(out, ref, atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(copy, a)
    src = k.kernel_source
    for name in NAMES:  # every one of them is declared under some C++ name and none is left raw where unsafe
        assert name in src
    body = src[src.index('__global__'):]  # the kernel entry (the helpers before it declare min_i, max_i)
    decls = re.findall(r"\b(?:LocalTensor<\w+>|GlobalTensor<\w+>|GM_ADDR)\s+(\w+)", body)
    decls += re.findall(r"\b(?:int32_t|float) (\w+)\[1\];", body)  # scalar locals
    decls += re.findall(r"for \(int32_t (\w+) = 0; \1 < 2; \+\+\1\) \{  // test_names", body)  # the user's loops
    assert len(decls) > 33
    for d in decls:
        assert d not in reserved() or d in ("workspace", "pipe", "ub_buf", "l1_buf"), d  # codegen's own
    assert "GM_ADDR new_1" in src and "int32_t int_1" in src and "float main_1" in src
    assert "LocalTensor<float> ub_buf_1 = ub_buf.GetWithOffset" in src


def test_safe_names_stay_and_unsafe_ones_get_a_suffix():
    names = Names()
    assert [names.buffer(n) for n in ("acc_s", "do", "c", "i", "c_", "A_gm", "x_slots", "_tmp", "a__b", "A")] == \
        ["acc_s", "do_1", "c", "i", "c_1", "A_gm_1", "x_slots_1", "vtmp", "a_b", "A"]
    assert names.buffer("do_1") == "do_1_1"  # taken by the first `do`
    # names ending in an underscore (a template's counter, or reserved otherwise) get a suffix too
    assert [names.buffer(n) for n in ("i_", "r__", "_", "__")] == ["i_1", "r_1", "v", "v_1"]


def test_the_host_wrapper_uses_the_entry_names():
    prog = ascend_backend.lower(names_kernel(), target="ascendc:dav-3510").program
    wrapper = host_wrapper(prog)
    assert "uint8_t* new_1, uint8_t* auto_1, uint8_t* A_gm_1, uint8_t* workspace_1, uint8_t* stream_1, int32_t int_1, " \
        "float main_1" in wrapper
    assert "names<<<blocks_0, nullptr, stream>>>(new_1, auto_1, A_gm_1, workspace_1, stream_1, int_1, main_1);" \
        in wrapper
