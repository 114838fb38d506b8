"""Build the static offline PWA site of ``edgetool demo`` from a tfjs graph model or a SavedModel."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool import __version__
from edge_tool.contract.resolve import default_warning, image_data
from edge_tool.core.fsutil import MARKER, atomic_dir, check_output_dir
from edge_tool.core.textsafe import html_text
from edge_tool.core.webdemo import web_demo_dir
from edge_tool.demo import icons as icons_mod
from edge_tool.demo import model as model_mod
from edge_tool.demo import task_step
from edge_tool.demo.config import DemoConfig
from edge_tool.demo.contract_step import page_entry, resolve_demo_contract
from edge_tool.demo.download_estimate import download_notice, first_visit_estimate
from edge_tool.demo.footprint import footprint, gzip_size, on_demand_groups
from edge_tool.demo.labels_step import site_labels
from edge_tool.demo.litert_site import MODEL_SUBDIR, VENDOR_SUBDIR, add_litert, precheck_litert
from edge_tool.demo.model import ModelKind
from edge_tool.demo.tfjs_step import place_tfjs
from edge_tool.demo.tflite_model import as_litert_site, tflite_tensors
from edge_tool.demo.vendor import pinned_versions, vendored_files
from edge_tool.errors import ModelError
from edge_tool.models.signature_choice import STRING_DTYPES, numeric_signature_way_out, takes_strings
from edge_tool.models.signatures import SERVING, saved_model_signature
from edge_tool.parsers.limits import check_signature
from edge_tool.trust.guard import require_safe_model

# The page: index.html, its style and its ES modules (app.js is the entry module; no build step).
TFJS_MODULES = ("engines/tfjs.js", "engines/tfjs-backends.js")  # the TensorFlow.js engine (not on LiteRT.js-only sites)
TEMPLATE_FILES = (
    "index.html",
    "app.css",
    "app.js",
    "main.js",
    "api.js",
    "config.js",
    "postprocess.js",
    "engines/engine.js",
    "engines/load.js",
    "engines/pick.js",
    "engines/pick-cache.js",
    *TFJS_MODULES,
    "ui/dom.js",
    "ui/camera.js",
    "ui/controls.js",
    "ui/form.js",
    "ui/pad.js",
    "ui/pixels.js",
    "ui/resample.js",
    "ui/results.js",
    "ui/audio.js",
    "ui/inputs.js",
    "ui/mask.js",
)
# index.html's classic scripts of the TensorFlow.js runtime (dropped with it)
TFJS_SCRIPT_TAGS = tuple(
    f'  <script src="vendor/{name}" defer></script>\n'
    for name in ("tf.min.js", "tf-backend-wasm.min.js", "tf-backend-webgpu.min.js")
)
SW_TEMPLATE = "sw.template.js"
CONFIG_NAME = "demo-config.json"
MANIFEST_NAME = "manifest.webmanifest"
SW_NAME = "sw.js"
MARKER_FILES = ("index.html", CONFIG_NAME, MANIFEST_NAME, SW_NAME)  # what makes a dir a demo site
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
    notes: tuple[str, ...] = ()  # the input contract, the labels' origin (or that there are none), warnings
    total_bytes: int = 0  # every file of the site
    first_visit_bytes: int = 0  # what the service worker precaches plus the largest build of each on-demand group
    first_visit_gzip_bytes: int = 0  # the same, served gzipped (edgetool serve, static hosts)
    estimated_first_visit_bytes: int | None = None  # the model bytes a first visit downloads, said before the build


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


def _precheck_saved_model(model: Path, signature: str | None = None) -> tuple:
    sig = saved_model_signature(model, signature or SERVING)
    check_signature(sig, model)  # the page (and --litert's LiteRT.js) would allocate these in the browser
    if takes_strings(sig):
        names = ", ".join(repr(t.name) for t in sig.inputs if t.dtype in STRING_DTYPES)
        raise ModelError(
            f"Input {names} of {model} is a string tensor; the demo page feeds numeric tensors only (a browser "
            "has no TensorFlow string ops)." + numeric_signature_way_out(model, sig.key, f"edgetool demo {model}")
        )
    ins = tuple(model_mod.Tensor(t.name, t.name, t.dtype, tuple(t.shape or ())) for t in sig.inputs)
    outs = tuple(model_mod.Tensor(t.name, t.name, t.dtype, tuple(t.shape or ())) for t in sig.outputs)
    return ins, outs


def web_manifest(title: str, icon_entries: list[dict], runtime: str = "TensorFlow.js") -> dict:
    short = title if len(title) <= 12 else "edgetool"
    return {
        "id": "./",
        "name": title,
        "short_name": short,
        "description": f"A model converted by edgetool, running offline in the browser with {runtime}.",
        "start_url": "./",
        "scope": "./",
        "display": "standalone",
        "theme_color": icons_mod.THEME,
        "background_color": icons_mod.THEME,
        "icons": icon_entries,
    }


def _page_config(
    title: str, inputs: list[dict], outputs: list[dict], labels: list[str], kind: ModelKind, tfjs: bool = True
) -> dict:
    """demo-config.json: every input and output head; ``input``/``output`` are the first input and the ranked head;
    ``modelUrl`` null: no TensorFlow.js model (a LiteRT.js-only site)."""
    return {
        "title": title,
        "generator": f"edgetool {__version__}",
        "sourceFormat": kind.value,
        "modelUrl": f"{MODEL_SUBDIR}/model.json" if tfjs else None,
        "wasmPath": f"{VENDOR_SUBDIR}/" if tfjs else None,
        "runtime": pinned_versions() if tfjs else {},
        "inputs": inputs,
        "outputs": outputs,
        "input": inputs[0],
        "output": outputs[0],
        "labels": labels,
        "topK": min(TOP_K, len(labels)) if labels else TOP_K,
        "draw": dict(DRAW),
    }


def write_service_worker(site: Path) -> str:
    """Write sw.js precaching every file of ``site`` (itself included) but the on-demand builds, which it caches when
    first fetched; return the cache version."""
    version = content_version(site)
    files = sorted({*site_files(site), SW_NAME})
    lazy = sorted(rel for group in on_demand_groups(files) for build in group for rel in build)
    text = (web_demo_dir() / SW_TEMPLATE).read_text()
    text = text.replace("'__VERSION__'", json.dumps(version)).replace("__ON_DEMAND__", json.dumps(lazy, indent=2))
    precached = [f for f in files if f not in lazy]
    text = text.replace(
        "__PRECACHE_BYTES__", str(sum((Path(site) / f).stat().st_size for f in precached if f != SW_NAME))
    )
    text = text.replace("__PRECACHE__", json.dumps(precached, indent=2))
    (Path(site) / SW_NAME).write_text(text)
    return version


def build_site(cfg: DemoConfig) -> SiteReport:
    """Assemble the demo site into ``cfg.output`` atomically; return a SiteReport."""
    check_output_dir(Path(cfg.output), cfg.force, cfg.inputs)
    for model in (cfg.model, cfg.tflite):
        if model is not None:
            require_safe_model(Path(model), cfg.trust_model_code, "demo", cfg.signature)
    runtime = vendored_files()
    kind = model_mod.detect_model(Path(cfg.model))
    if kind is ModelKind.SAVED_MODEL:
        inputs, outputs = _precheck_saved_model(Path(cfg.model), cfg.signature)
    elif kind is ModelKind.TFLITE:  # LiteRT.js alone, running the file itself
        cfg, (inputs, outputs) = as_litert_site(cfg), tflite_tensors(Path(cfg.model))
    else:
        _, inputs, outputs = model_mod.read_tfjs_model(Path(cfg.model))
    size = model_mod.parse_input_size(cfg.input_size) if cfg.input_size else None
    input_specs = model_mod.input_ui(inputs, size)
    output_spec = model_mod.output_ui(outputs)[0]
    litert_files = precheck_litert(cfg, kind, output_spec["classes"], input_specs) if cfg.litert else {}
    labels, labels_origin = site_labels(cfg, kind, output_spec["classes"], inputs)
    resolution = resolve_demo_contract(
        cfg, kind is ModelKind.SAVED_MODEL, inputs, outputs, output_spec["classes"], labels or None
    )
    notes = [f"input contract: {line}" for line in resolution.lines] + [f"warning: {w}" for w in resolution.warnings]
    notes += [
        f"warning: {default_warning(c.input)}"
        for c in resolution.contracts
        if c.source == "default" and not image_data(cfg.calibration)
    ]
    notes.append(
        f"labels: {len(labels)} from {labels_origin}"
        if labels
        else f"labels: none ({labels_origin}): the page shows class indices."
        if labels_origin
        else "labels: none (no --labels, no labels.txt in or beside the model, none embedded): the page shows "
        "class indices."
    )
    title = (cfg.title or f"edgetool demo: {Path(cfg.model).resolve().name}").strip()
    acts = task_step.activations(Path(cfg.model), kind, cfg.signature)
    estimate = first_visit_estimate(cfg, kind)
    if notice := download_notice(estimate):  # before anything is converted: a 400 MB model is a 400 MB first visit
        print(notice, file=sys.stderr, flush=True)

    with atomic_dir(Path(cfg.output), cfg.force, cfg.inputs) as tmp:
        no_tfjs = place_tfjs(cfg, kind, tmp / MODEL_SUBDIR, input_specs, len(outputs))
        if no_tfjs is None:
            _, inputs, outputs = model_mod.read_tfjs_model(tmp / MODEL_SUBDIR)  # names as the tfjs graph knows them
        else:  # a LiteRT.js-only site: the SavedModel's signature names
            (tmp / MODEL_SUBDIR).mkdir()
            notes.append(f"warning: {no_tfjs}")
        input_specs = [
            page_entry(e, resolution) for e in model_mod.input_ui(_signature_order(inputs, input_specs), size)
        ]
        output_specs = model_mod.output_ui(outputs)
        _copy_page(tmp, title, runtime if no_tfjs is None else {})
        icon_entries = icons_mod.write_icons(tmp / ICON_SUBDIR)
        engine_name = "TensorFlow.js" if no_tfjs is None else "LiteRT.js"
        (tmp / MANIFEST_NAME).write_text(json.dumps(web_manifest(title, icon_entries, engine_name), indent=2) + "\n")
        page = _page_config(title, input_specs, output_specs, labels, kind, no_tfjs is None)
        page["task"] = task_step.page_task(cfg.task, output_specs, acts)
        page["sampleRate"] = cfg.sample_rate
        if cfg.litert:
            page["litert"] = add_litert(
                cfg,
                tmp,
                litert_files,
                output_specs[0]["classes"],
                resolution.contracts,
                tuple(i["name"] for i in input_specs),
            )
        (tmp / CONFIG_NAME).write_text(json.dumps(page, indent=2) + "\n")
        version = write_service_worker(tmp)
        files = tuple(site_files(tmp))
        total, first_visit = footprint(tmp, files)
        first_gzip = footprint(tmp, files, gzip_size)[1]
    notes.append(f"task: {page['task']['name']} ({page['task']['reason']})")
    return SiteReport(
        Path(cfg.output),
        kind,
        "+".join(i["kind"] for i in input_specs),
        version,
        files,
        tuple(notes),
        total,
        first_visit,
        first_gzip,
        estimate,
    )


def _copy_page(tmp: Path, title: str, runtime: dict[str, Path]) -> None:
    """The page's files and the TensorFlow.js runtime ``runtime`` (empty: a LiteRT.js-only page, no tfjs in it)."""
    template = web_demo_dir()
    for name in TEMPLATE_FILES:
        if runtime or name not in TFJS_MODULES:
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(template / name, tmp / name)
    index = (tmp / "index.html").read_text().replace("{{TITLE}}", html_text(title))
    for tag in () if runtime else TFJS_SCRIPT_TAGS:
        index = index.replace(tag, "")
    (tmp / "index.html").write_text(index)
    (tmp / VENDOR_SUBDIR).mkdir()
    for name, src in runtime.items():
        shutil.copyfile(src, tmp / VENDOR_SUBDIR / name)


def _signature_order(tensors: tuple, specs: list[dict]) -> tuple:
    """The tfjs graph's inputs in the order of the first read (the SavedModel's), so the form keeps its order."""
    rank = {s["name"]: i for i, s in enumerate(specs)}
    return tuple(sorted(tensors, key=lambda t: rank.get(t.key, len(rank))))
