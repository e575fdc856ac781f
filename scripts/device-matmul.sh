#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# GPU matmul on a lent GPU with binaries built on the CPU machine (carried in .devbin/):
# GPU tests, `spmma bench` against cuBLAS, cuSPARSELt through PyTorch, the mma peak microbenchmark.
# Results under $OUT.
set -uo pipefail
out=${OUT:-matmul-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
echo "== GPU tests"
.devbin/spmma_gpu_tests --gtest_brief=1 2>&1 | tail -25 | tee "$out/gpu_tests.txt"
echo "== mma peak"
[ -x .devbin/spmma_mma_peak ] && .devbin/spmma_mma_peak "$out/mma_peak.json" 2>&1 | tail -20 | tee "$out/mma_peak.txt"
echo "== cuSPARSELt (PyTorch)"
PYTHONUNBUFFERED=1 timeout 240 python3 bench/cusparselt_torch.py --types ${TYPES:-bf16,e4m3} ${SHAPES:+--shapes $SHAPES} --out "$out/cslt.json" > "$out/cslt.log" 2>&1 || tail -5 "$out/cslt.log"
echo "== spmma bench"
.devbin/spmma bench --types ${TYPES:-bf16,e4m3} ${SHAPES:+--shapes $SHAPES} --cusparselt-json "$out/cslt.json" --json-out "$out/bench.json" 2>&1 | tee "$out/bench.txt"
