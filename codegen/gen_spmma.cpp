// SPDX-License-Identifier: BSD-3-Clause
// spmma_gen: writes every source the build derives from the ISA registry.
//
//   spmma_gen OUT_DIR PROBE_SHARDS GEMM_SHARDS
// writes into OUT_DIR
//   ptx_mma_sp.cuh, ptx_mma.cuh, ptx_wgmma_sp.cuh  inline-PTX wrappers, one per registry variant an
//                                                  sm_90a GPU runs;
//   probes_<i>.cu (i < PROBE_SHARDS), probes_table.cu  one conformance probe kernel per such
//                                                  variant, and the table of their launchers;
//   gemm_forms_sm80.cuh, gemm_forms_sm90.cuh       Form<A, B>: each row of the pair table
//                                                  (spmma/detail/gemm_pairs.hpp) with its
//                                                  instruction, found in the registry by fields;
//   gemm_sm80.cu                                   the sm80 kernel for every pair, and its table;
//   gemm_sm90_<i>.cu (i < GEMM_SHARDS), gemm_table.cu  the sm90 kernel for every pair it covers at
//                                                  every built tile width (sm90/tiles.hpp), the
//                                                  decode kernel for the same pairs at its widths
//                                                  (sm90/decode_tiles.hpp), and the tables of them.
// Shards spread the kernels so that a parallel build compiles them side by side.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "sm90/decode_tiles.hpp"
#include "sm90/tiles.hpp"
#include "spmma/detail/gemm_pairs.hpp"
#include "spmma/isa.hpp"
#include "spmma/ptx.hpp"

using namespace spmma;
using namespace spmma::isa;

