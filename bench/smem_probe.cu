// SPDX-License-Identifier: BSD-3-Clause
// smem_probe — what the shared memory allows the sm90 kernel's sparse tile (issue 10).
//
// Question. wgmma.sp reads its dense operand B from shared memory, one instruction per 64 rows
// of A: a m64n256k32 bf16 instruction reads 2 KB of packed A and 16 KB of B for 1.05 MFLOP
// (dense-equivalent), about 1/64 byte per FLOP of B alone, which at the H100's sparse rate (8192
// FLOP per clock per SM) is 128 bytes per clock, the shared memory's bandwidth. The kernel's
// 128 x 256 tile also writes each stage into shared memory (TMA: A 8 KB, B 32 KB, metadata 2 KB
// per 64 of K), reads it (both math warpgroups read all of B: 72 KB), and gets it from the L2,
// B shared with the other CTA of a cluster by multicast. Which of these sets the tile's ceiling,
// for any kernel built on it (cuSPARSELt's is the same tile)? The probe runs them with nothing
// else:
//   math      the two math warpgroups' wgmma.sp pair per stage from the kernel's stage layout
//             (A rows x 64 B, 64-byte swizzle; B columns x 128 B, 128-byte swizzle), each
//             stage's instructions waited for as the kernel's (wgmma.wait_group 0), the stages
//             loaded once: the instruction's own rate, reads only;
//   sts       the stores alone: warps 1-3 of the producer warpgroup write 16 B per lane to shared
//             memory as fast as they issue: the write bandwidth;
//   math+sts  both at once: does a byte written cost the wgmmas a byte read?
//   copy      the copies alone: one thread issues each stage's three bulk copies (cp.async.bulk,
//             the TMA unit) into a ring of up to 5 stages, as the kernel's producer; the math
//             warps wait for each stage and free it: the rate stages arrive at;
//   pipe      the kernel's pipeline: the copies and the wgmmas of every stage, full and empty
//             barriers per stage;
//   pipe+meta the same with each stage's metadata words read from the stage (ConsumerView's);
// copies from one source for all CTAs (688 KB), from each CTA's own lines in the L2, or from
// HBM; copy and pipe in clusters of 1, 2 or 4 as the kernel's clusters along M (each CTA loads
// 1/cluster of B's stage and multicasts it, and frees each slot on every CTA of its cluster);
// math, copy and pipe for the kernel's 128 x 256 tile and for 256 x 128 (each math warpgroup
// two m64n128 per K step on the same B: 36 KB a stage instead of 42).
// One CTA per SM, 384 threads (the kernel's); bf16 and e4m3 (same bytes, twice the FLOPs per
// stage). Operands: valid non-zero values, valid ordered 2:4 metadata, mixed. Each launch is
// timed by events (median of 5 after 2 warm-ups) and by clock64 on every CTA (cycles: the mean
// over CTAs of the math warpgroup's, or the copier's or storers' loop), so the rates per clock
// do not depend on the clock the card chose. Answers on the H100: docs/benchmarks.md, "What
// shared memory and the L2 allow".
//
// Build: the CMake target spmma_smem_probe (sm_90a). Run: spmma_smem_probe [stages per launch
// [mode [type [ring]]]] (a mode or type named runs that one alone, e.g. for Nsight Compute; ring:
// the copy and pipe modes' stages in flight, 2-5, default 5).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_check.hpp"
#include "gemm_forms_sm90.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/wgmma.cuh"

