// SPDX-License-Identifier: BSD-3-Clause
// Sparse GEMM on wgmma.mma_async.sp (sm_90a): D = epilogue(A·B), A 2:4 (1:2 for tf32) sparse,
// M x K; B stored K-contiguous per column (N x K row-major), as for the sm80 kernel.
//
// Every wgmma.sp form used here reads 32 bytes of packed A per row and 64 bytes of B per column
// per instruction (bf16/f16 k32, tf32 k16, fp8/int8 k64), so the kernel is written in bytes and
// the type pair only picks the instruction (Form<A, B>, generated from the ISA registry).
//
// Warp specialisation, one persistent CTA per SM, read top to bottom:
//   set-up                     barriers, roles, tensor maps: overlapping the kernel before it in
//                              the stream (programmatic dependent launch), then every thread that
//                              touches global memory waits for that kernel (ptx/griddep.cuh);
//   scheduler (scheduler.cuh)  the tiles (tile, batch entry, K range) this CTA computes, in turn;
//   producer  (mainloop.cuh)   warpgroup 0, one warp (one lane issuing): TMA loads of A, B and
//                              metadata per stage (B shared with the other CTA of a cluster of 2
//                              by multicast), on into the next tile while the math warpgroups
//                              store the last;
//   consumer  (mainloop.cuh)   warpgroups 1, 2 (64 rows each): wgmma.sp per stage, fp8 promotion;
//   split K   (split_k.cuh)    the parts of a tile's K range, one per CTA of the cluster, added
//                              up in part 0's registers from the others' shared memory;
//   epilogue  (epilogue.cuh)   the math warpgroups write D from registers (or through a small
//                              scratch block per warp), the next tile's stages loading meanwhile.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "common/gemm_params.cuh"
#include "gemm_forms_sm90.cuh"
#include "ptx/cluster.cuh"
#include "ptx/griddep.cuh"
#include "ptx/warpgroup.cuh"
#include "sm90/epilogue.cuh"
#include "sm90/mainloop.cuh"
#include "sm90/scheduler.cuh"
#include "sm90/split_k.cuh"
#include "sm90/tiles.hpp"

namespace spmma::sm90 {

template <ElemType A, ElemType B, int BlockN, bool Promote>
__global__ void __launch_bounds__(kThreads, 1)
    spgemm_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                  const __grid_constant__ CUtensorMap tm_b_tail, const __grid_constant__ CUtensorMap tm_meta,
                  const __grid_constant__ gemm::Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using F = Form<A, B>;
  using State = gemm::PipelineState<Smem<BlockN>::kStages>;
  extern __shared__ uint8_t smem_raw[];
  const Smem<BlockN> sm(smem_raw);
  if (threadIdx.x == 0) sm.init_barriers(p.cluster_m, p.splits);
  // A cluster's CTAs arrive on each other's barriers, write each other's stages and read each
  // other's sums: every barrier set is initialised before any CTA starts, and no CTA leaves (its
  // shared memory gone) while another may still arrive on it or read it.
  const bool clustered = p.cluster_m * p.splits > 1;
  if (clustered) ptx::cluster_sync();
  else __syncthreads();

  TileScheduler<BlockN> tiles(p);
  WorkTile w;
  // The warp's index, warp-uniform as the compiler sees it (a shuffle from lane 0, as CUTLASS's
  // canonical_warp_idx_sync): the producer warp's walk and stage loop then run on uniform
  // registers beside its 24 (tiles.hpp, reg_split); under `threadIdx.x == 0` they took ordinary
  // registers and spilled.
  const int warp_idx = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0), wg = warp_idx / 4;
  if (wg == 0) {
    ptx::setmaxnreg_dec<reg_split(BlockN, Promote).producer>();
    if (warp_idx == 0) {  // the producer warp: its loop together, each stage's copies by one lane (produce)
      if (ptx::elect_one())
        ptx::tma_prefetch_map(&tm_a), ptx::tma_prefetch_map(&tm_b), ptx::tma_prefetch_map(&tm_b_tail),
            ptx::tma_prefetch_map(&tm_meta);
      // Everything above overlaps the kernel before (launched with programmatic stream
      // serialization, launch_tile.cuh); the loads wait for it. The next kernel may be scheduled
      // from here on: it waits for this one the same way before it reads what this one writes.
      // (Prefetching the first stages of A into the L2 before the wait measured 0.93x alone and no
      // faster layer after layer on the H100: docs/benchmarks.md, "Layer after layer".)
      ptx::wait_prior_grids();
      ptx::allow_next_grid();
      State st = State::producer_start();
      while (tiles.next(w)) produce<BlockN>(sm, tm_a, tm_b, tm_b_tail, tm_meta, w, p, st);
    }
  } else {
    ptx::setmaxnreg_inc<reg_split(BlockN, Promote).consumer>();
    const ConsumerView<BlockN> v(sm, p, wg - 1);
    ptx::wait_prior_grids();  // the epilogue reads C, bias, scales and writes D
    State st = State::consumer_start();
    typename F::Acc acc[BlockN / 2];
    while (tiles.next(w)) {
      consume<F, BlockN, Promote>(acc, v, w, st);
      if (reduce_parts<typename F::Acc, BlockN>(acc, sm, p, w))
        epilogue<typename F::Acc, BlockN, Promote>(acc, sm.scratch(threadIdx.x / 32 - 4), w, p, wg - 1);
    }
  }
  if (clustered) ptx::cluster_sync();
#else
  __trap();
#endif
}

}  // namespace spmma::sm90
