// SPDX-License-Identifier: BSD-3-Clause
// spmma bench on the CPU (tools/bench_cpu.hpp).
#include "bench_cpu.hpp"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <new>
#include <random>
#include <string>

#include "spmma/error.hpp"
#include "spmma/matmul.hpp"
#include "spmma/matrix.hpp"
#include "spmma/sparse.hpp"

namespace spmma::bench {

namespace {

// The median wall time of f() in ms, over `reps` calls after `warmup` calls.
template <class F>
Timing timed_ms(int warmup, int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < warmup + std::max(reps, 1); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) t.push_back(ms);
  }
  return timing_of(std::move(t));
}

std::vector<uint8_t> to_memory(const Matrix& m) {
  const int bits = memory_bits(m.type);
  std::vector<uint8_t> out(static_cast<size_t>((m.rows * m.cols * bits + 7) / 8));
  for (int64_t i = 0; i < m.rows * m.cols; ++i) store_element(out.data(), i, bits, m.bits[static_cast<size_t>(i)]);
  return out;
}

uint64_t checked_mul(uint64_t a, uint64_t b, bool& over) {
  uint64_t r = 0;
  over = over || __builtin_mul_overflow(a, b, &r);
  return r;
}
uint64_t checked_add(uint64_t a, uint64_t b, bool& over) {
  uint64_t r = 0;
  over = over || __builtin_add_overflow(a, b, &r);
  return r;
}

