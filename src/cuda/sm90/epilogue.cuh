// SPDX-License-Identifier: BSD-3-Clause
// The sm90 kernel's epilogue, per math warpgroup, while the producer already loads the next
// tile into the pipeline's stages (a persistent grid, scheduler.cuh); with split K, in part 0's
// CTA only, on the whole sums (split_k.cuh). First, for a warp's rows wholly inside D with the
// plain epilogue, straight-line stores decided once per tile (plain_inside, below); else two ways
// out:
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
#include "ptx/shared.cuh"
#include "ptx/stmatrix.cuh"
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

// ---------------------------------------------------------------- the plain epilogue inside D
// A warp's 16 rows of a tile that lies wholly inside D (every row < M, every column < N), D
// aligned for the stores, plain (alpha 1, no C, no bias, ReLU or nothing): every decision made once
// for the warp's tile, then straight-line stores from base pointers with the blocks' offsets as
// immediates. Why: the general way out (store_blocks, each_pair below) decides again for every
// block or pair (bounds, D's type, alignment, 64-bit indices: 40 instructions per pair of s32, 90
// per 16 x 16 block of bf16 in Nsight Compute's source view), and those thousands of instructions
// per tile, cold in the instruction cache after each main loop (its "no instruction" stalls), held
// the tensor cores idle: the kernel with no epilogue at all ran 1.07-1.47x faster at 4096^3,
// 14336x8192x4096 and 8192^3 (bf16, s8, e4m3), the kernel without its global stores only
// 1.00-1.04x. This way: bf16 1.02-1.15x on issue 10's 11 shapes, s8 1.01-1.12x, f16 0.98-1.05x,
// cold decode rows with column-major D 1.02-1.14x (H200, 2026-11-28; docs/benchmarks.md, "The
// plain epilogue inside D"); e4m3's 256-wide Lean kernels 1.07-1.08x at K = 4096 once their
// registers allowed it (tiles.hpp, reg_split; "The Lean kernels' epilogue"). Then row-major D in
// whole lines (inside_lines; "Whole lines"): s8 1.03-1.08x again.

// The plain epilogue's values (gemm::plain_value: + 0, ReLU) of two f32 sums as D's 16-bit pair,
// and of one sum as a 32-bit D word (f32 from f32 sums, s32 from integer ones): one definition for
// every straight-line way out below.
template <bool Bf16, bool Relu>
__device__ __forceinline__ uint32_t plain_pair16(float a, float b) {
  a = gemm::plain_value(a, Relu), b = gemm::plain_value(b, Relu);
  if constexpr (Bf16) {
    const __nv_bfloat162 h = gemm::to_bf16x2(a, b);
    return reinterpret_cast<const uint32_t&>(h);
  } else {
    const __half2 h = gemm::to_f16x2(a, b);
    return reinterpret_cast<const uint32_t&>(h);
  }
}
template <bool Relu, class Acc>
__device__ __forceinline__ uint32_t plain_word(Acc a) {
  if constexpr (std::is_same_v<Acc, float>) return __float_as_uint(gemm::plain_value(a, Relu));
  else return static_cast<uint32_t>(gemm::plain_value(static_cast<int32_t>(a), Relu));
}

// 32-bit D (f32 from float sums, s32 from integer ones), row-major, in the promoted 192- and
// 256-wide kernels (tiles.hpp, whole_lines; the others write whole lines, inside_lines): the
// fragment's pairs straight from registers (8 rows x 32 bytes per warp store, whole sectors): this
// thread's pair e at row g (d0) or g + 8 (d8), columns 8(e/4) + 2t.
template <class Acc, int BlockN, bool Relu>
__device__ __forceinline__ void inside_pairs(const Acc (&acc)[BlockN / 2], uint32_t* d0, uint32_t* d8) {
#pragma unroll
  for (int e = 0; e < BlockN / 2; e += 2)
    *reinterpret_cast<uint2*>(((e / 2) % 2 ? d8 : d0) + 8 * (e / 4)) =
        make_uint2(plain_word<Relu>(acc[e]), plain_word<Relu>(acc[e + 1]));
}

