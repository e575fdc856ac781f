// SPDX-License-Identifier: BSD-3-Clause
// Every choice the sm90 kernel leaves open — CTA tile width, pipeline depth, split K,
// rasterization — made in one place for a problem on a device, honouring the pins of
// PlanOptions (include/spmma/matmul.hpp). Host only.
#pragma once
#include <string>

#include "sm90/tiles.hpp"
#include "spmma/matmul.hpp"

namespace spmma::sm90 {

struct Config {
  int block_m = 0;           // CTA tile M (the kernel's kBlockM: two math warpgroups of 64 rows)
  int block_n = 0;           // CTA tile N
  int stages = 0;            // TMA pipeline stages: stages_for(block_n) (tiles.hpp)
  int splits = 1;            // split K (1: none)
  int stages_per_split = 0;  // stages of 2 K steps per split (splits > 1)
  int group_m = 0;           // M tiles per rasterization group
  int cluster_m = 1;         // CTAs per cluster along M (2: B's tile shared by multicast)
  bool persistent = false;   // a persistent grid (scheduler.cuh), else one CTA per tile
  int promote_stages = 1;    // promoted fp8 sums: stages per f32 add (PlanOptions::promotion_k / 128)
  bool dependent_launch = true;  // programmatic dependent launch (PlanOptions::dependent_launch)
  // The decode kernel (decode.cuh) instead: block_m 32, block_n 8 or 16, `stages` its pipeline's
  // depth, split K in `splits` parts of stages_per_split of its stages (kGroups metadata groups
  // each), `issuers` producer warps per operand; no clusters along M or persistent grid.
  bool decode = false;
  int issuers = 1;
};

// Whether the options pin the decode kernel: its family, or a choice only it has (its rows, its
// producer warps per operand).
inline bool pins_decode(const PlanOptions& o) { return o.kernel == KernelFamily::decode || o.tile_m || o.issuers; }

// The configuration for desc (fp8 sums promoted or not; the instruction's K is inst_k) on a GPU
// with sm_count SMs: the decode kernel or the main kernel and its choices. Throws invalid_argument for a pinned value no kernel has, not_supported for
// one this problem cannot take (naming what it can).
Config choose(const MatmulDesc& desc, bool promoted, int inst_k, int sm_count, const PlanOptions& pins);

}  // namespace spmma::sm90
