// Sparse GEMM on wgmma.mma_async.sp (sm_90a): D = epilogue(A·B), A 2:4 (1:2 for tf32) sparse,
// M x K; B stored K-contiguous per column (N x K row-major), as for the sm80 kernel.
//
// Every wgmma.sp form used here reads 32 bytes of packed A per row and 64 bytes of B per column
// per instruction (bf16/f16 k32, tf32 k16, fp8/int8 k64), so the kernel is written in bytes and
// the type only picks the instruction (Traits::mma).
//
// Warp specialisation, one CTA per SM:
//   warpgroup 0 (producer, one thread): per stage (2 K steps), TMA-loads A (kBlockM rows x 64 B,
//     64-byte swizzle), B (BlockN columns x 128 B, 128-byte swizzle) and the stage's
//     fragment-ready metadata group of the eight 16-row blocks, all completing on the stage's
//     `full` mbarrier;
//   warpgroups 1, 2 (math, 64 rows each): wait `full`, read their metadata words, issue 2
//     wgmma.sp on shared-memory descriptors, wait for them (see kernel), release the slot on its
//     `empty` mbarrier; the two math warpgroups keep the tensor cores busy in turn. Then the
//     epilogue through shared memory.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "common/gemm_params.cuh"
#include "ptx_wgmma_sp.cuh"

namespace spmma::sm90 {

// ---------------------------------------------------------------- tile constants
constexpr int kConsumers = 2;                         // math warpgroups
constexpr int kBlockM = 64 * kConsumers;              // 128 rows of D per CTA
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kStepsPerStage = 2;                     // wgmma K steps per pipeline stage
constexpr int kABytesPerStep = 32;                    // packed A bytes per row per instruction
constexpr int kBBytesPerStep = 64;                    // B bytes per column per instruction
constexpr int kARowBytes = kStepsPerStage * kABytesPerStep;   // 64: one 64-byte swizzle atom row
constexpr int kBRowBytes = kStepsPerStage * kBBytesPerStep;   // 128: one 128-byte swizzle atom row
constexpr int kAStageBytes = kBlockM * kARowBytes;            // 8 KiB
constexpr int kMetaStageBytes = (kBlockM / 16) * 256;  // eight 16-row blocks' metadata groups: P <= 32 lanes x 2 words
constexpr int kSmemLimit = 227 * 1024;
constexpr int kMaxStages = 8;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
// fp8 (promoted): stages summed in the tensor cores between f32 adds. Every 2 stages measured no
// faster than every stage on the H100 (8192^3: 1439-1451 vs 1428-1472 TFLOP/s), so the more
// accurate choice stays.
constexpr int kPromoteEvery = 1;
static_assert(kStepsPerStage == gemm::kMetaGroup, "a stage holds one fragment-ready metadata group");
static_assert(kBlockM == gemm::kRowPad, "A's rows are padded to the CTA tile");

template <int BlockN>
struct Tile {
  static constexpr int kBlockN = BlockN;
  static constexpr int kBStageBytes = BlockN * kBRowBytes;
  static constexpr int kStageBytes = kAStageBytes + kBStageBytes + kMetaStageBytes;
  static constexpr int kStages = (kSmemLimit - 2048) / kStageBytes > kMaxStages ? kMaxStages : (kSmemLimit - 2048) / kStageBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes + 2048;  // + 1024-byte alignment slack + barriers
  static constexpr int kAccRegs = BlockN / 2;                      // m64nN: N/2 accumulators per thread
  static constexpr int kTileLd = BlockN + 8;  // epilogue tile row (words): 8 pad words keep the 8-byte stores conflict-free
  static_assert(kConsumers * 64 * kTileLd * 4 <= kStages * kStageBytes, "the epilogue tiles fit in the pipeline buffers");
  static_assert(kStageBytes % 1024 == 0, "stages keep 1024-byte alignment for the swizzle atoms");
  static_assert(kStages >= 3, "a pipeline");
};

// ---------------------------------------------------------------- PTX helpers (sm_90)

using gemm::smem_u32;

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Blocks until the phase with parity `parity` of the barrier has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!done);
}

