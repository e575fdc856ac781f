// SPDX-License-Identifier: BSD-3-Clause
// spmma._spmma: the matmul API (include/spmma/matmul.hpp) for Python, through nanobind. Arrays
// cross as DLPack views (nb::ndarray: numpy, PyTorch, anything with __dlpack__) of the raw bit
// patterns, their spmma type named beside them, so that one extension serves every framework and
// every torch build: nothing here links against a framework. Every output buffer and workspace,
// and the compressed weight itself (values and metadata in the layout of the device that runs
// it: matmul.hpp, "caller-owned memory"), is allocated by the caller (python/spmma/__init__.py: the framework's own allocator); a GPU
// call runs on the stream the caller names (an integer cudaStream_t, 0: the default stream).
// spmma::Error becomes ValueError (a bad argument or value, a pattern violation),
// NotImplementedError (a combination spmma does not run) or RuntimeError (CUDA, I/O, internal),
// with spmma's message.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "spmma/error.hpp"
#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"
#include "spmma/version.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using AnyArray = nb::ndarray<>;  // any DLPack view: spmma checks device, width and strides itself

constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAManaged = 13;

spmma::ElemType type_of(const std::string& name) { return spmma::parse_elem_type_or_throw(name); }

// The array's memory: "cpu" for host memory, else the CUDA device ordinal (>= 0).
int device_of(const AnyArray& a, const char* what) {
  switch (a.device_type()) {
    case kDLCPU: return -1;
    case kDLCUDA:
    case kDLCUDAManaged: return a.device_id();
    default:
      spmma::fail(spmma::Status::invalid_argument, std::string(what) + ": memory of DLPack device type " +
                                                       std::to_string(a.device_type()) + " (spmma takes CPU and CUDA memory)");
  }
}

// Bytes per element of an array holding type t's bit patterns (4-bit types: 1 byte per two).
void check_width(const AnyArray& a, spmma::ElemType t, const char* what) {
  const int bits = spmma::memory_bits(t);
  const int want = bits >= 8 ? bits / 8 : 1;
  if (static_cast<int>(a.itemsize()) != want)
    spmma::fail(spmma::Status::invalid_argument,
                std::string(what) + ": elements of " + std::to_string(a.itemsize()) + " bytes hold no " +
                    std::string(spmma::type_name(t)) + " values (" + std::to_string(want) + " byte" +
                    (want == 1 ? "" : "s") + " each" + (bits == 4 ? ", two 4-bit values per byte" : "") + ")");
}

// A handle per device, made once: CPU, or a CUDA ordinal.
spmma::Handle& handle_for(int device) {
  static std::vector<std::unique_ptr<spmma::Handle>> gpus;
  static std::unique_ptr<spmma::Handle> cpu;
  if (device < 0) {
    if (!cpu) cpu = std::make_unique<spmma::Handle>(spmma::Device::cpu);
    return *cpu;
  }
  if (static_cast<size_t>(device) >= gpus.size()) gpus.resize(static_cast<size_t>(device) + 1);
  auto& h = gpus[static_cast<size_t>(device)];
  if (!h) h = std::make_unique<spmma::Handle>(spmma::Device::gpu, device);
  return *h;
}

void* stream_of(uintptr_t s) { return reinterpret_cast<void*>(s); }

// The description of a weight alone (A: rows x k of type t): the first listed B and C/D types of
// its row stand in until a plan names x's and y's.
spmma::MatmulDesc weight_desc(spmma::ElemType t, int64_t rows, int64_t k) {
  spmma::MatmulDesc d;
  d.a_type = d.b_type = t, d.m = rows, d.k = k, d.n = 1;
  for (const auto& c : spmma::supported_types(spmma::Device::cpu))
    if (c.a == t) {
      d.b_type = c.b, d.c_type = d.d_type = c.cd;
      break;
    }
  return d;
}

// A compressed A and where it lives. A borrowed one (compress_into, import_into, borrow) keeps
// the framework's arrays it reads alive (an nb::ndarray holds a reference to its owner).
struct Sparse {
  spmma::SparseMatrix m;
  spmma::MatmulDesc desc;  // a_type, m, k (the rest is filled by each plan)
  int device = -1;
  std::optional<AnyArray> values, metadata;
};

