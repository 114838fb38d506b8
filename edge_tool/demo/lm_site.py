"""The language-model page of ``edgetool demo`` (``--task lm``, inferred from a .tflite that follows the LM contract):
an offline, installable site with a prompt box that streams tokens as LiteRT.js generates them in a Web Worker
(``prefill_<T>`` + ``decode``, the KV cache fed from each call's outputs to the next call's inputs), the model's
tokenizer (byte-level, or a BPE from its tokenizer.json) and the shared seeded sampler in JS (web_demo/lm/), the same service worker, manifest and icons as every
demo site."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from edge_tool import __version__
from edge_tool.core.fsutil import atomic_dir, check_output_dir
from edge_tool.core.textsafe import html_text
from edge_tool.core.webdemo import web_demo_dir
from edge_tool.demo import icons as icons_mod
from edge_tool.demo.config import LM_TASK, DemoConfig
from edge_tool.demo.footprint import footprint, gzip_size
from edge_tool.demo.lm_spec import is_lm_tflite, read_lm
from edge_tool.demo.model import ModelKind
from edge_tool.demo.site import (
    CONFIG_NAME,
    ICON_SUBDIR,
    MANIFEST_NAME,
    SiteReport,
    site_files,
    web_manifest,
    write_service_worker,
)
from edge_tool.demo.vendor import LITERT_BUILDS, pinned_litert_versions, vendored_litert_files
from edge_tool.errors import UsageError
from edge_tool.lm.contract import looks_like_lm
from edge_tool.models.signatures import saved_model_signatures
from edge_tool.trust.guard import require_safe_model

MODEL_FILE = "model/lm.tflite"
TOKENIZER_URL = "model/tokenizer.json"  # a BPE model's tokenizer.json (lm/bpe.js reads it)
# web_demo files of the LM page -> where they go in the site (index.html is the LM page's own)
PAGE_FILES = {
    "lm/index.html": "index.html",
    "app.css": "app.css",
    "lm/lm.css": "lm.css",
    "lm/app.js": "lm/app.js",
    "lm/worker.js": "lm/worker.js",
    "lm/generate.js": "lm/generate.js",
    "lm/sampler.js": "lm/sampler.js",
    "lm/sampler_litertlm.js": "lm/sampler_litertlm.js",
    "lm/tokenizer.js": "lm/tokenizer.js",
    "lm/bpe.js": "lm/bpe.js",
    "ui/dom.js": "ui/dom.js",
    "engines/litert-build.js": "engines/litert-build.js",
    "engines/litert-log.js": "engines/litert-log.js",
}
# A worker has no import map: the worker's copy of @litertjs/core imports its wasm loader by relative path.
CORE = "litert/core.js"
CORE_IMPORT = 'from "@litertjs/wasm-utils"'
CORE_IMPORT_RELATIVE = 'from "./wasm-utils.js"'


def wants_lm_page(cfg: DemoConfig) -> bool:
    """True when the run builds the LM page: ``--task lm``, or a MODEL (.tflite or SavedModel) whose signatures are
    named like the LM contract's (a SavedModel is then refused with the way to convert it)."""
    if cfg.task is not None:
        return cfg.task == LM_TASK
    model = Path(cfg.model)
    if (model / "saved_model.pb").is_file():
        return looks_like_lm(saved_model_signatures(model))
    return is_lm_tflite(model)


def _precheck(cfg: DemoConfig) -> dict:
    """Refuse what the LM page cannot run before anything is written; return the page's ``lm`` entry."""
    model = Path(cfg.model)
    if model.suffix != ".tflite" or not model.is_file():
        raise UsageError(
            f"demo --task lm runs a language-model .tflite that follows edgetool's LM contract (prefill_<T> and "
            f"decode signatures with the KV cache passed in and out, docs/lm.md); {model} is not a .tflite file. "
            "Convert the model first, keeping every prefill/decode signature in one .tflite (edge_tool.lm's export "
            "and new_converter(..., signatures=...)), and pass that file with edgetool_lm.json beside it."
        )
    ignored = [flag for flag, value in (("--litert", cfg.litert), ("--labels", cfg.labels)) if value]
    ignored += [flag for flag, value in (("--tflite", cfg.tflite), ("--calibration", cfg.calibration)) if value]
    if ignored:
        raise UsageError(f"{', '.join(ignored)} do not apply to the language-model page (it runs {model} itself).")
    return read_lm(model)


