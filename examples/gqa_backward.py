"""GQA backward (FlashAttention-2 style) as one TileLang PrimFunc with three launches.

``heads`` query heads share ``heads // groups`` K/V heads; layout [batch, seq, heads, dim] (BSHD),
BF16 in, non-causal, as in DeepSeek's published comparison. The forward pass's log-sum-exp ``lse``
(base 2, as the forward kernel keeps it) is an input.

1. preprocess: ``Delta[b, h, s] = sum_d O * dO``.
2. main: one block per (K/V block, K/V head, batch). For each query head of the group and each
   query block it recomputes ``P^T = exp2(K Q^T * scale - lse)``, then ``dV += P^T dO``,
   ``dP^T = V dO^T``, ``dS^T = P^T * (dP^T - Delta) * sm_scale``, ``dK += dS^T Q`` and
   ``dQ += dS K``. dK and dV stay in the Cube's accumulator over the whole group (no atomics);
   dQ, shared by every K/V block, is added into the FP32 ``dQ_acc`` with a tile-wise atomic add.
3. postprocess: ``dQ = bf16(dQ_acc)``.

``dQ_acc`` must be zero on entry (the caller allocates it with torch.zeros).

``defer_dq`` issues step k's atomic dQ add in step k + 1, after that step's S and dP tiles have
left L0C for the Vector cores: the add is a long Fixpipe to GM, and issued at the end of its own
step it holds the FIX pipe while the next step's S and dP wait behind it (the chain Cube ->
Vector -> Cube of every step then waits too). The last step's add follows the loop.

``head_split`` > 1 also splits each K/V head's group of query heads over
``head_split`` blocks, so that short sequences still fill the chip's cores (one K/V head at seq
4096 gives only 32 blocks of 128 rows for 28 AI-core groups, a second wave 14 % full). Each block
then holds a partial dK and dV and adds it atomically into FP32 ``dK_acc`` / ``dV_acc`` (zero on
entry), and a fourth launch casts them to BF16.
"""

import tilelang.language as T


