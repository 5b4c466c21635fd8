"""dav-3510's fallbacks from the on-chip routes to the GM workspace (docs/architecture.md), pinned in
the generated code and run on the emulator (strict: no race, flag error or deadlock) on both arches:

* (a) an AIV touches a Cube -> Vector tile before its "ready" wait in the same statement list
  (kernels.gemm_carry_epilogue: c is read at the top of each iteration): that tile keeps the
  workspace and mode-2 flags, the kernel's other crossing tile (d) stays on chip with mode 4;
* (b) the crossing tiles do not split evenly between the two AIVs. A crossing tile is always a gemm
  operand or accumulator, and Cube tiles must be multiples of 16 rows, so an odd height cannot
  compile (AlignmentError, checked below); what does compile is crossing tiles of different heights
  (kernels.scaled_b_gemm_epilogue: B's 32-row tile goes to the Cube, the 64-row accumulator comes
  back): no row split serves both on chip, so every tile keeps the workspace, and each AIV takes half
  the rows of each tile at that tile's own height.

Each FileCheck is also run against the neighbouring kernel whose tiles stay on chip (no early read;
equal heights) and must fail there.
"""

import kernels
import pytest
import torch
from filecheck import CheckFailure, filecheck

import ascend_backend
from ascend_backend.errors import AlignmentError


def src(func, arch="dav-3510"):
    return ascend_backend.lower(func, {"kind": "ascendc", "arch": arch}).source


# c (the tile read before its wait) goes through the workspace with mode-2 flags; d stays on chip.
EARLY_TOUCH_3510 = """
    CHECK: ws_c_gm.SetGlobalBuffer((__gm__ float*)(workspace + 0), 8192);
    CHECK-NOT: ws_d_gm
    CHECK: if ASCEND_IS_AIC {
    CHECK: for (int32_t n = 0;
    CHECK: CrossCoreWaitFlag<2, PIPE_FIX>(2);  // workspace of c is free
    CHECK: Fixpipe<float, float, CFG_ROW_MAJOR>(ws_c_gm[(bx * 64) * 64], c, fp);
    CHECK: CrossCoreSetFlag<2, PIPE_FIX>(0);  // c from the Cube to the Vector cores: written
    CHECK: CrossCoreWaitFlag<4, PIPE_FIX>(3);  // AIV 0's UB tile d is free
    CHECK-NEXT: CrossCoreWaitFlag<4, PIPE_FIX>(19);  // AIV 1's UB tile d is free
    CHECK: fp.dualDstCtl = 1;
    CHECK-NEXT: fp.unitFlag = 3;  // unit flag, sync table #
    CHECK-NEXT: Fixpipe<float, float, CFG_ROW_MAJOR_UB>(d_peer, d, fp);
    CHECK: CrossCoreSetFlag<4, PIPE_FIX>(1);
    CHECK-NEXT: CrossCoreSetFlag<4, PIPE_FIX>(17);
    CHECK: CrossCoreWaitFlag<2, PIPE_FIX>(2);  // drain: the last read of c's workspace
    CHECK: if ASCEND_IS_AIV {
    CHECK: CrossCoreSetFlag<2, PIPE_MTE2>(2);  // prime: workspace of c starts free
    CHECK: for (int32_t n = 0;
    CHECK-NEXT: Muls(prev, c, 0.5f, 2048);
    CHECK: CrossCoreWaitFlag<2, PIPE_MTE2>(0);  // c from the Cube to the Vector cores: ready in the workspace
    CHECK: DataCopy(c, ws_c_gm[((bx * 64) + (sub_idx * 32)) * 64], 2048);
    CHECK: CrossCoreSetFlag<2, PIPE_MTE2>(2);  // workspace of c read
    CHECK: CrossCoreWaitFlag<4, PIPE_V>(1);  // d from the Cube: this AIV's half is in its UB
    CHECK: CrossCoreSetFlag<4, PIPE_V>(3);
"""

# Both tiles go through the workspace with mode-2 flags; each AIV takes half the rows of each tile.
UNEVEN_ROWS_3510 = """
    CHECK: ws_b_gm.SetGlobalBuffer((__gm__ half*)(workspace + 0), 4096);
    CHECK: ws_c_gm.SetGlobalBuffer((__gm__ float*)(workspace + 8192), 8192);
    CHECK: if ASCEND_IS_AIC {
    CHECK: for (int32_t k = 0;
    CHECK: CrossCoreWaitFlag<2, PIPE_MTE2>(0);  // b from the Vector cores to the Cube: ready in the workspace
    CHECK: DataCopy(b, ws_b_gm[(bx * 32) * 64], Nd2NzParams{
    CHECK: CrossCoreSetFlag<2, PIPE_MTE2>(2);  // workspace of b read
    CHECK: Fixpipe<float, float, CFG_ROW_MAJOR>(ws_c_gm[(bx * 64) * 64], c, fp);
    CHECK: CrossCoreSetFlag<2, PIPE_FIX>(1);  // c from the Cube to the Vector cores: written
    CHECK: if ASCEND_IS_AIV {
    CHECK: const int32_t sub_idx = GetSubBlockIdx();
    CHECK: for (int32_t k = 0;
    CHECK: DataCopy(b_in, B_gm[((k * 32) + (sub_idx * 16)) * 64], 1024);
    CHECK: CrossCoreWaitFlag<2, PIPE_MTE3>(2);  // workspace of b is free
    CHECK: DataCopy(ws_b_gm[((bx * 32) + (sub_idx * 16)) * 64], b, 1024);
    CHECK: CrossCoreSetFlag<2, PIPE_MTE3>(0);  // b from the Vector cores to the Cube: written
    CHECK: CrossCoreWaitFlag<2, PIPE_MTE2>(1);  // c from the Cube to the Vector cores: ready in the workspace
    CHECK-NEXT: DataCopy(c, ws_c_gm[((bx * 64) + (sub_idx * 32)) * 64], 2048);
    CHECK: DataCopy(Y_gm[((bx * 64) + (sub_idx * 32)) * 64], y, 2048);
    CHECK-NOT: CrossCoreSetFlag<4
    CHECK-NOT: CrossCoreWaitFlag<4
    CHECK-NOT: peer
"""


