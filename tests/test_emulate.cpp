// SPDX-License-Identifier: BSD-3-Clause
// The emulator against an independent dense product, on fresh random inputs, for every variant.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "spmma/emulate.hpp"
#include "spmma/error.hpp"

using namespace spmma;
using namespace spmma::isa;
using namespace spmma::emu;

namespace {

uint64_t test_seed() {
  static const uint64_t seed = std::random_device{}();
  return seed;
}

// A plain dense product on the decompressed A, written independently of the emulator's core:
// doubles for floats (with the scales applied explicitly), int64 for integers.
struct Reference {
  std::vector<double> value;  // (parts·m) x n
  std::vector<double> magnitude;  // Σ|a·b| + |c|, the scale of the rounding error
};

Reference dense_reference(const Variant& v, const Matrix& a, const MatrixOperands& ops) {
  Reference r;
  const int rows = v.parts * v.m;
  r.value.assign(static_cast<size_t>(rows) * v.n, 0.0);
  r.magnitude = r.value;
  for (int p = 0; p < v.parts; ++p)
    for (int i = 0; i < v.m; ++i)
      for (int j = 0; j < v.n; ++j) {
        const int row = p * v.m + i;
        double acc = ops.accumulate ? ops.c.value(row, j) : 0.0, mag = std::fabs(acc);
        for (int k = 0; k < v.k; ++k) {
          double x = a.value(row, k), y = ops.b.value(p * v.k + k, j);
          if (v.bitop == BitOp::xor_popc) x = static_cast<double>((static_cast<int>(x) ^ static_cast<int>(y)) & 1), y = 1;
          if (v.bitop == BitOp::and_popc) x = static_cast<double>((static_cast<int>(x) & static_cast<int>(y)) & 1), y = 1;
          if (ops.negate_a) x = -x;
          if (ops.negate_b) y = -y;
          if (v.scale) {
            const int per = v.k / v.scale->scale_vec;
            x *= ops.scale_a.value(i, k / per);
            y *= ops.scale_b.value(k / per, j);
          }
          acc += x * y;
          mag += std::fabs(x * y);
        }
        r.value[static_cast<size_t>(row) * v.n + j] = acc;
        r.magnitude[static_cast<size_t>(row) * v.n + j] = mag;
      }
  return r;
}

double unit_roundoff(ElemType d) {
  switch (d) {
    case ElemType::f16: return std::ldexp(1.0, -11);
    case ElemType::f32: return std::ldexp(1.0, -24);
    case ElemType::f64: return std::ldexp(1.0, -53);
    default: return 0.0;
  }
}

int trials_for(const Variant& v) { return v.wgmma() ? (v.n % 64 == 0 ? 1 : 0) : 4; }

void check_against_reference(const Variant& v, std::mt19937_64& rng, Inputs kind) {
  const WarpState s = random_state(v, rng, kind);
  const MatrixOperands ops = gather(v, s);
  const Matrix a = dense_a(v, ops);
  const Matrix d = gather_d(v, execute(v, s));
  const Reference ref = dense_reference(v, a, ops);
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t c = 0; c < d.cols; ++c) {
      const size_t idx = static_cast<size_t>(r * d.cols + c);
      const double want = ref.value[idx], got = d.value(r, c);
      if (v.d == ElemType::s32) {
        // The double sum is exact for these magnitudes; wrap or clamp it like the hardware.
        const double lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
        double expect = want;
        if (v.satfinite) expect = std::clamp(want, lo, hi);
        else expect = static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(want))));
        ASSERT_EQ(got, expect) << v.id << " D[" << r << "][" << c << "] seed " << test_seed();
      } else if (kind == Inputs::exact) {
        // Small integers: the exact sum is representable, so D is exactly it.
        ASSERT_EQ(got, want) << v.id << " D[" << r << "][" << c << "] seed " << test_seed();
      } else if (std::isfinite(want) && std::fabs(want) < type_info(v.d).max_finite / 2) {
        // One rounding of a sum the reference holds to ~1e-16 relative to its magnitude.
        const double tol = unit_roundoff(v.d) * std::fabs(want) + 1e-13 * ref.magnitude[idx] +
                           std::ldexp(1.0, -24) * (v.d == ElemType::f16 ? 1 : 0);
        ASSERT_LE(std::fabs(got - want), tol) << v.id << " D[" << r << "][" << c << "] seed " << test_seed();
      }
    }
}

}  // namespace

TEST(Emulate, EveryVariantEqualsADenseProductOnExactInputs) {
  std::mt19937_64 rng(test_seed());
  int checked = 0;
  for (const auto& v : registry()) {
    for (int t = 0; t < trials_for(v); ++t) check_against_reference(v, rng, Inputs::exact);
    checked += trials_for(v) > 0;
  }
  EXPECT_GT(checked, 500);
}

TEST(Emulate, EveryVariantMatchesADenseProductOnGeneralInputs) {
  std::mt19937_64 rng(test_seed() + 1);
  for (const auto& v : registry())
    for (int t = 0; t < trials_for(v); ++t) check_against_reference(v, rng, Inputs::general);
}

