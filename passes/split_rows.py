"""split_rows: the two AIVs of a group share the rows of every row-block tile.

Needs: a routed mixed launch (its crossing tiles have their workspace windows or on-chip peers).
Establishes: the AIV kernel has a ``RowSplit``: AIV ``sub`` (GetSubBlockIdx) holds rows
[sub * R/2, (sub + 1) * R/2) of every tile of R rows, R one of the crossing tiles' heights (tiles
of different heights each split at their own; a tile a T.Parallel reads transposed is held whole
by each AIV, and one from the Cube read so is refused); its copies to and from GM address its own
rows, and T.Parallel bodies see global row indices. Single-kind launches, and launches whose crossing
tiles have an odd height (assign_layout rejects such Cube tiles), are left alone.
"""

from __future__ import annotations

import dataclasses

from tvm import tirx

from ascend_backend.errors import InternalCompilerError, UnsupportedError
from ascend_backend.ir import (
    BufferKind,
    CopyToPeerL1,
    Core,
    Direction,
    If,
    Kernel,
    Launch,
    Program,
    Region,
    RowSplit,
    SimtRegion,
    TileCopy,
    TileCumsum,
    TileFill,
    TileParallel,
    TileReduce,
    map_body,
    static_int,
    walk,
)

from .partition import parallel_buffers, tile_buffers, tile_writes

SUB = "sub_idx"


def _crossing_heights(launch: Launch, aiv: Kernel) -> set:
    heights = set()
    for t in launch.transfers:
        if t.on_chip:
            heights.add(aiv.buffers[t.target].shape[0])
        elif t.ws in aiv.buffers:  # one region of the tile's rows per block
            k = next(k for k in launch.kernels.values() if t.tile in k.buffers)
            heights.add(k.buffers[t.tile].shape[0])
    return heights


