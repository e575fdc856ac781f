// SPDX-License-Identifier: BSD-3-Clause
// mbarrier: a transaction barrier in shared memory (PTX 9.7.13.15), through CCCL's <cuda/ptx>.
// A barrier is a uint64_t in shared memory; its phases alternate parity 0, 1, 0, ...
#pragma once
#include <cuda/ptx>

#include <cstdint>

namespace spmma::ptx {

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) { ::cuda::ptx::mbarrier_init(bar, count); }

// Makes the initialised barriers visible to the copy engine (TMA) and the other threads.
__device__ __forceinline__ void mbar_fence_init() {
  ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
}

// One arrival that also announces `bytes` of asynchronous copies completing on this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  (void)::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta, ::cuda::ptx::space_shared, bar,
                                             bytes);
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) { (void)::cuda::ptx::mbarrier_arrive(bar); }

// One arrival by each thread for which `pred` holds, as one predicated instruction: a math warp's
// `if (lane == 0) mbar_arrive(...)` compiled to a convergence region (BSSY ... BSYNC) per stage,
// 12.5 M branch-unit instructions at bf16 8192^3 on the H100, 6.2 M without (2026-11-27,
// docs/benchmarks.md, "Power and clocks"). Inline PTX: CCCL's wrappers take no predicate.
__device__ __forceinline__ void mbar_arrive_if(bool pred, uint64_t* bar) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\t@p mbarrier.arrive.shared::cta.b64 _, [%0];\n\t}" ::"r"(
          static_cast<uint32_t>(__cvta_generic_to_shared(bar))),
      "r"(static_cast<uint32_t>(pred))
      : "memory");
}
// The same on a barrier of another CTA of the cluster (`peer` from ptx::in_cta). Relaxed: what it
// announces (the wgmmas that read a stage are retired, wgmma.wait_group) needs no memory ordering,
// and the .release.cluster form costs a MEMBAR.ALL.GPU before every arrival in the SASS (measured
// on the H100: clusters of 2 ran at half speed with it, docs/benchmarks.md).
__device__ __forceinline__ void mbar_arrive_cluster_if(bool pred, uint64_t* peer) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\t"
      "@p mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];\n\t}" ::"r"(
          static_cast<uint32_t>(__cvta_generic_to_shared(peer))),
      "r"(static_cast<uint32_t>(pred))
      : "memory");
}

// One arrival on a barrier of another CTA of the cluster that publishes this thread's (and, after
// a __syncwarp, its warp's) shared-memory writes to the threads that wait on it with
// mbar_wait_cluster: split K's sums (sm90/split_k.cuh). The MEMBAR it costs is paid once per tile.
__device__ __forceinline__ void mbar_arrive_release_cluster(uint64_t* bar) {
  ::cuda::ptx::mbarrier_arrive(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster, ::cuda::ptx::space_cluster, bar);
}

// Blocks until the barrier's phase of parity `parity` has completed, acquiring at cluster scope
// what mbar_arrive_release_cluster published.
__device__ __forceinline__ void mbar_wait_cluster(uint64_t* bar, uint32_t parity) {
  while (!::cuda::ptx::mbarrier_try_wait_parity(::cuda::ptx::sem_acquire, ::cuda::ptx::scope_cluster, bar, parity)) {
  }
}

// Blocks until the barrier's phase of parity `parity` has completed. The suspend-time hint lets
// the hardware park the warp until the phase completes (up to 10 ms, CUTLASS's value) instead of
// returning after its own short limit, so a waiting warp does not take issue slots from the
// others: on the H100 (2026-11-24, docs/benchmarks.md, "Nsight Compute: spmma and cuSPARSELt at
// bf16 8192^3") the promoted e4m3 kernel, whose adds keep the issue slots busiest, ran 1.01-1.07x
// faster at the large shapes; bf16, s8 and the decode rows unchanged.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  constexpr uint32_t kSuspendNs = 10'000'000;
  while (!::cuda::ptx::mbarrier_try_wait_parity(bar, parity, kSuspendNs)) {
  }
}

}  // namespace spmma::ptx
