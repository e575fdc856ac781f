#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds spmma (library, CLI, tests) in ./build, Release. Installs missing packages first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
