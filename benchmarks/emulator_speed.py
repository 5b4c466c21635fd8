"""Emulator speed: fp16 GEMM 1024^3 and a 4096x4096 fp16 elementwise add, checks on and off.

Run: python benchmarks/emulator_speed.py [--arch dav-3510|dav-c220] [--repeat N]

Prints wall seconds of the emulated kernel (compile excluded: the binary is cached and a
warm-up run comes first), the ratio to torch CPU for the same op, and the checker overhead
(checks on / checks off). The kernels are hand-written Ascend C.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ascend_backend.emulator import run_source  # noqa: E402

# C[M,N] (fp16) = A[M,K] x B[K,N], fp16 in, fp32 accumulate. 128x128 output tiles, K in steps
# of 64; tiles are distributed round-robin over the blocks. Single-buffered with the
# documented "prime / wait / set / drain" flag pattern, so every Set is matched.
GEMM = r"""
#include "kernel_operator.h"
using namespace AscendC;

constexpr int BM = 128, BN = 128, BK = 64;

extern "C" __global__ __aicore__ void gemm(GM_ADDR a, GM_ADDR b, GM_ADDR c, uint32_t M, uint32_t N, uint32_t K) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    TPipe pipe;
    TBuf<TPosition::A1> a1b; TBuf<TPosition::B1> b1b;
    TBuf<TPosition::A2> a2b; TBuf<TPosition::B2> b2b; TBuf<TPosition::CO1> c1b;
    pipe.InitBuffer(a1b, BM * BK * sizeof(half));
    pipe.InitBuffer(b1b, BK * BN * sizeof(half));
    pipe.InitBuffer(a2b, BM * BK * sizeof(half));
    pipe.InitBuffer(b2b, BK * BN * sizeof(half));
    pipe.InitBuffer(c1b, BM * BN * sizeof(float));
    GlobalTensor<half> ag, bg, cg;
    ag.SetGlobalBuffer((__gm__ half*)a, M * K);
    bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ half*)c, M * N);
    LocalTensor<half> a1 = a1b.Get<half>(), b1 = b1b.Get<half>(), a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
    LocalTensor<float> c1 = c1b.Get<float>();
    const uint32_t tilesN = N / BN, tiles = (M / BM) * tilesN;

    SetFlag<HardEvent::MTE1_MTE2>(0);   // prime: L1 free
    SetFlag<HardEvent::M_MTE1>(0);      // prime: L0A/L0B free
    SetFlag<HardEvent::FIX_M>(0);       // prime: L0C free
    for (uint32_t t = GetBlockIdx(); t < tiles; t += GetBlockNum()) {
        uint32_t mi = t / tilesN, ni = t % tilesN;
        WaitFlag<HardEvent::FIX_M>(0);
        for (uint32_t k = 0; k < K / BK; ++k) {
            WaitFlag<HardEvent::MTE1_MTE2>(0);
            DataCopy(a1, ag[mi * BM * K + k * BK], Nd2NzParams(1, BM, BK, 0, K, BM, 1, 0));
            DataCopy(b1, bg[k * BK * N + ni * BN], Nd2NzParams(1, BK, BN, 0, N, BK, 1, 0));
            SetFlag<HardEvent::MTE2_MTE1>(0);
            WaitFlag<HardEvent::MTE2_MTE1>(0);
            WaitFlag<HardEvent::M_MTE1>(0);
#if defined(EMU_ARCH_C220)
            for (int i = 0; i < BM / 16; ++i)
                LoadData(a2[i * BK * 16], a1[i * 16 * 16], LoadData2DParams(0, BK / 16, BM / 16, 0, 0, false, 0));
            for (int i = 0; i < BK / 16; ++i)
                LoadData(b2[i * BN * 16], b1[i * 256], LoadData2DParams(0, BN / 16, BK / 16, 0, 0, true, 0));
#else
            LoadData(a2, a1, LoadData2DParamsV2(0, 0, BM / 16, BK / 16, BM / 16, BM / 16, false, 0));
            LoadData(b2, b1, LoadData2DParamsV2(0, 0, BK / 16, BN / 16, BK / 16, BN / 16, true, 0));
#endif
            SetFlag<HardEvent::MTE1_MTE2>(0);
            SetFlag<HardEvent::MTE1_M>(0);
            WaitFlag<HardEvent::MTE1_M>(0);
            Mmad(c1, a2, b2, MmadParams(BM, BN, BK, 0, false, k == 0));
            SetFlag<HardEvent::M_MTE1>(0);
        }
        SetFlag<HardEvent::M_FIX>(0);
        WaitFlag<HardEvent::M_FIX>(0);
#if defined(EMU_ARCH_C220)
        FixpipeParamsV220 fp(BN, BM, BM, N, false);
#else
        FixpipeParamsArch3510<CO2Layout::ROW_MAJOR> fp(BN, BM, BM, N);
#endif
        fp.quantPre = QuantMode_t::F322F16;
        Fixpipe<half, float, CFG_ROW_MAJOR>(cg[mi * BM * N + ni * BN], c1, fp);
        SetFlag<HardEvent::FIX_M>(0);
    }
    WaitFlag<HardEvent::MTE1_MTE2>(0);  // drain the primed flags
    WaitFlag<HardEvent::M_MTE1>(0);
    WaitFlag<HardEvent::FIX_M>(0);
}
"""

# z = x + y (fp16), tiles of TILE elements, each block a contiguous slice.
ADD = r"""
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t TILE = 8192;

