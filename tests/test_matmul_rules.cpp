// SPDX-License-Identifier: BSD-3-Clause
// The matmul API's rules that both backends share, checked on the CPU backend: what a NaN or
// Inf in B does where A's metadata names no position, integer D with a non-finite bias, pointer
// alignment and aliasing, b_alignment, device binding arguments, the type table, logging.
// The GPU tests (tests/gpu/test_robustness_gpu.cpp) run the same inputs on both backends.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "spmma/error.hpp"
#include "spmma/log.hpp"
#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"
#include "test_util.hpp"

namespace spmma {
namespace {

using T = ElemType;

using test::expect_error;

uint32_t seed() { return static_cast<uint32_t>(test::seed()); }

// Positions (columns) of row r that the metadata names: the tensor cores read B there only.
// Written from docs/layouts.md, independently of the library: 2:4 and 4:8 pair-wise name the
// groups (elements / pairs) nibble & 3 and nibble >> 2; 1:2 names element 0 (0x4) or 1 (0xE).
std::vector<int64_t> named_columns(const Compressed& c, int64_t r) {
  const PatternInfo& pi = pattern_info(c.pattern);
  std::vector<int64_t> cols;
  for (int64_t ch = 0; ch < c.chunks_per_row(); ++ch) {
    const unsigned nib = c.nibble(r, ch);
    std::vector<int> groups;
    if (c.pattern == Pattern::p1_2) groups = {nib == 0x4 ? 0 : 1};
    else groups = {static_cast<int>(nib & 3), static_cast<int>((nib >> 2) & 3)};
    for (int g : groups)
      for (int e = 0; e < pi.group; ++e) cols.push_back(ch * pi.chunk + g * pi.group + e);
  }
  return cols;
}

// D = A·B (f32 D, B column-major n x k) on the CPU backend, for a dense pruned A.
std::vector<float> cpu_product(T t, const Matrix& a, const std::vector<uint64_t>& bcol, int64_t n) {
  MatmulDesc d;
  d.m = a.rows, d.n = n, d.k = a.cols;
  d.a_type = d.b_type = t, d.c_type = d.d_type = T::f32;
  d.b_order = Order::col_major;
  Handle h(Device::cpu);
  std::vector<uint8_t> am(static_cast<size_t>(a.rows * a.cols * 4)), bm(bcol.size() * 4);
  const int w = memory_bits(t);
  for (int64_t i = 0; i < a.rows * a.cols; ++i) store_element(am.data(), i, w, a.bits[static_cast<size_t>(i)]);
  for (size_t i = 0; i < bcol.size(); ++i) store_element(bm.data(), static_cast<int64_t>(i), w, bcol[i]);
  SparseMatrix s = compress(h, d, am.data(), 0, 0, PruneMode::check);
  std::vector<float> out(static_cast<size_t>(a.rows * n), -1.0f);
  Plan(h, d).run(s, bm.data(), nullptr, out.data(), 1.0f, 0.0f);
  return out;
}

// An Inf or NaN in B reaches D only through the positions A's metadata names; at a named
// padding slot its stored zero gives 0·Inf = NaN. The CPU backend gives the tensor cores' answer,
// not the dense product's.
TEST(MatmulRules, NonFiniteBOnlyThroughNamedPositions) {
  std::mt19937 rng(seed());
  for (T t : {T::bf16, T::f16, T::tf32, T::e4m3, T::e5m2}) {
    SCOPED_TRACE(std::string(type_name(t)));
    const int64_t m = 9, n = 6, k = t == T::tf32 ? 32 : t == T::bf16 || t == T::f16 ? 64 : 128;
    Matrix a(t, m, k);
    std::normal_distribution<double> nd;
    for (auto& x : a.bits) x = encode(t, nd(rng));
    for (int i = 0; i < 40; ++i) a.bits[rng() % a.bits.size()] = 0;  // chunks with padding slots
    a = prune_magnitude(a);
    const Compressed c = compress(a);
    std::vector<uint64_t> b(static_cast<size_t>(n * k));
    for (auto& x : b) x = encode(t, nd(rng));
    // Columns of B: 0 finite; 1, 2, 3 an Inf / -Inf / NaN at a row no named position of A row 0
    // reads... and at rows named elsewhere; 4 NaN everywhere unnamed in row 0; 5 Inf at a row
    // named in row 0.
    const auto named0 = named_columns(c, 0);
    std::vector<char> is_named0(static_cast<size_t>(k), 0);
    for (int64_t col : named0) is_named0[static_cast<size_t>(col)] = 1;
    const uint64_t inf = t == T::e4m3 ? 0x7F : encode(t, INFINITY), ninf = t == T::e4m3 ? 0xFF : encode(t, -INFINITY),
                   nan = encode(t, NAN);  // e4m3 has no Inf: its NaN stands in
    int64_t unnamed = 0;
    while (is_named0[static_cast<size_t>(unnamed)]) ++unnamed;
    b[static_cast<size_t>(1 * k + unnamed)] = inf;
    b[static_cast<size_t>(2 * k + unnamed)] = ninf;
    b[static_cast<size_t>(3 * k + unnamed)] = nan;
    for (int64_t kk = 0; kk < k; ++kk)
      if (!is_named0[static_cast<size_t>(kk)]) b[static_cast<size_t>(4 * k + kk)] = nan;
    b[static_cast<size_t>(5 * k + named0[0])] = inf;
    const std::vector<float> got = cpu_product(t, a, b, n);
    // Reference: the sum over named positions, in double.
    for (int64_t i = 0; i < m; ++i) {
      const auto cols = named_columns(c, i);
      for (int64_t j = 0; j < n; ++j) {
        double want = 0.0, mag = 0.0;
        for (int64_t kk : cols) {
          const double x = decode(t, a.at(i, kk)) * decode(t, b[static_cast<size_t>(j * k + kk)]);
          want += x, mag += std::fabs(x);
        }
        const float g = got[static_cast<size_t>(i * n + j)];
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(g)) << "D(" << i << ", " << j << ") = " << g << ", want NaN";
        } else if (std::isinf(want)) {
          EXPECT_EQ(g, static_cast<float>(want)) << "D(" << i << ", " << j << ")";
        } else {
          EXPECT_NEAR(g, want, 1e-5 * mag + 1e-30) << "D(" << i << ", " << j << ")";
        }
      }
    }
    // Row 0 never reads the unnamed rows of columns 1..4: finite there (the dense product of the
    // decompressed A would be NaN).
    for (int64_t j = 1; j <= 4; ++j) EXPECT_TRUE(std::isfinite(got[static_cast<size_t>(j)])) << "D(0, " << j << ")";
  }
}

