#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""cuSPARSELt kernel times through PyTorch's bundled cuSPARSELt, for `spmma bench --cusparselt-json`.

    python3 bench/cusparselt_torch.py --shapes 8192x8192x8192,4096x16x4096 --types bf16,e4m3 --out cslt.json

For each shape (M x N x K, A sparse M x K) and type: A random with spmma bench's values and a random
2:4 pattern (--data spmma, the default: bench_values below; --data randn, torch.randn pruned by
magnitude, the records before 2026-11-29; each record's "data" says which), compressed once
(torch._cslt_compress); the best algorithm picked by torch._cslt_sparse_mm_search; then
torch._cslt_sparse_mm timed two ways, both leaving out the host's cost (PyTorch sets cuSPARSELt up
again on every call; as in ANCHORS.md):
- by device events around each call, as `spmma bench` times spmma and cuBLAS: the stream held
  first by a spinning kernel (torch.cuda._sleep) that outlasts the host's enqueueing of the start
  event, the call and the end event, so the window opens on a queue that already holds the call
  and times the GPU's work alone; median of the calls. "cusparselt_ms" and "cusparselt_tflops",
  which `spmma bench --cusparselt-json` compares spmma with (the same method on both sides);
- under torch.profiler, the device time of the kernels alone, mean over the calls (no launch
  latency, no gap between two kernels of one call): "cusparselt_kernel_ms" and
  "cusparselt_kernel_tflops", kept for reference (this script's only figure before 2026-11-24).
Every timed call is checked to have been enqueued inside the hold; one that was not is left out
and the hold doubles ("hold_missed" counts them). TFLOP/s are dense-equivalent, 2*M*N*K / time.

--l2 hot|cold|both (as `spmma bench --l2`; docs/benchmarks.md, "Cold L2 and the decode sweep"):
hot repeats the same compressed A and B, so a weight under the L2's size is read from L2; cold
rotates the calls over distinct copies of the compressed A and of B (and of the dense A and B of
torch.mm), enough copies that the others' bytes read between two uses of one copy reach twice the
L2, so each call reads its weight from HBM. Each record carries "l2" ("hot" or "cold"), which
`spmma bench --cusparselt-json` matches, and the weight stream: "weight_bytes" (the compressed A as
torch._cslt_compress stores it, values and metadata) and "weight_gbps" (1e9 B/s of kernel time).
Cold records also carry "cusparselt_seq_ms": a call's time layer after layer, the rotation's calls
back to back in one held window ("seq_calls" of them), as `spmma bench` times its cold rows.

    python3 bench/cusparselt_torch.py --sweep decode --types bf16,e4m3 --out cslt-decode.json

(--sweep decode: M x K 4096x4096, 14336x4096, 4096x14336, 28672x8192, 11008x4096 at N = 1, 8, 16,
32, 64, 128, 256; --l2 both unless given.)
"""
import argparse
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

DEFAULT_SHAPES = ([(s, s, s) for s in (4096, 8192, 16384)] +
                  [(m, n, k) for (m, k) in ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192))
                   for n in (16, 128, 2048, 8192)])
# The decode sweep, as tools/bench_gpu.hpp's decode_sweep_shapes (M x K outer, N inner).
DECODE_SHAPES = [(m, n, k) for (m, k) in ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (11008, 4096))
                 for n in (1, 8, 16, 32, 64, 128, 256)]
MAX_COLD_COPIES = 64  # as spmma bench (tools/bench_gpu.cu): beyond, the call is launch-bound anyway


def prune_2_4(a):
    m, k = a.shape
    g = a.float().abs().reshape(m, k // 4, 4)
    idx = g.topk(2, dim=-1).indices
    mask = torch.zeros_like(g, dtype=torch.bool).scatter_(-1, idx, True).reshape(m, k)
    return a * mask.to(a.dtype)


HOLD_S = 100e-6  # the first hold, as spmma bench's (tools/bench_gpu.cu, HeldTimer); doubled where too short


def held_ms(fn, iters=30, warmup=5):
    """Median device-event time per call (ms), each call's window opened on a stream held by a
    spinning kernel long enough that the start event, the call and the end event are all enqueued
    before the window opens (NVBench's blocking kernel). Returns (median ms, calls enqueued after
    the hold ran out: left out, the hold doubled). The hold starts at spmma bench's 100 us and
    doubles only where a call came late, as spmma bench's does, so that both sides idle alike
    between calls. Until 2026-11-27 it was 4x the warm-up calls' time, their GPU time included, so
    the GPU idled about 4x as long as it computed: over 1000 such calls at bf16 8192^3 the H100 ran
    at 1980 MHz and 190 W, where spmma bench's calls ran at 1620 MHz and 690 W. Over this script's
    30 calls it made no difference (8192^3 bf16: 1185 TFLOP/s before, 1188 with this hold;
    docs/benchmarks.md, "Power and clocks")."""
    cycles = int(HOLD_S * 2.5e9)  # _sleep counts SM cycles: 2.5 GHz is above any H100 clock, so at least HOLD_S
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times, missed = [], 0
    # The warm-up calls held too (as spmma bench's): the ones that come late only lengthen the hold.
    for i in range(warmup + iters):
        torch.cuda._sleep(cycles)
        e0.record()
        fn()
        e1.record()
        late = e0.query()  # the window had opened before the call was in the queue: no measurement
        e1.synchronize()
        if late:
            missed += i >= warmup
            cycles *= 2
            continue
        if i >= warmup:
            times.append(e0.elapsed_time(e1))
    if not times:
        raise RuntimeError("every timed call was enqueued after its stream's hold ran out")
    times.sort()
    return times[len(times) // 2], missed


def kernel_ms(fn, iters=20, names=None, warmup=5):
    """Device time per call (ms); the kernels' names (their tile, cluster and stage counts are in
    them) go into `names` when given."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    total_us = 0.0
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            total_us += e.device_time
            if names is not None and e.name not in names:
                names.append(e.name)
    return total_us / iters / 1e3


