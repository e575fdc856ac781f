// SPDX-License-Identifier: BSD-3-Clause
// The sm90 kernel's heuristics (heuristics.hpp). Every number here was measured on the H100,
// except where a comment names the H200 (132 SMs as well); docs/benchmarks.md has the runs.
#include "sm90/heuristics.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <tuple>

#include "sm90/decode_launch.hpp"
#include "sm90/launch_sm90.hpp"
#include "spmma/detail/gemm_pairs.hpp"
#include "spmma/error.hpp"

namespace spmma::sm90 {
namespace {

// Rasterization: CTAs walk 32 M tiles before the next N tiles. H100, bf16, median of 10: 32 was
// at least as fast as 4, 8, 16 and 64 at 8192³, 16384³ and 28672x8192x8192 (8192³: 1008 vs 926
// TFLOP/s for 16).
constexpr int kGroupM = 32;
// Split K where the tiles leave most SMs idle (fewer CTAs than half the SMs), its parts the CTAs
// of a cluster (split_k.cuh): at least 8 stages (of 2 K steps) per part, at most a cluster's CTAs
// (kMaxClusterCtas), and as many parts as keep every cluster resident at once: clusters of 2 fill
// all SMs (ncu: 66 active clusters of 2 on the H100's 132), larger ones do not (GPCs of 16-18
// SMs), so parts beyond 2 only while the CTAs fill 3/4 of the SMs. Measured on the H100 (cold L2,
// 2026-11-23, docs/benchmarks.md "Split K in one launch"), 32 tiles (4096 x N x K, N <= 64): 3
// parts (96 CTAs) 0.99-1.20x the speed of 2 (1.15-1.20x at bf16 K = 14336); 4 parts (128 CTAs
// in clusters of 4, which did not all fit) 0.70-0.86x of 2, 8 parts 0.47-0.82x. At 64 tiles
// (N = 128), 3 parts (192 CTAs) 0.66-0.72x of 2.
constexpr int kMinStagesPerSplit = 8;
// The narrowest tile width, taken where the tiles are few (choose()).
constexpr int kNarrowest = 64;
// ... except past N = 128 with a long K, where the 128-wide tile in 2 parts of K fills at least
// 3/4 of the SMs (and at most all): it reads A twice where the 64-wide reads it 4 times (N = 256).
// Measured on the H100 (2026-11-27 12:48-12:49 UTC, cold L2, pinned against the plan's choice of
// then, 64-wide unsplit; docs/benchmarks.md "The decode kernel past N = 16; ..." item 7):
// 4096 x 256 x K at K = 8192-14336 1.04-1.17x (bf16, e4m3, s8), 4096 x 192 x 14336 1.06-1.09x
// (bf16, e4m3; s8 0.99x); at K = 4096 0.91-0.99x, and 2048 x 256 x 14336 (64 CTAs) 0.83-0.92x.
// Likewise at N = 65-128 with at least 96 stages, where the 128-wide tile in 3 parts fills 2/3 to
// 3/4 of the SMs: it reads A once where the 64-wide in 2 parts reads it twice. Measured on the
// H200 (132 SMs, 2026-11-29 02:15 and 02:21 UTC, cold L2, 2 rounds, against the 64-wide tile in
// 2 parts in one binary; docs/benchmarks.md "The 128-wide tile at N = 65-128 on a long K"):
// 4096 x {96, 128} x 14336 (224 bf16 stages, 112 8-bit) bf16 1.02-1.21x, e4m3 1.05-1.07x, s8
// 1.05-1.07x; 4096 x {112, 128} x 8192 bf16 (128 stages) 1.05-1.06x, e4m3 and s8 (64 stages)
// 0.91-0.95x; 4096 x 128 x 4096 0.81-0.94x.
constexpr int kWideSplitWidth = 128, kWideSplitMinK = 8192, kWideSplit128Parts = 3, kWideSplit128MinStages = 96;
// Promoted fp8 sums: the stages (K = 128 each, 64 products of the 2:4 A per output) the tensor
// cores sum before each f32 add (mainloop.cuh, `promoted`; PlanOptions::promotion_k pins 1 or 2).
// Two: 128 products per add, the interval of dense fp8 GEMMs that promote (4 wgmmas of K = 32),
// half the adds and waits of one. Measured on the H100 (2026-11-28 06:07 and 06:17 UTC, e4m3,
// hot L2, both pinned in one binary; docs/benchmarks.md "fp8 promotion every 256 of K"):
// 1.07-1.12x on issue 10's 11 shapes (geomean 1.092), 1.00-1.06x on cold N = 32-256 rows
// (geomean 1.026). The bound on the sums doubles, 2^-7 to 2^-6 of the products' magnitudes;
// measured at e4m3 256 x 256 x 8192, relative L2 error 9.5e-5 against 5.7e-5 (docs/api.md,
// "fp8 accuracy").
constexpr int kPromoteStages = 2;

constexpr int kClusterMinMTiles = 4;

int64_t stages_for(const MatmulDesc& d, int inst_k) { return (d.k / inst_k + 1) / 2; }  // 2 K steps each

// Stages per split for `want` splits: whole pairs of stages (the kernel's split boundaries).
int64_t per_split(int64_t stages, int64_t want) { return ((stages + want - 1) / want + 1) / 2 * 2; }

// The decode kernel (decode.cuh) for N up to its widest tile (16), where it was measured faster
// than this kernel on the H100 (2026-11-27, cold L2, column-major D, both pinned in one binary,
// docs/benchmarks.md, "The decode kernel"), its 32-row tiles giving at least half the SMs a CTA:
//   bf16 and s8, N = 1, 8, 16 on the decode sweep's weights (4096 x 4096, 14336 x 4096, 4096 x
//   14336, 28672 x 8192, 11008 x 4096): 1.01-1.39x alone, except bf16 4096 x 16 x 14336 (0.95x:
//   a CTA alone on its SM over a long K runs at the rate its copies issue) - hence K <= 8192
//   at N > 8 for the 16-bit types unless the decode CTAs have two issuers per operand (split K in
//   2 parts, the second CTA's issuers, gave bf16 1.05x there; s8 unsplit 1.07x, 2026-11-27
//   09:19; two issuers unsplit 1.01-1.02x that split, 2026-12-07);
//   fp8 (sm_90 has no fp8 mma.sp: each instruction runs as two f16 ones on operands converted in
//   the threads' registers, decode.cuh; 2026-11-27 08:59, 2 rounds): at N = 1 and 8 1.00-1.25x
//   on all five weights (1.0x at 14336 x 8 x 4096); at N = 16 only on the weight of one tile per
//   SM, 4096 x 16 x 4096 (1.05x), 0.85-0.97x on the others (B's conversion, per 8 columns).
//   With B converted once per stage (79bce1d) and the high halves in place (53f07af), at N = 16
//   (2026-11-27 16:07, 3 rounds): 4096 x 16 x 4096 1.15x, 11008 x 16 x 4096 1.09x (86 tiles of
//   this kernel), 4096 x 16 x 14336 1.00x, 28672 x 16 x 8192 0.98x, 14336 x 16 x 4096 0.96x (112
//   tiles) - hence N <= 8, or K <= 4096 on at most 2/3 of the SMs' worth of this kernel's tiles;
//   on the warpgroup's math (decode_math below: weights of at least one 64-row tile per SM), at
//   N = 16 against this kernel, both pinned (2026-11-27 17:58 and 18:05 UTC, 2 rounds each):
//   14336 x 16 x 4096 1.02-1.03x, 28672 x 16 x 8192 1.04-1.09x, 11008 x 16 x 4096 1.05x - hence
//   N <= 16 there on any K.
// These were measured against a main kernel whose B box ran past N. With the box cut to N
// (tiles.hpp, b_box_rows), the H200 (2026-11-29 18:51 UTC, cold L2, 2 rounds; docs/benchmarks.md
// "B's box cut to N") ran the main kernel 0.87-1.05x the decode kernel on the rows these rules
// give the decode kernel (N = 8-64 on the five decode weights; geomeans bf16 0.96, e4m3 0.97, s8
// 0.93, tf32 0.96): the rules stand.
constexpr int kDecodeMaxN = 16, kDecodeMaxKWide = 8192, kFp8DecodeMaxN = 8, kFp8DecodeMaxK = 4096;
// Past its widest tile, in N tiles of 16 that each stream all of A's tile (fp8 on the warpgroup's
// 64-row tiles, decode_math): where the main kernel's 128-row tiles reach at most half the SMs
// (8448 rows with one batch entry), N <= 32, or N <= 64 for the 8-bit types where those tiles
// reach at most a quarter of the SMs and K <= 8192; the decode CTAs (32-row tiles x N tiles) at
// least half the SMs and at most one wave of kMaxCtasPerSm per SM; K <= 8192 (tf32: 4096), or
// longer where those CTAs fill every SM. Measured on the H100 (2026-12-07 17:39-17:40 UTC, cold
// L2, column-major D, the decode kernel pinned against the plan of 2a0d88c in one binary, 2
// rounds; docs/benchmarks.md "The decode kernel past N = 16 for every type"), decode / main:
//   bf16 and f16 N = 24-32: 2048 rows K = 8192 1.06-1.10x (14336: 0.93-0.97x, 128 CTAs), 4096
//   rows K = 8192-14336 1.10-1.16x, 8192 rows 1.03-1.05x (K = 8192-14336; K = 4096 there, taken
//   unmeasured as tf32 and e4m3 ran it, 1.06x and 1.12x: 1.11-1.12x, s8 1.19-1.20x, on the H100 of
//   2026-12-08 with this rule); 11008 and 14336 rows at K = 4096 0.78-0.89x (688-896 CTAs, past
//   one wave of 4 per SM);
//   s8 N = 24-32 at 2048-8192 rows, K = 8192-14336, 1.08-1.31x; N = 48-64 at 2048 rows 1.16-1.48x,
//   at 4096 rows 1.02-1.05x (K = 8192) and 0.89-0.91x (14336), at 8192 rows 0.66-0.83x;
//   tf32 N = 24-32: 2048 rows K = 4096 1.08-1.11x (14336: 0.85x), 4096 rows 1.06-1.17x, 8192 rows
//   1.06x (K = 4096) and 0.99x (14336); N = 48-64 past 2048 rows 0.63-0.86x;
//   e4m3 (the warpgroup's math) N = 24-64 at 2048-4096 rows, K = 4096-8192: 0.97-1.19x (4096 x
//   {32, 64} x 4096 1.15-1.17x: from 0.80-0.89x cuBLAS dense to 0.93-1.04x in two calls); K =
//   14336 on 2048 rows 0.83-0.96x; 8192 rows N = 24-48 1.04-1.12x, N = 64 0.92-1.00x; on the
//   warps' math (32-row tiles, converted) 0.38-1.07x, so past N = 16 fp8 takes the warpgroup's.
// The rule itself (72cf3f6) against 2a0d88c's plan (--kernel sm90), H100, 2026-12-08 00:43 UTC,
// same call, cold L2: the 43 rows it moved 1.01-1.49x faster (geometric mean 1.13), none slower.
// Hot, not yet measured in one call: e4m3 4096 x 32 x 14336 ran 0.82x the day before's main kernel
// in the decode sweep (docs/benchmarks.md, "Not measured: the rule with a hot L2").
// (Before, from the H100 of 2026-11-27 10:10 UTC: 4096 x 32 x 4096 bf16 1.13x, s8 1.21x, s8 4096 x
// 64 x 4096 1.14x; fp8 then had only the warps' math, 0.34-0.89x. One 32-wide tile, A read once,
// ran 73.0 TFLOP/s at bf16 4096 x 32 x 4096 against the two 16-wide tiles' 71.5, and slower than
// them on the larger weights, 12:28 UTC: not built.)
constexpr int kDecodeWideMaxN = 32, kDecodeWideMaxN8 = 64, kDecodeWideMaxK = 8192, kDecodeWideMaxKTf32 = 4096;
constexpr int kDecodeWideTilesPerSm = 2, kDecodeWide8TilesPerSm = 4;

// Shared memory an SM gives its CTAs (the H100's 228 KB, 1 KB of it reserved per CTA) and the
// decode kernel's depth: as many stages as fit the CTAs that share an SM, at most kMaxStages and
// no more than K has (fewer stages, more CTAs per SM), in whole rounds of its math warps.
constexpr int kSmemPerSm = 228 * 1024, kSmemPerCta = 227 * 1024, kReservedPerCta = 1024;
int decode_ctas_per_sm(int64_t ctas, int sm_count) {
  return static_cast<int>(std::clamp<int64_t>((ctas + sm_count - 1) / sm_count, 1, decode::kMaxCtasPerSm));
}
int decode_stages(int64_t ctas, int block_n, decode::Math m, int sm_count, int64_t k_stages, int issuers) {
  const int per_sm = decode_ctas_per_sm(ctas, sm_count);
  const int bytes = std::min(kSmemPerCta, kSmemPerSm / per_sm - kReservedPerCta);
  const int fit = (bytes - decode::smem_bytes(block_n, 0, m)) / decode::stage_bytes(block_n, m);
  const int s = static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(fit, k_stages), decode::kMinStages, decode::kMaxStages));
  return s - s % decode::depth_step(m, issuers);  // whole rounds of the math and producer warps (decode::valid_stages)
}

