// SPDX-License-Identifier: BSD-3-Clause
// GPU matmul against an independent dense product in double on the decompressed A.
// Label `gpu`: exits 77 (skipped) where no GPU is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>

#include "spmma/error.hpp"
#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "gpu/gpu_test.hpp"
#include "test_util.hpp"

using namespace spmma;

namespace {

using spmma::test::seed;

void ck(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }


// Raw bytes of a matrix stored (rows x cols) row-major with leading dimension ld, at the type's width.
std::vector<uint8_t> to_bytes(const Matrix& m, int64_t ld) {
  const int b = memory_bits(m.type);
  std::vector<uint8_t> out(static_cast<size_t>((m.rows * ld * b + 7) / 8), 0);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) store_element(out.data(), r * ld + c, b, m.at(r, c));
  return out;
}

Matrix transpose(const Matrix& m) {
  Matrix t(m.type, m.cols, m.rows);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) t.at(c, r) = m.at(r, c);
  return t;
}

uint64_t random_value(ElemType t, std::mt19937_64& rng) {
  std::normal_distribution<double> nd(0.0, 1.0);
  if (!type_info(t).is_float) {
    const auto& ti = type_info(t);
    const int64_t lo = static_cast<int64_t>(ti.min_value), hi = static_cast<int64_t>(ti.max_finite);
    return encode(t, static_cast<double>(lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1))));
  }
  return encode(t, nd(rng));
}

struct Case {
  ElemType a, b, cd;
  int64_t m, n, k;
  Order b_order = Order::col_major, cd_order = Order::row_major;
  int64_t batch = 1;
  bool a_per_batch = false;
  Activation act = Activation::none;
  bool bias = false;
  float alpha = 1.f, beta = 0.f;
  bool fast = false;  // MatmulDesc::fast_accumulation
};

