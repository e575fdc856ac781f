// Host side of the sm80 (mma.sp::ordered_metadata) sparse GEMM: which instruction serves a type
// pair, and the launch.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "common/gemm_params.cuh"
#include "spmma/types.hpp"

namespace spmma::sm80 {

struct Instr {
  ElemType a, b;
  const char* variant;  // the registry id of the instruction
  void (*launch)(const gemm::Params&, cudaStream_t, int batch_count);
};

// The instruction for A/B types, or null.
const Instr* find(ElemType a, ElemType b);

// The kernel's one configuration (spgemm_sm80.cuh), for PlanInfo.
extern const int kTileM, kTileN, kPipelineStages;

// "CTA tile 128x128, 4 stages, 2 instructions per stage", for Plan::describe.
std::string describe_tile();

// CTAs of one launch: M tiles x N tiles (a 1-D grid), at most 2^31 - 1.
int64_t ctas(int64_t m_pad, int64_t n);

// Launches instruction `in` on stream s for every batch entry of p (one launch per 65535 entries).
void launch(const Instr& in, const gemm::Params& p, cudaStream_t s);

}  // namespace spmma::sm80
