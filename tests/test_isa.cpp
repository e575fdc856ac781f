// SPDX-License-Identifier: BSD-3-Clause
// The registry: completeness against the spec's syntax blocks and examples, and every
// fragment and metadata map checked as a bijection and against the spec's own formulas.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "spmma/detail/gemm_pairs.hpp"
#include "spmma/error.hpp"
#include "spmma/isa.hpp"

using namespace spmma;
using namespace spmma::isa;

TEST(IsaRegistry, IdsAreUniqueAndCountsMatchTheSpec) {
  std::set<std::string> ids;
  std::map<Family, int> per_family;
  for (const auto& v : registry()) {
    EXPECT_TRUE(ids.insert(v.id).second) << "duplicate id " << v.id;
    ++per_family[v.family];
  }
  // Counts derived from the syntax blocks (see docs/isa.md for the arithmetic):
  //   mma.sp: f16 2 shapes x 2 acc + bf16 2 + tf32 2 + f8 4 + int8 2x4x2 + int4 2x4x2        = 44
  //   ordered: the same 44 + f8f6f4 2x25 + mxf8f6f4 2x25 (with/without scale_vec) + mxf4 2
  //            + mxf4nvf4 3                                                                = 149
  //   dense mma: m8n8k4 12, f16 4, tf32/bf16 4, f8 16, f8f6f4 50, mxf8f6f4 50, mxf4 2,
  //              mxf4nvf4 3, f64 4, int8 24, int4 24, b1 6                                   = 199
  //   wgmma.sp: (f16 2 + bf16 1 + tf32 1 + fp8 8) x 32 N x 2 A sources + int 4 x 2 x 18 N x 2 = 1056
  EXPECT_EQ(per_family[Family::mma_sp], 44);
  EXPECT_EQ(per_family[Family::mma_sp_ordered], 149);
  EXPECT_EQ(per_family[Family::mma], 199);
  EXPECT_EQ(per_family[Family::wgmma_sp], 1056);
}

TEST(IsaRegistry, SpecExamplesArePresent) {
  // Instruction texts copied from the examples of spec sections 9.7.14.6.3, 9.7.14.5.14, 9.7.15.6.3.
  const char* examples[] = {
      "mma.sp.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
      "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
      "mma.sp.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
      "mma.sp.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
      "mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32",
      "mma.sp.sync.aligned.m16n8k64.row.col.f32.e5m2.e4m3.f32",
      "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
      "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e3m2.e2m3.f32",
      "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f16.e2m3.e2m1.f16",
      "mma.sp.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.u8.s32",
      "mma.sp.sync.aligned.m16n8k64.row.col.satfinite.s32.s8.s8.s32",
      "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.satfinite.s32.s8.s8.s32",
      "mma.sp.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32",
      "mma.sp.sync.aligned.m16n8k128.row.col.satfinite.s32.u4.u4.s32",
      "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4.block_scale.f32.e2m1.e2m1.f32.ue8m0",
      "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3",
      "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue8m0",
      "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e3m2.e2m1.f32.ue8m0",
      "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16",
      "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16",
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
      "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32",
      "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32",
      "mma.sync.aligned.m16n8k16.row.col.f32.e5m2.e4m3.f32",
      "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e5m2.f16",
      "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e2m3.e2m1.f16",
      "mma.sync.aligned.m8n8k16.row.col.satfinite.s32.s8.u8.s32",
      "mma.sync.aligned.m8n8k32.row.col.satfinite.s32.u4.u4.s32",
      "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u4.s4.s32",
      "mma.sync.aligned.m16n8k64.row.col.satfinite.s32.u4.u4.s32",
      "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc",
      "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc",
      "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
      "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64",
      "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.f32.e2m1.e2m1.f32.ue8m0",
      "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e5m2.f32.ue8m0",
      "wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.u8.u8:ss",
      "wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.s8.u8:ss",
  };
  for (const char* e : examples) EXPECT_NE(find_variant(e), nullptr) << e;
}

