// spmma prune / check / compress / decompress: the host sparse formats on .npy files.
//
//   dense .npy (values) --prune--> pruned .npy (values) --compress--> values .npy (bit patterns)
//                                                                     + metadata .npy (uint16)
//   and back with decompress. The layouts are the ones of include/spmma/sparse.hpp.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "spmma/error.hpp"
#include "spmma/matrix.hpp"
#include "spmma/npy.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma::cli {
namespace {

using json = nlohmann::ordered_json;

// The element types that have a sparse A operand, listed for --help from the library's own tables.
std::string sparse_type_list() {
  std::string out;
  for (ElemType t : kAllElemTypes) {
    try {
      const Pattern p = pattern_for(t);
      if (!out.empty()) out += ", ";
      out += std::string(type_name(t)) + " (" + pattern_info(p).name + ")";
    } catch (const std::exception&) {
      // no sparse form: not listed
    }
  }
  return out.empty() ? std::string("f16, bf16, tf32, e4m3, e5m2, e3m2, e2m3, e2m1, s8, u8, s4, u4") : out;
}

// Runs f; an spmma::Error thrown inside gets `name: ` in front of its message (unless the
// message already starts with it), keeping its code.
template <class F>
auto in_context(const std::string& name, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(name + ":", 0) == 0) throw;
    throw Error(e.code(), name + ": " + msg);
  }
}

struct TypeAndPattern {
  ElemType type;
  Pattern pattern;
  const PatternInfo* info;
};

TypeAndPattern resolve_type(const std::string& name) {
  const std::optional<ElemType> parsed = parse_elem_type(name);
  if (!parsed)
    fail(Status::invalid_argument, "--type " + name + ": unknown element type (sparse types: " + sparse_type_list() + ")");
  const ElemType t = *parsed;
  Pattern p;
  try {
    p = pattern_for(t);
  } catch (const Error& e) {
    throw Error(e.code(), "--type " + name + ": " + e.what());
  }
  return {t, p, &pattern_info(p)};
}

void require_chunk_multiple(const std::string& file, int64_t cols, const TypeAndPattern& tp) {
  if (cols % tp.info->chunk != 0)
    fail(Status::invalid_argument, file + ": " + std::to_string(cols) + " columns is not a multiple of the " +
                                       tp.info->name + " chunk width " + std::to_string(tp.info->chunk) + " of " +
                                       std::string(type_name(tp.type)));
}

std::string shape_text(int64_t r, int64_t c) { return std::to_string(r) + " x " + std::to_string(c); }

int64_t count_nonzeros(const Matrix& m) {
  int64_t n = 0;
  for (uint64_t b : m.bits) n += is_zero(m.type, b) ? 0 : 1;
  return n;
}

size_t dense_bytes(const Matrix& m) {
  const auto bits = static_cast<uint64_t>(type_info(m.type).bits);
  return static_cast<size_t>((static_cast<uint64_t>(m.rows * m.cols) * bits + 7) / 8);
}

Matrix read_dense(const std::string& file, const TypeAndPattern& tp) {
  const NpyArray a = read_npy(file);
  return npy_to_matrix(a, tp.type, file);
}

// -------------------------------------------------------------------------- prune

struct PruneOpts {
  std::string in, out, type, mask;
};

