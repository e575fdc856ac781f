// SPDX-License-Identifier: BSD-3-Clause
// spmma — element types of the PTX MMA instructions: exact encode / decode.
//
// Every value is carried as its raw bit pattern in the low `bits` bits of a uint64_t
// (sign-extension is never applied to the bit pattern: s8 -1 is 0xFF). decode() turns a
// bit pattern into the exact double it denotes; encode() rounds a double to the nearest
// representable value, ties to even (RNE), and applies the type's overflow rule.
// Rules per type are in docs/types.md; in short:
//   f16, bf16, f32, f64  IEEE-style: overflow -> ±Inf, NaN -> canonical quiet NaN
//                        (f16 0x7E00, bf16 0x7FC0, f32 0x7FC00000, f64 0x7FF8000000000000).
//   tf32                 stored as f32 bits with the low 13 mantissa bits zero; decode()
//                        drops those bits (what the tensor cores do), encode() rounds RNE to
//                        10 mantissa bits (overflow -> ±Inf, NaN -> 0x7FC00000).
//   e4m3                 no Inf, NaN = S.1111.111, max 448; overflow and ±Inf saturate to ±448
//                        (PTX cvt .satfinite); 464 is a tie and rounds (to even) to 448. NaN -> 0x7F.
//   e5m2                 IEEE-style Inf/NaN encodings exist; overflow and ±Inf saturate to ±57344
//                        (PTX cvt .satfinite); NaN -> 0x7F (as CUDA's fp8 conversion gives).
//   e3m2, e2m3, e2m1     no Inf, no NaN; overflow and ±Inf saturate to ±max (28, 7.5, 6);
//                        NaN cannot be represented: encode() throws invalid_value.
//   ue8m0                unsigned, exponent only: value 2^(e-127), 0xFF = NaN, no zero;
//                        encode() rounds to the nearest power of two: below the midpoint
//                        1.5·2^e down to 2^e, from it up to 2^(e+1) (RNE on the integer
//                        significand {1, 2}: the tie goes to the even 2); clamps to
//                        [2^-127, 2^127] (to_inf_or_nan: above 2^127 -> 0xFF);
//                        0, -0 or negative -> invalid_value. NaN -> 0xFF.
//   ue4m3                unsigned e4m3 in 8 bits (top bit 0): max 448, NaN 0x7F; decode()
//                        ignores the top bit; -0.0 -> 0x00; negative -> invalid_value.
//   s8, u8, s4, u4, s32  integers: RNE to an integer, saturate to the range (±Inf too);
//                        -0.0 -> 0; NaN -> invalid_value. Overflow is ignored (always saturate).
//   b1                   a single bit: 0 or 1 (any non-zero input, ±Inf included, encodes as 1;
//                        NaN -> invalid_value).
// A NaN input always gives the type's canonical NaN, whatever its sign and payload.
// -0.0 and underflow to zero keep the sign in every signed float type.
// Overflow::saturate / Overflow::to_inf_or_nan override the default where the type allows.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

