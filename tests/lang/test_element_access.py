"""General element access inside T.Parallel (TileKernels' tile-level forms), each on the emulator
against torch in strict mode, with the key lines of the generated code:

* shifted columns ``x[i, j + 4]`` (mHC's pre_split_mixes reads its three mixes out of one tile);
* a step of a serial loop in the index, ``x[i, jj * 4 + j]`` (mHC norm_fn's sum of squares);
* broadcasts by integer division, ``sf[i // 4, j // 32]`` (the quant kernels' scale factors);
* ``T.min(2, j // 4)`` as an index (pre_split_mixes' backward), a reversed 1-D read ``x[n - 1 - i]``.

Each becomes one Gather of the tile at byte offsets the vector unit computes (CreateVecIndex,
int32 arithmetic, divisions in float32 with a CAST_FLOOR back).
"""

import tilelang.language as T
import torch
from filecheck import filecheck
from strict_run import run

R = 16


def shifted_columns():
    @T.prim_func
    def k(X: T.Tensor((R, 24), "float32"), Y: T.Tensor((R, 4), "float32"), Z: T.Tensor((R, 8), "float32")):
        with T.Kernel(1) as _:
            x = T.alloc_fragment((R, 24), "float32")
            y = T.alloc_fragment((R, 4), "float32")
            z = T.alloc_fragment((R, 8), "float32")
            T.copy(X[0, 0], x)
            for i, j in T.Parallel(R, 4):
                y[i, j] = T.sigmoid(x[i, j + 4]) * 2.0 + x[i, j]
            for i, j in T.Parallel(R, 8):
                z[i, j] = x[i, j + 16] - x[i, j + 3]
            T.copy(y, Y[0, 0])
            T.copy(z, Z[0, 0])

    return k


def test_shifted_columns(arch):
    x = torch.randn(R, 24)
    y, z = torch.empty(R, 4), torch.empty(R, 8)
    kern = run(shifted_columns(), [x, y, z], arch)
    torch.testing.assert_close(y, torch.sigmoid(x[:, 4:8]) * 2 + x[:, :4], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(z, x[:, 16:24] - x[:, 3:11], rtol=0, atol=0)
    filecheck(kern.kernel_source, """
        CHECK: CreateVecIndex(
        CHECK: Gather({{.*}}, x, {{.*}}.ReinterpretCast<uint32_t>(), (uint32_t)0,
    """)


def serial_step():
    @T.prim_func
    def k(X: T.Tensor((R, 32), "float32"), S: T.Tensor((R, 4), "float32")):
        with T.Kernel(1) as _:
            x = T.alloc_fragment((R, 32), "float32")
            s = T.alloc_fragment((R, 4), "float32")
            T.copy(X[0, 0], x)
            T.clear(s)
            for jj in T.serial(8):
                for i, j in T.Parallel(R, 4):
                    s[i, j] += x[i, jj * 4 + j] * x[i, jj * 4 + j]
            T.copy(s, S[0, 0])

    return k


def test_serial_step_in_index(arch):
    x = torch.randn(R, 32)
    s = torch.empty(R, 4)
    run(serial_step(), [x, s], arch)
    torch.testing.assert_close(s, (x * x).view(R, 8, 4).sum(1), rtol=1e-5, atol=1e-5)


def division_broadcast(dtype):
    C = 128

    @T.prim_func
    def k(X: T.Tensor((R, C), dtype), SF: T.Tensor((R // 4, C // 32), "float32"), Y: T.Tensor((R, C), "float32")):
        with T.Kernel(1) as _:
            x = T.alloc_fragment((R, C), dtype)
            sf = T.alloc_fragment((R // 4, C // 32), "float32")
            y = T.alloc_fragment((R, C), "float32")
            T.copy(X[0, 0], x)
            T.copy(SF[0, 0], sf)
            for i, j in T.Parallel(R, C):
                y[i, j] = x[i, j] * sf[i // 4, j // 32]
            T.copy(y, Y[0, 0])

    return k


def test_division_broadcast(arch):
    for dtype, tdt in (("float32", torch.float32), ("float16", torch.float16)):
        x = torch.randn(R, 128).to(tdt)
        sf = torch.rand(R // 4, 4) + 0.5
        y = torch.empty(R, 128)
        kern = run(division_broadcast(dtype), [x, sf, y], arch)
        ref = x.float() * sf.repeat_interleave(4, 0).repeat_interleave(32, 1)
        torch.testing.assert_close(y, ref, rtol=1e-6, atol=1e-6)
    filecheck(kern.kernel_source, """
        CHECK: Cast({{.*}}, RoundMode::CAST_FLOOR,
        CHECK: Gather({{.*}}, sf, {{.*}}.ReinterpretCast<uint32_t>(),
    """)


def clamped_and_reversed():
    @T.prim_func
    def k(X: T.Tensor((R, 12), "float32"), W: T.Tensor((3,), "float32"), V: T.Tensor((64,), "float16"),
          Y: T.Tensor((R, 12), "float32"), U: T.Tensor((64,), "float16")):
        with T.Kernel(1) as _:
            x = T.alloc_fragment((R, 12), "float32")
            w = T.alloc_fragment((3,), "float32")
            v = T.alloc_fragment((64,), "float16")
            u = T.alloc_fragment((64,), "float16")
            T.copy(X[0, 0], x)
            T.copy(W[0], w)
            T.copy(V[0], v)
            for i, j in T.Parallel(R, 12):
                x[i, j] = x[i, j] * w[T.min(2, j // 4)]
            for i in T.Parallel(64):
                u[i] = v[63 - i] + v[i % 8]
            T.copy(x, Y[0, 0])
            T.copy(u, U[0])

    return k


def test_min_of_quotient_and_reversed(arch):
    x, w = torch.randn(R, 12), torch.randn(3)
    v = torch.randn(64).half()
    y, u = torch.empty(R, 12), torch.empty(64, dtype=torch.float16)
    run(clamped_and_reversed(), [x, w, v, y, u], arch)
    torch.testing.assert_close(y, x * w.repeat_interleave(4), rtol=0, atol=0)
    torch.testing.assert_close(u, v.flip(0) + v[torch.arange(64) % 8], rtol=0, atol=0)
