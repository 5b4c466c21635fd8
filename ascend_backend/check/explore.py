"""Run every kernel entry of a source on every core it uses, along every path, and check the
cross-core flags of the cores together."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from lark import Tree

from .interp import Interp, PathCut
from .machine import Finding, Machine
from .parser import ParsedSource
from .program import FuncDef, Program, build_program
from .values import TypeVal, as_int, covered_by_write

DEFAULT_MAX_PATHS = 128
MAX_CORE_STEPS = 2_000_000  # interpreter steps over all paths of one core
_KERNEL_TYPES = {
    "KERNEL_TYPE_AIV_ONLY": (("AIV",), 1, False), "KERNEL_TYPE_AIC_ONLY": (("AIC",), 1, False),
    "KERNEL_TYPE_MIX_AIV_1_0": (("AIV",), 1, True), "KERNEL_TYPE_MIX_AIC_1_0": (("AIC",), 1, True),
    "KERNEL_TYPE_MIX_AIC_1_1": (("AIC", "AIV"), 1, True), "KERNEL_TYPE_MIX_AIC_1_2": (("AIC", "AIV"), 2, True),
    "KERNEL_TYPE_MIX_VECTOR_CORE": (("AIV",), 1, False),
}
_CUBE_WORDS = {"Mmad", "LoadData", "Fixpipe", "A1", "A2", "B1", "B2", "CO1", "L0A", "L0B", "L0C", "MmadMx"}


@dataclass
class KernelPlan:
    name: str
    line: int
    cores: tuple  # ("AIC",) / ("AIV",) / both
    ratio: int  # AIVs per AIC
    mix: bool  # the hardware's cross-core scheduler is on (mix kernel types)
    how: str


@dataclass
class CoreRun:
    core: str
    sub: int
    findings: list = field(default_factory=list)  # (Finding, path note)
    xseqs: list = field(default_factory=list)  # (xevents tuple, assumptions)
    foreign: list = field(default_factory=list)
    paths: int = 0
    machine: Machine | None = None  # the last path's machine (the cross-core data check uses it)
    records: list = field(default_factory=list)  # per complete path: (decisions, machine, assumptions)
    read_lines: list = field(default_factory=list)  # per path: lines of local reads
    nw_lines: list = field(default_factory=list)  # per path: lines of reads with no write before
    truncated: bool = False
    notes: set = field(default_factory=set)


def _words(node) -> set:
    out = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Tree):
            stack.extend(c for c in n.children if c is not None)
        else:
            out.add(str(n))
    return out


def plan_kernel(f: FuncDef, prog: Program) -> KernelPlan:
    mix = f.mix()
    if mix is not None:
        c, v = mix
        cores = tuple(x for x, k in (("AIC", c), ("AIV", v)) if k)
        return KernelPlan(f.name, f.line, cores or ("AIV",), max(v, 1) if c else 1, True, f"__mix__({c}, {v})")
    if "__vector__" in f.specs:
        return KernelPlan(f.name, f.line, ("AIV",), 1, False, "__vector__")
    if "__cube__" in f.specs:
        return KernelPlan(f.name, f.line, ("AIC",), 1, False, "__cube__")
    body = _words(f.body) if f.body is not None else set()
    for k, (cores, ratio, mixed) in _KERNEL_TYPES.items():
        if k in body:
            return KernelPlan(f.name, f.line, cores, ratio, mixed, k)
    every = set()
    for fs in prog.functions.values():
        for g in fs:
            every |= _words(g.body) if g.body is not None else set()
    for cls in prog.classes.values():
        for ms in list(cls.methods.values()) + [cls.ctors]:
            for g in ms:
                every |= _words(g.body) if g.body is not None else set()
    if {"ASCEND_IS_AIC", "ASCEND_IS_AIV", "ASCEND_IS_NOT_AIC", "ASCEND_IS_NOT_AIV"} & every:
        return KernelPlan(f.name, f.line, ("AIC", "AIV"), 2, True, "ASCEND_IS_AIC/AIV branches")
    if _CUBE_WORDS & every:
        return KernelPlan(f.name, f.line, ("AIC",), 1, False, "Cube calls")
    return KernelPlan(f.name, f.line, ("AIV",), 1, False, "vector code")


def _targs(prog: Program, f: FuncDef, parsed: ParsedSource, machine_args) -> list:
    toks_list = parsed.launch_targs.get(f.name)
    if not toks_list or not f.tparams:
        return []
    m = Machine(*machine_args)
    it = Interp(prog, m, [], 0, 1)
    from .interp import Frame

    it.frames.append(Frame([{}]))
    out = []
    for toks in toks_list:
        if len(toks) == 1:
            t = toks[0]
            if t.type == "NUMBER":
                from .interp import _num

                out.append(_num(t.value))
            elif t.type == "TNAME" or t.value in ("float", "int", "bool", "double", "char"):
                out.append(TypeVal(t.value if t.value != "int" else "int32_t"))
            elif t.type == "NAME":
                v = it.lookup(t.value)
                if as_int(v) is None:
                    v = parsed.host_consts.get(t.value)
                out.append(v if as_int(v) is not None else None)
            else:
                out.append(None)
        elif len(toks) >= 2 and toks[-1].type == "TNAME":
            out.append(TypeVal(toks[-1].value))
        else:
            out.append(None)
    return out


def run_core(prog: Program, parsed: ParsedSource, f: FuncDef, plan: KernelPlan, arch: str, core: str, sub: int,
             auto_sync: bool, max_paths: int, causal: dict | None = None, xdata: dict | None = None) -> CoreRun:
    run = CoreRun(core, sub)
    targs = _targs(prog, f, parsed, (arch, core, auto_sync))
    stack: list[list[int]] = [[]]
    steps = 0
    while stack:
        if run.paths >= max_paths or steps > MAX_CORE_STEPS:
            run.truncated = True
            break
        prefix = stack.pop()
        m = Machine(arch, core, auto_sync)
        m.causal = causal
        if xdata is not None:
            m.remote, m.reveal = xdata["remote"], xdata["reveal"]
        it = Interp(prog, m, prefix, sub, plan.ratio, plan.mix)
        cut = False
        try:
            it.run_entry(f, targs)
        except PathCut:
            cut = True
        run.paths += 1
        steps += it.steps
        for k in range(len(prefix), len(it.trace)):
            n = it.trace[k][0]
            base = [c for (_, c, _, _) in it.trace[:k]]
            for alt in range(n - 1, 0, -1):
                stack.append(base + [alt])
        note = it.path_note()
        for fd in m.findings:
            run.findings.append((fd, note))
        run.read_lines.append(m.read_lines)
        run.nw_lines.append({fd.line for fd in m.findings if fd.check == "read-never-written"})
        if not cut:  # a path stopped early has an incomplete set/wait sequence
            assumed = (dict(it.assume), {k: tuple(v) for k, v in it.rng.items()},
                       {k: set(v) for k, v in it.neq.items()})
            run.xseqs.append((tuple(m.xevents), assumed))
            run.records.append(([c for (_, c, _, _) in it.trace], m, assumed))
        run.foreign.extend(m.foreign_writes)
        run.notes |= it.notes
        run.machine = m
    return run


def replay(prog: Program, parsed: ParsedSource, f: FuncDef, plan: KernelPlan, arch: str, core: str, sub: int,
           auto_sync: bool, decisions: list, causal: dict | None, xdata: dict | None) -> Machine:
    """One path again (its decisions), with the cross-core order and the other cores' accesses."""
    m = Machine(arch, core, auto_sync)
    m.causal = causal
    if xdata is not None:
        m.remote, m.reveal = xdata["remote"], xdata["reveal"]
    it = Interp(prog, m, list(decisions), sub, plan.ratio, plan.mix)
    try:
        it.run_entry(f, _targs(prog, f, parsed, (arch, core, auto_sync)))
    except PathCut:
        pass
    return m