namespace spmma {

enum class ElemType : uint8_t {
  f16, bf16, tf32, f32, f64,
  e4m3, e5m2, e3m2, e2m3, e2m1,
  ue8m0, ue4m3,
  s8, u8, s4, u4, s32,
  b1,
};

inline constexpr ElemType kAllElemTypes[] = {
    ElemType::f16,  ElemType::bf16, ElemType::tf32,  ElemType::f32,   ElemType::f64, ElemType::e4m3,
    ElemType::e5m2, ElemType::e3m2, ElemType::e2m3,  ElemType::e2m1,  ElemType::ue8m0, ElemType::ue4m3,
    ElemType::s8,   ElemType::u8,   ElemType::s4,    ElemType::u4,    ElemType::s32, ElemType::b1,
};

struct TypeInfo {
  ElemType type;
  std::string_view name;  // as PTX writes it, without the dot: "bf16", "e4m3", "ue8m0"
  int bits;               // significant bits of the encoding (tf32: 32, e2m1: 4, e3m2: 6)
  bool is_float;
  bool is_signed;         // has a sign (floats: sign bit; ints: two's complement)
  int exp_bits;           // floats only
  int man_bits;           // floats only (tf32: 10)
  int bias;               // floats only
  bool has_inf;
  bool has_nan;
  double max_finite;      // largest finite value (integers: the largest integer)
  double min_value;       // most negative finite value (0 for unsigned types)
};

const TypeInfo& type_info(ElemType t);
inline std::string_view type_name(ElemType t) { return type_info(t).name; }
// Parses "bf16", ".bf16" (case-sensitive, PTX spelling); nullopt when unknown.
std::optional<ElemType> parse_elem_type(std::string_view s);
// As parse_elem_type, but throws Error(invalid_argument) naming the text and listing valid names.
ElemType parse_elem_type_or_throw(std::string_view s);

// What encode() does with a magnitude that rounds (RNE, unbounded exponent) above max_finite,
// and with ±Inf inputs:
//   type_default   the type's own rule (IEEE types: to_inf_or_nan; fp8/fp6/fp4, ue8m0, ue4m3
//                  and the integers: saturate).
//   saturate       ±max_finite, for ±Inf inputs too (PTX .satfinite).
//   to_inf_or_nan  ±Inf where the type has Inf; its NaN where it only has NaN (e4m3 0x7F/0xFF,
//                  ue4m3 0x7F, ue8m0 0xFF); ±max_finite where it has neither (e3m2, e2m3,
//                  e2m1, integers).
enum class Overflow { type_default, saturate, to_inf_or_nan };

// Rounds x to the nearest value of type t (RNE) and returns its bit pattern.
uint64_t encode(ElemType t, double x, Overflow overflow = Overflow::type_default);
// The exact value a bit pattern denotes (bits above type_info(t).bits are ignored).
double decode(ElemType t, uint64_t bits);
// True where the pattern denotes zero (+0 or -0), i.e. decode(t, bits) == 0 (tf32: after
// dropping the low 13 bits); NaN is never zero; ue8m0 has no zero.
bool is_zero(ElemType t, uint64_t bits);
bool is_nan(ElemType t, uint64_t bits);

// Elements in memory (host and device buffers, raw .npy arrays, the compressed values): each
// takes memory_bits(t) bits — 4 for s4/u4/e2m1 (two per byte, element 0 in the low nibble), 8 for
// the other types of 8 bits or fewer (6-bit types and b1 in a byte of their own), else the type's
// width (tf32: the 32 bits of its f32 form). Little-endian.
int memory_bits(ElemType t);
// Bit pattern of element i of a buffer whose elements are `bits` wide (4, 8, 16, 32 or 64).
inline uint64_t load_element(const void* base, int64_t i, int bits) {
  const auto* p = static_cast<const uint8_t*>(base);
  if (bits == 4) return (p[i / 2] >> (4 * (i % 2))) & 0xF;
  uint64_t v = 0;
  std::memcpy(&v, p + i * (bits / 8), static_cast<size_t>(bits / 8));  // little-endian hosts
  return v;
}
// Stores element i; for 4-bit elements only its own nibble of the byte changes.
inline void store_element(void* base, int64_t i, int bits, uint64_t v) {
  auto* p = static_cast<uint8_t*>(base);
  if (bits == 4) {
    const int shift = 4 * static_cast<int>(i % 2);
    p[i / 2] = static_cast<uint8_t>((p[i / 2] & ~(0xF << shift)) | ((v & 0xF) << shift));
    return;
  }
  std::memcpy(p + i * (bits / 8), &v, static_cast<size_t>(bits / 8));
}

// .kind::f8f6f4 packs 4- and 6-bit values into 8-bit containers: e2m1 in bits [5:2],
// e3m2 / e2m3 in bits [5:0]; e4m3 / e5m2 use all 8 bits. Padding bits are zero.
// Throws invalid_argument for a type that is not one of those five, invalid_value for a
// pattern with bits above type_info(t).bits.
uint8_t to_f8f6f4_container(ElemType t, uint64_t bits);
// Inverse; throws invalid_value if a padding bit is set.
uint64_t from_f8f6f4_container(ElemType t, uint8_t container);

}  // namespace spmma
