// SPDX-License-Identifier: BSD-3-Clause
// Split K inside a cluster (tiles.hpp): the CTAs of parts 1 .. splits-1 of a tile's K range put
// their sums in their own shared memory (the stages, free once the tile's main loop is done) and
// arrive on part 0's barrier; part 0 adds them to its own, part after part, and alone runs the
// epilogue. One launch, no partial sums in global memory, the same order of additions on every
// run (deterministic): f32 sums in f32 (part 0's, + part 1's, + part 2's ...), s32 sums wrapping.
// (The reduce kernel this replaced added in double; at most 7 more f32 roundings, each 2^-24 of
// a partial sum, are far inside the 1e-5 of Σ|a·b| the tests hold f32 sums to.) The CTAs stay
// until part 0 has read them (the kernel's last cluster barrier).
#pragma once
#include <cstdint>
#include <type_traits>

#include "common/gemm_params.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/warpgroup.cuh"
#include "sm90/mainloop.cuh"
#include "sm90/scheduler.cuh"
#include "sm90/tiles.hpp"

namespace spmma::sm90 {

// Named barrier 1: the math warpgroups (barrier 0 is __syncthreads).
constexpr int kMathBarrier = 1;

// After the tile's main loop, before its epilogue: returns whether this CTA stores the tile (it
// holds the whole sums then). Called by every math thread.
template <class Acc, int BlockN>
__device__ __forceinline__ bool reduce_parts(Acc (&acc)[BlockN / 2], const Smem<BlockN>& sm, const gemm::Params& p,
                                             const WorkTile& w) {
  if (p.splits == 1) return true;
  constexpr int kMath = 128 * kConsumers;
  const int i = static_cast<int>(threadIdx.x) - 128;  // math thread 0 .. 255
  auto raw = [&](int j) { return reinterpret_cast<const uint32_t&>(acc[j]); };
  // f32 sums in f32, s32 sums wrapping (held as uint32_t).
  auto add = [](Acc& x, uint32_t w) {
    if constexpr (std::is_same_v<Acc, float>) x += __uint_as_float(w);
    else x += w;
  };
  // Only the tile's columns inside D go across: accumulators 4c .. 4c + 3 are columns 8c .. 8c + 7
  // (the wgmma D fragment), so a decode tile (N = 16 of 64 columns) hands over a quarter of it.
  // With all 64 columns handed over, 4 and 8 parts measured slower than 2 on the H100 (bf16
  // 4096x16x4096, cold L2: 19.5 and 13.8 TFLOP/s against 23.7), part 0 reading 32 KB per part.
  const int groups = (min(BlockN, p.n - w.n0) + 7) / 8;
  if (w.split != 0) {
    // Both math warpgroups' last wgmmas have read the stages before either overwrites them.
    ptx::named_barrier_sync(kMathBarrier, kMath);
    uint4* out = sm.sums();
#pragma unroll
    for (int j = 0; j < BlockN / 2; j += 4)
      if (j / 4 < groups) out[(j / 4) * kMath + i] = make_uint4(raw(j), raw(j + 1), raw(j + 2), raw(j + 3));
    __syncwarp();
    const int part0 = cluster_rank_of(p.cluster_m, w.m_rank, 0);
    if (threadIdx.x % 32 == 0) ptx::mbar_arrive_release_cluster(ptx::in_cta(sm.sums_full(), part0));
    return false;
  }
  ptx::mbar_wait_cluster(sm.sums_full(), 0);  // one tile per cluster: the barrier's first phase
  // Groups of 4 uint4 (16 sums): their loads from one part are in flight together. The sums add
  // in the accumulator's own arithmetic, with no second register set: in double (16 at a time) the
  // 256-wide tiles and the promoted 192-wide ones spilled (tests/sass).
  constexpr int kGroup = BlockN / 2 >= 16 ? 16 : BlockN / 2;
#pragma unroll
  for (int j0 = 0; j0 < BlockN / 2; j0 += kGroup) {
    if (j0 / 4 >= groups) break;
    for (int k = 1; k < p.splits; ++k) {
      const uint4* in = ptx::in_cta(sm.sums(), cluster_rank_of(p.cluster_m, w.m_rank, k));
      uint4 q[kGroup / 4];
#pragma unroll
      for (int c = 0; c < kGroup / 4; ++c)
        if (j0 / 4 + c < groups) q[c] = in[(j0 / 4 + c) * kMath + i];
#pragma unroll
      for (int c = 0; c < kGroup / 4; ++c)
        if (j0 / 4 + c < groups) {
          add(acc[j0 + 4 * c], q[c].x), add(acc[j0 + 4 * c + 1], q[c].y);
          add(acc[j0 + 4 * c + 2], q[c].z), add(acc[j0 + 4 * c + 3], q[c].w);
        }
    }
  }
  return true;
}

}  // namespace spmma::sm90
