# SPDX-License-Identifier: BSD-3-Clause
"""spmma.torch (the custom op spmma::sparse_linear, SparseLinear, sparsify_, PyTorch's
semi-structured tensors) against torch.nn.functional.linear on the pruned weight in float64.

Without PyTorch (2.4 or newer: torch.library.custom_op) the file skips; SPMMA_REQUIRE_TORCH=1
turns that into a failure (the GPU machine's run). Tests marked `gpu` need a CUDA GPU."""
import io
import math
import os
import subprocess
import sys
import zlib

import pytest

from conftest import import_spmma_torch, run_doc_blocks

torch, st = import_spmma_torch()

import torch.nn.functional as F
from torch import nn

import spmma

SEED = int(os.environ.get("SPMMA_SEED", "12345"))
gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")

# Mantissa bits each output dtype keeps: one output rounding is at most 2^-bits relative.
MANTISSA = {torch.float16: 10, torch.bfloat16: 7, torch.float32: 23, torch.float8_e4m3fn: 3, torch.float8_e5m2: 2}
# K's step per weight dtype (a whole number of sparse steps, docs/python.md).
STEP = {torch.float16: 32, torch.bfloat16: 32, torch.float32: 16, torch.float8_e4m3fn: 64, torch.float8_e5m2: 64,
        torch.int8: 64}
FLOATS = [torch.float16, torch.bfloat16, torch.float32]


@pytest.fixture
def gen(request):
    """A generator seeded per test (SPMMA_SEED and the test's id): fresh inputs for every test,
    the same ones on every run."""
    return torch.Generator().manual_seed(SEED ^ zlib.crc32(request.node.nodeid.encode()))


def rand(shape, dtype, gen, device="cpu"):
    """Random values without zeros (a zero would hide a dropped or misplaced element): magnitudes
    in [0.25, 2) with random signs, 1..127 for int8."""
    sign = torch.randint(0, 2, shape, generator=gen) * 2 - 1
    if dtype == torch.int8:
        return (torch.randint(1, 128, shape, generator=gen) * sign).to(dtype).to(device)
    mag = torch.rand(shape, generator=gen, dtype=torch.float64) * 1.75 + 0.25
    return (mag * sign).to(dtype).to(device)


def tf32(a):
    """float32 as the tensor cores read tf32: the low 13 mantissa bits ignored."""
    return (a.to(torch.float32).contiguous().view(torch.int32) & -8192).view(torch.float32)


def reference(x, layer, activation=None, scale_row=None, scale_col=None):
    """F.linear in float64 on the layer's pruned weight (float32 inputs read as tf32, as spmma reads
    them), with the epilogue; and the bound of f32 accumulation: K·2^-24·Σ|x||w| per output."""
    w, xr = layer.dense_weight().cpu(), x.cpu()
    if w.dtype == torch.float32:
        w, xr = tf32(w), tf32(xr)
    w64, x64 = w.to(torch.float64), xr.to(torch.float64)
    y = F.linear(x64, w64)
    spread = F.linear(x64.abs(), w64.abs()) * layer.in_features * 2.0 ** -24
    if scale_row is not None:
        y = y * scale_row.cpu().double()
        spread = spread * scale_row.cpu().double().abs()
    if scale_col is not None:
        y = y * scale_col.cpu().double().reshape(y.shape[:-1] + (1,))
        spread = spread * scale_col.cpu().double().abs().reshape(y.shape[:-1] + (1,))
    if layer.bias is not None:
        y = y + layer.bias.detach().cpu().double()
    if activation == "relu":
        y = torch.relu(y)
    elif activation == "gelu":
        y = F.gelu(y)
    return y, spread


def assert_close(y, ref, spread, what=""):
    """|y - ref| <= 2^-p·|ref| + 2·spread, p the output's mantissa bits (exact for integers)."""
    y = y.detach().cpu()
    if not y.dtype.is_floating_point:
        assert torch.equal(y.to(torch.int64), ref.round().to(torch.int64)), what
        return
    err = (y.double() - ref).abs()
    bound = 2.0 ** -MANTISSA[y.dtype] * ref.abs() + 2 * spread
    worst = (err - bound).argmax()
    assert (err <= bound).all(), (f"{what}: |y - ref| = {err.flatten()[worst]:.3g} > {bound.flatten()[worst]:.3g} "
                                  f"at {worst.item()} (SPMMA_SEED={SEED})")


def layer_for(dtype, out_features, in_features, gen, bias=True, device="cpu", **kw):
    w = rand((out_features, in_features), dtype, gen, device)
    b = rand((out_features,), torch.float32, gen, device) if bias else None
    return st.SparseLinear.from_weight(w, b, **kw)


# ---------------------------------------------------------------- import

def test_import_spmma_needs_no_torch():
    """`import spmma` neither needs nor imports torch; `import spmma.torch` says what is missing."""
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'):\n"
            "            raise ImportError('torch blocked by the test')\n"
            "sys.meta_path.insert(0, Block())\n"
            "import spmma\n"
            "assert 'torch' not in sys.modules\n"
            "try:\n"
            "    import spmma.torch\n"
            "except ImportError as e:\n"
            "    print('ok', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert r.returncode == 0 and r.stdout.startswith("ok torch blocked"), r.stdout + r.stderr


