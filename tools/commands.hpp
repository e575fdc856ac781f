// SPDX-License-Identifier: BSD-3-Clause
// spmma CLI — each sub-command lives in its own tools/cmd_*.cpp and registers itself here.
#pragma once
#include <CLI/CLI.hpp>

namespace spmma::cli {

void register_variants(CLI::App& app);   // cmd_variants.cpp
void register_emulate(CLI::App& app);    // cmd_emulate.cpp
void register_formats(CLI::App& app);    // cmd_formats.cpp: prune, check, compress, decompress
void register_ptx(CLI::App& app);        // cmd_ptx.cpp: PTX modules for ptxas
void register_conform(CLI::App& app);    // cmd_conform.cpp: hardware conformance
void register_bench(CLI::App& app);      // cmd_bench.cpp: sparse matmul against dense baselines
void register_demo(CLI::App& app);       // cmd_demo.cpp: the README's main job
void register_info(CLI::App& app);       // cmd_info.cpp: version, build, GPUs, kernels, logging

}  // namespace spmma::cli