std::string human(uint64_t bytes) {
  double b = static_cast<double>(bytes);
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && u < 6) b /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::vector<float> to_f32(const Matrix& m) {
  std::vector<float> out(m.bits.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(decode(m.type, m.bits[i]));
  return out;
}

Row run_case(const Options& o, ElemType t, const std::array<int64_t, 3>& shape, std::mt19937_64& rng) {
  Row r;
  r.m = shape[0], r.n = shape[1], r.k = shape[2];
  r.type = std::string(type_name(t));
  r.backend = "cpu";
  const ElemType cd = o.epilogue.out.value_or(output_type(t));
  const Epilogue& epi = o.epilogue;
  r.d_type = std::string(type_name(cd));
  r.epilogue = epi.text();
  try {
    Handle h(Device::cpu);
    MatmulDesc d;
    d.m = r.m, d.n = r.n, d.k = r.k;
    d.a_type = d.b_type = t;
    d.c_type = d.d_type = cd;
    d.b_order = Order::col_major;  // B as N x K, K contiguous (x @ W.T), as on the GPU
    d.bias = epi.bias, d.activation = epi.act, d.scale_rows = d.scale_cols = epi.scales;
    const EpilogueData ed(r.m, r.n);
    EpilogueArgs ea;
    if (d.bias) ea.bias = ed.bias.data();
    if (d.scale_rows) ea.scale_rows = ed.scale_rows.data(), ea.scale_cols = ed.scale_cols.data();
    Plan plan(h, d, o.plan);  // the CPU backend refuses pins, naming them
    r.kernel = plan.describe();

    // A and B: normal values for float types, any bit pattern for integers (as on the GPU).
    const bool is_float = type_info(t).is_float;
    std::normal_distribution<double> nd(0.0, 1.0);
    auto fill = [&](Matrix& m) {
      for (auto& x : m.bits) x = is_float ? encode(t, nd(rng)) : rng() & ((1ull << type_info(t).bits) - 1);
    };
    const Pattern pattern = (t == ElemType::s4 || t == ElemType::u4) ? Pattern::p4_8_pairs : pattern_for(t);
    Matrix a(t, r.m, r.k), b(t, r.n, r.k);  // b: B column-major = N x K row-major
    fill(a), fill(b);
    const Matrix pruned = prune_magnitude(a, pattern);
    const std::vector<uint8_t> a_mem = to_memory(o.prune ? a : pruned), b_mem = to_memory(b);
    const SparseMatrix sa = compress(h, d, a_mem.data(), 0, 0, o.prune ? PruneMode::magnitude : PruneMode::check);
    r.value_bytes = sa.value_bytes(), r.metadata_bytes = sa.metadata_bytes();

    const int cb = memory_bits(cd) / 8;
    std::vector<uint8_t> out(static_cast<size_t>(r.m * r.n * cb));
    std::vector<uint8_t> ws(plan.workspace_bytes());
    r.spmma_timing = timed_ms(o.warmup, o.reps, [&] {
      plan.run(sa, b_mem.data(), out.data(), ea, ws.empty() ? nullptr : ws.data());
    });
    r.spmma_ms = r.spmma_timing.median;
    r.spmma_call_us = r.spmma_ms * 1e3;
    const double flops = 2.0 * r.m * r.n * r.k;
    r.spmma_tflops = flops / (r.spmma_ms * 1e-3) / 1e12;
    r.weight_gbps = static_cast<double>(r.value_bytes + r.metadata_bytes) / (r.spmma_ms * 1e-3) / 1e9;

    // The dense baseline: the same pruned A and B in f32, multiplied by OpenBLAS.
    const std::vector<float> af = to_f32(pruned), bf = to_f32(b);
    std::vector<float> df(static_cast<size_t>(r.m * r.n));
    r.dense_timing = timed_ms(o.warmup, o.reps, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(r.m), static_cast<int>(r.n),
                  static_cast<int>(r.k), 1.f, af.data(), static_cast<int>(r.k), bf.data(), static_cast<int>(r.k), 0.f,
                  df.data(), static_cast<int>(r.n));
    });
    r.cpu_dense_ms = r.dense_timing.median;
    r.cpu_dense_tflops = flops / (r.cpu_dense_ms * 1e-3) / 1e12;
    r.dense_weight_bytes = af.size() * sizeof(float);  // the f32 A cblas_sgemm reads
    r.dense_weight_gbps = static_cast<double>(r.dense_weight_bytes) / (r.cpu_dense_ms * 1e-3) / 1e9;

    // Verify D against a double-precision product of the pruned A, on (evenly spread) rows.
    const int64_t budget = int64_t{1} << 28;
    r.checked_rows = std::clamp<int64_t>(budget / (r.n * r.k), std::min<int64_t>(r.m, 16), r.m);
    std::vector<double> ref(static_cast<size_t>(r.checked_rows * r.n)), got(ref.size()), arow(static_cast<size_t>(r.k));
    std::vector<double> bd(bf.begin(), bf.end());  // every f16, bf16, tf32, fp8, s8 value is exact in f32
    for (int64_t s = 0; s < r.checked_rows; ++s) {
      const int64_t i = s * r.m / r.checked_rows;
      for (int64_t q = 0; q < r.k; ++q) arow[static_cast<size_t>(q)] = af[static_cast<size_t>(i * r.k + q)];
      for (int64_t j = 0; j < r.n; ++j) {
        const double* bj = bd.data() + j * r.k;
        double acc = 0;
        for (int64_t q = 0; q < r.k; ++q) acc += arow[static_cast<size_t>(q)] * bj[q];
        // The epilogue in double (docs/api.md): D's own rounding and the f32 epilogue's are within the bound.
        double v = acc;
        if (epi.scales) v *= static_cast<double>(ed.scale_rows[static_cast<size_t>(i)]) * ed.scale_cols[static_cast<size_t>(j)];
        if (epi.bias) v += ed.bias[static_cast<size_t>(i)];
        if (epi.act == Activation::relu) v = v > 0 ? v : 0.0;
        if (epi.act == Activation::gelu) v = 0.5 * v * std::erfc(-v * 0.70710678118654752);
        if (!type_info(cd).is_float) v = std::clamp(std::nearbyint(v), type_info(cd).min_value, type_info(cd).max_finite);
        if (cd == ElemType::e4m3 || cd == ElemType::e5m2) v = std::clamp(v, -type_info(cd).max_finite, type_info(cd).max_finite);
        ref[static_cast<size_t>(s * r.n + j)] = v;
        got[static_cast<size_t>(s * r.n + j)] = decode(cd, load_element(out.data(), i * r.n + j, memory_bits(cd)));
      }
    }
    const Agreement ag = agreement(static_cast<int64_t>(ref.size()), [&](int64_t e) { return got[static_cast<size_t>(e)]; },
                                   [&](int64_t e) { return ref[static_cast<size_t>(e)]; });
    r.max_error = ag.worst;
    r.rel_error = ag.rel;
    const double bound = error_bound(cd, r.k);
    r.verified = ag.finite && ag.worst <= bound;
    if (!type_info(cd).is_float && (cd != ElemType::s32 || !epi.plain())) {
      // Integer D after an epilogue: the library's fused steps and the reference's may round a
      // value at .5 apart: one unit. (Plain s32 D is exact.)
      double units = 0;
      for (size_t e = 0; e < ref.size(); ++e) units = std::max(units, std::fabs(got[e] - ref[e]));
      r.max_error = units;
      r.verified = units <= 1.0;
    }
    if (!r.verified)
      r.note = ag.finite ? "worst element error " + std::to_string(ag.worst) + " above the bound " + std::to_string(bound)
                      : std::string("D holds a non-finite value");
  } catch (const Error& e) {
    r.note = e.what();
  } catch (const std::bad_alloc&) {
    r.note = "out of host memory";  // the row is then not verified, and bench says so
  }
  return r;
}

}  // namespace