// A named padding slot (a stored zero) times Inf is NaN, as on the hardware.
TEST(MatmulRules, InfAtANamedPaddingSlotGivesNaN) {
  const T t = T::bf16;
  Matrix a(t, 1, 32);  // chunk 0: only element 0 non-zero -> nibble 0x8 names 0 and 2 (padding)
  a.at(0, 0) = encode(t, 1.5);
  for (int64_t ch = 1; ch < 8; ++ch) a.at(0, ch * 4 + 1) = encode(t, 1.0), a.at(0, ch * 4 + 3) = encode(t, 1.0);
  ASSERT_EQ(compress(a).nibble(0, 0), 0x8);
  std::vector<uint64_t> b(32, encode(t, 1.0));
  b[2] = encode(t, INFINITY);  // named padding slot
  b[1] = encode(t, NAN);       // unnamed in chunk 0
  const auto got = cpu_product(t, a, b, 1);
  EXPECT_TRUE(std::isnan(got[0])) << got[0];
  b[2] = encode(t, 1.0);
  const auto fin = cpu_product(t, a, b, 1);
  EXPECT_FLOAT_EQ(fin[0], 1.5f + 14.0f);
}

// Integer D: NaN -> 0 and ±Inf -> the type's limits (PTX's cvt.rni.sat), on both backends; the
// bias is not read on the host, so neither backend refuses it.
TEST(MatmulRules, IntegerOutputWithNonFiniteBias) {
  for (T d : {T::s32, T::s8}) {
    SCOPED_TRACE(std::string(type_name(d)));
    MatmulDesc desc;
    desc.m = 4, desc.n = 3, desc.k = 64;
    desc.a_type = desc.b_type = T::s8, desc.c_type = desc.d_type = d;
    desc.bias = true;
    std::vector<int8_t> a(static_cast<size_t>(desc.m * desc.k), 0), b(static_cast<size_t>(desc.k * desc.n), 1);
    for (int64_t r = 0; r < desc.m; ++r) a[static_cast<size_t>(r * desc.k)] = 2;  // acc = 2 everywhere
    Handle h(Device::cpu);
    SparseMatrix s = compress(h, desc, a.data(), 0, 0, PruneMode::check);
    const float bias[4] = {NAN, INFINITY, -INFINITY, 0.5f};
    std::vector<int32_t> out32(12, 99);
    std::vector<int8_t> out8(12, 99);
    void* out = d == T::s32 ? static_cast<void*>(out32.data()) : static_cast<void*>(out8.data());
    Plan(h, desc).run(s, b.data(), nullptr, out, 1.0f, 0.0f, bias);
    const int64_t hi = d == T::s32 ? INT32_MAX : 127, lo = d == T::s32 ? INT32_MIN : -128;
    const int64_t want[4] = {0, hi, lo, 2};  // 2.5 rounds to even: 2
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 3; ++j) {
        const int64_t g = d == T::s32 ? out32[static_cast<size_t>(r * 3 + j)] : out8[static_cast<size_t>(r * 3 + j)];
        EXPECT_EQ(g, want[r]) << "row " << r << " col " << j;
      }
  }
}

