"""unit_flag: let an accumulator's Fixpipe stream out behind the K loop's last Mmad (UnitFlag page).

Run by insert_sync before it places flags. Where a statement list holds a K loop whose only
accesses to an L0C accumulator ``C`` are Mmads at its top level, the first overwriting ``C`` on
the loop's first trip and the others accumulating (or, outside a loop, one overwriting Mmad or
an unrolled chain of them: the first overwriting, the others accumulating), followed by the
Fixpipe(s) reading ``C`` with nothing else touching ``C`` between, the last of those Mmads gets
unitFlag 2 (3 on the loop's last trip; 3 outside a loop), the others 2, and the Fixpipe 3. L0C
then carries one unit flag per 512-byte block: the Fixpipe reads each block once the last Mmad
wrote it, and a later Mmad with unitFlag writes each block once the Fixpipe read it. So
insert_sync places no SetFlag/WaitFlag<M_FIX> for that Mmad -> Fixpipe order and no FIX -> M
flag for the next tile's Mmad (both sides carry unit flags), and the pair gets a
row of its own in the sync table (event ``unitFlag``).

Conditions, each needed for the flags to balance:
* every Fixpipe reads exactly the blocks the Mmad writes: its source row stride is the Mmad's
  padded M. A window with a runtime tail (or smaller than the tile) reads fewer blocks: then
  ``SetFixPipeConfig(C, true)`` after the last Fixpipe clears the rest (UnitFlag page, the
  region-mismatch case), so the next Mmad does not wait for blocks nobody reads;
* Fixpipes reading the same rows cannot share the blocks' release: several Fixpipes are marked only
  when they read disjoint rows (the two AIV halves of FixpipeToPeerUb);
* a K loop with a runtime trip count may run no trip: the Fixpipe's unitFlag is then 0 (no Mmad
  marked anything; nothing to wait for);
* that reset clears every block of L0C, other accumulators' too: a chain that needs it is marked
  only when it is the kernel's one unit-flag chain (else another accumulator's blocks, marked by its
  last Mmad and not yet read -- FA backward's dK/dV after the loop -- would be cleared under it, and
  its Fixpipe would wait forever); otherwise it keeps its SetFlag/WaitFlag pairs.
"""

from __future__ import annotations

import dataclasses

from ascend_backend.ir import (
    AscOp,
    FirstIteration,
    FixpipeToGmArch3510,
    FixpipeToGmV220,
    FixpipeToPeerUb,
    FixpipeToPeerUbDual,
    FlagRecord,
    If,
    Kernel,
    Loop,
    LoopKind,
    Mmad,
    UnitFlagLast,
    UnitFlagReset,
    UnitFlagUse,
    static_int,
    walk,
)

_FIXPIPES = (FixpipeToGmV220, FixpipeToGmArch3510, FixpipeToPeerUb, FixpipeToPeerUbDual)


def _touches(item, buf: str) -> list:
    """The ops inside ``item`` that read or write ``buf``."""
    return [x for x in walk([item]) if isinstance(x, AscOp) and (buf in x.reads or buf in x.writes)]


