"""One module per output format; importing this package registers each in ``formats.registry.FORMATS``.

The names below are the registry's derived views: ``--format``'s choices (``OutputFormat``: every format plus
``all``), which formats a ``--format`` value builds, its default ``--quant``, the options only some formats take
(each format's own, ``option_owners``, and the shared ones it honours, ``honoured``/``takers``) and the refusal of
one no chosen format takes (``options_not_taken``), and the format table of README.md and docs/convert.md
(regenerate with ``python scripts/docs_tables.py``). Each format module is light (its spec, options and
refusals) and loads its builder (``tflite_build``, ``tfjs_build``, ``onnx_build``, ``micro.export``) with one
import when it builds, so this package loads no numpy or TensorFlow (``--help`` reads it).
"""

from enum import Enum

from edge_tool.convert.formats.registry import FORMATS, FormatJob, FormatOption, FormatSpec
from edge_tool.convert.modes import QuantMode, every_mode, named_modes, tflite_source_modes
from edge_tool.errors import UsageError

# isort: off
# each module registers itself; this order is the build order and the manifest's artefact order (not sorted)
from edge_tool.convert.formats import tflite, tfjs, micro, onnx  # noqa: F401
# isort: on

__all__ = [
    "ALL",
    "FORMATS",
    "FormatJob",
    "FormatOption",
    "FormatSpec",
    "OutputFormat",
    "default_modes",
    "format_options",
    "format_table",
    "formats_for",
    "honoured",
    "option_owners",
    "options_not_taken",
    "parse_modes",
    "takers",
]

ALL = "all"

# --format's choices: every registered format, then "all" (a str Enum, so Typer lists and validates them)
OutputFormat = Enum(
    "OutputFormat", [(name.upper(), name) for name in FORMATS] + [(ALL.upper(), ALL)], type=str, module=__name__
)
OutputFormat.__doc__ = "Which artefacts to write: one registered format, or all (every format marked in_all)."


def formats_for(value: str) -> tuple[str, ...]:
    """The formats a ``--format`` value builds, in registry order: ``all`` = every ``in_all`` format; a format
    that extends another brings that one too (micro: the .tflite it sits beside)."""
    value = getattr(value, "value", value)
    if value == ALL:
        wanted = {name for name, spec in FORMATS.items() if spec.in_all}
    else:
        spec = FORMATS[value]
        wanted = {value} | ({spec.extends} if spec.extends else set())
    return tuple(name for name in FORMATS if name in wanted)


def option_owners() -> dict[str, tuple[str, FormatOption]]:
    """Every format-only option by name (``tfjs_quant``): (the one format that declares it, its row)."""
    return {row.name: (name, row) for name, spec in FORMATS.items() for row in spec.option_rows}


def takers(name: str) -> set[str]:
    """The formats that take option ``name``: the one that declares it (``option_owners``), or those that honour
    it among the shared ConvertConfig options (``FormatSpec.honours``: ``io_type``, ``allow_select_tf_ops``)."""
    return {
        fmt for fmt, spec in FORMATS.items() if name in spec.honours or any(r.name == name for r in spec.option_rows)
    }


def honoured() -> tuple[str, ...]:
    """The shared ConvertConfig options that only some formats honour (refused when no chosen format does)."""
    return tuple(dict.fromkeys(name for spec in FORMATS.values() for name in spec.honours))


def options_not_taken(output_format: str, names: list[str]) -> list[str]:
    """One line per option in ``names`` that no format of ``--format output_format`` takes: the option, the
    formats chosen, which ``--format`` values take it."""
    output_format = getattr(output_format, "value", output_format)
    chosen = formats_for(output_format)
    lines = []
    for name in names:
        takes = takers(name)
        if takes & set(chosen):
            continue
        flag = "--" + name.replace("_", "-")
        values = [v.value for v in OutputFormat if takes & set(formats_for(v.value))]
        values = " or ".join([", ".join(values[:-1]), values[-1]] if len(values) > 1 else values)
        lines.append(
            f"{flag} is an option of --format {values}, and --format {output_format} builds {', '.join(chosen)}, "
            f"{'which does not take' if len(chosen) == 1 else 'none of which takes'} it: drop {flag}, or choose a "
            "format that takes it."
        )
    return lines


def format_options(output_format: str, given: dict) -> dict:
    """Flat ``given`` options ({"tfjs_quant": "uint8"}; a None value is not given) grouped by the format that takes
    them ({"tfjs": {"tfjs_quant": "uint8"}}: ``ConvertConfig.format_options``, which makes each format's record and
    fills in its defaults). UsageError (one line) for an option no chosen format takes."""
    given = {n: v for n, v in given.items() if v is not None}
    bad = options_not_taken(output_format, list(given))
    if bad:
        raise UsageError(bad[0])
    owners, by_format = option_owners(), {}
    for name, value in given.items():
        by_format.setdefault(owners[name][0], {})[name] = value
    return by_format


def default_modes(value: str, every: tuple[str, ...]) -> tuple[str, ...]:
    """``--quant`` when none is given: ``every`` (every mode that builds) for ``all``, else the format's default."""
    value = getattr(value, "value", value)
    return every if value == ALL else FORMATS[value].default_modes


def parse_modes(
    values: list[str] | None, output_format: str, has_train_data: bool, tflite_source: bool = False
) -> tuple[str, ...]:
    """Turn --quant values into mode names (validating each against the registry; 'all' expands); the default
    when none is given depends on ``output_format``. For a float .tflite source (``tflite_source``) 'all' and the
    default are the modes ai-edge-quantizer builds from it (``all``: those of them in 'all'; default: dynamic)."""
    every = every_mode(has_train_data)
    if tflite_source:
        every = tuple(m for m in every if m in tflite_source_modes())
    raw = [v.strip().lower() for value in (values or []) for v in value.split(",") if v.strip()]
    if not raw:
        return (QuantMode.DYNAMIC.value,) if tflite_source else default_modes(output_format, every)
    known = named_modes()
    bad = [v for v in raw if v not in known and v != "all"]
    if bad:
        raise UsageError(f"--quant expects one of {', '.join(sorted(known))} or all, got {', '.join(bad)}.")
    modes = []
    for v in raw:
        modes.extend(every if v == "all" else [v])
    return tuple(dict.fromkeys(modes))


def format_table() -> str:
    """The Markdown table of every format (what it writes, --quant modes, what it needs), from the registry."""
    rows = ["| `--format` | writes | `--quant` | options not every format takes | needs | in `all` |"]
    rows.append("|---|---|---|---|---|---|")
    for name, spec in FORMATS.items():
        modes = ("every mode" if spec.modes is None else ", ".join(spec.modes)) if spec.per_mode else "– (own)"
        shared = [f"`--{name.replace('_', '-')}`" for name in spec.honours]
        options = ", ".join([row.shown for row in spec.option_rows] + shared) or "–"
        needs = f"`pip install 'edgetool[{spec.extra}]'`" if spec.extra else "–"
        rows.append(f"| `{name}` | {spec.summary} | {modes} | {options} | {needs} | {'yes' if spec.in_all else 'no'} |")
    return "\n".join(rows) + "\n"
