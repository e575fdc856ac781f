// SPDX-License-Identifier: BSD-3-Clause
// Constants of A's device layout and of the launches, shared by the kernels, the host side and
// the code generator (plain C++).
#pragma once
#include <cstdint>

namespace spmma::gemm {

// Rows of A as stored on the device are padded to a multiple of this (the largest CTA M tile).
constexpr int kRowPad = 128;
// Rows of A as stored on the device: padded to whole CTA tiles of every kernel (zero rows).
constexpr int64_t padded_rows(int64_t m) { return (m + kRowPad - 1) / kRowPad * kRowPad; }
// Fragment-ready metadata group G of the device layout: K steps per lane record (one kernel
// pipeline stage each).
constexpr int kMetaGroup = 2;
// Batch entries one launch covers: a grid's y and z extents are at most 65535.
constexpr int kMaxGridBatch = 65535;

}  // namespace spmma::gemm
