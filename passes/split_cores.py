"""split_cores: split a kernel that needs both the Cube and the Vector cores into an AIC program
and an AIV program, with every tile that crosses cores routed (through a GM workspace, or on chip
on dav-3510) and ordered by cross-core flags.

Needs: a fresh frontend kernel (tile ops, no scopes).
Establishes: either ``None`` (the kernel is Cube-only or Vector-only: nothing to split) or a pair
(aic, aiv) of kernels, each with only its own side's ops, the loops around them and the
cross-core sync tile ops (``cc_set`` / ``cc_wait``, logical ids 0-10, two per crossing tile). In
both, every crossing of a tile has (checked by ``verify_split``: every id waited on one side is set
on the other, ids within 0-10, mode 4 only on dav-3510 and with both AIVs named on the AIC):

* Cube -> Vector (a gemm accumulator read by vector code): the AIC waits for the workspace slot to
  be free, Fixpipes the accumulator into the workspace and sets "ready"; each AIV waits "ready",
  copies its half of the rows into UB and sets "free" (primed once at the start, drained once at
  the end, so every set is waited). dav-3510: the AIC Fixpipes each AIV's half straight into that
  AIV's UB tile and signals that AIV alone (mode 4) right after its half; "free" (where needed)
  is waited per AIV before its half and set by each AIV after its last use of the tile.
* Vector -> Cube (a vector-produced tile used as a gemm operand): each AIV waits "free", copies its
  half into the workspace and sets "ready"; the AIC waits for both AIVs, loads the tile into L1
  (Nd2Nz) and sets "free". dav-3510: each AIV copies its half from UB into the AIC's L1 tile
  (MTE3, Nd2Nz into NZ) and signals the AIC (mode 4); the AIC's MTE1 waits for both halves before
  LoadData, and "free" (where needed) is set per AIV on MTE1 after that gemm.

A "free" flag is left out where it can never matter (a tile that crosses once) or where a round
trip orders the next write after the read (the loop also moves a tile the other way).

Accumulators: while only the Cube touches a gemm accumulator it stays in L0C (a T.clear before
the loop becomes the first Mmad's overwrite); once vector code has touched it, later gemms
compute a fresh product that the AIVs add into their copy (``acc += partial``), which is how an
accumulator that the vector side rescales (FlashAttention's acc_o) or initialises (a causal mask)
works. The AIV program holds half of the rows of every row-block tile: AIV ``sub`` takes rows
[sub * R/2, (sub + 1) * R/2) (GetSubBlockIdx()).
"""

from __future__ import annotations

import dataclasses

from tvm import tirx

from ascend_backend.errors import InternalCompilerError, UnsupportedError
from ascend_backend.ir import Buffer, Kernel, Loop, TileOp, walk

SUB = "sub_idx"


def _regions(op: TileOp) -> list:
    a = op.args
    if op.op == "copy":
        return [a["src"], a["dst"]]
    if op.op == "fill":
        return [a["dst"]]
    if op.op == "gemm":
        return [a["A"], a["B"], a["C"]]
    if op.op == "reduce":
        return [a["src"], a["dst"]]
    return []


def _parallel_buffers(op: TileOp) -> set:
    names = set()
    for st, _ in op.args["stores"]:
        names.add(st.buffer.name)

        def visit(n, names=names):
            if isinstance(n, tirx.BufferLoad):
                names.add(n.buffer.name)

        tirx.stmt_functor.post_order_visit(st.value, visit)
    return names


def _touches(op: TileOp) -> set:
    if op.op == "parallel":
        return _parallel_buffers(op)
    if op.op == "copy_to_peer_ub":
        return {op.args["src"]}
    if op.op == "copy_to_peer_l1":
        return {op.args["src"]["buffer"]}
    return {r["buffer"] for r in _regions(op)}


def _accesses(op: TileOp) -> set:
    """Every buffer ``op`` reads or writes. Unlike ``_touches`` it counts the ``accumulate`` op (the AIVs'
    ``acc += partial``), which the round-trip analysis has never followed (keeping dav-c220's flags as
    they are)."""
    if op.op == "accumulate":
        return {op.args["dst"], op.args["src"]}
    return _touches(op)


def _aiv_pipe(op: TileOp, buffers: dict) -> str:
    """The AIV pipe that accesses a UB tile in ``op``: MTE3 for a copy out to GM, MTE2 for a copy in
    from GM, V for everything else (vector ops, casts, UB -> UB copies)."""
    if op.op == "copy":
        if buffers[op.args["dst"]["buffer"]].kind in ("param", "workspace"):
            return "MTE3"
        if buffers[op.args["src"]["buffer"]].kind in ("param", "workspace"):
            return "MTE2"
    if op.op == "copy_to_peer_l1":
        return "MTE3"
    return "V"


