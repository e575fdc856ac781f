// SPDX-License-Identifier: BSD-3-Clause
// spmma — structured-sparse formats on the host: prune, check, compress, decompress.
// The layout is documented in include/spmma/sparse.hpp and docs/layouts.md
// ("Compressed matrix (host, whole-matrix layout)").
#include "spmma/sparse.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "spmma/detail/chunk_select.hpp"
#include "spmma/error.hpp"

namespace spmma {
namespace {

// ------------------------------------------------------------------ tables (data, not code)

constexpr PatternInfo kPatterns[] = {
    {Pattern::p2_4, "2:4", 4, 2, 1},
    {Pattern::p1_2, "1:2", 2, 1, 1},
    {Pattern::p4_8_pairs, "4:8 pair-wise", 8, 4, 2},
};

// Patterns per type; the first row of a type is its default (pattern_for).
struct TypePattern {
  ElemType type;
  Pattern pattern;
};
constexpr TypePattern kTypePatterns[] = {
    {ElemType::f16, Pattern::p2_4},        {ElemType::bf16, Pattern::p2_4},
    {ElemType::e4m3, Pattern::p2_4},       {ElemType::e5m2, Pattern::p2_4},
    {ElemType::e3m2, Pattern::p2_4},       {ElemType::e2m3, Pattern::p2_4},
    {ElemType::s8, Pattern::p2_4},         {ElemType::u8, Pattern::p2_4},
    {ElemType::tf32, Pattern::p1_2},       {ElemType::f32, Pattern::p1_2},
    {ElemType::s4, Pattern::p4_8_pairs},   {ElemType::u4, Pattern::p4_8_pairs},
    {ElemType::e2m1, Pattern::p4_8_pairs},  // .kind::mxf4, .kind::mxf4nvf4
    {ElemType::e2m1, Pattern::p2_4},        // .kind::f8f6f4
};

// The per-chunk rules (kept groups, nibbles, stored values) live in spmma/detail/chunk_select.hpp,
// shared with the GPU compressor. The host instantiates them with exact values through decode(),
// which covers every sparse type.
struct ValueRule {
  ElemType t;
  bool is_nan(uint64_t b) const { return spmma::is_nan(t, b); }
  bool is_zero(uint64_t b) const { return spmma::is_zero(t, b); }
  double magnitude(uint64_t b) const { return std::fabs(decode(t, b)); }
};

std::string hex_nibble(unsigned v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%X (0b%u%u%u%u)", v, (v >> 3) & 1, (v >> 2) & 1, (v >> 1) & 1, v & 1);
  return buf;
}

std::string valid_list(Pattern p, bool ordered) {
  std::string s;
  for (unsigned v = 0; v < 16; ++v) {
    if (!nibble_valid(p, static_cast<uint8_t>(v), ordered)) continue;
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%X", v);
    if (!s.empty()) s += ' ';
    s += buf;
  }
  return s;
}

std::string chunk_where(int64_t row, int64_t chunk, const PatternInfo& info) {
  const int64_t first = chunk * info.chunk;
  return "row " + std::to_string(row) + ", chunk " + std::to_string(chunk) + " (cols " + std::to_string(first) +
         ".." + std::to_string(first + info.chunk - 1) + ")";
}

std::string allowed_patterns(ElemType t) {
  std::string s;
  for (const TypePattern& tp : kTypePatterns)
    if (tp.type == t) s += std::string(s.empty() ? "" : ", ") + pattern_info(tp.pattern).name;
  return s;
}

// Throws not_supported for a type without a sparse form, invalid_argument for a pattern the
// type does not take.
void check_type_pattern(ElemType t, Pattern p, const char* who) {
  (void)pattern_for(t);
  if (!pattern_allowed(t, p))
    fail(Status::invalid_argument, std::string(who) + ": type " + std::string(type_name(t)) + " has no " +
                                       pattern_info(p).name + " sparse form (allowed: " + allowed_patterns(t) + ")");
}

// Checks type, pattern, shape and size of a dense matrix; returns the pattern.
const PatternInfo& checked_dense(const Matrix& m, Pattern p, const char* who) {
  check_type_pattern(m.type, p, who);
  const PatternInfo& info = pattern_info(p);
  if (m.rows < 0 || m.cols < 0)
    fail(Status::invalid_argument, std::string(who) + ": negative shape " + std::to_string(m.rows) + " x " +
                                       std::to_string(m.cols));
  if (m.bits.size() != static_cast<size_t>(m.rows * m.cols))
    fail(Status::invalid_argument, std::string(who) + ": matrix of " + std::to_string(m.rows) + " x " +
                                       std::to_string(m.cols) + " holds " + std::to_string(m.bits.size()) +
                                       " elements");
  if (m.cols % info.chunk != 0)
    fail(Status::invalid_argument, std::string(who) + ": cols = " + std::to_string(m.cols) +
                                       " is not a multiple of the " + info.name + " chunk width " +
                                       std::to_string(info.chunk) + " (type " + std::string(type_name(m.type)) +
                                       ")");
  return info;
}

// Words used in a violation message: for data ("non-zero") or for a caller's keep mask ("kept").
struct Nouns {
  const char* elems;       // "non-zeros"
  const char* pairs;       // "non-zero pairs"
  const char* half;        // "half zero"
  const char* half_rule;   // "needs both or neither"
};
constexpr Nouns kDataNouns{"non-zeros", "non-zero pairs", "half zero", "needs both or neither"};
constexpr Nouns kMaskNouns{"kept", "kept pairs", "half kept", "keeps both or neither"};

// Scans the matrix row-major with `on(r, c)` = "position is non-zero / kept" and returns the
// first chunk that breaks the pattern.
template <class On>
std::optional<Violation> scan(int64_t rows, int64_t cols, const PatternInfo& info, PairRule rule, const Nouns& nouns,
                              On on) {
  const int64_t chunks = cols / info.chunk;
  const detail::ChunkShape shape = detail::chunk_shape(info.pattern);
  if (chunks == 0) return std::nullopt;  // no element: O(1), however many empty rows
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t first = c * info.chunk;
      int elems = 0, nz_groups = 0, half_group = -1;
      unsigned nz_mask = 0;
      for (int g = 0; g < shape.groups(); ++g) {
        int in_group = 0;
        for (int e = 0; e < info.group; ++e) in_group += on(r, first + g * info.group + e) ? 1 : 0;
        elems += in_group;
        if (in_group > 0) ++nz_groups, nz_mask |= 1u << g;
        if (in_group > 0 && in_group < info.group && half_group < 0) half_group = g;
      }
      std::string msg;
      if (detail::too_many_groups(shape, nz_mask)) {
        if (info.group == 1) {
          msg = chunk_where(r, c, info) + ": " + std::to_string(elems) + " " + nouns.elems + ", " + info.name +
                " allows at most " + std::to_string(info.kept);
        } else {
          msg = chunk_where(r, c, info) + ": " + std::to_string(nz_groups) + " " + nouns.pairs + " (" +
                std::to_string(elems) + " " + nouns.elems + "), " + info.name + " allows at most " +
                std::to_string(shape.kept_groups()) + " " + nouns.pairs;
        }
      } else if (half_group >= 0 && rule == PairRule::both_or_neither) {
        const int64_t pc = first + half_group * info.group;
        msg = chunk_where(r, c, info) + ": pair at cols " + std::to_string(pc) + ".." +
              std::to_string(pc + info.group - 1) + " is " + nouns.half + "; " + info.name + " " + nouns.half_rule;
      } else {
        continue;
      }
      return Violation{r, c, first, elems, std::move(msg)};
    }
  }
  return std::nullopt;
}

}  // namespace

