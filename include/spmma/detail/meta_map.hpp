// SPDX-License-Identifier: BSD-3-Clause
// The one formula of the mma.sp metadata layout, shared by the host registry (MetaLayout::at)
// and device code (the GPU compressor), so that the layout is written down exactly once.
#pragma once

#include "spmma/detail/hd.hpp"

namespace spmma::detail {

struct RowChunk {
  int row;    // row within the warp's 16 rows
  int chunk;  // chunk within the instruction's K
};

// Nibble n of metadata lane j (0 .. lanes_per_group-1) of quad g:
//   nibble_half (16/32-bit A): nibbles 0-3 describe row g, 4-7 row g+8; chunk 4j + n%4;
//   lane_bit    (8/4-bit A):   lane j%2 picks row g or g+8; chunk 8(j/2) + n.
SPMMA_HD constexpr RowChunk meta_row_chunk(bool nibble_half, int g, int j, int n) {
  return nibble_half ? RowChunk{g + 8 * (n / 4), 4 * j + n % 4} : RowChunk{g + 8 * (j % 2), 8 * (j / 2) + n};
}

}  // namespace spmma::detail
