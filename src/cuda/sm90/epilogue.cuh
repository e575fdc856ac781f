// SPDX-License-Identifier: BSD-3-Clause
// The sm90 kernel's epilogue, per math warpgroup: the accumulators go to shared memory (the
// pipeline's stages are free once both math warpgroups are done), then the warpgroup writes its
// 64 x BlockN tile of D from one compact loop, instead of BlockN/2 unrolled copies of the
// epilogue. Three stores: split K's raw partial sums, 16-byte rows (row-major D without C), any
// layout element by element.
#pragma once
#include <cstdint>

#include "common/gemm_params.cuh"
#include "ptx/warpgroup.cuh"
#include "sm90/mainloop.cuh"
#include "sm90/scheduler.cuh"
#include "sm90/tiles.hpp"

namespace spmma::sm90 {

template <int BlockN>
struct EpilogueTile {
  // A row of the staged tile in 32-bit words: 8 pad words keep the 8-byte stores conflict-free.
  static constexpr int kLd = BlockN + 8;
  static_assert(kConsumers * 64 * kLd * 4 <= Smem<BlockN>::kStages * Smem<BlockN>::kStageBytes,
                "the epilogue tiles fit in the pipeline stages");
};

// Accumulator e of this thread is row 16·warp + g + 8((e/2)%2), column 8(e/4) + 2t + e%2
// (the wgmma D fragment); stored as raw 32-bit words.
template <class Acc, int BlockN>
__device__ __forceinline__ void stage_accumulators(uint32_t* tile, const Acc (&acc)[BlockN / 2]) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int e = 0; e < BlockN / 2; e += 2) {
    const int r = 16 * warp + g + 8 * ((e / 2) % 2), col = 8 * (e / 4) + 2 * t;
    *reinterpret_cast<uint2*>(tile + r * EpilogueTile<BlockN>::kLd + col) =
        make_uint2(reinterpret_cast<const uint32_t&>(acc[e]), reinterpret_cast<const uint32_t&>(acc[e + 1]));
  }
}

// Split K: raw accumulators into this split's slice of the partial sums; the reduce kernel adds
// the slices and applies the epilogue.
template <int BlockN>
__device__ __forceinline__ void store_partials(const uint32_t* tile, const WorkTile& w, int row0, const gemm::Params& p) {
  uint32_t* out = static_cast<uint32_t*>(p.partial) + (static_cast<int64_t>(w.split) * p.batch + w.batch) * p.m_pad * p.n;
#pragma unroll 1
  for (int i = threadIdx.x % 128; i < 64 * BlockN; i += 128) {
    const int r = i / BlockN, col = i % BlockN;
    if (w.n0 + col < p.n) out[static_cast<int64_t>(row0 + r) * p.n + w.n0 + col] = tile[r * EpilogueTile<BlockN>::kLd + col];
  }
}

// Row-major D without C: 8 consecutive columns per thread, one or two vector stores
// (gemm::store_row8); the row's tail past N element by element.
template <class Acc, int BlockN>
__device__ __forceinline__ void store_rows_vector(const uint32_t* tile, const WorkTile& w, int row0, const gemm::Params& p) {
#pragma unroll 1
  for (int i = threadIdx.x % 128; i < 64 * BlockN / 8; i += 128) {
    const int r = i / (BlockN / 8), col = (i % (BlockN / 8)) * 8;
    if (row0 + r >= p.m) continue;
    gemm::store_row8<Acc>(p, w.batch, row0 + r, w.n0 + col, tile + r * EpilogueTile<BlockN>::kLd + col);
  }
}

// Any layout: consecutive threads take consecutive elements along D's contiguous dimension.
template <class Acc, int BlockN>
__device__ __forceinline__ void store_elements(const uint32_t* tile, const WorkTile& w, int row0, const gemm::Params& p) {
#pragma unroll 1
  for (int i = threadIdx.x % 128; i < 64 * BlockN; i += 128) {
    const int r = p.cd_col_major ? i % 64 : i / BlockN, col = p.cd_col_major ? i / 64 : i % BlockN;
    if (row0 + r < p.m && w.n0 + col < p.n)
      gemm::epilogue_store(p, w.batch, row0 + r, w.n0 + col, gemm::acc_value<Acc>(tile[r * EpilogueTile<BlockN>::kLd + col]));
  }
}

// Math warpgroup c's part of D (rows 64c .. 64c + 63 of the tile). `smem`: the stages' memory.
template <class Acc, int BlockN>
__device__ __forceinline__ void epilogue(const Acc (&acc)[BlockN / 2], uint8_t* smem, const WorkTile& w,
                                         const gemm::Params& p, int c) {
  ptx::named_barrier_sync(1, 128 * kConsumers);  // both math warpgroups are past the main loop
  uint32_t* tile = reinterpret_cast<uint32_t*>(smem) + c * 64 * EpilogueTile<BlockN>::kLd;
  stage_accumulators<Acc, BlockN>(tile, acc);
  ptx::named_barrier_sync(2 + c, 128);
  const int row0 = w.m0 + 64 * c;
  if (row0 >= p.m_pad) return;  // past A's rows: the odd CTA of the last cluster (scheduler.cuh)
  if (p.splits > 1) store_partials<BlockN>(tile, w, row0, p);
  else if (gemm::vector_rows_ok(p)) store_rows_vector<Acc, BlockN>(tile, w, row0, p);
  else store_elements<Acc, BlockN>(tile, w, row0, p);
}

}  // namespace spmma::sm90