class _Splitter:
    def __init__(self, kernel: Kernel) -> None:
        self.k = kernel
        self.ops = [s for s in walk(kernel.body) if isinstance(s, TileOp)]
        self.operands: set = set()
        self.accs: set = set()
        for s in self.ops:
            if s.op == "gemm":
                self.operands |= {s.args["A"]["buffer"], s.args["B"]["buffer"]}
                self.accs.add(s.args["C"]["buffer"])
        self.vector_bufs: set = set()
        for s in self.ops:
            if s.op in ("parallel", "reduce"):
                self.vector_bufs |= _touches(s)
            elif s.op == "copy":
                src, dst = s.args["src"]["buffer"], s.args["dst"]["buffer"]
                gm = {n for n in (src, dst) if kernel.buffers[n].kind == "param"}
                local = {src, dst} - gm
                if len(local) == 2 or (local and not (local & (self.operands | self.accs))):
                    self.vector_bufs |= local
            elif s.op == "fill" and s.args["dst"]["buffer"] not in self.accs:
                self.vector_bufs.add(s.args["dst"]["buffer"])
        self.mixed_accs = self.accs & self.vector_bufs
        self.mixed_operands = self.operands & self.vector_bufs
        self.next_id = 0
        self.transfers: list = []  # (name, ready_id, free_id, direction, ws buffer)
        self.ws_offset = 0

    @property
    def mixed(self) -> bool:
        return bool(self.mixed_accs or self.mixed_operands)

    # -------------------------------------------------------------- side of an op
    def side(self, op: TileOp) -> str:
        if op.op == "gemm":
            return "cube"
        if op.op in ("parallel", "reduce"):
            return "vector"
        if op.op == "fill":
            return "cube" if op.args["dst"]["buffer"] in self.accs - self.mixed_accs else "vector"
        src, dst = op.args["src"]["buffer"], op.args["dst"]["buffer"]
        local = [n for n in (src, dst) if self.k.buffers[n].kind != "param"]
        if all(n in (self.operands - self.mixed_operands) or n in (self.accs - self.mixed_accs) for n in local):
            return "cube"
        return "vector"

    # -------------------------------------------------------------- workspace
    def block_index(self):
        idx = None
        stride = 1
        for var, ext, *_ in self.k.grid:
            term = var if stride == 1 else var * stride
            idx = term if idx is None else idx + term
            stride *= int(ext)
        return idx

    def workspace(self, name: str, buf: Buffer) -> Buffer:
        ws_name = f"ws_{name}"
        if ws_name not in self.ws:
            rows, cols = buf.shape
            self.ws[ws_name] = Buffer(name=ws_name, shape=(self.k.block_dim * rows, cols), dtype=buf.dtype,
                                      kind="workspace", loc=buf.loc, scope="GM",
                                      role=f"GM workspace carrying {name} between the Cube and the Vector cores")
            self.ws_offsets[ws_name] = self.ws_offset
            self.ws_offset += (self.k.block_dim * rows * cols * buf.elem_bytes + 511) // 512 * 512
        return self.ws[ws_name]

    def ids(self, name: str, direction: str, loc=None) -> tuple[int, int]:
        for t in self.transfers:
            if t[0] == name and t[3] == direction:
                return t[1], t[2]
        ready, free = self.next_id, self.next_id + 1
        self.next_id += 2
        if self.next_id > 11:
            raise UnsupportedError("the kernel needs more than 11 cross-core flag ids (0-10)",
                                   hint="reduce the number of tiles that cross between Cube and Vector code")
        self.transfers.append((name, ready, free, direction))
        self.transfer_loc[ready] = loc
        self.transfer_loop[(name, direction)] = self.loop_path[-1] if self.loop_path else None
        return ready, free

    # -------------------------------------------------------------- routes
    def _cc(self, action: str, fid: int, pipe: str, reason: str, loc, mode: int = 2, sub: int | None = None) -> TileOp:
        """A cross-core set/wait. ``fid`` is the logical id (0-10); in mode 4 an AIC op names one AIV
        (``sub``), which lowering turns into the hardware id (fid + 16 for AIV 1)."""
        args = {"id": fid, "pipe": pipe, "reason": reason, "mode": mode}
        if sub is not None:
            args["sub"] = sub
        return TileOp(op=f"cc_{action}", args=args, loc=loc)

    def _ws_regions(self, name: str) -> tuple:
        """The tile, its block's window of its workspace, and the whole tile as copy regions."""
        buf = self.k.buffers[name]
        ws = self.workspace(name, buf)
        zero = tirx.IntImm("int32", 0)
        region = {"buffer": ws.name, "base": [self.block_index() * buf.shape[0], zero], "extents": list(buf.shape)}
        full = {"buffer": name, "base": [zero, zero], "extents": list(buf.shape)}
        return buf, region, full

    def route_to_vector(self, name: str, loc, accumulate: bool) -> tuple[list, list]:
        """AIC: wait free, Fixpipe C -> ws, set ready. AIV: wait ready, ws -> UB (or partial), set free."""
        buf, region, full = self._ws_regions(name)
        ready, free = self.ids(name, "c2v", loc)
        why = f"{name} from the Cube to the Vector cores"
        aic = [self._cc("wait", free, "FIX", f"workspace of {name} is free (the AIVs have read it)", loc),
               TileOp(op="copy", args={"src": full, "dst": region}, loc=loc),
               self._cc("set", ready, "FIX", f"{why}: written", loc)]
        target = f"{name}_part" if accumulate else name
        if accumulate and target not in self.extra_aiv:
            self.extra_aiv[target] = Buffer(name=target, shape=buf.shape, dtype=buf.dtype, kind="fragment",
                                            loc=buf.loc, role=f"fresh gemm product added into {name}")
        aiv = [self._cc("wait", ready, "MTE2", f"{why}: ready in the workspace", loc),
               TileOp(op="copy", args={"src": dict(region), "dst": {**full, "buffer": target}}, loc=loc),
               self._cc("set", free, "MTE2", f"workspace of {name} read", loc)]
        if accumulate:
            aiv.append(TileOp(op="accumulate", args={"dst": name, "src": target}, loc=loc))
        return aic, aiv

    def route_to_cube(self, name: str, loc) -> tuple[list, list]:
        _, region, full = self._ws_regions(name)
        ready, free = self.ids(name, "v2c", loc)
        why = f"{name} from the Vector cores to the Cube"
        aiv = [self._cc("wait", free, "MTE3", f"workspace of {name} is free (the AIC has loaded it)", loc),
               TileOp(op="copy", args={"src": full, "dst": region}, loc=loc),
               self._cc("set", ready, "MTE3", f"{why}: written", loc)]
        aic = [self._cc("wait", ready, "MTE2", f"{why}: ready in the workspace (both AIVs)", loc),
               TileOp(op="copy", args={"src": dict(region), "dst": full}, loc=loc),
               self._cc("set", free, "MTE2", f"workspace of {name} read", loc)]
        return aic, aiv

    # -------------------------------------------------------------- walk
    def split(self):
        self.loop_path: list = []
        self.transfer_loop: dict = {}
        self.transfer_loc: dict = {}  # ready id -> DSL location of the transfer
        self.ws: dict = {}
        self.ws_offsets: dict = {}
        self.extra_aiv: dict = {}
        state = {n: "vec" for n in self.mixed_accs}  # where the current value of each mixed acc lives
        aic, aiv, state = self.body(self.k.body, state)
        # A workspace written once needs no "free" flag; nor does one in a loop whose tiles also
        # travel the other way: the round trip (read here -> dependent work -> the reverse transfer ->
        # the next write there) already orders the next write after this read.
        dropped = set()
        for name, _ready, free, direction in self.transfers:
            lp = self.transfer_loop.get((name, direction))
            reverse = any(self.transfer_loop.get((n, d)) == lp and d != direction for n, _, _, d in self.transfers)
            if lp is None or reverse:
                dropped.add(free)
        if dropped:
            aic, aiv = _drop_flags(aic, dropped), _drop_flags(aiv, dropped)
            self.transfers = [(n, r, None if f in dropped else f, d) for n, r, f, d in self.transfers]
        if self.k.arch.name == "dav-3510":
            aic, aiv = self.on_chip_routes(aic, aiv)
        # Prime "free" (the consumer frees the workspace once up front) and drain it at the end.
        aic_pre, aiv_pre, aic_post, aiv_post = [], [], [], []
        for name, _ready, free, direction in self.transfers:
            if free is None:
                continue
            if direction == "c2v":
                aiv_pre.append(self._cc("set", free, "MTE2", f"prime: workspace of {name} starts free", None))
                aic_post.append(self._cc("wait", free, "FIX", f"drain: the last read of {name}'s workspace", None))
            elif direction == "c2v-ub":
                aiv_pre.append(self._cc("set", free, "V", f"prime: this AIV's UB tile of {name} starts free", None,
                                        mode=4))
                aic_post += [self._cc("wait", free, "FIX", f"drain: AIV {sub}'s last use of its UB tile of {name}",
                                      None, mode=4, sub=sub) for sub in (0, 1)]
            elif direction == "v2c-l1":
                aic_pre += [self._cc("set", free, "MTE1", f"prime: L1 tile {name} starts free for AIV {sub}", None,
                                     mode=4, sub=sub) for sub in (0, 1)]
                aiv_post.append(self._cc("wait", free, "MTE3", f"drain: the AIC's last load of L1 tile {name}", None,
                                         mode=4))
            else:
                aic_pre.append(self._cc("set", free, "MTE2", f"prime: workspace of {name} starts free", None))
                aiv_post.append(self._cc("wait", free, "MTE3", f"drain: the last load of {name}'s workspace", None))
        return aic_pre + aic + aic_post, aiv_pre + aiv + aiv_post

    # -------------------------------------------------------------- dav-3510: on-chip routes
    def on_chip_routes(self, aic: list, aiv: list) -> tuple[list, list]:
        """dav-3510: crossing tiles move on chip instead of through the GM workspace, signalled with
        mode-4 flags (AIC <-> one AIV; on the AIC, AIV1's flag of id f is f + 16):

        * Cube -> Vector: the AIC Fixpipes each AIV's half of the rows from L0C into that AIV's UB
          tile (FixpipeConfig isToUB, subBlockId) and sets that AIV's "ready" right after its half.
          With a "free" flag the AIC waits for each AIV's "free" before Fixpiping that AIV's half;
          each AIV sets "free" after its last access to the tile in the iteration.
        * Vector -> Cube: each AIV copies its half of the rows from UB into the AIC's L1 tile
          (DataCopy with Nd2NzParams on MTE3, into the NZ layout LoadData expects) and sets
          "ready"; the AIC waits for both halves on MTE1, before its LoadData. With a "free" flag
          the AIC sets each AIV's "free" on MTE1 after the gemm that loads the tile.

        A transfer keeps the workspace when the tiles do not split evenly between the two AIVs, or
        (with a "free" flag) when an AIV touches the tile before its "ready" wait in the same
        statement list (that access could meet the AIC's concurrent Fixpipe into its UB).
        """
        bufs = self.k.buffers
        rows = {bufs[t[0]].shape[0] if len(bufs[t[0]].shape) == 2 else None for t in self.transfers}
        if len(rows) != 1 or None in rows or next(iter(rows)) % 2:
            return aic, aiv
        R = next(iter(rows))
        info = {ready: {"name": name, "free": free, "direction": direction}
                for name, ready, free, direction in self.transfers}
        on_chip: dict = {}  # ready id -> info of the transfers that go on chip
        self.peer_ub: dict = {}  # AIV UB tile written by the AIC's Fixpipe -> transfer name
        self.peer_l1: dict = {}  # AIC L1 tile written by the AIVs' MTE3 -> transfer name

        def is_cc(s, action, ids=None) -> bool:
            return (isinstance(s, TileOp) and s.op == f"cc_{action}"
                    and (ids is None or s.args["id"] in ids))

        def touches(item, name: str) -> bool:
            items = walk(item.body) if isinstance(item, Loop) else [item]
            return any(isinstance(x, TileOp) and name in _accesses(x) for x in items)

        def last_toucher(item, name: str) -> TileOp:
            items = list(walk(item.body)) if isinstance(item, Loop) else [item]
            return [x for x in items if isinstance(x, TileOp) and name in _accesses(x)][-1]

        def fix_aiv(body: list) -> list:
            out: list = []
            after: dict = {}  # index in body -> ops to append after that item
            n = 0
            while n < len(body):
                s = body[n]
                used = 1  # items of body this step consumed
                if isinstance(s, Loop):
                    out.append(dataclasses.replace(s, body=fix_aiv(s.body)))
                elif is_cc(s, "wait", info) and info[s.args["id"]]["direction"] == "c2v":
                    t = info[s.args["id"]]
                    target = body[n + 1].args["dst"]["buffer"]
                    used = 3 if t["free"] is not None else 2  # wait, workspace read, set "free"
                    uses = [j for j in range(n + used, len(body)) if touches(body[j], target)]
                    if t["free"] is not None and (not uses or any(touches(x, target) for x in body[:n])):
                        out.append(s)  # keeps the workspace
                        used = 1
                    else:
                        on_chip[s.args["id"]] = {**t, "target": target}
                        self.peer_ub[target] = t["name"]
                        # The wait blocks the pipe that uses the tile; tiles used on several pipes
                        # (e.g. vector ops and a copy out) block the scalar unit, which orders them all.
                        pipes = {_aiv_pipe(x, bufs) for x in walk(body[n + used:])
                                 if isinstance(x, TileOp) and target in _accesses(x)}
                        pipe = pipes.pop() if len(pipes) == 1 else ("S" if pipes else "V")
                        out.append(self._cc("wait", s.args["id"], pipe,
                                            f"{t['name']} from the Cube: this AIV's half is in its UB", s.loc, mode=4))
                        if t["free"] is not None:
                            last = last_toucher(body[uses[-1]], target)
                            after.setdefault(uses[-1], []).append(
                                self._cc("set", t["free"], _aiv_pipe(last, bufs),
                                         f"this AIV's UB tile {target} is free (its last use in the iteration)",
                                         s.loc, mode=4))
                elif (isinstance(s, TileOp) and s.op == "copy" and n + 1 < len(body)
                      and is_cc(body[n + 1], "set", info) and info[body[n + 1].args["id"]]["direction"] == "v2c"):
                    rid = body[n + 1].args["id"]
                    t = info[rid]
                    on_chip[rid] = {**t, "target": t["name"]}
                    self.peer_l1[t["name"]] = t["name"]
                    if t["free"] is not None:
                        w = out.pop()
                        if not is_cc(w, "wait", {t["free"]}):
                            raise InternalCompilerError(f"no 'free' wait before the transfer of {t['name']}",
                                                        stage="split_cores")
                        out.append(self._cc("wait", t["free"], "MTE3",
                                            f"the AIC's L1 tile {t['name']} is free (the AIC has loaded it)", w.loc,
                                            mode=4))
                    out.append(TileOp(op="copy_to_peer_l1", args={"src": dict(s.args["src"]), "target": t["name"],
                                                                  "rows": R}, loc=s.loc))
                    out.append(self._cc("set", rid, "MTE3",
                                        f"{t['name']} from the Vector cores: this AIV's half is in the AIC's L1",
                                        body[n + 1].loc, mode=4))
                    used = 2
                else:
                    out.append(s)
                for j in range(n, n + used):
                    out.extend(after.pop(j, []))
                n += used
            return out

        def fix_aic(body: list) -> list:
            out: list = []
            free_after_gemm: list = []  # (tile, free id): set once the gemm that loads the tile is issued
            n = 0
            while n < len(body):
                s = body[n]
                nxt = body[n + 1] if n + 1 < len(body) else None
                used = 1
                if isinstance(s, Loop):
                    out.append(dataclasses.replace(s, body=fix_aic(s.body)))
                elif (isinstance(s, TileOp) and s.op == "copy" and is_cc(nxt, "set", on_chip)
                      and on_chip[nxt.args["id"]]["direction"] == "c2v"):
                    t = on_chip[nxt.args["id"]]
                    if t["free"] is not None and not is_cc(out.pop(), "wait", {t["free"]}):
                        raise InternalCompilerError(f"no 'free' wait before the transfer of {t['name']}",
                                                    stage="split_cores")
                    for sub in (0, 1):
                        if t["free"] is not None:
                            out.append(self._cc("wait", t["free"], "FIX", f"AIV {sub}'s UB tile {t['target']} is free",
                                                s.loc, mode=4, sub=sub))
                        out.append(TileOp(op="copy_to_peer_ub", args={"src": s.args["src"]["buffer"],
                                                                       "target": t["target"], "sub": sub}, loc=s.loc))
                        out.append(self._cc("set", nxt.args["id"], "FIX",
                                            f"{t['name']} from the Cube to AIV {sub}: its half is in its UB", nxt.loc,
                                            mode=4, sub=sub))
                    used = 2
                elif is_cc(s, "wait", on_chip) and on_chip[s.args["id"]]["direction"] == "v2c":
                    t = on_chip[s.args["id"]]
                    for sub in (0, 1):
                        out.append(self._cc("wait", s.args["id"], "MTE1",
                                            f"{t['name']} from AIV {sub}: its half is in L1", s.loc, mode=4, sub=sub))
                    used = 2  # the workspace load is gone: the AIVs wrote the tile into L1
                    if t["free"] is not None:
                        if not is_cc(body[n + 2], "set", {t["free"]}):
                            raise InternalCompilerError(f"no 'free' set after the load of {t['name']}",
                                                        stage="split_cores")
                        free_after_gemm.append((t["name"], t["free"]))
                        used = 3
                else:
                    out.append(s)
                    if isinstance(s, TileOp) and s.op == "gemm":
                        for tile, fid in [x for x in free_after_gemm if x[0] in _accesses(s)]:
                            free_after_gemm.remove((tile, fid))
                            for sub in (0, 1):
                                out.append(self._cc("set", fid, "MTE1", f"L1 tile {tile} loaded: AIV {sub} may "
                                                    "write it again", s.loc, mode=4, sub=sub))
                n += used
            if free_after_gemm:
                raise InternalCompilerError(f"no gemm reads {free_after_gemm} after its transfer", stage="split_cores")
            return out

        aiv = fix_aiv(aiv)
        aic = fix_aic(aic)
        for t in on_chip.values():
            self.ws.pop(f"ws_{t['name']}", None)
        # Re-pack the workspace without the tiles that now stay on chip.
        off = 0
        offsets = {}
        for wname, b in self.ws.items():
            offsets[wname] = off
            off += (b.numel * b.elem_bytes + 511) // 512 * 512
        self.ws_offsets, self.ws_offset = offsets, off
        self.transfers = [(n, r, f, (d + ("-ub" if d == "c2v" else "-l1")) if r in on_chip else d)
                          for n, r, f, d in self.transfers]
        return aic, aiv

    def body(self, items: list, state: dict):
        aic: list = []
        aiv: list = []
        for s in items:
            if isinstance(s, Loop):
                before = dict(state)
                # Dry run: the state the loop carries. It may meet a transfer first, which then records
                # its loop: the loop is on the path here too (a transfer recorded outside every loop
                # would lose its "free" flag).
                self.loop_path.append(id(s))
                _, _, after = self.body(s.body, dict(state))
                self.loop_path.pop()
                # Bring each accumulator into the state the loop body carries before the loop.
                for name in self.mixed_accs:
                    if before[name] != after[name]:
                        if before[name] == "zero" and after[name] == "vec":
                            aiv.append(TileOp(op="fill", args={"dst": self._full(name), "value": 0.0}, loc=s.loc))
                            if self._first_is_gemm(s.body, name):
                                aic.append(TileOp(op="fill", args={"dst": self._full(name), "value": 0.0},
                                                  loc=s.loc))
                        elif before[name] == "cube" and after[name] == "vec":
                            a1, v1 = self.route_to_vector(name, s.loc, accumulate=False)
                            aic += a1
                            aiv += v1
                        elif before[name] == "zero" and after[name] == "cube":
                            aic.append(TileOp(op="fill", args={"dst": self._full(name), "value": 0.0}, loc=s.loc))
                        state[name] = after[name]
                self.loop_path.append(id(s))
                a_body, v_body, state = self.body(s.body, state)
                self.loop_path.pop()
                if a_body:
                    aic.append(dataclasses.replace(s, body=a_body))
                if v_body:
                    aiv.append(dataclasses.replace(s, body=v_body))
                continue
            a, v = self.op(s, state)
            aic += a
            aiv += v
        return aic, aiv, state

    def _full(self, name: str) -> dict:
        buf = self.k.buffers[name]
        return {"buffer": name, "base": [tirx.IntImm("int32", 0)] * len(buf.shape), "extents": list(buf.shape)}

    @staticmethod
    def _first_is_gemm(body: list, name: str) -> bool:
        for s in walk(body):
            if isinstance(s, TileOp) and name in _touches(s):
                return s.op == "gemm"
        return False

    def op(self, s: TileOp, state: dict) -> tuple[list, list]:
        touched = _touches(s)
        accs = touched & self.mixed_accs
        if s.op == "gemm":
            aic, aiv = [], []
            A, B, C = (s.args[k]["buffer"] for k in ("A", "B", "C"))
            for opnd in (A, B):
                if opnd in self.mixed_operands:
                    a1, v1 = self.route_to_cube(opnd, s.loc)
                    aic += a1
                    aiv += v1
            if C in self.mixed_accs:
                if state[C] == "vec":
                    # The vector side owns the value: compute a fresh product and add it there.
                    aic.append(dataclasses.replace(s, args={**s.args, "clear_accum": True}))
                    a1, v1 = self.route_to_vector(C, s.loc, accumulate=True)
                    return aic + a1, aiv + v1
                aic.append(s)
                state[C] = "cube"
                return aic, aiv
            aic.append(s)
            return aic, aiv
        if s.op == "fill" and s.args["dst"]["buffer"] in self.mixed_accs:
            name = s.args["dst"]["buffer"]
            if const_zero(s.args["value"]):
                state[name] = "zero"
                return [s], []
            state[name] = "vec"
            return [], [s]
        if self.side(s) == "cube":
            return [s], []
        aic, aiv = [], []
        for name in sorted(accs):
            if state[name] == "cube":
                a1, v1 = self.route_to_vector(name, s.loc, accumulate=False)
                aic += a1
                aiv += v1
            elif state[name] == "zero":
                aiv.append(TileOp(op="fill", args={"dst": self._full(name), "value": 0.0}, loc=s.loc))
            state[name] = "vec"
        return aic, aiv + [s]


