// SPDX-License-Identifier: BSD-3-Clause
// Host side of the sm90 decode kernel (decode.cuh): its instantiations, stage count and launch.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <span>
#include <string>
#include <vector>

#include "common/gemm_params.cuh"
#include "sm90/decode_tiles.hpp"
#include "sm90/launch_sm90.hpp"
#include "spmma/types.hpp"

namespace spmma::sm90::decode {

// One instantiation: a type pair's matrix instruction at one tile width, by its math
// (decode_tiles.hpp: mma.sp m16n8 per warp, or for fp8 also wgmma.sp m64nN per warpgroup). The
// table (entries()) is generated from the pair table and the registry (codegen/gen_spmma.cpp
// writes build/generated/gemm_table.cu), for the pairs the main sm90 kernel covers.
struct Entry {
  ElemType a, b;
  int block_n;
  Math math;
  const char* instruction;  // the registry id of its instruction form
  int inst_k;
  PrepareFn prepare;  // prepare_tile<a, b, block_n, math>
};
std::span<const Entry> entries();
const Entry* find(ElemType a, ElemType b, int block_n, Math math);

// The kernel's grid at one instantiation (decode_launch_tile.cuh), decided by the plan: batch
// entries p.batch0 .. min(p.batch, p.batch0 + 65535) - 1, p.decode_stages stages, p.splits CTAs
// per tile.
template <ElemType A, ElemType B, int BlockN, Math M>
cuda::Launch prepare_tile(const gemm::Params& p);

// Tiles of one batch entry: the tiles of A's rows (block_m(m)) x N tiles (each `splits` CTAs with
// split K).
inline int64_t ctas(int64_t m_pad, int64_t n, int block_n, Math m) {
  return m_pad / block_m(m) * ((n + block_n - 1) / block_n);
}

// "CTA tile 32x16 over the whole K, 24 TMA stages, ...", for Plan::describe.
std::string describe_tile(int block_n, int stages, int splits, int issuers, Math m);

// The grids of e for every batch entry of p, at plan time (sm90::launch enqueues them, with A's
// maps in boxes of box_a(e.math)); throws internal when p's stages or split K are out of the
// kernel's range.
std::vector<cuda::Launch> prepare(const Entry& e, const gemm::Params& p);

}  // namespace spmma::sm90::decode
