// SPDX-License-Identifier: BSD-3-Clause
// What every sparse GEMM kernel of the GPU backend receives, and the epilogue they share:
// D = act(alpha·s_row·s_col·acc + beta·C + bias), computed in f32 (double where C or D is s32) and
// rounded once into D's type, by the host/device definition the CPU backend uses too
// (spmma/detail/epilogue.hpp).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "common/device_layout.hpp"
#include "spmma/detail/epilogue.hpp"
#include "spmma/types.hpp"

namespace spmma::gemm {

// The C/D types the kernels read and write, numbered densely so that the epilogue's switches
// compile to jump tables (ElemType's values are sparse).
enum class CdType : uint8_t { f32, bf16, f16, e4m3, e5m2, s32, s8 };
// The C/D type of an API type (validation admits only these seven as C and D).
constexpr CdType cd_type(ElemType t) {
  return t == ElemType::f32 ? CdType::f32 : t == ElemType::bf16 ? CdType::bf16 : t == ElemType::f16 ? CdType::f16
       : t == ElemType::e4m3 ? CdType::e4m3 : t == ElemType::e5m2 ? CdType::e5m2
       : t == ElemType::s32 ? CdType::s32 : CdType::s8;
}

struct Params {
  const uint8_t* a;        // packed A values: m_pad rows x a_row_bytes, row-major
  const uint32_t* meta;    // fragment-ready metadata (group kMetaGroup), rows padded to m_pad
  const uint8_t* b;        // B: column n at b + n * ldb_bytes (K contiguous)
  const void* c;
  void* d;
  const float* bias;       // M values or null
  const float* scale_rows; // per row of D: M values per A entry (batch_scale_rows apart), or null
  const float* scale_cols; // per column of D: N values per batch entry, or null
  int64_t batch_scale_rows;  // M with A per batch entry, else 0
  int m, n, k;             // dense sizes
  int64_t a_row_bytes, ldb_bytes;
  int64_t ldc, ldd;        // elements
  bool cd_col_major;
  float alpha, beta;
  detail::ActivationCode activation;
  int meta_lanes;          // P = 8 · lanes per quad
  int64_t meta_groups;     // groups per 16-row block
  // batch strides (0: shared)
  int64_t batch_a_bytes, batch_meta_words, batch_b_bytes, batch_c, batch_d;
  CdType d_type;
  CdType c_type;           // C and D may differ, e.g. C s32 and D s8
  int m_pad, batch;        // rows of A as stored (a multiple of kRowPad) and the batch count
  int batch0;              // first batch entry of this launch (grids hold at most 65535 entries)
  // Split K (sm90 kernel): splits parts of K (1: none) in each cluster, part k running stages
  // k·stages_per_split .. (sm90/split_k.cuh).
  int splits, stages_per_split;
  bool plain;              // alpha = 1, beta = 0, no bias, activation none or ReLU (plain_value)
  int group_m;             // sm90 rasterization: M tiles per group (0: the kernel's default)
  int cluster_m;           // sm90: CTAs per cluster along M (1 or 2), sharing B's tile by multicast (a
                           // cluster holds cluster_m x splits CTAs)
  bool persistent;         // sm90: at most one CTA per SM, each taking tile after tile (not with split K)
  int promote_stages;      // sm90, promoted fp8 sums: the stages (K = 128 each) the tensor cores sum
                           // before each f32 add (1 or 2; PlanOptions::promotion_k)
  int decode_stages;       // sm90 decode kernel: its pipeline's depth (the launch sizes shared memory by it)
  int decode_issuers;      // ... and its producer warps per operand (1 or 2; the launch sizes the CTA by it)
  bool dependent_launch;   // sm90 (host side): launched with programmatic stream serialization, its
                           // set-up overlapping the kernel before it (PlanOptions::dependent_launch)
};

// The 32-bit shared-memory address of a generic pointer, as PTX shared-space operands take it.
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// An accumulator's value from its raw 32-bit word, in the epilogue's arithmetic Real: f32, or
// s32 (wrapping sums held as uint32_t; exact in double, rounded to nearest in float).
template <class Acc, class Real>
__device__ __forceinline__ Real acc_value(uint32_t w) {
  if constexpr (std::is_same_v<Acc, float>) return static_cast<Real>(__uint_as_float(w));
  else return static_cast<Real>(static_cast<int32_t>(w));
}

// An fp8 value as a float (exact), from its byte.
__device__ __forceinline__ float fp8_value(uint8_t x, __nv_fp8_interpretation_t kind) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(x, kind)));
}

