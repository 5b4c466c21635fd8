"""Vector ops on the element types each arch's vector unit takes (Arch.vector_op_dtypes, from the
ops' API pages). A fill of a 1-byte tile (T.clear, T.fill, a scalar stored into every element) is
one Duplicate of the tile's 16-bit words on dav-c220, whose Duplicate takes no 1-byte type (the
value's byte in both halves of each word); the broadcast-Mul-then-Add pair is fused into a
FusedMulAdd only for the types FusedMulAdd takes. Run on the emulator against torch in strict
mode (its static_assert tables reject any other type, as bisheng does), with the generated code
FileChecked."""

import tilelang.language as T
import torch
from filecheck import filecheck
from strict_run import run

import ascend_backend


def byte_fills():
    @T.prim_func
    def fills(A: T.Tensor((32, 64), "float32"), n: T.int32, Mz: T.Tensor((32, 64), "uint8"),
              Mf: T.Tensor((32, 64), "uint8"), Ms: T.Tensor((32, 64), "int8"), Mn: T.Tensor((32, 64), "uint8"),
              Bl: T.Tensor((32, 64), "bool"), V: T.Tensor((40,), "uint8"), Y: T.Tensor((32, 64), "float32")):
        with T.Kernel(1):
            x = T.alloc_fragment((32, 64), "float32")
            y = T.alloc_fragment((32, 64), "float32")
            mz = T.alloc_fragment((32, 64), "uint8")
            mf = T.alloc_fragment((32, 64), "uint8")
            ms = T.alloc_fragment((32, 64), "int8")
            mn = T.alloc_fragment((32, 64), "uint8")
            bl = T.alloc_fragment((32, 64), "bool")
            v = T.alloc_fragment((40,), "uint8")  # 1-D, 40 of 64 bytes (its padded row) used
            T.copy(A[0, 0], x)
            T.clear(mz)
            T.fill(mf, 200)
            T.fill(bl, True)
            T.clear(v)
            for i, j in T.Parallel(32, 64):
                ms[i, j] = -3  # a constant store
                mn[i, j] = n  # a runtime scalar (its low byte)
            for i, j in T.Parallel(32, 64):
                y[i, j] = T.if_then_else(mf[i, j] > 100 and bl[i, j] and mz[i, j] == 0, x[i, j], -x[i, j])
                y[i, j] = T.if_then_else(ms[i, j] < 0 and mn[i, j] == 5, y[i, j], 0.0)
            T.copy(mz, Mz[0, 0])
            T.copy(mf, Mf[0, 0])
            T.copy(ms, Ms[0, 0])
            T.copy(mn, Mn[0, 0])
            T.copy(bl, Bl[0, 0])
            T.copy(v, V[0])
            T.copy(y, Y[0, 0])

    return fills


def test_byte_tile_fills(arch):
    """T.clear / T.fill / constant and runtime-scalar stores into uint8, int8 and bool tiles (2-D,
    and 1-D with a padded row), then a masked select reading them. The outputs start as 0x55
    bytes, so every byte the fill must write is checked."""
    a = torch.randn(32, 64)
    mz, mf, mn = (torch.full((32, 64), 0x55, dtype=torch.uint8) for _ in range(3))
    ms = torch.full((32, 64), 0x55, dtype=torch.int8)
    bl = torch.zeros(32, 64, dtype=torch.bool)
    v = torch.full((40,), 0x55, dtype=torch.uint8)
    y = torch.zeros(32, 64)
    run(byte_fills(), [a, 256 + 5, mz, mf, ms, mn, bl, v, y], arch)
    assert torch.equal(mz, torch.zeros_like(mz))
    assert torch.equal(mf, torch.full_like(mf, 200))
    assert torch.equal(ms, torch.full_like(ms, -3))
    assert torch.equal(mn, torch.full_like(mn, 5))
    assert torch.equal(bl, torch.ones_like(bl))
    assert torch.equal(v, torch.zeros_like(v))
    torch.testing.assert_close(y, a)