// The decode kernel's producer warps per operand (decode_tiles.hpp): decode::kMaxIssuers where it
// has at most decode::kMaxIssuerCtasPerSm CTAs per SM, else one. Measured on the H100
// (2026-12-07 12:00 UTC, 2 rounds, hot and cold L2, column-major D, both in one call, every row
// verified, a build with two per operand everywhere; docs/benchmarks.md "Two producer warps per
// operand in the decode kernel"): with 1 CTA per SM (4096-row weights, K whole) bf16, s8 and
// e4m3 at N = 1, 8, 16 and K = 4096, 14336 ran 1.07-1.51x hot and 1.00-1.17x cold (e4m3 at N = 16
// aside: that build bounded its registers to 48, see decode.cuh); with 2 (K in 2 parts, the plan
// of then) 0.99-1.16x hot and 0.99-1.01x cold; with 3 (11008 x 16 x 4096, 344 CTAs) 0.80-0.90x.
// This rule against the split plan before it (15:00 UTC, same calls, 3 rounds of the whole decode
// sweep, bf16, e4m3, s8; "Two producer warps per operand, the plan's choice"): bf16 4096 x {1,
// 8, 16, 32} x 4096 1.06-1.13x cold and 1.12-1.24x hot, s8 there 1.14-1.22x hot, tf32 1.03-1.08x;
// 210 rows geomean 1.014x; s8 4096 x 64 x 4096 (one issuer, the same configuration) 0.95x.
int decode_issuers(int64_t ctas, int sm_count) {
  return decode_ctas_per_sm(ctas, sm_count) <= decode::kMaxIssuerCtasPerSm ? decode::kMaxIssuers : 1;
}

