// SPDX-License-Identifier: BSD-3-Clause
// `spmma emulate PTX`: one variant on random valid inputs, through the register-level emulator.
#include <iostream>
#include <random>
#include <string>

#include "cli_json.hpp"
#include "commands.hpp"
#include "spmma/emulate.hpp"
#include "spmma/error.hpp"

namespace spmma::cli {

namespace {
void print_matrix(const char* name, const Matrix& m) {
  std::cout << name << " (" << m.rows << " x " << m.cols << " " << type_name(m.type) << "):\n";
  for (int64_t r = 0; r < m.rows; ++r) {
    std::cout << "  ";
    for (int64_t c = 0; c < m.cols; ++c) std::cout << (c ? " " : "") << m.value(r, c);
    std::cout << "\n";
  }
}
}  // namespace

void register_emulate(CLI::App& app) {
  auto* cmd = app.add_subcommand("emulate", "Run one MMA variant on random valid inputs with the CPU emulator");
  struct Opts {
    std::string ptx;
    uint64_t seed = 1;
    int selector = -1;
    bool exact = false;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("ptx", o->ptx, "The instruction as PTX spells it, or a registry id (wgmma: append :rs or :ss)")
      ->required();
  cmd->add_option("--seed", o->seed, "Seed of the random inputs (default 1)");
  cmd->add_option("--selector", o->selector, "Sparsity selector (default: a random valid one)");
  cmd->add_flag("--exact", o->exact, "Small-integer inputs, so every sum is exact");
  cmd->add_flag("--json", o->json,
                "Print one JSON object: a (dense, decompressed), b, c, d as decoded values, a_values and "
                "metadata as raw integers");
  cmd->callback([o] {
    const isa::Variant& v = isa::variant_or_throw(o->ptx);
    std::mt19937_64 rng(o->seed);
    const auto state = emu::random_state(v, rng, o->exact ? emu::Inputs::exact : emu::Inputs::general,
                                         o->selector >= 0 ? std::optional<int>(o->selector) : std::nullopt);
    const emu::MatrixOperands ops = emu::gather(v, state);
    const Matrix a = emu::dense_a(v, ops);
    const Matrix d = emu::gather_d(v, emu::execute(v, state));
    if (!o->json) {
      std::cout << v.id << "  (target " << v.target.name() << ", PTX ISA " << v.ptx_isa_name() << ", seed "
                << o->seed;
      if (v.sparse()) std::cout << ", selector " << state.selector;
      std::cout << ")\n";
      print_matrix("A", a);
      print_matrix("B", ops.b);
      if (ops.accumulate) print_matrix("C", ops.c);
      print_matrix("D", d);
      return;
    }
    nlohmann::json j = {{"variant", v.id}, {"ptx", v.ptx}, {"seed", o->seed}, {"parts", v.parts},
                        {"a", values_json(a)}, {"b", values_json(ops.b)}, {"c", values_json(ops.c)},
                        {"d", values_json(d)}};
    j["types"] = {{"a", type_name(v.a)}, {"b", type_name(v.b)}, {"c", type_name(v.c)}, {"d", type_name(v.d)}};
    if (v.sparse()) {
      const Compressed& cp = *ops.a_sparse;
      j["selector"] = state.selector;
      j["a_values"] = bits_json(cp.values);
      nlohmann::json meta = nlohmann::json::array();
      for (int64_t r = 0; r < cp.rows; ++r) {
        nlohmann::json row = nlohmann::json::array();
        for (int64_t ch = 0; ch < cp.chunks_per_row(); ++ch) row.push_back(cp.nibble(r, ch));
        meta.push_back(std::move(row));
      }
      j["metadata"] = std::move(meta);
      j["metadata_registers"] = state.e;
      j["pattern"] = pattern_info(cp.pattern).name;
    } else {
      j["a_values"] = bits_json(a);
    }
    if (v.scale) {
      j["scale_a"] = values_json(ops.scale_a);
      j["scale_b"] = values_json(ops.scale_b);
    }
    std::cout << j.dump() << "\n";
  });
}

}  // namespace spmma::cli
