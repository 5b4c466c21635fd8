"""The vector side of TileLang as its users write it (issue 10): masks with any affine predicate,
loop indices as values, reductions over dim 0, over long rows and as reducer stores, T.cumsum,
strided GM columns, 8-bit mask tiles, a per-head scalar read from GM. Each kernel is our own, in the
style of TileLang's examples (top-k, online softmax, chunked cumsum, gemv with a reducer, FlashAttention
with a tail mask, GQA, decoding with a uint8 mask, attention sinks), run on the emulator against
torch on both arches in strict mode."""

import pytest
import tilelang.language as T
import torch
import torch.nn.functional as F
from attention_forms import guarded_online_softmax, init_softmax, normalize, softmax_weights
from strict_run import run

from ascend_backend.arch import get_arch
from ascend_backend.frontend import import_primfunc
from ascend_backend.ir import Scope
from ascend_backend.pipeline import passes

# ------------------------------------------------------------------ masks and indices


def test_masks_tail_window_per_row_lengths_and_indices(arch):
    """A tail mask (`k * block + j >= seq`), a sliding window (two bounds joined by `and`), per-row
    lengths from a GM vector, a data mask in a 1-D T.Parallel, an `if` without else, and the loop
    indices stored as int32 and float values."""
    S, W = 100, 24

    @T.prim_func
    def masks(A: T.Tensor((64, 128), "float32"), L: T.Tensor((64,), "int32"), Vv: T.Tensor((64,), "float32"),
              B: T.Tensor((64, 128), "float32"), C: T.Tensor((64, 128), "float32"), Iota: T.Tensor((64, 128), "int32"),
              R: T.Tensor((64,), "float32")):
        with T.Kernel(2, 4) as (bx, by):
            x = T.alloc_fragment((32, 32), "float32")
            y = T.alloc_fragment((32, 32), "float32")
            lens = T.alloc_fragment((32,), "int32")
            iota = T.alloc_fragment((32, 32), "int32")
            r = T.alloc_fragment((32,), "float32")
            v = T.alloc_fragment((32,), "float32")
            T.copy(A[bx * 32, by * 32], x)
            T.copy(L[bx * 32], lens)
            T.copy(Vv[bx * 32], v)
            for i, j in T.Parallel(32, 32):
                q = bx * 32 + i
                kk = by * 32 + j
                x[i, j] = T.if_then_else(kk >= S, -T.infinity("float32"), x[i, j])
                y[i, j] = T.if_then_else(q >= kk and q < kk + W, x[i, j], x[i, j] * 0.5)
                if kk >= lens[i]:
                    y[i, j] = 0.0
                iota[i, j] = q * 128 + kk
            for i in T.Parallel(32):
                r[i] = T.if_then_else(v[i] > 0, v[i], T.cast(i, "float32"))
            T.copy(y, B[bx * 32, by * 32])
            T.copy(x, C[bx * 32, by * 32])
            T.copy(iota, Iota[bx * 32, by * 32])
            if by == 0:
                T.copy(r, R[bx * 32])

    a, vv = torch.randn(64, 128), torch.randn(64)
    lens = torch.randint(0, 129, (64,), dtype=torch.int32)
    b, c, r = torch.zeros(64, 128), torch.zeros(64, 128), torch.zeros(64)
    iota = torch.zeros(64, 128, dtype=torch.int32)
    k = run(masks, [a, lens, vv, b, c, iota, r], arch)
    q, kk = torch.arange(64)[:, None], torch.arange(128)[None, :]
    x = torch.where(kk >= S, torch.tensor(-float("inf")), a)
    y = torch.where((q >= kk) & (q < kk + W), x, x * 0.5)
    y = torch.where(kk >= lens[:, None].long(), torch.tensor(0.0), y)
    torch.testing.assert_close(c, x)
    torch.testing.assert_close(b, y)
    torch.testing.assert_close(iota, (q * 128 + kk).to(torch.int32))
    torch.testing.assert_close(r, torch.where(vv > 0, vv, torch.arange(64).float() % 32))
    src = k.kernel_source
    assert "CreateVecIndex" in src and "Compares(" in src and "Select(" in src and "And(" in src


