// SPDX-License-Identifier: BSD-3-Clause
// The GPU backend of the matmul API: one CUDA device, what it runs (from the kernel image its
// driver loads), the plan (which kernel, tiles, how B is read: decided once) and the run (checks,
// B's repack when the plan needs it, one kernel launch per 65535 batch entries).
#include <cuda_runtime.h>
#include <nvtx3/nvtx3.hpp>

#include <algorithm>
#include <climits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/backend.hpp"
#include "api/device_check.cuh"
#include "api/device_storage.cuh"
#include "api/repack_b.cuh"
#include "device_buffer.cuh"
#include "format/compress_gpu.cuh"
#include "sm80/launch_sm80.hpp"
#include "sm90/decode_launch.hpp"
#include "sm90/heuristics.hpp"
#include "sm90/launch_sm90.hpp"
#include "spmma/detail/gemm_pairs.hpp"
#include "spmma/error.hpp"
#include "spmma/isa.hpp"
#include "spmma/log.hpp"

namespace spmma::detail {
namespace {

using cuda::check;
using gpu_api::GpuStorage;
using gpu_api::padded_rows;

std::string str(ElemType t) { return std::string(type_name(t)); }

bool is_fp8(ElemType t) { return t == ElemType::e4m3 || t == ElemType::e5m2; }

// NVTX ranges ("spmma compress", "spmma Plan::run") in the domain "spmma", so that Nsight Systems
// shows where spmma's host work and launches sit on a timeline; without a profiler attached an
// NVTX call is a check of one pointer.
struct NvtxDomain {
  static constexpr const char* name{"spmma"};
};

// How a plan reads B: in place (column-major, every column 16-byte aligned), or repacked into
// the workspace on each run (transposed when row-major; copied when the copies cannot take it).
enum class BRead { in_place, transpose, copy };

// Throws, without launching anything, when an earlier asynchronous fault killed the context;
// clears an earlier non-sticky error of this thread, so that the launch check after a runtime
// launch of ours (B's repack) reports ours. The kernels' own launches go through the driver,
// whose answer is the launch's alone (launch.hpp).
void clear_stale_error() {
  const cudaError_t e = cudaPeekAtLastError();
  if (e == cudaSuccess) return;
  if (cuda::sticky(e)) check(e, "Plan::run");
  (void)cudaGetLastError();
}

// ---------------------------------------------------------------- the plan

struct GpuKernel final : Kernel {
  MatmulDesc desc;
  OperandLayout layout;
  int ordinal = 0;
  const sm80::Entry* instr = nullptr;  // the sm80 kernel: every type pair
  const sm90::Entry* wgmma = nullptr;  // the sm90 kernel's instantiation, when the plan picked it
  const sm90::decode::Entry* dec = nullptr;  // the decode kernel's, when the plan picked it
  sm90::Config cfg;                    // its tile, stages, split K, rasterization (heuristics.cu)
  std::string sm80_why;                 // why the plan did not pick the sm90 kernel
  BRead b_read = BRead::in_place;
  std::string b_why;                     // why B is repacked
  int b_bits = 16;

  // B's tensor maps of the last run, reused while B's pointer stays the same.
  mutable std::mutex b_mutex;
  mutable std::optional<std::pair<const void*, sm90::BMaps>> b_map;
  sm90::BMaps b_map_for(const gemm::Params& p) const {
    std::lock_guard<std::mutex> lock(b_mutex);
    if (!b_map || b_map->first != p.b) b_map.emplace(p.b, sm90::encode_b(p, cfg.block_n, b_bits));
    return b_map->second;
  }

  // Workspace: the repacked B (split K needs none: its parts add up in the cluster's shared memory).
  size_t workspace_bytes() const override {
    if (b_read == BRead::in_place) return 0;
    return gpu_api::repacked_b_bytes(desc.batch, desc.k, desc.n, b_bits);
  }

