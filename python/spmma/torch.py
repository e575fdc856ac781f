# SPDX-License-Identifier: BSD-3-Clause
"""spmma.torch: spmma's 2:4 sparse linear layer for PyTorch (docs/python.md, "PyTorch").

    import spmma.torch as st
    layer = st.SparseLinear.from_dense(nn.Linear(4096, 4096).half())   # prune to 2:4, compress
    st.sparsify_(model)                                                  # every nn.Linear it can
    y = layer(x)                                                         # torch.ops.spmma.sparse_linear

The product is the custom op ``spmma::sparse_linear`` (``torch.library.custom_op``) with a fake
(meta) kernel, so ``torch.compile(fullgraph=True)`` traces through it and CUDA graphs capture it.

The compressed weight is two uint8 tensors from PyTorch's allocator, ``values`` and
``metadata`` (1-D), in the layout of the device they are on (``spmma.SparseWeight``: the
interchange form on the CPU; on a GPU rows padded to whole tiles and the metadata in the
kernels' order). A ``SparseLinear`` holds them as buffers and spmma's kernels read them where
they are: the weight is held once. Its ``state_dict()`` holds the device-independent interchange
form (one row per output feature, docs/layouts.md), converted on the way out and in (on the GPU:
one kernel), so a checkpoint loads on any device; ``.to()`` / ``.cuda()`` / ``.cpu()`` convert
the layout where the device type changes.

Importing this module imports torch; ``import spmma`` alone does not.
"""
import atexit
import logging
import math
import threading
import weakref
from typing import Callable, Optional

import torch
from torch import Tensor, nn

from . import (_OUT_NAMES, SparseWeight, _input_type, _out_type, _prepare, _spmma, compress, matmul)

__all__ = ["SparseLinear", "sparsify_", "sparse_linear", "to_semi_structured", "dense_weight", "load_compressed_",
           "save_compressed"]

_log = logging.getLogger(__name__)


def _dtype_of(spmma_type: str) -> torch.dtype:
    """The torch dtype holding a type's values (tf32 in float32)."""
    return getattr(torch, _OUT_NAMES[spmma_type])


def _check_activation(activation: Optional[str], what: str) -> Optional[str]:
    if activation not in (None, "relu", "gelu"):
        raise ValueError(f"{what}: activation = {activation!r} (use None, 'relu' or 'gelu')")
    return activation


_SUPPORTED: dict = {}


def _supported(device_type: str) -> set:
    """(weight, x, out) spmma type triples the device runs (the library's list, read once)."""
    if device_type not in _SUPPORTED:
        _SUPPORTED[device_type] = set(_spmma.supported_types("cuda" if device_type == "cuda" else "cpu"))
    return _SUPPORTED[device_type]


def _ordinal(device: torch.device) -> int:
    """spmma's device number: -1 for the CPU, else the CUDA ordinal."""
    return -1 if device.type == "cpu" else device.index if device.index is not None else torch.cuda.current_device()


_LAYOUTS: dict = {}


def _layout(weight_type: str, out_features: int, in_features: int, device: torch.device) -> tuple:
    """(name, value bytes, metadata bytes, alignment) of a weight's buffers on `device` (cached:
    the fake kernel asks it on every trace)."""
    key = (weight_type, out_features, in_features, device.type)
    if key not in _LAYOUTS:
        dev = -1 if device.type == "cpu" else _ordinal(device)
        _LAYOUTS[key] = _spmma.layout(weight_type, out_features, in_features, dev)
    return _LAYOUTS[key]


def _check(x: Tensor, values: Tensor, metadata: Tensor, weight_type: str, in_features: int, out_features: int, bias,
           activation, out_dtype, scale_row, scale_col) -> str:
    """What the op can check from metadata alone (shapes, dtypes, devices): shared by the real
    kernel and the fake one, so that torch.compile reports a bad call where it is traced.
    Returns the output's spmma type."""
    what = "spmma::sparse_linear"
    if x.dim() < 1 or int(x.shape[-1]) != in_features:
        raise ValueError(f"{what}: x has shape {tuple(x.shape)}, its last dimension must be "
                         f"in_features = {in_features}")
    x_type = _input_type(x.dtype, f"{what}: x")
    _input_type(_dtype_of(weight_type), f"{what}: the weight")
    y_type = _out_type(out_dtype, x_type)
    ok = _supported(x.device.type)
    if not ok:
        raise NotImplementedError(f"{what}: this spmma build runs nothing on {x.device.type} "
                                  f"(spmma.build_info(): {_spmma.build_info()})")
    if (weight_type, x_type, "f32" if y_type == "tf32" else y_type) not in ok:
        xs = sorted({str(_dtype_of(b)) for a, b, _ in ok if a == weight_type})
        raise NotImplementedError(
            f"{what}: x of dtype {x.dtype} with a {_dtype_of(weight_type)} ({weight_type}) weight, output "
            f"{_dtype_of(y_type)}: spmma does not run this combination on {x.device.type} (x may be "
            f"{', '.join(xs) or 'nothing'}; cast x, or sparsify the layer in x's dtype)")
    name, vb, mb, _ = _layout(weight_type, out_features, in_features, x.device)
    for t, n, size in ((values, "values", vb), (metadata, "metadata", mb)):
        if t.device != x.device:
            raise ValueError(f"{what}: x is on {x.device}, the weight's {n} on {t.device}")
        if t.dtype != torch.uint8 or t.dim() != 1 or int(t.numel()) != size or (t.numel() > 1 and t.stride(0) != 1):
            raise ValueError(f"{what}: {n} must be a contiguous 1-D uint8 tensor of {size} bytes (a "
                             f"{out_features} x {in_features} {weight_type} weight in the {name} layout of "
                             f"{x.device.type}: SparseLinear's buffers), it is {t.dim()}-D {t.dtype} of "
                             f"{t.numel()} elements")
    _check_activation(activation, what)
    for v, n in ((bias, "bias"), (scale_row, "scale_row")):
        if v is not None and v.numel() != out_features:
            raise ValueError(f"{what}: {n} has {v.numel()} values, the weight has out_features = {out_features}")
    if scale_col is not None and scale_col.numel() != math.prod(x.shape[:-1]):
        raise ValueError(f"{what}: scale_col has {scale_col.numel()} values, x has {math.prod(x.shape[:-1])} rows")
    return y_type


# ---------------------------------------------------------------- the weights the kernels read
#
# One SparseWeight per (values, metadata) pair: a view that borrows the two tensors (no copy; the
# kernels read the tensors' memory as it is at each run, so an in-place write, e.g. by
# load_state_dict, is seen by the next run). Kept because a view carries what spmma encodes once
# per weight (the kernels' tensor maps). Keyed on what identifies the memory (device, data
# pointers, shapes, type); an entry lives as long as both tensors' storages (a finalizer on
# each), so memory freed and reused by another tensor never finds a stale entry.

_CACHE: dict = {}
_LOCK = threading.Lock()


@atexit.register
def _clear() -> None:  # spmma's views go before the extension and the CUDA context (see spmma._PLANS)
    with _LOCK:
        _CACHE.clear()


def _key(values: Tensor, metadata: Tensor, weight_type: str, in_features: int, out_features: int) -> tuple:
    return (str(values.device), weight_type, in_features, out_features) + tuple(
        (t.data_ptr(), tuple(t.shape), tuple(t.stride())) for t in (values, metadata))


def _evict(key: tuple) -> None:
    with _LOCK:
        _CACHE.pop(key, None)


