// Host side of the sm90 (wgmma.mma_async.sp) sparse GEMM: which type pairs it covers, the tile
// width for an N, what TMA needs of the operands, and the launch (tensor maps encoded per call).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

#include "common/gemm_params.cuh"
#include "spmma/types.hpp"

namespace spmma::sm90 {

// The TMA tensor maps of one launch: A's values, B, A's fragment-ready metadata.
struct Maps {
  CUtensorMap a, b, meta;
};

using LaunchFn = void (*)(int block_n, const Maps& maps, const gemm::Params& p, cudaStream_t s);

struct Kernel {
  ElemType a, b;
  const char* variant;  // the registry id of the wgmma.sp instruction
  LaunchFn launch;
  LaunchFn launch_fast = nullptr;  // fp8: MatmulDesc::fast_accumulation (no promotion)
};

// The sm90 kernel for A/B types, or null when there is none (4-bit types: no wgmma on sm_90).
const Kernel* find(ElemType a, ElemType b);

// The registry id of k's instruction at N = block_n (the table names the N = 128 form).
std::string variant_at(const Kernel& k, int block_n);

// "CTA tile 128x256, 2 stages, ...": the kernel's shape at a tile width, for Plan::describe.
std::string describe_tile(int block_n);

// CTAs of one launch at tile width block_n: M tiles x N tiles (a 1-D grid), at most 2^31 - 1.
inline int64_t ctas(int64_t m_pad, int64_t n, int block_n) { return m_pad / 128 * ((n + block_n - 1) / block_n); }

// Why the copy engine (TMA) cannot read a B stored in place with these byte strides (empty when
// it can): the address of every column must be a multiple of 16 bytes, strides below 2^40.
std::string b_in_place_unsupported(int64_t ldb_bytes, int64_t batch, int64_t batch_b_bytes, int b_alignment);

// Bytes of split-K partial sums (splits x batch x m_pad x n raw accumulators; 0 without split K).
size_t partial_bytes(int splits, int64_t batch, int64_t m_pad, int64_t n);

// The tensor maps of A's values and metadata (they depend on A's storage only, so a caller may
// keep them for every run on that storage) and of B (per B pointer and tile width). Throw
// spmma::Error when the driver rejects a map, naming the operand and its sizes.
struct AMaps {
  CUtensorMap a, meta;
};
AMaps encode_a(const gemm::Params& p);
CUtensorMap encode_b(const gemm::Params& p, int block_n, int b_bits);

// Launches k on stream s with those maps, for every batch entry of p (one launch per 65535
// entries); with split K, p.partial holds partial_bytes() and a reduce kernel follows.
void launch(const Kernel& k, bool fast, int block_n, const AMaps& a, const CUtensorMap& b, const gemm::Params& p,
            cudaStream_t s);

}  // namespace spmma::sm90
