// SPDX-License-Identifier: BSD-3-Clause
// A compressed A between its two forms, on the GPU, and back to dense (docs/layouts.md):
//   interchange: the whole-matrix form (values m x k/2 at the type's width, metadata m rows of
//                16-bit words, nibble c of a row in bits 4(c%4).. of word c/4) — what
//                SparseMatrix::to_host, SparseWeight.state() and a state_dict hold;
//   device:      the kernels' form (values padded to m_pad rows, metadata fragment-ready).
// Three directions, one thread per fragment-ready word, as the GPU compressor
// (compress_gpu.cuh) walks it:
//   to_device:      interchange -> device. Every nibble is checked (a forbidden one reported as
//                   the first bad chunk, nothing is guessed); an unordered pair is put in order
//                   by swapping the nibble's indices and the two stored groups (the same product:
//                   the ordered_metadata instruction needs the order, as upload does on the host).
//   to_interchange: device -> interchange (the nibbles checked again: the buffers may be the
//                   caller's).
//   to_dense:       device -> the dense pruned A, every element of every chunk written.
// Each thread owns whole 16-bit interchange words (the 4 nibbles of a word are chunks one lane
// describes: 4j + n%4, or 8(j/2) + n) and whole chunks of values, so no two threads write one
// byte. Everything but the launch is SPMMA_HD: the CPU tests run each thread's exact work
// (tests/test_relayout.cpp).
#pragma once
#include <cstdint>

#include "compress_gpu.cuh"