namespace {

using spmma::ElemType;

// The CTA tile: the kernel's 128 x 256 (each math warpgroup 64 rows, one m64n256 per K step), or
// 256 x 128 (each 128 rows: two m64n128 per K step on the same B, two sets of 64 sums): 36 KB a
// stage instead of 42 for the same FLOPs, 80 KB of wgmma reads instead of 72. A stage: A rows x
// 64 B, B columns x 128 B, the largest metadata box (32 lanes x 2 words per 16-row block).
template <bool Tall>
struct Tile {
  static constexpr int rows = Tall ? 256 : 128, cols = Tall ? 128 : 256;
  static constexpr int a = rows * 64, b = cols * 128, meta = rows / 16 * 256, stage = a + b + meta;
  static constexpr const char* name = Tall ? "256x128" : "128x256";
};
using Wide = Tile<false>;  // the kernel's at its 256-wide tile (src/cuda/sm90/tiles.hpp)
static_assert(Wide::rows * Wide::cols == Tile<true>::rows * Tile<true>::cols, "the same FLOPs per stage");
constexpr int kSums = Wide::rows * Wide::cols / 256;  // a math thread's: 128 (or two sets of 64)
constexpr int kStageBytes = Wide::stage;              // a ring slot: 43,008 B, either tile's stage
static_assert(kStageBytes % 1024 == 0 && Tile<true>::stage <= kStageBytes && Tile<true>::stage % 1024 == 0,
              "the ring holds either tile's stages, aligned for the swizzle atoms");
constexpr int kRing = 5;              // the kernel's stages at this width; a launch may use fewer (its ring)
constexpr int kStsBytes = 12 * 1024;  // the storers' own region
constexpr int kThreads = 384;
constexpr int kSmem = 1024 + kRing * kStageBytes + kStsBytes + 256;
static_assert(kSmem <= 227 * 1024, "fits one CTA per SM");

enum Mode : int { kMath, kSts, kMathSts, kCopy, kPipe, kPipeMeta, kModes };
const char* const kModeNames[kModes] = {"math", "sts", "math+sts", "copy", "pipe", "pipe+meta"};
// Where the copies read: one 16-stage source for all CTAs (688 KB, the L2's); each CTA its own 2
// stages (86 KB, 11 MB in all: the L2's, every SM its own lines); each CTA its own 32 stages (1.4
// MB, 182 MB in all: past the 50 MB L2, so from HBM).
struct Source {
  const char* name;
  int stages;  // per CTA
  bool per_cta;
};
constexpr Source kSources[] = {{"shared", 16, false}, {"l2", 2, true}, {"hbm", 32, true}};
constexpr int kMaxSrcStages = 32;

struct CtaResult {
  unsigned long long math_cycles, copy_cycles, sts_cycles, sts_bytes;
  float sink;
};

// Valid ordered 2:4 metadata, mixed per nibble (bench/mma_peak.cu's rule): the math's registers
// and the stages' metadata regions (pipe+meta).
__host__ __device__ uint32_t meta_word(uint32_t seed) {
  constexpr uint32_t kPairs = 0xEDC984;  // the six nibbles 0x4, 0x8, 0xC, 0x9, 0xD, 0xE
  uint32_t r = seed * 2654435761u + 0x5bd1e995u, e = 0;
  for (int i = 0; i < 8; ++i) {
    e |= ((kPairs >> (4 * (r % 6u))) & 0xFu) << (4 * i);
    r = r / 6u + (r ^ (r >> 15)) * 2246822519u;
  }
  return e;
}

template <ElemType T, bool Tall>
__global__ void __launch_bounds__(kThreads, 1) probe(const uint8_t* src, int src_stages, int64_t cta_stride, int mode,
                                                     int stages, int cluster, int ring, CtaResult* out) {
  using F = spmma::sm90::Form<T, T>;
  using Tl = Tile<Tall>;
  extern __shared__ uint8_t raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t{1023});
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint8_t* sts_region = smem + kRing * kStageBytes;
  uint64_t* full = reinterpret_cast<uint64_t*>(sts_region + kStsBytes);
  uint64_t* empty = full + kRing;
  volatile int* done = reinterpret_cast<volatile int*>(empty + kRing);
  const bool copies = mode == kCopy || mode == kPipe || mode == kPipeMeta, math = mode != kSts && mode != kCopy;
  // In a cluster (the kernel's clusters along M): every CTA loads 1/cluster of B's stage and
  // multicasts it to all, and each math warp frees a slot on every CTA's empty barrier.
  const int rank = cluster > 1 ? static_cast<int>(spmma::ptx::cluster_rank()) : 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kRing; ++s) spmma::ptx::mbar_init(full + s, 1), spmma::ptx::mbar_init(empty + s, 8 * cluster);
    *done = 0;
    spmma::ptx::mbar_fence_init();
  }
  if (cluster > 1)
    spmma::ptx::cluster_sync();
  else
    __syncthreads();
  const int wg = threadIdx.x / 128, lane = threadIdx.x % 32;
  auto copy_stage = [&](int slot, int s) {
    uint8_t* dst = smem + slot * Tl::stage;
    const uint8_t* from = src + blockIdx.x * cta_stride + (s % src_stages) * Tl::stage;
    spmma::ptx::mbar_arrive_expect_tx(full + slot, Tl::stage);
    ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, dst, from, Tl::a, full + slot);
    if (cluster == 1) {
      ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, dst + Tl::a, from + Tl::a,
                                 Tl::b, full + slot);
    } else {
      const int share = Tl::b / cluster;
      ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, dst + Tl::a + rank * share,
                                 from + Tl::a + rank * share, share, full + slot,
                                 static_cast<uint16_t>((1u << cluster) - 1));
    }
    ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, dst + Tl::a + Tl::b,
                               from + Tl::a + Tl::b, Tl::meta, full + slot);
  };
  CtaResult r{};
  if (wg == 0) {
    if (threadIdx.x == 0) {
      const long long t0 = clock64();
      if (copies) {
        int slot = 0;
        uint32_t phase = 1;
        for (int s = 0; s < stages; ++s) {
          spmma::ptx::mbar_wait(empty + slot, phase);
          copy_stage(slot, s);
          if (++slot == ring) slot = 0, phase ^= 1;
        }
      } else if (math) {
        for (int s = 0; s < kRing; ++s) copy_stage(s, s);  // the stages the math reads, once
      }
      r.copy_cycles = clock64() - t0;
    } else if (threadIdx.x >= 32 && (mode == kSts || mode == kMathSts)) {
      // 96 storers, 16 B per lane per store, over their region; alone: `stages` x 64 rounds; with
      // the math: until it is done.
      const uint32_t at = static_cast<uint32_t>(__cvta_generic_to_shared(sts_region)) + (threadIdx.x - 32) * 16;
      const uint32_t v = threadIdx.x * 0x9e3779b9u;
      unsigned long long bytes = 0;
      const long long t0 = clock64();
      for (long long i = 0;; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j)
          asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(at + ((j * 96 * 16) % (kStsBytes - 96 * 16))),
                       "r"(v), "r"(v + j), "r"(v ^ j), "r"(v + 3 * j)
                       : "memory");
        bytes += 8 * 16;
        if (mode == kSts ? i + 1 >= stages * 64LL : *done != 0) break;
      }
      r.sts_cycles = clock64() - t0;
      r.sts_bytes = bytes;
    }
  } else {
    const int c = wg - 1;
    uint32_t e0 = meta_word(blockIdx.x * kThreads + threadIdx.x),
             e1 = meta_word(~(blockIdx.x * kThreads + threadIdx.x));
    // pipe+meta: each stage's metadata words read from the stage as the kernel's ConsumerView
    // does (32 lanes per 16-row block: lane i's two words at 8i of its warp's 256-byte block).
    const int meta_off = Tl::a + Tl::b + (4 * c + (threadIdx.x / 32) % 4) * 256 + lane * 8;
    float acc[kSums];
#pragma unroll
    for (int i = 0; i < kSums; ++i) acc[i] = 0.f;
    if (math && !copies) {  // the stages loaded once
      for (int s = 0; s < kRing; ++s) spmma::ptx::mbar_wait(full + s, 0);
    }
    const long long t0 = clock64();
    int slot = 0;
    uint32_t phase = 0;
    for (int s = 0; s < stages; ++s) {
      if (copies) spmma::ptx::mbar_wait(full + slot, phase);
      if (math) {
        const uint32_t a = base + slot * Tl::stage + c * (Tl::rows / 2) * 64, b = base + slot * Tl::stage + Tl::a;
        const uint64_t da = spmma::ptx::smem_desc<64>(a), db = spmma::ptx::smem_desc<128>(b);
        if (mode == kPipeMeta) {
          const uint2 m = *reinterpret_cast<const uint2*>(smem + slot * Tl::stage + meta_off);
          e0 = m.x, e1 = m.y;
        }
        spmma::ptx::fence_operands(acc);
        spmma::ptx::wgmma_fence();
        if constexpr (Tall) {  // rows 128c .. + 63 and + 64 .. + 127, each against all of B
          auto& lo = *reinterpret_cast<float(*)[kSums / 2]>(acc);
          auto& hi = *reinterpret_cast<float(*)[kSums / 2]>(acc + kSums / 2);
          const uint64_t da1 = da + 64 * 64 / 16;
          F::template mma<Tl::cols>(lo, da, db, e0, true);
          F::template mma<Tl::cols>(hi, da1, db, e1, true);
          F::template mma<Tl::cols>(lo, da + 32 / 16, db + 64 / 16, e1, true);
          F::template mma<Tl::cols>(hi, da1 + 32 / 16, db + 64 / 16, e0, true);
        } else {
          F::template mma<Wide::cols>(acc, da, db, e0, true);
          F::template mma<Wide::cols>(acc, da + 32 / 16, db + 64 / 16, e1, true);
        }
        spmma::ptx::wgmma_commit();
        spmma::ptx::wgmma_wait<0>();
        spmma::ptx::fence_operands(acc);
      }
      if (copies) {
        spmma::ptx::mbar_arrive_if(lane == 0, empty + slot);
        for (int j = 1; j < cluster; ++j)
          spmma::ptx::mbar_arrive_cluster_if(lane == 0, spmma::ptx::in_cta(empty + slot, rank ^ j));
      }
      if (++slot == ring) slot = 0, phase ^= 1;
    }
    r.math_cycles = clock64() - t0;
    if (threadIdx.x == 128) *done = 1;
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kSums; ++i) sum += acc[i];
    r.sink = sum;
  }
  // One record per CTA: the first math thread's cycles, the copier's, the storers' (summed bytes).
  __shared__ unsigned long long sts_bytes, sts_cycles;
  if (threadIdx.x == 0) sts_bytes = 0, sts_cycles = 0;
  __syncthreads();
  if (r.sts_bytes) atomicAdd(&sts_bytes, r.sts_bytes), atomicMax(&sts_cycles, r.sts_cycles);
  __syncthreads();
  if (threadIdx.x == 0)
    out[blockIdx.x].copy_cycles = r.copy_cycles, out[blockIdx.x].sts_bytes = sts_bytes,
    out[blockIdx.x].sts_cycles = sts_cycles;
  if (threadIdx.x == 128) out[blockIdx.x].math_cycles = r.math_cycles, out[blockIdx.x].sink = r.sink;
  if (cluster > 1) spmma::ptx::cluster_sync();  // no CTA leaves while another may arrive on or write into it
}

