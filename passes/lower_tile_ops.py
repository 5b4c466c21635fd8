"""lower_tile_ops: turn every tile op into Ascend ops tagged with pipe and buffers.

Needs: scopes and layouts assigned (infer_scope, assign_layout).
Establishes: the body holds only Loops and AscOps. Each AscOp names its template macro
(``kind``), its pipe, the buffers it reads and writes, and the C++ arguments the template
prints. Copies become DataCopy / DataCopyPad (GM<->UB, with tails), Nd2Nz (GM->L1) and Fixpipe
(L0C->GM, with the cast); a gemm becomes LoadData into L0A/L0B (buffers created here, in the
arch's fractal layouts) and Mmad, stepped through K in chunks when the operand tiles do not
fit L0A/L0B twice (ping/pong buffers inside a pipelined loop with num_stages > 1); fills,
reduces and T.Parallel bodies become vector ops (see lower_parallel). Tails of global shapes
become runtime-valid extents; a tail the hardware path cannot take is rejected with the
dimension named.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx

from ascend_backend.cexpr import cexpr
from ascend_backend.errors import AlignmentError, InternalCompilerError, UnsupportedError
from ascend_backend.ir import CTYPE, Access, AscOp, Buffer, Kernel, Loop, TileOp

from .lower_parallel import ParallelLowerer, VectorEmitter, const_value


@dataclass
class GmTile:
    """A 2-D window of a GM tensor: element offset, row stride, static and valid extents."""

    offset: str
    row_stride: int
    rows: int
    cols: int
    valid_rows: str
    valid_cols: str
    tail_rows: bool
    tail_cols: bool


def gm_window(buf: Buffer, region: dict, tile_shape: tuple, loc) -> GmTile:
    """Map a GM region onto a (rows, cols) tile: innermost dim = columns, next non-unit dim = rows."""
    shape = list(buf.shape)
    base = list(region["base"])
    ext = [int(e) for e in region["extents"]]
    if len(base) != len(shape):
        raise UnsupportedError(f"region of '{buf.name}' has {len(base)} indices for a {len(shape)}-D tensor", loc=loc)
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    rows_t, cols_t = (tile_shape[0], tile_shape[1]) if len(tile_shape) == 2 else (1, tile_shape[0])
    if len(shape) == 1:
        row_dim = None
    else:
        non_unit = [d for d in range(len(shape) - 1) if ext[d] != 1]
        if len(non_unit) > 1 or ext[-1] not in (cols_t,) and not (rows_t == 1 and ext[-1] == cols_t):
            raise UnsupportedError(
                f"copy between '{buf.name}' region {ext} and a tile of shape {list(tile_shape)}: the tile's last "
                "dimension must be the tensor's innermost dimension",
                loc=loc,
                hint="copy a window whose last extent equals the tile's column count",
            )
        row_dim = non_unit[0] if non_unit else len(shape) - 2
    if ext[-1] != cols_t or (row_dim is not None and ext[row_dim] != rows_t and rows_t != 1):
        raise UnsupportedError(
            f"copy region of '{buf.name}' has extents {ext}, which do not match the tile shape {list(tile_shape)}",
            loc=loc,
        )
    offset_terms = []
    for d, b in enumerate(base):
        txt = cexpr(b)
        if txt != "0":
            offset_terms.append(txt if strides[d] == 1 else f"{txt} * {strides[d]}")
    offset = " + ".join(offset_terms) if offset_terms else "0"
    cols_dim = len(shape) - 1

    def valid(d, n) -> tuple[str, bool]:
        if d is None:
            return str(n), False
        if shape[d] % n == 0 and shape[d] >= n:
            return str(n), False
        return f"min_i({n}, {shape[d]} - ({cexpr(base[d])}))", True

    vr, tr = valid(row_dim, rows_t) if rows_t > 1 else ("1", False)
    vc, tc = valid(cols_dim, cols_t)
    row_stride = strides[row_dim] if row_dim is not None else shape[-1]
    return GmTile(offset, row_stride, rows_t, cols_t, vr, vc, tr, tc)


def _t(name: str, off: str = "0") -> str:
    return name if off in ("0", "") else f"{name}[{off}]"


# Suffixes of the two L0 buffers a K-stepped gemm alternates between (multi_buffer leaves them alone).
PINGPONG = ("_ping", "_pong")


class TileLowerer:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.buffers = kernel.copy_buffers()
        self.arch = kernel.arch
        self.vec = VectorEmitter(self.buffers, self.arch)
        self.loop_stack: list = []
        self.pending_clear: dict[str, int] = {}  # L0C buffer -> loop depth at T.clear
        self.valid_extents: dict[str, tuple] = {}  # L1 buffer -> (valid_rows, valid_cols) of last load
        # UB tile -> runtime valid column count, when its last fill from GM may have had a column
        # tail (the columns past it hold stale data, which reductions must not see).
        self.ub_valid_cols: dict[str, str] = {}
        self.uses_cube = False
        self.uses_vector = False

    # ------------------------------------------------------------ driver
    def run(self) -> Kernel:
        body = self.lower_body(self.kernel.body)
        ktype = "MIX_AIC_1_2" if self.uses_cube and self.uses_vector else (
            "AIC_ONLY" if self.uses_cube else "AIV_ONLY")
        if ktype == "MIX_AIC_1_2":
            raise UnsupportedError(
                "this kernel needs both the Cube and the Vector cores; the automatic Cube/Vector split is "
                "not supported yet",
                hint="split the matrix part and the element-wise part into two kernels for now",
            )
        return self.kernel.replace(body=body, buffers=self.buffers, kernel_type=ktype)

    def lower_body(self, body: list) -> list:
        out: list = []
        for s in body:
            if isinstance(s, Loop):
                self.loop_stack.append(s)
                inner = self.lower_body(s.body)
                self.loop_stack.pop()
                out.append(Loop(var=s.var, extent=s.extent, body=inner, kind=s.kind, num_stages=s.num_stages,
                                loc=s.loc))
            elif isinstance(s, TileOp):
                ops = getattr(self, f"lower_{s.op}")(s)
                for op in ops:
                    if op.loc is None:
                        op.loc = s.loc
                    self._track_valid(op)
                    if op.kind.startswith("cross_core"):
                        continue
                    if op.pipe in ("M", "MTE1", "FIX") or (op.pipe == "MTE2" and self.buffers[
                            op.writes[0].buffer].scope in ("L1", "L0A", "L0B")):
                        self.uses_cube = True
                    else:
                        self.uses_vector = True
                out.extend(ops)
            else:
                raise InternalCompilerError(f"unexpected statement {type(s).__name__}", stage="lower_tile_ops")
        return out

    def _track_valid(self, op: AscOp) -> None:
        """Propagate the valid column count of UB tiles through the ops that write them."""
        if op.kind == "copy_gm_to_ub":
            vc = op.params.get("valid_cols")
            for w in op.writes:
                if vc:
                    self.ub_valid_cols[w.buffer] = vc
                else:
                    self.ub_valid_cols.pop(w.buffer, None)
        elif op.pipe == "V":
            vcs = {self.ub_valid_cols[r.buffer] for r in op.reads if r.buffer in self.ub_valid_cols}
            for w in op.writes:
                if vcs and self.buffers[w.buffer].cols == max(
                        self.buffers[r.buffer].cols for r in op.reads if r.buffer in self.ub_valid_cols):
                    self.ub_valid_cols[w.buffer] = sorted(vcs)[0]
                elif op.kind != "vec_fold_loop":
                    self.ub_valid_cols.pop(w.buffer, None)

    # ------------------------------------------------------------ copy
    def lower_copy(self, s: TileOp) -> list:
        src = self.buffers[s.args["src"]["buffer"]]
        dst = self.buffers[s.args["dst"]["buffer"]]
        key = (src.scope, dst.scope)
        if key == ("GM", "UB"):
            return self.copy_gm_ub(s, src, dst, s.args["src"])
        if key == ("UB", "GM"):
            return self.copy_ub_gm(s, src, dst, s.args["dst"])
        if key == ("GM", "L1"):
            return [self.copy_gm_l1(s, src, dst, s.args["src"])]
        if key == ("L0C", "GM"):
            return [self.fixpipe_gm(s, src, dst, s.args["dst"])]
        if key == ("UB", "UB"):
            self._check_full(s.args["src"], src, s)
            self._check_full(s.args["dst"], dst, s)
            if src.shape != dst.shape:
                raise UnsupportedError(
                    f"T.copy from '{src.name}' {list(src.shape)} to '{dst.name}' {list(dst.shape)}: shapes differ",
                    loc=s.loc)
            return self.vec.copy_or_cast(dst.name, src.name, s.loc)
        raise UnsupportedError(
            f"T.copy from {src.scope} ('{src.name}') to {dst.scope} ('{dst.name}') is not supported on this path",
            loc=s.loc,
            hint="Cube results (gemm accumulators) can be copied to global memory; element-wise work on them "
            "needs the Cube/Vector split, which is not available yet" if src.scope == "L0C" else None,
        )

    def _check_full(self, region: dict, buf: Buffer, s: TileOp) -> None:
        if any(cexpr(b) != "0" for b in region["base"]) or [int(e) for e in region["extents"]] != list(buf.shape):
            raise UnsupportedError(
                f"T.copy of a part of tile '{buf.name}' is not supported; copy whole tiles", loc=s.loc)

    def copy_gm_ub(self, s, gm: Buffer, ub: Buffer, region: dict) -> list:
        self._check_full(s.args["dst"], ub, s)
        w = gm_window(gm, region, ub.shape, s.loc)
        stage = ub
        ops = []
        if gm.dtype != ub.dtype:
            stage = self.vec.temp(ub.shape, gm.dtype)
        ops.append(self._gm_ub_op(gm, stage, w, s.loc))
        if stage is not ub:
            ops.extend(self.vec.copy_or_cast(ub.name, stage.name, s.loc))
            self.vec.release(stage)
        return ops

    def _gm_ub_op(self, gm: Buffer, ub: Buffer, w: GmTile, loc) -> AscOp:
        return self._gm_ub_copy(gm, ub, w, loc, to_ub=True)

    def copy_ub_gm(self, s, ub: Buffer, gm: Buffer, region: dict) -> list:
        self._check_full(s.args["src"], ub, s)
        w = gm_window(gm, region, ub.shape, s.loc)
        ops = []
        stage = ub
        if gm.dtype != ub.dtype:
            stage = self.vec.temp(ub.shape, gm.dtype)
            ops.extend(self.vec.copy_or_cast(stage.name, ub.name, s.loc))
        ops.append(self._ub_gm_op(stage, gm, w, s.loc))
        if stage is not ub:
            self.vec.release(stage)
        return ops

    def _ub_gm_op(self, ub: Buffer, gm: Buffer, w: GmTile, loc) -> AscOp:
        return self._gm_ub_copy(gm, ub, w, loc, to_ub=False)

    def _gm_ub_copy(self, gm: Buffer, ub: Buffer, w: GmTile, loc, to_ub: bool) -> AscOp:
        """GM <-> UB: DataCopy when the window is whole, contiguous rows of 32 B multiples, else
        DataCopyPad (GM side strides in bytes, UB side in 32 B blocks, rows padded to 32 B in UB)."""
        esz = gm.elem_bytes
        contiguous = (w.cols * esz) % 32 == 0 and not w.tail_cols and (w.rows == 1 or (
            w.row_stride == w.cols and ub.pitch == w.cols))
        gm_t = _t(f"{gm.name}_gm", w.offset)
        params = {"dst": ub.name if to_ub else gm_t, "src": gm_t if to_ub else ub.name, "ctype": CTYPE[gm.dtype]}
        if to_ub:
            params["valid_cols"] = w.valid_cols if w.tail_cols else None
        if contiguous:
            params.update(form="count", count=f"{w.valid_rows} * {w.cols}" if w.tail_rows else str(w.rows * w.cols))
            name = "DataCopy"
        else:
            gm_gap = f"({w.row_stride} - ({w.valid_cols})) * {esz}"
            ub_gap = f"({ub.pitch * esz} - (({w.valid_cols}) * {esz} + 31) / 32 * 32) / 32"
            params.update(form="pad", block_count=w.valid_rows, block_len=f"({w.valid_cols}) * {esz}",
                          src_stride=gm_gap if to_ub else ub_gap, dst_stride=ub_gap if to_ub else gm_gap)
            name = "DataCopyPad"
        if to_ub:
            return AscOp(kind="copy_gm_to_ub", pipe="MTE2", reads=[Access(gm.name)], writes=[Access(ub.name)],
                         params=params, text=f"{name} {gm.name} -> {ub.name}", loc=loc)
        return AscOp(kind="copy_ub_to_gm", pipe="MTE3", reads=[Access(ub.name)], writes=[Access(gm.name)],
                     params=params, text=f"{name} {ub.name} -> {gm.name}", loc=loc)

    def copy_gm_l1(self, s, gm: Buffer, l1: Buffer, region: dict) -> AscOp:
        self._check_full(s.args["dst"], l1, s)
        if gm.dtype != l1.dtype:
            raise UnsupportedError(
                f"T.copy from '{gm.name}' ({gm.dtype}) to gemm operand '{l1.name}' ({l1.dtype}) would need a cast "
                "on the way into L1, which the hardware path (Nd2Nz) cannot do",
                loc=s.loc, hint="give the global tensor the operand's dtype")
        w = gm_window(gm, region, l1.shape, s.loc)
        self.valid_extents[l1.name] = (w.valid_rows if w.tail_rows else None, w.valid_cols if w.tail_cols else None,
                                       gm.shape, s.loc)
        params = {
            "dst": l1.name, "src": _t(f"{gm.name}_gm", w.offset), "ctype": CTYPE[gm.dtype],
            "n_value": w.valid_rows, "d_value": w.valid_cols, "src_d_value": str(w.row_stride),
            "dst_c0_stride": str(l1.rows), "dst_n_stride": "1",
        }
        return AscOp(kind="copy_gm_to_l1", pipe="MTE2", reads=[Access(gm.name)], writes=[Access(l1.name)],
                     params=params, text=f"Nd2Nz {gm.name} -> {l1.name}", loc=s.loc)

    def fixpipe_gm(self, s, l0c: Buffer, gm: Buffer, region: dict) -> AscOp:
        self._check_full(s.args["src"], l0c, s)
        w = gm_window(gm, region, l0c.shape, s.loc)
        quant = {"float16": "QuantMode_t::F322F16", "bfloat16": "QuantMode_t::F322BF16",
                 "float32": "QuantMode_t::NoQuant"}.get(gm.dtype)
        if quant is None:
            raise UnsupportedError(f"gemm result copied to '{gm.name}' of dtype {gm.dtype}; Fixpipe writes "
                                   "float16, bfloat16 or float32", loc=s.loc)
        params = {"dst": _t(f"{gm.name}_gm", w.offset), "src": l0c.name, "ctype": CTYPE[gm.dtype],
                  "m_size": w.valid_rows, "n_size": w.valid_cols, "src_stride": str(l0c.rows),
                  "dst_stride": str(w.row_stride), "quant": quant, "relu": "false"}
        return AscOp(kind="fixpipe_to_gm", pipe="FIX", reads=[Access(l0c.name)], writes=[Access(gm.name)],
                     params=params, text=f"Fixpipe {l0c.name} -> {gm.name} ({gm.dtype})", loc=s.loc)

    # ------------------------------------------------------------ fill
    def lower_fill(self, s: TileOp) -> list:
        dst = self.buffers[s.args["dst"]["buffer"]]
        value = const_value(s.args["value"])
        if dst.scope == "L0C":
            if value != 0:
                raise UnsupportedError(f"T.fill of gemm accumulator '{dst.name}' with {value}; only T.clear (0) is "
                                       "supported on an accumulator", loc=s.loc)
            self.pending_clear[dst.name] = len(self.loop_stack)
            return []
        if dst.scope != "UB":
            raise UnsupportedError(f"T.fill of '{dst.name}' in {dst.scope} is not supported", loc=s.loc)
        self._check_full(s.args["dst"], dst, s)
        if value is None:
            raise UnsupportedError(f"T.fill value {s.args['value']} is not a constant", loc=s.loc)
        return self.vec.duplicate(dst.name, value, s.loc)

    # ------------------------------------------------------------ reduce
    def lower_reduce(self, s: TileOp) -> list:
        a = s.args
        src = self.buffers[a["src"]["buffer"]]
        dst = self.buffers[a["dst"]["buffer"]]
        if src.scope != "UB" or dst.scope != "UB":
            raise UnsupportedError("reductions work on vector tiles (T.alloc_fragment / T.alloc_shared not used "
                                   "by a gemm)", loc=s.loc)
        if a["type"] not in ("sum", "max", "min"):
            raise UnsupportedError(f"T.reduce_{a['type']} is not supported (sum, max, min are)", loc=s.loc)
        if len(src.shape) == 2 and a["dim"] not in (1, -1):
            raise UnsupportedError(f"T.reduce_{a['type']} over dim={a['dim']} of '{src.name}': only the last "
                                   "dimension (dim=1, a row reduction) is supported", loc=s.loc,
                                   hint="transpose the tile or reduce along rows")
        if dst.numel != src.rows:
            raise UnsupportedError(f"reduce output '{dst.name}' has {dst.numel} elements for {src.rows} rows",
                                   loc=s.loc)
        if src.dtype != dst.dtype or src.dtype not in ("float32", "float16"):
            raise UnsupportedError(f"T.reduce_{a['type']} from {src.dtype} to {dst.dtype}: reductions take float32 "
                                   "or float16 tiles of one dtype", loc=s.loc,
                                   hint="T.copy the tile into a float32 fragment first")
        return self.vec.row_reduce(a["type"], dst.name, src.name, a["clear"], s.loc,
                                   valid_cols=self.ub_valid_cols.get(src.name))

    # ------------------------------------------------------------ cross-core (from split_cores)
    def lower_cc_set(self, s: TileOp) -> list:
        return [self._cc("cross_core_set", s)]

    def lower_cc_wait(self, s: TileOp) -> list:
        return [self._cc("cross_core_wait", s)]

    def _cc(self, kind: str, s: TileOp) -> AscOp:
        a = s.args
        verb = "set" if kind.endswith("set") else "wait"
        mode = a.get("mode", 2)
        # Mode 4 (dav-3510): an AIC names AIV 1's flag f as f + 16; the AIVs always use f.
        hw_id = a["id"] + 16 * a.get("sub", 0)
        return AscOp(kind=kind, pipe=a["pipe"], reads=[], writes=[],
                     params={"id": a["id"], "hw_id": hw_id, "pipe": a["pipe"], "mode": mode, "sub": a.get("sub"),
                             "reason": a["reason"]},
                     text=f"CrossCore{verb.capitalize()}Flag<{mode}> {hw_id} ({a['reason']})", loc=s.loc)

    def lower_copy_to_peer_ub(self, s: TileOp) -> list:
        """dav-3510: Fixpipe one AIV's half of the rows of an accumulator straight into that AIV's UB."""
        C = self.buffers[s.args["src"]]
        rows, cols = C.shape
        half = rows // 2
        target = s.args["target"]
        sub = s.args["sub"]
        return [AscOp(kind="fixpipe_to_peer_ub", pipe="FIX", reads=[Access(C.name)], writes=[],
                      params={"src": C.name, "dst": f"{target}_peer", "half": half, "rows": rows, "cols": cols,
                              "pitch": (cols + 15) // 16 * 16, "sub": sub},
                      text=f"Fixpipe {C.name} rows [{sub * half}, {(sub + 1) * half}) -> {target} in the UB of AIV "
                           f"{sub}", loc=s.loc)]

    def lower_copy_to_peer_l1(self, s: TileOp) -> list:
        """dav-3510: this AIV's half of the rows of a UB tile into the AIC's L1 tile (MTE3, ND -> NZ)."""
        src = self.buffers[s.args["src"]["buffer"]]
        self._check_full(s.args["src"], src, s)
        if len(src.shape) != 2:
            raise InternalCompilerError(f"UB -> L1 transfer of a {len(src.shape)}-D tile", stage="lower_tile_ops")
        c0 = 32 // src.elem_bytes
        sub = self.kernel.attrs.get("sub_var")
        if sub is None:
            raise InternalCompilerError("UB -> L1 transfer without a row split between the AIVs",
                                        stage="lower_tile_ops")
        rows_pad = (s.args["rows"] + 15) // 16 * 16
        params = {"dst": f"{s.args['target']}_l1_peer", "src": src.name, "offset": f"{cexpr(sub)} * {src.rows * c0}",
                  "n_value": src.rows, "d_value": src.cols, "src_d_value": src.pitch or src.cols,
                  "dst_c0_stride": rows_pad, "rows": s.args["rows"]}
        return [AscOp(kind="copy_ub_to_peer_l1", pipe="MTE3", reads=[Access(src.name)], writes=[], params=params,
                      text=f"DataCopy {src.name} -> this AIV's rows of {s.args['target']} in the AIC's L1 (Nd2Nz)",
                      loc=s.loc)]

    def lower_accumulate(self, s: TileOp) -> list:
        return self.vec.binary("Add", s.args["dst"], s.args["dst"], s.args["src"], s.loc)

    # ------------------------------------------------------------ parallel
    def lower_parallel(self, s: TileOp) -> list:
        return ParallelLowerer(self.vec, self.buffers, s, self._gm_ub_op, self._ub_gm_op, gm_window).lower()

    # ------------------------------------------------------------ gemm
    def lower_gemm(self, s: TileOp) -> list:
        a = s.args
        A = self.buffers[a["A"]["buffer"]]
        B = self.buffers[a["B"]["buffer"]]
        C = self.buffers[a["C"]["buffer"]]
        tA, tB = a["trans_A"], a["trans_B"]
        if A.scope != "L1" or B.scope != "L1" or C.scope != "L0C":
            raise InternalCompilerError("gemm operands not in L1/L0C", stage="lower_tile_ops")
        if A.dtype != B.dtype:
            raise UnsupportedError(f"gemm operands '{A.name}' ({A.dtype}) and '{B.name}' ({B.dtype}) differ in dtype",
                                   loc=s.loc, hint="use the same dtype for A and B")
        M, K = (A.cols, A.rows) if tA else (A.rows, A.cols)
        Kb, N = (B.cols, B.rows) if tB else (B.rows, B.cols)
        if K != Kb or (M, N) != tuple(C.shape):
            raise UnsupportedError(f"gemm shapes do not agree: A gives MxK={M}x{K}, B gives KxN={Kb}x{N}, C is "
                                   f"{C.shape[0]}x{C.shape[1]}", loc=s.loc)
        # The valid K of this step: the tail of the last copy into A along K.
        kv = self._valid_k(A, tA, s)
        init = self._init_expr(C, a["clear_accum"])
        ks = self._k_step(A, M, N, K, kv)
        if ks == K:
            l0a = self._l0(A, "L0A", (M, K))
            l0b = self._l0(B, "L0B", (K, N))
            return self._gemm_step(A, B, C, l0a, l0b, tA, tB, M, N, K, kv, 0, init, s)
        # The operand tiles exceed what L0A/L0B hold twice over: step through K in chunks of ks.
        # Inside a T.Pipelined loop with num_stages > 1 the chunks alternate between two L0
        # buffers (ping/pong), so the LoadData of one chunk overlaps the Mmad of the previous one
        # (also across iterations: insert_sync's loop-carried flags); otherwise one buffer, serial.
        pingpong = any(lp.kind == "pipelined" and lp.num_stages > 1 for lp in self.loop_stack)
        names = PINGPONG if pingpong else ("",)
        l0as = [self._l0(A, "L0A", (M, ks), n) for n in names]
        l0bs = [self._l0(B, "L0B", (ks, N), n) for n in names]
        ops: list = []
        for c in range(K // ks):
            ops += self._gemm_step(A, B, C, l0as[c % len(names)], l0bs[c % len(names)], tA, tB, M, N, ks, str(ks),
                                   c * ks, init if c == 0 else "false", s)
        return ops

    def _k_step(self, A: Buffer, M: int, N: int, K: int, kv: str) -> int:
        """The K of one LoadData/Mmad step: all of K when both operands fit L0A/L0B twice (the
        multi_buffer pass may then double them) or when K has a runtime tail; otherwise the
        largest multiple of 16 dividing K whose operand chunks fit twice."""
        cap = self.arch.capacity
        esz = A.nbytes // (A.rows * A.cols)

        def fits(k: int, copies: int) -> bool:
            return copies * M * k * esz <= cap["L0A"] and copies * k * N * esz <= cap["L0B"]

        if fits(K, 2) or kv != str(K):
            return K
        for ks in range(K - 16, 15, -16):
            if K % ks == 0 and fits(ks, 2):
                return ks
        return K

    def _gemm_step(self, A: Buffer, B: Buffer, C: Buffer, l0a: Buffer, l0b: Buffer, tA: bool, tB: bool, M: int,
                   N: int, K: int, kv: str, k0: int, init: str, s: TileOp) -> list:
        """LoadData A and B rows k0..k0+K of their L1 tiles into L0A/L0B, then one Mmad."""
        kf = f"{kv} / 16"
        # Element offset of K row k0 inside the NZ tiles in L1: a stored [rows, cols] tile keeps
        # each 16-column block contiguous (rows x 16 elements), so a step along the columns moves
        # k0 * rows elements and a step along the rows k0 * 16.
        a_off = k0 * 16 if tA else k0 * A.rows
        b_off = k0 * B.rows if tB else k0 * 16
        # dav-3510 LoadData2DParamsV2: the L1 region is (mStep x kStep) fractals of the stored
        # tile; ifTranspose stores the transposed region (A stored K x M -> NZ M x K; B stored
        # K x N -> ZN). srcStride/dstStride are the distances between column blocks in fractals.
        a_v2 = ({"m_step": kf, "k_step": M // 16, "src_stride": A.rows // 16, "dst_stride": M // 16,
                 "trans": "true", "note": "A stored K x M, transposed into NZ"} if tA else
                {"m_step": M // 16, "k_step": kf, "src_stride": A.rows // 16, "dst_stride": M // 16,
                 "trans": "false", "note": "A stored M x K, NZ into NZ"})
        b_v2 = ({"m_step": N // 16, "k_step": kf, "src_stride": B.rows // 16, "dst_stride": N // 16,
                 "trans": "false", "note": "B stored N x K: its NZ fractals are already ZN"} if tB else
                {"m_step": kf, "k_step": N // 16, "src_stride": B.rows // 16, "dst_stride": N // 16,
                 "trans": "true", "note": "B stored K x N, each fractal transposed into ZN"})
        part = f" K {k0}..{k0 + K}" if k0 or K != (A.rows if tA else A.cols) else ""
        return [
            AscOp(kind="load_l0a", pipe="MTE1", reads=[Access(A.name)], writes=[Access(l0a.name)],
                  params={"dst": l0a.name, "src": _t(A.name, str(a_off)), "m": M, "k": K, "kv": kv, "trans": tA,
                          "layout": l0a.layout, "src_rows": A.rows, "ctype": CTYPE[A.dtype], "v2": a_v2},
                  text=f"LoadData {A.name}{part} -> {l0a.name}{' (transposed)' if tA else ''}",
                  loc=s.loc),
            AscOp(kind="load_l0b", pipe="MTE1", reads=[Access(B.name)], writes=[Access(l0b.name)],
                  params={"dst": l0b.name, "src": _t(B.name, str(b_off)), "n": N, "k": K, "kv": kv, "trans": tB,
                          "layout": l0b.layout, "src_rows": B.rows, "ctype": CTYPE[B.dtype], "v2": b_v2},
                  text=f"LoadData {B.name}{part} -> {l0b.name}{' (transposed)' if tB else ''}",
                  loc=s.loc),
            AscOp(kind="mmad", pipe="M", reads=[Access(l0a.name), Access(l0b.name)] + (
                [] if init == "true" else [Access(C.name)]), writes=[Access(C.name)],
                  params={"dst": C.name, "a": l0a.name, "b": l0b.name, "m": M, "n": N, "k": kv, "init": init},
                  text=f"Mmad {C.name} {'=' if init == 'true' else '+='} {l0a.name} x {l0b.name}", loc=s.loc),
        ]

    def _valid_k(self, A: Buffer, tA: bool, s: TileOp) -> str:
        K = A.rows if tA else A.cols
        info = self.valid_extents.get(A.name)
        if info is None:
            return str(K)
        vr, vc, gshape, cloc = info
        kv = vr if tA else vc
        if kv is None:
            return str(K)
        gk = gshape[-2] if tA else gshape[-1]
        if gk % 16:
            raise AlignmentError(
                f"the reduction dimension K = {gk} of the gemm is not a multiple of 16, and the tile K = {K} "
                "does not divide it: the Cube core cannot take a partial fractal along K",
                loc=s.loc,
                hint=f"pad K to a multiple of 16 (e.g. {(gk + 15) // 16 * 16}) with zeros, or pick a block_K "
                f"that divides {gk}",
            )
        return f"({kv})"

    def _l0(self, l1: Buffer, scope: str, shape: tuple, suffix: str = "") -> Buffer:
        name = f"{l1.name}_{scope.lower()}{suffix}"
        if name not in self.buffers:
            layout = self.arch.l0a_layout if scope == "L0A" else self.arch.l0b_layout
            self.buffers[name] = Buffer(name=name, shape=shape, dtype=l1.dtype, kind="temp", loc=l1.loc,
                                        scope=scope, layout=layout, role=f"{'A' if scope == 'L0A' else 'B'} operand "
                                        f"of the Mmad, loaded from {l1.name}")
        return self.buffers[name]

    def _init_expr(self, C: Buffer, clear_accum: bool) -> str:
        if clear_accum:
            return "true"
        if C.name not in self.pending_clear:
            return "false"
        depth = self.pending_clear.pop(C.name)
        new_loops = self.loop_stack[depth:]
        if not new_loops:
            return "true"
        return " && ".join(f"({cexpr(lp.var)} == 0)" for lp in new_loops)


def lower_tile_ops(kernel: Kernel) -> Kernel:
    """Lower tile ops to pipe-tagged Ascend ops."""
    out = TileLowerer(kernel).run()
    verify_lowered(out)
    return out


def verify_lowered(kernel: Kernel) -> None:
    """Only Loops and AscOps remain; every op's buffers exist; cube ops on cube pipes only."""
    from ascend_backend.ir import PIPES, walk

    for s in walk(kernel.body):
        if isinstance(s, Loop):
            continue
        if not isinstance(s, AscOp):
            raise InternalCompilerError(f"{type(s).__name__} left after lowering", stage="lower_tile_ops")
        if s.pipe not in PIPES:
            raise InternalCompilerError(f"op {s.kind} on unknown pipe {s.pipe}", stage="lower_tile_ops")
        for acc in s.reads + s.writes:
            if acc.buffer not in kernel.buffers:
                raise InternalCompilerError(f"op {s.kind} touches unknown buffer {acc.buffer}", stage="lower_tile_ops")


__all__ = ["PINGPONG", "lower_tile_ops", "verify_lowered", "tirx"]
