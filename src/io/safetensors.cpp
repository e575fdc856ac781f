// SPDX-License-Identifier: BSD-3-Clause
// spmma — safetensors reader / writer and the compressed-matrix container
// (include/spmma/safetensors.hpp, docs/files.md).
#include "spmma/safetensors.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "io/files.hpp"
#include "spmma/error.hpp"

namespace spmma {
namespace {

using io::io_fail;
using io::name_prefix;
using io::printable;

using json = nlohmann::json;

// The safetensors library's own limit on the header (safetensors/src/tensor.rs, MAX_HEADER_SIZE).
constexpr uint64_t kMaxHeader = 100'000'000;

struct DtypeSize {
  std::string_view name;
  size_t size;
};
constexpr DtypeSize kDtypes[] = {{"BOOL", 1},    {"U8", 1},   {"I8", 1},   {"F8_E5M2", 1}, {"F8_E4M3", 1},
                                 {"F8_E8M0", 1}, {"U16", 2},  {"I16", 2},  {"F16", 2},     {"BF16", 2},
                                 {"U32", 4},     {"I32", 4},  {"F32", 4},  {"U64", 8},     {"I64", 8},
                                 {"F64", 8}};
constexpr const char* kDtypeList = "BOOL U8 I8 F8_E5M2 F8_E4M3 F8_E8M0 U16 I16 F16 BF16 U32 I32 F32 U64 I64 F64";


std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// product(shape) * item, or false on overflow of uint64.
bool byte_count(const std::vector<int64_t>& shape, size_t item, uint64_t& out) {
  uint64_t n = item;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
  out = n;
  return true;
}

// A JSON number that is a non-negative integer (not 1.0, not -1, not 1e3).
bool get_unsigned(const json& v, uint64_t& out) {
  if (!v.is_number_unsigned()) return false;
  out = v.get<uint64_t>();
  return true;
}

std::string json_kind(const json& v) {
  if (v.is_number_float()) return "a non-integer number";
  if (v.is_number_integer() && !v.is_number_unsigned()) return "a negative number";
  return std::string("a JSON ") + v.type_name();
}

// The header text, parsed with every key of every object checked for repeats (nlohmann keeps
// the last of a repeated key silently) and the nesting limited to what the format has:
// {name: {"shape": [..]}} is three levels.
json parse_header(std::string_view text, std::string_view name) {
  std::vector<std::set<std::string>> keys;
  const json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth > 2) io_fail(name, "malformed safetensors header: JSON nested deeper than the format allows");
        if (ev == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string k = parsed.get<std::string>();
        if (!keys.empty() && !keys.back().insert(k).second)
          io_fail(name, "malformed safetensors header: the key \"" + printable(k, 80) + "\" appears twice in one object");
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    std::string what = e.what();
    const size_t cut = what.find("] ");  // drop nlohmann's "[json.exception.parse_error.101] "
    if (cut != std::string::npos) what = what.substr(cut + 2);
    io_fail(name, "malformed safetensors header (not valid JSON: " + printable(what, 200) + ")");
  }
}

// rows / cols of the container: decimal digits only, no sign, no leading zeros, within int64.
bool parse_count(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 19 || (s.size() > 1 && s[0] == '0')) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

const SafeTensor* SafeTensors::find(std::string_view name) const {
  for (const SafeTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

size_t safetensors_dtype_size(std::string_view dtype, std::string_view where) {
  for (const DtypeSize& d : kDtypes)
    if (d.name == dtype) return d.size;
  if (dtype == "F4" || dtype == "F6_E2M3" || dtype == "F6_E3M2")
    io_fail(where, "dtype \"" + std::string(dtype) + "\" packs elements below a byte; spmma reads " + kDtypeList);
  io_fail(where, "unknown dtype \"" + printable(dtype, 80) + "\" (spmma reads " + kDtypeList + ")");
}

SafeTensors parse_safetensors(std::span<const uint8_t> bytes, std::string_view name) {
  if (bytes.size() < 8)
    io_fail(name, "not a safetensors file (" + std::to_string(bytes.size()) +
                      " bytes; it starts with an 8-byte header length)");
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= static_cast<uint64_t>(bytes[static_cast<size_t>(k)]) << (8 * k);
  const uint64_t after = bytes.size() - 8;
  if (n > after)
    io_fail(name, "not a safetensors file, or truncated: the header length " + std::to_string(n) +
                      " reaches beyond the end of the file (" + std::to_string(after) + " bytes follow it)" +
                      (bytes[0] == 0x93 && bytes[1] == 'N' ? "; this is a .npy file" : ""));
  if (n > kMaxHeader)
    io_fail(name, "safetensors header length " + std::to_string(n) + " is above the 100 MB limit");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<size_t>(n));
  if (text.empty() || text[0] != '{')
    io_fail(name, "malformed safetensors header: it must be a JSON object starting with '{', it starts with \"" +
                      printable(text, 16) + "\"");
  const json h = parse_header(text, name);
  if (!h.is_object()) io_fail(name, "malformed safetensors header: not a JSON object");

  const std::span<const uint8_t> buffer = bytes.subspan(8 + static_cast<size_t>(n));
  struct Placed {
    size_t index;
    uint64_t begin, end;
  };
  std::vector<Placed> placed;
  SafeTensors out;
  for (const auto& [key, v] : h.items()) {
    if (key == "__metadata__") {
      if (!v.is_object()) io_fail(name, "malformed safetensors header: \"__metadata__\" is not an object");
      for (const auto& [mk, mv] : v.items()) {
        if (!mv.is_string())
          io_fail(name, "malformed safetensors header: \"__metadata__\" entry \"" + printable(mk) + "\" is " +
                            json_kind(mv) + ", not a string");
        out.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    const std::string where = "tensor \"" + printable(key) + "\"";
    auto bad = [&](const std::string& what) { io_fail(name, "malformed safetensors header: " + where + " " + what); };
    if (!v.is_object()) bad("is " + json_kind(v) + ", not an object");
    for (const auto& [fk, fv] : v.items()) {
      (void)fv;
      if (fk != "dtype" && fk != "shape" && fk != "data_offsets") bad("has the unknown field \"" + printable(fk) + "\"");
    }
    if (!v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      bad(std::string("lacks the field \"") + (!v.contains("dtype") ? "dtype" : !v.contains("shape") ? "shape" : "data_offsets") +
          "\"");
    SafeTensor t;
    t.name = key;
    if (!v["dtype"].is_string()) bad("has a dtype that is " + json_kind(v["dtype"]) + ", not a string");
    t.dtype = v["dtype"].get<std::string>();
    const size_t item = safetensors_dtype_size(t.dtype, name_prefix(name) + where);
    if (!v["shape"].is_array()) bad("has a shape that is " + json_kind(v["shape"]) + ", not an array");
    for (const json& d : v["shape"]) {
      uint64_t u = 0;
      if (!get_unsigned(d, u) || u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        bad("has a shape entry that is " + (d.is_number_unsigned() ? std::string("above 2^63 - 1") : json_kind(d)));
      t.shape.push_back(static_cast<int64_t>(u));
    }
    const json& off = v["data_offsets"];
    uint64_t begin = 0, end = 0;
    if (!off.is_array() || off.size() != 2 || !get_unsigned(off[0], begin) || !get_unsigned(off[1], end))
      bad("has data_offsets that are not [begin, end] with non-negative integers");
    if (begin > end)
      bad("has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] with begin after end");
    if (end > buffer.size())
      bad("has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] beyond the " +
          std::to_string(buffer.size()) + "-byte data buffer");
    uint64_t need = 0;
    if (!byte_count(t.shape, item, need))
      bad("has shape " + shape_str(t.shape) + " of " + t.dtype + ", whose size overflows 64 bits");
    if (need != end - begin)
      bad("has shape " + shape_str(t.shape) + " of " + t.dtype + " (" + std::to_string(need) +
          " bytes) but data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] hold " +
          std::to_string(end - begin));
    placed.push_back({out.tensors.size(), begin, end});
    out.tensors.push_back(std::move(t));
  }
  // The data of the tensors, in offset order, must tile the buffer: no overlap, no gap, no tail.
  std::sort(placed.begin(), placed.end(),
            [](const Placed& a, const Placed& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t at = 0;
  const SafeTensor* prev = nullptr;
  for (const Placed& p : placed) {
    const SafeTensor& t = out.tensors[p.index];
    const std::string range = "[" + std::to_string(p.begin) + ", " + std::to_string(p.end) + "]";
    if (p.begin < at)
      io_fail(name, "malformed safetensors header: tensor \"" + printable(t.name) + "\" data_offsets " + range +
                        " overlap those of tensor \"" + printable(prev ? prev->name : "") + "\" (which end at " +
                        std::to_string(at) + ")");
    if (p.begin > at)
      io_fail(name, "malformed safetensors header: bytes [" + std::to_string(at) + ", " + std::to_string(p.begin) +
                        ") of the data buffer belong to no tensor (tensor \"" + printable(t.name) + "\" starts at " +
                        std::to_string(p.begin) + ")");
    at = p.end;
    prev = &t;
  }
  if (at != buffer.size())
    io_fail(name, "malformed safetensors file: the tensors cover " + std::to_string(at) + " bytes of the " +
                      std::to_string(buffer.size()) + "-byte data buffer");
  std::vector<SafeTensor> ordered;
  ordered.reserve(placed.size());
  for (const Placed& p : placed) {
    SafeTensor& t = out.tensors[p.index];
    t.data.assign(buffer.begin() + static_cast<std::ptrdiff_t>(p.begin), buffer.begin() + static_cast<std::ptrdiff_t>(p.end));
    ordered.push_back(std::move(t));
  }
  out.tensors = std::move(ordered);
  return out;
}

std::vector<uint8_t> serialize_safetensors(const SafeTensors& f) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!f.metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : f.metadata) m[k] = v;
    h["__metadata__"] = std::move(m);
  }
  uint64_t at = 0;
  std::set<std::string> names;
  for (const SafeTensor& t : f.tensors) {
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      fail(Status::invalid_argument, "write_safetensors: tensor name \"" + printable(t.name) + "\" is " +
                                         (t.name == "__metadata__" ? "reserved" : "used twice"));
    size_t item = 0;
    try {
      item = safetensors_dtype_size(t.dtype, "write_safetensors: tensor \"" + printable(t.name) + "\"");
    } catch (const Error& e) {
      fail(Status::invalid_argument, e.what());
    }
    uint64_t need = 0;
    for (int64_t d : t.shape)
      if (d < 0) fail(Status::invalid_argument, "write_safetensors: tensor \"" + printable(t.name) + "\" has shape " + shape_str(t.shape));
    if (!byte_count(t.shape, item, need) || need != t.data.size())
      fail(Status::invalid_argument, "write_safetensors: tensor \"" + printable(t.name) + "\" has shape " +
                                         shape_str(t.shape) + " of " + t.dtype + " but " + std::to_string(t.data.size()) +
                                         " bytes of data");
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + need}}};
    at += need;
  }
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned, as the library writes it
  std::vector<uint8_t> out(8 + text.size() + at);
  const uint64_t n = text.size();
  for (int k = 0; k < 8; ++k) out[static_cast<size_t>(k)] = static_cast<uint8_t>(n >> (8 * k));
  std::memcpy(out.data() + 8, text.data(), text.size());
  size_t pos = 8 + text.size();
  for (const SafeTensor& t : f.tensors) {
    if (!t.data.empty()) std::memcpy(out.data() + pos, t.data.data(), t.data.size());
    pos += t.data.size();
  }
  return out;
}

SafeTensors read_safetensors(const std::string& path) { return parse_safetensors(io::read_file(path), path); }

void write_safetensors(const std::string& path, const SafeTensors& f) {
  io::write_serialized(path, [&] { return serialize_safetensors(f); });
}

// ------------------------------------------------------------------ the compressed-matrix container

std::string_view safetensors_values_dtype(ElemType t) {
  (void)pattern_for(t);  // not_supported for a type without a sparse form
  switch (t) {
    case ElemType::f16: return "F16";
    case ElemType::bf16: return "BF16";
    case ElemType::tf32:
    case ElemType::f32: return "F32";
    case ElemType::e4m3: return "F8_E4M3";
    case ElemType::e5m2: return "F8_E5M2";
    case ElemType::s8: return "I8";
    default: return "U8";  // u8, and one 6- or 4-bit element per byte in the low bits
  }
}

SafeTensors compressed_to_safetensors(const Compressed& c) {
  const std::string_view vd = safetensors_values_dtype(c.type);
  const size_t item = safetensors_dtype_size(vd);
  if (c.values.type != c.type || c.values.rows != c.rows || c.values.cols != c.cols / 2 ||
      c.values.bits.size() != static_cast<size_t>(c.values.rows) * static_cast<size_t>(c.values.cols) ||
      c.metadata.size() != static_cast<size_t>(c.rows) * static_cast<size_t>(c.meta_words_per_row()))
    fail(Status::invalid_argument, "compressed_to_safetensors: the values or metadata do not match the " +
                                       std::to_string(c.rows) + " x " + std::to_string(c.cols) + " matrix");
  SafeTensors f;
  SafeTensor v{"values", std::string(vd), {c.values.rows, c.values.cols}, {}};
  v.data.resize(c.values.bits.size() * item);
  for (size_t i = 0; i < c.values.bits.size(); ++i)
    for (size_t b = 0; b < item; ++b) v.data[i * item + b] = static_cast<uint8_t>(c.values.bits[i] >> (8 * b));
  SafeTensor m{"metadata", "U16", {c.rows, c.meta_words_per_row()}, {}};
  m.data.resize(c.metadata.size() * 2);
  for (size_t i = 0; i < c.metadata.size(); ++i) {
    m.data[2 * i] = static_cast<uint8_t>(c.metadata[i]);
    m.data[2 * i + 1] = static_cast<uint8_t>(c.metadata[i] >> 8);
  }
  f.tensors.push_back(std::move(v));
  f.tensors.push_back(std::move(m));
  f.metadata = {{"format", std::string(kCompressedFormat)},
                {"format_version", std::string(kCompressedFormatVersion)},
                {"type", std::string(type_name(c.type))},
                {"pattern", pattern_info(c.pattern).name},
                {"rows", std::to_string(c.rows)},
                {"cols", std::to_string(c.cols)},
                {"ordered", c.ordered ? "true" : "false"}};
  return f;
}

Compressed compressed_from_safetensors(const SafeTensors& f, std::string_view name) {
  auto meta = [&](const char* key) -> const std::string& {
    const auto it = f.metadata.find(key);
    if (it == f.metadata.end())
      io_fail(name, std::string("not an spmma compressed matrix: its __metadata__ lacks \"") + key +
                        "\" (write one with spmma compress --out)");
    return it->second;
  };
  if (meta("format") != kCompressedFormat)
    io_fail(name, "not an spmma compressed matrix: __metadata__ format is \"" + printable(meta("format")) + "\", not \"" +
        std::string(kCompressedFormat) + "\"");
  if (meta("format_version") != kCompressedFormatVersion)
    io_fail(name, "spmma compressed format_version \"" + printable(meta("format_version")) + "\" is not the one this spmma reads (" +
        std::string(kCompressedFormatVersion) + "); use the spmma that wrote it");
  // The type by its name as written (parse_elem_type also takes the PTX spelling, ".f32"): what
  // a file says is what compressed_to_safetensors writes back (the fuzzer found ".f32" read as f32).
  const std::optional<ElemType> t = parse_elem_type(meta("type"));
  if (!t || type_name(*t) != meta("type"))
    io_fail(name, "__metadata__ type \"" + printable(meta("type")) + "\" is not an element type's name");
  Compressed c;
  c.type = *t;
  const std::string& pname = meta("pattern");
  bool found = false;
  for (Pattern p : {Pattern::p2_4, Pattern::p1_2, Pattern::p4_8_pairs})
    if (pname == pattern_info(p).name) c.pattern = p, found = true;
  if (!found) io_fail(name, "__metadata__ pattern \"" + printable(pname) + "\" is not 2:4, 1:2 or 4:8 pair-wise");
  if (!pattern_allowed(c.type, c.pattern))
    io_fail(name, "__metadata__ pattern " + pname + " is not a sparsity pattern of " + std::string(type_name(c.type)));
  if (!parse_count(meta("rows"), c.rows)) io_fail(name, "__metadata__ rows \"" + printable(meta("rows")) + "\" is not a row count");
  if (!parse_count(meta("cols"), c.cols)) io_fail(name, "__metadata__ cols \"" + printable(meta("cols")) + "\" is not a column count");
  const std::string& ord = meta("ordered");
  if (ord != "true" && ord != "false") io_fail(name, "__metadata__ ordered \"" + printable(ord) + "\" is not true or false");
  c.ordered = ord == "true";
  const std::string shape = std::to_string(c.rows) + " x " + std::to_string(c.cols);
  // An empty matrix is refused: a row count with no columns would cost a loop over the rows
  // (up to 2^63) with no data in the file to bound it.
  if (c.rows == 0 || c.cols == 0) io_fail(name, "holds an empty " + shape + " matrix; spmma works on matrices with elements");
  const PatternInfo& pi = pattern_info(c.pattern);
  if (c.cols % pi.chunk != 0)
    io_fail(name, "__metadata__ cols " + std::to_string(c.cols) + " is not a multiple of the " + pi.name + " chunk width " +
        std::to_string(pi.chunk));

  for (const SafeTensor& s : f.tensors)
    if (s.name != "values" && s.name != "metadata")
      io_fail(name, "holds the tensor \"" + printable(s.name) + "\", which an spmma compressed matrix does not have");
  const SafeTensor* v = f.find("values");
  const SafeTensor* m = f.find("metadata");
  if (!v || !m) io_fail(name, std::string("lacks the tensor \"") + (!v ? "values" : "metadata") + "\"");
  const std::string_view vd = safetensors_values_dtype(c.type);
  const std::vector<int64_t> vshape = {c.rows, c.cols / 2}, mshape = {c.rows, c.meta_words_per_row()};
  if (v->dtype != vd || v->shape != vshape)
    io_fail(name, "tensor \"values\" is " + v->dtype + " " + shape_str(v->shape) + ", but a " + shape + " " +
        std::string(type_name(c.type)) + " matrix stores " + std::string(vd) + " " + shape_str(vshape));
  if (m->dtype != "U16" || m->shape != mshape)
    io_fail(name, "tensor \"metadata\" is " + m->dtype + " " + shape_str(m->shape) + ", but a " + shape + " " +
        std::string(type_name(c.type)) + " matrix (" + pi.name + ") stores U16 " + shape_str(mshape));

  // The shapes agree with the parsed data sizes, so these products are bounded by the file.
  const size_t item = safetensors_dtype_size(vd);
  const int bits = type_info(c.type).bits;
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  c.values = Matrix(c.type, c.rows, c.cols / 2);
  for (size_t i = 0; i < c.values.bits.size(); ++i) {
    uint64_t raw = 0;
    for (size_t b = 0; b < item; ++b) raw |= static_cast<uint64_t>(v->data[i * item + b]) << (8 * b);
    if ((raw & ~mask) != 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(raw));
      fail(Status::invalid_value, name_prefix(name) + "tensor \"values\" element (" + std::to_string(i / static_cast<size_t>(c.cols / 2)) +
                                      ", " + std::to_string(i % static_cast<size_t>(c.cols / 2)) + ") = " + buf +
                                      " does not fit in the " + std::to_string(bits) + "-bit pattern of " +
                                      std::string(type_name(c.type)));
    }
    c.values.bits[i] = raw;
  }
  c.metadata.resize(m->data.size() / 2);
  for (size_t i = 0; i < c.metadata.size(); ++i)
    c.metadata[i] = static_cast<uint16_t>(m->data[2 * i] | (m->data[2 * i + 1] << 8));
  return c;
}

void write_compressed(const std::string& path, const Compressed& c) { write_safetensors(path, compressed_to_safetensors(c)); }

Compressed read_compressed(const std::string& path) { return compressed_from_safetensors(read_safetensors(path), path); }

}  // namespace spmma
