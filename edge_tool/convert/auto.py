"""``convert --quant auto``: build every quantization candidate, measure it with ``edgetool eval``'s machinery,
and keep the best one within an accuracy budget (selective int8 when full int8 loses too much).

Layout of OUTDIR: the chosen ``.tflite`` at the top, every other candidate under ``candidates/`` (with the
convert ``manifest.json``), ``decision.json`` and ``decision.md`` (the same table).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from edge_tool.convert.enums import Objective
from edge_tool.errors import BudgetExceeded, ConversionError, EdgeToolError, UsageError, below_minimum, collect_and_raise
from edge_tool.fsutil import atomic_dir, check_output_dir
from edge_tool.steps import step
from edge_tool.textsafe import md, md_row, text

SELECTIVE = "int8-selective"


@dataclass(frozen=True)
class AutoConfig:
    """Options of ``convert --quant auto``; validated on construction (all problems at once)."""

    model: Path
    output_dir: Path
    max_drop: float
    eval_data: Path
    calibration: Path | None = None
    objective: Objective = Objective.SIZE
    threads: int = 1
    samples: int = 200
    max_float_layers: int = 3
    train_data: Path | None = None
    qat_epochs: int = 3
    seed: int = 0
    force: bool = False
    batch: int | None = None

    def __post_init__(self) -> None:
        for name in ("model", "output_dir", "eval_data"):
            object.__setattr__(self, name, Path(getattr(self, name)))
        for name in ("calibration", "train_data"):
            value = getattr(self, name)
            object.__setattr__(self, name, Path(value) if value is not None else None)
        problems = []
        try:
            object.__setattr__(self, "objective", Objective(self.objective))
        except ValueError:
            problems.append(f"--objective expects size or latency, got {self.objective!r}.")
        if not 0 <= self.max_drop <= 1:
            problems.append(f"--max-drop is a fraction in [0, 1] (0.01 = 1 point), got {self.max_drop}.")
        problems += below_minimum({"--threads": (self.threads, 1), "--samples": (self.samples, 1),
                                   "--max-float-layers": (self.max_float_layers, 0)})
        if self.batch is not None:
            problems += below_minimum({"--batch": (self.batch, 1)})
        if not self.model.is_dir():
            problems.append(f"--quant auto measures against the model as reference, so MODEL must be a SavedModel "
                            f"directory; {self.model} is not a directory.")
        if not self.eval_data.exists():
            problems.append(f"--eval-data {self.eval_data} does not exist.")
        collect_and_raise(problems, UsageError, "Invalid --quant auto options:")

    @property
    def inputs(self) -> tuple[tuple[str, Path | None], ...]:
        """(name, path) of every input the output must stay clear of (fsutil.check_not_input)."""
        return (("model", self.model), ("eval data", self.eval_data), ("calibration data", self.calibration),
                ("training data", self.train_data))

    @property
    def modes(self) -> tuple[str, ...]:
        """The plain candidates, from the mode registry (qat only with --train-data)."""
        from edge_tool.convert.modes import auto_candidates  # noqa: PLC0415

        return auto_candidates(self.train_data is not None)


@dataclass(frozen=True)
class Candidate:
    """One measured candidate; numbers are those of ``edgetool eval`` on the same file."""

    name: str
    quant: str
    path: Path | None
    size_bytes: int | None
    accuracy: float | None
    accuracy_drop: float | None
    latency_ms_p50: float | None
    meets_budget: bool
    chosen: bool = False
    float_layers: tuple[str, ...] | None = None
    failed: str | None = None  # one-line reason when it did not convert or could not be measured

    @classmethod
    def failure(cls, name: str, reason: str, path: Path | None = None) -> "Candidate":
        """A candidate that failed to convert (no file) or to run in evaluation (``path`` kept)."""
        return cls(name, name.split("-", 1)[0], path, path.stat().st_size if path and path.is_file() else None,
                   None, None, None, False, failed=" ".join(reason.split()))

    def to_dict(self) -> dict:
        """decision.json entry."""
        d = {"name": self.name, "quant": self.quant, "file": self.path.name if self.path else None,
             "size_bytes": self.size_bytes, "accuracy": self.accuracy, "accuracy_drop": self.accuracy_drop,
             "latency_ms_p50": self.latency_ms_p50, "meets_budget": self.meets_budget, "chosen": self.chosen}
        if self.float_layers is not None:
            d["float_layers"] = list(self.float_layers)
        if self.failed is not None:
            d["failed"] = self.failed
        return d


@dataclass(frozen=True)
class AutoResult:
    """What ``auto`` decided and wrote."""

    config: AutoConfig
    candidates: tuple[Candidate, ...]
    reference_accuracy: float | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def chosen(self) -> Candidate | None:
        """The chosen candidate, or None when nothing met the budget."""
        return next((c for c in self.candidates if c.chosen), None)

    def to_dict(self) -> dict:
        """decision.json content."""
        return {"objective": self.config.objective.value, "max_drop": self.config.max_drop,
                "reference_accuracy": self.reference_accuracy, "threads": self.config.threads,
                "chosen": self.chosen.name if self.chosen else None,
                "candidates": [c.to_dict() for c in self.candidates], "notes": list(self.notes)}

    def table_rows(self) -> list[list[str]]:
        """Display rows (shared by the terminal and Markdown tables)."""
        rows = []
        for c in self.candidates:
            acc = "—" if c.accuracy is None else f"{100 * c.accuracy:.2f}%"
            drop = "—" if c.accuracy_drop is None else f"{100 * c.accuracy_drop:+.2f} pt"
            lat = "—" if c.latency_ms_p50 is None else f"{c.latency_ms_p50:.3f}"
            size = "—" if c.size_bytes is None else f"{c.size_bytes / 1e3:.1f} kB"
            verdict = "failed" if c.failed else "yes" if c.meets_budget else "no"
            rows.append([c.name, size, acc, drop, lat, verdict,
                         "✔" if c.chosen else "", ", ".join(short_layer(n) for n in c.float_layers or ())])
        return rows

    def to_markdown(self) -> str:
        """decision.md: budget line, the table, the float layers."""
        cfg = self.config
        lines = [f"## edgetool convert --quant auto (objective {cfg.objective.value}, max drop {cfg.max_drop:g} = "
                 f"{100 * cfg.max_drop:.2f} pt, {cfg.threads} thread(s))", "",
                 "| " + " | ".join(TABLE_HEADERS) + " |", "|---|---:|---:|---:|---:|---|---|---|"]
        lines += [md_row(row) for row in self.table_rows()]
        verdict = (f"Chosen: **{md(self.chosen.name)}** ({md(self.chosen.path.name)})." if self.chosen
                   else "No candidate meets the budget; all are under candidates/ for inspection.")
        return "\n".join([*lines, "", verdict, *[f"- {md(n)}" for n in self.all_notes()]]) + "\n"

    def all_notes(self) -> list[str]:
        """Each failed candidate's reason, then the other notes."""
        return [f"{c.name} failed: {c.failed}" for c in self.candidates if c.failed] + list(self.notes)


