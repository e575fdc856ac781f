// SPDX-License-Identifier: BSD-3-Clause
#include "verified.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace spmma::isa {
namespace {
// Generated: one string literal per line. Empty until a conformance run confirms variants.
constexpr std::string_view kVerified[] = {
    "",  // (sentinel, never an id)
#include "verified_ids.inc"
};
}  // namespace

bool verified_on_hardware(std::string_view id) {
  if (id.empty()) return false;
  return std::find(std::begin(kVerified), std::end(kVerified), id) != std::end(kVerified);
}
}  // namespace spmma::isa
