#include <cuda_runtime.h>

#include <string>

#include "format/compress_gpu.cuh"
#include "spmma/error.hpp"

namespace spmma::gpu_format {
namespace {

constexpr uint32_t kPadWord = 0x44444444u;  // the fragment-ready layout's padding word
constexpr int kMaxChunk = 8;

__device__ __forceinline__ uint32_t read_elem(const uint8_t* row, int64_t i, int bits) {
  switch (bits) {
    case 4: return (row[i / 2] >> (4 * (i % 2))) & 0xF;
    case 8: return row[i];
    case 16: return reinterpret_cast<const uint16_t*>(row)[i];
    default: return reinterpret_cast<const uint32_t*>(row)[i];
  }
}

__device__ __forceinline__ void write_elem(uint8_t* row, int64_t i, int bits, uint32_t v) {
  switch (bits) {
    case 4: {
      // Stored elements of one chunk share bytes only with their own chunk: 4 nibbles = 2 bytes.
      const int shift = 4 * static_cast<int>(i % 2);
      row[i / 2] = static_cast<uint8_t>((row[i / 2] & ~(0xF << shift)) | ((v & 0xF) << shift));
      break;
    }
    case 8: row[i] = static_cast<uint8_t>(v); break;
    case 16: reinterpret_cast<uint16_t*>(row)[i] = static_cast<uint16_t>(v); break;
    default: reinterpret_cast<uint32_t*>(row)[i] = v; break;
  }
}

// A key that orders elements by magnitude (NaN above Inf for floats) and is 0 exactly for zeros.
__device__ __forceinline__ uint32_t magnitude(uint32_t v, const CompressParams& p) {
  if (p.float_sign_bit >= 0) {
    uint32_t m = v & ~(1u << p.float_sign_bit);
    if (p.elem_bits == 32) m &= ~0x1FFFu;  // tf32: the tensor cores ignore the low 13 bits
    return m;
  }
  if (!p.is_signed) return v;
  const int s = 32 - p.elem_bits;
  const int32_t x = static_cast<int32_t>(v << s) >> s;
  return static_cast<uint32_t>(x < 0 ? -x : x);
}

// PyTorch's nibble for a set of occupied slots (sparse.cpp, nibble_for_slots).
__device__ __forceinline__ uint32_t nibble_for_slots(unsigned slots) {
  switch (slots) {
    case 0b0000: case 0b1000: case 0b0100: return 0xE;
    case 0b0010: return 0x9;
    case 0b0001: return 0x8;
    default: break;
  }
  const unsigned lo = __ffs(slots) - 1, hi = __ffs(slots & ~(1u << lo)) - 1;
  return lo | (hi << 2);
}

__global__ void compress_kernel(CompressParams p) {
  const int P = 8 * p.lanes;
  const int chunks_per_step = p.k_inst / p.chunk;
  const int64_t k_steps = p.k / p.k_inst;
  const int64_t total = (p.m_pad / 16) * p.groups * p.meta_group * P;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tid >= total) return;
  // tid enumerates (16-row block, k-step, metadata lane); the word lives at the layout's index.
  const int64_t steps = p.groups * p.meta_group;
  const int64_t wb = tid / (steps * P), rem = tid % (steps * P);
  const int64_t ks = rem / P;
  const int lane_p = static_cast<int>(rem % P);
  const size_t widx = static_cast<size_t>(((wb * p.groups + ks / p.meta_group) * P + lane_p) * p.meta_group + ks % p.meta_group);
  if (ks >= k_steps) {
    p.meta[widx] = kPadWord;
    return;
  }
  const int g = lane_p / p.lanes, j = lane_p % p.lanes;
  const int groups_per_chunk = p.chunk / p.group, kept_groups = p.kept / p.group;
  const int64_t chunks_per_row = p.k / p.chunk;
  uint32_t word = 0;
  for (int n = 0; n < 8; ++n) {
    const detail::RowChunk rc = detail::meta_row_chunk(p.nibble_half, g, j, n);
    const int64_t row = wb * 16 + rc.row;
    const int64_t chunk = ks * chunks_per_step + rc.chunk;
    uint32_t x[kMaxChunk] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (row < p.m) {
      const uint8_t* src = p.a + row * p.lda_bytes;
      for (int e = 0; e < p.chunk; ++e) x[e] = read_elem(src, chunk * p.chunk + e, p.elem_bits);
    }
    // Group magnitudes (pairs for 4:8), then the kept groups: largest first, ties to the lower.
    uint32_t key[4];
    unsigned nonzero = 0;
    for (int q = 0; q < groups_per_chunk; ++q) {
      key[q] = 0;
      bool nz = false;
      for (int e = 0; e < p.group; ++e) {
        const uint32_t mg = magnitude(x[q * p.group + e], p);
        key[q] += mg;
        nz |= mg != 0;
      }
      if (nz) nonzero |= 1u << q;
    }
    if (!p.prune && __popc(nonzero) > kept_groups && p.violation)
      atomicMin(p.violation, static_cast<unsigned long long>(row * chunks_per_row + chunk));
    unsigned keep = 0;
    for (int r = 0; r < kept_groups; ++r) {
      int best = -1;
      for (int q = 0; q < groups_per_chunk; ++q)
        if (!(keep & (1u << q)) && (best < 0 || key[q] > key[best])) best = q;
      keep |= 1u << best;
    }
    const unsigned stored = keep & nonzero;  // what survives pruning
    uint32_t nib;
    int pos[2];
    if (groups_per_chunk == 2) {  // 1:2 (tf32): 0x4 keeps element 0, 0xE element 1 (or none)
      nib = stored == 1u ? 0x4u : 0xEu;
      pos[0] = nib == 0x4u ? 0 : 1;
    } else {
      nib = nibble_for_slots(stored);
      pos[0] = nib & 3, pos[1] = (nib >> 2) & 3;
    }
    word |= nib << (4 * n);
    // Stored values: kept groups in increasing position; zero where the nibble names a padding slot.
    if (row < p.m_pad) {
      uint8_t* dst = p.values + row * p.value_row_bytes;
      const int64_t base = chunk * p.kept;
      for (int s = 0; s < kept_groups; ++s)
        for (int e = 0; e < p.group; ++e) {
          const int q = pos[s];
          const uint32_t v = (stored & (1u << q)) ? x[q * p.group + e] : 0u;
          write_elem(dst, base + s * p.group + e, p.elem_bits, v);
        }
    }
  }
  p.meta[widx] = word;
}

}  // namespace

void launch_compress(const CompressParams& p, void* stream) {
  const int64_t total = (p.m_pad / 16) * p.groups * p.meta_group * 8 * p.lanes;
  const int threads = 256;
  const int64_t blocks = (total + threads - 1) / threads;
  compress_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) fail(Status::cuda_error, std::string("GPU compress: ") + cudaGetErrorString(e));
}

}  // namespace spmma::gpu_format
