"""``edgetool convert``: TFLite in every quantization mode, and TFJS."""

from __future__ import annotations

from pathlib import Path

import typer

from edge_tool.commands import convert_auto, convert_rerun, input_options, lm_convert, panels
from edge_tool.commands.convert_print import print_result
from edge_tool.commands.format_option_types import TfjsQuantOption
from edge_tool.commands.options import CUSTOM_OBJECTS, trust_model_code_option, use_custom_objects
from edge_tool.commands.quant_options import Quant, Require
from edge_tool.convert.enums import IOType, Objective
from edge_tool.convert.formats import FORMATS, OutputFormat, format_options, option_owners, parse_modes
from edge_tool.errors import ModesNotBuilt, SelfCheckFailed, UsageError
from edge_tool.qat.enums import QatStrategy

FORMAT_HELP = "; ".join(f"{name} = {spec.summary}" for name, spec in FORMATS.items()) + (
    "; all = " + " + ".join(name for name, spec in FORMATS.items() if spec.in_all) + "."
)


FROM_MANIFEST_HELP = (
    "Rerun the conversion a manifest.json records (model, modes, formats, options, calibration selection, seeds) "
    "and report per file whether the bytes are identical: exit 0 identical, 1 not. Into -o DIR, else a temporary "
    "directory; no other option with it."
)


def parse_floats(option: str, value: str | None) -> tuple[float, ...] | None:
    """'127.5' or '123.7,116.3,103.5' -> floats; UsageError naming the option for anything else."""
    from edge_tool.contract.options import parse_floats as parse

    return parse(option, value)


