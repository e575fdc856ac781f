// SPDX-License-Identifier: BSD-3-Clause
// What a measurement was taken with, for `spmma info` and every `bench` record (one source):
// spmma's version and commit, the build, the CUDA driver and runtime, the CPU's BLAS; and the
// command line it was run with.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace spmma::cli {

// version, commit, build {cuda, cuda_toolkit, architectures}, cuda_driver, cuda_runtime (CUDA
// builds), cpu {threads, blas, blas_threads}. cmd_info.cpp.
nlohmann::json environment();

// The command line as the user typed it (words joined by spaces; set by main). spmma.cpp.
void set_command_line(int argc, char** argv);
const std::string& command_line();

// Now, in UTC, ISO 8601 to the second ("2026-11-23T12:00:00Z").
std::string utc_now();

}  // namespace spmma::cli
