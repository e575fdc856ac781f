// SPDX-License-Identifier: BSD-3-Clause
// spmma::version() and spmma::commit() (include/spmma/version.hpp, generated from version.hpp.in).
#include "spmma/version.hpp"

#include "spmma_commit.h"  // SPMMA_COMMIT, written at build time by cmake/commit.cmake

namespace spmma {

const char* version() { return SPMMA_VERSION_STRING; }
const char* commit() { return SPMMA_COMMIT; }

}  // namespace spmma
