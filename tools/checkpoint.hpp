// SPDX-License-Identifier: BSD-3-Clause
// `spmma check MODEL.safetensors`: a per-tensor report on a checkpoint (tools/checkpoint.cpp).
#pragma once
#include <string>
#include <vector>

namespace spmma::cli {

struct CheckpointCheck {
  std::string file;
  std::string type;                  // the spmma type whose pattern to check ("": by each tensor's dtype)
  std::vector<std::string> tensors;  // name patterns (shell globs: * ? [..]); empty: every tensor
  bool json = false;
};

// Prints, for every selected tensor, whether it satisfies its pattern, how many chunks break
// it, and how much of its magnitude (Σ|w|, Σw²) magnitude pruning would remove; tensors that
// cannot be sparse A matrices (not 2-D, a dtype without a sparse type, columns not a whole
// number of chunks) are listed as skipped with the reason. Exits 1 (CLI::RuntimeError) when a
// checked tensor breaks its pattern, as `check` does for one matrix.
void run_check_checkpoint(const CheckpointCheck& o);

}  // namespace spmma::cli
