// SPDX-License-Identifier: BSD-3-Clause
// The definition of sm90::decode::prepare_tile, included by the generated instantiation files
// (build/generated/gemm_sm90_*.cu): one grid of the decode kernel at one instantiation, as a plan
// decides it.
#pragma once
#include <algorithm>

#include "launch.hpp"
#include "sm90/decode.cuh"
#include "sm90/decode_launch.hpp"

namespace spmma::sm90::decode {

template <ElemType A, ElemType B, int BlockN, Math M>
cuda::Launch prepare_tile(const gemm::Params& p) {
  const auto kernel = p.splits > 1 ? &decode_kernel<A, B, BlockN, M, true> : &decode_kernel<A, B, BlockN, M, false>;
  cuda::Launch l;
  // The limit: the deepest pipeline that fits a CTA (the plan's depth never exceeds it: heuristics.cu).
  l.fn = cuda::function(reinterpret_cast<const void*>(kernel), std::min(smem_bytes(BlockN, kMaxStages, M), kSmemLimit),
                        "sm90 decode kernel");
  l.block = threads(p.decode_issuers);
  l.smem = static_cast<unsigned>(smem_bytes(BlockN, p.decode_stages, M));
  // Programmatic dependent launch, as the main kernel (launch_tile.cuh); split K: a tile's parts
  // are the CTAs of one cluster (decode.cuh).
  l.dependent = p.dependent_launch;
  l.cluster = static_cast<unsigned>(p.splits);
  l.batch0 = p.batch0;
  l.grid_x = static_cast<unsigned>(ctas(p.m_pad, p.n, BlockN, M) * p.splits);
  l.grid_y = static_cast<unsigned>(std::min(gemm::kMaxGridBatch, p.batch - p.batch0));
  return l;
}

}  // namespace spmma::sm90::decode