def _round_trips(aiv_body: list, transfers: list) -> list:
    """(ready id of a Cube->Vector tile, ready id of a Vector->Cube tile) where the AIVs compute the
    second from the first in the same statement list: the AIC's wait for the second then implies
    the AIVs consumed the first."""
    ready_of = {r: n for n, r, _f, d in transfers if d.startswith("c2v")}
    v2c = {r for _n, r, _f, d in transfers if d.startswith("v2c")}
    trips = []

    def scan(body):
        for s in body:
            if isinstance(s, Loop):
                scan(s.body)
        for a, s in enumerate(body):
            if not (isinstance(s, TileOp) and s.op == "cc_wait" and s.args["id"] in ready_of):
                continue
            tainted = set()
            nxt = body[a + 1] if a + 1 < len(body) else None
            if isinstance(nxt, TileOp) and nxt.op == "copy":
                tainted.add(nxt.args["dst"]["buffer"])
            else:  # the tile arrived in UB directly: the transfer's own tile
                tainted.add(ready_of[s.args["id"]])
            for t in body[a + 1:]:
                if isinstance(t, TileOp) and t.op not in ("cc_set", "cc_wait"):
                    touched = _touches(t)
                    if touched & tainted:
                        tainted |= touched
                if (isinstance(t, TileOp) and t.op == "cc_set" and t.args["id"] in v2c):
                    src = _v2c_source(body, t)
                    if src in tainted:
                        trips.append((s.args["id"], t.args["id"]))

    scan(aiv_body)
    return trips


