// SPDX-License-Identifier: BSD-3-Clause
// The GPU backend against the CPU backend on the same inputs, and every input rule of the API on
// the GPU (issue 8): B layouts the kernels cannot read in place, batched padded layouts, every
// listed type combination, non-finite values in every operand, launch-size limits, pointer
// misuse, device binding, CUDA-graph capture, sticky errors. The CPU backend is the reference
// (tests/test_matmul_cpu.cpp checks it against an independent double-precision product).
// Label `gpu`: every test skips with a message where no GPU is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "spmma/detail/epilogue.hpp"
#include "spmma/detail/gemm_pairs.hpp"
#include "spmma/error.hpp"
#include "spmma/log.hpp"
#include "spmma/matmul.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"
#include "gpu/gpu_test.hpp"
#include "test_util.hpp"

using namespace spmma;
using T = ElemType;

namespace {

using spmma::test::expect_error;
using spmma::test::seed;
using spmma::test::kFp8MmaRel;
using spmma::test::kFp8MmaRel128;

bool is_int(T t) { return !type_info(t).is_float; }
int bits_of(T t) { return memory_bits(t); }
size_t bytes_for(int64_t elems, T t) { return static_cast<size_t>((elems * bits_of(t) + 7) / 8); }

// Device memory with slack, so that a test can hand out a pointer at any byte offset.
struct DevMem {
  uint8_t* base = nullptr;
  size_t bytes = 0;
  explicit DevMem(size_t n) : bytes(n + 256) {
    if (cudaMalloc(&base, bytes) != cudaSuccess) base = nullptr;
  }
  ~DevMem() {
    if (base) cudaFree(base);
  }
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;
};

// ------------------------------------------------------------------ operands in memory form

// Element (row, col) of matrix `e` of a batch, in elements from the base: the layout the API
// documents, written out here (ld 0 = packed; stride 0 = packed = ld x lines).
struct Layout {
  int64_t rows, cols, ld, stride;
  bool row_major;
  int64_t index(int64_t e, int64_t r, int64_t c) const { return e * stride + (row_major ? r * ld + c : c * ld + r); }
  int64_t span(int64_t batch) const { return (batch - 1) * stride + (row_major ? (rows - 1) * ld + cols : (cols - 1) * ld + rows); }
};
Layout layout_of(int64_t rows, int64_t cols, int64_t ld, int64_t stride, bool row_major, int64_t batch) {
  Layout l{rows, cols, ld ? ld : (row_major ? cols : rows), stride, row_major};
  if (batch > 1 && stride == 0) l.stride = l.ld * (row_major ? rows : cols);
  if (batch == 1) l.stride = 0;
  return l;
}

struct Specials {
  double p = 0.0;  // probability of a special value (NaN, ±Inf, -0.0) per float element
};

uint64_t random_elem(T t, std::mt19937_64& rng, const Specials& sp) {
  std::uniform_real_distribution<double> u(0, 1);
  if (is_int(t)) {
    const auto& ti = type_info(t);
    const int64_t lo = static_cast<int64_t>(ti.min_value), hi = static_cast<int64_t>(ti.max_finite);
    return encode(t, static_cast<double>(lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1))));
  }
  if (u(rng) < sp.p) {
    const double specials[] = {NAN, INFINITY, -INFINITY, -0.0};
    return encode(t, specials[rng() % 4]);  // e4m3 saturates ±Inf to ±448
  }
  std::normal_distribution<double> nd(0.0, 1.0);
  uint64_t b = encode(t, nd(rng));
  if (t == T::tf32) b |= rng() & 0x1FFF;  // bits the tensor cores ignore
  return b;
}

struct Images {
  std::vector<uint8_t> a, b, c, d;  // memory images, exactly as handed to the API
  std::vector<float> bias;
  std::vector<float> srow, scol;  // scale vectors (used when the description asks for them)
  int64_t lda = 0, stride_a = 0;
  Layout lb{}, lc{}, ld{};
};

Images make_images(const MatmulDesc& m, std::mt19937_64& rng, const Specials& sp, bool a_holes = true) {
  Images im;
  const int64_t na = m.a_per_batch ? m.batch : 1;
  im.lda = m.k + (rng() % 3 == 0 ? 512 / type_info(m.a_type).bits : 0);
  im.stride_a = na > 1 ? im.lda * m.m + (rng() % 2 ? 0 : 64) : 0;
  const int64_t a_elems = (na - 1) * (im.stride_a ? im.stride_a : im.lda * m.m) + im.lda * m.m;
  im.a.assign(bytes_for(a_elems, m.a_type), 0);
  for (int64_t e = 0; e < na; ++e)
    for (int64_t r = 0; r < m.m; ++r)
      for (int64_t c = 0; c < m.k; ++c) {
        uint64_t v = random_elem(m.a_type, rng, sp);
        if (a_holes && rng() % 6 == 0) v = 0;  // chunks with padding slots
        store_element(im.a.data(), e * (im.stride_a ? im.stride_a : im.lda * m.m) + r * im.lda + c, bits_of(m.a_type), v);
      }
  const bool brow = m.b_order == Order::row_major, cdrow = m.cd_order == Order::row_major;
  im.lb = layout_of(m.k, m.n, m.ldb, m.stride_b, brow, m.batch);
  im.lc = layout_of(m.m, m.n, m.ldc, m.stride_c, cdrow, m.batch);
  im.ld = layout_of(m.m, m.n, m.ldd, m.stride_d, cdrow, m.batch);
  im.b.assign(bytes_for(im.lb.span(m.batch), m.b_type), 0x5C);
  im.c.assign(bytes_for(im.lc.span(m.batch), m.c_type), 0x3A);
  im.d.assign(bytes_for(im.ld.span(m.batch), m.d_type), 0xA7);  // poison; gaps must keep it
  for (int64_t e = 0; e < m.batch; ++e)
    for (int64_t r = 0; r < m.k; ++r)
      for (int64_t c = 0; c < m.n; ++c) store_element(im.b.data(), im.lb.index(e, r, c), bits_of(m.b_type), random_elem(m.b_type, rng, sp));
  for (int64_t e = 0; e < m.batch; ++e)
    for (int64_t r = 0; r < m.m; ++r)
      for (int64_t c = 0; c < m.n; ++c) {
        uint64_t v = random_elem(m.c_type, rng, sp);
        if (m.c_type == T::s32) v = encode(T::s32, static_cast<double>(static_cast<int64_t>(rng() % 4001) - 2000));
        store_element(im.c.data(), im.lc.index(e, r, c), bits_of(m.c_type), v);
      }
  im.bias.resize(static_cast<size_t>(m.m));
  std::uniform_real_distribution<float> ub(-3.f, 3.f);
  for (float& x : im.bias) {
    x = ub(rng);
    if (sp.p > 0 && rng() % 8 == 0) x = std::vector<float>{NAN, INFINITY, -INFINITY, -0.0f}[rng() % 4];
  }
  im.srow.resize(static_cast<size_t>(na * m.m));
  im.scol.resize(static_cast<size_t>(m.batch * m.n));
  std::uniform_real_distribution<float> us(-2.f, 2.f);
  for (auto* v : {&im.srow, &im.scol})
    for (float& x : *v) x = rng() % 9 == 0 ? 0.f : us(rng);
  return im;
}

struct RunOpts {
  PruneMode mode = PruneMode::magnitude;
  float alpha = 1.f, beta = 0.f;
  size_t b_off = 0, c_off = 0, d_off = 0;  // byte offsets of the GPU pointers from 256-aligned bases
  bool in_place = false;                   // c == d (the images' C is used as D's initial content)
  bool graph = false;                      // capture Plan::run in a CUDA graph and replay it twice
  int fresh_thread = 0;                    // Plan::run from a new thread (no CUDA call of its own before):
                                           // 1 on the default stream, 2 on a stream made by this thread
  bool repeat = false;                     // run 3 more times: D must come out the same bytes
  double acc_rel = 0;                      // f32 accumulation tolerance (0: 1e-5, fp8 wgmma kFp8MmaRel)
  int64_t check_rows = 0;                  // compare only this many rows per entry (0: all)
  PlanOptions plan;                        // the GPU plan's pins
};

// Runs desc on the CPU and the GPU with the same operands and compares D (every element, and
// every byte of D's buffer outside the matrices: untouched). Also compares the compressed A.
void twin(const MatmulDesc& desc, const Images& im, const RunOpts& o, Handle& gpu) {
  Handle cpu(Device::cpu);
  const float* hbias = desc.bias ? im.bias.data() : nullptr;
  // CPU
  std::vector<uint8_t> dc = o.in_place ? im.c : im.d;
  SparseMatrix sc = compress(cpu, desc, im.a.data(), im.lda, im.stride_a, o.mode);
  Plan pc(cpu, desc);
  EpilogueArgs he;
  he.alpha = o.alpha, he.beta = o.beta, he.c = o.beta != 0 ? im.c.data() : nullptr, he.bias = hbias;
  he.scale_rows = desc.scale_rows ? im.srow.data() : nullptr;
  he.scale_cols = desc.scale_cols ? im.scol.data() : nullptr;
  pc.run(sc, im.b.data(), dc.data(), he);
  // GPU
  DevMem ga(im.a.size()), gb(im.b.size() + o.b_off), gc(im.c.size() + o.c_off), gd(im.d.size() + o.d_off),
      gbias(im.bias.size() * 4), gsr(im.srow.size() * 4), gsc(im.scol.size() * 4);
  ASSERT_TRUE(ga.base && gb.base && gc.base && gd.base && gbias.base && gsr.base && gsc.base);
  uint8_t* pb = gb.base + o.b_off;
  uint8_t* pcm = gc.base + o.c_off;
  uint8_t* pd = o.in_place ? pcm : gd.base + o.d_off;
  CK(cudaMemcpy(ga.base, im.a.data(), im.a.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(pb, im.b.data(), im.b.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(pcm, im.c.data(), im.c.size(), cudaMemcpyHostToDevice));
  if (!o.in_place) CK(cudaMemcpy(pd, im.d.data(), im.d.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(gbias.base, im.bias.data(), im.bias.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(gsr.base, im.srow.data(), im.srow.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(gsc.base, im.scol.data(), im.scol.size() * 4, cudaMemcpyHostToDevice));
  SparseMatrix sg = compress(gpu, desc, ga.base, im.lda, im.stride_a, o.mode);
  for (int64_t e = 0; e < sg.batch(); e += std::max<int64_t>(1, sg.batch() / 3)) {
    const Compressed x = sg.to_host(e), y = sc.to_host(e);
    EXPECT_EQ(x.values.bits, y.values.bits) << "compressed values of entry " << e;
    EXPECT_EQ(x.metadata, y.metadata) << "metadata of entry " << e;
  }
  Plan pg(gpu, desc, o.plan);
  DevMem ws(pg.workspace_bytes());
  ASSERT_TRUE(ws.base);
  CK(cudaMemset(ws.base, 0xFF, ws.bytes));  // poisoned: a plan relies on nothing it did not write
  const float* dbias = desc.bias ? reinterpret_cast<const float*>(gbias.base) : nullptr;
  const void* cptr = o.beta != 0 ? pcm : nullptr;
  EpilogueArgs epi;
  epi.alpha = o.alpha, epi.beta = o.beta, epi.c = cptr, epi.bias = dbias;
  epi.scale_rows = desc.scale_rows ? reinterpret_cast<const float*>(gsr.base) : nullptr;
  epi.scale_cols = desc.scale_cols ? reinterpret_cast<const float*>(gsc.base) : nullptr;
  if (o.graph) {
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    pg.run(sg, pb, pd, epi, pg.workspace_bytes() ? ws.base : nullptr, s);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    if (!o.in_place) {  // a replay computes the same D (in place would add beta·C twice)
      CK(cudaGraphLaunch(ge, s));
    }
    CK(cudaStreamSynchronize(s));
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
  } else if (o.fresh_thread) {
    cudaStream_t s = nullptr;
    if (o.fresh_thread == 2) CK(cudaStreamCreate(&s));
    std::string error;
    std::thread t([&] {
      try {
        pg.run(sg, pb, pd, epi, pg.workspace_bytes() ? ws.base : nullptr, s);
      } catch (const std::exception& e) {
        error = e.what();
      }
    });
    t.join();
    EXPECT_EQ(error, "") << "Plan::run from a new thread";
    CK(cudaDeviceSynchronize());
    if (s) cudaStreamDestroy(s);
  } else {
    pg.run(sg, pb, pd, epi, pg.workspace_bytes() ? ws.base : nullptr);
  }
  CK(cudaDeviceSynchronize());
  std::vector<uint8_t> dg(dc.size());
  CK(cudaMemcpy(dg.data(), pd, dg.size(), cudaMemcpyDeviceToHost));
  if (o.repeat && !o.in_place) {  // in place, a run adds beta·C again
    std::vector<uint8_t> again(dg.size());
    for (int r = 0; r < 3; ++r) {
      CK(cudaMemcpy(pd, im.d.data(), im.d.size(), cudaMemcpyHostToDevice));  // D's poison again
      pg.run(sg, pb, pd, epi, pg.workspace_bytes() ? ws.base : nullptr);
      CK(cudaMemcpy(again.data(), pd, again.size(), cudaMemcpyDeviceToHost));
      if (again != dg) {
        ADD_FAILURE() << "run " << r + 2 << " wrote other bytes than the first: not deterministic";
        break;
      }
    }
  }

  // Tolerance: f32 accumulation in a different order, relative to Σ|a·b|, then one rounding.
  const bool fp8_wgmma = (desc.a_type == T::e4m3 || desc.a_type == T::e5m2) && pg.describe().find("wgmma") != std::string::npos;
  const double acc_rel = o.acc_rel ? o.acc_rel : fp8_wgmma ? kFp8MmaRel : 1e-5;
  // The two roundings into D may land one ulp apart (relative 2^-mantissa bits); f32 D: the f32
  // epilogue's steps.
  const double out_rel = desc.d_type == T::f32 ? 1e-6 : std::ldexp(1.0, -type_info(desc.d_type).man_bits);
  std::vector<char> inside(dc.size() * 8 / static_cast<size_t>(bits_of(desc.d_type)), 0);
  int bad = 0;
  const int64_t rows = o.check_rows ? std::min(o.check_rows, desc.m) : desc.m;
  std::vector<double> av, bv;  // the entry's A rows (decompressed) and B, decoded once
  int64_t a_loaded = -1;
  for (int64_t e = 0; e < desc.batch; ++e) {
    const int64_t ae = desc.a_per_batch ? e : 0;
    if (!is_int(desc.d_type) && ae != a_loaded) {
      const Matrix ad = decompress(sc.to_host(ae));
      av.assign(static_cast<size_t>(desc.m * desc.k), 0.0);
      for (int64_t i = 0; i < desc.m; ++i)
        for (int64_t kk = 0; kk < desc.k; ++kk) av[static_cast<size_t>(i * desc.k + kk)] = decode(desc.a_type, ad.at(i, kk));
      a_loaded = ae;
    }
    if (!is_int(desc.d_type)) {
      bv.assign(static_cast<size_t>(desc.k * desc.n), 0.0);
      for (int64_t j = 0; j < desc.n; ++j)
        for (int64_t kk = 0; kk < desc.k; ++kk)
          bv[static_cast<size_t>(j * desc.k + kk)] = decode(desc.b_type, load_element(im.b.data(), im.lb.index(e, kk, j), bits_of(desc.b_type)));
    }
    for (int64_t i0 = 0; i0 < rows; ++i0) {
      const int64_t i = o.check_rows ? (i0 * 7919) % desc.m : i0;  // spread the sampled rows
      for (int64_t j = 0; j < desc.n; ++j) {
        const int64_t idx = im.ld.index(e, i, j);
        inside[static_cast<size_t>(idx)] = 1;
        const uint64_t want_b = load_element(dc.data(), idx, bits_of(desc.d_type)), got_b = load_element(dg.data(), idx, bits_of(desc.d_type));
        if (is_int(desc.d_type)) {
          if (want_b != got_b && ++bad <= 5)
            ADD_FAILURE() << "batch " << e << " D(" << i << ", " << j << ") GPU " << decode(desc.d_type, got_b) << ", CPU "
                          << decode(desc.d_type, want_b);
          continue;
        }
        const double want = decode(desc.d_type, want_b), got = decode(desc.d_type, got_b);
        double mag = 0;
        for (int64_t kk = 0; kk < desc.k; ++kk) {
          const double x = av[static_cast<size_t>(i * desc.k + kk)];  // 0 where nothing is named: B unread
          if (x != 0) mag += std::fabs(x * bv[static_cast<size_t>(j * desc.k + kk)]);
        }
        bool ok;
        if (std::isnan(want)) {
          ok = std::isnan(got);
        } else if (!std::isfinite(mag)) {
          // Inf/NaN of A or B reached the sum: the same special result (or the same number, where
          // an activation maps it to one: ReLU of NaN is 0).
          ok = got == want;
        } else {
          // Near D's largest finite value, one side may round to Inf where the other stays finite
          // (sums in different orders): compare at the limit then.
          double g = got, w = want, slack = 0;
          if (std::isinf(g) || std::isinf(w)) {
            const double top = type_info(desc.d_type).max_finite;
            g = std::isinf(g) ? std::copysign(top, g) : g;
            w = std::isinf(w) ? std::copysign(top, w) : w;
            slack = top * 1e-3;
          }
          double scale = std::fabs(o.alpha);
          if (desc.scale_rows) scale *= std::fabs(im.srow[static_cast<size_t>((desc.a_per_batch ? e : 0) * desc.m + i)]);
          if (desc.scale_cols) scale *= std::fabs(im.scol[static_cast<size_t>(e * desc.n + j)]);
          ok = !std::isnan(g) &&
               std::fabs(g - w) <= acc_rel * (scale * mag + 1) + out_rel * std::fabs(w) + slack + 1e-30;
        }
        if (!ok && ++bad <= 5)
          ADD_FAILURE() << "batch " << e << " D(" << i << ", " << j << ") GPU " << got << ", CPU " << want
                        << " (sum of |a*b| " << mag << ", tolerance " << acc_rel << " of it)";
      }
    }
  }
  if (!o.check_rows && !o.in_place)
    for (size_t idx = 0; idx < inside.size(); ++idx)
      if (!inside[idx] && load_element(dg.data(), static_cast<int64_t>(idx), bits_of(desc.d_type)) !=
                              load_element(im.d.data(), static_cast<int64_t>(idx), bits_of(desc.d_type)) &&
          ++bad <= 5)
        ADD_FAILURE() << "element " << idx << " of D's buffer is outside every D matrix but was written";
  EXPECT_EQ(bad, 0) << pg.describe();
}

MatmulDesc desc_of(T a, T b, T cd, int64_t m, int64_t n, int64_t k) {
  MatmulDesc d;
  d.m = m, d.n = n, d.k = k;
  d.a_type = a, d.b_type = b, d.c_type = d.d_type = cd;
  d.b_order = Order::col_major;
  return d;
}

int64_t kstep(T a) { return 512 / type_info(a).bits; }

// The GPU plan's choices for A and B of type a (D bf16, s32 for the integers), `batch` entries
// sharing A.
PlanInfo plan_info(Handle& h, T a, int64_t m, int64_t n, int64_t k, const PlanOptions& o = {}, int64_t batch = 1) {
  MatmulDesc d = desc_of(a, a, is_int(a) ? T::s32 : T::bf16, m, n, k);
  d.batch = batch;
  return Plan(h, d, o).info();
}

// The context must be alive after every test: a kernel fault anywhere shows here.
void expect_context_alive() {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaSuccess);
  cudaFree(p);
}

}  // namespace

// detail::div_gelu against the GPU's IEEE division (div.rn) for every f32 a whose bits lie in lo .. hi:
// gelu_f32's two quotients, t = 2√2/(2√2 + a) bit for bit and y = 2·a/(a + 1.5√2) − 1 as it
// enters the polynomial. Counts the mismatches.
__global__ void gelu_divisions_vs_ieee(uint32_t lo, uint32_t hi, unsigned long long* mismatches) {
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t b = lo + blockIdx.x * blockDim.x + threadIdx.x; b <= hi; b += stride) {  // hi + stride < 2^32
    const float a = __uint_as_float(b), c = 2.82842708f, h = 2.12132025f;
    const bool t_same = __float_as_uint(detail::div_gelu(c, c + a)) == __float_as_uint(__fdiv_rn(c, c + a));
    const bool y_same = __float_as_uint(fmaf(2.0f, detail::div_gelu(a, a + h), -1.0f)) ==
                        __float_as_uint(fmaf(2.0f, __fdiv_rn(a, a + h), -1.0f));
    if (!t_same || !y_same) atomicAdd(mismatches, 1ull);
  }
}

// detail::gelu_f32 of the f32 whose bits are i·step, for i < n.
__global__ void gelu_sampled(uint32_t step, uint32_t n, float* out) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = detail::gelu_f32(__uint_as_float(i * step));
}

class Robust : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    h_ = test::gpu_handle(why);
    if (!h_) GTEST_SKIP() << why;
  }
  void TearDown() override {
    if (h_) expect_context_alive();
  }
  // Whether the plans here run the sm90 kernel (an sm_90 GPU, sm_90a machine code, a listed type).
  bool sm90_runs() const {
    return h_->compute_capability() == 90 && !supported_types(*h_).empty() &&
           Plan(*h_, desc_of(T::bf16, T::bf16, T::f32, 16, 8, 32)).info().kernel == KernelFamily::sm90;
  }
  std::unique_ptr<Handle> h_;
};