  std::string describe_b() const {
    switch (b_read) {
      case BRead::transpose: return ", B transposed into the workspace on each run (" + b_why + ")";
      case BRead::copy: return ", B copied into the workspace on each run (" + b_why + ")";
      default: return ", B read in place";
    }
  }
  std::string describe() const override {
    if (dec)
      return std::string("sm90 decode kernel: ") + dec->instruction + ", " +
             sm90::decode::describe_tile(cfg.block_n, cfg.stages, cfg.splits, cfg.issuers, dec->math) +
             (cfg.dependent_launch ? ", programmatic dependent launch" : "") +
             (!gemm_promotes(desc.a_type) ? ""
              : dec->math == sm90::decode::Math::warpgroup
                  ? " (fast_accumulation changes nothing here)"
                  : ", each fp8 instruction as two f16 m16n8k32 ones on operands converted in registers, f32 sums "
                    "(sm_90 has no fp8 mma.sp; fast_accumulation changes nothing here)") +
             describe_b();
    if (wgmma)
      return std::string("sm90 wgmma.sp kernel: ") + wgmma->instruction + ", " + sm90::describe_tile(cfg.block_n, cfg.cluster_m) +
             (cfg.persistent ? ", a persistent grid" : ", one CTA per tile") +
             (cfg.splits > 1 ? ", split K in " + std::to_string(cfg.splits) + " inside each cluster" : "") +
             (cfg.dependent_launch ? ", programmatic dependent launch" : "") +
             (gemm_promotes(desc.a_type) ? (wgmma->promoted ? ", fp8 sums promoted to f32 every " +
                                                                  std::to_string(promotion_k() / instr->inst_k) +
                                                                  " instructions (K = " + std::to_string(promotion_k()) + ")"
                                                            : ", fp8 sums in the tensor cores (fast_accumulation)")
                                         : "") +
             describe_b();
    return std::string("sm80 mma.sp kernel: ") + instr->instruction + ", " + sm80::describe_tile() + describe_b() +
           (sm80_why.empty() ? "" : " (not the sm90 kernel: " + sm80_why + ")");
  }
  // The K the tensor cores sum before each f32 add of promoted fp8 sums (0: none promoted).
  int promotion_k() const {
    return wgmma && wgmma->promoted ? cfg.promote_stages * sm90::kStepsPerStage * instr->inst_k : 0;
  }
  PlanInfo info() const override {
    PlanInfo i;
    i.device = Device::gpu;
    const bool sm90 = wgmma || dec;
    i.kernel = dec ? KernelFamily::decode : wgmma ? KernelFamily::sm90 : KernelFamily::sm80;
    i.instruction = dec ? dec->instruction : wgmma ? wgmma->instruction : instr->instruction;
    i.tile_m = sm90 ? cfg.block_m : sm80::kTileM;
    i.tile_n = sm90 ? cfg.block_n : sm80::kTileN;
    i.stages = sm90 ? cfg.stages : sm80::kPipelineStages;
    i.splits = sm90 ? cfg.splits : 1;
    i.issuers = dec ? cfg.issuers : 0;
    i.group_m = wgmma ? cfg.group_m : 0;
    i.cluster_m = wgmma ? cfg.cluster_m : 1;
    i.persistent = wgmma && cfg.persistent;
    i.promotion_k = promotion_k();
    i.dependent_launch = sm90 && cfg.dependent_launch;
    i.b_repacked = b_read != BRead::in_place;
    if (i.b_repacked) i.b_repack_why = b_why;
    i.not_sm90_why = sm80_why;
    return i;
  }

  // What the plan decides for its runs: every kernel parameter but the pointers, the storage's
  // strides and the epilogue's values (base), and the grids (cuda::Launch; launch.hpp says why).
  gemm::Params base{};
  std::vector<cuda::Launch> grids;

