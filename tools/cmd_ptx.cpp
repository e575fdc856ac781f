// SPDX-License-Identifier: BSD-3-Clause
// `spmma ptx`: PTX modules generated from the registry, for ptxas to assemble.
#include <cstdint>
#include <iostream>
#include <map>
#include <span>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "io/files.hpp"
#include "spmma/error.hpp"
#include "spmma/ptx.hpp"

namespace spmma::cli {

void register_ptx(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "ptx", "Write a PTX module exercising every registry variant of one minimum target (for ptxas)");
  struct Opts {
    std::string target;
    std::string out;
    int max_isa = 90;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--target", o->target, "Minimum target of the variants to include, e.g. sm_80, sm_90a, sm_120a")
      ->required();
  cmd->add_option("--out", o->out, "Output file (default: standard output)");
  cmd->add_option("--max-ptx-isa", o->max_isa,
                  "Leave out variants newer than this PTX ISA version, x10 (default 90: CUDA 13.0's ptxas)");
  cmd->add_flag("--json", o->json,
                "Print one JSON object instead of the module: target, ptx_isa (the module's .version), variants "
                "(their ids), count, and the module as ptx, or with --out the file and its bytes");
  cmd->callback([o] {
    std::vector<const isa::Variant*> vs;
    int isa_needed = 60;
    for (const auto& v : isa::registry())
      if (v.target.name() == o->target && v.ptx_isa <= o->max_isa) {
        vs.push_back(&v);
        isa_needed = std::max(isa_needed, v.ptx_isa);
      }
    if (vs.empty()) fail(Status::invalid_argument, "no registry variant has minimum target '" + o->target + "'");
    if (!o->out.empty()) io::check_output_path(o->out);
    const int isa_version = std::max(isa_needed, 78);
    const std::string text = isa::ptx_module(vs, o->target, isa_version);
    // Checked, and through a temporary: /dev/full or a full disk is an error, not a silent truncation.
    if (!o->out.empty()) io::write_file(o->out, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    if (o->json) {
      // What the module holds, with the module itself where it was not written to a file.
      nlohmann::json ids = nlohmann::json::array();
      for (const isa::Variant* v : vs) ids.push_back(v->id);
      nlohmann::json j = {{"target", o->target},
                          {"ptx_isa", std::to_string(isa_version / 10) + "." + std::to_string(isa_version % 10)},
                          {"max_ptx_isa", o->max_isa},
                          {"count", vs.size()},
                          {"variants", ids}};
      if (o->out.empty()) {
        j["ptx"] = text;
      } else {
        j["file"] = o->out;
        j["bytes"] = text.size();
      }
      std::cout << j.dump(1) << "\n";
    } else if (o->out.empty()) {
      std::cout << text;
    } else {
      std::cerr << o->out << ": " << vs.size() << " variants for " << o->target << "\n";
    }
  });
}

}  // namespace spmma::cli