void run_case(const Case& cs, Handle& h, std::mt19937_64& rng) {
  SCOPED_TRACE(std::string(type_name(cs.a)) + " x " + std::string(type_name(cs.b)) + " -> " + std::string(type_name(cs.cd)) +
               " m=" + std::to_string(cs.m) + " n=" + std::to_string(cs.n) + " k=" + std::to_string(cs.k) +
               " batch=" + std::to_string(cs.batch));
  MatmulDesc d;
  d.m = cs.m, d.n = cs.n, d.k = cs.k;
  d.a_type = cs.a, d.b_type = cs.b, d.c_type = cs.cd, d.d_type = cs.cd;
  d.b_order = cs.b_order, d.cd_order = cs.cd_order;
  d.batch = cs.batch, d.a_per_batch = cs.a_per_batch;
  d.activation = cs.act, d.bias = cs.bias;
  d.fast_accumulation = cs.fast;
  const int64_t na = cs.a_per_batch ? cs.batch : 1;
  // Host data: A pruned and compressed, B, C, bias.
  std::vector<Compressed> comp;
  std::vector<Matrix> dense_a;
  Plan plan(h, d);
  for (int64_t i = 0; i < na; ++i) {
    Matrix a(cs.a, cs.m, cs.k);
    for (auto& x : a.bits) x = random_value(cs.a, rng);
    const Pattern p = (cs.a == ElemType::s4 || cs.a == ElemType::u4) ? Pattern::p4_8_pairs : pattern_for(cs.a);
    a = prune_magnitude(a, p);
    comp.push_back(compress(a, p, true));
    dense_a.push_back(a);
  }
  SparseMatrix sa = upload(h, d, comp);
  std::vector<Matrix> bs, cs_;
  std::vector<uint8_t> hb, hc;
  for (int64_t i = 0; i < cs.batch; ++i) {
    Matrix b(cs.b, cs.k, cs.n), c(cs.cd, cs.m, cs.n);
    for (auto& x : b.bits) x = random_value(cs.b, rng);
    for (auto& x : c.bits) x = random_value(cs.cd, rng);
    const Matrix bst = cs.b_order == Order::row_major ? b : transpose(b);
    const Matrix cst = cs.cd_order == Order::row_major ? c : transpose(c);
    auto bb = to_bytes(bst, bst.cols), cb = to_bytes(cst, cst.cols);
    hb.insert(hb.end(), bb.begin(), bb.end());
    hc.insert(hc.end(), cb.begin(), cb.end());
    bs.push_back(b), cs_.push_back(c);
  }
  std::vector<float> bias(static_cast<size_t>(cs.m));
  for (auto& x : bias) x = static_cast<float>(static_cast<int>(rng() % 7) - 3);
  const size_t d_bytes = hc.size();
  void *db, *dc, *dd, *dbias, *ws = nullptr;
  ck(cudaMalloc(&db, hb.size()));
  ck(cudaMalloc(&dc, hc.size()));
  ck(cudaMalloc(&dd, d_bytes));
  ck(cudaMalloc(&dbias, bias.size() * 4));
  ck(cudaMemcpy(db, hb.data(), hb.size(), cudaMemcpyHostToDevice));
  ck(cudaMemcpy(dc, hc.data(), hc.size(), cudaMemcpyHostToDevice));
  ck(cudaMemcpy(dbias, bias.data(), bias.size() * 4, cudaMemcpyHostToDevice));
  ck(cudaMemset(dd, 0xA5, d_bytes));  // poison
  if (plan.workspace_bytes()) ck(cudaMalloc(&ws, plan.workspace_bytes()));
  plan.run(sa, db, cs.beta != 0 ? dc : nullptr, dd, cs.alpha, cs.beta, cs.bias ? static_cast<float*>(dbias) : nullptr, ws);
  ck(cudaDeviceSynchronize());
  std::vector<uint8_t> hd(d_bytes);
  ck(cudaMemcpy(hd.data(), dd, d_bytes, cudaMemcpyDeviceToHost));
  cudaFree(db), cudaFree(dc), cudaFree(dd), cudaFree(dbias);
  if (ws) cudaFree(ws);

  const int ob = memory_bits(cs.cd) / 8;
  const bool fp8_wgmma = (cs.a == ElemType::e4m3 || cs.a == ElemType::e5m2) && plan.describe().find("wgmma") != std::string::npos;
  const bool integer = !type_info(cs.a).is_float;
  int bad = 0;
  for (int64_t bi = 0; bi < cs.batch; ++bi) {
    const Matrix& a = dense_a[static_cast<size_t>(cs.a_per_batch ? bi : 0)];
    for (int64_t i = 0; i < cs.m; ++i)
      for (int64_t j = 0; j < cs.n; ++j) {
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < cs.k; ++k) {
          const double x = a.value(i, k) * bs[static_cast<size_t>(bi)].value(k, j);
          acc += x, mag += std::fabs(x);
        }
        double v = cs.alpha * acc;
        if (cs.beta != 0) v += cs.beta * cs_[static_cast<size_t>(bi)].value(i, j);
        if (cs.bias) v += bias[static_cast<size_t>(i)];
        if (cs.act == Activation::relu) v = v > 0 ? v : 0;
        if (cs.act == Activation::gelu) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
        const int64_t idx = bi * cs.m * cs.n + (cs.cd_order == Order::row_major ? i * cs.n + j : j * cs.m + i);
        uint64_t bits = 0;
        std::memcpy(&bits, hd.data() + idx * ob, static_cast<size_t>(ob));
        const double got = decode(cs.cd, bits);
        const double want = decode(cs.cd, encode(cs.cd, v));
        // f32 accumulation: a few ulps of Σ|a·b|; then one rounding into D. The H100's fp8
        // wgmma sums with fewer bits (tests/test_util.hpp, kFp8MmaRel).
        const double acc_rel = fp8_wgmma ? spmma::test::kFp8MmaRel : 1e-5;
        const double tol = integer ? 0.0 : acc_rel * (mag * std::fabs(cs.alpha) + 1.0) + std::fabs(want) * (cs.cd == ElemType::f32 ? 1e-6 : std::ldexp(1.0, -type_info(cs.cd).man_bits));
        if (!(std::fabs(got - want) <= tol)) {
          if (++bad <= 5)
            ADD_FAILURE() << "batch " << bi << " D[" << i << "][" << j << "] = " << got << ", want " << want << " (tol " << tol << ")";
        }
      }
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace

class MatmulGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!test::gpu_handle(why)) GTEST_SKIP() << why;
  }
};