// TMA: box (x bytes, y rows, z batch) of a 3-D uint8 tensor map into shared memory.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int x, int y, int z) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(x), "r"(y), "r"(z)
      : "memory");
}
// Plain bulk copy (no tensor map): `bytes` (a multiple of 16) from 16-byte aligned global memory.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Tells the compiler an accumulator register may change here (wgmma writes it asynchronously),
// so no read of it moves across a wait.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void fence_operand(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }

// Shared-memory matrix descriptor, K-major, swizzled: start address, leading byte offset (unused
// for swizzled K-major: 16), stride byte offset = one 8-row atom, layout 1 = 128-byte swizzle,
// 2 = 64-byte swizzle (docs/layouts.md). Start addresses are in 16-byte units, so a K step
// inside an atom adds bytes / 16.
template <int RowBytes>
__device__ __forceinline__ uint64_t smem_desc(uint32_t smem_addr) {
  static_assert(RowBytes == 64 || RowBytes == 128, "64- or 128-byte swizzle");
  constexpr uint64_t layout = RowBytes == 128 ? 1 : 2;
  return static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(8 * RowBytes >> 4) << 32) | (layout << 62);
}

// ---------------------------------------------------------------- the kernel

template <class Traits, class T>
__global__ void __launch_bounds__(kThreads, 1)
    spgemm_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                  const __grid_constant__ CUtensorMap tm_meta, const gemm::Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kBlockN = T::kBlockN, kStages = T::kStages;
  extern __shared__ uint8_t smem_raw[];
  // Swizzle atoms need 1024-byte alignment; dynamic shared memory only promises 16.
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;
  uint8_t* const smem = smem_raw + (base - raw);
  auto sA = [&](int slot) { return base + slot * T::kStageBytes; };
  auto sB = [&](int slot) { return sA(slot) + kAStageBytes; };
  auto sMeta = [&](int slot) { return sB(slot) + T::kBStageBytes; };
  const uint32_t bars = base + kStages * T::kStageBytes;
  auto full = [&](int slot) { return bars + 8 * slot; };
  auto empty = [&](int slot) { return bars + 8 * (kStages + slot); };

  const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4, lane = tid % 32;

  // Tile of this CTA: groups of kGroupM M tiles, walked M-fastest, so a wave of CTAs shares both
  // its A rows and its B columns in L2.
  const int m_tiles = p.m_pad / kBlockM, n_tiles = (p.n + kBlockN - 1) / kBlockN;
  const int group_size = p.group_m;  // chosen by heuristics.cu (at least 1)
  const int per_group = group_size * n_tiles, group = blockIdx.x / per_group, in_group = blockIdx.x % per_group;
  const int first_m = group * group_size, group_m = min(group_size, m_tiles - first_m);
  const int block_m = (first_m + in_group % group_m) * kBlockM, block_n = (in_group / group_m) * kBlockN;
  const int batch = p.batch0 + static_cast<int>(blockIdx.y);
  // One stage per metadata group: K steps padded to whole groups run on zero A and B with the
  // padding word's valid nibbles. With Group 2 an odd count gets one more stage: A and B past K
  // (TMA fills zeros) and no metadata copy (the slot keeps valid words, see below).
  // Split K: this CTA runs stages [s_begin, s_begin + count), one fragment-ready metadata group
  // (2 K steps) each; K steps padded to a whole group run on zero A and B (TMA fills zeros past
  // K) with the padding word's valid nibbles.
  const int split = blockIdx.z;
  const int s_begin = split * p.stages_per_split;
  const int count = min(static_cast<int>(p.meta_groups), s_begin + p.stages_per_split) - s_begin;

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full(s), 1);                 // the producer's expect_tx arrival (+ the copies' bytes)
      mbar_init(empty(s), kConsumers * 4);   // one arrival per math warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  const int P = p.meta_lanes;
  const uint32_t meta_group_bytes = static_cast<uint32_t>(P) * gemm::kMetaGroup * 4;  // one group of one 16-row block

  if (wg == 0) {
    // ------------------------------------------------------------ producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    if (warp == 0 && lane == 0) {
      const int a_z = p.batch_a_bytes ? batch : 0;
      for (int i = 0; i < count; ++i) {
        const int s = s_begin + i, slot = i % kStages;
        mbar_wait(empty(slot), ((i / kStages) & 1) ^ 1);  // round 0 passes at once
        mbar_expect_tx(full(slot), kAStageBytes + T::kBStageBytes + (kBlockM / 16) * meta_group_bytes);
        tma_load_3d(sA(slot), &tm_a, full(slot), s * kARowBytes, block_m, a_z);
        tma_load_3d(sB(slot), &tm_b, full(slot), s * kBRowBytes, block_n, batch);
        // The stage's metadata group of the CTA's eight 16-row blocks, stored back to back.
        tma_load_3d(sMeta(slot), &tm_meta, full(slot), s * meta_group_bytes, block_m / 16, a_z);
      }
    }
  } else {
    // ------------------------------------------------------------ math warpgroups
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    const int c = wg - 1;  // rows 64c .. 64c+63 of the CTA tile
    typename Traits::Acc acc[T::kAccRegs];
#pragma unroll
    for (int i = 0; i < T::kAccRegs; ++i) acc[i] = 0;
    // fp8: the tensor cores keep fewer accumulator bits than f32 (docs/conformance.md), so every
    // kPromoteEvery stages sum into `part`, which is then added to `acc` in f32 on the CUDA cores
    // ("promotion": every 2 instructions, 64 products per output).
    typename Traits::Acc part[Traits::kPromote ? T::kAccRegs : 1];

    // This thread's metadata words inside a 16-row block's group: selector 0 names the lanes
    // t < L of each quad (the others pass a copy, which the hardware ignores).
    const int g = lane / 4, t = lane % 4, L = P / 8;
    const uint32_t meta_off = (4 * c + warp) * meta_group_bytes + (g * L + min(t, L - 1)) * gemm::kMetaGroup * 4;

    for (int i = 0; i < count; ++i) {
      const int slot = i % kStages;
      mbar_wait(full(slot), (i / kStages) & 1);
      const uint2 e = *reinterpret_cast<const uint2*>(smem + (sMeta(slot) - base) + meta_off);  // K steps 0, 1
      const uint64_t da = smem_desc<kARowBytes>(sA(slot) + c * 64 * kARowBytes), db = smem_desc<kBRowBytes>(sB(slot));
#pragma unroll
      for (int j = 0; j < T::kAccRegs; ++j) fence_operand(acc[j]);
      wgmma_fence();
      if constexpr (Traits::kPromote) {  // every kPromoteEvery-th stage starts `part` afresh
        Traits::template mma<kBlockN>(part, da, db, e.x, i % kPromoteEvery != 0);
        Traits::template mma<kBlockN>(part, da + kABytesPerStep / 16, db + kBBytesPerStep / 16, e.y, true);
      } else {
        Traits::template mma<kBlockN>(acc, da, db, e.x, true);
        Traits::template mma<kBlockN>(acc, da + kABytesPerStep / 16, db + kBBytesPerStep / 16, e.y, true);
      }
      wgmma_commit();
      // Wait for this stage's wgmmas before the next: wgmma reads its metadata register when it
      // executes, and the next stage's load would overwrite it (measured: keeping a stage in
      // flight across the loop gives wrong results). The other math warpgroup keeps the tensor
      // cores busy meanwhile.
      wgmma_wait_all();
#pragma unroll
      for (int j = 0; j < T::kAccRegs; ++j) fence_operand(acc[j]);
      if (lane == 0) mbar_arrive(empty(slot));
      if constexpr (Traits::kPromote) {
        if (i % kPromoteEvery == kPromoteEvery - 1 || i == count - 1) {
#pragma unroll
          for (int j = 0; j < T::kAccRegs; ++j) {
            fence_operand(part[j]);
            acc[j] += part[j];
          }
        }
      }
    }

    // Epilogue in two steps. The accumulators go to shared memory (the pipeline's buffers are
    // free once both math warpgroups are done), then the warpgroup writes its 64 x BlockN tile
    // of D from one compact loop, instead of BlockN/2 unrolled copies of the epilogue.
    // Accumulator e of this thread is row 16·warp + g + 8((e/2)%2), column 8(e/4) + 2t + e%2.
    asm volatile("bar.sync 1, %0;\n" ::"n"(128 * kConsumers) : "memory");
    uint32_t* tile = reinterpret_cast<uint32_t*>(smem) + c * 64 * T::kTileLd;
#pragma unroll
    for (int e = 0; e < T::kAccRegs; e += 2) {
      const int r = 16 * warp + g + 8 * ((e / 2) % 2), col = 8 * (e / 4) + 2 * t;
      *reinterpret_cast<uint2*>(tile + r * T::kTileLd + col) = make_uint2(Traits::bits(acc[e]), Traits::bits(acc[e + 1]));
    }
    asm volatile("bar.sync %0, 128;\n" ::"r"(2 + c) : "memory");
    const int row0 = block_m + 64 * c, tid_wg = tid % 128;
    if (p.splits > 1) {
      // Split K: raw accumulators into this split's slice of the partial sums; the reduce kernel
      // adds the slices and applies the epilogue.
      uint32_t* out = static_cast<uint32_t*>(p.partial) + (static_cast<int64_t>(split) * p.batch + batch) * p.m_pad * p.n;
#pragma unroll 1
      for (int i = tid_wg; i < 64 * kBlockN; i += 128) {
        const int r = i / kBlockN, col = i % kBlockN;
        if (block_n + col < p.n) out[static_cast<int64_t>(row0 + r) * p.n + block_n + col] = tile[r * T::kTileLd + col];
      }
    } else if (gemm::vector_rows_ok(p)) {
      // Row-major D without C: 8 consecutive columns per thread, one 16-byte (bf16/f16) or two
      // (f32) stores; the row's tail past N element by element.
#pragma unroll 1
      for (int i = tid_wg; i < 64 * kBlockN / 8; i += 128) {
        const int r = i / (kBlockN / 8), col = (i % (kBlockN / 8)) * 8;
        if (row0 + r >= p.m) continue;
        const uint32_t* src = tile + r * T::kTileLd + col;
        double v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = Traits::to_double(src[j]);
        gemm::store_row8(p, batch, row0 + r, block_n + col, v);
      }
    } else {
      // Any layout: consecutive threads take consecutive elements along D's contiguous dimension.
#pragma unroll 1
      for (int i = tid_wg; i < 64 * kBlockN; i += 128) {
        const int r = p.cd_col_major ? i % 64 : i / kBlockN, col = p.cd_col_major ? i / 64 : i % kBlockN;
        if (row0 + r < p.m && block_n + col < p.n)
          gemm::epilogue_store(p, batch, row0 + r, block_n + col, Traits::to_double(tile[r * T::kTileLd + col]));
      }
    }
  }
