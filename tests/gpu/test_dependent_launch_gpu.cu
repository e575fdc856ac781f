// SPDX-License-Identifier: BSD-3-Clause
// Programmatic dependent launch (PlanOptions::dependent_launch, the sm90 kernel's default): the
// kernel may start while the kernel before it in the stream still runs, and must then wait for it
// before it reads B (or anything). A kernel before that lets its dependents start at once and
// writes B only after a long spin (1 ms) shows whether spmma waits: without the wait spmma would read the
// old B. A control kernel, launched the same way without a wait, checks that the device does
// start the dependent early (else the test could not fail). Then layers back to back, each
// reading the last one's D as its B, as decode runs. Label `gpu`; skips where no sm90 kernel runs.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"
#include "gpu/gpu_test.hpp"
#include "gpu/layer_data.hpp"
#include "ptx/griddep.cuh"
#include "ptx/timer.cuh"
#include "test_util.hpp"

using namespace spmma;
using T = ElemType;

namespace {

// The kernel before: lets its dependents be scheduled at once, spins `ns`, then copies src to
// dst and notes when it finished.
__global__ void write_late(const uint8_t* src, uint8_t* dst, size_t n, uint64_t ns, unsigned long long* done_ns) {
#if __CUDA_ARCH__ >= 900
  ptx::allow_next_grid();
#endif
  ptx::spin_ns(ns);
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(done_ns, static_cast<unsigned long long>(ptx::globaltimer()));
}

// The control: launched as a dependent, no wait; notes when it started.
__global__ void note_start(unsigned long long* at) {
  if (threadIdx.x == 0) *at = ptx::globaltimer();
}

constexpr uint64_t kSpinNs = 1'000'000;  // 1 ms: far longer than a launch

void launch_write_late(const uint8_t* src, uint8_t* dst, size_t n, unsigned long long* done, cudaStream_t s) {
  write_late<<<4, 256, 0, s>>>(src, dst, n, kSpinNs, done);
}

using test::decode_desc;
using test::exact_values;

// D from the GPU (bits) against the CPU backend's on the same A (dense, pruned by compress) and B.
// Where the sums are exact (`exact`: both operands exact_values, K <= 2^12, so every partial sum
// fits f32's 24 bits) both round the same sum: equal bits. Where they are not (a layer fed with
// the last one's D), the two f32 sums (the GPU's order, split K's parts, against the CPU's) differ
// by some d <= 1e-5 of Σ|a·b|, and each is rounded once into bf16: |GPU - CPU| <= ulp/2 + d +
// ulp/2, one ulp of the result (2^-7 relative: bf16's 7 fraction bits) plus d. (2^-8, half an ulp
// at the foot of a binade, failed on the H100 on 2026-12-07 for the seeds 2066894425 and
// 393417703: one element of layer 2 each, exactly one ulp apart, their exact sums within 0.01 of
// a bf16 midpoint: docs/benchmarks.md, "The GPU suite on 1eb84dc".)
void expect_like_cpu(const MatmulDesc& d, const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                     const std::vector<uint16_t>& got, bool exact, const std::string& what) {
  Handle cpu(Device::cpu);
  SparseMatrix sc = compress(cpu, d, a.data(), 0, 0, PruneMode::magnitude);
  std::vector<uint16_t> want(got.size(), 0);
  Plan(cpu, d).run(sc, b.data(), want.data(), EpilogueArgs{});
  const Matrix ad = decompress(sc.to_host(0));
  int bad = 0;
  for (int64_t j = 0; j < d.n; ++j)
    for (int64_t i = 0; i < d.m; ++i) {
      const size_t idx = static_cast<size_t>(j * d.m + i);  // D column-major
      double mag = 0;
      for (int64_t k = 0; k < d.k; ++k)
        mag += std::fabs(decode(T::bf16, ad.at(i, k)) * decode(T::bf16, b[static_cast<size_t>(j * d.k + k)]));
      const double g = decode(T::bf16, got[idx]), w = decode(T::bf16, want[idx]);
      const bool ok = exact ? got[idx] == want[idx] : std::fabs(g - w) <= 0x1p-7 * std::fabs(w) + 1e-5 * mag;
      if (!ok && ++bad <= 5)
        ADD_FAILURE() << what << ": D(" << i << ", " << j << ") GPU " << g << ", CPU " << w << " (sum of |a*b| " << mag << ")";
    }
  EXPECT_EQ(bad, 0) << what;
}

class DependentLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    h_ = test::gpu_handle(why);
    if (!h_) GTEST_SKIP() << why;
    if (Plan(*h_, decode_desc(128, 16, 256)).info().kernel != KernelFamily::sm90)
      GTEST_SKIP() << "the sm90 kernel does not run here (programmatic dependent launch is its launch): "
                   << Plan(*h_, decode_desc(128, 16, 256)).describe();
    CK(cudaStreamCreate(&s_));
  }
  void TearDown() override {
    if (s_) cudaStreamDestroy(s_);
    if (h_) EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  std::unique_ptr<Handle> h_;
  cudaStream_t s_ = nullptr;
  cudaFuncAttributes attrs_{};
};

