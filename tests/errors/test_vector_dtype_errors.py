"""Vector arithmetic on a tile dtype the arch's vector unit does not take is an UnsupportedError at
the statement's DSL line (docs/errors.md), naming the operation, the dtype, the arch, the types the
op's API page lists (Arch.vector_op_dtypes) and what to cast to. Before, the compiler emitted the op
and g++ stopped on the emulator's static_assert ("Mul: data type not supported on this arch"), with
no DSL line; bisheng would fail the same way.

One test per refused family, on the arch(es) where it is refused: 8-bit arithmetic, bool
arithmetic, uint16 scalar ops, 8-bit broadcasts; and the forms of those dtypes that stay legal.
"""

from __future__ import annotations

import pytest
import tilelang.language as T
from dsl_lines import marker_line

import ascend_backend
from ascend_backend import UnsupportedError
from ascend_backend.errors import SrcLoc

M, N = 32, 64


def line_of(marker: str) -> int:
    return marker_line(__file__, marker)


def elementwise(dt: str, expr):
    """c[i, j] = expr(a, b, r, i, j) over tiles a, b, c and a per-row vector r of ``dt``."""

    @T.prim_func
    def k(A: T.Tensor((M, N), dt), B: T.Tensor((M, N), dt), R: T.Tensor((M,), dt), C: T.Tensor((M, N), dt)):
        with T.Kernel(1):
            a = T.alloc_fragment((M, N), dt)
            b = T.alloc_fragment((M, N), dt)
            c = T.alloc_fragment((M, N), dt)
            r = T.alloc_fragment((M,), dt)
            T.copy(A[0, 0], a)
            T.copy(B[0, 0], b)
            T.copy(R[0], r)
            for i, j in T.Parallel(M, N):
                c[i, j] = expr(a, b, r, i, j)  # marker:store
            T.copy(c, C[0, 0])

    return k


def refused(arch: str, dt: str, expr) -> UnsupportedError:
    with pytest.raises(UnsupportedError) as info:
        ascend_backend.lower(elementwise(dt, expr), target={"kind": "ascendc", "arch": arch})
    err = info.value
    assert err.loc == SrcLoc(__file__, line_of("store")), str(err)
    assert str(err).startswith(f"{__file__}:{line_of('store')}: unsupported: "), str(err)
    return err


def expect(err: UnsupportedError, *parts: str, hint: str) -> None:
    for p in parts:
        assert p in err.what, err.what
    assert err.hint and hint in err.hint, err.hint


A2 = "int16, float16, int32, float32"  # the A2 line of Add/Sub/Mul/Max/Min and their scalar forms
ADD_950 = "int16, uint16, float16, bfloat16, int32, uint32, float32"
ADDS_950 = "int16, float16, bfloat16, int32, float32"
CAST_8 = 'e.g. T.Cast("int16", x[i, j])'


@pytest.mark.parametrize("arch,dt,expr,op,takes", [
    ("dav-c220", "int8", lambda a, b, r, i, j: a[i, j] + b[i, j], "Add", A2),
    ("dav-c220", "uint8", lambda a, b, r, i, j: T.max(a[i, j], b[i, j]), "Max", A2),
    ("dav-c220", "int8", lambda a, b, r, i, j: a[i, j] - T.int8(1), "Adds", A2),
    ("dav-3510", "int8", lambda a, b, r, i, j: a[i, j] * b[i, j], "Mul", ADD_950),
    ("dav-3510", "uint8", lambda a, b, r, i, j: a[i, j] * T.uint8(3), "Muls", ADDS_950),
    ("dav-3510", "int8", lambda a, b, r, i, j: T.abs(a[i, j]), "Muls", ADDS_950),
])
def test_8_bit_arithmetic(arch, dt, expr, op, takes):
    """dav-c220's arithmetic takes no 8-bit type; dav-3510's Mul and Muls take none (its Add, Sub,
    Max, Min, Adds, Maxs, Mins take int8 / uint8 in the count form). T.abs of a signed integer is
    TVM's select of -x, a Muls by -1."""
    err = refused(arch, dt, expr)
    expect(err, f"on {dt} tiles: the vector unit's {op} takes {takes} on {arch} (基础算术/{op}.md", hint=CAST_8)


