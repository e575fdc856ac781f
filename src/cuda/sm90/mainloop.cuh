// SPDX-License-Identifier: BSD-3-Clause
// The sm90 kernel's main loop: the shared-memory stages, the producer (TMA loads) and the
// consumer (wgmma.sp), synchronised by a full and an empty mbarrier per stage.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "common/gemm_params.cuh"
#include "common/pipeline.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/warpgroup.cuh"
#include "ptx/wgmma.cuh"
#include "sm90/scheduler.cuh"
#include "sm90/tiles.hpp"

namespace spmma::sm90 {

// The CTA's dynamic shared memory: kStages stages of {A, B, metadata}, the barriers, then the
// epilogue's scratch.
template <int BlockN>
struct Smem {
  static constexpr int kStages = stages_for(BlockN);
  static constexpr int kStageBytes = stage_bytes(BlockN);
  static constexpr int kBytes = kStages * kStageBytes + kSmemSlack + kEpilogueBytes;
  static_assert(kStageBytes % 1024 == 0, "stages keep 1024-byte alignment for the swizzle atoms");
  static_assert(kStages >= 3, "a pipeline");

  uint32_t addr;  // its shared-space address, 1024-byte aligned (the swizzle atoms'); dynamic
                  // shared memory only promises 16
  uint8_t* base;  // the same as a pointer

  __device__ __forceinline__ explicit Smem(uint8_t* raw)
      : addr((gemm::smem_u32(raw) + 1023) & ~1023u), base(raw + (addr - gemm::smem_u32(raw))) {}
  // Shared-space addresses of a stage's A, B and metadata (what descriptors and TMA take).
  __device__ __forceinline__ uint32_t a(int slot) const { return addr + slot * kStageBytes; }
  __device__ __forceinline__ uint32_t b(int slot) const { return a(slot) + box_a().size(); }
  __device__ __forceinline__ uint32_t meta(int slot) const { return b(slot) + box_b(BlockN).size(); }
  __device__ __forceinline__ const uint8_t* ptr(uint32_t a) const { return base + (a - addr); }
  __device__ __forceinline__ uint64_t* full(int slot) const {
    return reinterpret_cast<uint64_t*>(base + kStages * kStageBytes) + slot;
  }
  __device__ __forceinline__ uint64_t* empty(int slot) const { return full(kStages + slot); }
  // Split K (tiles.hpp): part 0's barrier for the other parts' sums, and where each CTA puts its
  // sums for part 0 to read: the stages, free once the tile's main loop is done (one tile per
  // cluster with split K). Math thread i's accumulator j at word (j / 4)·1024 + 4i + j % 4: a
  // warp reads 512 contiguous bytes per 16-byte load.
  __device__ __forceinline__ uint64_t* sums_full() const { return full(2 * kStages); }
  __device__ __forceinline__ uint4* sums() const { return reinterpret_cast<uint4*>(base); }
  static_assert(kStages * kStageBytes >= kBlockM * BlockN * 4, "the stages hold the tile's sums");
  // Math warp `warp` (0 .. 4·kConsumers - 1)'s block of the epilogue's scratch.
  __device__ __forceinline__ uint32_t* scratch(int warp) const {
    return reinterpret_cast<uint32_t*>(base + kStages * kStageBytes + 1024) + warp * kEpilogueChunk * kEpilogueLd;
  }

  // full: the producer's expect_tx arrival (+ the copies' bytes); empty: one arrival per math warp
  // of each CTA sharing the stage's B (it arrives in all of them at once, so all must be done
  // with the slot before either producer refills it).
  // sums_full: one arrival per math warp of each other part's CTA.
  __device__ __forceinline__ void init_barriers(int cluster, int splits) const {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(full(s), 1);
      ptx::mbar_init(empty(s), kConsumers * 4 * cluster);
    }
    if (splits > 1) ptx::mbar_init(sums_full(), kConsumers * 4 * (splits - 1));
    ptx::mbar_fence_init();
  }
};