// Item 1: every B the kernels cannot read in place (leading dimension or batch stride not a
// multiple of 16 bytes, an address aligned only to its element) runs correctly through the
// repack, for the sm90 and the sm80 kernel; what only a run can know (the address) is refused
// when the plan promised 16 bytes.
TEST_F(Robust, BLayoutsTheKernelsCannotReadInPlace) {
  std::mt19937_64 rng(seed());
  for (T t : {T::bf16, T::f16, T::tf32, T::e4m3, T::s8, T::u8, T::s4}) {
    SCOPED_TRACE(std::string(type_name(t)));
    const int eb = std::max(1, bits_of(t) / 8);
    const T cd = is_int(t) ? T::s32 : T::f32;
    const int64_t k = 2 * kstep(t);
    for (int variant = 0; variant < 4; ++variant) {
      SCOPED_TRACE("variant " + std::to_string(variant));
      MatmulDesc d = desc_of(t, t, cd, 70, 37, k);
      RunOpts o;
      if (variant == 0) d.ldb = k + (bits_of(t) == 4 ? 4 : 8 / eb);  // 8 (4-bit: 2) bytes past 16-byte columns
      if (variant == 1) d.b_alignment = eb, o.b_off = static_cast<size_t>(eb);  // B at + one element
      if (variant == 2) d.batch = 3, d.stride_b = k * d.n + (bits_of(t) == 4 ? 2 : 1);  // batch stride
      if (variant == 3) d.b_order = Order::row_major, d.ldb = d.n + 1, d.b_alignment = eb, o.b_off = static_cast<size_t>(eb);
      if (t == T::s4 && variant == 3) continue;  // a row-major 4-bit B is refused (below)
      Images im = make_images(d, rng, {});
      twin(d, im, o, *h_);
      Plan p(*h_, d);
      EXPECT_NE(p.describe().find(variant == 3 ? "transposed" : "copied into the workspace"), std::string::npos) << p.describe();
    }
    // A plan for the default 16-byte b_alignment refuses a B that is less aligned, before any launch.
    MatmulDesc d = desc_of(t, t, cd, 70, 37, k);
    Plan p(*h_, d);
    DevMem a(static_cast<size_t>(d.m * d.k * 4)), b(static_cast<size_t>(d.k * d.n * 4)), out(static_cast<size_t>(d.m * d.n * 4));
    CK(cudaMemset(a.base, 0, a.bytes));
    SparseMatrix s = compress(*h_, d, a.base, 0, 0, PruneMode::check);
    expect_error([&] { p.run(s, b.base + 8, nullptr, out.base, 1, 0); }, Status::invalid_argument, {"b", "16-byte aligned", "b_alignment"});
    if (eb > 1)
      expect_error([&] { p.run(s, b.base + 1, nullptr, out.base, 1, 0); }, Status::invalid_argument, {"b", "aligned"});
  }
  MatmulDesc d4 = desc_of(T::s4, T::s4, T::s32, 16, 8, 128);
  d4.b_order = Order::row_major;
  expect_error([&] { Plan p(*h_, d4); }, Status::not_supported, {"row-major 4-bit B"});
}

// Item 2: batched, stride 0 with padded leading dimensions: one definition of "packed" (ld x
// rows) on both backends; D's padding is never written.
TEST_F(Robust, BatchedPackedStridesWithPaddedLeadingDimensions) {
  std::mt19937_64 rng(seed() + 1);
  for (Order bo : {Order::col_major, Order::row_major})
    for (Order cdo : {Order::row_major, Order::col_major})
      for (T t : {T::bf16, T::s8}) {
        MatmulDesc d = desc_of(t, t, is_int(t) ? T::s32 : T::bf16, 40, 24, 2 * kstep(t));
        d.b_order = bo, d.cd_order = cdo;
        d.batch = 3;
        d.ldb = (bo == Order::row_major ? d.n : d.k) + 8;
        d.ldc = (cdo == Order::row_major ? d.n : d.m) + 5;
        d.ldd = (cdo == Order::row_major ? d.n : d.m) + 3;
        for (bool per_batch : {false, true}) {
          d.a_per_batch = per_batch;
          Images im = make_images(d, rng, {});
          RunOpts o;
          o.beta = 0.5f, o.alpha = 2.f;
          twin(d, im, o, *h_);
        }
      }
}

// Items 3, 4, 5 and the property test of the guards: every combination supported_types lists
// plans and computes what the CPU computes, on inputs with NaN, ±Inf and -0.0 in A, B, C and the
// bias, random layouts, epilogues, C type different from D type, in place.
TEST_F(Robust, EveryListedCombinationMatchesTheCpuWithSpecials) {
  std::mt19937_64 rng(seed() + 2);
  const auto list = supported_types(*h_);
  ASSERT_FALSE(list.empty());
  std::vector<T> cds_f = {T::f16, T::bf16, T::f32}, cds_i = {T::s32, T::s8};
  for (const TypeCombo& tc : list) {
    SCOPED_TRACE(std::string(type_name(tc.a)) + "." + std::string(type_name(tc.b)) + " -> " + std::string(type_name(tc.cd)));
    for (int rep = 0; rep < 2; ++rep) {
      const int64_t ms[] = {1, 17, 130}, ns[] = {1, 9, 130, 300};
      MatmulDesc d = desc_of(tc.a, tc.b, tc.cd, ms[rng() % 3], ns[rng() % 4], kstep(tc.a) * (1 + static_cast<int64_t>(rng() % 3)));
      const auto& cds = is_int(tc.a) ? cds_i : cds_f;
      d.c_type = cds[rng() % cds.size()];
      d.b_order = rng() % 2 ? Order::row_major : Order::col_major;
      if (bits_of(tc.b) == 4) d.b_order = Order::col_major;
      d.cd_order = rng() % 2 ? Order::row_major : Order::col_major;
      d.batch = 1 + static_cast<int64_t>(rng() % 3);
      d.a_per_batch = rng() % 2;
      d.bias = rng() % 2;
      d.activation = static_cast<Activation>(rng() % 3);
      if (rng() % 2) d.ldd = (d.cd_order == Order::row_major ? d.n : d.m) + 2;
      RunOpts o;
      o.mode = rng() % 2 ? PruneMode::magnitude : PruneMode::check;
      o.alpha = rep ? 0.75f : 1.f;
      o.beta = rng() % 2 ? 0.5f : 0.f;
      Specials sp{is_int(tc.a) ? 0.0 : 0.02};
      Images im = make_images(d, rng, sp);
      if (o.mode == PruneMode::check) {
        // A must satisfy its pattern: prune each entry on the host first.
        const int64_t na = d.a_per_batch ? d.batch : 1, sa = im.stride_a ? im.stride_a : im.lda * d.m;
        for (int64_t e = 0; e < na; ++e) {
          Matrix a(d.a_type, d.m, d.k);
          for (int64_t r = 0; r < d.m; ++r)
            for (int64_t c = 0; c < d.k; ++c) a.at(r, c) = load_element(im.a.data(), e * sa + r * im.lda + c, bits_of(d.a_type));
          const Pattern p = pattern_for(d.a_type);
          a = prune_magnitude(a, p);
          for (int64_t r = 0; r < d.m; ++r)
            for (int64_t c = 0; c < d.k; ++c) store_element(im.a.data(), e * sa + r * im.lda + c, bits_of(d.a_type), a.at(r, c));
        }
      }
      twin(d, im, o, *h_);
    }
  }
}

// Item 4 on its own: integer D with a NaN / ±Inf bias gives 0 / the limits on the GPU as on the CPU.
TEST_F(Robust, IntegerOutputWithNonFiniteBias) {
  std::mt19937_64 rng(seed() + 3);
  for (T cd : {T::s32, T::s8})
    for (int n : {8, 300}) {  // the sm90 epilogue's element path and split K's hand-over in the cluster
      MatmulDesc d = desc_of(T::s8, T::s8, cd, 130, n, n == 8 ? 4096 : 128);
      d.bias = true;
      Images im = make_images(d, rng, {});
      for (int64_t i = 0; i < d.m; ++i) im.bias[static_cast<size_t>(i)] = std::vector<float>{NAN, INFINITY, -INFINITY, 1.5f}[i % 4];
      twin(d, im, {}, *h_);
    }
}