# ---------------------------------------------------------------------------------------------
# Cross-core flags
# ---------------------------------------------------------------------------------------------


def _consistent(a: tuple, b: tuple) -> bool:
    """Whether two cores' paths can be one run: the same decisions on the same conditions, and
    value ranges of shared symbols (tiling fields, the block index) that intersect."""
    (aa, ar, an), (ba, br, bn) = a, b
    for k, v in aa.items():
        if k in ba and ba[k] != v:
            return False
    for sym, (lo, hi) in ar.items():
        if sym in br:
            lo2, hi2 = br[sym]
            lo_ = max(x for x in (lo, lo2) if x is not None) if lo is not None or lo2 is not None else None
            hi_ = min(x for x in (hi, hi2) if x is not None) if hi is not None or hi2 is not None else None
            if lo_ is not None and hi_ is not None and lo_ > hi_:
                return False
            if lo_ is not None and lo_ == hi_ and (lo_ in an.get(sym, ()) or lo_ in bn.get(sym, ())):
                return False
    return True


def cross_core_findings(plan: KernelPlan, runs: dict, arch: str) -> tuple[list[Finding], dict]:
    """Balance and deadlock of CrossCoreSetFlag/WaitFlag across the cores of one block, and for each
    core the cross-core ordering: {core key: {event prefix: set of own set indices}} (a wait at
    the end of the prefix is released only after those sets of the same core)."""
    out: list[Finding] = []
    causal: dict = {}
    any_events = [(r, ev) for r in runs.values() for seq, _ in r.xseqs for ev in seq if ev[0] != "syncall"]
    if not any_events:
        return out, causal, {}
    if any(ev[0] == "syncall" for r in runs.values() for seq, _ in r.xseqs for ev in seq):
        for ln in sorted({ev[4] for _, ev in any_events if ev[1] != 4 and as_int(ev[3]) in (11, 12, 13, 14)}):
            out.append(Finding(ln, "warning", "cross-core-id",
                               "cross-core flag ids 11-14 are the ones SyncAll uses (CrossCoreSetFlag page): in a "
                               "kernel that calls SyncAll, use other ids"))
    if not plan.mix:
        seen = set()
        for _, ev in any_events:
            if ev[4] in seen:
                continue
            seen.add(ev[4])
            out.append(Finding(ev[4], "error", "cross-core-kernel-type",
                               f"Cross-core flags in a kernel declared {plan.how}: with KERNEL_TYPE_AIV_ONLY/"
                               "AIC_ONLY (or __vector__/__cube__) the hardware does not start the cross-core "
                               "scheduler, so the flag never arrives; declare the kernel __mix__(1, 2) (or "
                               "KERNEL_TYPE_MIX_AIV_1_0 / MIX_AIC_1_x)"))
        return out, causal, {}
    cores = []
    if "AIC" in plan.cores:
        cores.append(("AIC", 0))
    if "AIV" in plan.cores:
        cores.extend(("AIV", s) for s in range(plan.ratio))
    seqs = {}
    for key in cores:
        r = runs.get(key)
        distinct = {}
        for seq, assume in (r.xseqs if r else []):
            k = (seq, repr(assume))
            if k not in distinct and len(distinct) < 24:
                distinct[k] = (seq, assume)
        seqs[key] = list(distinct.values()) or [((), ({}, {}, {}))]
    combos = itertools.product(*[seqs[k] for k in cores])
    reported = set()
    first_kn = None
    simulated = 0
    for n, combo in enumerate(combos):
        if n >= 20000 or simulated >= 256:
            break
        assumes = [a for _, a in combo]
        if not all(_consistent(x, y) for x, y in itertools.combinations(assumes, 2)):
            continue
        combo_seqs = dict(zip(cores, [s for s, _ in combo], strict=True))
        simulated += 1
        fds, cz, wk = _simulate(combo_seqs, plan, arch)
        if first_kn is None:
            first_kn = wk
        for fd in fds:
            k = (fd.line, fd.check, fd.message)
            if k not in reported:
                reported.add(k)
                out.append(fd)
        for key, waits in cz.items():
            seq = combo_seqs[key]
            dst = causal.setdefault(key, {})
            for i, own in waits.items():
                pre = seq[:i + 1]
                dst[pre] = dst[pre] & own if pre in dst else set(own)
    return out, causal, first_kn or {}


