// SPDX-License-Identifier: BSD-3-Clause
// The matmul API's glue: the checks that do not depend on where the product runs (shapes,
// types, leading dimensions, strides, pointers), the handle's choice of backend, and dispatch to
// detail::Backend (src/api/backend.hpp). Rules are documented in docs/api.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/backend.hpp"
#include "spmma/detail/gemm_pairs.hpp"
#include "spmma/error.hpp"
#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma {

// ------------------------------------------------------------------ the type table

namespace detail {

// Every (A, B, C/D) combination the API describes: each row of the pair table
// (spmma/detail/gemm_pairs.hpp) with each of its C/D types and its accumulator. The CPU backend
// runs all of them; a GPU backend runs the rows its Backend::runs accepts.
const std::vector<TypeCombo>& api_type_combos() {
  static const std::vector<TypeCombo> table = [] {
    std::vector<TypeCombo> t;
    for (const GemmPair& p : kGemmPairs)
      for (ElemType cd : gemm_outputs(p.a)) t.push_back({p.a, p.b, cd, gemm_accumulator(p.a)});
    return t;
  }();
  return table;
}

OperandLayout operand_layout(const MatmulDesc& d) {
  const bool brow = d.b_order == Order::row_major, cdrow = d.cd_order == Order::row_major;
  OperandLayout l;
  l.ldb = d.ldb ? d.ldb : (brow ? d.n : d.k);
  l.ldc = d.ldc ? d.ldc : (cdrow ? d.n : d.m);
  l.ldd = d.ldd ? d.ldd : (cdrow ? d.n : d.m);
  if (d.batch > 1) {
    l.stride_b = d.stride_b ? d.stride_b : l.ldb * (brow ? d.k : d.n);
    l.stride_c = d.stride_c ? d.stride_c : l.ldc * (cdrow ? d.m : d.n);
    l.stride_d = d.stride_d ? d.stride_d : l.ldd * (cdrow ? d.m : d.n);
  }
  return l;
}

}  // namespace detail

namespace {

std::string str(ElemType t) { return std::string(type_name(t)); }
std::string str(int64_t v) { return std::to_string(v); }

std::string join_types(const std::vector<ElemType>& ts) {
  std::string s;
  for (ElemType t : ts) s += (s.empty() ? "" : ", ") + str(t);
  return s;
}

template <class T>
void push_unique(std::vector<T>& v, T x) {
  for (const T& y : v)
    if (y == x) return;
  v.push_back(x);
}

// Elements of dense K per sparse MMA step: K·bits(a_type) must be a multiple of 512 bits, i.e.
// 64 bytes of a dense row of A (32 bytes compressed). That is the K of the largest sparse
// instruction of each type (mma.sp m16n8k16 tf32, k32 f16/bf16, k64 fp8/int8, k128 int4; the
// wgmma.sp K is the same), and always a multiple of the pattern's chunk (2, 4 or 8).
int64_t k_step(ElemType a) { return 512 / type_info(a).bits; }

bool is_4bit(ElemType t) { return type_info(t).bits == 4; }

int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail(Status::invalid_argument, what + " overflows 64 bits");
  return r;
}

constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();

void check_dim(const char* field, int64_t v) {
  if (v <= 0) fail(Status::invalid_argument, std::string("MatmulDesc.") + field + " = " + str(v) + " must be positive");
  if (v > kMaxDim)
    fail(Status::invalid_argument,
         std::string("MatmulDesc.") + field + " = " + str(v) + " is larger than 2^31 - 1 (the largest supported size)");
}

// The leading dimension of a matrix of `rows` x `cols` in `order`: the packed value is cols
// (row-major) or rows (column-major).
int64_t check_ld(const char* field, int64_t ld, Order order, int64_t rows, int64_t cols, const char* rows_name,
                 const char* cols_name, const char* matrix, ElemType t) {
  const bool row = order == Order::row_major;
  const int64_t packed = row ? cols : rows;
  const std::string f = std::string("MatmulDesc.") + field;
  if (ld < 0) fail(Status::invalid_argument, f + " = " + str(ld) + " is negative (0 means packed)");
  if (ld > kMaxDim) fail(Status::invalid_argument, f + " = " + str(ld) + " is larger than 2^31 - 1");
  if (ld != 0 && ld < packed)
    fail(Status::invalid_argument, f + " = " + str(ld) + " is smaller than " + (row ? cols_name : rows_name) + " = " +
                                       str(packed) + " for a " + (row ? "row" : "column") + "-major " + matrix);
  const int64_t eff = ld == 0 ? packed : ld;
  if (is_4bit(t) && eff % 2 != 0)
    fail(Status::invalid_argument, f + " = " + str(ld) + (ld == 0 ? " (packed: " + str(eff) + ")" : "") +
                                       " must be even for the 4-bit type " + str(t) + ": each " +
                                       (row ? "row" : "column") + " of " + matrix + " starts on a byte");
  return eff;
}

// A batch stride: 0 = packed (one matrix after the other); else at least one matrix, so that
// batch entries never overlap. Ignored when batch == 1 (only its sign is checked).
void check_stride(const char* field, int64_t stride, int64_t batch, int64_t span, const std::string& span_text,
                  ElemType t) {
  const std::string f = std::string("MatmulDesc.") + field;
  if (stride < 0) fail(Status::invalid_argument, f + " = " + str(stride) + " is negative (0 means packed)");
  if (batch <= 1 || stride == 0) return;
  if (stride < span)
    fail(Status::invalid_argument, f + " = " + str(stride) + " is smaller than one matrix (" + span_text + " = " +
                                       str(span) + " elements): batch entries would overlap");
  if (is_4bit(t) && stride % 2 != 0)
    fail(Status::invalid_argument,
         f + " = " + str(stride) + " must be even for the 4-bit type " + str(t) + ": each batch entry starts on a byte");
}

