// SPDX-License-Identifier: BSD-3-Clause
// Sparse GEMM on mma.sp::ordered_metadata (sm_80 and later): D = epilogue(A·B), A 2:4 / 1:2 /
// 4:8 sparse, M x K; B stored K-contiguous per column (N x K row-major, "column-major K x N").
//
// Every instruction used here reads 32 bytes of packed A per row and 64 bytes of B per column
// (bf16/f16 m16n8k32, fp8/int8 m16n8k64, tf32 m16n8k16, int4 m16n8k128), so one kernel, written
// in bytes, serves every type: the type pair only picks the instruction (Form<A, B>, generated
// from the ISA registry).
//
// Pipeline (per CTA, kStages deep, cp.async):  load A values + metadata + B of stage s+S-1
//   -> wait for stage s -> per instruction step: ldmatrix A, B; read metadata; mma.sp -> epilogue.
#pragma once
#include <cstdint>

#include "common/gemm_params.cuh"
#include "gemm_forms_sm80.cuh"
#include "ptx/cp_async.cuh"

namespace spmma::sm80 {

using gemm::Params;
using gemm::smem_u32;

// ---------------------------------------------------------------- tile constants
constexpr int kBlockM = 128;           // rows of D per CTA (A's rows are padded to it)
constexpr int kWarpsM = 2, kWarpsN = 4;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kWarpM = kBlockM / kWarpsM;  // 64: four m16 tiles per warp
constexpr int kMTiles = kWarpM / 16;
constexpr int kStepsPerStage = 2;           // instructions along K per pipeline stage
constexpr int kABytesPerStep = 32;          // packed A bytes per row per instruction
constexpr int kBBytesPerStep = 64;          // B bytes per column per instruction
constexpr int kARowBytes = kStepsPerStage * kABytesPerStep;  // 64
constexpr int kBRowBytes = kStepsPerStage * kBBytesPerStep;  // 128
constexpr int kStages = 4;
constexpr int kAStageBytes = kBlockM * kARowBytes;             // 8 KiB
constexpr int kMetaGroup = gemm::kMetaGroup;                   // fragment-ready group G: one record per stage
static_assert(kMetaGroup == kStepsPerStage && kBlockM == gemm::kRowPad, "the device layout of A matches this kernel");
constexpr int kMetaStageBytes = (kBlockM / 16) * 32 * kMetaGroup * 4;  // room for 4 metadata lanes per quad
static_assert(kARowBytes % 16 == 0 && kBRowBytes % 16 == 0, "cp.async moves 16-byte chunks");

// The CTA's N extent. A 128 x 256 tile (warp tile 64 x 64, one CTA per SM) measured slower on
// the H100 than this 128 x 128 one with two CTAs per SM (docs/benchmarks.md): the kernel is
// bound by latency, not shared-memory bandwidth, so resident warps win.
template <int BlockN, int MinBlocksPerSm>
struct Tile {
  static constexpr int kBlockN = BlockN;
  static constexpr int kWarpN = BlockN / kWarpsN;
  static constexpr int kNTiles = kWarpN / 8;
  static constexpr int kMinBlocks = MinBlocksPerSm;
  static constexpr int kBStageBytes = BlockN * kBRowBytes;
  static constexpr int kSmemBytes = kStages * (kAStageBytes + kBStageBytes + kMetaStageBytes);
  static_assert(kWarpN % 8 == 0, "whole n8 tiles per warp");
};
using CtaTile = Tile<128, 2>;  // 128 x 128, warp tile 64 x 32

// ---------------------------------------------------------------- small device helpers

using ptx::cp_async_commit;
using ptx::cp_async_wait;

// Bank-conflict-free placement of 16-byte chunk `c` of smem row `r`: ldmatrix reads one chunk
// column of 8 consecutive rows, so the chunk index is XORed with a row-derived value.
__device__ __forceinline__ int a_chunk(int r, int c) { return c ^ ((r >> 1) & 3); }  // 64-byte rows
__device__ __forceinline__ int b_chunk(int r, int c) { return c ^ (r & 7); }         // 128-byte rows

// ---------------------------------------------------------------- the kernel

template <ElemType A, ElemType B>
__global__ void __launch_bounds__(kThreads, CtaTile::kMinBlocks) spgemm_kernel(Params p) {
  using Traits = Form<A, B>;
  using T = CtaTile;
  constexpr int kBlockN = T::kBlockN, kWarpN = T::kWarpN, kNTiles = T::kNTiles, kBStageBytes = T::kBStageBytes;
  extern __shared__ __align__(128) uint8_t smem[];
  uint8_t* sA = smem;
  uint8_t* sB = smem + kStages * kAStageBytes;
  uint32_t* sMeta = reinterpret_cast<uint32_t*>(sB + kStages * kBStageBytes);
  const int meta_stage_words = (kBlockM / 16) * p.meta_lanes * kMetaGroup;

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  // One grid dimension for the tiles (x reaches 2^31 - 1; y would stop M at 65535 tiles), N fastest.
  const int n_tiles = (p.n + kBlockN - 1) / kBlockN;
  const int block_m = static_cast<int>(blockIdx.x / n_tiles) * kBlockM, block_n = static_cast<int>(blockIdx.x % n_tiles) * kBlockN;
  const int batch = p.batch0 + static_cast<int>(blockIdx.y);
  const uint8_t* gA = p.a + batch * p.batch_a_bytes + static_cast<int64_t>(block_m) * p.a_row_bytes;
  const uint32_t* gMeta = p.meta + batch * p.batch_meta_words;
  const uint8_t* gB = p.b + batch * p.batch_b_bytes;
  const int k_steps = p.k / Traits::kInstK;
  const int stages_total = (k_steps + kStepsPerStage - 1) / kStepsPerStage;

  // Per-thread copy plan, fixed for the whole K loop: which 16-byte chunks of A and B this thread
  // moves each stage (global source, shared destination), so a stage only adds its K offset.
  constexpr int kAChunks = kBlockM * (kARowBytes / 16) / kThreads;   // 2
  constexpr int kBChunks = kBlockN * (kBRowBytes / 16) / kThreads;   // 4
  static_assert(kAChunks * kThreads == kBlockM * (kARowBytes / 16) && kBChunks * kThreads == kBlockN * (kBRowBytes / 16),
                "every thread copies the same number of chunks");
  const uint32_t sA_u32 = smem_u32(sA), sB_u32 = smem_u32(sB), sMeta_u32 = smem_u32(sMeta);
  const uint8_t* a_src_g[kAChunks];
  uint32_t a_dst_s[kAChunks], a_col[kAChunks];
#pragma unroll
  for (int i = 0; i < kAChunks; ++i) {
    const int idx = tid + i * kThreads, r = idx / (kARowBytes / 16), c = idx % (kARowBytes / 16);
    a_src_g[i] = gA + r * p.a_row_bytes + c * 16;
    a_dst_s[i] = r * kARowBytes + a_chunk(r, c) * 16;
    a_col[i] = c * 16;
  }
  const uint8_t* b_src_g[kBChunks];
  uint32_t b_dst_s[kBChunks], b_col[kBChunks];
  bool b_in[kBChunks];
#pragma unroll
  for (int i = 0; i < kBChunks; ++i) {
    const int idx = tid + i * kThreads, r = idx / (kBRowBytes / 16), c = idx % (kBRowBytes / 16);
    const int col = block_n + r;
    b_in[i] = col < p.n;
    b_src_g[i] = gB + (b_in[i] ? static_cast<int64_t>(col) * p.ldb_bytes : 0) + c * 16;
    b_dst_s[i] = r * kBRowBytes + b_chunk(r, c) * 16;
    b_col[i] = c * 16;
  }
  const int64_t b_k_bytes = static_cast<int64_t>(p.k) * Traits::kBBits / 8;
  const int meta_records = (kBlockM / 16) * p.meta_lanes;  // <= kThreads: one record per thread at most
  const bool meta_copier = tid < meta_records;
  const uint32_t* meta_src_g = gMeta;
  if (meta_copier) {
    const int wb = tid / p.meta_lanes, lane_p = tid % p.meta_lanes;
    meta_src_g += ((static_cast<int64_t>(block_m / 16 + wb) * p.meta_groups) * p.meta_lanes + lane_p) * kMetaGroup;
  }
  const int64_t meta_stage_stride = static_cast<int64_t>(p.meta_lanes) * kMetaGroup;  // words per group step

  // Issues the cp.async copies of pipeline stage `s` (A rows, B columns, metadata records).
  auto load_stage = [&](int s) {
    const int slot = s % kStages;
    const int64_t a_off = static_cast<int64_t>(s) * kARowBytes, b_off = static_cast<int64_t>(s) * kBRowBytes;
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
      const bool ok = a_off + a_col[i] < p.a_row_bytes;  // rows are padded to kBlockM: no row check
      ptx::cp_async_16(sA_u32 + slot * kAStageBytes + a_dst_s[i], ok ? a_src_g[i] + a_off : a_src_g[i], ok ? 16 : 0);
    }
#pragma unroll
    for (int i = 0; i < kBChunks; ++i) {
      const bool ok = b_in[i] && b_off + b_col[i] < b_k_bytes;
      ptx::cp_async_16(sB_u32 + slot * kBStageBytes + b_dst_s[i], ok ? b_src_g[i] + b_off : b_src_g[i], ok ? 16 : 0);
    }
    if (meta_copier)
      ptx::cp_async_8(sMeta_u32 + (slot * meta_stage_words + tid * kMetaGroup) * 4, meta_src_g + s * meta_stage_stride);
  };