def _store(key: tuple, values: Tensor, metadata: Tensor, w: SparseWeight) -> None:
    with _LOCK:
        new = key not in _CACHE
        _CACHE[key] = w
    if new:
        for t in (values, metadata):
            weakref.finalize(t.untyped_storage(), _evict, key)


def _weight(values: Tensor, metadata: Tensor, weight_type: str, in_features: int, out_features: int) -> SparseWeight:
    """The SparseWeight over the two tensors, from the cache or made (and cached)."""
    key = _key(values, metadata, weight_type, in_features, out_features)
    with _LOCK:
        w = _CACHE.get(key)
    if w is None:
        # A weak view: the cache must not keep the tensors alive (their storages' finalizers drop
        # the entry); every caller holds the tensors while it uses the view.
        w = SparseWeight.borrow(values, metadata, weight_type, (out_features, in_features), _weak=True)
        _store(key, values, metadata, w)
    return w


def _interchange(values: Tensor, metadata: Tensor, weight_type: str, in_features: int,
                 out_features: int) -> tuple[Tensor, Tensor]:
    """The buffers' weight in the interchange form: (out_features x value bytes per row,
    out_features x metadata bytes per row) uint8, on their device."""
    return _weight(values, metadata, weight_type, in_features, out_features).interchange()


def _from_interchange(values: Tensor, metadata: Tensor, weight_type: str, in_features: int,
                      out_features: int) -> tuple[Tensor, Tensor]:
    """Buffers in their device's layout from the interchange form (checked: ValueError naming the
    row and chunk of a forbidden nibble)."""
    w = SparseWeight.from_interchange(values, metadata, weight_type, (out_features, in_features))
    return w.values, w.metadata


# ---------------------------------------------------------------- the op

def _sparse_linear(x, values, metadata, weight_type, in_features, out_features, bias=None, activation=None,
                   out_dtype=None, scale_row=None, scale_col=None):
    """The op's implementation (SparseLinear calls it directly in eager inference: see forward)."""
    _check(x, values, metadata, weight_type, in_features, out_features, bias, activation, out_dtype, scale_row,
           scale_col)
    w = _weight(values, metadata, weight_type, in_features, out_features)
    if x.stride(-1) != 1:  # F.linear takes any strides: so does this (one copy)
        x = x.contiguous()
    return matmul(w, x, bias=bias, activation=activation, out_dtype=out_dtype, scale_row=scale_row,
                  scale_col=scale_col)


@torch.library.custom_op("spmma::sparse_linear", mutates_args=())
def sparse_linear(x: Tensor, values: Tensor, metadata: Tensor, weight_type: str, in_features: int,
                  out_features: int, bias: Optional[Tensor] = None, activation: Optional[str] = None,
                  out_dtype: Optional[torch.dtype] = None, scale_row: Optional[Tensor] = None,
                  scale_col: Optional[Tensor] = None) -> Tensor:
    """y = act(scale_row ⊗ scale_col ∘ (x @ Wᵀ) + bias) for x (..., in_features); y (..., out_features).

    W is the compressed weight: ``values`` and ``metadata`` (uint8, 1-D, in the layout of their
    device, as SparseLinear holds them and spmma.compress returns them), ``weight_type`` its spmma
    type name ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"). The rest as ``spmma.matmul``.
    """
    return _sparse_linear(x, values, metadata, weight_type, in_features, out_features, bias, activation, out_dtype,
                          scale_row, scale_col)


@torch.library.custom_op("spmma::dense_weight", mutates_args=())
def _dense_weight_op(values: Tensor, metadata: Tensor, weight_type: str, in_features: int,
                     out_features: int) -> Tensor:
    """The pruned dense weight (out_features x in_features) of buffers in their device's layout,
    decompressed where they are (the gradient of x needs it)."""
    bits = _weight(values, metadata, weight_type, in_features, out_features).dense_bits()
    return bits.view(_dtype_of(weight_type)).reshape(out_features, in_features)


@_dense_weight_op.register_fake
def _dense_weight_fake(values, metadata, weight_type, in_features, out_features):
    return values.new_empty((out_features, in_features), dtype=_dtype_of(weight_type))


_is_compiling = getattr(torch.compiler, "is_compiling", None) or torch._dynamo.is_compiling


# SparseLinear's eager calls: per layer, per x signature (dtype, device, shape, strides), the
# checked arguments and plan of the last call (spmma._Call), with the tensors it was made for
# (and the bias's version); a call with the same signature and tensors only allocates y and
# launches. The checks, the weight cache's lookup and the plan cache's key took most of a call's
# Python time (CPU profile: _check, _weight and spmma.matmul's own lines). At most _MAX_CALLS
# signatures per layer (prefill lengths vary); outside the layer (a weak key), so deepcopy and
# pickling never see them.
_CALLS: "weakref.WeakKeyDictionary[nn.Module, dict]" = weakref.WeakKeyDictionary()
_MAX_CALLS = 16


def _bias_version(bias: Optional[Tensor]):
    try:
        return None if bias is None else bias._version
    except RuntimeError:  # an inference tensor
        return None


def _eager(layer: "SparseLinear", x: Tensor) -> Tensor:
    v, md, b = layer.values, layer.metadata, layer.bias
    if x.stride(-1) != 1:  # a copy of x: the whole path
        return _sparse_linear(x, v, md, layer.weight_type, layer.in_features, layer.out_features, b,
                              layer.activation, layer.out_dtype)
    calls = _CALLS.setdefault(layer, {})
    sig = (x.dtype, x.device, x.shape, x.stride())
    e = calls.get(sig)
    bv = _bias_version(b)
    if e is not None and e[0] is v and e[1] is md and e[2] is b and e[3] == bv:
        return e[4].launch(x)
    _check(x, v, md, layer.weight_type, layer.in_features, layer.out_features, b, layer.activation, layer.out_dtype,
           None, None)
    call = _prepare(_weight(v, md, layer.weight_type, layer.in_features, layer.out_features), x, b, layer.activation,
                    layer.out_dtype, None, None)
    if call.n == 0:
        return matmul(call.w, x, bias=b, activation=layer.activation, out_dtype=layer.out_dtype)
    calls.pop(sig, None)
    calls[sig] = (v, md, b, bv, call)
    if len(calls) > _MAX_CALLS:
        calls.pop(next(iter(calls)))
    return call.launch(x)


@sparse_linear.register_fake
def _sparse_linear_fake(x, values, metadata, weight_type, in_features, out_features, bias=None, activation=None,
                        out_dtype=None, scale_row=None, scale_col=None):
    y_type = _check(x, values, metadata, weight_type, in_features, out_features, bias, activation, out_dtype,
                    scale_row, scale_col)
    return x.new_empty(tuple(x.shape[:-1]) + (out_features,), dtype=_dtype_of(y_type))


# Gradients for x and bias (a frozen sparse layer inside a model being trained, e.g. with
# adapters). dX = (dY ∘ act'(Z) ∘ scales) · W with W the pruned dense weight, in float32; the
# compressed weight has none (its buffers are not parameters).

def _setup_context(ctx, inputs, output):
    (x, values, metadata, weight_type, in_features, out_features, bias, activation, out_dtype, scale_row,
     scale_col) = inputs
    ctx.save_for_backward(x, values, metadata, bias, scale_row, scale_col)
    ctx.args = (weight_type, in_features, out_features, activation)


