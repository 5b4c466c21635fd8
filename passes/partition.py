"""partition: decide which core kind runs each tile op, and split the launch into the programs of
the AIC (Cube) and the AIVs (Vector).

Needs: a launch fresh from the frontend (one kernel, ``core`` None, tile ops only).
Establishes: the launch's kernels are keyed by core kind -- {AIC} for a Cube-only kernel, {AIV}
for a Vector-only one, {AIC, AIV} for one that needs both -- and each holds only its own ops and
the loops around them. This is the one place that decides an op's side; later passes read it from
the kernel they run on. In a mixed launch every tile that crosses cores is a ``Transfer`` with
``Send``/``Receive`` points in the two bodies (the route pass decides how it travels and which
cross-core flags it needs).

Rules: a gemm is the Cube's; T.Parallel and reductions are the Vector's; a copy or fill goes
with the tiles it touches (gemm operands and accumulators: Cube; anything else: Vector). A gemm
accumulator that vector code also touches is "mixed": while only the Cube touches it, it stays in
L0C (a T.clear before a loop becomes the first Mmad's overwrite); at the first vector access it
crosses to the AIVs; a later gemm into it computes a fresh product that the AIVs add into their
copy (``acc += partial``), which is how FlashAttention's rescaled ``acc_o`` or a causal mask
written before ``T.gemm`` work. An accumulator a T.clear leaves zero on some paths only (every
gemm under an ``if``) and that vector code reads gets a scalar zero flag both cores keep: the
AIVs take the transfer, then zeros where the flag says no gemm ran since the clear. A gemm
operand produced by vector code crosses to the Cube before the first gemm that reads it after each
vector write (FlashAttention backward's ``dS`` feeds two gemms from one crossing).
"""

from __future__ import annotations

import dataclasses

from tvm import tirx

from ascend_backend.dtypes import DType
from ascend_backend.errors import InternalCompilerError, UnsupportedError
from ascend_backend.ir import (
    Buffer,
    BufferKind,
    CopyToPeerL1,
    CopyToPeerUb,
    CopyToPeerUbDual,
    Core,
    Direction,
    If,
    Kernel,
    Launch,
    Loop,
    ParallelStore,
    Print,
    Program,
    Receive,
    Region,
    ScalarStore,
    Send,
    SimtRegion,
    TileAccumulate,
    TileCopy,
    TileCumsum,
    TileFill,
    TileGemm,
    TileParallel,
    TileReduce,
    Transfer,
    fresh_name,
    map_body,
    walk,
)
from ascend_backend.ir.nodes import loaded_buffers


def parallel_buffers(op: TileParallel) -> set:
    """Every buffer a T.Parallel body stores to or loads from."""
    names = set()
    for ps in op.stores:
        names.add(ps.store.buffer.name)

        def visit(n, names=names):
            if isinstance(n, tirx.BufferLoad):
                names.add(n.buffer.name)

        tirx.stmt_functor.post_order_visit(ps.store.value, visit)
        for i in ps.store.indices:
            tirx.stmt_functor.post_order_visit(i, visit)
    return names


def tile_buffers(op) -> set:
    """Every buffer a tile-level op touches."""
    if isinstance(op, TileCopy):
        return {op.src.buffer, op.dst.buffer, *loaded_buffers(op.scale)}
    if isinstance(op, TileFill):
        return {op.dst.buffer}
    if isinstance(op, TileGemm):
        return {*op.inputs, op.c.buffer}
    if isinstance(op, TileReduce):
        return {op.src.buffer, op.dst.buffer}
    if isinstance(op, TileParallel):
        return parallel_buffers(op)
    if isinstance(op, TileAccumulate):
        return {op.dst, op.src}
    if isinstance(op, Send):
        return {op.tile}
    if isinstance(op, Receive):
        return {op.into}
    if isinstance(op, CopyToPeerUb | CopyToPeerUbDual):
        return {op.src}
    if isinstance(op, CopyToPeerL1):
        return {op.src.buffer}
    if isinstance(op, ScalarStore):
        return {op.buffer, *op.reads}
    if isinstance(op, Print):
        return set(op.reads)
    if isinstance(op, TileCumsum):
        return {op.src.buffer, op.dst.buffer}
    if isinstance(op, SimtRegion):
        return {*op.reads, *op.writes}
    return set()


def tile_writes(op) -> set:
    """The buffers a tile-level op (before partition) writes."""
    if isinstance(op, TileCopy | TileFill | TileReduce | TileCumsum):
        return {op.dst.buffer}
    if isinstance(op, TileGemm):
        return {op.c.buffer}
    if isinstance(op, TileParallel):
        return {ps.store.buffer.name for ps in op.stores}
    if isinstance(op, ScalarStore):
        return {op.buffer}
    if isinstance(op, SimtRegion):
        return set(op.writes)
    return set()


