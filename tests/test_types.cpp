// SPDX-License-Identifier: BSD-3-Clause
// Tests for spmma/types.hpp: exact encode / decode of every element type.
#include "spmma/types.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "spmma/error.hpp"

namespace {

using spmma::decode;
using spmma::ElemType;
using spmma::encode;
using spmma::Overflow;
using spmma::type_info;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

double p2(int e) { return std::ldexp(1.0, e); }

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint64_t bits_of(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

// Status code of the Error thrown by f, or Status::ok when nothing is thrown.
template <class F>
spmma::Status status_of(F&& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const spmma::Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return spmma::Status::ok;
}

std::vector<ElemType> small_types() {
  std::vector<ElemType> out;
  for (ElemType t : spmma::kAllElemTypes) {
    if (type_info(t).bits <= 8) out.push_back(t);
  }
  return out;
}

// ------------------------------------------------------------------------ table and names
TEST(Types, TableRowsMatchTheirEnumerator) {
  for (ElemType t : spmma::kAllElemTypes) {
    EXPECT_EQ(type_info(t).type, t) << type_info(t).name;
    EXPECT_EQ(spmma::type_name(t), type_info(t).name);
  }
}

TEST(Types, TableFacts) {
  struct Expect {
    ElemType t;
    int bits;
    double max_finite, min_value;
    bool has_inf, has_nan, is_signed;
  };
  const Expect rows[] = {
      {ElemType::f16, 16, 65504.0, -65504.0, true, true, true},
      {ElemType::bf16, 16, 3.3895313892515355e38, -3.3895313892515355e38, true, true, true},
      {ElemType::tf32, 32, (2 - p2(-10)) * p2(127), -(2 - p2(-10)) * p2(127), true, true, true},
      {ElemType::f32, 32, FLT_MAX, -FLT_MAX, true, true, true},
      {ElemType::f64, 64, DBL_MAX, -DBL_MAX, true, true, true},
      {ElemType::e4m3, 8, 448, -448, false, true, true},
      {ElemType::e5m2, 8, 57344, -57344, true, true, true},
      {ElemType::e3m2, 6, 28, -28, false, false, true},
      {ElemType::e2m3, 6, 7.5, -7.5, false, false, true},
      {ElemType::e2m1, 4, 6, -6, false, false, true},
      {ElemType::ue8m0, 8, p2(127), 0, false, true, false},
      {ElemType::ue4m3, 8, 448, 0, false, true, false},
      {ElemType::s8, 8, 127, -128, false, false, true},
      {ElemType::u8, 8, 255, 0, false, false, false},
      {ElemType::s4, 4, 7, -8, false, false, true},
      {ElemType::u4, 4, 15, 0, false, false, false},
      {ElemType::s32, 32, 2147483647.0, -2147483648.0, false, false, true},
      {ElemType::b1, 1, 1, 0, false, false, false},
  };
  ASSERT_EQ(std::size(rows), std::size(spmma::kAllElemTypes));
  for (const auto& r : rows) {
    const auto& ti = type_info(r.t);
    SCOPED_TRACE(std::string(ti.name));
    EXPECT_EQ(ti.bits, r.bits);
    EXPECT_EQ(ti.max_finite, r.max_finite);
    EXPECT_EQ(ti.min_value, r.min_value);
    EXPECT_EQ(ti.has_inf, r.has_inf);
    EXPECT_EQ(ti.has_nan, r.has_nan);
    EXPECT_EQ(ti.is_signed, r.is_signed);
    // the table's max_finite is a value of the type, and nothing above it encodes as finite-above
    if (ti.is_float) {
      EXPECT_EQ(decode(r.t, encode(r.t, r.max_finite)), r.max_finite);
    }
  }
}

TEST(Types, ParseNames) {
  for (ElemType t : spmma::kAllElemTypes) {
    const std::string name(type_info(t).name);
    EXPECT_EQ(spmma::parse_elem_type(name), t) << name;
    EXPECT_EQ(spmma::parse_elem_type("." + name), t) << name;
    EXPECT_EQ(spmma::parse_elem_type_or_throw("." + name), t) << name;
  }
  EXPECT_EQ(spmma::parse_elem_type("bf16"), ElemType::bf16);
  EXPECT_EQ(spmma::parse_elem_type(".bf16"), ElemType::bf16);
  EXPECT_FALSE(spmma::parse_elem_type("BF16"));
  EXPECT_FALSE(spmma::parse_elem_type(""));
  EXPECT_FALSE(spmma::parse_elem_type("."));
  EXPECT_FALSE(spmma::parse_elem_type("..bf16"));
  EXPECT_FALSE(spmma::parse_elem_type("fp16"));
  EXPECT_FALSE(spmma::parse_elem_type("bf16 "));
  std::string msg;
  EXPECT_EQ(status_of([] { spmma::parse_elem_type_or_throw("fp8"); }, &msg), spmma::Status::invalid_argument);
  EXPECT_NE(msg.find("fp8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("e4m3"), std::string::npos) << msg;  // lists the valid names
}

// ------------------------------------------------------------------------ exhaustive round trips
// Every pattern of every type of 8 bits or fewer: decode then encode gives the pattern back,
// NaN patterns decode to NaN and encode to the type's (NaN) canonical pattern.
TEST(TypesRoundTrip, EverySmallPattern) {
  for (ElemType t : small_types()) {
    const auto& ti = type_info(t);
    SCOPED_TRACE(std::string(ti.name));
    // ue4m3 is 7 significant bits in a byte whose top bit decode() ignores (tested below).
    const uint64_t n = t == ElemType::ue4m3 ? 128 : uint64_t{1} << ti.bits;
    int nans = 0;
    for (uint64_t p = 0; p < n; ++p) {
      const double v = decode(t, p);
      if (std::isnan(v)) {
        ++nans;
        EXPECT_TRUE(spmma::is_nan(t, p)) << p;
        const uint64_t q = encode(t, v);
        EXPECT_TRUE(spmma::is_nan(t, q)) << p;
        EXPECT_TRUE(std::isnan(decode(t, q))) << p;
      } else {
        EXPECT_FALSE(spmma::is_nan(t, p)) << p;
        if (std::isinf(v)) {
          // e5m2's ±Inf: the default (satfinite) clamps Inf to ±max, so Inf comes back only
          // under to_inf_or_nan
          EXPECT_EQ(encode(t, v, Overflow::to_inf_or_nan), p) << p;
          EXPECT_EQ(decode(t, encode(t, v)), std::copysign(ti.max_finite, v)) << p;
          continue;
        }
        EXPECT_EQ(encode(t, v), p) << "pattern " << p << " value " << v;
        // also under the explicit overflow rules: an exact finite value never overflows
        EXPECT_EQ(encode(t, v, Overflow::saturate), p) << p;
        EXPECT_EQ(encode(t, v, Overflow::to_inf_or_nan), p) << p;
      }
    }
    const int expected_nans = t == ElemType::e4m3   ? 2
                              : t == ElemType::e5m2 ? 6
                              : t == ElemType::ue8m0 || t == ElemType::ue4m3 ? 1
                                                                             : 0;
    EXPECT_EQ(nans, expected_nans);
  }
}

TEST(TypesRoundTrip, F16AndBf16EveryPattern) {
  for (ElemType t : {ElemType::f16, ElemType::bf16}) {
    SCOPED_TRACE(std::string(type_info(t).name));
    int nans = 0;
    for (uint64_t p = 0; p < 65536; ++p) {
      const double v = decode(t, p);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      ASSERT_EQ(encode(t, v), p) << p;
    }
    EXPECT_EQ(nans, t == ElemType::f16 ? 2 * 1023 : 2 * 127);
  }
}

// Decoded magnitudes grow strictly with the pattern (the encoding is monotonic), positive
// half only; the negative half mirrors it.
TEST(TypesRoundTrip, PatternsAreMonotonic) {
  for (ElemType t : {ElemType::f16, ElemType::bf16, ElemType::e4m3, ElemType::e5m2, ElemType::e3m2, ElemType::e2m3,
                     ElemType::e2m1, ElemType::ue8m0, ElemType::ue4m3}) {
    const auto& ti = type_info(t);
    SCOPED_TRACE(std::string(ti.name));
    const int mag_bits = ti.exp_bits + ti.man_bits;
    double prev = -1;
    for (uint64_t p = 0; p < (uint64_t{1} << mag_bits); ++p) {
      const double v = decode(t, p);
      if (std::isnan(v)) continue;
      EXPECT_GT(v, prev) << p;
      prev = v;
      if (ti.is_signed) {
        const double n = decode(t, p | (uint64_t{1} << mag_bits));
        EXPECT_EQ(n, -v) << p;
        EXPECT_TRUE(std::signbit(n)) << p;
      }
    }
    // the largest finite value is the table's
    if (!ti.has_inf) {
      EXPECT_EQ(prev, ti.max_finite);
    }
  }
}

// ------------------------------------------------------------------------ spot values
TEST(Types, SpotValues) {
  struct Spot {
    ElemType t;
    uint64_t p;
    double v;
  };
  const Spot spots[] = {
      // e4m3: bias 7, max S.1111.110 = 448, min normal 2^-6, min subnormal 2^-9
      {ElemType::e4m3, 0x7E, 448},
      {ElemType::e4m3, 0xFE, -448},
      {ElemType::e4m3, 0x38, 1.0},
      {ElemType::e4m3, 0x08, p2(-6)},
      {ElemType::e4m3, 0x07, 7 * p2(-9)},
      {ElemType::e4m3, 0x01, p2(-9)},
      {ElemType::e4m3, 0x81, -p2(-9)},
      {ElemType::e4m3, 0x77, 240},
      {ElemType::e4m3, 0x7D, 416},
      // e5m2: bias 15, max 57344, min subnormal 2^-16
      {ElemType::e5m2, 0x7B, 57344},
      {ElemType::e5m2, 0x7C, kInf},
      {ElemType::e5m2, 0xFC, -kInf},
      {ElemType::e5m2, 0x3C, 1.0},
      {ElemType::e5m2, 0x04, p2(-14)},
      {ElemType::e5m2, 0x01, p2(-16)},
      {ElemType::e5m2, 0x03, 3 * p2(-16)},
      // e3m2: bias 3, max 28, min subnormal 2^-4
      {ElemType::e3m2, 0x1F, 28},
      {ElemType::e3m2, 0x3F, -28},
      {ElemType::e3m2, 0x0C, 1.0},
      {ElemType::e3m2, 0x04, 0.25},
      {ElemType::e3m2, 0x01, 0.0625},
      {ElemType::e3m2, 0x1C, 16},
      // e2m3: bias 1, max 7.5, min subnormal 0.125
      {ElemType::e2m3, 0x1F, 7.5},
      {ElemType::e2m3, 0x3F, -7.5},
      {ElemType::e2m3, 0x08, 1.0},
      {ElemType::e2m3, 0x01, 0.125},
      {ElemType::e2m3, 0x07, 0.875},
      {ElemType::e2m3, 0x18, 4.0},
      // e2m1: {0, 0.5, 1, 1.5, 2, 3, 4, 6}
      {ElemType::e2m1, 0x0, 0},
      {ElemType::e2m1, 0x1, 0.5},
      {ElemType::e2m1, 0x2, 1},
      {ElemType::e2m1, 0x3, 1.5},
      {ElemType::e2m1, 0x4, 2},
      {ElemType::e2m1, 0x5, 3},
      {ElemType::e2m1, 0x6, 4},
      {ElemType::e2m1, 0x7, 6},
      {ElemType::e2m1, 0x9, -0.5},
      {ElemType::e2m1, 0xF, -6},
      // ue8m0: 2^(e-127)
      {ElemType::ue8m0, 0x7F, 1.0},
      {ElemType::ue8m0, 0x80, 2.0},
      {ElemType::ue8m0, 0x7E, 0.5},
      {ElemType::ue8m0, 0x00, p2(-127)},
      {ElemType::ue8m0, 0xFE, p2(127)},
      // ue4m3: e4m3 without the sign
      {ElemType::ue4m3, 0x7E, 448},
      {ElemType::ue4m3, 0x38, 1.0},
      {ElemType::ue4m3, 0x01, p2(-9)},
      {ElemType::ue4m3, 0x00, 0},
      // f16 / bf16
      {ElemType::f16, 0x7BFF, 65504},
      {ElemType::f16, 0x3C00, 1.0},
      {ElemType::f16, 0xC000, -2.0},
      {ElemType::f16, 0x0400, p2(-14)},
      {ElemType::f16, 0x0001, p2(-24)},
      {ElemType::f16, 0x03FF, 1023 * p2(-24)},
      {ElemType::f16, 0x7C00, kInf},
      {ElemType::f16, 0x3555, 0.333251953125},
      {ElemType::bf16, 0x3F80, 1.0},
      {ElemType::bf16, 0x7F7F, 255 * p2(120)},
      {ElemType::bf16, 0x0001, p2(-133)},
      {ElemType::bf16, 0x0080, p2(-126)},
      {ElemType::bf16, 0xFF80, -kInf},
      {ElemType::bf16, 0x4049, 3.140625},
      // tf32 / f32 / f64
      {ElemType::tf32, 0x3F800000, 1.0},
      {ElemType::tf32, 0x3F802000, 1 + p2(-10)},
      {ElemType::tf32, 0x00002000, p2(-136)},
      {ElemType::tf32, 0x7F7FE000, (2 - p2(-10)) * p2(127)},
      {ElemType::f32, 0x3F800000, 1.0},
      {ElemType::f32, 0x00000001, p2(-149)},
      {ElemType::f32, 0x7F7FFFFF, FLT_MAX},
      {ElemType::f32, 0xBDCCCCCD, static_cast<double>(-0.1f)},
      {ElemType::f64, 0x3FF0000000000000ull, 1.0},
      {ElemType::f64, 0x0000000000000001ull, std::numeric_limits<double>::denorm_min()},
      {ElemType::f64, 0x3FB999999999999Aull, 0.1},
      // integers: raw two's complement patterns, no sign extension
      {ElemType::s8, 0xFF, -1},
      {ElemType::s8, 0x80, -128},
      {ElemType::s8, 0x7F, 127},
      {ElemType::s8, 0x01, 1},
      {ElemType::u8, 0xFF, 255},
      {ElemType::s4, 0xF, -1},
      {ElemType::s4, 0x8, -8},
      {ElemType::s4, 0x7, 7},
      {ElemType::u4, 0xF, 15},
      {ElemType::s32, 0xFFFFFFFF, -1},
      {ElemType::s32, 0x80000000, -2147483648.0},
      {ElemType::s32, 0x7FFFFFFF, 2147483647.0},
      {ElemType::b1, 0, 0},
      {ElemType::b1, 1, 1},
  };
  for (const auto& s : spots) {
    SCOPED_TRACE(std::string(type_info(s.t).name) + " pattern " + std::to_string(s.p));
    EXPECT_EQ(decode(s.t, s.p), s.v);
    EXPECT_EQ(encode(s.t, s.v, std::isinf(s.v) ? Overflow::to_inf_or_nan : Overflow::type_default), s.p);
  }
}

TEST(Types, DecodeIgnoresBitsAboveTheType) {
  EXPECT_EQ(decode(ElemType::e2m1, 0xF3), 1.5);
  EXPECT_EQ(decode(ElemType::e3m2, 0xC1), 0.0625);
  EXPECT_EQ(decode(ElemType::s4, 0x1F), -1);
  EXPECT_EQ(decode(ElemType::f16, 0xABCD3C00), 1.0);
  EXPECT_EQ(decode(ElemType::s32, 0x1FFFFFFFFull), -1);
  // ue4m3's byte has a top bit that is not part of the value
  for (uint64_t p = 0; p < 128; ++p) {
    const double a = decode(ElemType::ue4m3, p), b = decode(ElemType::ue4m3, p | 0x80);
    if (std::isnan(a)) {
      EXPECT_TRUE(std::isnan(b));
    } else {
      EXPECT_EQ(a, b) << p;
    }
  }
}

// ------------------------------------------------------------------------ rounding
TEST(TypesRounding, TiesToEven) {
  // f16: ulp(1) = 2^-10
  EXPECT_EQ(encode(ElemType::f16, 1 + p2(-11)), 0x3C00u);               // tie -> even (1.0)
  EXPECT_EQ(encode(ElemType::f16, 1 + 3 * p2(-11)), 0x3C02u);           // tie -> even (1 + 2^-9)
  EXPECT_EQ(encode(ElemType::f16, 1 + p2(-11) + p2(-40)), 0x3C01u);     // just above the tie (sticky bit)
  EXPECT_EQ(encode(ElemType::f16, 1 + p2(-11) - p2(-40)), 0x3C00u);
  EXPECT_EQ(encode(ElemType::f16, -(1 + 3 * p2(-11))), 0xBC02u);
  EXPECT_EQ(encode(ElemType::f16, 2048 + 1), 0x6800u);                  // ulp 2 at 2048: tie -> 2048
  EXPECT_EQ(encode(ElemType::f16, 2048 + 3), 0x6802u);                  // -> 2052
  // f16 subnormals: quantum 2^-24
  EXPECT_EQ(encode(ElemType::f16, p2(-25)), 0x0000u);                   // tie between 0 and 2^-24
  EXPECT_EQ(encode(ElemType::f16, -p2(-25)), 0x8000u);
  EXPECT_EQ(encode(ElemType::f16, p2(-25) + p2(-60)), 0x0001u);
  EXPECT_EQ(encode(ElemType::f16, 3 * p2(-25)), 0x0002u);
  EXPECT_EQ(encode(ElemType::f16, p2(-14) - p2(-25)), 0x0400u);         // tie: 0x3FF (odd) -> 0x400 normal
  EXPECT_EQ(encode(ElemType::f16, 1e-300), 0x0000u);
  // bf16: ulp(1) = 2^-7
  EXPECT_EQ(encode(ElemType::bf16, 1 + p2(-8)), 0x3F80u);
  EXPECT_EQ(encode(ElemType::bf16, 1 + 3 * p2(-8)), 0x3F82u);
  EXPECT_EQ(encode(ElemType::bf16, 1 + p2(-8) + p2(-50)), 0x3F81u);
  // e4m3
  EXPECT_EQ(encode(ElemType::e4m3, 1 + p2(-4)), 0x38u);
  EXPECT_EQ(encode(ElemType::e4m3, 1 + 3 * p2(-4)), 0x3Au);
  EXPECT_EQ(encode(ElemType::e4m3, 432), 0x7Eu);   // tie 416 (odd) / 448 (even)
  EXPECT_EQ(encode(ElemType::e4m3, 431.9), 0x7Du);
  EXPECT_EQ(encode(ElemType::e4m3, p2(-10)), 0x00u);       // tie 0 / 2^-9
  EXPECT_EQ(encode(ElemType::e4m3, 3 * p2(-10)), 0x02u);   // tie 2^-9 (odd) / 2^-8 (even)
  // e2m1 (values 0 0.5 1 1.5 2 3 4 6)
  EXPECT_EQ(encode(ElemType::e2m1, 0.25), 0x0u);
  EXPECT_EQ(encode(ElemType::e2m1, 0.2500001), 0x1u);
  EXPECT_EQ(encode(ElemType::e2m1, 0.75), 0x2u);
  EXPECT_EQ(encode(ElemType::e2m1, 1.25), 0x2u);
  EXPECT_EQ(encode(ElemType::e2m1, 1.75), 0x4u);
  EXPECT_EQ(encode(ElemType::e2m1, 2.5), 0x4u);
  EXPECT_EQ(encode(ElemType::e2m1, 3.5), 0x6u);
  EXPECT_EQ(encode(ElemType::e2m1, 5.0), 0x6u);
  EXPECT_EQ(encode(ElemType::e2m1, 5.0001), 0x7u);
  EXPECT_EQ(encode(ElemType::e2m1, -5.0), 0xEu);
  // e3m2 / e2m3
  EXPECT_EQ(encode(ElemType::e3m2, 26), 0x1Eu);   // tie 24 (even) / 28 (odd)
  EXPECT_EQ(encode(ElemType::e3m2, 22), 0x1Eu);   // tie 20 (odd) / 24 (even)
  EXPECT_EQ(encode(ElemType::e2m3, 7.25), 0x1Eu);  // tie 7 (even) / 7.5 (odd)
  EXPECT_EQ(encode(ElemType::e2m3, 0.0625), 0x00u);
  EXPECT_EQ(encode(ElemType::e2m3, 0.1875), 0x02u);
  // integers
  EXPECT_EQ(encode(ElemType::s8, 2.5), 2u);
  EXPECT_EQ(encode(ElemType::s8, 3.5), 4u);
  EXPECT_EQ(encode(ElemType::s8, -2.5), 0xFEu);
  EXPECT_EQ(encode(ElemType::s8, -0.5), 0u);
  EXPECT_EQ(encode(ElemType::s8, 0.5000001), 1u);
  EXPECT_EQ(encode(ElemType::s8, -1), 0xFFu);
  EXPECT_EQ(encode(ElemType::s4, -8.5), 0x8u);
  EXPECT_EQ(encode(ElemType::s4, -1.4), 0xFu);
  EXPECT_EQ(encode(ElemType::u4, 14.5), 14u);
  EXPECT_EQ(encode(ElemType::u8, 254.5), 254u);
  EXPECT_EQ(encode(ElemType::s32, -2.5), 0xFFFFFFFEu);
  EXPECT_EQ(encode(ElemType::s32, 1e6 + 0.5), 1000000u);
  EXPECT_EQ(encode(ElemType::s32, 1e6 + 1.5), 1000002u);
}

TEST(TypesRounding, Ue8m0) {
  // nearest power of two, the midpoint 1.5 * 2^e rounds up to 2^(e+1)
  EXPECT_EQ(encode(ElemType::ue8m0, 1.0), 0x7Fu);
  EXPECT_EQ(encode(ElemType::ue8m0, 1.4999999), 0x7Fu);
  EXPECT_EQ(encode(ElemType::ue8m0, 1.5), 0x80u);
  EXPECT_EQ(encode(ElemType::ue8m0, 3.0), 0x81u);   // 1.5 * 2 -> 4
  EXPECT_EQ(encode(ElemType::ue8m0, 2.9999), 0x80u);
  EXPECT_EQ(encode(ElemType::ue8m0, 0.75), 0x7Fu);  // 1.5 * 2^-1 -> 1
  EXPECT_EQ(encode(ElemType::ue8m0, 0.7), 0x7Eu);
  EXPECT_EQ(encode(ElemType::ue8m0, 1.5 * p2(-128)), 0x00u);
  EXPECT_EQ(encode(ElemType::ue8m0, 1e-60), 0x00u);  // clamps to 2^-127
  EXPECT_EQ(encode(ElemType::ue8m0, p2(-1000)), 0x00u);
  EXPECT_EQ(encode(ElemType::ue8m0, p2(127)), 0xFEu);
  EXPECT_EQ(encode(ElemType::ue8m0, 1.4 * p2(127)), 0xFEu);
  EXPECT_EQ(encode(ElemType::ue8m0, 1.5 * p2(127)), 0xFEu);  // saturates by default
  EXPECT_EQ(encode(ElemType::ue8m0, 1.5 * p2(127), Overflow::to_inf_or_nan), 0xFFu);
  EXPECT_EQ(encode(ElemType::ue8m0, 1.4 * p2(127), Overflow::to_inf_or_nan), 0xFEu);
  EXPECT_EQ(encode(ElemType::ue8m0, kInf), 0xFEu);
  EXPECT_EQ(encode(ElemType::ue8m0, kNaN), 0xFFu);
  EXPECT_TRUE(spmma::is_nan(ElemType::ue8m0, 0xFF));
}

// The overflow threshold is the rounding of the top binade: values that round (RNE, with an
// unbounded exponent) to something above max_finite overflow; the rest round to max.
TEST(TypesRounding, TopBinade) {
  // e4m3: 464 is the tie between 448 (even) and 480 (would-be odd), so it rounds to 448
  EXPECT_EQ(encode(ElemType::e4m3, 464), 0x7Eu);
  EXPECT_EQ(encode(ElemType::e4m3, 464, Overflow::to_inf_or_nan), 0x7Eu);
  EXPECT_EQ(encode(ElemType::e4m3, 464.0001), 0x7Eu);                          // saturates
  EXPECT_EQ(encode(ElemType::e4m3, 464.0001, Overflow::to_inf_or_nan), 0x7Fu);  // NaN
  EXPECT_EQ(encode(ElemType::e4m3, -464.0001, Overflow::to_inf_or_nan), 0xFFu);
  EXPECT_EQ(encode(ElemType::e4m3, 1e10), 0x7Eu);
  EXPECT_EQ(encode(ElemType::e4m3, -1e10), 0xFEu);
  // f16: max 65504 has an odd mantissa; the tie 65520 rounds to the even 65536 = Inf
  EXPECT_EQ(encode(ElemType::f16, 65519.99), 0x7BFFu);
  EXPECT_EQ(encode(ElemType::f16, 65520), 0x7C00u);
  EXPECT_EQ(encode(ElemType::f16, 65520, Overflow::saturate), 0x7BFFu);
  EXPECT_EQ(encode(ElemType::f16, -65520), 0xFC00u);
  // e5m2: max 57344 (odd mantissa), tie 61440 overflows
  EXPECT_EQ(encode(ElemType::e5m2, 61439.99, Overflow::to_inf_or_nan), 0x7Bu);
  EXPECT_EQ(encode(ElemType::e5m2, 61440, Overflow::to_inf_or_nan), 0x7Cu);
  EXPECT_EQ(encode(ElemType::e5m2, 61440), 0x7Bu);
  // bf16: the f32 max rounds up to Inf
  EXPECT_EQ(encode(ElemType::bf16, FLT_MAX), 0x7F80u);
  EXPECT_EQ(encode(ElemType::bf16, FLT_MAX, Overflow::saturate), 0x7F7Fu);
  // e3m2 / e2m3 / e2m1: tie above max rounds to the next binade but saturates
  EXPECT_EQ(encode(ElemType::e3m2, 30), 0x1Fu);
  EXPECT_EQ(encode(ElemType::e2m3, 7.75), 0x1Fu);
  EXPECT_EQ(encode(ElemType::e2m1, 7), 0x7u);
}

TEST(TypesRounding, NegativeZeroKept) {
  struct Z {
    ElemType t;
    uint64_t neg_zero;
  };
  const Z zs[] = {{ElemType::f16, 0x8000},         {ElemType::bf16, 0x8000}, {ElemType::tf32, 0x80000000},
                  {ElemType::f32, 0x80000000},     {ElemType::e4m3, 0x80},   {ElemType::e5m2, 0x80},
                  {ElemType::e3m2, 0x20},          {ElemType::e2m3, 0x20},   {ElemType::e2m1, 0x8},
                  {ElemType::f64, 0x8000000000000000ull}};
  for (const auto& z : zs) {
    SCOPED_TRACE(std::string(type_info(z.t).name));
    EXPECT_EQ(encode(z.t, -0.0), z.neg_zero);
    EXPECT_EQ(encode(z.t, 0.0), 0u);
    const double d = decode(z.t, z.neg_zero);
    EXPECT_EQ(d, 0.0);
    EXPECT_TRUE(std::signbit(d));
    EXPECT_TRUE(spmma::is_zero(z.t, z.neg_zero));
    EXPECT_TRUE(spmma::is_zero(z.t, 0));
    if (z.t != ElemType::f64) {
      EXPECT_EQ(encode(z.t, -1e-300), z.neg_zero);  // underflow keeps the sign
    }
  }
  // no sign to keep: unsigned and integer types give +0
  EXPECT_EQ(encode(ElemType::ue4m3, -0.0), 0u);
  EXPECT_EQ(encode(ElemType::s8, -0.0), 0u);
  EXPECT_EQ(encode(ElemType::s8, -0.3), 0u);
  EXPECT_EQ(encode(ElemType::u4, -0.0), 0u);
  EXPECT_EQ(encode(ElemType::s32, -0.0), 0u);
  EXPECT_EQ(encode(ElemType::b1, -0.0), 0u);
}

// Brute-force reference for every float type of 8 bits or fewer: the nearest finite value,
// ties to the even significand, compared with encode() on random values and on every
// midpoint between adjacent values.
uint64_t brute_nearest(ElemType t, double x) {
  const auto& ti = type_info(t);
  const uint64_t n = t == ElemType::ue4m3 ? 128 : uint64_t{1} << ti.bits;
  uint64_t best = 0;
  double best_err = kInf;
  for (uint64_t p = 0; p < n; ++p) {
    const double v = decode(t, p);
    if (std::isnan(v) || std::isinf(v)) continue;
    if (v == 0 && std::signbit(v) != std::signbit(x)) continue;  // the zero of x's sign
    const double err = std::fabs(v - x);
    bool take = err < best_err;
    if (err == best_err) {
      // tie: even significand. With mantissa bits the pattern's low bit is the significand's;
      // ue8m0 (no mantissa) has significands 1 and 2, so the larger value wins.
      take = ti.man_bits > 0 ? (p & 1) == 0 : std::fabs(v) > std::fabs(decode(t, best));
    }
    if (take) {
      best = p;
      best_err = err;
    }
  }
  return best;
}

TEST(TypesRounding, SmallFloatsMatchBruteForceNearest) {
  std::mt19937_64 rng(0x5eed1234);
  for (ElemType t : {ElemType::e4m3, ElemType::e5m2, ElemType::e3m2, ElemType::e2m3, ElemType::e2m1, ElemType::ue4m3,
                     ElemType::ue8m0}) {
    const auto& ti = type_info(t);
    SCOPED_TRACE(std::string(ti.name));
    // the sorted positive finite values
    std::vector<double> vals;
    const uint64_t n = t == ElemType::ue4m3 ? 128 : uint64_t{1} << ti.bits;
    for (uint64_t p = 0; p < n; ++p) {
      const double v = decode(t, p);
      if (!std::isnan(v) && !std::isinf(v) && !std::signbit(v)) vals.push_back(v);
    }
    std::sort(vals.begin(), vals.end());
    std::vector<double> xs;
    for (size_t i = 0; i + 1 < vals.size(); ++i) {
      const double a = vals[i], b = vals[i + 1];
      xs.push_back((a + b) / 2);                                   // exact midpoint
      xs.push_back(std::nextafter((a + b) / 2, -kInf));
      xs.push_back(std::nextafter((a + b) / 2, kInf));
      std::uniform_real_distribution<double> u(a, b);
      for (int k = 0; k < 4; ++k) xs.push_back(u(rng));
    }
    for (double x : xs) {
      ASSERT_EQ(encode(t, x), brute_nearest(t, x)) << "x = " << x;
      if (ti.is_signed) {
        ASSERT_EQ(encode(t, -x), brute_nearest(t, -x)) << "x = " << -x;
      }
    }
  }
}

// ------------------------------------------------------------------------ overflow rules
TEST(TypesOverflow, RulesPerType) {
  struct Rule {
    ElemType t;
    uint64_t dflt, sat, inf_nan;  // result for a huge positive value under each rule
  };
  const Rule rules[] = {
      {ElemType::f16, 0x7C00, 0x7BFF, 0x7C00},
      {ElemType::bf16, 0x7F80, 0x7F7F, 0x7F80},
      {ElemType::tf32, 0x7F800000, 0x7F7FE000, 0x7F800000},
      {ElemType::f32, 0x7F800000, 0x7F7FFFFF, 0x7F800000},
      {ElemType::e4m3, 0x7E, 0x7E, 0x7F},
      {ElemType::e5m2, 0x7B, 0x7B, 0x7C},
      {ElemType::e3m2, 0x1F, 0x1F, 0x1F},
      {ElemType::e2m3, 0x1F, 0x1F, 0x1F},
      {ElemType::e2m1, 0x7, 0x7, 0x7},
      {ElemType::ue8m0, 0xFE, 0xFE, 0xFF},
      {ElemType::ue4m3, 0x7E, 0x7E, 0x7F},
      {ElemType::s8, 0x7F, 0x7F, 0x7F},
      {ElemType::u8, 0xFF, 0xFF, 0xFF},
      {ElemType::s4, 0x7, 0x7, 0x7},
      {ElemType::u4, 0xF, 0xF, 0xF},
      {ElemType::s32, 0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF},
  };
  for (const auto& r : rules) {
    const auto& ti = type_info(r.t);
    SCOPED_TRACE(std::string(ti.name));
    for (double big : {1e300, kInf}) {
      EXPECT_EQ(encode(r.t, big), r.dflt) << big;
      EXPECT_EQ(encode(r.t, big, Overflow::type_default), r.dflt) << big;
      EXPECT_EQ(encode(r.t, big, Overflow::saturate), r.sat) << big;
      EXPECT_EQ(encode(r.t, big, Overflow::to_inf_or_nan), r.inf_nan) << big;
      if (ti.is_float && ti.is_signed) {
        const uint64_t sign = uint64_t{1} << (ti.bits - 1);
        EXPECT_EQ(encode(r.t, -big), r.dflt | sign) << -big;
        EXPECT_EQ(encode(r.t, -big, Overflow::saturate), r.sat | sign) << -big;
        EXPECT_EQ(encode(r.t, -big, Overflow::to_inf_or_nan), r.inf_nan | sign) << -big;
      }
    }
  }
  // integers saturate at the bottom too
  EXPECT_EQ(encode(ElemType::s8, -1000), 0x80u);
  EXPECT_EQ(encode(ElemType::s8, -kInf), 0x80u);
  EXPECT_EQ(encode(ElemType::s8, 127.5), 0x7Fu);  // rounds to 128, saturates
  EXPECT_EQ(encode(ElemType::s8, -128.5), 0x80u);
  EXPECT_EQ(encode(ElemType::u8, -3), 0u);
  EXPECT_EQ(encode(ElemType::u8, 255.4), 0xFFu);
  EXPECT_EQ(encode(ElemType::s4, 7.6), 0x7u);
  EXPECT_EQ(encode(ElemType::s4, -9), 0x8u);
  EXPECT_EQ(encode(ElemType::u4, 16), 0xFu);
  EXPECT_EQ(encode(ElemType::s32, 3e9), 0x7FFFFFFFu);
  EXPECT_EQ(encode(ElemType::s32, -3e9), 0x80000000u);
  EXPECT_EQ(encode(ElemType::s32, -kInf), 0x80000000u);
  // f64: only Inf can "overflow"
  EXPECT_EQ(encode(ElemType::f64, kInf), 0x7FF0000000000000ull);
  EXPECT_EQ(encode(ElemType::f64, -kInf, Overflow::saturate), 0xFFEFFFFFFFFFFFFFull);
  EXPECT_EQ(encode(ElemType::f64, kInf, Overflow::to_inf_or_nan), 0x7FF0000000000000ull);
  EXPECT_EQ(encode(ElemType::f64, DBL_MAX), 0x7FEFFFFFFFFFFFFFull);
}

TEST(Types, CanonicalNaN) {
  struct N {
    ElemType t;
    uint64_t nan;
  };
  const N ns[] = {{ElemType::f16, 0x7E00},     {ElemType::bf16, 0x7FC0},
                  {ElemType::tf32, 0x7FC00000}, {ElemType::f32, 0x7FC00000},
                  {ElemType::f64, 0x7FF8000000000000ull},
                  {ElemType::e4m3, 0x7F},      {ElemType::e5m2, 0x7F},
                  {ElemType::ue8m0, 0xFF},     {ElemType::ue4m3, 0x7F}};
  for (const auto& n : ns) {
    SCOPED_TRACE(std::string(type_info(n.t).name));
    for (Overflow ov : {Overflow::type_default, Overflow::saturate, Overflow::to_inf_or_nan}) {
      EXPECT_EQ(encode(n.t, kNaN, ov), n.nan);
      EXPECT_EQ(encode(n.t, -kNaN, ov), n.nan);
    }
    EXPECT_TRUE(spmma::is_nan(n.t, n.nan));
    EXPECT_FALSE(spmma::is_zero(n.t, n.nan));
    EXPECT_TRUE(std::isnan(decode(n.t, n.nan)));
  }
}

TEST(Types, IsNanIsZero) {
  EXPECT_TRUE(spmma::is_nan(ElemType::e4m3, 0x7F));
  EXPECT_TRUE(spmma::is_nan(ElemType::e4m3, 0xFF));
  EXPECT_FALSE(spmma::is_nan(ElemType::e4m3, 0x7E));
  EXPECT_FALSE(spmma::is_nan(ElemType::e4m3, 0x78));  // e4m3 has no Inf: 256
  EXPECT_EQ(decode(ElemType::e4m3, 0x78), 256.0);
  EXPECT_FALSE(spmma::is_nan(ElemType::e5m2, 0x7C));  // Inf
  EXPECT_TRUE(spmma::is_nan(ElemType::e5m2, 0x7D));
  EXPECT_TRUE(spmma::is_nan(ElemType::e5m2, 0xFE));
  EXPECT_TRUE(spmma::is_nan(ElemType::f16, 0x7C01));
  EXPECT_FALSE(spmma::is_nan(ElemType::f16, 0x7C00));
  EXPECT_TRUE(spmma::is_nan(ElemType::bf16, 0xFFC1));
  EXPECT_TRUE(spmma::is_nan(ElemType::f32, 0x7F800001));
  EXPECT_FALSE(spmma::is_nan(ElemType::tf32, 0x7F800001));  // the low 13 bits are dropped: Inf
  EXPECT_EQ(decode(ElemType::tf32, 0x7F800001), kInf);
  for (uint64_t p = 0; p < 64; ++p) {
    EXPECT_FALSE(spmma::is_nan(ElemType::e3m2, p));
    EXPECT_FALSE(spmma::is_nan(ElemType::e2m3, p));
    EXPECT_EQ(spmma::is_zero(ElemType::e3m2, p), p == 0 || p == 0x20) << p;
    EXPECT_EQ(spmma::is_zero(ElemType::e2m3, p), p == 0 || p == 0x20) << p;
  }
  for (uint64_t p = 0; p < 256; ++p) {
    EXPECT_EQ(spmma::is_zero(ElemType::e4m3, p), p == 0 || p == 0x80) << p;
    EXPECT_EQ(spmma::is_zero(ElemType::s8, p), p == 0) << p;
    EXPECT_FALSE(spmma::is_zero(ElemType::ue8m0, p)) << p;  // ue8m0 has no zero
    EXPECT_FALSE(spmma::is_nan(ElemType::u8, p)) << p;
  }
  EXPECT_TRUE(spmma::is_zero(ElemType::tf32, 0x00001FFF));   // dropped bits only
  EXPECT_FALSE(spmma::is_zero(ElemType::f32, 0x00000001));   // f32 keeps them
  EXPECT_TRUE(spmma::is_zero(ElemType::b1, 0));
  EXPECT_FALSE(spmma::is_zero(ElemType::b1, 1));
}

// ------------------------------------------------------------------------ independent references
// f16 from a float by integer manipulation of its bit pattern (RNE), NaN -> 0x7E00.
uint16_t ref_f16_from_float(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return 0x7E00;
  const uint32_t E = ax >> 23;
  const uint32_t frac = ax & 0x7FFFFFu;
  if (E >= 113) {  // |f| >= 2^-14: normal range of f16 (or overflow)
    uint32_t r = ((E - 112) << 10) | (frac >> 13);
    const uint32_t rem = frac & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;
    if (r >= 0x7C00u) r = 0x7C00u;  // overflow (and Inf) -> Inf
    return static_cast<uint16_t>(sign | r);
  }
  if (E == 0) return static_cast<uint16_t>(sign);  // f32 subnormals are far below 2^-25
  // f16 subnormal: value = M * 2^(E-150), unit 2^-24, so q = M >> (126 - E)
  const uint32_t M = frac | 0x800000u;
  const uint32_t shift = 126 - E;  // >= 14
  if (shift > 24) return static_cast<uint16_t>(sign);  // < 2^-25 (M < 2^24)
  uint32_t q = M >> shift;
  const uint32_t rem = M & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  return static_cast<uint16_t>(sign | q);
}

float ref_float_from_f16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t ex = (h >> 10) & 0x1F, man = h & 0x3FF;
  if (ex == 0x1F) return float_of(sign | 0x7F800000u | (man << 13));
  if (ex == 0) {
    const float v = static_cast<float>(man) * std::ldexp(1.0f, -24);
    return sign ? -v : v;
  }
  return float_of(sign | ((ex + 112) << 23) | (man << 13));
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 2 == 0) {
      // concentrate on the f16 / e-range: exponent field 90..145 (2^-37 .. 2^18)
      const uint32_t e = 90 + static_cast<uint32_t>(rng() % 56);
      u = (u & 0x807FFFFFu) | (e << 23);
    }
    if (i % 7 == 0) u &= 0xFFFFF000u;  // many ties and short mantissas
    out.push_back(float_of(u));
  }
  return out;
}

TEST(TypesReference, F16MatchesBitManipulation) {
  for (float f : random_floats(1 << 20, 42)) {
    const uint16_t ref = ref_f16_from_float(f);
    ASSERT_EQ(encode(ElemType::f16, f), ref) << "f = " << f << " bits " << std::hex << bits_of(f);
  }
  for (uint32_t h = 0; h < 65536; ++h) {
    const float ref = ref_float_from_f16(static_cast<uint16_t>(h));
    const double got = decode(ElemType::f16, h);
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(got, static_cast<double>(ref)) << h;
      ASSERT_EQ(std::signbit(got), std::signbit(ref)) << h;
    }
  }
}

