// SPDX-License-Identifier: BSD-3-Clause
// spmma — structured-sparse formats on the host: prune, check, compress, decompress.
//
// The pattern follows from the element type (PTX 9.7.14.6.1):
//   2:4           f16, bf16, e4m3, e5m2, e3m2, e2m3, s8, u8  (at most 2 non-zeros in each 4-wide chunk)
//   1:2           tf32 (and f32, stored as tf32)             (at most 1 non-zero in each 2-wide chunk)
//   4:8 pair-wise s4, u4, e2m1                                (at most 2 non-zero pairs in each 8-wide
//                                                              chunk; a pair is the 2-wide sub-chunk
//                                                              at an even offset)
// That is the default pattern (pattern_for). e2m1 has two: 4:8 pair-wise under .kind::mxf4 /
// .kind::mxf4nvf4 (the default) and 2:4 under .kind::f8f6f4; every entry point has an overload
// taking the pattern explicitly (the ISA registry passes the variant's), checked by pattern_allowed.
// Zero is matched by value with is_zero(): -0.0 is zero; NaN is never zero.
// The spec words each pattern as "exactly N zeros"; spmma accepts fewer non-zeros (a chunk or a
// pair may hold zeros at kept positions), which is what the hardware computes with.
//
// Whole-matrix layout (docs/layouts.md, "Compressed matrix (host, whole-matrix layout)"):
//   values    rows x (cols/2) elements, row-major, same ElemType as the dense matrix: chunk c of
//             a row occupies value columns [c*kept, (c+1)*kept): stored element 0 first
//             (pair-wise: stored pair 0 = value columns 4c, 4c+1, then stored pair 1).
//   metadata  one 4-bit nibble per chunk, idx0 in bits [1:0], idx1 in bits [3:2]; stored element
//             (pair) 0 goes to dense position (pair) idx0, stored element (pair) 1 to idx1.
//             Row-major, 4 nibbles per uint16_t word, lowest chunk in the lowest bits; each row
//             has meta_words_per_row() = ceil(chunks/4) words, the last padded with zero nibbles
//             when chunks-per-row is not a multiple of 4.
//   1:2 (tf32, f32): nibble 0x4 = element 0 of the pair kept, 0xE = element 1 kept; one stored
//             element per chunk.
// compress() always writes ordered nibbles (idx0 < idx1). A chunk with fewer non-zeros than
// `kept` uses PyTorch's choice of index pair (slot mask -> nibble: none -> 0xE, only 3 -> 0xE,
// only 2 -> 0xE, only 1 -> 0x9, only 0 -> 0x8; 4:8 the same over pairs; 1:2 none -> 0xE), and
// stores the dense bits found at the padding position (a zero; a -0.0 there is kept as -0.0).
// decompress() writes +0.0 (all-zero bits) at every position the nibble does not name, so a
// -0.0 at a position not named by its chunk's nibble round-trips as +0.0; all else is bit-exact.
//
// The "fragment-ready" per-warp metadata layout for the GPU kernels is a separate layout
// (docs/layouts.md, "Fragment-ready metadata"), not this one.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spmma/matrix.hpp"
#include "spmma/types.hpp"