def short_layer(tensor_name: str) -> str:
    """Display form of a fused TFLite tensor name: its first component (``model/wide/MatMul;…`` → ``model/wide/MatMul``)."""
    return tensor_name.split(";", 1)[0]


TABLE_HEADERS = ["candidate", "size", "accuracy", "drop", "p50 ms", "in budget", "chosen", "float layers"]


SIZE_TIE = 0.02         # sizes within 2 % of the smallest count as equal (full int8 carries a few more scales)
LATENCY_TIE = 0.05      # p50s within 5 % of the fastest count as equal ...
LATENCY_TIE_MS = 0.005  # ... or within 5 µs: one tiny file's p50 moved 5.5-8.3 µs over six runs on 2 cores
# A full tie (size and latency) goes to the more accurate, then to the more integer-only candidate: full int8
# runs on integer accelerators (Edge TPU, NPUs, DSPs); dynamic range keeps float activations.
INTEGER_RANK = {"int8": 0, "qat": 0, SELECTIVE: 1, "int16x8": 2, "dynamic": 3, "fp16": 4}


def _size_tied(cands: list[Candidate]) -> list[Candidate]:
    smallest = min(c.size_bytes for c in cands)
    return [c for c in cands if c.size_bytes <= smallest * (1 + SIZE_TIE)]


def _latency_tied(cands: list[Candidate]) -> list[Candidate]:
    fastest = min(_lat(c) for c in cands)
    limit = max(fastest * (1 + LATENCY_TIE), fastest + LATENCY_TIE_MS)
    return [c for c in cands if _lat(c) <= limit]


def _lat(c: Candidate) -> float:
    return c.latency_ms_p50 if c.latency_ms_p50 is not None else float("inf")


def _acc(c: Candidate) -> float:
    return c.accuracy if c.accuracy is not None else float("-inf")


def choose(candidates: list[Candidate], objective: Objective) -> Candidate | None:
    """The best candidate within budget.

    size: the candidates within SIZE_TIE of the smallest, narrowed to those within the latency tie of the
    fastest of them; latency: the other way round. What is left is ordered by accuracy (higher first), then
    INTEGER_RANK, then the objective's measure, then build order (fp16, dynamic, int8, int16x8, qat,
    int8-selective: ``min`` keeps the first of equals).
    """
    ok = [c for c in candidates if c.meets_budget]
    if not ok:
        return None
    if objective is Objective.SIZE:
        near, measure = _latency_tied(_size_tied(ok)), (lambda c: c.size_bytes)
    else:
        near, measure = _size_tied(_latency_tied(ok)), _lat
    return min(near, key=lambda c: (-_acc(c), INTEGER_RANK.get(c.name, len(INTEGER_RANK)), measure(c)))


