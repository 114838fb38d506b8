"""Outputs never touch inputs, --force replaces only edgetool's own output, the location is checked up front,
and user text (paths, names) is printed verbatim: terminal, Markdown and HTML.

Every case runs edgetool in a fresh process through the harness (exit code, the offending thing named, no
traceback, the case dir and a private TMPDIR unchanged outside the allowed outputs).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.core_fixtures import SECRET, case_root, flat_artifacts  # noqa: F401 (fixtures)
from tests.hostile.harness import Case, run_case


def _data_dir(root: Path) -> None:
    (root / "data").mkdir()
    shutil.copyfile(root / "model" / "eval.npz", root / "data" / "cal.npz")
    shutil.copyfile(root / "model" / "labels.txt", root / "data" / "labels.txt")


def _user_dir(root: Path) -> None:
    (root / "userdir").mkdir()
    (root / "userdir" / "notes.txt").write_text("the user's own notes")


def _link_to_model(root: Path) -> None:
    os.symlink("model", root / "link")


def _markup_model(root: Path) -> None:
    shutil.copytree(root / "model", root / "m[bold]x[/bold]")


def _garbage_tflite(root: Path) -> None:
    (root / "b[bold]x.tflite").write_bytes(b"not a flatbuffer at all")


def _nothing(root: Path) -> None:
    pass


CONVERT = ("convert", "{root}/model")
AUTO = ("convert", "{root}/model", "--quant", "auto", "--max-drop", "0.5")
DEMO = ("demo", "{root}/tfjs")
EVAL = ("eval", "{root}/flat.tflite", "-r", "{root}/model", "-d", "{root}/model/eval.npz", "--runs", "1")
NOT_INPUT = "never writes over, into or around"
LONG = "a" * 300  # one path segment longer than NAME_MAX (255)
MARKER_MSG = "no .edgetool-output marker"

# (setup, Case); every Case here is refused with exit 2 before any work.
CASES: list[tuple[Callable[[Path], None], Case]] = [
    # --- convert: the output is, contains or sits inside an input
    (
        _nothing,
        Case("convert-o-is-model", (*CONVERT, "-o", "{root}/model", "--force"), names=("is the model", NOT_INPUT)),
    ),
    (_nothing, Case("convert-o-parent-of-model", (*CONVERT, "-o", "{root}", "--force"), names=("contains the model",))),
    (_nothing, Case("convert-o-inside-model", (*CONVERT, "-o", "{root}/model/out"), names=("is inside the model",))),
    (
        _link_to_model,
        Case("convert-o-symlink-to-model", (*CONVERT, "-o", "{root}/link", "--force"), names=("is the model",)),
    ),
    (
        _data_dir,
        Case(
            "convert-o-is-calibration-dir",
            (*CONVERT, "--quant", "int8", "--calibration", "{root}/data/cal.npz", "-o", "{root}/data", "--force"),
            names=("contains the calibration data", "cal.npz"),
        ),
    ),
    (
        _data_dir,
        Case(
            "convert-o-is-calibration-file",
            (
                *CONVERT,
                "--quant",
                "int8",
                "--calibration",
                "{root}/data/cal.npz",
                "-o",
                "{root}/data/cal.npz",
                "--force",
            ),
            names=("is the calibration data",),
        ),
    ),
    (
        _data_dir,
        Case(
            "convert-o-contains-train-data",
            (*CONVERT, "--quant", "qat", "--train-data", "{root}/data/cal.npz", "-o", "{root}/data", "--force"),
            names=("contains the training data",),
        ),
    ),
    (
        _nothing,
        Case(
            "auto-o-is-model",
            (*AUTO, "--eval-data", "{root}/model/eval.npz", "-o", "{root}/model", "--force"),
            names=("is the model",),
        ),
    ),
    (
        _data_dir,
        Case(
            "auto-o-contains-eval-data",
            (*AUTO, "--eval-data", "{root}/data/cal.npz", "-o", "{root}/data", "--force"),
            names=("contains the eval data",),
        ),
    ),
    # --- convert: --force only over edgetool's own output; the location is checked first
    (
        _user_dir,
        Case(
            "convert-force-user-dir",
            (*CONVERT, "-o", "{root}/userdir", "--force"),
            names=("{root}/userdir", MARKER_MSG),
        ),
    ),
    (_nothing, Case("convert-o-under-proc", (*CONVERT, "-o", "/proc/edgetool-hostile"), names=("/proc",))),
    (_nothing, Case("convert-o-under-sys", (*CONVERT, "-o", "/sys/edgetool-hostile/out"), names=("/sys",))),
    (_nothing, Case("convert-o-dev-null", (*CONVERT, "-o", "/dev/null", "--force"), names=("/dev",))),
    (
        _nothing,
        Case(
            "convert-o-below-a-file",
            (*CONVERT, "-o", "{root}/secret.txt/out"),
            names=("{root}/secret.txt", "is a file"),
        ),
    ),
    (
        _nothing,
        Case(
            "convert-o-is-a-file",
            (*CONVERT, "-o", "{root}/secret.txt", "--force"),
            names=("{root}/secret.txt", "is a file"),
        ),
    ),
    # --- convert: user text is printed verbatim, never as Rich markup
    (
        _nothing,
        Case("convert-markup-path", ("convert", "a[red]X[/red]b", "-o", "{root}/out"), names=("a[red]X[/red]b",)),
    ),
    (_nothing, Case("convert-closing-tag-path", ("convert", "[/]", "-o", "{root}/out"), names=("[/]",))),
    (
        _markup_model,
        Case(
            "convert-markup-model-dir",
            (
                "convert",
                "{root}/m[bold]x[/bold]",
                "--quant",
                "int8",
                "--calibration",
                "{root}/none[/].npz",
                "-o",
                "{root}/out",
            ),
            names=("none[/].npz",),
        ),
    ),
    # --- demo
    (_nothing, Case("demo-o-is-model", (*DEMO, "-o", "{root}/tfjs", "--force"), names=("is the model",))),
    (_nothing, Case("demo-o-parent-of-model", (*DEMO, "-o", "{root}", "--force"), names=("contains the model",))),
    (_nothing, Case("demo-o-inside-model", (*DEMO, "-o", "{root}/tfjs/site"), names=("is inside the model",))),
    (
        _data_dir,
        Case(
            "demo-o-contains-labels",
            (*DEMO, "--labels", "{root}/data/labels.txt", "-o", "{root}/data", "--force"),
            names=("contains the labels file",),
        ),
    ),
    (_user_dir, Case("demo-force-user-dir", (*DEMO, "-o", "{root}/userdir", "--force"), names=(MARKER_MSG,))),
    (_nothing, Case("demo-o-under-proc", (*DEMO, "-o", "/proc/self/edgetool-site"), names=("/proc",))),
    (
        _nothing,
        Case(
            "demo-markup-labels",
            (*DEMO, "--labels", "{root}/l[red]X[/red].txt", "-o", "{root}/site"),
            names=("l[red]X[/red].txt",),
        ),
    ),
    # --- eval report files
    (
        _nothing,
        Case(
            "eval-json-is-data",
            (*EVAL, "--json", "{root}/model/eval.npz", "--force"),
            names=("is inside the reference model",),
        ),
    ),
    (
        _nothing,
        Case(
            "eval-markdown-is-artefact",
            (*EVAL, "--markdown", "{root}/flat.tflite", "--force"),
            names=("is the artefact",),
        ),
    ),
    (
        _nothing,
        Case(
            "eval-html-inside-reference",
            (*EVAL, "--html", "{root}/model/saved_model.pb", "--force"),
            names=("is inside the reference model",),
        ),
    ),
    (
        _data_dir,
        Case(
            "eval-json-is-separate-data",
            (
                "eval",
                "{root}/flat.tflite",
                "-r",
                "{root}/model",
                "-d",
                "{root}/data/cal.npz",
                "--json",
                "{root}/data/cal.npz",
                "--force",
            ),
            names=("is the eval data",),
        ),
    ),
    (_nothing, Case("eval-json-under-proc", (*EVAL, "--json", "/proc/edgetool.json"), names=("/proc",))),
    (
        _nothing,
        Case(
            "eval-markdown-below-a-file",
            (*EVAL, "--markdown", "{root}/secret.txt/r.md"),
            names=("{root}/secret.txt", "is a file"),
        ),
    ),
    (
        _nothing,
        Case(
            "eval-same-report-twice",
            (*EVAL, "--json", "{root}/r.txt", "--markdown", "{root}/r.txt"),
            names=("different files",),
        ),
    ),
    (
        _nothing,
        Case(
            "eval-markup-artefact",
            ("eval", "{root}/x[red]Y[/red].tflite", "-r", "{root}/model", "-d", "{root}/model/eval.npz"),
            names=("x[red]Y[/red].tflite",),
        ),
    ),
    # --- train (no inputs, but the same output rules)
    (_nothing, Case("train-o-under-proc", ("train", "-o", "/proc/edgetool-model"), names=("/proc",))),
    (_nothing, Case("train-o-under-sys", ("train", "-o", "/sys/kernel/edgetool"), names=("/sys",))),
    (_nothing, Case("train-o-below-a-file", ("train", "-o", "{root}/secret.txt/m"), names=("is a file",))),
    (
        _user_dir,
        Case(
            "train-force-user-dir",
            ("train", "--strategy", "default", "-o", "{root}/userdir", "--force"),
            names=(MARKER_MSG,),
        ),
    ),
    # --- names the file system refuses (ENAMETOOLONG): exit 2 naming the path, not an internal error
    (_nothing, Case("train-o-name-too-long", ("train", "-o", "{root}/" + LONG), names=("File name too long", LONG))),
    (
        _nothing,
        Case(
            "convert-model-name-too-long",
            ("convert", "{root}/" + LONG, "-o", "{root}/out"),
            names=("File name too long",),
        ),
    ),
    (_nothing, Case("demo-o-name-too-long", (*DEMO, "-o", "{root}/" + LONG), names=("File name too long",))),
    (
        _nothing,
        Case("eval-json-name-too-long", (*EVAL, "--json", "{root}/" + LONG + ".json"), names=("File name too long",)),
    ),
    (_nothing, Case("inspect-name-too-long", ("inspect", "{root}/" + LONG), names=("File name too long",))),
    # --- inspect and serve: user text verbatim; serve's empty --host
    (_nothing, Case("inspect-markup-path", ("inspect", "a[red]X[/red]b"), names=("a[red]X[/red]b",))),
    (_nothing, Case("inspect-closing-tag-path", ("inspect", "[/]"), names=("[/]",))),
    (
        _garbage_tflite,
        Case("inspect-markup-garbage-tflite", ("inspect", "{root}/b[bold]x.tflite"), names=("b[bold]x.tflite",)),
    ),
    (_nothing, Case("serve-markup-site", ("serve", "x[red]Y[/red]", "--port", "0"), names=("x[red]Y[/red]",))),
    (
        _nothing,
        Case(
            "serve-empty-host",
            ("serve", "{root}/tfjs", "--host", "", "--port", "0"),
            names=("--host is empty", "127.0.0.1"),
        ),
    ),
    (_nothing, Case("serve-escape-sequence-site", ("serve", "x\x1b[31mred", "--port", "0"), names=("x\\x1b[31mred",))),
]


@pytest.mark.parametrize("setup,case", CASES, ids=[c.name for _, c in CASES])
def test_refused_up_front(case_root, setup, case):
    setup(case_root)
    proc = run_case(case, case_root)
    out = proc.stdout + proc.stderr
    assert SECRET not in out
    assert "\x1b[31m" not in out  # a terminal escape in a name is shown, not executed
    if (case_root / "userdir").exists():
        assert (case_root / "userdir" / "notes.txt").read_text() == "the user's own notes"


HOSTILE_NAMES = ["<img src=x onerror=alert(1)>.tflite", "a|b[red]c[bold]`d`*e*.tflite"]


def test_report_names_are_escaped_in_markdown_html_and_terminal(case_root):
    """Artefacts named with HTML, Markdown and Rich markup: inert in every report, verbatim on the terminal."""
    for name in HOSTILE_NAMES:
        shutil.copyfile(case_root / "flat.tflite", case_root / name)
    case = Case(
        "eval-hostile-names",
        (
            "eval",
            *(f"{{root}}/{n}" for n in HOSTILE_NAMES),
            "-r",
            "{root}/model",
            "-d",
            "{root}/model/eval.npz",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--markdown",
            "{root}/r.md",
            "--html",
            "{root}/r.html",
        ),
        exit_code=0,
        names=tuple(HOSTILE_NAMES),
        may_create=("r.md", "r.html"),
    )
    run_case(case, case_root)
    md = (case_root / "r.md").read_text()
    html = (case_root / "r.html").read_text()
    for text in (md, html):
        assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;.tflite" in text
    assert "| a\\|b\\[red\\]c\\[bold\\]\\`d\\`\\*e\\*.tflite |" in md  # one cell: the pipe cannot split it
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert len({line.count(" | ") for line in rows}) == 1  # every row has the same number of cells
    assert "a|b[red]c[bold]`d`*e*.tflite" in html.replace("&#x27;", "'").replace("&quot;", '"')
