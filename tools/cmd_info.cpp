// SPDX-License-Identifier: BSD-3-Clause
// `spmma info [--json]`: what a bug report starts from. Version and commit, the CUDA side of the
// build, the driver and runtime, each GPU with its compute capability and the kernel every type
// pair would run (a 4096³ plan with column-major B), the CPU threads and BLAS, and the logging
// settings in force.
#include <cblas.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "provenance.hpp"
#include "spmma/detail/gemm_pairs.hpp"
#include "spmma/error.hpp"
#include "spmma/log.hpp"
#include "spmma/matmul.hpp"
#include "spmma/version.hpp"

#ifdef SPMMA_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace spmma::cli {
namespace {

using nlohmann::json;

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

const char* family_name(KernelFamily f) {
  return f == KernelFamily::sm90 ? "sm90" : f == KernelFamily::sm80 ? "sm80" : f == KernelFamily::decode ? "decode" : "cpu";
}

// The plan each pair of the pair table gets on handle h at 4096³ (its first C/D type).
json kernels_of(Handle& h) {
  json rows = json::array();
  for (const detail::GemmPair& p : detail::kGemmPairs) {
    MatmulDesc d;
    d.m = d.n = d.k = 4096;
    d.a_type = p.a, d.b_type = p.b;
    d.c_type = d.d_type = detail::gemm_outputs(p.a)[0];
    d.b_order = Order::col_major;
    json r = {{"a", type_name(p.a)}, {"b", type_name(p.b)}, {"cd", type_name(d.d_type)}};
    try {
      const PlanInfo i = Plan(h, d).info();
      r["kernel"] = family_name(i.kernel);
      r["instruction"] = i.instruction;
      r["tile"] = std::to_string(i.tile_m) + "x" + std::to_string(i.tile_n);
      r["stages"] = i.stages;
      if (!i.not_sm90_why.empty()) r["not_sm90_why"] = i.not_sm90_why;
    } catch (const Error& e) {
      r["kernel"] = nullptr;
      r["why"] = e.what();
    }
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

json environment() {
  const BuildInfo b = build_info();
  json j;
  j["version"] = b.version;
  j["commit"] = b.commit;
  j["build"] = {{"cuda", b.cuda}, {"cuda_toolkit", b.cuda_version}, {"architectures", b.architectures}};
#ifdef SPMMA_HAVE_CUDA
  int driver = 0, runtime = 0;
  const bool have_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaGetLastError();
  j["cuda_driver"] = have_driver ? json(cuda_version_text(driver)) : json(nullptr);
  j["cuda_runtime"] = cuda_version_text(runtime);
#endif
  j["cpu"] = {{"threads", std::thread::hardware_concurrency()},
              {"blas", openblas_get_config()},
              {"blas_threads", openblas_get_num_threads()}};
  return j;
}

namespace {

json gather() {
  json j = environment();
  j["gpus"] = json::array();
#ifdef SPMMA_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  (void)cudaGetLastError();
  for (int i = 0; i < count; ++i) {
    json g = {{"ordinal", i}};
    try {
      Handle h(Device::gpu, i);
      g["name"] = h.device_name();
      g["compute_capability"] = h.compute_capability();
      g["kernels"] = kernels_of(h);
    } catch (const Error& e) {
      g["usable"] = false;
      g["why"] = e.what();
    }
    j["gpus"].push_back(g);
  }
#endif
  Handle automatic(Device::automatic);
  if (automatic.device() == Device::cpu) j["gpu_fallback_reason"] = automatic.fallback_reason();
  const char* file = std::getenv("SPMMA_LOG_FILE");
  j["logging"] = {{"level", static_cast<int>(log_level())}, {"file", file && *file ? json(file) : json(nullptr)}};
  return j;
}

void print_text(const json& j) {
  std::cout << "spmma " << j["version"].get<std::string>() << " (commit " << j["commit"].get<std::string>() << ")\n";
  const json& b = j["build"];
  std::cout << "build: "
            << (b["cuda"].get<bool>() ? "CUDA " + b["cuda_toolkit"].get<std::string>() + ", architectures " +
                                            b["architectures"].get<std::string>()
                                      : std::string("without CUDA (CPU backend only)"))
            << "\n";
  if (j.contains("cuda_runtime"))
    std::cout << "CUDA: driver " << (j["cuda_driver"].is_null() ? "none" : j["cuda_driver"].get<std::string>())
              << ", runtime " << j["cuda_runtime"].get<std::string>() << "\n";
  if (j["gpus"].empty()) std::cout << "GPUs: none\n";
  for (const json& g : j["gpus"]) {
    if (g.contains("why")) {
      std::cout << "GPU " << g["ordinal"] << ": not usable: " << g["why"].get<std::string>() << "\n";
      continue;
    }
    std::cout << "GPU " << g["ordinal"] << ": " << g["name"].get<std::string>() << "\n";
    for (const json& r : g["kernels"]) {
      std::cout << "  " << r["a"].get<std::string>() << " x " << r["b"].get<std::string>() << " -> "
                << r["cd"].get<std::string>() << ": ";
      if (r["kernel"].is_null()) std::cout << "not supported: " << r["why"].get<std::string>() << "\n";
      else
        std::cout << r["kernel"].get<std::string>() << " " << r["instruction"].get<std::string>() << ", tile "
                  << r["tile"].get<std::string>() << ", " << r["stages"] << " stages\n";
    }
  }
  if (j.contains("gpu_fallback_reason"))
    std::cout << "Device::automatic runs on the CPU: " << j["gpu_fallback_reason"].get<std::string>() << "\n";
  std::cout << "CPU: " << j["cpu"]["threads"] << " threads; BLAS: " << j["cpu"]["blas"].get<std::string>() << " ("
            << j["cpu"]["blas_threads"] << " threads)\n";
  std::cout << "logging: level " << j["logging"]["level"] << ", to "
            << (j["logging"]["file"].is_null() ? std::string("stderr") : j["logging"]["file"].get<std::string>())
            << " (SPMMA_LOG_LEVEL, SPMMA_LOG_FILE)\n";
}

}  // namespace

void register_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Version, build, driver, GPUs and the kernel each type would run, BLAS, "
                                         "logging: what a bug report starts from");
  auto json_out = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "Print one JSON object instead of text");
  cmd->callback([json_out] {
    const json j = gather();
    if (*json_out) std::cout << j.dump(2) << "\n";
    else print_text(j);
  });
}

}  // namespace spmma::cli
