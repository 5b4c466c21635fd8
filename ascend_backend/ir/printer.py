"""Text form of a Program, for ``tl-ascend inspect --stage NAME``, dumps and FileCheck tests.

Exhaustive: every statement class has a rule in ``RULES`` (a test checks it), so a new op kind
cannot reach a dump unprinted. Lines look like

    launch 0 grid=[4, 2] AIV
      buffer x: UB 32x64xfloat16 ND
      for k in 0..8 (pipelined stages=2) {
        [MTE2] copy_gm_to_ub DataCopy A -> x  reads(A) writes(x)
        SetFlag<MTE2_V>(0)  // RAW on x: ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .enums import LoopKind
from .nodes import (
    AscOp,
    CopyToPeerL1,
    CopyToPeerUb,
    CopyToPeerUbDual,
    CrossCoreSet,
    CrossCoreWait,
    If,
    Loop,
    PipeBarrier,
    Print,
    Receive,
    Region,
    ScalarStore,
    Send,
    SetFlag,
    SimtCall,
    SimtRegion,
    Stmt,
    TileAccumulate,
    TileCopy,
    TileCumsum,
    TileFill,
    TileGemm,
    TileParallel,
    TileReduce,
    WaitFlag,
)
from .program import Kernel, Launch, Program


def region(r: Region) -> str:
    base = ", ".join(str(b) for b in r.base)
    ext = "x".join(str(e) for e in r.extents)
    return f"{r.buffer}[{base}]<{ext}>"


def _loc(s) -> str:
    return f"  // {s.loc}" if getattr(s, "loc", None) else ""


def _loop(s: Loop, ind: str, out: list) -> None:
    if s.kind is LoopKind.WHILE:
        out.append(f"{ind}while {s.cond} {{{_loc(s)}")
        for b in s.body:
            print_stmt(b, ind + "  ", out)
        out.append(f"{ind}}}")
        return
    stages = f" stages={s.num_stages}" if s.num_stages > 1 or s.kind.value == "pipelined" else ""
    slots = f" slots={dict(s.slots)}" if s.slots else ""
    start = "" if isinstance(s.start, int) and s.start == 0 else f"{s.start} + "
    step = "" if s.step == 1 else f" step {s.step}"
    skew = (" skewed" if s.lead == 1 else f" skewed lead {s.lead}") if s.skewed else ""
    out.append(f"{ind}for {s.var} in {start}0..{s.extent}{step} ({s.kind}{stages}{skew}){slots} {{{_loc(s)}")
    for b in s.body:
        print_stmt(b, ind + "  ", out)
    out.append(f"{ind}}}")


def _if(s: If, ind: str, out: list) -> None:
    out.append(f"{ind}if {s.cond} {{{_loc(s)}")
    for b in s.then_body:
        print_stmt(b, ind + "  ", out)
    if s.else_body:
        out.append(f"{ind}}} else {{")
        for b in s.else_body:
            print_stmt(b, ind + "  ", out)
    out.append(f"{ind}}}")


def _line(text: Callable) -> Callable:
    def rule(s, ind: str, out: list) -> None:
        out.append(f"{ind}{text(s)}{_loc(s)}")

    return rule


def _parallel(s: TileParallel) -> str:
    doms = ", ".join(f"{v} < {e}" for v, e in zip(s.vars, s.extents, strict=True))
    lines = [f"parallel ({doms}):"]
    for ps in s.stores:
        idx = ", ".join(str(i) for i in ps.store.indices)
        lines.append(f"    {ps.store.buffer.name}[{idx}] = {ps.store.value}")
    return "\n".join(lines)


def _parallel_rule(s: TileParallel, ind: str, out: list) -> None:
    first, *rest = _parallel(s).split("\n")
    out.append(f"{ind}{first}{_loc(s)}")
    out.extend(f"{ind}{r}" for r in rest)


def _simt_tir(body, ind: str, out: list) -> None:
    for st in body:
        out.extend(f"{ind}  | {ln}" for ln in str(st).rstrip("\n").split("\n") if ln.strip()
                   and not ln.lstrip().startswith(("# from tvm", "import ")) and " = T.Buffer(" not in ln
                   and not ln.rstrip().endswith("= T.int32()"))


def _simt_region_rule(s: SimtRegion, ind: str, out: list) -> None:
    dims = "x".join(str(t) for t in s.threads)
    local = ", ".join(f"{b.name}[{'x'.join(map(str, b.shape))}]" for b in s.locals)
    out.append(f"{ind}simt threads={dims} locals=({local}) reads({', '.join(s.reads)}) writes({', '.join(s.writes)}) "
               f"{{{_loc(s)}")
    _simt_tir(s.body, ind, out)
    out.append(f"{ind}}}")


def _simt_call_rule(s: SimtCall, ind: str, out: list) -> None:
    args = ", ".join(f"{a.name}: {a.kind}" for a in s.args)
    out.append(f"{ind}[V] simt_call {s.text} args({args}) reads({', '.join(s.reads)}) writes({', '.join(s.writes)}) "
               f"{{{_loc(s)}")
    _simt_tir(s.body, ind, out)
    out.append(f"{ind}}}")


def _cc(s) -> str:
    verb = "set" if isinstance(s, CrossCoreSet) else "wait"
    sub = f" aiv={s.sub}" if s.sub is not None else ""

    pipe = s.pipe.value if s.pipe is not None else f"<pipe of {s.orders}>"
    tr = f" (transfer {s.transfer})" if s.transfer is not None else ""
    return f"cross_core_{verb} flag={s.flag} mode={s.mode}{sub} on {pipe}{tr}  // {s.reason}"


def _fields(op) -> str:
    """The typed fields of an Ascend op that are not buffer names already shown."""
    skip = {"loc"}
    parts = []
    for f in dataclasses.fields(op):
        if f.name in skip:
            continue
        v = getattr(op, f.name)
        if isinstance(v, bool | int | str) and f.name in ("dst", "src", "a", "b", "gm", "ub", "l1", "src0", "src1"):
            continue
        parts.append(f"{f.name}={v}")
    return " ".join(parts)


def _asc(s: AscOp) -> str:
    reads = ",".join(s.reads)
    writes = ",".join(s.writes)
    return f"[{s.pipe}] {s.macro} {s.text}  reads({reads}) writes({writes})  {{{_fields(s)}}}"


def _sync(s) -> str:
    if isinstance(s, PipeBarrier):
        return f"PipeBarrier<PIPE_{s.pipe}>  // {s.reason}"
    verb = "SetFlag" if isinstance(s, SetFlag) else "WaitFlag"
    tag = f" [{s.phase}]" if s.phase.value else ""
    return f"{verb}<{s.event}>({s.event_id}){tag}  // {s.reason}"


RULES: dict[type, Callable] = {
    Loop: _loop,
    If: _if,
    ScalarStore: _line(lambda s: f"[S] {s.text}"),
    TileCopy: _line(lambda s: f"copy {region(s.src)} -> {region(s.dst)}" + (f" atomic={s.atomic}" if s.atomic else "")
                    + (f" scale={s.scale}" if s.scale is not None else "")),
    TileFill: _line(lambda s: f"fill {region(s.dst)} = {s.value}"),
    TileGemm: _line(lambda s: f"gemm {region(s.a)} x {region(s.b)} -> {region(s.c)} trans_A={s.trans_a} "
                    f"trans_B={s.trans_b}" + (" clear_accum=True" if s.clear_accum else "")),
    TileReduce: _line(lambda s: f"reduce_{s.kind} {region(s.src)} -> {region(s.dst)} dim={s.dim} clear={s.clear}"),
    TileParallel: _parallel_rule,
    SimtRegion: _simt_region_rule,
    SimtCall: _simt_call_rule,
    TileAccumulate: _line(lambda s: f"accumulate {s.dst} += {s.src}"),
    TileCumsum: _line(lambda s: f"cumsum {region(s.src)} -> {region(s.dst)} dim={s.dim}"
                      + (" reverse" if s.reverse else "")),
    Print: _line(lambda s: f"[S] print {s.label} = {s.value}"),
    Send: _line(lambda s: f"send {s.tile} (transfer {s.transfer})"),
    Receive: _line(lambda s: f"receive {s.tile} -> {s.into} (transfer {s.transfer})"),
    CopyToPeerUb: _line(lambda s: f"copy_to_peer_ub {s.src} -> {s.target} of AIV {s.sub}"),
    CopyToPeerUbDual: _line(lambda s: f"copy_to_peer_ub_dual {s.src} -> {s.target} of AIV 0 / AIV 1 (split rows)"),
    CopyToPeerL1: _line(lambda s: f"copy_to_peer_l1 {region(s.src)} -> {s.target} rows={s.rows}"),
    CrossCoreSet: _line(_cc),
    CrossCoreWait: _line(_cc),
    SetFlag: _line(_sync),
    WaitFlag: _line(_sync),
    PipeBarrier: _line(_sync),
}


def print_stmt(s: Stmt, ind: str, out: list) -> None:
    rule = RULES.get(type(s))
    if rule is None and isinstance(s, AscOp):
        rule = _line(_asc)
    if rule is None:
        raise TypeError(f"the IR printer has no rule for {type(s).__name__}")
    rule(s, ind, out)


def print_kernel(k: Kernel, ind: str = "  ") -> list:
    out = []
    if k.row_split is not None:
        out.append(f"{ind}row_split {k.row_split.var} rows/AIV={k.row_split.rows or 'per tile'}")
    for b in k.buffers.values():
        off = f" @{b.offset}" if b.offset is not None else ""
        out.append(f"{ind}buffer {b.describe()}{off}")
    out.append(f"{ind}body {{")
    for s in k.body:
        print_stmt(s, ind + "  ", out)
    out.append(f"{ind}}}")
    return out


def print_launch(n: int, lc: Launch) -> list:
    grid = ", ".join(str(ax.extent) for ax in lc.grid)
    out = [f"launch {n} grid=[{grid}] type={lc.kernel_type}"]
    for t in lc.transfers:
        route = t.route.value if t.route else "?"
        ready = "?" if t.ready is None else t.ready
        free = "?" if t.route is None else ("-" if t.free is None else t.free)
        out.append(f"  transfer {t.index}: {t.tile} -> {t.target} {t.direction} ready={ready} free={free} "
                   f"route={route}" + (" dual" if t.dual else ""))
    if lc.workspace:
        out.append(f"  workspace {lc.workspace.nbytes} bytes {dict(lc.workspace.offsets)}")
    for core, k in lc.kernels.items():
        out.append(f"  == {core.value if core else 'unpartitioned'} ==")
        out.extend(print_kernel(k, "    "))
    return out


def print_program(p: Program) -> str:
    out = [f"program {p.name} arch={p.arch.name}"]
    for prm in p.params:
        kind = "tensor" if prm.is_tensor else "scalar"
        out.append(f"  param {prm.name}: {kind} {prm.dtype}")
    for v in p.shape_vars:
        src = ", ".join(f"{t}.shape[{d}]" for t, d in v.sources)
        out.append(f"  dim {v.name}: {v.dtype} = {src}{' (also a scalar argument)' if v.param else ''}")
    for n, lc in enumerate(p.launches):
        out.extend(print_launch(n, lc))
    return "\n".join(out)


__all__ = ["RULES", "print_program", "print_stmt", "region"]