def _backward(ctx, grad):
    x, values, metadata, bias, scale_row, scale_col = ctx.saved_tensors
    weight_type, in_features, m, activation = ctx.args
    # needs_input_grad covers the arguments given (a traced call leaves out those at their default)
    need = [i < len(ctx.needs_input_grad) and ctx.needs_input_grad[i] for i in range(11)]
    if need[9] or need[10]:
        raise NotImplementedError("spmma::sparse_linear: no gradient for scale_row or scale_col (only x and bias)")
    g = grad.reshape(-1, m).to(torch.float32)
    if activation is not None:
        z = sparse_linear(x, values, metadata, weight_type, in_features, m, bias, None, torch.float32, scale_row,
                          scale_col).reshape(-1, m)
        if activation == "relu":
            g = g * (z > 0)
        else:  # exact GELU: Φ(z) + z·φ(z)
            g = g * (0.5 * (1 + torch.erf(z * 0.7071067811865476)) + z * torch.exp(-0.5 * z * z) * 0.3989422804014327)
    gx = gb = None
    if need[0]:
        gs = g
        if scale_row is not None:
            gs = gs * scale_row.to(torch.float32).reshape(1, m)
        if scale_col is not None:
            gs = gs * scale_col.to(torch.float32).reshape(-1, 1)
        w = _dense_weight_op(values, metadata, weight_type, in_features, m).to(torch.float32)
        if weight_type == "tf32":  # the product read W as tf32 (the low 13 mantissa bits ignored): so does its gradient
            w = (w.view(torch.int32) & -8192).view(torch.float32)
        gx = (gs @ w).to(x.dtype).reshape(x.shape)
    if bias is not None and need[6]:
        gb = g.sum(0).to(bias.dtype).reshape(bias.shape)
    return gx, None, None, None, None, None, gb, None, None, None, None


sparse_linear.register_autograd(_backward, setup_context=_setup_context)


