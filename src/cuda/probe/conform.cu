// SPDX-License-Identifier: BSD-3-Clause
// Conformance runner: random register contents through the generated probes, compared with
// the emulator register by register.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "device_buffer.cuh"
#include "probe/probe.cuh"
#include "spmma/conform.hpp"
#include "spmma/emulate.hpp"
#include "spmma/error.hpp"

namespace spmma::conform {
namespace {

using isa::Variant;

using cuda::check;
using cuda::DeviceBuffer;

enum class TrialKind { exact, general, specials, unordered, onehot };

const char* kind_name(TrialKind k) {
  switch (k) {
    case TrialKind::exact: return "exact";
    case TrialKind::general: return "general";
    case TrialKind::specials: return "specials";
    case TrialKind::unordered: return "unordered";
    case TrialKind::onehot: return "onehot";
  }
  return "?";
}

// Rewrites the nibbles of the lanes the selector reads so that idx0 < idx1 (ordered) or
// idx0 > idx1 (unordered) in every chunk; tf32 nibbles (0x4 / 0xE) are left alone.
void set_nibble_order(const Variant& v, emu::WarpState& s, bool ordered) {
  if (v.meta->pattern == Pattern::p1_2) return;
  for (int lane = 0; lane < v.threads(); ++lane) {
    if (!v.meta->at(lane, 0, s.selector)) continue;
    uint32_t e = 0;
    for (int n = 0; n < 8; ++n) {
      const uint32_t nib = (s.e[lane] >> (4 * n)) & 0xF, i0 = nib & 3, i1 = nib >> 2;
      const bool swap = ordered ? i0 > i1 : i0 < i1;
      e |= (swap ? (i1 | i0 << 2) : nib) << (4 * n);
    }
    s.e[lane] = e;
  }
}

struct Trial {
  emu::WarpState state;
  TrialKind kind;
};

// ---------------------------------------------------------------- wgmma shared-memory images

// The canonical K-major layout without swizzle: 8-row x 16-byte core matrices, each 128
// contiguous bytes; core matrices adjacent in K are `lbo` apart, 8-row groups `sbo` apart.
struct KMajorLayout {
  int rows, kbytes, lbo, sbo;
  size_t bytes() const { return static_cast<size_t>(rows) * kbytes; }
  size_t offset(int row, int kbyte) const {
    return static_cast<size_t>(row / 8) * sbo + static_cast<size_t>(kbyte / 16) * lbo + (row % 8) * 16 + kbyte % 16;
  }
};

KMajorLayout kmajor(int rows, int kbytes) { return {rows, kbytes, 128, kbytes / 16 * 128}; }

// element (row, k) of a K-major operand: A is row-major (row = m), B is read as (n, k).
void write_image(std::vector<uint8_t>& img, const KMajorLayout& L, int elem_bits, int row, int k, uint64_t bits) {
  const int bytes = elem_bits / 8;
  const size_t off = L.offset(row, k * bytes);
  for (int i = 0; i < bytes; ++i) img[off + i] = static_cast<uint8_t>(bits >> (8 * i));
}


// ---------------------------------------------------------------- comparison

struct Verdict {
  bool ok = true;
  double error = 0.0;
  std::string what;
};

// The largest |gpu - emulator| / (Σ|a·b| + |c|) accepted on general inputs, where the spec leaves
// accumulation order and rounding open: a few units in the last place of the accumulator.
// Hopper's fp8 wgmma accumulates with fewer bits than f32 (measured on the H100, docs/conformance.md).
double error_bound(const Variant& v) {
  const bool fp8 = v.a == ElemType::e4m3 || v.a == ElemType::e5m2;
  if (v.d == ElemType::f16) return std::ldexp(1.0, -8);
  if (v.d == ElemType::f64) return std::ldexp(1.0, -48);
  if (v.wgmma() && fp8) return std::ldexp(1.0, -9);
  return std::ldexp(1.0, -19);
}

bool same_special(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return x == y;
}

Verdict compare(const Variant& v, const Trial& t, const std::vector<uint64_t>& gpu, size_t offset) {
  Verdict r;
  const std::vector<uint64_t> want = emu::execute(v, t.state);
  const Matrix dg = emu::gather_d(v, std::vector<uint64_t>(gpu.begin() + offset, gpu.begin() + offset + want.size()));
  const Matrix de = emu::gather_d(v, want);
  // Scale of the rounding error: Σ|a·b| + |c| per element.
  const emu::MatrixOperands ops = emu::gather(v, t.state);
  const Matrix a = emu::dense_a(v, ops);
  const bool exact_kind = v.d == ElemType::s32 || v.bitop != isa::BitOp::none || t.kind != TrialKind::general;
  for (int64_t i = 0; i < de.rows; ++i)
    for (int64_t j = 0; j < de.cols; ++j) {
      const uint64_t g = dg.at(i, j), e = de.at(i, j);
      if (g == e) continue;
      const double x = decode(v.d, g), y = decode(v.d, e);
      if (exact_kind) {
        if (t.kind == TrialKind::specials && same_special(x, y)) continue;
        if (r.ok) {
          std::ostringstream s;
          s << "D[" << i << "][" << j << "] gpu " << x << " emulator " << y;
          r.what = s.str();
        }
        r.ok = false;
        continue;
      }
      double mag = 0.0;
      const int p = static_cast<int>(i / v.m);
      for (int k = 0; k < v.k; ++k)
        mag += std::fabs(a.value(i, k) * ops.b.value(static_cast<int64_t>(p) * v.k + k, j));
      if (ops.accumulate) mag += std::fabs(ops.c.value(i, j));
      const double err = (std::isfinite(x) && std::isfinite(y)) ? std::fabs(x - y) / std::max(mag, 1e-300) : INFINITY;
      r.error = std::max(r.error, err);
      // The spec leaves accumulation order and rounding open: accept what a sum of the
      // accumulator's precision could produce (a few units of its last place at the
      // magnitude of the terms).
      const double bound = error_bound(v);
      if (err > bound) {
        if (r.ok) {
          std::ostringstream s;
          s << "D[" << i << "][" << j << "] gpu " << x << " emulator " << y << " (error " << err << ")";
          r.what = s.str();
        }
        r.ok = false;
      }
    }
  return r;
}

// ---------------------------------------------------------------- trials

// A single non-zero (1) in A and a distinct small value per row of B (1 + k % 7; k % 2 for b1):
// D's row then shows which B row the one stored element met, so a misplaced lane, register,
// slot or metadata index moves the result to another row or value.
void make_onehot(const Variant& v, emu::WarpState& s, std::mt19937_64& rng) {
  const bool by_desc = v.wgmma() && v.a_source == isa::ASource::descriptor;
  Matrix a = by_desc ? s.a_smem : emu::gather(v, s).a_sparse ? emu::gather(v, s).a_sparse->values : emu::gather(v, s).a;
  for (auto& x : a.bits) x = 0;
  a.bits[rng() % a.bits.size()] = encode(v.a, 1.0);
  if (by_desc) s.a_smem = a;
  else s.a = emu::scatter(v, v.fa, a);
  Matrix b = v.wgmma() ? s.b_smem : emu::gather(v, s).b;
  for (int64_t k = 0; k < b.rows; ++k)
    for (int64_t n = 0; n < b.cols; ++n)
      b.at(k, n) = encode(v.b, v.b == ElemType::b1 ? static_cast<double>((k % v.k) % 2) : 1.0 + static_cast<double>((k % v.k) % 7));
  if (v.wgmma()) s.b_smem = b;
  else s.b = emu::scatter(v, v.fb, b);
}

std::vector<Trial> make_trials(const Variant& v, const Options& o, std::mt19937_64& rng) {
  std::vector<Trial> trials;
  const int per = v.wgmma() ? o.wgmma_trials_per_selector : o.trials_per_selector;
  std::vector<int> selectors{0};
  if (v.sparse()) {
    selectors.clear();
    for (int s = 0; s < 4; ++s)
      if (v.meta->selector_valid(s)) selectors.push_back(s);
  }
  const bool float_sparse = v.sparse() && v.d != ElemType::s32;
  const bool unordered_ok = v.sparse() && !v.meta->ordered && v.meta->pattern != Pattern::p1_2;
  for (int s : selectors)
    for (TrialKind kind : {TrialKind::exact, TrialKind::general, TrialKind::specials, TrialKind::unordered,
                           TrialKind::onehot}) {
      if (kind == TrialKind::specials && !float_sparse) continue;
      if (kind == TrialKind::unordered && !unordered_ok) continue;
      for (int i = 0; i < per; ++i) {
        Trial t{emu::random_state(v, rng, kind == TrialKind::general ? emu::Inputs::general : emu::Inputs::exact,
                                  v.sparse() ? std::optional<int>(s) : std::nullopt),
                kind};
        // Ordered nibbles everywhere but in the trials that ask the unordered question.
        if (v.sparse()) set_nibble_order(v, t.state, kind != TrialKind::unordered);
        if (v.wgmma()) t.state.scale_d = (rng() & 3) != 0;
        if (kind == TrialKind::onehot) make_onehot(v, t.state, rng);
        if (kind == TrialKind::specials) {
          // Inf and NaN in B: where A's metadata names the row they must reach D (a stored
          // zero times Inf is NaN); where it does not, the hardware never reads them.
          // Only true Inf and NaN (e4m3 has no Inf: NaN alone), never a large finite stand-in.
          const bool has_inf = type_info(v.b).has_inf;
          auto special = [&] {
            const double x = has_inf ? (rng() % 3 == 0 ? NAN : (rng() & 1 ? INFINITY : -INFINITY)) : NAN;
            return encode(v.b, x, Overflow::to_inf_or_nan);
          };
          if (v.wgmma()) {
            for (auto& x : t.state.b_smem.bits)
              if (rng() % 8 == 0) x = special();
          } else {
            Matrix b = emu::gather(v, t.state).b;
            for (auto& x : b.bits)
              if (rng() % 8 == 0) x = special();
            t.state.b = emu::scatter(v, v.fb, b);
          }
        }
        trials.push_back(std::move(t));
      }
    }
  return trials;
}

// How one launch lays out wgmma's shared-memory operands.
struct SmemPlan {
  int descriptor_mode = 0;  // 1: the descriptor's two byte offsets read the other way round
  bool swizzle_a = false;   // A in the 128-byte swizzle layout, at a random 32-byte K step
};

const probe::ProbeEntry* find_probe(const std::string& id) {
  for (int i = 0; i < probe::kProbeCount; ++i)
    if (id == probe::kProbes[i].id) return &probe::kProbes[i];
  return nullptr;
}

// Runs the probe over the trials and returns every lane's D registers, trial after trial.
std::vector<uint64_t> launch(const Variant& v, const probe::ProbeEntry& e, const std::vector<Trial>& trials,
                             const SmemPlan& plan, std::mt19937_64& rng) {
  const int n = static_cast<int>(trials.size());
  const bool a_regs = !v.wgmma() || v.a_source == isa::ASource::registers;
  std::vector<uint64_t> ha, hb, hc;
  std::vector<uint32_t> he, hsel, hscale, hoff;
  std::vector<uint8_t> img_a, img_b;
  probe::ProbeArgs args;
  KMajorLayout la{}, lb{};
  constexpr int kSwizzleRowBytes = 128, kSwizzleAtomBytes = 1024;
  if (v.wgmma()) {
    la = kmajor(v.m, v.packed_k() * memory_bits(v.a) / 8);
    lb = kmajor(v.n, v.k * memory_bits(v.b) / 8);
    args.smem_a_bytes = a_regs ? 0 : static_cast<uint32_t>(plan.swizzle_a ? v.m * kSwizzleRowBytes : la.bytes());
    args.smem_b_bytes = static_cast<uint32_t>(lb.bytes());
    const bool swap = plan.descriptor_mode == 1;
    args.lbo_a = swap ? la.sbo : la.lbo, args.sbo_a = swap ? la.lbo : la.sbo;
    args.lbo_b = swap ? lb.sbo : lb.lbo, args.sbo_b = swap ? lb.lbo : lb.sbo;
    if (plan.swizzle_a) args.lbo_a = 16, args.sbo_a = kSwizzleAtomBytes, args.swizzle_a = 1;
  }
  for (const Trial& t : trials) {
    const auto& s = t.state;
    if (a_regs) ha.insert(ha.end(), s.a.begin(), s.a.end());
    hb.insert(hb.end(), s.b.begin(), s.b.end());
    hc.insert(hc.end(), s.c.begin(), s.c.end());
    if (v.sparse()) he.insert(he.end(), s.e.begin(), s.e.end());
    hsel.push_back(static_cast<uint32_t>(s.selector));
    hscale.push_back(s.scale_d ? 1u : 0u);
    if (!v.wgmma()) continue;
    const int ab = memory_bits(v.a) / 8;
    if (!a_regs && !plan.swizzle_a) {
      std::vector<uint8_t> img(la.bytes(), 0);
      for (int r = 0; r < v.m; ++r)
        for (int k = 0; k < v.packed_k(); ++k) write_image(img, la, memory_bits(v.a), r, k, s.a_smem.at(r, k));
      img_a.insert(img_a.end(), img.begin(), img.end());
      hoff.push_back(0);
    } else if (!a_regs) {
      // 128B swizzle: rows of 128 bytes, 16-byte chunk c of row r stored at chunk c ^ (r % 8).
      // The trial's 32 bytes per row sit at K step j; the other steps hold random bytes, and the
      // descriptor starts 32·j bytes into the atom, as a kernel walking K would advance it.
      std::vector<uint8_t> img(static_cast<size_t>(v.m) * kSwizzleRowBytes);
      for (auto& x : img) x = static_cast<uint8_t>(rng());
      const int j = static_cast<int>(rng() % 4);
      for (int r = 0; r < v.m; ++r)
        for (int k = 0; k < v.packed_k(); ++k)
          for (int b = 0; b < ab; ++b) {
            const int kbyte = 32 * j + k * ab + b;
            const size_t off = static_cast<size_t>(r / 8) * kSwizzleAtomBytes + (r % 8) * kSwizzleRowBytes +
                               static_cast<size_t>(((kbyte / 16) ^ (r % 8)) * 16 + kbyte % 16);
            img[off] = static_cast<uint8_t>(s.a_smem.at(r, k) >> (8 * b));
          }
      img_a.insert(img_a.end(), img.begin(), img.end());
      hoff.push_back(static_cast<uint32_t>(32 * j));
    }
    std::vector<uint8_t> img(lb.bytes(), 0);
    for (int k = 0; k < v.k; ++k)
      for (int nn = 0; nn < v.n; ++nn) write_image(img, lb, memory_bits(v.b), nn, k, s.b_smem.at(k, nn));
    img_b.insert(img_b.end(), img.begin(), img.end());
  }
  DeviceBuffer<uint64_t> da(ha), db(hb), dc(hc);
  DeviceBuffer<uint32_t> de(he), dsel(hsel), dscale(hscale), doff(hoff);
  DeviceBuffer<uint8_t> dia(img_a), dib(img_b);
  DeviceBuffer<uint64_t> dd(static_cast<size_t>(n) * v.threads() * v.fd.regs, 0xA5);  // poison
  args.a = da.ptr, args.b = db.ptr, args.c = dc.ptr, args.e = de.ptr, args.sel = dsel.ptr, args.scale_d = dscale.ptr;
  args.a_offset = doff.ptr;
  args.d = dd.ptr;
  args.trials = n;
  args.smem_a = dia.ptr, args.smem_b = dib.ptr;
  e.launch(args, std::min(n, 256));
  check(cudaGetLastError(), ("launch of probe for " + v.id).c_str());
  check(cudaDeviceSynchronize(), ("probe for " + v.id).c_str());
  return dd.download();
}

// Compares every trial with the emulator on all cores (the emulator is the slow part) and
// adds the verdicts to the row.
void judge(const Variant& v, const std::vector<Trial>& trials, const std::vector<uint64_t>& gpu, const char* tag,
           Row& row) {
  const int n = static_cast<int>(trials.size());
  const size_t per_trial = static_cast<size_t>(v.threads()) * v.fd.regs;
  std::vector<Verdict> verdicts(static_cast<size_t>(n));
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  const unsigned workers = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        try {
          verdicts[static_cast<size_t>(i)] = compare(v, trials[static_cast<size_t>(i)], gpu, static_cast<size_t>(i) * per_trial);
        } catch (const std::exception& ex) {
          verdicts[static_cast<size_t>(i)] = Verdict{false, 0.0, std::string("emulator: ") + ex.what()};
        }
      }
    });
  for (auto& t : pool) t.join();
  for (int i = 0; i < n; ++i) {
    const Verdict& vd = verdicts[static_cast<size_t>(i)];
    const TrialKind kind = trials[static_cast<size_t>(i)].kind;
    const std::string name = tag ? tag : kind_name(kind);
    ++row.trials;
    if (kind != TrialKind::general) ++row.exact_trials;
    auto& tally = row.by_kind[name];
    ++tally.first;
    tally.second += !vd.ok;
    row.max_error = std::max(row.max_error, vd.error);
    if (!vd.ok) {
      if (row.mismatches == 0)
        row.note = "trial " + std::to_string(i) + " (selector " + std::to_string(trials[static_cast<size_t>(i)].state.selector) +
                   ", " + name + " inputs): " + vd.what;
      ++row.mismatches;
    }
  }
}

