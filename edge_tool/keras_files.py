"""Keras model files (.keras, .h5) for the commands that read a model without converting it: ``inspect``,
``eval --reference`` and ``demo``.

Each reads the file the one way ``convert`` does (``convert.source``: tf_keras first, Keras 3 in an isolated child
process for a Keras-3 ``.keras`` file — the same loaders and the same safety rules), into a temp SavedModel that
lives as long as the command, and reports under the Keras file's own name. (``check`` and ``convert --quant
auto`` do the same through ``convert.source`` directly.)

``inspect`` of a Keras file: the report's ``format`` is ``"keras"`` or ``"h5"``, ``size_bytes`` the file's, and
``keras`` says which Keras read it: ``flavor`` ``"keras2-file"`` (tf_keras loaded it) or ``"keras3-file"`` (Keras 3
exported it), ``keras_version`` (from a ``.keras`` archive's metadata.json; null for .h5),
``reloadable_as_keras`` (true: it was just loaded as a Keras model) and a one-sentence ``note``.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import replace
from pathlib import Path

from edge_tool.convert.source import is_keras_file, opened_source
from edge_tool.core.fsutil import check_output_dir
from edge_tool.demo.site import build_site
from edge_tool.errors import ConversionError, ModelError, UsageError
from edge_tool.evaluate.outputs import check_outputs
from edge_tool.evaluate.pipeline import run_eval
from edge_tool.evaluate.runtimes import check_runtime
from edge_tool.litert.recipes import resolve_calibration
from edge_tool.models.inspection import InspectReport, ParamCount, inspect_model, inspect_saved_model
from edge_tool.parsers.keras_archive import keras_archive_version
from edge_tool.trust import custom_objects
from edge_tool.trust.guard import code_report, keras_code


def _how(flavor: str) -> str:
    return (
        "Keras 3 loaded it in an isolated child process and exported it (serving model(x, training=False))"
        if flavor == "keras3-export"
        else "tf_keras (Keras 2) loaded it (tf_keras.models.load_model) and saved it as a SavedModel"
    )


def inspect_keras_file(path: Path, trust_model_code: bool = False) -> InspectReport:
    """Signatures and parameters of a .keras/.h5 file, from the SavedModel convert exports it to; a file whose
    config carries Python code is only read (the code listed, nothing loaded) unless ``trust_model_code``."""
    path = Path(path)
    version = keras_archive_version(path) if path.suffix.lower() == ".keras" else None
    if keras_code(path) and not trust_model_code:
        return _unloaded(path, version)
    with opened_source(path, trust_model_code) as source:
        report = inspect_saved_model(source.saved_model, trust_model_code)
    note = (
        f"Keras model file{f' saved by Keras {version}' if version else ''}: edgetool reads it the way convert "
        f"does — {_how(source.flavor)}{_with_classes()} — and these signatures are that SavedModel's."
    )
    keras = {
        "flavor": "keras3-file" if source.flavor == "keras3-export" else "keras2-file",
        "keras_version": version,
        "reloadable_as_keras": True,
        "note": note,
    }
    return replace(
        report,
        path=path,
        format=_format(path),
        size_bytes=path.stat().st_size,
        keras=keras,
        distribution=None,
        training=None,
        model_code=code_report(path, trust_model_code),
    )


def _with_classes() -> str:
    specs = custom_objects.active().specs
    return f", with the classes of --custom-objects {', '.join(specs)}" if specs else ""


def _format(path: Path) -> str:
    return "keras" if path.suffix.lower() == ".keras" else "h5"


def _unloaded(path: Path, version: str | None) -> InspectReport:
    """The report of a Keras file whose config carries code: what reading the file tells, nothing loaded."""
    note = (
        "Not loaded: its Keras config carries Python code (see model code), which loading would run; "
        "--trust-model-code loads it (docs/security.md). Signatures are known only after loading."
    )
    keras = {
        "flavor": "keras3-file" if version and not version.startswith("2.") else "keras2-file",
        "keras_version": version,
        "reloadable_as_keras": None,
        "note": note,
    }
    return InspectReport(
        path,
        _format(path),
        path.stat().st_size,
        (),
        _weight_count(path),
        keras=keras,
        model_code=code_report(path, False),
    )


def _weight_count(path: Path) -> ParamCount:
    """Weight elements by dtype, read from the file's HDF5 weights (h5py; no Keras object is built)."""
    import h5py

    by: dict[str, int] = {}

    def visit(_name, obj):
        if isinstance(obj, h5py.Dataset) and obj.shape:
            by[str(obj.dtype)] = by.get(str(obj.dtype), 0) + int(obj.size)

    try:
        if path.suffix.lower() == ".keras":
            with zipfile.ZipFile(path) as z:
                f = h5py.File(io.BytesIO(z.read("model.weights.h5")), "r")
        else:
            f = h5py.File(path, "r")
        with f:
            (f["model_weights"] if "model_weights" in f else f).visititems(visit)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ModelError(f"{path}: its weights could not be read ({exc}); expected a Keras .keras/.h5 file.") from exc
    return ParamCount(sum(by.values()), None, None, by)


def inspect_any(path: Path, trust_model_code: bool = False) -> InspectReport:
    """Inspect a SavedModel directory, a .tflite file or a .keras/.h5 file."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ModelError(
            f"Expected a SavedModel directory, a .keras/.h5 file or a .tflite file at {path}, but nothing is there."
        )
    if is_keras_file(path):
        return inspect_keras_file(path, trust_model_code)
    return inspect_model(path, trust_model_code)


def run_eval_any(config):
    """``evaluate.run_eval``, with a .keras/.h5 ``--reference`` run as the SavedModel convert exports from it; the
    report names the Keras file (path and size) and says how it was read."""
    if not is_keras_file(config.reference):
        return run_eval(config)
    check_runtime(config.runtime)  # before the export (the CLI's Enum refuses a bad one earlier still)
    check_outputs(config)  # the report files against the Keras file itself, before the export
    with opened_source(config.reference, config.trust_model_code, as_trained=True) as source:
        report = run_eval(replace(config, reference=source.saved_model))
    reference = replace(report.reference, path=str(config.reference), size_bytes=Path(config.reference).stat().st_size)
    note = (
        f"The reference {config.reference} is a Keras model file; eval ran the SavedModel convert makes of it "
        f"({_how(source.flavor)})."
    )
    return replace(report, reference=reference, notes=(*report.notes, note))


def build_site_any(cfg):
    """``demo.site.build_site``, with a .keras/.h5 MODEL exported the way convert does; the default title, and a
    labels.txt and calibration.npz beside the file, follow the Keras file, not the temp export."""
    model = Path(cfg.model)
    if not is_keras_file(model):
        return build_site(cfg)
    check_output_dir(Path(cfg.output), cfg.force, cfg.inputs)  # against the Keras file itself, before the export
    beside = model.parent / "labels.txt"
    labels = cfg.labels if cfg.labels is not None else beside if beside.is_file() else None
    calibration = cfg.calibration if cfg.calibration is not None else resolve_calibration(model, None)
    with opened_source(model, cfg.trust_model_code) as source:
        try:
            return build_site(
                replace(
                    cfg,
                    model=source.saved_model,
                    labels=labels,
                    calibration=calibration,
                    title=cfg.title or f"edgetool demo: {model.name}",
                )
            )
        except (ConversionError, UsageError) as exc:  # a refusal names the user's file, not the temp export
            raise type(exc)(str(exc).replace(str(source.saved_model), str(model))) from None
