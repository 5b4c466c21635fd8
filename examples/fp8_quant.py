"""FP8 (E4M3FN) quantization as DeepSeek's kernels use it, written as TileLang's cast examples write
it: per-token (one scale per row) and per-group-128 (one scale per 128 columns of a row) casts of a
float32 matrix to float8_e4m3fn with its float32 scales, and the inverse (dequantization).

The scale of a group is amax / 448 (448 is the largest E4M3FN value); the group is divided by it,
clamped to +-448 and cast. Scales are stored group-major, S[g, m] (the column-major scale layout
DeepGEMM reads), so each block writes its scales as one contiguous run. fp8 exists only on
dav-3510 (Ascend 950): the Cast page's dav-c220 table has no fp8, so these kernels are refused
there. `tl-ascend run examples/fp8_quant.py` runs
the group-128 cast on the emulator against torch.
"""

import tilelang.language as T

# fp8 exists only on dav-3510; dav-c220 refuses these kernels with the reason
ARCHES = ("dav-3510",)

FP8_MAX = 448.0


def group_cast_to_fp8(M=256, N=1024, blk_m=32, group=128, in_dtype="float32", groups_per_block=1, num_stages=2):
    """X [M, N] -> X_fp8 [M, N] (E4M3FN) and S [N / group, M] (float32 scales); group = N gives
    the per-token cast. Each block takes blk_m rows and ``groups_per_block`` consecutive groups,
    pipelined (the next group's load overlaps this one's compute and store)."""
    G = N // group
    gpb = groups_per_block

    @T.prim_func
    def cast_fp8(X: T.Tensor((M, N), in_dtype), X_fp8: T.Tensor((M, N), "float8_e4m3fn"),
                 S: T.Tensor((G, M), "float32")):
        with T.Kernel(T.ceildiv(M, blk_m), G // gpb) as (bx, by):
            x = T.alloc_fragment((blk_m, group), "float32")
            amax = T.alloc_fragment((blk_m,), "float32")
            scale = T.alloc_fragment((blk_m,), "float32")
            q = T.alloc_fragment((blk_m, group), "float8_e4m3fn")
            for g in T.Pipelined(gpb, num_stages=num_stages):
                T.copy(X[bx * blk_m, (by * gpb + g) * group], x)
                T.reduce_absmax(x, amax, dim=1)
                for i in T.Parallel(blk_m):
                    scale[i] = T.max(amax[i], 1e-4) / FP8_MAX
                for i, j in T.Parallel(blk_m, group):
                    q[i, j] = T.clamp(x[i, j] / scale[i], -FP8_MAX, FP8_MAX)
                T.copy(q, X_fp8[bx * blk_m, (by * gpb + g) * group])
                for i in T.Parallel(blk_m):
                    S[by * gpb + g, bx * blk_m + i] = scale[i]

    return cast_fp8


def per_token_cast_to_fp8(M=256, N=1024, blk_m=16, chunk=512, in_dtype="float32", num_stages=2):
    """One scale per row, S [M]. A row of DeepSeek's hidden size (7168 floats) is longer than one
    vector reduction takes, so each block makes two passes over its rows in chunks: the running
    amax, then the cast (the second pass reads what the first left in L2)."""

    @T.prim_func
    def per_token_fp8(X: T.Tensor((M, N), in_dtype), X_fp8: T.Tensor((M, N), "float8_e4m3fn"),
                      S: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, blk_m)) as bx:
            x = T.alloc_fragment((blk_m, chunk), "float32")
            amax = T.alloc_fragment((blk_m,), "float32")
            scale = T.alloc_fragment((blk_m,), "float32")
            q = T.alloc_fragment((blk_m, chunk), "float8_e4m3fn")
            T.fill(amax, 0.0)
            for c in T.Pipelined(N // chunk, num_stages=num_stages):
                T.copy(X[bx * blk_m, c * chunk], x)
                T.reduce_absmax(x, amax, dim=1, clear=False)
            for i in T.Parallel(blk_m):
                scale[i] = T.max(amax[i], 1e-4) / FP8_MAX
            for c in T.Pipelined(N // chunk, num_stages=num_stages):
                T.copy(X[bx * blk_m, c * chunk], x)
                for i, j in T.Parallel(blk_m, chunk):
                    q[i, j] = T.clamp(x[i, j] / scale[i], -FP8_MAX, FP8_MAX)
                T.copy(q, X_fp8[bx * blk_m, c * chunk])
            T.copy(scale, S[bx * blk_m])

    return per_token_fp8


def group_dequant_fp8(M=256, N=1024, blk_m=32, group=128, out_dtype="float32", groups_per_block=1, num_stages=2):
    """The inverse: Y = X_fp8 * S per group."""
    G = N // group
    gpb = groups_per_block

    @T.prim_func
    def dequant_fp8(X_fp8: T.Tensor((M, N), "float8_e4m3fn"), S: T.Tensor((G, M), "float32"),
                    Y: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), G // gpb) as (bx, by):
            q = T.alloc_fragment((blk_m, group), "float8_e4m3fn")
            scale = T.alloc_fragment((blk_m,), "float32")
            y = T.alloc_fragment((blk_m, group), out_dtype)
            for g in T.Pipelined(gpb, num_stages=num_stages):
                T.copy(X_fp8[bx * blk_m, (by * gpb + g) * group], q)
                for i in T.Parallel(blk_m):
                    scale[i] = S[by * gpb + g, bx * blk_m + i]
                for i, j in T.Parallel(blk_m, group):
                    y[i, j] = q[i, j] * scale[i]
                T.copy(y, Y[bx * blk_m, (by * gpb + g) * group])

    return dequant_fp8


def reference_cast(x, group=128):
    """torch reference: (X_fp8, S [N / group, M]) with the kernel's formula."""
    import torch

    M, N = x.shape
    xg = x.float().view(M, N // group, group)
    amax = xg.abs().amax(dim=2).clamp(min=1e-4)
    s = amax / FP8_MAX
    q = (xg / s.unsqueeze(2)).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.view(M, N), s.T.contiguous()


def reference_dequant(q, s, group=128):
    M, N = q.shape
    return (q.float().view(M, N // group, group) * s.T.unsqueeze(2)).view(M, N)


def example():
    """The case `tl-ascend run` uses: the group-128 cast (dav-3510)."""
    import torch

    from ascend_backend.testing import Case

    M, N = 64, 512
    torch.manual_seed(0)
    x = torch.randn(M, N) * 3
    q = torch.zeros(M, N, dtype=torch.float8_e4m3fn)
    s = torch.zeros(N // 128, M)

    def ref(x, q, s):
        rq, rs = reference_cast(x)
        return [rq.float(), rs]

    # the kernel divides by 448 as torch does: codes and scales bit-exact
    return Case(func=group_cast_to_fp8(M, N), inputs=[x, q, s], outputs=[1, 2], reference=ref, atol=0, rtol=0)
