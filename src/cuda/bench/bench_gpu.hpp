// spmma bench on the GPU: spmma's sparse matmul against cuBLAS dense on the same data.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "spmma/types.hpp"

namespace spmma::bench {

struct Row {
  int64_t m = 0, n = 0, k = 0;
  std::string type;        // A/B type
  std::string backend;     // "gpu" or "cpu"
  bool verified = false;   // spmma's D agreed with the dense reference
  double max_error = 0;    // largest |spmma - reference| / (|reference| + scale)
  double spmma_ms = 0, cublas_ms = 0;            // kernel time (device events), median
  double spmma_call_us = 0;                       // end-to-end call (host clock, launch to sync), median
  double spmma_tflops = 0;                        // dense-equivalent 2·M·N·K / time
  std::optional<double> cublas_tflops, cusparselt_tflops;
  std::string kernel;
  std::string note;
};

struct Options {
  std::vector<std::array<int64_t, 3>> shapes;  // M x N x K
  std::vector<ElemType> types;
  int warmup = 5, reps = 30;
  unsigned long long seed = 1;
};

std::vector<Row> run_gpu(const Options& o);
std::string gpu_name();

}  // namespace spmma::bench
