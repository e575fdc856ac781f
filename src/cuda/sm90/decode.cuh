// SPDX-License-Identifier: BSD-3-Clause
// The sm90 decode kernel: D = epilogue(A·B) for small N (decode, small batches), where the time is
// the time to read A. Measured on the H100 (docs/benchmarks.md, "The weight stream alone" and
// "Where a small call's time goes"), the main kernel's boxes stream a weight at 1.4-2.9 TB/s with
// nothing else in the kernel, but its 128-row tiles leave 32 CTAs for a 4096-row weight (split
// K in clusters makes 96, at ~2000 cycles of hand-over), and each CTA pays ~5000 cycles of set-up
// (clusters, setmaxnreg, two math warpgroups) before and ~2000 after its stream. Here:
//   tile          the math's rows (decode_tiles.hpp: 32 for the warps', 64 for the warpgroup's) x
//                 BlockN (8 or 16) columns, the whole K range (or a part of it, split K below):
//                 several CTAs per SM, no register reallocation;
//   producers     warps 4 .., one thread each, one per operand, or two taking the stages in turn
//                 where the CTA has its SM to itself or shares it with one other (the plan's
//                 issuers, decode_tiles.hpp): per stage of four instructions the TMA box of A (the
//                 tile's rows x 128 B of the main kernel's tensor layout), B's two (BlockN columns
//                 x 128 B), the metadata's two groups; a pipeline as deep as the plan gives it (the
//                 same bytes in flight per SM whatever the number of CTAs per SM);
//   math, warps   (Math::warps, every type) warps 0 .. 3: kParts pairs taking the stages in turn,
//                 each warp of a pair one of the stage's two metadata groups over both row groups
//                 of 16 rows (a B fragment serves 32 rows), mma.sp m16n8 per 8 columns from shared
//                 memory (ldmatrix, the swizzles the copies wrote). sm_90 has no fp8 mma.sp: each
//                 fp8 instruction runs as two f16 ones on operands converted in the thread's
//                 registers (Fp8AsF16), f32 sums;
//   math, warpgroup (Math::warpgroup, fp8) warps 0 .. 3, one warpgroup: per stage its four
//                 wgmma.sp m64nBlockN from shared memory by descriptor, each metadata group's two
//                 summed by the tensor cores into a set of its own and added to the running sums
//                 in f32 (the main kernel's promotion, mainloop.cuh);
//   sums          each math warp's, added up in a fixed order at the end;
//   split K       where a weight has few tiles (heuristics.cu; the kernel built with Split), the
//                 tile's stages in parts, one per CTA of a cluster (rank = part); the parts' sums
//                 meet in part 0's epilogue through distributed shared memory, added in the order
//                 of the parts (deterministic);
//   epilogue      each element as the CPU's epilogue computes it (gemm::epilogue_store), all
//                 math threads over the tile (at most 64 x 16) from shared memory.
// Programmatic dependent launch as the main kernel: the producer waits for the kernel before the
// first copy, the math warps before the epilogue.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <type_traits>

#include "common/gemm_params.cuh"
#include "common/pipeline.cuh"
#include "gemm_forms_sm80.cuh"
#include "gemm_forms_sm90.cuh"
#include "ptx/cluster.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/cvt.cuh"
#include "ptx/griddep.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/shared.cuh"
#include "ptx/tma.cuh"
#include "ptx/warpgroup.cuh"
#include "ptx/wgmma.cuh"
#include "sm90/decode_tiles.hpp"

