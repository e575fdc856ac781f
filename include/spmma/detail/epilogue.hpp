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
#include <cstring>

#include "spmma/detail/hd.hpp"

namespace spmma::detail {

// Activation codes, equal to spmma::Activation's values (matmul.hpp static_asserts them).
enum ActivationCode : int { kActNone = 0, kActRelu = 1, kActGelu = 2 };

// The arithmetic of one Real, named so that host and device call the same function for each
// type (fmaf on float: unqualified fma(float..) can widen to double on the host).
SPMMA_HD inline float fused(float a, float b, float c) { return fmaf(a, b, c); }
SPMMA_HD inline double fused(double a, double b, double c) { return fma(a, b, c); }

// c[0]·x^(N−1) + … + c[N−1] by Horner's rule, every step one fmaf (one rounding, and the same
// bits on host and device: no contraction left to a compiler).
template <int N>
SPMMA_HD inline float horner(float x, const float (&c)[N]) {
  float p = c[0];
  for (int i = 1; i < N; ++i) p = fmaf(p, x, c[i]);
  return p;
}

// e^(hi + mid + lo) = e·2^k in f32, for a sum from about -125 to 88: hi large (gelu_f32's −x²/2
// rounded), |mid| < 2 and lo tiny (the parts one f32 cannot hold). The power of two is left to
// the caller, so that a product with e·2^k below f32's normal range is rounded once, at the end.
// Range reduction by k = rint(sum·log2 e) with ln 2 in Cody and Waite's two parts: k·ln2_hi is
// exact (15 significant bits, |k| < 2^8), hi − k·ln2_hi is exact wherever |hi| >= 1 (both are
// then multiples of hi's last bit, 2^-23 or coarser, and the difference is below 2), and adding mid, which nearly cancels
// it, is exact too (Sterbenz): r = sum − k·ln 2 carries no rounding of the large parts (rounding
// them cost up to 4.5 ulps of GELU, measured). Then Taylor to degree 7 on |r| <= 0.347
// (truncation 7.9e-9 relative, below f32's 6e-8). Only IEEE-rounded operations: host and device
// give the same bits.
SPMMA_HD inline float exp_sum(float hi, float mid, float lo, int& k) {
  const float kf = rintf((hi + mid) * 1.44269502e+00f);
  const float r = (fmaf(-kf, 6.93145752e-01f, hi) + mid) + fmaf(-kf, 1.42860677e-06f, lo);
  constexpr float kTaylor[] = {1.98412701e-04f, 1.38888892e-03f, 8.33333377e-03f, 4.16666679e-02f,
                                1.66666672e-01f, 5.0e-01f, 1.0f, 1.0f};  // 1/7! .. 1/0!
  k = static_cast<int>(kf);
  return horner(r, kTaylor);
}

// 2^k as an f32, for k from -126 to 127 (a normal power of two: exact).
SPMMA_HD inline float pow2f(int k) {
  const uint32_t bits = static_cast<uint32_t>(k + 127) << 23;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// v·2^k rounded once, as ldexpf(v, k), for a normal v of magnitude below 2^30 and k from -190
// to 0, without ldexpf's branches: one product where 2^k is a normal f32 (exact, or one rounding
// into the subnormal range), else two, the first exact (v·2^(k+64) stays normal) and the second
// rounding once.
SPMMA_HD inline float scale_by_pow2(float v, int k) {
  const bool low = k < -126;
  return (v * pow2f(low ? k + 64 : k)) * (low ? 0x1p-64f : 1.0f);
}

// a / b rounded to nearest, for 0 <= a <= 16 and 2 <= b <= 18 (gelu_f32's two quotients),
// without a branch: on the device the fast path of the GPU's own division (reciprocal, Newton
// step, quotient, remainder, correction), which gives the correctly rounded quotient wherever
// the division's check for its slow path (denormal or extreme operands) would not fire, i.e.
// for every a >= 2^-25 here; below that the quotient is off by at most an ulp, and gelu_f32's
// y = 2·q − 1 rounds to −1 either way. The test Robust.GeluOnTheGpuIsTheHostsBitForBit compares
// div_gelu with the GPU's IEEE division over every f32 a of [0, 15.5], and the device's gelu_f32
// with the host's over every 997th bit pattern.
SPMMA_HD inline float div_gelu(float a, float b) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  r = fmaf(r, fmaf(-b, r, 1.0f), r);
  const float q = fmaf(a, r, 0.0f);
  return fmaf(r, fmaf(-b, q, a), q);
#else
  return a / b;
#endif
}

// GELU(x) = x·Φ(x) = x·erfc(−x/√2)/2 in f32, the same bits on host and device (only IEEE-rounded
// operations; every multiply-add an explicit fmaf, so no compiler can contract it differently).
// With z = |x|/√2: erfc(z) = t·exp(−z² + P(y)), t = 2/(2 + z), y = (z − 1.5)/(z + 1.5), P the
// degree-13 polynomial of codegen/gelu_fit.py (fit error 1.4e-8). −z² enters the exponential
// exactly, as the two-part x·x (an f32 z² would be off by up to z²·2^-24 absolute, 100 ulps of
// the result at z = 10); erfc keeps its relative accuracy where Φ is tiny (x far below 0), where
// 1 + erf(x/√2) cancels. Error against the exact value: at most kGeluMaxUlps ulps over every f32
// (5.39 measured over all of them, at x = −7.13: the roundings of t, of P, of the Taylor sum and
// of the products add up;
// MatmulCpu.GeluF32IsAccurate holds the bound); y = 2·|x|/(|x| + 1.5√2) − 1 rather than
// (|x| − 1.5√2)/(|x| + 1.5√2), which cost 4.9 ulps near x = 0 (y's error times P' ≈ 0.7). It replaced an
// evaluation in double whose FP64 erfc made GELU cost 0.7 ms of the sm90 kernel's 2.5 ms at bf16
// 8192³ on the H100 (docs/benchmarks.md).
// Straight-line code (selects, div_gelu, scale_by_pow2: the same values as the branches, the IEEE
// division and ldexpf they replace), so that the GPU interleaves the epilogue's 8 elements of a
// run: with branches around each element's divisions and scaling, bias+GELU ran the sm90 kernel
// at 0.42-0.62x its plain speed on the H100 (docs/benchmarks.md, "The general epilogue in one loop").
constexpr double kGeluMaxUlps = 6.0;
SPMMA_HD inline float gelu_f32(float x) {
  // Beyond 15, Φ(x) is 1 or below f32's smallest subnormal (Φ(−15) = 3.7e-51): x, or −0. −∞·0 and
  // NaN give NaN, as x·Φ(x) does. There the formula runs on 0 instead, and its value is not taken.
  const bool inside = fabsf(x) <= 15.0f;  // false for NaN
  const float xi = inside ? x : 0.0f, a = fabsf(xi);
  // t and y from |x| itself (t = 2√2/(2√2 + |x|)): a rounded z = |x|/√2 cost up to 1 ulp of GELU.
  const float t = div_gelu(2.82842708f, 2.82842708f + a), y = fmaf(2.0f, div_gelu(a, a + 2.12132025f), -1.0f);
  constexpr float kP[] = {-5.795021934e-06f, -8.516480011e-05f, -2.195518900e-04f, 1.258557313e-05f,
                           8.731506532e-04f,  1.250799396e-03f,  -1.031602500e-03f, -5.688469391e-03f,
                           -4.298663698e-03f, 1.699565724e-02f,  4.118166491e-02f,  -7.036945969e-02f,
                           -6.692595482e-01f, -5.748763084e-01f};  // P, highest coefficient first
  const float p = horner(y, kP);
  const float sq = xi * xi, sq_lo = fmaf(xi, xi, -sq);  // x² = sq + sq_lo exactly
  int k;
  const float e = exp_sum(-0.5f * sq, p, -0.5f * sq_lo, k);  // Φ(−|x|) = erfc(z)/2 = t·e·2^k/2
  // The power of two last (exact, or one rounding into the subnormal range): Φ(x) itself is
  // subnormal below x = −13.0, where scaling it first lost 8 ulps of GELU's normal results (measured).
  float below = scale_by_pow2(xi * (0.5f * t) * e, k), above = xi * (1.0f - scale_by_pow2((0.5f * t) * e, k));
#if defined(__CUDA_ARCH__)
  asm("" : "+f"(below), "+f"(above));  // both computed, then one selected: no branch around either
#endif
  const float g = xi < 0.0f ? below : above;
  return inside ? g : x > 0.0f ? x : x * 0.0f;
}

// GELU in the epilogue's arithmetic: gelu_f32 for float; for double (an s32 C or D) the double
// erfc, whose host and device versions differ by a few ulps of a double, which the rounding to an
// integer D hides except within those ulps of a .5 boundary (about 2^-26 of the values).
template <class Real>
SPMMA_HD inline Real gelu(Real x) {
  if constexpr (sizeof(Real) == 4) return gelu_f32(x);
  else return 0.5 * x * erfc(x * -0.70710678118654752440);
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
