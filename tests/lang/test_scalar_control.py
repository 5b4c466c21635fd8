"""Scalar code, control flow, data-dependent windows and several launches, as TileLang users write
them; each kernel on the emulator against torch, both arches, strict mode."""

import pytest
import tilelang.language as T
import torch
from strict_run import run

import ascend_backend


def gather_rows(M=64, N=64, bM=32, blocks=2):
    """Block b copies the row block Idx[b] of A (an index read from GM), adds a scalar read from A
    itself on one branch and doubles on the other."""

    @T.prim_func
    def gather(A: T.Tensor((M, N), "float32"), Idx: T.Tensor((4,), "int32"), C: T.Tensor((blocks * bM, N), "float32")):
        with T.Kernel(blocks) as bx:
            x = T.alloc_fragment((bM, N), "float32")
            v = T.alloc_var("int32")
            s = T.alloc_local((1,), "float32")
            v = Idx[bx]
            s[0] = A[bx, 0] * 2.0
            T.copy(A[v * bM, 0], x)
            if bx > 0:
                for i, j in T.Parallel(bM, N):
                    x[i, j] = x[i, j] + s[0]
            else:
                for i, j in T.Parallel(bM, N):
                    x[i, j] = x[i, j] * 2.0
            T.copy(x, C[bx * bM, 0])

    return gather


def test_scalar_locals_if_else_and_a_window_indexed_by_gm(arch):
    a = torch.randn(64, 64)
    idx = torch.tensor([1, 0, 1, 0], dtype=torch.int32)
    c = torch.zeros(64, 64)
    k = run(gather_rows(), [a, idx, c], arch)
    ref = torch.cat([a[32:64] * 2, a[0:32] + a[1, 0] * 2])
    torch.testing.assert_close(c, ref)
    src = k.kernel_source
    assert "Idx_gm.GetValue(bx)" in src and "if ((bx > 0))" in src and "} else {" in src


def test_scalar_loop_accumulates_into_a_local(arch):
    @T.prim_func
    def rowsum_scalar(A: T.Tensor((8, 16), "float32"), S: T.Tensor((8,), "float32")):
        with T.Kernel(8) as bx:
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for k in T.serial(16):
                acc[0] = acc[0] + A[bx, k]
            S[bx] = acc[0]

    a = torch.randn(8, 16)
    s = torch.zeros(8)
    run(rowsum_scalar, [a, s], arch)
    torch.testing.assert_close(s, a.sum(1), atol=1e-5, rtol=1e-5)


