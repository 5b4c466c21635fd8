"""Families of TileLang's examples written as their users write them (our own kernels in the
examples' style): chunked retention and linear attention (a gemm accumulator handed to the Vector
cores and later added to, atomics of a whole tile into GM), layernorm backward (scalar reads of
per-row statistics, column reducers, element-wise atomics across blocks), gemv in tile form
(one block per row block, and split-K with atomics). Each on the emulator against torch, both
arches, strict mode. The GPU per-thread forms of gemv are refused at their line (last test)."""

import pytest
import tilelang.language as T
import torch
from strict_run import run

import ascend_backend
from ascend_backend.errors import UnsupportedError


def _decay_mask(S: int, g: float) -> torch.Tensor:
    i = torch.arange(S, dtype=torch.float64)[:, None]
    j = torch.arange(S, dtype=torch.float64)[None, :]
    return torch.where(i >= j, g ** (i - j), torch.zeros(())).float()


# ------------------------------------------------------------------ retention


def retention(B, S, H, D, C=64):
    """o_t = sum_{s <= t} g_h^(t - s) (q_t . k_s) v_s, chunk by chunk: inside a chunk through the
    decayed score tile, across chunks through a running state st (rescaled by g^C per chunk)."""
    chunks = S // C

    @T.prim_func
    def retention_fwd(Q: T.Tensor((B, S, H, D), "float16"), K: T.Tensor((B, S, H, D), "float16"),
                      V: T.Tensor((B, S, H, D), "float16"), Out: T.Tensor((B, S, H, D), "float16")):
        with T.Kernel(B * H) as bh:
            b = bh // H
            h = bh % H
            lg = T.alloc_var("float32")
            lg = T.log2(1 - T.exp2(-5.0 - 1.0 * h))  # log2 of this head's decay
            q = T.alloc_shared((C, D), "float16")
            k = T.alloc_shared((C, D), "float16")
            v = T.alloc_shared((C, D), "float16")
            st = T.alloc_fragment((D, D), "float32")
            st16 = T.alloc_shared((D, D), "float16")
            s = T.alloc_fragment((C, C), "float32")
            s16 = T.alloc_shared((C, C), "float16")
            o = T.alloc_fragment((C, D), "float32")
            T.clear(st)
            for t in T.Pipelined(chunks):
                T.copy(Q[b, t * C:(t + 1) * C, h, :], q)
                T.copy(K[b, t * C:(t + 1) * C, h, :], k)
                T.copy(V[b, t * C:(t + 1) * C, h, :], v)
                T.gemm(q, k, s, clear_accum=True, transpose_B=True)
                for i, j in T.Parallel(C, C):
                    s16[i, j] = T.if_then_else(i >= j, s[i, j] * T.exp2((i - j) * lg), 0)
                T.copy(st, st16)
                T.gemm(q, st16, o, clear_accum=True)  # the state's part ...
                for i, j in T.Parallel(C, D):
                    o[i, j] = T.exp2((i + 1) * lg) * o[i, j]  # ... decayed to row i (o moves to the AIVs)
                T.gemm(s16, v, o)  # a product added into the AIVs' o
                for i, j in T.Parallel(C, D):
                    v[i, j] = v[i, j] * T.exp2((C - i - 1) * lg)
                for i, j in T.Parallel(D, D):
                    st[i, j] = T.exp2(C * lg) * st[i, j]
                T.copy(o, Out[b, t * C:(t + 1) * C, h, :])
                T.gemm(k, v, st, transpose_A=True)

    return retention_fwd


@pytest.mark.slow
def test_retention_chunked(arch):
    B, S, H, D = 1, 128, 2, 64
    g = torch.Generator().manual_seed(3)
    q, k, v = [(torch.randn(B, S, H, D, generator=g) * 0.3).half() for _ in range(3)]
    o = torch.zeros(B, S, H, D).half()
    run(retention(B, S, H, D), [q, k, v, o], arch)
    ref = torch.empty(B, S, H, D)
    for h in range(H):
        mask = _decay_mask(S, 1 - 2 ** (-5.0 - h))
        for b in range(B):
            ref[b, :, h] = ((q[b, :, h].float() @ k[b, :, h].float().T) * mask) @ v[b, :, h].float()
    torch.testing.assert_close(o.float(), ref, atol=2e-2, rtol=2e-2)


# ------------------------------------------------------------------ linear attention


