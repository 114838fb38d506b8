"""MobileNetV2-224 artefacts for bench_browser.py, cached under benchmarks/.cache/ (gitignored).

One seeded random-weight tf_keras MobileNetV2 SavedModel, its TFJS graph model (edge_tool.tfjs_writer.export.export_tfjs)
and its fp32 .tflite (plain TFLiteConverter); each is built once, in a temp dir renamed into place on success.
Run ``python benchmarks/_browser_models.py`` to build them ahead of the benchmark.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from edge_tool.core.env import import_tf
from edge_tool.tfjs_writer.export import export_tfjs

CACHE = Path(__file__).resolve().parent / ".cache" / "browser-mobilenetv2-224"
SEED = 0
INPUT = (224, 224, 3)


def _cached(target: Path, build: Callable[[Path], None]) -> Path:
    """Return ``target``, building it first (into a sibling temp path, then renamed) when it is missing."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        out = tmp / target.name
        build(out)
        out.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _build_saved_model(out: Path) -> None:
    import_tf()
    import tf_keras

    tf_keras.utils.set_random_seed(SEED)
    model = tf_keras.applications.MobileNetV2(weights=None, input_shape=INPUT, classes=1000)
    model.save(str(out), save_format="tf", include_optimizer=False)


def _build_tflite(saved: Path) -> Callable[[Path], None]:
    def build(out: Path) -> None:
        tf = import_tf()
        out.write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(saved)).convert())

    return build


def _build_tfjs(saved: Path) -> Callable[[Path], None]:
    def build(out: Path) -> None:
        export_tfjs(saved, out)

    return build


def mobilenet_artefacts(cache: Path = CACHE) -> tuple[Path, Path, Path]:
    """(SavedModel dir, TFJS graph-model dir, fp32 .tflite), built on first use."""
    saved = _cached(cache / "saved_model", _build_saved_model)
    tfjs = _cached(cache / "tfjs", _build_tfjs(saved))
    tflite = _cached(cache / "fp32.tflite", _build_tflite(saved))
    return saved, tfjs, tflite


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    for path in mobilenet_artefacts():
        print(path)
