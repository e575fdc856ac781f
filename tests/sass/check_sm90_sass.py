#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the sm90 kernel's machine code (cuobjdump -sass of a binary that holds it) for what the
main loop promises and ptxas could silently undo (issue 10, item 1; docs/layouts.md):

  unpromoted kernels  a window of W = kWindow stages (src/cuda/sm90/tiles.hpp): its 2W sparse
                      wgmmas in one block, their metadata registers all distinct and none written
                      while the block is pending, and W - 1 groups kept in flight (WARPGROUP.DEPBAR.LE
                      gsb0, W - 1) - where ptxas serialises instead (warning C7513: a non-wgmma
                      write of a wgmma input register while a group is pending) the block has a
                      wait after each group and this check fails; after the window's wait, the
                      stage's release a predicated arrival with no branch before it (a branch
                      around lane 0's arrival costs a convergence region per stage: 12.5 M
                      branch-unit instructions at bf16 8192^3 on the H100, docs/benchmarks.md);
  promoted kernels    2 sparse wgmmas per part (one stage's two K steps), a part as wide as the
                      tile up to 192 columns and half of it at 256; and 4 in one block on 4
                      distinct metadata registers (two stages per promotion, promotion_k = 256);
  every kernel        no local memory (spills); setmaxnreg to reg_split's registers (tiles.hpp:
                      24 / 240 for the promoted 256-wide kernels, whose producer then spilled as
                      one thread, 40 / 232 for the rest);
  decode kernels      (sm90/decode.cuh) no local memory either (ptxas spilled the fp8 ones under
                      tighter launch bounds), their mma.sp as HMMA.SP or IMMA.SP (Math::warps),
                      or QGMMA.SP.64xN at the tile width and no HMMA (Math::warpgroup, fp8), and
                      registers for kMaxCtasPerSm CTAs of kThreads per SM and kMaxIssuerCtasPerSm
                      of kMaxThreads (two producer warps per operand; sm90/decode_tiles.hpp), the
                      CTAs per SM the plan sizes their pipelines for; the fp8 ones of the warps'
                      math (80 at N = 16) for the latter only: the plan takes them only there.

