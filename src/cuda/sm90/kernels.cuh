// Instantiation helper of the sm90 kernel: one launcher per instruction (traits) and tile width.
#pragma once
#include "device_buffer.cuh"
#include "sm90/launch_sm90.hpp"
#include "sm90/spgemm_sm90.cuh"

namespace spmma::sm90 {

template <class Traits, int BlockN>
void launch_tile(const Maps& m, const gemm::Params& p, cudaStream_t s) {
  using T = Tile<BlockN>;
  static const bool ready = [] {
    cuda::check(cudaFuncSetAttribute(spgemm_kernel<Traits, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes),
                "cudaFuncSetAttribute (sm90 kernel)");
    return true;
  }();
  (void)ready;
  const int m_tiles = p.m_pad / kBlockM, n_tiles = (p.n + BlockN - 1) / BlockN;
  const dim3 grid(static_cast<unsigned>(m_tiles * n_tiles), static_cast<unsigned>(p.batch),
                  static_cast<unsigned>(p.splits > 1 ? p.splits : 1));
  spgemm_kernel<Traits, T><<<grid, kThreads, T::kSmemBytes, s>>>(m.a, m.b, m.meta, p);
}

// fp8 (promoted) keeps two accumulator sets, so its widest tile is 192.
template <class Traits>
void launch_traits(int block_n, const Maps& m, const gemm::Params& p, cudaStream_t s) {
  if (block_n == 64) launch_tile<Traits, 64>(m, p, s);
  else if (block_n == 128) launch_tile<Traits, 128>(m, p, s);
  else if constexpr (Traits::kPromote) launch_tile<Traits, 192>(m, p, s);
  else launch_tile<Traits, 256>(m, p, s);
}

}  // namespace spmma::sm90
