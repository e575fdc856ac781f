// SPDX-License-Identifier: BSD-3-Clause
// Block scaling (.block_scale): scale factors as matrices, and their register layout.
#pragma once
#include <random>

#include "spmma/emulate.hpp"

namespace spmma::emu {

// scale_A (m x scale_vec) and scale_B (scale_vec x n), decoded; each scale column covers
// k / scale_vec consecutive dense k.
class ScaleView {
 public:
  ScaleView() = default;
  ScaleView(const isa::Variant& v, const Matrix& sa, const Matrix& sb);
  long double a(int row, int k) const;
  long double b(int k, int col) const;

 private:
  const Matrix* sa_ = nullptr;
  const Matrix* sb_ = nullptr;
  int k_per_scale_ = 1;
};

// Reads scale_A / scale_B from the lanes' scale-a-data / scale-b-data registers, as selected by
// {byte-id, thread-id}; throws invalid_argument for a selector out of range.
void gather_scales(const isa::Variant& v, const WarpState& s, Matrix& scale_a, Matrix& scale_b);
// Random scale registers and valid selectors; `exact` keeps scales to powers of two near 1.
void random_scales(const isa::Variant& v, std::mt19937_64& rng, bool exact, WarpState& s);

}  // namespace spmma::emu
