"""``edgetool inspect``: what a SavedModel or .tflite takes and gives."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from edge_tool.commands.options import CUSTOM_OBJECTS, trust_model_code_option, use_custom_objects

LABELS_SHOWN = 5


def _shape(shape) -> str:
    return "unknown rank" if shape is None else "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"


def _add(table, *cells) -> None:
    """A table row of model-controlled text, shown verbatim (never read as Rich markup)."""
    from edge_tool.core.textsafe import text

    table.add_row(*map(text, cells))


def _render(report) -> None:
    """Rich tables: summary, signatures, parameters by dtype, distribution traces / tflite ops."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    d = report.to_dict()
    from edge_tool.core.textsafe import text

    summary = Table(title=text(f"{d['format']}: {d['path']}"), show_header=False)
    _add(summary, "size", f"{d['size_bytes']:,} bytes")
    p = d["parameters"]
    _add(
        summary,
        "parameters",
        f"{p['total']:,}"
        + (
            f" ({p['trainable']:,} trainable, {p['non_trainable']:,} non-trainable)"
            if p["trainable"] is not None
            else ""
        ),
    )
    if d["keras"]:
        _add(summary, "flavor", d["keras"]["flavor"])
        reloadable = d["keras"]["reloadable_as_keras"]
        _add(summary, "reloadable as Keras", "not tried" if reloadable is None else "yes" if reloadable else "no")
        _add(summary, "note", d["keras"]["note"])
    if d["training"]:
        t = d["training"]
        _add(
            summary,
            "trained (train.json)",
            f"{t['strategy']}, {t['num_replicas']} replica(s)"
            + (f", {t['workers']} worker process(es)" if t["workers"] else "")
            + (f", held-out accuracy {t['eval_accuracy']:.4f}" if t["eval_accuracy"] is not None else ""),
        )
    console.print(summary)
    _render_model_code(console, d["model_code"])

    sigs = Table(title="signatures")
    for col in ("signature", "io", "name", "dtype", "shape"):
        sigs.add_column(col)
    for s in d["signatures"]:
        for io in ("inputs", "outputs"):
            for t in s[io]:
                _add(sigs, s["key"] or "(none)", io[:-1], t["name"], t["dtype"], _shape(t["shape"]))
    console.print(sigs)

    dtypes = Table(title="weight elements by dtype")
    dtypes.add_column("dtype")
    dtypes.add_column("elements", justify="right")
    for k, v in sorted(p["by_dtype"].items()):
        _add(dtypes, k, f"{v:,}")
    console.print(dtypes)

    if d["distribution"]:
        dist = Table(title="distribution strategy traces", show_header=False)
        _add(dist, "variable synchronization", json.dumps(d["distribution"]["variable_synchronization"]))
        _add(dist, "cluster jobs in graphs", ", ".join(d["distribution"]["device_jobs"]) or "none")
        _add(dist, "variable classes on load", json.dumps(d["distribution"]["loaded_variable_classes"]))
        for trace in d["distribution"]["traces"]:
            _add(dist, "trace", trace)
        console.print(dist)
    if d["tflite"]:
        ops = Table(title="tflite ops")
        ops.add_column("op")
        ops.add_column("count", justify="right")
        for k, v in sorted(d["tflite"]["ops"].items()):
            _add(ops, k, str(v))
        console.print(ops)
        if d["tflite"].get("state_warning"):
            console.print(text("state: " + d["tflite"]["state_warning"], "bold yellow"), highlight=False)
        if d["tflite"].get("metadata"):
            _render_metadata(console, d["tflite"]["metadata"])
        else:
            console.print("embedded metadata: none (edgetool convert embeds it; see docs/metadata.md)")


def _render_model_code(console, code: dict | None) -> None:
    """What the model carries besides tensor maths (docs/security.md), or one line saying it carries nothing known."""
    from rich.table import Table

    from edge_tool.core.textsafe import text

    if code is None:
        return
    if code.get("op_library_note"):
        console.print(text(f"op libraries: {code['op_library_note']}", "bold yellow"), highlight=False)
    if not code["python"] and not code["side_effect_ops"]:
        console.print("model code: no Python in the Keras config, no known side-effect ops (docs/security.md)")
        return
    table = Table(title="model code (commands that would run it refuse without --trust-model-code)")
    for col in ("found", "what", "where"):
        table.add_column(col)
    for f in code["python"]:
        _add(table, f"Python: layer {f['layer']}", f["kind"], f["where"])
    for f in code["side_effect_ops"]:
        _add(table, f"op {f['op']}", f["effect"], ", ".join(f["where"][:3]) + (" …" if len(f["where"]) > 3 else ""))
    console.print(table)
    console.print(
        text("trusted (--trust-model-code): " + ("yes" if code["trusted"] else "no"), "bold yellow"), highlight=False
    )


