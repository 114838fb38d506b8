"""Build the static offline PWA site of ``edgetool demo`` from a tfjs graph model or a SavedModel."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool import __version__
from edge_tool.demo import icons as icons_mod
from edge_tool.demo import litert as litert_mod
from edge_tool.demo import model as model_mod
from edge_tool.demo.footprint import footprint, gzip_size, on_demand_groups
from edge_tool.demo.config import MAX_TITLE, DemoConfig  # noqa: F401  (importable from here, as before)
from edge_tool.demo.model import ModelKind
from edge_tool.demo.vendor import (
    LITERT_BUILDS,
    pinned_litert_versions,
    pinned_versions,
    vendored_files,
    vendored_litert_files,
    web_demo_dir,
)
from edge_tool.errors import ModelError, UsageError
from edge_tool.fsutil import MARKER, atomic_dir, check_output_dir, resolve_inside
from edge_tool.textsafe import html_text

# The page: index.html, its style and its ES modules (app.js is the entry module; no build step).
TEMPLATE_FILES = ("index.html", "app.css", "app.js", "main.js", "api.js", "config.js", "postprocess.js",
                  "engines/engine.js", "engines/pick-cache.js", "engines/tfjs.js", "engines/tfjs-backends.js",
                  "ui/dom.js", "ui/camera.js", "ui/controls.js", "ui/form.js", "ui/pad.js", "ui/pixels.js", "ui/resample.js",
                  "ui/results.js")
SW_TEMPLATE = "sw.template.js"
LITERT_MODULE = "engines/litert.js"  # page module of the LiteRT.js engine (--litert sites only)
LITERT_MODULES = (LITERT_MODULE, "engines/litert-build.js", "engines/litert-log.js")  # it and what only it imports (its wasm build choice)
LITERT_IMPORT_MAP = {"imports": {"@litertjs/core": "./vendor/litert/core.js",
                                 "@litertjs/wasm-utils": "./vendor/litert/wasm-utils.js"}}
APP_SCRIPT_TAG = '  <script type="module" src="app.js"></script>\n'
CONFIG_NAME = "demo-config.json"
MANIFEST_NAME = "manifest.webmanifest"
SW_NAME = "sw.js"
MARKER_FILES = ("index.html", CONFIG_NAME, MANIFEST_NAME, SW_NAME)  # what makes a dir a demo site
MODEL_SUBDIR = "model"
VENDOR_SUBDIR = "vendor"
ICON_SUBDIR = "icons"
TOP_K = 3
DRAW = {"foreground": "#ffffff", "background": "#000000", "strokeFraction": 0.09}  # digits: bright on dark


@dataclass(frozen=True)
class SiteReport:
    """What was built."""

    site: Path
    model_kind: ModelKind
    input_kind: str
    cache_version: str
    files: tuple[str, ...] = field(default_factory=tuple)
    total_bytes: int = 0  # every file of the site
    first_visit_bytes: int = 0  # what the service worker precaches plus the largest build of each on-demand group
    first_visit_gzip_bytes: int = 0  # the same, served gzipped (edgetool serve, static hosts)


def site_files(site: Path) -> list[str]:
    """Every file of the site (edgetool's output marker aside) as sorted '/'-separated paths relative to the root."""
    site = Path(site)
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file() and p.name != MARKER)


def content_version(site: Path, exclude: tuple[str, ...] = (SW_NAME,)) -> str:
    """Hash of every site file's path and bytes (sw.js excluded): the service worker's cache version."""
    digest = hashlib.sha256()
    for rel in site_files(site):
        if rel in exclude:
            continue
        digest.update(rel.encode() + b"\0" + hashlib.sha256((Path(site) / rel).read_bytes()).digest())
    return digest.hexdigest()[:16]


def is_demo_site(path: Path) -> bool:
    """True when ``path`` holds the files every edgetool demo site has."""
    return Path(path).is_dir() and all((Path(path) / name).is_file() for name in MARKER_FILES)


def _default_labels_path(model: Path) -> Path | None:
    """labels.txt beside the model, which must really be inside the model dir: its text is published in the site."""
    candidate = Path(model) / "labels.txt"
    if not (candidate.is_file() or candidate.is_symlink()):
        return None
    return resolve_inside(Path(model), "labels.txt", Path(model), UsageError)


def _embedded_labels(cfg: DemoConfig, kind: ModelKind) -> tuple[list[str] | None, str]:
    """Labels the model carries: model.json's userDefinedMetadata, else the --tflite file's TFLite metadata."""
    from edge_tool.metadata.reader import read_metadata  # noqa: PLC0415
    from edge_tool.metadata.tfjs import labels_from_model_json  # noqa: PLC0415

    if kind is ModelKind.TFJS:
        model_json = Path(cfg.model) / "model.json"
        meta, _, _ = model_mod.read_tfjs_model(Path(cfg.model))
        found = labels_from_model_json(meta, str(model_json))
        if found:
            return found, str(model_json)
    if cfg.litert and cfg.tflite is not None:
        embedded = read_metadata(Path(cfg.tflite).read_bytes())
        if embedded is not None and embedded.labels:
            return list(embedded.labels), f"{cfg.tflite} (TFLite metadata)"
    return None, ""


