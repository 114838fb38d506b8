"""``edgetool inspect``: what a SavedModel or .tflite takes and gives."""

from __future__ import annotations

import json
from pathlib import Path

import typer

LABELS_SHOWN = 5


def _shape(shape) -> str:
    return "unknown rank" if shape is None else "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"


def _render(report) -> None:
    """Rich tables: summary, signatures, parameters by dtype, distribution traces / tflite ops."""
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    console = Console()
    d = report.to_dict()
    summary = Table(title=f"{d['format']}: {d['path']}", show_header=False)
    summary.add_row("size", f"{d['size_bytes']:,} bytes")
    p = d["parameters"]
    summary.add_row("parameters", f"{p['total']:,}" + (
        f" ({p['trainable']:,} trainable, {p['non_trainable']:,} non-trainable)" if p["trainable"] is not None else ""
    ))
    if d["keras"]:
        summary.add_row("flavor", d["keras"]["flavor"])
        summary.add_row("reloadable as Keras", "yes" if d["keras"]["reloadable_as_keras"] else "no")
        summary.add_row("note", d["keras"]["note"])
    if d["training"]:
        t = d["training"]
        summary.add_row("trained (train.json)", f"{t['strategy']}, {t['num_replicas']} replica(s)"
                        + (f", {t['workers']} worker process(es)" if t["workers"] else "")
                        + f", held-out accuracy {t['eval_accuracy']:.4f}")
    console.print(summary)

    sigs = Table(title="signatures")
    for col in ("signature", "io", "name", "dtype", "shape"):
        sigs.add_column(col)
    for s in d["signatures"]:
        for io in ("inputs", "outputs"):
            for t in s[io]:
                sigs.add_row(s["key"] or "(none)", io[:-1], t["name"], t["dtype"], _shape(t["shape"]))
    console.print(sigs)

    dtypes = Table(title="weight elements by dtype")
    dtypes.add_column("dtype")
    dtypes.add_column("elements", justify="right")
    for k, v in sorted(p["by_dtype"].items()):
        dtypes.add_row(k, f"{v:,}")
    console.print(dtypes)

    if d["distribution"]:
        dist = Table(title="distribution strategy traces", show_header=False)
        dist.add_row("variable synchronization", json.dumps(d["distribution"]["variable_synchronization"]))
        dist.add_row("cluster jobs in graphs", ", ".join(d["distribution"]["device_jobs"]) or "none")
        dist.add_row("variable classes on load", json.dumps(d["distribution"]["loaded_variable_classes"]))
        for trace in d["distribution"]["traces"]:
            dist.add_row("trace", trace)
        console.print(dist)
    if d["tflite"]:
        ops = Table(title="tflite ops")
        ops.add_column("op")
        ops.add_column("count", justify="right")
        for k, v in sorted(d["tflite"]["ops"].items()):
            ops.add_row(k, str(v))
        console.print(ops)
        if d["tflite"].get("metadata"):
            _render_metadata(console, d["tflite"]["metadata"])
        else:
            console.print("embedded metadata: none (edgetool convert embeds it; see docs/metadata.md)")


def visible(value) -> str:
    """Text from a model file shown as data: control characters escaped (no terminal sequences get through)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(value))


def _render_metadata(console, meta: dict) -> None:
    """The embedded TFLite metadata; every string is rich Text (never markup) with control characters escaped."""
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    table = Table(title="embedded metadata (TFLite model metadata)", show_header=False)

    def row(key: str, value) -> None:
        table.add_row(Text(visible(key)), Text(visible(value)))

    for key in ("name", "description", "version", "author", "min_parser_version"):
        if meta[key]:
            row(key.replace("_", " "), meta[key])
    for io in ("inputs", "outputs"):
        for t in meta[io]:
            norm = t["normalization"]
            extra = f"; normalization mean {norm['mean']} std {norm['std']}" if norm else ""
            extra += f"; labels in {t['labels_file']}" if t["labels_file"] else ""
            row(f"{io[:-1]} {visible(t['name'])}", f"{t['content'] or 'no content type'}{extra}: {t['description']}")
    if meta["label_count"]:
        first = ", ".join(f"'{visible(x)}'" for x in meta["labels"][:LABELS_SHOWN])
        more = f", … ({meta['label_count'] - LABELS_SHOWN} more)" if meta["label_count"] > LABELS_SHOWN else ""
        row("labels", f"{meta['label_count']}: {first}{more}")
    if meta["packed_files"]:
        row("packed files", ", ".join(meta["packed_files"]))
    for problem in meta["problems"]:
        row("problem", problem)
    console.print(table)


def command(
    model: Path = typer.Argument(..., help="SavedModel directory or .tflite file."),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables "
                                 "(keys: path, format, size_bytes, signatures, parameters, keras, distribution, "
                                 "training, tflite; see edge_tool/inspection.py)."),
) -> None:
    """Show signatures (names, dtypes, shapes), parameter count, Keras reloadability and strategy traces of a model."""
    from edge_tool.inspection import inspect_model  # noqa: PLC0415

    report = inspect_model(model)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        _render(report)