# ---------------------------------------------------------------- the op

@pytest.mark.parametrize("dtype", FLOATS + [torch.int8])
@pytest.mark.parametrize("m,lead,steps", [(32, (1,), 1), (40, (3, 5), 2), (7, (2, 1, 3), 3)])
def test_opcheck(dtype, m, lead, steps, gen):
    k = STEP[dtype] * steps
    layer = layer_for(dtype, m, k, gen, bias=dtype != torch.int8)
    x = rand(lead + (k,), dtype, gen)
    args = (x, layer.values, layer.metadata, layer.weight_type, k, m)
    cases = [{}]
    if dtype != torch.int8:
        cases += [{"bias": layer.bias, "activation": "gelu"},
                  {"bias": layer.bias.detach(), "activation": "relu", "out_dtype": torch.float32,
                   "scale_row": rand((m,), torch.float32, gen),
                   "scale_col": rand((math.prod(lead),), torch.float32, gen)}]
        args_grad = (x.clone().requires_grad_(),) + args[1:]
        torch.library.opcheck(st.sparse_linear, args_grad, {"bias": layer.bias, "activation": "gelu"})
    else:
        cases += [{"out_dtype": torch.int8, "scale_row": torch.full((m,), 2.0 ** -10)}]
    for kw in cases:
        torch.library.opcheck(st.sparse_linear, args, kw)


def test_fake_kernel_shapes_and_errors():
    """The fake (meta) kernel gives the output's shape, dtype and device without running, and
    refuses what the real one would (so torch.compile reports it where it traces)."""
    layer = st.SparseLinear(64, 48, dtype=torch.bfloat16)
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        x = torch.empty(2, 3, 64, dtype=torch.bfloat16)
        v, md = mode.from_tensor(layer.values), mode.from_tensor(layer.metadata)
        y = st.sparse_linear(x, v, md, "bf16", 64, 48)
        assert y.shape == (2, 3, 48) and y.dtype == torch.bfloat16
        y = st.sparse_linear(x, v, md, "bf16", 64, 48, out_dtype=torch.float8_e4m3fn)
        assert y.dtype == torch.float8_e4m3fn
        with pytest.raises(ValueError, match="in_features = 64"):
            st.sparse_linear(torch.empty(2, 32, dtype=torch.bfloat16), v, md, "bf16", 64, 48)
        with pytest.raises(NotImplementedError, match="x of dtype torch.float16 with a torch.bfloat16"):
            st.sparse_linear(torch.empty(2, 64, dtype=torch.float16), v, md, "bf16", 64, 48)


# ---------------------------------------------------------------- SparseLinear numerics

@pytest.mark.parametrize("dtype", FLOATS + [torch.float8_e4m3fn, torch.float8_e5m2])
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
def test_sparse_linear_against_float64(dtype, activation, gen):
    m, k = 37, 3 * STEP[dtype]  # odd out_features, several sparse steps
    layer = layer_for(dtype, m, k, gen, activation=activation)
    if dtype in FLOATS:
        assert layer.bias.dtype == dtype  # nn.Linear's convention
    x = rand((2, 5, k), dtype, gen)  # batched 3-D x
    y = layer(x)
    want = dtype if dtype in FLOATS else torch.bfloat16
    assert y.shape == (2, 5, m) and y.dtype == want and y.device == x.device
    ref, spread = reference(x, layer, activation)
    assert_close(y, ref, spread, f"{dtype} {activation}")


def test_sparse_linear_int8_exact(gen):
    layer = layer_for(torch.int8, 24, 128, gen, bias=False)
    x = rand((3, 4, 128), torch.int8, gen)
    y = layer(x)
    assert y.dtype == torch.int32
    ref, _ = reference(x, layer)
    assert_close(y, ref, None, "int8")
    relu = st.SparseLinear.from_weight(layer.dense_weight(), prune="check", activation="relu")
    assert torch.equal(relu(x), torch.relu(y))


def test_scales_out_dtype_and_n_zero(gen):
    layer = layer_for(torch.float16, 40, 64, gen, out_dtype=torch.float32)
    x = rand((6, 64), torch.float16, gen)
    sr, sc = rand((40,), torch.float32, gen), rand((6,), torch.float32, gen)
    y = st.sparse_linear(x, layer.values, layer.metadata, "f16", 64, layer.out_features, layer.bias, "gelu", torch.float32, sr,
                         sc)
    ref, spread = reference(x, layer, "gelu", sr, sc)
    assert y.dtype == torch.float32
    assert_close(y, ref, spread, "scales")
    assert layer(torch.empty(0, 3, 64, dtype=torch.float16)).shape == (0, 3, 40)


def test_strided_x_is_copied_not_refused(gen):
    layer = layer_for(torch.bfloat16, 32, 64, gen)
    xt = rand((64, 5), torch.bfloat16, gen).t()  # columns contiguous, rows not
    assert xt.stride(-1) != 1
    assert torch.equal(layer(xt), layer(xt.contiguous()))
    wide = rand((5, 96), torch.bfloat16, gen)[:, 16:80]  # rows 96 apart: read in place
    assert torch.equal(layer(wide), layer(wide.contiguous()))


