// SPDX-License-Identifier: BSD-3-Clause
// Fragment-ready metadata (include/spmma/fragment_layout.hpp, docs/layouts.md). Which nibble
// of which lane describes which (row, chunk) comes only from the registry's MetaLayout.
#include "spmma/fragment_layout.hpp"

#include <cstdio>
#include <string>

#include "spmma/error.hpp"

namespace spmma {
namespace {

std::string hex(uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

const isa::MetaLayout& sparse_meta(const isa::Variant& v, const char* fn) {
  if (!v.sparse() || !v.meta)
    fail(Status::invalid_argument, std::string(fn) + ": variant " + v.id +
                                       " is dense; fragment-ready metadata needs a sparse form (mma.sp, "
                                       "mma.sp::ordered_metadata or wgmma.mma_async.sp)");
  const isa::MetaLayout& ml = *v.meta;
  if (!ml.selector_valid(0) || ml.rows_per_warp != 16 || v.m != 16 * (v.threads() / 32))
    fail(Status::internal, std::string(fn) + ": variant " + v.id + " has a metadata layout this code does not know");
  return ml;
}

void check_group(int group, const char* fn) {
  if (group != 1 && group != 2 && group != 4 && group != 8)
    fail(Status::invalid_argument, std::string(fn) + ": group " + std::to_string(group) +
                                       " is not 1, 2, 4 or 8 (k-steps per lane record)");
}

void check_shape(const isa::Variant& v, ElemType type, Pattern pattern, int64_t rows, int64_t cols, const char* fn) {
  const isa::MetaLayout& ml = *v.meta;
  if (type != v.a)
    fail(Status::invalid_argument, std::string(fn) + ": A type " + std::string(type_name(type)) + " does not match " +
                                       v.id + " (A type " + std::string(type_name(v.a)) + ")");
  if (pattern != ml.pattern)
    fail(Status::invalid_argument, std::string(fn) + ": pattern " + pattern_info(pattern).name + " does not match " +
                                       v.id + " (pattern " + pattern_info(ml.pattern).name + ")");
  if (rows <= 0 || rows % v.m != 0)
    fail(Status::invalid_argument, std::string(fn) + ": rows " + std::to_string(rows) +
                                       " is not a positive multiple of " + std::to_string(v.m) + " (M of " + v.id + ")");
  if (cols <= 0 || cols % v.k != 0)
    fail(Status::invalid_argument, std::string(fn) + ": cols " + std::to_string(cols) +
                                       " is not a positive multiple of " + std::to_string(v.k) + " (K of " + v.id + ")");
}

// Calls fn(lane, p, nibble, row, chunk) for every nibble of every selector-0 metadata lane of the
// instruction at (row block rb, k-step ks); row and chunk are whole-matrix coordinates.
template <class Fn>
void for_each_nibble(const isa::Variant& v, int64_t rb, int64_t ks, Fn&& fn) {
  const isa::MetaLayout& ml = *v.meta;
  const int L = ml.lanes_per_group;
  const int64_t chunks_per_step = v.k / pattern_info(ml.pattern).chunk;
  for (int lane = 0; lane < v.threads(); ++lane) {
    const int l = lane % 32, g = l / 4, t = l % 4;
    const bool holds = ml.at(lane, 0, 0).has_value();
    if (holds != (t < L))
      fail(Status::internal, "fragment-ready metadata: lane " + std::to_string(lane) + " of " + v.id +
                                 " breaks the t < lanes_per_group rule");
    if (!holds) continue;
    const int p = g * L + t;
    for (int n = 0; n < 8; ++n) {
      const auto rc = ml.at(lane, n, 0);
      fn(lane, p, n, rb * v.m + rc->row, ks * chunks_per_step + rc->col);
    }
  }
}

void check_nibble(const isa::Variant& v, uint8_t nib, int64_t row, int64_t chunk, const char* fn) {
  if (!v.meta->nibble_valid(nib))
    fail(Status::invalid_value, std::string(fn) + ": row " + std::to_string(row) + ", chunk " + std::to_string(chunk) +
                                    ": nibble " + hex(nib, 1) + " is not a valid " + pattern_info(v.meta->pattern).name +
                                    " index pair for " + v.ptx +
                                    (v.meta->ordered ? " (ordered metadata: idx0 < idx1)" : ""));
}

}  // namespace

FragmentReadyMeta to_fragment_ready(const Compressed& a, const isa::Variant& v, int group) {
  constexpr const char* fn = "to_fragment_ready";
  const isa::MetaLayout& ml = sparse_meta(v, fn);
  check_group(group, fn);
  check_shape(v, a.type, a.pattern, a.rows, a.cols, fn);
  if (a.values.type != a.type || a.values.rows != a.rows || a.values.cols != a.cols / 2)
    fail(Status::invalid_argument, std::string(fn) + ": values are " + std::to_string(a.values.rows) + " x " +
                                       std::to_string(a.values.cols) + " " + std::string(type_name(a.values.type)) +
                                       ", expected " + std::to_string(a.rows) + " x " + std::to_string(a.cols / 2) +
                                       " " + std::string(type_name(a.type)));
  if (a.metadata.size() != static_cast<size_t>(a.rows * a.meta_words_per_row()))
    fail(Status::invalid_argument, std::string(fn) + ": metadata holds " + std::to_string(a.metadata.size()) +
                                       " words, expected " + std::to_string(a.rows * a.meta_words_per_row()));

  FragmentReadyMeta f;
  f.type = a.type;
  f.pattern = a.pattern;
  f.ordered = a.ordered;
  f.rows = a.rows;
  f.cols = a.cols;
  f.group = group;
  f.k_step = v.k;
  f.block_rows = v.m;
  f.lanes_per_group = ml.lanes_per_group;
  f.variant_id = v.id;
  f.words.assign(static_cast<size_t>(f.warp_blocks() * f.groups() * group * f.meta_lanes()),
                 FragmentReadyMeta::kPadWord);
  // The padded k-steps keep kPadWord; every other word is written in full (all 8 nibbles).
  const int warps = v.threads() / 32;
  for (int64_t rb = 0; rb < a.rows / v.m; ++rb)
    for (int64_t ks = 0; ks < f.k_steps(); ++ks) {
      for (int64_t wb = rb * warps; wb < (rb + 1) * warps; ++wb)
        for (int p = 0; p < f.meta_lanes(); ++p) f.words[f.index(wb, ks, p)] = 0;
      for_each_nibble(v, rb, ks, [&](int lane, int p, int n, int64_t row, int64_t chunk) {
        const uint8_t nib = a.nibble(row, chunk);
        check_nibble(v, nib, row, chunk, fn);
        f.words[f.index(rb * warps + lane / 32, ks, p)] |= static_cast<uint32_t>(nib) << (4 * n);
      });
    }
  return f;
}

Compressed from_fragment_ready(const FragmentReadyMeta& f, const Matrix& values, const isa::Variant& v) {
  constexpr const char* fn = "from_fragment_ready";
  const isa::MetaLayout& ml = sparse_meta(v, fn);
  check_group(f.group, fn);
  check_shape(v, f.type, f.pattern, f.rows, f.cols, fn);
  if (f.k_step != v.k || f.lanes_per_group != ml.lanes_per_group)
    fail(Status::invalid_argument, std::string(fn) + ": layout built for " + f.variant_id + " (K " +
                                       std::to_string(f.k_step) + " per instruction, " +
                                       std::to_string(f.lanes_per_group) + " metadata lanes per quad) does not fit " +
                                       v.id + " (K " + std::to_string(v.k) + ", " +
                                       std::to_string(ml.lanes_per_group) + ")");
  const size_t need = static_cast<size_t>(f.warp_blocks() * f.groups() * f.group * f.meta_lanes());
  if (f.words.size() != need)
    fail(Status::invalid_argument, std::string(fn) + ": words holds " + std::to_string(f.words.size()) +
                                       " words, expected " + std::to_string(need));
  if (values.type != f.type || values.rows != f.rows || values.cols != f.cols / 2)
    fail(Status::invalid_argument, std::string(fn) + ": values are " + std::to_string(values.rows) + " x " +
                                       std::to_string(values.cols) + " " + std::string(type_name(values.type)) +
                                       ", expected " + std::to_string(f.rows) + " x " + std::to_string(f.cols / 2) +
                                       " " + std::string(type_name(f.type)));
  Compressed c;
  c.type = f.type;
  c.pattern = f.pattern;
  c.rows = f.rows;
  c.cols = f.cols;
  c.ordered = f.ordered;
  c.values = values;
  c.metadata.assign(static_cast<size_t>(c.rows * c.meta_words_per_row()), 0);
  const int warps = v.threads() / 32;
  for (int64_t rb = 0; rb < f.rows / v.m; ++rb)
    for (int64_t ks = 0; ks < f.k_steps(); ++ks)
      for_each_nibble(v, rb, ks, [&](int lane, int p, int n, int64_t row, int64_t chunk) {
        const uint8_t nib = (f.words[f.index(rb * warps + lane / 32, ks, p)] >> (4 * n)) & 0xF;
        check_nibble(v, nib, row, chunk, fn);
        c.set_nibble(row, chunk, nib);
      });
  // Padding: the k-steps past the last one in each 16-row block's last group.
  for (int64_t wb = 0; wb < f.warp_blocks(); ++wb)
    for (int64_t ks = f.k_steps(); ks < f.groups() * f.group; ++ks)
      for (int p = 0; p < f.meta_lanes(); ++p) {
        const uint32_t w = f.words[f.index(wb, ks, p)];
        if (w != FragmentReadyMeta::kPadWord)
          fail(Status::invalid_value, std::string(fn) + ": padding word of 16-row block " + std::to_string(wb) +
                                          ", k-step " + std::to_string(ks) + ", metadata lane " + std::to_string(p) +
                                          " is " + hex(w, 8) + ", expected " + hex(FragmentReadyMeta::kPadWord, 8));
      }
  return c;
}

uint32_t fragment_ready_word(const FragmentReadyMeta& f, int64_t row_block, int64_t k_step, int lane) {
  const int warps = f.block_rows / 16;
  const int64_t blocks = f.block_rows > 0 ? f.rows / f.block_rows : 0;
  if (row_block < 0 || row_block >= blocks)
    fail(Status::invalid_argument, "fragment_ready_word: row block " + std::to_string(row_block) + " outside 0.." +
                                       std::to_string(blocks - 1) + " (" + std::to_string(f.rows) + " rows in blocks of " +
                                       std::to_string(f.block_rows) + ")");
  if (k_step < 0 || k_step >= f.k_steps())
    fail(Status::invalid_argument, "fragment_ready_word: k-step " + std::to_string(k_step) + " outside 0.." +
                                       std::to_string(f.k_steps() - 1));
  if (lane < 0 || lane >= 32 * warps)
    fail(Status::invalid_argument, "fragment_ready_word: lane " + std::to_string(lane) + " outside 0.." +
                                       std::to_string(32 * warps - 1));
  const int l = lane % 32, g = l / 4, t = l % 4;
  if (t >= f.lanes_per_group) return 0;
  const size_t i = f.index(row_block * warps + lane / 32, k_step, g * f.lanes_per_group + t);
  if (i >= f.words.size())
    fail(Status::invalid_argument, "fragment_ready_word: words holds " + std::to_string(f.words.size()) +
                                       " words, index " + std::to_string(i) + " is outside");
  return f.words[i];
}

}  // namespace spmma
