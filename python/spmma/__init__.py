# SPDX-License-Identifier: BSD-3-Clause
"""spmma: structured-sparse (2:4) matrix multiply on NVIDIA's sparse tensor cores, and on the CPU.

    import spmma
    w = spmma.compress(weight)            # prune a (out_features x in_features) weight to 2:4
    y = spmma.matmul(w, x, bias=b)        # y = x @ pruned_weight.T + b

Arrays go in and out as the caller's framework holds them: numpy arrays (on the CPU; bf16 and
fp8 through ml_dtypes) and PyTorch tensors (CPU or CUDA), or anything with ``__dlpack__`` of a
builtin type. Outputs and workspaces are allocated by that framework (``numpy.empty``,
``torch.empty`` on the input's device: PyTorch's caching allocator), and a CUDA call runs on
PyTorch's current stream of that device. Nothing here links against PyTorch: one build of spmma
serves every torch.

PyTorch's side (the custom op ``torch.ops.spmma.sparse_linear``, ``SparseLinear``, ``sparsify_``):
``spmma.torch``, which imports torch; this module does not.

Errors: ``ValueError`` for a bad argument or a weight that breaks its pattern,
``NotImplementedError`` for a combination spmma does not run, ``RuntimeError`` for CUDA; each
with spmma's message (docs/python.md).
"""
from __future__ import annotations

import atexit
import sys
import weakref
from collections import OrderedDict

from . import _spmma

__version__: str = _spmma.version()
__all__ = ["SparseWeight", "compress", "matmul", "build_info", "supported_types", "__version__"]


def build_info() -> dict:
    """Version, commit, and the CUDA side of this build (what ``spmma --version`` prints)."""
    return _spmma.build_info()


def supported_types(device: str = "cpu") -> list[tuple[str, str, str]]:
    """The (weight, input, output) type combinations `device` runs ("cpu" or "cuda")."""
    return _spmma.supported_types(device)


# ---------------------------------------------------------------- frameworks

def _torch():
    try:
        import torch  # noqa: PLC0415 (optional: only when a tensor is given)
        return torch
    except ImportError:
        return None


def _is_torch(a) -> bool:
    # Any torch.Tensor, subclasses included (Parameter, buffers, FakeTensor): an object can only be
    # one if torch is already imported, so this never imports torch itself.
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


# spmma's name of each framework dtype (float32 is read as tf32, as the tensor cores read it).
_TORCH_TYPES = {
    "float16": "f16", "bfloat16": "bf16", "float32": "tf32", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2",
    "int8": "s8", "uint8": "u8", "int32": "s32",
}
_NUMPY_TYPES = {
    "float16": "f16", "bfloat16": "bf16", "float32": "tf32", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2",
    "int8": "s8", "uint8": "u8", "int32": "s32",
}
# Output types by spmma name: the framework dtype a D of that type is returned in.
_OUT_NAMES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "tf32": "float32", "e4m3": "float8_e4m3fn",
              "e5m2": "float8_e5m2", "s8": "int8", "u8": "uint8", "s32": "int32"}
_RAW = {1: "uint8", 2: "int16", 4: "int32"}  # raw views by element size


def _spmma_type(a, what: str) -> str:
    """spmma's name of an input's dtype (a weight's or x's: int32 is an output type only)."""
    return _input_type(a.dtype, what, _TORCH_TYPES if _is_torch(a) else _NUMPY_TYPES)


_INPUTS = {id(t): {k: v for k, v in t.items() if v != "s32"} for t in (_TORCH_TYPES, _NUMPY_TYPES)}  # int32: output only


def _input_type(dtype, what: str, table=_TORCH_TYPES) -> str:
    """spmma's name of an input dtype (a framework dtype, by its name), or TypeError naming it."""
    name = str(dtype).replace("torch.", "")
    inputs = _INPUTS[id(table)]
    if name not in inputs:
        raise TypeError(f"{what}: dtype {dtype} is not an spmma input type (use one of {', '.join(sorted(inputs))})")
    return inputs[name]


def _raw(a):
    """The array's bits as a builtin integer type of the same width (DLPack carries every builtin
    type, not bfloat16 or fp8 in every framework version)."""
    size = a.element_size() if _is_torch(a) else a.dtype.itemsize
    if _is_torch(a):
        torch = _torch()
        return a.view(getattr(torch, _RAW[size]))
    import numpy as np  # noqa: PLC0415
    return a.view(np.dtype(_RAW[size]))