def _simulate(seqs: dict, plan: KernelPlan, arch: str) -> tuple[list[Finding], dict]:
    """Run the cores' set/wait sequences against the documented counter semantics. Also returns,
    per core, which of its own sets each of its waits is (transitively) released by."""
    pos = dict.fromkeys(seqs, 0)
    counters: dict = {}  # (core key, space, id) -> [(set line, knowledge)]
    partial: dict = {}  # (mode, id, setter kind) -> {core key: [knowledge, ...]}
    aivs = [k for k in seqs if k[0] == "AIV"]
    out: list[Finding] = []
    know = {k: frozenset() for k in seqs}  # sets (core key, index) each core knows have happened
    causal: dict = {k: {} for k in seqs}
    waitkn: dict = {k: {} for k in seqs}

    def inc(target, space, ident, line, kn):
        lst = counters.setdefault((target, space, ident), [])
        lst.append((line, kn))
        if len(lst) > 15:
            out.append(Finding(line, "error", "cross-core-overflow",
                               f"CrossCoreSetFlag: the counter of flag {ident} on the {_cname(target)} exceeds 15 "
                               "outstanding sets (its waits do not keep up): the hardware reports an error"))

    def group_set(mode, ident, key, line, members, targets, kn):
        st = partial.setdefault((mode, ident, key[0]), {})
        st.setdefault(key, []).append(kn)
        if all(st.get(mk) for mk in members):
            total = frozenset()
            for mk in members:
                total |= st[mk].pop(0)
            for t in targets:
                inc(t, "n", ident, line, total)

    def do_set(key, ev, idx):
        _, mode, _pipe, ident, line = ev
        kn = know[key] | {(key, idx)}
        if mode == 4:
            if key[0] == "AIC":
                iv = as_int(ident)
                if iv is not None and iv >= 16:
                    tgt = ("AIV", 1)
                    ident2 = iv - 16
                else:
                    tgt, ident2 = ("AIV", 0), ident
                if tgt in seqs:
                    inc(tgt, "m4", ident2, line, kn)
            else:
                iv = as_int(ident)
                ident2 = iv + 16 * key[1] if iv is not None else (ident, key[1])
                inc(("AIC", 0), "m4", ident2, line, kn)
        elif mode == 0:
            same = [k for k in seqs if k[0] == key[0]]
            group_set(0, ident, key, line, same, same, kn)
        elif mode == 1:
            group_set(1, ident, key, line, aivs, aivs, kn)
        elif mode == 2:
            if key[0] == "AIC":
                for a in aivs:
                    inc(a, "n", ident, line, kn)
            else:
                group_set(2, ident, key, line, aivs, [("AIC", 0)] if ("AIC", 0) in seqs else [], kn)
        know[key] = kn

    def can_wait(key, ev, idx):
        _, mode, _pipe, ident, line = ev
        space = "m4" if mode == 4 else "n"
        lst = counters.get((key, space, ident))
        if lst:
            _, kn = lst.pop(0)
            know[key] = know[key] | kn
            causal[key][idx] = {j for (k, j) in kn if k == key}
            waitkn[key][idx] = kn
            return True
        return False

    progress = True
    while progress:
        progress = False
        for key, seq in seqs.items():
            while pos[key] < len(seq):
                ev = seq[pos[key]]
                if ev[0] == "syncall":
                    pos[key] += 1
                elif ev[0] == "set":
                    do_set(key, ev, pos[key])
                    pos[key] += 1
                elif can_wait(key, ev, pos[key]):
                    pos[key] += 1
                else:
                    break
                progress = True
    blocked = {k: seqs[k][pos[k]] for k in seqs if pos[k] < len(seqs[k])}
    if blocked:
        for key, ev in blocked.items():
            _, mode, _pipe, ident, line = ev
            later_sets = any(e[0] == "set" and e[3] == _peer_id(ident, e, key) for k2, s in seqs.items()
                             for e in s[pos[k2]:] if k2 != key or True)
            what = "waits for the other cores, which are themselves waiting (a deadlock)" if later_sets else \
                "has no CrossCoreSetFlag left that would release it"
            out.append(Finding(line, "error", "cross-core-deadlock",
                               f"CrossCoreWaitFlag{'<4, ...>' if mode == 4 else ''}({ident}) on the {_cname(key)} "
                               f"{what}: the kernel would hang; every wait needs a matching CrossCoreSetFlag on the "
                               f"core(s) that release it (mode 2: the AIC's set releases each AIV, both AIVs' sets "
                               f"release the AIC; mode 4: one AIC <-> one AIV)"))
    else:
        for (target, space, ident), lines in counters.items():
            for line, _kn in lines:
                out.append(Finding(line, "error", "cross-core-unmatched",
                                   f"CrossCoreSetFlag({ident}) reaching the {_cname(target)} is never waited there "
                                   f"(one more set than waits{' in mode 4' if space == 'm4' else ''}): the counter "
                                   "stays raised after the kernel; add the matching CrossCoreWaitFlag"))
        for (mode, ident, kind), st in partial.items():
            if any(v for v in st.values()):
                line = next((e[4] for s in seqs.values() for e in s if e[0] == "set" and e[1] == mode and
                             e[3] == ident), 0)
                out.append(Finding(line, "error", "cross-core-unmatched",
                                   f"CrossCoreSetFlag<{mode}, ...>({ident}): not every core of the group sets it "
                                   f"as often (mode {mode} counts a set once every participating "
                                   f"{'AIV' if kind == 'AIV' else 'core'} has set)"))
    return out, causal, waitkn