namespace {

// The C++ type and inline-asm constraint letter of a fragment's registers.
struct RegKind {
  const char* ctype;
  char letter;
  const char* from_u64;  // expression turning uint64_t `x` into ctype
  const char* to_u64;    // expression turning ctype `x` into uint64_t
};

RegKind reg_kind(const Fragment& f) {
  if (f.reg_bits == 64) return {"double", 'd', "__longlong_as_double(static_cast<long long>(x))", "static_cast<uint64_t>(__double_as_longlong(x))"};
  if (ptx_reg_type(f) == ".f32") return {"float", 'f', "__uint_as_float(static_cast<uint32_t>(x))", "static_cast<uint64_t>(__float_as_uint(x))"};
  return {"uint32_t", 'r', "static_cast<uint32_t>(x)", "static_cast<uint64_t>(x)"};
}

std::string guard(const Variant& v) {
  if (v.target.arch_specific) return "defined(__CUDA_ARCH_FEAT_SM" + std::to_string(v.target.sm) + "_ALL)";
  return "defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= " + std::to_string(v.target.sm * 10);
}

std::string subst(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

void load_regs(std::ostream& o, const char* name, const Fragment& f, const char* base, const char* indent) {
  const RegKind k = reg_kind(f);
  for (int r = 0; r < f.regs; ++r)
    o << indent << k.ctype << " " << name << r << " = [](uint64_t x) { return " << k.from_u64 << "; }(" << base
      << "[" << r << "]);\n";
}

// The asm statement for one selector value.
std::string asm_statement(const Variant& v, int selector, const char* indent) {
  const bool wg = v.wgmma();
  const bool a_regs = !wg || v.a_source == ASource::registers;
  const int nd = v.fd.regs, na = a_regs ? v.fa.regs : 0, nb = wg ? 0 : v.fb.regs, nc = wg ? 0 : v.fc.regs;
  // Operand numbers: outputs d first, then a, b, c, e (and for wgmma the descriptors and scale-d).
  const int a0 = nd, b0 = a0 + na, c0 = b0 + nb, e_idx = c0 + nc;
  PtxOperands ops;
  ops.reg = [&](char op, int i) -> std::string {
    switch (op) {
      case 'd': return "%" + std::to_string(i);
      case 'a': return "%" + std::to_string(a0 + i);
      case 'b': return "%" + std::to_string(b0 + i);
      case 'c': return "%" + std::to_string(c0 + i);
      case 'e': return "%" + std::to_string(e_idx);
    }
    return "?";
  };
  ops.selector = std::to_string(selector);
  ops.a_desc = "%" + std::to_string(e_idx + 1);
  ops.b_desc = "%" + std::to_string(e_idx + 2);
  ops.scale_d = "p";
  std::string text = ptx_instruction(v, ops);
  if (wg) text = "{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + std::to_string(e_idx + 3) + ", 0;\\n" + text + "\\n}";
  std::ostringstream s;
  s << indent << "asm volatile(\"" << text << "\"\n" << indent << "    : ";
  const RegKind dk = reg_kind(v.fd);
  for (int i = 0; i < nd; ++i) s << (i ? ", " : "") << "\"" << (wg ? "+" : "=") << dk.letter << "\"(d" << i << ")";
  s << "\n" << indent << "    : ";
  bool first = true;
  auto in = [&](char letter, const std::string& name) {
    s << (first ? "" : ", ") << "\"" << letter << "\"(" << name << ")";
    first = false;
  };
  for (int i = 0; i < na; ++i) in(reg_kind(v.fa).letter, "a" + std::to_string(i));
  for (int i = 0; i < nb; ++i) in(reg_kind(v.fb).letter, "b" + std::to_string(i));
  for (int i = 0; i < nc; ++i) in(reg_kind(v.fc).letter, "c" + std::to_string(i));
  if (v.sparse()) in('r', "e");
  else s << (first ? "" : ", ") << "\"r\"(e)";  // keeps operand numbering uniform; unused
  if (wg) {
    in('l', "desc_a");
    in('l', "desc_b");
    in('r', "scale_d");
  }
  s << (wg ? "\n" + std::string(indent) + "    : \"memory\");\n" : ");\n");
  return s.str();
}

void emit_probe(std::ostream& o, const Variant& v, int idx) {
  const bool wg = v.wgmma();
  const bool a_regs = !wg || v.a_source == ASource::registers;
  const int threads = v.threads();
  o << "// " << v.id << "\n";
  o << "__global__ void __launch_bounds__(" << threads << ") probe_" << idx << "(ProbeArgs p) {\n";
  o << "#if " << guard(v) << "\n";
  o << "  const int lane = threadIdx.x;\n";
  if (wg) o << "  extern __shared__ __align__(1024) uint8_t smem[];\n";
  o << "  for (int t = blockIdx.x; t < p.trials; t += gridDim.x) {\n";
  o << "    const size_t slot = static_cast<size_t>(t) * " << threads << " + lane;\n";
  if (a_regs) {
    o << "    const uint64_t* A = p.a + slot * " << v.fa.regs << ";\n";
    load_regs(o, "a", v.fa, "A", "    ");
  }
  if (!wg) {
    o << "    const uint64_t* B = p.b + slot * " << v.fb.regs << ";\n";
    load_regs(o, "b", v.fb, "B", "    ");
    o << "    const uint64_t* C = p.c + slot * " << v.fc.regs << ";\n";
    load_regs(o, "c", v.fc, "C", "    ");
    const RegKind dk = reg_kind(v.fd);
    for (int r = 0; r < v.fd.regs; ++r) o << "    " << dk.ctype << " d" << r << ";\n";
  } else {
    // D starts as C (the instruction accumulates into its D registers).
    o << "    const uint64_t* C = p.c + slot * " << v.fc.regs << ";\n";
    load_regs(o, "d", v.fd, "C", "    ");
    o << "    copy_smem_images(p, t, smem);\n";
    o << "    const uint64_t desc_a = smem_desc(smem + (p.a_offset ? p.a_offset[t] : 0u), p.lbo_a, p.sbo_a, p.swizzle_a);\n";
    o << "    const uint64_t desc_b = smem_desc(smem + p.smem_a_bytes_padded(), p.lbo_b, p.sbo_b, 0);\n";
    o << "    const uint32_t scale_d = p.scale_d[t];\n";
    o << "    ::spmma::ptx::wgmma_fence();\n";
  }
  o << "    const uint32_t e = p.e ? p.e[slot] : 0u;\n";
  if (v.sparse()) {
    o << "    switch (p.sel[t]) {\n";
    for (int s = 0; s < 4; ++s) {
      if (!v.meta->selector_valid(s)) continue;
      o << "      case " << s << ":\n" << asm_statement(v, s, "        ") << "        break;\n";
    }
    o << "      default: break;\n    }\n";
  } else {
    o << asm_statement(v, 0, "    ");
  }
  if (wg) {
    o << "    ::spmma::ptx::wgmma_commit();\n";
    o << "    ::spmma::ptx::wgmma_wait<0>();\n";
    for (int r = 0; r < v.fd.regs; ++r) o << "    ::spmma::ptx::fence_operand(d" << r << ");\n";
  }
  o << "    uint64_t* D = p.d + slot * " << v.fd.regs << ";\n";
  const RegKind dk = reg_kind(v.fd);
  for (int r = 0; r < v.fd.regs; ++r)
    o << "    D[" << r << "] = [](" << dk.ctype << " x) { return " << dk.to_u64 << "; }(d" << r << ");\n";
  if (wg) o << "    __syncthreads();\n";
  o << "  }\n#else\n  (void)p;\n#endif\n}\n";
  o << "}  // namespace\nvoid launch_" << idx << "(const ProbeArgs& p, int blocks) { probe_" << idx << "<<<blocks, "
    << threads << ", " << (wg ? "p.smem_total()" : "0") << ">>>(p); }\nnamespace {\n\n";
}

// ---------------------------------------------------------------- inline-PTX wrappers

std::string wrapper_name(const Variant& v) {
  std::string n = v.id;
  n = subst(n, ".sync.aligned", "");
  n = subst(n, "::", "_");
  for (char& c : n)
    if (c == '.' || c == ':') c = '_';
  return n;
}

// One inline device function per variant: registers as arrays, the sparsity selector and
// wgmma's immediates as template arguments ("n" operands), the text from the registry.
void emit_wrapper(std::ostream& o, const Variant& v) {
  const bool wg = v.wgmma();
  const bool a_regs = !wg || v.a_source == ASource::registers;
  const bool fl = v.d != ElemType::s32;
  const bool trans = wg && (v.a == ElemType::f16 || v.a == ElemType::bf16);
  const int nd = v.fd.regs, na = a_regs ? v.fa.regs : 0, nb = wg ? 0 : v.fb.regs, nc = wg ? 0 : v.fc.regs;
  const RegKind dk = reg_kind(v.fd), ak = reg_kind(v.fa), bk = reg_kind(v.fb), ck = reg_kind(v.fc);
  // Operand numbering: d, a, b, c, e, then desc_a, desc_b, scale_d, then the immediates.
  int next = nd + na + nb + nc;
  const int e_idx = v.sparse() ? next++ : -1;
  const int da_idx = wg && !a_regs ? next++ : -1;
  const int db_idx = wg ? next++ : -1;
  const int sd_idx = wg ? next++ : -1;
  const int sel_idx = v.sparse() ? next++ : -1;
  const int sa_idx = wg && fl ? next++ : -1, sb_idx = wg && fl ? next++ : -1;
  const int ta_idx = trans && !a_regs ? next++ : -1, tb_idx = trans ? next++ : -1;
  PtxOperands ops;
  ops.reg = [&](char op, int i) -> std::string {
    switch (op) {
      case 'd': return "%" + std::to_string(i);
      case 'a': return "%" + std::to_string(nd + i);
      case 'b': return "%" + std::to_string(nd + na + i);
      case 'c': return "%" + std::to_string(nd + na + nb + i);
      case 'e': return "%" + std::to_string(e_idx);
    }
    return "?";
  };
  if (v.sparse()) ops.selector = "%" + std::to_string(sel_idx);
  if (da_idx >= 0) ops.a_desc = "%" + std::to_string(da_idx);
  if (db_idx >= 0) ops.b_desc = "%" + std::to_string(db_idx);
  ops.scale_d = "p";
  if (sa_idx >= 0) ops.imm_scale_a = "%" + std::to_string(sa_idx), ops.imm_scale_b = "%" + std::to_string(sb_idx);
  if (ta_idx >= 0) ops.imm_trans_a = "%" + std::to_string(ta_idx);
  if (tb_idx >= 0) ops.imm_trans_b = "%" + std::to_string(tb_idx);
  std::string text = ptx_instruction(v, ops);
  if (wg) text = "{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + std::to_string(sd_idx) + ", 0;\\n" + text + "\\n}";

