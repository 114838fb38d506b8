"""The one error family of edgetool; the CLI catches these at its edge."""

from __future__ import annotations


class EdgeToolError(Exception):
    """Base class: a failure with a message that tells the user what to do."""

    exit_code = 2


class UsageError(EdgeToolError):
    """Bad user input (path, option, data): exit code 2, nothing written."""

    exit_code = 2


class ModelError(UsageError):
    """The model given is missing, unreadable or lacks what the command needs."""


class DataError(UsageError):
    """Data given (calibration, eval, training) does not match what the model expects."""


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


def collect_and_raise(problems: list[str], cls: type[EdgeToolError] = UsageError, header: str = "") -> None:
    """Raise one ``cls`` listing every problem, if there are any."""
    if not problems:
        return
    if len(problems) == 1 and not header:
        raise cls(problems[0])
    lines = [header] if header else []
    lines += [f"- {p}" for p in problems]
    raise cls("\n".join(lines))


def below_minimum(values: dict[str, tuple[float, float]]) -> list[str]:
    """One problem per option under its minimum, e.g. ``{"--epochs": (epochs, 1)}`` → ``--epochs must be >= 1, got 0.``"""
    return [f"{name} must be >= {minimum}, got {value}." for name, (value, minimum) in values.items() if value < minimum]
