// SPDX-License-Identifier: BSD-3-Clause
// PTX text of registry instructions with their operands.
#include "spmma/ptx.hpp"

#include <algorithm>
#include <sstream>

namespace spmma::isa {

namespace {
std::string reg_list(const PtxOperands& o, char op, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + o.reg(op, i);
  return s + "}";
}
bool is_float_mma(const Variant& v) { return v.d != ElemType::s32; }
bool has_transpose(const Variant& v) { return v.a == ElemType::f16 || v.a == ElemType::bf16; }
}  // namespace

std::string ptx_reg_type(const Fragment& f) {
  if (f.reg_bits == 64) return ".f64";
  if (f.type == ElemType::f32 && f.elem_bits == 32) return ".f32";
  return ".b32";
}

std::string ptx_instruction(const Variant& v, const PtxOperands& o) {
  std::string s = v.ptx + " " + reg_list(o, 'd', v.fd.regs) + ", ";
  if (v.wgmma()) {
    s += v.a_source == ASource::registers ? reg_list(o, 'a', v.fa.regs) : o.a_desc;
    s += ", " + o.b_desc + ", " + o.reg('e', 0) + ", " + o.selector + ", " + o.scale_d;
    if (is_float_mma(v)) {
      s += ", " + o.imm_scale_a + ", " + o.imm_scale_b;
      if (has_transpose(v)) {
        if (v.a_source == ASource::descriptor) s += ", " + o.imm_trans_a;
        s += ", " + o.imm_trans_b;
      }
    }
    return s + ";";
  }
  s += reg_list(o, 'a', v.fa.regs) + ", " + reg_list(o, 'b', v.fb.regs) + ", " + reg_list(o, 'c', v.fc.regs);
  if (v.sparse()) s += ", " + o.reg('e', 0) + ", " + o.selector;
  if (v.scale)
    s += ", " + o.reg('x', 0) + ", {" + o.byte_id_a + ", " + o.thread_id_a + "}, " + o.reg('y', 0) + ", {" +
         o.byte_id_b + ", " + o.thread_id_b + "}";
  return s + ";";
}

std::string ptx_module(const std::vector<const Variant*>& variants, const std::string& target, int ptx_isa) {
  std::ostringstream m;
  m << ".version " << ptx_isa / 10 << "." << ptx_isa % 10 << "\n.target " << target << "\n.address_size 64\n\n";
  int idx = 0;
  for (const Variant* v : variants) {
    m << "// " << v->id << "\n.visible .entry probe_" << idx++ << "(.param .u64 out)\n{\n";
    const int na = v->fa.kind == FragKind::smem ? 0 : v->fa.regs;
    const int nb = v->fb.kind == FragKind::smem ? 0 : v->fb.regs;
    auto decl = [&](const char* name, const Fragment& f, int n) {
      if (n > 0) m << "  .reg " << ptx_reg_type(f) << " %" << name << "<" << n << ">;\n";
    };
    decl("a", v->fa, na);
    decl("b", v->fb, nb);
    decl("c", v->fc, v->wgmma() ? 0 : v->fc.regs);
    decl("d", v->fd, v->fd.regs);
    m << "  .reg .b32 %e, %x, %y;\n  .reg .b64 %desc_a, %desc_b, %out;\n  .reg .pred %scale_d;\n";
    auto zero = [&](const char* name, const Fragment& f, int n) {
      for (int i = 0; i < n; ++i) m << "  mov" << ptx_reg_type(f) << " %" << name << i << ", 0" << (f.reg_bits == 64 ? "d0000000000000000" : f.type == ElemType::f32 && f.elem_bits == 32 ? "f00000000" : "") << ";\n";
    };
    zero("a", v->fa, na);
    zero("b", v->fb, nb);
    zero(v->wgmma() ? "d" : "c", v->fc, v->fc.regs);
    m << "  mov.b32 %e, 0x44444444;\n  mov.b32 %x, 0x7f7f7f7f;\n  mov.b32 %y, 0x7f7f7f7f;\n"
      << "  mov.b64 %desc_a, 0;\n  mov.b64 %desc_b, 0;\n  setp.ne.b32 %scale_d, %e, 0;\n";
    PtxOperands o;
    o.reg = [](char op, int i) -> std::string {
      if (op == 'e') return "%e";
      if (op == 'x') return "%x";
      if (op == 'y') return "%y";
      return "%" + std::string(1, op) + std::to_string(i);
    };
    o.scale_d = "%scale_d";
    if (v->wgmma()) m << "  wgmma.fence.sync.aligned;\n";
    m << "  " << ptx_instruction(*v, o) << "\n";
    if (v->wgmma()) m << "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;\n";
    m << "  ld.param.u64 %out, [out];\n";
    for (int i = 0; i < v->fd.regs; ++i)
      m << "  st.global" << ptx_reg_type(v->fd) << " [%out+" << i * v->fd.reg_bits / 8 << "], %d" << i << ";\n";
    m << "  ret;\n}\n\n";
  }
  return m.str();
}

}  // namespace spmma::isa