// Item 5 on its own: NaN and Inf in B where A names nothing never reach D; at a named padding slot
// they give NaN; the CPU answers as the tensor cores do.
TEST_F(Robust, NonFiniteBOnlyThroughNamedPositions) {
  std::mt19937_64 rng(seed() + 4);
  for (T t : {T::bf16, T::f16, T::tf32, T::e4m3, T::e5m2}) {
    SCOPED_TRACE(std::string(type_name(t)));
    MatmulDesc d = desc_of(t, t, T::f32, 64, 40, 2 * kstep(t));
    Images im = make_images(d, rng, {});
    // A quarter of B non-finite: most of it lands on positions A does not name.
    for (int64_t j = 0; j < d.n; ++j)
      for (int64_t kk = 0; kk < d.k; ++kk)
        if (rng() % 4 == 0)
          store_element(im.b.data(), im.lb.index(0, kk, j), bits_of(t), encode(t, rng() % 2 ? NAN : INFINITY));
    twin(d, im, {}, *h_);
  }
  // An upload keeps the caller's named positions, unordered nibbles included: a stored zero at a
  // position of the caller's choice meets B's Inf on the GPU as on the CPU.
  MatmulDesc d = desc_of(T::bf16, T::bf16, T::f32, 3, 4, 32);
  Compressed c;
  c.type = T::bf16, c.pattern = Pattern::p2_4, c.rows = 3, c.cols = 32, c.ordered = false;
  c.values = Matrix(T::bf16, 3, 16);
  for (auto& v : c.values.bits) v = encode(T::bf16, 1.0);
  c.metadata.assign(3 * 2, 0);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t ch = 0; ch < 8; ++ch) c.set_nibble(r, ch, r == 1 ? 0x1 /* 1, 0: unordered */ : 0x4 /* 0, 1 */);
  c.values.at(0, 1) = 0;  // row 0 chunk 0: position 1 named, a stored zero
  Handle cpu(Device::cpu);
  SparseMatrix sc = upload(cpu, d, {c}), sg = upload(*h_, d, {c});
  std::vector<uint16_t> b(static_cast<size_t>(32 * 4), static_cast<uint16_t>(encode(T::bf16, 1.0)));
  b[1] = static_cast<uint16_t>(encode(T::bf16, INFINITY));  // column 0, k = 1
  b[2] = static_cast<uint16_t>(encode(T::bf16, NAN));       // column 0, k = 2: named by no row
  std::vector<float> dc(12), dg(12);
  Plan(cpu, d).run(sc, b.data(), nullptr, dc.data(), 1, 0);
  DevMem gb(b.size() * 2), gd(48);
  CK(cudaMemcpy(gb.base, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
  Plan(*h_, d).run(sg, gb.base, nullptr, gd.base, 1, 0);
  CK(cudaMemcpy(dg.data(), gd.base, 48, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(std::isnan(dc[0]) && std::isnan(dg[0])) << dc[0] << " " << dg[0];  // 0 · Inf
  for (int i = 1; i < 12; ++i) EXPECT_EQ(dc[static_cast<size_t>(i)], dg[static_cast<size_t>(i)]) << i;
  EXPECT_TRUE(std::isinf(dg[4]));  // row 1 (column 0) reads k = 1 with a stored 1.0
}

// Item 6: sizes at the grids' limits run (or are refused at plan time, naming the limit).
TEST_F(Robust, LaunchLimits) {
  std::mt19937_64 rng(seed() + 5);
  // batch > 65535 on both kernels (bf16: sm90 on Hopper; s4: sm80), shared and per-batch A.
  for (T t : {T::bf16, T::s4})
    for (bool per_batch : {false, true}) {
      MatmulDesc d = desc_of(t, t, is_int(t) ? T::s32 : T::f32, 16, 8, kstep(t));
      d.batch = 65537;
      d.a_per_batch = per_batch;
      Images im = make_images(d, rng, {});
      twin(d, im, {}, *h_);
    }
  // K above 65535·32 with a row-major B (transposed in the workspace).
  {
    MatmulDesc d = desc_of(T::bf16, T::bf16, T::f32, 16, 8, 65535 * 32 + 64);
    d.b_order = Order::row_major;
    Images im = make_images(d, rng, {});
    RunOpts o;
    o.acc_rel = 2e-3;  // f32 sums over 2^21 products, in different orders
    twin(d, im, o, *h_);
  }
  // M above 65535·128 rows on the sm80 kernel (s4 on Hopper), sampled rows checked.
  {
    MatmulDesc d = desc_of(T::s4, T::s4, T::s32, 65535 * 128 + 200, 8, 128);
    const size_t a_bytes = static_cast<size_t>(d.m * d.k / 2);
    std::vector<uint8_t> a(a_bytes, 0);
    for (int64_t r = 0; r < d.m; ++r) a[static_cast<size_t>(r * 64)] = static_cast<uint8_t>(1 + r % 7);  // A(r, 0)
    std::vector<uint8_t> b(static_cast<size_t>(d.k * d.n / 2), 0);
    for (int64_t j = 0; j < d.n; ++j) b[static_cast<size_t>(j * 64)] = static_cast<uint8_t>(1 + j % 5);  // B(0, j)
    DevMem ga(a_bytes), gb(b.size()), gd(static_cast<size_t>(d.m * d.n * 4));
    CK(cudaMemcpy(ga.base, a.data(), a_bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gb.base, b.data(), b.size(), cudaMemcpyHostToDevice));
    CK(cudaMemset(gd.base, 0xA5, gd.bytes));
    SparseMatrix s = compress(*h_, d, ga.base, 0, 0, PruneMode::check);
    Plan p(*h_, d);
    p.run(s, gb.base, nullptr, gd.base, 1, 0);
    std::vector<int32_t> out(static_cast<size_t>(d.m * d.n));
    CK(cudaMemcpy(out.data(), gd.base, out.size() * 4, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int64_t r = 0; r < d.m; r += (r < d.m - 300 ? 997 : 1))
      for (int64_t j = 0; j < d.n; ++j)
        if (out[static_cast<size_t>(r * d.n + j)] != (1 + r % 7) * (1 + j % 5) && ++bad <= 5)
          ADD_FAILURE() << "D(" << r << ", " << j << ") = " << out[static_cast<size_t>(r * d.n + j)];
    EXPECT_EQ(bad, 0) << p.describe();
  }
  // Refused at plan time: rows padded to 128 beyond 32 bits.
  MatmulDesc big = desc_of(T::bf16, T::bf16, T::f32, 2147483647, 8, 32);
  expect_error([&] { Plan p(*h_, big); }, Status::not_supported, {"2^31 - 128"});
}

// Item 10: pointer misuse fails with the reason instead of faulting.
TEST_F(Robust, PointerMisuse) {
  MatmulDesc d = desc_of(T::bf16, T::bf16, T::bf16, 64, 32, 64);
  DevMem a(64 * 64 * 2), b(64 * 32 * 2), c(64 * 32 * 2 + 64), dd(64 * 32 * 2);
  CK(cudaMemset(a.base, 0, a.bytes));
  SparseMatrix s = compress(*h_, d, a.base, 0, 0, PruneMode::check);
  Plan p(*h_, d);
  const auto IA = Status::invalid_argument;
  std::vector<uint8_t> host(1 << 16);
  expect_error([&] { p.run(s, host.data(), nullptr, dd.base, 1, 0); }, IA, {"Plan::run: b", "host memory"});
  void* pinned = nullptr;
  CK(cudaMallocHost(&pinned, 1 << 16));
  expect_error([&] { p.run(s, pinned, nullptr, dd.base, 1, 0); }, IA, {"page-locked host memory"});
  cudaFreeHost(pinned);
  expect_error([&] { compress(*h_, d, host.data(), 0, 0, PruneMode::check); }, IA, {"compress: a", "host memory"});
  expect_error([&] { compress(*h_, d, a.base + 1, 0, 0, PruneMode::check); }, IA, {"compress: a", "2-byte aligned"});
  // A buffer smaller than the description: a B of 4 MiB given an allocation of 1 MiB (larger than
  // any rounding of small allocations), at an address earlier tests may have used for larger ones.
  {
    MatmulDesc big = desc_of(T::bf16, T::bf16, T::bf16, 64, 512, 4096);
    DevMem ab(64 * 4096 * 2), db(64 * 512 * 2);
    CK(cudaMemset(ab.base, 0, ab.bytes));
    SparseMatrix sb = compress(*h_, big, ab.base, 0, 0, PruneMode::check);
    Plan pbig(*h_, big);
    DevMem ws(pbig.workspace_bytes());
    void* wsp = pbig.workspace_bytes() ? ws.base : nullptr;
    for (int i = 0; i < 3; ++i) {
      DevMem small((1 << 20) - 256);
      expect_error([&] { pbig.run(sb, small.base, nullptr, db.base, 1, 0, nullptr, wsp); }, IA,
                   {"runs past the end of its allocation"});
    }
  }
  // C and D: partial overlap, or in place with different layouts.
  expect_error([&] { p.run(s, b.base, c.base, c.base + 64, 1, 1); }, IA, {"overlap"});
  MatmulDesc dl = d;
  dl.ldd = 40;
  Plan pl(*h_, dl);
  expect_error([&] { pl.run(s, b.base, c.base, c.base, 1, 1); }, IA, {"c == d"});
  // A device pointer given to a CPU handle.
  Handle cpu(Device::cpu);
  SparseMatrix sc = compress(cpu, d, host.data(), 0, 0, PruneMode::magnitude);
  Plan pc(cpu, d);
  expect_error([&] { pc.run(sc, b.base, nullptr, host.data(), 1, 0); }, IA, {"is GPU memory"});
  // A compressed for the CPU given to a GPU plan, and the other way round.
  expect_error([&] { p.run(sc, b.base, nullptr, dd.base, 1, 0); }, IA, {"compressed for the CPU"});
}

// Item 9: a handle binds to one device; calls run there and restore the caller's device.
TEST_F(Robust, DeviceBinding) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  expect_error([&] { Handle h(Device::gpu, n); }, Status::not_supported, {"does not exist"});
  Handle h0(Device::gpu, 0);
  EXPECT_EQ(h0.gpu_ordinal(), 0);
  EXPECT_NE(h0.device_name().find("device 0"), std::string::npos) << h0.device_name();
  if (n < 2) GTEST_SKIP() << "one GPU: the cross-device half of this test needs two (run it on nvidia-h200-x2)";
  // Current device 0, a handle on device 1: every call runs on 1 and leaves 0 current.
  CK(cudaSetDevice(0));
  Handle h1(Device::gpu, 1);
  MatmulDesc d = desc_of(T::bf16, T::bf16, T::f32, 64, 16, 64);
  std::mt19937_64 rng(seed() + 6);
  Images im = make_images(d, rng, {});
  CK(cudaSetDevice(1));
  DevMem a1(im.a.size()), b1(im.b.size()), d1(im.d.size());
  CK(cudaMemcpy(a1.base, im.a.data(), im.a.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b1.base, im.b.data(), im.b.size(), cudaMemcpyHostToDevice));
  CK(cudaSetDevice(0));
  DevMem b0(im.b.size());
  SparseMatrix s1 = compress(h1, d, a1.base, im.lda, 0, PruneMode::magnitude);
  int cur = -1;
  CK(cudaGetDevice(&cur));
  EXPECT_EQ(cur, 0) << "compress left its device current";
  Plan p1(h1, d);
  p1.run(s1, b1.base, nullptr, d1.base, 1, 0);
  CK(cudaGetDevice(&cur));
  EXPECT_EQ(cur, 0);
  expect_error([&] { p1.run(s1, b0.base, nullptr, d1.base, 1, 0); }, Status::invalid_argument, {"memory of CUDA device 0"});
  expect_error([&] { compress(h0, d, a1.base, im.lda, 0, PruneMode::magnitude); }, Status::invalid_argument,
               {"memory of CUDA device 1", "device 0"});
  Plan p0(h0, d);
  DevMem d0(im.d.size());
  expect_error([&] { p0.run(s1, b0.base, nullptr, d0.base, 1, 0); }, Status::invalid_argument, {"A lives on CUDA device 1"});
}

// Item 11 and graphs: Plan::run enqueues without synchronising (capturable), a replay computes
// the same D; compress finishes its work before it returns.
TEST_F(Robust, GraphCaptureAndSynchronisation) {
  std::mt19937_64 rng(seed() + 7);
  MatmulDesc d1 = desc_of(T::bf16, T::bf16, T::bf16, 256, 16, 4096);  // split K (two kernels) on Hopper
  d1.b_order = Order::row_major;                                     // plus B's transpose
  d1.bias = true;
  Images im1 = make_images(d1, rng, {});
  RunOpts g;
  g.graph = true;
  twin(d1, im1, g, *h_);
  MatmulDesc d2 = desc_of(T::s4, T::s4, T::s8, 130, 40, 256);  // the sm80 kernel
  d2.ldb = 260;                                                 // copied into the workspace
  Images im2 = make_images(d2, rng, {});
  twin(d2, im2, g, *h_);
  // compress synchronises its stream: nothing is pending when it returns.
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  DevMem a(static_cast<size_t>(d1.m * d1.k * 2));
  CK(cudaMemset(a.base, 0x3C, a.bytes));
  SparseMatrix sm = compress(*h_, d1, a.base, 0, 0, PruneMode::magnitude, s);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  cudaStreamDestroy(s);
}

// Plans launch through the driver (cuLaunchKernelEx, src/cuda/launch.hpp) with what they decided
// when they were made: a thread that has made no CUDA call runs them, on the default stream (the
// launch binds the device's context first) and on a stream of its own; each kernel family.
TEST_F(Robust, RunsFromAFreshThreadMatchTheCpu) {
  std::mt19937_64 rng(seed() + 8);
  const std::tuple<KernelFamily, MatmulDesc> cases[] = {
      {KernelFamily::sm90, desc_of(T::bf16, T::bf16, T::bf16, 384, 96, 512)},
      {KernelFamily::decode, desc_of(T::e4m3, T::e4m3, T::bf16, 2048, 8, 512)},
      {KernelFamily::sm80, desc_of(T::f16, T::f16, T::f32, 200, 40, 256)}};
  for (const auto& [family, d] : cases) {
    if (family != KernelFamily::sm80 && !sm90_runs()) continue;  // the sm90 kernels need sm_90a on an sm_90 GPU
    const Images im = make_images(d, rng, {});
    for (int how : {1, 2}) {
      RunOpts o;
      o.fresh_thread = how;
      o.plan.kernel = family;
      SCOPED_TRACE(std::string(type_name(d.a_type)) + (how == 1 ? ", default stream" : ", the thread's stream"));
      twin(d, im, o, *h_);
    }
  }
}

// Logging: each slower path is reported once, at plan time, at the hints level.
TEST_F(Robust, SlowerPathsAreReported) {
  std::vector<std::string> hints;  // those about B (a plan on the sm80 kernel adds one of its own)
  set_log_callback([&](LogLevel l, std::string_view, std::string_view msg) {
    if (l == LogLevel::hints && msg.rfind("B is", 0) == 0) hints.emplace_back(msg);
  });
  const LogLevel before = log_level();
  set_log_level(LogLevel::hints);
  MatmulDesc d = desc_of(T::bf16, T::bf16, T::f32, 64, 16, 64);
  { Plan p(*h_, d); }
  const size_t clean = hints.size();
  d.ldb = d.k + 4;
  { Plan p(*h_, d); }
  d.ldb = 0, d.b_order = Order::row_major;
  { Plan p(*h_, d); }
  set_log_level(before);
  set_log_callback(nullptr);
  ASSERT_EQ(hints.size(), clean + 2);
  EXPECT_NE(hints[clean].find("copied"), std::string::npos) << hints[clean];
  EXPECT_NE(hints[clean + 1].find("transposed"), std::string::npos) << hints[clean + 1];
}

// The build's architectures decide what a handle offers: whatever it lists plans, and fp8 on the
// mma.sp kernel appears only with sm_89 machine code or PTX loaded.
TEST_F(Robust, ListedTypesMatchTheLoadedKernels) {
  for (const TypeCombo& t : supported_types(*h_)) {
    MatmulDesc d = desc_of(t.a, t.b, t.cd, 16, 8, kstep(t.a));
    Plan p(*h_, d);
    EXPECT_FALSE(p.describe().empty());
  }
  if (h_->compute_capability() == 90) {
    MatmulDesc d = desc_of(T::bf16, T::bf16, T::f32, 16, 8, 32);
    Plan p(*h_, d);
    std::cout << "[   info   ] " << h_->device_name() << ": " << p.describe() << "\n";
  }
}

// Item 11: after an asynchronous fault the next call says the context died earlier, not that it
// failed itself. In a child process (the fault kills the context for good).
__global__ void trap_kernel() { __trap(); }
[[noreturn]] void fault_then_run() {
  Handle h(Device::gpu);
  MatmulDesc d = desc_of(T::bf16, T::bf16, T::f32, 16, 8, 32);
  Plan p(h, d);
  void *a = nullptr, *b = nullptr, *o = nullptr;
  cudaMalloc(&a, 4096);
  cudaMalloc(&b, 4096);
  cudaMalloc(&o, 4096);
  cudaMemset(a, 0, 4096);
  SparseMatrix s = compress(h, d, a, 0, 0, PruneMode::check);
  trap_kernel<<<1, 1>>>();
  cudaDeviceSynchronize();
  try {
    p.run(s, b, nullptr, o, 1, 0);
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    std::exit(std::string(e.what()).find("earlier") != std::string::npos ? 0 : 3);
  }
  std::exit(4);
}
TEST_F(Robust, StickyErrorIsReportedAsEarlier) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fault_then_run(), ::testing::ExitedWithCode(0), "earlier");
}

// Item 8: what a build offers on this GPU follows from the machine code the driver loads. Run on
// the H100 with the default architectures (sm_90a: the sm90 kernel), with PTX only (compute_89:
// the mma.sp kernel for every type, fp8 included) and with sm_80 machine code only (nothing
// loads: Device::gpu refuses with the reason, automatic falls back to the CPU and says why).
// scripts/device-robustness.sh builds the last two and checks the "[  build   ]" line.
TEST(BuildArchitectures, HandleFollowsTheLoadedMachineCode) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA GPU on this machine";
  try {
    Handle h(Device::gpu);
    MatmulDesc d = desc_of(T::bf16, T::bf16, T::f32, 16, 8, 32);
    Plan p(h, d);
    bool fp8 = false;
    for (const TypeCombo& t : supported_types(h)) fp8 |= t.a == T::e4m3;
    std::cout << "[  build   ] loads: " << h.device_name() << "; bf16 plan: " << p.describe()
              << "; fp8 listed: " << (fp8 ? "yes" : "no") << "\n";
    Handle a(Device::automatic);
    EXPECT_EQ(a.device(), Device::gpu);
    EXPECT_EQ(a.fallback_reason(), "");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::not_supported);
    EXPECT_NE(std::string(e.what()).find("do not load"), std::string::npos) << e.what();
    Handle a(Device::automatic);
    EXPECT_EQ(a.device(), Device::cpu);
    EXPECT_NE(a.fallback_reason().find("do not load"), std::string::npos) << a.fallback_reason();
    EXPECT_TRUE(supported_types(Device::gpu).empty());
    std::cout << "[  build   ] refused: " << e.what() << "\n";
  }
}

// Every configuration of the kernels on purpose, not by shape luck (issue 9): each sm90 tile
// width, split count and rasterization group, and the sm80 kernel for every listed type, pinned
// through PlanOptions, each against the CPU on the same inputs; and what a plan cannot take is
// refused, naming why.
TEST_F(Robust, EveryPinnedConfigurationMatchesTheCpu) {
  std::mt19937_64 rng(seed() + 8);
  if (sm90_runs()) {
    // Every instantiation of the sm90 kernel, each on purpose: every pair of the pair table the
    // kernel covers, every tile width, with and without fp8 promotion (a width the kernel is not
    // built with must be refused, naming the widths it has), split counts 1-4 in turn, every C/D
    // type in turn; bf16 and e4m3 take every split count at every width. The main loop's windows
    // of kWindow stages and its one-stage tail both run: 17 stages (odd) with 1-3 splits (17;
    // 10 + 7; 6 + 6 + 5), 16 with 4.
    int runs = 0, turn = 0;
    for (const detail::GemmPair& pair : detail::kGemmPairs) {
      if (pair.a == T::s4 || pair.a == T::u4) continue;  // no 4-bit wgmma on sm_90
      for (bool fast : {false, true}) {
        if (fast && !detail::gemm_promotes(pair.a)) continue;
        for (int tile : {64, 128, 192, 256}) {
          const bool promoted = detail::gemm_promotes(pair.a) && !fast;
          const bool built = promoted || tile != 192;
          const bool all_splits = (pair.a == T::bf16 || pair.a == T::e4m3) && pair.a == pair.b;
          for (int splits = 1; splits <= 4; ++splits) {
            if (!all_splits && splits != 1 + turn % 4) continue;
            const auto outs = detail::gemm_outputs(pair.a);
            const T cd = outs[static_cast<size_t>(turn++) % outs.size()];
            SCOPED_TRACE(std::string(type_name(pair.a)) + " x " + std::string(type_name(pair.b)) + " -> " +
                         std::string(type_name(cd)) + (fast ? " fast" : "") + " tile " + std::to_string(tile) +
                         " splits " + std::to_string(splits));
            // Pipeline stages of 2 K steps; splits take whole pairs of stages.
            MatmulDesc d = desc_of(pair.a, pair.b, cd, 200, 150, (splits == 4 ? 32 : 33) * kstep(pair.a));
            d.fast_accumulation = fast;
            d.bias = splits % 2 == 1;
            RunOpts o;
            o.plan.kernel = KernelFamily::sm90;
            o.plan.tile_n = tile, o.plan.splits = splits, o.plan.group_m = 1 + static_cast<int>(rng() % 3);
            // Split K runs one cluster per tile: a persistent grid is refused with it (below).
            o.plan.grid = turn % 2 && splits == 1 ? GridKind::persistent : GridKind::per_tile;
            if (!built) {
              const std::string pin = "tile_n = " + std::to_string(tile);
              expect_error([&] { Plan(*h_, d, o.plan); }, Status::not_supported,
                           {pin.c_str(), "64, 128, 256", "promoted fp8 sums only"});
              break;
            }
            o.beta = splits == 3 ? 0.5f : 0.f;
            Images im = make_images(d, rng, {});
            for (int cluster : {1, 2}) {  // M = 200: two M tiles, one cluster of 2
              SCOPED_TRACE("cluster " + std::to_string(cluster));
              o.plan.cluster_m = cluster;
              twin(d, im, o, *h_);
              const PlanInfo info = Plan(*h_, d, o.plan).info();
              EXPECT_EQ(info.kernel, KernelFamily::sm90);
              EXPECT_EQ(info.tile_n, tile);
              EXPECT_EQ(info.splits, splits);
              EXPECT_EQ(info.group_m, o.plan.group_m);
              EXPECT_EQ(info.cluster_m, cluster);
              EXPECT_EQ(info.persistent, o.plan.grid == GridKind::persistent);
              EXPECT_GE(info.stages, 3);
              ++runs;
            }
          }
        }
      }
    }
    EXPECT_GE(runs, 98);  // at least one run of each of the 49 instantiations, alone and in a cluster of 2
    // What a plan cannot take.
    const auto IA = Status::invalid_argument, NS = Status::not_supported;
    MatmulDesc d = desc_of(T::bf16, T::bf16, T::f32, 200, 150, 256);  // 4 stages
    PlanOptions p;
    p.tile_n = 100;
    expect_error([&] { Plan(*h_, d, p); }, IA, {"PlanOptions.tile_n = 100", "64, 128, 192 and 256"});
    p.tile_n = 192;
    expect_error([&] { Plan(*h_, d, p); }, NS, {"tile_n = 192"});
    p = {};
    p.splits = 3;
    expect_error([&] { Plan(*h_, d, p); }, NS, {"splits = 3", "4 pipeline stages", "2 splits would run"});
    p.splits = 9;
    expect_error([&] { Plan(*h_, d, p); }, IA, {"splits = 9", "at most 8", "CTAs of a cluster"});
    MatmulDesc long_k = desc_of(T::bf16, T::bf16, T::f32, 200, 150, 2048);  // 32 stages
    p.splits = 8, p.cluster_m = 2;
    expect_error([&] { Plan(*h_, long_k, p); }, NS, {"splits = 8 with cluster_m = 2", "cluster_m x splits", "at most 8"});
    p.splits = 4, p.cluster_m = 0, p.grid = GridKind::persistent;
    expect_error([&] { Plan(*h_, long_k, p); }, NS, {"grid = persistent with split K in 4", "one cluster per tile"});
    p.grid = GridKind::automatic;
    EXPECT_FALSE(Plan(*h_, long_k, p).info().persistent);
    p = {};
    p.cluster_m = 3;
    expect_error([&] { Plan(*h_, d, p); }, IA, {"cluster_m = 3", "1 or 2"});
    p.cluster_m = -1;
    expect_error([&] { Plan(*h_, d, p); }, IA, {"cluster_m = -1", "must not be negative"});
    MatmulDesc f8 = desc_of(T::e4m3, T::e4m3, T::f32, 200, 150, 256);
    p = {};
    f8.fast_accumulation = true;  // the tensor cores' own sums: 192 is built promoted only
    p.tile_n = 192;
    expect_error([&] { Plan(*h_, f8, p); }, NS, {"tile_n = 192", "64, 128, 256", "promoted fp8 sums only"});
    p = {};
    p.promotion_k = 64;
    f8.fast_accumulation = false;
    expect_error([&] { Plan(*h_, f8, p); }, IA, {"promotion_k = 64", "every 128 or 256 of K"});
    p.promotion_k = -128;
    expect_error([&] { Plan(*h_, f8, p); }, IA, {"promotion_k = -128", "must not be negative"});
    p.promotion_k = 256;
    EXPECT_EQ(Plan(*h_, f8, p).info().promotion_k, 256);
    EXPECT_EQ(Plan(*h_, f8).info().promotion_k, 256);
    f8.fast_accumulation = true;
    expect_error([&] { Plan(*h_, f8, p); }, NS, {"promotion_k = 256", "stay in the tensor cores"});
    EXPECT_EQ(Plan(*h_, f8).info().promotion_k, 0);
    expect_error([&] { Plan(*h_, d, p); }, NS, {"promotion_k = 256", "bf16: nothing to promote"});
    f8.fast_accumulation = false;
    p.kernel = KernelFamily::decode;
    expect_error([&] { Plan(*h_, f8, p); }, NS, {"promotion_k", "decode kernel"});
    p.kernel = KernelFamily::sm80;
    expect_error([&] { Plan(*h_, f8, p); }, NS, {"promotion_k", "sm80 kernel"});
    MatmulDesc s4 = desc_of(T::s4, T::s4, T::s32, 200, 150, 256);
    p = {};
    p.kernel = KernelFamily::sm90;
    expect_error([&] { Plan(*h_, s4, p); }, NS, {"kernel = sm90", "no wgmma.sp form"});
    p = {};
    p.kernel = KernelFamily::sm80, p.tile_n = 128;
    expect_error([&] { Plan(*h_, d, p); }, NS, {"sm80 kernel", "no split K"});
    p.tile_n = 0, p.cluster_m = 2;
    expect_error([&] { Plan(*h_, d, p); }, NS, {"cluster_m", "sm80 kernel"});
    p.cluster_m = 0, p.grid = GridKind::persistent;
    expect_error([&] { Plan(*h_, d, p); }, NS, {"grid", "sm80 kernel"});
    p.grid = static_cast<GridKind>(7);
    expect_error([&] { Plan(*h_, d, p); }, IA, {"PlanOptions.grid = 7", "GridKind"});
  }
  // The sm80 kernel, pinned, for every listed type (on Hopper it otherwise runs only 4-bit types).
  for (const TypeCombo& tc : supported_types(*h_)) {
    if (tc.cd != (type_info(tc.a).is_float ? T::f32 : T::s32)) continue;
    SCOPED_TRACE(std::string(type_name(tc.a)) + "." + std::string(type_name(tc.b)) + " on the sm80 kernel");
    MatmulDesc d = desc_of(tc.a, tc.b, tc.cd, 130, 70, 2 * kstep(tc.a));
    RunOpts o;
    o.plan.kernel = KernelFamily::sm80;
    Images im = make_images(d, rng, {});
    twin(d, im, o, *h_);
    EXPECT_EQ(Plan(*h_, d, o.plan).info().kernel, KernelFamily::sm80);
  }
}