def test_loop_with_start_and_step(arch):
    @T.prim_func
    def strided(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(1):
            x = T.alloc_fragment((16,), "float32")
            for k in T.serial(2, 14, 3):  # k = 2, 5, 8, 11
                T.copy(A[k * 16], x)
                for i in T.Parallel(16):
                    x[i] = x[i] + 1.0
                T.copy(x, B[k * 16])

    a = torch.randn(256)
    b = torch.zeros(256)
    run(strided, [a, b], arch)
    ref = torch.zeros(256)
    for k in (2, 5, 8, 11):
        ref[k * 16:(k + 1) * 16] = a[k * 16:(k + 1) * 16] + 1
    torch.testing.assert_close(b, ref)


def test_two_launches_run_in_order(arch):
    @T.prim_func
    def two(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(2) as bx:
            x = T.alloc_fragment((32, 64), "float32")
            T.copy(A[bx * 32, 0], x)
            for i, j in T.Parallel(32, 64):
                x[i, j] = x[i, j] * 2.0
            T.copy(x, B[bx * 32, 0])
        with T.Kernel(4) as bx:
            y = T.alloc_fragment((16, 64), "float32")
            T.copy(B[bx * 16, 0], y)
            for i, j in T.Parallel(16, 64):
                y[i, j] = y[i, j] + 1.0
            T.copy(y, B[bx * 16, 0])

    a = torch.randn(64, 64)
    b = torch.zeros(64, 64)
    k = run(two, [a, b], arch)
    torch.testing.assert_close(b, a * 2 + 1)
    assert k.block_dims == [2, 4] and len(k.reports) == 2
    assert "void two_0(" in k.kernel_source and "void two_1(" in k.kernel_source


def test_conditional_assignment_in_parallel_is_a_select(arch):
    @T.prim_func
    def relu_if(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(2) as bx:
            x = T.alloc_fragment((32, 64), "float32")
            T.copy(A[bx * 32, 0], x)
            for i, j in T.Parallel(32, 64):
                if i - j >= 0:
                    x[i, j] = 0.0
            T.copy(x, B[bx * 32, 0])

    a = torch.randn(64, 64)
    b = torch.zeros(64, 64)
    run(relu_if, [a, b], arch)
    i = torch.arange(32)[:, None]
    j = torch.arange(64)[None, :]
    ref = torch.cat([torch.where(i - j >= 0, 0.0, a[r * 32:(r + 1) * 32]) for r in range(2)])
    torch.testing.assert_close(b, ref)


def test_print_runs_on_the_emulator(arch, capfd):
    @T.prim_func
    def show(A: T.Tensor((16,), "float32")):
        with T.Kernel(1):
            s = T.alloc_local((1,), "float32")
            s[0] = A[3] * 2.0
            T.print(s[0])

    a = torch.arange(16, dtype=torch.float32)
    k = run(show, [a], arch)
    assert "printf(" in k.kernel_source
    assert "6.000000" in capfd.readouterr().out


def test_print_message_is_text_not_a_format(capfd):
    """A T.print message with printf conversions, quotes, a backslash and a newline prints as it is
    (it was the printf format: %s / %n crashed the kernel, a newline broke the C++)."""
    msg = 'at 100% %s %n %d "q" \\ end\nnext line\t?? done'

    @T.prim_func
    def show(A: T.Tensor((16,), "float32")):
        with T.Kernel(1):
            s = T.alloc_local((1,), "float32")
            s[0] = A[3] * 2.0
            T.print(s[0], msg=msg)

    run(show, [torch.arange(16, dtype=torch.float32)], "dav-3510")
    assert f"{msg} = 6.000000\n" in capfd.readouterr().out


def test_gpu_thread_binding_is_refused_on_dav_c220_at_its_line():
    """dav-c220 has no SIMT: thread-level code is refused there (dav-3510 runs it: tests/lang/test_simt.py)."""

    @T.prim_func
    def threads(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            A[tx] = 0.0  # marker:thread

    with pytest.raises(ascend_backend.UnsupportedError) as info:
        ascend_backend.lower(threads, "ascendc:dav-c220")
    text = str(info.value)
    assert "has no SIMT" in text
    assert "dav-3510" in text and "T.Parallel" in text


def test_atomic_add_tile_and_elementwise_across_blocks(arch):
    @T.prim_func
    def splitk_tile(A: T.Tensor((4, 64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(4) as bz:
            x = T.alloc_fragment((64, 64), "float32")
            T.copy(A[bz, 0, 0], x)
            T.atomic_add(C[0, 0], x)

    @T.prim_func
    def splitk_elem(A: T.Tensor((4, 64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(4) as bz:
            x = T.alloc_fragment((64, 64), "float32")
            T.copy(A[bz, 0, 0], x)
            for i, j in T.Parallel(64, 64):
                T.atomic_add(C[i, j], x[i, j] * 2.0)

    a = torch.randn(4, 64, 64)
    for f, scale in ((splitk_tile, 1.0), (splitk_elem, 2.0)):
        c = torch.zeros(64, 64)  # atomics add into what is there: zero the output first
        k = run(f, [a, c], arch)
        torch.testing.assert_close(c, scale * a.sum(0), atol=1e-4, rtol=1e-5)
        assert "SetAtomicAdd<float>();" in k.kernel_source and "SetAtomicNone();" in k.kernel_source


def test_while_loop_with_a_bound_read_from_memory(arch):
    @T.prim_func
    def walk(A: T.Tensor((256,), "float32"), Lim: T.Tensor((2,), "int32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2) as bx:
            x = T.alloc_fragment((16,), "float32")
            cur = T.alloc_var("int32")
            cur = bx * 8
            while cur < Lim[bx]:
                T.copy(A[cur * 16], x)
                for i in T.Parallel(16):
                    x[i] = x[i] * 3.0
                T.copy(x, B[cur * 16])
                cur = cur + 1

    a = torch.randn(256)
    lim = torch.tensor([5, 12], dtype=torch.int32)
    b = torch.zeros(256)
    run(walk, [a, lim, b], arch)
    ref = torch.zeros(256)
    ref[0:80] = a[0:80] * 3
    ref[128:192] = a[128:192] * 3
    torch.testing.assert_close(b, ref)