def dense_weight(values: Tensor, metadata: Tensor, weight_type: str, in_features: int) -> Tensor:
    """The pruned dense weight (out_features x in_features, in the weight's dtype) that values and
    metadata in the interchange form (2-D: one row per output feature, as ``SparseLinear.
    interchange()`` and a state_dict hold them) stand for, decompressed with torch ops where they
    live (any device, traceable), bit for bit (tests: against SparseWeight.dense's bits). For a
    layer's own buffers: ``SparseLinear.dense_weight()``."""
    m, k = int(values.shape[0]), in_features
    dtype = _dtype_of(weight_type)
    size = torch.empty((), dtype=dtype).element_size()
    raw = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[size]
    chunk = 2 if weight_type == "tf32" else 4  # 1:2 for tf32, 2:4 for every other type torch holds
    chunks = k // chunk
    kept = values.contiguous().view(raw).reshape(m, chunks, chunk // 2)
    # Nibble c of a row: bits 4(c%4)..4(c%4)+3 of 16-bit word c/4 (little-endian bytes).
    words = metadata.contiguous().view(torch.int16).to(torch.int32) & 0xFFFF
    nib = ((words.unsqueeze(-1) >> torch.tensor([0, 4, 8, 12], device=words.device)) & 0xF).reshape(m, -1)[:, :chunks]
    if chunk == 4:  # stored element j at dense position 4c + bits [2j+1:2j] of the nibble
        pos = torch.stack((nib & 3, (nib >> 2) & 3), dim=-1)
    else:  # 0x4: element 0 kept, 0xE: element 1
        pos = ((nib & 3) >> 1).unsqueeze(-1)
    dense = torch.zeros((m, chunks, chunk), dtype=raw, device=values.device)
    dense.scatter_(2, pos.to(torch.int64), kept)
    return dense.reshape(m, k).view(dtype)


# ---------------------------------------------------------------- the layer

class SparseLinear(nn.Module):
    """y = act(x · Wᵀ + bias) with W compressed to its 2:4 pattern (1:2 for float32, read as tf32).

    ``SparseLinear.from_dense(linear)`` prunes and compresses an nn.Linear (``from_weight`` a
    weight tensor); ``SparseLinear(in_features, out_features, dtype=...)`` makes an all-zero one to
    load a state_dict into. The compressed weight is the buffers ``values`` and ``metadata``
    (uint8, 1-D, in the layout of their device: see the module's docstring), read in place by
    spmma's kernels; ``.half()`` / ``.to(dtype)`` cast the bias only: the weight keeps the dtype it
    was compressed in, and x must match it. The state_dict holds the weight in the interchange
    form (one row per output feature) and ``_extra_state`` its type and shape. ``bias`` is a
    Parameter in the weight's dtype (float32 for 8-bit weights), trainable: the op has gradients
    for x and bias.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, dtype: torch.dtype = torch.float16,
                 device=None, activation: Optional[str] = None, out_dtype: Optional[torch.dtype] = None):
        super().__init__()
        what = "SparseLinear"
        weight_type = _input_type(dtype, f"{what}: the weight")
        dev = torch.device(device if device is not None else "cpu")
        if dev.type == "meta":
            # The layout is the device's that load_state_dict(assign=True) or .to_empty() brings:
            # the interchange form's sizes stand in (converted on load, see _load_from_state_dict).
            _, vb, mb, _ = _layout(weight_type, out_features, in_features, torch.device("cpu"))
            values = torch.empty(vb, dtype=torch.uint8, device="meta")
            metadata = torch.empty(mb, dtype=torch.uint8, device="meta")
        else:
            sw = compress(torch.zeros(out_features, in_features, dtype=dtype, device=dev))
            values, metadata = sw.values, sw.metadata
        b = torch.zeros(out_features, dtype=_bias_dtype(dtype), device=device) if bias else None
        self._init(values, metadata, weight_type, in_features, out_features, b, activation, out_dtype)

    def _init(self, values, metadata, weight_type, in_features, out_features, bias, activation, out_dtype):
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight_type = weight_type
        self.activation = _check_activation(activation, "SparseLinear")
        if out_dtype is not None and not isinstance(out_dtype, torch.dtype):
            raise TypeError(f"SparseLinear: out_dtype must be a torch.dtype or None, not {out_dtype!r}")
        self.out_dtype = out_dtype
        self.register_buffer("values", values)
        self.register_buffer("metadata", metadata)
        self.bias = nn.Parameter(bias) if bias is not None else None

    @property
    def weight_dtype(self) -> torch.dtype:
        return _dtype_of(self.weight_type)

    @classmethod
    def from_weight(cls, weight: Tensor, bias: Optional[Tensor] = None, *, prune: str = "magnitude",
                    dtype: Optional[torch.dtype] = None, activation: Optional[str] = None,
                    out_dtype: Optional[torch.dtype] = None) -> "SparseLinear":
        """From a weight (out_features x in_features; a dense tensor, pruned here, or PyTorch's
        SparseSemiStructuredTensor) and an optional bias, on the weight's device. dtype: cast the
        weight first (e.g. float16 for a float32 layer, which would otherwise compress to 1:2 as
        tf32). prune: "magnitude" (keep the 2 largest of every 4) or "check" (the weight must be
        2:4 already; ValueError naming the first row and chunk that is not)."""
        what = "SparseLinear.from_weight"
        with torch.no_grad():
            w = weight.detach()
            if _is_semi_structured(w):
                w = _semi_structured_dense(w)
                prune = "check"  # already 2:4: a pruning would be a silent change
            if w.dim() != 2:
                raise ValueError(f"{what}: the weight has shape {tuple(w.shape)}, it must be 2-D (out x in features)")
            if w.device.type == "meta":
                raise ValueError(f"{what}: the weight is on the meta device (no values to prune): build "
                                 f"SparseLinear({w.shape[1]}, {w.shape[0]}, device='meta') and load a state_dict")
            if dtype is not None:
                w = w.to(dtype)
            weight_type = _input_type(w.dtype, f"{what}: the weight")
            sw = compress(w.contiguous(), prune)  # values and metadata from PyTorch's allocator
            m, k = int(w.shape[0]), int(w.shape[1])
            b = None
            if bias is not None:
                b = bias.detach().to(device=w.device, dtype=_bias_dtype(w.dtype)).clone()
        layer = cls.__new__(cls)
        nn.Module.__init__(layer)
        layer._init(sw.values, sw.metadata, weight_type, k, m, b, activation, out_dtype)
        return layer

    @classmethod
    def from_dense(cls, linear: nn.Linear, prune: str = "magnitude", *, dtype: Optional[torch.dtype] = None,
                   activation: Optional[str] = None, out_dtype: Optional[torch.dtype] = None) -> "SparseLinear":
        """An nn.Linear pruned to 2:4 and compressed (see from_weight); ``linear`` is left as it was."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"SparseLinear.from_dense: expected an nn.Linear, got {type(linear).__name__}")
        return cls.from_weight(linear.weight, linear.bias, prune=prune, dtype=dtype, activation=activation,
                               out_dtype=out_dtype)

    @classmethod
    def from_interchange(cls, values, metadata, weight_type, shape, bias: Optional[Tensor] = None, *,
                         activation: Optional[str] = None,
                         out_dtype: Optional[torch.dtype] = None) -> "SparseLinear":
        """A layer from a weight in the interchange form (docs/layouts.md; what ``interchange()``,
        a state_dict and ``spmma compress`` of a checkpoint hold): ``values`` (out_features rows of
        in_features/2 elements) and ``metadata`` (out_features rows of 16-bit words), tensors of
        any dtype and shape holding exactly those bytes, on the device the layer is to live on
        (numpy arrays: the CPU). weight_type: spmma's type name ("bf16", "f16", "tf32", "e4m3",
        "e5m2", "s8", "u8") or the torch dtype; shape: (out_features, in_features). The bytes are
        converted into the device's layout there, every nibble checked (ValueError naming the row
        and chunk); no dense weight is made. bias: as from_weight (moved to the values' device)."""
        what = "SparseLinear.from_interchange"
        if isinstance(weight_type, torch.dtype):
            weight_type = _input_type(weight_type, f"{what}: weight_type")
        if weight_type not in _OUT_NAMES or weight_type in ("s32", "f32"):
            raise ValueError(f"{what}: weight_type {weight_type!r} is not an spmma weight type (f16, bf16, tf32, "
                             "e4m3, e5m2, s8, u8)")
        m, k = (int(v) for v in shape)
        _, vb, mb, _ = _layout(weight_type, m, k, torch.device("cpu"))  # the interchange form's sizes
        raw = []
        for a, name, size in ((values, "values", vb), (metadata, "metadata", mb)):
            if not isinstance(a, Tensor):
                import numpy as np  # noqa: PLC0415 (numpy arrays: ml_dtypes' bfloat16 has no torch.from_numpy)
                a = torch.from_numpy(np.ascontiguousarray(a).reshape(-1).view(np.uint8))
            a = a.detach().contiguous().reshape(-1).view(torch.uint8)
            if a.numel() != size:
                raise ValueError(f"{what}: {name} holds {a.numel()} bytes, a {m} x {k} {weight_type} weight's "
                                 f"interchange {name} are {size} bytes ({m} x {size // max(m, 1)})")
            raw.append(a)
        if raw[0].device != raw[1].device:
            raise ValueError(f"{what}: values are on {raw[0].device}, metadata on {raw[1].device}")
        v, md = _from_interchange(raw[0], raw[1], weight_type, k, m)
        b = None
        if bias is not None:
            b = torch.as_tensor(bias).detach().to(device=v.device, dtype=_bias_dtype(_dtype_of(weight_type))).clone()
            if b.numel() != m:
                raise ValueError(f"{what}: bias has {b.numel()} values, the weight has out_features = {m}")
            b = b.reshape(m)
        layer = cls.__new__(cls)
        nn.Module.__init__(layer)
        layer._init(v, md, weight_type, k, m, b, activation, out_dtype)
        return layer

    def forward(self, x: Tensor) -> Tensor:
        # Eager inference (a plain tensor, nothing to differentiate, not tracing) calls the op's
        # implementation directly, through the per-signature calls of _eager: torch.library's
        # dispatch and autograd wrapper took 80 of a call's 190 µs here (CPU, cProfile), and an
        # eager Llama-3-8B MLP block on the H100 spent 400-550 µs beyond its kernels, 180-280 µs
        # without the dispatch (docs/python.md). Tracing (torch.compile, export), fake tensors and
        # gradients go through the op, which is what they need it for.
        if (type(x) is torch.Tensor and not _is_compiling()
                and not (torch.is_grad_enabled() and (x.requires_grad or (self.bias is not None and self.bias.requires_grad)))):
            return _eager(self, x)
        return sparse_linear(x, self.values, self.metadata, self.weight_type, self.in_features, self.out_features,
                             self.bias, self.activation, self.out_dtype)

    def _apply(self, fn, *args, **kwargs):
        # .to(), .cuda(), .cpu(): the buffers move byte for byte, but the CPU and a GPU lay the
        # weight out differently: where the device type changes, the weight leaves in the
        # interchange form and is converted on arrival. Which device fn sends uint8 tensors to is
        # asked of an empty probe (fn is opaque).
        _CALLS.pop(self, None)  # new tensors: drop the calls made for the old ones
        old = self.values.device
        new = fn(torch.empty(0, dtype=torch.uint8, device=old)).device
        if old.type == new.type or "meta" in (old.type, new.type):
            return super()._apply(fn, *args, **kwargs)
        xv, xm = self.interchange()
        super()._apply(fn, *args, **kwargs)
        self.values, self.metadata = _from_interchange(fn(xv), fn(xm), self.weight_type, self.in_features,
                                                       self.out_features)
        return self

    # Pickling (torch.save(model), copy.deepcopy) carries the module's buffers as they are, and a
    # GPU layout unpickled onto the CPU (torch.load(map_location="cpu")) can have exactly the
    # interchange form's sizes (out_features a multiple of 128, 16-bit weights) while meaning
    # something else: a silently wrong weight. So a pickled layer carries the interchange form,
    # and unpickling converts it into the layout of the device its tensors arrive on.
    def __getstate__(self):
        state = super().__getstate__()
        if self.values.device.type != "meta":
            with torch.no_grad():
                v, m = self.interchange()
            state["_buffers"] = dict(state["_buffers"], values=v, metadata=m)
            state["_spmma_interchange"] = True
        return state

    def __setstate__(self, state):
        interchange = state.pop("_spmma_interchange", False)
        super().__setstate__(state)
        if interchange:
            with torch.no_grad():
                v, m = _from_interchange(self._buffers["values"], self._buffers["metadata"], self.weight_type,
                                         self.in_features, self.out_features)
            self._buffers["values"], self._buffers["metadata"] = v, m

    def interchange(self) -> tuple[Tensor, Tensor]:
        """The weight in the interchange form (docs/layouts.md): (out_features x value bytes per
        row, out_features x metadata bytes per row) uint8 tensors on the layer's device."""
        return _interchange(self.values, self.metadata, self.weight_type, self.in_features, self.out_features)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if self.values.device.type != "meta":
            with torch.no_grad():
                v, m = self.interchange()
            destination[prefix + "values"], destination[prefix + "metadata"] = v, m
        else:  # no bytes to convert: the layer was never loaded (shapes say what a load expects)
            rows = self.out_features
            destination[prefix + "values"] = self.values.reshape(rows, -1)
            destination[prefix + "metadata"] = self.metadata.reshape(rows, -1)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # The module's own loader for the bias and _extra_state (which may set weight_type) first,
        # with the two weight keys left out; then the weight, from the interchange form into the
        # buffers' device layout (checked), in place where the buffers hold it already.
        keys = (prefix + "values", prefix + "metadata")
        given = [state_dict.get(k) for k in keys]
        rest = {k: v for k, v in state_dict.items() if k not in keys}
        super()._load_from_state_dict(rest, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        for k, t in zip(keys, given):
            if t is not None and k in missing_keys:
                missing_keys.remove(k)
        if given[0] is None or given[1] is None:
            return
        what = f"SparseLinear.load_state_dict ({prefix or 'the layer'})"
        m, k = self.out_features, self.in_features
        _, vb, mb, _ = _layout(self.weight_type, m, k, torch.device("cpu"))  # interchange sizes
        for t, name, size in ((given[0], "values", vb), (given[1], "metadata", mb)):
            if not isinstance(t, Tensor) or t.dtype != torch.uint8 or t.numel() != size:
                error_msgs.append(f"{what}: {name} must be the interchange form, {size} uint8 bytes "
                                  f"({m} x {size // m}), got {getattr(t, 'dtype', type(t).__name__)} of "
                                  f"{getattr(t, 'numel', lambda: '?')()} elements")
                return
        assign = local_metadata.get("assign_to_params_buffers", False) or self.values.device.type == "meta"
        device = given[0].device if self.values.device.type == "meta" else self.values.device
        try:
            with torch.no_grad():
                v, md = _from_interchange(given[0].detach().to(device), given[1].detach().to(device), self.weight_type,
                                          k, m)
        except ValueError as e:
            error_msgs.append(f"{what}: {e}")
            return
        if assign or v.numel() != self.values.numel():
            self.values, self.metadata = v, md
        else:
            with torch.no_grad():  # in place: CUDA graphs and views that hold the buffers see the new weight
                self.values.copy_(v)
                self.metadata.copy_(md)
        _CALLS.pop(self, None)

    def dense_weight(self) -> Tensor:
        """The pruned dense weight (out_features x in_features) in the weight's dtype, on its device."""
        return _dense_weight_op(self.values, self.metadata, self.weight_type, self.in_features, self.out_features)

    def sparse_weight(self) -> SparseWeight:
        """The compressed weight as an spmma.SparseWeight over the buffers (for spmma.matmul; it
        keeps them alive, and reads them as they are at each product)."""
        return SparseWeight.borrow(self.values, self.metadata, self.weight_type, (self.out_features, self.in_features))

    def get_extra_state(self) -> dict:
        # Plain values only, so that torch.load(weights_only=True) reads it.
        return {"format": SparseWeight.FORMAT, "type": self.weight_type, "shape": [self.out_features, self.in_features]}

    def set_extra_state(self, state) -> None:
        if not isinstance(state, dict) or state.get("format") != SparseWeight.FORMAT:
            got = state.get("format") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"SparseLinear.load_state_dict: _extra_state format {got!r}, "
                             f"expected {SparseWeight.FORMAT!r}")
        shape = [int(v) for v in state["shape"]]
        if shape != [self.out_features, self.in_features]:
            raise ValueError(f"SparseLinear.load_state_dict: a {shape[0]} x {shape[1]} weight, this layer is "
                             f"{self.out_features} x {self.in_features}")
        t = state.get("type")
        if t not in _OUT_NAMES or t in ("s32", "f32"):
            raise ValueError(f"SparseLinear.load_state_dict: weight type {t!r} is not an spmma input type")
        # The bytes are the buffers' (loaded beside this, or refused for their size): a type of
        # another width would leave this layer reading them wrongly.
        if t != self.weight_type and _dtype_of(t).itemsize != self.weight_dtype.itemsize:
            raise ValueError(f"SparseLinear.load_state_dict: a {_dtype_of(t)} ({t}) weight, this layer holds "
                             f"{self.weight_dtype} ({self.weight_type}): build it with dtype={_dtype_of(t)}")
        self.weight_type = t

    def extra_repr(self) -> str:
        pattern = "1:2" if self.weight_type == "tf32" else "2:4"
        s = (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
             f"weight={str(self.weight_dtype).replace('torch.', '')} {pattern}")
        if self.activation:
            s += f", activation={self.activation}"
        if self.out_dtype is not None:
            s += f", out_dtype={self.out_dtype}"
        return s


def _bias_dtype(weight_dtype: torch.dtype) -> torch.dtype:
    """nn.Linear's convention (the bias in the weight's dtype) where that is a float type torch
    computes in; float32 for 8-bit weights (spmma reads every bias as float32)."""
    return weight_dtype if weight_dtype in (torch.float16, torch.bfloat16, torch.float32) else torch.float32


# ---------------------------------------------------------------- models

def sparsify_(model: nn.Module, filter_fn: Optional[Callable[[nn.Module, str], bool]] = None, *,
              prune: str = "magnitude", dtype: Optional[torch.dtype] = None,
              report: Optional[dict] = None) -> nn.Module:
    """Replace nn.Linear layers of `model` in place by SparseLinear; returns `model`.

    filter_fn(module, qualified_name) picks the layers; a layer it picks that spmma cannot take
    raises (the error names the layer). Without it, every nn.Linear is tried and those spmma
    cannot take are skipped: an unsupported dtype or shape, a subclass of nn.Linear (its owner may
    read .weight itself, as nn.MultiheadAttention does its out_proj's), a weight shared with
    another module (tied: replacing it would untie them). `report`, where given, receives
    {"replaced": [names], "skipped": {name: reason}}; skipped layers are also logged (INFO).
    prune and dtype: as SparseLinear.from_weight.
    """
    if isinstance(model, nn.Linear):
        raise ValueError("sparsify_: the model itself is an nn.Linear (nothing holds it to replace it in): "
                         "use SparseLinear.from_dense(model)")
    owners: dict = {}  # parameter -> (qualified name, owning module) for every place it is registered
    for mname, m in model.named_modules(remove_duplicate=False):
        for pname, p in m.named_parameters(recurse=False):
            owners.setdefault(id(p), []).append((f"{mname}.{pname}" if mname else pname, m))
    replaced, skipped, done = [], {}, {}
    for name, mod in list(model.named_modules(remove_duplicate=False)):
        if not isinstance(mod, nn.Linear):
            continue
        if id(mod) not in done:
            done[id(mod)] = None
            if filter_fn is not None:
                if not filter_fn(mod, name):
                    continue
                try:
                    done[id(mod)] = SparseLinear.from_dense(mod, prune, dtype=dtype)
                except (TypeError, ValueError, NotImplementedError) as e:
                    raise type(e)(f"sparsify_: {name}: {e}") from e
            else:
                tied = [n for n, owner in owners.get(id(mod.weight), []) if owner is not mod]
                if type(mod) is not nn.Linear:
                    skipped[name] = f"a subclass of nn.Linear ({type(mod).__name__}): its owner may read .weight"
                elif tied:
                    skipped[name] = f"its weight is shared with {', '.join(tied)} (tied)"
                else:
                    try:
                        done[id(mod)] = SparseLinear.from_dense(mod, prune, dtype=dtype)
                    except (TypeError, ValueError, NotImplementedError) as e:
                        skipped[name] = str(e)
        new = done[id(mod)]
        if new is not None:
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, child, new)
            replaced.append(name)
    for name, why in skipped.items():
        _log.info("sparsify_: %s kept dense: %s", name, why)
    if report is not None:
        report["replaced"], report["skipped"] = replaced, skipped
    return model