void check_types(const MatmulDesc& d) {
  const auto& table = detail::api_type_combos();
  std::vector<ElemType> as, bs, cds;
  for (const TypeCombo& c : table) push_unique(as, c.a);
  bool a_ok = false;
  for (ElemType a : as) a_ok |= a == d.a_type;
  if (!a_ok)
    fail(Status::not_supported, "MatmulDesc.a_type = " + str(d.a_type) +
                                    " is not a sparse A type of spmma (supported: " + join_types(as) + ")");
  for (const TypeCombo& c : table)
    if (c.a == d.a_type) push_unique(bs, c.b);
  bool b_ok = false;
  for (ElemType b : bs) b_ok |= b == d.b_type;
  if (!b_ok)
    fail(Status::not_supported, "MatmulDesc.b_type = " + str(d.b_type) + " does not go with a_type = " + str(d.a_type) +
                                    " (b_type must be " + join_types(bs) + ")");
  for (const TypeCombo& c : table)
    if (c.a == d.a_type && c.b == d.b_type) push_unique(cds, c.cd);
  for (auto [field, t] : {std::pair{"c_type", d.c_type}, std::pair{"d_type", d.d_type}}) {
    bool ok = false;
    for (ElemType cd : cds) ok |= cd == t;
    if (!ok)
      fail(Status::not_supported, std::string("MatmulDesc.") + field + " = " + str(t) +
                                      " is not an output type for a_type = " + str(d.a_type) + ", b_type = " +
                                      str(d.b_type) + " (valid: " + join_types(cds) + ")");
  }
}

const SparseMatrix::Impl& need(const SparseMatrix& s, const char* what) {
  if (s.empty())
    fail(Status::invalid_argument, std::string(what) + ": the SparseMatrix is empty (default-constructed or moved from)");
  return s.impl();
}

int64_t a_count(const MatmulDesc& d) { return d.a_per_batch ? d.batch : 1; }

int elem_bytes(ElemType t) { return std::max(1, memory_bits(t) / 8); }

// The interchange form's sizes (interchange_layout, without validating desc again): they depend
// on type, pattern and shape only, as Compressed computes them.
CompressedLayout interchange_sizes(const MatmulDesc& desc) {
  Compressed shape;
  shape.type = desc.a_type;
  shape.pattern = pattern_for(desc.a_type);
  shape.rows = desc.m, shape.cols = desc.k;
  const auto count = static_cast<size_t>(a_count(desc));
  CompressedLayout l;
  l.name = "interchange";
  l.value_bytes = shape.value_bytes() * count;
  l.metadata_bytes = shape.metadata_bytes() * count;
  l.alignment = static_cast<size_t>(std::max(2, elem_bytes(desc.a_type)));  // 16-bit metadata words, whole elements
  return l;
}

std::unique_ptr<SparseMatrix::Impl> make_impl(const Handle& h, const MatmulDesc& desc,
                                              std::unique_ptr<detail::SparseStorage> storage) {
  if (!storage) fail(Status::internal, "backend returned no storage for a compressed A");
  auto impl = std::make_unique<SparseMatrix::Impl>();
  impl->backend = h.impl().backend;
  impl->desc = desc;
  impl->pattern = pattern_for(desc.a_type);
  const CompressedLayout x = interchange_sizes(desc);
  impl->value_bytes = x.value_bytes;
  impl->metadata_bytes = x.metadata_bytes;
  impl->storage = std::move(storage);
  return impl;
}

detail::Backend& backend_of(Handle& h) {
  if (!h.impl().backend) fail(Status::internal, "Handle has no backend");
  return *h.impl().backend;
}

std::string hex_address(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// The rule's text is made only for the message (Plan::run checks every call: no string work
// on the way of a valid one).
template <class Rule>
void check_aligned(const char* who, const char* what, const void* p, int64_t align, Rule&& rule) {
  if (reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(align) != 0)
    fail(Status::invalid_argument, std::string(who) + ": " + what + " = " + hex_address(p) + " is not " +
                                       str(align) + "-byte aligned (" + std::string(rule()) + ")");
}

// Bytes from a matrix's first element to the end of its last, over a batch of them.
size_t extent_bytes(int64_t rows, int64_t cols, int64_t ld, bool row_major, int64_t batch, int64_t stride, ElemType t) {
  int64_t elems = row_major ? (rows - 1) * ld + cols : (cols - 1) * ld + rows;
  if (batch > 1) elems += (batch - 1) * stride;
  return static_cast<size_t>((elems * memory_bits(t) + 7) / 8);
}

struct Range {
  const char* name;   // "b"
  const char* label;  // "Plan::run: b", for check_memory's messages
  const void* p;
  size_t bytes;
};
bool overlap(const Range& x, const Range& y) {
  const auto a = reinterpret_cast<uintptr_t>(x.p), b = reinterpret_cast<uintptr_t>(y.p);
  return x.p && y.p && x.bytes && y.bytes && a < b + y.bytes && b < a + x.bytes;
}

}  // namespace

// ------------------------------------------------------------------ MatmulDesc

