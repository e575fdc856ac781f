// SPDX-License-Identifier: BSD-3-Clause
// The emulator: fragments in, D out, one arithmetic core for every variant.
#include "spmma/emulate.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "emu/scales.hpp"
#include "spmma/error.hpp"

namespace spmma::emu {
namespace {

using isa::Fragment;
using isa::Variant;

std::string hex(uint64_t v, int digits = 8) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

bool padded_kind(const Variant& v) { return v.kind == isa::Kind::f8f6f4 || v.kind == isa::Kind::mxf8f6f4; }

uint64_t elem_mask(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

// ---------------------------------------------------------------- fragments <-> matrices

// Reads one operand's registers into a (parts·rows) x cols matrix of `f.type` bit patterns.
Matrix gather_fragment(const Variant& v, const Fragment& f, const std::vector<uint64_t>& regs,
                       const char* operand) {
  const int threads = v.threads();
  if (regs.size() != static_cast<size_t>(threads * f.regs))
    fail(Status::invalid_argument, std::string(operand) + ": expected " + std::to_string(threads * f.regs) +
                                       " registers (" + std::to_string(f.regs) + " per lane), got " +
                                       std::to_string(regs.size()));
  Matrix m(f.type, static_cast<int64_t>(v.parts) * f.rows, f.cols);
  const bool container = padded_kind(v) && f.elem_bits == 8 && type_info(f.type).bits < 8;
  for (int lane = 0; lane < threads; ++lane)
    for (int r = 0; r < f.regs; ++r) {
      const uint64_t reg = regs[lane * f.regs + r];
      for (int s = 0; s < f.per_reg(); ++s) {
        uint64_t bits = (reg >> (s * f.elem_bits)) & elem_mask(f.elem_bits);
        if (container) {
          try {
            bits = from_f8f6f4_container(f.type, static_cast<uint8_t>(bits));
          } catch (const Error& e) {
            fail(Status::invalid_value, std::string(operand) + ": lane " + std::to_string(lane) + ", register " +
                                            std::to_string(r) + " = " + hex(reg) + ", byte " + std::to_string(s) +
                                            ": " + e.what());
          }
        }
        const isa::Coord c = f.at(lane, r, s);
        m.at(static_cast<int64_t>(c.part) * f.rows + c.row, c.col) = bits;
      }
    }
  return m;
}

std::vector<uint64_t> scatter_fragment(const Variant& v, const Fragment& f, const Matrix& m) {
  std::vector<uint64_t> regs(static_cast<size_t>(v.threads() * f.regs), 0);
  const bool container = padded_kind(v) && f.elem_bits == 8 && type_info(f.type).bits < 8;
  for (int lane = 0; lane < v.threads(); ++lane)
    for (int r = 0; r < f.regs; ++r)
      for (int s = 0; s < f.per_reg(); ++s) {
        const isa::Coord c = f.at(lane, r, s);
        uint64_t bits = m.at(static_cast<int64_t>(c.part) * f.rows + c.row, c.col) & elem_mask(type_info(f.type).bits);
        if (container) bits = to_f8f6f4_container(f.type, bits);
        regs[lane * f.regs + r] |= bits << (s * f.elem_bits);
      }
  return regs;
}

// Reads the metadata nibbles of every lane the selector names into the whole-matrix layout.
Compressed gather_sparse_a(const Variant& v, const WarpState& s, Matrix packed) {
  const isa::MetaLayout& ml = *v.meta;
  if (!ml.selector_valid(s.selector)) {
    std::string valid;
    for (int k = 0; k < 4; ++k)
      if (ml.selector_valid(k)) valid += (valid.empty() ? "" : ", ") + std::to_string(k);
    fail(Status::invalid_argument, "sparsity selector " + std::to_string(s.selector) + " is not valid for " + v.ptx +
                                       " (valid: " + valid + ")");
  }
  if (s.e.size() != static_cast<size_t>(v.threads()))
    fail(Status::invalid_argument, "metadata: expected one register per lane (" + std::to_string(v.threads()) +
                                       "), got " + std::to_string(s.e.size()));
  Compressed c;
  c.type = v.a;
  c.pattern = ml.pattern;
  c.rows = v.m;
  c.cols = v.k;
  c.ordered = ml.ordered;
  c.values = std::move(packed);
  c.metadata.assign(static_cast<size_t>(c.rows * c.meta_words_per_row()), 0);
  for (int lane = 0; lane < v.threads(); ++lane)
    for (int n = 0; n < 8; ++n) {
      const auto rc = ml.at(lane, n, s.selector);
      if (!rc) continue;
      const uint8_t nib = (s.e[lane] >> (4 * n)) & 0xF;
      if (!ml.nibble_valid(nib))
        fail(Status::invalid_value,
             "metadata: lane " + std::to_string(lane) + ", register e = " + hex(s.e[lane]) + ", nibble " +
                 std::to_string(n) + " (bits " + std::to_string(4 * n + 3) + ":" + std::to_string(4 * n) +
                 ") = " + hex(nib, 1) + " is not a valid " + pattern_info(ml.pattern).name + " index pair for " +
                 v.ptx + (ml.ordered ? " (ordered metadata: idx0 < idx1)" : ""));
      c.set_nibble(rc->row, rc->col, nib);
    }
  return c;
}

// ---------------------------------------------------------------- arithmetic core

int64_t as_int(ElemType t, uint64_t bits) { return static_cast<int64_t>(decode(t, bits)); }

// Long double to double with round-to-odd, so that a second rounding to a narrower type is
// the correctly rounded result of the long double.
double round_to_odd(long double x) {
  double d = static_cast<double>(x);
  if (std::isfinite(d) && static_cast<long double>(d) != x) {
    uint64_t u = std::bit_cast<uint64_t>(d);
    if ((u & 1) == 0) d = std::nextafter(d, x > static_cast<long double>(d) ? INFINITY : -INFINITY);
  }
  return d;
}

// Which dense positions of a sparse A the metadata names (stored values, padding zeros
// included): decompressing a copy whose stored values are all one marks them. The tensor
// cores read B only at these positions, so Inf or NaN elsewhere in B never reaches D.
std::vector<uint8_t> stored_positions(const Compressed& c) {
  Compressed marks = c;
  const uint64_t one = encode(c.type, 1.0);
  for (auto& x : marks.values.bits) x = one;
  const Matrix m = decompress(marks);
  std::vector<uint8_t> stored(m.bits.size());
  for (size_t i = 0; i < stored.size(); ++i) stored[i] = m.bits[i] == one;
  return stored;
}

// D = A·B + C over the positions `stored` marks (all of them for dense forms).
Matrix multiply_accumulate(const Variant& v, const Matrix& a, const std::vector<uint8_t>& stored,
                           const MatrixOperands& ops) {
  const Matrix& b = ops.b;
  const int parts = v.parts;
  Matrix d(v.d, static_cast<int64_t>(parts) * v.m, v.n);
  const bool integer = v.d == ElemType::s32;
  const ScaleView sv = v.scale ? ScaleView(v, ops.scale_a, ops.scale_b) : ScaleView();
  for (int p = 0; p < parts; ++p)
    for (int i = 0; i < v.m; ++i)
      for (int j = 0; j < v.n; ++j) {
        const int64_t ar = static_cast<int64_t>(p) * v.m + i, br0 = static_cast<int64_t>(p) * v.k;
        const uint64_t cbits = ops.accumulate ? ops.c.at(ar, j) : 0;
        if (integer) {
          int64_t acc = ops.accumulate ? as_int(v.c, cbits) : 0;
          for (int kk = 0; kk < v.k; ++kk) {
            if (v.bitop != isa::BitOp::none) {
              const uint64_t x = a.at(ar, kk) & 1, y = b.at(br0 + kk, j) & 1;
              acc += v.bitop == isa::BitOp::xor_popc ? (x ^ y) : (x & y);
            } else {
              acc += as_int(v.a, a.at(ar, kk)) * as_int(v.b, b.at(br0 + kk, j));
            }
          }
          int64_t out;
          if (v.satfinite)
            out = std::clamp<int64_t>(acc, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
          else
            out = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(acc)));
          d.at(ar, j) = static_cast<uint32_t>(static_cast<int32_t>(out));
        } else if (v.d == ElemType::f64) {
          double acc = ops.accumulate ? decode(v.c, cbits) : 0.0;
          for (int kk = 0; kk < v.k; ++kk) acc = std::fma(decode(v.a, a.at(ar, kk)), decode(v.b, b.at(br0 + kk, j)), acc);
          d.at(ar, j) = encode(ElemType::f64, acc);
        } else {
          const long double sa = ops.negate_a ? -1.0L : 1.0L, sb = ops.negate_b ? -1.0L : 1.0L;
          long double acc = 0.0L;
          for (int kk = 0; kk < v.k; ++kk) {
            if (!stored.empty() && !stored[static_cast<size_t>(ar * v.k + kk)]) continue;
            long double x = static_cast<long double>(decode(v.a, a.at(ar, kk))) * sa;
            long double y = static_cast<long double>(decode(v.b, b.at(br0 + kk, j))) * sb;
            if (v.scale) x *= sv.a(i, kk), y *= sv.b(kk, j);
            acc += x * y;
          }
          if (ops.accumulate) acc += static_cast<long double>(decode(v.c, cbits));
          d.at(ar, j) = encode(v.d, round_to_odd(acc));
        }
      }
  return d;
}

void check_matrix(const Matrix& m, ElemType t, int64_t rows, int64_t cols, const char* what) {
  if (m.type != t || m.rows != rows || m.cols != cols)
    fail(Status::invalid_argument, std::string(what) + ": expected " + std::to_string(rows) + " x " +
                                       std::to_string(cols) + " " + std::string(type_name(t)) + ", got " +
                                       std::to_string(m.rows) + " x " + std::to_string(m.cols) + " " +
                                       std::string(type_name(m.type)));
}

}  // namespace

// ---------------------------------------------------------------- public

Matrix dense_a(const Variant& v, const MatrixOperands& ops) {
  const int64_t rows = static_cast<int64_t>(v.parts) * v.m;
  if (!v.sparse()) {
    check_matrix(ops.a, v.a, rows, v.k, "A");
    return ops.a;
  }
  if (!ops.a_sparse) fail(Status::invalid_argument, "A: " + v.ptx + " needs a compressed (sparse) A");
  const Compressed& c = *ops.a_sparse;
  if (c.type != v.a || c.rows != rows || c.cols != v.k || c.pattern != v.meta->pattern)
    fail(Status::invalid_argument, "A: expected a compressed " + std::to_string(rows) + " x " + std::to_string(v.k) +
                                       " " + std::string(type_name(v.a)) + " (" + pattern_info(v.meta->pattern).name +
                                       "), got " + std::to_string(c.rows) + " x " + std::to_string(c.cols) + " " +
                                       std::string(type_name(c.type)) + " (" + pattern_info(c.pattern).name + ")");
  if (v.meta->ordered && !c.ordered)
    fail(Status::invalid_argument, "A: " + v.ptx + " needs ordered metadata");
  Compressed checked = c;
  checked.ordered = v.meta->ordered;
  return decompress(checked);
}

Matrix execute_matrix(const Variant& v, const MatrixOperands& ops) {
  const Matrix a = dense_a(v, ops);
  const int64_t parts = v.parts;
  check_matrix(ops.b, v.b, parts * v.k, v.n, "B");
  if (ops.accumulate) check_matrix(ops.c, v.c, parts * v.m, v.n, "C");
  if (v.scale) {
    check_matrix(ops.scale_a, v.scale->stype, v.m, v.scale->scale_vec, "scale_A");
    check_matrix(ops.scale_b, v.scale->stype, v.scale->scale_vec, v.n, "scale_B");
  }
  std::vector<uint8_t> stored;
  if (v.sparse()) {
    Compressed c = *ops.a_sparse;
    c.ordered = v.meta->ordered;
    stored = stored_positions(c);
  }
  return multiply_accumulate(v, a, stored, ops);
}

MatrixOperands gather(const Variant& v, const WarpState& s) {
  MatrixOperands ops;
  Matrix packed;
  if (v.wgmma() && v.a_source == isa::ASource::descriptor) {
    check_matrix(s.a_smem, v.a, v.m, v.packed_k(), "A (shared memory)");
    packed = s.a_smem;
  } else {
    packed = gather_fragment(v, v.fa, s.a, "A");
  }
  if (v.sparse())
    ops.a_sparse = gather_sparse_a(v, s, std::move(packed));
  else
    ops.a = std::move(packed);
  if (v.wgmma()) {
    check_matrix(s.b_smem, v.b, v.k, v.n, "B (shared memory)");
    ops.b = s.b_smem;
    ops.accumulate = s.scale_d;
    ops.negate_a = s.imm_scale_a < 0;
    ops.negate_b = s.imm_scale_b < 0;
  } else {
    ops.b = gather_fragment(v, v.fb, s.b, "B");
  }
  if (ops.accumulate) ops.c = gather_fragment(v, v.fc, s.c, "C");
  if (v.scale) gather_scales(v, s, ops.scale_a, ops.scale_b);
  return ops;
}

std::vector<uint64_t> execute(const Variant& v, const WarpState& s) {
  return scatter_fragment(v, v.fd, execute_matrix(v, gather(v, s)));
}

std::vector<uint64_t> scatter(const Variant& v, const Fragment& f, const Matrix& m) { return scatter_fragment(v, f, m); }

Matrix gather_d(const Variant& v, const std::vector<uint64_t>& d_regs) { return gather_fragment(v, v.fd, d_regs, "D"); }

// ---------------------------------------------------------------- random inputs

namespace {

// A random value of type t: `exact` keeps to small integers (and halves for e2m1's grid).
uint64_t random_value(ElemType t, std::mt19937_64& rng, Inputs kind) {
  const TypeInfo& ti = type_info(t);
  if (!ti.is_float) {
    if (t == ElemType::b1) return rng() & 1;
    if (kind == Inputs::exact || t == ElemType::s32) {
      const int64_t lo = ti.is_signed ? -4 : 0, hi = 4;
      const int64_t x = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
      return encode(t, static_cast<double>(t == ElemType::s32 ? x * 1000 : x));
    }
    return rng() & elem_mask(ti.bits);  // every pattern of an integer type is valid
  }
  if (kind == Inputs::exact) {
    const int x = static_cast<int>(rng() % 7) - 3;  // -3..3: exact in every float type with a sign
    return encode(t, ti.is_signed ? x : std::abs(x) + 1);
  }
  if (ti.bits <= 8) {
    // Narrow floats: any finite pattern of magnitude at most 16, subnormals included, so that
    // sums of up to 128 products stay inside even an f16 accumulator's range.
    for (;;) {
      const uint64_t p = rng() & elem_mask(ti.bits);
      const double x = decode(t, p);
      if (std::isfinite(x) && std::fabs(x) <= 16.0) return p;
    }
  }
  // Wide floats: a uniform value in [-2, 2) with a random binary exponent shift in [-4, 4].
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  const double x = std::ldexp(u(rng), static_cast<int>(rng() % 9) - 4);
  // tf32 operands carry random low 13 bits: the tensor cores must ignore them.
  if (t == ElemType::tf32) return encode(t, x) | (rng() & 0x1FFF);
  return encode(t, x);
}

}  // namespace

WarpState random_state(const Variant& v, std::mt19937_64& rng, Inputs kind, std::optional<int> selector) {
  WarpState s;
  auto fill = [&](const Fragment& f, const ElemType t, std::vector<uint64_t>& regs) {
    Matrix m(t, static_cast<int64_t>(v.parts) * f.rows, f.cols);
    for (auto& x : m.bits) x = random_value(t, rng, kind);
    regs = scatter_fragment(v, f, m);
  };
  if (v.wgmma() && v.a_source == isa::ASource::descriptor) {
    s.a_smem = Matrix(v.a, v.m, v.packed_k());
    for (auto& x : s.a_smem.bits) x = random_value(v.a, rng, kind);
  } else {
    fill(v.fa, v.a, s.a);
  }
  if (v.wgmma()) {
    s.b_smem = Matrix(v.b, v.k, v.n);
    for (auto& x : s.b_smem.bits) x = random_value(v.b, rng, kind);
  } else {
    fill(v.fb, v.b, s.b);
  }
  fill(v.fc, v.c, s.c);
  if (v.sparse()) {
    const isa::MetaLayout& ml = *v.meta;
    if (selector) {
      s.selector = *selector;
    } else {
      std::vector<int> valid;
      for (int k = 0; k < 4; ++k)
        if (ml.selector_valid(k)) valid.push_back(k);
      s.selector = valid[rng() % valid.size()];
    }
    std::vector<uint8_t> nibbles;
    for (int x = 0; x < 16; ++x)
      if (ml.nibble_valid(static_cast<uint8_t>(x))) nibbles.push_back(static_cast<uint8_t>(x));
    s.e.resize(v.threads());
    for (int lane = 0; lane < v.threads(); ++lane) {
      uint32_t e = static_cast<uint32_t>(rng());  // unread lanes keep random bits
      if (ml.at(lane, 0, s.selector)) {
        e = 0;
        for (int n = 0; n < 8; ++n) e |= static_cast<uint32_t>(nibbles[rng() % nibbles.size()]) << (4 * n);
      }
      s.e[lane] = e;
    }
  }
  if (v.scale) random_scales(v, rng, kind == Inputs::exact, s);
  return s;
}

}  // namespace spmma::emu