// A 1-D uint8 array of exactly `bytes` bytes, contiguous (the layouts are flat byte buffers).
void check_bytes(const AnyArray& a, size_t bytes, const char* what, const std::string& layout) {
  if (a.itemsize() != 1 || a.ndim() < 1)
    spmma::fail(spmma::Status::invalid_argument, std::string(what) + ": a uint8 array is expected (the " + layout +
                                                     " layout's bytes), it has " + std::to_string(a.itemsize()) +
                                                     "-byte elements");
  size_t n = 1;
  int64_t expect_stride = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expect_stride)
      spmma::fail(spmma::Status::invalid_argument, std::string(what) + ": the array must be contiguous");
    expect_stride *= static_cast<int64_t>(a.shape(i));
    n *= a.shape(i);
  }
  if (n != bytes)
    spmma::fail(spmma::Status::invalid_argument, std::string(what) + ": " + std::to_string(n) + " bytes, the " + layout +
                                                     " layout of this weight has " + std::to_string(bytes));
}

std::string place(int device) { return device < 0 ? std::string("the CPU") : "cuda:" + std::to_string(device); }

// Refuses an array that is not on `device` (-1: the CPU), naming both places: "matmul: x is on
// the CPU, the weight on cuda:0".
void require_on(const AnyArray& a, int device, const std::string& what, const char* owner = "the weight") {
  const int dev = device_of(a, what.c_str());
  if (dev != device)
    spmma::fail(spmma::Status::invalid_argument, what + " is on " + place(dev) + ", " + owner + " on " + place(device));
}

// One of a weight's byte arrays: on `device`, exactly `bytes` bytes of `layout`.
void check_weight_array(const AnyArray& a, int device, size_t bytes, const std::string& what, const std::string& layout) {
  require_on(a, device, what);
  check_bytes(a, bytes, what.c_str(), layout);
}

spmma::PruneMode prune_mode(const std::string& mode) {
  if (mode == "magnitude") return spmma::PruneMode::magnitude;
  if (mode == "check") return spmma::PruneMode::check;
  spmma::fail(spmma::Status::invalid_argument, "compress: prune = '" + mode + "' (use 'magnitude' or 'check')");
}

// (layout name, value bytes, metadata bytes, alignment) of a rows x k weight of type t where
// `device` computes (-1: the CPU, whose layout is the interchange form).
std::tuple<std::string, size_t, size_t, size_t> layout_of(const std::string& a_type, int64_t rows, int64_t k, int device) {
  const spmma::CompressedLayout l = spmma::compressed_layout(handle_for(device), weight_desc(type_of(a_type), rows, k));
  return {l.name, l.value_bytes, l.metadata_bytes, l.alignment};
}

// The weight `a` compressed into the framework's arrays `values` / `metadata` (of layout_of's
// sizes, where `a` lives); the result borrows them.
Sparse compress_into(const AnyArray& a, const std::string& a_type, const std::string& mode, const AnyArray& values,
                     const AnyArray& metadata, uintptr_t stream) {
  if (a.ndim() != 2) spmma::fail(spmma::Status::invalid_argument, "compress: the weight must be 2-D (rows x K), it has " + std::to_string(a.ndim()) + " dimensions");
  const spmma::ElemType t = type_of(a_type);
  check_width(a, t, "compress: the weight");
  if (a.stride(1) != 1)
    spmma::fail(spmma::Status::invalid_argument, "compress: the weight's rows must be contiguous (stride " + std::to_string(a.stride(1)) + " along K)");
  Sparse s;
  s.device = device_of(a, "compress: the weight");
  const bool four = spmma::memory_bits(t) == 4;
  s.desc = weight_desc(t, static_cast<int64_t>(a.shape(0)), static_cast<int64_t>(a.shape(1)) * (four ? 2 : 1));
  spmma::Handle& h = handle_for(s.device);
  const spmma::CompressedLayout l = spmma::compressed_layout(h, s.desc);
  check_weight_array(values, s.device, l.value_bytes, "compress: values", l.name);
  check_weight_array(metadata, s.device, l.metadata_bytes, "compress: metadata", l.name);
  const spmma::PruneMode pm = prune_mode(mode);
  const int64_t lda = a.stride(0) * (four ? 2 : 1);
  {
    nb::gil_scoped_release release;
    s.m = spmma::compress_into(h, s.desc, a.data(), lda, 0, pm, values.data(), metadata.data(), stream_of(stream));
  }
  s.values = values, s.metadata = metadata;
  return s;
}