def linear_attention(B, S, H, D, BK=64, BV=64, C=64):
    """Causal linear attention in chunks; each (value block, key block) pair of a head is one
    block, and the key blocks' outputs are added atomically into O (zeroed by the caller)."""
    NK, NV, chunks = D // BK, D // BV, S // C
    scale = D ** -0.5

    @T.prim_func
    def linear_attn_fwd(Q: T.Tensor((B, S, H, D), "float16"), K: T.Tensor((B, S, H, D), "float16"),
                        V: T.Tensor((B, S, H, D), "float16"), Out: T.Tensor((B, S, H, D), "float32"),
                        State: T.Tensor((B, H, D, D), "float32")):
        with T.Kernel(NV, NK, B * H) as (iv, ik, bh):
            b = bh // H
            h = bh % H
            q = T.alloc_shared((C, BK), "float16")
            k = T.alloc_shared((C, BK), "float16")
            v = T.alloc_shared((C, BV), "float16")
            st = T.alloc_fragment((BK, BV), "float32")
            st16 = T.alloc_shared((BK, BV), "float16")
            s = T.alloc_fragment((C, C), "float32")
            s16 = T.alloc_shared((C, C), "float16")
            o = T.alloc_fragment((C, BV), "float32")
            o_sh = T.alloc_shared((C, BV), "float32")
            T.clear(st)
            for t in T.Pipelined(0, chunks):
                for i, j in T.Parallel(C, BK):
                    q[i, j] = Q[b, t * C + i, h, ik * BK + j] * scale
                T.copy(K[b, t * C:(t + 1) * C, h, ik * BK:(ik + 1) * BK], k)
                T.copy(V[b, t * C:(t + 1) * C, h, iv * BV:(iv + 1) * BV], v)
                T.gemm(q, k, s, clear_accum=True, transpose_B=True)
                for i, j in T.Parallel(C, C):
                    s16[i, j] = T.if_then_else(i >= j, s[i, j], 0)
                T.gemm(s16, v, o, clear_accum=True)
                T.copy(st, st16)
                T.gemm(k, v, st, transpose_A=True)
                T.gemm(q, st16, o)
                T.copy(o, o_sh)
                T.atomic_add(Out[b, t * C:(t + 1) * C, h, iv * BV:(iv + 1) * BV], o_sh)
            T.copy(st, State[b, h, ik * BK:(ik + 1) * BK, iv * BV:(iv + 1) * BV])

    return linear_attn_fwd


