# SPDX-License-Identifier: BSD-3-Clause
"""A minimal reader and writer of Hugging Face's safetensors container (numpy only).

The format: an 8-byte little-endian header length N, N bytes of JSON (one object: per tensor
``{"dtype", "shape", "data_offsets": [begin, end]}``, offsets into the data buffer, and an
optional ``"__metadata__"`` of string to string), then the data buffer, little-endian, C order.

spmma reads and writes it itself (``spmma.torch.load_compressed_``, tests) rather than depend on
the ``safetensors`` package, which is not a dependency of spmma. Tensors come back as their raw
bytes (uint8, 1-D) with their dtype name and shape, because numpy has no bfloat16 or fp8 of its
own: the caller views the bytes as the framework's dtype. The checks are those of spmma's C++
reader (include/spmma/safetensors.hpp, docs/files.md "What decompress refuses"), so a file one
accepts the other accepts; every error names the file and what is wrong.
"""
from __future__ import annotations

import json
import os
import struct
import tempfile
from typing import NamedTuple

import numpy as np

# Bytes per element of each dtype spmma reads or writes (the format's names). The sub-byte
# dtypes (F4, F6_*) have no whole-byte size: refused, as spmma's C++ reader does.
DTYPE_SIZES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "U16": 2, "I16": 2, "F16": 2, "BF16": 2,
    "U32": 4, "I32": 4, "F32": 4,
    "U64": 8, "I64": 8, "F64": 8,
}
# spmma's C++ reader refuses larger headers: a corrupt length must not allocate gigabytes.
MAX_HEADER = 100_000_000


class Tensor(NamedTuple):
    dtype: str               # the format's name: "BF16", "U16", ...
    shape: tuple             # ints
    data: np.ndarray         # the raw bytes, uint8, 1-D, writable (little-endian elements)


class File(NamedTuple):
    tensors: dict            # name -> Tensor, in the order of the data buffer
    metadata: dict           # __metadata__ (str -> str), {} when absent


def _no_repeats(path: str):
    def hook(pairs):
        seen = {}
        for k, v in pairs:
            if k in seen:  # json.loads keeps the last one silently
                raise ValueError(f"{path}: safetensors header: the key {k!r} appears twice in one object")
            seen[k] = v
        return seen
    return hook


def _nbytes(path: str, name: str, dtype, shape) -> int:
    if dtype not in DTYPE_SIZES:
        raise ValueError(f"{path}: tensor {name!r}: dtype {dtype!r} is not one spmma reads "
                         f"({', '.join(DTYPE_SIZES)})")
    if not isinstance(shape, list) or any(type(d) is not int or d < 0 or d >= 2 ** 63 for d in shape):
        raise ValueError(f"{path}: tensor {name!r}: shape {shape!r} is not a list of non-negative integers")
    n = DTYPE_SIZES[dtype]
    for d in shape:
        n *= d
    if n >= 2 ** 63:
        raise ValueError(f"{path}: tensor {name!r}: shape {shape} of {dtype} is too large ({n} bytes)")
    return n