MatmulDesc small_desc() {
  MatmulDesc d;
  d.m = 8, d.n = 4, d.k = 32;
  d.a_type = d.b_type = d.c_type = d.d_type = T::bf16;
  d.b_order = Order::col_major;
  return d;
}

TEST(MatmulRules, BAlignmentIsValidated) {
  MatmulDesc d = small_desc();
  d.b_alignment = 3;
  expect_error([&] { d.validate(); }, Status::invalid_argument, {"MatmulDesc.b_alignment = 3", "power of two"});
  d.b_alignment = 1;  // below bf16's 2 bytes
  expect_error([&] { d.validate(); }, Status::invalid_argument, {"b_alignment = 1", "2 bytes for bf16"});
  d.b_alignment = 2;
  d.validate();
  d.a_type = d.b_type = T::s4, d.c_type = d.d_type = T::s32, d.k = 128;
  d.b_alignment = 1;  // 4-bit: a byte
  d.validate();
}

// Every pointer rule of Plan::run and compress, on the CPU backend (the same code checks both).
TEST(MatmulRules, PointerAlignmentAndAliasing) {
  const MatmulDesc d = small_desc();  // C/D 8 x 4 bf16 (64 bytes), B 4 x 32 bf16 (256 bytes)
  Handle h(Device::cpu);
  alignas(64) static uint8_t mem[8192];
  for (size_t i = 0; i < sizeof mem; ++i) mem[i] = static_cast<uint8_t>(i % 7 == 0 ? 0x3F : 0);
  uint8_t* a = mem;          // 8 x 32 bf16 = 512 bytes
  uint8_t* b = mem + 1024;   // 256 bytes
  uint8_t* c = mem + 2048;   // 64 bytes
  uint8_t* dd = mem + 3072;  // 64 bytes
  float* bias = reinterpret_cast<float*>(mem + 4096);
  std::memset(a, 0, 512);
  SparseMatrix s = compress(h, d, a, 0, 0, PruneMode::check);
  Plan p(h, d);
  const auto IA = Status::invalid_argument;
  expect_error([&] { compress(h, d, a + 1, 0, 0, PruneMode::check); }, IA, {"compress: a", "2-byte aligned"});
  expect_error([&] { p.run(s, b + 1, nullptr, dd, 1, 0); }, IA, {"Plan::run: b", "16-byte aligned", "b_alignment = 16"});
  expect_error([&] { p.run(s, b + 8, nullptr, dd, 1, 0); }, IA, {"Plan::run: b", "16-byte aligned"});
  expect_error([&] { p.run(s, b, c + 1, dd, 1, 1); }, IA, {"Plan::run: c", "2-byte aligned"});
  expect_error([&] { p.run(s, b, nullptr, dd + 1, 1, 0); }, IA, {"Plan::run: d", "2-byte aligned"});
  MatmulDesc db = d;
  db.bias = true;
  Plan pb(h, db);
  expect_error([&] { pb.run(s, b, nullptr, dd, 1, 0, reinterpret_cast<float*>(mem + 4098)); }, IA, {"bias", "4-byte"});
  // b_alignment = 2: a B at +2 bytes is fine.
  MatmulDesc d2 = d;
  d2.b_alignment = 2;
  Plan p2(h, d2);
  p2.run(s, b + 2, nullptr, dd, 1, 0);
  // Aliasing: C and D overlapping without being the same; D over B, over the bias.
  expect_error([&] { p.run(s, b, c, c + 8, 1, 1); }, IA, {"C [", "D [", "overlap"});
  expect_error([&] { p.run(s, b, nullptr, b + 64, 1, 0); }, IA, {"D [", "overlaps b"});
  expect_error([&] { pb.run(s, b, nullptr, reinterpret_cast<uint8_t*>(bias) + 4, 1, 0, bias); }, IA, {"overlaps bias"});
  // In place needs one type, leading dimension and stride.
  MatmulDesc dl = d;
  dl.ldd = 8;  // D with a padded ld, C packed (ldc 4)
  Plan pl(h, dl);
  expect_error([&] { pl.run(s, b, c, c, 1, 1); }, IA, {"c == d", "ldc 4", "ldd 8"});
  MatmulDesc dt = d;
  dt.c_type = T::f32;
  Plan pt(h, dt);
  expect_error([&] { pt.run(s, b, c, c, 1, 1); }, IA, {"c == d", "f32", "bf16"});
  // Same type and layout: in place is fine; C is not read when beta == 0, so its pointer is free.
  p.run(s, b, c, c, 1, 1);
  p.run(s, b, dd + 1, dd, 1, 0);
}

