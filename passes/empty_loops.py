"""empty_loops: a gemm accumulator cleared before a loop that may run no iteration is zero after it
even when the loop does not run.

Needs: unpartitioned launches (after cast_on_vector).
Establishes: every ``T.clear`` of a gemm accumulator whose next access is a gemm inside loops (the
clear that lower_tile_ops folds into that gemm's first overwrite, ``FirstIteration``), where one of
those loops may run no iteration, is followed after the outermost of them by
``if (trips < 1) { zero gemm }`` (``verify_empty_loops``).

lower_tile_ops turns ``T.clear(c)`` before ``for k in T.Pipelined(n): T.gemm(a, b, c)`` into the
overwrite of the first Mmad (``cmatrixInitVal`` on k == 0): the Cube has no other way to zero L0C.
With n = 0 at a call (a symbolic K = 0: ``T.ceildiv(K, 64)``) no Mmad runs and the copy of ``c``
reads whatever L0C held. So such a loop gets, after it::

    if (n < 1):
        T.clear(c_zero_a); T.clear(c_zero_b)           # L1 tiles: Fill (InitConstValueParams), MTE2
        T.gemm(c_zero_a, c_zero_b, c, clear_accum=True)  # c = 0 . 0, one fractal deep

with zero tiles of one fractal along K (partition keeps a fill of a tile only gemms read on the
Cube). Loops with a constant extent of 1 or more need nothing; a constant 0 was dropped by the
frontend. A loop whose extent depends on the variable of an enclosing loop of the same chain
(a triangular nest) is left as it is: its first trips may differ from the ones the check sees.
"""

from __future__ import annotations

import dataclasses

from tvm import tirx

from ascend_backend.errors import InternalCompilerError
from ascend_backend.ir import Buffer, BufferKind, If, Kernel, Loop, Program, TileFill, TileGemm, fresh_name, walk
from ascend_backend.ir.nodes import static_int

from .lower_parallel import const_value
from .partition import full_region, tile_buffers


def _chain(items: list, acc: str) -> tuple[list, TileGemm] | None:
    """The loops from ``items`` down to the gemm into ``acc`` that a clear just before ``items`` folds
    into (its first access to ``acc``, reached through loops only), and that gemm; None otherwise."""
    for s in items:
        if isinstance(s, Loop):
            touched = any(acc in tile_buffers(x) for x in walk(s.body) if not isinstance(x, Loop | If))
            if not touched:
                continue
            if s.var is None:  # a while loop: no extent to check
                return None
            inner = _chain(s.body, acc)
            return None if inner is None else ([s, *inner[0]], inner[1])
        if isinstance(s, If):
            if any(acc in tile_buffers(x) for x in walk([s]) if not isinstance(x, Loop | If)):
                return None
            continue
        if acc in tile_buffers(s):
            if isinstance(s, TileGemm) and s.c.buffer == acc and not s.clear_accum and s.scale_a is None:
                return [], s
            return None
    return None


def _may_be_empty(loop: Loop) -> bool:
    n = static_int(loop.extent)
    return n is None or n < 1