// ------------------------------------------------------------------ patterns

const PatternInfo& pattern_info(Pattern p) {
  for (const PatternInfo& info : kPatterns)
    if (info.pattern == p) return info;
  fail(Status::invalid_argument, "pattern_info: unknown pattern " + std::to_string(static_cast<int>(p)));
}

Pattern pattern_for(ElemType t) {
  for (const TypePattern& tp : kTypePatterns)
    if (tp.type == t) return tp.pattern;
  std::string have;
  for (const TypePattern& tp : kTypePatterns) {
    if (!have.empty()) have += ", ";
    have += type_name(tp.type);
  }
  fail(Status::not_supported, "pattern_for: type " + std::string(type_name(t)) +
                                  " has no sparse mma form (sparse A exists for " + have + ")");
}

bool pattern_allowed(ElemType t, Pattern p) {
  for (const TypePattern& tp : kTypePatterns)
    if (tp.type == t && tp.pattern == p) return true;
  return false;
}

bool nibble_valid(Pattern p, uint8_t nibble, bool ordered) {
  if (nibble > 0xF) return false;
  if (p == Pattern::p1_2) return nibble == 0x4 || nibble == 0xE;
  const unsigned idx0 = nibble & 0x3u, idx1 = (nibble >> 2) & 0x3u;
  return ordered ? idx0 < idx1 : idx0 != idx1;
}

