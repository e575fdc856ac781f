// The GPU backend of the matmul API: storage of compressed A on the device, the plan (which
// kernel runs a description: the sm90 wgmma.sp kernel on Hopper where it covers the types, the
// sm80 mma.sp kernel otherwise) and the launch.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/backend.hpp"
#include "device_buffer.cuh"
#include "format/compress_gpu.cuh"
#include "sm80/spgemm_sm80.cuh"
#include "sm90/launch_sm90.hpp"
#include "spmma/error.hpp"
#include "spmma/fragment_layout.hpp"
#include "spmma/isa.hpp"

namespace spmma::detail {
namespace {

using cuda::check;
using DeviceBytes = cuda::DeviceBuffer<uint8_t>;

// ---------------------------------------------------------------- instruction per type pair

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

// One launcher per instruction.
using Launch = void (*)(const sm80::Params&, cudaStream_t);

template <class Traits, class T>
void launch_tile(const sm80::Params& p, cudaStream_t s) {
  static const bool ready = [] {
    check(cudaFuncSetAttribute(sm80::spgemm_kernel<Traits, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes),
          "cudaFuncSetAttribute");
    return true;
  }();
  (void)ready;
  const dim3 grid(static_cast<unsigned>((p.n + T::kBlockN - 1) / T::kBlockN), static_cast<unsigned>(p.m_pad / sm80::kBlockM),
                  static_cast<unsigned>(p.batch));
  sm80::spgemm_kernel<Traits, T><<<grid, sm80::kThreads, T::kSmemBytes, s>>>(p);
}

template <class Traits>
void launch(const sm80::Params& p, cudaStream_t s) {
  launch_tile<Traits, sm80::CtaTile>(p, s);
}

struct Instr {
  ElemType a, b;
  const char* variant;  // the registry id of the instruction
  Launch launch;
};

#define SPMMA_INSTR(A, B, TRAITS, ID) {ElemType::A, ElemType::B, ID, &launch<TRAITS>}
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

const Instr* find_instr(ElemType a, ElemType b) {
  for (const auto& i : kInstrs)
    if (i.a == a && i.b == b) return &i;
  return nullptr;
}


// Rows of A as stored on the device: padded to whole CTA tiles of every kernel (zero rows).
int64_t padded_rows(int64_t m) { return (m + gemm::kRowPad - 1) / gemm::kRowPad * gemm::kRowPad; }

int out_type(ElemType t) {
  switch (t) {
    case ElemType::f32: return gemm::kOutF32;
    case ElemType::bf16: return gemm::kOutBf16;
    case ElemType::f16: return gemm::kOutF16;
    case ElemType::s32: return gemm::kOutS32;
    case ElemType::s8: return gemm::kOutS8;
    default: return -1;
  }
}

// Packs raw bit patterns at the type's memory width (spmma::memory_bits).
void pack(const std::vector<uint64_t>& bits, int b, std::vector<uint8_t>& out) {
  const size_t start = out.size();
  out.resize(start + (bits.size() * static_cast<size_t>(b) + 7) / 8, 0);
  for (size_t i = 0; i < bits.size(); ++i) store_element(out.data() + start, static_cast<int64_t>(i), b, bits[i]);
}

std::vector<uint64_t> unpack(const uint8_t* p, size_t count, int b) {
  std::vector<uint64_t> bits(count);
  for (size_t i = 0; i < count; ++i) bits[i] = load_element(p, static_cast<int64_t>(i), b);
  return bits;
}

struct GpuStorage final : SparseStorage {
  ElemType type = ElemType::bf16;
  Pattern pattern = Pattern::p2_4;
  std::string variant;             // the instruction whose fragment-ready layout the metadata has
  int64_t m = 0, k = 0, entries = 1;
  DeviceBytes values;
  cuda::DeviceBuffer<uint32_t> meta;
  int64_t m_pad = 0, a_row_bytes = 0, batch_values = 0, batch_meta_words = 0;
  int meta_lanes = 0;
  int64_t meta_groups = 0;
  // The sm90 kernel's tensor maps of A, encoded at the first run (per batch layout) and kept:
  // a planned run then encodes only B's map, and only when B's pointer or layout changes.
  mutable std::mutex maps_mutex;
  mutable std::optional<sm90::AMaps> maps;
  mutable int64_t maps_batch_a_bytes = -1, maps_batch = -1;
  bool on_device() const override { return true; }
  sm90::AMaps a_maps(const gemm::Params& p) const {
    std::lock_guard<std::mutex> lock(maps_mutex);
    if (!maps || maps_batch_a_bytes != p.batch_a_bytes || maps_batch != p.batch) {
      maps = sm90::encode_a(p);
      maps_batch_a_bytes = p.batch_a_bytes, maps_batch = p.batch;
    }
    return *maps;
  }

