// SPDX-License-Identifier: BSD-3-Clause
// Device storage of a compressed A (device_storage.cuh).
#include "api/device_storage.cuh"

#include <cuda_runtime.h>

#include <algorithm>

#include "sm80/launch_sm80.hpp"
#include "spmma/error.hpp"
#include "spmma/fragment_layout.hpp"
#include "spmma/isa.hpp"

namespace spmma::gpu_api {
namespace {

// Packs raw bit patterns at the type's memory width (spmma::memory_bits).
void pack(const std::vector<uint64_t>& bits, int b, std::vector<uint8_t>& out) {
  const size_t start = out.size();
  out.resize(start + (bits.size() * static_cast<size_t>(b) + 7) / 8, 0);
  for (size_t i = 0; i < bits.size(); ++i) store_element(out.data() + start, static_cast<int64_t>(i), b, bits[i]);
}

std::vector<uint64_t> unpack(const uint8_t* p, size_t count, int b) {
  std::vector<uint64_t> bits(count);
  for (size_t i = 0; i < count; ++i) bits[i] = load_element(p, static_cast<int64_t>(i), b);
  return bits;
}

const isa::Variant& variant_for(const MatmulDesc& desc) {
  const sm80::Entry* in = sm80::find(desc.a_type, desc.b_type);
  if (!in)
    fail(Status::not_supported, "GPU: no sparse kernel for A " + std::string(type_name(desc.a_type)) + " with B " +
                                    std::string(type_name(desc.b_type)));
  return isa::variant_or_throw(in->instruction);
}

// c with rows up to m_pad (zero values, nibble 0xE: valid for every pattern) and every nibble in
// ordered form (the ordered_metadata instruction's requirement): an unordered pair names the
// same two positions as its swap, so swapping the nibble's indices and the two stored groups
// changes nothing the tensor cores compute. The named positions stay the caller's own choice,
// so an Inf or NaN in B meets the same stored zeros on the GPU as in the CPU backend.
Compressed pad_and_order(const Compressed& c, int64_t m_pad) {
  const PatternInfo& pi = pattern_info(c.pattern);
  Compressed p = c;
  p.ordered = true;
  p.rows = m_pad;
  p.values = Matrix(c.type, m_pad, c.cols / 2);
  std::copy(c.values.bits.begin(), c.values.bits.end(), p.values.bits.begin());
  p.metadata.assign(static_cast<size_t>(m_pad * c.meta_words_per_row()), 0);
  std::copy(c.metadata.begin(), c.metadata.end(), p.metadata.begin());
  const int64_t chunks = c.chunks_per_row();
  for (int64_t r = 0; r < m_pad; ++r)
    for (int64_t ch = 0; ch < chunks; ++ch) {
      if (r >= c.rows) {
        p.set_nibble(r, ch, 0xE);
        continue;
      }
      const uint8_t nib = p.nibble(r, ch);
      const unsigned i0 = nib & 3u, i1 = (nib >> 2) & 3u;
      if (c.pattern == Pattern::p1_2 || i0 < i1) continue;
      p.set_nibble(r, ch, static_cast<uint8_t>(i1 | (i0 << 2)));
      for (int e = 0; e < pi.group; ++e)
        std::swap(p.values.at(r, ch * pi.kept + e), p.values.at(r, ch * pi.kept + pi.group + e));
    }
  return p;
}

}  // namespace

GpuStorage::~GpuStorage() {
  // Free on the device that holds the buffers, whatever device is current now.
  int prev = -1;
  if (cudaGetDevice(&prev) == cudaSuccess && prev != ordinal && cudaSetDevice(ordinal) == cudaSuccess) {
    owned_values = {};
    owned_meta = {};
    cudaSetDevice(prev);
  }
}

Compressed GpuStorage::to_host(int64_t b) const {
  if (b < 0 || b >= entries)
    fail(Status::invalid_argument,
         "SparseMatrix::to_host: batch entry " + std::to_string(b) + " out of range (" + std::to_string(entries) + ")");
  cuda::DeviceGuard guard(ordinal);
  std::vector<uint8_t> vals(static_cast<size_t>(batch_values));
  std::vector<uint32_t> words(static_cast<size_t>(batch_meta_words));
  cuda::check(cudaMemcpy(vals.data(), values + b * batch_values, vals.size(), cudaMemcpyDeviceToHost),
              "download A values");
  cuda::check(cudaMemcpy(words.data(), meta + b * batch_meta_words, words.size() * 4, cudaMemcpyDeviceToHost),
              "download A metadata");
  const isa::Variant& v = isa::variant_or_throw(variant);
  Matrix vm(type, m_pad, k / 2);
  const int bits = memory_bits(type);
  for (int64_t r = 0; r < m_pad; ++r) {
    const auto row = unpack(vals.data() + r * a_row_bytes, static_cast<size_t>(k / 2), bits);
    std::copy(row.begin(), row.end(), vm.bits.begin() + r * (k / 2));
  }
  FragmentReadyMeta f;
  f.type = type, f.pattern = pattern, f.ordered = true, f.rows = m_pad, f.cols = k;
  f.group = gemm::kMetaGroup, f.k_step = v.k, f.block_rows = 16, f.lanes_per_group = v.meta->lanes_per_group;
  f.words = std::move(words);
  f.variant_id = v.id;
  const Compressed padded = from_fragment_ready(f, vm, v);
  Compressed c = padded;
  c.rows = m;
  c.values = Matrix(type, m, k / 2);
  std::copy(padded.values.bits.begin(), padded.values.bits.begin() + m * (k / 2), c.values.bits.begin());
  c.metadata.assign(padded.metadata.begin(), padded.metadata.begin() + m * padded.meta_words_per_row());
  return c;
}

sm90::AMaps GpuStorage::a_maps(const gemm::Params& p, sm90::Box a_box) const {
  std::lock_guard<std::mutex> lock(maps_mutex_);
  CachedMaps& c = maps_[a_box.rows == sm90::box_a().rows ? 0 : 1];
  if (c.box.bytes != a_box.bytes || c.box.rows != a_box.rows || c.batch_a_bytes != p.batch_a_bytes || c.batch != p.batch) {
    c.maps = sm90::encode_a(p, a_box);
    c.box = a_box, c.batch_a_bytes = p.batch_a_bytes, c.batch = p.batch;
  }
  return c.maps;
}

std::unique_ptr<GpuStorage> empty_storage(const MatmulDesc& desc, int64_t entries, int ordinal, void* values,
                                          void* metadata) {
  const isa::Variant& v = variant_for(desc);
  auto st = std::make_unique<GpuStorage>();
  st->ordinal = ordinal;
  st->type = desc.a_type;
  st->pattern = v.meta->pattern;
  st->variant = v.id;
  st->m = desc.m, st->k = desc.k, st->entries = entries;
  st->m_pad = padded_rows(desc.m);
  st->a_row_bytes = desc.k / 2 * memory_bits(desc.a_type) / 8;
  st->meta_lanes = 8 * v.meta->lanes_per_group;
  st->meta_groups = (desc.k / v.k + gemm::kMetaGroup - 1) / gemm::kMetaGroup;
  st->batch_values = st->m_pad * st->a_row_bytes;
  st->batch_meta_words = st->m_pad / 16 * st->meta_groups * st->meta_lanes * gemm::kMetaGroup;
  if (values != nullptr) {
    st->values = static_cast<uint8_t*>(values);
    st->meta = static_cast<uint32_t*>(metadata);
    return st;
  }
  st->owned_values = cuda::DeviceBuffer<uint8_t>(static_cast<size_t>(st->batch_values * entries));
  st->owned_meta = cuda::DeviceBuffer<uint32_t>(static_cast<size_t>(st->batch_meta_words * entries));
  st->values = st->owned_values.ptr;
  st->meta = st->owned_meta.ptr;
  return st;
}

CompressedLayout gpu_layout(const MatmulDesc& desc) {
  const isa::Variant& v = variant_for(desc);
  const int64_t entries = desc.a_per_batch ? desc.batch : 1;
  const int64_t m_pad = padded_rows(desc.m), row_bytes = desc.k / 2 * memory_bits(desc.a_type) / 8;
  const int64_t groups = (desc.k / v.k + gemm::kMetaGroup - 1) / gemm::kMetaGroup;
  CompressedLayout l;
  l.name = "gpu-v1";
  l.value_bytes = static_cast<size_t>(m_pad * row_bytes * entries);
  l.metadata_bytes = static_cast<size_t>(m_pad / 16 * groups * 8 * v.meta->lanes_per_group * gemm::kMetaGroup * 4 * entries);
  l.alignment = 16;  // the kernels' tensor maps take 16-byte aligned addresses (every row and entry is a multiple)
  return l;
}

void relayout(const GpuStorage& st, gpu_format::Relayout dir, const void* x_values, const void* x_metadata, void* dense, int64_t lda,
              int64_t stride, void* stream, const char* who) {
  const isa::Variant& v = isa::variant_or_throw(st.variant);
  const PatternInfo& pi = pattern_info(st.pattern);
  const int bits = memory_bits(st.type);
  const int64_t chunks = st.k / pi.chunk;
  const size_t x_row_values = static_cast<size_t>(st.k / 2 * bits / 8), x_row_words = static_cast<size_t>(chunks / 4);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cuda::DeviceBuffer<unsigned long long> bad(static_cast<size_t>(st.entries));
  cuda::check(cudaMemsetAsync(bad.ptr, 0xFF, bad.bytes(), s), std::string(who) + ": cudaMemsetAsync");
  for (int64_t e = 0; e < st.entries; ++e) {
    gpu_format::RelayoutParams rp;
    rp.shape = gpu_format::compress_params_for(st.type, v);
    rp.shape.m = st.m, rp.shape.k = st.k, rp.shape.m_pad = st.m_pad;
    rp.shape.meta_group = gemm::kMetaGroup;
    rp.shape.groups = st.meta_groups;
    rp.shape.values = st.values + e * st.batch_values;
    rp.shape.value_row_bytes = st.a_row_bytes;
    rp.shape.meta = st.meta + e * st.batch_meta_words;
    rp.dir = dir;
    const size_t xe = static_cast<size_t>(e * st.m);
    rp.x_values = const_cast<uint8_t*>(static_cast<const uint8_t*>(x_values)) + (x_values ? xe * x_row_values : 0);
    rp.x_meta = const_cast<uint16_t*>(static_cast<const uint16_t*>(x_metadata)) + (x_metadata ? xe * x_row_words : 0);
    rp.x_meta_words = static_cast<int64_t>(x_row_words);
    rp.dense = dense ? static_cast<uint8_t*>(dense) + e * stride * bits / 8 : nullptr;
    rp.ld_bytes = lda * bits / 8;
    rp.bad = bad.ptr + e;
    gpu_format::launch_relayout(rp, stream);
  }
  std::vector<unsigned long long> first(static_cast<size_t>(st.entries));
  cuda::check(cudaMemcpyAsync(first.data(), bad.ptr, bad.bytes(), cudaMemcpyDeviceToHost, s),
              std::string(who) + ": read the check result");
  cuda::check(cudaStreamSynchronize(s), std::string(who) + " (GPU kernels)");
  for (int64_t e = 0; e < st.entries; ++e) {
    const unsigned long long at = first[static_cast<size_t>(e)];
    if (at == gpu_format::kNoViolation) continue;
    const int64_t row = static_cast<int64_t>(at) / chunks, ch = static_cast<int64_t>(at) % chunks;
    fail(Status::invalid_value, std::string(who) + (st.entries > 1 ? ": batch entry " + std::to_string(e) : "") +
                                    ": row " + std::to_string(row) + ", chunk " + std::to_string(ch) +
                                    " has a metadata nibble " + pi.name + " forbids" +
                                    (dir == gpu_format::Relayout::to_device
                                         ? ""
                                         : " (the buffers were not written by compress_into or import_into)"));
  }
}

void GpuStorage::export_interchange(void* x_values, void* x_metadata, void* stream) const {
  cuda::DeviceGuard guard(ordinal);
  relayout(*this, gpu_format::Relayout::to_interchange, x_values, x_metadata, nullptr, 0, 0, stream,
           "export_interchange");
}

void GpuStorage::decompress_into(void* dense, int64_t lda, int64_t stride, void* stream) const {
  cuda::DeviceGuard guard(ordinal);
  relayout(*this, gpu_format::Relayout::to_dense, nullptr, nullptr, dense, lda, stride, stream,
           "decompress_into");
}

std::unique_ptr<GpuStorage> upload_storage(const MatmulDesc& desc, const std::vector<Compressed>& per_batch, int ordinal) {
  auto st = empty_storage(desc, static_cast<int64_t>(per_batch.size()), ordinal);
  const isa::Variant& v = isa::variant_or_throw(st->variant);
  const int b = memory_bits(desc.a_type);
  std::vector<uint8_t> vals;
  std::vector<uint32_t> words;
  for (const Compressed& c : per_batch) {
    if (c.rows != desc.m || c.cols != desc.k || c.type != desc.a_type || c.pattern != st->pattern)
      fail(Status::invalid_argument, "upload: a compressed A of " + std::to_string(c.rows) + " x " + std::to_string(c.cols) +
                                         " " + std::string(type_name(c.type)) + " does not match the description (" +
                                         std::to_string(desc.m) + " x " + std::to_string(desc.k) + " " +
                                         std::string(type_name(desc.a_type)) + ", " + pattern_info(st->pattern).name + ")");
    (void)decompress(c);  // rejects a forbidden nibble, naming row and chunk
    // Padded to whole 128-row blocks, so the kernel reads no row outside the buffer; the
    // padding lives on the device only and never reaches D.
    const Compressed pc = pad_and_order(c, st->m_pad);
    const FragmentReadyMeta fr = to_fragment_ready(pc, v, gemm::kMetaGroup);
    pack(pc.values.bits, b, vals);
    words.insert(words.end(), fr.words.begin(), fr.words.end());
  }
  cuda::check(cudaMemcpy(st->values, vals.data(), vals.size(), cudaMemcpyHostToDevice), "upload A values");
  cuda::check(cudaMemcpy(st->meta, words.data(), words.size() * 4, cudaMemcpyHostToDevice), "upload A metadata");
  return st;
}

}  // namespace spmma::gpu_api
