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
        name, d, r, f = t["name"], t["direction"], t["ready"], t["free"]
        if d == "c2v-ub":
            target = next((u for u, n in aic.attrs.get("peer_ub", {}).items() if n == name), name)
            prod, cons = f"AIC: Fixpipe {name} -> {target} in the UB of AIV 0 / AIV 1", f"AIV: vector ops on {target}"
            buf = f"AIV:{target}"
            mode = "mode 4, one set per AIV (AIC ids {0} / {1})"
        elif d == "v2c-l1":
            prod, cons = f"AIV: DataCopy {name} -> its rows of L1 {name} (Nd2Nz, MTE3)", f"AIC: LoadData {name}"
            buf = f"AIC:{name}"
            mode = "mode 4, one set per AIV (AIC ids {0} / {1})"
        elif d == "c2v":
            prod, cons = f"AIC: Fixpipe {name} -> workspace", f"AIV: DataCopy workspace -> {name}"
            buf, mode = f"ws_{name}", "mode 2"
        else:
            prod, cons = f"AIV: DataCopy {name} -> workspace", f"AIC: Nd2Nz workspace -> {name}"
            buf, mode = f"ws_{name}", "mode 2"
        flags.append(FlagRecord(index=len(flags), event="CrossCore (ready)", event_id=r, producer=prod,
                                consumer=cons, buffer=buf, kind=f"cross-core RAW, {mode.format(r, r + 16)}",
                                producer_loc=t.get("loc"), consumer_loc=t.get("loc")))
        if f is not None:
            flags.append(FlagRecord(index=len(flags), event="CrossCore (free)", event_id=f, producer=cons,
                                    consumer=prod + " (next)", buffer=buf,
                                    kind=f"cross-core WAR, {mode.format(f, f + 16)}, primed and drained",
                                    producer_loc=t.get("loc"), consumer_loc=t.get("loc")))
    return aic.replace(buffers=buffers, flags=flags, kernel_type="MIX_AIC_1_2", body=[],
                       attrs={**aic.attrs, "aiv_row_split": aiv.attrs.get("row_split")})
