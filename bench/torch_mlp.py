#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A Llama-3-8B-shaped MLP block in PyTorch, end to end (issue 11, item 6): dense PyTorch against
PyTorch's own semi-structured sparsity (cuSPARSELt) against spmma.torch.SparseLinear, in a decode
loop at several batch sizes and in one prefill, on a CUDA GPU.

    y = down(silu(gate(x)) * up(x)),  gate/up: 4096 -> 14336, down: 14336 -> 4096 (random weights,
    pruned to 2:4 by magnitude once: every variant multiplies the same pruned weights)

bf16: dense F.linear; semi-structured: to_sparse_semi_structured (cuSPARSELt) and F.linear;
spmma: SparseLinear. e4m3: the activations are quantized to e4m3 before each linear (scale 1:
the random data fits) and the products come out bf16; dense: torch._scaled_mm; semi-structured:
torch._cslt_sparse_mm on the compressed e4m3 weight; spmma: SparseLinear.from_weight(e4m3 weight,
out_dtype=bfloat16). Each is timed with CUDA events over STEPS blocks after a warm-up, median of
ROUNDS, in eager mode (Python and dispatch included) and replayed from a CUDA graph of the same
STEPS blocks (kernels only, no Python): the difference is the per-block overhead of eager mode.
Every variant's output is compared with dense PyTorch's on the same input (worst relative error).
Everything runs under torch.inference_mode(), as a server runs it.

Run on the GPU with the package importable (scripts/device-python.sh builds it):
    PYTHONPATH=build-py/python python3 bench/torch_mlp.py --out mlp.json
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import spmma
import spmma.torch as st

HIDDEN, INTER = 4096, 14336


def prune_2_4(w):
    """Magnitude pruning to 2:4 along the rows (keep the 2 largest |w| of every 4)."""
    g = w.reshape(w.shape[0], -1, 4)
    idx = g.abs().topk(2, dim=-1).indices
    mask = torch.zeros_like(g, dtype=torch.bool).scatter_(-1, idx, True)
    return (g * mask).reshape(w.shape)


def time_blocks(fn, x, steps, rounds):
    """Median per-block time (µs) of `steps` calls of fn(x): eager, then replayed from a CUDA graph."""
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    eager = []
    for _ in range(rounds):
        e0.record()
        for _ in range(steps):
            fn(x)
        e1.record()
        torch.cuda.synchronize()
        eager.append(e0.elapsed_time(e1) * 1e3 / steps)
    graph = None
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(steps):
                fn(x)
        g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(rounds):
            e0.record()
            g.replay()
            e1.record()
            torch.cuda.synchronize()
            times.append(e0.elapsed_time(e1) * 1e3 / steps)
        graph = statistics.median(times)
    except Exception as e:  # noqa: BLE001 - recorded, not hidden
        graph = f"no graph: {type(e).__name__}: {e}"[:200]
    return statistics.median(eager), graph


