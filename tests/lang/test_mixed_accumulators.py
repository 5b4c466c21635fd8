"""Gemm accumulators shared by the Cube and the Vector code (MLA decode's shape): consecutive gemms
into a vector-owned accumulator add their products in L0C and cross to the AIVs once; the L0
budget of a stepped gemm leaves room for the kernel's other gemm operands."""

import tilelang.language as T
import torch

import ascend_backend


def two_gemms_into_a_vector_tile():
    @T.prim_func
    def qk_nope_pe(Qa: T.Tensor((16, 256), "float16"), Ka: T.Tensor((64, 256), "float16"),
                   Qb: T.Tensor((16, 64), "float16"), Kb: T.Tensor((64, 64), "float16"),
                   Out: T.Tensor((16, 64), "float32")):
        with T.Kernel(1):
            qa = T.alloc_shared((16, 256), "float16")
            ka = T.alloc_shared((64, 256), "float16")
            qb = T.alloc_shared((16, 64), "float16")
            kb = T.alloc_shared((64, 64), "float16")
            s = T.alloc_fragment((16, 64), "float32")
            T.copy(Qa[0, 0], qa)
            T.copy(Ka[0, 0], ka)
            T.copy(Qb[0, 0], qb)
            T.copy(Kb[0, 0], kb)
            T.fill(s, 1.0)
            T.gemm(qa, ka, s, transpose_B=True)
            T.gemm(qb, kb, s, transpose_B=True)
            for i, j in T.Parallel(16, 64):
                s[i, j] = s[i, j] * 2.0
            T.copy(s, Out[0, 0])

    return qk_nope_pe


def test_consecutive_gemms_cross_once(arch):
    g = torch.Generator().manual_seed(3)
    qa, ka = (torch.randn(16, 256, generator=g) * 0.1).half(), (torch.randn(64, 256, generator=g) * 0.1).half()
    qb, kb = (torch.randn(16, 64, generator=g) * 0.1).half(), (torch.randn(64, 64, generator=g) * 0.1).half()
    out = torch.zeros(16, 64)
    k = ascend_backend.compile(two_gemms_into_a_vector_tile(), target={"kind": "ascendc", "arch": arch},
                               runtime="emulator", strict=True)
    k(qa, ka, qb, kb, out)
    ref = (1 + qa.float() @ ka.float().T + qb.float() @ kb.float().T) * 2
    torch.testing.assert_close(out, ref, atol=2e-2, rtol=2e-2)
    lc = k.program.launch
    assert len(lc.transfers) == 1  # the two products are added in L0C and cross once
    # the stepped gemm's L0B chunks leave room for kb's operand: L0B fits without a budget error
    l0b = [b for b in lc.kernels[next(iter(c for c in lc.kernels if c.value == "AIC"))].buffers.values()
           if b.scope is not None and b.scope.value == "L0B"]
    assert sum(b.nbytes for b in l0b) <= k.arch.capacity[l0b[0].scope]