  void prepare() {
    gemm::Params& p = base;
    p.batch_scale_rows = desc.a_per_batch ? desc.m : 0;
    p.m = static_cast<int>(desc.m), p.n = static_cast<int>(desc.n), p.k = static_cast<int>(desc.k);
    // B as the kernels read it: in place, or repacked into the workspace (K-contiguous columns).
    p.ldb_bytes = b_read == BRead::in_place ? layout.ldb * b_bits / 8 : desc.k * b_bits / 8;
    p.batch_b_bytes = b_read == BRead::in_place ? layout.stride_b * b_bits / 8 : desc.k * desc.n * b_bits / 8;
    p.ldc = layout.ldc, p.ldd = layout.ldd;
    p.cd_col_major = desc.cd_order == Order::col_major;
    p.activation = static_cast<ActivationCode>(desc.activation);
    p.batch_c = layout.stride_c, p.batch_d = layout.stride_d;
    p.d_type = gemm::cd_type(desc.d_type);
    p.c_type = gemm::cd_type(desc.c_type);
    p.m_pad = static_cast<int>(padded_rows(desc.m));  // A's rows as every storage for desc holds them
    p.batch = static_cast<int>(desc.batch);
    p.batch0 = 0;
    p.splits = cfg.splits, p.stages_per_split = cfg.splits > 1 ? cfg.stages_per_split : 1 << 30;
    p.group_m = cfg.group_m;
    p.cluster_m = cfg.cluster_m;
    p.persistent = cfg.persistent;
    p.promote_stages = cfg.promote_stages;
    p.dependent_launch = cfg.dependent_launch;
    p.decode_stages = cfg.stages;
    p.decode_issuers = cfg.issuers;
    grids = dec ? sm90::decode::prepare(*dec, p) : wgmma ? sm90::prepare(*wgmma, p) : sm80::prepare(*instr, p);
  }

  void run(const SparseMatrix& a, const void* b, void* d, const EpilogueArgs& e, void* workspace,
           void* stream) const override {
    const nvtx3::scoped_range_in<NvtxDomain> range{"spmma Plan::run"};
    const auto& st = dynamic_cast<const GpuStorage&>(*a.impl().storage);
    cuda::DeviceGuard guard(ordinal);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    gemm::Params p = base;
    p.b = static_cast<const uint8_t*>(b);
    if (b_read != BRead::in_place) {
      clear_stale_error();  // the repack is a runtime launch, checked by the runtime's last error
      gpu_api::RepackB r;
      r.in = b, r.out = workspace;
      r.k = desc.k, r.n = desc.n, r.ld = layout.ldb, r.stride = layout.stride_b, r.batch = desc.batch;
      r.row_major = b_read == BRead::transpose;
      r.elem_bits = b_bits;
      gpu_api::repack_b(r, s);
      p.b = static_cast<const uint8_t*>(workspace);
    }
    p.a = st.values;
    p.meta = st.meta;
    p.c = e.c;
    p.d = d;
    p.bias = e.bias;
    p.scale_rows = e.scale_rows;
    p.scale_cols = e.scale_cols;
    p.a_row_bytes = st.a_row_bytes;
    p.alpha = e.alpha, p.beta = e.beta;
    p.meta_lanes = st.meta_lanes;
    p.meta_groups = st.meta_groups;
    p.batch_a_bytes = desc.a_per_batch ? st.batch_values : 0;
    p.batch_meta_words = desc.a_per_batch ? st.batch_meta_words : 0;
    p.plain = e.alpha == 1.f && e.beta == 0.f && e.bias == nullptr && !e.scale_rows && !e.scale_cols &&
              (desc.activation == Activation::none || desc.activation == Activation::relu);
    if (dec)
      sm90::launch(grids, st.a_maps(p, sm90::decode::box_a(dec->math)), b_map_for(p), p, s,
                   "launch of the sm90 decode kernel");
    else if (wgmma)
      sm90::launch(grids, st.a_maps(p, sm90::box_a()), b_map_for(p), p, s, "launch of the sm90 kernel");
    else
      sm80::launch(grids, p, s);
  }
};

// ---------------------------------------------------------------- the backend

struct GpuBackend final : Backend {
  int ordinal = 0;
  cudaDeviceProp prop{};
  cuda::KernelImage image;

  Device device() const override { return Device::gpu; }
  std::string name() const override {
    return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", device " +
           std::to_string(ordinal) + ")";
  }
  int compute_capability() const override { return prop.major * 10 + prop.minor; }
  int gpu_ordinal() const override { return ordinal; }

  // The sm90 kernel runs on sm_90 from an sm_90a image (its wgmma and setmaxnreg exist only there).
  bool sm90_runs(ElemType a, ElemType b) const { return compute_capability() == 90 && image.sm90a && sm90::covers(a, b); }

