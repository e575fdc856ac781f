// SPDX-License-Identifier: BSD-3-Clause
// The CPU backend: the whole matmul API on the host, for machines without a GPU and as the
// reference the GPU backend is compared with.
//
// Storage: one host Compressed (include/spmma/sparse.hpp, whole-matrix layout) per stored batch
// entry of A.
//
// compress: the dense A is read element by element from its memory form (bit patterns in the
// type's width: 4 bytes tf32, 2 bytes f16/bf16, 1 byte fp8/s8/u8, 4-bit s4/u4 two per byte, low
// nibble first) into a Matrix, then require_pattern (PruneMode::check) or prune_magnitude, then
// spmma::compress (ordered metadata).
//
// run, float A (f16, bf16, tf32, e4m3, e5m2): A is decompressed and decoded to f32, B decoded
// to f32 (both exact: every such value is an f32), and the dense product A·B computed by the
// BLAS (cblas_sgemm, f32 accumulation, multi-threaded by OpenBLAS). The tensor cores read B only
// at the positions A's metadata names, so an Inf or NaN in B elsewhere never reaches D, while
// the dense product would give 0·Inf = NaN: columns of B holding a non-finite value are
// therefore summed over the named positions only (padding slots included: their stored zero
// times Inf is NaN, as on the hardware). Integer A (s8, u8, s4, u4):
// exact dot products (int32 partial sums of at most 2^14 products, summed in int64), taken modulo
// 2^32 as an s32 — what the tensor cores' s32 accumulator holds — in row blocks on std::threads.
// Epilogue: include/spmma/detail/epilogue.hpp, the one definition the GPU kernels use too:
//   v = fma(alpha·s_row·s_col, acc, bias);  if (beta != 0) v = fma(beta, C, v);  v = act(v)
//   in f32 (double where C or D is s32), then D = encode(d_type, v) (RNE; f16/bf16/f32 overflow
//   to ±Inf; e4m3/e5m2 saturate to their largest finite value; s32/s8 saturate, NaN -> 0)
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iterator>
#include <mutex>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/backend.hpp"
#include "spmma/detail/epilogue.hpp"
#include "spmma/error.hpp"
#include "spmma/matmul.hpp"
#include "spmma/matrix.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma::detail {
namespace {

// ------------------------------------------------------------------ threads

int hw_threads() {
  const unsigned t = std::thread::hardware_concurrency();
  return t == 0 ? 1 : static_cast<int>(t);
}

// Runs f(begin, end) over contiguous ranges covering [0, n). `work_per_item` is a rough cost of
// one item (e.g. multiply-adds): small jobs stay on the calling thread. An exception from any
// range is rethrown on the caller after all threads joined.
template <class F>
void parallel_for(int64_t n, double work_per_item, F&& f) {
  constexpr double kMinWorkPerThread = 1 << 18;
  if (n <= 0) return;
  int64_t t = static_cast<int64_t>(static_cast<double>(n) * work_per_item / kMinWorkPerThread);
  t = std::clamp<int64_t>(t, 1, std::min<int64_t>(hw_threads(), n));
  if (t == 1) {
    f(int64_t{0}, n);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(t));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(t - 1));
  auto body = [&](int64_t i) {
    try {
      f(n * i / t, n * (i + 1) / t);
    } catch (...) {
      errors[static_cast<size_t>(i)] = std::current_exception();
    }
  };
  for (int64_t i = 1; i < t; ++i) threads.emplace_back(body, i);
  body(0);
  for (std::thread& th : threads) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// ------------------------------------------------------------------ elements in memory

// Width of one element in memory (spmma::memory_bits): 4, 8, 16 or 32 for every type the API takes.
int mem_bits(ElemType t) {
  const int b = memory_bits(t);
  if (b != 4 && b != 8 && b != 16 && b != 32)
    fail(Status::internal, "cpu backend: no memory form for " + std::string(type_name(t)));
  return b;
}

// decode(t, i) for every pattern i of a type of at most 16 bits; built once per type.
const std::vector<double>& value_table(ElemType t) {
  constexpr size_t kTypes = std::size(kAllElemTypes);
  static std::once_flag once[kTypes];
  static std::vector<double> tables[kTypes];
  const auto i = static_cast<size_t>(t);
  std::call_once(once[i], [&] {
    std::vector<double>& tab = tables[i];
    tab.resize(size_t{1} << type_info(t).bits);
    for (size_t p = 0; p < tab.size(); ++p) tab[p] = decode(t, p);
  });
  return tables[i];
}

// Bit pattern -> exact value: a table for types of at most 16 bits.
class Decoder {
 public:
  explicit Decoder(ElemType t) : type_(t), bits_(mem_bits(t)) {
    if (bits_ <= 16) table_ = value_table(t).data();
  }
  int bits() const { return bits_; }
  double operator()(uint64_t b) const {
    if (table_ != nullptr) return table_[b];
    const auto u = static_cast<uint32_t>(b);
    switch (type_) {
      case ElemType::s32: return static_cast<int32_t>(u);
      case ElemType::f32: {
        float f;
        std::memcpy(&f, &u, 4);
        return f;
      }
      default: return decode(type_, b);  // tf32: drops the low 13 mantissa bits
    }
  }

