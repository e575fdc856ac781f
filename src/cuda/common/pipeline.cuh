// SPDX-License-Identifier: BSD-3-Clause
// The state of a multi-stage pipeline: which slot a loop iteration uses and the parity of that
// slot's barrier phase, advanced in one place (as CUTLASS's PipelineState). A consumer starts at
// phase 0 (it waits for the first fill); a producer starts at phase 1, so that its wait for a
// free slot passes at once in the first round.
#pragma once
#include <cstdint>

namespace spmma::gemm {

template <int Stages>
struct PipelineState {
  int index = 0;
  uint32_t phase = 0;

  __device__ __forceinline__ void advance() {
    if (++index == Stages) {
      index = 0;
      phase ^= 1;
    }
  }
  __device__ __forceinline__ static PipelineState consumer_start() { return {0, 0}; }
  __device__ __forceinline__ static PipelineState producer_start() { return {0, 1}; }
};

}  // namespace spmma::gemm