def is_whole(r: Region, shape: tuple) -> bool:
    """Does region ``r`` cover a tile of ``shape`` whole (base 0, the tile's extents)?"""
    return all(isinstance(b, int | tirx.IntImm) and int(b) == 0 for b in r.base) and \
        tuple(int(e) for e in r.extents) == tuple(int(x) for x in shape)


def full_region(buf: Buffer) -> Region:
    zero = tirx.IntImm("int32", 0)
    return Region(buf.name, (zero,) * len(buf.shape), tuple(buf.shape))


def _const_zero(v) -> bool:
    from .lower_parallel import const_value

    return const_value(v) == 0.0


class _Partitioner:
    def __init__(self, kernel: Kernel, zero_flags: dict | None = None) -> None:
        self.k = kernel
        self.bufs = kernel.buffers
        # accumulator -> the scalar local that says it is still zero (a T.clear with no gemm since;
        # see _zero_flagged): vector code that reads it then fills zeros instead of the transfer
        self.zero_flags: dict = zero_flags or {}
        self.ops = [s for s in walk(kernel.body) if not isinstance(s, Loop | If)]
        self.operands: set = set()
        self.accs: set = set()
        for s in self.ops:
            if isinstance(s, TileGemm):
                self.operands |= set(s.inputs)
                self.accs.add(s.c.buffer)
        self.vector_bufs: set = set()
        for s in self.ops:
            if isinstance(s, TileParallel | TileReduce | TileCumsum | SimtRegion):
                self.vector_bufs |= tile_buffers(s)
            elif isinstance(s, TileCopy):
                src, dst = s.src.buffer, s.dst.buffer
                gm = {n for n in (src, dst) if self.bufs[n].kind.in_gm}
                local = {src, dst} - gm
                if len(local) == 2 or (local and not (local & (self.operands | self.accs))):
                    self.vector_bufs |= local
            elif isinstance(s, TileFill) and s.dst.buffer not in self.accs | self._filled_operands():
                self.vector_bufs.add(s.dst.buffer)
        self.mixed_accs = self.accs & self.vector_bufs
        self.mixed_operands = self.operands & self.vector_bufs
        self._check_scales_from_gm()
        self.transfers: list[Transfer] = []
        self.extra_aiv: dict = {}
        self.loop_path: list = []
        # Vector-made gemm operands whose current value the Cube already holds: a second gemm on an
        # unchanged operand reads the copy the first one received instead of crossing again.
        self.on_cube: frozenset = frozenset()

    def _filled_operands(self) -> set:
        """Gemm operand tiles that only fills write and only gemms read (empty_loops' zero tiles): the
        Cube fills them in L1 itself (Fill, MTE2), no vector code or transfer involved."""
        out = set()
        for name in self.operands:
            users = [s for s in self.ops if name in tile_buffers(s)]
            if users and all(isinstance(s, TileFill) or (isinstance(s, TileGemm) and name in s.inputs) for s in users) \
                    and any(isinstance(s, TileFill) for s in users):
                out.add(name)
        return out

    def _check_scales_from_gm(self) -> None:
        """The MX scale tiles of a T.gemm_blockscaled reach the Cube only by a T.copy from GM: the
        Cube loads them into L0A_MX / L0B_MX with their operand; there is no vector path to them."""
        scales = {n for s in self.ops if isinstance(s, TileGemm) for n in s.scale_tiles}
        for s in self.ops:
            written = tile_writes(s) & scales
            if written and not (isinstance(s, TileCopy) and self.bufs[s.src.buffer].kind.in_gm):
                name = sorted(written)[0]
                raise UnsupportedError(
                    f"the MX scale tile '{name}' of a T.gemm_blockscaled is written here by vector code; the Cube "
                    "takes its scales only as they are in a global tensor", loc=s.loc,
                    hint=f"compute the scales into a float8_e8m0fnu global tensor (another kernel, or torch) and "
                    f"T.copy the window into '{name}'")

    @property
    def mixed(self) -> bool:
        return bool(self.mixed_accs or self.mixed_operands)

    def side(self, op) -> Core | None:
        """The core kind of a tile op (for mixed accumulators see ``op``); None for scalar code,
        which every core that needs it runs itself."""
        if isinstance(op, ScalarStore | Print):
            return None
        if isinstance(op, TileGemm):
            return Core.AIC
        if isinstance(op, TileParallel | TileReduce | TileCumsum | SimtRegion):
            return Core.AIV  # SIMT functions run on the AIV's Vector unit
        if isinstance(op, TileFill):
            cube = (self.accs - self.mixed_accs) | (self.operands - self.mixed_operands)
            return Core.AIC if op.dst.buffer in cube else Core.AIV
        if isinstance(op, TileCopy):
            local = [n for n in (op.src.buffer, op.dst.buffer) if not self.bufs[n].kind.in_gm]
            if not local:  # GM -> GM: staged through the UB of a vector core
                return Core.AIV
            if all(n in (self.operands - self.mixed_operands) or n in (self.accs - self.mixed_accs) for n in local):
                return Core.AIC
            return Core.AIV
        raise InternalCompilerError(f"partition: unexpected statement {type(op).__name__}", stage="partition")

    # ------------------------------------------------------------------ transfers
    def transfer(self, tile: str, direction: Direction, loc, accumulate: bool = False) -> Transfer:
        # One transfer per (tile, direction, kind): the dry runs over loop bodies meet the same
        # points again. A hand-over of an accumulator and a partial product added into it are
        # different transfers (retention: `o` crosses once as is, then as `o += s @ v`), each
        # received into its own tile with its own flags and workspace.
        for t in self.transfers:
            if t.tile == tile and t.direction is direction and (t.target != tile) == accumulate:
                return t
        target = tile
        if accumulate:
            target = fresh_name(f"{tile}_part", set(self.bufs) | set(self.extra_aiv))
            if target not in self.extra_aiv:
                b = self.bufs[tile]
                self.extra_aiv[target] = Buffer(name=target, shape=b.shape, dtype=b.dtype, kind=BufferKind.FRAGMENT,
                                                loc=b.loc, role=f"fresh gemm product added into {tile}")
        t = Transfer(index=len(self.transfers), tile=tile, target=target, direction=direction, loc=loc,
                     loop=self.loop_path[-1] if self.loop_path else None)
        self.transfers.append(t)
        return t

    def to_vector(self, name: str, loc, accumulate: bool) -> tuple[list, list]:
        t = self.transfer(name, Direction.C2V, loc, accumulate)
        aiv: list = [Receive(transfer=t.index, tile=name, into=t.target, loc=loc)]
        if accumulate:
            aiv.append(TileAccumulate(dst=name, src=t.target, loc=loc))
        return [Send(transfer=t.index, tile=name, loc=loc)], aiv

    def to_cube(self, name: str, loc) -> tuple[list, list]:
        t = self.transfer(name, Direction.V2C, loc)
        return [Receive(transfer=t.index, tile=name, into=name, loc=loc)], [Send(transfer=t.index, tile=name, loc=loc)]

    # ------------------------------------------------------------------ walk
    def body(self, items: list, state: dict) -> tuple[list, list, dict]:
        aic: list = []
        aiv: list = []
        for n, s in enumerate(items):
            if isinstance(s, If):
                # Dry runs: where each branch leaves each accumulator. A branch that moves one
                # (e.g. the first vector access of an accumulator cleared before the loop) decides
                # where it lives after the `if`: it is brought there before the `if`, so that both
                # branches start and end with it in one place.
                entry = self.on_cube
                _, _, st_then = self.body(s.then_body, dict(state))
                self.on_cube = entry
                _, _, st_else = self.body(s.else_body, dict(state))
                self.on_cube = entry
                target = dict(state)
                for name in sorted(self.mixed_accs):
                    moved = {st[name] for st in (st_then, st_else) if _home(st[name]) != _home(state[name])}
                    if len(moved) > 1:
                        raise UnsupportedError(
                            f"the two branches of this `if` leave the gemm accumulator '{name}' on different cores "
                            "(Cube / Vector)", loc=s.loc,
                            hint="touch the accumulator the same way in both branches, or move the T.gemm out of "
                            "the `if`")
                    if moved:
                        target[name] = moved.pop()
                branch = s.then_body if st_then != state else s.else_body
                a1, v1 = self.bring(state, target, branch, s.loc)
                aic += a1
                aiv += v1
                entry = self.on_cube
                a_then, v_then, st_then = self.body(s.then_body, dict(state))
                on_then, self.on_cube = self.on_cube, entry
                a_else, v_else, st_else = self.body(s.else_body, dict(state))
                self.on_cube &= on_then
                if any(_home(st[name]) != _home(state[name]) for st in (st_then, st_else) for name in state):
                    raise UnsupportedError("a gemm accumulator changes sides (Cube/Vector) inside an `if`", loc=s.loc,
                                           hint="move the T.gemm or the element-wise code on its result out of the "
                                           "`if`")
                # A branch that clears an accumulator on the Cube (T.clear: 'zero') leaves it there, as the
                # other branch does ('cube'): after the `if` it is on the Cube, zero or not (lower_tile_ops
                # gives such a clear a runtime flag that the next gemm reads).
                for name in state:
                    state[name] = _merge(st_then[name], st_else[name])
                if a_then or a_else:
                    aic.append(dataclasses.replace(s, then_body=a_then, else_body=a_else))
                if v_then or v_else:
                    aiv.append(dataclasses.replace(s, then_body=v_then, else_body=v_else))
                continue
            if isinstance(s, Loop):
                # Dry run: the state the loop carries. It may meet a transfer first, which then records
                # its loop: the loop is on the path here too.
                # An operand the body writes is not on the Cube at the top of an iteration.
                written = {n for x in walk(s.body) if not isinstance(x, Loop | If) for n in tile_writes(x)}
                self.on_cube = entry = self.on_cube - written
                self.loop_path.append(id(s))
                _, _, after = self.body(s.body, dict(state))
                self.loop_path.pop()
                self.on_cube = entry
                # An accumulator cleared at the end of the body but not before the loop (or the reverse)
                # is zero at the top of some iterations only.
                after = {name: "cube_or_zero" if st in ("zero", "cube_or_zero") and st != state[name]
                         and _home(state[name]) == "cube" else st for name, st in after.items()}
                # Bring each accumulator into the state the loop body carries before the loop.
                a1, v1 = self.bring(state, after, s.body, s.loc)
                aic += a1
                aiv += v1
                self.loop_path.append(id(s))
                a_body, v_body, state = self.body(s.body, state)
                self.loop_path.pop()
                self.on_cube &= entry  # the loop may run no iteration
                if a_body:
                    aic.append(dataclasses.replace(s, body=a_body))
                if v_body:
                    aiv.append(dataclasses.replace(s, body=v_body))
                continue
            a, v = self.op(s, state, items[n + 1:])
            aic += a
            aiv += v
        # A partial product still in L0C at the end of a statement list goes to the AIVs now, so
        # that loops and branches start and end with every accumulator in one place.
        for name in sorted(self.mixed_accs):
            if state[name] == "partial":
                a1, v1 = self.to_vector(name, items[-1].loc if items else None, accumulate=True)
                aic += a1
                aiv += v1
                state[name] = "vec"
        return aic, aiv, state

    def bring(self, state: dict, target: dict, body: list, loc) -> tuple[list, list]:
        """The ops that move each mixed accumulator from where ``state`` has it to where ``target``
        wants it, before ``body`` (updates ``state``)."""
        aic: list = []
        aiv: list = []
        for name in sorted(self.mixed_accs):
            before, after = state[name], target[name]
            if before == after:
                continue
            if before == "zero" and after == "vec":
                aiv.append(TileFill(dst=full_region(self.bufs[name]), value=0.0, loc=loc))
                if self._first_is_gemm(body, name):
                    aic.append(TileFill(dst=full_region(self.bufs[name]), value=0.0, loc=loc))
            elif before == "cube" and after == "vec":
                a1, v1 = self.to_vector(name, loc, accumulate=False)
                aic += a1
                aiv += v1
            elif before == "zero" and after == "cube":
                aic.append(TileFill(dst=full_region(self.bufs[name]), value=0.0, loc=loc))
            elif before == "cube_or_zero" and after == "vec":
                a1, v1 = self.from_cube_or_zero(name, loc)
                aic += a1
                aiv += v1
            elif after != "cube_or_zero" or _home(before) != "cube":  # to cube_or_zero: nothing to move
                raise InternalCompilerError(f"partition: no way to bring accumulator '{name}' from {before} to "
                                            f"{after}", stage="partition")
            state[name] = after
        return aic, aiv

    @staticmethod
    def _first_is_gemm(body: list, name: str) -> bool:
        for s in walk(body):
            if not isinstance(s, Loop | If) and name in tile_buffers(s):
                return isinstance(s, TileGemm)
        return False

    def op(self, s, state: dict, rest: list) -> tuple[list, list]:
        accs = tile_buffers(s) & self.mixed_accs
        if isinstance(s, TileGemm):
            aic: list = []
            aiv: list = []
            for opnd in (s.a.buffer, s.b.buffer):
                if opnd in self.mixed_operands and opnd not in self.on_cube:
                    a1, v1 = self.to_cube(opnd, s.loc)
                    aic += a1
                    aiv += v1
                    self.on_cube |= {opnd}
            C = s.c.buffer
            if C in self.mixed_accs:
                if state[C] in ("vec", "partial") and not s.clear_accum:
                    # The vector side owns the value: compute a fresh product (or add to the one
                    # already in L0C) and add it there -- once, after the last of consecutive gemms.
                    # (With clear_accum the old value is dead: the product replaces it, below.)
                    aic.append(s if state[C] == "partial" else dataclasses.replace(s, clear_accum=True))
                    state[C] = "partial"
                    if not _next_access_is_gemm(rest, C):
                        a1, v1 = self.to_vector(C, s.loc, accumulate=True)
                        aic += a1
                        aiv += v1
                        state[C] = "vec"
                    return aic, aiv
                aic.append(s)
                state[C] = "cube"
                if C in self.zero_flags:
                    done = self._flag_store(C, 0, s.loc)
                    aic.append(done)
                    aiv.append(done)
                return aic, aiv
            aic.append(s)
            return aic, aiv
        if isinstance(s, TileFill) and s.dst.buffer in self.mixed_accs:
            name = s.dst.buffer
            if _const_zero(s.value):
                state[name] = "zero"
                if name in self.zero_flags:
                    set_ = self._flag_store(name, 1, s.loc)
                    return [s, set_], [set_]
                return [s], []
            state[name] = "vec"
            return [], [s]
        side = self.side(s)
        self.on_cube -= tile_writes(s)
        if isinstance(s, Print):
            return [], [s]  # printed once, by the AIVs
        if side is None:
            return [s], [s]
        if side is Core.AIC:
            return [s], []
        aic, aiv = [], []
        for name in sorted(accs):
            if state[name] in ("cube", "partial"):
                a1, v1 = self.to_vector(name, s.loc, accumulate=state[name] == "partial")
                aic += a1
                aiv += v1
            elif state[name] == "zero":
                aiv.append(TileFill(dst=full_region(self.bufs[name]), value=0.0, loc=s.loc))
            elif state[name] == "cube_or_zero":
                a1, v1 = self.from_cube_or_zero(name, s.loc)
                aic += a1
                aiv += v1
            state[name] = "vec"
        return aic, aiv + [s]

    def from_cube_or_zero(self, name: str, loc) -> tuple[list, list]:
        """The accumulator to the Vector cores when it is zero on some paths (a T.clear with no gemm
        since) and the Cube's product on the others: the transfer, then zeros where its flag says so."""
        if name not in self.zero_flags:
            raise _NeedsZeroFlag(name, loc)
        a1, v1 = self.to_vector(name, loc, accumulate=False)
        flag = self.zero_flags[name]
        still_zero = tirx.NE(tirx.BufferLoad(flag, [tirx.IntImm("int32", 0)]), tirx.IntImm("int32", 0))
        fill = If(cond=still_zero, then_body=[TileFill(dst=full_region(self.bufs[name]), value=0.0, loc=loc)],
                  loc=loc)
        return a1, v1 + [fill]

    def _flag_store(self, name: str, value: int, loc) -> ScalarStore:
        return ScalarStore(buffer=self.zero_flags[name].name, indices=(tirx.IntImm("int32", 0),),
                           value=tirx.IntImm("int32", value), loc=loc)


