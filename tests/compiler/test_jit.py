"""``ascend_backend.jit``: tilelang.jit's three styles on the emulator, its cache, its errors."""

import importlib
import inspect

import gemm as gemm_example
import pytest
import tilelang
import tilelang.language as T
import torch
from elementwise import add_2d

import ascend_backend
from ascend_backend import AscendKernel, TargetError, UnsupportedError

jit_module = importlib.import_module("ascend_backend.jit")  # ascend_backend.jit is the function


def rand(*shape, dtype=torch.float16):
    return torch.randn(*shape, dtype=dtype)


@pytest.fixture
def compiles(monkeypatch):
    """The PrimFuncs ascend_backend.jit compiles, in order."""
    seen = []
    real = jit_module.compile

    def counting(func, *args, **kwargs):
        seen.append(func)
        return real(func, *args, **kwargs)

    monkeypatch.setattr(jit_module, "compile", counting)
    return seen


# -- tilelang's modern (eager) style: the decorated function is the kernel body


def make_eager_add():
    @ascend_backend.jit(runtime="emulator")
    def add(A, B, block_M: int = 32, block_N: int = 128):
        M, N = T.const("M, N")
        A: T.Tensor((M, N), T.float16)
        B: T.Tensor((M, N), T.float16)
        C = T.empty((M, N), T.float16)
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a = T.alloc_shared((block_M, block_N), T.float16)
            b = T.alloc_shared((block_M, block_N), T.float16)
            T.copy(A[by * block_M, bx * block_N], a)
            T.copy(B[by * block_M, bx * block_N], b)
            for i, j in T.Parallel(block_M, block_N):
                a[i, j] = a[i, j] + b[i, j]
            T.copy(a, C[by * block_M, bx * block_N])
        return C

    return add


def test_eager_add_returns_output(compiles):
    add = make_eager_add()
    a, b = rand(64, 256), rand(64, 256)
    c = add(a, b)
    assert isinstance(c, torch.Tensor) and c.shape == (64, 256) and c.dtype == torch.float16
    torch.testing.assert_close(c, a + b)
    # M, N came from the tensors: the compiled kernel has the tensors' shapes, C is its output
    (prim,) = compiles
    assert [list(buf.shape) for buf in prim.buffer_map.values()] == [[64, 256]] * 3
    kernel = add.compile(a, b)
    assert kernel.out_idx == [2] and len(kernel.params) == 3


def test_eager_add_new_shapes_and_kwargs(compiles):
    add = make_eager_add()
    a, b = rand(32, 128), rand(32, 128)
    torch.testing.assert_close(add(a, b), a + b)
    a, b = rand(32, 128), rand(32, 128)  # new tensors, same shapes: the cached kernel
    torch.testing.assert_close(add(a, b), a + b)
    assert len(compiles) == 1
    torch.testing.assert_close(add(a, b, block_M=16), a + b)  # a compile-time argument: a new kernel
    x, y = rand(96, 384), rand(96, 384)
    torch.testing.assert_close(add(x, y), x + y)
    assert len(compiles) == 3 and len(add.cache) == 3
    assert [list(p.buffer_map[p.params[0]].shape) for p in compiles] == [[32, 128], [32, 128], [96, 384]]


def test_eager_gemm_with_t_const():
    @ascend_backend.jit(runtime="emulator")
    def matmul(A, B, block_M: int = 64, block_N: int = 64, block_K: int = 64):
        M, N, K = T.const("M, N, K")
        A: T.Tensor((M, K), T.float16)
        B: T.Tensor((K, N), T.float16)
        C = T.empty((M, N), T.float16)
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_K, block_N), T.float16)
            C_l = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * block_M, bx * block_N])
        return C

    a, b = rand(64, 128), rand(128, 128)
    c = matmul(a, b)
    assert c.shape == (64, 128)
    torch.testing.assert_close(c, gemm_example.reference(a, b), atol=1e-2, rtol=1e-2)


