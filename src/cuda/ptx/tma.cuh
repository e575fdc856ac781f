// SPDX-License-Identifier: BSD-3-Clause
// TMA (cp.async.bulk.tensor, PTX 9.7.9.25) through CCCL's <cuda/ptx>.
#pragma once
#include <cuda.h>

#include <cuda/ptx>
#include <cstdint>

namespace spmma::ptx {

// Copies the box at (x, y, z) of a 3-D tensor map into shared memory at `dst` (a shared-space
// address); the bytes complete on the mbarrier `bar` (which expects them through
// mbar_arrive_expect_tx).
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint64_t* bar, int x, int y, int z) {
  const int32_t coords[3] = {x, y, z};
  ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global,
                                    static_cast<void*>(__cvta_shared_to_generic(dst)), map, coords, bar);
}

// The same copy delivered to every CTA of the cluster named in `cta_mask` (bit r: rank r), at
// the same shared-memory offset in each, completing on each one's mbarrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_3d_multicast(uint32_t dst, const CUtensorMap* map, uint64_t* bar, int x, int y,
                                                      int z, uint16_t cta_mask) {
  const int32_t coords[3] = {x, y, z};
  ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global,
                                    static_cast<void*>(__cvta_shared_to_generic(dst)), map, coords, bar, cta_mask);
}

// Fetches a tensor map into the TMA unit's cache ahead of its first copy (PTX 9.7.9.26
// prefetch.tensormap; CCCL has no wrapper): the map is a kernel parameter, and the first copy
// would otherwise wait for it to come from memory.
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

}  // namespace spmma::ptx
