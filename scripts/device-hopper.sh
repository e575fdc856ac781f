#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 10 (Hopper kernel v2) on a lent H100, in one call, over binaries built here and packed
# in .devpack/ (scripts/device-unpack.sh): the GPU tests named by TESTS (a gtest filter; all by
# default), then `spmma bench` alternating between plan options, ROUNDS times, same shapes and
# data: CONFIGS="label:--opt=v,--opt=v label2:..." (a label starting with "old" runs the earlier
# binary, .devbin/spmma_old; a label L with a binary .devbin/spmma_L in the pack runs that one, a
# variant built for the comparison). Writes $OUT/summary.txt (the tests' result
# lines and the table of means per configuration), $OUT/tests.txt and $OUT/bench.json.
set -uo pipefail
out=${OUT:-hopper-out}
mkdir -p "$out"
bash scripts/device-unpack.sh > /dev/null
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u +"%Y-%m-%d %H:%M UTC"; } | tee "$out/summary.txt"
if [ "${TESTS:-*}" != none ]; then
  t0=$(date +%s)
  timeout "${TEST_LIMIT:-300}" .devbin/spmma_gpu_tests --gtest_brief=1 --gtest_filter="${TESTS:-*}" > "$out/tests.txt" 2>&1
  echo "tests (${TESTS:-*}): exit $? after $(($(date +%s) - t0)) s" | tee -a "$out/summary.txt"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests? (passed|failed)" "$out/tests.txt" | head -20 | tee -a "$out/summary.txt"
fi
if [ -n "${NCU:-}" ]; then
  # Nsight Compute on one launch of the sm90 or decode kernel (after bench's warm-ups) per "type:MxNxK"
  # of NCU: throughput, memory, warp stalls.
  for case in $NCU; do
    t=${case%%:*} sh=${case#*:}
    timeout 120 ncu -k regex:"spgemm_kernel|decode_kernel" --launch-skip 5 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section WarpStateStats --section ComputeWorkloadAnalysis --section Occupancy \
      .devbin/spmma bench --types "$t" --shapes "$sh" --reps 1 > /tmp/ncu_$t.txt 2>&1
    { echo "== ncu $t $sh"; grep -E "Duration|Throughput|Busy|Pipe Util|Stall|Warp Cycles|Eligible|Issued Warp|L2 Hit|Achieved Occ" /tmp/ncu_$t.txt | head -40; } >> "$out/ncu.txt"
  done
fi
[ -z "${CONFIGS:-}" ] && exit 0
rm -f /tmp/hb_*.json
bench_args=()
[ -n "${CSLT_FILE:-}" ] && bench_args=(--cusparselt-json "$CSLT_FILE")  # measured earlier, carried
if [ -n "${CSLT_TYPES:-}" ]; then
  # The peer on the same shapes, first: PyTorch's bundled cuSPARSELt, best algorithm per shape,
  # in the L2 state(s) CSLT_L2 names (hot, cold or both; hot by default).
  t0=$(date +%s)
  PYTHONUNBUFFERED=1 timeout "${CSLT_LIMIT:-240}" python3 bench/cusparselt_torch.py --types "$CSLT_TYPES" --shapes "$SHAPES" \
    ${CSLT_L2:+--l2 "$CSLT_L2"} --out "$out/cslt.json" > /tmp/cslt.log 2>&1
  echo "cuSPARSELt ($CSLT_TYPES): exit $? after $(($(date +%s) - t0)) s" | tee -a "$out/summary.txt"
  tail -3 /tmp/cslt.log >> "$out/summary.txt"
  [ -s "$out/cslt.json" ] && bench_args=(--cusparselt-json "$out/cslt.json")
fi
for i in $(seq "${ROUNDS:-2}"); do
  for cfg in $CONFIGS; do
    label=${cfg%%:*} vars=${cfg#*:} bin=spmma
    [[ $label == old* ]] && bin=spmma_old  # labels old*: the earlier binary (OLD_SPMMA of the pack)
    [ -x ".devbin/spmma_$label" ] && bin=spmma_$label
    timeout "${BENCH_LIMIT:-120}" .devbin/$bin bench ${vars//,/ } --types "${TYPES:-bf16,e4m3,s8}" --shapes "$SHAPES" \
      --reps "${REPS:-20}" "${bench_args[@]}" --json-out "/tmp/hb_${label}_$i.json" > /dev/null 2>&1
    echo "bench $label round $i: exit $?" >> "$out/summary.txt"
  done
done
python3 - "$CONFIGS" <<'PY' | tee -a "$out/summary.txt"
import glob, json, sys, statistics as st
labels = [c.split(":")[0] for c in sys.argv[1].split()]
rows, allrecs = {}, []
for lab in labels:
    for f in sorted(glob.glob(f"/tmp/hb_{lab}_*.json")):
        for r in json.load(open(f)):
            r["config"] = lab
            allrecs.append(r)
            rows.setdefault((r["m"], r["n"], r["k"], r["type"], r.get("l2", "hot")), {}).setdefault(lab, []).append(r)
print("shape type | " + " | ".join(f"{l} TFLOP/s (rounds)" for l in labels) + " | cuBLAS | cuSPARSELt | " +
      " | ".join(f"{l}/{labels[0]}" for l in labels[1:]) + " | " + " | ".join(f"{l}/cuSPARSELt" for l in labels))
ratios = {l: [] for l in labels[1:]}
for (m, n, k, t, l2), v in rows.items():
    if not all(l in v for l in labels):
        continue
    means = {l: st.mean(r["spmma_tflops"] for r in v[l]) for l in labels}
    cub = st.mean(r["cublas_tflops"] for l in labels for r in v[l] if r.get("cublas_tflops"))
    bad = "" if all(r["verified"] for l in labels for r in v[l]) else "  NOT VERIFIED"
    for l in labels[1:]:
        ratios[l].append(means[l] / means[labels[0]])
    cs = [r["cusparselt_tflops"] for l in labels for r in v[l] if r.get("cusparselt_tflops")]
    csm = st.mean(cs) if cs else 0
    print(f"{m}x{n}x{k} {t} {l2} | " + " | ".join(" ".join(f"{r['spmma_tflops']:.1f}" for r in v[l]) for l in labels) +
          f" | {cub:.1f} | {csm:.1f} | " + " | ".join(f"{means[l] / means[labels[0]]:.3f}" for l in labels[1:]) + " | " +
          " | ".join(f"{means[l] / csm:.2f}" if csm else "-" for l in labels) + bad)
for l, rs in ratios.items():
    if rs:
        print(f"{l}/{labels[0]}: {len(rs)} rows, min {min(rs):.3f}, max {max(rs):.3f}, geomean {st.geometric_mean(rs):.3f}")
json.dump(allrecs, open(sys.argv[0] if False else "/tmp/hb_all.json", "w"))
PY
cp /tmp/hb_all.json "$out/bench.json"
