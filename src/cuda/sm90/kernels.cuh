// Instantiation helper of the sm90 kernel: one launcher per instruction (traits) and tile width.
#pragma once
#include <algorithm>

#include "device_buffer.cuh"
#include "sm90/launch_sm90.hpp"
#include "sm90/spgemm_sm90.cuh"

namespace spmma::sm90 {

template <class Traits, int BlockN>
void launch_tile(const Maps& m, const gemm::Params& p, cudaStream_t s) {
  using T = Tile<BlockN>;
  cuda::set_smem_limit(reinterpret_cast<const void*>(&spgemm_kernel<Traits, T>), T::kSmemBytes, "sm90 kernel");
  // Batch entries p.batch0 .. p.batch0 + grid.y - 1 (sm90::launch splits a batch over launches).
  const dim3 grid(static_cast<unsigned>(ctas(p.m_pad, p.n, BlockN)),
                  static_cast<unsigned>(std::min(gemm::kMaxGridBatch, p.batch - p.batch0)),
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