// The matrix-level form on a matrix compressed by the sparse-format code equals a dense product
// on the original pruned matrix: the register maps, metadata maps and compression agree.
TEST(Emulate, RegisterFormEqualsMatrixFormOnCompressedInputs) {
  std::mt19937_64 rng(test_seed() + 2);
  for (const auto& v : registry()) {
    if (!v.sparse() || v.wgmma() || v.kind != Kind::none) continue;
    const WarpState s = random_state(v, rng, Inputs::exact);
    MatrixOperands ops = gather(v, s);
    const Matrix a = dense_a(v, ops);
    // Re-compress the dense A with the host compressor and run the matrix form.
    MatrixOperands ops2 = ops;
    ops2.a_sparse = compress(a, v.meta->pattern, true);
    const Matrix d1 = gather_d(v, execute(v, s)), d2 = execute_matrix(v, ops2);
    ASSERT_EQ(d1.bits, d2.bits) << v.id;
  }
}

TEST(Emulate, ForbiddenMetadataAndSelectorsAreRejectedNamingTheLane) {
  std::mt19937_64 rng(test_seed() + 3);
  for (const auto& v : registry()) {
    if (!v.sparse() || (v.wgmma() && v.n != 64)) continue;
    WarpState s = random_state(v, rng, Inputs::exact, std::nullopt);
    int lane = 0;
    while (!v.meta->at(lane, 0, s.selector)) ++lane;
    for (int nib = 0; nib < 16; ++nib) {
      if (v.meta->nibble_valid(static_cast<uint8_t>(nib))) continue;
      WarpState bad = s;
      bad.e[lane] = (bad.e[lane] & ~0xF00u) | (static_cast<uint32_t>(nib) << 8);  // nibble 2
      try {
        execute(v, bad);
        FAIL() << v.id << ": nibble " << nib << " accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Status::invalid_value);
        EXPECT_NE(std::string(e.what()).find("lane " + std::to_string(lane) + ","), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("nibble 2"), std::string::npos) << e.what();
      }
    }
    for (int sel : {-1, 0, 1, 2, 3, 4}) {
      if (v.meta->selector_valid(sel)) continue;
      WarpState bad = s;
      bad.selector = sel;
      EXPECT_THROW(execute(v, bad), Error) << v.id << " selector " << sel;
    }
  }
}