extern "C" __global__ __aicore__ void vadd(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t total) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bz;
    pipe.InitBuffer(bx, TILE * sizeof(half));
    pipe.InitBuffer(by, TILE * sizeof(half));
    pipe.InitBuffer(bz, TILE * sizeof(half));
    uint32_t per = total / GetBlockNum(), base = GetBlockIdx() * per;
    GlobalTensor<half> gx, gy, gz;
    gx.SetGlobalBuffer((__gm__ half*)x + base, per);
    gy.SetGlobalBuffer((__gm__ half*)y + base, per);
    gz.SetGlobalBuffer((__gm__ half*)z + base, per);
    LocalTensor<half> lx = bx.Get<half>(), ly = by.Get<half>(), lz = bz.Get<half>();
    SetFlag<HardEvent::V_MTE2>(0);
    SetFlag<HardEvent::MTE3_V>(0);
    for (uint32_t off = 0; off < per; off += TILE) {
        WaitFlag<HardEvent::V_MTE2>(0);
        DataCopy(lx, gx[off], TILE);
        DataCopy(ly, gy[off], TILE);
        SetFlag<HardEvent::MTE2_V>(0);
        WaitFlag<HardEvent::MTE2_V>(0);
        WaitFlag<HardEvent::MTE3_V>(0);
        Add(lz, lx, ly, TILE);
        SetFlag<HardEvent::V_MTE2>(0);
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(gz[off], lz, TILE);
        SetFlag<HardEvent::MTE3_V>(0);
    }
    WaitFlag<HardEvent::V_MTE2>(0);
    WaitFlag<HardEvent::MTE3_V>(0);
}
"""


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_gemm(arch: str, repeat: int, size: int = 1024, block_dim: int = 8) -> dict:
    torch.manual_seed(0)
    a = torch.randn(size, size, dtype=torch.float16)
    b = torch.randn(size, size, dtype=torch.float16)
    c = torch.zeros(size, size, dtype=torch.float16)
    args = [a, b, c, size, size, size]
    rep = run_source(GEMM, "gemm", args, block_dim, arch=arch)  # warm-up (compiles once)
    ref = (a.float() @ b.float())
    err = (c.float() - ref).abs().max().item() / ref.abs().max().item()
    on = _best(lambda: run_source(GEMM, "gemm", args, block_dim, arch=arch), repeat)
    off = _best(lambda: run_source(GEMM, "gemm", args, block_dim, arch=arch, checks=False), repeat)
    t_torch = _best(lambda: a @ b, repeat)
    t_f32 = _best(lambda: a.float() @ b.float(), repeat)
    return {"name": f"gemm fp16 {size}^3", "on": on, "off": off, "torch": t_torch, "torch_f32": t_f32,
            "rel_err": err, "report": rep}


def bench_add(arch: str, repeat: int, size: int = 4096, block_dim: int = 16) -> dict:
    x = torch.randn(size, size, dtype=torch.float16)
    y = torch.randn(size, size, dtype=torch.float16)
    z = torch.zeros(size, size, dtype=torch.float16)
    args = [x, y, z, size * size]
    rep = run_source(ADD, "vadd", args, block_dim, arch=arch)
    err = (z - (x + y)).abs().max().item()
    on = _best(lambda: run_source(ADD, "vadd", args, block_dim, arch=arch), repeat)
    off = _best(lambda: run_source(ADD, "vadd", args, block_dim, arch=arch, checks=False), repeat)
    t_torch = _best(lambda: x + y, repeat)
    return {"name": f"add fp16 {size}x{size}", "on": on, "off": off, "torch": t_torch, "rel_err": err, "report": rep}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="dav-3510")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeline", default="", help="write the GEMM's modelled timeline SVG here")
    args = ap.parse_args()
    for r in (bench_gemm(args.arch, args.repeat), bench_add(args.arch, args.repeat)):
        t = r["report"].timing
        f32 = f", torch fp32 {r['torch_f32'] * 1e3:.1f} ms" if "torch_f32" in r else ""
        print(f"{r['name']} on {args.arch}: emulated {r['on']:.2f} s with checks, {r['off']:.2f} s without "
              f"(checker overhead {r['on'] / r['off']:.2f}x); torch CPU same op {r['torch'] * 1e3:.1f} ms "
              f"(emulator/torch {r['on'] / r['torch']:.2f}x){f32}; max error {r['rel_err']:.2e}; "
              f"MODELLED (not measured) {t['total_cycles']:,} cycles = {t['time_us']:.1f} us")
        if args.timeline and r["name"].startswith("gemm"):
            r["report"].write_timeline_svg(args.timeline)


if __name__ == "__main__":
    main()
