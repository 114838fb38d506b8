"""manifest.json: what was decided next to what was made, so a result can be reproduced."""

from __future__ import annotations

import datetime as _dt
import json
import platform
from pathlib import Path

from edge_tool import __version__
from edge_tool.calibration.contract import ImageContract
from edge_tool.calibration.serial import from_dict
from edge_tool.convert.formats import FORMATS
from edge_tool.core.env import installed_version
from edge_tool.schemas.convert_options import ConvertOptions
from edge_tool.schemas.manifest import FILE, SCHEMA, CalibrationRecord, Manifest, ManifestArtifact
from edge_tool.schemas.records import ToolInfo

LIBRARIES = ("tensorflow", "tf-keras", "tensorflow-model-optimization", "ai-edge-litert", "numpy")


def library_versions(formats: tuple[str, ...] = ()) -> dict[str, str | None]:
    """Installed versions of the libraries that shape an artefact (those of ``formats``' extras too)."""
    extra = [lib for name in formats for lib in FORMATS[name].libraries if lib not in LIBRARIES]
    versions = {name: installed_version(name) for name in (*LIBRARIES, *dict.fromkeys(extra))}
    for name in formats:  # what a format is written for, where edgetool writes it itself (tfjs)
        versions.update(FORMATS[name].runtime_versions)
    return versions


def build_manifest(
    config,
    source,
    calibration_summary: dict | None,
    artifacts: list[ManifestArtifact],
    timings: dict,
    failed: dict | None = None,
    input_contract: list[dict] | None = None,
) -> Manifest:
    """Assemble the manifest (schema: edge_tool/schemas/manifest.schema.json, described in docs/schemas.md) around
    the entries the format builders made."""
    return Manifest(
        schema=SCHEMA,
        tool=ToolInfo("edgetool", __version__),
        created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        source=source.record,
        options=from_dict(ConvertOptions, config.to_dict(), strict=True),  # a ConvertConfig field it lacks: a bug
        calibration=None if calibration_summary is None else from_dict(CalibrationRecord, calibration_summary),
        artifacts=tuple(artifacts),
        versions={"python": platform.python_version(), **library_versions(config.formats)},
        timings_s=timings,
        failed=failed or None,
        input_contract=tuple(from_dict(ImageContract, c, strict=True) for c in input_contract or ()),
    )


def write_manifest(out_dir: Path, manifest: Manifest) -> Path:
    """Write ``manifest.json`` in ``out_dir`` and return its path."""
    path = Path(out_dir) / FILE
    path.write_text(json.dumps(manifest.to_dict(), indent=2, sort_keys=False) + "\n")
    return path