def _labels(cfg: DemoConfig, kind: ModelKind, classes: int | None) -> list[str]:
    """--labels, else the labels embedded in the model, else labels.txt beside it, else none."""
    if cfg.labels is not None:
        return model_mod.read_labels(cfg.labels, classes)
    found, origin = _embedded_labels(cfg, kind)
    if found is not None:
        if classes is not None and len(found) != classes:
            raise ModelError(f"{origin} carries {len(found)} labels but the model outputs {classes} classes; "
                             "pass --labels to override.")
        return found
    beside = _default_labels_path(Path(cfg.model))
    return model_mod.read_labels(beside, classes) if beside else []


def _precheck_saved_model(model: Path) -> tuple:
    from edge_tool.modelio import saved_model_signature  # noqa: PLC0415

    sig = saved_model_signature(model)
    ins = tuple(model_mod.Tensor(t.name, t.name, t.dtype, tuple(t.shape or ())) for t in sig.inputs)
    outs = tuple(model_mod.Tensor(t.name, t.name, t.dtype, tuple(t.shape or ())) for t in sig.outputs)
    return ins, outs


def _place_model(cfg: DemoConfig, kind: ModelKind, dest: Path) -> None:
    if kind is ModelKind.SAVED_MODEL:
        from edge_tool.convert.tfjs import export_tfjs  # noqa: PLC0415

        export_tfjs(Path(cfg.model), dest)
        return
    meta, _, _ = model_mod.read_tfjs_model(Path(cfg.model))
    dest.mkdir(parents=True)
    for name in ["model.json", *model_mod.weight_files(Path(cfg.model), meta)]:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(cfg.model) / name, dest / name)


def _manifest(title: str, icon_entries: list[dict]) -> dict:
    short = title if len(title) <= 12 else "edgetool"
    return {
        "id": "./", "name": title, "short_name": short,
        "description": "A model converted by edgetool, running offline in the browser with TensorFlow.js.",
        "start_url": "./", "scope": "./", "display": "standalone",
        "theme_color": icons_mod.THEME, "background_color": icons_mod.THEME, "icons": icon_entries,
    }


def _page_config(title: str, inputs: list[dict], outputs: list[dict], labels: list[str], kind: ModelKind) -> dict:
    """demo-config.json: every input and output head; ``input``/``output`` are the first input and the ranked head."""
    return {
        "title": title, "generator": f"edgetool {__version__}", "sourceFormat": kind.value,
        "modelUrl": f"{MODEL_SUBDIR}/model.json", "wasmPath": f"{VENDOR_SUBDIR}/",
        "runtime": pinned_versions(), "inputs": inputs, "outputs": outputs, "input": inputs[0], "output": outputs[0],
        "labels": labels, "topK": min(TOP_K, len(labels)) if labels else TOP_K, "draw": dict(DRAW),
    }


def _litert_model(name: str, label: str, file: str, spec: dict, data: bytes) -> dict:
    """One .tflite the LiteRT.js engine can run: its engine name, label, URL, I/O spec and SHA-256 (pick-cache key)."""
    return {"name": name, "label": label, "modelUrl": f"{MODEL_SUBDIR}/{file}", "sha256": hashlib.sha256(data).hexdigest(),
            **spec}


def _litert_config(models: list[dict]) -> dict:
    """demo-config.json's "litert": the first model's fields at the top (as before), the others under "variants"."""
    return {"module": LITERT_MODULE, **models[0], "variants": models[1:],
            "wasmBuilds": {name: f"{VENDOR_SUBDIR}/litert/{script}" for name, script in LITERT_BUILDS.items()},
            "runtime": pinned_litert_versions()}


def _precheck_litert(cfg: DemoConfig, kind: ModelKind, classes: int | None, inputs: list[dict]) -> dict[str, Path]:
    """Refuse --litert setups that cannot work before anything is written; return the vendored LiteRT.js files."""
    if len(inputs) != 1 or inputs[0].get("resized"):
        raise UsageError("--litert runs models with one input of fixed shape (LiteRT.js cannot resize inputs); "
                         f"this one has {len(inputs)} input(s) ({', '.join(i['name'] for i in inputs)})"
                         f"{' with an open height/width' if inputs[0].get('resized') else ''}. Drop --litert: the "
                         "TensorFlow.js engine runs it.")
    files = vendored_litert_files()
    if cfg.tflite is not None:
        litert_mod.tflite_spec(Path(cfg.tflite), classes)
    elif kind is not ModelKind.SAVED_MODEL:
        raise UsageError(f"--litert builds its int8 .tflite from a SavedModel, but {cfg.model} is a tfjs graph model; "
                         "pass the SavedModel directory, or --tflite FILE with a fixed-batch-1 .tflite.")
    else:
        litert_mod.calibration_source(Path(cfg.model), cfg.calibration)
    return files


