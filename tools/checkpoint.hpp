// SPDX-License-Identifier: BSD-3-Clause
// Whole `.safetensors` checkpoints (tools/checkpoint.cpp): `spmma check`, `prune`, `compress` and
// `decompress` of MODEL.safetensors. The file forms are docs/files.md ("Checkpoints").
#pragma once
#include <string>
#include <vector>

#include "spmma/safetensors.hpp"

namespace spmma::cli {

// What each command selects and how: the checkpoint, the tensors by name pattern (shell globs:
// * ? [..]; empty: every tensor; a selection that matches no tensor is an error naming the file
// and the patterns), and the spmma type whose pattern to use ("": each tensor's dtype's own).
struct CheckpointOpts {
  std::string file;
  std::string out;  // prune, compress: OUT.safetensors
  std::string type;
  std::vector<std::string> tensors;
  bool json = false;
  bool unordered = false;  // compress: mark the metadata unordered (compress --unordered)
};

// Prints, for every selected tensor, whether it satisfies its pattern, how many chunks break
// it, and how much of its magnitude (Σ|w|, Σw²) magnitude pruning would remove; tensors that
// cannot be sparse A matrices (not 2-D, a dtype without a sparse type, columns not a whole
// number of chunks) are listed as skipped with the reason. Exits 1 (CLI::RuntimeError) when a
// checked tensor breaks its pattern, as `check` does for one matrix.
void run_check_checkpoint(const CheckpointOpts& o);

// Prunes every selected tensor that can be a sparse matrix by magnitude (prune_magnitude) in its
// own dtype and writes the whole checkpoint to o.out: kept non-zeros keep their bits, every zero
// of a pruned tensor is +0, other tensors and __metadata__ are copied, "spmma.pruned.NAME" records
// the pattern of each. Prints a per-tensor report (pruned, already satisfied, skipped and why).
void run_prune_checkpoint(const CheckpointOpts& o);

// Replaces every selected tensor that can be a sparse matrix by NAME.values and NAME.metadata
// (the compressed-matrix container's tensors), described in __metadata__ ("spmma.format",
// "spmma.compressed.NAME.type" ...). A selected tensor that breaks its pattern is refused
// (pattern_violation naming tensor, row and chunk; nothing is written).
void run_compress_checkpoint(const CheckpointOpts& o);

// The inverse of run_compress_checkpoint: the dense tensors in their dtype and place. Prints a
// per-tensor report (restored from which type and pattern, or copied); as_json: one JSON object
// {"file", "output", "format", "format_version", "summary", "tensors"} instead.
void run_decompress_checkpoint(const std::string& in, const std::string& out, bool unordered, bool as_json = false);

// Whether a safetensors file is a compressed checkpoint (its __metadata__ has "spmma.format").
bool is_compressed_checkpoint(const SafeTensors& f);

}  // namespace spmma::cli
