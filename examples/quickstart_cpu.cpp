// SPDX-License-Identifier: BSD-3-Clause
// The CPU quick start: prune a bf16 weight to 2:4, compress it, multiply it by a dense B, and
// check the result against a dense product in double. Runs anywhere (no GPU needed).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"
#include "spmma/version.hpp"

int main() {
  using namespace spmma;
  MatmulDesc desc;
  desc.m = 64, desc.n = 24, desc.k = 128;
  desc.a_type = desc.b_type = ElemType::bf16;
  desc.c_type = desc.d_type = ElemType::f32;
  desc.b_order = Order::col_major;  // B as N x K, K contiguous

  // A (M x K) and B (K x N, column-major) as bf16 bit patterns.
  std::mt19937 rng(1);
  std::normal_distribution<double> nd;
  std::vector<uint16_t> a(static_cast<size_t>(desc.m * desc.k)), b(static_cast<size_t>(desc.k * desc.n));
  for (auto& x : a) x = static_cast<uint16_t>(encode(ElemType::bf16, nd(rng)));
  for (auto& x : b) x = static_cast<uint16_t>(encode(ElemType::bf16, nd(rng)));

  Handle h(Device::cpu);
  SparseMatrix w = compress(h, desc, a.data(), /*lda=*/0, /*stride_a=*/0, PruneMode::magnitude);
  Plan plan(h, desc);
  std::vector<float> d(static_cast<size_t>(desc.m * desc.n));
  plan.run(w, b.data(), /*c=*/nullptr, d.data(), /*alpha=*/1.0f, /*beta=*/0.0f);

  // The reference: the pruned A (decompressed) times B, in double.
  const Matrix pruned = decompress(w.to_host());
  double worst = 0;
  for (int64_t i = 0; i < desc.m; ++i)
    for (int64_t j = 0; j < desc.n; ++j) {
      double ref = 0, mag = 0;
      for (int64_t kk = 0; kk < desc.k; ++kk) {
        const double p = pruned.value(i, kk) * decode(ElemType::bf16, b[static_cast<size_t>(j * desc.k + kk)]);
        ref += p, mag += std::fabs(p);
      }
      worst = std::fmax(worst, std::fabs(d[static_cast<size_t>(i * desc.n + j)] - ref) / (mag + 1e-30));
    }
  std::printf("spmma %s: %s on %s\n", SPMMA_VERSION_STRING, plan.describe().c_str(), h.device_name().c_str());
  std::printf("D = A(2:4) * B, %lld x %lld x %lld: largest error %.2e of sum |a*b|\n", static_cast<long long>(desc.m),
              static_cast<long long>(desc.n), static_cast<long long>(desc.k), worst);
  return worst < 1e-5 ? 0 : 1;
}
