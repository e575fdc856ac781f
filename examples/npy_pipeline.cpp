// SPDX-License-Identifier: BSD-3-Clause
// The file pipeline: a weight and a batch of activations in .npy files (f32, as numpy writes
// them) -> the weight pruned to 2:4 and compressed into a self-describing .safetensors file ->
// read back and multiplied by the activations -> the output written as .npy, and checked.
// Usage: npy_pipeline [directory]  (default: the current one). CPU only.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "spmma/matmul.hpp"
#include "spmma/npy.hpp"
#include "spmma/safetensors.hpp"
#include "spmma/sparse.hpp"

using namespace spmma;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? std::string(argv[1]) + "/" : "";
  const int64_t out = 96, in = 256, tokens = 5;
  {  // What a user brings: W (out x in) and X (tokens x in), f32 .npy files.
    std::mt19937 rng(2);
    std::normal_distribution<double> nd;
    Matrix w(ElemType::f32, out, in), x(ElemType::f32, tokens, in);
    for (int64_t i = 0; i < w.rows * w.cols; ++i) w.bits[static_cast<size_t>(i)] = encode(ElemType::f32, nd(rng));
    for (int64_t i = 0; i < x.rows * x.cols; ++i) x.bits[static_cast<size_t>(i)] = encode(ElemType::f32, nd(rng));
    write_npy_values(dir + "w.npy", w);
    write_npy_values(dir + "x.npy", x);
  }
  // Prune W to 2:4 in bf16 and store it compressed (values, metadata, type, pattern, shape).
  const Matrix w = read_npy_values(dir + "w.npy", ElemType::bf16);
  write_compressed(dir + "w.2of4.safetensors", compress(prune_magnitude(w)));

  // Later: read the compressed weight and the activations, Y = X·Wᵀ on the CPU.
  const Compressed wc = read_compressed(dir + "w.2of4.safetensors");
  const Matrix x = read_npy_values(dir + "x.npy", ElemType::bf16);
  MatmulDesc desc;
  desc.m = wc.rows, desc.n = x.rows, desc.k = wc.cols;
  desc.a_type = desc.b_type = ElemType::bf16;
  desc.c_type = desc.d_type = ElemType::f32;
  desc.b_order = Order::col_major;   // B = Xᵀ: X row-major
  desc.cd_order = Order::col_major;  // D = Yᵀ: Y row-major
  Handle h(Device::cpu);
  SparseMatrix ws = upload(h, desc, {wc});
  std::vector<uint16_t> xb(x.bits.begin(), x.bits.end());
  std::vector<float> y(static_cast<size_t>(desc.m * desc.n));
  Plan(h, desc).run(ws, xb.data(), nullptr, y.data(), 1.0f, 0.0f);
  Matrix ym(ElemType::f32, tokens, out);
  for (size_t i = 0; i < y.size(); ++i) ym.bits[i] = encode(ElemType::f32, y[i]);
  write_npy_values(dir + "y.npy", ym);

  // Check y.npy against the pruned weight in double.
  const Matrix yr = read_npy_values(dir + "y.npy", ElemType::f32), wp = decompress(wc);
  double worst = 0;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double ref = 0, mag = 0;
      for (int64_t i = 0; i < in; ++i) ref += wp.value(o, i) * x.value(t, i), mag += std::fabs(wp.value(o, i) * x.value(t, i));
      worst = std::fmax(worst, std::fabs(yr.value(t, o) - ref) / (mag + 1e-30));
    }
  std::printf("w.npy -> w.2of4.safetensors (%lld x %lld, 2:4 bf16) -> y.npy (%lld x %lld): largest error %.2e of sum |w*x|\n",
              static_cast<long long>(out), static_cast<long long>(in), static_cast<long long>(tokens),
              static_cast<long long>(out), worst);
  return worst < 1e-5 ? 0 : 1;
}
