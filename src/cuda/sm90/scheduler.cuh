// SPDX-License-Identifier: BSD-3-Clause
// The sm90 kernel's tile scheduler: a persistent grid, each CTA (each cluster) walking work units
// blockIdx.x / cluster, + gridDim.x / cluster, ... in order, where a unit is p.cluster_m
// consecutive M tiles of one N tile of one batch entry, and a cluster is p.cluster_m x p.splits
// CTAs: rank = m + cluster_m * k, M tile m of the unit, part k of K (split K runs inside the
// cluster, tiles.hpp; the plan gives it one cluster per unit, not a persistent grid). Units run M
// fastest in groups of p.group_m M tiles, so that the units in flight at once share their A rows
// and B columns in L2; then N tiles and batch entries (after p.batch0).
// With clusters of 2 along M and an odd number of M tiles, the last unit's second CTA lies past
// A's rows: it loads (zeros) and multicasts its half of B like any other, and stores nothing.
// The producer and the math warpgroups each run their own copy of the walk: the same units in
// the same order, so they meet at every stage's barriers without talking.
#pragma once
#include "common/gemm_params.cuh"
#include "sm90/tiles.hpp"

namespace spmma::sm90 {

// The cluster rank of the CTA of M tile m (of its unit's cluster_m) and part k of K.
SPMMA_HD constexpr int cluster_rank_of(int cluster_m, int m, int k) { return m + cluster_m * k; }

struct WorkTile {
  int m0, n0;       // the tile's first row and column of D
  int batch;        // batch entry
  int m_rank;       // which of its unit's cluster_m M tiles (0 without clusters along M)
  int split;        // split K: which part (0 without split K); part 0 reduces and stores
  int stage_begin;  // first pipeline stage (metadata group: 2 K steps) of this CTA's K range
  int stages;       // stages of this CTA's K range
};

// Work units of one launch (sm90/launch_tile.cuh sizes the grid by it: cluster_m x splits CTAs each).
SPMMA_HD inline int64_t work_units(int m_pad, int n, int block_n, int cluster_m, int batches) {
  return static_cast<int64_t>((m_pad / kBlockM + cluster_m - 1) / cluster_m) * ((n + block_n - 1) / block_n) * batches;
}

template <int BlockN>
class TileScheduler {
 public:
  __device__ __forceinline__ explicit TileScheduler(const gemm::Params& p) : p_(p) {
    cl_ = p.cluster_m;
    const int cluster = cl_ * p.splits, rank = static_cast<int>(blockIdx.x) % cluster;
    rank_ = rank % cl_;
    split_ = rank / cl_;
    m_units_ = (p.m_pad / kBlockM + cl_ - 1) / cl_;
    n_tiles_ = (p.n + BlockN - 1) / BlockN;
    batches_ = min(gemm::kMaxGridBatch, p.batch - p.batch0);
    total_ = work_units(p.m_pad, p.n, BlockN, cl_, batches_);
    next_ = static_cast<int>(blockIdx.x) / cluster;
    stride_ = static_cast<int>(gridDim.x) / cluster;
  }

  // The next unit's tile for this CTA; false when the walk is done.
  __device__ __forceinline__ bool next(WorkTile& w) {
    if (next_ >= total_) return false;
    const int64_t per_batch = static_cast<int64_t>(m_units_) * n_tiles_;
    const int unit = static_cast<int>(next_ % per_batch);
    const int batch = static_cast<int>(next_ / per_batch);
    next_ += stride_;
    const int group_units = (p_.group_m + cl_ - 1) / cl_, per_group = group_units * n_tiles_;
    const int group = unit / per_group, in_group = unit % per_group;
    const int first = group * group_units, units = min(group_units, m_units_ - first);
    w.m0 = ((first + in_group % units) * cl_ + rank_) * kBlockM;
    w.n0 = (in_group / units) * BlockN;
    w.batch = p_.batch0 + batch;
    w.m_rank = rank_;
    // K steps padded to a whole metadata group run on zero A and B (TMA fills zeros past K) with
    // the padding word's valid nibbles.
    w.split = split_;
    w.stage_begin = w.split * p_.stages_per_split;
    w.stages = min(static_cast<int>(p_.meta_groups), w.stage_begin + p_.stages_per_split) - w.stage_begin;
    return true;
  }

 private:
  const gemm::Params& p_;
  int cl_, rank_, split_, m_units_, n_tiles_, batches_, stride_;
  int64_t total_, next_;
};

}  // namespace spmma::sm90
