#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""cuSPARSELt and cuBLAS (through PyTorch) with their calls back to back, for reading the clocks
and power a large GEMM runs at once the power limit holds it (docs/benchmarks.md, "Power and
clocks").

    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
        --format=csv,noheader -lms 20 > smi.csv &
    python3 bench/power_probe.py 8192 > phases.json

bf16 S x S x S (A pruned 2:4, compressed once, cuSPARSELt's best algorithm by its search):
cuSPARSELt 3000 calls back to back, torch.mm 2000 back to back, then cuSPARSELt's held median of
1000 calls (bench/cusparselt_torch.py's held_ms), 0.5 s apart. Prints one JSON object: the phases
with their wall-clock start and end (time.time(), the clock nvidia-smi's timestamps are in), ms
per call and dense-equivalent TFLOP/s; the nvidia-smi samples inside a phase give its clocks.
"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cusparselt_torch import held_ms, prune_2_4  # noqa: E402


def main():
    s = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    a = prune_2_4(torch.randn(s, s, device="cuda", dtype=torch.bfloat16))
    b = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
    ac = torch._cslt_compress(a)
    alg = torch._cslt_sparse_mm_search(ac, b)
    flops = 2.0 * s * s * s
    out = {"shape": [s, s, s], "type": "bf16", "alg_id": int(alg), "phases": []}

    def back_to_back(name, fn, calls):
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.time()
        e0.record()
        for _ in range(calls):
            fn()
        e1.record()
        e1.synchronize()
        ms = e0.elapsed_time(e1) / calls
        out["phases"].append({"name": name, "t0": t0, "t1": time.time(), "ms": ms, "tflops": flops / ms / 1e9})
        time.sleep(0.5)

    back_to_back("cusparselt_back_to_back", lambda: torch._cslt_sparse_mm(ac, b, alg_id=alg), 3000)
    back_to_back("cublas_back_to_back", lambda: torch.mm(a, b), 2000)
    t0 = time.time()
    ms, _ = held_ms(lambda: torch._cslt_sparse_mm(ac, b, alg_id=alg), iters=1000)
    out["phases"].append({"name": "cusparselt_held", "t0": t0, "t1": time.time(), "ms": ms, "tflops": flops / ms / 1e9})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
