// SPDX-License-Identifier: BSD-3-Clause
// Tests for the host sparse formats (include/spmma/sparse.hpp, docs/layouts.md "Compressed
// matrix"). Properties run on fresh random inputs: the seed is printed and recorded, and
// SPMMA_SEED=<n> replays a run.
#include <chrono>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "spmma/error.hpp"
#include "spmma/matrix.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma {
namespace {

// ------------------------------------------------------------------ helpers

constexpr ElemType kSparseTypes[] = {
    ElemType::f16,  ElemType::bf16, ElemType::tf32, ElemType::f32, ElemType::e4m3, ElemType::e5m2, ElemType::e3m2,
    ElemType::e2m3, ElemType::e2m1, ElemType::s8,   ElemType::u8,  ElemType::s4,   ElemType::u4,
};
constexpr ElemType kDenseOnlyTypes[] = {ElemType::f64, ElemType::ue8m0, ElemType::ue4m3, ElemType::s32, ElemType::b1};

// Expected pattern per type, written out independently of the library's table.
struct Expect {
  int chunk, kept, group;
};
Expect expect_for(ElemType t) {
  switch (t) {
    case ElemType::tf32:
    case ElemType::f32: return {2, 1, 1};
    case ElemType::s4:
    case ElemType::u4:
    case ElemType::e2m1: return {8, 4, 2};
    default: return {4, 2, 1};
  }
}
Expect expect_of(Pattern p) {
  switch (p) {
    case Pattern::p1_2: return {2, 1, 1};
    case Pattern::p4_8_pairs: return {8, 4, 2};
    default: return {4, 2, 1};
  }
}

// A (type, pattern) pair the properties run on: every sparse type with its default pattern
// (through the overloads without a pattern), and e2m1 under 2:4 (.kind::f8f6f4, through the
// explicit-pattern overloads).
struct Case {
  ElemType t;
  Pattern p;
  bool dflt;
  Expect ex() const { return expect_of(p); }
  std::string name() const { return std::string(type_name(t)) + " " + pattern_info(p).name; }
};
std::vector<Case> all_cases() {
  std::vector<Case> v;
  for (ElemType t : kSparseTypes) {
    const Expect e = expect_for(t);
    v.push_back({t, e.chunk == 2 ? Pattern::p1_2 : e.chunk == 8 ? Pattern::p4_8_pairs : Pattern::p2_4, true});
  }
  v.push_back({ElemType::e2m1, Pattern::p2_4, false});
  return v;
}
const std::vector<Case> kCases = all_cases();

// The library entry points for a case; the default-pattern overloads also agree with the
// explicit ones.
Matrix prune(const Case& k, const Matrix& m) {
  if (!k.dflt) return prune_magnitude(m, k.p);
  Matrix r = prune_magnitude(m);
  EXPECT_EQ(r, prune_magnitude(m, k.p));
  return r;
}
Matrix pmask(const Case& k, const Matrix& m, const std::vector<uint8_t>& mask) {
  return k.dflt ? prune_mask(m, mask) : prune_mask(m, mask, k.p);
}
std::optional<Violation> check(const Case& k, const Matrix& m, PairRule rule = PairRule::some_nonzero) {
  return k.dflt ? check_pattern(m, rule) : check_pattern(m, k.p, rule);
}
void require(const Case& k, const Matrix& m) { k.dflt ? require_pattern(m) : require_pattern(m, k.p); }
Compressed comp(const Case& k, const Matrix& m, bool ordered = true) {
  if (!k.dflt) return compress(m, k.p, ordered);
  Compressed c = compress(m, ordered);
  const Compressed e = compress(m, k.p, ordered);
  EXPECT_EQ(c.values, e.values);
  EXPECT_EQ(c.metadata, e.metadata);
  return c;
}

uint32_t pick_seed() {
  if (const char* s = std::getenv("SPMMA_SEED")) return static_cast<uint32_t>(std::strtoul(s, nullptr, 0));
  return std::random_device{}();
}

#define SEEDED_RNG(rng)                                                                                 \
  const uint32_t rng##_seed = pick_seed();                                                              \
  ::testing::Test::RecordProperty("seed", std::to_string(rng##_seed));                                  \
  std::cout << "[   seed   ] " << rng##_seed << " (replay with SPMMA_SEED=" << rng##_seed << ")\n";    \
  SCOPED_TRACE("seed " + std::to_string(rng##_seed));                                                   \
  std::mt19937 rng(rng##_seed)

int width(ElemType t) { return type_info(t).bits; }

uint64_t random_bits(std::mt19937& rng, ElemType t) {
  const int w = width(t);
  uint64_t b = (static_cast<uint64_t>(rng()) << 32) | rng();
  if (w < 64) b &= (uint64_t{1} << w) - 1;
  if (t == ElemType::tf32) b &= ~uint64_t{0x1FFF};  // tf32: low 13 mantissa bits are zero
  return b;
}

uint64_t random_nonzero(std::mt19937& rng, ElemType t) {
  for (;;) {
    const uint64_t b = random_bits(rng, t);
    if (!is_zero(t, b)) return b;
  }
}

// -0.0 for float types; nullopt for integers.
std::optional<uint64_t> neg_zero(ElemType t) {
  if (!type_info(t).is_float) return std::nullopt;
  return uint64_t{1} << (width(t) - 1);
}

uint64_t a_zero(std::mt19937& rng, ElemType t) {
  const auto nz = neg_zero(t);
  return (nz && (rng() & 1)) ? *nz : 0;
}

// Random dense matrix: each element zero (+0 or -0) with probability p_zero, else a random
// non-zero pattern (NaN and Inf included where the type has them). Never all zeros.
Matrix random_dense(std::mt19937& rng, ElemType t, int64_t rows, int64_t cols, double p_zero) {
  Matrix m(t, rows, cols);
  std::bernoulli_distribution zero(p_zero);
  bool any = false;
  for (auto& b : m.bits) {
    b = zero(rng) ? a_zero(rng, t) : random_nonzero(rng, t);
    any = any || !is_zero(t, b);
  }
  if (!any) m.bits[rng() % m.bits.size()] = random_nonzero(rng, t);
  return m;
}

// Random shape with cols a multiple of the chunk width.
std::pair<int64_t, int64_t> random_shape(std::mt19937& rng, const Case& k) {
  const int chunk = k.ex().chunk;
  const int64_t rows = 1 + rng() % 9;
  const int64_t cols = chunk * static_cast<int64_t>(1 + rng() % 11);  // chunks/row 1..11: padded words too
  return {rows, cols};
}

// Dense offsets (within a chunk) named by a nibble, in stored order — the brief's formulas:
// 2:4 {idx0, idx1}; 4:8 {2idx0, 2idx0+1, 2idx1, 2idx1+1}; 1:2 0x4 -> {0}, 0xE -> {1}.
std::vector<int> named_offsets(const Case& k, unsigned nib) {
  const unsigned i0 = nib & 3u, i1 = (nib >> 2) & 3u;
  switch (k.ex().chunk) {
    case 2: return {nib == 0xE ? 1 : 0};
    case 8: return {int(2 * i0), int(2 * i0 + 1), int(2 * i1), int(2 * i1 + 1)};
    default: return {int(i0), int(i1)};
  }
}

const std::set<unsigned> kOrdered = {0x4, 0x8, 0x9, 0xC, 0xD, 0xE};
const std::set<unsigned> kUnordered = {0x1, 0x2, 0x3, 0x4, 0x6, 0x7, 0x8, 0x9, 0xB, 0xC, 0xD, 0xE};
const std::set<unsigned> kTf32 = {0x4, 0xE};

const std::set<unsigned>& valid_set(const Case& k, bool ordered) {
  if (k.ex().chunk == 2) return kTf32;
  return ordered ? kOrdered : kUnordered;
}

// Runs f, expects an spmma::Error with this code, returns its message.
template <class F>
std::string error_of(F&& f, Status code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected spmma::Error, got " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected spmma::Error(" << status_name(code) << "), nothing was thrown";
  return {};
}

std::string where(int64_t r, int64_t c, int chunk) {
  return "row " + std::to_string(r) + ", chunk " + std::to_string(c) + " (cols " + std::to_string(c * chunk) + ".." +
         std::to_string(c * chunk + chunk - 1) + ")";
}

// Reference prune: group g is kept when fewer than `keep` groups beat it; h beats g when its key
// is larger, or equal and h is the lower column. Key: NaN above all, else sum of |x|.
Matrix reference_prune(const Case& k, const Matrix& d) {
  const Expect ex = k.ex();
  const int groups = ex.chunk / ex.group, keep = ex.kept / ex.group;
  Matrix out(d.type, d.rows, d.cols);
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t c0 = 0; c0 < d.cols; c0 += ex.chunk) {
      std::array<std::pair<bool, double>, 4> key{};  // groups <= 4
      for (int g = 0; g < groups; ++g)
        for (int e = 0; e < ex.group; ++e) {
          const double v = decode(d.type, d.at(r, c0 + g * ex.group + e));
          if (std::isnan(v)) key[g].first = true;
          else key[g].second += std::abs(v);
        }
      auto beats = [&](int h, int g) {
        if (key[h].first != key[g].first) return key[h].first;
        if (key[h].first || key[h].second == key[g].second) return h < g;
        return key[h].second > key[g].second;
      };
      for (int g = 0; g < groups; ++g) {
        int better = 0;
        for (int h = 0; h < groups; ++h) better += (h != g && beats(h, g)) ? 1 : 0;
        if (better < keep)
          for (int e = 0; e < ex.group; ++e) out.at(r, c0 + g * ex.group + e) = d.at(r, c0 + g * ex.group + e);
      }
    }
  return out;
}

// A random matrix that satisfies the pattern, with -0.0 sprinkled in and chunks with 0 or 1
// non-zero groups likely.
Matrix random_sparse(std::mt19937& rng, const Case& k, int64_t rows, int64_t cols) {
  const ElemType t = k.t;
  Matrix p = prune(k, random_dense(rng, t, rows, cols, 0.35));
  if (auto nz = neg_zero(t))
    for (auto& b : p.bits)
      if (is_zero(t, b) && rng() % 3 == 0) b = *nz;
  return p;
}

// ------------------------------------------------------------------ patterns

TEST(SparsePattern, PatternForEveryType) {
  for (ElemType t : kSparseTypes) {
    SCOPED_TRACE(std::string(type_name(t)));
    const PatternInfo& info = pattern_info(pattern_for(t));
    const Expect ex = expect_for(t);
    EXPECT_EQ(info.chunk, ex.chunk);
    EXPECT_EQ(info.kept, ex.kept);
    EXPECT_EQ(info.group, ex.group);
  }
  EXPECT_STREQ(pattern_info(Pattern::p2_4).name, "2:4");
  EXPECT_STREQ(pattern_info(Pattern::p1_2).name, "1:2");
  EXPECT_STREQ(pattern_info(Pattern::p4_8_pairs).name, "4:8 pair-wise");
  for (ElemType t : kDenseOnlyTypes) {
    const std::string msg = error_of([&] { pattern_for(t); }, Status::not_supported);
    EXPECT_NE(msg.find(std::string(type_name(t))), std::string::npos) << msg;
    error_of([&] { check_pattern(Matrix(t, 2, 8)); }, Status::not_supported);
    error_of([&] { compress(Matrix(t, 2, 8)); }, Status::not_supported);
  }
}

TEST(SparsePattern, NibbleValidSets) {
  for (const Case& k : kCases) {
    for (bool ordered : {true, false}) {
      for (unsigned v = 0; v < 16; ++v)
        EXPECT_EQ(nibble_valid(k.p, static_cast<uint8_t>(v), ordered), valid_set(k, ordered).count(v) == 1)
            << k.name() << " ordered=" << ordered << " nibble " << v;
      EXPECT_FALSE(nibble_valid(k.p, 0x14, ordered));
    }
  }
}

TEST(SparsePattern, ExplicitPatternMustBeAllowedForTheType) {
  // Only e2m1 takes two patterns: 4:8 pair-wise (.kind::mxf4*, the default) and 2:4 (.kind::f8f6f4).
  for (ElemType t : kSparseTypes)
    for (Pattern p : {Pattern::p2_4, Pattern::p1_2, Pattern::p4_8_pairs}) {
      const bool want = p == pattern_for(t) || (t == ElemType::e2m1 && p == Pattern::p2_4);
      EXPECT_EQ(pattern_allowed(t, p), want) << type_name(t) << " " << pattern_info(p).name;
      if (want) continue;
      const Matrix m(t, 2, 8);
      const std::string msg = error_of([&] { compress(m, p); }, Status::invalid_argument);
      EXPECT_NE(msg.find(std::string(type_name(t))), std::string::npos) << msg;
      EXPECT_NE(msg.find(pattern_info(p).name), std::string::npos) << msg;
      error_of([&] { check_pattern(m, p); }, Status::invalid_argument);
      error_of([&] { prune_magnitude(m, p); }, Status::invalid_argument);
      error_of([&] { prune_mask(m, std::vector<uint8_t>(16, 0), p); }, Status::invalid_argument);
      Compressed c = compress(m);
      c.pattern = p;
      error_of([&] { decompress(c); }, Status::invalid_argument);
    }
  for (ElemType t : kDenseOnlyTypes) {
    EXPECT_FALSE(pattern_allowed(t, Pattern::p2_4));
    error_of([&] { compress(Matrix(t, 2, 8), Pattern::p2_4); }, Status::not_supported);
  }
  // e2m1 under 2:4: two elements per 4-wide chunk, one 8-bit container each in value_bytes.
  Matrix e(ElemType::e2m1, 1, 8);
  e.set_value(0, 1, 6.0);
  e.set_value(0, 3, -0.5);
  e.set_value(0, 4, 1.5);
  EXPECT_TRUE(check_pattern(e).has_value());  // 4:8 pair-wise: pairs 0, 1, 2 are non-zero
  ASSERT_FALSE(check_pattern(e, Pattern::p2_4).has_value());
  const Compressed c = compress(e, Pattern::p2_4);
  EXPECT_EQ(c.pattern, Pattern::p2_4);
  EXPECT_EQ(c.metadata, (std::vector<uint16_t>{0x8D}));  // chunk 0: 1 | 3<<2 = 0xD; chunk 1: only 0 -> 0x8
  EXPECT_EQ(c.values.bits, (std::vector<uint64_t>{e.at(0, 1), e.at(0, 3), e.at(0, 4), 0}));
  EXPECT_EQ(c.value_bytes(), 4u);
  EXPECT_EQ(compress(Matrix(ElemType::e2m1, 1, 8)).value_bytes(), 2u);  // 4:8: 4 elements, 2 per byte
  EXPECT_EQ(decompress(c), e);
}

// ------------------------------------------------------------------ prune / check

TEST(SparseProperty, PruneThenCheckPasses) {
  SEEDED_RNG(rng);
  for (const Case& k : kCases) {
    const ElemType t = k.t;
    SCOPED_TRACE(k.name());
    for (int rep = 0; rep < 20; ++rep) {
      const auto [rows, cols] = random_shape(rng, k);
      const double p_zero = (rep % 4) * 0.25;  // 0, 0.25, 0.5, 0.75
      const Matrix d = random_dense(rng, t, rows, cols, p_zero);
      const Matrix p = prune(k, d);
      EXPECT_EQ(p.type, t);
      EXPECT_EQ(p.rows, rows);
      EXPECT_EQ(p.cols, cols);
      const auto v = check(k, p);
      EXPECT_FALSE(v.has_value()) << v->message;
      EXPECT_NO_THROW(require(k, p));
      EXPECT_EQ(p, reference_prune(k, d));
      // Idempotent, and a dense matrix with every element non-zero breaks the pattern.
      EXPECT_EQ(prune(k, p), p);
      if (p_zero == 0.0) {
        const auto vd = check(k, d);
        ASSERT_TRUE(vd.has_value());
        EXPECT_EQ(vd->row, 0);
        EXPECT_EQ(vd->chunk, 0);
      }
    }
  }
}

TEST(SparsePrune, MagnitudeTiesAndNaN) {
  auto row = [](ElemType t, std::vector<double> xs) {
    Matrix m(t, 1, static_cast<int64_t>(xs.size()));
    for (size_t i = 0; i < xs.size(); ++i) m.bits[i] = encode(t, xs[i]);
    return m;
  };
  auto kept = [](const Matrix& in, const Matrix& out) {
    std::vector<int> k;
    for (int64_t c = 0; c < in.cols; ++c)
      if (out.at(0, c) == in.at(0, c) && !is_zero(in.type, in.at(0, c))) k.push_back(static_cast<int>(c));
    return k;
  };
  const double nan = std::nan(""), inf = INFINITY;
  using V = std::vector<int>;
  // 2:4 by |x|, ties keep the lower column.
  EXPECT_EQ(kept(row(ElemType::f16, {-5, 1, 2, -0.5}), prune_magnitude(row(ElemType::f16, {-5, 1, 2, -0.5}))), (V{0, 2}));
  {
    const Matrix m = row(ElemType::f16, {1, 1, 1, 1});
    EXPECT_EQ(kept(m, prune_magnitude(m)), (V{0, 1}));
  }
  {
    const Matrix m = row(ElemType::bf16, {2, -1, 1, -2});
    EXPECT_EQ(kept(m, prune_magnitude(m)), (V{0, 3}));
  }
  {
    const Matrix m = row(ElemType::s8, {1, -3, 3, 2});  // |-3| == |3|: both kept
    EXPECT_EQ(kept(m, prune_magnitude(m)), (V{1, 2}));
  }
  // NaN counts as the largest, above Inf; two NaNs tie (lower column).
  for (ElemType t : {ElemType::f16, ElemType::bf16, ElemType::e4m3, ElemType::e5m2}) {
    SCOPED_TRACE(std::string(type_name(t)));
    const Matrix a = row(t, {100, nan, 200, 1});
    const Matrix pa = prune_magnitude(a);
    EXPECT_TRUE(is_nan(t, pa.at(0, 1)));
    EXPECT_EQ(kept(a, pa), (V{1, 2}));
    const Matrix b = row(t, {nan, 3, nan, nan});
    const Matrix pb = prune_magnitude(b);
    EXPECT_TRUE(is_nan(t, pb.at(0, 0)));
    EXPECT_TRUE(is_nan(t, pb.at(0, 2)));
    EXPECT_TRUE(is_zero(t, pb.at(0, 1)));
    EXPECT_TRUE(is_zero(t, pb.at(0, 3)));
    EXPECT_FALSE(check_pattern(pb).has_value());
  }
  for (ElemType t : {ElemType::f16, ElemType::e5m2}) {
    const Matrix m = row(t, {inf, 1, nan, -inf});
    const Matrix p = prune_magnitude(m);
    EXPECT_TRUE(is_nan(t, p.at(0, 2)));
    EXPECT_EQ(p.at(0, 0), m.at(0, 0));  // Inf ties -Inf: the lower column
    EXPECT_TRUE(is_zero(t, p.at(0, 3)));
  }
  for (ElemType t : {ElemType::tf32, ElemType::f32}) {
    const Matrix m = row(t, {1e30, nan, 7, 7, -2, 2});
    const Matrix p = prune_magnitude(m);
    EXPECT_TRUE(is_zero(t, p.at(0, 0)));
    EXPECT_TRUE(is_nan(t, p.at(0, 1)));
    EXPECT_EQ(kept(m, p), (V{1, 2, 4}));  // NaN kept; ties keep the lower column
  }
  // 4:8 pair-wise by the sum of |x| of each pair; ties keep the lower pair.
  {
    const Matrix m = row(ElemType::s4, {1, 2, -3, 0, 0, 0, 2, -1});  // sums 3, 3, 0, 3
    EXPECT_EQ(kept(m, prune_magnitude(m)), (V{0, 1, 2}));
    const Matrix n = row(ElemType::u4, {1, 1, 0, 0, 9, 0, 3, 3});  // sums 2, 0, 9, 6
    EXPECT_EQ(kept(n, prune_magnitude(n)), (V{4, 6, 7}));
    const Matrix e = row(ElemType::e2m1, {-6, 0.5, 1, 1, 4, -4, 0.5, 0.5});  // 6.5, 2, 8, 1
    EXPECT_EQ(kept(e, prune_magnitude(e)), (V{0, 1, 4, 5}));
    const Matrix s = row(ElemType::e2m1, {6, 0, 4, -4, 3, 4, 0, 0});  // sums 6, 8, 7, 0 (max would keep pair 0)
    EXPECT_EQ(kept(s, prune_magnitude(s)), (V{2, 3, 4, 5}));
  }
  // Dropped positions are +0 bits, kept -0.0 stays -0.0.
  {
    Matrix m = row(ElemType::f16, {-0.0, 0.0, -0.0, 3});
    const Matrix p = prune_magnitude(m);
    EXPECT_EQ(p.at(0, 0), 0x8000u);  // |−0| ties |+0|: lower column kept, bits as they were
    EXPECT_EQ(p.at(0, 1), 0u);
    EXPECT_EQ(p.at(0, 2), 0u);       // dropped -0.0 -> +0.0
    EXPECT_EQ(p.at(0, 3), m.at(0, 3));
  }
}

TEST(SparseProperty, PruneMaskHonoursMask) {
  SEEDED_RNG(rng);
  for (const Case& k : kCases) {
    const ElemType t = k.t;
    SCOPED_TRACE(k.name());
    const Expect ex = k.ex();
    const int groups = ex.chunk / ex.group;
    for (int rep = 0; rep < 10; ++rep) {
      const auto [rows, cols] = random_shape(rng, k);
      const Matrix d = random_dense(rng, t, rows, cols, 0.2);
      std::vector<uint8_t> mask(d.bits.size(), 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c0 = 0; c0 < cols; c0 += ex.chunk) {
          std::vector<int> g(groups);
          for (int i = 0; i < groups; ++i) g[i] = i;
          std::shuffle(g.begin(), g.end(), rng);
          const int n = static_cast<int>(rng() % (ex.kept / ex.group + 1));  // 0..kept groups
          for (int i = 0; i < n; ++i)
            for (int e = 0; e < ex.group; ++e)
              mask[static_cast<size_t>(r * cols + c0 + g[i] * ex.group + e)] = static_cast<uint8_t>(1 + rng() % 255);
        }
      const Matrix p = pmask(k, d, mask);
      for (size_t i = 0; i < d.bits.size(); ++i) ASSERT_EQ(p.bits[i], mask[i] ? d.bits[i] : 0u) << "element " << i;
      EXPECT_FALSE(check(k, p).has_value());

      // One chunk keeping one group too many: pattern_violation naming its row and chunk.
      const int64_t br = rng() % rows, bc = rng() % (cols / ex.chunk);
      std::vector<uint8_t> bad = mask;
      std::vector<int> g(groups);
      for (int i = 0; i < groups; ++i) g[i] = i;
      std::shuffle(g.begin(), g.end(), rng);
      for (int e = 0; e < ex.chunk; ++e) bad[static_cast<size_t>(br * cols + bc * ex.chunk + e)] = 0;
      for (int i = 0; i <= ex.kept / ex.group; ++i)
        for (int e = 0; e < ex.group; ++e) bad[static_cast<size_t>(br * cols + bc * ex.chunk + g[i] * ex.group + e)] = 1;
      std::string msg = error_of([&] { pmask(k, d, bad); }, Status::pattern_violation);
      EXPECT_NE(msg.find(where(br, bc, ex.chunk)), std::string::npos) << msg;
      EXPECT_NE(msg.find("allows at most"), std::string::npos) << msg;

      if (ex.group == 2) {  // half a pair kept
        std::vector<uint8_t> half = mask;
        for (int e = 0; e < ex.chunk; ++e) half[static_cast<size_t>(br * cols + bc * ex.chunk + e)] = 0;
        const int pair = static_cast<int>(rng() % groups), side = static_cast<int>(rng() % 2);
        half[static_cast<size_t>(br * cols + bc * ex.chunk + 2 * pair + side)] = 1;
        msg = error_of([&] { pmask(k, d, half); }, Status::pattern_violation);
        EXPECT_NE(msg.find(where(br, bc, ex.chunk)), std::string::npos) << msg;
        const std::string pc = "pair at cols " + std::to_string(bc * 8 + 2 * pair) + ".." +
                               std::to_string(bc * 8 + 2 * pair + 1) + " is half kept";
        EXPECT_NE(msg.find(pc), std::string::npos) << msg;
      }
      // Wrong size.
      std::vector<uint8_t> short_mask(mask.begin(), mask.end() - 1);
      error_of([&] { pmask(k, d, short_mask); }, Status::invalid_argument);
    }
  }
}

TEST(SparseShape, ColsNotMultipleOfChunkIsInvalidArgument) {
  for (const Case& k : kCases) {
    const ElemType t = k.t;
    SCOPED_TRACE(k.name());
    const int chunk = k.ex().chunk;
    for (int64_t cols : {int64_t{1}, int64_t(chunk + 1), int64_t(3 * chunk - 1)}) {
      const Matrix m(t, 2, cols);
      std::string msg = error_of([&] { check(k, m); }, Status::invalid_argument);
      EXPECT_NE(msg.find(std::to_string(cols)), std::string::npos) << msg;
      error_of([&] { require(k, m); }, Status::invalid_argument);
      error_of([&] { prune_magnitude(m, k.p); }, Status::invalid_argument);
      error_of([&] { pmask(k, m, std::vector<uint8_t>(m.bits.size(), 0)); }, Status::invalid_argument);
      error_of([&] { compress(m, k.p); }, Status::invalid_argument);
      if (k.dflt) {
        error_of([&] { prune_magnitude(m); }, Status::invalid_argument);
        error_of([&] { compress(m); }, Status::invalid_argument);
      }
    }
    // A zero-width or zero-height matrix is fine.
    EXPECT_FALSE(check(k, Matrix(t, 0, chunk)).has_value());
    EXPECT_FALSE(check(k, Matrix(t, 3, 0)).has_value());
  }
}

// ------------------------------------------------------------------ violations

TEST(SparseProperty, CompressRejectsViolationNamingRowAndChunk) {
  SEEDED_RNG(rng);
  for (const Case& k : kCases) {
    const ElemType t = k.t;
    SCOPED_TRACE(k.name());
    const Expect ex = k.ex();
    const int groups = ex.chunk / ex.group;
    for (int rep = 0; rep < 20; ++rep) {
      const auto [rows, cols] = random_shape(rng, k);
      Matrix m = random_sparse(rng, k, rows, cols);
      const int64_t r = rng() % rows, c = rng() % (cols / ex.chunk);
      // Make chunk (r, c) hold kept/group + 1 (or all) non-zero groups.
      std::vector<int> g(groups);
      for (int i = 0; i < groups; ++i) g[i] = i;
      std::shuffle(g.begin(), g.end(), rng);
      const int n = (rep % 2) ? groups : ex.kept / ex.group + 1;
      for (int e = 0; e < ex.chunk; ++e) m.at(r, c * ex.chunk + e) = a_zero(rng, t);
      for (int i = 0; i < n; ++i)
        for (int e = 0; e < ex.group; ++e) m.at(r, c * ex.chunk + g[i] * ex.group + e) = random_nonzero(rng, t);
      const auto v = check(k, m);
      ASSERT_TRUE(v.has_value());
      EXPECT_EQ(v->row, r);
      EXPECT_EQ(v->chunk, c);
      EXPECT_EQ(v->first_col, c * ex.chunk);
      EXPECT_EQ(v->nonzeros, n * ex.group);
      EXPECT_NE(v->message.find(where(r, c, ex.chunk)), std::string::npos) << v->message;
      EXPECT_NE(v->message.find(std::to_string(n * ex.group) + " non-zeros"), std::string::npos) << v->message;
      EXPECT_NE(v->message.find(std::string(pattern_info(k.p).name) + " allows at most"), std::string::npos)
          << v->message;
      for (bool ordered : {true, false}) {
        const std::string msg = error_of([&] { comp(k, m, ordered); }, Status::pattern_violation);
        EXPECT_NE(msg.find(where(r, c, ex.chunk)), std::string::npos) << msg;
      }
      const std::string msg = error_of([&] { require(k, m); }, Status::pattern_violation);
      EXPECT_EQ(msg, v->message);
    }
  }
}

TEST(SparseViolation, ExactMessages) {
  Matrix m(ElemType::f16, 4, 24);
  for (int c = 20; c < 23; ++c) m.set_value(3, c, 1.0 + c);
  m.set_value(3, 23, -0.0);  // -0.0 is zero: still 3 non-zeros
  auto v = check_pattern(m);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->message, "row 3, chunk 5 (cols 20..23): 3 non-zeros, 2:4 allows at most 2");

  Matrix t(ElemType::tf32, 2, 6);
  t.set_value(1, 2, 1.5);
  t.set_value(1, 3, std::nan(""));  // NaN is never zero
  v = check_pattern(t);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->message, "row 1, chunk 1 (cols 2..3): 2 non-zeros, 1:2 allows at most 1");

  Matrix u(ElemType::u4, 3, 16);
  u.set_value(2, 10, 5);  // pair cols 10..11 half zero
  u.set_value(2, 12, 1);
  u.set_value(2, 13, 2);
  v = check_pattern(u, PairRule::both_or_neither);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->message, "row 2, chunk 1 (cols 8..15): pair at cols 10..11 is half zero; 4:8 pair-wise needs both or neither");
  EXPECT_EQ(v->row, 2);
  EXPECT_EQ(v->chunk, 1);
  EXPECT_EQ(v->nonzeros, 3);
  EXPECT_EQ(error_of([&] { require_pattern(u, PairRule::both_or_neither); }, Status::pattern_violation), v->message);
  // The default rule accepts the half-zero pair (the stored pair simply holds a zero) ...
  EXPECT_FALSE(check_pattern(u).has_value());
  const Compressed cu = compress(u);
  EXPECT_EQ(cu.nibble(2, 1), 0x9);  // pairs 1 (cols 10..11) and 2 (cols 12..13) of the chunk
  EXPECT_EQ(decompress(cu), u);
  // ... but not a third non-zero pair.
  u.set_value(2, 8, 1);
  v = check_pattern(u);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->message, "row 2, chunk 1 (cols 8..15): 3 non-zero pairs (4 non-zeros), 4:8 pair-wise allows at most 2 non-zero pairs");
}

// ------------------------------------------------------------------ compress / decompress

TEST(SparseProperty, CompressDecompressRoundTrip) {
  SEEDED_RNG(rng);
  for (const Case& k : kCases) {
    const ElemType t = k.t;
    SCOPED_TRACE(k.name());
    const Expect ex = k.ex();
    for (int rep = 0; rep < 20; ++rep) {
      const auto [rows, cols] = random_shape(rng, k);
      const Matrix p = random_sparse(rng, k, rows, cols);
      for (bool ordered : {true, false}) {
        const Compressed c = comp(k, p, ordered);
        EXPECT_EQ(c.type, t);
        EXPECT_EQ(c.pattern, k.p);
        EXPECT_EQ(c.rows, rows);
        EXPECT_EQ(c.cols, cols);
        EXPECT_EQ(c.ordered, ordered);
        EXPECT_EQ(c.values.type, t);
        EXPECT_EQ(c.values.rows, rows);
        EXPECT_EQ(c.values.cols, cols / 2);
        const int64_t chunks = cols / ex.chunk, words = (chunks + 3) / 4;
        EXPECT_EQ(c.chunks_per_row(), chunks);
        EXPECT_EQ(c.meta_words_per_row(), words);
        ASSERT_EQ(c.metadata.size(), static_cast<size_t>(rows * words));
        EXPECT_EQ(c.metadata_bytes(), static_cast<size_t>(rows * words * 2));

        // Independent decode of the layout; also the expected round trip.
        Matrix expect(t, rows, cols);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t ch = 0; ch < chunks; ++ch) {
            const unsigned nib = (c.metadata[static_cast<size_t>(r * words + ch / 4)] >> (4 * (ch % 4))) & 0xF;
            ASSERT_EQ(nib, c.nibble(r, ch));
            ASSERT_TRUE(kOrdered.count(nib)) << "compress wrote a non-ordered nibble " << nib;
            ASSERT_TRUE(valid_set(k, true).count(nib));
            const std::vector<int> off = named_offsets(k, nib);
            for (size_t i = 0; i < off.size(); ++i) {
              const uint64_t stored = c.values.at(r, ch * ex.kept + static_cast<int64_t>(i));
              EXPECT_EQ(stored, p.at(r, ch * ex.chunk + off[i]));  // bits as they were, -0.0 included
              expect.at(r, ch * ex.chunk + off[i]) = stored;
            }
            for (int e = 0; e < ex.chunk; ++e) {  // every non-zero is named by the nibble
              if (!is_zero(t, p.at(r, ch * ex.chunk + e))) {
                EXPECT_NE(std::find(off.begin(), off.end(), e), off.end()) << "row " << r << " chunk " << ch;
              }
            }
          }
          for (int64_t ch = chunks; ch < words * 4; ++ch)  // padding nibbles are zero
            EXPECT_EQ((c.metadata[static_cast<size_t>(r * words + ch / 4)] >> (4 * (ch % 4))) & 0xF, 0u);
        }
        const Matrix back = decompress(c);
        EXPECT_EQ(back, expect);
        // Bit-exact except a -0.0 at a position no nibble names, which comes back as +0.0.
        for (size_t i = 0; i < p.bits.size(); ++i) {
          if (back.bits[i] == p.bits[i]) continue;
          ASSERT_TRUE(neg_zero(t).has_value() && p.bits[i] == *neg_zero(t) && back.bits[i] == 0)
              << "element " << i << ": " << p.bits[i] << " came back as " << back.bits[i];
        }
        EXPECT_EQ(comp(k, back, ordered).metadata, c.metadata);
      }
    }
  }
}