Row run_variant(const Variant& v, const probe::ProbeEntry& e, const Options& o, int descriptor_mode,
                std::mt19937_64& rng) {
  Row row;
  row.id = v.id;
  const std::vector<Trial> trials = make_trials(v, o, rng);
  judge(v, trials, launch(v, e, trials, SmemPlan{descriptor_mode, false}, rng), nullptr, row);
  if (v.wgmma() && v.a_source == isa::ASource::descriptor) {
    // The same kind of inputs again with A in the 128-byte swizzle layout.
    std::vector<Trial> sw;
    for (const Trial& t : trials)
      if (t.kind == TrialKind::exact || t.kind == TrialKind::general) sw.push_back(t);
    judge(v, sw, launch(v, e, sw, SmemPlan{descriptor_mode, true}, rng), "swizzle128", row);
  }
  return row;
}

// mma.sp against the dense mma of the same shape on the decompressed A, on the GPU alone:
// counts the general-input trials whose D differs in any bit.
void compare_dense_twin(const Variant& v, const Options& o, std::mt19937_64& rng, std::map<std::string, std::pair<int, int>>& tally) {
  if (!v.sparse() || v.wgmma()) return;
  std::string twin_id = v.id;
  for (const char* pre : {"mma.sp::ordered_metadata.", "mma.sp."})
    if (twin_id.rfind(pre, 0) == 0) twin_id = "mma." + twin_id.substr(std::string(pre).size());
  const Variant* twin = isa::find_variant(twin_id);
  const probe::ProbeEntry* pe = find_probe(v.id);
  const probe::ProbeEntry* te = twin ? find_probe(twin->id) : nullptr;
  if (!twin || !pe || !te) return;
  std::vector<Trial> sparse, dense;
  for (int i = 0; i < o.trials_per_selector; ++i) {
    Trial t{emu::random_state(v, rng, emu::Inputs::general, std::nullopt), TrialKind::general};
    set_nibble_order(v, t.state, true);
    const emu::MatrixOperands ops = emu::gather(v, t.state);
    emu::WarpState d;
    d.a = emu::scatter(*twin, twin->fa, emu::dense_a(v, ops));
    d.b = emu::scatter(*twin, twin->fb, ops.b);
    d.c = emu::scatter(*twin, twin->fc, ops.c);
    sparse.push_back(t);
    dense.push_back(Trial{d, TrialKind::general});
  }
  const auto ds = launch(v, *pe, sparse, {}, rng), dd = launch(*twin, *te, dense, {}, rng);
  const size_t per = static_cast<size_t>(32) * v.fd.regs;
  auto& x = tally[v.id + " vs " + twin->id];
  for (size_t i = 0; i < sparse.size(); ++i) {
    ++x.first;
    x.second += !std::equal(ds.begin() + i * per, ds.begin() + (i + 1) * per, dd.begin() + i * per);
  }
}

