"""Attention families of TileLang's examples, as our own small kernels in the examples' style: the
forms the examples use that the compiler had to learn (tail masks of non-causal FlashAttention,
GQA head mapping, varlen sequences stored under `if` bounds, FA backward's pre/post-processing,
flash decoding with valid heads and uint8 masks joined with `&`, its combine over rows of a tile,
block-sparse attention whose mask tile the Cube reads from GM, attention with sinks, sparse MLA's
column ranges of one Q tile). On the emulator against torch, both arches, strict mode."""

import pytest
import tilelang.language as T
import torch
from attention_forms import attention_tiles, init_softmax, normalize, online_softmax

import ascend_backend

LOG2E = 1.44269504


def _compile(func, arch, **kw):
    return ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True,
                                  **kw)


def _attn_ref(q, k, v, causal=False, mask=None):
    """q [.., sq, d], k/v [.., sk, d] in float32."""
    s = q.float() @ k.float().transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        sq, sk = s.shape[-2:]
        s = s.masked_fill(torch.ones(sq, sk, dtype=torch.bool).triu(1), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, -1) @ v.float()


# ------------------------------------------------------------------ FlashAttention forward, GQA, bshd


def gqa_fwd(heads=2, groups=1, seq=96, dim=64, bM=64, bN=64, causal=False, bhsd=False):
    """O = softmax(Q K^T) V in [batch, seq, heads, dim] layout ([batch, heads, seq, dim] with
    ``bhsd``); query head h reads kv head h // (heads // groups); seq is not a multiple of bN: the
    last key block is masked by its tail."""
    scale = (1.0 / dim) ** 0.5 * LOG2E
    per = heads // groups
    qs, ks = ((1, heads, seq, dim), (1, groups, seq, dim)) if bhsd else ((1, seq, heads, dim), (1, seq, groups, dim))

    @T.prim_func
    def fwd(Q: T.Tensor(qs, "float16"), K: T.Tensor(ks, "float16"), V: T.Tensor(ks, "float16"),
            Output: T.Tensor(qs, "float16")):
        with T.Kernel(T.ceildiv(seq, bM), heads) as (bx, by):
            q, k_s, v_s, s, p, o, mx, mx0, sc, sm, lsum = attention_tiles(bM, bN, dim)()
            if bhsd:
                T.copy(Q[0, by, bx * bM:(bx + 1) * bM, :], q)
            else:
                T.copy(Q[0, bx * bM:(bx + 1) * bM, by, :], q)
            init_softmax(o, lsum, mx)
            for k in T.Pipelined(T.ceildiv(seq, bN), num_stages=1):
                if bhsd:
                    T.copy(K[0, by // per, k * bN:(k + 1) * bN, :], k_s)
                else:
                    T.copy(K[0, k * bN:(k + 1) * bN, by // per, :], k_s)
                for i, j in T.Parallel(bM, bN):
                    if causal:
                        s[i, j] = T.if_then_else(bx * bM + i >= k * bN + j, 0, -T.infinity("float32"))
                    else:
                        s[i, j] = T.if_then_else(k * bN + j >= seq, -T.infinity("float32"), 0)
                T.gemm(q, k_s, s, transpose_B=True)
                online_softmax(bM, bN, dim, scale)(s, p, o, mx, mx0, sc, sm, lsum)
                if bhsd:
                    T.copy(V[0, by // per, k * bN:(k + 1) * bN, :], v_s)
                else:
                    T.copy(V[0, k * bN:(k + 1) * bN, by // per, :], v_s)
                T.gemm(p, v_s, o)
            normalize(bM, dim)(o, lsum)
            if bhsd:
                T.copy(o, Output[0, by, bx * bM:(bx + 1) * bM, :])
            else:
                T.copy(o, Output[0, bx * bM:(bx + 1) * bM, by, :])

    return fwd


@pytest.mark.slow
@pytest.mark.parametrize("heads,groups,causal,bhsd", [(2, 1, False, False), (4, 2, False, False),
                                                      (2, 1, True, False), (2, 1, False, True)],
                         ids=["mha", "gqa", "mha-causal", "mha-bhsd"])
def test_flash_attention_forward(arch, heads, groups, causal, bhsd):
    g = torch.Generator().manual_seed(0)
    seq = 96 if not causal else 128
    q = torch.randn(1, seq, heads, 64, generator=g).half()
    k, v = (torch.randn(1, seq, groups, 64, generator=g).half() for _ in range(2))
    args = [x.transpose(1, 2).contiguous() for x in (q, k, v)] if bhsd else [q, k, v]
    out = _compile(gqa_fwd(heads, groups, seq, causal=causal, bhsd=bhsd), arch, out_idx=[3])(*args)
    out = out.transpose(1, 2) if bhsd else out
    per = heads // groups
    kk, vv = (x.repeat_interleave(per, dim=2).transpose(1, 2) for x in (k, v))
    ref = _attn_ref(q.transpose(1, 2), kk, vv, causal=causal).transpose(1, 2)
    torch.testing.assert_close(out.float(), ref, atol=1e-2, rtol=1e-2)


# ------------------------------------------------------------------ varlen


def varlen_fwd(batch=2, total=100, heads=2, groups=1, dim=64, bM=32, bN=32):
    """Sequences packed along dim 0 (cu_seqlens); a block past its sequence's end stores nothing."""
    scale = (1.0 / dim) ** 0.5 * LOG2E
    per = heads // groups

    @T.prim_func
    def fwd(Q: T.Tensor((total, heads, dim), "float16"), K: T.Tensor((total, groups, dim), "float16"),
            V: T.Tensor((total, groups, dim), "float16"), cu: T.Tensor((batch + 1,), "int32"),
            max_len: T.int32, Output: T.Tensor((total, heads, dim), "float16")):
        with T.Kernel(T.ceildiv(max_len, bM), heads, batch) as (bx, by, bz):
            q = T.alloc_shared((bM, dim), "float16")
            k_s = T.alloc_shared((bN, dim), "float16")
            v_s = T.alloc_shared((bN, dim), "float16")
            s = T.alloc_fragment((bM, bN), "float32")
            p = T.alloc_fragment((bM, bN), "float16")
            o = T.alloc_fragment((bM, dim), "float32")
            o16 = T.alloc_shared((bM, dim), "float16")
            mx = T.alloc_fragment((bM,), "float32")
            mx0 = T.alloc_fragment((bM,), "float32")
            sc = T.alloc_fragment((bM,), "float32")
            sm = T.alloc_fragment((bM,), "float32")
            lsum = T.alloc_fragment((bM,), "float32")
            start = cu[bz]
            n = cu[bz + 1] - start
            T.copy(Q[start + bx * bM:start + bx * bM + bM, by, :], q)
            init_softmax(o, lsum, mx)
            for k in T.Pipelined(T.ceildiv(n, bN), num_stages=1):
                T.copy(K[start + k * bN:start + k * bN + bN, by // per, :], k_s)
                for i, j in T.Parallel(bM, bN):
                    s[i, j] = T.if_then_else(bx * bM + i >= n or k * bN + j >= n, -1e9, 0)
                T.gemm(q, k_s, s, transpose_B=True)
                online_softmax(bM, bN, dim, scale)(s, p, o, mx, mx0, sc, sm, lsum)
                T.copy(V[start + k * bN:start + k * bN + bN, by // per, :], v_s)
                T.gemm(p, v_s, o)
            normalize(bM, dim)(o, lsum)
            T.copy(o, o16)
            for i, d in T.Parallel(bM, dim):
                if bx * bM + i < n:
                    Output[start + bx * bM + i, by, d] = o16[i, d]

    return fwd


@pytest.mark.slow
@pytest.mark.parametrize("heads,groups", [(1, 1), (2, 2)], ids=["mha", "gqa"])
def test_varlen_attention_stores_only_its_sequence(arch, heads, groups):
    g = torch.Generator().manual_seed(1)
    lens = [37, 63]
    total = sum(lens)
    cu = torch.tensor([0, lens[0], total], dtype=torch.int32)
    q = torch.randn(total, heads, 64, generator=g).half()
    k, v = (torch.randn(total, groups, 64, generator=g).half() for _ in range(2))
    kern = _compile(varlen_fwd(2, total, heads, groups), arch, out_idx=[5])
    out = kern(q, k, v, cu, max(lens))
    per = heads // groups
    for b in range(2):
        sl = slice(int(cu[b]), int(cu[b + 1]))
        kk, vv = (x[sl].repeat_interleave(per, dim=1).transpose(0, 1) for x in (k, v))
        ref = _attn_ref(q[sl].transpose(0, 1), kk, vv).transpose(0, 1)
        torch.testing.assert_close(out[sl].float(), ref, atol=1e-2, rtol=1e-2)
    assert all(r.ok for r in kern.reports)  # no block wrote another sequence's rows


# ------------------------------------------------------------------ FA backward: pre- and post-processing


def bwd_preprocess(seq=64, dim=64, blk=32):
    """Delta = rowsum(O * dO), with the example's buffer names (`do` is a C++ keyword)."""

    @T.prim_func
    def pre(Output: T.Tensor((seq, dim), "float16"), dO: T.Tensor((seq, dim), "float16"),
            Delta: T.Tensor((seq,), "float32")):
        with T.Kernel(seq // blk) as bx:
            o = T.alloc_fragment((blk, blk), "float32")
            do = T.alloc_fragment((blk, blk), "float32")
            acc = T.alloc_fragment((blk, blk), "float32")
            delta = T.alloc_fragment((blk,), "float32")
            T.clear(acc)
            for k in T.serial(dim // blk):
                T.copy(Output[bx * blk:(bx + 1) * blk, k * blk:(k + 1) * blk], o)
                T.copy(dO[bx * blk:(bx + 1) * blk, k * blk:(k + 1) * blk], do)
                for i, j in T.Parallel(blk, blk):
                    acc[i, j] += o[i, j] * do[i, j]
            T.reduce_sum(acc, delta, dim=1)
            T.copy(delta, Delta[bx * blk:(bx + 1) * blk])

    return pre


def bwd_postprocess(seq=64, dim=64, blk=32):
    """dQ (float32 accumulated) -> dQ_out (float16): a copy between two global tensors."""

    @T.prim_func
    def post(dQ: T.Tensor((seq, dim), "float32"), dQ_out: T.Tensor((seq, dim), "float16")):
        with T.Kernel(seq // blk) as bx:
            T.copy(dQ[bx * blk:(bx + 1) * blk, :], dQ_out[bx * blk:(bx + 1) * blk, :])

    return post


@pytest.mark.slow
def test_backward_preprocess_and_postprocess(arch):
    g = torch.Generator().manual_seed(2)
    o, do = (torch.randn(64, 64, generator=g).half() for _ in range(2))
    delta = _compile(bwd_preprocess(), arch, out_idx=[2])(o, do)
    torch.testing.assert_close(delta, (o.float() * do.float()).sum(-1), atol=1e-3, rtol=1e-3)
    dq = torch.randn(64, 64, generator=g)
    out = _compile(bwd_postprocess(), arch, out_idx=[1])(dq)
    torch.testing.assert_close(out, dq.half(), atol=0, rtol=0)


# ------------------------------------------------------------------ flash decoding: split + combine


def gqa_decode(heads=8, groups=2, S=256, D=64, bN=64, bH=16, nsplit=2):
    """One query token per head. Split: a block takes the bH-row tile of one kv head's queries (only
    vH = heads // groups of its rows are real), over one part of the keys, masked by a uint8 mask;
    it writes its partial output and log-sum-exp. Combine: weights from the rows of the lse tile."""
    per = heads // groups
    vH = min(bH, per)
    scale = (1.0 / D) ** 0.5 * LOG2E
    part = S // nsplit

    @T.prim_func
    def dec(Q: T.Tensor((heads, D), "float16"), K: T.Tensor((S, groups, D), "float16"),
            V: T.Tensor((S, groups, D), "float16"), Msk: T.Tensor((S, groups), "uint8"),
            Out: T.Tensor((heads, D), "float16")):
        lse_g = T.alloc_global((heads, nsplit), "float32")
        o_part = T.alloc_global((heads, nsplit, D), "float32")
        with T.Kernel(heads // vH, nsplit) as (hx, sx):
            q = T.alloc_shared((bH, D), "float16")
            k_s = T.alloc_shared((bN, D), "float16")
            v_s = T.alloc_shared((bN, D), "float16")
            o_s = T.alloc_shared((vH, D), "float32")
            s = T.alloc_fragment((bH, bN), "float32")
            p = T.alloc_fragment((bH, bN), "float16")
            o = T.alloc_fragment((bH, D), "float32")
            msk = T.alloc_fragment((bN,), "uint8")
            mx = T.alloc_fragment((bH,), "float32")
            mx0 = T.alloc_fragment((bH,), "float32")
            sc = T.alloc_fragment((bH,), "float32")
            sm = T.alloc_fragment((bH,), "float32")
            lsum = T.alloc_fragment((bH,), "float32")
            kvh = hx // (per // vH)
            T.copy(Q[hx * vH:hx * vH + bH, :], q)
            init_softmax(o, lsum, mx)
            for k in T.Pipelined(part // bN, num_stages=1):
                T.copy(K[sx * part + k * bN:sx * part + (k + 1) * bN, kvh, :], k_s)
                T.copy(Msk[sx * part + k * bN:sx * part + (k + 1) * bN, kvh], msk)
                T.clear(s)
                T.gemm(q, k_s, s, transpose_B=True)
                for i, j in T.Parallel(bH, bN):
                    s[i, j] = T.if_then_else((msk[j] != 0) & (j < part), s[i, j], -T.infinity("float32"))
                online_softmax(bH, bN, D, scale)(s, p, o, mx, mx0, sc, sm, lsum)
                T.copy(V[sx * part + k * bN:sx * part + (k + 1) * bN, kvh, :], v_s)
                T.gemm(p, v_s, o)
            normalize(bH, D)(o, lsum)
            for i in T.Parallel(bH):
                lsum[i] = T.log2(lsum[i]) + mx[i] * scale
            for i in T.Parallel(bH):
                if i < vH:
                    lse_g[hx * vH + i, sx] = lsum[i]
            T.copy(o[:vH, :], o_s)
            T.copy(o_s, o_part[hx * vH:(hx + 1) * vH, sx, :])
        with T.Kernel(heads) as hx:
            lse = T.alloc_fragment((nsplit, 16), "float32")
            row = T.alloc_fragment((16,), "float32")
            po = T.alloc_fragment((D,), "float32")
            acc = T.alloc_fragment((D,), "float32")
            lmax = T.alloc_fragment((16,), "float32")
            lsum = T.alloc_fragment((16,), "float32")
            for k, j in T.Parallel(nsplit, 16):
                lse[k, j] = lse_g[hx, k]
            T.reduce_max(lse, lmax, dim=0, clear=True)
            T.clear(lsum)
            for k in T.serial(nsplit):
                T.copy(lse[k, :], row)
                for j in T.Parallel(16):
                    lsum[j] += T.exp2(row[j] - lmax[j])
            for j in T.Parallel(16):
                lsum[j] = T.log2(lsum[j]) + lmax[j]
            T.clear(acc)
            for k in T.serial(nsplit):
                T.copy(o_part[hx, k, :], po)
                for i in T.Parallel(D):
                    acc[i] += po[i] * T.exp2(lse_g[hx, k] - lsum[0])
            T.copy(acc, Out[hx, :])

    return dec


@pytest.mark.slow
def test_flash_decoding_split_and_combine(arch):
    g = torch.Generator().manual_seed(3)
    q = torch.randn(8, 64, generator=g).half()
    k, v = (torch.randn(256, 2, 64, generator=g).half() for _ in range(2))
    m = (torch.rand(256, 2, generator=g) > 0.3).to(torch.uint8)
    out = _compile(gqa_decode(), arch, out_idx=[4])(q, k, v, m)
    kk, vv = (x.float().repeat_interleave(4, dim=1).permute(1, 0, 2) for x in (k, v))
    mm = m.repeat_interleave(4, dim=1).permute(1, 0).bool()
    ref = _attn_ref(q.float()[:, None, :], kk, vv, mask=mm[:, None, :])[:, 0, :]
    torch.testing.assert_close(out.float(), ref, atol=1e-2, rtol=1e-2)


# ------------------------------------------------------------------ block-sparse attention, mask in a tile


def block_sparse(seq=128, dim=64, bM=64, bN=64):
    """The example's form: the block mask row is copied into a tile, and `if mask[k] != 0` decides
    which key blocks a query block visits (the Cube reads that element from GM)."""
    scale = (1.0 / dim) ** 0.5 * LOG2E
    nb = seq // bN

    @T.prim_func
    def bsa(Q: T.Tensor((seq, dim), "float16"), K: T.Tensor((seq, dim), "float16"),
            V: T.Tensor((seq, dim), "float16"), Mask: T.Tensor((seq // bM, nb), "int32"),
            Output: T.Tensor((seq, dim), "float16")):
        with T.Kernel(seq // bM) as bx:
            q, k_s, v_s, s, p, o, mx, mx0, sc, sm, lsum = attention_tiles(bM, bN, dim)()
            mask = T.alloc_fragment((nb,), "int32")
            T.copy(Q[bx * bM:(bx + 1) * bM, :], q)
            init_softmax(o, lsum, mx)
            T.copy(Mask[bx, :], mask)
            for k in T.Pipelined(nb, num_stages=1):
                if mask[k] != 0:
                    T.copy(K[k * bN:(k + 1) * bN, :], k_s)
                    T.clear(s)
                    T.gemm(q, k_s, s, transpose_B=True)
                    online_softmax(bM, bN, dim, scale)(s, p, o, mx, mx0, sc, sm, lsum)
                    T.copy(V[k * bN:(k + 1) * bN, :], v_s)
                    T.gemm(p, v_s, o)
            normalize(bM, dim)(o, lsum)
            T.copy(o, Output[bx * bM:(bx + 1) * bM, :])

    return bsa


@pytest.mark.slow
def test_block_sparse_attention_mask_tile(arch):
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(128, 64, generator=g).half() for _ in range(3))
    mask = torch.tensor([[1, 0], [0, 1]], dtype=torch.int32)
    kern = _compile(block_sparse(), arch, out_idx=[4])
    out = kern(q, k, v, mask)
    full = mask.repeat_interleave(64, 0).repeat_interleave(64, 1).bool()
    torch.testing.assert_close(out.float(), _attn_ref(q, k, v, mask=full), atol=1e-2, rtol=1e-2)
    assert "Mask_gm.GetValue(" in kern.kernel_source  # the Cube's `if` reads the mask from GM


# ------------------------------------------------------------------ attention with sinks


def sink_attn(heads=2, seq=64, dim=64, bM=64, bN=64):
    """A per-head sink logit joins every row's softmax denominator (the example's form: the sink
    value read from GM as a scalar inside T.Parallel)."""
    scale = (1.0 / dim) ** 0.5 * LOG2E

    @T.prim_func
    def sink(Q: T.Tensor((heads, seq, dim), "float16"), K: T.Tensor((heads, seq, dim), "float16"),
             V: T.Tensor((heads, seq, dim), "float16"), Sinks: T.Tensor((heads,), "float16"),
             Output: T.Tensor((heads, seq, dim), "float16")):
        with T.Kernel(seq // bM, heads) as (bx, by):
            q, k_s, v_s, s, p, o, mx, mx0, sc, sm, lsum = attention_tiles(bM, bN, dim)()
            sinks = T.alloc_fragment((bM,), "float32")
            T.copy(Q[by, bx * bM:(bx + 1) * bM, :], q)
            init_softmax(o, lsum, mx)
            for i in T.Parallel(bM):
                sinks[i] = Sinks[by]
            for k in T.Pipelined(seq // bN, num_stages=2):
                T.copy(K[by, k * bN:(k + 1) * bN, :], k_s)
                T.clear(s)
                T.gemm(q, k_s, s, transpose_B=True)
                online_softmax(bM, bN, dim, scale)(s, p, o, mx, mx0, sc, sm, lsum)
                T.copy(V[by, k * bN:(k + 1) * bN, :], v_s)
                T.gemm(p, v_s, o)
            for i in T.Parallel(bM):
                lsum[i] += T.exp2(sinks[i] * LOG2E - mx[i] * scale)
            normalize(bM, dim)(o, lsum)
            T.copy(o, Output[by, bx * bM:(bx + 1) * bM, :])

    return sink


@pytest.mark.slow
def test_attention_with_sinks(arch):
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 64, 64, generator=g).half() for _ in range(3))
    sinks = torch.randn(2, generator=g).half()
    out = _compile(sink_attn(), arch, out_idx=[4])(q, k, v, sinks)
    s = q.float() @ k.float().transpose(-1, -2) / 8.0
    z = torch.cat([s, sinks.float()[:, None, None].expand(2, 64, 1)], -1)
    ref = torch.softmax(z, -1)[..., :-1] @ v.float()
    torch.testing.assert_close(out.float(), ref, atol=1e-2, rtol=1e-2)


# ------------------------------------------------------------------ sparse MLA: Q as two column ranges


def sparse_mla(H=16, S=4, SKV=64, D=64, DT=32, topk=32, bI=32):
    """Each query token attends to topk selected keys (rows gathered into L1 by index); Q and K
    have a main part of D and a rope tail of DT columns, multiplied as two gemms over column
    ranges of one Q tile (the example's Q_shared[:, :D] / Q_shared[:, D:])."""
    scale = (1.0 / (D + DT)) ** 0.5 * LOG2E

    @T.prim_func
    def mla(Q: T.Tensor((S, H, D + DT), "float16"), KV: T.Tensor((SKV, D + DT), "float16"),
            Idx: T.Tensor((S, topk), "int32"), Output: T.Tensor((S, H, D), "float16")):
        with T.Kernel(S) as sx:
            q = T.alloc_shared((H, D + DT), "float16")
            kv = T.alloc_shared((bI, D), "float16")
            kt = T.alloc_shared((bI, DT), "float16")
            s = T.alloc_fragment((H, bI), "float32")
            p = T.alloc_shared((H, bI), "float16")
            o = T.alloc_fragment((H, D), "float32")
            mx = T.alloc_fragment((H,), "float32")
            mx0 = T.alloc_fragment((H,), "float32")
            al = T.alloc_fragment((H,), "float32")
            sm = T.alloc_fragment((H,), "float32")
            lsum = T.alloc_fragment((H,), "float32")
            T.fill(o, 0)
            T.fill(lsum, 0)
            T.fill(mx, -(2**30))
            T.copy(Q[sx, :, :D], q[:, :D])
            T.copy(Q[sx, :, D:], q[:, D:])
            for t in T.serial(topk // bI):
                for r in T.serial(bI):
                    T.copy(KV[Idx[sx, t * bI + r], :D], kv[r, :])
                    T.copy(KV[Idx[sx, t * bI + r], D:], kt[r, :])
                T.clear(s)
                T.gemm(q[:, :D], kv, s, transpose_B=True)
                T.gemm(q[:, D:], kt, s, transpose_B=True)
                T.copy(mx, mx0)
                T.reduce_max(s, mx, dim=1, clear=False)
                for h in T.Parallel(H):
                    al[h] = T.exp2((mx0[h] - mx[h]) * scale)
                for h, j in T.Parallel(H, bI):
                    s[h, j] = T.exp2(s[h, j] * scale - mx[h] * scale)
                T.reduce_sum(s, sm, dim=1)
                for h in T.Parallel(H):
                    lsum[h] = lsum[h] * al[h] + sm[h]
                for h, d in T.Parallel(H, D):
                    o[h, d] *= al[h]
                T.copy(s, p)
                T.gemm(p, kv, o)
            for h, d in T.Parallel(H, D):
                o[h, d] /= lsum[h]
            T.copy(o, Output[sx, :, :])

    return mla


@pytest.mark.slow
def test_sparse_mla_column_ranges_of_q(arch):
    g = torch.Generator().manual_seed(6)
    q = torch.randn(4, 16, 96, generator=g).half()
    kv = torch.randn(64, 96, generator=g).half()
    idx = torch.stack([torch.randperm(64, generator=g)[:32] for _ in range(4)]).int()
    out = _compile(sparse_mla(), arch, out_idx=[3])(q, kv, idx)
    ref = torch.stack([_attn_ref(q[s], kv[idx[s].long()], kv[idx[s].long(), :64]) for s in range(4)])
    torch.testing.assert_close(out.float(), ref, atol=1e-2, rtol=1e-2)


# ------------------------------------------------------------------ fast, vector-only forms of the above


def varlen_scale(batch=2, total=100, dim=64, bM=32):
    """The varlen store alone: each block scales its rows of one packed sequence and stores only
    the rows inside that sequence (`if bx * bM + i < n`)."""

    @T.prim_func
    def scale(X: T.Tensor((total, dim), "float16"), cu: T.Tensor((batch + 1,), "int32"), max_len: T.int32,
              Y: T.Tensor((total, dim), "float16")):
        with T.Kernel(T.ceildiv(max_len, bM), batch) as (bx, bz):
            t = T.alloc_fragment((bM, dim), "float16")
            start = cu[bz]
            n = cu[bz + 1] - start
            T.copy(X[start + bx * bM:start + bx * bM + bM, :], t)
            for i, j in T.Parallel(bM, dim):
                if bx * bM + i < n:
                    Y[start + bx * bM + i, j] = t[i, j] * 2.0

    return scale


def test_varlen_rows_stored_under_if_bounds(arch):
    x = torch.randn(100, 64).half()
    cu = torch.tensor([0, 45, 100], dtype=torch.int32)
    kern = _compile(varlen_scale(), arch, out_idx=[3])
    y = kern(x, cu, 64)
    torch.testing.assert_close(y, (x.float() * 2).half(), atol=0, rtol=0)
    assert all(r.ok for r in kern.reports)  # no block read or rewrote another sequence's rows


def lse_combine(S=4, M=64, D=64):
    """Flash decoding's combine in the example's form: the log-sum-exp of every split in the rows of
    one tile, each row copied out (`T.copy(lse[k, :], v)`) or read in T.Parallel (`lse[k, i]`)."""

    @T.prim_func
    def comb(L: T.Tensor((S, M), "float32"), P: T.Tensor((S, M, D), "float32"), Output: T.Tensor((M, D), "float32")):
        with T.Kernel(1) as _:
            lse = T.alloc_fragment((S, M), "float32")
            v = T.alloc_fragment((M,), "float32")
            lmax = T.alloc_fragment((M,), "float32")
            lsum = T.alloc_fragment((M,), "float32")
            p = T.alloc_fragment((M, D), "float32")
            o = T.alloc_fragment((M, D), "float32")
            T.copy(L[0, 0], lse)
            T.reduce_max(lse, lmax, dim=0, clear=True)
            T.clear(lsum)
            for k in T.serial(S):
                T.copy(lse[k, :], v)
                for i in T.Parallel(M):
                    lsum[i] += T.exp2(v[i] - lmax[i])
            for i in T.Parallel(M):
                lsum[i] = T.log2(lsum[i]) + lmax[i]
            T.clear(o)
            for k in T.serial(S):
                T.copy(P[k, 0, 0], p)
                for i, j in T.Parallel(M, D):
                    o[i, j] += p[i, j] * T.exp2(lse[k, i] - lsum[i])
            T.copy(o, Output[0, 0])

    return comb


def test_combine_reads_rows_of_the_lse_tile(arch):
    g = torch.Generator().manual_seed(7)
    lse, part = torch.randn(4, 64, generator=g), torch.randn(4, 64, 64, generator=g)
    out = _compile(lse_combine(), arch, out_idx=[2])(lse, part)
    w = torch.softmax(lse * torch.log(torch.tensor(2.0)), dim=0)  # exp2(l - logsumexp2(l))
    torch.testing.assert_close(out, (part * w[:, :, None]).sum(0), atol=1e-4, rtol=1e-4)