namespace spmma::sm90::decode {

// The CTA's dynamic shared memory for `stages` stages: all A boxes, all B boxes, all metadata
// boxes, then the barriers (full, empty per stage; split K's two).
template <int BlockN, Math M>
struct Smem {
  static constexpr bool kWg = M == Math::warpgroup;
  static constexpr int kRows = block_m(M), kTileRowGroups = kRows / 16;
  // Per stage: A's box; B's and the metadata's kGroups boxes, one after the other.
  static constexpr int kBBox = box_b(BlockN).size(), kMetaBox = box_meta(kMaxMetaLanes, M).size();
  static constexpr int kABytes = box_a(M).size(), kBBytes = kGroups * kBBox, kMetaBytes = kGroups * kMetaBox;
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
  // Split K: part 0's barrier for the other parts' sums, and each other part's for part 0 having
  // read them (decode_kernel).
  __device__ __forceinline__ uint64_t* sums_full() const { return full(2 * stages); }
  __device__ __forceinline__ uint64_t* sums_read() const { return full(2 * stages + 1); }
  // The math warps' sums after the main loop, in the first stages' A slots (free by then): word
  // `word` of the m16n8 fragments (kWords per lane; a wgmma's m64nN fragment is its warps' m16n8
  // ones side by side) of row group rg as kept by its k-th warp (kSummands of them: every math
  // warp in the warps' math, row group rg's own warp in the warpgroup's), lane `lane`.
  static constexpr int kWords = BlockN / 8 * 4, kSummands = kWg ? 1 : kMathWarps;
  static __device__ __forceinline__ int sum_at(int rg, int k, int word, int lane) {
    return ((rg * kSummands + k) * kWords + word) * 32 + lane;
  }
  static_assert(kTileRowGroups * kSummands * kWords * 32 * 4 <= kMinStages * kABytes, "the sums fit");
  __device__ __forceinline__ uint32_t* sums() const { return reinterpret_cast<uint32_t*>(base); }
};

// fp8 on sm_90, which has no fp8 mma.sp: each m16n8k64 instruction of the pair runs as two f16
// m16n8k32 ones on operands converted exactly (ptx/cvt.cuh), f32 sums. The conversion keeps each
// thread's own bytes: the f16 instructions take the dense K of the fp8 one in another order, the
// same for A, B and the metadata (a sum over K in any order of its 4-wide chunks is the same
// product). f16 instruction h (h = 0, 1) takes the fp8 chunks 8h .. 8h + 7 (the fp8 A registers
// 2h, 2h + 1); its chunk c is the fp8 chunk 8h + 2c for c < 4 and 8h + 2(c - 4) + 1 above
// (docs/layouts.md, "fp8 on sm_90 in the decode kernel"), so that:
//   A   thread (g, t)'s fp8 register 2h + i (row g + 8i, fp8 chunks 8h + 2t, 8h + 2t + 1) converts
//       to its f16 registers i (chunk t: the low pair) and 2 + i (chunk 4 + t: the high pair);
//   B   its f16 register j holds dense rows 8j + 2t, + 1 of the f16 order, fp8 rows
//       32h + 8(t / 2) + 2(t % 2) + {0, 16, 4, 20}[j] + {0, 1}: from two 8-byte loads of B's row g;
//   E   lane t = 0 (1) holds chunks 0-3 (4-7) of rows g (low half) and g + 8 (high half): the
//       even (odd) nibbles of the fp8 lanes 4g + 2h (row g) and 4g + 2h + 1 (row g + 8).
// ptxas's own conversion of the fp8 form took 154 registers per thread (one CTA per SM) and ran
// 0.50x the main kernel at e4m3 14336 x 16 x 4096 (2026-11-27).
template <ElemType A, ElemType B>
struct Fp8AsF16 {
  using F16 = sm80::Form<ElemType::f16, ElemType::f16>;
  // The metadata of f16 instruction h from the fp8 lanes' words of rows g (x) and g + 8 (y).
  static __device__ __forceinline__ uint32_t meta(uint32_t x, uint32_t y, int t) {
    const int sh = 4 * (t & 1);
    uint32_t a = (x >> sh) & 0x0F0F0F0Fu, b = (y >> sh) & 0x0F0F0F0Fu;
    a |= a >> 4, b |= b >> 4;  // bytes 0 and 2: nibbles (0, 2) and (4, 6) of the chosen parity
    return __byte_perm(a, b, 0x6420);
  }
  // One fp8 instruction over the tile's row groups (A fragments af[rg], metadata words mw[rg][t']
  // of the fp8 lanes 4g + t' of row group rg) on kNTiles B tiles at b_row (B's row g of the first
  // tile, at this instruction's 64 bytes of K, the 8 bytes of half t / 2 of its first 16-byte
  // chunk; chunks swizzled by g). Each B register is loaded and converted once for all row groups.
  template <int kNTiles>
  static __device__ __forceinline__ void mma(float (&acc)[kRowGroups][kNTiles][4], const uint32_t (&af)[kRowGroups][4],
                                             const uint32_t (&mw)[kRowGroups][4], uint32_t b_row, int chunk0, int g, int t) {
    const uint32_t sel = t & 1 ? 0x7632u : 0x5410u;  // the pair at byte 2(t % 2) of each word
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t b16[kNTiles][4];
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        uint32_t lo[2], hi[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const uint32_t at = b_row + nt * 8 * kBRowBytes + (((chunk0 + 2 * h + i) ^ g) * 16);
          const uint2 v = ptx::ld_shared_v2(at);
          lo[i] = v.x, hi[i] = v.y;
        }
        const uint32_t x0 = __byte_perm(lo[0], hi[0], sel), x1 = __byte_perm(lo[1], hi[1], sel);
        b16[nt][0] = ptx::fp8x2_lo_to_f16x2<B>(x0), b16[nt][1] = ptx::fp8x2_lo_to_f16x2<B>(x1);
        b16[nt][2] = ptx::fp8x2_hi_to_f16x2<B>(x0), b16[nt][3] = ptx::fp8x2_hi_to_f16x2<B>(x1);
      }
#pragma unroll
      for (int rg = 0; rg < kRowGroups; ++rg) {
        const uint32_t a16[4] = {ptx::fp8x2_lo_to_f16x2<A>(af[rg][2 * h]), ptx::fp8x2_lo_to_f16x2<A>(af[rg][2 * h + 1]),
                                 ptx::fp8x2_hi_to_f16x2<A>(af[rg][2 * h]), ptx::fp8x2_hi_to_f16x2<A>(af[rg][2 * h + 1])};
        const uint32_t e = meta(mw[rg][2 * h], mw[rg][2 * h + 1], t);
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) F16::mma(acc[rg][nt], a16, b16[nt], e);
      }
    }
  }
};

