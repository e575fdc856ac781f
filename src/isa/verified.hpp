// SPDX-License-Identifier: BSD-3-Clause
// Which registry variants the conformance suite has confirmed on hardware.
#pragma once
#include <string_view>

namespace spmma::isa {
// True when `id` is listed in verified_ids.inc, the file `spmma conform --write-verified`
// generates from a run with zero mismatches (docs/conformance.md records that run).
bool verified_on_hardware(std::string_view id);
}  // namespace spmma::isa
