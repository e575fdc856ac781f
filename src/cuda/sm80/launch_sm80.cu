// SPDX-License-Identifier: BSD-3-Clause
// Host side of the sm80 sparse GEMM: table lookup and the launch.
#include "sm80/launch_sm80.hpp"

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

std::vector<cuda::Launch> prepare(const Entry& e, const gemm::Params& p) {
  return cuda::grids(p, gemm::kMaxGridBatch, e.prepare);
}

void launch(std::span<const cuda::Launch> grids, const gemm::Params& p, cudaStream_t s) {
  gemm::Params q = p;
  void* args[] = {&q};
  for (const cuda::Launch& g : grids) {
    q.batch0 = g.batch0;
    cuda::enqueue(g, args, s, "launch of the sm80 kernel");
  }
}

}  // namespace spmma::sm80
