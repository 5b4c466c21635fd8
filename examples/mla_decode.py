"""MLA decode (DeepSeek's multi-head latent attention, one query token per sequence) over a paged
KV cache, split along the sequence, as one TileLang PrimFunc with two launches.

Each query head attends to one shared latent K/V head: K = [KV | K_pe] (latent dim ``dv`` = 512
plus rope dim ``dpe`` = 64), V = KV. The cache is a pool of pages of ``page_size`` tokens;
``block_table[b, p]`` names the page holding tokens [p * page_size, (p + 1) * page_size) of
sequence b, whose length is ``cache_seqlens[b]`` (read at run time: one compiled kernel serves
every length up to ``max_seqlen``).

1. split: block (b, head block, split s) runs online softmax over its share of the sequence's
   K/V blocks, page by page, and writes its partial output and log-sum-exp (base 2).
2. combine: per (head block, b), the partial outputs weighted by exp2(lse_s - lse). With one split
   there is nothing to combine: the split launch writes the output itself.
"""

import tilelang.language as T


def mla_decode_paged(batch=2, heads=16, max_seqlen=512, dv=512, dpe=64, block_N=64, block_H=16, num_split=2,
                     page_size=64, num_stages=2, dtype="bfloat16", heads_inner=False):
    """``heads_inner``: the head blocks of one sequence take consecutive block indices (the grid's
    first axis), so they run at the same time and the second one finds the pages the first read in
    L2; by default the batch is the first axis, as in TileLang's example, and the head blocks of a
    sequence are ``batch`` blocks apart. With ``num_split == 1`` the split launch writes ``Output``
    itself (no combine launch; ``lse_partial`` is still written, ``O_partial`` is not)."""
    assert heads % block_H == 0 and max_seqlen % page_size == 0
    # a block within one page, or whole pages (the table must have every page of the last block)
    assert page_size % block_N == 0 or (block_N % page_size == 0 and max_seqlen % block_N == 0)
    scale = (dv + dpe) ** -0.5 * 1.44269504  # log2(e)
    accum = "float32"
    pages = max_seqlen // page_size
    n_hb = heads // block_H
    comb_H = min(block_H, 16)  # heads per block of the combine launch (its tiles live in one AIV's UB)

    @T.macro
    def split(Q, Q_pe, KV, K_pe, block_table, cache_seqlens, lse_partial, O_partial, Output, bx, by, bz):
        Q_shared = T.alloc_shared([block_H, dv], dtype)
        Q_pe_shared = T.alloc_shared([block_H, dpe], dtype)
        KV_shared = T.alloc_shared([block_N, dv], dtype)
        K_pe_shared = T.alloc_shared([block_N, dpe], dtype)
        acc_s = T.alloc_fragment([block_H, block_N], accum)
        acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
        acc_o = T.alloc_fragment([block_H, dv], accum)
        acc_o_cast = T.alloc_fragment([block_H, dv], dtype)
        scores_max = T.alloc_fragment([block_H], accum)
        scores_max_prev = T.alloc_fragment([block_H], accum)
        scores_scale = T.alloc_fragment([block_H], accum)
        scores_sum = T.alloc_fragment([block_H], accum)
        logsum = T.alloc_fragment([block_H], accum)

        # Scalars read from GM once into locals (a Python name would re-read GM at every use).
        seqlen = T.alloc_var("int32")
        row = T.alloc_var("int32")
        seqlen = cache_seqlens[bx]
        total_blocks = T.ceildiv(seqlen, block_N)
        per_split = total_blocks // num_split
        rest = total_blocks % num_split
        n_blocks = per_split + T.if_then_else(bz < rest, 1, 0)
        first = per_split * bz + T.min(bz, rest)

        T.copy(Q[bx, by * block_H:(by + 1) * block_H, :], Q_shared)
        T.copy(Q_pe[bx, by * block_H:(by + 1) * block_H, :], Q_pe_shared)
        T.fill(acc_o, 0)
        T.fill(logsum, 0)
        T.fill(scores_max, -T.infinity(accum))
        for k in T.Pipelined(n_blocks, num_stages=num_stages):
            pos = (first + k) * block_N
            if block_N <= page_size:
                row = block_table[bx, pos // page_size] * page_size + pos % page_size
                T.copy(KV[row:row + block_N, :], KV_shared)
                T.copy(K_pe[row:row + block_N, :], K_pe_shared)
            else:  # a block of several pages: one page table lookup and copy per page
                for p in T.serial(block_N // page_size):
                    row = block_table[bx, pos // page_size + p] * page_size
                    T.copy(KV[row:row + page_size, :], KV_shared[p * page_size:(p + 1) * page_size, :])
                    T.copy(K_pe[row:row + page_size, :], K_pe_shared[p * page_size:(p + 1) * page_size, :])
            T.clear(acc_s)
            T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True)
            T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True)
            for i, j in T.Parallel(block_H, block_N):
                acc_s[i, j] = T.if_then_else(pos + j >= seqlen, -T.infinity(accum), acc_s[i, j])
            T.copy(scores_max, scores_max_prev)
            T.reduce_max(acc_s, scores_max, dim=1, clear=False)
            for i in T.Parallel(block_H):
                scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
            for i, j in T.Parallel(block_H, block_N):
                acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
            T.reduce_sum(acc_s, scores_sum, dim=1)
            for i in T.Parallel(block_H):
                logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
            T.copy(acc_s, acc_s_cast)
            for i, j in T.Parallel(block_H, dv):
                acc_o[i, j] *= scores_scale[i]
            T.gemm(acc_s_cast, KV_shared, acc_o)
        # A split with no block (a short sequence) leaves zeros and lse = -inf: no weight below.
        for i, j in T.Parallel(block_H, dv):
            acc_o[i, j] /= T.max(logsum[i], 1e-30)
        for i in T.Parallel(block_H):
            logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
        T.copy(logsum, lse_partial[bx, bz, by * block_H:(by + 1) * block_H])
        if num_split == 1:
            T.copy(acc_o, acc_o_cast)
            T.copy(acc_o_cast, Output[bx, by * block_H:(by + 1) * block_H, :])
        else:
            T.copy(acc_o, O_partial[bx, bz, by * block_H:(by + 1) * block_H, :])

    @T.prim_func
    def mla_decode(Q: T.Tensor([batch, heads, dv], dtype), Q_pe: T.Tensor([batch, heads, dpe], dtype),
                   KV: T.Tensor([batch * pages * page_size, dv], dtype),
                   K_pe: T.Tensor([batch * pages * page_size, dpe], dtype),
                   block_table: T.Tensor([batch, pages], "int32"), cache_seqlens: T.Tensor([batch], "int32"),
                   lse_partial: T.Tensor([batch, num_split, heads], accum),
                   O_partial: T.Tensor([batch, num_split, heads, dv], accum),
                   Output: T.Tensor([batch, heads, dv], dtype)):
        # 1. split along the sequence
        if heads_inner:
            with T.Kernel(n_hb, batch, num_split) as (by, bx, bz):
                split(Q, Q_pe, KV, K_pe, block_table, cache_seqlens, lse_partial, O_partial, Output, bx, by, bz)
        else:
            with T.Kernel(batch, n_hb, num_split) as (bx, by, bz):
                split(Q, Q_pe, KV, K_pe, block_table, cache_seqlens, lse_partial, O_partial, Output, bx, by, bz)

        # 2. combine the splits (one split: the split launch wrote Output)
        if num_split > 1:
            with T.Kernel(heads // comb_H, batch) as (by, bx):
                lse_s = T.alloc_fragment([comb_H], accum)
                lse_max = T.alloc_fragment([comb_H], accum)
                lse_sum = T.alloc_fragment([comb_H], accum)
                weight = T.alloc_fragment([comb_H], accum)
                o_s = T.alloc_fragment([comb_H, dv], accum)
                o = T.alloc_fragment([comb_H, dv], accum)
                o_cast = T.alloc_fragment([comb_H, dv], dtype)
                T.fill(lse_max, -T.infinity(accum))
                T.fill(lse_sum, 0)
                T.fill(o, 0)
                for s in T.serial(num_split):
                    T.copy(lse_partial[bx, s, by * comb_H:(by + 1) * comb_H], lse_s)
                    for i in T.Parallel(comb_H):
                        lse_max[i] = T.max(lse_max[i], lse_s[i])
                for s in T.serial(num_split):
                    T.copy(lse_partial[bx, s, by * comb_H:(by + 1) * comb_H], lse_s)
                    for i in T.Parallel(comb_H):
                        lse_sum[i] += T.exp2(lse_s[i] - lse_max[i])
                for i in T.Parallel(comb_H):
                    lse_sum[i] = T.log2(lse_sum[i]) + lse_max[i]
                for s in T.serial(num_split):
                    T.copy(lse_partial[bx, s, by * comb_H:(by + 1) * comb_H], lse_s)
                    T.copy(O_partial[bx, s, by * comb_H:(by + 1) * comb_H, :], o_s)
                    for i in T.Parallel(comb_H):
                        weight[i] = T.exp2(lse_s[i] - lse_sum[i])
                    for i, j in T.Parallel(comb_H, dv):
                        o[i, j] += o_s[i, j] * weight[i]
                T.copy(o, o_cast)
                T.copy(o_cast, Output[bx, by * comb_H:(by + 1) * comb_H, :])

    return mla_decode


def reference(q, q_pe, kv, k_pe, block_table, cache_seqlens, page_size):
    """Attention of each sequence's query heads over its first cache_seqlens[b] cached tokens."""
    import torch

    out = torch.empty(q.shape, dtype=torch.float32)
    scale = (q.shape[-1] + q_pe.shape[-1]) ** -0.5
    for b in range(q.shape[0]):
        n = int(cache_seqlens[b])
        rows = torch.cat([torch.arange(int(p) * page_size, (int(p) + 1) * page_size) for p in block_table[b]])[:n]
        k = torch.cat([kv[rows], k_pe[rows]], -1).float()
        s = torch.cat([q[b], q_pe[b]], -1).float() @ k.T * scale
        out[b] = torch.softmax(s, -1) @ kv[rows].float()
    return out


def case(batch=2, heads=16, max_seqlen=512, dv=512, dpe=64, block_N=64, block_H=16, num_split=2, page_size=64,
         seqlens=(300, 451), seed=0, dtype="bfloat16", heads_inner=False, num_stages=2):
    import torch

    from ascend_backend.testing import Case

    tdt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    pages = max_seqlen // page_size
    q = torch.randn(batch, heads, dv, generator=g).to(tdt)
    q_pe = torch.randn(batch, heads, dpe, generator=g).to(tdt)
    kv = torch.randn(batch * pages * page_size, dv, generator=g).to(tdt)
    k_pe = torch.randn(batch * pages * page_size, dpe, generator=g).to(tdt)
    # Pages of every sequence scattered over the pool.
    block_table = torch.randperm(batch * pages, generator=g).to(torch.int32).view(batch, pages)
    cache_seqlens = torch.tensor(list(seqlens)[:batch], dtype=torch.int32)
    lse_partial = torch.zeros(batch, num_split, heads)
    o_partial = torch.zeros(batch, num_split, heads, dv)
    out = torch.zeros(batch, heads, dv).to(tdt)
    f = mla_decode_paged(batch, heads, max_seqlen, dv, dpe, block_N, block_H, num_split, page_size, num_stages,
                         dtype=dtype, heads_inner=heads_inner)
    return Case(func=f, inputs=[q, q_pe, kv, k_pe, block_table, cache_seqlens, lse_partial, o_partial, out],
                outputs=[8],
                reference=lambda q, qp, kv, kp, bt, sl, *_: [reference(q, qp, kv, kp, bt, sl, page_size).to(tdt)],
                atol=2e-2, rtol=2e-2)


def example():
    return case()
