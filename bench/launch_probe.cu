// SPDX-License-Identifier: BSD-3-Clause
// launch_probe — where the host's time inside Plan::run goes (issue 10: at most 5 µs per call).
//
// Question. `spmma bench` reports Plan::run's host time (enqueue only) at a median of 4.8-6.3 µs
// by type on the H100 (docs/benchmarks.md). How much of it is the CUDA launch itself, which no
// library can avoid, and how much is spmma's own work (argument checks, the device guard, the
// error checks, tensor maps, the launch configuration)? Each case below is timed call by call
// with the host's steady clock, in batches enqueued on a stream held by a spinning kernel (as
// spmma bench's held window, without its events: the GPU runs nothing of the batch while it is
// enqueued, so no call waits for the queue), on an idle stream (each call alone, after a
// synchronize), and as `spmma bench` times it (a window of its own per call: a 100 µs spin, an
// event, the call, an event, a wait; and with a 1 ms spin):
//   launch <<<>>>           an empty kernel without parameters, the runtime's triple-chevron launch
//   Ex, sm90 params         cudaLaunchKernelEx of an empty kernel with the sm90 kernel's
//                           parameters (three CUtensorMaps and gemm::Params' size), no attribute
//   Ex + cluster 2          the same with a cluster of 2 CTAs
//   Ex + cluster 2 + PDL    and programmatic stream serialization (the sm90 plans' launch)
//   cuLaunchKernelEx ...    the driver's launch of the same, with both attributes, and with the sm90
//                           kernel's launch bounds and 200 KB of shared memory
//   Plan::run <shape>       spmma's call for a few plans (bf16 and e4m3 main kernel, the decode
//                           kernel), and the same call replayed from a CUDA graph of 64 of them
// and the small runtime calls Plan::run makes on its way (cudaGetDevice, cudaPeekAtLastError,
// cudaGetLastError) and spmma's check of a recent pointer (cuda::check_device_memory), timed as
// the mean over 100000 calls. Median, 10th and 90th percentile of
// 64 x 40 calls per case, µs. Answers on the H100: docs/benchmarks.md, "Plan::run's host time".
//
// Build: the CMake target spmma_launch_probe. Run: spmma_launch_probe
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "api/device_check.cuh"
#include "cuda_check.hpp"
#include "spmma/matmul.hpp"

namespace {

constexpr int kBatch = 64, kBatches = 40;

struct alignas(64) Map {
  unsigned char bytes[128];
};
// gemm::Params' size (src/cuda/common/gemm_params.cuh; sizeof on the host: 240 bytes).
// int64s, 3 bools, 2 floats and 2 one-byte enums, padded: 208 bytes.
struct Params {
  unsigned char bytes[208];
};

__global__ void empty_kernel() {}
__global__ void sm90_shaped(const __grid_constant__ Map a, const __grid_constant__ Map b,
                            const __grid_constant__ Map meta, const __grid_constant__ Params p) {}
// The same with the sm90 kernel's launch bounds, launched with its 200 KB of shared memory.
__global__ void __launch_bounds__(384, 1) sm90_shaped_smem(const __grid_constant__ Map a, const __grid_constant__ Map b,
                                                            const __grid_constant__ Map meta,
                                                            const __grid_constant__ Params p) {}
constexpr int kSm90Smem = 200 * 1024;

__global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Stats {
  double p10, median, p90;
  int kept_batches;
};

enum class Mode { held, idle, window };

// Times f call by call. held: batches of kBatch calls enqueued behind a spinning kernel (a batch
// whose spin ended before the batch was enqueued is left out: the GPU ran the calls while they
// were enqueued); idle: one call at a time on an idle stream; window: as `spmma bench` times a
// call (tools/bench_gpu.cu, HeldTimer): a spin of hold_us, an event, the call, an event, then a
// wait for the second event, kBatch x kBatches times.
Stats time_calls(cudaStream_t s, Mode mode, const std::function<void()>& f, unsigned long long hold_us = 100) {
  std::vector<double> t;
  int kept = 0;
  cudaEvent_t spun, e0, e1;
  CK(cudaEventCreateWithFlags(&spun, cudaEventDisableTiming));
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int w = 0; w < 8; ++w) f();  // warm-up
  CK(cudaStreamSynchronize(s));
  for (int b = 0; b < kBatches; ++b) {
    std::vector<double> bt;
    bool late = false;
    if (mode == Mode::held) {
      spin<<<1, 1, 0, s>>>(4'000'000);  // 4 ms: longer than a batch of 64 calls takes to enqueue
      CK(cudaEventRecord(spun, s));
    }
    for (int i = 0; i < kBatch; ++i) {
      if (mode == Mode::idle) CK(cudaStreamSynchronize(s));
      if (mode == Mode::window) {
        spin<<<1, 1, 0, s>>>(hold_us * 1000);
        CK(cudaGetLastError());
        CK(cudaEventRecord(e0, s));
      }
      const double t0 = now_us();
      f();
      bt.push_back(now_us() - t0);
      if (mode == Mode::window) {
        CK(cudaEventRecord(e1, s));
        late = late || cudaEventQuery(e0) == cudaSuccess;
        (void)cudaGetLastError();
        CK(cudaEventSynchronize(e1));
      }
    }
    late = late || (mode == Mode::held && cudaEventQuery(spun) == cudaSuccess);
    CK(cudaStreamSynchronize(s));
    if (late) continue;
    ++kept;
    t.insert(t.end(), bt.begin(), bt.end());
  }
  CK(cudaEventDestroy(spun));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaGetLastError());
  if (t.empty()) return {0, 0, 0, 0};
  std::sort(t.begin(), t.end());
  const auto at = [&](double q) { return t[static_cast<size_t>(q * (t.size() - 1))]; };
  return {at(0.1), at(0.5), at(0.9), kept};
}

