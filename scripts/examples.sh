#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the build in ./build to a prefix (build/install), builds examples/ against it as a
# separate project (find_package(spmma CONFIG), the way a user's project does) and runs every
# example. Needs scripts/build.sh first; called by scripts/test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
prefix=$PWD/build/install
rm -rf "$prefix" build-examples
cmake --install build --prefix "$prefix" > /dev/null
"$prefix/bin/spmma" --version
cmake -S examples -B build-examples -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build build-examples -j"$(nproc)"
mkdir -p build-examples/run
for ex in quickstart_cpu npy_pipeline linear_layer; do
  if [ -x "build-examples/$ex" ]; then
    echo "== example $ex"
    (cd build-examples/run && "../$ex" .)
  fi
done
echo "examples: all passed"
