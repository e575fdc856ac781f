// SPDX-License-Identifier: BSD-3-Clause
// Kernel-image probe and pointer checks (device_check.cuh).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "api/backend.hpp"
#include "api/device_check.cuh"
#include "device_buffer.cuh"

#ifndef SPMMA_CUDA_ARCHITECTURES
#define SPMMA_CUDA_ARCHITECTURES "unknown"
#endif

namespace spmma::cuda {
namespace {

// Reports the architecture the driver loaded for this build on the current device, and whether
// that image has sm_90a's features (the sm90 kernel's wgmma / setmaxnreg compile only there).
__global__ void probe_image(int* out) {
#if defined(__CUDA_ARCH__)
  out[0] = __CUDA_ARCH__;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  out[1] = 1;
#else
  out[1] = 0;
#endif
#endif
}

std::string device_label(int ordinal) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) return "device " + std::to_string(ordinal);
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", device " +
         std::to_string(ordinal) + ")";
}

KernelImage probe(int ordinal) {
  KernelImage img;
  const std::string build = std::string("this build has ") + SPMMA_CUDA_ARCHITECTURES +
                            " (CMAKE_CUDA_ARCHITECTURES; an sm_XY machine code runs on sm_XZ with Z >= Y, "
                            "PTX on every later GPU)";
  DeviceGuard guard(ordinal);
  cudaFuncAttributes attr{};
  cudaError_t e = cudaFuncGetAttributes(&attr, probe_image);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it, the caller reports why
    img.why = "spmma's kernels do not load on " + device_label(ordinal) + ": " + cudaGetErrorString(e) + "; " + build;
    return img;
  }
  int* d = nullptr;
  check(cudaMalloc(&d, 2 * sizeof(int)), "kernel probe: cudaMalloc");
  probe_image<<<1, 1>>>(d);
  e = cudaGetLastError();
  int h[2] = {0, 0};
  if (e == cudaSuccess) e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (e != cudaSuccess) {
    if (!sticky(e)) (void)cudaGetLastError();
    img.why = "spmma's probe kernel failed on " + device_label(ordinal) + ": " + cudaGetErrorString(e) + "; " + build;
    return img;
  }
  img.loads = true;
  img.arch = h[0];
  img.sm90a = h[1] != 0;
  return img;
}

PFN_cuMemGetAddressRange_v3020 address_range_fn() {
  static const auto fn = driver_fn<PFN_cuMemGetAddressRange_v3020>("cuMemGetAddressRange", 3020);
  return fn;
}

std::string address(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace

const KernelImage& kernel_image(int ordinal) {
  static std::mutex mu;
  static std::map<int, KernelImage> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(ordinal);
  if (it == cache.end()) it = cache.emplace(ordinal, probe(ordinal)).first;
  return it->second;
}

void check_device_memory(const void* p, size_t bytes, int ordinal, const char* what) {
  // What the driver said of a pointer (its memory type and allocation) is kept for the thread's
  // recent pointers, so a loop of runs on the same buffers asks it once and looks up without a
  // lock (two driver calls per pointer were about 1 us each of Plan::run's host time). A range
  // the kept answer does not cover is asked again before it is refused, so a stale entry never
  // refuses valid memory; a buffer freed and allocated again smaller at the same address is
  // checked against its first allocation while it stays recent.
  struct Seen {
    uintptr_t ptr = 0;
    int ordinal = -1;
    bool device = false;  // false: managed memory (the caller's size is trusted)
    uintptr_t base = 0;
    size_t size = 0;  // 0: the driver could not say
  };
  thread_local Seen recent[16];
  thread_local unsigned next = 0;
  const auto u = reinterpret_cast<uintptr_t>(p);
  const auto covers = [&](const Seen& s) { return !s.device || s.size == 0 || u + bytes <= s.base + s.size; };
  for (const Seen& r : recent)
    if (r.ptr == u && r.ordinal == ordinal && covers(r)) return;
  Seen s;
  s.ptr = u, s.ordinal = ordinal;
  cudaPointerAttributes attr{};
  check(cudaPointerGetAttributes(&attr, p), std::string(what) + ": cudaPointerGetAttributes");
  switch (attr.type) {
    case cudaMemoryTypeDevice:
      if (attr.device != ordinal)
        fail(Status::invalid_argument, std::string(what) + " = " + address(p) + " is memory of CUDA device " +
                                           std::to_string(attr.device) + ", the handle computes on device " +
                                           std::to_string(ordinal));
      s.device = true;
      break;
    case cudaMemoryTypeManaged: break;
    case cudaMemoryTypeHost:
      fail(Status::invalid_argument, std::string(what) + " = " + address(p) +
                                         " is page-locked host memory; a GPU handle takes device (or managed) "
                                         "memory (copy it to the device first)");
    default:
      fail(Status::invalid_argument, std::string(what) + " = " + address(p) +
                                         " is host memory, unknown to CUDA; a GPU handle takes device (or "
                                         "managed) memory (copy it to the device first)");
  }
  if (s.device) {
    CUdeviceptr base = 0;
    size_t size = 0;
    const auto range = address_range_fn();
    if (range && range(&base, &size, static_cast<CUdeviceptr>(u)) == CUDA_SUCCESS)
      s.base = static_cast<uintptr_t>(base), s.size = size;
  }
  if (!covers(s))
    fail(Status::invalid_argument, std::string(what) + " [" + address(p) + ", +" + std::to_string(bytes) +
                                       " bytes) runs past the end of its allocation (" + std::to_string(s.size) +
                                       " bytes from " + address(reinterpret_cast<const void*>(s.base)) +
                                       "): the buffer is smaller than the description needs");
  recent[next++ % 16] = s;
}

}  // namespace spmma::cuda

namespace spmma::detail {
// Through the driver, so that a CPU handle's check never creates a CUDA context (which would
// take GPU memory from a process that only computes on the CPU): without one, no device pointer
// can exist and the driver answers with an error.
bool is_device_pointer(const void* p) {
  static const auto get = cuda::driver_fn<PFN_cuPointerGetAttributes_v7000>("cuPointerGetAttributes", 7000);
  if (!get) return false;
  // cuPointerGetAttributes answers "not CUDA's" with zeros and success for a host pointer, where
  // the singular call returns an error (which compute-sanitizer reports as an API error).
  unsigned type = 0, managed = 0;
  CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void* values[2] = {&type, &managed};
  if (get(2, attrs, values, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) return false;
  return type == CU_MEMORYTYPE_DEVICE && !managed;  // managed memory: the host reads it
}
}  // namespace spmma::detail

namespace spmma::detail {

// For spmma::build_info() (src/api/build_info.cpp): the toolkit this was compiled with and the
// architectures compiled in.
std::string cuda_toolkit_version() {
  return std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
}
std::string cuda_architectures() { return SPMMA_CUDA_ARCHITECTURES; }

}  // namespace spmma::detail
