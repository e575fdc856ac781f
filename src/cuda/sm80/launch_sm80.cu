// SPDX-License-Identifier: BSD-3-Clause
// Host side of the sm80 sparse GEMM: table lookup and the launch.
#include "sm80/launch_sm80.hpp"

#include <algorithm>

#include "sm80/spgemm_sm80.cuh"

namespace spmma::sm80 {

const int kTileM = kBlockM, kTileN = CtaTile::kBlockN, kPipelineStages = kStages;

const Entry* find(ElemType a, ElemType b) {
  for (const Entry& e : entries())
    if (e.a == a && e.b == b) return &e;
  return nullptr;
}

std::string describe_tile() {
  return "CTA tile " + std::to_string(kBlockM) + "x" + std::to_string(CtaTile::kBlockN) + ", " + std::to_string(kStages) +
         " stages, " + std::to_string(kStepsPerStage) + " instructions per stage";
}

int64_t ctas(int64_t m_pad, int64_t n) { return m_pad / kBlockM * ((n + CtaTile::kBlockN - 1) / CtaTile::kBlockN); }

void launch(const Entry& e, const gemm::Params& p, cudaStream_t s) {
  for (int b0 = 0; b0 < p.batch; b0 += gemm::kMaxGridBatch) {
    gemm::Params q = p;
    q.batch0 = b0;
    e.launch(q, s, std::min(gemm::kMaxGridBatch, p.batch - b0));
  }
}

}  // namespace spmma::sm80
