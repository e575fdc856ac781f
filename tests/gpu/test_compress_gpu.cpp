// SPDX-License-Identifier: BSD-3-Clause
// GPU compress through the public API (spmma::compress with a GPU handle) against the host,
// bit for bit: PruneMode::magnitude gives compress(prune_magnitude(A)), PruneMode::check gives
// compress(A) or names the first violating chunk as check_pattern does. Inputs are full of -0.0,
// NaNs of several payloads and both signs, ±Inf, magnitude ties and tf32 values whose ignored
// low 13 bits are set, for every type the GPU compresses, odd M and several K.
// (tests/test_chunk_select.cpp runs the kernel's own code on the CPU; this runs it on the GPU.)
// Label `gpu`: skipped where no GPU is usable. The seed is printed; SPMMA_SEED=<n> replays.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "spmma/error.hpp"
#include "test_util.hpp"
#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

using namespace spmma;

namespace {

using test::seed;

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

constexpr ElemType kGpuTypes[] = {ElemType::bf16, ElemType::f16, ElemType::tf32, ElemType::e4m3, ElemType::e5m2,
                                  ElemType::s8,   ElemType::u8,  ElemType::s4,   ElemType::u4};

// Zero patterns (+0, -0.0; tf32: zeros with low bits), NaNs (payloads, signs), Infs, ties.
using test::pick;
using test::Pools;
using test::pools_of;
using test::random_elem;

Matrix random_dense(std::mt19937_64& rng, ElemType t, int64_t rows, int64_t cols) {
  const Pools p = pools_of(t);
  Matrix m(t, rows, cols);
  for (auto& b : m.bits) b = random_elem(rng, t, p);
  return m;
}

// Satisfies the pattern: per chunk at most `kept` groups keep random elements, the rest get zero
// patterns (-0.0, tf32 low bits) — which the padding slots then hold.
Matrix random_sparse(std::mt19937_64& rng, ElemType t, int64_t rows, int64_t cols) {
  const Pools p = pools_of(t);
  const PatternInfo& pi = pattern_info(pattern_for(t));
  const int groups = pi.chunk / pi.group, kept = pi.kept / pi.group;
  Matrix m = random_dense(rng, t, rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c0 = 0; c0 < cols; c0 += pi.chunk) {
      std::vector<int> g(static_cast<size_t>(groups));
      for (int i = 0; i < groups; ++i) g[static_cast<size_t>(i)] = i;
      std::shuffle(g.begin(), g.end(), rng);
      const int live = static_cast<int>(rng() % static_cast<uint64_t>(kept + 1));
      for (int i = live; i < groups; ++i)
        for (int e = 0; e < pi.group; ++e) m.at(r, c0 + g[static_cast<size_t>(i)] * pi.group + e) = pick(rng, p.zeros);
    }
  return m;
}

// Device copy of batch entries (each rows x cols, leading dimension lda), stride elements apart.
struct DeviceA {
  void* ptr = nullptr;
  DeviceA(const std::vector<Matrix>& as, int64_t lda, int64_t stride) {
    const int b = memory_bits(as[0].type);
    std::vector<uint8_t> bytes(static_cast<size_t>((stride * static_cast<int64_t>(as.size()) * b + 7) / 8), 0xA5);
    for (size_t i = 0; i < as.size(); ++i)
      for (int64_t r = 0; r < as[i].rows; ++r)
        for (int64_t c = 0; c < as[i].cols; ++c)
          store_element(bytes.data(), static_cast<int64_t>(i) * stride + r * lda + c, b, as[i].at(r, c));
    EXPECT_EQ(cudaMalloc(&ptr, bytes.size()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceA() { cudaFree(ptr); }
};

MatmulDesc desc_for(ElemType t, int64_t m, int64_t k, int64_t batch = 1) {
  MatmulDesc d;
  d.m = m, d.n = 8, d.k = k;
  d.a_type = t, d.b_type = t;
  d.c_type = d.d_type = type_info(t).is_float ? ElemType::f32 : ElemType::s32;
  d.b_order = Order::col_major;
  d.batch = batch, d.a_per_batch = batch > 1;
  return d;
}

// Values and metadata equal, else the first differences (row, column, bits).
void expect_same(const Compressed& got, const Compressed& want) {
  ASSERT_EQ(got.values.bits.size(), want.values.bits.size());
  ASSERT_EQ(got.metadata.size(), want.metadata.size());
  int bad = 0;
  for (size_t i = 0; i < want.values.bits.size(); ++i)
    if (got.values.bits[i] != want.values.bits[i] && ++bad <= 5) {
      const auto row = static_cast<int64_t>(i) / want.values.cols, col = static_cast<int64_t>(i) % want.values.cols;
      ADD_FAILURE() << "value row " << row << ", col " << col << " (chunk " << col / pattern_info(want.pattern).kept
                    << "): " << hex(got.values.bits[i]) << ", host " << hex(want.values.bits[i]);
    }
  for (size_t i = 0; i < want.metadata.size(); ++i)
    if (got.metadata[i] != want.metadata[i] && ++bad <= 10)
      ADD_FAILURE() << "metadata word " << i << " (row " << static_cast<int64_t>(i) / want.meta_words_per_row()
                    << "): " << hex(got.metadata[i]) << ", host " << hex(want.metadata[i]);
  EXPECT_EQ(bad, 0);
}

class CompressGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
      GTEST_SKIP() << "no CUDA GPU usable here (" << (e != cudaSuccess ? cudaGetErrorString(e) : "no device")
                   << "): GPU compress not tested";
    Handle probe(Device::automatic);
    if (probe.device() != Device::gpu) GTEST_SKIP() << "the GPU is not usable by spmma: " << probe.fallback_reason();
  }
};

TEST_F(CompressGpu, BothModesEqualTheHostBitForBit) {
  Handle h(Device::gpu);
  std::mt19937_64 rng(seed() + 10);
  for (ElemType t : kGpuTypes) {
    const Pattern p = pattern_for(t);
    const int chunk = pattern_info(p).chunk;
    const int64_t step = 512 / type_info(t).bits;  // dense K of one sparse MMA step
    for (int64_t m : {1, 17, 130})
      for (int64_t steps : {1, 3, 5}) {
        const int64_t k = step * steps;
        const int64_t lda = steps == 3 ? k + 2 * chunk : k;  // a strided A too
        SCOPED_TRACE(std::string(type_name(t)) + " m=" + std::to_string(m) + " k=" + std::to_string(k) +
                     " lda=" + std::to_string(lda));
        const MatmulDesc d = desc_for(t, m, k);
        {
          SCOPED_TRACE("magnitude");
          const Matrix a = random_dense(rng, t, m, k);
          const DeviceA da({a}, lda, m * lda);
          const SparseMatrix sm = compress(h, d, da.ptr, lda, 0, PruneMode::magnitude);
          expect_same(sm.to_host(0), spmma::compress(prune_magnitude(a, p), p));
        }
        {
          SCOPED_TRACE("magnitude on a matrix that satisfies the pattern");
          const Matrix a = random_sparse(rng, t, m, k);
          const DeviceA da({a}, lda, m * lda);
          const SparseMatrix sm = compress(h, d, da.ptr, lda, 0, PruneMode::magnitude);
          expect_same(sm.to_host(0), spmma::compress(prune_magnitude(a, p), p));
        }
        {
          SCOPED_TRACE("check: padding slots keep -0.0 and tf32 low bits");
          const Matrix a = random_sparse(rng, t, m, k);
          ASSERT_FALSE(check_pattern(a, p).has_value());
          const DeviceA da({a}, lda, m * lda);
          const SparseMatrix sm = compress(h, d, da.ptr, lda, 0, PruneMode::check);
          expect_same(sm.to_host(0), spmma::compress(a, p));
        }
        {
          SCOPED_TRACE("check: the first violating chunk is named");
          Matrix a = random_sparse(rng, t, m, k);
          const std::vector<uint64_t> nans = pools_of(t).nans;
          for (int i = 0; i < 3; ++i) {  // a few violating chunks (1.0 and NaNs); the first in row-major order counts
            const int64_t r = static_cast<int64_t>(rng() % static_cast<uint64_t>(m));
            const int64_t c0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(k / chunk)) * chunk;
            for (int e = 0; e < chunk; ++e) a.at(r, c0 + e) = (e % 2 && !nans.empty()) ? pick(rng, nans) : encode(t, 1.0);
          }
          const auto v = check_pattern(a, p);
          ASSERT_TRUE(v.has_value());
          const DeviceA da({a}, lda, m * lda);
          try {
            compress(h, d, da.ptr, lda, 0, PruneMode::check);
            ADD_FAILURE() << "a violating A was accepted (host: " << v->message << ")";
          } catch (const Error& e) {
            EXPECT_EQ(e.code(), Status::pattern_violation) << e.what();
            const std::string want = "row " + std::to_string(v->row) + ", chunk " + std::to_string(v->chunk) + " ";
            EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what() << " vs host: " << v->message;
          }
        }
      }
  }
}

// A batch of A matrices (a_per_batch), each entry compressed like a single one.
TEST_F(CompressGpu, BatchEntriesEqualTheHost) {
  Handle h(Device::gpu);
  std::mt19937_64 rng(seed() + 11);
  for (ElemType t : kGpuTypes) {
    SCOPED_TRACE(std::string(type_name(t)));
    const Pattern p = pattern_for(t);
    const int64_t m = 33, k = 2 * 512 / type_info(t).bits, lda = k, stride = m * lda + 4 * pattern_info(p).chunk;
    const MatmulDesc d = desc_for(t, m, k, 3);
    for (PruneMode mode : {PruneMode::magnitude, PruneMode::check}) {
      std::vector<Matrix> as;
      for (int i = 0; i < 3; ++i) as.push_back(mode == PruneMode::check ? random_sparse(rng, t, m, k) : random_dense(rng, t, m, k));
      const DeviceA da(as, lda, stride);
      const SparseMatrix sm = compress(h, d, da.ptr, lda, stride, mode);
      for (int i = 0; i < 3; ++i) {
        SCOPED_TRACE("batch entry " + std::to_string(i) + (mode == PruneMode::check ? " check" : " magnitude"));
        const Matrix& a = as[static_cast<size_t>(i)];
        expect_same(sm.to_host(i), spmma::compress(mode == PruneMode::check ? a : prune_magnitude(a, p), p));
      }
    }
  }
}

}  // namespace
