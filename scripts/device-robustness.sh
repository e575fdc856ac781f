#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 8 on a lent GPU, in one call (binaries built here by scripts/pack-robustness.sh and
# carried in .devpack/): the GPU tests of the default build; the same tests from a PTX-only
# build (compute_89, compiled by the driver: the sm80 kernel for every type) and from an
# sm_80-only build (nothing loads on sm_90: refused with the reason); compute-sanitizer memcheck,
# racecheck and synccheck over the GPU tests; a bench of the kernels' main shapes (speed must
# not move). Results under $OUT (at most 8 files come back). A call runs at most 10 minutes, so
# PART=tests (the default) and PART=sanitizers are two calls on the same warm machine.
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
if [ "${PART:-tests}" = tests ]; then
  step gpu_tests 250 .devbin/spmma_gpu_tests --gtest_brief=1
  step gpu_tests_ptx89 200 .devbin/spmma_gpu_tests_ptx89 --gtest_brief=1 --gtest_filter=-Robust.LaunchLimits
  step gpu_tests_sm80 40 .devbin/spmma_gpu_tests_sm80 --gtest_brief=1
  if [ -x .devbin/spmma_old ]; then
    # Before / after, alternating, same shapes, same process order: the speed must not move.
    shapes=8192x8192x8192,4096x16x4096,14336x2048x4096
    for i in 1 2; do
      for bin in spmma_old spmma; do
        echo "== $bin (round $i)"
        timeout 60 .devbin/$bin bench --types bf16,e4m3,s8 --shapes $shapes --reps 30 --json-out /tmp/ab_${bin}_$i.json |
          grep -vE "^spmma bench on|^shape"
      done
    done > "$out/bench.txt" 2>&1
    python3 - "$out" <<'PY' | tee -a "$out/summary.txt"
import json, sys, statistics as st
out = sys.argv[1]
rows = {}
for bin in ("spmma_old", "spmma"):
    for i in (1, 2):
        for r in json.load(open(f"/tmp/ab_{bin}_{i}.json")):
            rows.setdefault((r["m"], r["n"], r["k"], r["type"]), {}).setdefault(bin, []).append((r["spmma_tflops"], r["spmma_host_us"]))
print("shape type: old TFLOP/s (2 runs) | new TFLOP/s (2 runs) | new/old | host us old -> new")
for key, v in rows.items():
    o, n = [t for t, _ in v["spmma_old"]], [t for t, _ in v["spmma"]]
    ho, hn = [h for _, h in v["spmma_old"]], [h for _, h in v["spmma"]]
    print(f"{key[0]}x{key[1]}x{key[2]} {key[3]}: {o[0]:.1f} {o[1]:.1f} | {n[0]:.1f} {n[1]:.1f} | {st.mean(n)/st.mean(o):.3f} | {st.mean(ho):.1f} -> {st.mean(hn):.1f}")
PY
  fi
  step bench_s4 60 .devbin/spmma bench --types s4 --shapes 8192x8192x8192,4096x16x4096 --reps 10 --json-out "$out/bench.json"
elif [ "${PART}" = small ]; then
  # The small-N shapes, where Plan::run's host time shows in the bench's per-call timing:
  # before / after alternating, twice.
  shapes=4096x16x4096,4096x128x4096,4096x16x14336,14336x16x4096,28672x16x8192
  for i in 1 2; do
    for bin in spmma_old spmma; do
      timeout 100 .devbin/$bin bench --types bf16,e4m3 --shapes $shapes --reps 30 --json-out /tmp/s_${bin}_$i.json > /dev/null 2>&1
    done
  done
  python3 - <<'PY' | tee "$out/small.txt"
import json, statistics as st
rows = {}
for bin in ("spmma_old", "spmma"):
    for i in (1, 2):
        for r in json.load(open(f"/tmp/s_{bin}_{i}.json")):
            rows.setdefault((r["m"], r["n"], r["k"], r["type"]), {}).setdefault(bin, []).append((r["spmma_tflops"], r["spmma_host_us"]))
for (m, n, k, t), v in rows.items():
    o, nw = [x for x, _ in v["spmma_old"]], [x for x, _ in v["spmma"]]
    ho, hn = [h for _, h in v["spmma_old"]], [h for _, h in v["spmma"]]
    print(f"{m}x{n}x{k} {t}: {o[0]:.1f} {o[1]:.1f} | {nw[0]:.1f} {nw[1]:.1f} | {st.mean(nw)/st.mean(o):.3f} | host us {st.mean(ho):.1f} -> {st.mean(hn):.1f}")