struct Dev {
  void* p = nullptr;
  explicit Dev(size_t n) { (void)cudaMalloc(&p, n); }
  ~Dev() { cudaFree(p); }
  template <class X>
  X* as() const { return static_cast<X*>(p); }
};

// The kernel before lets its dependents start and writes B 1 ms later: spmma, launched right
// after it, must compute with the new B. Several configurations: split K in a cluster (decode),
// clusters of 2 along M, a persistent grid; and the plain launch as a control.
TEST_F(DependentLaunch, TheKernelWaitsForTheKernelBeforeIt) {
  // The control: a dependent launched the same way, without a wait, starts before the kernel
  // before it has finished. Otherwise this test could not tell a wait from none.
  {
    Dev done(8), started(8);
    CK(cudaMemset(done.p, 0, 8));
    // Both kernels loaded first (a first launch loads its module, lazily, which can take longer than the spin).
    CK(cudaFuncGetAttributes(&attrs_, write_late));
    CK(cudaFuncGetAttributes(&attrs_, note_start));
    launch_write_late(nullptr, nullptr, 0, done.as<unsigned long long>(), s_);
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(1), cfg.blockDim = dim3(32), cfg.stream = s_;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr, cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, note_start, started.as<unsigned long long>()));
    CK(cudaStreamSynchronize(s_));
    unsigned long long t_done = 0, t_started = 0;
    CK(cudaMemcpy(&t_done, done.p, 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&t_started, started.p, 8, cudaMemcpyDeviceToHost));
    ASSERT_LT(t_started, t_done) << "the device did not start a programmatically dependent grid before the grid "
                                    "it depends on had finished: this test cannot tell whether spmma waits";
  }
  struct Case {
    int64_t m, n, k;
    PlanOptions o;
    const char* what;
  };
  std::vector<Case> cases;
  cases.push_back({512, 16, 2048, {}, "decode (the heuristics' plan)"});
  PlanOptions c2;
  c2.cluster_m = 2, c2.tile_n = 128, c2.splits = 1;
  cases.push_back({1024, 128, 512, c2, "clusters of 2 along M"});
  PlanOptions pers;
  pers.grid = GridKind::persistent, pers.tile_n = 64;
  cases.push_back({1024, 200, 256, pers, "a persistent grid"});
  PlanOptions plain;
  plain.dependent_launch = false;
  cases.push_back({512, 16, 2048, plain, "launched plainly (dependent_launch = false)"});
  std::mt19937_64 rng(test::seed());
  for (const Case& c : cases) {
    const MatmulDesc d = decode_desc(c.m, c.n, c.k);
    const std::vector<uint16_t> a = exact_values(static_cast<size_t>(c.m * c.k), rng),
                                b_old = exact_values(static_cast<size_t>(c.n * c.k), rng),
                                b_new = exact_values(static_cast<size_t>(c.n * c.k), rng);
    const size_t b_bytes = b_new.size() * 2, d_bytes = static_cast<size_t>(c.m * c.n) * 2;
    Dev ga(a.size() * 2), gb(b_bytes), gnew(b_bytes), gd(d_bytes), done(8);
    CK(cudaMemcpy(ga.p, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gb.p, b_old.data(), b_bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gnew.p, b_new.data(), b_bytes, cudaMemcpyHostToDevice));
    CK(cudaMemset(gd.p, 0xFF, d_bytes));  // NaN
    CK(cudaMemset(done.p, 0, 8));
    const SparseMatrix sa = compress(*h_, d, ga.p, 0, 0, PruneMode::magnitude, s_);
    const Plan plan(*h_, d, c.o);
    EXPECT_EQ(plan.info().dependent_launch, c.o.dependent_launch) << plan.describe();
    plan.run(sa, gb.p, gd.p, EpilogueArgs{}, nullptr, s_);  // its kernel loaded, B's tensor map made
    CK(cudaStreamSynchronize(s_));
    CK(cudaMemset(gd.p, 0xFF, d_bytes));
    launch_write_late(gnew.as<uint8_t>(), gb.as<uint8_t>(), b_bytes, done.as<unsigned long long>(), s_);
    plan.run(sa, gb.p, gd.p, EpilogueArgs{}, nullptr, s_);
    CK(cudaStreamSynchronize(s_));
    std::vector<uint16_t> got(static_cast<size_t>(c.m * c.n));
    CK(cudaMemcpy(got.data(), gd.p, d_bytes, cudaMemcpyDeviceToHost));
    expect_like_cpu(d, a, b_new, got, true, std::string(c.what) + ", " + plan.describe());
  }
}