def _v2c_source(body: list, set_op: TileOp) -> str | None:
    k = body.index(set_op)
    prev = body[k - 1] if k > 0 else None
    if isinstance(prev, TileOp) and prev.op in ("copy", "copy_to_peer_l1"):
        return prev.args["src"]["buffer"]
    return None


def _drop_flags(body: list, ids: set) -> list:
    out = []
    for s in body:
        if isinstance(s, Loop):
            out.append(dataclasses.replace(s, body=_drop_flags(s.body, ids)))
        elif isinstance(s, TileOp) and s.op.startswith("cc_") and s.args["id"] in ids:
            continue
        else:
            out.append(s)
    return out


def const_zero(v) -> bool:
    from .lower_parallel import const_value

    return const_value(v) == 0.0


def split_cores(kernel: Kernel):
    """(aic, aiv) kernels for a kernel that needs both core kinds, else None."""
    sp = _Splitter(kernel)
    if not sp.mixed:
        return None
    aic_body, aiv_body = sp.split()
    common = {n: dataclasses.replace(b) for n, b in kernel.buffers.items() if b.kind == "param"}
    ws = {n: dataclasses.replace(b) for n, b in sp.ws.items()}
    used_aic = {n for s in walk(aic_body) if isinstance(s, TileOp) for n in _touches(s)}
    used_aiv = {n for s in walk(aiv_body) if isinstance(s, TileOp) for n in _touches(s)}
    aic_bufs = {**common, **ws, **{n: dataclasses.replace(b) for n, b in kernel.buffers.items()
                                   if b.kind != "param" and n in used_aic}}
    aiv_bufs = {**common, **ws, **{n: dataclasses.replace(b) for n, b in kernel.buffers.items()
                                   if b.kind != "param" and n in used_aiv},
                **{n: dataclasses.replace(b) for n, b in sp.extra_aiv.items()}}
    peer_ub, peer_l1 = getattr(sp, "peer_ub", {}), getattr(sp, "peer_l1", {})
    trips = _round_trips(aiv_body, sp.transfers)
    attrs = {"workspace": dict(sp.ws_offsets), "workspace_bytes": sp.ws_offset, "peer_ub": dict(peer_ub),
             "peer_l1": dict(peer_l1), "round_trips": trips,
             "cross_core": [{"name": t[0], "ready": t[1], "free": t[2], "direction": t[3],
                             "loc": sp.transfer_loc.get(t[1])} for t in sp.transfers]}
    # peer_targets: the tiles of this core that the other core writes in place (one fixed address:
    # multi_buffer does not rotate them). The AIC's list keeps the AIV targets' names too, as before.
    aic = kernel.replace(name=kernel.name, buffers=aic_bufs, body=aic_body,
                         attrs={**attrs, "core": "AIC", "peer_targets": {**peer_ub, **peer_l1}})
    aiv = kernel.replace(name=kernel.name, buffers=aiv_bufs, body=aiv_body,
                         attrs={**attrs, "core": "AIV", "peer_targets": dict(peer_ub)})
    aiv = split_rows(aiv)
    verify_split(aic, aiv)
    return aic, aiv


