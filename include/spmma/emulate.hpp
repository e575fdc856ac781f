// SPDX-License-Identifier: BSD-3-Clause
// spmma — a CPU emulator of every registry variant.
//
// Two forms:
//   execute()         registers of every lane in, D registers out — as the hardware sees them;
//   execute_matrix()  whole operands in (sparse A as values + metadata), D out.
// Both share one arithmetic core (emulate.cpp, `multiply_accumulate`):
//   integers     exact 64-bit sum c + Σ a·b (b1: Σ popc(a op b)), then wrap to s32, or clamp
//                to [INT32_MIN, INT32_MAX] with .satfinite;
//   f64          a chain of fused multiply-adds in k order, from c (the spec's f64 FMA rule);
//   other floats exact products (tf32 inputs lose their low 13 bits first), a sum in extended
//                precision, one round-to-nearest-even into D's type (f16 accumulators too);
//                block scaling multiplies each product by its two decoded scale factors.
// Invalid inputs — a forbidden metadata nibble, an unordered nibble for an ordered form, a
// selector out of range, a set padding bit of an 8-bit container — throw Error(invalid_value
// or invalid_argument) naming the lane, register and value. Nothing is undefined.
#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "spmma/isa.hpp"
#include "spmma/matrix.hpp"
#include "spmma/sparse.hpp"

namespace spmma::emu {

// The registers of every lane for one instruction. Register r of lane l of an operand is at
// [l * fragment.regs + r]; 32-bit registers use the low 32 bits.
struct WarpState {
  std::vector<uint64_t> a, b, c;  // a: packed A fragment (empty when A comes by descriptor)
  std::vector<uint32_t> e;        // metadata register of each lane (sparse forms)
  int selector = 0;               // sparsity selector (an immediate of the instruction)
  // Block scaling: scale-a-data / scale-b-data of each lane and the selectors.
  std::vector<uint32_t> scale_a, scale_b;
  int byte_id_a = 0, thread_id_a = 0, byte_id_b = 0, thread_id_b = 0;
  // wgmma: operands in shared memory, already read through their descriptors.
  Matrix a_smem;                  // packed A, m x k/2 (A by descriptor only)
  Matrix b_smem;                  // B, k x n
  bool scale_d = true;            // false: D = A·B, C ignored
  int imm_scale_a = 1, imm_scale_b = 1;  // -1 negates A / B (float forms)
};

// D registers of every lane, laid out like WarpState::c.
std::vector<uint64_t> execute(const isa::Variant& v, const WarpState& s);

// Whole operands. For a form with parts > 1 (m8n8k4) the parts are stacked along the rows:
// A is (parts·m) x k, B (parts·k) x n, C and D (parts·m) x n.
struct MatrixOperands {
  std::optional<Compressed> a_sparse;  // sparse forms: m x k as values + metadata
  Matrix a;                            // dense forms: m x k
  Matrix b, c;
  Matrix scale_a, scale_b;             // block scaling: m x scale_vec and scale_vec x n
  bool accumulate = true;              // false: D = A·B
  bool negate_a = false, negate_b = false;
};
Matrix execute_matrix(const isa::Variant& v, const MatrixOperands& ops);

// The dense A an instruction multiplies: decompressed for sparse forms (throws like execute()).
Matrix dense_a(const isa::Variant& v, const MatrixOperands& ops);

// ---------------------------------------------------------------- inputs for tests and probes

enum class Inputs {
  general,  // random finite values over a wide range (floats) / the full range (integers)
  exact,    // small integers, so every product and sum is exact in every accumulator type
};

// Random valid register contents for one instruction: valid metadata for `selector` (a random
// valid one when nullopt) and random bits in the metadata of lanes the selector does not read.
WarpState random_state(const isa::Variant& v, std::mt19937_64& rng, Inputs kind = Inputs::general,
                       std::optional<int> selector = std::nullopt);

// The operands a WarpState holds, as matrices (A packed + metadata for sparse forms).
MatrixOperands gather(const isa::Variant& v, const WarpState& s);
// The registers of every lane holding matrix m in fragment f (the inverse of gathering).
std::vector<uint64_t> scatter(const isa::Variant& v, const isa::Fragment& f, const Matrix& m);
// D as a matrix, from the D registers execute() returned.
Matrix gather_d(const isa::Variant& v, const std::vector<uint64_t>& d_regs);

}  // namespace spmma::emu