// Row-major D in whole 128-byte lines: the warp's 16 rows go out in passes of 8 rows x 128
// bytes (64 columns of bf16/f16, 32 of f32/s32) through 1 KB of its scratch, each pass written
// from the fragment (stmatrix for 16-bit D, 8-byte stores for 32-bit), then read back as 16 bytes
// per lane and stored as 4 rows x 128 bytes per warp instruction: every store writes whole lines.
// Straight from the fragment, or by runs of 8 of a 16 x 16 block, a warp store wrote 8 or 16
// rows of 32 bytes, one sector per line, and every CTA's tile went out at once at each tile's end:
// against those, whole lines ran s8 -> s32 1.03-1.08x, tf32 -> f32 1.00-1.02x, bf16 and f16
// 1.00-1.02x (H200, 2026-11-28, docs/benchmarks.md, "Whole lines"). Row q's 16-byte chunk c sits
// at chunk c ^ q of its 128-byte scratch row, so that the eight rows of a stmatrix matrix, a
// quad's 8-byte stores and each 8 lanes' reads fall in distinct banks; every address is one 32-bit
// register XORed with a constant.
// scratch: the warp's scratch (shared space, 128-byte aligned); first: the element of D at row
// row0 + lane / 8, the tile's first column (this lane's 16 bytes: byte 16 · (lane % 8) from there).
template <class Acc, int BlockN, int Bytes, bool Bf16, bool Relu>
__device__ __forceinline__ void inside_lines(const Acc (&acc)[BlockN / 2], uint32_t scratch, int64_t first,
                                             const gemm::Params& p, int lane) {
  uint8_t* dst = static_cast<uint8_t*>(p.d) + first * Bytes + 16 * (lane % 8);
  constexpr int kSlabs = BlockN * Bytes / 128;  // 128-byte column slabs of the tile
  const int64_t ld_bytes = p.ldd * Bytes;
  const int r = lane / 8, c = lane % 8;
  const uint32_t rd = scratch + r * 128 + ((c ^ r) << 4);  // row r, chunk c; row r + 4: (rd + 512) ^ 64
  // stmatrix: lane 8i + q gives row q of matrix i (chunk i), of matrix 4 + i at ^ 64.
  // 8-byte stores: lane (g, t) writes row g, columns 2t, 2t + 1 of chunk pair m at ^ (m << 5).
  const uint32_t wr = Bytes == 2 ? scratch + c * 128 + ((r ^ c) << 4)
                                 : scratch + (lane / 4) * 128 + ((((lane % 4) / 2) ^ (lane / 4)) << 4) + 8 * (lane % 2);
#pragma unroll
  for (int slab = 0; slab < kSlabs; ++slab) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // fragment rows g (h = 0) or g + 8
      __syncwarp();  // the pass before is read (or, first, an earlier tile's)
      if constexpr (Bytes == 2) {
        // Matrix m (columns 8m .. 8m + 7 of the slab): acc[32 slab + 4m + 2h], + 1.
#pragma unroll
        for (int x = 0; x < 2; ++x) {
          const int e = 32 * slab + 16 * x + 2 * h;
          ptx::stmatrix_x4<false>(wr ^ (64 * x), plain_pair16<Bf16, Relu>(acc[e], acc[e + 1]),
                                  plain_pair16<Bf16, Relu>(acc[e + 4], acc[e + 5]),
                                  plain_pair16<Bf16, Relu>(acc[e + 8], acc[e + 9]),
                                  plain_pair16<Bf16, Relu>(acc[e + 12], acc[e + 13]));
        }
      } else {
        // Columns 8m + 2t, + 1 of the slab: acc[16 slab + 4m + 2h], + 1.
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          const int e = 16 * slab + 4 * m + 2 * h;
          ptx::st_shared_v2(wr ^ (m << 5), plain_word<Relu>(acc[e]), plain_word<Relu>(acc[e + 1]));
        }
      }
      __syncwarp();
      const uint4 v0 = ptx::ld_shared_v4(rd), v1 = ptx::ld_shared_v4((rd + 512) ^ 64);
      uint8_t* row = dst + 8 * h * ld_bytes + 128 * slab;
      *reinterpret_cast<uint4*>(row) = v0;
      *reinterpret_cast<uint4*>(row + 4 * ld_bytes) = v1;
    }
  }
}