def verify_split(aic: Kernel, aiv: Kernel) -> None:
    """Cross-core flags pair up: every (logical id, AIV) the AIC waits for is set by the AIVs and vice
    versa, ids are 0-10, mode 4 appears only on dav-3510 and every mode-4 op of the AIC names an AIV;
    on-chip transfers have no workspace and dav-c220 has none; the two AIVs split the rows (unless a
    crossing tile has an odd height, which assign_layout then rejects)."""
    def ops(k: Kernel) -> list:
        return [s for s in walk(k.body) if isinstance(s, TileOp) and s.op in ("cc_set", "cc_wait")]

    def keys(k: Kernel, action: str, core: str) -> set:
        out = set()
        for s in ops(k):
            if s.op != f"cc_{action}":
                continue
            a = s.args
            if not 0 <= a["id"] <= 10:
                raise InternalCompilerError(f"cross-core flag id {a['id']} outside 0-10", stage="split_cores")
            if a.get("mode", 2) == 4:
                if aic.arch.name != "dav-3510":
                    raise InternalCompilerError("mode-4 cross-core flag on " + aic.arch.name, stage="split_cores")
                if core == "AIC" and a.get("sub") not in (0, 1):
                    raise InternalCompilerError(f"mode-4 flag {a['id']} on the AIC names no AIV", stage="split_cores")
                out |= {(a["id"], 4, a["sub"])} if core == "AIC" else {(a["id"], 4, 0), (a["id"], 4, 1)}
            else:
                out.add((a["id"], a.get("mode", 2), None))
        return out

    for waiter, setter in (("AIC", "AIV"), ("AIV", "AIC")):
        k_wait, k_set = (aic, aiv) if waiter == "AIC" else (aiv, aic)
        missing = keys(k_wait, "wait", waiter) - keys(k_set, "set", setter)
        if missing:
            raise InternalCompilerError(f"the {waiter} waits for cross-core flags {sorted(missing, key=str)} that the "
                                        f"{setter} never sets", stage="split_cores")
    heights = {aic.buffers[t["name"]].shape[0] for t in aic.attrs.get("cross_core", []) if t["name"] in aic.buffers}
    if aiv.attrs.get("row_split") is None and heights and not any(h % 2 for h in heights):
        raise InternalCompilerError(f"the AIVs do not share the rows of the crossing tiles (heights "
                                    f"{sorted(heights)}): both would run every op on whole tiles", stage="split_cores")
    for t in aic.attrs.get("cross_core", []):
        on_chip = t["direction"] in ("c2v-ub", "v2c-l1")
        if on_chip and f"ws_{t['name']}" in aic.attrs.get("workspace", {}):
            raise InternalCompilerError(f"{t['name']} crosses on chip but keeps a workspace", stage="split_cores")
        if on_chip and aic.arch.name != "dav-3510":
            raise InternalCompilerError(f"on-chip transfer of {t['name']} on {aic.arch.name}", stage="split_cores")