CaseMemory case_memory(const std::array<int64_t, 3>& shape, ElemType t, bool gpu, bool prune, bool cold) {
  bool over = false;
  const auto m = static_cast<uint64_t>(shape[0]), n = static_cast<uint64_t>(shape[1]), k = static_cast<uint64_t>(shape[2]);
  const uint64_t mb = static_cast<uint64_t>(std::max(memory_bits(t), 8) / 8);
  const uint64_t cb = static_cast<uint64_t>(memory_bits(output_type(t)) / 8);
  const uint64_t mk = checked_mul(m, k, over), nk = checked_mul(n, k, over), mn = checked_mul(m, n, over);
  CaseMemory r;
  if (!gpu) {
    // A: Matrix, pruned Matrix, bytes, f32, the backend's f32 copy, compressed; B: Matrix, bytes,
    // f32, f64, the backend's f32 copy; D: bytes, f32 baseline, the backend's f32; reference rows.
    const uint64_t budget = uint64_t{1} << 28;
    const uint64_t checked = std::clamp<uint64_t>(nk ? budget / nk : m, std::min<uint64_t>(m, 16), m);
    r.host = checked_add(checked_add(checked_mul(mk, 24 + 2 * mb, over), checked_mul(nk, 24 + mb, over), over),
                         checked_add(checked_mul(mn, 8 + cb, over), checked_mul(checked_mul(checked, n, over), 16, over), over),
                         over);
  } else {
    // Device: A, B, compressed A, D twice (spmma, cuBLAS), cuBLAS's 32 MiB workspace. Host: the
    // pruning copies of A (prune) and both D's downloaded for the comparison.
    r.device = checked_add(checked_add(checked_mul(mk, mb + mb, over), checked_mul(nk, mb, over), over),
                           checked_add(checked_mul(mn, 2 * cb, over), uint64_t{32} << 20, over), over);
    // Cold L2: at least a second copy of A (the dense one, for cuBLAS: larger than the compressed
    // one spmma rotates) and of B, within the 3/4 of the free memory run_gpu gives its copies.
    if (cold)
      r.device = checked_add(
          r.device, checked_mul(checked_add(checked_mul(mk, mb, over), checked_mul(nk, mb, over), over), 4, over) / 3,
          over);
    r.host = checked_add(prune ? checked_mul(mk, mb + 16, over) : 0, checked_mul(mn, 2 * cb, over), over);
  }
  if (over) r.host = r.device = UINT64_MAX;
  return r;
}

uint64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(size);
}

void require_memory(const std::array<int64_t, 3>& shape, ElemType t, bool gpu, bool prune, uint64_t gpu_free,
                    const std::string& what, bool cold) {
  const CaseMemory need = case_memory(shape, t, gpu, prune, cold);
  const uint64_t have = host_memory_bytes();
  const std::string mnk = std::to_string(shape[0]) + " x " + std::to_string(shape[1]) + " x " + std::to_string(shape[2]) +
                          " " + std::string(type_name(t));
  auto amount = [](uint64_t b) { return b == UINT64_MAX ? std::string("more than 2^64 bytes") : "about " + human(b); };
  if (have > 0 && need.host > have)
    fail(Status::invalid_argument, what + ": M x N x K = " + mnk + " needs " + amount(need.host) +
                                       " of host memory, this machine has " + human(have) + "; choose smaller sizes");
  if (gpu && gpu_free > 0 && need.device > gpu_free)
    fail(Status::invalid_argument, what + ": M x N x K = " + mnk + " needs " + amount(need.device) + " of GPU memory" +
                                       (cold ? " with a second copy of A and B for --l2 cold" : "") + ", " +
                                       human(gpu_free) + " is free; choose smaller sizes" +
                                       (cold ? " or --l2 hot" : ""));
}

std::vector<Row> run_cpu(const Options& o) {
  // The CPU path has one L2 mode: the CPU's caches are not the GPU's L2, and a cold CPU
  // measurement (rotating copies past the last-level cache) is not what `--l2 cold` is for.
  for (L2Mode m : o.l2)
    if (m != L2Mode::hot)
      fail(Status::not_supported,
           "bench: --l2 cold is timed on the GPU only (the CPU path times the hot case: --l2 hot)");
  std::vector<Row> rows;
  std::mt19937_64 rng(o.seed);
  const size_t total = o.types.size() * o.shapes.size();
  for (ElemType t : o.types)
    for (const auto& sh : o.shapes) {
      if (o.on_start) o.on_start(rows.size(), total, case_name(sh, t));
      rows.push_back(run_case(o, t, sh, rng));
      if (o.on_row) o.on_row(rows.back());
    }
  return rows;
}

}  // namespace spmma::bench
