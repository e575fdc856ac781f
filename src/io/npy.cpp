// SPDX-License-Identifier: BSD-3-Clause
// spmma — NumPy .npy reader / writer (format 1.0 / 2.0 / 3.0) and Matrix conversions.
//
// File layout (numpy/lib/format.py):
//   "\x93NUMPY" major minor  header_len (uint16 LE for 1.0, uint32 LE for 2.0 / 3.0)
//   header: a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
//           padded with spaces and a final '\n' so that the data starts 64-byte aligned
//   data:   product(shape) * itemsize bytes
#include "spmma/npy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "io/files.hpp"
#include "spmma/error.hpp"

namespace spmma {
namespace {

using io::io_fail;
using io::name_prefix;
using io::printable;

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kAlign = 64;
constexpr const char* kSupported = "|b1 |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 <f2 <f4 <f8 |V1 <V2 <V4 <V8";


std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  s += ")";
  return s;
}

// ------------------------------------------------------------------ dtypes

struct DtypeInfo {
  char kind;  // 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'V' raw bytes (bit patterns)
  int size;   // bytes
};

std::optional<DtypeInfo> dtype_info_of(std::string_view normalized) {
  if (normalized.size() != 3) return std::nullopt;
  const char kind = normalized[1];
  const int size = normalized[2] - '0';
  return DtypeInfo{kind, size};
}

constexpr std::string_view kNormalized[] = {"|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8",
                                            "<u8", "<f2", "<f4", "<f8", "|V1", "<V2", "<V4", "<V8"};

DtypeInfo info_or_throw(std::string_view dtype) {
  // Fast path for the normalized spellings (called per element), no allocation.
  for (std::string_view k : kNormalized)
    if (dtype == k) return DtypeInfo{k[1], k[2] - '0'};
  // Other accepted spellings ("<u1", "=f4", "f8"), or the io_error for an unsupported one.
  const std::string n = npy_normalize_dtype(dtype);
  return *dtype_info_of(n);
}

// ------------------------------------------------------------------ header parser
// A tiny recursive-descent parser for the Python literals a .npy header can hold.

struct PyVal {
  enum class Kind { str, integer, boolean, none, tuple, list, dict } kind = Kind::none;
  std::string s;
  int64_t i = 0;
  bool b = false;
  // tuple / list: the elements; dict: the values, keys[k] naming items[k]. (Not a vector of
  // std::pair<std::string, PyVal>: PyVal is incomplete here and libc++/clang reject that pair.)
  std::vector<PyVal> items;
  std::vector<std::string> keys;  // dict (string keys only)
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name) : t_(text), name_(name) {}

  PyVal parse_top() {
    skip_ws();
    if (peek() != '{') error("the header is not a Python dict literal");
    PyVal v = parse_value(0);
    skip_ws();
    if (pos_ != t_.size()) error("unexpected text after the closing '}'");
    return v;
  }

 private:
  std::string_view t_;
  std::string_view name_;
  size_t pos_ = 0;