def worst_rel(y, ref):
    y, ref = y.float(), ref.float()
    return float(((y - ref).abs().max() / ref.abs().max()).item())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="bf16,e4m3")
    ap.add_argument("--batches", default="1,16,64")
    ap.add_argument("--prefill", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)
    shapes = {"gate": (INTER, HIDDEN), "up": (INTER, HIDDEN), "down": (HIDDEN, INTER)}
    w = {k: prune_2_4(torch.randn(s, generator=g, device=dev, dtype=torch.bfloat16) * 0.02) for k, s in shapes.items()}
    records = []
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
           "spmma": spmma.__version__, "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "command": " ".join(sys.argv), "steps": a.steps, "rounds": a.rounds}
    for dt in a.dtypes.split(","):
        variants = {}
        if dt == "bf16":
            dense = {k: v for k, v in w.items()}
            variants["dense"] = lambda x, d=dense: F.linear(F.silu(F.linear(x, d["gate"])) * F.linear(x, d["up"]), d["down"])
            try:
                from torch.sparse import to_sparse_semi_structured
                ss = {k: to_sparse_semi_structured(v) for k, v in w.items()}
                variants["torch 2:4"] = lambda x, d=ss: F.linear(F.silu(F.linear(x, d["gate"])) * F.linear(x, d["up"]), d["down"])
            except Exception as e:  # noqa: BLE001
                variants["torch 2:4"] = f"{type(e).__name__}: {e}"[:200]
            sl = {k: st.SparseLinear.from_weight(v, bias=None, prune="check") for k, v in w.items()}
            variants["spmma"] = lambda x, d=sl: d["down"](F.silu(d["gate"](x)) * d["up"](x))
        else:  # e4m3: activations quantized per linear (scale 1), products in bf16
            f8 = torch.float8_e4m3fn
            w8 = {k: v.to(f8) for k, v in w.items()}
            one = torch.ones((), device=dev)
            q = lambda t: t.to(f8)  # noqa: E731

            def dense8(x, d=w8):
                mm = lambda t, wt: torch._scaled_mm(q(t), wt.t(), one, one, out_dtype=torch.bfloat16)  # noqa: E731
                return mm(F.silu(mm(x, d["gate"])) * mm(x, d["up"]), d["down"])
            variants["dense"] = dense8
            try:
                comp = {k: torch._cslt_compress(v) for k, v in w8.items()}

                def cslt8(x, d=comp):
                    mm = lambda t, c: torch._cslt_sparse_mm(c, q(t).t(), out_dtype=torch.bfloat16).t()  # noqa: E731
                    return mm(F.silu(mm(x, d["gate"])) * mm(x, d["up"]), d["down"])
                variants["torch 2:4"] = cslt8
            except Exception as e:  # noqa: BLE001
                variants["torch 2:4"] = f"{type(e).__name__}: {e}"[:200]
            sl8 = {k: st.SparseLinear.from_weight(v, prune="check", out_dtype=torch.bfloat16) for k, v in w8.items()}
            variants["spmma"] = lambda x, d=sl8: d["down"](q(F.silu(d["gate"](q(x))) * d["up"](q(x))))
        for tokens in [int(b) for b in a.batches.split(",")] + [a.prefill]:
            x = torch.randn(tokens, HIDDEN, generator=g, device=dev, dtype=torch.bfloat16)
            ref = variants["dense"](x)
            steps = a.steps if tokens <= 256 else max(2, a.steps // 4)
            for name, fn in variants.items():
                rec = {"dtype": dt, "tokens": tokens, "phase": "decode" if tokens <= 256 else "prefill", "variant": name, **env}
                if isinstance(fn, str):
                    rec["error"] = fn
                else:
                    try:
                        rec["worst_rel_vs_dense"] = worst_rel(fn(x), ref)
                        eager, graph = time_blocks(fn, x, steps, a.rounds)
                        rec["eager_us"] = eager
                        if isinstance(graph, float):
                            rec["graph_us"] = graph
                            rec["overhead_us"] = eager - graph
                        else:
                            rec["graph_error"] = graph
                    except Exception as e:  # noqa: BLE001
                        rec["error"] = f"{type(e).__name__}: {e}"[:300]
                records.append(rec)
                print(json.dumps({k: v for k, v in rec.items() if k not in env}), flush=True)
    # The table: per dtype and token count, each variant's eager / graph time and speed-up over dense.
    print("\n| dtype | tokens | variant | eager µs | graph µs | overhead µs | eager vs dense | graph vs dense | worst rel. diff |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in records:
        d = next((x for x in records if x["dtype"] == r["dtype"] and x["tokens"] == r["tokens"] and x["variant"] == "dense"), {})
        if "eager_us" not in r:
            print(f"| {r['dtype']} | {r['tokens']} | {r['variant']} | {r.get('error', r.get('graph_error', ''))} |||||")
            continue
        ge = f"{r['graph_us']:.1f}" if "graph_us" in r else "-"
        sp_e = f"{d['eager_us'] / r['eager_us']:.2f}" if d.get("eager_us") else "-"
        sp_g = f"{d['graph_us'] / r['graph_us']:.2f}" if d.get("graph_us") and r.get("graph_us") else "-"
        ov = f"{r['overhead_us']:.1f}" if "overhead_us" in r else "-"
        print(f"| {r['dtype']} | {r['tokens']} | {r['variant']} | {r['eager_us']:.1f} | {ge} | {ov} | {sp_e} | {sp_g} | {r['worst_rel_vs_dense']:.1e} |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    with torch.inference_mode():  # as a server runs it (and SparseLinear's eager fast path: docs/python.md)
        main()
