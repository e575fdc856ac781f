// SPDX-License-Identifier: BSD-3-Clause
// spmma — sparse matrix multiply, plan once / run many:
//
//   D = activation(alpha · A · B + beta · C + bias)      A structured-sparse (M x K), B dense (K x N)
//   (optionally with scale vectors: alpha · s_row[i] · s_col[j] in place of alpha)
//
// The flow follows cuBLASLt / cuSPARSELt: describe (MatmulDesc) -> compress A once
// (compress(), on the device where the handle computes) -> plan (Plan, picks the kernel and
// tiles once) -> run (Plan::run, many times, on a stream). The same API runs on the CPU when
// there is no GPU (Device::cpu): pointers are then host pointers.
//
// Shapes and layouts. A is M x K, row-major (the sparsity pattern runs along K, as the tensor
// cores need it). B is K x N and C, D are M x N, each row- or column-major with a leading
// dimension (0 = packed). A batch of `batch` products uses strides (elements) between the
// matrices of B, C, D; A is either shared by the whole batch (weights: stride_a = 0) or one
// compressed matrix per batch entry. bias is a vector of M f32 values (one per output row).
// Types: see supported_types(). Alignment, size limits, streams and synchronisation, device
// binding: docs/api.md ("Pointers and alignment", "Size limits", "Streams, errors and
// synchronisation", "Devices").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma {

enum class Device : uint8_t { automatic, gpu, cpu };
enum class Order : uint8_t { row_major, col_major };
enum class Activation : uint8_t { none, relu, gelu };  // gelu: x·Φ(x) with the exact erf

struct MatmulDesc {
  int64_t m = 0, n = 0, k = 0;
  ElemType a_type = ElemType::bf16;  // the sparse operand
  ElemType b_type = ElemType::bf16;
  ElemType c_type = ElemType::bf16;  // C and D share a type unless d_type says otherwise
  ElemType d_type = ElemType::bf16;
  Order b_order = Order::row_major;
  Order cd_order = Order::row_major;
  int64_t ldb = 0, ldc = 0, ldd = 0;  // 0: packed (n or k, per order)
  int64_t batch = 1;
  int64_t stride_b = 0, stride_c = 0, stride_d = 0;  // elements; 0 with batch > 1: packed
  bool a_per_batch = false;                          // false: one A for the whole batch
  Activation activation = Activation::none;
  bool bias = false;
  // Scale vectors, as quantized inference needs them (per-channel weight scales, per-token
  // activation scales): D(i, j) = act(alpha · s_row[i] · s_col[j] · acc(i, j) + bias[i] + beta·C).
  // scale_rows: one f32 per row of D, M values per A entry (batch x M with a_per_batch);
  // scale_cols: one f32 per column of D, N values per batch entry (batch x N, packed).
  bool scale_rows = false, scale_cols = false;
  // fp8 (e4m3/e5m2) on the Hopper (sm90) kernel only: keep the sum in the tensor cores' own fp8
  // accumulator over the whole K, as cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM does. Faster,
  // but that accumulator keeps fewer bits than f32 (error up to about 2^-9 of Σ|a·b|,
  // docs/conformance.md); the default adds every 2 instructions into f32 ("promotion").
  // Ignored by every other type and kernel (their sums are f32 or exact already).
  bool fast_accumulation = false;
  // The alignment in bytes that every B pointer given to Plan::run has (a power of two, at least
  // B's element size; 4-bit types: 1). The GPU reads a column-major B in place only when B's
  // address, leading dimension and batch stride are multiples of 16 bytes; a plan for a smaller
  // b_alignment (or an ldb / stride_b that is not such a multiple) repacks B into the workspace
  // on every run instead (Plan::describe says so, and the log's hints level reports it). A run
  // whose B is less aligned than this is refused. Row-major B is always repacked (transposed).
  int b_alignment = 16;

