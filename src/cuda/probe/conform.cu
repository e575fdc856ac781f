// Conformance runner: random register contents through the generated probes, compared with
// the emulator register by register.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "probe/probe.cuh"
#include "spmma/conform.hpp"
#include "spmma/emulate.hpp"
#include "spmma/error.hpp"

namespace spmma::conform {
namespace {

using isa::Variant;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(Status::cuda_error, std::string(what) + ": " + cudaGetErrorString(e));
}

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(const std::vector<T>& host) : n(host.size()) {
    if (n == 0) return;
    check(cudaMalloc(&ptr, n * sizeof(T)), "cudaMalloc");
    check(cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  DeviceBuffer(size_t count, unsigned char poison) : n(count) {
    check(cudaMalloc(&ptr, n * sizeof(T)), "cudaMalloc");
    check(cudaMemset(ptr, poison, n * sizeof(T)), "cudaMemset");
  }
  ~DeviceBuffer() { if (ptr) cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::vector<T> download() const {
    std::vector<T> h(n);
    if (n) check(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return h;
  }
};

enum class TrialKind { exact, general, specials };

struct Trial {
  emu::WarpState state;
  TrialKind kind;
};

// ---------------------------------------------------------------- wgmma shared-memory images

// The canonical K-major layout without swizzle: 8-row x 16-byte core matrices, each 128
// contiguous bytes; core matrices adjacent in K are `lbo` apart, 8-row groups `sbo` apart.
struct KMajorLayout {
  int rows, kbytes, lbo, sbo;
  size_t bytes() const { return static_cast<size_t>(rows) * kbytes; }
  size_t offset(int row, int kbyte) const {
    return static_cast<size_t>(row / 8) * sbo + static_cast<size_t>(kbyte / 16) * lbo + (row % 8) * 16 + kbyte % 16;
  }
};

KMajorLayout kmajor(int rows, int kbytes) { return {rows, kbytes, 128, kbytes / 16 * 128}; }

// element (row, k) of a K-major operand: A is row-major (row = m), B is read as (n, k).
void write_image(std::vector<uint8_t>& img, const KMajorLayout& L, int elem_bits, int row, int k, uint64_t bits) {
  const int bytes = elem_bits / 8;
  const size_t off = L.offset(row, k * bytes);
  for (int i = 0; i < bytes; ++i) img[off + i] = static_cast<uint8_t>(bits >> (8 * i));
}

int elem_bits_of(ElemType t) { return t == ElemType::tf32 ? 32 : type_info(t).bits; }

// ---------------------------------------------------------------- comparison

struct Verdict {
  bool ok = true;
  double error = 0.0;
  std::string what;
};

bool same_special(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return x == y;
}

Verdict compare(const Variant& v, const Trial& t, const std::vector<uint64_t>& gpu, size_t offset) {
  Verdict r;
  const std::vector<uint64_t> want = emu::execute(v, t.state);
  const Matrix dg = emu::gather_d(v, std::vector<uint64_t>(gpu.begin() + offset, gpu.begin() + offset + want.size()));
  const Matrix de = emu::gather_d(v, want);
  // Scale of the rounding error: Σ|a·b| + |c| per element.
  const emu::MatrixOperands ops = emu::gather(v, t.state);
  const Matrix a = emu::dense_a(v, ops);
  const bool exact_kind = v.d == ElemType::s32 || v.bitop != isa::BitOp::none || t.kind != TrialKind::general;
  for (int64_t i = 0; i < de.rows; ++i)
    for (int64_t j = 0; j < de.cols; ++j) {
      const uint64_t g = dg.at(i, j), e = de.at(i, j);
      if (g == e) continue;
      const double x = decode(v.d, g), y = decode(v.d, e);
      if (exact_kind) {
        if (t.kind == TrialKind::specials && same_special(x, y)) continue;
        if (r.ok) {
          std::ostringstream s;
          s << "D[" << i << "][" << j << "] gpu " << x << " emulator " << y;
          r.what = s.str();
        }
        r.ok = false;
        continue;
      }
      double mag = 0.0;
      const int p = static_cast<int>(i / v.m);
      for (int k = 0; k < v.k; ++k)
        mag += std::fabs(a.value(i, k) * ops.b.value(static_cast<int64_t>(p) * v.k + k, j));
      if (ops.accumulate) mag += std::fabs(ops.c.value(i, j));
      const double err = (std::isfinite(x) && std::isfinite(y)) ? std::fabs(x - y) / std::max(mag, 1e-300) : INFINITY;
      r.error = std::max(r.error, err);
      // The spec leaves accumulation order and rounding open: accept what a sum of the
      // accumulator's precision could produce (a few units of its last place at the
      // magnitude of the terms).
      const double bound = v.d == ElemType::f16 ? std::ldexp(1.0, -8) : v.d == ElemType::f64 ? std::ldexp(1.0, -48)
                                                                                             : std::ldexp(1.0, -19);
      if (err > bound) {
        if (r.ok) {
          std::ostringstream s;
          s << "D[" << i << "][" << j << "] gpu " << x << " emulator " << y << " (error " << err << ")";
          r.what = s.str();
        }
        r.ok = false;
      }
    }
  return r;
}

// ---------------------------------------------------------------- trials

std::vector<Trial> make_trials(const Variant& v, const Options& o, std::mt19937_64& rng) {
  std::vector<Trial> trials;
  const int per = v.wgmma() ? o.wgmma_trials_per_selector : o.trials_per_selector;
  std::vector<int> selectors{0};
  if (v.sparse()) {
    selectors.clear();
    for (int s = 0; s < 4; ++s)
      if (v.meta->selector_valid(s)) selectors.push_back(s);
  }
  const bool float_sparse = v.sparse() && v.d != ElemType::s32;
  for (int s : selectors)
    for (TrialKind kind : {TrialKind::exact, TrialKind::general, TrialKind::specials}) {
      if (kind == TrialKind::specials && !float_sparse) continue;
      for (int i = 0; i < per; ++i) {
        Trial t{emu::random_state(v, rng, kind == TrialKind::general ? emu::Inputs::general : emu::Inputs::exact,
                                  v.sparse() ? std::optional<int>(s) : std::nullopt),
                kind};
        if (v.wgmma()) t.state.scale_d = (rng() & 3) != 0;
        if (kind == TrialKind::specials) {
          // Inf and NaN in B: where A's metadata names the row they must reach D (a stored
          // zero times Inf is NaN); where it does not, the hardware never reads them.
          const double specials[] = {INFINITY, -INFINITY, NAN};
          if (v.wgmma()) {
            for (auto& x : t.state.b_smem.bits)
              if (rng() % 8 == 0) x = encode(v.b, specials[rng() % 3]);
          } else {
            Matrix b = emu::gather(v, t.state).b;
            for (auto& x : b.bits)
              if (rng() % 8 == 0) x = encode(v.b, specials[rng() % 3]);
            t.state.b = emu::scatter(v, v.fb, b);
          }
        }
        trials.push_back(std::move(t));
      }
    }
  return trials;
}

Row run_variant(const Variant& v, const probe::ProbeEntry& e, const Options& o, int descriptor_mode,
                std::mt19937_64& rng) {
  Row row;
  row.id = v.id;
  const std::vector<Trial> trials = make_trials(v, o, rng);
  const int n = static_cast<int>(trials.size());
  const int th = v.threads();
  const bool a_regs = !v.wgmma() || v.a_source == isa::ASource::registers;
  std::vector<uint64_t> ha, hb, hc;
  std::vector<uint32_t> he, hsel, hscale;
  std::vector<uint8_t> img_a, img_b;
  probe::ProbeArgs args;
  KMajorLayout la{}, lb{};
  if (v.wgmma()) {
    la = kmajor(v.m, v.packed_k() * elem_bits_of(v.a) / 8);
    lb = kmajor(v.n, v.k * elem_bits_of(v.b) / 8);
    args.smem_a_bytes = a_regs ? 0 : static_cast<uint32_t>(la.bytes());
    args.smem_b_bytes = static_cast<uint32_t>(lb.bytes());
    // Mode 1 reads the two byte offsets the other way round: same image, fields swapped.
    const bool swap = descriptor_mode == 1;
    args.lbo_a = swap ? la.sbo : la.lbo, args.sbo_a = swap ? la.lbo : la.sbo;
    args.lbo_b = swap ? lb.sbo : lb.lbo, args.sbo_b = swap ? lb.lbo : lb.sbo;
  }
  for (const Trial& t : trials) {
    const auto& s = t.state;
    if (a_regs) ha.insert(ha.end(), s.a.begin(), s.a.end());
    hb.insert(hb.end(), s.b.begin(), s.b.end());
    hc.insert(hc.end(), s.c.begin(), s.c.end());
    if (v.sparse()) he.insert(he.end(), s.e.begin(), s.e.end());
    hsel.push_back(static_cast<uint32_t>(s.selector));
    hscale.push_back(s.scale_d ? 1u : 0u);
    if (v.wgmma()) {
      if (!a_regs) {
        std::vector<uint8_t> img(la.bytes(), 0);
        for (int r = 0; r < v.m; ++r)
          for (int k = 0; k < v.packed_k(); ++k) write_image(img, la, elem_bits_of(v.a), r, k, s.a_smem.at(r, k));
        img_a.insert(img_a.end(), img.begin(), img.end());
      }
      std::vector<uint8_t> img(lb.bytes(), 0);
      for (int k = 0; k < v.k; ++k)
        for (int nn = 0; nn < v.n; ++nn) write_image(img, lb, elem_bits_of(v.b), nn, k, s.b_smem.at(k, nn));
      img_b.insert(img_b.end(), img.begin(), img.end());
    }
  }
  DeviceBuffer<uint64_t> da(ha), db(hb), dc(hc);
  DeviceBuffer<uint32_t> de(he), dsel(hsel), dscale(hscale);
  DeviceBuffer<uint8_t> dia(img_a), dib(img_b);
  const size_t d_count = static_cast<size_t>(n) * th * v.fd.regs;
  DeviceBuffer<uint64_t> dd(d_count, 0xA5);  // poison: every register must be written
  args.a = da.ptr, args.b = db.ptr, args.c = dc.ptr, args.e = de.ptr, args.sel = dsel.ptr, args.scale_d = dscale.ptr;
  args.d = dd.ptr;
  args.trials = n;
  args.smem_a = dia.ptr, args.smem_b = dib.ptr;
  e.launch(args, std::min(n, 256));
  check(cudaGetLastError(), ("launch of probe for " + v.id).c_str());
  check(cudaDeviceSynchronize(), ("probe for " + v.id).c_str());
  const std::vector<uint64_t> gpu = dd.download();
  // Compare on all cores: the emulator is the slow part.
  std::vector<Verdict> verdicts(static_cast<size_t>(n));
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  const unsigned workers = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        try {
          verdicts[static_cast<size_t>(i)] = compare(v, trials[static_cast<size_t>(i)], gpu, static_cast<size_t>(i) * th * v.fd.regs);
        } catch (const std::exception& ex) {
          verdicts[static_cast<size_t>(i)] = Verdict{false, 0.0, std::string("emulator: ") + ex.what()};
        }
      }
    });
  for (auto& t : pool) t.join();
  row.trials = n;
  for (int i = 0; i < n; ++i) {
    const Verdict& vd = verdicts[static_cast<size_t>(i)];
    if (trials[static_cast<size_t>(i)].kind != TrialKind::general) ++row.exact_trials;
    row.max_error = std::max(row.max_error, vd.error);
    if (!vd.ok) {
      if (row.mismatches == 0) {
        const auto& s = trials[static_cast<size_t>(i)].state;
        row.note = "trial " + std::to_string(i) + " (selector " + std::to_string(s.selector) +
                   (trials[static_cast<size_t>(i)].kind == TrialKind::specials ? ", Inf/NaN in B" : "") + "): " + vd.what;
      }
      ++row.mismatches;
    }
  }
  return row;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

bool gpu_available(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? std::string("no CUDA GPU usable: ") + cudaGetErrorString(e) : "no CUDA GPU found";
    return false;
  }
  return true;
}

Report run(const Options& o) {
  std::string why;
  if (!gpu_available(&why)) fail(Status::not_supported, why);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  Report rep;
  rep.device = prop.name;
  rep.compute_capability = prop.major * 10 + prop.minor;
  rep.date = utc_now();
  std::mt19937_64 rng(o.seed);
  int descriptor_mode = -1;  // settled by the first wgmma probe with A by descriptor
  for (int i = 0; i < probe::kProbeCount; ++i) {
    const probe::ProbeEntry& e = probe::kProbes[i];
    if (!o.filter.empty() && std::string(e.id).find(o.filter) == std::string::npos) continue;
    const Variant& v = isa::variant_or_throw(e.id);
    if (!v.target.runs_on(rep.compute_capability)) {
      Row r;
      r.id = v.id;
      r.skipped = true;
      r.note = "needs " + v.target.name();
      rep.rows.push_back(r);
      continue;
    }
    if (v.wgmma() && descriptor_mode < 0) {
      // Try both readings of the descriptor's two byte offsets; keep the one the GPU agrees with.
      for (int mode : {0, 1}) {
        Row r = run_variant(v, e, o, mode, rng);
        if (r.mismatches == 0) {
          descriptor_mode = mode;
          rep.findings.push_back(std::string("wgmma descriptor, K-major without swizzle: the leading byte offset is the "
                                             "distance between core matrices adjacent in ") +
                                 (mode == 0 ? "K" : "M/N") + ", the stride byte offset between 8-row groups in " +
                                 (mode == 0 ? "M/N" : "K") + " (probe " + v.id + ")");
          break;
        }
      }
      if (descriptor_mode < 0) descriptor_mode = 0;
    }
    rep.rows.push_back(run_variant(v, e, o, std::max(descriptor_mode, 0), rng));
  }
  return rep;
}

}  // namespace spmma::conform
