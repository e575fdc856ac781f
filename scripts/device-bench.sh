#!/usr/bin/env bash
# GPU tests and `spmma bench` (with cuSPARSELt through PyTorch) on a lent GPU, binaries in .devbin/.
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out" /tmp/dev
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
.devbin/spmma_gpu_tests --gtest_brief=1 > "$out/gpu_tests.txt" 2>&1; tail -3 "$out/gpu_tests.txt"
small=8192x8192x8192,4096x16x4096,4096x128x4096,14336x2048x4096
PYTHONUNBUFFERED=1 timeout 200 python3 bench/cusparselt_torch.py --types bf16 --out /tmp/dev/c1.json > /tmp/dev/c.log 2>&1
PYTHONUNBUFFERED=1 timeout 100 python3 bench/cusparselt_torch.py --types f16,e4m3 --shapes $small --out /tmp/dev/c2.json >> /tmp/dev/c.log 2>&1
python3 -c "import json; json.dump(json.load(open('/tmp/dev/c1.json'))+json.load(open('/tmp/dev/c2.json')), open('$out/cslt.json','w'), indent=1)" || tail -5 /tmp/dev/c.log
.devbin/spmma bench --types bf16 --cusparselt-json "$out/cslt.json" --json-out /tmp/dev/b1.json
.devbin/spmma bench --types f16,tf32,s8,e4m3 --shapes $small --reps 10 --cusparselt-json "$out/cslt.json" --json-out /tmp/dev/b2.json
python3 -c "import json; json.dump(json.load(open('/tmp/dev/b1.json'))+json.load(open('/tmp/dev/b2.json')), open('$out/bench.json','w'), indent=1)"