  // Throws naming the first field that is wrong and its value: invalid_argument for a shape,
  // leading dimension, stride or enum value; not_supported for a type combination spmma does
  // not describe (see supported_types). The rules (docs/api.md, "Shapes and alignment"):
  //   m, n, k, batch >= 1 (and < 2^31);
  //   k a multiple of 512 / bits(a_type): 16 (tf32), 32 (f16, bf16), 64 (fp8, s8, u8),
  //     128 (s4, u4) — whole sparse MMA steps, so that no kernel needs hidden K padding;
  //   ld >= the packed value (row-major: columns, column-major: rows); 4-bit types: even;
  //   with batch > 1, a non-zero stride >= one matrix (ld x rows-or-columns), even for 4-bit;
  //   b_alignment a power of two >= B's element size in bytes (1 for 4-bit types).
  void validate() const;
};

// A compressed sparse A where the handle computes (device memory for a GPU handle): the values
// in the whole-matrix layout of docs/layouts.md and the metadata in the fragment-ready layout
// of the kernel family that will read it. Owns its memory.
class SparseMatrix {
 public:
  SparseMatrix();
  ~SparseMatrix();
  SparseMatrix(SparseMatrix&&) noexcept;
  SparseMatrix& operator=(SparseMatrix&&) noexcept;

  ElemType type() const;
  Pattern pattern() const;
  int64_t rows() const;
  int64_t cols() const;
  int64_t batch() const;
  size_t value_bytes() const;     // exact, all batch entries
  size_t metadata_bytes() const;  // exact, all batch entries
  bool on_device() const;
  // False for a SparseMatrix that borrows caller-owned buffers (compress_into, import_into, borrow).
  bool owns_memory() const;
  // Back to the host's whole-matrix form (copies from the device if needed), batch entry b.
  Compressed to_host(int64_t b = 0) const;

  // True for a default-constructed or moved-from SparseMatrix (every accessor above then
  // throws invalid_argument).
  bool empty() const { return impl_ == nullptr; }

