# SPDX-License-Identifier: BSD-3-Clause
"""Shared by the tests that need PyTorch (test_torch.py, test_checkpoint.py)."""
import contextlib
import io
import os

import pytest


def import_spmma_torch():
    """(torch, spmma.torch), or the calling test file skipped: without PyTorch 2.4 or newer
    (torch.library.custom_op). SPMMA_REQUIRE_TORCH=1 (CI, the GPU machine) makes a missing torch a
    failure instead of a skip."""
    if os.environ.get("SPMMA_REQUIRE_TORCH"):
        import torch  # a missing torch fails here, as required
        import spmma.torch as st
        return torch, st
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (SPMMA_REQUIRE_TORCH=1 fails instead)")
    if not hasattr(torch.library, "custom_op"):
        pytest.skip(f"spmma.torch needs torch >= 2.4 (torch.library.custom_op), this is {torch.__version__}",
                    allow_module_level=True)
    import spmma.torch as st
    return torch, st


def run_doc_blocks(blocks):
    """Runs docs/python.md's code blocks in order, in one namespace, and checks that each
    `print(...)  # text` line printed its text: the docs are tested as written."""
    ns: dict = {}
    for code in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "docs/python.md", "exec"), ns)
        for line in code.splitlines():
            if line.startswith("print(") and "  # " in line:
                want = line.split("  # ", 1)[1]
                assert want in out.getvalue(), f"docs/python.md: {line!r} printed {out.getvalue()!r}"