# A/B storage dtype and cuSPARSELt output dtype per spmma type (None: same as the inputs).
TYPES = {
    "bf16": (torch.bfloat16, None),
    "f16": (torch.float16, None),
    "tf32": (torch.float32, None),       # cuSPARSELt's float32 path computes in tf32
    "e4m3": (torch.float8_e4m3fn, torch.bfloat16),
    "s8": (torch.int8, torch.int32),
}


def l2_bytes():
    props = torch.cuda.get_device_properties(0)
    return int(getattr(props, "L2_cache_size", 50 << 20))


def cold_copies(per_call_bytes, l2):
    """As spmma's bench::cold_copies: copies - 1 times the bytes a call rotates reach 2x the L2."""
    if per_call_bytes <= 0:
        return 2
    return max(2, min(MAX_COLD_COPIES, 1 + -(-2 * l2 // per_call_bytes)))


def nbytes(x):
    return x.numel() * x.element_size()


def rotation(tensors, per_call_bytes, l2, what):
    """Copies of `tensors` (the first is the originals) for a cold rotation, within 3/4 of the free
    memory; refused, naming the sizes, where not even a second copy fits. Returns (copies,
    copies - 1 times per_call_bytes: what is read between two uses of one copy)."""
    wanted = cold_copies(per_call_bytes, l2)
    free, _ = torch.cuda.mem_get_info()
    fit = min(wanted, 1 + (free * 3 // 4) // max(1, per_call_bytes))
    if fit < 2:
        raise RuntimeError(f"cold L2: a second copy of {what} ({per_call_bytes / 2**20:.1f} MiB) does not fit in 3/4 "
                           f"of the free GPU memory ({free * 3 // 4 / 2**20:.1f} MiB usable)")
    copies = [tensors] + [tuple(x.clone() for x in tensors) for _ in range(fit - 1)]
    return copies, (fit - 1) * per_call_bytes


def rotating(fn, copies):
    """fn(*copy) over the copies in turn, one per call."""
    state = {"i": 0}

    def call():
        c = copies[state["i"] % len(copies)]
        state["i"] += 1
        return fn(*c)
    return call


SEQUENCE_CALLS = 8  # as spmma's bench (tools/bench_gpu.cu, sequence_timing)


def sequence_ms(fn, copies):
    """Layer after layer (cold only, as spmma's bench): a held window of `calls` calls back to back
    over the rotation (whole rotations, at least SEQUENCE_CALLS); returns (ms per call, calls)."""
    calls = len(copies) * -(-SEQUENCE_CALLS // len(copies))
    step = rotating(fn, copies)

    def window():
        for _ in range(calls):
            step()
    ms, _ = held_ms(window, warmup=2)
    return ms / calls, calls


# The values `spmma bench` multiplies (tools/bench_gpu.cu, random_bits): floats with a random sign,
# an exponent 2^-2, 2^-1 or 2^0 and every mantissa bit random (tf32: f32 with its low 13 bits
# zero), integers with every bit random; A's kept positions random in each group of 4. The tensor
# cores' power, and with it the clock a call runs at under the card's power limit, follows the
# operands' bits: with torch.randn in bf16 cast to the type (this script's data before
# 2026-11-29, --data randn), f16 and tf32 operands carried 8 significant bits and s8 small
# magnitudes, and cuSPARSELt ran f16 at its bf16 speed where cuBLAS and spmma, on the bench's
# full-mantissa f16, ran 0.95x their bf16 (H200, docs/benchmarks.md "Where spmma stands on the H200").
MANTISSA_BITS = {"bf16": 7, "f16": 10, "tf32": 10, "e4m3": 3}


def bench_values(shape, t):
    """A tensor of `shape` with spmma bench's values for type t (see MANTISSA_BITS): int8, or for
    the float types f32 values that the type holds exactly (the caller casts them, after pruning:
    PyTorch has no multiply in fp8)."""
    dtype = TYPES[t][0]
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, device="cuda", dtype=torch.int8)
    man = MANTISSA_BITS[t]
    sign = torch.randint(0, 2, shape, device="cuda", dtype=torch.int32) * 2 - 1
    exp = torch.randint(-2, 1, shape, device="cuda", dtype=torch.int32)
    frac = torch.randint(0, 1 << man, shape, device="cuda", dtype=torch.int32)
    # Exact in f32 and in the type: (1 + frac / 2^man) * 2^exp, at most man mantissa bits.
    return sign.float() * (1.0 + frac.float() / (1 << man)) * torch.exp2(exp.float())


def random_2_4(a):
    """a with 2 random positions of each group of 4 along K kept, the others zero."""
    m, k = a.shape
    idx = torch.rand(m, k // 4, 4, device=a.device).topk(2, dim=-1).indices
    mask = torch.zeros(m, k // 4, 4, device=a.device, dtype=torch.bool).scatter_(-1, idx, True).reshape(m, k)
    return a * mask.to(a.dtype)


DATA = "spmma"  # main() sets it from --data


def operands(m, n, k, t):
    """One shape's operands for type t: A (M x K, random, pruned 2:4), B (K x N), A compressed
    (torch._cslt_compress), B as cuSPARSELt takes it, and torch._cslt_sparse_mm's out_dtype
    argument (bench/cusparselt_once.py takes the same). The values: spmma bench's (bench_values),
    or with DATA = "randn" torch.randn in bf16 cast to the type (the records before 2026-11-29)."""
    dtype, out_dtype = TYPES[t]
    if DATA == "spmma":
        a, b = random_2_4(bench_values((m, k), t)).to(dtype), bench_values((k, n), t).to(dtype)
    else:
        a = prune_2_4(torch.randn(m, k, device="cuda", dtype=torch.bfloat16))
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        if dtype == torch.int8:
            a = (a * 16).round().clamp(-127, 127).to(torch.int8)
            b = (b * 16).round().clamp(-127, 127).to(torch.int8)
        else:
            a, b = a.to(dtype), b.to(dtype)
    ac = torch._cslt_compress(a)
    # cuSPARSELt wants B column-major for fp8: pass B^T's storage transposed back.
    bb = b.t().contiguous().t()
    kwargs = {"out_dtype": out_dtype} if out_dtype is not None else {}
    return a, b, ac, bb, kwargs


def one(m, n, k, t, modes):
    """The records of one shape and type, one per L2 mode in `modes` (the search shared)."""
    a, b, ac, bb, kwargs = operands(m, n, k, t)
    try:
        alg = torch._cslt_sparse_mm_search(ac, bb, **kwargs)
    except Exception:
        alg = 0
    flops = 2.0 * m * n * k
    l2 = l2_bytes() if "cold" in modes else 0
    sparse_mm = lambda x, y: torch._cslt_sparse_mm(x, y, alg_id=alg, **kwargs)  # noqa: E731
    rows = []
    for mode in modes:
        row = {"m": m, "n": n, "k": k, "type": t, "l2": mode, "data": DATA, "alg_id": int(alg), "torch": torch.__version__,
               "cusparselt": str(torch.backends.cusparselt.version()), "weight_bytes": nbytes(ac)}
        try:
            names = []
            if mode == "hot":
                kms = kernel_ms(lambda: sparse_mm(ac, bb), names=names)
                ms, missed = held_ms(lambda: sparse_mm(ac, bb))
                row["l2_copies"] = 1
            else:
                copies, between = rotation((ac, bb), nbytes(ac) + nbytes(bb), l2, "the compressed A and B")
                kms = kernel_ms(rotating(sparse_mm, copies), names=names, warmup=max(5, len(copies)))
                ms, missed = held_ms(rotating(sparse_mm, copies), warmup=max(5, len(copies)))
                seq_ms, seq_calls = sequence_ms(sparse_mm, copies)
                row.update({"l2_copies": len(copies), "l2_between_bytes": between, "l2_bytes": l2,
                            "cusparselt_seq_ms": seq_ms, "seq_calls": seq_calls})
                del copies
                torch.cuda.empty_cache()  # mem_get_info counts the allocator's cache as used
            row.update({"cusparselt_ms": ms, "cusparselt_tflops": flops / (ms * 1e-3) / 1e12, "kernels": names,
                        "weight_gbps": nbytes(ac) / (ms * 1e-3) / 1e9, "timing": "device events, held stream",
                        "hold_missed": missed, "cusparselt_kernel_ms": kms,
                        "cusparselt_kernel_tflops": flops / (kms * 1e-3) / 1e12})
            if t in ("bf16", "f16"):
                if mode == "hot":
                    dms, _ = held_ms(lambda: torch.mm(a, b))
                else:
                    copies, _ = rotation((a, b), nbytes(a) + nbytes(b), l2, "the dense A and B")
                    dms, _ = held_ms(rotating(torch.mm, copies), warmup=max(5, len(copies)))
                    del copies
                    torch.cuda.empty_cache()
                row["torch_dense_tflops"] = flops / (dms * 1e-3) / 1e12
                row["torch_dense_weight_gbps"] = nbytes(a) / (dms * 1e-3) / 1e9
        except Exception as e:  # this mode's record says why; the other mode's stands
            row.update({"cusparselt_tflops": None, "error": str(e)[:200]})
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="")
    ap.add_argument("--sweep", choices=["decode"], help="decode: the decode shapes (instead of --shapes)")
    ap.add_argument("--l2", choices=["hot", "cold", "both"],
                    help="hot (default), cold (rotate over copies: weights from HBM) or both; both with --sweep decode")
    ap.add_argument("--types", default="bf16,e4m3")
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", choices=["spmma", "randn"], default="spmma",
                    help="the operands' values: spmma bench's (default) or torch.randn in bf16 cast to the type "
                         "(the records before 2026-11-29)")
    args = ap.parse_args()
    global DATA
    DATA = args.data
    if args.sweep and args.shapes:
        ap.error(f"--sweep {args.sweep} and --shapes both name the shapes; give one of them")
    if args.sweep == "decode":
        shapes = DECODE_SHAPES
    elif args.shapes:
        shapes = [tuple(int(x) for x in s.lower().split("x")) for s in args.shapes.split(",")]
    else:
        shapes = DEFAULT_SHAPES
    l2 = args.l2 or ("both" if args.sweep == "decode" else "hot")
    modes = ["hot", "cold"] if l2 == "both" else [l2]
    rows = []
    for t in args.types.split(","):
        for (m, n, k) in shapes:
            try:
                got = one(m, n, k, t, modes)
            except Exception as e:  # report and go on: one unsupported case must not hide the rest
                got = [{"m": m, "n": n, "k": k, "type": t, "l2": mode, "cusparselt_tflops": None, "error": str(e)[:200]}
                       for mode in modes]
            rows += got
            for r in got:
                print(f"{m}x{n}x{k} {t} {r['l2']}: cuSPARSELt {r.get('cusparselt_tflops')}"
                      f"{'' if r.get('weight_gbps') is None else ' TFLOP/s, %.0f GB/s' % r['weight_gbps']}",
                      file=sys.stderr, flush=True)
            # Written after every case: a run cut short (a time limit) keeps what it measured.
            with open(args.out, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