  struct Impl;
  explicit SparseMatrix(std::unique_ptr<Impl> impl);
  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class Handle {
 public:
  // automatic: the GPU when one is usable, else the CPU (fallback_reason() says why).
  // gpu_ordinal: the CUDA device of a GPU handle; -1 = the device current when the handle is
  // created. Every call through the handle (compress, upload, Plan, Plan::run, SparseMatrix
  // access) runs on that device, whatever device is current at the call, and restores the
  // caller's current device afterwards. A GPU is usable when spmma's kernels load on it (the
  // build holds machine code or PTX for its architecture, checked when the handle is created).
  explicit Handle(Device d = Device::automatic, int gpu_ordinal = -1);
  ~Handle();
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  Device device() const;
  std::string device_name() const;  // "NVIDIA H100 80GB HBM3 (sm_90, device 0)" or "CPU (N threads)"
  int compute_capability() const;   // 0 on the CPU
  int gpu_ordinal() const;          // the CUDA device; -1 on the CPU
  // Why Device::automatic took the CPU ("no CUDA device", "the kernels do not load on ..."),
  // empty for a handle that runs where it was asked to.
  std::string fallback_reason() const;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

enum class PruneMode : uint8_t {
  check,      // A must already satisfy its pattern; the first violation is reported (row, chunk)
  magnitude,  // keep the largest magnitudes in each chunk (as prune_magnitude)
};

// Compresses a dense A (M x K row-major with leading dimension lda, 0 = packed; elements of
// desc.a_type; batch entries stride_a elements apart when desc.a_per_batch, 0 = packed) that
// lives where the handle computes. `stream` is a cudaStream_t for a GPU handle (nullptr: the
// default stream). Elements in memory, here and for B, C, D: the type's bit pattern in its
// natural width — 4 bytes for tf32 (f32 bits; the low 13 mantissa bits are ignored, as the
// tensor cores ignore them), f32, s32; 2 for f16, bf16; 1 for e4m3, e5m2, s8, u8; the 4-bit s4,
// u4 two per byte, element i in byte i/2, low nibble first (so 4-bit leading dimensions and
// strides are even). PruneMode::check throws pattern_violation naming the row and chunk (and
// the batch entry when there are several). `a` must be aligned to its element size. A GPU
// compress allocates the result and synchronises `stream` before it returns, so any failure of
// its kernels is reported here.
SparseMatrix compress(Handle& h, const MatmulDesc& desc, const void* a, int64_t lda, int64_t stride_a,
                      PruneMode mode, void* stream = nullptr);
// The host's Compressed form, uploaded (GPU handle) or adopted (CPU handle).
SparseMatrix upload(Handle& h, const MatmulDesc& desc, const std::vector<Compressed>& per_batch);

// ------------------------------------------------------------------ caller-owned memory
//
// A framework that owns its memory (PyTorch's caching allocator, a serving engine's arena) keeps
// the compressed A in its own buffers: ask the layout's sizes, let spmma write into them, and run
// from them. spmma then holds no copy: the SparseMatrix these functions return borrows the
// buffers (SparseMatrix::owns_memory() is false), which must outlive it and every run that reads
// them, and stay as spmma wrote them (a run reads them as they are when its kernels execute).
//
// Two forms of a compressed A (docs/layouts.md):
//   interchange: the whole-matrix form of Compressed, as bytes: per batch entry, values m rows of
//                k/2 elements at the type's width, then (a separate buffer) metadata m rows of
//                k/16 16-bit words for 2:4 and 4:8 (k/8 for tf32's 1:2), little-endian, nibble
//                c of a row in bits 4(c%4).. of word c/4. It is the same on every device: it is
//                what a checkpoint stores.
//   the handle's own layout, named by CompressedLayout::name: "interchange" on the CPU; on a GPU
//                "gpu-v1" — values with rows padded to whole 128-row tiles, metadata in the
//                kernels' fragment-ready order (docs/layouts.md, "Fragment-ready metadata").

struct CompressedLayout {
  std::string name;           // "interchange" (CPU handle) or "gpu-v1" (GPU handle)
  size_t value_bytes = 0;     // all batch entries of A (a_per_batch ? batch : 1)
  size_t metadata_bytes = 0;
  size_t alignment = 0;       // each buffer's address must be a multiple of this many bytes
};
// The layout a handle computes from, for desc's A (m, k, a_type, batch, a_per_batch).
CompressedLayout compressed_layout(const Handle& h, const MatmulDesc& desc);
// The interchange form's sizes (the same for every handle).
CompressedLayout interchange_layout(const MatmulDesc& desc);

// compress(), writing into caller-owned buffers of compressed_layout(h, desc) sizes where the
// handle computes; the result borrows them. Synchronises `stream` (as compress does).
SparseMatrix compress_into(Handle& h, const MatmulDesc& desc, const void* a, int64_t lda, int64_t stride_a,
                           PruneMode mode, void* values, void* metadata, void* stream = nullptr);
// The interchange form (in the handle's memory: device memory for a GPU handle) into the
// handle's own layout, in caller-owned buffers; every nibble is checked (invalid_value naming the
// batch entry, row and chunk of the first forbidden one). Synchronises `stream`. On a CPU handle
// the two layouts are one: `values`/`metadata` receive a checked copy (they may be the inputs).
SparseMatrix import_into(Handle& h, const MatmulDesc& desc, const void* interchange_values,
                         const void* interchange_metadata, void* values, void* metadata, void* stream = nullptr);
// A SparseMatrix over buffers that already hold A in the handle's layout (written by
// compress_into or import_into for the same description, or copied from such buffers). Nothing
// is read here; the buffers' addresses, alignment and memory are checked.
SparseMatrix borrow(Handle& h, const MatmulDesc& desc, const void* values, const void* metadata);
// A (any SparseMatrix: owned or borrowed) in the interchange form, into caller-owned buffers of
// interchange_layout sizes in the handle's memory. Synchronises `stream`; throws invalid_value
// naming the first chunk with a forbidden nibble (possible only for borrowed buffers).
void export_interchange(const SparseMatrix& a, void* values, void* metadata, void* stream = nullptr);
// The dense pruned A (m x k row-major, leading dimension lda elements, 0 = packed; batch entries
// stride_a elements apart, 0 = packed) in the handle's memory, computed where A lives.
// Synchronises `stream` and throws invalid_value naming the first chunk with a forbidden nibble
// (possible only for borrowed buffers).
void decompress_into(const SparseMatrix& a, void* dense, int64_t lda = 0, int64_t stride_a = 0, void* stream = nullptr);

// The GPU kernel families: sm90 = the wgmma.mma_async.sp kernel (Hopper, sm_90a machine code),
// sm80 = the mma.sp::ordered_metadata kernel (every GPU from sm_80), decode = the sm_90a kernel
// for small N (decode, small batches), which streams A in 32-row tiles through TMA into mma.sp
// (docs/api.md, "The decode kernel").
enum class KernelFamily : uint8_t { automatic, sm90, sm80, decode };

// The sm90 kernel's grid: persistent (one CTA per SM, each taking tile after tile, its pipeline
// running on into the next tile while it stores the last) or one CTA per tile.
enum class GridKind : uint8_t { automatic, persistent, per_tile };

// Tuning a plan: pin what the heuristics would otherwise choose (src/cuda/sm90/heuristics.cu),
// for experiments, autotuning and tests. 0 / automatic leaves a choice to the heuristics. A pin
// the device or the description cannot take is refused by Plan with not_supported (or
// invalid_argument for a value no kernel has), naming the reason; a plan never silently
// ignores a pin. The CPU backend has no kernel choices: it refuses any pin.
struct PlanOptions {
  KernelFamily kernel = KernelFamily::automatic;
  int tile_n = 0;   // sm90: the CTA tile's N (64, 128, 256; 192 too for fp8 with promoted sums)
  int tile_m = 0;   // the decode kernel: its CTA tile's rows, 32 (mma.sp per warp) or 64 (fp8: wgmma.sp per warpgroup);
                    // pins the decode kernel
  int issuers = 0;  // the decode kernel: producer warps per operand, 1 or 2 (taking the stages in turn: a CTA alone on its
                    // SM runs at its copies' issue rate); pins the decode kernel
  int splits = 0;   // sm90: split K into this many parts (1 = none, up to 8: the CTAs of a cluster; each at least 2 stages;
                    // the decode kernel: up to 4)
  int group_m = 0;  // sm90: rasterization, M tiles walked before the next N tiles (1 .. 1024)
  int cluster_m = 0;  // sm90: CTAs per cluster along M (1, or 2 sharing B's tile by TMA multicast)
  GridKind grid = GridKind::automatic;  // sm90: a persistent grid or one CTA per tile
  // sm90, fp8 with promoted sums (not fast_accumulation): the K range whose products the tensor
  // cores sum, with their fewer bits, before each add into the f32 sums: 128 (one pipeline stage:
  // 64 products of the 2:4 A per output) or 256 (two stages, 128 products; fewer adds, a coarser
  // sum: docs/api.md, "fp8 accuracy").
  int promotion_k = 0;
  // sm90: programmatic dependent launch. The kernel may start while the kernel before it in the
  // stream finishes: its set-up (barriers, roles, tensor maps) overlaps that kernel's end, and its
  // threads wait for that kernel to complete before they touch global memory, so the results are
  // the same either way; layer after layer (decode) the start of each call hides behind the last.
  // false: launched plainly, after the kernel before has finished (a pin, as the others).
  bool dependent_launch = true;
};

// What a plan runs, field by field (describe() says the same in words).
struct PlanInfo {
  Device device = Device::cpu;
  KernelFamily kernel = KernelFamily::automatic;  // automatic on the CPU
  std::string instruction;                        // the registry id of the MMA instruction (GPU)
  int tile_m = 0, tile_n = 0, stages = 0;         // CTA tile and pipeline depth (GPU)
  int splits = 1;                                 // split K (sm90)
  int issuers = 0;                                // the decode kernel's producer warps per operand (1 or 2)
  int group_m = 0;                                // rasterization group (sm90)
  int cluster_m = 1;                              // CTAs per cluster along M (sm90)
  bool persistent = false;                        // a persistent grid (sm90)
  int promotion_k = 0;                            // K per f32 add of promoted fp8 sums (sm90; 0: not promoted)
  bool dependent_launch = false;                  // programmatic dependent launch (sm90)
  bool b_repacked = false;                        // B copied or transposed into the workspace each run
  std::string b_repack_why;                       // why, when it is
  std::string not_sm90_why;                       // why an sm_90 GPU's plan is on the sm80 kernel
};

// The epilogue's inputs of one run (docs/api.md, "Epilogue semantics").
struct EpilogueArgs {
  float alpha = 1.f, beta = 0.f;
  const void* c = nullptr;             // C: read only when beta != 0 (may be null then)
  const float* bias = nullptr;         // M values, given exactly when MatmulDesc.bias
  const float* scale_rows = nullptr;   // given exactly when MatmulDesc.scale_rows (sizes there)
  const float* scale_cols = nullptr;   // given exactly when MatmulDesc.scale_cols
};

class Plan {
 public:
  // Validates the description and picks the kernel and tiles once; throws not_supported with
  // the reason (type combination, target, a pinned option) when nothing can run it.
  Plan(Handle& h, const MatmulDesc& desc, const PlanOptions& options = {});
  ~Plan();
  Plan(Plan&&) noexcept;

  size_t workspace_bytes() const;
  std::string describe() const;  // kernel, tile shape, stages, and any repacking of B (with why)
  PlanInfo info() const;
  const MatmulDesc& desc() const;

  // D = activation(alpha·A·B + beta·C + bias). c may be null when beta == 0 (C is then not
  // read at all); bias must be non-null exactly when desc.bias. c may equal d (in place) when
  // C and D have the same type, leading dimension and stride; otherwise C and D, and D and B,
  // bias, workspace, must not share any byte. For an integer d_type alpha and beta must be
  // finite. Epilogue semantics: docs/api.md. workspace: workspace_bytes() bytes where the
  // handle computes, 16-byte aligned (may be null when 0). Every pointer is aligned to its
  // element size, B to desc.b_alignment; a GPU handle takes device (or managed) memory of its
  // own device only. A run never allocates and never synchronises: it checks its arguments,
  // then enqueues its kernels on `stream` (capturable in a CUDA graph); a launch failure is
  // reported by this call, a fault while the kernel runs by the next synchronising CUDA call.
  void run(const SparseMatrix& a, const void* b, const void* c, void* d, float alpha, float beta,
           const float* bias = nullptr, void* workspace = nullptr, void* stream = nullptr) const;
  // The same with every epilogue input, scale vectors included (the same rules for each pointer:
  // aligned to 4 bytes, in the handle's memory, not overlapping D).
  void run(const SparseMatrix& a, const void* b, void* d, const EpilogueArgs& epilogue, void* workspace = nullptr,
           void* stream = nullptr) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The (A, B, C/D) type combinations a device runs: e.g. {bf16, bf16, bf16}, {e4m3, e4m3, bf16},
// {s8, s8, s32}. compute is the accumulator type (f32 for float A, s32 for integer A). C and D
// may differ in type when both are cd types of rows with the same (a, b) (e.g. C s32, D s8).
// Device::gpu: what the current CUDA device runs (empty without a usable GPU); the same list
// a Handle's Plan accepts (both come from one table). Device::automatic: the device Handle()
// would pick.
struct TypeCombo {
  ElemType a, b, cd, compute;
};
std::vector<TypeCombo> supported_types(Device d);
// What this handle's device runs: exactly the combinations its Plan accepts.
std::vector<TypeCombo> supported_types(const Handle& h);

}  // namespace spmma