def test_dense_weight_matches_spmma_bit_for_bit(gen):
    for dtype in FLOATS + [torch.float8_e4m3fn, torch.float8_e5m2, torch.int8, torch.uint8]:
        w = rand((24, STEP.get(dtype, 64) * 2), torch.int8 if dtype == torch.uint8 else dtype, gen)
        if dtype == torch.uint8:
            w = w.view(torch.uint8)
        layer = st.SparseLinear.from_weight(w)
        raw = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[w.element_size()]
        bits = layer.sparse_weight().dense_bits().cpu().view(raw).reshape(w.shape)
        d = layer.dense_weight()
        assert d.dtype == dtype and torch.equal(d.view(raw), bits), dtype
        chunk = 2 if dtype == torch.float32 else 4
        nz = (d.view(raw) != 0).reshape(24, -1, chunk).sum(-1)
        assert (nz == chunk // 2).all()  # the inputs have no zeros: exactly 2 of 4 (1 of 2) kept


def test_backward_x_and_bias(gen):
    """Gradients for x and bias (a frozen sparse layer in a model being trained) against autograd
    through F.linear in float64 on the pruned weight."""
    for dtype, activation in ((torch.float32, "gelu"), (torch.float16, "relu"), (torch.bfloat16, None)):
        layer = layer_for(dtype, 48, 2 * STEP[dtype], gen, activation=activation)
        x = rand((3, 2, layer.in_features), dtype, gen).requires_grad_()
        g = rand((3, 2, 48), dtype, gen)
        layer(x).backward(g)
        w = layer.dense_weight().double()
        if dtype == torch.float32:
            w = tf32(layer.dense_weight()).double()
        x64 = (tf32(x.detach()) if dtype == torch.float32 else x.detach()).double().requires_grad_()
        b64 = layer.bias.detach().double().requires_grad_()
        y64 = F.linear(x64, w, b64)
        y64 = {None: y64, "relu": torch.relu(y64), "gelu": F.gelu(y64)}[activation]
        y64.backward(g.double())
        spread = (g.double().abs() @ w.abs()) * 48 * 2.0 ** -24 + 2.0 ** -12 * x64.grad.abs()
        assert_close(x.grad, x64.grad, spread, f"dx {dtype} {activation}")
        assert_close(layer.bias.grad, b64.grad, b64.grad.abs() * 2.0 ** -12 + 6 * 2.0 ** -24 * 4, f"db {dtype}")
    layer = layer_for(torch.float16, 32, 32, gen)
    sr = torch.ones(32, requires_grad=True)
    x = rand((2, 32), torch.float16, gen)
    y = st.sparse_linear(x, layer.values, layer.metadata, "f16", 32, layer.out_features, None, None, None, sr)
    with pytest.raises(NotImplementedError, match="no gradient for scale_row"):
        y.sum().backward()


# ---------------------------------------------------------------- state, moves, cache

def test_state_dict_round_trip_into_a_fresh_module(gen):
    layer = layer_for(torch.bfloat16, 48, 128, gen)
    x = rand((4, 128), torch.bfloat16, gen)
    y = layer(x)
    sd = layer.state_dict()
    assert set(sd) == {"values", "metadata", "bias", "_extra_state"}
    assert sd["_extra_state"] == {"format": "spmma-compressed-v1", "type": "bf16", "shape": [48, 128]}
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=True)  # plain tensors and values only
    fresh = st.SparseLinear(128, 48, dtype=torch.bfloat16)
    zero = fresh(x)  # an all-zero weight, now cached: the load must replace it
    assert torch.equal(zero, torch.zeros_like(zero))
    fresh.load_state_dict(loaded)
    assert torch.equal(fresh(x), y)
    assert torch.equal(fresh.dense_weight(), layer.dense_weight())
    with pytest.raises(ValueError, match="a 48 x 128 weight, this layer is 48 x 64"):
        st.SparseLinear(64, 48, dtype=torch.bfloat16).load_state_dict(loaded)
    with pytest.raises(ValueError, match="_extra_state format 'other'"):
        fresh.load_state_dict(dict(loaded, _extra_state={"format": "other"}))
    as_f16 = st.SparseLinear(128, 48, dtype=torch.float16)  # the same width: takes the state's type
    as_f16.load_state_dict(loaded)
    assert as_f16.weight_dtype == torch.bfloat16 and torch.equal(as_f16(x), y)
    with pytest.raises(ValueError, match=r"a torch.bfloat16 \(bf16\) weight, this layer holds torch.float8_e4m3fn"):
        st.SparseLinear(128, 48, dtype=torch.float8_e4m3fn).load_state_dict(loaded, strict=False)


