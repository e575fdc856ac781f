# SPDX-License-Identifier: BSD-3-Clause
"""How the peers accumulate e4m3 products (issue 10's e4m3 comparison): the error of each
library's e4m3 GEMM against the exact sum, relative to sum |a*b|, on the same random operands.
The H100's fp8 tensor cores keep fewer bits than f32 (docs/conformance.md); a library that adds
each few instructions' sums in f32 ("promotion", cuBLASLt's default) has errors near f32's, one
that does not (CUBLASLT_MATMUL_DESC_FAST_ACCUM) errors that grow with K. Measured here:

- cuBLASLt through torch._scaled_mm with use_fast_accum False and True (the two calibration points);
- cuSPARSELt through torch._cslt_sparse_mm on the same A pruned 2:4, its best algorithm.

f32 output where the library takes it (else bf16, whose rounding, 2^-9 of |D|, is then the floor
of what can be seen). Prints a table and writes --out JSON.

    python3 bench/fp8_accuracy.py --out fp8-accuracy.json
"""
import argparse
import json

import torch


def prune_2_4(a):
    m, k = a.shape
    g = a.reshape(m, k // 4, 4)
    idx = g.abs().topk(2, dim=-1).indices
    mask = torch.zeros_like(g, dtype=torch.bool).scatter_(-1, idx, True).reshape(m, k)
    return a * mask.to(a.dtype)


def errors(got, ref, mag):
    """Largest and root-mean-square |got - ref| / sum|a*b| over the outputs."""
    e = (got.double() - ref).abs() / mag
    return e.max().item(), e.pow(2).mean().sqrt().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--ks", default="1024,4096,16384")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    dev = "cuda"
    rows = []
    for k in [int(x) for x in args.ks.split(",")]:
        a = prune_2_4(torch.randn(args.m, k, device=dev)).to(torch.float8_e4m3fn)
        b = torch.randn(args.n, k, device=dev).to(torch.float8_e4m3fn)  # N x K: B's columns K-contiguous
        ad, bd = a.double(), b.double()
        ref = ad @ bd.t()
        mag = ad.abs() @ bd.abs().t()
        one = torch.ones((), device=dev)
        row = {"m": args.m, "n": args.n, "k": k}
        for fast in (False, True):
            key = "cublas_fast" if fast else "cublas_promoted"
            try:
                d = torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.float32, use_fast_accum=fast)
                row[key] = errors(d, ref, mag) + ("f32",)
            except Exception as e:  # noqa: BLE001
                row[key] = str(e)[:120]
        ac = torch._cslt_compress(a)
        bb = b.t()  # K x N, column-major storage
        for out_dtype in (torch.float32, torch.bfloat16):
            try:
                alg = torch._cslt_sparse_mm_search(ac, bb, out_dtype=out_dtype)
                d = torch._cslt_sparse_mm(ac, bb, out_dtype=out_dtype, alg_id=alg)
                row["cusparselt"] = errors(d, ref, mag) + (str(out_dtype).split(".")[-1],)
                break
            except Exception as e:  # noqa: BLE001
                row["cusparselt"] = str(e)[:120]
        rows.append(row)
        print(row, flush=True)
    print("| K | cuBLASLt promoted: max, rms | cuBLASLt fast accumulation: max, rms | cuSPARSELt: max, rms (output) |")
    print("|---|---|---|---|")
    for r in rows:
        def cell(v):
            return f"{v[0]:.2e}, {v[1]:.2e}" + (f" ({v[2]})" if len(v) > 2 else "") if isinstance(v, tuple) else v
        print(f"| {r['k']} | {cell(r['cublas_promoted'])} | {cell(r['cublas_fast'])} | {cell(r['cusparselt'])} |")
    if args.out:
        json.dump({"torch": torch.__version__, "cusparselt": str(torch.backends.cusparselt.version()),
                   "device": torch.cuda.get_device_name(), "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
