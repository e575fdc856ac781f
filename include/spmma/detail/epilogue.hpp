// SPDX-License-Identifier: BSD-3-Clause
// The matmul epilogue as one host/device definition (docs/api.md, "Epilogue semantics"): the CPU
// backend and every GPU kernel compute D from the accumulator with these functions, so the two
// backends cannot drift apart.
//
//   Real = float, except double where C or D is s32 (its sums need 32 exact bits; an f32 has 24)
//   scale = alpha · s_row[row] · s_col[col], left to right in Real (alpha without scale vectors)
//   v = fma(scale, acc, bias[row] or 0);  if (beta != 0) v = fma(beta, C, v);  v = act(v)   (Real)
//   D = v rounded once into d_type: RNE; f32/f16/bf16 overflow to ±Inf; e4m3/e5m2 saturate to
//   ±their largest finite value (NaN stays NaN); integer D rounds to even, saturates, NaN -> 0.
#pragma once
#include <cmath>
#include <cstdint>

#include "spmma/detail/hd.hpp"

namespace spmma::detail {

// Activation codes, equal to spmma::Activation's values (matmul.hpp static_asserts them).
enum ActivationCode : int { kActNone = 0, kActRelu = 1, kActGelu = 2 };

// The arithmetic of one Real, named so that host and device call the same function for each
// type (fmaf on float: unqualified fma(float..) can widen to double on the host).
SPMMA_HD inline float fused(float a, float b, float c) { return fmaf(a, b, c); }
SPMMA_HD inline double fused(double a, double b, double c) { return fma(a, b, c); }

// GELU as x·Φ(x) = x·erfc(−x/√2)/2: erfc keeps its relative accuracy where Φ is tiny (x far
// below 0), where 1 + erf(x/√2) would cancel to 0 long before x·Φ(x) underflows. Evaluated in
// double and rounded once into Real: the f32 erfcf of the host's C library and of CUDA differ by
// a few ulps (CUDA documents 4), which an s8 D would show wherever v lies near a .5 boundary;
// their double erfc differ by a few ulps of a double, which the rounding to f32 hides (a
// difference survives only where the exact value lies within those ulps of an f32 rounding
// boundary, about 2^-26 of the values). So both backends give the same bits.
template <class Real>
SPMMA_HD inline Real gelu(Real x) {
  const double t = static_cast<double>(x);
  return static_cast<Real>(0.5 * t * erfc(t * -0.70710678118654752440));
}

template <class Real>
SPMMA_HD inline Real activate(Real x, int act) {
  if (act == kActRelu) return x > Real(0) ? x : Real(0);  // NaN -> 0, as `x > 0` is false
  if (act == kActGelu) return gelu(x);
  return x;
}

// v before the rounding into D: scale·acc + bias (+0 without a bias) in one fused operation, then
// + beta·C (fused, only when beta != 0), then the activation. `c` is read only when beta != 0,
// `bias` only when has_bias. Real: float (double where C or D is s32, epilogue_in_double).
template <class Real>
SPMMA_HD inline Real epilogue_value(Real acc, Real scale, Real beta, Real c, bool has_bias, Real bias, int act) {
  Real v = fused(scale, acc, has_bias ? bias : Real(0));
  if (beta != Real(0)) v = fused(beta, c, v);
  return activate(v, act);
}

// An s32 C or D holds 32-bit integers exactly only in double; every other epilogue runs in f32,
// as cuBLASLt's do (the H100 issues f32 arithmetic at twice the rate of f64; the cost of each on
// the GPU kernels' general epilogue is not measured yet: docs/benchmarks.md).
SPMMA_HD constexpr bool epilogue_in_double(bool c_is_s32, bool d_is_s32) { return c_is_s32 || d_is_s32; }

// An integer D element from v: round to nearest even, saturate to [lo, hi] (within the s32
// range), NaN -> 0 (a NaN can reach here only through a NaN in the bias: alpha and beta are
// required finite for integer D, and C is integer). The GPU does not read the bias on the host
// (that would synchronise every call), so both backends apply this rule instead of refusing.
// On the device cvt.rni.s32.f64 / .f32 round to even and saturate to the s32 range by themselves
// (one instruction), but give INT_MIN for NaN (measured on the H100), hence the explicit test.
template <class Real>
SPMMA_HD inline int32_t to_integer_output(Real v, int32_t lo, int32_t hi) {
#if defined(__CUDA_ARCH__)
  int32_t r;
  if constexpr (sizeof(Real) == 8) r = v != v ? 0 : __double2int_rn(v);
  else r = v != v ? 0 : __float2int_rn(v);
#else
  const double d = v != v ? 0.0 : std::nearbyint(static_cast<double>(v));  // ties to even in the default rounding mode
  const int32_t r = d <= -2147483648.0 ? INT32_MIN : d >= 2147483647.0 ? INT32_MAX : static_cast<int32_t>(d);
#endif
  return r < lo ? lo : (r > hi ? hi : r);
}

}  // namespace spmma::detail