def _home(state: str) -> str:
    """Where an accumulator in ``state`` lives: a cleared one ('zero', 'cube_or_zero') is the Cube's,
    as one it computes ('cube'); 'vec' and 'partial' stand for themselves."""
    return "cube" if state in ("zero", "cube_or_zero") else state


class _NeedsZeroFlag(Exception):
    """Vector code reads an accumulator that is zero on some paths only: partition starts over with a
    zero flag for it (partition_launch)."""

    def __init__(self, name: str, loc) -> None:
        super().__init__(name)
        self.name, self.loc = name, loc


def _merge(a: str, b: str) -> str:
    """The state of an accumulator where two paths meet, one leaving it ``a`` and the other ``b``:
    on the Cube and zero on one path only is 'cube_or_zero' (the next gemm reads the clear's flag;
    vector code reading it first gets zeros where its zero flag is set: from_cube_or_zero)."""
    if a == b:
        return a
    if _home(a) == _home(b) == "cube":
        return "cube_or_zero"
    return a  # different cores: refused by the caller


def _next_access_is_gemm(rest: list, name: str) -> bool:
    """Is the next statement of ``rest`` that touches ``name`` a gemm into it (at this level, not
    inside a loop or a branch)?"""
    for s in rest:
        if isinstance(s, Loop | If):
            if any(name in tile_buffers(x) for x in walk([s])):
                return False
            continue
        if name in tile_buffers(s):
            return isinstance(s, TileGemm) and s.c.buffer == name
    return False