def test_early_touch_keeps_that_tile_in_the_workspace_on_3510():
    filecheck(src(kernels.gemm_carry_epilogue()), EARLY_TOUCH_3510)
    # without the early read, c crosses on chip too and the check fails
    with pytest.raises(CheckFailure):
        filecheck(src(kernels.gemm_carry_epilogue(carry=False)), EARLY_TOUCH_3510)


def test_uneven_rows_keep_every_tile_in_the_workspace_on_3510():
    filecheck(src(kernels.scaled_b_gemm_epilogue()), UNEVEN_ROWS_3510)
    # equal heights: both tiles cross on chip and the check fails
    with pytest.raises(CheckFailure):
        filecheck(src(kernels.scaled_b_gemm_epilogue(bK=64)), UNEVEN_ROWS_3510)


def test_odd_row_tiles_cannot_compile():
    # an odd-height crossing tile is never built: the Cube's 16-row alignment rejects it first
    with pytest.raises(AlignmentError) as info:
        src(kernels.gemm_tiles_epilogue(M=132, bM=33))
    text = str(info.value)
    assert "33 rows" in text and "multiples of 16" in text and "kernels.py:" in text and "e.g. 48" in text


def _early_touch_case():
    g = torch.Generator().manual_seed(0)
    a, a2 = (torch.randn(128, 64, generator=g).half() * 0.3 for _ in range(2))
    b = torch.randn(64, 192, generator=g).half() * 0.3

    def reference(a, a2, b):
        p = a.float() @ b.float()
        prev = torch.cat([torch.zeros(128, 64), p[:, :-64]], dim=1)
        return [p.clamp(min=0) + 0.5 * prev, a2.float() @ b.float()]

    return kernels.gemm_carry_epilogue(), [a, a2, b, torch.zeros(128, 192).half(), torch.zeros(128, 192).half()], \
        [3, 4], reference, {"c": ("cube->vector", "workspace"), "d": ("cube->vector", "on-chip")}


def _uneven_rows_case():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(128, 128, generator=g).half() * 0.3
    b = torch.randn(128, 64, generator=g).half() * 0.3
    return kernels.scaled_b_gemm_epilogue(), [a, b, torch.zeros(128, 64)], [2], \
        lambda a, b: [(a.float() @ (2 * b.float())).clamp(min=0)], {"b": ("vector->cube", "workspace"), "c": ("cube->vector", "workspace")}


@pytest.mark.slow
@pytest.mark.parametrize("which", ["early_touch", "uneven_rows"])
def test_fallbacks_on_the_emulator(arch, which):
    func, args, outs, reference, routes_3510 = (_early_touch_case if which == "early_touch" else _uneven_rows_case)()
    k = ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True)
    expected = reference(*args[:-len(outs)])
    k(*args)
    rep = k.last_report
    assert rep.ok and not rep.races and not rep.flag_errors and not rep.deadlock
    for idx, exp in zip(outs, expected, strict=True):
        torch.testing.assert_close(args[idx].float(), exp, atol=2e-2, rtol=2e-2)
    routes = {t.tile: (t.direction.value, t.route.value) for t in k.program.launch.transfers}
    if arch == "dav-3510":
        assert routes == routes_3510
    else:
        assert routes == {n: (d, "workspace") for n, (d, _) in routes_3510.items()}


def test_verify_split_rejects_aivs_that_share_no_rows():
    # the bug the uneven-rows kernel found: with no row split both AIVs ran every op on whole tiles
    # (duplicate workspace and output writes, a race on both arches); the verifier now refuses that
    from ascend_backend.passes.partition import partition
    from ascend_backend.passes.route import route
    from ascend_backend.passes.split_rows import split_rows, verify_split_rows

    from ascend_backend.errors import InternalCompilerError
    from ascend_backend.frontend import import_primfunc
    from ascend_backend.ir import Core
    from ascend_backend.target import parse_target

    program = split_rows(route(partition(import_primfunc(
        kernels.scaled_b_gemm_epilogue(), parse_target({"kind": "ascendc", "arch": "dav-3510"}), None))))
    lc = program.launch
    aiv = lc.kernels[Core.AIV]
    assert aiv.row_split is not None and aiv.row_split.rows is None  # each tile height splits on its own
    broken = program.replace(launches=[lc.replace(kernels={**lc.kernels, Core.AIV: aiv.replace(row_split=None)})])
    with pytest.raises(InternalCompilerError, match="do not share the rows"):
        verify_split_rows(broken)
