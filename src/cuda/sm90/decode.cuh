// SPDX-License-Identifier: BSD-3-Clause
// The sm90 decode kernel: D = epilogue(A·B) for small N (decode, small batches), where the time is
// the time to read A. Measured on the H100 (docs/benchmarks.md, "The weight stream alone" and
// "Where a small call's time goes"), the main kernel's boxes stream a weight at 1.4-2.9 TB/s with
// nothing else in the kernel, but its 128-row tiles leave 32 CTAs for a 4096-row weight (split
// K in clusters makes 96, at ~2000 cycles of hand-over), and each CTA pays ~5000 cycles of set-up
// (clusters, setmaxnreg, two math warpgroups) before and ~2000 after its stream. Here:
//   tile          32 rows x BlockN (8 or 16) columns, the whole K range: 4096 rows are 128 CTAs;
//                 several CTAs per SM, no clusters, no register reallocation;
//   producers     warps 0, 1, 2, one thread each: per stage of four instructions the TMA box of
//                 A (32 rows x 128 B of the main kernel's tensor layout), B's two (BlockN
//                 columns x 128 B), the metadata's two groups; a pipeline as deep as the plan
//                 gives it (the same bytes in flight per SM whatever the number of CTAs per SM);
//   math          warps 3 .. 6: two row groups of 16 rows, each stage taken by one warp of each
//                 (kParts warps per row group in turn), mma.sp m16n8 per 8 columns from shared
//                 memory (ldmatrix, the swizzles the copies wrote); the parts' sums added up in
//                 a fixed order at the end. sm_90 has no fp8 mma.sp: ptxas converts fp8 to f16
//                 for HMMA.SP with f32 sums (the SASS), so fp8 needs no promotion here and its
//                 sums keep more bits than the main kernel's;
//   epilogue      each element as the CPU's epilogue computes it (gemm::epilogue_store), all
//                 math threads over the tile (at most 32 x 16) from shared memory.
// Programmatic dependent launch as the main kernel: the producer waits for the kernel before the
// first copy, the math warps before the epilogue.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <type_traits>

#include "common/gemm_params.cuh"
#include "common/pipeline.cuh"
#include "gemm_forms_sm80.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/griddep.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/warpgroup.cuh"
#include "sm90/decode_tiles.hpp"

namespace spmma::sm90::decode {

// The CTA's dynamic shared memory for `stages` stages: all A boxes, all B boxes, all metadata
// boxes, then the barriers (full, empty per stage).
template <int BlockN>
struct Smem {
  // Per stage: A's box; B's and the metadata's kGroups boxes, one after the other.
  static constexpr int kBBox = box_b(BlockN).size(), kMetaBox = box_meta(kMaxMetaLanes).size();
  static constexpr int kABytes = box_a().size(), kBBytes = kGroups * kBBox, kMetaBytes = kGroups * kMetaBox;
  static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0, "each A and B box keeps the swizzle atoms' alignment");
  uint32_t addr;  // shared-space address, 1024-byte aligned
  uint8_t* base;
  int stages;

  __device__ __forceinline__ Smem(uint8_t* raw, int s)
      : addr((gemm::smem_u32(raw) + 1023) & ~1023u), base(raw + (addr - gemm::smem_u32(raw))), stages(s) {}
  __device__ __forceinline__ uint32_t a(int slot) const { return addr + slot * kABytes; }
  __device__ __forceinline__ uint32_t b(int slot) const { return addr + stages * kABytes + slot * kBBytes; }
  __device__ __forceinline__ uint32_t meta(int slot) const {
    return addr + stages * (kABytes + kBBytes) + slot * kMetaBytes;
  }
  __device__ __forceinline__ const uint32_t* meta_ptr(int slot) const {
    return reinterpret_cast<const uint32_t*>(base + (meta(slot) - addr));
  }
  __device__ __forceinline__ uint64_t* full(int slot) const {
    return reinterpret_cast<uint64_t*>(base + stages * (kABytes + kBBytes + kMetaBytes)) + slot;
  }
  __device__ __forceinline__ uint64_t* empty(int slot) const { return full(stages + slot); }
};