// The warps' math: math warp w's main loop (metadata group grp of the stages s_begin + part,
// + kParts, ..., over both row groups), then its sums into sm.sums().
template <ElemType A, ElemType B, int BlockN>
__device__ __forceinline__ void math_loop(const Smem<BlockN, Math::warps>& sm, const gemm::Params& p, int s_begin,
                                          int s_end, int w, int lane) {
  using F = sm80::Form<A, B>;
  using Acc = typename F::Acc;
  using Sm = Smem<BlockN, Math::warps>;
  constexpr bool kFp8 = has_warpgroup_math(A);  // detail::gemm_promotes(A), host-only
  using State = gemm::RuntimePipelineState;
  constexpr int kNTiles = BlockN / 8, kMG = gemm::kMetaGroup;
  constexpr int kRowGroupA = 16 * box_a(Math::warps).bytes;  // A's next 16 rows in a stage
  const int part = w / kGroups, grp = w % kGroups;
  const int g = lane / 4, t = lane % 4, q = lane / 8, r8 = lane % 8;
  // ldmatrix addresses inside a stage, on the copies' 128-byte swizzle (16-byte chunk c of a
  // 128-byte row r at chunk c ^ (r % 8)): the warp's instruction j = kMG·grp + i takes chunks 2j,
  // 2j + 1 of A's rows (row group 0; row group 1 kRowGroupA further, the same swizzle), and its 64
  // bytes of B are chunks 4i .. 4i + 3 of B's box grp.
  uint32_t a_ld[kMG], b_ld[kMG];
#pragma unroll
  for (int i = 0; i < kMG; ++i) {
    const int j = kMG * grp + i;
    a_ld[i] = ((q % 2) * 8 + r8) * box_a(Math::warps).bytes + (((j * 2 + q / 2) ^ r8) * 16);
    b_ld[i] = grp * Sm::kBBox + r8 * kBRowBytes + (((i * 4 + q) ^ r8) * 16);
  }
  // This thread's metadata words in the group's box (row group 0; row group 1 P groups further):
  // selector 0 names lanes t < L of each quad (the others pass a copy, which the hardware ignores).
  const int P = p.meta_lanes, L = P / 8;
  const int meta_word =
      grp * (Sm::kMetaBox / 4) + (g * L + (kFp8 ? 0 : min(t, L - 1))) * kMG;  // fp8: all 4 of the quad
  const int meta_rg = P * kMG;

  Acc acc[kRowGroups][kNTiles][4];
#pragma unroll
  for (int rg = 0; rg < kRowGroups; ++rg)
#pragma unroll
    for (int i = 0; i < kNTiles; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[rg][i][e] = 0;

  State st = State::consumer_start(sm.stages);
  st.advance(part);
#pragma unroll 1
  for (int s = s_begin + part; s < s_end; s += kParts, st.advance(kParts)) {
    ptx::mbar_wait(sm.full(st.index), st.phase);
    // The last stage of an odd number of groups holds one: its second box is zeros, which the
    // warp of that group skips.
    if (kGroups * s + grp < p.meta_groups) {
      const uint32_t* meta = sm.meta_ptr(st.index) + meta_word;
#pragma unroll
      for (int i = 0; i < kMG; ++i) {
        uint32_t af[kRowGroups][4];
#pragma unroll
        for (int rg = 0; rg < kRowGroups; ++rg) ptx::ldmatrix_x4(af[rg], sm.a(st.index) + a_ld[i] + rg * kRowGroupA);
        if constexpr (kFp8) {
          // Each row group's quad's four words of this instruction (lane t' at t'·kMG), B's row g at
          // the instruction's 64 bytes: box grp, chunks 4i ...
          uint32_t mw[kRowGroups][4];
#pragma unroll
          for (int rg = 0; rg < kRowGroups; ++rg)
#pragma unroll
            for (int k = 0; k < 4; ++k) mw[rg][k] = meta[rg * meta_rg + k * kMG + i];
          const uint32_t b_row = sm.b(st.index) + grp * Sm::kBBox + g * kBRowBytes + 8 * (t / 2);
          Fp8AsF16<A, B>::template mma<kNTiles>(acc, af, mw, b_row, 4 * i, g, t);
        } else {
          uint32_t e[kRowGroups];
#pragma unroll
          for (int rg = 0; rg < kRowGroups; ++rg) e[rg] = meta[rg * meta_rg + i];
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt) {
            uint32_t bf[4];
            ptx::ldmatrix_x4(bf, sm.b(st.index) + b_ld[i] + nt * 8 * kBRowBytes);
#pragma unroll
            for (int rg = 0; rg < kRowGroups; ++rg) F::mma(acc[rg][nt], af[rg], bf, e[rg]);
          }
        }
      }
    }
    __syncwarp();
    ptx::mbar_arrive_if(lane == 0, sm.empty(st.index));  // the warp has read the stage: the producer may refill it
  }

  // Every math warp puts its sums in the first stages' A slots, free once every math warp has left
  // the main loop (every stage of the part is consumed).
  ptx::named_barrier_sync(1, kMathThreads);
#pragma unroll
  for (int rg = 0; rg < kRowGroups; ++rg)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        sm.sums()[Sm::sum_at(rg, w, nt * 4 + i, lane)] = reinterpret_cast<const uint32_t&>(acc[rg][nt][i]);
  ptx::named_barrier_sync(1, kMathThreads);
}

