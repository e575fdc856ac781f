#!/usr/bin/env bash
# Issue 8 on a lent GPU, in one call (binaries built here by scripts/pack-robustness.sh and
# carried in .devpack/): the GPU tests of the default build; the same tests from a PTX-only
# build (compute_89, compiled by the driver: the sm80 kernel for every type) and from an
# sm_80-only build (nothing loads on sm_90: refused with the reason); compute-sanitizer memcheck,
# racecheck and synccheck over the GPU tests; a bench of the kernels' main shapes (speed must
# not move). Results under $OUT (at most 8 files come back).
set -uo pipefail
out=${OUT:-robust-out}
mkdir -p "$out"
bash scripts/device-unpack.sh > /dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$out/summary.txt"
date -u +"%Y-%m-%d %H:%M UTC" | tee -a "$out/summary.txt"
step() {  # step NAME TIMEOUT CMD...: output to $OUT/NAME.txt, one line of status to the summary
  local name=$1 limit=$2
  shift 2
  local t0
  t0=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc after $(($(date +%s) - t0)) s" | tee -a "$out/summary.txt"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[  build   \]|ERROR SUMMARY|tests? (passed|failed)" "$out/$name.txt" | head -20 | tee -a "$out/summary.txt"
}
no_death=-Robust.StickyErrorIsReportedAsEarlier
step gpu_tests 560 .devbin/spmma_gpu_tests --gtest_brief=1
step gpu_tests_ptx89 560 .devbin/spmma_gpu_tests_ptx89 --gtest_brief=1 --gtest_filter=-Robust.LaunchLimits
step gpu_tests_sm80 120 .devbin/spmma_gpu_tests_sm80 --gtest_brief=1
# Sanitizers: every GPU test but the largest sizes (LaunchLimits) and the deliberate fault.
step memcheck 590 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
  .devbin/spmma_gpu_tests --gtest_brief=1 --gtest_filter=-Robust.LaunchLimits:Robust.StickyErrorIsReportedAsEarlier
small=MatmulGpu.EveryTypeAgainstADenseReference:MatmulGpu.SplitKAndTileEdges:Robust.BLayoutsTheKernelsCannotReadInPlace:Robust.GraphCaptureAndSynchronisation
{
  for tool in racecheck synccheck; do
    echo "== compute-sanitizer --tool $tool"
    timeout 280 compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 .devbin/spmma_gpu_tests --gtest_brief=1 --gtest_filter=$small
    echo "$tool: exit $?"
  done
} > "$out/race_sync.txt" 2>&1
grep -E "^(racecheck|synccheck): exit|ERROR SUMMARY|RACECHECK SUMMARY" "$out/race_sync.txt" | tee -a "$out/summary.txt"
step bench 300 .devbin/spmma bench --types bf16,e4m3,s8,s4 \
  --shapes 8192x8192x8192,4096x16x4096,4096x128x4096,14336x2048x4096 --reps 20 --json-out "$out/bench.json"
grep -vE "^spmma bench on" "$out/bench.txt" | head -40
