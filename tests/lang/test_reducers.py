"""T.alloc_reducer / T.finalize_reducer in the forms TileKernels writes, on the emulator against
torch in strict mode (mHC's head_compute_mix backward: a 1-element reducer summed over a whole 2-D
T.Parallel, a per-column reducer, both under `if i < n`, in a serial loop over token blocks)."""

import tilelang.language as T
import torch
from filecheck import filecheck
from strict_run import run

TB, NT = 16, 4


def head_mix_bwd():
    @T.prim_func
    def k(G: T.Tensor((NT * TB, 4), "float32"), X: T.Tensor((NT * TB, 4), "float32"), n: T.int32,
          Dx: T.Tensor((NT * TB, 4), "float32"), Ds: T.Tensor((1,), "float32"), Db: T.Tensor((4,), "float32")):
        with T.Kernel(1) as _:
            rs = T.alloc_reducer(1, "float32", replication="all")
            rb = T.alloc_reducer(4, "float32", replication="all")
            T.fill(rs, 0)
            T.fill(rb, 0)
            for t in T.serial(NT):
                g = T.alloc_fragment((TB, 4), "float32")
                for i1, j in T.Parallel(TB, 4):
                    i = t * TB + i1
                    if i < n:
                        g[i1, j] = G[i, j] * 0.5
                        Dx[i, j] = g[i1, j] * 3.0
                        rs[0] += g[i1, j] * X[i, j]
                        rb[j] += g[i1, j]
            T.finalize_reducer(rs)
            T.finalize_reducer(rb)
            T.copy(rs, Ds[0:1])
            T.copy(rb, Db[0:4])

    return k


def test_head_compute_mix_bwd_reducers(arch):
    g, x = torch.randn(NT * TB, 4), torch.randn(NT * TB, 4)
    n = 53
    dx = torch.zeros(NT * TB, 4)
    ds, db = torch.empty(1), torch.empty(4)
    kern = run(head_mix_bwd(), [g, x, n, dx, ds, db], arch)
    gg = g[:n] * 0.5
    torch.testing.assert_close(dx[:n], gg * 3.0, rtol=1e-6, atol=1e-6)
    assert (dx[n:] == 0).all()
    torch.testing.assert_close(ds, (gg * x[:n]).sum().reshape(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(db, gg.sum(0), rtol=1e-5, atol=1e-5)
    filecheck(kern.kernel_source, """
        CHECK: Select(
        CHECK: WholeReduceSum(
    """)


def int_sum_and_refusals():
    @T.prim_func
    def k(S: T.Tensor((64,), "float32"), C: T.Tensor((1,), "int32")):
        with T.Kernel(1) as _:
            s = T.alloc_fragment((64,), "float32")
            cnt = T.alloc_reducer((1,), "int32", replication="all")
            T.copy(S[0], s)
            T.fill(cnt, 0)
            for i in T.Parallel(64):
                if s[i] > 0.0:
                    cnt[0] += 1
            T.finalize_reducer(cnt)
            T.copy(cnt, C[0:1])

    return k


def test_int32_count_reducer(arch):
    s = torch.randn(64)
    c = torch.empty(1, dtype=torch.int32)
    run(int_sum_and_refusals(), [s, c], arch)
    assert int(c[0]) == int((s > 0).sum())