def _add_litert(cfg: DemoConfig, tmp: Path, files: dict[str, Path], classes: int | None) -> dict:
    """Write the LiteRT.js model, runtime, page module and import map into the site; return its page config."""
    if cfg.tflite is not None:
        built = {"given": Path(cfg.tflite).read_bytes()}
    else:
        built = litert_mod.build_fixed(Path(cfg.model), cfg.calibration, ("int8", "fp32"))
    models = []
    for mode, data in built.items():
        file = litert_mod.FP32_NAME if mode == "fp32" else litert_mod.TFLITE_NAME
        (tmp / MODEL_SUBDIR / file).write_bytes(data)
        spec = litert_mod.tflite_spec(tmp / MODEL_SUBDIR / file, classes)
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


def write_service_worker(site: Path) -> str:
    """Write sw.js precaching every file of ``site`` (itself included) but the on-demand builds, which it caches when
    first fetched; return the cache version."""
    version = content_version(site)
    files = sorted({*site_files(site), SW_NAME})
    lazy = sorted(rel for group in on_demand_groups(files) for build in group for rel in build)
    text = (web_demo_dir() / SW_TEMPLATE).read_text()
    text = text.replace("'__VERSION__'", json.dumps(version)).replace("__ON_DEMAND__", json.dumps(lazy, indent=2))
    text = text.replace("__PRECACHE__", json.dumps([f for f in files if f not in lazy], indent=2))
    (Path(site) / SW_NAME).write_text(text)
    return version


def build_site(cfg: DemoConfig) -> SiteReport:
    """Assemble the demo site into ``cfg.output`` atomically; return a SiteReport."""
    check_output_dir(Path(cfg.output), cfg.force, cfg.inputs)
    runtime = vendored_files()
    kind = model_mod.detect_model(Path(cfg.model))
    if kind is ModelKind.SAVED_MODEL:
        inputs, outputs = _precheck_saved_model(Path(cfg.model))
    else:
        _, inputs, outputs = model_mod.read_tfjs_model(Path(cfg.model))
    size = model_mod.parse_input_size(cfg.input_size) if cfg.input_size else None
    input_specs = model_mod.input_ui(inputs, size)
    output_spec = model_mod.output_ui(outputs)[0]
    litert_files = _precheck_litert(cfg, kind, output_spec["classes"], input_specs) if cfg.litert else {}
    labels = _labels(cfg, kind, output_spec["classes"])
    title = (cfg.title or f"edgetool demo: {Path(cfg.model).resolve().name}").strip()
    template = web_demo_dir()

    with atomic_dir(Path(cfg.output), cfg.force, cfg.inputs) as tmp:
        _place_model(cfg, kind, tmp / MODEL_SUBDIR)
        _, inputs, outputs = model_mod.read_tfjs_model(tmp / MODEL_SUBDIR)  # names as the tfjs graph knows them
        input_specs = model_mod.input_ui(_signature_order(inputs, input_specs), size)
        output_specs = model_mod.output_ui(outputs)
        for name in TEMPLATE_FILES:
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(template / name, tmp / name)
        index = (tmp / "index.html").read_text().replace("{{TITLE}}", html_text(title))
        (tmp / "index.html").write_text(index)
        (tmp / VENDOR_SUBDIR).mkdir()
        for name, src in runtime.items():
            shutil.copyfile(src, tmp / VENDOR_SUBDIR / name)
        icon_entries = icons_mod.write_icons(tmp / ICON_SUBDIR)
        (tmp / MANIFEST_NAME).write_text(json.dumps(_manifest(title, icon_entries), indent=2) + "\n")
        page = _page_config(title, input_specs, output_specs, labels, kind)
        if cfg.litert:
            page["litert"] = _add_litert(cfg, tmp, litert_files, output_specs[0]["classes"])
        (tmp / CONFIG_NAME).write_text(json.dumps(page, indent=2) + "\n")
        version = write_service_worker(tmp)
        files = tuple(site_files(tmp))
        total, first_visit = footprint(tmp, files)
        first_gzip = footprint(tmp, files, gzip_size)[1]
    return SiteReport(Path(cfg.output), kind, "+".join(i["kind"] for i in input_specs), version, files, total,
                      first_visit, first_gzip)


def _signature_order(tensors: tuple, specs: list[dict]) -> tuple:
    """The tfjs graph's inputs in the order of the first read (the SavedModel's), so the form keeps its order."""
    rank = {s["name"]: i for i, s in enumerate(specs)}
    return tuple(sorted(tensors, key=lambda t: rank.get(t.key, len(rank))))
