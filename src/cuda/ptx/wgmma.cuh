// SPDX-License-Identifier: BSD-3-Clause
// wgmma's synchronisation (PTX 9.7.15.6) and shared-memory matrix descriptors (9.7.15.5.1).
// CCCL's <cuda/ptx> has no wgmma instructions; these are the few the kernels need. The MMA
// instructions themselves are generated from the ISA registry (build/generated/ptx_wgmma_sp.cuh).
#pragma once
#include <cstdint>

namespace spmma::ptx {

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed groups of this warpgroup are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Tells the compiler a register may change here (wgmma writes accumulators asynchronously), so
// no read of it moves across a wait.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void fence_operand(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
template <class T, int N>
__device__ __forceinline__ void fence_operands(T (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence_operand(r[i]);
}

// Shared-memory matrix descriptor, K-major, swizzled: start address, leading byte offset (unused
// for swizzled K-major: 16), stride byte offset = one 8-row atom, layout 1 = 128-byte swizzle,
// 2 = 64-byte swizzle (docs/layouts.md). Start addresses are in 16-byte units, so a K step
// inside an atom adds bytes / 16.
template <int RowBytes>
__device__ __forceinline__ uint64_t smem_desc(uint32_t smem_addr) {
  static_assert(RowBytes == 64 || RowBytes == 128, "64- or 128-byte swizzle");
  constexpr uint64_t layout = RowBytes == 128 ? 1 : 2;
  return static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(8 * RowBytes >> 4) << 32) | (layout << 62);
}

}  // namespace spmma::ptx