def test_eager_two_outputs_and_in_place():
    @ascend_backend.jit(runtime="emulator")
    def copy_and_double(A, block: int = 128):
        N = T.const("N")
        A: T.Tensor((N,), T.float16)
        X = T.empty((N,), T.float16)
        Y = T.empty((N,), T.float16)
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            a = T.alloc_shared((block,), T.float16)
            T.copy(A[bx * block], a)
            T.copy(a, X[bx * block])
            for i in T.Parallel(block):
                a[i] = a[i] + a[i]
            T.copy(a, Y[bx * block])
        return X, Y

    @ascend_backend.jit(runtime="emulator")
    def copy_into(A, C, block: int = 128):
        N = T.const("N")
        A: T.Tensor((N,), T.float16)
        C: T.Tensor((N,), T.float16)
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            a = T.alloc_shared((block,), T.float16)
            T.copy(A[bx * block], a)
            T.copy(a, C[bx * block])

    a = rand(256)
    x, y = copy_and_double(a)  # several T.empty outputs: a list, in declaration order
    torch.testing.assert_close(x, a)
    torch.testing.assert_close(y, a + a)
    c = torch.zeros(256, dtype=torch.float16)
    assert copy_into(a, c) is None  # no T.empty: the output is a parameter, written in place
    torch.testing.assert_close(c, a)


def test_eager_rejects_out_idx_like_tilelang():
    @ascend_backend.jit(out_idx=[-1], runtime="emulator")
    def copy(A):
        N = T.const("N")
        A: T.Tensor((N,), T.float16)
        B = T.empty((N,), T.float16)
        with T.Kernel(1, threads=128):
            T.copy(A, B)
        return B

    with pytest.raises(ValueError, match="out_idx is only supported in lazy mode"):
        copy(rand(128))


# -- factory style: the decorated function returns a PrimFunc


def test_gemm_factory_out_idx(compiles):
    @ascend_backend.jit(out_idx=[-1], runtime="emulator")
    def matmul(M, N, K, block_M=64, block_N=64, block_K=64):
        return gemm_example.matmul(M, N, K, block_M, block_N, block_K)

    kernel = matmul(64, 128, 128)
    assert isinstance(kernel, AscendKernel) and kernel.out_idx == [2]
    a, b = rand(64, 128), rand(128, 128)
    want = gemm_example.reference(a, b)
    torch.testing.assert_close(kernel(a, b), want, atol=1e-2, rtol=1e-2)
    c = torch.zeros(64, 128, dtype=torch.float16)
    assert kernel(a, b, c) is None  # with its output given, the kernel writes it in place
    torch.testing.assert_close(c, want, atol=1e-2, rtol=1e-2)
    # the same arguments, positional or by keyword, with or without their defaults: no recompile
    assert matmul(64, 128, 128) is kernel
    assert matmul(M=64, N=128, K=128, block_K=64) is kernel
    assert len(compiles) == 1
    assert matmul(64, 128, 128, block_K=32) is not kernel
    assert len(compiles) == 2 and len(matmul.cache) == 2


def test_factory_int_and_negative_out_idx():
    a, b = rand(32, 256), rand(32, 256)
    for out_idx in (-1, 2, [2]):
        factory = ascend_backend.jit(out_idx=out_idx, runtime="emulator")(add_2d)
        torch.testing.assert_close(factory(32, 256)(a, b), a + b)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        ascend_backend.jit(runtime="emulator")(add_2d)(32, 256)(a, b)  # no out_idx: all three needed


def test_out_idx_checked():
    with pytest.raises(ValueError, match="out of range"):
        ascend_backend.jit(out_idx=3, runtime="emulator")(add_2d)(32, 256)
    with pytest.raises(ValueError, match="out of range"):
        ascend_backend.jit(out_idx=[-4], runtime="emulator")(add_2d)(32, 256)
    with pytest.raises(ValueError, match="twice"):
        ascend_backend.jit(out_idx=[2, -1], runtime="emulator")(add_2d)(32, 256)
    # T.empty outputs and an explicit out_idx conflict, as in tilelang.compile
    prim = make_eager_add().get_tir(M=32, N=128)
    assert jit_module.resolve_out_idx(prim, None) == [-1]
    with pytest.raises(ValueError, match="Out index conflict"):
        jit_module.resolve_out_idx(prim, [2])


def test_factory_without_source_falls_back():
    namespace = {}
    exec("def factory(M=32):\n    return add_2d(M, 256)\n", {"add_2d": add_2d}, namespace)  # no source: tilelang cannot parse it
    factory = ascend_backend.jit(out_idx=-1, runtime="emulator")(namespace["factory"])
    assert factory.jit_impl is None
    a, b = rand(32, 256), rand(32, 256)
    torch.testing.assert_close(factory()(a, b), a + b)
    assert factory() is factory(M=32) and len(factory.cache) == 1


