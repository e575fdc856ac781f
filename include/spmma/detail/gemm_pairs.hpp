// SPDX-License-Identifier: BSD-3-Clause
// The A/B type pairs of the sparse matmul: one row each, the one table of them. Everything else
// about a pair is derived from its row:
//   - C/D types and accumulator: gemm_outputs / gemm_accumulator below;
//   - the instruction of each GPU kernel family: looked up in the ISA registry by fields
//     (isa::find_form) by the code generator (codegen/gen_spmma.cpp), which writes the kernel
//     instantiations and the launch tables (build/generated/gemm_*.cu) from this table;
//   - whether a kernel family covers the pair: whether the registry has its form (4-bit A has
//     no wgmma.sp, so the sm90 kernel has no s4/u4 entries);
//   - fp8's promotion of partial sums (gemm_promotes).
// Adding a pair is one row here (docs/api.md, "How to add a type pair or a kernel").
#pragma once
#include <span>
#include <vector>

#include "spmma/types.hpp"

namespace spmma::detail {

struct GemmPair {
  ElemType a, b;
};

inline constexpr GemmPair kGemmPairs[] = {
    {ElemType::f16, ElemType::f16},   {ElemType::bf16, ElemType::bf16}, {ElemType::tf32, ElemType::tf32},
    {ElemType::e4m3, ElemType::e4m3}, {ElemType::e4m3, ElemType::e5m2}, {ElemType::e5m2, ElemType::e4m3},
    {ElemType::e5m2, ElemType::e5m2}, {ElemType::s8, ElemType::s8},     {ElemType::s8, ElemType::u8},
    {ElemType::u8, ElemType::s8},     {ElemType::u8, ElemType::u8},     {ElemType::s4, ElemType::s4},
    {ElemType::s4, ElemType::u4},     {ElemType::u4, ElemType::s4},     {ElemType::u4, ElemType::u4},
};

constexpr bool gemm_integer(ElemType a) {
  return a == ElemType::s8 || a == ElemType::u8 || a == ElemType::s4 || a == ElemType::u4;
}
// The accumulator: f32 for float A, s32 (wrapping) for integer A.
constexpr ElemType gemm_accumulator(ElemType a) { return gemm_integer(a) ? ElemType::s32 : ElemType::f32; }
// C/D types: {f16, bf16, f32, e4m3, e5m2} for float A, {s32, s8} for integer A. The first is
// each kind's default where a tool needs one. fp8 D saturates (quantized serving: the next layer
// reads fp8), as s8 D does.
inline std::span<const ElemType> gemm_outputs(ElemType a) {
  static constexpr ElemType kFloat[] = {ElemType::f16, ElemType::bf16, ElemType::f32, ElemType::e4m3, ElemType::e5m2};
  static constexpr ElemType kInt[] = {ElemType::s32, ElemType::s8};
  return gemm_integer(a) ? std::span<const ElemType>(kInt) : std::span<const ElemType>(kFloat);
}
// fp8: the tensor cores sum fp8 products with fewer bits than f32 (docs/conformance.md), so the
// sm90 kernel sums each stage apart and adds it in f32 (MatmulDesc::fast_accumulation turns it off).
constexpr bool gemm_promotes(ElemType a) { return a == ElemType::e4m3 || a == ElemType::e5m2; }

// Both GPU kernels are written in bytes: each instruction reads 64 bytes of dense A (32 packed)
// per row, so its K is 512 / bits of A (bf16 k32, tf32 k16, fp8/int8 k64, int4 k128).
constexpr int kGemmDenseBitsPerStep = 512;

}  // namespace spmma::detail
