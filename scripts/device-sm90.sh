#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Quick loop for the sm90 kernel on a lent H100 (binaries packed in .devpack/, see
# scripts/device-unpack.sh): GPU tests, then `spmma bench` of a few shapes under each
# configuration in CONFIGS ("label:--option=value,--option=value label2:..." with spmma bench's
# plan options --kernel, --tile-n, --splits, --group-m; "default:" for none).
set -uo pipefail
out=${OUT:-sm90-out}
mkdir -p "$out"
bash scripts/device-unpack.sh > /dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
echo "== GPU tests"
timeout 300 .devbin/spmma_gpu_tests --gtest_brief=1 > "$out/gpu_tests.txt" 2>&1; echo "rc=$?"
grep -v "Google Test trace\|^Failed$" "$out/gpu_tests.txt" | tail -25
shapes=${SHAPES:-8192x8192x8192,4096x16x4096,4096x128x4096,14336x2048x4096}
for cfg in ${CONFIGS:-default:}; do
  label=${cfg%%:*}; vars=${cfg#*:}
  echo "== bench $label ($vars) types ${TYPES:-bf16,e4m3}"
  timeout 200 .devbin/spmma bench ${vars//,/ } --types ${TYPES:-bf16,e4m3} --shapes $shapes --reps ${REPS:-20} ${BENCH_ARGS:-} \
    --json-out "$out/bench_$label.json" 2>&1 | grep -v "^spmma bench on\|^shape" | tee "$out/bench_$label.txt"
done
if [ -n "${NCU:-}" ]; then
  # Nsight Compute on one launch of the sparse kernel: NCU="type:MxNxK".
  t=${NCU%%:*}; sh=${NCU#*:}
  echo "== ncu $t $sh"
  timeout 240 ncu -k regex:spgemm -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section ComputeWorkloadAnalysis .devbin/spmma bench --types "$t" --shapes "$sh" --reps 1 > "$out/ncu_$t.txt" 2>&1
  grep -E "Throughput|Busy|Pipe|Shared|Stall|Warp Cycles|Issued|Eligible|Active Warps|Duration|L2 Hit|Bandwidth|Elapsed" "$out/ncu_$t.txt" | head -60
fi