TEST_F(MatmulGpu, EveryTypeAgainstADenseReference) {
  Handle h(Device::gpu);
  std::mt19937_64 rng(seed());
  const Case cases[] = {
      {ElemType::bf16, ElemType::bf16, ElemType::f32, 256, 128, 256},
      {ElemType::bf16, ElemType::bf16, ElemType::bf16, 200, 77, 320},
      {ElemType::f16, ElemType::f16, ElemType::f16, 130, 129, 64},
      {ElemType::tf32, ElemType::tf32, ElemType::f32, 128, 64, 96},
      {ElemType::s8, ElemType::s8, ElemType::s32, 144, 40, 320},
      {ElemType::u8, ElemType::u8, ElemType::s32, 64, 64, 128},
      {ElemType::s4, ElemType::s4, ElemType::s32, 128, 24, 256},
      {ElemType::e4m3, ElemType::e4m3, ElemType::f32, 128, 128, 192},
      {ElemType::e5m2, ElemType::e4m3, ElemType::bf16, 100, 50, 128},
  };
  for (const Case& c : cases) run_case(c, h, rng);
}

TEST_F(MatmulGpu, LayoutsBatchesAndEpilogues) {
  Handle h(Device::gpu);
  std::mt19937_64 rng(seed() + 1);
  Case c{ElemType::bf16, ElemType::bf16, ElemType::f32, 160, 96, 128};
  c.b_order = Order::row_major;
  run_case(c, h, rng);
  c.cd_order = Order::col_major;
  c.alpha = 0.5f, c.beta = -2.f;
  run_case(c, h, rng);
  c.batch = 3;
  run_case(c, h, rng);
  c.a_per_batch = true;
  c.bias = true;
  c.act = Activation::relu;
  run_case(c, h, rng);
  c.act = Activation::gelu;
  c.b_order = Order::col_major;
  run_case(c, h, rng);
  Case q{ElemType::s8, ElemType::s8, ElemType::s8, 128, 64, 128};
  q.alpha = 1.f / 64, q.bias = true;
  run_case(q, h, rng);
}

// Shapes that take the sm90 kernel's other paths on an H100: split K (few tiles, long K), an odd
// number of fp8 stages (its stage pairs get a padding stage), every tile width, edges in M and N.
TEST_F(MatmulGpu, SplitKAndTileEdges) {
  Handle h(Device::gpu);
  std::mt19937_64 rng(seed() + 3);
  const Case cases[] = {
      {ElemType::bf16, ElemType::bf16, ElemType::bf16, 256, 16, 2048},   // split K, N = 16
      {ElemType::e4m3, ElemType::e4m3, ElemType::f32, 130, 24, 4096},    // split K, fp8
      {ElemType::s8, ElemType::s8, ElemType::s32, 128, 8, 2048},         // split K, wrapping s32 sums
      {ElemType::e4m3, ElemType::e5m2, ElemType::f32, 128, 40, 320},     // 5 K steps: odd stage count
      {ElemType::f16, ElemType::f16, ElemType::f32, 300, 300, 512},      // 256-wide tile, edges
      {ElemType::tf32, ElemType::tf32, ElemType::f32, 192, 100, 256},    // 128-wide tile, edges
  };
  for (const Case& c : cases) run_case(c, h, rng);
  Case fast{ElemType::e4m3, ElemType::e4m3, ElemType::f32, 256, 300, 1024};  // fp8 fast accumulation: 256-wide tile
  fast.fast = true;
  run_case(fast, h, rng);
  Case c{ElemType::bf16, ElemType::bf16, ElemType::f32, 200, 12, 4096};  // split K with every epilogue feature
  c.batch = 2, c.a_per_batch = true, c.cd_order = Order::col_major, c.b_order = Order::row_major;
  c.alpha = 0.5f, c.beta = 1.5f, c.bias = true, c.act = Activation::gelu;
  run_case(c, h, rng);
}
