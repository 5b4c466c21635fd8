"""Sparse attention as TileLang's examples write it (our own kernels in their style): a block mask
read from GM decides which K/V blocks a query block visits (block-sparse attention), or block
indices read from GM say where to load them from (NSA / DSA-style selection); the Cube and Vector
work sits inside the data-dependent `if`. On the emulator against torch, both arches, strict."""

import tilelang.language as T
import torch
from attention_forms import init_softmax, normalize, online_softmax

import ascend_backend


def _tiles(rows: int, cols: int, dim: int):
    """A macro allocating a query block's tiles with the names of TileLang's sparse examples."""

    @T.macro
    def tiles():
        q = T.alloc_shared((rows, dim), "float16")
        k_s = T.alloc_shared((cols, dim), "float16")
        v_s = T.alloc_shared((cols, dim), "float16")
        acc_s = T.alloc_fragment((rows, cols), "float32")
        acc_s_cast = T.alloc_fragment((rows, cols), "float16")
        acc_o = T.alloc_fragment((rows, dim), "float32")
        m = T.alloc_fragment((rows,), "float32")
        m_prev = T.alloc_fragment((rows,), "float32")
        sc = T.alloc_fragment((rows,), "float32")
        ssum = T.alloc_fragment((rows,), "float32")
        lsum = T.alloc_fragment((rows,), "float32")
        return q, k_s, v_s, acc_s, acc_s_cast, acc_o, m, m_prev, sc, ssum, lsum

    return tiles


def block_sparse_attn(heads=1, seq=256, dim=64, bM=64, bN=64):
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    nkv = seq // bN
    @T.prim_func
    def bsa(Q: T.Tensor((heads, seq, dim), "float16"), K: T.Tensor((heads, seq, dim), "float16"),
            V: T.Tensor((heads, seq, dim), "float16"), Mask: T.Tensor((heads, seq // bM, nkv), "int32"),
            Out: T.Tensor((heads, seq, dim), "float16")):
        with T.Kernel(seq // bM, heads) as (bx, by):
            q, k_s, v_s, acc_s, acc_s_cast, acc_o, m, m_prev, sc, ssum, lsum = _tiles(bM, bN, dim)()
            T.copy(Q[by, bx * bM, 0], q)
            init_softmax(acc_o, lsum, m)
            for k in T.serial(nkv):
                if Mask[by, bx, k] != 0:
                    T.copy(K[by, k * bN, 0], k_s)
                    T.clear(acc_s)
                    T.gemm(q, k_s, acc_s, transpose_B=True)
                    online_softmax(bM, bN, dim, scale)(acc_s, acc_s_cast, acc_o, m, m_prev, sc, ssum, lsum)
                    T.copy(V[by, k * bN, 0], v_s)
                    T.gemm(acc_s_cast, v_s, acc_o)
            normalize(bM, dim)(acc_o, lsum)
            T.copy(acc_o, Out[by, bx * bM, 0])
    return bsa

def bsa_ref(q, k, v, mask, bM=64, bN=64):
    H, S, D = q.shape
    s = (q.float() @ k.float().transpose(-1, -2)) / D ** 0.5
    full = mask.repeat_interleave(bM, 1).repeat_interleave(bN, 2).bool()
    s = s.masked_fill(~full, float("-inf"))
    return (torch.softmax(s, -1) @ v.float()).half()



def selected_blocks_attn(seq=256, dim=64, bM=64, BS=64, S=2):
    """Each query block attends to the S key blocks BlockIdx[bx, :] names (-1: skip)."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504

    @T.prim_func
    def nsa(Q: T.Tensor((seq, dim), "float16"), K: T.Tensor((seq, dim), "float16"),
            V: T.Tensor((seq, dim), "float16"), BlockIdx: T.Tensor((seq // bM, S), "int32"),
            Out: T.Tensor((seq, dim), "float16")):
        with T.Kernel(seq // bM) as bx:
            q, k_s, v_s, acc_s, acc_s_cast, acc_o, m, m_prev, sc, ssum, lsum = _tiles(bM, BS, dim)()
            T.copy(Q[bx * bM, 0], q)
            init_softmax(acc_o, lsum, m)
            for i in T.serial(S):
                i_s = BlockIdx[bx, i] * BS
                if i_s >= 0:
                    T.copy(K[i_s, 0], k_s)
                    T.clear(acc_s)
                    T.gemm(q, k_s, acc_s, transpose_B=True)
                    online_softmax(bM, BS, dim, scale)(acc_s, acc_s_cast, acc_o, m, m_prev, sc, ssum, lsum)
                    T.copy(V[i_s, 0], v_s)
                    T.gemm(acc_s_cast, v_s, acc_o)
            normalize(bM, dim)(acc_o, lsum)
            T.copy(acc_o, Out[bx * bM, 0])

    return nsa


def _run(func, args, arch):
    k = ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True)
    k(*args)
    return k


def test_block_sparse_attention_mask_read_from_gm(arch):
    g = torch.Generator().manual_seed(0)
    q, k, v = [torch.randn(1, 256, 64, generator=g).half() for _ in range(3)]
    mask = (torch.rand(1, 4, 4, generator=g) > 0.4).int()
    mask[..., 0] = 1
    out = torch.zeros(1, 256, 64).half()
    kern = _run(block_sparse_attn(), [q, k, v, mask, out], arch)
    torch.testing.assert_close(out.float(), bsa_ref(q, k, v, mask).float(), atol=1e-2, rtol=1e-2)
    assert "Mask_gm.GetValue(" in kern.kernel_source


def test_selected_blocks_attention_indices_read_from_gm(arch):
    g = torch.Generator().manual_seed(1)
    q, k, v = [torch.randn(256, 64, generator=g).half() for _ in range(3)]
    idx = torch.tensor([[2, -1], [0, 3], [1, 1], [3, 0]], dtype=torch.int32)
    out = torch.zeros(256, 64).half()
    _run(selected_blocks_attn(), [q, k, v, idx, out], arch)
    ref = torch.zeros(256, 64)
    for b in range(4):
        blocks = [int(x) for x in idx[b] if x >= 0]
        kk = torch.cat([k[x * 64:(x + 1) * 64] for x in blocks]).float()
        vv = torch.cat([v[x * 64:(x + 1) * 64] for x in blocks]).float()
        s = q[b * 64:(b + 1) * 64].float() @ kk.T / 8.0
        ref[b * 64:(b + 1) * 64] = torch.softmax(s, -1) @ vv
    torch.testing.assert_close(out.float(), ref, atol=1e-2, rtol=1e-2)
