"""A per-tensor scale folded into the Fixpipe (passes/fold_scale.py) on the emulator against torch,
strict mode: the scaled FP8 GEMM of examples/fp8_gemm.py and int8 GEMMs dequantized by one scale.
Scales that the Fixpipe's (1, 8, 10) format cannot hold exactly, so that the rounding codegen
applies to the scale is exercised; the kernels need no Vector core."""

import fp8_gemm
import pytest
import tilelang.language as T
import torch
from strict_run import run

E4 = torch.float8_e4m3fn




def quantize_scale(s: float) -> float:
    """The scale as the Fixpipe multiplies with it: float32 rounded to a 10-bit mantissa."""
    bits = torch.tensor([s], dtype=torch.float32).view(torch.int32).item()
    return torch.tensor([(bits + 0x1000) & ~0x1FFF], dtype=torch.int32).view(torch.float32).item()


@pytest.mark.slow
def test_fp8_gemm_per_tensor_scale_is_a_cube_only_kernel():
    M, N, K = 128, 128, 256
    g = torch.Generator().manual_seed(11)
    a, b = torch.randn(M, K, generator=g).to(E4), torch.randn(N, K, generator=g).to(E4)
    sa, sb = torch.tensor([0.1234567]), torch.tensor([1.7])
    c = torch.zeros(M, N, dtype=torch.bfloat16)
    k = run(fp8_gemm.matmul_fp8_tensor_scale(M, N, K, 64, 128, 128), [a, b, sa, sb, c], "dav-3510")
    src = k.kernel_source
    assert "QuantMode_t::QF322BF16_PRE" in src and "CrossCore" not in src and [lc.kernel_type.value for lc in k.program.launches] == ["AIC_ONLY"]
    exact = (a.float() @ b.float().T).double() * float((sa * sb).item())
    # bfloat16 keeps 8 bits: the result is the exact one within one bf16 rounding (2^-8 relative)
    torch.testing.assert_close(c.double(), exact, rtol=2 ** -8, atol=1e-3)
    # and it is what the Fixpipe computes: float32 product times the rounded scale, rounded once
    fix = ((a.float() @ b.float().T) * quantize_scale(float((sa * sb).item()))).to(torch.bfloat16)
    assert (c.view(torch.int16) - fix.view(torch.int16)).abs().max().item() <= 1


def int8_dequant(M, N, K, out_dtype):
    @T.prim_func
    def mm(A: T.Tensor((M, K), "int8"), B: T.Tensor((N, K), "int8"), S: T.Tensor((1,), "float32"),
           C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(1, 1) as (bx, by):
            a_s = T.alloc_shared((M, K), "int8")
            b_s = T.alloc_shared((N, K), "int8")
            acc = T.alloc_fragment((M, N), "int32")
            out = T.alloc_fragment((M, N), out_dtype)
            s = T.alloc_var("float32")
            T.copy(A[0, 0], a_s)
            T.copy(B[0, 0], b_s)
            T.gemm(a_s, b_s, acc, transpose_B=True, clear_accum=True)
            s = S[0]
            for i, j in T.Parallel(M, N):
                out[i, j] = T.Cast("float32", acc[i, j]) * s
            T.copy(out, C[0, 0])

    return mm


@pytest.mark.parametrize("arch,out_dtype,mode", [
    ("dav-c220", "float16", "DEQF16"),
    pytest.param("dav-3510", "float16", "DEQF16", marks=pytest.mark.slow),
    ("dav-3510", "bfloat16", "QS322BF16_PRE"),
])
def test_int8_gemm_dequantized_by_one_scale(arch, out_dtype, mode):
    M, N, K = 64, 64, 128
    g = torch.Generator().manual_seed(12)
    a = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    s = torch.tensor([3.3e-4])
    c = torch.zeros(M, N, dtype=getattr(torch, out_dtype))
    k = run(int8_dequant(M, N, K, out_dtype), [a, b, s, c], arch)
    assert f"QuantMode_t::{mode}" in k.kernel_source and "CrossCore" not in k.kernel_source
    exact = (a.long() @ b.long().T).double() * float(s.item())
    # the scale's 10-bit mantissa (2^-11 relative) and the output's rounding
    rtol = 2 ** -11 + (2 ** -8 if out_dtype == "bfloat16" else 2 ** -11)
    torch.testing.assert_close(c.double(), exact, rtol=rtol, atol=1e-3)
