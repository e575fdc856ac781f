#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Where the sm90 kernel spends its time, on a lent GPU machine: Nsight Compute on one launch of
# spgemm_kernel (after bench's warm-ups) of `spmma bench ARGS...`, then its SASS sorted by warp
# stall samples. Writes $OUT/ncu-LABEL.txt: the launch's duration, issued instructions and stall
# breakdown, and the HOT hottest instructions (default 40) with their samples and share.
# Usage: LABEL=gelu bash scripts/device-ncu-hotspots.sh --types bf16 --shapes 8192x8192x8192 --bias --activation gelu
set -uo pipefail
out=${OUT:-ncu-out} label=${LABEL:-run} hot=${HOT:-40}
mkdir -p "$out"
rep=/tmp/ncu-$label
timeout "${NCU_LIMIT:-240}" ncu -k regex:spgemm_kernel --launch-skip 5 -c 1 --import-source no \
  --section SpeedOfLight --section WarpStateStats --section InstructionStats --section SourceCounters \
  -f -o "$rep" .devbin/spmma bench --reps 1 "$@" > /tmp/ncu-$label.log 2>&1
{
  echo "== $label: spmma bench --reps 1 $*"
  ncu -i "$rep.ncu-rep" --page details 2>&1 | grep -E "Duration|Executed Instructions|Issued Instructions|Stall|Warp Cycles|Compute \(SM\) Throughput|Memory Throughput" | head -30
  ncu -i "$rep.ncu-rep" --page source --print-source sass --csv 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
heads = [i for i, r in enumerate(rows) if "Source" in r]
if not heads:
    print("no source page:", rows[:3]); sys.exit()
head = heads[0]
h = rows[head]; body = [r for r in rows[head + 1:] if len(r) == len(h)]
cols = [i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All")]
if not cols:
    print("columns:", h); sys.exit()
col = cols[0]
src = h.index("Source"); total = sum(float(r[col] or 0) for r in body) or 1
print(f"{len(body)} SASS instructions, {total:.0f} stall samples; hottest:")
for r in sorted(body, key=lambda r: -float(r[col] or 0))[:int(sys.argv[1])]:
    print(f"{float(r[col] or 0) / total:6.1%}  {r[0]:>6}  {r[src]}")
' "$hot"
} > "$out/ncu-$label.txt" 2>&1
tail -5 /tmp/ncu-$label.log >> "$out/ncu-$label.txt"