# ---------------------------------------------------------------- PyTorch's semi-structured tensors

def _is_semi_structured(t) -> bool:
    cls = getattr(getattr(torch, "sparse", None), "SparseSemiStructuredTensor", None)
    return cls is not None and isinstance(t, cls)


def _cutlass_reorder():
    """PyTorch's metadata permutation of its CUTLASS backend (private: absent, the layout is unknown)."""
    try:
        from torch.sparse._semi_structured_conversions import _calculate_meta_reordering_scatter_offsets
    except ImportError as e:
        raise NotImplementedError(
            "spmma.torch: this torch has no torch.sparse._semi_structured_conversions."
            "_calculate_meta_reordering_scatter_offsets (the CUTLASS metadata order): use backend=None, "
            "or a cuSPARSELt tensor") from e
    return _calculate_meta_reordering_scatter_offsets


def _semi_structured_dense(t: Tensor) -> Tensor:
    """The dense weight a SparseSemiStructuredTensor stands for. CUTLASS's form is read directly
    (its metadata words put back in row order, then dense_weight): bit for bit, where PyTorch's
    own to_dense of a float32 one on the CPU moves the 16-bit halves through float16 and quiets
    those that look like NaNs. cuSPARSELt's opaque form: its to_dense (a product with I, on CUDA)."""
    cutlass = getattr(torch.sparse, "SparseSemiStructuredTensorCUTLASS", None)
    if cutlass is None or not isinstance(t, cutlass) or t.meta is None or t.meta.dim() != 2:
        return t.to_dense()
    m, k = (int(v) for v in t.shape)
    meta = t.meta.reshape(-1).gather(0, _cutlass_reorder()(m, t.meta.shape[1], t.meta.dtype, t.meta.device))
    values = t.packed.contiguous().view(torch.uint8).reshape(m, -1)
    weight_type = _input_type(t.packed.dtype, "SparseLinear.from_weight: the semi-structured weight")
    return dense_weight(values, meta.view(torch.uint8).reshape(m, -1), weight_type, k)


