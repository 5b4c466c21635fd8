"""Render the final kernel IR as Ascend C with the Jinja templates in ascend_backend.templates.

The walk over the IR (loops, indentation, which macro) is here; what each op looks like is in
templates/ops.j2, one macro per op kind; the kernel frame is templates/kernel.cpp.j2.
"""

from __future__ import annotations

import functools
import os

import jinja2

from .cexpr import cexpr, cname
from .errors import InternalCompilerError
from .ir import CTYPE, AscOp, Kernel, Loop, Sync

POSITION = {"UB": "VECCALC", "L1": "A1", "L0A": "A2", "L0B": "B2", "L0C": "CO1"}
SCALAR_CTYPE = {"float32": "float", "float16": "half", "int32": "int32_t", "int64": "int64_t", "uint32": "uint32_t",
                "bool": "bool", "bfloat16": "bfloat16_t"}


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    from ascend_backend import templates

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(os.path.dirname(templates.__file__)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    return env


@functools.lru_cache(maxsize=1)
def _ops():
    return _env().get_template("ops.j2").module


def _render_op(kind: str, params: dict) -> str:
    macro = getattr(_ops(), kind, None)
    if macro is None:
        raise InternalCompilerError(f"no template macro for op kind '{kind}'", stage="codegen")
    return str(macro(params))


def _body(items: list, indent: int, kernel: Kernel, out: list) -> None:
    pad = "    " * indent
    arch = kernel.arch.name
    for s in items:
        if isinstance(s, Loop):
            v = cname(s.var)
            note = f"  // {s.loc}" if s.loc else ""
            stages = f" (pipelined, {s.num_stages} stages)" if s.kind == "pipelined" else ""
            out.append(f"{pad}for (int32_t {v} = 0; {v} < {cexpr(s.extent)}; ++{v}) {{{note}{stages}")
            for name, n in s.slots.items():
                b = kernel.buffers[name]
                ctype = CTYPE[b.dtype] if b.scope != "L0C" else "float"
                out.append(f"{pad}    LocalTensor<{ctype}> {name} = {name}_slots[({v} % {n}) * {b.slot_elems}];"
                           f"  // slot {v} % {n} of {b.slots}")
            _body(s.body, indent + 1, kernel, out)
            out.append(f"{pad}}}")
        elif isinstance(s, AscOp):
            text = _render_op(s.kind, {**s.params, "arch": arch})
            lines = text.splitlines()
            if s.loc:
                lines[0] += f"  // {s.loc.file.rsplit('/', 1)[-1]}:{s.loc.line}"
            out.extend(pad + ln for ln in lines)
        elif isinstance(s, Sync):
            macro = {"set": "set_flag", "wait": "wait_flag", "barrier": "pipe_barrier"}[s.action]
            out.append(pad + _render_op(macro, s))
        else:
            raise InternalCompilerError(f"cannot render {type(s).__name__}", stage="codegen")


def _section(kernel: Kernel, indent: int, block_expr: str) -> dict:
    """Memories, local tensors, block indices and body of one core's program."""
    used = kernel.attrs.get("memory_used", {})
    memories = []
    for mem in ("L1", "L0A", "L0B", "L0C", "UB"):
        if used.get(mem):
            memories.append({"name": mem, "position": POSITION[mem], "var": f"{mem.lower()}_buf",
                             "used": used[mem], "capacity": kernel.arch.capacity[mem]})
    locals_ = []
    for b in kernel.buffers.values():
        if b.scope == "GM":
            continue
        if b.offset is None:
            raise InternalCompilerError(f"buffer {b.name} has no offset", stage="codegen")
        where = f", {b.loc.file.rsplit('/', 1)[-1]}:{b.loc.line}" if b.loc else ""
        locals_.append({"name": f"{b.name}_slots" if b.slots > 1 else b.name,
                        "ctype": CTYPE[b.dtype] if b.scope != "L0C" else "float",
                        "mem_var": f"{b.scope.lower()}_buf", "count": b.slot_elems * b.slots,
                        "offset": b.offset, "desc": f"{b.describe()}{where}"})
    block_index = []
    stride = 1
    grid = kernel.grid
    for n, (var, ext, *_rest) in enumerate(grid):
        v = cname(var)
        expr = block_expr if stride == 1 else f"({block_expr} / {stride})"
        if n < len(grid) - 1:
            expr = f"{expr} % {ext}"
        block_index.append(f"const int32_t {v} = {expr};")
        stride *= int(ext)
    if kernel.attrs.get("sub_var") is not None:
        block_index.append(f"const int32_t {cname(kernel.attrs['sub_var'])} = GetSubBlockIdx();  "
                           f"// this AIV's half of the rows: [{cname(kernel.attrs['sub_var'])} * "
                           f"{kernel.attrs['row_split']}, +{kernel.attrs['row_split']})")
    body: list = []
    _body(kernel.body, indent, kernel, body)
    return {"memories": memories, "locals": locals_, "block_index": block_index, "body": "\n".join(body)}


def _globals(kernel: Kernel) -> list:
    out = []
    for b in kernel.buffers.values():
        if b.scope != "GM":
            continue
        g = {"name": b.name, "ctype": CTYPE[b.dtype], "numel": b.numel, "dtype": b.dtype,
             "shape": "x".join(map(str, b.shape)), "ptr": b.name}
        if b.kind == "workspace":
            g["ptr"] = f"(workspace + {kernel.attrs['workspace'][b.name]})"
        out.append(g)
    return out


def _params(kernel: Kernel) -> list:
    params = []
    for p in kernel.params:
        if p.kind == "tensor":
            params.append(f"GM_ADDR {p.name}")
        else:
            params.append(f"{SCALAR_CTYPE.get(p.dtype, 'float')} {cname(p.name)}")
    if kernel.attrs.get("workspace_bytes"):
        params.append("GM_ADDR workspace")
    return params


def generate(kernel: Kernel) -> str:
    """Ascend C source of a single-core-kind ``kernel`` (after every pass)."""
    from ascend_backend import __version__

    src = kernel.source_file.rsplit("/", 1)[-1] if kernel.source_file else None
    return _env().get_template("kernel.cpp.j2").render(
        version=__version__, arch=kernel.arch.name, source=src, name=kernel.name, kernel_type=kernel.kernel_type,
        block_dim=kernel.block_dim, params=_params(kernel), globals=_globals(kernel),
        sections=[{"guard": None, **_section(kernel, 1, "GetBlockIdx()")}], workspace_bytes=0, peer_ub=False,
    )


def _peer_memory(sec: dict, owner: Kernel, targets, scope: str, label: str, position: str, var: str, suffix: str,
                 desc: str) -> None:
    """Let one core of a group address tiles in its peer's memory (3510 on-chip routes), at the
    offsets the peer's memory plan gave them."""
    used = owner.attrs.get("memory_used", {}).get(scope, 0)
    sec["memories"].append({"name": label, "position": position, "var": var, "used": used,
                            "capacity": owner.arch.capacity[scope]})
    for target in targets:
        b = owner.buffers[target]
        sec["locals"].append({"name": f"{target}{suffix}", "ctype": CTYPE[b.dtype], "mem_var": var,
                              "count": b.slot_elems, "offset": b.offset,
                              "desc": desc.format(target=target, layout=b.layout)})


def generate_mix(aic: Kernel, aiv: Kernel) -> str:
    """Ascend C of a kernel split into an AIC part and an AIV part (KERNEL_TYPE_MIX_AIC_1_2)."""
    from ascend_backend import __version__

    src = aic.source_file.rsplit("/", 1)[-1] if aic.source_file else None
    merged = dict(aic.buffers)
    merged.update({n: b for n, b in aiv.buffers.items() if b.scope == "GM"})
    gl = _globals(aic.replace(buffers={n: b for n, b in merged.items() if b.scope == "GM"}))
    aic_sec = _section(aic, 2, "GetBlockIdx()")
    aiv_sec = _section(aiv, 2, "(GetBlockIdx() / GetTaskRation())")
    peers = aic.attrs.get("peer_ub", {})
    if peers:
        _peer_memory(aic_sec, aiv, peers, "UB", "UB of the AIVs (written by Fixpipe)", "VECCALC", "peer_ub", "_peer",
                     "{target} in each AIV's UB")
    peers_l1 = aic.attrs.get("peer_l1", {})
    if peers_l1:
        for target in peers_l1:
            if aic.buffers[target].slots != 1:
                raise InternalCompilerError(f"L1 tile {target} written by the AIVs has {aic.buffers[target].slots} "
                                            "slots", stage="codegen")
        _peer_memory(aiv_sec, aic, peers_l1, "L1", "L1 of the AIC (written by DataCopy UB -> L1)", "A1", "peer_l1",
                     "_l1_peer", "{target} in the AIC's L1 ({layout})")
    return _env().get_template("kernel.cpp.j2").render(
        version=__version__, arch=aic.arch.name, source=src, name=aic.name, kernel_type="MIX_AIC_1_2",
        block_dim=aic.block_dim, params=_params(aic), globals=gl, peer_ub=bool(peers),
        sections=[{"guard": "ASCEND_IS_AIC", **aic_sec},
                  {"guard": "ASCEND_IS_AIV", **aiv_sec}],
        workspace_bytes=aic.attrs.get("workspace_bytes", 0),
    )
