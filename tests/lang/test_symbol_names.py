"""A kernel named like a symbol of the C library, libm or the emulator runtime is just a kernel: the
generated entries are C++ functions of namespace tl_ascend, kernel libraries export only their
trampolines, and the runtime's own entry points carry a reserved prefix. Before, `emu_run`,
`emu_free` and `emu_arch` crashed Python, `usleep` hung, `getpid` and `dlopen` never ran and reported
OK, and `erf`, `hypot`, `log1p`, `fma`, `random`, `memchr`, `setenv` were g++ errors. Each kernel
doubles its input, so one that never ran is seen."""

import pytest
import tilelang.language as T
import torch

import ascend_backend
from ascend_backend.cnames import entry_name
from ascend_backend.emulator import run_source

# The names the issue lists, then a few more of each kind (libc, POSIX, libm, dynamic loader,
# pthread, the runtime's own C names, what codegen spells itself).
ISSUE_NAMES = ["emu_run", "emu_free", "emu_arch", "usleep", "getpid", "dlopen", "erf", "hypot", "log1p", "fma",
               "random", "memchr", "setenv"]
MORE_NAMES = ["malloc", "free", "exit", "abort", "fork", "write", "sleep", "kill", "signal", "mmap", "dlsym",
              "pthread_create", "sigaction", "strlen", "printf", "expf", "main", "_exit", "__tl_ascend_emu_run",
              "tl_ascend", "sqrtf", "exp", "nanosleep", "clock_gettime", "waitpid"]
FAST = ["emu_run", "usleep", "getpid", "erf", "memchr", "__tl_ascend_emu_run"]


def doubling(name: str):
    @T.prim_func
    def k(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1):
            x = T.alloc_fragment((64,), "float32")
            T.copy(X[0], x)
            for i in T.Parallel(64):
                x[i] = x[i] * 2.0
            T.copy(x, Y[0])

    return k.with_attr("global_symbol", name)


def check(name: str, arch: str) -> None:
    kern = ascend_backend.compile(doubling(name), target={"kind": "ascendc", "arch": arch}, runtime="emulator",
                                  strict=True)
    x, y = torch.randn(64), torch.zeros(64)
    kern(x, y)
    assert torch.equal(y, 2 * x), name  # it ran
    assert kern.last_report.op_counts, name
    assert f"void {entry_name(name)}(" in kern.kernel_source


@pytest.fixture(autouse=True)
def _short_timeout(monkeypatch):
    monkeypatch.setenv("TL_ASCEND_EMU_TIMEOUT", "20")  # a kernel that hangs (usleep before) fails fast


@pytest.mark.parametrize("name", FAST)
def test_symbol_names_run(name):
    check(name, "dav-3510")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(ISSUE_NAMES + MORE_NAMES) - set(FAST)))
def test_more_symbol_names_run(name, arch):
    check(name, arch)


@pytest.mark.slow
@pytest.mark.parametrize("name", FAST)
def test_symbol_names_run_c220(name):
    check(name, "dav-c220")


def test_entry_names_kept_unless_the_body_needs_them():
    assert [entry_name(n) for n in ("getpid", "emu_run", "main", "gemm", "erf")] == \
        ["getpid", "emu_run", "main", "gemm", "erf"]
    # names the generated body spells unqualified would be hidden by the entry inside the namespace
    assert [entry_name(n) for n in ("DataCopy", "expf", "min_i", "int32_t", "for")] == \
        ["DataCopy_kernel", "expf_kernel", "min_i_kernel", "int32_t_kernel", "for_kernel"]
    assert [entry_name(n) for n in ("_exit", "__x", "a__b", "3d", "a-b")] == ["k_exit", "k_x", "a_b", "k3d", "a_b"]


HANDWRITTEN = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void NAME(GM_ADDR x, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> t = b.Get<float>();
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    gy.SetGlobalBuffer((__gm__ float*)y, 64);
    DataCopy(t, gx, 64);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(t, t, 2.0f, 64);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gy, t, 64);
}
"""


@pytest.mark.parametrize("name", ["emu_run", "getpid", "dlopen", "usleep"])
def test_handwritten_extern_c_kernels_named_like_symbols_run(name):
    """Hand-written `extern "C"` kernels (no namespace) with such names run too: the library's
    symbols are hidden, so the trampoline calls the kernel, not getpid or usleep."""
    x, y = torch.randn(64), torch.zeros(64)
    rep = run_source(HANDWRITTEN.replace("NAME", name), name, [x, y], 1, auto_sync=False)
    assert torch.equal(y, 2 * x) and rep.ok


def test_handwritten_kernel_in_a_namespace():
    src = HANDWRITTEN.replace('extern "C" __global__ __aicore__ void NAME', "namespace ops { namespace {} "
                              "__global__ __aicore__ void getpid").replace("DataCopy(gy, t, 64);\n}",
                                                                         "DataCopy(gy, t, 64);\n}\n}")
    for kernel in ("getpid", "ops::getpid"):
        x, y = torch.randn(64), torch.zeros(64)
        run_source(src, kernel, [x, y], 1, auto_sync=False)
        assert torch.equal(y, 2 * x)
