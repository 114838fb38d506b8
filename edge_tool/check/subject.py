"""What ``check`` was given (a model, a .tflite, a TFJS graph model) and the artefacts each target needs from it.

A model (SavedModel dir, .keras/.h5) is converted on demand into a temp dir, once per kind: fp32 and int8 with
edgetool's own converter (``--allow-select-tf-ops``, so ops the builtin set lacks are named as Flex ops rather
than stopping the conversion), the fixed-batch int8 .tflite that ``demo --litert`` ships, and a TFJS graph model.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.calibration.safe_open import open_regular
from edge_tool.check.base import Unavailable
from edge_tool.check.synthetic import SAMPLES, write_synthetic_calibration
from edge_tool.convert.api import convert
from edge_tool.convert.config import ConvertConfig
from edge_tool.convert.fixed_int8 import build_fixed_int8
from edge_tool.convert.formats import FORMATS
from edge_tool.convert.inputs import prepare_inputs
from edge_tool.convert.source import check_keras_file, prepare_source
from edge_tool.core.env import import_tf
from edge_tool.errors import ConversionError, ModelError, UsageError
from edge_tool.litert.recipes import resolve_calibration
from edge_tool.models.signatures import SERVING, saved_model_signature
from edge_tool.parsers.limits import check_signature, check_tflite_file, read_tflite
from edge_tool.parsers.tfjs_manifest import read_graph_model_json
from edge_tool.parsers.tflite_model import summarize_tflite
from edge_tool.trust.guard import require_safe_model


@dataclass
class Subject:
    """The input of a check run and a cache of artefacts made from it."""

    path: Path
    kind: str  # "model" | "tflite" | "tfjs"
    calibration: Path | None = None
    contract: object | None = None  # ContractOptions (--input-*): how image calibration data becomes input
    work: Path | None = None
    trust_model_code: bool = False  # --trust-model-code: convert and run a model that carries code
    signature: str | None = None  # --signature: the SavedModel signature checked (None: serving_default)
    _made: dict = field(default_factory=dict)
    synthetic_calibration: bool = False  # the int8 builds were calibrated on synthetic data (check.synthetic)

    @property
    def label(self) -> str:
        """The path as given (for reports)."""
        return str(self.path)

    def artefact(self, kind: str) -> Path:
        """The artefact of ``kind`` (fp32, int8, int8-b1, tfjs) for this subject; Unavailable if it cannot be made."""
        if self.kind == "tflite" and kind in ("fp32", "int8", "int8-b1"):
            return self.path
        if self.kind == "tfjs" and kind == "tfjs":
            return self.path
        if self.kind != "model":
            wanted = "a TFJS graph model (or the SavedModel)" if kind == "tfjs" else "a .tflite (or the SavedModel)"
            raise UsageError(f"this target checks {wanted}; {self.path} is a {self.kind} artefact.")
        if kind not in self._made:
            try:
                self._made[kind] = (_MAKERS[kind](self), None)
            except (ConversionError, ModelError) as exc:
                self._made[kind] = (None, str(exc))
        made, error = self._made[kind]
        if error is not None:
            raise Unavailable(error)
        return made

    def model_dir(self) -> Path:
        """The SavedModel the artefacts are made from: the directory given, or — for a .keras/.h5 file — the
        SavedModel convert exports from it (``convert.source``), made once per run and shared by every target."""
        if self.path.is_dir():
            return self.path
        if "source" not in self._made:
            try:
                work = self.temp("source")
                work.mkdir()
                source = prepare_source(
                    self.path, work, trust_model_code=self.trust_model_code, signature_key=self.signature
                )
                self._made["source"] = (source.saved_model, None)
            except ModelError as exc:
                self._made["source"] = (None, str(exc))
        made, error = self._made["source"]
        if error is not None:
            raise Unavailable(error)
        return made

    def int8_calibration(self) -> Path:
        """Data for the int8 builds: --calibration, else calibration.npz beside the SavedModel, else synthetic
        samples (``check.synthetic``; ``synthetic_calibration`` is then set and the report says so)."""
        found = resolve_calibration(self.model_dir(), self.calibration)
        if found is not None:
            return found
        if "synthetic" not in self._made:
            self._made["synthetic"] = write_synthetic_calibration(
                self.model_dir(), self.temp("synthetic.npz"), self.signature
            )
            self.synthetic_calibration = True
        return self._made["synthetic"]

    def temp(self, name: str) -> Path:
        """A fresh path inside this run's scratch dir."""
        if self.work is None:
            self.work = Path(tempfile.mkdtemp(prefix="edgetool-check-"))
        return self.work / name


def classify(
    path: Path, calibration: Path | None, trust_model_code: bool = False, signature: str | None = None
) -> Subject:
    """A Subject for ``path`` (of a SavedModel: its ``signature``, default serving_default); ModelError naming what
    was expected when it is none of the accepted kinds, and ModelCodeRefused when it carries code
    (``edge_tool.trust``) and ``trust_model_code`` is not set."""
    subject = _classify(Path(path), calibration, signature)
    if subject.kind != "tfjs":
        require_safe_model(subject.path, trust_model_code, "check", signature)
    subject.trust_model_code, subject.signature = trust_model_code, signature
    return subject


