"""The cells of the zoo matrix: which ``edgetool`` command each runs, and how its exit is classified.

Outcomes: ok (produced, and the independent check passed), refused (exit 2 with a message: its first line is the
reason and the way out; judged by ``refusals`` and ``wayout``), unclear (a refusal whose reason is not the real one or
whose way out fails), crashed (a traceback, a signal, a hang past the timeout, exit 70, or an exit code the CLI
does not document), wrong (produced, but the independent check failed), blocked (nothing to run on: the cells it
needs produced nothing).
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from pathlib import Path

CELLS = ("fp32", "fp16", "dynamic", "int8", "int16x8", "qat", "tfjs", "auto", "eval", "demo")
TFLITE_MODES = ("fp32", "fp16", "dynamic", "int8", "int16x8")
AUTO_MAX_DROP = 0.02
QAT_EPOCHS = 1
TIMEOUTS = {"qat": 1200, "auto": 1200, "eval": 900}
DEFAULT_TIMEOUT = 600
DEMO_INPUT_SIZE = "32x32"  # for dynamic-H×W models, when `edgetool demo` has --input-size
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Features:
    """Options the installed edgetool CLI offers (read from its --help), so the zoo runs before and after fixes."""

    convert_batch: bool
    demo_input_size: bool


def command(cell: str, model: Path, out: Path, spec, features: Features, produced: dict[str, Path]) -> list[str] | None:
    """The edgetool arguments of ``cell`` for ``model`` writing under ``out``; None when the cell is blocked."""
    args = _command(cell, model, out, spec, features, produced)
    extra = [a.replace("{dir}", str(model)) for a in spec.extra_args]
    if args and args[0] == "convert" and spec.model_file and (model / spec.model_file).is_dir():
        extra += ["--calibration", str(model / "calibration.npz")]  # a sub-directory model: its data sit above it
    return None if args is None else [*args, *extra]


def _command(
    cell: str, model: Path, out: Path, spec, features: Features, produced: dict[str, Path]
) -> list[str] | None:
    batch = ["--batch", "1"] if spec.recurrent and features.convert_batch else []
    data, model = model, model / spec.model_file if spec.model_file else model  # data files sit in the directory
    if cell in TFLITE_MODES:
        return ["convert", str(model), "--quant", cell, "-o", str(out), *batch]
    if cell == "qat":
        return [
            "convert",
            str(model),
            "--quant",
            "qat",
            "--train-data",
            str(data / "train.npz"),
            "--qat-epochs",
            str(QAT_EPOCHS),
            "-o",
            str(out),
        ]  # QAT converts the Keras model: no --batch
    if cell == "tfjs":
        return ["convert", str(model), "--format", "tfjs", "-o", str(out)]
    if cell == "auto":
        return [
            "convert",
            str(model),
            "--quant",
            "auto",
            "--max-drop",
            str(AUTO_MAX_DROP),
            "--eval-data",
            str(data / "eval.npz"),
            "-o",
            str(out),
            *batch,
        ]
    if cell == "eval":
        artefacts = [  # the cell's own file, else the one its refusal's way out built (fp32 with Flex ops, say)
            str(p)
            for name in ("fp32", "int8")
            for p in (
                sorted(produced[name].glob("*.tflite"))
                if name in produced
                else sorted(produced[f"{name}@wayout"].glob(f"*_{name}.tflite"))
                if f"{name}@wayout" in produced
                else []
            )
        ]
        if "tfjs" in produced:
            artefacts += [str(p.parent) for p in sorted(produced["tfjs"].rglob("model.json"))][:1]
        if not artefacts:
            return None
        return [
            "eval",
            *artefacts,
            "-r",
            str(model),
            "-d",
            str(data / "eval.npz"),
            "--runs",
            "10",
            "--warmup",
            "2",
            "--json",
            str(out / "eval.json"),
        ]
    if cell == "demo":
        size = ["--input-size", DEMO_INPUT_SIZE] if spec.dynamic_hw and features.demo_input_size else []
        return ["demo", str(model), "-o", str(out / "site"), *size]
    raise ValueError(f"unknown cell {cell!r}")


def classify(cell: str, rc: int | None, stderr: str, timeout: float) -> tuple[str, str]:
    """(status, reason) of a finished CLI run: 'produced' (checked next), 'refused' or 'crashed'."""
    text = ANSI.sub("", stderr)
    if rc is None:
        return "crashed", f"hang: no result after {timeout:.0f} s"
    if rc < 0:
        return "crashed", f"killed by {signal.Signals(-rc).name}{_traceback_tail(text, prefix=': ')}"
    if "Traceback (most recent call last)" in text:
        return "crashed", f"traceback (exit {rc}){_traceback_tail(text, prefix=': ')}"
    if rc == 0:
        return "produced", ""
    if rc == 70:
        return "crashed", f"internal error (exit 70): {first_line(text)}"
    if rc == 2 or (rc == 1 and cell == "auto"):
        prefix = "nothing within --max-drop: " if rc == 1 else ""
        return "refused", prefix + first_line(text)
    return "crashed", f"undocumented exit {rc}: {first_line(text)}"


def first_line(text: str, limit: int = 400) -> str:
    """The first line of the CLI's message ('error: ' dropped); a header ending in ':' keeps its first item."""
    lines = [ln.strip() for ln in ANSI.sub("", text).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("W0000", "I0000", "WARNING:", "E0000")) and re.search(r"\w", ln)]
    if not lines:
        return "(no message)"
    start = next((i for i, ln in enumerate(lines) if ln.startswith(("error:", "budget exceeded:"))), 0)
    line = re.sub(r"^(error|budget exceeded):\s*", "", lines[start])
    if line.endswith(":") and start + 1 < len(lines):
        line = f"{line} {lines[start + 1]}"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _traceback_tail(text: str, prefix: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    return prefix + lines[-1][:300]
