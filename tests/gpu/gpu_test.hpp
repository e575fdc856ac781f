// SPDX-License-Identifier: BSD-3-Clause
// What every GPU test fixture starts from: a handle on the GPU, or why the test skips (label
// `gpu`: the tests skip with that message where no GPU is usable); CK for CUDA runtime calls.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "spmma/error.hpp"
#include "spmma/matmul.hpp"

// A CUDA runtime call that must succeed (a fatal test failure naming the call otherwise).
#define CK(x)                                                           \
  do {                                                                  \
    const cudaError_t e_ = (x);                                         \
    ASSERT_EQ(e_, cudaSuccess) << #x << ": " << cudaGetErrorString(e_); \
  } while (0)

namespace spmma::test {

// A GPU handle, or null with `why` set: no CUDA GPU on this machine, or none the library can use.
inline std::unique_ptr<Handle> gpu_handle(std::string& why) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    why = "no CUDA GPU on this machine";
    return nullptr;
  }
  try {
    return std::make_unique<Handle>(Device::gpu);
  } catch (const Error& e) {
    why = std::string("no usable GPU: ") + e.what();
    return nullptr;
  }
}

}  // namespace spmma::test
