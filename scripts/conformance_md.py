#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes docs/conformance.md from the JSON of `spmma conform --json-out FILE` alone: the device,
driver, runtime, spmma's version and commit, date and command come from the record's
`provenance` (since 2026-11-23); what a record does not hold is said to be missing, never
written by hand.

    python3 scripts/conformance_md.py docs/data/conformance-h100.json > docs/conformance.md
    python3 scripts/conformance_md.py docs/data/conformance-h100.json --check docs/conformance.md

--check exits 1 when the document is not what the record generates (CTest: conformance_doc).
"""
import collections
import json
import re
import sys

# How a record is made (the procedure; the command of a given run is in its provenance).
HOW = ("strip -o .devbin/spmma build/spmma   # on the CPU machine, after scripts/build.sh\n"
       "bash scripts/device-all.sh          # on the H100; its last step is\n"
       "spmma conform --json-out conform.json --write-verified verified_ids.inc")


def family(vid):
    m = re.match(r"(wgmma\.mma_async\.sp|mma\.sp::ordered_metadata|mma\.sp|mma)\.sync\.aligned\.(m\d+n\d+k\d+)\.(.*)", vid)
    fam, shape, rest = m.groups()
    rest = re.sub(r"^(row|col)\.(row|col)\.", "", rest)
    src = ""
    if rest.endswith(":rs") or rest.endswith(":ss"):
        src = " A in registers" if rest.endswith(":rs") else " A by descriptor"
        rest = rest[:-3]
    if fam.startswith("wgmma"):
        shape = re.sub(r"n\d+", "nN", shape)
    return fam, shape, rest + src


def generate(path):
    j = json.load(open(path))
    p = j.get("provenance")
    rows = [r for r in j["rows"] if not r["skipped"]]
    out = []
    w = out.append
    w("# Conformance on the H100\n")
    w("Every registry variant an H100 (sm_90) can execute ran on the hardware with random register")
    w("contents, and the GPU's D registers were compared with the emulator's (`spmma conform`, source")
    w("in `src/cuda/probe/`, probe kernels generated from the registry by `codegen/gen_spmma.cpp`).\n")
    if p:
        b = p.get("build", {})
        w(f"- **Device:** {j['device']} (sm_{j['compute_capability']}), driver {p.get('cuda_driver') or 'none'}, "
          f"CUDA runtime {p.get('cuda_runtime', '-')}")
        w(f"- **spmma:** {p.get('version')} (commit {p.get('commit')}), built with CUDA {b.get('cuda', '-')}")
    else:
        w(f"- **Device:** {j['device']} (sm_{j['compute_capability']}); driver, runtime and spmma's version: not in "
          "this record (it predates provenance)")
    w(f"- **Date:** {j['date']}")
    s = j["summary"]
    w(f"- **Result:** {s['variants']} variants, {s['trials']} trials, **{s['with_mismatches']} variants with mismatches**")
    w(f"- **Raw record:** [data/conformance-h100.json](data/conformance-h100.json)")
    if p:
        w(f"- **Command:** `{p.get('command')}` ({p.get('trials_per_selector')} trials per selector and input kind, "
          f"{p.get('wgmma_trials_per_selector')} for wgmma, seed {p.get('seed')})")
    w("- **How:**\n")
    w("```sh\n" + HOW + "\n```\n")
    w("The sm_120a forms (`.kind::f8f6f4`, block scaling) cannot run on an H100: ptxas assembles each of")
    w("them for sm_120a in CI (`ctest -R ptxas_sm_120a`) and the emulator runs them; `spmma variants`")
    w("marks them `emulated only`.\n")
    w("## How each variant is tried\n")
    w("For every valid sparsity selector, the runner draws fresh random inputs of these kinds (8 trials")
    w("each for warp-level forms, 2 for wgmma), poisons D, launches, and compares register by register:\n")
    w("| kind | inputs | passes when |")
    w("|---|---|---|")
    w("| exact | small integers (-3..3), so every sum is representable in the accumulator | D is bit-identical |")
    w("| general | random finite values (wide floats: uniform in ±2 scaled by 2^±4, tf32 with random low 13 bits; narrow floats: every finite pattern up to 16; integers: the full range) | integers bit-identical; floats within the bound below |")
    w("| specials | exact inputs, with Inf/NaN at random places in B (float sparse forms) | bit-identical, NaN matching NaN |")
    w("| unordered | exact inputs, every nibble with idx0 > idx1 (plain mma.sp, wgmma.sp) | bit-identical |")
    w("| onehot | a single 1 in A (one stored element), B rows 1 + k % 7: D shows which row the element met | bit-identical |")
    w("| swizzle128 | exact and general inputs again, A in the 128-byte swizzle layout (wgmma, A by descriptor) | as above |\n")
    w("Metadata in the lanes a selector does not name holds random bits in every trial. wgmma trials")
    w("draw `scale-d` at random (0 computes D = A·B).\n")
    w("**Error bound on general inputs** (largest accepted |gpu − emulator| / (Σ|a·b| + |c|)): 2^-19 for f32")
    w("accumulators, 2^-8 for f16, 2^-48 for f64, and 2^-9 for wgmma with fp8 inputs, whose accumulation on")
    w("the H100 is measurably coarser than f32 (largest error seen below). The emulator itself sums exactly")
    w("and rounds once; the spec leaves accumulation order and intermediate rounding open.\n")
    w("## Findings\n")
    for f in j["findings"]:
        w(f"- {f}")
    w("")
    w("## Summary by family\n")
    agg = collections.OrderedDict()
    for r in rows:
        k = family(r["id"])
        a = agg.setdefault(k, [0, 0, 0, 0.0])
        a[0] += 1
        a[1] += r["trials"]
        a[2] += r["mismatches"]
        a[3] = max(a[3], r["max_error"])
    w("| instruction | shape | types | variants | trials | mismatches | largest error (general) |")
    w("|---|---|---|---|---|---|---|")
    for (fam, shape, types), (n, t, m, e) in agg.items():
        w(f"| `{fam}` | {shape} | {types} | {n} | {t} | {m} | {e:.3g} |")
    w("")
    w("## Every variant\n")
    w("| variant | trials | mismatches | largest error (general) |")
    w("|---|---|---|---|")
    for r in rows:
        w(f"| `{r['id']}` | {r['trials']} | {r['mismatches']} | {r['max_error']:.3g} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    text = generate(sys.argv[1])
    if len(sys.argv) == 4 and sys.argv[2] == "--check":
        if open(sys.argv[3]).read() != text:
            sys.exit(f"{sys.argv[3]} is not what {sys.argv[1]} generates: run "
                     f"python3 scripts/conformance_md.py {sys.argv[1]} > {sys.argv[3]}")
    else:
        sys.stdout.write(text)
