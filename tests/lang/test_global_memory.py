"""Global memory the DSL moves or allocates itself: T.copy from one global tensor to another (staged
through UB, with a cast when the dtypes differ), and T.alloc_global scratch shared by the launches
of one PrimFunc (flash decoding's split, then combine); on the emulator against torch, both
arches, strict mode."""

import re

import pytest
import tilelang.language as T
import torch

import ascend_backend
from ascend_backend.errors import UnsupportedError


def run(func, args, arch, **kw):
    k = ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True, **kw)
    out = k(*args)
    assert all(r.ok for r in k.reports)
    return k, out


def cast_out(B=1, H=2, S=128, D=64, blk=64):
    """FA backward's post-processing: each block copies its rows of the fp32 dQ to the fp16 dQ_out."""

    @T.prim_func
    def post(dQ: T.Tensor((B, H, S, D), "float32"), dQ_out: T.Tensor((B, H, S, D), "float16")):
        with T.Kernel(T.ceildiv(S, blk), H, B) as (bx, by, bz):
            T.copy(dQ[bz, by, bx * blk:(bx + 1) * blk, :], dQ_out[bz, by, bx * blk:(bx + 1) * blk, :])

    return post


def test_gm_to_gm_copy_with_a_cast(arch):
    d = torch.randn(1, 2, 128, 64)
    k, out = run(cast_out(), [d], arch, out_idx=[1])
    torch.testing.assert_close(out, d.half())
    lowered = ascend_backend.lower(cast_out(), target={"kind": "ascendc", "arch": arch}, dump={"lower_tile_ops"})
    ops = re.findall(r"^\s*\[\w+\] (\w+)", lowered.dumps["lower_tile_ops"], re.M)
    assert ops == ["copy_gm_to_ub", "vec_cast", "copy_ub_to_gm"]  # staged through UB


def test_gm_to_gm_copy_in_chunks_with_a_tail(arch):
    """A window larger than one UB stage moves in chunks of rows; its rows cross the end of the tensor."""

    @T.prim_func
    def copy_big(A: T.Tensor((300, 256), "float32"), B: T.Tensor((300, 256), "float32")):
        with T.Kernel(2) as bx:
            T.copy(A[bx * 160:(bx + 1) * 160, :], B[bx * 160:(bx + 1) * 160, :])

    a = torch.randn(300, 256)
    b = torch.zeros(300, 256)
    run(copy_big, [a, b], arch)
    torch.testing.assert_close(b, a)


def test_gm_to_gm_copy_beside_a_gemm(arch):
    """In a Cube + Vector kernel the GM -> GM copy runs on one vector core (once per block)."""

    @T.prim_func
    def gemm_and_copy(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"),
                      C: T.Tensor((64, 64), "float32"), D: T.Tensor((64, 64), "float16")):
        with T.Kernel(2) as bx:
            a = T.alloc_shared((32, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((32, 64), "float32")
            T.copy(A[bx * 32, 0], a)
            T.copy(B[0, 0], b)
            T.gemm(a, b, c, clear_accum=True)
            for i, j in T.Parallel(32, 64):
                c[i, j] = c[i, j] * 2.0
            T.copy(c, C[bx * 32, 0])
            T.copy(A[bx * 32:(bx + 1) * 32, :], D[bx * 32:(bx + 1) * 32, :])

    a, b = torch.randn(64, 64).half(), torch.randn(64, 64).half()
    c, d = torch.zeros(64, 64), torch.zeros(64, 64).half()
    run(gemm_and_copy, [a, b, c, d], arch)
    torch.testing.assert_close(c, 2 * a.float() @ b.float(), atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(d, a)


def split_combine(n=256, parts=4, blk=64):
    """Launch 0: each of `parts` blocks scales its slice of X by (block + 1) into a T.alloc_global
    scratch; launch 1 sums the partial rows into Y."""

    @T.prim_func
    def split_sum(X: T.Tensor((n,), "float32"), Y: T.Tensor((blk,), "float32")):
        partial = T.alloc_global((parts, blk), "float32")
        with T.Kernel(parts) as bx:
            x = T.alloc_fragment((blk,), "float32")
            T.copy(X[bx * blk], x)
            for i in T.Parallel(blk):
                x[i] = x[i] * (bx + 1)
            T.copy(x, partial[bx, 0])
        with T.Kernel(1):
            acc = T.alloc_fragment((blk,), "float32")
            p = T.alloc_fragment((blk,), "float32")
            T.clear(acc)
            for k in T.serial(parts):
                T.copy(partial[k, 0], p)
                for i in T.Parallel(blk):
                    acc[i] = acc[i] + p[i]
            T.copy(acc, Y[0])

    return split_sum


def test_alloc_global_scratch_across_launches(arch):
    x = torch.randn(256)
    k, y = run(split_combine(), [x], arch, out_idx=[1])
    torch.testing.assert_close(y, sum(x[b * 64:(b + 1) * 64] * (b + 1) for b in range(4)))
    src = k.kernel_source
    assert "partial_gm.SetGlobalBuffer((__gm__ float*)(workspace + 0), 256);" in src
    assert "its first 1024 bytes hold the T.alloc_global tensors (partial)" in src
    assert k.program.workspace_bytes == 1024


def test_alloc_global_beside_a_cross_core_workspace():
    """dav-c220 gemm tiles cross through the workspace too: the launches' regions come after the
    T.alloc_global tensors."""

    @T.prim_func
    def gemm_scratch(A: T.Tensor((32, 32), "float16"), B: T.Tensor((32, 32), "float16"),
                     C: T.Tensor((32, 32), "float32")):
        s = T.alloc_global((32, 32), "float32")
        with T.Kernel(1):
            a = T.alloc_shared((32, 32), "float16")
            b = T.alloc_shared((32, 32), "float16")
            c = T.alloc_fragment((32, 32), "float32")
            T.copy(A[0, 0], a)
            T.copy(B[0, 0], b)
            T.gemm(a, b, c, clear_accum=True)
            for i, j in T.Parallel(32, 32):
                c[i, j] = c[i, j] + 1.0
            T.copy(c, s[0, 0])
        with T.Kernel(1):
            T.copy(s[0:32, :], C[0:32, :])

    a, b = torch.randn(32, 32).half(), torch.randn(32, 32).half()
    k, c = run(gemm_scratch, [a, b], "dav-c220", out_idx=[2])
    torch.testing.assert_close(c, a.float() @ b.float() + 1, atol=1e-2, rtol=1e-2)
    assert "(workspace + 4096)" in k.kernel_source  # the crossing tile's region follows s (4096 bytes)


def test_gm_to_gm_windows_of_different_shapes_are_refused():
    @T.prim_func
    def bad(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1):
            T.copy(A[0:32, 0:64], B[0:64, 0:32])

    with pytest.raises(UnsupportedError, match=r"test_global_memory.py:\d+: unsupported: T.copy from 'A' window "
                                               r"\[32, 64\] to 'B' window \[64, 32\]: the windows have different "
                                               r"shapes"):
        ascend_backend.lower(bad, target="ascendc")
