"""plan_memory: give every on-chip buffer a static byte offset and check the arch's budget.

Needs: all buffers known with scope, layout and slot count (after lowering and multi-buffering).
Establishes: every UB/L1/L0A/L0B/L0C buffer has an offset aligned for its memory, and the
buffers of each memory fit its usable capacity on the target arch. Otherwise raises a
MemoryBudgetError listing every buffer of that memory with its size and DSL line, the capacity,
and what to change.
"""

from __future__ import annotations

from ascend_backend.arch import ALIGN
from ascend_backend.errors import InternalCompilerError, MemoryBudgetError
from ascend_backend.ir import Kernel, Program, Scope

MEMORIES = (Scope.L1, Scope.L0A, Scope.L0B, Scope.L0C, Scope.UB)


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def plan_kernel_memory(kernel: Kernel, arch) -> Kernel:
    buffers = kernel.copy_buffers()
    used: dict = {}
    for mem in MEMORIES:
        off = 0
        members = [b for b in buffers.values() if b.scope == mem]
        for b in members:
            off = _align(off, ALIGN[mem])
            b.offset = off
            off += _align(b.nbytes, ALIGN[mem])
        used[mem] = off
        cap = arch.capacity[mem]
        if off > cap:
            raise MemoryBudgetError(
                f"{mem} needs {off} bytes but holds {cap} bytes on {arch.name}",
                table=budget_table(members, mem, cap, arch.name),
                loc=max(members, key=lambda b: b.nbytes).loc,
                hint=_hint(mem, members),
            )
    return kernel.replace(buffers=buffers, memory_used=used)


def plan_memory(program: Program) -> Program:
    """Bump-allocate each memory in buffer order (user buffers first, then temporaries)."""
    out = program.map_kernels(lambda k, lc, p: plan_kernel_memory(k, p.arch))
    verify_memory(out)
    return out


def budget_table(members: list, mem: str, cap: int, arch: str) -> str:
    rows = [f"  {mem} on {arch}: capacity {cap} bytes ({cap // 1024} KB)",
            f"  {'buffer':<24} {'shape':<18} {'dtype':<9} {'slots':>5} {'bytes':>9}  defined at"]
    total = 0
    for b in sorted(members, key=lambda b: -b.nbytes):
        total += b.nbytes
        shape = "x".join(str(s) for s in b.shape)
        where = str(b.loc) if b.loc else f"(compiler: {b.role or b.kind})"
        rows.append(f"  {b.name:<24} {shape:<18} {b.dtype:<9} {b.slots:>5} {b.nbytes:>9}  {where}")
    rows.append(f"  {'total':<24} {'':<18} {'':<9} {'':>5} {total:>9}  ({100.0 * total / cap:.0f}% of capacity)")
    return "\n".join(rows)


def _hint(mem: str, members: list) -> str:
    big = max(members, key=lambda b: b.nbytes)
    staged = [b for b in members if b.slots > 1]
    text = f"reduce the tile sizes (the largest is '{big.name}', {big.nbytes} bytes)"
    if staged:
        text += f", or use fewer pipeline stages (num_stages; '{staged[0].name}' has {staged[0].slots} slots)"
    if mem is Scope.UB:
        text += ", or compute in float16 instead of float32 where precision allows"
    return text


def verify_memory(program: Program) -> None:
    """Offsets aligned, inside capacity, and no two buffers of one memory overlap."""
    for _, _, kernel in program.kernels():
        for mem in MEMORIES:
            spans = sorted((b.offset, b.offset + b.nbytes, b.name) for b in kernel.buffers.values() if b.scope == mem)
            for (_, e0, n0), (s1, _, n1) in zip(spans, spans[1:], strict=False):
                if s1 < e0:
                    raise InternalCompilerError(f"{n0} and {n1} overlap in {mem}", stage="plan_memory")
            for s, e, n in spans:
                if s % ALIGN[mem] or e > program.arch.capacity[mem]:
                    raise InternalCompilerError(f"{n} misplaced in {mem}", stage="plan_memory")
