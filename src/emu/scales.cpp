// SPDX-License-Identifier: BSD-3-Clause
// Block scaling: decoded scale matrices and the register layout of scale-a-data / scale-b-data.
#include "emu/scales.hpp"

#include <cmath>
#include <string>

#include "spmma/error.hpp"

namespace spmma::emu {

ScaleView::ScaleView(const isa::Variant& v, const Matrix& sa, const Matrix& sb)
    : sa_(&sa), sb_(&sb), k_per_scale_(v.k / v.scale->scale_vec) {}

long double ScaleView::a(int row, int k) const { return decode(sa_->type, sa_->at(row, k / k_per_scale_)); }
long double ScaleView::b(int k, int col) const { return decode(sb_->type, sb_->at(k / k_per_scale_, col)); }

namespace {

// PTX "Block Scaling for mma.sync" (Table 37): thread-id-a picks a lane pair of each quad
// (0: lanes t = 0,1; 1: t = 2,3), thread-id-b one lane of each quad; byte-id picks the first
// byte of the S consecutive bytes holding scale columns 0..S-1.
void check_selectors(const isa::Variant& v, int byte_id, int thread_id, int max_thread, const char* which) {
  const int vec = v.scale->scale_vec;
  const bool byte_ok = vec == 1 ? (byte_id >= 0 && byte_id <= 3) : vec == 2 ? (byte_id == 0 || byte_id == 2) : byte_id == 0;
  if (!byte_ok)
    fail(Status::invalid_argument, std::string("byte-id-") + which + " = " + std::to_string(byte_id) +
                                       " is not valid with .scale_vec::" + std::to_string(vec) +
                                       "X (valid: " + (vec == 1 ? "0..3" : vec == 2 ? "0 or 2" : "0") + ")");
  if (thread_id < 0 || thread_id > max_thread)
    fail(Status::invalid_argument, std::string("thread-id-") + which + " = " + std::to_string(thread_id) +
                                       " is out of range (valid: 0.." + std::to_string(max_thread) + ")");
}

int scale_a_lane(int row, int thread_id) { return 4 * (row % 8) + 2 * thread_id + row / 8; }
int scale_b_lane(int col, int thread_id) { return 4 * col + thread_id; }

}  // namespace

void gather_scales(const isa::Variant& v, const WarpState& s, Matrix& scale_a, Matrix& scale_b) {
  const int vec = v.scale->scale_vec;
  check_selectors(v, s.byte_id_a, s.thread_id_a, 1, "a");
  check_selectors(v, s.byte_id_b, s.thread_id_b, 3, "b");
  if (s.scale_a.size() != 32 || s.scale_b.size() != 32)
    fail(Status::invalid_argument, "block scaling needs scale-a-data and scale-b-data for all 32 lanes");
  scale_a = Matrix(v.scale->stype, v.m, vec);
  scale_b = Matrix(v.scale->stype, vec, v.n);
  for (int r = 0; r < v.m; ++r)
    for (int c = 0; c < vec; ++c)
      scale_a.at(r, c) = (s.scale_a[scale_a_lane(r, s.thread_id_a)] >> (8 * (s.byte_id_a + c))) & 0xFF;
  for (int n = 0; n < v.n; ++n)
    for (int c = 0; c < vec; ++c)
      scale_b.at(c, n) = (s.scale_b[scale_b_lane(n, s.thread_id_b)] >> (8 * (s.byte_id_b + c))) & 0xFF;
}

void random_scales(const isa::Variant& v, std::mt19937_64& rng, bool exact, WarpState& s) {
  const int vec = v.scale->scale_vec;
  const ElemType st = v.scale->stype;
  // Scales near 1 keep products in range: ue8m0 2^-3..2^3, ue4m3 the same powers (or any
  // finite pattern in [1/8, 8] when not exact).
  auto one_scale = [&]() -> uint32_t {
    const int e = static_cast<int>(rng() % 7) - 3;
    if (exact || st == ElemType::ue8m0) return static_cast<uint32_t>(encode(st, std::ldexp(1.0, e)));
    std::uniform_real_distribution<double> u(0.125, 8.0);
    return static_cast<uint32_t>(encode(st, u(rng)));
  };
  s.scale_a.assign(32, 0);
  s.scale_b.assign(32, 0);
  for (auto& r : s.scale_a)
    for (int byte = 0; byte < 4; ++byte) r |= one_scale() << (8 * byte);
  for (auto& r : s.scale_b)
    for (int byte = 0; byte < 4; ++byte) r |= one_scale() << (8 * byte);
  const int byte_choices = vec == 1 ? 4 : vec == 2 ? 2 : 1;
  s.byte_id_a = static_cast<int>(rng() % byte_choices) * vec;
  s.byte_id_b = static_cast<int>(rng() % byte_choices) * vec;
  s.thread_id_a = static_cast<int>(rng() % 2);
  s.thread_id_b = static_cast<int>(rng() % 4);
}

}  // namespace spmma::emu
