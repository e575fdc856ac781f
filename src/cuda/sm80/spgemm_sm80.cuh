// Sparse GEMM on mma.sp::ordered_metadata (sm_80 and later): D = epilogue(A·B), A 2:4 / 1:2 /
// 4:8 sparse, M x K; B stored K-contiguous per column (N x K row-major, "column-major K x N").
//
// Every instruction used here reads 32 bytes of packed A per row and 64 bytes of B per column
// (bf16/f16 m16n8k32, fp8/int8 m16n8k64, tf32 m16n8k16, int4 m16n8k128), so one kernel, written
// in bytes, serves every type: the type only picks the instruction (Traits::mma).
//
// Pipeline (per CTA, kStages deep, cp.async):  load A values + metadata + B of stage s+S-1
//   -> wait for stage s -> per instruction step: ldmatrix A, B; read metadata; mma.sp -> epilogue.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ptx_mma_sp.cuh"

namespace spmma::sm80 {

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
constexpr int kMetaGroup = kStepsPerStage;                     // fragment-ready group G
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

struct Params {
  const uint8_t* a;        // packed A values: m_pad rows x a_row_bytes, row-major
  const uint32_t* meta;    // fragment-ready metadata, group kMetaGroup, rows padded to kBlockM
  const uint8_t* b;        // B: column n at b + n * ldb_bytes (K contiguous)
  const void* c;
  void* d;
  const float* bias;       // M values or null
  int m, n, k;             // dense sizes
  int64_t a_row_bytes, ldb_bytes;
  int64_t ldc, ldd;        // elements
  int cd_col_major;
  float alpha, beta;
  int activation;          // 0 none, 1 relu, 2 gelu
  int meta_lanes;          // P = 8 · lanes per quad
  int64_t meta_groups;     // groups per 16-row block
  // batch strides (0: shared)
  int64_t batch_a_bytes, batch_meta_words, batch_b_bytes, batch_c, batch_d;
  int out_type;            // OutType below
  int m_pad, batch;        // rows of A as stored (a multiple of kBlockM) and the batch count
};

enum OutType : int { kOutF32 = 0, kOutBf16 = 1, kOutF16 = 2, kOutS32 = 3, kOutS8 = 4 };

// ---------------------------------------------------------------- small device helpers

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte copy global -> shared; bytes beyond `valid` (0 or 16) are zero-filled.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_8(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(smem_u32(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}

// Bank-conflict-free placement of 16-byte chunk `c` of smem row `r`: ldmatrix reads one chunk
// column of 8 consecutive rows, so the chunk index is XORed with a row-derived value.
__device__ __forceinline__ int a_chunk(int r, int c) { return c ^ ((r >> 1) & 3); }  // 64-byte rows
__device__ __forceinline__ int b_chunk(int r, int c) { return c ^ (r & 7); }         // 128-byte rows

// ---------------------------------------------------------------- epilogue

// The epilogue works in double: exact for every s32 accumulator and one rounding into D.
__device__ __forceinline__ double activate(double x, int act) {
  if (act == 1) return x > 0.0 ? x : 0.0;
  if (act == 2) return 0.5 * x * (1.0 + erf(x * 0.70710678118654752));
  return x;
}

__device__ __forceinline__ double load_c(int out_type, const void* c, int64_t idx) {
  switch (out_type) {
    case kOutF32: return static_cast<const float*>(c)[idx];
    case kOutBf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(c)[idx]);
    case kOutF16: return __half2float(static_cast<const __half*>(c)[idx]);
    case kOutS32: return static_cast<const int32_t*>(c)[idx];
    default: return static_cast<const int8_t*>(c)[idx];
  }
}

__device__ __forceinline__ void store_d(int out_type, void* d, int64_t idx, double v) {
  switch (out_type) {
    case kOutF32: static_cast<float*>(d)[idx] = static_cast<float>(v); break;
    case kOutBf16: static_cast<__nv_bfloat16*>(d)[idx] = __double2bfloat16(v); break;
    case kOutF16: static_cast<__half*>(d)[idx] = __double2half(v); break;
    case kOutS32: static_cast<int32_t*>(d)[idx] = __double2int_rn(fmin(fmax(v, -2147483648.0), 2147483647.0)); break;
    default: static_cast<int8_t*>(d)[idx] = static_cast<int8_t>(__double2int_rn(fmin(fmax(v, -128.0), 127.0))); break;
  }
}

// ---------------------------------------------------------------- the kernel

template <class Traits, class T>
__global__ void __launch_bounds__(kThreads, T::kMinBlocks) spgemm_kernel(Params p) {
  constexpr int kBlockN = T::kBlockN, kWarpN = T::kWarpN, kNTiles = T::kNTiles, kBStageBytes = T::kBStageBytes;
  extern __shared__ __align__(128) uint8_t smem[];
  uint8_t* sA = smem;
  uint8_t* sB = smem + kStages * kAStageBytes;
  uint32_t* sMeta = reinterpret_cast<uint32_t*>(sB + kStages * kBStageBytes);
  const int meta_stage_words = (kBlockM / 16) * p.meta_lanes * kMetaGroup;

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const int block_m = blockIdx.y * kBlockM, block_n = blockIdx.x * kBlockN;
  const int batch = blockIdx.z;
  const uint8_t* gA = p.a + batch * p.batch_a_bytes + static_cast<int64_t>(block_m) * p.a_row_bytes;
  const uint32_t* gMeta = p.meta + batch * p.batch_meta_words;
  const uint8_t* gB = p.b + batch * p.batch_b_bytes;
  const int k_steps = p.k / Traits::kInstK;
  const int stages_total = (k_steps + kStepsPerStage - 1) / kStepsPerStage;

  // Issues the cp.async copies of pipeline stage `s` (A rows, B columns, metadata records).
  auto load_stage = [&](int s) {
    const int slot = s % kStages;
    uint8_t* a_dst = sA + slot * kAStageBytes;
    uint8_t* b_dst = sB + slot * kBStageBytes;
    const int64_t a_off = static_cast<int64_t>(s) * kARowBytes;
    const int64_t b_off = static_cast<int64_t>(s) * kBRowBytes;
    for (int i = tid; i < kBlockM * (kARowBytes / 16); i += kThreads) {
      const int r = i / (kARowBytes / 16), c = i % (kARowBytes / 16);
      const bool ok = a_off + c * 16 < p.a_row_bytes;  // rows are padded to kBlockM: no row check
      cp_async_16(a_dst + r * kARowBytes + a_chunk(r, c) * 16, gA + r * p.a_row_bytes + (ok ? a_off + c * 16 : 0), ok);
    }
    for (int i = tid; i < kBlockN * (kBRowBytes / 16); i += kThreads) {
      const int r = i / (kBRowBytes / 16), c = i % (kBRowBytes / 16);
      const int col = block_n + r;
      const bool ok = col < p.n && b_off + c * 16 < static_cast<int64_t>(p.k) * Traits::kBBits / 8;
      cp_async_16(b_dst + r * kBRowBytes + b_chunk(r, c) * 16,
                  gB + (ok ? static_cast<int64_t>(col) * p.ldb_bytes + b_off + c * 16 : 0), ok);
    }
    // Metadata: one kMetaGroup-word record per (16-row block, metadata lane).
    uint32_t* m_dst = sMeta + slot * meta_stage_words;
    for (int i = tid; i < (kBlockM / 16) * p.meta_lanes; i += kThreads) {
      const int wb = i / p.meta_lanes, lane_p = i % p.meta_lanes;
      const int64_t gwb = block_m / 16 + wb;
      const int64_t idx = ((gwb * p.meta_groups + s) * p.meta_lanes + lane_p) * kMetaGroup;
      cp_async_8(m_dst + i * kMetaGroup, gMeta + idx);
    }
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

  const int g = lane / 4, t = lane % 4;
  const int L = p.meta_lanes / 8;
  for (int s = 0; s < stages_total; ++s) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    // Refill the slot consumed kStages-1 iterations ago.
    if (s + kStages - 1 < stages_total) load_stage(s + kStages - 1);
    cp_async_commit();

    const int slot = s % kStages;
    const uint8_t* a_src = sA + slot * kAStageBytes;
    const uint8_t* b_src = sB + slot * kBStageBytes;
    const uint32_t* m_src = sMeta + slot * meta_stage_words;
#pragma unroll
    for (int j = 0; j < kStepsPerStage; ++j) {
      uint32_t bf[kNTiles][4];
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        // Matrix q of the x4 is the q-th 16-byte block of this instruction's 64 B of B.
        const int r = warp_n * kWarpN + nt * 8 + lane % 8;
        const int c = j * 4 + lane / 8;
        ldmatrix_x4(bf[nt], b_src + r * kBRowBytes + b_chunk(r, c) * 16);
      }
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        uint32_t af[4];
        // Matrices: (rows 0-7, chunk 0), (rows 8-15, chunk 0), (rows 0-7, chunk 1), (rows 8-15, chunk 1).
        const int q = lane / 8;
        const int r = warp_m * kWarpM + mt * 16 + (q % 2) * 8 + lane % 8;
        const int c = j * 2 + q / 2;
        ldmatrix_x4(af, a_src + r * kARowBytes + a_chunk(r, c) * 16);
        const int wb = warp_m * (kWarpM / 16) + mt;
        const uint32_t e = t < L ? m_src[(wb * p.meta_lanes + g * L + t) * kMetaGroup + j] : 0u;
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) Traits::mma(acc[mt][nt], af, bf[nt], e);
      }
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
        if (row >= p.m || col >= p.n) continue;
        double v = static_cast<double>(p.alpha) * Traits::to_double(acc[mt][nt][q]);
        const int64_t cidx = batch * p.batch_c + (p.cd_col_major ? static_cast<int64_t>(col) * p.ldc + row
                                                                 : static_cast<int64_t>(row) * p.ldc + col);
        const int64_t didx = batch * p.batch_d + (p.cd_col_major ? static_cast<int64_t>(col) * p.ldd + row
                                                                 : static_cast<int64_t>(row) * p.ldd + col);
        if (p.beta != 0.f) v += static_cast<double>(p.beta) * load_c(p.out_type, p.c, cidx);
        if (p.bias) v += p.bias[row];
        store_d(p.out_type, p.d, didx, activate(v, p.activation));
      }
}

