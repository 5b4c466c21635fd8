"""The compiler's per-arch element types of the vector ops (Arch.vector_op_dtypes, ascend_backend/
arch.py) and the emulator's (the compile-time tables of emu_vector.h / emu_vector_ext.h) are two
independent readings of the same API pages: they must agree for every dtype, form and arch. One
g++ -fsyntax-only per arch over a static_assert per (op, dtype, form)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ascend_backend.arch import ARCHES
from ascend_backend.dtypes import DType
from ascend_backend.emulator.cache import ARCHES as EMU_ARCH_FLAGS
from ascend_backend.emulator.cache import COMMON_FLAGS, INCLUDE_DIR, cxx
from ascend_backend.ir import VecBinary, VecOther, VecScalarOp, VecUnary

# op -> the emulator's table (a dtypes_row with count<T> / rep<T>), or None: FusedMulAdd's
# EMU_HF condition (emu_vector_ext.h), which holds for all its forms alike
_EMU_TABLE = {
    VecBinary.ADD: "dt_add", VecBinary.SUB: "dt_add", VecBinary.MAX: "dt_add", VecBinary.MIN: "dt_add",
    VecBinary.MUL: "dt_mul", VecBinary.DIV: "dt_div",
    VecScalarOp.ADDS: "dt_adds", VecScalarOp.MAXS: "dt_adds", VecScalarOp.MINS: "dt_adds", VecScalarOp.MULS: "dt_muls",
    VecUnary.EXP: "dt_exp", VecUnary.LN: "dt_exp", VecUnary.SQRT: "dt_exp", VecUnary.RSQRT: "dt_exp",
    VecUnary.RECIPROCAL: "dt_recip", VecUnary.ABS: "dt_abs",
    VecOther.DUPLICATE: "dt_dup", VecOther.FUSED_MUL_ADD: None, VecOther.TRANSPOSE: "dt_transpose",
    VecOther.GATHER: "dt_gather",
}
# Every element type the emulator defines (int4 and float64 tiles are not vector operands).
_DTYPES = [d for d in DType if d not in (DType.INT4, DType.FLOAT64)]


def _source(arch) -> str:
    lines = ['#include "kernel_operator.h"',
             "namespace AscendC { template <class T> constexpr bool fma_ok_ = EMU_HF; }"]
    for op, table in _EMU_TABLE.items():
        types = arch.vector_op(op)
        for dt in _DTYPES:
            for count_form in (True, False):
                want = "true" if types.takes(dt, count_form) else "false"
                if table is None:
                    got = f"AscendC::fma_ok_<{dt.ctype}>"
                else:
                    got = f"emu::vec::{table}::{'count' if count_form else 'rep'}<{dt.ctype}>"
                form = "count" if count_form else "mask/repeat"
                lines.append(f'static_assert({got} == {want}, "{arch.name}: {op} {form} form on {dt}: '
                             f'Arch.vector_op_dtypes says {want}");')
    return "\n".join(lines) + "\n"


def test_every_op_has_a_table_on_both_arches():
    ops = set(_EMU_TABLE)
    for arch in ARCHES.values():
        assert set(arch.vector_op_dtypes) == ops, arch.name


@pytest.mark.skipif(shutil.which(cxx()) is None, reason="no C++ compiler")
@pytest.mark.parametrize("name", sorted(ARCHES))
def test_compiler_and_emulator_tables_agree(name, tmp_path):
    arch = ARCHES[name]
    src = tmp_path / "tables.cpp"
    src.write_text(_source(arch))
    r = subprocess.run([cxx(), *COMMON_FLAGS, "-fsyntax-only", EMU_ARCH_FLAGS[name], f"-I{INCLUDE_DIR}", str(src)],
                       capture_output=True, text=True)
    failed = [line.split("static assertion failed: ")[1] for line in r.stderr.splitlines()
              if "static assertion failed: " in line]
    assert r.returncode == 0, "\n".join(failed) or r.stderr[-4000:]
