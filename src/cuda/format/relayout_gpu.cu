// SPDX-License-Identifier: BSD-3-Clause
#include <cuda_runtime.h>

#include <string>

#include "format/relayout_gpu.cuh"
#include "spmma/error.hpp"

namespace spmma::gpu_format {
namespace {

__global__ void relayout_kernel(RelayoutParams p) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tid >= compress_threads(p.shape)) return;
  const unsigned long long v = relayout_word(p, tid);
  if (v != kNoViolation && p.bad) atomicMin(p.bad, v);
}

}  // namespace

void launch_relayout(const RelayoutParams& rp, void* stream) {
  const CompressParams& p = rp.shape;
  if (!p.rule.valid() || p.elem_bits <= 0 || p.lanes <= 0 || p.k_inst <= 0 || p.shape.groups() < 2 ||
      p.k_inst % p.shape.chunk != 0 || (p.k_inst / p.shape.chunk) % 4 != 0)
    fail(Status::internal, "GPU relayout: the parameters of A's type were not filled by gpu_format::compress_params_for()");
  if (p.m_pad % 16 != 0 || p.m > p.m_pad || p.k % p.k_inst != 0 || p.meta_group <= 0 ||
      rp.x_meta_words * 4 * p.shape.chunk != p.k)
    fail(Status::internal, "GPU relayout: m_pad = " + std::to_string(p.m_pad) + ", m = " + std::to_string(p.m) +
                               ", k = " + std::to_string(p.k) + ", " + std::to_string(rp.x_meta_words) +
                               " metadata words per row do not describe the two layouts");
  const int64_t total = compress_threads(p);
  if (total == 0) return;
  const int threads = 256;
  const int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 0x7FFFFFFF)
    fail(Status::not_supported, "GPU relayout: " + std::to_string(total) + " metadata words exceed one grid");
  relayout_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(rp);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) fail(Status::cuda_error, std::string("GPU relayout: ") + cudaGetErrorString(e));
}

}  // namespace spmma::gpu_format