// The decode kernel's split K (decode.cuh: the parts of a tile are the CTAs of a cluster) is a pin
// (PlanOptions::splits), no longer the plan's: its gain was the second CTA's producers on the SM,
// which two issuers per operand give one CTA without the parts' hand-over. On the H100
// (2026-12-07 12:00 UTC, the A/B above): unsplit with two issuers against the plan of then (2 parts,
// one issuer each) at bf16 4096 x {1, 8, 16} x 4096 1.15-1.16x hot and 1.07-1.10x cold, bf16,
// s8 and e4m3 4096 x {1, 16} x 14336 1.01-1.14x hot and 1.00-1.06x cold; 2 parts with two
// issuers each ran 0.99-1.03x of 2 parts with one on bf16 x 14336 and at N = 16, where unsplit
// ran 1.01-1.13x faster than them. What the plan took before, and why:
// - the H100 (2026-11-27 09:19 UTC, cold L2; "Split K and fp8 in the decode kernel"): 4096 x N x
//   14336 in 2 parts 1.05-1.10x (bf16), 0.98-1.00x (s8), 1.01-1.04x (e4m3); 4096 x N x 4096
//   0.91-0.99x; 4 parts 0.38-1.13x;
// - the H200 (2026-11-29; "The H200 at 8f27ec7", "Split K for the 8-bit types and tf32 in the
//   decode kernel"): 4096 x {1, 8, 16} x 4096 in 2 parts of 16 stages 1.11-1.23x hot, 1.02-1.17x
//   cold; s8 x 14336 1.12-1.27x; tf32 4096 x {1, 8, 16} x 4096 1.23-1.39x, x 14336 1.50-1.61x;
// - the H100 again (2026-12-07 11:06-11:13 UTC; "The fixed PDL test, split K on the H100's
//   4096-row weights"): bf16 and f16 4096 x {1, 8, 16} x 4096 in 2 parts 1.08-1.17x hot, 0.91-0.98x
//   cold: one CTA alone on its SM took the same time hot and cold, its copies' issue rate.
// Two issuers without the split were not measured on the H200; tf32 on the H100 ran 1.03-1.08x the
// split at 4096 x {1, 8, 16} x 4096 with them (2026-12-07 15:00 UTC, the A/B of decode_issuers).

