"""Tiles are told apart by identity, not by name: a T.macro that allocates a tile, called twice,
makes two tiles of one DSL name; two launches may each have a tile of one name. Each is its own
buffer in the IR (the expressions inside T.Parallel included), and a launch holds only its own
tiles. On the emulator against torch."""

import tilelang.language as T
import torch

import ascend_backend
from ascend_backend.arch import get_arch
from ascend_backend.frontend import import_primfunc


@T.macro
def double_rows(X, Y, r):
    t = T.alloc_fragment((64, 64), "float32")
    T.copy(X[r * 64, 0], t)
    for i, j in T.Parallel(64, 64):
        t[i, j] = t[i, j] * (r + 2.0)
    T.copy(t, Y[r * 64, 0])


@T.prim_func
def macro_twice(X: T.Tensor((128, 64), "float32"), Y: T.Tensor((128, 64), "float32")):
    with T.Kernel(1) as _:
        double_rows(X, Y, 0)
        double_rows(X, Y, 1)


@T.prim_func
def two_launches_one_name(X: T.Tensor((128, 64), "float32"), S: T.Tensor((128,), "float32"),
                          Y: T.Tensor((128, 64), "float32")):
    with T.Kernel(2) as bx:
        t = T.alloc_fragment((64, 64), "float32")
        s = T.alloc_fragment((64,), "float32")
        T.copy(X[bx * 64, 0], t)
        T.reduce_sum(t, s, dim=1)
        T.copy(s, S[bx * 64])
    with T.Kernel(2) as bx:
        t = T.alloc_fragment((64, 64), "float32")
        s = T.alloc_fragment((64,), "float32")
        T.copy(X[bx * 64, 0], t)
        T.copy(S[bx * 64], s)
        for i, j in T.Parallel(64, 64):
            t[i, j] = t[i, j] / s[i]
        T.copy(t, Y[bx * 64, 0])


def test_a_macro_called_twice_makes_two_tiles():
    program = import_primfunc(macro_twice, get_arch("dav-3510"))
    (kernel,) = program.launches[0].kernels.values()
    assert {"t", "t_1"} <= set(kernel.buffers)
    k = ascend_backend.compile(macro_twice, target={"kind": "ascendc", "arch": "dav-3510"}, runtime="emulator",
                               strict=True)
    x, y = torch.randn(128, 64), torch.zeros(128, 64)
    k(x, y)
    torch.testing.assert_close(y, torch.cat([x[:64] * 2.0, x[64:] * 3.0]))


def test_each_launch_holds_its_own_tiles_of_one_name():
    program = import_primfunc(two_launches_one_name, get_arch("dav-3510"))
    for lc in program.launches:
        (kernel,) = lc.kernels.values()
        tiles = {n for n, b in kernel.buffers.items() if b.kind.name != "PARAM"}
        assert tiles == {"t", "s"}
    k = ascend_backend.compile(two_launches_one_name, target={"kind": "ascendc", "arch": "dav-3510"},
                               runtime="emulator", strict=True)
    x = torch.rand(128, 64) + 0.5
    s, y = torch.zeros(128), torch.zeros(128, 64)
    k(x, s, y)
    torch.testing.assert_close(s, x.sum(1))
    torch.testing.assert_close(y, x / x.sum(1, keepdim=True))