// Source stages of valid, non-zero values (bf16 in [-2, 2], e4m3 finite, both signs).
std::vector<uint8_t> source(ElemType t) {
  std::vector<uint8_t> v(static_cast<size_t>(kMaxSrcStages) * kStageBytes);
  std::mt19937 g(12345);
  for (size_t i = 0; i < v.size(); i += 2) {
    const uint32_t x = g();
    if (t == ElemType::bf16) {
      const uint16_t h = static_cast<uint16_t>(((x & 1u) << 15) | ((0x7c + (x >> 1) % 5) << 7) | ((x >> 8) & 0x7f));
      std::memcpy(&v[i], &h, 2);
    } else {
      for (int b = 0; b < 2; ++b) {
        const uint32_t y = x >> (16 * b);
        v[i + b] = static_cast<uint8_t>(((y & 1u) << 7) | ((4 + (y >> 1) % 8) << 3) | ((y >> 4) & 7));
      }
    }
  }
  // Each stage's metadata region (the wide tile's place: pipe+meta, which runs that tile, reads it):
  // valid ordered 2:4 nibbles.
  for (int st = 0; st < kMaxSrcStages; ++st)
    for (int w = 0; w < Wide::meta / 4; ++w) {
      const uint32_t e = meta_word(g());
      std::memcpy(&v[static_cast<size_t>(st) * kStageBytes + Wide::a + Wide::b + 4 * w], &e, 4);
    }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each row as it is measured
  const int stages = argc > 1 ? std::atoi(argv[1]) : 16384;
  const char* only_mode = argc > 2 ? argv[2] : nullptr;
  const char* only_type = argc > 3 ? argv[3] : nullptr;
  const int ring = argc > 4 ? std::atoi(argv[4]) : kRing;  // stages in flight of copy and pipe
  if (ring < 2 || ring > kRing) {
    std::fprintf(stderr, "ring %d: 2 .. %d stages\n", ring, kRing);
    return 1;
  }
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device %s, %d SMs; %d stages per CTA per launch, %d in flight; stage %d B (A %d, B %d, metadata %d)\n",
              prop.name, sms, stages, ring, kStageBytes, Wide::a, Wide::b, Wide::meta);
  CtaResult* out = nullptr;
  CK(cudaMalloc(&out, sizeof(CtaResult) * sms));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::printf("%-5s %-7s %-9s %-6s %2s %4s %9s %10s %10s %11s %11s %11s %11s %9s\n", "type", "tile", "mode", "source",
              "cl", "ctas", "ms", "TFLOP/s", "FLOP/clk", "read B/clk", "copy B/clk", "sts B/clk", "smem B/clk",
              "L2 GB/s");
  for (const ElemType t : {ElemType::bf16, ElemType::e4m3}) {
    if (only_type && std::strcmp(only_type, t == ElemType::bf16 ? "bf16" : "e4m3") != 0) continue;
    // Every CTA's kMaxSrcStages stages (the hbm source's extent), each a copy of the same host stages.
    const std::vector<uint8_t> host = source(t);
    uint8_t* src = nullptr;
    CK(cudaMalloc(&src, host.size() * sms));
    for (int c = 0; c < sms; ++c)
      CK(cudaMemcpy(src + host.size() * c, host.data(), host.size(), cudaMemcpyHostToDevice));
    for (int mode = 0; mode < kModes; ++mode) {
      if (only_mode && std::strcmp(only_mode, kModeNames[mode]) != 0) continue;
      const bool math = mode != kSts && mode != kCopy, copies = mode == kCopy || mode == kPipe || mode == kPipeMeta;
      for (const bool tall : {false, true}) {
        if (tall && mode != kMath && mode != kCopy && mode != kPipe) continue;
        const auto kernel = t == ElemType::bf16 ? (tall ? probe<ElemType::bf16, true> : probe<ElemType::bf16, false>)
                                                : (tall ? probe<ElemType::e4m3, true> : probe<ElemType::e4m3, false>);
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
        // Per stage: 2 warpgroups x (2 instructions m64n256, or 4 m64n128) x (32 bf16 | 64 e4m3) of
        // dense K, each reading 2 KB of A and (16 | 8) KB of B.
        const double flop_stage = 2.0 * Wide::rows * Wide::cols * (t == ElemType::bf16 ? 64 : 128),
                     read_stage = tall ? 2 * 4 * (2048 + 8192) : 2 * 2 * (2048 + 16384);
        const int st_a = tall ? Tile<true>::a : Tile<false>::a, st_b = tall ? Tile<true>::b : Tile<false>::b,
                  st_meta = tall ? Tile<true>::meta : Tile<false>::meta, st = st_a + st_b + st_meta;
        for (const Source& so : kSources) {
          if (!copies && &so != kSources) continue;  // the stages loaded once: the shared source
          for (const int cluster : {1, 2, 4}) {
            if (!copies && cluster > 1) continue;
            const int64_t stride = so.per_cta ? static_cast<int64_t>(so.stages) * kStageBytes : 0;
            cudaLaunchConfig_t cfg{};
            cudaLaunchAttribute attr{};
            attr.id = cudaLaunchAttributeClusterDimension;
            attr.val.clusterDim.x = static_cast<unsigned>(cluster), attr.val.clusterDim.y = 1,
            attr.val.clusterDim.z = 1;
            cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = kSmem, cfg.attrs = &attr, cfg.numAttrs = 1;
            int ctas = sms;
            if (cluster > 1) {  // as many whole clusters as the GPU holds at once
              int n = 0;
              cfg.gridDim = dim3(static_cast<unsigned>(cluster));
              CK(cudaOccupancyMaxActiveClusters(&n, kernel, &cfg));
              ctas = std::min(sms, n * cluster);
            }
            cfg.gridDim = dim3(static_cast<unsigned>(ctas));
            std::vector<float> ms;
            std::vector<CtaResult> res(ctas);
            for (int i = 0; i < 7; ++i) {
              CK(cudaEventRecord(a));
              CK(cudaLaunchKernelEx(&cfg, kernel, static_cast<const uint8_t*>(src), so.stages, stride, mode, stages,
                                    cluster, ring, out));
              CK(cudaEventRecord(b));
              CK(cudaEventSynchronize(b));
              CK(cudaGetLastError());
              float m = 0;
              CK(cudaEventElapsedTime(&m, a, b));
              if (i >= 2) ms.push_back(m);
            }
            CK(cudaMemcpy(res.data(), out, sizeof(CtaResult) * ctas, cudaMemcpyDeviceToHost));
            std::sort(ms.begin(), ms.end());
            const double med = ms[ms.size() / 2];
            double math_cyc = 0, copy_cyc = 0, sts_cyc = 0, sts_bytes = 0;
            bool finite = true;
            for (const CtaResult& r : res) {
              math_cyc += static_cast<double>(r.math_cycles) / ctas,
                  copy_cyc += static_cast<double>(r.copy_cycles) / ctas;
              sts_cyc += static_cast<double>(r.sts_cycles) / ctas, sts_bytes += static_cast<double>(r.sts_bytes) / ctas;
              finite = finite && std::isfinite(r.sink);
            }
            const double span = math ? math_cyc : copies ? copy_cyc : sts_cyc;
            const double flop_clk = math ? flop_stage * stages / span : 0,
                         read_clk = math ? read_stage * stages / span : 0;
            const double copy_clk = copies ? static_cast<double>(st) * stages / span : 0;
            const double sts_clk = sts_cyc > 0 ? sts_bytes / sts_cyc : 0;
            // Bytes from the L2 (or HBM): a CTA's A and metadata, and its share of B.
            const double l2_stage = st_a + st_meta + static_cast<double>(st_b) / cluster;
            const double l2_gbps = copies ? l2_stage * stages * ctas / (med * 1e6) : 0;
            std::printf("%-5s %-7s %-9s %-6s %2d %4d %9.3f %10.1f %10.0f %11.1f %11.1f %11.1f %11.1f %9.0f%s\n",
                        t == ElemType::bf16 ? "bf16" : "e4m3", tall ? Tile<true>::name : Tile<false>::name,
                        kModeNames[mode], copies ? so.name : "-", cluster, ctas, med,
                        math ? flop_stage * stages * ctas / (med * 1e9) : 0.0, flop_clk, read_clk, copy_clk, sts_clk,
                        read_clk + copy_clk + sts_clk, l2_gbps, finite ? "" : "  (non-finite sums!)");
            if (!finite) return 2;
          }
        }
      }
    }
    CK(cudaFree(src));
  }
  CK(cudaFree(out));
  return 0;
}
