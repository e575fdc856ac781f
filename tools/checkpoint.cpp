// SPDX-License-Identifier: BSD-3-Clause
// Whole .safetensors checkpoints: `spmma check`, `prune`, `compress` and `decompress` of
// MODEL.safetensors (docs/files.md, "Checkpoints").
//
// A tensor is a candidate when it is 2-D, not empty, of a dtype with a sparse type (kDtypes), and
// its columns are a whole number of chunks of the pattern (its dtype's type's, or --type's). Its
// values are read in its own dtype — BF16 as bf16, F32 as f32 (all 32 bits, with tf32's 1:2
// pattern) — so a zero is +0 or -0 and a NaN is a non-zero, as for one matrix
// (include/spmma/sparse.hpp), and prune and compress keep every bit they keep. Each command reads
// the whole file and writes the whole output (the file must fit in memory, about twice over).
#include "checkpoint.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "spmma/error.hpp"
#include "spmma/matrix.hpp"
#include "spmma/safetensors.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"
#include "spmma/version.hpp"

namespace spmma::cli {
namespace {

using json = nlohmann::ordered_json;

// The element type of a safetensors dtype's values, and the sparse type whose pattern a tensor
// of it has by default (F32: tf32, as the tensor cores read f32).
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

const DtypeTypes* by_dtype(std::string_view dtype) {
  for (const DtypeTypes& d : kDtypes)
    if (dtype == d.dtype) return &d;
  return nullptr;
}

const DtypeTypes* by_values(ElemType values) {
  for (const DtypeTypes& d : kDtypes)
    if (values == d.values) return &d;
  return nullptr;
}

// The compressed checkpoint's __metadata__ (docs/files.md, "Compressed checkpoints"): the format
// and its version, who wrote it, and per compressed tensor NAME the keys
// "spmma.compressed.NAME.<field>" holding the compressed-matrix container's fields.
constexpr std::string_view kFormatKey = "spmma.format";
constexpr std::string_view kFormat = "spmma.compressed-checkpoint";
constexpr std::string_view kVersionKey = "spmma.format_version";
constexpr std::string_view kFormatVersion = "1";
constexpr std::string_view kCompressedByKey = "spmma.compressed_by";
constexpr std::string_view kRecordPrefix = "spmma.compressed.";
constexpr const char* kRecordFields[] = {"type", "pattern", "rows", "cols", "ordered"};
// What prune records: "spmma.pruned.NAME" = the pattern the tensor now satisfies.
constexpr std::string_view kPrunedPrefix = "spmma.pruned.";
constexpr std::string_view kPrunedByKey = "spmma.pruned_by";

std::string writer() { return std::string("spmma ") + version(); }

// ------------------------------------------------------------------ selection

bool selected(const std::string& name, const std::vector<std::string>& patterns) {
  if (patterns.empty()) return true;
  for (const std::string& p : patterns)
    if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

// Which tensors the command works on; none is an error naming the file and the patterns.
std::vector<bool> select(const SafeTensors& f, const CheckpointOpts& o) {
  std::vector<bool> sel(f.tensors.size());
  bool any = false;
  for (size_t k = 0; k < f.tensors.size(); ++k) any |= sel[k] = selected(f.tensors[k].name, o.tensors);
  if (!any) {
    std::string pats;
    for (const std::string& p : o.tensors) pats += " '" + p + "'";
    fail(Status::invalid_argument, o.file + ": no tensor" +
                                       (o.tensors.empty() ? std::string(" in the file") : " matches --tensors" + pats) +
                                       " (" + std::to_string(f.tensors.size()) + " tensors in the file)");
  }
  return sel;
}

std::optional<ElemType> forced_type(const std::string& type) {
  if (type.empty()) return std::nullopt;
  const ElemType t = parse_elem_type_or_throw(type);
  (void)pattern_for(t);  // a type without a sparse form is refused, naming it
  return t;
}

// Whether a tensor can be a sparse matrix, and with which pattern; `why` says why not.
struct Candidate {
  std::string why;
  const DtypeTypes* dt = nullptr;
  ElemType sparse = ElemType::f32;  // the type whose pattern applies (tf32 for F32)
  Pattern pattern = Pattern::p2_4;
  const PatternInfo* pi = nullptr;
};

// `own_type`: prune and compress keep the tensor's own element type, so the pattern must be one
// that type has (BF16 has 2:4, not --type s4's 4:8 pair-wise); check only measures.
Candidate classify(const SafeTensor& t, std::optional<ElemType> forced, bool own_type) {
  Candidate c;
  c.dt = by_dtype(t.dtype);
  if (t.shape.size() != 2) {
    c.why = "not a matrix (" + std::to_string(t.shape.size()) + "-D)";
    return c;
  }
  if (!c.dt) {
    c.why = "dtype " + t.dtype + " has no sparse type";
    return c;
  }
  c.sparse = forced ? *forced : c.dt->sparse;
  c.pattern = pattern_for(c.sparse);
  c.pi = &pattern_info(c.pattern);
  if (t.shape[1] % c.pi->chunk != 0)
    c.why = std::to_string(t.shape[1]) + " columns is not a whole number of " + c.pi->name + " chunks";
  if (t.shape[0] == 0 || t.shape[1] == 0) c.why = "empty";
  if (c.why.empty() && own_type && !pattern_allowed(c.dt->values, c.pattern))
    c.why = t.dtype + " (" + std::string(type_name(c.dt->values)) + ") has no " + c.pi->name + " form (--type " +
            std::string(type_name(c.sparse)) + ")";
  return c;
}

// A candidate's elements in its own type, and back.
Matrix to_matrix(const SafeTensor& t, ElemType values) {
  Matrix m(values, t.shape[0], t.shape[1]);
  const int bits = memory_bits(values);
  for (size_t i = 0; i < m.bits.size(); ++i) m.bits[i] = load_element(t.data.data(), static_cast<int64_t>(i), bits);
  return m;
}

std::vector<uint8_t> to_bytes(const Matrix& m) {
  const int bits = memory_bits(m.type);
  std::vector<uint8_t> out(m.bits.size() * static_cast<size_t>(bits / 8));
  for (size_t i = 0; i < m.bits.size(); ++i) store_element(out.data(), static_cast<int64_t>(i), bits, m.bits[i]);
  return out;
}

bool has_records(const SafeTensors& f) {
  for (const auto& [k, v] : f.metadata)
    if (k.starts_with(kRecordPrefix)) return true;
  return false;
}

// prune and compress work on dense tensors: a compressed checkpoint's NAME.values would be
// pruned or compressed as if they were weights.
void refuse_compressed(const SafeTensors& f, const std::string& file, const char* command) {
  if (is_compressed_checkpoint(f) || has_records(f))
    fail(Status::invalid_argument, file + ": is an spmma compressed checkpoint (__metadata__ \"" +
                                       std::string(kFormatKey) + "\"); " + command +
                                       " works on dense tensors: spmma decompress it first");
  const auto it = f.metadata.find("format");
  if (it != f.metadata.end() && it->second == kCompressedFormat)
    fail(Status::invalid_argument, file +
                                       ": is one spmma compressed matrix (compress --out), not a checkpoint: spmma "
                                       "decompress it to a .npy");
}

void require_paths(const std::string& in, const std::string& out, const char* command) {
  if (!out.ends_with(".safetensors"))
    fail(Status::invalid_argument, std::string(command) + ": " + in +
                                       " is a checkpoint, so the output is one too: give OUT "
                                       "ending in .safetensors, not " +
                                       out);
  require_distinct({{"IN", in}}, {{"OUT", out}});
}

// ------------------------------------------------------------------ reports

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

json tensor_json(const SafeTensor& t) { return {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}}; }

void print_tensor_head(const json& j) {
  std::cout << "  " << j["name"].get<std::string>() << "  " << shape_of(j["shape"].get<std::vector<int64_t>>()) << " "
            << j["dtype"].get<std::string>() << ": ";
}

std::string plural(int64_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// Σ|x| and Σx² of a tensor's finite elements, and of those a step removed.
struct Magnitude {
  double l1 = 0, l1_removed = 0, l2 = 0, l2_removed = 0;
  json fractions() const {
    return {{"l1_fraction", l1 > 0 ? l1_removed / l1 : 0.0}, {"l2_fraction", l2 > 0 ? l2_removed / l2 : 0.0}};
  }
};

// ------------------------------------------------------------------ check

struct Report {
  int64_t chunks = 0, violating = 0;
  std::optional<std::string> first;  // the first violation, as check prints it
  Magnitude mag;
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
        r.mag.l1 += m, r.mag.l2 += q;
        nz += any ? 1 : 0;
      }
      ++r.chunks;
      if (nz > keep) {
        if (!r.first) {
          std::ostringstream s;
          s << "row " << row << ", chunk " << c0 / pi.chunk << " (cols " << c0 << ".." << c0 + pi.chunk - 1
            << "): " << nz << (pi.group > 1 ? " non-zero pairs" : " non-zeros") << ", " << pi.name << " allows at most "
            << keep;
          r.first = s.str();
        }
        ++r.violating;
      }
      // Magnitude pruning keeps the `keep` largest groups (by Σ|x|, as prune_magnitude): the
      // others are removed.
      std::sort(mag.begin(), mag.end());
      for (int g = 0; g < groups - keep; ++g)
        r.mag.l1_removed += mag[static_cast<size_t>(g)].first, r.mag.l2_removed += mag[static_cast<size_t>(g)].second;
    }
  return r;
}

// The report entry of a selected tensor that is not a sparse candidate, and why (check, prune
// and compress list them alike).
json skipped_json(const SafeTensor& t, const std::string& why) {
  json j = tensor_json(t);
  j["status"] = "skipped";
  j["why"] = why;
  return j;
}

}  // namespace

