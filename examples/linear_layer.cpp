// SPDX-License-Identifier: BSD-3-Clause
// A linear layer on the GPU: Y = GELU(X·Wᵀ + bias), W (out x in) pruned to 2:4 and compressed
// once, X a batch of tokens (tokens x in), bf16 in and out. In spmma's terms A = W (M = out,
// K = in), B = Xᵀ (a column-major K x N is X row-major), D = Yᵀ (a column-major M x N is Y
// row-major), the bias one value per output feature (row of D). Skips where no GPU runs spmma.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

using namespace spmma;

template <class T>
T* to_device(const std::vector<T>& host) {
  void* p = nullptr;
  if (cudaMalloc(&p, host.size() * sizeof(T)) != cudaSuccess) return nullptr;
  cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return static_cast<T*>(p);
}

int main() {
  const int64_t in = 4096, out = 1024, tokens = 17;
  if (supported_types(Device::gpu).empty()) {
    std::printf("linear_layer: no GPU that runs spmma here; skipped\n");
    return 0;
  }
  MatmulDesc desc;
  desc.m = out, desc.n = tokens, desc.k = in;
  desc.a_type = desc.b_type = ElemType::bf16;
  desc.c_type = desc.d_type = ElemType::bf16;
  desc.b_order = Order::col_major;   // B = Xᵀ: X row-major
  desc.cd_order = Order::col_major;  // D = Yᵀ: Y row-major
  desc.activation = Activation::gelu;
  desc.bias = true;

  std::mt19937 rng(1);
  std::normal_distribution<double> nd(0.0, 0.05);
  std::vector<uint16_t> w(static_cast<size_t>(out * in)), x(static_cast<size_t>(tokens * in));
  std::vector<float> bias(static_cast<size_t>(out));
  for (auto& v : w) v = static_cast<uint16_t>(encode(ElemType::bf16, nd(rng)));
  for (auto& v : x) v = static_cast<uint16_t>(encode(ElemType::bf16, 20 * nd(rng)));
  for (auto& v : bias) v = static_cast<float>(nd(rng));
  uint16_t* w_gpu = to_device(w);
  uint16_t* x_gpu = to_device(x);
  float* bias_gpu = to_device(bias);
  uint16_t* y_gpu = to_device(std::vector<uint16_t>(static_cast<size_t>(tokens * out)));

  Handle h(Device::gpu);
  SparseMatrix ws = compress(h, desc, w_gpu, /*lda=*/0, /*stride_a=*/0, PruneMode::magnitude);
  Plan plan(h, desc);  // throws not_supported if nothing can run it
  std::printf("%s on %s\n", plan.describe().c_str(), h.device_name().c_str());
  void* workspace = nullptr;
  if (plan.workspace_bytes()) cudaMalloc(&workspace, plan.workspace_bytes());
  for (int step = 0; step < 3; ++step)  // many runs, one plan
    plan.run(ws, x_gpu, /*c=*/nullptr, y_gpu, /*alpha=*/1.0f, /*beta=*/0.0f, bias_gpu, workspace);
  std::vector<uint16_t> y(static_cast<size_t>(tokens * out));
  cudaMemcpy(y.data(), y_gpu, y.size() * 2, cudaMemcpyDeviceToHost);

  // Check every output against the pruned weight in double (bf16 output: 1% of the magnitude).
  const Matrix pruned = decompress(ws.to_host());
  int bad = 0;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double v = bias[static_cast<size_t>(o)], mag = std::fabs(v);
      for (int64_t i = 0; i < in; ++i) {
        const double p = pruned.value(o, i) * decode(ElemType::bf16, x[static_cast<size_t>(t * in + i)]);
        v += p, mag += std::fabs(p);
      }
      const double ref = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      const double got = decode(ElemType::bf16, y[static_cast<size_t>(t * out + o)]);
      bad += !(std::fabs(got - ref) <= 1e-2 * (std::fabs(ref) + 1e-3 * mag));
    }
  std::printf("Y = GELU(X Wᵀ + bias), %lld tokens, %lld -> %lld features: %d of %lld outputs off\n",
              static_cast<long long>(tokens), static_cast<long long>(in), static_cast<long long>(out), bad,
              static_cast<long long>(tokens * out));
  for (void* p : {static_cast<void*>(w_gpu), static_cast<void*>(x_gpu), static_cast<void*>(bias_gpu),
                  static_cast<void*>(y_gpu), workspace})
    cudaFree(p);
  return bad == 0 ? 0 : 1;
}
