// SPDX-License-Identifier: BSD-3-Clause
// spmma — hardware conformance: the GPU's D against the emulator's, variant by variant.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace spmma::conform {

struct Row;
struct Report;

struct Options {
  std::string filter;          // only variants whose id contains this text
  int trials_per_selector = 8; // per input kind (exact / general / specials) and selector
  int wgmma_trials_per_selector = 2;
  unsigned long long seed = 1;
  // Called as the run goes, so that a caller can show progress and print each row as it finishes
  // (the whole suite takes minutes): on_begin once, when the device is known (Report's device,
  // compute_capability and date set, no rows yet); on_start before variant i of total (the
  // variants the filter selects, skipped ones included); on_row with each row as it is added
  // to the report.
  std::function<void(const Report&)> on_begin;
  std::function<void(size_t i, size_t total, const std::string& id)> on_start;
  std::function<void(const Row&)> on_row;
};

struct Row {
  std::string id;
  int trials = 0;
  int mismatches = 0;
  double max_error = 0.0;      // largest |gpu - emulator| / (Σ|a·b| + |c|) on general inputs
  int exact_trials = 0;        // trials on inputs whose exact result is representable
  std::string note;            // first mismatch, or why the variant was skipped
  bool skipped = false;
  // Per input kind: "exact", "general", "specials" (Inf/NaN in B), "unordered" (plain mma.sp
  // and wgmma with idx0 > idx1 nibbles): {trials, mismatches}.
  std::map<std::string, std::pair<int, int>> by_kind;
};

struct Report {
  std::string device;
  int compute_capability = 0;
  std::string date;            // UTC, ISO 8601
  std::vector<Row> rows;
  std::vector<std::string> findings;  // answers to the open layout questions (docs/layouts.md)
};

// True when a CUDA GPU is usable; otherwise `why` says what is missing.
bool gpu_available(std::string* why);
// Runs every probe the local GPU can execute. Throws Error(not_supported) without a GPU.
Report run(const Options& opts);

}  // namespace spmma::conform
