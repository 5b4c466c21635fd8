"""Pieces of the FlashAttention-style kernels that tests/lang writes again and again, as TileLang
macros: the tiles of one query block, their initial values, one online-softmax step and the final
division. Each kernel keeps its own form (its loads, masks and loop); only the logic that really is
the same comes from here, so the generated Ascend C is the same as when each kernel spelt it out.

Sizes and the softmax scale are closed over, not passed as macro arguments: a scalar macro argument
is bound to a new variable, which would rename it in the generated code."""

import tilelang.language as T


def attention_tiles(rows: int, cols: int, dim: int):
    """A macro allocating a query block's tiles, in the order and with the names the kernels use:
    q, k_s, v_s in L1; s (scores), p (scores cast for the second gemm), o (output accumulator) and
    the per-row mx, mx0 (previous max), sc (rescale), sm (row sum), lsum (running denominator)."""

    @T.macro
    def tiles():
        q = T.alloc_shared((rows, dim), "float16")
        k_s = T.alloc_shared((cols, dim), "float16")
        v_s = T.alloc_shared((cols, dim), "float16")
        s = T.alloc_fragment((rows, cols), "float32")
        p = T.alloc_fragment((rows, cols), "float16")
        o = T.alloc_fragment((rows, dim), "float32")
        mx = T.alloc_fragment((rows,), "float32")
        mx0 = T.alloc_fragment((rows,), "float32")
        sc = T.alloc_fragment((rows,), "float32")
        sm = T.alloc_fragment((rows,), "float32")
        lsum = T.alloc_fragment((rows,), "float32")
        return q, k_s, v_s, s, p, o, mx, mx0, sc, sm, lsum

    return tiles


@T.macro
def init_softmax(o, lsum, mx):
    """Zero output and denominator, running max at -inf."""
    T.fill(o, 0)
    T.fill(lsum, 0)
    T.fill(mx, -T.infinity("float32"))


def softmax_weights(rows: int, cols: int, dim: int, scale: float):
    """A macro for the second half of an online-softmax step, once the running max mx and the
    rescale factor sc are known: exp2 of the scaled scores, running denominator, scores cast into
    p, output rescaled."""

    @T.macro
    def weigh(s, p, o, mx, sc, sm, lsum):
        for i, j in T.Parallel(rows, cols):
            s[i, j] = T.exp2(s[i, j] * scale - mx[i] * scale)
        T.reduce_sum(s, sm, dim=1)
        for i in T.Parallel(rows):
            lsum[i] = lsum[i] * sc[i] + sm[i]
        T.copy(s, p)
        for i, j in T.Parallel(rows, dim):
            o[i, j] *= sc[i]

    return weigh


def online_softmax(rows: int, cols: int, dim: int, scale: float):
    """A macro for one online-softmax step after S = Q K^T: new running max, rescale factor,
    exp2 of the scaled scores, running denominator, scores cast into p, output rescaled."""

    weigh = softmax_weights(rows, cols, dim, scale)

    @T.macro
    def step(s, p, o, mx, mx0, sc, sm, lsum):
        T.copy(mx, mx0)
        T.reduce_max(s, mx, dim=1, clear=False)
        for i in T.Parallel(rows):
            sc[i] = T.exp2(mx0[i] * scale - mx[i] * scale)
        weigh(s, p, o, mx, sc, sm, lsum)

    return step


def normalize(rows: int, dim: int):
    """A macro dividing the output accumulator by the softmax denominator."""

    @T.macro
    def div(o, lsum):
        for i, j in T.Parallel(rows, dim):
            o[i, j] /= lsum[i]

    return div


def guarded_online_softmax(rows: int, cols: int, dim: int, scale: float):
    """``online_softmax`` in the form of TileLang's FlashAttention examples: the running max is
    refilled with -inf before the row max and then kept at least the previous one (T.max), so a row
    that a block masks entirely keeps its max."""

    weigh = softmax_weights(rows, cols, dim, scale)

    @T.macro
    def step(s, p, o, mx, mx0, sc, sm, lsum):
        T.copy(mx, mx0)
        T.fill(mx, -T.infinity("float32"))
        T.reduce_max(s, mx, dim=1, clear=False)
        for i in T.Parallel(rows):
            mx[i] = T.max(mx[i], mx0[i])
        for i in T.Parallel(rows):
            sc[i] = T.exp2(mx0[i] * scale - mx[i] * scale)
        weigh(s, p, o, mx, sc, sm, lsum)

    return step
