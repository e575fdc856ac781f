// SPDX-License-Identifier: BSD-3-Clause
// spmma bench, GPU: for each shape and type, a random A that already has its sparsity pattern
// (so cuBLAS multiplies the very same matrix), B random, D = A·B by spmma and by cuBLASLt;
// kernel time by device events (median) on a held stream (HeldTimer: the GPU's time alone), the
// call's end-to-end time by the host clock.
// With Options::prune (`spmma demo`), A is dense random, compress() prunes it on the device, and
// cuBLAS multiplies the host's prune_magnitude of the same A.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "bench_gpu.hpp"
#include "device_buffer.cuh"
#include "launch.hpp"
#include "ptx/timer.cuh"
#include "spmma/error.hpp"
#include "spmma/matmul.hpp"
#include "spmma/matrix.hpp"
#include "spmma/sparse.hpp"

namespace spmma::bench {
namespace {

using cuda::check;
void ckb(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(Status::cuda_error, std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

using Buf = cuda::DeviceBuffer<uint8_t>;

__device__ __forceinline__ uint32_t hash(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

// A random finite value near ±1 as a bit pattern (floats: exponent in [bias-2, bias]; ints: any).
__device__ __forceinline__ uint32_t random_bits(uint32_t h, int bits, int exp_bits, int man_bits, int bias, bool is_float) {
  if (!is_float) return h & ((bits >= 32) ? 0xFFFFFFFFu : ((1u << bits) - 1));
  const uint32_t sign = (h >> 31) & 1u;
  const uint32_t e = static_cast<uint32_t>(bias - 2 + static_cast<int>((h >> 24) % 3));
  const uint32_t man = h & ((1u << man_bits) - 1);
  const int total = 1 + exp_bits + man_bits;  // tf32 is given as f32 with its low 13 bits zero
  uint32_t v = (sign << (total - 1)) | (e << man_bits) | man;
  return v;
}

__device__ __forceinline__ void put(uint8_t* base, int64_t i, int bits, uint32_t v) {
  if (bits == 8) base[i] = static_cast<uint8_t>(v);
  else if (bits == 16) reinterpret_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(v);
  else if (bits == 32) reinterpret_cast<uint32_t*>(base)[i] = v;
}

// Row-major A with its pattern: in each chunk, `kept` random positions (pairs for 4:8) hold values.
__global__ void fill_sparse(uint8_t* a, int64_t rows, int64_t cols, int bits, int exp_bits, int man_bits, int bias,
                            bool is_float, int chunk, int kept, int group, uint64_t seed, bool tf32) {
  const int64_t chunks = rows * cols / chunk;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < chunks;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint32_t h = hash(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(c));
    const int groups = chunk / group, keep_groups = kept / group;
    int first = static_cast<int>(h % groups), second = -1;
    if (keep_groups == 2) second = (first + 1 + static_cast<int>((h >> 8) % (groups - 1))) % groups;
    for (int q = 0; q < groups; ++q)
      for (int e = 0; e < group; ++e) {
        const int64_t i = c * chunk + q * group + e;
        uint32_t v = 0;
        if (q == first || q == second) {
          v = random_bits(hash(h + 7919u * static_cast<uint32_t>(i)), bits, exp_bits, man_bits, bias, is_float);
          if (tf32) v &= ~0x1FFFu;
        }
        put(a, i, bits, v);
      }
  }
}

__global__ void fill_dense(uint8_t* b, int64_t n, int bits, int exp_bits, int man_bits, int bias, bool is_float,
                           uint64_t seed, bool tf32) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t v = random_bits(hash(seed * 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(i)), bits, exp_bits, man_bits, bias, is_float);
    if (tf32) v &= ~0x1FFFu;
    put(b, i, bits, v);
  }
}

struct TypeSetup {  // D's type: output_type(a)
  ElemType a;
  cudaDataType_t cu_ab, cu_cd, cu_scale;
  cublasComputeType_t compute;
};

std::optional<TypeSetup> setup_for(ElemType t) {
  switch (t) {
    case ElemType::bf16: return TypeSetup{t, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case ElemType::f16: return TypeSetup{t, CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case ElemType::tf32: return TypeSetup{t, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case ElemType::e4m3: return TypeSetup{t, CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case ElemType::s8: return TypeSetup{t, CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I};
    default: return std::nullopt;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Spins one thread on the global timer for `ns`: the stream's queue fills behind it.
__global__ void hold_stream(uint64_t ns) { ptx::spin_ns(ns); }

// Times one call by device events with the stream held first (NVBench's blocking kernel): the
// start event, the call and the end event are all enqueued behind hold_stream, so the window opens
// on a queue that already holds the call and times the GPU's work alone. Opened on an idle stream
// (spmma bench before 2026-11-24), the window also counted the host's enqueueing (Plan::run's
// 4.5-5.6 µs, cuBLASLt's own): on the H100 up to a quarter of spmma's decode time and 40% of
// cuBLAS's (docs/benchmarks.md, "Held stream"). The hold starts at 100 µs, about 20x
// Plan::run's enqueueing; a call whose window opened before it was enqueued (a first call that
// loads its kernel; cuBLASLt at 8192^3 now and then, H100 2026-11-24) is no measurement: its time
// is dropped, counted in `missed` (the row's note says how many), and the hold doubles.
struct HeldTimer {
  cudaStream_t s;
  cudaEvent_t e0, e1;
  uint64_t hold_ns = 100'000;
  int missed = 0;
  // The call's time (ms), or nothing where the hold ran out before it was enqueued.
  template <class Call>
  std::optional<double> ms(Call&& call) {
    hold_stream<<<1, 1, 0, s>>>(hold_ns);
    check(cudaGetLastError(), "hold_stream");
    check(cudaEventRecord(e0, s), "event");
    call();
    check(cudaEventRecord(e1, s), "event");
    const cudaError_t q = cudaEventQuery(e0);  // done already: the window opened before the call was queued
    if (q != cudaSuccess && q != cudaErrorNotReady) check(q, "event query");
    (void)cudaGetLastError();  // cudaErrorNotReady is a state, not an error
    check(cudaEventSynchronize(e1), "timed call");
    if (q == cudaSuccess) {
      ++missed;
      hold_ns = std::min<uint64_t>(2 * hold_ns, 50'000'000);
      return std::nullopt;
    }
    float t = 0;
    check(cudaEventElapsedTime(&t, e0, e1), "elapsed");
    return t;
  }
  // The times (ms) of call(i) for i = warmup .. warmup + reps - 1, after call(0 .. warmup - 1):
  // late calls left out and counted in `missed` (the warm-up's only lengthen the hold). Throws,
  // naming `who`, where not one timed call was queued in time.
  template <class Call>
  std::vector<double> times(int warmup, int reps, const char* who, Call&& call) {
    std::vector<double> t;
    for (int i = 0; i < warmup + reps; ++i) {
      if (i == warmup) missed = 0;
      const std::optional<double> one = ms([&] { call(i); });
      if (i >= warmup && one) t.push_back(*one);
    }
    if (t.empty()) fail(Status::cuda_error, std::string(who) + ": every timed call was enqueued after its stream's hold ran out");
    return t;
  }
};

// D_cm(N x M) = op(B)ᵀ(N x K) · A_cm(K x M): both operands K-contiguous ("TN"), D row-major M x N.
struct CublasGemm {
  cublasLtHandle_t h = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t ws_bytes = 32 << 20;
  Buf ws{32 << 20};
  bool ok = false;
  std::string why;

  CublasGemm(const TypeSetup& ts, int64_t m, int64_t n, int64_t k, bool fast_accum = false) {
    ckb(cublasLtCreate(&h), "cublasLtCreate");
    ckb(cublasLtMatmulDescCreate(&op, ts.compute, ts.cu_scale), "cublasLtMatmulDescCreate");
    if (fast_accum) {
      const int8_t on = 1;
      ckb(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on, sizeof on), "FAST_ACCUM");
    }
    const cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    ckb(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "TRANSA");
    ckb(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn), "TRANSB");
    ckb(cublasLtMatrixLayoutCreate(&la, ts.cu_ab, k, n, k), "layout B");
    ckb(cublasLtMatrixLayoutCreate(&lb, ts.cu_ab, k, m, k), "layout A");
    ckb(cublasLtMatrixLayoutCreate(&lc, ts.cu_cd, n, m, n), "layout D");
    cublasLtMatmulPreference_t pref;
    ckb(cublasLtMatmulPreferenceCreate(&pref), "preference");
    ckb(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes), "ws");
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, lc, pref, 1, &res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s == CUBLAS_STATUS_SUCCESS && found > 0) {
      algo = res.algo;
      ok = true;
    } else {
      why = "cuBLASLt has no algorithm for this type/shape (status " + std::to_string(static_cast<int>(s)) + ")";
    }
  }
  ~CublasGemm() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (op) cublasLtMatmulDescDestroy(op);
    if (h) cublasLtDestroy(h);
  }
  void run(const TypeSetup& ts, const void* a, const void* b, void* d, cudaStream_t s) {
    const float alpha_f = 1.f, beta_f = 0.f;
    const int32_t alpha_i = 1, beta_i = 0;
    const void* alpha = ts.cu_scale == CUDA_R_32I ? static_cast<const void*>(&alpha_i) : &alpha_f;
    const void* beta = ts.cu_scale == CUDA_R_32I ? static_cast<const void*>(&beta_i) : &beta_f;
    ckb(cublasLtMatmul(h, op, alpha, b, la, a, lb, beta, d, lc, d, lc, &algo, ws.ptr, ws_bytes, s), "cublasLtMatmul");
  }
};

double elem_value(const uint8_t* p, int64_t i, ElemType t) { return decode(t, load_element(p, i, memory_bits(t))); }

// At most this many copies in a cold rotation. Plan::run's pointer checks keep a thread's 16 most
// recent pointers (src/cuda/api/device_check.cu): up to about 13 copies of B, with D and the
// workspace, every call is answered there; beyond, a call asks the driver about its B again (about
// 1 µs of host time, counted in `host us`; the event window leaves host time out, HeldTimer). The decode sweep's smallest
// weight (4096 x 4096 e4m3, 10 MiB compressed) needs 11 copies on the H100; a weight under ~2 MB
// would need more than 64, and its call is launch-bound anyway (the row's note says how cold it is).
constexpr int kMaxColdCopies = 64;

std::string mib(uint64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// One L2 mode's measurements of a case (spmma's and the dense baseline's).
struct ModeTiming {
  L2Mode mode = L2Mode::hot;
  Timing spmma, dense;
  double call_us = 0, host_us = 0;
  bool ran = false, dense_ran = false;
  bool refused = false;  // cold: not even 2 copies fit (note says the sizes)
  int copies = 1, dense_copies = 1;
  uint64_t between = 0, dense_between = 0;
  int missed = 0;  // timed calls (spmma's and cuBLAS's) enqueued after their hold ran out (HeldTimer)
  // Cold: layer after layer (sequence_timing), per call; the calls of a window.
  Timing spmma_seq, dense_seq;
  int seq_calls = 0, dense_seq_calls = 0;
  std::string note;
};

// Layer after layer (cold L2 only): one held window holds `calls` calls back to back, each on the
// next copy of the rotation (another weight, as the next layer of a model is), whole rotations of
// at least kSequenceCalls; a call's time is the window over `calls`, median over `reps` windows.
// This is how decode runs (a CUDA graph or a full launch queue: no host time between calls), and
// where a kernel's start can overlap the end of the one before (programmatic dependent launch):
// a single call in its own window cannot show that. call(j) runs the j-th call of the rotation.
constexpr int kSequenceCalls = 8;
template <class Call>
Timing sequence_timing(HeldTimer& timer, int copies, int reps, const char* who, int& calls, Call&& call) {
  calls = copies * ((kSequenceCalls + copies - 1) / copies);
  std::vector<double> per_call;
  // 3 warm-up windows: each one queued too late doubles the hold (a window's enqueueing is `calls`
  // times a call's, up to 64 x cuBLASLt's ~10 us).
  for (double t : timer.times(3, reps, who, [&](int) {
         for (int j = 0; j < calls; ++j) call(j);
       }))
    per_call.push_back(t / calls);
  return timing_of(per_call);
}

// The row of one mode: the case's shared fields (data, plan, verification) in `r`, this mode's
// times, copies and weight-stream rates from mt.
Row row_for_mode(const Row& r, const ModeTiming& mt, uint64_t l2_bytes) {
  Row out = r;
  out.l2 = l2_name(mt.mode);
  const double flops = 2.0 * r.m * r.n * r.k;
  if (mt.ran) {
    out.spmma_timing = mt.spmma;
    out.spmma_ms = mt.spmma.median;
    out.spmma_call_us = mt.call_us;
    out.spmma_host_us = mt.host_us;
    out.spmma_tflops = flops / (out.spmma_ms * 1e-3) / 1e12;
    out.weight_gbps = static_cast<double>(r.value_bytes + r.metadata_bytes) / (out.spmma_ms * 1e-3) / 1e9;
  }
  if (mt.dense_ran) {
    out.dense_timing = mt.dense;
    out.cublas_ms = mt.dense.median;
    out.cublas_tflops = flops / (out.cublas_ms * 1e-3) / 1e12;
    out.dense_weight_gbps = static_cast<double>(r.dense_weight_bytes) / (out.cublas_ms * 1e-3) / 1e9;
  }
  if (mt.seq_calls) out.spmma_seq_ms = mt.spmma_seq.median, out.seq_calls = mt.seq_calls;
  if (mt.dense_seq_calls) out.cublas_seq_ms = mt.dense_seq.median, out.dense_seq_calls = mt.dense_seq_calls;
  out.l2_copies = mt.copies, out.dense_l2_copies = mt.dense_copies;
  out.l2_between_bytes = mt.between, out.dense_l2_between_bytes = mt.dense_between;
  out.l2_bytes = mt.mode == L2Mode::cold ? l2_bytes : 0;
  std::string note = mt.note;
  if (mt.mode == L2Mode::cold && mt.ran && mt.between < 2 * l2_bytes)
    note += (note.empty() ? "" : "; ") + std::string("cold L2: ") + std::to_string(mt.copies) + " copies, " +
            mib(mt.between) + " read between two uses of a copy, under 2x the L2 (" + mib(2 * l2_bytes) +
            "): partly warm";
  if (mt.mode == L2Mode::cold && mt.dense_ran && mt.dense_between < 2 * l2_bytes)
    note += (note.empty() ? "" : "; ") + std::string("cold L2, cuBLAS: ") + std::to_string(mt.dense_copies) +
            " copies, " + mib(mt.dense_between) + " between two uses, under 2x the L2: partly warm";
  if (mt.missed > 0)
    note += (note.empty() ? "" : "; ") + std::to_string(mt.missed) +
            " timed calls (spmma's and cuBLAS's) enqueued after their stream's hold ran out: left out of the median";
  if (!note.empty()) out.note = out.note.empty() ? note : out.note + "; " + note;
  if (mt.refused) out.verified = false;  // not timed: bench names the row and exits 1
  return out;
}

}  // namespace

std::string gpu_name() {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

std::string cublas_version() {
  const size_t v = cublasLtGetVersion();  // major * 10000 + minor * 100 + patch
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

uint64_t gpu_free_memory() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it
    return 0;
  }
  return free;
}

uint64_t gpu_l2_bytes() {
  int dev = 0, l2 = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), "cudaDeviceGetAttribute(L2 cache size)");
  return static_cast<uint64_t>(l2);
}

CopyRate measure_copy_rate() {
  CopyRate c;
  const uint64_t l2 = gpu_l2_bytes();
  // 1 GiB (20x the H100's 50 MiB L2: the copy's reads come from HBM), or a quarter of the free
  // memory where that is less (source and destination take half), in whole MiB.
  c.bytes = std::min<uint64_t>(uint64_t{1} << 30, gpu_free_memory() / 4) / (1 << 20) * (1 << 20);
  if (c.bytes < 8 * l2) {
    c.why = "not measured: " + std::to_string(c.bytes >> 20) +
            " MiB (a quarter of the free memory) is under 8x the L2 (" + std::to_string(l2 >> 20) + " MiB)";
    c.bytes = 0;
    return c;
  }
  try {
    Buf src(c.bytes), dst(c.bytes);
    cudaStream_t s;
    check(cudaStreamCreate(&s), "cudaStreamCreate");
    cudaEvent_t e0, e1;
    check(cudaEventCreate(&e0), "event");
    check(cudaEventCreate(&e1), "event");
    // Both buffers written once first, so no copy pays for first-touch page mapping.
    check(cudaMemsetAsync(src.ptr, 0x3C, c.bytes, s), "copy rate: memset");
    check(cudaMemsetAsync(dst.ptr, 0, c.bytes, s), "copy rate: memset");
    const int warmup = 3;
    c.reps = 10;
    std::vector<double> t;
    for (int i = 0; i < warmup + c.reps; ++i) {
      check(cudaEventRecord(e0, s), "event");
      check(cudaMemcpyAsync(dst.ptr, src.ptr, c.bytes, cudaMemcpyDeviceToDevice, s), "copy rate: cudaMemcpyAsync");
      check(cudaEventRecord(e1, s), "event");
      check(cudaStreamSynchronize(s), "copy rate");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
      if (i >= warmup) t.push_back(ms);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(s);
    c.ms = timing_of(t);
    c.gbps = 2.0 * static_cast<double>(c.bytes) / (c.ms.median * 1e-3) / 1e9;  // read + written (CopyRate)
  } catch (const Error& e) {
    c = CopyRate{};
    c.why = std::string("not measured: ") + e.what();
  }
  return c;
}

// An empty kernel of the sm90 kernel's CTA (LaunchFloor).
__global__ void __launch_bounds__(384) empty_call() {}

LaunchFloor measure_launch_floor() {
  LaunchFloor f;
  cudaStream_t s = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  try {
    int dev = 0, sms = 0, major = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute(SMs)");
    check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "cudaDeviceGetAttribute(major)");
    f.ctas = sms, f.threads = 384, f.reps = 30;
    check(cudaStreamCreate(&s), "cudaStreamCreate");
    check(cudaEventCreate(&e0), "event");
    check(cudaEventCreate(&e1), "event");
    HeldTimer timer{s, e0, e1};
    f.plain_ms = timing_of(timer.times(5, f.reps, "launch floor", [&](int) {
      empty_call<<<sms, f.threads, 0, s>>>();
      check(cudaGetLastError(), "launch floor: empty kernel");
    }));
    if (major >= 9) {
      // Through the plans' own launch (src/cuda/api/launch.cu, cuda::enqueue): a cluster of 2,
      // programmatic dependent launch, 200 KB of dynamic shared memory (one CTA per SM).
      constexpr unsigned kSmem = 200 * 1024;
      const cuda::Launch l{.fn = cuda::function(reinterpret_cast<const void*>(empty_call), kSmem, "launch floor"),
                           .grid_x = static_cast<unsigned>(sms / 2 * 2),
                           .block = static_cast<unsigned>(f.threads),
                           .smem = kSmem,
                           .cluster = 2,
                           .dependent = true};
      f.shaped_ms = timing_of(timer.times(5, f.reps, "launch floor (sm90-shaped)", [&](int) {
        cuda::enqueue(l, nullptr, s, "launch floor: the sm90 plans' launch");
      }));
    }
  } catch (const Error& e) {
    f = LaunchFloor{};
    f.why = std::string("not measured: ") + e.what();
  }
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (s) cudaStreamDestroy(s);
  return f;
}

// Rows of D (spmma's, in d1) against the CPU backend on the same A (the dense, pattern-holding
// device buffer a, row-major), B (column-major) and epilogue (ed: null for the plain one): 8 rows
// from the top, 8 from the bottom (every CTA row tile edge of a small M included), and `also`
// where it is another row. Integer D: exact (the same sums and the same epilogue arithmetic);
// float D: within error_bound.
void verify_rows_on_cpu(Row& r, const MatmulDesc& d, const Buf& a, const Buf& b, const Buf& d1, const EpilogueData* ed,
                        cudaStream_t stream, int64_t also = -1) {
  check(cudaStreamSynchronize(stream), "verify: sync");
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < r.m; ++i)
    if (i < 8 || i >= r.m - 8 || i == also) rows.push_back(i);
  const int bits = memory_bits(d.a_type), cb = memory_bits(d.d_type) / 8;
  const size_t a_row = static_cast<size_t>(d.k * bits / 8), d_row = static_cast<size_t>(d.n * cb);
  std::vector<uint8_t> ha(rows.size() * a_row), hd(rows.size() * d_row), hb = b.download();
  // A column-major D: the sampled rows gathered from the whole of it (row i is every M-th element).
  const bool cm = d.cd_order == Order::col_major;
  const std::vector<uint8_t> whole = cm ? d1.download() : std::vector<uint8_t>();
  std::vector<float> bias, srow;
  for (size_t s = 0; s < rows.size(); ++s) {
    check(cudaMemcpy(ha.data() + s * a_row, a.ptr + rows[s] * a_row, a_row, cudaMemcpyDeviceToHost), "verify: A row");
    if (cm) {
      for (int64_t j = 0; j < d.n; ++j)
        std::memcpy(hd.data() + s * d_row + j * cb, whole.data() + (j * d.m + rows[s]) * cb, static_cast<size_t>(cb));
    } else {
      check(cudaMemcpy(hd.data() + s * d_row, d1.ptr + rows[s] * d_row, d_row, cudaMemcpyDeviceToHost), "verify: D row");
    }
    if (ed) bias.push_back(ed->bias[static_cast<size_t>(rows[s])]), srow.push_back(ed->scale_rows[static_cast<size_t>(rows[s])]);
  }
  MatmulDesc sub = d;
  sub.m = static_cast<int64_t>(rows.size());
  sub.cd_order = Order::row_major;
  Handle cpu(Device::cpu);
  SparseMatrix sa = compress(cpu, sub, ha.data(), 0, 0, PruneMode::check);
  std::vector<uint8_t> ref(hd.size());
  EpilogueArgs ea;
  if (d.bias) ea.bias = bias.data();
  if (d.scale_rows) ea.scale_rows = srow.data();
  if (d.scale_cols) ea.scale_cols = ed->scale_cols.data();
  Plan(cpu, sub).run(sa, hb.data(), ref.data(), ea);
  r.checked_rows = sub.m;
  if (!type_info(d.d_type).is_float) {
    r.max_error = ref == hd ? 0.0 : 1.0;
    r.verified = ref == hd;
    return;
  }
  const Agreement ag = agreement(sub.m * d.n, [&](int64_t i) { return elem_value(hd.data(), i, d.d_type); },
                                 [&](int64_t i) { return elem_value(ref.data(), i, d.d_type); });
  r.max_error = ag.worst;
  r.verified = ag.finite_alike && ag.worst <= error_bound(d.d_type, d.k);
}

