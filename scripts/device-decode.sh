#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 12's decode sweep on a lent H100 in one call (binaries packed in .devpack/, see
# scripts/device-unpack.sh): cuSPARSELt through PyTorch on the decode shapes (held-stream events
# and the profiler's kernel time), then `spmma bench --sweep decode` on the same shapes, types and
# L2 modes with those records beside it, D column-major (a linear layer's Y = X·Wᵀ). Writes
# $OUT/cslt-decode.json, $OUT/bench-decode.json, $OUT/decode.txt (the printed table) and
# $OUT/decode.md (docs/benchmarks.md's table: scripts/benchmarks_md.py --decode).
# TYPES (default bf16,e4m3), CSLT_LIMIT and BENCH_LIMIT (seconds) as environment variables.
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
python3 scripts/benchmarks_md.py --decode "$out/bench-decode.json" > "$out/decode.md" 2>&1
cat "$out/decode.md"