// Clusters of 2 CTAs sharing B by multicast, where they are easy to get wrong: an odd number of M
// tiles (the last cluster's second CTA lies past A's rows and must store nothing, yet load and
// share its half of B), one M tile, N not a multiple of the tile or of half of it, batches with
// A shared and per entry, split K, both D layouts, C, against the CPU.
TEST_F(Robust, ClustersOfTwoMatchTheCpu) {
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  std::mt19937_64 rng(seed() + 9);
  int turn = 0;
  for (T t : {T::bf16, T::e4m3, T::s8})
    for (int64_t m : {300, 100, 520})  // 3, 1 and 5 M tiles of 128
      for (int splits : {1, 2}) {
        const T cd = is_int(t) ? T::s32 : T::bf16;
        MatmulDesc d = desc_of(t, t, cd, m, 72 + 40 * (turn % 3), 8 * kstep(t));  // 4 stages
        d.batch = 1 + turn % 3;
        d.a_per_batch = turn % 2 == 1;
        d.cd_order = turn % 2 ? Order::col_major : Order::row_major;
        d.bias = turn % 3 != 1;
        SCOPED_TRACE(std::string(type_name(t)) + " m " + std::to_string(m) + " n " + std::to_string(d.n) + " batch " +
                     std::to_string(d.batch) + " splits " + std::to_string(splits));
        RunOpts o;
        o.plan.cluster_m = 2, o.plan.splits = splits;
        o.plan.tile_n = turn % 2 ? 64 : 128;
        o.beta = turn % 2 ? 0.5f : 0.f;
        Images im = make_images(d, rng, {});
        twin(d, im, o, *h_);
        const Plan plan(*h_, d, o.plan);
        EXPECT_EQ(plan.info().cluster_m, 2);
        EXPECT_NE(plan.describe().find("clusters of 2"), std::string::npos) << plan.describe();
        ++turn;
      }
}

// The persistent grid: more tiles than CTAs that fit the GPU (a CTA, or a cluster of 2, takes
// tile after tile, its pipeline running on from one tile into the next), every way out of the
// epilogue (plain pairs from registers, the scratch blocks' general epilogue), both D layouts,
// odd N, batches, clusters of 2 with an odd number of M tiles. (Split K runs one cluster per
// tile: SplitKInsideTheClusterMatchesTheCpu.)
TEST_F(Robust, PersistentGridMatchesTheCpu) {
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  std::mt19937_64 rng(seed() + 11);
  struct Case {
    T a, cd;
    int64_t n;
    int tile, cluster, splits, batch;
    bool general;  // bias / scale vectors / C / GELU / column-major D: the scratch blocks
    bool fast = false;
  };
  const Case cases[] = {
      {T::bf16, T::bf16, 1100, 64, 1, 1, 1, false},  {T::bf16, T::f32, 1100, 128, 2, 1, 1, false},
      {T::e4m3, T::bf16, 1100, 256, 2, 1, 2, true},  {T::s8, T::s8, 1100, 128, 1, 1, 1, true},
      {T::bf16, T::f16, 1100, 128, 1, 1, 2, false},  {T::bf16, T::bf16, 1101, 64, 2, 1, 1, false},
      {T::s8, T::s32, 1100, 256, 2, 1, 2, false},    {T::e4m3, T::f16, 1100, 256, 1, 1, 2, true, true},
      {T::e4m3, T::f32, 1100, 192, 2, 1, 2, false},
  };
  int turn = 0;
  for (const Case& c : cases) {
    // 15 M tiles; 2 stages, or 12 with split K (splits take whole pairs of stages)
    MatmulDesc d = desc_of(c.a, c.a, c.cd, 1900, c.n, (c.splits > 1 ? 24 : 4) * kstep(c.a));
    d.batch = c.batch;
    d.fast_accumulation = c.fast;
    RunOpts o;
    if (c.general) {
      d.bias = turn % 2 == 0;
      d.scale_rows = d.scale_cols = true;
      d.cd_order = turn % 3 == 0 ? Order::col_major : Order::row_major;
      d.activation = is_int(c.a) ? Activation::relu : Activation::gelu;
      o.beta = turn % 2 ? 0.5f : 0.f;
    }
    o.plan.tile_n = c.tile, o.plan.cluster_m = c.cluster, o.plan.splits = c.splits;
    o.plan.grid = GridKind::persistent;
    EXPECT_TRUE(Plan(*h_, d, o.plan).info().persistent);
    SCOPED_TRACE(std::string(type_name(c.a)) + " -> " + std::string(type_name(c.cd)) + " n " + std::to_string(c.n) +
                 " tile " + std::to_string(c.tile) + " cluster " + std::to_string(c.cluster) + " splits " +
                 std::to_string(c.splits) + " batch " + std::to_string(c.batch) + (c.general ? " general" : " plain"));
    const int64_t tiles = 15 * ((c.n + c.tile - 1) / c.tile) * c.batch * c.splits;
    ASSERT_GT(tiles, 132) << "a case with no CTA taking a second tile";
    Images im = make_images(d, rng, {});
    twin(d, im, o, *h_);
    ++turn;
  }
}

// fp8 sums promoted every 128 and every 256 of K (PlanOptions::promotion_k: one or two pipeline
// stages per f32 add) against the CPU, each to its bound (kFp8MmaRel128, kFp8MmaRel): every tile
// width, fp8 type and D type; an odd number of stages (the last promoted alone) and an even one;
// a persistent grid with tiles taken in turn, clusters of 2, split K (whole pairs of stages per
// part), batches, the general epilogue, column-major D, a CUDA graph.
TEST_F(Robust, Fp8PromotionIntervalsMatchTheCpu) {
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  std::mt19937_64 rng(seed() + 17);
  struct Case {
    T a, b, cd;
    int64_t m, n;
    int stages, tile, cluster, splits;
    bool persistent, general;
  };
  const Case cases[] = {
      {T::e4m3, T::e4m3, T::bf16, 200, 150, 7, 256, 1, 1, false, false},
      {T::e4m3, T::e4m3, T::f32, 1900, 1100, 4, 256, 2, 1, true, true},  // 15 x 5 tiles x 2 entries
      {T::e5m2, T::e4m3, T::f16, 260, 190, 9, 192, 1, 1, false, true},
      {T::e4m3, T::e5m2, T::e4m3, 200, 120, 6, 128, 2, 1, false, false},
      {T::e5m2, T::e5m2, T::bf16, 1900, 600, 5, 64, 1, 1, true, false},  // 15 x 10 tiles x 2 entries
      {T::e4m3, T::e4m3, T::bf16, 300, 256, 24, 256, 1, 2, false, true},
      {T::e4m3, T::e4m3, T::f32, 260, 40, 21, 64, 2, 3, false, false},
  };
  int turn = 0;
  for (const Case& c : cases) {
    for (int promotion_k : {128, 256}) {
      MatmulDesc d = desc_of(c.a, c.b, c.cd, c.m, c.n, 2 * c.stages * kstep(c.a));
      d.batch = c.persistent ? 2 : 1 + turn % 2;  // persistent: more tiles than SMs, each interval
      d.a_per_batch = turn % 3 == 1;
      d.cd_order = turn % 2 ? Order::col_major : Order::row_major;
      RunOpts o;
      if (c.general) {
        d.bias = true;
        d.scale_rows = turn % 2 == 0, d.scale_cols = true;
        d.activation = Activation::gelu;
        o.alpha = 0.75f, o.beta = 0.5f;
      }
      o.plan.kernel = KernelFamily::sm90;
      o.plan.promotion_k = promotion_k;
      o.plan.tile_n = c.tile, o.plan.cluster_m = c.cluster, o.plan.splits = c.splits;
      o.plan.grid = c.persistent ? GridKind::persistent : GridKind::per_tile;
      o.graph = turn % 3 == 2 && o.beta == 0.f;
      o.acc_rel = promotion_k == 128 ? kFp8MmaRel128 : kFp8MmaRel;
      o.check_rows = c.m > 1000 ? 256 : 0;
      const Plan plan(*h_, d, o.plan);
      const PlanInfo info = plan.info();
      SCOPED_TRACE(std::string(type_name(c.a)) + " x " + std::string(type_name(c.b)) + " -> " +
                   std::string(type_name(c.cd)) + " stages " + std::to_string(c.stages) + " batch " +
                   std::to_string(d.batch) + ": " + plan.describe());
      EXPECT_EQ(info.promotion_k, promotion_k);
      EXPECT_EQ(info.tile_n, c.tile);
      EXPECT_EQ(info.splits, c.splits);
      const std::string every = promotion_k == 128 ? "every 2 instructions (K = 128)" : "every 4 instructions (K = 256)";
      EXPECT_NE(plan.describe().find(every), std::string::npos);
      if (c.persistent) {
        const int64_t tiles = (c.m + 127) / 128 * ((c.n + c.tile - 1) / c.tile) * d.batch;
        EXPECT_TRUE(info.persistent);
        EXPECT_GT(tiles, 132) << "a persistent case with no CTA taking a second tile";
      }
      Images im = make_images(d, rng, {});
      twin(d, im, o, *h_);
      ++turn;
    }
  }
}

// What each interval costs in accuracy, measured: e4m3 × e4m3 → f32, 256 × 256 outputs over K =
// 8192 of normal random values (A pruned by magnitude), against the products summed in double.
// Printed: the worst |D − exact| / Σ|a·b| and the relative L2 error, every 128 of K, every 256,
// and fast_accumulation (the tensor cores' sums over the whole K). Each within its bound, and
// the coarser sums no closer than the finer (with 65,536 outputs of 4,096 products each the
// truncations' one-sided drift leaves no doubt of the order).
TEST_F(Robust, Fp8PromotionAccuracyIsMeasured) {
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  std::mt19937_64 rng(seed() + 19);
  const int64_t m = 256, n = 256, k = 8192;
  const MatmulDesc d = desc_of(T::e4m3, T::e4m3, T::f32, m, n, k);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<uint8_t> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(n * k));
  for (auto& x : a) x = static_cast<uint8_t>(encode(T::e4m3, nd(rng)));
  for (auto& x : b) x = static_cast<uint8_t>(encode(T::e4m3, nd(rng)));
  DevMem ga(a.size()), gb(b.size()), gd(static_cast<size_t>(m * n) * 4);
  ASSERT_TRUE(ga.base && gb.base && gd.base);
  CK(cudaMemcpy(ga.base, a.data(), a.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(gb.base, b.data(), b.size(), cudaMemcpyHostToDevice));
  const SparseMatrix sa = compress(*h_, d, ga.base, k, 0, PruneMode::magnitude);
  const Matrix pruned = decompress(sa.to_host(0));
  std::vector<double> av(static_cast<size_t>(m * k)), bv(b.size()), exact(static_cast<size_t>(m * n)), mag(exact.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk) av[static_cast<size_t>(i * k + kk)] = decode(T::e4m3, pruned.at(i, kk));
  for (size_t i = 0; i < b.size(); ++i) bv[i] = decode(T::e4m3, b[i]);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, g = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double x = av[static_cast<size_t>(i * k + kk)] * bv[static_cast<size_t>(j * k + kk)];
        s += x, g += std::fabs(x);
      }
      exact[static_cast<size_t>(i * n + j)] = s, mag[static_cast<size_t>(i * n + j)] = g;
    }
  double l2[3] = {};
  for (int variant = 0; variant < 3; ++variant) {  // promotion_k 128, 256, fast accumulation
    MatmulDesc dv = d;
    dv.fast_accumulation = variant == 2;
    PlanOptions p;
    p.kernel = KernelFamily::sm90;
    if (variant < 2) p.promotion_k = 128 << variant;
    const Plan plan(*h_, dv, p);
    CK(cudaMemset(gd.base, 0xA7, static_cast<size_t>(m * n) * 4));
    plan.run(sa, gb.base, nullptr, gd.base, 1.f, 0.f);
    std::vector<float> out(static_cast<size_t>(m * n));
    CK(cudaMemcpy(out.data(), gd.base, out.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0, num = 0, den = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const double e = static_cast<double>(out[i]) - exact[i];
      worst = std::max(worst, std::fabs(e) / mag[i]);
      num += e * e, den += exact[i] * exact[i];
    }
    l2[variant] = std::sqrt(num / den);
    const char* what[] = {"promotion_k 128", "promotion_k 256", "fast_accumulation"};
    std::cout << "[ accuracy ] e4m3 " << m << "x" << n << "x" << k << ", " << what[variant] << ": worst |D - exact| / sum|a*b| 2^"
              << std::log2(worst) << ", relative L2 error " << l2[variant] << "\n";
    if (variant < 2) EXPECT_LE(worst, variant == 0 ? kFp8MmaRel128 : kFp8MmaRel) << what[variant];
  }
  EXPECT_LE(l2[0], l2[1]) << "sums promoted every 128 of K no worse than every 256";
  EXPECT_LE(l2[1], l2[2]) << "sums promoted every 256 of K no worse than none";
}