// C's N elements idx .. idx+N-1 (contiguous: C has D's layout) in the epilogue's arithmetic, the
// type switch once for the run rather than once per element.
template <int N, class Real>
__device__ __forceinline__ void load_c_run(CdType c_type, const void* c, int64_t idx, Real (&out)[N]) {
  switch (c_type) {
#define SPMMA_C_RUN(T, VALUE)                                       \
  {                                                                 \
    const T* src = static_cast<const T*>(c) + idx;                  \
    _Pragma("unroll") for (int j = 0; j < N; ++j) out[j] = (VALUE); \
    return;                                                         \
  }
    case CdType::f32: SPMMA_C_RUN(float, static_cast<Real>(src[j]))
    case CdType::bf16: SPMMA_C_RUN(__nv_bfloat16, static_cast<Real>(__bfloat162float(src[j])))
    case CdType::f16: SPMMA_C_RUN(__half, static_cast<Real>(__half2float(src[j])))
    case CdType::e4m3: SPMMA_C_RUN(uint8_t, static_cast<Real>(fp8_value(src[j], __NV_E4M3)))
    case CdType::e5m2: SPMMA_C_RUN(uint8_t, static_cast<Real>(fp8_value(src[j], __NV_E5M2)))
    case CdType::s32: SPMMA_C_RUN(int32_t, static_cast<Real>(src[j]))
    default: SPMMA_C_RUN(int8_t, static_cast<Real>(src[j]))  // s8
#undef SPMMA_C_RUN
  }
}

// C's element idx.
template <class Real>
__device__ __forceinline__ Real load_c(CdType c_type, const void* c, int64_t idx) {
  Real v[1];
  load_c_run<1, Real>(c_type, c, idx, v);
  return v[0];
}

// An f32 value as fp8 (round to nearest even, saturating to the largest finite value; NaN stays NaN).
__device__ __forceinline__ uint8_t to_fp8(float v, __nv_fp8_interpretation_t kind) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, kind));
}

// D[idx] = v rounded once into D's type. Real is double only for an s32 C or D: a float D is then
// s8 (double -> int) or not float at all; for every float D, v is a float.
template <class Real>
__device__ __forceinline__ void store_d(CdType d_type, void* d, int64_t idx, Real v) {
  switch (d_type) {
    case CdType::f32: static_cast<float*>(d)[idx] = static_cast<float>(v); break;
    case CdType::bf16: static_cast<__nv_bfloat16*>(d)[idx] = __float2bfloat16_rn(static_cast<float>(v)); break;
    case CdType::f16: static_cast<__half*>(d)[idx] = __float2half_rn(static_cast<float>(v)); break;
    case CdType::e4m3: static_cast<uint8_t*>(d)[idx] = to_fp8(static_cast<float>(v), __NV_E4M3); break;
    case CdType::e5m2: static_cast<uint8_t*>(d)[idx] = to_fp8(static_cast<float>(v), __NV_E5M2); break;
    case CdType::s32: static_cast<int32_t*>(d)[idx] = detail::to_integer_output(v, INT32_MIN, INT32_MAX); break;
    default: static_cast<int8_t*>(d)[idx] = static_cast<int8_t>(detail::to_integer_output(v, -128, 127)); break;  // s8
  }
}

// The scale of element (row, col) of batch entry `batch`: alpha · s_row · s_col, left to right in
// Real (a missing vector multiplies by 1, exactly), as the CPU backend's epilogue.
template <class Real>
__device__ __forceinline__ Real scale_of(const Params& p, int batch, int row, int col) {
  Real s = p.alpha;
  if (p.scale_rows) s *= p.scale_rows[batch * p.batch_scale_rows + row];
  if (p.scale_cols) s *= p.scale_cols[static_cast<int64_t>(batch) * p.n + col];
  return s;
}

// Whether C or D is s32 (the epilogue then runs in double: detail::epilogue_in_double).
__device__ __forceinline__ bool epilogue_in_double(const Params& p) {
  return detail::epilogue_in_double(p.c_type == CdType::s32, p.d_type == CdType::s32);
}

// The index of element (row, col) of batch entry `batch` in C (ld = p.ldc, batch_stride =
// p.batch_c) or D (p.ldd, p.batch_d), in their one layout (p.cd_col_major).
__device__ __forceinline__ int64_t cd_index(const Params& p, int64_t ld, int64_t batch_stride, int batch, int row,
                                            int col) {
  return batch * batch_stride + (p.cd_col_major ? static_cast<int64_t>(col) * ld + row
                                                : static_cast<int64_t>(row) * ld + col);
}
__device__ __forceinline__ int64_t d_index(const Params& p, int batch, int row, int col) {
  return cd_index(p, p.ldd, p.batch_d, batch, row, col);
}