def _single_kind(kernel: Kernel, p: _Partitioner) -> Core:
    sides = {p.side(s) for s in p.ops} - {None}
    if sides == {Core.AIC, Core.AIV}:
        # Point at the first vector statement: the part that shares no tile with the gemms.
        first = next((s for s in p.ops if p.side(s) is Core.AIV and getattr(s, "loc", None)), None)
        raise UnsupportedError(
            "this kernel needs both the Cube and the Vector cores, but no tile crosses between them; the "
            "automatic Cube/Vector split needs the vector code to use the gemm's tiles",
            loc=getattr(first, "loc", None),
            hint="let the element-wise work read or write the gemm's tiles, or split the matrix part and the "
            "element-wise part into two kernels",
        )
    return next(iter(sides), Core.AIV)


def partition_launch(launch: Launch) -> Launch:
    kernel = launch.kernels.get(None)
    if kernel is None or len(launch.kernels) != 1:
        raise InternalCompilerError("partition needs one unpartitioned kernel per launch", stage="partition")
    kernel = _drop_unread_fills(kernel)
    zero_flags: dict = {}
    while True:
        p = _Partitioner(kernel, zero_flags)
        if not p.mixed:
            break
        try:
            state = {n: "vec" for n in p.mixed_accs}  # where the current value of each mixed acc lives
            aic_body, aiv_body, _ = p.body(kernel.body, state)
            break
        except _NeedsZeroFlag as e:
            # a T.clear of it is left without a gemm on some paths (blocksparse GEMM: every gemm under
            # an `if`): a scalar flag, set by the clear and reset by each gemm, tells the Vector cores
            # whether they read zeros or the Cube's product
            if e.name in zero_flags:
                raise InternalCompilerError(f"partition: the zero flag of '{e.name}' did not settle",
                                            stage="partition") from None
            name = fresh_name(f"{e.name}_still_zero", set(kernel.buffers))
            acc = kernel.buffers[e.name]
            kernel = kernel.replace(buffers={**kernel.buffers, name: Buffer(
                name=name, shape=(1,), dtype=DType.INT32, kind=BufferKind.LOCAL, loc=acc.loc,
                role=f"1 while '{e.name}' holds its T.clear's zeros (no gemm into it since)")})
            zero_flags[e.name] = tirx.decl_buffer((1,), "int32", name)
    if not p.mixed:
        core = _single_kind(kernel, p)
        return launch.replace(kernels={core: kernel.replace(core=core)})
    params = {n: dataclasses.replace(b) for n, b in kernel.buffers.items() if b.kind.in_gm}

    def own(body: list, extra: dict) -> dict:
        used = {n for s in walk(body) if not isinstance(s, Loop | If) for n in tile_buffers(s)}
        local = {n: dataclasses.replace(b) for n, b in kernel.buffers.items()
                 if not b.kind.in_gm and n in used}
        return {**params, **local, **{n: dataclasses.replace(b) for n, b in extra.items()}}

    aic_body, aiv_body, transfers = _drop_unused_transfers(aic_body, aiv_body, p.transfers)
    aic_body, aiv_body = _drop_dead_scalars(aic_body, kernel), _drop_dead_scalars(aiv_body, kernel)
    extra = {n: b for n, b in p.extra_aiv.items() if any(t.target == n for t in transfers)}
    aic_buffers = own(aic_body, {})
    aic_body = _cube_scalar_reads(aic_body, kernel, aic_buffers)
    aic = Kernel(core=Core.AIC, buffers=aic_buffers, body=aic_body, names=kernel.names)
    aiv = Kernel(core=Core.AIV, buffers=own(aiv_body, extra), body=aiv_body, names=kernel.names)
    return launch.replace(kernels={Core.AIC: aic, Core.AIV: aiv}, transfers=transfers)