def test_causal_mask_still_uses_the_diagonal_fill(arch):
    @T.prim_func
    def causal(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(2) as bx:
            x = T.alloc_fragment((32, 64), "float32")
            T.copy(A[bx * 32, 0], x)
            for i, j in T.Parallel(32, 64):
                x[i, j] = T.if_then_else(bx * 32 + i >= j, 0.0, -T.infinity("float32"))
            T.copy(x, B[bx * 32, 0])

    b = torch.zeros(64, 64)
    k = run(causal, [torch.randn(64, 64), b], arch)
    torch.testing.assert_close(b, torch.zeros(64, 64).masked_fill(torch.ones(64, 64).tril() == 0, -float("inf")))
    assert "Select(" not in k.kernel_source and "Compare" not in k.kernel_source


@pytest.mark.slow
def test_bool_and_uint8_mask_tiles(arch):
    """Mask tiles of one byte per element: a bool column mask and a uint8 one used as conditions
    (`m[j]`, `u[j] != 0`), and a condition stored as a value into a bool tile."""

    @T.prim_func
    def masks8(A: T.Tensor((32, 64), "float32"), M: T.Tensor((64,), "bool"), U: T.Tensor((64,), "uint8"),
               B: T.Tensor((32, 64), "float32"), Mo: T.Tensor((32, 64), "bool")):
        with T.Kernel(1):
            x = T.alloc_fragment((32, 64), "float32")
            m = T.alloc_fragment((64,), "bool")
            u = T.alloc_fragment((64,), "uint8")
            mo = T.alloc_fragment((32, 64), "bool")
            T.copy(A[0, 0], x)
            T.copy(M[0], m)
            T.copy(U[0], u)
            for i, j in T.Parallel(32, 64):
                mo[i, j] = x[i, j] > 0
                x[i, j] = T.if_then_else(m[j], x[i, j], -1.0)
                x[i, j] = T.if_then_else(u[j] != 0, x[i, j], -T.infinity("float32"))
            T.copy(x, B[0, 0])
            T.copy(mo, Mo[0, 0])

    a, m, u = torch.randn(32, 64), torch.rand(64) > 0.5, (torch.rand(64) > 0.3).to(torch.uint8)
    b, mo = torch.zeros(32, 64), torch.zeros(32, 64, dtype=torch.bool)
    run(masks8, [a, m, u, b, mo], arch)
    ref = torch.where(m[None, :], a, torch.tensor(-1.0))
    ref = torch.where(u[None, :] != 0, ref, torch.tensor(-float("inf")))
    torch.testing.assert_close(b, ref)
    assert torch.equal(mo, a > 0)


def test_topk(arch):
    """Top-k as TileLang's example writes it: the column index as a value in a select over an int32
    tile, an int32 row max, and a per-row column store into GM (a strided column)."""
    M, N, K, BM = 32, 64, 4, 16

    @T.prim_func
    def topk(logits: T.Tensor((M, N), "float32"), gates: T.Tensor((M, K), "float32"),
             idx: T.Tensor((M, K), "int32")):
        with T.Kernel(M // BM) as bx:
            frag = T.alloc_fragment((BM, N), "float32")
            mx = T.alloc_fragment((BM,), "float32")
            eidx = T.alloc_fragment((BM, N), "int32")
            midx = T.alloc_fragment((BM,), "int32")
            T.copy(logits[bx * BM, 0], frag)
            for k in T.serial(K):
                T.fill(eidx, -1)
                T.reduce_max(frag, mx, dim=1, clear=True)
                for i, j in T.Parallel(BM, N):
                    eidx[i, j] = T.if_then_else(mx[i] == frag[i, j], j, eidx[i, j])
                T.reduce_max(eidx, midx, dim=1, clear=True)
                for i, j in T.Parallel(BM, N):
                    frag[i, j] = T.if_then_else(mx[i] == frag[i, j], -10000.0, frag[i, j])
                for i in T.Parallel(BM):
                    gates[bx * BM + i, k] = mx[i]
                    idx[bx * BM + i, k] = midx[i]

    x = torch.rand(M, N)
    g, ix = torch.zeros(M, K), torch.zeros(M, K, dtype=torch.int32)
    run(topk, [x, g, ix], arch)
    rg, ri = x.topk(K, dim=1)
    torch.testing.assert_close(g, rg)
    torch.testing.assert_close(ix, ri.to(torch.int32))


# ------------------------------------------------------------------ reductions


def test_reductions_over_columns_abs_bf16_int32(arch):
    @T.prim_func
    def red(A: T.Tensor((32, 96), "float32"), Bb: T.Tensor((32, 96), "bfloat16"), Ii: T.Tensor((32, 96), "int32"),
            cs: T.Tensor((96,), "float32"), cm: T.Tensor((96,), "float32"), ra: T.Tensor((32,), "float32"),
            rb: T.Tensor((32,), "bfloat16"), ri: T.Tensor((32,), "int32"), rm: T.Tensor((32,), "float32")):
        with T.Kernel(1):
            x = T.alloc_fragment((32, 96), "float32")
            xb = T.alloc_fragment((32, 96), "bfloat16")
            xi = T.alloc_fragment((32, 96), "int32")
            c1 = T.alloc_fragment((96,), "float32")
            c2 = T.alloc_fragment((96,), "float32")
            r1 = T.alloc_fragment((32,), "float32")
            r2 = T.alloc_fragment((32,), "bfloat16")
            r3 = T.alloc_fragment((32,), "int32")
            r4 = T.alloc_fragment((32,), "float32")
            T.copy(A[0, 0], x)
            T.copy(Bb[0, 0], xb)
            T.copy(Ii[0, 0], xi)
            T.reduce_sum(x, c1, dim=0)
            T.reduce_max(x, c2, dim=0)
            T.reduce_abssum(x, r1, dim=1)
            T.reduce_sum(xb, r2, dim=1)
            T.reduce_max(xi, r3, dim=1)
            T.reduce_absmax(x, r4, dim=1)
            T.copy(c1, cs[0])
            T.copy(c2, cm[0])
            T.copy(r1, ra[0])
            T.copy(r2, rb[0])
            T.copy(r3, ri[0])
            T.copy(r4, rm[0])

    a, b = torch.randn(32, 96), torch.randn(32, 96).bfloat16()
    i = torch.randint(-1000, 1000, (32, 96), dtype=torch.int32)
    outs = [torch.zeros(96), torch.zeros(96), torch.zeros(32), torch.zeros(32, dtype=torch.bfloat16),
            torch.zeros(32, dtype=torch.int32), torch.zeros(32)]
    run(red, [a, b, i, *outs], arch)
    torch.testing.assert_close(outs[0], a.sum(0), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(outs[1], a.max(0).values)
    torch.testing.assert_close(outs[2], a.abs().sum(1), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(outs[3], b.float().sum(1).bfloat16(), rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(outs[4], i.max(1).values)
    torch.testing.assert_close(outs[5], a.abs().max(1).values)


@pytest.mark.slow
def test_online_softmax_over_long_rows(arch):
    """Softmax over rows of 8192 bytes (fp16 x 4096) and more (their fp32 exponentials): a repeat
    stride cannot step from one such row to the next, so each row is one call whose column chunks
    are the repeats."""
    N = 4096

    @T.prim_func
    def softmax(X: T.Tensor((4, N), "float16"), Y: T.Tensor((4, N), "float16")):
        with T.Kernel(2) as bx:
            x = T.alloc_fragment((2, N), "float16")
            e = T.alloc_fragment((2, N), "float32")
            m = T.alloc_fragment((2,), "float16")
            s = T.alloc_fragment((2,), "float32")
            T.copy(X[bx * 2, 0], x)
            T.reduce_max(x, m, dim=1)
            for i, j in T.Parallel(2, N):
                e[i, j] = T.exp(x[i, j] - m[i])
            T.reduce_sum(e, s, dim=1)
            for i, j in T.Parallel(2, N):
                x[i, j] = e[i, j] / s[i]
            T.copy(x, Y[bx * 2, 0])

    x, y = torch.randn(4, N).half(), torch.zeros(4, N).half()
    k = run(softmax, [x, y], arch)
    torch.testing.assert_close(y.float(), x.float().softmax(1), rtol=1e-2, atol=1e-3)
    assert "BinaryRepeatParams{1, 1, 1, 0, 8, 0}" in k.kernel_source  # chunks folded as repeats


@pytest.mark.slow
# tilelang 0.1.15 deprecates alloc_reducer's `replication` (the v1 reducer); kernels written with it
# must still compile, so this test keeps that form on purpose.
@pytest.mark.filterwarnings("ignore:alloc_reducer\\(replication=:DeprecationWarning")
def test_gemv_with_a_reducer_and_a_column_reducer(arch):
    """`T.alloc_reducer` accumulating `r[i] += a[i, j] * x[j]` (a reduction over j), and a column
    reducer `c[j] += a[i, j]` (a reduction over i, dim 0)."""

    @T.prim_func
    def gemv(G: T.Tensor((128, 128), "float16"), xv: T.Tensor((128,), "float16"), o: T.Tensor((128,), "float32"),
             cs: T.Tensor((128,), "float32")):
        with T.Kernel(2) as bx:
            ga = T.alloc_fragment((64, 128), "float16")
            xv_ = T.alloc_fragment((128,), "float16")
            acc = T.alloc_reducer((64,), "float32", replication="all")
            colacc = T.alloc_fragment((128,), "float32")
            T.copy(G[bx * 64, 0], ga)
            T.copy(xv[0], xv_)
            T.clear(acc)
            T.clear(colacc)
            for i, j in T.Parallel(64, 128):
                acc[i] += ga[i, j] * xv_[j]
            for i, j in T.Parallel(64, 128):
                colacc[j] += T.cast(ga[i, j], "float32")
            T.finalize_reducer(acc)
            T.copy(acc, o[bx * 64])
            if bx == 0:
                T.copy(colacc, cs[0])

    g, v = torch.randn(128, 128).half(), torch.randn(128).half()
    o, cs = torch.zeros(128), torch.zeros(128)
    run(gemv, [g, v, o, cs], arch)
    torch.testing.assert_close(o, (g * v).float().sum(1), rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(cs, g[:64].float().sum(0), rtol=1e-3, atol=1e-3)


# ------------------------------------------------------------------ cumsum, columns


@pytest.mark.parametrize("reverse", [pytest.param(False, marks=pytest.mark.slow), True])
def test_chunked_cumsum_over_strided_columns(arch, reverse):
    """Chunk-local cumsum as the GDN example writes it: a column of G[b, s0:s1, h] (elements H apart)
    into a [1, chunk] tile, T.cumsum along it, and back."""
    B, S, H, C = 1, 128, 2, 32

    @T.prim_func
    def chunk_cumsum(G: T.Tensor((B, S, H), "float32"), Gn: T.Tensor((B, S, H), "float32")):
        with T.Kernel(S // C, B * H) as (bs, bbh):
            bb, bh = bbh // H, bbh % H
            g = T.alloc_shared((1, C), "float32")
            T.copy(G[bb, bs * C:(bs + 1) * C, bh], g)
            T.cumsum(g, dim=1, reverse=reverse)
            T.copy(g, Gn[bb, bs * C:(bs + 1) * C, bh])

    g, out = torch.randn(B, S, H), torch.zeros(B, S, H)
    run(chunk_cumsum, [g, out], arch)
    v = g.view(B, S // C, C, H)
    ref = (v.flip(2).cumsum(2).flip(2) if reverse else v.cumsum(2)).reshape(B, S, H)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_cumsum_over_rows_and_along_rows(arch):
    @T.prim_func
    def cs(A: T.Tensor((32, 48), "float32"), O0: T.Tensor((32, 48), "float32"), O1: T.Tensor((32, 48), "float32"),
           O2: T.Tensor((32, 48), "float32")):
        with T.Kernel(1):
            x = T.alloc_shared((32, 48), "float32")
            y = T.alloc_shared((32, 48), "float32")
            T.copy(A[0, 0], x)
            T.cumsum(x, y, dim=0)
            T.copy(y, O0[0, 0])
            T.cumsum(x, y, dim=0, reverse=True)
            T.copy(y, O1[0, 0])
            T.cumsum(x, dim=1)
            T.copy(x, O2[0, 0])

    a = torch.randn(32, 48)
    o = [torch.zeros(32, 48) for _ in range(3)]
    run(cs, [a, *o], arch)
    torch.testing.assert_close(o[0], a.cumsum(0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(o[1], a.flip(0).cumsum(0).flip(0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(o[2], a.cumsum(1), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ attention (Cube + Vector)


def _tiles(rows: int, cols: int, dim: int):
    """A macro allocating a query block's tiles (the names of these tests' attention kernels)."""

    @T.macro
    def tiles():
        Qs = T.alloc_shared([rows, dim], "float16")
        Ks = T.alloc_shared([cols, dim], "float16")
        Vs = T.alloc_shared([cols, dim], "float16")
        acc_s = T.alloc_fragment([rows, cols], "float32")
        acc_c = T.alloc_fragment([rows, cols], "float16")
        acc_o = T.alloc_fragment([rows, dim], "float32")
        m = T.alloc_fragment([rows], "float32")
        mp = T.alloc_fragment([rows], "float32")
        sc = T.alloc_fragment([rows], "float32")
        ss = T.alloc_fragment([rows], "float32")
        ls = T.alloc_fragment([rows], "float32")
        return Qs, Ks, Vs, acc_s, acc_c, acc_o, m, mp, sc, ss, ls

    return tiles


def flash_attention(batch, heads, seq, dim, groups=1, bM=32, bN=64, layout="bhsd"):
    """Non-causal FlashAttention forward in the style of TileLang's MHA/GQA examples: the tail of the
    keys masked with `k * block_N + j >= seq` before the first gemm."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    hkv = heads // groups
    if layout == "bhsd":
        q_shape, kv_shape = [batch, heads, seq, dim], [batch, hkv, seq, dim]
    else:
        q_shape, kv_shape = [batch, seq, heads, dim], [batch, seq, hkv, dim]

    def win(t, b, h, s0, s1):
        return t[b, h, s0:s1, :] if layout == "bhsd" else t[b, s0:s1, h, :]

    @T.prim_func
    def main(Q: T.Tensor(q_shape, "float16"), K: T.Tensor(kv_shape, "float16"), V: T.Tensor(kv_shape, "float16"),
             Out: T.Tensor(q_shape, "float16")):
        with T.Kernel(T.ceildiv(seq, bM), heads, batch) as (bx, by, bz):
            Qs, Ks, Vs, acc_s, acc_c, acc_o, m, mp, sc, ss, ls = _tiles(bM, bN, dim)()
            T.copy(win(Q, bz, by, bx * bM, (bx + 1) * bM), Qs)
            init_softmax(acc_o, ls, m)
            for k in T.Pipelined(T.ceildiv(seq, bN), num_stages=1):
                T.copy(win(K, bz, by // groups, k * bN, (k + 1) * bN), Ks)
                for i, j in T.Parallel(bM, bN):
                    acc_s[i, j] = T.if_then_else(k * bN + j >= seq, -T.infinity("float32"), 0)
                T.gemm(Qs, Ks, acc_s, transpose_B=True)
                guarded_online_softmax(bM, bN, dim, scale)(acc_s, acc_c, acc_o, m, mp, sc, ss, ls)
                T.copy(win(V, bz, by // groups, k * bN, (k + 1) * bN), Vs)
                T.gemm(acc_c, Vs, acc_o)
            normalize(bM, dim)(acc_o, ls)
            T.copy(acc_o, win(Out, bz, by, bx * bM, (bx + 1) * bM))

    return main


@pytest.mark.slow
@pytest.mark.parametrize("layout,heads,groups", [("bhsd", 1, 1), ("bshd", 4, 2)])
def test_flash_attention_with_a_key_tail(arch, layout, heads, groups):
    """seq 96 with block_N 64: the second key block is half past the end and masked to -inf."""
    B, S, D = 1, 96, 64
    hkv = heads // groups
    shp = (lambda h: (B, h, S, D)) if layout == "bhsd" else (lambda h: (B, S, h, D))
    q, o = torch.randn(shp(heads)).half(), torch.zeros(shp(heads)).half()
    k, v = torch.randn(shp(hkv)).half(), torch.randn(shp(hkv)).half()
    run(flash_attention(B, heads, S, D, groups=groups, layout=layout), [q, k, v, o], arch)
    qf, kf, vf, of = (t.float() if layout == "bhsd" else t.float().transpose(1, 2) for t in (q, k, v, o))
    kf, vf = kf.repeat_interleave(groups, 1), vf.repeat_interleave(groups, 1)
    ref = F.softmax(qf @ kf.transpose(-1, -2) / D ** 0.5, dim=-1) @ vf
    torch.testing.assert_close(of, ref, rtol=1e-2, atol=1e-2)


@pytest.mark.slow
def test_decoding_with_a_uint8_mask(arch):
    """GQA decoding without split in the style of TileLang's example: the mask column
    mask[b, keys, kv_head] (uint8, a strided column) in a [block_N] uint8 tile, and
    `T.if_then_else(mask[j] != 0, s, -inf)`."""
    B, HKV, G, S, D, bN = 1, 2, 16, 128, 64, 64
    scale = (1.0 / D) ** 0.5 * 1.44269504

    @T.prim_func
    def decode(Q: T.Tensor([B, HKV * G, D], "float16"), K: T.Tensor([B, S, HKV, D], "float16"),
               V: T.Tensor([B, S, HKV, D], "float16"), mask: T.Tensor([B, S, HKV], "uint8"),
               Out: T.Tensor([B, HKV * G, D], "float16")):
        with T.Kernel(B, HKV) as (bid, hid):
            Qs = T.alloc_shared([G, D], "float16")
            Ks = T.alloc_shared([bN, D], "float16")
            Vs = T.alloc_shared([bN, D], "float16")
            acc_s = T.alloc_fragment([G, bN], "float32")
            acc_c = T.alloc_fragment([G, bN], "float16")
            mloc = T.alloc_fragment([bN], "uint8")
            acc_o = T.alloc_fragment([G, D], "float32")
            m = T.alloc_fragment([G], "float32")
            mp = T.alloc_fragment([G], "float32")
            sc = T.alloc_fragment([G], "float32")
            ss = T.alloc_fragment([G], "float32")
            ls = T.alloc_fragment([G], "float32")
            T.copy(Q[bid, hid * G:(hid + 1) * G, :], Qs)
            init_softmax(acc_o, ls, m)
            for k in T.Pipelined(T.ceildiv(S, bN), num_stages=1):
                T.copy(K[bid, k * bN:(k + 1) * bN, hid, :], Ks)
                T.copy(mask[bid, k * bN:(k + 1) * bN, hid], mloc)
                T.clear(acc_s)
                T.gemm(Qs, Ks, acc_s, transpose_B=True)
                for i, j in T.Parallel(G, bN):
                    acc_s[i, j] = T.if_then_else(mloc[j] != 0, acc_s[i, j], -T.infinity("float32"))
                guarded_online_softmax(G, bN, D, scale)(acc_s, acc_c, acc_o, m, mp, sc, ss, ls)
                T.copy(V[bid, k * bN:(k + 1) * bN, hid, :], Vs)
                T.gemm(acc_c, Vs, acc_o)
            normalize(G, D)(acc_o, ls)
            T.copy(acc_o, Out[bid, hid * G:(hid + 1) * G, :])

    q, o = torch.randn(B, HKV * G, D).half(), torch.zeros(B, HKV * G, D).half()
    k, v = torch.randn(B, S, HKV, D).half(), torch.randn(B, S, HKV, D).half()
    mk = (torch.rand(B, S, HKV) > 0.3).to(torch.uint8)
    mk[:, 0, :] = 1
    run(decode, [q, k, v, mk, o], arch)
    qf = q.float().view(B, HKV, G, D)
    s = qf @ k.float().permute(0, 2, 3, 1) / D ** 0.5
    s = s.masked_fill(mk.permute(0, 2, 1)[:, :, None, :] == 0, float("-inf"))
    ref = (F.softmax(s, -1) @ v.float().permute(0, 2, 1, 3)).reshape(B, HKV * G, D)
    torch.testing.assert_close(o.float(), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.slow
def test_attention_sink_with_a_sliding_window(arch):
    """Attention with sinks as TileLang's example writes it: `sinks[i] = Sinks[by]` (a per-head scalar
    read from GM inside T.Parallel), a sliding-window causal mask (`q >= k and q < k + window`), the
    check for rows with no key yet (`m == -inf`), and a loop that starts past 0."""
    H, S, D, Wn, bM, bN = 2, 96, 64, 48, 32, 32
    scale = (1.0 / D) ** 0.5 * 1.44269504
    shape = [1, H, S, D]

    @T.prim_func
    def sink(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"),
             Out: T.Tensor(shape, "float16"), Sinks: T.Tensor([H], "float16")):
        with T.Kernel(T.ceildiv(S, bM), H, 1) as (bx, by, bz):
            Qs, Ks, Vs, acc_s, acc_c, acc_o, m, mp, sc, ss, ls = _tiles(bM, bN, D)()
            sinks = T.alloc_fragment([bM], "float16")
            T.copy(Q[bz, by, bx * bM:(bx + 1) * bM, :], Qs)
            init_softmax(acc_o, ls, m)
            for i in T.Parallel(bM):
                sinks[i] = Sinks[by]
            end = T.min(T.ceildiv(S, bN), T.ceildiv((bx + 1) * bM, bN))
            start = T.max(0, (bx * bM - Wn) // bN)
            for k in T.Pipelined(start, end, num_stages=1):
                T.copy(K[bz, by, k * bN:(k + 1) * bN, :], Ks)
                for i, j in T.Parallel(bM, bN):
                    q_idx = bx * bM + i
                    k_idx = k * bN + j
                    acc_s[i, j] = T.if_then_else(q_idx >= k_idx and q_idx < k_idx + Wn, 0, -T.infinity("float32"))
                T.gemm(Qs, Ks, acc_s, transpose_B=True)
                T.copy(m, mp)
                T.fill(m, -T.infinity("float32"))
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(bM):
                    m[i] = T.max(m[i], mp[i])
                for i in T.Parallel(bM):
                    m[i] = T.if_then_else(m[i] == -T.infinity("float32"), 0, m[i])
                    sc[i] = T.exp2(mp[i] * scale - m[i] * scale)
                softmax_weights(bM, bN, D, scale)(acc_s, acc_c, acc_o, m, sc, ss, ls)
                T.copy(V[bz, by, k * bN:(k + 1) * bN, :], Vs)
                T.gemm(acc_c, Vs, acc_o)
            for i in T.Parallel(bM):
                ls[i] += T.exp2(sinks[i] * 1.44269504 - m[i] * scale)
            normalize(bM, D)(acc_o, ls)
            T.copy(acc_o, Out[bz, by, bx * bM:(bx + 1) * bM, :])

    q, k, v = (torch.randn(1, H, S, D).half() for _ in range(3))
    sinks, o = torch.randn(H).half(), torch.zeros(1, H, S, D).half()
    run(sink, [q, k, v, o, sinks], arch)
    s = (q.float() @ k.float().transpose(-1, -2)) / D ** 0.5
    qi, ki = torch.arange(S)[:, None], torch.arange(S)[None, :]
    s = s.masked_fill(~((qi >= ki) & (qi < ki + Wn)), float("-inf"))
    p = F.softmax(torch.cat([s, sinks.float().view(1, H, 1, 1).expand(1, H, S, 1)], -1), -1)[..., :-1]
    torch.testing.assert_close(o.float(), p @ v.float(), rtol=1e-2, atol=1e-2)


def test_a_kernel_over_the_ub_budget_fits_by_reusing_dead_temporaries(arch):
    """Two tiles and an expression whose first lowering needs two tile-sized temporaries: their
    sizes add up to more than UB, but plan_memory places the temporaries that are dead by then in
    the same bytes (before reuse, the driver needed its compact second lowering here; that one is
    covered in tests/ir/test_lower_vector.py); the kernel runs right."""
    R = 64 if arch == "dav-3510" else 48  # 4 tiles of R KB do not fit UB, 3 do

    @T.prim_func
    def big(X: T.Tensor((R, 256), "float32"), Vv: T.Tensor((R,), "float32"), Y: T.Tensor((R, 256), "float32")):
        with T.Kernel(1):
            x = T.alloc_fragment((R, 256), "float32")
            y = T.alloc_fragment((R, 256), "float32")
            v = T.alloc_fragment((R,), "float32")
            T.copy(X[0, 0], x)
            T.copy(Vv[0], v)
            for i, j in T.Parallel(R, 256):
                y[i, j] = T.exp((x[i, j] * 0.5 - v[i]) * 0.25) + x[i, j]
            T.copy(y, Y[0, 0])

    p = import_primfunc(big, get_arch(arch))
    for _, fn in passes():
        p = fn(p)
    ub = [b for _, _, k in p.kernels() for b in k.buffers.values() if b.scope is Scope.UB]
    assert sum(b.nbytes for b in ub) > get_arch(arch).capacity[Scope.UB]  # fits only through reuse
    x, v, y = torch.randn(R, 256), torch.randn(R), torch.zeros(R, 256)
    run(big, [x, v, y], arch)
    torch.testing.assert_close(y, torch.exp((x * 0.5 - v[:, None]) * 0.25) + x, rtol=1e-5, atol=1e-5)
