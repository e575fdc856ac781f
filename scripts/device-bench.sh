#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The H100 tables of docs/benchmarks.md in one call on a lent GPU (binaries packed in .devpack/,
# see scripts/device-unpack.sh): GPU tests, cuSPARSELt through PyTorch, `spmma bench` for every
# type, the demo. Results under $OUT; docs: python3 scripts/benchmarks_md.py $OUT/bench.json.
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out" /tmp/dev
bash scripts/device-unpack.sh > /dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
echo "== GPU tests"
timeout 300 .devbin/spmma_gpu_tests --gtest_brief=1 > "$out/gpu_tests.txt" 2>&1; echo "rc=$?"; tail -3 "$out/gpu_tests.txt"
echo "== demo"
timeout 120 .devbin/spmma demo > "$out/demo.txt" 2>&1; echo "rc=$?"; cat "$out/demo.txt"
small=8192x8192x8192,4096x16x4096,4096x128x4096,14336x2048x4096
echo "== cuSPARSELt (PyTorch)"
PYTHONUNBUFFERED=1 timeout 240 python3 bench/cusparselt_torch.py --types bf16,e4m3 --out /tmp/dev/c1.json > /tmp/dev/c.log 2>&1
PYTHONUNBUFFERED=1 timeout 150 python3 bench/cusparselt_torch.py --types f16,tf32,s8 --shapes $small --out /tmp/dev/c2.json >> /tmp/dev/c.log 2>&1
python3 -c "import json; json.dump(json.load(open('/tmp/dev/c1.json'))+json.load(open('/tmp/dev/c2.json')), open('$out/cslt.json','w'), indent=1)" \
  || tail -5 /tmp/dev/c.log
echo "== spmma bench"
.devbin/spmma bench --types bf16,e4m3 --cusparselt-json "$out/cslt.json" --json-out /tmp/dev/b1.json | grep -v "^spmma bench on"
.devbin/spmma bench --types f16,tf32,s8,s4 --shapes $small --reps 10 --cusparselt-json "$out/cslt.json" --json-out /tmp/dev/b2.json | grep -v "^spmma bench on\|^shape"
echo "== fp8 fast accumulation"
.devbin/spmma bench --types e4m3 --shapes 8192x8192x8192,4096x4096x4096,14336x2048x4096,4096x8192x14336,16384x16384x16384 \
  --reps 20 --fp8-fast-accum --json-out "$out/bench_fp8_fast.json" | grep -v "^spmma bench on\|^shape"
echo "== sm80 kernel on the H100, for comparison"
.devbin/spmma bench --kernel sm80 --types bf16 --shapes 8192x8192x8192 --reps 10 --json-out /tmp/dev/b3.json | grep -v "^spmma bench on\|^shape"
python3 -c "import json; json.dump(json.load(open('/tmp/dev/b1.json'))+json.load(open('/tmp/dev/b2.json')), open('$out/bench.json','w'), indent=1)"
cp /tmp/dev/b3.json "$out/bench_sm80.json"