  bool runs(const TypeCombo& t, std::string* why) const override {
    const auto no = [&](const std::string& w) {
      if (why) *why = w;
      return false;
    };
    if (!sm80::find(t.a, t.b)) return no("no sparse instruction for A " + str(t.a) + " with B " + str(t.b));
    if (is_fp8(t.a) && !sm90_runs(t.a, t.b)) {
      // The mma.sp fp8 forms need sm_89, in the hardware and in the loaded machine code.
      if (compute_capability() < 89) return no("fp8 mma.sp needs sm_89 or later");
      if (image.arch < 890)
        return no("the kernels loaded on this GPU were compiled for sm_" + std::to_string(image.arch / 10) +
                  ", without fp8 mma.sp (build with CMAKE_CUDA_ARCHITECTURES including 89 or later)");
    }
    return true;
  }

  // The kernel family: the sm90 wgmma.sp kernel where it runs (an sm_90a image on an sm_90 GPU,
  // a type pair it covers), the sm80 kernel otherwise or when pinned; the sm90 kernel's tiles,
  // split K and rasterization from sm90/heuristics.cu.
  void choose_kernel(GpuKernel& k, const PlanOptions& pins) const {
    const ElemType a = k.desc.a_type, b = k.desc.b_type;
    if (compute_capability() != 90) k.sm80_why = "not an sm_90 GPU";
    else if (!image.sm90a) k.sm80_why = "the loaded machine code is not sm_90a";
    else if (!sm90::covers(a, b)) k.sm80_why = "no wgmma.sp form for these types";
    else if (pins.kernel == KernelFamily::sm80) k.sm80_why = "PlanOptions.kernel = sm80";
    if ((pins.kernel == KernelFamily::sm90 || sm90::pins_decode(pins)) && !sm90_runs(a, b))
      fail(Status::not_supported, std::string("PlanOptions.") +
                                      (pins.kernel == KernelFamily::sm90      ? "kernel = sm90"
                                       : pins.kernel == KernelFamily::decode ? "kernel = decode"
                                       : pins.tile_m                         ? "tile_m (the decode kernel)"
                                                                             : "issuers (the decode kernel)") +
                                      ": the sm90 kernels cannot run this plan (" + k.sm80_why + ")");
    if (!k.sm80_why.empty()) {
      if (pins_kernel_choices(pins))
        fail(Status::not_supported, "PlanOptions: tile_n, tile_m, issuers, splits, group_m, cluster_m, grid, dependent_launch and promotion_k pin the sm90 "
                                    "kernels' choices; this plan runs "
                                    "the sm80 kernel (" + k.sm80_why + "), whose tile is fixed (" + sm80::describe_tile() +
                                    ") and which has no split K");
      return;
    }
    const bool promoted = gemm_promotes(a) && !k.desc.fast_accumulation;
    k.cfg = sm90::choose(k.desc, promoted, k.instr->inst_k, prop.multiProcessorCount, pins);
    if (k.cfg.decode) {
      k.dec = sm90::decode::find(a, b, k.cfg.block_n, sm90::decode::math_of(k.cfg.block_m));
      if (!k.dec)
        fail(Status::internal, "GPU: no decode kernel instantiation for A " + str(a) + ", B " + str(b) + " at tile " +
                                   std::to_string(k.cfg.block_m) + "x" + std::to_string(k.cfg.block_n));
      return;
    }
    k.wgmma = sm90::find(a, b, k.cfg.block_n, promoted);
    if (!k.wgmma)
      fail(Status::internal, "GPU: no sm90 instantiation for A " + str(a) + ", B " + str(b) + " at tile width " +
                                 std::to_string(k.cfg.block_n) + (promoted ? " (promoted)" : ""));
  }

