#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots for docs/benchmarks.md and the README, from `spmma bench` JSON records alone (issue 13,
item 7). Needs matplotlib (not a dependency of spmma: `pip install matplotlib`); writes SVG.

    python3 scripts/plots.py peers  RECORDS.json OUT.svg [--config LABEL]
        spmma, cuBLAS dense and cuSPARSELt (where the record has it), TFLOP/s per shape, one
        panel per type.
    python3 scripts/plots.py vs-n   RECORDS.json OUT.svg [--config LABEL] [--l2 hot|cold] [--over cublas|cusparselt] [--sequence]
        spmma's speed-up over cuBLAS dense (or cuSPARSELt) against N for each M x K with several N
        (the LLM linears: N is the tokens of a batch), one line per M x K, one panel per type;
        --l2 keeps the rows of one L2 mode (`spmma bench --l2`); --sequence takes every side's
        time layer after layer (the cold records' "sequence") instead of a call's alone.
    python3 scripts/plots.py roofline RECORDS.json OUT.svg --peak TYPE=TFLOPS ... --bandwidth TB/S [--config LABEL]
        each row at its arithmetic intensity (dense-equivalent FLOP per byte of compressed A, B
        and D), under the roofs min(peak, bandwidth x intensity): the instruction peaks and the
        copy rate are given on the command line, with where they were measured in the caption.

--config keeps the records of one configuration of scripts/device-hopper.sh (their "config").
Every figure's caption names the records file and what the records say of their date and commit.
"""
import argparse
import collections
import json
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

matplotlib.rcParams["svg.hashsalt"] = "spmma"  # the same SVG for the same data (stable diffs)
matplotlib.rcParams["svg.fonttype"] = "none"
COLORS = {"spmma": "#1f77b4", "cuBLAS dense": "#7f7f7f", "cuSPARSELt": "#d62728"}


def load(path, config, l2=""):
    rows = [r for r in json.load(open(path)) if r.get("verified") and r.get("spmma_tflops")]
    if config:
        rows = [r for r in rows if r.get("config") == config]
    if l2:  # a record from before the L2 modes is a hot one
        rows = [r for r in rows if r.get("l2", "hot") == l2]
    if not rows:
        raise SystemExit(f"{path}: no verified record" + (f" of config {config!r}" if config else "") +
                         (f" with l2 {l2!r}" if l2 else ""))
    return rows


def caption(path, rows):
    p = rows[0].get("provenance") or {}
    when = p.get("date_utc") or "date not in the records"
    what = f"spmma {p['version']} ({p['commit']})" if p.get("commit") else "commit not in the records"
    return f"{os.path.basename(path)}; {rows[0].get('device', '?')}; {when}; {what}"


def shape_name(r):
    return f"{r['m']}x{r['n']}x{r['k']}"


def by_type(rows):
    out = collections.OrderedDict()
    for r in rows:
        out.setdefault(r["type"], []).append(r)
    return out


def mean_by_shape(rows, key):
    """Per shape, the mean of `key` over the records (several rounds of one configuration)."""
    acc = collections.OrderedDict()
    for r in rows:
        if r.get(key):
            acc.setdefault((r["m"], r["n"], r["k"]), []).append(r[key])
    return {s: sum(v) / len(v) for s, v in acc.items()}


def peers(path, out, config):
    rows = load(path, config)
    types = by_type(rows)
    fig, axes = plt.subplots(len(types), 1, figsize=(10, 3.2 * len(types)), squeeze=False)
    for ax, (t, rs) in zip(axes[:, 0], types.items()):
        series = {"spmma": mean_by_shape(rs, "spmma_tflops"), "cuBLAS dense": mean_by_shape(rs, "cublas_tflops"),
                  "cuSPARSELt": mean_by_shape(rs, "cusparselt_tflops")}
        shapes = list(series["spmma"])
        width = 0.8 / len(series)
        for i, (name, vals) in enumerate(series.items()):
            xs = [j + (i - 1) * width for j, s in enumerate(shapes) if s in vals]
            ys = [vals[s] for s in shapes if s in vals]
            if ys:
                ax.bar(xs, ys, width, label=name, color=COLORS[name])
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(["x".join(map(str, s)) for s in shapes], rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("TFLOP/s (dense-eq.)")
        ax.set_title(f"{t}: M x N x K", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle("spmma against cuBLAS dense and cuSPARSELt (2·M·N·K / kernel time)", fontsize=11)
    fig.text(0.01, 0.005, caption(path, rows), fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.02, 1, 0.97))
    fig.savefig(out)


def vs_n(path, out, config, l2="", over="cublas", sequence=False):
    rows = load(path, config, l2)
    if sequence:  # the rates of the calls back to back (rows without them are left out)
        seq = []
        for r in rows:
            q = r.get("sequence") or {}
            if q.get("spmma_ms"):
                f = 2.0 * r["m"] * r["n"] * r["k"] / 1e9
                seq.append(dict(r, spmma_tflops=f / q["spmma_ms"],
                                cublas_tflops=f / q["cublas_ms"] if q.get("cublas_ms") else None,
                                cusparselt_tflops=f / q["cusparselt_ms"] if q.get("cusparselt_ms") else None))
        rows = seq
    peer_key, peer_name = {"cublas": ("cublas_tflops", "cuBLAS dense"),
                           "cusparselt": ("cusparselt_tflops", "cuSPARSELt")}[over]
    # Per type, per M x K, (N, speed-up) points; a type is drawn where some M x K has 3 N or more.
    panels = collections.OrderedDict()
    for t, rs in by_type(rows).items():
        sp, de = mean_by_shape(rs, "spmma_tflops"), mean_by_shape(rs, peer_key)
        lines = collections.defaultdict(list)
        for (m, n, k), v in sp.items():
            if (m, n, k) in de:
                lines[(m, k)].append((n, v / de[(m, n, k)]))
        if any(len(p) >= 3 for p in lines.values()):
            panels[t] = lines
    if not panels:
        raise SystemExit(f"{path}: no M x K with 3 or more N")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), squeeze=False, sharey=True)
    for ax, (t, lines) in zip(axes[0], panels.items()):
        for (m, k), pts in sorted(lines.items()):
            if len(pts) < 2:
                continue
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"M {m}, K {k}")
        ax.axhline(1.0, color="#7f7f7f", lw=1, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("N (tokens)")
        ax.set_title(t, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel(f"spmma / {peer_name}")
    what = "dense" if over == "cublas" else "cuSPARSELt"
    fig.suptitle(f"Speed-up over {what} against N, LLM linear shapes" + (f", {l2} L2" if l2 else "") +
                 (", layer after layer" if sequence else ""), fontsize=11)
    fig.text(0.01, 0.005, caption(path, rows), fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    fig.savefig(out)


# Bits per element of A/B and bytes per element of the bench's default D (bench_gpu.hpp's output_type).
BITS = {"bf16": 16, "f16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}
D_BYTES = {"bf16": 2, "f16": 2, "tf32": 4, "e4m3": 2, "e5m2": 2, "s8": 4, "u8": 4}


def intensity(r):
    """Dense-equivalent FLOP per byte: compressed A (half the values, 2 bits of metadata per kept
    value; tf32 1:2 keeps half with 4 bits each), B and D once each."""
    m, n, k, bits = r["m"], r["n"], r["k"], BITS[r["type"]]
    meta_bits = 4 if r["type"] == "tf32" else 2
    a = m * k / 2 * (bits + meta_bits) / 8
    return 2.0 * m * n * k / (a + k * n * bits / 8 + m * n * D_BYTES[r["type"]])


def roofline(path, out, config, peaks, bandwidth, source):
    rows = load(path, config)
    fig, ax = plt.subplots(figsize=(7, 4.6))
    xs = [intensity(r) for r in rows]
    ridge = min(peaks.values()) / bandwidth  # where the lowest roof turns flat
    lo, hi = min(min(xs), ridge) / 2, max(xs) * 2
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    cmap = plt.get_cmap("tab10")
    for i, t in enumerate(by_type(rows)):
        pts = [(intensity(r), r["spmma_tflops"]) for r in rows if r["type"] == t]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], color=cmap(i), s=18, zorder=3, label=f"{t} rows")
        if t in peaks:  # a roof only where its peak was measured
            ax.plot(grid, [min(peaks[t], bandwidth * x) for x in grid], color=cmap(i), lw=1.2,
                    label=f"{t} roof ({peaks[t]:.0f} TFLOP/s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (dense-equivalent FLOP / byte of compressed A, B, D)")
    ax.set_ylabel("TFLOP/s")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"spmma's rows under the roofs (bandwidth {bandwidth:.1f} TB/s)", fontsize=10)
    fig.text(0.01, 0.005, caption(path, rows) + "; roofs: " + source, fontsize=6, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=["peers", "vs-n", "roofline"])
    ap.add_argument("records")
    ap.add_argument("out")
    ap.add_argument("--config", default="")
    ap.add_argument("--l2", choices=["hot", "cold"], default="", help="keep the rows of one L2 mode (bench --l2)")
    ap.add_argument("--over", choices=["cublas", "cusparselt"], default="cublas", help="vs-n: the speed-up over whom")
    ap.add_argument("--sequence", action="store_true", help="vs-n: the times layer after layer (cold records)")
    ap.add_argument("--peak", action="append", default=[], metavar="TYPE=TFLOPS")
    ap.add_argument("--bandwidth", type=float, default=0.0, metavar="TB/S")
    ap.add_argument("--source", default="", help="where the peaks and the bandwidth were measured (caption)")
    a = ap.parse_args()
    if a.kind == "peers":
        peers(a.records, a.out, a.config)
    elif a.kind == "vs-n":
        vs_n(a.records, a.out, a.config, a.l2, a.over, a.sequence)
    else:
        if not a.peak or a.bandwidth <= 0 or not a.source:
            raise SystemExit("roofline: give --peak TYPE=TFLOPS (one per type), --bandwidth TB/S and --source")
        peaks = {p.split("=")[0]: float(p.split("=")[1]) for p in a.peak}
        roofline(a.records, a.out, a.config, peaks, a.bandwidth, a.source)


if __name__ == "__main__":
    main()
