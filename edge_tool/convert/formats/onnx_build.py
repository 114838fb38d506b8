"""How --format onnx builds: tf2onnx's float model of the prepared SavedModel (exported once per run), ONNX
Runtime's int8 QDQ of it, the self-check (``onnx_check``) and the manifest entry (loaded by ``formats.onnx`` when a
conversion runs: its helpers are numpy-backed, and ``--help`` reads the registry)."""

from __future__ import annotations

import logging
from pathlib import Path

from edge_tool.convert.formats import onnx_check
from edge_tool.convert.formats.entry import file_entry
from edge_tool.convert.formats.registry import FormatJob, FormatSpec, artifact_name
from edge_tool.convert.modes import QuantMode
from edge_tool.core.steps import console, step
from edge_tool.core.textsafe import term
from edge_tool.errors import ConversionError, UsageError
from edge_tool.schemas.format_records import OnnxQuantization
from edge_tool.schemas.manifest import ManifestArtifact

# opset 17: LayerNormalization as one op; read by ONNX Runtime (CPU, Mobile, Web), TensorRT 8.6+, OpenVINO
OPSET = 17
MAX_PROTO = (2 << 30) - 1  # protobuf cannot serialize a larger message (ONNX then needs external data)


def build(job: FormatJob, mode: QuantMode, spec: FormatSpec) -> ManifestArtifact:
    """``<model>_<mode>.onnx``: tf2onnx's float model (made once per run), quantized for int8, then self-checked."""
    ctx = job.ctx
    path = job.out_dir / artifact_name(ctx.config.model, mode.value, ".onnx")
    with step(f"convert onnx {mode.value}") as timed:
        data = _exported(job, spec)
        if mode is QuantMode.INT8:
            data = _quantize(data, ctx, job.work / "onnx-int8", spec)
        agreement = onnx_check.agreement(data, ctx, mode.value)
        path.write_bytes(data)
        timed.outputs.append(path)
    console.print(f"{term(path.name)}: {term(onnx_check.describe(agreement))}")
    if agreement.ok is False:
        console.print(
            f"[yellow]warning:[/] {term(path.name)} does not compute what the SavedModel computes "
            f"(max abs error {agreement.max_abs_error}, float rounding explains at most "
            f"{agreement.tolerance:.3g}): a tf2onnx/ONNX Runtime problem with this model. Measure it "
            "with edgetool eval before shipping it, or ship --format tflite."
        )
    quantization = None
    if mode is QuantMode.INT8:  # per channel, symmetric int8 weights, int8 activations, MinMax (see _quantize)
        quantization = OnnxQuantization(samples=sum(1 for _ in ctx.representative_dataset()))
    return file_entry(
        path,
        spec.name,
        mode.value,
        data,
        timed.seconds,
        opset=_opset(data),
        agreement=agreement,
        quantization=quantization,
    )


def _exported(job: FormatJob, spec: FormatSpec) -> bytes:
    """The float ONNX model of this run: exported once, shared by fp32 and int8 (a refusal too, said once)."""
    cache = job.cache
    if spec.name not in cache:
        try:
            cache[spec.name] = _export(job.ctx, spec)
        except ConversionError as exc:
            cache[spec.name] = exc
            raise
    if isinstance(cache[spec.name], ConversionError):
        raise ConversionError("the float ONNX model it is quantized from could not be built (said above).")
    return cache[spec.name]


def _missing_extra(exc: ImportError, spec: FormatSpec) -> UsageError:
    return UsageError(
        spec.missing_extra()
        or (
            f"--format onnx needs the optional 'onnx' extra, which does not import here ({type(exc).__name__}: {exc}): "
            "pip install 'edgetool[onnx]' (tf2onnx, onnx, onnxruntime, a protobuf TensorFlow accepts), then run again."
        )
    )


