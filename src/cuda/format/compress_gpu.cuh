// GPU prune + compress: a dense A (M x K, row-major, on the device) to packed values and
// fragment-ready metadata (docs/layouts.md), with the host's exact rules (sparse.hpp):
// magnitude order (ties keep the lower column, NaN the largest), PyTorch's padding nibbles,
// ordered metadata. One thread builds one metadata word — the 8 chunks one lane's register
// describes — so no two threads write the same word or value.
#pragma once
#include <cstdint>

#include "spmma/detail/meta_map.hpp"

namespace spmma::gpu_format {

struct CompressParams {
  const uint8_t* a = nullptr;      // dense A rows, lda_bytes apart
  int64_t lda_bytes = 0;
  int64_t m = 0, k = 0;            // dense sizes
  int64_t m_pad = 0;               // rows of the output, a multiple of 16
  int elem_bits = 16;              // 4, 8, 16 or 32
  int float_sign_bit = 15;         // sign bit for float types; -1 for integers
  bool is_signed = true;           // integers: two's complement
  int chunk = 4, kept = 2, group = 1;  // the pattern (4:8 pair-wise: chunk 8, kept 4, group 2)
  bool nibble_half = true;         // metadata style of the instruction (meta_map.hpp)
  int lanes = 2;                   // L: metadata lanes per quad
  int k_inst = 32;                 // dense K per instruction
  int meta_group = 2;              // G of the fragment-ready layout
  int64_t groups = 0;              // ceil(k_steps / G)
  bool prune = true;               // false: check only, report the first violating chunk
  uint8_t* values = nullptr;       // m_pad rows of value_row_bytes
  int64_t value_row_bytes = 0;
  uint32_t* meta = nullptr;
  unsigned long long* violation = nullptr;  // min over row * chunks + chunk of a violating chunk
};

void launch_compress(const CompressParams& p, void* stream);

}  // namespace spmma::gpu_format