  std::vector<std::string> tparams;
  if (v.sparse()) tparams.push_back("int Sel = 0");
  if (sa_idx >= 0) tparams.push_back("int ScaleA = 1"), tparams.push_back("int ScaleB = 1");
  if (ta_idx >= 0) tparams.push_back("int TransA = 0");
  if (tb_idx >= 0) tparams.push_back("int TransB = 0");
  o << "// " << v.id << "  (" << v.target.name() << ", PTX ISA " << v.ptx_isa_name() << ")\n";
  if (!tparams.empty()) {
    o << "template <";
    for (size_t i = 0; i < tparams.size(); ++i) o << (i ? ", " : "") << tparams[i];
    o << ">\n";
  }
  o << "__device__ __forceinline__ void " << wrapper_name(v) << "(" << dk.ctype << " (&d)[" << nd << "]";
  if (a_regs) o << ", const " << ak.ctype << " (&a)[" << na << "]";
  else o << ", uint64_t desc_a";
  if (wg) o << ", uint64_t desc_b";
  else o << ", const " << bk.ctype << " (&b)[" << nb << "], const " << ck.ctype << " (&c)[" << nc << "]";
  if (v.sparse()) o << ", uint32_t e";
  if (wg) o << ", bool scale_d";
  o << ") {\n#if " << guard(v) << "\n  asm volatile(\"" << text << "\"\n      : ";
  for (int i = 0; i < nd; ++i) o << (i ? ", " : "") << "\"" << (wg ? "+" : "=") << dk.letter << "\"(d[" << i << "])";
  o << "\n      : ";
  bool first = true;
  auto in = [&](const std::string& c, const std::string& name) {
    o << (first ? "" : ", ") << "\"" << c << "\"(" << name << ")";
    first = false;
  };
  for (int i = 0; i < na; ++i) in(std::string(1, ak.letter), "a[" + std::to_string(i) + "]");
  for (int i = 0; i < nb; ++i) in(std::string(1, bk.letter), "b[" + std::to_string(i) + "]");
  for (int i = 0; i < nc; ++i) in(std::string(1, ck.letter), "c[" + std::to_string(i) + "]");
  if (v.sparse()) in("r", "e");
  if (da_idx >= 0) in("l", "desc_a");
  if (db_idx >= 0) in("l", "desc_b");
  if (sd_idx >= 0) in("r", "static_cast<uint32_t>(scale_d)");
  if (v.sparse()) in("n", "Sel");
  if (sa_idx >= 0) in("n", "ScaleA"), in("n", "ScaleB");
  if (ta_idx >= 0) in("n", "TransA");
  if (tb_idx >= 0) in("n", "TransB");
  o << (wg ? "\n      : \"memory\");\n" : ");\n");
  o << "#else\n  __trap();\n#endif\n}\n\n";
}