template <ElemType A, ElemType B, int BlockN>
__global__ void __launch_bounds__(kThreads, 1)
    decode_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                  const __grid_constant__ CUtensorMap tm_meta, const __grid_constant__ gemm::Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using F = sm80::Form<A, B>;
  using Acc = typename F::Acc;
  using State = gemm::RuntimePipelineState;
  constexpr int kNTiles = BlockN / 8;
  extern __shared__ uint8_t smem_raw[];
  const Smem<BlockN> sm(smem_raw, p.decode_stages);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < sm.stages; ++s) ptx::mbar_init(sm.full(s), kLoadWarps), ptx::mbar_init(sm.empty(s), kRowGroups);
    ptx::mbar_fence_init();
  }
  __syncthreads();

  // The tile: blockIdx.x = M tile x N tiles + N tile, blockIdx.y the batch entry after p.batch0.
  const int n_tiles = (p.n + BlockN - 1) / BlockN;
  const int m0 = static_cast<int>(blockIdx.x) / n_tiles * kBlockM, n0 = static_cast<int>(blockIdx.x) % n_tiles * BlockN;
  const int batch = p.batch0 + static_cast<int>(blockIdx.y);
  const int stages = static_cast<int>((p.meta_groups + kGroups - 1) / kGroups);  // the last may be half past K: zeros

  if (warp < kLoadWarps) {
    // ------------------------------------------------------------ producers: warp 0 A, 1 B, 2 metadata
    if (lane == 0) {
      const CUtensorMap* map = warp == 0 ? &tm_a : warp == 1 ? &tm_b : &tm_meta;
      ptx::tma_prefetch_map(map);
      ptx::wait_prior_grids();  // the kernel before may have written A's or B's memory
      ptx::allow_next_grid();
      const int a_z = p.batch_a_bytes ? batch : 0;
      // This warp's boxes per stage: one of A, kGroups of B and of the metadata (one group's K
      // each), their coordinates (x advancing by a box's bytes per box along K) and their slots.
      const Box box = warp == 0 ? box_a() : warp == 1 ? box_b(BlockN) : box_meta(p.meta_lanes);
      const int boxes = warp == 0 ? 1 : kGroups, next = warp == 1 ? Smem<BlockN>::kBBox : Smem<BlockN>::kMetaBox;
      const int y = warp == 0 ? m0 : warp == 1 ? n0 : m0 / 16, z = warp == 1 ? batch : a_z;
      State st = State::producer_start(sm.stages);
      for (int s = 0; s < stages; ++s, st.advance()) {
        const uint32_t dst = warp == 0 ? sm.a(st.index) : warp == 1 ? sm.b(st.index) : sm.meta(st.index);
        ptx::mbar_wait(sm.empty(st.index), st.phase);
        ptx::mbar_arrive_expect_tx(sm.full(st.index), boxes * box.size());
        for (int i = 0; i < boxes; ++i)
          ptx::tma_load_3d(dst + i * next, map, sm.full(st.index), (s * boxes + i) * box.bytes, y, z);
      }
    }
    return;
  }

  // -------------------------------------------------------------- math warp: rows 16rg .. 16rg + 15,
  // stages part, part + kParts, ...
  const int w = warp - kLoadWarps, rg = w % kRowGroups, part = w / kRowGroups;
  const int g = lane / 4, t = lane % 4, q = lane / 8, r8 = lane % 8;
  // ldmatrix addresses inside a stage, on the copies' 128-byte swizzle (16-byte chunk c of a
  // 128-byte row r at chunk c ^ (r % 8)): instruction j's 32 bytes of A are chunks 2j, 2j + 1 of
  // its rows; its 64 bytes of B chunks 4(j % 2) .. + 3 of B's box j / 2.
  uint32_t a_ld[kSteps], b_ld[kSteps];
#pragma unroll
  for (int j = 0; j < kSteps; ++j) {
    a_ld[j] = (16 * rg + (q % 2) * 8 + r8) * box_a().bytes + (((j * 2 + q / 2) ^ r8) * 16);
    b_ld[j] = (j / gemm::kMetaGroup) * Smem<BlockN>::kBBox + r8 * kBRowBytes + ((((j % 2) * 4 + q) ^ r8) * 16);
  }
  // This thread's metadata words: selector 0 names lanes t < L of each quad (the others pass a
  // copy, which the hardware ignores).
  const int P = p.meta_lanes, L = P / 8;
  const int meta_word = (rg * P + g * L + min(t, L - 1)) * gemm::kMetaGroup;

  Acc acc[kNTiles][4];
