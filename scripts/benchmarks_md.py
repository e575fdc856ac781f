#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Markdown table from `spmma bench --json-out FILE` (docs/benchmarks.md).

    python3 scripts/benchmarks_md.py bench.json
"""
import json
import sys


def f(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def main(path):
    rows = json.load(open(path))
    dev = rows[0]["device"] if rows else "?"
    print(f"Device: {dev}. TFLOP/s are dense-equivalent (2·M·N·K / kernel time, median of 30 after warm-up).\n")
    print("| M | N | K | type | spmma | cuBLAS dense | cuSPARSELt | spmma / cuBLAS | spmma / cuSPARSELt | call (µs) | verified |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cb, cs = r.get("cublas_tflops"), r.get("cusparselt_tflops")
        sp = r["spmma_tflops"]
        print(f"| {r['m']} | {r['n']} | {r['k']} | {r['type']} | {f(sp)} | {f(cb)} | {f(cs)} | "
              f"{f(sp / cb if cb else None, 2)} | {f(sp / cs if cs else None, 2)} | {f(r['spmma_call_us'])} | "
              f"{'yes' if r['verified'] else ('n/a' if r.get('note') else 'NO')} |")


if __name__ == "__main__":
    main(sys.argv[1])