def to_semi_structured(layer: SparseLinear, backend: Optional[str] = None):
    """The layer's weight as PyTorch's SparseSemiStructuredTensor (for F.linear / nn.Linear.weight).

    backend=None: PyTorch's default backend (cuSPARSELt, or CUTLASS where forced or missing), by
    ``torch.sparse.to_sparse_semi_structured`` of the pruned dense weight: CUDA only (PyTorch's
    requirement), and the way to cuSPARSELt, whose compressed form is an opaque buffer only
    cuSPARSELt writes. backend="cutlass": built directly from spmma's compressed form, without a
    dense weight, on any device: the values are the same bytes (spmma picks PyTorch's index for
    every chunk, docs/layouts.md) and the metadata words are the same, permuted into CUTLASS's
    interleaved order by PyTorch's own permutation. CUTLASS takes float16, bfloat16, float32 and
    int8 weights with out_features a multiple of 32 (16 for int8); PyTorch runs its products on
    CUDA only.
    """
    what = "to_semi_structured"
    if not isinstance(layer, SparseLinear):
        raise TypeError(f"{what}: expected a SparseLinear, got {type(layer).__name__}")
    if backend is None:
        if layer.values.device.type != "cuda":
            raise ValueError(f"{what}: PyTorch's semi-structured tensors live on CUDA, this layer on "
                             f"{layer.values.device} (move it with .cuda(), or use backend='cutlass')")
        return torch.sparse.to_sparse_semi_structured(layer.dense_weight())
    if backend != "cutlass":
        raise ValueError(f"{what}: backend = {backend!r} (use None or 'cutlass')")
    meta_dtype = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int16,
                  torch.int8: torch.int32}.get(layer.weight_dtype)
    if meta_dtype is None:
        raise NotImplementedError(f"{what}: PyTorch's CUTLASS backend has no {layer.weight_dtype} weights "
                                  "(float16, bfloat16, float32, int8)")
    m = layer.out_features
    rows = 16 if meta_dtype == torch.int32 else 32
    if m % rows:
        raise ValueError(f"{what}: PyTorch's CUTLASS layout needs out_features a multiple of {rows}, "
                         f"this layer has {m}")
    values, metadata = layer.interchange()
    packed = values.view(layer.weight_dtype)
    meta = metadata.contiguous().view(meta_dtype)
    offsets = _cutlass_reorder()(m, meta.shape[1], meta_dtype, meta.device)
    reordered = meta.new_empty(meta.numel()).scatter_(0, offsets, meta.reshape(-1)).view(m, -1)
    return torch.sparse.SparseSemiStructuredTensorCUTLASS(
        torch.Size((m, layer.in_features)), packed=packed.clone(), meta=reordered, packed_t=None, meta_t=None,
        compressed_swizzled_bitmask=None)


# ---------------------------------------------------------------- compressed checkpoints
#
# `spmma compress MODEL.safetensors C.safetensors` replaces each sparse weight NAME by NAME.values
# and NAME.metadata (the interchange form) and records it in __metadata__ (docs/files.md,
# "Checkpoints"). load_compressed_ builds SparseLinear layers from those bytes directly, on the
# layer's device, and save_compressed writes the same file from a model's SparseLinear layers.

_CKPT_FORMAT_KEY, _CKPT_FORMAT = "spmma.format", "spmma.compressed-checkpoint"
_CKPT_VERSION_KEY, _CKPT_VERSION = "spmma.format_version", "1"
_CKPT_RECORD = "spmma.compressed."
_CKPT_FIELDS = ("type", "pattern", "rows", "cols", "ordered")
# A record's type -> (the values' safetensors dtype, spmma's type for the product, the pattern).
# f32 weights are multiplied as tf32 (the tensor cores read f32 so), whose pattern is f32's 1:2;
# the file keeps all 32 bits, and so does the layer.
_CKPT_TYPES = {"f16": ("F16", "f16", "2:4"), "bf16": ("BF16", "bf16", "2:4"), "f32": ("F32", "tf32", "1:2"),
               "e4m3": ("F8_E4M3", "e4m3", "2:4"), "e5m2": ("F8_E5M2", "e5m2", "2:4"), "s8": ("I8", "s8", "2:4"),
               "u8": ("U8", "u8", "2:4")}
_ST_DTYPES = {name: getattr(torch, attr) for name, attr in (
    ("F16", "float16"), ("BF16", "bfloat16"), ("F32", "float32"), ("F64", "float64"), ("F8_E4M3", "float8_e4m3fn"),
    ("F8_E5M2", "float8_e5m2"), ("I8", "int8"), ("U8", "uint8"), ("I16", "int16"), ("I32", "int32"), ("I64", "int64"),
    ("BOOL", "bool"), ("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64")) if hasattr(torch, attr)}


