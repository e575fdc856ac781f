// Host side of the sm80 sparse GEMM: the instruction per type pair and the launch.
#include "sm80/launch_sm80.hpp"

#include <algorithm>

#include "device_buffer.cuh"
#include "sm80/spgemm_sm80.cuh"

namespace spmma::sm80 {
namespace {

SPMMA_SM80_FLOAT_TRAITS(Bf16, 32, 16, mma_sp_ordered_metadata_m16n8k32_row_col_f32_bf16_bf16_f32)
SPMMA_SM80_FLOAT_TRAITS(F16, 32, 16, mma_sp_ordered_metadata_m16n8k32_row_col_f32_f16_f16_f32)
SPMMA_SM80_FLOAT_TRAITS(Tf32, 16, 32, mma_sp_ordered_metadata_m16n8k16_row_col_f32_tf32_tf32_f32)
SPMMA_SM80_FLOAT_TRAITS(E4m3E4m3, 64, 8, mma_sp_ordered_metadata_m16n8k64_row_col_f32_e4m3_e4m3_f32)
SPMMA_SM80_FLOAT_TRAITS(E4m3E5m2, 64, 8, mma_sp_ordered_metadata_m16n8k64_row_col_f32_e4m3_e5m2_f32)
SPMMA_SM80_FLOAT_TRAITS(E5m2E4m3, 64, 8, mma_sp_ordered_metadata_m16n8k64_row_col_f32_e5m2_e4m3_f32)
SPMMA_SM80_FLOAT_TRAITS(E5m2E5m2, 64, 8, mma_sp_ordered_metadata_m16n8k64_row_col_f32_e5m2_e5m2_f32)
SPMMA_SM80_INT_TRAITS(S8S8, 64, 8, mma_sp_ordered_metadata_m16n8k64_row_col_s32_s8_s8_s32)
SPMMA_SM80_INT_TRAITS(S8U8, 64, 8, mma_sp_ordered_metadata_m16n8k64_row_col_s32_s8_u8_s32)
SPMMA_SM80_INT_TRAITS(U8S8, 64, 8, mma_sp_ordered_metadata_m16n8k64_row_col_s32_u8_s8_s32)
SPMMA_SM80_INT_TRAITS(U8U8, 64, 8, mma_sp_ordered_metadata_m16n8k64_row_col_s32_u8_u8_s32)
SPMMA_SM80_INT_TRAITS(S4S4, 128, 4, mma_sp_ordered_metadata_m16n8k128_row_col_s32_s4_s4_s32)
SPMMA_SM80_INT_TRAITS(S4U4, 128, 4, mma_sp_ordered_metadata_m16n8k128_row_col_s32_s4_u4_s32)
SPMMA_SM80_INT_TRAITS(U4S4, 128, 4, mma_sp_ordered_metadata_m16n8k128_row_col_s32_u4_s4_s32)
SPMMA_SM80_INT_TRAITS(U4U4, 128, 4, mma_sp_ordered_metadata_m16n8k128_row_col_s32_u4_u4_s32)

template <class Traits>
void launch_traits(const gemm::Params& p, cudaStream_t s, int batch_count) {
  using T = CtaTile;
  cuda::set_smem_limit(reinterpret_cast<const void*>(&spgemm_kernel<Traits, T>), T::kSmemBytes, "sm80 kernel");
  const dim3 grid(static_cast<unsigned>(ctas(p.m_pad, p.n)), static_cast<unsigned>(batch_count));
  spgemm_kernel<Traits, T><<<grid, kThreads, T::kSmemBytes, s>>>(p);
}

#define SPMMA_INSTR(A, B, TRAITS, ID) {ElemType::A, ElemType::B, ID, &launch_traits<TRAITS>}
const Instr kInstrs[] = {
    SPMMA_INSTR(bf16, bf16, Bf16, "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32"),
    SPMMA_INSTR(f16, f16, F16, "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"),
    SPMMA_INSTR(tf32, tf32, Tf32, "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32"),
    SPMMA_INSTR(e4m3, e4m3, E4m3E4m3, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32"),
    SPMMA_INSTR(e4m3, e5m2, E4m3E5m2, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e4m3.e5m2.f32"),
    SPMMA_INSTR(e5m2, e4m3, E5m2E4m3, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e5m2.e4m3.f32"),
    SPMMA_INSTR(e5m2, e5m2, E5m2E5m2, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e5m2.e5m2.f32"),
    SPMMA_INSTR(s8, s8, S8S8, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32"),
    SPMMA_INSTR(s8, u8, S8U8, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.s32.s8.u8.s32"),
    SPMMA_INSTR(u8, s8, U8S8, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.s32.u8.s8.s32"),
    SPMMA_INSTR(u8, u8, U8U8, "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.s32.u8.u8.s32"),
    SPMMA_INSTR(s4, s4, S4S4, "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.s32.s4.s4.s32"),
    SPMMA_INSTR(s4, u4, S4U4, "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.s32.s4.u4.s32"),
    SPMMA_INSTR(u4, s4, U4S4, "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.s32.u4.s4.s32"),
    SPMMA_INSTR(u4, u4, U4U4, "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.s32.u4.u4.s32"),
};
#undef SPMMA_INSTR

}  // namespace

const int kTileM = kBlockM, kTileN = CtaTile::kBlockN, kPipelineStages = kStages;

const Instr* find(ElemType a, ElemType b) {
  for (const auto& i : kInstrs)
    if (i.a == a && i.b == b) return &i;
  return nullptr;
}

std::string describe_tile() {
  return "CTA tile " + std::to_string(kBlockM) + "x" + std::to_string(CtaTile::kBlockN) + ", " + std::to_string(kStages) +
         " stages, " + std::to_string(kStepsPerStage) + " instructions per stage";
}

int64_t ctas(int64_t m_pad, int64_t n) { return m_pad / kBlockM * ((n + CtaTile::kBlockN - 1) / CtaTile::kBlockN); }

void launch(const Instr& in, const gemm::Params& p, cudaStream_t s) {
  for (int b0 = 0; b0 < p.batch; b0 += gemm::kMaxGridBatch) {
    gemm::Params q = p;
    q.batch0 = b0;
    in.launch(q, s, std::min(gemm::kMaxGridBatch, p.batch - b0));
  }
}

}  // namespace spmma::sm80
