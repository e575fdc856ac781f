#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One shape and type through cuSPARSELt (PyTorch's bundled library), for Nsight Compute: the
same operands as bench/cusparselt_torch.py, its search's algorithm, 3 warm-up calls, then 3 calls
inside an NVTX range "once", which ncu selects without counting the search's launches:

    ncu --nvtx --nvtx-include "once/" -c 1 <sections> python3 bench/cusparselt_once.py e4m3 8192x8192x8192

(docs/benchmarks.md, "Nsight Compute at 8192³: e4m3, tf32 and s8 against cuSPARSELt")."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cusparselt_torch as c  # noqa: E402  (beside this file)

t, shape = sys.argv[1], sys.argv[2]
m, n, k = (int(x) for x in shape.split("x"))
_, _, ac, bb, kw = c.operands(m, n, k, t)
alg = torch._cslt_sparse_mm_search(ac, bb, **kw)
for _ in range(3):
    torch._cslt_sparse_mm(ac, bb, alg_id=alg, **kw)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("once")
for _ in range(3):
    torch._cslt_sparse_mm(ac, bb, alg_id=alg, **kw)
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
print("alg", alg)