def _k_depth(dtype) -> int:
    """One fractal along K for operands of ``dtype`` (32 bytes of K: C0), a multiple of 16 rows too."""
    return max(16, 256 // dtype.bits)


def _vars(e) -> list:
    out: list = []
    tirx.stmt_functor.post_order_visit(e, lambda n: out.append(n) if isinstance(n, tirx.Var) else None)
    return out


def _guard(chain: list):
    """``trips < 1`` for the loops of ``chain`` that may run no iteration (None: none may, or an
    extent reads the variable of a loop of the chain)."""
    vars_ = [lp.var for lp in chain]
    conds = []
    for lp in chain:
        if not _may_be_empty(lp):
            continue
        if any(u.same_as(v) for u in _vars(lp.extent) for v in vars_):
            return None
        conds.append(tirx.LT(lp.extent, tirx.IntImm(lp.extent.dtype, 1)))
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = tirx.Or(out, c)
    return out


def _rewrite(kernel: Kernel) -> Kernel:
    accs = {s.c.buffer for s in walk(kernel.body) if isinstance(s, TileGemm)}
    buffers = dict(kernel.buffers)

    def zero_gemm(acc: str, gemm: TileGemm, cond, loc) -> If:
        c = buffers[acc]
        a_dt, b_dt = buffers[gemm.a.buffer].dtype, buffers[gemm.b.buffer].dtype
        kz = max(_k_depth(a_dt), _k_depth(b_dt))
        tiles = []
        for which, shape, dt in (("a", (c.shape[0], kz), a_dt), ("b", (kz, c.shape[1]), b_dt)):
            name = fresh_name(f"{acc}_zero_{which}", set(buffers))
            buffers[name] = Buffer(name=name, shape=shape, dtype=dt, kind=BufferKind.TEMP, loc=c.loc,
                                   role=f"zeros: the gemm that clears {acc} when its loop runs no iteration")
            tiles.append(buffers[name])
        za, zb = tiles
        zero = tirx.FloatImm("float32", 0.0)
        return If(cond=cond, loc=loc, then_body=[
            TileFill(dst=full_region(za), value=zero, loc=loc), TileFill(dst=full_region(zb), value=zero, loc=loc),
            TileGemm(a=full_region(za), b=full_region(zb), c=full_region(c), clear_accum=True, loc=loc)])

    def visit(items: list) -> list:
        out: list = []
        after: dict = {}  # index of the loop -> the guard to put after it
        for n, s in enumerate(items):
            if isinstance(s, TileFill) and s.dst.buffer in accs and const_value(s.value) == 0.0:
                rest = items[n + 1:]
                found = _chain(rest, s.dst.buffer)
                if found and found[0]:
                    chain, gemm = found
                    cond = _guard(chain)
                    if cond is not None:
                        at = n + 1 + next(i for i, x in enumerate(rest) if x is chain[0])
                        after[at] = zero_gemm(s.dst.buffer, gemm, cond, chain[0].loc)
        for n, s in enumerate(items):
            if isinstance(s, Loop):
                s = dataclasses.replace(s, body=visit(s.body))
            elif isinstance(s, If):
                s = dataclasses.replace(s, then_body=visit(s.then_body), else_body=visit(s.else_body))
            out.append(s)
            if n in after:
                out.append(after[n])
        return out

    body = visit(kernel.body)
    if len(buffers) == len(kernel.buffers):
        return kernel
    return kernel.replace(body=body, buffers=buffers)


def empty_loops(program: Program) -> Program:
    """Zero the accumulators whose clearing gemm may not run (module docstring)."""
    out = program.map_kernels(lambda k, lc, p: _rewrite(k))
    verify_empty_loops(out)
    return out


def verify_empty_loops(program: Program) -> None:
    """Every folded clear before a loop nest that may run no iteration has its guard after the nest."""
    for lc in program.launches:
        for k in lc.kernels.values():
            _check(k.body, {s.c.buffer for s in walk(k.body) if isinstance(s, TileGemm)})


def _check(items: list, accs: set) -> None:
    for n, s in enumerate(items):
        if isinstance(s, Loop):
            _check(s.body, accs)
        elif isinstance(s, If):
            _check(s.then_body, accs)
            _check(s.else_body, accs)
        elif isinstance(s, TileFill) and s.dst.buffer in accs and const_value(s.value) == 0.0:
            found = _chain(items[n + 1:], s.dst.buffer)
            if not found or not found[0] or _guard(found[0]) is None:
                continue
            at = next(i for i, x in enumerate(items) if x is found[0][0])
            nxt = items[at + 1] if at + 1 < len(items) else None
            if not (isinstance(nxt, If) and any(isinstance(x, TileGemm) and x.clear_accum and
                                                x.c.buffer == s.dst.buffer for x in nxt.then_body)):
                raise InternalCompilerError(f"empty_loops: the clear of '{s.dst.buffer}' before a loop "
                                            "that may run no iteration has no zeroing gemm after it",
                                            stage="empty_loops")
