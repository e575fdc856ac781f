// SPDX-License-Identifier: BSD-3-Clause
// The CPU side of DependentLaunch.LayersBackToBackMatchTheCpu for one seed (docs/benchmarks.md, "The GPU suite on
// 1eb84dc"): the test's data, its layers on the CPU backend, and one element of one layer summed exactly, in
// f32 in order and in 6 parts of K (the GPU plan's split), with the bf16 each rounds to. Built on the CPU machine:
// g++ -std=c++20 -O2 -I. -Iinclude -Ibuild/include -Ibuild/generated docs/data/pdl-test-ulp-repro.cpp -o r \
//   build/libspmma_api.a build/libspmma.a build/libspmma_cuda.a build/libspmma.a -L/usr/local/cuda/lib64 -lcudart -lcuda -lopenblas -lpthread
// ./r SEED LAYER ROW COL
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"
#include "tests/gpu/layer_data.hpp"
using namespace spmma;
using T = ElemType;
using test::decode_desc;
using test::exact_values;
int main(int argc, char** argv) {
  const uint64_t seed = std::strtoull(argv[1], nullptr, 0);
  const int li = atoi(argv[2]), ei = atoi(argv[3]), ej = atoi(argv[4]);
  std::mt19937_64 rng(seed + 1);
  const int64_t n = 16;
  const std::vector<int64_t> widths = {2048, 1024, 3072, 512};
  Handle cpu(Device::cpu);
  std::vector<uint16_t> act = exact_values(static_cast<size_t>(n * widths[0]), rng);
  std::vector<std::vector<uint16_t>> ws;
  for (size_t l = 0; l + 1 < widths.size(); ++l) ws.push_back(exact_values(static_cast<size_t>(widths[l + 1] * widths[l]), rng));
  for (int l = 0; l < 3; ++l) {
    const MatmulDesc d = decode_desc(widths[l + 1], n, widths[l]);
    SparseMatrix sc = compress(cpu, d, ws[l].data(), 0, 0, PruneMode::magnitude);
    std::vector<uint16_t> out(static_cast<size_t>(n * d.m));
    Plan(cpu, d).run(sc, act.data(), out.data(), EpilogueArgs{});
    if (l == li) {
      const Matrix ad = decompress(sc.to_host(0));
      double exact = 0; float seq = 0; double mag = 0;
      for (int64_t k = 0; k < d.k; ++k) {
        const double p = decode(T::bf16, ad.at(ei, k)) * decode(T::bf16, act[static_cast<size_t>(ej * d.k + k)]);
        exact += p; seq += static_cast<float>(p); mag += std::fabs(p);
      }
      // split K in 6 parts of K/6, each summed in f32, added in order
      float parts = 0; const int64_t per = d.k / 6;
      for (int s = 0; s < 6; ++s) { float ps = 0; for (int64_t k = s * per; k < (s + 1) * per; ++k)
        ps += static_cast<float>(decode(T::bf16, ad.at(ei, k)) * decode(T::bf16, act[static_cast<size_t>(ej * d.k + k)])); parts += ps; }
      const double cpu_d = decode(T::bf16, out[static_cast<size_t>(ej * d.m + ei)]);
      std::printf("layer %d D(%d,%d): exact %.6f  f32 seq %.6f  f32 6 parts %.6f  CPU D %.1f  bf16(exact) %.1f  bf16(6 parts) %.1f  mag %.1f\n",
                  l, ei, ej, exact, seq, parts, cpu_d, decode(T::bf16, encode(T::bf16, exact)), decode(T::bf16, encode(T::bf16, parts)), mag);
    }
    act = out;
  }
}
