"""DeepSeek Sparse Attention (DSA): "select, then compute", as three TileLang kernels.

* ``lightning_indexer``: the index score of query token t for key s,
  ``I[t, s] = sum_h w[t, h] * relu(q[t, h] . k[s])`` over the indexer's heads (causal: keys past
  ``t + seq_kv - seq_q`` score -inf). One block per query token: the Cube computes ``K q^T`` for
  a block of keys (keys x heads), the Vector cores weigh, clip and sum each key's row.
* ``topk_select``: the ``topk`` best keys of every query token (descending; -1 where fewer keys
  are visible), by repeated row maxima on the Vector cores.
* ``sparse_mla_fwd``: MLA attention of each query token's heads over its selected keys only:
  the K/V rows named by ``Indices`` are gathered from GM into the Cube's tile, block by block.
"""

import tilelang.language as T


def lightning_indexer(seq_q=64, seq_kv=256, heads=16, dim=64, block_N=64, dtype="bfloat16"):
    accum = "float32"
    offset = seq_kv - seq_q  # query token t sees keys 0 .. t + offset

    @T.prim_func
    def indexer(Q: T.Tensor([seq_q, heads, dim], dtype), K: T.Tensor([seq_kv, dim], dtype),
                W: T.Tensor([seq_q, heads], accum), Scores: T.Tensor([seq_q, seq_kv], accum)):
        with T.Kernel(seq_q) as t:
            q_s = T.alloc_shared([heads, dim], dtype)
            k_s = T.alloc_shared([block_N, dim], dtype)
            logits = T.alloc_fragment([block_N, heads], accum)
            w = T.alloc_fragment([heads], accum)
            score = T.alloc_fragment([block_N], accum)
            T.copy(Q[t, 0, 0], q_s)
            T.copy(W[t, 0], w)
            for n in T.Pipelined(T.ceildiv(seq_kv, block_N), num_stages=2):
                T.copy(K[n * block_N, 0], k_s)
                T.gemm(k_s, q_s, logits, transpose_B=True, clear_accum=True)
                for j, h in T.Parallel(block_N, heads):
                    logits[j, h] = T.max(logits[j, h], 0) * w[h]
                T.reduce_sum(logits, score, dim=1)
                for j in T.Parallel(block_N):
                    score[j] = T.if_then_else(n * block_N + j > t + offset, -T.infinity(accum), score[j])
                T.copy(score, Scores[t, n * block_N])

    return indexer


def topk_select(seq_q=64, seq_kv=256, topk=32, block_M=8):
    accum = "float32"

    @T.prim_func
    def select(Scores: T.Tensor([seq_q, seq_kv], accum), Indices: T.Tensor([seq_q, topk], "int32")):
        with T.Kernel(T.ceildiv(seq_q, block_M)) as bx:
            s = T.alloc_fragment([block_M, seq_kv], accum)
            pos = T.alloc_fragment([block_M, seq_kv], "int32")
            best = T.alloc_fragment([block_M], accum)
            arg = T.alloc_fragment([block_M], "int32")
            T.copy(Scores[bx * block_M, 0], s)
            for k in T.serial(topk):
                T.reduce_max(s, best, dim=1)
                for i, j in T.Parallel(block_M, seq_kv):
                    pos[i, j] = T.if_then_else(s[i, j] == best[i], j, seq_kv)
                T.reduce_min(pos, arg, dim=1)
                for i, j in T.Parallel(block_M, seq_kv):
                    s[i, j] = T.if_then_else(j == arg[i], -T.infinity(accum), s[i, j])
                for i in T.Parallel(block_M):
                    Indices[bx * block_M + i, k] = T.if_then_else(best[i] == -T.infinity(accum), -1, arg[i])

    return select


