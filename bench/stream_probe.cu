// SPDX-License-Identifier: BSD-3-Clause
// stream_probe — how fast one CTA per SM streams a compressed weight from HBM into shared memory
// through the copy engine (TMA), by the layout the weight is stored in (issue 12).
//
// Question. In the decode sweep the sm90 kernel's time does not depend on N or on B's tile: the
// A stream sets it, at 16-18 GB/s of weight per SM with 8 stages of 8 KB in flight
// (docs/benchmarks.md, "Cold L2 and the decode sweep"). Is that the access pattern of A's layout
// (row-major values: a stage reads 64 bytes from each of 128 rows, the rows `row_bytes` apart),
// or the pipeline depth? And would more SMs help? Patterns over the same bytes, nothing else in
// the kernel:
//   rows   the sm90 kernel's: per stage a TMA box of 128 rows x 64 B of the row-major matrix
//          (64-byte swizzle, L2 promotion 256 B: the kernel's own tensor-map settings);
//   tiles  the same bytes stored block by block: per stage one contiguous 8 KB block
//          (cp.async.bulk), as a layout made for streaming would hold them.
// and a third, balanced: the rows pattern with every SM busy whatever the tile count, each of
// the SMs' CTAs an equal share of all tiles' stages (as stream-K would split a decode weight).
// Each CTA walks 128-row tiles (one per CTA while there are more SMs than tiles) through K with S
// stages in flight, S = 4, 8 and 16; one thread produces, one warp consumes (waits for a stage,
// reads one word of it, frees it). Weights: bf16 14336 x 4096, 28672 x 8192, 11008 x 4096,
// 4096 x 14336 and 4096 x 4096 (values only, K bytes per row), rotated over copies so that the
// L2 (50 MiB) holds none of the weight a launch reads. Time: cudaEvents per launch on a stream
// held by a spinning kernel first (the window holds the GPU's time alone, as spmma bench's), 2
// warm-ups, median of 9; GB/s = bytes of the weight / time (1e9 B/s); beside it the
// device-to-device copy of the same bytes (HBM traffic: read + written). Answers on the H100:
// docs/benchmarks.md, "The weight stream alone" and "Held stream".
//
// Build: the CMake target spmma_stream_probe (sm_90a). Run: spmma_stream_probe
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.hpp"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/timer.cuh"

namespace {

constexpr int kRows = 128, kBoxBytes = 64, kStageBytes = kRows * kBoxBytes;  // 8 KB per stage

// f(tile, stage) for each stage this CTA streams: whole tiles blockIdx.x, + gridDim.x, ... or,
// balanced, an equal share of all tiles' stages in order (stage units b·U/G .. (b+1)·U/G - 1 of
// U = tiles x stages_per_tile, G CTAs: every SM busy whatever the tile count, as stream-K).
template <class F>
__device__ __forceinline__ void for_each_stage(bool balanced, int tiles, int stages_per_tile, F&& f) {
  if (!balanced) {
    for (int t = blockIdx.x; t < tiles; t += gridDim.x)
      for (int s = 0; s < stages_per_tile; ++s) f(t, s);
    return;
  }
  const int64_t units = static_cast<int64_t>(tiles) * stages_per_tile;
  const int64_t u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
  for (int64_t u = u0; u < u1; ++u) f(static_cast<int>(u / stages_per_tile), static_cast<int>(u % stages_per_tile));
}

template <bool Tiled>
__global__ void __launch_bounds__(64, 1)
    stream(const __grid_constant__ CUtensorMap map, const uint8_t* base, int tiles, int stages_per_tile, int S,
           bool balanced, unsigned* sink) {
  extern __shared__ uint8_t raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t{1023});
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + S * kStageBytes);
  uint64_t* empty = full + S;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) spmma::ptx::mbar_init(full + s, 1), spmma::ptx::mbar_init(empty + s, 1);
    spmma::ptx::mbar_fence_init();
  }
  __syncthreads();
  const uint32_t smem_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  if (threadIdx.x == 0) {  // producer
    int slot = 0;
    uint32_t phase = 1;
    for_each_stage(balanced, tiles, stages_per_tile, [&](int t, int s) {
        spmma::ptx::mbar_wait(empty + slot, phase);
        spmma::ptx::mbar_arrive_expect_tx(full + slot, kStageBytes);
        if constexpr (Tiled) {
          const uint8_t* src = base + (static_cast<int64_t>(t) * stages_per_tile + s) * kStageBytes;
          ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, smem + slot * kStageBytes, src,
                                     kStageBytes, full + slot);
        } else {
          spmma::ptx::tma_load_3d(smem_addr + slot * kStageBytes, &map, full + slot, s * kBoxBytes, t * kRows, 0);
        }
        if (++slot == S) slot = 0, phase ^= 1;
      });
  } else if (threadIdx.x >= 32) {  // consumer warp
    int slot = 0;
    uint32_t phase = 0;
    unsigned acc = 0;
    for_each_stage(balanced, tiles, stages_per_tile, [&](int, int) {
        spmma::ptx::mbar_wait(full + slot, phase);
        acc += reinterpret_cast<const unsigned*>(smem + slot * kStageBytes)[threadIdx.x % 32];
        __syncwarp();
        if (threadIdx.x == 32) spmma::ptx::mbar_arrive(empty + slot);
        if (++slot == S) slot = 0, phase ^= 1;
      });
    if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the reads
  }
}

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
  if (!fn || q != cudaDriverEntryPointSuccess) {
    std::fprintf(stderr, "no cuTensorMapEncodeTiled\n");
    std::exit(1);
  }
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

