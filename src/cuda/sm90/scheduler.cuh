// SPDX-License-Identifier: BSD-3-Clause
// The sm90 kernel's tile scheduler: which output tile, batch entry and K range a CTA computes.
// One tile per CTA (a non-persistent grid). blockIdx.x walks units of p.cluster_m M tiles (the
// CTAs of a cluster: the same N tile, consecutive M tiles) in groups of p.group_m M tiles, M
// fastest, so that a wave of CTAs shares its A rows and B columns in L2; blockIdx.y is the batch
// entry (after p.batch0); blockIdx.z the split of K. With clusters of 2 and an odd number of M
// tiles, the last unit's second CTA lies past A's rows: it loads (zeros) and multicasts its half
// of B like any other, and stores nothing.
#pragma once
#include "common/gemm_params.cuh"
#include "sm90/tiles.hpp"

namespace spmma::sm90 {

struct WorkTile {
  int m0, n0;       // the tile's first row and column of D
  int batch;        // batch entry
  int split;        // split K: which part (0 without split K)
  int stage_begin;  // first pipeline stage (metadata group: 2 K steps) of this CTA's K range
  int stages;       // stages of this CTA's K range
};

template <int BlockN>
__device__ __forceinline__ WorkTile work_tile(const gemm::Params& p) {
  WorkTile w;
  const int cl = p.cluster_m, rank = static_cast<int>(blockIdx.x) % cl;
  const int m_units = (p.m_pad / kBlockM + cl - 1) / cl, n_tiles = (p.n + BlockN - 1) / BlockN;
  const int group_units = (p.group_m + cl - 1) / cl, per_group = group_units * n_tiles;
  const int unit = static_cast<int>(blockIdx.x) / cl, group = unit / per_group, in_group = unit % per_group;
  const int first = group * group_units, units = min(group_units, m_units - first);
  w.m0 = ((first + in_group % units) * cl + rank) * kBlockM;
  w.n0 = (in_group / units) * BlockN;
  w.batch = p.batch0 + static_cast<int>(blockIdx.y);
  // K steps padded to a whole metadata group run on zero A and B (TMA fills zeros past K) with
  // the padding word's valid nibbles.
  w.split = blockIdx.z;
  w.stage_begin = w.split * p.stages_per_split;
  w.stages = min(static_cast<int>(p.meta_groups), w.stage_begin + p.stages_per_split) - w.stage_begin;
  return w;
}

}  // namespace spmma::sm90
