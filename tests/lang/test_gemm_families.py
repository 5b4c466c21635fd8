"""Split-K and stream-K GEMM as TileLang's examples write them (our own kernels in their style):
atomics into GM from the Cube (Fixpipe) and from the Vector cores, a while loop over a block's
share of the K iterations, a branch between a plain store and an atomic one. On the emulator
against torch, both arches, strict mode."""

import tilelang.language as T
import torch

import ascend_backend


def splitk(M=128, N=128, K=256, bM=64, bN=64, bK=32, split=4, elementwise=False):
    per = K // split

    @T.prim_func
    def gemm_splitk(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // bN, M // bM, split) as (bx, by, bz):
            a = T.alloc_shared((bM, bK), "float16")
            b = T.alloc_shared((bK, bN), "float16")
            c = T.alloc_fragment((bM, bN), "float32")
            T.clear(c)
            for ko in T.Pipelined(per // bK, num_stages=2):
                T.copy(A[by * bM, bz * per + ko * bK], a)
                T.copy(B[bz * per + ko * bK, bx * bN], b)
                T.gemm(a, b, c)
            if elementwise:
                for i, j in T.Parallel(bM, bN):
                    T.atomic_add(C[by * bM + i, bx * bN + j], c[i, j])
            else:
                T.atomic_add(C[by * bM, bx * bN], c)

    return gemm_splitk


def streamk(M=64, N=128, K=256, bM=64, bN=64, bK=32, programs=3):
    """Each program walks its share of the (tile, k) iterations; a tile finished by one program is
    stored, a partial tile is added atomically."""
    tiles_n = N // bN
    iters_per_tile = K // bK
    total = (M // bM) * tiles_n * iters_per_tile
    per_prog = (total + programs - 1) // programs

    @T.prim_func
    def gemm_streamk(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(programs) as pid:
            a = T.alloc_shared((bM, bK), "float16")
            b = T.alloc_shared((bK, bN), "float16")
            c = T.alloc_fragment((bM, bN), "float32")
            start = T.alloc_var("int32")
            end = T.alloc_var("int32")
            start = pid * per_prog
            last = T.min((pid + 1) * per_prog, total)
            while start < last:
                end = T.min(start + (iters_per_tile - start % iters_per_tile), last)
                tile = start // iters_per_tile
                pm = tile // tiles_n
                pn = tile % tiles_n
                T.clear(c)
                for k in T.serial(end - start):
                    T.copy(A[pm * bM, (k + start % iters_per_tile) * bK], a)
                    T.copy(B[(k + start % iters_per_tile) * bK, pn * bN], b)
                    T.gemm(a, b, c)
                if start % iters_per_tile == 0 and end % iters_per_tile == 0:
                    T.copy(c, C[pm * bM, pn * bN])
                else:
                    for i, j in T.Parallel(bM, bN):
                        T.atomic_add(C[pm * bM + i, pn * bN + j], c[i, j])
                start = end

    return gemm_streamk


def _run(func, M, N, K, arch):
    g = torch.Generator().manual_seed(7)
    a, b = (torch.randn(M, K, generator=g) * 0.2).half(), (torch.randn(K, N, generator=g) * 0.2).half()
    c = torch.zeros(M, N)  # atomics add into what is there
    k = ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True)
    k(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-2, rtol=1e-2)
    return k


def test_splitk_tilewise_atomic_from_the_cube(arch):
    k = _run(splitk(), 128, 128, 256, arch)
    assert "SetAtomicAdd<float>();  // the Fixpipe below adds into GM" in k.kernel_source


def test_splitk_elementwise_atomic_from_the_vector_cores(arch):
    k = _run(splitk(elementwise=True), 128, 128, 256, arch)
    assert "ASCEND_IS_AIV" in k.kernel_source and "SetAtomicAdd<float>();" in k.kernel_source


def test_streamk_while_branch_and_atomics(arch):
    k = _run(streamk(), 64, 128, 256, arch)
    assert "while (" in k.kernel_source
