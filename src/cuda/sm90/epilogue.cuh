// SPDX-License-Identifier: BSD-3-Clause
// The sm90 kernel's epilogue, per math warpgroup, while the producer already loads the next
// tile into the pipeline's stages (a persistent grid, scheduler.cuh); with split K, in part 0's
// CTA only, on the whole sums (split_k.cuh). Two ways out:
//   plain f32/s32 D, row-major: the wgmma D fragment's pairs straight from registers (8 rows x
//               32 bytes per warp store, whole sectors);
//   any other   through the warp's 16 x 16 scratch block (12 KB beside the stages), one block
//               at a time: 16-byte stores of runs of 8 along D's contiguous dimension, for
//               either layout (store_blocks); the edge blocks of D (and D misaligned for those
//               stores) element by element.
// The general epilogue (alpha, beta·C, bias, scale vectors, activations) takes the same runs of 8
// in a loop over the blocks, each run computed as it is stored (general_epilogue).
#pragma once
#include <cstdint>
#include <type_traits>

#include "common/gemm_params.cuh"
#include "sm90/mainloop.cuh"
#include "sm90/scheduler.cuh"
#include "sm90/tiles.hpp"

namespace spmma::sm90 {

// A 16 x 16 block of D from the warp's scratch element by element, each store consecutive along
// D's contiguous dimension, each sum through the epilogue (epilogue_store): D's edge blocks and a
// D misaligned for 16-byte stores.
template <class Acc>
__device__ __forceinline__ void store_elements(const gemm::Params& p, const uint32_t* scratch, int batch, int row0,
                                               int n0) {
  constexpr int kChunk = kEpilogueChunk, kLd = kEpilogueLd;
#pragma unroll 1
  for (int i = threadIdx.x % 32; i < kChunk * kChunk; i += 32) {
    const int r = p.cd_col_major ? i % kChunk : i / kChunk, col = p.cd_col_major ? i / kChunk : i % kChunk;
    const int row = row0 + r, n = n0 + col;
    if (row < p.m && n < p.n) gemm::epilogue_store<Acc>(p, batch, row, n, scratch[r * kLd + col]);
  }
}
// The same, not inlined: one copy per kernel rather than BlockN/16 unrolled copies in
// store_blocks (the Lean kernels inline store_elements instead: a call's registers would not fit
// them).
template <class Acc>
__device__ __noinline__ void store_edge_block(const gemm::Params& p, const uint32_t* scratch, int batch, int row0,
                                              int n0) {
  store_elements<Acc>(p, scratch, batch, row0, n0);
}

// Run lane/2 of the warp's 16 x 16 scratch block, half lane%2: 8 elements along D's contiguous
// dimension (8 columns of row lane/2 for row-major D, 8 rows of column lane/2 for column-major),
// into v. Returns where the run starts in the block. One definition for both ways a block leaves
// by runs (store_blocks, general_epilogue).
struct RunStart {
  int row, col;
};
__device__ __forceinline__ RunStart read_run(const uint32_t* scratch, bool col_major, uint32_t (&v)[8]) {
  constexpr int kLd = kEpilogueLd;
  const int lane = threadIdx.x % 32, r = lane / 2, half = lane % 2;
  if (col_major) {
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = scratch[(8 * half + i) * kLd + r];
    return {8 * half, r};
  }
  const uint4* in = reinterpret_cast<const uint4*>(scratch + r * kLd + 8 * half);
  *reinterpret_cast<uint4*>(v) = in[0], *reinterpret_cast<uint4*>(v + 4) = in[1];
  return {r, 8 * half};
}

// Whether a block starting at (row0, n0) has whole runs of 8 along D's contiguous dimension.
__device__ __forceinline__ bool whole_runs(const gemm::Params& p, int row0, int n0) {
  return p.cd_col_major ? row0 + kEpilogueChunk <= p.m : n0 + kEpilogueChunk <= p.n;
}

// Accumulators 8k .. 8k + 7 of this thread (rows g, g + 8; columns 16k + 8(j/4) + 2t + j%2 of the
// warp's 16 rows) into the warp's scratch block.
template <class Acc, int BlockN>
__device__ __forceinline__ void block_to_scratch(const Acc (&acc)[BlockN / 2], int k, uint32_t* scratch) {
  constexpr int kLd = kEpilogueLd;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  auto raw = [&](int e) { return reinterpret_cast<const uint32_t&>(acc[e]); };
#pragma unroll
  for (int j = 0; j < 8; j += 2)
    *reinterpret_cast<uint2*>(scratch + (g + 8 * ((j / 2) % 2)) * kLd + 8 * (j / 4) + 2 * t) =
        make_uint2(raw(8 * k + j), raw(8 * k + j + 1));
}

// f(K) for a block number k known only at run time (uniform in the warp), as the compile-time
// constant K (an integral_constant: decltype(K)::value) that can name the block's accumulator
// registers: a jump to one of the BlockN/16 cases. (Compared against each constant k instead,
// ptxas issued every case's stores predicated: 80 instructions per block at 256 columns.)
template <int BlockN, class F>
__device__ __forceinline__ void at_block(int k, F&& f) {
  static_assert(BlockN / kEpilogueChunk <= 16, "a case per block");
#define SPMMA_BLOCK_CASE(K)                                                         \
  case K:                                                                           \
    if constexpr (K < BlockN / kEpilogueChunk) f(std::integral_constant<int, K>{}); \
    break;
  switch (k) {
    SPMMA_BLOCK_CASE(0) SPMMA_BLOCK_CASE(1) SPMMA_BLOCK_CASE(2) SPMMA_BLOCK_CASE(3)
    SPMMA_BLOCK_CASE(4) SPMMA_BLOCK_CASE(5) SPMMA_BLOCK_CASE(6) SPMMA_BLOCK_CASE(7)
    SPMMA_BLOCK_CASE(8) SPMMA_BLOCK_CASE(9) SPMMA_BLOCK_CASE(10) SPMMA_BLOCK_CASE(11)
    SPMMA_BLOCK_CASE(12) SPMMA_BLOCK_CASE(13) SPMMA_BLOCK_CASE(14) SPMMA_BLOCK_CASE(15)
    default: break;
  }
#undef SPMMA_BLOCK_CASE
}

// The plain epilogue (alpha 1, no C, no bias, ReLU or nothing) of math warpgroup c's part of D
// through the warp's scratch, block after block, unrolled and inlined: 16 rows of 8 + 8 columns
// for row-major D, one 16-byte store (or two: f32) per lane and every 32-byte sector written
// whole (straight from the fragment's pairs, each store wrote half a sector, and the H100
// measured 6-18% slower at 8192^3 and 4096^3); likewise on column-major D, 16 columns of 8 + 8
// rows. Both layouts by one code path
// (column-major D: Y = X·Wᵀ row-major, a linear layer's and the Python package's): through a
// non-inlined function a column-major D ran at 0.64-0.77x the row-major kernel's speed on the
// H100 (bf16 and e4m3, 8192^3 and 14336x2048x4096; docs/benchmarks.md); as a second inline path
// beside the row-major one it cost the Lean kernels a register in local memory (tests/sass).
template <class Acc, int BlockN, bool Lean>
__device__ __forceinline__ void store_blocks(const Acc (&acc)[BlockN / 2], uint32_t* scratch, const WorkTile& w,
                                             const gemm::Params& p, int row0) {
  const bool runs = gemm::vector_runs_ok(p, 8), cm = p.cd_col_major;
#pragma unroll
  for (int k = 0; k < BlockN / kEpilogueChunk; ++k) {
    __syncwarp();  // the block before is read
    block_to_scratch<Acc, BlockN>(acc, k, scratch);
    __syncwarp();
    const int n0 = w.n0 + kEpilogueChunk * k;
    if (n0 >= p.n) break;
    if (runs && whole_runs(p, row0, n0)) {
      alignas(16) uint32_t v[8];
      const RunStart s = read_run(scratch, cm, v);
      const int row = row0 + s.row, col = n0 + s.col;
      if (row < p.m && col < p.n) {
        const int64_t idx = w.batch * p.batch_d +
                            (cm ? static_cast<int64_t>(col) * p.ldd + row : static_cast<int64_t>(row) * p.ldd + col);
        gemm::store_plain<8, Acc>(p, idx, v);
      }
      continue;
    }
    if constexpr (Lean) store_elements<Acc>(p, scratch, w.batch, row0, n0);
    else store_edge_block<Acc>(p, scratch, w.batch, row0, n0);
  }
}

// The general epilogue (alpha, beta·C, bias, scale vectors, activations, any D type) of math
// warpgroup c's part of D, block after block of 16 x 16 through the warp's scratch: 32 runs of 8
// elements along D's contiguous dimension per block, one per lane, each computed and stored whole
// (gemm::run_values, gemm::store_run); D's edge blocks and a D misaligned for 16-byte stores
// element by element (epilogue_store). In Real: f32, or double for an s32 C or D
// (detail::epilogue_in_double); ColMajor is p.cd_col_major, as a template argument.
// A lane's run keeps its rows through all the tile's blocks (row-major D: its one row; column-
// major: its 8), so in f32 what they give (alpha · s_row, the bias: gemm::RunRows) is read once
// per tile (in double, 16 more registers per thread for a column-major D made ptxas spill).
// The blocks go in a loop (at_block picks the block's registers), so that the kernel holds one
// copy, inline, with its parameters read from the kernel's own parameter space. Before, the
// blocks were unrolled around a call of a non-inlined function (store_block) that read every
// parameter through a generic pointer, and the Lean kernels took every element alone
// (docs/benchmarks.md, "The general epilogue in one loop").
template <class Acc, int BlockN, class Real, bool ColMajor>
__device__ __forceinline__ void general_epilogue(const Acc (&acc)[BlockN / 2], uint32_t* scratch, const WorkTile& w,
                                                 const gemm::Params& p, int row0) {
  const int batch = w.batch, lane = threadIdx.x % 32;
  const bool runs = gemm::vector_runs_ok(p, 8);
  const gemm::RunRows<8, float, ColMajor> rows(p, batch, row0 + (ColMajor ? 8 * (lane % 2) : lane / 2));  // read_run's
#pragma unroll 1
  for (int k = 0; k < BlockN / kEpilogueChunk; ++k) {
    const int n0 = w.n0 + kEpilogueChunk * k;
    if (n0 >= p.n) break;
    __syncwarp();  // the block before is read
    at_block<BlockN>(k, [&](auto K) { block_to_scratch<Acc, BlockN>(acc, decltype(K)::value, scratch); });
    __syncwarp();
    if (!runs || !whole_runs(p, row0, n0)) {
      store_elements<Acc>(p, scratch, batch, row0, n0);
      continue;
    }
    alignas(16) uint32_t raw[8];
    const RunStart s = read_run(scratch, ColMajor, raw);
    const int row = row0 + s.row, col = n0 + s.col;
    if (row >= p.m || col >= p.n) continue;
    if constexpr (std::is_same_v<Real, double>) {
      gemm::store_general<8, double, Acc, ColMajor>(p, batch, row, col, raw);  // its rows on the spot
    } else {
      float v[8];
      gemm::run_values<8, float, Acc, ColMajor>(p, batch, row, col, raw, rows, v);
      gemm::store_run<8, float, ColMajor>(p, batch, row, col, v);
    }
  }
}

// Math warpgroup c's part of D (rows 64c .. 64c + 63 of the tile) from this thread's accumulators.
//
// Lean: the promoted 256-wide fp8 kernels, whose 128 + 64 accumulator registers per thread leave
// none for a call: with a call in store_blocks, ptxas kept one value in local memory
// (tests/sass/check_sm90_sass.py), so their edge blocks go element by element inline.
template <class Acc, int BlockN, bool Lean>
__device__ __forceinline__ void epilogue(const Acc (&acc)[BlockN / 2], uint32_t* scratch, const WorkTile& w,
                                         const gemm::Params& p, int c) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
  if (w.m0 + 64 * c >= p.m_pad) return;  // past A's rows: the odd CTA of the last cluster (scheduler.cuh)
  const int row0 = w.m0 + 64 * c + 16 * warp;  // the warp's 16 rows
  auto raw = [&](int e) { return reinterpret_cast<const uint32_t&>(acc[e]); };
  // f(e, row, col) for each of this thread's pairs (e, e + 1) whose first element lies inside D.
  auto each_pair = [&](auto&& f) {
#pragma unroll
    for (int e = 0; e < BlockN / 2; e += 2) {
      const int row = row0 + g + 8 * ((e / 2) % 2), col = w.n0 + 8 * (e / 4) + 2 * t;
      if (row < p.m && col < p.n) f(e, row, col);
    }
  };

