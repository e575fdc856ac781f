#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The CPU tests and the CLI tests under AddressSanitizer (+ LeakSanitizer) and UndefinedBehaviorSanitizer:
# host only (no CUDA), g++ -O1 -g, the CMake preset asan-ubsan (CMakePresets.json) in ./build-asan.
# Any sanitizer report fails the run, also one from a CLI process that a test spawns and whose
# exit status the test would accept (docs/testing.md). Arguments go to ctest (e.g. -R Npy).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh

# The preset sets halt_on_error, detect_leaks, print_stacktrace and exitcode=86 (an exit status
# spmma itself never uses: it has 0, 1, 2 and 77); what is exported here comes after them.
# log_path: every ASan / LSan report of every process goes to a file under build-asan/sanitizer-logs,
# which is checked at the end. (UBSan reports go to stderr whatever log_path says, and a process
# with one exits 86.)
logs="$PWD/build-asan/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
export ASAN_OPTIONS="log_path=$logs/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

report_logs() {
  local found=0 f
  for f in "$logs"/asan*; do
    [ -e "$f" ] || continue
    found=1
    echo "==== sanitizer report: $f" >&2
    cat "$f" >&2
  done
  return $found
}
trap 'report_logs || true' ERR

cmake --preset asan-ubsan
cmake --build --preset asan-ubsan -j"$(nproc)"
rc=0
ctest --preset asan-ubsan -L cpu -j"$(nproc)" "$@" || rc=$?
if ! report_logs; then
  echo "sanitize.sh: sanitizer reports above (build-asan/sanitizer-logs)" >&2
  exit 1
fi
exit $rc