// The promotion interval is what runs, shown by sums the tensor cores' fewer bits cannot hold:
// each row's first K step has one product of 2^10, its second stage 64 products of 2^-12 (2^-22
// of it, below the ~14 bits the H100's fp8 sums keep, docs/api.md "fp8 accuracy"). Promoted
// every 128 of K the two stages are summed apart and added in f32: exactly 2^10 + 2^-6. Every 256
// of K (and with fast_accumulation, over the whole K) the small products join the large sum in
// the tensor cores and are lost, so D differs from that, within the 128-product bound.
TEST_F(Robust, Fp8PromotionIntervalIsWhatRuns) {
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  const int64_t m = 128, n = 64, k = 256;
  MatmulDesc d = desc_of(T::e4m3, T::e4m3, T::f32, m, n, k);
  std::vector<uint8_t> a(static_cast<size_t>(m * k), 0), b(static_cast<size_t>(n * k), 0);
  const uint8_t small = static_cast<uint8_t>(encode(T::e4m3, 0x1p-6)), big_a = static_cast<uint8_t>(encode(T::e4m3, 16.0)),
                big_b = static_cast<uint8_t>(encode(T::e4m3, 64.0));
  for (int64_t r = 0; r < m; ++r) {
    a[static_cast<size_t>(r * k)] = big_a;
    for (int64_t c = 128; c < k; c += 4)  // two of each four: 2:4
      a[static_cast<size_t>(r * k + c + (r % 3))] = a[static_cast<size_t>(r * k + c + 3)] = small;
  }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t c = 0; c < k; ++c) b[static_cast<size_t>(j * k + c)] = c == 0 ? big_b : small;  // column-major B
  DevMem ga(a.size()), gb(b.size()), gd(static_cast<size_t>(m * n) * 4);
  ASSERT_TRUE(ga.base && gb.base && gd.base);
  CK(cudaMemcpy(ga.base, a.data(), a.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(gb.base, b.data(), b.size(), cudaMemcpyHostToDevice));
  const SparseMatrix sa = compress(*h_, d, ga.base, k, 0, PruneMode::check);
  const float exact = 1024.0f + 0x1p-6f, bound = static_cast<float>(kFp8MmaRel * exact);
  for (int variant = 0; variant < 3; ++variant) {  // promotion_k 128, 256, fast accumulation
    MatmulDesc dv = d;
    dv.fast_accumulation = variant == 2;
    PlanOptions p;
    p.kernel = KernelFamily::sm90;
    if (variant < 2) p.promotion_k = 128 << variant;
    const Plan plan(*h_, dv, p);
    SCOPED_TRACE(plan.describe());
    EXPECT_EQ(plan.info().promotion_k, variant < 2 ? 128 << variant : 0);
    CK(cudaMemset(gd.base, 0xA7, static_cast<size_t>(m * n) * 4));
    plan.run(sa, gb.base, nullptr, gd.base, 1.f, 0.f);
    std::vector<float> out(static_cast<size_t>(m * n));
    CK(cudaMemcpy(out.data(), gd.base, out.size() * 4, cudaMemcpyDeviceToHost));
    int exact_count = 0, bad = 0;
    for (float v : out) {
      exact_count += v == exact;
      if (!(std::fabs(v - exact) <= bound) && ++bad <= 3) ADD_FAILURE() << "D " << v << " against " << exact;
    }
    if (variant == 0) EXPECT_EQ(exact_count, m * n) << "every 128 of K: the two stages summed apart, added in f32";
    else EXPECT_EQ(exact_count, 0) << "the small products summed with the large one in the tensor cores";
  }
}

