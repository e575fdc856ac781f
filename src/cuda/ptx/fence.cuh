// SPDX-License-Identifier: BSD-3-Clause
// Proxy fences (PTX 9.7.13.4), through CCCL's <cuda/ptx>.
#pragma once
#include <cuda/ptx>

namespace spmma::ptx {

// Makes this thread's generic-proxy writes to shared memory visible to the async proxy (TMA,
// wgmma's shared-memory operands).
__device__ __forceinline__ void fence_proxy_async_smem() { ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared); }

}  // namespace spmma::ptx
