"""Kernel factories shared by the compiler tests (written as tilelang's own examples write them)."""

import tilelang.language as T


def binary_2d(op, M=64, N=128, bM=32, bN=64, dtype="float16", compute="float16", out_dtype=None):
    """C = op(A, B) element-wise on 2-D tiles, computed in `compute`."""
    out_dtype = out_dtype or dtype

    @T.prim_func
    def binary(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            a_s = T.alloc_shared((bM, bN), dtype)
            b_s = T.alloc_shared((bM, bN), dtype)
            a = T.alloc_fragment((bM, bN), compute)
            b = T.alloc_fragment((bM, bN), compute)
            c = T.alloc_fragment((bM, bN), out_dtype)
            T.copy(A[by * bM, bx * bN], a_s)
            T.copy(B[by * bM, bx * bN], b_s)
            T.copy(a_s, a)
            T.copy(b_s, b)
            for i, j in T.Parallel(bM, bN):
                c[i, j] = op(a[i, j], b[i, j])
            T.copy(c, C[by * bM, bx * bN])

    return binary


def unary_1d(op, N=1024, block=256, dtype="float32", out_dtype=None):
    """Y = op(X) on a 1-D tensor."""
    out_dtype = out_dtype or dtype

    @T.prim_func
    def unary(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), out_dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            x = T.alloc_fragment((block,), dtype)
            y = T.alloc_fragment((block,), out_dtype)
            T.copy(X[bx * block], x)
            for i in T.Parallel(block):
                y[i] = op(x[i])
            T.copy(y, Y[bx * block])

    return unary


def row_reduce(kind, M=64, N=200, bM=16, dtype="float32"):
    """Per-row sum or max of a tile, written to a 1-D output."""

    @T.prim_func
    def reduce(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            x = T.alloc_fragment((bM, N), dtype)
            r = T.alloc_fragment((bM,), dtype)
            T.copy(X[bx * bM, 0], x)
            if kind == "sum":
                T.reduce_sum(x, r, dim=1)
            else:
                T.reduce_max(x, r, dim=1)
            T.copy(r, Y[bx * bM])

    return reduce


def bias_scale(M=64, N=96, bM=32, dtype="float32"):
    """Y = (X + bias[j]) * scale[i]: column and row broadcasts, with a GM store inside T.Parallel."""

    @T.prim_func
    def bias_scale_k(X: T.Tensor((M, N), dtype), Bias: T.Tensor((N,), dtype), S: T.Tensor((M,), dtype),
                     Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            x = T.alloc_fragment((bM, N), dtype)
            b = T.alloc_fragment((N,), dtype)
            s = T.alloc_fragment((bM,), dtype)
            T.copy(X[bx * bM, 0], x)
            T.copy(Bias[0], b)
            T.copy(S[bx * bM], s)
            for i, j in T.Parallel(bM, N):
                Y[bx * bM + i, j] = (x[i, j] + b[j]) * s[i]

    return bias_scale_k


def rowsum_stream(M=64, N=1000, bM=16, bN=256, num_stages=2, dtype="float16"):
    """Row sums of long rows, streamed through UB in column chunks with T.Pipelined."""

    @T.prim_func
    def rowsum(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            xs = T.alloc_shared((bM, bN), dtype)
            x = T.alloc_fragment((bM, bN), "float32")
            acc = T.alloc_fragment((bM,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(N, bN), num_stages=num_stages):
                T.copy(X[bx * bM, k * bN], xs)
                T.copy(xs, x)
                T.reduce_sum(x, acc, dim=1, clear=False)
            T.copy(acc, Y[bx * bM])

    return rowsum


def scale_stream(M=64, N=1000, bM=16, bN=256, num_stages=2, dtype="float16"):
    """Y = X * 2 + 1 streamed in column chunks with T.Pipelined."""

    @T.prim_func
    def scale(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            xs = T.alloc_shared((bM, bN), dtype)
            ys = T.alloc_shared((bM, bN), dtype)
            for k in T.Pipelined(T.ceildiv(N, bN), num_stages=num_stages):
                T.copy(X[bx * bM, k * bN], xs)
                for i, j in T.Parallel(bM, bN):
                    ys[i, j] = xs[i, j] * 2.0 + 1.0
                T.copy(ys, Y[bx * bM, k * bN])

    return scale


def gemm_loop(M=64, N=64, K=224, bK=32, num_stages=None, dtype="float16"):
    """C = A x B with a K loop: T.serial when num_stages is None, else T.Pipelined(num_stages)."""

    @T.prim_func
    def gemm_k(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, 1, threads=128) as (_, _by):
            a = T.alloc_shared((M, bK), dtype)
            b = T.alloc_shared((bK, N), dtype)
            c = T.alloc_fragment((M, N), "float32")
            T.clear(c)
            if num_stages is None:
                for k in T.serial(T.ceildiv(K, bK)):
                    T.copy(A[0, k * bK], a)
                    T.copy(B[k * bK, 0], b)
                    T.gemm(a, b, c)
            else:
                for k in T.Pipelined(T.ceildiv(K, bK), num_stages=num_stages):
                    T.copy(A[0, k * bK], a)
                    T.copy(B[k * bK, 0], b)
                    T.gemm(a, b, c)
            T.copy(c, C[0, 0])

    return gemm_k


def stream(M=32, N=448, bM=16, bN=64, num_stages=None, dtype="float16"):
    """Y = X * 2 + 1 and S = row sums of X, streamed over column chunks (serial or pipelined)."""

    def body(X, Y, S, xs, x, ys, acc, bx, k):
        T.copy(X[bx * bM, k * bN], xs)
        T.copy(xs, x)
        for i, j in T.Parallel(bM, bN):
            ys[i, j] = xs[i, j] * 2.0 + 1.0
        T.copy(ys, Y[bx * bM, k * bN])
        T.reduce_sum(x, acc, dim=1, clear=False)

    @T.prim_func
    def stream_k(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), S: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            xs = T.alloc_shared((bM, bN), dtype)
            ys = T.alloc_shared((bM, bN), dtype)
            x = T.alloc_fragment((bM, bN), "float32")
            acc = T.alloc_fragment((bM,), "float32")
            T.clear(acc)
            if num_stages is None:
                for k in T.serial(T.ceildiv(N, bN)):
                    T.copy(X[bx * bM, k * bN], xs)
                    T.copy(xs, x)
                    for i, j in T.Parallel(bM, bN):
                        ys[i, j] = xs[i, j] * 2.0 + 1.0
                    T.copy(ys, Y[bx * bM, k * bN])
                    T.reduce_sum(x, acc, dim=1, clear=False)
            else:
                for k in T.Pipelined(T.ceildiv(N, bN), num_stages=num_stages):
                    T.copy(X[bx * bM, k * bN], xs)
                    T.copy(xs, x)
                    for i, j in T.Parallel(bM, bN):
                        ys[i, j] = xs[i, j] * 2.0 + 1.0
                    T.copy(ys, Y[bx * bM, k * bN])
                    T.reduce_sum(x, acc, dim=1, clear=False)
            T.copy(acc, S[bx * bM])

    del body
    return stream_k


def gemm_tiles_epilogue(M=128, N=192, K=64, bM=64, bN=64, num_stages=None, dtype="float16"):
    """Y[:, n-tile] = relu(A x B[:, n-tile]) * 0.5 for each N tile of a row block: the accumulator
    crosses from the Cube to the Vector cores once per loop iteration and nothing travels back, so
    the consumer must signal that its copy of the tile is free again (a "free" flag)."""

    @T.prim_func
    def gemm_tiles(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            a = T.alloc_shared((bM, K), dtype)
            b = T.alloc_shared((K, bN), dtype)
            c = T.alloc_fragment((bM, bN), "float32")
            y = T.alloc_fragment((bM, bN), dtype)
            T.copy(A[bx * bM, 0], a)
            for n in T.Pipelined(T.ceildiv(N, bN), num_stages=num_stages or 1):
                T.copy(B[0, n * bN], b)
                T.clear(c)
                T.gemm(a, b, c)
                for i, j in T.Parallel(bM, bN):
                    y[i, j] = T.max(c[i, j], 0.0) * 0.5
                T.copy(y, Y[bx * bM, n * bN])

    return gemm_tiles


def scaled_a_gemm(M=128, N=64, K=192, bM=64, bK=64, dtype="float16"):
    """C = (2 * A) x B with A scaled by the Vector cores tile by tile along K: the scaled tile crosses
    to the Cube once per iteration and the accumulator stays on the Cube, so nothing orders the
    next write of the tile after the Cube's load of it but a "free" flag."""

    @T.prim_func
    def scaled_a(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            a_in = T.alloc_fragment((bM, bK), dtype)
            a = T.alloc_shared((bM, bK), dtype)
            b = T.alloc_shared((bK, N), dtype)
            c = T.alloc_fragment((bM, N), "float32")
            T.clear(c)
            for k in T.serial(T.ceildiv(K, bK)):
                T.copy(A[bx * bM, k * bK], a_in)
                for i, j in T.Parallel(bM, bK):
                    a[i, j] = a_in[i, j] * 2.0
                T.copy(B[k * bK, 0], b)
                T.gemm(a, b, c)
            T.copy(c, C[bx * bM, 0])

    return scaled_a


def free_flag_cases() -> dict:
    """Cases (inputs, reference) of the two kernels whose crossing tile needs a "free" flag."""
    import torch

    from ascend_backend.testing import Case

    g = torch.Generator().manual_seed(0)
    a = torch.randn(128, 64, generator=g).half() * 0.3
    b = torch.randn(64, 192, generator=g).half() * 0.3
    a2 = torch.randn(128, 192, generator=g).half() * 0.3
    b2 = torch.randn(192, 64, generator=g).half() * 0.3
    return {
        "gemm_tiles": Case(gemm_tiles_epilogue(num_stages=2), [a, b, torch.empty(128, 192).half()], [2],
                           lambda a, b, y: [((a.float() @ b.float()).clamp(min=0) * 0.5).half()],
                           atol=2e-2, rtol=2e-2),
        "scaled_a": Case(scaled_a_gemm(), [a2, b2, torch.empty(128, 64)], [2],
                         lambda a, b, c: [(2 * a.float()) @ b.float()], atol=1e-2, rtol=1e-2),
    }


def gemm_carry_epilogue(M=128, N=192, K=64, bM=64, bN=64, carry=True, dtype="float16"):
    """For each N tile of a row block: Y = relu(A x B_n) + 0.5 * (A x B_{n-1}) (zero before the first
    tile; without ``carry`` just relu(A x B_n)) and Z = A2 x B_n. With ``carry`` the vector side reads
    the accumulator c at the top of each iteration (the previous tile's product), before the wait for
    this iteration's c: on dav-3510 an on-chip Fixpipe into that AIV's UB tile could meet that read,
    so c keeps the GM workspace there, while d (read only after its wait) still crosses on chip."""

    @T.prim_func
    def gemm_carry(A: T.Tensor((M, K), dtype), A2: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                   Y: T.Tensor((M, N), dtype), Z: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            a = T.alloc_shared((bM, K), dtype)
            a2 = T.alloc_shared((bM, K), dtype)
            b = T.alloc_shared((K, bN), dtype)
            c = T.alloc_fragment((bM, bN), "float32")
            d = T.alloc_fragment((bM, bN), "float32")
            prev = T.alloc_fragment((bM, bN), "float32")
            y = T.alloc_fragment((bM, bN), dtype)
            z = T.alloc_fragment((bM, bN), dtype)
            T.copy(A[bx * bM, 0], a)
            T.copy(A2[bx * bM, 0], a2)
            T.clear(c)
            for n in T.serial(T.ceildiv(N, bN)):
                if carry:
                    for i, j in T.Parallel(bM, bN):
                        prev[i, j] = c[i, j] * 0.5
                else:
                    T.clear(prev)
                T.copy(B[0, n * bN], b)
                T.clear(c)
                T.clear(d)
                T.gemm(a, b, c)
                T.gemm(a2, b, d)
                for i, j in T.Parallel(bM, bN):
                    y[i, j] = T.max(c[i, j], 0.0) + prev[i, j]
                for i, j in T.Parallel(bM, bN):
                    z[i, j] = d[i, j]
                T.copy(y, Y[bx * bM, n * bN])
                T.copy(z, Z[bx * bM, n * bN])

    return gemm_carry


def scaled_b_gemm_epilogue(M=128, N=64, K=128, bM=64, bK=32, dtype="float16"):
    """Y = relu(A x (2 * B)) with B scaled by the Vector cores tile by tile along K: the scaled tile
    (bK rows) crosses to the Cube, the accumulator (bM rows) crosses back once after the loop. With
    bK != bM the crossing tiles have different heights, so no single row split serves both: on
    dav-3510 neither crosses on chip (both keep the GM workspace)."""

    @T.prim_func
    def scaled_b(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            a = T.alloc_shared((bM, bK), dtype)
            b_in = T.alloc_fragment((bK, N), dtype)
            b = T.alloc_shared((bK, N), dtype)
            c = T.alloc_fragment((bM, N), "float32")
            y = T.alloc_fragment((bM, N), "float32")
            T.clear(c)
            for k in T.serial(T.ceildiv(K, bK)):
                T.copy(A[bx * bM, k * bK], a)
                T.copy(B[k * bK, 0], b_in)
                for i, j in T.Parallel(bK, N):
                    b[i, j] = b_in[i, j] * 2.0
                T.gemm(a, b, c)
            for i, j in T.Parallel(bM, N):
                y[i, j] = T.max(c[i, j], 0.0)
            T.copy(y, Y[bx * bM, 0])

    return scaled_b


def two_way_wide(M=128, N=448, D=64, bM=128, bN=224, num_stages=2, dtype="float16"):
    """A FlashAttention-shaped loop without the softmax: S = Q K^T crosses to the Vector cores, which
    keep a running element-wise max of it (a tile as large as S, alive across the loop) and send back
    P = S / 8; O = sum of P V stays on the Cube. The loop is skewed (Cube/Vector overlap); with S and
    the running max filling most of the UB, S gets one slot and a "free" flag, P two slots in L1."""

    @T.prim_func
    def two_way(Q: T.Tensor((M, D), dtype), K: T.Tensor((N, D), dtype), V: T.Tensor((N, D), dtype),
                Out: T.Tensor((M, D), "float32"), R: T.Tensor((M, bN), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            q = T.alloc_shared((bM, D), dtype)
            k = T.alloc_shared((bN, D), dtype)
            v = T.alloc_shared((bN, D), dtype)
            s = T.alloc_fragment((bM, bN), "float32")
            run = T.alloc_fragment((bM, bN), "float32")
            p = T.alloc_fragment((bM, bN), dtype)
            o = T.alloc_fragment((bM, D), "float32")
            T.copy(Q[bx * bM, 0], q)
            T.clear(o)
            T.fill(run, -T.infinity("float32"))
            for n in T.Pipelined(T.ceildiv(N, bN), num_stages=num_stages):
                T.copy(K[n * bN, 0], k)
                T.clear(s)
                T.gemm(q, k, s, transpose_B=True)
                for i, j in T.Parallel(bM, bN):
                    run[i, j] = T.max(run[i, j], s[i, j])
                for i, j in T.Parallel(bM, bN):
                    p[i, j] = s[i, j] * 0.125
                T.copy(V[n * bN, 0], v)
                T.gemm(p, v, o)
            T.copy(o, Out[bx * bM, 0])
            T.copy(run, R[bx * bM, 0])

    return two_way


def two_way_case(**kw):
    """``two_way_wide`` with its inputs and torch reference."""
    import torch

    from ascend_backend.testing import Case

    M, N, D = kw.get("M", 128), kw.get("N", 448), kw.get("D", 64)
    bN = kw.get("bN", 224)
    g = torch.Generator().manual_seed(1)
    q = torch.randn(M, D, generator=g).half() * 0.5
    k = torch.randn(N, D, generator=g).half() * 0.5
    v = torch.randn(N, D, generator=g).half() * 0.5

    def ref(q, k, v, o, r):
        s = q.float() @ k.float().T
        p = (s * 0.125).half().float()
        run = s.reshape(M, N // bN, bN).amax(dim=1)
        return [p @ v.float(), run]

    return Case(two_way_wide(**kw), [q, k, v, torch.empty(M, D), torch.empty(M, bN)], [3, 4], ref,
                atol=2e-2, rtol=2e-2)


def tight_ub(M=16, N=1024, dtype="float32"):
    """Three 64 KB tiles used one after the other (x, then y, then u) where the UB holds two (dav-c220's
    184 KB): plan_memory lets a later tile reuse a dead one's bytes across pipes, and insert_sync
    orders the hand-over (the last read of one, the first write of the other)."""

    @T.prim_func
    def tight(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype), D: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=128) as bx:  # noqa: F841 - one block
            x = T.alloc_shared((M, N), dtype)
            y = T.alloc_shared((M, N), dtype)
            u = T.alloc_shared((M, N), dtype)
            T.copy(A[0, 0], x)
            for i, j in T.Parallel(M, N):
                y[i, j] = x[i, j] * 2.0
            T.copy(y, C[0, 0])
            T.copy(A[0, 0], u)
            for i, j in T.Parallel(M, N):
                u[i, j] = u[i, j] + 1.0
            T.copy(u, D[0, 0])

    return tight


def tight_ub_case():
    import torch

    from ascend_backend.testing import Case

    a = torch.randn(16, 1024, generator=torch.Generator().manual_seed(2))
    return Case(tight_ub(), [a, torch.empty(16, 1024), torch.empty(16, 1024)], [1, 2],
                lambda a, c, d: [a * 2.0, a + 1.0], atol=1e-6, rtol=1e-6)


def block_scaled_fp8_case():
    """examples/fp8_gemm.py's block-scaled FP8 GEMM (dav-3510): its partial product crosses Cube ->
    Vector every K step, one way (two slots, a primed-twice "free" flag)."""
    import sys
    from pathlib import Path

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import fp8_gemm

    from ascend_backend.testing import Case

    M, N, K = 128, 128, 512
    g = torch.Generator().manual_seed(3)
    aq, sa, bq, sb = fp8_gemm.quantize_blocks(torch.randn(M, K, generator=g), torch.randn(N, K, generator=g))
    c = torch.zeros(M, N, dtype=torch.bfloat16)
    return Case(func=fp8_gemm.matmul_fp8_block_scale(M, N, K, 128, 128), inputs=[aq, bq, sa, sb, c], outputs=[4],
                reference=lambda a, b, sa_, sb_, _c: [fp8_gemm.reference_block_scale(a, b, sa_, sb_)],
                atol=1e-2, rtol=1e-2)


def mx_gemm_case():
    """examples/fp8_gemm.py's MX GEMM (T.gemm_blockscaled -> MmadMx, dav-3510): two pipelined K steps of
    256 in L0 chunks of 128, a different E8M0 scale per row and 32 K elements."""
    import sys
    from pathlib import Path

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import fp8_gemm

    from ascend_backend.testing import Case

    M, N, K = 256, 128, 512
    g = torch.Generator().manual_seed(4)
    a = (torch.randn(M, K, generator=g) * 4).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, generator=g) * 4).to(torch.float8_e4m3fn)
    sa = torch.randint(120, 134, (M, K // 32), generator=g, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    sb = torch.randint(120, 134, (N, K // 32), generator=g, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    return Case(func=fp8_gemm.matmul_fp8_mx(M, N, K, 256, 128, 256, out_dtype="float32"),
                inputs=[a, b, sa, sb, torch.zeros(M, N)], outputs=[4],
                reference=lambda a_, b_, sa_, sb_, _c: [fp8_gemm.reference_mx(a_, b_, sa_, sb_, "float32")],
                atol=1e-2, rtol=1e-5)


def causal_sink_attention(seq=256, dim=128, bm=128, bn=128, num_stages=2):
    """FlashAttention forward with a causal mask written into the scores before the gemm, and a per-head
    "sink" logit added to each row's denominator at the end (one query head, fp16). With 128-row blocks
    on dav-c220 the Vector cores' tiles fill UB, so plan_memory lets part A's temporaries share bytes
    with part B's per-step tiles of the skewed loop (the case insert_sync once left unordered)."""
    import math

    scale = 1.0 / math.sqrt(dim)

    @T.prim_func
    def sink_fwd(Q: T.Tensor((1, seq, dim), "float16"), K: T.Tensor((1, seq, dim), "float16"),
                 V: T.Tensor((1, seq, dim), "float16"), Sinks: T.Tensor((1,), "float16"),
                 Out: T.Tensor((1, seq, dim), "float16")):
        with T.Kernel(seq // bm, 1) as (bx, bh):
            q_s = T.alloc_shared((bm, dim), "float16")
            k_s = T.alloc_shared((bn, dim), "float16")
            v_s = T.alloc_shared((bn, dim), "float16")
            s = T.alloc_fragment((bm, bn), "float32")
            p = T.alloc_fragment((bm, bn), "float16")
            o = T.alloc_fragment((bm, dim), "float32")
            o_out = T.alloc_fragment((bm, dim), "float16")
            mx = T.alloc_fragment((bm,), "float32")
            mx_prev = T.alloc_fragment((bm,), "float32")
            sc = T.alloc_fragment((bm,), "float32")
            ssum = T.alloc_fragment((bm,), "float32")
            lsum = T.alloc_fragment((bm,), "float32")
            sink = T.alloc_fragment((bm,), "float16")
            T.copy(Q[bh, bx * bm, 0], q_s)
            T.fill(o, 0)
            T.fill(lsum, 0)
            T.fill(mx, -T.infinity("float32"))
            for i in T.Parallel(bm):
                sink[i] = Sinks[bh]
            for k in T.Pipelined(T.min(seq // bn, T.ceildiv((bx + 1) * bm, bn)), num_stages=num_stages):
                T.copy(K[bh, k * bn, 0], k_s)
                for i, j in T.Parallel(bm, bn):
                    s[i, j] = T.if_then_else(bx * bm + i >= k * bn + j, 0, -T.infinity("float32"))
                T.gemm(q_s, k_s, s, transpose_B=True)
                T.copy(mx, mx_prev)
                T.reduce_max(s, mx, dim=1, clear=False)
                for i in T.Parallel(bm):
                    sc[i] = T.exp((mx_prev[i] - mx[i]) * scale)
                for i, j in T.Parallel(bm, bn):
                    s[i, j] = T.exp((s[i, j] - mx[i]) * scale)
                T.reduce_sum(s, ssum, dim=1)
                for i in T.Parallel(bm):
                    lsum[i] = lsum[i] * sc[i] + ssum[i]
                T.copy(s, p)
                for i, j in T.Parallel(bm, dim):
                    o[i, j] *= sc[i]
                T.copy(V[bh, k * bn, 0], v_s)
                T.gemm(p, v_s, o)
            for i in T.Parallel(bm):
                lsum[i] += T.exp(T.cast(sink[i], "float32") - mx[i] * scale)
            for i, j in T.Parallel(bm, dim):
                o[i, j] /= lsum[i]
            T.copy(o, o_out)
            T.copy(o_out, Out[bh, bx * bm, 0])

    return sink_fwd


def causal_sink_attention_case(seq=256, dim=128):
    import math

    import torch

    from ascend_backend.testing import Case

    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, seq, dim, generator=g).half() for _ in range(3))
    sinks = torch.tensor([0.5]).half()

    def ref(q, k, v, sinks, _o):
        s = (q.float() @ k.float().transpose(1, 2)) / math.sqrt(dim)
        s = s.masked_fill(torch.ones(seq, seq).triu(1).bool(), float("-inf"))
        mx = s.amax(-1, keepdim=True)
        e = torch.exp(s - mx)
        return [((e / (e.sum(-1, keepdim=True) + torch.exp(sinks.float() - mx))) @ v.float()).half()]

    return Case(func=causal_sink_attention(seq, dim), inputs=[q, k, v, sinks, torch.zeros(1, seq, dim).half()],
                outputs=[4], reference=ref, atol=2e-3, rtol=2e-3)
