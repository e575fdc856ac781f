// SPDX-License-Identifier: BSD-3-Clause
// B repacked into the workspace (repack_b.cuh): 32 x 32 element tiles, a grid-stride loop over
// (batch entry, K tile, N tile) in 64-bit indices, so no size of B reaches a grid limit.
#include "api/repack_b.cuh"

#include <algorithm>
#include <string>

#include "device_buffer.cuh"
#include "spmma/error.hpp"

namespace spmma::gpu_api {
namespace {

constexpr int kTile = 32;

template <class T>
__global__ void repack_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t k, int64_t n, int64_t ld,
                              int64_t stride, int64_t batch, bool row_major) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t k_tiles = (k + kTile - 1) / kTile, n_tiles = (n + kTile - 1) / kTile;
  const int64_t total = batch * k_tiles * n_tiles;
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    const int64_t bz = t / (k_tiles * n_tiles), rem = t % (k_tiles * n_tiles);
    const int64_t k0 = rem / n_tiles * kTile, n0 = rem % n_tiles * kTile;
    const T* src = in + bz * stride;
    T* dst = out + bz * k * n;
    if (row_major) {
      // Read along N (B's contiguous dimension), write along K through the transposed tile.
      for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
        const int64_t kk = k0 + i, j = n0 + threadIdx.x;
        if (kk < k && j < n) tile[i][threadIdx.x] = src[kk * ld + j];
      }
      __syncthreads();
      for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
        const int64_t j = n0 + i, kk = k0 + threadIdx.x;
        if (kk < k && j < n) dst[j * k + kk] = tile[threadIdx.x][i];
      }
      __syncthreads();
    } else {
      // Column-major: a copy along K with the new leading dimension.
      for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
        const int64_t j = n0 + i, kk = k0 + threadIdx.x;
        if (kk < k && j < n) dst[j * k + kk] = src[j * ld + kk];
      }
    }
  }
}

template <class T>
void launch(const RepackB& r, int64_t k, int64_t ld, int64_t stride, cudaStream_t s) {
  const int64_t tiles = r.batch * ((k + kTile - 1) / kTile) * ((r.n + kTile - 1) / kTile);
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(tiles, 1 << 16));
  repack_kernel<T><<<blocks, dim3(kTile, 8), 0, s>>>(static_cast<const T*>(r.in), static_cast<T*>(r.out), k, r.n, ld,
                                                      stride, r.batch, r.row_major);
}

}  // namespace

size_t repacked_b_bytes(int64_t batch, int64_t k, int64_t n, int elem_bits) {
  return static_cast<size_t>(batch) * static_cast<size_t>(k) * static_cast<size_t>(n) * static_cast<size_t>(elem_bits) / 8;
}

void repack_b(const RepackB& r, cudaStream_t s) {
  switch (r.elem_bits) {
    case 4:  // two per byte along K: column j is k/2 bytes at byte j·ld/2 (K, ld and stride even)
      if (r.row_major) fail(Status::internal, "repack_b: a row-major 4-bit B cannot be transposed by bytes");
      launch<uint8_t>(r, r.k / 2, r.ld / 2, r.stride / 2, s);
      break;
    case 8: launch<uint8_t>(r, r.k, r.ld, r.stride, s); break;
    case 16: launch<uint16_t>(r, r.k, r.ld, r.stride, s); break;
    case 32: launch<uint32_t>(r, r.k, r.ld, r.stride, s); break;
    default: fail(Status::internal, "repack_b: element width " + std::to_string(r.elem_bits));
  }
  cuda::check(cudaGetLastError(), "launch of B's repack into the workspace");
}

}  // namespace spmma::gpu_api