  // The plain epilogue on a row-major 4-byte D (f32, s32) straight from registers: a warp's
  // store of the fragment's pairs is 8 rows of 32 bytes, whole sectors. (Through the scratch
  // instead, s8 -> s32 measured 0.93-0.96x at 8192^3, 4096^3 and 14336x2048x4096 on the H100:
  // its blocks go one after the other.)
  if (p.plain && gemm::cd_bytes(p.d_type) == 4 && p.n % 2 == 0 && gemm::vector_rows_ok(p, 2)) {
    each_pair([&](int e, int row, int col) {
      const uint32_t pair[2] = {raw(e), raw(e + 1)};
      gemm::store_plain<2, Acc>(p, w.batch * p.batch_d + static_cast<int64_t>(row) * p.ldd + col, pair);
    });
    return;
  }
  const bool dbl = gemm::epilogue_in_double(p), cm = p.cd_col_major;
  if (p.plain) store_blocks<Acc, BlockN, Lean>(acc, scratch, w, p, row0);
  else if (dbl && cm) general_epilogue<Acc, BlockN, double, true>(acc, scratch, w, p, row0);
  else if (dbl) general_epilogue<Acc, BlockN, double, false>(acc, scratch, w, p, row0);
  else if (cm) general_epilogue<Acc, BlockN, float, true>(acc, scratch, w, p, row0);
  else general_epilogue<Acc, BlockN, float, false>(acc, scratch, w, p, row0);
}

}  // namespace spmma::sm90
