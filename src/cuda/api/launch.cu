// SPDX-License-Identifier: BSD-3-Clause
// Launches decided at plan time (launch.hpp): the kernel's driver function, and its enqueueing
// through the driver's cuLaunchKernelEx.
#include <string>

#include "device_buffer.cuh"
#include "launch.hpp"

namespace spmma::cuda {
namespace {

PFN_cuLaunchKernelEx_v11060 launch_fn() {
  static const auto fn = driver_fn<PFN_cuLaunchKernelEx_v11060>("cuLaunchKernelEx", 11060);
  return fn;
}

}  // namespace

CUfunction function(const void* kernel, int smem_limit, const char* what) {
  if (!launch_fn()) fail(Status::cuda_error, std::string(what) + ": the CUDA driver has no cuLaunchKernelEx (CUDA 11.8+)");
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_limit),
        std::string("cudaFuncSetAttribute (") + what + ", " + std::to_string(smem_limit) + " bytes of shared memory)");
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared),
        std::string("cudaFuncSetAttribute (") + what + ", shared memory carveout)");
  // The context-free kernel handle, which the driver's launch accepts as a function: it runs in
  // the stream's context (the current one for the default stream), whatever the thread's.
  cudaKernel_t k = nullptr;
  check(cudaGetKernel(&k, kernel), std::string("cudaGetKernel (") + what + ")");
  return reinterpret_cast<CUfunction>(k);
}

void enqueue(const Launch& l, void** args, cudaStream_t s, const char* what) {
  CUlaunchAttribute attrs[2]{};
  unsigned n = 0;
  if (l.cluster > 1) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = l.cluster, attrs[n].value.clusterDim.y = 1, attrs[n].value.clusterDim.z = 1;
    ++n;
  }
  if (l.dependent) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  CUlaunchConfig cfg{};
  cfg.gridDimX = l.grid_x, cfg.gridDimY = l.grid_y, cfg.gridDimZ = 1;
  cfg.blockDimX = l.block, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  cfg.sharedMemBytes = l.smem;
  cfg.hStream = s;
  cfg.attrs = attrs, cfg.numAttrs = n;
  check(launch_fn()(&cfg, l.fn, args, nullptr), what);
}

}  // namespace spmma::cuda