def test_buffers_are_the_weight_and_the_state_dict_is_portable(gen):
    """The layer's buffers are the weight spmma's kernels read (1-D uint8, the device's layout);
    its state_dict holds the interchange form (one row per output feature: SparseWeight.state()'s
    bytes), which loads back through a check of every nibble (a bad one named by row and chunk)."""
    layer = layer_for(torch.float16, 40, 128, gen)
    assert layer.values.dim() == 1 and layer.values.dtype == torch.uint8
    w = layer.sparse_weight()
    assert w.values is layer.values and w.layout == ("interchange" if layer.values.device.type == "cpu" else "gpu-v1")
    sd = layer.state_dict()
    assert sd["values"].shape == (40, 128) and sd["metadata"].shape == (40, 16)
    state = w.state()
    assert torch.equal(sd["values"].reshape(-1), torch.from_numpy(state["values"]))
    assert torch.equal(sd["metadata"].reshape(-1), torch.from_numpy(state["metadata"]))
    bad = dict(sd, metadata=sd["metadata"].clone())
    bad["metadata"][5, 0] = (int(bad["metadata"][5, 0]) & 0x0F) | 0x50  # row 5, chunk 1: a repeated index
    fresh = st.SparseLinear(128, 40, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="row 5, chunk 1"):
        fresh.load_state_dict(bad)
    with pytest.raises(RuntimeError, match="values must be the interchange form, 5120 uint8 bytes"):
        fresh.load_state_dict(dict(sd, values=sd["values"][:, :64]))
    # assign=True into a layer built on the meta device: the buffers become the loaded weight.
    meta = st.SparseLinear(128, 40, dtype=torch.float16, device="meta")
    meta.load_state_dict(sd, assign=True)
    x = rand((3, 128), torch.float16, gen)
    assert torch.equal(meta(x), layer(x))


def test_whole_module_save_and_deepcopy(gen):
    import copy
    model = nn.Sequential(layer_for(torch.float16, 32, 64, gen), nn.ReLU())
    x = rand((3, 64), torch.float16, gen)
    y = model(x)
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf, weights_only=False)(x), y)
    assert torch.equal(copy.deepcopy(model)(x), y)


def test_pickling_carries_the_interchange_form(gen):
    """torch.save(model) / copy.deepcopy pickle the buffers: a layer pickles its weight in the
    interchange form (one row per output feature) and unpickles it into the layout of the device
    it lands on (a GPU layout read as the CPU's would be a silently wrong weight)."""
    import copy
    layer = layer_for(torch.bfloat16, 256, 64, gen)  # out_features a multiple of 128
    state = layer.__getstate__()
    assert state["_buffers"]["values"].shape == (256, 64) and state["_buffers"]["metadata"].shape == (256, 8)
    assert layer.values.dim() == 1  # the layer itself keeps its layout
    x = rand((3, 64), torch.bfloat16, gen)
    buf = io.BytesIO()
    torch.save(layer, buf)
    buf.seek(0)
    back = torch.load(buf, weights_only=False)
    assert back.values.dim() == 1 and torch.equal(back.values, layer.values)
    assert torch.equal(back(x), layer(x)) and torch.equal(copy.deepcopy(layer)(x), layer(x))


def test_cache_follows_the_buffers(gen):
    import gc
    layer = layer_for(torch.float16, 32, 64, gen)
    x = rand((2, 64), torch.float16, gen)
    y = layer(x)
    key = st._key(layer.values, layer.metadata, "f16", 64, 32)
    assert key in st._CACHE and st._CACHE[key].values is layer.values  # a view: spmma holds no copy of its own
    assert layer.sparse_weight().values is layer.values
    with torch.no_grad():
        layer.values.zero_()  # an in-place write: the next run reads it
    assert torch.equal(layer(x), layer.bias.detach().expand(2, 32))
    assert not torch.equal(layer(x), y)
    del layer, y  # y too: its autograd graph (the bias is a Parameter) holds the buffers for backward
    gc.collect()
    assert key not in st._CACHE  # the storages died: so did spmma's view


# ---------------------------------------------------------------- models

