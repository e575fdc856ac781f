// SPDX-License-Identifier: BSD-3-Clause
// The registry: every MMA form of the spec, built from the spec's syntax tables.
//
// Each `add_*` block below transcribes one syntax block of the spec (section named in
// `spec`); `finish` derives the PTX text, fragments and metadata layout from the fields, so a
// layout fact lives in exactly one place (fragments.cpp) and a form in exactly one row here.
#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "spmma/error.hpp"
#include "spmma/isa.hpp"
#include "verified.hpp"

namespace spmma::isa {
namespace {

using T = ElemType;

constexpr const char* kSpecSparse = "9.7.14.6 mma.sp";
constexpr const char* kSpecDense = "9.7.14.5.14 mma";
constexpr const char* kSpecWgmma = "9.7.15.6.3 wgmma.mma_async.sp";

// Bits an element occupies in a register. .kind::f8f6f4 / mxf8f6f4 pad 4- and 6-bit values
// into 8-bit containers; mxf4 / mxf4nvf4 pack e2m1 unpadded.
int container_bits(T t, Kind kind) {
  if (kind == Kind::f8f6f4 || kind == Kind::mxf8f6f4) return 8;
  switch (t) {
    case T::f16: case T::bf16: return 16;
    case T::tf32: case T::f32: case T::s32: return 32;
    case T::f64: return 64;
    case T::e4m3: case T::e5m2: case T::e3m2: case T::e2m3: case T::s8: case T::u8: return 8;
    case T::e2m1: case T::s4: case T::u4: return 4;
    case T::b1: return 1;
    default: break;
  }
  fail(Status::internal, "container_bits: no MMA operand of type " + std::string(type_name(t)));
}

Fragment make_fragment(FragKind kind, T type, int ebits, int rows, int cols, int elems_per_thread) {
  Fragment f;
  f.kind = kind;
  f.type = type;
  f.elem_bits = ebits;
  f.reg_bits = ebits == 64 ? 64 : 32;
  f.rows = rows;
  f.cols = cols;
  f.regs = elems_per_thread * ebits / f.reg_bits;
  if (f.regs * f.reg_bits != elems_per_thread * ebits)
    fail(Status::internal, "fragment does not fill whole registers");
  return f;
}

Pattern sparse_pattern(T a, Kind kind) {
  if (a == T::tf32) return Pattern::p1_2;
  if (a == T::s4 || a == T::u4) return Pattern::p4_8_pairs;
  if (a == T::e2m1 && (kind == Kind::mxf4 || kind == Kind::mxf4nvf4)) return Pattern::p4_8_pairs;
  return Pattern::p2_4;
}

std::string ptx_text(const Variant& v) {
  auto tn = [](T t) { return "." + std::string(type_name(t)); };
  std::string s;
  if (v.wgmma()) {
    s = "wgmma.mma_async.sp.sync.aligned.m64n" + std::to_string(v.n) + "k" + std::to_string(v.k);
    if (v.satfinite) s += ".satfinite";
    return s + tn(v.d) + tn(v.a) + tn(v.b);
  }
  s = v.family == Family::mma ? "mma" : std::string(family_name(v.family));
  s += ".sync.aligned.m" + std::to_string(v.m) + "n" + std::to_string(v.n) + "k" + std::to_string(v.k);
  s += v.a_major == Major::row ? ".row" : ".col";
  s += v.b_major == Major::row ? ".row" : ".col";
  if (v.kind != Kind::none) s += "." + std::string(kind_name(v.kind));
  if (v.scale) {
    s += ".block_scale";
    if (v.scale->explicit_vec) s += ".scale_vec::" + std::to_string(v.scale->scale_vec) + "X";
  }
  if (v.satfinite) s += ".satfinite";
  s += tn(v.d) + tn(v.a) + tn(v.b) + tn(v.c);
  if (v.scale) s += tn(v.scale->stype);
  if (v.bitop == BitOp::xor_popc) s += ".xor.popc";
  if (v.bitop == BitOp::and_popc) s += ".and.popc";
  return s;
}

// Derives text, fragments and metadata layout from the variant's fields.
void finish(Variant& v) {
  const int ab = container_bits(v.a, v.kind), bb = container_bits(v.b, v.kind);
  const int cb = container_bits(v.c, Kind::none), db = container_bits(v.d, Kind::none);
  const int kp = v.packed_k();
  if (v.wgmma()) {
    v.fa = v.a_source == ASource::registers ? make_fragment(FragKind::wg_a, v.a, ab, v.m, kp, v.m * kp / 128)
                                            : make_fragment(FragKind::smem, v.a, ab, v.m, kp, 0);
    v.fb = make_fragment(FragKind::smem, v.b, bb, v.k, v.n, 0);
    v.fc = make_fragment(FragKind::wg_d, v.c, cb, v.m, v.n, v.m * v.n / 128);
    v.fd = make_fragment(FragKind::wg_d, v.d, db, v.m, v.n, v.m * v.n / 128);
  } else if (v.m == 8 && v.k == 4 && v.a == T::f16) {  // m8n8k4: four quad-pair products
    v.parts = 4;
    v.fa = make_fragment(v.a_major == Major::row ? FragKind::a_qp_row : FragKind::a_qp_col, v.a, ab, 8, 4, 4);
    v.fb = make_fragment(v.b_major == Major::row ? FragKind::b_qp_row : FragKind::b_qp_col, v.b, bb, 4, 8, 4);
    v.fc = make_fragment(v.c == T::f16 ? FragKind::c_qp_f16 : FragKind::c_qp_f32, v.c, cb, 8, 8, 8);
    v.fd = make_fragment(v.d == T::f16 ? FragKind::c_qp_f16 : FragKind::c_qp_f32, v.d, db, 8, 8, 8);
  } else if (v.m == 8) {
    v.fa = make_fragment(FragKind::a_m8, v.a, ab, 8, kp, 8 * kp / 32);
    v.fb = make_fragment(FragKind::b_n8, v.b, bb, v.k, 8, 8 * v.k / 32);
    v.fc = make_fragment(FragKind::c_m8n8, v.c, cb, 8, 8, 2);
    v.fd = make_fragment(FragKind::c_m8n8, v.d, db, 8, 8, 2);
  } else {
    v.fa = make_fragment(FragKind::a_m16, v.a, ab, 16, kp, 16 * kp / 32);
    v.fb = make_fragment(FragKind::b_n8, v.b, bb, v.k, 8, 8 * v.k / 32);
    v.fc = make_fragment(FragKind::c_m16n8, v.c, cb, 16, 8, 4);
    v.fd = make_fragment(FragKind::c_m16n8, v.d, db, 16, 8, 4);
  }
  if (v.sparse()) {
    MetaLayout ml;
    ml.pattern = sparse_pattern(v.a, v.kind);
    const int chunks = v.k / pattern_info(ml.pattern).chunk;  // chunks per row and instruction
    ml.lanes_per_group = chunks / 4;
    ml.selectors = ml.lanes_per_group == 1 ? 0b1111 : ml.lanes_per_group == 2 ? 0b0011 : 0b0001;
    ml.style = ab >= 16 ? MetaLayout::Style::nibble_half : MetaLayout::Style::lane_bit;
    // Plain mma.sp accepts unordered nibbles except for the fp8 types, whose storage rule
    // lists only the six ordered values for either spelling (PTX 9.7.14.6.1).
    const bool fp8 = v.a == T::e4m3 || v.a == T::e5m2;
    ml.ordered = v.family == Family::mma_sp_ordered || (v.family == Family::mma_sp && fp8);
    v.meta = ml;
  }
  v.ptx = ptx_text(v);
  v.id = v.ptx;
  if (v.wgmma()) v.id += v.a_source == ASource::registers ? ":rs" : ":ss";
}

struct Builder {
  std::vector<Variant> out;