// Writes only when the text changed, so that an unchanged probe file keeps its timestamp and
// is not compiled again.
bool write_file(const std::string& path, const std::string& text) {
  {
    std::ifstream old(path, std::ios::binary);
    if (old) {
      std::ostringstream cur;
      cur << old.rdbuf();
      if (cur.str() == text) return true;
    }
  }
  std::ofstream f(path);
  if (!f) {
    std::cerr << "spmma_gen: cannot write " << path << "\n";
    return false;
  }
  f << text;
  f.close();  // a full disk shows here, not as a truncated source file in the build
  if (!f) {
    std::cerr << "spmma_gen: write failed: " << path << "\n";
    return false;
  }
  return true;
}


// ---------------------------------------------------------------- GEMM kernels

using detail::GemmPair;

std::string elem(ElemType t) { return "ElemType::" + std::string(type_name(t)); }
std::string pair_args(const GemmPair& p) { return elem(p.a) + ", " + elem(p.b); }
std::string acc_ctype(const GemmPair& p) { return detail::gemm_integer(p.a) ? "uint32_t" : "float"; }
int gemm_k(const GemmPair& p) { return detail::kGemmDenseBitsPerStep / memory_bits(p.a); }

const Variant* sm80_form(const GemmPair& p) {
  return find_form(Family::mma_sp_ordered, 16, 8, gemm_k(p), p.a, p.b, detail::gemm_accumulator(p.a), ASource::registers);
}
const Variant* sm90_form(const GemmPair& p, int n) {
  return find_form(Family::wgmma_sp, 64, n, gemm_k(p), p.a, p.b, detail::gemm_accumulator(p.a), ASource::descriptor);
}