class MLP(nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.up = nn.Linear(64, 128, dtype=dtype)
        self.down = nn.Linear(128, 64, dtype=dtype)
        self.head = nn.Linear(64, 10, dtype=dtype)
        self.odd = nn.Linear(48, 16, dtype=dtype)  # K = 48: not a whole number of 32-wide steps

    def forward(self, x):
        h = self.down(F.gelu(self.up(x)))
        return self.head(h), self.odd(h[..., :48])


def test_sparsify_with_a_filter(gen):
    torch.manual_seed(SEED)
    model = MLP(torch.float16)
    dense = {n: m.weight.detach().clone() for n, m in model.named_modules() if isinstance(m, nn.Linear)}
    report = {}
    out = st.sparsify_(model, lambda mod, name: name in ("up", "down"), report=report)
    assert out is model and report == {"replaced": ["up", "down"], "skipped": {}}
    assert isinstance(model.up, st.SparseLinear) and isinstance(model.down, st.SparseLinear)
    assert type(model.head) is nn.Linear
    # magnitude pruning of the original weight: the kept elements are the original ones
    d = model.up.dense_weight()
    assert torch.equal(d[d != 0], dense["up"][d != 0])
    x = rand((2, 3, 64), torch.float16, gen)
    y, _ = model(x)
    h = F.linear(F.gelu(F.linear(x.double(), model.up.dense_weight().double(), model.up.bias.double())),
                 model.down.dense_weight().double(), model.down.bias.double())
    ref = F.linear(h, model.head.weight.double(), model.head.bias.double())
    # three float16 layers: each rounds once (2^-11), the next ones carry it on; 2^-7 of the
    # largest output covers that (a misplaced weight element is off by far more)
    assert ((y.double() - ref).abs() <= 2.0 ** -7 * ref.abs().max()).all()
    with pytest.raises(ValueError, match="sparsify_: odd: .*multiple of 32"):
        st.sparsify_(model, lambda mod, name: name == "odd")


def test_sparsify_default_skips_what_it_cannot_take():
    torch.manual_seed(SEED)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 64, dtype=torch.float16)
            self.attn = nn.MultiheadAttention(64, 4, dtype=torch.float16, batch_first=True)
            self.mlp = MLP(torch.float16)
            self.shared = self.mlp.down  # one module, two names
            self.lm_head = nn.Linear(64, 10, bias=False, dtype=torch.float16)
            self.lm_head.weight = self.emb.weight  # tied
            self.wide = nn.Linear(64, 8, dtype=torch.float64)

    net = Net()
    report = {}
    st.sparsify_(net, report=report)
    assert report["replaced"] == ["mlp.up", "mlp.down", "mlp.head", "shared"]
    assert net.shared is net.mlp.down and isinstance(net.shared, st.SparseLinear)
    skipped = report["skipped"]
    assert set(skipped) == {"attn.out_proj", "mlp.odd", "lm_head", "wide"}
    assert "subclass of nn.Linear" in skipped["attn.out_proj"]
    assert "multiple of 32" in skipped["mlp.odd"]
    assert "shared with emb.weight" in skipped["lm_head"]
    assert "float64 is not an spmma input type" in skipped["wide"]
    with pytest.raises(ValueError, match="the model itself is an nn.Linear"):
        st.sparsify_(nn.Linear(64, 64))


def test_compile_fullgraph_cpu(gen):
    """torch.compile(fullgraph=True) (Inductor on the CPU) traces the op through its fake kernel:
    no graph break, the same bits as eager (ReLU between: exact in any code Inductor writes), a
    second batch size too (dynamic leading dimension)."""
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64)).to(torch.bfloat16)
    st.sparsify_(model)
    compiled = torch.compile(model, fullgraph=True)
    for n in (4, 7):
        x = rand((n, 64), torch.bfloat16, gen)
        assert torch.equal(compiled(x), model(x))


# ---------------------------------------------------------------- bad inputs

def test_bad_inputs(gen):
    with pytest.raises(TypeError, match="dtype torch.float64 is not an spmma input type"):
        st.SparseLinear.from_dense(nn.Linear(64, 32, dtype=torch.float64))
    with pytest.raises(TypeError, match="dtype torch.int16 is not an spmma input type"):
        st.SparseLinear(64, 32, dtype=torch.int16)
    with pytest.raises(TypeError, match="expected an nn.Linear"):
        st.SparseLinear.from_dense(nn.Conv1d(4, 4, 1))
    with pytest.raises(ValueError, match="multiple of 32"):
        st.SparseLinear.from_dense(nn.Linear(40, 32, dtype=torch.float16))
    with pytest.raises(ValueError, match="meta device"):
        st.SparseLinear.from_dense(nn.Linear(64, 32, device="meta"))
    with pytest.raises(ValueError, match=r"row 0, chunk 0"):
        st.SparseLinear.from_weight(torch.ones(8, 32, dtype=torch.float16), prune="check")
    with pytest.raises(ValueError, match="activation = 'tanh'"):
        st.SparseLinear(64, 32, activation="tanh")
    layer = layer_for(torch.float16, 32, 64, gen)
    x = rand((3, 64), torch.float16, gen)
    with pytest.raises(ValueError, match=r"x has shape \(3, 32\), its last dimension must be in_features = 64"):
        layer(x[:, :32])
    with pytest.raises(ValueError, match="in_features = 64"):
        layer(torch.tensor(1.0, dtype=torch.float16))
    with pytest.raises(NotImplementedError, match="x of dtype torch.float32 with a torch.float16 .f16. weight"):
        layer(x.float())
    with pytest.raises(TypeError, match="dtype torch.float64 is not an spmma input type"):
        layer(x.double())
    with pytest.raises(ValueError, match="bias has 3 values, the weight has out_features = 32"):
        st.sparse_linear(x, layer.values, layer.metadata, "f16", 64, 32, torch.ones(3))
    with pytest.raises(ValueError, match="scale_col has 2 values, x has 3 rows"):
        st.sparse_linear(x, layer.values, layer.metadata, "f16", 64, 32, scale_col=torch.ones(2))
    with pytest.raises(ValueError, match="values must be a contiguous 1-D uint8 tensor of 2048 bytes .* it is 2-D"):
        st.sparse_linear(x, layer.values.view(32, -1), layer.metadata, "f16", 64, 32)
    with pytest.raises(ValueError, match="metadata must be a contiguous 1-D uint8 tensor of 256 bytes .* of 128 elements"):
        st.sparse_linear(x, layer.values, layer.metadata[:128], "f16", 64, 32)
    with pytest.raises(ValueError, match="values must be .* of 3072 bytes .a 48 x 64 f16 weight.* of 2048 elements"):
        st.sparse_linear(x, layer.values, layer.metadata, "f16", 64, 48)  # another out_features: other sizes
    with pytest.raises(ValueError, match="values must be a contiguous"):
        st.sparse_linear(x, layer.values.view(torch.int8), layer.metadata, "f16", 64, 32)


