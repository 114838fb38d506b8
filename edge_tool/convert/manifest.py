"""manifest.json: what was decided next to what was made, so a result can be reproduced."""

from __future__ import annotations

import datetime as _dt
import json
import platform
from pathlib import Path

from edge_tool import __version__
from edge_tool.env import installed_version

LIBRARIES = ("tensorflow", "tf-keras", "tensorflowjs", "tensorflow-model-optimization", "ai-edge-litert", "numpy")


def library_versions() -> dict[str, str | None]:
    """Installed versions of the libraries that shape an artefact."""
    return {name: installed_version(name) for name in LIBRARIES}


def build_manifest(config, source, calibration_summary, artifacts, timings) -> dict:
    """Assemble the manifest dict (schema documented in README: Convert → manifest.json)."""
    return {
        "schema": "edgetool.convert/1",
        "tool": {"name": "edgetool", "version": __version__},
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "source": source.to_dict(),
        "options": config.to_dict(),
        "calibration": calibration_summary,
        "artifacts": artifacts,
        "versions": {"python": platform.python_version(), **library_versions()},
        "timings_s": timings,
    }


def write_manifest(out_dir: Path, manifest: dict) -> Path:
    """Write ``manifest.json`` in ``out_dir`` and return its path."""
    path = Path(out_dir) / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return path