TEST(SparseCompress, NegativeZero) {
  // Row: [-0, 7, -0, -0]: one non-zero at position 1 -> nibble 0x9 (positions 1, 2): the
  // -0.0 at position 2 is stored and round-trips; those at 0 and 3 come back as +0.0.
  Matrix m(ElemType::f16, 1, 4);
  m.bits = {0x8000, 0x4700, 0x8000, 0x8000};
  const Compressed c = compress(m);
  EXPECT_EQ(c.nibble(0, 0), 0x9);
  EXPECT_EQ(c.values.bits, (std::vector<uint64_t>{0x4700, 0x8000}));
  EXPECT_EQ(decompress(c).bits, (std::vector<uint64_t>{0x0000, 0x4700, 0x8000, 0x0000}));
  // An all -0.0 chunk is empty: 0xE.
  Matrix z(ElemType::bf16, 1, 4);
  z.bits = {0x8000, 0x8000, 0x8000, 0x8000};
  EXPECT_FALSE(check_pattern(z).has_value());
  EXPECT_EQ(compress(z).nibble(0, 0), 0xE);
}

// A padding slot stores the dense bits found there: -0.0 (e4m3, e5m2) and tf32 zeros whose
// ignored low 13 bits are set, unchanged (docs/layouts.md, "the padding index").
TEST(SparseCompress, PaddingSlotKeepsTheDenseBits) {
  Matrix t(ElemType::tf32, 1, 4);
  t.bits = {0x00000000, 0x80000ABC, 0x3F801234, 0x00001FFF};  // chunk 0: no non-zero; chunk 1: element 0
  ASSERT_FALSE(check_pattern(t).has_value());
  const Compressed ct = compress(t);
  EXPECT_EQ(ct.metadata, (std::vector<uint16_t>{0x4E}));
  EXPECT_EQ(ct.values.bits, (std::vector<uint64_t>{0x80000ABC, 0x3F801234}));
  Matrix e(ElemType::e4m3, 1, 8);
  e.bits = {0x80, 0x80, 0x38, 0x80, 0xBC, 0x80, 0x80, 0x00};  // only 2 -> slots 2, 3; only 0 -> slots 0, 2
  const Compressed ce = compress(e);
  EXPECT_EQ(ce.metadata, (std::vector<uint16_t>{0x8E}));
  EXPECT_EQ(ce.values.bits, (std::vector<uint64_t>{0x38, 0x80, 0xBC, 0x80}));
}