#pragma unroll
  for (int i = 0; i < kNTiles; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][e] = 0;

  State st = State::consumer_start(sm.stages);
  st.advance(part);
#pragma unroll 1
  for (int s = part; s < stages; s += kParts, st.advance(kParts)) {
    ptx::mbar_wait(sm.full(st.index), st.phase);
    const uint32_t* meta = sm.meta_ptr(st.index) + meta_word;
    // The last stage of an odd number of groups holds one: its second box is zeros, whose
    // metadata (zero words) names no valid pair.
    const int steps = kGroups * s + 1 < p.meta_groups ? kSteps : gemm::kMetaGroup;
#pragma unroll
    for (int j = 0; j < kSteps; ++j) {
      if (j == steps) break;
      uint32_t af[4], bf[4];
      ptx::ldmatrix_x4(af, sm.a(st.index) + a_ld[j]);
      const uint32_t e = meta[(j / gemm::kMetaGroup) * (Smem<BlockN>::kMetaBox / 4) + j % gemm::kMetaGroup];
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        ptx::ldmatrix_x4(bf, sm.b(st.index) + b_ld[j] + nt * 8 * kBRowBytes);
        F::mma(acc[nt], af, bf, e);
      }
    }
    __syncwarp();
    ptx::mbar_arrive_if(lane == 0, sm.empty(st.index));  // the warp has read the stage: the producer may refill it
  }

  // -------------------------------------------------------------- the parts' sums and the epilogue
  // Every math warp puts its sums in the first stages' A slots (free once every math warp has left
  // the main loop: every stage is consumed); then each element of the tile is added up over the
  // parts in their order (the same bytes on every run: f32 in f32, s32 wrapping) and stored, the
  // elements shared by all math threads in a loop along D's contiguous dimension. (Inline per
  // thread, unrolled, the general epilogue of its 8 elements cost the fp8 kernels 8 registers
  // more: 117 against 109, before the stages of four instructions.)
  constexpr int kMath = 32 * kMathWarps, kWords = kNTiles * 4;
  static_assert(kRowGroups * kParts * kWords * 32 * 4 <= kMinStages * Smem<BlockN>::kABytes, "the sums fit");
  uint32_t* sums = reinterpret_cast<uint32_t*>(sm.base);  // [row group][part][word][lane]
  ptx::named_barrier_sync(1, kMath);
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      sums[((rg * kParts + part) * kWords + nt * 4 + i) * 32 + lane] = reinterpret_cast<const uint32_t&>(acc[nt][i]);
  ptx::named_barrier_sync(1, kMath);
  ptx::wait_prior_grids();  // the kernel before may read C or D
  const bool cm = p.cd_col_major;
#pragma unroll 1
  for (int x = threadIdx.x - 32 * kLoadWarps; x < kBlockM * BlockN; x += kMath) {
    const int r = cm ? x % kBlockM : x / BlockN, c = cm ? x / kBlockM : x % BlockN;
    const int row = m0 + r, col = n0 + c;
    if (row >= p.m || col >= p.n) continue;
    // The element's place in the m16n8 fragments: row group, lane, word.
    const int at_lane = (r % 8) * 4 + (c % 8) / 2, word = (c / 8) * 4 + ((r % 16) / 8) * 2 + c % 2;
    const uint32_t* src = sums + ((r / 16) * kParts * kWords + word) * 32 + at_lane;
    Acc v = 0;
#pragma unroll
    for (int k = 0; k < kParts; ++k) {
      if constexpr (std::is_same_v<Acc, float>) v += __uint_as_float(src[k * kWords * 32]);
      else v += src[k * kWords * 32];
    }
    gemm::epilogue_store<Acc>(p, batch, row, col, reinterpret_cast<const uint32_t&>(v));
  }
#else
  __trap();
#endif
}

}  // namespace spmma::sm90::decode
