"""Rewrite references to edgetool modules that moved floors (issue 24, "Layering"): imports, module strings
(``python -m edge_tool.…``, monkeypatch targets) and repository paths in code and docs.

Run from the repository root after merging code written against the old layout::

    python scripts/rewrite_moved_imports.py            # rewrite in place, list the files changed
    python scripts/rewrite_moved_imports.py --check    # exit 1 naming files that still use an old name

It rewrites ``edge_tool.old.name`` (and ``edge_tool/old/name.py``) and ``from edge_tool.old import name``; anything
else it cannot be sure of is left for a human (``--check`` finds it).

It also renames the packages that ship inside edge_tool (issue 24: the wheel claims no top-level name but
``edge_tool``): ``from calibration.x import y`` becomes ``from edge_tool.calibration.x import y`` in edgetool's own
code (edge_tool/, tests/, benchmarks/, scripts/), and relative (``from .x import y``) inside calibration/ itself, so
the same files import as ``calibration`` from the repository and as ``edge_tool.calibration`` when installed. Import
lines it rewrites are then re-sorted (``ruff check --select I --fix``) and formatted (``ruff format``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# old dotted module -> new dotted module (a package moves with everything under it)
MOVES: dict[str, str] = {
    # step 2: auto above convert and evaluate; tasks and the shared LiteRT pieces below both
    "edge_tool.convert.auto": "edge_tool.auto",
    "edge_tool.evaluate.tasks": "edge_tool.tasks",
    "edge_tool.evaluate.isolated": "edge_tool.litert.isolated",
    "edge_tool.evaluate.per_layer": "edge_tool.tflite_converter.per_layer",
    "edge_tool.evaluate.tflite_runner": "edge_tool.litert.tflite_runner",
    "edge_tool.evaluate.flatbuffer_facts": "edge_tool.litert.flatbuffer_facts",
    "edge_tool.demo.litert": "edge_tool.convert.fixed_int8",  # its tflite_spec (the page's model check): demo.litert_spec
    # step 4: the flat top floor grouped into named floors
    "edge_tool.childproc": "edge_tool.core.childproc",
    "edge_tool.env": "edge_tool.core.env",
    "edge_tool.fsutil": "edge_tool.core.fsutil",
    "edge_tool.outswap": "edge_tool.core.outswap",
    "edge_tool.scratch": "edge_tool.core.scratch",
    "edge_tool.signals": "edge_tool.core.signals",
    "edge_tool.stdio": "edge_tool.core.stdio",
    "edge_tool.steps": "edge_tool.core.steps",
    "edge_tool.textsafe": "edge_tool.core.textsafe",
    "edge_tool.tflite_model": "edge_tool.parsers.tflite_model",
    "edge_tool.limits": "edge_tool.parsers.limits",
    "edge_tool.keras_archive": "edge_tool.parsers.keras_archive",
    "edge_tool.tfjs_manifest": "edge_tool.parsers.tfjs_manifest",
    "edge_tool.checkpoint": "edge_tool.parsers.checkpoint",
    "edge_tool.modelio": "edge_tool.models.signatures",
    "edge_tool.inspection": "edge_tool.models.inspection",
    "edge_tool.fixed_batch": "edge_tool.models.fixed_batch",
    "edge_tool.labelmap": "edge_tool.models.labelmap",
    "edge_tool.runtime": "edge_tool.litert.runtime",
    "edge_tool.feeding": "edge_tool.litert.feeding",
    "edge_tool.recipes": "edge_tool.litert.recipes",
    "edge_tool.site_files": "edge_tool.webserver.files",
    "edge_tool.site_guard": "edge_tool.webserver.guard",
    "edge_tool.site_gzip": "edge_tool.webserver.compress",
    "edge_tool.site_handler": "edge_tool.webserver.handler",
    "edge_tool.site_server": "edge_tool.webserver.server",
    "edge_tool.serve": "edge_tool.demo.serve",
    # issue 33: names no longer re-exported (importable only from the module defining them), and tflite_model's
    # private schema helpers made public in tflite_schema (an old private name is kept as an alias where imported)
    "edge_tool.converter.diagnose.python_callback_refusal": "edge_tool.trust.side_effects.python_callback_refusal",
    "edge_tool.convert.qat.IO_TYPES": "edge_tool.qat.export.IO_TYPES",
    "edge_tool.convert.qat.qat_to_tflite": "edge_tool.qat.export.qat_to_tflite",
    "edge_tool.demo.serve.IDLE_TIMEOUT_S": "edge_tool.webserver.server.IDLE_TIMEOUT_S",
    "edge_tool.demo.serve.LISTEN_BACKLOG": "edge_tool.webserver.server.LISTEN_BACKLOG",
    "edge_tool.demo.serve.MAX_PENDING": "edge_tool.webserver.server.MAX_PENDING",
    "edge_tool.demo.serve.MAX_WORKERS": "edge_tool.webserver.server.MAX_WORKERS",
    "edge_tool.demo.serve.MIME_TYPES": "edge_tool.webserver.files.MIME_TYPES",
    "edge_tool.demo.serve.REQUEST_TIMEOUT_S": "edge_tool.webserver.server.REQUEST_TIMEOUT_S",
    "edge_tool.demo.serve.SECURITY_HEADERS": "edge_tool.webserver.handler.SECURITY_HEADERS",
    "edge_tool.demo.serve.SiteRequestHandler": "edge_tool.webserver.handler.SiteRequestHandler",
    "edge_tool.demo.serve.content_type": "edge_tool.webserver.files.content_type",
    "edge_tool.demo.serve.resolve_target": "edge_tool.webserver.files.resolve_target",
    "edge_tool.demo.site.APP_SCRIPT_TAG": "edge_tool.demo.litert_site.APP_SCRIPT_TAG",
    "edge_tool.demo.site.LITERT_IMPORT_MAP": "edge_tool.demo.litert_site.LITERT_IMPORT_MAP",
    "edge_tool.demo.site.LITERT_MODULE": "edge_tool.demo.litert_site.LITERT_MODULE",
    "edge_tool.demo.site.LITERT_MODULES": "edge_tool.demo.litert_site.LITERT_MODULES",
    "edge_tool.demo.site.MAX_TITLE": "edge_tool.demo.config.MAX_TITLE",
    "edge_tool.evaluate.artifacts.Artifact": "edge_tool.models.readers.Artifact",
    "edge_tool.evaluate.artifacts.describe": "edge_tool.models.readers.describe",
    "edge_tool.evaluate.config.ArtifactFormat": "edge_tool.models.readers.ArtifactFormat",
    "edge_tool.evaluate.data.InputSpec": "edge_tool.calibration.spec.InputSpec",
    "edge_tool.evaluate.report.LayerError": "edge_tool.evaluate.rows.LayerError",
    "edge_tool.convert.qat_support.folding.Fold": "edge_tool.qat.fold_plan.Fold",
    "edge_tool.convert.qat_support.folding.compose": "edge_tool.qat.fold_plan.compose",
    "edge_tool.convert.qat_support.folding.plan_activation_fusions": "edge_tool.qat.fold_plan.plan_activation_fusions",
    "edge_tool.convert.qat_support.folding.plan_folds": "edge_tool.qat.fold_plan.plan_folds",
    "edge_tool.evaluate.pipeline.budget_violations": "edge_tool.evaluate.budgets.budget_violations",
    "edge_tool.evaluate.pipeline.failures": "edge_tool.evaluate.budgets.failures",
    "edge_tool.evaluate.pipeline.primary_output": "edge_tool.evaluate.stream.primary_output",
    "edge_tool.evaluate.pipeline.write_reports": "edge_tool.evaluate.outputs.write_reports",
    "edge_tool.evaluate.report.ArtifactResult": "edge_tool.evaluate.rows.ArtifactResult",
    "edge_tool.evaluate.report.LatencyStats": "edge_tool.evaluate.rows.LatencyStats",
    "edge_tool.evaluate.report.ReferenceResult": "edge_tool.evaluate.rows.ReferenceResult",
    "edge_tool.litert.tflite_runner.FlatbufferFacts": "edge_tool.litert.flatbuffer_facts.FlatbufferFacts",
    "edge_tool.litert.tflite_runner.read_flatbuffer": "edge_tool.litert.flatbuffer_facts.read_flatbuffer",
    "edge_tool.modelfiles.tflite_model._names": "edge_tool.parsers.tflite_schema.enum_names",
    "edge_tool.modelfiles.tflite_model._schema": "edge_tool.parsers.tflite_schema.tflite_schema",
    "edge_tool.modelfiles.tflite_model.is_constant": "edge_tool.parsers.tflite_schema.is_constant",
    "edge_tool.webserver.server.SECURITY_HEADERS": "edge_tool.webserver.handler.SECURITY_HEADERS",
    # issue 33: the device a place of its own (evaluate.device.runner, tflm_plan: no successor; see evaluate/runtimes/)
    "edge_tool.evaluate.device": "edge_tool.device",
    # issue 33's naming pass: packages named for what they hold
    "edge_tool.models.modelio": "edge_tool.models.signatures",
    "edge_tool.models.formats": "edge_tool.models.readers",
    "edge_tool.converter": "edge_tool.tflite_converter",
    "edge_tool.modelfiles": "edge_tool.parsers",
    "edge_tool.modelcode": "edge_tool.trust",
    "edge_tool.workflows.keras_files": "edge_tool.keras_files",
    "edge_tool.workflows": "edge_tool.keras_files",
    # issue 41: each compiler a floor of its own. The TF.js writer leaves convert/ (formats/tfjs*.py stay there) ...
    "edge_tool.convert.tfjs": "edge_tool.tfjs_writer.export",
    "edge_tool.convert.tfjs_graph": "edge_tool.tfjs_writer.graph",
    "edge_tool.convert.tfjs_op_table": "edge_tool.tfjs_writer.op_table",
    "edge_tool.convert.tfjs_opfix": "edge_tool.tfjs_writer.opfix",
    "edge_tool.convert.tfjs_rewrite": "edge_tool.tfjs_writer.rewrite",
    "edge_tool.convert.tfjs_selfcheck": "edge_tool.tfjs_writer.selfcheck",
    "edge_tool.convert.tfjs_weights": "edge_tool.tfjs_writer.weights",
    # ... QAT leaves it for qat/ (its mode builder joins convert/modes/, so qat/ never imports convert/) ...
    "edge_tool.convert.qat_support.mode": "edge_tool.convert.modes.qat_build",
    "edge_tool.convert.qat_support": "edge_tool.qat",
    "edge_tool.convert.qat": "edge_tool.qat.pipeline",
    "edge_tool.convert.enums.QatStrategy": "edge_tool.qat.enums.QatStrategy",
    # ... and what both read from convert/ moves below them: a .keras file's version, the self-checks' seeded probes
    "edge_tool.convert.source.keras_archive_version": "edge_tool.parsers.keras_archive.keras_archive_version",
    "edge_tool.convert.source.MAX_METADATA_BYTES": "edge_tool.parsers.keras_archive.MAX_METADATA_BYTES",
    "edge_tool.convert.fidelity.PROBES": "edge_tool.models.probes.PROBES",
    "edge_tool.convert.fidelity.probe_feeds": "edge_tool.models.probes.probe_feeds",
    "edge_tool.convert.source.content_hash": "edge_tool.parsers.tree.content_hash",  # the LM compiler hashes too
    "edge_tool.calibration.types.show_shape": "edge_tool.calibration.spec.show_shape",  # issue 41: no re-export
    "edge_tool.convert.enums.QuantMode": "edge_tool.convert.modes.QuantMode",  # issue 41: derived from MODES
}

RENAMED_ROOTS: dict[str, str] = {"calibration": "edge_tool.calibration"}  # a repository folder -> its import name
RENAME_IN = ("edge_tool/", "tests/", "benchmarks/", "scripts/")  # code that imports the new name

SUFFIXES = (".py", ".md", ".toml", ".sh", ".cfg", ".txt", ".in", ".json")
SKIP = ("scripts/rewrite_moved_imports.py", "tests/test_rewrite_moved_imports.py", "edgetool.egg-info/")


def _files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [
        ROOT / f
        for f in out.splitlines()
        if f.endswith(SUFFIXES) or f.startswith(".ci/")
        if not f.startswith(SKIP) and (ROOT / f).is_file()
    ]


def _patterns() -> list[tuple[re.Pattern, str]]:
    subs = []
    for old, new in sorted(MOVES.items(), key=lambda kv: -len(kv[0])):  # longest first: a.b.c before a.b
        dotted = re.escape(old)
        subs.append((re.compile(rf"(?<![\w.]){dotted}(?!\w)"), new))
        parent, _, name = old.rpartition(".")
        new_parent, _, new_name = new.rpartition(".")
        alias = "" if new_name == name else f" as {name}"
        one = rf"\bfrom {re.escape(parent)} import {re.escape(name)}"
        subs.append((re.compile(one + r"\b(?!\s*(,|as\b))"), f"from {new_parent} import {new_name}{alias}"))
        subs.append((re.compile(one + r" as\b"), f"from {new_parent} import {new_name} as"))
        path_old, path_new = old.replace(".", "/"), new.replace(".", "/")
        subs.append((re.compile(rf"(?<![\w/]){re.escape(path_old)}(?=/|\.py\b)"), path_new))
    return subs


_FROM_MANY = re.compile(
    r"^(?P<indent>[ \t]*)from (?P<parent>edge_tool(?:\.\w+)*) import (?P<names>\w+(?:, *\w+)+)[ \t]*$", re.MULTILINE
)


def _split_from_many(match: re.Match) -> str:
    """``from edge_tool import a, b`` naming moved modules: one import line per new parent, the rest kept."""
    indent, parent = match["indent"], match["parent"]
    kept, moved = [], {}
    for name in (n.strip() for n in match["names"].split(",")):
        new = MOVES.get(f"{parent}.{name}")
        if new is None:
            kept.append(name)
            continue
        new_parent, _, new_name = new.rpartition(".")
        moved.setdefault(new_parent, []).append(name if new_name == name else f"{new_name} as {name}")
    if not moved:
        return match[0]
    lines = [f"{indent}from {parent} import {', '.join(kept)}"] if kept else []
    lines += [f"{indent}from {p} import {', '.join(names)}" for p, names in moved.items()]
    return "\n".join(lines)


def rewrite(text: str) -> str:
    """``text`` with every moved module's name and path replaced by its new one."""
    text = _FROM_MANY.sub(_split_from_many, text)
    for pattern, repl in _patterns():
        text = pattern.sub(repl, text)
    return text