  typename Traits::Acc acc[kMTiles][kNTiles][4];
#pragma unroll
  for (int i = 0; i < kMTiles; ++i)
#pragma unroll
    for (int j = 0; j < kNTiles; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0;

  // Prologue: fill kStages-1 stages.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < stages_total) load_stage(s);
    cp_async_commit();
  }

  // ldmatrix addresses: the swizzle of a row depends only on lane bits, so each thread's
  // addresses are a fixed base plus compile-time tile offsets.
  const int g = lane / 4, t = lane % 4, q = lane / 8, r8 = lane % 8;
  const int L = p.meta_lanes / 8;
  const uint32_t a_row_off = (warp_m * kWarpM + (q % 2) * 8 + r8) * kARowBytes;
  const int a_sw = (r8 >> 1) & 3;
  const uint32_t b_row_off = (warp_n * kWarpN + r8) * kBRowBytes;
  uint32_t a_ld[kStepsPerStage], b_ld[kStepsPerStage];
#pragma unroll
  for (int j = 0; j < kStepsPerStage; ++j) {
    a_ld[j] = a_row_off + (((j * 2 + q / 2) ^ a_sw) * 16);
    b_ld[j] = b_row_off + (((j * 4 + q) ^ r8) * 16);
  }
  const bool meta_lane = t < L;
  const uint32_t meta_ld = ((warp_m * (kWarpM / 16)) * p.meta_lanes + g * L + (meta_lane ? t : 0)) * kMetaGroup;
  const uint32_t meta_mt_stride = p.meta_lanes * kMetaGroup;