#else
  __trap();
#endif
}

// ---------------------------------------------------------------- instruction traits

// One wgmma.sp form per type pair, at every N a tile uses; the wrappers come from the registry.
// PROMOTE: sum each stage apart and add it in f32 (fp8, whose wgmma accumulates with fewer bits).
#define SPMMA_SM90_TRAITS(NAME, ACC, TO_DOUBLE, K, TYPES, PROMOTE)                                         \
  struct NAME {                                                                                           \
    using Acc = ACC;                                                                                      \
    static constexpr int kInstK = K;                                                                      \
    static constexpr bool kPromote = PROMOTE;                                                             \
    template <int N>                                                                                      \
    __device__ __forceinline__ static void mma(ACC (&d)[N / 2], uint64_t a, uint64_t b, uint32_t e, bool acc) { \
      if constexpr (N == 64) ::spmma::ptx::wgmma_mma_async_sp_m64n64k##K##_##TYPES##_ss<0>(d, a, b, e, acc);   \
      else if constexpr (N == 128) ::spmma::ptx::wgmma_mma_async_sp_m64n128k##K##_##TYPES##_ss<0>(d, a, b, e, acc); \
      else if constexpr (N == 192) ::spmma::ptx::wgmma_mma_async_sp_m64n192k##K##_##TYPES##_ss<0>(d, a, b, e, acc); \
      else ::spmma::ptx::wgmma_mma_async_sp_m64n256k##K##_##TYPES##_ss<0>(d, a, b, e, acc);             \
    }                                                                                                     \
    /* accumulators pass through shared memory as raw 32-bit words */                                   \
    __device__ __forceinline__ static uint32_t bits(ACC v) { return reinterpret_cast<const uint32_t&>(v); } \
    __device__ __forceinline__ static double to_double(uint32_t w) {                                     \
      const ACC x = reinterpret_cast<const ACC&>(w);                                                      \
      return TO_DOUBLE;                                                                                   \
    }                                                                                                     \
  };

}  // namespace spmma::sm90
