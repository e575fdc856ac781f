// SPDX-License-Identifier: BSD-3-Clause
// Test helpers shared by the CPU and GPU tests: the seed of a run, error expectations, and the
// interesting bit patterns of an element type (zeros, NaNs, infinities, ties) to draw from.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "spmma/error.hpp"
#include "spmma/types.hpp"

namespace spmma::test {

// The accuracy the GPU tests hold fp8 products summed by the tensor cores to, relative to
// Σ|a·b|: the H100's fp8 MMA keeps about 13-14 bits of its running sum, aligned to the largest
// term and truncated, so each product a promotion block of the sm90 kernel adds may lose up to
// 2^-13 of the block's largest magnitude, and the truncations add up in one direction. A block of
// 256 of K (the plan's default, PlanOptions::promotion_k: four instructions of 32 nonzero
// products per output) holds 128 products: at most 128 · 2^-13 = 2^-6 of Σ|a·b|; a block of 128
// of K (promotion_k = 128; the decode kernel's warpgroup) 64 products: 2^-7. (2^-9, the largest
// error the conformance probes saw on one instruction, was held here until a case reached
// 2^-8.66 on blocks of 64 products: e5m2 x e4m3 -> f32, Σ|a·b| 150.67, GPU 89.446 against
// 89.820; SPMMA_SEED=1322394461, Robust.EveryListedCombinationMatchesTheCpuWithSpecials, H100
// 2026-11-24.) A misread metadata nibble or tile is still an error of order |a·b| itself.
inline constexpr double kFp8MmaRel = 0x1p-6;
inline constexpr double kFp8MmaRel128 = 0x1p-7;

// One seed per test process, printed once; SPMMA_SEED=<n> replays a run.
inline uint64_t seed() {
  static const uint64_t s = [] {
    const char* e = std::getenv("SPMMA_SEED");
    const uint64_t v = e ? std::strtoull(e, nullptr, 0) : std::random_device{}();
    std::cerr << "[   seed   ] " << v << " (replay with SPMMA_SEED=" << v << ")\n";
    return v;
  }();
  return s;
}

// f() must throw spmma::Error with `code` and a message containing every part.
template <class F>
void expect_error(F&& f, Status code, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const char* p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "missing '" << p << "' in: " << e.what();
  }
}

inline bool is_tf32(ElemType t) { return t == ElemType::tf32; }

// The interesting bit patterns of a type, by class. For tf32 every class also has members with
// the ignored low 13 bits set.
struct Pools {
  std::vector<uint64_t> zeros, nans, infs, ties, any;
};

inline Pools pools_of(ElemType t) {
  Pools p;
  const TypeInfo& ti = type_info(t);
  const int mem = memory_bits(t);
  if (mem <= 16) {
    // Every pattern of the type's width, classified by the host's own functions.
    for (uint64_t b = 0; b < (uint64_t{1} << ti.bits); ++b) {
      if (is_nan(t, b)) p.nans.push_back(b);
      else if (is_zero(t, b)) p.zeros.push_back(b);
      else if (std::isinf(decode(t, b))) p.infs.push_back(b);
      p.any.push_back(b);
    }
  } else {
    const bool tf = is_tf32(t);
    p.zeros = {0x00000000, 0x80000000};
    p.nans = {0x7F800000 | (tf ? 0x2000u : 1u), 0x7FC00000, 0x7FFFE000, 0xFF802000, 0xFFC00000, 0x7FA5A000, 0xFFFFE000};
    p.infs = {0x7F800000, 0xFF800000};
    if (tf) {
      // Zero by value (the low 13 bits are ignored), NaN with low bits, and an f32 NaN whose
      // mantissa lies only in the low bits: Inf as tf32.
      for (uint64_t z : {0x1ull, 0x1FFFull, 0x80000001ull, 0x80001234ull, 0x00000ABCull}) p.zeros.push_back(z);
      for (uint64_t n : {0x7FC01234ull, 0xFF803FFFull}) p.nans.push_back(n);
      for (uint64_t i : {0x7F800001ull, 0xFF801FFFull}) p.infs.push_back(i);
    }
  }
  // Ties: ±1, ±2, ±max in several encodings (tf32: the same value with other low bits).
  for (double v : {1.0, -1.0, 2.0, -2.0, 3.0, -3.0}) {
    if (!ti.is_signed && v < 0) continue;
    const uint64_t b = encode(t, v);
    p.ties.push_back(b);
    if (is_tf32(t)) p.ties.push_back(b | 0x0F0Fu), p.ties.push_back(b | 0x1FFFu);
  }
  p.ties.push_back(encode(t, ti.max_finite));
  if (ti.is_signed) p.ties.push_back(encode(t, -ti.max_finite));
  return p;
}

inline uint64_t pick(std::mt19937_64& rng, const std::vector<uint64_t>& v) { return v[rng() % v.size()]; }

// A random element: zeros (-0.0, tf32 low bits), NaNs, ±Inf and ties often, anything else too.
inline uint64_t random_elem(std::mt19937_64& rng, ElemType t, const Pools& p) {
  const unsigned c = rng() % 100;
  if (c < 30) return pick(rng, p.zeros);
  if (c < 42 && !p.nans.empty()) return pick(rng, p.nans);
  if (c < 48 && !p.infs.empty()) return pick(rng, p.infs);
  if (c < 75) return pick(rng, p.ties);
  if (memory_bits(t) <= 16) return pick(rng, p.any);
  return rng() & 0xFFFFFFFFu;  // tf32: the low bits random too
}

}  // namespace spmma::test
