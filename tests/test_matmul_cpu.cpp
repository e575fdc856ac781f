// SPDX-License-Identifier: BSD-3-Clause
// Tests for the matmul API on the CPU backend (include/spmma/matmul.hpp, src/api/matmul.cpp,
// src/api/cpu_backend.cpp, docs/api.md). Properties on fresh random inputs (never zeros): the
// seed is printed and recorded, and SPMMA_SEED=<n> replays a run.
//
// The reference is written here, independently of the backend: the memory form of every operand
// (widths, 4-bit packing, leading dimensions, strides, orders), the sparsity pattern of A, the
// dense product in double (floats) or exact integers wrapped to s32 (integers), and the epilogue
// v = alpha·acc (+ beta·C) (+ bias[row]), activation, rounded into D.
//   integers: D must equal the reference exactly (RNE to an integer, saturated);
//   floats:   |D − ref| <= ½ ulp of d_type at max(|D|, |ref|)  (the one RNE rounding into D)
//                          + 1e-5 · |alpha| · Σ|a·b| · 1.2    (the f32 accumulation; 1.2 covers
//                                                              GELU's slope, at most 1.13).
// D is poisoned before every run (NaN bytes 0xFF for float D, 0xA5 for integer D): every
// element must be written and every byte outside the matrices (ld and stride gaps) kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "spmma/detail/epilogue.hpp"
#include "spmma/error.hpp"
#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma {
namespace {

using T = ElemType;

// ------------------------------------------------------------------ seeds

uint32_t pick_seed() {
  if (const char* s = std::getenv("SPMMA_SEED")) return static_cast<uint32_t>(std::strtoul(s, nullptr, 0));
  return std::random_device{}();
}

#define SEEDED_RNG(rng)                                                                              \
  const uint32_t rng##_seed = pick_seed();                                                           \
  ::testing::Test::RecordProperty("seed", std::to_string(rng##_seed));                               \
  std::cout << "[   seed   ] " << rng##_seed << " (replay with SPMMA_SEED=" << rng##_seed << ")\n"; \
  SCOPED_TRACE("seed " + std::to_string(rng##_seed));                                                \
  std::mt19937 rng(rng##_seed)

// ------------------------------------------------------------------ facts, written out here

struct Combo {
  T a, b, cd;
};

// Every combination the CPU must run (docs/api.md, "Types").
std::vector<Combo> expected_combos() {
  std::vector<Combo> v;
  const std::pair<T, T> fl[] = {{T::f16, T::f16},   {T::bf16, T::bf16}, {T::tf32, T::tf32}, {T::e4m3, T::e4m3},
                                {T::e4m3, T::e5m2}, {T::e5m2, T::e4m3}, {T::e5m2, T::e5m2}};
  for (auto [a, b] : fl)
    for (T cd : {T::f16, T::bf16, T::f32, T::e4m3, T::e5m2}) v.push_back({a, b, cd});
  // Integers in both signednesses on either side, as the mma.sp / wgmma.sp forms take them.
  const std::pair<T, T> in[] = {{T::s8, T::s8}, {T::s8, T::u8}, {T::u8, T::s8}, {T::u8, T::u8},
                                {T::s4, T::s4}, {T::s4, T::u4}, {T::u4, T::s4}, {T::u4, T::u4}};
  for (auto [a, b] : in)
    for (T cd : {T::s32, T::s8}) v.push_back({a, b, cd});
  return v;
}

bool is_int(T t) { return t == T::s8 || t == T::u8 || t == T::s4 || t == T::u4 || t == T::s32; }

// Width in memory, in bits.
int mem_width(T t) {
  switch (t) {
    case T::tf32:
    case T::f32:
    case T::s32: return 32;
    case T::f16:
    case T::bf16: return 16;
    case T::s4:
    case T::u4: return 4;
    default: return 8;
  }
}

struct Spec {
  int chunk, kept, group;
};
Spec pattern_spec(T a) {
  if (a == T::tf32) return {2, 1, 1};
  if (a == T::s4 || a == T::u4) return {8, 4, 2};
  return {4, 2, 1};
}

// K of one sparse MMA step: K must be a multiple of it.
int64_t k_unit(T a) {
  switch (mem_width(a)) {
    case 32: return 16;
    case 16: return 32;
    case 8: return 64;
    default: return 128;
  }
}

int64_t int_min(T t) {
  switch (t) {
    case T::s8: return -128;
    case T::s4: return -8;
    case T::s32: return INT32_MIN;
    default: return 0;
  }
}
int64_t int_max(T t) {
  switch (t) {
    case T::s8: return 127;
    case T::u8: return 255;
    case T::s4: return 7;
    case T::u4: return 15;
    default: return INT32_MAX;
  }
}

// Exact value of an integer bit pattern (two's complement in the type's width).
int64_t int_value(T t, uint64_t bits) {
  const int w = mem_width(t);
  const uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  bits &= mask;
  if (int_min(t) < 0 && (bits >> (w - 1)) & 1) return static_cast<int64_t>(bits) - (int64_t{1} << w);
  return static_cast<int64_t>(bits);
}
uint64_t int_bits(T t, int64_t v) {
  const int w = mem_width(t);
  return static_cast<uint64_t>(v) & ((uint64_t{1} << w) - 1);
}

double value_of(T t, uint64_t bits) { return is_int(t) ? static_cast<double>(int_value(t, bits)) : decode(t, bits); }

// ------------------------------------------------------------------ memory

// A buffer of elements of one type in its memory form (4-bit: element i in byte i/2, low
// nibble first), filled with a byte pattern.
class Mem {
 public:
  Mem(T t, int64_t elems, uint8_t fill)
      : t_(t), w_(mem_width(t)), elems_(elems), bytes_(static_cast<size_t>((elems * w_ + 7) / 8), fill) {}
  void set(int64_t i, uint64_t v) {
    ASSERT_TRUE(i >= 0 && i < elems_) << "test bug: index " << i << " of " << elems_;
    uint8_t* p = bytes_.data();
    switch (w_) {
      case 4: {
        uint8_t& byte = p[i / 2];
        byte = (i & 1) ? static_cast<uint8_t>((byte & 0x0F) | ((v & 0xF) << 4))
                       : static_cast<uint8_t>((byte & 0xF0) | (v & 0xF));
        break;
      }
      case 8: p[i] = static_cast<uint8_t>(v); break;
      case 16: {
        const auto x = static_cast<uint16_t>(v);
        std::memcpy(p + 2 * i, &x, 2);
        break;
      }
      default: {
        const auto x = static_cast<uint32_t>(v);
        std::memcpy(p + 4 * i, &x, 4);
      }
    }
  }
  uint64_t get(int64_t i) const {
    const uint8_t* p = bytes_.data();
    switch (w_) {
      case 4: return (i & 1) ? p[i / 2] >> 4 : p[i / 2] & 0xF;
      case 8: return p[i];
      case 16: {
        uint16_t x;
        std::memcpy(&x, p + 2 * i, 2);
        return x;
      }
      default: {
        uint32_t x;
        std::memcpy(&x, p + 4 * i, 4);
        return x;
      }
    }
  }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  int64_t elems() const { return elems_; }
  T type() const { return t_; }

 private:
  T t_;
  int w_;
  int64_t elems_;
  std::vector<uint8_t> bytes_;
};

// ------------------------------------------------------------------ random values

// A non-zero value of type t: floats uniform in [-range, range] rounded to t (tf32 with random
// bits in the 13 ignored mantissa bits when `dirty`); integers uniform over the type's range.
uint64_t random_nonzero(std::mt19937& rng, T t, double range = 2.0, bool dirty = false) {
  for (;;) {
    if (is_int(t)) {
      const int64_t v = std::uniform_int_distribution<int64_t>(int_min(t), int_max(t))(rng);
      if (v != 0) return int_bits(t, v);
      continue;
    }
    const double x = std::uniform_real_distribution<double>(-range, range)(rng);
    uint64_t b = encode(t, x);
    if (decode(t, b) == 0.0) continue;
    if (t == T::tf32 && dirty) b |= rng() & 0x1FFF;
    return b;
  }
}

// A dense M x K A that satisfies its pattern: in each chunk `kept` groups are non-zero (a tenth
// of the chunks hold fewer), the rest +0.
std::vector<uint64_t> random_sparse_a(std::mt19937& rng, T a, int64_t m, int64_t k) {
  const Spec s = pattern_spec(a);
  const int groups = s.chunk / s.group, keep_groups = s.kept / s.group;
  std::vector<uint64_t> v(static_cast<size_t>(m * k), 0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c0 = 0; c0 < k; c0 += s.chunk) {
      std::vector<int> order(static_cast<size_t>(groups));
      for (int g = 0; g < groups; ++g) order[static_cast<size_t>(g)] = g;
      std::shuffle(order.begin(), order.end(), rng);
      const int keep = (rng() % 10 == 0) ? static_cast<int>(rng() % static_cast<unsigned>(keep_groups)) : keep_groups;
      for (int g = 0; g < keep; ++g)
        for (int e = 0; e < s.group; ++e)
          v[static_cast<size_t>(r * k + c0 + order[static_cast<size_t>(g)] * s.group + e)] =
              random_nonzero(rng, a, 2.0, /*dirty=*/true);
    }
  return v;
}

// ------------------------------------------------------------------ one case

const char* act_str(Activation a) { return a == Activation::relu ? "relu" : a == Activation::gelu ? "gelu" : "none"; }

struct Case {
  T a = T::bf16, b = T::bf16, c = T::bf16, d = T::bf16;
  int64_t m = 8, n = 8, k = 32;
  Order bo = Order::row_major, cdo = Order::row_major;
  int64_t batch = 1;
  bool per_batch = false;
  Activation act = Activation::none;
  bool bias = false;
  bool scales = false;  // scale_rows and scale_cols (one A per entry: one row vector per entry)
  float alpha = 1.0f, beta = 0.0f;
  bool pad = false;     // leading dimensions and strides larger than packed
  bool c_null = false;  // pass c = nullptr (beta == 0)
  bool in_place = false;
  PruneMode mode = PruneMode::check;

  std::string str() const {
    std::ostringstream o;
    o << type_name(a) << "." << type_name(b) << " -> C " << type_name(c) << " D " << type_name(d) << " m=" << m
      << " n=" << n << " k=" << k << " B " << (bo == Order::row_major ? "row" : "col") << " CD "
      << (cdo == Order::row_major ? "row" : "col") << " batch=" << batch << (per_batch ? " (A per batch)" : "")
      << " act=" << act_str(act) << (bias ? " +bias" : "") << (scales ? " +scales" : "") << " alpha=" << alpha << " beta=" << beta
      << (pad ? " padded ld/strides" : "") << (c_null ? " c=null" : "") << (in_place ? " in-place" : "")
      << (mode == PruneMode::magnitude ? " prune=magnitude" : "");
    return o.str();
  }
};

double activate_ref(double x, Activation a) {
  if (a == Activation::relu) return x > 0 ? x : 0.0;
  if (a == Activation::gelu) return 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752));
  return x;
}

double half_ulp(T t, double x) {
  const TypeInfo& ti = type_info(t);
  const int emin = 1 - ti.bias;
  const int e = x == 0.0 ? emin : std::max(std::ilogb(x), emin);
  return std::ldexp(1.0, e - ti.man_bits - 1);
}

int64_t round_sat(double v, T t) {
  const double r = std::nearbyint(v);  // default rounding: to nearest, ties to even
  return static_cast<int64_t>(std::clamp(r, static_cast<double>(int_min(t)), static_cast<double>(int_max(t))));
}

// ld for a matrix whose packed ld is `packed`: 0 (packed) unless padded or needed (4-bit, odd).
int64_t pick_ld(int64_t packed, bool pad, T t) {
  int64_t ld = pad ? packed + 3 : 0;
  if (mem_width(t) == 4 && (ld == 0 ? packed : ld) % 2 != 0) ld = (ld == 0 ? packed : ld) + 1;
  return ld;
}
int64_t pick_stride(int64_t span, bool pad, T t) {
  if (!pad) return 0;
  int64_t s = span + 7;
  if (mem_width(t) == 4 && s % 2 != 0) ++s;
  return s;
}

// Runs one case; records failures through gtest. Returns the number of mismatching elements.
int64_t run_case(const Case& cs, std::mt19937& rng, Handle& h) {
  SCOPED_TRACE(cs.str());
  const int64_t m = cs.m, n = cs.n, k = cs.k, nb = cs.batch, na = cs.per_batch ? cs.batch : 1;
  const bool brow = cs.bo == Order::row_major, cdrow = cs.cdo == Order::row_major;

  // ---- A: logical dense values, then its memory form (row-major, lda, stride_a)
  std::vector<std::vector<uint64_t>> a_dense(static_cast<size_t>(na));
  for (auto& ad : a_dense) {
    if (cs.mode == PruneMode::check) {
      ad = random_sparse_a(rng, cs.a, m, k);
    } else {
      ad.resize(static_cast<size_t>(m * k));
      for (auto& x : ad) x = random_nonzero(rng, cs.a, 2.0, true);
    }
  }
  const int64_t lda = pick_ld(k, cs.pad, cs.a), elda = lda ? lda : k;
  const int64_t stride_a = na > 1 ? pick_stride(elda * m, cs.pad, cs.a) : 0, estride_a = stride_a ? stride_a : elda * m;
  Mem amem(cs.a, estride_a * (na - 1) + elda * m, 0x5A);
  for (int64_t e = 0; e < na; ++e)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c) amem.set(e * estride_a + r * elda + c, a_dense[e][r * k + c]);

  // ---- B: K x N per batch entry
  const int64_t ldb = pick_ld(brow ? n : k, cs.pad, cs.b), eldb = ldb ? ldb : (brow ? n : k);
  const int64_t spanb = eldb * (brow ? k : n);
  const int64_t stride_b = nb > 1 ? pick_stride(spanb, cs.pad, cs.b) : 0, esb = stride_b ? stride_b : spanb;
  Mem bmem(cs.b, esb * (nb - 1) + spanb, 0x3C);
  std::vector<double> bval(static_cast<size_t>(nb * k * n));
  for (int64_t e = 0; e < nb; ++e)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j) {
        const uint64_t bits = random_nonzero(rng, cs.b, 2.0, true);
        bmem.set(e * esb + (brow ? kk * eldb + j : j * eldb + kk), bits);
        bval[static_cast<size_t>((e * k + kk) * n + j)] = value_of(cs.b, bits);
      }

  // ---- C and D: M x N per batch entry
  const int64_t packed_cd = cdrow ? n : m, lines_cd = cdrow ? m : n;
  const int64_t ldc = pick_ld(packed_cd, cs.pad, cs.c), eldc = ldc ? ldc : packed_cd;
  int64_t ldd = cs.in_place ? ldc : pick_ld(packed_cd, cs.pad, cs.d);
  if (cs.pad && !cs.in_place) ldd += 2;  // differ from ldc
  const int64_t eldd = ldd ? ldd : packed_cd;
  const int64_t stride_c = nb > 1 ? pick_stride(eldc * lines_cd, cs.pad, cs.c) : 0;
  const int64_t stride_d = cs.in_place ? stride_c : (nb > 1 ? pick_stride(eldd * lines_cd, cs.pad, cs.d) : 0);
  const int64_t esc = stride_c ? stride_c : eldc * lines_cd, esd = stride_d ? stride_d : eldd * lines_cd;
  auto cd_idx = [&](int64_t i, int64_t j, int64_t ld) { return cdrow ? i * ld + j : j * ld + i; };

  const uint8_t poison = is_int(cs.d) ? 0xA5 : 0xFF;
  Mem cmem(cs.c, esc * (nb - 1) + eldc * lines_cd, 0x77);
  Mem dmem(cs.d, esd * (nb - 1) + eldd * lines_cd, poison);
  std::vector<double> cval(static_cast<size_t>(nb * m * n));
  for (int64_t e = 0; e < nb; ++e)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        uint64_t bits;
        if (cs.c == T::s32)
          bits = int_bits(T::s32, rng() % 4 == 0 ? static_cast<int32_t>(rng())
                                                 : std::uniform_int_distribution<int32_t>(-(1 << 20), 1 << 20)(rng));
        else
          bits = random_nonzero(rng, cs.c, 4.0);
        cmem.set(e * esc + cd_idx(i, j, eldc), bits);
        cval[static_cast<size_t>((e * m + i) * n + j)] = value_of(cs.c, bits);
      }
  Mem& dtarget = cs.in_place ? cmem : dmem;
  const Mem dbefore = dtarget;  // gaps must keep these bytes

  std::vector<float> bias(static_cast<size_t>(m));
  for (float& x : bias)
    x = static_cast<float>(std::uniform_real_distribution<double>(is_int(cs.d) ? -40.0 : -2.0, is_int(cs.d) ? 40.0 : 2.0)(rng));
  // Scale vectors: row scales per A entry, column scales per batch entry, signs and magnitudes
  // that matter (a zero among them too).
  std::vector<float> srow(static_cast<size_t>(na * m)), scol(static_cast<size_t>(nb * n));
  for (auto* v : {&srow, &scol})
    for (float& x : *v)
      x = rng() % 7 == 0 ? 0.0f : static_cast<float>(std::uniform_real_distribution<double>(-3.0, 3.0)(rng));

  // ---- run
  MatmulDesc desc;
  desc.m = m, desc.n = n, desc.k = k;
  desc.a_type = cs.a, desc.b_type = cs.b, desc.c_type = cs.c, desc.d_type = cs.d;
  desc.b_order = cs.bo, desc.cd_order = cs.cdo;
  desc.ldb = ldb, desc.ldc = ldc, desc.ldd = ldd;
  desc.batch = nb, desc.a_per_batch = cs.per_batch;
  desc.stride_b = stride_b, desc.stride_c = stride_c, desc.stride_d = stride_d;
  desc.activation = cs.act, desc.bias = cs.bias;
  desc.scale_rows = desc.scale_cols = cs.scales;

  SparseMatrix sa = compress(h, desc, amem.data(), lda, stride_a, cs.mode);
  EXPECT_EQ(sa.batch(), na);
  // The A the product uses: the generated one (check), or the pruned one (magnitude).
  std::vector<std::vector<double>> aval(static_cast<size_t>(na), std::vector<double>(static_cast<size_t>(m * k)));
  for (int64_t e = 0; e < na; ++e) {
    const Compressed hc = sa.to_host(e);
    const Matrix back = decompress(hc);
    EXPECT_FALSE(check_pattern(back).has_value());
    const Spec s = pattern_spec(cs.a);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c) {
        const uint64_t orig = a_dense[e][r * k + c], got = back.at(r, c);
        if (cs.mode == PruneMode::check) {
          if (got != orig) {
            ADD_FAILURE() << "A round trip: entry " << e << " (" << r << ", " << c << ") = " << got << ", expected " << orig;
            return 1;
          }
        } else if (got != 0 && got != orig) {
          ADD_FAILURE() << "A pruned: entry " << e << " (" << r << ", " << c << ") = " << got << " is not the input " << orig;
          return 1;
        }
        aval[e][r * k + c] = value_of(cs.a, got);
      }
    if (cs.mode == PruneMode::magnitude)  // no input zeros: every chunk keeps exactly `kept`
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c0 = 0; c0 < k; c0 += s.chunk) {
          int nz = 0;
          for (int c = 0; c < s.chunk; ++c) nz += back.at(r, c0 + c) != 0;
          if (nz != s.kept) {
            ADD_FAILURE() << "magnitude prune kept " << nz << " in row " << r << " chunk " << c0 / s.chunk;
            return 1;
          }
        }
  }

  Plan plan(h, desc);
  EXPECT_EQ(plan.workspace_bytes(), 0u);
  const void* cptr = cs.c_null ? nullptr : cmem.data();
  if (cs.scales) {
    EpilogueArgs ea;
    ea.alpha = cs.alpha, ea.beta = cs.beta, ea.c = cptr, ea.bias = cs.bias ? bias.data() : nullptr;
    ea.scale_rows = srow.data(), ea.scale_cols = scol.data();
    plan.run(sa, bmem.data(), dtarget.data(), ea);
  } else {
    plan.run(sa, bmem.data(), cptr, dtarget.data(), cs.alpha, cs.beta, cs.bias ? bias.data() : nullptr);
  }

  // ---- check every element against the reference, and the gaps against their old bytes
  std::vector<char> covered(static_cast<size_t>(dtarget.elems()), 0);
  int64_t bad = 0;
  auto report = [&](const std::string& msg) {
    if (++bad <= 5) ADD_FAILURE() << msg;
  };
  for (int64_t e = 0; e < nb; ++e) {
    const std::vector<double>& av = aval[static_cast<size_t>(cs.per_batch ? e : 0)];
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0.0, sumabs = 0.0;
        int64_t iacc = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double x = av[static_cast<size_t>(i * k + kk)], y = bval[static_cast<size_t>((e * k + kk) * n + j)];
          if (is_int(cs.a))
            iacc += static_cast<int64_t>(x) * static_cast<int64_t>(y);
          else
            acc += x * y, sumabs += std::fabs(x * y);
        }
        if (is_int(cs.a)) acc = static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(iacc)));
        // The epilogue's arithmetic (docs/api.md, "Epilogue semantics"): f32, double where C or
        // D is s32. Integer sums are exact, so an integer D is modelled step by step in that
        // arithmetic and must match exactly; a float D is compared with the exact value in double.
        const bool in_double = cs.c == T::s32 || cs.d == T::s32;
        const float sr = cs.scales ? srow[static_cast<size_t>((cs.per_batch ? e : 0) * m + i)] : 1.0f;
        const float sc = cs.scales ? scol[static_cast<size_t>(e * n + j)] : 1.0f;
        const double cv = cval[static_cast<size_t>((e * m + i) * n + j)];
        const float bv = cs.bias ? bias[static_cast<size_t>(i)] : 0.0f;
        double scale = static_cast<double>(cs.alpha) * sr * sc;
        double v;
        if (is_int(cs.a) && !in_double) {
          const float fs = cs.alpha * sr * sc;
          float fv = std::fma(fs, static_cast<float>(acc), bv);
          if (cs.beta != 0.0f) fv = std::fma(cs.beta, static_cast<float>(cv), fv);
          if (cs.act == Activation::relu) fv = fv > 0 ? fv : 0.0f;
          // The library's f32 GELU: its accuracy is GeluF32IsAccurate's; here the rest of the arithmetic.
          if (cs.act == Activation::gelu) fv = spmma::detail::gelu_f32(fv);
          v = fv;
        } else if (is_int(cs.a)) {
          v = std::fma(scale, acc, bv);
          if (cs.beta != 0.0f) v = std::fma(static_cast<double>(cs.beta), cv, v);
          v = activate_ref(v, cs.act);
        } else {
          v = scale * acc;
          if (cs.beta != 0.0f) v += static_cast<double>(cs.beta) * cv;
          v += bv;
          v = activate_ref(v, cs.act);
        }
        // f32 epilogue steps (at most 3 roundings of terms no larger than these) and the f32 sum
        // in another order (1.2e-5 of the sum of |products|).
        const double epi_err = in_double ? 0.0
                                         : 0x1p-22 * (std::fabs(scale * acc) + std::fabs(bv) +
                                                      std::fabs(static_cast<double>(cs.beta) * cv) + std::fabs(v));
        // fp8 D saturates: the largest finite value where v lies beyond it.
        if (cs.d == T::e4m3 || cs.d == T::e5m2) v = std::clamp(v, -type_info(cs.d).max_finite, type_info(cs.d).max_finite);

        const int64_t di = e * esd + cd_idx(i, j, eldd);
        covered[static_cast<size_t>(di)] = 1;
        const uint64_t got_bits = dtarget.get(di);
        std::ostringstream where;
        where << "D[" << e << "](" << i << ", " << j << ")";
        if (is_int(cs.d)) {
          const int64_t want = round_sat(v, cs.d), got = int_value(cs.d, got_bits);
          if (got != want) report(where.str() + " = " + std::to_string(got) + ", expected " + std::to_string(want));
        } else {
          const double got = decode(cs.d, got_bits);
          const double tol = half_ulp(cs.d, std::max(std::fabs(got), std::fabs(v))) +
                             1.2e-5 * std::fabs(scale) * sumabs + epi_err;
          if (!(std::fabs(got - v) <= tol)) {
            std::ostringstream o;
            o.precision(10);
            o << where.str() << " = " << got << ", expected " << v << " (tolerance " << tol << ")";
            report(o.str());
          }
        }
      }
  }
  for (int64_t i = 0; i < dtarget.elems(); ++i)
    if (!covered[static_cast<size_t>(i)] && dtarget.get(i) != dbefore.get(i))
      report("element " + std::to_string(i) + " of the D buffer lies outside every D matrix but was written");
  if (bad > 5) ADD_FAILURE() << bad << " mismatches in all";
  return bad;
}