// One sm90 instantiation: a pair at a tile width, with or without fp8 promotion.
struct Sm90Inst {
  GemmPair pair;
  int n;
  bool promoted;
  const Variant* form;
  std::string targs() const {
    return pair_args(pair) + ", " + std::to_string(n) + ", " + (promoted ? "true" : "false");
  }
};

// The decode kernel (sm90/decode.cuh): every pair the sm90 kernel covers, at each decode tile
// width, with its sm80 form (the warps' math) and for fp8 also its sm90 form at that width (the
// warpgroup's: sm90/decode_tiles.hpp).
struct DecodeInst {
  GemmPair pair;
  int n;
  bool warpgroup;
  const Variant* form;
  std::string math() const { return warpgroup ? "decode::Math::warpgroup" : "decode::Math::warps"; }
  std::string targs() const { return pair_args(pair) + ", " + std::to_string(n) + ", " + math(); }
};

std::vector<DecodeInst> decode_instances() {
  std::vector<DecodeInst> out;
  for (const GemmPair& p : detail::kGemmPairs) {
    bool covered = false;
    for (const sm90::TileWidth& t : sm90::kTileWidths) covered = covered || sm90_form(p, t.n);
    if (!covered) continue;
    for (int n : sm90::decode::kTileWidths) out.push_back({p, n, false, sm80_form(p)});
    if (sm90::decode::has_warpgroup_math(p.a))
      for (int n : sm90::decode::kTileWidths) out.push_back({p, n, true, sm90_form(p, n)});
  }
  return out;
}

std::vector<Sm90Inst> sm90_instances() {
  std::vector<Sm90Inst> out;
  for (const GemmPair& p : detail::kGemmPairs)
    for (const sm90::TileWidth& t : sm90::kTileWidths) {
      const Variant* v = sm90_form(p, t.n);
      if (!v) continue;
      if (t.plain) out.push_back({p, t.n, false, v});
      if (t.promoted && detail::gemm_promotes(p.a)) out.push_back({p, t.n, true, v});
    }
  return out;
}

const char* kGemmHead = "// Generated by spmma_gen (codegen/gen_spmma.cpp) from the pair table and the ISA registry. Do not edit.\n";

