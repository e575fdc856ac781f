// SPDX-License-Identifier: BSD-3-Clause
// The two places a matmul can run — the CPU (src/api/cpu_backend.cpp) and the GPU
// (src/cuda/api/) — behind one interface. matmul.cpp owns the checks that do not depend on the
// place (shapes, types, leading dimensions, pointer alignment and overlap) and dispatches here.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "spmma/matmul.hpp"

namespace spmma::detail {

// Every (A, B, C/D) combination the API describes (matmul.cpp). A backend runs the rows its
// `runs` predicate accepts; supported_types and Plan both ask that one predicate.
const std::vector<TypeCombo>& api_type_combos();

// The one definition of the operands' leading dimensions and batch strides, in elements, for
// validation and both backends: ld 0 = packed (columns of a row-major matrix, rows of a
// column-major one); with batch > 1 a stride of 0 = packed, i.e. ld x (rows of a row-major
// matrix, columns of a column-major one); every stride is 0 when batch == 1.
struct OperandLayout {
  int64_t ldb = 0, ldc = 0, ldd = 0;
  int64_t stride_b = 0, stride_c = 0, stride_d = 0;
};
OperandLayout operand_layout(const MatmulDesc& d);

// Whether the options pin a kernel's own choices (tile, rows, producer warps, splits,
// rasterization, clusters, grid, dependent launch, fp8 promotion) beyond its family: the one list that both backends
// refuse where the plan runs a kernel that has no such choice (the CPU's routine, the sm80 kernel).
inline bool pins_kernel_choices(const PlanOptions& o) {
  return o.tile_n || o.tile_m || o.issuers || o.splits || o.group_m || o.cluster_m || o.grid != GridKind::automatic ||
         !o.dependent_launch || o.promotion_k;
}

// Storage of a SparseMatrix: host vectors or device buffers, owned, or caller-owned buffers it
// borrows (compress_into, import_into, borrow).
struct SparseStorage {
  virtual ~SparseStorage() = default;
  virtual bool on_device() const = 0;
  virtual int gpu_ordinal() const { return -1; }
  virtual Compressed to_host(int64_t b) const = 0;
  virtual bool owns_memory() const = 0;
  // The bytes the storage reads (its values and metadata), for the overlap checks of the calls
  // that write caller buffers.
  virtual std::vector<std::pair<const void*, size_t>> spans() const = 0;
  // Every batch entry in the interchange form (matmul.hpp), entry after entry, into buffers of
  // interchange_layout sizes where the storage lives; synchronises; a forbidden nibble throws
  // invalid_value naming entry, row and chunk.
  virtual void export_interchange(void* values, void* metadata, void* stream) const = 0;
  // The dense pruned A, entry e at dense + e * stride (elements), rows lda elements apart.
  virtual void decompress_into(void* dense, int64_t lda, int64_t stride, void* stream) const = 0;
};

// A kernel (or CPU routine) chosen once for a MatmulDesc.
struct Kernel {
  virtual ~Kernel() = default;
  virtual size_t workspace_bytes() const = 0;
  virtual std::string describe() const = 0;
  virtual PlanInfo info() const = 0;
  // Arguments were checked by Plan::run (matmul.cpp) for what does not depend on the place.
  // e.c is null when beta == 0.
  virtual void run(const SparseMatrix& a, const void* b, void* d, const EpilogueArgs& e, void* workspace,
                   void* stream) const = 0;
};

struct Backend {
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;
  virtual int compute_capability() const = 0;
  virtual int gpu_ordinal() const { return -1; }
  // Whether this backend runs a type combination (a row of api_type_combos()); when not, `why`.
  virtual bool runs(const TypeCombo& t, std::string* why) const = 0;
  // Throws not_supported naming the reason when this backend cannot run the description.
  virtual std::unique_ptr<Kernel> plan(const MatmulDesc& desc, const PlanOptions& options) = 0;
  // The layout compress, import_into and borrow use (matmul.hpp, CompressedLayout).
  virtual CompressedLayout layout(const MatmulDesc& desc) const = 0;
  // values / metadata: caller-owned buffers of layout(desc) sizes to write and borrow, or both
  // null to allocate storage of its own.
  virtual std::unique_ptr<SparseStorage> compress(const MatmulDesc& desc, const void* a, int64_t lda,
                                                  int64_t stride_a, PruneMode mode, void* stream,
                                                  void* values = nullptr, void* metadata = nullptr) = 0;
  // The interchange form (this backend's memory) into the layout, in caller-owned buffers.
  virtual std::unique_ptr<SparseStorage> import_into(const MatmulDesc& desc, const void* x_values,
                                                     const void* x_metadata, void* values, void* metadata,
                                                     void* stream) = 0;
  // Caller-owned buffers already in the layout.
  virtual std::unique_ptr<SparseStorage> borrow(const MatmulDesc& desc, const void* values, const void* metadata) = 0;
  virtual std::unique_ptr<SparseStorage> upload(const MatmulDesc& desc, const std::vector<Compressed>& per_batch) = 0;
  // Throws invalid_argument when `p` (the argument `what`, `bytes` long) is not memory this
  // backend computes on: e.g. a host pointer given to a GPU handle, or a device pointer given
  // to the CPU. Null pointers are the caller's business.
  virtual void check_memory(const void* p, size_t bytes, const char* what) const = 0;
};

std::unique_ptr<Backend> make_cpu_backend();
#ifdef SPMMA_HAVE_CUDA
// nullptr (and `why` filled) when no GPU is usable: no device, an ordinal that does not exist,
// or spmma's kernels do not load on it. ordinal -1: the current device.
std::unique_ptr<Backend> make_gpu_backend(int ordinal, std::string* why);
// Where a pointer lives, as CUDA knows it (for the CPU backend's check): true for device memory.
bool is_device_pointer(const void* p);
#endif

}  // namespace spmma::detail

namespace spmma {
struct SparseMatrix::Impl {
  std::shared_ptr<const detail::Backend> backend;  // where it lives (shared with the handle)
  MatmulDesc desc;  // m, k, a_type, batch as compressed
  Pattern pattern = Pattern::p2_4;
  size_t value_bytes = 0, metadata_bytes = 0;
  std::unique_ptr<detail::SparseStorage> storage;
};
struct Handle::Impl {
  std::shared_ptr<detail::Backend> backend;  // shared with the handle's plans, which may outlive it
  std::string fallback_reason;
};
struct Plan::Impl {
  MatmulDesc desc;
  detail::OperandLayout layout;
  Device device = Device::cpu;
  int gpu_ordinal = -1;
  std::shared_ptr<const detail::Backend> backend;
  std::unique_ptr<detail::Kernel> kernel;
};
}  // namespace spmma