// Split K inside a cluster (issue 12: one launch, deterministic, capturable): every part count
// 2-8 and every tile width, the decode sweep's N (1 .. 256) and odd N, both D layouts, batches
// with A shared and per entry, the general epilogue, clusters of 2 along M times the parts, in a
// CUDA graph; each against the CPU, and each run again three times to the same bytes. The plans
// that split need no workspace (B in place), and the heuristics' own choice splits too.
TEST_F(Robust, SplitKInsideTheClusterMatchesTheCpu) {
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  std::mt19937_64 rng(seed() + 13);
  struct Case {
    T a, cd;
    int64_t m, n;
    int splits, tile, cluster;  // splits 0 / tile 0: the heuristics' choice
    bool general = false, fast = false;
    int steps = 64;  // K steps: 32 stages of 2 (5 and 7 parts need 40 and 42: whole pairs of stages each)
  };
  const Case cases[] = {
      {T::bf16, T::bf16, 300, 1, 0, 0, 1},         {T::bf16, T::bf16, 300, 8, 8, 64, 1},
      {T::bf16, T::f32, 260, 16, 2, 64, 1, true},  {T::bf16, T::bf16, 300, 32, 3, 0, 1},
      {T::bf16, T::bf16, 300, 64, 0, 0, 1, true},  {T::bf16, T::f16, 200, 128, 5, 128, 1, false, false, 80},
      {T::bf16, T::bf16, 300, 256, 4, 256, 2},     {T::f16, T::f16, 130, 7, 6, 0, 1, true},
      {T::tf32, T::f32, 300, 33, 7, 0, 1, false, false, 84},         {T::e4m3, T::bf16, 300, 16, 0, 0, 1},
      {T::e4m3, T::f32, 260, 8, 4, 64, 2, true},   {T::e4m3, T::e4m3, 300, 192, 3, 192, 1, true},
      {T::e4m3, T::bf16, 300, 256, 2, 256, 1, false, true},  {T::e5m2, T::f16, 300, 17, 8, 0, 1},
      {T::s8, T::s32, 300, 1, 0, 0, 1},            {T::s8, T::s8, 260, 64, 4, 64, 2, true},
      {T::s8, T::s32, 300, 256, 2, 256, 1},        {T::u8, T::s32, 300, 5, 3, 0, 1},
  };
  int turn = 0;
  for (const Case& c : cases) {
    MatmulDesc d = desc_of(c.a, c.a, c.cd, c.m, c.n, c.steps * kstep(c.a));
    d.fast_accumulation = c.fast;
    d.batch = 1 + turn % 3;
    d.a_per_batch = turn % 2 == 1;
    d.cd_order = turn % 2 ? Order::col_major : Order::row_major;
    RunOpts o;
    if (c.general) {
      d.bias = true;
      d.scale_rows = turn % 3 != 0, d.scale_cols = turn % 3 != 1;
      d.activation = is_int(c.a) ? Activation::relu : Activation::gelu;
      o.alpha = c.cd == T::s8 ? 1.f / 64 : 0.75f;
      o.beta = turn % 2 ? 0.5f : 0.f;
    }
    o.plan.splits = c.splits, o.plan.tile_n = c.tile, o.plan.cluster_m = c.cluster;
    o.graph = turn % 3 == 2 && o.beta == 0.f;
    if (c.a == T::e4m3 || c.a == T::e5m2) o.acc_rel = kFp8MmaRel;
    const Plan plan(*h_, d, o.plan);
    const PlanInfo info = plan.info();
    SCOPED_TRACE(std::string(type_name(c.a)) + " -> " + std::string(type_name(c.cd)) + " m " + std::to_string(c.m) +
                 " n " + std::to_string(c.n) + " splits " + std::to_string(info.splits) + " tile " +
                 std::to_string(info.tile_n) + " cluster " + std::to_string(info.cluster_m) + " batch " +
                 std::to_string(d.batch) + (c.general ? " general" : " plain") + (o.graph ? " graph" : "") + ": " +
                 plan.describe());
    if (c.splits) EXPECT_EQ(info.splits, c.splits);
    else EXPECT_GE(info.splits, 2) << "the heuristics split these few tiles";
    EXPECT_FALSE(info.persistent);
    EXPECT_EQ(plan.workspace_bytes(), 0u);
    EXPECT_NE(plan.describe().find("inside each cluster"), std::string::npos);
    Images im = make_images(d, rng, {});
    o.repeat = true;  // deterministic: three more runs give the same bytes
    twin(d, im, o, *h_);
    ++turn;
  }
  // One launch per call: a CUDA graph captured from a split plan's run holds one node, a kernel.
  MatmulDesc d = desc_of(T::bf16, T::bf16, T::bf16, 300, 16, 64 * kstep(T::bf16));
  const Plan plan(*h_, d);
  ASSERT_GE(plan.info().splits, 2);
  Images im = make_images(d, rng, {});
  DevMem ga(im.a.size()), gb(im.b.size()), gd(im.d.size());
  ASSERT_TRUE(ga.base && gb.base && gd.base);
  CK(cudaMemcpy(ga.base, im.a.data(), im.a.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(gb.base, im.b.data(), im.b.size(), cudaMemcpyHostToDevice));
  SparseMatrix sa = compress(*h_, d, ga.base, im.lda, im.stride_a, PruneMode::magnitude);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  plan.run(sa, gb.base, gd.base, EpilogueArgs{}, nullptr, s);
  CK(cudaStreamEndCapture(s, &g));
  size_t nodes = 0;
  CK(cudaGraphGetNodes(g, nullptr, &nodes));
  EXPECT_EQ(nodes, 1u) << "a split plan's run is one kernel launch";
  if (nodes == 1) {
    cudaGraphNode_t node;
    CK(cudaGraphGetNodes(g, &node, &nodes));
    cudaGraphNodeType type;
    CK(cudaGraphNodeGetType(node, &type));
    EXPECT_EQ(type, cudaGraphNodeTypeKernel);
  }
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

// Scale vectors on every GPU path, against the CPU: the sm90 kernel's vector rows (row-major D)
// and element stores (column-major D, C), split K's hand-over in the cluster, the sm80 kernel; float and
// integer D (s8: a requantization with per-row and per-column scales), batches with one A per
// entry (one row vector each).
TEST_F(Robust, ScaleVectorsMatchTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  std::mt19937_64 rng(seed() + 10);
  const bool sm90 = sm90_runs();
  int turn = 0;
  for (auto [a, cd] : {std::pair{T::bf16, T::bf16}, std::pair{T::e4m3, T::f32}, std::pair{T::s8, T::s8}, std::pair{T::s8, T::s32},
                       std::pair{T::e4m3, T::e4m3}, std::pair{T::bf16, T::e5m2}})
    for (KernelFamily kernel : {KernelFamily::sm90, KernelFamily::sm80})
      for (int splits : {1, 3}) {
        if (kernel == KernelFamily::sm90 && !sm90) continue;
        if (kernel == KernelFamily::sm80 && splits > 1) continue;
        MatmulDesc d = desc_of(a, a, cd, 200, 40 + 24 * (turn % 3), 12 * kstep(a));
        d.scale_rows = turn % 3 != 1, d.scale_cols = turn % 3 != 2;
        d.batch = 2, d.a_per_batch = turn % 2 == 0;
        d.cd_order = turn % 4 == 3 ? Order::col_major : Order::row_major;
        d.bias = turn % 2 == 1;
        d.activation = static_cast<Activation>(turn % 3);
        SCOPED_TRACE(std::string(type_name(a)) + " -> " + std::string(type_name(cd)) +
                     (kernel == KernelFamily::sm90 ? " sm90" : " sm80") + " splits " + std::to_string(splits) +
                     (d.scale_rows ? " rows" : "") + (d.scale_cols ? " cols" : ""));
        RunOpts o;
        o.plan.kernel = kernel;
        if (kernel == KernelFamily::sm90) o.plan.splits = splits;
        o.alpha = is_int(cd) && cd == T::s8 ? 1.f / 64 : 0.75f;
        o.beta = turn % 4 == 2 ? 0.5f : 0.f;
        if (a == T::e4m3) o.acc_rel = kFp8MmaRel;
        Images im = make_images(d, rng, {});
        twin(d, im, o, *h_);
        ++turn;
      }
}

// The sm90 kernel's ways out by runs of 8 along D's contiguous dimension with 16-byte stores, for
// row- and column-major D of every C/D type, bit for bit against the CPU: the general epilogue
// (alpha, beta·C, bias, both scale vectors, GELU; store_block) and the plain one (inline for
// both layouts); beside them the element-by-element ways: D's edge blocks (M = 200 and N = 88
// leave partial 16 x 16 blocks) and a D those stores cannot take (leading dimension + 1, or D one
// element off its alignment).
TEST_F(Robust, EpilogueRunsOfEightMatchTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs())
    GTEST_SKIP() << "the runs of 8 are the sm90 kernel's way out (sm_90a)";
  std::mt19937_64 rng(seed() + 12);
  for (auto [a, cd] : {std::pair{T::bf16, T::bf16}, std::pair{T::f16, T::f16}, std::pair{T::bf16, T::f32},
                       std::pair{T::e4m3, T::e4m3}, std::pair{T::f16, T::e5m2}, std::pair{T::s8, T::s8},
                       std::pair{T::s8, T::s32}, std::pair{T::e4m3, T::bf16}})
    for (bool plain : {false, true})
    for (Order cdo : {Order::row_major, Order::col_major})
      for (int misalign = 0; misalign < 3; ++misalign) {
        MatmulDesc d = desc_of(a, a, cd, 200, 88, 8 * kstep(a));
        d.cd_order = cdo, d.batch = 2, d.a_per_batch = misalign == 1;
        d.bias = !plain, d.scale_rows = !plain, d.scale_cols = !plain;
        d.activation = plain ? Activation::none : Activation::gelu;
        if (misalign == 1) d.ldd = (cdo == Order::row_major ? d.n : d.m) + 1;
        SCOPED_TRACE(std::string(type_name(a)) + " -> " + std::string(type_name(cd)) + (plain ? " plain" : " general") +
                     (cdo == Order::row_major ? ", row-major D" : ", column-major D") +
                     (misalign == 0 ? ", aligned" : misalign == 1 ? ", ldd + 1" : ", D one element off"));
        RunOpts o;
        o.plan.kernel = KernelFamily::sm90;
        o.alpha = plain ? 1.f : cd == T::s8 ? 1.f / 64 : 0.75f;
        o.beta = plain ? 0.f : 0.5f;
        if (misalign == 2) o.d_off = static_cast<size_t>(bits_of(cd) / 8);
        if (a == T::e4m3) o.acc_rel = kFp8MmaRel;
        Images im = make_images(d, rng, {});
        twin(d, im, o, *h_);
      }
}

// The plain epilogue inside D (sm90/epilogue.cuh, plain_inside), each way on purpose: a warp's 16
// rows wholly inside D take it, the others the general way out, in the same tile. M = 200: the
// second 128-row tile's warps at rows 128-191 inside, 192-207 across M's edge; N = 2 x the tile
// width + 24: two whole tiles and a partial one. Row-major D in whole lines (16-bit D by stmatrix,
// 32-bit D by 8-byte stores: f32 from f32 sums, s32 from s8; the promoted 192- and 256-wide
// kernels: runs of 8 and the fragment's pairs, tiles.hpp's whole_lines), column-major 16-bit D by
// runs of 8; column-major 32-bit D, a D one element off its alignment and rows 8 bytes off 16-byte
// alignment (ldd + 8 bytes: 32-bit D by the pairs of the general way, 16-bit D element by element)
// go the general way. Every tile width of each kind (e4m3 promoted: 64, 128, 192, and 256, the
// Lean kernels, which take it too since ded33cd), batches of 2 with a padded leading dimension,
// NaN and infinities with ReLU.
TEST_F(Robust, PlainEpilogueInsideDMatchesTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  std::mt19937_64 rng(seed() + 41);
  int runs = 0;
  for (auto [a, cd] : {std::pair{T::bf16, T::bf16}, std::pair{T::f16, T::f16}, std::pair{T::bf16, T::f32},
                       std::pair{T::tf32, T::f32}, std::pair{T::s8, T::s32}, std::pair{T::e4m3, T::bf16},
                       std::pair{T::e4m3, T::f16}})
    for (int tile : {64, 128, 192, 256}) {
      if (tile == 192 && !detail::gemm_promotes(a)) continue;  // 192 is built for promoted fp8 only
      for (Order cdo : {Order::row_major, Order::col_major})
        for (int variant = 0; variant < 4; ++variant) {
          // 0: aligned, ReLU; 1: aligned, leading dimension + 8; 2: D one element off (general way);
          // 3: leading dimension + 8 bytes (rows 8 bytes off 16-byte alignment: the general way)
          const bool relu = variant == 0;
          SCOPED_TRACE(std::string(type_name(a)) + " -> " + std::string(type_name(cd)) + " tile " + std::to_string(tile) +
                       (cdo == Order::row_major ? ", row-major D" : ", column-major D") +
                       (variant == 0 ? ", ReLU" : variant == 1 ? ", ldd + 8" : variant == 2 ? ", D one element off" : ", ldd + 8 bytes"));
          MatmulDesc d = desc_of(a, a, cd, 200, 2 * tile + 24, 4 * kstep(a));
          d.cd_order = cdo, d.batch = 2;
          d.activation = relu ? Activation::relu : Activation::none;
          if (variant == 1) d.ldd = (cdo == Order::row_major ? d.n : d.m) + 8;
          if (variant == 3) d.ldd = (cdo == Order::row_major ? d.n : d.m) + 64 / bits_of(cd);
          RunOpts o;
          o.plan.kernel = KernelFamily::sm90;
          o.plan.tile_n = tile;
          if (variant == 2) o.d_off = static_cast<size_t>(bits_of(cd) / 8);
          if (a == T::e4m3) o.acc_rel = kFp8MmaRel;
          Images im = make_images(d, rng, Specials{relu && !is_int(a) ? 0.002 : 0.0});
          twin(d, im, o, *h_);
          EXPECT_EQ(Plan(*h_, d, o.plan).info().tile_n, tile);
          ++runs;
        }
    }
  EXPECT_EQ(runs, 7 * 2 * 3 * 4 + 2 * 2 * 4);  // three widths each, and 192 for both e4m3 pairs
}

// The 256-wide kernels' way out across the tiles of a persistent grid (sm90/epilogue.cuh: a math
// warp's scratch, reused tile after tile, and D in whole lines beside tiles that go the general way),
// on every D type the whole lines carry (bf16, f16, f32 from f32 sums, s32 from s8): more than two
// units per CTA, tiles whose warps lie inside D and tiles whose warps do not (rows past M, the
// partial N tile), clusters of 2 and 1, batches of 2, ReLU with NaN and infinities; and split K in
// 2 parts (part 1's CTAs store nothing). Written for the store ring that was measured and not kept
// (docs/benchmarks.md, "Storer warps"), where a storer that lost its place in a math warp's ring
// would hang or write a pass to another warp's rows; it holds the scratch's reuse to the same.
TEST_F(Robust, WideTilesAcrossAPersistentGridMatchTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  std::mt19937_64 rng(seed() + 43);
  int runs = 0;
  for (auto [a, cd] : {std::pair{T::bf16, T::bf16}, std::pair{T::f16, T::f16}, std::pair{T::tf32, T::f32},
                       std::pair{T::s8, T::s32}})
    for (int variant = 0; variant < 3; ++variant) {
      // 0: persistent, clusters as the plan takes them (2 here); 1: the same, clusters of 1; 2: split K in 2 parts
      SCOPED_TRACE(std::string(type_name(a)) + " -> " + std::string(type_name(cd)) +
                   (variant == 0 ? ", persistent" : variant == 1 ? ", persistent, clusters of 1" : ", split K in 2"));
      const int64_t m_tiles = variant < 2 ? sms / 2 + 2 : 2;  // x 2 N tiles x 2 entries: more than 2 per CTA
      MatmulDesc d = desc_of(a, a, cd, m_tiles * 128 - 56, variant < 2 ? 256 + 40 : 2 * 256 + 24,
                             (variant < 2 ? 2 : 8) * kstep(a));
      d.batch = 2;
      d.activation = variant == 0 ? Activation::relu : Activation::none;
      RunOpts o;
      o.plan.kernel = KernelFamily::sm90;
      o.plan.tile_n = 256;
      o.plan.grid = variant < 2 ? GridKind::persistent : GridKind::automatic;
      if (variant == 1) o.plan.cluster_m = 1;
      if (variant == 2) o.plan.splits = 2;
      Images im = make_images(d, rng, Specials{variant == 0 && !is_int(a) ? 0.002 : 0.0});
      twin(d, im, o, *h_);
      const PlanInfo info = Plan(*h_, d, o.plan).info();
      EXPECT_EQ(info.tile_n, 256);
      if (variant < 2) EXPECT_GT(m_tiles * 2 * d.batch, 2 * int64_t{sms}) << "more than two tiles per CTA";
      if (variant == 2) EXPECT_EQ(info.splits, 2);
      ++runs;
    }
  EXPECT_EQ(runs, 12);
}

// B narrower than the main kernel's tile, one CTA per N tile: its box has the tile's columns up
// to N (sm90::b_box_rows; the last N tile's from B's tail map), and the slot's rows past them
// keep what they held (stale, possibly non-finite), feeding only D's columns past N. Every built
// width at N = 1 (one box row), 9 (a swizzle atom and one row of the next, split K in 2 parts),
// width - 7 (the last atom part-filled, a persistent grid) and width + 9 (a whole tile, then the
// tail map's 9 rows), both D layouts, batch 2 (B's second entry read by the same box), for bf16,
// promoted and fast e4m3, s8 and tf32. A box short of N leaves D's last columns stale; a stage's
// expected bytes that are not the box's hang the kernel.
TEST_F(Robust, NarrowBInAWideTileMatchesTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  std::mt19937_64 rng(seed() + 47);
  int runs = 0;
  struct Case {
    T a, cd;
    bool fast;
  };
  for (const Case& c : {Case{T::bf16, T::bf16, false}, Case{T::e4m3, T::bf16, false}, Case{T::e4m3, T::f16, true},
                        Case{T::s8, T::s32, false}, Case{T::tf32, T::f32, false}}) {
    const bool promoted = detail::gemm_promotes(c.a) && !c.fast;
    for (int tile : {64, 128, 192, 256}) {
      if (tile == 192 && !promoted) continue;  // 192 is built for promoted fp8 only
      for (int n : {1, 9, tile - 7, tile + 9}) {
        const int splits = n == 9 ? 2 : 1;
        SCOPED_TRACE(std::string(type_name(c.a)) + " -> " + std::string(type_name(c.cd)) + (c.fast ? " fast" : "") +
                     " tile " + std::to_string(tile) + " N " + std::to_string(n));
        MatmulDesc d = desc_of(c.a, c.a, c.cd, 200, n, 16 * kstep(c.a));  // 8 stages: 2 parts of 4
        d.fast_accumulation = c.fast;
        d.batch = 2;
        d.cd_order = n == 1 || n == tile + 9 ? Order::row_major : Order::col_major;
        RunOpts o;
        o.plan.kernel = KernelFamily::sm90;
        o.plan.tile_n = tile, o.plan.splits = splits;
        o.plan.grid = n == tile - 7 || n == tile + 9 ? GridKind::persistent : GridKind::automatic;
        Images im = make_images(d, rng, {});
        twin(d, im, o, *h_);
        const PlanInfo info = Plan(*h_, d, o.plan).info();
        EXPECT_EQ(info.tile_n, tile);
        EXPECT_EQ(info.splits, splits);
        EXPECT_EQ(info.cluster_m, 1);
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs, 64);
}

// The general epilogue's loop over a warp's 16 x 16 blocks (sm90/epilogue.cuh: the block picked
// at run time from the accumulator registers, by a switch) at every tile width the kernel is
// built with, each on purpose: every block of a whole tile (N = width + 40: one whole tile and one
// partial one, whose blocks past N are skipped and whose edge block goes element by element),
// both D layouts, with alpha, beta·C, bias, both scale vectors and GELU; bf16 (plain sums, widths
// 64, 128, 256), e4m3 with promoted sums (64, 128, 192 and the Lean 256-wide kernel) and s8 -> s32
// (the epilogue in double).
TEST_F(Robust, GeneralEpilogueEveryTileWidthMatchesTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  std::mt19937_64 rng(seed() + 26);
  int runs = 0;
  for (auto [a, cd] : {std::pair{T::bf16, T::bf16}, std::pair{T::e4m3, T::bf16}, std::pair{T::e4m3, T::e4m3},
                       std::pair{T::s8, T::s32}})
    for (int tile : {64, 128, 192, 256}) {
      if (tile == 192 && !detail::gemm_promotes(a)) continue;  // 192 is built for promoted fp8 only
      for (Order cdo : {Order::row_major, Order::col_major}) {
        SCOPED_TRACE(std::string(type_name(a)) + " -> " + std::string(type_name(cd)) + " tile " + std::to_string(tile) +
                     (cdo == Order::row_major ? ", row-major D" : ", column-major D"));
        MatmulDesc d = desc_of(a, a, cd, 136, tile + 40, 6 * kstep(a));
        d.cd_order = cdo, d.batch = 2;
        d.bias = d.scale_rows = d.scale_cols = true;
        d.activation = Activation::gelu;
        RunOpts o;
        o.plan.kernel = KernelFamily::sm90;
        o.plan.tile_n = tile;
        o.alpha = 0.75f, o.beta = 0.5f;
        if (a == T::e4m3) o.acc_rel = kFp8MmaRel;
        Images im = make_images(d, rng, {});
        twin(d, im, o, *h_);
        EXPECT_EQ(Plan(*h_, d, o.plan).info().tile_n, tile);
        ++runs;
      }
    }
  EXPECT_EQ(runs, 28);
}

// The epilogue's GELU (detail::gelu_f32, straight-line on the device: div_gelu's division
// without the IEEE division's slow-path branch, selects) gives the host's bits: its division
// against the GPU's IEEE one over every f32 of [0, 15.5] (1.1e9 values), and gelu_f32 on the
// device against the host over every 997th bit pattern of all 2^32 (both signs, subnormals,
// the tails beyond ±15, ±Inf, NaN).
TEST_F(Robust, GeluOnTheGpuIsTheHostsBitForBit) {
  unsigned long long* bad = nullptr;
  CK(cudaMalloc(&bad, sizeof *bad));
  CK(cudaMemset(bad, 0, sizeof *bad));
  uint32_t top;
  const float limit = 15.5f;
  std::memcpy(&top, &limit, 4);
  gelu_divisions_vs_ieee<<<1024, 256>>>(0u, top, bad);
  CK(cudaGetLastError());
  unsigned long long mismatches = ~0ull;
  CK(cudaMemcpy(&mismatches, bad, sizeof mismatches, cudaMemcpyDeviceToHost));
  CK(cudaFree(bad));
  EXPECT_EQ(mismatches, 0u) << "detail::div_gelu differs from IEEE division";

  constexpr uint32_t kStep = 997, kN = static_cast<uint32_t>(0x100000000ull / kStep);
  float* out = nullptr;
  CK(cudaMalloc(&out, kN * sizeof(float)));
  gelu_sampled<<<1024, 256>>>(kStep, kN, out);
  CK(cudaGetLastError());
  std::vector<float> got(kN);
  CK(cudaMemcpy(got.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaFree(out));
  int differ = 0;
  for (uint32_t i = 0; i < kN; ++i) {
    const uint32_t bits = i * kStep;
    float x, want;
    std::memcpy(&x, &bits, 4);
    want = detail::gelu_f32(x);
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4), std::memcpy(&w, &want, 4);
    if (g != w && !(std::isnan(got[i]) && std::isnan(want)) && ++differ <= 5)
      ADD_FAILURE() << "gelu_f32(" << x << "): GPU " << got[i] << ", host " << want;
  }
  EXPECT_EQ(differ, 0);
}

// fp8 D saturates to its largest finite value on both backends, on every way out of both kernels:
// the plain epilogue (alpha 1: the sm90 kernel's 8-byte row stores through its scratch, or
// column-major D elementwise), the general one (alpha, bias, ReLU), split K's hand-over in the cluster. B is scaled
// up (x64) so that many sums of an e4m3 product leave e4m3's range (448).
TEST_F(Robust, Fp8OutputSaturatesLikeTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  std::mt19937_64 rng(seed() + 11);
  const bool sm90 = sm90_runs();
  int turn = 0;
  for (T cd : {T::e4m3, T::e5m2})
    for (KernelFamily kernel : {KernelFamily::sm90, KernelFamily::sm80})
      for (int variant = 0; variant < 4; ++variant) {
        if (kernel == KernelFamily::sm90 && !sm90) continue;
        const int splits = kernel == KernelFamily::sm90 && variant == 3 ? 2 : 1;
        MatmulDesc d = desc_of(T::e4m3, T::e4m3, cd, 136, 72 + 8 * (turn % 3), 16 * kstep(T::e4m3));
        d.cd_order = variant == 1 ? Order::col_major : Order::row_major;
        d.bias = variant == 2, d.activation = variant == 2 ? Activation::relu : Activation::none;
        SCOPED_TRACE(std::string("e4m3 -> ") + std::string(type_name(cd)) + (kernel == KernelFamily::sm90 ? " sm90" : " sm80") +
                     " variant " + std::to_string(variant));
        Images im = make_images(d, rng, {});
        for (uint8_t& x : im.b) x = static_cast<uint8_t>(encode(T::e4m3, 64 * decode(T::e4m3, x)));  // saturating encode
        RunOpts o;
        o.plan.kernel = kernel;
        if (kernel == KernelFamily::sm90) o.plan.splits = splits;
        o.alpha = variant == 2 ? 1.5f : 1.f;
        o.acc_rel = kFp8MmaRel;
        twin(d, im, o, *h_);
        ++turn;
      }
}

// Issue 11 (item 2): a compressed A in caller-owned device memory. compress_into and import_into
// write the same device layout; each SparseMatrix borrows the caller's buffers (the run reads
// them as they are then: zeroed values give a zero D); export_interchange and decompress_into
// give the host library's bytes; the products equal the CPU backend's bit for bit (small integer
// values: every sum exact); a forbidden nibble is reported at its batch entry, row and chunk.
TEST_F(Robust, CallerOwnedBuffersMatchTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  std::mt19937_64 rng(seed() + 14);
  Handle cpu(Device::cpu);
  for (auto [a, cd] : {std::pair{T::bf16, T::bf16}, std::pair{T::e4m3, T::f32}, std::pair{T::s8, T::s32},
                       std::pair{T::tf32, T::f32}, std::pair{T::f16, T::f16}}) {
    SCOPED_TRACE(type_name(a));
    MatmulDesc d = desc_of(a, a, cd, 130, 24, 3 * kstep(a));
    d.batch = 2, d.a_per_batch = true;
    const int bits = bits_of(a);
    const int64_t a_elems = d.m * d.k * 2;
    std::vector<uint8_t> ha(bytes_for(a_elems, a)), hb(bytes_for(d.k * d.n * 2, a));
    for (int64_t i = 0; i < a_elems; ++i)
      store_element(ha.data(), i, bits, encode(a, static_cast<double>(static_cast<int>(rng() % 7) - 3)));
    for (int64_t i = 0; i < d.k * d.n * 2; ++i)
      store_element(hb.data(), i, bits, encode(a, static_cast<double>(static_cast<int>(rng() % 5) - 2)));
    const size_t d_bytes = bytes_for(d.m * d.n * 2, cd);
    std::vector<uint8_t> want(d_bytes, 0xA5);
    const SparseMatrix sc = compress(cpu, d, ha.data(), 0, 0, PruneMode::magnitude);
    Plan(cpu, d).run(sc, hb.data(), nullptr, want.data(), 1, 0);
    const CompressedLayout x = interchange_layout(d);
    std::vector<uint8_t> xv(x.value_bytes), xm(x.metadata_bytes);
    export_interchange(sc, xv.data(), xm.data());

    const CompressedLayout l = compressed_layout(*h_, d);
    EXPECT_EQ(l.name, "gpu-v1");
    DevMem ga(ha.size()), gb(hb.size()), gd(d_bytes), v1(l.value_bytes), m1(l.metadata_bytes), v2(l.value_bytes),
        m2(l.metadata_bytes), gxv(x.value_bytes), gxm(x.metadata_bytes), dense(ha.size());
    CK(cudaMemcpy(ga.base, ha.data(), ha.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gb.base, hb.data(), hb.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gxv.base, xv.data(), xv.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gxm.base, xm.data(), xm.size(), cudaMemcpyHostToDevice));
    CK(cudaMemset(v1.base, 0x5A, l.value_bytes));
    CK(cudaMemset(m1.base, 0x5A, l.metadata_bytes));
    CK(cudaMemset(v2.base, 0xA5, l.value_bytes));
    CK(cudaMemset(m2.base, 0xA5, l.metadata_bytes));
    Plan plan(*h_, d);
    auto gpu_run = [&](const SparseMatrix& s) {
      std::vector<uint8_t> got(d_bytes);
      EXPECT_EQ(cudaMemset(gd.base, 0xA5, d_bytes), cudaSuccess);
      plan.run(s, gb.base, nullptr, gd.base, 1, 0);
      EXPECT_EQ(cudaMemcpy(got.data(), gd.base, d_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      return got;
    };
    const SparseMatrix s1 = compress_into(*h_, d, ga.base, 0, 0, PruneMode::magnitude, v1.base, m1.base);
    const SparseMatrix s2 = import_into(*h_, d, gxv.base, gxm.base, v2.base, m2.base);
    EXPECT_FALSE(s1.owns_memory());
    EXPECT_FALSE(s2.owns_memory());
    EXPECT_EQ(gpu_run(s1), want);
    EXPECT_EQ(gpu_run(s2), want);
    // The same device layout both ways, every byte (padding rows and words included).
    std::vector<uint8_t> b1(l.value_bytes + l.metadata_bytes), b2(b1.size());
    CK(cudaMemcpy(b1.data(), v1.base, l.value_bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b1.data() + l.value_bytes, m1.base, l.metadata_bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b2.data(), v2.base, l.value_bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b2.data() + l.value_bytes, m2.base, l.metadata_bytes, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(b1 == b2) << "compress_into and import_into wrote different device layouts";
    // Back to the interchange form and to dense, on the device.
    CK(cudaMemset(gxv.base, 0x5A, x.value_bytes));
    CK(cudaMemset(gxm.base, 0x5A, x.metadata_bytes));
    export_interchange(s1, gxv.base, gxm.base);
    std::vector<uint8_t> ev(x.value_bytes), em(x.metadata_bytes);
    CK(cudaMemcpy(ev.data(), gxv.base, ev.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(em.data(), gxm.base, em.size(), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(ev == xv && em == xm) << "export_interchange differs from the CPU's bytes";
    CK(cudaMemset(dense.base, 0x5A, ha.size()));
    decompress_into(s2, dense.base);
    std::vector<uint8_t> gdense(ha.size()), hdense(ha.size(), 0x5A);
    CK(cudaMemcpy(gdense.data(), dense.base, gdense.size(), cudaMemcpyDeviceToHost));
    decompress_into(sc, hdense.data());
    EXPECT_TRUE(gdense == hdense) << "decompress_into differs from the CPU's";
    // Borrowed: the run reads the buffers as they are.
    const SparseMatrix view = borrow(*h_, d, v1.base, m1.base);
    EXPECT_EQ(gpu_run(view), want);
    CK(cudaMemset(v1.base, 0, l.value_bytes));
    std::vector<uint8_t> zero(d_bytes);
    for (int64_t i = 0; i < d.m * d.n * 2; ++i) store_element(zero.data(), i, bits_of(cd), encode(cd, 0.0));
    EXPECT_EQ(gpu_run(view), zero);
    // A forbidden nibble: batch entry 1, row 2, chunk 1 (the high half of the low byte of word 0).
    const size_t at = xm.size() / 2 + 2 * (xm.size() / 2 / static_cast<size_t>(d.m));
    std::vector<uint8_t> bad = xm;
    bad[at] = static_cast<uint8_t>((bad[at] & 0x0F) | (a == T::tf32 ? 0x80 : 0x50));
    CK(cudaMemcpy(gxm.base, bad.data(), bad.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gxv.base, xv.data(), xv.size(), cudaMemcpyHostToDevice));
    expect_error([&] { (void)import_into(*h_, d, gxv.base, gxm.base, v2.base, m2.base); }, Status::invalid_value,
                 {"import_into", "batch entry 1", "row 2", "chunk 1"});
    // Memory and alignment the kernels cannot take.
    expect_error([&] { (void)borrow(*h_, d, v1.base + 8, m1.base); }, Status::invalid_argument, {"borrow", "values", "16-byte"});
    expect_error([&] { (void)borrow(*h_, d, xv.data(), xm.data()); }, Status::invalid_argument, {"borrow"});
  }
}

// ------------------------------------------------------------------ the decode kernel (issue 12)

// The decode kernel (sm90/decode.cuh) pinned, against the CPU bit for bit (f32 sums to 1e-5 of
// Σ|a·b|, fp8 to kFp8MmaRel): every listed combination it runs (the pairs with an sm90 form), both
// tile widths on purpose (N = 1, 5, 8: the 8-wide tile; 9, 16: the 16-wide; 17, 40: several N
// tiles), M with a partial last 32-row tile (77, 200) or whole ones (96), K of 1 stage, of 3, and
// of 51-53 (more stages than the pipeline holds, so that its ring wraps), both D layouts, D's
// leading dimension padded, batches with one A per entry or a shared one, C of another type,
// bias, activations, alpha and beta·C, NaN/±Inf/-0.0 in A, B, C and the bias, B row-major
// (transposed into the workspace) or column-major read in place. The third case of each pair is
// the plain epilogue on purpose (alpha 1, no C, no bias, ReLU or nothing: the path that reads
// every element's sums before it stores any, decode.cuh), the other two draw the general one.
TEST_F(Robust, DecodeKernelMatchesTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the decode kernel is sm_90a machine code";
  std::mt19937_64 rng(seed() + 20);
  std::vector<T> cds_f = {T::f16, T::bf16, T::f32}, cds_i = {T::s32, T::s8};
  int turn = 0;
  for (const TypeCombo& tc : supported_types(*h_)) {
    if (bits_of(tc.a) == 4) continue;  // no sm90 form: the sm80 kernel's
    for (int rep = 0; rep < 3; ++rep, ++turn) {
      const int64_t ns[] = {1, 5, 8, 9, 16, 17, 40}, ms[] = {77, 96, 200}, stages[] = {1, 3, 51 + turn % 3};
      MatmulDesc d = desc_of(tc.a, tc.b, tc.cd, ms[turn % 3], ns[(turn + rep) % 7], 2 * kstep(tc.a) * stages[rep]);
      const auto& cds = is_int(tc.a) ? cds_i : cds_f;
      d.c_type = cds[rng() % cds.size()];
      d.b_order = rng() % 3 == 0 ? Order::row_major : Order::col_major;
      d.cd_order = turn % 2 ? Order::row_major : Order::col_major;
      d.batch = 1 + turn % 3;
      d.a_per_batch = rng() % 2;
      d.bias = rng() % 2;
      d.activation = static_cast<Activation>(rng() % 3);
      if (rng() % 3 == 0) d.ldd = (d.cd_order == Order::row_major ? d.n : d.m) + 2;
      SCOPED_TRACE(std::string(type_name(tc.a)) + "." + std::string(type_name(tc.b)) + " -> " +
                   std::string(type_name(tc.cd)) + " " + std::to_string(d.m) + "x" + std::to_string(d.n) + "x" +
                   std::to_string(d.k) + " batch " + std::to_string(d.batch));
      RunOpts o;
      o.plan.kernel = KernelFamily::decode;
      // fp8 on the warps' math (32-row tiles, converted) here, at N > 16 too, where the plan takes
      // the warpgroup's (DecodeKernelWarpgroupMathMatchesTheCpu)
      if (detail::gemm_promotes(tc.a)) o.plan.tile_m = 32;
      o.alpha = rep == 1 ? 0.75f : 1.f;
      o.beta = rng() % 2 ? 0.5f : 0.f;
      if (rep == 2) {  // the plain epilogue
        o.beta = 0.f, d.bias = false;
        d.activation = turn % 2 ? Activation::relu : Activation::none;
      }
      if (detail::gemm_promotes(tc.a)) o.acc_rel = kFp8MmaRel;
      Images im = make_images(d, rng, Specials{is_int(tc.a) ? 0.0 : 0.02});
      twin(d, im, o, *h_);
      EXPECT_EQ(Plan(*h_, d, o.plan).info().kernel, KernelFamily::decode);
    }
  }
}

// Every instantiation of the decode kernel, each on purpose: every pair of the pair table with
// an sm90 form, both tile widths (N = 5: 8 wide; N = 13: 16 wide), each whole and in 2 parts of
// K (the kernels built for split K, which the plan takes on the warps' math of every type), fp8 with
// its sums promoted and with fast accumulation, each C/D type in turn; 53 metadata groups (27
// stages: the pipeline's ring wraps).
TEST_F(Robust, DecodeKernelEveryInstantiationMatchesTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the decode kernel is sm_90a machine code";
  std::mt19937_64 rng(seed() + 22);
  int turn = 0;
  for (const detail::GemmPair& pair : detail::kGemmPairs) {
    if (pair.a == T::s4 || pair.a == T::u4) continue;  // no sm90 form: the sm80 kernel's
    for (bool fast : {false, true}) {
      if (fast && !detail::gemm_promotes(pair.a)) continue;
      for (const auto [n, splits] : {std::pair{5, 1}, std::pair{5, 2}, std::pair{13, 1}, std::pair{13, 2}}) {
        const auto outs = detail::gemm_outputs(pair.a);
        const T cd = outs[static_cast<size_t>(turn++) % outs.size()];
        SCOPED_TRACE(std::string(type_name(pair.a)) + " x " + std::string(type_name(pair.b)) + " -> " +
                     std::string(type_name(cd)) + (fast ? " fast" : "") + " N " + std::to_string(n) + " splits " +
                     std::to_string(splits));
        MatmulDesc d = desc_of(pair.a, pair.b, cd, 96, n, 53 * 2 * kstep(pair.a));
        d.fast_accumulation = fast;
        d.cd_order = (turn + turn / 4) % 2 ? Order::col_major : Order::row_major;  // both, for each case, over the pairs
        RunOpts o;
        o.plan.kernel = KernelFamily::decode;
        o.plan.splits = splits;
        if (detail::gemm_promotes(pair.a)) o.acc_rel = kFp8MmaRel;
        Images im = make_images(d, rng, {});
        twin(d, im, o, *h_);
        const PlanInfo info = Plan(*h_, d, o.plan).info();
        EXPECT_EQ(info.kernel, KernelFamily::decode);
        EXPECT_EQ(info.splits, splits);
        EXPECT_EQ(info.tile_n, n <= 8 ? 8 : 16);
        EXPECT_EQ(info.tile_m, 32);  // 3 tiles of 32 rows: the warps' math, fp8 too
        EXPECT_EQ(info.issuers, 2);  // ... at most 2 CTAs per SM: two producer warps per operand
      }
    }
  }
}

// The decode kernel's warpgroup math (fp8: wgmma.sp m64nN on 64-row tiles, sm90/decode_tiles.hpp),
// pinned (PlanOptions::tile_m = 64): every fp8 pair at both widths (N = 5, 13: 8 and 16 wide; 27,
// 40: two or three N tiles of 16, each reading A), unsplit and split K in 2 and 3 pinned, M with a
// partial last tile (96, 200), K of 27 metadata groups (14 stages, the last half past K), both D
// layouts, batches (one of 80 entries unsplit: 320 CTAs,
// three per SM on the H100, one producer warp per operand, 5 stages at N = 13, an odd number), fast accumulation on and off, bias,
// activations; the same bytes on every run. (The plan takes this math unpinned on weights of at
// least one 64-row tile per SM: DecodeKernelIsChosenForSmallNOnEnoughRows.)
TEST_F(Robust, DecodeKernelWarpgroupMathMatchesTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the decode kernel is sm_90a machine code";
  std::mt19937_64 rng(seed() + 25);
  int turn = 0;
  for (const detail::GemmPair& pair : detail::kGemmPairs) {
    if (!detail::gemm_promotes(pair.a)) continue;
    for (int n : {5, 13, 27, 40}) {
      const auto outs = detail::gemm_outputs(pair.a);
      const T cd = outs[static_cast<size_t>(turn) % outs.size()];
      const int splits = turn == 1 ? 1 : 1 + turn % 3;
      MatmulDesc d = desc_of(pair.a, pair.b, cd, turn % 2 ? 200 : 96, n, 27 * 2 * kstep(pair.a));
      d.batch = turn == 1 ? 80 : 1 + turn % 2;
      d.a_per_batch = turn % 3 == 0;
      d.fast_accumulation = turn % 2;
      d.cd_order = turn % 4 < 2 ? Order::col_major : Order::row_major;
      d.bias = turn % 3 == 0;
      d.activation = static_cast<Activation>(turn % 3);
      ++turn;
      SCOPED_TRACE(std::string(type_name(pair.a)) + " x " + std::string(type_name(pair.b)) + " -> " +
                   std::string(type_name(cd)) + " " + std::to_string(d.m) + "x" + std::to_string(n) + " batch " +
                   std::to_string(d.batch) + " splits " + std::to_string(splits));
      RunOpts o;
      o.plan.tile_m = 64;
      o.plan.splits = splits > 1 ? splits : 0;
      o.acc_rel = kFp8MmaRel;
      o.repeat = true;
      const PlanInfo info = Plan(*h_, d, o.plan).info();
      EXPECT_EQ(info.kernel, KernelFamily::decode);
      EXPECT_EQ(info.tile_m, 64);
      EXPECT_EQ(info.tile_n, n <= 8 ? 8 : 16);
      EXPECT_EQ(info.splits, splits);
      // The 80-entry batch: 3 CTAs per SM, one issuer per operand, an odd depth; the others two
      // issuers, even depths (whole rounds of them).
      EXPECT_EQ(info.issuers, d.batch == 80 ? 1 : 2);
      if (d.batch == 80) EXPECT_EQ(info.stages % 2, 1);
      Images im = make_images(d, rng, Specials{0.02});
      twin(d, im, o, *h_);
    }
  }
}

// The decode kernel's pipeline shallow (several CTAs per SM: 450 CTAs of a 150-entry batch take
// 12 stages each) and much shorter than K (53 stages): each math warp takes every 2nd stage, and
// a warp may run ahead of the others; every run again must give the same bytes (15 stages, not a
// whole number of the warps' rounds, faulted the kernel on the H100, decode_tiles.hpp). With the
// plan's one producer warp per operand and with two pinned (PlanOptions::issuers), each of them
// filling every 2nd stage of the short ring.
TEST_F(Robust, DecodeKernelShallowPipelineMatchesTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the decode kernel is sm_90a machine code";
  std::mt19937_64 rng(seed() + 23);
  for (auto [a, cd, n, issuers] : {std::tuple{T::bf16, T::bf16, 5, 0}, std::tuple{T::s8, T::s32, 13, 0},
                                    std::tuple{T::bf16, T::f32, 13, 2}, std::tuple{T::s8, T::s32, 5, 2}}) {
    MatmulDesc d = desc_of(a, a, cd, 96, n, 53 * 2 * kstep(a));
    d.batch = 150, d.cd_order = Order::col_major;
    SCOPED_TRACE(std::string(type_name(a)) + " N " + std::to_string(n) + " issuers " + std::to_string(issuers));
    RunOpts o;
    o.plan.kernel = KernelFamily::decode;
    o.plan.issuers = issuers;  // 2: pinned against the plan's 1, each warp of an operand taking every 2nd stage
    o.repeat = true;
    const PlanInfo info = Plan(*h_, d, o.plan).info();
    EXPECT_EQ(info.stages % 2, 0);  // whole rounds of the two math warps of a row group (and of the issuers)
    EXPECT_LT(info.stages, 53);
    EXPECT_EQ(info.issuers, issuers ? issuers : 1);  // 4 CTAs per SM: one producer warp per operand
    Images im = make_images(d, rng, {});
    twin(d, im, o, *h_);
  }
}

// The decode kernel's epilogue inputs against the CPU: scale vectors per row and per column
// (one row vector per A entry), bias, GELU, alpha and beta·C, fp8 and s8 D (saturating), on both
// D layouts; a B one element off its alignment (copied into the workspace: the copy engine reads
// 16-byte aligned columns only); the same bytes on every run and from a CUDA graph (one kernel node).
TEST_F(Robust, DecodeKernelEpilogueAndGraphsMatchTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the decode kernel is sm_90a machine code";
  std::mt19937_64 rng(seed() + 21);
  int turn = 0;
  for (auto [a, cd] : {std::pair{T::bf16, T::bf16}, std::pair{T::e4m3, T::f32}, std::pair{T::s8, T::s8}, std::pair{T::s8, T::s32},
                       std::pair{T::e4m3, T::e4m3}, std::pair{T::bf16, T::e5m2}, std::pair{T::f16, T::f16}, std::pair{T::tf32, T::f32}})
    for (int variant = 0; variant < 3; ++variant, ++turn) {
      MatmulDesc d = desc_of(a, a, cd, 160, variant == 0 ? 3 : variant == 1 ? 16 : 12, 6 * kstep(a));
      d.scale_rows = variant != 1, d.scale_cols = variant != 2;
      d.batch = 2, d.a_per_batch = turn % 2 == 0;
      d.cd_order = turn % 2 ? Order::col_major : Order::row_major;
      d.bias = variant != 0;
      d.activation = variant == 2 ? Activation::gelu : static_cast<Activation>(turn % 2);
      SCOPED_TRACE(std::string(type_name(a)) + " -> " + std::string(type_name(cd)) + " variant " + std::to_string(variant));
      RunOpts o;
      o.plan.kernel = KernelFamily::decode;
      o.alpha = cd == T::s8 ? 1.f / 64 : 0.75f;
      o.beta = variant == 1 ? 0.5f : 0.f;
      if (variant == 2) {  // B one element off its 16-byte alignment: copied into the workspace
        d.b_alignment = bits_of(a) / 8;
        o.b_off = static_cast<size_t>(bits_of(a) / 8);
      }
      o.graph = variant == 0, o.repeat = variant == 1;
      if (detail::gemm_promotes(a)) o.acc_rel = kFp8MmaRel;
      Images im = make_images(d, rng, {});
      twin(d, im, o, *h_);
    }
}

// The decode kernel's split K (the parts of a tile are the CTAs of a cluster, their sums added in
// part 0's epilogue in a fixed order), pinned at 2, 3 and 4 parts, against the CPU: the 16-bit,
// tf32, 8-bit integer and fp8 pairs, both tile widths and several N tiles (N = 3, 16, 21), M with
// a partial last tile, K whose last part is shorter than the others and ends half a stage past
// K (an odd number of metadata groups) or has fewer stages than the math warps' round, both D
// layouts, batches (the grid's second dimension), C, bias, activations, scale vectors; the same
// bytes on every run and from a CUDA graph.
TEST_F(Robust, DecodeKernelSplitKMatchesTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the decode kernel is sm_90a machine code";
  std::mt19937_64 rng(seed() + 24);
  int turn = 0;
  for (auto [a, cd] : {std::pair{T::bf16, T::bf16}, std::pair{T::s8, T::s32}, std::pair{T::e4m3, T::f32}, std::pair{T::f16, T::f32},
                       std::pair{T::tf32, T::f32}, std::pair{T::s8, T::s8}})
    for (int splits : {2, 3, 4}) {
      const int pair = turn++ / 3;
      // Metadata groups (2 instructions of K each), 2 per stage: 33 groups are 17 stages, the
      // last half past K, in parts of 9, 6 or 5 stages; 13 groups are 7 stages, in parts of 4
      // and 3, of 3, 3 and 1, or of 2, 2, 2 and 1 (shorter than a round of the math warps).
      const int64_t groups = pair % 2 ? 13 : 33;
      const int64_t ns[] = {3, 16, 21};
      MatmulDesc d = desc_of(a, a, cd, turn % 2 ? 200 : 96, ns[(turn + pair) % 3], groups * 2 * kstep(a));
      d.cd_order = turn % 2 ? Order::col_major : Order::row_major;
      d.batch = 1 + turn % 3;
      d.a_per_batch = turn % 2 == 0;
      d.bias = turn % 2;
      d.scale_rows = turn % 3 == 1, d.scale_cols = turn % 3 == 2;
      d.activation = static_cast<Activation>(turn % 3);
      SCOPED_TRACE(std::string(type_name(a)) + " -> " + std::string(type_name(cd)) + " " + std::to_string(d.m) + "x" +
                   std::to_string(d.n) + "x" + std::to_string(d.k) + " batch " + std::to_string(d.batch) + " splits " +
                   std::to_string(splits));
      RunOpts o;
      o.plan.kernel = KernelFamily::decode;
      o.plan.splits = splits;
      o.alpha = cd == T::s8 ? 1.f / 64 : 0.75f;
      o.beta = turn % 2 ? 0.5f : 0.f;
      o.graph = splits == 2, o.repeat = splits != 2;
      if (detail::gemm_promotes(a)) o.acc_rel = kFp8MmaRel;
      const PlanInfo info = Plan(*h_, d, o.plan).info();
      EXPECT_EQ(info.kernel, KernelFamily::decode);
      EXPECT_EQ(info.splits, splits);
      Images im = make_images(d, rng, Specials{is_int(a) ? 0.0 : 0.02});
      twin(d, im, o, *h_);
    }
}

// The plan's own choice on a 4096-row weight at N = 9-15 (the 16-wide tile part-filled; 128 CTAs
// over the whole K, two producer warps per operand), as `spmma bench` runs it: column-major D, B
// read in place.
TEST_F(Robust, DecodeKernelPartFilledTileOnALargeWeightMatchesTheCpu) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the decode kernel is sm_90a machine code";
  std::mt19937_64 rng(seed() + 48);
  for (auto [n, k] : {std::pair{9, 4096}, std::pair{13, 4096}, std::pair{12, 14336}, std::pair{16, 4096}})
    for (auto [a, cd] : {std::pair{T::bf16, T::bf16}, std::pair{T::s8, T::s32}}) {
      SCOPED_TRACE(std::string(type_name(a)) + " 4096x" + std::to_string(n) + "x" + std::to_string(k));
      MatmulDesc d = desc_of(a, a, cd, 4096, n, k);
      d.cd_order = Order::col_major;
      RunOpts o;
      const PlanInfo info = Plan(*h_, d, o.plan).info();
      EXPECT_EQ(info.kernel, KernelFamily::decode);
      EXPECT_EQ(info.splits, 1);
      EXPECT_EQ(info.issuers, 2);  // 128 CTAs: one per SM, two producer warps per operand
      Images im = make_images(d, rng, {});
      twin(d, im, o, *h_);
    }
}

// Which kernel a plan takes for small N (sm90/heuristics.cu), and the pins the decode kernel refuses.
TEST_F(Robust, DecodeKernelIsChosenForSmallNOnEnoughRows) {
  if (supported_types(*h_).empty()) GTEST_SKIP() << "no GPU";
  if (!sm90_runs()) GTEST_SKIP() << "the decode kernel is sm_90a machine code";
  const auto info = [&](int64_t m, int64_t n, PlanOptions o = {}) { return plan_info(*h_, T::bf16, m, n, 4096, o); };
  EXPECT_EQ(info(4096, 16).kernel, KernelFamily::decode);
  EXPECT_EQ(info(4096, 16).tile_m, 32);
  EXPECT_EQ(info(4096, 16).tile_n, 16);
  EXPECT_EQ(info(4096, 8).tile_n, 8);
  EXPECT_EQ(info(4096, 1).kernel, KernelFamily::decode);
  // Past its widest tile (N tiles of 16, each reading A's tile; fp8 on the warpgroup's 64-row
  // tiles) on weights whose main-kernel tiles reach at most half the SMs, its own CTAs (32-row
  // tiles x N tiles) at least half of them and at most 4 per SM: N <= 32, or 64 for the 8-bit
  // types on at most a quarter of the SMs' worth of main-kernel tiles with K <= 8192; K <= 8192
  // (tf32: 4096) or the decode CTAs on every SM.
  EXPECT_EQ(info(4096, 17).kernel, KernelFamily::decode);
  EXPECT_EQ(info(4096, 32).kernel, KernelFamily::decode);
  EXPECT_EQ(info(4096, 32).tile_n, 16);
  EXPECT_EQ(info(4096, 33).kernel, KernelFamily::sm90);
  EXPECT_EQ(info(11008, 32).kernel, KernelFamily::sm90);  // 86 tiles of 128 rows: past half the SMs
  EXPECT_EQ(info(8192, 32).kernel, KernelFamily::decode);  // 64 tiles; 512 decode CTAs, under 4 per SM
  EXPECT_EQ(info(1024, 32).kernel, KernelFamily::sm90);   // 64 decode CTAs: under half the SMs
  EXPECT_EQ(plan_info(*h_, T::s8, 4096, 64, 4096).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::s8, 4096, 65, 4096).kernel, KernelFamily::sm90);
  EXPECT_EQ(plan_info(*h_, T::s8, 4096, 64, 8192).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::s8, 4096, 64, 14336).kernel, KernelFamily::sm90);  // N > 32 only to K = 8192
  EXPECT_EQ(plan_info(*h_, T::s8, 8192, 64, 4096).kernel, KernelFamily::sm90);   // ... on at most 33 tiles
  EXPECT_EQ(plan_info(*h_, T::s8, 8192, 32, 14336).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::f16, 4096, 24, 4096).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::bf16, 4096, 32, 14336).kernel, KernelFamily::decode);  // 256 decode CTAs: every SM
  EXPECT_EQ(plan_info(*h_, T::bf16, 2048, 32, 8192).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::bf16, 2048, 32, 14336).kernel, KernelFamily::sm90);  // 128 decode CTAs, K > 8192
  EXPECT_EQ(plan_info(*h_, T::bf16, 4096, 32, 4096, {}, 2).kernel, KernelFamily::decode);  // a batch of 2: 64 tiles
  EXPECT_EQ(plan_info(*h_, T::bf16, 4096, 32, 4096, {}, 3).kernel, KernelFamily::sm90);    // 96 tiles
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 32, 4096).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 32, 4096).tile_m, 64);  // fp8 past N = 16: the warpgroup's math
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 64, 4096).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::e5m2, 2048, 48, 8192).tile_m, 64);
  EXPECT_EQ(plan_info(*h_, T::e4m3, 8192, 64, 4096).kernel, KernelFamily::sm90);  // 64 tiles: N <= 32
  EXPECT_EQ(plan_info(*h_, T::e4m3, 2048, 32, 14336).kernel, KernelFamily::sm90);
  EXPECT_EQ(plan_info(*h_, T::tf32, 4096, 32, 4096).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::tf32, 4096, 48, 4096).kernel, KernelFamily::sm90);
  EXPECT_EQ(plan_info(*h_, T::tf32, 2048, 32, 8192).kernel, KernelFamily::sm90);  // tf32: K <= 4096 on 128 CTAs
  EXPECT_EQ(plan_info(*h_, T::tf32, 4096, 32, 14336).kernel, KernelFamily::decode);
  EXPECT_EQ(info(512, 16).kernel, KernelFamily::sm90);    // 16 tiles of 32 rows: split K in clusters reaches more SMs
  EXPECT_EQ(info(11008, 16).kernel, KernelFamily::decode);
  EXPECT_EQ(info(28672, 16).kernel, KernelFamily::decode);
  // K whole (split K is a pin now), two producer warps per operand where at most 2 CTAs share an
  // SM (heuristics.cu, decode_issuers): a 4096-row weight's 128 tiles, or 256 at N = 17-32.
  EXPECT_EQ(info(4096, 16).splits, 1);
  EXPECT_EQ(info(4096, 16).issuers, 2);
  EXPECT_EQ(info(4096, 1).splits, 1);
  EXPECT_EQ(info(4096, 1).issuers, 2);
  EXPECT_EQ(info(4096, 32).issuers, 2);                           // 256 CTAs: 2 per SM
  EXPECT_EQ(info(11008, 16).issuers, 1);                          // 344 CTAs: 3 per SM
  EXPECT_EQ(info(28672, 16).issuers, 1);
  EXPECT_EQ(plan_info(*h_, T::s8, 4096, 16, 4096).splits, 1);
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 8, 4096).splits, 1);
  EXPECT_EQ(plan_info(*h_, T::tf32, 4096, 16, 4096).splits, 1);
  EXPECT_EQ(plan_info(*h_, T::tf32, 4096, 16, 4096).issuers, 2);
  EXPECT_EQ(info(4096, 16, PlanOptions{.kernel = KernelFamily::decode, .splits = 2}).splits, 2);  // the pin
  EXPECT_EQ(info(4096, 16, PlanOptions{.kernel = KernelFamily::decode, .splits = 2}).issuers, 2);  // 256 CTAs: 2 per SM
  // A long K on a weight of at most one tile per SM (K = 14336: 112 stages of K = 128 for the
  // 16-bit types, 56 of K = 256 for the 8-bit ones, 224 of K = 64 for tf32): the decode kernel
  // then also at N > 8 for the 16-bit types and tf32, with two issuers; with more tiles than SMs,
  // 16-bit N > 8 stays on the main kernel and s8 takes the decode kernel.
  const auto long_k = [&](T a, int64_t m, int64_t n) { return plan_info(*h_, a, m, n, 14336); };
  EXPECT_EQ(long_k(T::bf16, 4096, 16).kernel, KernelFamily::decode);
  EXPECT_EQ(long_k(T::bf16, 4096, 16).issuers, 2);
  EXPECT_EQ(long_k(T::bf16, 4096, 8).splits, 1);
  EXPECT_EQ(long_k(T::s8, 4096, 16).kernel, KernelFamily::decode);
  EXPECT_EQ(long_k(T::s8, 4096, 16).issuers, 2);
  EXPECT_EQ(long_k(T::tf32, 4096, 16).kernel, KernelFamily::decode);
  EXPECT_EQ(long_k(T::tf32, 4096, 16).splits, 1);
  EXPECT_EQ(long_k(T::s8, 11008, 16).splits, 1);
  EXPECT_EQ(long_k(T::s8, 11008, 16).issuers, 1);
  EXPECT_EQ(long_k(T::bf16, 11008, 8).kernel, KernelFamily::decode);
  EXPECT_EQ(long_k(T::bf16, 11008, 8).splits, 1);
  EXPECT_EQ(long_k(T::bf16, 11008, 16).kernel, KernelFamily::sm90);
  EXPECT_EQ(long_k(T::e4m3, 4096, 8).kernel, KernelFamily::decode);  // fp8: N <= 8 on any K
  EXPECT_EQ(long_k(T::e4m3, 4096, 8).splits, 1);  // the warps' math (64 tiles of 64 rows: under one per SM)
  EXPECT_EQ(long_k(T::e4m3, 4096, 8).tile_m, 32);
  EXPECT_EQ(long_k(T::e4m3, 11008, 8).splits, 1);  // the warpgroup's math: unsplit
  EXPECT_EQ(long_k(T::e4m3, 4096, 16).kernel, KernelFamily::sm90);  // fp8 at N = 16: K <= 4096
  // fp8: N <= 8 anywhere, N = 16 on weights of at most 2/3 of the SMs' worth of main-kernel tiles.
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 16, 4096).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 16, 4096).splits, 1);
  EXPECT_EQ(plan_info(*h_, T::e4m3, 1024, 8, 4096).kernel, KernelFamily::sm90);  // 32 tiles of 32 rows
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 8, 4096).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::e4m3, 11008, 8, 4096).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::e5m2, 14336, 8, 4096).kernel, KernelFamily::decode);
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  if (sms == 132) {  // the H100's: 2/3 of it is 88 main-kernel tiles
    EXPECT_EQ(plan_info(*h_, T::e4m3, 11008, 16, 4096).kernel, KernelFamily::decode);  // 86 tiles
    // fp8 decode on the warpgroup's wgmma.sp (64-row tiles) from one such tile per SM (172, 224
    // and 448 tiles), there at N = 16 on any K
    EXPECT_EQ(plan_info(*h_, T::e4m3, 11008, 16, 4096).tile_m, 64);
    EXPECT_EQ(plan_info(*h_, T::e4m3, 14336, 16, 4096).kernel, KernelFamily::decode);
    EXPECT_EQ(plan_info(*h_, T::e4m3, 14336, 16, 4096).tile_m, 64);
    EXPECT_EQ(plan_info(*h_, T::e4m3, 28672, 16, 8192).kernel, KernelFamily::decode);
    EXPECT_EQ(plan_info(*h_, T::e4m3, 8192, 16, 8192).kernel, KernelFamily::sm90);  // 128 tiles of 64 rows, K > 4096
  }
  EXPECT_EQ(plan_info(*h_, T::e4m3, 14336, 8, 4096).tile_m, 64);  // 224 tiles of 64 rows
  EXPECT_EQ(plan_info(*h_, T::e4m3, 14336, 8, 4096).splits, 1);
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 8, 4096).tile_m, 32);   // 64: the warps' 32-row tiles
  EXPECT_EQ(plan_info(*h_, T::bf16, 14336, 8, 4096).tile_m, 32);  // fp8 only
  EXPECT_EQ(plan_info(*h_, T::s8, 4096, 16, 4096).kernel, KernelFamily::decode);
  PlanOptions main;
  main.kernel = KernelFamily::sm90;
  EXPECT_EQ(info(4096, 16, main).kernel, KernelFamily::sm90);
  PlanOptions tile;
  tile.tile_n = 64;
  EXPECT_EQ(info(4096, 16, tile).kernel, KernelFamily::sm90);  // a main-kernel pin means the main kernel
  PlanOptions pinned;
  pinned.kernel = KernelFamily::decode;
  EXPECT_EQ(info(64, 300, pinned).kernel, KernelFamily::decode);
  EXPECT_GE(info(64, 300, pinned).stages, 4);
  pinned.splits = 5;
  expect_error([&] { (void)info(4096, 16, pinned); }, Status::not_supported, {"decode kernel", "splits", "4 parts"});
  pinned.splits = 3;  // 4096 of K is 32 stages of 128: parts of 11, 11, 10
  EXPECT_EQ(info(4096, 16, pinned).splits, 3);
  expect_error([&] { (void)Plan(*h_, desc_of(T::bf16, T::bf16, T::bf16, 4096, 16, 256), pinned); }, Status::not_supported,
               {"splits = 3", "2 stage(s)"});
  pinned.tile_n = 64;
  expect_error([&] { (void)info(4096, 16, pinned); }, Status::not_supported, {"decode kernel", "tile_n"});
  // issuers: the decode kernel's producer warps per operand (and the decode kernel with it), 1 or
  // 2, against the plan's choice either way; the depth stays a whole number of their rounds.
  PlanOptions producers;
  producers.issuers = 1;
  EXPECT_EQ(info(4096, 16, producers).kernel, KernelFamily::decode);
  EXPECT_EQ(info(4096, 16, producers).issuers, 1);  // the plan's 2: 128 CTAs, one per SM
  producers.issuers = 2;
  EXPECT_EQ(info(28672, 16, producers).issuers, 2);  // the plan's 1: 896 CTAs
  EXPECT_EQ(info(28672, 16, producers).stages % 2, 0);
  EXPECT_EQ(info(28672, 16, producers).kernel, KernelFamily::decode);
  producers.issuers = 3;
  expect_error([&] { (void)info(4096, 16, producers); }, Status::invalid_argument, {"issuers = 3", "1 to 2"});
  producers.issuers = 1, producers.kernel = KernelFamily::sm90;
  expect_error([&] { (void)info(4096, 16, producers); }, Status::not_supported, {"issuers = 1", "kernel = sm90"});
  producers.kernel = KernelFamily::automatic, producers.group_m = 4;
  expect_error([&] { (void)info(4096, 16, producers); }, Status::not_supported, {"group_m", "decode kernel"});
  // tile_m: the decode kernel's rows (and the decode kernel with it), 64 for fp8 only.
  PlanOptions rows;
  rows.tile_m = 64;
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 8, 4096, rows).kernel, KernelFamily::decode);
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 8, 4096, rows).tile_m, 64);
  EXPECT_EQ(plan_info(*h_, T::e4m3, 4096, 40, 4096, rows).tile_n, 16);  // N tiles of 16
  expect_error([&] { (void)info(4096, 8, rows); }, Status::not_supported, {"tile_m = 64", "fp8", "bf16"});
  rows.tile_m = 32;
  EXPECT_EQ(plan_info(*h_, T::e4m3, 14336, 8, 4096, rows).tile_m, 32);  // the warps' math on a weight of many tiles
  EXPECT_EQ(info(4096, 8, rows).kernel, KernelFamily::decode);
  EXPECT_EQ(info(4096, 40, rows).tile_n, 16);
  rows.tile_m = 48;
  expect_error([&] { (void)info(4096, 8, rows); }, Status::invalid_argument, {"tile_m = 48", "32 rows", "64"});
  rows.tile_m = 32, rows.kernel = KernelFamily::sm90;
  expect_error([&] { (void)info(4096, 8, rows); }, Status::not_supported, {"tile_m = 32", "kernel = sm90"});
  rows.kernel = KernelFamily::automatic, rows.cluster_m = 2;
  expect_error([&] { (void)info(4096, 8, rows); }, Status::not_supported, {"cluster_m", "decode kernel"});
  const std::string text = Plan(*h_, desc_of(T::bf16, T::bf16, T::bf16, 4096, 16, 4096)).describe();
  EXPECT_NE(text.find("sm90 decode kernel"), std::string::npos) << text;
}

