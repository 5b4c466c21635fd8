"""Text form of the kernel IR, for `tl-ascend inspect --stage NAME` and tests."""

from __future__ import annotations

from .ir import AscOp, Kernel, Loop, Sync, TileOp


def _region(r: dict) -> str:
    base = ", ".join(str(b) for b in r["base"])
    ext = "x".join(str(e) for e in r["extents"])
    return f"{r['buffer']}[{base}]<{ext}>"


def _stmt(s, ind: str, out: list) -> None:
    loc = f"  // {s.loc}" if getattr(s, "loc", None) else ""
    if isinstance(s, Loop):
        stages = f" stages={s.num_stages}" if s.kind == "pipelined" else ""
        out.append(f"{ind}for {s.var} in 0..{s.extent} ({s.kind}{stages}) {{{loc}")
        for b in s.body:
            _stmt(b, ind + "  ", out)
        out.append(f"{ind}}}")
    elif isinstance(s, TileOp):
        a = s.args
        if s.op == "copy":
            txt = f"copy {_region(a['src'])} -> {_region(a['dst'])}"
        elif s.op == "fill":
            txt = f"fill {_region(a['dst'])} = {a['value']}"
        elif s.op == "gemm":
            txt = (f"gemm {_region(a['A'])} x {_region(a['B'])} -> {_region(a['C'])}"
                   f" trans_A={a['trans_A']} trans_B={a['trans_B']}")
        elif s.op == "reduce":
            txt = f"reduce_{a['type']} {_region(a['src'])} -> {_region(a['dst'])} dim={a['dim']} clear={a['clear']}"
        else:
            doms = ", ".join(f"{v} < {e}" for v, e in zip(a["vars"], a["extents"], strict=True))
            txt = f"parallel ({doms}):"
            for st, _ in a["stores"]:
                idx = ", ".join(str(i) for i in st.indices)
                txt += f"\n{ind}    {st.buffer.name}[{idx}] = {st.value}"
        out.append(f"{ind}{txt}{loc}")
    elif isinstance(s, AscOp):
        reads = ",".join(a.buffer for a in s.reads)
        writes = ",".join(a.buffer for a in s.writes)
        out.append(f"{ind}[{s.pipe}] {s.kind} {s.text}  reads({reads}) writes({writes}){loc}")
    elif isinstance(s, Sync):
        if s.action == "barrier":
            out.append(f"{ind}PipeBarrier<PIPE_{s.src}>  // {s.reason}")
        else:
            tag = f" [{s.phase}]" if s.phase else ""
            out.append(f"{ind}{s.action.capitalize()}Flag<{s.event}>({s.event_id}){tag}  // {s.reason}")
    else:
        out.append(f"{ind}{s}")


def print_kernel(k: Kernel) -> str:
    out = [f"kernel {k.name} arch={k.arch.name} type={k.kernel_type} grid={[int(e) for _, e, *_ in k.grid]}"]
    for p in k.params:
        out.append(f"  param {p.name}: {p.kind} {p.dtype}")
    for b in k.buffers.values():
        off = f" @{b.offset}" if b.offset is not None else ""
        out.append(f"  buffer {b.describe()}{off}")
    out.append("  body {")
    for s in k.body:
        _stmt(s, "    ", out)
    out.append("  }")
    return "\n".join(out)