std::string gemm_forms_sm80() {
  std::ostringstream o;
  o << kGemmHead << "// Form<A, B>: the sm80 kernel's mma.sp::ordered_metadata instruction for each type pair.\n"
    << "#pragma once\n#include <cstdint>\n\n#include \"ptx_mma_sp.cuh\"\n#include \"spmma/types.hpp\"\n\n"
    << "namespace spmma::sm80 {\n\ntemplate <ElemType A, ElemType B>\nstruct Form;\n\n";
  for (const GemmPair& p : detail::kGemmPairs) {
    const Variant* v = sm80_form(p);
    o << "// " << v->id << "\ntemplate <>\nstruct Form<" << pair_args(p) << "> {\n"
      << "  using Acc = " << acc_ctype(p) << ";\n"
      << "  static constexpr int kInstK = " << v->k << ";\n"
      << "  static constexpr int kBBits = " << memory_bits(p.b) << ";\n"
      << "  __device__ __forceinline__ static void mma(Acc (&d)[" << v->fd.regs << "], const uint32_t (&a)[" << v->fa.regs
      << "], const uint32_t (&b)[" << v->fb.regs << "], uint32_t e) {\n"
      << "    ::spmma::ptx::" << wrapper_name(*v) << "<0>(d, a, b, d, e);\n  }\n};\n\n";
  }
  o << "}  // namespace spmma::sm80\n";
  return o.str();
}

std::string gemm_forms_sm90() {
  std::ostringstream o;
  o << kGemmHead << "// Form<A, B>: the sm90 kernel's wgmma.mma_async.sp instruction (A and B from shared memory)\n"
    << "// for each type pair it covers, at each tile width it is built with.\n"
    << "#pragma once\n#include <cstdint>\n\n#include \"ptx_wgmma_sp.cuh\"\n#include \"spmma/types.hpp\"\n\n"
    << "namespace spmma::sm90 {\n\ntemplate <ElemType A, ElemType B>\nstruct Form;\n\n";
  for (const GemmPair& p : detail::kGemmPairs) {
    // The decode kernel's widths too where its math is the warpgroup's (fp8), each width once.
    std::vector<int> widths;
    if (sm90::decode::has_warpgroup_math(p.a))
      for (int n : sm90::decode::kTileWidths) widths.push_back(n);
    for (const sm90::TileWidth& t : sm90::kTileWidths)
      if (std::find(widths.begin(), widths.end(), t.n) == widths.end()) widths.push_back(t.n);
    std::vector<const Variant*> forms;
    for (int n : widths)
      if (const Variant* v = sm90_form(p, n)) forms.push_back(v);
    if (forms.empty()) continue;
    o << "template <>\nstruct Form<" << pair_args(p) << "> {\n"
      << "  using Acc = " << acc_ctype(p) << ";\n"
      << "  static constexpr int kInstK = " << forms[0]->k << ";\n"
      << "  template <int N>\n"
      << "  __device__ __forceinline__ static void mma(Acc (&d)[N / 2], uint64_t a, uint64_t b, uint32_t e, bool scale_d) {\n";
    for (size_t i = 0; i < forms.size(); ++i)
      o << "    " << (i ? "else if" : "if") << " constexpr (N == " << forms[i]->n << ")  // " << forms[i]->id << "\n"
        << "      ::spmma::ptx::" << wrapper_name(*forms[i]) << "<0>(d, a, b, e, scale_d);\n";
    o << "    else\n      static_assert(N < 0, \"no wgmma.sp form at this tile width\");\n  }\n};\n\n";
  }
  o << "}  // namespace spmma::sm90\n";
  return o.str();
}

std::string gemm_sm80() {
  std::ostringstream o;
  o << kGemmHead << "// The sm80 kernel for every type pair, and its table.\n#include \"sm80/launch_tile.cuh\"\n\n"
    << "namespace spmma::sm80 {\nnamespace {\n\nconst Entry kEntries[] = {\n";
  for (const GemmPair& p : detail::kGemmPairs) {
    const Variant* v = sm80_form(p);
    o << "    {" << pair_args(p) << ", \"" << v->id << "\", " << v->k << ", &prepare_tile<" << pair_args(p) << ">},\n";
  }
  o << "};\n\n}  // namespace\n\nstd::span<const Entry> entries() { return kEntries; }\n\n}  // namespace spmma::sm80\n";
  return o.str();
}