Case base_case(const Combo& c) {
  Case cs;
  cs.a = c.a, cs.b = c.b, cs.c = c.cd, cs.d = c.cd;
  cs.k = k_unit(c.a);
  return cs;
}

// alpha, beta choices; for an s8 D small alphas requantize without saturating everything.
float pick_alpha(std::mt19937& rng, T d) {
  static const float f[] = {1.0f, 0.5f, -1.25f, 2.0f, 0.3f};
  static const float q[] = {1.0f / 256, 0.01f, 1.0f / 1024, 0.5f, -0.0078125f};
  return d == T::s8 ? q[rng() % 5] : f[rng() % 5];
}
float pick_beta(std::mt19937& rng) {
  static const float b[] = {0.0f, 1.0f, -0.75f, 0.5f};
  return b[rng() % 4];
}

std::string combo_name(const Combo& c) {
  return std::string(type_name(c.a)) + "_" + std::string(type_name(c.b)) + "_" + std::string(type_name(c.cd));
}

// ------------------------------------------------------------------ properties, per combination

class MatmulCpuCombo : public ::testing::TestWithParam<Combo> {};

// Shapes (odd N included) x both B orders x both C/D orders; the epilogue, batching, padding
// and scalars vary from case to case so that each appears for every combination.
TEST_P(MatmulCpuCombo, ShapesAndOrders) {
  SEEDED_RNG(rng);
  Handle h(Device::cpu);
  const Combo combo = GetParam();
  const int64_t u = k_unit(combo.a);
  const std::tuple<int64_t, int64_t, int64_t> shapes[] = {{1, 1, u}, {7, 3, 2 * u}, {19, 17, u}, {33, 8, 3 * u}};
  int idx = 0;
  for (auto [m, n, k] : shapes)
    for (Order bo : {Order::row_major, Order::col_major})
      for (Order cdo : {Order::row_major, Order::col_major}) {
        Case cs = base_case(combo);
        cs.m = m, cs.n = n, cs.k = k, cs.bo = bo, cs.cdo = cdo;
        cs.act = static_cast<Activation>(idx % 3);
        cs.bias = (idx / 3) % 2 == 1;
        cs.batch = (idx % 4 == 3) ? 2 : 1;
        cs.per_batch = idx % 8 == 7;
        cs.pad = idx % 5 >= 3;
        cs.alpha = pick_alpha(rng, combo.cd);
        cs.beta = pick_beta(rng);
        cs.c_null = cs.beta == 0.0f && idx % 2 == 0;
        ++idx;
        if (run_case(cs, rng, h) > 0) return;
      }
}