  [[noreturn]] void error(const std::string& what) const {
    io_fail(name_, "malformed .npy header (" + what + " at character " + std::to_string(pos_) +
                       "): \"" + printable(t_) + "\"");
  }
  char peek() const { return pos_ < t_.size() ? t_[pos_] : '\0'; }
  bool at_end() const { return pos_ >= t_.size(); }
  void skip_ws() {
    while (!at_end() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }

  PyVal parse_value(int depth) {
    if (depth > 16) error("nesting too deep");
    skip_ws();
    if (at_end()) error("unexpected end of header");
    const char c = peek();
    if (c == '{') return parse_dict(depth);
    if (c == '(') return parse_seq(depth, ')', PyVal::Kind::tuple);
    if (c == '[') return parse_seq(depth, ']', PyVal::Kind::list);
    if (c == '\'' || c == '"') return parse_str();
    if ((c == 'u' || c == 'b' || c == 'U' || c == 'B') && pos_ + 1 < t_.size() &&
        (t_[pos_ + 1] == '\'' || t_[pos_ + 1] == '"')) {
      ++pos_;
      return parse_str();
    }
    if (c == '-' || c == '+' || (c >= '0' && c <= '9')) return parse_int();
    if (word("True")) return make_bool(true);
    if (word("False")) return make_bool(false);
    if (word("None")) return PyVal{};
    error("unexpected character '" + printable(std::string_view(&t_[pos_], 1)) + "'");
  }

  static PyVal make_bool(bool b) {
    PyVal v;
    v.kind = PyVal::Kind::boolean;
    v.b = b;
    return v;
  }

  bool word(std::string_view w) {
    if (t_.substr(pos_, w.size()) != w) return false;
    const size_t end = pos_ + w.size();
    if (end < t_.size()) {
      const char n = t_[end];
      if ((n >= 'a' && n <= 'z') || (n >= 'A' && n <= 'Z') || (n >= '0' && n <= '9') || n == '_') return false;
    }
    pos_ = end;
    return true;
  }

  PyVal parse_str() {
    const char q = t_[pos_++];
    PyVal v;
    v.kind = PyVal::Kind::str;
    while (true) {
      if (at_end()) error("unterminated string");
      const char c = t_[pos_++];
      if (c == q) break;
      if (c == '\n') error("unterminated string");
      if (c == '\\') {
        if (at_end()) error("unterminated string");
        const char e = t_[pos_++];
        switch (e) {
          case '\\': v.s += '\\'; break;
          case '\'': v.s += '\''; break;
          case '"': v.s += '"'; break;
          case 'n': v.s += '\n'; break;
          case 't': v.s += '\t'; break;
          case 'r': v.s += '\r'; break;
          case '0': v.s += '\0'; break;
          case 'x': {
            if (pos_ + 2 > t_.size()) error("bad \\x escape");
            unsigned x = 0;
            for (int k = 0; k < 2; ++k) {
              const char h = t_[pos_++];
              x <<= 4;
              if (h >= '0' && h <= '9') x |= static_cast<unsigned>(h - '0');
              else if (h >= 'a' && h <= 'f') x |= static_cast<unsigned>(h - 'a' + 10);
              else if (h >= 'A' && h <= 'F') x |= static_cast<unsigned>(h - 'A' + 10);
              else error("bad \\x escape");
            }
            v.s += static_cast<char>(x);
            break;
          }
          default: v.s += '\\'; v.s += e; break;
        }
      } else {
        v.s += c;
      }
    }
    return v;
  }

  PyVal parse_int() {
    bool neg = false;
    if (peek() == '+' || peek() == '-') {
      neg = peek() == '-';
      ++pos_;
      skip_ws();
    }
    if (!(peek() >= '0' && peek() <= '9')) error("expected a digit");
    uint64_t mag = 0;
    while (peek() >= '0' && peek() <= '9') {
      const uint64_t d = static_cast<uint64_t>(peek() - '0');
      if (mag > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - d) / 10) error("integer too large");
      mag = mag * 10 + d;
      ++pos_;
    }
    if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2 long suffix
    if (peek() == '.' || peek() == 'e' || peek() == 'E') error("expected an integer");
    PyVal v;
    v.kind = PyVal::Kind::integer;
    v.i = neg ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
    return v;
  }

  PyVal parse_seq(int depth, char close, PyVal::Kind kind) {
    ++pos_;  // '(' or '['
    PyVal v;
    v.kind = kind;
    bool trailing_comma = false;
    while (true) {
      skip_ws();
      if (peek() == close) {
        ++pos_;
        break;
      }
      v.items.push_back(parse_value(depth + 1));
      skip_ws();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        trailing_comma = true;
      } else if (peek() != close) {
        error(std::string("expected ',' or '") + close + "'");
      }
    }
    // "(3)" is the integer 3 in Python, not a tuple.
    if (kind == PyVal::Kind::tuple && v.items.size() == 1 && !trailing_comma) return std::move(v.items[0]);
    return v;
  }

  PyVal parse_dict(int depth) {
    ++pos_;  // '{'
    PyVal v;
    v.kind = PyVal::Kind::dict;
    while (true) {
      skip_ws();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      PyVal key = parse_value(depth + 1);
      if (key.kind != PyVal::Kind::str) error("dict keys must be strings");
      expect(':');
      PyVal val = parse_value(depth + 1);
      for (const auto& k : v.keys)
        if (k == key.s) error("duplicate key '" + printable(key.s) + "'");
      v.keys.push_back(std::move(key.s));
      v.items.push_back(std::move(val));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != '}') {
        error("expected ',' or '}'");
      }
    }
    return v;
  }
};