// NaNs rank equal whatever their payload and sign: among them the lower column is kept. tf32
// reads its NaN without the low 13 bits (0x7F800001 is Inf there, an f32 NaN).
TEST(SparsePrune, NaNPayloadsAndSignsTie) {
  const auto pruned = [](ElemType t, std::vector<uint64_t> bits) {
    Matrix m(t, 1, static_cast<int64_t>(bits.size()));
    m.bits = std::move(bits);
    return prune_magnitude(m).bits;
  };
  using B = std::vector<uint64_t>;
  EXPECT_EQ(pruned(ElemType::f16, {0x7C01, 0x7E00, 0xFFFF, 0x3C00}), (B{0x7C01, 0x7E00, 0, 0}));
  EXPECT_EQ(pruned(ElemType::bf16, {0x3F80, 0xFFC0, 0x7F81, 0x7FFF}), (B{0, 0xFFC0, 0x7F81, 0}));
  EXPECT_EQ(pruned(ElemType::e5m2, {0x7F, 0x7D, 0xFE, 0x7C}), (B{0x7F, 0x7D, 0, 0}));
  EXPECT_EQ(pruned(ElemType::tf32, {0x7F802000, 0x7FC00000}), (B{0x7F802000, 0}));
  EXPECT_EQ(pruned(ElemType::tf32, {0x7F800001, 0x7F802000}), (B{0, 0x7F802000}));
  EXPECT_EQ(pruned(ElemType::f32, {0x7F800001, 0x7FFFFFFF}), (B{0x7F800001, 0}));
}

