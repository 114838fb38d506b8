"""The error family shared by edgetool and this package: defined here, one floor down, so calibration imports
nothing from edge_tool; ``edge_tool.errors`` re-exports these classes and adds its own subclasses.

``exit_code`` is what the edgetool CLI exits with when it catches one (2: bad input, nothing written).
"""

from __future__ import annotations


class EdgeToolError(Exception):
    """Base class: a failure with a message that tells the user what to do."""

    exit_code = 2


class UsageError(EdgeToolError):
    """Bad user input (path, option, data): exit code 2, nothing written."""

    exit_code = 2


class DataError(UsageError):
    """Data given (calibration, eval, training) does not match what the model expects."""


class CalibrationError(DataError):
    """Calibration / eval data is missing, unreadable or does not fit the model inputs (exit 2)."""


def collect_and_raise(problems: list[str], cls: type[EdgeToolError] = UsageError, header: str = "") -> None:
    """Raise one ``cls`` listing every problem, if there are any."""
    if not problems:
        return
    if len(problems) == 1 and not header:
        raise cls(problems[0])
    lines = [header] if header else []
    lines += [f"- {p}" for p in problems]
    raise cls("\n".join(lines))