def _uses(s) -> set:
    """Every buffer a statement (not its nested bodies) names: its tiles and whatever its
    expressions load (region bases, loop bounds, conditions, values)."""
    exprs: list = []

    def add(x) -> None:
        if isinstance(x, tirx.PrimExpr):
            exprs.append(x)
        elif isinstance(x, Region):
            add(x.base)
        elif isinstance(x, tuple | list):
            for y in x:
                add(y)
        elif isinstance(x, ParallelStore):
            add(x.store.value)
            add(list(x.store.indices))

    for f in dataclasses.fields(s):
        if f.name not in ("body", "then_body", "else_body"):
            add(getattr(s, f.name))
    names = set(loaded_buffers(*exprs))
    return names if isinstance(s, Loop | If | ScalarStore) else names | tile_buffers(s)


def _drop_unread_fills(kernel: Kernel) -> Kernel:
    """A T.fill / T.clear of a tile that no other statement mentions (a leftover clear of an unused
    accumulator) is dropped, and the tile, before sides are decided: it would put the kernel on a
    core kind for nothing (a gemm kernel with it needed both kinds, with no tile between them: refused)."""
    body = kernel.body
    fills = [s for s in walk(body) if isinstance(s, TileFill) and not kernel.buffers[s.dst.buffer].kind.in_gm]
    if not fills:
        return kernel
    mentioned = {n for s in walk(body) if not isinstance(s, TileFill) for n in _uses(s)}
    dead = {s.dst.buffer for s in fills if s.dst.buffer not in mentioned}
    if not dead:
        return kernel

    body = map_body(body, lambda s: [] if isinstance(s, TileFill) and s.dst.buffer in dead else [s])
    return kernel.replace(body=body, buffers={n: b for n, b in kernel.buffers.items() if n not in dead})


