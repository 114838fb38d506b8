"""The one error family of edgetool; the CLI catches these at its edge.

The root classes (``EdgeToolError``, ``UsageError``, ``DataError``) and ``collect_and_raise`` live in
``calibration.errors`` so that the calibration package needs nothing from edge_tool; they are the same classes.
"""

from __future__ import annotations

from edge_tool.calibration.errors import DataError, EdgeToolError, UsageError, collect_and_raise

__all__ = [
    "ArtifactsFailed",
    "BudgetExceeded",
    "ConversionError",
    "DataError",
    "DeviceNotReady",
    "EdgeToolError",
    "ModelCodeRefused",
    "ModelError",
    "ModesNotBuilt",
    "RuntimeFailure",
    "SelfCheckFailed",
    "UsageError",
    "below_minimum",
    "collect_and_raise",
]


class ModelError(UsageError):
    """The model given is missing, unreadable or lacks what the command needs."""


class ModelCodeRefused(ModelError):
    """The model carries code (Python in its Keras config, side-effect ops in its graph) and the user did not pass
    ``--trust-model-code``: exit 2, nothing run."""


class ConversionError(EdgeToolError):
    """The converter could not produce the requested artefact."""

    exit_code = 2


class RuntimeFailure(ModelError):
    """A runtime (LiteRT, tfjs) could not run an artefact, or crashed on it; ``edgetool eval`` makes it a row."""


class BudgetExceeded(EdgeToolError):
    """A measured figure broke a user-set budget (CI gate): exit code 1."""

    exit_code = 1


class ArtifactsFailed(BudgetExceeded):
    """Some artefacts could not be run (rows "does not run in …"): exit code 1, after the reports are written."""

    heading = "eval failed"


class DeviceNotReady(BudgetExceeded):
    """``edgetool device``: the device cannot run .tflite models (unreachable, or no runtime): exit code 1."""

    heading = "device not ready"


class ModesNotBuilt(BudgetExceeded):
    """Some requested modes could not be built; the others were written (exit code 1, like a budget failure)."""

    heading = "not every mode built"


class SelfCheckFailed(BudgetExceeded):
    """A float file was written but does not compute what the SavedModel computes (its self-check failed): exit code
    1, so that a run whose file is wrong never reads as success."""

    heading = "self-check failed"


class NotReproduced(BudgetExceeded):
    """``convert --from-manifest``: a rerun file's bytes differ from the recorded ones, or it is missing (exit 1)."""

    heading = "not reproduced"


def below_minimum(values: dict[str, tuple[float, float]]) -> list[str]:
    """One problem per option under its minimum, e.g. ``{"--epochs": (epochs, 1)}`` → ``--epochs must be >= 1, got 0.``"""
    return [
        f"{name} must be >= {minimum}, got {value}." for name, (value, minimum) in values.items() if value < minimum
    ]