// fp8's math in the decode kernel: the warpgroup's (wgmma.sp on 64-row tiles, no conversions) on
// weights of at least one such tile per SM, the warps' (two f16 mma.sp per instruction on 32-row
// tiles, twice the CTAs) below. Measured on the H100 (2026-11-27 17:58 and 18:05 UTC, cold L2,
// column-major D, 2 rounds each, e4m3, both unsplit; docs/benchmarks.md "fp8 decode on the
// warpgroup"): the warpgroup's 1.03-1.07x at 14336 x {1, 8, 16} x 4096 (224 tiles) and 28672 x
// {8, 16} x 8192 (448), 1.00-1.03x at 11008 x {8, 16} x 4096 (172), 1.00-1.02x at 4096 x {8, 16} x
// 14336 (64) and 0.96x at 4096 x {8, 16} x 4096 (64: half the SMs, each CTA's A boxes of 64 rows
// issued at ~5 cycles a row). In 2 parts of K (clusters) 0.89-1.00x of unsplit: not split. Past
// N = 16 (several N tiles) the warpgroup's on any weight: 1.09-2.19x the warps' at N = 32-128 on
// 4096-28672 rows (H100, 2026-12-07 17:39 UTC, both pinned; docs/benchmarks.md "The decode kernel
// past N = 16 for every type"), B's conversion per 8 columns then the warps' cost.
decode::Math decode_math(const MatmulDesc& d, int sm_count, int pinned_rows) {
  if (pinned_rows) {
    if (pinned_rows != decode::kBlockM && pinned_rows != decode::kWgBlockM)
      fail(Status::invalid_argument, "PlanOptions.tile_m = " + std::to_string(pinned_rows) +
                                         ": the decode kernel's tiles have 32 rows (mma.sp per warp) or 64 (fp8: "
                                         "wgmma.sp per warpgroup)");
    if (pinned_rows == decode::kWgBlockM && !decode::has_warpgroup_math(d.a_type))
      fail(Status::not_supported, "PlanOptions.tile_m = 64: the decode kernel's 64-row tiles are fp8's (wgmma.sp per "
                                  "warpgroup); A is " + std::string(type_name(d.a_type)) + ": 32");
    return decode::math_of(pinned_rows);
  }
  const bool wg = decode::has_warpgroup_math(d.a_type) &&
                  (d.n > kDecodeMaxN || gemm::padded_rows(d.m) / decode::kWgBlockM * d.batch >= sm_count);
  return wg ? decode::Math::warpgroup : decode::Math::warps;
}

