# SPDX-License-Identifier: BSD-3-Clause
"""The Python package against numpy's dense product on the pruned weight (and PyTorch's where it
is installed; the GPU tests need a CUDA GPU and are marked `gpu`)."""
import os
import re

import numpy as np
import pytest

import spmma

try:  # numpy's bfloat16 and fp8 (the tests of those types on numpy arrays need it)
    import ml_dtypes
except ImportError:
    ml_dtypes = None
needs_ml_dtypes = pytest.mark.skipif(ml_dtypes is None, reason="ml_dtypes is not installed (numpy bfloat16/fp8)")
SEED = int(os.environ.get("SPMMA_SEED", "12345"))

# spmma type -> (numpy dtype, K step, relative tolerance of one output rounding + f32 sums)
TYPES = {
    "f16": (np.float16, 32, 2e-3),
    "tf32": (np.float32, 16, 2e-3),
    "s8": (np.int8, 64, 0),
    "u8": (np.uint8, 64, 0),
}
if ml_dtypes is not None:
    TYPES.update({
        "bf16": (ml_dtypes.bfloat16, 32, 1.6e-2),
        "e4m3": (ml_dtypes.float8_e4m3fn, 64, 1.6e-2),
        "e5m2": (ml_dtypes.float8_e5m2, 64, 1.6e-2),
    })


def rand(rng, shape, t):
    dt = TYPES[t][0]
    if t in ("s8", "u8"):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max + 1, shape).astype(dt)
    return (rng.standard_normal(shape) * (4 if t in ("e4m3", "e5m2") else 1)).astype(dt)


def tf32(a):
    """f32 values as the tensor cores read them for tf32: the low 13 mantissa bits ignored."""
    return (np.ascontiguousarray(a, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def dense_ref(w, x):
    wd = w.dense()
    if w.dtype == "tf32":
        wd, x = tf32(wd), tf32(x)
    return x.astype(np.float64) @ wd.astype(np.float64).T


def check_close(y, ref, tol, what=""):
    y = y.astype(np.float64)
    if tol == 0:
        np.testing.assert_array_equal(y, ref, err_msg=what)
        return
    scale = np.abs(ref).max() + 1e-30
    err = np.abs(y - ref) / (np.abs(ref) + 1e-2 * scale)
    assert err.max() <= tol, f"{what}: worst relative error {err.max():.3g} > {tol}"


def test_version_is_the_projects():
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "CMakeLists.txt")).read()
    want = re.search(r"project\(spmma VERSION ([0-9.]+)", text).group(1)
    assert spmma.__version__ == want
    assert spmma.build_info()["version"] == want


@pytest.mark.parametrize("t", ["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"])
@pytest.mark.parametrize("m,n,ksteps", [(64, 1, 1), (37, 5, 3), (128, 33, 2)])
def test_matmul_every_type_against_numpy(t, m, n, ksteps):
    if t not in TYPES:
        pytest.skip("ml_dtypes is not installed (numpy bfloat16/fp8)")
    rng = np.random.default_rng(SEED)
    k = TYPES[t][1] * ksteps
    w = spmma.compress(rand(rng, (m, k), t))
    assert w.shape == (m, k) and w.dtype == t and w.device == "cpu"
    x = rand(rng, (n, k), t)
    y = spmma.matmul(w, x)
    assert y.shape == (n, m)
    want_dtype = {"tf32": np.float32, "e4m3": "bfloat16", "e5m2": "bfloat16", "s8": np.int32,
                  "u8": np.int32}.get(t, TYPES[t][0])
    if want_dtype == "bfloat16":
        want_dtype = ml_dtypes.bfloat16
    assert y.dtype == np.dtype(want_dtype)
    ref = dense_ref(w, x)
    if t in ("s8", "u8"):
        ref = ref.astype(np.int64).astype(np.int32)  # the s32 accumulator (no overflow at these sizes)
    check_close(y, ref, TYPES[t][2] if t not in ("e4m3", "e5m2") else 1.6e-2, t)


def test_pruning_keeps_two_of_four_largest():
    rng = np.random.default_rng(SEED)
    a = rng.standard_normal((8, 64)).astype(np.float16)
    d = spmma.compress(a).dense().astype(np.float32).reshape(8, 16, 4)
    assert ((d != 0).sum(-1) == 2).all()
    mags = np.abs(a.astype(np.float32)).reshape(8, 16, 4)
    kept = np.sort(np.where(d != 0, mags, -1), -1)[..., 2:]
    assert (kept == np.sort(mags, -1)[..., 2:]).all()


def test_check_mode_names_the_violation():
    a = np.ones((4, 32), np.float16)
    with pytest.raises(ValueError, match=r"row 0, chunk 0 \(cols 0..3\): 4 non-zeros, 2:4 allows at most 2"):
        spmma.compress(a, prune="check")
    pruned = spmma.compress(a).dense()
    spmma.compress(pruned, prune="check")  # already 2:4: accepted