// One output element (row, col) of batch entry `batch` from its accumulator value.
template <class Real>
__device__ __forceinline__ void epilogue_store_in(const Params& p, int batch, int row, int col, Real acc) {
  const int64_t cidx = cd_index(p, p.ldc, p.batch_c, batch, row, col);
  const int64_t didx = d_index(p, batch, row, col);
  const Real c = p.beta != 0.f ? load_c<Real>(p.c_type, p.c, cidx) : Real(0);
  store_d<Real>(p.d_type, p.d, didx,
                detail::epilogue_value<Real>(acc, scale_of<Real>(p, batch, row, col), p.beta, c, p.bias != nullptr,
                                             p.bias ? p.bias[row] : 0.f, p.activation));
}
// The same from the accumulator's raw word (Acc: float or uint32_t for s32 sums), in f32 or, for
// an s32 C or D, double.
template <class Acc>
__device__ __forceinline__ void epilogue_store(const Params& p, int batch, int row, int col, uint32_t raw) {
  if (epilogue_in_double(p)) epilogue_store_in<double>(p, batch, row, col, acc_value<Acc, double>(raw));
  else epilogue_store_in<float>(p, batch, row, col, acc_value<Acc, float>(raw));
}

// Bytes of a C/D element.
__device__ __forceinline__ int cd_bytes(CdType t) {
  return t == CdType::f32 || t == CdType::s32 ? 4 : t == CdType::bf16 || t == CdType::f16 ? 2 : 1;
}

// Whether runs of n elements along D's contiguous dimension (a row's columns for row-major D, a
// column's rows for column-major D) starting at a multiple of n can be stored whole: D, its
// leading dimension and its batch stride aligned for one store of the run's bytes (16 at most:
// longer runs are several stores).
__device__ __forceinline__ bool vector_runs_ok(const Params& p, int n) {
  const int eb = cd_bytes(p.d_type), align = min(16, n * eb);
  return reinterpret_cast<uintptr_t>(p.d) % align == 0 && (p.ldd * eb) % align == 0 && (p.batch_d * eb) % align == 0;
}
// The same for the direct row-major path of the plain epilogue (no C).
__device__ __forceinline__ bool vector_rows_ok(const Params& p, int n) {
  return !p.cd_col_major && p.beta == 0.f && vector_runs_ok(p, n);
}

// The plain epilogue (p.plain: alpha = 1, beta = 0, no bias, no activation or ReLU) in the
// accumulator's own arithmetic, no Real at all: the same bits as epilogue_value, because there
// v = fma(1, acc, 0) = acc + 0 exactly (+ 0 turns -0 into +0 in both; an s32 sum is its own
// value) and D is that value rounded once. Measured on the H100: the element-by-element path
// (then in double) cost ~40% of an int8 GEMM's time at 8192^3 (1193 -> 1949 TFLOP/s without it,
// docs/benchmarks.md).
__device__ __forceinline__ float plain_value(float acc, bool relu) {
  const float v = acc + 0.0f;
  return relu ? (v > 0.0f ? v : 0.0f) : v;  // NaN -> 0 as activate()
}
__device__ __forceinline__ int32_t plain_value(int32_t acc, bool relu) { return relu ? max(acc, 0) : acc; }
// The same saturated into an integer D's range (s8 or s32).
__device__ __forceinline__ int32_t plain_value(const Params& p, int32_t acc, bool relu) {
  const int32_t v = plain_value(acc, relu);
  return p.d_type == CdType::s8 ? min(max(v, -128), 127) : v;
}

// Two f32 values rounded once into a bf16 / f16 pair (one cvt of the pair).
__device__ __forceinline__ __nv_bfloat162 to_bf16x2(float a, float b) { return __floats2bfloat162_rn(a, b); }
__device__ __forceinline__ __half2 to_f16x2(float a, float b) { return __floats2half2_rn(a, b); }

// Bytes words[0 ..] to dst in stores of at most 16 bytes (dst aligned for them).
template <int Bytes>
__device__ __forceinline__ void store_bytes(void* dst, const uint32_t* words) {
  if constexpr (Bytes == 2) {
    *static_cast<uint16_t*>(dst) = static_cast<uint16_t>(words[0]);
  } else if constexpr (Bytes == 4) {
    *static_cast<uint32_t*>(dst) = words[0];
  } else if constexpr (Bytes == 8) {
    *static_cast<uint2*>(dst) = make_uint2(words[0], words[1]);
  } else {
#pragma unroll
    for (int i = 0; i < Bytes / 16; ++i)
      static_cast<uint4*>(dst)[i] = make_uint4(words[4 * i], words[4 * i + 1], words[4 * i + 2], words[4 * i + 3]);
  }
}