#if defined(__FLT16_MAX__)
// Where the compiler has _Float16, its double -> half conversion is a second reference that
// also covers doubles with more precision than a float (double rounding would show here).
TEST(TypesReference, F16MatchesCompilerFloat16) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const double x = std::ldexp(std::uniform_real_distribution<double>(-2, 2)(rng), static_cast<int>(rng() % 50) - 30);
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t ref;
    std::memcpy(&ref, &h, sizeof ref);
    ASSERT_EQ(encode(ElemType::f16, x), ref) << x;
  }
}
#endif

TEST(TypesReference, Bf16IsRneOfTheTop16BitsOfF32) {
  auto ref = [](float f) -> uint16_t {
    const uint32_t u = bits_of(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
    return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
  };
  std::mt19937_64 rng(99);
  for (int i = 0; i < (1 << 20); ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 5 == 0) u = (u & 0xFFFF0000u) | 0x8000u;  // exact tie
    const float f = float_of(u);
    ASSERT_EQ(encode(ElemType::bf16, f), ref(f)) << std::hex << u;
    if (!std::isnan(f)) {
      // decode: the top 16 bits as an f32
      const uint16_t b = ref(f);
      ASSERT_EQ(decode(ElemType::bf16, b), static_cast<double>(float_of(static_cast<uint32_t>(b) << 16))) << b;
    }
  }
  // every f32 tie pattern in one binade
  for (uint32_t m = 0; m < 0x80; ++m) {
    const uint32_t u = 0x3F800000u | (m << 16) | 0x8000u;
    EXPECT_EQ(encode(ElemType::bf16, float_of(u)), ref(float_of(u))) << std::hex << u;
  }
}

