// SPDX-License-Identifier: BSD-3-Clause
// Host-side helpers shared by the CUDA sources: a checked CUDA call, an owning device buffer, a
// scoped current device, and a driver entry point.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spmma/error.hpp"

namespace spmma::cuda {

// Errors after which the CUDA context is unusable: every later call of the process returns them.
inline bool sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}
// The driver numbers these errors as the runtime does, so one rule serves the results of both.
static_assert(static_cast<int>(CUDA_ERROR_ILLEGAL_ADDRESS) == static_cast<int>(cudaErrorIllegalAddress) &&
              static_cast<int>(CUDA_ERROR_LAUNCH_TIMEOUT) == static_cast<int>(cudaErrorLaunchTimeout) &&
              static_cast<int>(CUDA_ERROR_HARDWARE_STACK_ERROR) == static_cast<int>(cudaErrorHardwareStackError) &&
              static_cast<int>(CUDA_ERROR_ILLEGAL_INSTRUCTION) == static_cast<int>(cudaErrorIllegalInstruction) &&
              static_cast<int>(CUDA_ERROR_MISALIGNED_ADDRESS) == static_cast<int>(cudaErrorMisalignedAddress) &&
              static_cast<int>(CUDA_ERROR_INVALID_ADDRESS_SPACE) == static_cast<int>(cudaErrorInvalidAddressSpace) &&
              static_cast<int>(CUDA_ERROR_INVALID_PC) == static_cast<int>(cudaErrorInvalidPc) &&
              static_cast<int>(CUDA_ERROR_LAUNCH_FAILED) == static_cast<int>(cudaErrorLaunchFailure) &&
              static_cast<int>(CUDA_ERROR_ASSERT) == static_cast<int>(cudaErrorAssert) &&
              static_cast<int>(CUDA_ERROR_ECC_UNCORRECTABLE) == static_cast<int>(cudaErrorECCUncorrectable));
inline bool sticky(CUresult r) { return sticky(static_cast<cudaError_t>(r)); }

// Throws Error(cuda_error) naming `what` and CUDA's message; a sticky error says that the
// context died earlier (an asynchronous kernel fault), not at `what`.
// (`what` is a view: a successful call, the hot path of Plan::run, makes no string.)
inline void check(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return;
  if (sticky(e))
    fail(Status::cuda_error, std::string(what) + ": " + cudaGetErrorString(e) +
                                 " (a sticky error: a kernel failed earlier, asynchronously, and the CUDA context of "
                                 "this process is no longer usable; the fault is not in this call)");
  fail(Status::cuda_error, std::string(what) + ": " + cudaGetErrorString(e));
}

// Makes `ordinal` the current device for the scope (when it is not already) and restores the
// caller's current device at the end: every entry point of a Handle runs on its device. On a
// thread that has made no CUDA call yet, no context is current even when the device is: the
// guard binds the device's primary context then (cudaSetDevice does), because the driver calls
// of a run (tensor maps, the launch) need one and, unlike the runtime's, do not bind it.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal) {
    check(cudaGetDevice(&prev_), "cudaGetDevice");
    if (prev_ != ordinal) {
      check(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")");
      restore_ = true;
    } else if (!context_current()) {
      check(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")");
    }
  }
  ~DeviceGuard() {
    if (restore_) cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  static bool context_current();
  int prev_ = 0;
  bool restore_ = false;
};

// A driver entry point through the runtime (spmma links the static runtime, not libcuda); null
// when the driver lacks it. Callers keep the answer (a static).
template <class Fn>
Fn driver_fn(const char* name, int version) {
  void* f = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &f, version, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    f = nullptr;
  (void)cudaGetLastError();  // not sticky: a missing entry point is answered by null
  return reinterpret_cast<Fn>(f);
}

inline bool DeviceGuard::context_current() {
  static const auto get = driver_fn<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent", 4000);
  CUcontext c = nullptr;
  return !get || (get(&c) == CUDA_SUCCESS && c != nullptr);  // without the entry point: as before
}

// A driver call's result, checked as check() checks the runtime's, in the driver's words.
inline void check(CUresult r, std::string_view what) {
  if (r == CUDA_SUCCESS) return;
  if (sticky(r)) check(static_cast<cudaError_t>(r), what);
  static const auto describe = driver_fn<PFN_cuGetErrorString_v6000>("cuGetErrorString", 6000);
  const char* text = nullptr;
  if (!describe || describe(r, &text) != CUDA_SUCCESS || !text) text = "unknown CUDA driver error";
  fail(Status::cuda_error, std::string(what) + ": " + text + " (CUresult " + std::to_string(static_cast<int>(r)) + ")");
}

// `n` elements of T in device memory, freed with the object (empty when n is 0).
template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;

  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : n(count) {
    if (n) check(cudaMalloc(&ptr, n * sizeof(T)), "cudaMalloc(" + std::to_string(n * sizeof(T)) + " bytes)");
  }
  DeviceBuffer(size_t count, unsigned char fill) : DeviceBuffer(count) {
    if (n) check(cudaMemset(ptr, fill, n * sizeof(T)), "cudaMemset");
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    if (n) check(cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr(std::exchange(o.ptr, nullptr)), n(std::exchange(o.n, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr, o.ptr);
    std::swap(n, o.n);
    return *this;
  }

  size_t bytes() const { return n * sizeof(T); }
  std::vector<T> download() const {
    std::vector<T> h(n);
    if (n) check(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return h;
  }
};

}  // namespace spmma::cuda
