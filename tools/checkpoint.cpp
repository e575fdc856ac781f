// SPDX-License-Identifier: BSD-3-Clause
// `spmma check MODEL.safetensors`: which of a checkpoint's weights already satisfy their sparsity
// pattern, and what magnitude pruning would cost each (the share of Σ|w| and Σw² it removes).
// Values are read in the tensor's own dtype (BF16, F16, F32, F8_E4M3, F8_E5M2, I8, U8), each
// tensor at a time; a zero is +0 or -0 (a NaN counts as non-zero).
#include "checkpoint.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "spmma/error.hpp"
#include "spmma/safetensors.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma::cli {
namespace {

using json = nlohmann::ordered_json;

// The element type of a safetensors dtype's values, and the sparse type whose pattern a tensor
// of it is checked against by default (F32: tf32, as the tensor cores read f32).
struct DtypeTypes {
  const char* dtype;
  ElemType values, sparse;
};
constexpr DtypeTypes kDtypes[] = {
    {"F16", ElemType::f16, ElemType::f16},       {"BF16", ElemType::bf16, ElemType::bf16},
    {"F32", ElemType::f32, ElemType::tf32},      {"F8_E4M3", ElemType::e4m3, ElemType::e4m3},
    {"F8_E5M2", ElemType::e5m2, ElemType::e5m2}, {"I8", ElemType::s8, ElemType::s8},
    {"U8", ElemType::u8, ElemType::u8},
};

struct Report {
  int64_t chunks = 0, violating = 0;
  std::optional<std::string> first;  // the first violation, as check prints it
  double l1 = 0, l1_removed = 0, l2 = 0, l2_removed = 0;
};

// Chunk by chunk: its groups' magnitudes (a group is kept or dropped whole: one element, or a
// pair for 4:8), the non-zero groups, and what keeping the largest `kept` groups removes.
Report analyse(const SafeTensor& t, ElemType values, const PatternInfo& pi) {
  Report r;
  const int64_t rows = t.shape[0], cols = t.shape[1];
  const int bits = memory_bits(values);
  const int groups = pi.chunk / pi.group, keep = pi.kept / pi.group;
  std::vector<std::pair<double, double>> mag(static_cast<size_t>(groups));  // (Σ|x|, Σx²) per group
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t c0 = 0; c0 < cols; c0 += pi.chunk) {
      int nz = 0;
      for (int g = 0; g < groups; ++g) {
        double m = 0, q = 0;
        bool any = false;
        for (int e = 0; e < pi.group; ++e) {
          const double v = decode(values, load_element(t.data.data(), row * cols + c0 + g * pi.group + e, bits));
          any = any || v != 0.0;  // NaN != 0: non-zero
          const double a = std::fabs(v);
          if (std::isfinite(a)) m += a, q += a * a;
        }
        mag[static_cast<size_t>(g)] = {m, q};
        r.l1 += m, r.l2 += q;
        nz += any ? 1 : 0;
      }
      ++r.chunks;
      if (nz > keep) {
        if (!r.first) {
          std::ostringstream s;
          s << "row " << row << ", chunk " << c0 / pi.chunk << " (cols " << c0 << ".." << c0 + pi.chunk - 1 << "): " << nz
            << (pi.group > 1 ? " non-zero pairs" : " non-zeros") << ", " << pi.name << " allows at most " << keep;
          r.first = s.str();
        }
        ++r.violating;
      }
      // Magnitude pruning keeps the `keep` largest groups (by Σ|x|, as prune_magnitude): the
      // others are removed.
      std::sort(mag.begin(), mag.end());
      for (int g = 0; g < groups - keep; ++g) r.l1_removed += mag[static_cast<size_t>(g)].first, r.l2_removed += mag[static_cast<size_t>(g)].second;
    }
  return r;
}

bool selected(const std::string& name, const std::vector<std::string>& patterns) {
  if (patterns.empty()) return true;
  for (const std::string& p : patterns)
    if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

std::string shape_of(const std::vector<int64_t>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? " x " : "") + std::to_string(s[i]);
  return s.empty() ? "scalar" : out;
}

std::string percent(double part, double whole) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << (whole > 0 ? 100.0 * part / whole : 0.0) << "%";
  return s.str();
}

}  // namespace