// Answers to the open layout questions, read off the rows (docs/layouts.md cites them).
void add_findings(Report& rep) {
  struct Tally { int trials = 0, bad = 0, variants = 0; };
  std::map<std::string, Tally> t;
  auto add = [&](const std::string& key, int trials, int bad) {
    auto& x = t[key];
    x.trials += trials, x.bad += bad, ++x.variants;
  };
  for (const Row& r : rep.rows) {
    if (r.skipped) continue;
    const Variant& v = isa::variant_or_throw(r.id);
    for (const auto& [kind, tb] : r.by_kind) {
      if (kind == "unordered") add(v.wgmma() ? "unordered_wgmma" : "unordered_mma_sp", tb.first, tb.second);
      if (kind == "specials") add(v.wgmma() ? "specials_wgmma" : "specials_mma_sp", tb.first, tb.second);
      if (kind == "swizzle128") add("swizzle128", tb.first, tb.second);
      if (kind == "onehot") add("onehot", tb.first, tb.second);
    }
    if (v.sparse() && v.meta->lanes_per_group < 4) add("unselected_lanes", r.trials, r.mismatches);
    if (v.a == ElemType::tf32 && r.by_kind.count("general")) add("tf32_low_bits", r.by_kind.at("general").first, r.by_kind.at("general").second);
  }
  auto say = [&](const char* key, const std::string& yes, const std::string& no) {
    if (!t.count(key)) return;
    const Tally& x = t[key];
    rep.findings.push_back((x.bad == 0 ? yes : no) + " (" + std::to_string(x.variants) + " variants, " +
                           std::to_string(x.trials) + " trials, " + std::to_string(x.bad) + " with mismatches)");
  };
  say("unordered_mma_sp", "plain mma.sp accepts unordered nibbles: stored element 0 goes to idx0, element 1 to idx1",
      "plain mma.sp does NOT follow the idx0/idx1 rule for unordered nibbles");
  say("unordered_wgmma", "wgmma.mma_async.sp accepts unordered nibbles like plain mma.sp",
      "wgmma.mma_async.sp does NOT follow the idx0/idx1 rule for unordered nibbles");
  say("specials_mma_sp", "mma.sp: Inf/NaN in B at positions the metadata does not name never reach D; at a stored zero they give NaN",
      "mma.sp: Inf/NaN in B at unnamed positions DO reach D, or stored zeros do not give NaN");
  say("specials_wgmma", "wgmma.mma_async.sp: Inf/NaN in B at positions the metadata does not name never reach D",
      "wgmma.mma_async.sp: Inf/NaN in B at unnamed positions DO reach D");
  say("unselected_lanes", "metadata in lanes the selector does not name is ignored (those lanes held random bits)",
      "metadata in unselected lanes is NOT ignored, or another mismatch hides the answer");
  say("swizzle128", "wgmma.sp A by descriptor in the 128-byte swizzle layout: each instruction reads 32 bytes per row; "
      "advancing the descriptor's start address by 32 bytes moves to the next K step inside the swizzle atom",
      "wgmma.sp A with 128-byte swizzle does NOT read as modelled (32-byte K steps inside the atom)");
  say("onehot", "one-hot trials (a single 1 in A, B rows 1 + k % 7) agree with the emulator for every layout",
      "one-hot trials disagree with the emulator");
  say("tf32_low_bits", "tf32 operands: the low 13 bits of each 32-bit register are ignored",
      "tf32 operands: the low 13 bits are NOT simply ignored");
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

bool gpu_available(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? std::string("no CUDA GPU usable: ") + cudaGetErrorString(e) : "no CUDA GPU found";
    return false;
  }
  return true;
}