class _Captured(logging.Handler):
    """tf2onnx's error log lines during one export (it logs, rather than raises, the nodes it cannot convert)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage().splitlines()[0])


def _export(ctx, spec: FormatSpec) -> bytes:
    """The prepared SavedModel's signature as an ONNX model (opset OPSET); ConversionError naming what tf2onnx
    could not convert."""
    try:
        from tf2onnx import convert as t2o
        from tf2onnx import tf_loader
    except ImportError as exc:
        raise _missing_extra(exc, spec) from None
    log = logging.getLogger("tf2onnx")
    captured, level, propagate = _Captured(), log.level, log.propagate
    log.addHandler(captured)
    log.setLevel(logging.ERROR)
    log.propagate = False  # what it cannot convert is said once, by the refusal below
    try:
        graph, inputs, outputs, tables, renames = tf_loader.from_saved_model(
            str(ctx.source.saved_model),
            None,
            None,
            tag=["serve"],
            signatures=[ctx.source.signature.key],
            return_initialized_tables=True,
            return_tensors_to_rename=True,
        )
        with ctx.tf.device("/cpu:0"):
            model, _ = t2o._convert_common(
                graph,
                name=ctx.source.original.name,
                continue_on_error=False,
                opset=OPSET,
                input_names=inputs,
                output_names=outputs,
                tensors_to_rename=renames,
                initialized_tables=tables,
            )
    except (
        ValueError,
        KeyError,
        IndexError,
        NotImplementedError,
        RuntimeError,
        AssertionError,
        ctx.tf.errors.OpError,
    ) as exc:  # tf2onnx's make_sure and its op handlers; a TypeError is ours
        raise ConversionError(_failed(ctx, exc, captured.lines)) from None
    finally:
        log.removeHandler(captured)
        log.setLevel(level)
        log.propagate = propagate
    unknown = _unknown_ops(model)
    if unknown:
        raise ConversionError(_unsupported(ctx, unknown))
    if model.ByteSize() > MAX_PROTO:
        raise ConversionError(
            f"{ctx.source.original} is over 2 GiB as ONNX, which needs ONNX external data files; "
            "edgetool writes single-file models only. Use --format tflite, or tf2onnx's "
            "--large_model yourself."
        )
    return model.SerializeToString()


def _unknown_ops(model) -> list[str]:
    """Op types no ONNX opset defines (com.microsoft aside): the TensorFlow ops tf2onnx left unconverted."""
    from onnx import defs

    graphs, seen = [model.graph], set()
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            for attr in node.attribute:  # a Loop/If/Scan body is a graph of its own
                graphs += ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
            if node.domain != "com.microsoft" and not defs.has(node.op_type, node.domain or ""):
                seen.add(node.op_type if not node.domain else f"{node.domain}.{node.op_type}")
    return sorted(seen)


def _unsupported(ctx, ops: list[str]) -> str:
    return (
        f"{ctx.source.original} uses TensorFlow ops tf2onnx (1.17, opset {OPSET}) has no ONNX conversion for: "
        f"{', '.join(ops)}. Replace them in the model with ops ONNX has, or ship a format that runs them: "
        "--format tflite (ops its builtin set lacks run with --allow-select-tf-ops) or --format tfjs."
    )


def _failed(ctx, exc: Exception, lines: list[str]) -> str:
    where = f" ({'; '.join(dict.fromkeys(lines))[:400]})" if lines else ""  # tf2onnx names the failing nodes
    detail = " ".join(str(exc).split())[:300] or type(exc).__name__
    return (
        f"tf2onnx could not convert {ctx.source.original} to ONNX opset {OPSET}{where}: {detail}. The model "
        "needs an op or shape ONNX export does not handle; --format tflite or --format tfjs may still work."
    )


def _quantize(fp32: bytes, ctx, work: Path, spec: FormatSpec) -> bytes:
    """int8 QDQ of ``fp32`` by ONNX Runtime's quantize_static, calibrated on the run's calibration selection."""
    try:
        from onnxruntime.quantization import (
            CalibrationDataReader,
            CalibrationMethod,
            QuantFormat,
            QuantType,
            quantize_static,
        )
        from onnxruntime.quantization.shape_inference import quant_pre_process
    except ImportError as exc:
        raise _missing_extra(exc, spec) from None
    names, samples = onnx_check.input_names(fp32), ctx.representative_dataset

    class Reader(CalibrationDataReader):
        """The TFLite int8 build's calibration samples, one per step, keyed by the ONNX input names."""

        def __init__(self) -> None:
            self._samples = iter(samples())

        def get_next(self) -> dict | None:
            sample = next(self._samples, None)
            return None if sample is None else onnx_check.feed_by_name(sample, names)

    work.mkdir(parents=True, exist_ok=True)
    src, pre, out = work / "fp32.onnx", work / "pre.onnx", work / "int8.onnx"
    src.write_bytes(fp32)
    # ONNX shape inference only: ORT's graph optimization would declare its own op domains in the file
    quant_pre_process(str(src), str(pre), skip_optimization=True, skip_symbolic_shape=True)
    quantize_static(
        str(pre),
        str(out),
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
    )
    return out.read_bytes()


def _opset(data: bytes) -> int:
    """The default-domain opset the written file declares (quantize_static may raise the exporter's)."""
    import onnx

    return next(o.version for o in onnx.load_from_string(data).opset_import if o.domain in ("", "ai.onnx"))