def _cross_core_data(machines: dict, waitkn: dict) -> dict:
    """For each core: the other cores' shared-memory accesses, and which of them each of its waits
    makes visible (those the remote sets in the wait's knowledge had completed)."""
    out = {}
    xacc = {k: {x.xid: x for x in m.xaccesses} for k, m in machines.items()}
    for key, m in machines.items():
        remote: dict = {}
        for k2, m2 in machines.items():
            if k2[0] == key[0]:
                continue  # AIV0 <-> AIV1 sharing is not checked
            for x in m2.xaccesses:
                remote.setdefault(x.region.root, []).append(x)
        reveal: dict = {}
        seq = tuple(m.xevents)
        for idx, kn in waitkn.get(key, {}).items():
            vis = []
            for (k2, j) in kn:
                if k2[0] == key[0] or k2 not in machines:
                    continue
                for xid in machines[k2].xcap.get(j, ()):
                    x = xacc[k2].get(xid)
                    if x is not None:
                        vis.append(x)
            reveal[seq[:idx + 1]] = vis
        out[key] = {"remote": remote, "reveal": reveal}
    return out


def _cross_core_races(machines: dict, seen: set | None = None) -> list[Finding]:
    """Pairs of conflicting accesses of different cores that no flag chain orders either way."""
    ordered = set()
    for m in machines.values():
        ordered |= m.x_ordered
    out = []
    seen = set() if seen is None else seen
    for m in machines.values():
        for x, y in m.x_candidates:  # x: the other core's access, y: this core's
            if (y.xid, x.xid) in ordered or (x.xid, y.xid) in ordered:
                continue
            w, rd = (x, y) if x.kind == "W" else (y, x)
            k = frozenset({(w.line, _core_text(w)), (rd.line, _core_text(rd))})
            if k in seen:
                continue
            seen.add(k)
            both_w = x.kind == y.kind == "W"
            mem = _mem_text(w.region.root)
            out.append(Finding(rd.line if not both_w else y.line, "error", "cross-core-race",
                               f"'{rd.op}' on the {_core_text(rd)} {'writes' if both_w else 'reads'} "
                               f"{rd.region.name} ({mem}) and '{w.op}' on the {_core_text(w)} (line {w.line}) "
                               f"writes it, with no CrossCoreSetFlag/CrossCoreWaitFlag chain ordering the two: "
                               f"the {_core_text(w)} must set a flag on PIPE_{w.pipe} after line {w.line} that the "
                               f"{_core_text(rd)} waits for before line {rd.line} (and the reverse for the reuse "
                               "of the buffer)"))
    return out