# ---------------------------------------------------------------- PyTorch's semi-structured tensors

def _cutlass_conversions():
    try:
        from torch.sparse._semi_structured_conversions import sparse_semi_structured_from_dense_cutlass
        return sparse_semi_structured_from_dense_cutlass
    except ImportError:
        pytest.skip("this torch has no torch.sparse._semi_structured_conversions")


PROTOTYPE = pytest.mark.filterwarnings("ignore:The PyTorch API of SparseSemiStructuredTensor")


@PROTOTYPE
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int8])
def test_cutlass_layout_is_spmma_values_and_permuted_metadata(dtype, gen):
    """spmma's compressed form and PyTorch's CUTLASS one hold the same values and the same
    metadata words in another order: to_semi_structured(backend='cutlass') builds PyTorch's from
    spmma's without a dense weight, equal to what PyTorch's own conversion makes of the pruned
    weight (its pure-torch code, on the CPU); back through from_weight gives the same buffers."""
    from_dense = _cutlass_conversions()
    layer = layer_for(dtype, 64, 2 * STEP[dtype], gen)
    sst = st.to_semi_structured(layer, backend="cutlass")
    assert isinstance(sst, torch.sparse.SparseSemiStructuredTensorCUTLASS) and sst.shape == (64, layer.in_features)
    packed, meta = from_dense(layer.dense_weight())
    assert torch.equal(sst.packed.view(torch.uint8), packed.view(torch.uint8))
    assert torch.equal(sst.meta, meta)
    if dtype == torch.float32:  # PyTorch's CPU to_dense moves 16-bit halves through float16, quieting
        # those that look like signalling NaNs (bit 9): the low 13 bits, which tf32 ignores
        assert torch.equal(tf32(sst.to_dense()), tf32(layer.dense_weight()))
    else:
        assert torch.equal(sst.to_dense(), layer.dense_weight())
    back = st.SparseLinear.from_weight(sst)  # read directly: bit for bit, float32 included
    assert torch.equal(back.values, layer.values) and torch.equal(back.metadata, layer.metadata)


def test_semi_structured_errors(gen):
    layer = layer_for(torch.float16, 48, 64, gen)
    with pytest.raises(ValueError, match="live on CUDA"):
        st.to_semi_structured(layer)
    with pytest.raises(ValueError, match="multiple of 32, this layer has 48"):
        st.to_semi_structured(layer, backend="cutlass")
    with pytest.raises(NotImplementedError, match="no torch.float8_e4m3fn weights"):
        st.to_semi_structured(layer_for(torch.float8_e4m3fn, 64, 64, gen), backend="cutlass")
    with pytest.raises(ValueError, match="backend = 'x'"):
        st.to_semi_structured(layer, backend="x")


# ---------------------------------------------------------------- the tutorial

def _tutorial_blocks():
    """The ```python blocks of docs/python.md's section "PyTorch", and whether each needs CUDA
    (code, not comments, names it)."""
    import re
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")).read()
    section = text[text.index("\n## PyTorch\n"):text.index("\n## Errors\n")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    return [(b, any("cuda" in line.split("#")[0] for line in b.splitlines())) for b in blocks]


@PROTOTYPE
def test_docs_tutorial_runs_as_written(tmp_path, monkeypatch):
    """docs/python.md's PyTorch tutorial, block after block in one namespace, as written (the GPU
    blocks where CUDA is); every `print(...)  # text` prints that text."""
    monkeypatch.chdir(tmp_path)  # it saves sparse.pt
    torch._dynamo.reset()
    blocks = _tutorial_blocks()
    assert len(blocks) >= 6
    run_doc_blocks([code for code, cuda in blocks if not cuda or torch.cuda.is_available()])


# ---------------------------------------------------------------- CUDA

def cuda_types():
    return {b for _, b, _ in spmma.supported_types("cuda")}


@gpu
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.int8])
def test_cuda_numerics(dtype, gen):
    name = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float8_e4m3fn: "e4m3", torch.int8: "s8"}[dtype]
    if name not in cuda_types():
        pytest.skip(f"this build's CUDA backend runs no {dtype}")
    k = 4 * STEP[dtype]
    layer = layer_for(dtype, 96, k, gen, bias=dtype != torch.int8, device="cuda",
                      activation=None if dtype == torch.int8 else "gelu")
    x = rand((2, 9, k), dtype, gen, "cuda")
    y = layer(x)
    assert y.device == x.device and y.shape == (2, 9, 96)
    ref, spread = reference(x, layer, layer.activation)
    assert_close(y, ref, spread, f"cuda {dtype}")