std::vector<Row> run_gpu(const Options& o) {
  std::vector<Row> rows;
  Handle h(Device::gpu);
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  const size_t total = o.types.size() * o.shapes.size();
  const bool any_cold = std::find(o.l2.begin(), o.l2.end(), L2Mode::cold) != o.l2.end();
  const uint64_t l2_bytes = any_cold ? gpu_l2_bytes() : 0;
  size_t case_index = 0;
  for (ElemType t : o.types)
    for (const auto& sh : o.shapes) {
      if (o.on_start) o.on_start(case_index++, total, case_name(sh, t));
      std::vector<ModeTiming> modes;
      for (L2Mode m : o.l2) modes.push_back(ModeTiming{m});
      Row r;
      r.m = sh[0], r.n = sh[1], r.k = sh[2];
      r.type = std::string(type_name(t));
      r.backend = "gpu";
      const auto ts = setup_for(t);
      const ElemType dense_cd = output_type(t);  // the baseline's D
      const ElemType cd = o.epilogue.out.value_or(dense_cd);
      // spmma's D is compared with the baseline's only where both compute the same thing.
      const bool custom = !o.epilogue.plain() || cd != dense_cd;
      r.d_type = std::string(type_name(cd));
      r.epilogue = o.epilogue.text();
      r.d_order = o.d_col_major ? "col" : "row";
      MatmulDesc d;
      d.m = r.m, d.n = r.n, d.k = r.k;
      d.a_type = d.b_type = t;
      d.c_type = d.d_type = cd;
      d.b_order = Order::col_major;
      d.cd_order = o.d_col_major ? Order::col_major : Order::row_major;
      d.fast_accumulation = o.fast_accum;
      d.bias = o.epilogue.bias, d.activation = o.epilogue.act;
      d.scale_rows = d.scale_cols = o.epilogue.scales;
      try {
        Plan plan(h, d, o.plan);
        r.kernel = plan.describe();
        const TypeInfo& ti = type_info(t);
        const int bits = memory_bits(t);
        const Pattern pattern = (t == ElemType::s4 || t == ElemType::u4) ? Pattern::p4_8_pairs : pattern_for(t);
        const PatternInfo& pi = pattern_info(pattern);
        Buf a(static_cast<size_t>(r.m * r.k * bits / 8)), b(static_cast<size_t>(r.k * r.n * bits / 8));
        const int cb = memory_bits(cd) / 8, dense_cb = memory_bits(dense_cd) / 8;
        Buf d1(static_cast<size_t>(r.m * r.n * cb)), d2(static_cast<size_t>(r.m * r.n * dense_cb));
        // The epilogue's vectors (bias, scales), where the case has them.
        const std::optional<EpilogueData> ed = custom ? std::optional<EpilogueData>(std::in_place, r.m, r.n) : std::nullopt;
        Buf dbias(custom ? r.m * 4 : 0), dsrow(custom ? r.m * 4 : 0), dscol(custom ? r.n * 4 : 0);
        EpilogueArgs ea;
        if (ed) {
          check(cudaMemcpy(dbias.ptr, ed->bias.data(), r.m * 4, cudaMemcpyHostToDevice), "bias");
          check(cudaMemcpy(dsrow.ptr, ed->scale_rows.data(), r.m * 4, cudaMemcpyHostToDevice), "scale_rows");
          check(cudaMemcpy(dscol.ptr, ed->scale_cols.data(), r.n * 4, cudaMemcpyHostToDevice), "scale_cols");
          if (d.bias) ea.bias = reinterpret_cast<const float*>(dbias.ptr);
          if (d.scale_rows) ea.scale_rows = reinterpret_cast<const float*>(dsrow.ptr);
          if (d.scale_cols) ea.scale_cols = reinterpret_cast<const float*>(dscol.ptr);
        }
        Buf ws(plan.workspace_bytes());  // B repacked, where the plan reads it so
        const int man = t == ElemType::tf32 ? 23 : ti.man_bits, ex = t == ElemType::tf32 ? 8 : ti.exp_bits,
                  bias = t == ElemType::tf32 ? 127 : ti.bias;
        if (o.prune)
          fill_dense<<<1024, 256, 0, stream>>>(static_cast<uint8_t*>(a.ptr), r.m * r.k, bits, ex, man, bias, ti.is_float,
                                               o.seed + 2, t == ElemType::tf32);
        else
          fill_sparse<<<1024, 256, 0, stream>>>(static_cast<uint8_t*>(a.ptr), r.m, r.k, bits, ex, man, bias, ti.is_float,
                                                pi.chunk, pi.kept, pi.group, o.seed, t == ElemType::tf32);
        fill_dense<<<1024, 256, 0, stream>>>(static_cast<uint8_t*>(b.ptr), r.k * r.n, bits, ex, man, bias, ti.is_float,
                                             o.seed + 1, t == ElemType::tf32);
        check(cudaGetLastError(), "fill");
        SparseMatrix sa = compress(h, d, a.ptr, r.k, 0, o.prune ? PruneMode::magnitude : PruneMode::check, stream);
        r.value_bytes = sa.value_bytes(), r.metadata_bytes = sa.metadata_bytes();
        r.dense_weight_bytes = a.bytes();
        if (o.prune) {  // the dense baseline multiplies the host's pruning of the same A
          check(cudaStreamSynchronize(stream), "compress");
          std::vector<uint8_t> host = a.download();
          Matrix dense(t, r.m, r.k);
          for (int64_t i = 0; i < r.m * r.k; ++i) dense.bits[static_cast<size_t>(i)] = load_element(host.data(), i, bits);
          const Matrix pruned = prune_magnitude(dense, pattern);
          for (int64_t i = 0; i < r.m * r.k; ++i) store_element(host.data(), i, bits, pruned.bits[static_cast<size_t>(i)]);
          check(cudaMemcpy(a.ptr, host.data(), host.size(), cudaMemcpyHostToDevice), "upload pruned A");
        }
        check(cudaMemsetAsync(d1.ptr, 0xA5, r.m * r.n * cb, stream), "poison");
        // Cold L2 (docs/benchmarks.md, "Cold L2 and the decode sweep"): every timed call reads its
        // A and B from HBM because the calls rotate over distinct copies of them, enough that the
        // copies read between two uses of one copy exceed twice the L2 (cold_copies). Rotating
        // rather than flushing the L2 between calls: a flush (a kernel or memset over a buffer
        // larger than the L2) leaves the L2 full of its own dirty lines, which the timed call
        // then writes back to HBM at its own expense; it puts a memory-bound kernel of a few tens
        // of µs before every timed call, which moves the clocks and the power state the call
        // runs at; and it empties the L2 of D and the workspace too, which a layer of a model
        // finds there. Rotation is what a model's forward pass does: each weight is read once per
        // token, the other layers' weights read in between, and the timed calls run back to back
        // exactly as the hot ones do. Copy 0 is the case's own A and B; each copy has its own Plan,
        // because a plan keeps the tensor map of the last B it saw, and one plan rotating B would
        // encode a map on every call, host time that `host us` and the call's time would count.
        const uint64_t b_bytes = b.bytes(), sparse_bytes = r.value_bytes + r.metadata_bytes, dense_a_bytes = a.bytes();
        std::vector<Buf> b_copies;           // copies 1... of B (spmma and cuBLAS)
        std::vector<SparseMatrix> a_copies;  // copies 1... of the compressed A
        std::vector<Plan> plans;             // a plan per copy 1...
        auto spmma_timed = [&](ModeTiming& mt) {
          const int copies = mt.copies;
          const int warmup = copies > 1 ? std::max(o.warmup, copies) : o.warmup;  // a whole rotation first
          std::vector<double> calls, hosts;
          auto call = [&](int i) {
            const int j = i % copies;
            const Plan& p = j == 0 ? plan : plans[static_cast<size_t>(j - 1)];
            const SparseMatrix& sj = j == 0 ? sa : a_copies[static_cast<size_t>(j - 1)];
            const void* bj = j == 0 ? b.ptr : b_copies[static_cast<size_t>(j - 1)].ptr;
            p.run(sj, bj, d1.ptr, ea, ws.ptr, stream);
          };
          HeldTimer timer{stream, e0, e1};
          const std::vector<double> ktimes = timer.times(warmup, o.reps, "spmma", [&](int i) {
            const auto r0 = std::chrono::steady_clock::now();
            call(i);
            if (i >= warmup)
              hosts.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - r0).count());
          });
          // The call end to end (launch to synchronize, host clock), on a stream left idle.
          for (int i = 0; i < o.reps; ++i) {
            check(cudaStreamSynchronize(stream), "sync");
            const auto h0 = std::chrono::steady_clock::now();
            call(i);
            check(cudaStreamSynchronize(stream), "spmma run");
            calls.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count());
          }
          mt.missed += timer.missed;
          if (copies > 1) {
            mt.spmma_seq = sequence_timing(timer, copies, o.reps, "spmma (layer after layer)", mt.seq_calls, call);
            mt.missed += timer.missed;
          }
          mt.spmma = timing_of(ktimes);
          mt.call_us = median(calls);
          mt.host_us = median(hosts);
          mt.ran = true;
        };
        for (ModeTiming& mt : modes) {
          if (mt.mode == L2Mode::hot) {
            spmma_timed(mt);
            continue;
          }
          // The copies' memory: at most 3/4 of what is free now (the rest for the driver, cuBLAS's
          // workspace and the dense copies' turn, which frees these first); fewer copies than
          // wanted where they do not fit, said in the row's note; refused below 2.
          const int wanted = cold_copies(sparse_bytes + b_bytes, l2_bytes, kMaxColdCopies);
          const uint64_t budget = gpu_free_memory() / 4 * 3;
          const int fit =
              static_cast<int>(std::min<uint64_t>(1 + budget / std::max<uint64_t>(1, sparse_bytes + b_bytes), wanted));
          if (fit < 2) {
            mt.refused = true;
            mt.note = "cold L2: a second copy of the compressed A and B (" + mib(sparse_bytes + b_bytes) +
                      ") does not fit in 3/4 of the free GPU memory (" + mib(budget) + " usable)";
            continue;
          }
          mt.copies = fit;
          while (a_copies.size() + 1 < static_cast<size_t>(fit)) {
            a_copies.push_back(
                compress(h, d, a.ptr, r.k, 0, o.prune ? PruneMode::magnitude : PruneMode::check, stream));
            plans.emplace_back(h, d, o.plan);
          }
          while (b_copies.size() + 1 < static_cast<size_t>(fit)) {
            b_copies.emplace_back(static_cast<size_t>(b_bytes));
            check(cudaMemcpyAsync(b_copies.back().ptr, b.ptr, b_bytes, cudaMemcpyDeviceToDevice, stream), "copy B");
          }
          mt.between = static_cast<uint64_t>(fit - 1) * (sparse_bytes + b_bytes);
          spmma_timed(mt);
        }
        // Only cuBLAS's dense copies from here: the compressed ones go (B's stay, cuBLAS rotates them too).
        a_copies.clear();
        plans.clear();
        bool dense_ran = false;  // cuBLAS's D (d2) holds a product to compare with
        if (ts) {
          CublasGemm g(*ts, r.m, r.n, r.k, o.fast_accum && (t == ElemType::e4m3 || t == ElemType::e5m2));
          if (g.ok) {
            std::vector<Buf> a_dense;  // copies 1... of the dense A
            auto dense_timed = [&](ModeTiming& mt) {
              const int copies = mt.dense_copies;
              const int warmup = copies > 1 ? std::max(o.warmup, copies) : o.warmup;
              HeldTimer timer{stream, e0, e1};
              auto call = [&](int i) {
                const int j = i % copies;
                const void* aj = j == 0 ? a.ptr : a_dense[static_cast<size_t>(j - 1)].ptr;
                const void* bj = j == 0 ? b.ptr : b_copies[static_cast<size_t>(j - 1)].ptr;
                g.run(*ts, aj, bj, d2.ptr, stream);
              };
              const std::vector<double> ct = timer.times(warmup, o.reps, "cuBLAS", call);
              mt.missed += timer.missed;
              if (copies > 1) {
                mt.dense_seq = sequence_timing(timer, copies, o.reps, "cuBLAS (layer after layer)", mt.dense_seq_calls, call);
                mt.missed += timer.missed;
              }
              mt.dense = timing_of(ct);
              mt.dense_ran = true;
            };
            for (ModeTiming& mt : modes) {
              if (mt.mode == L2Mode::hot) {
                dense_timed(mt);
                continue;
              }
              if (mt.refused) continue;
              const int wanted = cold_copies(dense_a_bytes + b_bytes, l2_bytes, kMaxColdCopies);
              const uint64_t budget = gpu_free_memory() / 4 * 3;
              // B's copies exist already (as many as spmma's, and spmma's A is the smaller).
              const int fit =
                  static_cast<int>(std::min<uint64_t>({1 + budget / std::max<uint64_t>(1, dense_a_bytes),
                                                       static_cast<uint64_t>(wanted), b_copies.size() + 1}));
              if (fit < 2) {
                mt.note = (mt.note.empty() ? "" : mt.note + "; ") + "cold L2, cuBLAS: a second copy of the dense A (" +
                          mib(dense_a_bytes) + ") does not fit in 3/4 of the free GPU memory (" + mib(budget) +
                          " usable)";
                continue;
              }
              mt.dense_copies = fit;
              while (a_dense.size() + 1 < static_cast<size_t>(fit)) {
                a_dense.emplace_back(static_cast<size_t>(dense_a_bytes));
                check(cudaMemcpyAsync(a_dense.back().ptr, a.ptr, dense_a_bytes, cudaMemcpyDeviceToDevice, stream),
                      "copy A");
              }
              mt.dense_between = static_cast<uint64_t>(fit - 1) * (dense_a_bytes + b_bytes);
              dense_timed(mt);
            }
            for (const ModeTiming& mt : modes) dense_ran = dense_ran || mt.dense_ran;
          } else {
            r.note = g.why;
          }
          if (g.ok && dense_ran && !custom) {
            // Verify spmma against cuBLAS on the same A, element by element.
            std::vector<uint8_t> h1(static_cast<size_t>(r.m * r.n * cb)), h2(h1.size());  // cb == dense_cb here
            check(cudaMemcpy(h1.data(), d1.ptr, h1.size(), cudaMemcpyDeviceToHost), "download");
            check(cudaMemcpy(h2.data(), d2.ptr, h2.size(), cudaMemcpyDeviceToHost), "download");
            // cuBLAS's D is row-major; spmma's element (i / N, i % N) of a column-major D lies at (i % N)·M + i / N.
            const auto at = [&](int64_t i) { return o.d_col_major ? (i % r.n) * r.m + i / r.n : i; };
            const Agreement ag = agreement(r.m * r.n, [&](int64_t i) { return elem_value(h1.data(), at(i), cd); },
                                           [&](int64_t i) { return elem_value(h2.data(), i, cd); });
            r.max_error = ag.worst;
            r.rel_error = ag.rel;
            r.checked_rows = r.m;
            // Fast fp8 accumulation (both sides keep fp8-width sums): checked to 25%, which still
            // catches a wrong element (a misread metadata nibble or tile gives errors of order 1).
            const bool fast8 = o.fast_accum && (t == ElemType::e4m3 || t == ElemType::e5m2);
            const double bound = fast8 ? 0.25 : error_bound(cd, r.k);
            r.verified = ag.finite && ag.worst <= bound;
            if (fast8) r.note = "fast fp8 accumulation: checked to 25%";
            if (!r.verified && ag.finite && !fast8 && ag.worst_at >= 0) {
              // cuBLAS's D is a reference, not the truth: at N = 9-15 on 4096-row bf16 weights
              // (H200, 2026-11-29) its elements differed from spmma's by up to 14% where both
              // of spmma's kernels, whole K and split, and the CPU backend agreed. The CPU backend
              // settles it on the rows it samples and the worst element's row.
              const int64_t wr = ag.worst_at / r.n, wc = ag.worst_at % r.n;
              const std::string off = "cuBLAS's D differs from spmma's by " + std::to_string(ag.worst) + " at (" +
                                      std::to_string(wr) + ", " + std::to_string(wc) + "), above the bound " +
                                      std::to_string(bound);
              verify_rows_on_cpu(r, d, a, b, d1, nullptr, stream, wr);
              r.note = (r.note.empty() ? "" : r.note + "; ") + off +
                       (r.verified ? "; spmma's agrees with the CPU backend there and on the " +
                                         std::to_string(r.checked_rows) + " rows checked (worst " +
                                         std::to_string(r.max_error) + "): cuBLAS's rounding"
                                   : "; spmma's differs from the CPU backend too (worst " + std::to_string(r.max_error) +
                                         " on " + std::to_string(r.checked_rows) + " rows)");
            } else if (!r.verified) {
              r.note = (r.note.empty() ? "" : r.note + "; ") +
                       (ag.finite ? "worst element error " + std::to_string(ag.worst) + " above the bound " + std::to_string(bound)
                               : std::string("D holds a non-finite value"));
            }
          }
        }
        if (custom) {
          // Another epilogue or D type than the baseline's: sampled rows against the CPU backend.
          verify_rows_on_cpu(r, d, a, b, d1, ed ? &*ed : nullptr, stream);
          const std::string what = "epilogue " + r.epilogue + ", D " + r.d_type + " (" + (ts ? "cuBLAS: plain, D " + std::string(type_name(dense_cd)) : std::string("no cuBLAS")) + ")";
          r.note = (r.note.empty() ? "" : r.note + "; ") + what + (r.verified ? ": checked against the CPU backend on " : ": differs from the CPU backend on ") +
                   std::to_string(r.checked_rows) + " rows";
        } else if (!ts && !ti.is_float) {
          // No cuBLAS GEMM for this integer type (s4, u4): sampled rows of D against the CPU
          // backend on the same A and B, exactly (s32 sums are exact on both).
          verify_rows_on_cpu(r, d, a, b, d1, nullptr, stream);
          if (!r.verified) r.note = "sampled rows differ from the CPU backend (cuBLAS has no " + r.type + " GEMM)";
          else r.note = "checked against the CPU backend on " + std::to_string(r.checked_rows) + " rows (cuBLAS has no " +
                        r.type + " GEMM)";
        } else if (!ts) {
          r.note = "cuBLAS has no " + r.type + " GEMM";
        }
      } catch (const Error& e) {
        r.note = e.what();
      } catch (const std::bad_alloc&) {
        r.note = "out of host memory";
      }
      // One row per L2 mode, in the order asked: the case's checks shared, each mode's times.
      for (const ModeTiming& mt : modes) {
        rows.push_back(row_for_mode(r, mt, l2_bytes));
        if (o.on_row) o.on_row(rows.back());
      }
    }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(stream);
  return rows;
}

}  // namespace spmma::bench
