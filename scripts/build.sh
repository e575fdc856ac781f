#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds spmma (library, CLI, Python extension, tests) in ./build, Release. Installs missing packages first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh
# The Python extension module too (python/), with the project's virtual environment's interpreter.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSPMMA_PYTHON=ON -DPython_EXECUTABLE="$PWD/.venv/bin/python"
cmake --build build -j"$(nproc)"
