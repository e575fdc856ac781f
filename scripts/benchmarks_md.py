#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Markdown table from `spmma bench --json-out FILE` (docs/benchmarks.md), from the JSON alone:
the header says what the records say of themselves (device, driver, runtime, libraries, spmma's
version and commit, date, command, repetitions), the table each row's median and its spread.

    python3 scripts/benchmarks_md.py bench.json              every row, with its provenance
    python3 scripts/benchmarks_md.py --standing bench.json   issue 10's shapes x types: TFLOP/s,
        the ratio to cuSPARSELt, geometric means against cuSPARSELt and cuBLAS ("Where spmma stands")
    python3 scripts/benchmarks_md.py --decode bench.json     the decode sweep, cold rows with the
        hot TFLOP/s beside them, against cuBLAS and cuSPARSELt, the weight stream and its share of
        the copy rate ("Cold L2 and the decode sweep")
    python3 scripts/benchmarks_md.py --sequence bench.json   the decode sweep's cold rows layer after
        layer: a call's µs alone and back to back, spmma's, cuBLAS's and cuSPARSELt's, the speed-ups
        in sequence and the weight stream ("Layer after layer")
    python3 scripts/benchmarks_md.py --targets bench.json    issue 12's done-when on the decode sweep's
        cold bf16 and e4m3 rows: each clause alone and in sequence, the time the clauses allow
        over the row's bound, which rows meet them all
    python3 scripts/benchmarks_md.py --configs bench.json    scripts/device-hopper.sh's records (each
        with its "config" label): TFLOP/s per shape, type and configuration, in the order the
        labels first appear, and cuBLAS's (the experiment tables of docs/benchmarks.md's history)
    python3 scripts/benchmarks_md.py --mlp mlp.json [before.json LABEL]
        bench/torch_mlp.py's records: per dtype, token count and variant, eager and graph µs,
        eager overhead, the ratios to dense (spmma's above 1 in bold), and the eager µs of an earlier run
        (docs/python.md, "Speed on the H100")
    python3 scripts/benchmarks_md.py --check ROOT
        fails unless every current table of the docs (CHECKED below: "Where spmma stands" and the
        decode sweep, alone, layer after layer and against issue 12's targets, in docs/benchmarks.md, the MLP block in docs/python.md) is exactly what this
        script makes of its committed records (test benchmarks_doc): a hand edit of a number, or
        new records without regenerating, fails it
"""
import contextlib
import io
import json
import math
import sys


def f(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def pair(x, y):
    # A ratio alone and, in brackets, layer after layer.
    return f"{f(x, 2)} ({f(y, 2)})"


def provenance_line(rows):
    p = rows[0].get("provenance") if rows else None
    if not p:  # records from before provenance (2026-11-23): only the device is known
        return f"Device: {rows[0]['device'] if rows else '?'} (the records carry no provenance)."
    parts = [f"Device: {p.get('device')}", f"driver {p.get('cuda_driver') or 'none'}",
             f"CUDA runtime {p.get('cuda_runtime', '-')}"]
    if p.get("cublaslt"):
        parts.append(f"cuBLASLt {p['cublaslt']}")
    peers = {(r["cusparselt_record"].get("torch"), r["cusparselt_record"].get("cusparselt"))
             for r in rows if r.get("cusparselt_record")}
    for torch_v, cslt in sorted(x for x in peers if x[0]):
        parts.append(f"cuSPARSELt {cslt} (PyTorch {torch_v})")
    parts.append(f"spmma {p.get('version')} (commit {p.get('commit')})")
    parts.append(f"{p.get('date_utc')}")
    return ("; ".join(parts) + f". `{p.get('command')}`: {p.get('timer')}, {p.get('reps')} repetitions after "
            f"{p.get('warmup')} warm-up, seed {p.get('seed')}. TFLOP/s are dense-equivalent (2·M·N·K / time).\n")


def main(path):
    rows = json.load(open(path))
    print(provenance_line(rows))
    print("| M | N | K | type | epilogue | spmma | spread (min-p90, ms) | cuBLAS dense | cuSPARSELt | spmma / cuBLAS | "
          "spmma / cuSPARSELt | call (µs) | verified |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cb, cs = r.get("cublas_tflops"), r.get("cusparselt_tflops")
        sp = r["spmma_tflops"]
        t = (r.get("timing_ms") or {}).get("spmma")
        spread = f"{t['min']:.4g}-{t['p90']:.4g}" if t else "-"
        print(f"| {r['m']} | {r['n']} | {r['k']} | {r['type']} | {r.get('epilogue', 'plain')} → {r.get('d_type', '-')} | "
              f"{f(sp)} | {spread} | {f(cb)} | {f(cs)} | {f(sp / cb if cb else None, 2)} | "
              f"{f(sp / cs if cs else None, 2)} | {f(r['spmma_call_us'])} | "
              f"{'yes' if r['verified'] else ('n/a' if r.get('note') else 'NO')} |")


# Issue 10's shapes: 8192³, 16384³, 4096³ and the default LLM shapes with N >= 2048.
STANDING = [(8192, 8192, 8192), (16384, 16384, 16384), (4096, 4096, 4096)] + [
    (m, n, k) for (m, k) in ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192)) for n in (2048, 8192)]
STANDING_TYPES = ("bf16", "f16", "e4m3", "s8", "tf32")
DECODE_WEIGHTS = ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (11008, 4096))
DECODE_N = (1, 8, 16, 32, 64, 128, 256)


def decode_order(rows):
    """(type, M, K, N) of the decode sweep in its table order: types as they come, then weights, then N."""
    for t in dict.fromkeys(r["type"] for r in rows):
        for (m, k) in DECODE_WEIGHTS:
            for n in DECODE_N:
                yield t, m, k, n


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


def standing(rows):
    hot = {(r["type"], r["m"], r["n"], r["k"]): r for r in rows if r.get("l2", "hot") == "hot"}
    print("| type | " + " | ".join(f"{m}³" if m == n == k else f"{m}×{n}×{k}" for m, n, k in STANDING) +
          " | geomean vs cuSPARSELt | geomean vs cuBLAS |")
    print("|---" * (len(STANDING) + 3) + "|")
    for t in STANDING_TYPES:
        cells, vs, vd = [], [], []
        for (m, n, k) in STANDING:
            r = hot.get((t, m, n, k))
            if r is None or not r.get("cusparselt_tflops") or not r.get("cublas_tflops"):
                cells.append("-")
                continue
            vs.append(r["spmma_tflops"] / r["cusparselt_tflops"])
            vd.append(r["spmma_tflops"] / r["cublas_tflops"])
            cells.append(f"{r['spmma_tflops']:.0f} ({vs[-1]:.2f})")
        if vs:
            print(f"| {t} | " + " | ".join(cells) + f" | {geomean(vs):.2f} | {geomean(vd):.2f} |")


def copy_rate(r):
    # The records' copy_gbps: HBM traffic (read + written) since 65c86a5; the first records
    # (2026-11-23 20:54 UTC) counted the copy's reads only (provenance.copy_rate.convention says
    # which), and those are doubled here so that "of copy" means one thing.
    c = r.get("copy_gbps")
    conv = ((r.get("provenance") or {}).get("copy_rate") or {}).get("convention", "")
    return 2 * c if c and conv.startswith("device-to-device cudaMemcpyAsync; bytes read per second") else c


def decode(rows):
    by = {(r["type"], r["m"], r["k"], r["n"], r.get("l2", "hot")): r for r in rows}
    # cuSPARSELt's profiler kernel time (bench/cusparselt_torch.py, records since 2026-11-24): the
    # kernel alone, no launch; the column beside the same-method (held-stream events) ratio.
    def kernel_only(r):
        k = (r.get("cusparselt_record") or {}).get("cusparselt_kernel_ms")
        return k / r["spmma_ms"] if k and r.get("spmma_ms") else None

    # The floor of a cold call (records since 2026-11-29: of_stream_bound): the weight's bytes at
    # the copy rate plus an empty kernel's time as a call; spmma's and cuBLAS's fraction of theirs.
    bounds = any(r.get("of_stream_bound") for r in rows)
    print("| type | M×K | N | spmma TFLOP/s cold (hot) | vs cuBLAS cold | vs cuSPARSELt cold | vs its kernel time | "
          "weight GB/s cold | of copy |" + (" of bound: spmma | cuBLAS |" if bounds else ""))
    print("|---" * (11 if bounds else 9) + "|")
    for t, m, k, n in decode_order(rows):
        c, h = by.get((t, m, k, n, "cold")), by.get((t, m, k, n, "hot"))
        if c is None:
            continue
        vd = c["spmma_tflops"] / c["cublas_tflops"] if c.get("cublas_tflops") else None
        vs = c["spmma_tflops"] / c["cusparselt_tflops"] if c.get("cusparselt_tflops") else None
        cr = copy_rate(c)
        print(f"| {t} | {m}×{k} | {n} | {c['spmma_tflops']:.1f} ({f(h['spmma_tflops']) if h else '-'}) | "
              f"{f(vd, 2)} | {f(vs, 2)} | {f(kernel_only(c), 2)} | {c['weight_gbps']:.0f} | "
              f"{f(c['weight_gbps'] / cr if cr else None, 2)} |" +
              (f" {f(c.get('of_stream_bound'), 2)} | {f(c.get('dense_of_stream_bound'), 2)} |" if bounds else ""))


def sequence(rows):
    # Cold rows timed layer after layer too (records since 2026-11-24: "sequence"): a call's µs
    # alone (its own held window) and back to back, spmma's, cuBLAS's and cuSPARSELt's, the
    # speed-ups in sequence, and the weight stream in sequence against the copy rate.
    by = {(r["type"], r["m"], r["k"], r["n"]): r for r in rows if r.get("l2") == "cold" and r.get("sequence")}

    def us(x):
        return f"{x * 1e3:.1f}" if x else "-"

    print("| type | M×K | N | spmma µs alone → in sequence | cuBLAS µs alone → in sequence | "
          "cuSPARSELt µs alone → in sequence | in sequence: vs cuBLAS | vs cuSPARSELt | weight GB/s | of copy |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t, m, k, n in decode_order(rows):
        r = by.get((t, m, k, n))
        if r is None:
            continue
        q = r["sequence"]
        flops = 2.0 * m * n * k
        cub = flops / (r["cublas_tflops"] * 1e12) * 1e3 if r.get("cublas_tflops") else None
        cs = (r.get("cusparselt_record") or {}).get("cusparselt_ms")
        sp, sd, sc = q.get("spmma_ms"), q.get("cublas_ms"), q.get("cusparselt_ms")
        gbps = r["weight_bytes"] / (sp * 1e-3) / 1e9 if sp else None
        cr = r.get("copy_gbps")
        print(f"| {t} | {m}×{k} | {n} | {us(r['spmma_ms'])} → {us(sp)} | {us(cub)} → {us(sd)} | "
              f"{us(cs)} → {us(sc)} | {f(sd / sp if sp and sd else None, 2)} | "
              f"{f(sc / sp if sp and sc else None, 2)} | {f(gbps, 0)} | {f(gbps / cr if gbps and cr else None, 2)} |")


# Issue 12's done-when, on the decode sweep's cold rows of its two types: at N <= 16 at least
# 1.6x (bf16) or 1.45x (e4m3) cuBLAS dense, 1.1x cuSPARSELt and 0.8 of the copy rate for the
# weight stream; at N = 32-256 1.3x cuBLAS and 1.1x cuSPARSELt. Each row: the clauses' ratios
# alone and layer after layer, the time they allow over the row's bound (its weight at the copy
# rate plus the launch floor, stream_bound_ms: below 1, faster than a call alone can be), and
# which of the two timings meets every clause.
TARGETS = {"bf16": 1.6, "e4m3": 1.45}
TARGET_WIDE, TARGET_PEER, TARGET_COPY = 1.3, 1.1, 0.8


def targets(rows):
    by = {(r["type"], r["m"], r["k"], r["n"]): r for r in rows if r.get("l2") == "cold"}
    print("| type | M×K | N | vs cuBLAS: alone (in sequence) | vs cuSPARSELt | of copy | allowed / bound | "
          "met alone | met in sequence |")
    print("|---" * 9 + "|")
    count = {}
    for t, m, k, n in decode_order(rows):
        r = by.get((t, m, k, n))
        if t not in TARGETS or r is None or not r.get("cublas_tflops"):
            continue
        need = TARGETS[t] if n <= 16 else TARGET_WIDE
        sp, q, cr = r["spmma_ms"], r.get("sequence") or {}, copy_rate(r)
        dense = sp * r["spmma_tflops"] / r["cublas_tflops"]
        peer = sp * r["spmma_tflops"] / r["cusparselt_tflops"] if r.get("cusparselt_tflops") else None

        def ratios(s, d, c):
            return d / s, (c / s if c else None), r["weight_bytes"] / (s * 1e-3) / 1e9 / cr

        def met(vd, vs, oc):
            return vd >= need and (vs is None or vs >= TARGET_PEER) and (n > 16 or oc >= TARGET_COPY)

        a = ratios(sp, dense, peer)
        b = ratios(q["spmma_ms"], q["cublas_ms"], q.get("cusparselt_ms")) if q.get("spmma_ms") else None
        allowed = min([dense / need] + ([peer / TARGET_PEER] if peer else []) +
                      ([r["weight_bytes"] / (TARGET_COPY * cr * 1e9) * 1e3] if n <= 16 else []))
        bound = r.get("stream_bound_ms")
        ma, mb = met(*a), bool(b) and met(*b)
        c = count.setdefault(t, dict(rows=0, alone=0, seq=0, beyond=0, bounded=0))
        c["rows"] += 1
        c["alone"] += ma
        c["seq"] += mb
        c["bounded"] += bool(bound)
        c["beyond"] += bool(bound) and allowed < bound
        print(f"| {t} | {m}×{k} | {n} | {pair(a[0], b and b[0])} | {pair(a[1], b and b[1])} | {pair(a[2], b and b[2])} | "
              f"{f(allowed / bound if bound else None, 2)} | {'yes' if ma else 'no'} | {'yes' if mb else 'no'} |")
    print()
    for t, c in count.items():
        print(f"{t}: every clause met on {c['alone']} of {c['rows']} rows alone, {c['seq']} in sequence; " +
              (f"on {c['beyond']} of {c['bounded']} the clauses allow less time than the row's bound." if c["bounded"]
               else "the records carry no bound (before 2026-11-29)."))


def configs(rows):
    labels = list(dict.fromkeys(r["config"] for r in rows))
    by = {}
    for r in rows:
        by.setdefault((r["type"], r["m"], r["n"], r["k"]), {}).setdefault(r["config"], []).append(r)
    print("| type | M×N×K | " + " | ".join(labels) + " | cuBLAS |")
    print("|---" * (len(labels) + 3) + "|")
    for (t, m, n, k), v in by.items():
        cells = [f(sum(r["spmma_tflops"] for r in v[l]) / len(v[l])) if l in v else "-" for l in labels]
        cub = [r["cublas_tflops"] for l in labels for r in v.get(l, []) if r.get("cublas_tflops")]
        print(f"| {t} | {m}×{n}×{k} | " + " | ".join(cells) + f" | {f(sum(cub) / len(cub) if cub else None)} |")


def mlp(rows, before=None, label=""):
    names = {"dense": "dense", "torch 2:4": "PyTorch 2:4", "spmma": "spmma"}
    old = {(r["dtype"], r["tokens"], r["variant"]): r for r in before or [] if not r.get("error")}
    dense = {(r["dtype"], r["tokens"]): r for r in rows if r["variant"] == "dense" and not r.get("error")}

    def ratio(x, r):  # spmma's wins in bold
        return f"**{x:.2f}**" if r["variant"] == "spmma" and round(x, 2) > 1 else f"{x:.2f}"

    print("| dtype | tokens | variant | eager µs | graph µs | eager overhead µs | eager vs dense | graph vs dense |" +
          (f" eager µs at {label} |" if before else ""))
    print("|---" * (8 + bool(before)) + "|")
    for r in rows:
        if r.get("error"):  # the records keep the refusal; the table has no row for it
            continue
        d = dense[(r["dtype"], r["tokens"])]
        tokens = f"{r['tokens']} (prefill)" if r["phase"] == "prefill" else str(r["tokens"])
        o = old.get((r["dtype"], r["tokens"], r["variant"]))
        print(f"| {r['dtype']} | {tokens} | {names[r['variant']]} | {r['eager_us']:.0f} | {r['graph_us']:.0f} | "
              f"{r['overhead_us']:.0f} | {ratio(d['eager_us'] / r['eager_us'], r)} | {ratio(d['graph_us'] / r['graph_us'], r)} |" +
              (f" {o['eager_us']:.0f} |" if before and o else " - |" if before else ""))


# The current tables of the docs and the records they are made from (--check).
CHECKED = (
    ("docs/benchmarks.md", "--standing", standing, ("docs/data/bench-h100-full.json",)),
    ("docs/benchmarks.md", "--decode", decode, ("docs/data/bench-h100-decode.json",)),
    ("docs/benchmarks.md", "--sequence", sequence, ("docs/data/bench-h100-decode.json",)),
    ("docs/benchmarks.md", "--standing", standing, ("docs/data/bench-h200-standing.json",)),
    ("docs/benchmarks.md", "--standing", standing, ("docs/data/bench-h100-table-b232b81.json",)),
    ("docs/benchmarks.md", "--decode", decode, ("docs/data/bench-h200-decode-9cfce2e.json",)),
    ("docs/benchmarks.md", "--standing", standing, ("docs/data/bench-h100-table-1eb84dc.json",)),
    ("docs/benchmarks.md", "--decode", decode, ("docs/data/bench-h100-decode-1eb84dc.json",)),
    ("docs/benchmarks.md", "--sequence", sequence, ("docs/data/bench-h100-decode-1eb84dc.json",)),
    ("docs/benchmarks.md", "--decode", decode, ("docs/data/bench-h100-decode-issuers.json",)),
    ("docs/benchmarks.md", "--sequence", sequence, ("docs/data/bench-h100-decode-issuers.json",)),
    ("docs/benchmarks.md", "--decode", decode, ("docs/data/bench-h100-decode-72cf3f6.json",)),
    ("docs/benchmarks.md", "--sequence", sequence, ("docs/data/bench-h100-decode-72cf3f6.json",)),
    ("docs/benchmarks.md", "--targets", targets, ("docs/data/bench-h100-decode-72cf3f6.json",)),
    ("docs/python.md", "--mlp", mlp, ("docs/data/torch-mlp-h100.json", "docs/data/torch-mlp-h100-c75ee41.json", "c75ee41")),
)


def check(root):
    bad = 0
    for doc, name, fn, args in CHECKED:
        text = open(f"{root}/{doc}").read()
        loaded = [json.load(open(f"{root}/{a}")) if a.endswith(".json") else a for a in args]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            fn(*loaded)
        cmd = f"python3 scripts/benchmarks_md.py {name} {' '.join(args)}"
        if out.getvalue().strip() not in text:
            print(f"{doc}: the table of `{cmd}` is not in it as made; regenerate it")
            bad += 1
        else:
            print(f"{doc}: matches `{cmd}`")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2]))
    if len(sys.argv) in (3, 5) and sys.argv[1] == "--mlp":
        mlp(json.load(open(sys.argv[2])), *([json.load(open(sys.argv[3])), sys.argv[4]] if len(sys.argv) == 5 else []))
        sys.exit(0)
    if len(sys.argv) == 3 and sys.argv[1] in ("--standing", "--decode", "--sequence", "--targets", "--configs"):
        {"--standing": standing, "--decode": decode, "--sequence": sequence, "--targets": targets,
         "--configs": configs}[sys.argv[1]](json.load(open(sys.argv[2])))
    else:
        main(sys.argv[1])
