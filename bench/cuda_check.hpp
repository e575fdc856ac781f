// SPDX-License-Identifier: BSD-3-Clause
// The microbenchmarks' CUDA runtime check: a failed call prints where and why, and the program
// exits 1 (they measure; there is nothing to recover).
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(call)                                                                                   \
  do {                                                                                             \
    const cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "CUDA error %s (%s) at %s:%d: %s\n", cudaGetErrorName(err_),            \
                   cudaGetErrorString(err_), __FILE__, __LINE__, #call);                           \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