TEST(MatmulRules, HandleArguments) {
  expect_error([] { Handle h(Device::gpu, -2); }, Status::invalid_argument, {"gpu_ordinal = -2"});
  Handle c(Device::cpu);
  EXPECT_EQ(c.gpu_ordinal(), -1);
  EXPECT_EQ(c.fallback_reason(), "");
  Handle a(Device::automatic);
  if (a.device() == Device::cpu) {
    EXPECT_NE(a.fallback_reason(), "") << "automatic took the CPU without saying why";
    expect_error([] { Handle g(Device::gpu); }, Status::not_supported, {"no GPU"});
  } else {
    EXPECT_EQ(a.fallback_reason(), "");
    EXPECT_GE(a.gpu_ordinal(), 0);
  }
  expect_error([] { Handle g(Device::gpu, 4096); }, Status::not_supported, {"no GPU"});
}

// One table: every listed combination plans and runs; the documented ones are all listed.
TEST(MatmulRules, SupportedTypesPlanAndRun) {
  Handle h(Device::cpu);
  const auto list = supported_types(h);
  EXPECT_EQ(list.size(), supported_types(Device::cpu).size());
  EXPECT_EQ(list.size(), 7u * 5 + 8u * 2);
  for (const TypeCombo& t : list) {
    SCOPED_TRACE(std::string(type_name(t.a)) + " " + std::string(type_name(t.b)) + " " + std::string(type_name(t.cd)));
    MatmulDesc d;
    d.m = 3, d.n = 2, d.k = 512 / type_info(t.a).bits;
    d.a_type = t.a, d.b_type = t.b, d.c_type = d.d_type = t.cd;
    d.b_order = Order::col_major;
    const size_t bytes = static_cast<size_t>(d.m * d.k * 4 + 64);
    std::vector<uint8_t> a(bytes, 0), b(bytes, 0x11), out(bytes, 0);
    SparseMatrix s = compress(h, d, a.data(), 0, 0, PruneMode::check);
    Plan(h, d).run(s, b.data(), nullptr, out.data(), 1, 0);
  }
}

