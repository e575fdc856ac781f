// SPDX-License-Identifier: BSD-3-Clause
// spmma — element types: one table of rows, one generic minifloat codec.
//
// Every float type of the PTX MMA instructions except f32/f64 is described by
// (exponent bits, mantissa bits, bias, sign, special-value convention) and handled by the
// same two functions, mini_encode / mini_decode. Rounding is exact: the magnitude is scaled
// by a power of two (exact in binary floating point) so that one unit in the last place of
// the target becomes 1.0, and the resulting double is rounded to an integer, ties to even,
// with floor() and an exact comparison of the remainder (no dependence on the FP environment).
#include "spmma/types.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "spmma/error.hpp"

namespace spmma {
namespace {

// How a row is encoded and decoded.
enum class Codec : uint8_t {
  minifloat,  // generic (exp, man, bias, sign, Special): f16 bf16 e4m3 e5m2 e3m2 e2m3 e2m1 ue8m0 ue4m3
  tf32,       // minifloat e8m10 placed in the top 19 bits of an f32 pattern
  f32,        // native float
  f64,        // native double
  integer,    // two's complement (signed) or plain binary (unsigned), saturating
  bit,        // b1
};

// Which encodings of a minifloat are special.
enum class Special : uint8_t {
  ieee,          // exponent all ones: mantissa 0 = Inf, else NaN (f16, bf16, tf32, e5m2)
  nan_all_ones,  // exponent and mantissa all ones = NaN, no Inf (e4m3, ue4m3, ue8m0)
  none,          // every pattern is finite (e3m2, e2m3, e2m1)
};

struct Row {
  TypeInfo info;
  Codec codec;
  Special special;
  bool subnormals;           // exponent field 0 is subnormal (false: ue8m0, where field 0 is 2^-127)
  Overflow default_overflow; // saturate or to_inf_or_nan (never type_default)
  uint64_t canonical_nan;    // pattern produced for a NaN input (where has_nan)
  int container_shift;       // .kind::f8f6f4 container: bit where the element starts; -1: not f8f6f4
};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kF32Max = 3.4028234663852886e38;           // (2 - 2^-23) * 2^127
constexpr double kTf32Max = 3.4011621342146535e38;          // (2 - 2^-10) * 2^127
constexpr double kBf16Max = 3.3895313892515355e38;          // (2 - 2^-7)  * 2^127
constexpr double kUe8m0Max = 1.7014118346046923e38;         // 2^127
constexpr double kF64Max = std::numeric_limits<double>::max();

using E = ElemType;
using O = Overflow;
using S = Special;
using C = Codec;

// The one table. Order must follow the enumerators of ElemType (checked below).
// clang-format off
constexpr Row kRows[] = {
  // type      name     bits float  signed exp man bias  inf    nan    max_finite  min_value      codec         special         subn   default overflow    canonical NaN          container
  {{E::f16,   "f16",    16, true,  true,  5, 10,  15,  true,  true,  65504.0,    -65504.0},     C::minifloat, S::ieee,         true,  O::to_inf_or_nan, 0x7E00,                -1},
  {{E::bf16,  "bf16",   16, true,  true,  8,  7, 127,  true,  true,  kBf16Max,   -kBf16Max},    C::minifloat, S::ieee,         true,  O::to_inf_or_nan, 0x7FC0,                -1},
  {{E::tf32,  "tf32",   32, true,  true,  8, 10, 127,  true,  true,  kTf32Max,   -kTf32Max},    C::tf32,      S::ieee,         true,  O::to_inf_or_nan, 0x7FC00000,            -1},
  {{E::f32,   "f32",    32, true,  true,  8, 23, 127,  true,  true,  kF32Max,    -kF32Max},     C::f32,       S::ieee,         true,  O::to_inf_or_nan, 0x7FC00000,            -1},
  {{E::f64,   "f64",    64, true,  true, 11, 52, 1023, true,  true,  kF64Max,    -kF64Max},     C::f64,       S::ieee,         true,  O::to_inf_or_nan, 0x7FF8000000000000ull, -1},
  {{E::e4m3,  "e4m3",    8, true,  true,  4,  3,   7,  false, true,  448.0,      -448.0},       C::minifloat, S::nan_all_ones, true,  O::saturate,      0x7F,                   0},
  {{E::e5m2,  "e5m2",    8, true,  true,  5,  2,  15,  true,  true,  57344.0,    -57344.0},     C::minifloat, S::ieee,         true,  O::saturate,      0x7F,                   0},
  {{E::e3m2,  "e3m2",    6, true,  true,  3,  2,   3,  false, false, 28.0,       -28.0},        C::minifloat, S::none,         true,  O::saturate,      0,                      0},
  {{E::e2m3,  "e2m3",    6, true,  true,  2,  3,   1,  false, false, 7.5,        -7.5},         C::minifloat, S::none,         true,  O::saturate,      0,                      0},
  {{E::e2m1,  "e2m1",    4, true,  true,  2,  1,   1,  false, false, 6.0,        -6.0},         C::minifloat, S::none,         true,  O::saturate,      0,                      2},
  {{E::ue8m0, "ue8m0",   8, true,  false, 8,  0, 127,  false, true,  kUe8m0Max,  0.0},          C::minifloat, S::nan_all_ones, false, O::saturate,      0xFF,                  -1},
  {{E::ue4m3, "ue4m3",   8, true,  false, 4,  3,   7,  false, true,  448.0,      0.0},          C::minifloat, S::nan_all_ones, true,  O::saturate,      0x7F,                  -1},
  {{E::s8,    "s8",      8, false, true,  0,  0,   0,  false, false, 127.0,      -128.0},       C::integer,   S::none,         false, O::saturate,      0,                     -1},
  {{E::u8,    "u8",      8, false, false, 0,  0,   0,  false, false, 255.0,      0.0},          C::integer,   S::none,         false, O::saturate,      0,                     -1},
  {{E::s4,    "s4",      4, false, true,  0,  0,   0,  false, false, 7.0,        -8.0},         C::integer,   S::none,         false, O::saturate,      0,                     -1},
  {{E::u4,    "u4",      4, false, false, 0,  0,   0,  false, false, 15.0,       0.0},          C::integer,   S::none,         false, O::saturate,      0,                     -1},
  {{E::s32,   "s32",    32, false, true,  0,  0,   0,  false, false, 2147483647.0, -2147483648.0}, C::integer, S::none,        false, O::saturate,      0,                     -1},
  {{E::b1,    "b1",      1, false, false, 0,  0,   0,  false, false, 1.0,        0.0},          C::bit,       S::none,         false, O::saturate,      0,                     -1},
};
// clang-format on

constexpr bool rows_in_enum_order() {
  int i = 0;
  for (const Row& r : kRows) {
    if (static_cast<int>(r.info.type) != i++) return false;
  }
  return i == static_cast<int>(std::size(kAllElemTypes));
}
static_assert(rows_in_enum_order(), "kRows must list every ElemType once, in enumerator order");

const Row& row(ElemType t) {
  const auto i = static_cast<size_t>(t);
  if (i >= std::size(kRows)) fail(Status::internal, "type_info: ElemType value " + std::to_string(i) + " is out of range");
  return kRows[i];
}

// ------------------------------------------------------------------ formatting for messages
std::string fmt_value(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

std::string fmt_hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

[[noreturn]] void fail_encode(const Row& r, double x, const std::string& why) {
  fail(Status::invalid_value, "encode(" + std::string(r.info.name) + ", " + fmt_value(x) + "): " + why);
}

// ------------------------------------------------------------------ exact rounding helpers
// Rounds a non-negative double to an integer, ties to even. Exact: y - floor(y) has no
// rounding error for any double y, and the comparison with 0.5 is exact.
double rne_integer(double y) {
  const double q = std::floor(y);
  const double frac = y - q;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(q, 2.0) != 0.0)) return q + 1.0;
  return q;
}

// Signed variant: rounds to the nearest integer, ties to even, sign symmetric.
double rne_integer_signed(double x) { return std::signbit(x) ? -rne_integer(-x) : rne_integer(x); }

uint64_t low_mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

// ------------------------------------------------------------------ generic minifloat
struct Mini {
  int e, m, bias;
  bool sign;
  Special special;
  bool subnormals;
  double max_finite;

