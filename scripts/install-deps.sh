#!/usr/bin/env bash
# Installs what spmma needs to build and test, from Debian's packages. Safe to run again.
set -euo pipefail
pkgs=(cmake g++ make libgtest-dev libcli11-dev nlohmann-json3-dev libopenblas-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
# nvcc is optional: the host library builds without CUDA. It is looked up in the usual places.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "note: nvcc found at /usr/local/cuda/bin (add it to PATH to build the CUDA part)"
fi
