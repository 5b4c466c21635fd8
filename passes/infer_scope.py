"""infer_scope: give every tile buffer its home in the Ascend memory hierarchy.

Needs: a kernel fresh from the frontend (buffers without scope, except GM parameters).
Establishes: every buffer has exactly one scope among GM, L1, L0C and UB (L0A/L0B buffers are
created later, by lower_tile_ops): a gemm operand lives in L1 (loaded into L0A/L0B per gemm),
a gemm accumulator in L0C, anything a T.Parallel, reduce, fill or vector copy touches in UB.
A buffer claimed by both the Cube and the Vector side is rejected with both uses named.
"""

from __future__ import annotations

from ascend_backend.errors import UnsupportedError
from ascend_backend.ir import Kernel, TileOp, walk


def _uses(kernel: Kernel) -> dict:
    uses: dict[str, list] = {n: [] for n in kernel.buffers}
    for s in walk(kernel.body):
        if not isinstance(s, TileOp):
            continue
        a = s.args
        if s.op == "gemm":
            uses[a["A"]["buffer"]].append(("cube-operand", s))
            uses[a["B"]["buffer"]].append(("cube-operand", s))
            uses[a["C"]["buffer"]].append(("accumulator", s))
        elif s.op == "copy":
            uses[a["src"]["buffer"]].append(("copy-src", s))
            uses[a["dst"]["buffer"]].append(("copy-dst", s))
        elif s.op == "fill":
            uses[a["dst"]["buffer"]].append(("fill", s))
        elif s.op == "reduce":
            uses[a["src"]["buffer"]].append(("vector", s))
            uses[a["dst"]["buffer"]].append(("vector", s))
        elif s.op == "copy_to_peer_l1":
            uses[a["src"]["buffer"]].append(("vector", s))
        elif s.op == "accumulate":
            uses[a["src"]].append(("vector", s))
            uses[a["dst"]].append(("vector", s))
        elif s.op == "parallel":
            from tvm import tirx

            names = {b: b for b in kernel.buffers}
            for st, _ in a["stores"]:
                touched = {st.buffer.name}

                def visit(n, touched=touched):
                    if isinstance(n, tirx.BufferLoad):
                        touched.add(n.buffer.name)

                tirx.stmt_functor.post_order_visit(st.value, visit)
                for t in touched:
                    if t in names:
                        uses[t].append(("vector", s))
    return uses


def infer_scope(kernel: Kernel) -> Kernel:
    """Assign GM/L1/L0C/UB to every buffer by how it is used."""
    buffers = kernel.copy_buffers()
    uses = _uses(kernel)
    for name, buf in buffers.items():
        if buf.kind == "param":
            buf.scope, buf.role = "GM", "kernel argument"
            continue
        if buf.kind == "workspace":
            buf.scope = "GM"
            continue
        kinds = {u for u, _ in uses[name]}
        cube = kinds & {"cube-operand", "accumulator"}
        vector = kinds & {"vector", "fill"} if "accumulator" not in kinds else kinds & {"vector"}
        if cube and vector:
            cube_op = next(s for u, s in uses[name] if u in cube)
            vec_op = next(s for u, s in uses[name] if u in vector)
            raise UnsupportedError(
                f"buffer '{name}' is used by the Cube core ({cube_op.op} at {cube_op.loc}) and by the Vector "
                f"cores ({vec_op.op} at {vec_op.loc}); mixing Cube and Vector work on one tile is not supported yet",
                loc=buf.loc,
                hint="copy the gemm result to global memory and run the element-wise part as a second kernel, "
                "until the automatic Cube/Vector split lands",
            )
        if "accumulator" in kinds:
            buf.scope, buf.role = "L0C", "gemm accumulator"
        elif "cube-operand" in kinds:
            buf.scope, buf.role = "L1", "gemm operand"
        else:
            buf.scope, buf.role = "UB", "vector tile"
    out = kernel.replace(buffers=buffers)
    verify_scope(out)
    return out


def verify_scope(kernel: Kernel) -> None:
    """Every buffer has exactly one known scope."""
    from ascend_backend.errors import InternalCompilerError
    from ascend_backend.ir import SCOPES

    for b in kernel.buffers.values():
        if b.scope not in SCOPES:
            raise InternalCompilerError(f"buffer {b.name} has no scope after infer_scope", stage="infer_scope")