// ------------------------------------------------------------------ check

std::optional<Violation> check_pattern(const Matrix& dense) { return check_pattern(dense, PairRule::some_nonzero); }

std::optional<Violation> check_pattern(const Matrix& dense, PairRule rule) {
  return check_pattern(dense, pattern_for(dense.type), rule);
}

std::optional<Violation> check_pattern(const Matrix& dense, Pattern p, PairRule rule) {
  const PatternInfo& info = checked_dense(dense, p, "check_pattern");
  return scan(dense.rows, dense.cols, info, rule, kDataNouns,
              [&](int64_t r, int64_t c) { return !is_zero(dense.type, dense.at(r, c)); });
}

void require_pattern(const Matrix& dense) { require_pattern(dense, PairRule::some_nonzero); }

void require_pattern(const Matrix& dense, PairRule rule) { require_pattern(dense, pattern_for(dense.type), rule); }

void require_pattern(const Matrix& dense, Pattern p, PairRule rule) {
  if (auto v = check_pattern(dense, p, rule)) fail(Status::pattern_violation, v->message);
}

// ------------------------------------------------------------------ prune

Matrix prune_magnitude(const Matrix& dense) { return prune_magnitude(dense, pattern_for(dense.type)); }

Matrix prune_magnitude(const Matrix& dense, Pattern p) {
  const PatternInfo& info = checked_dense(dense, p, "prune_magnitude");
  const detail::ChunkShape shape = detail::chunk_shape(info.pattern);
  const ValueRule rule{dense.type};
  Matrix out(dense.type, dense.rows, dense.cols);
  if (dense.cols == 0) return out;  // no element: O(1), however many empty rows
  for (int64_t r = 0; r < dense.rows; ++r)
    for (int64_t first = 0; first < dense.cols; first += info.chunk) {
      uint64_t* x = &out.at(r, first);
      std::copy_n(dense.bits.data() + r * dense.cols + first, info.chunk, x);
      detail::prune_chunk(rule, shape, x);
    }
  return out;
}

Matrix prune_mask(const Matrix& dense, const std::vector<uint8_t>& mask) {
  return prune_mask(dense, mask, pattern_for(dense.type));
}

Matrix prune_mask(const Matrix& dense, const std::vector<uint8_t>& mask, Pattern p) {
  const PatternInfo& info = checked_dense(dense, p, "prune_mask");
  if (mask.size() != dense.bits.size())
    fail(Status::invalid_argument, "prune_mask: mask has " + std::to_string(mask.size()) + " entries, the matrix " +
                                       std::to_string(dense.rows) + " x " + std::to_string(dense.cols) + " needs " +
                                       std::to_string(dense.bits.size()));
  const auto at = [&](int64_t r, int64_t c) { return mask[static_cast<size_t>(r * dense.cols + c)] != 0; };
  if (auto v = scan(dense.rows, dense.cols, info, PairRule::both_or_neither, kMaskNouns, at))
    fail(Status::pattern_violation, "prune_mask: mask at " + v->message);
  Matrix out(dense.type, dense.rows, dense.cols);
  for (size_t i = 0; i < dense.bits.size(); ++i)
    if (mask[i]) out.bits[i] = dense.bits[i];
  return out;
}