// The interchange form (x_values / x_metadata, where `values` lives) into the framework's arrays
// in that device's layout; every nibble checked. The result borrows values / metadata.
Sparse import_into(const std::string& a_type, int64_t rows, int64_t k, const AnyArray& x_values,
                   const AnyArray& x_metadata, const AnyArray& values, const AnyArray& metadata, uintptr_t stream) {
  Sparse s;
  s.device = device_of(values, "SparseWeight: values");
  s.desc = weight_desc(type_of(a_type), rows, k);
  spmma::Handle& h = handle_for(s.device);
  const spmma::CompressedLayout l = spmma::compressed_layout(h, s.desc), x = spmma::interchange_layout(s.desc);
  check_weight_array(x_values, s.device, x.value_bytes, "SparseWeight: the interchange values", x.name);
  check_weight_array(x_metadata, s.device, x.metadata_bytes, "SparseWeight: the interchange metadata", x.name);
  check_weight_array(values, s.device, l.value_bytes, "SparseWeight: values", l.name);
  check_weight_array(metadata, s.device, l.metadata_bytes, "SparseWeight: metadata", l.name);
  {
    nb::gil_scoped_release release;
    s.m = spmma::import_into(h, s.desc, x_values.data(), x_metadata.data(), values.data(), metadata.data(),
                             stream_of(stream));
  }
  s.values = values, s.metadata = metadata;
  return s;
}

// Arrays that hold a weight in their device's layout already (written by compress_into or
// import_into, or copied from such arrays on a device of the same layout). keep = false: the
// result does not keep the arrays alive (spmma.torch's cache of views, which drops a view when
// its tensors' storage dies); the caller guarantees they outlive it.
Sparse borrow(const std::string& a_type, int64_t rows, int64_t k, const AnyArray& values, const AnyArray& metadata,
              bool keep) {
  Sparse s;
  s.device = device_of(values, "SparseWeight: values");
  s.desc = weight_desc(type_of(a_type), rows, k);
  spmma::Handle& h = handle_for(s.device);
  const spmma::CompressedLayout l = spmma::compressed_layout(h, s.desc);
  check_weight_array(values, s.device, l.value_bytes, "SparseWeight: values", l.name);
  check_weight_array(metadata, s.device, l.metadata_bytes, "SparseWeight: metadata", l.name);
  s.m = spmma::borrow(h, s.desc, values.data(), metadata.data());
  if (keep) s.values = values, s.metadata = metadata;
  return s;
}

// The weight in the interchange form, into framework arrays where it lives.
void export_into(const Sparse& s, const AnyArray& x_values, const AnyArray& x_metadata, uintptr_t stream) {
  const spmma::CompressedLayout x = spmma::interchange_layout(s.desc);
  check_weight_array(x_values, s.device, x.value_bytes, "export: values", x.name);
  check_weight_array(x_metadata, s.device, x.metadata_bytes, "export: metadata", x.name);
  nb::gil_scoped_release release;
  spmma::export_interchange(s.m, x_values.data(), x_metadata.data(), stream_of(stream));
}

// The dense pruned weight (rows x k, packed, raw bits at the type's width) into a framework array
// where it lives.
void decompress_into(const Sparse& s, const AnyArray& dense, uintptr_t stream) {
  require_on(dense, s.device, "dense");
  const size_t bytes = static_cast<size_t>((s.desc.m * s.desc.k * spmma::memory_bits(s.desc.a_type) + 7) / 8);
  if (dense.nbytes() != bytes)
    spmma::fail(spmma::Status::invalid_argument, "dense: " + std::to_string(dense.nbytes()) + " bytes, the weight has " +
                                                     std::to_string(bytes));
  nb::gil_scoped_release release;
  spmma::decompress_into(s.m, dense.data(), 0, 0, stream_of(stream));
}

// A plan for Y = X·Wᵀ: D (M x N) = W (M x K) · Xᵀ (K x N), X (N x K, rows contiguous) read as a
// column-major B, Y (N x M, row-major) written as a column-major D. batch: X and Y hold `batch`
// matrices `stride_x` / `stride_y` elements apart (W shared).
struct LinearPlan {
  std::unique_ptr<spmma::Plan> plan;
  int device = -1;
};