@gpu
@needs_cuda
def test_cuda_moves(gen):
    layer = layer_for(torch.float16, 64, 128, gen)
    x = rand((5, 128), torch.float16, gen)
    y_cpu = layer(x)
    layer.cuda()
    assert layer.values.is_cuda and layer.bias.is_cuda
    y_gpu = layer(x.cuda())
    ref, spread = reference(x, layer)
    assert_close(y_gpu, ref, spread, "cuda")
    assert_close(y_cpu, ref, spread, "cpu")
    layer.cpu()
    assert torch.equal(layer(x), y_cpu)
    with pytest.raises(ValueError, match="x is on cuda:0, the weight's values on cpu"):
        layer(x.cuda())


@gpu
@needs_cuda
def test_cuda_weight_is_held_once_and_moves_between_layouts(gen):
    """On the GPU the buffers hold the kernels' own layout, allocated by PyTorch: spmma holds no
    copy (PyTorch's allocator grows by the buffers and the bias only, and cudaMemGetInfo by no
    more than that). .cpu() / .cuda() convert between the layouts; a state_dict saved on the GPU
    loads on the CPU and the other way."""
    def make():
        return st.SparseLinear.from_dense(nn.Linear(4096, 1024).to("cuda", torch.float16))

    x = rand((7, 4096), torch.float16, gen, "cuda")
    make()(x)  # a warm-up of the same shapes: the kernels' code loads into device memory once
    torch.cuda.synchronize()
    free0, reserved0 = torch.cuda.mem_get_info()[0], torch.cuda.memory_reserved()
    before = torch.cuda.memory_allocated()
    layer = make()
    y = layer(x)
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - before - y.numel() * 2
    weight = layer.values.numel() + layer.metadata.numel()
    assert layer.sparse_weight().layout == "gpu-v1"
    assert weight <= held <= weight + 1024 * 2 + (1 << 20), (held, weight)  # + the bias and allocator rounding
    spmma_own = (free0 - torch.cuda.mem_get_info()[0]) - (torch.cuda.memory_reserved() - reserved0)
    assert spmma_own < weight // 2, f"spmma allocated {spmma_own} bytes of its own for a {weight}-byte weight"
    sd = layer.state_dict()
    assert sd["values"].is_cuda and sd["values"].shape == (1024, 4096)
    cpu_layer = st.SparseLinear(4096, 1024, dtype=torch.float16)
    cpu_layer.load_state_dict({k: (v.cpu() if isinstance(v, torch.Tensor) else v) for k, v in sd.items()})
    assert torch.equal(cpu_layer.dense_weight(), layer.dense_weight().cpu())
    layer.cpu()
    assert layer.sparse_weight().layout == "interchange" and torch.equal(layer.dense_weight(), cpu_layer.dense_weight())
    layer.cuda()
    assert torch.equal(layer(x), y)
    back = st.SparseLinear(4096, 1024, dtype=torch.float16, device="cuda")
    back.load_state_dict(cpu_layer.state_dict())
    assert torch.equal(back(x), y)


@gpu
@needs_cuda
def test_cuda_model_saved_whole_loads_on_the_cpu(gen):
    """A GPU layer saved whole (torch.save(model)) and loaded with map_location="cpu": its weight
    arrives in the interchange form and becomes the CPU's layout, the same product (out_features
    256: the GPU layout and the interchange form then have the same sizes)."""
    layer = layer_for(torch.bfloat16, 256, 128, gen, device="cuda")
    x = rand((4, 128), torch.bfloat16, gen)
    buf = io.BytesIO()
    torch.save(layer, buf)
    buf.seek(0)
    cpu = torch.load(buf, weights_only=False, map_location="cpu")
    assert cpu.sparse_weight().layout == "interchange"
    assert torch.equal(cpu.dense_weight(), layer.dense_weight().cpu())
    assert torch.equal(cpu(x), layer.cpu()(x))


@gpu
@needs_cuda
def test_cuda_compile(gen):
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)).to("cuda", torch.bfloat16)
    st.sparsify_(model)
    compiled = torch.compile(model, fullgraph=True)
    for n in (8, 33):
        x = rand((n, 256), torch.bfloat16, gen, "cuda")
        assert torch.equal(compiled(x), model(x))


@gpu
@needs_cuda
def test_cuda_graph_capture_and_replay(gen):
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 128)).to("cuda", torch.float16)
    st.sparsify_(model)
    static_x = rand((16, 256), torch.float16, gen, "cuda")
    cold = st.SparseLinear.from_dense(nn.Linear(256, 64).to("cuda", torch.float16))
    cold_x = static_x[:, :256].clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up: builds spmma's weights and plans outside the capture
        for _ in range(2):
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_y = model(static_x)
    for _ in range(3):
        x = rand((16, 256), torch.float16, gen, "cuda")
        static_x.copy_(x)
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(static_y, model(x))
    # A layer first used inside a capture: spmma reads its buffers where they are (no copy to
    # build), so only the plan is made there; the replay equals the eager product.
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2):
        cold_y = cold(cold_x)
    g2.replay()
    torch.cuda.synchronize()
    assert torch.equal(cold_y, cold(cold_x))
    # A weight loaded in place after the capture: the replay reads it.
    other = st.SparseLinear.from_dense(nn.Linear(256, 64).to("cuda", torch.float16))
    cold.load_state_dict(other.state_dict())
    g2.replay()
    torch.cuda.synchronize()
    assert torch.equal(cold_y, other(cold_x))