def _classify(path: Path, calibration: Path | None, signature: str | None = None) -> Subject:
    if not path.exists():
        raise ModelError(
            f"{path} does not exist; expected a SavedModel directory, a .keras/.h5 file, a .tflite file "
            "or a TFJS graph-model directory."
        )
    if path.is_dir() and (path / "model.json").is_file():
        read_graph_model_json(path, "check")
        return Subject(path, "tfjs", calibration)
    if path.is_file() and path.suffix.lower() in (".keras", ".h5"):
        check_keras_file(path)  # a zip bomb or a damaged archive is refused once, not once per target
        return Subject(path, "model", calibration)
    if path.is_dir():
        # the model itself must be usable (a serving signature, inputs within the tensor limit) before any target
        # converts it: a problem of the model is one refusal (exit 2), not a "will not run" row per target
        check_signature(saved_model_signature(path, signature or SERVING), path)
        return Subject(path, "model", calibration)
    _require_tflite(path)
    check_tflite_file(path)  # every target would allocate its tensors: one refusal, not a failed row per target
    return Subject(path, "tflite", calibration)


MAX_FLATBUFFER = 2 << 30  # FlatBuffers cannot address more


def _require_tflite(path: Path) -> None:
    """ModelError unless ``path`` is a TFLite flatbuffer whose operators and tensors can be read."""
    what = "a SavedModel directory, a .keras/.h5 file, a .tflite file or a TFJS graph-model directory"
    with open_regular(path, what, ModelError) as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
    if len(head) < 8 or head[4:8] != b"TFL3" or size > MAX_FLATBUFFER:
        raise ModelError(
            f"{path} is not a TFLite flatbuffer (no TFL3 identifier, or over 2 GiB); expected a "
            "SavedModel directory, a .keras/.h5 file, a .tflite file or a TFJS graph-model directory."
        )

    data = read_tflite(path)  # its indices checked: a damaged one is refused naming what is out of range
    try:
        summarize_tflite(data)
    except Exception as exc:
        raise ModelError(
            f"{path} has a TFL3 header but its flatbuffer cannot be read ({type(exc).__name__}: "
            f"{str(exc)[:200]}); it is truncated or damaged."
        ) from None


def _convert(subject: Subject, mode: str, output_format: str = "tflite") -> Path:
    """The artefact ``convert`` writes for ``mode`` in ``output_format`` (the same build a user's convert runs)."""
    calibration = subject.int8_calibration() if mode == "int8" else subject.calibration
    kind = mode if output_format == "tflite" else output_format
    config = ConvertConfig(
        model=subject.model_dir(),
        output_dir=subject.temp(kind),
        modes=(mode,),
        output_format=output_format,
        calibration=calibration,
        allow_select_tf_ops=output_format == "tflite",
        samples=SAMPLES if subject.synthetic_calibration else ConvertConfig.samples,
        trust_model_code=subject.trust_model_code,
        signature=subject.signature,
        **_contract_options(subject),
    )
    result = convert(config)
    return result.path_of(result.artifacts[0])


def _contract_options(subject: Subject) -> dict:
    c = subject.contract
    return {} if c is None else {"input_range": c.input_range, "input_mean": c.input_mean, "input_std": c.input_std}


def _contracts(subject: Subject, source) -> tuple:
    """The input contract convert would resolve for this model (calibration read through it)."""
    config = ConvertConfig(
        model=subject.model_dir(),
        output_dir=subject.temp("int8-b1-unused"),
        modes=("int8",),
        calibration=subject.int8_calibration(),
        metadata=False,
        trust_model_code=subject.trust_model_code,
        signature=subject.signature,
        **_contract_options(subject),
    )
    return prepare_inputs(import_tf(), config, source).contracts


def _fixed_batch_int8(subject: Subject) -> Path:
    source = prepare_source(
        subject.model_dir(),
        subject.temp("int8-b1-src"),
        trust_model_code=subject.trust_model_code,
        signature_key=subject.signature,
    )
    saved = source.saved_model
    out = subject.temp("int8-b1.tflite")  # a model the converter refuses: ConversionError (run_converter), a finding
    out.write_bytes(
        build_fixed_int8(
            saved, subject.int8_calibration(), _contracts(subject, source), subject.trust_model_code, subject.signature
        )
    )
    return out


def _makers() -> dict:
    """Artefact kind -> how to make it: the fp32/int8 .tflite, the fixed-batch int8 of ``demo --litert``, and one
    per registered format written once per run (tfjs), each by ``convert`` itself."""
    once = {
        name: (lambda s, n=name: _convert(s, "fp32", n))
        for name, spec in FORMATS.items()
        if not spec.per_mode and spec.extends is None
    }
    return {
        "fp32": lambda s: _convert(s, "fp32"),
        "int8": lambda s: _convert(s, "int8"),
        "int8-b1": _fixed_batch_int8,
        **once,
    }


_MAKERS = _makers()