 private:
  ElemType type_;
  int bits_;
  const double* table_ = nullptr;
};

const char* act_name(Activation a) {
  switch (a) {
    case Activation::relu: return "relu";
    case Activation::gelu: return "gelu";
    default: return "none";
  }
}

// ------------------------------------------------------------------ storage

// One host Compressed per stored batch entry (owned), or caller-owned buffers in the interchange
// form that a Compressed is unpacked from at each use (borrowed: compress_into, import_into,
// borrow). The unpacking costs about what run's decompress of the same entry costs, and the
// caller's bytes are read as they are at the run, as on the GPU.
struct CpuStorage final : SparseStorage {
  std::vector<Compressed> entries;  // owned
  // borrowed
  const uint8_t* values = nullptr;
  const uint8_t* metadata = nullptr;
  ElemType type = ElemType::bf16;
  int64_t rows = 0, cols = 0, count = 0;
  size_t entry_values = 0, entry_metadata = 0;

  bool borrowed() const { return values != nullptr; }
  int64_t size() const { return borrowed() ? count : static_cast<int64_t>(entries.size()); }
  // Entry e: a reference to the owned one, or `tmp` unpacked from the caller's bytes.
  const Compressed& entry(int64_t e, Compressed& tmp) const {
    if (!borrowed()) return entries[static_cast<size_t>(e)];
    tmp = from_interchange(type, rows, cols, values + static_cast<size_t>(e) * entry_values,
                           metadata + static_cast<size_t>(e) * entry_metadata);
    return tmp;
  }

  bool on_device() const override { return false; }
  bool owns_memory() const override { return !borrowed(); }
  std::vector<std::pair<const void*, size_t>> spans() const override {
    if (!borrowed()) return {};  // spmma's own vectors: no caller buffer can overlap them
    return {{values, entry_values * static_cast<size_t>(count)}, {metadata, entry_metadata * static_cast<size_t>(count)}};
  }
  Compressed to_host(int64_t b) const override {
    if (b < 0 || b >= size())
      fail(Status::invalid_argument, "to_host: batch entry " + std::to_string(b) + " of " + std::to_string(size()));
    Compressed tmp;
    return entry(b, tmp);
  }
  void export_interchange(void* v, void* m, void* /*stream*/) const override {
    for (int64_t e = 0; e < size(); ++e) {
      Compressed tmp;
      const Compressed& c = entry(e, tmp);
      try {
        (void)decompress(c);  // a forbidden nibble in borrowed bytes: reported, not exported
      } catch (const Error& err) {
        fail(err.code(), "export_interchange: batch entry " + std::to_string(e) + ": " + err.what());
      }
      to_interchange(c, static_cast<uint8_t*>(v) + static_cast<size_t>(e) * c.value_bytes(),
                     static_cast<uint8_t*>(m) + static_cast<size_t>(e) * c.metadata_bytes());
    }
  }
  void decompress_into(void* dense, int64_t lda, int64_t stride, void* /*stream*/) const override {
    for (int64_t e = 0; e < size(); ++e) {
      Compressed tmp;
      const Compressed& c = entry(e, tmp);
      Matrix d;
      try {
        d = decompress(c);
      } catch (const Error& err) {
        fail(err.code(), "decompress_into: batch entry " + std::to_string(e) + ": " + err.what());
      }
      const int bits = memory_bits(c.type);
      for (int64_t r = 0; r < d.rows; ++r)
        for (int64_t col = 0; col < d.cols; ++col) store_element(dense, e * stride + r * lda + col, bits, d.at(r, col));
    }
  }
};

// ------------------------------------------------------------------ kernel

class CpuKernel final : public Kernel {
 public:
  explicit CpuKernel(const MatmulDesc& d)
      : d_(d), a_dec_(d.a_type), b_dec_(d.b_type), c_dec_(d.c_type), d_bits_(mem_bits(d.d_type)) {
    const OperandLayout l = operand_layout(d);
    ldb_ = l.ldb, ldc_ = l.ldc, ldd_ = l.ldd;
    sb_ = l.stride_b, sc_ = l.stride_c, sd_ = l.stride_d;
    integer_ = !type_info(d.a_type).is_float;
    int_out_ = !type_info(d.d_type).is_float;
  }

