#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""cuSPARSELt kernel times through PyTorch's bundled cuSPARSELt, for `spmma bench --cusparselt-json`.

    python3 bench/cusparselt_torch.py --shapes 8192x8192x8192,4096x16x4096 --types bf16,e4m3 --out cslt.json

For each shape (M x N x K, A sparse M x K) and type: A random, pruned 2:4, compressed once
(torch._cslt_compress); the best algorithm picked by torch._cslt_sparse_mm_search; then
torch._cslt_sparse_mm timed under torch.profiler, counting only the device time of the kernels
(PyTorch sets cuSPARSELt up again on every call; that host cost is left out, as in ANCHORS.md).
TFLOP/s are dense-equivalent, 2*M*N*K / kernel time.
"""
import argparse
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

DEFAULT_SHAPES = ([(s, s, s) for s in (4096, 8192, 16384)] +
                  [(m, n, k) for (m, k) in ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192))
                   for n in (16, 128, 2048, 8192)])


def prune_2_4(a):
    m, k = a.shape
    g = a.float().abs().reshape(m, k // 4, 4)
    idx = g.topk(2, dim=-1).indices
    mask = torch.zeros_like(g, dtype=torch.bool).scatter_(-1, idx, True).reshape(m, k)
    return a * mask.to(a.dtype)


def kernel_ms(fn, iters=20, names=None):
    """Device time per call (ms); the kernels' names (their tile, cluster and stage counts are in
    them) go into `names` when given."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    total_us = 0.0
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            total_us += e.device_time
            if names is not None and e.name not in names:
                names.append(e.name)
    return total_us / iters / 1e3


# A/B storage dtype and cuSPARSELt output dtype per spmma type (None: same as the inputs).
TYPES = {
    "bf16": (torch.bfloat16, None),
    "f16": (torch.float16, None),
    "tf32": (torch.float32, None),       # cuSPARSELt's float32 path computes in tf32
    "e4m3": (torch.float8_e4m3fn, torch.bfloat16),
    "s8": (torch.int8, torch.int32),
}


def one(m, n, k, t):
    dev = "cuda"
    dtype, out_dtype = TYPES[t]
    a = prune_2_4(torch.randn(m, k, device=dev, dtype=torch.bfloat16))
    b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
    if dtype == torch.int8:
        a = (a * 16).round().clamp(-127, 127).to(torch.int8)
        b = (b * 16).round().clamp(-127, 127).to(torch.int8)
    else:
        a, b = a.to(dtype), b.to(dtype)
    ac = torch._cslt_compress(a)
    # cuSPARSELt wants B column-major for fp8: pass B^T's storage transposed back.
    bb = b.t().contiguous().t()
    kwargs = {"out_dtype": out_dtype} if out_dtype is not None else {}
    try:
        alg = torch._cslt_sparse_mm_search(ac, bb, **kwargs)
    except Exception:
        alg = 0
    names = []
    ms = kernel_ms(lambda: torch._cslt_sparse_mm(ac, bb, alg_id=alg, **kwargs), names=names)
    flops = 2.0 * m * n * k
    row = {"m": m, "n": n, "k": k, "type": t, "cusparselt_ms": ms, "cusparselt_tflops": flops / (ms * 1e-3) / 1e12,
           "alg_id": int(alg), "kernels": names, "torch": torch.__version__,
           "cusparselt": str(torch.backends.cusparselt.version())}
    if t in ("bf16", "f16"):
        dms = kernel_ms(lambda: torch.mm(a, b))
        row["torch_dense_tflops"] = flops / (dms * 1e-3) / 1e12
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="")
    ap.add_argument("--types", default="bf16,e4m3")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    shapes = DEFAULT_SHAPES if not args.shapes else [tuple(int(x) for x in s.lower().split("x")) for s in args.shapes.split(",")]
    rows = []
    for t in args.types.split(","):
        for (m, n, k) in shapes:
            try:
                rows.append(one(m, n, k, t))
            except Exception as e:  # report and go on: one unsupported case must not hide the rest
                rows.append({"m": m, "n": n, "k": k, "type": t, "cusparselt_tflops": None, "error": str(e)[:200]})
            r = rows[-1]
            print(f"{m}x{n}x{k} {t}: cuSPARSELt {r.get('cusparselt_tflops')}", file=sys.stderr, flush=True)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
