// SPDX-License-Identifier: BSD-3-Clause
// spmma fuzz targets — a failed invariant prints what broke and aborts (libFuzzer then saves
// the input as crash-<sha1> and the run fails).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "spmma/error.hpp"

namespace spmma::fuzz {

[[noreturn]] inline void check_failed(const char* file, int line, const char* cond, const std::string& what) {
  std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n  %s\n", file, line, cond, what.c_str());
  std::fflush(stderr);
  std::abort();
}

// An spmma::Error where none may be thrown is a finding too: report it with its message.
[[noreturn]] inline void unexpected_error(const char* file, int line, const char* what_call, const Error& e) {
  check_failed(file, line, what_call,
               std::string("threw Error(") + std::string(status_name(e.code())) + "): " + e.what());
}

}  // namespace spmma::fuzz

#define FUZZ_CHECK(cond, what)                                                       \
  do {                                                                               \
    if (!(cond)) ::spmma::fuzz::check_failed(__FILE__, __LINE__, #cond, (what));     \
  } while (0)

// Evaluates `expr`, which must not throw spmma::Error (other exceptions escape to libFuzzer,
// which reports them as a crash as well).
#define FUZZ_NO_ERROR(expr)                                                          \
  [&]() -> auto {                                                                  \
    try {                                                                            \
      return (expr);                                                                 \
    } catch (const ::spmma::Error& fuzz_e_) {                                        \
      ::spmma::fuzz::unexpected_error(__FILE__, __LINE__, #expr, fuzz_e_);           \
    }                                                                                \
  }()
