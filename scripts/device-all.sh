#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One call on a lent GPU with binaries built here and carried in .devbin/ (see docs/benchmarks.md):
# GPU tests, the mma peak microbenchmark, cuSPARSELt through PyTorch, `spmma bench`, conformance.
# At most 8 files come back under $OUT.
set -uo pipefail
out=${OUT:-device-out}
mkdir -p "$out" /tmp/dev
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "== GPU tests"
.devbin/spmma_gpu_tests --gtest_brief=1 > "$out/gpu_tests.txt" 2>&1; tail -6 "$out/gpu_tests.txt"
echo "== mma peak"
.devbin/spmma_mma_peak "$out/mma_peak.json" > "$out/mma_peak.txt" 2>&1; tail -16 "$out/mma_peak.txt"
echo "== cuSPARSELt (PyTorch)"
small=8192x8192x8192,4096x16x4096,4096x128x4096,14336x2048x4096
PYTHONUNBUFFERED=1 timeout 200 python3 bench/cusparselt_torch.py --types bf16 --out /tmp/dev/c1.json > /tmp/dev/c.log 2>&1
PYTHONUNBUFFERED=1 timeout 100 python3 bench/cusparselt_torch.py --types f16,e4m3 --shapes $small --out /tmp/dev/c2.json >> /tmp/dev/c.log 2>&1
python3 -c "import json,sys; json.dump(json.load(open('/tmp/dev/c1.json'))+json.load(open('/tmp/dev/c2.json')), open('$out/cslt.json','w'), indent=1)" || tail -5 /tmp/dev/c.log
echo "== spmma bench"
.devbin/spmma bench --types bf16 --cusparselt-json "$out/cslt.json" --json-out /tmp/dev/b1.json
.devbin/spmma bench --types f16,tf32,s8,e4m3 --shapes $small --reps 10 --cusparselt-json "$out/cslt.json" --json-out /tmp/dev/b2.json
python3 -c "import json; json.dump(json.load(open('/tmp/dev/b1.json'))+json.load(open('/tmp/dev/b2.json')), open('$out/bench.json','w'), indent=1)"
echo "== conformance"
start=$(date +%s)
.devbin/spmma conform --json-out "$out/conform.json" --write-verified "$out/verified_ids.inc" > "$out/conform.txt" 2>&1
echo "conform: exit $? after $(( $(date +%s) - start )) s"
grep -E "^(finding|[0-9]+ variants)" "$out/conform.txt"