TEST(TypesReference, F32IsTheFloatCast) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100000; ++i) {
    const double x = std::ldexp(std::uniform_real_distribution<double>(-2, 2)(rng), static_cast<int>(rng() % 300) - 150);
    ASSERT_EQ(encode(ElemType::f32, x), bits_of(static_cast<float>(x))) << x;
  }
  EXPECT_EQ(encode(ElemType::f32, 1 + p2(-24)), 0x3F800000u);
  EXPECT_EQ(encode(ElemType::f32, 1 + 3 * p2(-24)), 0x3F800002u);
  EXPECT_EQ(encode(ElemType::f32, 1e39), 0x7F800000u);
  EXPECT_EQ(encode(ElemType::f32, -1e39, Overflow::saturate), 0xFF7FFFFFu);
  EXPECT_EQ(encode(ElemType::f64, 0.1), bits_of(0.1));
}

// ------------------------------------------------------------------------ tf32
TEST(TypesTf32, EncodeDecode) {
  // decode drops the low 13 mantissa bits
  EXPECT_EQ(decode(ElemType::tf32, 0x3F801FFF), 1.0);
  EXPECT_EQ(decode(ElemType::tf32, 0xBF803FFF), -(1 + p2(-10)));
  EXPECT_EQ(decode(ElemType::tf32, 0x7F801000), kInf);
  EXPECT_TRUE(std::isnan(decode(ElemType::tf32, 0x7FC00000)));
  // encode rounds to 10 mantissa bits, ties to even
  EXPECT_EQ(encode(ElemType::tf32, 1 + p2(-11)), 0x3F800000u);
  EXPECT_EQ(encode(ElemType::tf32, 1 + 3 * p2(-11)), 0x3F804000u);
  EXPECT_EQ(encode(ElemType::tf32, 1 + p2(-11) + p2(-30)), 0x3F802000u);
  EXPECT_EQ(encode(ElemType::tf32, -(1 + p2(-11) + p2(-30))), 0xBF802000u);
  EXPECT_EQ(encode(ElemType::tf32, FLT_MAX), 0x7F800000u);  // rounds up past the top: Inf
  EXPECT_EQ(encode(ElemType::tf32, FLT_MAX, Overflow::saturate), 0x7F7FE000u);
  EXPECT_EQ(encode(ElemType::tf32, kInf), 0x7F800000u);
  EXPECT_EQ(encode(ElemType::tf32, -kInf), 0xFF800000u);
  EXPECT_EQ(encode(ElemType::tf32, kNaN), 0x7FC00000u);
  EXPECT_EQ(encode(ElemType::tf32, p2(-137)), 0x00000000u);  // tie 0 / 2^-136
  EXPECT_EQ(encode(ElemType::tf32, 3 * p2(-137)), 0x00004000u);
  // against f32 bit arithmetic: RNE at bit 13
  std::mt19937_64 rng(11);
  for (int i = 0; i < (1 << 20); ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 4 == 0) u = (u & 0xFFFFE000u) | 0x1000u;  // exact tie
    const float f = float_of(u);
    if (std::isnan(f)) continue;
    uint32_t ref = (u + 0xFFFu + ((u >> 13) & 1)) & 0xFFFFE000u;  // carries into the exponent (Inf) too
    if ((u & 0x7F800000u) == 0x7F800000u) ref = u;                 // Inf stays
    const uint64_t got = encode(ElemType::tf32, f);
    ASSERT_EQ(got, ref) << std::hex << u;
    ASSERT_EQ(got & 0x1FFFu, 0u);
    // round trip of the tf32 value
    ASSERT_EQ(encode(ElemType::tf32, decode(ElemType::tf32, u)), u & 0xFFFFE000u) << std::hex << u;
  }
}

