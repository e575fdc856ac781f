// SPDX-License-Identifier: BSD-3-Clause
// stmatrix (PTX ISA 9.7.9.28, sm_90): a warp stores four 8 x 8 matrices of 16-bit elements from
// the mma fragment layout (lane l holds row l / 4, columns 2(l % 4) and 2(l % 4) + 1 of each, one
// 32-bit register per matrix) into shared memory, one 16-byte row per address; lanes 8i .. 8i + 7
// give the addresses of matrix i's rows 0 .. 7. With Trans, each matrix is stored transposed: the
// address of row j receives the fragment's column j. Not in CCCL's <cuda/ptx> (CUDA 13.0).
#pragma once
#include <cstdint>

namespace spmma::ptx {

template <bool Trans>
__device__ __forceinline__ void stmatrix_x4(uint32_t smem_addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  if constexpr (Trans)
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr), "r"(r0),
                 "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
  else
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
}

}  // namespace spmma::ptx
