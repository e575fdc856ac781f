// SPDX-License-Identifier: BSD-3-Clause
// spmma — one error type for the whole library: a code and a message that names
// the offending value and where it was found.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace spmma {

enum class Status {
  ok = 0,
  invalid_argument,   // a bad parameter: shape, leading dimension, name, selector
  invalid_value,      // a bad element or metadata value (NaN into a type without NaN, forbidden nibble)
  not_supported,      // a valid request this build or target cannot do
  pattern_violation,  // a matrix that breaks the sparsity pattern its type needs
  io_error,           // a file that cannot be read, written or parsed
  cuda_error,         // a CUDA runtime or driver failure
  internal,           // a broken invariant: a bug in spmma
};

std::string_view status_name(Status s);

class Error : public std::runtime_error {
 public:
  Error(Status code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Status code() const noexcept { return code_; }

 private:
  Status code_;
};

[[noreturn]] inline void fail(Status code, const std::string& message) { throw Error(code, message); }

}  // namespace spmma