bool is_compressed_checkpoint(const SafeTensors& f) { return f.metadata.contains(std::string(kFormatKey)); }

void run_check_checkpoint(const CheckpointOpts& o) {
  const std::optional<ElemType> forced = forced_type(o.type);
  const SafeTensors f = read_safetensors(o.file);
  const std::vector<bool> sel = select(f, o);
  json tensors = json::array();
  int checked = 0, satisfy = 0, skipped = 0;
  for (size_t k = 0; k < f.tensors.size(); ++k) {
    if (!sel[k]) continue;
    const SafeTensor& t = f.tensors[k];
    const Candidate c = classify(t, forced, false);
    if (!c.why.empty()) {
      tensors.push_back(skipped_json(t, c.why));
      ++skipped;
      continue;
    }
    json j = tensor_json(t);
    const Report r = analyse(t, c.dt->values, *c.pi);
    ++checked;
    satisfy += r.violating == 0 ? 1 : 0;
    j["type"] = std::string(type_name(c.sparse));
    j["pattern"] = c.pi->name;
    j["status"] = r.violating == 0 ? "satisfies" : "violates";
    j["chunks"] = r.chunks;
    j["violating_chunks"] = r.violating;
    if (r.first) j["first_violation"] = *r.first;
    j["magnitude_pruning_removes"] = r.mag.fractions();
    tensors.push_back(j);
  }
  if (o.json) {
    json out = {
        {"file", o.file},
        {"summary", {{"checked", checked}, {"satisfy", satisfy}, {"violate", checked - satisfy}, {"skipped", skipped}}},
        {"tensors", tensors}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << o.file << ": " << plural(checked, "tensor") << " checked (" << satisfy << " satisfy their pattern, "
              << checked - satisfy << " do not), " << skipped << " skipped\n";
    for (const json& j : tensors) {
      print_tensor_head(j);
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
                << percent(m["l1_fraction"].get<double>(), 1) << " of Σ|w|, "
                << percent(m["l2_fraction"].get<double>(), 1) << " of Σw²\n";
    }
  }
  if (satisfy < checked) throw CLI::RuntimeError(1);
}

// ------------------------------------------------------------------ prune

void run_prune_checkpoint(const CheckpointOpts& o) {
  require_paths(o.file, o.out, "prune");
  const std::optional<ElemType> forced = forced_type(o.type);
  SafeTensors f = read_safetensors(o.file);
  refuse_compressed(f, o.file, "prune");
  const std::vector<bool> sel = select(f, o);
  json tensors = json::array();
  int pruned = 0, satisfied = 0, skipped = 0;
  for (size_t k = 0; k < f.tensors.size(); ++k) {
    if (!sel[k]) continue;
    SafeTensor& t = f.tensors[k];
    const Candidate c = classify(t, forced, true);
    if (!c.why.empty()) {
      tensors.push_back(skipped_json(t, c.why));
      ++skipped;
      continue;
    }
    json j = tensor_json(t);
    // The library's own rule (the same bits as `spmma prune` of a .npy of this type): each chunk
    // keeps its largest magnitudes, NaN above all, ties to the lower column; the rest become +0.
    const ElemType vt = c.dt->values;
    const Matrix dense = to_matrix(t, vt);
    Matrix p = prune_magnitude(dense, c.pattern);
    // A kept -0 is written as +0 too: every zero of the output is +0, so that compress and
    // decompress give these bits back (decompress writes +0 where a chunk's nibble names no
    // element, and a -0 is a zero to the pattern).
    Magnitude mag;
    int64_t nonzeros = 0, kept = 0, negative_zeros = 0;
    for (size_t i = 0; i < p.bits.size(); ++i) {
      const bool was_zero = is_zero(vt, dense.bits[i]);
      if (was_zero && dense.bits[i] != 0) ++negative_zeros;
      if (p.bits[i] != 0 && is_zero(vt, p.bits[i])) p.bits[i] = 0;
      const bool removed = !was_zero && p.bits[i] == 0;
      nonzeros += was_zero ? 0 : 1;
      kept += was_zero || removed ? 0 : 1;
      const double a = std::fabs(decode(vt, dense.bits[i]));
      if (!std::isfinite(a)) continue;
      mag.l1 += a, mag.l2 += a * a;
      if (removed) mag.l1_removed += a, mag.l2_removed += a * a;
    }
    t.data = to_bytes(p);
    f.metadata[std::string(kPrunedPrefix) + t.name] = c.pi->name;
    const bool changed = kept < nonzeros;
    (changed ? pruned : satisfied) += 1;
    j["status"] = changed ? "pruned" : "already_satisfied";
    j["type"] = std::string(type_name(vt));
    j["pattern"] = c.pi->name;
    j["nonzeros"] = nonzeros;
    j["nonzeros_kept"] = kept;
    j["negative_zeros_to_positive"] = negative_zeros;
    j["removed"] = mag.fractions();
    tensors.push_back(j);
  }
  if (pruned + satisfied > 0) f.metadata[std::string(kPrunedByKey)] = writer();
  write_safetensors(o.out, f);

  if (o.json) {
    json out = {{"file", o.file},
                {"output", o.out},
                {"summary", {{"pruned", pruned}, {"already_satisfied", satisfied}, {"skipped", skipped}}},
                {"tensors", tensors}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << "pruned " << o.file << " -> " << o.out << ": " << plural(pruned, "tensor") << " pruned, " << satisfied
            << " already satisfied their pattern, " << skipped << " skipped (copied unchanged)\n";
  for (const json& j : tensors) {
    print_tensor_head(j);
    if (j["status"] == "skipped") {
      std::cout << "skipped: " << j["why"].get<std::string>() << "\n";
      continue;
    }
    std::cout << j["type"].get<std::string>() << " " << j["pattern"].get<std::string>() << " ";
    if (j["status"] == "pruned") {
      const auto& m = j["removed"];
      std::cout << "pruned: " << j["nonzeros_kept"].get<int64_t>() << " of " << j["nonzeros"].get<int64_t>()
                << " non-zeros kept, " << percent(m["l1_fraction"].get<double>(), 1) << " of Σ|w| and "
                << percent(m["l2_fraction"].get<double>(), 1) << " of Σw² removed";
    } else {
      std::cout << "already satisfied";
    }
    if (const int64_t nz = j["negative_zeros_to_positive"].get<int64_t>(); nz > 0)
      std::cout << "; " << nz << " -0 written as +0";
    std::cout << "\n";
  }
}

// ------------------------------------------------------------------ compress

void run_compress_checkpoint(const CheckpointOpts& o) {
  require_paths(o.file, o.out, "compress");
  const std::optional<ElemType> forced = forced_type(o.type);
  SafeTensors f = read_safetensors(o.file);
  refuse_compressed(f, o.file, "compress");
  const std::vector<bool> sel = select(f, o);
  std::set<std::string> names;
  for (const SafeTensor& t : f.tensors) names.insert(t.name);

  SafeTensors out;
  out.metadata = f.metadata;
  json tensors = json::array();
  int compressed = 0, skipped = 0, violating = 0, candidates = 0;
  std::string first_violation;
  uint64_t before = 0, after = 0;
  for (size_t k = 0; k < f.tensors.size(); ++k) {
    SafeTensor& t = f.tensors[k];
    before += t.data.size();
    const Candidate c = sel[k] ? classify(t, forced, true) : Candidate{"not selected"};
    if (!c.why.empty()) {
      if (sel[k]) {
        tensors.push_back(skipped_json(t, c.why));
        ++skipped;
      }
      after += t.data.size();
      out.tensors.push_back(std::move(t));
      continue;
    }
    ++candidates;
    for (const char* part : {".values", ".metadata"})
      if (names.contains(t.name + part))
        fail(Status::invalid_argument, o.file + ": compressing tensor \"" + io::printable(t.name) + "\" writes \"" +
                                           io::printable(t.name + part) +
                                           "\", and the checkpoint already has a tensor of that name: leave one of "
                                           "them out with --tensors");
    const ElemType vt = c.dt->values;
    const Matrix dense = to_matrix(t, vt);
    if (const std::optional<Violation> v = check_pattern(dense, c.pattern)) {
      if (violating++ == 0)
        first_violation = "tensor \"" + io::printable(t.name) + "\" breaks " + c.pi->name + ": " + v->message;
      continue;
    }
    if (violating > 0) continue;  // the output will not be written; only count the others
    const Compressed cc = compress(dense, c.pattern, !o.unordered);
    // decompress gives every bit back but a -0 at a position its chunk's nibble does not name
    // (include/spmma/sparse.hpp); count those, and prove the rest.
    const Matrix back = decompress(cc);
    int64_t lost = 0;
    for (size_t i = 0; i < back.bits.size(); ++i) {
      if (back.bits[i] == dense.bits[i]) continue;
      if (back.bits[i] != 0 || !is_zero(vt, dense.bits[i]))
        fail(Status::internal, o.file + ": tensor \"" + t.name + "\" does not decompress to its own bits at element " +
                                   std::to_string(i) + " (a bug in spmma)");
      ++lost;
    }
    SafeTensors one = compressed_to_safetensors(cc);  // "values", "metadata" and the container's fields
    for (const auto& [key, value] : one.metadata)
      if (key != "format" && key != "format_version")
        out.metadata[std::string(kRecordPrefix) + t.name + "." + key] = value;
    json j = tensor_json(t);
    j["status"] = "compressed";
    j["type"] = std::string(type_name(vt));
    j["pattern"] = c.pi->name;
    j["ordered"] = cc.ordered;
    j["bytes_before"] = t.data.size();
    uint64_t bytes = 0;
    for (SafeTensor& part : one.tensors) {
      part.name = t.name + "." + part.name;
      j[part.name == t.name + ".values" ? "values" : "metadata"] = {
          {"name", part.name}, {"dtype", part.dtype}, {"shape", part.shape}, {"bytes", part.data.size()}};
      bytes += part.data.size();
      out.tensors.push_back(std::move(part));
    }
    j["bytes_after"] = bytes;
    j["negative_zeros_to_positive"] = lost;
    after += bytes;
    t.data = {};
    tensors.push_back(j);
    ++compressed;
  }
  if (violating > 0)
    fail(Status::pattern_violation,
         o.file + ": " + first_violation +
             (violating > 1 ? " (" + std::to_string(violating) + " of " + std::to_string(candidates) +
                                  " tensors to compress break their pattern)"
                            : std::string()) +
             "; prune first: spmma prune " + o.file + " PRUNED.safetensors" +
             (o.type.empty() ? "" : " --type " + o.type) + ", then compress that");
  out.metadata[std::string(kFormatKey)] = kFormat;
  out.metadata[std::string(kVersionKey)] = kFormatVersion;
  out.metadata[std::string(kCompressedByKey)] = writer();
  write_safetensors(o.out, out);

  const double ratio = before ? static_cast<double>(after) / static_cast<double>(before) : 0.0;
  if (o.json) {
    json j = {{"file", o.file},
              {"output", o.out},
              {"format", kFormat},
              {"format_version", kFormatVersion},
              {"summary",
               {{"compressed", compressed},
                {"skipped", skipped},
                {"bytes_before", before},
                {"bytes_after", after},
                {"ratio", ratio}}},
              {"tensors", tensors}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "compressed " << o.file << " -> " << o.out << ": " << plural(compressed, "tensor") << " compressed, "
            << skipped << " skipped (copied unchanged); tensor data " << before << " -> " << after << " bytes ("
            << percent(ratio, 1) << ")\n";
  for (const json& j : tensors) {
    print_tensor_head(j);
    if (j["status"] == "skipped") {
      std::cout << "skipped: " << j["why"].get<std::string>() << "\n";
      continue;
    }
    const uint64_t b0 = j["bytes_before"].get<uint64_t>(), b1 = j["bytes_after"].get<uint64_t>();
    std::cout << j["type"].get<std::string>() << " " << j["pattern"].get<std::string>() << ": " << b0 << " bytes -> "
              << j["values"]["bytes"].get<uint64_t>() << " values + " << j["metadata"]["bytes"].get<uint64_t>()
              << " metadata = " << b1 << " bytes (" << percent(static_cast<double>(b1), static_cast<double>(b0)) << ")";
    if (const int64_t nz = j["negative_zeros_to_positive"].get<int64_t>(); nz > 0)
      std::cout << "; " << nz << " -0 will decompress as +0";
    std::cout << "\n";
  }
}

// ------------------------------------------------------------------ decompress

void run_decompress_checkpoint(const std::string& in, const std::string& out, bool unordered, bool as_json) {
  require_distinct({{"IN", in}}, {{"OUT", out}});
  SafeTensors f = read_safetensors(in);
  if (!is_compressed_checkpoint(f)) {
    const auto it = f.metadata.find("format");
    if (it != f.metadata.end() && it->second == kCompressedFormat)
      fail(Status::invalid_argument, in +
                                         ": holds one compressed matrix (compress --out), not a compressed checkpoint: "
                                         "decompress it to OUT.npy");
    fail(Status::io_error, in + ": not an spmma compressed checkpoint: its __metadata__ has no \"" +
                               std::string(kFormatKey) +
                               "\" (spmma compress MODEL.safetensors OUT.safetensors writes one)");
  }
  const std::string& format = f.metadata.at(std::string(kFormatKey));
  if (format != kFormat)
    fail(Status::io_error, in + ": __metadata__ " + std::string(kFormatKey) + " is \"" + io::printable(format) +
                               "\", not \"" + std::string(kFormat) + "\"");
  const auto ver = f.metadata.find(std::string(kVersionKey));
  if (ver == f.metadata.end() || ver->second != kFormatVersion)
    fail(Status::io_error,
         in + ": spmma compressed-checkpoint " + std::string(kVersionKey) + " " +
             (ver == f.metadata.end() ? std::string("is missing") : "\"" + io::printable(ver->second) + "\"") +
             "; this spmma reads version " + std::string(kFormatVersion) + ": use the spmma that wrote it");

  // The records: "spmma.compressed.NAME.FIELD" (NAME may hold dots; FIELD has none).
  std::map<std::string, std::map<std::string, std::string>> records;
  SafeTensors result;
  for (const auto& [key, value] : f.metadata) {
    if (!key.starts_with(kRecordPrefix)) {
      if (key != kFormatKey && key != kVersionKey && key != kCompressedByKey) result.metadata[key] = value;
      continue;
    }
    const std::string rest = key.substr(kRecordPrefix.size());
    const size_t dot = rest.rfind('.');
    const std::string field = dot == std::string::npos ? rest : rest.substr(dot + 1);
    if (dot == std::string::npos || dot == 0 ||
        std::find(std::begin(kRecordFields), std::end(kRecordFields), field) == std::end(kRecordFields))
      fail(Status::io_error, in + ": __metadata__ key \"" + io::printable(key) +
                                 "\" is not spmma.compressed.NAME.FIELD with FIELD one of "
                                 "type, pattern, rows, cols, ordered");
    records[rest.substr(0, dot)][field] = value;
  }

  uint64_t before = 0;  // the tensor data read (counted here: the records' tensors are moved out below)
  for (const SafeTensor& t : f.tensors) before += t.data.size();

  // Each record's two tensors, checked as the compressed-matrix container is, and decompressed.
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < f.tensors.size(); ++k) index[f.tensors[k].name] = k;
  std::map<std::string, SafeTensor> restored;  // by the name of its values tensor
  std::set<std::string> consumed;
  for (const auto& [name, fields] : records) {
    const std::string where = in + ": compressed tensor \"" + io::printable(name) + "\"";
    SafeTensors one;
    one.metadata = {{"format", std::string(kCompressedFormat)},
                    {"format_version", std::string(kCompressedFormatVersion)}};
    for (const auto& [field, value] : fields) one.metadata[field] = value;
    for (const char* part : {"values", "metadata"}) {
      const auto it = index.find(name + "." + part);
      if (it == index.end())
        fail(Status::io_error,
             where + ": the checkpoint lacks its tensor \"" + io::printable(name + "." + part) + "\"");
      SafeTensor& s = f.tensors[it->second];
      one.tensors.push_back({part, s.dtype, s.shape, std::move(s.data)});  // consumed: not copied to the output
      consumed.insert(s.name);
    }
    Compressed c = compressed_from_safetensors(one, where);
    const DtypeTypes* dt = by_values(c.type);
    if (!dt)
      fail(Status::io_error, where + ": type " + std::string(type_name(c.type)) +
                                 " is not a dtype's own type (f16, bf16, f32, e4m3, e5m2, s8, u8), which is what "
                                 "spmma compress writes for a checkpoint");
    if (unordered) c.ordered = false;  // only widens the nibbles accepted
    Matrix dense;
    try {
      dense = decompress(c);
    } catch (const Error& e) {
      throw Error(e.code(), where + ": " + e.what());
    }
    restored[name + ".values"] = {name, dt->dtype, {c.rows, c.cols}, to_bytes(dense)};
  }
  // In the file's order, each dense tensor where its values were.
  json tensors = json::array();
  uint64_t after = 0;
  for (SafeTensor& t : f.tensors) {
    if (const auto it = restored.find(t.name); it != restored.end()) {
      SafeTensor& r = it->second;
      const auto& fields = records[r.name];
      json j = tensor_json(r);
      j["status"] = "restored";
      // What the record said; "ordered" as the file has it (--unordered only widens what is read).
      j["restored_from"] = {{"type", fields.at("type")},
                            {"pattern", fields.at("pattern")},
                            {"ordered", fields.at("ordered") == "true"},
                            {"values", r.name + ".values"},
                            {"metadata", r.name + ".metadata"}};
      j["bytes"] = r.data.size();
      after += r.data.size();
      tensors.push_back(j);
      result.tensors.push_back(std::move(r));
    } else if (!consumed.contains(t.name)) {
      json j = tensor_json(t);
      j["status"] = "copied";
      j["bytes"] = t.data.size();
      after += t.data.size();
      tensors.push_back(j);
      result.tensors.push_back(std::move(t));
    }
  }
  std::set<std::string> out_names;
  for (const SafeTensor& t : result.tensors)
    if (!out_names.insert(t.name).second)
      fail(Status::io_error, in + ": decompressing would write two tensors named \"" + io::printable(t.name) +
                                 "\" (a restored tensor and one the file holds)");
  write_safetensors(out, result);
  const int64_t n_restored = static_cast<int64_t>(records.size()),
                n_copied = static_cast<int64_t>(result.tensors.size()) - n_restored;
  if (as_json) {
    const json j = {
        {"file", in},
        {"output", out},
        {"format", kFormat},
        {"format_version", kFormatVersion},
        {"summary", {{"restored", n_restored}, {"copied", n_copied}, {"bytes_before", before}, {"bytes_after", after}}},
        {"tensors", tensors}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "decompressed " << in << " -> " << out << ": " << plural(n_restored, "tensor") << " restored, "
            << n_copied << " copied\n";
  for (const json& j : tensors) {
    print_tensor_head(j);
    if (j["status"] == "copied") {
      std::cout << "copied\n";
      continue;
    }
    const json& from = j["restored_from"];
    std::cout << "restored from " << from["type"].get<std::string>() << " " << from["pattern"].get<std::string>()
              << "\n";
  }
}

}  // namespace spmma::cli
