"""Attention kernels written as TileLang's own examples write them, for the ascendc target.

* ``softmax_qk``: row softmax of Q K^T for a tile of queries (a gemm on the Cube, the softmax on
  the Vector cores).
* ``flashattn``: FlashAttention forward with online softmax (exp2, reduce_max/reduce_sum, two
  gemms per K/V block, T.Pipelined), causal or not, seq_q <= seq_kv.
* ``gqa`` = ``flashattn(..., groups=g)``: grouped-query attention, g query heads per K/V head.

The compiler splits each kernel between the Cube core and the two Vector cores of a group; the
only change from a GPU target is the target itself.
"""

import tilelang.language as T


def softmax_qk(seq_q=128, seq_kv=128, dim=64, block_M=64, dtype="float16"):
    scale = (1.0 / dim) ** 0.5

    @T.prim_func
    def softmax_qk_k(Q: T.Tensor((seq_q, dim), dtype), K: T.Tensor((seq_kv, dim), dtype),
                     P: T.Tensor((seq_q, seq_kv), dtype)):
        with T.Kernel(T.ceildiv(seq_q, block_M), threads=128) as bx:
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((seq_kv, dim), dtype)
            S = T.alloc_fragment((block_M, seq_kv), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            P_local = T.alloc_fragment((block_M, seq_kv), dtype)
            T.copy(Q[bx * block_M, 0], Q_shared)
            T.copy(K[0, 0], K_shared)
            T.clear(S)
            T.gemm(Q_shared, K_shared, S, transpose_B=True)
            T.reduce_max(S, m, dim=1)
            for i, j in T.Parallel(block_M, seq_kv):
                S[i, j] = T.exp((S[i, j] - m[i]) * scale)
            T.reduce_sum(S, s, dim=1)
            for i, j in T.Parallel(block_M, seq_kv):
                P_local[i, j] = S[i, j] / s[i]
            T.copy(P_local, P[bx * block_M, 0])

    return softmax_qk_k


def flashattn(batch=1, heads=1, seq_q=128, seq_kv=128, dim=64, is_causal=False, block_M=64, block_N=64,
              num_stages=1, groups=1, causal_mask="every_block"):
    """``causal_mask``: "every_block" masks as TileLang's example does (the mask is the initial value
    of every step's scores: a vector pass per step); "diagonal" masks the gemm's scores afterwards,
    only in the K/V blocks that cross the diagonal (one select there, nothing elsewhere)."""
    assert causal_mask in ("every_block", "diagonal")
    diagonal = is_causal and causal_mask == "diagonal"
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    q_shape = [batch, heads, seq_q, dim]
    kv_shape = [batch, heads // groups, seq_kv, dim]
    dtype = "float16"
    accum_dtype = "float"
    past_len = seq_kv - seq_q
    assert past_len >= 0, "seq_kv must be greater than or equal to seq_q"

    @T.macro
    def MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz):
        T.copy(K[bz, by // groups, k * block_N:(k + 1) * block_N, :], K_shared)
        if is_causal and not diagonal:
            for i, j in T.Parallel(block_M, block_N):
                q_idx = bx * block_M + i + past_len
                k_idx = k * block_N + j
                acc_s[i, j] = T.if_then_else(q_idx >= k_idx, 0, -T.infinity(acc_s.dtype))
        else:
            T.clear(acc_s)
        T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)
        if diagonal:
            if (k + 1) * block_N > bx * block_M + past_len:  # this K/V block crosses the diagonal
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.if_then_else(bx * block_M + i + past_len >= k * block_N + j, acc_s[i, j],
                                                 -T.infinity(acc_s.dtype))

    @T.macro
    def MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz):
        T.copy(V[bz, by // groups, k * block_N:(k + 1) * block_N, :], V_shared)
        T.gemm(acc_s_cast, V_shared, acc_o)

    @T.macro
    def Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum, logsum):
        T.copy(scores_max, scores_max_prev)
        T.fill(scores_max, -T.infinity(accum_dtype))
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
        # (as TileLang's example: a row that this K/V block masks entirely keeps its running max,
        # so causal blocks with block_M > block_N do not compute exp2(-inf + inf))
        for i in T.Parallel(block_M):
            scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
        for i in T.Parallel(block_M):
            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
        for i, j in T.Parallel(block_M, block_N):
            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
        T.reduce_sum(acc_s, scores_sum, dim=1)
        for i in T.Parallel(block_M):
            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
        T.copy(acc_s, acc_s_cast)

    @T.macro
    def Rescale(acc_o, scores_scale):
        for i, j in T.Parallel(block_M, dim):
            acc_o[i, j] *= scores_scale[i]

    @T.prim_func
    def flash_fwd(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                  Output: T.Tensor(q_shape, dtype)):
        with T.Kernel(T.ceildiv(seq_q, block_M), heads, batch, threads=128) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (
                T.min(T.ceildiv(seq_kv, block_N), T.ceildiv((bx + 1) * block_M + past_len, block_N))
                if is_causal else T.ceildiv(seq_kv, block_N))

            for k in T.Pipelined(loop_range, num_stages=num_stages):
                MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz)
                Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum, logsum)
                Rescale(acc_o, scores_scale)
                MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M:(bx + 1) * block_M, :])

    return flash_fwd


def reference(Q, K, V, is_causal, groups=1):
    import torch

    q, k, v = Q.float(), K.float(), V.float()
    if groups > 1:
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / q.size(-1) ** 0.5
    if is_causal:
        sq, skv = q.size(2), k.size(2)
        mask = torch.tril(torch.ones(sq, skv), skv - sq)
        scores = scores.masked_fill(mask == 0, float("-inf"))
    return torch.einsum("bhqk,bhkd->bhqd", torch.softmax(scores, dim=-1), v).to(Q.dtype)


def case(batch=1, heads=2, seq_q=128, seq_kv=256, dim=64, is_causal=True, groups=1, block_M=64, block_N=64,
         num_stages=2, seed=0, causal_mask="every_block"):
    import torch

    from ascend_backend.testing import Case

    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, seq_q, dim, generator=g).half()
    k = torch.randn(batch, heads // groups, seq_kv, dim, generator=g).half()
    v = torch.randn(batch, heads // groups, seq_kv, dim, generator=g).half()
    o = torch.empty_like(q)
    f = flashattn(batch, heads, seq_q, seq_kv, dim, is_causal, block_M, block_N, num_stages, groups, causal_mask)
    return Case(func=f, inputs=[q, k, v, o], outputs=[3],
                reference=lambda q, k, v, o: [reference(q, k, v, is_causal, groups)], atol=2e-2, rtol=2e-2)


def example():
    return case()


def example_gqa():
    return case(heads=4, groups=2, is_causal=False)


def example_softmax_qk():
    import torch

    from ascend_backend.testing import Case

    g = torch.Generator().manual_seed(0)
    q = torch.randn(128, 64, generator=g).half()
    k = torch.randn(128, 64, generator=g).half()
    p = torch.empty(128, 128).half()
    return Case(func=softmax_qk(), inputs=[q, k, p], outputs=[2],
                reference=lambda q, k, p: [torch.softmax(q.float() @ k.float().T / 8.0, -1).half()],
                atol=1e-2, rtol=1e-2)
