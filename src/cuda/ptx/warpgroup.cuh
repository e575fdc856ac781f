// SPDX-License-Identifier: BSD-3-Clause
// Warp-specialisation primitives: register reallocation between warpgroups (setmaxnreg, PTX
// 9.7.18.1, sm_90a), named barriers over a subset of the CTA's threads (bar.sync, 9.7.13.1) and
// one lane elected from a warp (elect.sync, sm_90).
#pragma once
#include <cstdint>

namespace spmma::ptx {

template <int Regs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
}
template <int Regs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
}

// Named barrier `id` (1..15; 0 is __syncthreads) over `threads` threads (a multiple of 32).
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// elect.sync (sm_90): true in one lane of the (fully active) warp, the same lane
// in every lane's view. A warp that runs a loop together and issues its copies from one lane keeps
// the loop's warp-uniform values in uniform registers (sm90 kernel's producer).
__device__ __forceinline__ bool elect_one() {
  uint32_t elected;
  asm volatile(
      "{\n\t.reg .pred P;\n\telect.sync _|P, 0xffffffff;\n\tselp.b32 %0, 1, 0, P;\n\t}"
      : "=r"(elected));
  return elected != 0;
}

}  // namespace spmma::ptx