namespace spmma::gpu_format {

enum class Relayout : uint8_t { to_device, to_interchange, to_dense };

struct RelayoutParams {
  CompressParams shape;       // type, pattern and layout fields (compress_params_for), m, k, m_pad,
                              // meta_group, groups, value_row_bytes; shape.values / shape.meta: the
                              // device form
  Relayout dir = Relayout::to_device;
  uint8_t* x_values = nullptr;   // interchange values, m rows of shape.value_row_bytes
  uint16_t* x_meta = nullptr;    // interchange metadata, m rows of x_meta_words
  int64_t x_meta_words = 0;      // per row: k / chunk / 4 (k is a multiple of the instruction's K)
  uint8_t* dense = nullptr;      // to_dense: m rows of ld_bytes
  int64_t ld_bytes = 0;
  unsigned long long* bad = nullptr;  // min over row * chunks + chunk of a chunk with a forbidden nibble
};

// A nibble the tensor cores accept for the pattern: 1:2 names element 0 (0x4) or 1 (0xE); the
// others two different indices, in order (i0 < i1) where `ordered`.
SPMMA_HD inline bool nibble_ok(detail::ChunkShape s, uint32_t nib, bool ordered) {
  if (s.one_of_two()) return nib == 0x4 || nib == 0xE;
  const uint32_t i0 = nib & 3u, i1 = (nib >> 2) & 3u;
  return ordered ? i0 < i1 : i0 != i1;
}

// The work of thread `tid` (compress_threads(p.shape) of them); returns the lowest bad chunk of
// its chunks (row * chunks + chunk), else kNoViolation.
SPMMA_HD inline unsigned long long relayout_word(const RelayoutParams& rp, int64_t tid) {
  const CompressParams& p = rp.shape;
  const auto [wb, ks, widx, lane_p] = word_place(p, tid);
  if (ks >= p.k / p.k_inst) {
    if (rp.dir == Relayout::to_device) p.meta[widx] = kPadWord;
    return kNoViolation;
  }
  const int g = lane_p / p.lanes, j = lane_p % p.lanes;
  const int chunks_per_step = p.k_inst / p.shape.chunk;
  const int64_t chunks_per_row = p.k / p.shape.chunk;
  const int ebits = p.elem_bits;
  const int group = p.shape.group;
  unsigned long long first_bad = kNoViolation;
  const uint32_t word = rp.dir == Relayout::to_device ? 0u : p.meta[widx];
  uint32_t out = 0;
  // to_interchange: the (at most two) 16-bit words this thread fills, assembled here.
  int64_t xw_index[2] = {-1, -1};
  uint32_t xw_value[2] = {0, 0};
  for (int n = 0; n < 8; ++n) {
    const detail::RowChunk rc = detail::meta_row_chunk(p.nibble_half, g, j, n);
    const int64_t row = wb * 16 + rc.row;
    const int64_t chunk = ks * chunks_per_step + rc.chunk;
    if (row >= p.m) {  // padding rows: only the device form has them
      if (rp.dir == Relayout::to_device) {
        out |= 0xEu << (4 * n);
        uint8_t* dst = p.values + row * p.value_row_bytes;
        for (int s = 0; s < p.shape.kept; ++s) write_elem(dst, chunk * p.shape.kept + s, ebits, 0);
      }
      continue;
    }
    const uint8_t* src_row = rp.dir == Relayout::to_device ? rp.x_values + row * p.value_row_bytes
                                                           : p.values + row * p.value_row_bytes;
    uint32_t nib = rp.dir == Relayout::to_device
                       ? (rp.x_meta[row * rp.x_meta_words + chunk / 4] >> (4 * (chunk % 4))) & 0xFu
                       : (word >> (4 * n)) & 0xFu;
    // The interchange form may hold unordered pairs (Compressed::ordered = false); the device
    // form holds ordered ones only (what the kernels' instruction reads).
    const bool ok = nibble_ok(p.shape, nib, rp.dir != Relayout::to_device);
    if (!ok) {
      const unsigned long long at = static_cast<unsigned long long>(row * chunks_per_row + chunk);
      if (at < first_bad) first_bad = at;
    }
    uint32_t stored[detail::kMaxKept] = {};
    for (int s = 0; s < p.shape.kept; ++s) stored[s] = read_elem(src_row, chunk * p.shape.kept + s, ebits);
    if (rp.dir == Relayout::to_device) {
      if (ok && !p.shape.one_of_two() && (nib & 3u) > ((nib >> 2) & 3u)) {
        nib = ((nib & 3u) << 2) | ((nib >> 2) & 3u);
        for (int e = 0; e < group; ++e) {
          const uint32_t t = stored[e];
          stored[e] = stored[group + e];
          stored[group + e] = t;
        }
      }
      out |= nib << (4 * n);
      uint8_t* dst = p.values + row * p.value_row_bytes;
      for (int s = 0; s < p.shape.kept; ++s) write_elem(dst, chunk * p.shape.kept + s, ebits, stored[s]);
    } else if (rp.dir == Relayout::to_interchange) {
      const int64_t xi = row * rp.x_meta_words + chunk / 4;
      const int slot = xw_index[0] < 0 || xw_index[0] == xi ? 0 : 1;
      xw_index[slot] = xi;
      xw_value[slot] |= nib << (4 * (chunk % 4));
      uint8_t* dst = rp.x_values + row * p.value_row_bytes;
      for (int s = 0; s < p.shape.kept; ++s) write_elem(dst, chunk * p.shape.kept + s, ebits, stored[s]);
    } else {
      uint32_t dense[detail::kMaxChunk] = {};
      if (ok) {
        int dg[2] = {0, 0};
        const int kept_groups = detail::stored_groups(p.shape, static_cast<uint8_t>(nib), dg);
        for (int i = 0; i < kept_groups; ++i)
          for (int e = 0; e < group; ++e) dense[dg[i] * group + e] = stored[i * group + e];
      }
      uint8_t* dst = rp.dense + row * rp.ld_bytes;
      for (int e = 0; e < p.shape.chunk; ++e) write_elem(dst, chunk * p.shape.chunk + e, ebits, dense[e]);
    }
  }
  if (rp.dir == Relayout::to_device) p.meta[widx] = out;
  if (rp.dir == Relayout::to_interchange)
    for (int s = 0; s < 2; ++s)
      if (xw_index[s] >= 0) rp.x_meta[xw_index[s]] = static_cast<uint16_t>(xw_value[s]);
  return first_bad;
}

// Launches the kernel on `stream` (a cudaStream_t); throws internal for parameters that
// compress_params_for() did not fill, cuda_error for a failed launch.
void launch_relayout(const RelayoutParams& p, void* stream);

}  // namespace spmma::gpu_format