def gqa_backward(batch=1, heads=2, groups=2, seq=128, dim=64, block_M=64, block_N=64, num_stages=2,
                 dtype="bfloat16", head_split=1, defer_dq=False):
    """``head_split`` 1: dK and dV stay in the Cube's accumulator over the whole group of query heads;
    > 1: each group is split over ``head_split`` blocks, which add partial dK and dV atomically into
    FP32 ``dK_acc`` / ``dV_acc`` (zero on entry, two more arguments), cast by a fourth launch."""
    assert groups % head_split == 0, f"groups ({groups}) must be a multiple of head_split ({head_split})"
    head_kv = heads // groups
    per_block = groups // head_split
    sm_scale = (1.0 / dim) ** 0.5
    scale = sm_scale * 1.44269504  # log2(e)
    accum = "float32"
    blk = 64  # rows per block of the pre/postprocess launches
    q_shape = [batch, seq, heads, dim]
    kv_shape = [batch, seq, head_kv, dim]
    n_q = (seq + block_N - 1) // block_N  # query blocks per head

    @T.macro
    def delta_rowsum(O, dO, Delta):  # noqa: E741 (the paper's names)
        """1. Delta = rowsum(O * dO)"""
        with T.Kernel(T.ceildiv(seq, blk), heads, batch) as (bx, by, bz):
            o = T.alloc_fragment([blk, dim], dtype)
            d_o = T.alloc_fragment([blk, dim], dtype)
            prod = T.alloc_fragment([blk, dim], accum)
            delta = T.alloc_fragment([blk], accum)
            T.copy(O[bz, bx * blk:(bx + 1) * blk, by, :], o)
            T.copy(dO[bz, bx * blk:(bx + 1) * blk, by, :], d_o)
            for i, j in T.Parallel(blk, dim):
                prod[i, j] = T.cast(o[i, j], accum) * T.cast(d_o[i, j], accum)
            T.reduce_sum(prod, delta, dim=1)
            T.copy(delta, Delta[bz, by, bx * blk:(bx + 1) * blk])

    @T.macro
    def head_steps(Q, dO, lse, Delta, dQ_acc, K_shared, V_shared, q, dos, lse_shared, delta, qkT, dsT, qkT_cast,
                   dsT_cast, dv, dk, dq, h, bz):
        """Every query block of head h: dV += P^T dO, dK += dS^T Q, dQ_acc += dS K (atomically)."""
        for k in T.Pipelined(n_q, num_stages=num_stages):
            T.copy(Q[bz, k * block_N:(k + 1) * block_N, h, :], q)
            T.clear(qkT)
            T.gemm(K_shared, q, qkT, transpose_B=True)
            T.copy(lse[bz, h, k * block_N:(k + 1) * block_N], lse_shared)
            for i, j in T.Parallel(block_M, block_N):
                qkT[i, j] = T.exp2(qkT[i, j] * scale - lse_shared[j])
            T.copy(dO[bz, k * block_N:(k + 1) * block_N, h, :], dos)
            T.clear(dsT)
            T.gemm(V_shared, dos, dsT, transpose_B=True)
            T.copy(qkT, qkT_cast)
            T.gemm(qkT_cast, dos, dv)
            T.copy(Delta[bz, h, k * block_N:(k + 1) * block_N], delta)
            for i, j in T.Parallel(block_M, block_N):
                dsT_cast[i, j] = qkT[i, j] * (dsT[i, j] - delta[j]) * sm_scale
            if defer_dq:
                if k > 0:  # the previous step's dQ, now that this step's S and dP have crossed
                    T.atomic_add(dQ_acc[bz, (k - 1) * block_N:k * block_N, h, :], dq)
            T.gemm(dsT_cast, q, dk)
            T.clear(dq)
            T.gemm(dsT_cast, K_shared, dq, transpose_A=True)
            if not defer_dq:
                T.atomic_add(dQ_acc[bz, k * block_N:(k + 1) * block_N, h, :], dq)
        if defer_dq:
            T.atomic_add(dQ_acc[bz, (n_q - 1) * block_N:n_q * block_N, h, :], dq)

    @T.macro
    def key_block(Q, K, V, dO, lse, Delta, dQ_acc, dK, dV, bx, by, bz, kv_head, first_head, heads_here):
        """2. dK, dV of one K/V block over ``heads_here`` query heads from ``first_head``: written
        (head_split 1) or added into FP32 accumulators (head_split > 1)."""
        K_shared = T.alloc_shared([block_M, dim], dtype)
        V_shared = T.alloc_shared([block_M, dim], dtype)
        q = T.alloc_shared([block_N, dim], dtype)
        dos = T.alloc_shared([block_N, dim], dtype)
        lse_shared = T.alloc_shared([block_N], accum)
        delta = T.alloc_shared([block_N], accum)
        qkT = T.alloc_fragment([block_M, block_N], accum)
        dsT = T.alloc_fragment([block_M, block_N], accum)
        qkT_cast = T.alloc_fragment([block_M, block_N], dtype)
        dsT_cast = T.alloc_fragment([block_M, block_N], dtype)
        dv = T.alloc_fragment([block_M, dim], accum)
        dk = T.alloc_fragment([block_M, dim], accum)
        dq = T.alloc_fragment([block_N, dim], accum)

        T.copy(K[bz, bx * block_M:(bx + 1) * block_M, kv_head, :], K_shared)
        T.copy(V[bz, bx * block_M:(bx + 1) * block_M, kv_head, :], V_shared)
        T.clear(dv)
        T.clear(dk)
        for g in T.serial(heads_here):
            head_steps(Q, dO, lse, Delta, dQ_acc, K_shared, V_shared, q, dos, lse_shared, delta, qkT, dsT,
                       qkT_cast, dsT_cast, dv, dk, dq, first_head + g, bz)
        if head_split == 1:
            dk_out = T.alloc_fragment([block_M, dim], dtype)
            dv_out = T.alloc_fragment([block_M, dim], dtype)
            T.copy(dv, dv_out)
            T.copy(dk, dk_out)
            T.copy(dv_out, dV[bz, bx * block_M:(bx + 1) * block_M, kv_head, :])
            T.copy(dk_out, dK[bz, bx * block_M:(bx + 1) * block_M, kv_head, :])
        else:
            T.atomic_add(dV[bz, bx * block_M:(bx + 1) * block_M, kv_head, :], dv)
            T.atomic_add(dK[bz, bx * block_M:(bx + 1) * block_M, kv_head, :], dk)

    @T.macro
    def cast_rows(src, dst, bx, by, bz):
        """One block's rows of FP32 ``src`` -> ``dst`` in dtype (after launch 2 has added every part)."""
        acc = T.alloc_fragment([blk, dim], accum)
        out = T.alloc_fragment([blk, dim], dtype)
        T.copy(src[bz, bx * blk:(bx + 1) * blk, by, :], acc)
        T.copy(acc, out)
        T.copy(out, dst[bz, bx * blk:(bx + 1) * blk, by, :])

    if head_split == 1:
        @T.prim_func
        def gqa_bwd(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                    O: T.Tensor(q_shape, dtype), dO: T.Tensor(q_shape, dtype),  # noqa: E741 (the paper's names)
                    lse: T.Tensor([batch, heads, seq], accum), Delta: T.Tensor([batch, heads, seq], accum),
                    dQ_acc: T.Tensor(q_shape, accum), dQ: T.Tensor(q_shape, dtype),
                    dK: T.Tensor(kv_shape, dtype), dV: T.Tensor(kv_shape, dtype)):
            delta_rowsum(O, dO, Delta)
            with T.Kernel(T.ceildiv(seq, block_M), head_kv, batch) as (bx, by, bz):
                key_block(Q, K, V, dO, lse, Delta, dQ_acc, dK, dV, bx, by, bz, by, by * groups, groups)
            with T.Kernel(T.ceildiv(seq, blk), heads, batch) as (bx, by, bz):
                cast_rows(dQ_acc, dQ, bx, by, bz)

        return gqa_bwd

    @T.prim_func
    def gqa_bwd_split(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                      O: T.Tensor(q_shape, dtype), dO: T.Tensor(q_shape, dtype),  # noqa: E741 (the paper's names)
                      lse: T.Tensor([batch, heads, seq], accum), Delta: T.Tensor([batch, heads, seq], accum),
                      dQ_acc: T.Tensor(q_shape, accum), dQ: T.Tensor(q_shape, dtype),
                      dK: T.Tensor(kv_shape, dtype), dV: T.Tensor(kv_shape, dtype),
                      dK_acc: T.Tensor(kv_shape, accum), dV_acc: T.Tensor(kv_shape, accum)):
        delta_rowsum(O, dO, Delta)
        with T.Kernel(T.ceildiv(seq, block_M), head_kv * head_split, batch) as (bx, by, bz):
            key_block(Q, K, V, dO, lse, Delta, dQ_acc, dK_acc, dV_acc, bx, by, bz, by // head_split,
                      (by // head_split) * groups + (by % head_split) * per_block, per_block)
        with T.Kernel(T.ceildiv(seq, blk), heads, batch) as (bx, by, bz):
            cast_rows(dQ_acc, dQ, bx, by, bz)
        with T.Kernel(T.ceildiv(seq, blk), head_kv, batch) as (bx, by, bz):
            cast_rows(dK_acc, dK, bx, by, bz)
            cast_rows(dV_acc, dV, bx, by, bz)

    return gqa_bwd_split


def reference(Q, K, V, dO, groups):
    """dQ, dK, dV of softmax(Q K^T / sqrt(d)) V in float32 autograd; also O and lse (base 2)."""
    import math

    import torch

    q, k, v = (t.float().transpose(1, 2).requires_grad_() for t in (Q, K, V))  # BHSD
    kk, vv = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    s = q @ kk.transpose(-1, -2) / math.sqrt(q.size(-1))
    o = torch.softmax(s, -1) @ vv
    o.backward(dO.float().transpose(1, 2))
    lse = torch.logsumexp(s, -1).detach() / math.log(2)
    def bshd(t):
        return t.transpose(1, 2).contiguous()

    return bshd(o.detach()), lse, bshd(q.grad), bshd(k.grad), bshd(v.grad)


def case(batch=1, heads=2, groups=2, seq=128, dim=64, block_M=64, block_N=64, num_stages=2, seed=0,
         dtype="bfloat16", head_split=1, defer_dq=False):
    import torch

    from ascend_backend.testing import Case

    tdt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    head_kv = heads // groups
    q = torch.randn(batch, seq, heads, dim, generator=g).to(tdt)
    k = torch.randn(batch, seq, head_kv, dim, generator=g).to(tdt)
    v = torch.randn(batch, seq, head_kv, dim, generator=g).to(tdt)
    do = torch.randn(batch, seq, heads, dim, generator=g).to(tdt)
    o, lse, dq, dk, dv = reference(q, k, v, do, groups)
    o = o.to(tdt)
    delta = torch.zeros(batch, heads, seq)
    dq_acc = torch.zeros(batch, seq, heads, dim)
    outs = [torch.zeros(batch, seq, heads, dim).to(tdt), torch.zeros(batch, seq, head_kv, dim).to(tdt),
            torch.zeros(batch, seq, head_kv, dim).to(tdt)]
    if head_split > 1:  # FP32 dK / dV accumulators, zero on entry
        outs += [torch.zeros(batch, seq, head_kv, dim), torch.zeros(batch, seq, head_kv, dim)]
    f = gqa_backward(batch, heads, groups, seq, dim, block_M, block_N, num_stages, dtype, head_split, defer_dq)
    return Case(func=f, inputs=[q, k, v, o, do, lse, delta, dq_acc, *outs], outputs=[8, 9, 10],
                reference=lambda *a: [dq.to(tdt), dk.to(tdt), dv.to(tdt)], atol=3e-2, rtol=3e-2)


def example():
    return case()
