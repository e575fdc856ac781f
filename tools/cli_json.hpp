// SPDX-License-Identifier: BSD-3-Clause
// JSON views of spmma objects shared by the CLI commands.
#pragma once
#include <nlohmann/json.hpp>

#include "spmma/isa.hpp"
#include "spmma/matrix.hpp"

namespace spmma::cli {

// A registry row: id, ptx, target, verified, shape, types, registers, layouts.
nlohmann::json variant_json(const isa::Variant& v);
// Decoded values as nested lists (rows); non-finite values as the strings "inf", "-inf", "nan".
nlohmann::json values_json(const Matrix& m);
// Raw bit patterns as nested lists of unsigned integers.
nlohmann::json bits_json(const Matrix& m);

}  // namespace spmma::cli