def _online_softmax(heads, block_I, dv, scale):
    """The two sparse MLA forms' shared macros: one step's online softmax over the block's masked
    scores (scores cast for the PV gemm, output rescaled), and the final division and log-sum-exp.
    Sizes and the scale are closed over (a scalar macro argument would be renamed)."""

    @T.macro
    def softmax_step(acc_s, valid, m, m_prev, alpha, ssum, lsum, acc_s_cast, acc_o):
        for h, i in T.Parallel(heads, block_I):
            acc_s[h, i] = acc_s[h, i] + valid[i]
        T.copy(m, m_prev)
        T.reduce_max(acc_s, m, dim=1, clear=False)
        for h in T.Parallel(heads):
            alpha[h] = T.exp2(m_prev[h] * scale - m[h] * scale)
        for h, i in T.Parallel(heads, block_I):
            acc_s[h, i] = T.exp2(acc_s[h, i] * scale - m[h] * scale)
        T.reduce_sum(acc_s, ssum, dim=1)
        for h in T.Parallel(heads):
            lsum[h] = lsum[h] * alpha[h] + ssum[h]
        T.copy(acc_s, acc_s_cast)
        for h, d in T.Parallel(heads, dv):
            acc_o[h, d] *= alpha[h]

    @T.macro
    def finish(acc_o, lsum, m):
        for h, d in T.Parallel(heads, dv):
            acc_o[h, d] /= lsum[h]
        for h in T.Parallel(heads):
            lsum[h] = T.log2(lsum[h]) + m[h] * scale

    return softmax_step, finish