Config choose_decode(const MatmulDesc& d, int inst_k, int sm_count, int pinned_splits, int pinned_rows, int pinned_issuers) {
  if (pinned_issuers > decode::kMaxIssuers)
    fail(Status::invalid_argument, "PlanOptions.issuers = " + std::to_string(pinned_issuers) + ": the decode kernel has 1 to " +
                                       std::to_string(decode::kMaxIssuers) + " producer warps per operand");
  Config c;
  c.decode = true;
  const decode::Math math = decode_math(d, sm_count, pinned_rows);
  c.block_n = decode::tile_width(d.n);
  c.block_m = decode::block_m(math);
  const int64_t m_pad = gemm::padded_rows(d.m);
  const int64_t k_stages = decode::k_stages(stages_for(d, inst_k));
  const int64_t tiles = decode::ctas(m_pad, d.n, c.block_n, math) * d.batch;
  int want = 1;
  if (pinned_splits) {
    if (pinned_splits > decode::kMaxSplits)
      fail(Status::not_supported, "PlanOptions.splits = " + std::to_string(pinned_splits) + ": the decode kernel splits K in at most " +
                                      std::to_string(decode::kMaxSplits) + " parts (the CTAs of a cluster)");
    want = pinned_splits;
  }
  const int64_t per = decode::split_stages(k_stages, want), got = (k_stages + per - 1) / per;
  if (pinned_splits && got != pinned_splits)
    fail(Status::not_supported, "PlanOptions.splits = " + std::to_string(pinned_splits) + ": K = " + std::to_string(d.k) +
                                    " is " + std::to_string(k_stages) + " stage(s) of the decode kernel (" +
                                    std::to_string(decode::kGroups * 2 * inst_k) + " of K each), and " +
                                    std::to_string(got) + " part(s) of " + std::to_string(per) + " would run");
  if (got > 1) c.splits = static_cast<int>(got), c.stages_per_split = static_cast<int>(per);
  c.issuers = pinned_issuers ? pinned_issuers : decode_issuers(tiles * c.splits, sm_count);
  c.stages = decode_stages(tiles * c.splits, c.block_n, math, sm_count, got > 1 ? per : k_stages, c.issuers);
  return c;
}

}  // namespace

