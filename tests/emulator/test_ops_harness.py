"""Shared runner for the op-semantics tests (tests/emulator/test_ops_*.py).

`run(source, kernel, args, block_dim=1, arch=..., kernel_type=...)` runs hand-written Ascend C
through `ascend_backend.emulator.run_source` and returns the report as a dict, also when the
run failed (the EmulatorError's report), so tests can assert on errors. Torch tensors in
`args` are the kernel's GM arguments and are updated in place.
"""
import json

import torch

from ascend_backend.emulator import EmulatorError, run_source

ARCHES = ("dav-c220", "dav-3510")
KTYPES = {"aiv": 0, "aic": 1, "mix_aic_1_1": 4, "mix_aic_1_2": 5}


def _as_dict(rep):
    if rep is None:
        return {"errors": [{"kind": "no report"}]}
    if isinstance(rep, dict):
        return rep
    return {k: v for k, v in vars(rep).items() if not k.startswith("_")}


def run(source, kernel, args, block_dim=1, arch="dav-3510", kernel_type="aiv"):
    if "kernel_operator.h" not in source:
        source = '#include "kernel_operator.h"\n' + source
    try:
        rep = run_source(source, kernel, args, block_dim, arch=arch, kernel_type=KTYPES[kernel_type], timing=False)
    except EmulatorError as e:
        d = _as_dict(getattr(e, "report", None))
        d.setdefault("exception", str(e))
        if not (d.get("errors") or d.get("races") or d.get("flag_errors") or d.get("deadlock")):
            d["errors"] = [{"kind": "exception", "message": str(e)}]
        return d
    return _as_dict(rep)


def check_ok(rep):
    """Assert a clean run: no errors, races, flag errors or deadlock."""
    assert not rep.get("errors"), rep.get("errors")
    assert not rep.get("races"), rep.get("races")
    assert not rep.get("flag_errors"), rep.get("flag_errors")
    assert not rep.get("deadlock"), rep.get("deadlock")


def test_harness_reports_an_error():
    """The runner must surface a kernel error (a DataCopy count that is not 32-byte aligned)."""
    src = r'''
extern "C" __global__ __aicore__ void bad(GM_ADDR x) {
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    AscendC::GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)x, 64);
    AscendC::LocalTensor<float> t = b.Get<float>();
    AscendC::DataCopy(t, g, 7);
}
'''
    x = torch.zeros(64)
    rep = run(src, "bad", [x], arch="dav-3510")
    assert rep.get("errors"), rep
    assert any("invalid_param" in json.dumps(e) for e in rep["errors"])
