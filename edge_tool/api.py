"""edgetool's Python API: the CLI's commands as functions returning frozen result objects.

Importing this module (or ``edge_tool``) is light: TensorFlow and friends load inside each call. Errors are the
typed ``edge_tool.errors.EdgeToolError`` family (``UsageError``, ``ModelError``, ``DataError``,
``ConversionError``, ``BudgetExceeded``), with the message the CLI would print.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def train(output_dir: str | Path, *, strategy: str = "mirrored", model: str = "digits", **options):
    """Train ``model`` (``digits`` or ``lm``) under ``strategy``; options as ``TrainConfig`` (replicas, epochs, text,
    ...), epochs, batch size and learning rate defaulting to the model's own. -> TrainResult."""
    from edge_tool.training.config import TrainConfig  # noqa: PLC0415  (import edge_tool stays light: see below)
    from edge_tool.training.kinds import TRAINABLES  # noqa: PLC0415
    from edge_tool.training.runner import train as _train  # noqa: PLC0415

    kind = TRAINABLES.get(model)
    if kind is not None:
        defaults = {"epochs": kind.epochs, "batch_size": kind.batch_size, "learning_rate": kind.learning_rate}
        options = {**defaults, **options}
    return _train(TrainConfig(output_dir=Path(output_dir), strategy=strategy, model=model, **options))


def convert(
    model: str | Path, output_dir: str | Path, *, quant: str | Iterable[str] = "fp32", format: str = "tflite", **options
):
    """Convert ``model`` like ``edgetool convert``; options as ``ConvertConfig`` (labels, calibration, ...) plus each
    format's own (``tfjs_quant="uint8"``; refused when no chosen format takes it).

    ``quant`` is one mode, a comma list or an iterable ('all' expands). Returns a ConvertResult whose
    ``artifacts`` are manifest.json's entries and whose ``tflite(mode)``/``path_of(entry)`` give their paths.
    """
    from edge_tool.convert.api import convert as _convert  # noqa: PLC0415
    from edge_tool.convert.config import ConvertConfig  # noqa: PLC0415
    from edge_tool.convert.formats import format_options, option_owners, parse_modes  # noqa: PLC0415  (import
    # edge_tool loads no third-party module: the wheel's build backend imports the package without its dependencies)

    values = [quant] if isinstance(quant, str) else list(quant)
    modes = parse_modes(values, format, options.get("train_data") is not None)
    given = {name: options.pop(name) for name in option_owners() if name in options}  # tfjs_quant=...: its format's
    if given:
        options["format_options"] = format_options(format, given)
    return _convert(
        ConvertConfig(model=Path(model), output_dir=Path(output_dir), modes=modes, output_format=format, **options)
    )


def evaluate(artifacts: Iterable[str | Path], reference: str | Path, data: str | Path, **options):
    """Accuracy drift and latency of ``artifacts`` against ``reference`` on ``data``, like ``edgetool eval``.

    Options as ``EvalConfig`` (threads, runs, max_drop, ...). Returns the frozen Report (``to_json()``,
    ``to_markdown()``; HTML: ``edge_tool.evaluate.html_report.render(report)``); budgets are not enforced here, see ``edge_tool.evaluate.budget_violations``.
    """
    from edge_tool.evaluate import EvalConfig  # noqa: PLC0415
    from edge_tool.keras_files import run_eval_any  # noqa: PLC0415

    return run_eval_any(
        EvalConfig(artifacts=tuple(Path(a) for a in artifacts), reference=Path(reference), data=Path(data), **options)
    )


def inspect(model: str | Path, trust_model_code: bool = False):
    """What a SavedModel, .keras/.h5 file or .tflite takes and gives (and, for a .tflite, its embedded metadata).
    -> InspectReport. Code the model carries is listed, not run, unless ``trust_model_code`` (docs/security.md)."""
    from edge_tool.keras_files import inspect_any  # noqa: PLC0415

    return inspect_any(Path(model), trust_model_code)


def demo(model: str | Path, output: str | Path, **options):
    """Build the offline PWA for a TFJS graph model, SavedModel or .keras/.h5 file, like ``edgetool demo``. -> SiteReport."""
    from edge_tool.demo.config import DemoConfig  # noqa: PLC0415
    from edge_tool.keras_files import build_site_any  # noqa: PLC0415

    return build_site_any(DemoConfig(model=Path(model), output=Path(output), **options))


def read_metadata(tflite: str | Path):
    """The TFLite model metadata embedded in a .tflite (labels, normalization, ...), or None. -> EmbeddedMetadata."""
    from edge_tool.metadata.reader import read_metadata as _read  # noqa: PLC0415
    from edge_tool.parsers.limits import read_tflite  # noqa: PLC0415  (import edge_tool imports nothing of edgetool)

    return _read(read_tflite(tflite))
