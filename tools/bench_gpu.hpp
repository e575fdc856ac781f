// SPDX-License-Identifier: BSD-3-Clause
// spmma bench on the GPU: spmma's sparse matmul against cuBLAS dense on the same data.
// Row and Options are plain C++ (no CUDA): tools/bench_cpu.hpp's run_cpu, the CPU path of
// `spmma bench` and `spmma demo`, fills the same Row.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spmma/matmul.hpp"
#include "spmma/types.hpp"

namespace spmma::bench {

struct Row {
  int64_t m = 0, n = 0, k = 0;
  std::string type;        // A/B type
  std::string d_type;      // D's type (output_type(type))
  std::string backend;     // "gpu" or "cpu"
  bool verified = false;   // spmma's D agreed with the dense reference
  double max_error = 0;    // largest |spmma - reference| / (|reference| + 1% of max |reference|)
  double rel_error = 0;    // ||spmma - reference||_2 / ||reference||_2
  int64_t checked_rows = 0;  // rows of D compared with the reference (all of them on the GPU)
  size_t value_bytes = 0, metadata_bytes = 0;  // the compressed A
  double spmma_ms = 0, cublas_ms = 0;            // kernel time (device events), median
  double spmma_call_us = 0;                       // end-to-end call (host clock, launch to sync), median
  double spmma_host_us = 0;                       // host time inside Plan::run (enqueue only; GPU), median
  double spmma_tflops = 0;                        // dense-equivalent 2·M·N·K / time
  std::optional<double> cublas_tflops, cusparselt_tflops;
  double cpu_dense_ms = 0;                        // CPU: cblas_sgemm (f32) on the same pruned A, median
  std::optional<double> cpu_dense_tflops;
  std::string kernel;
  std::string note;
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
};

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
// The largest Row::max_error that counts as verified for a D of type d.
inline double error_bound(ElemType d) { return d == ElemType::s32 ? 0.0 : d == ElemType::f32 ? 1e-3 : 2e-2; }

// A case that cannot run, or whose D is off by more than its bound, comes back with
// verified = false and Row::note saying why (`spmma bench` then exits 1 naming the rows).
std::vector<Row> run_gpu(const Options& o);
std::string gpu_name();
// Free memory on the current GPU (cudaMemGetInfo), 0 when it cannot be asked.
uint64_t gpu_free_memory();

}  // namespace spmma::bench
