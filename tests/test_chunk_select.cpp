// SPDX-License-Identifier: BSD-3-Clause
// The GPU compressor's rules, run on the CPU: the per-chunk functions of
// include/spmma/detail/chunk_select.hpp with the raw-bit element rule (what compress_gpu.cu runs,
// compiled for the host through SPMMA_HD), and the kernel's whole per-thread work
// (gpu_format::compress_word), against the host path: prune_magnitude + compress (magnitude
// mode) or compress (check mode), bit for bit — values, nibbles, fragment-ready words and the
// first violating chunk. Inputs are full of -0.0, +0, NaNs of several payloads and both signs,
// ±Inf, magnitude ties and tf32 values whose ignored low 13 bits are set. Fresh random inputs:
// the seed is printed; SPMMA_SEED=<n> replays a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/format/compress_gpu.cuh"
#include "cuda/format/relayout_gpu.cuh"
#include "test_util.hpp"
#include "spmma/detail/chunk_select.hpp"
#include "spmma/error.hpp"
#include "spmma/fragment_layout.hpp"
#include "spmma/isa.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma {
namespace {

using detail::ChunkShape;
using detail::ElemRule;

// Every type the GPU compressor takes, with the pattern and instruction the GPU backend uses
// (src/cuda/api/gpu_backend.cu, kInstrs), and a second instruction (another K and metadata-lane
// count where the type has one), which the kernel handles with the same code.
struct GpuType {
  ElemType t;
  Pattern p;
  const char* variant;
  const char* other_variant;
};
const GpuType kGpuTypes[] = {
    {ElemType::bf16, Pattern::p2_4, "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"},
    {ElemType::f16, Pattern::p2_4, "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
    {ElemType::tf32, Pattern::p1_2, "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"},
    {ElemType::e4m3, Pattern::p2_4, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e4m3.e5m2.f32"},
    {ElemType::e5m2, Pattern::p2_4, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e5m2.e5m2.f32",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e5m2.e4m3.f32"},
    {ElemType::s8, Pattern::p2_4, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"},
    {ElemType::u8, Pattern::p2_4, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.s32.u8.u8.s32",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32"},
    {ElemType::s4, Pattern::p4_8_pairs, "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.s32.s4.s4.s32",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32"},
    {ElemType::u4, Pattern::p4_8_pairs, "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.s32.u4.u4.s32",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.s32.u4.u4.s32"},
};

// The rule also covers these (no GPU kernel takes them today); the chunk tests run them too.
struct TypePattern {
  ElemType t;
  Pattern p;
};
std::vector<TypePattern> rule_types() {
  std::vector<TypePattern> v;
  for (const GpuType& g : kGpuTypes) v.push_back({g.t, g.p});
  v.push_back({ElemType::f32, Pattern::p1_2});
  v.push_back({ElemType::e3m2, Pattern::p2_4});
  v.push_back({ElemType::e2m3, Pattern::p2_4});
  v.push_back({ElemType::e2m1, Pattern::p2_4});
  return v;
}

std::string name(TypePattern k) { return std::string(type_name(k.t)) + " " + pattern_info(k.p).name; }

uint64_t pick_seed() {
  if (const char* s = std::getenv("SPMMA_SEED")) return std::strtoull(s, nullptr, 0);
  return std::random_device{}();
}

#define SEEDED_RNG(rng)                                                                              \
  const uint64_t rng##_seed = pick_seed();                                                           \
  ::testing::Test::RecordProperty("seed", std::to_string(rng##_seed));                               \
  std::cout << "[   seed   ] " << rng##_seed << " (replay with SPMMA_SEED=" << rng##_seed << ")\n"; \
  SCOPED_TRACE("seed " + std::to_string(rng##_seed));                                                \
  std::mt19937_64 rng(rng##_seed)

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// ------------------------------------------------------------------ element pools

using test::is_tf32;
using test::pick;
using test::Pools;
using test::pools_of;
using test::random_elem;

Matrix random_dense(std::mt19937_64& rng, TypePattern k, int64_t rows, int64_t cols, const Pools& pools) {
  Matrix m(k.t, rows, cols);
  for (auto& b : m.bits) b = random_elem(rng, k.t, pools);
  return m;
}

// A random matrix that satisfies the pattern: in each chunk a random set of at most kept_groups
// groups keeps random elements (zeros likely among them), the others get zero patterns (-0.0,
// tf32 low bits).
Matrix random_sparse(std::mt19937_64& rng, TypePattern k, int64_t rows, int64_t cols, const Pools& pools) {
  Matrix m = random_dense(rng, k, rows, cols, pools);
  const ChunkShape s = detail::chunk_shape(k.p);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c0 = 0; c0 < cols; c0 += s.chunk) {
      std::vector<int> g(static_cast<size_t>(s.groups()));
      for (int i = 0; i < s.groups(); ++i) g[static_cast<size_t>(i)] = i;
      std::shuffle(g.begin(), g.end(), rng);
      const int live = static_cast<int>(rng() % static_cast<uint64_t>(s.kept_groups() + 1));
      for (int i = live; i < s.groups(); ++i)
        for (int e = 0; e < s.group; ++e) m.at(r, c0 + g[static_cast<size_t>(i)] * s.group + e) = pick(rng, pools.zeros);
    }
  return m;
}

// Whether a chunk breaks its pattern, counted here with the host's is_zero (not the shared code).
bool violates(TypePattern k, const Matrix& a, int64_t r, int64_t c0) {
  const PatternInfo& pi = pattern_info(k.p);
  int nz = 0;
  for (int g = 0; g < pi.chunk / pi.group; ++g) {
    bool any = false;
    for (int e = 0; e < pi.group; ++e) any = any || !is_zero(k.t, a.at(r, c0 + g * pi.group + e));
    nz += any;
  }
  return nz > pi.kept / pi.group;
}

// ------------------------------------------------------------------ the chunk function against the host

// Runs the GPU's per-chunk function (select_chunk with the raw-bit rule) on every chunk of a and
// compares with the host: prune mode, compress(prune_magnitude(a)); check mode, the violating
// chunks with the host's count and check_pattern's first one, and every other chunk with
// compress(a) (violating chunks zeroed there so that the host accepts the matrix).
// Returns the number of mismatching chunks (the first few are reported).
int compare_chunks(TypePattern k, const Matrix& a, bool prune) {
  const ElemRule rule = detail::elem_rule(k.t, k.p);
  const ChunkShape s = detail::chunk_shape(k.p);
  Matrix host_in = prune ? prune_magnitude(a, k.p) : a;
  bool any_violation = false;
  int64_t first_r = -1, first_c = -1;
  if (!prune)
    for (int64_t r = 0; r < a.rows; ++r)
      for (int64_t c0 = 0; c0 < a.cols; c0 += s.chunk)
        if (violates(k, a, r, c0)) {
          if (!any_violation) first_r = r, first_c = c0 / s.chunk;
          any_violation = true;
          for (int e = 0; e < s.chunk; ++e) host_in.at(r, c0 + e) = 0;
        }
  if (!prune) {
    const auto v = check_pattern(a, k.p);
    EXPECT_EQ(v.has_value(), any_violation);
    if (v && any_violation) {
      EXPECT_EQ(v->row, first_r);
      EXPECT_EQ(v->chunk, first_c);
    }
  }
  const Compressed want = compress(host_in, k.p);
  int bad = 0;
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t ch = 0; ch < a.cols / s.chunk; ++ch) {
      const int64_t c0 = ch * s.chunk;
      uint32_t x[detail::kMaxChunk] = {}, stored[detail::kMaxKept] = {};
      for (int e = 0; e < s.chunk; ++e) x[e] = static_cast<uint32_t>(a.at(r, c0 + e));
      const detail::ChunkResult got = detail::select_chunk(rule, s, prune, x, stored);
      std::string why;
      const bool want_violation = !prune && violates(k, a, r, c0);
      if (got.violates != want_violation) why += " violation flag " + std::to_string(got.violates);
      if (!want_violation) {
        if (got.nibble != want.nibble(r, ch)) why += " nibble " + hex(got.nibble) + " want " + hex(want.nibble(r, ch));
        for (int i = 0; i < s.kept; ++i)
          if (stored[i] != want.values.at(r, ch * s.kept + i))
            why += " stored[" + std::to_string(i) + "] " + hex(stored[i]) + " want " + hex(want.values.at(r, ch * s.kept + i));
        if (prune) {
          for (int e = 0; e < s.chunk; ++e)
            if (x[e] != host_in.at(r, c0 + e)) why += " pruned[" + std::to_string(e) + "] " + hex(x[e]) + " want " + hex(host_in.at(r, c0 + e));
          // docs/layouts.md: after pruning, a padding slot (a stored group of zeros) holds +0 bits.
          for (int i = 0; i < s.kept; i += s.group) {
            bool zero_group = true, plus_zero = true;
            for (int e = 0; e < s.group; ++e) zero_group = zero_group && is_zero(k.t, stored[i + e]), plus_zero = plus_zero && stored[i + e] == 0;
            if (zero_group && !plus_zero) why += " padding group " + std::to_string(i / s.group) + " is not +0";
          }
        }
      }
      if (!why.empty() && ++bad <= 5) {
        std::string in;
        for (int e = 0; e < s.chunk; ++e) in += " " + hex(a.at(r, c0 + e));
        ADD_FAILURE() << name(k) << (prune ? " magnitude" : " check") << ", row " << r << ", chunk " << ch << " [" << in
                      << " ]:" << why;
      }
    }
  return bad;
}

// ------------------------------------------------------------------ the element rule

// The raw-bit rule agrees with decode(): NaN, zero, and a magnitude key ordered as |x| (equal
// keys exactly for equal magnitudes; integers: |x| itself). Every pattern of the 4-, 6-, 8- and
// 16-bit types; for tf32 every pattern of its 19 bits with random low bits, for f32 random ones.
TEST(ChunkSelectRule, AgreesWithDecodeOnEveryPattern) {
  SEEDED_RNG(rng);
  for (const TypePattern& k : rule_types()) {
    SCOPED_TRACE(name(k));
    const ElemRule rule = detail::elem_rule(k.t, k.p);
    const TypeInfo& ti = type_info(k.t);
    std::vector<uint64_t> pats;
    if (memory_bits(k.t) <= 16) {
      for (uint64_t b = 0; b < (uint64_t{1} << memory_bits(k.t)); ++b) pats.push_back(b);  // container bits too
    } else if (is_tf32(k.t)) {
      for (uint64_t b = 0; b < (uint64_t{1} << 19); ++b) pats.push_back((b << 13) | (rng() & 0x1FFF));
      for (uint64_t b : pools_of(k.t).zeros) pats.push_back(b);
    } else {
      for (int i = 0; i < (1 << 20); ++i) pats.push_back(rng() & 0xFFFFFFFFu);
      const Pools p = pools_of(k.t);
      for (const auto* v : {&p.zeros, &p.nans, &p.infs, &p.ties}) pats.insert(pats.end(), v->begin(), v->end());
      for (uint64_t b : {0x00000001ull, 0x80000001ull, 0x7F7FFFFFull, 0x7F800001ull}) pats.push_back(b);
    }
    int bad = 0;
    std::vector<std::pair<double, uint32_t>> order;  // |x| and the key, non-NaN patterns
    for (uint64_t b : pats) {
      const uint32_t x = static_cast<uint32_t>(b);
      if (rule.is_nan(x) != is_nan(k.t, b) || rule.is_zero(x) != is_zero(k.t, b)) {
        if (++bad <= 5) ADD_FAILURE() << hex(b) << ": rule nan " << rule.is_nan(x) << " zero " << rule.is_zero(x);
        continue;
      }
      if (is_nan(k.t, b)) continue;
      const double mag = std::fabs(decode(k.t, b));
      if (!ti.is_float && rule.magnitude(x) != mag && ++bad <= 5) ADD_FAILURE() << hex(b) << ": |x| " << rule.magnitude(x);
      order.emplace_back(mag, rule.magnitude(x));
    }
    std::sort(order.begin(), order.end());
    for (size_t i = 1; i < order.size(); ++i) {
      const bool same = order[i - 1].first == order[i].first;
      if ((same && order[i - 1].second != order[i].second) || (!same && !(order[i - 1].second < order[i].second)))
        if (++bad <= 5)
          ADD_FAILURE() << "|x| " << order[i - 1].first << " key " << order[i - 1].second << " vs |x| " << order[i].first
                        << " key " << order[i].second;
    }
    EXPECT_EQ(bad, 0);
  }
}

TEST(ChunkSelectRule, BuildersRejectWhatTheyCannotDo) {
  EXPECT_THROW(detail::elem_rule(ElemType::f64, Pattern::p2_4), Error);
  EXPECT_THROW(detail::elem_rule(ElemType::f16, Pattern::p4_8_pairs), Error);
  try {
    detail::elem_rule(ElemType::e2m1, Pattern::p4_8_pairs);  // float pairs rank by value sums
    ADD_FAILURE() << "e2m1 4:8 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::not_supported);
  }
  EXPECT_NO_THROW(detail::elem_rule(ElemType::e2m1, Pattern::p2_4));
  // compress_params_for: the variant must be sparse with A of that type.
  const isa::Variant& bf = isa::variant_or_throw(kGpuTypes[0].variant);
  EXPECT_THROW(gpu_format::compress_params_for(ElemType::f16, bf), Error);
  const gpu_format::CompressParams p = gpu_format::compress_params_for(ElemType::bf16, bf);
  EXPECT_EQ(p.elem_bits, 16);
  EXPECT_EQ(p.shape.chunk, 4);
  EXPECT_EQ(p.k_inst, 32);
  EXPECT_EQ(p.lanes, 2);
  EXPECT_TRUE(p.nibble_half);
  EXPECT_TRUE(p.rule.valid());
  EXPECT_FALSE(gpu_format::CompressParams{}.rule.valid());  // what launch_compress refuses
}

// ------------------------------------------------------------------ explicit cases, by hand

struct Hand {
  ElemType t;
  bool prune;
  std::vector<uint64_t> chunk;     // one chunk, dense bits
  uint8_t nibble;
  std::vector<uint64_t> stored;
  const char* why;
};

// Each case states its answer; the kernel's chunk function and the host both must give it.
// The old kernel got the NaN-payload and padding cases wrong (issue 8, item 7).
TEST(ChunkSelect, HandWrittenCases) {
  const Hand cases[] = {
      // NaNs tie whatever their payload or sign: the lower columns win.
      {ElemType::f16, true, {0x7C01, 0x7E00, 0xFFFF, 0x3C00}, 0x4, {0x7C01, 0x7E00}, "f16 NaN payloads tie"},
      {ElemType::f16, true, {0x3C00, 0x7C01, 0x7FFF, 0xFE00}, 0x9, {0x7C01, 0x7FFF}, "f16 NaN above 1.0, payloads tie"},
      {ElemType::bf16, true, {0x7F81, 0xFFC0, 0x7FFF, 0x7F80}, 0x4, {0x7F81, 0xFFC0}, "bf16 NaNs above Inf"},
      {ElemType::e5m2, true, {0x7D, 0x7F, 0x7E, 0x7C}, 0x4, {0x7D, 0x7F}, "e5m2 NaN payloads tie"},
      {ElemType::e4m3, true, {0x7E, 0xFF, 0x7F, 0x01}, 0x9, {0xFF, 0x7F}, "e4m3 ±NaN tie, above 448"},
      {ElemType::tf32, true, {0x7F802000, 0x7FC00000}, 0x4, {0x7F802000}, "tf32 NaN payloads tie"},
      {ElemType::tf32, true, {0x7F800001, 0x7F802000}, 0xE, {0x7F802000}, "tf32: low-bit-only NaN is Inf, below NaN"},
      {ElemType::tf32, true, {0x3F800000, 0x3F801FFF}, 0x4, {0x3F800000}, "tf32 1.0 ties 1.0 with low bits"},
      // Magnitude ties keep the lower column; dropped -0.0 becomes +0.
      {ElemType::bf16, true, {0x8000, 0xC000, 0x4000, 0x8000}, 0x9, {0xC000, 0x4000}, "bf16 |-2| ties |2|"},
      {ElemType::s8, true, {0x80, 0x7F, 0x81, 0x80}, 0xC, {0x80, 0x80}, "s8 -128 above 127, ties lower"},
      {ElemType::s4, true, {0x8, 0x0, 0x7, 0x0, 0x0, 0x8, 0x1, 0x7}, 0x8, {0x8, 0x0, 0x0, 0x8}, "s4 pair sums 8, 7, 8, 8"},
      // Check mode: the padding slot keeps the dense bits (-0.0, tf32 low bits, e4m3 -0).
      {ElemType::f16, false, {0x0000, 0x4500, 0x8000, 0x0000}, 0x9, {0x4500, 0x8000}, "f16 -0.0 at padding slot 2"},
      {ElemType::bf16, false, {0x8000, 0x8000, 0x8000, 0x8000}, 0xE, {0x8000, 0x8000}, "bf16 all -0.0"},
      {ElemType::tf32, false, {0x00000000, 0x80000ABC}, 0xE, {0x80000ABC}, "tf32 zero with low bits at padding"},
      {ElemType::tf32, false, {0x00001FFF, 0x00000001}, 0xE, {0x00000001}, "tf32 two low-bit zeros"},
      {ElemType::tf32, false, {0x40000000, 0x00001234}, 0x4, {0x40000000}, "tf32 element 0 kept"},
      {ElemType::e4m3, false, {0x80, 0x80, 0x38, 0x80}, 0xE, {0x38, 0x80}, "e4m3 -0 at padding slot 3"},
      {ElemType::e5m2, false, {0x3C, 0x80, 0x80, 0x00}, 0x8, {0x3C, 0x80}, "e5m2 -0 at padding slot 2"},
      {ElemType::f16, false, {0x8000, 0x7E01, 0x8000, 0x8000}, 0x9, {0x7E01, 0x8000}, "f16 NaN is non-zero"},
  };
  for (const Hand& h : cases) {
    SCOPED_TRACE(h.why);
    const Pattern p = pattern_for(h.t);
    const ChunkShape s = detail::chunk_shape(p);
    ASSERT_EQ(h.chunk.size(), static_cast<size_t>(s.chunk));
    uint32_t x[detail::kMaxChunk] = {}, stored[detail::kMaxKept] = {};
    for (int e = 0; e < s.chunk; ++e) x[e] = static_cast<uint32_t>(h.chunk[static_cast<size_t>(e)]);
    const detail::ChunkResult r = detail::select_chunk(detail::elem_rule(h.t, p), s, h.prune, x, stored);
    EXPECT_FALSE(r.violates);
    EXPECT_EQ(r.nibble, h.nibble);
    EXPECT_EQ(std::vector<uint64_t>(stored, stored + s.kept), h.stored);
    // The host path gives the same.
    Matrix m(h.t, 1, s.chunk);
    m.bits = h.chunk;
    const Compressed c = compress(h.prune ? prune_magnitude(m, p) : m, p);
    EXPECT_EQ(c.nibble(0, 0), h.nibble);
    EXPECT_EQ(c.values.bits, h.stored);
  }
  // Check mode flags a chunk with too many non-zero groups; a NaN counts, -0.0 and tf32 low bits do not.
  const auto flags = [](ElemType t, std::vector<uint32_t> x) {
    const Pattern p = pattern_for(t);
    uint32_t stored[detail::kMaxKept] = {};
    return detail::select_chunk(detail::elem_rule(t, p), detail::chunk_shape(p), false, x.data(), stored).violates;
  };
  EXPECT_TRUE(flags(ElemType::f16, {0x7E00, 0x8000, 0x0001, 0x7C01}));
  EXPECT_FALSE(flags(ElemType::f16, {0x7E00, 0x8000, 0x0000, 0x7C01}));
  EXPECT_TRUE(flags(ElemType::tf32, {0x00002000, 0x7F800000}));
  EXPECT_FALSE(flags(ElemType::tf32, {0x00001FFF, 0x7F800000}));
  EXPECT_TRUE(flags(ElemType::s4, {0x1, 0x0, 0x0, 0x1, 0x0, 0x0, 0x0, 0xF}));
  EXPECT_FALSE(flags(ElemType::s4, {0x1, 0x0, 0x0, 0x1, 0x0, 0x0, 0x0, 0x0}));
}

// ------------------------------------------------------------------ random and exhaustive chunks

TEST(ChunkSelect, RandomMatricesEqualTheHost) {
  SEEDED_RNG(rng);
  for (const TypePattern& k : rule_types()) {
    SCOPED_TRACE(name(k));
    const Pools pools = pools_of(k.t);
    const int chunk = pattern_info(k.p).chunk;
    int bad = 0;
    for (int rep = 0; rep < 40 && bad == 0; ++rep) {
      const int64_t rows = 1 + static_cast<int64_t>(rng() % 9), cols = chunk * (1 + static_cast<int64_t>(rng() % 11));
      bad += compare_chunks(k, random_dense(rng, k, rows, cols, pools), true);
      bad += compare_chunks(k, random_sparse(rng, k, rows, cols, pools), false);
      bad += compare_chunks(k, random_sparse(rng, k, rows, cols, pools), true);
      bad += compare_chunks(k, random_dense(rng, k, rows, cols, pools), false);  // mostly violations
    }
    EXPECT_EQ(bad, 0);
  }
}

// Every combination of `npos` positions' bit patterns (2^16 of them; tf32: its 2^19 values with
// random low bits), at several placements in the chunk, the other positions random (zeros,
// NaNs, ties); one chunk per row. Both modes.
TEST(ChunkSelect, ExhaustiveSmallChunksEqualTheHost) {
  SEEDED_RNG(rng);
  for (const TypePattern& k : rule_types()) {
    if (k.t == ElemType::f32) continue;  // 2^32 values: the random test covers it
    SCOPED_TRACE(name(k));
    const Pools pools = pools_of(k.t);
    const ChunkShape s = detail::chunk_shape(k.p);
    const int bits = is_tf32(k.t) ? 19 : type_info(k.t).bits;
    const int npos = std::max(1, 16 / bits);  // 16 bits of patterns; tf32: 19
    const int64_t rows = int64_t{1} << (bits * npos);
    // Placements: every set of npos positions for 2:4 and 1:2; a selection for 4:8 (whole pairs,
    // split pairs).
    std::vector<std::vector<int>> places;
    if (s.chunk == 8) {
      places = {{0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 6, 7}, {2, 3, 4, 5}, {1, 2, 5, 6}, {0, 3, 4, 7}};
    } else {
      for (unsigned m = 0; m < (1u << s.chunk); ++m) {
        if (__builtin_popcount(m) != npos) continue;
        std::vector<int> v;
        for (int e = 0; e < s.chunk; ++e)
          if ((m >> e) & 1u) v.push_back(e);
        places.push_back(v);
      }
    }
    int bad = 0;
    for (const auto& place : places) {
      Matrix a = random_dense(rng, k, rows, s.chunk, pools);
      for (int64_t r = 0; r < rows; ++r)
        for (int i = 0; i < npos; ++i) {
          uint64_t v = (static_cast<uint64_t>(r) >> (bits * i)) & ((uint64_t{1} << bits) - 1);
          if (is_tf32(k.t)) v = (v << 13) | (rng() & 0x1FFF);
          a.at(r, place[static_cast<size_t>(i)]) = v;
        }
      bad += compare_chunks(k, a, true);
      bad += compare_chunks(k, a, false);
      if (bad) break;
    }
    EXPECT_EQ(bad, 0);
  }
}

// ------------------------------------------------------------------ the kernel's whole work per thread

// Runs gpu_format::compress_word for every thread of a launch, on host buffers, with the
// parameters compress_params_for() gives, and compares the values and the fragment-ready words
// with the host's (the rows past m are zero rows, as on the device) and, in check mode, the first
// violating chunk with check_pattern's.
struct Emulated {
  std::vector<uint8_t> values;
  std::vector<uint32_t> words;
  unsigned long long violation = gpu_format::kNoViolation;
};

Emulated emulate(const GpuType& g, const isa::Variant& v, const Matrix& a, int64_t lda, int group, bool prune) {
  gpu_format::CompressParams p = gpu_format::compress_params_for(g.t, v);
  const int bits = memory_bits(g.t);
  std::vector<uint8_t> in(static_cast<size_t>((a.rows * lda * bits + 7) / 8 + 1), 0xA5);  // garbage past k in each row
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t c = 0; c < a.cols; ++c) store_element(in.data(), r * lda + c, bits, a.at(r, c));
  p.a = in.data();
  p.lda_bytes = lda * bits / 8;
  p.m = a.rows, p.k = a.cols;
  p.m_pad = (a.rows + 15) / 16 * 16;
  p.meta_group = group;
  p.groups = (a.cols / v.k + group - 1) / group;
  p.prune = prune;
  p.value_row_bytes = a.cols / 2 * bits / 8;
  Emulated out;
  out.values.assign(static_cast<size_t>(p.m_pad * p.value_row_bytes), 0x5A);  // poison: every byte is written
  out.words.assign(static_cast<size_t>(p.m_pad / 16 * p.groups * group * 8 * p.lanes), 0xDEADBEEF);
  p.values = out.values.data();
  p.meta = out.words.data();
  for (int64_t tid = 0; tid < gpu_format::compress_threads(p); ++tid)
    out.violation = std::min(out.violation, gpu_format::compress_word(p, tid));
  return out;
}

// Counts (and reports the first 5 of) the entries of got that differ from want.
template <class T>
int count_diff(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  int bad = 0;
  if (got.size() != want.size()) {
    ADD_FAILURE() << what << ": " << got.size() << " entries, want " << want.size();
    return 1;
  }
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && ++bad <= 5) ADD_FAILURE() << what << " " << i << ": " << hex(got[i]) << " want " << hex(want[i]);
  return bad;
}

int compare_kernel(const GpuType& g, const isa::Variant& v, const Matrix& a, int64_t lda, int group, bool prune) {
  const Emulated got = emulate(g, v, a, lda, group, prune);
  const int64_t m_pad = (a.rows + 15) / 16 * 16;
  if (!prune) {
    const auto viol = check_pattern(a, g.p);
    const unsigned long long want =
        viol ? static_cast<unsigned long long>(viol->row * (a.cols / pattern_info(g.p).chunk) + viol->chunk) : gpu_format::kNoViolation;
    EXPECT_EQ(got.violation, want) << (viol ? viol->message : "no violation");
    if (viol) return got.violation == want ? 0 : 1;
  } else {
    EXPECT_EQ(got.violation, gpu_format::kNoViolation);
  }
  Matrix padded(a.type, m_pad, a.cols);
  std::copy(a.bits.begin(), a.bits.end(), padded.bits.begin());
  const Compressed c = compress(prune ? prune_magnitude(padded, g.p) : padded, g.p);
  const FragmentReadyMeta f = to_fragment_ready(c, v, group);
  const int bits = memory_bits(a.type);
  std::vector<uint8_t> want_values(got.values.size(), 0);
  for (size_t i = 0; i < c.values.bits.size(); ++i) store_element(want_values.data(), static_cast<int64_t>(i), bits, c.values.bits[i]);
  return count_diff(got.words, f.words, "word") + count_diff(got.values, want_values, "value byte");
}

TEST(ChunkSelectKernel, EveryThreadEqualsTheHost) {
  SEEDED_RNG(rng);
  for (const GpuType& g : kGpuTypes) {
    const TypePattern k{g.t, g.p};
    const Pools pools = pools_of(g.t);
    for (const char* id : {g.variant, g.other_variant}) {
      const isa::Variant& v = isa::variant_or_throw(id);
      SCOPED_TRACE(std::string(id));
      int bad = 0;
      for (int64_t m : {1, 17, 130})
        for (int steps : {1, 3, 4}) {
          const int64_t k_cols = v.k * steps;
          const int group = steps == 4 ? 4 : 2;  // steps 1, 3: a padded last group
          const int64_t lda = k_cols + (rng() % 2 ? 0 : pattern_info(g.p).chunk * 2);
          bad += compare_kernel(g, v, random_dense(rng, k, m, k_cols, pools), lda, group, true);
          bad += compare_kernel(g, v, random_sparse(rng, k, m, k_cols, pools), lda, group, false);
          bad += compare_kernel(g, v, random_sparse(rng, k, m, k_cols, pools), lda, group, true);
          Matrix bad_a = random_sparse(rng, k, m, k_cols, pools);  // one violating chunk, somewhere
          const int64_t r = static_cast<int64_t>(rng() % static_cast<uint64_t>(m));
          const int64_t c0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(k_cols / pattern_info(g.p).chunk)) *
                             pattern_info(g.p).chunk;
          for (int e = 0; e < pattern_info(g.p).chunk; ++e) bad_a.at(r, c0 + e) = encode(g.t, 1.0);
          bad += compare_kernel(g, v, bad_a, lda, group, false);
          if (bad) break;
        }
      EXPECT_EQ(bad, 0);
    }
  }
}

// ------------------------------------------------------------------ relayout (relayout_gpu.cuh)

// Every thread of a relayout launch, on host buffers: the interchange form of a pruned A into the
// device form equals what the compressor writes from the dense A (words and values, padding
// included); back to the interchange form gives the same bytes; to dense gives A. An unordered
// pair is put in order; a forbidden nibble is reported at its row and chunk.
struct Relaid {
  std::vector<uint8_t> values, x_values, dense;
  std::vector<uint32_t> words;
  std::vector<uint16_t> x_meta;
  unsigned long long bad = gpu_format::kNoViolation;
};

gpu_format::RelayoutParams relayout_params(const GpuType& g, const isa::Variant& v, int64_t m, int64_t k, int group,
                                           Relaid& r) {
  gpu_format::RelayoutParams rp;
  rp.shape = gpu_format::compress_params_for(g.t, v);
  const int bits = memory_bits(g.t);
  rp.shape.m = m, rp.shape.k = k, rp.shape.m_pad = (m + 15) / 16 * 16;
  rp.shape.meta_group = group;
  rp.shape.groups = (k / v.k + group - 1) / group;
  rp.shape.value_row_bytes = k / 2 * bits / 8;
  rp.x_meta_words = k / pattern_info(g.p).chunk / 4;
  if (r.values.empty()) r.values.assign(static_cast<size_t>(rp.shape.m_pad * rp.shape.value_row_bytes), 0x5A);
  if (r.words.empty()) r.words.assign(static_cast<size_t>(gpu_format::compress_threads(rp.shape)), 0xDEADBEEF);
  if (r.x_values.empty()) r.x_values.assign(static_cast<size_t>(m * rp.shape.value_row_bytes), 0x5A);
  if (r.x_meta.empty()) r.x_meta.assign(static_cast<size_t>(m * rp.x_meta_words), 0xBEEF);
  if (r.dense.empty()) r.dense.assign(static_cast<size_t>(m * k * bits / 8), 0x5A);
  rp.shape.values = r.values.data();
  rp.shape.meta = r.words.data();
  rp.x_values = r.x_values.data();
  rp.x_meta = r.x_meta.data();
  rp.dense = r.dense.data();
  rp.ld_bytes = k * bits / 8;
  return rp;
}

void run_relayout(gpu_format::RelayoutParams rp, gpu_format::Relayout dir, Relaid& r) {
  rp.dir = dir;
  r.bad = gpu_format::kNoViolation;
  for (int64_t tid = 0; tid < gpu_format::compress_threads(rp.shape); ++tid)
    r.bad = std::min(r.bad, gpu_format::relayout_word(rp, tid));
}

TEST(ChunkSelectKernel, RelayoutRoundTrips) {
  SEEDED_RNG(rng);
  for (const GpuType& g : kGpuTypes) {
    const TypePattern tp{g.t, g.p};
    const Pools pools = pools_of(g.t);
    const PatternInfo& pi = pattern_info(g.p);
    const int bits = memory_bits(g.t);
    for (const char* id : {g.variant, g.other_variant}) {
      const isa::Variant& v = isa::variant_or_throw(id);
      SCOPED_TRACE(std::string(id));
      int bad = 0;
      for (int64_t m : {1, 17, 130})
        for (int steps : {1, 3, 4}) {
          const int64_t k = v.k * steps;
          const int group = steps == 4 ? 4 : 2;
          const Matrix a = random_sparse(rng, tp, m, k, pools);
          const Compressed c = compress(a, g.p);
          std::vector<uint8_t> xv(c.value_bytes()), xm(c.metadata_bytes());
          to_interchange(c, xv.data(), xm.data());
          const Emulated want = emulate(g, v, a, k, group, false);  // the compressor's device form
          Relaid r;
          gpu_format::RelayoutParams rp = relayout_params(g, v, m, k, group, r);
          std::copy(xv.begin(), xv.end(), r.x_values.begin());
          std::memcpy(r.x_meta.data(), xm.data(), xm.size());
          run_relayout(rp, gpu_format::Relayout::to_device, r);
          EXPECT_EQ(r.bad, gpu_format::kNoViolation);
          bad += count_diff(r.words, want.words, "to_device word");
          bad += count_diff(r.values, want.values, "to_device value byte");
          // Back: poisoned interchange buffers, every byte written again.
          std::fill(r.x_values.begin(), r.x_values.end(), uint8_t{0x5A});
          std::fill(r.x_meta.begin(), r.x_meta.end(), uint16_t{0xBEEF});
          run_relayout(rp, gpu_format::Relayout::to_interchange, r);
          EXPECT_EQ(r.bad, gpu_format::kNoViolation);
          bad += count_diff(r.x_values, xv, "to_interchange value byte");
          std::vector<uint8_t> got_meta(xm.size());
          std::memcpy(got_meta.data(), r.x_meta.data(), xm.size());
          bad += count_diff(got_meta, xm, "to_interchange metadata byte");
          run_relayout(rp, gpu_format::Relayout::to_dense, r);
          // decompress's A: a -0.0 (or a tf32 zero with low bits) at a position the nibble does
          // not name comes back +0, as from the host.
          const Matrix back = decompress(c);
          std::vector<uint8_t> want_dense(r.dense.size(), 0);
          for (size_t i = 0; i < back.bits.size(); ++i) store_element(want_dense.data(), static_cast<int64_t>(i), bits, back.bits[i]);
          bad += count_diff(r.dense, want_dense, "to_dense byte");

          // An unordered pair (the same product): put in order on the way in.
          if (pi.kept / pi.group == 2) {  // two stored groups (not 1:2)
            Compressed u = c;
            u.ordered = false;
            const int64_t row = static_cast<int64_t>(rng() % static_cast<uint64_t>(m));
            const int64_t ch = static_cast<int64_t>(rng() % static_cast<uint64_t>(u.chunks_per_row()));
            const uint8_t nib = u.nibble(row, ch);
            u.set_nibble(row, ch, static_cast<uint8_t>(((nib & 3u) << 2) | ((nib >> 2) & 3u)));
            for (int e = 0; e < pi.group; ++e) std::swap(u.values.at(row, ch * pi.kept + e), u.values.at(row, ch * pi.kept + pi.group + e));
            std::vector<uint8_t> uv(u.value_bytes()), um(u.metadata_bytes());
            to_interchange(u, uv.data(), um.data());
            Relaid ru;
            gpu_format::RelayoutParams rpu = relayout_params(g, v, m, k, group, ru);
            std::copy(uv.begin(), uv.end(), ru.x_values.begin());
            std::memcpy(ru.x_meta.data(), um.data(), um.size());
            run_relayout(rpu, gpu_format::Relayout::to_device, ru);
            EXPECT_EQ(ru.bad, gpu_format::kNoViolation);
            bad += count_diff(ru.words, want.words, "unordered to_device word");
            bad += count_diff(ru.values, want.values, "unordered to_device value byte");
          }
          // A forbidden nibble (a repeated index; 1:2: anything but 0x4 and 0xE), reported where it is.
          {
            Compressed f = c;
            const int64_t row = static_cast<int64_t>(rng() % static_cast<uint64_t>(m));
            const int64_t ch = static_cast<int64_t>(rng() % static_cast<uint64_t>(f.chunks_per_row()));
            f.set_nibble(row, ch, pi.kept == 1 ? 0x8 : 0x5);
            std::vector<uint8_t> fv(f.value_bytes()), fm(f.metadata_bytes());
            to_interchange(f, fv.data(), fm.data());
            Relaid rf;
            gpu_format::RelayoutParams rpf = relayout_params(g, v, m, k, group, rf);
            std::copy(fv.begin(), fv.end(), rf.x_values.begin());
            std::memcpy(rf.x_meta.data(), fm.data(), fm.size());
            run_relayout(rpf, gpu_format::Relayout::to_device, rf);
            EXPECT_EQ(rf.bad, static_cast<unsigned long long>(row * f.chunks_per_row() + ch)) << "row " << row << " chunk " << ch;
            // The device form holding one (borrowed bytes): reported on the way out too. Word 0's
            // nibble 0 is thread 0's first: row 0, chunk 0.
            Relaid ro = r;
            ro.words[0] = (ro.words[0] & ~0xFu) | (pi.kept == 1 ? 0x8u : 0x5u);
            gpu_format::RelayoutParams rpo = relayout_params(g, v, m, k, group, ro);
            run_relayout(rpo, gpu_format::Relayout::to_interchange, ro);
            EXPECT_EQ(ro.bad, 0ull);
            run_relayout(rpo, gpu_format::Relayout::to_dense, ro);
            EXPECT_EQ(ro.bad, 0ull);
          }
          if (bad) break;
        }
      EXPECT_EQ(bad, 0);
    }
  }
}

}  // namespace
}  // namespace spmma