// The warpgroup's math (Math::warpgroup, fp8): warp w of the warpgroup (rows 16w .. 16w + 15 of the tile) over the
// stages s_begin .. s_end - 1, then its sums into sm.sums(). Per stage the four wgmma.sp, two
// groups of two (one metadata group each, summed by the tensor cores into a set of their own
// from zero), each set added to the running sums in f32 once its group retires (the first while
// the second runs): the main kernel's promotion at its interval (64 products per output), so
// fp8's sums here carry its accuracy (docs/api.md). The sets are 4 or 8 registers (N = 8, 16).
template <ElemType A, ElemType B, int BlockN>
__device__ __forceinline__ void wg_math_loop(const Smem<BlockN, Math::warpgroup>& sm, const gemm::Params& p,
                                             int s_begin, int s_end, int w, int lane) {
  using F = sm90::Form<A, B>;
  using Sm = Smem<BlockN, Math::warpgroup>;
  using Acc = typename F::Acc;
  using State = gemm::RuntimePipelineState;
  constexpr int kMG = gemm::kMetaGroup;
  // This thread's metadata words (kMG, one per instruction of the group) in each group's box: warp
  // w's 16-row block; selector 0 names lanes t < L of each quad (the others pass a copy).
  const int g = lane / 4, t = lane % 4, P = p.meta_lanes, L = P / 8;
  const int meta_word = w * P * kMG + (g * L + min(t, L - 1)) * kMG;

  Acc acc[BlockN / 2], set[kGroups][BlockN / 2];
#pragma unroll
  for (int i = 0; i < BlockN / 2; ++i) acc[i] = 0;
  const auto add = [&](Acc(&x)[BlockN / 2]) {
#pragma unroll
    for (int i = 0; i < BlockN / 2; ++i) {
      ptx::fence_operand(x[i]);
      acc[i] += x[i];
    }
  };

  State st = State::consumer_start(sm.stages);
#pragma unroll 1
  for (int s = s_begin; s < s_end; ++s, st.advance()) {
    // The last stage of an odd number of groups holds one: its second group's boxes are zeros
    // (past K), whose sums are zeros. (Not issuing it, a branch, made ptxas add waits.)
    const uint32_t* meta = sm.meta_ptr(st.index) + meta_word;
    ptx::mbar_wait(sm.full(st.index), st.phase);
    const uint2 e0 = *reinterpret_cast<const uint2*>(meta);
    const uint2 e1 = *reinterpret_cast<const uint2*>(meta + Sm::kMetaBox / 4);
    // Instruction j's A is the rows' bytes 32j .. (the 128-byte swizzle); group grp's B its box grp.
    const uint64_t da = ptx::smem_desc<kGroups * kARowBytes>(sm.a(st.index));
    const uint64_t db = ptx::smem_desc<kBRowBytes>(sm.b(st.index));
    constexpr uint64_t kA = kABytesPerStep / 16, kB = kBBytesPerStep / 16, kBox = Sm::kBBox / 16;
    ptx::wgmma_fence();
    F::template mma<BlockN>(set[0], da, db, e0.x, false);
    F::template mma<BlockN>(set[0], da + kA, db + kB, e0.y, true);
    ptx::wgmma_commit();
    F::template mma<BlockN>(set[1], da + 2 * kA, db + kBox, e1.x, false);
    F::template mma<BlockN>(set[1], da + 3 * kA, db + kBox + kB, e1.y, true);
    ptx::wgmma_commit();
    ptx::wgmma_wait<1>();
    add(set[0]);
    ptx::wgmma_wait<0>();
    add(set[1]);
    ptx::mbar_arrive_if(lane == 0, sm.empty(st.index));  // the warp's wgmmas have read the stage
  }

  // The sums in the first stages' A slots, free once every math warp has left the main loop.
  ptx::named_barrier_sync(1, kMathThreads);
#pragma unroll
  for (int i = 0; i < BlockN / 2; ++i)
    sm.sums()[Sm::sum_at(w, 0, i, lane)] = reinterpret_cast<const uint32_t&>(acc[i]);
  ptx::named_barrier_sync(1, kMathThreads);
}

