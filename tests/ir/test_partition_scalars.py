"""partition: scalar code runs on each core kind that needs it, and only there (a store to a scalar
local that no statement of a side reads is dropped from that side, with the loops and ifs it
leaves empty). Builder programs, milliseconds each."""

from filecheck import filecheck
from test_passes import after

from ascend_backend.ir.builder import ProgramBuilder


def gather_gemm(use_row_on_vector=False):
    """DSA's gather: each row of the Cube's operand is the key row an index in GM names."""
    b = ProgramBuilder("gather", "dav-3510")
    KV, Idx = b.tensor("KV", (256, 64), "float16"), b.tensor("Idx", (16,), "int32")
    Q, Out = b.tensor("Q", (16, 64), "float16"), b.tensor("Out", (16, 16), "float32")
    q, kv = b.tile("q", (16, 64), "float16"), b.tile("kv", (16, 64), "float16")
    s = b.tile("s", (16, 16), "float32", fragment=True)
    row = b.local("row", (1,), "int32")
    with b.launch([1]):
        b.copy(Q[0, 0], q)
        with b.loop("i", 16) as i:
            b.scalar_store(row, (0,), Idx.load(i))
            b.copy(KV.window(row.load(0), 0, extents=(1, 64)), kv.window(i, 0, extents=(1, 64)))
        b.fill(s, 0.0)
        b.gemm(q, kv, s, trans_b=True)
        b.parallel((16, 16), lambda h, j: [(s, (h, j), s.load(h, j) * (row.load(0) if use_row_on_vector else 2.0))])
        b.copy(s, Out[0, 0])
    return b.build()


def test_the_vector_side_drops_a_gather_loop_it_has_no_use_for():
    text = after(gather_gemm(), "partition")
    filecheck(text, """
        CHECK: == AIC ==
        CHECK: for i
        CHECK-NEXT: [S] row[0] = Idx[i]
        CHECK-NEXT: copy KV[row[0], 0]<1x64> -> kv[i, 0]<1x64>
        CHECK: == AIV ==
        CHECK-NOT: row[0] =
        CHECK: receive s
    """)
    aiv = text.split("== AIV ==")[1]
    assert "for i" not in aiv


def test_a_scalar_the_vector_side_reads_stays_there():
    text = after(gather_gemm(use_row_on_vector=True), "partition")
    aiv = text.split("== AIV ==")[1]
    filecheck(aiv, """
        CHECK: for i
        CHECK-NEXT: [S] row[0] = Idx[i]
        CHECK: parallel
    """)
    assert "copy KV" not in aiv