// Logging: the level, the callback, and that nothing is logged at level off.
TEST(MatmulRules, LoggingCallback) {
  std::vector<std::string> got;
  set_log_callback([&](LogLevel l, std::string_view where, std::string_view msg) {
    got.push_back(std::to_string(static_cast<int>(l)) + " " + std::string(where) + ": " + std::string(msg));
  });
  const LogLevel before = log_level();
  set_log_level(LogLevel::off);
  detail::log(LogLevel::error, "test", "hidden");
  set_log_level(LogLevel::hints);
  detail::log(LogLevel::hints, "test", "shown");
  detail::log(LogLevel::info, "test", "above the level");
  set_log_level(before);
  set_log_callback(nullptr);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "3 test: shown");
  expect_error([] { set_log_level(static_cast<LogLevel>(9)); }, Status::invalid_argument, {"LogLevel"});
  expect_error([] { set_log_file("/nonexistent-dir/x.log"); }, Status::io_error, {"/nonexistent-dir/x.log"});
}

// PlanOptions pin GPU kernels' choices: the CPU refuses any pin, every backend refuses values
// that are not options at all; Plan::info says what runs.
TEST(MatmulRules, PlanOptionsOnTheCpu) {
  Handle h(Device::cpu);
  const MatmulDesc d = small_desc();
  EXPECT_EQ(Plan(h, d).info().device, Device::cpu);
  PlanOptions p;
  p.tile_n = 128;
  expect_error([&] { Plan(h, d, p); }, Status::not_supported, {"PlanOptions", "CPU backend has none"});
  p = {};
  p.kernel = KernelFamily::sm80;
  expect_error([&] { Plan(h, d, p); }, Status::not_supported, {"CPU backend has none"});
  p = {};
  p.tile_m = 64;
  expect_error([&] { Plan(h, d, p); }, Status::not_supported, {"CPU backend has none"});
  p.tile_m = -32;
  expect_error([&] { Plan(h, d, p); }, Status::invalid_argument, {"tile_m = -32", "must not be negative"});
  p = {};
  p.issuers = 2;
  expect_error([&] { Plan(h, d, p); }, Status::not_supported, {"CPU backend has none"});
  p.issuers = -1;
  expect_error([&] { Plan(h, d, p); }, Status::invalid_argument, {"issuers = -1", "must not be negative"});
  p = {};
  p.splits = -1;
  expect_error([&] { Plan(h, d, p); }, Status::invalid_argument, {"splits = -1", "must not be negative"});
  p = {};
  p.promotion_k = 256;
  expect_error([&] { Plan(h, d, p); }, Status::not_supported, {"CPU backend has none"});
  p.promotion_k = -1;
  expect_error([&] { Plan(h, d, p); }, Status::invalid_argument, {"promotion_k = -1", "must not be negative"});
  p = {};
  p.kernel = static_cast<KernelFamily>(7);
  expect_error([&] { Plan(h, d, p); }, Status::invalid_argument, {"PlanOptions.kernel = 7"});
  p = {};
  p.grid = GridKind::per_tile;
  expect_error([&] { Plan(h, d, p); }, Status::not_supported, {"CPU backend has none"});
  p.grid = static_cast<GridKind>(9);
  expect_error([&] { Plan(h, d, p); }, Status::invalid_argument, {"PlanOptions.grid = 9", "GridKind"});
  EXPECT_FALSE(Plan(h, d).info().persistent);
}

}  // namespace
}  // namespace spmma
