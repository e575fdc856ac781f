// SPDX-License-Identifier: BSD-3-Clause
// B as every kernel reads it: columns of K contiguous elements, packed (ld = K), batch entries
// K x N elements apart, in the workspace. Used for a row-major B (transposed) and for a
// column-major B whose address, leading dimension or batch stride the kernels' 16-byte copies
// cannot take (copied).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace spmma::gpu_api {

struct RepackB {
  const void* in = nullptr;  // B as given: element (kk, j) at in[j·ld + kk] (column-major) or in[kk·ld + j]
  void* out = nullptr;       // the workspace: element (kk, j) at out[j·k + kk], entries k·n apart
  int64_t k = 0, n = 0, ld = 0, stride = 0, batch = 1;  // elements (4-bit types: see elem_bits)
  bool row_major = false;
  int elem_bits = 16;  // 8, 16 or 32; 4-bit B (column-major only) is moved as bytes (K and ld even)
};

// Bytes of the repacked B: batch x k x n elements.
size_t repacked_b_bytes(int64_t batch, int64_t k, int64_t n, int elem_bits);

// Enqueues the repack on `s`; throws on a launch failure.
void repack_b(const RepackB& r, cudaStream_t s);

}  // namespace spmma::gpu_api
