// sm90 sparse GEMM instantiations: s8/u8 A and B in every pairing, s32 accumulators (wrapping,
// as mma.sp without .satfinite).
#include "sm90/kernels.cuh"

namespace spmma::sm90 {
SPMMA_SM90_TRAITS(S8S8, uint32_t, static_cast<int32_t>(x), 64, s32_s8_s8, false)
SPMMA_SM90_TRAITS(S8U8, uint32_t, static_cast<int32_t>(x), 64, s32_s8_u8, false)
SPMMA_SM90_TRAITS(U8S8, uint32_t, static_cast<int32_t>(x), 64, s32_u8_s8, false)
SPMMA_SM90_TRAITS(U8U8, uint32_t, static_cast<int32_t>(x), 64, s32_u8_u8, false)
void launch_s8_s8(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<S8S8>(bn, m, p, s); }
void launch_s8_u8(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<S8U8>(bn, m, p, s); }
void launch_u8_s8(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<U8S8>(bn, m, p, s); }
void launch_u8_u8(int bn, const Maps& m, const gemm::Params& p, cudaStream_t s) { launch_traits<U8U8>(bn, m, p, s); }
}  // namespace spmma::sm90