// ---------------------------------------------------------------- instruction traits

#define SPMMA_SM80_FLOAT_TRAITS(NAME, K, BBITS, WRAPPER)                                              \
  struct NAME {                                                                                       \
    using Acc = float;                                                                                \
    static constexpr int kInstK = K;                                                                  \
    static constexpr int kBBits = BBITS;                                                              \
    __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[4], \
                                               uint32_t e) {                                          \
      ::spmma::ptx::WRAPPER<0>(d, a, b, d, e);                                                        \
    }                                                                                                 \
    __device__ __forceinline__ static double to_double(float x) { return x; }                           \
  };
#define SPMMA_SM80_INT_TRAITS(NAME, K, BBITS, WRAPPER)                                                \
  struct NAME {                                                                                       \
    using Acc = uint32_t;                                                                             \
    static constexpr int kInstK = K;                                                                  \
    static constexpr int kBBits = BBITS;                                                              \
    __device__ __forceinline__ static void mma(uint32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[4], \
                                               uint32_t e) {                                          \
      ::spmma::ptx::WRAPPER<0>(d, a, b, d, e);                                                        \
    }                                                                                                 \
    __device__ __forceinline__ static double to_double(uint32_t x) { return static_cast<int32_t>(x); } \
  };

}  // namespace spmma::sm80