// N f32 values (N even) into a float D (f32, bf16, f16, e4m3, e5m2) at idx (vector_rows_ok(p, N) holds).
template <int N>
__device__ __forceinline__ void store_n(const Params& p, int64_t idx, const float (&y)[N]) {
  if (p.d_type == CdType::f32) {
    uint32_t w[N];
#pragma unroll
    for (int j = 0; j < N; ++j) w[j] = __float_as_uint(y[j]);
    store_bytes<4 * N>(static_cast<float*>(p.d) + idx, w);
    return;
  }
  if (p.d_type == CdType::e4m3 || p.d_type == CdType::e5m2) {
    const __nv_fp8_interpretation_t kind = p.d_type == CdType::e4m3 ? __NV_E4M3 : __NV_E5M2;
    uint32_t w[(N + 3) / 4] = {};
#pragma unroll
    for (int j = 0; j < N; j += 2) {
      const uint32_t pair = __nv_cvt_float2_to_fp8x2(make_float2(y[j], y[j + 1]), __NV_SATFINITE, kind);
      w[j / 4] |= pair << (8 * (j % 4));
    }
    store_bytes<N>(static_cast<uint8_t*>(p.d) + idx, w);
    return;
  }
  uint32_t w[N / 2];
#pragma unroll
  for (int j = 0; j < N / 2; ++j) {
    if (p.d_type == CdType::bf16) {
      const __nv_bfloat162 h = to_bf16x2(y[2 * j], y[2 * j + 1]);
      w[j] = reinterpret_cast<const uint32_t&>(h);
    } else {
      const __half2 h = to_f16x2(y[2 * j], y[2 * j + 1]);
      w[j] = reinterpret_cast<const uint32_t&>(h);
    }
  }
  store_bytes<2 * N>(static_cast<uint16_t*>(p.d) + idx, w);
}
// Integer D: y already rounded and saturated into D's range.
template <int N>
__device__ __forceinline__ void store_n(const Params& p, int64_t idx, const int32_t (&y)[N]) {
  if (p.d_type == CdType::s32) {
    store_bytes<4 * N>(static_cast<int32_t*>(p.d) + idx, reinterpret_cast<const uint32_t*>(y));
    return;
  }
  uint32_t w[(N + 3) / 4] = {};
#pragma unroll
  for (int j = 0; j < N; ++j) w[j / 4] |= static_cast<uint32_t>(y[j] & 0xFF) << (8 * (j % 4));
  store_bytes<N>(static_cast<int8_t*>(p.d) + idx, w);
}

// The plain epilogue of elements (row, col .. col+N-1) at D's index idx from their raw
// accumulator words (p.plain, vector_rows_ok(p, N), all N inside N).
template <int N, class Acc>
__device__ __forceinline__ void store_plain(const Params& p, int64_t idx, const uint32_t* raw) {
  const bool relu = p.activation == detail::kActRelu;
  if constexpr (std::is_same_v<Acc, float>) {
    float y[N];
#pragma unroll
    for (int j = 0; j < N; ++j) y[j] = plain_value(__uint_as_float(raw[j]), relu);
    store_n<N>(p, idx, y);
  } else {
    int32_t y[N];
#pragma unroll
    for (int j = 0; j < N; ++j) y[j] = plain_value(p, static_cast<int32_t>(raw[j]), relu);
    store_n<N>(p, idx, y);
  }
}

// The plain epilogue of one element (row, col) of batch entry `batch` (p.plain), from its raw
// accumulator word: the same bits as epilogue_store there (plain_value).
template <class Acc>
__device__ __forceinline__ void store_plain_one(const Params& p, int batch, int row, int col, uint32_t raw) {
  const int64_t idx = d_index(p, batch, row, col);
  const bool relu = p.activation == detail::kActRelu;
  if constexpr (std::is_same_v<Acc, float>) {
    store_d<float>(p.d_type, p.d, idx, plain_value(__uint_as_float(raw), relu));
  } else {
    const int32_t v = plain_value(p, static_cast<int32_t>(raw), relu);
    if (p.d_type == CdType::s32) static_cast<int32_t*>(p.d)[idx] = v;
    else static_cast<int8_t*>(p.d)[idx] = static_cast<int8_t>(v);
  }
}

