// SPDX-License-Identifier: BSD-3-Clause
// The definition of sm90::prepare_tile, included by the generated instantiation files
// (build/generated/gemm_sm90_*.cu): one grid of the kernel at one instantiation, as a plan decides it.
#pragma once
#include <algorithm>
#include <atomic>

#include "device_buffer.cuh"
#include "launch.hpp"
#include "sm90/launch_sm90.hpp"
#include "sm90/spgemm_sm90.cuh"

namespace spmma::sm90 {

// CTAs of the kernel that fit the device at once, in whole clusters: one per SM alone; in
// clusters of 2, what the occupancy calculator places (an SM without a partner in its GPU
// processing cluster stays out). Asked once per device, instantiation and cluster size.
template <class Kernel>
int resident_ctas(Kernel kernel, cudaLaunchConfig_t cfg, int cluster) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> known[kMaxDevices][kMaxCluster + 1];
  int dev = 0;
  cuda::check(cudaGetDevice(&dev), "cudaGetDevice");
  if (dev < kMaxDevices)
    if (const int n = known[dev][cluster].load(std::memory_order_relaxed)) return n;
  int n = 0;
  if (cluster == 1) {
    cuda::check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
  } else {
    cfg.gridDim = dim3(static_cast<unsigned>(cluster));  // a grid of whole clusters, as the query requires
    cuda::check(cudaOccupancyMaxActiveClusters(&n, kernel, &cfg), "cudaOccupancyMaxActiveClusters (sm90 kernel)");
    n *= cluster;
  }
  if (n < cluster)
    fail(Status::cuda_error, "the sm90 kernel fits no cluster of " + std::to_string(cluster) + " CTAs on this device");
  if (dev < kMaxDevices) known[dev][cluster].store(n, std::memory_order_relaxed);
  return n;
}

template <ElemType A, ElemType B, int BlockN, bool Promote>
cuda::Launch prepare_tile(const gemm::Params& p) {
  constexpr auto kernel = &spgemm_kernel<A, B, BlockN, Promote>;
  constexpr int smem = Smem<BlockN>::kBytes;
  cuda::Launch l;
  l.fn = cuda::function(reinterpret_cast<const void*>(kernel), smem, "sm90 kernel");
  l.block = kThreads;
  l.smem = smem;
  // A cluster: cluster_m CTAs along M times the parts of split K (scheduler.cuh).
  l.cluster = static_cast<unsigned>(p.cluster_m * p.splits);
  // Programmatic dependent launch (spgemm_sm90.cuh): the grid may start while the kernel before it
  // in the stream finishes, its set-up overlapping that kernel's last CTAs; its threads wait for
  // that kernel before they touch global memory.
  l.dependent = p.dependent_launch;
  l.batch0 = p.batch0;
  // One cluster per unit, or a persistent grid (scheduler.cuh): at most as many as fit at once
  // (never with split K, whose parts hand their sums over in the stages: the plan decides).
  const int64_t ctas = l.cluster * work_units(p.m_pad, p.n, BlockN, p.cluster_m, std::min(gemm::kMaxGridBatch, p.batch - p.batch0));
  if (p.persistent) {
    cudaLaunchConfig_t placed{};  // the occupancy query: the cluster attribute alone
    placed.blockDim = dim3(kThreads);
    placed.dynamicSmemBytes = smem;
    cudaLaunchAttribute cluster{};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = l.cluster, cluster.val.clusterDim.y = 1, cluster.val.clusterDim.z = 1;
    placed.attrs = &cluster, placed.numAttrs = l.cluster > 1 ? 1 : 0;
    l.grid_x = static_cast<unsigned>(std::min<int64_t>(ctas, resident_ctas(kernel, placed, p.cluster_m)));
  } else {
    l.grid_x = static_cast<unsigned>(ctas);
  }
  return l;
}

}  // namespace spmma::sm90
