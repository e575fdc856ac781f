// Host-side helpers shared by the CUDA sources: a checked CUDA call and an owning device buffer.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "spmma/error.hpp"

namespace spmma::cuda {

// Throws Error(cuda_error) naming `what` and CUDA's message.
inline void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) fail(Status::cuda_error, what + ": " + cudaGetErrorString(e));
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