// ------------------------------------------------------------------------ f8f6f4 containers
TEST(TypesContainer, RoundTripAndPlacement) {
  for (uint64_t p = 0; p < 16; ++p) {
    const uint8_t c = spmma::to_f8f6f4_container(ElemType::e2m1, p);
    EXPECT_EQ(c, p << 2) << p;  // bits [5:2]
    EXPECT_EQ(spmma::from_f8f6f4_container(ElemType::e2m1, c), p);
  }
  for (ElemType t : {ElemType::e3m2, ElemType::e2m3}) {
    for (uint64_t p = 0; p < 64; ++p) {
      const uint8_t c = spmma::to_f8f6f4_container(t, p);
      EXPECT_EQ(c, p) << p;  // bits [5:0]
      EXPECT_EQ(spmma::from_f8f6f4_container(t, c), p);
    }
  }
  for (ElemType t : {ElemType::e4m3, ElemType::e5m2}) {
    for (uint64_t p = 0; p < 256; ++p) {
      EXPECT_EQ(spmma::to_f8f6f4_container(t, p), p);
      EXPECT_EQ(spmma::from_f8f6f4_container(t, static_cast<uint8_t>(p)), p);
    }
  }
  // the value survives: container -> element -> decode
  EXPECT_EQ(decode(ElemType::e2m1, spmma::from_f8f6f4_container(ElemType::e2m1, 0x1C)), 6.0);
  EXPECT_EQ(decode(ElemType::e3m2, spmma::from_f8f6f4_container(ElemType::e3m2, 0x3F)), -28.0);
}