def split_rows_launch(launch: Launch) -> Launch:
    if not launch.mixed:
        return launch
    aiv = launch.kernels[Core.AIV]
    rows = _crossing_heights(launch, aiv)
    if not rows or any(R % 2 for R in rows):  # odd heights: assign_layout rejects such Cube tiles
        return launch
    halves = {R: R // 2 for R in rows}
    sub = tirx.Var(SUB, "int32")
    buffers = {}
    split: dict = {}  # tile -> its rows R before the split
    rowvecs = {R: _row_vectors(aiv, R) for R in rows}
    # a tile read transposed (x[j, i] in T.Parallel(i, j)) gives each row of the result one of its
    # columns: each AIV holds it whole and transposes it, then takes its half of the rows
    whole = _transposed_reads(aiv)
    crossing = {t.target for t in launch.transfers}
    for n in sorted(whole.keys() & crossing):
        raise UnsupportedError(
            f"'{n}' comes from the Cube and is read transposed ({n}[j, i] in T.Parallel(i, j)): this kernel (it has "
            f"a T.gemm) splits the rows of '{n}' between the two AIVs, and a row of the transposed tile needs a "
            "column of all of them", loc=whole[n],
            hint="transpose on the Cube instead: compute the gemm's transposed product (T.gemm with transpose_A / "
            "transpose_B swaps), or copy the tile through a global tensor")
    # thread-level code indexes its tiles anywhere: each AIV holds them whole and runs the SIMT
    # function over all of them (a tile it sends to the Cube then goes as this AIV's half of rows)
    simt = _simt_tiles(aiv)
    from_cube = {t.target for t in launch.transfers if t.direction is Direction.C2V}
    for n in sorted(simt.keys() & from_cube):
        raise UnsupportedError(
            f"thread-level code reads '{n}', which comes from the Cube: this kernel (it has a T.gemm) splits the rows "
            f"of '{n}' between the two AIVs, and a SIMT function indexes the whole tile", loc=simt[n],
            hint="copy the gemm's result to a global tensor and read it there, or write that part as tile ops "
            "(T.Parallel)")
    to_cube_ws = {t.tile for t in launch.transfers if t.direction is Direction.V2C and not t.on_chip}
    for n in sorted(simt.keys() & to_cube_ws):
        raise UnsupportedError(
            f"'{n}', written by thread-level code, goes to the Cube through the GM workspace, which the SIMT tiles of "
            "a kernel with a T.gemm do not take (each AIV holds the whole tile)", loc=simt[n],
            hint="use fewer tiles crossing between the cores in this kernel (the on-chip route has 11 flag ids)")
    whole = {**whole, **simt}
    for n, b in aiv.buffers.items():
        b = dataclasses.replace(b)
        if (b.kind in (BufferKind.SHARED, BufferKind.FRAGMENT) and b.shape and b.shape[0] in halves
                and n not in whole and (len(b.shape) == 2 or n in rowvecs[b.shape[0]])):
            split[n] = b.shape[0]
            b.shape = (halves[b.shape[0]], *b.shape[1:])
        buffers[n] = b

    _refuse_cross_row_ops(aiv.body, split, halves)

    def region(r: Region, tile: str | None, loc=None) -> Region:
        if tile not in split or not buffers[r.buffer].kind.in_gm:
            if r.buffer in split and static_int(r.extents[0]) != split[r.buffer]:
                raise UnsupportedError(
                    f"a copy into some rows of '{r.buffer}': this kernel (it has a T.gemm) splits the "
                    f"{split[r.buffer]} rows of '{r.buffer}' between the two AIVs", loc=loc,
                    hint="copy whole tiles into it, or gather the rows into a tile the gemm reads (T.alloc_shared "
                    "operand)")
            if r.buffer in split:
                return dataclasses.replace(r, extents=(halves[split[r.buffer]], *r.extents[1:]))
            return r
        R = split[tile]
        half = halves[R]
        ext = [int(e) for e in r.extents]
        # the tile's row dimension: the first extent equal to its height
        d = next(d for d in range(len(ext)) if ext[d] == R)
        base = list(r.base)
        base[d] = base[d] + sub * half
        ext[d] = half
        return Region(r.buffer, tuple(base), tuple(ext))

    owned: dict = {}  # unsplit tile -> the AIV that alone holds its value (rows of one half)

    def one_half(op: TileCopy):
        """``T.copy(acc[r0:r0 + n, :], small)`` (flash decoding's valid heads): rows of a split tile
        into a tile that is not split. The rows lie in one AIV's half; that AIV alone copies them
        (and runs what uses ``small``). None for any other copy."""
        src, dst = op.src, op.dst
        if src.buffer not in split or dst.buffer in split or buffers[dst.buffer].kind.in_gm:
            return None
        R = split[src.buffer]
        h = halves[R]
        ext = [static_int(e) for e in src.extents]
        r0 = static_int(src.base[0])
        if ext[0] == R or None in ext or r0 is None:
            if ext[0] == R and _zero_rows(src):
                return None
            raise UnsupportedError(
                f"T.copy of rows of '{src.buffer}' into '{dst.buffer}': this kernel (it has a T.gemm) splits the "
                f"{R} rows of '{src.buffer}' between the two AIVs, so a copy of some of its rows needs constant "
                "rows", loc=op.loc, hint="copy whole tiles, or rows given by constants")
        owner = 0 if r0 + ext[0] <= h else 1 if r0 >= h else None
        if owner is None:
            raise UnsupportedError(
                f"T.copy of rows [{r0}, {r0 + ext[0]}) of '{src.buffer}': this kernel (it has a T.gemm) splits its "
                f"{R} rows between the two AIVs ({h} each), and these rows lie in both halves", loc=op.loc,
                hint=f"copy rows within [0, {h}) or [{h}, {R}), or the whole tile")
        base = (r0 - owner * h, *src.base[1:])
        copy = dataclasses.replace(op, src=Region(src.buffer, base, tuple(src.extents)))
        owned[dst.buffer] = owner
        return If(cond=tirx.EQ(sub, owner), then_body=[copy], loc=op.loc)

    def fix(op):
        if isinstance(op, TileCopy):
            guarded = one_half(op)
            if guarded is not None:
                return guarded
        names = tile_buffers(op)
        owners = {owned[n] for n in names if n in owned}
        if owners:
            if len(owners) > 1 or names & split.keys():
                raise UnsupportedError(
                    "this op combines tiles that only one AIV holds with tiles of the other AIV (or with tiles "
                    "whose rows both AIVs share)", loc=op.loc,
                    hint="copy the rows you need into a separate tile first, in one statement")
            owner = owners.pop()
            for n in tile_writes(op):
                if not buffers[n].kind.in_gm:
                    owned[n] = owner
            return If(cond=tirx.EQ(sub, owner), then_body=[op], loc=op.loc)
        return _fix(op)

    def _fix(op):
        if isinstance(op, TileCopy) and buffers[op.src.buffer].kind.in_gm and buffers[op.dst.buffer].kind.in_gm:
            # GM -> GM involves no row-split tile: one AIV of the pair does it.
            return If(cond=tirx.EQ(sub, 0), then_body=[op], loc=op.loc)
        if isinstance(op, TileCopy):
            return dataclasses.replace(op, src=region(op.src, op.dst.buffer, op.loc),
                                       dst=region(op.dst, op.src.buffer, op.loc))
        if isinstance(op, TileFill):
            return dataclasses.replace(op, dst=region(op.dst, None))
        if isinstance(op, TileReduce):
            return dataclasses.replace(op, src=region(op.src, None), dst=region(op.dst, None))
        if isinstance(op, CopyToPeerL1):
            if op.src.buffer in simt and op.src.buffer not in split and buffers[op.src.buffer].shape[0] in halves:
                # a whole tile: this AIV's half of its rows
                half = halves[buffers[op.src.buffer].shape[0]]
                r = op.src
                return dataclasses.replace(op, src=Region(r.buffer, (r.base[0] + sub * half, *r.base[1:]),
                                                          (half, *r.extents[1:])))
            return dataclasses.replace(op, src=region(op.src, None))
        if isinstance(op, SimtRegion) and any(buffers[n].kind.in_gm for n in op.writes):
            # it writes global tensors: one AIV of the pair runs it (the other's tiles it writes
            # would differ from nothing, but its GM stores and atomics would happen twice)
            for n in op.writes:
                if not buffers[n].kind.in_gm:
                    owned[n] = 0
            return If(cond=tirx.EQ(sub, 0), then_body=[op], loc=op.loc)
        if isinstance(op, TileParallel):
            return _split_parallel(op, split, halves, sub)
        return op

    row_split = RowSplit(sub, next(iter(halves.values())) if len(halves) == 1 else None)
    aiv = aiv.replace(buffers=buffers, body=map_body(aiv.body, lambda s: [fix(s)]), row_split=row_split)
    return launch.replace(kernels={**launch.kernels, Core.AIV: aiv})


def _zero_rows(r: Region) -> bool:
    return static_int(r.base[0]) == 0


def _refuse_cross_row_ops(body: list, split: dict, halves: dict) -> None:
    """Ops that combine the rows of a tile (a reduction or a scan over dim 0, a per-column reducer
    store in T.Parallel) cannot run on each AIV's half of the rows."""
    hint = ("write the kernel without the gemm (a vector-only kernel keeps whole tiles on one core), or "
            "combine along the rows (dim 1)")
    what = None
    for s in walk(body):
        if isinstance(s, TileReduce) and s.src.buffer in split and s.dim in (0, -2):
            what = f"T.reduce_{s.kind.value} over dim 0 of '{s.src.buffer}'"
        elif isinstance(s, TileCumsum) and s.src.buffer in split and s.dim in (0, -2):
            what = f"T.cumsum over dim 0 of '{s.src.buffer}'"
        elif isinstance(s, TileParallel) and len(s.vars) == 2 and s.extents[0] in halves:
            for ps in s.stores:
                idx = ps.store.indices
                if len(idx) == 1 and isinstance(idx[0], tirx.Var) and idx[0].same_as(s.vars[1]):
                    what = f"the per-column accumulation into '{ps.store.buffer.name}[{idx[0]}]'"
        if what is not None:
            raise UnsupportedError(
                f"{what} combines the rows of a tile, but this kernel (it has a T.gemm) splits the rows of its "
                "vector tiles between the two AIVs: each would combine only its half", loc=s.loc, hint=hint)


def _simt_tiles(k: Kernel) -> dict:
    """The on-chip tiles thread-level code touches, with the line of its first use."""
    out: dict = {}
    for s in walk(k.body):
        if isinstance(s, SimtRegion):
            for n in (*s.reads, *s.writes):
                if not k.buffers[n].kind.in_gm:
                    out.setdefault(n, s.loc)
    return out


def _transposed_reads(k: Kernel) -> dict:
    """The 2-D tiles a 2-D T.Parallel reads transposed (x[j, i] in T.Parallel(i, j)), with a line."""
    out: dict = {}
    for s in walk(k.body):
        if not (isinstance(s, TileParallel) and len(s.vars) == 2):
            continue
        i, j = s.vars

        for ps in s.stores:
            def visit(n, at=ps.loc, i=i, j=j):
                if isinstance(n, tirx.BufferLoad) and len(n.indices) == 2 and \
                        isinstance(n.indices[0], tirx.Var) and n.indices[0].same_as(j) and \
                        isinstance(n.indices[1], tirx.Var) and n.indices[1].same_as(i):
                    out.setdefault(n.buffer.name, at)

            tirx.stmt_functor.post_order_visit(ps.store.value, visit)
    return out


def _row_vectors(k: Kernel, R: int) -> set:
    """1-D buffers of length R that hold one value per row (not per column)."""
    one_d = {n for n, b in k.buffers.items() if len(b.shape) == 1 and b.shape[0] == R
             and not b.kind.in_gm}
    rows: set = set()
    links: list = []
    for s in walk(k.body):
        if isinstance(s, TileReduce) and s.dst.buffer in one_d:
            rows.add(s.dst.buffer)
        if isinstance(s, TileCopy):
            a, b = s.src.buffer, s.dst.buffer
            if a in one_d and b in one_d:
                links.append((a, b))
        if isinstance(s, TileParallel):
            vs = s.vars
            for ps in s.stores:
                st = ps.store
                names = []

                def visit(n, names=names):
                    if isinstance(n, tirx.BufferLoad) and len(n.indices) == 1:
                        names.append((n.buffer.name, n.indices[0]))

                tirx.stmt_functor.post_order_visit(st.value, visit)
                names.append((st.buffer.name, st.indices[0] if len(st.indices) == 1 else None))
                for name, idx in names:
                    if name in one_d and len(vs) == 2 and isinstance(idx, tirx.Var) and idx.same_as(vs[0]):
                        rows.add(name)
                if len(vs) == 1:
                    ones = [n for n, _ in names if n in one_d]
                    links.extend((a, b) for a in ones for b in ones if a != b)
    changed = True
    while changed:
        changed = False
        for a, b in links:
            if (a in rows) != (b in rows):
                rows |= {a, b}
                changed = True
    return rows


def _split_parallel(op: TileParallel, split, halves: dict, sub) -> TileParallel:
    ext = list(op.extents)
    if not ext or ext[0] not in halves:
        return op
    if not parallel_buffers(op) & split.keys():
        # Touches no row-split tile (e.g. a per-key mask as long as the rows): each AIV computes
        # all of it, as its own whole tile.
        return op
    i = op.vars[0]
    half = ext[0] = halves[ext[0]]
    shifted = i + sub * half

    def rw(e):
        """Tile indices stay local (i); every other use of i is a global row (i + sub * half)."""
        if isinstance(e, tirx.BufferLoad):
            if e.buffer.name in split:
                return e
            return tirx.BufferLoad(e.buffer, [rw(x) for x in e.indices])
        if isinstance(e, tirx.Var):
            return shifted if e.same_as(i) else e
        if isinstance(e, tirx.Cast):
            return tirx.Cast(e.dtype, rw(e.value))
        if isinstance(e, tirx.Call):
            return tirx.Call(e.dtype, e.op, [rw(x) for x in e.args])
        if isinstance(e, tirx.Select):
            return tirx.Select(rw(e.condition), rw(e.true_value), rw(e.false_value))
        if isinstance(e, tirx.Not):
            return tirx.Not(rw(e.a))
        if hasattr(e, "a") and hasattr(e, "b"):
            return type(e)(rw(e.a), rw(e.b))
        return e

    stores = []
    for ps in op.stores:
        st = ps.store
        indices = list(st.indices) if st.buffer.name in split else [rw(x) for x in st.indices]
        stores.append(dataclasses.replace(ps, store=tirx.BufferStore(st.buffer, rw(st.value), indices)))
    return dataclasses.replace(op, extents=tuple(ext), stores=tuple(stores))


def split_rows(program: Program) -> Program:
    """Halve the row-block tiles of every mixed launch's AIV program between the two AIVs."""
    out = program.replace(launches=[split_rows_launch(lc) for lc in program.launches])
    verify_split_rows(out)
    return out


def verify_split_rows(program: Program) -> None:
    """A mixed launch whose crossing tiles have even heights has a row split (else both AIVs would
    run every op on whole tiles and race on the workspace and the output)."""
    for lc in program.launches:
        if not lc.mixed:
            continue
        aiv = lc.kernels[Core.AIV]
        heights = _crossing_heights(lc, aiv) if aiv.row_split is None else set()
        if aiv.row_split is None and heights and not any(h % 2 for h in heights):
            raise InternalCompilerError(f"the AIVs do not share the rows of the crossing tiles (heights "
                                        f"{sorted(heights)}): both would run every op on whole tiles",
                                        stage="split_rows")


__all__ = ["split_rows", "verify_split_rows", "SUB"]
