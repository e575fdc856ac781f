// SPDX-License-Identifier: BSD-3-Clause
// The sm90 kernel's shape as data (plain C++: the kernel, its host launch, the heuristics and the
// code generator read it): CTA tile, stage layout, TMA boxes, the tile widths it is built with.
#pragma once
#include "common/device_layout.hpp"
#include "spmma/detail/hd.hpp"

namespace spmma::sm90 {

constexpr int kConsumers = 2;                 // math warpgroups, 64 rows each
constexpr int kBlockM = 64 * kConsumers;      // 128 rows of D per CTA
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kStepsPerStage = 2;             // wgmma K steps per pipeline stage
constexpr int kABytesPerStep = 32;            // packed A bytes per row per instruction
constexpr int kBBytesPerStep = 64;            // B bytes per column per instruction
constexpr int kARowBytes = kStepsPerStage * kABytesPerStep;  // 64: one 64-byte swizzle atom row
constexpr int kBRowBytes = kStepsPerStage * kBBytesPerStep;  // 128: one 128-byte swizzle atom row
constexpr int kSmemLimit = 227 * 1024;
constexpr int kSmemSlack = 2048;              // 1024-byte alignment of the swizzle atoms + the barriers
// The epilogue's scratch (epilogue.cuh): per math warp, a 16 x 16 block of 32-bit words in rows
// of 24 (8 pad words keep the fragment's 8-byte writes conflict-free and rows 16-byte aligned).
// 12 KB, beside the stages: they hold the next tile's loads by then.
constexpr int kEpilogueChunk = 16, kEpilogueLd = kEpilogueChunk + 8;
constexpr int kEpilogueBytes = kConsumers * 4 * kEpilogueChunk * kEpilogueLd * 4;
constexpr int kMaxStages = 8;
// Registers per thread after setmaxnreg, the producer warpgroup's and each math warpgroup's, from
// the launch's 168 x 384 (128·producer + 256·consumer = 64512). The Lean kernels (promoted fp8,
// 256 wide: 128 + 64 sums per math thread) take 240 and leave the producer the minimum, 24: at
// 232 their main loop had no register to spare, and any second way out of their epilogue made
// ptxas keep two of its sums in local memory (a load and a store per promotion). The producer fits
// 24 as a whole warp on warp-uniform values (spgemm_sm90.cuh); as one thread on 24 it spilled its
// stage loop's values, and the Lean kernels ran 0.93-0.97x. With both, and the plain epilogue
// inside D: e4m3 1.07-1.08x at K = 4096, 0.98-1.00x at long K (H200, 2026-11-28,
// docs/benchmarks.md, "The Lean kernels' epilogue").
struct RegSplit {
  int producer, consumer;
};
SPMMA_HD constexpr bool lean_kernel(int block_n, bool promoted) { return promoted && block_n == 256; }
SPMMA_HD constexpr RegSplit reg_split(int block_n, bool promoted) {
  return lean_kernel(block_n, promoted) ? RegSplit{24, 240} : RegSplit{40, 232};
}
// Whether the plain epilogue inside D writes row-major D in whole lines (epilogue.cuh,
// inside_lines): not in the promoted 192- and 256-wide kernels (96 + 96 and 128 + 64 sums per math
// thread), where ptxas then kept values in local memory (tests/sass); they write runs of 8.
SPMMA_HD constexpr bool whole_lines(int block_n, bool promoted) { return !(promoted && block_n >= 192); }
static_assert(128 * reg_split(256, true).producer + 256 * reg_split(256, true).consumer <= 168 * kThreads &&
                  128 * reg_split(256, false).producer + 256 * reg_split(256, false).consumer <= 168 * kThreads,
              "the split fits the launch's registers");
// Stages whose wgmmas a math warpgroup issues before it waits (the unpromoted main loop, a
// window: mainloop.cuh). 1: each stage's own. Measured on the H100 against 1 (2026-11-23,
// docs/benchmarks.md): 2 gave 0.96-0.99 at 8192^3, 4096^3, 14336x2048x4096 and 0.98-1.01 at
// N = 16-128; 4 gave 0.71-0.78 at the large shapes (it holds 4 of the 5 stages until the window
// retires). The other math warpgroup keeps the tensor cores busy while one waits.
constexpr int kWindow = 1;
constexpr int kMaxCluster = 2;                // CTAs per cluster along M: 1, or 2 sharing B by multicast
// Split K runs inside a cluster: its CTAs take the parts of one tile's K range and the first adds
// the others' sums from their shared memory (distributed shared memory), in the order of the
// parts, before its epilogue; no partial sums in global memory and no second kernel. A cluster
// is cluster_m x splits CTAs, at most the 8 that CUDA guarantees to place on any sm_90 GPU.
constexpr int kMaxClusterCtas = 8;
constexpr int kMaxMetaLanes = 32;             // P: lanes of a 16-row block's metadata group (8 per quad row)
static_assert(kStepsPerStage == gemm::kMetaGroup, "a stage holds one fragment-ready metadata group");
static_assert(kBlockM == gemm::kRowPad, "A's rows are padded to the CTA tile");

// A TMA box: `rows` rows of `bytes` bytes. The host encodes the tensor maps with these boxes and
// the kernel expects their sizes on the stage's barrier: one definition for both.
struct Box {
  int bytes, rows;
  SPMMA_HD constexpr int size() const { return bytes * rows; }
};
SPMMA_HD constexpr Box box_a() { return {kARowBytes, kBlockM}; }
SPMMA_HD constexpr Box box_b(int block_n) { return {kBRowBytes, block_n}; }
// Whether the N tile at n0 loads B through the tail map (BMaps): one CTA alone, and the tile cut
// short by N (the first tile too where B is narrower than the tile: both maps' boxes are then N
// rows). One comparison on the 32-bit sizes: the promoted fp8 192-wide kernels have no spare
// uniform register (the earlier choice, two b_box_rows results compared on 64-bit sizes, spilled
// two of them to local memory, tests/sass; which difference mattered was not separated).
SPMMA_HD constexpr bool b_tail(int block_n, int cluster, int n, int n0) { return cluster == 1 && n0 + block_n > n; }
// B's box rows for the N tile at n0: in a cluster, this CTA's share of the tile's columns; alone,
// the tile's columns up to N (the swizzle goes by shared-memory address, so the rows land where
// the tile's first rows would). The slot's rows past N keep what they held: they feed only D's
// columns past N, which the epilogue never stores. A box running past N (its rows filled with
// zeros by the copy engine) held the kernel back: cut to N, the H200 ran 14336 x {24, 32} x 4096
// 1.08-1.24x and 14336 x {96, 192} x 4096 1.10-1.41x as fast (2026-11-29, cold L2, bf16, e4m3,
// s8, tf32; docs/benchmarks.md "B's box cut to N"). A tensor map has one box: the first N tile's
// rows (b_box_rows(block_n, cluster, n)) in B's map, the last's in its tail map, which ran
// 8192 x 320 x 8192 1.63-1.65x and 4096 x {80, 96} x 4096 1.04-1.18x as fast (bf16, e4m3).
SPMMA_HD constexpr int b_box_rows(int block_n, int cluster, int n, int n0 = 0) {
  return b_tail(block_n, cluster, n, n0) ? n - n0 : block_n / cluster;
}
// The first column of B's last N tile.
SPMMA_HD constexpr int b_last_tile(int block_n, int n) { return (n - 1) / block_n * block_n; }
// The rule on cases the GPU tests run (Robust.NarrowBInAWideTileMatchesTheCpu): B narrower than
// the tile, a whole first tile and a cut last one, whole tiles, and clusters of 2 (halves, as before).
static_assert(b_box_rows(64, 1, 9) == 9 && b_tail(64, 1, 9, 0), "one tile, narrower than it: N rows");
static_assert(b_box_rows(64, 1, 73) == 64 && b_last_tile(64, 73) == 64 && b_box_rows(64, 1, 73, 64) == 9 &&
                  b_tail(64, 1, 73, 64) && !b_tail(64, 1, 73, 0),
              "N = width + 9: the first tile whole from B's map, the last's 9 rows from the tail map");
static_assert(!b_tail(128, 1, 256, b_last_tile(128, 256)) && b_box_rows(128, 1, 256, 128) == 128,
              "whole tiles: the one map");
static_assert(!b_tail(128, 2, 300, 256) && b_box_rows(128, 2, 300, 256) == 64, "clusters of 2: each CTA's half");
// One metadata group (kMetaGroup words per lane, P lanes) of each of a tile's 16-row blocks (this
// kernel's kBlockM rows, or another kernel's `rows`).
SPMMA_HD constexpr Box box_meta(int meta_lanes, int rows = kBlockM) {
  return {meta_lanes * gemm::kMetaGroup * 4, rows / 16};
}

// A stage's shared memory: A, B, then room for the largest metadata box.
SPMMA_HD constexpr int stage_bytes(int block_n) {
  return box_a().size() + box_b(block_n).size() + box_meta(kMaxMetaLanes).size();
}
// Pipeline depth at a tile width: as many stages as fit the shared memory beside the epilogue's
// scratch, at most kMaxStages (the scratch costs no stage at any width: 256 keeps 5).
SPMMA_HD constexpr int stages_for(int block_n) {
  return (kSmemLimit - kSmemSlack - kEpilogueBytes) / stage_bytes(block_n) > kMaxStages
             ? kMaxStages
             : (kSmemLimit - kSmemSlack - kEpilogueBytes) / stage_bytes(block_n);
}
static_assert(stages_for(256) == 5 && stages_for(192) == 6 && stages_for(128) == 8, "the scratch costs no stage");

// The CTA tile widths the kernel is built with, per accumulation: plain (the tensor cores' own
// f32/s32 sums) and promoted (fp8: a second accumulator set per thread, for the whole tile up to
// 192 columns, for half of it at 256, mainloop.cuh). 192 is not built plain: the heuristics take
// the widest tile above N = 128, and each built width is a kernel per type pair.
struct TileWidth {
  int n;
  bool plain, promoted;
};
inline constexpr TileWidth kTileWidths[] = {{64, true, true}, {128, true, true}, {192, false, true}, {256, true, true}};

}  // namespace spmma::sm90
