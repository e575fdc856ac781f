// SPDX-License-Identifier: BSD-3-Clause
// spmma::build_info(): the version, the commit and the CUDA side of the build.
#include <string>

#include "spmma/version.hpp"

#ifdef SPMMA_HAVE_CUDA
namespace spmma::detail {
std::string cuda_toolkit_version();  // src/cuda/api/device_check.cu
std::string cuda_architectures();
}  // namespace spmma::detail
#endif

namespace spmma {

BuildInfo build_info() {
  BuildInfo b;
  b.version = version();
  b.commit = commit();
#ifdef SPMMA_HAVE_CUDA
  b.cuda = true;
  b.cuda_version = detail::cuda_toolkit_version();
  b.architectures = detail::cuda_architectures();
#endif
  return b;
}

}  // namespace spmma