# ------------------------------------------------------------------ the two AIVs share the rows


def split_rows(aiv: Kernel) -> Kernel:
    """Give each AIV half of the rows of every row-block tile (rows R of the crossing tiles). Crossing
    tiles of different heights (e.g. a bK-row operand and a bM-row accumulator) each split at their own
    height: a tile of R rows (R one of the crossing heights) is halved, AIV ``sub`` taking rows
    [sub * R/2, (sub + 1) * R/2) of it."""
    crossing = [b for b in aiv.buffers.values() if b.kind == "workspace"]
    rows = {b.shape[0] // aiv.block_dim for b in crossing}
    rows |= {aiv.buffers[t].shape[0] for t in (*aiv.attrs.get("peer_ub", {}), *aiv.attrs.get("peer_l1", {}))}
    if not rows or any(R % 2 for R in rows):  # odd heights: assign_layout rejects such Cube tiles
        return aiv.replace(attrs={**aiv.attrs, "row_split": None})
    halves = {R: R // 2 for R in rows}
    sub = tirx.Var(SUB, "int32")
    buffers = {}
    split: dict = {}  # tile -> its rows R before the split
    rowvecs = {R: _row_vectors(aiv, R) for R in rows}
    for n, b in aiv.buffers.items():
        b = dataclasses.replace(b)
        if (b.kind in ("shared", "fragment") and b.shape and b.shape[0] in halves
                and (len(b.shape) == 2 or n in rowvecs[b.shape[0]])):
            split[n] = b.shape[0]
            b.shape = (halves[b.shape[0]], *b.shape[1:])
        buffers[n] = b

    def region(r: dict, tile: str | None) -> dict:
        if tile not in split or buffers[r["buffer"]].kind not in ("param", "workspace"):
            if r["buffer"] in split:
                return {**r, "extents": [halves[split[r["buffer"]]], *r["extents"][1:]]}
            return r
        R = split[tile]
        half = halves[R]
        ext = [int(e) for e in r["extents"]]
        # the tile's row dimension: the last non-unit extent before the columns (or the only one)
        dims = [d for d in range(len(ext)) if ext[d] == R]
        d = dims[0] if len(ext) == 1 or dims[0] != len(ext) - 1 or len(dims) == 1 else dims[0]
        base = list(r["base"])
        base[d] = base[d] + sub * half
        ext[d] = half
        return {**r, "base": base, "extents": ext}

    def fix(op: TileOp) -> TileOp:
        a = op.args
        if op.op == "copy":
            src, dst = a["src"], a["dst"]
            return dataclasses.replace(op, args={**a, "src": region(src, dst["buffer"]),
                                                 "dst": region(dst, src["buffer"])})
        if op.op == "fill":
            return dataclasses.replace(op, args={**a, "dst": region(a["dst"], None)})
        if op.op == "reduce":
            return dataclasses.replace(op, args={**a, "src": region(a["src"], None), "dst": region(a["dst"], None)})
        if op.op == "copy_to_peer_l1":
            return dataclasses.replace(op, args={**a, "src": region(a["src"], None)})
        if op.op == "parallel":
            return _split_parallel(op, split, halves, sub)
        return op

    def walk_fix(body):
        out = []
        for s in body:
            if isinstance(s, Loop):
                out.append(dataclasses.replace(s, body=walk_fix(s.body)))
            elif isinstance(s, TileOp):
                out.append(fix(s))
            else:
                out.append(s)
        return out

    row_split = next(iter(halves.values())) if len(halves) == 1 else "rows/2"  # "rows/2": per tile height
    return aiv.replace(buffers=buffers, body=walk_fix(aiv.body),
                       attrs={**aiv.attrs, "row_split": row_split, "sub_var": sub})


def _row_vectors(k: Kernel, R: int) -> set:
    """1-D buffers of length R that hold one value per row (not per column)."""
    one_d = {n for n, b in k.buffers.items() if len(b.shape) == 1 and b.shape[0] == R and b.kind != "param"}
    rows: set = set()
    links: list = []
    for s in walk(k.body):
        if not isinstance(s, TileOp):
            continue
        if s.op == "reduce" and s.args["dst"]["buffer"] in one_d:
            rows.add(s.args["dst"]["buffer"])
        if s.op == "copy":
            a, b = s.args["src"]["buffer"], s.args["dst"]["buffer"]
            if a in one_d and b in one_d:
                links.append((a, b))
        if s.op == "parallel":
            vs = s.args["vars"]
            for st, _ in s.args["stores"]:
                names = []

                def visit(n, names=names, vs=vs):
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


def _split_parallel(op: TileOp, split, halves: dict, sub) -> TileOp:
    a = op.args
    ext = list(a["extents"])
    if not ext or ext[0] not in halves:
        return op
    i = a["vars"][0]
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
    for st, loc in a["stores"]:
        indices = list(st.indices) if st.buffer.name in split else [rw(x) for x in st.indices]
        stores.append((tirx.BufferStore(st.buffer, rw(st.value), indices), loc))
    return dataclasses.replace(op, args={**a, "extents": ext, "stores": stores})
