#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds what scripts/device-robustness.sh runs and packs it into .devpack/bins.tgz (under the
# device tool's 64 MiB): the CLI and the GPU tests of the default build (./build), and the GPU
# tests of two more builds, one with PTX only (compute_89) and one with sm_80 machine code only.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmake --build build -j"$(nproc)" --target spmma_cli spmma_gpu_tests
for v in "ptx89:89-virtual" "sm80:80-real"; do
  name=${v%%:*} archs=${v#*:}
  cmake -S . -B "build-$name" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$archs" > /dev/null
  cmake --build "build-$name" -j"$(nproc)" --target spmma_gpu_tests
done
rm -rf .devpack/stage && mkdir -p .devpack/stage
strip -o .devpack/stage/spmma build/spmma
strip -o .devpack/stage/spmma_gpu_tests build/tests/gpu/spmma_gpu_tests
strip -o .devpack/stage/spmma_gpu_tests_ptx89 build-ptx89/tests/gpu/spmma_gpu_tests
strip -o .devpack/stage/spmma_gpu_tests_sm80 build-sm80/tests/gpu/spmma_gpu_tests
# An earlier CLI for a before/after bench (OLD_SPMMA=path/to/spmma), when given.
[ -n "${OLD_SPMMA:-}" ] && strip -o .devpack/stage/spmma_old "$OLD_SPMMA"
tar -C .devpack/stage -czf .devpack/bins.tgz .
rm -rf .devpack/stage
ls -la .devpack/bins.tgz