Usage: check_sm90_sass.py CUOBJDUMP BINARY TILES_HPP"""
import os
import re
import subprocess
import sys

KERNEL = re.compile(r"spgemm_kernelILNS_8ElemTypeE(\d+)ELS2_(\d+)ELi(\d+)ELb([01])E")
FP8 = {5, 6}  # ElemType::e4m3, e5m2 (include/spmma/types.hpp)
DECODE = re.compile(r"decode_kernelILNS_8ElemTypeE(\d+)ELS3_(\d+)ELi(\d+)ELNS1_4MathE([01])ELb([01])EE")
GMMA = re.compile(r"\b([HQI]GMMA)\.SP\.64x(\d+)x\d+\S*\s+(.*)$")


def metadata(ins):
    """A sparse wgmma's metadata register: its last register operand (after D, A's register or
    the descriptors, C or RZ and the scale predicate)."""
    return re.findall(r"\bR\d+\b", GMMA.search(ins).group(3))[-1]


def functions(sass):
    name, body = None, []
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
        elif name:
            ins = re.sub(r"/\*.*?\*/", "", line).strip().rstrip(";").strip()
            if ins and not ins.startswith("."):
                body.append(ins)
    if name:
        yield name, body


def blocks(body):
    """The wgmma blocks: the instructions from a WARPGROUP.ARRIVE to the next DEPBAR, each with
    the index in `body` of that DEPBAR."""
    out, cur = [], None
    for k, ins in enumerate(body):
        if ins.startswith("WARPGROUP.ARRIVE"):
            cur = []
        elif cur is not None:
            cur.append(ins)
            if "WARPGROUP.DEPBAR" in ins:
                out.append((k, cur))
                cur = None
    return out


def check(name, body, block_n, promoted, w, split, lean_n):
    errors = []
    if any(re.search(r"\b(LDL|STL)\b", i) for i in body):
        errors.append("local memory (spills)")
    want_split = split[promoted and block_n == lean_n]
    dealloc = [int(x, 16) for i in body for x in re.findall(r"USETMAXREG\.DEALLOC\.CTAPOOL (0x[0-9a-f]+)", i)]
    alloc = [int(x, 16) for i in body for x in re.findall(r"USETMAXREG\.TRY_ALLOC\.CTAPOOL \S+, (0x[0-9a-f]+)", i)]
    if (sorted(set(dealloc)), sorted(set(alloc))) != ([want_split[0]], [want_split[1]]):
        errors.append(f"setmaxnreg to {dealloc} / {alloc} where reg_split has {want_split[0]} / {want_split[1]}")
    ends = [(k, b) for k, b in blocks(body) if any(GMMA.search(i) for i in b)]
    bl = [b for _, b in ends]
    if not bl:
        return errors + ["no sparse wgmma block"]
    # The plain epilogue inside D (sm90/epilogue.cuh, plain_inside): for f32 sums (HGMMA, QGMMA),
    # 16-bit D through one stmatrix per 16 x 16 of D (row-major whole lines: two per 8 rows x 64
    # columns; runs of 8: one per block), in 8 straight-line instantiations (2 layouts x bf16/f16 x
    # ReLU or not), the Lean kernels (promoted, 256 wide) included; none for integer sums.
    stsm = sum(1 for i in body if i.startswith("STSM.16.M88.4") or i.startswith("STSM.16.MT88.4"))
    kind = next(GMMA.search(i).group(1) for b in bl for i in b if GMMA.search(i))
    want = 0 if kind == "IGMMA" else 8 * block_n // 16
    if stsm != want:
        errors.append(f"{stsm} stmatrix (STSM.16.M88.4 / MT88.4) where the plain epilogue inside D has {want}")
    if promoted:
        part = block_n // 2 if block_n > 192 else block_n
        ok = [b for b in bl if [int(GMMA.search(i).group(2)) for i in b if GMMA.search(i)] == [part, part]]
        if not ok:
            errors.append(f"no stage of two 64x{part} sparse wgmmas")
        # Two stages per promotion (PlanOptions::promotion_k = 256): their four wgmmas in one
        # block on four distinct metadata registers (ptxas serialising them would put a wait
        # after each group).
        two = [b for b in bl if [int(GMMA.search(i).group(2)) for i in b if GMMA.search(i)] == [part] * 4]
        if not two:
            errors.append(f"no two stages of four 64x{part} sparse wgmmas in one block")
        elif not any(len({metadata(i) for i in b if GMMA.search(i)}) == 4 for b in two):
            errors.append("the two stages' wgmmas share a metadata register")
        return errors
    window, end = None, None
    for k, b in ends:
        gm = [i for i in b if GMMA.search(i)]
        if len(gm) == 2 * w and b[-1].endswith(f"gsb0, {w - 1:#x}"):
            window, end = b, k
    if window is None:
        seen = ", ".join(f"{sum(1 for i in b if GMMA.search(i))} wgmmas then {b[-1]}" for b in bl[:4])
        return errors + [f"no window of {2 * w} sparse wgmmas with {w - 1} group(s) in flight "
                         f"(DEPBAR.LE gsb0, {w - 1:#x}); blocks: {seen}"]
    meta = [metadata(i) for i in window if GMMA.search(i)]
    if len(set(meta)) != 2 * w:
        errors.append(f"metadata registers not distinct across the window: {meta}")
    # Between the window's first wgmma and its last wait nothing may write a metadata register
    # (the hardware reads it when the wgmma executes); descriptor arithmetic may run there.
    first = next(k for k, i in enumerate(window) if GMMA.search(i))
    for i in window[first:]:
        if GMMA.search(i):
            continue
        parts = i.split(None, 1)
        dst = parts[1].split(",")[0].strip() if len(parts) > 1 else ""
        if dst in meta:
            errors.append(f"'{i}' writes metadata register {dst} while the window's wgmmas are pending")
    # The first slot's release after the window's wait: lane 0's arrival, predicated, no branch first.
    for i in body[end + 1:]:
        if "SYNCS.ARRIVE" in i:
            if not i.startswith("@"):
                errors.append(f"the stage's release '{i}' is not predicated: every lane would arrive")
            break
        if re.search(r"\b(BRA|BSSY|BSYNC)\b", i):
            errors.append(f"'{i}' before the stage's release: a branch around lane 0's arrival")
            break
    else:
        errors.append("no arrival after the window's wait")
    return errors


def decode_reg_limit(tiles_hpp):
    """Registers per thread with which kMaxCtasPerSm decode CTAs of kThreads fit an SM's 64 K
    (allocated per warp in units of 256: multiples of 8 per thread), from decode_tiles.hpp beside
    tiles.hpp: its integer constants (constexpr int A = expr, B = expr;) evaluated in order, those
    that name another header's constants (gemm::...) left out."""
    text = open(os.path.join(os.path.dirname(tiles_hpp), "decode_tiles.hpp")).read()
    env = {}
    for decl in re.findall(r"^constexpr int (k\w+ = [^;{]+);", text, re.M):
        for name, expr in re.findall(r"(k\w+) = ([^,]+)", decl):
            if "::" not in expr:
                env[name] = int(eval(expr.replace("/", "//"), {"__builtins__": {}}, env))
    for name in ("kThreads", "kMaxCtasPerSm", "kMaxThreads", "kMaxIssuerCtasPerSm"):
        if name not in env:
            sys.exit(f"no {name} in decode_tiles.hpp beside {tiles_hpp}")
    limit = lambda threads, ctas: 65536 // (threads * ctas) // 8 * 8
    few = limit(env["kMaxThreads"], env["kMaxIssuerCtasPerSm"])
    return (min(limit(env["kThreads"], env["kMaxCtasPerSm"]), few),
            f'{env["kMaxCtasPerSm"]} CTAs of {env["kThreads"]} threads or {env["kMaxIssuerCtasPerSm"]} of {env["kMaxThreads"]}',
            few, f'{env["kMaxIssuerCtasPerSm"]} CTAs of {env["kMaxThreads"]} threads')