  explicit Mini(const Row& r)
      : e(r.info.exp_bits), m(r.info.man_bits), bias(r.info.bias), sign(r.info.is_signed), special(r.special),
        subnormals(r.subnormals), max_finite(r.info.max_finite) {}

  int width() const { return e + m + (sign ? 1 : 0); }
  uint64_t sign_bit() const { return sign ? uint64_t{1} << (e + m) : 0; }
  uint64_t exp_all_ones() const { return low_mask(e); }
  // Smallest unbiased exponent of a normal number.
  int emin() const { return subnormals ? 1 - bias : -bias; }

  // Magnitude a > 0, finite: the RNE-rounded magnitude's bit pattern (no sign), with the
  // rounded value in *rounded (may exceed max_finite: the caller decides about overflow).
  // Encodings are monotonic in the value: with q the integer significand at quantum
  // 2^(E-m) (q in [2^m, 2^(m+1)] for normals), the pattern is
  //   (E + bias) * 2^m + (q - 2^m)  =  (E + bias - 1) * 2^m + q,
  // and the same formula covers subnormals (E = emin = 1 - bias, q < 2^m: pattern q), a
  // subnormal rounding up to the smallest normal (q = 2^m at emin) and a carry out of the
  // binade (q = 2^(m+1) gives exponent field E + bias + 1, mantissa 0).
  uint64_t round_magnitude(double a, double* rounded) const {
    int fexp = 0;
    std::frexp(a, &fexp);                     // a = f * 2^fexp, f in [0.5, 1)
    int ex = fexp - 1;                        // a in [2^ex, 2^(ex+1))
    if (ex < emin()) ex = emin();             // subnormal range: fixed quantum
    const double y = std::ldexp(a, m - ex);   // exact: a / 2^(ex-m)
    const double q = rne_integer(y);
    *rounded = std::ldexp(q, ex - m);         // may be +Inf in double for huge ex: > max_finite
    if (q == 0.0) return 0;
    return static_cast<uint64_t>((static_cast<int64_t>(ex) + bias - 1) * (int64_t{1} << m) + static_cast<int64_t>(q));
  }

