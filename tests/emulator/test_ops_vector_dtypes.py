"""Per-arch data types of the basic vector ops (emu_vector.h's dtype tables, from each op's API
page): bfloat16_t arithmetic runs on dav-3510 with one round-to-nearest-even per instruction;
bisheng's compile-time rejections are reproduced (bfloat16_t Add on dav-c220, bfloat16_t Exp /
Div anywhere, a 950 count-form-only type in a mask/repeat form)."""
import pytest
import torch
from test_ops_harness import check_ok, run

from ascend_backend.emulator import EmulatorCompileError, run_source

N = 128   # bf16 elements: one 256-byte repeat

BF16_SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int N = 128;
extern "C" __global__ __aicore__ void bf(GM_ADDR x, GM_ADDR y, GM_ADDR out, int32_t op) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    pipe.InitBuffer(bx, N * 2); pipe.InitBuffer(by, N * 2); pipe.InitBuffer(bo, N * 2);
    GlobalTensor<bfloat16_t> gx, gy, go;
    gx.SetGlobalBuffer((__gm__ bfloat16_t*)x, N); gy.SetGlobalBuffer((__gm__ bfloat16_t*)y, N);
    go.SetGlobalBuffer((__gm__ bfloat16_t*)out, N);
    LocalTensor<bfloat16_t> lx = bx.Get<bfloat16_t>(), ly = by.Get<bfloat16_t>(), lo = bo.Get<bfloat16_t>();
    DataCopy(lx, gx, N); DataCopy(ly, gy, N);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    switch (op) {
        case 0: Add(lo, lx, ly, N); break;
        case 1: Mul(lo, lx, ly, N); break;
        case 2: Max(lo, lx, ly, N); break;
        case 3: Adds(lo, lx, bfloat16_t(0.00390625f), N); break;   // 2^-8: exact in bf16
        case 4: Add(lo, lx, ly, (uint64_t)N, 1, BinaryRepeatParams()); break;
    }
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, lo, N);
}
'''


def _bf16_inputs():
    g = torch.Generator().manual_seed(7)
    x = (torch.randn(N, generator=g) * 3).to(torch.bfloat16)
    y = (torch.randn(N, generator=g) * 3).to(torch.bfloat16)
    e = 2.0 ** -7   # one bf16 ulp at 1.0
    # ties of the sum (round to even: 1 + e/2 -> 1, (1 + e) + e/2 -> 1 + 2e), a sum 3/4 ulp above
    # 1 (rounds up; truncation would give 1), a product tie (3 * (1 + e) = 3 + 1.5 ulp -> 3 + 2 ulp)
    pairs = [(1.0, e / 2), (1.0 + e, e / 2), (1.0, 0.75 * e), (3.0, 1.0 + e), (-1.0 - e, -e / 2)]
    for i, (a, b) in enumerate(pairs):
        x[i], y[i] = a, b
    return x, y


def _bf16_run(op, x, y):
    out = torch.zeros(N, dtype=torch.bfloat16)
    rep = run(BF16_SRC, "bf", [x, y, out, op], arch="dav-3510", kernel_type="aiv")
    check_ok(rep)
    return out


def _same_bits(a, b):
    assert torch.equal(a.view(torch.int16), b.view(torch.int16)), (a[:8], b[:8])


def test_bf16_arith_rounds_per_instruction_on_dav_3510():
    """Add, Mul, Max, Adds (and Add's mask form) on bfloat16_t: torch's bf16 CPU ops also round
    every result once to bf16 (nearest even); the inputs make that rounding matter."""
    x, y = _bf16_inputs()
    s = torch.tensor(2.0 ** -8, dtype=torch.bfloat16)
    exact_sum, exact_prod = x.float() + y.float(), x.float() * y.float()
    assert (exact_sum != (x + y).float()).sum() > 20 and (exact_prod != (x * y).float()).sum() > 20
    assert (x + y)[0] == 1.0 and (x + y)[1] == 1.0 + 2.0 ** -6 and (x * y)[3] == 3.0 + 2.0 ** -5
    _same_bits(_bf16_run(0, x, y), x + y)
    _same_bits(_bf16_run(1, x, y), x * y)
    _same_bits(_bf16_run(2, x, y), torch.maximum(x, y))
    _same_bits(_bf16_run(3, x, y), x + s)
    _same_bits(_bf16_run(4, x, y), x + y)


def _compile_fails(body: str, arch: str, message: str, type_: str = "bfloat16_t") -> None:
    src = r'''
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void k(GM_ADDR x) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe; TBuf<TPosition::VECCALC> b; pipe.InitBuffer(b, 1024);
    LocalTensor<TYPE> t = b.Get<TYPE>();
    BODY;
}
'''.replace("TYPE", type_).replace("BODY", body)
    with pytest.raises(EmulatorCompileError) as ei:
        run_source(src, "k", [torch.zeros(4)], 1, arch=arch)
    out = ei.value.compiler_output
    assert message in out and "see the API page" in out, out[:3000]


def test_bf16_add_does_not_compile_on_dav_c220():
    # Add page: the A2 line lists int16_t, half, int32_t, float
    _compile_fails("Add(t, t, t, 64)", "dav-c220", "Add: data type not supported on this arch")


def test_bf16_exp_and_div_do_not_compile_on_either_arch():
    # Exp page: half, float on every product; Div page: no bfloat16_t on the 950 or A2 line
    for arch in ("dav-3510", "dav-c220"):
        _compile_fails("Exp(t, t, 64)", arch, "Exp: data type not supported on this arch")
        _compile_fails("Div(t, t, t, 64)", arch, "Div: data type not supported on this arch")


INT8_SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void k(GM_ADDR x, GM_ADDR y, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe; TBuf<TPosition::VECCALC> bx, by; pipe.InitBuffer(bx, 256); pipe.InitBuffer(by, 256);
    GlobalTensor<int8_t> gx, gy, go;
    gx.SetGlobalBuffer((__gm__ int8_t*)x, 256); gy.SetGlobalBuffer((__gm__ int8_t*)y, 256);
    go.SetGlobalBuffer((__gm__ int8_t*)out, 256);
    LocalTensor<int8_t> lx = bx.Get<int8_t>(), ly = by.Get<int8_t>();
    DataCopy(lx, gx, 256); DataCopy(ly, gy, 256);
    SetFlag<HardEvent::MTE2_V>(0); WaitFlag<HardEvent::MTE2_V>(0);
    Add(lx, lx, ly, 256);
    SetFlag<HardEvent::V_MTE3>(0); WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, lx, 256);
}
'''


def test_count_form_only_type_on_dav_3510():
    """Add page, 950 line: int8_t takes only the count form ("tensor前n个数据计算"); the mask forms
    (continuous and bit mask) reject it at compile time."""
    g = torch.Generator().manual_seed(3)
    x = torch.randint(-128, 128, (256,), dtype=torch.int8, generator=g)
    y = torch.randint(-128, 128, (256,), dtype=torch.int8, generator=g)
    out = torch.zeros(256, dtype=torch.int8)
    check_ok(run(INT8_SRC, "k", [x, y, out], arch="dav-3510", kernel_type="aiv"))
    assert torch.equal(out, x + y)   # wraps, as torch's int8 add
    msg = "Add: on this arch this data type takes only the count form"
    _compile_fails("Add(t, t, t, (uint64_t)64, 1, BinaryRepeatParams())", "dav-3510", msg, "int8_t")
    _compile_fails("uint64_t m[2] = {1, 0}; Add(t, t, t, m, 1, BinaryRepeatParams())", "dav-3510", msg, "int8_t")
