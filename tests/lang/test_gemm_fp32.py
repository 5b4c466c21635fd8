"""float32 x float32 -> float32 T.gemm (mHC's norm_fn: x in float32 times the float32 weights),
on the emulator against torch in strict mode, with the key lines of the generated code.

Both arches' Mmad takes float operands (Mmad page: 16 x 8 fractals, C0 = 8 elements). dav-3510's
LoadData transposes 4-byte fractals, so every transpose combination runs there; dav-c220's
transposes only 2-byte ones, so there A is stored M x K and B N x K (the weight layout) and the
other forms are refused at the gemm's line.
"""

import pytest
import tilelang.language as T
import torch
from dsl_lines import marker_line
from filecheck import filecheck
from strict_run import run

import ascend_backend
from ascend_backend.errors import UnsupportedError

M, N, K = 32, 32, 64


def gemm_f32(trans_a: bool, trans_b: bool, bk: int = 32):
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)

    @T.prim_func
    def k(A: T.Tensor(a_shape, "float32"), B: T.Tensor(b_shape, "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as _:
            a = T.alloc_shared((bk, M) if trans_a else (M, bk), "float32")
            b = T.alloc_shared((N, bk) if trans_b else (bk, N), "float32")
            c = T.alloc_fragment((M, N), "float32")
            T.clear(c)
            for ko in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[ko * bk, 0] if trans_a else A[0, ko * bk], a)
                T.copy(B[0, ko * bk] if trans_b else B[ko * bk, 0], b)
                T.gemm(a, b, c, transpose_A=trans_a, transpose_B=trans_b)  # marker:gemm
            T.copy(c, C[0, 0])

    return k


def _ref(a, b, ta, tb):
    a64, b64 = a.double(), b.double()
    return ((a64.T if ta else a64) @ (b64.T if tb else b64)).float()


def test_weight_layout(arch):
    a, b = torch.randn(M, K), torch.randn(N, K)
    c = torch.empty(M, N)
    kern = run(gemm_f32(False, True), [a, b, c], arch)
    torch.testing.assert_close(c, _ref(a, b, False, True), rtol=1e-5, atol=1e-4)
    filecheck(kern.kernel_source, """
        CHECK: LocalTensor<float> a_l0a
        CHECK: LoadData(
        CHECK: Mmad(c, a_l0a, b_l0b,
    """)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (True, True)])
def test_transposes(arch, ta, tb):
    if arch == "dav-c220":
        with pytest.raises(UnsupportedError) as e:
            ascend_backend.lower(gemm_f32(ta, tb), {"kind": "ascendc", "arch": arch})
        assert e.value.loc.line == marker_line(__file__, "gemm")
        assert "transposes only 2-byte fractals" in str(e.value) and "transpose_B=True" in str(e.value)
        return
    a = torch.randn(*((K, M) if ta else (M, K)))
    b = torch.randn(*((N, K) if tb else (K, N)))
    c = torch.empty(M, N)
    run(gemm_f32(ta, tb), [a, b, c], arch)
    torch.testing.assert_close(c, _ref(a, b, ta, tb), rtol=1e-5, atol=1e-4)


def norm_fn_mul():
    """mHC's pre_norm_fn mul kernel, one token block: x (bfloat16) widened to float32 by the vector
    unit, squared-summed in groups of 4 columns, and multiplied by the float32 weights fn (N x K)."""
    TB, HB, NF = 32, 64, 32

    @T.prim_func
    def k(X: T.Tensor((TB, 2 * HB), "bfloat16"), Fn: T.Tensor((NF, 2 * HB), "float32"),
          Out: T.Tensor((TB, NF), "float32"), Sq: T.Tensor((TB, 4), "float32")):
        with T.Kernel(1) as _:
            out = T.alloc_fragment((TB, NF), "float32")
            sq = T.alloc_fragment((TB, 4), "float32")
            T.clear(out)
            T.clear(sq)
            for pz in T.Pipelined(2, num_stages=2):
                x16 = T.alloc_shared((TB, HB), "bfloat16")
                fn = T.alloc_shared((NF, HB), "float32")
                T.copy(X[0, pz * HB], x16)
                T.copy(Fn[0, pz * HB], fn)
                x = T.alloc_fragment((TB, HB), "float32")
                T.copy(x16, x)
                for jj in T.serial(HB // 4):
                    for i, j in T.Parallel(TB, 4):
                        sq[i, j] += x[i, jj * 4 + j] * x[i, jj * 4 + j]
                T.gemm(x, fn, out, transpose_B=True)
            T.copy(out, Out[0, 0])
            T.copy(sq, Sq[0, 0])

    return k


def test_norm_fn_mul(arch):
    x = torch.randn(32, 128).bfloat16()
    fn = torch.randn(32, 128)
    out, sq = torch.empty(32, 32), torch.empty(32, 4)
    run(norm_fn_mul(), [x, fn, out, sq], arch)
    xf = x.double()
    torch.testing.assert_close(out, (xf @ fn.double().T).float(), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(sq, (xf * xf).view(32, 32, 4).sum(1).float(), rtol=1e-5, atol=1e-4)