namespace spmma {

enum class Pattern : uint8_t { p2_4, p1_2, p4_8_pairs };

struct PatternInfo {
  Pattern pattern;
  const char* name;  // "2:4", "1:2", "4:8 pair-wise"
  int chunk;         // dense elements per chunk (4, 2, 8)
  int kept;          // elements kept per chunk (2, 1, 4)
  int group;         // elements that are kept or dropped together (1, 1, 2)
};

const PatternInfo& pattern_info(Pattern p);
// The default pattern the tensor cores need for A of this type; throws not_supported (naming
// the type) for a type with no sparse mma form (f64, ue8m0, ue4m3, s32, b1).
Pattern pattern_for(ElemType t);
// Whether some sparse instruction takes A of type t with pattern p: pattern_for(t), and also
// 2:4 for e2m1 (.kind::f8f6f4). The explicit-pattern overloads below throw invalid_argument
// (naming type and pattern) when this is false.
bool pattern_allowed(ElemType t, Pattern p);

// Where a matrix first breaks its pattern.
struct Violation {
  int64_t row;
  int64_t chunk;       // chunk index within the row
  int64_t first_col;   // dense column of the chunk's first element
  int nonzeros;        // non-zero elements found in the chunk
  std::string message; // e.g. "row 3, chunk 5 (cols 20..23): 3 non-zeros, 2:4 allows at most 2"
};

// How a 4:8 pair-wise chunk treats a pair with one zero and one non-zero element.
enum class PairRule : uint8_t {
  some_nonzero,     // (default) a pair counts as non-zero if either element is; at most 2 such
                    // pairs per chunk. Exactly what compress() can store losslessly.
  both_or_neither,  // the spec's literal wording: additionally a half-zero pair is a violation
                    // ("pair at cols 10..11 is half zero; 4:8 pair-wise needs both or neither").
};

// First violation in row-major order, or nullopt if the matrix satisfies its type's pattern.
// cols must be a multiple of the chunk width (else invalid_argument); a type without a sparse
// form throws not_supported. The rule only matters for 4:8 pair-wise.
std::optional<Violation> check_pattern(const Matrix& dense);
std::optional<Violation> check_pattern(const Matrix& dense, PairRule rule);
std::optional<Violation> check_pattern(const Matrix& dense, Pattern p, PairRule rule = PairRule::some_nonzero);
// Throws Error(pattern_violation) with the violation's message.
void require_pattern(const Matrix& dense);
void require_pattern(const Matrix& dense, PairRule rule);
void require_pattern(const Matrix& dense, Pattern p, PairRule rule = PairRule::some_nonzero);

// Prune by magnitude: in each chunk keep the `kept` elements (pair-wise: the 2 pairs by the
// sum of |x| of the pair) with the largest magnitude; ties keep the lower column. NaN counts
// as the largest magnitude (a pair with a NaN beats any pair without). Kept positions keep
// their bits; dropped positions become +0.0 (all-zero bits). Returns a new matrix of the same
// type that satisfies check_pattern (PairRule::some_nonzero).
Matrix prune_magnitude(const Matrix& dense);
Matrix prune_magnitude(const Matrix& dense, Pattern p);
// Prune by a caller's mask (rows x cols, non-zero = keep). The mask itself must satisfy the
// pattern (at most `kept` per chunk; pair-wise: both elements of a pair or neither), else
// pattern_violation naming row and chunk; a mask of the wrong size is invalid_argument.
Matrix prune_mask(const Matrix& dense, const std::vector<uint8_t>& mask);
Matrix prune_mask(const Matrix& dense, const std::vector<uint8_t>& mask, Pattern p);

struct Compressed {
  ElemType type = ElemType::f16;
  Pattern pattern = Pattern::p2_4;
  int64_t rows = 0;
  int64_t cols = 0;                // dense K
  Matrix values;                   // rows x cols/2
  std::vector<uint16_t> metadata;  // rows x meta_words_per_row()
  bool ordered = true;             // every nibble has idx0 < idx1 (decompress enforces it)

  int64_t chunks_per_row() const;     // cols / chunk
  int64_t meta_words_per_row() const; // ceil(chunks_per_row / 4)
  uint8_t nibble(int64_t row, int64_t chunk) const;
  void set_nibble(int64_t row, int64_t chunk, uint8_t v);
  // Exact size of the values packed at the type's width: rows*(cols/2)*bits/8. 4-bit types
  // pack 2 per byte; the 6-bit e3m2/e2m3, and e2m1 under 2:4 (.kind::f8f6f4), are counted in
  // 8-bit containers (1 byte each, as .kind::f8f6f4 loads them); tf32 and f32 take 4 bytes.
  size_t value_bytes() const;
  // Exact size of the metadata: rows * meta_words_per_row() * 2.
  size_t metadata_bytes() const;
};

// Nibble encodings. For 2:4 and 4:8 the two 2-bit indices name the positions (elements, or
// pairs for 4:8) of the two stored entries. Ordered: idx0 < idx1, i.e. {0x4,0x8,0x9,0xC,0xD,0xE};
// unordered (plain mma.sp): any nibble but the repeated-index ones {0x0,0x5,0xA,0xF}.
// 1:2: only 0x4 (element 0) and 0xE (element 1), whatever `ordered` says.
// Whether a given instruction accepts unordered metadata (the f8f6f4 kinds do not) is the ISA
// registry's business, not this function's.
bool nibble_valid(Pattern p, uint8_t nibble, bool ordered);
// Compress a matrix that satisfies its pattern (else pattern_violation with the violation's
// message). The nibbles written are always ordered, also when ordered_metadata is false (which
// only marks the result so that decompress() accepts the wider unordered set). A chunk with
// fewer non-zeros than `kept` is padded as described at the top of this file.
Compressed compress(const Matrix& dense, bool ordered_metadata = true);
Compressed compress(const Matrix& dense, Pattern p, bool ordered_metadata = true);
// Inverse of compress; throws invalid_value naming row, chunk and nibble value for a forbidden
// nibble (per c.ordered) or a non-zero padding nibble, invalid_argument for inconsistent sizes
// or a pattern the type does not allow (pattern_allowed).
Matrix decompress(const Compressed& c);

// The interchange form as bytes (matmul.hpp, "caller-owned memory"; what a checkpoint stores):
// values c.value_bytes() bytes (elements packed at the type's memory width, 4-bit two per byte
// low nibble first), metadata c.metadata_bytes() bytes (the 16-bit words, little-endian).
void to_interchange(const Compressed& c, void* values, void* metadata);
// The inverse, for a rows x cols A of type t in its pattern (pattern_for(t)); the nibbles are not
// checked here (decompress checks them).
Compressed from_interchange(ElemType t, int64_t rows, int64_t cols, const void* values, const void* metadata,
                            bool ordered = true);

}  // namespace spmma
