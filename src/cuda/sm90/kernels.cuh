// Instantiation helper of the sm90 kernel: one launcher per instruction (traits) and tile width.
#pragma once
#include <cstdlib>

#include "device_buffer.cuh"
#include "sm90/launch_sm90.hpp"
#include "sm90/spgemm_sm90.cuh"

namespace spmma::sm90 {

template <class Traits, int BlockN, int Group>
void launch_tile(const CUtensorMap& a, const CUtensorMap& b, const gemm::Params& p, cudaStream_t s) {
  using T = Tile<BlockN, Group>;
  static const bool ready = [] {
    cuda::check(cudaFuncSetAttribute(spgemm_kernel<Traits, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes),
                "cudaFuncSetAttribute (sm90 kernel)");
    return true;
  }();
  (void)ready;
  const int m_tiles = p.m_pad / kBlockM, n_tiles = (p.n + BlockN - 1) / BlockN;
  const dim3 grid(static_cast<unsigned>(m_tiles * n_tiles), static_cast<unsigned>(p.batch),
                  static_cast<unsigned>(p.splits > 1 ? p.splits : 1));
  spgemm_kernel<Traits, T><<<grid, kThreads, T::kSmemBytes, s>>>(a, b, p);
}

// fp8 (promoted) keeps two accumulator sets, so its widest tile is 128.
template <class Traits, int Group>
void launch_group(int block_n, const CUtensorMap& a, const CUtensorMap& b, const gemm::Params& p, cudaStream_t s) {
  if (block_n == 64) launch_tile<Traits, 64, Group>(a, b, p, s);
  else if constexpr (Traits::kPromote) launch_tile<Traits, 128, Group>(a, b, p, s);
  else if (block_n == 128) launch_tile<Traits, 128, Group>(a, b, p, s);
  else launch_tile<Traits, 256, Group>(a, b, p, s);
}

// Stages per wait: 2 for fp8 (short wgmmas), 1 otherwise; SPMMA_SM90_GROUP=1|2 overrides (experiments).
template <class Traits>
void launch_traits(int block_n, const CUtensorMap& a, const CUtensorMap& b, const gemm::Params& p, cudaStream_t s) {
  static const int group = [] {
    const char* e = std::getenv("SPMMA_SM90_GROUP");
    return e && (e[0] == '1' || e[0] == '2') ? e[0] - '0' : (Traits::kPromote ? 2 : 1);
  }();
  if (group == 2) launch_group<Traits, 2>(block_n, a, b, p, s);
  else launch_group<Traits, 1>(block_n, a, b, p, s);
}

}  // namespace spmma::sm90