def _eval_config(config: AutoConfig, paths: list[Path]):
    from edge_tool.evaluate import EvalConfig  # noqa: PLC0415

    return EvalConfig(artifacts=tuple(paths), reference=config.model, data=config.eval_data,
                      threads=config.threads, max_drop=config.max_drop, seed=config.seed)


def measure(config: AutoConfig, named: list[tuple[str, Path, tuple[str, ...] | None]]) -> tuple[list[Candidate], float | None]:
    """Run ``edgetool eval``'s pipeline on the files; one Candidate per (name, path, float_layers).

    When the run fails, each file is measured alone so that only the ones that fail become failed rows
    ("evaluation failed: ..."); if every file fails the same way (bad eval data, say) that error is raised.
    """
    try:
        return _measure_together(config, named)
    except EdgeToolError as exc:
        if len(named) == 1:
            return [Candidate.failure(named[0][0], f"evaluation failed: {exc}", named[0][1])], None
        first = exc
    out, ref_acc, errors = [], None, []
    for item in named:
        try:
            (cand,), ref_acc = _measure_together(config, [item])
        except EdgeToolError as exc:
            errors.append(str(exc))
            cand = Candidate.failure(item[0], f"evaluation failed: {exc}", item[1])
        out.append(cand)
    if len(errors) == len(named):
        raise first
    return out, ref_acc


def _measure_together(config: AutoConfig, named: list) -> tuple[list[Candidate], float | None]:
    from edge_tool.evaluate import run_eval  # noqa: PLC0415

    report = run_eval(_eval_config(config, [p for _, p, _ in named]))
    out = []
    for (name, path, layers), r in zip(named, report.results):
        if r.failed:  # eval could not run the artefact (e.g. it crashed the runtime): its own failed row
            out.append(Candidate.failure(name, f"evaluation failed: {r.failed}", path))
            continue
        meets = r.accuracy_drop is not None and r.accuracy_drop <= config.max_drop
        out.append(Candidate(name, r.quant, path, r.size_bytes, r.accuracy, r.accuracy_drop,
                             r.latency.p50 if r.latency else None, meets, float_layers=layers))
    return out, report.reference.accuracy


def _convert_config(config: AutoConfig, out: Path):
    from edge_tool.convert.config import ConvertConfig  # noqa: PLC0415

    return ConvertConfig(model=config.model, output_dir=out, modes=config.modes, calibration=config.calibration,
                         samples=config.samples, train_data=config.train_data, qat_epochs=config.qat_epochs,
                         seed=config.seed, batch=config.batch, keep_going=True)


def _selective_search(config: AutoConfig, work: Path, stem: str) -> tuple[Candidate | None, list[str]]:
    """Keep the 1, 2, … worst layers (by rmse/scale) in float until the budget is met or the cap is reached."""
    from edge_tool.convert.api import load_calibration  # noqa: PLC0415
    from edge_tool.convert.metadata_step import for_mode, metadata_spec  # noqa: PLC0415
    from edge_tool.convert.selective import SelectiveInt8  # noqa: PLC0415
    from edge_tool.convert.source import prepare_source  # noqa: PLC0415
    from edge_tool.env import import_tf  # noqa: PLC0415
    from edge_tool.metadata.writer import embed_metadata  # noqa: PLC0415

    tf = import_tf()
    source = prepare_source(config.model, work, config.batch)
    ds, _ = load_calibration(_convert_config(config, work / "unused"), source)
    spec, _ = metadata_spec(_convert_config(config, work / "unused"), source)  # as every convert candidate has
    with step("rank int8 layers (QuantizationDebugger)"):
        sel = SelectiveInt8(tf, tf.lite.TFLiteConverter.from_saved_model(str(source.saved_model)), ds.inputs,
                            str(config.model))
    layers = sel.candidates(config.max_float_layers)
    notes = ["int8 layers by rmse/scale (worst first): "
             + ", ".join(f"{short_layer(e.tensor_name)} {e.rmse_over_scale:.2f}" for e in sel.ranking[:5]) + "."]
    best = None
    for k in range(1, len(layers) + 1):
        names = tuple(e.tensor_name for e in layers[:k])
        path = work / f"{stem}_{SELECTIVE.replace('-', '_')}.tflite"
        with step(f"selective int8 with {k} float layer(s)") as rec:
            data = sel.build(list(names))
            path.write_bytes(data if spec is None else embed_metadata(data, for_mode(spec, SELECTIVE, source.flavor)))
            rec.outputs.append(path)
        (best,), _ = measure(config, [(SELECTIVE, path, names)])
        if best.meets_budget:
            break
    if not layers:
        notes.append("selective int8 skipped: no int8 layer quantizes worse than ideal rounding "
                     "(or --max-float-layers is 0).")
    return best, notes