TEST(TypesContainer, RejectsPaddingAndWrongTypes) {
  int rejected_e2m1 = 0, rejected_e3m2 = 0, rejected_e2m3 = 0;
  for (int c = 0; c < 256; ++c) {
    const auto byte = static_cast<uint8_t>(c);
    const auto s1 = status_of([&] { spmma::from_f8f6f4_container(ElemType::e2m1, byte); });
    EXPECT_EQ(s1 == spmma::Status::invalid_value, (c & 0xC3) != 0) << c;
    rejected_e2m1 += s1 != spmma::Status::ok;
    const auto s2 = status_of([&] { spmma::from_f8f6f4_container(ElemType::e3m2, byte); });
    EXPECT_EQ(s2 == spmma::Status::invalid_value, (c & 0xC0) != 0) << c;
    rejected_e3m2 += s2 != spmma::Status::ok;
    rejected_e2m3 += status_of([&] { spmma::from_f8f6f4_container(ElemType::e2m3, byte); }) != spmma::Status::ok;
  }
  EXPECT_EQ(rejected_e2m1, 240);
  EXPECT_EQ(rejected_e3m2, 192);
  EXPECT_EQ(rejected_e2m3, 192);
  std::string msg;
  EXPECT_EQ(status_of([] { spmma::from_f8f6f4_container(ElemType::e2m1, 0x83); }, &msg),
            spmma::Status::invalid_value);
  EXPECT_NE(msg.find("e2m1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0x83"), std::string::npos) << msg;
  // a pattern wider than the type
  EXPECT_EQ(status_of([] { spmma::to_f8f6f4_container(ElemType::e2m1, 0x10); }), spmma::Status::invalid_value);
  EXPECT_EQ(status_of([] { spmma::to_f8f6f4_container(ElemType::e3m2, 0x40); }), spmma::Status::invalid_value);
  // not an f8f6f4 type
  for (ElemType t : {ElemType::f16, ElemType::s8, ElemType::ue8m0, ElemType::u4}) {
    EXPECT_EQ(status_of([&] { spmma::to_f8f6f4_container(t, 0); }), spmma::Status::invalid_argument);
    EXPECT_EQ(status_of([&] { spmma::from_f8f6f4_container(t, 0); }), spmma::Status::invalid_argument);
  }
}

