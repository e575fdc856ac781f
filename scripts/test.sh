#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds spmma and runs its test suite (GPU tests too where a GPU and nvcc are present).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j2
# The Python package as built (build/python): its tests, PyTorch's and the real model's included
# (SPMMA_REQUIRE_TORCH: a missing torch, transformers or model fails them rather than skipping);
# the GPU ones skip without a GPU.
PYTHONPATH="$PWD/build/python" SPMMA_REQUIRE_TORCH=1 .venv/bin/python -m pytest -q python/tests
# The install, the examples built against it as a user project would, and their runs.
bash scripts/examples.sh
