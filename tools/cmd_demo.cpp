// `spmma demo`: the README's main job. Prunes and compresses a random matrix, multiplies it
// through the emulated sparse instruction tile by tile, checks the result against a dense
// product, and — where a GPU exists — runs the hardware conformance suite on that instruction.
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include "commands.hpp"
#include "spmma/emulate.hpp"
#include "spmma/error.hpp"
#include "spmma/sparse.hpp"
#ifdef SPMMA_HAVE_CUDA
#include "spmma/conform.hpp"
#endif

namespace spmma::cli {

namespace {

// The rows [r0, r0+rows) and compressed columns of dense k-range [k0, k0+kk) of a matrix.
Compressed tile(const Compressed& c, int64_t r0, int64_t rows, int64_t k0, int64_t kk) {
  Compressed t;
  t.type = c.type, t.pattern = c.pattern, t.ordered = c.ordered;
  t.rows = rows, t.cols = kk;
  t.values = Matrix(c.type, rows, kk / 2);
  t.metadata.assign(static_cast<size_t>(rows * t.meta_words_per_row()), 0);
  const int chunk = pattern_info(c.pattern).chunk;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < kk / 2; ++j) t.values.at(r, j) = c.values.at(r0 + r, k0 / 2 + j);
    for (int64_t ch = 0; ch < kk / chunk; ++ch) t.set_nibble(r, ch, c.nibble(r0 + r, k0 / chunk + ch));
  }
  return t;
}

Matrix sub(const Matrix& m, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
  Matrix s(m.type, rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) s.at(r, c) = m.at(r0 + r, c0 + c);
  return s;
}

}  // namespace

void register_demo(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Prune, compress and multiply a random matrix through a sparse MMA; verify "
                                         "against a dense product (and run conformance where a GPU exists)");
  struct Opts {
    int size = 128;
    uint64_t seed = 7;
    std::string ptx = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32";
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--size", o->size, "M = N = K of the product (a multiple of 32; default 128)");
  cmd->add_option("--seed", o->seed, "Seed of the random matrices");
  cmd->add_option("--variant", o->ptx, "The warp-level sparse instruction to use");
  cmd->callback([o] {
    const isa::Variant& v = isa::variant_or_throw(o->ptx);
    if (!v.sparse() || v.wgmma() || v.scale)
      fail(Status::invalid_argument, "demo: '" + v.id + "' is not a warp-level mma.sp form without block scaling");
    const int64_t n = o->size;
    if (n <= 0 || n % v.k != 0 || n % v.m != 0)
      fail(Status::invalid_argument, "demo: --size " + std::to_string(n) + " must be a positive multiple of " +
                                         std::to_string(std::max(v.k, v.m)));
    std::mt19937_64 rng(o->seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    Matrix dense(v.a, n, n), b(v.b, n, n), c(v.c, n, n);
    for (auto& x : dense.bits) x = encode(v.a, normal(rng));
    for (auto& x : b.bits) x = encode(v.b, normal(rng));
    for (auto& x : c.bits) x = encode(v.c, normal(rng));

    std::cout << "spmma demo: D = A·B + C, " << n << "x" << n << "x" << n << ", A " << type_name(v.a) << " "
              << pattern_info(v.meta->pattern).name << " sparse, instruction " << v.ptx << "\n";
    const Matrix pruned = prune_magnitude(dense, v.meta->pattern);
    const Compressed a = compress(pruned, v.meta->pattern, true);
    std::cout << "  prune + compress: values " << a.value_bytes() << " B + metadata " << a.metadata_bytes()
              << " B (dense A: " << n * n * type_info(v.a).bits / 8 << " B)\n";

    // D, tile by tile: each 16 x 8 output tile accumulates over K in steps of the instruction.
    const auto t0 = std::chrono::steady_clock::now();
    Matrix d(v.d, n, n);
    for (int64_t i = 0; i < n; i += v.m)
      for (int64_t j = 0; j < n; j += v.n) {
        emu::MatrixOperands ops;
        ops.c = sub(c, i, v.m, j, v.n);
        for (int64_t k = 0; k < n; k += v.k) {
          ops.a_sparse = tile(a, i, v.m, k, v.k);
          ops.b = sub(b, k, v.k, j, v.n);
          ops.c = emu::execute_matrix(v, ops);
        }
        for (int64_t r = 0; r < v.m; ++r)
          for (int64_t q = 0; q < v.n; ++q) d.at(i + r, j + q) = ops.c.at(r, q);
      }
    const double t_emu = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // The dense reference in double on the pruned A.
    const auto t1 = std::chrono::steady_clock::now();
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = c.value(i, j);
        for (int64_t k = 0; k < n; ++k) acc += pruned.value(i, k) * b.value(k, j);
        num += (d.value(i, j) - acc) * (d.value(i, j) - acc);
        den += acc * acc;
      }
    const double t_ref = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    const double rel = std::sqrt(num / den);
    std::cout << "  emulated sparse product: " << t_emu * 1e3 << " ms on the CPU (dense double reference: "
              << t_ref * 1e3 << " ms)\n";
    std::cout << "  ||D - D_ref|| / ||D_ref|| = " << rel << (rel < 1e-6 ? "  (ok)" : "  (TOO LARGE)") << "\n";
    if (!(rel < 1e-6)) throw CLI::RuntimeError(1);

#ifdef SPMMA_HAVE_CUDA
    std::string why;
    if (conform::gpu_available(&why)) {
      conform::Options co;
      co.filter = v.ptx;
      const conform::Report rep = conform::run(co);
      for (const auto& r : rep.rows)
        std::cout << "  GPU " << rep.device << ": " << r.id << ": " << r.trials << " trials, " << r.mismatches
                  << " mismatches against the emulator\n";
    } else {
      std::cout << "  no GPU here (" << why << "): CPU only\n";
    }
#else
    std::cout << "  built without CUDA: CPU only\n";
#endif
  });
}

}  // namespace spmma::cli
