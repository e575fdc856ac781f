// SPDX-License-Identifier: BSD-3-Clause
// GPU prune + compress: a dense A (M x K, row-major, on the device) to packed values and
// fragment-ready metadata (docs/layouts.md). One thread builds one metadata word — the 8 chunks
// one lane's register describes — so no two threads write the same word or value.
//
// The rules per chunk are the host's own code (spmma/detail/chunk_select.hpp, also run by
// src/core/sparse.cpp): the result is compress(prune_magnitude(A)) (prune) or compress(A)
// (check), bit for bit. Everything here but the kernel launch is SPMMA_HD, so the CPU tests run
// the kernel's exact work per word (tests/test_chunk_select.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "spmma/detail/chunk_select.hpp"
#include "spmma/detail/meta_map.hpp"
#include "spmma/error.hpp"
#include "spmma/isa.hpp"
#include "spmma/types.hpp"

namespace spmma::gpu_format {

struct CompressParams {
  // From A's type and the instruction: set by compress_params_for(), never by hand.
  int elem_bits = 0;              // bits per element in memory: 4, 8, 16 or 32 (memory_bits)
  detail::ElemRule rule{};        // zero, NaN and magnitude from raw bits
  detail::ChunkShape shape{};     // the pattern
  bool nibble_half = true;        // metadata style of the instruction (meta_map.hpp)
  int lanes = 0;                  // L: metadata lanes per quad
  int k_inst = 0;                 // dense K per instruction
  // From the call.
  const uint8_t* a = nullptr;     // dense A rows, lda_bytes apart
  int64_t lda_bytes = 0;
  int64_t m = 0, k = 0;           // dense sizes
  int64_t m_pad = 0;              // rows of the output, a multiple of 16 (rows >= m are zero)
  int meta_group = 2;             // G of the fragment-ready layout
  int64_t groups = 0;             // ceil(k_steps / G)
  bool prune = true;              // false: check only, report the first violating chunk
  uint8_t* values = nullptr;      // m_pad rows of value_row_bytes
  int64_t value_row_bytes = 0;
  uint32_t* meta = nullptr;
  unsigned long long* violation = nullptr;  // min over row * chunks + chunk of a violating chunk
};

// The fields of CompressParams that A's type and the instruction decide: element width, element
// rule, pattern and metadata layout, for the sparse variant v whose A is of type a. Throws
// invalid_argument when v is not a sparse form with A of type a, not_supported when the rule
// cannot be read from raw bits (detail::elem_rule).
inline CompressParams compress_params_for(ElemType a, const isa::Variant& v) {
  if (!v.meta || v.a != a)
    fail(Status::invalid_argument, "GPU compress: " + v.id + " is not a sparse form with A " + std::string(type_name(a)));
  CompressParams p;
  p.elem_bits = memory_bits(a);
  p.rule = detail::elem_rule(a, v.meta->pattern);
  p.shape = detail::chunk_shape(v.meta->pattern);
  p.nibble_half = v.meta->style == isa::MetaLayout::Style::nibble_half;
  p.lanes = v.meta->lanes_per_group;
  p.k_inst = v.k;
  return p;
}

inline constexpr uint32_t kPadWord = 0x44444444u;  // the fragment-ready layout's padding word
inline constexpr unsigned long long kNoViolation = ~0ull;

// Element i of a row, `bits` wide (4-bit: two per byte, low nibble first; little-endian). Byte
// by byte: no alignment is assumed of A's rows.
SPMMA_HD inline uint32_t read_elem(const uint8_t* row, int64_t i, int bits) {
  if (bits == 4) return (row[i / 2] >> (4 * (i % 2))) & 0xFu;
  const uint8_t* b = row + i * (bits / 8);
  uint32_t v = 0;
  for (int j = 0; j < bits / 8; ++j) v |= static_cast<uint32_t>(b[j]) << (8 * j);
  return v;
}

SPMMA_HD inline void write_elem(uint8_t* row, int64_t i, int bits, uint32_t v) {
  if (bits == 4) {
    // A chunk's stored 4-bit elements fill whole bytes of their own (4 per chunk = 2 bytes), so
    // no other thread writes this byte.
    const int shift = 4 * static_cast<int>(i % 2);
    row[i / 2] = static_cast<uint8_t>((row[i / 2] & ~(0xF << shift)) | ((v & 0xFu) << shift));
    return;
  }
  uint8_t* b = row + i * (bits / 8);
  for (int j = 0; j < bits / 8; ++j) b[j] = static_cast<uint8_t>(v >> (8 * j));
}

// Threads of a launch: one per metadata word, padding words included.
SPMMA_HD inline int64_t compress_threads(const CompressParams& p) {
  return (p.m_pad / 16) * p.groups * p.meta_group * 8 * p.lanes;
}

// The work of thread `tid`: its metadata word and the stored values of the 8 chunks the word
// describes. Returns the lowest row * chunks + chunk of those chunks that breaks the pattern (check
// mode), else kNoViolation.
// Thread tid's fragment-ready word: tid enumerates (16-row block wb, k-step ks, metadata lane
// lane_p), and the word lives at the layout's index widx (the GPU compressor and the relayout
// kernel walk the words the same way).
struct WordPlace {
  int64_t wb, ks, widx;
  int lane_p;
};
SPMMA_HD inline WordPlace word_place(const CompressParams& p, int64_t tid) {
  const int P = 8 * p.lanes;
  const int64_t steps = p.groups * p.meta_group;
  const int64_t wb = tid / (steps * P), rem = tid % (steps * P);
  const int64_t ks = rem / P;
  const int lane_p = static_cast<int>(rem % P);
  return {wb, ks, ((wb * p.groups + ks / p.meta_group) * P + lane_p) * p.meta_group + ks % p.meta_group, lane_p};
}

SPMMA_HD inline unsigned long long compress_word(const CompressParams& p, int64_t tid) {
  const auto [wb, ks, widx, lane_p] = word_place(p, tid);
  if (ks >= p.k / p.k_inst) {
    p.meta[widx] = kPadWord;
    return kNoViolation;
  }
  const int g = lane_p / p.lanes, j = lane_p % p.lanes;
  const int chunks_per_step = p.k_inst / p.shape.chunk;
  const int64_t chunks_per_row = p.k / p.shape.chunk;
  unsigned long long first_violation = kNoViolation;
  uint32_t word = 0;
  for (int n = 0; n < 8; ++n) {
    const detail::RowChunk rc = detail::meta_row_chunk(p.nibble_half, g, j, n);
    const int64_t row = wb * 16 + rc.row;
    const int64_t chunk = ks * chunks_per_step + rc.chunk;
    uint32_t x[detail::kMaxChunk] = {};
    if (row < p.m) {
      const uint8_t* src = p.a + row * p.lda_bytes;
      for (int e = 0; e < p.shape.chunk; ++e) x[e] = read_elem(src, chunk * p.shape.chunk + e, p.elem_bits);
    }
    uint32_t stored[detail::kMaxKept] = {};
    const detail::ChunkResult r = detail::select_chunk(p.rule, p.shape, p.prune, x, stored);
    if (r.violates) {
      const unsigned long long at = static_cast<unsigned long long>(row * chunks_per_row + chunk);
      if (at < first_violation) first_violation = at;
    }
    word |= static_cast<uint32_t>(r.nibble) << (4 * n);
    uint8_t* dst = p.values + row * p.value_row_bytes;
    for (int s = 0; s < p.shape.kept; ++s) write_elem(dst, chunk * p.shape.kept + s, p.elem_bits, stored[s]);
  }
  p.meta[widx] = word;
  return first_violation;
}

// Launches the kernel on `stream` (a cudaStream_t). Throws internal for params that
// compress_params_for() did not fill, cuda_error for a failed launch.
void launch_compress(const CompressParams& p, void* stream);

}  // namespace spmma::gpu_format
