#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Markdown table from `spmma bench --json-out FILE` (docs/benchmarks.md), from the JSON alone:
the header says what the records say of themselves (device, driver, runtime, libraries, spmma's
version and commit, date, command, repetitions), the table each row's median and its spread.

    python3 scripts/benchmarks_md.py bench.json
"""
import json
import sys


def f(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def provenance_line(rows):
    p = rows[0].get("provenance") if rows else None
    if not p:  # records from before provenance (2026-11-23): only the device is known
        return f"Device: {rows[0]['device'] if rows else '?'} (the records carry no provenance)."
    parts = [f"Device: {p.get('device')}", f"driver {p.get('cuda_driver') or 'none'}",
             f"CUDA runtime {p.get('cuda_runtime', '-')}"]
    if p.get("cublaslt"):
        parts.append(f"cuBLASLt {p['cublaslt']}")
    peers = {(r["cusparselt_record"].get("torch"), r["cusparselt_record"].get("cusparselt"))
             for r in rows if r.get("cusparselt_record")}
    for torch_v, cslt in sorted(x for x in peers if x[0]):
        parts.append(f"cuSPARSELt {cslt} (PyTorch {torch_v})")
    parts.append(f"spmma {p.get('version')} (commit {p.get('commit')})")
    parts.append(f"{p.get('date_utc')}")
    return ("; ".join(parts) + f". `{p.get('command')}`: {p.get('timer')}, {p.get('reps')} repetitions after "
            f"{p.get('warmup')} warm-up, seed {p.get('seed')}. TFLOP/s are dense-equivalent (2·M·N·K / time).\n")


def main(path):
    rows = json.load(open(path))
    print(provenance_line(rows))
    print("| M | N | K | type | epilogue | spmma | spread (min-p90, ms) | cuBLAS dense | cuSPARSELt | spmma / cuBLAS | "
          "spmma / cuSPARSELt | call (µs) | verified |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cb, cs = r.get("cublas_tflops"), r.get("cusparselt_tflops")
        sp = r["spmma_tflops"]
        t = (r.get("timing_ms") or {}).get("spmma")
        spread = f"{t['min']:.4g}-{t['p90']:.4g}" if t else "-"
        print(f"| {r['m']} | {r['n']} | {r['k']} | {r['type']} | {r.get('epilogue', 'plain')} → {r.get('d_type', '-')} | "
              f"{f(sp)} | {spread} | {f(cb)} | {f(cs)} | {f(sp / cb if cb else None, 2)} | "
              f"{f(sp / cs if cs else None, 2)} | {f(r['spmma_call_us'])} | "
              f"{'yes' if r['verified'] else ('n/a' if r.get('note') else 'NO')} |")


if __name__ == "__main__":
    main(sys.argv[1])
