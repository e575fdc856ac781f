// SPDX-License-Identifier: BSD-3-Clause
// Device helpers of the generated wgmma probes: shared-memory images and descriptors.
#pragma once
#include <cstdint>

#include "probe/probe.cuh"
#include "ptx/fence.cuh"
#include "ptx/wgmma.cuh"

namespace spmma::probe {

// The 64-bit wgmma matrix descriptor (PTX "Matrix Descriptor Format"): start address,
// leading and stride byte offsets in 16-byte units, swizzle mode in bits 63:62
// (0 none, 1 128B, 2 64B, 3 32B).
__device__ inline uint64_t smem_desc(const uint8_t* smem, uint32_t lbo, uint32_t sbo, uint32_t swizzle) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16;
  d |= static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32;
  d |= static_cast<uint64_t>(swizzle & 3) << 62;
  return d;
}

// Copies this trial's images of A and B into shared memory, then makes the writes visible to
// the tensor cores (the async proxy) before any thread issues wgmma.
__device__ inline void copy_smem_images(const ProbeArgs& p, int trial, uint8_t* smem) {
  const uint32_t* a = reinterpret_cast<const uint32_t*>(p.smem_a + static_cast<size_t>(trial) * p.smem_a_bytes);
  const uint32_t* b = reinterpret_cast<const uint32_t*>(p.smem_b + static_cast<size_t>(trial) * p.smem_b_bytes);
  uint32_t* sa = reinterpret_cast<uint32_t*>(smem);
  uint32_t* sb = reinterpret_cast<uint32_t*>(smem + p.smem_a_bytes_padded());
  for (uint32_t i = threadIdx.x; i < p.smem_a_bytes / 4; i += blockDim.x) sa[i] = a[i];
  for (uint32_t i = threadIdx.x; i < p.smem_b_bytes / 4; i += blockDim.x) sb[i] = b[i];
  ptx::fence_proxy_async_smem();
  __syncthreads();
}

}  // namespace spmma::probe