const PyVal* find_field(const PyVal& dict, std::string_view key) {
  for (size_t k = 0; k < dict.keys.size(); ++k)
    if (dict.keys[k] == key) return &dict.items[k];
  return nullptr;
}

int64_t checked_count(const std::vector<int64_t>& shape, std::string_view name) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) io_fail(name, "shape " + shape_str(shape) + " has a negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      io_fail(name, "shape " + shape_str(shape) + " is too large");
    n *= d;
  }
  return n;
}

void check_ndim(const std::vector<int64_t>& shape, std::string_view name) {
  if (shape.size() != 1 && shape.size() != 2)
    io_fail(name, "shape " + shape_str(shape) + " has " + std::to_string(shape.size()) +
                      " dimensions; spmma reads and writes 1-D or 2-D arrays only");
}

uint64_t load_le(const uint8_t* p, int size) {
  uint64_t v = 0;
  for (int k = 0; k < size; ++k) v |= static_cast<uint64_t>(p[k]) << (8 * k);
  return v;
}

void store_le(uint8_t* p, int size, uint64_t v) {
  for (int k = 0; k < size; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
}

std::string fmt_value(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string elem_where(const NpyArray& a, int64_t i) {
  if (a.shape.size() == 2 && a.shape[1] > 0)
    return "element (" + std::to_string(i / a.shape[1]) + ", " + std::to_string(i % a.shape[1]) + ")";
  return "element " + std::to_string(i);
}

}  // namespace

// ------------------------------------------------------------------ NpyArray

int64_t NpyArray::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}
int64_t NpyArray::rows() const { return shape.size() == 2 ? shape[0] : 1; }
int64_t NpyArray::cols() const { return shape.empty() ? 0 : shape.back(); }
size_t NpyArray::itemsize() const { return static_cast<size_t>(info_or_throw(dtype).size); }

std::string npy_normalize_dtype(std::string_view descr, std::string_view where) {
  std::string_view body = descr;
  char order = '=';
  if (!body.empty() && (body[0] == '<' || body[0] == '>' || body[0] == '|' || body[0] == '=')) {
    order = body[0];
    body.remove_prefix(1);
  }
  // V1..V8: raw bytes, what NumPy writes for ml_dtypes' bfloat16 ('<V2') and float8 ('|V1').
  static constexpr std::string_view kKnown[] = {"b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8",
                                                "u8", "f2", "f4", "f8", "V1", "V2", "V4", "V8"};
  bool known = false;
  for (auto k : kKnown) known = known || body == k;
  if (!known)
    io_fail(where, "unsupported dtype '" + printable(descr) + "' (spmma reads " + kSupported + ")");
  const bool one_byte = body[1] == '1';
  if (order == '>' && !one_byte)
    io_fail(where, "big-endian dtype '" + std::string(descr) +
                       "' is not supported; save a little-endian copy with "
                       "arr.astype(arr.dtype.newbyteorder('<'))");
  return std::string(one_byte ? "|" : "<") + std::string(body);
}

bool npy_dtype_is_integer(std::string_view dtype) {
  const auto k = info_or_throw(dtype).kind;
  return k == 'b' || k == 'i' || k == 'u';
}
bool npy_dtype_is_float(std::string_view dtype) { return info_or_throw(dtype).kind == 'f'; }
bool npy_dtype_is_void(std::string_view dtype) { return info_or_throw(dtype).kind == 'V'; }

