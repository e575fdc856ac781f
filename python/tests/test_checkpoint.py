# SPDX-License-Identifier: BSD-3-Clause
"""Compressed checkpoints in Python: spmma.torch.load_compressed_ / save_compressed and the
safetensors reader and writer spmma._safetensors (docs/python.md, "Compressed checkpoints";
the file format: docs/files.md, "Checkpoints").

A small model (bfloat16, float16 and float32 linear layers, odd out_features, a layer without
bias, a LayerNorm and a buffer) is pruned; its compressed checkpoint is made (a) by the CLI,
`spmma compress` (skipped where the CLI is not built: SPMMA_CLI names it, else build/spmma of this
repository), and (b) in this file, from SparseWeight.interchange() bytes by the documented format,
independently of load_compressed_'s code. Both load into a fresh dense model whose outputs must
equal, bit for bit, those of the same pruned model sparsified by sparsify_.

Without PyTorch (2.4 or newer) the file skips; SPMMA_REQUIRE_TORCH=1 turns that into a failure.
Tests marked `gpu` need a CUDA GPU."""
import copy
import json
import os
import re
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from conftest import import_spmma_torch, run_doc_blocks

torch, st = import_spmma_torch()

import torch.nn.functional as F
from torch import nn

import spmma
from spmma import _safetensors as sft

SEED = int(os.environ.get("SPMMA_SEED", "12345"))
ROOT = Path(__file__).resolve().parents[2]
gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")