def read_header(path: str) -> tuple[dict, dict, int]:
    """(entries by name, __metadata__, offset of the data buffer), checked: entries are
    {"dtype", "shape", "data_offsets"} tiling the buffer exactly, in the file's order."""
    path = os.fspath(path)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ValueError(f"{path}: not a safetensors file ({size} bytes: shorter than the 8-byte header "
                                 "length)")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER or 8 + n > size:
                raise ValueError(f"{path}: not a safetensors file (header length {n} is beyond the file's {size} bytes "
                                 f"or over {MAX_HEADER})")
            raw = f.read(n)
    except OSError as e:
        raise OSError(e.errno, f"{path}: {e.strerror}") from e
    if not raw.startswith(b"{"):
        raise ValueError(f"{path}: not a safetensors file (the header does not start with '{{')")
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_repeats(path))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: safetensors header is not UTF-8 ({e.reason} at byte {e.start})") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: safetensors header is not JSON ({e.msg} at byte {e.pos})") from e
    if not isinstance(header, dict):
        raise ValueError(f"{path}: safetensors header is not a JSON object")
    meta = header.pop("__metadata__", None)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict) or any(not isinstance(v, str) for v in meta.values()):
        raise ValueError(f"{path}: safetensors __metadata__ must be an object of strings")
    base, buffer = 8 + n, size - 8 - n
    spans = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise ValueError(f"{path}: tensor {name!r}: an entry needs exactly dtype, shape and data_offsets, it has "
                             f"{sorted(e) if isinstance(e, dict) else type(e).__name__}")
        nbytes = _nbytes(path, name, e["dtype"], e["shape"])
        off = e["data_offsets"]
        if (not isinstance(off, list) or len(off) != 2 or any(type(o) is not int for o in off)
                or not 0 <= off[0] <= off[1] <= buffer):
            raise ValueError(f"{path}: tensor {name!r}: data_offsets {off!r} is not [begin, end] within the "
                             f"{buffer}-byte data buffer")
        if off[1] - off[0] != nbytes:
            raise ValueError(f"{path}: tensor {name!r}: data_offsets {off} hold {off[1] - off[0]} bytes, its shape "
                             f"{e['shape']} of {e['dtype']} needs {nbytes}")
        spans.append((off[0], off[1], name))
    spans.sort()
    at = 0
    for begin, end, name in spans:
        if begin != at:
            why = "overlaps the tensor before it" if begin < at else f"leaves a gap of {begin - at} bytes before it"
            raise ValueError(f"{path}: tensor {name!r} {why}: the tensors must tile the data buffer")
        at = end
    if at != buffer:
        raise ValueError(f"{path}: {buffer - at} bytes after the last tensor: the tensors must tile the data buffer")
    ordered = {name: header[name] for _, _, name in spans}
    return ordered, dict(meta), base


def read(path: str, names=None) -> File:
    """The file's tensors (all, or those named in `names`) as raw bytes, and its __metadata__."""
    path = os.fspath(path)
    entries, meta, base = read_header(path)
    tensors = {}
    with open(path, "rb") as f:
        for name, e in entries.items():
            if names is not None and name not in names:
                continue
            begin, end = e["data_offsets"]
            f.seek(base + begin)
            data = np.fromfile(f, dtype=np.uint8, count=end - begin)  # one read, into a fresh array
            if data.size != end - begin:
                raise ValueError(f"{path}: tensor {name!r}: the file ended after {data.size} of its "
                                 f"{end - begin} bytes")
            tensors[name] = Tensor(e["dtype"], tuple(e["shape"]), data)
    return File(tensors, meta)


def _bytes_of(path: str, name: str, data) -> np.ndarray:
    """Any array's bytes (numpy, or a torch tensor on the CPU) as uint8, C order."""
    if hasattr(data, "detach") and hasattr(data, "numpy"):  # a torch tensor: its raw bytes (bf16, fp8 too)
        import torch  # noqa: PLC0415 (only when one is given)
        data = data.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
    a = np.ascontiguousarray(data)
    if a.dtype.byteorder == ">":
        raise ValueError(f"{path}: tensor {name!r} is big-endian ({a.dtype}); safetensors holds little-endian data")
    return a.reshape(-1).view(np.uint8)


def write(path: str, tensors: dict, metadata: dict | None = None) -> None:
    """Write `tensors` (name -> (dtype name, shape, data)) and `metadata` (str -> str) to `path`.

    data is anything holding the tensor's bytes in C order (a numpy array of any dtype, a CPU
    torch tensor); its byte count must be the shape's. The header is padded with spaces so that
    the data starts 8-byte aligned (as spmma and the safetensors library write it). The file is
    written to a temporary beside `path` and renamed over it: a failure leaves no partial file."""
    path = os.fspath(path)
    header, parts, at = {}, [], 0
    if metadata:
        if any(not isinstance(k, str) or not isinstance(v, str) for k, v in metadata.items()):
            raise ValueError(f"{path}: __metadata__ must map strings to strings")
        header["__metadata__"] = dict(metadata)
    for name, (dtype, shape, data) in tensors.items():
        if name == "__metadata__":
            raise ValueError(f"{path}: a tensor may not be named '__metadata__'")
        shape = [int(d) for d in shape]
        b = _bytes_of(path, name, data)
        if b.size != _nbytes(path, name, dtype, shape):
            raise ValueError(f"{path}: tensor {name!r}: {b.size} bytes given, shape {shape} of {dtype} needs "
                             f"{_nbytes(path, name, dtype, shape)}")
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + b.size]}
        parts.append(b)
        at += b.size
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-(8 + len(raw)) % 8)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".spmma-tmp-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(raw)))
            f.write(raw)
            for b in parts:
                f.write(memoryview(b))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
