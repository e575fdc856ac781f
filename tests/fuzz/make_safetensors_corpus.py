#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the seed corpus of the safetensors fuzz target (tests/fuzz/corpus/safetensors/).

Small valid and near-valid files: every dtype the reader takes, scalar and empty tensors,
__metadata__, several tensors with their data out of name order, spmma compressed-matrix
containers (2:4, 1:2, 4:8 pair-wise; include/spmma/safetensors.hpp), and the refusals the
reader documents (header length, JSON, repeated keys, nesting, fields, dtypes, offsets).
Only the Python standard library is needed; the output is deterministic.

    python3 tests/fuzz/make_safetensors_corpus.py [--out tests/fuzz/corpus/safetensors]
"""
import argparse
import json
import os
import struct

DTYPES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "U16": 2, "I16": 2, "F16": 2,
          "BF16": 2, "U32": 4, "I32": 4, "F32": 4, "U64": 8, "I64": 8, "F64": 8}


def raw(header_text, data=b"", pad=True, length=None):
    """8-byte length, header text (padded with spaces to 8 bytes, as the library writes), data."""
    h = header_text.encode("utf8") if isinstance(header_text, str) else header_text
    if pad:
        h += b" " * ((-len(h)) % 8)
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def st(tensors, metadata=None, order=None):
    """A valid file: tensors is a list of (name, dtype, shape, data); data laid out in `order`."""
    order = order or [t[0] for t in tensors]
    by_name = {t[0]: t for t in tensors}
    h, buf = {}, b""
    if metadata is not None:
        h["__metadata__"] = metadata
    for name in order:
        _, dt, shape, data = by_name[name]
        h[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(buf), len(buf) + len(data)]}
        buf += data
    return raw(json.dumps(h, separators=(",", ":")), buf)


def fill(n, seed=1):
    return bytes(((i * 37 + seed * 11) & 0xFF) for i in range(n))


def compressed(type_name, pattern, rows, cols, values_dtype, item, nibbles, ordered=True, value_bytes=None):
    """An spmma compressed container: nibbles[r] lists the nibble of each chunk of row r."""
    chunk = {"2:4": 4, "1:2": 2, "4:8 pair-wise": 8}[pattern]
    chunks = cols // chunk
    words = (chunks + 3) // 4
    meta = b""
    for r in range(rows):
        for w in range(words):
            v = 0
            for k in range(4):
                c = 4 * w + k
                if c < chunks:
                    v |= nibbles[r][c] << (4 * k)
            meta += struct.pack("<H", v)
    values = value_bytes if value_bytes is not None else fill(rows * (cols // 2) * item)
    md = {"format": "spmma.compressed", "format_version": "1", "type": type_name, "pattern": pattern,
          "rows": str(rows), "cols": str(cols), "ordered": "true" if ordered else "false"}
    return st([("values", values_dtype, [rows, cols // 2], values), ("metadata", "U16", [rows, words], meta)], md)


def corpus():
    f = {}
    # Every dtype, 2x3; a scalar; an empty tensor.
    for dt, size in DTYPES.items():
        f[f"valid_{dt}.safetensors"] = st([("t", dt, [2, 3], fill(6 * size))])
    f["valid_scalar.safetensors"] = st([("s", "F32", [], struct.pack("<f", 2.5))])
    f["valid_empty_tensor.safetensors"] = st([("e", "BF16", [0, 5], b"")])
    f["valid_huge_empty.safetensors"] = st([("e", "F32", [1 << 40, 0], b"")])
    f["valid_no_tensors.safetensors"] = raw("{}")
    f["valid_metadata_only.safetensors"] = raw(json.dumps({"__metadata__": {"a": "b", "": "\u00e9"}}))
    f["valid_three_out_of_order.safetensors"] = st(
        [("a", "F16", [2], fill(4)), ("b", "I32", [1, 1], fill(4, 2)), ("c", "U8", [3], fill(3, 3))],
        {"note": "data in order c, a, b"}, order=["c", "a", "b"])
    f["valid_unicode_name.safetensors"] = st([("w\u00e4\u00df\u20ac", "U8", [1], b"\x01")])
    f["valid_rank4.safetensors"] = st([("r", "I8", [1, 2, 1, 2], fill(4))])

    # Compressed containers (spmma compress --out): bf16 2:4, tf32 1:2, s4 4:8 pair-wise, e2m1 2:4.
    f["compressed_bf16_2x8.safetensors"] = compressed("bf16", "2:4", 2, 8, "BF16", 2, [[0x4, 0xE], [0x9, 0xC]])
    f["compressed_bf16_unordered.safetensors"] = compressed("bf16", "2:4", 1, 8, "BF16", 2, [[0x1, 0x4]], ordered=False)
    f["compressed_bf16_bad_nibble.safetensors"] = compressed("bf16", "2:4", 1, 8, "BF16", 2, [[0x0, 0x4]])
    f["compressed_f16_5chunks.safetensors"] = compressed("f16", "2:4", 1, 20, "F16", 2, [[0x4, 0x8, 0x9, 0xC, 0xD]])
    f["compressed_tf32_1x4.safetensors"] = compressed("tf32", "1:2", 1, 4, "F32", 4, [[0x4, 0xE]])
    f["compressed_e4m3_1x4.safetensors"] = compressed("e4m3", "2:4", 1, 4, "F8_E4M3", 1, [[0xE]])
    f["compressed_s8_1x4.safetensors"] = compressed("s8", "2:4", 1, 4, "I8", 1, [[0x4]])
    f["compressed_s4_1x8.safetensors"] = compressed("s4", "4:8 pair-wise", 1, 8, "U8", 1, [[0x4]],
                                                    value_bytes=bytes([1, 0xF, 7, 8]))
    f["compressed_e2m1_2_4.safetensors"] = compressed("e2m1", "2:4", 1, 4, "U8", 1, [[0x4]], value_bytes=bytes([3, 0xF]))
    f["compressed_u4_bits_too_wide.safetensors"] = compressed("u4", "4:8 pair-wise", 1, 8, "U8", 1, [[0x4]],
                                                              value_bytes=bytes([0x10, 0, 0, 0]))
    f["compressed_f32_wrong_pattern.safetensors"] = compressed("f32", "2:4", 1, 4, "F32", 4, [[0x4]])
    f["compressed_zero_rows.safetensors"] = compressed("bf16", "2:4", 0, 8, "BF16", 2, [])

    # Refusals.
    good = st([("t", "F32", [2], fill(8))])
    f["short_file.safetensors"] = b"\x08\x00\x00"
    f["len_beyond.safetensors"] = raw('{"t":1}', length=1000)
    f["len_huge.safetensors"] = struct.pack("<Q", 0xFFFFFFFFFFFFFFFF) + b"{}"
    f["len_zero.safetensors"] = struct.pack("<Q", 0)
    f["not_object.safetensors"] = raw("[1, 2]")
    f["not_json.safetensors"] = raw('{"t": {"dtype": "F32", ')
    f["not_utf8.safetensors"] = raw(b'{"\xff\xfe": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}}')
    f["dup_key.safetensors"] = raw('{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01")
    f["dup_field.safetensors"] = raw('{"t":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01")
    f["deep.safetensors"] = raw('{"t":{"dtype":"U8","shape":[[1]],"data_offsets":[0,1]}}', b"\x01")
    f["deeper.safetensors"] = raw('{"a":' + "[" * 30 + "]" * 30 + "}")
    f["unknown_field.safetensors"] = raw('{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":0}}', b"\x01")
    f["missing_field.safetensors"] = raw('{"t":{"dtype":"U8","shape":[1]}}', b"\x01")
    f["dtype_F4.safetensors"] = raw('{"t":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}', b"\x01")
    f["dtype_unknown.safetensors"] = raw('{"t":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}', b"\0" * 8)
    f["dtype_number.safetensors"] = raw('{"t":{"dtype":4,"shape":[1],"data_offsets":[0,4]}}', b"\0" * 4)
    f["shape_negative.safetensors"] = raw('{"t":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}', b"\x01")
    f["shape_float.safetensors"] = raw('{"t":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}', b"\x01")
    f["shape_2p63.safetensors"] = raw('{"t":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,1]}}', b"\x01")
    f["shape_overflow.safetensors"] = raw('{"t":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}}')
    f["shape_overflow_then_zero.safetensors"] = raw('{"t":{"dtype":"F64","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}')
    f["shape_mismatch.safetensors"] = raw('{"t":{"dtype":"U16","shape":[3],"data_offsets":[0,4]}}', b"\0" * 4)
    f["offsets_reversed.safetensors"] = raw('{"t":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}}', b"\x01")
    f["offsets_beyond.safetensors"] = raw('{"t":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}', b"\x01")
    f["offsets_three.safetensors"] = raw('{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}', b"\x01")
    f["offsets_overlap.safetensors"] = raw('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
                                           '"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', b"\0" * 3)
    f["offsets_gap.safetensors"] = raw('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                                       '"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}', b"\0" * 3)
    f["data_tail.safetensors"] = good + b"\0"
    f["metadata_not_string.safetensors"] = raw('{"__metadata__":{"a":1}}')
    f["metadata_not_object.safetensors"] = raw('{"__metadata__":"x"}')
    f["header_not_brace.safetensors"] = raw(' {}')
    f["npy.safetensors"] = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }"
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "safetensors"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    files = corpus()
    for name, data in sorted(files.items()):
        with open(os.path.join(args.out, name), "wb") as fh:
            fh.write(data)
    print(f"{len(files)} files in {args.out}")


if __name__ == "__main__":
    main()