@needs_ml_dtypes
def test_batched_x_bias_activations_scales():
    rng = np.random.default_rng(SEED + 1)
    w = spmma.compress(rand(rng, (48, 64), "bf16"))
    x = rand(rng, (2, 3, 64), "bf16")
    bias = rng.standard_normal(48).astype(np.float32)
    sr = rng.uniform(0.5, 1.5, 48).astype(np.float32)
    sc = rng.uniform(0.5, 1.5, 6).astype(np.float32)
    base = dense_ref(w, x.reshape(6, 64))
    for act in (None, "relu", "gelu"):
        y = spmma.matmul(w, x, bias=bias, activation=act, scale_row=sr, scale_col=sc, out_dtype=np.float32)
        assert y.shape == (2, 3, 48) and y.dtype == np.float32
        v = base * sr[None, :] * sc[:, None] + bias[None, :]
        if act == "relu":
            v = np.maximum(v, 0)
        if act == "gelu":
            from math import erfc, sqrt
            v = 0.5 * v * np.vectorize(lambda t: erfc(-t / sqrt(2)))(v)
        check_close(y.reshape(6, 48), v, 1e-5, str(act))


@needs_ml_dtypes
def test_fp8_output_saturates():
    rng = np.random.default_rng(SEED + 2)
    w = spmma.compress(rand(rng, (16, 64), "e4m3"))
    x = rand(rng, (4, 64), "e4m3")
    y = spmma.matmul(w, x, out_dtype="e4m3", scale_row=np.full(16, 1e4, np.float32))
    assert y.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    assert np.isfinite(y.astype(np.float32)).all() and np.abs(y.astype(np.float32)).max() == 448


def test_int8_requantization():
    rng = np.random.default_rng(SEED + 3)
    w = spmma.compress(rand(rng, (32, 128), "s8"))
    x = rand(rng, (7, 128), "s8")
    sr = np.full(32, 1 / 512, np.float32)
    y = spmma.matmul(w, x, out_dtype=np.int8, scale_row=sr)
    assert y.dtype == np.int8
    ref = np.clip(np.rint(dense_ref(w, x) / 512), -128, 127)
    assert np.abs(y.astype(np.float64) - ref).max() <= 1  # f32 epilogue vs double reference at .5


def test_state_round_trip_and_strided_rows():
    rng = np.random.default_rng(SEED + 4)
    wide = rand(rng, (24, 96), "f16")
    w = spmma.compress(wide[:, :64])  # rows 96 apart: a leading dimension, no copy
    x = rand(rng, (5, 64), "f16")
    y = spmma.matmul(w, x)
    st = w.state()
    assert st["format"] == "spmma-compressed-v1" and st["type"] == "f16" and st["shape"] == [24, 64]
    assert st["values"].nbytes == 24 * 32 * 2
    w2 = spmma.SparseWeight.from_state(st)
    np.testing.assert_array_equal(spmma.matmul(w2, x), y)
    np.testing.assert_array_equal(w2.dense(), w.dense())
    with pytest.raises(ValueError, match="interchange values: 1534 bytes, .* has 1536"):
        spmma.SparseWeight.from_state(dict(st, values=st["values"][:-2]))
    with pytest.raises(ValueError, match="format"):
        spmma.SparseWeight.from_state(dict(st, format="other"))


def test_bad_inputs():
    rng = np.random.default_rng(SEED + 5)
    w = spmma.compress(rand(rng, (16, 64), "f16"))
    x = rand(rng, (4, 64), "f16")
    with pytest.raises(TypeError, match="float64 is not an spmma input type"):
        spmma.compress(np.zeros((16, 64)))
    with pytest.raises(TypeError, match="SparseWeight"):
        spmma.matmul(np.zeros((16, 64), np.float16), x)
    with pytest.raises(ValueError, match="in_features = 64"):
        spmma.matmul(w, x[:, :32])
    with pytest.raises(ValueError, match="2-D"):
        spmma.compress(rand(rng, (2, 16, 64), "f16"))
    with pytest.raises(ValueError, match="multiple of 32"):
        spmma.compress(rand(rng, (16, 48), "f16"))
    with pytest.raises(ValueError, match="contiguous"):
        spmma.matmul(w, rand(rng, (64, 4), "f16").T)  # columns contiguous, rows not
    with pytest.raises(NotImplementedError, match="d_type = s8|c_type = s8"):
        spmma.matmul(w, x, out_dtype=np.int8)
    with pytest.raises(NotImplementedError, match="b_type"):
        spmma.matmul(w, rand(rng, (4, 64), "tf32"))  # float32 x with a float16 weight
    with pytest.raises(ValueError, match="bias has 3 values"):
        spmma.matmul(w, x, bias=np.ones(3, np.float32))
    with pytest.raises(ValueError, match="activation"):
        spmma.matmul(w, x, activation="tanh")
    with pytest.raises(TypeError, match="out_dtype"):
        spmma.matmul(w, x, out_dtype="complex64")
    with pytest.raises(ValueError, match="device"):
        w.to("tpu")