MAX_DATA_COMBOS = 24


def _data_races(runs: dict, plan: KernelPlan, progs: dict, parsed_by_core: dict, name: str, arch: str,
                auto_sync: bool, notes: set) -> list[Finding]:
    keys = list(runs)
    recs = [runs[k].records or [] for k in keys]
    if not all(recs):
        return []
    out: list[Finding] = []
    seen: set = set()
    done = 0
    for combo in itertools.product(*recs):
        if not all(_consistent(a[2], b[2]) for a, b in itertools.combinations(combo, 2)):
            continue
        if done >= MAX_DATA_COMBOS:
            notes.add(f"{name}: the data shared between the cores was checked on the first {done} combinations "
                      "of paths")
            break
        done += 1
        machines = {k: rec[1] for k, rec in zip(keys, combo, strict=True)}
        _, cz, wk = _simulate({k: tuple(m.xevents) for k, m in machines.items()}, plan, arch)
        xdata = _cross_core_data(machines, wk)
        causal = {k: {tuple(machines[k].xevents)[:i + 1]: own for i, own in waits.items()} for k, waits in cz.items()}
        replayed = {}
        for k, rec in zip(keys, combo, strict=True):
            core, sub = k
            prog = progs[core]
            f = next(f for f in prog.entries if f.name == name and f.body is not None)
            replayed[k] = replay(prog, parsed_by_core[core], f, plan, arch, core, sub, auto_sync, rec[0],
                                 causal.get(k), xdata.get(k))
        out.extend(_cross_core_races(replayed, seen))
    return out


