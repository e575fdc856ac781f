// SPDX-License-Identifier: BSD-3-Clause
// spmma prune / check / compress / decompress: the host sparse formats on .npy files.
//
//   dense .npy (values, or bit patterns with --bits) --prune--> pruned .npy (the same kind)
//     --compress--> C.safetensors (--out: values, metadata, and what they are: type, pattern,
//                   shape, ordered flag, format version; include/spmma/safetensors.hpp)
//                or values .npy (bit patterns) + metadata .npy (uint16) (--values / --meta)
//   and back with decompress. The layouts are the ones of include/spmma/sparse.hpp; the file
//   rules (dtypes, --bits, the container) are docs/files.md.
// A .safetensors checkpoint as input goes to tools/checkpoint.cpp: check, prune and compress
// work on each of its tensors, and decompress takes a compressed checkpoint back.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "io/files.hpp"
#include "spmma/error.hpp"
#include "spmma/matrix.hpp"
#include "spmma/npy.hpp"
#include "spmma/safetensors.hpp"
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

std::string npy_shape_text(const NpyArray& a) {
  std::string s = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(a.shape[i]);
  return s + (a.shape.size() == 1 ? ",)" : ")");
}

int64_t count_nonzeros(const Matrix& m) {
  int64_t n = 0;
  for (uint64_t b : m.bits) n += is_zero(m.type, b) ? 0 : 1;
  return n;
}

size_t dense_bytes(const Matrix& m) {
  const auto bits = static_cast<uint64_t>(type_info(m.type).bits);
  return static_cast<size_t>((static_cast<uint64_t>(m.rows) * static_cast<uint64_t>(m.cols) * bits + 7) / 8);
}

// Bytes of one bit pattern of t in a .npy array: what compress writes (npy_bits_dtype).
size_t bits_width(ElemType t) { return static_cast<size_t>(npy_bits_dtype(t)[2] - '0'); }

// Every array the commands read must have elements: a shape such as (2^40, 0) is a legal
// 128-byte file, and the row loops of prune / check / compress / decompress would run 2^40
// times over nothing.
NpyArray read_input(const std::string& file) {
  NpyArray a = read_npy(file);
  if (a.size() == 0)
    fail(Status::invalid_argument, file + ": shape " + npy_shape_text(a) +
                                       " has no elements; spmma needs a matrix with at least one row and one column");
  return a;
}

// A dense matrix read from a file, and how: by value, or as bit patterns (--bits, or a raw-bytes
// 'V' dtype such as ml_dtypes' bfloat16 '<V2'), in `dtype`.
struct DenseInput {
  Matrix m;
  bool bits = false;
  std::string dtype;
};

DenseInput read_dense(const std::string& file, const TypeAndPattern& tp, bool bits_flag) {
  const NpyArray a = read_input(file);
  const std::string tn(type_name(tp.type));
  const size_t want = bits_width(tp.type);
  const bool raw = npy_dtype_is_void(a.dtype);
  if (bits_flag || raw) {
    if (!raw && !(npy_dtype_is_integer(a.dtype) && a.dtype != "|b1"))
      fail(Status::invalid_argument, file + ": --bits reads bit patterns from an integer array, but the file holds " +
                                         (a.dtype == "|b1" ? "booleans" : "numbers") + " (dtype '" + a.dtype +
                                         "'): drop --bits to read its values");
    if (a.itemsize() != want)
      fail(Status::invalid_argument,
           file + ": dtype '" + a.dtype + "' holds " + std::to_string(a.itemsize()) + "-byte " +
               (raw ? "raw elements" : "integers") + ", but " + tn + " bit patterns take " + std::to_string(want) +
               (want == 1 ? " byte" : " bytes") + " ('" + std::string(npy_bits_dtype(tp.type)) +
               "'): pass the --type the data was saved as");
    return {npy_bits_to_matrix(a, tp.type, file), true, a.dtype};
  }
  // An int16 array of bf16 bits (torch's w.view(torch.int16).numpy()) would otherwise be read as
  // the integers 16256, -16512, ...: silently wrong. Make the user say which it is.
  if (type_info(tp.type).is_float && npy_dtype_is_integer(a.dtype) && a.dtype != "|b1")
    fail(Status::invalid_argument,
         file + ": an integer array (dtype '" + a.dtype + "') with the float --type " + tn +
             " is ambiguous: pass --bits if it holds " + tn +
             " bit patterns (as torch's w.view(torch.int16).numpy() gives them), or save its values as float32");
  return {npy_to_matrix(a, tp.type, file), false, a.dtype};
}

