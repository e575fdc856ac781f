// SPDX-License-Identifier: BSD-3-Clause
// Host side of the sm90 (wgmma.mma_async.sp) sparse GEMM: its instantiations, what TMA needs of
// the operands, the tensor maps and the launch.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <span>
#include <string>
#include <vector>

#include "common/gemm_params.cuh"
#include "launch.hpp"
#include "sm90/tiles.hpp"
#include "spmma/types.hpp"

namespace spmma::sm90 {

// B's tensor maps: boxes of the first N tile's rows, and of the last's (b_box_rows: the same map
// unless N is past the tile and not a multiple of it, one CTA per N tile).
struct BMaps {
  CUtensorMap b, tail;
};
// The TMA tensor maps of one launch, in the kernels' order: A's values, B, B's last N tile, A's
// fragment-ready metadata.
struct Maps {
  CUtensorMap a, b, b_tail, meta;
};

// The grid of one instantiation for batch entries p.batch0 .. (prepare_tile).
using PrepareFn = cuda::Launch (*)(const gemm::Params& p);

// One kernel instantiation: a type pair's wgmma.sp form at one tile width, with or without fp8
// promotion. The table (entries()) is generated from the pair table and the registry
// (codegen/gen_spmma.cpp writes build/generated/gemm_table.cu).
struct Entry {
  ElemType a, b;
  int block_n;
  bool promoted;
  const char* instruction;  // the registry id of its wgmma.sp form
  int inst_k;               // that form's K
  PrepareFn prepare;        // prepare_tile<a, b, block_n, promoted>
};
std::span<const Entry> entries();

// The kernel's grid at one instantiation (sm90/launch_tile.cuh), decided by the plan: it covers
// batch entries p.batch0 .. min(p.batch, p.batch0 + 65535) - 1, with p.splits parts of K in each
// cluster; p's sizes and the plan's choices are read, not its pointers.
template <ElemType A, ElemType B, int BlockN, bool Promote>
cuda::Launch prepare_tile(const gemm::Params& p);

// Whether the sm90 kernel has a form for A/B types (4-bit types: no wgmma on sm_90).
bool covers(ElemType a, ElemType b);
// The instantiation for A/B at a tile width and accumulation, or null.
const Entry* find(ElemType a, ElemType b, int block_n, bool promoted);

// "CTA tile 128x256, 5 stages, ...": the kernel's shape at a tile width and cluster size, for
// Plan::describe.
std::string describe_tile(int block_n, int cluster);

// CTAs of one launch at tile width block_n: M tiles (whole clusters of `cluster` CTAs) x N tiles
// (a 1-D grid), at most 2^31 - 1.
inline int64_t ctas(int64_t m_pad, int64_t n, int block_n, int cluster = 1) {
  return (m_pad / kBlockM + cluster - 1) / cluster * cluster * ((n + block_n - 1) / block_n);
}

// Why the copy engine (TMA) cannot read a B stored in place with these byte strides (empty when
// it can): the address of every column must be a multiple of 16 bytes, strides below 2^40.
std::string b_in_place_unsupported(int64_t ldb_bytes, int64_t batch, int64_t batch_b_bytes, int b_alignment);

// The tensor maps of A's values in boxes of a_box (box_a() for this kernel, decode::box_a() for
// the decode kernel) and of its metadata in boxes of one group of a_box.rows / 16 blocks (they
// depend on A's storage only, so a caller may keep them for every run on that storage), and of B
// (per B pointer and tile width). Throw spmma::Error when the driver rejects a map, naming the
// operand and its sizes.
struct AMaps {
  CUtensorMap a, meta;
};
AMaps encode_a(const gemm::Params& p, Box a_box);
BMaps encode_b(const gemm::Params& p, int block_n, int b_bits);

// The grids of e for every batch entry of p (one per 65535 entries; split K inside each grid's
// clusters, split_k.cuh), at plan time.
std::vector<cuda::Launch> prepare(const Entry& e, const gemm::Params& p);

// Enqueues a plan's grids (of this kernel or the decode kernel: both take the four maps and
// the parameters) on stream s, each with its first batch entry in p.batch0.
void launch(std::span<const cuda::Launch> grids, const AMaps& a, const BMaps& b, const gemm::Params& p,
            cudaStream_t s, const char* what);

}  // namespace spmma::sm90
