"""alias_copies: a whole-tile copy between two vector tiles that hold the same value is dropped, and
its destination read from its source (run by partition before it decides sides).

TileLang's GPU examples stage data in shared memory and copy it into registers
(`T.copy(a_shared, a_frag)`) before element-wise code. Here both tiles live in the Vector core's UB,
so the copy is a second UB tile and a vector pass over it: with a 128 x 128 float16 tile that is
32 KB of the 184 KB of dav-c220's UB (the gemv with `T.alloc_reducer` did not fit for it).

A copy ``T.copy(src, dst)`` at position n of a statement list is aliased when all of these hold, so
that every read of ``dst`` sees exactly what ``src`` holds at that point:
* ``src`` is a T.alloc_shared tile and ``dst`` a T.alloc_fragment of the same shape and dtype (the
  staging idiom; a copy the user wrote between two fragments is kept as written), the copy covers
  both whole, and no T.gemm touches either (both stay on the Vector side, in UB);
* the copy is the only statement that writes ``dst``, and every other use of ``dst`` is a tile op
  (copy, reduction, cumsum, T.Parallel) later in the same list;
* nothing later in the list writes ``src`` (in a loop, the next iteration's write of ``src`` comes
  after this iteration's reads in program order, which insert_sync keeps).
"""

from __future__ import annotations

import dataclasses

from tvm import tirx

from ascend_backend.ir import (
    BufferKind,
    If,
    Kernel,
    Launch,
    Loop,
    Region,
    TileCopy,
    TileCumsum,
    TileGemm,
    TileParallel,
    TileReduce,
    children,
    walk,
)

from .partition import is_whole, tile_buffers, tile_writes

_TILE_OPS = (TileCopy, TileReduce, TileCumsum, TileParallel)


def _mentions(s, name: str) -> bool:
    """Does a loop bound or an if condition read ``name``?"""
    exprs = [s.cond] if isinstance(s, If) else [s.start, s.extent, s.cond] if isinstance(s, Loop) else []
    found = []

    def visit(n):
        if isinstance(n, tirx.BufferLoad) and n.buffer.name == name:
            found.append(n)

    for e in exprs:
        if isinstance(e, tirx.PrimExpr):
            tirx.stmt_functor.post_order_visit(e, visit)
    return bool(found)


def _candidates(kernel: Kernel) -> dict:
    """dst -> the copy that may alias it (the conditions that do not depend on the position)."""
    bufs = kernel.buffers
    gemm_tiles = {n for s in walk(kernel.body) if isinstance(s, TileGemm) for n in tile_buffers(s)}
    writers: dict = {}
    for s in walk(kernel.body):
        if not isinstance(s, Loop | If):
            for n in tile_writes(s):
                writers.setdefault(n, []).append(s)
    out = {}
    for s in walk(kernel.body):
        if not isinstance(s, TileCopy) or s.atomic is not None or s.src.buffer == s.dst.buffer:
            continue
        a, b = bufs[s.src.buffer], bufs[s.dst.buffer]
        if a.kind is not BufferKind.SHARED or b.kind is not BufferKind.FRAGMENT or {a.name, b.name} & gemm_tiles:
            continue
        if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
            continue
        if not (is_whole(s.src, a.shape) and is_whole(s.dst, b.shape)) or writers.get(b.name) != [s]:
            continue
        out[b.name] = s
    return out


def _rename_parallel(op: TileParallel, old: str, new_buf) -> TileParallel:
    def swap(n):
        if isinstance(n, tirx.BufferLoad) and n.buffer.name == old:
            return tirx.BufferLoad(new_buf, n.indices)
        return None

    stores = []
    for ps in op.stores:
        st = ps.store
        value = tirx.stmt_functor.ir_transform(tirx.Evaluate(st.value), None, swap, ["tirx.BufferLoad"]).value
        stores.append(dataclasses.replace(ps, store=tirx.BufferStore(st.buffer, value, st.indices)))
    return dataclasses.replace(op, stores=tuple(stores))


