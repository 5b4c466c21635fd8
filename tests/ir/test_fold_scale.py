"""fold_scale (passes/fold_scale.py): a per-tensor scale of a gemm's result becomes the Fixpipe's
scalar quant; everything the pass must leave alone stays a vector epilogue. Small builder
programs, milliseconds each; the emulator runs are in tests/lowp/test_fold_scale_kernels.py."""

import pytest
from ascend_backend.passes.fold_scale import verify_fold_scale
from filecheck import filecheck
from test_passes import after, upto
from tvm import tirx

from ascend_backend.errors import InternalCompilerError
from ascend_backend.ir import Core, Region, TileCopy, walk
from ascend_backend.ir.builder import ProgramBuilder


def scaled_gemm(arch="dav-3510", acc_dt="float32", in_dt="float16", out_dt="bfloat16", scale="var", per_row=False,
                reuse_out=False, cast_acc=False):
    """C = (A x B) * s: the accumulator scaled into an output tile, then copied to GM."""
    b = ProgramBuilder("scaled", arch)
    A, B = b.tensor("A", (64, 64), in_dt), b.tensor("B", (64, 64), in_dt)
    SA = b.tensor("SA", (64,), "float32")
    C = b.tensor("C", (64, 64), out_dt)
    a, bb = b.tile("a", (64, 64), in_dt), b.tile("b", (64, 64), in_dt)
    c = b.tile("c", (64, 64), acc_dt, fragment=True)
    o = b.tile("o", (64, 64), out_dt, fragment=True)
    s = b.local("s", (1,), "float32")
    rows = b.tile("rows", (64,), "float32", fragment=True)
    with b.launch([1]):
        b.fill(c, 0.0)
        b.copy(A[0, 0], a)
        b.copy(B[0, 0], bb)
        b.gemm(a, bb, c, trans_b=True)  # B stored N x K: 1-byte operands load without a transpose
        b.scalar_store(s, (0,), SA.load(0) * SA.load(1))
        if per_row:
            b.copy(SA[0], rows)

        def body(i, j):
            acc = c.load(i, j)
            acc = tirx.Cast("float32", acc) if cast_acc else acc
            k = rows.load(i) if per_row else (s.load(0) if scale == "var" else tirx.FloatImm("float32", 0.5))
            return [(o, (i, j), tirx.Cast(out_dt, acc * k))]

        b.parallel((64, 64), body)
        b.copy(o, C[0, 0])
        if reuse_out:
            b.copy(o, C[0, 0])
    return b.build()


def test_scalar_scale_folds_into_the_fixpipe_and_the_kernel_needs_no_vector_core():
    text = after(scaled_gemm(), "lower_tile_ops")
    filecheck(text, """
        CHECK: launch 0
        CHECK-SAME: type=AIC_ONLY
        CHECK: [S] s[0] = SA[0] * SA[1]
        CHECK: fixpipe_to_gm_3510 Fixpipe c -> C (bfloat16)
    """)
    p = upto(scaled_gemm(), "fold_scale")
    (k,) = [k for _, _, k in p.kernels()]
    (store,) = [s for s in walk(k.body) if isinstance(s, TileCopy) and s.dst.buffer == "C"]
    assert store.src.buffer == "c" and str(store.scale) == "s[0]" and "o" not in k.buffers
    fix = [s for _, _, kk in upto(scaled_gemm(), "lower_tile_ops").kernels() for s in walk(kk.body)
           if type(s).__name__ == "FixpipeToGmArch3510"]
    assert [f.quant.name for f in fix] == ["F32_TO_BF16_SCALED"] and str(fix[0].scale) == "s[0]"


@pytest.mark.parametrize("arch,acc,inp,out,mode", [
    ("dav-3510", "float32", "float16", "float16", "F32_TO_F16_SCALED"),
    ("dav-3510", "int32", "int8", "bfloat16", "S32_TO_BF16"),
    ("dav-c220", "int32", "int8", "float16", "S32_TO_F16"),
])
def test_each_scaled_mode_the_arch_has(arch, acc, inp, out, mode):
    p = upto(scaled_gemm(arch, acc, inp, out, cast_acc=acc == "int32"), "lower_tile_ops")
    fix = [s for _, _, k in p.kernels() for s in walk(k.body) if type(s).__name__.startswith("FixpipeToGm")]
    assert [f.quant.name for f in fix] == [mode]
    assert [core for _, core, _ in p.kernels()] == [Core.AIC]


def test_a_constant_scale_folds_too():
    p = upto(scaled_gemm(scale="const"), "fold_scale")
    (store,) = [s for _, _, k in p.kernels() for s in walk(k.body) if isinstance(s, TileCopy) and s.scale is not None]
    assert float(store.scale.value) == 0.5


@pytest.mark.parametrize("why,kwargs", [
    ("float32 -> bfloat16 has no scaled Fixpipe mode on dav-c220", {"arch": "dav-c220"}),
    ("a per-row scale is a tile, not a scalar", {"per_row": True}),
    ("the scaled tile is read again", {"reuse_out": True}),
])
def test_left_as_a_vector_epilogue(why, kwargs):
    text = after(scaled_gemm(**kwargs), "partition")
    filecheck(text, """
        CHECK: type=MIX_AIC_1_2
        CHECK: == AIV ==
        CHECK: parallel
        CHECK: copy o[0, 0]<64x64> -> C[0, 0]<64x64>
    """)
    assert "scale=" not in text, why


def test_the_verifier_refuses_a_scaled_copy_of_a_vector_tile():
    p = upto(scaled_gemm(), "fold_scale")
    (k,) = [k for _, _, k in p.kernels()]
    body = [TileCopy(src=Region("rows", (tirx.IntImm("int32", 0),), (64,)), dst=Region("SA", (0,), (64,)),
                     scale=tirx.FloatImm("float32", 2.0)) if isinstance(s, TileCopy) and s.scale is not None else s
            for s in k.body]
    bad = p.replace(launches=[lc.replace(kernels={None: k.replace(body=body)}) for lc in p.launches])
    with pytest.raises(InternalCompilerError, match="fold_scale"):
        verify_fold_scale(bad)
