"""The LiteRT.js part of a ``demo --litert`` site: the fixed-batch-1 .tflite files, the vendored runtime, its page
modules and import map, and the page config's ``litert`` entry."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from edge_tool.convert import fixed_int8
from edge_tool.core.webdemo import web_demo_dir
from edge_tool.demo import litert_spec as litert_mod
from edge_tool.demo.config import DemoConfig
from edge_tool.demo.model import ModelKind
from edge_tool.demo.vendor import LITERT_BUILDS, pinned_litert_versions, vendored_litert_files
from edge_tool.errors import UsageError
from edge_tool.litert.recipes import resolve_calibration
from edge_tool.parsers.limits import read_tflite

LITERT_MODULE = "engines/litert.js"  # page module of the LiteRT.js engine (--litert sites only)
LITERT_MODULES = (
    LITERT_MODULE,
    "engines/litert-build.js",
    "engines/litert-log.js",
)  # it and what only it imports (its wasm build choice)
LITERT_IMPORT_MAP = {
    "imports": {"@litertjs/core": "./vendor/litert/core.js", "@litertjs/wasm-utils": "./vendor/litert/wasm-utils.js"}
}
APP_SCRIPT_TAG = '  <script type="module" src="app.js"></script>\n'
MODEL_SUBDIR = "model"
VENDOR_SUBDIR = "vendor"


def _litert_model(name: str, label: str, file: str, spec: dict, data: bytes) -> dict:
    """One .tflite the LiteRT.js engine can run: its engine name, label, URL, I/O spec and SHA-256 (pick-cache key)."""
    return {
        "name": name,
        "label": label,
        "modelUrl": f"{MODEL_SUBDIR}/{file}",
        "sha256": hashlib.sha256(data).hexdigest(),
        **spec,
    }


def _litert_config(models: list[dict]) -> dict:
    """demo-config.json's "litert": the first model's fields at the top (as before), the others under "variants"."""
    return {
        "module": LITERT_MODULE,
        **models[0],
        "variants": models[1:],
        "wasmBuilds": {name: f"{VENDOR_SUBDIR}/litert/{script}" for name, script in LITERT_BUILDS.items()},
        "runtime": pinned_litert_versions(),
    }


def precheck_litert(cfg: DemoConfig, kind: ModelKind, classes: int | None, inputs: list[dict]) -> dict[str, Path]:
    """Refuse --litert setups that cannot work before anything is written; return the vendored LiteRT.js files."""
    open_sides = [i["name"] for i in inputs if i.get("resized")]
    if open_sides:
        raise UsageError(
            "--litert runs models whose inputs have a fixed shape (LiteRT.js cannot resize inputs); "
            f"{', '.join(open_sides)} has an open height/width. Drop --litert: the TensorFlow.js engine runs it, "
            "or re-export the model with a fixed input size."
        )
    files = vendored_litert_files()
    if cfg.tflite is not None:
        litert_mod.tflite_spec(Path(cfg.tflite), classes, tuple(i["name"] for i in inputs))
    elif kind is not ModelKind.SAVED_MODEL:
        raise UsageError(
            f"--litert builds its int8 .tflite from a SavedModel, but {cfg.model} is a tfjs graph model; "
            "pass the SavedModel directory, or --tflite FILE with a fixed-batch-1 .tflite."
        )
    elif cfg.calibration is not None:
        fixed_int8.calibration_source(Path(cfg.model), cfg.calibration)
    return files


def litert_modes(cfg: DemoConfig) -> tuple[str, ...]:
    """The .tflite builds of a --litert site: int8 and fp32 with calibration data (--calibration, or
    calibration.npz beside the model), else fp32 alone (LiteRT.js runs float models; int8 needs the data)."""
    return ("int8", "fp32") if resolve_calibration(Path(cfg.model), cfg.calibration) is not None else ("fp32",)


def add_litert(
    cfg: DemoConfig, tmp: Path, files: dict[str, Path], classes: int | None, contracts: tuple = (), names: tuple = ()
) -> dict:
    """Write the LiteRT.js model, runtime, page module and import map into the site; return its page config.
    ``names``: the page's input names (each .tflite input is fed by the one of its name)."""
    built = (
        {"given": read_tflite(cfg.tflite)}
        if cfg.tflite is not None
        else fixed_int8.build_fixed(
            Path(cfg.model), cfg.calibration, litert_modes(cfg), contracts, cfg.trust_model_code, cfg.signature
        )
    )
    models = []
    for mode, data in built.items():
        file = litert_mod.FP32_NAME if mode == "fp32" else litert_mod.TFLITE_NAME
        (tmp / MODEL_SUBDIR / file).write_bytes(data)
        spec = litert_mod.tflite_spec(tmp / MODEL_SUBDIR / file, classes, names)
        label = f"LiteRT.js ({Path(cfg.tflite).name})" if mode == "given" else f"LiteRT.js {mode}"
        models.append(_litert_model("litert" if not models else f"litert-{mode}", label, file, spec, data))
    for name, src in files.items():
        (tmp / VENDOR_SUBDIR / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, tmp / VENDOR_SUBDIR / name)
    for name in LITERT_MODULES:
        shutil.copyfile(web_demo_dir() / name, tmp / name)
    index = (tmp / "index.html").read_text()
    import_map = f'  <script type="importmap">{json.dumps(LITERT_IMPORT_MAP)}</script>\n'
    (tmp / "index.html").write_text(index.replace(APP_SCRIPT_TAG, import_map + APP_SCRIPT_TAG, 1))
    return _litert_config(models)