  uint64_t max_pattern() const {
    double r = 0;
    return round_magnitude(max_finite, &r);
  }

  uint64_t all_ones() const { return low_mask(e + m); }

  double decode(uint64_t p) const {
    p &= low_mask(width());
    const bool neg = sign && (p & sign_bit());
    const uint64_t field = (p >> m) & exp_all_ones();
    const uint64_t mant = p & low_mask(m);
    double v;
    if (special == Special::ieee && field == exp_all_ones()) {
      if (mant != 0) return std::numeric_limits<double>::quiet_NaN();
      v = kInf;
    } else if (special == Special::nan_all_ones && field == exp_all_ones() && mant == low_mask(m)) {
      return std::numeric_limits<double>::quiet_NaN();
    } else if (field == 0 && subnormals) {
      v = std::ldexp(static_cast<double>(mant), emin() - m);
    } else {
      v = std::ldexp(static_cast<double>((uint64_t{1} << m) + mant), static_cast<int>(field) - bias - m);
    }
    return neg ? -v : v;
  }
};

// The pattern for an out-of-range magnitude (finite overflow or Inf) under rule `ov`.
uint64_t overflow_pattern(const Row& r, const Mini& mf, bool neg, Overflow ov) {
  const uint64_t s = neg ? mf.sign_bit() : 0;
  if (ov == Overflow::to_inf_or_nan) {
    if (r.info.has_inf) return s | (mf.exp_all_ones() << mf.m);  // ±Inf
    if (r.info.has_nan) return s | mf.all_ones();                // S.1111.111 (e4m3 0x7F / 0xFF)
  }
  return s | mf.max_pattern();  // saturate (also where the type has neither Inf nor NaN)
}

uint64_t mini_encode(const Row& r, double x, Overflow ov) {
  const Mini mf(r);
  if (std::isnan(x)) {
    if (!r.info.has_nan) fail_encode(r, x, std::string(r.info.name) + " has no NaN");
    return r.canonical_nan;
  }
  bool neg = std::signbit(x);
  if (neg && !mf.sign) {
    if (x != 0.0) fail_encode(r, x, std::string(r.info.name) + " is unsigned and cannot hold a negative value");
    neg = false;  // -0.0 into an unsigned type is +0
  }
  const double a = std::fabs(x);
  const bool has_zero = mf.subnormals;  // every type with subnormals has ±0; ue8m0 has no zero
  if (!has_zero && a == 0.0) fail_encode(r, x, std::string(r.info.name) + " has no zero (its values are 2^(e-127) > 0)");
  if (std::isinf(a)) return overflow_pattern(r, mf, neg, ov);
  if (a == 0.0) return neg ? mf.sign_bit() : 0;
  if (!has_zero && a < std::ldexp(1.0, mf.emin())) return 0;  // clamp below the smallest value (ue8m0: 2^-127)
  double rounded = 0;
  const uint64_t mag = mf.round_magnitude(a, &rounded);
  if (rounded > mf.max_finite) return overflow_pattern(r, mf, neg, ov);
  return (neg ? mf.sign_bit() : 0) | mag;
}

// ------------------------------------------------------------------ other codecs
uint64_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float f32_from_bits(uint64_t p) {
  const auto u = static_cast<uint32_t>(p);
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint64_t f32_encode(const Row& r, double x, Overflow ov) {
  if (std::isnan(x)) return r.canonical_nan;
  const float f = static_cast<float>(x);  // one IEEE RNE rounding (default FP environment)
  if (std::isinf(f) && ov == Overflow::saturate) {
    constexpr float kMax = std::numeric_limits<float>::max();
    return f32_bits(std::signbit(x) ? -kMax : kMax);
  }
  return f32_bits(f);  // finite overflow -> ±Inf, ±Inf kept, -0.0 kept
}

double f32_decode(uint64_t p) { return static_cast<double>(f32_from_bits(p)); }

// tf32: the e8m10 minifloat in bits [31:13] of an f32 pattern.
constexpr int kTf32Drop = 13;

uint64_t tf32_encode(const Row& r, double x, Overflow ov) {
  if (std::isnan(x)) return r.canonical_nan;
  return mini_encode(r, x, ov) << kTf32Drop;
}

double tf32_decode(uint64_t p) { return f32_decode(p & 0xFFFFFFFFull & ~low_mask(kTf32Drop)); }

uint64_t f64_encode(const Row& r, double x, Overflow ov) {
  if (std::isnan(x)) return r.canonical_nan;
  if (std::isinf(x) && ov == Overflow::saturate) x = std::signbit(x) ? -kF64Max : kF64Max;
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

double f64_decode(uint64_t p) {
  double d;
  std::memcpy(&d, &p, sizeof d);
  return d;
}

uint64_t int_encode(const Row& r, double x) {
  if (std::isnan(x)) fail_encode(r, x, std::string(r.info.name) + " has no NaN");
  double q = std::isinf(x) ? x : rne_integer_signed(x);
  if (q > r.info.max_finite) q = r.info.max_finite;
  if (q < r.info.min_value) q = r.info.min_value;
  const auto v = static_cast<int64_t>(q);  // in range: exact; -0.0 -> 0
  return static_cast<uint64_t>(v) & low_mask(r.info.bits);
}

double int_decode(const Row& r, uint64_t p) {
  p &= low_mask(r.info.bits);
  if (r.info.is_signed && (p >> (r.info.bits - 1)) & 1) {
    return static_cast<double>(static_cast<int64_t>(p) - (int64_t{1} << r.info.bits));
  }
  return static_cast<double>(p);
}

uint64_t bit_encode(const Row& r, double x) {
  if (std::isnan(x)) fail_encode(r, x, std::string(r.info.name) + " has no NaN");
  return x != 0.0 ? 1 : 0;
}

}  // namespace

// ==================================================================== public API
const TypeInfo& type_info(ElemType t) { return row(t).info; }

std::optional<ElemType> parse_elem_type(std::string_view s) {
  if (!s.empty() && s.front() == '.') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  for (const Row& r : kRows) {
    if (r.info.name == s) return r.info.type;
  }
  return std::nullopt;
}

ElemType parse_elem_type_or_throw(std::string_view s) {
  if (auto t = parse_elem_type(s)) return *t;
  std::string names;
  for (const Row& r : kRows) {
    if (!names.empty()) names += ", ";
    names += r.info.name;
  }
  fail(Status::invalid_argument, "unknown element type '" + std::string(s) + "' (valid: " + names + ")");
}

uint64_t encode(ElemType t, double x, Overflow overflow) {
  const Row& r = row(t);
  const Overflow ov = overflow == Overflow::type_default ? r.default_overflow : overflow;
  switch (r.codec) {
    case Codec::minifloat: return mini_encode(r, x, ov);
    case Codec::tf32: return tf32_encode(r, x, ov);
    case Codec::f32: return f32_encode(r, x, ov);
    case Codec::f64: return f64_encode(r, x, ov);
    case Codec::integer: return int_encode(r, x);
    case Codec::bit: return bit_encode(r, x);
  }
  fail(Status::internal, "encode: bad codec for " + std::string(r.info.name));
}

double decode(ElemType t, uint64_t bits) {
  const Row& r = row(t);
  switch (r.codec) {
    case Codec::minifloat: return Mini(r).decode(bits);
    case Codec::tf32: return tf32_decode(bits);
    case Codec::f32: return f32_decode(bits);
    case Codec::f64: return f64_decode(bits);
    case Codec::integer: return int_decode(r, bits);
    case Codec::bit: return static_cast<double>(bits & 1);
  }
  fail(Status::internal, "decode: bad codec for " + std::string(r.info.name));
}

bool is_zero(ElemType t, uint64_t bits) { return decode(t, bits) == 0.0; }  // NaN compares false

bool is_nan(ElemType t, uint64_t bits) { return std::isnan(decode(t, bits)); }

uint8_t to_f8f6f4_container(ElemType t, uint64_t bits) {
  const Row& r = row(t);
  if (r.container_shift < 0) {
    fail(Status::invalid_argument, "to_f8f6f4_container(" + std::string(r.info.name) + "): " + std::string(r.info.name) +
                                       " is not a .kind::f8f6f4 element type (e4m3, e5m2, e3m2, e2m3, e2m1)");
  }
  if (bits & ~low_mask(r.info.bits)) {
    fail(Status::invalid_value, "to_f8f6f4_container(" + std::string(r.info.name) + ", " + fmt_hex(bits) +
                                    "): pattern has bits above the type's " + std::to_string(r.info.bits) + " bits");
  }
  return static_cast<uint8_t>(bits << r.container_shift);
}

uint64_t from_f8f6f4_container(ElemType t, uint8_t container) {
  const Row& r = row(t);
  if (r.container_shift < 0) {
    fail(Status::invalid_argument, "from_f8f6f4_container(" + std::string(r.info.name) + "): " +
                                       std::string(r.info.name) +
                                       " is not a .kind::f8f6f4 element type (e4m3, e5m2, e3m2, e2m3, e2m1)");
  }
  const uint64_t field = low_mask(r.info.bits) << r.container_shift;
  const uint64_t padding = 0xFFu & ~field;
  if (container & padding) {
    fail(Status::invalid_value, "from_f8f6f4_container(" + std::string(r.info.name) + ", " + fmt_hex(container) +
                                    "): padding bits set (" + std::string(r.info.name) + " lives in bits [" +
                                    std::to_string(r.container_shift + r.info.bits - 1) + ":" +
                                    std::to_string(r.container_shift) + "], padding mask " + fmt_hex(padding) + ")");
  }
  return (container & field) >> r.container_shift;
}

int memory_bits(ElemType t) {
  const int b = type_info(t).bits;
  if (b == 4) return 4;
  if (b <= 8) return 8;
  return b;
}

}  // namespace spmma
