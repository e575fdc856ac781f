// SPDX-License-Identifier: BSD-3-Clause
// The per-chunk rules of prune, check and compress, written once for the host (src/core/sparse.cpp)
// and the GPU compressor (src/cuda/format/compress_gpu.cu), so both give the same bits
// (docs/layouts.md, "Compressed matrix"):
//   - which groups a chunk keeps when pruning by magnitude (NaN above everything, NaN ties NaN,
//     ties keep the lower group), dropped elements become +0 (all-zero bits);
//   - whether a chunk breaks its pattern (more non-zero groups than kept);
//   - PyTorch's nibble for the set of non-zero groups, and which dense groups it names;
//   - the stored values: the dense bits at the named groups, padding groups included.
// The functions are templates over an element "rule" R with
//   bool R::is_nan(T bits), bool R::is_zero(T bits), Mag R::magnitude(T bits)   (|x| or a key
//   ordered like it, only called on non-NaN bits)
// The host instantiates them with exact values (decode(), every sparse type); the device with
// ElemRule below, which reads the same facts from raw bits (tests/test_chunk_select.cpp proves
// the two agree for every type ElemRule covers).
#pragma once
#include <cstdint>

#include "spmma/detail/hd.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma::detail {

inline constexpr int kMaxChunk = 8;       // dense elements in the widest chunk (4:8)
inline constexpr int kMaxKept = 4;        // elements stored per chunk, at most (4:8)
inline constexpr int kMaxGroups = 4;      // groups (elements or pairs) per chunk, at most

// A pattern as the chunk functions need it (pattern_info() without the name).
struct ChunkShape {
  int chunk = 4;  // dense elements per chunk: 4 (2:4), 2 (1:2), 8 (4:8 pair-wise)
  int kept = 2;   // elements stored per chunk: 2, 1, 4
  int group = 1;  // elements kept or dropped together: 1, 1, 2 (a pair)
  SPMMA_HD constexpr int groups() const { return chunk / group; }      // 4, 2, 4
  SPMMA_HD constexpr int kept_groups() const { return kept / group; }  // 2, 1, 2
  SPMMA_HD constexpr bool one_of_two() const { return groups() == 2; } // 1:2 (tf32, f32)
};

// ------------------------------------------------------------------ nibbles

// PyTorch's nibble for a set of occupied slots (torch/sparse/_semi_structured_conversions.py).
// A slot is a 2-bit index: an element (2:4), a pair (4:8), or a 16-bit half of a 32-bit element
// (1:2, element e = slots 2e, 2e+1, as PTX writes tf32 nibbles).
//   two slots a < b -> a | b << 2;   none, only 3, only 2 -> 0xE;   only 1 -> 0x9;   only 0 -> 0x8.
// More than two slots (a violating chunk, never stored) gives the lowest two.
SPMMA_HD constexpr uint8_t nibble_for_slots(unsigned slots) {
  switch (slots & 0xFu) {
    case 0b0000: case 0b1000: case 0b0100: return 0xE;
    case 0b0010: return 0x9;
    case 0b0001: return 0x8;
    default: break;
  }
  unsigned lo = 0;
  while (!((slots >> lo) & 1u)) ++lo;
  unsigned hi = lo + 1;
  while (!((slots >> hi) & 1u)) ++hi;
  return static_cast<uint8_t>(lo | (hi << 2));
}

// The nibble for a mask of non-zero groups (bit g: group g holds a non-zero). 1:2: element 0 ->
// 0x4, element 1 or none -> 0xE.
SPMMA_HD constexpr uint8_t nibble_for_groups(ChunkShape s, unsigned groups) {
  if (s.one_of_two()) return nibble_for_slots(((groups & 1u) ? 0b0011u : 0u) | ((groups & 2u) ? 0b1100u : 0u));
  return nibble_for_slots(groups);
}

// The dense group each stored group comes from (stored order); returns how many are stored.
SPMMA_HD constexpr int stored_groups(ChunkShape s, uint8_t nibble, int dense_group[2]) {
  if (s.one_of_two()) {
    dense_group[0] = nibble == 0xE ? 1 : 0;
    return 1;
  }
  dense_group[0] = nibble & 0x3;
  dense_group[1] = (nibble >> 2) & 0x3;
  return 2;
}

// Whether a chunk with these non-zero groups breaks its pattern.
SPMMA_HD constexpr bool too_many_groups(ChunkShape s, unsigned nonzero) {
  int n = 0;
  for (int g = 0; g < s.groups(); ++g) n += (nonzero >> g) & 1u;
  return n > s.kept_groups();
}

// ------------------------------------------------------------------ magnitude selection

// A group's rank for prune by magnitude: a group holding a NaN ranks above every group without
// one (Inf included), NaN groups tie whatever their payloads or other element; else the sum of
// |x| of its elements.
template <class Mag>
struct GroupKey {
  bool nan = false;
  Mag mag = 0;
};

template <class Mag>
SPMMA_HD constexpr bool ranks_above(const GroupKey<Mag>& a, const GroupKey<Mag>& b) {
  if (a.nan != b.nan) return a.nan;
  if (a.nan) return false;  // NaN vs NaN: a tie
  return a.mag > b.mag;
}

// The `kept` groups with the largest keys, ties to the lower group; returns them as a mask.
// (Picking the first strict maximum each round is a stable sort's prefix.)
template <class Mag>
SPMMA_HD constexpr unsigned select_kept(int groups, int kept, const GroupKey<Mag>* key) {
  unsigned keep = 0;
  for (int r = 0; r < kept; ++r) {
    int best = -1;
    for (int q = 0; q < groups; ++q)
      if (!((keep >> q) & 1u) && (best < 0 || ranks_above(key[q], key[best]))) best = q;
    keep |= 1u << best;
  }
  return keep;
}

