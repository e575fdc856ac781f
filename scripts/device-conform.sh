#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Conformance on a lent GPU, with a binary built beforehand on the CPU machine:
#   strip -o .devbin/spmma build/spmma   (here)     bash scripts/device-conform.sh   (there)
# Writes conform.json, conform.txt and verified_ids.inc under $OUT (or ./conform-out).
set -uo pipefail
bin=${SPMMA_BIN:-.devbin/spmma}
out=${OUT:-conform-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
start=$(date +%s)
"$bin" conform "$@" --json-out "$out/conform.json" --write-verified "$out/verified_ids.inc" > "$out/conform.txt" 2>&1
rc=$?
echo "conform: exit $rc after $(( $(date +%s) - start )) s"
grep -E "^(finding|[0-9]+ variants)" "$out/conform.txt"
echo "--- rows with mismatches (first 60):"
awk 'NF >= 4 && $3 ~ /^[0-9]+$/ && $3 > 0' "$out/conform.txt" | head -60 | cut -c1-400
exit $rc
