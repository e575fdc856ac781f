// SPDX-License-Identifier: BSD-3-Clause
// The global nanosecond timer (PTX special register %globaltimer), and a spin on it: the
// benchmarks hold a stream with it so that a timed call is queued before its start event
// (tools/bench_gpu.cu, HeldTimer; bench/stream_probe.cu).
#pragma once
#include <cstdint>

namespace spmma::ptx {

__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Returns once `ns` nanoseconds have passed since the call.
__device__ __forceinline__ void spin_ns(uint64_t ns) {
  const uint64_t t0 = globaltimer();
  while (globaltimer() - t0 < ns) {
  }
}

}  // namespace spmma::ptx
