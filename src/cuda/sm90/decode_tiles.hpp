// SPDX-License-Identifier: BSD-3-Clause
// The sm90 decode kernel's shape as data (plain C++: the kernel, its launch, the heuristics and
// the code generator read it). The decode kernel (decode.cuh) streams A for small N: small CTA
// tiles, so that a weight of 4096 rows already fills most SMs, several CTAs per SM, each a deep
// TMA pipeline of small stages, and matrix instructions whose width fits N.
#pragma once
#include <cstdint>
#include <iterator>
#include <numeric>

#include "common/device_layout.hpp"
#include "sm90/tiles.hpp"
#include "spmma/detail/hd.hpp"
#include "spmma/types.hpp"

namespace spmma::sm90::decode {

// The math (decode.cuh), a kernel's template argument:
//   warps      mma.sp m16n8 per warp on 32-row tiles, every type; fp8 (sm_90 has no fp8 mma.sp)
//              as two f16 instructions on operands converted in registers, f32 sums;
//   warpgroup  (fp8 only) wgmma.sp m64nN per warpgroup on 64-row tiles, N the tile width, the
//              sums of each 2 instructions promoted into f32 as the main kernel's: no conversions,
//              but half the CTAs. The plan takes it on weights of at least one 64-row tile per
//              SM (heuristics.cu).
enum class Math : uint8_t { warps, warpgroup };
SPMMA_HD constexpr bool has_warpgroup_math(ElemType a) { return a == ElemType::e4m3 || a == ElemType::e5m2; }
constexpr int kBlockM = 32;                      // rows of D per CTA of the warps' math: two row groups of 16
constexpr int kRowGroups = kBlockM / 16;
constexpr int kWgBlockM = 64;                    // ... and of the warpgroup's (wgmma's M)
SPMMA_HD constexpr int block_m(Math m) { return m == Math::warpgroup ? kWgBlockM : kBlockM; }
SPMMA_HD constexpr Math math_of(int block_m) { return block_m == kWgBlockM ? Math::warpgroup : Math::warps; }
constexpr int kGroups = 2;                       // metadata groups per stage (below)
// The math warps: kParts groups of kGroups warps take the stages in turn, so that one group's
// wait for its stage's loads and chain of mma.sp overlaps the next stage's; the kGroups warps of
// a group share a stage, one metadata group (2 instructions along K) each, over both row groups,
// so that each B fragment (for fp8, its conversion) serves the tile's 32 rows. Each warp keeps
// its own sums, added up at the end in the order of the warps. (Before, a warp took one row
// group's whole stage, and B was read and converted once per row group: the split by metadata
// group ran 1.00-1.05x on the H100, 2026-11-27, docs/benchmarks.md.)
// (The warpgroup's math takes every stage itself, its 4 warps one 16-row block each: parts(a).)
constexpr int kParts = 2;
constexpr int kMathWarps = kParts * kGroups;
static_assert(kMathWarps == 4, "the warpgroup's math is these warps");
SPMMA_HD constexpr int parts(Math m) { return m == Math::warpgroup ? 1 : kParts; }
constexpr int kMathThreads = 32 * kMathWarps;
// Producer warps, one per operand (A, B, metadata) and issuer, each one thread issuing that
// operand's copies of its stages. The copy engine takes ~90-110 cycles per box from one thread
// (one thread issuing all three operands took ~340 cycles per stage on the H100, clock64,
// 2026-11-27: 16,400 cycles for the first 48 stages, all slots free), so a CTA alone on its SM ran
// at its copies' issue rate, the same hot as cold (bf16 4096 x 16 x 4096 on 1 part: 12.8 and 13.1
// us, 2026-12-07). Where few CTAs share an SM (at most kMaxIssuerCtasPerSm, the plan's choice,
// gemm::Params::decode_issuers) kMaxIssuers warps per operand take the stages in turn; two CTAs
// per SM with one issuer each had been split K's gain (heuristics.cu). With several CTAs per SM
// their issuers are the SM's already, and the extra warps' registers would cost CTAs (11008 x 16
// x 4096, 3 CTAs per SM: 0.80-0.90x with two, 2026-12-07).
constexpr int kOperands = 3;
constexpr int kMaxIssuers = 2;
constexpr int kMaxIssuerCtasPerSm = 2;
SPMMA_HD constexpr int load_warps(int issuers) { return kOperands * issuers; }
SPMMA_HD constexpr int threads(int issuers) { return 32 * (kMathWarps + load_warps(issuers)); }
// The CTA's threads with one issuer per operand (several CTAs per SM) and with kMaxIssuers (the
// math warps first: warps 0 .. 3, then the producers).
// (Written out, not as threads(): tests/sass/check_sm90_sass.py evaluates these lines.)
constexpr int kThreads = 32 * (kMathWarps + kOperands);
constexpr int kMaxThreads = 32 * (kMathWarps + kOperands * kMaxIssuers);
static_assert(kThreads == threads(1) && kMaxThreads == threads(kMaxIssuers), "the CTA's threads, one definition");
static_assert(gemm::kRowPad % kBlockM == 0 && gemm::kRowPad % kWgBlockM == 0, "A's padded rows are whole decode tiles");
// A stage is two metadata groups (kSteps = 4 instructions along K): A's box is the tile's rows x
// 128 B (the 128-byte swizzle) of the main kernel's tensor layout, B's two boxes of BlockN columns x
// 128 B, the metadata's two boxes of one group each. The copy engine's cost goes by the rows of a
// box, ~5 cycles each (2026-11-27, decode-kernel-timing-h100.txt), so A's rows of 128 B carry
// twice the bytes of the main kernel's 64.
constexpr int kSteps = kGroups * gemm::kMetaGroup;
SPMMA_HD constexpr Box box_a(Math m) { return {kGroups * kARowBytes, block_m(m)}; }
SPMMA_HD constexpr Box box_meta(int meta_lanes, Math m) { return sm90::box_meta(meta_lanes, block_m(m)); }
// B's slots are the main kernel's boxes (sm90::box_b): BlockN columns x 128 B, of which the box
// fills b_box_rows (N where N is narrower than the tile).
static_assert(box_a(Math::warps).bytes == 128 && kBRowBytes == 128, "128-byte rows: the 128-byte swizzle");
// Shared memory per stage: A, B's and the metadata's kGroups boxes (the largest metadata box),
// each region 1024-byte aligned as a whole (the swizzle atoms), plus the stage's two barriers.
SPMMA_HD constexpr int stage_bytes(int block_n, Math m) {
  return box_a(m).size() + kGroups * (box_b(block_n).size() + box_meta(kMaxMetaLanes, m).size()) + 16;
}
// The CTA's: the swizzle atoms' alignment, the stages, split K's two barriers.
SPMMA_HD constexpr int smem_bytes(int block_n, int stages, Math m) {
  return 1024 + stages * stage_bytes(block_n, m) + 16;
}
// The pipeline's depth is the plan's (heuristics.cu): deep where a CTA has an SM to itself, shallower
// where several share one, so that the bytes in flight per SM stay about the same.
constexpr int kMinStages = 2, kMaxStages = 24;
// Stage counts are whole multiples of parts(m): a math warp takes every kParts-th stage, so the
// stage a slot held one round before (stage - stages) is then its own, already consumed, and its
// wait on the slot's barrier cannot see that round's completion as this one's (a phase parity
// repeats every two rounds). 15 stages (2026-11-27, H100, 448 CTAs) let a fast warp pass its wait
// on stale data and faulted the kernel. Likewise of the issuers: a producer warp fills every
// issuers-th stage, so each slot is one warp's. depth_step: the depth's multiple, whole rounds of
// both (the plan rounds its depth down to it, heuristics.cu). Host only: the plan and the launch.
constexpr int depth_step(Math m, int issuers) { return std::lcm(parts(m), issuers); }
constexpr bool valid_stages(int stages, Math m, int issuers = 1) {
  return stages >= kMinStages && stages <= kMaxStages && stages % depth_step(m, issuers) == 0;
}
static_assert(valid_stages(kMinStages, Math::warps, kMaxIssuers) && valid_stages(kMaxStages, Math::warps, kMaxIssuers),
              "the bounds are valid depths");
constexpr int kMaxCtasPerSm = 4;

// The kernel's stages over K: kGroups metadata groups each, the last half past K when the groups
// are odd (its second box zeros).
SPMMA_HD constexpr int64_t k_stages(int64_t meta_groups) { return (meta_groups + kGroups - 1) / kGroups; }

// Split K: the parts of a tile's stages are the CTAs of a cluster (rank = part), each a run of
// stages_per_split stages; the parts' sums meet in part 0's epilogue through distributed shared
// memory, in the order of the parts (decode.cuh). At most 4 parts: clusters of 4 still place
// several per GPC with 4 CTAs per SM.
constexpr int kMaxSplits = 4;
SPMMA_HD constexpr int64_t split_stages(int64_t stages, int splits) { return (stages + splits - 1) / splits; }

// The tile widths the decode kernel is built with (N <= 8, N <= 16; for the warpgroup's math
// also wgmma's N), and the narrowest that covers N (the widest for wider N: several N tiles, each
// reading A). (The warpgroup's 32- and 64-wide tiles ran 0.90-0.96x and 0.76-0.83x the main
// kernel at N = 32 and 64 on the H100, 2026-11-27, docs/benchmarks.md "fp8 decode on the
// warpgroup": not built.)
inline constexpr int kTileWidths[] = {8, 16};
constexpr int tile_width(int64_t n) {
  for (int w : kTileWidths)
    if (n <= w) return w;
  return kTileWidths[std::size(kTileWidths) - 1];
}

}  // namespace spmma::sm90::decode