NpyArray make_npy(std::string_view dtype, std::vector<int64_t> shape) {
  NpyArray a;
  a.dtype = npy_normalize_dtype(dtype);
  check_ndim(shape, {});
  const int64_t n = checked_count(shape, {});
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(n), a.itemsize(), &bytes))
    io_fail({}, "shape " + shape_str(shape) + " of " + a.dtype + " is too large");
  a.shape = std::move(shape);
  a.data.assign(bytes, 0);
  return a;
}

// ------------------------------------------------------------------ parse / serialize

NpyArray parse_npy(std::span<const uint8_t> bytes, std::string_view name) {
  if (bytes.empty()) io_fail(name, "not a .npy file (the file is empty)");
  if (bytes.size() < 6 || std::memcmp(bytes.data(), kMagic, 6) != 0) {
    std::string got;
    for (size_t k = 0; k < bytes.size() && k < 6; ++k) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%02x", bytes[k]);
      if (k) got += ' ';
      got += buf;
    }
    std::string msg = "not a .npy file (magic bytes are " + got + ", expected 93 4e 55 4d 50 59 = \\x93NUMPY)";
    if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] == 'K')
      msg += "; this looks like a zip (.npz) archive: extract one array and np.save it";
    io_fail(name, msg);
  }
  if (bytes.size() < 10) io_fail(name, "truncated .npy file (" + std::to_string(bytes.size()) + " bytes, no header)");
  const int major = bytes[6], minor = bytes[7];
  if (!((major == 1 || major == 2 || major == 3) && minor == 0))
    io_fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                      " (spmma reads 1.0, 2.0 and 3.0)");
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<size_t>(load_le(bytes.data() + 8, 2));
    header_start = 10;
  } else {
    if (bytes.size() < 12)
      io_fail(name, "truncated .npy file (" + std::to_string(bytes.size()) + " bytes, no header)");
    header_len = static_cast<size_t>(load_le(bytes.data() + 8, 4));
    header_start = 12;
  }
  if (header_len > bytes.size() - header_start)
    io_fail(name, "truncated .npy header: it declares " + std::to_string(header_len) + " bytes but the file has " +
                      std::to_string(bytes.size() - header_start) + " after the preamble");
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + header_start), header_len);
  // NumPy's header is latin1 (1.0 / 2.0) or utf8 (3.0); either way the keys and values we
  // accept are ASCII, so the bytes are parsed as they are.
  const PyVal dict = HeaderParser(header, name).parse_top();

  const PyVal* descr = find_field(dict, "descr");
  const PyVal* fortran = find_field(dict, "fortran_order");
  const PyVal* shape = find_field(dict, "shape");
  if (!descr || !fortran || !shape)
    io_fail(name, std::string("the .npy header lacks the key '") + (!descr ? "descr" : !fortran ? "fortran_order" : "shape") +
                      "': \"" + printable(header) + "\"");

  NpyArray a;
  if (descr->kind == PyVal::Kind::list)
    io_fail(name, "structured dtypes (record arrays) are not supported (spmma reads " + std::string(kSupported) + ")");
  if (descr->kind != PyVal::Kind::str) io_fail(name, "the header's 'descr' is not a string");
  a.dtype = npy_normalize_dtype(descr->s, name);

  if (shape->kind != PyVal::Kind::tuple && shape->kind != PyVal::Kind::list)
    io_fail(name, "the header's 'shape' is not a tuple");
  for (const PyVal& d : shape->items) {
    if (d.kind != PyVal::Kind::integer) io_fail(name, "the header's 'shape' holds a non-integer");
    a.shape.push_back(d.i);
  }
  check_ndim(a.shape, name);
  const int64_t count = checked_count(a.shape, name);

  if (fortran->kind != PyVal::Kind::boolean) io_fail(name, "the header's 'fortran_order' is not True or False");
  if (fortran->b && a.shape.size() == 2 && a.shape[0] > 1 && a.shape[1] > 1)
    io_fail(name, "the array is stored in Fortran order (fortran_order=True); spmma reads C order only: "
                  "save it with np.save(path, np.ascontiguousarray(arr))");

  const size_t item = a.itemsize();
  const size_t data_start = header_start + header_len;
  const size_t have = bytes.size() - data_start;
  // count * item cannot overflow silently: compare in the division domain first.
  if (static_cast<uint64_t>(count) > have / item + 1 || static_cast<size_t>(count) * item != have)
    io_fail(name, "header declares shape " + shape_str(a.shape) + " but the file holds " + std::to_string(have) +
                      " bytes of data, need " +
                      (static_cast<uint64_t>(count) > std::numeric_limits<size_t>::max() / item
                           ? std::string("more than fits in memory")
                           : std::to_string(static_cast<size_t>(count) * item)) +
                      " (" + std::to_string(count) + " elements of " + a.dtype + ")");
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_start), bytes.end());
  return a;
}