def _rename(s, old: str, new: str, new_buf):
    if isinstance(s, TileParallel):
        return _rename_parallel(s, old, new_buf)
    fields = {}
    for f in dataclasses.fields(s):
        v = getattr(s, f.name)
        if isinstance(v, Region) and v.buffer == old:
            fields[f.name] = v.with_buffer(new)
    return dataclasses.replace(s, **fields) if fields else s


def _rewrite(body: list, kernel: Kernel, cands: dict, tvm_bufs: dict, done: list) -> list:
    out = list(body)
    n = 0
    while n < len(out):
        s = out[n]
        copy_of = next((d for d, c in cands.items() if c is s), None)
        if copy_of is not None:
            dst, src = copy_of, s.src.buffer
            rest = out[n + 1:]
            before = out[:n]
            uses_ok = all(
                (isinstance(x, _TILE_OPS) or isinstance(x, Loop | If) and not _mentions(x, dst))
                for x in walk(rest) if isinstance(x, Loop | If) or dst in tile_buffers(x))
            mentioned = sum(1 for x in walk(kernel.body) if isinstance(x, Loop | If) and _mentions(x, dst))
            src_written = any(src in tile_writes(x) for x in walk(rest) if not isinstance(x, Loop | If))
            # dst is used by the copy and in the rest of this list only
            total = sum(1 for x in walk(kernel.body) if not isinstance(x, Loop | If) and dst in tile_buffers(x))
            later = sum(1 for x in walk(rest) if not isinstance(x, Loop | If) and dst in tile_buffers(x))
            if uses_ok and not mentioned and not src_written and total == later + 1 and src in tvm_bufs:
                new_rest = _rename_all(rest, dst, src, tvm_bufs[src])
                out = before + new_rest
                done.append(dst)
                continue
        subs = children(s)
        if subs:
            if isinstance(s, Loop):
                out[n] = dataclasses.replace(s, body=_rewrite(s.body, kernel, cands, tvm_bufs, done))
            else:
                out[n] = dataclasses.replace(s, then_body=_rewrite(s.then_body, kernel, cands, tvm_bufs, done),
                                             else_body=_rewrite(s.else_body, kernel, cands, tvm_bufs, done))
        n += 1
    return out


def _rename_all(body: list, old: str, new: str, new_buf) -> list:
    out = []
    for s in body:
        if isinstance(s, Loop):
            out.append(dataclasses.replace(s, body=_rename_all(s.body, old, new, new_buf)))
        elif isinstance(s, If):
            out.append(dataclasses.replace(s, then_body=_rename_all(s.then_body, old, new, new_buf),
                                           else_body=_rename_all(s.else_body, old, new, new_buf)))
        else:
            out.append(_rename(s, old, new, new_buf))
    return out


def _tvm_buffers(kernel: Kernel) -> dict:
    """name -> a tvm Buffer of that tile, for the loads of a renamed T.Parallel."""
    out: dict = {}
    for s in walk(kernel.body):
        if isinstance(s, TileParallel):
            for ps in s.stores:
                out.setdefault(ps.store.buffer.name, ps.store.buffer)

                def visit(n):
                    if isinstance(n, tirx.BufferLoad):
                        out.setdefault(n.buffer.name, n.buffer)

                tirx.stmt_functor.post_order_visit(ps.store.value, visit)
    for name, b in kernel.buffers.items():
        if name not in out and b.kind in (BufferKind.SHARED, BufferKind.FRAGMENT):
            out[name] = tirx.decl_buffer(tuple(b.shape), str(b.dtype), name=name)
    return out


def alias_copies_launch(launch: Launch) -> Launch:
    kernel = launch.kernels.get(None)
    if kernel is None:
        return launch
    cands = _candidates(kernel)
    if not cands:
        return launch
    done: list = []
    body = _rewrite(kernel.body, kernel, cands, _tvm_buffers(kernel), done)
    if not done:
        return launch
    buffers = {n: b for n, b in kernel.buffers.items() if n not in done}
    return launch.replace(kernels={None: kernel.replace(body=body, buffers=buffers)})


__all__ = ["alias_copies_launch"]
