// SPDX-License-Identifier: BSD-3-Clause
// The definition of sm80::launch_tile, included by the generated instantiation file
// (build/generated/gemm_sm80.cu): one grid of the kernel for a type pair.
#pragma once
#include "device_buffer.cuh"
#include "sm80/launch_sm80.hpp"
#include "sm80/spgemm_sm80.cuh"

namespace spmma::sm80 {

template <ElemType A, ElemType B>
void launch_tile(const gemm::Params& p, cudaStream_t s, int batch_count) {
  constexpr auto kernel = &spgemm_kernel<A, B>;
  cuda::set_smem_limit(reinterpret_cast<const void*>(kernel), CtaTile::kSmemBytes, "sm80 kernel");
  const dim3 grid(static_cast<unsigned>(ctas(p.m_pad, p.n)), static_cast<unsigned>(batch_count));
  kernel<<<grid, kThreads, CtaTile::kSmemBytes, s>>>(p);
}

}  // namespace spmma::sm80