// Split: built for split K (p.splits parts); without, p.splits is 1 and the kernel has none of its
// code (with it, splits = 1 ran 0.985x as fast at 4096 x N x 4096 on the H100, 2026-11-27 09:23).
// Registers: launch bounds of kMaxThreads, one CTA (no bound): ptxas schedules for the occupancy
// it is told, and bounded kernels ran slower with the same registers (bf16 4096 x {1, 8} x 4096
// 0.91x, e4m3 4096 x {1, 8} x 14336 0.95x on the H100, 2026-11-27 14:42 and 14:59 UTC); without
// launch bounds the 32x16 kernels took 80 registers, with these 72 or fewer (tests/sass). fp8's
// converted instructions over both row groups take 80 at N = 16 whatever the bounds: 3 CTAs of
// kThreads per SM, 2 of kMaxThreads. The plan takes them only on weights of fewer than one 64-row
// tile per SM (heuristics.cu, decode_math: at most 2 CTAs per SM at N <= 16), the warpgroup's
// math (46-66 registers) the weights of more. (On the warps' math, e4m3 14336 x 16 x 4096 ran
// 0.88x in 3 CTAs per SM against 4 bounded to 72 registers, before the warpgroup took it.)
template <ElemType A, ElemType B, int BlockN, Math M, bool Split>
__global__ void __launch_bounds__(kMaxThreads, 1)
    decode_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                  const __grid_constant__ CUtensorMap tm_b_tail, const __grid_constant__ CUtensorMap tm_meta,
                  const __grid_constant__ gemm::Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Acc = typename sm80::Form<A, B>::Acc;  // the sm90 form's too: f32, or s32
  using State = gemm::RuntimePipelineState;
  using Sm = Smem<BlockN, M>;
  constexpr bool kWg = Sm::kWg;
  constexpr int kRows = Sm::kRows;
  extern __shared__ uint8_t smem_raw[];
  const Sm sm(smem_raw, p.decode_stages);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // The warps: the math's are warps 0 .. 3 (the warpgroup's starts at a multiple of 4 warps), the
  // producers after them, p.decode_issuers per operand.
  const int load_warp = warp - kMathWarps, math_thread = static_cast<int>(threadIdx.x);
  const int splits = Split ? p.splits : 1;
  if (threadIdx.x == 0) {
    // The stage's empty barrier: an arrival per warp that reads it (the warps' math: the kGroups
    // warps of a pair; the warpgroup's: its 4 warps).
    for (int s = 0; s < sm.stages; ++s)
      ptx::mbar_init(sm.full(s), kOperands), ptx::mbar_init(sm.empty(s), kWg ? kMathWarps : kGroups);
    if (splits > 1) ptx::mbar_init(sm.sums_full(), splits - 1), ptx::mbar_init(sm.sums_read(), 1);
    ptx::mbar_fence_init();
  }
  // With split K a cluster's CTAs arrive on each other's barriers: every one is initialised first.
  if (splits > 1) ptx::cluster_sync();
  else __syncthreads();

  // The tile: blockIdx.x = (M tile x N tiles + N tile) x splits + part, the part also the CTA's
  // rank in its cluster; blockIdx.y the batch entry after p.batch0. The part's stages: s_begin ..
  // s_end - 1 (the last stage may be half past K: zeros).
  const int split = static_cast<int>(blockIdx.x) % splits, tile = static_cast<int>(blockIdx.x) / splits;
  const int n_tiles = (p.n + BlockN - 1) / BlockN;
  const int m0 = tile / n_tiles * kRows, n0 = tile % n_tiles * BlockN;
  const int batch = p.batch0 + static_cast<int>(blockIdx.y);
  const int stages = static_cast<int>(k_stages(p.meta_groups));
  const int s_begin = min(stages, split * p.stages_per_split), s_end = min(stages, s_begin + p.stages_per_split);

  if (load_warp >= 0) {
    // ------------------------------------------------------------ producers: A, B, metadata
    // (They leave once their copies are issued: kept to the kernel's end, idle, the kernel ran
    // 0.86-0.97x as fast at 4096 x N x 4096 on the H100, 2026-11-27 09:13.)
    // Issuer i of an operand fills the part's stages i, i + issuers, ... (their slots its own:
    // the stages are whole rounds of the issuers, decode::valid_stages).
    const int op = load_warp % kOperands;  // the operand: 0 A, 1 B, 2 metadata
    const int issuer = load_warp / kOperands, issuers = p.decode_issuers;
    if (lane == 0) {
      // B's box: the tile's columns up to N, from the tail map on B's last N tile (tiles.hpp).
      const int b_rows = b_box_rows(BlockN, 1, p.n, n0);
      const CUtensorMap* b_map = b_tail(BlockN, 1, p.n, n0) ? &tm_b_tail : &tm_b;
      const CUtensorMap* map = op == 0 ? &tm_a : op == 1 ? b_map : &tm_meta;
      ptx::tma_prefetch_map(map);
      ptx::wait_prior_grids();  // the kernel before may have written A's or B's memory
      ptx::allow_next_grid();
      const int a_z = p.batch_a_bytes ? batch : 0;
      // This warp's boxes per stage: one of A, kGroups of B and of the metadata (one group's K
      // each), their coordinates (x advancing by a box's bytes per box along K) and their slots.
      const Box box = op == 0 ? box_a(M) : op == 1 ? box_b(b_rows) : box_meta(p.meta_lanes, M);
      const int boxes = op == 0 ? 1 : kGroups, next = op == 1 ? Sm::kBBox : Sm::kMetaBox;
      const int y = op == 0 ? m0 : op == 1 ? n0 : m0 / 16, z = op == 1 ? batch : a_z;
      State st = State::producer_start(sm.stages);
      st.advance(issuer);
      for (int s = s_begin + issuer; s < s_end; s += issuers, st.advance(issuers)) {
        const uint32_t dst = op == 0 ? sm.a(st.index) : op == 1 ? sm.b(st.index) : sm.meta(st.index);
        ptx::mbar_wait(sm.empty(st.index), st.phase);
        ptx::mbar_arrive_expect_tx(sm.full(st.index), boxes * box.size());
        for (int i = 0; i < boxes; ++i)
          ptx::tma_load_3d(dst + i * next, map, sm.full(st.index), (s * boxes + i) * box.bytes, y, z);
      }
    }
    return;
  }
  if constexpr (kWg) wg_math_loop<A, B, BlockN>(sm, p, s_begin, s_end, warp, lane);
  else math_loop<A, B, BlockN>(sm, p, s_begin, s_end, warp, lane);

  // -------------------------------------------------------------- the parts' sums and the epilogue
  // Each element of the tile is added up over the math warps' sums and the split parts in their
  // order (the same bytes on every run: f32 in f32, s32 wrapping) and stored, the elements shared
  // by all math threads of part 0 in a loop along D's contiguous dimension. (Inline per thread,
  // unrolled, the general epilogue of its 8 elements cost the fp8 kernels 8 registers more: 117
  // against 109, before the stages of four instructions.) With split K, part 0 reads the other
  // parts' sums in their shared memory once each has put them there (an arrival on part 0's
  // sums_full that releases them, the math loop's barrier having ordered every math thread's
  // writes before it), and each part stays until part 0 has read them (its sums_read).
  const bool first = math_thread == 0;
  if (split != 0) {
    if (first) {
      ptx::mbar_arrive_release_cluster(ptx::in_cta(sm.sums_full(), 0));
      ptx::mbar_wait_cluster(sm.sums_read(), 0);
    }
    return;
  }
  if (splits > 1) ptx::mbar_wait_cluster(sm.sums_full(), 0);
  const uint32_t* part_sums[kMaxSplits];
