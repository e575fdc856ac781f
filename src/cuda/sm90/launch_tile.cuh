// SPDX-License-Identifier: BSD-3-Clause
// The definition of sm90::launch_tile, included by the generated instantiation files
// (build/generated/gemm_sm90_*.cu): one grid of the kernel at one instantiation.
#pragma once
#include <algorithm>

#include "device_buffer.cuh"
#include "sm90/launch_sm90.hpp"
#include "sm90/spgemm_sm90.cuh"

namespace spmma::sm90 {

template <ElemType A, ElemType B, int BlockN, bool Promote>
void launch_tile(const Maps& m, const gemm::Params& p, cudaStream_t s) {
  constexpr auto kernel = &spgemm_kernel<A, B, BlockN, Promote>;
  constexpr int smem = Smem<BlockN>::kBytes;
  cuda::set_smem_limit(reinterpret_cast<const void*>(kernel), smem, "sm90 kernel");
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(ctas(p.m_pad, p.n, BlockN, p.cluster_m)),
                     static_cast<unsigned>(std::min(gemm::kMaxGridBatch, p.batch - p.batch0)),
                     static_cast<unsigned>(p.splits > 1 ? p.splits : 1));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = static_cast<unsigned>(p.cluster_m), cluster.val.clusterDim.y = 1, cluster.val.clusterDim.z = 1;
  cfg.attrs = &cluster;
  cfg.numAttrs = p.cluster_m > 1 ? 1 : 0;
  cuda::check(cudaLaunchKernelEx(&cfg, kernel, m.a, m.b, m.meta, p), "launch of the sm90 kernel");
}

}  // namespace spmma::sm90