PY
elif [ "${PART}" = ab ]; then
  # Every default shape of the types in $TYPES (default: bench's own, bf16 and e4m3): the earlier
  # binary and the current one alternating, $ROUNDS times (same call, same data, same order);
  # each row's ratio is of the means over the rounds.
  types=${TYPES:-bf16,e4m3} rounds=${ROUNDS:-2} reps=${REPS:-20}
  for i in $(seq "$rounds"); do
    for bin in spmma_old spmma; do
      timeout 250 .devbin/$bin bench --types "$types" --reps "$reps" --json-out /tmp/ab_${bin}_$i.json >> "$out/bench_$bin.txt" 2>&1
      echo "$bin round $i: exit $?" | tee -a "$out/summary.txt"
    done
  done
  python3 - "$rounds" <<'PY' | tee "$out/ab_$types.txt"
import json, sys, os, statistics as st
rows = {}
for i in range(1, int(sys.argv[1]) + 1):
    for bin in ("spmma_old", "spmma"):
        f = f"/tmp/ab_{bin}_{i}.json"
        if os.path.exists(f):
            for r in json.load(open(f)):
                rows.setdefault((r["m"], r["n"], r["k"], r["type"]), {}).setdefault(bin, []).append(
                    (r["spmma_tflops"], r["verified"], r["spmma_host_us"]))
ratios = []
print("shape type: before TFLOP/s (rounds) | after TFLOP/s (rounds) | after/before | host us before -> after")
for (m, n, k, t), v in rows.items():
    if "spmma_old" in v and "spmma" in v:
        o, a = [x[0] for x in v["spmma_old"]], [x[0] for x in v["spmma"]]
        ratios.append(st.mean(a) / st.mean(o))
        ok = all(x[1] for x in v["spmma"])
        print(f"{m}x{n}x{k} {t}: {' '.join(f'{x:.1f}' for x in o)} | {' '.join(f'{x:.1f}' for x in a)} | {ratios[-1]:.3f} | "
              f"{st.mean(x[2] for x in v['spmma_old']):.1f} -> {st.mean(x[2] for x in v['spmma']):.1f}{'' if ok else '  NOT VERIFIED'}")
if ratios:
    print(f"{len(ratios)} rows, after/before: min {min(ratios):.3f}, max {max(ratios):.3f}, geomean {st.geometric_mean(ratios):.3f}")
PY
elif [ "${PART}" = perf ]; then
  # Kernel durations of the earlier and the current binary under Nsight Compute (serialised,
  # caches flushed: the kernel alone, without the host's share of a bench call): the 6th launch
  # of each case (after bench's 5 warm-ups), twice, alternating.
  for i in 1 2; do
    for case in bf16:14336x2048x4096 bf16:8192x8192x8192 e4m3:14336x2048x4096 s8:14336x2048x4096 bf16:4096x16x4096; do
      for bin in spmma_old spmma; do
        t=${case%%:*} shape=${case#*:}
        us=$(timeout 100 ncu --metrics gpu__time_duration.sum -k regex:spgemm_kernel --launch-skip 5 -c 1 \
          .devbin/$bin bench --types "$t" --shapes "$shape" --reps 1 2>&1 | awk '/gpu__time_duration.sum/ {print $(NF-1), $(NF)}')
        echo "round $i $case $bin: $us"
      done
    done
  done | tee -a "$out/summary.txt"
else
  # Every GPU test but the largest sizes (LaunchLimits) and the deliberate fault.
  step memcheck 330 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
    .devbin/spmma_gpu_tests --gtest_brief=1 --gtest_filter=-Robust.LaunchLimits:Robust.StickyErrorIsReportedAsEarlier
  # racecheck tracks every shared-memory access (minutes per test): the kernels' every path
  # (sm90 and sm80, split K, B repacked, graph capture) on the smaller tests.
  small=MatmulGpu.EveryTypeAgainstADenseReference:MatmulGpu.SplitKAndTileEdges:Robust.GraphCaptureAndSynchronisation
  for tool in racecheck synccheck; do
    step $tool 200 compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 \
      .devbin/spmma_gpu_tests --gtest_brief=1 --gtest_filter=$small
  done
fi