// Every activation x bias x B order x C/D order, alpha and beta != 1.
TEST_P(MatmulCpuCombo, EveryEpilogue) {
  SEEDED_RNG(rng);
  Handle h(Device::cpu);
  const Combo combo = GetParam();
  for (Activation act : {Activation::none, Activation::relu, Activation::gelu})
    for (bool bias : {false, true})
      for (Order bo : {Order::row_major, Order::col_major})
        for (Order cdo : {Order::row_major, Order::col_major}) {
          Case cs = base_case(combo);
          cs.m = 9, cs.n = 5;
          cs.act = act, cs.bias = bias, cs.bo = bo, cs.cdo = cdo;
          cs.alpha = combo.cd == T::s8 ? 0.01f : -0.75f;
          cs.beta = combo.cd == T::s8 ? 0.5f : 1.5f;
          if (run_case(cs, rng, h) > 0) return;
        }
}

// Batches with a shared A and with one A per entry, packed and with gaps between matrices.
TEST_P(MatmulCpuCombo, Batched) {
  SEEDED_RNG(rng);
  Handle h(Device::cpu);
  const Combo combo = GetParam();
  for (bool per_batch : {false, true})
    for (bool pad : {false, true})
      for (Order o : {Order::row_major, Order::col_major}) {
        Case cs = base_case(combo);
        cs.m = 6, cs.n = 3, cs.k = 2 * k_unit(combo.a), cs.batch = 3;
        cs.per_batch = per_batch, cs.pad = pad, cs.bo = o, cs.cdo = pad ? o : Order::row_major;
        cs.act = Activation::relu, cs.bias = pad;
        cs.alpha = pick_alpha(rng, combo.cd), cs.beta = 1.0f;
        if (run_case(cs, rng, h) > 0) return;
      }
}

