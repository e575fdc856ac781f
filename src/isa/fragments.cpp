// SPDX-License-Identifier: BSD-3-Clause
// The fragment formulas of PTX 9.7.14.5 (dense mma), 9.7.14.6.2 (mma.sp) and 9.7.15
// (wgmma), one small case each. The registry says which formula an operand uses.
#include <string>

#include "spmma/detail/meta_map.hpp"
#include "spmma/error.hpp"
#include "spmma/isa.hpp"

namespace spmma::isa {

Coord Fragment::at(int lane, int reg, int slot) const {
  const int l = lane % 32, w = lane / 32;
  const int g = l / 4, t = l % 4;
  const int epr = per_reg();
  const int e = reg * epr + slot;  // element index within the thread's fragment
  const int qp = (l % 16) / 4;     // m8n8k4 quad-pair
  const int hi = l >= 16 ? 1 : 0;
  switch (kind) {
    case FragKind::a_m16: return {g + 8 * (reg % 2), (reg / 2) * 4 * epr + t * epr + slot, 0};
    case FragKind::a_m8: return {g, t * epr + slot, 0};
    case FragKind::b_n8: return {reg * 4 * epr + t * epr + slot, g, 0};
    case FragKind::c_m16n8: return {g + 8 * (e / 2), 2 * t + e % 2, 0};
    case FragKind::c_m8n8: return {g, 2 * t + e, 0};
    case FragKind::a_qp_row: return {t + 4 * hi, e, qp};
    case FragKind::a_qp_col: return {e % 4 + 4 * hi, t, qp};
    case FragKind::b_qp_row: return {t, e + 4 * hi, qp};
    case FragKind::b_qp_col: return {e, t + 4 * hi, qp};
    case FragKind::c_qp_f16: return {t + 4 * hi, e, qp};
    case FragKind::c_qp_f32: return {l % 2 + 4 * hi + 2 * ((e / 2) % 2), 2 * (t / 2) + e % 2 + 4 * (e / 4), qp};
    case FragKind::wg_a: return {16 * w + g + 8 * (reg % 2), (reg / 2) * 4 * epr + t * epr + slot, 0};
    case FragKind::wg_d: return {16 * w + g + 8 * ((e / 2) % 2), 8 * (e / 4) + 2 * t + e % 2, 0};
    case FragKind::smem: break;
  }
  fail(Status::internal, "Fragment::at: operand in shared memory has no register map");
}

std::optional<Coord> MetaLayout::at(int lane, int nibble, int selector) const {
  const int l = lane % 32, w = lane / 32;
  const int g = l / 4, t = l % 4;
  const int j = t - selector * lanes_per_group;  // which of the group's metadata lanes
  if (j < 0 || j >= lanes_per_group) return std::nullopt;
  const detail::RowChunk rc = detail::meta_row_chunk(style == Style::nibble_half, g, j, nibble);
  return Coord{rows_per_warp * w + rc.row, rc.chunk, 0};
}

std::string Target::name() const { return "sm_" + std::to_string(sm) + (arch_specific ? "a" : ""); }

std::string Variant::ptx_isa_name() const {
  return std::to_string(ptx_isa / 10) + "." + std::to_string(ptx_isa % 10);
}

std::string_view family_name(Family f) {
  switch (f) {
    case Family::mma: return "mma";
    case Family::mma_sp: return "mma.sp";
    case Family::mma_sp_ordered: return "mma.sp::ordered_metadata";
    case Family::wgmma_sp: return "wgmma.mma_async.sp";
  }
  return "?";
}

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::none: return "";
    case Kind::f8f6f4: return "kind::f8f6f4";
    case Kind::mxf8f6f4: return "kind::mxf8f6f4";
    case Kind::mxf4: return "kind::mxf4";
    case Kind::mxf4nvf4: return "kind::mxf4nvf4";
  }
  return "?";
}

}  // namespace spmma::isa