// ------------------------------------------------------------------ one chunk

// Mask of the groups of chunk x (s.chunk elements) that hold a non-zero element.
template <class Rule, class T>
SPMMA_HD constexpr unsigned nonzero_groups(const Rule& rule, ChunkShape s, const T* x) {
  unsigned nz = 0;
  for (int g = 0; g < s.groups(); ++g)
    for (int e = 0; e < s.group; ++e)
      if (!rule.is_zero(x[g * s.group + e])) nz |= 1u << g;
  return nz;
}

// Prune by magnitude, in place: the kept groups keep their bits, the others become +0 (all-zero
// bits). Returns the kept mask.
template <class Rule, class T>
SPMMA_HD constexpr unsigned prune_chunk(const Rule& rule, ChunkShape s, T* x) {
  using Mag = decltype(rule.magnitude(x[0]));
  GroupKey<Mag> key[kMaxGroups] = {};
  for (int g = 0; g < s.groups(); ++g)
    for (int e = 0; e < s.group; ++e) {
      const T b = x[g * s.group + e];
      if (rule.is_nan(b)) key[g].nan = true;
      else key[g].mag += rule.magnitude(b);
    }
  const unsigned keep = select_kept(s.groups(), s.kept_groups(), key);
  for (int g = 0; g < s.groups(); ++g)
    if (!((keep >> g) & 1u))
      for (int e = 0; e < s.group; ++e) x[g * s.group + e] = 0;
  return keep;
}

// Compress a chunk that satisfies its pattern: the nibble of its non-zero groups, and in
// stored[0 .. s.kept) the dense bits at the groups it names — at a padding group too, so a -0.0
// (or a tf32 zero with low bits set) there is stored as it is. Returns the nibble.
template <class Rule, class T>
SPMMA_HD constexpr uint8_t compress_chunk(const Rule& rule, ChunkShape s, const T* x, T* stored) {
  const uint8_t nib = nibble_for_groups(s, nonzero_groups(rule, s, x));
  int dg[2] = {0, 0};
  const int n = stored_groups(s, nib, dg);
  for (int i = 0; i < n; ++i)
    for (int e = 0; e < s.group; ++e) stored[i * s.group + e] = x[dg[i] * s.group + e];
  return nib;
}

struct ChunkResult {
  uint8_t nibble = 0;
  bool violates = false;  // check mode: the chunk breaks its pattern (nibble and stored then mean nothing)
};

// What the GPU compressor does with one chunk: with `prune`, compress(prune_magnitude(x)); else
// compress(x), after checking the pattern. x is pruned in place.
template <class Rule, class T>
SPMMA_HD constexpr ChunkResult select_chunk(const Rule& rule, ChunkShape s, bool prune, T* x, T* stored) {
  ChunkResult r;
  if (prune) prune_chunk(rule, s, x);
  else r.violates = too_many_groups(s, nonzero_groups(rule, s, x));
  r.nibble = compress_chunk(rule, s, x, stored);
  return r;
}

// ------------------------------------------------------------------ the element rule from raw bits

// Zero, NaN and magnitude of an element from its bits in memory (memory_bits(t) wide, in the low
// bits of a uint32_t), exactly as decode() sees them: is_zero(t, b), is_nan(t, b), and a key
// ordered as |decode(t, b)| with equal keys for equal magnitudes. Build it with elem_rule().
struct ElemRule {
  enum Kind : uint8_t { none = 0, float_ieee, float_nan_all_ones, float_no_nan, int_signed, int_unsigned };
  Kind kind = none;         // none: not built by elem_rule (every element then reads as zero)
  uint32_t value_mask = 0;  // the bits decode() reads: the type's width; tf32 without its low 13 bits
  uint32_t sign_mask = 0;   // floats: the sign bit
  uint32_t exp_mask = 0;    // floats: the exponent field
  uint32_t man_mask = 0;    // floats: the mantissa field (tf32: its 10 bits)
  int int_bits = 0;         // integers: the width

  SPMMA_HD constexpr bool valid() const { return kind != none && value_mask != 0; }
  SPMMA_HD constexpr bool is_float() const {
    return kind == float_ieee || kind == float_nan_all_ones || kind == float_no_nan;
  }
  SPMMA_HD constexpr bool is_nan(uint32_t x) const {
    if (exp_mask == 0 || (x & exp_mask) != exp_mask) return false;
    if (kind == float_ieee) return (x & man_mask) != 0;                 // exponent all ones, mantissa != 0
    if (kind == float_nan_all_ones) return (x & man_mask) == man_mask;  // e4m3: S.1111.111
    return false;
  }
  // Floats: the magnitude bits, whose order is that of |x| (NaN ranks apart, see GroupKey);
  // integers: |x|.
  SPMMA_HD constexpr uint32_t magnitude(uint32_t x) const {
    x &= value_mask;
    if (is_float()) return x & ~sign_mask;
    if (kind == int_signed && ((x >> (int_bits - 1)) & 1u)) return (value_mask & ~x) + 1u;  // -x in int_bits bits
    return x;
  }
  SPMMA_HD constexpr bool is_zero(uint32_t x) const { return magnitude(x) == 0; }
};

// Host only (src/core/sparse.cpp). The rule of type t, whose pattern p must be allowed for t
// (pattern_allowed, else invalid_argument). not_supported for what raw bits and a uint32_t key
// cannot order exactly: types over 32 bits or without a sparse form, and float pairs (e2m1 under
// 4:8, whose pair sums are not sums of magnitude bits).
ElemRule elem_rule(ElemType t, Pattern p);
// pattern_info(p) as a ChunkShape.
ChunkShape chunk_shape(Pattern p);

}  // namespace spmma::detail
