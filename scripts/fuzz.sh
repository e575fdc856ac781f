#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan; the CMake preset fuzz in
# ./build-fuzz) and runs each for a bounded time from its seed corpus (tests/fuzz/corpus/<name>).
# A crash, a sanitizer report, a broken invariant, an input slower than 10 s, more than 2 GB of
# memory or one allocation above that fails the run; the input is saved under
# build-fuzz/fuzz-out/<name>/artifacts/ (replay it: build-fuzz/tests/fuzz/fuzz_<name> <file>).
#   FUZZ_SECONDS   seconds per target (default 60); the targets run side by side, one per core
#   FUZZ_TARGETS   which targets (default: every one built, e.g. "npy safetensors")
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh fuzz
seconds=${FUZZ_SECONDS:-60}

cmake --preset fuzz
cmake --build --preset fuzz -j"$(nproc)"

targets=()
for t in ${FUZZ_TARGETS:-npy safetensors}; do
  if [ -x "build-fuzz/tests/fuzz/fuzz_$t" ]; then targets+=("$t"); else echo "fuzz.sh: no target fuzz_$t" >&2; fi
done
((${#targets[@]})) || { echo "fuzz.sh: nothing to run" >&2; exit 1; }

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:print_stacktrace=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
pids=()
for t in "${targets[@]}"; do
  out="build-fuzz/fuzz-out/$t"
  rm -rf "$out"
  mkdir -p "$out/corpus" "$out/artifacts"
  # New inputs go to $out/corpus; the committed seeds are only read.
  "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -dict="tests/fuzz/$t.dict" -artifact_prefix="$out/artifacts/" -print_final_stats=1 \
    "$out/corpus" "tests/fuzz/corpus/$t" > "$out/log.txt" 2>&1 &
  pids+=($!)
done

fail=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  out="build-fuzz/fuzz-out/$t"
  rc=0
  wait "${pids[$i]}" || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log.txt")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/log.txt")
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$out/log.txt" | tail -1 || true)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz_$t: ok, ${runs:-?} inputs in ${seconds} s (${speed:-?}/s), ${cov:-no coverage line}"
  else
    fail=1
    echo "fuzz_$t: FAILED (exit $rc) after ${runs:-?} inputs; the end of $out/log.txt:"
    grep -v '^#[0-9]' "$out/log.txt" | tail -60
    echo "fuzz_$t: saved inputs:"; ls -l "$out/artifacts/"
  fi
done
exit $fail
