// SPDX-License-Identifier: BSD-3-Clause
#include "spmma/error.hpp"

namespace spmma {

std::string_view status_name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::invalid_argument: return "invalid_argument";
    case Status::invalid_value: return "invalid_value";
    case Status::not_supported: return "not_supported";
    case Status::pattern_violation: return "pattern_violation";
    case Status::io_error: return "io_error";
    case Status::cuda_error: return "cuda_error";
    case Status::internal: return "internal";
  }
  return "unknown";
}

}  // namespace spmma
