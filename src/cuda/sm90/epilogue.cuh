// SPDX-License-Identifier: BSD-3-Clause
// The sm90 kernel's epilogue, per math warpgroup, while the producer already loads the next
// tile into the pipeline's stages (a persistent grid, scheduler.cuh); with split K, in part 0's
// CTA only, on the whole sums (split_k.cuh). Two ways out:
//   plain f32/s32 D, row-major: the wgmma D fragment's pairs straight from registers (8 rows x
//               32 bytes per warp store, whole sectors);
//   any other   through the warp's 16 x 16 scratch block (12 KB beside the stages), one block
//               at a time: 16-byte stores of runs of 8 along D's contiguous dimension, for
//               either layout: the plain epilogue inline (epilogue()), the general one in
//               store_block (read_run reads a run for both); the edge blocks of D (and D
//               misaligned for those stores) element by element; the Lean kernels' general
//               blocks element by element, inline.
#pragma once
#include <cstdint>

#include "common/gemm_params.cuh"
#include "sm90/mainloop.cuh"
#include "sm90/scheduler.cuh"
#include "sm90/tiles.hpp"

namespace spmma::sm90 {

// A 16 x 16 block of D from the warp's scratch element by element (the general epilogue, each
// store consecutive along D's contiguous dimension): D's edge blocks, a D misaligned for 16-byte
// stores, and every block of the Lean kernels (epilogue()).
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

// Run lane/2 of the warp's 16 x 16 scratch block, half lane%2: 8 elements along D's contiguous
// dimension (8 columns of row lane/2 for row-major D, 8 rows of column lane/2 for column-major),
// into v. Returns where the run starts in the block. One definition for both ways a block leaves
// by runs (the plain epilogue inline, the general one in store_block).
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

// One 16 x 16 block of D (rows row0 .., columns n0 ..) from the warp's scratch, for the general
// epilogue (alpha, beta·C, bias, scale vectors, activations, any D type) on either layout: as 32
// runs of 8 elements along D's contiguous dimension, two per lane, one 16-byte store (two for a
// 4-byte D) per run, every 32-byte sector written whole; element by element where the block
// crosses D's edge or D is misaligned for those stores (the plain epilogue's edge blocks come
// here too, and take that element-by-element way). Element by element everywhere, the general
// epilogue (scales + bias, e4m3 D) took 1.78 ms where the plain one took 1.03 ms at bf16 8192³ on
// the H100 (docs/benchmarks.md). Not inlined: one copy per kernel rather than BlockN/16 unrolled
// copies of the general epilogue, GELU included.
template <class Acc>
__device__ __noinline__ void store_block(const gemm::Params& p, const uint32_t* scratch, int batch, int row0, int n0) {
  if (!p.plain && gemm::vector_runs_ok(p, 8) && whole_runs(p, row0, n0)) {
    alignas(16) uint32_t v[8];
    const RunStart s = read_run(scratch, p.cd_col_major, v);
    const int row = row0 + s.row, col = n0 + s.col;
    if (row < p.m && col < p.n) gemm::store_general<8, Acc>(p, batch, row, col, v);
    return;
  }
  store_elements<Acc>(p, scratch, batch, row0, n0);
}

// Math warpgroup c's part of D (rows 64c .. 64c + 63 of the tile). Accumulator e of this thread
// is row 16·warp + g + 8((e/2)%2), column 8(e/4) + 2t + e%2 (the wgmma D fragment).
//
// Lean: the promoted 256-wide fp8 kernels, whose 128 + 64 accumulator registers per thread leave
// none for a call: with store_block's call there, ptxas kept one value in local memory
// (tests/sass/check_sm90_sass.py), so they take the general epilogue element by element, inline.
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

  // Blocks of 16 x 16 through the warp's scratch: accumulators 8k .. 8k + 7 (rows g, g + 8;
  // columns 16k + 8(j/4) + 2t + j%2) in, then out by store_block, or here, inlined, for the plain
  // epilogue on row-major D: 16 rows of 8 + 8 columns, one 16-byte store (or two: f32) per lane
  // and every 32-byte sector written whole (straight from the fragment's pairs, each store wrote
  // half a sector, and the H100 measured 6-18% slower at 8192^3 and 4096^3); likewise on
  // column-major D, 16 columns of 8 + 8 rows.
  constexpr int kChunk = kEpilogueChunk, kLd = kEpilogueLd;
  // Both layouts (column-major D: Y = X·Wᵀ row-major, a linear layer's and the Python package's)
  // by one code path, 16 rows of 8 + 8 columns or 16 columns of 8 + 8 rows: through store_block
  // a column-major D ran at 0.64-0.77x the row-major kernel's speed on the H100 (bf16 and e4m3,
  // 8192^3 and 14336x2048x4096; docs/benchmarks.md); as a second inline path beside the row-major
  // one it cost the Lean kernels a register in local memory (tests/sass).
  const bool plain8 = p.plain && gemm::vector_runs_ok(p, 8), cm = p.cd_col_major;
#pragma unroll
  for (int k = 0; k < BlockN / kChunk; ++k) {
    __syncwarp();  // the block before is read
#pragma unroll
    for (int j = 0; j < 8; j += 2)
      *reinterpret_cast<uint2*>(scratch + (g + 8 * ((j / 2) % 2)) * kLd + 8 * (j / 4) + 2 * t) =
          make_uint2(raw(8 * k + j), raw(8 * k + j + 1));
    __syncwarp();
    const int n0 = w.n0 + kChunk * k;
    if (n0 >= p.n) break;
    if (plain8 && whole_runs(p, row0, n0)) {
      alignas(16) uint32_t v[8];
      const RunStart s = read_run(scratch, cm, v);
      const int row = row0 + s.row, col = n0 + s.col;
      if (row < p.m && col < p.n) {
        const int64_t idx = cm ? static_cast<int64_t>(col) * p.ldd + row : static_cast<int64_t>(row) * p.ldd + col;
        gemm::store_plain<8, Acc>(p, w.batch * p.batch_d + idx, v);
      }
      continue;
    }
    if constexpr (Lean) store_elements<Acc>(p, scratch, w.batch, row0, n0);
    else store_block<Acc>(p, scratch, w.batch, row0, n0);
  }
}

}  // namespace spmma::sm90
