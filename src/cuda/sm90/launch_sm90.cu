// SPDX-License-Identifier: BSD-3-Clause
// Host side of the sm90 sparse GEMM: table lookups, TMA tensor maps and the launch.
#include "sm90/launch_sm90.hpp"

#include <cudaTypedefs.h>

#include <algorithm>

#include "device_buffer.cuh"
#include "spmma/error.hpp"

namespace spmma::sm90 {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const auto fn = cuda::driver_fn<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled", 12000);
  if (!fn) fail(Status::cuda_error, "the CUDA driver has no cuTensorMapEncodeTiled (needed by the sm90 kernel)");
  return fn;
}

// A 3-D byte tensor (row bytes x rows x batch) read in boxes of box_bytes x box_rows, with the
// 64- or 128-byte swizzle when box_bytes is 64 or 128 (none otherwise); reads past the row or
// the rows fill zeros.
CUtensorMap byte_map(const char* what, const void* base, int64_t row_bytes, int64_t rows, int64_t row_stride,
                     int64_t batches, int64_t batch_stride, Box box_, bool swizzle = true) {
  const int box_bytes = box_.bytes, box_rows = box_.rows;
  CUtensorMap map{};
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(row_bytes), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(batches)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(row_stride), static_cast<cuuint64_t>(batch_stride)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_bytes), static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<void*>(base), dims, strides, box,
                                    elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    swizzle ? (box_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B)
                                            : CU_TENSOR_MAP_SWIZZLE_NONE,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (cuda::sticky(r)) cuda::check(r, std::string("cuTensorMapEncodeTiled (") + what + ")");  // an earlier fault
  if (r != CUDA_SUCCESS)
    fail(Status::cuda_error, std::string("cuTensorMapEncodeTiled failed for ") + what + " (error " + std::to_string(r) +
                                 "): row bytes " + std::to_string(row_bytes) + ", rows " + std::to_string(rows) +
                                 ", row stride " + std::to_string(row_stride) + ", batches " + std::to_string(batches) +
                                 ", batch stride " + std::to_string(batch_stride));
  return map;
}

}  // namespace

bool covers(ElemType a, ElemType b) {
  for (const Entry& e : entries())
    if (e.a == a && e.b == b) return true;
  return false;
}

const Entry* find(ElemType a, ElemType b, int block_n, bool promoted) {
  for (const Entry& e : entries())
    if (e.a == a && e.b == b && e.block_n == block_n && e.promoted == promoted) return &e;
  return nullptr;
}

std::string describe_tile(int block_n, int cluster) {
  return "CTA tile " + std::to_string(kBlockM) + "x" + std::to_string(block_n) +
         (cluster > 1 ? " in clusters of " + std::to_string(cluster) + " along M sharing B by multicast" : "") + ", " +
         std::to_string(stages_for(block_n)) +
         " TMA stages, 1 producer + " + std::to_string(kConsumers) + " math warpgroups, " +
         std::to_string(kStepsPerStage) + " instructions per stage";
}

std::string b_in_place_unsupported(int64_t ldb_bytes, int64_t batch, int64_t batch_b_bytes, int b_alignment) {
  constexpr int64_t kMaxStride = int64_t{1} << 40;  // cuTensorMapEncodeTiled: strides below 2^40 bytes
  if (b_alignment < 16) return "MatmulDesc.b_alignment = " + std::to_string(b_alignment) + " is below 16 bytes";
  if (ldb_bytes % 16)
    return "B's leading dimension (" + std::to_string(ldb_bytes) + " bytes) is not a multiple of 16 bytes";
  if (batch > 1 && batch_b_bytes % 16)
    return "B's batch stride (" + std::to_string(batch_b_bytes) + " bytes) is not a multiple of 16 bytes";
  if (ldb_bytes >= kMaxStride || (batch > 1 && batch_b_bytes >= kMaxStride))
    return "a stride of B is 2^40 bytes or more (the copy engine's limit)";
  return {};
}

AMaps encode_a(const gemm::Params& p, Box a_box) {
  AMaps maps;
  const int64_t a_entries = p.batch_a_bytes ? p.batch : 1;
  maps.a = byte_map("A", p.a, p.a_row_bytes, p.m_pad, p.a_row_bytes, a_entries,
                    p.batch_a_bytes ? p.batch_a_bytes : p.m_pad * p.a_row_bytes, a_box);
  // Metadata: one row per 16-row block (its groups back to back), one box = one group of the
  // CTA's blocks.
  const Box meta = box_meta(p.meta_lanes, a_box.rows);
  const int64_t meta_row = p.meta_groups * meta.bytes;
  maps.meta = byte_map("A's metadata", p.meta, meta_row, p.m_pad / 16, meta_row, a_entries,
                       p.batch_meta_words ? p.batch_meta_words * 4 : p.m_pad / 16 * meta_row, meta, false);
  return maps;
}

BMaps encode_b(const gemm::Params& p, int block_n, int b_bits) {
  const int64_t k_bytes = static_cast<int64_t>(p.k) * b_bits / 8;
  const int64_t b_batch_stride = p.batch > 1 ? p.batch_b_bytes : (p.n * p.ldb_bytes + 15) / 16 * 16;
  // In a cluster, each CTA loads its share of the tile's columns (mainloop.cuh, produce).
  const auto map = [&](int rows) {
    return byte_map("B", p.b, k_bytes, p.n, p.ldb_bytes, p.batch, b_batch_stride, box_b(rows));
  };
  const int first = b_box_rows(block_n, p.cluster_m, p.n);
  const int last = b_box_rows(block_n, p.cluster_m, p.n, b_last_tile(block_n, p.n));
  BMaps m;
  m.b = map(first);
  m.tail = last == first ? m.b : map(last);
  return m;
}

std::vector<cuda::Launch> prepare(const Entry& e, const gemm::Params& p) {
  return cuda::grids(p, gemm::kMaxGridBatch, e.prepare);
}

void launch(std::span<const cuda::Launch> grids, const AMaps& a, const BMaps& b, const gemm::Params& p,
            cudaStream_t s, const char* what) {
  const Maps maps{a.a, b.b, b.tail, a.meta};
  gemm::Params q = p;
  void* args[] = {const_cast<CUtensorMap*>(&maps.a), const_cast<CUtensorMap*>(&maps.b),
                  const_cast<CUtensorMap*>(&maps.b_tail), const_cast<CUtensorMap*>(&maps.meta), &q};
  for (const cuda::Launch& g : grids) {
    q.batch0 = g.batch0;
    cuda::enqueue(g, args, s, what);
  }
}

}  // namespace spmma::sm90
