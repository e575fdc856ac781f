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
#include "ptx/wgmma.cuh"
#include "sm90/scheduler.cuh"
#include "sm90/tiles.hpp"

namespace spmma::sm90 {

// The CTA's dynamic shared memory: kStages stages of {A, B, metadata}, then the barriers. The
// epilogue reuses the stages once the main loop is done.
template <int BlockN>
struct Smem {
  static constexpr int kStages = stages_for(BlockN);
  static constexpr int kStageBytes = stage_bytes(BlockN);
  static constexpr int kBytes = kStages * kStageBytes + kSmemSlack;
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

  // full: the producer's expect_tx arrival (+ the copies' bytes); empty: one arrival per math warp
  // of each CTA of the cluster (a stage's B arrives in all of them at once, so all must be done
  // with the slot before either producer refills it).
  __device__ __forceinline__ void init_barriers(int cluster) const {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(full(s), 1);
      ptx::mbar_init(empty(s), kConsumers * 4 * cluster);
    }
    ptx::mbar_fence_init();
  }
};

// ---------------------------------------------------------------- producer (one thread)
// Per stage: A (kBlockM rows x 64 B, 64-byte swizzle), B (BlockN columns x 128 B, 128-byte
// swizzle) and the stage's metadata group of the CTA's eight 16-row blocks, all completing on
// the stage's `full` barrier. In a cluster of 2 (the same N tile), each CTA loads half of B's
// columns and multicasts them to both: B's traffic from L2 per CTA halves, and each CTA's barrier
// still counts the whole stage.
template <int BlockN>
__device__ __forceinline__ void produce(const Smem<BlockN>& sm, const CUtensorMap& tm_a, const CUtensorMap& tm_b,
                                        const CUtensorMap& tm_meta, const WorkTile& w, const gemm::Params& p) {
  const int a_z = p.batch_a_bytes ? w.batch : 0;
  const Box meta = box_meta(p.meta_lanes);
  const uint32_t tx_bytes = box_a().size() + box_b(BlockN).size() + meta.size();
  const int cl = p.cluster_m, rank = static_cast<int>(blockIdx.x) % cl;
  const Box b_part = box_b(BlockN / cl);  // this CTA's share of B (the tensor map's box)
  auto st = gemm::PipelineState<Smem<BlockN>::kStages>::producer_start();
  for (int i = 0; i < w.stages; ++i, st.advance()) {
    const int s = w.stage_begin + i;
    ptx::mbar_wait(sm.empty(st.index), st.phase);
    ptx::mbar_arrive_expect_tx(sm.full(st.index), tx_bytes);
    ptx::tma_load_3d(sm.a(st.index), &tm_a, sm.full(st.index), s * box_a().bytes, w.m0, a_z);
    if (cl == 1)
      ptx::tma_load_3d(sm.b(st.index), &tm_b, sm.full(st.index), s * b_part.bytes, w.n0, w.batch);
    else
      ptx::tma_load_3d_multicast(sm.b(st.index) + rank * b_part.size(), &tm_b, sm.full(st.index), s * b_part.bytes,
                                 w.n0 + rank * b_part.rows, w.batch, (1u << cl) - 1);
    ptx::tma_load_3d(sm.meta(st.index), &tm_meta, sm.full(st.index), s * meta.bytes, w.m0 / 16, a_z);
  }
}

// ---------------------------------------------------------------- consumer (a math warpgroup)

// fp8 promotion: the stage's sums, made by the tensor cores with fewer bits than f32, added to
// the running sums in f32 on the CUDA cores (every stage: every 2 instructions, 64 products per
// output; every 2 stages measured no faster on the H100, docs/benchmarks.md).
template <class Acc, int N>
__device__ __forceinline__ void promote(Acc (&acc)[N], Acc (&part)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    ptx::fence_operand(part[j]);
    acc[j] += part[j];
  }
}

// Math warpgroup c (rows 64c .. 64c + 63 of the CTA tile) over the CTA's K range: acc = A·B.
template <class Form, int BlockN, bool Promote>
__device__ __forceinline__ void consume(typename Form::Acc (&acc)[BlockN / 2], const Smem<BlockN>& sm, const WorkTile& w,
                                        const gemm::Params& p, int c) {
  using Acc = typename Form::Acc;
  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;
  Acc part[Promote ? BlockN / 2 : 1];
  // This thread's metadata words inside a 16-row block's group: selector 0 names the lanes t < L
  // of each quad (the others pass a copy, which the hardware ignores).
  const int P = p.meta_lanes, g = lane / 4, t = lane % 4, L = P / 8;
  const uint32_t meta_off = (4 * c + warp) * box_meta(P).bytes + (g * L + min(t, L - 1)) * gemm::kMetaGroup * 4;
  // The other CTA's empty barriers (a cluster of 2): its B slot is refilled with ours.
  uint64_t* const peer_empty = p.cluster_m > 1 ? ptx::in_cta(sm.empty(0), ptx::cluster_rank() ^ 1) : nullptr;
  auto st = gemm::PipelineState<Smem<BlockN>::kStages>::consumer_start();
  for (int i = 0; i < w.stages; ++i, st.advance()) {
    // The stage's addresses before the wait: the metadata load follows it at once.
    const uint2* meta = reinterpret_cast<const uint2*>(sm.ptr(sm.meta(st.index) + meta_off));  // K steps 0, 1
    const uint64_t da = ptx::smem_desc<kARowBytes>(sm.a(st.index) + c * 64 * kARowBytes);
    const uint64_t db = ptx::smem_desc<kBRowBytes>(sm.b(st.index));
    ptx::mbar_wait(sm.full(st.index), st.phase);
    const uint2 e = *meta;
    ptx::fence_operands(acc);
    ptx::wgmma_fence();
    if constexpr (Promote) {  // the stage's sums start afresh in `part`
      Form::template mma<BlockN>(part, da, db, e.x, false);
      Form::template mma<BlockN>(part, da + kABytesPerStep / 16, db + kBBytesPerStep / 16, e.y, true);
    } else {
      Form::template mma<BlockN>(acc, da, db, e.x, true);
      Form::template mma<BlockN>(acc, da + kABytesPerStep / 16, db + kBBytesPerStep / 16, e.y, true);
    }
    ptx::wgmma_commit();
    // Wait for this stage's wgmmas before the next: wgmma reads its metadata register when it
    // executes, and the next stage's load would overwrite it (measured: keeping a stage in
    // flight across the loop gives wrong results). The other math warpgroup keeps the tensor
    // cores busy meanwhile.
    ptx::wgmma_wait<0>();
    ptx::fence_operands(acc);
    if (lane == 0) {
      ptx::mbar_arrive(sm.empty(st.index));
      if (peer_empty) ptx::mbar_arrive_cluster(peer_empty + st.index);
    }
    if constexpr (Promote) promote(acc, part);
  }
}

}  // namespace spmma::sm90
