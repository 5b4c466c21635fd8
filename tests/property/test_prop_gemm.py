"""Random GEMM configurations (shapes with tails, tiles, transposes, dtypes, pipeline stages) on both
arches against the float64 product with the bound of an fp32 accumulation (prop_kernels.check_gemm)."""

import pytest
from hypothesis import given, reject
from hypothesis import strategies as st
from prop_kernels import Data, check_gemm

from ascend_backend import MemoryBudgetError

pytestmark = [pytest.mark.slow, pytest.mark.property]

OUT = {"float16": ["float16", "float32"], "bfloat16": ["bfloat16", "float32"]}


@st.composite
def configs(draw):
    bM, bN, bK = (draw(st.sampled_from([16, 32, 64, 128])) for _ in range(3))
    gm, gn = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    M = draw(st.integers((gm - 1) * bM + 1, gm * bM))
    N = draw(st.integers((gn - 1) * bN + 1, gn * bN))
    K = 16 * draw(st.integers(1, 12))  # a K tail must be whole fractals (docs/supported.md)
    dtype = draw(st.sampled_from(["float16", "bfloat16"]))
    return dict(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, trans_A=draw(st.booleans()), trans_B=draw(st.booleans()),
                dtype=dtype, out_dtype=draw(st.sampled_from(OUT[dtype])), num_stages=draw(st.integers(1, 3)))


data_sets = st.lists(st.builds(Data, seed=st.integers(0, 2**31 - 1), scale=st.sampled_from([1.0, 0.01, 8.0]),
                               p_special=st.sampled_from([0.0, 0.2])), min_size=2, max_size=2)


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
@given(cfg=configs(), data=data_sets)
def test_gemm_configurations(arch, cfg, data):
    try:
        check_gemm(arch, data=data, **cfg)
    except MemoryBudgetError:
        reject()  # tiles that do not fit the arch's L1/L0 are refused by design, not computed
