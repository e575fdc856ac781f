// SPDX-License-Identifier: BSD-3-Clause
// `spmma demo`: the README's main job. A random dense A is pruned to its type's sparsity pattern
// and compressed, multiplied with a random B through the matmul API (include/spmma/matmul.hpp:
// Handle, MatmulDesc, compress with PruneMode::magnitude, Plan, Plan::run with its workspace) on
// the GPU where there is one and on the CPU otherwise, verified against a dense product of the
// pruned A, and timed against that dense product. The measuring is `spmma bench`'s, for one shape
// and type: bench::run_gpu (cuBLASLt dense, device events) or bench::run_cpu (OpenBLAS sgemm dense,
// double-precision reference).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "bench_cpu.hpp"
#include "cli_json.hpp"
#include "commands.hpp"
#include "provenance.hpp"
#include "spmma/error.hpp"
#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#ifdef SPMMA_HAVE_CUDA
#include "spmma/conform.hpp"
#endif

namespace spmma::cli {

namespace {

// The types with a dense baseline on both devices (cuBLAS has no dense GEMM for the others).
constexpr ElemType kDemoTypes[] = {ElemType::bf16, ElemType::f16, ElemType::tf32, ElemType::e4m3, ElemType::s8};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string tflops(double v) { return fmt(v >= 10 ? "%8.1f TFLOP/s" : "%8.4f TFLOP/s", v); }

std::string bytes(double b) {
  return b >= 1 << 20 ? fmt("%.1f MiB", b / (1 << 20)) : b >= 1 << 10 ? fmt("%.1f KiB", b / (1 << 10)) : fmt("%.0f B", b);
}

}  // namespace

void register_demo(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Prune, compress and multiply a random matrix with the matmul API (on the GPU "
                                         "where there is one, else the CPU); verify against and time against dense");
  struct Opts {
    std::string type = "bf16";
    std::optional<int64_t> m, n, k;
    std::optional<int> reps;
    unsigned long long seed = 1;
    bool cpu = false, json = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--type", o->type, "Type of A and B: bf16, f16, tf32, e4m3 or s8 (default bf16)");
  cmd->add_option("--m", o->m, "Rows of A and D (default 4096 on the GPU, 512 on the CPU)");
  cmd->add_option("--n", o->n, "Columns of B and D (default 4096 on the GPU, 512 on the CPU)");
  cmd->add_option("--k", o->k, "Columns of A, rows of B (default 4096 on the GPU, 512 on the CPU)");
  cmd->add_option("--reps", o->reps, "Timed runs, median reported (default 30 on the GPU after 5 warm-ups, 5 on the CPU after 1)");
  cmd->add_option("--seed", o->seed, "Seed of the random matrices");
  cmd->add_flag("--cpu", o->cpu, "Run on the CPU even where a GPU exists");
  cmd->add_flag("--json", o->json,
                "Print one JSON object instead of the text: the fields of a `spmma bench --json` row, and "
                "rel_error, error_bound, checked_rows, pattern, value_bytes, metadata_bytes, dense_bytes, dense_ms, "
                "dense_tflops, speedup, fallback_reason, provenance");
  cmd->callback([o] {
    const ElemType t = parse_elem_type_or_throw(o->type);
    if (std::find(std::begin(kDemoTypes), std::end(kDemoTypes), t) == std::end(kDemoTypes))
      fail(Status::invalid_argument, "demo: --type " + o->type + " has no dense baseline to compare with; choose bf16, f16, tf32, e4m3 or s8");
    if (o->reps && *o->reps < 1) fail(Status::invalid_argument, "demo: --reps " + std::to_string(*o->reps) + " must be at least 1");

    // 1. The device: the GPU when one is usable (Device::automatic), else the CPU.
    Handle h(o->cpu ? Device::cpu : Device::automatic);
    const bool gpu = h.device() == Device::gpu;
    std::string why = o->cpu ? "--cpu" : "built without CUDA";
#ifdef SPMMA_HAVE_CUDA
    if (!gpu && !o->cpu && conform::gpu_available(&why)) why = "the GPU backend cannot use this GPU";
#endif
    const int64_t size = gpu ? 4096 : 512;
    MatmulDesc desc;  // as bench::run_gpu / run_cpu describe it; checked here so that a bad size is named first
    desc.m = o->m.value_or(size), desc.n = o->n.value_or(size), desc.k = o->k.value_or(size);
    desc.a_type = desc.b_type = t;
    desc.c_type = desc.d_type = bench::output_type(t);
    desc.b_order = Order::col_major;
    try {
      desc.validate();
    } catch (const Error& e) {
      fail(e.code(), std::string("demo: --m/--n/--k/--type: ") + e.what());
    }
    // Refused up front with the memory it would need, rather than std::bad_alloc (or the OOM
    // killer) half-way through.
    uint64_t gpu_free = 0;
#ifdef SPMMA_HAVE_CUDA
    if (gpu) gpu_free = bench::gpu_free_memory();
#endif
    bench::require_memory({desc.m, desc.n, desc.k}, t, gpu, true, gpu_free, "demo: --m/--n/--k");

    // 2 and 3. Prune + compress, plan, run, verify and time: bench's machinery for one case.
    bench::Options bo;
    bo.shapes = {{desc.m, desc.n, desc.k}};
    bo.types = {t};
    bo.prune = true;
    bo.seed = o->seed;
    bo.warmup = gpu ? 5 : 1;
    bo.reps = o->reps.value_or(gpu ? 30 : 5);
    std::vector<bench::Row> rows;
    if (gpu) {
#ifdef SPMMA_HAVE_CUDA
      rows = bench::run_gpu(bo);
#endif
    } else {
      rows = bench::run_cpu(bo);
    }
    if (rows.size() != 1) fail(Status::internal, "demo: the bench returned " + std::to_string(rows.size()) + " results, not 1");
    const bench::Row& r = rows[0];
    if (r.checked_rows == 0)  // nothing was compared: the case failed, and its note says why
      fail(Status::not_supported, "demo: " + (r.note.empty() ? std::string("the product was not verified") : r.note));

    const Pattern pattern = pattern_for(t);
    const double bound = bench::error_bound(bench::output_type(t), r.k);
    const double dense_bytes = double(r.m) * r.k * memory_bits(t) / 8;
    const double dense_ms = gpu ? r.cublas_ms : r.cpu_dense_ms;
    const double dense_tflops = 2.0 * r.m * r.n * r.k / (dense_ms * 1e-3) / 1e12;
    if (o->json) {
      // bench's row (one schema for both commands), and what the text shows beyond it.
      nlohmann::json j = bench_row_json(r, h.device_name(), gpu, false);
      j["rel_error"] = r.rel_error;
      j["error_bound"] = bound;
      j["checked_rows"] = r.checked_rows;
      j["pattern"] = pattern_info(pattern).name;
      j["value_bytes"] = r.value_bytes;
      j["metadata_bytes"] = r.metadata_bytes;
      j["dense_bytes"] = static_cast<uint64_t>(dense_bytes);  // whole bytes: every demo type is 8 bits or wider
      j["dense_ms"] = dense_ms;
      j["dense_tflops"] = dense_tflops;
      j["speedup"] = dense_ms / r.spmma_ms;  // sparse / dense speed, as the text's "0.20x"
      j["fallback_reason"] = gpu ? nlohmann::json(nullptr) : nlohmann::json(why);
      j["provenance"] = timed_provenance(h.device_name(), bo, gpu);
      std::cout << j.dump(1) << "\n";
      if (!r.verified) throw CLI::RuntimeError(1);
      return;
    }
    std::cout << "spmma demo on " << h.device_name() << (gpu ? ": GPU backend\n" : ": CPU backend (" + why + ")\n");
    std::cout << "  D = A·B, M x N x K = " << r.m << " x " << r.n << " x " << r.k << ", A and B " << r.type
              << " (B column-major), D " << r.d_type << "\n";
    std::cout << "  prune     random dense A -> " << pattern_info(pattern).name << " by magnitude, on the "
              << (gpu ? "GPU" : "CPU") << " (compress with PruneMode::magnitude)\n";
    std::cout << "  compress  values " << bytes(double(r.value_bytes)) << " + metadata " << bytes(double(r.metadata_bytes))
              << " (dense A " << bytes(dense_bytes) << ")\n";
    std::cout << "  kernel    " << r.kernel << "\n";
    std::cout << "  verify    against " << (gpu ? "cuBLAS dense on the same pruned A, every element"
                                              : "a double-precision dense product on the pruned A, " +
                                                    std::to_string(r.checked_rows) + " of " + std::to_string(r.m) + " rows")
              << "\n";
    std::cout << "            ||D - D_ref|| / ||D_ref|| = " << fmt("%.2e", r.rel_error) << ", worst element "
              << fmt("%.2e", r.max_error) << " (bound " << (bound > 0 ? fmt("%.0e", bound) : "0, exact")
              << "): " << (r.verified ? "ok" : "TOO LARGE") << "\n";
    auto time_line = [](const std::string& label, double ms, double tf) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%-26s%9.3f ms  %s\n", label.c_str(), ms, tflops(tf).c_str());
      return std::string(buf);
    };
    std::cout << "  time      sparse  " << time_line("spmma Plan::run", r.spmma_ms, r.spmma_tflops);
    std::cout << "            dense   "
              << time_line(gpu ? "cuBLASLt " + r.type + ", same A" : "cblas_sgemm f32, same A", dense_ms, dense_tflops);
    std::cout << "            sparse / dense speed: " << fmt("%.2fx", dense_ms / r.spmma_ms) << " (median of " << bo.reps
              << " after " << bo.warmup << " warm-up" << (bo.warmup > 1 ? "s" : "")
              << (gpu ? ", device events" : ", wall clock") << "; TFLOP/s = 2·M·N·K / time)\n";
    if (!gpu) std::cout << "            (the CPU backend does not use the sparsity for speed; the tensor cores do)\n";
    if (!r.verified) throw CLI::RuntimeError(1);
  });
}

}  // namespace spmma::cli