LinearPlan make_plan(const Sparse& w, int64_t n, int64_t batch, int64_t ldx, int64_t stride_x, int64_t ldy,
                     int64_t stride_y, const std::string& x_type, const std::string& y_type, const std::string& activation,
                     bool bias, bool scale_rows, bool scale_cols) {
  spmma::MatmulDesc d = w.desc;
  d.n = n;
  d.b_type = type_of(x_type);
  d.c_type = d.d_type = type_of(y_type);
  d.b_order = spmma::Order::col_major, d.cd_order = spmma::Order::col_major;
  d.ldb = ldx, d.ldc = d.ldd = ldy;
  d.batch = batch, d.stride_b = stride_x, d.stride_c = d.stride_d = stride_y;
  if (activation == "none") d.activation = spmma::Activation::none;
  else if (activation == "relu") d.activation = spmma::Activation::relu;
  else if (activation == "gelu") d.activation = spmma::Activation::gelu;
  else spmma::fail(spmma::Status::invalid_argument, "matmul: activation = '" + activation + "' (use None, 'relu' or 'gelu')");
  d.bias = bias, d.scale_rows = scale_rows, d.scale_cols = scale_cols;
  LinearPlan p;
  p.device = w.device;
  p.plan = std::make_unique<spmma::Plan>(handle_for(w.device), d);
  return p;
}

const void* ptr_or_null(const std::optional<AnyArray>& a) { return a ? a->data() : nullptr; }

void run_plan(const LinearPlan& p, const Sparse& w, const AnyArray& x, AnyArray& y, float alpha, float beta,
              const std::optional<AnyArray>& c, const std::optional<AnyArray>& bias,
              const std::optional<AnyArray>& scale_rows, const std::optional<AnyArray>& scale_cols,
              const std::optional<AnyArray>& workspace, uintptr_t stream) {
  // Every buffer lives where the weight does (the plan checks alignment, sizes and overlaps).
  auto same = [&](const AnyArray& a, const char* what) { require_on(a, p.device, std::string("matmul: ") + what); };
  same(x, "x");
  same(y, "out");
  for (auto [a, what] : {std::pair{&c, "c"}, std::pair{&bias, "bias"}, std::pair{&scale_rows, "scale_row"},
                         std::pair{&scale_cols, "scale_col"}, std::pair{&workspace, "workspace"}})
    if (*a) same(**a, what);
  spmma::EpilogueArgs e;
  e.alpha = alpha, e.beta = beta;
  e.c = ptr_or_null(c);
  e.bias = static_cast<const float*>(ptr_or_null(bias));
  e.scale_rows = static_cast<const float*>(ptr_or_null(scale_rows));
  e.scale_cols = static_cast<const float*>(ptr_or_null(scale_cols));
  void* ws = workspace ? workspace->data() : nullptr;
  nb::gil_scoped_release release;
  p.plan->run(w.m, x.data(), y.data(), e, ws, stream_of(stream));
}

// The same from raw addresses (0: none), for the framework path of spmma.matmul, which has checked
// every tensor's type, shape and device itself: a DLPack export per tensor cost more than the
// kernel launch it feeds (decode shapes). The plan still checks each pointer's device and
// alignment and the buffers' overlaps.
void run_plan_ptrs(const LinearPlan& p, const Sparse& w, uintptr_t x, uintptr_t y, float alpha, float beta, uintptr_t c,
                   uintptr_t bias, uintptr_t scale_rows, uintptr_t scale_cols, uintptr_t workspace, uintptr_t stream) {
  spmma::EpilogueArgs e;
  e.alpha = alpha, e.beta = beta;
  e.c = reinterpret_cast<const void*>(c);
  e.bias = reinterpret_cast<const float*>(bias);
  e.scale_rows = reinterpret_cast<const float*>(scale_rows);
  e.scale_cols = reinterpret_cast<const float*>(scale_cols);
  nb::gil_scoped_release release;
  p.plan->run(w.m, reinterpret_cast<const void*>(x), reinterpret_cast<void*>(y), e, reinterpret_cast<void*>(workspace),
              stream_of(stream));
}

}  // namespace