def _drop_dead_scalars(body: list, kernel: Kernel) -> list:
    """Scalar code runs on every core kind that has the kernel (``_Partitioner.side``); a store to a
    scalar local, or to an element of a tile, that nothing on this side reads is dropped (mamba's
    `D_local[0] = D[h]` for the vector code: the Cube has no home for that tile), then loops and ``if``s left empty
    (DSA's gather loop: the AIVs computed each key's row index for no copy)."""
    while True:
        read = {n for s in walk(body) for n in _uses(s)}
        dead = {s.buffer for s in walk(body) if isinstance(s, ScalarStore) and s.buffer not in read
                and not kernel.buffers[s.buffer].kind.in_gm}
        if not dead:
            return body
        body = _prune(body, dead)


def _prune(items: list, dead: set) -> list:
    """``items`` without the stores to ``dead`` and without the loops and ``if``s that leaves empty."""
    out = []
    for s in items:
        if isinstance(s, ScalarStore) and s.buffer in dead:
            continue
        if isinstance(s, Loop):
            s = dataclasses.replace(s, body=_prune(s.body, dead))
            if not s.body:
                continue
        elif isinstance(s, If):
            s = dataclasses.replace(s, then_body=_prune(s.then_body, dead), else_body=_prune(s.else_body, dead))
            if not s.then_body and not s.else_body:
                continue
        out.append(s)
    return out


