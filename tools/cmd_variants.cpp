// SPDX-License-Identifier: BSD-3-Clause
// `spmma variants`: the registry, as a table or as JSON.
#include <cmath>
#include <iomanip>
#include <iostream>
#include <string>

#include "cli_json.hpp"
#include "commands.hpp"
#include "spmma/isa.hpp"

namespace spmma::cli {

namespace {
const char* frag_kind_name(isa::FragKind k) {
  using F = isa::FragKind;
  switch (k) {
    case F::a_m16: return "a_m16";
    case F::a_m8: return "a_m8";
    case F::b_n8: return "b_n8";
    case F::c_m16n8: return "c_m16n8";
    case F::c_m8n8: return "c_m8n8";
    case F::a_qp_row: return "a_quadpair_row";
    case F::a_qp_col: return "a_quadpair_col";
    case F::b_qp_row: return "b_quadpair_row";
    case F::b_qp_col: return "b_quadpair_col";
    case F::c_qp_f16: return "c_quadpair_f16";
    case F::c_qp_f32: return "c_quadpair_f32";
    case F::wg_a: return "wgmma_a";
    case F::wg_d: return "wgmma_d";
    case F::smem: return "shared_memory";
  }
  return "?";
}

nlohmann::json fragment_json(const isa::Fragment& f) {
  return {{"layout", frag_kind_name(f.kind)}, {"type", type_name(f.type)},   {"registers", f.regs},
          {"register_bits", f.reg_bits},      {"element_bits", f.elem_bits}, {"rows", f.rows},
          {"cols", f.cols}};
}
}  // namespace

nlohmann::json variant_json(const isa::Variant& v) {
  nlohmann::json j = {
      {"id", v.id},
      {"ptx", v.ptx},
      {"family", isa::family_name(v.family)},
      {"shape", {{"m", v.m}, {"n", v.n}, {"k", v.k}}},
      {"types", {{"a", type_name(v.a)}, {"b", type_name(v.b)}, {"c", type_name(v.c)}, {"d", type_name(v.d)}}},
      {"kind", isa::kind_name(v.kind)},
      {"satfinite", v.satfinite},
      {"sparse", v.sparse()},
      {"threads", v.threads()},
      {"parts", v.parts},
      {"target", v.target.name()},
      {"ptx_isa", v.ptx_isa_name()},
      {"spec", v.spec},
      {"verified", v.verified},
      {"fragments", {{"a", fragment_json(v.fa)}, {"b", fragment_json(v.fb)}, {"c", fragment_json(v.fc)},
                     {"d", fragment_json(v.fd)}}},
  };
  // Where the variant's facts come from: the H100 conformance run, or (sm_120a forms, which no
  // lent GPU runs) ptxas and the emulator alone.
  j["hardware_checked"] = v.target.runs_on(90);
  if (!v.target.runs_on(90))
    j["status"] = v.ptx_isa <= 90 ? "assembled by ptxas for " + v.target.name() + "; emulated only"
                                  : "PTX ISA " + v.ptx_isa_name() + " (newer than CUDA 13.0's ptxas); emulated only";
  else
    j["status"] = v.verified ? "verified on hardware" : "not yet verified on hardware";
  if (v.wgmma()) j["a_source"] = v.a_source == isa::ASource::registers ? "registers" : "descriptor";
  if (v.bitop != isa::BitOp::none) j["bitop"] = v.bitop == isa::BitOp::xor_popc ? "xor.popc" : "and.popc";
  if (v.family == isa::Family::mma && v.m == 8 && v.k == 4)
    j["layouts"] = {{"a", v.a_major == isa::Major::row ? "row" : "col"}, {"b", v.b_major == isa::Major::row ? "row" : "col"}};
  if (v.scale)
    j["block_scale"] = {{"stype", type_name(v.scale->stype)}, {"scale_vec", v.scale->scale_vec}};
  if (v.meta) {
    nlohmann::json sel = nlohmann::json::array();
    for (int s = 0; s < 4; ++s)
      if (v.meta->selector_valid(s)) sel.push_back(s);
    j["metadata"] = {{"pattern", pattern_info(v.meta->pattern).name},
                     {"ordered", v.meta->ordered},
                     {"selectors", sel},
                     {"lanes_per_group", v.meta->lanes_per_group},
                     {"style", v.meta->style == isa::MetaLayout::Style::nibble_half ? "nibble_half" : "lane_bit"}};
  }
  return j;
}

nlohmann::json values_json(const Matrix& m) {
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t r = 0; r < m.rows; ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t c = 0; c < m.cols; ++c) {
      const double x = m.value(r, c);
      if (std::isnan(x)) row.push_back("nan");
      else if (std::isinf(x)) row.push_back(x > 0 ? "inf" : "-inf");
      else row.push_back(x);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

nlohmann::json bits_json(const Matrix& m) {
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t r = 0; r < m.rows; ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t c = 0; c < m.cols; ++c) row.push_back(m.at(r, c));
    rows.push_back(std::move(row));
  }
  return rows;
}