@gpu
@needs_cuda
def test_cuda_compile_reduce_overhead(gen):
    """torch.compile's CUDA graphs (mode='reduce-overhead') replay the op."""
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 128)).to("cuda", torch.float16)
    st.sparsify_(model)
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    for _ in range(4):
        x = rand((8, 128), torch.float16, gen, "cuda")
        assert torch.equal(compiled(x).clone(), model(x))


@gpu
@needs_cuda
@PROTOTYPE
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_semi_structured_both_ways(dtype, gen):
    layer = layer_for(dtype, 128, 128, gen, device="cuda")
    x = rand((32, 128), dtype, gen, "cuda")
    # PyTorch's default backend is cuSPARSELt (where its build has it); PyTorch runs CUTLASS
    # products on compute capability 8.x only
    backends = ([None] if torch.backends.cusparselt.is_available() else []) + ["cutlass"]
    for backend in backends:
        sst = st.to_semi_structured(layer, backend=backend)
        assert isinstance(sst, torch.sparse.SparseSemiStructuredTensor)
        assert torch.equal(sst.to_dense(), layer.dense_weight())
        if backend is None or torch.cuda.get_device_capability()[0] == 8:
            ref, spread = reference(x, layer)
            # PyTorch's product may accumulate in float16: K·2^-11·Σ|x||w| (2^13 times the f32 bound)
            assert_close(F.linear(x, sst, layer.bias), ref, spread * 2**13, f"torch's product, backend {backend}")
        back = st.SparseLinear.from_weight(sst, layer.bias)
        assert torch.equal(back.values, layer.values) and torch.equal(back.metadata, layer.metadata)
        assert torch.equal(back(x), layer(x))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[gpu, needs_cuda])])
def test_eager_fast_path_equals_the_op(gen, device):
    """SparseLinear in eager inference calls the op's implementation directly (no dispatch, no
    autograd wrapper) and spmma.matmul hands torch tensors over as raw pointers: the same bits as
    the op through torch.library, and as the DLPack path of a numpy call."""
    layer = st.SparseLinear.from_dense(nn.Linear(64, 48).to(device, torch.float16), activation="gelu")
    x = rand((5, 64), torch.float16, gen, device)
    with torch.inference_mode():
        fast = layer(x)
    op = torch.ops.spmma.sparse_linear(x, layer.values, layer.metadata, layer.weight_type, layer.in_features,
                                       layer.out_features, layer.bias, layer.activation, layer.out_dtype)
    assert torch.equal(fast, op)
    if device == "cpu":
        import numpy as np
        w = layer.sparse_weight()
        via_numpy = spmma.matmul(w, x.numpy(), bias=layer.bias.detach().float().numpy(), activation="gelu")
        assert np.array_equal(np.asarray(via_numpy).view(np.uint16), op.detach().view(torch.int16).numpy().view(np.uint16))


def test_eager_calls_follow_the_layer(gen):
    """SparseLinear's eager calls keep each x signature's checked plan (spmma.torch._eager): a
    changed bias, new weights loaded in place, a new device or dtype of x, and more signatures
    than it keeps must each give the op's result, never a stale one."""
    layer = st.SparseLinear.from_dense(nn.Linear(64, 48).half())
    other = st.SparseLinear.from_dense(nn.Linear(64, 48).half())

    def op(x):
        return torch.ops.spmma.sparse_linear(x, layer.values, layer.metadata, layer.weight_type, layer.in_features,
                                             layer.out_features, layer.bias, layer.activation, layer.out_dtype)

    with torch.inference_mode():
        xs = [rand((n, 64), torch.float16, gen) for n in (1, 5, 1, 3)]
        for x in xs:
            assert torch.equal(layer(x), op(x))
    with torch.no_grad():
        layer.bias.add_(0.5)  # in place: a new version
    with torch.inference_mode():
        assert torch.equal(layer(xs[0]), op(xs[0]))
    layer.load_state_dict(other.state_dict())  # copies into the buffers in place
    with torch.inference_mode():
        y = layer(xs[1])
        assert torch.equal(y, op(xs[1]))
        assert torch.equal(y, other(xs[1]))
        for n in range(1, st._MAX_CALLS + 4):  # more signatures than a layer keeps
            x = rand((n, 64), torch.float16, gen)
            assert torch.equal(layer(x), op(x))
        assert len(st._CALLS[layer]) <= st._MAX_CALLS
    layer.to(torch.float32)  # _apply: the calls made for the old tensors go
    assert layer not in st._CALLS