TEST(Emulate, PlainMmaSpAcceptsUnorderedNibblesAndPlacesElementsByIndex) {
  const Variant& v = variant_or_throw("mma.sp.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
  EXPECT_FALSE(v.meta->ordered);
  EXPECT_TRUE(v.meta->nibble_valid(0x1));  // idx0 = 1, idx1 = 0
  const Variant& o = variant_or_throw("mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
  EXPECT_FALSE(o.meta->nibble_valid(0x1));
  std::mt19937_64 rng(test_seed() + 4);
  WarpState s = random_state(v, rng, Inputs::exact, 0);
  for (int lane = 0; lane < 32; lane += 4) s.e[lane] = 0x11111111;  // every chunk: stored 0 -> col 1, 1 -> col 0
  const MatrixOperands ops = gather(v, s);
  const Matrix a = dense_a(v, ops);
  for (int r = 0; r < 16; ++r)
    for (int ch = 0; ch < 4; ++ch) {
      EXPECT_EQ(a.at(r, 4 * ch + 1), ops.a_sparse->values.at(r, 2 * ch));
      EXPECT_EQ(a.at(r, 4 * ch + 0), ops.a_sparse->values.at(r, 2 * ch + 1));
      EXPECT_TRUE(is_zero(a.type, a.at(r, 4 * ch + 2)) && is_zero(a.type, a.at(r, 4 * ch + 3)));
    }
}

TEST(Emulate, MetadataOfUnselectedLanesIsIgnored) {
  std::mt19937_64 rng(test_seed() + 5);
  for (const auto& v : registry()) {
    if (!v.sparse() || v.wgmma() || v.meta->lanes_per_group == 4) continue;
    WarpState s = random_state(v, rng, Inputs::exact);
    const auto d1 = execute(v, s);
    for (int lane = 0; lane < 32; ++lane)
      if (!v.meta->at(lane, 0, s.selector)) s.e[lane] = 0xFFFFFFFFu;  // forbidden everywhere
    EXPECT_EQ(execute(v, s), d1) << v.id;
  }
}

TEST(Emulate, SatfiniteAndWrapDifferExactlyOnOverflow) {
  std::mt19937_64 rng(test_seed() + 6);
  int pairs = 0;
  for (const auto& sat : registry()) {
    if (!sat.satfinite || sat.wgmma()) continue;
    std::string wrap_id = sat.id;
    wrap_id.erase(wrap_id.find(".satfinite"), 10);
    const Variant& wrap = variant_or_throw(wrap_id);
    WarpState s = random_state(sat, rng, Inputs::general);
    // Push every accumulator towards the edges so that some sums overflow and some do not.
    for (auto& c : s.c) {
      const int64_t edge = (rng() & 1) ? std::numeric_limits<int32_t>::max() - 2000 : std::numeric_limits<int32_t>::min() + 2000;
      c = static_cast<uint32_t>(static_cast<int32_t>(edge + static_cast<int64_t>(rng() % 1000)));
    }
    const Matrix ds = gather_d(sat, execute(sat, s)), dw = gather_d(wrap, execute(wrap, s));
    const MatrixOperands ops = gather(sat, s);
    const Reference ref = dense_reference(sat, dense_a(sat, ops), ops);
    int overflowed = 0;
    for (int64_t i = 0; i < ds.rows * ds.cols; ++i) {
      const double exact = ref.value[static_cast<size_t>(i)];
      const bool over = exact > std::numeric_limits<int32_t>::max() || exact < std::numeric_limits<int32_t>::min();
      overflowed += over;
      if (over) {
        EXPECT_NE(ds.bits[i], dw.bits[i]) << sat.id;
        EXPECT_EQ(decode(ElemType::s32, ds.bits[i]), exact > 0 ? 2147483647.0 : -2147483648.0) << sat.id;
      } else {
        EXPECT_EQ(ds.bits[i], dw.bits[i]) << sat.id;
      }
    }
    if (sat.a != ElemType::u4 && sat.a != ElemType::s4) EXPECT_GT(overflowed, 0) << sat.id;
    ++pairs;
  }
  EXPECT_GT(pairs, 40);
}

TEST(Emulate, F16AccumulatorsRoundToF16) {
  const Variant& v = variant_or_throw("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16");
  WarpState s;
  s.a.assign(32 * v.fa.regs, 0);
  s.b.assign(32 * v.fb.regs, 0);
  s.c.assign(32 * v.fc.regs, 0);
  // A[0][0] = 1, B[0][0] = 2^-11 (half an ulp of 1 in f16), C[0][0] = 1: exact 1 + 2^-11 -> 1 (ties to even).
  Matrix a(ElemType::f16, 16, 16), b(ElemType::f16, 16, 8), c(ElemType::f16, 16, 8);
  a.set_value(0, 0, 1.0);
  a.set_value(0, 1, 1.0);
  b.set_value(0, 0, std::ldexp(1.0, -11));
  b.set_value(1, 0, std::ldexp(1.0, -12));  // pushes the sum above the tie: 1 + 3·2^-12 -> 1 + 2^-10
  c.set_value(0, 0, 1.0);
  MatrixOperands ops;
  ops.a = a, ops.b = b, ops.c = c;
  const Matrix d = execute_matrix(v, ops);
  EXPECT_EQ(d.value(0, 0), 1.0 + std::ldexp(1.0, -10));
  ops.a.set_value(0, 1, 0.0);
  EXPECT_EQ(execute_matrix(v, ops).value(0, 0), 1.0);
}

TEST(Emulate, WgmmaScaleDAndNegation) {
  const Variant& v = variant_or_throw("wgmma.mma_async.sp.sync.aligned.m64n16k32.f32.bf16.bf16:rs");
  std::mt19937_64 rng(test_seed() + 7);
  WarpState s = random_state(v, rng, Inputs::exact);
  const Matrix d = gather_d(v, execute(v, s));
  s.scale_d = false;
  const Matrix d0 = gather_d(v, execute(v, s));
  s.imm_scale_a = -1;
  const Matrix dn = gather_d(v, execute(v, s));
  WarpState with_c = s;
  with_c.scale_d = true;
  const Matrix c = gather(v, with_c).c;
  for (int64_t i = 0; i < d.rows * d.cols; ++i) {
    EXPECT_EQ(decode(ElemType::f32, d.bits[i]), decode(ElemType::f32, d0.bits[i]) + decode(ElemType::f32, c.bits[i]));
    EXPECT_EQ(decode(ElemType::f32, dn.bits[i]), -decode(ElemType::f32, d0.bits[i]));
  }
}

TEST(Emulate, PaddingBitsOfF8F6F4ContainersAreRejected) {
  const Variant& v = variant_or_throw("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e2m1.e2m1.f32");
  std::mt19937_64 rng(test_seed() + 8);
  WarpState s = random_state(v, rng, Inputs::exact);
  s.a[5] |= 0x1;  // e2m1 sits in bits [5:2] of each byte: bit 0 is padding
  EXPECT_THROW(execute(v, s), Error);
}

TEST(Emulate, BlockScaleSelectorsAreChecked) {
  const Variant& v = variant_or_throw("mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3");
  std::mt19937_64 rng(test_seed() + 9);
  WarpState s = random_state(v, rng, Inputs::exact);
  EXPECT_NO_THROW(execute(v, s));
  s.byte_id_a = 2;  // 4X reads all four bytes: only byte-id 0 is valid
  EXPECT_THROW(execute(v, s), Error);
  s.byte_id_a = 0;
  s.thread_id_a = 2;  // scale_A comes from a lane pair: thread-id-a is 0 or 1
  EXPECT_THROW(execute(v, s), Error);
}
