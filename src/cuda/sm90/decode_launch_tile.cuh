// SPDX-License-Identifier: BSD-3-Clause
// The definition of sm90::decode::launch_tile, included by the generated instantiation files
// (build/generated/gemm_sm90_*.cu): one grid of the decode kernel at one instantiation.
#pragma once
#include <algorithm>

#include "device_buffer.cuh"
#include "sm90/decode.cuh"
#include "sm90/decode_launch.hpp"

namespace spmma::sm90::decode {

template <ElemType A, ElemType B, int BlockN, Math M>
void launch_tile(const Maps& m, const gemm::Params& p, cudaStream_t s) {
  const auto kernel = p.splits > 1 ? &decode_kernel<A, B, BlockN, M, true> : &decode_kernel<A, B, BlockN, M, false>;
  // The deepest pipeline that fits a CTA (the plan's depth never exceeds it: heuristics.cu).
  cuda::set_smem_limit(reinterpret_cast<const void*>(kernel), std::min(smem_bytes(BlockN, kMaxStages, M), kSmemLimit),
                       "sm90 decode kernel");
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem_bytes(BlockN, p.decode_stages, M);
  cfg.stream = s;
  cudaLaunchAttribute attrs[2]{};
  unsigned n = 0;
  // Programmatic dependent launch, as the main kernel (launch_tile.cuh).
  if (p.dependent_launch) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  // Split K: a tile's parts are the CTAs of one cluster (decode.cuh).
  if (p.splits > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = static_cast<unsigned>(p.splits);
    attrs[n].val.clusterDim.y = attrs[n].val.clusterDim.z = 1;
    ++n;
  }
  cfg.attrs = attrs, cfg.numAttrs = n;
  const int batches = std::min(gemm::kMaxGridBatch, p.batch - p.batch0);
  cfg.gridDim = dim3(static_cast<unsigned>(ctas(p.m_pad, p.n, BlockN, M) * p.splits), static_cast<unsigned>(batches));
  cuda::check(cudaLaunchKernelEx(&cfg, kernel, m.a, m.b, m.meta, p), "launch of the sm90 decode kernel");
}

}  // namespace spmma::sm90::decode
