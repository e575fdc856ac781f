// SPDX-License-Identifier: BSD-3-Clause
// A kernel launch decided when a plan is made, and its enqueueing by Plan::run.
//
// Why: Plan::run's host time is mostly its launch. On the H100 (bench/launch_probe.cu,
// 2026-11-28; docs/benchmarks.md, "Plan::run's host time") the driver's launch was 71-90% of the
// call, and a bare cuLaunchKernelEx with the sm90 kernel's arguments took 2.5-4.1 µs queued back
// to back and 2.9-4.8 µs in spmma bench's window. What spmma added on top (deciding the grid,
// the shared memory limit and the cluster on every call, the runtime's launch with its function
// lookup and error state) was a median 2.2 µs in that window; with the plan deciding it all once
// (the function, grid, CTA, shared memory, cluster, programmatic dependent launch) and a run
// passing the arguments to the driver and nothing else, 1.2 µs.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <vector>

namespace spmma::cuda {

struct Launch {
  CUfunction fn = nullptr;  // the kernel (function())
  unsigned grid_x = 1, grid_y = 1;
  unsigned block = 1;    // threads per CTA
  unsigned smem = 0;     // dynamic shared memory, bytes
  unsigned cluster = 1;  // CTAs per cluster along x (1: no cluster)
  bool dependent = false;  // programmatic dependent launch: may start while the stream's last kernel ends
  int batch0 = 0;        // the first batch entry of the grid (gemm::Params::batch0; grids hold 65535 at most)
};

// The kernel (its host symbol) as the driver launches it (a context-free CUkernel), its dynamic
// shared memory limit on the current device raised to smem_limit bytes and all of the SM's
// unified L1/shared memory given to shared memory (the kernels stage their operands there, and
// the decode kernel's CTAs share an SM only if the whole of it is theirs). At plan time, on the
// plan's device; throws cuda_error naming `what`.
CUfunction function(const void* kernel, int smem_limit, const char* what);

// A plan's grids over the batch entries of p (the kernels' parameters: p.batch entries, the grid's
// first in p.batch0), per_grid entries at most in each: prepare(q) with q.batch0 = 0, per_grid, ...
template <class Params, class Prepare>
std::vector<Launch> grids(const Params& p, int per_grid, Prepare&& prepare) {
  std::vector<Launch> out;
  for (int b0 = 0; b0 < p.batch; b0 += per_grid) {
    Params q = p;
    q.batch0 = b0;
    out.push_back(prepare(q));
  }
  return out;
}

// Enqueues l on stream s with the kernel's arguments (pointers to each, in order), in the
// stream's context (the current one for the default stream: a cuda::DeviceGuard makes sure there
// is one). Throws cuda_error naming `what`; a sticky error says that the context died earlier
// (device_buffer.cuh).
void enqueue(const Launch& l, void** args, cudaStream_t s, const char* what);

}  // namespace spmma::cuda
