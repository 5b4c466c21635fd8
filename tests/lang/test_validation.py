"""Bad inputs caught before anything runs: copy windows outside their tensor, grids and tile sizes
outside the documented limits, offsets that need 64 bits, scalar arguments outside their dtype,
out_idx naming no output. Each error names the DSL line (compile time) or the argument (call time)."""

import re

import pytest
import tilelang.language as T
import torch

import ascend_backend
from ascend_backend.errors import UnsupportedError


def lower(func, arch="dav-3510"):
    return ascend_backend.lower(func, target={"kind": "ascendc", "arch": arch})


def blocks_of(n=256, blk=64, grid=None, guard=False, shift=0):
    @T.prim_func
    def blocks(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(grid if grid is not None else T.ceildiv(n, blk)) as bx:
            x = T.alloc_fragment((blk,), "float32")
            if guard:
                if bx * blk < n:
                    T.copy(A[bx * blk], x)
                    T.copy(x, B[bx * blk])
            else:
                T.copy(A[bx * blk + shift], x)
                T.copy(x, B[bx * blk])

    return blocks


def test_a_window_past_the_end_is_an_error_at_its_line():
    with pytest.raises(UnsupportedError) as e:
        lower(blocks_of(grid=5))
    msg = str(e.value)
    assert re.search(r"test_validation.py:\d+: unsupported: the T.copy window A\[bx \* 64 : bx \* 64 \+ 64\] can lie "
                     r"outside 'A': dimension 0 has 256 elements and the window can start at 256", msg)
    assert "hint: make the grid or loop cover the tensor exactly (T.ceildiv(256, 64) steps of 64)" in msg


def test_a_window_before_the_start_is_an_error():
    with pytest.raises(UnsupportedError, match=r"A\[bx \* 64 - 16 : bx \* 64 \+ 48\] can start before the "
                                               r"beginning of 'A': in dimension 0 its start can be -16"):
        lower(blocks_of(shift=-16))


def test_a_window_across_the_end_takes_the_tail(arch):
    """The last block's window crosses the end of A (100 = 64 + 36): the copy takes 36 elements."""
    k = ascend_backend.compile(blocks_of(n=100), target={"kind": "ascendc", "arch": arch}, runtime="emulator")
    a, b = torch.randn(100), torch.zeros(100)
    k(a, b)
    torch.testing.assert_close(b, a)
    assert "min_i(64, 100 - ((bx * 64)))" in k.kernel_source


def test_an_if_keeps_a_window_inside(arch):
    """Five blocks over four tiles: the extra block's copies sit under `if bx * 64 < 256`."""
    k = ascend_backend.compile(blocks_of(grid=5, guard=True), target={"kind": "ascendc", "arch": arch},
                               runtime="emulator")
    a, b = torch.randn(256), torch.zeros(256)
    k(a, b)
    assert all(r.ok for r in k.reports)
    torch.testing.assert_close(b, a)


@pytest.mark.parametrize("grid, what", [(0, "0"), (-1, "-1"), (70000, "70000")])
def test_grid_extents_outside_1_to_65535_are_errors(grid, what):
    with pytest.raises(UnsupportedError, match=rf"test_validation.py:\d+: unsupported: T.Kernel grid extent {what} "
                                               r"\('bx'\): a launch has 1 to 65535 blocks"):
        lower(blocks_of(n=64 * 70000, grid=grid))


def test_a_negative_tile_size_is_named_at_the_tile():
    with pytest.raises(UnsupportedError, match=r"test_validation.py:\d+: unsupported: tile 'x' has shape \[-5\]: "
                                               r"dimension 0 is -5"):
        lower(blocks_of(blk=-5))


def big_copy(rows=65536, cols=32800, bM=16):
    @T.prim_func
    def big(A: T.Tensor((rows, cols), "float16"), B: T.Tensor((rows, cols), "float16")):
        with T.Kernel(rows // bM) as bx:
            for k in T.serial(cols // 32800 if cols >= 32800 else 1):
                x = T.alloc_fragment((bM, 32800 if cols >= 32800 else cols), "float16")
                T.copy(A[bx * bM, k * 32800], x)
                T.copy(x, B[bx * bM, k * 32800])

    return big


def test_offsets_past_2_31_are_computed_in_64_bits():
    """65536 x 32800 fp16: (bx * 16) * 32800 reaches 2**31 at block 4094; the offset is int64."""
    src = lower(big_copy(bM=2)).source
    assert "A_gm[(int64_t)((bx * 2)) * 32800" in src
    assert "SetGlobalBuffer((__gm__ half*)A, 2149580800)" in src
    small = lower(big_copy(rows=256, cols=512, bM=16)).source  # 131072 elements: int32 is enough
    assert "int64_t" not in small


def test_a_dimension_of_2_31_elements_is_refused():
    @T.prim_func
    def huge(A: T.Tensor((2**31,), "int8")):
        with T.Kernel(1):
            x = T.alloc_fragment((32,), "int8")
            T.copy(A[0], x)

    with pytest.raises(UnsupportedError, match=r"tensor 'A' has shape \[2147483648\]: dimension 0 has 2\*\*31 or "
                                               r"more elements"):
        lower(huge)


def scalar_kernel():
    @T.prim_func
    def shift(A: T.Tensor((64,), "float32"), n: T.int32, s: T.float16, B: T.Tensor((64,), "float32")):
        with T.Kernel(1):
            x = T.alloc_fragment((64,), "float32")
            T.copy(A[0], x)
            for i in T.Parallel(64):
                x[i] = x[i] + n + s
            T.copy(x, B[0])

    return shift


def test_scalar_arguments_are_checked_against_their_dtype():
    k = ascend_backend.compile(scalar_kernel(), target="ascendc", runtime="emulator")
    a, b = torch.zeros(64), torch.zeros(64)
    with pytest.raises(ValueError, match=r"argument 'n' of kernel 'shift' is int32, whose range is \[-2147483648, "
                                         r"2147483647\]; got 4294967299, which would wrap around"):
        k(a, 2**32 + 3, 1.0, b)
    with pytest.raises(ValueError, match="got -2147483649"):
        k(a, -2**31 - 1, 1.0, b)
    with pytest.raises(TypeError, match=r"argument 'n' of kernel 'shift' is a scalar of dtype int32; got float 2.5"):
        k(a, 2.5, 1.0, b)
    with pytest.raises(ValueError, match=r"argument 's' of kernel 'shift' is float16, whose largest finite value is "
                                         r"65504; got 1e\+06, which would become infinite"):
        k(a, 1, 1e6, b)
    k(a, 2**31 - 1, 1.0, b)  # the extremes are fine
    torch.testing.assert_close(b, torch.full((64,), float(2**31 - 1) + 1.0))


def test_out_idx_must_name_an_output():
    f = scalar_kernel()
    with pytest.raises(ValueError, match=r"out_idx 5 is out of range for kernel 'shift', which has 4 parameters "
                                         r"\(0: A, 1: n, 2: s, 3: B\): use 0..3 \(or -4..-1 from the end\)"):
        ascend_backend.compile(f, target="ascendc", runtime="emulator", out_idx=[5])
    with pytest.raises(ValueError, match="out_idx 1 names 'n' of kernel 'shift', a scalar"):
        ascend_backend.compile(f, target="ascendc", runtime="emulator", out_idx=[1])
    with pytest.raises(ValueError, match=r"out_idx names parameter 3 \('B'\) twice"):
        ascend_backend.compile(f, target="ascendc", runtime="emulator", out_idx=[3, -1])
    k = ascend_backend.compile(f, target="ascendc", runtime="emulator", out_idx=-1)
    assert k.out_idx == [3]


def test_the_emulators_block_cap_is_named():
    k = ascend_backend.compile(blocks_of(n=16 * 5000, blk=16), target="ascendc", runtime="emulator")
    assert k.block_dim == 5000  # fine for the hardware (up to 65535)
    with pytest.raises(ValueError, match="would run 5000 blocks; the emulator runs at most 4096 per launch"):
        k(torch.zeros(16 * 5000), torch.zeros(16 * 5000))
