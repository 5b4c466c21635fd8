"""A unit-flag reset (SetFixPipeConfig(acc, true), after a Fixpipe that reads fewer L0C blocks than
its Mmad marked: a runtime tail tile) clears every block's flag in L0C, not only its accumulator's.
With a second unit-flag chain in the kernel -- an accumulator marked by its K loop's last Mmad and
read after the loop -- the reset inside the loop cleared that chain's marks, and its Fixpipe waited
forever (TileLang's attention-sink backward: dQ's tail tile atomically added each step, dK/dV read
after the loop). passes/unit_flag.py now marks a chain that needs a reset only when it is the kernel's
one unit-flag chain; otherwise it keeps its SetFlag/WaitFlag pairs."""

import tilelang.language as T
import torch
from filecheck import filecheck
from strict_run import run

M, N, K, BK, L = 64, 64, 128, 64, 100  # L rows of Y: the second 64-row tile is a 36-row tail


def kernel(with_acc: bool):
    """Y[k-th tile] = X[k-th tile] @ W each step (a tail at the end); with_acc: also C = A @ B
    accumulated over the same loop and read after it."""

    @T.prim_func
    def two_chains(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                   X: T.Tensor((L, BK), "float16"), W: T.Tensor((BK, N), "float16"),
                   C: T.Tensor((M, N), "float32"), Y: T.Tensor((L, N), "float32")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((M, BK), "float16")
            b = T.alloc_shared((BK, N), "float16")
            x = T.alloc_shared((64, BK), "float16")
            w = T.alloc_shared((BK, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            y = T.alloc_fragment((64, N), "float32")
            T.copy(W, w)
            if with_acc:
                T.clear(acc)
            for k in T.Pipelined(K // BK, num_stages=1):
                if with_acc:
                    T.copy(A[0, k * BK], a)
                    T.copy(B[k * BK, 0], b)
                    T.gemm(a, b, acc)
                T.copy(X[k * 64, 0], x)
                T.gemm(x, w, y, clear_accum=True)
                T.copy(y, Y[k * 64, 0])
            if with_acc:
                T.copy(acc, C)

    return two_chains


def _run(with_acc: bool, arch: str) -> str:
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(M, K, generator=g).half(), torch.randn(K, N, generator=g).half()
    x, w = torch.randn(L, BK, generator=g).half(), torch.randn(BK, N, generator=g).half()
    c, y = torch.full((M, N), float("nan")), torch.full((L, N), float("nan"))
    k = run(kernel(with_acc), [a, b, x, w, c, y], arch)
    torch.testing.assert_close(y, x.float() @ w.float(), atol=1e-3, rtol=1e-4)
    if with_acc:
        torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-3, rtol=1e-4)
    return k.kernel_source


def test_a_reset_is_not_used_beside_another_unit_flag_chain(arch):
    # strict mode: before the fix the emulator reported C's Fixpipe reading blocks no Mmad had marked
    src = _run(True, arch)
    filecheck(src, """
        CHECK: mp.unitFlag = (k == 1) ? 3 : 2;  // unit flag, sync table #{{.*}}: 3 on the K loop's last trip marks acc's
        CHECK-NOT: SetFixPipeConfig(y, true);
        CHECK: fp.unitFlag = 3;
    """)
    assert src.count("unitFlag = ") == 2  # acc's Mmad and Fixpipe; y keeps SetFlag/WaitFlag


def test_a_lone_tail_chain_keeps_its_unit_flags_and_reset(arch):
    src = _run(False, arch)
    filecheck(src, """
        CHECK: mp.unitFlag = 3;
        CHECK: fp.unitFlag = 3;
        CHECK: SetFixPipeConfig(y, true);  // unit flag, sync table #{{.*}}: the Fixpipe may read fewer blocks
    """)
