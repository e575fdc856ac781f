// SPDX-License-Identifier: BSD-3-Clause
// A kernel launch decided when a plan is made, and its enqueueing by Plan::run.
//
// Why: Plan::run's host time is its launch. On the H100 (bench/launch_probe.cu, 2026-11-28) the
// driver's cuLaunchKernelEx of a kernel with the sm90 kernel's arguments took a median 2.5-2.7 µs
// back to back and 3.9-4.8 µs in a window of its own after a wait, while Plan::run, which asked
// the runtime to launch (cudaLaunchKernelEx: its function lookup and error state) after deciding
// the grid, the shared memory limit and the cluster on every call, took 3.2-4.7 and 4.7-8.5 µs.
// So the plan decides all of it once (the function, grid, CTA, shared memory, cluster,
// programmatic dependent launch) and a run passes the arguments to the driver and nothing else.
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