def registers(cuobjdump, binary, env):
    """Registers per thread of each function (cuobjdump -res-usage)."""
    r = subprocess.run([cuobjdump, "-res-usage", "-arch", "sm_90a", binary], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{cuobjdump} -res-usage {binary} failed: {r.stderr.strip()}")
    return dict(re.findall(r"Function (\S+):\s*\n\s*REG:(\d+)", r.stdout))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tiles = open(sys.argv[3]).read()
    m = re.search(r"constexpr int kWindow = (\d+);", tiles)
    if not m:
        sys.exit(f"no 'constexpr int kWindow = N;' in {sys.argv[3]}")
    w = int(m.group(1))
    m = re.search(r"RegSplit\{(\d+), (\d+)\} : RegSplit\{(\d+), (\d+)\}", tiles)
    if not m:
        sys.exit(f"no 'lean ? RegSplit{{P, C}} : RegSplit{{P, C}}' in {sys.argv[3]}")
    split = {True: (int(m.group(1)), int(m.group(2))), False: (int(m.group(3)), int(m.group(4)))}
    # The Lean kernels (their split: the first of the two), as tiles.hpp's lean_kernel names them.
    m = re.search(r"lean_kernel\(int block_n, bool promoted\) \{ return promoted && block_n == (\d+); \}", tiles)
    if not m:
        sys.exit(f"no 'lean_kernel(...) {{ return promoted && block_n == N; }}' in {sys.argv[3]}")
    lean_n = int(m.group(1))
    # cuobjdump runs nvdisasm, found on PATH: the one beside it first (PyPI's wheels, .tools/).
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(sys.argv[1])) + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run([sys.argv[1], "-sass", "-arch", "sm_90a", sys.argv[2]], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{sys.argv[1]} -sass {sys.argv[2]} failed: {r.stderr.strip()}")
    seen, failed = set(), 0
    for name, body in functions(r.stdout):
        m = KERNEL.search(name)
        if not m or name in seen:
            continue
        seen.add(name)
        a, b, block_n, promoted = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) == "1"
        errors = check(name, body, block_n, promoted, w, split, lean_n)
        label = f"ElemType {a} x {b}, tile 128x{block_n}, {'promoted' if promoted else 'window'}"
        if errors:
            failed += 1
            print(f"FAIL {label}: " + "; ".join(errors))
    if not seen:
        sys.exit(f"no sm90 spgemm_kernel in {sys.argv[2]}: nothing checked")
    decode = set()
    reg_limit, per_sm, fp8_limit, fp8_per_sm = decode_reg_limit(sys.argv[3])
    regs = registers(sys.argv[1], sys.argv[2], env)
    for name, body in functions(r.stdout):
        m = DECODE.search(name)
        if not m or name in decode:
            continue
        decode.add(name)
        errors = [f"'{i}': local memory" for i in body if re.match(r"(@!?U?P\d+\s+)?(LDL|STL)\b", i)][:1]
        wg = m.group(4) == "1"  # Math::warpgroup
        if wg:
            if not any(re.match(rf"QGMMA\.SP\.64x{m.group(3)}x", i) for i in body):
                errors.append(f"no QGMMA.SP.64x{m.group(3)}")
            if any(re.match(r"HMMA", i) for i in body):
                errors.append("HMMA: fp8 converted to f16")
        elif not any(re.match(r"[HI]MMA\.SP\b", i) for i in body):
            errors.append("no HMMA.SP / IMMA.SP")
        if name not in regs:
            errors.append("no register count (cuobjdump -res-usage)")
        else:
            # fp8 on the warps' math runs only where at most kMaxIssuerCtasPerSm CTAs share an SM
            # (heuristics.cu, decode_math); every other decode kernel also where kMaxCtasPerSm do.
            fp8_warps = not wg and int(m.group(1)) in FP8
            lim, what = (fp8_limit, fp8_per_sm) if fp8_warps else (reg_limit, per_sm)
            if int(regs[name]) > lim:
                errors.append(f"{regs[name]} registers per thread: fewer than {what} per SM (at most {lim})")
        if errors:
            failed += 1
            print(f"FAIL decode kernel ElemType {m.group(1)} x {m.group(2)}, tile {64 if wg else 32}x{m.group(3)}"
                  f"{', split K' if m.group(5) == '1' else ''}: " + "; ".join(errors))
    if not decode:
        sys.exit(f"no sm90 decode_kernel in {sys.argv[2]}: nothing checked")
    print(f"{len(seen)} sm90 kernels checked (window of {w} stage(s)), {len(decode)} decode kernels, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