  size_t workspace_bytes() const override { return 0; }

  std::string describe() const override {
    std::string s = "cpu: ";
    s += integer_ ? "exact integer dot products (s32 accumulator), " + std::to_string(hw_threads()) + " threads"
                  : std::string("A decompressed to f32, cblas_sgemm (f32 accumulation)");
    s += std::string("; epilogue in ") +
         (epilogue_in_double(d_.c_type == ElemType::s32, d_.d_type == ElemType::s32) ? "f64" : "f32") + " -> " +
         std::string(type_name(d_.d_type));
    s += std::string(", activation ") + act_name(d_.activation);
    if (d_.bias) s += ", bias";
    if (!integer_) s += "; columns of B with Inf/NaN summed over A's named positions only (as the tensor cores)";
    return s;
  }

  PlanInfo info() const override {
    PlanInfo i;
    i.device = Device::cpu;
    return i;
  }

  void run(const SparseMatrix& a, const void* b, void* d, const EpilogueArgs& e, void* /*workspace*/,
           void* /*stream*/) const override {
    const auto* st = dynamic_cast<const CpuStorage*>(a.impl().storage.get());
    if (st == nullptr) fail(Status::invalid_argument, "cpu: A is not in host memory (compressed by another backend)");
    if (integer_)
      run_int(*st, b, d, e);
    else
      run_float(*st, b, d, e);
  }

 private:
  int64_t cd_index(int64_t i, int64_t j, int64_t ld) const {
    return d_.cd_order == Order::row_major ? i * ld + j : j * ld + i;
  }

  // B entry e as values, with B(kk, j) at out[kk·n + j] (transposed = false) or out[j·k + kk].
  template <class T>
  void load_b(const void* b, int64_t e, bool transposed, std::vector<T>& out) const {
    const int64_t n = d_.n, k = d_.k, base = e * sb_;
    const bool brow = d_.b_order == Order::row_major;
    parallel_for(k, static_cast<double>(n) * 4, [&](int64_t k0, int64_t k1) {
      for (int64_t kk = k0; kk < k1; ++kk)
        for (int64_t j = 0; j < n; ++j) {
          const int64_t src = base + (brow ? kk * ldb_ + j : j * ldb_ + kk);
          out[static_cast<size_t>(transposed ? j * k + kk : kk * n + j)] =
              static_cast<T>(b_dec_(load_element(b, src, b_dec_.bits())));
        }
    });
  }

  // A entry as values, m x k row-major.
  template <class T>
  void load_a(const Compressed& entry, std::vector<T>& out) const {
    const Matrix dense = decompress(entry);
    parallel_for(d_.m, static_cast<double>(d_.k) * 4, [&](int64_t r0, int64_t r1) {
      for (size_t i = static_cast<size_t>(r0 * d_.k); i < static_cast<size_t>(r1 * d_.k); ++i)
        out[i] = static_cast<T>(a_dec_(dense.bits[i]));
    });
  }