def _ckpt_records(path: str, f) -> dict:
    """The compressed checkpoint's records, checked against its tensors: NAME -> (record type,
    spmma type, rows, cols, ordered)."""
    meta = f.metadata
    if _CKPT_FORMAT_KEY not in meta:
        if meta.get("format") == "spmma.compressed":
            raise ValueError(f"{path}: holds one compressed matrix (spmma compress --out), not a compressed "
                             "checkpoint: load it with spmma.SparseWeight.from_interchange")
        raise ValueError(f"{path}: not an spmma compressed checkpoint: its __metadata__ has no "
                         f"{_CKPT_FORMAT_KEY!r} (spmma compress MODEL.safetensors OUT.safetensors writes one; "
                         "a dense checkpoint loads with load_state_dict)")
    if meta[_CKPT_FORMAT_KEY] != _CKPT_FORMAT:
        raise ValueError(f"{path}: __metadata__ {_CKPT_FORMAT_KEY} is {meta[_CKPT_FORMAT_KEY]!r}, not {_CKPT_FORMAT!r}")
    if meta.get(_CKPT_VERSION_KEY) != _CKPT_VERSION:
        raise ValueError(f"{path}: spmma compressed-checkpoint {_CKPT_VERSION_KEY} is "
                         f"{meta.get(_CKPT_VERSION_KEY)!r}; this spmma reads version {_CKPT_VERSION}")
    fields: dict = {}
    for key, value in meta.items():
        if not key.startswith(_CKPT_RECORD):
            continue
        name, _, field = key[len(_CKPT_RECORD):].rpartition(".")
        if not name or field not in _CKPT_FIELDS:
            raise ValueError(f"{path}: __metadata__ key {key!r} is not spmma.compressed.NAME.FIELD with FIELD one of "
                             f"{', '.join(_CKPT_FIELDS)}")
        fields.setdefault(name, {})[field] = value
    records = {}
    for name, rec in fields.items():
        where = f"{path}: compressed tensor {name!r}"
        lacking = [k for k in _CKPT_FIELDS if k not in rec]
        if lacking:
            raise ValueError(f"{where}: its record lacks {', '.join(lacking)} (spmma.compressed.{name}.FIELD)")
        t = rec["type"]
        if t not in _CKPT_TYPES:
            raise ValueError(f"{where}: type {t!r} is not one a checkpoint holds ({', '.join(_CKPT_TYPES)})")
        dtype, spmma_type, pattern = _CKPT_TYPES[t]
        if rec["pattern"] != pattern:
            # Another pattern's chunks and nibbles are not the ones spmma's products read for the
            # type (4:8 pair-wise keeps two pairs of 8, which may be 4 of one 2:4 chunk).
            raise ValueError(f"{where}: pattern {rec['pattern']!r}, but spmma multiplies {t} weights in {pattern} "
                             f"only: decompress it (spmma decompress) and prune and compress it again without --type")
        dims = []
        for k in ("rows", "cols"):
            v = rec[k]
            if not v.isdecimal() or not v.isascii() or (len(v) > 1 and v[0] == "0") or int(v) == 0:
                raise ValueError(f"{where}: {k} {v!r} is not a positive decimal integer")
            dims.append(int(v))
        rows, cols = dims
        chunk = 2 if pattern == "1:2" else 4
        if cols % chunk:
            raise ValueError(f"{where}: cols {cols} is not a whole number of {pattern} chunks")
        if rec["ordered"] not in ("true", "false"):
            raise ValueError(f"{where}: ordered {rec['ordered']!r} is not true or false")
        words = (cols // chunk + 3) // 4
        for part, want_dtype, want_shape in (("values", dtype, (rows, cols // 2)), ("metadata", "U16", (rows, words))):
            t_ = f.tensors.get(f"{name}.{part}")
            if t_ is None:
                raise ValueError(f"{where}: the checkpoint lacks its tensor {name + '.' + part!r}")
            if t_.dtype != want_dtype or tuple(t_.shape) != want_shape:
                raise ValueError(f"{where}: {name}.{part} is {t_.dtype} {list(t_.shape)}, a {rows} x {cols} {t} "
                                 f"weight's {part} are {want_dtype} {list(want_shape)}")
        records[name] = (t, spmma_type, rows, cols, rec["ordered"] == "true")
    return records


def _order_nibbles(values, metadata, rows: int, cols: int, width: int) -> None:
    """In place: every 2:4 chunk whose nibble names its two positions in descending order
    (allowed by ``ordered: false``) gets them ascending, with its two stored values swapped: the
    same dense weight, in the ordered form spmma's kernels (mma.sp::ordered_metadata) read.
    Nibbles naming one position twice are left for the import's check to name."""
    import numpy as np  # noqa: PLC0415
    chunks = cols // 4
    words = metadata.view(np.dtype("<u2")).reshape(rows, -1).astype(np.uint32)
    shifts = np.array([0, 4, 8, 12], dtype=np.uint32)
    nib = ((words[:, :, None] >> shifts) & 0xF).reshape(rows, -1)
    used = nib[:, :chunks]
    i0, i1 = used & 3, (used >> 2) & 3
    swap = i0 > i1
    if not swap.any():
        return
    used[swap] = (i1 | (i0 << 2))[swap]
    v = values.reshape(rows, chunks, 2, width)
    v[swap] = v[swap][:, ::-1]
    packed = (nib.reshape(rows, -1, 4) << shifts).sum(axis=-1).astype(np.dtype("<u2"))
    metadata[:] = packed.reshape(-1).view(np.uint8)


def _state_keys(model: nn.Module, replaced: dict) -> dict:
    """What model.state_dict() would name, with the modules in `replaced` (id -> new layer) in
    place: key -> (module, attribute), without making the state_dict (a SparseLinear's would
    convert its weight)."""
    keys = {}
    for mname, mod in model.named_modules(remove_duplicate=False):
        mod = replaced.get(id(mod), mod)
        p = f"{mname}." if mname else ""
        for n, t in mod._parameters.items():
            if t is not None:
                keys[p + n] = (mod, n)
        for n, t in mod._buffers.items():
            if t is not None and n not in mod._non_persistent_buffers_set:
                keys[p + n] = (mod, n)
        if type(mod).get_extra_state is not nn.Module.get_extra_state:
            keys[p + "_extra_state"] = (mod, None)
    return keys


def _tensor_of(path: str, name: str, t) -> Tensor:
    """A checkpoint tensor's bytes as a CPU tensor of its dtype and shape (no copy)."""
    dtype = _ST_DTYPES.get(t.dtype)
    if dtype is None:
        raise ValueError(f"{path}: tensor {name!r}: this torch has no dtype for {t.dtype}")
    return torch.from_numpy(t.data).view(dtype).reshape(t.shape)


def load_compressed_(model: nn.Module, path, *, device=None, strict: bool = True) -> dict:
    """Load an spmma compressed checkpoint (``spmma compress``, or ``save_compressed``) into `model`,
    in place; returns {"replaced", "loaded", "missing", "unexpected"} (lists of names).

    Each compressed weight NAME = PREFIX.weight replaces the module PREFIX — an nn.Linear or a
    SparseLinear (whose activation and out_dtype it keeps) of the same shape — by a SparseLinear
    built from the file's bytes (``SparseLinear.from_interchange``): they go to `device` (default:
    the replaced module's; the CPU for one on the meta device) once, are converted into its
    layout there with every nibble checked, and no dense weight is made. The layer holds the
    record's type (f32 records: tf32, as spmma multiplies float32), whatever the replaced
    module's dtype. Its bias is the checkpoint's PREFIX.bias, else (strict=False) the replaced
    module's own. The other tensors load as ``load_state_dict(strict=False)`` loads them.

    strict=True raises RuntimeError, before the model is changed, when a checkpoint tensor or
    compressed weight has no place in the model ("unexpected") or the model has a parameter or
    buffer the checkpoint lacks ("missing"). Always raised, model unchanged: ValueError for a file
    that is not a compressed checkpoint, a bad record, a shape that differs from the model's, a bad
    nibble (naming the row and chunk); TypeError for a module that is not a linear layer."""
    from . import _safetensors  # noqa: PLC0415
    path = str(path)
    what = f"load_compressed_({path})"
    f = _safetensors.read(path)
    records = _ckpt_records(path, f)
    modules = dict(model.named_modules(remove_duplicate=False))
    names_of: dict = {}
    for n, mod in modules.items():
        names_of.setdefault(id(mod), []).append(n)

    consumed = set()  # tensors a record used (values, metadata, the bias)
    unexpected, missing, plan, biases = [], [], [], set()
    for name, (t, spmma_type, rows, cols, ordered) in records.items():
        consumed.update((name + ".values", name + ".metadata"))
        prefix = name[:-len(".weight")] if name.endswith(".weight") else None
        mod = modules.get(prefix) if prefix is not None else None
        if mod is None:
            unexpected.append(name)
            continue
        if mod is model:
            raise ValueError(f"{what}: compressed tensor {name!r} is the model's own weight (nothing holds the model "
                             "to replace it): use SparseLinear.from_interchange")
        if not (type(mod) is nn.Linear or isinstance(mod, SparseLinear)):
            raise TypeError(f"{what}: compressed tensor {name!r}: the model's {prefix!r} is a {type(mod).__name__}, "
                            "not an nn.Linear or a SparseLinear (an nn.Linear subclass's owner may read .weight)")
        if (mod.out_features, mod.in_features) != (rows, cols):
            raise ValueError(f"{what}: compressed tensor {name!r} is {rows} x {cols}, the model's {prefix!r} is "
                             f"{mod.out_features} x {mod.in_features} (out x in features)")
        if any(p is mod for _, p, *_ in plan):
            raise ValueError(f"{what}: the model's {prefix!r} is also registered as {names_of[id(mod)]}, and the "
                             "checkpoint has a compressed weight for more than one of those names")
        bias = f.tensors.get(prefix + ".bias")
        if bias is not None:
            consumed.add(prefix + ".bias")
            biases.add(prefix + ".bias")
            if tuple(bias.shape) != (rows,):
                raise ValueError(f"{what}: tensor {prefix + '.bias'!r} has shape {list(bias.shape)}, the weight has "
                                 f"out_features = {rows}")
            bias = _tensor_of(path, prefix + ".bias", bias)
        elif mod.bias is not None:
            missing.append(prefix + ".bias")
            bias = mod.bias
        plan.append((name, mod, prefix, bias))

    # The layers, before the model changes: a bad nibble leaves it as it was.
    new: dict = {}
    replaced = []
    for name, mod, prefix, bias in plan:
        t, spmma_type, rows, cols, ordered = records[name]
        values, metadata = f.tensors.pop(name + ".values").data, f.tensors.pop(name + ".metadata").data
        if not ordered and spmma_type != "tf32":
            _order_nibbles(values, metadata, rows, cols, _ST_DTYPES[_CKPT_TYPES[t][0]].itemsize)
        if device is not None:
            dev = torch.device(device)
        else:
            dev = (mod.values if isinstance(mod, SparseLinear) else mod.weight).device
            if dev.type == "meta":
                dev = torch.device("cpu")
        kw = {"activation": mod.activation, "out_dtype": mod.out_dtype} if isinstance(mod, SparseLinear) else {}
        try:
            layer = SparseLinear.from_interchange(torch.from_numpy(values).to(dev), torch.from_numpy(metadata).to(dev),
                                                  spmma_type, (rows, cols), bias, **kw)
        except (ValueError, TypeError, NotImplementedError) as e:
            raise type(e)(f"{what}: compressed tensor {name!r}: {e}") from e
        del values, metadata
        new[id(mod)] = layer
        replaced += names_of[id(mod)]

    keys = _state_keys(model, new)
    from_records = set()
    for name, mod, prefix, bias in plan:
        for n in names_of[id(mod)]:
            p = f"{n}." if n else ""
            from_records.update(p + k for k in ("values", "metadata", "_extra_state"))
            if (prefix + ".bias") in consumed:
                from_records.add(p + "bias")
    dense = {}
    for n, t in f.tensors.items():
        if n in consumed:
            continue
        if n not in keys or n in from_records:
            unexpected.append(n)
            continue
        mod, attr = keys[n]
        target = getattr(mod, attr) if attr is not None else None
        if target is not None and tuple(target.shape) != tuple(t.shape):
            raise ValueError(f"{what}: tensor {n!r} has shape {list(t.shape)}, the model's is {list(target.shape)}")
        dense[n] = _tensor_of(path, n, t)
    missing += [k for k in keys if k not in dense and k not in from_records and k not in missing]
    if strict and (missing or unexpected):
        parts = []
        if unexpected:
            parts.append(f"checkpoint tensors with no place in the model: {', '.join(unexpected)}")
        if missing:
            parts.append(f"model parameters and buffers the checkpoint lacks: {', '.join(missing)}")
        raise RuntimeError(f"{what}: {'; '.join(parts)} (strict=False loads the rest)")

    for name, mod, prefix, bias in plan:
        for n in names_of[id(mod)]:
            parent, _, child = n.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, child, new[id(mod)])
    if dense:
        model.load_state_dict(dense, strict=False)
    loaded = [n for n in f.tensors if n in dense or n in biases]  # the file's order
    return {"replaced": replaced, "loaded": loaded, "missing": missing, "unexpected": unexpected}


def save_compressed(model: nn.Module, path, *, metadata: Optional[dict] = None) -> dict:
    """Write `model`'s state as an spmma compressed checkpoint (what ``spmma compress`` writes,
    docs/files.md): each SparseLinear PREFIX as PREFIX.weight.values and PREFIX.weight.metadata
    (the interchange form, in the weight's own dtype; tf32 weights as F32, recorded as f32) with
    its record in __metadata__, every other tensor of the state_dict as it is (moved to the host).
    `metadata` (str -> str) is added to __metadata__. Returns {"compressed": [...], "dense": [...]}
    (tensor names as written)."""
    from . import _safetensors, __version__  # noqa: PLC0415
    path = str(path)
    sparse = {}
    for mname, mod in model.named_modules():
        if isinstance(mod, SparseLinear):
            sparse[f"{mname}." if mname else ""] = mod
    meta = dict(metadata or {})
    tensors, compressed, dense = {}, [], []
    with torch.no_grad():
        for key, t in model.state_dict().items():
            prefix, _, attr = key.rpartition(".")
            p = f"{prefix}." if prefix else ""
            layer = sparse.get(p)
            if layer is not None and attr in ("values", "metadata", "_extra_state"):
                # The state_dict holds the weight in the interchange form already (2-D uint8: one
                # row per output feature), which is what the file stores.
                name = p + "weight"
                rec = "f32" if layer.weight_type == "tf32" else layer.weight_type
                m, k = layer.out_features, layer.in_features
                if attr == "values":
                    tensors[name + ".values"] = (_CKPT_TYPES[rec][0], (m, k // 2), t.detach().cpu())
                elif attr == "metadata":
                    tensors[name + ".metadata"] = ("U16", (m, int(t.shape[1]) // 2), t.detach().cpu())
                    for field, value in (("type", rec), ("pattern", _CKPT_TYPES[rec][2]), ("rows", str(m)),
                                         ("cols", str(k)), ("ordered", "true")):
                        meta[f"{_CKPT_RECORD}{name}.{field}"] = value
                    compressed.append(name)
                continue
            if not isinstance(t, Tensor):
                raise TypeError(f"save_compressed: state_dict entry {key!r} is a {type(t).__name__}, not a tensor "
                                "(safetensors holds tensors only)")
            dtype = next((n for n, d in _ST_DTYPES.items() if d == t.dtype), None)
            if dtype is None:
                raise TypeError(f"save_compressed: tensor {key!r} is {t.dtype}, which safetensors has no dtype for")
            tensors[key] = (dtype, tuple(t.shape), t.detach().cpu())
            dense.append(key)
    meta.update({_CKPT_FORMAT_KEY: _CKPT_FORMAT, _CKPT_VERSION_KEY: _CKPT_VERSION,
                 "spmma.compressed_by": f"spmma {__version__}"})
    _safetensors.write(path, tensors, meta)
    return {"compressed": compressed, "dense": dense}