# -- decorating a PrimFunc


def test_decorate_primfunc():
    kernel = ascend_backend.jit(add_2d(64, 256), out_idx=-1, runtime="emulator")
    assert isinstance(kernel, AscendKernel)
    a, b = rand(64, 256), rand(64, 256)
    torch.testing.assert_close(kernel(a, b), a + b)

    in_place = ascend_backend.jit(runtime="emulator")(add_2d(64, 256))
    c = torch.zeros(64, 256, dtype=torch.float16)
    assert in_place(a, b, c) is None
    torch.testing.assert_close(c, a + b)


# -- errors


def test_factory_returning_something_else(compiles):
    @ascend_backend.jit
    def forgot_return(M=64):
        add_2d(M, 256)

    @ascend_backend.jit
    def returns_number(M=64):
        return M

    @ascend_backend.jit
    def returns_tuple(M=64):
        @T.prim_func
        def k(A: T.Tensor((M, 128), "float16"), B: T.Tensor((M, 128), "float16")):
            with T.Kernel(1, threads=128):
                T.copy(A, B)

        return k, M

    for factory, got in ((forgot_return, "did not return a PrimFunc"), (returns_number, "did not return a PrimFunc"),
                         (returns_tuple, "returned tuple, not a PrimFunc")):
        with pytest.raises(UnsupportedError, match=got) as info:
            factory()
        assert f"'{factory.__name__}'" in str(info.value) and "@T.prim_func" in (info.value.hint or "")
    assert compiles == []


def test_non_ascendc_target_rejected_at_decoration():
    with pytest.raises(TargetError):
        ascend_backend.jit(target="cuda")


def test_debug_root_path(tmp_path):
    factory = ascend_backend.jit(out_idx=-1, runtime="emulator", debug_root_path=str(tmp_path))(add_2d)
    factory(32, 256)
    assert "__global__ __aicore__" in (tmp_path / "tilelang_jit_kernel_add_2d.cpp").read_text()
    assert "T.prim_func" in (tmp_path / "tilelang_jit_program_add_2d.py").read_text()


def test_debug_root_path_names_stay_in_the_folder(tmp_path):
    """A global_symbol with '/' or '..' names files inside debug_root_path, made like the C names."""
    folder = tmp_path / "dbg"
    prim = add_2d(32, 256).with_attr("global_symbol", "../../evil/x")
    ascend_backend.jit(prim, out_idx=-1, runtime="emulator", debug_root_path=str(folder))
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["dbg/tilelang_jit_kernel_______evil_x.cpp", "dbg/tilelang_jit_program_______evil_x.py"], written


# -- the drop-in contract


def test_signature_is_tilelang_jits_plus_runtime_and_strict():
    ours = inspect.signature(ascend_backend.jit).parameters
    theirs = inspect.signature(tilelang.jit).parameters
    for name, param in theirs.items():
        assert name in ours, name
        assert ours[name].kind == param.kind, name
    assert set(ours) - set(theirs) == {"runtime", "strict"}


def test_tilelang_jit_has_no_ascendc_execution_backend():
    """Why ascend_backend.jit exists (docs/jit.md): tilelang's kernel cache has a closed table of
    execution backends. If "ascendc" ever appears in it, revisit a hook."""
    from tilelang import cache

    assert "ascendc" not in cache._dispatch_map and "ascendc" not in cache._ascend_dispatch_map

    @tilelang.jit(out_idx=[-1], target="ascendc")
    def factory(M=32):
        return add_2d(M, 256)

    # Our one-line error naming ascend_backend.compile, not tilelang's "Cannot find support for
    # execution backend" (target._execution_supported).
    with pytest.raises(ascend_backend.UnsupportedError, match="use ascend_backend.compile") as info:
        factory()
    assert "\n" not in str(info.value)


def test_tilelang_compile_names_ascend_backend_compile():
    with pytest.raises(ascend_backend.UnsupportedError, match="use ascend_backend.compile") as info:
        tilelang.compile(add_2d(32, 256), target="ascendc")  # marker:tilelang.compile
    assert info.value.loc is not None and info.value.loc.file == __file__
    assert "marker:tilelang.compile" in open(__file__).read().splitlines()[info.value.loc.line - 1]