// -------------------------------------------------------------------------- prune

struct PruneOpts {
  std::string in, out, type, mask;
  std::vector<std::string> tensors;
  bool bits = false, json = false;
};

void run_prune(const PruneOpts& o) {
  if (o.in.ends_with(".safetensors")) {  // a checkpoint: every tensor that can be sparse (tools/checkpoint.cpp)
    if (!o.mask.empty())
      fail(Status::invalid_argument, "prune: --mask is for .npy input (a checkpoint is pruned by magnitude)");
    if (o.bits)
      fail(Status::invalid_argument, "prune: --bits is for .npy input (a .safetensors tensor names its dtype)");
    run_prune_checkpoint({.file = o.in, .out = o.out, .type = o.type, .tensors = o.tensors, .json = o.json});
    return;
  }
  if (!o.tensors.empty())
    fail(Status::invalid_argument, "prune: --tensors selects tensors of a .safetensors checkpoint, not of " + o.in);
  if (o.type.empty()) fail(Status::invalid_argument, "prune: --type is required for .npy input (" + o.in + ")");
  require_distinct({{"IN.npy", o.in}, {"--mask", o.mask}}, {{"OUT.npy", o.out}});
  const TypeAndPattern tp = resolve_type(o.type);
  const DenseInput in = read_dense(o.in, tp, o.bits);
  const Matrix& dense = in.m;
  require_chunk_multiple(o.in, dense.cols, tp);
  Matrix pruned;
  if (!o.mask.empty()) {
    const NpyArray ma = read_input(o.mask);
    if (ma.rows() != dense.rows || ma.cols() != dense.cols)
      fail(Status::invalid_argument, o.mask + ": mask is " + shape_text(ma.rows(), ma.cols()) + " but " + o.in + " is " +
                                         shape_text(dense.rows, dense.cols));
    if (npy_dtype_is_void(ma.dtype))
      fail(Status::invalid_argument, o.mask + ": a mask holds numbers (bool, integer or float; non-zero = keep), not raw "
                                              "bytes (dtype '" + ma.dtype + "')");
    std::vector<uint8_t> mask(static_cast<size_t>(ma.size()));
    for (int64_t i = 0; i < ma.size(); ++i) mask[static_cast<size_t>(i)] = npy_value(ma, i) != 0.0 ? 1 : 0;
    pruned = in_context(o.mask, [&] { return prune_mask(dense, mask); });
  } else {
    pruned = in_context(o.in, [&] { return prune_magnitude(dense); });
  }
  // Bit patterns in, bit patterns out, in the input's own dtype (e.g. '<i2' for torch's int16 view).
  const NpyArray out = in.bits ? matrix_bits_to_npy(pruned, in.dtype) : matrix_to_npy(pruned);
  write_npy(o.out, out);
  if (o.json) {
    const json j = {{"input", o.in},
                    {"output", o.out},
                    {"rows", dense.rows},
                    {"cols", dense.cols},
                    {"type", std::string(type_name(tp.type))},
                    {"pattern", tp.info->name},
                    {"method", o.mask.empty() ? "magnitude" : "mask"},
                    {"mask", o.mask.empty() ? json(nullptr) : json(o.mask)},
                    {"nonzeros", count_nonzeros(dense)},
                    {"nonzeros_kept", count_nonzeros(pruned)},
                    {"dtype", out.dtype},
                    {"bits", in.bits}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "pruned " << o.in << " (" << shape_text(dense.rows, dense.cols) << " " << type_name(tp.type) << ", "
            << tp.info->name << (o.mask.empty() ? " by magnitude" : " by mask " + o.mask) << "): "
            << count_nonzeros(pruned) << " of " << count_nonzeros(dense) << " non-zeros kept -> " << o.out << " ("
            << out.dtype << (in.bits ? ", bit patterns" : "") << ")\n";
}

// -------------------------------------------------------------------------- check

struct CheckOpts {
  std::string in, type;
  std::vector<std::string> tensors;
  bool json = false, bits = false;
};

void run_check(const CheckOpts& o) {
  if (o.in.ends_with(".safetensors")) {  // a checkpoint: one report line per tensor (tools/checkpoint.cpp)
    if (o.bits) fail(Status::invalid_argument, "check: --bits is for .npy input (a .safetensors tensor names its dtype)");
    run_check_checkpoint({.file = o.in, .type = o.type, .tensors = o.tensors, .json = o.json});
    return;
  }
  if (!o.tensors.empty()) fail(Status::invalid_argument, "check: --tensors selects tensors of a .safetensors checkpoint, not of " + o.in);
  if (o.type.empty()) fail(Status::invalid_argument, "check: --type is required for .npy input (" + o.in + ")");
  const TypeAndPattern tp = resolve_type(o.type);
  const Matrix dense = read_dense(o.in, tp, o.bits).m;
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
  std::vector<std::string> files;  // IN.npy, or MODEL.safetensors [OUT.safetensors]
  std::string type, out, values, meta;
  std::vector<std::string> tensors;
  bool unordered = false;
  bool json = false, bits = false;
};

void run_compress(const CompressOpts& o) {
  const std::string in = o.files.front();
  if (in.ends_with(".safetensors")) {  // a checkpoint into a compressed checkpoint (tools/checkpoint.cpp)
    if (!o.values.empty() || !o.meta.empty())
      fail(Status::invalid_argument, "compress: a checkpoint compresses into one checkpoint (compress " + in +
                                         " OUT.safetensors), not into --values/--meta");
    if (o.bits)
      fail(Status::invalid_argument, "compress: --bits is for .npy input (a .safetensors tensor names its dtype)");
    if (o.files.size() == 2 && !o.out.empty())
      fail(Status::invalid_argument, "compress: give OUT.safetensors or --out, not both");
    const std::string out = o.files.size() == 2 ? o.files.back() : o.out;
    if (out.empty())
      fail(Status::invalid_argument, "compress: give the output checkpoint: spmma compress " + in + " OUT.safetensors");
    run_compress_checkpoint(
        {.file = in, .out = out, .type = o.type, .tensors = o.tensors, .json = o.json, .unordered = o.unordered});
    return;
  }
  if (o.files.size() == 2)
    fail(Status::invalid_argument, "compress: " + in +
                                       " is one matrix: write it with --out C.safetensors or --values "
                                       "V.npy --meta M.npy (a second file follows a .safetensors checkpoint)");
  if (!o.tensors.empty())
    fail(Status::invalid_argument, "compress: --tensors selects tensors of a .safetensors checkpoint, not of " + in);
  if (o.type.empty()) fail(Status::invalid_argument, "compress: --type is required for .npy input (" + in + ")");
  if (o.out.empty() == (o.values.empty() && o.meta.empty()))
    fail(Status::invalid_argument, o.out.empty() ? "compress: give --out C.safetensors (one self-describing file), or "
                                                   "--values V.npy and --meta M.npy"
                                                 : "compress: give --out or --values/--meta, not both");
  if (o.out.empty() && (o.values.empty() || o.meta.empty()))
    fail(Status::invalid_argument, std::string("compress: --values and --meta go together; ") +
                                       (o.values.empty() ? "--values" : "--meta") + " is missing");
  require_distinct({{"IN.npy", in}}, {{"--out", o.out}, {"--values", o.values}, {"--meta", o.meta}});
  const TypeAndPattern tp = resolve_type(o.type);
  const Matrix dense = read_dense(in, tp, o.bits).m;
  require_chunk_multiple(in, dense.cols, tp);
  const Compressed c = in_context(in, [&] {
    try {
      return compress(dense, !o.unordered);
    } catch (const Error& e) {
      if (e.code() != Status::pattern_violation) throw;
      throw Error(e.code(), std::string(e.what()) + "; prune first: spmma prune " + in + " PRUNED.npy --type " +
                                o.type + (o.bits ? " --bits" : "") + ", then compress that");
    }
  });

  const int64_t words = c.meta_words_per_row();
  std::string values_dtype, meta_dtype;
  size_t values_array_bytes = 0;
  if (!o.out.empty()) {
    write_compressed(o.out, c);
    values_dtype = std::string(safetensors_values_dtype(c.type));
    meta_dtype = "U16";
    values_array_bytes = c.values.bits.size() * safetensors_dtype_size(values_dtype);
  } else {
    const NpyArray va = matrix_bits_to_npy(c.values);
    NpyArray ma = make_npy("<u2", {c.rows, words});
    for (size_t i = 0; i < c.metadata.size(); ++i) npy_set_raw(ma, static_cast<int64_t>(i), c.metadata[i]);
    // Both files or neither: a failure writing the metadata leaves no values file behind.
    io::OutputFiles files;
    files.add(o.values, serialize_npy(va));
    files.add(o.meta, serialize_npy(ma));
    files.commit();
    values_dtype = va.dtype;
    meta_dtype = "<u2";
    values_array_bytes = va.data.size();
  }
  const std::string& vfile = o.out.empty() ? o.values : o.out;
  const std::string& mfile = o.out.empty() ? o.meta : o.out;

  const size_t vb = c.value_bytes(), mb = c.metadata_bytes(), db = dense_bytes(dense);
  const double ratio = db ? static_cast<double>(vb + mb) / static_cast<double>(db) : 0.0;
  if (o.json) {
    json j = {{"input", in},
              {"rows", c.rows},
              {"cols", c.cols},
              {"type", std::string(type_name(tp.type))},
              {"pattern", tp.info->name},
              {"ordered_metadata", c.ordered}};
    if (!o.out.empty()) j["output"] = {{"file", o.out}, {"format", "safetensors"}, {"format_version", std::string(kCompressedFormatVersion)}};
    j["values"] = {{"file", vfile},
                   {"shape", {c.values.rows, c.values.cols}},
                   {"dtype", values_dtype},
                   {"packed_bytes", vb},
                   {"array_bytes", values_array_bytes}};
    j["metadata"] = {{"file", mfile}, {"shape", {c.rows, words}}, {"dtype", meta_dtype}, {"bytes", mb}};
    j["dense_bytes"] = db;
    j["compressed_bytes"] = vb + mb;
    j["ratio"] = ratio;
    std::cout << j.dump(2) << "\n";
  } else {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.2f%%", 100.0 * ratio);
    std::cout << "compressed " << in << " (" << shape_text(c.rows, c.cols) << " " << type_name(tp.type) << ", "
              << tp.info->name << (c.ordered ? ", ordered" : ", unordered") << " metadata): values "
              << shape_text(c.values.rows, c.values.cols) << " " << values_dtype << " -> " << vfile << " (" << vb
              << " bytes packed at " << type_info(tp.type).bits << " bits), metadata " << shape_text(c.rows, words)
              << " " << meta_dtype << " -> " << mfile << " (" << mb << " bytes); " << vb + mb << " of " << db
              << " dense bytes (" << pct << ")\n";
  }
}

// -------------------------------------------------------------------------- decompress

struct DecompressOpts {
  std::vector<std::string> files;  // [IN.safetensors] OUT.npy
  std::string type, values, meta;
  int64_t cols = -1;
  bool unordered = false, bits = false, json = false;
};

// The compressed values from a .npy: the dtype must be the one compress writes for the type (its
// width; unsigned, signed or raw bytes alike), so that e4m3 values are not read as bf16, nor bf16
// values as tf32.
Matrix read_values_npy(const std::string& file, const TypeAndPattern& tp) {
  const NpyArray va = read_input(file);
  const std::string tn(type_name(tp.type));
  const std::string want(npy_bits_dtype(tp.type));
  const bool bit_dtype = (npy_dtype_is_integer(va.dtype) && va.dtype != "|b1") || npy_dtype_is_void(va.dtype);
  if (!bit_dtype)
    fail(Status::invalid_argument, file + ": compressed values are bit patterns ('" + want + "' for " + tn +
                                       "), but the file holds dtype '" + va.dtype +
                                       "'; give the --values file that spmma compress wrote");
  if (va.itemsize() != bits_width(tp.type))
    fail(Status::invalid_argument,
         file + ": dtype '" + va.dtype + "' holds " + std::to_string(va.itemsize()) + "-byte values, but compress writes " +
             tn + " values as '" + want + "' (" + std::to_string(bits_width(tp.type)) +
             "-byte): pass the --type the file was compressed with (or compress with --out C.safetensors, which "
             "records it)");
  return npy_bits_to_matrix(va, tp.type, file);
}

void run_decompress(const DecompressOpts& o) {
  const bool container = o.files.size() == 2;
  const std::string out = o.files.back();
  const std::string in = container ? o.files.front() : std::string();
  if (container && (!o.values.empty() || !o.meta.empty()))
    fail(Status::invalid_argument, "decompress: give IN.safetensors or --values/--meta, not both");
  if (!container && (o.values.empty() || o.meta.empty()))
    fail(Status::invalid_argument, o.values.empty() && o.meta.empty()
                                       ? "decompress: give IN.safetensors OUT.npy (from compress --out), or --values "
                                         "V.npy --meta M.npy --type T OUT.npy"
                                       : std::string("decompress: --values and --meta go together; ") +
                                             (o.values.empty() ? "--values" : "--meta") + " is missing");
  if (container && out.ends_with(".safetensors")) {  // a compressed checkpoint (tools/checkpoint.cpp)
    if (!o.type.empty() || o.cols >= 0 || o.bits)
      fail(Status::invalid_argument,
           "decompress: a compressed checkpoint records each tensor's type, shape and dtype: "
           "drop --type, --cols and --bits");
    run_decompress_checkpoint(in, out, o.unordered, o.json);
    return;
  }
  require_distinct({{"IN.safetensors", in}, {"--values", o.values}, {"--meta", o.meta}}, {{"OUT.npy", out}});

  Compressed c;
  std::string source;
  if (container) {
    const SafeTensors f = read_safetensors(in);
    if (is_compressed_checkpoint(f))
      fail(Status::invalid_argument, in + ": is a compressed checkpoint (" + std::to_string(f.tensors.size()) +
                                         " tensors), not one matrix: decompress it to OUT.safetensors");
    c = compressed_from_safetensors(f, in);
    source = in;
    // --type / --cols are not needed; given, they must agree with what the file records.
    if (!o.type.empty() && resolve_type(o.type).type != c.type)
      fail(Status::invalid_argument, in + " holds a " + std::string(type_name(c.type)) + " matrix, not --type " + o.type +
                                         ": drop --type (the file records its type)");
    if (o.cols >= 0 && o.cols != c.cols)
      fail(Status::invalid_argument, in + " holds " + std::to_string(c.cols) + " dense columns, not --cols " +
                                         std::to_string(o.cols) + ": drop --cols (the file records it)");
    if (o.unordered) c.ordered = false;  // only widens the nibbles accepted
  } else {
    if (o.type.empty())
      fail(Status::invalid_argument, "decompress: --values/--meta need --type (a .safetensors container from compress "
                                     "--out records it)");
    const TypeAndPattern tp = resolve_type(o.type);
    const NpyArray ma = read_input(o.meta);
    c.type = tp.type;
    c.pattern = tp.pattern;
    c.ordered = !o.unordered;
    c.values = read_values_npy(o.values, tp);
    c.rows = c.values.rows;
    const int64_t twice = checked_mul(2, c.values.cols, o.values + ": dense columns of values shape " +
                                                            shape_text(c.values.rows, c.values.cols));
    c.cols = o.cols >= 0 ? o.cols : twice;
    if (o.cols >= 0 && twice != o.cols)
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
    if (!(npy_dtype_is_integer(ma.dtype) || npy_dtype_is_void(ma.dtype)) || ma.dtype == "|b1" || ma.itemsize() != 2)
      fail(Status::invalid_argument, o.meta + ": metadata is uint16 words ('<u2'), got dtype '" + ma.dtype +
                                         "'; give the --meta file that spmma compress wrote");
    c.metadata.resize(static_cast<size_t>(ma.size()));
    for (int64_t i = 0; i < ma.size(); ++i) c.metadata[static_cast<size_t>(i)] = static_cast<uint16_t>(npy_raw(ma, i));
    source = o.values + " + " + o.meta;
  }
  const Matrix dense = in_context(container ? in : o.meta, [&] { return decompress(c); });
  const NpyArray arr = o.bits ? matrix_bits_to_npy(dense) : matrix_to_npy(dense);
  write_npy(out, arr);
  if (o.json) {
    json input =
        container ? json{{"file", in}, {"format", "safetensors"}} : json{{"values", o.values}, {"metadata", o.meta}};
    const json j = {{"input", input},
                    {"output", out},
                    {"rows", dense.rows},
                    {"cols", dense.cols},
                    {"type", std::string(type_name(c.type))},
                    {"pattern", pattern_info(c.pattern).name},
                    {"ordered_metadata", c.ordered},
                    {"dtype", arr.dtype},
                    {"bits", o.bits},
                    {"nonzeros", count_nonzeros(dense)}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "decompressed " << source << " -> " << out << " (" << shape_text(dense.rows, dense.cols) << " "
            << type_name(c.type) << ", " << arr.dtype << (o.bits ? ", bit patterns" : "") << ")\n";
}

}  // namespace

void register_formats(CLI::App& app) {
  const std::string types = "element type: " + sparse_type_list();
  const std::string bits_help =
      "IN.npy holds bit patterns, not values: integers of the type's width (bf16/f16: int16 or uint16, as "
      "torch's w.view(torch.int16).numpy() gives them; tf32: 32-bit; 8-bit and narrower: 8-bit). Raw-bytes "
      "dtypes ('<V2', '|V1': ml_dtypes' bfloat16 and float8) are bit patterns without it";

  const std::string checkpoint_rule =
      "Tensors that can be sparse matrices: 2-D, not empty, dtype BF16, F16, F8_E4M3, F8_E5M2, I8, U8\n"
      "(their own type's pattern, 2:4) or F32 (tf32's 1:2), columns a whole number of chunks; --type\n"
      "names another type's pattern (prune and compress keep each dtype, so only a pattern its type\n"
      "has: 2:4, or 1:2 for F32). The others are listed as skipped, with the reason.\n";
  const std::string tensors_help =
      "with a .safetensors checkpoint: the tensors to work on, by name pattern (shell globs: "
      "'model.layers.*.mlp.*'); repeatable; default: all";
  {
    auto o = std::make_shared<PruneOpts>();
    auto* sub =
        app.add_subcommand("prune", "Prune a dense matrix, or a checkpoint's weights, to their sparsity pattern");
    sub->footer(
        "IN.npy OUT.npy: values are rounded into --type (RNE), then each chunk keeps its largest\n"
        "magnitudes (2:4, 1:2, or 4:8 pair-wise by the pair's |a|+|b|), or exactly the entries --mask\n"
        "marks non-zero. OUT.npy holds the pruned values: float32 for the float types (all exact), int8 /\n"
        "uint8 for the integer types; bit patterns in the input's dtype when the input holds bit patterns\n"
        "(--bits, '<V2'). An integer array with a float --type is refused without --bits.\n"
        "IN.safetensors OUT.safetensors (a checkpoint): each tensor that can be a sparse matrix is pruned\n"
        "by magnitude in its own dtype: kept non-zeros keep their bits, every zero becomes +0 (-0 too);\n"
        "all other tensors are copied byte for byte, in order; __metadata__ is kept, and\n"
        "\"spmma.pruned.NAME\" records each tensor's pattern. One line per tensor: pruned, already\n"
        "satisfied or skipped, and the share of Σ|w| removed.\n" +
        checkpoint_rule + "File rules: docs/files.md.\n");
    sub->add_option("IN", o->in, "dense input: a matrix (.npy, 1-D or 2-D) or a checkpoint (.safetensors)")
        ->required()
        ->type_name("");
    sub->add_option("OUT", o->out, "pruned output: .npy for a matrix, .safetensors for a checkpoint")
        ->required()
        ->type_name("");
    sub->add_option("-t,--type", o->type, types + " (required for .npy)")->type_name("TYPE");
    sub->add_option("--mask", o->mask, "keep exactly the non-zero entries of this matrix (same shape, any numeric dtype)")
        ->type_name("MASK.npy");
    sub->add_option("--tensors", o->tensors, tensors_help)->type_name("PATTERN");
    sub->add_flag("--bits", o->bits, bits_help);
    sub->add_flag("--json", o->json,
                  "print the result as JSON: for IN.npy input, output, rows, cols, type, pattern, method "
                  "(magnitude or mask), mask, nonzeros, nonzeros_kept, dtype, bits; for a checkpoint its per-tensor "
                  "report");
    sub->callback([o] { run_prune(*o); });
  }
  {
    auto o = std::make_shared<CheckOpts>();
    auto* sub = app.add_subcommand("check", "Check that a matrix, or a checkpoint's weights, satisfy their sparsity pattern");
    sub->footer(
        "IN.npy: values are rounded into --type first. Exit 0 and print 'ok: R x C <type> satisfies\n"
        "<pattern>', or print the first violation (row, chunk, columns, non-zeros) and exit 1.\n"
        "IN.safetensors (a checkpoint): one line per tensor: whether it satisfies its pattern, how many\n"
        "chunks break it, and the share of Σ|w| and Σw² that magnitude pruning would remove. Exit 1 when\n"
        "a checked tensor breaks its pattern.\n" +
        checkpoint_rule);
    sub->add_option("IN", o->in, "matrix to check (.npy, values) or checkpoint (.safetensors)")->required()->type_name("");
    sub->add_option("-t,--type", o->type, types + " (required for .npy)")->type_name("TYPE");
    sub->add_option("--tensors", o->tensors, tensors_help)->type_name("PATTERN");
    sub->add_flag("--bits", o->bits, bits_help);
    sub->add_flag("--json", o->json, "print the result as JSON");
    sub->callback([o] { run_check(*o); });
  }
  {
    auto o = std::make_shared<CompressOpts>();
    auto* sub =
        app.add_subcommand("compress", "Compress a pruned matrix, or a pruned checkpoint, into values and metadata");
    sub->footer(
        "--out C.safetensors: one self-describing file (docs/files.md): tensors \"values\" (rows x cols/2\n"
        "bit patterns: BF16, F16, F32 for tf32, F8_E4M3, F8_E5M2, I8, U8; U8 one per byte for 6- and\n"
        "4-bit types) and \"metadata\" (U16), and __metadata__ with the format, type, pattern, rows, cols\n"
        "and ordered flag; `spmma decompress C.safetensors OUT.npy` needs nothing else.\n"
        "--values V.npy --meta M.npy: V.npy the kept values as raw bit patterns, rows x cols/2, in\n"
        "increasing column order per chunk; uint8 for 8-bit and narrower types (4-bit: one element per\n"
        "byte, low nibble), uint16 for f16 / bf16, uint32 for tf32. M.npy: uint16 words, rows x\n"
        "ceil(chunks/4); one nibble per chunk (idx0 in bits 1:0, idx1 in bits 3:2), the lowest chunk in\n"
        "the lowest bits. Both files are written or neither.\n"
        "MODEL.safetensors OUT.safetensors (a checkpoint, pruned): each tensor NAME that can be a sparse\n"
        "matrix must satisfy its pattern (else nothing is written: prune first) and becomes NAME.values\n"
        "(its own dtype; F32 stays f32) and NAME.metadata (U16), in its place; __metadata__ gains\n"
        "\"spmma.format\": \"spmma.compressed-checkpoint\", \"spmma.format_version\": \"1\" and\n"
        "\"spmma.compressed.NAME.{type,pattern,rows,cols,ordered}\"; the other tensors are copied.\n" +
        checkpoint_rule);
    sub->add_option("FILES", o->files,
                    "IN.npy (the pruned matrix), or MODEL.safetensors OUT.safetensors (a pruned checkpoint "
                    "and the compressed one)")
        ->required()
        ->expected(1, 2)
        ->type_name("");
    sub->add_option("-t,--type", o->type, types + " (required for .npy)")->type_name("TYPE");
    sub->add_option("-o,--out", o->out, "output: the compressed matrix in one file (safetensors container)")
        ->type_name("C.safetensors");
    sub->add_option("--values", o->values, "output: compressed values (.npy, bit patterns); with --meta")
        ->type_name("V.npy");
    sub->add_option("--meta", o->meta, "output: metadata (.npy, uint16); with --values")->type_name("M.npy");
    sub->add_option("--tensors", o->tensors, tensors_help)->type_name("PATTERN");
    sub->add_flag("--bits", o->bits, bits_help);
    sub->add_flag("--unordered", o->unordered,
                  "allow unordered metadata nibbles (default: ordered, idx0 < idx1, as mma.sp::ordered_metadata "
                  "and the fp8/fp6/fp4 kinds need)");
    sub->add_flag("--json", o->json, "print the summary as JSON");
    sub->callback([o] { run_compress(*o); });
  }
  {
    auto o = std::make_shared<DecompressOpts>();
    auto* sub = app.add_subcommand("decompress", "Rebuild the dense matrix, or checkpoint, from values and metadata");
    sub->footer(
        "The inverse of compress: `decompress C.safetensors OUT.npy` (the container records type,\n"
        "pattern, shape and ordering), or `decompress --type T --values V.npy --meta M.npy OUT.npy`\n"
        "(V.npy must have the dtype compress writes for T). OUT.npy holds values as prune writes them\n"
        "(--bits: bit patterns).\n"
        "`decompress COMPRESSED.safetensors OUT.safetensors`: a compressed checkpoint (compress\n"
        "MODEL.safetensors OUT.safetensors) back to its dense tensors, bit for bit in their dtype and\n"
        "place (a -0 that compress reported becomes +0); the other tensors and __metadata__ are copied,\n"
        "without the \"spmma.format\" and \"spmma.compressed.*\" keys.\n");
    sub->add_option("FILES", o->files,
                    "[IN.safetensors] OUT: the container and the dense matrix (OUT.npy), or a compressed "
                    "checkpoint and the dense checkpoint (OUT.safetensors)")
        ->required()
        ->expected(1, 2)
        ->type_name("");
    sub->add_option("-t,--type", o->type, types + " (needed with --values/--meta; checked against a container)")
        ->type_name("TYPE");
    sub->add_option("--values", o->values, "compressed values (.npy, bit patterns, rows x cols/2)")->type_name("V.npy");
    sub->add_option("--meta", o->meta, "metadata (.npy, uint16 words)")->type_name("M.npy");
    sub->add_option("--cols", o->cols, "dense column count K (default: twice the stored values per row)")
        ->type_name("K")
        ->check(CLI::NonNegativeNumber);
    sub->add_flag("--unordered", o->unordered, "accept unordered metadata nibbles (default: ordered only)");
    sub->add_flag("--bits", o->bits, "write OUT.npy as bit patterns (uint8 / uint16 / uint32) instead of values");
    sub->add_flag("--json", o->json,
                  "print what was written as JSON: for OUT.npy input, output, rows, cols, type, pattern, "
                  "ordered_metadata, dtype, bits, nonzeros; for a checkpoint file, output, format, "
                  "format_version, summary and a record per tensor (restored or copied)");
    sub->callback([o] { run_decompress(*o); });
  }
}

}  // namespace spmma::cli
