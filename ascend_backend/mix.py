"""The reports' view of a kernel split into an AIC and an AIV program."""

from __future__ import annotations

import dataclasses

from .ir import FlagRecord, Kernel


def merge_for_reports(aic: Kernel, aiv: Kernel) -> Kernel:
    """One Kernel whose buffers (``AIC:name`` / ``AIV:name``) and flags cover both programs,
    plus one sync-table row per cross-core flag."""
    buffers = {n: b for n, b in aic.buffers.items() if b.scope == "GM"}
    for core, k in (("AIC", aic), ("AIV", aiv)):
        for n, b in k.buffers.items():
            if b.scope != "GM":
                buffers[f"{core}:{n}"] = dataclasses.replace(b, name=f"{core}:{n}")
    flags = []
    for core, k in (("AIC", aic), ("AIV", aiv)):
        for f in k.flags:
            flags.append(dataclasses.replace(f, index=len(flags), producer=f"{core}: {f.producer}",
                                             consumer=f"{core}: {f.consumer}"))
    for t in aic.attrs.get("cross_core", []):
        name = t["name"]
        if t["direction"] == "c2v-ub":
            prod, cons = f"AIC: Fixpipe {name} -> UB of each AIV", f"AIV: vector ops on {name}"
        elif t["direction"] == "c2v":
            prod, cons = f"AIC: Fixpipe {name} -> workspace", f"AIV: DataCopy workspace -> {name}"
        else:
            prod, cons = f"AIV: DataCopy {name} -> workspace", f"AIC: Nd2Nz workspace -> {name}"
        flags.append(FlagRecord(index=len(flags), event="CrossCore (ready)", event_id=t["ready"], producer=prod,
                                consumer=cons, buffer=name if t["direction"] == "c2v-ub" else f"ws_{name}",
                                kind="cross-core RAW, mode 2"))
        if t["free"] is not None:
            flags.append(FlagRecord(index=len(flags), event="CrossCore (free)", event_id=t["free"], producer=cons,
                                    consumer=prod + " (next)", buffer=f"ws_{name}",
                                    kind="cross-core WAR, mode 2, primed and drained"))
    return aic.replace(buffers=buffers, flags=flags, kernel_type="MIX_AIC_1_2", body=[],
                       attrs={**aic.attrs, "aiv_row_split": aiv.attrs.get("row_split")})