Report run(const Options& o) {
  std::string why;
  if (!gpu_available(&why)) fail(Status::not_supported, why);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  Report rep;
  rep.device = prop.name;
  rep.compute_capability = prop.major * 10 + prop.minor;
  rep.date = utc_now();
  std::mt19937_64 rng(o.seed);
  int descriptor_mode = -1;  // settled by the first wgmma probe with A by descriptor
  std::map<std::string, std::pair<int, int>> twins;
  auto selected = [&o](const probe::ProbeEntry& e) {
    return o.filter.empty() || std::string(e.id).find(o.filter) != std::string::npos;
  };
  size_t total = 0, done = 0;  // for the caller's progress line: "[done + 1/total]"
  for (int i = 0; i < probe::kProbeCount; ++i) total += selected(probe::kProbes[i]);
  if (o.on_begin) o.on_begin(rep);
  auto add = [&](Row r) {
    rep.rows.push_back(std::move(r));
    if (o.on_row) o.on_row(rep.rows.back());
  };
  for (int i = 0; i < probe::kProbeCount; ++i) {
    const probe::ProbeEntry& e = probe::kProbes[i];
    if (!selected(e)) continue;
    if (o.on_start) o.on_start(done, total, e.id);
    ++done;
    const Variant& v = isa::variant_or_throw(e.id);
    if (!v.target.runs_on(rep.compute_capability)) {
      Row r;
      r.id = v.id;
      r.skipped = true;
      r.note = "needs " + v.target.name();
      add(std::move(r));
      continue;
    }
    if (v.wgmma() && descriptor_mode < 0) {
      // Try both readings of the descriptor's two byte offsets; keep the one the GPU agrees with.
      for (int mode : {0, 1}) {
        Row r = run_variant(v, e, o, mode, rng);
        const int unordered_bad = r.by_kind.count("unordered") ? r.by_kind["unordered"].second : 0;
        if (r.mismatches - unordered_bad == 0) {
          descriptor_mode = mode;
          rep.findings.push_back(std::string("wgmma descriptor, K-major without swizzle: the leading byte offset is the "
                                             "distance between core matrices adjacent in ") +
                                 (mode == 0 ? "K" : "M/N") + ", the stride byte offset between 8-row groups in " +
                                 (mode == 0 ? "M/N" : "K") + " (probe " + v.id + ")");
          break;
        }
      }
      if (descriptor_mode < 0) descriptor_mode = 0;
    }
    add(run_variant(v, e, o, std::max(descriptor_mode, 0), rng));
    compare_dense_twin(v, o, rng, twins);
  }
  add_findings(rep);
  int twin_trials = 0, twin_differ = 0, twin_pairs = 0;
  std::string differing;
  for (const auto& [pair, tb] : twins) {
    ++twin_pairs, twin_trials += tb.first, twin_differ += tb.second;
    if (tb.second && differing.empty()) differing = pair;
  }
  if (twin_pairs)
    rep.findings.push_back(std::string(twin_differ ? "mma.sp is NOT always bit-identical to" : "mma.sp is bit-identical to") +
                           " dense mma of the same shape on the decompressed A (" + std::to_string(twin_pairs) + " pairs, " +
                           std::to_string(twin_trials) + " general-input trials, " + std::to_string(twin_differ) +
                           " differing" + (differing.empty() ? "" : "; first: " + differing) + ")");
  return rep;
}

}  // namespace spmma::conform
