// SPDX-License-Identifier: BSD-3-Clause
#include <cuda_runtime.h>

#include <string>

#include "format/compress_gpu.cuh"
#include "spmma/error.hpp"

namespace spmma::gpu_format {
namespace {

__global__ void compress_kernel(CompressParams p) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tid >= compress_threads(p)) return;
  const unsigned long long v = compress_word(p, tid);
  if (v != kNoViolation && p.violation) atomicMin(p.violation, v);
}

}  // namespace

void launch_compress(const CompressParams& p, void* stream) {
  // The type fields come from compress_params_for(); a caller that set them by hand (or not at
  // all) would get another rule than the host's.
  if (!p.rule.valid() || p.elem_bits <= 0 || p.lanes <= 0 || p.k_inst <= 0 || p.shape.groups() < 2 ||
      p.k_inst % p.shape.chunk != 0)
    fail(Status::internal, "GPU compress: the parameters of A's type were not filled by gpu_format::compress_params_for()");
  if (p.m_pad % 16 != 0 || p.m > p.m_pad || p.k % p.k_inst != 0 || p.meta_group <= 0)
    fail(Status::internal, "GPU compress: m_pad = " + std::to_string(p.m_pad) + ", m = " + std::to_string(p.m) +
                               ", k = " + std::to_string(p.k) + " (instruction K " + std::to_string(p.k_inst) +
                               "), group " + std::to_string(p.meta_group) + " do not describe a fragment-ready layout");
  const int64_t total = compress_threads(p);
  if (total == 0) return;
  const int threads = 256;
  const int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 0x7FFFFFFF)  // one thread per metadata word: 2^39 words would be 2 TiB of metadata
    fail(Status::not_supported, "GPU compress: " + std::to_string(total) + " metadata words exceed one grid");
  compress_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) fail(Status::cuda_error, std::string("GPU compress: ") + cudaGetErrorString(e));
}

}  // namespace spmma::gpu_format
