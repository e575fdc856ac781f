// sm90 sparse GEMM instantiations: e4m3/e5m2 A and B in every pairing, f32 accumulators.
#include "sm90/kernels.cuh"

namespace spmma::sm90 {
SPMMA_SM90_TRAITS(E4m3E4m3, float, x, 64, f32_e4m3_e4m3, true)
SPMMA_SM90_TRAITS(E4m3E5m2, float, x, 64, f32_e4m3_e5m2, true)
SPMMA_SM90_TRAITS(E5m2E4m3, float, x, 64, f32_e5m2_e4m3, true)
SPMMA_SM90_TRAITS(E5m2E5m2, float, x, 64, f32_e5m2_e5m2, true)
// MatmulDesc::fast_accumulation: the tensor cores' own accumulator over the whole K.
SPMMA_SM90_TRAITS(E4m3E4m3Fast, float, x, 64, f32_e4m3_e4m3, false)
SPMMA_SM90_TRAITS(E4m3E5m2Fast, float, x, 64, f32_e4m3_e5m2, false)
SPMMA_SM90_TRAITS(E5m2E4m3Fast, float, x, 64, f32_e5m2_e4m3, false)
SPMMA_SM90_TRAITS(E5m2E5m2Fast, float, x, 64, f32_e5m2_e5m2, false)
void launch_e4m3_e4m3(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<E4m3E4m3>(bn, m, p, s); }
void launch_e4m3_e5m2(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<E4m3E5m2>(bn, m, p, s); }
void launch_e5m2_e4m3(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<E5m2E4m3>(bn, m, p, s); }
void launch_e5m2_e5m2(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<E5m2E5m2>(bn, m, p, s); }

void launch_e4m3_e4m3_fast(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<E4m3E4m3Fast>(bn, m, p, s); }
void launch_e4m3_e5m2_fast(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<E4m3E5m2Fast>(bn, m, p, s); }
void launch_e5m2_e4m3_fast(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<E5m2E4m3Fast>(bn, m, p, s); }
void launch_e5m2_e5m2_fast(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<E5m2E5m2Fast>(bn, m, p, s); }
}  // namespace spmma::sm90