def _reads_whole(fix, mm: Mmad) -> bool | None:
    """Does the Fixpipe read every block the Mmad writes? True: yes; False: a subset (a reset
    follows it); None: its layout differs (no unit flags)."""
    # a unit flag covers 512 B of L0C: 8 rows of a 16-column block of 4-byte accumulators; the Mmad
    # writes whole 16 x 16 fractals, the Fixpipe reads the rows it moves
    m16 = (mm.m + 15) // 16 * 16
    if isinstance(fix, FixpipeToGmV220 | FixpipeToGmArch3510):
        if fix.src_stride != m16:
            return None
        w = fix.window
        full = (not w.valid_rows.tail and not w.valid_cols.tail and (w.valid_rows.n + 7) // 8 * 8 == m16
                and (w.valid_cols.n + 15) // 16 == (mm.n + 15) // 16)
        return full
    if fix.rows != m16 or (fix.cols + 15) // 16 != (mm.n + 15) // 16:
        return None
    return True


class _Marker:
    def __init__(self, kernel: Kernel, partial_ok: bool = True) -> None:
        self.kernel = kernel
        self.partial_ok = partial_ok  # mark chains whose Fixpipe reads fewer blocks (reset after)
        self.records: list[FlagRecord] = []
        self.resets: dict[int, str] = {}  # id(last Fixpipe) -> accumulator to reset after it

    def block(self, items: list) -> list:
        items = [self.inner(s) for s in items]
        for j, fix in enumerate(items):
            if not isinstance(fix, _FIXPIPES) or fix.unit_flag is not None:
                continue
            self.chain(items, j)
        out = []
        for x in items:
            out.append(x)
            if id(x) in self.resets:
                n = x.unit_flag.flag
                why = ("the Fixpipe may read fewer blocks than the Mmad marked (a tail tile): clear the rest "
                       "for the next Mmad (SetFixPipeConfig page, isUnitFlag)")
                out.append(UnitFlagReset(acc=self.resets.pop(id(x)), loc=x.loc, flag=n, reason=why))
        return out

    def inner(self, s):
        if isinstance(s, Loop):
            return dataclasses.replace(s, body=self.block(s.body))
        if isinstance(s, If):
            return dataclasses.replace(s, then_body=self.block(s.then_body), else_body=self.block(s.else_body))
        return s

    def chain(self, items: list, j: int) -> None:
        acc = items[j].src
        # the Fixpipes of this accumulator from j on (nothing else touching it between them)
        fixes = [j]
        for k in range(j + 1, len(items)):
            ops = _touches(items[k], acc)
            if not ops:
                continue
            if isinstance(items[k], _FIXPIPES) and items[k].src == acc:
                fixes.append(k)
                continue
            break
        # what wrote it last: a K loop of one Mmad, or one Mmad
        i = next((i for i in range(j - 1, -1, -1) if _touches(items[i], acc)), None)
        if i is None:
            return
        src = items[i]
        loop = None
        if isinstance(src, Loop):
            if src.kind is LoopKind.WHILE or src.skewed or src.var is None:
                return
            # the K loop's Mmads into acc, all at its top level: the first overwrites on the first
            # trip, the others accumulate (a K step split over ping/pong L0 buffers)
            inside = _touches(src, acc)
            if not inside or not all(isinstance(x, Mmad) and x.dst == acc and any(x is y for y in src.body)
                                     and (x.m, x.n) == (inside[0].m, inside[0].n) for x in inside):
                return
            first = inside[0].init
            if not (isinstance(first, FirstIteration) and tuple(first.loop_vars) == (src.var,)) \
                    or any(x.init is not False for x in inside[1:]):
                return
            mms = inside
            loop = src
        elif isinstance(src, Mmad):
            # one overwriting Mmad, or an unrolled K chain at this level: the first overwrites,
            # the others accumulate (a K step split over ping/pong L0 buffers, unrolled)
            mms = []
            for x in reversed(items[:i + 1]):
                ops = _touches(x, acc)
                if not ops:
                    continue
                if not (isinstance(x, Mmad) and x.dst == acc and (x.m, x.n) == (src.m, src.n)):
                    return
                mms.insert(0, x)
                if x.init is True:
                    break
                if x.init is not False:
                    return
            if not mms or mms[0].init is not True:
                return
        else:
            return
        mm = mms[-1]  # the last Mmad of the chain (on the loop's last trip)
        if mm.dst != acc:
            return
        fx = [items[k] for k in fixes]
        whole = [_reads_whole(f, mm) for f in fx]
        if any(w is None for w in whole):
            return
        if len(fx) > 1 and not (all(isinstance(f, FixpipeToPeerUb) for f in fx)
                                and len({f.sub for f in fx}) == len(fx)):
            return  # Fixpipes reading the same blocks: not handled
        if isinstance(fx[0], FixpipeToPeerUb):
            if any(f.half % 8 for f in fx):
                return  # halves sharing a block
            partial = sum(f.half for f in fx) < fx[0].rows
        else:
            partial = not whole[0]
        if loop is not None and static_int(loop.extent) == 0:
            return
        if partial and not self.partial_ok:
            return
        n = len(self.records)
        fix_text = fx[-1].text if len(fx) == 1 else f"{len(fx)} Fixpipes {acc} -> {fx[0].target}"
        if loop is not None:
            last = static_int(loop.start) + static_int(loop.extent) - 1 \
                if static_int(loop.start) is not None and static_int(loop.extent) is not None \
                else loop.start + loop.extent - 1
            value = UnitFlagLast(loop.var, last)
            ran = None if static_int(loop.extent) is not None else loop.extent > 0
            m_reason = (f"3 on the K loop's last trip marks {acc}'s blocks full for "
                        f"'{fix_text}' (2 on the others keeps them writable), instead of SetFlag/WaitFlag<M_FIX>")
        else:
            value, ran = 3, None
            m_reason = (f"3 marks {acc}'s blocks full for '{fix_text}', instead of "
                        f"SetFlag/WaitFlag<M_FIX>")
        f_reason = (f"reads each block of {acc} once '{mm.text}' marked it (instead of "
                    f"SetFlag/WaitFlag<M_FIX>) and clears it, so the next Mmad with unitFlag writes behind this "
                    f"read (instead of SetFlag/WaitFlag<FIX_M>)")
        other_reason = (f"2: writes {acc} once its blocks are free (the K chain's last Mmad gives 3), instead of "
                        f"SetFlag/WaitFlag<FIX_M>")
        new = {id(x): dataclasses.replace(x, unit_flag=UnitFlagUse(value, n, m_reason) if x is mm
                                          else UnitFlagUse(2, n, other_reason)) for x in mms}
        if loop is not None:
            items[i] = dataclasses.replace(loop, body=[new.get(id(x), x) for x in loop.body])
        else:
            items[:i + 1] = [new.get(id(x), x) for x in items[:i + 1]]
        for k in fixes:
            items[k] = dataclasses.replace(items[k], unit_flag=UnitFlagUse(3, n, f_reason, ran))
        if partial:
            self.resets[id(items[fixes[-1]])] = acc
        kind = "unit flag RAW (Mmad 2, last 3; Fixpipe 3), WAR of the next Mmad"
        if partial:
            kind += "; reset after a partial read"
        self.records.append(FlagRecord(index=n, event="unitFlag", event_id="2/3", producer=mm.text,
                                       consumer=fix_text, buffer=acc, kind=kind, producer_loc=mm.loc,
                                       consumer_loc=fx[0].loc))


def mark_unit_flags(kernel: Kernel, arch) -> tuple[Kernel, list[FlagRecord]]:
    """Mark the accumulators' Mmad -> Fixpipe chains with unit flags (see the module docstring).
    Returns the kernel and its unit-flag sync-table rows (indices from 0, as the ops' flag)."""
    if not arch.unit_flag:
        return kernel, []
    m = _Marker(kernel)
    body = m.block(kernel.body)
    if len(m.records) > 1 and any(isinstance(x, UnitFlagReset) for x in walk(body)):
        m = _Marker(kernel, partial_ok=False)  # a reset would clear the other chains' marks too
        body = m.block(kernel.body)
    return kernel.replace(body=body), m.records
