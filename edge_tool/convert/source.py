"""Turn any MODEL argument (SavedModel dir, .keras, .h5) into one SavedModel the converters read."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from edge_tool.errors import ModelError
from edge_tool.modelio import SignatureInfo, saved_model_flavor, saved_model_signature

KERAS_FILE_SUFFIXES = (".keras", ".h5", ".hdf5")


@dataclass(frozen=True)
class PreparedSource:
    """The model as given and the SavedModel used for conversion."""

    original: Path
    saved_model: Path
    kind: str          # "saved_model" | "keras-file"
    flavor: str        # keras2 | keras3-export | tf-saved-model
    signature: SignatureInfo
    sha256: str
    fixed_batch: dict | None = None  # {"batch": N, "method": "keras"|"signature", "unrolled": [...], "signature": ...}

    def to_dict(self) -> dict:
        """JSON-friendly form for manifest.json (``signature`` is the model's own, before --batch)."""
        return {"path": str(self.original), "kind": self.kind, "flavor": self.flavor, "sha256": self.sha256,
                "signature": self.signature.to_dict(), "fixed_batch": self.fixed_batch}


def content_hash(path: Path) -> str:
    """sha256 over a file, or over every file of a directory (relative names + bytes, sorted)."""
    h = hashlib.sha256()
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


_KERAS3_EXPORT = """
import sys, keras
model = keras.models.load_model(sys.argv[1])
model.export(sys.argv[2])
"""


def _keras_file_to_saved_model(model: Path, out: Path) -> None:
    """Load a .keras/.h5 file with tf_keras (Keras 2) and save it; fall back to Keras 3 export in a subprocess."""
    from edge_tool.env import import_tf  # noqa: PLC0415

    import_tf()
    import tf_keras  # noqa: PLC0415

    try:
        keras_model = tf_keras.models.load_model(str(model), compile=False)
        keras_model.save(str(out), save_format="tf", include_optimizer=False)
        return
    except Exception as keras2_exc:  # noqa: BLE001 - retried with Keras 3, reported if both fail
        first = f"{type(keras2_exc).__name__}: {keras2_exc}"
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-c", _KERAS3_EXPORT, str(model), str(out)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise ModelError(
            f"Expected {model} to be a Keras model file loadable by Keras 2 (tf_keras) or Keras 3, but both failed: "
            f"Keras 2 said {first[:300]}; Keras 3 said {tail[0][:300]}."
        )


def _glob_free(model: Path, workdir: Path) -> Path:
    """``model``, or a symlink to it under ``workdir`` when its path holds glob characters: TensorFlow reads the
    variables checkpoint through a file pattern, so a SavedModel in ``runs/m[1]`` would not load."""
    if not any(c in str(model) for c in "*?[]{}\\"):
        return model
    link = workdir / "source_savedmodel"
    if not link.is_symlink():
        link.symlink_to(model.resolve(), target_is_directory=True)
    return link


def prepare_source(model: Path, workdir: Path, batch: int | None = None) -> PreparedSource:
    """Validate MODEL and return the SavedModel to convert (a temp export under ``workdir`` for Keras files, and
    a re-traced copy there with ``batch``: see ``edge_tool.fixed_batch``)."""
    model = Path(model)
    if not model.exists():
        raise ModelError(f"Expected a model (SavedModel directory, .keras or .h5 file) at {model}, but nothing is there.")
    if model.is_file():
        if model.suffix.lower() not in KERAS_FILE_SUFFIXES:
            raise ModelError(
                f"Expected a SavedModel directory or a Keras file ({', '.join(KERAS_FILE_SUFFIXES)}), "
                f"but {model} is a {model.suffix or 'suffix-less'} file."
            )
        saved = Path(workdir) / "keras_source_savedmodel"
        _keras_file_to_saved_model(model, saved)
        kind = "keras-file"
    else:
        saved, kind = _glob_free(model, Path(workdir)), "saved_model"
    signature = saved_model_signature(saved)
    flavor, fixed = saved_model_flavor(saved), None
    if batch is not None:
        from edge_tool.fixed_batch import save_fixed_batch  # noqa: PLC0415

        retraced = Path(workdir) / f"batch{batch}_savedmodel"
        how = save_fixed_batch(saved, retraced, batch)
        fixed = {"batch": batch, **how.to_dict(), "signature": saved_model_signature(retraced).to_dict()}
        saved = retraced
    return PreparedSource(model, saved, kind, flavor, signature, content_hash(model), fixed)
