// SPDX-License-Identifier: BSD-3-Clause
// spmma — the ISA model: one registry of every MMA variant in the spec.
//
// A variant is a row of data: its PTX text, shape, types, register counts, the fragment maps
// of A (packed for sparse forms), B, C, D and the metadata, its selectors, target and PTX ISA
// version. The emulator, the PTX wrappers, the conformance probes, the CLI and the docs all
// read this table; nothing else spells a layout out again.
//
// Notation of the fragment maps (PTX 9.7.14.5 / 9.7.14.6.2): lane l (0..31, 0..127 for
// wgmma), warp w = l/32, g = (l%32)/4 (groupID), t = l%4 (threadID_in_group). A register
// holds per_reg() elements in slots, slot 0 in the lowest bits.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma::isa {

enum class Family : uint8_t { mma, mma_sp, mma_sp_ordered, wgmma_sp };
enum class Kind : uint8_t { none, f8f6f4, mxf8f6f4, mxf4, mxf4nvf4 };
enum class BitOp : uint8_t { none, xor_popc, and_popc };
enum class Major : uint8_t { row, col };
enum class ASource : uint8_t { registers, descriptor };

std::string_view family_name(Family f);
std::string_view kind_name(Kind k);  // "", "kind::f8f6f4", ...

// A compile target. arch_specific targets ("sm_90a", "sm_120a") run only on that exact chip.
struct Target {
  int sm = 80;
  bool arch_specific = false;
  std::string name() const;  // "sm_80", "sm_90a"
  // Whether code for this target runs on a GPU of compute capability cc (e.g. 90 for the H100).
  bool runs_on(int cc) const { return arch_specific ? cc == sm : cc >= sm; }
  auto operator<=>(const Target&) const = default;
};

struct Coord {
  int row = 0;
  int col = 0;
  int part = 0;  // independent product inside one instruction: the quad-pair of m8n8k4 (0..3)
};

// How lanes, registers and slots map onto a matrix. Each kind is one small formula
// (isa.cpp, Fragment::at); `epr` below is elements per register.
enum class FragKind : uint8_t {
  a_m16,      // reg r: row g+8(r%2), col (r/2)·4·epr + t·epr + slot        (m16 A, packed sparse A)
  a_m8,       // row g, col t·epr + slot                                    (m8n8 A)
  b_n8,       // k = r·4·epr + t·epr + slot, n = g                          (B of every n8 shape)
  c_m16n8,    // element e = r·epr+slot: row g + 8(e/2), col 2t + e%2
  c_m8n8,     // element e: row g, col 2t + e
  a_qp_row,   // m8n8k4 quad-pair q=(l%16)/4, i=l%4+4(l>=16): row i, col e
  a_qp_col,   // m8n8k4: row e%4 + 4(l>=16), col l%4
  b_qp_row,   // m8n8k4: k = l%4, n = e + 4(l>=16)
  b_qp_col,   // m8n8k4: k = e, n = i
  c_qp_f16,   // m8n8k4 f16 C/D: row i, col e
  c_qp_f32,   // m8n8k4 f32 C/D: row l%2 + 4(l>=16) + 2((e/2)%2), col 2((l%4)/2) + e%2 + 4(e/4)
  wg_a,       // wgmma A from registers: a_m16 of warp w, rows + 16w
  wg_d,       // wgmma D: element e: row 16w + g + 8((e/2)%2), col 8(e/4) + 2t + e%2
  smem,       // operand in shared memory through a matrix descriptor: no register map
};

struct Fragment {
  FragKind kind = FragKind::smem;
  ElemType type = ElemType::f32;  // element type as held (packed A: the A type)
  int regs = 0;                   // registers per thread
  int reg_bits = 32;              // 32, or 64 for f64 operands
  int elem_bits = 32;             // bits each element occupies in the register (container width)
  int rows = 0, cols = 0;         // the matrix covered (packed sparse A: M x K/2), per part
  int per_reg() const { return reg_bits / elem_bits; }
  int elems() const { return regs * per_reg(); }
  Coord at(int lane, int reg, int slot) const;
};

