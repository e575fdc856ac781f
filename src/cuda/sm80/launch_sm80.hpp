// SPDX-License-Identifier: BSD-3-Clause
// Host side of the sm80 (mma.sp::ordered_metadata) sparse GEMM: its instantiations, grids and launch.
#pragma once
#include <cuda_runtime.h>

#include <span>
#include <string>
#include <vector>

#include "common/gemm_params.cuh"
#include "launch.hpp"
#include "spmma/types.hpp"

namespace spmma::sm80 {

// The grid for batch entries p.batch0 .. (prepare_tile).
using PrepareFn = cuda::Launch (*)(const gemm::Params& p);

// The kernel for a type pair: its mma.sp::ordered_metadata form and launch. The table
// (entries()) is generated from the pair table and the registry (codegen/gen_spmma.cpp writes
// build/generated/gemm_sm80.cu).
struct Entry {
  ElemType a, b;
  const char* instruction;  // the registry id of its mma.sp::ordered_metadata form
  int inst_k;               // that form's K
  PrepareFn prepare;        // prepare_tile<a, b>
};
std::span<const Entry> entries();

// The grid for batch entries p.batch0 .. min(p.batch, p.batch0 + 65535) - 1 (sm80/launch_tile.cuh),
// decided by the plan from p's sizes.
template <ElemType A, ElemType B>
cuda::Launch prepare_tile(const gemm::Params& p);

// The entry for A/B types, or null.
const Entry* find(ElemType a, ElemType b);

// The kernel's one configuration (spgemm_sm80.cuh), for PlanInfo.
extern const int kTileM, kTileN, kPipelineStages;

// "CTA tile 128x128, 4 stages, 2 instructions per stage", for Plan::describe.
std::string describe_tile();

// CTAs of one launch: M tiles x N tiles (a 1-D grid), at most 2^31 - 1.
int64_t ctas(int64_t m_pad, int64_t n);

// The grids of e for every batch entry of p (one per 65535 entries), at plan time.
std::vector<cuda::Launch> prepare(const Entry& e, const gemm::Params& p);
// Enqueues a plan's grids on stream s, each with its first batch entry in p.batch0.
void launch(std::span<const cuda::Launch> grids, const gemm::Params& p, cudaStream_t s);

}  // namespace spmma::sm80