def test_uint8_division_on_both_arches(arch):
    err = refused(arch, "uint8", lambda a, b, r, i, j: a[i, j] / b[i, j])
    takes = "float16, float32" if arch == "dav-c220" else "int16, uint16, float16, int32, uint32, float32"
    expect(err, f"`/` on uint8 tiles: the vector unit's Div takes {takes} on {arch} (基础算术/Div.md",
           hint='and the result back with T.Cast("uint8", ...)')


@pytest.mark.parametrize("expr,op", [(lambda a, b, r, i, j: a[i, j] + b[i, j], "Add"),
                                     (lambda a, b, r, i, j: T.max(a[i, j], b[i, j]), "Max")])
def test_bool_arithmetic_on_both_arches(arch, expr, op):
    err = refused(arch, "bool", expr)
    takes = A2 if arch == "dav-c220" else ADD_950
    expect(err, f"on bool tiles: the vector unit's {op} takes {takes} on {arch}", hint="exact for every bool value")


@pytest.mark.parametrize("expr,op", [(lambda a, b, r, i, j: a[i, j] + T.uint16(1), "Adds"),
                                     (lambda a, b, r, i, j: a[i, j] * T.uint16(2), "Muls"),
                                     (lambda a, b, r, i, j: T.max(a[i, j], T.uint16(3)), "Maxs")])
def test_uint16_scalar_ops(arch, expr, op):
    """The scalar forms take no uint16 on either arch (dav-3510's Add and Mul do: the tile-tile
    forms compile there). int16 does not hold every uint16 value: the hint offers int32 / float32."""
    err = refused(arch, "uint16", expr)
    expect(err, f"on uint16 tiles: the vector unit's {op} takes {A2 if arch == 'dav-c220' else ADDS_950} on {arch}",
           f"基础算术/{op}.md", hint='compute in int32 or float32 (exact for every uint16 value)')


def test_8_bit_broadcast_on_dav_3510_takes_the_count_form_only():
    """int8 Add / Max exist on dav-3510 in the count form only: a per-row operand needs the mask /
    repeat form (VecBinaryBcast), which the page does not give them."""
    err = refused("dav-3510", "int8", lambda a, b, r, i, j: a[i, j] + r[i])
    expect(err, "`+` with a per-row or per-column operand on int8 tiles: on dav-3510 the vector unit's Add takes "
           "int8 only in its count form (whole tiles, element by element); the mask/repeat form a broadcast needs "
           f"takes {ADD_950} (基础算术/Add.md; int8, uint8, int64, uint64 in its count form only)", hint=CAST_8)
    err = refused("dav-3510", "uint8", lambda a, b, r, i, j: r[i])
    expect(err, "a per-row or per-column value repeated over a tile", "the vector unit's Max takes uint8 only in its "
           "count form", hint=CAST_8)


def test_8_bit_broadcast_on_dav_c220():
    err = refused("dav-c220", "uint8", lambda a, b, r, i, j: T.max(a[i, j], r[i]))
    expect(err, f"T.max with a per-row or per-column operand on uint8 tiles: the vector unit's Max takes {A2} on "
           "dav-c220", hint=CAST_8)


@pytest.mark.parametrize("arch,dt,expr,op", [
    ("dav-3510", "int8", lambda a, b, r, i, j: T.max(a[i, j] + b[i, j], a[i, j] - b[i, j]), "Max("),
    ("dav-3510", "uint8", lambda a, b, r, i, j: T.min(a[i, j], T.uint8(7)) + T.uint8(1), "Adds("),
    ("dav-3510", "uint16", lambda a, b, r, i, j: a[i, j] * b[i, j] + a[i, j], "Mul("),
    ("dav-c220", "int16", lambda a, b, r, i, j: a[i, j] * r[i] + T.int16(1), "Adds("),
])
def test_the_listed_forms_still_compile(arch, dt, expr, op):
    """Whole-tile 8-bit Add / Sub / Max / Min / Adds / Mins on dav-3510, uint16 Mul / Add there, int16
    arithmetic and broadcasts on dav-c220: the types their pages list."""
    src = ascend_backend.lower(elementwise(dt, expr), target={"kind": "ascendc", "arch": arch}).source
    assert op in src
