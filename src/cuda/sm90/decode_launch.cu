// SPDX-License-Identifier: BSD-3-Clause
// Host side of the sm90 decode kernel: table lookup, description and the grids over batch entries.
#include "sm90/decode_launch.hpp"

#include "spmma/error.hpp"

namespace spmma::sm90::decode {

const Entry* find(ElemType a, ElemType b, int block_n, Math math) {
  for (const Entry& e : entries())
    if (e.a == a && e.b == b && e.block_n == block_n && e.math == math) return &e;
  return nullptr;
}

std::string describe_tile(int block_n, int stages, int splits, int issuers, Math m) {
  const std::string math = m == Math::warpgroup
                               ? " math warps (one warpgroup: wgmma.sp m64n" + std::to_string(block_n) +
                                     " from shared memory, the sums of each 2 instructions promoted into f32)"
                               : " math warps (mma.sp m16n8 from shared memory, " + std::to_string(kGroups) +
                                     " per stage, each over all " + std::to_string(kBlockM) + " rows)";
  return "CTA tile " + std::to_string(block_m(m)) + "x" + std::to_string(block_n) +
         (splits > 1 ? ", K in " + std::to_string(splits) + " parts (the CTAs of a cluster, sums added in part 0)"
                     : " over the whole K") + ", " +
         std::to_string(stages) + " TMA stages, " + std::to_string(load_warps(issuers)) + " producer warps" +
         (issuers > 1 ? " (" + std::to_string(issuers) + " per operand, taking the stages in turn)" : "") + " + " +
         std::to_string(kMathWarps) +
         math + ", " + std::to_string(kSteps) + " instructions per stage";
}

std::vector<cuda::Launch> prepare(const Entry& e, const gemm::Params& p) {
  if (p.decode_issuers < 1 || p.decode_issuers > kMaxIssuers)
    fail(Status::internal, "the decode kernel cannot have " + std::to_string(p.decode_issuers) +
                               " producer warps per operand (1 to " + std::to_string(kMaxIssuers) + ")");
  if (!valid_stages(p.decode_stages, e.math, p.decode_issuers))
    fail(Status::internal, "the decode kernel cannot run " + std::to_string(p.decode_stages) + " stages (" +
                               std::to_string(kMinStages) + " to " + std::to_string(kMaxStages) + ", a multiple of " +
                               std::to_string(depth_step(e.math, p.decode_issuers)) + ")");
  if (p.splits < 1 || p.splits > kMaxSplits)
    fail(Status::internal, "the decode kernel cannot split K in " + std::to_string(p.splits) + " parts (1 to " +
                               std::to_string(kMaxSplits) + ")");
  return cuda::grids(p, gemm::kMaxGridBatch, e.prepare);
}

}  // namespace spmma::sm90::decode