def _submodules(root: str) -> list[str]:
    """Names of the modules and subpackages directly inside the repository's package ``root``."""
    return sorted(p.stem for p in (ROOT / root).iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file())


def rename_roots(text: str) -> str:
    """edgetool's own code: ``calibration`` imports (and module strings such as mock targets) under their new name."""
    for old, new in RENAMED_ROOTS.items():
        o, parent, name = re.escape(old), *new.rsplit(".", 1)
        text = re.sub(rf"(?m)^([ \t]*)from {o}((?:\.\w+)*) import ", rf"\1from {new}\2 import ", text)
        text = re.sub(rf"(?m)^([ \t]*)import {o}((?:\.\w+)+) as ", rf"\1import {new}\2 as ", text)
        text = re.sub(rf"(?m)^([ \t]*)import {o}(?=[ \t]*(?:as\b|#|$))", rf"\1from {parent} import {name}", text)
        subs = "|".join(map(re.escape, _submodules(old)))
        text = re.sub(rf"(?<=[\"']){o}(?=\.(?:{subs})\b)", new, text)
    return text


def relative_in_package(text: str, path: Path) -> str:
    """Inside a renamed package: its absolute imports of itself made relative (``from ..spec import X``)."""
    here = path.relative_to(ROOT).parent.parts  # the package a module (or __init__.py) belongs to

    def relative(dotted: str) -> str:
        target = dotted.split(".")
        common = next((i for i, (a, b) in enumerate(zip(here, target)) if a != b), min(len(here), len(target)))
        return "." * (len(here) - common + 1) + ".".join(target[common:])

    root = re.escape(here[0])
    text = re.sub(
        rf"(?m)^([ \t]*)from ({root}(?:\.\w+)*) import ", lambda m: f"{m[1]}from {relative(m[2])} import ", text
    )
    return re.sub(
        rf"(?m)^([ \t]*)import ({root}(?:\.\w+)*)\.(\w+) as ",
        lambda m: f"{m[1]}from {relative(m[2])} import {m[3]} as ",
        text,
    )