  // Downloads batch entry b and turns it back into the host's whole-matrix form.
  Compressed to_host(int64_t b) const override {
    if (b < 0 || b >= entries) fail(Status::invalid_argument, "SparseMatrix::to_host: batch entry " + std::to_string(b) +
                                                                  " out of range (" + std::to_string(entries) + ")");
    std::vector<uint8_t> vals(static_cast<size_t>(batch_values));
    std::vector<uint32_t> words(static_cast<size_t>(batch_meta_words));
    check(cudaMemcpy(vals.data(), static_cast<const uint8_t*>(values.ptr) + b * batch_values, vals.size(),
                     cudaMemcpyDeviceToHost), "download A values");
    check(cudaMemcpy(words.data(), meta.ptr + b * batch_meta_words, words.size() * 4,
                     cudaMemcpyDeviceToHost), "download A metadata");
    const isa::Variant& v = isa::variant_or_throw(variant);
    Matrix vm(type, m_pad, k / 2);
    const int bits = memory_bits(type);
    for (int64_t r = 0; r < m_pad; ++r) {
      const auto row = unpack(vals.data() + r * a_row_bytes, static_cast<size_t>(k / 2), bits);
      std::copy(row.begin(), row.end(), vm.bits.begin() + r * (k / 2));
    }
    FragmentReadyMeta f;
    f.type = type, f.pattern = pattern, f.ordered = true, f.rows = m_pad, f.cols = k;
    f.group = gemm::kMetaGroup, f.k_step = v.k, f.block_rows = 16, f.lanes_per_group = v.meta->lanes_per_group;
    f.words = std::move(words);
    f.variant_id = v.id;
    const Compressed padded = from_fragment_ready(f, vm, v);
    Compressed c = padded;
    c.rows = m;
    c.values = Matrix(type, m, k / 2);
    std::copy(padded.values.bits.begin(), padded.values.bits.begin() + m * (k / 2), c.values.bits.begin());
    c.metadata.assign(padded.metadata.begin(), padded.metadata.begin() + m * padded.meta_words_per_row());
    return c;
  }
};

const Instr& instr_or_throw(const MatmulDesc& desc) {
  const Instr* in = find_instr(desc.a_type, desc.b_type);
  if (!in)
    fail(Status::not_supported, "GPU: no sparse kernel for A " + std::string(type_name(desc.a_type)) + " with B " +
                                    std::string(type_name(desc.b_type)));
  return *in;
}

std::unique_ptr<GpuStorage> empty_storage(const MatmulDesc& desc, int64_t entries) {
  const isa::Variant& v = isa::variant_or_throw(instr_or_throw(desc).variant);
  auto st = std::make_unique<GpuStorage>();
  st->type = desc.a_type;
  st->pattern = v.meta->pattern;
  st->variant = v.id;
  st->m = desc.m, st->k = desc.k, st->entries = entries;
  st->m_pad = padded_rows(desc.m);
  st->a_row_bytes = desc.k / 2 * memory_bits(desc.a_type) / 8;
  st->meta_lanes = 8 * v.meta->lanes_per_group;
  st->meta_groups = (desc.k / v.k + gemm::kMetaGroup - 1) / gemm::kMetaGroup;
  st->batch_values = st->m_pad * st->a_row_bytes;
  st->batch_meta_words = st->m_pad / 16 * st->meta_groups * st->meta_lanes * gemm::kMetaGroup;
  st->values = DeviceBytes(static_cast<size_t>(st->batch_values * entries));
  st->meta = cuda::DeviceBuffer<uint32_t>(static_cast<size_t>(st->batch_meta_words * entries));
  return st;
}

std::unique_ptr<SparseStorage> make_storage(const MatmulDesc& desc, const std::vector<Compressed>& per_batch) {
  auto st = empty_storage(desc, static_cast<int64_t>(per_batch.size()));
  const isa::Variant& v = isa::variant_or_throw(st->variant);
  const int b = memory_bits(desc.a_type);
  std::vector<uint8_t> vals;
  std::vector<uint32_t> words;
  for (const Compressed& c : per_batch) {
    if (c.rows != desc.m || c.cols != desc.k || c.type != desc.a_type || c.pattern != st->pattern)
      fail(Status::invalid_argument, "upload: a compressed A of " + std::to_string(c.rows) + " x " + std::to_string(c.cols) +
                                         " " + std::string(type_name(c.type)) + " does not match the description (" +
                                         std::to_string(desc.m) + " x " + std::to_string(desc.k) + " " +
                                         std::string(type_name(desc.a_type)) + ", " + pattern_info(st->pattern).name + ")");
    // Pad to whole 128-row blocks with zero rows (valid nibbles), so the kernel reads no row
    // outside the buffer; the padding lives on the device only and never reaches D.
    Matrix dense = decompress(c);
    Matrix padded(c.type, st->m_pad, c.cols);
    std::copy(dense.bits.begin(), dense.bits.end(), padded.bits.begin());
    const Compressed pc = compress(padded, c.pattern, true);
    const FragmentReadyMeta fr = to_fragment_ready(pc, v, gemm::kMetaGroup);
    pack(pc.values.bits, b, vals);
    words.insert(words.end(), fr.words.begin(), fr.words.end());
  }
  check(cudaMemcpy(st->values.ptr, vals.data(), vals.size(), cudaMemcpyHostToDevice), "upload A values");
  check(cudaMemcpy(st->meta.ptr, words.data(), words.size() * 4, cudaMemcpyHostToDevice), "upload A metadata");
  return st;
}

// B row-major (K x N) -> K-contiguous columns in the workspace, for 1-, 2- and 4-byte types.
template <class T>
__global__ void transpose_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t cols,
                                 int64_t ld_in, int64_t batch_in, int64_t batch_out) {
  __shared__ T tile[32][33];
  const int64_t bz = blockIdx.z;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * 32, c0 = static_cast<int64_t>(blockIdx.x) * 32;
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int64_t r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = in[bz * batch_in + r * ld_in + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int64_t c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[bz * batch_out + c * rows + r] = tile[threadIdx.x][i];
  }
}

// ---------------------------------------------------------------- the plan

struct GpuKernel final : Kernel {
  MatmulDesc desc;
  const Instr* instr = nullptr;          // the sm80 kernel: always there, the fallback
  const sm90::Kernel* wgmma = nullptr;   // the sm90 kernel, when the plan picked it
  int block_n = 0;                       // its CTA tile width
  int splits = 1, stages_per_split = 0;  // its split K (splits > 1: partial sums in the workspace)
  int group_m = 0;                       // its rasterization group (0: default; SPMMA_SM90_GROUP_M, experiments)
  std::string sm80_why;                  // why the plan did not pick the sm90 kernel (for describe)
  // B's tensor map of the last run, reused while B's pointer and layout stay the same.
  struct BMap {
    const void* b = nullptr;
    int64_t ldb_bytes = 0, batch_b_bytes = 0;
    CUtensorMap map{};
  };
  mutable std::mutex b_mutex;
  mutable std::optional<BMap> b_map;
  CUtensorMap b_map_for(const gemm::Params& p) const {
    std::lock_guard<std::mutex> lock(b_mutex);
    if (!b_map || b_map->b != p.b || b_map->ldb_bytes != p.ldb_bytes || b_map->batch_b_bytes != p.batch_b_bytes)
      b_map = BMap{p.b, p.ldb_bytes, p.batch_b_bytes, sm90::encode_b(p, block_n, b_bits)};
    return b_map->map;
  }
  bool transpose_b = false;
  int b_bits = 16;

