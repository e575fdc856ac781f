// SPDX-License-Identifier: BSD-3-Clause
// The sm90 plan's rules (src/cuda/sm90/heuristics.cu) for a GPU of 132 SMs (the H100's and the
// H200's, where they were measured), on the host: which kernel, math and depth a plan takes. The
// GPU test Robust.DecodeKernelIsChosenForSmallNOnEnoughRows checks the same choices through Plan
// on a device; this one runs wherever the CUDA part is built, GPU or not (CI has none).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "spmma/detail/gemm_pairs.hpp"
#include "spmma/matmul.hpp"
#include "spmma/types.hpp"
#if defined(SPMMA_HAVE_CUDA)
#include "sm90/heuristics.hpp"
#endif

namespace spmma {
namespace {

using T = ElemType;

#if defined(SPMMA_HAVE_CUDA)
constexpr int kSms = 132;

// The plan's configuration for A and B of type t, M x N x K, `batch` entries, no pins.
sm90::Config plan(T t, int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
  MatmulDesc d;
  d.a_type = d.b_type = t;
  d.m = m, d.n = n, d.k = k, d.batch = batch;
  const int inst_k = 512 / type_info(t).bits;  // the sparse instruction's K: 512 bits of A's dense row
  return sm90::choose(d, detail::gemm_promotes(t), inst_k, kSms, PlanOptions{});
}

struct Row {
  T t;
  int64_t m, n, k, batch;
  int tile_m;  // 0: the main kernel; 32 or 64: the decode kernel and its rows
};

void expect_rows(std::initializer_list<Row> rows) {
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(type_name(r.t)) + " " + std::to_string(r.m) + "x" + std::to_string(r.n) + "x" +
                 std::to_string(r.k) + " batch " + std::to_string(r.batch));
    const sm90::Config c = plan(r.t, r.m, r.n, r.k, r.batch);
    EXPECT_EQ(c.decode, r.tile_m != 0);
    if (r.tile_m) EXPECT_EQ(c.block_m, r.tile_m);
  }
}
#endif

// Past N = 16 (the decode kernel's N tiles of 16; fp8 on the warpgroup's 64-row tiles): where the
// main kernel's 128-row tiles reach at most half the SMs, N <= 32 (64 for the 8-bit types on at
// most a quarter of the SMs' worth of those tiles, K <= 8192), the decode CTAs at least half the
// SMs and at most 4 per SM, K <= 8192 (tf32: 4096) or the decode CTAs on every SM.
TEST(Sm90PlanRules, DecodeKernelPastN16) {
#if !defined(SPMMA_HAVE_CUDA)
  GTEST_SKIP() << "built without the CUDA part";
#else
  expect_rows({
      {T::bf16, 4096, 17, 4096, 1, 32},    {T::bf16, 4096, 32, 4096, 1, 32},
      {T::bf16, 4096, 33, 4096, 1, 0},     {T::bf16, 11008, 32, 4096, 1, 0},   // 86 main tiles: past half the SMs
      {T::bf16, 8192, 32, 4096, 1, 32},    {T::bf16, 1024, 32, 4096, 1, 0},    // 64 decode CTAs: under half
      {T::bf16, 4096, 32, 14336, 1, 32},   {T::bf16, 2048, 32, 8192, 1, 32},
      {T::bf16, 2048, 32, 14336, 1, 0},    // 128 decode CTAs, K > 8192
      {T::bf16, 4096, 32, 4096, 2, 32},    {T::bf16, 4096, 32, 4096, 3, 0},    // batches: 64 and 96 main tiles
      {T::bf16, 4096, 64, 4096, 1, 0},     {T::f16, 4096, 24, 4096, 1, 32},
      {T::s8, 4096, 64, 4096, 1, 32},      {T::s8, 4096, 65, 4096, 1, 0},
      {T::s8, 4096, 64, 8192, 1, 32},      {T::s8, 4096, 64, 14336, 1, 0},     // N > 32: K <= 8192
      {T::s8, 8192, 64, 4096, 1, 0},       {T::s8, 8192, 32, 14336, 1, 32},    // N > 32: at most 33 main tiles
      {T::e4m3, 4096, 32, 4096, 1, 64},    {T::e4m3, 4096, 64, 4096, 1, 64},
      {T::e4m3, 4096, 32, 14336, 1, 64},   {T::e4m3, 4096, 64, 14336, 1, 0},
      {T::e5m2, 2048, 48, 8192, 1, 64},    {T::e4m3, 8192, 64, 4096, 1, 0},
      {T::e4m3, 2048, 32, 14336, 1, 0},    {T::e4m3, 14336, 32, 4096, 1, 0},
      {T::e4m3, 4096, 128, 4096, 1, 0},
      {T::tf32, 4096, 32, 4096, 1, 32},    {T::tf32, 4096, 48, 4096, 1, 0},
      {T::tf32, 2048, 32, 8192, 1, 0},     {T::tf32, 4096, 32, 14336, 1, 32},  // tf32: K <= 4096 on 128 CTAs
  });
  // fp8 past N = 16 on the warpgroup's math, its depth for the CTAs that share an SM: 128 CTAs
  // alone on their SMs, two producer warps per operand, 16 stages; 256, two per SM, 6.
  EXPECT_EQ(plan(T::e4m3, 4096, 32, 4096).stages, 16);
  EXPECT_EQ(plan(T::e4m3, 4096, 32, 4096).issuers, 2);
  EXPECT_EQ(plan(T::e4m3, 4096, 64, 4096).stages, 6);
  EXPECT_EQ(plan(T::e4m3, 4096, 64, 4096).block_n, 16);
#endif
}

// At N <= 16 (unchanged by the rule past 16): the 16-bit types and tf32 on weights whose 32-row
// tiles give half the SMs a CTA, K > 8192 at N > 8 only with two producer warps per operand; fp8
// at N <= 8 anywhere, at N = 16 for K <= 4096 on at most 2/3 of the SMs' worth of main-kernel
// tiles or on the warpgroup's weights (a 64-row tile per SM).
TEST(Sm90PlanRules, DecodeKernelToN16) {
#if !defined(SPMMA_HAVE_CUDA)
  GTEST_SKIP() << "built without the CUDA part";
#else
  expect_rows({
      {T::bf16, 4096, 16, 4096, 1, 32},   {T::bf16, 512, 16, 4096, 1, 0},
      {T::bf16, 11008, 16, 4096, 1, 32},  {T::bf16, 11008, 16, 14336, 1, 0},
      {T::e4m3, 4096, 8, 14336, 1, 32},   {T::e4m3, 4096, 16, 14336, 1, 0},
      {T::e4m3, 11008, 16, 4096, 1, 64},  {T::e4m3, 8192, 16, 8192, 1, 0},
      {T::e4m3, 1024, 8, 4096, 1, 0},     {T::e4m3, 4096, 16, 4096, 1, 32},
  });
  EXPECT_EQ(plan(T::bf16, 4096, 16, 4096).issuers, 2);
  EXPECT_EQ(plan(T::bf16, 11008, 16, 4096).issuers, 1);
#endif
}

}  // namespace
}  // namespace spmma