def _core_for_worker(src: Path) -> str:
    """@litertjs/core's module text with its one bare import made relative (no import maps in workers)."""
    text = src.read_text()
    if text.count(CORE_IMPORT) != 1:
        raise RuntimeError(
            f"{src}: expected one `{CORE_IMPORT}` to rewrite for the worker, found {text.count(CORE_IMPORT)}"
        )
    return text.replace(CORE_IMPORT, CORE_IMPORT_RELATIVE)


def _page_config(title: str, lm: dict, data: bytes) -> dict:
    lm = {k: v for k, v in lm.items() if k != "tokenizerFile"} | {
        "tokenizerUrl": TOKENIZER_URL if lm["tokenizerFile"] else None
    }
    return {
        "title": title,
        "generator": f"edgetool {__version__}",
        "task": {"name": LM_TASK, "reason": "the model follows the LM contract", "assumed": False},
        "lm": {**lm, "modelUrl": MODEL_FILE, "sha256": hashlib.sha256(data).hexdigest()},
        "wasmBuilds": {name: f"vendor/litert/{script}" for name, script in LITERT_BUILDS.items()},
        "runtime": pinned_litert_versions(),
    }


def _write_page(tmp: Path, title: str, files: dict[str, Path]) -> None:
    template = web_demo_dir()
    for src, dest in PAGE_FILES.items():
        (tmp / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template / src, tmp / dest)
    (tmp / "index.html").write_text((tmp / "index.html").read_text().replace("{{TITLE}}", html_text(title)))
    for name, src in files.items():
        (tmp / "vendor" / name).parent.mkdir(parents=True, exist_ok=True)
        if name == CORE:
            (tmp / "vendor" / name).write_text(_core_for_worker(src))
        else:
            shutil.copyfile(src, tmp / "vendor" / name)


def build_lm_site(cfg: DemoConfig) -> SiteReport:
    """Assemble the LM page into ``cfg.output`` atomically; return a SiteReport."""
    check_output_dir(Path(cfg.output), cfg.force, cfg.inputs)
    require_safe_model(Path(cfg.model), cfg.trust_model_code, "demo", cfg.signature)
    lm = _precheck(cfg)
    files = vendored_litert_files()
    title = (cfg.title or f"edgetool demo: {Path(cfg.model).name}").strip()
    data = Path(cfg.model).read_bytes()
    with atomic_dir(Path(cfg.output), cfg.force, cfg.inputs) as tmp:
        (tmp / MODEL_FILE).parent.mkdir(parents=True)
        (tmp / MODEL_FILE).write_bytes(data)
        if lm["tokenizerFile"]:
            shutil.copyfile(lm["tokenizerFile"], tmp / TOKENIZER_URL)
        _write_page(tmp, title, files)
        icon_entries = icons_mod.write_icons(tmp / ICON_SUBDIR)
        (tmp / MANIFEST_NAME).write_text(json.dumps(web_manifest(title, icon_entries, "LiteRT.js"), indent=2) + "\n")
        (tmp / CONFIG_NAME).write_text(json.dumps(_page_config(title, lm, data), indent=2) + "\n")
        version = write_service_worker(tmp)
        names = tuple(site_files(tmp))
        total, first_visit = footprint(tmp, names)
        first_gzip = footprint(tmp, names, gzip_size)[1]
    notes = (
        f"task: {LM_TASK} ({'--task' if cfg.task else 'the .tflite follows the LM contract'})",
        f"language model: {lm['numLayers']} layers, max length {lm['maxLen']}, vocabulary {lm['vocabSize']}, "
        f"prefill {', '.join(str(s['length']) for s in lm['prefill'])} + decode, KV cache "
        f"{lm['cacheBytes'] / 1e6:.2f} MB, {lm['tokenizer']} tokenizer (bos {lm['bosId']}, stop {lm['stopIds']})",
    )
    return SiteReport(Path(cfg.output), ModelKind.TFLITE, "text", version, names, notes, total, first_visit, first_gzip)