// 16-bit D (bf16, f16), column-major (and row-major in the promoted 192- and 256-wide kernels,
// tiles.hpp's whole_lines): each 16 x 16 block of the warp's rows rounded into D's
// type in registers, stored into the warp's scratch by one stmatrix (transposed for column-major
// D), then one 16-byte run of 8 along D's contiguous dimension per lane (the block's rows for
// row-major D, its columns for column-major D: one code path, as store_blocks). The scratch
// holds two blocks of 16 rows x 32 bytes (512 bytes each, of the warp's 1536), alternating, so
// one __syncwarp per block orders both the block's store before its reads and the reads of the
// block two back before the store over them. Each row's two 16-byte halves swap places in rows
// 4-7 and 12-15 of a block: stmatrix's eight rows of a matrix and the 16-byte reads of eight
// lanes then each fall in distinct banks.
template <int BlockN, bool ColMajor, bool Bf16, bool Relu>
__device__ __forceinline__ void inside_runs16(const float (&acc)[BlockN / 2], uint32_t* scratch, uint16_t* dst,
                                              int64_t block_step, int lane) {
  const int i = lane / 8, q = lane % 8;
  auto at = [](int row, int half) { return row * 32 + ((half ^ ((row >> 2) & 1)) * 16); };
  // stmatrix: lane 8i + q gives row q of matrix i (registers r[i]: rows 8(i % 2) .., columns 8(i / 2) ..).
  const int st_row = ColMajor ? 8 * (i / 2) + q : 8 * (i % 2) + q, st_half = ColMajor ? i % 2 : i / 2;
  const uint32_t st = gemm::smem_u32(scratch) + at(st_row, st_half);
  const uint8_t* ld = reinterpret_cast<const uint8_t*>(scratch) + at(lane / 2, lane % 2);
  auto pack = plain_pair16<Bf16, Relu>;
  __syncwarp();  // the scratch's last reader (an earlier tile) is done
#pragma unroll
  for (int k = 0; k < BlockN / kEpilogueChunk; ++k) {
    const int j = 8 * k, buf = (k % 2) * 512;
    ptx::stmatrix_x4<ColMajor>(st + buf, pack(acc[j], acc[j + 1]), pack(acc[j + 2], acc[j + 3]),
                               pack(acc[j + 4], acc[j + 5]), pack(acc[j + 6], acc[j + 7]));
    __syncwarp();
    *reinterpret_cast<uint4*>(dst + k * block_step) = *reinterpret_cast<const uint4*>(ld + buf);
  }
}

// 16-bit D by runs of 8 (inside_runs16) in one layout: one straight-line instantiation per D type
// and ReLU, a run executing one. D aligned for 16-byte stores (vector_runs_ok(p, 8)).
template <int BlockN, bool ColMajor>
__device__ __forceinline__ void runs16(const float (&acc)[BlockN / 2], uint32_t* scratch, const WorkTile& w,
                                       const gemm::Params& p, int row0) {
  const bool relu = p.activation == detail::kActRelu, bf = p.d_type == gemm::CdType::bf16;
  const int lane = threadIdx.x % 32;
  const int64_t line = ColMajor ? w.n0 + lane / 2 : row0 + lane / 2,
                first = ColMajor ? row0 + 8 * (lane % 2) : w.n0 + 8 * (lane % 2);
  uint16_t* dst = static_cast<uint16_t*>(p.d) + w.batch * p.batch_d + line * p.ldd + first;
  const int64_t step = ColMajor ? kEpilogueChunk * p.ldd : kEpilogueChunk;
  if (bf) relu ? inside_runs16<BlockN, ColMajor, true, true>(acc, scratch, dst, step, lane)
               : inside_runs16<BlockN, ColMajor, true, false>(acc, scratch, dst, step, lane);
  else relu ? inside_runs16<BlockN, ColMajor, false, true>(acc, scratch, dst, step, lane)
            : inside_runs16<BlockN, ColMajor, false, false>(acc, scratch, dst, step, lane);
}

// Row-major bf16/f16 D (float sums) or 32-bit D (the sums' own type) in whole lines
// (inside_lines): one straight-line instantiation per D type and ReLU. D aligned for 16-byte stores.
template <class Acc, int BlockN>
__device__ __forceinline__ void lines(const Acc (&acc)[BlockN / 2], uint32_t* scratch, const WorkTile& w,
                                      const gemm::Params& p, int row0) {
  const bool relu = p.activation == detail::kActRelu;
  const int lane = threadIdx.x % 32;
  const uint32_t sc = gemm::smem_u32(scratch);
  const int64_t first = w.batch * p.batch_d + static_cast<int64_t>(row0 + lane / 8) * p.ldd + w.n0;
  if constexpr (std::is_same_v<Acc, float>) {
    if (p.d_type == gemm::CdType::bf16) {
      relu ? inside_lines<Acc, BlockN, 2, true, true>(acc, sc, first, p, lane)
           : inside_lines<Acc, BlockN, 2, true, false>(acc, sc, first, p, lane);
      return;
    }
    if (p.d_type == gemm::CdType::f16) {
      relu ? inside_lines<Acc, BlockN, 2, false, true>(acc, sc, first, p, lane)
           : inside_lines<Acc, BlockN, 2, false, false>(acc, sc, first, p, lane);
      return;
    }
  }
  relu ? inside_lines<Acc, BlockN, 4, false, true>(acc, sc, first, p, lane)
       : inside_lines<Acc, BlockN, 4, false, false>(acc, sc, first, p, lane);
}