// The general epilogue (any alpha, beta·C, bias, scale vectors, activation) of a run of N
// elements that follow each other along D's contiguous dimension from (row, col): columns col ..
// col+N-1 of row for row-major D, rows row .. row+N-1 of col for column-major D (ColMajor). Each
// value as detail::epilogue_value computes it (the same operations in the same order as the CPU
// backend: scale = alpha · s_row · s_col left to right, fma(scale, acc, bias), fma(beta, C, ·),
// the activation), every choice made once for the run, in three pieces:
//   RunRows      what the run's rows give: alpha · s_row and the bias, one of each for a
//                row-major run (its one row), N for a column-major one; the same for all the
//                runs a lane takes down a tile's columns, so the sm90 kernel reads them once
//                per tile (sm90/epilogue.cuh);
//   run_values   the values from the raw sums, with the run's s_col (N or one) and C;
//   store_run    the values rounded once into D's type, one store of the run (vector_runs_ok(p,
//                N), all N inside D).
// With every switch and address once per element and operand, in a non-inlined function per
// block, the sm90 kernel ran at 0.38-0.61x its plain speed with a bias on the H100; with these
// pieces, read as above, 0.92-0.95x (docs/benchmarks.md, "The general epilogue in one loop").
template <int N, class Real, bool ColMajor>
struct RunRows {
  static constexpr int kRows = ColMajor ? N : 1;
  Real scale[kRows], bias[kRows];  // alpha · s_row (alpha without s_row); the bias (0 without one)

  __device__ __forceinline__ RunRows(const Params& p, int batch, int row) {
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
      const bool in = row + j < p.m;  // the sm90 kernel's runs past D's rows compute and store nothing
      scale[j] = p.alpha;
      if (p.scale_rows && in) scale[j] *= p.scale_rows[batch * p.batch_scale_rows + row + j];
      bias[j] = p.bias && in ? static_cast<Real>(p.bias[row + j]) : Real(0);
    }
  }
};

template <int N, class Real, class Acc, bool ColMajor>
__device__ __forceinline__ void run_values(const Params& p, int batch, int row, int col, const uint32_t* raw,
                                           const RunRows<N, Real, ColMajor>& rows, Real (&v)[N]) {
  const float* sc = p.scale_cols ? p.scale_cols + static_cast<int64_t>(batch) * p.n + col : nullptr;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int r = ColMajor ? j : 0;
    // Without s_col the scale is alpha · s_row, as scale_of's (a product by 1 would be exact too).
    const Real s = sc ? rows.scale[r] * static_cast<Real>(sc[ColMajor ? 0 : j]) : rows.scale[r];
    v[j] = detail::fused(s, acc_value<Acc, Real>(raw[j]), rows.bias[r]);
  }
  if (p.beta != 0.f) {
    Real c[N];
    load_c_run<N, Real>(p.c_type, p.c,
                        batch * p.batch_c + (ColMajor ? static_cast<int64_t>(col) * p.ldc + row
                                                      : static_cast<int64_t>(row) * p.ldc + col),
                        c);
    const Real beta = p.beta;
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = detail::fused(beta, c[j], v[j]);
  }
  if (p.activation == detail::kActRelu) {
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = detail::activate(v[j], detail::kActRelu);
  } else if (p.activation == detail::kActGelu) {
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = detail::gelu(v[j]);
  }
}

template <int N, class Real, bool ColMajor>
__device__ __forceinline__ void store_run(const Params& p, int batch, int row, int col, const Real (&v)[N]) {
  const int64_t idx = batch * p.batch_d + (ColMajor ? static_cast<int64_t>(col) * p.ldd + row
                                                    : static_cast<int64_t>(row) * p.ldd + col);
  if (p.d_type == CdType::s32 || p.d_type == CdType::s8) {
    const int32_t lo = p.d_type == CdType::s8 ? -128 : INT32_MIN, hi = p.d_type == CdType::s8 ? 127 : INT32_MAX;
    int32_t y[N];
#pragma unroll
    for (int j = 0; j < N; ++j) y[j] = detail::to_integer_output(v[j], lo, hi);
    store_n<N>(p, idx, y);
  } else {
    float y[N];  // Real is double here only for an s32 C: rounded to f32 first, as store_d does
#pragma unroll
    for (int j = 0; j < N; ++j) y[j] = static_cast<float>(v[j]);
    store_n<N>(p, idx, y);
  }
}

// All three for one run, its rows read on the spot.
template <int N, class Real, class Acc, bool ColMajor>
__device__ __forceinline__ void store_general(const Params& p, int batch, int row, int col, const uint32_t* raw) {
  const RunRows<N, Real, ColMajor> rows(p, batch, row);
  Real v[N];
  run_values<N, Real, Acc, ColMajor>(p, batch, row, col, raw, rows, v);
  store_run<N, Real, ColMajor>(p, batch, row, col, v);
}

}  // namespace spmma::gemm