// The sm90 kernel's map of A's values (src/cuda/sm90/launch_sm90.cu, byte_map): bytes x rows x 1.
CUtensorMap rows_map(const void* base, int64_t row_bytes, int64_t rows) {
  CUtensorMap map{};
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(row_bytes), static_cast<cuuint64_t>(rows), 1};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(row_bytes), static_cast<cuuint64_t>(row_bytes * rows)};
  const cuuint32_t box[3] = {kBoxBytes, kRows, 1}, elem[3] = {1, 1, 1};
  const CUresult r = encode_fn()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<void*>(base), dims, strides, box, elem,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed (%d)\n", static_cast<int>(r));
    std::exit(1);
  }
  return map;
}

// Spins for `ns` so that the timed launch is queued before its start event is (the event window
// then holds the GPU's time alone, as spmma bench's HeldTimer).
__global__ void hold(uint64_t ns) { spmma::ptx::spin_ns(ns); }

template <class Launch>
float median_ms(Launch&& launch, int copies) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 2 * copies; ++i) launch(i % copies);  // warm-up: every copy once at least
  std::vector<float> t;
  for (int i = 0; i < 9; ++i) {
    hold<<<1, 1>>>(50'000);
    CK(cudaEventRecord(a));
    launch(i % copies);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  cudaEventDestroy(a), cudaEventDestroy(b);
  return t[t.size() / 2];
}

}  // namespace

int main() {
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device %s, %d SMs, L2 %d MiB\n", prop.name, sms, prop.l2CacheSize >> 20);
  unsigned* sink = nullptr;
  CK(cudaMalloc(&sink, 4));
  struct Weight {
    int64_t rows, row_bytes;
  };
  for (const Weight w : {Weight{14336, 4096}, Weight{28672, 8192}, Weight{11008, 4096}, Weight{4096, 14336}, Weight{4096, 4096}}) {
    const int64_t bytes = w.rows * w.row_bytes;
    const int copies = static_cast<int>(std::max<int64_t>(2, (4 * static_cast<int64_t>(prop.l2CacheSize)) / bytes + 1));
    std::vector<uint8_t*> buf(copies);
    std::vector<CUtensorMap> maps(copies);
    for (int c = 0; c < copies; ++c) {
      CK(cudaMalloc(&buf[c], bytes));
      CK(cudaMemset(buf[c], 0x3c + c, bytes));
      maps[c] = rows_map(buf[c], w.row_bytes, w.rows);
    }
    const int tiles = static_cast<int>(w.rows / kRows), stages = static_cast<int>(w.row_bytes / kBoxBytes);
    const int grid = std::min(tiles, sms);
    const float copy_ms = median_ms([&](int c) { CK(cudaMemcpyAsync(buf[(c + 1) % copies], buf[c], bytes, cudaMemcpyDeviceToDevice)); },
                                    copies);
    std::printf("weight %lld x %lld B (%.1f MB, %d copies): %d tiles of 128 rows, %d stages each, %d CTAs; "
                "copy %.0f GB/s of HBM traffic\n",
                static_cast<long long>(w.rows), static_cast<long long>(w.row_bytes), bytes / 1e6, copies, tiles, stages, grid,
                2 * bytes / (copy_ms * 1e6));
    for (int S : {4, 8, 16}) {
      const size_t smem = static_cast<size_t>(S) * kStageBytes + 1024 + 2 * S * 8;
      for (int pattern = 0; pattern < 3; ++pattern) {  // rows, tiles (by whole tiles), rows balanced over every SM
        const bool tiled = pattern == 1, balanced = pattern == 2;
        const int g = balanced ? sms : grid;
        const auto kernel = tiled ? stream<true> : stream<false>;
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
        const float ms =
            median_ms([&](int c) { kernel<<<g, 64, smem>>>(maps[c], buf[c], tiles, stages, S, balanced, sink); }, copies);
        std::printf("  %-8s S=%2d: %4d CTAs %7.1f us  %6.0f GB/s  %5.1f GB/s per CTA\n",
                    balanced ? "balanced" : tiled ? "tiles" : "rows", S, g, ms * 1e3, bytes / (ms * 1e6), bytes / (ms * 1e6) / g);
      }
    }
    for (uint8_t* p : buf) CK(cudaFree(p));
  }
  CK(cudaFree(sink));
  return 0;
}
