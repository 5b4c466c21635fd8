"""The unit every pass takes and returns: a ``Program`` of one or more launches, each running a
kernel on one or both core kinds, with the tiles that cross between them.

    Program(name, arch, params)
      launches: [Launch]                 several T.Kernel of one PrimFunc run in order
        grid: [GridAxis]
        kernels: {Core | None: Kernel}   None before partition; then AIC and/or AIV
        transfers: [Transfer]            tiles crossing between the AIC and the AIVs
        workspace: Workspace | None      GM bytes the launcher allocates for transfers by GM

Nothing travels in untyped attributes: what a later pass needs is a field here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import SrcLoc
from .enums import Core, Direction, KernelType, Route, Scope
from .nodes import Buffer, FlagRecord, GridAxis, If, Loop, Param, ShapeVar, static_int


@dataclass(frozen=True)
class RowSplit:
    """The two AIVs share the rows of every row-block tile: AIV ``var`` (GetSubBlockIdx) takes rows
    [var * R/2, (var + 1) * R/2) of a tile of R rows. ``rows`` is R/2 when all crossing tiles have
    one height R, else None (each tile splits at its own height)."""

    var: Any
    rows: int | None


@dataclass
class Kernel:
    """The program of one core kind in one launch (``core`` None before partition)."""

    core: Core | None
    buffers: dict
    body: list
    flags: list = field(default_factory=list)  # the sync table rows (FlagRecord) of this core
    memory_used: dict = field(default_factory=dict)  # Scope -> bytes (plan_memory)
    row_split: RowSplit | None = None
    # TVM buffers (of loads and stores inside expressions) whose name differs from their buffer's
    # name here (the frontend renames clashing allocations); every other one is found by its name.
    names: dict = field(default_factory=dict)

    def buffer_of(self, tvm_buffer) -> Buffer:
        """The buffer a TVM BufferLoad/BufferStore refers to."""
        return self.buffers[self.names.get(tvm_buffer, str(tvm_buffer.name))]

    def replace(self, **changes: Any) -> Kernel:
        return dataclasses.replace(self, **changes)

    def copy_buffers(self) -> dict:
        return {k: dataclasses.replace(v) for k, v in self.buffers.items()}


@dataclass
class Transfer:
    """A tile that crosses between the core kinds.

    ``tile`` is the producer's buffer; ``target`` the consumer's (the same name, or for a
    Cube -> Vector product that the AIVs add into their own copy, a fresh ``<tile>_part``).
    The route pass picks ``route`` (the workspace or the on-chip path) and the logical cross-core
    flag ids (0-10): ``ready`` (several transfers may share one, see route.py) and ``free``
    (None where the consumer never needs to release the tile).
    """

    index: int
    tile: str
    target: str
    direction: Direction
    ready: int | None = None  # set by route
    free: int | None = None  # set by route (None: no "free" flag)
    loc: SrcLoc | None = None
    loop: int | None = None  # the partition's id of the innermost loop carrying it (None: straight-line)
    route: Route | None = None
    ws: str | None = None  # the GM workspace buffer carrying it (route WORKSPACE): ws_<tile>, unique
    skewed: bool = False  # route: it crosses inside a skewed loop (Cube/Vector overlap, see passes/skew.py)
    lead: int = 1  # route: the steps that loop's part A runs ahead of its part B (lead + 1 copies in flight)
    slots: int = 1  # copies of the tile, one per step in turn (route for the workspace, multi_buffer on chip)
    dual: bool = False  # route: on chip Cube -> Vector in one dual-destination Fixpipe (else one per AIV half)

    @property
    def on_chip(self) -> bool:
        return self.route is Route.ON_CHIP


@dataclass
class Workspace:
    """A GM buffer the launcher allocates (the kernel's last argument): per workspace buffer its
    byte offset. Offsets and size are ints, or PrimExprs of the arguments when the launch's grid
    is sized at call time (one region per block)."""

    offsets: dict
    nbytes: Any


@dataclass
class Launch:
    grid: list
    kernels: dict
    transfers: list = field(default_factory=list)
    workspace: Workspace | None = None

    def replace(self, **changes: Any) -> Launch:
        return dataclasses.replace(self, **changes)

    @property
    def block_dim(self):
        """Blocks of the launch: an int, or a PrimExpr of the scalar arguments and shape variables
        when the grid is sized at call time (``static_block_dim`` is then None)."""
        n = 1
        for ax in self.grid:
            e = static_int(ax.extent)
            n = n * (e if e is not None else ax.extent)
        return n

    @property
    def static_block_dim(self) -> int | None:
        return static_int(self.block_dim)

    @property
    def kernel_type(self) -> KernelType:
        cores = set(self.kernels)
        if cores == {Core.AIC, Core.AIV}:
            return KernelType.MIX_AIC_1_2
        return KernelType.AIC_ONLY if cores == {Core.AIC} else KernelType.AIV_ONLY

    @property
    def mixed(self) -> bool:
        return self.kernel_type is KernelType.MIX_AIC_1_2

    def peer_targets(self, direction: Direction) -> list:
        """The consumer's tiles that the producer writes in place, for on-chip transfers one way:
        Cube -> Vector, tiles in the AIVs' UB; Vector -> Cube, tiles in the AIC's L1."""
        return list(dict.fromkeys(t.target for t in self.transfers if t.on_chip and t.direction is direction))

    def fixed_tiles(self, core: Core) -> set:
        """Tiles of ``core`` that keep one fixed address (multi_buffer leaves them alone): the AIVs'
        UB tiles the AIC writes into; on the AIC, its L1 tiles the AIVs write into and the
        accumulators it Fixpipes into the AIVs' UB inside a skewed loop. (An accumulator that
        crosses in a loop that is not skewed may rotate through two L0C slots: only the AIC's own
        pipes touch it. In a skewed loop insert_sync's ordering of its reuse assumes one slot.)"""
        if core is Core.AIV:
            return set(self.peer_targets(Direction.C2V))
        skewed = {t.target for t in self.transfers if t.on_chip and t.direction is Direction.C2V and t.skewed}
        return skewed | set(self.peer_targets(Direction.V2C))


@dataclass
class Program:
    name: str
    arch: Any
    params: list
    launches: list
    source_file: str | None = None
    # Symbolic dimensions the callable derives from the tensors (scalar arguments of the entry).
    shape_vars: list = field(default_factory=list)
    # Window checks that need the symbolic dimensions' values (bounds.BoundsCheck), run per call.
    bounds_checks: list = field(default_factory=list)
    # T.alloc_global tensors: at the start of the workspace argument, before the launches' regions.
    globals: Workspace | None = None

    def replace(self, **changes: Any) -> Program:
        return dataclasses.replace(self, **changes)

    @property
    def launch(self) -> Launch:
        """The only launch (most kernels have one)."""
        if len(self.launches) != 1:
            from ..errors import UnsupportedError

            raise UnsupportedError(f"kernel '{self.name}' has {len(self.launches)} T.Kernel launches; this step "
                                   "handles one")
        return self.launches[0]

    def entry_name(self, n: int) -> str:
        """The C name of launch ``n``'s kernel entry: the program's name, or ``name_<n>`` when the
        PrimFunc has several launches."""
        return self.name if len(self.launches) == 1 else f"{self.name}_{n}"

    @property
    def workspace_bytes(self):
        """GM workspace the launcher passes as the last argument (0: none): an int, or a PrimExpr
        of the arguments when a launch's grid is sized at call time."""
        g = self.global_bytes
        sizes = [lc.workspace.nbytes for lc in self.launches if lc.workspace]
        if all(static_int(s) is not None for s in sizes):
            return g + max((static_int(s) for s in sizes), default=0)
        from tvm import tirx

        out = sizes[0]
        for s in sizes[1:]:
            out = tirx.max(out, s)
        return out + g if g else out

    @property
    def global_bytes(self) -> int:
        """Bytes of the T.alloc_global tensors (the start of the workspace argument)."""
        return self.globals.nbytes if self.globals else 0

    @property
    def has_workspace(self) -> bool:
        return bool(self.global_bytes) or any(lc.workspace for lc in self.launches)

    def entry_shape_vars(self) -> list:
        """The shape variables the kernel entry takes after the PrimFunc's parameters (those the
        PrimFunc does not take itself)."""
        return [v for v in self.shape_vars if not v.param]

    def buffer(self, name: str) -> Buffer:
        """A GM parameter's buffer."""
        for lc in self.launches:
            for k in lc.kernels.values():
                if name in k.buffers:
                    return k.buffers[name]
        raise KeyError(name)

    def param_buffers(self) -> list:
        """(Param, its Buffer or None) in argument order."""
        return [(p, self.buffer(p.buffer) if p.is_tensor else None) for p in self.params]

    def map_kernels(self, fn: Callable[[Kernel, Launch, Program], Kernel]) -> Program:
        """A new Program with ``fn`` applied to every kernel of every launch."""
        launches = [lc.replace(kernels={c: fn(k, lc, self) for c, k in lc.kernels.items()}) for lc in self.launches]
        return self.replace(launches=launches)

    def kernels(self) -> list:
        """(launch index, core, kernel) for every kernel."""
        return [(n, c, k) for n, lc in enumerate(self.launches) for c, k in lc.kernels.items()]


# ---------------------------------------------------------------- walking statement trees


def children(s) -> list:
    """The nested statement lists of a statement."""
    if isinstance(s, Loop):
        return [s.body]
    if isinstance(s, If):
        return [s.then_body, s.else_body]
    return []


def walk(body: list):
    """Every statement of a body, depth first (a loop before its body)."""
    for s in body:
        yield s
        for sub in children(s):
            yield from walk(sub)


def map_body(body: list, fn: Callable) -> list:
    """Rebuild a body, replacing each leaf statement (not Loop/If) by the list ``fn`` returns."""
    out = []
    for s in body:
        if isinstance(s, Loop):
            out.append(dataclasses.replace(s, body=map_body(s.body, fn)))
        elif isinstance(s, If):
            out.append(dataclasses.replace(s, then_body=map_body(s.then_body, fn),
                                           else_body=map_body(s.else_body, fn)))
        else:
            out.extend(fn(s))
    return out


def global_scratch(buffers: dict) -> Workspace | None:
    """The T.alloc_global tensors of ``buffers`` laid out at the start of the workspace argument,
    each at a 512-byte aligned offset (kept across the launches of the PrimFunc)."""
    from .enums import BufferKind

    offsets: dict = {}
    nbytes = 0
    for name, b in buffers.items():
        if b.kind is BufferKind.GLOBAL:
            offsets[name] = nbytes
            nbytes += (b.numel * b.dtype.bytes + 511) // 512 * 512
    return Workspace(offsets=offsets, nbytes=nbytes) if offsets else None


def fresh_name(base: str, taken) -> str:
    """``base``, or ``base_1``, ``base_2``, ... : the first not in ``taken`` (a compiler-made buffer
    never takes the name of one the user wrote)."""
    name, n = base, 1
    while name in taken:
        name = f"{base}_{n}"
        n += 1
    return name


def on_chip_scopes() -> tuple:
    return (Scope.L1, Scope.L0A, Scope.L0B, Scope.L0C, Scope.UB)


__all__ = ["Kernel", "Launch", "Program", "RowSplit", "Transfer", "Workspace", "children", "fresh_name", "map_body",
           "global_scratch", "walk",
           "GridAxis", "Param", "FlagRecord", "ShapeVar"]
