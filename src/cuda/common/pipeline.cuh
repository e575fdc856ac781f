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

// The same with the number of stages chosen at run time (the decode kernel's depth is its plan's).
struct RuntimePipelineState {
  int index = 0;
  uint32_t phase = 0;
  int stages = 1;

  __device__ __forceinline__ void advance() {
    if (++index == stages) {
      index = 0;
      phase ^= 1;
    }
  }
  // n steps at once (a consumer that takes every n-th stage).
  __device__ __forceinline__ void advance(int n) {
    for (index += n; index >= stages; index -= stages) phase ^= 1;
  }
  __device__ __forceinline__ static RuntimePipelineState consumer_start(int stages) { return {0, 0, stages}; }
  __device__ __forceinline__ static RuntimePipelineState producer_start(int stages) { return {0, 1, stages}; }
};

}  // namespace spmma::gemm
