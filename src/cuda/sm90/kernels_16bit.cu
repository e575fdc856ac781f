// sm90 sparse GEMM instantiations: bf16 and f16 A/B, f32 accumulators.
#include "sm90/kernels.cuh"

namespace spmma::sm90 {
SPMMA_SM90_TRAITS(Bf16, float, x, 32, f32_bf16_bf16, false)
SPMMA_SM90_TRAITS(F16, float, x, 32, f32_f16_f16, false)
void launch_bf16(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<Bf16>(bn, m, p, s); }
void launch_f16(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<F16>(bn, m, p, s); }
}  // namespace spmma::sm90
