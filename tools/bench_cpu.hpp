// SPDX-License-Identifier: BSD-3-Clause
// spmma bench on the CPU: the CPU backend of the matmul API against a dense f32 product
// (cblas_sgemm, OpenBLAS) of the same pruned A. The CPU counterpart of bench::run_gpu
// (tools/bench_gpu.hpp), filling the same Row; used by `spmma bench` and `spmma demo`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bench_gpu.hpp"

namespace spmma::bench {

// For each type and shape: A random (Options::prune: dense, pruned by compress(PruneMode::
// magnitude); else pruned on the host first and compressed with PruneMode::check), B random
// column-major, D = A·B of type output_type(type) by Plan::run, timed on the host clock (median
// of o.reps after o.warmup). Verified against a double-precision product of the host's
// prune_magnitude of A, on every row where M·N·K <= 2^28, else on evenly spread rows (Row::
// max_error and rel_error as on the GPU, bound error_bound(D's type)); the dense baseline is
// cblas_sgemm on that pruned A and B decoded to f32 (cpu_dense_ms, cpu_dense_tflops). A case that
// fails leaves its error in Row::note. Rows are hot (Row::l2); Options::l2 naming cold is refused
// (not_supported): the cold L2 is the GPU's. Row::weight_gbps counts the compressed A per spmma
// time, dense_weight_gbps the f32 A per sgemm time.
std::vector<Row> run_cpu(const Options& o);

// About how much memory one case of run_cpu (gpu = false) or run_gpu (gpu = true) takes: on the
// host (the matrices as Matrix, their byte and f32 copies, the reference rows, the CPU backend's
// f32 operands) and on the device. UINT64_MAX where the sum overflows 64 bits.
struct CaseMemory {
  uint64_t host = 0, device = 0;
};
// cold (GPU): with at least a second copy of A and B (--l2 cold).
CaseMemory case_memory(const std::array<int64_t, 3>& shape, ElemType t, bool gpu, bool prune, bool cold = false);
// Physical memory of this machine (sysconf), 0 when unknown.
uint64_t host_memory_bytes();
// invalid_argument, before any allocation, when a case needs more host memory than the machine
// has (or, with gpu_free > 0, more device memory than is free): "<what>: M x N x K <type> needs
// about 30.0 GiB of host memory, this machine has 7.8 GiB; choose smaller sizes".
void require_memory(const std::array<int64_t, 3>& shape, ElemType t, bool gpu, bool prune, uint64_t gpu_free,
                    const std::string& what, bool cold = false);

}  // namespace spmma::bench