void run_prune(const PruneOpts& o) {
  const TypeAndPattern tp = resolve_type(o.type);
  const Matrix dense = read_dense(o.in, tp);
  require_chunk_multiple(o.in, dense.cols, tp);
  Matrix pruned;
  if (!o.mask.empty()) {
    const NpyArray ma = read_npy(o.mask);
    if (ma.rows() != dense.rows || ma.cols() != dense.cols)
      fail(Status::invalid_argument, o.mask + ": mask is " + shape_text(ma.rows(), ma.cols()) + " but " + o.in + " is " +
                                         shape_text(dense.rows, dense.cols));
    std::vector<uint8_t> mask(static_cast<size_t>(ma.size()));
    for (int64_t i = 0; i < ma.size(); ++i) mask[static_cast<size_t>(i)] = npy_value(ma, i) != 0.0 ? 1 : 0;
    pruned = in_context(o.mask, [&] { return prune_mask(dense, mask); });
  } else {
    pruned = in_context(o.in, [&] { return prune_magnitude(dense); });
  }
  write_npy_values(o.out, pruned);
  std::cout << "pruned " << o.in << " (" << shape_text(dense.rows, dense.cols) << " " << type_name(tp.type) << ", "
            << tp.info->name << (o.mask.empty() ? " by magnitude" : " by mask " + o.mask) << "): "
            << count_nonzeros(pruned) << " of " << count_nonzeros(dense) << " non-zeros kept -> " << o.out << " ("
            << npy_value_dtype(tp.type) << ")\n";
}

// -------------------------------------------------------------------------- check

struct CheckOpts {
  std::string in, type;
  bool json = false;
};

void run_check(const CheckOpts& o) {
  const TypeAndPattern tp = resolve_type(o.type);
  const Matrix dense = read_dense(o.in, tp);
  require_chunk_multiple(o.in, dense.cols, tp);
  const std::optional<Violation> v = in_context(o.in, [&] { return check_pattern(dense); });
  if (o.json) {
    json j = {{"file", o.in},
              {"rows", dense.rows},
              {"cols", dense.cols},
              {"type", std::string(type_name(tp.type))},
              {"pattern", tp.info->name},
              {"ok", !v.has_value()}};
    if (v)
      j["violation"] = {{"row", v->row},
                        {"chunk", v->chunk},
                        {"first_col", v->first_col},
                        {"nonzeros", v->nonzeros},
                        {"message", v->message}};
    std::cout << j.dump(2) << "\n";
  } else if (!v) {
    std::cout << "ok: " << shape_text(dense.rows, dense.cols) << " " << type_name(tp.type) << " satisfies "
              << tp.info->name << "\n";
  } else {
    std::cout << o.in << ": " << shape_text(dense.rows, dense.cols) << " " << type_name(tp.type) << " violates "
              << tp.info->name << ": " << v->message << "\n";
  }
  if (v) throw CLI::RuntimeError(1);  // the answer is printed; exit 1 without an error line
}

// -------------------------------------------------------------------------- compress

struct CompressOpts {
  std::string in, type, values, meta;
  bool unordered = false;
  bool json = false;
};

void run_compress(const CompressOpts& o) {
  const TypeAndPattern tp = resolve_type(o.type);
  const Matrix dense = read_dense(o.in, tp);
  require_chunk_multiple(o.in, dense.cols, tp);
  const Compressed c = in_context(o.in, [&] { return compress(dense, !o.unordered); });

  const NpyArray va = matrix_bits_to_npy(c.values);
  const int64_t words = c.meta_words_per_row();
  NpyArray ma = make_npy("<u2", {c.rows, words});
  for (size_t i = 0; i < c.metadata.size(); ++i) npy_set_raw(ma, static_cast<int64_t>(i), c.metadata[i]);
  write_npy(o.values, va);
  write_npy(o.meta, ma);

  const size_t vb = c.value_bytes(), mb = c.metadata_bytes(), db = dense_bytes(dense);
  const double ratio = db ? static_cast<double>(vb + mb) / static_cast<double>(db) : 0.0;
  if (o.json) {
    json j = {{"input", o.in},
              {"rows", c.rows},
              {"cols", c.cols},
              {"type", std::string(type_name(tp.type))},
              {"pattern", tp.info->name},
              {"ordered_metadata", c.ordered},
              {"values",
               {{"file", o.values},
                {"shape", {c.values.rows, c.values.cols}},
                {"dtype", va.dtype},
                {"packed_bytes", vb},
                {"array_bytes", va.data.size()}}},
              {"metadata",
               {{"file", o.meta}, {"shape", {c.rows, words}}, {"dtype", "<u2"}, {"bytes", mb}}},
              {"dense_bytes", db},
              {"compressed_bytes", vb + mb},
              {"ratio", ratio}};
    std::cout << j.dump(2) << "\n";
  } else {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.2f%%", 100.0 * ratio);
    std::cout << "compressed " << o.in << " (" << shape_text(c.rows, c.cols) << " " << type_name(tp.type) << ", "
              << tp.info->name << (c.ordered ? ", ordered" : ", unordered") << " metadata): values "
              << shape_text(c.values.rows, c.values.cols) << " " << va.dtype << " -> " << o.values << " (" << vb
              << " bytes packed at " << type_info(tp.type).bits << " bits), metadata " << shape_text(c.rows, words)
              << " <u2 -> " << o.meta << " (" << mb << " bytes); " << vb + mb << " of " << db << " dense bytes ("
              << pct << ")\n";
  }
}