// Which lanes hold metadata and which chunk each nibble describes.
struct MetaLayout {
  enum class Style : uint8_t {
    nibble_half,  // 16/32-bit types: nibbles 0-3 row g, 4-7 row g+8; chunk 4j + n%4
    lane_bit,     // 8/4-bit types: lane j%2 picks row g / g+8; chunk 8(j/2) + n
  };
  Style style = Style::nibble_half;
  int lanes_per_group = 1;    // 1, 2 or 4 lanes of each quad hold metadata
  uint8_t selectors = 0;      // bit s set when sparsity selector s is valid
  Pattern pattern = Pattern::p2_4;
  bool ordered = true;        // only idx0 < idx1 nibbles are valid
  int rows_per_warp = 16;

  // For selector s, the lane holding the nibble n that describes (row, chunk) — or, inversely,
  // the (row, chunk) described by nibble n of lane l; nullopt for a lane that is not read.
  std::optional<Coord> at(int lane, int nibble, int selector) const;  // Coord{row, chunk}
  bool selector_valid(int s) const { return s >= 0 && s < 4 && ((selectors >> s) & 1); }
  bool nibble_valid(uint8_t v) const { return spmma::nibble_valid(pattern, v, ordered); }
};

// Block scaling (.block_scale): scale_A is M x scale_vec, scale_B is scale_vec x N.
struct BlockScale {
  ElemType stype = ElemType::ue8m0;
  int scale_vec = 1;          // 1X, 2X or 4X: columns of scale_A / rows of scale_B
  bool explicit_vec = true;   // whether the PTX text spells .scale_vec::NX
};

struct Variant {
  std::string id;             // unique name: ptx, with ":rs" (A in registers) or ":ss" (A by
                              // descriptor) appended for wgmma, whose PTX text is the same for both
  std::string ptx;            // the instruction without operands, exactly as PTX spells it
  Family family = Family::mma;
  int m = 0, n = 0, k = 0;    // dense shape (sparse A is m x k with k/2 stored per row)
  ElemType a = ElemType::f16, b = ElemType::f16, c = ElemType::f32, d = ElemType::f32;
  Kind kind = Kind::none;
  bool satfinite = false;
  BitOp bitop = BitOp::none;
  Major a_major = Major::row, b_major = Major::col;
  ASource a_source = ASource::registers;
  std::optional<BlockScale> scale;
  int parts = 1;              // independent products per instruction (m8n8k4: 4 quad-pairs)
  Fragment fa, fb, fc, fd;    // fa is packed (m x k/2) for sparse forms
  std::optional<MetaLayout> meta;
  Target target;
  int ptx_isa = 0;            // e.g. 71 for PTX ISA 7.1
  const char* spec = "";      // the spec section that defines it
  bool verified = false;      // every layout fact confirmed on hardware (docs/conformance.md)

  bool sparse() const { return family != Family::mma; }
  bool wgmma() const { return family == Family::wgmma_sp; }
  int threads() const { return wgmma() ? 128 : 32; }
  int packed_k() const { return sparse() ? k / 2 : k; }
  std::string ptx_isa_name() const;  // "7.1"
};

// Every variant of the spec, built once.
const std::vector<Variant>& registry();
// Lookup by id, or by exact PTX text where that names one variant (a wgmma text names two:
// give the id). Surrounding spaces and a trailing ';' are ignored.
const Variant* find_variant(std::string_view id_or_ptx);
// As find_variant, but throws invalid_argument naming the text and the closest known variants.
const Variant& variant_or_throw(std::string_view ptx);
// The plain form of a family with this shape and these types (no .satfinite, no kind, no block
// scale; accumulator `acc` as C and D; for wgmma, A read as `a_source`), or null. Kernels name
// their instruction this way, by fields, never by editing an id.
const Variant* find_form(Family family, int m, int n, int k, ElemType a, ElemType b, ElemType acc,
                         ASource a_source = ASource::descriptor);

}  // namespace spmma::isa