// ------------------------------------------------------------------ Compressed

int64_t Compressed::chunks_per_row() const { return cols / pattern_info(pattern).chunk; }

int64_t Compressed::meta_words_per_row() const { return (chunks_per_row() + 3) / 4; }

uint8_t Compressed::nibble(int64_t row, int64_t chunk) const {
  const int64_t words = meta_words_per_row();
  if (row < 0 || row >= rows || chunk < 0 || chunk >= chunks_per_row())
    fail(Status::invalid_argument, "Compressed::nibble: row " + std::to_string(row) + ", chunk " +
                                       std::to_string(chunk) + " outside " + std::to_string(rows) + " rows x " +
                                       std::to_string(chunks_per_row()) + " chunks");
  const size_t w = static_cast<size_t>(row * words + chunk / 4);
  if (w >= metadata.size())
    fail(Status::invalid_argument, "Compressed::nibble: metadata holds " + std::to_string(metadata.size()) +
                                       " words, needs " + std::to_string(rows * words));
  return static_cast<uint8_t>((metadata[w] >> (4 * (chunk % 4))) & 0xF);
}

void Compressed::set_nibble(int64_t row, int64_t chunk, uint8_t v) {
  const int64_t words = meta_words_per_row();
  if (row < 0 || row >= rows || chunk < 0 || chunk >= chunks_per_row())
    fail(Status::invalid_argument, "Compressed::set_nibble: row " + std::to_string(row) + ", chunk " +
                                       std::to_string(chunk) + " outside " + std::to_string(rows) + " rows x " +
                                       std::to_string(chunks_per_row()) + " chunks");
  if (v > 0xF) fail(Status::invalid_argument, "Compressed::set_nibble: value " + std::to_string(v) + " > 0xF");
  const size_t need = static_cast<size_t>(rows * words);
  if (metadata.size() < need) metadata.resize(need, 0);
  const size_t w = static_cast<size_t>(row * words + chunk / 4);
  const int shift = 4 * static_cast<int>(chunk % 4);
  metadata[w] = static_cast<uint16_t>((metadata[w] & ~(0xFu << shift)) | (static_cast<unsigned>(v) << shift));
}

size_t Compressed::value_bytes() const {
  int bits = type_info(type).bits;
  // e3m2 / e2m3, and e2m1 under 2:4 (only .kind::f8f6f4 has it): one 8-bit container each.
  if (bits == 6 || (type == ElemType::e2m1 && pattern == Pattern::p2_4)) bits = 8;
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols / 2);
  return (n * static_cast<size_t>(bits) + 7) / 8;
}

size_t Compressed::metadata_bytes() const {
  return static_cast<size_t>(rows) * static_cast<size_t>(meta_words_per_row()) * sizeof(uint16_t);
}

// ------------------------------------------------------------------ compress / decompress

Compressed compress(const Matrix& dense, bool ordered_metadata) {
  return compress(dense, pattern_for(dense.type), ordered_metadata);
}