TEST(IsaRegistry, RegisterCountsMatchTheSpecExamples) {
  struct Case { const char* id; int a, b, c, d; };
  const Case cases[] = {
      {"mma.sp.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 2, 2, 2, 2},
      {"mma.sp.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 2, 2, 4, 4},
      {"mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32", 4, 4, 4, 4},
      {"mma.sp.sync.aligned.m16n8k64.row.col.f32.e5m2.e4m3.f32", 4, 4, 4, 4},
      {"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f16.e2m3.e2m1.f16", 4, 4, 2, 2},
      {"mma.sp.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.u8.s32", 2, 2, 4, 4},
      {"mma.sp.sync.aligned.m16n8k128.row.col.satfinite.s32.u4.u4.s32", 4, 4, 4, 4},
      {"mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16", 2, 2, 4, 8},
      {"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 4, 2, 4, 4},
      {"mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64", 8, 4, 4, 4},
      {"mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc", 4, 2, 4, 4},
      {"mma.sync.aligned.m8n8k16.row.col.satfinite.s32.s8.u8.s32", 1, 1, 2, 2},
      {"mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.f32.e2m1.e2m1.f32.ue8m0", 4, 2, 4, 4},
      {"wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.u8.u8:ss", 0, 0, 4, 4},
      {"wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.bf16.bf16:rs", 4, 0, 128, 128},
      {"wgmma.mma_async.sp.sync.aligned.m64n256k32.f16.f16.f16:rs", 4, 0, 64, 64},
  };
  for (const auto& c : cases) {
    const Variant& v = variant_or_throw(c.id);
    EXPECT_EQ(v.fa.kind == FragKind::smem ? 0 : v.fa.regs, c.a) << c.id;
    EXPECT_EQ(v.fb.kind == FragKind::smem ? 0 : v.fb.regs, c.b) << c.id;
    EXPECT_EQ(v.fc.regs, c.c) << c.id;
    EXPECT_EQ(v.fd.regs, c.d) << c.id;
  }
}

TEST(IsaRegistry, EveryRegisterFragmentCoversItsMatrixExactlyOnce) {
  for (const auto& v : registry()) {
    for (const Fragment* f : {&v.fa, &v.fb, &v.fc, &v.fd}) {
      if (f->kind == FragKind::smem) continue;
      std::set<std::tuple<int, int, int>> seen;
      for (int lane = 0; lane < v.threads(); ++lane)
        for (int r = 0; r < f->regs; ++r)
          for (int s = 0; s < f->per_reg(); ++s) {
            const Coord c = f->at(lane, r, s);
            ASSERT_TRUE(c.row >= 0 && c.row < f->rows && c.col >= 0 && c.col < f->cols && c.part < v.parts)
                << v.id << " lane " << lane << " reg " << r << " slot " << s;
            ASSERT_TRUE(seen.insert({c.part, c.row, c.col}).second)
                << v.id << ": element covered twice (lane " << lane << " reg " << r << ")";
          }
      EXPECT_EQ(seen.size(), static_cast<size_t>(v.parts * f->rows * f->cols)) << v.id;
    }
  }
}

TEST(IsaRegistry, EveryMetadataSelectorCoversEveryChunkExactlyOnce) {
  for (const auto& v : registry()) {
    if (!v.sparse()) {
      EXPECT_FALSE(v.meta.has_value()) << v.id;
      continue;
    }
    ASSERT_TRUE(v.meta.has_value()) << v.id;
    const int chunks = v.k / pattern_info(v.meta->pattern).chunk;
    int valid = 0;
    for (int sel = 0; sel < 4; ++sel) {
      if (!v.meta->selector_valid(sel)) continue;
      ++valid;
      std::set<std::pair<int, int>> seen;
      for (int lane = 0; lane < v.threads(); ++lane)
        for (int n = 0; n < 8; ++n)
          if (auto c = v.meta->at(lane, n, sel)) {
            ASSERT_TRUE(c->row < v.m && c->col < chunks) << v.id;
            ASSERT_TRUE(seen.insert({c->row, c->col}).second) << v.id << " sel " << sel;
          }
      EXPECT_EQ(seen.size(), static_cast<size_t>(v.m * chunks)) << v.id << " sel " << sel;
    }
    // Spec 9.7.14.6.1: k16 f16 / k8 tf32 take 4 selectors, the other shapes 2 or 1.
    const int want = (v.k == 16 && v.a != ElemType::tf32 && !v.wgmma()) || (v.k == 8) ? 4
                     : v.meta->lanes_per_group == 2                                   ? 2
                                                                                      : 1;
    EXPECT_EQ(valid, want) << v.id;
  }
}

// The spec's row/col formulas (9.7.14.6.2), written out literally for three A layouts.
TEST(IsaRegistry, SparseAFragmentsFollowTheSpecFormulas) {
  struct Spec {
    const char* id;
    int elems;                                  // ai, i = 0..elems-1 (two or more per register)
    std::function<int(int g, int i)> row;
    std::function<int(int t, int i)> firstcol;  // dense column of the chunk
    int chunk, kept;                            // chunk width and stored elements per chunk
  };
  const Spec specs[] = {
      {"mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32", 8,
       [](int g, int i) { return (i < 2 || (i >= 4 && i < 6)) ? g : g + 8; },
       [](int t, int i) { return i < 4 ? 4 * t : 4 * t + 16; }, 4, 2},
      {"mma.sp.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32", 4,
       [](int g, int i) { return (i == 0 || i == 2) ? g : g + 8; },
       [](int t, int i) { return i < 2 ? 2 * t : 2 * t + 8; }, 2, 1},
      {"mma.sp.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32", 16,
       [](int g, int i) { return (i < 4 || (i >= 8 && i < 12)) ? g : g + 8; },
       [](int t, int i) { return i < 8 ? 8 * t : 8 * t + 32; }, 8, 4},
      {"mma.sp.sync.aligned.m16n8k128.row.col.s32.u4.u4.s32", 32,
       [](int g, int i) { return (i < 8 || (i >= 16 && i < 24)) ? g : g + 8; },
       [](int t, int i) { return i < 16 ? 16 * t : 16 * t + 64; }, 16, 8},
  };
  for (const auto& s : specs) {
    const Variant& v = variant_or_throw(s.id);
    const int per_reg = v.fa.per_reg();
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < s.elems; ++i) {
        const Coord c = v.fa.at(lane, i / per_reg, i % per_reg);
        EXPECT_EQ(c.row, s.row(lane / 4, i)) << s.id << " lane " << lane << " a" << i;
        // stored element i % kept of the chunk starting at firstcol sits at packed column firstcol/2 + i%kept
        EXPECT_EQ(c.col, s.firstcol(lane % 4, i) / 2 + i % s.kept) << s.id << " lane " << lane << " a" << i;
      }
  }
}

// LAYOUTS.md §2: the lane holding each metadata word.
TEST(IsaRegistry, MetadataLanesFollowLayoutsTable) {
  const Variant& f16k16 = variant_or_throw("mma.sp.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
  for (int s = 0; s < 4; ++s)
    for (int g = 0; g < 8; ++g) {
      auto lo = f16k16.meta->at(4 * g + s, 2, s), hi = f16k16.meta->at(4 * g + s, 6, s);
      ASSERT_TRUE(lo && hi);
      EXPECT_EQ(lo->row, g); EXPECT_EQ(lo->col, 2);
      EXPECT_EQ(hi->row, g + 8); EXPECT_EQ(hi->col, 2);
      EXPECT_FALSE(f16k16.meta->at(4 * g + (s + 1) % 4, 0, s));
    }
  const Variant& u8k32 = variant_or_throw("mma.sp.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32");
  for (int s = 0; s < 2; ++s)
    for (int h = 0; h < 2; ++h) {
      auto c = u8k32.meta->at(4 * 3 + 2 * s + h, 5, s);
      ASSERT_TRUE(c);
      EXPECT_EQ(c->row, 3 + 8 * h);
      EXPECT_EQ(c->col, 5);
    }
  const Variant& i8k64 = variant_or_throw("mma.sp.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32");
  auto c = i8k64.meta->at(4 * 2 + 2 * 1 + 1, 3, 0);  // q = 1, h = 1
  ASSERT_TRUE(c);
  EXPECT_EQ(c->row, 10);
  EXPECT_EQ(c->col, 8 + 3);
  const Variant& wg = variant_or_throw("wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16:ss");
  auto w = wg.meta->at(32 * 3 + 4 * 1 + 2 * 1 + 1, 1, 1);  // warp 3, g 1, selector 1, K half 1
  ASSERT_TRUE(w);
  EXPECT_EQ(w->row, 48 + 1);
  EXPECT_EQ(w->col, 4 + 1);
}

TEST(IsaRegistry, TargetsAndPtxVersions) {
  for (const auto& v : registry()) {
    if (v.wgmma()) {
      EXPECT_EQ(v.target.name(), "sm_90a") << v.id;
      EXPECT_GE(v.ptx_isa, 82) << v.id;
    }
    if (v.kind != Kind::none) EXPECT_EQ(v.target.name(), "sm_120a") << v.id;
    if (v.family == Family::mma_sp_ordered) EXPECT_GE(v.ptx_isa, 85) << v.id;
    if (v.family == Family::mma_sp) EXPECT_GE(v.ptx_isa, 71) << v.id;
  }
  EXPECT_TRUE((Target{80, false}.runs_on(90)));
  EXPECT_TRUE((Target{90, true}.runs_on(90)));
  EXPECT_FALSE((Target{120, true}.runs_on(90)));
  EXPECT_FALSE((Target{90, true}.runs_on(100)));
}

TEST(IsaRegistry, LookupErrorsNameTheText) {
  EXPECT_NE(find_variant("  mma.sp.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16; "), nullptr);
  try {
    variant_or_throw("wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.u8.u8");
    FAIL() << "an ambiguous wgmma text must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(":rs"), std::string::npos) << e.what();
  }
  try {
    variant_or_throw("mma.sp.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f16");
    FAIL() << "an unknown text must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("closest known"), std::string::npos) << e.what();
  }
}

// ------------------------------------------------------------------ forms by fields, the pair table

TEST(Isa, FindFormNamesOnePlainFormByFields) {
  using spmma::isa::ASource;
  using spmma::isa::Family;
  const auto* v = spmma::isa::find_form(Family::mma_sp_ordered, 16, 8, 32, spmma::ElemType::bf16, spmma::ElemType::bf16,
                                        spmma::ElemType::f32, ASource::registers);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->id, "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32");
  // wgmma: the A source tells the two forms with the same PTX text apart.
  const auto* ss = spmma::isa::find_form(Family::wgmma_sp, 64, 192, 64, spmma::ElemType::e4m3, spmma::ElemType::e5m2,
                                         spmma::ElemType::f32, ASource::descriptor);
  const auto* rs = spmma::isa::find_form(Family::wgmma_sp, 64, 192, 64, spmma::ElemType::e4m3, spmma::ElemType::e5m2,
                                         spmma::ElemType::f32, ASource::registers);
  ASSERT_NE(ss, nullptr);
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(ss->id, "wgmma.mma_async.sp.sync.aligned.m64n192k64.f32.e4m3.e5m2:ss");
  EXPECT_EQ(rs->id, "wgmma.mma_async.sp.sync.aligned.m64n192k64.f32.e4m3.e5m2:rs");
  // Integer forms: the plain one, never the .satfinite twin.
  const auto* s8 = spmma::isa::find_form(Family::mma_sp_ordered, 16, 8, 64, spmma::ElemType::s8, spmma::ElemType::u8,
                                         spmma::ElemType::s32, ASource::registers);
  ASSERT_NE(s8, nullptr);
  EXPECT_FALSE(s8->satfinite);
  // No such form: null (a mixed bf16 x f16 pair, a 4-bit wgmma, a shape the family lacks).
  EXPECT_EQ(spmma::isa::find_form(Family::mma_sp_ordered, 16, 8, 32, spmma::ElemType::bf16, spmma::ElemType::f16,
                                  spmma::ElemType::f32, ASource::registers),
            nullptr);
  EXPECT_EQ(spmma::isa::find_form(Family::wgmma_sp, 64, 128, 128, spmma::ElemType::s4, spmma::ElemType::s4,
                                  spmma::ElemType::s32),
            nullptr);
  EXPECT_EQ(spmma::isa::find_form(Family::mma_sp_ordered, 16, 16, 32, spmma::ElemType::bf16, spmma::ElemType::bf16,
                                  spmma::ElemType::f32, ASource::registers),
            nullptr);
}

// What the code generator derives from each row of the pair table: the sm80 kernel's form (it
// runs every pair), the sm90 kernel's at the tile widths it is built with, except for 4-bit A.
TEST(Isa, EveryPairOfThePairTableHasItsKernelForms) {
  using spmma::isa::ASource;
  using spmma::isa::Family;
  for (const auto& p : spmma::detail::kGemmPairs) {
    SCOPED_TRACE(std::string(spmma::type_name(p.a)) + " x " + std::string(spmma::type_name(p.b)));
    const int k = spmma::detail::kGemmDenseBitsPerStep / spmma::memory_bits(p.a);
    const auto acc = spmma::detail::gemm_accumulator(p.a);
    const auto* sm80 = spmma::isa::find_form(Family::mma_sp_ordered, 16, 8, k, p.a, p.b, acc, ASource::registers);
    ASSERT_NE(sm80, nullptr);
    EXPECT_EQ(sm80->packed_k() * spmma::memory_bits(p.a), 256) << "32 bytes of packed A per row and instruction";
    const bool four_bit = p.a == spmma::ElemType::s4 || p.a == spmma::ElemType::u4;
    for (int n : {64, 128, 192, 256}) {
      const auto* sm90 = spmma::isa::find_form(Family::wgmma_sp, 64, n, k, p.a, p.b, acc, ASource::descriptor);
      EXPECT_EQ(sm90 != nullptr, !four_bit) << "n = " << n;
    }
  }
}