  // Workspace: the transposed B (row-major B only), then split K's partial sums (256-aligned).
  size_t transposed_b_bytes() const {
    return transpose_b ? (static_cast<size_t>(desc.batch) * desc.k * desc.n * b_bits / 8 + 255) / 256 * 256 : 0;
  }
  size_t partial_bytes() const {
    return sm90::partial_bytes(splits, desc.batch, padded_rows(desc.m), desc.n);
  }
  size_t workspace_bytes() const override { return transposed_b_bytes() + partial_bytes(); }
  bool fast_fp8() const { return desc.fast_accumulation && wgmma && wgmma->launch_fast; }
  std::string describe() const override {
    const std::string b = transpose_b ? ", B transposed into the workspace" : "";
    if (wgmma)
      return std::string("sm90 wgmma.sp kernel: ") + sm90::variant_at(*wgmma, block_n) + ", " +
             sm90::describe_tile(block_n) + (splits > 1 ? ", split K in " + std::to_string(splits) : "") +
             (wgmma->launch_fast ? (fast_fp8() ? ", fp8 sums in the tensor cores (fast_accumulation)"
                                               : ", fp8 sums promoted to f32 every 2 instructions")
                                 : "") +
             b +
             " (the sm80 kernel runs a B that TMA cannot read)";
    return std::string("sm80 mma.sp kernel: ") + instr->variant + ", CTA tile " + std::to_string(sm80::kBlockM) + "x" +
           std::to_string(sm80::CtaTile::kBlockN) + ", " + std::to_string(sm80::kStages) + " stages, " +
           std::to_string(sm80::kStepsPerStage) + " instructions per stage" + b +
           (sm80_why.empty() ? "" : " (not the sm90 kernel: " + sm80_why + ")");
  }
  void run(const SparseMatrix& a, const void* b, const void* c, void* d, float alpha, float beta, const float* bias,
           void* workspace, void* stream) const override {
    const auto& st = dynamic_cast<const GpuStorage&>(*a.impl().storage);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const int eb = b_bits / 8;
    const int64_t ldb = desc.ldb ? desc.ldb : (desc.b_order == Order::row_major ? desc.n : desc.k);
    const int64_t stride_b = desc.stride_b ? desc.stride_b : desc.k * desc.n;
    const uint8_t* bcols = static_cast<const uint8_t*>(b);
    int64_t ldb_bytes = ldb * b_bits / 8, batch_b_bytes = stride_b * b_bits / 8;
    if (transpose_b) {
      if (!workspace) fail(Status::invalid_argument, "Plan::run: a row-major B needs a workspace of " +
                                                         std::to_string(workspace_bytes()) + " bytes");
      dim3 grid(static_cast<unsigned>((desc.n + 31) / 32), static_cast<unsigned>((desc.k + 31) / 32),
                static_cast<unsigned>(desc.batch));
      dim3 block(32, 8);
      const int64_t out_batch = desc.k * desc.n;
      if (eb == 1) transpose_kernel<uint8_t><<<grid, block, 0, s>>>(static_cast<const uint8_t*>(b), static_cast<uint8_t*>(workspace), desc.k, desc.n, ldb, stride_b, out_batch);
      if (eb == 2) transpose_kernel<uint16_t><<<grid, block, 0, s>>>(static_cast<const uint16_t*>(b), static_cast<uint16_t*>(workspace), desc.k, desc.n, ldb, stride_b, out_batch);
      if (eb == 4) transpose_kernel<uint32_t><<<grid, block, 0, s>>>(static_cast<const uint32_t*>(b), static_cast<uint32_t*>(workspace), desc.k, desc.n, ldb, stride_b, out_batch);
      check(cudaGetLastError(), "transpose of B");
      bcols = static_cast<const uint8_t*>(workspace);
      ldb_bytes = desc.k * eb;
      batch_b_bytes = out_batch * eb;
    }
    sm80::Params p{};
    p.a = static_cast<const uint8_t*>(st.values.ptr);
    p.meta = st.meta.ptr;
    p.b = bcols;
    p.c = c;
    p.d = d;
    p.bias = bias;
    p.m = static_cast<int>(desc.m), p.n = static_cast<int>(desc.n), p.k = static_cast<int>(desc.k);
    p.a_row_bytes = st.a_row_bytes;
    p.ldb_bytes = ldb_bytes;
    const bool col = desc.cd_order == Order::col_major;
    p.ldc = desc.ldc ? desc.ldc : (col ? desc.m : desc.n);
    p.ldd = desc.ldd ? desc.ldd : (col ? desc.m : desc.n);
    p.cd_col_major = col;
    p.alpha = alpha, p.beta = beta;
    p.activation = static_cast<int>(desc.activation);
    p.meta_lanes = st.meta_lanes;
    p.meta_groups = st.meta_groups;
    p.batch_a_bytes = desc.a_per_batch ? st.batch_values : 0;
    p.batch_meta_words = desc.a_per_batch ? st.batch_meta_words : 0;
    p.batch_b_bytes = batch_b_bytes;
    p.batch_c = desc.stride_c ? desc.stride_c : desc.m * desc.n;
    p.batch_d = desc.stride_d ? desc.stride_d : desc.m * desc.n;
    p.out_type = out_type(desc.d_type);
    p.m_pad = static_cast<int>(st.m_pad);
    p.batch = static_cast<int>(desc.batch);
    p.splits = splits, p.stages_per_split = splits > 1 ? stages_per_split : 1 << 30;
    p.group_m = group_m;
    p.partial = splits > 1 ? static_cast<uint8_t*>(workspace) + transposed_b_bytes() : nullptr;
    if (wgmma && sm90::tma_unsupported(p).empty())
      sm90::launch(*wgmma, fast_fp8(), block_n, st.a_maps(p), b_map_for(p), p, s);
    else
      instr->launch(p, s);
    check(cudaGetLastError(), "launch of the sparse GEMM kernel");
  }
};

struct GpuBackend final : Backend {
  cudaDeviceProp prop{};
  Device device() const override { return Device::gpu; }
  std::string name() const override {
    return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
  }
  int compute_capability() const override { return prop.major * 10 + prop.minor; }
  std::vector<TypeCombo> types() const override {
    std::vector<TypeCombo> t;
    for (const auto& i : kInstrs) {
      const bool integer = !type_info(i.a).is_float;
      if (!integer && (i.a == ElemType::e4m3 || i.a == ElemType::e5m2) && compute_capability() < 89) continue;
      for (ElemType cd : integer ? std::vector<ElemType>{ElemType::s32, ElemType::s8}
                                 : std::vector<ElemType>{ElemType::bf16, ElemType::f16, ElemType::f32})
        t.push_back({i.a, i.b, cd, integer ? ElemType::s32 : ElemType::f32});
    }
    return t;
  }
  // Split K where the tiles would leave most SMs idle (small N): up to one wave of CTAs, at least
  // 8 stages (of 2 K steps) per split, at most 16 splits. SPMMA_SM90_SPLITS overrides (experiments).
  void choose_splits(GpuKernel& k, int inst_k) const {
    const MatmulDesc& d = k.desc;
    const int64_t tiles = padded_rows(d.m) / gemm::kRowPad * ((d.n + k.block_n - 1) / k.block_n) * d.batch;
    const int64_t stages = (d.k / inst_k + 1) / 2;
    int64_t want = 1;
    if (tiles * 2 <= prop.multiProcessorCount) want = std::min<int64_t>({prop.multiProcessorCount / tiles, stages / 8, 16});
    if (const char* env = std::getenv("SPMMA_SM90_SPLITS")) want = std::max(1, std::atoi(env));
    if (want < 2 || stages < 2) return;
    const int64_t per = ((stages + want - 1) / want + 1) / 2 * 2;  // a multiple of 2 stages
    k.stages_per_split = static_cast<int>(per);
    k.splits = static_cast<int>((stages + per - 1) / per);
    if (k.splits < 2) k.splits = 1;
  }
  // Picks the sm90 wgmma.sp kernel where it can run: a Hopper GPU (sm_90), a type pair it covers
  // and a B whose leading dimension TMA can step (16-byte multiples; the transposed workspace
  // always is). SPMMA_KERNEL=sm80 keeps the sm80 kernel (for comparisons).
  void choose_sm90(GpuKernel& k) const {
    const char* env = std::getenv("SPMMA_KERNEL");
    const sm90::Kernel* w = sm90::find(k.desc.a_type, k.desc.b_type);
    const int64_t ldb = k.desc.ldb ? k.desc.ldb : k.desc.k;
    if (compute_capability() != 90) k.sm80_why = "not an sm_90 GPU";
    else if (!w) k.sm80_why = "no wgmma.sp form for these types";
    else if (env && std::string(env) == "sm80") k.sm80_why = "SPMMA_KERNEL=sm80";
    else if (!k.transpose_b && ldb * k.b_bits / 8 % 16) k.sm80_why = "B's leading dimension is not a multiple of 16 bytes";
    else {
      k.wgmma = w;
      k.block_n = sm90::choose_block_n(*w, k.desc.n, k.desc.fast_accumulation);
      choose_splits(k, isa::variant_or_throw(w->variant).k);
      if (const char* env = std::getenv("SPMMA_SM90_GROUP_M")) k.group_m = std::max(0, std::atoi(env));
    }
  }
  std::unique_ptr<Kernel> plan(const MatmulDesc& desc) override {
    const Instr* in = &instr_or_throw(desc);
    if (out_type(desc.d_type) < 0 || desc.c_type != desc.d_type)
      fail(Status::not_supported, "GPU: C/D type " + std::string(type_name(desc.c_type)) + "/" +
                                      std::string(type_name(desc.d_type)) + " is not supported (C and D share one of f32, bf16, f16, s32, s8)");
    const isa::Variant& v = isa::variant_or_throw(in->variant);
    if (!v.target.runs_on(compute_capability()))
      fail(Status::not_supported, "GPU: " + v.ptx + " needs " + v.target.name() + ", this GPU is sm_" +
                                      std::to_string(compute_capability()));
    if (desc.k % v.k != 0)
      fail(Status::invalid_argument, "MatmulDesc.k = " + std::to_string(desc.k) + " must be a multiple of " +
                                         std::to_string(v.k) + " for A " + std::string(type_name(desc.a_type)));
    auto k = std::make_unique<GpuKernel>();
    k->desc = desc;
    k->instr = in;
    k->b_bits = memory_bits(desc.b_type);
    k->transpose_b = desc.b_order == Order::row_major;
    if (k->transpose_b && k->b_bits == 4)
      fail(Status::not_supported, "GPU: a row-major 4-bit B is not supported; give B column-major (K contiguous)");
    choose_sm90(*k);
    return k;
  }
  std::unique_ptr<SparseStorage> compress(const MatmulDesc& desc, const void* a, int64_t lda, int64_t stride_a,
                                          PruneMode mode, void* stream) override {
    const int64_t entries = desc.a_per_batch ? desc.batch : 1;
    auto st = empty_storage(desc, entries);
    const isa::Variant& v = isa::variant_or_throw(st->variant);
    const PatternInfo& pi = pattern_info(st->pattern);
    const TypeInfo& ti = type_info(desc.a_type);
    const int bits = memory_bits(desc.a_type);
    cuda::DeviceBuffer<unsigned long long> violation(1);
    for (int64_t e = 0; e < entries; ++e) {
      gpu_format::CompressParams p;
      p.a = static_cast<const uint8_t*>(a) + e * stride_a * bits / 8;
      p.lda_bytes = lda * bits / 8;
      p.m = desc.m, p.k = desc.k, p.m_pad = st->m_pad;
      p.elem_bits = bits;
      p.float_sign_bit = ti.is_float ? bits - 1 : -1;
      p.is_signed = ti.is_signed;
      p.chunk = pi.chunk, p.kept = pi.kept, p.group = pi.group;
      p.nibble_half = v.meta->style == isa::MetaLayout::Style::nibble_half;
      p.lanes = v.meta->lanes_per_group;
      p.k_inst = v.k;
      p.meta_group = gemm::kMetaGroup;
      p.groups = st->meta_groups;
      p.prune = mode == PruneMode::magnitude;
      p.values = static_cast<uint8_t*>(st->values.ptr) + e * st->batch_values;
      p.value_row_bytes = st->a_row_bytes;
      p.meta = st->meta.ptr + e * st->batch_meta_words;
      p.violation = violation.ptr;
      check(cudaMemsetAsync(violation.ptr, 0xFF, sizeof(unsigned long long), static_cast<cudaStream_t>(stream)), "compress");
      gpu_format::launch_compress(p, stream);
      if (mode == PruneMode::check) {
        unsigned long long first = 0;
        check(cudaMemcpyAsync(&first, violation.ptr, sizeof first, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream)),
              "compress: read the check result");
        check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "compress");
        if (first != ~0ull) {
          const int64_t chunks = desc.k / pi.chunk, row = static_cast<int64_t>(first) / chunks, ch = static_cast<int64_t>(first) % chunks;
          fail(Status::pattern_violation,
               "compress (GPU" + std::string(entries > 1 ? ", batch entry " + std::to_string(e) : "") + "): row " +
                   std::to_string(row) + ", chunk " + std::to_string(ch) + " (cols " + std::to_string(ch * pi.chunk) + ".." +
                   std::to_string(ch * pi.chunk + pi.chunk - 1) + ") has more non-zeros than " + pi.name + " allows");
        }
      }
    }
    check(cudaGetLastError(), "GPU compress");
    return st;
  }
  std::unique_ptr<SparseStorage> upload(const MatmulDesc& desc, const std::vector<Compressed>& per_batch) override {
    return make_storage(desc, per_batch);
  }
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    return nullptr;
  }
  auto b = std::make_unique<GpuBackend>();
  check(cudaGetDeviceProperties(&b->prop, 0), "cudaGetDeviceProperties");
  if (b->prop.major < 8) {
    if (why) *why = std::string(b->prop.name) + " is older than sm_80";
    return nullptr;
  }
  return b;
}

}  // namespace spmma::detail