@pytest.mark.slow
def test_linear_attention_with_tile_atomics_across_key_blocks(arch):
    B, S, H, D = 1, 128, 1, 128
    g = torch.Generator().manual_seed(5)
    q, k, v = [(torch.randn(B, S, H, D, generator=g) * 0.3).half() for _ in range(3)]
    o = torch.zeros(B, S, H, D)  # the key blocks add into it
    state = torch.zeros(B, H, D, D)
    run(linear_attention(B, S, H, D), [q, k, v, o, state], arch)
    qs = (q.float() * D ** -0.5).half().float()  # the kernel rounds q * scale to float16
    mask = torch.tril(torch.ones(S, S))
    ref = torch.einsum("bshd,bthd->bhst", qs, k.float()) * mask
    ref = torch.einsum("bhst,bthd->bshd", ref, v.float())
    torch.testing.assert_close(o, ref, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(state, torch.einsum("bshk,bshv->bhkv", k.float(), v.float()), atol=2e-2, rtol=2e-2)


# ------------------------------------------------------------------ layernorm backward


def layernorm_bwd(N, D, rows):
    """dX per row from the saved Mean/Rstd (scalar reads of GM), dGamma/dBeta as column reducers
    over the block's rows, added across blocks with element-wise atomics."""

    @T.prim_func
    def ln_bwd(DY: T.Tensor((N, D), "float16"), X: T.Tensor((N, D), "float16"), G: T.Tensor((D,), "float16"),
               Mean: T.Tensor((N,), "float32"), Rstd: T.Tensor((N,), "float32"), DX: T.Tensor((N, D), "float16"),
               DG: T.Tensor((D,), "float32"), DB: T.Tensor((D,), "float32")):
        with T.Kernel(N // rows) as bx:
            dy = T.alloc_shared((1, D), "float16")
            x = T.alloc_shared((1, D), "float16")
            g = T.alloc_shared((D,), "float16")
            dx = T.alloc_shared((1, D), "float16")
            xh = T.alloc_fragment((1, D), "float32")
            gdy = T.alloc_fragment((1, D), "float32")
            prod = T.alloc_fragment((1, D), "float32")
            s1 = T.alloc_fragment((1,), "float32")
            s2 = T.alloc_fragment((1,), "float32")
            dg = T.alloc_fragment((D,), "float32")
            db = T.alloc_fragment((D,), "float32")
            T.copy(G, g)
            T.clear(dg)
            T.clear(db)
            for r in T.serial(rows):
                row = bx * rows + r
                T.copy(DY[row, 0], dy)
                T.copy(X[row, 0], x)
                mu = Mean[row]
                rs = Rstd[row]
                for i, j in T.Parallel(1, D):
                    xh[i, j] = (T.Cast("float32", x[i, j]) - mu) * rs
                    gdy[i, j] = T.Cast("float32", dy[i, j]) * T.Cast("float32", g[j])
                    prod[i, j] = gdy[i, j] * xh[i, j]
                T.reduce_sum(gdy, s1, dim=1)
                T.reduce_sum(prod, s2, dim=1)
                for i, j in T.Parallel(1, D):
                    dx[i, j] = T.Cast("float16", rs * (gdy[i, j] - s1[0] / D - xh[i, j] * (s2[0] / D)))
                    dg[j] += T.Cast("float32", dy[i, j]) * xh[i, j]
                    db[j] += T.Cast("float32", dy[i, j])
                T.copy(dx, DX[row, 0])
            for j in T.Parallel(D):
                T.atomic_add(DG[j], dg[j])
                T.atomic_add(DB[j], db[j])

    return ln_bwd


def test_layernorm_backward(arch):
    N, D, rows = 32, 128, 8
    g = torch.Generator().manual_seed(11)
    x = torch.randn(N, D, generator=g).half()
    gamma = (1 + 0.1 * torch.randn(D, generator=g)).half()
    dy = torch.randn(N, D, generator=g).half()
    xf = x.float()
    mean = xf.mean(1)
    rstd = 1 / torch.sqrt(xf.var(1, unbiased=False) + 1e-5)
    dx = torch.empty(N, D).half()
    dg, db = torch.zeros(D), torch.zeros(D)  # the blocks add into them
    run(layernorm_bwd(N, D, rows), [dy, x, gamma, mean, rstd, dx, dg, db], arch)
    xr = xf.clone().requires_grad_(True)
    gr = gamma.float().clone().requires_grad_(True)
    br = torch.zeros(D, requires_grad=True)
    torch.nn.functional.layer_norm(xr, (D,), gr, br, 1e-5).backward(dy.float())
    torch.testing.assert_close(dx.float(), xr.grad, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(dg, gr.grad, atol=1e-2, rtol=1e-3)
    torch.testing.assert_close(db, br.grad, atol=1e-3, rtol=1e-4)


# ------------------------------------------------------------------ gemv


def gemv_blocks(N, K, BN, BK, split=1):
    """y = W x: a block per BN rows (and per K split, the splits added with element-wise atomics
    into y, zeroed by the caller); each K step a tile of W times the broadcast x, summed along K by
    a reducer store."""
    per = K // split

    @T.prim_func
    def gemv(W: T.Tensor((N, K), "float16"), x: T.Tensor((K,), "float16"), y: T.Tensor((N,), "float32")):
        with T.Kernel(N // BN, split) as (bn, bk):
            w = T.alloc_shared((BN, BK), "float16")
            xv = T.alloc_fragment((BK,), "float16")
            acc = T.alloc_fragment((BN,), "float32")
            T.clear(acc)
            for ko in T.serial(per // BK):
                T.copy(W[bn * BN, bk * per + ko * BK], w)
                T.copy(x[bk * per + ko * BK], xv)
                for i, j in T.Parallel(BN, BK):
                    acc[i] += T.Cast("float32", w[i, j]) * T.Cast("float32", xv[j])
            if split == 1:
                T.copy(acc, y[bn * BN])
            else:
                for i in T.Parallel(BN):
                    T.atomic_add(y[bn * BN + i], acc[i])

    return gemv


@pytest.mark.parametrize("split", [1, 4])
def test_gemv_tile_form_and_split_k(arch, split):
    N, K = 64, 512
    g = torch.Generator().manual_seed(2)
    w = (torch.randn(N, K, generator=g) * 0.1).half()
    x = torch.randn(K, generator=g).half()
    y = torch.zeros(N)
    run(gemv_blocks(N, K, 32, 64, split), [w, x, y], arch)
    torch.testing.assert_close(y, w.float() @ x.float(), atol=1e-3, rtol=1e-3)


def test_gemv_per_thread_form_is_refused_at_its_line():
    N, K, BN = 64, 64, 32

    @T.prim_func
    def gemv_threads(W: T.Tensor((N, K), "float16"), x: T.Tensor((K,), "float16"), y: T.Tensor((N,), "float16")):
        with T.Kernel(N // BN, threads=BN) as bn:
            tn = T.get_thread_binding(0)
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for k in T.serial(K):
                acc[0] += T.Cast("float32", W[bn * BN + tn, k]) * T.Cast("float32", x[k])  # marker: thread use
            y[bn * BN + tn] = T.Cast("float16", acc[0])

    with pytest.raises(UnsupportedError) as e:
        ascend_backend.lower(gemv_threads, target={"kind": "ascendc", "arch": "dav-c220"})
    msg = str(e.value)
    assert "thread index 'tn'" in msg and "T.get_thread_binding" in msg and "T.Parallel" in msg
    assert e.value.loc is not None and "marker: thread use" in open(e.value.loc.file).read().splitlines()[
        e.value.loc.line - 1]


# ------------------------------------------------------------------ dequantize gemm, unsigned int4


def dequant_gemm_uint4(M, N, K, bM=64, bN=64, bK=64):
    """C = A @ dequant(B).T with B holding two unsigned 4-bit values per int8 byte (element 2k in
    the low nibble), decoded for the whole tile in T.Parallel on the Vector cores."""

    @T.prim_func
    def dq_gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K // 2), "int8"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // bN, M // bM) as (bx, by):
            a = T.alloc_shared((bM, bK), "float16")
            bp = T.alloc_fragment((bN, bK // 2), "int8")
            bd = T.alloc_shared((bN, bK), "float16")
            c = T.alloc_fragment((bM, bN), "float32")
            T.clear(c)
            for ko in T.Pipelined(K // bK, num_stages=2):
                T.copy(A[by * bM, ko * bK], a)
                T.copy(B[bx * bN, ko * bK // 2], bp)
                for i, j in T.Parallel(bN, bK):
                    bd[i, j] = T.Cast("float16", (bp[i, j // 2] >> (T.Cast("int8", j % 2) * T.int8(4))) & T.int8(15))
                T.gemm(a, bd, c, transpose_B=True)
            T.copy(c, C[by * bM, bx * bN])

    return dq_gemm


@pytest.mark.slow
def test_dequant_gemm_unsigned_int4(arch):
    M, N, K = 64, 64, 128
    g = torch.Generator().manual_seed(9)
    a = (torch.randn(M, K, generator=g) * 0.1).half()
    w = torch.randint(0, 16, (N, K), generator=g, dtype=torch.int32)
    packed = ((w[:, 1::2] << 4) | w[:, 0::2]).to(torch.uint8).view(torch.int8)
    c = torch.zeros(M, N)
    k = run(dequant_gemm_uint4(M, N, K), [a, packed, c], arch)
    assert "ReinterpretCast<int4b_t>()" in k.kernel_source and "Mins(" in k.kernel_source
    torch.testing.assert_close(c, a.float() @ w.float().T, atol=1e-2, rtol=1e-3)


def test_cross_thread_allreduce_is_refused_at_its_line():
    N, K = 64, 64

    @T.prim_func
    def rowsum_allreduce(W: T.Tensor((N, K), "float32"), y: T.Tensor((N,), "float32")):
        with T.Kernel(N) as bn:
            part = T.alloc_local((1,), "float32")
            total = T.alloc_local((1,), "float32")
            part[0] = W[bn, 0]
            with T.attr(T.comm_reducer(lambda a, b: a + b, [T.cast(0, "float32")]), "reduce_scope",  # marker
                        T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), part[0], True, total[0], bn, dtype="handle"))
            y[bn] = total[0]

    with pytest.raises(UnsupportedError) as e:
        ascend_backend.lower(rowsum_allreduce, target={"kind": "ascendc", "arch": "dav-3510"})
    assert "cross-thread reduction" in str(e.value) and "T.reduce_*" in str(e.value)
    assert e.value.loc is not None and "# marker" in open(e.value.loc.file).read().splitlines()[e.value.loc.line - 1]


# ------------------------------------------------------------------ staged tiles (shared -> fragment)


def gemv_reducer_staged(M, N, bM=128, bN=128, stages=2):
    """The GPU staging idiom: each tile of W lands in shared memory, is copied to a fragment and
    reduced into a T.alloc_reducer. On the Vector core the copy aliases the shared tile, and the
    product's column chunks fold in place: a 128 x 128 tile in two stages fits dav-c220's UB."""

    @T.prim_func
    def gemv_staged(W: T.Tensor((M, N), "float16"), x: T.Tensor((N,), "float16"), y: T.Tensor((M,), "float16")):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bm:
            r = T.alloc_reducer(bM, "float32", replication="all")
            T.clear(r)
            for kn in T.Pipelined(T.ceildiv(N, bN), num_stages=stages):
                w_s = T.alloc_shared((bM, bN), "float16")
                T.copy(W[bm * bM, kn * bN], w_s)
                w_f = T.alloc_fragment((bM, bN), "float16")
                T.copy(w_s, w_f)
                x_f = T.alloc_fragment(bN, "float16")
                T.copy(x[kn * bN], x_f)
                for i, j in T.Parallel(bM, bN):
                    r[i] += w_f[i, j] * x_f[j]
            T.finalize_reducer(r)
            T.copy(r, y[bm * bM])

    return gemv_staged


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_gemv_reducer_with_staged_tiles_fits_both_arches(arch):
    M, N = 128, 256
    g = torch.Generator().manual_seed(4)
    w = (torch.randn(M, N, generator=g) * 0.1).half()
    x = torch.randn(N, generator=g).half()
    y = torch.zeros(M).half()
    k = run(gemv_reducer_staged(M, N), [w, x, y], arch)
    assert "w_f" not in k.kernel_source  # the fragment is the shared tile
    ref = (w * x).float().sum(1)  # the product in float16, as the kernel forms it
    torch.testing.assert_close(y.float(), ref, atol=2e-2, rtol=1e-2)


def w4a8_gemm(M, N, K, bM=32, bN=32, bK=128):
    """Ct = dequant(B) @ A.T with int8 activations and signed int4 weights (two per uint8 byte),
    the packed tile staged shared -> fragment and decoded in T.Parallel, accumulated in int32."""

    @T.prim_func
    def w4a8(A: T.Tensor((M, K), "int8"), B: T.Tensor((N, K // 2), "uint8"), Ct: T.Tensor((N, M), "int32")):
        with T.Kernel(N // bN, M // bM) as (bx, by):
            a = T.alloc_shared((bM, bK), "int8")
            bs = T.alloc_shared((bN, bK // 2), "uint8")
            bl = T.alloc_fragment((bN, bK // 2), "uint8")
            bd = T.alloc_fragment((bN, bK), "int8")
            c = T.alloc_fragment((bN, bM), "int32")
            T.clear(c)
            for ko in T.Pipelined(K // bK, num_stages=1):
                T.copy(A[by * bM, ko * bK], a)
                T.copy(B[bx * bN, ko * bK // 2], bs)
                T.copy(bs, bl)
                for i, j in T.Parallel(bN, bK):
                    bd[i, j] = T.Cast("int8", T.shift_right(T.shift_left(
                        T.bitwise_and(T.shift_right(bl[i, j // 2], T.Cast("uint8", (j % 2) * 4)), T.uint8(15)),
                        T.uint8(4)).astype("int8"), T.int8(4)))
                T.gemm(bd, a, c, transpose_B=True)
            T.copy(c, Ct[bx * bN, by * bM])

    return w4a8


def test_w4a8_gemm_signed_int4_weights(arch):
    M, N, K = 64, 64, 256
    g = torch.Generator().manual_seed(6)
    a = torch.randint(-8, 8, (M, K), generator=g, dtype=torch.int32)
    w = torch.randint(-8, 8, (N, K), generator=g, dtype=torch.int32)
    nib = w & 15
    packed = ((nib[:, 1::2] << 4) | nib[:, 0::2]).to(torch.uint8)
    ct = torch.zeros(N, M, dtype=torch.int32)
    run(w4a8_gemm(M, N, K), [a.to(torch.int8), packed, ct], arch)
    torch.testing.assert_close(ct, w @ a.T)


def linear_attention_bwd(B, S, H, D, C=64):
    """Backward of causal linear attention o = tril(q k^T) v (q scaled), in chunks: dQ walking
    forward with the running state k^T v, dK and dV walking backward with the running state
    q^T dO; eight tiles cross between the cores."""
    chunks = S // C
    scale = D ** -0.5

    @T.prim_func
    def linear_attn_bwd(Q: T.Tensor((B, S, H, D), "float16"), K: T.Tensor((B, S, H, D), "float16"),
                        V: T.Tensor((B, S, H, D), "float16"), dO: T.Tensor((B, S, H, D), "float16"),
                        dQ: T.Tensor((B, S, H, D), "float32"), dK: T.Tensor((B, S, H, D), "float32"),
                        dV: T.Tensor((B, S, H, D), "float32")):
        with T.Kernel(B * H) as bh:
            b = bh // H
            h = bh % H
            q = T.alloc_shared((C, D), "float16")
            k = T.alloc_shared((C, D), "float16")
            v = T.alloc_shared((C, D), "float16")
            do = T.alloc_shared((C, D), "float16")
            s = T.alloc_fragment((C, C), "float32")
            s16 = T.alloc_shared((C, C), "float16")
            st = T.alloc_fragment((D, D), "float32")  # sum of v^T k over the chunks before
            st16 = T.alloc_shared((D, D), "float16")
            ds = T.alloc_fragment((D, D), "float32")  # sum of q^T dO over the chunks after
            ds16 = T.alloc_shared((D, D), "float16")
            dq = T.alloc_fragment((C, D), "float32")
            dk = T.alloc_fragment((C, D), "float32")
            dv = T.alloc_fragment((C, D), "float32")
            T.clear(st)
            T.clear(ds)
            for t in T.Pipelined(0, chunks):
                T.copy(K[b, t * C:(t + 1) * C, h, :], k)
                T.copy(V[b, t * C:(t + 1) * C, h, :], v)
                T.copy(dO[b, t * C:(t + 1) * C, h, :], do)
                T.gemm(do, v, s, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(C, C):
                    s16[i, j] = T.if_then_else(i >= j, s[i, j], 0)
                T.gemm(s16, k, dq, clear_accum=True)
                T.copy(st, st16)
                T.gemm(do, st16, dq)
                T.gemm(v, k, st, transpose_A=True)
                for i, j in T.Parallel(C, D):
                    dq[i, j] = dq[i, j] * scale
                T.copy(dq, dQ[b, t * C:(t + 1) * C, h, :])
            for t in T.Pipelined(1, chunks + 1):
                c0 = chunks - t
                for i, j in T.Parallel(C, D):
                    q[i, j] = Q[b, c0 * C + i, h, j] * scale
                T.copy(K[b, c0 * C:(c0 + 1) * C, h, :], k)
                T.copy(V[b, c0 * C:(c0 + 1) * C, h, :], v)
                T.copy(dO[b, c0 * C:(c0 + 1) * C, h, :], do)
                T.gemm(v, do, s, transpose_B=True, clear_accum=True)  # (dO v^T)^T
                for i, j in T.Parallel(C, C):
                    s16[i, j] = T.if_then_else(i <= j, s[i, j], 0)
                T.gemm(s16, q, dk, clear_accum=True)
                T.copy(ds, ds16)
                T.gemm(v, ds16, dk, transpose_B=True)
                T.gemm(k, q, s, transpose_B=True, clear_accum=True)  # (q k^T)^T
                for i, j in T.Parallel(C, C):
                    s16[i, j] = T.if_then_else(i <= j, s[i, j], 0)
                T.gemm(s16, do, dv, clear_accum=True)
                T.gemm(k, ds16, dv)
                T.gemm(q, do, ds, transpose_A=True)
                T.copy(dk, dK[b, c0 * C:(c0 + 1) * C, h, :])
                T.copy(dv, dV[b, c0 * C:(c0 + 1) * C, h, :])

    return linear_attn_bwd


@pytest.mark.slow
def test_linear_attention_backward(arch):
    B, S, H, D = 1, 128, 1, 64
    g = torch.Generator().manual_seed(8)
    q, k, v, do = [(torch.randn(B, S, H, D, generator=g) * 0.3).half() for _ in range(4)]
    dq, dk, dv = torch.zeros(B, S, H, D), torch.zeros(B, S, H, D), torch.zeros(B, S, H, D)
    run(linear_attention_bwd(B, S, H, D), [q, k, v, do, dq, dk, dv], arch)
    qf, kf, vf = (x.float().requires_grad_(True) for x in (q, k, v))
    qs = qf * D ** -0.5
    att = torch.einsum("bshd,bthd->bhst", qs, kf) * torch.tril(torch.ones(S, S))
    torch.einsum("bhst,bthd->bshd", att, vf).backward(do.float())
    for got, want in ((dq, qf.grad), (dk, kf.grad), (dv, vf.grad)):
        torch.testing.assert_close(got, want, atol=3e-2, rtol=3e-2)