void MatmulDesc::validate() const {
  check_dim("m", m);
  check_dim("n", n);
  check_dim("k", k);
  if (batch < 1) fail(Status::invalid_argument, "MatmulDesc.batch = " + str(batch) + " must be at least 1");
  if (batch > kMaxDim) fail(Status::invalid_argument, "MatmulDesc.batch = " + str(batch) + " is larger than 2^31 - 1");
  if (b_order != Order::row_major && b_order != Order::col_major)
    fail(Status::invalid_argument, "MatmulDesc.b_order = " + str(static_cast<int64_t>(b_order)) + " is not an Order");
  if (cd_order != Order::row_major && cd_order != Order::col_major)
    fail(Status::invalid_argument, "MatmulDesc.cd_order = " + str(static_cast<int64_t>(cd_order)) + " is not an Order");
  if (activation != Activation::none && activation != Activation::relu && activation != Activation::gelu)
    fail(Status::invalid_argument,
         "MatmulDesc.activation = " + str(static_cast<int64_t>(activation)) + " is not an Activation");

  check_types(*this);

  const int64_t step = k_step(a_type);
  if (k % step != 0)
    fail(Status::invalid_argument, "MatmulDesc.k = " + str(k) + " is not a multiple of " + str(step) +
                                       ": K must cover whole sparse MMA steps (K x bits(a_type) a multiple of 512; " +
                                       "a_type " + str(a_type) + " has " + str(int64_t{type_info(a_type).bits}) +
                                       " bits)");

  const int64_t eb = check_ld("ldb", ldb, b_order, k, n, "k", "n", "B", b_type);
  const int64_t ec = check_ld("ldc", ldc, cd_order, m, n, "m", "n", "C", c_type);
  const int64_t ed = check_ld("ldd", ldd, cd_order, m, n, "m", "n", "D", d_type);

  const bool brow = b_order == Order::row_major, cdrow = cd_order == Order::row_major;
  check_stride("stride_b", stride_b, batch, checked_mul(eb, brow ? k : n, "ldb x k"),
               brow ? "ldb x k" : "ldb x n", b_type);
  check_stride("stride_c", stride_c, batch, checked_mul(ec, cdrow ? m : n, "ldc x m"),
               cdrow ? "ldc x m" : "ldc x n", c_type);
  check_stride("stride_d", stride_d, batch, checked_mul(ed, cdrow ? m : n, "ldd x m"),
               cdrow ? "ldd x m" : "ldd x n", d_type);
  const int b_elem = std::max(1, memory_bits(b_type) / 8);
  if (b_alignment < b_elem || (b_alignment & (b_alignment - 1)) != 0)
    fail(Status::invalid_argument, "MatmulDesc.b_alignment = " + str(int64_t{b_alignment}) +
                                       " must be a power of two of at least B's element size (" + str(int64_t{b_elem}) +
                                       " byte" + (b_elem == 1 ? "" : "s") + " for " + str(b_type) + ")");
  // The byte extent of a batch must fit in 64 bits.
  for (auto [what, ld, rows, stride] :
       {std::tuple{"B", eb, brow ? k : n, stride_b}, std::tuple{"C", ec, cdrow ? m : n, stride_c},
        std::tuple{"D", ed, cdrow ? m : n, stride_d}}) {
    const int64_t one = checked_mul(ld, rows, std::string("one ") + what);
    checked_mul(stride == 0 ? one : stride, batch * 4, std::string("the batch of ") + what);
  }
}

// ------------------------------------------------------------------ SparseMatrix