def test_byte_fill_is_a_duplicate_of_16_bit_words_on_dav_c220():
    """dav-c220: each fill is one Duplicate over the tile's bytes seen as uint16 (half as many
    elements), the byte in both halves (200 -> 0xC8C8 = 51400, int8 -3 -> 0xFDFD = 65021, true ->
    0x0101); a runtime value's low byte is doubled by the scalar unit. dav-3510's Duplicate takes the
    1-byte types (count form): it fills them directly."""
    c220 = ascend_backend.lower(byte_fills(), target="ascendc:dav-c220").source
    filecheck(c220, """
        CHECK: Duplicate(mz.ReinterpretCast<uint16_t>(), (uint16_t)(0), 1024);
        CHECK: Duplicate(mf.ReinterpretCast<uint16_t>(), (uint16_t)(51400), 1024);
        CHECK: Duplicate(bl.ReinterpretCast<uint16_t>(), (uint16_t)(257), 1024);
        CHECK: Duplicate(v.ReinterpretCast<uint16_t>(), (uint16_t)(0), 32);
        CHECK: Duplicate(ms.ReinterpretCast<uint16_t>(), (uint16_t)(65021), 1024);
        CHECK: Duplicate(mn.ReinterpretCast<uint16_t>(), (uint16_t)(
        CHECK-SAME: (n & 255) * 257
        CHECK-SAME: , 1024);
        CHECK: 'DataCopy mz -> Mz' (MTE3) after 'Duplicate mz = 0x0000 (as uint16 words)' (V)
    """)
    for t in ("mz", "mf", "ms", "mn", "bl", "v"):
        assert f"Duplicate({t}, " not in c220
    a3510 = ascend_backend.lower(byte_fills(), target="ascendc:dav-3510").source
    filecheck(a3510, """
        CHECK: Duplicate(mz, 0, 2048);
        CHECK: Duplicate(mf, 200, 2048);
        CHECK: Duplicate(bl, (bool)(1.0f), 2048);
        CHECK: Duplicate(v, 0, 64);
    """)
    assert "ReinterpretCast<uint16_t>" not in a3510


def rescale(dt):
    @T.prim_func
    def k(A: T.Tensor((32, 64), dt), P: T.Tensor((32, 64), dt), R: T.Tensor((32,), dt), C: T.Tensor((32, 64), dt)):
        with T.Kernel(1):
            x = T.alloc_fragment((32, 64), dt)
            p = T.alloc_fragment((32, 64), dt)
            r = T.alloc_fragment((32,), dt)
            T.copy(A[0, 0], x)
            T.copy(P[0, 0], p)
            T.copy(R[0], r)
            for i, j in T.Parallel(32, 64):
                x[i, j] = x[i, j] * r[i]
            for i, j in T.Parallel(32, 64):
                x[i, j] = x[i, j] + p[i, j]
            T.copy(x, C[0, 0])

    return k


def test_integer_rescale_then_add_is_not_a_fused_multiply_add(arch):
    """`x = x * r[i]` then `x = x + p` on int32 and int16 tiles: FusedMulAdd takes half and float
    (and bfloat16 on dav-3510) only, so the broadcast Mul and the Add stay two instructions; a
    float32 tile keeps the fused one."""
    g = torch.Generator().manual_seed(3)
    for dt, tdt in (("int32", torch.int32), ("int16", torch.int16)):
        a, p = (torch.randint(-50, 50, (32, 64), dtype=tdt, generator=g) for _ in range(2))
        r = torch.randint(-9, 9, (32,), dtype=tdt, generator=g)
        c = torch.zeros(32, 64, dtype=tdt)
        k = run(rescale(dt), [a, p, r, c], arch)
        assert torch.equal(c, a * r[:, None] + p)
        filecheck(k.source, """
            CHECK: Mul(x[c_ *
            CHECK: Add(x, x, p, 2048);
        """)
        assert "FusedMulAdd" not in k.source
    assert "FusedMulAdd(x[c_ *" in ascend_backend.lower(rescale("float32"), target={"kind": "ascendc",
                                                                                   "arch": arch}).source