def leftovers(text: str, rel: str) -> bool:
    """A form the rewrite does not handle (``import calibration.x`` binding the old name, or a module string)."""
    for old in RENAMED_ROOTS:
        o = re.escape(old)
        if rel.endswith(".py") and re.search(rf"(?m)^[ \t]*import {o}\.\w[\w.]*[ \t]*(?:#.*)?$", text):
            return True
        subs = "|".join(map(re.escape, _submodules(old)))
        if rel.startswith(f"{old}/") and re.search(rf"(?m)^[ \t]*import {o}\b|[\"']{o}\.(?:{subs})\b", text):
            return True
    return False


def rewrite_file(text: str, rel: str) -> str:
    """``rewrite`` plus the package renames that apply to the file at repository path ``rel``."""
    text = rewrite(text)
    if not rel.endswith(".py"):
        return text
    if rel.startswith(RENAME_IN):
        return rename_roots(text)
    if rel.startswith(tuple(f"{old}/" for old in RENAMED_ROOTS)):
        return relative_in_package(text, ROOT / rel)
    return text


def _tidy(files: list[str]) -> None:
    """Re-sort and re-wrap the imports rewritten in ``files`` with ruff (the project's pinned linter)."""
    py = [f for f in files if f.endswith(".py")]
    if not py:
        return
    for args in (["check", "--select", "I", "--fix", "-q"], ["format", "-q"]):
        proc = subprocess.run([sys.executable, "-m", "ruff", *args, "--force-exclude", *py], cwd=ROOT)
        if proc.returncode:
            print(f"ruff {args[0]} failed on the rewritten files; fix them by hand", file=sys.stderr)


def main(argv: list[str]) -> int:
    """Rewrite (or with --check, only list) the files that name a moved module."""
    check = "--check" in argv
    changed, manual = [], []
    for f in _files():
        rel = str(f.relative_to(ROOT))
        text = f.read_text(encoding="utf-8", errors="surrogateescape")
        new = rewrite_file(text, rel)
        if new != text:
            changed.append(rel)
            if not check:
                f.write_text(new, encoding="utf-8", errors="surrogateescape")
        if leftovers(new, rel):
            manual.append(rel)
    if changed and not check:
        _tidy(changed)
    print("\n".join(changed))
    if manual:
        print("left for a human (an old package name the rewrite cannot change safely):\n" + "\n".join(manual))
    return 1 if (check and changed) or manual else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