Config choose(const MatmulDesc& d, bool promoted, int inst_k, int sm_count, const PlanOptions& pins) {
  const bool main_pinned = pins.tile_n || pins.splits || pins.group_m || pins.cluster_m || pins.grid != GridKind::automatic ||
                           pins.promotion_k;
  // The decode kernel's own choices against a pinned main kernel.
  for (const auto& [name, value, what] : {std::tuple{"tile_m", pins.tile_m, "rows"}, std::tuple{"issuers", pins.issuers, "producer warps"}})
    if (value && pins.kernel == KernelFamily::sm90)
      fail(Status::not_supported, std::string("PlanOptions.") + name + " = " + std::to_string(value) + " pins the decode kernel's " +
                                      what + "; PlanOptions.kernel = sm90 pins the main kernel");
  const int stage_k = kStepsPerStage * inst_k;  // fp8: 128
  if (pins.promotion_k && !promoted)
    fail(Status::not_supported, "PlanOptions.promotion_k = " + std::to_string(pins.promotion_k) + ": this plan's sums " +
                                    (detail::gemm_promotes(d.a_type)
                                         ? "stay in the tensor cores (MatmulDesc.fast_accumulation)"
                                         : "are not fp8's (" + std::string(type_name(d.a_type)) + ": nothing to promote)"));
  if (pins.promotion_k && pins.promotion_k != stage_k && pins.promotion_k != 2 * stage_k)
    fail(Status::invalid_argument, "PlanOptions.promotion_k = " + std::to_string(pins.promotion_k) +
                                       ": the sm90 kernel promotes fp8 sums every " + std::to_string(stage_k) + " or " +
                                       std::to_string(2 * stage_k) + " of K (one or two pipeline stages)");
  if (pins_decode(pins)) {
    if (pins.tile_n || pins.group_m || pins.cluster_m || pins.grid != GridKind::automatic || pins.promotion_k)
      fail(Status::not_supported, "PlanOptions: tile_n, group_m, cluster_m, grid and promotion_k pin the main sm90 "
                                  "kernel's choices; the decode kernel (PlanOptions.kernel = decode, tile_m or issuers) has tiles of "
                                  "32 rows (fp8 also 64) 8 or 16 wide, one CTA per tile or per part of K (splits)");
    Config c = choose_decode(d, inst_k, sm_count, pins.splits, pins.tile_m, pins.issuers);
    c.dependent_launch = pins.dependent_launch;
    return c;
  }
  const int64_t m_pad = gemm::padded_rows(d.m);
  // The weight in this kernel's tiles, and in the decode kernel's 32-row tiles (whatever its
  // math: fp8's warpgroup takes 64) and N tiles.
  const int64_t main_tiles = m_pad / kBlockM * d.batch;  // this kernel's rows (128) x batch
  const bool eight_bit = memory_bits(d.a_type) == 8;
  const int64_t wide_max_n = eight_bit && main_tiles * kDecodeWide8TilesPerSm <= sm_count && d.k <= kDecodeWideMaxK
                                 ? kDecodeWideMaxN8
                                 : kDecodeWideMaxN;
  if (pins.kernel == KernelFamily::automatic && !main_pinned && d.n <= wide_max_n) {
    const int64_t decode_ctas = decode::ctas(m_pad, d.n, decode::tile_width(d.n), decode::Math::warps) * d.batch;
    Config c = choose_decode(d, inst_k, sm_count, 0, 0, 0);
    const int64_t wide_max_k = d.a_type == ElemType::tf32 ? kDecodeWideMaxKTf32 : kDecodeWideMaxK;
    const bool wins = d.n > kDecodeMaxN ? main_tiles * kDecodeWideTilesPerSm <= sm_count &&
                                              decode_ctas <= int64_t{decode::kMaxCtasPerSm} * sm_count &&
                                              (d.k <= wide_max_k || decode_ctas >= sm_count)
                      : detail::gemm_promotes(d.a_type)
                          ? d.n <= kFp8DecodeMaxN || c.block_m == decode::kWgBlockM ||
                                (d.k <= kFp8DecodeMaxK && main_tiles * 3 <= sm_count * 2)
                          : d.n <= 8 || d.k <= kDecodeMaxKWide || eight_bit || c.issuers > 1;
    if (decode_ctas * 2 >= sm_count && wins) {
      c.dependent_launch = pins.dependent_launch;
      return c;
    }
  }
  Config c;
  c.block_m = kBlockM;
  // Tile width: the narrowest built width that covers N, else the widest (tiles.hpp).
  std::string built;
  int widest = 0;
  for (const TileWidth& t : kTileWidths)
    if (promoted ? t.promoted : t.plain) {
      built += (built.empty() ? "" : ", ") + std::to_string(t.n);
      widest = std::max(widest, t.n);
    }
  if (pins.tile_n) {
    const auto row = std::find_if(std::begin(kTileWidths), std::end(kTileWidths),
                                  [&](const TileWidth& t) { return t.n == pins.tile_n; });
    if (row == std::end(kTileWidths))
      fail(Status::invalid_argument, "PlanOptions.tile_n = " + std::to_string(pins.tile_n) +
                                         ": the sm90 kernel has tiles 64, 128, 192 and 256");
    if (!(promoted ? row->promoted : row->plain))
      fail(Status::not_supported, "PlanOptions.tile_n = " + std::to_string(pins.tile_n) + ": this plan's tiles are " +
                                      built + (promoted ? "" : " (192 is built for promoted fp8 sums only)"));
    c.block_n = pins.tile_n;
  } else {
    c.block_n = widest;
    for (const TileWidth& t : kTileWidths)
      if ((promoted ? t.promoted : t.plain) && t.n >= d.n && t.n < c.block_n) c.block_n = t.n;
  }
  // Few tiles (less than half the SMs): the narrowest tile instead, more CTAs across N. Measured
  // on the H100 (cold L2, 2026-11-23, docs/benchmarks.md "Split K in one launch"): 4096 x N x 4096
  // at N = 256 ran 1.81x (bf16) and 2.54x (e4m3) faster on 64-wide tiles than on the 256-wide
  // tile with 4 parts of K (0.90x at bf16 K = 14336 against 2 parts, 1.26x e4m3); at N = 128,
  // 64-wide with 2 parts 1.14-1.18x the 128-wide with 2.
  const int64_t stages = stages_for(d, inst_k);
  // Split K's bound on CTAs (the split below and the two tile rules here): `tiles` tiles in s
  // parts take at most every SM in 2 parts, 3/4 of them in more.
  const auto split_fits = [&](int64_t tiles, int64_t s) { return tiles * s <= (s <= 2 ? sm_count : sm_count * 3 / 4); };
  if (!pins.tile_n && ctas(m_pad, d.n, c.block_n) * d.batch * 2 <= sm_count) {
    const int64_t tiles_128 = ctas(m_pad, d.n, kWideSplitWidth) * d.batch;  // the 128-wide tile's tiles
    const bool wide_split = !pins.splits && d.n > kWideSplitWidth && d.k >= kWideSplitMinK && split_fits(tiles_128, 2) &&
                            tiles_128 * 2 * 4 >= int64_t{sm_count} * 3;
    // At N <= 128, in 3 parts: within the split's bound, 2/3 of the SMs or more.
    const bool keep_128 = !pins.splits && d.n > kNarrowest && d.n <= kWideSplitWidth &&
                          stages >= kWideSplit128MinStages && split_fits(tiles_128, kWideSplit128Parts) &&
                          tiles_128 * kWideSplit128Parts * 3 >= int64_t{sm_count} * 2;
    c.block_n = wide_split || keep_128 ? kWideSplitWidth : kNarrowest;
  }
  c.stages = stages_for(c.block_n);

  const int64_t tiles = ctas(m_pad, d.n, c.block_n) * d.batch;

  // Clusters of 2 along M share B's tile (TMA multicast): half of B's L2 -> SM traffic, the
  // larger share of a sparse GEMM's (B is dense, A compressed). Taken where the tiles fill the
  // GPU (at least one wave) and M has 4 or more tiles, so that an odd CTA past A's rows stays rare,
  // and N fills more than half the tile: each CTA loads and multicasts half of B's columns, and
  // with N <= block_n / 2 the second half lies wholly past N, nothing to share. Measured on the
  // H100 (cold L2, 2026-11-24, docs/benchmarks.md "Layer after layer"), 28672 x N x 8192 at N =
  // 1-32 (64-wide tiles): clusters of 2 ran 0.90-1.06x the speed of 1 alone (bf16 0.90-0.99) and
  // 0.85-1.00x layer after layer; at N = 64 and 128, 0.99-1.01x. Not for promoted fp8, whose math
  // warpgroups' adds set its pace: clusters of 1 ran 1.005-1.025x on 8 of 9 of issue 10's shapes
  // (H100, 2026-11-27 19:03 and 19:13 UTC, hot L2, 2 rounds; 8192^3 0.996x within its rounds' 3%;
  // docs/benchmarks.md "Clusters of 1 for promoted fp8").
  if (pins.cluster_m) {
    if (pins.cluster_m > kMaxCluster)
      fail(Status::invalid_argument, "PlanOptions.cluster_m = " + std::to_string(pins.cluster_m) +
                                         ": the sm90 kernel runs clusters of 1 or 2 CTAs");
    c.cluster_m = pins.cluster_m;
  } else {
    const int64_t m_tiles = (d.m + kBlockM - 1) / kBlockM;
    c.cluster_m = !promoted && m_tiles >= kClusterMinMTiles && tiles >= sm_count && 2 * d.n > c.block_n ? 2 : 1;
  }

  // Split K: its parts are CTAs of one cluster (tiles.hpp), cluster_m x splits of them at most 8.
  const int max_splits = kMaxClusterCtas / c.cluster_m;
  int64_t want = 1;
  if (pins.splits) {
    if (pins.splits > kMaxClusterCtas)
      fail(Status::invalid_argument, "PlanOptions.splits = " + std::to_string(pins.splits) + ": at most " +
                                         std::to_string(kMaxClusterCtas) + " (the parts of K are the CTAs of a cluster)");
    if (pins.splits > max_splits)
      fail(Status::not_supported, "PlanOptions.splits = " + std::to_string(pins.splits) + " with cluster_m = " +
                                      std::to_string(c.cluster_m) + ": a cluster holds cluster_m x splits CTAs, at most " +
                                      std::to_string(kMaxClusterCtas));
    want = pins.splits;
  } else if (tiles * 2 <= sm_count) {
    want = 1;
    for (int64_t s = 2; s <= std::min<int64_t>(stages / kMinStagesPerSplit, max_splits); ++s)
      if (split_fits(tiles, s)) want = s;
  }
  if (want >= 2 && stages >= 2) {
    const int64_t per = per_split(stages, want);
    const int64_t got = (stages + per - 1) / per;
    if (pins.splits && got != pins.splits)
      fail(Status::not_supported, "PlanOptions.splits = " + std::to_string(pins.splits) + ": K = " + std::to_string(d.k) +
                                      " has " + std::to_string(stages) +
                                      " pipeline stages, and splits take whole pairs of them: " + std::to_string(got) +
                                      " split" + (got == 1 ? "" : "s") + " would run");
    if (got >= 2) c.splits = static_cast<int>(got), c.stages_per_split = static_cast<int>(per);
  } else if (pins.splits > 1) {
    fail(Status::not_supported, "PlanOptions.splits = " + std::to_string(pins.splits) + ": K = " + std::to_string(d.k) +
                                    " has " + std::to_string(stages) + " pipeline stage(s), too few to split");
  }

  // The grid: persistent unless pinned (measured against one CTA per tile in docs/benchmarks.md),
  // and never with split K, whose parts hand their sums over in the pipeline's shared memory
  // after the tile's main loop (split_k.cuh): one cluster per tile.
  if (pins.grid == GridKind::persistent && c.splits > 1)
    fail(Status::not_supported, "PlanOptions.grid = persistent with split K in " + std::to_string(c.splits) +
                                    ": split K runs one cluster per tile (its parts hand their sums over in the "
                                    "pipeline's shared memory); pin grid = per_tile or splits = 1");
  c.persistent = pins.grid != GridKind::per_tile && c.splits == 1;

  if (pins.group_m && (pins.group_m < 1 || pins.group_m > 1024))
    fail(Status::invalid_argument, "PlanOptions.group_m = " + std::to_string(pins.group_m) + ": 1 .. 1024 M tiles");
  c.group_m = pins.group_m ? pins.group_m : kGroupM;
  c.promote_stages = promoted ? (pins.promotion_k ? pins.promotion_k / stage_k : kPromoteStages) : 1;
  c.dependent_launch = pins.dependent_launch;
  return c;
}

}  // namespace spmma::sm90
