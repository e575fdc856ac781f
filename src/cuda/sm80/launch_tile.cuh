// SPDX-License-Identifier: BSD-3-Clause
// The definition of sm80::prepare_tile, included by the generated instantiation file
// (build/generated/gemm_sm80.cu): one grid of the kernel for a type pair, as a plan decides it.
#pragma once
#include <algorithm>

#include "launch.hpp"
#include "sm80/launch_sm80.hpp"
#include "sm80/spgemm_sm80.cuh"

namespace spmma::sm80 {

template <ElemType A, ElemType B>
cuda::Launch prepare_tile(const gemm::Params& p) {
  cuda::Launch l;
  l.fn = cuda::function(reinterpret_cast<const void*>(&spgemm_kernel<A, B>), CtaTile::kSmemBytes, "sm80 kernel");
  l.block = kThreads;
  l.smem = CtaTile::kSmemBytes;
  l.batch0 = p.batch0;
  l.grid_x = static_cast<unsigned>(ctas(p.m_pad, p.n));
  l.grid_y = static_cast<unsigned>(std::min(gemm::kMaxGridBatch, p.batch - p.batch0));
  return l;
}

}  // namespace spmma::sm80
