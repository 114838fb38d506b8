"""``edgetool convert --from-manifest``: a manifest.json's ``options`` as the ``ConvertConfig`` that reruns the same
conversion (modes, formats and their options, calibration source and selection, seeds), and whether the rerun's
files are byte for byte the ones the manifest records (their sha256).

Paths in ``options`` are as given on the first run's command line. A relative one is read from that run's working
directory, found from where the manifest lies (``output_dir`` is the tail of its folder); when the output was
moved since, from the current directory.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from edge_tool.convert.config import ConvertConfig
from edge_tool.convert.formats import formats_for
from edge_tool.errors import UsageError
from edge_tool.schemas.convert_options import ConvertOptions
from edge_tool.schemas.manifest import FILE, Manifest

PATHS = ("model", "calibration", "train_data", "eval_data", "labels")  # the options naming the user's files


@dataclass(frozen=True)
class FileCheck:
    """One file of the first run's artefacts: its sha256 as recorded, and the rerun's (None: not written)."""

    path: str  # relative to the output directory (``tfjs/model.json``)
    recorded: str | None
    made: str | None

    @property
    def identical(self) -> bool:
        """True when the rerun wrote the same bytes."""
        return self.recorded is not None and self.recorded == self.made


def read_recipe(path: Path) -> Manifest:
    """The manifest at ``path`` (a manifest.json, or the output directory holding one); DataError when unreadable."""
    path = Path(path)
    manifest = Manifest.read(path / FILE if path.is_dir() else path)
    if manifest.lm_options is not None:
        raise UsageError(
            f"--from-manifest reruns TFLite, TF.js, ONNX and micro conversions; {path} records a language model's "
            "(convert --task lm), which it cannot rerun yet. Run that convert command again (its options are the "
            "manifest's options and lm_options) and compare the files' sha256 with the manifest's."
        )
    return manifest


def first_run_dir(manifest_path: Path, output_dir: str) -> Path:
    """The working directory of the run that wrote the manifest (see the module docstring)."""
    where, recorded = Path(manifest_path).resolve().parent, Path(output_dir)
    parts = [p for p in recorded.parts if p != "."]
    if recorded.is_absolute() or ".." in parts or not parts or where.parts[-len(parts) :] != tuple(parts):
        return Path.cwd()
    return where.parents[len(parts) - 1]


def rerun_config(options: ConvertOptions, base: Path, output: Path, force: bool) -> ConvertConfig:
    """The ConvertConfig of ``options`` writing to ``output`` (relative paths read from ``base``)."""
    values = {k: v for k, v in options.to_dict().items() if k not in ("output_dir", "force", "tfjs_quant")}
    for name in PATHS:
        if values.get(name) is not None and not Path(values[name]).is_absolute():
            values[name] = base / values[name]
    if options.tfjs_quant is not None and "tfjs" in formats_for(options.output_format):  # written before 0.1's rework
        values["format_options"] = {"tfjs": {"tfjs_quant": options.tfjs_quant}}
    if not Path(values["model"]).exists():
        raise UsageError(
            f"--from-manifest: the model {options.model!r} the manifest names is not at {values['model']} (relative "
            "paths are read from the first run's directory); run from where the first run ran, or restore the model."
        )
    return ConvertConfig(**values, output_dir=output, force=force)


def recorded_files(manifest: Manifest) -> dict[str, str | None]:
    """Every artefact file the manifest records -> its sha256 (a directory artefact's files one by one)."""
    out: dict[str, str | None] = {}
    for entry in manifest.artifacts:
        if entry.files:
            out.update({f"{entry.path}/{name}": f.sha256 for name, f in entry.files.items()})
        else:
            out[entry.path] = entry.sha256
    return out


def _sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def compare(first: Manifest, rerun: Manifest, out_dir: Path) -> tuple[FileCheck, ...]:
    """Each file of either run, the first run's recorded sha256 beside the sha256 of the bytes the rerun wrote."""
    recorded, made = recorded_files(first), recorded_files(rerun)
    names = [*recorded, *(name for name in made if name not in recorded)]
    return tuple(FileCheck(name, recorded.get(name), _sha256(Path(out_dir) / name)) for name in names)
