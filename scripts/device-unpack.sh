#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Unpacks .devpack/bins.tgz (binaries built on the CPU machine, packed to fit the device tool's
# carry limit) into .devbin/ on the lent GPU machine.
set -euo pipefail
mkdir -p .devbin
[ -f .devpack/bins.tgz ] && tar -C .devbin -xf .devpack/bins.tgz  # gzip or xz: tar finds which
ls .devbin