// ---------------------------------------------------------------- producer (one warp)
// Per stage: A (kBlockM rows x 64 B, 64-byte swizzle), B (BlockN columns x 128 B, 128-byte
// swizzle) and the stage's metadata group of the CTA's eight 16-row blocks, all completing on
// the stage's `full` barrier. In a cluster of 2 (the same N tile), each CTA loads half of B's
// columns and multicasts them to both: B's traffic from L2 per CTA halves, and each CTA's barrier
// still counts the whole stage. The pipeline state runs on across tiles: the next tile's first
// stages load while the math warpgroups finish the last tile and store it.
template <int BlockN, class State>
__device__ __forceinline__ void produce(const Smem<BlockN>& sm, const CUtensorMap& tm_a, const CUtensorMap& tm_b,
                                        const CUtensorMap& tm_b_tail, const CUtensorMap& tm_meta, const WorkTile& w,
                                        const gemm::Params& p, State& st) {
  const int a_z = p.batch_a_bytes ? w.batch : 0;
  const Box meta = box_meta(p.meta_lanes);
  // This CTA shares B with the cl CTAs of its part of K (cluster_rank_of, scheduler.cuh).
  const int cl = p.cluster_m, rank = w.m_rank;
  const uint16_t peers = static_cast<uint16_t>(((1u << cl) - 1) << cluster_rank_of(cl, 0, w.split));
  // This CTA's share of B: the tensor map's box, the tail map's on B's last N tile (tiles.hpp).
  const Box b_part = box_b(b_box_rows(BlockN, cl, p.n, w.n0));
  const CUtensorMap* mb = b_tail(BlockN, cl, p.n, w.n0) ? &tm_b_tail : &tm_b;
  const uint32_t tx_bytes = box_a().size() + cl * b_part.size() + meta.size();
  for (int i = 0; i < w.stages; ++i, st.advance()) {
    const int s = w.stage_begin + i;
    ptx::mbar_wait(sm.empty(st.index), st.phase);
    if (!ptx::elect_one()) continue;  // the whole warp waits and walks; one lane arrives and copies
    ptx::mbar_arrive_expect_tx(sm.full(st.index), tx_bytes);
    ptx::tma_load_3d(sm.a(st.index), &tm_a, sm.full(st.index), s * box_a().bytes, w.m0, a_z);
    if (cl == 1)
      ptx::tma_load_3d(sm.b(st.index), mb, sm.full(st.index), s * b_part.bytes, w.n0, w.batch);
    else
      ptx::tma_load_3d_multicast(sm.b(st.index) + rank * b_part.size(), mb, sm.full(st.index), s * b_part.bytes,
                                 w.n0 + rank * b_part.rows, w.batch, peers);
    ptx::tma_load_3d(sm.meta(st.index), &tm_meta, sm.full(st.index), s * meta.bytes, w.m0 / 16, a_z);
  }
}

// ---------------------------------------------------------------- consumer (a math warpgroup)

// What a math warpgroup reads of a stage: its two K steps' descriptors and metadata words.
// This thread's metadata words inside a 16-row block's group: selector 0 names the lanes t < L
// of each quad (the others pass a copy, which the hardware ignores).
template <int BlockN>
struct ConsumerView {
  const Smem<BlockN>& sm;
  uint32_t meta_off;
  int c;
  uint64_t* peer_empty;  // the other CTA's empty barriers (a cluster of 2): its B slot is refilled with ours
  int lane;
  int promote_stages;  // fp8 promotion: stages whose sums the tensor cores make before each f32 add

  __device__ __forceinline__ ConsumerView(const Smem<BlockN>& s, const gemm::Params& p, int c_) : sm(s), c(c_) {
    lane = threadIdx.x % 32;
    const int warp = (threadIdx.x / 32) % 4, P = p.meta_lanes, g = lane / 4, t = lane % 4, L = P / 8;
    meta_off = (4 * c + warp) * box_meta(P).bytes + (g * L + min(t, L - 1)) * gemm::kMetaGroup * 4;
    peer_empty = p.cluster_m > 1 ? ptx::in_cta(sm.empty(0), ptx::cluster_rank() ^ 1) : nullptr;
    promote_stages = p.promote_stages;
  }
  __device__ __forceinline__ uint64_t da(int slot) const {
    return ptx::smem_desc<kARowBytes>(sm.a(slot) + c * 64 * kARowBytes);
  }
  __device__ __forceinline__ uint64_t db(int slot) const { return ptx::smem_desc<kBRowBytes>(sm.b(slot)); }
  // Waits for the stage and reads its metadata (K steps 0, 1).
  __device__ __forceinline__ uint2 acquire(int slot, uint32_t phase) const {
    const uint2* meta = reinterpret_cast<const uint2*>(sm.ptr(sm.meta(slot) + meta_off));
    ptx::mbar_wait(sm.full(slot), phase);
    return *meta;
  }
  // The warpgroup is done with the slot: one arrival per warp (lane 0's, predicated: as a branch
  // it cost a convergence region per stage, ptx/mbarrier.cuh), on both CTAs of a cluster.
  __device__ __forceinline__ void release(int slot) const {
    ptx::mbar_arrive_if(lane == 0, sm.empty(slot));
    if (peer_empty) ptx::mbar_arrive_cluster_if(lane == 0, peer_empty + slot);
  }
};

