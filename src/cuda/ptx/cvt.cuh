// SPDX-License-Identifier: BSD-3-Clause
// Conversions of packed fp8 pairs (PTX 9.7.9.21 cvt, sm_89+): two e4m3 or e5m2 values, the first
// in the low byte, to an f16 pair, the first in the low half, exactly (every e4m3 and e5m2 value,
// NaN and Inf included, is an f16 value).
#pragma once
#include <cstdint>

#include "spmma/types.hpp"

namespace spmma::ptx {

// The pair in the low (Hi false) or the high half of a word. Both halves go in by `mov.b32 {lo,
// hi}`, so that ptxas reads the high one in place (`F2FP.F16.E4M3.UNPACK_B R, R.H1`): as `w >>
// 16` it cost a shift each (sm_90a, CUDA 13.0), 24 per stage and warp in the fp8 decode kernel.
template <ElemType T, bool Hi>
__device__ __forceinline__ uint32_t fp8x2_half_to_f16x2(uint32_t w) {
  static_assert(T == ElemType::e4m3 || T == ElemType::e5m2, "an fp8 type");
  uint32_t d;
  if constexpr (T == ElemType::e4m3) {
    if constexpr (Hi) asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.rn.f16x2.e4m3x2 %0, h;\n}" : "=r"(d) : "r"(w));
    else asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.rn.f16x2.e4m3x2 %0, l;\n}" : "=r"(d) : "r"(w));
  } else {
    if constexpr (Hi) asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.rn.f16x2.e5m2x2 %0, h;\n}" : "=r"(d) : "r"(w));
    else asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.rn.f16x2.e5m2x2 %0, l;\n}" : "=r"(d) : "r"(w));
  }
  return d;
}
template <ElemType T>
__device__ __forceinline__ uint32_t fp8x2_lo_to_f16x2(uint32_t w) { return fp8x2_half_to_f16x2<T, false>(w); }
template <ElemType T>
__device__ __forceinline__ uint32_t fp8x2_hi_to_f16x2(uint32_t w) { return fp8x2_half_to_f16x2<T, true>(w); }

}  // namespace spmma::ptx
