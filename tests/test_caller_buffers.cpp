// SPDX-License-Identifier: BSD-3-Clause
// The matmul API's caller-owned memory (include/spmma/matmul.hpp, "caller-owned memory") on the
// CPU backend: compressed_layout, compress_into, import_into, borrow, export_interchange,
// decompress_into. The expected bytes are the host library's own: to_interchange of
// compress(prune_magnitude(A)) entry by entry (tests/test_sparse.cpp proves those), and every
// product equals, bit for bit, the product of an A compressed into spmma's own memory. Inputs are
// fresh random bit patterns (NaN, ±Inf, -0.0 included) where only bytes are compared; outputs
// are poisoned first.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "spmma/error.hpp"
#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"
#include "test_util.hpp"

namespace spmma {
namespace {

using T = ElemType;

struct Case {
  T a, b, cd;
  int64_t m, k;
};
// One type of each width and pattern: 16-bit 2:4, fp8, integer 8-bit, tf32 1:2, 4-bit 4:8.
const Case kCases[] = {{T::bf16, T::bf16, T::bf16, 37, 96},  {T::e4m3, T::e4m3, T::f32, 19, 128},
                       {T::s8, T::s8, T::s32, 21, 64},        {T::tf32, T::tf32, T::f32, 13, 48},
                       {T::s4, T::s4, T::s32, 9, 256}};

MatmulDesc desc_of(const Case& c, int64_t batch = 1) {
  MatmulDesc d;
  d.m = c.m, d.k = c.k, d.n = 6;  // even: a 4-bit B row starts on a byte
  d.a_type = c.a, d.b_type = c.b, d.c_type = d.d_type = c.cd;
  d.batch = batch;
  d.a_per_batch = batch > 1;
  return d;
}

// Dense A entries (batch x m x k, packed) as bytes: random bit patterns (`special`: NaN, Inf,
// zeros, ties too) or small integers (finite products).
std::vector<uint8_t> dense_a(std::mt19937_64& rng, const MatmulDesc& d, bool special) {
  const int bits = memory_bits(d.a_type);
  const int64_t n = d.m * d.k * (d.a_per_batch ? d.batch : 1);
  std::vector<uint8_t> a(static_cast<size_t>((n * bits + 7) / 8));
  const test::Pools pools = test::pools_of(d.a_type);
  const bool is_signed = type_info(d.a_type).is_signed;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t v = special ? test::random_elem(rng, d.a_type, pools)
                               : encode(d.a_type, static_cast<double>(static_cast<int>(rng() % 7) - (is_signed ? 3 : 0)));
    store_element(a.data(), i, bits, v);
  }
  return a;
}

// The host library's interchange bytes of the pruned, compressed entries.
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> expected_interchange(const MatmulDesc& d, const std::vector<uint8_t>& a) {
  const int bits = memory_bits(d.a_type);
  const CompressedLayout x = interchange_layout(d);
  std::vector<uint8_t> v(x.value_bytes), m(x.metadata_bytes);
  const int64_t entries = d.a_per_batch ? d.batch : 1;
  for (int64_t e = 0; e < entries; ++e) {
    Matrix dense(d.a_type, d.m, d.k);
    for (int64_t i = 0; i < d.m * d.k; ++i) dense.bits[static_cast<size_t>(i)] = load_element(a.data(), e * d.m * d.k + i, bits);
    const Compressed c = compress(prune_magnitude(dense));
    to_interchange(c, v.data() + static_cast<size_t>(e) * c.value_bytes(), m.data() + static_cast<size_t>(e) * c.metadata_bytes());
  }
  return {v, m};
}

// D of a run (batch entries packed), poisoned before.
std::vector<uint8_t> run(Handle& h, const MatmulDesc& d, const SparseMatrix& a, const std::vector<uint8_t>& b) {
  Plan plan(h, d);
  const int64_t elems = d.m * d.n * d.batch;
  std::vector<uint8_t> out(static_cast<size_t>((elems * memory_bits(d.d_type) + 7) / 8), 0xA5);
  plan.run(a, b.data(), nullptr, out.data(), 1.f, 0.f);
  return out;
}

std::vector<uint8_t> random_b(std::mt19937_64& rng, const MatmulDesc& d) {
  const int bits = memory_bits(d.b_type);
  const int64_t n = d.k * d.n * d.batch;
  std::vector<uint8_t> b(static_cast<size_t>((n * bits + 7) / 8));
  const bool is_signed = type_info(d.b_type).is_signed;
  for (int64_t i = 0; i < n; ++i)
    store_element(b.data(), i, bits, encode(d.b_type, static_cast<double>(static_cast<int>(rng() % 5) - (is_signed ? 2 : 0))));
  return b;
}

TEST(CallerBuffers, TheCpuLayoutIsTheInterchangeForm) {
  Handle h(Device::cpu);
  for (const Case& c : kCases)
    for (int64_t batch : {1, 3}) {
      const MatmulDesc d = desc_of(c, batch);
      const CompressedLayout l = compressed_layout(h, d), x = interchange_layout(d);
      Compressed shape;
      shape.type = c.a, shape.pattern = pattern_for(c.a), shape.rows = c.m, shape.cols = c.k;
      EXPECT_EQ(l.name, "interchange");
      EXPECT_EQ(l.value_bytes, shape.value_bytes() * static_cast<size_t>(batch)) << type_name(c.a);
      EXPECT_EQ(l.metadata_bytes, shape.metadata_bytes() * static_cast<size_t>(batch));
      EXPECT_EQ(l.value_bytes, x.value_bytes);
      EXPECT_EQ(l.metadata_bytes, x.metadata_bytes);
      EXPECT_GE(l.alignment, 2u);
    }
}

TEST(CallerBuffers, CompressIntoWritesTheInterchangeBytesAndRunsFromThem) {
  std::mt19937_64 rng(test::seed());
  Handle h(Device::cpu);
  for (const Case& c : kCases)
    for (int64_t batch : {1, 3}) {
      SCOPED_TRACE(std::string(type_name(c.a)) + " batch " + std::to_string(batch));
      const MatmulDesc d = desc_of(c, batch);
      const CompressedLayout l = compressed_layout(h, d);
      // Bytes: any bit pattern.
      const std::vector<uint8_t> special = dense_a(rng, d, true);
      std::vector<uint8_t> v(l.value_bytes, 0x5A), m(l.metadata_bytes, 0x5A);
      const SparseMatrix s = compress_into(h, d, special.data(), 0, 0, PruneMode::magnitude, v.data(), m.data());
      EXPECT_FALSE(s.owns_memory());
      const auto [want_v, want_m] = expected_interchange(d, special);
      EXPECT_EQ(v, want_v);
      EXPECT_EQ(m, want_m);
      // Products: the same bits as from spmma's own memory.
      const std::vector<uint8_t> a = dense_a(rng, d, false), b = random_b(rng, d);
      std::vector<uint8_t> v2(l.value_bytes), m2(l.metadata_bytes);
      const SparseMatrix borrowed = compress_into(h, d, a.data(), 0, 0, PruneMode::magnitude, v2.data(), m2.data());
      const SparseMatrix owned = compress(h, d, a.data(), 0, 0, PruneMode::magnitude);
      EXPECT_TRUE(owned.owns_memory());
      EXPECT_EQ(run(h, d, borrowed, b), run(h, d, owned, b));
    }
}

TEST(CallerBuffers, ImportChecksEveryNibbleAndBorrowReadsTheBytesAtEachRun) {
  std::mt19937_64 rng(test::seed());
  Handle h(Device::cpu);
  for (const Case& c : kCases) {
    SCOPED_TRACE(type_name(c.a));
    const MatmulDesc d = desc_of(c, 2);
    const std::vector<uint8_t> a = dense_a(rng, d, false), b = random_b(rng, d);
    const auto [xv, xm] = expected_interchange(d, a);
    const CompressedLayout l = compressed_layout(h, d);
    std::vector<uint8_t> v(l.value_bytes, 0x5A), m(l.metadata_bytes, 0x5A);
    const SparseMatrix imported = import_into(h, d, xv.data(), xm.data(), v.data(), m.data());
    const SparseMatrix owned = compress(h, d, a.data(), 0, 0, PruneMode::magnitude);
    const std::vector<uint8_t> want = run(h, d, owned, b);
    EXPECT_EQ(run(h, d, imported, b), want);
    EXPECT_EQ(v, xv);
    // In place (the same buffers in and out) is allowed on the CPU.
    std::vector<uint8_t> iv = xv, im = xm;
    EXPECT_EQ(run(h, d, import_into(h, d, iv.data(), im.data(), iv.data(), im.data()), b), want);

    // No copy: the run reads the caller's bytes as they are then.
    std::vector<uint8_t> bv = xv, bm = xm;
    const SparseMatrix view = borrow(h, d, bv.data(), bm.data());
    EXPECT_EQ(run(h, d, view, b), want);
    std::fill(bv.begin(), bv.end(), uint8_t{0});
    const std::vector<uint8_t> zero = run(h, d, view, b);
    std::vector<uint8_t> want_zero(zero.size());
    for (int64_t i = 0; i < d.m * d.n * d.batch; ++i)
      store_element(want_zero.data(), i, memory_bits(d.d_type), encode(d.d_type, 0.0));
    EXPECT_EQ(zero, want_zero);

    // A forbidden nibble in batch entry 1, row 2, chunk 1: reported there, the outputs untouched.
    std::vector<uint8_t> bad_m = xm;
    const size_t entry_bytes = xm.size() / 2, row_bytes = entry_bytes / static_cast<size_t>(c.m);
    const size_t at = entry_bytes + 2 * row_bytes;  // entry 1, row 2, the low byte of word 0: chunks 0 and 1
    bad_m[at] = static_cast<uint8_t>((bad_m[at] & 0x0F) | (c.a == T::tf32 ? 0x80 : 0x50));  // 1:2 takes 0x4, 0xE only
    std::vector<uint8_t> ov(l.value_bytes, 0x5A), om(l.metadata_bytes, 0x5A);
    test::expect_error([&] { (void)import_into(h, d, xv.data(), bad_m.data(), ov.data(), om.data()); },
                       Status::invalid_value, {"import_into", "batch entry 1", "row 2", "chunk 1"});
    EXPECT_EQ(ov, std::vector<uint8_t>(l.value_bytes, 0x5A));
    EXPECT_EQ(om, std::vector<uint8_t>(l.metadata_bytes, 0x5A));
  }
}

TEST(CallerBuffers, ExportAndDecompressGiveTheHostsBytes) {
  std::mt19937_64 rng(test::seed());
  Handle h(Device::cpu);
  for (const Case& c : kCases) {
    SCOPED_TRACE(type_name(c.a));
    const MatmulDesc d = desc_of(c, 2);
    const std::vector<uint8_t> a = dense_a(rng, d, true);
    const auto [xv, xm] = expected_interchange(d, a);
    const CompressedLayout x = interchange_layout(d);
    for (bool own : {true, false}) {
      std::vector<uint8_t> bv(x.value_bytes), bm(x.metadata_bytes);
      const SparseMatrix s = own ? compress(h, d, a.data(), 0, 0, PruneMode::magnitude)
                                 : compress_into(h, d, a.data(), 0, 0, PruneMode::magnitude, bv.data(), bm.data());
      std::vector<uint8_t> ev(x.value_bytes, 0x5A), em(x.metadata_bytes, 0x5A);
      export_interchange(s, ev.data(), em.data());
      EXPECT_EQ(ev, xv);
      EXPECT_EQ(em, xm);
      // Dense, with a leading dimension 4 elements wider (8 for 4-bit) and a stride gap: the gaps kept.
      const int bits = memory_bits(c.a);
      const int64_t lda = c.k + 8, stride = lda * c.m + 16;
      std::vector<uint8_t> dense(static_cast<size_t>((2 * stride * bits + 7) / 8), 0x5A);
      const std::vector<uint8_t> poison = dense;
      decompress_into(s, dense.data(), lda, stride);
      for (int64_t e = 0; e < 2; ++e) {
        Compressed ce = from_interchange(c.a, c.m, c.k, xv.data() + e * xv.size() / 2, xm.data() + e * xm.size() / 2);
        const Matrix want = decompress(ce);
        int bad = 0;
        for (int64_t r = 0; r < c.m; ++r)
          for (int64_t col = 0; col < lda; ++col) {
            const int64_t i = e * stride + r * lda + col;
            const uint64_t got = load_element(dense.data(), i, bits);
            const uint64_t exp = col < c.k ? want.at(r, col) : load_element(poison.data(), i, bits);
            if (got != exp && ++bad <= 3) ADD_FAILURE() << "entry " << e << " (" << r << ", " << col << ")";
          }
        EXPECT_EQ(bad, 0);
      }
    }
  }
}

TEST(CallerBuffers, BadBuffersAreRefusedByName) {
  Handle h(Device::cpu);
  const MatmulDesc d = desc_of(kCases[0]);
  const CompressedLayout l = compressed_layout(h, d);
  std::vector<uint8_t> a(static_cast<size_t>(d.m * d.k * 2), 0), v(l.value_bytes + 16), m(l.metadata_bytes + 16);
  test::expect_error([&] { (void)borrow(h, d, nullptr, m.data()); }, Status::invalid_argument, {"borrow", "values is null"});
  test::expect_error([&] { (void)borrow(h, d, v.data() + 1, m.data()); }, Status::invalid_argument,
                     {"borrow", "values", "aligned"});
  test::expect_error([&] { (void)compress_into(h, d, a.data(), 0, 0, PruneMode::magnitude, v.data(), v.data() + 2); },
                     Status::invalid_argument, {"compress_into", "overlap"});
  test::expect_error([&] { (void)compress_into(h, d, a.data(), 0, 0, PruneMode::magnitude, a.data(), m.data()); },
                     Status::invalid_argument, {"compress_into", "values overlaps a"});
  const SparseMatrix s = compress_into(h, d, a.data(), 0, 0, PruneMode::magnitude, v.data(), m.data());
  test::expect_error([&] { export_interchange(s, v.data(), m.data()); }, Status::invalid_argument,
                     {"export_interchange", "overlaps A's own buffers"});
  test::expect_error([&] { decompress_into(s, nullptr); }, Status::invalid_argument, {"decompress_into", "dense is null"});
  test::expect_error([&] { decompress_into(SparseMatrix(), a.data()); }, Status::invalid_argument, {"empty"});
}

}  // namespace
}  // namespace spmma