ST_DTYPE = {torch.bfloat16: "BF16", torch.float16: "F16", torch.float32: "F32", torch.int8: "I8", torch.uint8: "U8",
            torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2"}
LINEARS = ("up", "down", "side", "f32")


@pytest.fixture
def gen(request):
    """A generator seeded per test (SPMMA_SEED and the test's id)."""
    return torch.Generator().manual_seed(SEED ^ zlib.crc32(request.node.nodeid.encode()))


class Net(nn.Module):
    """bf16 up (64 -> 96) and down (96 -> 45, no bias) after a LayerNorm, times a buffer; a f16
    side layer (64 -> 33); a float32 layer (32 -> 19: tf32, 1:2)."""

    def __init__(self, gen):
        super().__init__()
        bf16 = torch.bfloat16
        self.norm = nn.LayerNorm(64, dtype=bf16)
        self.up = nn.Linear(64, 96, dtype=bf16)
        self.down = nn.Linear(96, 45, bias=False, dtype=bf16)
        self.side = nn.Linear(64, 33, dtype=torch.float16)
        self.f32 = nn.Linear(32, 19, dtype=torch.float32)
        self.register_buffer("scale", torch.ones(45, dtype=bf16))
        with torch.no_grad():  # every value random and non-zero: a misplaced element shows
            for t in list(self.parameters()) + [self.scale]:
                mag = torch.rand(t.shape, generator=gen, dtype=torch.float64) + 0.25
                sign = torch.randint(0, 2, t.shape, generator=gen) * 2 - 1
                t.copy_((mag * sign).to(t.dtype))

    def forward(self, x):
        h = self.norm(x)
        return (self.down(F.gelu(self.up(h))) * self.scale, self.side(h.half()), self.f32(x[..., :32].float()))


def pruned(net):
    """A copy of net with each linear weight pruned by spmma (magnitude; tf32's 1:2 for float32)."""
    out = copy.deepcopy(net)
    with torch.no_grad():
        for name in LINEARS:
            lin = getattr(out, name)
            lin.weight.copy_(st.SparseLinear.from_dense(lin).dense_weight())
    return out


def sparsified(net):
    ref = copy.deepcopy(net)
    report = {}
    st.sparsify_(ref, report=report)
    assert sorted(report["replaced"]) == sorted(LINEARS), report
    return ref


def x_for(gen):
    return torch.randn(3, 5, 64, generator=gen).to(torch.bfloat16)


def assert_same_outputs(a, b, x):
    with torch.inference_mode():
        for ya, yb in zip(a(x), b(x)):
            assert ya.dtype == yb.dtype and torch.equal(ya.view(torch.uint8), yb.view(torch.uint8))


def write_dense(net, path):
    sft.write(path, {k: (ST_DTYPE[t.dtype], tuple(t.shape), t) for k, t in net.state_dict().items()},
              {"format": "pt"})


def write_compressed_by_hand(net, path):
    """docs/files.md's compressed checkpoint, written here from SparseWeight.interchange() bytes:
    NAME.values (rows x cols/2, the weight's dtype) and NAME.metadata (U16, rows x words) in
    NAME's place, the records and the format in __metadata__."""
    tensors, meta = {}, {"format": "pt"}
    for k, t in net.state_dict().items():
        prefix = k[:-len(".weight")]
        if not (k.endswith(".weight") and prefix in LINEARS):
            tensors[k] = (ST_DTYPE[t.dtype], tuple(t.shape), t)
            continue
        sw = spmma.compress(t.contiguous(), prune="check")
        v, m = sw.interchange()
        rows, cols = t.shape
        tensors[k + ".values"] = (ST_DTYPE[t.dtype], (rows, cols // 2), v)
        tensors[k + ".metadata"] = ("U16", (rows, m.shape[1] // 2), m)
        kind = "f32" if sw.dtype == "tf32" else sw.dtype
        for field, value in (("type", kind), ("pattern", "1:2" if kind == "f32" else "2:4"), ("rows", str(rows)),
                             ("cols", str(cols)), ("ordered", "true")):
            meta[f"spmma.compressed.{k}.{field}"] = value
    meta.update({"spmma.format": "spmma.compressed-checkpoint", "spmma.format_version": "1"})
    sft.write(path, tensors, meta)


@pytest.fixture
def case(tmp_path, gen):
    """(pruned model, its sparsified reference, dense checkpoint, compressed checkpoint by hand, x)."""
    net = pruned(Net(gen))
    dense, comp = tmp_path / "pruned.safetensors", tmp_path / "by_hand.safetensors"
    write_dense(net, dense)
    write_compressed_by_hand(net, comp)
    return net, sparsified(net), dense, comp, x_for(gen)


def cli():
    p = os.environ.get("SPMMA_CLI") or str(ROOT / "build" / "spmma")
    return p if os.path.isfile(p) and os.access(p, os.X_OK) else None


def check_loaded(fresh, report, ref, x):
    assert sorted(report["replaced"]) == sorted(LINEARS)
    assert report["missing"] == [] and report["unexpected"] == []
    assert sorted(report["loaded"]) == sorted(["norm.weight", "norm.bias", "scale", "up.bias", "side.bias", "f32.bias"])
    for name in LINEARS:
        layer, want = getattr(fresh, name), getattr(ref, name)
        assert isinstance(layer, st.SparseLinear) and layer.weight_type == want.weight_type
        assert torch.equal(layer.values, want.values) and torch.equal(layer.metadata, want.metadata)
    assert fresh.f32.weight_type == "tf32"
    assert fresh.down.bias is None
    assert_same_outputs(fresh, ref, x)


# ---------------------------------------------------------------- loading

def test_cli_compressed_checkpoint_loads_bit_for_bit(case, tmp_path, gen):
    net, ref, dense, by_hand, x = case
    exe = cli()
    if exe is None:
        pytest.skip("the spmma CLI is not built here (SPMMA_CLI, or build/spmma of this repository; the "
                    "pip-installed package has none): the checkpoint written by hand is tested without it")
    c = tmp_path / "cli.safetensors"
    r = subprocess.run([exe, "compress", str(dense), str(c), "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["compressed"] == 4
    # The CLI's bytes are the interchange form Python writes: the same tensors, the same records.
    got, want = sft.read(c), sft.read(by_hand)
    assert list(got.tensors) == list(want.tensors)
    for n, t in want.tensors.items():
        assert (got.tensors[n].dtype, got.tensors[n].shape) == (t.dtype, t.shape), n
        assert np.array_equal(got.tensors[n].data, t.data), n
    records = {k: v for k, v in got.metadata.items() if k.startswith("spmma.compressed.")}
    assert records == {k: v for k, v in want.metadata.items() if k.startswith("spmma.compressed.")}
    assert records["spmma.compressed.f32.weight.type"] == "f32"

    fresh = Net(gen)
    report = st.load_compressed_(fresh, c)
    check_loaded(fresh, report, ref, x)


def test_checkpoint_written_by_hand_loads_bit_for_bit(case, gen):
    net, ref, _, by_hand, x = case
    fresh = Net(gen)
    with torch.inference_mode():
        assert not torch.equal(fresh(x)[0], ref(x)[0])  # a fresh model computes something else
    check_loaded(fresh, st.load_compressed_(fresh, by_hand), ref, x)


def test_save_compressed_writes_the_documented_file(case, tmp_path, gen):
    net, ref, _, by_hand, x = case
    out = tmp_path / "saved.safetensors"
    report = st.save_compressed(ref, out, metadata={"format": "pt"})
    assert sorted(report["compressed"]) == sorted(n + ".weight" for n in LINEARS)
    got, want = sft.read(out), sft.read(by_hand)
    assert sorted(got.tensors) == sorted(want.tensors)
    for n, t in want.tensors.items():
        assert (got.tensors[n].dtype, got.tensors[n].shape) == (t.dtype, t.shape), n
        assert np.array_equal(got.tensors[n].data, t.data), n
    assert {k: v for k, v in got.metadata.items() if k != "spmma.compressed_by"} == want.metadata
    assert got.metadata["spmma.compressed_by"] == f"spmma {spmma.__version__}"
    fresh = Net(gen)
    check_loaded(fresh, st.load_compressed_(fresh, out), ref, x)
    exe = cli()
    if exe is not None:  # and the CLI decompresses it to the pruned checkpoint's values
        d = tmp_path / "d.safetensors"
        r = subprocess.run([exe, "decompress", str(out), str(d)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        back = sft.read(d)
        for k, t in net.state_dict().items():
            assert np.array_equal(back.tensors[k].data, t.contiguous().view(torch.uint8).reshape(-1).numpy()), k


def test_sparse_linear_placeholders_and_8_bit_weights(tmp_path, gen):
    """A SparseLinear on the meta device is replaced (on the CPU), keeping its activation; an int8
    weight replaces a float nn.Linear placeholder: the layer holds the checkpoint's type."""
    w8 = torch.randint(-127, 128, (40, 128), generator=gen, dtype=torch.int8)
    layer8 = st.SparseLinear.from_weight(w8, torch.randn(40, generator=gen))
    wb = torch.randn(48, 64, generator=gen).to(torch.bfloat16)
    layerb = st.SparseLinear.from_weight(wb, None, activation="relu")
    src = nn.ModuleDict({"q": layer8, "b": layerb})
    path = tmp_path / "q.safetensors"
    st.save_compressed(src, path)
    assert sft.read(path).metadata["spmma.compressed.q.weight.type"] == "s8"
    dst = nn.ModuleDict({"q": nn.Linear(128, 40), "b": st.SparseLinear(64, 48, bias=False, dtype=torch.bfloat16,
                                                                       device="meta", activation="relu")})
    report = st.load_compressed_(dst, path)
    assert sorted(report["replaced"]) == ["b", "q"] and report["loaded"] == ["q.bias"]
    assert dst["q"].weight_type == "s8" and dst["b"].values.device.type == "cpu" and dst["b"].activation == "relu"
    x8 = torch.randint(-127, 128, (7, 128), generator=gen, dtype=torch.int8)
    xb = torch.randn(7, 64, generator=gen).to(torch.bfloat16)
    with torch.inference_mode():
        assert torch.equal(dst["q"](x8), layer8(x8)) and torch.equal(dst["b"](xb), layerb(xb))


def test_unordered_metadata(case, tmp_path, gen):
    """`ordered: false` allows a chunk's two positions in descending order: such a chunk loads as
    the same weight (its nibble and values swapped into the ordered form the kernels read); with
    `ordered: true` the same nibble is refused, naming its row and chunk."""
    net, ref, _, by_hand, x = case
    f = sft.read(by_hand)
    rows, chunks = 96, 64 // 4
    values = f.tensors["up.weight.values"].data.view(np.uint16).reshape(rows, chunks, 2)
    words = f.tensors["up.weight.metadata"].data.view(np.uint16).reshape(rows, -1)
    flipped = []
    for row, chunk in ((5, 0), (5, 7), (95, 15)):
        nib = (int(words[row, chunk // 4]) >> 4 * (chunk % 4)) & 0xF
        i0, i1 = nib & 3, nib >> 2
        words[row, chunk // 4] ^= (nib ^ (i1 | i0 << 2)) << 4 * (chunk % 4)
        values[row, chunk] = values[row, chunk][::-1].copy()
        flipped.append((row, chunk))

    def write(ordered):
        meta = dict(f.metadata, **{"spmma.compressed.up.weight.ordered": ordered})
        p = tmp_path / f"unordered_{ordered}.safetensors"
        sft.write(p, {n: (t.dtype, t.shape, t.data) for n, t in f.tensors.items()}, meta)
        return p

    fresh = Net(gen)
    with pytest.raises(ValueError, match=r"'up\.weight'.*row 5, chunk 0\b"):
        st.load_compressed_(fresh, write("true"))
    assert type(fresh.up) is nn.Linear  # refused before the model changed
    check_loaded(fresh, st.load_compressed_(fresh, write("false")), ref, x)


# ---------------------------------------------------------------- errors

def test_bad_nibble_names_tensor_row_and_chunk(case, tmp_path, gen):
    _, _, _, by_hand, _ = case
    f = sft.read(by_hand)
    words = f.tensors["side.weight.metadata"].data.view(np.uint16).reshape(33, -1)
    row, chunk = 32, 13
    words[row, chunk // 4] = (int(words[row, chunk // 4]) & ~(0xF << 4 * (chunk % 4))) | 0x5 << 4 * (chunk % 4)
    bad = tmp_path / "bad.safetensors"
    sft.write(bad, {n: (t.dtype, t.shape, t.data) for n, t in f.tensors.items()}, f.metadata)
    fresh = Net(gen)
    before = {k: v.clone() for k, v in fresh.state_dict().items()}
    with pytest.raises(ValueError, match=rf"bad\.safetensors.*'side\.weight'.*row {row}, chunk {chunk}\b"):
        st.load_compressed_(fresh, bad)
    assert all(type(getattr(fresh, n)) is nn.Linear for n in LINEARS)  # nothing replaced, nothing loaded
    assert all(torch.equal(v, fresh.state_dict()[k]) for k, v in before.items())


def test_shape_and_module_mismatches(case, gen):
    _, _, _, by_hand, _ = case
    fresh = Net(gen)
    fresh.down = nn.Linear(96, 44, bias=False, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"'down\.weight' is 45 x 96, the model's 'down' is 44 x 96"):
        st.load_compressed_(fresh, by_hand)
    fresh = Net(gen)
    fresh.side = nn.Identity()
    with pytest.raises(TypeError, match=r"'side\.weight': the model's 'side' is a Identity, not an nn\.Linear"):
        st.load_compressed_(fresh, by_hand)
    fresh = Net(gen)
    fresh.norm = nn.LayerNorm(65, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"'norm\.weight' has shape \[64\], the model's is \[65\]"):
        st.load_compressed_(fresh, by_hand)
    assert type(fresh.up) is nn.Linear


def test_strict_names_what_has_no_place_and_what_is_missing(case, gen):
    _, ref, _, by_hand, x = case
    fresh = Net(gen)
    del fresh.side
    fresh.extra = nn.Linear(4, 4)
    with pytest.raises(RuntimeError, match=r"no place in the model: side\.weight, side\.bias;.*lacks: extra\.weight, "
                                           r"extra\.bias"):
        st.load_compressed_(fresh, by_hand)
    assert type(fresh.up) is nn.Linear
    report = st.load_compressed_(fresh, by_hand, strict=False)
    assert report["unexpected"] == ["side.weight", "side.bias"]
    assert report["missing"] == ["extra.weight", "extra.bias"]
    assert sorted(report["replaced"]) == ["down", "f32", "up"]
    with torch.inference_mode():
        assert torch.equal(fresh.f32(x[..., :32].float()), ref.f32(x[..., :32].float()))

    # A bias the checkpoint lacks: missing (strict); with strict=False the module's own.
    f = sft.read(by_hand)
    no_bias = by_hand.with_name("no_bias.safetensors")
    sft.write(no_bias, {n: (t.dtype, t.shape, t.data) for n, t in f.tensors.items() if n != "up.bias"}, f.metadata)
    fresh = Net(gen)
    with pytest.raises(RuntimeError, match=r"lacks: up\.bias"):
        st.load_compressed_(fresh, no_bias)
    own = fresh.up.bias.detach().clone()
    assert st.load_compressed_(fresh, no_bias, strict=False)["missing"] == ["up.bias"]
    assert torch.equal(fresh.up.bias.detach(), own)


def test_not_a_compressed_checkpoint_and_bad_records(case, tmp_path, gen):
    _, _, dense, by_hand, _ = case
    with pytest.raises(ValueError, match=r"pruned\.safetensors: not an spmma compressed checkpoint.*spmma\.format"):
        st.load_compressed_(Net(gen), dense)
    f = sft.read(by_hand)

    def rewrite(name, **changes):
        meta = {k: v for k, v in dict(f.metadata, **changes).items() if v is not None}
        p = tmp_path / name
        sft.write(p, {n: (t.dtype, t.shape, t.data) for n, t in f.tensors.items()}, meta)
        return p

    rec = "spmma.compressed.up.weight."
    cases = [
        ({rec + "pattern": "4:8 pair-wise"}, r"'up\.weight': pattern '4:8 pair-wise', but spmma multiplies bf16 "
                                             r"weights in 2:4 only"),
        ({rec + "type": "e2m1"}, r"'up\.weight': type 'e2m1' is not one a checkpoint holds"),
        ({rec + "type": "f16"}, r"'up\.weight': up\.weight\.values is BF16 \[96, 32\], a 96 x 64 f16 weight's values "
                                r"are F16"),
        ({rec + "rows": "097"}, r"rows '097' is not a positive decimal integer"),
        ({rec + "cols": None}, r"'up\.weight': its record lacks cols"),
        ({rec + "color": "red"}, r"'spmma\.compressed\.up\.weight\.color' is not spmma\.compressed\.NAME\.FIELD"),
        ({"spmma.format_version": "2"}, r"format_version is '2'; this spmma reads version 1"),
    ]
    for changes, message in cases:
        with pytest.raises(ValueError, match=message):
            st.load_compressed_(Net(gen), rewrite("r.safetensors", **changes))


def test_safetensors_reader_refuses_damaged_files(tmp_path):
    good = tmp_path / "good.safetensors"
    sft.write(good, {"a": ("F32", (2, 3), np.arange(6, dtype=np.float32)),
                     "b": ("U16", (4,), np.arange(4, dtype="<u2"))}, {"k": "v"})
    f = sft.read(good)
    assert list(f.tensors) == ["a", "b"] and f.metadata == {"k": "v"}
    assert np.array_equal(f.tensors["a"].data.view(np.float32), np.arange(6, dtype=np.float32))
    raw = good.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    assert (8 + n) % 8 == 0  # the data starts 8-byte aligned
    header = json.loads(raw[8:8 + n])

    def damaged(name, head=None, data=None, blob=None):
        p = tmp_path / name
        if blob is None:
            h = json.dumps(head).encode() if not isinstance(head, bytes) else head
            blob = struct.pack("<Q", len(h)) + h + (raw[8 + n:] if data is None else data)
        p.write_bytes(blob)
        return p

    cases = [
        (damaged("short.safetensors", blob=raw[:5]), "shorter than the 8-byte header length"),
        (damaged("long.safetensors", blob=struct.pack("<Q", 10 ** 6) + raw[8:]), "header length 1000000 is beyond"),
        (damaged("cut.safetensors", header, raw[8 + n:-2]), r"2 bytes after|data_offsets \[24, 32\] is not"),
        (damaged("gap.safetensors", header, raw[8 + n:] + b"\0" * 8), "8 bytes after the last tensor"),
        (damaged("overlap.safetensors", dict(header, b=dict(header["b"], data_offsets=[16, 24])), raw[8 + n:-8]),
         r"tensor 'b' overlaps"),
        (damaged("dup.safetensors", b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "a": {}}', b"\0"),
         "the key 'a' appears twice"),
        (damaged("dtype.safetensors", dict(header, a=dict(header["a"], dtype="F4"))), r"dtype 'F4' is not one"),
        (damaged("shape.safetensors", dict(header, a=dict(header["a"], shape=[2, 3.0]))),
         "is not a list of non-negative"),
        (damaged("size.safetensors", dict(header, a=dict(header["a"], shape=[2, 2]))), r"hold 24 bytes.*needs 16"),
        (damaged("json.safetensors", b"{not json}"), "header is not JSON"),
    ]
    for path, message in cases:
        with pytest.raises(ValueError, match=message) as e:
            sft.read(path)
        assert str(path) in str(e.value)
    with pytest.raises(ValueError, match=r"x\.safetensors: tensor 'a': 4 bytes given, shape \[2\] of F32 needs 8"):
        sft.write(tmp_path / "x.safetensors", {"a": ("F32", (2,), np.zeros(1, np.float32))})
    assert not (tmp_path / "x.safetensors").exists() and len(list(tmp_path.glob(".x.safetensors*"))) == 0


# ---------------------------------------------------------------- the documentation

def test_docs_example_runs_as_written(tmp_path, monkeypatch):
    """docs/python.md's section "Compressed checkpoints": its python blocks in one namespace, as
    written; every `print(...)  # text` prints that text."""
    text = (ROOT / "docs" / "python.md").read_text()
    start = text.index("\n## Compressed checkpoints\n")
    section = text[start:text.index("\n## ", start + 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    run_doc_blocks(blocks)


# ---------------------------------------------------------------- CUDA

@gpu
@needs_cuda
def test_load_onto_cuda(case, gen):
    _, ref, _, by_hand, x = case
    fresh = Net(gen).cuda()
    report = st.load_compressed_(fresh, by_hand)
    assert sorted(report["replaced"]) == sorted(LINEARS)
    assert all(getattr(fresh, n).values.device.type == "cuda" for n in LINEARS)
    ref = ref.cuda()
    for name in LINEARS:
        assert torch.equal(getattr(fresh, name).metadata, getattr(ref, name).metadata)
    assert_same_outputs(fresh, ref, x.cuda())
    cpu = Net(gen)
    st.load_compressed_(cpu, by_hand, device="cuda")  # device= overrides the module's
    assert cpu.up.values.device.type == "cuda" and cpu.norm.weight.device.type == "cpu"