// The main kernel's tile where its N-covering tile leaves fewer CTAs than half the SMs
// (sm90/heuristics.cu): the narrowest (64-wide) tile, except past N = 128 with K >= 8192 where
// the 128-wide tile in 2 parts of K fills 3/4 of the SMs or more (4096 rows on the H100's 132),
// and at N = 65-128 with at least 96 stages where it fills 2/3 to 3/4 of them in 3 parts (4096 rows).
TEST_F(Robust, MainKernelTileForFewTilesFollowsKAndRows) {
  if (!sm90_runs()) GTEST_SKIP() << "the sm90 kernel does not run here (needs an sm_90 GPU and sm_90a machine code)";
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  if (sms != 132) GTEST_SKIP() << "the bounds are the H100's (132 SMs); this GPU has " << sms;
  const auto info = [&](T a, int64_t m, int64_t n, int64_t k, PlanOptions o = {}) { return plan_info(*h_, a, m, n, k, o); };
  // Clusters of 2 sharing B where the tiles fill the GPU, but not for promoted fp8 (its adds set
  // its pace: clusters of 1 ran 1.005-1.025x).
  EXPECT_EQ(info(T::bf16, 8192, 8192, 8192).cluster_m, 2);
  EXPECT_EQ(info(T::s8, 8192, 8192, 8192).cluster_m, 2);
  EXPECT_EQ(info(T::e4m3, 8192, 8192, 8192).cluster_m, 1);
  for (T a : {T::bf16, T::e4m3, T::s8}) {
    SCOPED_TRACE(std::string(type_name(a)));
    EXPECT_EQ(info(a, 4096, 256, 14336).tile_n, 128);
    EXPECT_EQ(info(a, 4096, 256, 14336).splits, 2);
    EXPECT_EQ(info(a, 4096, 256, 8192).tile_n, 128);
    EXPECT_EQ(info(a, 4096, 192, 14336).tile_n, 128);
    EXPECT_EQ(info(a, 4096, 256, 4096).tile_n, 64);   // K < 8192: the narrowest, unsplit
    EXPECT_EQ(info(a, 4096, 256, 4096).splits, 1);
    EXPECT_EQ(info(a, 2048, 256, 14336).tile_n, 64);  // 64 CTAs in 2 parts: under 3/4 of the SMs
    EXPECT_EQ(info(a, 4096, 128, 14336).tile_n, 128);  // N <= 128, >= 96 stages: the 128-wide in 3 parts (96 CTAs)
    EXPECT_EQ(info(a, 4096, 128, 14336).splits, 3);
    EXPECT_EQ(info(a, 4096, 96, 8192).tile_n, a == T::bf16 ? 128 : 64);  // 128 bf16 stages, 64 8-bit ones
    EXPECT_EQ(info(a, 4096, 128, 4096).tile_n, 64);    // 64 (bf16) or 32 stages: the narrowest in 2 parts
    EXPECT_EQ(info(a, 4096, 128, 4096).splits, 2);
    EXPECT_EQ(info(a, 4096, 64, 14336).tile_n, 64);    // N <= 64: the narrowest covers N
    EXPECT_EQ(info(a, 2048, 128, 14336).tile_n, 64);   // 16 tiles of 128 in 3 parts: under 2/3 of the SMs
    PlanOptions splits;
    splits.splits = 1;  // a pinned split leaves the narrowest tile
    EXPECT_EQ(info(a, 4096, 256, 14336, splits).tile_n, 64);
  }
}
