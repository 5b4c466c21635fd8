"""kernel.get_profiler(): TileLang's Profiler API on AscendKernels (assert_allclose, do_bench, the
tensor supply), the modelled time on the emulator said as such."""

from __future__ import annotations

import warnings

import pytest
import tilelang
import tilelang.language as T
import torch
from elementwise import add_2d

import ascend_backend
from ascend_backend.profiler import MEASURED, MODELLED, BenchTime, Profiler


def _scale_dyn(block=128):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            a = T.alloc_fragment((block,), "float32")
            T.copy(A[bx * block], a)
            for i in T.Parallel(block):
                a[i] = a[i] * 3.0
            T.copy(a, B[bx * block])

    return main


@pytest.fixture(scope="module")
def kernels():
    out_idx = ascend_backend.compile(add_2d(64, 256), runtime="emulator", out_idx=[-1])
    in_place = ascend_backend.compile(add_2d(64, 256), runtime="emulator")
    return out_idx, in_place


def test_tilelang_style_check_and_bench(kernels):
    kernel, _ = kernels
    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    assert isinstance(profiler, Profiler) and profiler.result_idx == [2]
    profiler.assert_allclose(lambda a, b: a + b, rtol=0.01, atol=0.01)
    with pytest.raises(AssertionError, match="mismatched"):
        profiler.assert_allclose(lambda a, b: a - b, rtol=0.01, atol=0.01)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        latency = profiler.do_bench(warmup=500)
    assert isinstance(latency, BenchTime) and latency.kind == MODELLED and latency.cycles > 0
    t = kernel.last_report.timing
    assert float(latency) == pytest.approx(t["time_us"] / 1e3)
    assert latency.cycles == t["total_cycles"]
    assert "modelled" in repr(latency) and "timing model" in latency.what
    assert float(str(latency)) == float(latency)  # prints as a number, as tilelang's float does
    assert any("MODELLED" in str(w.message) and "not measured" in str(w.message) for w in caught)
    ref = profiler.do_bench(lambda a, b: a + b, warmup=1, rep=3)
    assert ref.kind == MEASURED and "wall clock" in ref.what and ref > 0


def test_supply_types_draw_what_tilelang_draws(kernels):
    kernel, _ = kernels
    zero = kernel.get_profiler(tilelang.TensorSupplyType.Zero)._get_inputs()
    assert len(zero) == 2 and all(torch.count_nonzero(t) == 0 for t in zero)
    ints = kernel.get_profiler(tilelang.TensorSupplyType.Integer)._get_inputs()
    assert all(t.dtype == torch.float16 and torch.equal(t, t.round()) and t.abs().max() <= 2 for t in ints)
    auto = kernel.get_profiler()._get_inputs()
    assert all(t.shape == (64, 256) and -1 <= t.min() and t.max() <= 1 and t.unique().numel() > 100 for t in auto)
    with pytest.raises(ValueError, match="TensorSupplyType"):
        kernel.get_profiler("sideways")


def test_in_place_kernel_outputs_are_what_it_writes(kernels):
    _, kernel = kernels
    profiler = kernel.get_profiler()
    assert profiler.result_idx == [2]  # C: the tensor the kernel writes
    profiler.assert_allclose(lambda a, b: a + b)
    out = profiler.run_once()
    assert out.shape == (64, 256)
    with pytest.raises(AssertionError, match="returned 2 tensors"):
        profiler.assert_allclose(lambda a, b: (a + b, a))
    profiler.assert_consistent(repeat=1)


def test_symbolic_shapes_take_dynamic_symbolic_constraints():
    kernel = ascend_backend.compile(_scale_dyn(), runtime="emulator")
    profiler = kernel.get_profiler()
    with pytest.raises(ValueError, match="dynamic_symbolic_constraints"):
        profiler.do_bench()
    latency = profiler.do_bench(dynamic_symbolic_constraints={"N": 512})
    assert latency.kind == MODELLED and kernel.last_block_dims == [4]
    a = torch.randn(300)
    profiler.assert_allclose(lambda x: x * 3, input_tensors=[a])


def test_profiler_on_the_jit_kernel():
    factory = ascend_backend.jit(out_idx=-1, runtime="emulator")(add_2d)
    profiler = factory(32, 256).get_profiler()
    profiler.assert_allclose(lambda a, b: a + b)
    assert profiler.do_bench().kind == MODELLED