double mean_call_us(const std::function<void()>& f) {
  constexpr int n = 100000;
  for (int i = 0; i < 1000; ++i) f();
  const double t0 = now_us();
  for (int i = 0; i < n; ++i) f();
  return (now_us() - t0) / n;
}

void report(const char* what, cudaStream_t s, const std::function<void()>& f) {
  const Stats h = time_calls(s, Mode::held, f), i = time_calls(s, Mode::idle, f), w = time_calls(s, Mode::window, f),
              w1 = time_calls(s, Mode::window, f, 1000);
  std::printf("%-46s held %5.2f [%5.2f %5.2f] (%2d)  idle %5.2f [%5.2f %5.2f]  window %5.2f [%5.2f %5.2f] (%2d)  1 ms %5.2f [%5.2f %5.2f]\n",
              what, h.median, h.p10, h.p90, h.kept_batches, i.median, i.p10, i.p90, w.median, w.p10, w.p90,
              w.kept_batches, w1.median, w1.p10, w1.p90);
  std::fflush(stdout);
}

struct Case {
  spmma::ElemType type;
  int64_t m, n, k;
};

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("launch_probe on %s; host µs per call: median [10th 90th percentile]\n", prop.name);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // Small runtime calls, mean over 100000.
  int dev = 0;
  std::printf("cudaGetDevice            %6.3f\n", mean_call_us([&] { (void)cudaGetDevice(&dev); }));
  std::printf("cudaPeekAtLastError      %6.3f\n", mean_call_us([&] { (void)cudaPeekAtLastError(); }));
  std::printf("cudaGetLastError         %6.3f\n", mean_call_us([&] { (void)cudaGetLastError(); }));
  std::printf("cudaSetDevice (same)     %6.3f\n", mean_call_us([&] { (void)cudaSetDevice(0); }));

  const Map map{};
  const Params params{};
  report("launch <<<132, 384>>>, no parameters", s, [&] { empty_kernel<<<132, 384, 0, s>>>(); });
  report("sm90-shaped <<<132, 384>>> (624 B of parameters)", s,
         [&] { sm90_shaped<<<132, 384, 0, s>>>(map, map, map, params); });
  for (int attrs = 0; attrs <= 2; ++attrs) {
    cudaLaunchAttribute a[2]{};
    a[0].id = cudaLaunchAttributeClusterDimension;
    a[0].val.clusterDim.x = 2, a[0].val.clusterDim.y = 1, a[0].val.clusterDim.z = 1;
    a[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a[1].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(132), cfg.blockDim = dim3(384), cfg.stream = s, cfg.attrs = a, cfg.numAttrs = attrs;
    const char* names[] = {"cudaLaunchKernelEx, sm90 params", "cudaLaunchKernelEx + cluster 2",
                           "cudaLaunchKernelEx + cluster 2 + PDL"};
    report(names[attrs], s, [&] { CK(cudaLaunchKernelEx(&cfg, sm90_shaped, map, map, map, params)); });
  }
  {
    cudaFunction_t fn;
    CK(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(&sm90_shaped)));
    CUlaunchAttribute a[2]{};
    a[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a[0].value.clusterDim.x = 2, a[0].value.clusterDim.y = 1, a[0].value.clusterDim.z = 1;
    a[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a[1].value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = 132, cfg.gridDimY = 1, cfg.gridDimZ = 1, cfg.blockDimX = 384, cfg.blockDimY = 1, cfg.blockDimZ = 1;
    cfg.hStream = s, cfg.attrs = a, cfg.numAttrs = 2;
    void* args[] = {const_cast<Map*>(&map), const_cast<Map*>(&map), const_cast<Map*>(&map), const_cast<Params*>(&params)};
    PFN_cuLaunchKernelEx_v11060 launch = nullptr;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", reinterpret_cast<void**>(&launch), 11060, cudaEnableDefault, &q));
    report("cuLaunchKernelEx + cluster 2 + PDL", s, [&] {
      if (launch(&cfg, reinterpret_cast<CUfunction>(fn), args, nullptr) != CUDA_SUCCESS) std::exit(1);
    });
    CK(cudaFuncSetAttribute(sm90_shaped_smem, cudaFuncAttributeMaxDynamicSharedMemorySize, kSm90Smem));
    CK(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(&sm90_shaped_smem)));
    cfg.sharedMemBytes = kSm90Smem;
    report("cuLaunchKernelEx + cluster 2 + PDL, 200 KB smem", s, [&] {
      if (launch(&cfg, reinterpret_cast<CUfunction>(fn), args, nullptr) != CUDA_SUCCESS) std::exit(1);
    });
  }

  // Plan::run as spmma bench calls it: B column-major, D column-major, plain epilogue.
  spmma::Handle h(spmma::Device::gpu);
  const Case cases[] = {{spmma::ElemType::bf16, 4096, 2048, 4096},
                        {spmma::ElemType::e4m3, 4096, 2048, 4096},
                        {spmma::ElemType::bf16, 4096, 16, 4096},
                        {spmma::ElemType::e4m3, 4096, 16, 4096}};
  for (const Case& c : cases) {
    spmma::MatmulDesc d;
    d.m = c.m, d.n = c.n, d.k = c.k;
    d.a_type = d.b_type = c.type;
    d.c_type = d.d_type = spmma::ElemType::bf16;
    d.b_order = spmma::Order::col_major, d.cd_order = spmma::Order::col_major;
    const size_t eb = c.type == spmma::ElemType::bf16 ? 2 : 1;
    std::vector<unsigned char> ha(static_cast<size_t>(c.m * c.k) * eb, 0);
    // 2:4 pattern with nonzero values: keep elements 0 and 1 of every 4 (0x38 is 1.0 in e4m3 and
    // in bf16's high byte 0x3f80 would be; any nonzero byte will do for a timing).
    for (size_t i = 0; i < ha.size(); i += 4 * eb)
      for (size_t j = 0; j < 2 * eb; ++j) ha[i + j] = 0x38;
    void *da, *db, *dd;
    CK(cudaMalloc(&da, ha.size()));
    CK(cudaMemcpy(da, ha.data(), ha.size(), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&db, static_cast<size_t>(c.k * c.n) * eb));
    CK(cudaMemset(db, 0, static_cast<size_t>(c.k * c.n) * eb));
    CK(cudaMalloc(&dd, static_cast<size_t>(c.m * c.n) * 2));
    spmma::SparseMatrix sa = spmma::compress(h, d, da, d.k, 0, spmma::PruneMode::check, s);
    spmma::Plan plan(h, d);
    const std::string what = std::string("Plan::run ") + (c.type == spmma::ElemType::bf16 ? "bf16 " : "e4m3 ") +
                             std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
    report(what.c_str(), s, [&] { plan.run(sa, db, nullptr, dd, 1.f, 0.f, nullptr, nullptr, s); });
    if (&c == &cases[0])
      std::printf("check_device_memory (a recent pointer) %6.3f\n",
                  mean_call_us([&] { spmma::cuda::check_device_memory(db, 64, 0, "b"); }));
    std::printf("    %s\n", plan.describe().c_str());
    {
      // The same runs replayed from a CUDA graph: kBatch of them captured once, the graph launched
      // (host time of cudaGraphLaunch on an idle stream, median of 20).
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < kBatch; ++i) plan.run(sa, db, nullptr, dd, 1.f, 0.f, nullptr, nullptr, s);
      CK(cudaStreamEndCapture(s, &g));
      CK(cudaGraphInstantiate(&ge, g, 0));
      std::vector<double> t;
      for (int i = 0; i < 23; ++i) {
        CK(cudaStreamSynchronize(s));
        const double t0 = now_us();
        CK(cudaGraphLaunch(ge, s));
        if (i >= 3) t.push_back(now_us() - t0);
      }
      CK(cudaStreamSynchronize(s));
      std::sort(t.begin(), t.end());
      std::printf("    a CUDA graph of %d runs: cudaGraphLaunch %.2f us, %.3f us per run\n", kBatch, t[t.size() / 2],
                  t[t.size() / 2] / kBatch);
      CK(cudaGraphExecDestroy(ge));
      CK(cudaGraphDestroy(g));
    }
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dd));
  }
  return 0;
}
