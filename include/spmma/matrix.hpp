// SPDX-License-Identifier: BSD-3-Clause
// spmma — a plain host matrix of raw element bit patterns, row-major.
#pragma once
#include <cstdint>
#include <vector>

#include "spmma/types.hpp"

namespace spmma {

struct Matrix {
  ElemType type = ElemType::f32;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint64_t> bits;  // rows*cols bit patterns, row-major

  Matrix() = default;
  Matrix(ElemType t, int64_t r, int64_t c) : type(t), rows(r), cols(c), bits(static_cast<size_t>(r * c), 0) {}

  uint64_t& at(int64_t r, int64_t c) { return bits[static_cast<size_t>(r * cols + c)]; }
  uint64_t at(int64_t r, int64_t c) const { return bits[static_cast<size_t>(r * cols + c)]; }
  double value(int64_t r, int64_t c) const { return decode(type, at(r, c)); }
  void set_value(int64_t r, int64_t c, double v) { at(r, c) = encode(type, v); }
  bool operator==(const Matrix&) const = default;
};

}  // namespace spmma