# ---------------------------------------------------------------- PyTorch (where installed)

try:
    import torch
except ImportError:
    if os.environ.get("SPMMA_REQUIRE_TORCH"):  # the GPU machine's run: a missing torch is a failure
        raise
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def dense_torch(w, dtype):
    """The pruned weight as a float64 torch tensor on the CPU (from its raw bits: no ml_dtypes)."""
    raw = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[torch.empty(0, dtype=dtype).element_size()]
    bits = w.dense_bits().cpu().view(raw)
    return bits.view(dtype).reshape(w.shape).to(torch.float64)
gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="no CUDA GPU (or no PyTorch)")


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int8"])
def test_torch_cpu_tensors(dtype):
    g = torch.Generator().manual_seed(SEED)
    dt = getattr(torch, dtype)
    if dtype == "int8":
        w_t = torch.randint(-100, 100, (32, 128), generator=g, dtype=dt)
        x = torch.randint(-100, 100, (3, 128), generator=g, dtype=dt)
    else:
        w_t = torch.randn(32, 64, generator=g).to(dt)
        x = torch.randn(2, 3, 64, generator=g).to(dt)
    w = spmma.compress(w_t)
    y = spmma.matmul(w, x)
    assert isinstance(y, torch.Tensor) and y.device.type == "cpu"
    ref = x.to(torch.float64) @ dense_torch(w, dt).T
    check_close(y.to(torch.float64).numpy(), ref.numpy(), 0 if dtype == "int8" else 2e-2, dtype)


@gpu
@needs_cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float8_e4m3fn", "int8"])
def test_torch_cuda_tensors_on_the_current_stream(dtype):
    dev = torch.device("cuda")
    dt = getattr(torch, dtype)
    g = torch.Generator(device=dev).manual_seed(SEED)
    if dtype == "int8":
        w_t = torch.randint(-100, 100, (256, 256), generator=g, device=dev, dtype=dt)
        x = torch.randint(-100, 100, (2, 9, 256), generator=g, device=dev, dtype=dt)
    else:
        w_t = torch.randn(256, 256, generator=g, device=dev).to(dt)
        x = torch.randn(2, 9, 256, generator=g, device=dev).to(dt)
    w = spmma.compress(w_t)
    assert w.device == "cuda:0"
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = spmma.matmul(w, x, bias=torch.ones(256, device=dev))
    s.synchronize()
    assert y.device == x.device and y.shape == (2, 9, 256)
    ref = x.double().reshape(18, 256) @ dense_torch(w, dt).to(dev).T + 1
    check_close(y.reshape(18, 256).double().cpu().numpy(), ref.cpu().numpy(), 0 if dtype == "int8" else 2e-2, dtype)
    cpu = w.to("cpu")
    assert torch.equal(cpu.dense_bits().cpu(), w.dense_bits().cpu())
    with pytest.raises(ValueError, match="x is on cpu"):
        spmma.matmul(w, x.cpu())


def test_the_weight_is_the_callers_arrays():
    """compress returns the framework's own arrays (numpy here), in the CPU's layout (the
    interchange form); the product reads them, with no copy kept by spmma; the interchange form
    round-trips through from_interchange, whose nibble check names the row and chunk."""
    rng = np.random.default_rng(SEED + 9)
    w = spmma.compress(rand(rng, (40, 128), "bf16"))
    assert isinstance(w.values, np.ndarray) and w.values.dtype == np.uint8 and w.values.ndim == 1
    assert w.layout == "interchange"
    assert w.values.nbytes == 40 * 64 * 2 and w.metadata.nbytes == 40 * 128 // 16 * 2
    x = rand(rng, (3, 128), "bf16")
    y = spmma.matmul(w, x)
    v, m = w.interchange()
    assert v.shape == (40, 128) and m.shape == (40, 16)
    np.testing.assert_array_equal(v.reshape(-1), w.values)
    w2 = spmma.SparseWeight.from_interchange(v, m, "bf16", (40, 128))
    np.testing.assert_array_equal(spmma.matmul(w2, x), y)
    w3 = spmma.SparseWeight.borrow(w.values, w.metadata, "bf16", (40, 128))
    np.testing.assert_array_equal(spmma.matmul(w3, x), y)
    w.values[:] = 0  # the product reads the arrays as they are now
    assert not spmma.matmul(w, x).astype(np.float32).any()
    bad = m.copy()
    bad[7, 0] = (bad[7, 0] & 0x0F) | 0x50  # row 7, chunk 1: a repeated index
    with pytest.raises(ValueError, match="row 7, chunk 1"):
        spmma.SparseWeight.from_interchange(v, bad, "bf16", (40, 128))