// Layers back to back, as decode runs them: each layer's B is the last layer's D (D column-major,
// N x M row-major, is the next layer's B with K = M), every call enqueued before the first ends.
// Each layer is compared with the CPU on the GPU's own input to it.
TEST_F(DependentLaunch, LayersBackToBackMatchTheCpu) {
  std::mt19937_64 rng(test::seed() + 1);
  const int64_t n = 16;
  const std::vector<int64_t> widths = {2048, 1024, 3072, 512};  // layer l: M = widths[l + 1], K = widths[l]
  std::vector<std::vector<uint16_t>> weights;
  std::vector<std::unique_ptr<Dev>> acts;  // acts[l]: layer l's B (N x widths[l])
  std::vector<SparseMatrix> sparse;
  std::vector<Plan> plans;
  for (size_t l = 0; l < widths.size(); ++l) {
    acts.push_back(std::make_unique<Dev>(static_cast<size_t>(n * widths[l]) * 2));
    CK(cudaMemset(acts.back()->p, 0xFF, static_cast<size_t>(n * widths[l]) * 2));  // NaN until written
  }
  const std::vector<uint16_t> x = exact_values(static_cast<size_t>(n * widths[0]), rng);
  CK(cudaMemcpy(acts[0]->p, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const MatmulDesc d = decode_desc(widths[l + 1], n, widths[l]);
    weights.push_back(exact_values(static_cast<size_t>(d.m * d.k), rng));
    Dev ga(weights.back().size() * 2);
    CK(cudaMemcpy(ga.p, weights.back().data(), weights.back().size() * 2, cudaMemcpyHostToDevice));
    sparse.push_back(compress(*h_, d, ga.p, 0, 0, PruneMode::magnitude, s_));
    plans.emplace_back(*h_, d);
    EXPECT_TRUE(plans.back().info().dependent_launch) << plans.back().describe();
  }
  for (int round = 0; round < 3; ++round)  // the same layers again: the same results
    for (size_t l = 0; l < plans.size(); ++l) plans[l].run(sparse[l], acts[l]->p, acts[l + 1]->p, EpilogueArgs{}, nullptr, s_);
  CK(cudaStreamSynchronize(s_));
  for (size_t l = 0; l < plans.size(); ++l) {
    std::vector<uint16_t> in(static_cast<size_t>(n * widths[l])), out(static_cast<size_t>(n * widths[l + 1]));
    CK(cudaMemcpy(in.data(), acts[l]->p, in.size() * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out.data(), acts[l + 1]->p, out.size() * 2, cudaMemcpyDeviceToHost));
    expect_like_cpu(decode_desc(widths[l + 1], n, widths[l]), weights[l], in, out, l == 0,
                    "layer " + std::to_string(l) + ", " + plans[l].describe());
  }
}

}  // namespace