def _render_metadata(console, meta: dict) -> None:
    """The embedded TFLite metadata; every string is rich Text (never markup) with control characters escaped."""
    from rich.table import Table
    from rich.text import Text

    from edge_tool.core.textsafe import visible

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
    model: Path = typer.Argument(
        ..., help="SavedModel directory, .keras/.h5 file (read as convert reads it) or .tflite file."
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print machine-readable JSON instead of tables "
        "(keys: path, format, size_bytes, signatures, parameters, keras, distribution, "
        "training, tflite, model_code, input_contract, lm; see edge_tool/models/inspection.py, "
        "docs/inspect.md and docs/lm.md).",
    ),
    trust_model_code: bool = trust_model_code_option(),
    custom_objects: list[str] | None = CUSTOM_OBJECTS,
) -> None:
    """Show signatures (names, dtypes, shapes), parameter count, Keras reloadability and strategy traces of a model,
    the code it carries (listed, not run) and the input contract as far as the model tells it."""
    use_custom_objects(custom_objects, trust_model_code)
    from edge_tool.core.env import quiet_native_stderr
    from edge_tool.keras_files import inspect_any

    with quiet_native_stderr():  # LiteRT's "Created TensorFlow Lite XNNPACK delegate" and TF's C++ lines (fd 2)
        report = inspect_any(model, trust_model_code)
        lm = _language_model(model, report)
        contract = [] if lm is not None else _contract(model, report)
    if as_json:
        lm_json = None if lm is None else lm.to_dict()
        typer.echo(json.dumps({**report.to_dict(), "input_contract": contract, "lm": lm_json}, indent=2))
    else:
        _render(report)
        _render_contract(contract)
        _render_lm(lm)


def _language_model(model: Path, report):
    """The LM contract (edge_tool.lm) of a model whose signatures are named like one, or the one convert would write
    for a Keras-Hub CausalLM .keras file; LmContractError (exit 2) with every problem when they break it; None for any
    other model."""
    from edge_tool.lm.contract import looks_like_lm, read_lm_contract
    from edge_tool.lm.keras_hub import hub_contract, is_hub_lm
    from edge_tool.lm.tokenizer.registry import TOKENIZERS, load_tokenizer, tokenizer_folder

    if is_hub_lm(Path(model)):
        return hub_contract(Path(model))
    if not looks_like_lm(report.signatures):
        return None
    lm = read_lm_contract(Path(model))
    if lm.spec is not None and TOKENIZERS[lm.spec.tokenizer].ships_file:
        load_tokenizer(lm.spec, tokenizer_folder(Path(model)))  # ModelError (exit 2): missing, or not fitting the spec
    return lm


def _render_lm(lm) -> None:
    from rich.console import Console
    from rich.table import Table

    from edge_tool.lm.contract import describe

    if lm is None:
        return
    table = Table(title="language model (edgetool LM contract, docs/lm.md)", show_header=False)
    for label, value in describe(lm):
        _add(table, label, value)
    Console().print(table)


def _contract(model: Path, report) -> list[dict]:
    """The input contract records of the serving (or only) signature."""
    from edge_tool.contract.describe import model_contract
    from edge_tool.metadata.reader import read_metadata

    sig = next(
        (s for s in report.signatures if s.key == "serving_default"),
        report.signatures[0] if report.signatures else None,
    )
    if sig is None:
        return []
    meta = read_metadata(Path(model).read_bytes()) if report.format == "tflite" else None
    return model_contract(Path(model), sig, meta)


def _render_contract(records: list[dict]) -> None:
    from rich.console import Console

    from edge_tool.core.textsafe import text

    console = Console()
    for r in records:
        if r["known"]:
            console.print(
                text(
                    f"input contract {r['input']!r}: (pixel - {r['mean']}) / {r['std']}, "
                    f"{r['channel_order']}, {r['layout']}, {r['resize']} [{r['source']}: {r['evidence']}]"
                ),
                highlight=False,
            )
        else:
            console.print(text(f"input contract {r['input']!r}: {r['evidence']}"), highlight=False)