std::vector<uint8_t> serialize_npy(const NpyArray& a) {
  const std::string dtype = npy_normalize_dtype(a.dtype);
  check_ndim(a.shape, {});
  const int64_t count = checked_count(a.shape, {});
  const size_t item = static_cast<size_t>(dtype_info_of(dtype)->size);
  size_t need = 0;
  const bool too_large = __builtin_mul_overflow(static_cast<size_t>(count), item, &need);
  if (too_large || a.data.size() != need)
    fail(Status::invalid_argument, "write_npy: shape " + shape_str(a.shape) + " of " + dtype + " needs " +
                                       (too_large ? std::string("more than 2^64") : std::to_string(need)) +
                                       " bytes of data, the array holds " + std::to_string(a.data.size()));
  std::string header = "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': " + shape_str(a.shape) + ", }";
  // Version 1.0 when the padded header fits in 65535 bytes, else 2.0 (3.0 is only needed for
  // non-latin1 field names, which plain arrays do not have).
  int major = 1;
  size_t preamble = 10;
  size_t total = preamble + header.size() + 1;
  size_t padded = (total + kAlign - 1) / kAlign * kAlign;
  if (padded - preamble > 0xFFFF) {
    major = 2;
    preamble = 12;
    total = preamble + header.size() + 1;
    padded = (total + kAlign - 1) / kAlign * kAlign;
  }
  header.append(padded - total, ' ');
  header += '\n';

  std::vector<uint8_t> out(padded + a.data.size());
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  out[6] = static_cast<uint8_t>(major);
  out[7] = 0;
  store_le(out.data() + 8, static_cast<int>(preamble - 8), header.size());
  std::memcpy(out.data() + preamble, header.data(), header.size());
  if (!a.data.empty()) std::memcpy(out.data() + padded, a.data.data(), a.data.size());
  return out;
}

NpyArray read_npy(const std::string& path) { return parse_npy(io::read_file(path), path); }

void write_npy(const std::string& path, const NpyArray& a) {
  io::write_serialized(path, [&] { return serialize_npy(a); });
}

// ------------------------------------------------------------------ whole files (files.hpp)

namespace io {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Writes all of `bytes` to fd; false (errno set) on a failed or short write.
bool write_all(int fd, std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// Writes all of `bytes` to the open fd and closes it; io_error naming `shown` on any failure.
void write_and_close(int fd, std::span<const uint8_t> bytes, const std::string& shown) {
  if (!write_all(fd, bytes)) {
    const int e = errno;
    ::close(fd);
    io_fail(shown, "write failed: " + errno_text(e));
  }
  if (::close(fd) != 0) io_fail(shown, "write failed: " + errno_text(errno));
}

std::atomic<unsigned> temp_counter{0};

}  // namespace

std::vector<uint8_t> read_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) io_fail(path, std::string("cannot open for reading: ") + std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  while (true) {
    const size_t n = std::fread(buf, 1, sizeof buf, f.get());
    bytes.insert(bytes.end(), buf, buf + n);
    if (n < sizeof buf) break;
  }
  if (std::ferror(f.get())) io_fail(path, std::string("read failed: ") + std::strerror(errno));
  return bytes;
}

