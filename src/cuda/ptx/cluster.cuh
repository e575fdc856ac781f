// SPDX-License-Identifier: BSD-3-Clause
// Thread-block clusters (PTX 9.7.13.3 barrier.cluster, 9.7.9.15 mapa): the CTA's rank, a
// cluster-wide barrier, and another CTA's shared memory, through CCCL's <cuda/ptx> and the CUDA
// runtime's __cluster_map_shared_rank.
#pragma once
#include <cuda/ptx>

#include <cstdint>

namespace spmma::ptx {

__device__ __forceinline__ uint32_t cluster_rank() { return ::cuda::ptx::get_sreg_cluster_ctarank(); }

// Every thread of every CTA of the cluster waits for all the others; no memory ordering (the
// .release arrival costs a MEMBAR.ALL.GPU, which at a kernel's end waits for its stores). Barrier
// inits are published by mbar_fence_init (fence.mbarrier_init.release.cluster) before it.
__device__ __forceinline__ void cluster_sync() {
  ::cuda::ptx::barrier_cluster_arrive(::cuda::ptx::sem_relaxed);
  ::cuda::ptx::barrier_cluster_wait();
}

// The same shared-memory object in the CTA of cluster rank `rank` (a generic pointer into the
// cluster's distributed shared memory).
template <class T>
__device__ __forceinline__ T* in_cta(T* p, uint32_t rank) {
  return static_cast<T*>(__cluster_map_shared_rank(static_cast<void*>(p), rank));
}

}  // namespace spmma::ptx
