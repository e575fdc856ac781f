// The two places a matmul can run — the CPU (src/api/cpu_backend.cpp) and the GPU
// (src/cuda/api/gpu_backend.cu) — behind one interface. matmul.cpp owns the checks that do not
// depend on the place (shapes, types, leading dimensions) and dispatches here.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "spmma/matmul.hpp"

namespace spmma::detail {

// Storage of a SparseMatrix: host vectors or device buffers, owned.
struct SparseStorage {
  virtual ~SparseStorage() = default;
  virtual bool on_device() const = 0;
  virtual Compressed to_host(int64_t b) const = 0;
};

// A kernel (or CPU routine) chosen once for a MatmulDesc.
struct Kernel {
  virtual ~Kernel() = default;
  virtual size_t workspace_bytes() const = 0;
  virtual std::string describe() const = 0;
  virtual void run(const SparseMatrix& a, const void* b, const void* c, void* d, float alpha, float beta,
                   const float* bias, void* workspace, void* stream) const = 0;
};

struct Backend {
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;
  virtual int compute_capability() const = 0;
  virtual std::vector<TypeCombo> types() const = 0;
  // Throws not_supported naming the reason when this backend cannot run the description.
  virtual std::unique_ptr<Kernel> plan(const MatmulDesc& desc) = 0;
  virtual std::unique_ptr<SparseStorage> compress(const MatmulDesc& desc, const void* a, int64_t lda,
                                                  int64_t stride_a, PruneMode mode, void* stream) = 0;
  virtual std::unique_ptr<SparseStorage> upload(const MatmulDesc& desc, const std::vector<Compressed>& per_batch) = 0;
};

std::unique_ptr<Backend> make_cpu_backend();
#ifdef SPMMA_HAVE_CUDA
// nullptr (and `why` filled) when no GPU is usable.
std::unique_ptr<Backend> make_gpu_backend(std::string* why);
#endif

}  // namespace spmma::detail

namespace spmma {
struct SparseMatrix::Impl {
  MatmulDesc desc;  // m, k, a_type, batch as compressed
  Pattern pattern = Pattern::p2_4;
  size_t value_bytes = 0, metadata_bytes = 0;
  std::unique_ptr<detail::SparseStorage> storage;
};
struct Handle::Impl {
  std::unique_ptr<detail::Backend> backend;
};
struct Plan::Impl {
  MatmulDesc desc;
  Device device = Device::cpu;
  std::unique_ptr<detail::Kernel> kernel;
};
}  // namespace spmma