def _device(a) -> int:
    """-1 for host memory, else the CUDA ordinal."""
    if _is_torch(a):
        return -1 if a.device.type == "cpu" else a.device.index if a.device.index is not None else 0
    return -1


def _stream(device: int) -> int:
    if device < 0:
        return 0
    return _torch().cuda.current_stream(device).cuda_stream


def _numpy_dtype(spmma_type: str):
    """numpy's dtype for a type (ml_dtypes' for bfloat16 and fp8, which numpy lacks)."""
    import numpy as np  # noqa: PLC0415
    name = _OUT_NAMES[spmma_type]
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes  # noqa: PLC0415
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def _empty(like, shape, spmma_type: str):
    """A new array of `shape` holding spmma_type, from like's framework, on like's device."""
    if _is_torch(like):
        torch = _torch()
        return torch.empty(shape, dtype=getattr(torch, _OUT_NAMES[spmma_type]), device=like.device)
    import numpy as np  # noqa: PLC0415
    return np.empty(shape, dtype=_numpy_dtype(spmma_type))


def _strides(a) -> tuple:
    """An array's strides in elements."""
    return tuple(a.stride()) if _is_torch(a) else tuple(s // a.itemsize for s in a.strides)


def _float32(v, like, n: int, what: str):
    """v as n contiguous float32 values where `like` lives (a copy only where v is not so already)."""
    if _is_torch(like):
        torch = _torch()
        t = torch.as_tensor(v, device=like.device).to(torch.float32).reshape(-1).contiguous()
    else:
        import numpy as np  # noqa: PLC0415
        t = np.ascontiguousarray(np.asarray(v, dtype=np.float32).reshape(-1))
    if t.shape[0] != n:
        raise ValueError(f"matmul: {what} has {t.shape[0]} values, the product needs {n}")
    return t


# ---------------------------------------------------------------- the compressed weight

def _bytes_array(like, n: int):
    """n uninitialised bytes (uint8, 1-D) from like's framework, on like's device."""
    return _empty(like, (n,), "u8")


def _layout(dtype: str, rows: int, k: int, device: int) -> tuple:
    """(name, value bytes, metadata bytes, alignment) of a weight where `device` computes."""
    return _spmma.layout(dtype, rows, k, device)


class SparseWeight:
    """A weight W (out_features x in_features) compressed to its type's sparsity pattern (2:4 for
    16- and 8-bit types, 1:2 for tf32), where the input array lived (CPU or a CUDA device).

    Its bytes are two arrays of the caller's framework — ``values`` and ``metadata`` (uint8, 1-D;
    torch tensors from PyTorch's allocator, numpy arrays on the CPU path) — in the layout of the
    device that runs it (``layout``: "interchange" on the CPU, "gpu-v1" on a GPU, whose rows are
    padded and whose metadata is in the kernels' order). spmma keeps no copy: the products read
    these arrays.

    ``interchange()`` gives the device-independent form (what a checkpoint stores);
    ``state()`` / ``SparseWeight.from_state`` save and restore it as numpy arrays plus type, shape
    and a format version; ``SparseWeight.from_interchange`` builds one from the interchange form
    where those arrays live; ``to(device)`` moves it.
    """

    FORMAT = "spmma-compressed-v1"

    def __init__(self, sparse, dtype: str, shape: tuple[int, int], device: int, values, metadata, weak: bool = False):
        self._s = sparse            # borrows values and metadata
        self.dtype = dtype          # spmma's type name: "bf16", "e4m3", ...
        self.shape = shape          # (out_features, in_features)
        self._device = device
        # Strong references keep the arrays alive as long as the weight; weak ones (spmma.torch's
        # cache of views over a layer's buffers) do not: the cache drops the view first.
        self._arrays = (weakref.ref(values), weakref.ref(metadata)) if weak else (values, metadata)
        self._weak = weak

    def _array(self, i: int):
        a = self._arrays[i]
        if self._weak:
            a = a()
            if a is None:
                raise RuntimeError("SparseWeight: the tensors this view borrowed are gone")
        return a

    @property
    def values(self):
        """The compressed values (uint8, 1-D, the device's layout): the caller's framework's array."""
        return self._array(0)

    @property
    def metadata(self):
        """The metadata (uint8, 1-D, the device's layout)."""
        return self._array(1)

    @property
    def device(self) -> str:
        return "cpu" if self._device < 0 else f"cuda:{self._device}"

    @property
    def layout(self) -> str:
        return _layout(self.dtype, self.shape[0], self.shape[1], self._device)[0]

    @property
    def nbytes(self) -> int:
        """Bytes of the compressed weight in the interchange form (values and metadata)."""
        return self._s.value_bytes + self._s.metadata_bytes

    def __repr__(self) -> str:
        return f"SparseWeight({self.shape[0]}x{self.shape[1]} {self.dtype}, {self.device}, {self.nbytes} bytes)"

    def interchange(self):
        """(values, metadata) in the interchange form (docs/layouts.md): uint8 arrays of one row per
        output feature, in the weight's framework and on its device (a conversion on the GPU)."""
        rows = self.shape[0]
        v = _bytes_array(self.values, self._s.value_bytes)
        m = _bytes_array(self.values, self._s.metadata_bytes)
        self._s.export_into(v, m, _stream(self._device))
        return v.reshape(rows, -1), m.reshape(rows, -1)

    @classmethod
    def from_interchange(cls, values, metadata, dtype: str, shape) -> "SparseWeight":
        """The weight whose interchange form is (values, metadata) — uint8 arrays, any shape, of its
        exact sizes — in the layout of the device they are on; every nibble is checked (ValueError
        naming the row and chunk)."""
        rows, k = (int(x) for x in shape)
        dev = _device(values)
        _, vb, mb, _ = _layout(dtype, rows, k, dev)
        v, m = _bytes_array(values, vb), _bytes_array(values, mb)
        xv, xm = (_contiguous(a).reshape(-1) for a in (values, metadata))
        s = _spmma.import_into(dtype, rows, k, _raw(xv), _raw(xm), v, m, _stream(dev))
        return cls(s, dtype, (rows, k), dev, v, m)

    @classmethod
    def borrow(cls, values, metadata, dtype: str, shape, *, _weak: bool = False) -> "SparseWeight":
        """A weight over arrays that already hold it in their device's layout (a SparseWeight's
        ``values`` and ``metadata``, or copies of them on a device of the same layout). Nothing is
        checked but sizes, device and alignment: the arrays are trusted to be what spmma wrote."""
        rows, k = (int(x) for x in shape)
        s = _spmma.borrow(dtype, rows, k, values, metadata, not _weak)
        return cls(s, dtype, (rows, k), _device(values), values, metadata, weak=_weak)

    def state(self) -> dict:
        import numpy as np  # noqa: PLC0415
        v, m = self.interchange()
        host = [np.asarray(a.cpu() if _is_torch(a) else a).reshape(-1).copy() for a in (v, m)]
        return {"format": self.FORMAT, "type": self.dtype, "shape": list(self.shape), "values": host[0],
                "metadata": host[1]}

    @classmethod
    def from_state(cls, state: dict, device: str = "cpu") -> "SparseWeight":
        if state.get("format") != cls.FORMAT:
            raise ValueError(f"SparseWeight.from_state: format {state.get('format')!r}, expected {cls.FORMAT!r}")
        import numpy as np  # noqa: PLC0415
        dev = _parse_device(device)
        arrays = [np.ascontiguousarray(np.asarray(state[k]).reshape(-1).view(np.uint8)) for k in ("values", "metadata")]
        if dev >= 0:
            torch = _torch()
            if torch is None:
                raise ValueError(f"SparseWeight.from_state: device {device!r} needs PyTorch (CUDA arrays)")
            arrays = [torch.from_numpy(a).to(f"cuda:{dev}") for a in arrays]
        return cls.from_interchange(arrays[0], arrays[1], state["type"], state["shape"])

    def to(self, device: str) -> "SparseWeight":
        dev = _parse_device(device)
        if dev == self._device:
            return self
        if _is_torch(self.values):
            v, m = self.interchange()
            target = "cpu" if dev < 0 else f"cuda:{dev}"
            return SparseWeight.from_interchange(v.to(target), m.to(target), self.dtype, self.shape)
        return SparseWeight.from_state(self.state(), device)

    def dense_bits(self):
        """The pruned dense weight's bit patterns: out_features x in_features elements at the type's
        width, as a 1-D uint8 array of the weight's framework on its device (decompressed there)."""
        d = _bytes_array(self.values, self.shape[0] * self.shape[1] * self.element_bytes)
        self._s.decompress_into(d, _stream(self._device))
        return d

    def dense(self):
        """The pruned dense weight this one stands for, as a numpy array (ml_dtypes for bf16/fp8)."""
        import numpy as np  # noqa: PLC0415
        d = self.dense_bits()
        host = np.asarray(d.cpu() if _is_torch(d) else d)
        bits = host.view(np.dtype(_RAW[self.element_bytes]))
        return bits.reshape(self.shape).view(_numpy_dtype(self.dtype)).copy()

    @property
    def element_bytes(self) -> int:
        """Bytes per element of the weight's type as the frameworks hold it."""
        return max(1, _spmma.type_bits(self.dtype) // 8)


def _contiguous(a):
    if _is_torch(a):
        return a.contiguous()
    import numpy as np  # noqa: PLC0415
    return np.ascontiguousarray(a)


def _parse_device(device) -> int:
    d = str(device)
    if d == "cpu":
        return -1
    if d == "cuda":
        return 0
    if d.startswith("cuda:") and d[5:].isdigit():
        return int(d[5:])
    raise ValueError(f"device {device!r}: use 'cpu', 'cuda' or 'cuda:N'")


def compress(weight, prune: str = "magnitude") -> SparseWeight:
    """Compress a 2-D weight (out_features x in_features, rows contiguous) where it lives, into
    two new arrays of the weight's framework (PyTorch's allocator for a tensor).

    prune="magnitude" keeps the largest magnitudes of each chunk (2 of 4); prune="check" requires
    the weight to satisfy its pattern already and raises ValueError naming the first row and
    chunk that does not.
    """
    t = _spmma_type(weight, "compress: the weight")
    dev = _device(weight)
    if getattr(weight, "ndim", 0) != 2:
        raise ValueError(f"compress: the weight must be 2-D (rows x K), it has shape {tuple(weight.shape)}")
    rows, k = int(weight.shape[0]), int(weight.shape[1])
    _, vb, mb, _ = _layout(t, rows, k, dev)
    v, m = _bytes_array(weight, vb), _bytes_array(weight, mb)
    s = _spmma.compress_into(_raw(weight), t, prune, v, m, _stream(dev))
    return SparseWeight(s, t, (rows, k), dev, v, m)


# ---------------------------------------------------------------- the product

_PLANS: OrderedDict = OrderedDict()
_MAX_PLANS = 256
# Plans are freed before the interpreter tears the extension down: a plan still cached then (when
# something, e.g. torch.compile's caches, keeps this module alive to the end) would be reported
# by nanobind as a leak, and a GPU plan would outlive its CUDA context.
atexit.register(_PLANS.clear)


def _plan(w: SparseWeight, key: tuple, make):
    p = _PLANS.get(key)
    if p is None:
        p = make()
        _PLANS[key] = p
        if len(_PLANS) > _MAX_PLANS:
            _PLANS.popitem(last=False)
    else:
        _PLANS.move_to_end(key)
    return p


def _default_out(x_type: str) -> str:
    return {"tf32": "f32", "e4m3": "bf16", "e5m2": "bf16", "s8": "s32", "u8": "s32"}.get(x_type, x_type)


def matmul(w: SparseWeight, x, bias=None, activation: str | None = None, out_dtype=None, scale_row=None,
           scale_col=None):
    """y = act(scale_row ⊗ scale_col ∘ (x @ Wᵀ) + bias), W the pruned weight, for x of shape
    (..., in_features) with its last dimension contiguous; y has shape (..., out_features).

    bias: out_features values; scale_row: out_features values (per output channel, e.g. the
    weight's quantization scales); scale_col: one value per row of x (per token). All float32
    (converted where given otherwise). activation: None, "relu" or "gelu" (exact erf).
    out_dtype: the output's dtype (a framework dtype or an spmma type name); default: x's type,
    bfloat16 for fp8, int32 for int8.
    """
    call = _prepare(w, x, bias, activation, out_dtype, scale_row, scale_col)
    if call.n == 0:
        return _empty(x, call.lead + (call.m,), call.y_type)
    return call.launch(x)


class _Call:
    """One product's checked arguments and plan (x's shape, strides, dtype and device fixed):
    launch(x) runs it for any x of that signature. spmma.torch keeps them for its eager calls."""
    __slots__ = ("w", "m", "k", "n", "lead", "dev", "y_type", "plan", "b", "sr", "sc")

    def launch(self, x):
        x2 = x.reshape(self.n, self.k)
        y = _empty(x, (self.n, self.m), self.y_type)
        p = self.plan
        ws = _empty(x, (p.workspace_bytes,), "s8") if p.workspace_bytes else None
        if _is_torch(x):
            # Raw pointers: every tensor was checked by _prepare (type, shape, device; y, the vectors
            # and the workspace made or converted on x's device), and a DLPack export per tensor
            # cost more than the launch it feeds.
            p.run_ptrs(self.w._s, x2.data_ptr(), y.data_ptr(), 1.0, 0.0, 0, _ptr(self.b), _ptr(self.sr),
                       _ptr(self.sc), _ptr(ws), _stream(self.dev))
        else:
            p.run(self.w._s, _raw(x2), _raw(y), 1.0, 0.0, None, self.b, self.sr, self.sc,
                  None if ws is None else _raw(ws), _stream(self.dev))
        return y.reshape(self.lead + (self.m,))


def _prepare(w: SparseWeight, x, bias, activation, out_dtype, scale_row, scale_col) -> _Call:
    """matmul's checks, conversions and plan for x's signature (not x's values)."""
    if not isinstance(w, SparseWeight):
        raise TypeError(f"matmul: w must be a SparseWeight (from spmma.compress), not {type(w).__name__}")
    c = _Call()
    c.w = w
    x_type = _spmma_type(x, "matmul: x")
    c.m, c.k = m, k = w.shape
    if x.ndim < 1 or int(x.shape[-1]) != k:
        raise ValueError(f"matmul: x has shape {tuple(x.shape)}, its last dimension must be in_features = {k}")
    c.lead = tuple(int(d) for d in x.shape[:-1])
    n = 1
    for d in c.lead:
        n *= d
    c.n = n
    c.y_type = _out_type(out_dtype, x_type)
    if n == 0:
        return c
    x2 = x.reshape(n, k)  # a view where x's layout allows, else a copy (the framework's rule)
    ldx, step = (int(v) for v in _strides(x2))
    if step != 1:
        raise ValueError("matmul: x's last dimension must be contiguous")
    c.dev = dev = _device(x)
    if dev != w._device:
        raise ValueError(f"matmul: x is on {'cpu' if dev < 0 else f'cuda:{dev}'}, the weight on {w.device}")
    act = activation or "none"
    c.b = b = _float32(bias, x, m, "bias") if bias is not None else None
    c.sr = sr = _float32(scale_row, x, m, "scale_row") if scale_row is not None else None
    c.sc = sc = _float32(scale_col, x, n, "scale_col") if scale_col is not None else None
    y_type = c.y_type
    key = (w.dtype, m, k, dev, n, ldx, x_type, y_type, act, b is not None, sr is not None, sc is not None)
    c.plan = _plan(w, key, lambda: _spmma.plan(w._s, n, 1, ldx, 0, m, 0, x_type, y_type, act, b is not None,
                                               sr is not None, sc is not None))
    return c


def _ptr(t) -> int:
    return 0 if t is None else t.data_ptr()


def _out_type(out_dtype, x_type: str) -> str:
    """spmma's name of an output dtype: a framework dtype, a numpy one, or an spmma name."""
    if out_dtype is None:
        return _default_out(x_type)
    name = str(out_dtype).replace("torch.", "")
    if name in _OUT_NAMES:
        return name
    try:
        import numpy as np  # noqa: PLC0415
        name = np.dtype(out_dtype).name
    except TypeError:
        pass
    for k, v in _OUT_NAMES.items():
        if v == name and k != "tf32":
            return k
    raise TypeError(f"matmul: out_dtype {out_dtype!r} is not an spmma output type (float16, bfloat16, float32, "
                    "float8_e4m3fn, float8_e5m2, int8, int32)")