std::string gemm_sm90_shard(const std::vector<Sm90Inst>& insts, const std::vector<DecodeInst>& dec, int shard,
                            int shards) {
  std::ostringstream o;
  o << kGemmHead << "// sm90 kernel and decode kernel instantiations, shard " << shard << " of " << shards << ".\n"
    << "#include \"sm90/decode_launch_tile.cuh\"\n#include \"sm90/launch_tile.cuh\"\n\nnamespace spmma::sm90 {\n\n";
  for (size_t i = static_cast<size_t>(shard); i < insts.size(); i += static_cast<size_t>(shards))
    o << "template cuda::Launch prepare_tile<" << insts[i].targs() << ">(const gemm::Params&);\n";
  for (size_t i = static_cast<size_t>(shard); i < dec.size(); i += static_cast<size_t>(shards))
    o << "template cuda::Launch decode::prepare_tile<" << dec[i].targs() << ">(const gemm::Params&);\n";
  o << "\n}  // namespace spmma::sm90\n";
  return o.str();
}

std::string gemm_sm90_table(const std::vector<Sm90Inst>& insts, const std::vector<DecodeInst>& dec) {
  std::ostringstream o;
  o << kGemmHead << "// The tables of the sm90 kernel's and the decode kernel's instantiations (defined in gemm_sm90_<i>.cu).\n"
    << "#include \"sm90/decode_launch.hpp\"\n#include \"sm90/launch_sm90.hpp\"\n\nnamespace spmma::sm90 {\n\n";
  for (const Sm90Inst& x : insts)
    o << "extern template cuda::Launch prepare_tile<" << x.targs() << ">(const gemm::Params&);\n";
  o << "\nnamespace {\n\nconst Entry kEntries[] = {\n";
  for (const Sm90Inst& x : insts)
    o << "    {" << pair_args(x.pair) << ", " << x.n << ", " << (x.promoted ? "true" : "false") << ", \"" << x.form->id
      << "\", " << x.form->k << ", &prepare_tile<" << x.targs() << ">},\n";
  o << "};\n\n}  // namespace\n\nstd::span<const Entry> entries() { return kEntries; }\n\nnamespace decode {\n\n";
  for (const DecodeInst& x : dec)
    o << "extern template cuda::Launch prepare_tile<" << x.targs() << ">(const gemm::Params&);\n";
  o << "\nnamespace {\n\nconst Entry kEntries[] = {\n";
  for (const DecodeInst& x : dec)
    o << "    {" << pair_args(x.pair) << ", " << x.n << ", " << x.math() << ", \"" << x.form->id << "\", " << x.form->k
      << ", &prepare_tile<" << x.targs() << ">},\n";
  o << "};\n\n}  // namespace\n\nstd::span<const Entry> entries() { return kEntries; }\n\n}  // namespace decode\n"
    << "}  // namespace spmma::sm90\n";
  return o.str();
}