void run_check_checkpoint(const CheckpointCheck& o) {
  std::optional<ElemType> forced;
  if (!o.type.empty()) {
    forced = parse_elem_type_or_throw(o.type);
    (void)pattern_for(*forced);  // a type without a sparse form is refused, naming it
  }
  const SafeTensors f = read_safetensors(o.file);
  json tensors = json::array();
  int checked = 0, satisfy = 0, skipped = 0;
  for (const SafeTensor& t : f.tensors) {
    if (!selected(t.name, o.tensors)) continue;
    json j = {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
    const DtypeTypes* dt = nullptr;
    for (const DtypeTypes& d : kDtypes)
      if (t.dtype == d.dtype) dt = &d;
    std::string why;
    if (t.shape.size() != 2) why = "not a matrix (" + std::to_string(t.shape.size()) + "-D)";
    else if (!dt) why = "dtype " + t.dtype + " has no sparse type";
    const ElemType sparse = forced ? *forced : dt ? dt->sparse : ElemType::f32;
    const PatternInfo* pi = why.empty() ? &pattern_info(pattern_for(sparse)) : nullptr;
    if (pi && t.shape[1] % pi->chunk != 0)
      why = std::to_string(t.shape[1]) + " columns is not a whole number of " + pi->name + " chunks";
    if (pi && (t.shape[0] == 0 || t.shape[1] == 0)) why = "empty";
    if (!why.empty()) {
      j["status"] = "skipped";
      j["why"] = why;
      ++skipped;
      tensors.push_back(j);
      continue;
    }
    const Report r = analyse(t, dt->values, *pi);
    ++checked;
    satisfy += r.violating == 0 ? 1 : 0;
    j["type"] = std::string(type_name(sparse));
    j["pattern"] = pi->name;
    j["status"] = r.violating == 0 ? "satisfies" : "violates";
    j["chunks"] = r.chunks;
    j["violating_chunks"] = r.violating;
    if (r.first) j["first_violation"] = *r.first;
    j["magnitude_pruning_removes"] = {{"l1_fraction", r.l1 > 0 ? r.l1_removed / r.l1 : 0.0},
                                      {"l2_fraction", r.l2 > 0 ? r.l2_removed / r.l2 : 0.0}};
    tensors.push_back(j);
  }
  if (tensors.empty())
    fail(Status::invalid_argument, o.file + ": no tensor" +
                                       (o.tensors.empty() ? std::string(" in the file") : " matches --tensors") +
                                       " (" + std::to_string(f.tensors.size()) + " tensors in the file)");
  if (o.json) {
    json out = {{"file", o.file},
                {"summary", {{"checked", checked}, {"satisfy", satisfy}, {"violate", checked - satisfy}, {"skipped", skipped}}},
                {"tensors", tensors}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << o.file << ": " << checked << " tensor" << (checked == 1 ? "" : "s") << " checked (" << satisfy
              << " satisfy their pattern, " << checked - satisfy << " do not), " << skipped << " skipped\n";
    for (const json& j : tensors) {
      std::cout << "  " << j["name"].get<std::string>() << "  " << shape_of(j["shape"].get<std::vector<int64_t>>()) << " "
                << j["dtype"].get<std::string>() << ": ";
      if (j["status"] == "skipped") {
        std::cout << "skipped: " << j["why"].get<std::string>() << "\n";
        continue;
      }
      std::cout << j["type"].get<std::string>() << " " << j["pattern"].get<std::string>() << " ";
      if (j["status"] == "satisfies") {
        std::cout << "satisfied\n";
        continue;
      }
      const auto& m = j["magnitude_pruning_removes"];
      std::cout << j["violating_chunks"].get<int64_t>() << " of " << j["chunks"].get<int64_t>() << " chunks break it ("
                << j["first_violation"].get<std::string>() << "); magnitude pruning removes "
                << percent(m["l1_fraction"].get<double>(), 1) << " of Σ|w|, " << percent(m["l2_fraction"].get<double>(), 1)
                << " of Σw²\n";
    }
  }
  if (satisfy < checked) throw CLI::RuntimeError(1);
}

}  // namespace spmma::cli
