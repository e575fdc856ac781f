// SPDX-License-Identifier: BSD-3-Clause
// Small helpers shared by the CLI commands: checked size arithmetic, strict number parsing,
// output paths that must differ from the inputs and from each other.
#pragma once
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/files.hpp"
#include "spmma/error.hpp"

namespace spmma::cli {

// a * b for sizes that come from files or the command line; invalid_argument "<what>: a x b
// overflows" instead of undefined behaviour.
inline int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    fail(Status::invalid_argument, what + ": " + std::to_string(a) + " x " + std::to_string(b) + " overflows 64 bits");
  return r;
}
// A positive decimal integer and nothing else ("64", not "64q", "+64", " 64", "0x40", "1e3").
inline bool parse_positive(std::string_view s, int64_t& out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && out > 0;
}

// A file the command reads or writes, and the option that names it ("IN.npy", "--meta").
struct NamedPath {
  std::string role, path;
};

// Refuses (invalid_argument) an output that is the same file as an input or as another output
// (canonical paths, links followed), and an output whose directory does not exist: before any
// work, so that nothing is overwritten or computed in vain.
inline void require_distinct(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& o = outputs[i];
    if (o.path.empty()) continue;
    for (const NamedPath& in : inputs)
      if (!in.path.empty() && io::same_file(in.path, o.path))
        fail(Status::invalid_argument, o.role + " " + o.path + " is the same file as the input " + in.role + " " + in.path +
                                           ": the output would overwrite it; write to another path");
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].path.empty() && io::same_file(outputs[j].path, o.path))
        fail(Status::invalid_argument, o.role + " " + o.path + " is the same file as " + outputs[j].role + " " +
                                           outputs[j].path + ": each output needs its own path");
    io::check_output_path(o.path);
  }
}

}  // namespace spmma::cli