SparseMatrix::SparseMatrix() = default;
SparseMatrix::~SparseMatrix() = default;
SparseMatrix::SparseMatrix(SparseMatrix&&) noexcept = default;
SparseMatrix& SparseMatrix::operator=(SparseMatrix&&) noexcept = default;
SparseMatrix::SparseMatrix(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ElemType SparseMatrix::type() const { return need(*this, "SparseMatrix::type").desc.a_type; }
Pattern SparseMatrix::pattern() const { return need(*this, "SparseMatrix::pattern").pattern; }
int64_t SparseMatrix::rows() const { return need(*this, "SparseMatrix::rows").desc.m; }
int64_t SparseMatrix::cols() const { return need(*this, "SparseMatrix::cols").desc.k; }
int64_t SparseMatrix::batch() const { return a_count(need(*this, "SparseMatrix::batch").desc); }
size_t SparseMatrix::value_bytes() const { return need(*this, "SparseMatrix::value_bytes").value_bytes; }
size_t SparseMatrix::metadata_bytes() const { return need(*this, "SparseMatrix::metadata_bytes").metadata_bytes; }
bool SparseMatrix::owns_memory() const { return need(*this, "SparseMatrix::owns_memory").storage->owns_memory(); }
bool SparseMatrix::on_device() const {
  const Impl& i = need(*this, "SparseMatrix::on_device");
  return i.storage && i.storage->on_device();
}
Compressed SparseMatrix::to_host(int64_t b) const {
  const Impl& i = need(*this, "SparseMatrix::to_host");
  const int64_t count = a_count(i.desc);
  if (b < 0 || b >= count)
    fail(Status::invalid_argument,
         "SparseMatrix::to_host(b = " + str(b) + "): batch entries are 0.." + str(count - 1));
  if (!i.storage) fail(Status::internal, "SparseMatrix has no storage");
  return i.storage->to_host(b);
}

// ------------------------------------------------------------------ Handle

namespace {
// The GPU backend, or null with `why` (no CUDA build, no device, kernels that do not load).
std::unique_ptr<detail::Backend> gpu_backend(int ordinal, std::string* why) {
#ifdef SPMMA_HAVE_CUDA
  return detail::make_gpu_backend(ordinal, why);
#else
  (void)ordinal;
  *why = "spmma was built without CUDA (SPMMA_WITH_CUDA=OFF or no nvcc)";
  return nullptr;
#endif
}
}  // namespace

Handle::Handle(Device d, int gpu_ordinal) : impl_(std::make_unique<Impl>()) {
  if (gpu_ordinal < -1)
    fail(Status::invalid_argument, "Handle: gpu_ordinal = " + str(int64_t{gpu_ordinal}) +
                                       " is not a CUDA device (-1 means the current device)");
  switch (d) {
    case Device::cpu: impl_->backend = detail::make_cpu_backend(); break;
    case Device::gpu: {
      std::string why;
      impl_->backend = gpu_backend(gpu_ordinal, &why);
      if (!impl_->backend) fail(Status::not_supported, "Device::gpu: no GPU: " + why);
      break;
    }
    case Device::automatic: {
      std::string why;
      impl_->backend = gpu_backend(gpu_ordinal, &why);
      if (!impl_->backend) {
        impl_->backend = detail::make_cpu_backend();
        impl_->fallback_reason = why;
      }
      break;
    }
    default: fail(Status::invalid_argument, "Handle: device = " + str(static_cast<int64_t>(d)) + " is not a Device");
  }
  if (!impl_->backend) fail(Status::internal, "Handle: backend construction returned nothing");
}
Handle::~Handle() = default;
Device Handle::device() const { return impl_->backend->device(); }
std::string Handle::device_name() const { return impl_->backend->name(); }
int Handle::compute_capability() const { return impl_->backend->compute_capability(); }
int Handle::gpu_ordinal() const { return impl_->backend->gpu_ordinal(); }
std::string Handle::fallback_reason() const { return impl_->fallback_reason; }

// ------------------------------------------------------------------ compress / upload

namespace {
// A dense A's row-major layout (compress, compress_into, decompress_into): lda and stride_a
// checked against desc; returns them effective (0 = packed resolved).
std::pair<int64_t, int64_t> check_a_layout(const char* who, const MatmulDesc& desc, int64_t lda, int64_t stride_a) {
  const std::string w = who;
  if (lda < 0) fail(Status::invalid_argument, w + ": lda = " + str(lda) + " is negative (0 means packed)");
  if (lda > kMaxDim) fail(Status::invalid_argument, w + ": lda = " + str(lda) + " is larger than 2^31 - 1");
  if (lda != 0 && lda < desc.k)
    fail(Status::invalid_argument, w + ": lda = " + str(lda) + " is smaller than k = " + str(desc.k) + " for the row-major A");
  const int64_t elda = lda == 0 ? desc.k : lda;
  if (is_4bit(desc.a_type) && elda % 2 != 0)
    fail(Status::invalid_argument, w + ": lda = " + str(lda) + " must be even for the 4-bit type " + str(desc.a_type) +
                                       ": each row of A starts on a byte");
  if (stride_a < 0) fail(Status::invalid_argument, w + ": stride_a = " + str(stride_a) + " is negative (0 means packed)");
  const int64_t count = a_count(desc);
  int64_t estride = stride_a;
  if (count > 1) {
    const int64_t span = checked_mul(elda, desc.m, "lda x m");
    if (stride_a == 0) estride = span;
    if (estride < span)
      fail(Status::invalid_argument, w + ": stride_a = " + str(stride_a) + " is smaller than one A (lda x m = " +
                                         str(span) + " elements): batch entries would overlap");
    if (is_4bit(desc.a_type) && estride % 2 != 0)
      fail(Status::invalid_argument, w + ": stride_a = " + str(stride_a) + " must be even for the 4-bit type " +
                                         str(desc.a_type) + ": each batch entry starts on a byte");
    checked_mul(estride, count * 4, "the batch of A");
  }
  return {elda, estride};
}

// compress's and compress_into's checks of A; returns the effective lda and stride_a.
std::pair<int64_t, int64_t> check_dense_a(detail::Backend& be, const char* who, const MatmulDesc& desc, const void* a,
                                          int64_t lda, int64_t stride_a, PruneMode mode) {
  desc.validate();
  const std::string w = who;
  if (mode != PruneMode::check && mode != PruneMode::magnitude)
    fail(Status::invalid_argument, w + ": mode = " + str(static_cast<int64_t>(mode)) + " is not a PruneMode");
  if (a == nullptr) fail(Status::invalid_argument, w + ": a is null");
  const auto [elda, estride] = check_a_layout(who, desc, lda, stride_a);
  check_aligned(who, "a", a, elem_bytes(desc.a_type), [&] {
    return "A's elements are " + str(desc.a_type) + ", " + str(int64_t{elem_bytes(desc.a_type)}) + " byte(s) each";
  });
  be.check_memory(a, extent_bytes(desc.m, desc.k, elda, true, a_count(desc), estride, desc.a_type), (w + ": a").c_str());
  return {elda, estride};
}

// Refuses a caller buffer that overlaps the buffers A's storage reads (borrowed ones).
void refuse_overlap_with_a(const SparseMatrix::Impl& a, const char* who, const char* name, const void* p, size_t bytes) {
  for (const auto& [sp, sb] : a.storage->spans())
    if (overlap(Range{name, name, p, bytes}, Range{"A", "A", sp, sb}))
      fail(Status::invalid_argument, std::string(who) + ": " + name + " overlaps A's own buffers");
}

// Caller-owned buffers of a layout: non-null, aligned, in the backend's memory, not overlapping.
void check_buffers(const detail::Backend& be, const char* who, const CompressedLayout& l, const void* values,
                   const void* metadata, const char* v_name = "values", const char* m_name = "metadata") {
  const std::string w = who;
  for (auto [p, name, bytes] : {std::tuple{values, v_name, l.value_bytes}, std::tuple{metadata, m_name, l.metadata_bytes}}) {
    if (p == nullptr) fail(Status::invalid_argument, w + ": " + name + " is null");
    check_aligned(who, name, p, static_cast<int64_t>(l.alignment), [&] {
      return "the " + l.name + " layout's buffers are " + str(static_cast<int64_t>(l.alignment)) + "-byte aligned";
    });
    be.check_memory(p, bytes, (w + ": " + name).c_str());
  }
  const Range rv{v_name, v_name, values, l.value_bytes}, rm{m_name, m_name, metadata, l.metadata_bytes};
  if (overlap(rv, rm))
    fail(Status::invalid_argument, w + ": " + v_name + " [" + hex_address(values) + ", +" +
                                       str(static_cast<int64_t>(l.value_bytes)) + " bytes) and " + m_name + " [" +
                                       hex_address(metadata) + ", +" + str(static_cast<int64_t>(l.metadata_bytes)) +
                                       " bytes) overlap");
}
}  // namespace

SparseMatrix compress(Handle& h, const MatmulDesc& desc, const void* a, int64_t lda, int64_t stride_a, PruneMode mode,
                      void* stream) {
  detail::Backend& be = backend_of(h);
  const auto [elda, estride] = check_dense_a(be, "compress", desc, a, lda, stride_a, mode);
  auto storage = be.compress(desc, a, elda, estride, mode, stream);
  return SparseMatrix(make_impl(h, desc, std::move(storage)));
}

CompressedLayout compressed_layout(const Handle& h, const MatmulDesc& desc) {
  desc.validate();
  if (!h.impl().backend) fail(Status::internal, "Handle has no backend");
  return h.impl().backend->layout(desc);
}

CompressedLayout interchange_layout(const MatmulDesc& desc) {
  desc.validate();
  return interchange_sizes(desc);
}

SparseMatrix compress_into(Handle& h, const MatmulDesc& desc, const void* a, int64_t lda, int64_t stride_a,
                           PruneMode mode, void* values, void* metadata, void* stream) {
  detail::Backend& be = backend_of(h);
  const auto [elda, estride] = check_dense_a(be, "compress_into", desc, a, lda, stride_a, mode);
  const CompressedLayout l = be.layout(desc);
  check_buffers(be, "compress_into", l, values, metadata);
  const Range ra{"a", "a", a, extent_bytes(desc.m, desc.k, elda, true, a_count(desc), estride, desc.a_type)};
  for (const Range& r : {Range{"values", "values", values, l.value_bytes}, Range{"metadata", "metadata", metadata, l.metadata_bytes}})
    if (overlap(ra, r)) fail(Status::invalid_argument, std::string("compress_into: ") + r.name + " overlaps a");
  auto storage = be.compress(desc, a, elda, estride, mode, stream, values, metadata);
  return SparseMatrix(make_impl(h, desc, std::move(storage)));
}

SparseMatrix import_into(Handle& h, const MatmulDesc& desc, const void* interchange_values,
                         const void* interchange_metadata, void* values, void* metadata, void* stream) {
  detail::Backend& be = backend_of(h);
  desc.validate();
  const CompressedLayout x = interchange_layout(desc), l = be.layout(desc);
  check_buffers(be, "import_into", x, interchange_values, interchange_metadata, "interchange_values",
                "interchange_metadata");
  check_buffers(be, "import_into", l, values, metadata);
  // On the CPU the two forms are one layout: the same buffers may be given (checked in place).
  if (l.name != x.name) {
    const Range in[] = {{"interchange_values", "", interchange_values, x.value_bytes},
                        {"interchange_metadata", "", interchange_metadata, x.metadata_bytes}};
    const Range out[] = {{"values", "", values, l.value_bytes}, {"metadata", "", metadata, l.metadata_bytes}};
    for (const Range& i : in)
      for (const Range& o : out)
        if (overlap(i, o)) fail(Status::invalid_argument, std::string("import_into: ") + o.name + " overlaps " + i.name);
  }
  auto storage = be.import_into(desc, interchange_values, interchange_metadata, values, metadata, stream);
  return SparseMatrix(make_impl(h, desc, std::move(storage)));
}

SparseMatrix borrow(Handle& h, const MatmulDesc& desc, const void* values, const void* metadata) {
  detail::Backend& be = backend_of(h);
  desc.validate();
  check_buffers(be, "borrow", be.layout(desc), values, metadata);
  auto storage = be.borrow(desc, values, metadata);
  return SparseMatrix(make_impl(h, desc, std::move(storage)));
}

void export_interchange(const SparseMatrix& a, void* values, void* metadata, void* stream) {
  const SparseMatrix::Impl& i = need(a, "export_interchange");
  const CompressedLayout x = interchange_layout(i.desc);
  check_buffers(*i.backend, "export_interchange", x, values, metadata);
  refuse_overlap_with_a(i, "export_interchange", "values", values, x.value_bytes);
  refuse_overlap_with_a(i, "export_interchange", "metadata", metadata, x.metadata_bytes);
  i.storage->export_interchange(values, metadata, stream);
}

void decompress_into(const SparseMatrix& a, void* dense, int64_t lda, int64_t stride_a, void* stream) {
  const SparseMatrix::Impl& i = need(a, "decompress_into");
  const MatmulDesc& d = i.desc;
  if (dense == nullptr) fail(Status::invalid_argument, "decompress_into: dense is null");
  const auto [elda, estride] = check_a_layout("decompress_into", d, lda, stride_a);
  check_aligned("decompress_into", "dense", dense, elem_bytes(d.a_type), [&] {
    return "A's elements are " + str(d.a_type) + ", " + str(int64_t{elem_bytes(d.a_type)}) + " byte(s) each";
  });
  const size_t bytes = extent_bytes(d.m, d.k, elda, true, a_count(d), estride, d.a_type);
  i.backend->check_memory(dense, bytes, "decompress_into: dense");
  refuse_overlap_with_a(i, "decompress_into", "dense", dense, bytes);
  i.storage->decompress_into(dense, elda, estride, stream);
}

SparseMatrix upload(Handle& h, const MatmulDesc& desc, const std::vector<Compressed>& per_batch) {
  desc.validate();
  const int64_t count = a_count(desc);
  if (static_cast<int64_t>(per_batch.size()) != count)
    fail(Status::invalid_argument, "upload: " + str(static_cast<int64_t>(per_batch.size())) +
                                       " compressed matrices given, expected " + str(count) +
                                       (desc.a_per_batch ? " (MatmulDesc.batch with a_per_batch)" : " (a shared A)"));
  const Pattern p = pattern_for(desc.a_type);
  for (int64_t b = 0; b < count; ++b) {
    const Compressed& c = per_batch[static_cast<size_t>(b)];
    const std::string where = "upload: per_batch[" + str(b) + "]";
    if (c.type != desc.a_type)
      fail(Status::invalid_argument, where + ".type = " + str(c.type) + " differs from MatmulDesc.a_type = " + str(desc.a_type));
    if (c.pattern != p)
      fail(Status::invalid_argument, where + ".pattern = " + pattern_info(c.pattern).name + ", the kernels need " +
                                         pattern_info(p).name + " for " + str(desc.a_type));
    if (c.rows != desc.m || c.cols != desc.k)
      fail(Status::invalid_argument, where + " is " + str(c.rows) + " x " + str(c.cols) + ", MatmulDesc says m x k = " +
                                         str(desc.m) + " x " + str(desc.k));
    if (c.values.type != c.type || c.values.rows != c.rows || c.values.cols != c.cols / 2 ||
        c.values.bits.size() != static_cast<size_t>(c.rows * (c.cols / 2)))
      fail(Status::invalid_argument, where + ".values is " + str(c.values.type) + " " + str(c.values.rows) + " x " +
                                         str(c.values.cols) + " (" + str(static_cast<int64_t>(c.values.bits.size())) +
                                         " elements), expected " + str(c.type) + " " + str(c.rows) + " x " +
                                         str(c.cols / 2));
    const auto words = static_cast<size_t>(c.rows * c.meta_words_per_row());
    if (c.metadata.size() != words)
      fail(Status::invalid_argument, where + ".metadata has " + str(static_cast<int64_t>(c.metadata.size())) +
                                         " words, expected rows x meta_words_per_row = " + str(static_cast<int64_t>(words)));
  }
  auto storage = backend_of(h).upload(desc, per_batch);
  return SparseMatrix(make_impl(h, desc, std::move(storage)));
}

// ------------------------------------------------------------------ Plan

Plan::Plan(Handle& h, const MatmulDesc& desc, const PlanOptions& options) : impl_(std::make_unique<Impl>()) {
  desc.validate();
  if (options.kernel != KernelFamily::automatic && options.kernel != KernelFamily::sm90 &&
      options.kernel != KernelFamily::sm80 && options.kernel != KernelFamily::decode)
    fail(Status::invalid_argument,
         "PlanOptions.kernel = " + str(static_cast<int64_t>(options.kernel)) + " is not a KernelFamily");
  if (options.grid != GridKind::automatic && options.grid != GridKind::persistent && options.grid != GridKind::per_tile)
    fail(Status::invalid_argument,
         "PlanOptions.grid = " + str(static_cast<int64_t>(options.grid)) + " is not a GridKind");
  if (options.tile_n < 0 || options.tile_m < 0 || options.issuers < 0 || options.splits < 0 || options.group_m < 0 ||
      options.cluster_m < 0 || options.promotion_k < 0)
    fail(Status::invalid_argument, "PlanOptions: tile_n = " + str(int64_t{options.tile_n}) + ", tile_m = " +
                                       str(int64_t{options.tile_m}) + ", issuers = " + str(int64_t{options.issuers}) +
                                       ", splits = " +
                                       str(int64_t{options.splits}) + ", group_m = " + str(int64_t{options.group_m}) +
                                       ", cluster_m = " + str(int64_t{options.cluster_m}) +
                                       ", promotion_k = " + str(int64_t{options.promotion_k}) +
                                       " must not be negative (0 leaves the choice to the heuristics)");
  detail::Backend& be = backend_of(h);
  // The combination must be a row the backend runs: the same predicate supported_types uses.
  for (auto [field, t] : {std::pair{"c_type", desc.c_type}, std::pair{"d_type", desc.d_type}}) {
    std::string why;
    if (!be.runs(TypeCombo{desc.a_type, desc.b_type, t, ElemType::f32}, &why))
      fail(Status::not_supported, std::string("MatmulDesc: a_type ") + str(desc.a_type) + ", b_type " + str(desc.b_type) +
                                      ", " + field + " " + str(t) + " does not run on " + be.name() + ": " + why);
  }
  impl_->desc = desc;
  impl_->layout = detail::operand_layout(desc);
  impl_->device = be.device();
  impl_->gpu_ordinal = be.gpu_ordinal();
  impl_->backend = h.impl().backend;
  impl_->kernel = be.plan(desc, options);
  if (!impl_->kernel) fail(Status::internal, "backend returned no kernel for a valid description");
}
Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;

namespace {
const Plan::Impl& need_plan(const std::unique_ptr<Plan::Impl>& p) {
  if (!p) fail(Status::invalid_argument, "Plan is empty (moved from)");
  return *p;
}

// Alignment, aliasing and memory-space rules of Plan::run's pointers (docs/api.md, "Pointers and
// alignment"), the same on both backends. c is null when C is not read (beta == 0).
void check_operands(const Plan::Impl& p, const void* b, const void* c, void* d, const float* bias, const float* srows,
                    const float* scols, void* ws) {
  const MatmulDesc& m = p.desc;
  const detail::OperandLayout& l = p.layout;
  const char* who = "Plan::run";
  const auto elem_rule = [](ElemType t) {
    return [t] { return "elements of " + str(t) + " are " + str(int64_t{elem_bytes(t)}) + " byte(s)"; };
  };
  check_aligned(who, "b", b, m.b_alignment, [&] {
    return m.b_alignment == elem_bytes(m.b_type) ? elem_rule(m.b_type)()
                                                 : "MatmulDesc.b_alignment = " + str(int64_t{m.b_alignment}) +
                                                       " promises it; plan with a smaller b_alignment for a less aligned B";
  });
  if (c) check_aligned(who, "c", c, elem_bytes(m.c_type), elem_rule(m.c_type));
  check_aligned(who, "d", d, elem_bytes(m.d_type), elem_rule(m.d_type));
  if (bias) check_aligned(who, "bias", bias, 4, [] { return "f32 values"; });
  if (srows) check_aligned(who, "scale_rows", srows, 4, [] { return "f32 values"; });
  if (scols) check_aligned(who, "scale_cols", scols, 4, [] { return "f32 values"; });
  if (ws) check_aligned(who, "workspace", ws, 16, [] { return "the kernels read B from it with 16-byte copies"; });

  const bool brow = m.b_order == Order::row_major, cdrow = m.cd_order == Order::row_major;
  const Range rb{"b", "Plan::run: b", b, extent_bytes(m.k, m.n, l.ldb, brow, m.batch, l.stride_b, m.b_type)};
  const Range rc{"c", "Plan::run: c", c, c ? extent_bytes(m.m, m.n, l.ldc, cdrow, m.batch, l.stride_c, m.c_type) : 0};
  const Range rd{"d", "Plan::run: d", d, extent_bytes(m.m, m.n, l.ldd, cdrow, m.batch, l.stride_d, m.d_type)};
  const Range rbias{"bias", "Plan::run: bias", bias, bias ? static_cast<size_t>(m.m) * 4 : 0};
  const Range rsr{"scale_rows", "Plan::run: scale_rows", srows,
                  srows ? static_cast<size_t>(m.a_per_batch ? m.batch : 1) * static_cast<size_t>(m.m) * 4 : 0};
  const Range rsc{"scale_cols", "Plan::run: scale_cols", scols,
                  scols ? static_cast<size_t>(m.batch) * static_cast<size_t>(m.n) * 4 : 0};
  const Range rws{"workspace", "Plan::run: workspace", ws, ws ? p.kernel->workspace_bytes() : 0};
  if (c == d) {
    if (m.c_type != m.d_type || l.ldc != l.ldd || l.stride_c != l.stride_d)
      fail(Status::invalid_argument,
           "Plan::run: c == d (in place) needs C and D of one type, leading dimension and stride; here C is " +
               str(m.c_type) + " ldc " + str(l.ldc) + " stride " + str(l.stride_c) + ", D is " + str(m.d_type) +
               " ldd " + str(l.ldd) + " stride " + str(l.stride_d));
  } else if (overlap(rc, rd)) {
    fail(Status::invalid_argument, "Plan::run: C [" + hex_address(c) + ", +" + std::to_string(rc.bytes) +
                                       " bytes) and D [" + hex_address(d) + ", +" + std::to_string(rd.bytes) +
                                       " bytes) overlap without being the same matrix (c == d)");
  }
  for (const Range& other : {rb, rbias, rsr, rsc, rws})
    if (overlap(rd, other))
      fail(Status::invalid_argument, std::string("Plan::run: D [") + hex_address(d) + ", +" + std::to_string(rd.bytes) +
                                         " bytes) overlaps " + other.name + " [" + hex_address(other.p) + ", +" +
                                         std::to_string(other.bytes) + " bytes): D is written while it is read");
  for (const Range& other : {rb, rc, rbias, rsr, rsc})
    if (overlap(rws, other))
      fail(Status::invalid_argument, std::string("Plan::run: the workspace overlaps ") + other.name);
  for (const Range& r : {rb, rc, rd, rbias, rsr, rsc, rws})
    if (r.p) p.backend->check_memory(r.p, r.bytes, r.label);
}
}  // namespace

size_t Plan::workspace_bytes() const { return need_plan(impl_).kernel->workspace_bytes(); }
std::string Plan::describe() const { return need_plan(impl_).kernel->describe(); }
PlanInfo Plan::info() const { return need_plan(impl_).kernel->info(); }
const MatmulDesc& Plan::desc() const { return need_plan(impl_).desc; }

void Plan::run(const SparseMatrix& a, const void* b, const void* c, void* d, float alpha, float beta, const float* bias,
               void* workspace, void* stream) const {
  EpilogueArgs e;
  e.alpha = alpha, e.beta = beta, e.c = c, e.bias = bias;
  run(a, b, d, e, workspace, stream);
}

void Plan::run(const SparseMatrix& a, const void* b, void* d, const EpilogueArgs& epi, void* workspace,
               void* stream) const {
  const float alpha = epi.alpha, beta = epi.beta;
  const void* c = epi.c;
  const float* bias = epi.bias;
  const Impl& p = need_plan(impl_);
  const MatmulDesc& desc = p.desc;
  const SparseMatrix::Impl& ai = need(a, "Plan::run");
  if (ai.desc.a_type != desc.a_type)
    fail(Status::invalid_argument,
         "Plan::run: A is " + str(ai.desc.a_type) + ", the plan's MatmulDesc.a_type is " + str(desc.a_type));
  if (ai.desc.m != desc.m || ai.desc.k != desc.k)
    fail(Status::invalid_argument, "Plan::run: A is " + str(ai.desc.m) + " x " + str(ai.desc.k) +
                                       ", the plan's m x k is " + str(desc.m) + " x " + str(desc.k));
  const int64_t want = a_count(desc);
  if (a.batch() != want)
    fail(Status::invalid_argument, "Plan::run: A holds " + str(a.batch()) + " batch entr" +
                                       (a.batch() == 1 ? "y" : "ies") + ", the plan needs " + str(want) +
                                       (desc.a_per_batch ? " (a_per_batch, batch = " + str(desc.batch) + ")"
                                                         : " (a shared A)"));
  const bool gpu_plan = p.device == Device::gpu;
  if (a.on_device() != gpu_plan)
    fail(Status::invalid_argument, std::string("Plan::run: A was compressed for the ") +
                                       (a.on_device() ? "GPU" : "CPU") + ", the plan runs on the " +
                                       (gpu_plan ? "GPU" : "CPU"));
  if (gpu_plan && ai.storage->gpu_ordinal() != p.gpu_ordinal)
    fail(Status::invalid_argument, "Plan::run: A lives on CUDA device " + str(int64_t{ai.storage->gpu_ordinal()}) +
                                       ", the plan runs on device " + str(int64_t{p.gpu_ordinal}) +
                                       " (compress or upload A with a Handle of the plan's device)");
  if (b == nullptr) fail(Status::invalid_argument, "Plan::run: b is null");
  if (d == nullptr) fail(Status::invalid_argument, "Plan::run: d is null");
  if (c == nullptr && beta != 0.0f)
    fail(Status::invalid_argument, "Plan::run: c is null but beta = " + std::to_string(beta) + " (c may be null only when beta == 0)");
  if (desc.bias && bias == nullptr) fail(Status::invalid_argument, "Plan::run: bias is null but MatmulDesc.bias is set");
  if (!desc.bias && bias != nullptr)
    fail(Status::invalid_argument, "Plan::run: bias is given but MatmulDesc.bias is false (set it in the plan's description)");
  for (auto [name, set, ptr] : {std::tuple{"scale_rows", desc.scale_rows, epi.scale_rows},
                                std::tuple{"scale_cols", desc.scale_cols, epi.scale_cols}}) {
    if (set && ptr == nullptr)
      fail(Status::invalid_argument, std::string("Plan::run: ") + name + " is null but MatmulDesc." + name + " is set");
    if (!set && ptr != nullptr)
      fail(Status::invalid_argument, std::string("Plan::run: ") + name + " is given but MatmulDesc." + name +
                                         " is false (set it in the plan's description)");
  }
  if (!type_info(desc.d_type).is_float) {
    for (auto [name, v] : {std::pair{"alpha", alpha}, std::pair{"beta", beta}})
      if (!std::isfinite(v))
        fail(Status::invalid_argument, std::string("Plan::run: ") + name + " = " + std::to_string(v) +
                                           " is not finite; the integer d_type " + str(desc.d_type) + " cannot hold it");
  }
  const size_t ws_bytes = p.kernel->workspace_bytes();
  if (workspace == nullptr && ws_bytes > 0)
    fail(Status::invalid_argument, "Plan::run: workspace is null, the plan needs " + std::to_string(ws_bytes) + " bytes");
  check_operands(p, b, beta != 0.0f ? c : nullptr, d, bias, epi.scale_rows, epi.scale_cols, ws_bytes ? workspace : nullptr);
  EpilogueArgs e = epi;
  if (beta == 0.0f) e.c = nullptr;
  p.kernel->run(a, b, d, e, workspace, stream);
}

// ------------------------------------------------------------------ supported_types

namespace {
std::vector<TypeCombo> runnable(const detail::Backend& be) {
  std::vector<TypeCombo> out;
  for (const TypeCombo& t : detail::api_type_combos())
    if (be.runs(t, nullptr)) out.push_back(t);
  return out;
}
}  // namespace

std::vector<TypeCombo> supported_types(const Handle& h) { return runnable(*h.impl().backend); }

std::vector<TypeCombo> supported_types(Device d) {
  switch (d) {
    case Device::cpu: return runnable(*detail::make_cpu_backend());
    case Device::gpu: {
      std::string why;
      if (auto g = gpu_backend(-1, &why)) return runnable(*g);
      return {};
    }
    case Device::automatic: return supported_types(Handle(Device::automatic));
  }
  fail(Status::invalid_argument, "supported_types: device = " + str(static_cast<int64_t>(d)) + " is not a Device");
}

}  // namespace spmma