def command(
    ctx: typer.Context,
    model: Path = typer.Argument(
        None, help="SavedModel dir (Keras-2 save, Keras-3 export, tf.saved_model.save), or .keras/.h5 file."
    ),
    output: Path = typer.Option(
        None,
        "-o",
        "--output",
        help="Output directory (refused if it exists and is not empty, unless --force; never an input or around one). A symbolic link is followed to its directory (the link stays); a dangling one is refused.",
        rich_help_panel=panels.OUTPUT,
    ),
    from_manifest: Path = typer.Option(None, "--from-manifest", help=FROM_MANIFEST_HELP, rich_help_panel=panels.OUTPUT),
    quant: Quant = None,
    output_format: OutputFormat = typer.Option(
        OutputFormat.TFLITE, "--format", help=FORMAT_HELP, rich_help_panel=panels.FORMATS
    ),
    calibration: Path = typer.Option(
        None,
        "--calibration",
        help="Representative data (.npz/.npy/image folder/TFRecord/CSV). Default: calibration.npz beside the model.",
        rich_help_panel=panels.CALIBRATION,
    ),
    samples: int = typer.Option(
        200, "--samples", help="Calibration samples to draw (seeded).", rich_help_panel=panels.CALIBRATION
    ),
    io_type: IOType = typer.Option(
        IOType.MODEL,
        "--io-type",
        help="Inference I/O dtype for int8/qat (model = keep the model's).",
        rich_help_panel=panels.CONVERSION,
    ),
    train_data: Path = typer.Option(
        None, "--train-data", help="Training data (x, y) for --quant qat.", rich_help_panel=panels.QAT
    ),
    qat_epochs: int = typer.Option(3, "--qat-epochs", help="QAT fine-tuning epochs.", rich_help_panel=panels.QAT),
    strategy: QatStrategy = typer.Option(
        QatStrategy.DEFAULT, "--strategy", help="QAT strategy.", rich_help_panel=panels.QAT
    ),
    replicas: int = typer.Option(2, "--replicas", help="Replicas for --strategy mirrored.", rich_help_panel=panels.QAT),
    tfjs_quant: TfjsQuantOption = None,
    allow_select_tf_ops: bool = typer.Option(
        False,
        "--allow-select-tf-ops",
        help="Allow TF (Flex) ops the builtin set lacks; the runtime then needs the Flex delegate.",
        rich_help_panel=panels.CONVERSION,
    ),
    signature: str = typer.Option(
        None,
        "--signature",
        help="SavedModel signature to convert (default serving_default; convert names the one used when there are several).",
        rich_help_panel=panels.CONVERSION,
    ),
    batch: int = typer.Option(
        None,
        "--batch",
        help="Fix the input batch to N (re-traces the serving signature): recurrent models (LSTM/GRU) then convert to builtin TFLite ops; LiteRT.js needs 1.",
        rich_help_panel=panels.CONVERSION,
    ),
    seed: int = typer.Option(
        0, "--seed", help="Seed for calibration sampling and QAT.", rich_help_panel=panels.CALIBRATION
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Replace an existing output directory written by an earlier edgetool run (it holds a .edgetool-output marker); a directory edgetool did not write is never replaced, and no output may be or contain an input. Checked again right before the final swap: a folder that appears at -o while the run works is never replaced (exit 2).",
        rich_help_panel=panels.OUTPUT,
    ),
    max_drop: float = typer.Option(
        None,
        "--max-drop",
        help="--quant auto: accuracy budget as a fraction (0.01 = 1 point).",
        rich_help_panel=panels.AUTO,
    ),
    eval_data: Path = typer.Option(
        None,
        "--eval-data",
        help="Labelled data (x, y): --quant auto measures the budget on it; --quant qat compares QAT with int8 PTQ on it (default: a held-out split of --train-data).",
        rich_help_panel=panels.AUTO,
    ),
    objective: Objective = typer.Option(
        Objective.SIZE,
        "--objective",
        help="--quant auto: size (smallest in budget) or latency (fastest).",
        rich_help_panel=panels.AUTO,
    ),
    threads: int = typer.Option(
        1, "--threads", help="--quant auto: LiteRT threads for the p50 latency.", rich_help_panel=panels.AUTO
    ),
    max_float_layers: int = typer.Option(
        3,
        "--max-float-layers",
        help="--quant auto: most int8 layers selective int8 may keep in float.",
        rich_help_panel=panels.AUTO,
    ),
    require: Require = None,
    labels: Path = typer.Option(
        None,
        "--labels",
        help="Class labels, one per line, embedded as model metadata (default: labels.txt beside the SavedModel).",
        rich_help_panel=panels.OUTPUT,
    ),
    input_range: str = input_options.INPUT_RANGE,
    input_mean: str = input_options.INPUT_MEAN,
    input_std: str = input_options.INPUT_STD,
    no_metadata: bool = typer.Option(
        False,
        "--no-metadata",
        help="Write no model metadata (.tflite bytes then equal the raw converter's).",
        rich_help_panel=panels.OUTPUT,
    ),
    device: str = typer.Option(
        None,
        "--device",
        help="--quant auto: measure the candidates on this board: ssh://[user@]host[:port][?python=PATH].",
        rich_help_panel=panels.AUTO,
    ),
    trust_model_code: bool = trust_model_code_option(),
    custom_objects: list[str] | None = CUSTOM_OBJECTS,
    task: lm_convert.Task = None,
    max_len: lm_convert.MaxLen = None,
    prefill_len: lm_convert.PrefillLen = None,
    max_memory: lm_convert.MaxMemory = None,
    litertlm: lm_convert.Litertlm = False,
) -> None:
    """Convert a model to TFLite in each --quant mode (or the best within --max-drop: --quant auto) and to the other
    formats of --format; --from-manifest reruns a recorded conversion."""
    if from_manifest is not None:
        return convert_rerun.rerun(ctx, from_manifest, output, force)
    if model is None or output is None:
        raise UsageError("convert needs a MODEL and -o/--output DIR (or --from-manifest out/manifest.json).")
    use_custom_objects(custom_objects, trust_model_code)
    auto = convert_auto.is_auto(quant)
    if lm_convert.is_lm(model, task):
        lm_convert.refused_options(
            {
                "--format": output_format is not OutputFormat.TFLITE,
                "--calibration": calibration,
                "--batch": batch,
                "--train-data": train_data,
                "--io-type": io_type is not IOType.MODEL,
                "--signature": signature,
            }
        )
        args = (max_len, prefill_len, max_memory, litertlm)
        return lm_convert.run_lm(model, output, quant, seed, force, *args, auto=auto, max_drop=max_drop, text=eval_data)
    if any(v not in (None, False) for v in (max_len, prefill_len, max_memory, litertlm)):
        raise UsageError(
            "--max-len, --prefill-len, --max-memory and --litertlm belong to --task lm (a language model)."
        )
    if auto:
        convert_auto.check_auto_options(max_drop, eval_data, output_format, io_type)
    elif max_drop is not None or require is not None or device is not None:
        raise UsageError(
            "--max-drop, --require, --device and the other budget options belong to --quant auto; evaluate other "
            "modes with edgetool eval."
        )
    options = format_options(
        output_format, {name: ctx.params[name] for name in option_owners()}
    )  # one a chosen format does not take: exit 2
    if auto:  # the candidates' conversion: model I/O kept, a failing mode becomes a failed row
        own = {"modes": _auto_modes(require, train_data is not None, model), "keep_going": True}
    else:
        own = _run_options(quant, output_format, io_type, train_data, eval_data, strategy, replicas, no_metadata, model)
    own["format_options"] = options
    config = _config(
        own,
        model=model,
        output_dir=output,
        calibration=calibration,
        samples=samples,
        train_data=train_data,
        qat_epochs=qat_epochs,
        seed=seed,
        batch=batch,
        allow_select_tf_ops=allow_select_tf_ops,
        force=force,
        trust_model_code=trust_model_code,
        labels=labels,
        input_range=input_range,
        input_mean=parse_floats("--input-mean", input_mean),
        input_std=parse_floats("--input-std", input_std),
        signature=signature,
    )
    if auto:
        convert_auto.run_auto(config, max_drop, eval_data, objective, threads, max_float_layers, require, device)
    else:
        _run(config, quant)


