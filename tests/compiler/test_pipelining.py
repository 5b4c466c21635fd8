"""T.Pipelined: every pipelined kernel gives the same numbers as its T.serial twin on the emulator,
both arches, race-free in strict mode, for num_stages 1, 2, 3 and loop counts 1, 2, 3 and 7."""

import kernels
import pytest
import torch

import ascend_backend
from ascend_backend import MemoryBudgetError

_SERIAL: dict = {}


def serial(key, make, args, arch):
    """The T.serial twin's outputs, computed once per (kernel, shape, arch)."""
    if (key, arch) not in _SERIAL:
        run(make(), args, arch)
        _SERIAL[(key, arch)] = [a.clone() for a in args]
    return _SERIAL[(key, arch)]


def run(func, args, arch):
    k = ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True)
    k(*args)
    assert k.last_report.ok and not k.last_report.races and not k.last_report.flag_errors
    return k


# (stages, loops): a few in the fast tier, the whole sweep in the slow one.
SWEEP = [pytest.param(s, n, marks=() if (s, n) in ((2, 3),) else pytest.mark.slow)
         for s in (1, 2, 3) for n in (1, 2, 3, 7)]


@pytest.mark.parametrize("stages,loops", SWEEP)
def test_gemm_k_loop_matches_serial_twin(arch, stages, loops):
    K = 32 * loops
    g = torch.Generator().manual_seed(loops)
    a = torch.randn(64, K, generator=g).half()
    b = torch.randn(K, 64, generator=g).half()
    c_piped = torch.empty(64, 64)
    c_serial = serial(("gemm", loops), lambda: kernels.gemm_loop(K=K), [a, b, torch.empty(64, 64)], arch)[2]
    k = run(kernels.gemm_loop(K=K, num_stages=stages), [a, b, c_piped], arch)
    assert torch.equal(c_serial, c_piped)
    torch.testing.assert_close(c_piped, a.float() @ b.float(), atol=1e-3, rtol=1e-3)
    l1 = {r["buffer"]: r["slots"] for r in k.memory_map() if r["scope"] == "L1"}
    assert l1 == {"a": stages, "b": stages}


@pytest.mark.parametrize("stages,loops", SWEEP)
def test_k_stepped_gemm_matches_serial_twin(arch, stages, loops):
    # A 128x256 fp16 A tile (64 KB) does not fit L0A twice: the gemm steps through K in two
    # 128-wide chunks, alternating ping/pong L0 buffers when pipelined, one buffer otherwise.
    K = 256 * loops
    g = torch.Generator().manual_seed(loops)
    a = torch.randn(128, K, generator=g).half()
    b = torch.randn(K, 128, generator=g).half()
    make = lambda st=None: kernels.gemm_loop(M=128, N=128, K=K, bK=256, num_stages=st)  # noqa: E731
    c_serial = serial(("gemm-kstep", loops), make, [a, b, torch.empty(128, 128)], arch)[2]
    c_piped = torch.empty(128, 128)
    k = run(make(stages), [a, b, c_piped], arch)
    assert torch.equal(c_serial, c_piped)
    torch.testing.assert_close(c_piped, a.float() @ b.float(), atol=1e-2, rtol=1e-3)
    src = k.kernel_source
    assert src.count("Mmad(") == 2 and "K 128..256" in src
    assert ("a_l0a_ping" in src and "a_l0a_pong" in src) == (stages > 1)


@pytest.mark.parametrize("tA,tB", [(True, False), (False, True), (True, True)])
def test_k_stepped_gemm_transposed_operands(arch, tA, tB):
    from gemm import matmul, reference

    g = torch.Generator().manual_seed(7)
    a = (torch.randn(512, 128, generator=g) if tA else torch.randn(128, 512, generator=g)).half()
    b = (torch.randn(128, 512, generator=g) if tB else torch.randn(512, 128, generator=g)).half()
    c = torch.empty(128, 128, dtype=torch.float16)
    k = run(matmul(128, 128, 512, 128, 128, 256, trans_A=tA, trans_B=tB, num_stages=2), [a, b, c], arch)
    assert k.kernel_source.count("Mmad(") == 2
    torch.testing.assert_close(c.float(), reference(a, b, tA, tB).float(), atol=2e-2, rtol=1e-2)


def test_k_stepped_gemm_with_partial_tiles(arch):
    # The 192x256x128 tile of benchmarks/gemm.py on dav-3510: 192 does not divide M = 448, so the
    # last row of blocks is partial (64 valid rows); A's 48 KB tile is stepped through K by 64.
    from gemm import matmul, reference

    g = torch.Generator().manual_seed(3)
    a = torch.randn(448, 256, generator=g).half()
    b = torch.randn(256, 256, generator=g).half()
    c = torch.empty(448, 256, dtype=torch.float16)
    k = run(matmul(448, 256, 256, 192, 128 if arch == "dav-c220" else 256, 128, num_stages=2), [a, b, c], arch)
    assert k.kernel_source.count("Mmad(") == 2
    torch.testing.assert_close(c.float(), reference(a, b).float(), atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("stages,loops", SWEEP)
def test_vector_stream_matches_serial_twin(arch, stages, loops):
    N = 64 * loops - 8  # a column tail on the last chunk
    g = torch.Generator().manual_seed(loops)
    x = torch.randn(32, N, generator=g).half()
    ser = serial(("stream", loops), lambda: kernels.stream(N=N), [x, torch.empty_like(x), torch.empty(32)], arch)
    y, s = torch.empty_like(x), torch.empty(32)
    run(kernels.stream(N=N, num_stages=stages), [x, y, s], arch)
    outs = [(ser[1], ser[2]), (y, s)]
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
    torch.testing.assert_close(outs[1][0], (x.float() * 2 + 1).half(), atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(outs[1][1], x.float().sum(-1), atol=1e-3, rtol=1e-4)


def test_stages_that_do_not_fit_name_the_largest_that_does():
    # Each stage of a (128 x 256) fp16 A tile and a (256 x 128) B tile takes 128 KB of L1's 512 KB.
    # num_stages is a hint: the loop is lowered with the 4 stages that fit, and a warning says so.
    from ascend_backend.passes.multi_buffer import multi_buffer

    from ascend_backend.pipeline import compile_kernel

    f = kernels.gemm_loop(M=128, N=128, K=2048, bK=256, num_stages=5)
    with pytest.warns(UserWarning, match=r"kernels.py:\d+: T.Pipelined with num_stages=5 is lowered with 4 stage"):
        res = compile_kernel(f, ascend_backend.arch.get_arch("dav-3510"), dump={"lower_tile_ops"})
    assert {b.slots for _, _, k in res.program.kernels() for b in k.buffers.values() if b.slots > 1} == {4}
    # The pass itself (before the driver's retry) names the largest stage count that fits.
    with pytest.raises(MemoryBudgetError) as info:
        from ascend_backend.frontend import import_primfunc
        from ascend_backend.pipeline import passes

        p = import_primfunc(f, ascend_backend.arch.get_arch("dav-3510"))
        for name, fn in passes():
            if name == "multi_buffer":
                break
            p = fn(p)
        multi_buffer(p)
    err = info.value
    assert "cannot hold 5 pipeline stages" in err.what and "num_stages=4" in err.hint
    assert err.loc is not None and err.loc.file.endswith("kernels.py")
    assert "a " in err.table and "slots" in err.table
    ascend_backend.lower(kernels.gemm_loop(M=128, N=128, K=2048, bK=256, num_stages=4), "ascendc")
