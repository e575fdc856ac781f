// SPDX-License-Identifier: BSD-3-Clause
// The data of the programmatic-dependent-launch tests (test_dependent_launch_gpu.cu), host-only so
// that a CPU program can rebuild a run's layers from its seed (docs/data/pdl-test-ulp-repro.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "spmma/matmul.hpp"
#include "spmma/types.hpp"

namespace spmma::test {

// Random bf16 operands whose products and sums of up to 2^12 terms are exact in f32 (multiples of
// 1/16, |x| <= 2), so that the CPU and the GPU agree to the bit before D's one rounding.
inline std::vector<uint16_t> exact_values(size_t n, std::mt19937_64& rng) {
  std::vector<uint16_t> v(n);
  std::uniform_int_distribution<int> q(-32, 32);
  for (auto& x : v) x = static_cast<uint16_t>(encode(ElemType::bf16, q(rng) / 16.0));
  return v;
}

// A decode layer in bf16: Y = X·Wᵀ with W the M x K weight, X the N tokens.
inline MatmulDesc decode_desc(int64_t m, int64_t n, int64_t k) {
  MatmulDesc d;
  d.m = m, d.n = n, d.k = k;
  d.a_type = d.b_type = d.c_type = d.d_type = ElemType::bf16;
  d.b_order = Order::col_major;   // B: N x K, K contiguous (the activations, token by token)
  d.cd_order = Order::col_major;  // D: N x M row-major, Y = X·Wᵀ: the next layer's B as it is
  return d;
}

}  // namespace spmma::test
