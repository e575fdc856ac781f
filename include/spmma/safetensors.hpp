// SPDX-License-Identifier: BSD-3-Clause
// spmma — safetensors files (https://github.com/huggingface/safetensors), and the compressed-
// matrix container that `spmma compress --out` writes in that format.
//
// File layout: an 8-byte little-endian header length N; N bytes of JSON (a UTF-8 object,
// padded with spaces); the data buffer. The header maps each tensor name to
//   {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [begin, end]}
// (offsets into the buffer, little-endian, C order), and the optional key "__metadata__" to an
// object of string values.
//
// The reader refuses, with io_error "<file>: <what is wrong>": a file shorter than 8 bytes; a
// header length beyond the file (or above 100 MB); a header that is not a JSON object, is not
// UTF-8, nests deeper than the format does, or repeats a key; a tensor entry with a missing,
// extra or ill-typed field; an unknown or sub-byte dtype (F4, F6_*); a shape whose byte count
// overflows or differs from end - begin; data offsets out of the buffer, overlapping, leaving a
// gap, or not covering the buffer exactly (what the safetensors library itself requires).
//
// Dtypes read and written (bytes per element): BOOL U8 I8 F8_E5M2 F8_E4M3 F8_E8M0 (1),
// U16 I16 F16 BF16 (2), U32 I32 F32 (4), U64 I64 F64 (8).
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace spmma {

struct SafeTensor {
  std::string name;
  std::string dtype;           // "BF16", "U16", ...
  std::vector<int64_t> shape;  // any rank; [] is a scalar
  std::vector<uint8_t> data;   // product(shape) * element size bytes
};

struct SafeTensors {
  std::vector<SafeTensor> tensors;              // read: in the order of their data in the file
  std::map<std::string, std::string> metadata;  // "__metadata__"
  const SafeTensor* find(std::string_view name) const;  // nullptr when absent
};

// Bytes per element of a safetensors dtype; io_error (prefixed by `where`) for an unknown one.
size_t safetensors_dtype_size(std::string_view dtype, std::string_view where = {});

// `name` stands for the file in messages.
SafeTensors parse_safetensors(std::span<const uint8_t> bytes, std::string_view name);
// Throws invalid_argument for a tensor whose data size disagrees with its shape and dtype, an
// unknown dtype, a repeated or reserved ("__metadata__") name.
std::vector<uint8_t> serialize_safetensors(const SafeTensors& f);
SafeTensors read_safetensors(const std::string& path);
// Through io::write_file: a failed write leaves no partial file (src/io/files.hpp).
void write_safetensors(const std::string& path, const SafeTensors& f);

// ------------------------------------------------------------------ the compressed-matrix container
//
// One safetensors file holding a Compressed matrix (docs/files.md):
//   "values"    rows x cols/2 bit patterns, dtype safetensors_values_dtype(type): F16, BF16, F32
//               (tf32 and f32), F8_E4M3, F8_E5M2, I8, U8; U8 one element per byte in the low bits
//               for the 6- and 4-bit types (e3m2, e2m3, e2m1, s4, u4);
//   "metadata"  rows x ceil(chunks/4) U16 words (include/spmma/sparse.hpp's layout);
//   "__metadata__" {"format": "spmma.compressed", "format_version": "1", "type": "bf16",
//                   "pattern": "2:4", "rows": "R", "cols": "K", "ordered": "true"}.
inline constexpr std::string_view kCompressedFormat = "spmma.compressed";
inline constexpr std::string_view kCompressedFormatVersion = "1";

std::string_view safetensors_values_dtype(ElemType t);  // invalid_argument for a type without a sparse form
SafeTensors compressed_to_safetensors(const Compressed& c);
// Refuses (io_error naming `name`) anything but what compressed_to_safetensors writes: another
// format or version, an unknown type or a pattern the type does not allow, rows / cols that
// are not decimal integers, an empty matrix, cols not a multiple of the chunk, values or
// metadata with another dtype or shape, extra tensors, value bits above the type's width.
// Nibble validity is decompress()'s check.
Compressed compressed_from_safetensors(const SafeTensors& f, std::string_view name);
void write_compressed(const std::string& path, const Compressed& c);
Compressed read_compressed(const std::string& path);

}  // namespace spmma