  std::unique_ptr<Kernel> plan(const MatmulDesc& desc, const PlanOptions& pins) override {
    cuda::DeviceGuard guard(ordinal);
    const sm80::Entry* in = sm80::find(desc.a_type, desc.b_type);
    if (!in) fail(Status::not_supported, "GPU: no sparse kernel for A " + str(desc.a_type) + " with B " + str(desc.b_type));
    if (desc.k % in->inst_k != 0)
      fail(Status::invalid_argument, "MatmulDesc.k = " + std::to_string(desc.k) + " must be a multiple of " +
                                         std::to_string(in->inst_k) + " for A " + str(desc.a_type));
    // Size limits of the kernels (docs/api.md, "Size limits").
    if (padded_rows(desc.m) > INT_MAX)
      fail(Status::not_supported, "GPU: MatmulDesc.m = " + std::to_string(desc.m) + " exceeds 2^31 - 128 (rows of A are "
                                  "stored padded to whole 128-row tiles, counted in 32 bits)");
    auto k = std::make_unique<GpuKernel>();
    k->desc = desc;
    k->layout = operand_layout(desc);
    k->ordinal = ordinal;
    k->instr = in;
    k->b_bits = memory_bits(desc.b_type);
    choose_kernel(*k, pins);
    const int64_t ctas = k->dec ? sm90::decode::ctas(padded_rows(desc.m), desc.n, k->cfg.block_n, k->dec->math) *
                                      k->cfg.splits
                         : k->wgmma ? sm90::ctas(padded_rows(desc.m), desc.n, k->cfg.block_n, k->cfg.cluster_m) * k->cfg.splits
                                  : sm80::ctas(padded_rows(desc.m), desc.n);
    if (ctas > INT_MAX)
      fail(Status::not_supported, "GPU: " + std::to_string(ctas) + " CTA tiles of " + std::to_string(desc.m) + " x " +
                                      std::to_string(desc.n) + " exceed the grid's 2^31 - 1");
    if (desc.b_order == Order::row_major) {
      if (k->b_bits == 4)
        fail(Status::not_supported, "GPU: a row-major 4-bit B is not supported; give B column-major (K contiguous)");
      k->b_read = BRead::transpose;
      k->b_why = "B is row-major; the kernels read K-contiguous columns";
    } else {
      const int64_t ldb_bytes = k->layout.ldb * k->b_bits / 8, stride_bytes = k->layout.stride_b * k->b_bits / 8;
      k->b_why = sm90::b_in_place_unsupported(ldb_bytes, desc.batch, stride_bytes, desc.b_alignment);
      k->b_read = k->b_why.empty() ? BRead::in_place : BRead::copy;
    }
    if (k->b_read == BRead::copy)
      detail::log(LogLevel::hints, "Plan", "B is copied into the workspace on every run (" + k->b_why +
                                               "): give B 16-byte aligned columns to read it in place");
    if (k->b_read == BRead::transpose)
      detail::log(LogLevel::hints, "Plan", "B is transposed into the workspace on every run (B is row-major): a "
                                           "column-major B (K contiguous) is read in place");
    k->prepare();
    if (!k->wgmma && !k->dec && compute_capability() == 90 && pins.kernel != KernelFamily::sm80)
      detail::log(LogLevel::hints, "Plan", "the sm80 mma.sp kernel runs this plan on an sm_90 GPU (" + k->sm80_why + ")");
    detail::log(LogLevel::info, "Plan", k->describe());
    return k;
  }

  CompressedLayout layout(const MatmulDesc& desc) const override { return gpu_api::gpu_layout(desc); }