  // D entry e from the accumulator acc(i, j) (a double holding the f32 or s32 sum exactly), in
  // the epilogue's arithmetic: f32, or double where C or D is s32 (detail/epilogue.hpp).
  template <class Acc>
  void epilogue(int64_t e, Acc&& acc, void* d, const EpilogueArgs& ea) const {
    if (epilogue_in_double(d_.c_type == ElemType::s32, d_.d_type == ElemType::s32))
      epilogue_in<double>(e, acc, d, ea);
    else
      epilogue_in<float>(e, acc, d, ea);
  }
  // The scale of element (i, j): alpha · s_row[i] · s_col[j], left to right in Real (a missing
  // vector multiplies by 1, exactly), as the GPU's gemm::scale_of.
  template <class Real, class Acc>
  void epilogue_in(int64_t e, Acc& acc, void* d, const EpilogueArgs& ea) const {
    const int64_t n = d_.n;
    const TypeInfo& dt = type_info(d_.d_type);
    const Real beta = ea.beta;
    const float* bias = ea.bias;
    const float* srow = ea.scale_rows ? ea.scale_rows + (d_.a_per_batch ? e * d_.m : 0) : nullptr;
    const float* scol = ea.scale_cols ? ea.scale_cols + e * n : nullptr;
    parallel_for(d_.m, static_cast<double>(n) * 40, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const Real cv = beta != Real(0)
                              ? static_cast<Real>(c_dec_(load_element(ea.c, e * sc_ + cd_index(i, j, ldc_), c_dec_.bits())))
                              : Real(0);
          Real scale = ea.alpha;
          if (srow) scale *= srow[i];
          if (scol) scale *= scol[j];
          const Real v = epilogue_value<Real>(static_cast<Real>(acc(i, j)), scale, beta, cv, bias != nullptr,
                                              bias ? bias[i] : 0.f, static_cast<int>(d_.activation));
          const double out = int_out_ ? static_cast<double>(to_integer_output<Real>(
                                            v, static_cast<int32_t>(dt.min_value), static_cast<int32_t>(dt.max_finite)))
                                      : static_cast<double>(v);
          store_element(d, e * sd_ + cd_index(i, j, ldd_), d_bits_, encode(d_.d_type, out));
        }
    });
  }

  void run_float(const CpuStorage& st, const void* b, void* d, const EpilogueArgs& ea) const {
    const int64_t m = d_.m, n = d_.n, k = d_.k;
    const bool brow = d_.b_order == Order::row_major;
    std::vector<float> av(static_cast<size_t>(m * k)), bv(static_cast<size_t>(k * n)), acc(static_cast<size_t>(m * n));
    Compressed entry_tmp;
    const Compressed* entry = nullptr;
    int64_t loaded = -1;
    for (int64_t e = 0; e < d_.batch; ++e) {
      const int64_t ai = d_.a_per_batch ? e : 0;
      if (ai != loaded) {
        entry = &st.entry(ai, entry_tmp);
        load_a(*entry, av);
        loaded = ai;
      }
      load_b(b, e, /*transposed=*/!brow, bv);  // B's own order: k x n or n x k, packed
      cblas_sgemm(CblasRowMajor, CblasNoTrans, brow ? CblasNoTrans : CblasTrans, static_cast<int>(m),
                  static_cast<int>(n), static_cast<int>(k), 1.0f, av.data(), static_cast<int>(k), bv.data(),
                  static_cast<int>(brow ? n : k), 0.0f, acc.data(), static_cast<int>(n));
      resum_nonfinite_columns(*entry, av, bv, !brow, acc);
      epilogue(
          e, [&](int64_t i, int64_t j) { return static_cast<double>(acc[static_cast<size_t>(i * n + j)]); }, d, ea);
    }
  }

  // Columns j of B holding an Inf or NaN: acc(i, j) again, over the positions A's metadata names
  // in row i (those the tensor cores read), instead of every k. b holds B(kk, j) at
  // b[kk·n + j] (transposed = false) or b[j·k + kk].
  void resum_nonfinite_columns(const Compressed& entry, const std::vector<float>& a, const std::vector<float>& b,
                               bool transposed, std::vector<float>& acc) const {
    const int64_t m = d_.m, n = d_.n, k = d_.k;
    const auto bat = [&](int64_t kk, int64_t j) { return b[static_cast<size_t>(transposed ? j * k + kk : kk * n + j)]; };
    std::vector<int64_t> cols;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk)
        if (!std::isfinite(bat(kk, j))) {
          cols.push_back(j);
          break;
        }
    if (cols.empty()) return;
    // Named positions: decompress a copy whose stored values are all non-zero markers.
    Compressed marks = entry;
    const uint64_t one = encode(entry.type, 1.0);
    for (auto& v : marks.values.bits) v = one;
    const Matrix named = decompress(marks);
    parallel_for(m, static_cast<double>(k) * static_cast<double>(cols.size()), [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t j : cols) {
          double sum = 0.0;
          for (int64_t kk = 0; kk < k; ++kk)
            if (named.at(i, kk) != 0) sum += static_cast<double>(a[static_cast<size_t>(i * k + kk)]) * bat(kk, j);
          acc[static_cast<size_t>(i * n + j)] = static_cast<float>(sum);
        }
    });
  }

  void run_int(const CpuStorage& st, const void* b, void* d, const EpilogueArgs& ea) const {
    const int64_t m = d_.m, n = d_.n, k = d_.k;
    // |product| <= 255·255, so 2^14 products fit an int32 partial sum.
    constexpr int64_t kPartial = int64_t{1} << 14;
    constexpr int64_t kColBlock = 64;  // columns of B (k values each) reused across a row block
    std::vector<int16_t> av(static_cast<size_t>(m * k)), bt(static_cast<size_t>(n * k));
    std::vector<int32_t> acc(static_cast<size_t>(m * n));
    Compressed entry_tmp;
    int64_t loaded = -1;
    for (int64_t e = 0; e < d_.batch; ++e) {
      const int64_t ai = d_.a_per_batch ? e : 0;
      if (ai != loaded) {
        load_a(st.entry(ai, entry_tmp), av);
        loaded = ai;
      }
      load_b(b, e, /*transposed=*/true, bt);  // n x k: each column of B contiguous
      parallel_for(m, static_cast<double>(n * k), [&](int64_t r0, int64_t r1) {
        for (int64_t j0 = 0; j0 < n; j0 += kColBlock)
          for (int64_t i = r0; i < r1; ++i) {
            const int16_t* ar = av.data() + i * k;
            for (int64_t j = j0; j < std::min(n, j0 + kColBlock); ++j) {
              const int16_t* bc = bt.data() + j * k;
              int64_t sum = 0;
              for (int64_t k0 = 0; k0 < k; k0 += kPartial) {
                int32_t part = 0;
                const int64_t k1 = std::min(k, k0 + kPartial);
                for (int64_t kk = k0; kk < k1; ++kk) part += int32_t{ar[kk]} * int32_t{bc[kk]};
                sum += part;
              }
              // Modulo 2^32, two's complement: the s32 accumulator of the tensor cores.
              acc[static_cast<size_t>(i * n + j)] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));
            }
          }
      });
      epilogue(
          e, [&](int64_t i, int64_t j) { return static_cast<double>(acc[static_cast<size_t>(i * n + j)]); }, d, ea);
    }
  }

  MatmulDesc d_;
  Decoder a_dec_, b_dec_, c_dec_;
  int d_bits_;
  int64_t ldb_ = 0, ldc_ = 0, ldd_ = 0, sb_ = 0, sc_ = 0, sd_ = 0;
  bool integer_ = false, int_out_ = false;
};