#pragma unroll
  for (int j = 0; j < kMaxSplits; ++j) part_sums[j] = j == 0 ? sm.sums() : j < splits ? ptx::in_cta(sm.sums(), j) : nullptr;
  const bool cm = p.cd_col_major;
  // Element x of the tile (x along D's contiguous dimension): its row and column in the tile, and
  // its sum over the math warps and the parts, in their order. The element's place in the m16n8
  // fragments: row group, lane, word.
  const auto place = [&](int x) { return cm ? int2{x % kRows, x / kRows} : int2{x / BlockN, x % BlockN}; };
  const auto sum_of = [&](int2 rc) {
    const int r = rc.x, c = rc.y;
    const int at_lane = (r % 8) * 4 + (c % 8) / 2, word = (c / 8) * 4 + ((r % 16) / 8) * 2 + c % 2;
    Acc v = 0;
#pragma unroll
    for (int j = 0; j < kMaxSplits; ++j) {
      if (j == splits) break;
#pragma unroll
      for (int k = 0; k < Sm::kSummands; ++k) {
        const uint32_t u = part_sums[j][Sm::sum_at(r / 16, k, word, at_lane)];
        if constexpr (std::is_same_v<Acc, float>) v += __uint_as_float(u);
        else v += u;
      }
    }
    return v;
  };
  if (p.plain) {
    // The plain epilogue: every element's sums read first, then the stores, so that the loads of
    // all kPer elements are in flight together (one element after the other, each element's
    // loads, then its epilogue, took 0.32 us per element after the first on the H200,
    // docs/benchmarks.md "The decode kernel's copies, its CTAs' phases, its epilogue"). Gathered
    // first, the H100 ran 0.97-1.08x as fast at N <= 16 (geomean 1.025 cold, 1.019 hot; s8 on the
    // 4096-row weight 1.06-1.08x), 2026-12-07.
    constexpr int kPer = kRows * BlockN / kMathThreads;
    static_assert(kRows * BlockN % kMathThreads == 0, "the tile's elements are whole rounds of the math threads");
    Acc v[kPer];
#pragma unroll
    for (int e = 0; e < kPer; ++e) v[e] = sum_of(place(math_thread + e * kMathThreads));
    ptx::wait_prior_grids();  // the kernel before may read D
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const int2 rc = place(math_thread + e * kMathThreads);
      const int row = m0 + rc.x, col = n0 + rc.y;
      if (row < p.m && col < p.n)
        gemm::store_plain_one<Acc>(p, batch, row, col, reinterpret_cast<const uint32_t&>(v[e]));
    }
  } else {
    ptx::wait_prior_grids();  // the kernel before may read C or D
#pragma unroll 1
    for (int x = math_thread; x < kRows * BlockN; x += kMathThreads) {
      const int2 rc = place(x);
      const int row = m0 + rc.x, col = n0 + rc.y;
      if (row >= p.m || col >= p.n) continue;
      const Acc v = sum_of(rc);
      gemm::epilogue_store<Acc>(p, batch, row, col, reinterpret_cast<const uint32_t&>(v));
    }
  }
  if (splits > 1) {
    // Every math thread has read the parts' sums (its loads returned: their values are in D's
    // stores): the parts may leave. Relaxed: nothing to publish, and a release would wait for
    // this thread's stores of D.
    ptx::named_barrier_sync(1, kMathThreads);
    if (first)
      for (int j = 1; j < splits; ++j) ptx::mbar_arrive_cluster_if(true, ptx::in_cta(sm.sums_read(), j));
  }
#else
  __trap();
#endif
}

}  // namespace spmma::sm90::decode
