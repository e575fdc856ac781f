// SPDX-License-Identifier: BSD-3-Clause
// A compressed A in device memory: values padded to whole 128-row tiles, metadata in the
// fragment-ready layout of the sm80 instruction (group gemm::kMetaGroup), which the sm90 kernel
// reads too. Bound to one CUDA device.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/backend.hpp"
#include "device_buffer.cuh"
#include "format/relayout_gpu.cuh"
#include "sm90/launch_sm90.hpp"

namespace spmma::gpu_api {

using gemm::padded_rows;  // common/device_layout.hpp

struct GpuStorage final : detail::SparseStorage {
  int ordinal = 0;  // the CUDA device holding the buffers
  ElemType type = ElemType::bf16;
  Pattern pattern = Pattern::p2_4;
  std::string variant;  // the instruction whose fragment-ready layout the metadata has
  int64_t m = 0, k = 0, entries = 1;
  // The buffers the kernels read: `owned` ones, or the caller's (compress_into, import_into,
  // borrow), which must outlive this storage.
  uint8_t* values = nullptr;
  uint32_t* meta = nullptr;
  cuda::DeviceBuffer<uint8_t> owned_values;
  cuda::DeviceBuffer<uint32_t> owned_meta;
  int64_t m_pad = 0, a_row_bytes = 0, batch_values = 0, batch_meta_words = 0;
  int meta_lanes = 0;
  int64_t meta_groups = 0;

  ~GpuStorage() override;
  bool on_device() const override { return true; }
  int gpu_ordinal() const override { return ordinal; }
  bool owns_memory() const override { return owned_values.ptr != nullptr; }
  std::vector<std::pair<const void*, size_t>> spans() const override {
    return {{values, static_cast<size_t>(batch_values * entries)},
            {meta, static_cast<size_t>(batch_meta_words * entries * 4)}};
  }
  // Downloads batch entry b and turns it back into the host's whole-matrix form.
  Compressed to_host(int64_t b) const override;
  void export_interchange(void* x_values, void* x_metadata, void* stream) const override;
  void decompress_into(void* dense, int64_t lda, int64_t stride, void* stream) const override;

  // The sm90 kernels' tensor maps of A in boxes of a_box (the main kernel's 128 rows x 64 B, the
  // decode kernel's 32 rows x 128 B), encoded at the first run (per batch layout) and kept: a
  // planned run then encodes only B's map, and only when B's pointer or layout changes.
  sm90::AMaps a_maps(const gemm::Params& p, sm90::Box a_box) const;

 private:
  struct CachedMaps {
    sm90::Box box{0, 0};
    int64_t batch_a_bytes = -1, batch = -1;
    sm90::AMaps maps{};
  };
  mutable std::mutex maps_mutex_;
  mutable CachedMaps maps_[2];  // one per kernel's box
};

// Storage for `entries` compressed A of desc (uninitialised), on the current device: buffers of
// its own, or the caller's `values` / `metadata` (both given) borrowed.
std::unique_ptr<GpuStorage> empty_storage(const MatmulDesc& desc, int64_t entries, int ordinal, void* values = nullptr,
                                          void* metadata = nullptr);
// The layout's sizes ("gpu-v1"), what empty_storage allocates.
CompressedLayout gpu_layout(const MatmulDesc& desc);

// One relayout launch per batch entry (format/relayout_gpu.cuh) between st's buffers and the
// interchange form (x_values / x_metadata, entry after entry) or a dense A (dense, lda and
// stride in elements); synchronises `stream` and throws invalid_value naming `who`, the batch
// entry, row and chunk of the first forbidden nibble.
void relayout(const GpuStorage& st, gpu_format::Relayout dir, const void* x_values, const void* x_metadata, void* dense, int64_t lda,
              int64_t stride, void* stream, const char* who);

// Host Compressed matrices uploaded (padded to whole tiles, metadata re-laid out).
std::unique_ptr<GpuStorage> upload_storage(const MatmulDesc& desc, const std::vector<Compressed>& per_batch, int ordinal);

}  // namespace spmma::gpu_api