TEST(SparseCompress, DocumentedPaddingNibbles) {
  for (const Case& k : kCases) {
    const ElemType t = k.t;
    SCOPED_TRACE(k.name());
    const Expect ex = k.ex();
    const int groups = ex.chunk / ex.group;
    const uint64_t one = encode(t, 1.0);
    // none -> 0xE; one group g -> the table (1:2: element 0 -> 0x4, element 1 -> 0xE).
    const std::array<unsigned, 4> single = ex.chunk == 2 ? std::array<unsigned, 4>{0x4, 0xE, 0, 0}
                                                         : std::array<unsigned, 4>{0x8, 0x9, 0xE, 0xE};
    for (int g = -1; g < groups; ++g) {
      Matrix m(t, 1, ex.chunk);
      if (g >= 0)
        for (int e = 0; e < ex.group; ++e) m.at(0, g * ex.group + e) = one;
      const Compressed c = comp(k, m);
      const unsigned want = g < 0 ? 0xE : single[static_cast<size_t>(g)];
      EXPECT_EQ(c.nibble(0, 0), want) << "non-zero group " << g;
      EXPECT_EQ(decompress(c), m);
      // The non-zero sits in the stored slot that the nibble maps onto its position; the rest are zeros.
      const std::vector<int> off = named_offsets(k, want);
      for (size_t i = 0; i < off.size(); ++i) {
        const bool is_nz = g >= 0 && off[i] / ex.group == g;
        EXPECT_EQ(c.values.at(0, static_cast<int64_t>(i)), is_nz ? one : 0u) << "slot " << i;
      }
    }
    // Two non-zero groups a < b -> a | b << 2 (for 1:2 only one group fits, done above).
    if (ex.chunk != 2)
      for (int a = 0; a < 4; ++a)
        for (int b = a + 1; b < 4; ++b) {
          Matrix m(t, 1, ex.chunk);
          for (int e = 0; e < ex.group; ++e) {
            m.at(0, a * ex.group + e) = one;
            m.at(0, b * ex.group + e) = one;
          }
          EXPECT_EQ(comp(k, m).nibble(0, 0), static_cast<unsigned>(a | (b << 2)));
        }
  }
}

