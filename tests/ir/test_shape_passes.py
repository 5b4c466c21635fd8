"""Passes on a few lines of IR with symbolic dimensions, runtime grids, GM -> GM copies and
T.alloc_global (ascend_backend.ir.builder): how windows get their valid extents, where a GM -> GM
copy runs, how the workspace is laid out, and the C++ names codegen gives. Milliseconds each."""

from filecheck import filecheck

from ascend_backend.bounds import Fit, Ranges, fit
from ascend_backend.codegen import generate
from ascend_backend.ir import CopyGmToUb, CopyUbToGm, Core, If, TileCopy, walk
from ascend_backend.ir.builder import ProgramBuilder
from ascend_backend.ir.printer import print_program
from ascend_backend.ir.verify import verify_program
from ascend_backend.pipeline import passes


def upto(program, last: str):
    for name, fn in passes():
        program = verify_program(fn(program), name)
        if name == last:
            return program
    raise KeyError(last)


def copies(program, cls):
    return [s for _, _, k in program.kernels() for s in walk(k.body) if isinstance(s, cls)]


def rows_copy(rows, grid, arch="dav-3510", symbolic=False):
    b = ProgramBuilder("rows", arch)
    n = b.dim("N") if symbolic else rows
    A, C = b.tensor("A", (n, 64), "float16"), b.tensor("C", (n, 64), "float16")
    x = b.tile("x", (32, 64), "float16")
    with b.launch([grid if not symbolic else (n + 31) // 32]) as (bx,):
        b.copy(A[bx * 32, 0], x)
        b.copy(x, C[bx * 32, 0])
    return b.build()


def test_a_window_inside_its_tensor_has_no_tail():
    (load,) = copies(upto(rows_copy(128, 4), "lower_tile_ops"), CopyGmToUb)
    assert not load.window.valid_rows.tail and not load.window.wide


def test_a_window_across_a_static_end_has_a_tail():
    (load,) = copies(upto(rows_copy(100, 4), "lower_tile_ops"), CopyGmToUb)
    v = load.window.valid_rows
    assert v.tail and v.size == 100 and not v.clamp
    assert "min_i(32, 100 - ((bx * 32)))" in generate(upto(rows_copy(100, 4), "plan_memory"))


def test_a_window_at_a_symbolic_end_is_clamped_in_64_bits():
    p = upto(rows_copy(0, 0, symbolic=True), "plan_memory")
    (load,) = copies(p, CopyGmToUb)
    assert load.window.valid_rows.tail and load.window.wide
    src = generate(p)
    assert "void rows(GM_ADDR A, GM_ADDR C, int32_t N)" in src
    assert "DataCopy(x, A_gm[(int64_t)((bx * 32)) * 64], tail_i(32, N, (bx * 32)) * 64);" in src
    assert "block_dim = (N + 31) // 32 (computed at each call)" in src


def test_fit_takes_ifs_and_loop_ranges_into_account():
    b = ProgramBuilder()
    with b.launch([5]) as (bx,):
        pass
    r = Ranges().with_var(bx, 0, 5)
    assert fit(r, bx * 64, 64, 256).fit is Fit.OUTSIDE
    assert fit(r.with_cond(bx * 64 < 256), bx * 64, 64, 256).fit is Fit.INSIDE
    assert fit(r, bx * 64, 64, 300).fit is Fit.TAIL
    assert fit(r, bx * 64 - 1, 64, 512).fit is Fit.NEGATIVE


def gm_to_gm(arch="dav-c220", mixed=False):
    b = ProgramBuilder("g2g", arch)
    A, B = b.tensor("A", (64, 64), "float32"), b.tensor("B", (64, 64), "float16")
    a, w, c = b.tile("a", (32, 64), "float16"), b.tile("w", (64, 64), "float16"), b.tile("c", (32, 64), "float32",
                                                                                          fragment=True)
    C = b.tensor("C", (64, 64), "float32")
    with b.launch([2]) as (bx,):
        if mixed:
            b.copy(B[bx * 32, 0], a)
            b.copy(B[0, 0], w)
            b.gemm(a, w, c, clear=True)
            b.parallel((32, 64), lambda i, j: [(c, (i, j), c.load(i, j) * 2.0)])
            b.copy(c, C[bx * 32, 0])
        b.copy(A[bx * 32, 0], B[bx * 32, 0], extents=(32, 64))
    return b.build()


def test_gm_to_gm_runs_on_the_vector_side_through_ub():
    p = upto(gm_to_gm(mixed=False), "lower_tile_ops")
    assert {c for _, c, _ in p.kernels()} == {Core.AIV}
    filecheck(print_program(p), """
        CHECK: [MTE2] copy_gm_to_ub DataCopy A -> tmp1_float32
        CHECK: [V] vec_cast
        CHECK: [MTE3] copy_ub_to_gm DataCopy tmp2_float16 -> B
    """)


def test_gm_to_gm_in_a_mixed_kernel_is_done_by_one_aiv():
    p = upto(gm_to_gm(mixed=True), "split_rows")
    aiv = p.launches[0].kernels[Core.AIV]
    (guard,) = [s for s in aiv.body if isinstance(s, If)]
    assert str(guard.cond) == "sub_idx == 0"
    assert isinstance(guard.then_body[0], TileCopy) and guard.then_body[0].src.buffer == "A"


def test_alloc_global_comes_first_in_the_workspace():
    b = ProgramBuilder("scratch", "dav-3510")
    A = b.tensor("A", (64,), "float32")
    s = b.global_("s", (4, 64), "float32")
    x = b.tile("x", (64,), "float32")
    with b.launch([4]) as (bx,):
        b.copy(A[0], x)
        b.copy(x, s[bx, 0], extents=(1, 64))
    with b.launch([1]):
        b.copy(s[3, 0], x, extents=(1, 64))
        b.copy(x, A[0])
    p = upto(b.build(), "plan_memory")
    assert p.global_bytes == 1024 and p.workspace_bytes == 1024
    src = generate(p)
    assert src.count("s_gm.SetGlobalBuffer((__gm__ float*)(workspace + 0), 256);") == 2
    assert copies(p, CopyUbToGm)[0].gm == "s"


def test_codegen_names_keep_safe_names_and_suffix_the_rest():
    b = ProgramBuilder("names", "dav-3510")
    A = b.tensor("do", (64,), "float32")
    x = b.tile("pipe", (64,), "float32")
    y = b.tile("tmp1_float32", (64,), "float32")
    with b.launch([1]):
        b.copy(A[0], x)
        b.parallel((64,), lambda i: [(y, (i,), x.load(i) * 2.0)])
        b.copy(y, A[0])
    src = generate(upto(b.build(), "plan_memory"))
    assert "void names(GM_ADDR do_1)" in src
    assert "LocalTensor<float> pipe_1 = ub_buf.GetWithOffset" in src
    assert "LocalTensor<float> tmp1_float32 = " in src  # the user's tile keeps its name
    assert "DataCopy(pipe_1, do_1_gm, 64);" in src
