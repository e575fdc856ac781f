#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 12's decode sweep on a lent H100 in one call (binaries packed in .devpack/, see
# scripts/device-unpack.sh): cuSPARSELt through PyTorch on the decode shapes (held-stream events
# and the profiler's kernel time), then `spmma bench --sweep decode` on the same shapes, types and
# L2 modes with those records beside it, D column-major (a linear layer's Y = X·Wᵀ). Writes
# $OUT/cslt-decode.json, $OUT/bench-decode.json, $OUT/decode.txt (the printed table) and
# $OUT/decode.md (docs/benchmarks.md's tables: scripts/benchmarks_md.py --decode, --sequence and
# --targets).
# TYPES (default bf16,e4m3), CSLT_LIMIT and BENCH_LIMIT (seconds) as environment variables;
# COMPARE="--opt ..." runs the sweep's cold rows once more with those bench options (for example
# --no-dependent-launch), into $OUT/bench-decode-compare.json, and prints both side by side.
set -uo pipefail
out=${OUT:-decode-out}
mkdir -p "$out"
bash scripts/device-unpack.sh > /dev/null
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u +"%Y-%m-%d %H:%M UTC"; } | tee "$out/gpu.txt"
types=${TYPES:-bf16,e4m3}
t0=$(date +%s)
PYTHONUNBUFFERED=1 timeout "${CSLT_LIMIT:-300}" python3 bench/cusparselt_torch.py --sweep decode --types "$types" \
  --out "$out/cslt-decode.json" > "$out/cslt.log" 2>&1
echo "cuSPARSELt: exit $? after $(($(date +%s) - t0)) s"
t0=$(date +%s)
timeout "${BENCH_LIMIT:-240}" .devbin/spmma bench --sweep decode --types "$types" --d-order col \
  --cusparselt-json "$out/cslt-decode.json" --json-out "$out/bench-decode.json" > "$out/decode.txt" 2>&1
echo "spmma bench: exit $? after $(($(date +%s) - t0)) s"
if [ -n "${COMPARE:-}" ]; then
  t0=$(date +%s)
  timeout "${BENCH_LIMIT:-240}" .devbin/spmma bench --sweep decode --types "$types" --d-order col --l2 cold $COMPARE \
    --cusparselt-json "$out/cslt-decode.json" --json-out "$out/bench-decode-compare.json" > "$out/decode-compare.txt" 2>&1
  echo "spmma bench $COMPARE: exit $? after $(($(date +%s) - t0)) s"
fi
{ python3 scripts/benchmarks_md.py --decode "$out/bench-decode.json"; echo
  python3 scripts/benchmarks_md.py --sequence "$out/bench-decode.json"; echo
  python3 scripts/benchmarks_md.py --targets "$out/bench-decode.json"; } > "$out/decode.md" 2>&1
cat "$out/decode.md"
if [ -n "${COMPARE:-}" ]; then
  python3 - "$out/bench-decode.json" "$out/bench-decode-compare.json" <<'PY' | tee "$out/compare.md"
import json, statistics as st, sys
a = {(r["type"], r["m"], r["n"], r["k"]): r for r in json.load(open(sys.argv[1])) if r["l2"] == "cold"}
b = {(r["type"], r["m"], r["n"], r["k"]): r for r in json.load(open(sys.argv[2])) if r["l2"] == "cold"}
print("| type | M×N×K | alone: default / compared | in sequence: default / compared |")
print("|---|---|---|---|")
alone, seq = [], []
for key, r in a.items():
    c = b.get(key)
    if not c or not r.get("sequence") or not c.get("sequence"):
        continue
    x, y = c["spmma_ms"] / r["spmma_ms"], c["sequence"]["spmma_ms"] / r["sequence"]["spmma_ms"]
    alone.append(x), seq.append(y)
    print(f"| {key[0]} | {key[1]}×{key[2]}×{key[3]} | {x:.3f} | {y:.3f} |")
if seq:
    print(f"speed-up of the default over the compared: alone geomean {st.geometric_mean(alone):.3f} "
          f"({min(alone):.3f}-{max(alone):.3f}), in sequence {st.geometric_mean(seq):.3f} ({min(seq):.3f}-{max(seq):.3f})")
PY
fi