  for (int s = 0; s < stages_total; ++s) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    // Refill the slot consumed kStages-1 iterations ago.
    if (s + kStages - 1 < stages_total) load_stage(s + kStages - 1);
    cp_async_commit();

    const int slot = s % kStages;
    const uint32_t a_stage = sA_u32 + slot * kAStageBytes, b_stage = sB_u32 + slot * kBStageBytes;
    const uint32_t* m_src = sMeta + slot * meta_stage_words + meta_ld;
#pragma unroll
    for (int j = 0; j < kStepsPerStage; ++j) {
      uint32_t bf[kNTiles][4];
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
        ptx::ldmatrix_x4(bf[nt], b_stage + b_ld[j] + nt * 8 * kBRowBytes);
      uint32_t af[kMTiles][4], e[kMTiles];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        ptx::ldmatrix_x4(af[mt], a_stage + a_ld[j] + mt * 16 * kARowBytes);
        e[mt] = meta_lane ? m_src[mt * meta_mt_stride + j] : 0u;
      }
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) Traits::mma(acc[mt][nt], af[mt], bf[nt], e[mt]);
    }
  }
  cp_async_wait<0>();

  // Epilogue: each thread owns rows g, g+8 and columns 2t, 2t+1 of every m16n8 tile.
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int row = block_m + warp_m * kWarpM + mt * 16 + g + 8 * (q / 2);
        const int col = block_n + warp_n * kWarpN + nt * 8 + 2 * t + q % 2;
        if (row < p.m && col < p.n) gemm::epilogue_store<typename Traits::Acc>(p, batch, row, col,
                                                                  reinterpret_cast<const uint32_t&>(acc[mt][nt][q]));
      }
}

}  // namespace spmma::sm80