// A window of W stages with the tensor cores' own sums (no promotion): the W stages' metadata
// read first, then their 2W wgmmas issued back to back as W groups, then each slot released as
// its group retires. Every metadata register of the window is written before its first wgmma:
// ptxas serialises all wgmmas (C7513) where a non-wgmma instruction writes any wgmma input
// register while a group is pending, and the hardware reads the metadata register when the
// wgmma executes, not when it issues (docs/layouts.md). Only the window's end waits for all.
template <class Form, int BlockN, int W, class State>
__device__ __forceinline__ void window(typename Form::Acc (&acc)[BlockN / 2], const ConsumerView<BlockN>& v,
                                       State& st) {
  uint2 e[W];
  State s = st;
#pragma unroll
  for (int j = 0; j < W; ++j, s.advance()) e[j] = v.acquire(s.index, s.phase);
  ptx::fence_operands(acc);
  ptx::wgmma_fence();
  s = st;
#pragma unroll
  for (int j = 0; j < W; ++j, s.advance()) {
    const uint64_t da = v.da(s.index), db = v.db(s.index);
    Form::template mma<BlockN>(acc, da, db, e[j].x, true);
    Form::template mma<BlockN>(acc, da + kABytesPerStep / 16, db + kBBytesPerStep / 16, e[j].y, true);
    ptx::wgmma_commit();
  }
  // The first slot as soon as its group retires (the producer refills it meanwhile), the rest at
  // the window's end.
  ptx::wgmma_wait<W - 1>();
  v.release(st.index);
  st.advance();
  if constexpr (W > 1) {
    ptx::wgmma_wait<0>();
#pragma unroll
    for (int j = 1; j < W; ++j, st.advance()) v.release(st.index);
  }
  ptx::fence_operands(acc);
}

// fp8 promotion: the sums of W stages' 2W instructions (64 products per output each stage),
// made by the tensor cores with fewer bits than f32, added to the running sums in f32 on the CUDA
// cores. W is the plan's (PlanOptions::promotion_k: K = 128 per stage of 2:4 A). A part of PartN
// columns: the whole tile up to 192 columns; the 256-column tile promotes its two 128-column
// halves one after the other, so that the second set of sums is half the first (128 + 64
// registers per thread, where two whole sets, 256, would not fit a math thread's 232). As in
// `window`, every metadata register of the W stages is written before the first wgmma (C7513).
template <class Form, int BlockN, int W, class State>
__device__ __forceinline__ void promoted(typename Form::Acc (&acc)[BlockN / 2], const ConsumerView<BlockN>& v,
                                         State& st) {
  using Acc = typename Form::Acc;
  constexpr int PartN = BlockN > 192 ? BlockN / 2 : BlockN, kParts = BlockN / PartN;
  Acc part[PartN / 2];
  uint2 e[W];
  int slot[W];
#pragma unroll
  for (int j = 0; j < W; ++j, st.advance()) slot[j] = st.index, e[j] = v.acquire(st.index, st.phase);
#pragma unroll
  for (int h = 0; h < kParts; ++h) {
    ptx::wgmma_fence();
#pragma unroll
    for (int j = 0; j < W; ++j) {
      // Columns h·PartN .. : B's rows (one per column) are kBRowBytes apart inside the stage.
      const uint64_t da = v.da(slot[j]), dbh = v.db(slot[j]) + h * PartN * kBRowBytes / 16;
      Form::template mma<PartN>(part, da, dbh, e[j].x, j > 0);
      Form::template mma<PartN>(part, da + kABytesPerStep / 16, dbh + kBBytesPerStep / 16, e[j].y, true);
      ptx::wgmma_commit();
    }
    if (h == kParts - 1) {
      // The last part's reads of each slot retire group by group: the first slot is refilled
      // while the others' wgmmas run.
      ptx::wgmma_wait<W - 1>();
      v.release(slot[0]);
      if constexpr (W > 1) {
        ptx::wgmma_wait<0>();
#pragma unroll
        for (int j = 1; j < W; ++j) v.release(slot[j]);
      }
    } else {
      ptx::wgmma_wait<0>();
    }
#pragma unroll
    for (int j = 0; j < PartN / 2; ++j) {
      ptx::fence_operand(part[j]);
      acc[h * PartN / 2 + j] += part[j];
    }
  }
}

// Math warpgroup c (rows 64c .. 64c + 63 of the CTA tile) over the tile's K range: acc = A·B.
template <class Form, int BlockN, bool Promote, class State>
__device__ __forceinline__ void consume(typename Form::Acc (&acc)[BlockN / 2], const ConsumerView<BlockN>& v,
                                        const WorkTile& w, State& st) {
#pragma unroll
  for (int i = 0; i < BlockN / 2; ++i) acc[i] = 0;
  if constexpr (Promote) {
    int i = 0;
    if (v.promote_stages == 2)
      for (; i + 2 <= w.stages; i += 2) promoted<Form, BlockN, 2>(acc, v, st);
    for (; i < w.stages; ++i) promoted<Form, BlockN, 1>(acc, v, st);
  } else {
    int i = 0;
    for (; i + kWindow <= w.stages; i += kWindow) window<Form, BlockN, kWindow>(acc, v, st);
    for (; i < w.stages; ++i) window<Form, BlockN, 1>(acc, v, st);
  }
}

}  // namespace spmma::sm90