  void add(Variant v) {
    finish(v);
    out.push_back(std::move(v));
  }

  static Variant shape(Family f, int m, int n, int k, T a, T b, T c, T d, Target tgt, int isa,
                       const char* spec) {
    Variant v;
    v.family = f;
    v.m = m, v.n = n, v.k = k;
    v.a = a, v.b = b, v.c = c, v.d = d;
    v.target = tgt;
    v.ptx_isa = isa;
    v.spec = spec;
    return v;
  }
};

constexpr Target sm70{70, false}, sm75{75, false}, sm80{80, false}, sm89{89, false}, sm90{90, false},
    sm90a{90, true}, sm120a{120, true};

constexpr T kF8[] = {T::e4m3, T::e5m2};
constexpr T kF8F6F4[] = {T::e4m3, T::e5m2, T::e3m2, T::e2m3, T::e2m1};
constexpr T kI8[] = {T::u8, T::s8};
constexpr T kI4[] = {T::u4, T::s4};

// ---------------------------------------------------------------- mma.sp (9.7.14.6.3)
void add_sparse(Builder& b) {
  for (Family fam : {Family::mma_sp, Family::mma_sp_ordered}) {
    const bool ord = fam == Family::mma_sp_ordered;
    const int base_isa = ord ? 85 : 71;
    auto add = [&](int k, T a, T bt, T c, T d, Target tgt, int isa, bool sat = false) {
      Variant v = Builder::shape(fam, 16, 8, k, a, bt, c, d, tgt, std::max(isa, base_isa), kSpecSparse);
      v.satfinite = sat;
      b.add(std::move(v));
    };
    // Half precision: .dtype must equal .ctype for m16n8k16/k32.
    for (int k : {16, 32})
      for (T acc : {T::f16, T::f32}) add(k, T::f16, T::f16, acc, acc, sm80, 71);
    // Alternate floating point.
    for (int k : {16, 32}) add(k, T::bf16, T::bf16, T::f32, T::f32, sm80, 71);
    for (int k : {8, 16}) add(k, T::tf32, T::tf32, T::f32, T::f32, sm80, 71);
    for (T a : kF8)
      for (T bt : kF8) add(64, a, bt, T::f32, T::f32, sm89, 84);
    // Integer, with and without .satfinite.
    for (bool sat : {false, true}) {
      for (int k : {32, 64})
        for (T a : kI8)
          for (T bt : kI8) add(k, a, bt, T::s32, T::s32, sm80, 71, sat);
      for (int k : {64, 128})
        for (T a : kI4)
          for (T bt : kI4) add(k, a, bt, T::s32, T::s32, sm80, 71, sat);
    }
  }
  // .kind::f8f6f4 and the block-scaled kinds exist only with ordered metadata.
  auto add_kind = [&](int k, Kind kind, T a, T bt, T c, T d, int isa, std::optional<BlockScale> sc) {
    Variant v = Builder::shape(Family::mma_sp_ordered, 16, 8, k, a, bt, c, d, sm120a, isa, kSpecSparse);
    v.kind = kind;
    v.scale = sc;
    b.add(std::move(v));
  };
  for (T acc : {T::f16, T::f32})
    for (T a : kF8F6F4)
      for (T bt : kF8F6F4) add_kind(64, Kind::f8f6f4, a, bt, acc, acc, 87, std::nullopt);
  for (bool explicit_vec : {false, true}) {
    for (T a : kF8F6F4)
      for (T bt : kF8F6F4)
        add_kind(64, Kind::mxf8f6f4, a, bt, T::f32, T::f32, 87, BlockScale{T::ue8m0, 1, explicit_vec});
    add_kind(128, Kind::mxf4, T::e2m1, T::e2m1, T::f32, T::f32, 87, BlockScale{T::ue8m0, 2, explicit_vec});
  }
  add_kind(128, Kind::mxf4nvf4, T::e2m1, T::e2m1, T::f32, T::f32, 87, BlockScale{T::ue8m0, 2, true});
  add_kind(128, Kind::mxf4nvf4, T::e2m1, T::e2m1, T::f32, T::f32, 87, BlockScale{T::ue4m3, 4, true});
  add_kind(128, Kind::mxf4nvf4, T::e2m1, T::e2m1, T::f32, T::f32, 91, BlockScale{T::ue8m0, 4, true});
}

// ---------------------------------------------------------------- dense mma (9.7.14.5.14)
void add_dense(Builder& b) {
  auto add = [&](int m, int k, T a, T bt, T c, T d, Target tgt, int isa) {
    b.add(Builder::shape(Family::mma, m, 8, k, a, bt, c, d, tgt, isa, kSpecDense));
  };
  // m8n8k4 .f16 with either major order; .ctype f32 requires .dtype f32.
  for (Major am : {Major::row, Major::col})
    for (Major bm : {Major::row, Major::col})
      for (T c : {T::f16, T::f32})
        for (T d : {T::f16, T::f32}) {
          if (c == T::f32 && d == T::f16) continue;
          Variant v = Builder::shape(Family::mma, 8, 8, 4, T::f16, T::f16, c, d, sm70, 64, kSpecDense);
          v.a_major = am, v.b_major = bm;
          b.add(std::move(v));
        }
  for (T acc : {T::f16, T::f32}) add(16, 8, T::f16, T::f16, acc, acc, sm75, 65);
  for (T acc : {T::f16, T::f32}) add(16, 16, T::f16, T::f16, acc, acc, sm80, 70);
  add(16, 4, T::tf32, T::tf32, T::f32, T::f32, sm80, 70);
  add(16, 8, T::bf16, T::bf16, T::f32, T::f32, sm80, 70);
  add(16, 8, T::tf32, T::tf32, T::f32, T::f32, sm80, 70);
  add(16, 16, T::bf16, T::bf16, T::f32, T::f32, sm80, 70);
  for (int k : {16, 32})
    for (T acc : {T::f16, T::f32})
      for (T a : kF8)
        for (T bt : kF8) {
          // m16n8k32 with f32 accumulators came with PTX 8.4; the k16 shape and f16 accumulators with 8.7.
          const int isa = (k == 32 && acc == T::f32) ? 84 : 87;
          add(16, k, a, bt, acc, acc, sm89, isa);
        }
  auto add_kind = [&](int k, Kind kind, T a, T bt, T acc, std::optional<BlockScale> sc, int isa) {
    Variant v = Builder::shape(Family::mma, 16, 8, k, a, bt, acc, acc, sm120a, isa, kSpecDense);
    v.kind = kind;
    v.scale = sc;
    b.add(std::move(v));
  };
  for (T acc : {T::f16, T::f32})
    for (T a : kF8F6F4)
      for (T bt : kF8F6F4) add_kind(32, Kind::f8f6f4, a, bt, acc, std::nullopt, 87);
  for (bool explicit_vec : {false, true}) {
    add_kind(64, Kind::mxf4, T::e2m1, T::e2m1, T::f32, BlockScale{T::ue8m0, 2, explicit_vec}, 87);
    for (T a : kF8F6F4)
      for (T bt : kF8F6F4)
        add_kind(32, Kind::mxf8f6f4, a, bt, T::f32, BlockScale{T::ue8m0, 1, explicit_vec}, 87);
  }
  add_kind(64, Kind::mxf4nvf4, T::e2m1, T::e2m1, T::f32, BlockScale{T::ue8m0, 2, true}, 87);
  add_kind(64, Kind::mxf4nvf4, T::e2m1, T::e2m1, T::f32, BlockScale{T::ue4m3, 4, true}, 87);
  add_kind(64, Kind::mxf4nvf4, T::e2m1, T::e2m1, T::f32, BlockScale{T::ue8m0, 4, true}, 91);
  // Double precision.
  add(8, 4, T::f64, T::f64, T::f64, T::f64, sm80, 70);
  for (int k : {4, 8, 16}) add(16, k, T::f64, T::f64, T::f64, T::f64, sm90, 78);
  // Integer.
  for (bool sat : {false, true}) {
    auto sat_add = [&](int m, int k, T a, T bt, Target tgt, int isa) {
      Variant v = Builder::shape(Family::mma, m, 8, k, a, bt, T::s32, T::s32, tgt, isa, kSpecDense);
      v.satfinite = sat;
      b.add(std::move(v));
    };
    for (T a : kI8)
      for (T bt : kI8) {
        sat_add(8, 16, a, bt, sm75, 65);
        sat_add(16, 16, a, bt, sm80, 70);
        sat_add(16, 32, a, bt, sm80, 70);
      }
    for (T a : kI4)
      for (T bt : kI4) {
        sat_add(8, 32, a, bt, sm75, 65);
        sat_add(16, 32, a, bt, sm80, 70);
        sat_add(16, 64, a, bt, sm80, 70);
      }
  }
  // Single bit: .xor since sm_75 (m8n8k128) / sm_80; .and needs sm_80 and PTX 7.1.
  for (BitOp op : {BitOp::xor_popc, BitOp::and_popc})
    for (int m_k : {0, 1, 2}) {
      const int m = m_k == 0 ? 8 : 16, k = m_k == 2 ? 256 : 128;
      const bool old = m == 8 && op == BitOp::xor_popc;
      Variant v = Builder::shape(Family::mma, m, 8, k, T::b1, T::b1, T::s32, T::s32, old ? sm75 : sm80,
                                 op == BitOp::and_popc ? 71 : 70, kSpecDense);
      v.bitop = op;
      b.add(std::move(v));
    }
}

// ---------------------------------------------------------------- wgmma.mma_async.sp (9.7.15.6.3)
void add_wgmma(Builder& b) {
  auto add = [&](int n, int k, T a, T bt, T d, bool sat, int isa) {
    for (ASource src : {ASource::descriptor, ASource::registers}) {
      Variant v = Builder::shape(Family::wgmma_sp, 64, n, k, a, bt, d, d, sm90a, isa, kSpecWgmma);
      v.a_source = src;
      v.satfinite = sat;
      b.add(std::move(v));
    }
  };
  for (int n = 8; n <= 256; n += 8) {
    for (T d : {T::f16, T::f32}) add(n, 32, T::f16, T::f16, d, false, 82);
    add(n, 32, T::bf16, T::bf16, T::f32, false, 82);
    add(n, 16, T::tf32, T::tf32, T::f32, false, 82);
    for (T d : {T::f16, T::f32})
      for (T a : kF8)
        for (T bt : kF8) add(n, 64, a, bt, d, false, 82);
  }
  // Integer shapes: N in steps of 8 up to 32, then of 16.
  for (int n = 8; n <= 256; n += (n < 32 ? 8 : 16))
    for (bool sat : {false, true})
      for (T a : {T::s8, T::u8})
        for (T bt : {T::s8, T::u8}) add(n, 64, a, bt, T::s32, sat, a == bt ? 82 : 84);
}

std::vector<Variant> build() {
  Builder b;
  add_sparse(b);
  add_dense(b);
  add_wgmma(b);
  for (auto& v : b.out) v.verified = verified_on_hardware(v.id);
  return std::move(b.out);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == ';' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

const std::vector<Variant>& registry() {
  static const std::vector<Variant> table = build();
  return table;
}

const Variant* find_variant(std::string_view text) {
  text = trim(text);
  const Variant* by_ptx = nullptr;
  int ptx_hits = 0;
  for (const auto& v : registry()) {
    if (v.id == text) return &v;
    if (v.ptx == text) by_ptx = &v, ++ptx_hits;
  }
  return ptx_hits == 1 ? by_ptx : nullptr;
}

const Variant* find_form(Family family, int m, int n, int k, ElemType a, ElemType b, ElemType acc, ASource a_source) {
  const Variant* hit = nullptr;
  for (const auto& v : registry()) {
    if (v.family != family || v.m != m || v.n != n || v.k != k || v.a != a || v.b != b || v.c != acc || v.d != acc ||
        v.satfinite || v.kind != Kind::none || v.scale || v.bitop != BitOp::none || (v.wgmma() && v.a_source != a_source))
      continue;
    if (hit) fail(Status::internal, "find_form: " + hit->id + " and " + v.id + " have the same fields");
    hit = &v;
  }
  return hit;
}

const Variant& variant_or_throw(std::string_view text) {
  if (const Variant* v = find_variant(text)) return *v;
  const std::string_view t = trim(text);
  std::string msg = "unknown MMA variant '" + std::string(t) + "'";
  std::vector<const Variant*> same_ptx;
  for (const auto& v : registry())
    if (v.ptx == t) same_ptx.push_back(&v);
  if (same_ptx.size() > 1) {
    msg = "'" + std::string(t) + "' names " + std::to_string(same_ptx.size()) + " variants; give one of:";
    for (auto* v : same_ptx) msg += " " + v->id;
    fail(Status::invalid_argument, msg);
  }
  // Suggest the variants sharing the longest prefix with the text.
  size_t best = 0;
  for (const auto& v : registry()) {
    size_t i = 0;
    while (i < t.size() && i < v.id.size() && t[i] == v.id[i]) ++i;
    best = std::max(best, i);
  }
  int shown = 0;
  for (const auto& v : registry()) {
    if (best == 0 || v.id.compare(0, best, t.substr(0, best)) != 0) continue;
    msg += shown == 0 ? "; closest known: " : ", ";
    msg += v.id;
    if (++shown == 3) break;
  }
  msg += " (`spmma variants` lists all)";
  fail(Status::invalid_argument, msg);
}

}  // namespace spmma::isa