def sparse_mla_fwd(seq_q=32, seq_kv=256, heads=16, dv=512, dpe=64, topk=64, block_I=32, num_stages=2,
                   dtype="bfloat16", one_dma=True):
    """Query token t's ``heads`` heads attend to the keys ``Indices[t, :]`` (-1: none) of one latent
    K/V head (K = [KV | K_pe] over dv + dpe, V = KV[:, :dv]).

    ``one_dma``: each selected key's row is one DMA into a [block_I, dv + dpe] tile, QK^T one gemm
    over all dv + dpe columns and PV one over the window of its first dv columns. Otherwise the
    latent and RoPE parts go to two tiles (two DMAs per key, two QK^T gemms)."""
    if one_dma:
        return _sparse_mla_one_dma(seq_q, seq_kv, heads, dv, dpe, topk, block_I, num_stages, dtype)
    dqk = dv + dpe
    scale = dqk ** -0.5 * 1.44269504  # log2(e)
    accum = "float32"
    assert topk % block_I == 0
    softmax_step, finish = _online_softmax(heads, block_I, dv, scale)

    @T.prim_func
    def sparse_mla(Q: T.Tensor([seq_q, heads, dqk], dtype), KV: T.Tensor([seq_kv, dqk], dtype),
                   Indices: T.Tensor([seq_q, topk], "int32"), Output: T.Tensor([seq_q, heads, dv], dtype),
                   Lse: T.Tensor([seq_q, heads], accum)):
        with T.Kernel(seq_q) as t:
            Q_shared = T.alloc_shared([heads, dv], dtype)
            Q_pe_shared = T.alloc_shared([heads, dpe], dtype)
            KV_shared = T.alloc_shared([block_I, dv], dtype)
            K_pe_shared = T.alloc_shared([block_I, dpe], dtype)
            valid = T.alloc_fragment([block_I], accum)
            acc_s = T.alloc_fragment([heads, block_I], accum)
            acc_s_cast = T.alloc_fragment([heads, block_I], dtype)
            acc_o = T.alloc_fragment([heads, dv], accum)
            out = T.alloc_fragment([heads, dv], dtype)
            m = T.alloc_fragment([heads], accum)
            m_prev = T.alloc_fragment([heads], accum)
            alpha = T.alloc_fragment([heads], accum)
            ssum = T.alloc_fragment([heads], accum)
            lsum = T.alloc_fragment([heads], accum)
            T.copy(Q[t, 0, 0], Q_shared)
            T.copy(Q[t, 0, dv], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(lsum, 0)
            T.fill(m, -T.infinity(accum))
            # The key's row, read from GM once into a local (a Python name would re-read GM at each use).
            row = T.alloc_var("int32")
            for blk in T.Pipelined(topk // block_I, num_stages=num_stages):
                # Gather: row i of the tiles is key Indices[t, blk * block_I + i] (-1 reads row 0, masked).
                for i in T.serial(block_I):
                    row = T.max(Indices[t, blk * block_I + i], 0)
                    T.copy(KV[row, 0:dv], KV_shared[i, :])
                    T.copy(KV[row, dv:dqk], K_pe_shared[i, :])
                for i in T.Parallel(block_I):
                    valid[i] = T.if_then_else(Indices[t, blk * block_I + i] >= 0, 0, -T.infinity(accum))
                T.clear(acc_s)
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True)
                softmax_step(acc_s, valid, m, m_prev, alpha, ssum, lsum, acc_s_cast, acc_o)
                T.gemm(acc_s_cast, KV_shared, acc_o)
            finish(acc_o, lsum, m)
            T.copy(acc_o, out)
            T.copy(out, Output[t, 0, 0])
            T.copy(lsum, Lse[t, 0])

    return sparse_mla


def _sparse_mla_one_dma(seq_q, seq_kv, heads, dv, dpe, topk, block_I, num_stages, dtype):
    dqk = dv + dpe
    scale = dqk ** -0.5 * 1.44269504  # log2(e)
    accum = "float32"
    assert topk % block_I == 0
    softmax_step, finish = _online_softmax(heads, block_I, dv, scale)

    @T.prim_func
    def sparse_mla(Q: T.Tensor([seq_q, heads, dqk], dtype), KV: T.Tensor([seq_kv, dqk], dtype),
                   Indices: T.Tensor([seq_q, topk], "int32"), Output: T.Tensor([seq_q, heads, dv], dtype),
                   Lse: T.Tensor([seq_q, heads], accum)):
        with T.Kernel(seq_q) as t:
            Q_shared = T.alloc_shared([heads, dqk], dtype)
            KV_shared = T.alloc_shared([block_I, dqk], dtype)  # [KV | K_pe] of block_I keys
            valid = T.alloc_fragment([block_I], accum)
            acc_s = T.alloc_fragment([heads, block_I], accum)
            acc_s_cast = T.alloc_fragment([heads, block_I], dtype)
            acc_o = T.alloc_fragment([heads, dv], accum)
            out = T.alloc_fragment([heads, dv], dtype)
            m = T.alloc_fragment([heads], accum)
            m_prev = T.alloc_fragment([heads], accum)
            alpha = T.alloc_fragment([heads], accum)
            ssum = T.alloc_fragment([heads], accum)
            lsum = T.alloc_fragment([heads], accum)
            T.copy(Q[t, 0, 0], Q_shared)
            T.fill(acc_o, 0)
            T.fill(lsum, 0)
            T.fill(m, -T.infinity(accum))
            # The key's row, read from GM once into a local (a Python name would re-read GM at each use).
            row = T.alloc_var("int32")
            for blk in T.Pipelined(topk // block_I, num_stages=num_stages):
                # Gather: row i of the tile is key Indices[t, blk * block_I + i] (-1 reads row 0, masked).
                for i in T.serial(block_I):
                    row = T.max(Indices[t, blk * block_I + i], 0)
                    T.copy(KV[row, 0:dqk], KV_shared[i, :])
                for i in T.Parallel(block_I):
                    valid[i] = T.if_then_else(Indices[t, blk * block_I + i] >= 0, 0, -T.infinity(accum))
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, clear_accum=True)
                softmax_step(acc_s, valid, m, m_prev, alpha, ssum, lsum, acc_s_cast, acc_o)
                T.gemm(acc_s_cast, KV_shared[:, 0:dv], acc_o)  # V: the first dv columns of the keys' rows
            finish(acc_o, lsum, m)
            T.copy(acc_o, out)
            T.copy(out, Output[t, 0, 0])
            T.copy(lsum, Lse[t, 0])

    return sparse_mla


def indexer_reference(q, k, w, seq_kv):
    import torch

    seq_q = q.shape[0]
    logits = torch.einsum("thd,sd->tsh", q.float(), k.float())
    scores = (logits.relu() * w[:, None, :]).sum(-1)
    visible = torch.arange(seq_kv)[None, :] <= torch.arange(seq_q)[:, None] + (seq_kv - seq_q)
    return scores.masked_fill(~visible, float("-inf"))


def topk_reference(scores, topk):
    """The top-k key sets (sorted ascending, -1 padding first) of each row: the kernel's order
    among equal scores is its own, so rows are compared as sets."""
    import torch

    vals, idx = scores.topk(topk, dim=1)
    idx = torch.where(torch.isinf(vals), -1, idx).to(torch.int32)
    return idx.sort(dim=1).values


def sparse_mla_reference(q, kv, indices, dv):
    """Output (float32) and log-sum-exp (base 2) of each token's heads over its selected keys."""
    import math

    import torch

    seq_q, heads, dqk = q.shape
    out = torch.zeros(seq_q, heads, dv)
    lse = torch.zeros(seq_q, heads)
    for t in range(seq_q):
        sel = indices[t][indices[t] >= 0].long()
        k = kv[sel].float()
        s = q[t].float() @ k.T * dqk ** -0.5
        out[t] = torch.softmax(s, -1) @ k[:, :dv]
        lse[t] = torch.logsumexp(s, -1) / math.log(2)
    return out, lse


def sparse_mla_case(seq_q=32, seq_kv=256, heads=16, dv=512, dpe=64, topk=64, block_I=32, seed=0, dtype="bfloat16",
                    one_dma=True):
    import torch

    from ascend_backend.testing import Case

    tdt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(seq_q, heads, dv + dpe, generator=g).to(tdt)
    kv = torch.randn(seq_kv, dv + dpe, generator=g).to(tdt)
    # Causal selection as DSA makes it: token t (the last seq_q of the sequence) picks among keys
    # 0 .. t + seq_kv - seq_q, -1 where it sees fewer than topk.
    indices = torch.full((seq_q, topk), -1, dtype=torch.int32)
    for t in range(seq_q):
        visible = t + seq_kv - seq_q + 1
        pick = torch.randperm(visible, generator=g)[:topk]
        indices[t, :len(pick)] = pick.to(torch.int32)
    out = torch.zeros(seq_q, heads, dv).to(tdt)
    lse = torch.zeros(seq_q, heads)

    def reference(q, kv, idx, o, lse_):
        o_ref, lse_ref = sparse_mla_reference(q, kv, idx, dv)
        return [o_ref.to(tdt), lse_ref]

    return Case(func=sparse_mla_fwd(seq_q, seq_kv, heads, dv, dpe, topk, block_I, dtype=dtype, one_dma=one_dma),
                inputs=[q, kv, indices, out, lse], outputs=[3, 4], reference=reference, atol=2e-2, rtol=2e-2)


def indexer_case(seq_q=64, seq_kv=256, heads=16, dim=64, block_N=64, seed=0, dtype="bfloat16"):
    import torch

    from ascend_backend.testing import Case

    tdt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(seq_q, heads, dim, generator=g).to(tdt)
    k = torch.randn(seq_kv, dim, generator=g).to(tdt)
    w = torch.rand(seq_q, heads, generator=g)
    out = torch.zeros(seq_q, seq_kv)
    return Case(func=lightning_indexer(seq_q, seq_kv, heads, dim, block_N, dtype), inputs=[q, k, w, out],
                outputs=[3], reference=lambda q, k, w, o: [indexer_reference(q, k, w, seq_kv)], atol=5e-2, rtol=1e-2)


def topk_case(seq_q=64, seq_kv=256, topk=32, block_M=8, seed=0):
    import torch

    from ascend_backend.testing import Case

    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(seq_q, seq_kv, generator=g)
    visible = torch.arange(seq_kv)[None, :] <= torch.arange(seq_q)[:, None] + (seq_kv - seq_q)
    scores = scores.masked_fill(~visible, float("-inf"))
    out = torch.zeros(seq_q, topk, dtype=torch.int32)
    return Case(func=topk_select(seq_q, seq_kv, topk, block_M), inputs=[scores, out], outputs=[1],
                reference=lambda s, o: [topk_reference(s, topk)], atol=0, rtol=0,
                extra={"compare": "sorted rows"})


def example():
    return indexer_case()
