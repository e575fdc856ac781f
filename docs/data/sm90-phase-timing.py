# SPDX-License-Identifier: BSD-3-Clause
# Driver of the phase timing of the sm90 kernel (docs/benchmarks.md, "Where a small call's time goes"):
# with docs/data/sm90-phase-timing.patch applied, the kernel prints its CTA 0 phases in cycles.
import torch, spmma
torch.manual_seed(0)
for (m, n, k) in [(128, 16, 256), (4096, 16, 4096), (14336, 16, 4096), (4096, 256, 4096)]:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = spmma.compress(a)
    x = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    for i in range(3):
        y = spmma.matmul(w, x)
        torch.cuda.synchronize()
    print("done", m, n, k, flush=True)