// ------------------------------------------------------------------ backend

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::cpu; }
  std::string name() const override { return "CPU (" + std::to_string(hw_threads()) + " threads)"; }
  int compute_capability() const override { return 0; }
  bool runs(const TypeCombo&, std::string*) const override { return true; }  // every row of the API's table

  void check_memory(const void* p, size_t /*bytes*/, const char* what) const override {
#ifdef SPMMA_HAVE_CUDA
    if (is_device_pointer(p))
      fail(Status::invalid_argument, std::string(what) + " is GPU memory; a CPU handle computes on host memory "
                                                         "(copy it to the host, or use a GPU Handle)");
#else
    (void)p, (void)what;
#endif
  }

  std::unique_ptr<Kernel> plan(const MatmulDesc& desc, const PlanOptions& o) override {
    if (o.kernel != KernelFamily::automatic || pins_kernel_choices(o))
      fail(Status::not_supported, "PlanOptions pin a GPU kernel's choices; the CPU backend has none (leave them 0 / "
                                  "automatic / dependent_launch true for a CPU handle)");
    // matmul.cpp validated the description against api_type_combos(): the CPU runs all of it.
    return std::make_unique<CpuKernel>(desc);
  }

  CompressedLayout layout(const MatmulDesc& desc) const override { return interchange_layout(desc); }

  std::unique_ptr<SparseStorage> compress(const MatmulDesc& desc, const void* a, int64_t lda, int64_t stride_a,
                                          PruneMode mode, void* /*stream*/, void* values, void* metadata) override {
    const int64_t count = desc.a_per_batch ? desc.batch : 1;
    const int bits = mem_bits(desc.a_type);
    auto st = std::make_unique<CpuStorage>();
    st->entries.resize(static_cast<size_t>(count));
    for (int64_t e = 0; e < count; ++e) {
      Matrix dense(desc.a_type, desc.m, desc.k);
      const int64_t base = e * stride_a;
      parallel_for(desc.m, static_cast<double>(desc.k) * 2, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t col = 0; col < desc.k; ++col) dense.at(r, col) = load_element(a, base + r * lda + col, bits);
      });
      if (mode == PruneMode::check) {
        if (auto v = check_pattern(dense))
          fail(Status::pattern_violation, "compress: A" + (count > 1 ? " batch entry " + std::to_string(e) : "") +
                                              ", " + v->message +
                                              " (PruneMode::check; PruneMode::magnitude prunes instead)");
      } else {
        dense = prune_magnitude(dense);
      }
      st->entries[static_cast<size_t>(e)] = spmma::compress(dense);
    }
    if (values == nullptr) return st;
    for (int64_t e = 0; e < count; ++e) {
      const Compressed& c = st->entries[static_cast<size_t>(e)];
      to_interchange(c, static_cast<uint8_t*>(values) + static_cast<size_t>(e) * c.value_bytes(),
                     static_cast<uint8_t*>(metadata) + static_cast<size_t>(e) * c.metadata_bytes());
    }
    return borrowed(desc, values, metadata);
  }

  std::unique_ptr<SparseStorage> import_into(const MatmulDesc& desc, const void* x_values, const void* x_metadata,
                                             void* values, void* metadata, void* /*stream*/) override {
    // Checked before anything is written: a bad nibble leaves the caller's buffers as they were.
    auto in = borrowed(desc, x_values, x_metadata);
    for (int64_t e = 0; e < in->count; ++e) {
      Compressed tmp;
      try {
        (void)decompress(in->entry(e, tmp));
      } catch (const Error& err) {
        fail(err.code(), "import_into" + (in->count > 1 ? ": batch entry " + std::to_string(e) : std::string()) + ": " +
                             err.what());
      }
    }
    const CompressedLayout l = interchange_layout(desc);
    std::memmove(values, x_values, l.value_bytes);  // the same buffers may be given
    std::memmove(metadata, x_metadata, l.metadata_bytes);
    return borrowed(desc, values, metadata);
  }

  std::unique_ptr<SparseStorage> borrow(const MatmulDesc& desc, const void* values, const void* metadata) override {
    return borrowed(desc, values, metadata);
  }

 private:
  static std::unique_ptr<CpuStorage> borrowed(const MatmulDesc& desc, const void* values, const void* metadata) {
    auto st = std::make_unique<CpuStorage>();
    st->values = static_cast<const uint8_t*>(values);
    st->metadata = static_cast<const uint8_t*>(metadata);
    st->type = desc.a_type;
    st->rows = desc.m, st->cols = desc.k;
    st->count = desc.a_per_batch ? desc.batch : 1;
    const CompressedLayout l = interchange_layout(desc);
    st->entry_values = l.value_bytes / static_cast<size_t>(st->count);
    st->entry_metadata = l.metadata_bytes / static_cast<size_t>(st->count);
    return st;
  }

  std::unique_ptr<SparseStorage> upload(const MatmulDesc& /*desc*/, const std::vector<Compressed>& per_batch) override {
    auto st = std::make_unique<CpuStorage>();
    st->entries = per_batch;
    // Check the metadata now (decompress throws invalid_value naming row, chunk and nibble),
    // rather than in the middle of a run.
    for (size_t e = 0; e < per_batch.size(); ++e) {
      try {
        (void)decompress(per_batch[e]);
      } catch (const Error& err) {
        fail(err.code(), "upload: per_batch[" + std::to_string(e) + "]: " + err.what());
      }
    }
    return st;
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace spmma::detail
