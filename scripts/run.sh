#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds spmma and runs its demo; arguments go to `spmma demo`. Build output goes to stderr so
# that stdout holds only the demo's own output.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/build.sh >&2
exec ./build/spmma demo "$@"