def _drop_unused_transfers(aic_body: list, aiv_body: list, transfers: list) -> tuple[list, list, list]:
    """The dry runs over loop bodies and `if` branches may create a transfer the final walk does
    not use (an accumulator handed over as is in a dry run, added as a partial product for real:
    block-sparse attention's gemm into acc_o inside `if block_mask[k]`). Only the transfers that
    some Send/Receive names are kept, renumbered in order."""
    used = sorted({s.transfer for body in (aic_body, aiv_body) for s in walk(body) if isinstance(s, Send | Receive)})
    if used == list(range(len(transfers))):
        return aic_body, aiv_body, transfers
    new = {old: n for n, old in enumerate(used)}

    def fix(s) -> list:
        return [dataclasses.replace(s, transfer=new[s.transfer])] if isinstance(s, Send | Receive) else [s]

    kept = [dataclasses.replace(transfers[old], index=n) for n, old in enumerate(used)]
    return map_body(aic_body, fix), map_body(aiv_body, fix), kept


def _gm_source(kernel: Kernel, tile: str):
    """(the TileCopy, whether it sits in a loop) of the one write of ``tile``, when that is a copy
    from a global tensor; else None."""
    found: list = []

    def visit(body, in_loop):
        for s in body:
            if isinstance(s, Loop):
                visit(s.body, True)
            elif isinstance(s, If):
                visit(s.then_body, in_loop)
                visit(s.else_body, in_loop)
            elif tile in tile_writes(s) or isinstance(s, ScalarStore) and s.buffer == tile:
                found.append((s, in_loop))

    visit(kernel.body, False)
    if len(found) != 1:
        return None
    s, in_loop = found[0]
    if not (isinstance(s, TileCopy) and s.dst.buffer == tile and kernel.buffers[s.src.buffer].kind.in_gm):
        return None
    gm = s.src.buffer
    if any(gm in tile_writes(x) for x in walk(kernel.body) if not isinstance(x, Loop | If)):
        return None  # the launch writes that tensor itself: the Cube could read it before or after
    return s, in_loop


class _Refused(Exception):
    def __init__(self, *args, **kw) -> None:
        super().__init__()
        self.error = UnsupportedError(*args, **kw)