void write_file(const std::string& path, std::span<const uint8_t> bytes) {
  OutputFiles out;
  out.add(path, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  out.commit();
}

OutputFiles::~OutputFiles() {
  for (const Entry& e : entries_)
    if (!e.temp.empty()) ::unlink(e.temp.c_str());  // a committed temporary is gone already
}

void OutputFiles::add(const std::string& path, std::vector<uint8_t> bytes) {
  if (path.empty()) io_fail(path, "an output path is empty");
  for (const Entry& e : entries_)
    if (same_file(e.path, path)) io_fail(path, "is the same file as the output " + e.path);
  entries_.push_back({path, path, {}, std::move(bytes)});
}

void OutputFiles::commit() {
  namespace fs = std::filesystem;
  // 1. Where each goes: a device or pipe in place, everything else through a temporary.
  std::vector<bool> in_place(entries_.size(), false);
  std::vector<bool> existed(entries_.size(), false);
  std::vector<mode_t> modes(entries_.size(), 0);
  for (size_t k = 0; k < entries_.size(); ++k) {
    Entry& e = entries_[k];
    check_output_path(e.path);
    struct stat st{};
    if (::stat(e.path.c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode)) {
        in_place[k] = true;
        continue;
      }
      existed[k] = true;
      modes[k] = st.st_mode & 07777;
    }
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(e.path, ec))) {
      const fs::path t = fs::weakly_canonical(fs::absolute(e.path, ec), ec);
      if (!ec) e.target = t.string();
    }
  }
  // 2. The temporaries, beside their targets (so that rename stays on one file system).
  for (size_t k = 0; k < entries_.size(); ++k) {
    if (in_place[k]) continue;
    Entry& e = entries_[k];
    const fs::path target(e.target);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    int fd = -1;
    for (int attempt = 0; fd < 0; ++attempt) {
      const std::string temp = (dir / ("." + target.filename().string() + ".spmma-tmp-" + std::to_string(::getpid()) +
                                       "-" + std::to_string(temp_counter++)))
                                   .string();
      fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        e.temp = temp;  // from here on the destructor removes it unless it is renamed
      } else if (errno != EEXIST || attempt >= 100) {
        io_fail(e.path, "cannot open for writing: " + errno_text(errno));
      }
    }
    if (existed[k] && ::fchmod(fd, modes[k]) != 0) {  // the replacement keeps the old file's permissions
      const int err = errno;
      ::close(fd);
      io_fail(e.path, "cannot set permissions: " + errno_text(err));
    }
    write_and_close(fd, e.bytes, e.path);
  }
  // 3. Devices and pipes, in place.
  for (size_t k = 0; k < entries_.size(); ++k) {
    if (!in_place[k]) continue;
    const int fd = ::open(entries_[k].path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) io_fail(entries_[k].path, "cannot open for writing: " + errno_text(errno));
    write_and_close(fd, entries_[k].bytes, entries_[k].path);
  }
  // 4. The renames.
  for (size_t k = 0; k < entries_.size(); ++k) {
    Entry& e = entries_[k];
    if (in_place[k]) continue;
    if (::rename(e.temp.c_str(), e.target.c_str()) != 0) io_fail(e.path, "cannot replace the file: " + errno_text(errno));
    e.temp.clear();
  }
}

void check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) io_fail(path, "an output path is empty");
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) io_fail(path, "cannot write: it is a directory");
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) io_fail(path, "cannot write: the directory " + dir.string() + " does not exist");
  if (!fs::is_directory(st)) io_fail(path, "cannot write: " + dir.string() + " is not a directory");
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ea, eb;
  if (fs::exists(a, ea) && fs::exists(b, eb)) {
    std::error_code ec;
    const bool eq = fs::equivalent(a, b, ec);
    if (!ec) return eq;
  }
  std::error_code ec;
  fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  if (ec) ca = fs::absolute(a, ec).lexically_normal();
  fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  if (ec) cb = fs::absolute(b, ec).lexically_normal();
  return ca == cb;
}

}  // namespace io

