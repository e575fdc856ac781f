// SPDX-License-Identifier: BSD-3-Clause
// spmma — the PTX text of an instruction with its operands, from the registry.
//
// Used by everything that emits PTX: the generated inline-PTX wrappers and conformance
// probes (CUDA C++ inline asm, operands %0, %1, ...) and the PTX modules that ptxas assembles
// to prove every registry form valid. The instruction text itself is Variant::ptx.
#pragma once
#include <functional>
#include <string>

#include "spmma/isa.hpp"

namespace spmma::isa {

// Names of an instruction's operands. `reg(op, i)` names register i of operand op:
// 'd', 'a', 'b', 'c' (fragments), 'e' (metadata, i = 0), 'x' (scale-a-data), 'y' (scale-b-data).
struct PtxOperands {
  std::function<std::string(char op, int i)> reg;
  std::string selector = "0";       // sparsity selector (an immediate)
  std::string a_desc = "%desc_a";   // wgmma descriptors (64-bit registers)
  std::string b_desc = "%desc_b";
  std::string scale_d = "%scale_d"; // wgmma: a predicate
  std::string imm_scale_a = "1", imm_scale_b = "1", imm_trans_a = "0", imm_trans_b = "0";
  std::string byte_id_a = "0", thread_id_a = "0", byte_id_b = "0", thread_id_b = "0";
};

// "<ptx> {d..}, {a..}, {b..}, {c..}[, e, sel[, scales]];" as the spec's syntax block writes it.
std::string ptx_instruction(const Variant& v, const PtxOperands& ops);

// The PTX register type of a fragment's registers: ".f32", ".f64" or ".b32".
std::string ptx_reg_type(const Fragment& f);

// A PTX module (".version", ".target", one .entry per variant) that exercises each given
// variant once: ptxas assembling it proves the registry's text, register counts and target.
std::string ptx_module(const std::vector<const Variant*>& variants, const std::string& target, int ptx_isa);

}  // namespace spmma::isa