// ------------------------------------------------------------------------ errors
TEST(Types, ErrorsNameTypeAndValue) {
  std::string msg;
  EXPECT_EQ(status_of([] { encode(ElemType::e2m1, kNaN); }, &msg), spmma::Status::invalid_value);
  EXPECT_EQ(msg, "encode(e2m1, nan): e2m1 has no NaN");
  for (ElemType t : {ElemType::e3m2, ElemType::e2m3, ElemType::s8, ElemType::u8, ElemType::s4, ElemType::u4,
                     ElemType::s32, ElemType::b1}) {
    for (Overflow ov : {Overflow::type_default, Overflow::saturate, Overflow::to_inf_or_nan}) {
      msg.clear();
      EXPECT_EQ(status_of([&] { encode(t, kNaN, ov); }, &msg), spmma::Status::invalid_value) << type_info(t).name;
      EXPECT_NE(msg.find(std::string(type_info(t).name)), std::string::npos) << msg;
      EXPECT_NE(msg.find("nan"), std::string::npos) << msg;
    }
  }
  EXPECT_EQ(status_of([] { encode(ElemType::ue4m3, -1.0); }, &msg), spmma::Status::invalid_value);
  EXPECT_NE(msg.find("ue4m3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-1"), std::string::npos) << msg;
  EXPECT_EQ(status_of([] { encode(ElemType::ue4m3, -1e-30); }), spmma::Status::invalid_value);
  EXPECT_EQ(status_of([] { encode(ElemType::ue4m3, -kInf); }), spmma::Status::invalid_value);
  EXPECT_EQ(status_of([] { encode(ElemType::ue8m0, 0.0); }, &msg), spmma::Status::invalid_value);
  EXPECT_NE(msg.find("ue8m0"), std::string::npos) << msg;
  EXPECT_EQ(status_of([] { encode(ElemType::ue8m0, -0.0); }), spmma::Status::invalid_value);
  EXPECT_EQ(status_of([] { encode(ElemType::ue8m0, -2.0); }), spmma::Status::invalid_value);
  EXPECT_EQ(status_of([] { encode(ElemType::ue8m0, -kInf); }), spmma::Status::invalid_value);
  // b1: any non-zero is 1
  EXPECT_EQ(encode(ElemType::b1, 0.3), 1u);
  EXPECT_EQ(encode(ElemType::b1, -2), 1u);
  EXPECT_EQ(encode(ElemType::b1, kInf), 1u);
  EXPECT_EQ(encode(ElemType::b1, 0.0), 0u);
  EXPECT_EQ(decode(ElemType::b1, 0x3), 1.0);
  // an out-of-range enumerator is a bug, not a value
  EXPECT_EQ(status_of([] { type_info(static_cast<ElemType>(200)); }), spmma::Status::internal);
}

}  // namespace

