// SPDX-License-Identifier: BSD-3-Clause
// spmma bench on the GPU: spmma's sparse matmul against cuBLAS dense on the same data.
// Row and Options are plain C++ (no CUDA): tools/bench_cpu.hpp's run_cpu, the CPU path of
// `spmma bench` and `spmma demo`, fills the same Row.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "spmma/matmul.hpp"
#include "spmma/types.hpp"

namespace spmma::bench {

// The dispersion of a case's timed repetitions (ms): min, median, 90th percentile.
struct Timing {
  double min = 0, median = 0, p90 = 0;
};
inline Timing timing_of(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {v.front(), v[n / 2], v[std::min(n - 1, (n * 9 + 9) / 10 - 1)]};  // p90: the ceil(0.9 n)-th
}

struct Row {
  int64_t m = 0, n = 0, k = 0;
  std::string type;        // A/B type
  std::string d_type;      // D's type (output_type(type), or Epilogue::out)
  std::string epilogue = "plain";  // Epilogue::text()
  std::string d_order = "row";     // D row-major (M x N) or "col" (column-major: Y = X·Wᵀ row-major)
  std::string backend;     // "gpu" or "cpu"
  bool verified = false;   // spmma's D agreed with the dense reference
  double max_error = 0;    // largest |spmma - reference| / (|reference| + 1% of max |reference|)
  double rel_error = 0;    // ||spmma - reference||_2 / ||reference||_2
  int64_t checked_rows = 0;  // rows of D compared with the reference (all of them on the GPU)
  size_t value_bytes = 0, metadata_bytes = 0;  // the compressed A
  double spmma_ms = 0, cublas_ms = 0;            // kernel time (device events), median
  Timing spmma_timing, dense_timing;             // their dispersion (dense: cuBLAS or the CPU's sgemm)
  double spmma_call_us = 0;                       // end-to-end call (host clock, launch to sync), median
  double spmma_host_us = 0;                       // host time inside Plan::run (enqueue only; GPU), median
  double spmma_tflops = 0;                        // dense-equivalent 2·M·N·K / time
  std::optional<double> cublas_tflops, cusparselt_tflops;
  double cpu_dense_ms = 0;                        // CPU: cblas_sgemm (f32) on the same pruned A, median
  std::optional<double> cpu_dense_tflops;
  std::string kernel;
  std::string note;
  // The L2 mode the row was timed in (docs/benchmarks.md, "Cold L2 and the decode sweep"): "hot"
  // (the same A and B on every call: a weight under the L2's size is read from L2 after the first)
  // or "cold" (calls rotate over distinct copies of A and B, so each call reads its weight from HBM).
  std::string l2 = "hot";
  // Cold: the copies rotated (spmma; the dense baseline's), and the bytes the calls between two
  // uses of one copy read from the other copies (their A and B), against the L2's l2_bytes. Hot: 1, 0.
  int l2_copies = 1, dense_l2_copies = 1;
  uint64_t l2_between_bytes = 0, dense_l2_between_bytes = 0, l2_bytes = 0;
  // The weight stream: the compressed A as stored (value_bytes + metadata_bytes) per spmma kernel
  // time, and the dense A (M·K elements; f32 on the CPU, what cblas_sgemm reads) per dense time, GB/s (1e9 B/s).
  uint64_t dense_weight_bytes = 0;
  double weight_gbps = 0;
  std::optional<double> dense_weight_gbps;
  // Cold rows: a call's time layer after layer (bench_gpu.cu, sequence_timing: seq_calls calls on
  // the rotation's copies back to back in one window, median of the windows over the calls), spmma's
  // and cuBLAS's; cuSPARSELt's from bench/cusparselt_torch.py (cusparselt_seq_ms) where merged.
  std::optional<double> spmma_seq_ms, cublas_seq_ms, cusparselt_seq_ms;
  int seq_calls = 0, dense_seq_calls = 0;
};

// Which L2 states a case is timed in (`spmma bench --l2 hot|cold|both`).
enum class L2Mode { hot, cold };
inline const char* l2_name(L2Mode m) { return m == L2Mode::hot ? "hot" : "cold"; }

// The device-to-device copy rate (cudaMemcpyAsync of `bytes`, much larger than the L2), the
// ceiling the weight-stream GB/s are compared with. Convention: the HBM traffic, bytes read plus
// bytes written per second (a copy of `bytes` moves 2 x `bytes`), the rate the memory sustains
// when it is kept busy: a weight stream, which only reads, can at best reach about that. Counting
// the copy's reads alone (half of it) would let a read-only stream show 1.5-1.7x "the copy rate"
// (H100, 2026-11-23: 1491 GB/s read, weight streams up to 2528 GB/s), which is no ceiling.
// gbps = 0 and `why` set where it could not be measured.
struct CopyRate {
  double gbps = 0;
  uint64_t bytes = 0;
  int reps = 0;
  Timing ms;
  std::string why;
};

// What a call costs before it moves a byte: an empty kernel timed as a call is (HeldTimer: the
// start event, the launch and the end event queued behind the hold), one CTA of 384 threads per
// SM, launched two ways: plainly (the cheapest launch a library makes) and as spmma's sm90 plans
// launch (the driver's launch with a cluster of 2, programmatic stream serialization and 200 KB
// of dynamic shared memory). With the copy rate it gives a weight's floor: bytes / copy rate +
// the plain launch (`of bound` in the table). ms empty and `why` set where it could not be measured.
struct LaunchFloor {
  Timing plain_ms, shaped_ms;
  int ctas = 0, threads = 0, reps = 0;
  std::string why;
};

// The epilogue spmma runs in a bench case (`--bias`, `--activation`, `--scales`, `--out`): D =
// act(s_row ⊗ s_col ∘ (A·B) + bias) into D's type. The dense baseline keeps its plain epilogue;
// spmma's D is then verified against the CPU backend on sampled rows (same epilogue).
struct Epilogue {
  bool bias = false, scales = false;
  Activation act = Activation::none;
  std::optional<ElemType> out;  // D's type (default: output_type of the A/B type)
  bool plain() const { return !bias && !scales && act == Activation::none; }
  // "plain" or e.g. "scales+bias+gelu".
  std::string text() const {
    std::string s = scales ? "scales" : "";
    if (bias) s += s.empty() ? "bias" : "+bias";
    if (act != Activation::none) s += std::string(s.empty() ? "" : "+") + (act == Activation::relu ? "relu" : "gelu");
    return s.empty() ? "plain" : s;
  }
};

// The epilogue's inputs of a case, the same on the GPU and the CPU path: a bias of about ±0.5
// and scales in [0.5, 1.5], varied along rows and columns (deterministic, finite).
struct EpilogueData {
  std::vector<float> bias, scale_rows, scale_cols;
  EpilogueData(int64_t m, int64_t n) : bias(static_cast<size_t>(m)), scale_rows(static_cast<size_t>(m)), scale_cols(static_cast<size_t>(n)) {
    for (int64_t i = 0; i < m; ++i) {
      bias[static_cast<size_t>(i)] = static_cast<float>((i * 37 % 101) - 50) / 100.0f;
      scale_rows[static_cast<size_t>(i)] = 0.5f + static_cast<float>(i * 53 % 97) / 96.0f;
    }
    for (int64_t j = 0; j < n; ++j) scale_cols[static_cast<size_t>(j)] = 0.5f + static_cast<float>(j * 29 % 89) / 88.0f;
  }
};

struct Options {
  std::vector<std::array<int64_t, 3>> shapes;  // M x N x K
  std::vector<ElemType> types;
  int warmup = 5, reps = 30;
  unsigned long long seed = 1;
  // false: A is made with its pattern in place and compressed with PruneMode::check; true: A is
  // dense random, pruned by compress(PruneMode::magnitude), and the dense baseline multiplies
  // prune_magnitude of it (the host's pruning).
  bool prune = false;
  // fp8: MatmulDesc::fast_accumulation for spmma and CUBLASLT_MATMUL_DESC_FAST_ACCUM for cuBLAS.
  bool fast_accum = false;
  // Pins for the GPU plan (PlanOptions); the CPU path refuses them.
  PlanOptions plan;
  Epilogue epilogue;
  // D column-major (`--d-order col`): stored N x M, i.e. Y = X·Wᵀ row-major, the layout of a
  // linear layer's output and of the Python package's matmul.
  bool d_col_major = false;
  // The L2 modes each case is timed in, one row per mode (in this order); the GPU path only takes
  // cold. Every mode of a case shares its data, plan and verification.
  std::vector<L2Mode> l2 = {L2Mode::hot};
  // Called before each case (its index from 0, the number of cases, "MxNxK type") and with each
  // row as it finishes: `spmma bench` prints rows as they come and a progress line.
  std::function<void(size_t, size_t, const std::string&)> on_start;
  std::function<void(const Row&)> on_row;
};

// `spmma bench --sweep decode` (issue 12, decode and small batches): the weights of LLM linear
// layers, M x K = 4096x4096, 14336x4096, 4096x14336, 28672x8192, 11008x4096, each at N = 1, 8, 16,
// 32, 64, 128, 256 tokens: 35 shapes, M x K outer, N inner. At these N a call streams its weight
// once, so HBM (cold L2) rather than the tensor cores sets its time.
inline std::vector<std::array<int64_t, 3>> decode_sweep_shapes() {
  std::vector<std::array<int64_t, 3>> out;
  for (const auto& mk :
       {std::array<int64_t, 2>{4096, 4096}, {14336, 4096}, {4096, 14336}, {28672, 8192}, {11008, 4096}})
    for (int64_t n : {1, 8, 16, 32, 64, 128, 256}) out.push_back({mk[0], n, mk[1]});
  return out;
}

// "MxNxK type", as progress lines and messages name a case.
inline std::string case_name(const std::array<int64_t, 3>& shape, ElemType t) {
  return std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + "x" + std::to_string(shape[2]) + " " +
         std::string(type_name(t));
}

// D's type for A/B of type t (as cuBLAS computes the dense baseline): f16 -> f16, bf16 -> bf16,
// tf32 -> f32, fp8 -> bf16, integers -> s32.
inline ElemType output_type(ElemType t) {
  switch (t) {
    case ElemType::f16: return ElemType::f16;
    case ElemType::tf32: return ElemType::f32;
    case ElemType::bf16: case ElemType::e4m3: case ElemType::e5m2: return ElemType::bf16;
    default: return ElemType::s32;
  }
}
// The largest Row::max_error that counts as verified for a D of type d from sums over k: its
// rounding (an ulp relative; fp8 2^-3 and 2^-2) above the f32 sums' differences. An f32 D shows
// those differences themselves: two f32 sums of the same products in other orders (split K, the
// tensor cores' own order, cuBLAS's) differ by rounding errors that add up like a random walk,
// so relative to the elements' scale they grow as sqrt(k): 1e-3 up to k = 4096, then
// 1e-3 * sqrt(k / 4096). (tf32 4096x32x14336 with K in 2 parts differed from cuBLAS by 0.00106-
// 0.00115 on the H200, 2026-11-29, where the bound is now 0.00187; a stage read wrong is off by
// 5% or more: docs/benchmarks.md, "Cold L2 and the decode sweep".)
inline double error_bound(ElemType d, int64_t k) {
  if (d == ElemType::f32) return 1e-3 * std::sqrt(std::max(1.0, static_cast<double>(k) / 4096.0));
  return d == ElemType::s32 ? 0.0 : d == ElemType::e4m3 ? 0.13 : d == ElemType::e5m2 ? 0.26 : 2e-2;
}

// How spmma's D (got(i)) agrees with a reference (want(i)) over `count` elements: the largest
// |got - want| / (|want| + 1% of max |want|) and where (-1: nowhere), and the relative L2 error,
// over the pairs where both are finite; whether every got is finite, and whether got and want are
// finite at the same places.
struct Agreement {
  double worst = 0, rel = 0;
  int64_t worst_at = -1;
  bool finite = true, finite_alike = true;
};
template <class Got, class Want>
Agreement agreement(int64_t count, Got&& got, Want&& want) {
  Agreement a;
  double scale = 0, num = 0, den = 0;
  for (int64_t i = 0; i < count; ++i) scale = std::max(scale, std::fabs(want(i)));
  for (int64_t i = 0; i < count; ++i) {
    const double x = got(i), y = want(i);
    a.finite &= std::isfinite(x);
    a.finite_alike &= std::isfinite(x) == std::isfinite(y);
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    const double e = std::fabs(x - y) / (std::fabs(y) + 1e-2 * scale + 1e-30);
    if (e > a.worst) a.worst = e, a.worst_at = i;
    num += (x - y) * (x - y), den += y * y;
  }
  a.rel = std::sqrt(num / (den + 1e-300));
  return a;
}

// A case that cannot run, or whose D is off by more than its bound, comes back with
// verified = false and Row::note saying why (`spmma bench` then exits 1 naming the rows).
std::vector<Row> run_gpu(const Options& o);
std::string gpu_name();
// The cuBLASLt library's version ("13.0.0"), for the records' provenance.
std::string cublas_version();
// Free memory on the current GPU (cudaMemGetInfo), 0 when it cannot be asked.
uint64_t gpu_free_memory();
// The L2 cache of the current GPU in bytes (cudaDeviceProp::l2CacheSize).
uint64_t gpu_l2_bytes();
// The device-to-device copy rate of the current GPU (CopyRate): a buffer of min(1 GiB, a quarter
// of the free memory) copied 10 times after 3 warm-ups, each copy timed by device events.
CopyRate measure_copy_rate();
// The launch floor of the current GPU (LaunchFloor): each launch 30 times after 5 warm-ups.
LaunchFloor measure_launch_floor();

// How many distinct copies a cold timing rotates over: enough that the other copies' bytes read
// between two uses of one copy (copies - 1 times per_call_bytes, the rotated A and B of a call)
// reach twice the L2 (2x: the H100's L2 is two partitions, and a line may be held in both), at
// least 2; at most max_copies (0: no limit). Plain arithmetic, tested on the CPU.
inline int cold_copies(uint64_t per_call_bytes, uint64_t l2_bytes, int max_copies = 0) {
  if (per_call_bytes == 0) return 2;
  const uint64_t target = 2 * l2_bytes;
  uint64_t c = 1 + (target + per_call_bytes - 1) / per_call_bytes;
  c = std::max<uint64_t>(c, 2);
  if (max_copies > 0) c = std::min<uint64_t>(c, static_cast<uint64_t>(max_copies));
  return static_cast<int>(c);
}

}  // namespace spmma::bench