def run_auto(config: AutoConfig) -> AutoResult:
    """Build, measure, choose and write OUTDIR; ``result.chosen`` is None when nothing is in budget.

    A candidate that fails to convert or to be measured becomes a failed row; the choice is made among the
    others. ConversionError when no candidate converts at all.
    """
    check_output_dir(config.output_dir, config.force, config.inputs)
    from edge_tool.convert.api import convert  # noqa: PLC0415
    from edge_tool.env import quiet_native_stderr  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="edgetool-auto-") as tmp:
        work = Path(tmp)
        built = convert(_convert_config(config, work / "candidates"))
        if not built.artifacts:
            reasons = "\n".join(f"- {mode}: {why}" for mode, why in built.failures.items())
            raise ConversionError(f"--quant auto: no candidate converted for {config.model}:\n{reasons}")
        named = [(a.quant, a.path, None) for a in built.artifacts]
        with quiet_native_stderr(), step("measure candidates (edgetool eval)"):
            measured, ref_acc = measure(config, named)
        by_name = {c.name: c for c in measured}
        by_name.update({m: Candidate.failure(m, why) for m, why in built.failures.items()})
        cands = [by_name[m] for m in config.modes if m in by_name]
        notes = _add_selective(config, work, cands, built.artifacts[0].path.stem.rsplit("_", 1)[0])
        best = choose(cands, config.objective)
        cands = [replace(c, chosen=c is best) for c in cands]
        result = AutoResult(config, tuple(cands), ref_acc, tuple(notes))
        return _write(result, work)


def _add_selective(config: AutoConfig, work: Path, cands: list[Candidate], stem: str) -> list[str]:
    """When full int8 converted but misses the budget, append the selective-int8 candidate (or its failure)."""
    from edge_tool.env import quiet_native_stderr  # noqa: PLC0415

    int8 = next((c for c in cands if c.name == "int8"), None)
    if int8 is None or int8.meets_budget or config.max_float_layers == 0:
        return []
    if int8.failed:
        return ["selective int8 skipped: full int8 did not convert or run."]
    try:
        with quiet_native_stderr():
            selective, notes = _selective_search(config, work, stem)
    except EdgeToolError as exc:
        cands.append(Candidate.failure(SELECTIVE, str(exc)))
        return []
    if selective is not None:
        shutil.move(selective.path, work / "candidates" / selective.path.name)
        cands.append(replace(selective, path=work / "candidates" / selective.path.name))
    return notes


def budget_error(result: AutoResult) -> BudgetExceeded:
    """The exit-1 error when no candidate met the budget (its message carries the table)."""
    return BudgetExceeded(f"no candidate keeps the accuracy drop within --max-drop {result.config.max_drop:g} "
                          f"({100 * result.config.max_drop:.2f} pt); every candidate is in "
                          f"{result.config.output_dir / 'candidates'}:\n{result.to_markdown()}")


def _write(result: AutoResult, work: Path) -> AutoResult:
    """Move the files into OUTDIR atomically: chosen at the top, the rest under candidates/, decision files."""
    config = result.config
    final = []
    with atomic_dir(config.output_dir, config.force, config.inputs) as out:
        shutil.copytree(work / "candidates", out / "candidates")
        for c in result.candidates:
            if c.path is None:
                final.append(c)
                continue
            rel = Path("candidates") / c.path.name
            if c.chosen:
                (out / rel).rename(out / c.path.name)
                rel = Path(c.path.name)
            final.append(replace(c, path=config.output_dir / rel))
        result = replace(result, candidates=tuple(final))
        (out / "decision.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
        (out / "decision.md").write_text(result.to_markdown())
    return result


def print_result(result: AutoResult) -> None:
    """The decision table on the terminal."""
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    cfg = result.config
    table = Table(title=text(f"edgetool convert --quant auto → {cfg.output_dir} (objective {cfg.objective.value}, "
                             f"max drop {100 * cfg.max_drop:.2f} pt)"), title_justify="left")
    for h in TABLE_HEADERS:
        table.add_column(h, justify="right" if h in ("size", "accuracy", "drop", "p50 ms") else "left", no_wrap=True)
    for row, c in zip(result.table_rows(), result.candidates):
        table.add_row(*map(text, row), style="bold green" if c.chosen else (None if c.meets_budget else "red"))
    wide = Console(width=max(Console().width, 160))
    wide.print(table)
    for note in result.all_notes():
        wide.print(text(note, "dim"), highlight=False, soft_wrap=True)
    wide.print(text(f"decision: {cfg.output_dir / 'decision.json'}"), highlight=False, soft_wrap=True)