// Elements in memory: widths per type, and loads/stores that touch only their own element.
TEST(TypesMemory, WidthsAndElementAccess) {
  using spmma::load_element, spmma::memory_bits, spmma::store_element, spmma::ElemType;
  EXPECT_EQ(memory_bits(ElemType::s4), 4);
  EXPECT_EQ(memory_bits(ElemType::e2m1), 4);
  EXPECT_EQ(memory_bits(ElemType::e3m2), 8);
  EXPECT_EQ(memory_bits(ElemType::b1), 8);
  EXPECT_EQ(memory_bits(ElemType::bf16), 16);
  EXPECT_EQ(memory_bits(ElemType::tf32), 32);
  EXPECT_EQ(memory_bits(ElemType::f64), 64);
  uint8_t buf[16];
  std::memset(buf, 0xA5, sizeof buf);
  store_element(buf, 3, 4, 0x6);  // byte 1, high nibble
  EXPECT_EQ(buf[1], 0x65);
  EXPECT_EQ(load_element(buf, 3, 4), 0x6u);
  EXPECT_EQ(load_element(buf, 2, 4), 0x5u);
  store_element(buf, 1, 16, 0xBEEF);
  EXPECT_EQ(buf[2], 0xEF);
  EXPECT_EQ(buf[3], 0xBE);
  EXPECT_EQ(load_element(buf, 1, 16), 0xBEEFu);
  store_element(buf, 1, 64, 0x0123456789ABCDEFull);
  EXPECT_EQ(load_element(buf, 1, 64), 0x0123456789ABCDEFull);
  EXPECT_EQ(buf[8], 0xEF);
}
