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

from dataclasses import replace
from pathlib import Path

from edge_tool.convert.source import is_keras_file, keras_archive_version, opened_source
from edge_tool.errors import ModelError
from edge_tool.inspection import InspectReport, inspect_model, inspect_saved_model


def _how(flavor: str) -> str:
    return ("Keras 3 loaded it in an isolated child process and exported it (model.export)"
            if flavor == "keras3-export" else
            "tf_keras (Keras 2) loaded it (tf_keras.models.load_model) and saved it as a SavedModel")


def inspect_keras_file(path: Path) -> InspectReport:
    """Signatures and parameters of a .keras/.h5 file, from the SavedModel convert exports it to."""
    path = Path(path)
    with opened_source(path) as source:
        report = inspect_saved_model(source.saved_model)
    version = keras_archive_version(path) if path.suffix.lower() == ".keras" else None
    note = (f"Keras model file{f' saved by Keras {version}' if version else ''}: edgetool reads it the way convert "
            f"does — {_how(source.flavor)} — and these signatures are that SavedModel's.")
    keras = {"flavor": "keras3-file" if source.flavor == "keras3-export" else "keras2-file",
             "keras_version": version, "reloadable_as_keras": True, "note": note}
    return replace(report, path=path, format="keras" if path.suffix.lower() == ".keras" else "h5",
                   size_bytes=path.stat().st_size, keras=keras, distribution=None, training=None)


def inspect_any(path: Path) -> InspectReport:
    """Inspect a SavedModel directory, a .tflite file or a .keras/.h5 file."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ModelError(f"Expected a SavedModel directory, a .keras/.h5 file or a .tflite file at {path}, but "
                         "nothing is there.")
    return inspect_keras_file(path) if is_keras_file(path) else inspect_model(path)


def run_eval_any(config):
    """``evaluate.run_eval``, with a .keras/.h5 ``--reference`` run as the SavedModel convert exports from it; the
    report names the Keras file (path and size) and says how it was read."""
    from edge_tool.evaluate.outputs import check_outputs  # noqa: PLC0415
    from edge_tool.evaluate.pipeline import run_eval  # noqa: PLC0415

    if not is_keras_file(config.reference):
        return run_eval(config)
    check_outputs(config)  # the report files against the Keras file itself, before the export
    with opened_source(config.reference) as source:
        report = run_eval(replace(config, reference=source.saved_model))
    reference = replace(report.reference, path=str(config.reference), size_bytes=Path(config.reference).stat().st_size)
    note = (f"The reference {config.reference} is a Keras model file; eval ran the SavedModel convert makes of it "
            f"({_how(source.flavor)}).")
    return replace(report, reference=reference, notes=(*report.notes, note))


def build_site_any(cfg):
    """``demo.site.build_site``, with a .keras/.h5 MODEL exported the way convert does; the default title and a
    labels.txt beside the file follow the Keras file, not the temp export."""
    from edge_tool.demo.site import build_site  # noqa: PLC0415
    from edge_tool.fsutil import check_output_dir  # noqa: PLC0415

    model = Path(cfg.model)
    if not is_keras_file(model):
        return build_site(cfg)
    check_output_dir(Path(cfg.output), cfg.force, cfg.inputs)  # against the Keras file itself, before the export
    beside = model.parent / "labels.txt"
    labels = cfg.labels if cfg.labels is not None else beside if beside.is_file() else None
    with opened_source(model) as source:
        return build_site(replace(cfg, model=source.saved_model, labels=labels,
                                  title=cfg.title or f"edgetool demo: {model.name}"))