// -------------------------------------------------------------------------- decompress

struct DecompressOpts {
  std::string out, type, values, meta;
  int64_t cols = -1;
  bool unordered = false;
};

void run_decompress(const DecompressOpts& o) {
  const TypeAndPattern tp = resolve_type(o.type);
  const NpyArray va = read_npy(o.values);
  const NpyArray ma = read_npy(o.meta);

  Compressed c;
  c.type = tp.type;
  c.pattern = tp.pattern;
  c.ordered = !o.unordered;
  c.values = npy_bits_to_matrix(va, tp.type, o.values);
  c.rows = c.values.rows;
  c.cols = o.cols >= 0 ? o.cols : 2 * c.values.cols;
  if (o.cols >= 0 && 2 * c.values.cols != o.cols)
    fail(Status::invalid_argument, o.values + ": holds " + std::to_string(c.values.cols) +
                                       " stored values per row, but --cols " + std::to_string(o.cols) + " needs " +
                                       std::to_string(o.cols / 2) + " (half of the dense columns)");
  require_chunk_multiple(o.values + " (dense)", c.cols, tp);
  const int64_t words = c.meta_words_per_row();
  if (ma.rows() != c.rows || ma.cols() != words)
    fail(Status::invalid_argument, "shape mismatch: " + o.meta + " is " + shape_text(ma.rows(), ma.cols()) + " but " +
                                       o.values + " (" + shape_text(c.values.rows, c.values.cols) +
                                       " stored values, " + shape_text(c.rows, c.cols) + " dense " +
                                       std::string(type_name(tp.type)) + ", " + tp.info->name + ") needs " +
                                       shape_text(c.rows, words) + " uint16 metadata words");
  if (!npy_dtype_is_integer(ma.dtype) || ma.dtype == "|b1")
    fail(Status::io_error, o.meta + ": metadata needs an integer array (uint16), got dtype '" + ma.dtype + "'");
  c.metadata.resize(static_cast<size_t>(ma.size()));
  for (int64_t i = 0; i < ma.size(); ++i) {
    const uint64_t w = npy_raw(ma, i);
    if (w > 0xFFFF)
      fail(Status::invalid_value, o.meta + ": element (" + std::to_string(i / words) + ", " +
                                      std::to_string(i % words) + ") = " + std::to_string(w) +
                                      " is not a 16-bit metadata word");
    c.metadata[static_cast<size_t>(i)] = static_cast<uint16_t>(w);
  }
  const Matrix dense = in_context(o.meta, [&] { return decompress(c); });
  write_npy_values(o.out, dense);
  std::cout << "decompressed " << o.values << " + " << o.meta << " -> " << o.out << " ("
            << shape_text(dense.rows, dense.cols) << " " << type_name(tp.type) << ", " << npy_value_dtype(tp.type)
            << ")\n";
}

}  // namespace

