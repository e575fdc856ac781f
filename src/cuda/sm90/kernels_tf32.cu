// sm90 sparse GEMM instantiations: tf32 A and B (1:2 sparse A), f32 accumulators.
#include "sm90/kernels.cuh"

namespace spmma::sm90 {
SPMMA_SM90_TRAITS(Tf32, float, x, 16, f32_tf32_tf32, false)
void launch_tf32(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<Tf32>(bn, m, p, s); }
}  // namespace spmma::sm90
