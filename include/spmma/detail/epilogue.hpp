// The matmul epilogue as one host/device definition (docs/api.md, "Epilogue semantics"): the CPU
// backend and every GPU kernel compute D from the accumulator with these functions, so the two
// backends cannot drift apart.
//
//   v = alpha·acc;  if (beta != 0) v += beta·C;  if (bias) v += bias[row];  v = act(v)   (double)
//   D = v rounded once into d_type; integer D: round to nearest even, saturate, NaN -> 0.
#pragma once
#include <cmath>

#include "spmma/detail/hd.hpp"

namespace spmma::detail {

// Activation codes, equal to spmma::Activation's values (matmul.hpp static_asserts them).
enum ActivationCode : int { kActNone = 0, kActRelu = 1, kActGelu = 2 };

SPMMA_HD inline double activate(double x, int act) {
  if (act == kActRelu) return x > 0.0 ? x : 0.0;  // NaN -> 0, as `x > 0` is false
  if (act == kActGelu) return 0.5 * x * (1.0 + erf(x * 0.70710678118654752));  // exact erf, not tanh
  return x;
}

// v before the rounding into D. `c` is read only when beta != 0, `bias` only when has_bias.
SPMMA_HD inline double epilogue_value(double acc, double alpha, double beta, double c, bool has_bias, double bias,
                                      int act) {
  double v = alpha * acc;
  if (beta != 0.0) v += beta * c;
  if (has_bias) v += bias;
  return activate(v, act);
}

// An integer D element from v: round to nearest even, saturate to [lo, hi], NaN -> 0 (a NaN can
// reach here only through a NaN in the bias: alpha and beta are required finite for integer D,
// and C is integer). The GPU does not read the bias on the host (that would synchronise every
// call), so both backends apply this rule instead of refusing: the rule of PTX's saturating
// float-to-integer conversion (cvt.rni.sat), which also sends NaN to 0 and ±Inf to the limits.
SPMMA_HD inline double to_integer_output(double v, double lo, double hi) {
  if (v != v) return 0.0;
  const double r = rint(v);  // ties to even in the default rounding mode, host and device
  return r < lo ? lo : (r > hi ? hi : r);
}

}  // namespace spmma::detail