// Every pair must have its sm80 form: the sm80 kernel is the one that runs every pair.
bool check_pairs() {
  bool ok = true;
  for (const GemmPair& p : detail::kGemmPairs)
    if (!sm80_form(p)) {
      std::cerr << "spmma_gen: the pair table's row (" << type_name(p.a) << ", " << type_name(p.b)
                << ") has no mma.sp::ordered_metadata m16n8k" << gemm_k(p) << " form in the registry\n";
      ok = false;
    }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: spmma_gen OUT_DIR PROBE_SHARDS GEMM_SHARDS\n";
    return 2;
  }
  const std::string dir = argv[1];
  const int shards = std::max(1, std::atoi(argv[2])), gemm_shards = std::max(1, std::atoi(argv[3]));
  std::vector<const Variant*> vs;
  for (const Variant& v : registry())
    if (v.target.runs_on(90)) vs.push_back(&v);  // sm_120a forms: assembled by ptxas, emulated only
  const char* head = "// Generated by spmma_gen (codegen/gen_spmma.cpp) from the ISA registry. Do not edit.\n#include <cstdint>\n"
                     "#include \"probe/probe_device.cuh\"\n\nnamespace spmma::probe {\n";
  std::vector<std::ostringstream> out(static_cast<size_t>(shards));
  for (auto& o : out) o << head << "namespace {\n\n";
  std::ostringstream table;
  table << head;
  for (size_t i = 0; i < vs.size(); ++i) table << "void launch_" << i << "(const ProbeArgs&, int);\n";
  table << "\nconst ProbeEntry kProbes[] = {\n";
  for (size_t i = 0; i < vs.size(); ++i) {
    // Round-robin keeps the heavy wide-N wgmma kernels spread over the shards.
    emit_probe(out[i % static_cast<size_t>(shards)], *vs[i], static_cast<int>(i));
    table << "    {\"" << vs[i]->id << "\", &launch_" << i << ", " << vs[i]->threads() << "},\n";
  }
  table << "};\nconst int kProbeCount = " << vs.size() << ";\n\n}  // namespace spmma::probe\n";
  for (int k = 0; k < shards; ++k) {
    out[static_cast<size_t>(k)] << "}  // namespace\n}  // namespace spmma::probe\n";
    if (!write_file(dir + "/probes_" + std::to_string(k) + ".cu", out[static_cast<size_t>(k)].str())) return 1;
  }
  if (!write_file(dir + "/probes_table.cu", table.str())) return 1;
  // The inline-PTX wrappers kernels include, one header per instruction family.
  const std::pair<const char*, Family> families[] = {{"ptx_mma_sp.cuh", Family::mma_sp},
                                                     {"ptx_mma.cuh", Family::mma},
                                                     {"ptx_wgmma_sp.cuh", Family::wgmma_sp}};
  for (const auto& [file, fam] : families) {
    std::ostringstream w;
    w << "// Generated by spmma_gen (codegen/gen_spmma.cpp) from the ISA registry. Do not edit.\n"
      << "// Inline-PTX wrappers, one per registry variant an sm_90a GPU runs.\n#pragma once\n#include <cstdint>\n\n"
      << "namespace spmma::ptx {\n\n";
    for (const Variant* v : vs)
      if (v->family == fam || (fam == Family::mma_sp && v->family == Family::mma_sp_ordered)) emit_wrapper(w, *v);
    w << "}  // namespace spmma::ptx\n";
    if (!write_file(dir + "/" + file, w.str())) return 1;
  }
  // The GEMM kernels of the pair table.
  if (!check_pairs()) return 1;
  const std::vector<Sm90Inst> insts = sm90_instances();
  const std::vector<DecodeInst> dec = decode_instances();
  if (!write_file(dir + "/gemm_forms_sm80.cuh", gemm_forms_sm80()) ||
      !write_file(dir + "/gemm_forms_sm90.cuh", gemm_forms_sm90()) || !write_file(dir + "/gemm_sm80.cu", gemm_sm80()) ||
      !write_file(dir + "/gemm_table.cu", gemm_sm90_table(insts, dec)))
    return 1;
  for (int k = 0; k < gemm_shards; ++k)
    if (!write_file(dir + "/gemm_sm90_" + std::to_string(k) + ".cu", gemm_sm90_shard(insts, dec, k, gemm_shards))) return 1;
  std::cerr << "spmma_gen: " << vs.size() << " probes in " << shards << " files, " << std::size(detail::kGemmPairs)
             << " type pairs, " << insts.size() << " sm90 and " << dec.size() << " decode instantiations in " << gemm_shards << " files, under " << dir << "\n";
  return 0;
}