TEST(SparseDecompress, EveryForbiddenNibbleIsRejected) {
  SEEDED_RNG(rng);
  for (const Case& k : kCases) {
    SCOPED_TRACE(k.name());
    const Expect ex = k.ex();
    for (bool ordered : {true, false}) {
      const auto [rows, cols] = random_shape(rng, k);
      const Compressed base = comp(k, random_sparse(rng, k, rows, cols), ordered);
      const std::set<unsigned>& valid = valid_set(k, ordered);
      for (unsigned v = 0; v < 16; ++v) {
        Compressed c = base;
        const int64_t r = rng() % rows, ch = rng() % (cols / ex.chunk);
        c.set_nibble(r, ch, static_cast<uint8_t>(v));
        ASSERT_EQ(c.nibble(r, ch), v);
        if (!valid.count(v)) {
          const std::string msg = error_of([&] { decompress(c); }, Status::invalid_value);
          EXPECT_NE(msg.find("row " + std::to_string(r) + ", chunk " + std::to_string(ch)), std::string::npos) << msg;
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%X", v);
          EXPECT_NE(msg.find(hex), std::string::npos) << msg;
          continue;
        }
        // A valid nibble: stored entry i lands at the i-th named offset (unordered ones too).
        const Matrix d = decompress(c);
        const std::vector<int> off = named_offsets(k, v);
        for (int e = 0; e < ex.chunk; ++e) {
          const auto it = std::find(off.begin(), off.end(), e);
          const uint64_t want = it == off.end() ? 0 : c.values.at(r, ch * ex.kept + (it - off.begin()));
          EXPECT_EQ(d.at(r, ch * ex.chunk + e), want) << "nibble " << v << " offset " << e;
        }
      }
    }
  }
}

