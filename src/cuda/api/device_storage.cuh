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
#include "sm90/launch_sm90.hpp"

namespace spmma::gpu_api {

// Rows of A as stored on the device: padded to whole CTA tiles of every kernel (zero rows).
inline int64_t padded_rows(int64_t m) { return (m + gemm::kRowPad - 1) / gemm::kRowPad * gemm::kRowPad; }

struct GpuStorage final : detail::SparseStorage {
  int ordinal = 0;  // the CUDA device holding the buffers
  ElemType type = ElemType::bf16;
  Pattern pattern = Pattern::p2_4;
  std::string variant;  // the instruction whose fragment-ready layout the metadata has
  int64_t m = 0, k = 0, entries = 1;
  cuda::DeviceBuffer<uint8_t> values;
  cuda::DeviceBuffer<uint32_t> meta;
  int64_t m_pad = 0, a_row_bytes = 0, batch_values = 0, batch_meta_words = 0;
  int meta_lanes = 0;
  int64_t meta_groups = 0;

  ~GpuStorage() override;
  bool on_device() const override { return true; }
  int gpu_ordinal() const override { return ordinal; }
  // Downloads batch entry b and turns it back into the host's whole-matrix form.
  Compressed to_host(int64_t b) const override;

  // The sm90 kernel's tensor maps of A, encoded at the first run (per batch layout) and kept: a
  // planned run then encodes only B's map, and only when B's pointer or layout changes.
  sm90::AMaps a_maps(const gemm::Params& p) const;

 private:
  mutable std::mutex maps_mutex_;
  mutable std::optional<sm90::AMaps> maps_;
  mutable int64_t maps_batch_a_bytes_ = -1, maps_batch_ = -1;
};

// Device buffers for `entries` compressed A of desc (uninitialised), on the current device.
std::unique_ptr<GpuStorage> empty_storage(const MatmulDesc& desc, int64_t entries, int ordinal);

// Host Compressed matrices uploaded (padded to whole tiles, metadata re-laid out).
std::unique_ptr<GpuStorage> upload_storage(const MatmulDesc& desc, const std::vector<Compressed>& per_batch, int ordinal);

}  // namespace spmma::gpu_api
