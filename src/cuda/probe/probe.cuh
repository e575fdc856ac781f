// SPDX-License-Identifier: BSD-3-Clause
// Conformance probes: the arguments every generated probe kernel takes.
//
// Each probe executes one registry instruction per trial with register contents read from
// global memory (one uint64_t per register, lane-major: [trial][lane][register]) and writes
// the D registers back the same way. wgmma probes also copy a shared-memory image of A (when
// A comes by descriptor) and of B, laid out by the host, and build the descriptors from the
// byte offsets given here. The kernels themselves are generated from the registry
// (codegen/gen_spmma.cpp -> build/generated/probes_*.cu): no instruction text is written by hand.
#pragma once
#include <cstdint>

namespace spmma::probe {

struct ProbeArgs {
  const uint64_t* a = nullptr;   // [trials][threads][regs of A]
  const uint64_t* b = nullptr;
  const uint64_t* c = nullptr;
  const uint32_t* e = nullptr;   // [trials][threads]
  const uint32_t* sel = nullptr; // [trials] sparsity selector
  const uint32_t* scale_d = nullptr;  // [trials] wgmma: 0 computes D = A·B
  uint64_t* d = nullptr;         // [trials][threads][regs of D]
  int trials = 0;
  // wgmma shared-memory images, one per trial, and their descriptor fields (bytes).
  const uint8_t* smem_a = nullptr;
  const uint8_t* smem_b = nullptr;
  uint32_t smem_a_bytes = 0, smem_b_bytes = 0;
  uint32_t lbo_a = 0, sbo_a = 0, lbo_b = 0, sbo_b = 0;
  uint32_t swizzle_a = 0;        // descriptor swizzle mode of A: 0 none, 1 128B
  const uint32_t* a_offset = nullptr;  // [trials] bytes added to A's descriptor start address

  // B's image starts at the next 1024-byte boundary after A's (128B swizzle atoms need it).
  __host__ __device__ uint32_t smem_a_bytes_padded() const { return (smem_a_bytes + 1023u) / 1024u * 1024u; }
  __host__ __device__ uint32_t smem_total() const { return smem_a_bytes_padded() + smem_b_bytes; }
};

using ProbeLaunch = void (*)(const ProbeArgs&, int blocks);

struct ProbeEntry {
  const char* id;       // registry id
  ProbeLaunch launch;
  int threads;          // 32 or 128
  int smem_bytes;       // dynamic shared memory (wgmma)
};

// The generated table (probes_generated.cu).
extern const ProbeEntry kProbes[];
extern const int kProbeCount;

}  // namespace spmma::probe