Compressed compress(const Matrix& dense, Pattern p, bool ordered_metadata) {
  const PatternInfo& info = checked_dense(dense, p, "compress");
  if (auto v = check_pattern(dense, p, PairRule::some_nonzero))
    fail(Status::pattern_violation, "compress: " + v->message);

  Compressed c;
  c.type = dense.type;
  c.pattern = info.pattern;
  c.rows = dense.rows;
  c.cols = dense.cols;
  c.ordered = ordered_metadata;
  c.values = Matrix(dense.type, dense.rows, dense.cols / 2);
  const int64_t chunks = c.chunks_per_row();
  const int64_t words = c.meta_words_per_row();
  c.metadata.assign(static_cast<size_t>(dense.rows * words), 0);
  const detail::ChunkShape shape = detail::chunk_shape(info.pattern);
  const ValueRule rule{dense.type};
  if (chunks == 0) return c;  // no element: O(1), however many empty rows
  for (int64_t r = 0; r < dense.rows; ++r)
    for (int64_t ch = 0; ch < chunks; ++ch)
      c.set_nibble(r, ch,
                   detail::compress_chunk(rule, shape, dense.bits.data() + r * dense.cols + ch * info.chunk,
                                          &c.values.at(r, ch * info.kept)));
  return c;
}

Matrix decompress(const Compressed& c) {
  check_type_pattern(c.type, c.pattern, "decompress");
  const PatternInfo& info = pattern_info(c.pattern);
  if (c.rows < 0 || c.cols < 0 || c.cols % info.chunk != 0)
    fail(Status::invalid_argument, "decompress: shape " + std::to_string(c.rows) + " x " + std::to_string(c.cols) +
                                       " (cols must be a non-negative multiple of " + std::to_string(info.chunk) +
                                       " for " + info.name + ")");
  if (c.values.type != c.type || c.values.rows != c.rows || c.values.cols != c.cols / 2 ||
      c.values.bits.size() != static_cast<size_t>(c.rows * (c.cols / 2)))
    fail(Status::invalid_argument, "decompress: values are " + std::string(type_name(c.values.type)) + " " +
                                       std::to_string(c.values.rows) + " x " + std::to_string(c.values.cols) +
                                       ", expected " + std::string(type_name(c.type)) + " " +
                                       std::to_string(c.rows) + " x " + std::to_string(c.cols / 2));
  const int64_t chunks = c.chunks_per_row();
  const int64_t words = c.meta_words_per_row();
  if (c.metadata.size() != static_cast<size_t>(c.rows * words))
    fail(Status::invalid_argument, "decompress: metadata holds " + std::to_string(c.metadata.size()) +
                                       " words, expected " + std::to_string(c.rows) + " rows x " +
                                       std::to_string(words) + " = " + std::to_string(c.rows * words));

  const detail::ChunkShape shape = detail::chunk_shape(info.pattern);
  Matrix out(c.type, c.rows, c.cols);
  if (c.cols == 0) return out;  // no element: O(1), however many empty rows
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const uint8_t nib = c.nibble(r, ch);
      if (!nibble_valid(info.pattern, nib, c.ordered))
        fail(Status::invalid_value, "decompress: row " + std::to_string(r) + ", chunk " + std::to_string(ch) +
                                        ": metadata nibble " + hex_nibble(nib) + " is forbidden for " + info.name +
                                        (info.pattern == Pattern::p1_2 ? std::string()
                                                                       : (c.ordered ? " ordered" : " unordered")) +
                                        " metadata (valid: " + valid_list(info.pattern, c.ordered) + ")");
      int dg[2] = {0, 0};
      const int n = detail::stored_groups(shape, nib, dg);
      for (int s = 0; s < n; ++s)
        for (int e = 0; e < info.group; ++e)
          out.at(r, ch * info.chunk + dg[s] * info.group + e) = c.values.at(r, ch * info.kept + s * info.group + e);
    }
    // Padding nibbles of the row's last word must be zero.
    for (int64_t ch = chunks; ch < words * 4; ++ch) {
      const unsigned v = (c.metadata[static_cast<size_t>(r * words + ch / 4)] >> (4 * (ch % 4))) & 0xFu;
      if (v != 0)
        fail(Status::invalid_value, "decompress: row " + std::to_string(r) + ": padding nibble " +
                                        std::to_string(ch % 4) + " of metadata word " + std::to_string(ch / 4) +
                                        " (after the row's " + std::to_string(chunks) + " chunks) is " +
                                        hex_nibble(v) + ", must be 0");
    }
  }
  return out;
}

