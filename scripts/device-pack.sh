#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Packs what a lent GPU machine needs from this one into .devpack/ (ignored by git; name it in the
# device call's carry), within the call's 64 MiB: bins.tgz, the stripped CLI and GPU test binary
# of build/ plus any extra binaries named as NAME=PATH arguments (unpacked as .devbin/NAME by
# scripts/device-unpack.sh); deps.tgz, OpenBLAS (library and cblas.h) and nlohmann-json, which
# the device image lacks and scripts/device-python.sh needs to build the Python module there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bins" "$tmp/deps/lib" "$tmp/deps/include" "$tmp/deps/share/cmake" .devpack
strip -o "$tmp/bins/spmma" build/spmma
strip -o "$tmp/bins/spmma_gpu_tests" build/tests/gpu/spmma_gpu_tests
for extra in "$@"; do strip -o "$tmp/bins/${extra%%=*}" "${extra#*=}"; done
tar -C "$tmp/bins" -czf .devpack/bins.tgz .
lib=/usr/lib/x86_64-linux-gnu
cp -L $lib/libopenblas.so.0 $lib/libgfortran.so.5 $lib/libquadmath.so.0 "$tmp/deps/lib/"
ln -s libopenblas.so.0 "$tmp/deps/lib/libopenblas.so"
cp /usr/include/x86_64-linux-gnu/cblas.h /usr/include/x86_64-linux-gnu/openblas_config.h "$tmp/deps/include/"
cp -r /usr/include/nlohmann "$tmp/deps/include/"
cp -r /usr/share/cmake/nlohmann_json "$tmp/deps/share/cmake/"
tar -C "$tmp" -czf .devpack/deps.tgz deps
du -ch .devpack/*.tgz
