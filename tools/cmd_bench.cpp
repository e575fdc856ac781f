// `spmma bench`: spmma's sparse matmul against dense baselines, shape by shape, type by type.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench_cpu.hpp"
#include "commands.hpp"
#include "spmma/error.hpp"
#ifdef SPMMA_HAVE_CUDA
#include "spmma/conform.hpp"
#endif

namespace spmma::cli {

namespace {

struct BenchRow {
  int64_t m, n, k;
  std::string type, backend, kernel, note;
  bool verified = false;
  double max_error = 0, spmma_ms = 0, spmma_call_us = 0, spmma_host_us = 0, spmma_tflops = 0, dense_ms = 0;
  std::optional<double> cublas_tflops, cusparselt_tflops, cpu_dense_tflops;
};

std::vector<std::array<int64_t, 3>> parse_shapes(const std::string& s) {
  std::vector<std::array<int64_t, 3>> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::array<int64_t, 3> v{};
    char x1 = 0, x2 = 0;
    std::stringstream is(item);
    if (!(is >> v[0] >> x1 >> v[1] >> x2 >> v[2]) || (x1 != 'x' && x1 != 'X') || (x2 != 'x' && x2 != 'X') ||
        v[0] <= 0 || v[1] <= 0 || v[2] <= 0)
      fail(Status::invalid_argument, "--shapes: '" + item + "' is not MxNxK with positive sizes (e.g. 4096x16x4096)");
    out.push_back(v);
  }
  return out;
}

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

void register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Time spmma's sparse matmul against cuBLAS dense (and cuSPARSELt where given)");
  struct Opts {
    std::string shapes, types = "bf16,e4m3", cusparselt, json_out;
    bool json = false, cpu = false, fast_accum = false;
    int reps = 30;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--shapes", o->shapes,
                  "MxNxK,... (default: 4096^3, 8192^3, 16384^3 and LLM linears 4096x4096, 14336x4096, 4096x14336, "
                  "28672x8192 (MxK) at N = 16, 128, 2048, 8192; on the CPU: smaller defaults)");
  cmd->add_option("--types", o->types, "A/B types, e.g. bf16,f16,tf32,e4m3,s8 (default bf16,e4m3)");
  cmd->add_option("--reps", o->reps, "Timed repetitions per case (median reported; default 30)");
  cmd->add_option("--cusparselt-json", o->cusparselt,
                  "Merge cuSPARSELt kernel times measured by bench/cusparselt_torch.py (PyTorch's bundled cuSPARSELt)");
  cmd->add_option("--json-out", o->json_out, "Also write the JSON array to this file");
  cmd->add_flag("--json", o->json, "Print one JSON array, one object per shape and type");
  cmd->add_flag("--cpu", o->cpu, "Run the CPU path even where a GPU exists");
  cmd->add_flag("--fp8-fast-accum", o->fast_accum,
                "fp8: keep the sums in the tensor cores' fp8 accumulator (MatmulDesc::fast_accumulation) and give "
                "cuBLAS CUBLASLT_MATMUL_DESC_FAST_ACCUM; faster, fewer bits");
  cmd->callback([o] {
    std::vector<ElemType> types;
    {
      std::stringstream ss(o->types);
      std::string t;
      while (std::getline(ss, t, ',')) types.push_back(parse_elem_type_or_throw(t));
    }
    bool gpu = false;
    std::string why = "built without CUDA";
#ifdef SPMMA_HAVE_CUDA
    gpu = !o->cpu && conform::gpu_available(&why);
#endif
    std::vector<std::array<int64_t, 3>> shapes;
    if (!o->shapes.empty()) {
      shapes = parse_shapes(o->shapes);
    } else if (gpu) {
      for (int64_t s : {4096, 8192, 16384}) shapes.push_back({s, s, s});
      for (auto mk : std::vector<std::array<int64_t, 2>>{{4096, 4096}, {14336, 4096}, {4096, 14336}, {28672, 8192}})
        for (int64_t n : {16, 128, 2048, 8192}) shapes.push_back({mk[0], n, mk[1]});
    } else {
      shapes = {{512, 512, 512}, {1024, 1024, 1024}, {4096, 16, 4096}, {4096, 128, 4096}};
    }
    bench::Options bo;
    bo.shapes = shapes;
    bo.types = types;
    bo.reps = o->reps;
    bo.fast_accum = o->fast_accum;
    std::vector<bench::Row> measured;
    std::string device;
    if (gpu) {
#ifdef SPMMA_HAVE_CUDA
      device = bench::gpu_name();
      measured = bench::run_gpu(bo);
#endif
    } else {
      std::cerr << "spmma bench: no GPU (" << why << "): timing the CPU path\n";
      device = "CPU";
      bo.warmup = 1;
      bo.reps = std::max(1, std::min(o->reps, 5));
      measured = bench::run_cpu(bo);
    }
    std::vector<BenchRow> rows;
    for (const auto& r : measured) {
      BenchRow x{r.m, r.n, r.k, r.type, r.backend, r.kernel, r.note};
      x.verified = r.verified, x.max_error = r.max_error, x.spmma_ms = r.spmma_ms, x.spmma_call_us = r.spmma_call_us;
      x.spmma_host_us = r.spmma_host_us;
      x.spmma_tflops = r.spmma_tflops, x.cublas_tflops = r.cublas_tflops, x.cpu_dense_tflops = r.cpu_dense_tflops;
      x.dense_ms = gpu ? r.cublas_ms : r.cpu_dense_ms;
      rows.push_back(x);
    }
    if (!o->cusparselt.empty()) {
      std::ifstream f(o->cusparselt);
      if (!f) fail(Status::io_error, o->cusparselt + ": cannot read");
      const auto j = nlohmann::json::parse(f, nullptr, false);
      if (j.is_discarded() || !j.is_array()) fail(Status::io_error, o->cusparselt + ": not a JSON array");
      for (auto& r : rows)
        for (const auto& c : j)
          if (c.value("m", 0) == r.m && c.value("n", 0) == r.n && c.value("k", 0) == r.k && c.value("type", "") == r.type &&
              c.contains("cusparselt_tflops") && c["cusparselt_tflops"].is_number())
            r.cusparselt_tflops = c["cusparselt_tflops"].get<double>();
    }
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : rows)
      arr.push_back({{"m", r.m}, {"n", r.n}, {"k", r.k}, {"type", r.type}, {"backend", r.backend}, {"device", device},
                     {"verified", r.verified}, {"max_error", r.max_error}, {"spmma_ms", r.spmma_ms},
                     {"spmma_call_us", r.spmma_call_us}, {"spmma_host_us", r.spmma_host_us}, {"spmma_tflops", r.spmma_tflops},
                     {"cublas_tflops", opt(r.cublas_tflops)}, {"cusparselt_tflops", opt(r.cusparselt_tflops)},
                     {"cpu_dense_tflops", opt(r.cpu_dense_tflops)},
                     {"kernel", r.kernel}, {"note", r.note},
                     {"fast_accum", o->fast_accum}});
    if (!o->json_out.empty()) std::ofstream(o->json_out) << arr.dump(1) << "\n";
    if (o->json) {
      std::cout << arr.dump(1) << "\n";
      return;
    }
    std::cout << "spmma bench on " << device << " (TFLOP/s dense-equivalent, 2·M·N·K / kernel time)\n";
    std::cout << std::left << std::setw(22) << "shape MxNxK" << std::setw(6) << "type" << std::right << std::setw(10) << "spmma"
              << std::setw(10) << "cuBLAS" << std::setw(12) << "cuSPARSELt" << std::setw(10) << "vs dense" << std::setw(10)
              << "vs cSLt" << std::setw(12) << "call us" << std::setw(10) << "host us" << std::setw(10) << "verified" << "\n";
    for (const auto& r : rows) {
      std::ostringstream shape;
      shape << r.m << "x" << r.n << "x" << r.k;
      std::cout << std::left << std::setw(22) << shape.str() << std::setw(6) << r.type << std::right << std::fixed
                << std::setprecision(1) << std::setw(10) << r.spmma_tflops;
      auto col = [](const std::optional<double>& v, int w) {
        std::ostringstream s;
        if (v) s << std::fixed << std::setprecision(1) << *v;
        else s << "-";
        std::cout << std::setw(w) << s.str();
      };
      col(r.cublas_tflops, 10);
      col(r.cusparselt_tflops, 12);
      col(r.cublas_tflops ? std::optional<double>(r.spmma_tflops / *r.cublas_tflops) : std::nullopt, 10);
      col(r.cusparselt_tflops ? std::optional<double>(r.spmma_tflops / *r.cusparselt_tflops) : std::nullopt, 10);
      std::cout << std::setw(12) << std::setprecision(1) << r.spmma_call_us << std::setw(10) << r.spmma_host_us
                << std::setw(10) << (r.verified ? "yes" : "NO");
      if (!r.note.empty()) std::cout << "   " << r.note;
      std::cout << "\n";
    }
  });
}

}  // namespace spmma::cli