  std::unique_ptr<SparseStorage> compress(const MatmulDesc& desc, const void* a, int64_t lda, int64_t stride_a,
                                          PruneMode mode, void* stream, void* values, void* metadata) override {
    const nvtx3::scoped_range_in<NvtxDomain> range{"spmma compress"};
    cuda::DeviceGuard guard(ordinal);
    const int64_t entries = desc.a_per_batch ? desc.batch : 1;
    auto st = gpu_api::empty_storage(desc, entries, ordinal, values, metadata);
    const isa::Variant& v = isa::variant_or_throw(st->variant);
    const PatternInfo& pi = pattern_info(st->pattern);
    const int bits = memory_bits(desc.a_type);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    cuda::DeviceBuffer<unsigned long long> violation(static_cast<size_t>(entries));
    check(cudaMemsetAsync(violation.ptr, 0xFF, violation.bytes(), s), "compress: cudaMemsetAsync");
    for (int64_t e = 0; e < entries; ++e) {
      gpu_format::CompressParams p = gpu_format::compress_params_for(desc.a_type, v);
      p.a = static_cast<const uint8_t*>(a) + e * stride_a * bits / 8;
      p.lda_bytes = lda * bits / 8;
      p.m = desc.m, p.k = desc.k, p.m_pad = st->m_pad;
      p.meta_group = gemm::kMetaGroup;
      p.groups = st->meta_groups;
      p.prune = mode == PruneMode::magnitude;
      p.values = st->values + e * st->batch_values;
      p.value_row_bytes = st->a_row_bytes;
      p.meta = st->meta + e * st->batch_meta_words;
      p.violation = violation.ptr + e;
      gpu_format::launch_compress(p, stream);
    }
    // Synchronise here, in both modes: compress returns a finished matrix, and a fault of its
    // kernels is reported by compress rather than by some later call.
    std::vector<unsigned long long> first(static_cast<size_t>(entries));
    check(cudaMemcpyAsync(first.data(), violation.ptr, violation.bytes(), cudaMemcpyDeviceToHost, s),
          "compress: read the check result");
    check(cudaStreamSynchronize(s), "compress (GPU kernels)");
    if (mode == PruneMode::check)
      for (int64_t e = 0; e < entries; ++e) {
        if (first[static_cast<size_t>(e)] == ~0ull) continue;
        const int64_t chunks = desc.k / pi.chunk, row = static_cast<int64_t>(first[static_cast<size_t>(e)]) / chunks,
                      ch = static_cast<int64_t>(first[static_cast<size_t>(e)]) % chunks;
        fail(Status::pattern_violation,
             "compress (GPU" + std::string(entries > 1 ? ", batch entry " + std::to_string(e) : "") + "): row " +
                 std::to_string(row) + ", chunk " + std::to_string(ch) + " (cols " + std::to_string(ch * pi.chunk) + ".." +
                 std::to_string(ch * pi.chunk + pi.chunk - 1) + ") has more non-zeros than " + pi.name + " allows");
      }
    return st;
  }

  std::unique_ptr<SparseStorage> import_into(const MatmulDesc& desc, const void* x_values, const void* x_metadata,
                                             void* values, void* metadata, void* stream) override {
    const nvtx3::scoped_range_in<NvtxDomain> range{"spmma import_into"};
    cuda::DeviceGuard guard(ordinal);
    auto st = gpu_api::empty_storage(desc, desc.a_per_batch ? desc.batch : 1, ordinal, values, metadata);
    gpu_api::relayout(*st, gpu_format::Relayout::to_device, x_values, x_metadata, nullptr, 0, 0, stream, "import_into");
    return st;
  }

  std::unique_ptr<SparseStorage> borrow(const MatmulDesc& desc, const void* values, const void* metadata) override {
    cuda::DeviceGuard guard(ordinal);
    // The kernels only read A: the const goes away for the storage's one pointer type.
    return gpu_api::empty_storage(desc, desc.a_per_batch ? desc.batch : 1, ordinal, const_cast<void*>(values),
                                  const_cast<void*>(metadata));
  }

  std::unique_ptr<SparseStorage> upload(const MatmulDesc& desc, const std::vector<Compressed>& per_batch) override {
    cuda::DeviceGuard guard(ordinal);
    return gpu_api::upload_storage(desc, per_batch, ordinal);
  }

  void check_memory(const void* p, size_t bytes, const char* what) const override {
    cuda::check_device_memory(p, bytes, ordinal, what);
  }
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(int ordinal, std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    if (why) *why = e != cudaSuccess ? std::string("no CUDA GPU usable: ") + cudaGetErrorString(e) : "no CUDA device";
    return nullptr;
  }
  if (ordinal == -1) check(cudaGetDevice(&ordinal), "cudaGetDevice");
  if (ordinal < 0 || ordinal >= count) {
    if (why) *why = "CUDA device " + std::to_string(ordinal) + " does not exist (this machine has " + std::to_string(count) + ")";
    return nullptr;
  }
  auto b = std::make_unique<GpuBackend>();
  b->ordinal = ordinal;
  check(cudaGetDeviceProperties(&b->prop, ordinal), "cudaGetDeviceProperties");
  if (b->prop.major < 8) {
    if (why) *why = std::string(b->prop.name) + " is older than sm_80 (sparse tensor cores need sm_80)";
    return nullptr;
  }
  b->image = cuda::kernel_image(ordinal);
  if (!b->image.loads) {
    if (why) *why = b->image.why;
    return nullptr;
  }
  return b;
}

}  // namespace spmma::detail
