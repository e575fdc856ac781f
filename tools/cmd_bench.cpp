// SPDX-License-Identifier: BSD-3-Clause
// `spmma bench`: spmma's sparse matmul against dense baselines, shape by shape, type by type.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <fstream>
#include <span>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench_cpu.hpp"
#include "cli_json.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "provenance.hpp"
#include "io/files.hpp"
#include "spmma/error.hpp"
#ifdef SPMMA_HAVE_CUDA
#include "spmma/conform.hpp"
#endif

namespace spmma::cli {

namespace {

// A measured row, with what the cuSPARSELt record (--cusparselt-json) says of itself: PyTorch's
// and cuSPARSELt's versions, the algorithm, the kernels.
struct BenchRow : bench::Row {
  nlohmann::json peer;
};

// "MxNxK,MxNxK": each size a positive decimal integer and nothing else ("64x64x64q", "64x64",
// "64x64x64x2", "0x8x8", "1e3x8x8", "" are refused, naming the item).
std::vector<std::array<int64_t, 3>> parse_shapes(const std::string& s) {
  std::vector<std::array<int64_t, 3>> out;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::vector<std::string_view> parts;
    for (size_t at = 0;;) {
      const size_t x = item.find_first_of("xX", at);
      parts.push_back(std::string_view(item).substr(at, x == std::string::npos ? std::string::npos : x - at));
      if (x == std::string::npos) break;
      at = x + 1;
    }
    std::array<int64_t, 3> v{};
    bool ok = parts.size() == 3;
    for (size_t d = 0; d < 3 && ok; ++d) ok = parse_positive(parts[d], v[d]);
    if (!ok)
      fail(Status::invalid_argument, "--shapes: '" + item + "' is not MxNxK with positive decimal sizes (e.g. 4096x16x4096)");
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// A rate for the table: GFLOP/s on the CPU, TFLOP/s on the GPU, with enough digits that a small
// number is not printed as 0.0.
std::string rate(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 10 ? "%.1f" : v >= 1 ? "%.2f" : "%.3f", v);
  return buf;
}

std::string ratio_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

void register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Time spmma's sparse matmul against cuBLAS dense (and cuSPARSELt where given)");
  struct Opts {
    std::string shapes, types = "bf16,e4m3", cusparselt, json_out;
    bool json = false, cpu = false, fast_accum = false, quiet = false;
    int reps = 30;
    std::string kernel = "auto";
    int tile_n = 0, tile_m = 0, issuers = 0, splits = 0, group_m = 0, cluster_m = 0, promotion_k = 0;
    std::string grid = "auto";
    bool no_dependent_launch = false;
    bool bias = false, scales = false;
    std::string activation = "none", out, d_order = "row";
    std::string l2, sweep;  // l2 empty: hot, or both with --sweep decode
    bool dry_run = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--shapes", o->shapes,
                  "MxNxK,... (default: 4096^3, 8192^3, 16384^3 and LLM linears 4096x4096, 14336x4096, 4096x14336, "
                  "28672x8192 (MxK) at N = 16, 128, 2048, 8192; on the CPU: smaller defaults)");
  cmd->add_option("--types", o->types, "A/B types, e.g. bf16,f16,tf32,e4m3,s8 (default bf16,e4m3)");
  cmd->add_option(
         "--sweep", o->sweep,
         "A preset of shapes instead of --shapes: decode = M x K 4096x4096, 14336x4096, 4096x14336, 28672x8192, "
         "11008x4096 at N = 1, 8, 16, 32, 64, 128, 256 (35 shapes; --l2 both unless given)")
      ->check(CLI::IsMember({"decode"}));
  cmd->add_option(
         "--l2", o->l2,
         "The L2 state each call is timed in: hot (default; the same A and B every call, so a weight smaller "
         "than the L2 is read from it), cold (calls rotate over copies of A and B, so each reads them from HBM; "
         "GPU only) or both (a hot and a cold row per case)")
      ->check(CLI::IsMember({"hot", "cold", "both"}));
  cmd->add_flag("--dry-run", o->dry_run,
                "Print the cases this command would time (shape, type, L2 mode; with --json as a JSON array) and exit: "
                "nothing is allocated or measured");
  cmd->add_option("--reps", o->reps, "Timed repetitions per case (median reported; default 30)");
  cmd->add_option("--cusparselt-json", o->cusparselt,
                  "Merge cuSPARSELt kernel times measured by bench/cusparselt_torch.py (PyTorch's bundled cuSPARSELt)");
  cmd->add_option("--json-out", o->json_out, "Also write the JSON array to this file");
  cmd->add_flag("--json", o->json, "Print one JSON array, one object per shape and type");
  cmd->add_flag("--cpu", o->cpu, "Run the CPU path even where a GPU exists");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress line on stderr (it is shown only where stderr is a terminal)");
  cmd->add_flag("--fp8-fast-accum", o->fast_accum,
                "fp8: keep the sums in the tensor cores' fp8 accumulator (MatmulDesc::fast_accumulation) and give "
                "cuBLAS CUBLASLT_MATMUL_DESC_FAST_ACCUM; faster, fewer bits");
  // Plan options (PlanOptions): pin the kernel's choices, for experiments; refused with the reason
  // where a plan cannot take them.
  cmd->add_option("--kernel", o->kernel, "GPU kernel family: auto (default), sm90, sm80 or decode (PlanOptions.kernel)")
      ->check(CLI::IsMember({"auto", "sm90", "sm80", "decode"}));
  cmd->add_option("--tile-n", o->tile_n, "sm90 CTA tile N: 64, 128, 192 (promoted fp8) or 256 (PlanOptions.tile_n)");
  cmd->add_option("--tile-m", o->tile_m,
                  "the decode kernel's CTA tile rows: 32 (mma.sp per warp) or 64 (fp8: wgmma.sp per warpgroup) "
                  "(PlanOptions.tile_m; pins the decode kernel)");
  cmd->add_option("--issuers", o->issuers,
                  "the decode kernel's producer warps per operand, 1 or 2 (PlanOptions.issuers; pins the decode kernel)");
  cmd->add_option("--splits", o->splits, "sm90 split K: 1 (none) to 8, the CTAs of a cluster; 1 to 4 with --kernel decode (PlanOptions.splits)");
  cmd->add_option("--group-m", o->group_m, "sm90 rasterization: M tiles per group (PlanOptions.group_m)");
  cmd->add_option("--cluster-m", o->cluster_m, "sm90: CTAs per cluster along M, 1 or 2 (PlanOptions.cluster_m)");
  cmd->add_option("--promotion-k", o->promotion_k,
                  "sm90, fp8 with promoted sums: the K the tensor cores sum before each f32 add, 128 or 256 "
                  "(PlanOptions.promotion_k)");
  cmd->add_option("--grid", o->grid, "sm90 grid: auto (default), persistent or per-tile (PlanOptions.grid)")
      ->check(CLI::IsMember({"auto", "persistent", "per-tile"}));
  cmd->add_flag("--no-dependent-launch", o->no_dependent_launch,
                "sm90: launch each call plainly, after the kernel before has finished, instead of with programmatic "
                "dependent launch (PlanOptions.dependent_launch = false)");
  // The epilogue spmma runs (the dense baseline stays plain; spmma's D is then checked against the
  // CPU backend on sampled rows).
  cmd->add_flag("--bias", o->bias, "Add a bias vector (one f32 per row of D) in spmma's epilogue");
  cmd->add_option("--activation", o->activation, "Activation in spmma's epilogue: none (default), relu or gelu")
      ->check(CLI::IsMember({"none", "relu", "gelu"}));
  cmd->add_option("--d-order", o->d_order,
                  "D's layout: row (default; M x N) or col (column-major, i.e. Y = X·Wᵀ row-major: a linear layer's "
                  "output, and the Python package's)")
      ->check(CLI::IsMember({"row", "col"}));
  cmd->add_flag("--scales", o->scales, "Multiply by per-row and per-column scale vectors in spmma's epilogue");
  cmd->add_option("--out", o->out,
                  "spmma's D type (default: bf16 for bf16 and fp8, f16, f32 for tf32, s32 for integers; also e4m3, "
                  "e5m2 for float types, s8 for integers)");
  cmd->callback([o] {
    if (o->reps < 1) fail(Status::invalid_argument, "bench: --reps " + std::to_string(o->reps) + " must be at least 1");
    std::vector<ElemType> types;
    {
      std::stringstream ss(o->types);
      std::string t;
      while (std::getline(ss, t, ',')) types.push_back(parse_elem_type_or_throw(t));
      if (types.empty()) fail(Status::invalid_argument, "bench: --types names no type");
    }
    // The output file is checked before hours of measuring, not after.
    require_distinct({{"--cusparselt-json", o->cusparselt}}, {{"--json-out", o->json_out}});
    bool gpu = false;
    // The true reason for the CPU path: --cpu, no usable GPU (and why), or a build without CUDA.
    std::string why = o->cpu ? "--cpu" : "built without CUDA";
#ifdef SPMMA_HAVE_CUDA
    if (!o->cpu) gpu = conform::gpu_available(&why);
#endif
    std::vector<std::array<int64_t, 3>> shapes;
    if (!o->sweep.empty() && !o->shapes.empty())
      fail(Status::invalid_argument,
           "bench: --sweep " + o->sweep + " and --shapes both name the shapes; give one of them");
    if (!o->shapes.empty()) {
      shapes = parse_shapes(o->shapes);
    } else if (o->sweep == "decode") {
      shapes = bench::decode_sweep_shapes();
    } else if (gpu) {
      for (int64_t s : {4096, 8192, 16384}) shapes.push_back({s, s, s});
      for (auto mk : std::vector<std::array<int64_t, 2>>{{4096, 4096}, {14336, 4096}, {4096, 14336}, {28672, 8192}})
        for (int64_t n : {16, 128, 2048, 8192}) shapes.push_back({mk[0], n, mk[1]});
    } else {
      shapes = {{512, 512, 512}, {1024, 1024, 1024}, {4096, 16, 4096}, {4096, 128, 4096}};
    }
    // The L2 modes: --l2, else both for the decode sweep (the point of it), else hot.
    const std::string l2 = !o->l2.empty() ? o->l2 : o->sweep == "decode" ? "both" : "hot";
    std::vector<bench::L2Mode> l2_modes;
    if (l2 != "cold") l2_modes.push_back(bench::L2Mode::hot);
    if (l2 != "hot") l2_modes.push_back(bench::L2Mode::cold);
    // The cold L2 is the GPU's (bench::run_cpu times the hot case only): refused here, before
    // anything runs, with what to do instead.
    if (!gpu && l2 != "hot")
      fail(Status::not_supported,
           "bench: --l2 " + l2 + (o->l2.empty() ? " (the default of --sweep " + o->sweep + ")" : std::string()) +
               ": the cold L2 is timed on the GPU only, and this run takes the CPU path (" + why + "); give --l2 hot");
    const bool cold = l2 != "hot";
    if (o->dry_run) {
      // The cases in the order they would run: type, shape, then L2 mode.
      nlohmann::json cases = nlohmann::json::array();
      for (ElemType t : types)
        for (const auto& sh : shapes)
          for (bench::L2Mode m : l2_modes) {
            if (o->json)
              cases.push_back({{"m", sh[0]},
                               {"n", sh[1]},
                               {"k", sh[2]},
                               {"type", std::string(type_name(t))},
                               {"l2", bench::l2_name(m)}});
            else
              std::cout << sh[0] << "x" << sh[1] << "x" << sh[2] << " " << type_name(t) << " " << bench::l2_name(m)
                        << "\n";
          }
      if (o->json)
        std::cout << cases.dump(1) << "\n";
      else
        std::cout << "spmma bench --dry-run: " << types.size() * shapes.size() << " cases, "
                  << types.size() * shapes.size() * l2_modes.size() << " rows, on " << (gpu ? "the GPU" : "the CPU")
                  << "\n";
      return;
    }
    // A shape that cannot fit is refused up front with the memory it needs (not std::bad_alloc
    // half-way through).
    uint64_t gpu_free = 0;
#ifdef SPMMA_HAVE_CUDA
    if (gpu) gpu_free = bench::gpu_free_memory();
#endif
    for (ElemType t : types)
      for (const auto& sh : shapes) bench::require_memory(sh, t, gpu, false, gpu_free, "bench", cold);
    bench::Options bo;
    bo.shapes = shapes;
    bo.types = types;
    bo.reps = o->reps;
    bo.fast_accum = o->fast_accum;
    bo.plan.kernel = o->kernel == "sm90"     ? KernelFamily::sm90
                     : o->kernel == "sm80"   ? KernelFamily::sm80
                     : o->kernel == "decode" ? KernelFamily::decode
                                             : KernelFamily::automatic;
    bo.plan.tile_n = o->tile_n, bo.plan.tile_m = o->tile_m, bo.plan.issuers = o->issuers, bo.plan.splits = o->splits, bo.plan.group_m = o->group_m;
    bo.plan.cluster_m = o->cluster_m, bo.plan.promotion_k = o->promotion_k;
    bo.plan.dependent_launch = !o->no_dependent_launch;
    bo.plan.grid = o->grid == "persistent" ? GridKind::persistent : o->grid == "per-tile" ? GridKind::per_tile : GridKind::automatic;
    bo.epilogue.bias = o->bias, bo.epilogue.scales = o->scales;
    bo.epilogue.act = o->activation == "relu" ? Activation::relu : o->activation == "gelu" ? Activation::gelu : Activation::none;
    if (!o->out.empty()) bo.epilogue.out = parse_elem_type_or_throw(o->out);
    bo.d_col_major = o->d_order == "col";
    bo.l2 = l2_modes;
    // cuSPARSELt's measurements (bench/cusparselt_torch.py), read before measuring: a bad file
    // is refused before hours of work, and each row is complete when it is printed.
    nlohmann::json peers = nlohmann::json::array();
    if (!o->cusparselt.empty()) {
      std::ifstream f(o->cusparselt);
      if (!f) fail(Status::io_error, o->cusparselt + ": cannot read");
      peers = nlohmann::json::parse(f, nullptr, false);
      if (peers.is_discarded() || !peers.is_array()) fail(Status::io_error, o->cusparselt + ": not a JSON array");
    }
    auto with_peer = [&peers](const bench::Row& measured) {
      BenchRow r;
      static_cast<bench::Row&>(r) = measured;
      for (const auto& c : peers)
        // The same shape, type and L2 mode (a record without "l2", from before the cold mode, is hot).
        if (c.is_object() && c.value("m", 0) == r.m && c.value("n", 0) == r.n && c.value("k", 0) == r.k &&
            c.value("type", "") == r.type && c.value("l2", "hot") == r.l2 && c.contains("cusparselt_tflops") &&
            c["cusparselt_tflops"].is_number()) {
          r.cusparselt_tflops = c["cusparselt_tflops"].get<double>();
          for (const char* key :
               {"torch", "cusparselt", "alg_id", "kernels", "cusparselt_ms", "l2_copies", "weight_gbps", "timing",
                "hold_missed", "cusparselt_kernel_ms"})
            if (c.contains(key)) r.peer[key] = c[key];
          if (c.contains("cusparselt_seq_ms") && c["cusparselt_seq_ms"].is_number())
            r.cusparselt_seq_ms = c["cusparselt_seq_ms"].get<double>();
        }
      return r;
    };
    std::string device = "CPU";
    // The device-to-device copy rate of this run, the ceiling the weight-stream GB/s are read
    // against (GPU only; bench::CopyRate states the convention: bytes read + written per second).
    bench::CopyRate copy;
    bench::LaunchFloor floor;
    uint64_t l2_bytes = 0;
#ifdef SPMMA_HAVE_CUDA
    if (gpu) {
      device = bench::gpu_name();
      copy = bench::measure_copy_rate();
      floor = bench::measure_launch_floor();
      l2_bytes = bench::gpu_l2_bytes();
    }
#endif
    const std::optional<double> copy_gbps = copy.gbps > 0 ? std::optional<double>(copy.gbps) : std::nullopt;
    const std::optional<double> floor_ms =
        floor.plain_ms.median > 0 ? std::optional<double>(floor.plain_ms.median) : std::nullopt;
    // A cold row's floor (bench::LaunchFloor): its weight's bytes at the copy rate plus the plain
    // launch's floor, ms; nothing for hot rows (their weight may be in the L2) or without either.
    auto stream_bound_ms = [&](const BenchRow& r, uint64_t bytes) -> std::optional<double> {
      if (r.l2 != "cold" || !copy_gbps || !floor_ms || bytes == 0) return std::nullopt;
      return static_cast<double>(bytes) / (*copy_gbps * 1e9) * 1e3 + *floor_ms;
    };
    if (!gpu) {
      if (bo.d_col_major) fail(Status::not_supported, "bench: --d-order col is timed on the GPU only (the CPU path checks a row-major D)");
      std::cerr << "spmma bench: no GPU (" << why << "): timing the CPU path\n";
      bo.warmup = 1;
      bo.reps = std::max(1, std::min(o->reps, 5));
    }
    // TFLOP/s on the GPU; GFLOP/s on the CPU, whose rates would print as 0.0 TFLOP/s.
    const double scale = gpu ? 1.0 : 1e3;
    const char* unit = gpu ? "TFLOP/s" : "GFLOP/s";
    // The table: its header now, each row as its case finishes (a long run shows its progress).
    if (!o->json) {
      std::cout << "spmma bench on " << device << " (" << unit << " dense-equivalent, 2·M·N·K / kernel time; dense: "
                << (gpu ? "cuBLAS" : "cblas_sgemm f32") << ")\n";
      if (!bo.epilogue.plain() || bo.epilogue.out)
        std::cout << "spmma's epilogue: " << bo.epilogue.text() << ", D "
                  << (bo.epilogue.out ? std::string(type_name(*bo.epilogue.out)) : std::string("the default type"))
                  << " (the dense baseline: plain)" << (bo.d_col_major ? ", D column-major" : "") << "\n";
      else if (bo.d_col_major)
        std::cout << "D column-major\n";
      if (gpu) {
        std::ostringstream c;
        c << std::fixed << std::setprecision(1);
        if (copy_gbps)
          c << "copy rate " << *copy_gbps << " GB/s: device-to-device cudaMemcpyAsync of " << (copy.bytes >> 20)
            << " MiB, median of " << copy.reps
            << ", counted as HBM traffic (bytes read + written per second)";
        else
          c << "copy rate " << copy.why;
        c << "; L2 " << static_cast<double>(l2_bytes) / (1 << 20) << " MiB\n";
        c << std::setprecision(2);
        if (floor_ms) {
          c << "launch floor " << *floor_ms * 1e3 << " us: an empty kernel of " << floor.ctas << " CTAs x " << floor.threads
            << " threads timed as a call (held stream, events), median of " << floor.reps;
          if (floor.shaped_ms.median > 0)
            c << "; " << floor.shaped_ms.median * 1e3 << " us launched as the sm90 plans (cluster of 2, programmatic "
                 "dependent launch, 200 KB of shared memory)";
          c << "\n";
        } else {
          c << "launch floor " << floor.why << "\n";
        }
        std::cout << c.str();
      }
      if (gpu)
        std::cout << "GB/s: weight bytes per kernel time (spmma: compressed values + metadata; dense: M·K elements); "
                     "of copy: spmma's GB/s / the copy rate; of bound (cold): the weight's bytes at the copy rate "
                     "plus the launch floor, over spmma's time; l2 cold: each call reads its A and B from HBM "
                     "(docs/benchmarks.md, \"Cold L2 and the decode sweep\"); seq/dense (cold): the speed-up over "
                     "dense with the calls back to back, layer after layer\n";
      else
        std::cout << "GB/s: weight bytes per time (spmma: compressed values + metadata; dense: the f32 A cblas_sgemm "
                     "reads)\n";
      std::cout << std::left << std::setw(22) << "shape MxNxK" << std::setw(6) << "type" << std::right << std::setw(10)
                << "spmma" << std::setw(10) << "dense" << std::setw(12) << "cuSPARSELt" << std::setw(10) << "vs dense"
                << std::setw(10) << "vs cSLt" << std::setw(12) << "call us" << std::setw(10) << "host us"
                << std::setw(6) << "l2" << std::setw(10) << "GB/s" << std::setw(11) << "dense GB/s" << std::setw(9)
                << "of copy" << std::setw(10) << "of bound" << std::setw(10) << "seq/dense" << std::setw(10) << "verified"
                << std::endl;
    }
    auto print_row = [&](const BenchRow& r) {
      std::ostringstream shape;
      shape << r.m << "x" << r.n << "x" << r.k;
      const std::optional<double> dense = gpu ? r.cublas_tflops : r.cpu_dense_tflops;
      auto col = [](const std::optional<double>& v, int w, bool ratio = false) {
        std::ostringstream s;
        if (v) s << (ratio ? ratio_text(*v) : rate(*v));
        else s << "-";
        std::cout << std::setw(w) << s.str();
      };
      std::cout << std::left << std::setw(22) << shape.str() << std::setw(6) << r.type << std::right;
      const bool ran = r.spmma_ms > 0;  // a case that failed before timing shows "-", not 0
      col(ran ? std::optional<double>(r.spmma_tflops * scale) : std::nullopt, 10);
      col(dense ? std::optional<double>(*dense * scale) : std::nullopt, 10);
      col(r.cusparselt_tflops ? std::optional<double>(*r.cusparselt_tflops * scale) : std::nullopt, 12);
      col(ran && dense && *dense > 0 ? std::optional<double>(r.spmma_tflops / *dense) : std::nullopt, 10, true);
      col(r.cusparselt_tflops ? std::optional<double>(r.spmma_tflops / *r.cusparselt_tflops) : std::nullopt, 10, true);
      auto us = [&](double v) {
        std::ostringstream t;
        if (ran) t << std::fixed << std::setprecision(1) << v;
        else t << "-";
        return t.str();
      };
      std::cout << std::setw(12) << us(r.spmma_call_us) << std::setw(10) << us(r.spmma_host_us) << std::setw(6) << r.l2;
      auto gbps = [](const std::optional<double>& v, int w) {
        std::ostringstream t;
        if (v)
          t << std::fixed << std::setprecision(*v >= 100 ? 0 : 1) << *v;
        else
          t << "-";
        std::cout << std::setw(w) << t.str();
      };
      gbps(ran ? std::optional<double>(r.weight_gbps) : std::nullopt, 10);
      gbps(r.dense_weight_gbps, 11);
      col(ran && copy_gbps ? std::optional<double>(r.weight_gbps / *copy_gbps) : std::nullopt, 9, true);
      const std::optional<double> bound = stream_bound_ms(r, r.value_bytes + r.metadata_bytes);
      col(ran && bound ? std::optional<double>(*bound / r.spmma_ms) : std::nullopt, 10, true);
      // Layer after layer (cold rows): cuBLAS's time per call over spmma's, both back to back.
      col(r.spmma_seq_ms && r.cublas_seq_ms ? std::optional<double>(*r.cublas_seq_ms / *r.spmma_seq_ms) : std::nullopt, 10,
          true);
      std::cout << std::setw(10) << (r.verified ? "yes" : "NO");
      if (!r.note.empty()) std::cout << "   " << r.note;
      std::cout << std::endl;
    };
    // Every record carries what it was measured with (docs/benchmarks.md reproduces from it).
    nlohmann::json provenance = cli::timed_provenance(device, bo, gpu);
    provenance["l2"] = l2;
    if (gpu) {
      provenance["l2_bytes"] = l2_bytes;
      provenance["copy_rate"] = {
          {"gbps", opt(copy_gbps)},
          {"bytes", copy.bytes},
          {"reps", copy.reps},
          {"timing_ms", {{"min", copy.ms.min}, {"median", copy.ms.median}, {"p90", copy.ms.p90}}},
          {"convention",
           "device-to-device cudaMemcpyAsync; HBM traffic, bytes read + written per second (1e9 B/s): "
           "the ceiling of a weight stream, which only reads"},
          {"note", copy.why}};
      auto timing = [](const bench::Timing& t) {
        return t.median > 0 ? nlohmann::json{{"min", t.min}, {"median", t.median}, {"p90", t.p90}} : nlohmann::json(nullptr);
      };
      provenance["launch_floor"] = {
          {"plain_ms", timing(floor.plain_ms)},
          {"sm90_shaped_ms", timing(floor.shaped_ms)},
          {"ctas", floor.ctas},
          {"threads", floor.threads},
          {"reps", floor.reps},
          {"method",
           "an empty kernel timed as a call (held stream, device events), launched plainly and as the sm90 plans "
           "(cluster of 2, programmatic stream serialization, 200 KB of dynamic shared memory); a cold row's "
           "stream_bound_ms = its weight's bytes / copy_gbps + plain_ms"},
          {"note", floor.why}};
    }
#ifdef SPMMA_HAVE_CUDA
    if (gpu) provenance["cublaslt"] = bench::cublas_version();
#endif
    // Each row's record; --json-out is rewritten after every row (a whole file each time, by a
    // temporary and a rename), so that a run stopped by a time limit keeps the rows it finished.
    auto record = [&](const BenchRow& r) {
      nlohmann::json j = cli::bench_row_json(r, device, gpu, o->fast_accum);
      j["cusparselt_record"] = r.peer.is_null() ? nlohmann::json(nullptr) : r.peer;
      j["provenance"] = provenance;
      // The weight stream against the copy rate measured in this run (docs/benchmarks.md, "Cold
      // L2 and the decode sweep").
      const bool ran = r.spmma_ms > 0;
      j["copy_gbps"] = opt(copy_gbps);
      j["weight_of_copy"] = ran && copy_gbps ? nlohmann::json(r.weight_gbps / *copy_gbps) : nlohmann::json(nullptr);
      j["dense_weight_of_copy"] = r.dense_weight_gbps && copy_gbps ? nlohmann::json(*r.dense_weight_gbps / *copy_gbps)
                                                                   : nlohmann::json(nullptr);
      // Cold rows: the floor of the call (its weight at the copy rate plus the launch floor) and
      // the fraction of it each side reaches (spmma: the compressed weight; cuBLAS: the dense one).
      const std::optional<double> bound = stream_bound_ms(r, r.value_bytes + r.metadata_bytes),
                                  dense_bound = stream_bound_ms(r, r.dense_weight_bytes);
      j["stream_bound_ms"] = opt(bound);
      j["of_stream_bound"] = ran && bound ? nlohmann::json(*bound / r.spmma_ms) : nlohmann::json(nullptr);
      j["dense_stream_bound_ms"] = opt(dense_bound);
      j["dense_of_stream_bound"] =
          dense_bound && r.cublas_ms > 0 ? nlohmann::json(*dense_bound / r.cublas_ms) : nlohmann::json(nullptr);
      return j;
    };
    nlohmann::json arr = nlohmann::json::array();
    auto write_json_out = [&] {
      if (o->json_out.empty()) return;
      const std::string text = arr.dump(1) + "\n";
      io::write_file(o->json_out, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    };
    cli::ProgressLine progress("bench", o->quiet);
    std::vector<BenchRow> rows;
    bo.on_start = [&](size_t i, size_t total, const std::string& what) { progress.start(i, total, what); };
    bo.on_row = [&](const bench::Row& measured) {
      rows.push_back(with_peer(measured));
      progress.clear();
      if (!o->json) print_row(rows.back());
      arr.push_back(record(rows.back()));
      write_json_out();
    };
    if (gpu) {
#ifdef SPMMA_HAVE_CUDA
      bench::run_gpu(bo);
#endif
    } else {
      bench::run_cpu(bo);
    }
    progress.clear();
    if (arr.empty()) write_json_out();  // no row ran: an empty array (each row wrote the file already)
    if (o->json) std::cout << arr.dump(1) << "\n";
    // A row that was not verified is a failed bench: status 1, and the rows named.
    std::string failed;
    int n_failed = 0;
    for (const auto& r : rows)
      if (!r.verified) {
        failed += (n_failed++ ? "; " : "") + std::to_string(r.m) + "x" + std::to_string(r.n) + "x" +
                  std::to_string(r.k) + " " + r.type + (r.l2 == "hot" ? "" : " " + r.l2) +
                  (r.note.empty() ? "" : " (" + r.note + ")");
      }
    if (n_failed) {
      std::cout.flush();
      std::cerr << "spmma bench: " << n_failed << " of " << rows.size() << " rows not verified: " << failed << "\n";
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace spmma::cli
