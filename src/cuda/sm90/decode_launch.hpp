// SPDX-License-Identifier: BSD-3-Clause
// Host side of the sm90 decode kernel (decode.cuh): its instantiations, stage count and launch.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <span>
#include <string>

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
  void (*launch)(const Maps& maps, const gemm::Params& p, cudaStream_t s);
};
std::span<const Entry> entries();
const Entry* find(ElemType a, ElemType b, int block_n, Math math);

// The kernel launch at one instantiation (decode_launch_tile.cuh): batch entries p.batch0 ..
// min(p.batch, p.batch0 + 65535) - 1, p.decode_stages stages, p.splits CTAs per tile.
template <ElemType A, ElemType B, int BlockN, Math M>
void launch_tile(const Maps& maps, const gemm::Params& p, cudaStream_t s);

// Tiles of one batch entry: the tiles of A's rows (block_m(m)) x N tiles (each `splits` CTAs with
// split K).
inline int64_t ctas(int64_t m_pad, int64_t n, int block_n, Math m) {
  return m_pad / block_m(m) * ((n + block_n - 1) / block_n);
}

// "CTA tile 32x16 over the whole K, 24 TMA stages, ...", for Plan::describe.
std::string describe_tile(int block_n, int stages, int splits, Math m);

// Launches e with A's maps (boxes of box_a(e.math)) and B's, for every batch entry of p.
void launch(const Entry& e, const AMaps& a, const CUtensorMap& b, const gemm::Params& p, cudaStream_t s);

}  // namespace spmma::sm90::decode