def _core_text(x) -> str:
    return x.core if x.core == "AIC" else f"AIV{x.xid[1]}"


def _mem_text(root: tuple) -> str:
    if root[0] == "GM":
        return f"GM '{root[1]}'"
    if root[0] == "UB@AIV":
        return f"UB of AIV{root[1]}"
    return "L1 of the AIC"


def _peer_id(ident, ev, key):
    return ident


def _cname(key) -> str:
    core, sub = key
    return "AIC" if core == "AIC" else f"AIV{sub}"


# ---------------------------------------------------------------------------------------------


@dataclass
class KernelResult:
    plan: KernelPlan
    findings: list  # (Finding, note, core label)
    paths: dict
    notes: set


def check_kernels(parsed_by_core: dict, arch: str, auto_sync: bool, max_paths: int = DEFAULT_MAX_PATHS,
                  kernel: str | None = None) -> list[KernelResult]:
    """parsed_by_core: {"AIC": ParsedSource, "AIV": ParsedSource} (the source preprocessed per core)."""
    progs = {c: build_program(p.items) for c, p in parsed_by_core.items()}
    names = []
    for prog in progs.values():
        for f in prog.entries:
            if f.name not in names and f.body is not None:
                names.append(f.name)
    if kernel is not None:
        names = [n for n in names if n == kernel]
    results = []
    for name in names:
        plan = None
        for core in ("AIV", "AIC"):
            prog = progs.get(core)
            fs = [f for f in prog.entries if f.name == name and f.body is not None] if prog else []
            if fs:
                plan = plan_kernel(fs[0], prog)
                break
        def run_all(causal: dict | None, xdata: dict | None = None, plan=plan, name=name) -> dict:
            runs = {}
            for core in plan.cores:
                prog = progs[core]
                fs = [f for f in prog.entries if f.name == name and f.body is not None]
                if not fs:
                    continue
                subs = range(plan.ratio) if core == "AIV" else range(1)
                for sub in subs:
                    runs[(core, sub)] = run_core(prog, parsed_by_core[core], fs[0], plan, arch, core, sub, auto_sync,
                                                 max_paths, (causal or {}).get((core, sub)),
                                                 (xdata or {}).get((core, sub)))
            return runs

        runs = run_all(None)
        xfindings, causal, waitkn = cross_core_findings(plan, runs, arch)
        notes: set = set()
        has_x = any(ev[0] != "syncall" for r in runs.values() for seq, _ in r.xseqs for ev in seq)
        if len(runs) > 1 and (has_x or any(r.machine and r.machine.xaccesses for r in runs.values())):
            # again, with the order the cross-core flags give each core
            runs1 = runs
            runs = run_all(causal)
            # the data the cores share: per consistent combination of one path per core, replay
            # each path with the other cores' accesses made visible by its waits
            xfindings.extend(_data_races(runs1, plan, progs, parsed_by_core, name, arch, auto_sync, notes))
        for (core, _sub), r in runs.items():
            notes |= r.notes
            if r.truncated:
                notes.add(f"{name} on the {core}: only the first {r.paths} paths were explored (path or step "
                          "budget)")
        findings = []
        multi = len(plan.cores) > 1
        for key, r in runs.items():
            other_foreign = [w for k2, r2 in runs.items() if k2[0] != key[0] for w in r2.foreign]
            # 'never written' only when no path that reaches the read wrote the buffer before it
            always = {ln for lines in r.nw_lines for ln in lines
                      if all(ln in nw for rl, nw in zip(r.read_lines, r.nw_lines, strict=True) if ln in rl)}
            for fd, note in r.findings:
                if fd.check == "read-never-written" and (fd.line not in always or fd.region is not None and any(
                        covered_by_write(fd.region, w) for w in other_foreign)):
                    continue
                findings.append((fd, note, key[0] if multi else ""))
        for fd in xfindings:
            findings.append((fd, "", ""))
        results.append(KernelResult(plan, findings, {f"{k[0]}{k[1] if k[0] == 'AIV' and plan.ratio > 1 else ''}":
                                                     r.paths for k, r in runs.items()}, notes))
    return results