TEST(SparseDecompress, RejectsBadPaddingNibbleAndSizes) {
  Matrix m(ElemType::f16, 2, 8);  // 2 chunks per row: nibbles 2, 3 of each word are padding
  m.set_value(1, 5, 1.0);
  Compressed c = compress(m);
  c.metadata[1] |= 0x0400;
  std::string msg = error_of([&] { decompress(c); }, Status::invalid_value);
  EXPECT_NE(msg.find("row 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("padding"), std::string::npos) << msg;

  c = compress(m);
  c.metadata.pop_back();
  error_of([&] { decompress(c); }, Status::invalid_argument);
  c = compress(m);
  c.values.cols = 3;
  error_of([&] { decompress(c); }, Status::invalid_argument);
  c = compress(m);
  c.pattern = Pattern::p1_2;
  error_of([&] { decompress(c); }, Status::invalid_argument);
  c = compress(m);
  error_of([&] { c.nibble(2, 0); }, Status::invalid_argument);
  error_of([&] { c.nibble(0, 2); }, Status::invalid_argument);
  error_of([&] { c.set_nibble(0, 0, 0x10); }, Status::invalid_argument);
}

// ------------------------------------------------------------------ layout and sizes

// The worked example of docs/layouts.md, "Compressed matrix (host, whole-matrix layout)".
TEST(SparseLayout, WorkedExampleFromDocs) {
  Matrix m(ElemType::f16, 2, 8);
  m.bits = {0x3C00, 0x0000, 0x0000, 0x4000, 0x0000, 0xC200, 0x3800, 0x0000,   // 1 0 0 2 | 0 -3 0.5 0
            0x8000, 0x0000, 0x0000, 0x0000, 0x0000, 0x4700, 0x8000, 0x0000};  // -0 0 0 0 | 0 7 -0 0
  const Compressed c = compress(m);
  EXPECT_EQ(c.values.bits, (std::vector<uint64_t>{0x3C00, 0x4000, 0xC200, 0x3800,  //
                                                  0x0000, 0x0000, 0x4700, 0x8000}));
  EXPECT_EQ(c.metadata, (std::vector<uint16_t>{0x009C, 0x009E}));
  EXPECT_EQ(c.value_bytes(), 16u);
  EXPECT_EQ(c.metadata_bytes(), 4u);
  Matrix back = m;
  back.bits[8] = 0x0000;  // the -0.0 at row 1, col 0 is not named by nibble 0xE
  EXPECT_EQ(decompress(c), back);
}

TEST(SparseLayout, ExactSizes) {
  struct Row {
    ElemType t;
    size_t value_bytes;     // 3 x 16 dense -> 3 x 8 stored elements
    size_t metadata_bytes;  // 3 rows x words x 2
  };
  const Row table[] = {
      {ElemType::f16, 48, 6},  {ElemType::bf16, 48, 6}, {ElemType::tf32, 96, 12}, {ElemType::f32, 96, 12},
      {ElemType::e4m3, 24, 6}, {ElemType::e5m2, 24, 6}, {ElemType::e3m2, 24, 6},  {ElemType::e2m3, 24, 6},
      {ElemType::s8, 24, 6},   {ElemType::u8, 24, 6},   {ElemType::e2m1, 12, 6},  {ElemType::s4, 12, 6},
      {ElemType::u4, 12, 6},
  };
  for (const Row& row : table) {
    SCOPED_TRACE(std::string(type_name(row.t)));
    const Compressed c = compress(Matrix(row.t, 3, 16));
    EXPECT_EQ(c.value_bytes(), row.value_bytes);
    EXPECT_EQ(c.metadata_bytes(), row.metadata_bytes);
  }
  // 10 chunks per row -> 3 words per row, the last with 2 padding nibbles.
  const Compressed c = compress(Matrix(ElemType::f16, 5, 40));
  EXPECT_EQ(c.meta_words_per_row(), 3);
  EXPECT_EQ(c.metadata_bytes(), 5u * 3u * 2u);
  EXPECT_EQ(c.value_bytes(), 5u * 20u * 2u);
}

}  // namespace
}  // namespace spmma

// A matrix without elements costs O(1) however many empty rows it has (a legal .npy of shape
// (2^40, 0) once made every one of these loop 2^40 times).
TEST(SparseEmpty, NoElementsCostNothing) {
  const auto start = std::chrono::steady_clock::now();
  for (int64_t rows : {int64_t{1} << 40, int64_t{1} << 62}) {
    const spmma::Matrix m(spmma::ElemType::bf16, rows, 0);
    EXPECT_FALSE(spmma::check_pattern(m).has_value());
    EXPECT_EQ(spmma::prune_magnitude(m).rows, rows);
    EXPECT_EQ(spmma::prune_mask(m, {}).rows, rows);
    const spmma::Compressed c = spmma::compress(m);
    EXPECT_EQ(c.rows, rows);
    EXPECT_EQ(spmma::decompress(c).rows, rows);
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}
