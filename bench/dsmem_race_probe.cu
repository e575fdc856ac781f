// SPDX-License-Identifier: BSD-3-Clause
// dsmem_race_probe — what compute-sanitizer's racecheck says of a hand-over through distributed
// shared memory, by the way it is synchronised.
//
// Question. Split K in both sm90 kernels hands a part's sums to part 0 through distributed shared
// memory (sm90/split_k.cuh, sm90/decode.cuh): the part's threads write their sums into their own
// shared memory, a barrier of their CTA orders those writes before one arrival per warp (or per
// CTA) with release semantics at cluster scope on part 0's mbarrier, and part 0's threads wait on
// that mbarrier with acquire semantics at cluster scope before they read the sums remotely. By the
// PTX memory model the reads see the writes (the release is cumulative over what its thread has
// synchronised with); racecheck reports every such pair as a hazard (2026-11-29, H200:
// docs/testing.md). Is that the hand-over, or the tool? One cluster of 2 CTAs; CTA 1 writes 256
// words of its shared memory, CTA 0 reads them remotely and stores them to global memory, the
// cluster's last barrier keeps CTA 1 until then. The hand-over, by mode:
//   mbarrier   the split K kernels' way: __syncthreads in CTA 1, then one thread's
//              mbarrier.arrive.release.cluster on CTA 0's barrier; every thread of CTA 0 waits
//              with mbarrier.try_wait.parity.acquire.cluster (the primitives of ptx/mbarrier.cuh);
//   cluster    a cluster barrier with its default semantics, barrier.cluster.arrive (release) and
//              barrier.cluster.wait (acquire), all threads of both CTAs (cooperative groups'
//              cluster.sync(): the CUDA programming guide's distributed shared memory pattern);
//   exit       the mbarrier hand-over as the decode kernel ends it: CTA 1's threads return but
//              one, which waits on CTA 1's own second mbarrier until CTA 0's threads have read
//              (__syncthreads, then one relaxed cluster-scope arrival), instead of the cluster's
//              last barrier;
//   none       no synchronisation between the write and the read: a real race, the control.
// Each mode checks what CTA 0 read. Without the tool, each mode also runs 2000 launches of 132
// clusters whose CTA 1 sleeps a varying while before it writes (what was written depends on the
// launch), and counts the words read wrong: the none mode's count shows the check can fail.
//
// Build: the CMake target spmma_dsmem_race_probe. Run: compute-sanitizer --tool racecheck
// spmma_dsmem_race_probe <mode> (one launch of one cluster); spmma_dsmem_race_probe (every mode,
// one launch, then the 2000).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cuda_check.hpp"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"

namespace {

enum Mode : int { kMbarrier = 0, kCluster = 1, kExit = 2, kNone = 3 };
constexpr int kThreads = 256;
constexpr const char* kNames[] = {"mbarrier", "cluster", "exit", "none"};

__device__ __forceinline__ void cluster_sync_release_acquire() {
  ::cuda::ptx::barrier_cluster_arrive();  // .release by default
  ::cuda::ptx::barrier_cluster_wait();    // .acquire by default
}

__host__ __device__ uint32_t word(uint32_t launch, uint32_t cluster, uint32_t i) {
  return (launch * 0x9E3779B9u) ^ (cluster * 0x85EBCA6Bu) ^ (3u * i + 1u);
}

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads) probe(int mode, uint32_t launch, uint32_t* out) {
  __shared__ uint32_t sums[kThreads];
  __shared__ alignas(8) uint64_t full, read;
  const uint32_t rank = spmma::ptx::cluster_rank(), cluster = blockIdx.x / 2;
  const bool handover = mode == kMbarrier || mode == kExit;
  if (threadIdx.x == 0) {
    spmma::ptx::mbar_init(&full, 1);
    spmma::ptx::mbar_init(&read, 1);
    spmma::ptx::mbar_fence_init();
  }
  spmma::ptx::cluster_sync();  // both CTAs' barriers initialised before any remote arrival
  if (rank == 1) {
    if (launch) __nanosleep((launch * 7919u + cluster * 104729u) % 2048u);  // a varying delay
    sums[threadIdx.x] = word(launch, cluster, threadIdx.x);
    if (handover) {
      __syncthreads();
      if (threadIdx.x == 0) spmma::ptx::mbar_arrive_release_cluster(spmma::ptx::in_cta(&full, 0));
    }
    if (mode == kExit) {
      if (threadIdx.x == 0) spmma::ptx::mbar_wait_cluster(&read, 0);  // the CTA stays while CTA 0 reads
      return;
    }
  }
  if (mode == kCluster) cluster_sync_release_acquire();
  if (rank == 0) {
    if (handover) spmma::ptx::mbar_wait_cluster(&full, 0);
    out[cluster * kThreads + threadIdx.x] = spmma::ptx::in_cta(sums, 1)[threadIdx.x];
    if (mode == kExit) {
      __syncthreads();  // every thread's load has returned (its value is in its store)
      if (threadIdx.x == 0) spmma::ptx::mbar_arrive_cluster_if(true, spmma::ptx::in_cta(&read, 1));
      return;
    }
  }
  spmma::ptx::cluster_sync();  // CTA 1 stays until CTA 0 has read its shared memory
}

// Words of `clusters` clusters read wrong by `launches` launches of mode m (launch numbers 0 ..
// launches - 1; launch 0 sleeps nothing).
long long wrong_words(int m, int clusters, int launches, uint32_t* d) {
  std::vector<uint32_t> h(static_cast<size_t>(clusters) * kThreads);
  long long wrong = 0;
  for (int l = 0; l < launches; ++l) {
    CK(cudaMemset(d, 0xFF, h.size() * sizeof(uint32_t)));
    probe<<<2 * clusters, kThreads>>>(m, static_cast<uint32_t>(l), d);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h.data(), d, h.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    for (int c = 0; c < clusters; ++c)
      for (int i = 0; i < kThreads; ++i) wrong += h[static_cast<size_t>(c) * kThreads + i] != word(l, c, i);
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  int first = kMbarrier, last = kNone;
  if (argc > 1) {
    first = last = -1;
    for (int m = kMbarrier; m <= kNone; ++m)
      if (std::strcmp(argv[1], kNames[m]) == 0) first = last = m;
    if (first < 0) {
      std::fprintf(stderr, "usage: %s [mbarrier|cluster|exit|none]\n", argv[0]);
      return 2;
    }
  }
  constexpr int kClusters = 132, kLaunches = 2000;
  uint32_t* d = nullptr;
  CK(cudaMalloc(&d, kClusters * kThreads * sizeof(uint32_t)));
  int bad = 0;
  for (int m = first; m <= last; ++m) {
    const long long once = wrong_words(m, 1, 1, d);
    std::printf("%s: %lld of %d words read as written%s\n", kNames[m], kThreads - once, kThreads,
                m == kNone ? " (no synchronisation: any count is possible)" : "");
    if (m != kNone && once) bad = 1;
  }
  if (argc == 1)
    for (int m = kMbarrier; m <= kNone; ++m) {
      const long long w = wrong_words(m, kClusters, kLaunches, d);
      std::printf("%s, %d launches of %d clusters: %lld of %lld words read wrong\n", kNames[m], kLaunches, kClusters, w,
                  static_cast<long long>(kLaunches) * kClusters * kThreads);
      if (m != kNone && w) bad = 1;
    }
  CK(cudaFree(d));
  return bad;
}
