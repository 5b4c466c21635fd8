"""The tests' one way to run a kernel on the emulator: compiled for ``arch`` in strict mode, run
on ``args`` (outputs written in place), every report clean (no race, no flag error, no deadlock)."""

import ascend_backend


def run(func, args: list, arch: str):
    k = ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True)
    k(*args)
    assert all(r.ok for r in k.reports)
    return k