void register_variants(CLI::App& app) {
  auto* cmd = app.add_subcommand("variants", "List every MMA variant the spec defines (the ISA registry)");
  struct Opts {
    bool json = false, markdown = false;
    std::string filter;
    int runs_on = 0;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_flag("--json", o->json, "Print one JSON array (id, ptx, target, verified, shape, types, layouts)");
  cmd->add_flag("--markdown", o->markdown, "Print a Markdown table (docs/isa.md is made with it)");
  cmd->add_option("--filter", o->filter, "Only variants whose id contains this text");
  cmd->add_option("--runs-on", o->runs_on, "Only variants that run on this compute capability (e.g. 90)");
  cmd->callback([o] {
    std::vector<const isa::Variant*> rows;
    for (const auto& v : isa::registry()) {
      if (!o->filter.empty() && v.id.find(o->filter) == std::string::npos) continue;
      if (o->runs_on && !v.target.runs_on(o->runs_on)) continue;
      rows.push_back(&v);
    }
    if (o->json) {
      nlohmann::json arr = nlohmann::json::array();
      for (auto* v : rows) arr.push_back(variant_json(*v));
      std::cout << arr.dump(1) << "\n";
      return;
    }
    if (o->markdown) {
      std::cout << "| variant | target | PTX ISA | regs A/B/C/D | metadata lanes | selectors | verified |\n"
                << "|---|---|---|---|---|---|---|\n";
      for (auto* v : rows) {
        auto regs = [](const isa::Fragment& f) { return f.kind == isa::FragKind::smem ? std::string("smem") : std::to_string(f.regs); };
        std::string sel = "-", lanes = "-";
        if (v->meta) {
          sel.clear();
          for (int s = 0; s < 4; ++s)
            if (v->meta->selector_valid(s)) sel += (sel.empty() ? "" : ",") + std::to_string(s);
          lanes = std::to_string(v->meta->lanes_per_group) + " per quad";
        }
        std::cout << "| `" << v->id << "` | " << v->target.name() << " | " << v->ptx_isa_name() << " | " << regs(v->fa)
                  << "/" << regs(v->fb) << "/" << v->fc.regs << "/" << v->fd.regs << " | " << lanes << " | " << sel << " | "
                  << (v->verified ? "yes" : v->target.runs_on(90) ? "no" : "emulated only") << " |\n";
      }
      return;
    }
    size_t w = 10;
    for (auto* v : rows) w = std::max(w, v->id.size());
    std::cout << std::left << std::setw(static_cast<int>(w)) << "variant" << "  " << std::setw(8) << "target"
              << std::setw(6) << "ptx" << "verified\n";
    for (auto* v : rows)
      std::cout << std::setw(static_cast<int>(w)) << v->id << "  " << std::setw(8) << v->target.name()
                << std::setw(6) << v->ptx_isa_name() << (v->verified ? "yes" : "no") << "\n";
    std::cout << rows.size() << " variants\n";
  });
}

}  // namespace spmma::cli
