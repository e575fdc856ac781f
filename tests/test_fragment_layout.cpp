// SPDX-License-Identifier: BSD-3-Clause
// Tests for the fragment-ready metadata layout (include/spmma/fragment_layout.hpp,
// docs/layouts.md "Fragment-ready metadata"). Properties run on fresh random inputs: the seed
// is printed and recorded, and SPMMA_SEED=<n> replays a run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "spmma/emulate.hpp"
#include "spmma/error.hpp"
#include "spmma/fragment_layout.hpp"
#include "spmma/isa.hpp"
#include "spmma/sparse.hpp"

namespace spmma {
namespace {

uint64_t pick_seed() {
  if (const char* s = std::getenv("SPMMA_SEED")) return std::strtoull(s, nullptr, 0);
  return std::random_device{}();
}

#define FRAG_SEEDED_RNG(rng)                                                                              \
  const uint64_t rng##_seed = pick_seed();                                                                \
  ::testing::Test::RecordProperty("seed", std::to_string(rng##_seed));                                    \
  std::cout << "[   seed   ] " << rng##_seed << " (replay with SPMMA_SEED=" << rng##_seed << ")\n";      \
  SCOPED_TRACE("seed " + std::to_string(rng##_seed));                                                     \
  std::mt19937_64 rng(rng##_seed)

// The variants under test: every warp-level sparse form, and the wgmma.sp forms with N = 8
// (A from registers and from shared memory; the metadata layout does not depend on N).
std::vector<const isa::Variant*> variants_under_test() {
  std::vector<const isa::Variant*> out;
  for (const auto& v : isa::registry()) {
    if (v.family == isa::Family::mma_sp || v.family == isa::Family::mma_sp_ordered) out.push_back(&v);
    if (v.wgmma() && v.n == 8) out.push_back(&v);
  }
  return out;
}

// A random dense matrix of type t, mostly non-zero.
Matrix random_dense(std::mt19937_64& rng, ElemType t, int64_t rows, int64_t cols) {
  Matrix m(t, rows, cols);
  const TypeInfo& ti = type_info(t);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  for (auto& b : m.bits) {
    double x;
    if (!ti.is_float) {
      x = static_cast<double>(static_cast<int64_t>(rng() % 15) - 7);
      if (!ti.is_signed) x = std::fabs(x);
    } else {
      x = u(rng);
      if (!ti.is_signed) x = std::fabs(x);
    }
    b = encode(t, x);
  }
  return m;
}

// A fresh random A for v: rows a multiple of v.m, K = k_steps · v.k, pruned with v's pattern.
Compressed random_compressed(std::mt19937_64& rng, const isa::Variant& v, int64_t rows, int64_t k_steps) {
  const Pattern p = v.meta->pattern;
  return compress(prune_magnitude(random_dense(rng, v.a, rows, k_steps * v.k), p), p, true);
}

int lanes_per_group(const isa::Variant& v) { return v.meta->lanes_per_group; }

// The documented index formula, written out again: the word lane `lane` of the v.m-row block rb
// loads for k-step ks (or -1 for a lane that loads nothing).
int64_t doc_index(const isa::Variant& v, int64_t rows, int64_t cols, int G, int64_t rb, int64_t ks, int lane) {
  const int L = lanes_per_group(v), P = 8 * L;
  const int w = lane / 32, g = (lane % 32) / 4, t = lane % 4;
  if (t >= L) return -1;
  const int64_t k_steps = cols / v.k, groups = (k_steps + G - 1) / G;
  const int64_t wb = rb * (v.m / 16) + w;
  (void)rows;
  return ((wb * groups + ks / G) * P + (g * L + t)) * G + ks % G;
}

// Sub-tile of a Compressed matrix: rows [r0, r0+m), dense cols [ks·k, (ks+1)·k).
Compressed sub_tile(const Compressed& c, const isa::Variant& v, int64_t r0, int64_t ks) {
  Compressed s;
  s.type = c.type;
  s.pattern = c.pattern;
  s.ordered = c.ordered;
  s.rows = v.m;
  s.cols = v.k;
  s.values = Matrix(c.type, v.m, v.k / 2);
  for (int r = 0; r < v.m; ++r)
    for (int j = 0; j < v.k / 2; ++j) s.values.at(r, j) = c.values.at(r0 + r, ks * (v.k / 2) + j);
  s.metadata.assign(static_cast<size_t>(s.rows * s.meta_words_per_row()), 0);
  const int64_t cps = s.chunks_per_row();
  for (int r = 0; r < v.m; ++r)
    for (int64_t ch = 0; ch < cps; ++ch) s.set_nibble(r, ch, c.nibble(r0 + r, ks * cps + ch));
  return s;
}

std::string error_of(const std::function<void()>& fn, Status want) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), want) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an Error(" << status_name(want) << ")";
  return "";
}

void expect_same(const Compressed& a, const Compressed& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.pattern, b.pattern);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  EXPECT_EQ(a.ordered, b.ordered);
  EXPECT_TRUE(a.values == b.values);
  EXPECT_EQ(a.metadata, b.metadata);
}

size_t doc_bytes(const isa::Variant& v, int64_t rows, int64_t cols, int G) {
  const int64_t k_steps = cols / v.k, groups = (k_steps + G - 1) / G;
  return static_cast<size_t>((rows / 16) * groups * G * 32 * lanes_per_group(v));
}

// ------------------------------------------------------------------ (1) round trip, (4) sizes

TEST(FragmentLayout, RoundTripAndSizeForEverySparseVariant) {
  FRAG_SEEDED_RNG(rng);
  const auto vs = variants_under_test();
  ASSERT_GT(vs.size(), 100u);
  constexpr int kGroups[] = {1, 2, 4, 8};
  for (const isa::Variant* v : vs) {
    SCOPED_TRACE(v->id);
    const int64_t rows = v->m * static_cast<int64_t>(1 + rng() % 3);
    const int64_t k_steps = 1 + static_cast<int64_t>(rng() % 9);
    const int G = kGroups[rng() % 4];
    const Compressed c = random_compressed(rng, *v, rows, k_steps);
    const FragmentReadyMeta f = to_fragment_ready(c, *v, G);
    EXPECT_EQ(f.variant_id, v->id);
    EXPECT_EQ(f.group, G);
    EXPECT_EQ(f.bytes(), doc_bytes(*v, rows, c.cols, G)) << "rows " << rows << " k_steps " << k_steps << " G " << G;
    EXPECT_EQ(f.bytes(), f.words.size() * 4);
    if (k_steps % G == 0) EXPECT_EQ(f.bytes(), c.metadata_bytes());
    // Padding words, and only those, hold kPadWord in the padded k-steps.
    for (int64_t wb = 0; wb < rows / 16; ++wb)
      for (int64_t ks = k_steps; ks < f.groups() * G; ++ks)
        for (int p = 0; p < 8 * lanes_per_group(*v); ++p) EXPECT_EQ(f.words[f.index(wb, ks, p)], f.kPadWord);
    expect_same(from_fragment_ready(f, c.values, *v), c);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(FragmentLayout, DefaultGroupIsFour) {
  const isa::Variant& v = isa::variant_or_throw("mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32");
  std::mt19937_64 rng(1);
  const FragmentReadyMeta f = to_fragment_ready(random_compressed(rng, v, 16, 8), v);
  EXPECT_EQ(f.group, 4);
  EXPECT_EQ(f.groups(), 2);
}

// A wgmma.sp form's warp w reads what the mma.sp form with the same A type and K reads for
// 16-row block 4·rb + w: the words are identical.
TEST(FragmentLayout, WgmmaWordsEqualTheMatchingMmaSpWords) {
  FRAG_SEEDED_RNG(rng);
  int pairs = 0;
  for (const isa::Variant* w : variants_under_test()) {
    if (!w->wgmma()) continue;
    const isa::Variant* m = nullptr;
    for (const isa::Variant* x : variants_under_test())
      if (x->family == isa::Family::mma_sp_ordered && x->kind == isa::Kind::none && x->a == w->a && x->k == w->k)
        m = x;
    ASSERT_NE(m, nullptr) << w->id;
    SCOPED_TRACE(w->id + " vs " + m->id);
    const Compressed c = random_compressed(rng, *w, 64 * (1 + rng() % 2), 1 + rng() % 6);
    const FragmentReadyMeta fw = to_fragment_ready(c, *w), fm = to_fragment_ready(c, *m);
    EXPECT_EQ(fw.words, fm.words);
    // Either one reads back through the other variant.
    expect_same(from_fragment_ready(fm, c.values, *w), c);
    expect_same(from_fragment_ready(fw, c.values, *m), c);
    // And the lanes agree: lane 32w+l of 64-row block rb = lane l of 16-row block 4rb+w.
    for (int64_t rb = 0; rb < c.rows / 64; ++rb)
      for (int64_t ks = 0; ks < fw.k_steps(); ++ks)
        for (int lane = 0; lane < 128; ++lane)
          ASSERT_EQ(fragment_ready_word(fw, rb, ks, lane), fragment_ready_word(fm, 4 * rb + lane / 32, ks, lane % 32));
    ++pairs;
  }
  EXPECT_GE(pairs, 20);
}

// ------------------------------------------------------------------ (2) the layout feeds the instruction

TEST(FragmentLayout, LoadedWordsFeedTheInstructionExactly) {
  FRAG_SEEDED_RNG(rng);
  for (const isa::Variant* vp : variants_under_test()) {
    const isa::Variant& v = *vp;
    SCOPED_TRACE(v.id);
    const int G = 4;
    const int64_t rows = v.m * static_cast<int64_t>(1 + rng() % 3);
    const int64_t k_steps = 1 + static_cast<int64_t>(rng() % 7);
    const Compressed c = random_compressed(rng, v, rows, k_steps);
    const FragmentReadyMeta f = to_fragment_ready(c, v, G);
    const int L = lanes_per_group(v), P = 8 * L;
    for (int trial = 0; trial < 3; ++trial) {
      const int64_t rb = static_cast<int64_t>(rng() % (rows / v.m));
      const int64_t ks = static_cast<int64_t>(rng() % k_steps);
      SCOPED_TRACE("row block " + std::to_string(rb) + ", k-step " + std::to_string(ks));

      // What each lane loads: one G-word record at the documented index. Each warp's metadata
      // lanes read one contiguous, G·4-byte aligned run of P·G words, lane p at offset p·G.
      emu::WarpState s = emu::random_state(v, rng, emu::Inputs::general, 0);
      for (int w = 0; w < v.threads() / 32; ++w) {
        const int64_t first = doc_index(v, rows, c.cols, G, rb, ks - ks % G, 32 * w);
        ASSERT_EQ(first % (static_cast<int64_t>(P) * G), 0);
        int64_t p = 0;
        for (int l = 0; l < 32; ++l) {
          const int lane = 32 * w + l;
          const int64_t idx = doc_index(v, rows, c.cols, G, rb, ks, lane);
          if (idx < 0) {
            EXPECT_EQ(fragment_ready_word(f, rb, ks, lane), 0u);
            s.e[lane] = static_cast<uint32_t>(rng());  // lanes that load nothing hold garbage
            continue;
          }
          const int64_t record = idx - ks % G;
          EXPECT_EQ(record, first + p * G) << "lane " << lane;
          ++p;
          ASSERT_LT(static_cast<size_t>(record + G - 1), f.words.size());
          uint32_t loaded[8];
          for (int j = 0; j < G; ++j) loaded[j] = f.words[static_cast<size_t>(record + j)];  // the uint4 load
          s.e[lane] = loaded[ks % G];
          EXPECT_EQ(s.e[lane], fragment_ready_word(f, rb, ks, lane)) << "lane " << lane;
        }
        EXPECT_EQ(p, P);
      }

      // The A fragment of the same instruction: the packed value tile.
      const Compressed tile = sub_tile(c, v, rb * v.m, ks);
      if (v.wgmma() && v.a_source == isa::ASource::descriptor)
        s.a_smem = tile.values;
      else
        s.a = emu::scatter(v, v.fa, tile.values);

      // The metadata the instruction sees is exactly the tile's, and so is D.
      emu::MatrixOperands ops = emu::gather(v, s);
      ASSERT_TRUE(ops.a_sparse.has_value());
      EXPECT_EQ(ops.a_sparse->metadata, tile.metadata);
      const Matrix d_regs = emu::gather_d(v, emu::execute(v, s));
      ops.a_sparse = tile;
      const Matrix d_matrix = emu::execute_matrix(v, ops);
      EXPECT_TRUE(d_regs == d_matrix);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// The documented closed forms in terms of the Compressed matrix's 16-bit words M[row][i]
// (4 nibbles each), for lane (g, t < L) of a 16-row block at row r0 and k-step ks:
//   16/32-bit types: e = M[r0+g][ks·L+t] | M[r0+g+8][ks·L+t] << 16
//   8/4-bit types:   e = M[r][ks·L+2(t/2)] | M[r][ks·L+2(t/2)+1] << 16, r = r0 + g + 8(t%2)
TEST(FragmentLayout, ClosedFormsInCompressedWords) {
  FRAG_SEEDED_RNG(rng);
  for (const isa::Variant* vp : variants_under_test()) {
    const isa::Variant& v = *vp;
    SCOPED_TRACE(v.id);
    const Compressed c = random_compressed(rng, v, v.m, 1 + static_cast<int64_t>(rng() % 5));
    const FragmentReadyMeta f = to_fragment_ready(c, v);
    const int L = lanes_per_group(v);
    const bool half = type_info(v.a).bits >= 16;
    const int64_t wpr = c.meta_words_per_row();
    auto m16 = [&](int64_t row, int64_t i) { return static_cast<uint32_t>(c.metadata[static_cast<size_t>(row * wpr + i)]); };
    for (int64_t ks = 0; ks < f.k_steps(); ++ks)
      for (int lane = 0; lane < v.threads(); ++lane) {
        const int g = (lane % 32) / 4, t = lane % 4;
        const int64_t r0 = 16 * (lane / 32);
        uint32_t want = 0;
        if (t < L) {
          if (half) {
            want = m16(r0 + g, ks * L + t) | m16(r0 + g + 8, ks * L + t) << 16;
          } else {
            const int64_t r = r0 + g + 8 * (t % 2), i = ks * L + 2 * (t / 2);
            want = m16(r, i) | m16(r, i + 1) << 16;
          }
        }
        ASSERT_EQ(fragment_ready_word(f, 0, ks, lane), want) << "k-step " << ks << ", lane " << lane;
      }
  }
}

// ------------------------------------------------------------------ (3) bad inputs

TEST(FragmentLayout, BadShapesAndTypesAreInvalidArgumentNamingTheValue) {
  const isa::Variant& v = isa::variant_or_throw("mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32");
  const isa::Variant& wg = isa::variant_or_throw("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.bf16.bf16:rs");
  std::mt19937_64 rng(7);
  auto make = [&](ElemType t, int64_t rows, int64_t cols, Pattern p) {
    return compress(prune_magnitude(random_dense(rng, t, rows, cols), p), p, true);
  };
  const Compressed good = make(ElemType::bf16, 32, 64, Pattern::p2_4);

  std::string msg = error_of([&] { to_fragment_ready(make(ElemType::bf16, 24, 64, Pattern::p2_4), v); },
                             Status::invalid_argument);
  EXPECT_NE(msg.find("rows 24"), std::string::npos) << msg;
  EXPECT_NE(msg.find("16"), std::string::npos) << msg;
  msg = error_of([&] { to_fragment_ready(make(ElemType::bf16, 16, 48, Pattern::p2_4), v); }, Status::invalid_argument);
  EXPECT_NE(msg.find("cols 48"), std::string::npos) << msg;
  EXPECT_NE(msg.find("32"), std::string::npos) << msg;
  msg = error_of([&] { to_fragment_ready(good, wg); }, Status::invalid_argument);  // 32 rows, wgmma needs 64
  EXPECT_NE(msg.find("rows 32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("64"), std::string::npos) << msg;
  msg = error_of([&] { to_fragment_ready(make(ElemType::f16, 16, 64, Pattern::p2_4), v); }, Status::invalid_argument);
  EXPECT_NE(msg.find("f16"), std::string::npos) << msg;
  msg = error_of([&] { to_fragment_ready(good, v, 3); }, Status::invalid_argument);
  EXPECT_NE(msg.find("group 3"), std::string::npos) << msg;
  // Pattern: e2m1 under 2:4 (.kind::f8f6f4) given to a .kind::mxf4 form (4:8 pair-wise).
  const isa::Variant* mxf4 = nullptr;
  for (const auto& x : isa::registry())
    if (x.sparse() && x.kind == isa::Kind::mxf4) mxf4 = &x;
  ASSERT_NE(mxf4, nullptr);
  msg = error_of([&] { to_fragment_ready(make(ElemType::e2m1, 16, 128, Pattern::p2_4), *mxf4); },
                 Status::invalid_argument);
  EXPECT_NE(msg.find("2:4"), std::string::npos) << msg;
  // A dense variant.
  const isa::Variant& dense = isa::variant_or_throw("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
  msg = error_of([&] { to_fragment_ready(good, dense); }, Status::invalid_argument);
  EXPECT_NE(msg.find("dense"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dense.id), std::string::npos) << msg;
  // An unordered nibble for an ordered form is a bad value, named.
  Compressed unordered = good;
  unordered.ordered = false;
  unordered.set_nibble(3, 5, 0x1);  // idx0 = 1, idx1 = 0
  const isa::Variant& ord = isa::variant_or_throw("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32");
  msg = error_of([&] { to_fragment_ready(unordered, ord); }, Status::invalid_value);
  EXPECT_NE(msg.find("row 3, chunk 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0x1"), std::string::npos) << msg;
  EXPECT_NO_THROW(to_fragment_ready(unordered, v));  // plain mma.sp takes it

  // from_fragment_ready: wrong values, a corrupt padding word, a layout for another K.
  FragmentReadyMeta f = to_fragment_ready(good, v, 4);  // 2 k-steps: 2 padding words per lane
  msg = error_of([&] { from_fragment_ready(f, Matrix(ElemType::bf16, 32, 16), v); }, Status::invalid_argument);
  EXPECT_NE(msg.find("32 x 16"), std::string::npos) << msg;
  const isa::Variant& k16 = isa::variant_or_throw("mma.sp.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
  msg = error_of([&] { from_fragment_ready(f, good.values, k16); }, Status::invalid_argument);
  EXPECT_NE(msg.find("K 32"), std::string::npos) << msg;
  FragmentReadyMeta bad_pad = f;
  bad_pad.words[bad_pad.index(1, 3, 5)] = 0x44444448u;
  msg = error_of([&] { from_fragment_ready(bad_pad, good.values, v); }, Status::invalid_value);
  EXPECT_NE(msg.find("0x44444448"), std::string::npos) << msg;
  FragmentReadyMeta truncated = f;
  truncated.words.pop_back();
  error_of([&] { from_fragment_ready(truncated, good.values, v); }, Status::invalid_argument);

  // fragment_ready_word: indices out of range.
  msg = error_of([&] { fragment_ready_word(f, 2, 0, 0); }, Status::invalid_argument);
  EXPECT_NE(msg.find("row block 2"), std::string::npos) << msg;
  msg = error_of([&] { fragment_ready_word(f, 0, 2, 0); }, Status::invalid_argument);
  EXPECT_NE(msg.find("k-step 2"), std::string::npos) << msg;
  msg = error_of([&] { fragment_ready_word(f, 0, 0, 32); }, Status::invalid_argument);
  EXPECT_NE(msg.find("lane 32"), std::string::npos) << msg;
}

// ------------------------------------------------------------------ the worked example of the docs

// 16 x 64 bf16, mma.sp m16n8k32 (L = 2, P = 16 lanes, 2 k-steps, G = 4: one padded group).
TEST(FragmentLayout, WorkedExampleFromDocs) {
  const isa::Variant& v = isa::variant_or_throw("mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32");
  std::mt19937_64 rng(3);
  const Compressed c = compress(prune_magnitude(random_dense(rng, ElemType::bf16, 16, 64)));
  ASSERT_EQ(c.meta_words_per_row(), 4);
  const FragmentReadyMeta f = to_fragment_ready(c, v);
  EXPECT_EQ(f.meta_lanes(), 16);
  EXPECT_EQ(f.k_steps(), 2);
  EXPECT_EQ(f.groups(), 1);
  EXPECT_EQ(f.words.size(), 64u);
  EXPECT_EQ(f.bytes(), 256u);
  EXPECT_EQ(c.metadata_bytes(), 128u);
  EXPECT_EQ(to_fragment_ready(c, v, 2).bytes(), 128u);  // G = 2: no padding
  auto m16 = [&](int row, int word) { return static_cast<uint32_t>(c.metadata[static_cast<size_t>(row * 4 + word)]); };
  // Lane 5 (g = 1, t = 1, p = 3) loads words[12..15]:
  EXPECT_EQ(f.words[12], m16(1, 1) | m16(9, 1) << 16);  // k-step 0: rows 1, 9, cols 16..31
  EXPECT_EQ(f.words[13], m16(1, 3) | m16(9, 3) << 16);  // k-step 1: rows 1, 9, cols 48..63
  EXPECT_EQ(f.words[14], 0x44444444u);
  EXPECT_EQ(f.words[15], 0x44444444u);
  EXPECT_EQ(fragment_ready_word(f, 0, 1, 5), f.words[13]);
  // Lane 0 (p = 0) loads words[0..3]: rows 0, 8, cols 0..15 of k-step 0, then cols 32..47.
  EXPECT_EQ(f.words[0], m16(0, 0) | m16(8, 0) << 16);
  EXPECT_EQ(f.words[1], m16(0, 2) | m16(8, 2) << 16);  // k-step 1: cols 32..47
  EXPECT_EQ(f.words[2], 0x44444444u);
  EXPECT_EQ(f.words[3], 0x44444444u);
  // Lane 2 (t = 2) holds none for selector 0.
  EXPECT_EQ(fragment_ready_word(f, 0, 0, 2), 0u);
  // In general for 16/32-bit types: word = row g's 16-bit word (ks·L + t) | row g+8's << 16.
  for (int lane = 0; lane < 32; ++lane)
    for (int ks = 0; ks < 2; ++ks) {
      const int g = lane / 4, t = lane % 4;
      if (t >= 2) continue;
      EXPECT_EQ(fragment_ready_word(f, 0, ks, lane), m16(g, ks * 2 + t) | m16(g + 8, ks * 2 + t) << 16);
    }
}

}  // namespace
}  // namespace spmma
