#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the seed corpus of the .npy fuzz target (tests/fuzz/corpus/npy/).

Small valid and near-valid .npy files: every dtype the reader takes (and spellings of them),
Fortran order, 0-d and 3-d shapes, empty and huge shapes (2^40 x 0, overflowing products),
format versions 1.0, 2.0 and 3.0 (and unsupported ones), truncated and padded data, and header
texts that exercise the Python-literal parser (quotes, escapes, trailing commas, nesting).

Only the Python standard library is needed; the files are written byte by byte, the way
numpy/lib/format.py writes them. Where numpy is installed it is used as a check: every file
named valid_* must load with np.load to the dtype and shape it was written with (--check-numpy
makes a missing numpy an error). The output is deterministic: run it again and commit the result.

    python3 tests/fuzz/make_npy_corpus.py [--out tests/fuzz/corpus/npy]
"""
import argparse
import os
import struct
import sys

MAGIC = b"\x93NUMPY"

# Every dtype the reader takes, normalized, with deterministic element bytes of some interest.
F4 = [0.0, -0.0, 1.5, float("inf"), float("-inf"), float("nan"), 1e-45, 3.4028234663852886e38]
F8 = [0.0, -0.0, 0.1, float("inf"), float("nan"), 5e-324, 1.7976931348623157e308, -2.5]
F2_RAW = [0x0000, 0x8000, 0x3C00, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x7BFF]


def elements(dtype, n):
    """n elements of dtype, as bytes (little-endian)."""
    kind, size = dtype[1], int(dtype[2])
    out = bytearray()
    for i in range(n):
        if dtype == "|b1":
            out += bytes([(0, 1, 2, 1)[i % 4]])  # 2: a non-canonical bool
        elif kind == "f" and size == 4:
            out += struct.pack("<f", F4[i % len(F4)])
        elif kind == "f" and size == 8:
            out += struct.pack("<d", F8[i % len(F8)])
        elif kind == "f" and size == 2:
            out += struct.pack("<H", F2_RAW[i % len(F2_RAW)])
        else:  # integers and raw bytes: edge values, then a counter
            edges = [0, 1, (1 << (8 * size)) - 1, 1 << (8 * size - 1), (1 << (8 * size - 1)) - 1]
            v = edges[i] if i < len(edges) else (i * 0x9E3779B97F4A7C15) & ((1 << (8 * size)) - 1)
            out += v.to_bytes(size, "little")
    return bytes(out)


def shape_repr(shape):
    return repr(tuple(shape))


def header(descr, shape, fortran=False):
    return "{'descr': %r, 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if fortran else "False", shape_repr(shape))


def npy(text, data=b"", version=(1, 0), pad=True, header_len=None):
    """A .npy file with header `text` (str or bytes), padded the way NumPy pads it."""
    h = text.encode("utf8" if version[0] >= 3 else "latin1") if isinstance(text, str) else text
    pre = 10 if version[0] == 1 else 12
    if pad:
        total = pre + len(h) + 1
        h += b" " * ((-total) % 64) + b"\n"
    n = len(h) if header_len is None else header_len
    field = struct.pack("<H", n & 0xFFFF) if version[0] == 1 else struct.pack("<I", n & 0xFFFFFFFF)
    return MAGIC + bytes(version) + field + h + data


def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


# name -> (descr, shape) of every valid_* file, for the numpy check.
VALID = {}


def corpus():
    files = {}
    dtypes = ["|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8",
              "|V1", "<V2", "<V4", "<V8"]
    for dt in dtypes:
        tag = dt[1:]
        for shape, stag in [((2, 3), "2x3"), ((5,), "1d"), ((0, 4), "0x4")]:
            files[f"valid_{tag}_{stag}.npy"] = npy(header(dt, shape), elements(dt, count(shape)))
            VALID[f"valid_{tag}_{stag}.npy"] = (dt, shape)
    # Other spellings of the same dtypes (NumPy writes '<u1' and '|u1' alike; '=' is native).
    for descr, tag in [("<u1", "lt_u1"), ("=f4", "eq_f4"), ("f8", "bare_f8"), ("<b1", "lt_b1"),
                       (">u1", "gt_u1"), ("|i1", "bar_i1"), ("V2", "bare_V2"), ("|V2", "bar_V2")]:
        files[f"spelling_{tag}.npy"] = npy(header(descr, (2, 2)), elements(
            "|u1" if descr[-1] == "1" else "<f4" if descr.endswith("f4") else "<f8" if descr.endswith("f8") else "<V2", 4))
    # Refused dtypes: big-endian, unknown, complex, strings, structured.
    for descr, tag in [(">i4", "big_i4"), (">f2", "big_f2"), ("<c8", "c8"), ("<U3", "U3"), ("|S4", "S4"),
                       ("<V3", "V3"), ("<f16", "f16"), ("O", "object"), ("", "empty")]:
        files[f"dtype_{tag}.npy"] = npy(header(descr, (2,)), b"\0" * 8)
    files["dtype_structured.npy"] = npy("{'descr': [('a', '<f4'), ('b', '<i2')], 'fortran_order': False, 'shape': (2,), }",
                                        b"\0" * 12)
    files["dtype_int.npy"] = npy("{'descr': 4, 'fortran_order': False, 'shape': (2,), }", b"\0" * 8)

    # Fortran order: accepted where the layout is the same as C order.
    files["fortran_1d.npy"] = npy(header("<f4", (3,), True), elements("<f4", 3))
    files["fortran_1x4.npy"] = npy(header("<i2", (1, 4), True), elements("<i2", 4))
    files["fortran_4x1.npy"] = npy(header("<u2", (4, 1), True), elements("<u2", 4))
    files["fortran_2x3.npy"] = npy(header("<f4", (2, 3), True), elements("<f4", 6))
    files["fortran_0x3.npy"] = npy(header("<f4", (0, 3), True), b"")
    files["fortran_str.npy"] = npy("{'descr': '<f4', 'fortran_order': 'True', 'shape': (1,), }", b"\0" * 4)

    # Shapes: 0-d, 3-d, empty, huge, overflowing, negative.
    files["shape_0d.npy"] = npy(header("<f4", ()), elements("<f4", 1))
    files["shape_3d.npy"] = npy(header("|u1", (2, 2, 2)), elements("|u1", 8))
    files["shape_0.npy"] = npy(header("<f8", (0,)), b"")
    for shape, tag in [((1 << 40, 0), "2p40x0"), ((0, 1 << 40), "0x2p40"), ((1 << 62, 0), "2p62x0"),
                       ((0, (1 << 63) - 1), "0xmax"), ((1 << 40, 1 << 40), "2p40x2p40"), ((1 << 62, 4), "2p62x4"),
                       (((1 << 63) - 1, 2), "maxx2"), (((1 << 63) - 1,), "max"), ((1 << 31, 1 << 31), "2p31x2p31"),
                       ((-1, 3), "neg"), ((3, -1), "neg2"), ((-(1 << 62), -4), "negneg"), ((1 << 63, 1), "2p63")]:
        # An empty array has no data (valid, however large its other dimension); the rest get a
        # few bytes, which no such shape matches.
        files[f"shape_{tag}.npy"] = npy(header("<f4", shape), b"" if count(shape) == 0 else b"\0" * 16)
    files["shape_2p40x0_with_data.npy"] = npy(header("<f4", (1 << 40, 0)), b"\0" * 4)
    files["shape_list.npy"] = npy("{'descr': '<i4', 'fortran_order': False, 'shape': [2, 2], }", elements("<i4", 4))
    files["shape_long_suffix.npy"] = npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 2L), }", elements("<i4", 4))
    files["shape_paren_int.npy"] = npy("{'descr': '<i4', 'fortran_order': False, 'shape': (4), }", elements("<i4", 4))
    files["shape_float.npy"] = npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2.0, 2), }", elements("<i4", 4))
    files["shape_plus.npy"] = npy("{'descr': '<i4', 'fortran_order': False, 'shape': (+2, + 2), }", elements("<i4", 4))
    files["shape_int_huge.npy"] = npy("{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999, 0), }")
    files["shape_int_min.npy"] = npy("{'descr': '<i4', 'fortran_order': False, 'shape': (-9223372036854775808, 0), }")
    files["shape_none.npy"] = npy("{'descr': '<i4', 'fortran_order': False, 'shape': None, }")

    # Format versions: 2.0 and 3.0 (4-byte header length; 3.0 a utf-8 header), unsupported others.
    files["version_2_0.npy"] = npy(header("<f4", (2, 2)), elements("<f4", 4), version=(2, 0))
    files["version_3_0.npy"] = npy(header("<u2", (3,)), elements("<u2", 3), version=(3, 0))
    files["version_3_0_utf8.npy"] = npy("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), 'n\u00e4me': '\u00b5', }",
                                        elements("<i2", 2), version=(3, 0))
    for v in [(1, 1), (4, 0), (0, 0), (2, 1), (255, 255)]:
        files[f"version_{v[0]}_{v[1]}.npy"] = npy(header("<f4", (1,)), b"\0" * 4, version=v)

    # Truncation and sizes.
    good = npy(header("<f4", (2, 3)), elements("<f4", 6))
    files["data_short.npy"] = good[:-1]
    files["data_long.npy"] = good + b"\0"
    files["header_len_beyond.npy"] = npy(header("<f4", (1,)), b"\0" * 4, header_len=4000)
    files["header_len_zero.npy"] = npy(header("<f4", (1,)), b"\0" * 4, header_len=0)
    files["header_len_max_v2.npy"] = npy(header("<f4", (1,)), b"\0" * 4, version=(2, 0), header_len=0xFFFFFFFF)
    files["header_unpadded.npy"] = npy(header("<f4", (2,)), elements("<f4", 2), pad=False)
    files["magic_only.npy"] = MAGIC
    files["magic_version.npy"] = MAGIC + b"\x01\x00"
    files["magic_v2_short.npy"] = MAGIC + b"\x02\x00\x10\x00"
    files["magic_len.npy"] = MAGIC + b"\x01\x00\x00\x00"
    files["empty.npy"] = b""
    files["npz.npy"] = b"PK\x03\x04" + b"\0" * 26
    files["bad_magic.npy"] = b"\x93NUMPX\x01\x00\x10\x00{}" + b" " * 5 + b"\n"

    # Header texts: the Python-literal parser.
    hdr = {
        "dq": '{"descr": "<f4", "fortran_order": False, "shape": (2,)}',
        "no_trailing_comma": "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
        "ws": "{ 'descr' :\t'<f4' ,\r\n 'fortran_order' : False , 'shape' : ( 2 , ) , }",
        "key_order": "{'shape': (2,), 'descr': '<f4', 'fortran_order': False}",
        "extra_key": "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': [1, (2, 3), {'y': None}], }",
        "dup_key": "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
        "missing_shape": "{'descr': '<f4', 'fortran_order': False, }",
        "missing_descr": "{'fortran_order': False, 'shape': (2,), }",
        "escape_x": "{'descr': '\\x3cf4', 'fortran_order': False, 'shape': (2,), }",
        "escape_bad": "{'descr': '<f4\\x4', 'fortran_order': False, 'shape': (2,), }",
        "escapes": "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'k': '\\\\\\'\\\"\\n\\t\\r\\0\\q', }",
        "u_prefix": "{u'descr': u'<f4', 'fortran_order': False, 'shape': (2,), }",
        "b_prefix": "{b'descr': B'<f4', 'fortran_order': False, 'shape': (2,), }",
        "unterminated": "{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }",
        "newline_in_str": "{'descr': '<f\n4', 'fortran_order': False, 'shape': (2,), }",
        "not_dict": "['descr', '<f4']",
        "empty_dict": "{}",
        "empty_text": "",
        "only_ws": "    ",
        "after_brace": "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x",
        "int_key": "{1: '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
        "true_word": "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,), }",
        "deep": "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': " + "[" * 20 + "]" * 20 + ", }",
        "deep16": "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': " + "(" * 15 + "1," + ")" * 15 + ", }",
        "unclosed": "{'descr': '<f4', 'fortran_order': False, 'shape': (2,",
        "nul": "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\0",
        "latin1": "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), '\xe9': 1, }",
    }
    for tag, text in hdr.items():
        files[f"header_{tag}.npy"] = npy(text, elements("<f4", 2))
    return files


def check_with_numpy(out, files, required):
    try:
        import numpy as np
    except ImportError:
        if required:
            sys.exit("make_npy_corpus.py: --check-numpy given but numpy is not installed")
        return
    for name, (descr, shape) in sorted(VALID.items()):
        a = np.load(os.path.join(out, name), allow_pickle=False)
        assert a.dtype.str[1:] == descr[1:] and a.shape == shape, (name, a.dtype.str, a.shape)
    print(f"numpy {np.__version__} loads the {len(VALID)} valid_* files as written")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "npy"))
    ap.add_argument("--check-numpy", action="store_true", help="fail if numpy is missing (it checks the valid_* files)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    files = corpus()
    for name, data in sorted(files.items()):
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
    check_with_numpy(args.out, files, args.check_numpy)
    print(f"{len(files)} files in {args.out}")


if __name__ == "__main__":
    main()