// Scale vectors (per row and per column of D) with every activation, with and without bias and
// C, batched with one A per entry (one row vector each) and with a shared A.
TEST_P(MatmulCpuCombo, ScaleVectors) {
  SEEDED_RNG(rng);
  Handle h(Device::cpu);
  const Combo combo = GetParam();
  int idx = 0;
  for (Activation act : {Activation::none, Activation::relu, Activation::gelu})
    for (bool per_batch : {false, true}) {
      Case cs = base_case(combo);
      cs.m = 11, cs.n = 7, cs.k = 2 * k_unit(combo.a), cs.batch = 2;
      cs.scales = true, cs.act = act, cs.per_batch = per_batch;
      cs.bias = idx % 2 == 0;
      cs.cdo = idx % 3 == 0 ? Order::col_major : Order::row_major;
      cs.alpha = pick_alpha(rng, combo.cd);
      cs.beta = idx % 2 ? pick_beta(rng) : 0.0f;
      ++idx;
      if (run_case(cs, rng, h) > 0) return;
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulCpuCombo, ::testing::ValuesIn(expected_combos()),
                         [](const ::testing::TestParamInfo<Combo>& p) { return combo_name(p.param); });

// ------------------------------------------------------------------ further properties

TEST(MatmulCpu, SupportedTypesAreExactlyTheDocumentedOnes) {
  std::set<std::tuple<T, T, T>> want, got;
  for (const Combo& c : expected_combos()) want.insert({c.a, c.b, c.cd});
  for (const TypeCombo& c : supported_types(Device::cpu)) {
    got.insert({c.a, c.b, c.cd});
    EXPECT_EQ(c.compute, is_int(c.a) ? T::s32 : T::f32) << type_name(c.a);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(supported_types(Device::cpu).size(), want.size()) << "duplicates";
}

TEST(MatmulCpu, HandleAndDevices) {
  Handle h(Device::cpu);
  EXPECT_EQ(h.device(), Device::cpu);
  EXPECT_EQ(h.compute_capability(), 0);
  EXPECT_EQ(h.device_name().rfind("CPU (", 0), 0u) << h.device_name();
  Handle a(Device::automatic);  // a GPU when usable, else the CPU
  EXPECT_TRUE(a.device() == Device::cpu || a.device() == Device::gpu);
  try {
    Handle g(Device::gpu);
    EXPECT_EQ(g.device(), Device::gpu);
    EXPECT_GT(g.compute_capability(), 0);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::not_supported);
    EXPECT_NE(std::string(e.what()).find("no GPU"), std::string::npos) << e.what();
    EXPECT_TRUE(supported_types(Device::gpu).empty());
  }
}

// Magnitude pruning of a dense A with no zeros, for every A type; also a larger product that
// runs on several threads (and OpenBLAS's threads).
TEST(MatmulCpu, MagnitudePruneEveryAType) {
  SEEDED_RNG(rng);
  Handle h(Device::cpu);
  for (T a : {T::f16, T::bf16, T::tf32, T::e4m3, T::e5m2, T::s8, T::u8, T::s4, T::u4}) {
    Case cs;
    cs.a = cs.b = a;
    cs.c = cs.d = is_int(a) ? T::s32 : T::f32;
    cs.m = 11, cs.n = 4, cs.k = 2 * k_unit(a);
    cs.mode = PruneMode::magnitude;
    cs.batch = 2, cs.per_batch = true;
    if (run_case(cs, rng, h) > 0) return;
  }
}

TEST(MatmulCpu, LargeProductsOnSeveralThreads) {
  SEEDED_RNG(rng);
  Handle h(Device::cpu);
  for (Combo c : {Combo{T::bf16, T::bf16, T::bf16}, Combo{T::s8, T::s8, T::s32}, Combo{T::u4, T::u4, T::s8}}) {
    Case cs = base_case(c);
    cs.m = 160, cs.n = 96, cs.k = 4 * k_unit(c.a);
    cs.bo = Order::col_major, cs.act = Activation::gelu, cs.bias = true;
    cs.alpha = c.cd == T::s8 ? 1.0f / 512 : 0.5f, cs.beta = 1.0f;
    if (run_case(cs, rng, h) > 0) return;
  }
}

TEST(MatmulCpu, MixedCAndDTypesAndInPlace) {
  SEEDED_RNG(rng);
  Handle h(Device::cpu);
  Case cs;
  cs.m = 13, cs.n = 17;
  for (auto [a, c, d] : {std::tuple{T::s8, T::s32, T::s8}, std::tuple{T::u4, T::s8, T::s32},
                         std::tuple{T::bf16, T::f32, T::bf16}, std::tuple{T::e4m3, T::bf16, T::f32}}) {
    cs.a = cs.b = a, cs.c = c, cs.d = d, cs.k = k_unit(a);
    cs.alpha = d == T::s8 ? 0.01f : 1.0f, cs.beta = 0.5f, cs.bias = true;
    if (run_case(cs, rng, h) > 0) return;
  }
  for (auto [a, cd] : {std::pair{T::f16, T::f16}, std::pair{T::s8, T::s32}})
    for (bool pad : {false, true}) {
      cs.a = cs.b = a, cs.c = cs.d = cd, cs.k = k_unit(a);
      cs.in_place = true, cs.pad = pad, cs.batch = 2, cs.alpha = 1.0f, cs.beta = -1.0f;
      if (run_case(cs, rng, h) > 0) return;
    }
}

// The s32 accumulator wraps modulo 2^32 like the tensor cores' (the epilogue then saturates):
// 33088 products of 255·255 sum to 2151547200 > 2^31 - 1.
// The f32 GELU of the epilogue (spmma/detail/epilogue.hpp) against x·erfc(−x/√2)/2 in double, on
// every 61st f32 in [−15.5, 15.5] (35 million values: every exponent, both signs, both sides of
// the cut at 15) and the special values. The bound is the worst measured over every f32 in that
// range (docs/api.md); results in the subnormal range are measured in units of the smallest
// subnormal.
TEST(MatmulCpu, GeluF32IsAccurate) {
  auto exact = [](float x) { return 0.5 * x * std::erfc(static_cast<double>(x) * -0.70710678118654752440); };
  double worst = 0;
  float worst_x = 0;
  for (uint64_t b = 0; b < 0x100000000ull; b += 61) {
    const uint32_t u = static_cast<uint32_t>(b);
    float x;
    std::memcpy(&x, &u, 4);
    if (!(std::fabs(x) <= 15.5f)) continue;
    const double want = exact(x), got = spmma::detail::gelu_f32(x);
    const float near = static_cast<float>(want);
    const double ulp = std::fabs(near) < FLT_MIN ? 0x1p-149 : std::ldexp(1.0, std::ilogb(near) - 23);
    const double err = std::fabs(got - want) / ulp;
    if (err > worst) worst = err, worst_x = x;
  }
  std::cout << "[   gelu   ] worst " << worst << " ulp at x = " << worst_x << "\n";
  EXPECT_LE(worst, spmma::detail::kGeluMaxUlps) << "at x = " << worst_x;
  EXPECT_EQ(spmma::detail::gelu_f32(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(spmma::detail::gelu_f32(-0.0f)));
  EXPECT_EQ(spmma::detail::gelu_f32(INFINITY), INFINITY);
  EXPECT_EQ(spmma::detail::gelu_f32(3e38f), 3e38f);
  EXPECT_EQ(spmma::detail::gelu_f32(15.5f), 15.5f);
  const float neg = spmma::detail::gelu_f32(-20.0f);
  EXPECT_TRUE(neg == 0.0f && std::signbit(neg));  // −20·Φ(−20) is far below the smallest subnormal
  EXPECT_TRUE(std::isnan(spmma::detail::gelu_f32(NAN)));
  EXPECT_TRUE(std::isnan(spmma::detail::gelu_f32(-INFINITY)));  // −∞·Φ(−∞) = −∞·0
}

TEST(MatmulCpu, IntegerAccumulatorWrapsLikeS32) {
  Handle h(Device::cpu);
  MatmulDesc d;
  d.m = 1, d.n = 2, d.k = 66176;  // 1034 · 64
  d.a_type = d.b_type = T::u8, d.c_type = d.d_type = T::s32;
  std::vector<uint8_t> a(static_cast<size_t>(d.k), 0), b(static_cast<size_t>(d.k * d.n), 255);
  for (int64_t c = 0; c < d.k; c += 4) a[static_cast<size_t>(c)] = a[static_cast<size_t>(c + 2)] = 255;
  const int64_t exact = int64_t{255} * 255 * (d.k / 2);
  ASSERT_GT(exact, INT32_MAX);
  const auto wrapped = static_cast<int32_t>(static_cast<uint32_t>(exact));
  std::vector<int32_t> out(2, 0x12345678);
  SparseMatrix sa = compress(h, d, a.data(), 0, 0, PruneMode::check);
  Plan(h, d).run(sa, b.data(), nullptr, out.data(), 1.0f, 0.0f);
  EXPECT_EQ(out[0], wrapped);
  EXPECT_EQ(out[1], wrapped);
  // The same accumulator into s8: saturates.
  d.d_type = d.c_type = T::s8;
  std::vector<int8_t> o8(2, 0);
  Plan(h, d).run(sa, b.data(), nullptr, o8.data(), 1.0f, 0.0f);
  EXPECT_EQ(o8[0], wrapped < 0 ? -128 : 127);
}

// fp8 D saturates: beyond the largest finite value (and at ±Inf) it stores ±max, and NaN stays
// NaN (a NaN bias); in range, one rounding to nearest even: e4m3 1000 -> 448 (its largest),
// 300 -> 288 (steps of 32 there); e5m2 1000 -> 1024, 300 -> 320 (steps of 64).
TEST(MatmulCpu, Fp8OutputSaturatesAndKeepsNaN) {
  Handle h(Device::cpu);
  MatmulDesc d;
  d.m = 2, d.n = 5, d.k = 32;
  d.a_type = d.b_type = T::bf16;
  d.bias = true;
  std::vector<uint16_t> a(static_cast<size_t>(d.m * d.k), 0), b(static_cast<size_t>(d.k * d.n), 0);
  for (int64_t r = 0; r < d.m; ++r) a[static_cast<size_t>(r * d.k)] = static_cast<uint16_t>(encode(T::bf16, 1.0));
  const double col[] = {1000.0, -99840.0, 300.0, INFINITY, -0.0};
  for (int64_t j = 0; j < d.n; ++j) b[static_cast<size_t>(j)] = static_cast<uint16_t>(encode(T::bf16, col[j]));  // B(0, j)
  const float bias[] = {0.0f, NAN};
  for (T out : {T::e4m3, T::e5m2}) {
    SCOPED_TRACE(std::string(type_name(out)));
    d.c_type = d.d_type = out;
    const double top = type_info(out).max_finite;
    SparseMatrix sa = compress(h, d, a.data(), 0, 0, PruneMode::check);
    std::vector<uint8_t> o(static_cast<size_t>(d.m * d.n), 0x11);
    Plan(h, d).run(sa, b.data(), nullptr, o.data(), 1.0f, 0.0f, bias);
    const double want[] = {out == T::e4m3 ? top : 1024.0, -top, out == T::e4m3 ? 288.0 : 320.0, top, 0.0};
    for (int64_t j = 0; j < d.n; ++j) {
      EXPECT_EQ(decode(out, o[static_cast<size_t>(j)]), want[j]) << "column " << j;
      EXPECT_TRUE(std::isnan(decode(out, o[static_cast<size_t>(d.n + j)]))) << "row 1 (NaN bias), column " << j;
    }
    EXPECT_EQ(o[4], 0u) << "-0 + 0 is +0";
  }
}

TEST(MatmulCpu, UploadRunsLikeCompress) {
  SEEDED_RNG(rng);
  Handle h(Device::cpu);
  MatmulDesc d;
  d.m = 12, d.n = 5, d.k = 64, d.a_type = d.b_type = T::e4m3, d.c_type = d.d_type = T::f32;
  d.batch = 2, d.a_per_batch = true;
  std::vector<uint8_t> a(static_cast<size_t>(2 * d.m * d.k)), b(static_cast<size_t>(2 * d.k * d.n));
  for (auto& x : a) x = static_cast<uint8_t>(random_nonzero(rng, T::e4m3));
  for (auto& x : b) x = static_cast<uint8_t>(random_nonzero(rng, T::e4m3));
  SparseMatrix s1 = compress(h, d, a.data(), 0, 0, PruneMode::magnitude);
  EXPECT_EQ(s1.type(), T::e4m3);
  EXPECT_EQ(s1.pattern(), Pattern::p2_4);
  EXPECT_EQ(s1.rows(), 12);
  EXPECT_EQ(s1.cols(), 64);
  EXPECT_EQ(s1.batch(), 2);
  EXPECT_FALSE(s1.on_device());
  EXPECT_EQ(s1.value_bytes(), size_t{2 * 12 * 32});
  EXPECT_EQ(s1.metadata_bytes(), size_t{2 * 12 * 4 * 2});  // 16 chunks per row: 4 words of 16 bits
  std::vector<Compressed> host{s1.to_host(0), s1.to_host(1)};
  EXPECT_THROW(s1.to_host(2), Error);
  SparseMatrix s2 = upload(h, d, host);
  std::vector<float> d1(static_cast<size_t>(2 * d.m * d.n)), d2(d1.size(), -1.0f);
  Plan p(h, d);
  p.run(s1, b.data(), nullptr, d1.data(), 1.0f, 0.0f);
  p.run(s2, b.data(), nullptr, d2.data(), 1.0f, 0.0f);
  EXPECT_EQ(0, std::memcmp(d1.data(), d2.data(), d1.size() * sizeof(float)));

  // Bad uploads.
  EXPECT_THROW(upload(h, d, {host[0]}), Error);
  auto bad = host;
  bad[1].rows = 11;
  EXPECT_THROW(upload(h, d, bad), Error);
  bad = host;
  bad[1].set_nibble(3, 2, 0x5);  // repeated index: never valid
  try {
    upload(h, d, bad);
    ADD_FAILURE() << "a forbidden nibble was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_value);
    EXPECT_NE(std::string(e.what()).find("per_batch[1]"), std::string::npos) << e.what();
  }

  // Moved-from / empty matrices.
  SparseMatrix moved = std::move(s2);
  EXPECT_TRUE(s2.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW((void)s2.rows(), Error);
  EXPECT_THROW(p.run(s2, b.data(), nullptr, d2.data(), 1.0f, 0.0f), Error);
  EXPECT_THROW(p.run(SparseMatrix(), b.data(), nullptr, d2.data(), 1.0f, 0.0f), Error);
}

// ------------------------------------------------------------------ errors

// Expects fn() to throw Error with `code` and a message containing every string in `parts`.
template <class F>
void expect_error(F&& fn, Status code, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected " << status_name(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

MatmulDesc good_desc() {
  MatmulDesc d;
  d.m = 64, d.n = 128, d.k = 64;
  d.a_type = d.b_type = d.c_type = d.d_type = T::bf16;
  return d;
}

TEST(MatmulCpu, ValidationNamesFieldAndValue) {
  EXPECT_NO_THROW(good_desc().validate());
  auto check = [](auto mutate, Status code, std::initializer_list<std::string> parts) {
    MatmulDesc d = good_desc();
    mutate(d);
    expect_error([&] { d.validate(); }, code, parts);
    Handle h(Device::cpu);
    expect_error([&] { Plan p(h, d); }, code, parts);
  };
  const auto IA = Status::invalid_argument, NS = Status::not_supported;
  check([](MatmulDesc& d) { d.m = 0; }, IA, {"MatmulDesc.m = 0"});
  check([](MatmulDesc& d) { d.n = -1; }, IA, {"MatmulDesc.n = -1"});
  check([](MatmulDesc& d) { d.k = 48; }, IA, {"MatmulDesc.k = 48", "multiple of 32"});
  check([](MatmulDesc& d) { d.a_type = d.b_type = T::s8, d.c_type = d.d_type = T::s32, d.k = 96; }, IA,
        {"MatmulDesc.k = 96", "multiple of 64"});
  check([](MatmulDesc& d) { d.a_type = d.b_type = T::u4, d.c_type = d.d_type = T::s32, d.k = 64; }, IA,
        {"MatmulDesc.k = 64", "multiple of 128"});
  check([](MatmulDesc& d) { d.a_type = d.b_type = T::tf32, d.c_type = d.d_type = T::f32, d.k = 8; }, IA,
        {"MatmulDesc.k = 8", "multiple of 16"});
  check([](MatmulDesc& d) { d.batch = 0; }, IA, {"MatmulDesc.batch = 0"});
  check([](MatmulDesc& d) { d.ldb = 100; }, IA, {"MatmulDesc.ldb = 100 is smaller than n = 128 for a row-major B"});
  check([](MatmulDesc& d) { d.ldb = 63, d.b_order = Order::col_major; }, IA,
        {"MatmulDesc.ldb = 63 is smaller than k = 64 for a column-major B"});
  check([](MatmulDesc& d) { d.ldb = -2; }, IA, {"MatmulDesc.ldb = -2"});
  check([](MatmulDesc& d) { d.ldc = 127; }, IA, {"MatmulDesc.ldc = 127", "n = 128", "row-major C"});
  check([](MatmulDesc& d) { d.ldd = 10, d.cd_order = Order::col_major; }, IA,
        {"MatmulDesc.ldd = 10", "m = 64", "column-major D"});
  check([](MatmulDesc& d) { d.a_type = d.b_type = T::s4, d.c_type = d.d_type = T::s32, d.k = 128, d.n = 17; }, IA,
        {"MatmulDesc.ldb = 0 (packed: 17) must be even", "s4"});
  check([](MatmulDesc& d) { d.batch = 2, d.stride_d = 64 * 128 - 1; }, IA, {"MatmulDesc.stride_d = 8191", "overlap"});
  check([](MatmulDesc& d) { d.batch = 2, d.stride_b = -1; }, IA, {"MatmulDesc.stride_b = -1"});
  check([](MatmulDesc& d) { d.a_type = T::f64; }, NS, {"MatmulDesc.a_type = f64"});
  check([](MatmulDesc& d) { d.a_type = T::f32; }, NS, {"MatmulDesc.a_type = f32"});
  check([](MatmulDesc& d) { d.b_type = T::f16; }, NS, {"MatmulDesc.b_type = f16", "a_type = bf16"});
  check([](MatmulDesc& d) { d.a_type = d.b_type = T::s8; }, NS, {"MatmulDesc.c_type = bf16", "s32, s8"});
  check([](MatmulDesc& d) { d.d_type = T::s8; }, NS, {"MatmulDesc.d_type = s8", "f16, bf16, f32, e4m3, e5m2"});
  check([](MatmulDesc& d) { d.d_type = T::e3m2; }, NS, {"MatmulDesc.d_type = e3m2"});
  check([](MatmulDesc& d) { d.a_type = d.b_type = T::e4m3, d.b_type = T::s8; }, NS, {"MatmulDesc.b_type = s8"});
}

TEST(MatmulCpu, RunAndCompressArgumentErrors) {
  SEEDED_RNG(rng);
  Handle h(Device::cpu);
  MatmulDesc d = good_desc();
  d.m = 8, d.n = 8;
  d.bias = true;
  std::vector<uint16_t> a(static_cast<size_t>(d.m * d.k), 0), b(static_cast<size_t>(d.k * d.n)), c(64), out(64);
  for (auto& x : b) x = static_cast<uint16_t>(random_nonzero(rng, T::bf16));
  for (int64_t r = 0; r < d.m; ++r)
    for (int64_t col = 0; col < d.k; col += 4) a[static_cast<size_t>(r * d.k + col + 1)] = 0x3F80;  // 1.0
  std::vector<float> bias(8, 0.5f);
  const auto IA = Status::invalid_argument;

  expect_error([&] { compress(h, d, nullptr, 0, 0, PruneMode::check); }, IA, {"a is null"});
  expect_error([&] { compress(h, d, a.data(), 32, 0, PruneMode::check); }, IA, {"lda = 32", "k = 64"});
  SparseMatrix sa = compress(h, d, a.data(), 0, 0, PruneMode::check);
  Plan p(h, d);
  EXPECT_NE(p.describe().find("cpu"), std::string::npos) << p.describe();
  EXPECT_NO_THROW(p.run(sa, b.data(), c.data(), out.data(), 1.0f, 0.0f, bias.data()));
  expect_error([&] { p.run(sa, nullptr, c.data(), out.data(), 1.0f, 0.0f, bias.data()); }, IA, {"b is null"});
  expect_error([&] { p.run(sa, b.data(), c.data(), nullptr, 1.0f, 0.0f, bias.data()); }, IA, {"d is null"});
  expect_error([&] { p.run(sa, b.data(), nullptr, out.data(), 1.0f, 0.5f, bias.data()); }, IA,
               {"c is null", "beta = 0.5"});
  expect_error([&] { p.run(sa, b.data(), c.data(), out.data(), 1.0f, 0.0f, nullptr); }, IA, {"bias is null"});
  MatmulDesc nb = d;
  nb.bias = false;
  Plan p2(h, nb);
  expect_error([&] { p2.run(sa, b.data(), c.data(), out.data(), 1.0f, 0.0f, bias.data()); }, IA, {"MatmulDesc.bias"});
  // Scale vectors: given exactly when the description says so, aligned, not overlapping D.
  std::vector<float> scales(16, 1.5f);
  EpilogueArgs ea;
  ea.bias = bias.data(), ea.scale_rows = scales.data();
  expect_error([&] { p.run(sa, b.data(), out.data(), ea); }, IA, {"scale_rows is given", "MatmulDesc.scale_rows is false"});
  MatmulDesc sd = d;
  sd.scale_rows = sd.scale_cols = true;
  Plan ps(h, sd);
  expect_error([&] { ps.run(sa, b.data(), out.data(), ea); }, IA, {"scale_cols is null", "MatmulDesc.scale_cols"});
  ea.scale_cols = scales.data() + 8;
  EXPECT_NO_THROW(ps.run(sa, b.data(), out.data(), ea));
  ea.scale_cols = reinterpret_cast<const float*>(reinterpret_cast<const char*>(scales.data()) + 2);
  expect_error([&] { ps.run(sa, b.data(), out.data(), ea); }, IA, {"scale_cols", "aligned"});
  std::vector<float> dbuf(64);  // f32 D whose bytes are also given as scale_rows
  MatmulDesc fd = sd;
  fd.c_type = fd.d_type = T::f32;
  Plan pf(h, fd);
  ea.scale_cols = scales.data() + 8, ea.scale_rows = dbuf.data() + 4;
  expect_error([&] { pf.run(sa, b.data(), dbuf.data(), ea); }, IA, {"overlaps scale_rows"});
  // A that does not match the plan.
  MatmulDesc wide = d;
  wide.k = 128;
  std::vector<uint16_t> a2(static_cast<size_t>(d.m * 128), 0);
  SparseMatrix sb = compress(h, wide, a2.data(), 0, 0, PruneMode::check);
  expect_error([&] { p.run(sb, b.data(), c.data(), out.data(), 1.0f, 0.0f, bias.data()); }, IA, {"8 x 128", "8 x 64"});
  MatmulDesc per = d;
  per.batch = 2, per.a_per_batch = true;
  Plan pp(h, per);
  expect_error([&] { pp.run(sa, b.data(), c.data(), out.data(), 1.0f, 0.0f, bias.data()); }, IA, {"batch"});
  // Integer outputs need finite scalars.
  MatmulDesc id;
  id.m = 4, id.n = 4, id.k = 64, id.a_type = id.b_type = T::s8, id.c_type = id.d_type = T::s32;
  std::vector<int8_t> ia(static_cast<size_t>(4 * 64), 0), ib(static_cast<size_t>(64 * 4), 1);
  std::vector<int32_t> io(16);
  SparseMatrix si = compress(h, id, ia.data(), 0, 0, PruneMode::check);
  expect_error([&] { Plan(h, id).run(si, ib.data(), nullptr, io.data(), NAN, 0.0f); }, IA, {"alpha = nan"});
}

TEST(MatmulCpu, CheckModeReportsTheViolation) {
  Handle h(Device::cpu);
  for (T t : {T::bf16, T::s8}) {
    MatmulDesc d;
    d.m = 8, d.n = 4, d.k = k_unit(t);
    d.a_type = d.b_type = t, d.c_type = d.d_type = is_int(t) ? T::s32 : T::f32;
    const size_t w = static_cast<size_t>(mem_width(t) / 8);
    std::vector<uint8_t> a(static_cast<size_t>(d.m * d.k) * w, 0);
    // Row 5, chunk 2 (cols 8..11): three non-zeros.
    for (int64_t c : {8, 9, 11}) a[static_cast<size_t>(5 * d.k + c) * w + (w - 1)] = 0x3F;
    expect_error([&] { compress(h, d, a.data(), 0, 0, PruneMode::check); }, Status::pattern_violation,
                 {"row 5", "chunk 2"});
    EXPECT_NO_THROW(compress(h, d, a.data(), 0, 0, PruneMode::magnitude));
    // Per-batch A: the entry is named too.
    d.batch = 2, d.a_per_batch = true;
    std::vector<uint8_t> a2(a.size() * 2, 0);
    std::copy(a.begin(), a.end(), a2.begin() + static_cast<std::ptrdiff_t>(a.size()));
    expect_error([&] { compress(h, d, a2.data(), 0, 0, PruneMode::check); }, Status::pattern_violation,
                 {"batch entry 1", "row 5", "chunk 2"});
  }
}

}  // namespace
}  // namespace spmma
