// SPDX-License-Identifier: BSD-3-Clause
// The sm90 kernel's tile scheduler: which output tile, batch entry and K range a CTA computes.
// One tile per CTA (a non-persistent grid): blockIdx.x walks the tiles in groups of p.group_m M
// tiles, M fastest, so that a wave of CTAs shares its A rows and B columns in L2; blockIdx.y is
// the batch entry (after p.batch0); blockIdx.z the split of K.
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
  const int m_tiles = p.m_pad / kBlockM, n_tiles = (p.n + BlockN - 1) / BlockN;
  const int per_group = p.group_m * n_tiles, group = blockIdx.x / per_group, in_group = blockIdx.x % per_group;
  const int first_m = group * p.group_m, group_m = min(p.group_m, m_tiles - first_m);
  w.m0 = (first_m + in_group % group_m) * kBlockM;
  w.n0 = (in_group / group_m) * BlockN;
  w.batch = p.batch0 + static_cast<int>(blockIdx.y);
  // K steps padded to a whole metadata group run on zero A and B (TMA fills zeros past K) with
  // the padding word's valid nibbles.
  w.split = blockIdx.z;
  w.stage_begin = w.split * p.stages_per_split;
  w.stages = min(static_cast<int>(p.meta_groups), w.stage_begin + p.stages_per_split) - w.stage_begin;
  return w;
}

}  // namespace spmma::sm90
