"""Small real inputs for the hostile path/output/signal cases, built once per session and copied into each case.

Import the fixtures into a test module (``from tests.hostile.core_fixtures import case_root, flat_artifacts``).
Each case gets ``root/`` holding its own copies, so the harness can check that none of them changed:

    root/model/       the tiny flat SavedModel (features [None,4] -> scores [None,3]; labels.txt, eval.npz)
    root/tfjs/        that model as a TFJS graph model (model.json + one shard)
    root/flat.tflite  that model as fp32 .tflite
    root/secret.txt   a file outside every model dir (what a hostile path tries to reach)
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.edgetool_runs import run_edgetool

SECRET = "SECRET-OUTSIDE-THE-MODEL-DIR"


@pytest.fixture(scope="session")
def flat_artifacts(flat_model, tmp_path_factory) -> dict[str, Path]:
    """The flat model converted once: {"tflite": .tflite file, "tfjs": TFJS dir}."""
    out = tmp_path_factory.mktemp("hostile-flat") / "conv"
    proc = run_edgetool("convert", flat_model, "-o", out, "--format", "all", "--quant", "fp32")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {"tflite": next(out.glob("*_fp32.tflite")), "tfjs": out / "tfjs"}


def build_root(root: Path, flat_model: Path, flat_artifacts: dict[str, Path]) -> Path:
    """Fill ``root`` with the per-case copies described in the module doc; return it."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(flat_model, root / "model")
    shutil.copytree(flat_artifacts["tfjs"], root / "tfjs")
    shutil.copyfile(flat_artifacts["tflite"], root / "flat.tflite")
    (root / "secret.txt").write_text(SECRET)
    return root


@pytest.fixture
def case_root(tmp_path, flat_model, flat_artifacts) -> Path:
    """A fresh case directory with the standard inputs."""
    return build_root(tmp_path / "case", flat_model, flat_artifacts)
