// SPDX-License-Identifier: BSD-3-Clause
// The definition of sm90::decode::launch_tile, included by the generated instantiation files
// (build/generated/gemm_sm90_*.cu): one grid of the decode kernel at one instantiation.
#pragma once
#include <algorithm>

#include "device_buffer.cuh"
#include "sm90/decode.cuh"
#include "sm90/decode_launch.hpp"

namespace spmma::sm90::decode {

template <ElemType A, ElemType B, int BlockN>
void launch_tile(const Maps& m, const gemm::Params& p, cudaStream_t s) {
  constexpr auto kernel = &decode_kernel<A, B, BlockN>;
  cuda::set_smem_limit(reinterpret_cast<const void*>(kernel), smem_bytes(BlockN, kMaxStages), "sm90 decode kernel");
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem_bytes(BlockN, p.decode_stages);
  cfg.stream = s;
  cudaLaunchAttribute attr{};
  // Programmatic dependent launch, as the main kernel (launch_tile.cuh).
  if (p.dependent_launch) {
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr, cfg.numAttrs = 1;
  }
  const int batches = std::min(gemm::kMaxGridBatch, p.batch - p.batch0);
  cfg.gridDim = dim3(static_cast<unsigned>(ctas(p.m_pad, p.n, BlockN)), static_cast<unsigned>(batches));
  cuda::check(cudaLaunchKernelEx(&cfg, kernel, m.a, m.b, m.meta, p), "launch of the sm90 decode kernel");
}

}  // namespace spmma::sm90::decode
