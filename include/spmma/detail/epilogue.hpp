// SPDX-License-Identifier: BSD-3-Clause
// The matmul epilogue as one host/device definition (docs/api.md, "Epilogue semantics"): the CPU
// backend and every GPU kernel compute D from the accumulator with these functions, so the two
// backends cannot drift apart.
//
//   v = scale·acc + bias[row] (+0 without a bias);  if (beta != 0) v += beta·C;  v = act(v)  (double, fused)
//   scale = alpha · s_row[row] · s_col[col], left to right in double (alpha without scale vectors)
//   D = v rounded once into d_type; integer D: round to nearest even, saturate, NaN -> 0.
#pragma once
#include <cmath>
#include <cstdint>

#include "spmma/detail/hd.hpp"

namespace spmma::detail {

// Activation codes, equal to spmma::Activation's values (matmul.hpp static_asserts them).
enum ActivationCode : int { kActNone = 0, kActRelu = 1, kActGelu = 2 };

SPMMA_HD inline double activate(double x, int act) {
  if (act == kActRelu) return x > 0.0 ? x : 0.0;  // NaN -> 0, as `x > 0` is false
  if (act == kActGelu) return 0.5 * x * (1.0 + erf(x * 0.70710678118654752));  // exact erf, not tanh
  return x;
}

// v before the rounding into D: scale·acc + bias (+0 without a bias) in one fused operation, then
// + beta·C (fused, only when beta != 0), then the activation. Fused: one DFMA per element where
// a multiply and an add measured 2-3% of the sm90 kernel's time at 8192^3 (the epilogue's fp64
// work is a visible part of a GEMM's time on the H100); the host's std::fma gives the same bits.
// `c` is read only when beta != 0, `bias` only when has_bias.
SPMMA_HD inline double epilogue_value(double acc, double scale, double beta, double c, bool has_bias, double bias,
                                      int act) {
  double v = fma(scale, acc, has_bias ? bias : 0.0);
  if (beta != 0.0) v = fma(beta, c, v);
  return activate(v, act);
}

// An integer D element from v: round to nearest even, saturate to [lo, hi] (within the s32
// range), NaN -> 0 (a NaN can reach here only through a NaN in the bias: alpha and beta are
// required finite for integer D, and C is integer). The GPU does not read the bias on the host
// (that would synchronise every call), so both backends apply this rule instead of refusing.
// On the device cvt.rni.s32.f64 rounds to even and saturates to the s32 range by itself (one
// instruction: the epilogue's fp64 work is a measurable part of an int8 GEMM), but gives
// INT_MIN for NaN (measured on the H100), hence the explicit test.
SPMMA_HD inline int32_t to_integer_output(double v, int32_t lo, int32_t hi) {
#if defined(__CUDA_ARCH__)
  const int32_t r = v != v ? 0 : __double2int_rn(v);
#else
  const double d = v != v ? 0.0 : std::nearbyint(v);  // ties to even in the default rounding mode
  const int32_t r = d <= -2147483648.0 ? INT32_MIN : d >= 2147483647.0 ? INT32_MAX : static_cast<int32_t>(d);
#endif
  return r < lo ? lo : (r > hi ? hi : r);
}

}  // namespace spmma::detail