// The plain epilogue of the warp's rows from row0 when they lie inside D and D is aligned for
// the stores above; false (nothing stored) otherwise, for the general way out. Lines (tiles.hpp,
// whole_lines): row-major D in whole lines, column-major 16-bit D by runs of 8; else runs of 8 in
// both layouts and the fragment's pairs for 32-bit D (the promoted 192- and 256-wide kernels: with
// the whole lines beside their main loop ptxas kept values in local memory, 36 bytes of spill
// stores in the 256-wide, at any addressing).
template <class Acc, int BlockN, bool Lines>
__device__ __forceinline__ bool plain_inside(const Acc (&acc)[BlockN / 2], uint32_t* scratch, const WorkTile& w,
                                             const gemm::Params& p, int row0) {
  if (row0 + kEpilogueChunk > p.m || w.n0 + BlockN > p.n) return false;
  constexpr gemm::CdType kWord = std::is_same_v<Acc, float> ? gemm::CdType::f32 : gemm::CdType::s32;
  const bool d16 = std::is_same_v<Acc, float> && (p.d_type == gemm::CdType::bf16 || p.d_type == gemm::CdType::f16);
  const bool cm = p.cd_col_major;
  if constexpr (!Lines) {
    if (d16) {
      if (!gemm::vector_runs_ok(p, 8)) return false;
      if constexpr (std::is_same_v<Acc, float>) {
        if (cm) runs16<BlockN, true>(acc, scratch, w, p, row0);
        else runs16<BlockN, false>(acc, scratch, w, p, row0);
      }
      return true;
    }
    if (p.d_type != kWord || !gemm::vector_rows_ok(p, 2)) return false;
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    uint32_t* d0 =
        static_cast<uint32_t*>(p.d) + w.batch * p.batch_d + static_cast<int64_t>(row0 + g) * p.ldd + w.n0 + 2 * t;
    uint32_t* d8 = d0 + 8 * p.ldd;
    if (p.activation == detail::kActRelu) inside_pairs<Acc, BlockN, true>(acc, d0, d8);
    else inside_pairs<Acc, BlockN, false>(acc, d0, d8);
    return true;
  } else {
    if (!cm) {
      if (!(d16 || p.d_type == kWord) || !gemm::vector_runs_ok(p, 16 / gemm::cd_bytes(p.d_type))) return false;
      lines<Acc, BlockN>(acc, scratch, w, p, row0);
      return true;
    }
    if (!d16 || !gemm::vector_runs_ok(p, 8)) return false;
    if constexpr (std::is_same_v<Acc, float>) runs16<BlockN, true>(acc, scratch, w, p, row0);
    return true;
  }
}

// Math warpgroup c's part of D (rows 64c .. 64c + 63 of the tile) from this thread's accumulators.
//
// Promote: the kernel's fp8 sums are promoted (their ways out: tiles.hpp, whole_lines). Lean
// (lean_kernel): the promoted 256-wide kernels, whose 128 + 64 accumulator registers per thread leave
// none for a call: with a call in store_blocks, ptxas kept one value in local memory
// (tests/sass/check_sm90_sass.py), so their edge blocks go element by element inline.
template <class Acc, int BlockN, bool Promote>
__device__ __forceinline__ void epilogue(const Acc (&acc)[BlockN / 2], uint32_t* scratch, const WorkTile& w,
                                         const gemm::Params& p, int c) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
  if (w.m0 + 64 * c >= p.m_pad) return;  // past A's rows: the odd CTA of the last cluster (scheduler.cuh)
  const int row0 = w.m0 + 64 * c + 16 * warp;  // the warp's 16 rows
  constexpr bool Lean = lean_kernel(BlockN, Promote);
  if (p.plain && plain_inside<Acc, BlockN, whole_lines(BlockN, Promote)>(acc, scratch, w, p, row0)) return;
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
