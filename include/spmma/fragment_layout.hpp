// SPDX-License-Identifier: BSD-3-Clause
// spmma — fragment-ready metadata: the whole-matrix metadata layout the GPU kernels load.
//
// A kernel running a sparse MMA over an M x K matrix A walks blocks of v.m rows (16 for mma.sp,
// 64 for wgmma.sp) and K in steps of the instruction's K (v.k). For every instruction, each lane
// that sparsity selector 0 names passes one 32-bit metadata register `e`, whose nibbles the
// registry's MetaLayout defines. This layout stores those registers so that each metadata lane
// fetches the `e` of G consecutive k-steps with one aligned G·4-byte load (G = 4: one uint4),
// and the lanes of a warp together read one contiguous, aligned segment with no byte wasted.
//
// Layout (docs/layouts.md, "Fragment-ready metadata"). With L = lanes_per_group (1, 2 or 4),
// P = 8·L metadata lanes per warp, a lane l of warp w = l/32 in a v.m-row block rb,
// g = (l%32)/4, t = l%4 (t < L for the lanes selector 0 names), p = g·L + t:
//   wb      = rb · (v.m/16) + w                       (the 16-row block the warp covers)
//   groups  = ceil(k_steps / G),  k_steps = K / v.k
//   e(rb, k_step, l) = words[((wb · groups + k_step/G) · P + p) · G + k_step%G]
// A warpgroup's warp w thus reads exactly the words the equivalent mma.sp form (same A type and
// K per instruction) reads for 16-row block 4·rb + w: one matrix serves both.
// When k_steps is not a multiple of G, the last group of each 16-row block is padded with
// kPadWord (nibble 0x4 everywhere: valid for every pattern, ordered or not).
// Size: bytes() = (M/16) · groups · G · P · 4 = (M/16) · groups · G · 32·L bytes; without padding
// (k_steps a multiple of G) exactly Compressed::metadata_bytes().
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "spmma/isa.hpp"
#include "spmma/matrix.hpp"
#include "spmma/sparse.hpp"

namespace spmma {

struct FragmentReadyMeta {
  static constexpr uint32_t kPadWord = 0x44444444u;  // fills the padded k-steps of a last group

  ElemType type = ElemType::f16;     // A's type
  Pattern pattern = Pattern::p2_4;
  bool ordered = true;               // as Compressed::ordered of the source
  int64_t rows = 0, cols = 0;        // dense M x K
  int group = 4;                     // G: k-steps per lane record (1, 2, 4 or 8)
  int k_step = 0;                    // dense K per instruction (v.k)
  int block_rows = 16;               // rows per instruction (v.m): 16 (mma.sp) or 64 (wgmma.sp)
  int lanes_per_group = 1;           // L: metadata lanes per quad for selector 0 (t = 0..L-1)
  std::vector<uint32_t> words;
  std::string variant_id;            // the variant it was built for

  int meta_lanes() const { return 8 * lanes_per_group; }        // P, per warp
  int64_t k_steps() const { return k_step ? cols / k_step : 0; }
  int64_t groups() const { return (k_steps() + group - 1) / group; }
  int64_t warp_blocks() const { return rows / 16; }             // 16-row blocks
  // Index into `words` of the word for 16-row block wb, k-step ks and metadata lane p (0..P-1).
  size_t index(int64_t wb, int64_t ks, int p) const {
    return static_cast<size_t>(((wb * groups() + ks / group) * meta_lanes() + p) * group + ks % group);
  }
  size_t bytes() const { return words.size() * sizeof(uint32_t); }
};

// Builds the layout for variant v (a sparse form: mma.sp, mma.sp::ordered_metadata or
// wgmma.mma_async.sp). Throws invalid_argument, naming the value, when v is dense, group is not
// 1, 2, 4 or 8, a's type or pattern differs from v's, rows is not a multiple of v.m, cols not a
// multiple of v.k, or a's arrays have the wrong size; invalid_value (naming row, chunk and
// nibble) for a nibble v does not accept (e.g. an unordered one for an ordered form).
FragmentReadyMeta to_fragment_ready(const Compressed& a, const isa::Variant& v, int group = 4);

// The inverse: the Compressed matrix with these values (rows x cols/2 of f.type). v must have the
// same layout (A type, pattern, v.k, lanes per group; rows a multiple of v.m) — e.g. the variant
// f was built for, or the wgmma.sp form matching an mma.sp one. Throws invalid_argument for a
// mismatch or wrong sizes, invalid_value for a nibble v does not accept or a padding word that
// is not kPadWord.
Compressed from_fragment_ready(const FragmentReadyMeta& f, const Matrix& values, const isa::Variant& v);

// What lane `lane` (0..31, 0..127 for a 64-row layout) passes as `e` with selector 0 for the
// instruction at block row_block (of f.block_rows rows) and k-step k_step; 0 for a lane that
// holds no metadata. Throws invalid_argument for an index out of range.
uint32_t fragment_ready_word(const FragmentReadyMeta& f, int64_t row_block, int64_t k_step, int lane);

}  // namespace spmma
