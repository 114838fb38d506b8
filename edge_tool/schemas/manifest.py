"""``manifest.json`` as frozen dataclasses: ``to_dict`` gives the file's exact keys and order, ``from_dict``
validates (schema ``manifest.schema.json``) before building."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_tool.schemas import check, read_json

SCHEMA = "edgetool.convert/1"
FILE = "manifest.json"


@dataclass(frozen=True)
class ManifestArtifact:
    """One artefact entry; the tflite-only fields are None on the tfjs and onnx entries, and so on."""

    path: str
    format: str
    quant: str
    size_bytes: int
    seconds: float
    sha256: str | None = None
    tensors: dict | None = None
    state_warning: str | None = None
    metadata: dict | None = None
    files: dict | None = None
    qat: dict | None = None
    int16x8: dict | None = None
    micro: dict | None = None
    self_check: dict | None = None
    fixed_batch: dict | None = None
    opset: int | None = None  # onnx: the ONNX opset of the default domain
    agreement: dict | None = None  # onnx: the file in ONNX Runtime against the SavedModel
    quantization: dict | None = None  # onnx int8: how quantize_static quantized it

    def to_dict(self) -> dict:
        """The entry as written (tflite: sha256, tensors, state_warning, metadata always present; tfjs: files;
        onnx: sha256, opset, agreement, and quantization for int8)."""
        head = {"path": self.path, "format": self.format, "quant": self.quant, "size_bytes": self.size_bytes}
        if self.format == "tfjs":
            return {**head, "files": self.files, "seconds": self.seconds}
        if self.format == "onnx":
            d = {**head, "sha256": self.sha256, "seconds": self.seconds, "opset": self.opset,
                 "agreement": self.agreement}
            return d if self.quantization is None else {**d, "quantization": self.quantization}
        d = {**head, "sha256": self.sha256, "seconds": self.seconds, "tensors": self.tensors,
             "state_warning": self.state_warning, "metadata": self.metadata}
        d.update({k: v for k, v in (("self_check", self.self_check), ("qat", self.qat), ("int16x8", self.int16x8),
                                    ("micro", self.micro), ("fixed_batch", self.fixed_batch)) if v is not None})
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ManifestArtifact:
        """Build from a validated entry (see Manifest.from_dict)."""
        return cls(**{name: d.get(name) for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Manifest:
    """What ``edgetool convert`` decided and made (schema ``edgetool.convert/1``)."""

    schema: str
    tool: dict
    created: str
    source: dict
    options: dict
    calibration: dict | None
    artifacts: tuple[ManifestArtifact, ...]
    versions: dict
    timings_s: dict
    failed: dict | None = None  # only when modes failed and the run kept going
    input_contract: list | None = None  # one record per image input (calibration.contract.ImageContract.to_dict)

    def to_dict(self) -> dict:
        """manifest.json content."""
        d = {"schema": self.schema, "tool": self.tool, "created": self.created, "source": self.source,
             "options": self.options, "calibration": self.calibration,
             "artifacts": [a.to_dict() for a in self.artifacts], "versions": self.versions,
             "timings_s": self.timings_s}
        if self.input_contract is not None:
            d["input_contract"] = self.input_contract
        if self.failed is not None:
            d["failed"] = self.failed
        return d

    @classmethod
    def from_dict(cls, d, what: str = FILE) -> Manifest:
        """Validate ``d`` against the published schema and build; DataError naming ``what`` otherwise."""
        check(d, "manifest", what)
        fields = {name: d.get(name) for name in cls.__dataclass_fields__}
        fields["artifacts"] = tuple(ManifestArtifact.from_dict(a) for a in d["artifacts"])
        return cls(**fields)

    @staticmethod
    def claims(doc) -> bool:
        """True when ``doc`` says it is an edgetool manifest (any version): a JSON object whose ``schema`` is
        ``edgetool.convert/…``. A manifest.json without that is another tool's file."""
        return isinstance(doc, dict) and isinstance(doc.get("schema"), str) and doc["schema"].startswith("edgetool.convert/")

    @classmethod
    def read(cls, path: Path) -> Manifest:
        """Read and validate a manifest.json (a possibly hostile file)."""
        return cls.from_dict(read_json(path, "manifest"), str(path))

    def artifact(self, name: str) -> ManifestArtifact | None:
        """The entry whose ``path`` is ``name`` (a file name in the manifest's directory), if any."""
        return next((a for a in self.artifacts if a.path == name), None)