NB_MODULE(_spmma, m) {
  m.doc() = "spmma's C++ API (private: use the spmma package)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const spmma::Error& e) {
      const std::string msg = std::string(e.what());
      switch (e.code()) {
        case spmma::Status::invalid_argument:
        case spmma::Status::invalid_value:
        case spmma::Status::pattern_violation: PyErr_SetString(PyExc_ValueError, msg.c_str()); break;
        case spmma::Status::not_supported: PyErr_SetString(PyExc_NotImplementedError, msg.c_str()); break;
        default: PyErr_SetString(PyExc_RuntimeError, msg.c_str()); break;
      }
    }
  });
  m.def("version", [] { return std::string(spmma::version()); });
  m.def("build_info", [] {
    const spmma::BuildInfo b = spmma::build_info();
    nb::dict d;
    d["version"] = b.version, d["commit"] = b.commit, d["cuda"] = b.cuda, d["cuda_version"] = b.cuda_version;
    d["architectures"] = b.architectures;
    return d;
  });
  m.def("device_name", [](int device) { return handle_for(device).device_name(); }, "device"_a);
  m.def("type_bits", [](const std::string& t) { return spmma::memory_bits(type_of(t)); }, "type"_a);
  m.def("supported_types", [](const std::string& device) {
    spmma::Device d = device == "cpu" ? spmma::Device::cpu : device == "cuda" ? spmma::Device::gpu : spmma::Device::automatic;
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    for (const auto& c : spmma::supported_types(d))
      out.emplace_back(std::string(spmma::type_name(c.a)), std::string(spmma::type_name(c.b)), std::string(spmma::type_name(c.cd)));
    return out;
  }, "device"_a);

  nb::class_<Sparse>(m, "SparseMatrix")
      .def_prop_ro("rows", [](const Sparse& s) { return s.m.rows(); })
      .def_prop_ro("cols", [](const Sparse& s) { return s.m.cols(); })
      .def_prop_ro("type", [](const Sparse& s) { return std::string(spmma::type_name(s.m.type())); })
      .def_prop_ro("device", [](const Sparse& s) { return s.device; })
      .def_prop_ro("value_bytes", [](const Sparse& s) { return s.m.value_bytes(); })
      .def_prop_ro("metadata_bytes", [](const Sparse& s) { return s.m.metadata_bytes(); })
      .def("export_into", &export_into, "x_values"_a, "x_metadata"_a, "stream"_a)
      .def("decompress_into", &decompress_into, "dense"_a, "stream"_a);
  m.def("layout", &layout_of, "a_type"_a, "rows"_a, "k"_a, "device"_a);
  m.def("compress_into", &compress_into, "a"_a, "a_type"_a, "mode"_a, "values"_a, "metadata"_a, "stream"_a);
  m.def("import_into", &import_into, "a_type"_a, "rows"_a, "k"_a, "x_values"_a, "x_metadata"_a, "values"_a,
        "metadata"_a, "stream"_a);
  m.def("borrow", &borrow, "a_type"_a, "rows"_a, "k"_a, "values"_a, "metadata"_a, "keep"_a = true);

  nb::class_<LinearPlan>(m, "Plan")
      .def_prop_ro("workspace_bytes", [](const LinearPlan& p) { return p.plan->workspace_bytes(); })
      .def("describe", [](const LinearPlan& p) { return p.plan->describe(); })
      .def("run", &run_plan, "w"_a, "x"_a, "y"_a, "alpha"_a, "beta"_a, "c"_a.none(), "bias"_a.none(),
           "scale_rows"_a.none(), "scale_cols"_a.none(), "workspace"_a.none(), "stream"_a)
      .def("run_ptrs", &run_plan_ptrs, "w"_a, "x"_a, "y"_a, "alpha"_a, "beta"_a, "c"_a, "bias"_a, "scale_rows"_a,
           "scale_cols"_a, "workspace"_a, "stream"_a);
  m.def("plan", &make_plan, "w"_a, "n"_a, "batch"_a, "ldx"_a, "stride_x"_a, "ldy"_a, "stride_y"_a, "x_type"_a,
        "y_type"_a, "activation"_a, "bias"_a, "scale_rows"_a, "scale_cols"_a);
}