// ------------------------------------------------------------------ element access

uint64_t npy_raw(const NpyArray& a, int64_t i) {
  const int size = static_cast<int>(a.itemsize());
  return load_le(a.data.data() + static_cast<size_t>(i) * static_cast<size_t>(size), size);
}

double npy_value(const NpyArray& a, int64_t i) {
  const DtypeInfo d = info_or_throw(a.dtype);
  if (d.kind == 'V')
    fail(Status::invalid_argument, "dtype '" + a.dtype + "' holds raw bit patterns, not numbers (" + elem_where(a, i) +
                                       "); read it with npy_raw or npy_bits_to_matrix");
  const uint64_t raw = npy_raw(a, i);
  switch (d.kind) {
    case 'b': return raw != 0 ? 1.0 : 0.0;
    case 'u': return static_cast<double>(raw);
    case 'i': {
      const int sh = 64 - 8 * d.size;
      return static_cast<double>(static_cast<int64_t>(raw << sh) >> sh);
    }
    default:
      if (d.size == 2) return decode(ElemType::f16, raw);
      if (d.size == 4) {
        float f;
        const auto u = static_cast<uint32_t>(raw);
        std::memcpy(&f, &u, 4);
        return f;
      }
      {
        double x;
        std::memcpy(&x, &raw, 8);
        return x;
      }
  }
}

void npy_set_raw(NpyArray& a, int64_t i, uint64_t raw) {
  const int size = static_cast<int>(a.itemsize());
  store_le(a.data.data() + static_cast<size_t>(i) * static_cast<size_t>(size), size, raw);
}

void npy_set_value(NpyArray& a, int64_t i, double v) {
  const DtypeInfo d = info_or_throw(a.dtype);
  auto cannot = [&] {
    fail(Status::invalid_value, "value " + fmt_value(v) + " cannot be stored exactly in dtype '" + a.dtype + "' (" +
                                    elem_where(a, i) + ")");
  };
  if (d.kind == 'V')
    fail(Status::invalid_argument, "dtype '" + a.dtype + "' holds raw bit patterns, not numbers (" + elem_where(a, i) +
                                       "); store them with npy_set_raw");
  uint64_t raw = 0;
  switch (d.kind) {
    case 'b':
      if (v != 0.0 && v != 1.0) cannot();
      raw = v == 1.0 ? 1 : 0;
      break;
    case 'u': {
      if (!(v >= 0) || v != std::floor(v)) cannot();
      const double lim = std::ldexp(1.0, 8 * d.size);  // exclusive
      if (!(v < lim)) cannot();
      raw = static_cast<uint64_t>(v);
      break;
    }
    case 'i': {
      if (std::isnan(v) || v != std::floor(v)) cannot();
      const double lim = std::ldexp(1.0, 8 * d.size - 1);
      if (!(v >= -lim && v < lim)) cannot();
      raw = static_cast<uint64_t>(static_cast<int64_t>(v));
      break;
    }
    default:
      if (d.size == 2) {
        raw = encode(ElemType::f16, v, Overflow::to_inf_or_nan);
        if (!std::isnan(v) && decode(ElemType::f16, raw) != v) cannot();
      } else if (d.size == 4) {
        const auto f = static_cast<float>(v);
        if (!std::isnan(v) && static_cast<double>(f) != v) cannot();
        uint32_t u;
        std::memcpy(&u, &f, 4);
        raw = u;
      } else {
        std::memcpy(&raw, &v, 8);
      }
  }
  npy_set_raw(a, i, raw);
}

// ------------------------------------------------------------------ Matrix conversions

std::string_view npy_value_dtype(ElemType t) {
  switch (t) {
    case ElemType::f64: return "<f8";
    case ElemType::s8:
    case ElemType::s4: return "|i1";
    case ElemType::u8:
    case ElemType::u4:
    case ElemType::b1: return "|u1";
    case ElemType::s32: return "<i4";
    default: return "<f4";  // every other float type is exact in float32 (tf32, f16, bf16, fp8/6/4, ue8m0)
  }
}

