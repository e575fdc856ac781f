// SPDX-License-Identifier: BSD-3-Clause
// Conversions of packed fp8 pairs (PTX 9.7.9.21 cvt, sm_89+): two e4m3 or e5m2 values, the first
// in the low byte, to an f16 pair, the first in the low half, exactly (every e4m3 and e5m2 value,
// NaN and Inf included, is an f16 value).
#pragma once
#include <cstdint>

#include "spmma/types.hpp"

namespace spmma::ptx {

template <ElemType T>
__device__ __forceinline__ uint32_t fp8x2_to_f16x2(uint16_t v) {
  static_assert(T == ElemType::e4m3 || T == ElemType::e5m2, "an fp8 type");
  uint32_t d;
  if constexpr (T == ElemType::e4m3) asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(d) : "h"(v));
  else asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(d) : "h"(v));
  return d;
}
// A word's high half through `mov.b32 {lo, hi}`: ptxas then reads it in place
// (`F2FP.F16.E4M3.UNPACK_B R, R.H1`), where `w >> 16` cost a shift before each conversion (sm_90a,
// CUDA 13.0; 24 per stage and warp in the fp8 decode kernel).
__device__ __forceinline__ uint16_t high_half(uint32_t w) {
  uint16_t hi;
  asm("mov.b32 {_, %0}, %1;" : "=h"(hi) : "r"(w));
  return hi;
}
// The pairs in the low and the high half of a word.
template <ElemType T>
__device__ __forceinline__ uint32_t fp8x2_lo_to_f16x2(uint32_t w) { return fp8x2_to_f16x2<T>(static_cast<uint16_t>(w)); }
template <ElemType T>
__device__ __forceinline__ uint32_t fp8x2_hi_to_f16x2(uint32_t w) { return fp8x2_to_f16x2<T>(high_half(w)); }

}  // namespace spmma::ptx