def _auto_modes(require: str | None, has_train_data: bool, model: Path) -> tuple[str, ...]:
    """--quant auto's candidate modes (integer-only ones with --require integer-only; for a float .tflite source,
    those ai-edge-quantizer builds from it)."""
    from edge_tool.convert.modes import auto_candidates, integer_only_candidates, tflite_source_modes
    from edge_tool.convert.tflite_source import is_tflite_source

    found = (integer_only_candidates if require == "integer-only" else auto_candidates)(has_train_data)
    return tuple(m for m in found if m in tflite_source_modes()) if is_tflite_source(model) else found


def _run_options(quant, output_format, io_type, train_data, eval_data, strategy, replicas, no_metadata, model) -> dict:
    """The ConvertConfig fields a plain (not --quant auto) run sets beyond the shared ones."""
    if strategy is QatStrategy.MIRRORED:
        from edge_tool.core.env import import_tf
        from edge_tool.training.strategies import split_cpu

        split_cpu(import_tf(), replicas)  # must happen before TensorFlow initialises its devices
    from edge_tool.convert.tflite_source import is_tflite_source

    modes = parse_modes(quant, output_format.value, train_data is not None, is_tflite_source(model))
    return {
        "modes": modes,
        "output_format": output_format,
        "io_type": io_type,
        "eval_data": eval_data,
        "strategy": strategy.value,
        "replicas": replicas,
        "metadata": not no_metadata,
        # with more than one artefact asked for, one the libraries cannot build is recorded and the rest written
        "keep_going": len(modes) > 1 or output_format is OutputFormat.ALL,
    }


def _config(own: dict, **shared):
    """The run's one ConvertConfig: the options every run shares plus ``own`` (auto's or a plain run's)."""
    from edge_tool.convert.config import ConvertConfig

    return ConvertConfig(**shared, **own)


def _run(config, quant: list[str] | None) -> None:
    """Convert, print the table, and exit 1 when a requested mode could not be built or a written file failed its
    self-check."""
    from edge_tool.convert.api import convert

    result = convert(config)
    print_result(result)
    if result.failures and quant:  # bare --format all asks for "every mode that builds": exit 0
        raise ModesNotBuilt(
            f"{len(result.failures)} of the requested modes could not be built "
            f"({', '.join(result.failures)}); the others are written to {result.output_dir}, and "
            'manifest.json lists the missing ones with their reason under "failed".'
        )
    wrong = [a.path for a in result.artifacts if _self_check_failed(a)]
    if wrong:
        raise SelfCheckFailed(
            f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not compute what the SavedModel computes on "
            f"the seeded self-check inputs (the warning above gives the error and the tolerance). "
            f"{'It is' if len(wrong) == 1 else 'They are'} written to {result.output_dir} for inspection, with "
            "artifacts[].self_check in manifest.json, but this run does not count as a success: measure the file on "
            "real data with edgetool eval, or try --batch 1 (fixed shapes) or another --quant mode."
        )


def _self_check_failed(entry) -> bool:
    """A float file (.tflite fp32/fp16, .onnx fp32) whose seeded self-check against the SavedModel failed."""
    onnx = getattr(entry.agreement, "ok", None) is False  # int8's agreement is a measurement (ok None), not a check
    return onnx or (entry.self_check is not None and not entry.self_check.ok)