std::string_view npy_bits_dtype(ElemType t) {
  const int bits = type_info(t).bits;
  if (bits <= 8) return "|u1";
  if (bits <= 16) return "<u2";
  if (bits <= 32) return "<u4";
  return "<u8";
}

Matrix npy_to_matrix(const NpyArray& a, ElemType t, std::string_view name) {
  Matrix m(t, a.rows(), a.cols());
  const int64_t n = a.size();
  for (int64_t i = 0; i < n; ++i) {
    const double v = npy_value(a, i);
    try {
      m.bits[static_cast<size_t>(i)] = encode(t, v);
    } catch (const Error& e) {
      fail(e.code(), name_prefix(name) + elem_where(a, i) + " = " + fmt_value(v) + " cannot be encoded as " +
                         std::string(type_name(t)) + ": " + e.what());
    }
  }
  return m;
}

Matrix npy_bits_to_matrix(const NpyArray& a, ElemType t, std::string_view name) {
  if (!(npy_dtype_is_integer(a.dtype) || npy_dtype_is_void(a.dtype)) || a.dtype == "|b1")
    fail(Status::io_error, name_prefix(name) + "bit patterns of " + std::string(type_name(t)) +
                               " need an integer or raw-bytes array (" + std::string(npy_bits_dtype(t)) + "), got dtype '" +
                               a.dtype + "'");
  const int bits = type_info(t).bits;
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : ((uint64_t{1} << bits) - 1);
  Matrix m(t, a.rows(), a.cols());
  const int64_t n = a.size();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t raw = npy_raw(a, i);  // signed dtypes: the two's complement bytes, e.g. int16 -1 = 0xFFFF
    if ((raw & ~mask) != 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(raw));
      fail(Status::invalid_value, name_prefix(name) + elem_where(a, i) + " = " + buf + " does not fit in the " +
                                      std::to_string(bits) + "-bit pattern of " + std::string(type_name(t)));
    }
    m.bits[static_cast<size_t>(i)] = raw;
  }
  return m;
}

NpyArray matrix_to_npy(const Matrix& m, std::string_view dtype) {
  NpyArray a = make_npy(dtype.empty() ? npy_value_dtype(m.type) : dtype, {m.rows, m.cols});
  const int64_t n = m.rows * m.cols;
  for (int64_t i = 0; i < n; ++i) npy_set_value(a, i, decode(m.type, m.bits[static_cast<size_t>(i)]));
  return a;
}

NpyArray matrix_bits_to_npy(const Matrix& m, std::string_view dtype) {
  NpyArray a = make_npy(dtype.empty() ? npy_bits_dtype(m.type) : dtype, {m.rows, m.cols});
  const int bits = type_info(m.type).bits;
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : ((uint64_t{1} << bits) - 1);
  const uint64_t cap = a.itemsize() >= 8 ? ~uint64_t{0} : ((uint64_t{1} << (8 * a.itemsize())) - 1);
  const int64_t n = m.rows * m.cols;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t raw = m.bits[static_cast<size_t>(i)] & mask;
    if (raw > cap)
      fail(Status::invalid_argument, "bit patterns of " + std::string(type_name(m.type)) + " do not fit in dtype '" +
                                         a.dtype + "'");
    npy_set_raw(a, i, raw);
  }
  return a;
}

Matrix read_npy_values(const std::string& path, ElemType t) { return npy_to_matrix(read_npy(path), t, path); }
Matrix read_npy_bits(const std::string& path, ElemType t) { return npy_bits_to_matrix(read_npy(path), t, path); }
void write_npy_values(const std::string& path, const Matrix& m, std::string_view dtype) {
  write_npy(path, matrix_to_npy(m, dtype));
}
void write_npy_bits(const std::string& path, const Matrix& m, std::string_view dtype) {
  write_npy(path, matrix_bits_to_npy(m, dtype));
}

}  // namespace spmma