// ------------------------------------------------------------------ the shared chunk rules (chunk_select.hpp)

namespace detail {

ChunkShape chunk_shape(Pattern p) {
  const PatternInfo& info = pattern_info(p);
  return ChunkShape{info.chunk, info.kept, info.group};
}

ElemRule elem_rule(ElemType t, Pattern p) {
  check_type_pattern(t, p, "elem_rule");
  const TypeInfo& ti = type_info(t);
  if (ti.is_float && pattern_info(p).group > 1)
    fail(Status::not_supported, "elem_rule: " + std::string(ti.name) + " under " + pattern_info(p).name +
                                    ": pairs of floats are ranked by the sum of their values, which raw bits do not give");
  auto mask = [](int bits) { return bits >= 32 ? ~0u : (1u << bits) - 1u; };
  ElemRule r;
  if (!ti.is_float) {
    r.kind = ti.is_signed ? ElemRule::int_signed : ElemRule::int_unsigned;
    r.int_bits = ti.bits;
    r.value_mask = mask(ti.bits);
    return r;
  }
  // A signed float: sign, exponent, mantissa from the top of its `bits`; what lies below them is
  // ignored by decode() (tf32: the low 13 bits of its f32 pattern), what lies above them (the
  // 8-bit containers of e3m2, e2m3, e2m1) too.
  const int low = ti.bits - 1 - ti.exp_bits - ti.man_bits;
  r.kind = !ti.has_nan ? ElemRule::float_no_nan : ti.has_inf ? ElemRule::float_ieee : ElemRule::float_nan_all_ones;
  r.man_mask = mask(ti.man_bits) << low;
  r.exp_mask = mask(ti.exp_bits) << (low + ti.man_bits);
  r.sign_mask = 1u << (ti.bits - 1);
  r.value_mask = r.sign_mask | r.exp_mask | r.man_mask;
  return r;
}

}  // namespace detail

}  // namespace spmma

namespace spmma {

void to_interchange(const Compressed& c, void* values, void* metadata) {
  const int bits = memory_bits(c.type);
  auto* v = static_cast<uint8_t*>(values);
  std::fill(v, v + c.value_bytes(), uint8_t{0});  // 4-bit elements fill their bytes by halves
  for (size_t i = 0; i < c.values.bits.size(); ++i) store_element(v, static_cast<int64_t>(i), bits, c.values.bits[i]);
  auto* m = static_cast<uint8_t*>(metadata);
  for (size_t i = 0; i < c.metadata.size(); ++i) {  // little-endian whatever the host's order
    m[2 * i] = static_cast<uint8_t>(c.metadata[i]);
    m[2 * i + 1] = static_cast<uint8_t>(c.metadata[i] >> 8);
  }
}

Compressed from_interchange(ElemType t, int64_t rows, int64_t cols, const void* values, const void* metadata,
                            bool ordered) {
  Compressed c;
  c.type = t;
  c.pattern = pattern_for(t);
  c.rows = rows, c.cols = cols;
  c.ordered = ordered;
  if (rows < 0 || cols < 0 || cols % pattern_info(c.pattern).chunk != 0)
    fail(Status::invalid_argument, "from_interchange: " + std::to_string(rows) + " x " + std::to_string(cols) +
                                       " is not a shape of a compressed " + std::string(type_name(t)));
  c.values = Matrix(t, rows, cols / 2);
  const int bits = memory_bits(t);
  for (size_t i = 0; i < c.values.bits.size(); ++i) c.values.bits[i] = load_element(values, static_cast<int64_t>(i), bits);
  c.metadata.resize(static_cast<size_t>(rows * c.meta_words_per_row()));
  const auto* m = static_cast<const uint8_t*>(metadata);
  for (size_t i = 0; i < c.metadata.size(); ++i)
    c.metadata[i] = static_cast<uint16_t>(m[2 * i] | (static_cast<unsigned>(m[2 * i + 1]) << 8));
  return c;
}

}  // namespace spmma