void register_formats(CLI::App& app) {
  const std::string types = "element type: " + sparse_type_list();

  {
    auto o = std::make_shared<PruneOpts>();
    auto* sub = app.add_subcommand("prune", "Prune a dense matrix to the sparsity pattern of its element type");
    sub->footer(
        "Values are rounded into --type (RNE), then each chunk keeps its largest magnitudes (2:4, 1:2, or\n"
        "4:8 pair-wise by the pair's |a|+|b|), or exactly the entries --mask marks non-zero. OUT.npy holds\n"
        "the pruned values: float32 for the float types (all exact), int8 / uint8 for the integer types.\n");
    sub->add_option("IN.npy", o->in, "dense input matrix (.npy, 1-D or 2-D, values)")->required()->type_name("");
    sub->add_option("OUT.npy", o->out, "pruned output matrix (.npy, values)")->required()->type_name("");
    sub->add_option("-t,--type", o->type, types)->required()->type_name("TYPE");
    sub->add_option("--mask", o->mask, "keep exactly the non-zero entries of this matrix (same shape, any dtype)")
        ->type_name("MASK.npy");
    sub->callback([o] { run_prune(*o); });
  }
  {
    auto o = std::make_shared<CheckOpts>();
    auto* sub = app.add_subcommand("check", "Check that a matrix satisfies its element type's sparsity pattern");
    sub->footer(
        "Values are rounded into --type first. Exit 0 and print 'ok: R x C <type> satisfies <pattern>',\n"
        "or print the first violation (row, chunk, columns, non-zeros) and exit 1.\n");
    sub->add_option("IN.npy", o->in, "matrix to check (.npy, values)")->required()->type_name("");
    sub->add_option("-t,--type", o->type, types)->required()->type_name("TYPE");
    sub->add_flag("--json", o->json, "print the result as JSON");
    sub->callback([o] { run_check(*o); });
  }
  {
    auto o = std::make_shared<CompressOpts>();
    auto* sub = app.add_subcommand("compress", "Compress a pruned matrix into values and metadata");
    sub->footer(
        "V.npy: the kept values as raw bit patterns, rows x cols/2, in increasing column order per chunk;\n"
        "uint8 for 8-bit and narrower types (4-bit: one element per byte, low nibble), uint16 for\n"
        "f16 / bf16, uint32 for tf32. M.npy: uint16 words, rows x ceil(chunks/4); one nibble per chunk\n"
        "(idx0 in bits 1:0, idx1 in bits 3:2), the lowest chunk in the lowest bits.\n");
    sub->add_option("IN.npy", o->in, "pruned matrix (.npy, values)")->required()->type_name("");
    sub->add_option("-t,--type", o->type, types)->required()->type_name("TYPE");
    sub->add_option("--values", o->values, "output: compressed values (.npy, bit patterns)")
        ->required()
        ->type_name("V.npy");
    sub->add_option("--meta", o->meta, "output: metadata (.npy, uint16)")->required()->type_name("M.npy");
    sub->add_flag("--unordered", o->unordered,
                  "allow unordered metadata nibbles (default: ordered, idx0 < idx1, as mma.sp::ordered_metadata "
                  "and the fp8/fp6/fp4 kinds need)");
    sub->add_flag("--json", o->json, "print the summary as JSON");
    sub->callback([o] { run_compress(*o); });
  }
  {
    auto o = std::make_shared<DecompressOpts>();
    auto* sub = app.add_subcommand("decompress", "Rebuild the dense matrix from values and metadata");
    sub->footer("The inverse of compress; OUT.npy holds values as prune writes them.\n");
    sub->add_option("OUT.npy", o->out, "dense output matrix (.npy, values)")->required()->type_name("");
    sub->add_option("-t,--type", o->type, types)->required()->type_name("TYPE");
    sub->add_option("--values", o->values, "compressed values (.npy, bit patterns, rows x cols/2)")
        ->required()
        ->type_name("V.npy");
    sub->add_option("--meta", o->meta, "metadata (.npy, uint16 words)")->required()->type_name("M.npy");
    sub->add_option("--cols", o->cols, "dense column count K (default: twice the stored values per row)")
        ->type_name("K")
        ->check(CLI::NonNegativeNumber);
    sub->add_flag("--unordered", o->unordered, "accept unordered metadata nibbles (default: ordered only)");
    sub->callback([o] { run_decompress(*o); });
  }
}

}  // namespace spmma::cli