def _cube_scalar_reads(body: list, kernel: Kernel, aic_buffers: dict) -> list:
    """The AIC program's scalar code (an ``if``, a loop bound, a copy offset) may read elements of a
    vector tile, which the Cube core does not have (block-sparse attention's ``if block_mask[k]``).
    A tile that is a copy of a global window, made once outside loops, is read from that window
    in GM instead; any other such read is refused."""
    cache: dict = {}

    def gm_load(load, loc):
        b = kernel.buffer_of(load.buffer)
        if b.name in aic_buffers or b.kind.in_gm or b.kind is BufferKind.LOCAL:
            return None
        if b.name not in cache:
            cache[b.name] = _gm_source(kernel, b.name)
        src = cache[b.name]
        if src is None or src[1]:
            raise _Refused(
                f"the Cube core's part of this kernel reads '{b.name}[{', '.join(map(str, load.indices))}]', an "
                "element of a vector tile it does not have", loc=loc,
                hint=f"read the value from the global tensor it comes from, or T.copy '{b.name}' from a global "
                "window once, before the loops")
        copy = src[0]
        gm = kernel.buffers[copy.src.buffer]
        region = copy.src
        dims = [d for d, e in enumerate(region.extents) if int(e) != 1]
        tdims = [d for d, e in enumerate(b.shape) if int(e) != 1]
        if len(dims) != len(tdims):
            return None
        idx = list(region.base)
        for d, t in zip(dims, tdims, strict=True):
            idx[d] = idx[d] + load.indices[t]
        value = tirx.BufferLoad(tirx.decl_buffer(gm.shape, str(gm.dtype), gm.name), idx)
        return value if gm.dtype == b.dtype else tirx.Cast(str(b.dtype), value)

    def expr(e, loc):
        if not isinstance(e, tirx.PrimExpr):
            return e

        refused: list = []

        def post(n):
            if isinstance(n, tirx.BufferLoad):
                try:
                    return gm_load(n, loc)
                except _Refused as err:  # raised after the transform: TVM's callback would wrap it
                    refused.append(err.error)
            return None

        out = tirx.stmt_functor.ir_transform(tirx.Evaluate(e), None, post, ["tirx.BufferLoad"]).value
        if refused:
            raise refused[0]
        return out

    def region(r: Region, loc) -> Region:
        return dataclasses.replace(r, base=tuple(expr(x, loc) for x in r.base))

    def go(items: list) -> list:
        out = []
        for s in items:
            if isinstance(s, Loop):
                s = dataclasses.replace(s, body=go(s.body), extent=expr(s.extent, s.loc), start=expr(s.start, s.loc),
                                        cond=expr(s.cond, s.loc))
            elif isinstance(s, If):
                s = dataclasses.replace(s, cond=expr(s.cond, s.loc), then_body=go(s.then_body),
                                        else_body=go(s.else_body))
            elif isinstance(s, ScalarStore):
                s = dataclasses.replace(s, value=expr(s.value, s.loc),
                                        indices=tuple(expr(x, s.loc) for x in s.indices))
            elif isinstance(s, TileCopy):
                s = dataclasses.replace(s, src=region(s.src, s.loc), dst=region(s.dst, s.loc),
                                        scale=expr(s.scale, s.loc) if s.scale is not None else None)
            out.append(s)
        return out

    return go(body)


def partition(program: Program) -> Program:
    """Split every launch into the programs of the core kinds it needs (after dropping whole-tile
    copies between two vector tiles, passes/alias_copies.py)."""
    from .alias_copies import alias_copies_launch

    out = program.replace(launches=[partition_launch(alias_copies_launch(lc)) for lc in program.launches])
    verify_partition(out)
    return out


def verify_partition(program: Program) -> None:
    """Every launch has kernels keyed by core kind; a mixed launch's Send/Receive points name its
    transfers, each sent from one side and received on the other; cube ops only on the AIC,
    vector ops only on the AIV."""
    for lc in program.launches:
        if not lc.kernels or None in lc.kernels:
            raise InternalCompilerError("a launch has no partitioned kernel", stage="partition")
        for core, k in lc.kernels.items():
            if k.core is not core:
                raise InternalCompilerError(f"kernel keyed {core} says it runs on {k.core}", stage="partition")
            for s in walk(k.body):
                if isinstance(s, TileGemm) and core is not Core.AIC:
                    raise InternalCompilerError("a gemm outside the AIC program", stage="partition")
                if isinstance(s, TileParallel | TileReduce | TileAccumulate) and core is not Core.AIV:
                    raise InternalCompilerError(f"a vector op ({type(s).__name__}) outside the AIV program",
                                                stage="partition")
                if isinstance(s, Send | Receive):
                    if s.transfer >= len(lc.transfers):
                        raise InternalCompilerError(f"{type(s).__name__} of unknown transfer {s.transfer}",
                                                    stage="partition")
                    t = lc.transfers[s.transfer]
                    sender = Core.AIC if t.direction is Direction.C2V else Core.AIV
                    if (isinstance(s, Send)) != (core is sender):
                        raise InternalCompilerError(f"transfer of {t.tile} {type(s).__name__.lower()}s on the {core}",
                                                    stage="partition")
        for t in lc.transfers:
            sides = {c for c, k in lc.kernels.items() for s in walk(k.body)
                     if isinstance(s, Send | Receive) and s.transfer == t.index}
            if sides != {Core.AIC, Core.AIV}:
                raise InternalCompilerError(f"transfer of {t.tile} is not both sent and received", stage="partition")


__all__ = ["partition", "verify_partition", "tile_buffers", "parallel_buffers", "full_region"]
