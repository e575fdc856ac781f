// SPDX-License-Identifier: BSD-3-Clause
// spmma — whole-file reading and writing that never reports a failed write as success.
//
// Writing: the bytes go to a temporary file beside the target (".<name>.spmma-tmp-<pid>-<n>"),
// which is closed (every error checked) and then renamed over the target, so that a failure
// leaves the old file (or no file) and never a partial one. A target that exists and is not a
// regular file (/dev/stdout, /dev/full, a pipe) is written in place, every write checked. A
// symbolic link is followed (its target is replaced, not the link). OutputFiles does the same
// for several files that belong together (compress's values and metadata): all temporaries are
// written first, then the in-place targets, then all renames; a failure before the renames
// leaves none of the files behind.
//
// Defined in src/io/npy.cpp, so that the .npy reader (write_npy) compiles and links alone.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmma/error.hpp"

namespace spmma::io {

// "<name>: ", or nothing for an empty name: how the file readers' messages name their input.
inline std::string name_prefix(std::string_view name) { return name.empty() ? std::string() : std::string(name) + ": "; }

// io_error "<name>: <what>" (the readers' one way to refuse an input).
[[noreturn]] inline void io_fail(std::string_view name, const std::string& what) {
  fail(Status::io_error, name_prefix(name) + what);
}

// Untrusted text (a header, a key, a dtype) rendered for an error message: printable ASCII as
// is, a newline as \n, other bytes as \xNN, at most `max` characters then "...".
inline std::string printable(std::string_view s, size_t max = 120) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

// The whole file; io_error "<path>: cannot open for reading: <reason>" and the like.
std::vector<uint8_t> read_file(const std::string& path);

// io_error naming the path when a write, flush or close fails (ENOSPC, EIO, a missing
// directory); the target is then unchanged.
void write_file(const std::string& path, std::span<const uint8_t> bytes);

// write_file(path, serialize()), where an Error from serialize() (a value the format cannot
// hold) becomes io_error "<path>: cannot write: ...".
template <class Serialize>
void write_serialized(const std::string& path, Serialize&& serialize) {
  std::vector<uint8_t> bytes;
  try {
    bytes = serialize();
  } catch (const Error& e) {
    io_fail(path, std::string("cannot write: ") + e.what());
  }
  write_file(path, bytes);
}

class OutputFiles {
 public:
  OutputFiles() = default;
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;
  ~OutputFiles();  // removes the temporaries of a commit that failed

  void add(const std::string& path, std::vector<uint8_t> bytes);
  void commit();  // io_error naming the file at fault

 private:
  struct Entry {
    std::string path;    // as the user gave it (named in messages)
    std::string target;  // path with a final symbolic link resolved
    std::string temp;    // empty: written in place
    std::vector<uint8_t> bytes;
  };
  std::vector<Entry> entries_;
};

// Fails early, before any work, with io_error naming the path when it cannot be an output: its
// directory does not exist (or is not a directory), or the path names a directory.
void check_output_path(const std::string& path);

// Whether two paths name the same file: std::filesystem::equivalent when both exist (hard and
// symbolic links included), else their weakly_canonical absolute forms compared.
bool same_file(const std::string& a, const std::string& b);

}  // namespace spmma::io
